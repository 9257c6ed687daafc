//! Trial of issue 39, finding 1: two flags naming one file. An output path equal to an input,
//! to another output or to the database destroyed the file (`--save-requests` over the `--db`
//! file turned the database into NDJSON; `replay --result-dir` over the replayed trace). Every
//! such pair is refused with exit 2, naming both flags, before any request, and the file is
//! left as it was.

mod common;

use common::{counting_listener, run_in};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `args` in `dir` and checks the refusal: exit 2, both `flags` named with "name the same
/// file", no connection made, and `kept` (a file in `dir`) byte for byte as before.
fn refused(dir: &Path, args: &[&str], flags: [&str; 2], kept: &str, hits: &AtomicUsize) {
    let before = std::fs::read(dir.join(kept)).ok();
    let (code, err) = run_in(dir, args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert!(err.contains("name the same file"), "{args:?}: {err}");
    for f in flags {
        assert!(err.contains(f), "{args:?} should name {f}: {err}");
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "{args:?}: a request was sent"
    );
    assert_eq!(
        std::fs::read(dir.join(kept)).ok(),
        before,
        "{args:?}: {kept} changed"
    );
}

/// Each handed case of `bench`: records over the database, the result file over the database,
/// records over the dataset (spelled another way), records over the result file and over a
/// side file of the result.
#[test]
fn bench_outputs_naming_one_file_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["rs3", "rs4", "rs5", "rs"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    for db in ["rs3/ib.db", "rs4/ib.db"] {
        let (code, err) = run_in(d, &["db", "--db", db, "migrate"]);
        assert_eq!(code, Some(0), "{err}");
    }
    std::fs::write(d.join("rs5/ds.jsonl"), "{\"prompt\": \"hi\"}\n").unwrap();
    std::fs::write(d.join("rs/point.json"), "{}").unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let base = [
        "bench",
        "--base-url",
        &url,
        "--model",
        "m",
        "--num-prompts",
        "4",
        "--max-concurrency",
        "2",
        "--power",
        "off",
    ];
    let with = |extra: &[&'static str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let cases: [(Vec<String>, [&str; 2], &str); 5] = [
        (
            with(&[
                "--result-dir",
                "rs3",
                "--db",
                "rs3/ib.db",
                "--set",
                "hw=h100",
                "--save-requests",
                "rs3/ib.db",
            ]),
            ["--save-requests", "--db"],
            "rs3/ib.db",
        ),
        (
            with(&[
                "--result-dir",
                "rs4",
                "--result-filename",
                "ib.db",
                "--db",
                "rs4/ib.db",
            ]),
            ["--result-filename", "--db"],
            "rs4/ib.db",
        ),
        (
            with(&[
                "--dataset-name",
                "jsonl",
                "--dataset-path",
                "rs5/ds.jsonl",
                "--save-requests",
                "rs5/../rs5/./ds.jsonl",
            ]),
            ["--dataset-path", "--save-requests"],
            "rs5/ds.jsonl",
        ),
        (
            with(&[
                "--save-result",
                "--result-dir",
                "rs",
                "--result-filename",
                "point.json",
                "--save-requests",
                "rs/point.json",
            ]),
            ["--save-requests", "--result-filename"],
            "rs/point.json",
        ),
        (
            with(&[
                "--save-result",
                "--result-dir",
                "rs",
                "--result-filename",
                "p2.json",
                "--save-requests",
                "rs/p2.server_metrics.jsonl",
            ]),
            ["--save-requests", "server_metrics.jsonl"],
            "rs/p2.server_metrics.jsonl",
        ),
    ];
    for (args, flags, kept) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(d, &args, *flags, kept, &hits);
    }
}

/// `replay`: a trace file that `--result-dir` would overwrite (the file itself, or a trace in
/// a `--traces` directory that is also the result directory) is refused before any request.
#[test]
fn replay_result_dir_over_a_trace_is_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("rp6")).unwrap();
    let trace = "{\"id\":\"s\",\"requests\":[{\"t\":0,\"in\":10,\"out\":2}]}\n";
    std::fs::write(d.join("rp6/requests.jsonl"), trace).unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    for traces in ["rp6/requests.jsonl", "rp6"] {
        refused(
            d,
            &[
                "replay",
                "--traces",
                traces,
                "--base-url",
                &url,
                "--model",
                "m",
                "--benchmark-duration",
                "1",
                "--result-dir",
                "rp6",
            ],
            ["--traces", "--result-dir's requests.jsonl"],
            "rp6/requests.jsonl",
            &hits,
        );
    }
}

/// `ingest`: the database given as a path to ingest is refused (exit 2, unchanged).
#[test]
fn ingest_of_the_database_itself_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (code, err) = run_in(d, &["db", "--db", "ib.db", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    let hits = AtomicUsize::new(0);
    refused(
        d,
        &["ingest", "./ib.db", "--db", "ib.db"],
        ["ingest ./ib.db", "--db ib.db"],
        "ib.db",
        &hits,
    );
}
