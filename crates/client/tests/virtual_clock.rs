//! Issue 40 §4: the client's timeouts on a virtual clock. The client reads time through its
//! run clock's [`ClockSource`]; on [`ClockSource::Tokio`] under a paused runtime the idle
//! (`--idle-timeout`) and total (`--request-timeout`) deadlines fire at exactly their instants,
//! in no wall time. The replay server runs on the same runtime, so its pauses are virtual too.
//! Kernel receive stamps are off (they are real wall times, not the virtual clock's).

mod common;

use common::send_hi;
use std::time::Duration;

use inferbench_client::{Client, ClientConfig, ClockSource, RunClock};
use inferbench_core::{ErrorClass, RequestRecord};
use inferbench_testutil::replay::{spawn_replay, ReplayCase, ReplayEnd};

const MS: u64 = 1_000_000;

fn tok(t: &str) -> Vec<u8> {
    format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n").into_bytes()
}

/// An event stream of one token per `(pause, text)`, then `[DONE]`.
fn stream(tokens: &[(u64, &str)]) -> ReplayCase {
    let mut chunks: Vec<(Duration, Vec<u8>)> = tokens
        .iter()
        .map(|(ms, t)| (Duration::from_millis(*ms), tok(t)))
        .collect();
    chunks.push((Duration::ZERO, b"data: [DONE]\n\n".to_vec()));
    ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks,
        end: ReplayEnd::Close,
    }
}

/// One request to `case` on a virtual run clock started now, with these timeouts.
async fn send(case: ReplayCase, idle: Duration, total: Option<Duration>) -> RequestRecord {
    let addr = spawn_replay(case).await.unwrap();
    let client = Client::with_clock(
        ClientConfig {
            base_url: format!("http://{addr}"),
            model: "m".into(),
            idle_timeout: idle,
            request_timeout: total,
            rx_timestamps: false,
            ..Default::default()
        },
        RunClock::start_on(ClockSource::Tokio),
    )
    .unwrap();
    send_hi(&client, Some(8)).await
}

fn chunk_times(r: &RequestRecord) -> Vec<u64> {
    r.chunks.iter().map(|c| c.t_ns).collect()
}

/// The idle deadline is the last byte + `--idle-timeout`, exactly: tokens at 300 ms and
/// 700 ms, then 10 s of silence under a 2 s idle limit → `timeout_idle` at 2.7 s.
#[tokio::test(start_paused = true)]
async fn idle_timeout_fires_exactly_idle_after_the_last_byte() {
    let case = stream(&[(300, "a"), (400, "b"), (10_000, "c")]);
    let r = send(case, Duration::from_secs(2), None).await;
    assert!(!r.success);
    assert_eq!(r.error_class, Some(ErrorClass::TimeoutIdle), "{r:#?}");
    assert_eq!(
        r.error.as_deref(),
        Some("no byte for 2.000 s (--idle-timeout)")
    );
    assert_eq!(r.sent_ns, 0);
    assert_eq!(r.first_byte_ns, Some(0), "the head comes at once");
    assert_eq!(chunk_times(&r), vec![300 * MS, 700 * MS]);
    assert_eq!(r.end_ns, 2_700 * MS);
}

/// The total deadline is the send + `--request-timeout`, exactly, however lively the stream:
/// a token every 500 ms under a 1.2 s limit → `timeout_total` at 1.2 s with two tokens.
#[tokio::test(start_paused = true)]
async fn total_timeout_fires_exactly_at_send_plus_the_limit() {
    let case = stream(&[(500, "a"), (500, "b"), (500, "c"), (500, "d")]);
    let r = send(
        case,
        Duration::from_secs(2),
        Some(Duration::from_millis(1200)),
    )
    .await;
    assert!(!r.success);
    assert_eq!(r.error_class, Some(ErrorClass::TimeoutTotal), "{r:#?}");
    assert_eq!(
        r.error.as_deref(),
        Some("request not finished 1.200 s after send (--request-timeout)")
    );
    assert_eq!(chunk_times(&r), vec![500 * MS, 1_000 * MS]);
    assert_eq!(r.end_ns, 1_200 * MS);
}

/// Under both limits the first to expire wins: the idle one (0.3 s + 0.5 s) before the total
/// one (1 s).
#[tokio::test(start_paused = true)]
async fn the_earlier_deadline_wins() {
    let case = stream(&[(300, "a"), (10_000, "b")]);
    let r = send(
        case,
        Duration::from_millis(500),
        Some(Duration::from_secs(1)),
    )
    .await;
    assert_eq!(r.error_class, Some(ErrorClass::TimeoutIdle), "{r:#?}");
    assert_eq!(r.end_ns, 800 * MS);
    let case = stream(&[(300, "a"), (400, "b"), (10_000, "c")]);
    let r = send(
        case,
        Duration::from_millis(500),
        Some(Duration::from_secs(1)),
    )
    .await;
    assert_eq!(r.error_class, Some(ErrorClass::TimeoutTotal), "{r:#?}");
    assert_eq!(r.end_ns, 1_000 * MS);
}

/// A server that accepts and never answers: the idle limit runs from the send, so the request
/// fails `timeout_idle` exactly `--idle-timeout` after it, before any head.
#[tokio::test(start_paused = true)]
async fn no_head_times_out_idle_from_the_send() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut s, _)) = listener.accept().await {
            inferbench_testutil::replay::read_request(&mut s).await;
            held.push(s);
        }
    });
    let client = Client::with_clock(
        ClientConfig {
            base_url: format!("http://{addr}"),
            model: "m".into(),
            idle_timeout: Duration::from_secs(3),
            rx_timestamps: false,
            ..Default::default()
        },
        RunClock::start_on(ClockSource::Tokio),
    )
    .unwrap();
    let r = send_hi(&client, Some(8)).await;
    assert_eq!(r.error_class, Some(ErrorClass::TimeoutIdle), "{r:#?}");
    assert_eq!(
        r.error.as_deref(),
        Some("no response head after 3.000 s (--idle-timeout)")
    );
    assert_eq!(r.first_byte_ns, None);
    assert_eq!(r.end_ns, 3_000 * MS);
}
