//! The handed cases of `shared/cases/sse/` (recorded responses that broke peer clients), each
//! served byte for byte with its recorded pauses by an in-process replay server (the timing
//! test lives alone in this binary so no CPU-heavy test runs beside it; the every-byte re-split
//! is in `cases_split.rs`). Expectations come from each
//! case's `expect` object; the same client passes all of them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use inferbench_client::{
    Backend, CancellationToken, Client, ClientConfig, RequestInput, RequestMeta, RunClock,
};
use inferbench_core::{ErrorClass, RequestRecord, TokenSource};
use inferbench_testutil::replay::{load_handed_cases, spawn_replay, ReplayCase};
use serde_json::Value;

/// Allowed deviation of TTFT/TTFO/E2EL from the recorded pauses, in ms (cases/README.md).
const TOL_MS: f64 = 20.0;

fn chars_counter() -> Arc<inferbench_client::TokenCounter> {
    // Stand-in tokenizer for cases without usage: whitespace-separated words.
    Arc::new(|s: &str| s.split_whitespace().count())
}

fn client_for(case: &Value, base_url: String) -> Client {
    let backend = Backend::parse(case["backend"].as_str().unwrap_or("openai")).unwrap();
    let mut cfg = ClientConfig {
        base_url,
        endpoint: case["endpoint"].as_str().map(str::to_string),
        backend,
        model: "replay-model".into(),
        token_counter: Some(chars_counter()),
        ..Default::default()
    };
    let flags: Vec<String> = case["client_flags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    for w in flags.windows(2) {
        match w[0].as_str() {
            "--idle-timeout" => cfg.idle_timeout = Duration::from_secs_f64(w[1].parse().unwrap()),
            "--request-timeout" => {
                cfg.request_timeout = Some(Duration::from_secs_f64(w[1].parse().unwrap()))
            }
            _ => {}
        }
    }
    Client::with_clock(cfg, RunClock::start()).unwrap()
}

/// Asserts every `expect` key of cases/README.md except `anomalies` (the anomaly codes are
/// asserted by the tests of the record's `anomalies` field) and `note`.
fn check(name: &str, exp: &Value, rec: &RequestRecord, wall: Duration) {
    // Built only when an assertion fails: formatting a record with 1 MB of output text takes
    // long enough in a debug build to stall this worker thread and the other cases' clocks.
    let ctx = || format!("case {name}: record {rec:#?}");
    assert_eq!(rec.success, exp["success"].as_bool().unwrap(), "{}", ctx());
    if let Some(class) = exp["error_class"].as_str() {
        assert_eq!(
            rec.error_class.map(ErrorClass::as_str),
            Some(class),
            "{}",
            ctx()
        );
        assert!(
            rec.error.as_deref().is_some_and(|m| !m.is_empty()),
            "{}",
            ctx()
        );
    } else {
        assert_eq!(rec.error_class, None, "{}", ctx());
    }
    if let Some(s) = exp["http_status"].as_u64() {
        assert_eq!(rec.http_status, Some(s as u16), "{}", ctx());
    }
    for what in ["ttft_ms", "ttfo_ms", "e2el_ms", "tpot_ms"] {
        if exp[what].as_f64().is_some() {
            assert!(timing(rec, what).is_some(), "{what} missing; {}", ctx());
        }
    }
    if let Some(n) = exp["completion_tokens"].as_u64() {
        assert_eq!(u64::from(rec.completion_tokens), n, "{}", ctx());
    }
    if let Some(src) = exp["completion_tokens_source"].as_str() {
        let want = if src == "server" {
            TokenSource::Server
        } else {
            TokenSource::Tokenizer
        };
        assert_eq!(rec.completion_tokens_source, want, "{}", ctx());
    }
    if let Some(t) = exp["output_text"].as_str() {
        assert_eq!(rec.output_text, t, "{}", ctx());
    }
    if let Some(n) = exp["itl_count"].as_u64() {
        assert_eq!(rec.itls_ms().count() as u64, n, "{}", ctx());
    }
    if let Some(s) = exp["max_wall_s"].as_f64() {
        assert!(wall.as_secs_f64() <= s, "took {wall:?} > {s} s; {}", ctx());
    }
}

/// A record's timing `what` (`ttft_ms`, `ttfo_ms`, `e2el_ms`, `tpot_ms`), ms.
fn timing(rec: &RequestRecord, what: &str) -> Option<f64> {
    match what {
        "ttft_ms" => rec.ttft_ms(),
        "ttfo_ms" => rec.ttfo_ms(),
        "e2el_ms" => rec.e2el_ms(),
        _ => rec.tpot_ms(),
    }
}

/// The first expected timing that `rec` misses by more than [`TOL_MS`], described; `None`
/// when all are within it. Kept apart from [`check`]: on a loaded machine (trial 13: a build
/// beside the test command) a whole batch of replays can be late, which says nothing of the
/// client, so a miss is retried (see [`TIMING_TRIES`]) while every other assertion is not.
fn timing_miss(name: &str, exp: &Value, rec: &RequestRecord) -> Option<String> {
    ["ttft_ms", "ttfo_ms", "e2el_ms", "tpot_ms"]
        .into_iter()
        .find_map(|what| {
            let w = exp[what].as_f64()?;
            let g = timing(rec, what)?;
            ((g - w).abs() > TOL_MS)
                .then(|| format!("{what} = {g:.1} ms, want {w} ± {TOL_MS}; case {name}"))
        })
}

/// Sends of one case whose timings may miss before the test fails (each miss re-sends).
const TIMING_TRIES: usize = 3;

/// All handed cases over real sockets, concurrently (the slowest, a 2 s idle timeout, bounds
/// the test's wall time). Each request is sent twice on one client to also exercise
/// keep-alive reuse after a finished stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handed_cases_over_http() {
    let cases = load_handed_cases();
    let mut tasks = Vec::new();
    for (name, case) in cases {
        tasks.push(tokio::spawn(async move {
            let replay = ReplayCase::from_json(&case).unwrap();
            let addr = spawn_replay(replay).await.unwrap();
            let client = client_for(&case, format!("http://{addr}"));
            let cancel = CancellationToken::new();
            let input = RequestInput {
                text: "Hello",
                messages: None,
                prompt_tokens: 1,
                max_tokens: Some(16),
            };
            let rounds = if case["expect"]["success"].as_bool() == Some(true) {
                2
            } else {
                1
            };
            for round in 0..rounds {
                let name = format!("{name} (round {round})");
                let mut miss = None;
                for _ in 0..TIMING_TRIES {
                    let t0 = Instant::now();
                    let meta = RequestMeta {
                        request_id: round,
                        scheduled_ns: client.clock().now_ns(),
                        ..Default::default()
                    };
                    let rec = client.send(&input, meta, &cancel).await;
                    check(&name, &case["expect"], &rec, t0.elapsed());
                    miss = timing_miss(&name, &case["expect"], &rec);
                    if miss.is_none() {
                        break;
                    }
                }
                if let Some(m) = miss {
                    panic!("timings off in {TIMING_TRIES} sends; last: {m}");
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}
