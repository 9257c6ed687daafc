//! Recorded responses of issue 39's second trial (`tests/cases/sse/`, the format of
//! `shared/cases/sse/`), each served byte for byte and judged by its `expect`: `success`,
//! `error_class`, `error` (the exact message), `completion_tokens` and its source,
//! `completion_tokens_client`, `prompt_tokens`, `output_text`, `itl_count`, `finish_reason`
//! and the exact `anomalies` list. The client's tokenizer counts whitespace-separated words;
//! max_tokens is 100, the prompt 1 token by the client's count.

mod common;

use common::send_hi;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::{Backend, Client, ClientConfig};
use inferbench_testutil::replay::{load_case_dir, spawn_replay, ReplayCase};
use serde_json::Value;

fn load() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases/sse");
    let out = load_case_dir(&dir);
    assert_eq!(out.len(), 16, "the recorded cases in {}", dir.display());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_strictness_cases() {
    for (name, case) in load() {
        let url = format!(
            "http://{}",
            spawn_replay(ReplayCase::from_json(&case).unwrap())
                .await
                .unwrap()
        );
        let client = Client::new(ClientConfig {
            base_url: url,
            endpoint: case["endpoint"].as_str().map(str::to_string),
            backend: Backend::parse(case["backend"].as_str().unwrap()).unwrap(),
            model: "replay-model".into(),
            idle_timeout: Duration::from_secs(2),
            token_counter: Some(Arc::new(|s: &str| s.split_whitespace().count())),
            ..Default::default()
        })
        .unwrap();
        let rec = send_hi(&client, Some(100)).await;
        let exp = &case["expect"];
        let ctx = format!("case {name}: {rec:#?}");
        assert_eq!(rec.success, exp["success"].as_bool().unwrap(), "{ctx}");
        assert_eq!(
            rec.error_class.map(|c| c.as_str()),
            exp["error_class"].as_str(),
            "{ctx}"
        );
        if let Some(e) = exp.get("error") {
            assert_eq!(rec.error.as_deref(), e.as_str(), "{ctx}");
        }
        let anomalies: Vec<String> = rec.anomalies.iter().map(|a| a.to_string()).collect();
        let want: Vec<String> = (exp["anomalies"].as_array().into_iter().flatten())
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(anomalies, want, "{ctx}");
        if let Some(n) = exp["completion_tokens"].as_u64() {
            assert_eq!(u64::from(rec.completion_tokens), n, "{ctx}");
        }
        if let Some(s) = exp["completion_tokens_source"].as_str() {
            let got = serde_json::to_value(rec.completion_tokens_source).unwrap();
            assert_eq!(got.as_str(), Some(s), "{ctx}");
        }
        let client_count = exp["completion_tokens_client"].as_u64();
        assert_eq!(
            rec.completion_tokens_client.map(u64::from),
            client_count,
            "{ctx}"
        );
        if let Some(n) = exp["prompt_tokens"].as_u64() {
            assert_eq!(u64::from(rec.prompt_tokens), n, "{ctx}");
        }
        if let Some(t) = exp["output_text"].as_str() {
            assert_eq!(rec.output_text, t, "{ctx}");
        }
        if let Some(n) = exp["itl_count"].as_u64() {
            assert_eq!(rec.chunks.len() as u64, n + 1, "{ctx}");
        }
        if let Some(f) = exp.get("finish_reason") {
            assert_eq!(rec.finish_reason.as_deref(), f.as_str(), "{ctx}");
        }
    }
}
