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
    let cases: [(Vec<String>, [&str; 2], &str); 6] = [
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
        // The power CSV's energy snapshots are side files too (trial 7: they were not checked).
        (
            with(&[
                "--save-result",
                "--result-dir",
                "rs",
                "--result-filename",
                "p3.json",
                "--save-requests",
                "rs/p3.power_energy_end.csv",
            ]),
            ["--save-requests", "power_energy_end.csv"],
            "rs/p3.power_energy_end.csv",
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

/// Issue 39's leftovers, 1: `eval` writes its samples, results and `meta_env.json` into
/// `--result-dir`; none may name its `--data-dir` data, another of them or `--tls-ca` (a
/// link, here) — refused with exit 2 naming both, before any request, the data unchanged.
#[test]
fn eval_outputs_naming_its_data_or_each_other_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("data")).unwrap();
    let line = serde_json::json!({"question": "1+1?", "answer": "2 #### 2"}).to_string() + "\n";
    std::fs::write(d.join("data/test.jsonl"), &line).unwrap();
    std::fs::write(d.join("data/train.jsonl"), &line).unwrap();
    std::fs::write(d.join("ca.pem"), "not a cert").unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let eval = |out: &'static str| {
        vec![
            "eval".to_string(),
            "gsm8k".into(),
            "--base-url".into(),
            url.clone(),
            "--model".into(),
            "m".into(),
            "--data-dir".into(),
            "data".into(),
            "--result-dir".into(),
            out.into(),
        ]
    };
    let link = |target: &str, at: &str| {
        std::fs::create_dir_all(d.join(at).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(d.join(target), d.join(at)).unwrap();
    };
    // The samples over the test data (a link into the data directory).
    link("data/test.jsonl", "r1/samples_gsm8k.jsonl");
    // Two outputs, one file: meta_env.json a link to results_gsm8k.json.
    std::fs::create_dir_all(d.join("r2")).unwrap();
    std::fs::write(d.join("r2/results_gsm8k.json"), "{}").unwrap();
    link("r2/results_gsm8k.json", "r2/meta_env.json");
    // The results over --tls-ca.
    link("ca.pem", "r3/results_gsm8k.json");
    let mut r3 = eval("r3");
    r3.extend(["--tls-ca".to_string(), "ca.pem".into()]);
    let cases: [(Vec<String>, [&str; 2], &str); 3] = [
        (
            eval("r1"),
            [
                "--data-dir's test.jsonl",
                "--result-dir's samples_gsm8k.jsonl",
            ],
            "data/test.jsonl",
        ),
        (
            eval("r2"),
            [
                "--result-dir's results_gsm8k.json",
                "--result-dir's meta_env.json",
            ],
            "r2/results_gsm8k.json",
        ),
        (
            r3,
            ["--tls-ca ca.pem", "--result-dir's results_gsm8k.json"],
            "ca.pem",
        ),
    ];
    for (args, flags, kept) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(d, &args, *flags, kept, &hits);
    }
}

/// Issue 39's leftovers, 1: every other subcommand that writes a file checks it against what
/// it reads: `plot --out` over its `--db`, `matrix`/`changelog --output` over a config they
/// read, `db dump --out` whose `SHA256SUMS` is the database, `db restore` into its own
/// snapshot, `selftest --json` over the `--spawn-server` binary, `quickstart --chart` over its
/// `--db`. Each exits 2 naming both,
/// the file unchanged.
#[test]
fn every_writing_subcommand_refuses_an_output_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (code, err) = run_in(d, &["db", "--db", "ib.db", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    std::fs::create_dir(d.join("sums")).unwrap();
    let (code, err) = run_in(d, &["db", "--db", "sums/SHA256SUMS", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    std::fs::write(d.join("c.yaml"), "{}\n").unwrap();
    std::fs::write(d.join("r.yaml"), "labels: {}\n").unwrap();
    std::fs::write(d.join("base.yaml"), "[]\n").unwrap();
    std::fs::write(d.join("snap.ibdump.zst"), "x").unwrap();
    std::fs::write(d.join("srv"), "#!/bin/sh\n").unwrap();
    let hits = AtomicUsize::new(0);
    let cases: [(&[&str], [&str; 2], &str); 8] = [
        (
            &[
                "quickstart",
                "--db",
                "ib.db",
                "--chart",
                "./ib.db",
                "--out",
                "qs",
            ],
            ["--chart ./ib.db", "--db ib.db"],
            "ib.db",
        ),
        (
            &["plot", "--db", "ib.db", "--out", "./ib.db"],
            ["--out ./ib.db", "--db ib.db"],
            "ib.db",
        ),
        (
            &[
                "matrix",
                "--config-files",
                "c.yaml",
                "--runner-config",
                "r.yaml",
                "--output",
                "c.yaml",
                "full-sweep",
            ],
            ["--config-files c.yaml", "--output c.yaml"],
            "c.yaml",
        ),
        (
            &[
                "matrix",
                "--config-files",
                "c.yaml",
                "--runner-config",
                "r.yaml",
                "--output",
                "./r.yaml",
                "full-sweep",
            ],
            ["--runner-config r.yaml", "--output ./r.yaml"],
            "r.yaml",
        ),
        (
            &[
                "changelog",
                "--base",
                "base.yaml",
                "--head",
                "base.yaml",
                "--config-files",
                "c.yaml",
                "--runner-config",
                "r.yaml",
                "--output",
                "base.yaml",
            ],
            ["--base base.yaml", "--output base.yaml"],
            "base.yaml",
        ),
        (
            &["db", "--db", "sums/SHA256SUMS", "dump", "--out", "sums"],
            ["--db sums/SHA256SUMS", "--out's SHA256SUMS"],
            "sums/SHA256SUMS",
        ),
        (
            &[
                "db",
                "--db",
                "snap.ibdump.zst",
                "restore",
                "snap.ibdump.zst",
            ],
            ["restore's FILE", "--db snap.ibdump.zst"],
            "snap.ibdump.zst",
        ),
        (
            &["selftest", "--spawn-server", "srv", "--json", "srv"],
            ["--json srv", "--spawn-server srv"],
            "srv",
        ),
    ];
    for (args, flags, kept) in &cases {
        refused(d, args, *flags, kept, &hits);
    }
}

/// Issue 39's leftovers, 2: the whole sweep's paths are checked before the first launch: two
/// points naming one file (the conc-8 point's directory a link to the conc-4 one's) and a
/// point's output over a sweep input (`--matrix` where the conc-4 point's `summary.json`
/// goes) were found only when that point ran. Exit 2 naming both, nothing sent.
#[test]
fn a_sweeps_points_and_inputs_naming_one_file_are_refused_before_the_first_launch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let matrix = serde_json::json!([{
        "image": "x", "model": "m/small", "model-prefix": "small", "precision": "fp8",
        "framework": "sim", "runner": "h100", "isl": 64, "osl": 8, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": [4, 8], "max-model-len": 2048, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "small_64_8",
        "disagg": false
    }])
    .to_string();
    let rf = "small_64_8_fp8_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc4x8_\
              h100_0";
    std::fs::write(d.join("m.json"), &matrix).unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let sweep = |m: &str, out: &str| {
        vec![
            "sweep".to_string(),
            "--matrix".into(),
            m.into(),
            "--base-url".into(),
            url.clone(),
            "--runner-name".into(),
            "h100_0".into(),
            "--out".into(),
            out.into(),
        ]
    };
    // Two points, one directory.
    std::fs::create_dir_all(d.join(format!("a/{rf}_conc4"))).unwrap();
    std::os::unix::fs::symlink(
        d.join(format!("a/{rf}_conc4")),
        d.join(format!("a/{rf}_conc8")),
    )
    .unwrap();
    // The matrix where a point's summary goes.
    let in_point = format!("b/{rf}_conc4/summary.json");
    std::fs::create_dir_all(d.join(format!("b/{rf}_conc4"))).unwrap();
    std::fs::write(d.join(&in_point), &matrix).unwrap();
    let cases: [(Vec<String>, [&str; 2], String); 2] = [
        (
            sweep("m.json", "a"),
            ["row 0 conc 4's job.json", "row 0 conc 8's job.json"],
            "m.json".into(),
        ),
        (
            sweep(&in_point, "b"),
            ["--matrix", "row 0 conc 4's summary.json"],
            in_point.clone(),
        ),
    ];
    for (args, flags, kept) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(d, &args, *flags, kept, &hits);
    }
}

/// Trial of issue 39's leftovers, findings 1 and 2: `--save-requests` over the database's
/// `-wal`, `-shm` or `-journal` (SQLite deletes or rewrites them: the records were lost), and
/// a dangling symbolic link whose target is another output (the result file; the database
/// not created yet) are refused before any request, both flags named.
#[cfg(unix)]
#[test]
fn a_databases_side_files_and_dangling_links_are_compared_by_what_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["c", "c3", "c5"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    std::os::unix::fs::symlink("r/p.json", d.join("c3/sr.jsonl")).unwrap();
    std::os::unix::fs::symlink("n.db", d.join("c5/l.jsonl")).unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let base = [
        "bench",
        "--base-url",
        &url,
        "--model",
        "Llama-3.1-8B",
        "--num-prompts",
        "8",
        "--max-concurrency",
        "4",
        "--power",
        "off",
    ];
    for side in ["-wal", "-shm", "-journal"] {
        let records = format!("c/x2.db{side}");
        let label = format!("--db's {side} file");
        let mut args = base.to_vec();
        args.extend([
            "--db",
            "c/x2.db",
            "--result-dir",
            "c/r4",
            "--save-requests",
            &records,
        ]);
        refused(d, &args, ["--save-requests", &label], &records, &hits);
        assert!(!d.join("c/x2.db").exists());
    }
    let mut args = base.to_vec();
    args.extend([
        "--save-requests",
        "c3/sr.jsonl",
        "--save-result",
        "--result-dir",
        "c3/r",
        "--result-filename",
        "p.json",
    ]);
    refused(
        d,
        &args,
        ["--save-requests", "--result-filename"],
        "c3/r/p.json",
        &hits,
    );
    let mut args = base.to_vec();
    args.extend([
        "--db",
        "c5/n.db",
        "--result-dir",
        "c5/r",
        "--save-requests",
        "c5/l.jsonl",
    ]);
    refused(d, &args, ["--save-requests", "--db"], "c5/n.db", &hits);
    // quickstart's chart over its database (a database may be named `*.svg`).
    refused(
        d,
        &[
            "quickstart",
            "--fast",
            "--out",
            "qs",
            "--db",
            "c.svg",
            "--chart",
            "./c.svg",
        ],
        ["--chart", "--db"],
        "c.svg",
        &hits,
    );
}

/// Trial of issue 39 (second round), finding 1: a path through a folder not there yet
/// (`nz1/../e1.db`) passed the check, the tool created the folder and the path then named the
/// existing file: the database, the dataset, the matrix config and (through a link at the final
/// component) the plotted database were overwritten. Each is refused with exit 2 naming both
/// flags, nothing sent, the file unchanged, and the missing folder not created.
#[cfg(unix)]
#[test]
fn a_path_through_a_missing_folder_is_compared_by_the_file_it_will_reach() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for db in ["e1.db", "q.db", "pp.db"] {
        let (code, err) = run_in(d, &["db", "--db", db, "migrate"]);
        assert_eq!(code, Some(0), "{err}");
    }
    std::os::unix::fs::symlink("pp.db", d.join("pp.svg")).unwrap();
    std::fs::write(d.join("ds1.jsonl"), "{\"prompt\": \"hi\"}\n").unwrap();
    std::fs::write(d.join("cfg.yaml"), "{}\n").unwrap();
    std::fs::write(d.join("run.yaml"), "labels: {}\n").unwrap();
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
    let cases: Vec<(Vec<String>, [&str; 2], &str, &str)> = vec![
        (
            with(&[
                "--db",
                "e1.db",
                "--result-dir",
                "r5",
                "--save-requests",
                "nz1/../e1.db",
            ]),
            ["--save-requests nz1/../e1.db", "--db"],
            "e1.db",
            "nz1",
        ),
        (
            with(&[
                "--db",
                "q.db",
                "--save-result",
                "--result-dir",
                "./nr/..",
                "--result-filename",
                "q.db",
            ]),
            ["--result-filename", "--db"],
            "q.db",
            "nr",
        ),
        (
            with(&[
                "--dataset-name",
                "jsonl",
                "--dataset-path",
                "ds1.jsonl",
                "--save-requests",
                "./nq/../ds1.jsonl",
            ]),
            ["--dataset-path", "--save-requests ./nq/../ds1.jsonl"],
            "ds1.jsonl",
            "nq",
        ),
        (
            [
                "matrix",
                "--config-files",
                "cfg.yaml",
                "--runner-config",
                "run.yaml",
                "-o",
                "./nx/../cfg.yaml",
                "full-sweep",
            ]
            .map(String::from)
            .to_vec(),
            ["--config-files cfg.yaml", "--output ./nx/../cfg.yaml"],
            "cfg.yaml",
            "nx",
        ),
        (
            ["plot", "--db", "pp.db", "-o", "./n2/../pp.svg"]
                .map(String::from)
                .to_vec(),
            ["--out ./n2/../pp.svg", "--db pp.db"],
            "pp.db",
            "n2",
        ),
    ];
    for (args, flags, kept, missing) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(d, &args, *flags, kept, &hits);
        assert!(!d.join(missing).exists(), "{args:?} created {missing}");
    }
}

/// Trial of issue 39 (second round), finding 2: `--db` a dangling symbolic link into a folder
/// that does not exist sent every request, then failed to store (exit 1). It is refused
/// before any request, exit 2, naming the missing folder.
#[cfg(unix)]
#[test]
fn a_dangling_db_link_into_a_missing_folder_is_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("r")).unwrap();
    std::os::unix::fs::symlink("nowhere/x.db", d.join("r/dangdb")).unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let (code, err) = run_in(
        d,
        &[
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
            "--db",
            "r/dangdb",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("directory r/nowhere does not exist (the folder of the file the symbolic link leads to)"),
        "{err}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a request was sent");
    assert!(!d.join("r/nowhere").exists());
}

/// Trial of issue 39 (second round), finding 5: `--save-requests /proc/version` and `--db
/// /dev/stdout` (a link into `/proc/self/fd`) passed the up-front checks and failed after the
/// run. Both are refused before any request, exit 2, naming the kernel's filesystem.
#[cfg(target_os = "linux")]
#[test]
fn kernel_files_are_refused_as_outputs_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    for extra in [
        ["--save-requests", "/proc/version"],
        ["--db", "/dev/stdout"],
    ] {
        let mut args = vec![
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--num-prompts",
            "4",
            "--power",
            "off",
        ];
        args.extend(extra);
        let (code, err) = run_in(dir.path(), &args);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(
            err.contains("it is a file of the kernel's /proc filesystem"),
            "{extra:?}: {err}"
        );
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a request was sent");
}

/// Issue 39, fresh tester's finding 1: SQLite opened a `--db` given as a `file:` URI (`file:victim.db`,
/// with a query, `file://localhost/ABS/…`, percent-encoded) as the file it decodes to, while
/// the same-file check read the value as a path of its own: `--save-requests victim.db`
/// overwrote the database after every request was sent. Every subcommand that takes `--db`
/// refuses a `file:` value before it sends, reads or writes anything (exit 2), the database
/// unchanged.
#[test]
fn a_sqlite_uri_db_is_refused_by_every_subcommand_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for db in ["victim.db", "victim2.db"] {
        let (code, err) = run_in(d, &["db", "--db", db, "migrate"]);
        assert_eq!(code, Some(0), "{err}");
    }
    std::fs::write(d.join("r.json"), "{}").unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let abs = d.canonicalize().unwrap().join("victim.db");
    let localhost = format!("file://localhost{}", abs.display());
    let bench = [
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
    let mut cases: Vec<(Vec<&str>, &str)> = Vec::new();
    for uri in ["file:victim.db", localhost.as_str(), "file:vic%74im.db"] {
        let mut a = bench.to_vec();
        a.extend(["--db", uri, "--save-requests", "victim.db"]);
        cases.push((a, "victim.db"));
    }
    let mut a = bench.to_vec();
    a.extend([
        "--db",
        "file:victim2.db?mode=rw",
        "--save-result",
        "--result-dir",
        ".",
        "--result-filename",
        "victim2.db",
    ]);
    cases.push((a, "victim2.db"));
    cases.push((
        vec!["ingest", "r.json", "--db", "file:victim.db"],
        "victim.db",
    ));
    cases.push((vec!["db", "--db", "file:victim.db", "migrate"], "victim.db"));
    cases.push((vec!["db", "--db", "file:victim.db", "status"], "victim.db"));
    cases.push((vec!["report", "--db", "file:victim.db"], "victim.db"));
    cases.push((
        vec!["plot", "--db", "file:victim.db", "--out", "victim.db"],
        "victim.db",
    ));
    cases.push((
        vec![
            "quickstart",
            "--fast",
            "--out",
            "qs",
            "--db",
            "file:victim.db",
        ],
        "victim.db",
    ));
    for (args, kept) in cases {
        let before = std::fs::read(d.join(kept)).unwrap();
        let (code, err) = run_in(d, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("SQLite `file:` URIs are not taken"),
            "{args:?}: {err}"
        );
        assert_eq!(
            hits.load(Ordering::SeqCst),
            0,
            "{args:?}: a request was sent"
        );
        assert_eq!(std::fs::read(d.join(kept)).unwrap(), before, "{args:?}");
    }
    assert!(!d.join("qs").exists());
    // A file whose name starts with `file:` is given as `./file:…`.
    let (code, err) = run_in(d, &["db", "--db", "./file:x.db", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(d.join("file:x.db").is_file());
}

/// Issue 39 (a fresh tester's findings, 2): an output (folder or file) that is an input folder
/// or lies inside one is refused with exit 2 before any request, naming both (`replay --traces DIR --result-dir DIR` wrote `summary.json` and
/// `agentic_aggregate.json` into the corpus, and every later `replay --traces DIR` failed):
/// `replay`'s `--traces` folder or file, `eval`'s `--data-dir`, a sweep's `--traces` folder
/// holding its `--out`. The folders' listings are left as they were. An input inside an output
/// folder is fine (`replay --traces t.jsonl --result-dir .`): the command writes only its own
/// files there, which the same-file check keeps off every input.
#[test]
fn outputs_in_an_input_folder_are_refused_and_inputs_in_an_output_folder_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("corp")).unwrap();
    let trace = "{\"id\":\"s\",\"requests\":[{\"t\":0,\"in\":10,\"out\":2}]}\n";
    std::fs::write(d.join("corp/t.jsonl"), trace).unwrap();
    std::fs::create_dir_all(d.join("r/data")).unwrap();
    let line = serde_json::json!({"question": "1+1?", "answer": "2 #### 2"}).to_string() + "\n";
    std::fs::write(d.join("r/data/test.jsonl"), &line).unwrap();
    std::fs::write(d.join("r/data/train.jsonl"), &line).unwrap();
    let matrix = serde_json::json!([{
        "image": "x", "model": "m/small", "model-prefix": "small", "precision": "fp8",
        "framework": "sim", "runner": "h100", "isl": 64, "osl": 8, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": [4], "max-model-len": 2048, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "small_64_8",
        "disagg": false
    }])
    .to_string();
    std::fs::write(d.join("m.json"), &matrix).unwrap();
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let replay = |traces: &str, out: &str| {
        [
            "replay",
            "--traces",
            traces,
            "--base-url",
            &url,
            "--model",
            "m",
            "--benchmark-duration",
            "1",
            "--unsafe-override",
            "--result-dir",
            out,
        ]
        .map(String::from)
        .to_vec()
    };
    let eval = |data: &str, out: &str| {
        [
            "eval",
            "gsm8k",
            "--base-url",
            &url,
            "--model",
            "m",
            "--data-dir",
            data,
            "--result-dir",
            out,
        ]
        .map(String::from)
        .to_vec()
    };
    let sweep = [
        "sweep",
        "--matrix",
        "m.json",
        "--base-url",
        &url,
        "--runner-name",
        "h100_0",
        "--traces",
        "corp",
        "--out",
        "corp",
    ]
    .map(String::from)
    .to_vec();
    let cases: [(Vec<String>, &str); 4] = [
        (
            replay("corp", "corp"),
            "--result-dir corp is --traces corp: the command's outputs would join what it reads",
        ),
        (
            replay("./corp/", "corp/x/.."),
            "--result-dir corp/x/.. is --traces ./corp/",
        ),
        (
            replay("corp", "corp/sub"),
            "--result-dir corp/sub is inside --traces corp: the command's outputs would join \
             what it reads",
        ),
        (sweep, "corp/sweep.json is inside --traces "),
    ];
    let listing = |p: &str| {
        let mut v: Vec<_> = walk(&d.join(p));
        v.sort();
        v
    };
    let before = (listing("corp"), listing("r"));
    for (args, want) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = run_in(d, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in: {err}");
        assert_eq!(
            hits.load(Ordering::SeqCst),
            0,
            "{args:?}: a request was sent"
        );
        assert_eq!(
            (listing("corp"), listing("r")),
            before,
            "{args:?}: files changed"
        );
    }
    // Beside the corpus (not in it), and inputs inside the output folder, are fine: refused
    // only by the unreachable server (exit 3 or a run that fails), never as a clash.
    for args in [
        replay("corp", "out"),
        replay("corp/t.jsonl", "corp"),
        eval("r/data", "r"),
        // eval reads its data folder by two file names only: a result folder in it is fine.
        eval("r/data", "r/data/out"),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_, err) = run_in(d, &args);
        assert!(
            !err.contains(" is inside ") && !err.contains("would join"),
            "{args:?}: {err}"
        );
    }
}

/// Every file and folder under `p`, as paths relative to it.
fn walk(p: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
        let q = e.path();
        v.push(q.strip_prefix(p).unwrap().to_path_buf());
        if q.is_dir() {
            v.extend(
                walk(&q)
                    .into_iter()
                    .map(|x| q.strip_prefix(p).unwrap().join(x)),
            );
        }
    }
    v
}
