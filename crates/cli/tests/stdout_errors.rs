//! Trial of issue 39's leftovers, finding 3: `bench … > /dev/full` panicked ("failed printing
//! to stdout: No space left on device", exit 101) after the run, before the point was stored;
//! the same for `replay`, `report`, `db status`, `ingest` and `sim --bound`. Every CLI print
//! goes through one writer whose error is kept: a full stdout ends with exit 1 and one line on
//! stderr, a closed pipe (`| head`) quietly with 141, and what was measured is written and
//! stored either way.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// Where stdout goes.
#[derive(Clone, Copy, Debug)]
enum Out {
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reader is gone before the first write: EPIPE.
    Closed,
}

/// `inferbench args` in `dir` with stdout on `out`: exit code and stderr.
fn run(dir: &Path, out: Out, args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("INFERBENCH_DB")
        .stderr(Stdio::piped());
    match out {
        Out::Full => {
            cmd.stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            );
        }
        Out::Closed => {
            cmd.stdout(Stdio::piped());
        }
    }
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The points stored in `db` (`report --format json`, stdout read).
fn stored_points(dir: &Path, db: &str) -> usize {
    let o = Command::new(BIN)
        .args([
            "report",
            "--db",
            db,
            "--format",
            "json",
            "--include-invalid",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::output_text(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    rows.as_array().unwrap().len()
}

const FULL_LINE: &str = "error: stdout could not be written: No space left on device (os error \
                         28); what it shows is incomplete (files and the database were written \
                         regardless)\n";

/// `bench --db`, `replay`, `report`, `db status`, `ingest` and `sim --bound` with stdout on
/// `/dev/full` (exit 1, the one line last on stderr, no panic) and on a closed pipe (exit 141,
/// nothing said); the point is stored and the replay's summary written in both cases.
#[cfg(unix)]
#[test]
fn a_full_or_closed_stdout_never_panics_and_loses_nothing() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for (out, tag, code) in [(Out::Full, "full", 1), (Out::Closed, "closed", 141)] {
        let said = |err: &str| match out {
            Out::Full => err.ends_with(FULL_LINE),
            Out::Closed => !err.contains("stdout could not be written"),
        };
        let db = format!("{tag}.db");
        let (c, err) = run(
            d,
            out,
            &[
                "bench",
                "--base-url",
                &url,
                "--model",
                "Llama-3.1-8B",
                "--random-input-len",
                "32",
                "--random-output-len",
                "8",
                "--num-warmups",
                "0",
                "--max-concurrency",
                "4",
                "--num-prompts",
                "8",
                "--power",
                "off",
                "--save-result",
                "--result-dir",
                tag,
                "--result-filename",
                "p.json",
                "--db",
                &db,
            ],
        );
        assert_eq!(c, Some(code), "bench, {tag}: {err}");
        assert!(
            said(&err) && !err.contains("panicked"),
            "bench, {tag}: {err}"
        );
        assert_eq!(
            stored_points(d, &db),
            1,
            "bench, {tag}: the point was not stored"
        );
        let other = format!("{tag}-ingest.db");
        let result = format!("{tag}/p.json");
        let rp = format!("{tag}-replay");
        let cases: [Vec<&str>; 5] = [
            vec!["report", "--db", &db, "--include-invalid"],
            vec!["db", "--db", &db, "status"],
            vec!["ingest", &result, "--db", &other],
            vec!["sim", "--bound", "1024/1024"],
            vec![
                "replay",
                "--synthetic",
                "quickstart",
                "--base-url",
                &url,
                "--model",
                "Llama-3.1-8B",
                "--concurrency",
                "1",
                "--benchmark-duration",
                "1",
                "--unsafe-override",
                "--result-dir",
                &rp,
            ],
        ];
        for args in &cases {
            let (c, err) = run(d, out, args);
            assert_eq!(c, Some(code), "{args:?}, {tag}: {err}");
            assert!(
                said(&err) && !err.contains("panicked"),
                "{args:?}, {tag}: {err}"
            );
        }
        assert_eq!(stored_points(d, &other), 1, "ingest, {tag}: nothing stored");
        assert!(d.join(&rp).join("summary.json").is_file(), "replay, {tag}");
    }
}

/// stderr on `/dev/full` (every note and the report's "wrote" line fail): no panic (it was
/// exit 101 at the first note), the run goes on, the point is stored, and the status is 1.
#[cfg(unix)]
#[test]
fn a_full_stderr_never_panics_and_loses_nothing() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            &url,
            "--model",
            "Llama-3.1-8B",
            "--random-input-len",
            "32",
            "--random-output-len",
            "8",
            "--num-warmups",
            "0",
            "--num-prompts",
            "8",
            "--power",
            "off",
            "--save-result",
            "--result-dir",
            "r",
            "--db",
            "e.db",
        ])
        .current_dir(tmp.path())
        .env_remove("INFERBENCH_DB")
        .stderr(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("Successful requests:"), "{out}");
    assert_eq!(stored_points(tmp.path(), "e.db"), 1);
}

/// Issue 39, a fresh tester's finding 4: `report >&-` and `matrix full-sweep … >&-` printed
/// nothing and exited 0 (Rust's runtime reopens a closed fd 0–2 on `/dev/null` before `main`,
/// so every write "succeeded"). The binary notes a closed fd 1 / fd 2 before that (its
/// `.init_array`): the first print to it fails, exit 1 with the line naming the closed
/// stream; `>/dev/null`, which the user asked for, stays 0; a closed stderr fails only a
/// subcommand that prints there.
#[cfg(target_os = "linux")]
#[test]
fn a_stdout_closed_at_start_is_exit_1_and_dev_null_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let matrix = format!(
        "matrix full-sweep --config-files {ex}/sim.yaml --runner-config {ex}/sim-runners.yaml"
    );
    let sh = |line: &str| {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {BIN} {line}"))
            .current_dir(d)
            .env_remove("INFERBENCH_DB")
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let closed = "error: stdout could not be written: stdout was closed when inferbench started \
                  (`>&-`); what it shows is incomplete (files and the database were written \
                  regardless)\n";
    let (code, _, err) = sh("db --db ib.db migrate");
    assert_eq!(code, Some(0), "{err}");
    for cmd in ["db --db ib.db status".to_string(), matrix.clone()] {
        assert_eq!(
            sh(&format!("{cmd} >&-")),
            (Some(1), String::new(), closed.to_string()),
            "{cmd}"
        );
        let (code, out, err) = sh(&format!("{cmd} >/dev/null"));
        assert_eq!((code, out), (Some(0), String::new()), "{cmd}: {err}");
    }
    // stderr closed: the matrix prints nothing there (0); a refusal's line is lost, its own
    // status (2) kept.
    assert_eq!(sh(&format!("{matrix} 2>&-")).0, Some(0));
    assert_eq!(sh("report --db missing.db 2>&-").0, Some(2));
}
