//! Trial of issue 39, finding 6: one server ignoring `max_tokens` (400 MB of text per request
//! for `max_tokens` 8) ran the client out of memory and ended the whole run. A response is cut
//! off past a documented multiple of `max_tokens` (1 MiB + 64 KiB × max_tokens of decoded
//! body, 16 × max_tokens + 64 token chunks) and fails as `stream_error` with its cause; the
//! client goes on with the next request.

mod common;

use std::time::Duration;

use std::sync::Arc;

use common::send_hi;
use inferbench_client::{Backend, Client, ClientConfig, TokenCounter};
use inferbench_core::{anomaly::Anomaly, ErrorClass, TokenSource};
use inferbench_testutil::replay::read_request;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// A server answering every request with an endless completions stream of `event` (whole SSE
/// events) until the client goes away, or `then_done` events followed by `[DONE]`.
async fn serve_endless(event: String, then_done: Option<usize>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let event = event.clone();
            tokio::spawn(async move {
                if !read_request(&mut s).await {
                    return;
                }
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: \
                            close\r\n\r\n";
                if s.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let mut sent = 0usize;
                loop {
                    if then_done.is_some_and(|n| sent == n) {
                        let _ = s.write_all(b"data: [DONE]\n\n").await;
                        let _ = s.shutdown().await;
                        return;
                    }
                    if s.write_all(event.as_bytes()).await.is_err() {
                        return;
                    }
                    sent += 1;
                }
            });
        }
    });
    url
}

fn client(url: String) -> Client {
    Client::new(ClientConfig {
        base_url: url,
        backend: Backend::OpenAiCompletions,
        model: "m".into(),
        idle_timeout: Duration::from_secs(5),
        ..Default::default()
    })
    .unwrap()
}

/// 100 kB chunks without end for `max_tokens` 8: cut off past 1 MiB + 8 × 64 KiB, a failed
/// record naming the cap; the same client's next request is sent and ends the same way.
#[tokio::test]
async fn an_endless_response_is_cut_off_at_its_byte_cap() {
    let text = "x".repeat(100_000);
    let url = serve_endless(
        format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{text}\"}}]}}\n\n"),
        None,
    )
    .await;
    let c = client(url);
    for _ in 0..2 {
        let rec = tokio::time::timeout(Duration::from_secs(20), send_hi(&c, Some(8)))
            .await
            .expect("the response was never cut off");
        assert!(!rec.success);
        assert_eq!(rec.error_class, Some(ErrorClass::StreamError));
        assert_eq!(
            rec.error.as_deref(),
            Some(
                "response cut off: more than 1572864 bytes (the client's cap: 1 MiB + 64 KiB × \
                 max_tokens 8): the server ignored max_tokens"
            )
        );
        assert!(rec.output_text.len() <= 1_572_864 + 100_000);
    }
}

/// One-character chunks for `max_tokens` 8: 300 of them then `[DONE]` pass 16 × 8 + 64 = 192
/// token chunks (all in one read, `[DONE]` included): a failure naming the cap, not a success.
#[tokio::test]
async fn too_many_token_chunks_fail_even_with_a_done() {
    let url = serve_endless(
        "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n".to_string(),
        Some(300),
    )
    .await;
    let rec = send_hi(&client(url), Some(8)).await;
    assert!(!rec.success);
    assert_eq!(rec.error_class, Some(ErrorClass::StreamError));
    assert_eq!(
        rec.error.as_deref(),
        Some(
            "response cut off: more than 192 token chunks (the client's cap: 16 × max_tokens 8 \
             + 64): the server ignored max_tokens"
        )
    );
    // Within the cap (150 chunks for 8 tokens): a success, flagged by the anomaly as before.
    let url = serve_endless(
        "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n".to_string(),
        Some(150),
    )
    .await;
    let rec = send_hi(&client(url), Some(8)).await;
    assert!(rec.success, "{:?}", rec.error);
    assert_eq!(rec.output_text.len(), 150);
}

/// Issue 39, later tester: the cut record said `completion_tokens` 244 for a cap of 192
/// chunks (the rest of the read that passed it was counted). The chunk past the cap is not
/// counted: the record counts exactly the cap's 192 chunks, of which it keeps 8 + 16.
#[tokio::test]
async fn a_record_cut_at_the_chunk_cap_counts_the_cap() {
    let url = serve_endless(
        "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n".to_string(),
        Some(300),
    )
    .await;
    let rec = send_hi(&client(url), Some(8)).await;
    assert!(!rec.success);
    assert_eq!(rec.completion_tokens, 192);
    assert_eq!((rec.chunks.len(), rec.chunks_not_kept), (24, 168));
    assert_eq!(rec.output_text.len(), 192);
}

/// Issue 39, later tester: a server inside the caps (16 × max_tokens + 64 one-byte chunks) made
/// the records file outgrow the advised `ulimit -f`, as the record kept every chunk. The record
/// keeps `max_tokens` + 16 chunk entries and counts the rest: a success, whole, flagged
/// `output_not_kept`, its counts those of the whole stream.
#[tokio::test]
async fn chunks_past_the_kept_budget_are_counted_not_kept() {
    let url = serve_endless(
        "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n".to_string(),
        Some(192),
    )
    .await;
    let rec = send_hi(&client(url), Some(8)).await;
    assert!(rec.success, "{:?}", rec.error);
    assert_eq!((rec.chunks.len(), rec.chunks_not_kept), (24, 168));
    assert_eq!(rec.chunk_count(), 192);
    // No usage, no tokenizer: the chunks count the tokens, all of them.
    assert_eq!(rec.completion_tokens, 192);
    assert_eq!(rec.output_text.len(), 192);
    assert_eq!(rec.text_bytes_not_kept, 0);
    assert!(
        rec.anomalies.contains(&Anomaly::OutputNotKept),
        "{:?}",
        rec.anomalies
    );
    // The last token time is the last chunk's, kept or not.
    assert!(rec.last_token_ns >= rec.chunks.last().map(|c| c.t_ns));
}

/// Issue 39, later tester: 64 chunks of 60 KB ran the run out of memory at the advised
/// `ulimit -v`, as the record kept all the text. The record keeps 32 × max_tokens + 1 KiB of
/// text and counts the rest: with no usage the tokenizer counts the whole output as it streams
/// (here one token a byte: the count is exact whatever the cuts), a success flagged
/// `output_not_kept`.
#[tokio::test]
async fn text_past_the_kept_budget_is_counted_not_kept() {
    let text = "x".repeat(100_000);
    let url = serve_endless(
        format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{text}\"}}]}}\n\n"),
        Some(12),
    )
    .await;
    let counter: Arc<TokenCounter> = Arc::new(|s: &str| s.len());
    let c = Client::new(ClientConfig {
        base_url: url,
        backend: Backend::OpenAiCompletions,
        model: "m".into(),
        idle_timeout: Duration::from_secs(5),
        token_counter: Some(counter),
        ..Default::default()
    })
    .unwrap();
    let rec = send_hi(&c, Some(8)).await;
    assert!(rec.success, "{:?}", rec.error);
    assert_eq!(rec.output_text.len(), 32 * 8 + 1024);
    assert_eq!(rec.text_bytes_not_kept, 12 * 100_000 - (32 * 8 + 1024));
    assert_eq!(rec.completion_tokens, 12 * 100_000);
    assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
    assert_eq!((rec.chunks.len(), rec.chunks_not_kept), (12, 0));
    assert!(
        rec.anomalies.contains(&Anomaly::OutputNotKept),
        "{:?}",
        rec.anomalies
    );
}

/// Issue 39, later tester: one 40 MB content chunk was cut off at the byte cap as "the rest
/// carried no tokens (keepalive …)". One line longer than the client holds at once (100 KiB +
/// 32 × max_tokens + 1 KiB) is cut off as such, when it passes that, not at the byte cap.
#[tokio::test]
async fn one_event_longer_than_the_client_holds_is_named() {
    let url = serve_endless(format!("data: {}", "x".repeat(100_000)), None).await;
    let rec = tokio::time::timeout(Duration::from_secs(20), send_hi(&client(url), Some(8)))
        .await
        .expect("the response was never cut off");
    assert!(!rec.success);
    assert_eq!(rec.error_class, Some(ErrorClass::StreamError));
    assert_eq!(
        rec.error.as_deref(),
        Some(
            "response cut off: one SSE line or event longer than 103680 bytes (the client's cap \
             on what it holds at once: 100 KiB + 32 × max_tokens 8 + 1 KiB): a single event \
             larger than the client's cap, not keepalive bytes"
        )
    );
}

/// Issue 39, fresh tester: endless `: keepalive` comments (or token-less events) for
/// `max_tokens` 8 were cut off as "the server ignored max_tokens"; the reason says what filled
/// the cap: bytes that carried no tokens.
#[tokio::test]
async fn bytes_without_tokens_are_cut_off_as_such() {
    for event in [
        ": keepalive\n\n".to_string(),
        "data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\n\n".to_string(),
    ] {
        let url = serve_endless(event.clone(), None).await;
        let rec = tokio::time::timeout(Duration::from_secs(30), send_hi(&client(url), Some(8)))
            .await
            .expect("the response was never cut off");
        assert!(!rec.success);
        assert_eq!(rec.error_class, Some(ErrorClass::StreamError));
        assert_eq!(
            rec.error.as_deref(),
            Some(
                "response cut off: more than 1572864 bytes (the client's cap: 1 MiB + 64 KiB × \
                 max_tokens 8): only 0 token chunks (0 bytes of text) arrived: the rest carried \
                 no tokens (keepalive comments, empty or token-less events)"
            ),
            "{event}"
        );
    }
}

/// The same for a body that is not streamed: one JSON body longer than the client holds at
/// once is cut off as such while it is read (not read up to the byte cap, 64 MiB without one).
#[tokio::test]
async fn one_json_body_longer_than_the_client_holds_is_named() {
    let url = serve_endless(
        format!(
            "{{\"choices\":[{{\"index\":0,\"text\":\"{}",
            "x".repeat(50_000)
        ),
        None,
    )
    .await;
    let rec = tokio::time::timeout(Duration::from_secs(20), send_hi(&client(url), Some(8)))
        .await
        .expect("the response was never cut off");
    assert!(!rec.success);
    assert_eq!(rec.error_class, Some(ErrorClass::StreamError));
    assert_eq!(
        rec.error.as_deref(),
        Some(
            "response cut off: one JSON body longer than 103680 bytes (the client's cap on what \
             it holds at once: 100 KiB + 32 × max_tokens 8 + 1 KiB): a single event larger than \
             the client's cap, not keepalive bytes"
        )
    );
}
