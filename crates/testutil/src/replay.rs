//! A tiny in-process HTTP/1.1 server that answers every POST with one recorded response, byte
//! for byte, with its recorded pauses: the Rust equivalent of `shared/tools/sse_replay.py`, for
//! the tests of `inferbench-client`, `inferbench-loadgen`, the runner and the CLI. Not a
//! benchmark target.
//!
//! Case format (`shared/cases/README.md`): `status` (default 200), `headers` (default
//! `text/event-stream`), `chunks` (`{"delay_ms": N, "text": …}` or `{"delay_ms": N, "b64": …}`,
//! each written as one HTTP chunk), `end` (`"close"`, `"abort"` or `{"stall_ms": N}`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a recorded response ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayEnd {
    /// Finish the chunked body (`0\r\n\r\n`); the connection stays open for the next request.
    Close,
    /// Drop the connection without the final zero-length chunk.
    Abort,
    /// Send nothing more for this long, then drop the connection.
    Stall(Duration),
}

/// One recorded response.
#[derive(Debug, Clone)]
pub struct ReplayCase {
    /// HTTP status code.
    pub status: u16,
    /// Response headers (besides `Transfer-Encoding: chunked`).
    pub headers: Vec<(String, String)>,
    /// (pause before the write, bytes written as one HTTP chunk).
    pub chunks: Vec<(Duration, Vec<u8>)>,
    /// How the response ends.
    pub end: ReplayEnd,
}

impl ReplayCase {
    /// A completions stream answering `text` in one SSE event, then usage (8 prompt, 4
    /// completion tokens) and `[DONE]`; the connection closes. What eval and sweep tests serve
    /// when only the answer's text matters.
    pub fn completion_text(text: &str) -> Self {
        let event = serde_json::json!({"choices": [{"index": 0, "text": text}]});
        ReplayCase {
            status: 200,
            headers: vec![("Content-Type".into(), "text/event-stream".into())],
            chunks: vec![
                (Duration::ZERO, format!("data: {event}\n\n").into_bytes()),
                (
                    Duration::ZERO,
                    b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n".to_vec(),
                ),
            ],
            end: ReplayEnd::Close,
        }
    }

    /// Parses a case object (the JSON of `shared/cases/sse/*.json`). Errors name the field.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let status = match v.get("status") {
            None => 200,
            Some(s) => s
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .ok_or("field `status`: not an HTTP status code")?,
        };
        let headers = match v.get("headers").and_then(Value::as_object) {
            Some(h) => h
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect(),
            None => vec![
                ("Content-Type".into(), "text/event-stream".into()),
                ("Cache-Control".into(), "no-cache".into()),
            ],
        };
        let mut chunks = Vec::new();
        for (i, c) in v
            .get("chunks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let delay =
                Duration::from_millis(c.get("delay_ms").and_then(Value::as_u64).unwrap_or(0));
            let bytes = if let Some(t) = c.get("text").and_then(Value::as_str) {
                t.as_bytes().to_vec()
            } else if let Some(b) = c.get("b64").and_then(Value::as_str) {
                b64_decode(b).ok_or(format!("field `chunks[{i}].b64`: invalid base64"))?
            } else {
                return Err(format!("field `chunks[{i}]`: needs `text` or `b64`"));
            };
            chunks.push((delay, bytes));
        }
        let end = match v.get("end") {
            None => ReplayEnd::Close,
            Some(Value::String(s)) if s == "close" => ReplayEnd::Close,
            Some(Value::String(s)) if s == "abort" => ReplayEnd::Abort,
            Some(e) => match e.get("stall_ms").and_then(Value::as_u64) {
                Some(ms) => ReplayEnd::Stall(Duration::from_millis(ms)),
                None => {
                    return Err(
                        "field `end`: expected \"close\", \"abort\" or {\"stall_ms\": N}".into(),
                    )
                }
            },
        };
        Ok(Self {
            status,
            headers,
            chunks,
            end,
        })
    }

    /// All body bytes concatenated (what a client should parse).
    pub fn body_bytes(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect()
    }
}

/// Standard base64 (RFC 4648) with or without padding, as the case files write it; `None` on
/// invalid input.
fn b64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::engine::{
        general_purpose::GeneralPurposeConfig, DecodePaddingMode, GeneralPurpose,
    };
    use base64::Engine as _;
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    LENIENT.decode(s.trim()).ok()
}

/// Serves `case` on `127.0.0.1:0` until the runtime shuts down; returns the bound address.
pub async fn spawn_replay(case: ReplayCase) -> std::io::Result<SocketAddr> {
    Ok(spawn_replay_counted(case).await?.0)
}

/// The folder of the handed SSE cases, `shared/cases/sse/` beside the repository, or `None`
/// (with a SKIP line on stderr) where the shared folder is absent.
pub fn handed_cases_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/cases/sse");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIP: {} not found (the shared folder is absent)",
            dir.display()
        );
        None
    }
}

/// Every `*.json` case of `dir` as (file name, parsed case), sorted by file name. Panics
/// naming the file when one does not read or parse (a test-setup failure).
pub fn load_case_dir(dir: &Path) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let v: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The handed cases of [`handed_cases_dir`] as [`load_case_dir`] reads them (empty where the
/// shared folder is absent); asserts that at least the sixteen first handed cases are there.
pub fn load_handed_cases() -> Vec<(String, Value)> {
    let Some(dir) = handed_cases_dir() else {
        return vec![];
    };
    let out = load_case_dir(&dir);
    assert!(
        out.len() >= 16,
        "expected the sixteen handed cases in {}",
        dir.display()
    );
    out
}

/// [`spawn_replay`] on a runtime of its own, in a background thread that lives until the
/// process ends (for synchronous tests that drive the `inferbench` binary); returns the base
/// URL `http://127.0.0.1:PORT`. Panics when it cannot bind (a test-setup failure).
pub fn spawn_replay_thread(case: ReplayCase) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime");
        rt.block_on(async move {
            let addr = spawn_replay(case).await.expect("bind 127.0.0.1:0");
            let _ = tx.send(format!("http://{addr}"));
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("the replay thread reports its address")
}

/// Like [`spawn_replay`], also returning the number of TCP connections accepted so far.
pub async fn spawn_replay_counted(
    case: ReplayCase,
) -> std::io::Result<(SocketAddr, Arc<AtomicU64>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let case = Arc::new(case);
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::Relaxed);
            let case = case.clone();
            tokio::spawn(async move {
                let _ = serve_conn(sock, &case).await;
            });
        }
    });
    Ok((addr, accepted))
}

async fn serve_conn(mut sock: TcpStream, case: &ReplayCase) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut buf = Vec::new();
    loop {
        // Read one request: head, then Content-Length bytes of body.
        let head_end = loop {
            if let Some(p) = find(&buf, b"\r\n\r\n") {
                break p + 4;
            }
            let mut tmp = [0u8; 8192];
            let n = sock.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let mut tmp = [0u8; 8192];
            let n = sock.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        buf.drain(..head_end + len);
        let mut out = format!("HTTP/1.1 {} Replay\r\n", case.status);
        for (k, v) in &case.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("Transfer-Encoding: chunked\r\n\r\n");
        sock.write_all(out.as_bytes()).await?;
        for (delay, data) in &case.chunks {
            if !delay.is_zero() {
                tokio::time::sleep(*delay).await;
            }
            if !data.is_empty() {
                let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
                frame.extend_from_slice(data);
                frame.extend_from_slice(b"\r\n");
                sock.write_all(&frame).await?;
            }
        }
        match case.end {
            ReplayEnd::Close => sock.write_all(b"0\r\n\r\n").await?,
            ReplayEnd::Abort => return sock.shutdown().await,
            ReplayEnd::Stall(d) => {
                tokio::time::sleep(d).await;
                return sock.shutdown().await;
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads one HTTP/1.1 request from `s` (its head, then as many body bytes as its
/// `Content-Length` says) and drops it: what a hand-written test server does before it writes
/// its response. False at EOF or on a read error.
pub async fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                match s.read(&mut tmp).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                }
            }
            return true;
        }
        match s.read(&mut tmp).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes() {
        assert_eq!(
            b64_decode("qSDmvA==").unwrap(),
            vec![0xa9, 0x20, 0xe6, 0xbc]
        );
        assert_eq!(b64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(b64_decode("aGk").unwrap(), b"hi");
        assert!(b64_decode("a$").is_none());
    }
}
