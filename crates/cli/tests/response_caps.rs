//! Issue 39, later tester: the advised `ulimit -f` / `ulimit -v` must be true against a server
//! that stays inside the client's per-response caps (16 × max_tokens + 64 token chunks, and
//! 1 MiB + 64 KiB × max_tokens of body). Two such servers made it false: 16 × max_tokens one-byte
//! chunks grew the records file past the advised `ulimit -f`, 64 chunks of 60 KB ran the run
//! out of memory at the advised `ulimit -v`. The caps still decide when a response is cut off;
//! what the client keeps of a response is bounded by the budget the estimates count
//! (`inferbench_client::kept`: max_tokens + 16 chunk entries, 32 × max_tokens + 1 KiB of text,
//! one event of at most 100 KiB + that text held while reading), the rest counted, not kept.
//! Against either server a run at the advised value completes (exit 0), with and without
//! `--save-detailed`, every record whole and flagged `output_not_kept`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

const CLOSE_INHERITED: &str =
    "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd<&-\"; done; ";

/// Output tokens each request asks for.
const OSL: u64 = 64;

/// What the server streams for a request for `max_tokens` tokens.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// The chunk cap's count of one-byte chunks: 16 × max_tokens + 64.
    ManyTiny,
    /// 40 chunks of 100,000 bytes of text (4 MB, inside the 1 MiB + 64 KiB × max_tokens body
    /// cap; each event inside what the client holds at once).
    FewHuge,
}

impl Shape {
    /// (chunks, text bytes per chunk) for `max_tokens`.
    fn chunks(self, max_tokens: u64) -> (u64, usize) {
        match self {
            Shape::ManyTiny => (16 * max_tokens + 64, 1),
            Shape::FewHuge => (40, 100_000),
        }
    }
}

/// The response body of `shape` for `max_tokens`: its chunks of `x` text, the last with
/// `finish_reason`, then `[DONE]`; no usage (the client's tokenizer counts the output).
fn body(shape: Shape, max_tokens: u64) -> String {
    let (chunks, each) = shape.chunks(max_tokens);
    let text = "x".repeat(each);
    let mut body = String::new();
    for i in 0..chunks {
        let finish = if i + 1 == chunks {
            "\"length\""
        } else {
            "null"
        };
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":{finish}}}]}}\n\n"
        ));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

fn answer(mut s: TcpStream, shape: Shape) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split(' ').nth(1).unwrap_or("").to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        if h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut req = vec![0u8; len];
    if r.read_exact(&mut req).is_err() {
        return;
    }
    let reply = if path.ends_with("/completions") {
        let v: serde_json::Value = serde_json::from_slice(&req).unwrap_or_default();
        let m = v["max_tokens"].as_u64().unwrap_or(16);
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{}",
            body(shape, m)
        )
    } else if path.ends_with("/models") {
        let b = r#"{"object":"list","data":[{"id":"Llama-3.1-8B","object":"model"}]}"#;
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{b}",
            b.len()
        )
    } else {
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
    };
    let _ = s.write_all(reply.as_bytes());
}

/// A server answering every completion with `shape`; its URL.
fn serve(shape: Shape) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || answer(s, shape));
        }
    });
    url
}

/// `inferbench ARGS` in `dir` after `ulimit LIMIT`, 2 runtime workers.
fn under(dir: &std::path::Path, limit: &str, args: &[&str]) -> (Output, String) {
    let script = format!("{CLOSE_INHERITED}ulimit {limit} || exit 99; exec \"$0\" \"$@\"");
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .env("TOKIO_WORKER_THREADS", "2")
        .env_remove("INFERBENCH_DB")
        .output()
        .unwrap();
    let text = common::output_text(&o);
    (o, text)
}

/// 50 prompts of [`OSL`] output tokens at conc 16 (5 warmups), records and result saved.
fn args(url: &str, detailed: bool) -> Vec<String> {
    let osl = OSL.to_string();
    let mut a: Vec<String> = [
        "bench",
        "--base-url",
        url,
        "--model",
        "Llama-3.1-8B",
        "--random-input-len",
        "32",
        "--random-output-len",
        &osl,
        "--num-prompts",
        "50",
        "--num-warmups",
        "5",
        "--max-concurrency",
        "16",
        "--save-requests",
        "q.jsonl",
        "--save-result",
        "--result-dir",
        "r",
        "--result-filename",
        "p.json",
        "--power",
        "off",
        "--progress",
        "off",
        "--no-server-metrics",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if detailed {
        a.push("--save-detailed".into());
    }
    a
}

fn advised<'a>(text: &'a str, before: &str, after: &str) -> &'a str {
    text.split_once(before)
        .and_then(|(_, t)| t.split_once(after))
        .map(|(n, _)| n)
        .unwrap_or_else(|| panic!("no advised value: {text}"))
}

/// Every record whole, a success, flagged `output_not_kept`, keeping what the client's budget
/// keeps and counting the rest: 55 lines (5 warmups).
fn assert_records(dir: &std::path::Path, shape: Shape) {
    let lines = std::fs::read_to_string(dir.join("q.jsonl")).unwrap();
    let (chunks, each) = shape.chunks(OSL);
    let text = chunks * each as u64;
    let kept_chunks = chunks.min(OSL + 16);
    let kept_text = text.min(32 * OSL + 1024);
    let mut n = 0;
    for l in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let head = &l[..l.len().min(400)];
        assert_eq!(v["success"], true, "{head}");
        assert_eq!(v["chunks"].as_array().unwrap().len() as u64, kept_chunks);
        assert_eq!(
            v["chunks_not_kept"].as_u64().unwrap_or(0),
            chunks - kept_chunks
        );
        assert_eq!(v["output_text"].as_str().unwrap().len() as u64, kept_text);
        assert_eq!(
            v["text_bytes_not_kept"].as_u64().unwrap_or(0),
            text - kept_text
        );
        assert!(
            (v["anomalies"].as_array().unwrap()).contains(&"output_not_kept".into()),
            "{head}"
        );
        // The counts are the whole stream's: every chunk carries at least one token.
        assert!(v["completion_tokens"].as_u64().unwrap() >= chunks, "{head}");
        n += 1;
    }
    assert_eq!(n, 55);
    serde_json::from_slice::<serde_json::Value>(&std::fs::read(dir.join("r/p.json")).unwrap())
        .unwrap();
}

/// At the advised `ulimit -f` (in sh's blocks) the run against either server at the caps
/// completes, every file whole.
#[test]
fn a_server_at_the_caps_runs_at_the_advised_file_size_limit() {
    for shape in [Shape::ManyTiny, Shape::FewHuge] {
        let url = serve(shape);
        for detailed in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let a = args(&url, detailed);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let (o, text) = under(dir.path(), "-f 40", &a);
            assert_eq!(o.status.code(), Some(2), "{shape:?} {detailed}: {text}");
            let blocks = advised(&text, "bash counts; ", " in sh's 512-byte blocks");
            let kib: u64 = blocks.parse::<u64>().unwrap() / 2;
            let (o, text) = under(dir.path(), &format!("-f {kib}"), &a);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{shape:?} {detailed} ulimit -f {kib}: {text}"
            );
            assert_records(dir.path(), shape);
        }
    }
}

/// At the advised `ulimit -v` the run against either server at the caps completes.
#[test]
fn a_server_at_the_caps_runs_at_the_advised_memory_limit() {
    for shape in [Shape::ManyTiny, Shape::FewHuge] {
        let url = serve(shape);
        for detailed in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let a = args(&url, detailed);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let (o, text) = under(dir.path(), "-v 100000", &a);
            assert_eq!(o.status.code(), Some(2), "{shape:?} {detailed}: {text}");
            let kib = advised(&text, "`ulimit -v ", "` (KiB)").to_string();
            let (o, text) = under(dir.path(), &format!("-v {kib}"), &a);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{shape:?} {detailed} ulimit -v {kib}: {text}"
            );
            assert_records(dir.path(), shape);
        }
    }
}
