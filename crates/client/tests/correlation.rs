//! `RequestMeta::correlation_id` reaches the server as `X-Correlation-ID` (AgentX's
//! session-affinity header); without one, no such header is sent. Every request carries
//! `User-Agent: inferbench/<version>`.

mod common;

use common::hi;
use std::io::{Read, Write};

use inferbench_client::{Backend, CancellationToken, Client, ClientConfig, RequestMeta};

/// A one-shot server: returns the request head it read, answers with a two-event SSE stream.
fn capture_once() -> (String, std::thread::JoinHandle<String>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = Vec::new();
        let mut b = [0u8; 4096];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut b).unwrap();
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&b[..n]);
        }
        let body = "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\ndata: [DONE]\n\n";
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        String::from_utf8_lossy(&buf).into_owned()
    });
    (url, h)
}

async fn head_for(correlation_id: Option<&str>) -> String {
    let (url, h) = capture_once();
    let client = Client::new(ClientConfig {
        base_url: url,
        backend: Backend::OpenAiCompletions,
        model: "m".into(),
        ..Default::default()
    })
    .unwrap();
    let input = hi(Some(1));
    let meta = RequestMeta {
        correlation_id: correlation_id.map(str::to_string),
        ..Default::default()
    };
    let rec = client.send(&input, meta, &CancellationToken::new()).await;
    assert!(rec.success, "{rec:#?}");
    h.join().unwrap().to_ascii_lowercase()
}

#[tokio::test]
async fn correlation_id_is_sent_as_a_header() {
    let head = head_for(Some("00000003-trace-a::sa:7")).await;
    assert!(
        head.contains("\r\nx-correlation-id: 00000003-trace-a::sa:7\r\n"),
        "{head}"
    );
    // Every request names its client (the header names are lower-cased above).
    assert!(
        head.contains("\r\nuser-agent: inferbench/0.1.0\r\n"),
        "{head}"
    );
    let head = head_for(None).await;
    assert!(!head.contains("x-correlation-id"), "{head}");
    // Not a valid header value: dropped, the request still goes out.
    let head = head_for(Some("bad\nvalue")).await;
    assert!(!head.contains("x-correlation-id"), "{head}");
}
