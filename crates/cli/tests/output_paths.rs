//! Issue 39 §8 and §12 from the command line: every output path a command will write is
//! checked before any request is sent (exit 2, naming the path and the OS error); a write that
//! fails at the end fails the point (exit 1, never 0); `report` reads an older-schema database
//! without writing it.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// A listener that counts the connections made to it and answers none: its port and count.
fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let n = Arc::new(AtomicUsize::new(0));
    let seen = n.clone();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(c);
        }
    });
    (port, n)
}

/// `inferbench args` in `dir`: exit code, stderr.
fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("INFERBENCH_DB")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Paths under a regular file cannot be created (whoever runs the test, root included):
/// each output flag of `bench`, `replay`, `job` and `quickstart` is refused with exit 2 and
/// its path named, and the server is never asked anything.
#[test]
fn unwritable_output_paths_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("afile"), b"x").unwrap();
    let (port, connections) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let bench = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--num-prompts",
            "1",
        ];
        a.extend_from_slice(extra);
        run_in(dir.path(), &a)
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--save-result", "--result-dir", "afile/sub"],
            "error: --result-dir afile/sub: cannot create the directory afile/sub: Not a \
             directory (os error 20)\n",
        ),
        (
            vec!["--result-dir", "afile/sub"],
            "error: --result-dir afile/sub: cannot create the directory afile/sub: Not a \
             directory (os error 20)\n",
        ),
        (
            vec!["--save-requests", "afile/r.jsonl"],
            "error: --save-requests afile/r.jsonl: afile is not a directory\n",
        ),
        (
            vec!["--save-requests", "."],
            "error: --save-requests .: it is a directory\n",
        ),
        (
            vec!["--save-result", "--result-filename", "afile/r.json"],
            "error: --result-filename ./afile/r.json: ./afile is not a directory\n",
        ),
        (
            vec!["--db", "afile/x.db"],
            "error: bad database location `afile/x.db`: afile is not a directory\n",
        ),
    ];
    for (extra, want) in &cases {
        let (code, err) = bench(extra);
        assert_eq!((code, err.as_str()), (Some(2), *want), "bench {extra:?}");
    }
    let (code, err) = run_in(
        dir.path(),
        &[
            "replay",
            "--base-url",
            &url,
            "--model",
            "m",
            "--synthetic",
            "quickstart",
            "--result-dir",
            "afile/sub",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.ends_with(
            "error: --result-dir afile/sub: cannot create the directory afile/sub: Not a \
             directory (os error 20)\n"
        ),
        "{err}"
    );
    let (code, err) = run_in(
        dir.path(),
        &[
            "eval",
            "gsm8k",
            "--base-url",
            &url,
            "--model",
            "m",
            "--result-dir",
            "afile/e",
        ],
    );
    assert_eq!(
        (code, err.as_str()),
        (
            Some(2),
            "error: --result-dir afile/e: afile is not a directory\n"
        )
    );
    assert_eq!(connections.load(Ordering::SeqCst), 0, "a request was sent");
    // quickstart: --out and --chart before the database is created or any point runs.
    for (extra, want) in [
        (
            ["--out", "afile/q"],
            "error: --out afile/q: cannot create the directory afile/q: Not a directory (os \
             error 20)\n",
        ),
        (
            ["--chart", "afile/c.svg"],
            "error: --chart afile/c.svg: afile is not a directory\n",
        ),
    ] {
        let mut a = vec!["quickstart", "--db", "q.db"];
        a.extend_from_slice(&extra);
        assert_eq!(
            run_in(dir.path(), &a),
            (Some(2), want.to_string()),
            "{extra:?}"
        );
        assert!(!dir.path().join("q.db").exists());
    }
}

/// `--save-requests /dev/full`: every record write fails (ENOSPC). The run goes on, the result
/// is written, and the point fails with exit 1 (it exited 0 after saying the write failed).
#[test]
fn a_failed_records_write_fails_the_point() {
    let sim = common::start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let (code, err) = run_in(
        dir.path(),
        &[
            "bench",
            "--base-url",
            &url,
            "--model",
            "Llama-3.1-8B",
            "--num-prompts",
            "4",
            "--random-input-len",
            "16",
            "--random-output-len",
            "4",
            "--save-requests",
            "/dev/full",
            "--save-result",
            "--result-dir",
            "res",
            "--result-filename",
            "r.json",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "inferbench: writing --save-requests failed: /dev/full: No space left on device (os \
             error 28) (records kept in memory for the summary; the point fails, exit 1)"
        ),
        "{err}"
    );
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("res/r.json")).unwrap()).unwrap();
    assert_eq!(r["completed"], 4, "{r}");
    assert!(!err.contains("wrote /dev/full"), "{err}");
}

/// Issue 39 §12: `report` on a version-4 database reads a migrated copy, says so, exits 0, and
/// leaves the file as it was.
#[test]
fn report_reads_an_older_schema_database_without_writing_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../store/tests/old-schema/v4-sweep-h200.db"),
        &db,
    )
    .unwrap();
    let before = std::fs::read(&db).unwrap();
    let (code, err) = run_in(dir.path(), &["report", "--db", "old.db"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err,
        format!(
            "inferbench: `old.db` has schema version 4 (this binary's is {}): reading a \
             migrated copy in memory, the file is not changed; `inferbench db migrate --db \
             old.db` upgrades it (where it is writable)\n",
            inferbench_store::schema::latest_version()
        )
    );
    assert_eq!(std::fs::read(&db).unwrap(), before);
}
