//! Issue 14's own HTTP/1.1 exchange (`wire.rs`) against hand-written responses over real
//! sockets: interim `1xx` heads, chunk extensions and trailers, `204`, `Connection: close`,
//! Transfer-Encoding with Content-Length (read, not reused), and the responses it refuses (a
//! head over the limit, an overflowing chunk size). Each ends as one record, success or one classified error.

mod common;

use common::hi;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::{Backend, CancellationToken, Client, ClientConfig, RequestMeta};
use inferbench_core::{ErrorClass, RequestRecord};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const EV: &str = "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n";

/// A server answering every request on every connection with `response`, and its count of
/// accepted connections.
async fn serve(response: Vec<u8>) -> (String, Arc<AtomicU64>) {
    serve_each(vec![response]).await
}

/// A server answering the k-th request on each connection with `responses[k]` (the last one
/// for every later request), and its count of accepted connections.
async fn serve_each(responses: Vec<Vec<u8>>) -> (String, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let accepted = Arc::new(AtomicU64::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            count.fetch_add(1, Ordering::Relaxed);
            let rs = responses.clone();
            tokio::spawn(async move {
                let mut k = 0;
                while inferbench_testutil::replay::read_request(&mut s).await {
                    let r = &rs[k.min(rs.len() - 1)];
                    k += 1;
                    if s.write_all(r).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, accepted)
}

fn client(url: &str) -> Client {
    Client::new(ClientConfig {
        base_url: url.into(),
        backend: Backend::OpenAiCompletions,
        model: "m".into(),
        idle_timeout: Duration::from_millis(500),
        ..Default::default()
    })
    .unwrap()
}

async fn send(c: &Client) -> RequestRecord {
    let input = hi(Some(2));
    c.send(&input, RequestMeta::default(), &CancellationToken::new())
        .await
}

fn failed(r: &RequestRecord, class: ErrorClass, needle: &str) {
    assert!(!r.success, "{r:#?}");
    assert_eq!(r.error_class, Some(class), "{r:#?}");
    let msg = r.error.as_deref().unwrap_or_default();
    assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
    assert!(r.end_ns >= r.sent_ns);
}

fn chunked(pieces: &[&str]) -> String {
    pieces
        .iter()
        .map(|p| format!("{:x};ext=\"a b\"\r\n{p}\r\n", p.len()))
        .collect()
}

#[tokio::test]
async fn interim_heads_extensions_and_trailers_then_reuse() {
    let body = chunked(&[EV, EV, "data: [DONE]\n\n"]);
    let response = format!(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n\
         HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
         {body}0\r\nX-Trailer: 1\r\n\r\n"
    );
    let (url, accepted) = serve(response.into_bytes()).await;
    let c = client(&url);
    for i in 0..4 {
        let r = send(&c).await;
        assert!(r.success, "{r:#?}");
        assert_eq!(r.output_text, "xx");
        assert_eq!(r.http_status, Some(200));
        if i == 0 {
            // Past the new pool's probation: the next requests reuse the connection.
            tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50))
                .await;
        }
    }
    assert_eq!(accepted.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn connection_close_is_never_reused() {
    let body = format!("{EV}data: [DONE]\n\n");
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (url, accepted) = serve(response.into_bytes()).await;
    let c = client(&url);
    for _ in 0..2 {
        let r = send(&c).await;
        assert!(r.success, "{r:#?}");
        tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50)).await;
    }
    assert_eq!(accepted.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn no_content_is_a_stream_without_tokens() {
    // The Content-Length is ignored: a 204 has no body.
    let head =
        "HTTP/1.1 204 No Content\r\nContent-Type: text/event-stream\r\nContent-Length: 9\r\n\r\n";
    let (url, _) = serve(head.as_bytes().to_vec()).await;
    let r = send(&client(&url)).await;
    failed(&r, ErrorClass::StreamError, "without a token-bearing chunk");
    assert_eq!(r.http_status, Some(204));
}

/// Transfer-Encoding overrides Content-Length (RFC 9112 §6.3, as hyper read it): the stream
/// is read whole, and its connection is not reused (a response-splitting risk).
#[tokio::test]
async fn transfer_encoding_wins_over_content_length_and_the_connection_is_not_reused() {
    let body = chunked(&[EV, "data: [DONE]\n\n"]);
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 3\r\n\
         Transfer-Encoding: chunked\r\n\r\n{body}0\r\n\r\n"
    );
    let (url, accepted) = serve(response.into_bytes()).await;
    let c = client(&url);
    for _ in 0..2 {
        let r = send(&c).await;
        assert!(r.success, "{r:#?}");
        assert_eq!(r.output_text, "x");
        tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50)).await;
    }
    assert_eq!(accepted.load(Ordering::Relaxed), 2);
}

/// A server that answers, but not in HTTP (an SSH banner: a wrong port) is reachable: the
/// request is `malformed`, not `connect` (trial 29: "server unreachable", exit 3).
#[tokio::test]
async fn a_garbage_head_is_malformed_not_unreachable() {
    let (url, _) = serve(b"SSH-2.0-OpenSSH_9.2\r\n".to_vec()).await;
    let r = send(&client(&url)).await;
    failed(&r, ErrorClass::Malformed, "invalid response head from ");
    assert_eq!(r.http_status, None);
}

#[tokio::test]
async fn a_head_over_the_limit_is_refused() {
    let response = format!(
        "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n",
        "a".repeat(20_000)
    );
    let (url, _) = serve(response.into_bytes()).await;
    let r = send(&client(&url)).await;
    // The server answered: not `connect` ("server unreachable", exit 3; trial 29).
    failed(&r, ErrorClass::Malformed, "response head over 16384 bytes");
}

#[tokio::test]
async fn an_overflowing_chunk_size_is_malformed_after_the_tokens_before_it() {
    let body = chunked(&[EV]);
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
         {body}10000000000000000\r\n"
    );
    let (url, _) = serve(response.into_bytes()).await;
    let r = send(&client(&url)).await;
    failed(
        &r,
        ErrorClass::Malformed,
        "invalid HTTP body framing: chunk size over",
    );
    assert_eq!(r.output_text, "x");
}

#[tokio::test]
async fn a_short_content_length_body_is_a_stream_error() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        inferbench_testutil::replay::read_request(&mut s).await;
        let _ = s
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                     Content-Length: 500\r\n\r\n{EV}"
                )
                .as_bytes(),
            )
            .await;
        let _ = s.shutdown().await;
    });
    let r = send(&client(&url)).await;
    failed(&r, ErrorClass::StreamError, "connection failed mid-body");
    assert_eq!(r.output_text, "x");
}

/// A server that writes its whole response one byte at a time (an interim head first): the
/// head is found whichever read completes it.
#[tokio::test]
async fn a_response_trickled_byte_by_byte() {
    let body = chunked(&[EV, EV, "data: [DONE]\n\n"]);
    let response = format!(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
         Transfer-Encoding: chunked\r\n\r\n{body}0\r\n\r\n"
    );
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let _ = s.set_nodelay(true);
        inferbench_testutil::replay::read_request(&mut s).await;
        for b in response.as_bytes() {
            if s.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::task::yield_now().await;
        }
    });
    let r = send(&client(&url)).await;
    assert!(r.success, "{r:#?}");
    assert_eq!(r.output_text, "xx");
}

/// A Content-Length that ends the body before the stream's `[DONE]` while the rest of the
/// stream follows on the connection (trial 29 #2): a `malformed` failure with the tokens read
/// so far, not a success that silently drops the rest; the connection is not reused.
#[tokio::test]
async fn a_content_length_that_cuts_the_stream_short_is_malformed() {
    let first = format!("{EV}{EV}");
    let rest = format!("{EV}data: [DONE]\n\n");
    let (url, accepted) = serve(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n\
             {first}{rest}",
            first.len()
        )
        .into_bytes(),
    )
    .await;
    let c = client(&url);
    for _ in 0..2 {
        let r = send(&c).await;
        failed(
            &r,
            ErrorClass::Malformed,
            "more bytes followed on the connection",
        );
        assert_eq!(r.output_text, "xx");
        assert_eq!(r.chunks.len(), 2);
    }
    assert_eq!(accepted.load(Ordering::Relaxed), 2);

    // The same stream with a correct Content-Length and nothing after it, but no terminal
    // signal (`[DONE]`, finish_reason, usage chunk): the server's answer was cut short
    // (issue 39), a `stream_error`, not a two-token success.
    let at_length = |body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let (url, _) = serve(at_length(&first)).await;
    let r = send(&client(&url)).await;
    failed(
        &r,
        ErrorClass::StreamError,
        "stream ended without finish_reason, usage or [DONE]",
    );
    assert_eq!(r.output_text, "xx");
    // With a finish_reason it is whole, `[DONE]` or not.
    let fin = "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\n";
    let (url, _) = serve(at_length(&format!("{first}{fin}"))).await;
    let r = send(&client(&url)).await;
    assert!(r.success, "{r:#?}");
    assert_eq!(r.output_text, "xx");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
}

/// Garbage without a line end (what `http://` gets from a TLS port: an alert record) is a
/// `malformed` answer at once, whether the server then closes or holds the connection; a
/// head cut short by the close is `malformed` too: the server is reachable (trial 30: both
/// were `connect`, "server unreachable", exit 3).
#[tokio::test]
async fn garbage_without_a_line_end_and_a_cut_head_are_malformed() {
    for (bytes, hold) in [
        (&b"\x15\x03\x01\x00\x02\x02\x50"[..], false),
        (&b"\x15\x03\x01\x00\x02\x02\x50"[..], true),
        (
            &b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"[..],
            false,
        ),
    ] {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let needle = if bytes.starts_with(b"HTTP") {
            "incomplete response head"
        } else {
            "invalid response head"
        };
        let bytes = bytes.to_vec();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            inferbench_testutil::replay::read_request(&mut s).await;
            let _ = s.write_all(&bytes).await;
            if hold {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        });
        let t0 = std::time::Instant::now();
        let r = send(&client(&url)).await;
        failed(&r, ErrorClass::Malformed, needle);
        assert!(t0.elapsed() < Duration::from_millis(400), "{r:#?}");
    }
}

/// `Content-Length: 0` under an event-stream label, then the whole stream: the framing ended
/// the stream before its first event, `malformed` like any cut (trial 30: it was a
/// `stream_error` "without a token-bearing chunk").
#[tokio::test]
async fn a_zero_content_length_before_the_stream_is_malformed() {
    let (url, _) = serve(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n\
             {EV}data: [DONE]\n\n"
        )
        .into_bytes(),
    )
    .await;
    let r = send(&client(&url)).await;
    failed(
        &r,
        ErrorClass::Malformed,
        "more bytes followed on the connection",
    );
}

/// Bytes that precede the response to a request on a kept-alive connection (the rest of an
/// earlier response its server wrote past that response's end) fail that request as
/// `malformed`, named as such, and the pool reuses no connection afterwards (trial 31 F4: the
/// message said only "invalid HTTP version").
#[tokio::test]
async fn leftover_bytes_on_a_reused_connection_are_named_and_end_reuse() {
    let body = format!("{EV}data: [DONE]\n\n");
    let ok = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (url, accepted) = serve_each(vec![
        ok.clone().into_bytes(),
        format!("{EV}{ok}").into_bytes(),
    ])
    .await;
    let c = client(&url);
    let r = send(&c).await;
    assert!(r.success, "{r:#?}");
    // Past the pool's probation: the next request reuses the connection.
    tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50)).await;
    let r = send(&c).await;
    failed(
        &r,
        ErrorClass::Malformed,
        "invalid response head from http://127.0.0.1:",
    );
    failed(
        &r,
        ErrorClass::Malformed,
        "(on a kept-alive connection: most likely the rest of an earlier response, written \
         past that response's end)",
    );
    // Keep-alive is off: the next requests connect afresh, and get their own answers.
    for _ in 0..2 {
        tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50)).await;
        let r = send(&c).await;
        assert!(r.success, "{r:#?}");
        assert_eq!(r.output_text, "x");
    }
    assert_eq!(accepted.load(Ordering::Relaxed), 3);
}

/// Trial 32 F1: a server that answers each request, then writes a copy of that answer 1.3 s
/// later (past bench's 1 s trust wait), and answers the next request 5 ms after reading it.
/// A request sent on its trusted connection before the copy reads the copy; the real answer
/// comes 5 ms after the check-in, so neither check-in nor checkout sees it, and the
/// connection sits idle at the end of the phase. `audit_idle` (bench: after every profile)
/// finds those bytes.
#[tokio::test]
async fn the_idle_audit_finds_a_late_copy_that_shifted_a_request() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut k = 0;
                while inferbench_testutil::replay::read_request(&mut s).await {
                    k += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let ev = EV.replace("\"x\"", &format!("\"r{k}\""));
                    let body = format!("{ev}data: [DONE]\n\n");
                    let r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                         Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if s.write_all(r.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(1300)).await;
                    if s.write_all(r.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let c = client(&url);
    let r = send(&c).await;
    assert_eq!(r.output_text, "r1", "{r:#?}");
    // bench's wait after its warmup: 1 s of quiet, so the pool trusts the connection.
    c.await_trust().await;
    // Sent before the copy of "r1": it reads that copy (the shift bench cannot see per
    // request) while its own "r2" is still 5 ms away.
    let r = send(&c).await;
    assert_eq!(r.output_text, "r1", "{r:#?}");
    assert!(!c.stale_seen());
    c.audit_idle().await;
    assert!(c.stale_seen());
}
