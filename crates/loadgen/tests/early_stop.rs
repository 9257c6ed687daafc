//! Early stop within a point (issue 43, `sweep --adaptive`), end to end through `run_bench`
//! against the in-process `sim`: with a rule the profile ends once its metrics are known, and
//! the result says `adaptive: true` and the prompts it used; without one every planned prompt
//! is sent (InferenceX's fixed protocol: 10 × conc) and the result says nothing of it.

use std::sync::Arc;

use inferbench_core::Phase;
use inferbench_loadgen::early_stop::EarlyStop;
use inferbench_loadgen::{
    run_bench, BenchOptions, BenchPrompt, CancellationToken, PreparedPrompts, ProgressMode,
};

fn opts(base_url: String, early_stop: Option<EarlyStop>) -> BenchOptions {
    let prompts = (0..8)
        .map(|i| BenchPrompt {
            text: format!("prompt number {i}"),
            messages: None,
            prompt_tokens: 3,
            max_tokens: Some(8),
            conversation_id: None,
            turn: None,
            headers: Vec::new(),
        })
        .collect();
    BenchOptions {
        base_url,
        model: "m".into(),
        progress: ProgressMode::Off,
        num_warmups: Some(0),
        // 10 × 4 = 40 planned prompts.
        max_concurrency: Some(4),
        server_metrics: false,
        prepared: Some(Arc::new(PreparedPrompts {
            prompts,
            tokenizer_id: "test".into(),
            counter: None,
        })),
        early_stop,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_point_stops_once_its_metrics_are_known() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        ..Default::default()
    })
    .expect("sim starts");
    // A loose rule (50 %), checked from 12 completions every 4: known at the first check.
    let loose = EarlyStop {
        tolerance: 0.5,
        min_prompts: 12,
        check_every: 4,
    };
    let out = run_bench(opts(sim.base_url(), Some(loose)), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let x = &out.summary.inferbench;
    let sent = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .count() as u64;
    // Stopped at 12 completions; the up to 3 in flight then finish: nothing is cut.
    assert!((12..=15).contains(&sent), "{sent}");
    assert!(x.adaptive);
    assert_eq!(x.adaptive_tolerance, Some(0.5));
    assert_eq!(x.prompts_used, Some(sent));
    assert_eq!(out.summary.num_prompts, sent);
    assert_eq!(out.summary.completed, sent);
    assert_eq!(x.requests_not_sent, 0);
    assert_eq!(x.invalid_reason, None);
    assert!(
        out.notes.iter().any(|n| n.starts_with("adaptive: ")),
        "{:?}",
        out.notes
    );
    let json = serde_json::to_value(&out.summary).unwrap();
    assert_eq!(json["inferbench"]["adaptive"], true);
    assert_eq!(json["inferbench"]["prompts_used"], sent);

    // A rule never met (0.000001 %): every planned prompt, still marked adaptive.
    let tight = EarlyStop {
        tolerance: 1e-8,
        ..loose
    };
    let out = run_bench(opts(sim.base_url(), Some(tight)), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert_eq!(out.summary.completed, 40);
    assert_eq!(out.summary.inferbench.prompts_used, Some(40));
    assert!(out.summary.inferbench.adaptive);

    // No rule: the fixed protocol, and nothing said of it in the result.
    let out = run_bench(opts(sim.base_url(), None), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.summary.completed, 40);
    assert!(!out.summary.inferbench.adaptive);
    assert_eq!(out.summary.inferbench.prompts_used, None);
    let json = serde_json::to_value(&out.summary).unwrap();
    assert!(json["inferbench"].get("adaptive").is_none());
    assert!(json["inferbench"].get("prompts_used").is_none());
}
