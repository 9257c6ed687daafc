//! Issue 39 §3 from the command line: a trace or dataset line with an absurd length is refused
//! at load with its `FILE:LINE: field` and exit 2, before anything is sent to the server; a
//! FIFO as a dataset is refused at once.

mod common;

use common::counting_listener;
use std::io::Write as _;
use std::process::Command;
use std::sync::atomic::Ordering;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// Runs `inferbench args`, killed after 60 s (a FIFO read would block forever).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn a_dataset_line_with_output_len_4e9_exits_2_with_file_line_before_any_request() {
    let (port, connections) = counting_listener();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    std::fs::write(
        &path,
        "{\"prompt\": \"hi\"}\n{\"prompt\": \"hello\", \"output_len\": 4000000000}\n",
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let (code, text) = run(&[
        "bench",
        "--base-url",
        &url,
        "--model",
        "m",
        "--dataset-name",
        "jsonl",
        "--dataset-path",
        path.to_str().unwrap(),
        "--progress",
        "off",
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "{}:2: output_len: 4000000000 tokens is above the cap of 10000000 tokens",
            path.display()
        )),
        "{text}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 0, "{text}");
}

#[cfg(unix)]
#[test]
fn a_fifo_dataset_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("p.jsonl");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let (code, text) = run(&[
        "bench",
        "--base-url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--dataset-name",
        "sharegpt",
        "--dataset-path",
        fifo.to_str().unwrap(),
        "--progress",
        "off",
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(": not a regular file (a FIFO): only regular files are read"),
        "{text}"
    );
}

#[test]
fn a_trace_with_in_4e9_exits_2_with_file_line_before_any_request() {
    let (port, connections) = counting_listener();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(
        f,
        r#"{{"id": "ok", "requests": [{{"t": 0, "in": 64, "out": 8, "hash_ids": [0]}}]}}"#
    )
    .unwrap();
    writeln!(
        f,
        r#"{{"id": "huge", "requests": [{{"t": 0, "in": 4000000000, "out": 8}}]}}"#
    )
    .unwrap();
    drop(f);
    let out = Command::new(BIN)
        .args([
            "replay",
            "--traces",
            path.to_str().unwrap(),
            "--model",
            "m",
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
            "--benchmark-duration",
            "60",
            "--unsafe-override",
            "--progress",
            "off",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:2: requests[0].in: 4000000000 tokens is above the cap of 16777216 tokens",
            path.display()
        )),
        "{stderr}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 0, "{stderr}");
}
