//! Helpers shared by the CLI's integration tests (each test file includes this module).
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;

/// GET `path` from `addr` over HTTP/1.1 with `host` as the Host header (`Connection: close`;
/// axum answers these small bodies with a fixed length, no chunking); returns (status line,
/// body). Panics when the connection or the answer fails.
pub fn http_get_as(addr: &str, host: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// [`http_get_as`] with `addr` itself as the Host header.
pub fn http_get(addr: &str, path: &str) -> (String, String) {
    http_get_as(addr, addr, path)
}

/// The JSON body of GET `path` from `addr`; panics (naming the path and body) unless the answer
/// is `200 OK` with JSON.
pub fn get_json(addr: &str, path: &str) -> serde_json::Value {
    let (status, body) = http_get(addr, path);
    assert_eq!(status, "HTTP/1.1 200 OK", "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// A started `inferbench serve`: the process, its first stderr line ("inferbench serve: DB
/// read-only at http://127.0.0.1:PORT/ (Ctrl-C stops)"), its `host:port`, and a
/// thread reading the rest of its stderr to the end (so the server's later lines never meet a
/// closed pipe), which returns it.
pub struct Serving {
    pub child: Child,
    pub first: String,
    pub addr: String,
    pub rest: JoinHandle<String>,
}

/// Starts `cmd` (an `inferbench serve … --port 0` command; stderr is piped here) and waits for
/// the line that names its address.
pub fn start_serve(cmd: &mut Command) -> Serving {
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    Serving {
        child,
        first,
        addr,
        rest,
    }
}

/// Sends `sig` (`"INT"`, `"TERM"`, …) to process `pid` with `kill(1)`, asserting it was
/// delivered (the process exists).
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .expect("kill(1) runs")
        .success();
    assert!(ok, "kill -{sig} {pid} failed");
}

/// Runs `cmd` (stdout and stderr piped here) until a stderr line starts with `line` (leading
/// spaces ignored; at most 120 s), waits `after`, sends SIGINT, and returns the exit code,
/// stdout and the whole stderr.
#[cfg(unix)]
pub fn interrupt_after_line(
    cmd: Command,
    line: &str,
    after: std::time::Duration,
) -> (Option<i32>, String, String) {
    interrupt_after_line_by(cmd, line, |_| after)
}

/// [`interrupt_after_line`] with the wait computed from the stderr line that matched (e.g.
/// from a point's "took N s", so that the next point is interrupted at the same place of its
/// run on a loaded machine as on an idle one).
#[cfg(unix)]
pub fn interrupt_after_line_by(
    mut cmd: Command,
    line: &str,
    after: impl FnOnce(&str) -> std::time::Duration,
) -> (Option<i32>, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let want = line.to_string();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(stderr).lines() {
            let l = l.unwrap();
            if l.trim_start().starts_with(&want) {
                let _ = tx.send(l.clone());
            }
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    let matched = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .unwrap_or_else(|_| panic!("no stderr line starting {line:?}"));
    std::thread::sleep(after(&matched));
    signal(child.id(), "INT");
    let o = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        err,
    )
}

/// A finished command's stdout then stderr, as one string (lossy UTF-8).
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts that `text` is the refusal of a command run without `--model` against a port with
/// nothing listening (`dead_port`): the `/v1/models` lookup's cause, and the question whether the
/// server runs there (trial 33 F6: it said "pass --model"; the words of
/// `http::unreachable_advice`, the one rule).
pub fn assert_no_server_to_ask_for_the_model(text: &str, dead_port: &str) {
    assert!(
        text.contains(&format!(
            "error: --model not given, and http://127.0.0.1:{dead_port}/v1/models could not be \
             asked which model the server serves (GET http://127.0.0.1:{dead_port}/v1/models: \
             cannot connect to 127.0.0.1:{dead_port}: Connection refused"
        )) && text.contains(
            "): is the server running and listening there? check the address: --base-url, or \
             --host and --port"
        ),
        "{text}"
    );
}

/// A started `inferbench sim` on a free loopback port, killed on drop: the process and its port.
pub struct Sim(pub Child, pub u16);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `inferbench sim` on a free port of 127.0.0.1 with `extra` flags, returned once it accepts
/// connections (panics after 30 s).
pub fn start_sim(extra: &[&str]) -> Sim {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .args(["sim", "--host", "127.0.0.1", "--port", &port.to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sim = Sim(child, port);
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "sim did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    sim
}

/// A listener on a free loopback port that counts the connections made to it and answers
/// none (each is dropped at once): its port and the count, for tests that assert nothing was
/// sent.
pub fn counting_listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let n = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = n.clone();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(c);
        }
    });
    (port, n)
}

/// `inferbench args` run in `dir` without `INFERBENCH_DB` from the environment: its exit code
/// and stderr.
pub fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_inferbench"))
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
