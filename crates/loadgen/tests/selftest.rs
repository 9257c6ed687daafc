//! `selftest::measure` drives `run_bench` (issue 14: the selftest must take bench's path):
//! against the sim's instant mode, whose `/stats` counts tokens as sse-instant does, every
//! token the server sent is counted by usage and by chunks, nothing fails, and bench's own
//! self-check figures (held concurrency, TTFT, ITL) come through.

use std::time::Duration;

use inferbench_loadgen::selftest::{measure, render, SelftestOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selftest_measures_through_the_bench_path() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        mode: inferbench_sim::Mode::Instant,
        served_model_name: Some("selftest".into()),
        ..Default::default()
    })
    .expect("sim starts");
    let opts = SelftestOptions {
        base_url: sim.base_url(),
        tokens_per_request: 16,
        concurrency: vec![4],
        duration: Duration::from_millis(500),
        ..Default::default()
    };
    let p = measure(&opts, 4, &inferbench_client::CancellationToken::new())
        .await
        .expect("measured");
    assert_eq!(p.concurrency, 4);
    assert!(p.requests > 0 && p.failed == 0, "{p:?}");
    assert_eq!(p.usage_tokens, 16 * p.requests, "{p:?}");
    assert_eq!(p.chunk_tokens, p.usage_tokens, "{p:?}");
    assert_eq!(p.server_tokens, Some(p.usage_tokens), "{p:?}");
    assert!(p.held_ratio > 0.0 && p.held_ratio <= 1.0 + 1e-9, "{p:?}");
    assert!(p.ttft_mean_ms.is_some() && p.itl_mean_ms.is_some(), "{p:?}");
    let table = render(&[p]);
    assert!(table.starts_with("conc  requests  failed"), "{table}");
    assert!(table.contains("TTFT ms  ITL ms  client_bound"), "{table}");
    sim.shutdown();
}
