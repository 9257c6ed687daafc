//! Anomaly codes of the handed `shared/cases/sse/` cases over real sockets: each case's
//! `expect.anomalies` (none when absent) must be exactly the record's `anomalies`, with the
//! request's `max_tokens` from the case's `--random-output-len` client flag (default 16).
//! Cases whose request does not succeed with this client are skipped here (`cases.rs` judges
//! them); `usage-exceeds-max-tokens` must succeed.

use inferbench_client::{
    kept, Backend, CancellationToken, Client, ClientConfig, RequestInput, RequestMeta, RunClock,
};
use inferbench_core::Anomaly;
use inferbench_testutil::replay::{load_handed_cases, spawn_replay, ReplayCase};
use serde_json::Value;

fn flag(case: &Value, name: &str) -> Option<String> {
    let flags: Vec<&str> = case["client_flags"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    flags
        .windows(2)
        .find(|w| w[0] == name)
        .map(|w| w[1].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handed_cases_carry_exactly_their_anomalies() {
    let cases = load_handed_cases();
    if cases.is_empty() {
        return; // the shared folder is absent (SKIP printed)
    }
    let mut checked = Vec::new();
    for (_, case) in cases {
        let name = case["name"].as_str().unwrap_or("?").to_string();
        let want: Vec<Anomaly> = serde_json::from_value(
            case["expect"]
                .get("anomalies")
                .cloned()
                .unwrap_or(Value::Array(vec![])),
        )
        .unwrap_or_else(|e| panic!("{name}: unknown anomaly code: {e}"));
        let max_tokens = flag(&case, "--random-output-len").map_or(16, |v| v.parse().unwrap());
        let addr = spawn_replay(ReplayCase::from_json(&case).unwrap())
            .await
            .unwrap();
        let mut cfg = ClientConfig {
            base_url: format!("http://{addr}"),
            endpoint: case["endpoint"].as_str().map(str::to_string),
            backend: Backend::parse(case["backend"].as_str().unwrap_or("openai")).unwrap(),
            model: "replay-model".into(),
            ignore_eos: flag(&case, "--ignore-eos").is_some(),
            ..Default::default()
        };
        if let Some(t) = flag(&case, "--idle-timeout") {
            cfg.idle_timeout = std::time::Duration::from_secs_f64(t.parse().unwrap());
        }
        let client = Client::with_clock(cfg, RunClock::start()).unwrap();
        let input = RequestInput {
            text: "Hello",
            messages: None,
            prompt_tokens: 8,
            max_tokens: Some(max_tokens),
        };
        let rec = client
            .send(&input, RequestMeta::default(), &CancellationToken::new())
            .await;
        if name == "usage-exceeds-max-tokens" {
            assert!(rec.success, "{rec:?}");
            assert_eq!(rec.completion_tokens, 19_503);
            assert_eq!(rec.max_tokens, Some(4));
        }
        if !rec.success {
            assert!(rec.anomalies.is_empty(), "{name}: {rec:?}");
            continue;
        }
        // A response past what the client keeps for its max_tokens (crate::kept: the chunk
        // entries or the text, counted whole) carries the client's own note besides the case's
        // codes (issue 39: degenerate-output-without-usage's 1 MB of text for max_tokens 16).
        let mut want = want;
        let text = kept::json_text_len(&rec.output_text) + rec.text_bytes_not_kept;
        if rec.chunk_count() as u64 > kept::kept_chunks(u64::from(max_tokens))
            || text > kept::kept_text_bytes(u64::from(max_tokens))
        {
            want.push(Anomaly::OutputNotKept);
            want.sort();
        }
        assert_eq!(rec.anomalies, want, "{name}: {rec:?}");
        checked.push(name);
    }
    assert!(
        checked.iter().any(|n| n == "usage-exceeds-max-tokens"),
        "{checked:?}"
    );
}
