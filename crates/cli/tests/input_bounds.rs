//! Issue 39 §3 from the command line: a trace with an absurd length is refused at load with its
//! `FILE:LINE: field` and exit 2, before anything is sent to the server.

use std::io::Write as _;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

#[test]
fn a_trace_with_in_4e9_exits_2_with_file_line_before_any_request() {
    // A listener that counts the connections made to it (and answers none).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(c);
        }
    });
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
