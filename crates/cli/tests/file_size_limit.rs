//! The file-size limit (`ulimit -f`). Trial of issue 39, finding 5: the kernel's SIGXFSZ
//! killed `bench` (exit 153, no summary, a truncated records file); SIGXFSZ is ignored at
//! start, so a write fails with EFBIG, which the write paths handle: the summary is still
//! printed, the failed write named with the limit, and the point fails with exit 1. Trial of
//! issue 39's leftovers, finding 4: a limit below what the run's files need at least is
//! refused before any request (exit 2, naming `ulimit -f` and a value that fits); it was found
//! after every request ("sqlite: disk I/O error", exit 2).

mod common;

use std::process::Command;
use std::sync::atomic::Ordering;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// `sh -c "ulimit -f BLOCKS; exec inferbench ARGS"` in `dir` (sh counts 512-byte blocks): exit
/// code, stdout, stderr.
#[cfg(unix)]
fn under_limit(dir: &std::path::Path, blocks: u64, args: &str) -> (Option<i32>, String, String) {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -f {blocks}; exec {BIN} {args}"))
        .current_dir(dir)
        .env_remove("INFERBENCH_DB")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A limit 50 saved records (at least 400 + 30 bytes per output token each) cannot hold: the
/// records file's estimate fits under 22 blocks (11 KiB), the file itself (about 630 bytes a
/// record) does not, so the write fails at run time: exit 1, the summary printed, the failed
/// write named with the limit, never a signal.
#[cfg(unix)]
#[test]
fn a_file_size_limit_fails_the_point_instead_of_killing_it() {
    let sim = common::start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let (code, out, err) = under_limit(
        dir.path(),
        22,
        &format!(
            "bench --base-url {url} --model Llama-3.1-8B --num-prompts 20 \
             --random-input-len 16 --random-output-len 4 --power off --save-requests \
             rdf/req.jsonl"
        ),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(out.contains("Successful requests:"), "no summary: {out}");
    assert!(
        err.contains(
            "rdf/req.jsonl: File too large (os error 27) (records kept in memory for the \
             summary; the point fails, exit 1) (the file-size limit `ulimit -f` is 11 KiB: \
             raise it, `ulimit -f unlimited`)"
        ),
        "{err}"
    );
}

/// The handed cases: `bench --db` (and `quickstart`) under a limit below a new database's
/// schema (100 KiB, and 0), `eval --limit 50` under 5 KiB and `replay --result-dir` under 1 KiB are refused before
/// any request (a listener that counts connections), exit 2, naming `ulimit -f` and a value
/// that fits; no database is created.
#[cfg(unix)]
#[test]
fn a_file_size_limit_below_the_runs_files_is_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (port, hits) = common::counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let bench = format!(
        "bench --base-url {url} --model Llama-3.1-8B --random-input-len 32 \
         --random-output-len 8 --num-warmups 0 --max-concurrency 4 --num-prompts 8 \
         --save-result --result-dir r --db d.db"
    );
    for (blocks, kib) in [(200, 100), (0, 0)] {
        let (code, _, err) = under_limit(d, blocks, &bench);
        assert_eq!(
            (code, err.as_str()),
            (
                Some(2),
                format!(
                    "error: `ulimit -f` limits each file to {kib} KiB; --db will hold at least \
                     120 KiB: nothing was sent; raise the limit to at least 120 (`ulimit -f \
                     120`, in KiB as bash counts; 240 in sh's 512-byte blocks) or `ulimit -f \
                     unlimited`\n"
                )
                .as_str()
            ),
            "ulimit -f {blocks}"
        );
        assert!(!d.join("d.db").exists());
        // quickstart: its database too, before the sweep.
        let (code, _, err) = under_limit(d, blocks, "quickstart --fast --out qs --db q.db");
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.ends_with(&format!(
                "error: `ulimit -f` limits each file to {kib} KiB; --db will hold at least 120 \
                 KiB: nothing was sent; raise the limit to at least 120 (`ulimit -f 120`, in KiB \
                 as bash counts; 240 in sh's 512-byte blocks) or `ulimit -f unlimited`\n"
            )),
            "{err}"
        );
        assert!(!d.join("q.db").exists());
    }
    // 50 problems and 5 worked examples of about 90 bytes each.
    let data = d.join("gsm8k");
    std::fs::create_dir(&data).unwrap();
    let line = |q: String, a: String| serde_json::json!({"question": q, "answer": a}).to_string();
    let lines = |n: usize| -> String {
        (0..n)
            .map(|i| {
                line(
                    format!("Problem {i}: how many apples are there?"),
                    format!("{i}+0={i}\n#### {i}"),
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    };
    std::fs::write(data.join("test.jsonl"), lines(60)).unwrap();
    std::fs::write(data.join("train.jsonl"), lines(5)).unwrap();
    let (code, _, err) = under_limit(
        d,
        10,
        &format!(
            "eval gsm8k --base-url {url} --model m --backend openai --no-threshold \
             --data-dir gsm8k --limit 50 --result-dir e"
        ),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with(
            "error: `ulimit -f` limits each file to 5 KiB; --result-dir's samples_gsm8k.jsonl \
             will hold at least "
        ),
        "{err}"
    );
    let (code, _, err) = under_limit(
        d,
        2,
        &format!(
            "replay --synthetic quickstart --base-url {url} --model m --concurrency 1 \
             --benchmark-duration 2 --unsafe-override --result-dir out"
        ),
    );
    assert_eq!(
        (code, err.as_str()),
        (
            Some(2),
            "error: `ulimit -f` limits each file to 1 KiB; --result-dir's summary.json will \
             hold at least 2 KiB: nothing was sent; raise the limit to at least 2 (`ulimit -f \
             2`, in KiB as bash counts; 4 in sh's 512-byte blocks) or `ulimit -f unlimited`\n"
        )
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a request was sent");
}

/// A limit that a new database's estimate (120 KiB) fits but one stored point (about 240 KiB)
/// does not: the run is not refused, the store fails after it, and that is exit 1 (it was 2,
/// "bad flags", after the run; a skipped store was 0), naming the limit and the result file
/// to ingest later; the database it created is not left half-written.
#[cfg(unix)]
#[test]
fn a_store_that_fails_after_the_run_is_exit_1_naming_the_limit() {
    let sim = common::start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let (code, out, err) = under_limit(
        dir.path(),
        300,
        &format!(
            "bench --base-url {url} --model Llama-3.1-8B --num-prompts 8 --random-input-len 32 \
             --random-output-len 8 --power off --save-result --result-dir r --result-filename \
             p.json --db u.db"
        ),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(out.contains("Successful requests:"), "no summary: {out}");
    assert!(
        err.contains(
            "error: storing the point in u.db failed: database error: sqlite: disk I/O error \
             (the file-size limit `ulimit -f` is 150 KiB: raise it, `ulimit -f unlimited`); \
             the result is kept in r/p.json (store it later with `inferbench ingest r/p.json \
             --db u.db`)\n"
        ),
        "{err}"
    );
    assert!(dir.path().join("r/p.json").is_file());
    assert!(!dir.path().join("u.db").exists());
}
