//! Faults beyond the handed cases: every one ends as one classified record, never a panic or a
//! hang. Each test builds a recorded response inline and serves it with the replay server.

mod common;

use common::{hi, send_hi};
use std::time::{Duration, Instant};

use inferbench_client::{
    Backend, CancellationToken, Client, ClientConfig, RequestInput, RequestMeta,
};
use inferbench_core::{ErrorClass, RequestRecord, TokenSource};
use inferbench_testutil::replay::{spawn_replay, spawn_replay_counted, ReplayCase, ReplayEnd};

const TOK: &str = "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n";

fn case(status: u16, chunks: &[(u64, &str)], end: ReplayEnd) -> ReplayCase {
    ReplayCase {
        status,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks: chunks
            .iter()
            .map(|(ms, t)| (Duration::from_millis(*ms), t.as_bytes().to_vec()))
            .collect(),
        end,
    }
}

async fn send_to(base_url: String, tweak: impl FnOnce(&mut ClientConfig)) -> RequestRecord {
    let mut cfg = ClientConfig {
        base_url,
        backend: Backend::OpenAiCompletions,
        model: "m".into(),
        api_key: Some("sk-topsecret".into()),
        ..Default::default()
    };
    tweak(&mut cfg);
    let client = Client::new(cfg).unwrap();
    send_hi(&client, Some(4)).await
}

/// A client of `base_url` with model `m` and otherwise default settings.
fn client_at(base_url: &str) -> Client {
    Client::new(ClientConfig {
        base_url: base_url.into(),
        model: "m".into(),
        ..Default::default()
    })
    .unwrap()
}

/// A client of a replay server that streams one token and `[DONE]` on a kept-alive connection,
/// and the server's count of accepted connections.
async fn one_token_server() -> (Client, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    let (addr, accepted) = spawn_replay_counted(case(
        200,
        &[(0, TOK), (0, "data: [DONE]\n\n")],
        ReplayEnd::Close,
    ))
    .await
    .unwrap();
    (client_at(&format!("http://{addr}")), accepted)
}

/// Sends `input` and asserts it succeeded.
async fn sent_ok(client: &Client, input: &RequestInput<'_>, cancel: &CancellationToken) {
    let rec = client.send(input, RequestMeta::default(), cancel).await;
    assert!(rec.success, "{rec:#?}");
}

async fn serve(c: ReplayCase) -> String {
    format!("http://{}", spawn_replay(c).await.unwrap())
}

fn assert_failed(rec: &RequestRecord, class: ErrorClass) {
    assert!(!rec.success, "{rec:#?}");
    assert_eq!(rec.error_class, Some(class), "{rec:#?}");
    let msg = rec.error.as_deref().unwrap();
    assert!(!msg.contains("sk-topsecret"), "{msg}");
    assert!(rec.end_ns >= rec.sent_ns);
}

#[tokio::test]
async fn connection_refused_is_connect() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rec = send_to(format!("http://127.0.0.1:{port}"), |_| {}).await;
    assert_failed(&rec, ErrorClass::Connect);
    assert!(rec.error.unwrap().contains(&port.to_string()));
    assert_eq!(rec.http_status, None);
}

#[tokio::test]
async fn http_500_keeps_status_and_body_excerpt() {
    let url = serve(case(
        500,
        &[(0, "{\"error\":\"overloaded\"}")],
        ReplayEnd::Close,
    ))
    .await;
    let rec = send_to(url, |_| {}).await;
    assert_failed(&rec, ErrorClass::HttpStatus);
    assert_eq!(rec.http_status, Some(500));
    assert!(rec.error.unwrap().contains("overloaded"));
}

#[tokio::test]
async fn abort_mid_stream_is_stream_error_with_partial_tokens() {
    let url = serve(case(200, &[(0, TOK), (0, TOK)], ReplayEnd::Abort)).await;
    let rec = send_to(url, |_| {}).await;
    assert_failed(&rec, ErrorClass::StreamError);
    assert_eq!(rec.chunks.len(), 2);
    assert_eq!(rec.output_text, "xx");
}

#[tokio::test]
async fn no_token_before_clean_end_is_stream_error() {
    let usage = "data: {\"choices\":[],\"usage\":{\"completion_tokens\":0}}\n\ndata: [DONE]\n\n";
    let url = serve(case(200, &[(0, ": hi\n\n"), (0, usage)], ReplayEnd::Close)).await;
    let rec = send_to(url, |_| {}).await;
    assert_failed(&rec, ErrorClass::StreamError);
}

#[tokio::test]
async fn total_timeout_fires_while_bytes_keep_coming() {
    let chunks: Vec<(u64, &str)> = (0..40).map(|_| (50, ": keep-alive\n\n")).collect();
    let url = serve(case(200, &chunks, ReplayEnd::Close)).await;
    let t0 = Instant::now();
    let rec = send_to(url, |c| {
        c.request_timeout = Some(Duration::from_millis(300))
    })
    .await;
    assert_failed(&rec, ErrorClass::TimeoutTotal);
    assert!(t0.elapsed() < Duration::from_millis(1500));
}

#[tokio::test]
async fn idle_timeout_before_the_response_head() {
    // Accepts, reads, never answers.
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (_s, _) = l.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let rec = send_to(format!("http://{addr}"), |c| {
        c.idle_timeout = Duration::from_millis(200)
    })
    .await;
    assert_failed(&rec, ErrorClass::TimeoutIdle);
}

#[tokio::test]
async fn cancel_mid_stream_is_cancelled() {
    let url = serve(case(200, &[(0, TOK), (5000, TOK)], ReplayEnd::Close)).await;
    let client = Client::new(ClientConfig {
        base_url: url,
        model: "m".into(),
        ..Default::default()
    })
    .unwrap();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let input = hi(None);
    let rec = client.send(&input, RequestMeta::default(), &cancel).await;
    assert_failed(&rec, ErrorClass::Cancelled);
    assert_eq!(rec.chunks.len(), 1);
}

#[tokio::test]
async fn missing_final_blank_line_loses_no_token_and_usage_counts() {
    let last = "data: {\"choices\":[{\"text\":\"y\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}";
    let url = serve(case(200, &[(0, TOK), (0, last)], ReplayEnd::Close)).await;
    let rec = send_to(url, |_| {}).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.output_text, "xy");
    assert_eq!(rec.completion_tokens, 2);
    assert_eq!(rec.prompt_tokens, 3);
    assert_eq!(rec.prompt_tokens_client, 1);
}

#[tokio::test]
async fn non_streaming_json_response_is_understood() {
    let mut c = case(
        200,
        &[(0, "{\"choices\":[{\"message\":{\"content\":\"hello\"}}],\"usage\":{\"completion_tokens\":1}}")],
        ReplayEnd::Close,
    );
    c.headers = vec![("Content-Type".into(), "application/json".into())];
    let url = serve(c).await;
    let rec = send_to(url, |c| c.backend = Backend::OpenAiChat).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.output_text, "hello");
    assert_eq!(rec.completion_tokens_source, TokenSource::Server);
}

#[tokio::test]
async fn keep_alive_reuses_one_connection() {
    let (client, accepted) = one_token_server().await;
    let input = hi(None);
    for i in 0..5 {
        let rec = client
            .send(&input, RequestMeta::default(), &CancellationToken::new())
            .await;
        assert!(rec.success, "{rec:#?}");
        assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
        if i == 0 {
            // Probation: a new pool reuses a connection only after it stayed quiet this long
            // after its response; from then on at once.
            tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50))
                .await;
        }
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 1);
}

const TOK_Y: &str = "data: {\"choices\":[{\"index\":0,\"text\":\"y\"}]}\n\n";

/// Whatever the Content-Type says (RFC 9110: case-insensitive, parameters allowed, or a JSON
/// label from a gateway), a body that starts with an SSE field or comment is an event stream;
/// a JSON body under an event-stream label is still understood.
#[tokio::test]
async fn content_type_variants_and_sniffed_event_streams() {
    let labels: &[Option<&str>] = &[
        Some("text/event-stream; charset=utf-8"),
        Some("Text/Event-Stream"),
        Some(" TEXT/EVENT-STREAM ;charset=UTF-8"),
        Some("application/json"),
        Some("application/json; charset=utf-8"),
        Some("text/plain"),
        Some("application/octet-stream"),
        None,
    ];
    let starts = [
        "",
        ": keep-alive\n\n",
        "event: message\n",
        "id: 1\n",
        "retry: 10\n",
        "\u{feff}",
        "\n\n",
        "\r\n: c\r\n\r\n",
    ];
    for label in labels {
        for start in starts {
            let mut c = case(
                200,
                &[(0, start), (0, TOK), (0, TOK_Y), (0, "data: [DONE]\n\n")],
                ReplayEnd::Close,
            );
            c.headers = label
                .map(|l| vec![("Content-Type".to_string(), l.to_string())])
                .unwrap_or_default();
            let rec = send_to(serve(c).await, |_| {}).await;
            assert!(rec.success, "{label:?} {start:?}: {rec:#?}");
            assert_eq!(rec.output_text, "xy", "{label:?} {start:?}");
            assert_eq!(rec.chunks.len(), 2, "{label:?} {start:?}");
            assert!(rec.anomalies.is_empty(), "{label:?} {start:?}");
        }
    }
    // A JSON body labelled as an event stream.
    let mut c = case(
        200,
        &[(
            0,
            "{\"choices\":[{\"text\":\"hello\"}],\"usage\":{\"completion_tokens\":1}}",
        )],
        ReplayEnd::Close,
    );
    c.headers = vec![("Content-Type".into(), "text/event-stream".into())];
    let rec = send_to(serve(c).await, |_| {}).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.output_text, "hello");
    // Trial 32 F4: an answer that is not a stream is a success, flagged, not silent.
    assert_eq!(
        rec.anomalies,
        vec![inferbench_core::anomaly::Anomaly::NotStreamed]
    );
    // A JSON-labelled body that is neither SSE nor JSON: malformed, with an excerpt.
    let mut c = case(200, &[(0, "<html>oops</html>")], ReplayEnd::Close);
    c.headers = vec![("Content-Type".into(), "application/json".into())];
    let rec = send_to(serve(c).await, |_| {}).await;
    assert_failed(&rec, ErrorClass::Malformed);
    assert!(rec.error.unwrap().contains("<html>oops"));
}

/// `[DONE]` decides the result: a server that then stalls or drops the connection changes
/// nothing, and the record ends at `[DONE]`.
#[tokio::test]
async fn done_ends_the_measurement_whatever_follows() {
    for end in [ReplayEnd::Stall(Duration::from_secs(5)), ReplayEnd::Abort] {
        let url = serve(case(
            200,
            &[(20, TOK), (20, TOK_Y), (20, "data: [DONE]\n\n")],
            end.clone(),
        ))
        .await;
        let t0 = Instant::now();
        let rec = send_to(url, |c| c.idle_timeout = Duration::from_secs(2)).await;
        assert!(rec.success, "{end:?}: {rec:#?}");
        assert_eq!(rec.output_text, "xy");
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "{end:?}: {:?}",
            t0.elapsed()
        );
        let end_ms = (rec.end_ns - rec.sent_ns) as f64 / 1e6;
        assert!((end_ms - 60.0).abs() <= 20.0, "{end:?}: end at {end_ms} ms");
    }
}

/// A tokenizer that panics loses nothing: the request succeeds with the chunk count.
#[tokio::test]
async fn panicking_tokenizer_keeps_the_record() {
    let url = serve(case(
        200,
        &[(0, TOK), (0, TOK_Y), (0, TOK), (0, "data: [DONE]\n\n")],
        ReplayEnd::Close,
    ))
    .await;
    let counter: std::sync::Arc<inferbench_client::TokenCounter> =
        std::sync::Arc::new(|_: &str| panic!("tokenizer exploded"));
    let rec = send_to(url, |c| c.token_counter = Some(counter)).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.output_text, "xyx");
    assert_eq!(rec.completion_tokens, 3);
    assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
}

/// What Python's json accepts is kept: surrogate halves in two chunks are joined, a lone half
/// becomes U+FFFD, NaN and duplicate keys do not fail the chunk (the last key wins, so the
/// first `choices`' wrongly typed `finish_reason` is never read), usage counts that are no
/// integer literal (`9.0`, `-1`) are `usage_invalid` and not taken (issue 39's typed checks:
/// the completion count is the 8 token-bearing chunks), content parts are split into content
/// and reasoning.
#[tokio::test]
async fn lenient_chunks_over_http() {
    let chunks = [
        (0, "data: {\"choices\":[{\"text\":\"hi \"}]}\n\n"),
        (0, "data: {\"choices\":[{\"text\":\"\\ud83d\"}]}\n\n"),
        (0, "data: {\"choices\":[{\"text\":\"\\ude00\"}]}\n\n"),
        (0, "data: {\"choices\":[{\"text\":\"\\ude00|\"}]}\n\n"),
        (0, "data: {\"choices\":[{\"text\":\"a\\ud800b\",\"logprobs\":{\"x\":-Infinity}}]}\n\n"),
        (0, "data: {\"choices\":[{\"text\":\"c\",\"finish_reason\":7}],\"choices\":[{\"text\":\"d\"}]}\n\n"),
        (0, "data: {\"choices\":[{\"text\":\"\\ud83d\"}]}\n\n"),
        (0, "data: {\"choices\":[{\"text\":\"e\"}],\"usage\":{\"completion_tokens\":9.0,\"prompt_tokens\":-1}}\n\n"),
        (0, "data: [DONE]\n\n"),
    ];
    let rec = send_to(serve(case(200, &chunks, ReplayEnd::Close)).await, |_| {}).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.output_text, "hi \u{1F600}\u{FFFD}|a\u{FFFD}bd\u{FFFD}e");
    assert_eq!(rec.chunks.len(), 8);
    assert_eq!(rec.completion_tokens, 8);
    assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
    assert_eq!(rec.anomalies, vec![inferbench_core::Anomaly::UsageInvalid]);
    assert_eq!(rec.prompt_tokens, 1);

    let parts = [
        (10, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":[]}}]}\n\n"),
        (10, "data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"hmm\"}]}]}}]}\n\n"),
        (20, "data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"Hel\"},{\"type\":\"output_text\",\"text\":\"lo\"}]}}]}\n\n"),
        (0, "data: {\"choices\":[{\"delta\":{\"content\":{\"type\":\"text\",\"text\":\"!\"},\"reasoning_content\":[{\"type\":\"text\",\"text\":\"r\"}]}}]}\n\n"),
        (0, "data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}}]}}]}\n\n"),
        (0, "data: [DONE]\n\n"),
    ];
    let url = serve(case(200, &parts, ReplayEnd::Close)).await;
    let rec = send_to(url, |c| c.backend = Backend::OpenAiChat).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.output_text, "Hello!");
    let ch: Vec<_> = rec.chunks.iter().map(|c| c.channel).collect();
    use inferbench_core::Channel;
    assert_eq!(
        ch,
        vec![Channel::Reasoning, Channel::Content, Channel::Content]
    );
    let (ttft, ttfo) = (rec.ttft_ms().unwrap(), rec.ttfo_ms().unwrap());
    assert!(
        (ttft - 20.0).abs() <= 20.0 && (ttfo - 40.0).abs() <= 20.0,
        "{ttft} {ttfo}"
    );
}

/// A compression we cannot decode (we asked for none) is malformed, not a silent failure.
#[tokio::test]
async fn undecodable_content_encoding_is_malformed() {
    let mut c = case(200, &[(0, TOK)], ReplayEnd::Close);
    c.headers.push(("Content-Encoding".into(), "br".into()));
    let rec = send_to(serve(c).await, |_| {}).await;
    assert_failed(&rec, ErrorClass::Malformed);
    assert!(rec.error.unwrap().contains("br"));
    // gzip declared but the bytes are not gzip.
    let mut c = case(200, &[(0, TOK)], ReplayEnd::Close);
    c.headers.push(("Content-Encoding".into(), "gzip".into()));
    let rec = send_to(serve(c).await, |_| {}).await;
    assert_failed(&rec, ErrorClass::Malformed);
}

/// A new pool does not reuse a connection at once (probation, see `pool`): two immediate
/// requests use two connections; after a quiet period one connection serves the rest.
#[tokio::test]
async fn probation_then_reuse() {
    let (client, accepted) = one_token_server().await;
    let input = hi(None);
    let cancel = CancellationToken::new();
    for _ in 0..2 {
        sent_ok(&client, &input, &cancel).await;
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 2);
    tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50)).await;
    for _ in 0..6 {
        sent_ok(&client, &input, &cancel).await;
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 2);
}

/// `Client::preconnect` opens the connections a closed loop is about to need before its clock
/// starts: on a new pool (probation) the next requests take them at once, one each, and open
/// none of their own; a second call with as many held opens nothing.
#[tokio::test]
async fn preconnected_connections_serve_the_first_requests() {
    let (client, accepted) = one_token_server().await;
    assert_eq!(client.preconnect(3).await, 3);
    assert_eq!(client.preconnect(3).await, 0);
    let input = hi(None);
    let cancel = CancellationToken::new();
    let sends = (0..3).map(|_| client.send(&input, RequestMeta::default(), &cancel));
    for rec in futures_util::future::join_all(sends).await {
        assert!(rec.success, "{rec:#?}");
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 3);
    // Nothing listening: opens none, returns at once.
    assert_eq!(client_at("http://127.0.0.1:9").preconnect(4).await, 0);
}

/// `Client::keep_spares` keeps pre-opened connections ready while the pool is on probation,
/// replacing each one a request takes, and ends once the pool is trusted: requests of the
/// probation never connect themselves (issue 14: connecting inside the measurement cost a
/// saturated client a run-queue round per request).
#[tokio::test]
async fn spares_replace_what_probation_takes_and_stop_once_trusted() {
    use std::sync::atomic::Ordering::Relaxed;
    let (client, accepted) = one_token_server().await;
    let spares = tokio::spawn({
        let c = client.clone();
        async move { c.keep_spares(2).await }
    });
    let wait_for = |n: u64| {
        let accepted = accepted.clone();
        async move {
            for _ in 0..200 {
                if accepted.load(Relaxed) == n {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            panic!("{} connections, not {n}", accepted.load(Relaxed));
        }
    };
    let input = hi(None);
    let cancel = CancellationToken::new();
    // None before a response kept its connection open (a server closing after each response
    // would never use one).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(accepted.load(Relaxed), 0);
    sent_ok(&client, &input, &cancel).await;
    wait_for(3).await;
    // On probation: each request takes a spare, and a new spare replaces it.
    for n in [4, 5] {
        let rec = client.send(&input, RequestMeta::default(), &cancel).await;
        assert!(rec.success, "{rec:#?}");
        wait_for(n).await;
    }
    // Quiet for the probation's time: the next request reuses the oldest idle connection, the
    // pool is trusted and the spares stop (no further connection).
    tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(50)).await;
    sent_ok(&client, &input, &cancel).await;
    tokio::time::timeout(Duration::from_secs(2), spares)
        .await
        .expect("keep_spares ended once trusted")
        .unwrap();
    for _ in 0..3 {
        sent_ok(&client, &input, &cancel).await;
    }
    assert_eq!(accepted.load(Relaxed), 5);
}

/// `Client::await_trust` (bench, between warmup and profile): after one response, it returns
/// once that connection stayed quiet for the probation's time, and the next requests reuse it
/// at once; on a pool with nothing idle it returns at once.
#[tokio::test]
async fn await_trust_lets_the_next_requests_reuse_at_once() {
    use std::sync::atomic::Ordering::Relaxed;
    let (client, accepted) = one_token_server().await;
    let t0 = Instant::now();
    client.await_trust().await;
    assert!(t0.elapsed() < Duration::from_millis(100));
    let input = hi(None);
    let cancel = CancellationToken::new();
    sent_ok(&client, &input, &cancel).await;
    let t0 = Instant::now();
    client.await_trust().await;
    let waited = t0.elapsed();
    assert!(
        waited >= inferbench_client::http::TRUST_QUIET - Duration::from_millis(20)
            && waited < inferbench_client::http::TRUST_QUIET + Duration::from_millis(300),
        "{waited:?}"
    );
    for _ in 0..4 {
        sent_ok(&client, &input, &cancel).await;
    }
    assert_eq!(accepted.load(Relaxed), 1);
}

/// Issue 39 §2: on probation (nothing quiet for 200 ms yet) every request wants a fresh
/// connection and the ones it leaves idle pile up (up to 1,025 sockets at 150 streams); a
/// client limited to `n` streams holds at most `n` + `CONNECTION_MARGIN` open, closing its
/// newest idle connection to make room, and the oldest idle one is still reused (and trusted)
/// once quiet.
#[tokio::test]
async fn a_limited_client_holds_its_concurrency_and_the_margin() {
    use inferbench_client::pool::{CONNECTION_MARGIN, REUSE_QUIET};
    use std::sync::atomic::Ordering::Relaxed;
    let (client, accepted) = one_token_server().await;
    client.limit_connections(2);
    let cap = 2 + CONNECTION_MARGIN;
    let input = hi(None);
    let cancel = CancellationToken::new();
    let mut most = 0;
    for _ in 0..2 * cap {
        sent_ok(&client, &input, &cancel).await;
        most = most.max(client.open_connections());
    }
    assert_eq!(most, cap);
    assert_eq!(client.open_connections(), cap);
    // Every request of the probation connected afresh (40 accepted), none kept beyond 18.
    assert_eq!(accepted.load(Relaxed), 2 * cap as u64);
    // Spares are opened only below the limit: none here.
    assert_eq!(client.preconnect(cap + 5).await, 0);
    // The oldest idle connection, kept, becomes quiet and is reused: no new connection.
    tokio::time::sleep(REUSE_QUIET + Duration::from_millis(50)).await;
    sent_ok(&client, &input, &cancel).await;
    sent_ok(&client, &input, &cancel).await;
    assert_eq!(accepted.load(Relaxed), 2 * cap as u64);
    assert_eq!(client.open_connections(), cap);
}
