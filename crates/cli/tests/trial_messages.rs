//! Trial of issue 39, finding 8: messages that named the wrong thing. `--db /dev/full` (a
//! device) was told to run `quickstart --db /dev/full`; `agentx-traces --traces 0` wrote an
//! empty corpus and exited 0.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("INFERBENCH_DB")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A device given as the database is named as not a file, never "no database yet".
#[test]
fn a_device_as_the_database_is_not_a_database_yet_to_create() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run_in(dir.path(), &["report", "--db", "/dev/full"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        "error: bad database location `/dev/full`: not a regular file (a device, FIFO or \
         socket): --db takes a SQLite file, e.g. ./inferbench.db, or a postgres:// URL\n"
    );
}

/// `--traces 0` is refused (exit 2) and writes nothing.
#[test]
fn an_empty_corpus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run_in(
        dir.path(),
        &[
            "agentx-traces",
            "--shape",
            "quickstart",
            "--traces",
            "0",
            "-o",
            "t.jsonl",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        "error: --traces 0: a corpus needs at least one session (omit --traces for the shape's)\n"
    );
    assert!(!dir.path().join("t.jsonl").exists());
}
