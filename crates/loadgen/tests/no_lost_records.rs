//! A request always ends as success or a classified error and the run's counts add up, even
//! when the tokenizer fallback panics (issue 11: the run used to report 0 ok / 0 failed) or
//! the output is degenerate: 1M repeated characters without usage, beside normal streams.

mod common;

use common::prompts_of;
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::TokenCounter;
use inferbench_core::{Phase, TokenSource};
use inferbench_loadgen::{
    run_bench, BenchOptions, CancellationToken, PreparedPrompts, ProgressMode,
};
use inferbench_testutil::replay::{spawn_replay, ReplayCase, ReplayEnd};

fn case(text: &str) -> ReplayCase {
    case_in(text, 1)
}

/// `n` events of `text`, then ` end` with its finish reason and `[DONE]`, in one write.
fn case_in(text: &str, n: usize) -> ReplayCase {
    let event = format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{text}\"}}]}}\n\n");
    let body = format!(
        "{}data: {{\"choices\":[{{\"index\":0,\"text\":\" end\",\"finish_reason\":\"length\"}}]}}\n\ndata: [DONE]\n\n",
        event.repeat(n)
    );
    ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks: vec![(Duration::from_millis(5), body.into_bytes())],
        end: ReplayEnd::Close,
    }
}

fn opts(base_url: String, counter: Arc<TokenCounter>, n: usize) -> BenchOptions {
    let prepared = PreparedPrompts {
        counter: Some(counter),
        ..prompts_of((0..n).map(|i| format!("prompt {i}")), 2, 4)
    };
    BenchOptions {
        base_url,
        model: "replay-model".into(),
        progress: ProgressMode::Off,
        prepared: Some(Arc::new(prepared)),
        num_prompts: Some(n as u64),
        num_warmups: Some(0),
        max_concurrency: Some(4),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_tokenizer_loses_no_record() {
    let addr = spawn_replay(case("x")).await.unwrap();
    let counter: Arc<TokenCounter> = Arc::new(|_: &str| panic!("tokenizer exploded"));
    let out = run_bench(
        opts(format!("http://{addr}"), counter, 12),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let profile: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    assert_eq!(profile.len(), 12);
    assert!(profile.iter().all(|r| r.success), "{profile:#?}");
    assert!(profile
        .iter()
        .all(|r| r.completion_tokens == 2 && r.completion_tokens_source == TokenSource::Tokenizer));
    assert_eq!(out.summary.completed, 12);
    assert_eq!(out.summary.inferbench.failed, 0);
    assert_eq!(out.end, inferbench_loadgen::RunEnd::Passed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn degenerate_output_is_counted_and_counts_add_up() {
    // 1 MB of text in 10 events of 100 kB (as the handed case degenerate-output-without-usage:
    // one event is held whole, up to 100 KiB + the kept text budget), for max_tokens 4.
    let addr = spawn_replay(case_in(&"x".repeat(100_000), 10))
        .await
        .unwrap();
    let tok = inferbench_workload::Tokenizer::load("o200k_base").unwrap();
    let t2 = tok.clone();
    let counter: Arc<TokenCounter> = Arc::new(move |s: &str| t2.count(s));
    // Whole records (text included) stay in memory only with --save-detailed.
    let out = run_bench(
        BenchOptions {
            save_detailed: true,
            ..opts(format!("http://{addr}"), counter.clone(), 6)
        },
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let profile: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    assert_eq!(profile.len(), 6);
    // The whole output's count; the record keeps 32 × 4 + 1024 bytes of text and the
    // tokenizer counts the rest chunk by chunk as it streams: at most one token per chunk
    // boundary apart from the whole text's count (issue 39: the documented rounding).
    let whole = format!("{} end", "x".repeat(1_000_000));
    let want = inferbench_client::count_tokens(&*counter, &whole).unwrap() as i64;
    for r in &profile {
        assert!(r.success, "{:?}", r.error);
        assert_eq!(r.output_text.len(), 32 * 4 + 1024);
        assert_eq!(r.text_bytes_not_kept, 1_000_004 - (32 * 4 + 1024));
        assert_eq!(r.completion_tokens_source, TokenSource::Tokenizer);
        let got = i64::from(r.completion_tokens);
        assert!(
            (got - want).abs() <= 11,
            "{got} tokens, the whole text's {want}"
        );
    }
    assert_eq!(out.summary.completed, 6);
    assert_eq!(out.summary.inferbench.failed, 0);
}
