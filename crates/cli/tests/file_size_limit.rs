//! Trial of issue 39, finding 5: under `ulimit -f` the kernel's SIGXFSZ killed `bench`
//! (exit 153, no summary, a truncated records file). SIGXFSZ is ignored at start, so the write
//! fails with EFBIG, which the write paths handle: the summary is still printed, the failed
//! write named, and the point fails with exit 1.

mod common;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// `ulimit -f 1` (512 bytes) with no `trap` in the shell: the process ends with an exit code
/// (1), not a signal, prints its report, and names the records write that failed.
#[cfg(unix)]
#[test]
fn a_file_size_limit_fails_the_point_instead_of_killing_it() {
    let sim = common::start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 1; exec {BIN} bench --base-url {url} --model Llama-3.1-8B \
             --num-prompts 6 --random-input-len 16 --random-output-len 4 --power off \
             --save-result --result-dir rdf --save-requests rdf/req.jsonl"
        ))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(out.contains("Successful requests:"), "no summary: {out}");
    assert!(
        err.contains("rdf/req.jsonl: File too large (os error 27)"),
        "{err}"
    );
}
