//! Summary and InferenceX aggregate tests with hand-computed values.

use super::*;
use crate::record::{Channel, ChunkRecord, ErrorClass, Phase, TokenSource};
use serde_json::Value;

const MS: u64 = 1_000_000;

fn ok(id: u64, sent: u64, chunks: &[u64], tokens: u32, prompt: u32) -> RequestRecord {
    RequestRecord {
        request_id: id,
        scheduled_ns: 0,
        sent_ns: sent * MS,
        first_token_ns: Some(chunks[0] * MS),
        first_output_token_ns: Some(chunks[0] * MS),
        last_token_ns: Some(chunks[chunks.len() - 1] * MS),
        end_ns: (chunks[chunks.len() - 1] + 10) * MS,
        completion_tokens: tokens,
        prompt_tokens: prompt,
        prompt_tokens_client: prompt,
        success: true,
        output_text: format!("out{id}"),
        chunks: chunks
            .iter()
            .map(|c| ChunkRecord {
                t_ns: c * MS,
                channel: Channel::Content,
                tokens: None,
            })
            .collect(),
        ..Default::default()
    }
}

/// r0: sent 0, chunks 100,120,140,160 ms, 4 tokens, 1000 prompt tokens → TTFT 100, E2EL 160,
///     TPOT 20, ITL 20,20,20.
/// r1: sent 10, chunks 210,250, 5 tokens, 900 prompt → TTFT 200, E2EL 240, TPOT 10, ITL 40.
/// r2: sent 20, failed with HTTP 503 at 30 ms, 800 prompt tokens.
/// w: warmup (ignored). Records arrive out of order.
/// Window 0 → 260 ms (r1 ends at 250 + 10) → duration 0.26 s.
fn run() -> Vec<RequestRecord> {
    let r0 = ok(0, 0, &[100, 120, 140, 160], 4, 1000);
    let mut r1 = ok(1, 10, &[210, 250], 5, 900);
    r1.completion_tokens_source = TokenSource::Tokenizer;
    let r2 = RequestRecord {
        request_id: 2,
        sent_ns: 20 * MS,
        end_ns: 30 * MS,
        prompt_tokens: 800,
        prompt_tokens_client: 800,
        success: false,
        error_class: Some(ErrorClass::HttpStatus),
        error: Some("503 Service Unavailable".into()),
        http_status: Some(503),
        ..Default::default()
    };
    let mut w = ok(0, 0, &[1, 2], 2, 5);
    w.phase = Phase::Warmup;
    w.end_ns = 9_000 * MS;
    vec![r1, w, r2, r0]
}

fn ctx() -> SummaryContext {
    SummaryContext {
        model_id: "/models/dsr1".into(),
        num_prompts: 3,
        max_concurrency: Some(2),
        date: "20261130-074500".into(),
        benchmark_start_time_unix: Some(1_764_000_000.0),
        benchmark_end_time_unix: Some(1_764_000_000.26),
        goodput: GoodputSlo::parse(&["ttft:150"]).unwrap(),
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[track_caller]
fn assert_close(v: &Value, key: &str, want: f64) {
    let got = v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number: {}", v[key]));
    assert!(close(got, want), "{key}: got {got}, want {want}");
}

#[test]
fn vllm_fields_and_values() {
    let s = summarize(&run(), &ctx());
    let v = serde_json::to_value(&s).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "date",
        "backend",
        "model_id",
        "tokenizer_id",
        "best_of",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "benchmark_start_time_unix",
        "benchmark_end_time_unix",
        "completed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput:",
        "output_throughput",
        "total_token_throughput",
        "input_lens",
        "output_lens",
    ];
    let stats: Vec<String> = ["ttft", "tpot", "itl", "e2el"]
        .iter()
        .flat_map(|m| {
            ["mean", "median", "std", "p90", "p99", "p99.9"]
                .iter()
                .map(move |s| format!("{s}_{m}_ms"))
        })
        .collect();
    want.extend(stats.iter().map(String::as_str));
    want.push("inferbench");
    assert_eq!(keys, want);

    assert_eq!(v["request_rate"], "inf");
    assert_eq!(v["best_of"], 1);
    assert_eq!(v["max_concurrency"], 2);
    assert_eq!(v["completed"], 2);
    assert_eq!(v["total_input_tokens"], 1900);
    assert_eq!(v["total_output_tokens"], 9);
    assert_eq!(v["input_lens"], serde_json::json!([1000, 900, 800]));
    assert_eq!(v["output_lens"], serde_json::json!([4, 5, 0]));
    assert_close(&v, "duration", 0.26);
    assert_close(&v, "request_throughput", 2.0 / 0.26);
    assert_close(&v, "output_throughput", 9.0 / 0.26);
    assert_close(&v, "total_token_throughput", 1909.0 / 0.26);
    // goodput ttft ≤ 150 ms: only r0 → 1 / 0.26
    assert_close(&v, "request_goodput:", 1.0 / 0.26);

    // TTFT [100, 200]
    assert_close(&v, "mean_ttft_ms", 150.0);
    assert_close(&v, "median_ttft_ms", 150.0);
    assert_close(&v, "std_ttft_ms", 50.0);
    assert_close(&v, "p90_ttft_ms", 190.0);
    assert_close(&v, "p99_ttft_ms", 199.0);
    assert_close(&v, "p99.9_ttft_ms", 199.9);
    // TPOT [20, 10]
    assert_close(&v, "mean_tpot_ms", 15.0);
    assert_close(&v, "median_tpot_ms", 15.0);
    assert_close(&v, "std_tpot_ms", 5.0);
    assert_close(&v, "p90_tpot_ms", 19.0);
    assert_close(&v, "p99_tpot_ms", 19.9);
    assert_close(&v, "p99.9_tpot_ms", 19.99);
    // ITL [20, 20, 20, 40]: mean 25, median 20, std sqrt(75); p90 h = 2.7 → 34; p99 h = 2.97 → 39.4
    assert_close(&v, "mean_itl_ms", 25.0);
    assert_close(&v, "median_itl_ms", 20.0);
    assert_close(&v, "std_itl_ms", 75f64.sqrt());
    assert_close(&v, "p90_itl_ms", 34.0);
    assert_close(&v, "p99_itl_ms", 39.4);
    assert_close(&v, "p99.9_itl_ms", 39.94);
    // E2EL [160, 240]
    assert_close(&v, "mean_e2el_ms", 200.0);
    assert_close(&v, "std_e2el_ms", 40.0);
    assert_close(&v, "p90_e2el_ms", 232.0);
    assert_close(&v, "p99.9_e2el_ms", 239.92);
}

#[test]
fn extras_hand_computed() {
    let s = summarize(&run(), &ctx());
    let e = &s.inferbench;
    assert_eq!(e.profile_window_ns, Some([0, 260 * MS]));
    assert_eq!((e.warmups, e.failed), (1, 1));
    assert!(close(e.error_rate, 1.0 / 3.0));
    assert_eq!(e.errors_by_class.get("http_status"), Some(&1));
    assert_eq!(e.completion_tokens_source.get("server"), Some(&1));
    assert_eq!(e.completion_tokens_source.get("tokenizer"), Some(&1));
    assert_eq!(e.ttfo_ms.mean, 150.0);
    // interactivity = 1000 / TPOT statistic: mean 1000/15, p90 1000/19
    assert!(close(e.interactivity["mean"].unwrap(), 1000.0 / 15.0));
    assert!(close(e.interactivity["p90"].unwrap(), 1000.0 / 19.0));
    // E2EL/OSL: r0 160/4 = 40, r1 240/5 = 48 ms/token; p75 = 46 → 1000/46; p90 = 47.2 → 1000/47.2
    assert!(close(
        e.e2e_normalized_interactivity["p75"].unwrap(),
        1000.0 / 46.0
    ));
    assert!(close(
        e.e2e_normalized_interactivity["p90"].unwrap(),
        1000.0 / 47.2
    ));
    // tokens per chunk: r0 4/4 = 1, r1 5/2 = 2.5
    assert_eq!(e.tokens_per_chunk.mean, 1.75);
    // achieved OSL: the two successes' 4 and 5 tokens (the failure and the warmup left out);
    // p90 h = 0.9 → 4.9
    assert_eq!(e.achieved_osl.count, 2);
    assert_eq!((e.achieved_osl.mean, e.achieved_osl.max), (4.5, 5.0));
    assert!(close(e.achieved_osl.at(90.0).unwrap(), 4.9));
    // queue time: scheduled 0, sent 0/10/20 → [0, 10, 20]
    assert_eq!(e.client_queue_ms.mean, 10.0);
    assert_eq!(e.client_queue_ms.max, 20.0);
    // E2EL from schedule: 160, 250
    assert_eq!(e.e2el_from_schedule_ms.mean, 205.0);
    assert_eq!(e.schedule_lag_ms, None);
    assert_eq!(e.rates.configured_rps, None);
    assert_eq!(e.rates.scheduled_rps, None); // all scheduled at 0
    assert!(close(e.rates.sent_rps.unwrap(), 100.0)); // 2 gaps over 20 ms
    assert!(close(e.rates.achieved_rps, 2.0 / 0.26));
    assert!(!e.interrupted);
    // busy: r0 0→170, r1 10→260, r2 20→30 = 170 + 250 + 10 = 430 ms over 260 ms; peak 3 at 20 ms
    assert!(close(e.concurrency.mean_in_flight, 430.0 / 260.0));
    assert_eq!(e.concurrency.max_in_flight, 3);
}

#[test]
fn anomalies_warmup_failures_and_error_samples() {
    use crate::anomaly::{detect, Anomaly};
    let mut recs = run();
    // r0 (4 chunks): usage 19 503 for max_tokens 4; r1 (2 chunks): usage 0 from the server.
    for r in recs.iter_mut() {
        if r.phase == Phase::Profile && r.request_id == 0 {
            r.completion_tokens = 19_503;
            r.max_tokens = Some(4);
        }
        if r.phase == Phase::Profile && r.request_id == 1 {
            r.completion_tokens = 0;
            r.completion_tokens_source = TokenSource::Server;
        }
        r.anomalies = detect(r, false);
    }
    // a failed warmup (connect) and a second 503 later than the first
    recs.push(RequestRecord {
        request_id: 1,
        phase: Phase::Warmup,
        success: false,
        error_class: Some(ErrorClass::Connect),
        error: Some("connection refused".into()),
        end_ns: 5 * MS,
        ..Default::default()
    });
    recs.push(RequestRecord {
        request_id: 3,
        success: false,
        error_class: Some(ErrorClass::HttpStatus),
        error: Some("later 503".into()),
        sent_ns: 40 * MS,
        end_ns: 50 * MS,
        ..Default::default()
    });
    let mut c = ctx();
    c.stop_reason = StopReason::ServerUnreachable;
    c.requests_not_sent = 6;
    let s = summarize(&recs, &c);
    let e = &s.inferbench;
    assert_eq!(e.anomalies["usage_exceeds_max_tokens"], 1);
    assert_eq!(e.anomalies["usage_below_stream"], 1);
    assert_eq!(e.anomalies["osl_mismatch"], 0);
    assert_eq!(e.anomalies["isl_mismatch"], 0);
    assert_eq!(e.anomalous_requests, 2);
    assert_eq!(e.anomaly_rate, 1.0);
    assert_eq!(e.warmup_failed, 1);
    assert_eq!(e.warmups, 2);
    assert_eq!(e.warmup_errors_by_class["connect"], 1);
    assert_eq!(e.failed, 2);
    assert_eq!(e.error_samples["http_status"], "503 Service Unavailable");
    assert_eq!(e.error_samples["connect"], "connection refused");
    assert_eq!(e.requests_not_sent, 6);
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["inferbench"]["stop_reason"], "server_unreachable");
    assert_eq!(v["inferbench"]["anomalies"]["usage_exceeds_max_tokens"], 1);
    assert_eq!(v["inferbench"]["warmup_failed"], 1);
    let back: RunSummary = serde_json::from_value(v).unwrap();
    assert_eq!(back.inferbench, s.inferbench);
    assert_eq!(
        recs.iter()
            .find(|r| r.request_id == 0 && r.phase == Phase::Profile)
            .unwrap()
            .anomalies,
        vec![Anomaly::UsageExceedsMaxTokens]
    );
}

/// Issue 13: requests cancelled by Ctrl-C/SIGTERM while in flight (or waiting for a slot)
/// are not failures: the run's r0, r1 (ok) and r2 (503) plus two cancelled profile requests
/// and one cancelled warmup give failed 1, error rate 1/3 and the cancellations counted apart.
#[test]
fn run_cancelled_requests_are_counted_apart_from_failures() {
    let mut recs = run();
    let cancelled = |id: u64, phase: Phase, msg: &str| RequestRecord {
        request_id: id,
        phase,
        success: false,
        error_class: Some(ErrorClass::Cancelled),
        error: Some(msg.into()),
        sent_ns: 40 * MS,
        end_ns: 50 * MS,
        ..Default::default()
    };
    recs.push(cancelled(3, Phase::Profile, "cancelled while streaming"));
    recs.push(cancelled(
        4,
        Phase::Profile,
        "cancelled while waiting for a concurrency slot",
    ));
    recs.push(cancelled(
        1,
        Phase::Warmup,
        "cancelled before the response head",
    ));
    let mut c = ctx();
    c.interrupted = true;
    c.stop_reason = StopReason::Interrupted;
    let s = summarize(&recs, &c);
    let e = &s.inferbench;
    assert_eq!((s.completed, e.failed, e.cancelled_by_user), (2, 1, 2));
    assert_eq!(e.error_rate, 1.0 / 3.0);
    assert_eq!(s.error_rate(), 1.0 / 3.0);
    assert_eq!(
        e.errors_by_class,
        BTreeMap::from([("http_status".to_string(), 1)])
    );
    assert!(
        !e.error_samples.contains_key("cancelled"),
        "{:?}",
        e.error_samples
    );
    assert_eq!(
        (e.warmups, e.warmup_failed, e.warmup_cancelled_by_user),
        (2, 0, 1)
    );
    assert!(e.warmup_errors_by_class.is_empty());
    // The records keep them: 5 profile requests in the per-request lists.
    assert_eq!(s.input_lens.len(), 5);
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["inferbench"]["cancelled_by_user"], 2);
    assert_eq!(v["inferbench"]["warmup_cancelled_by_user"], 1);
    // Nothing cancelled: the same error rate as before the field existed.
    let plain = summarize(&run(), &ctx());
    assert_eq!(
        (plain.inferbench.failed, plain.inferbench.cancelled_by_user),
        (1, 0)
    );
    assert_eq!(plain.error_rate(), 1.0 / 3.0);
}

#[test]
fn detailed_arrays_in_request_order_and_seconds() {
    let mut c = ctx();
    c.save_detailed = true;
    let v = serde_json::to_value(summarize(&run(), &c)).unwrap();
    assert_eq!(v["ttfts"], serde_json::json!([0.1, 0.2, 0.0]));
    let itls = v["itls"].as_array().unwrap();
    assert_eq!(itls.len(), 3);
    assert_eq!(itls[1], serde_json::json!([0.04]));
    assert_eq!(itls[2], serde_json::json!([]));
    assert_eq!(
        v["generated_texts"],
        serde_json::json!(["out0", "out1", ""])
    );
    assert_eq!(
        v["errors"],
        serde_json::json!(["", "", "http_status: 503 Service Unavailable"])
    );
    // detailed arrays sit between output_lens and the statistics, as in vLLM
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    let pos = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(pos("output_lens") < pos("ttfts") && pos("errors") < pos("mean_ttft_ms"));
}

#[test]
fn percentile_and_metric_selection() {
    let mut c = ctx();
    c.metric_percentiles = vec![50.0, 99.99];
    c.percentile_metrics = vec![Metric::Ttft, Metric::Ttfo];
    c.goodput = GoodputSlo::default();
    let v = serde_json::to_value(summarize(&run(), &c)).unwrap();
    assert!(v.get("p50_ttft_ms").is_some());
    assert!(v.get("p99.99_ttft_ms").is_some());
    assert!(v.get("p90_ttft_ms").is_none());
    assert!(v.get("mean_tpot_ms").is_none());
    assert!(v.get("mean_ttfo_ms").is_none(), "TTFO is an extra only");
    assert_eq!(v["request_goodput:"], Value::Null);
}

#[test]
fn empty_and_all_failed_runs_have_no_nan() {
    for recs in [Vec::new(), vec![run().remove(2)]] {
        let mut c = ctx();
        c.request_rate = Some(4.0);
        let s = summarize(&recs, &c);
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("NaN"), "{text}");
        assert_eq!(s.completed, 0);
        assert_eq!(s.metric("mean_ttft_ms"), Some(0.0));
        assert_eq!(s.metric("p99.9_e2el_ms"), Some(0.0));
        assert_eq!(s.inferbench.interactivity["mean"], None);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["request_rate"], 4.0);
    }
}

#[test]
fn json_round_trip_and_foreign_file() {
    let s = summarize(&run(), &ctx());
    let text = serde_json::to_string_pretty(&s).unwrap();
    let back: RunSummary = serde_json::from_str(&text).unwrap();
    assert_eq!(back, s);
    // A vLLM/InferenceX-client file without our extras still reads.
    let foreign = r#"{"date":"20250101-000000","backend":"vllm","model_id":"m","tokenizer_id":"m",
        "best_of":1,"num_prompts":10,"request_rate":"inf","burstiness":1.0,"max_concurrency":4,
        "duration":2.0,"completed":10,"total_input_tokens":100,"total_output_tokens":50,
        "request_throughput":5.0,"request_goodput:":null,"output_throughput":25.0,
        "total_token_throughput":75.0,"input_lens":[],"output_lens":[],"mean_ttft_ms":12.5,
        "p99.9_tpot_ms":4.0}"#;
    let f: RunSummary = serde_json::from_str(foreign).unwrap();
    assert_eq!(f.request_rate, None);
    assert_eq!(f.metric("mean_ttft_ms"), Some(12.5));
    assert_eq!(f.metric("p99.9_tpot_ms"), Some(4.0));
    assert_eq!(f.failure_rate_vs_requested(), 0.0);
}

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: std::collections::HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

const BASE: [(&str, &str); 10] = [
    ("RUNNER_TYPE", "b200"),
    ("FRAMEWORK", "sglang"),
    ("PRECISION", "fp8"),
    ("SPEC_DECODING", "none"),
    ("RESULT_FILENAME", "dsr1_8k1k_fp8_sglang_tp8-conc2"),
    ("ISL", "8192"),
    ("OSL", "1024"),
    ("DISAGG", "false"),
    ("MODEL_PREFIX", "dsr1"),
    ("IMAGE", "lmsysorg/sglang:v0.5"),
];

/// Every field InferenceX's `process_result.py` writes for a single-node fixed-seq point
/// (reference/inferencex-producer.md §7.1), with hand-computed values.
#[test]
fn inferencex_aggregate_single_node() {
    let mut vars = BASE.to_vec();
    vars.extend([
        ("TP", "8"),
        ("EP_SIZE", "8"),
        ("DP_ATTENTION", "true"),
        ("PP_SIZE", "1"),
        ("KV_P2P_TRANSFER", ""),
    ]);
    let id = JobIdentity::from_lookup(env(&vars)).unwrap();
    assert_eq!(id.num_gpus(), 8);
    assert_eq!(
        id.aggregate_file_name(),
        "agg_dsr1_8k1k_fp8_sglang_tp8-conc2.json"
    );
    let s = summarize(&run(), &ctx());
    let a = inferencex_aggregate(&s, &id).unwrap();
    let keys: Vec<&str> = a.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "hw",
        "conc",
        "image",
        "model",
        "infmax_model_prefix",
        "framework",
        "precision",
        "spec_decoding",
        "disagg",
        "recipe_fingerprint",
        "isl",
        "osl",
        "is_multinode",
        "tp",
        "pp",
        "dcp_size",
        "pcp_size",
        "ep",
        "dp_attention",
        "tput_per_gpu",
        "output_tput_per_gpu",
        "input_tput_per_gpu",
    ];
    let mut metric_keys = Vec::new();
    for m in ["ttft", "tpot", "itl", "e2el"] {
        for st in ["mean", "median", "std", "p90", "p99", "p99.9"] {
            metric_keys.push(format!("{st}_{m}"));
            if m == "tpot" {
                metric_keys.push(format!("{st}_intvty"));
            }
        }
    }
    want.extend(metric_keys.iter().map(String::as_str));
    assert_eq!(keys, want);

    assert_eq!(a["hw"], "b200");
    assert_eq!(a["conc"], 2);
    assert_eq!(a["model"], "/models/dsr1");
    assert_eq!(a["infmax_model_prefix"], "dsr1");
    assert_eq!(a["disagg"], false);
    assert_eq!(a["recipe_fingerprint"], "");
    assert_eq!(a["isl"], 8192);
    assert_eq!(a["osl"], 1024);
    assert_eq!(a["tp"], 8);
    assert_eq!(a["ep"], 8);
    assert_eq!(a["dp_attention"], "true", "raw string, not a bool");
    assert_close(&a, "tput_per_gpu", 1909.0 / 0.26 / 8.0);
    assert_close(&a, "output_tput_per_gpu", 9.0 / 0.26 / 8.0);
    assert_close(&a, "input_tput_per_gpu", 1900.0 / 0.26 / 8.0);
    // ms → s
    assert_close(&a, "mean_ttft", 0.15);
    assert_close(&a, "p99.9_ttft", 0.1999);
    assert_close(&a, "p90_e2el", 0.232);
    assert_close(&a, "mean_tpot", 0.015);
    // intvty = 1000 / TPOT ms statistic
    assert_close(&a, "mean_intvty", 1000.0 / 15.0);
    assert_close(&a, "std_intvty", 1000.0 / 5.0);
    assert_close(&a, "p90_intvty", 1000.0 / 19.0);
    assert_close(&a, "p99.9_intvty", 1000.0 / 19.99);
}

#[test]
fn inferencex_aggregate_multinode_rules() {
    let mut vars = BASE.to_vec();
    vars.retain(|(k, _)| *k != "DISAGG");
    vars.extend([
        ("DISAGG", "True"),
        ("IS_MULTINODE", "true"),
        ("PREFILL_GPUS", "8"),
        ("DECODE_GPUS", "16"),
        ("PREFILL_NUM_WORKERS", "2"),
        ("PREFILL_TP", "4"),
        ("PREFILL_EP", "4"),
        ("PREFILL_DP_ATTN", "false"),
        ("DECODE_NUM_WORKERS", "1"),
        ("DECODE_TP", "16"),
        ("DECODE_EP", "16"),
        ("DECODE_DP_ATTN", "true"),
        (
            "ROUTER_METADATA",
            r#"{"name":"sglang-router","version":"0.2"}"#,
        ),
    ]);
    let id = JobIdentity::from_lookup(env(&vars)).unwrap();
    assert_eq!(id.num_gpus(), 24);
    let s = summarize(&run(), &ctx());
    let a = inferencex_aggregate(&s, &id).unwrap();
    assert_eq!(a["disagg"], true);
    assert_eq!(a["is_multinode"], true);
    assert_eq!(a["prefill_tp"], 4);
    assert_eq!(a["prefill_pp"], 1);
    assert_eq!(a["decode_tp"], 16);
    assert_eq!(a["decode_dp_attention"], "true");
    assert_eq!(a["num_prefill_gpu"], 8);
    assert_eq!(a["num_decode_gpu"], 16);
    assert_eq!(a["router"]["name"], "sglang-router");
    assert_close(&a, "tput_per_gpu", 1909.0 / 0.26 / 24.0);
    assert_close(&a, "output_tput_per_gpu", 9.0 / 0.26 / 16.0);
    assert_close(&a, "input_tput_per_gpu", 1900.0 / 0.26 / 8.0);
    assert!(a.get("tp").is_none());

    // No decode GPUs: decode topology forced to tp = ep = 0, pp = 1; output ÷ all GPUs.
    let mut v2 = vars.clone();
    v2.retain(|(k, _)| *k != "DECODE_GPUS");
    v2.push(("DECODE_GPUS", "0"));
    let a = inferencex_aggregate(&s, &JobIdentity::from_lookup(env(&v2)).unwrap()).unwrap();
    assert_eq!(
        (a["decode_tp"].clone(), a["decode_ep"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(a["decode_pp"], 1);
    assert_close(&a, "output_tput_per_gpu", 9.0 / 0.26 / 8.0);
}

/// InferenceX's per-GPU rule (§7.1), exact values: 9600 tokens/s in total, 1600 of them output.
#[test]
fn throughput_gpus_divide_by_inferencex_rule() {
    let per_gpu = |g: ThroughputGpus| {
        (
            g.tput_per_gpu(9600.0),
            g.output_tput_per_gpu(1600.0),
            g.input_tput_per_gpu(9600.0, 1600.0),
        )
    };
    // Aggregated on 8 GPUs: each ÷ 8.
    let agg = ThroughputGpus::aggregated(std::num::NonZeroU64::new(8).unwrap());
    assert_eq!(agg.all(), 8);
    assert_eq!(per_gpu(agg), (1200.0, 200.0, 1000.0));
    // Disaggregated, 8 prefill + 16 decode GPUs: total ÷ 24, output ÷ 16, input ÷ 8.
    let dis = ThroughputGpus::disaggregated(8, 16).unwrap();
    assert_eq!(dis.all(), 24);
    assert_eq!(per_gpu(dis), (400.0, 100.0, 1000.0));
    // No decode GPU: output ÷ all; no prefill GPU (InferenceX refuses it): input ÷ all.
    let no_decode = ThroughputGpus::disaggregated(8, 0).unwrap();
    assert_eq!(per_gpu(no_decode), (1200.0, 200.0, 1000.0));
    let no_prefill = ThroughputGpus::disaggregated(0, 16).unwrap();
    assert_eq!(per_gpu(no_prefill), (600.0, 100.0, 500.0));
    // No GPU at all is no split; the sum saturates.
    assert_eq!(ThroughputGpus::disaggregated(0, 0), None);
    assert_eq!(
        ThroughputGpus::disaggregated(u64::MAX, 1).map(|g| g.all()),
        Some(u64::MAX)
    );
}

#[test]
fn identity_errors_name_the_variable() {
    let e = JobIdentity::from_lookup(env(&[("RUNNER_TYPE", "b200")])).unwrap_err();
    let IdentityError::Missing(m) = &e else {
        panic!("{e}")
    };
    assert_eq!(m.len(), 9);
    assert_eq!(m[0], "FRAMEWORK");
    assert!(e.to_string().contains("IMAGE"));

    let mut vars = BASE.to_vec();
    vars.extend([("TP", "eight"), ("EP_SIZE", "1"), ("DP_ATTENTION", "false")]);
    let e = JobIdentity::from_lookup(env(&vars)).unwrap_err();
    assert!(e.to_string().contains("TP=\"eight\""), "{e}");

    let mut vars = BASE.to_vec();
    vars.retain(|(k, _)| *k != "DISAGG");
    vars.extend([
        ("DISAGG", "true"),
        ("TP", "8"),
        ("EP_SIZE", "1"),
        ("DP_ATTENTION", "false"),
    ]);
    assert_eq!(
        JobIdentity::from_lookup(env(&vars)).unwrap_err(),
        IdentityError::DisaggRequiresMultinode
    );

    let mut vars = BASE.to_vec();
    vars.extend([
        ("TP", "8"),
        ("EP_SIZE", "1"),
        ("DP_ATTENTION", "false"),
        ("ROUTER_METADATA", r#"{"name":"x"}"#),
    ]);
    let e = JobIdentity::from_lookup(env(&vars)).unwrap_err();
    assert!(e.to_string().contains("ROUTER_METADATA"), "{e}");
}

#[test]
fn aggregate_needs_concurrency_and_handles_zero_tpot() {
    let mut vars = BASE.to_vec();
    vars.extend([("TP", "1"), ("EP_SIZE", "1"), ("DP_ATTENTION", "false")]);
    let id = JobIdentity::from_lookup(env(&vars)).unwrap();
    let mut c = ctx();
    c.max_concurrency = None;
    assert_eq!(
        inferencex_aggregate(&summarize(&run(), &c), &id).unwrap_err(),
        AggregateError::NoConcurrency
    );
    // Only 1-token outputs: TPOT stats are 0 → intvty null instead of a division by zero.
    let one = vec![ok(0, 0, &[10], 1, 10)];
    let a = inferencex_aggregate(&summarize(&one, &ctx()), &id).unwrap();
    assert_eq!(a["mean_intvty"], Value::Null);
    assert_eq!(a["mean_tpot"], 0.0);
}

proptest::proptest! {
    /// `summarize` is total: arbitrary records always give a summary that serializes to JSON
    /// without NaN/inf, reads back equal, and whose aggregate builds.
    #[test]
    fn summarize_is_total(
        recs in proptest::collection::vec(
            (proptest::bool::ANY, 0u64..1_000_000_000, proptest::option::of(0u64..2_000_000_000),
             0u32..2000, proptest::collection::vec(0u64..2_000_000_000, 0..4)),
            0..20),
        detailed in proptest::bool::ANY,
    ) {
        let rs: Vec<RequestRecord> = recs.into_iter().enumerate().map(|(i, (ok, sent, last, toks, ch))| {
            RequestRecord {
                request_id: (i * 7 % 5) as u64,
                success: ok,
                sent_ns: sent,
                first_token_ns: ch.first().copied(),
                last_token_ns: last,
                end_ns: last.unwrap_or(sent),
                completion_tokens: toks,
                prompt_tokens_client: toks / 2,
                chunks: ch.iter().map(|&t| ChunkRecord { t_ns: t, channel: Channel::Tool, tokens: Some(2) }).collect(),
                ..Default::default()
            }
        }).collect();
        let mut c = ctx();
        c.save_detailed = detailed;
        let s = summarize(&rs, &c);
        let text = serde_json::to_string(&s).unwrap();
        // serde_json writes non-finite floats as null: none may appear among the vLLM numbers.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (k, x) in v.as_object().unwrap() {
            proptest::prop_assert!(!x.is_null() || k == "request_goodput:" || k == "max_concurrency", "{} is null", k);
        }
        let back: RunSummary = serde_json::from_str(&text).unwrap();
        proptest::prop_assert_eq!(&back, &s);
        let mut vars = BASE.to_vec();
        vars.extend([("TP", "2"), ("EP_SIZE", "1"), ("DP_ATTENTION", "false")]);
        let id = JobIdentity::from_lookup(env(&vars)).unwrap();
        proptest::prop_assert!(inferencex_aggregate(&s, &id).is_ok());
    }
}

/// The client self-check's rule: not held (< 99 %) and either out of CPU (≥ 90 % of its cores)
/// or its slots busier than the server by ≥ 1 % of the requested (responses waited to be read).
#[test]
fn client_check_judges_held_ratio_and_cpu() {
    // Held 63.5 of 64 (99.2 %): fine, however busy.
    let c = ClientCheck::judge(64, 63.5, None, 1.8, 2.0, 1);
    assert_eq!(c.held_ratio, 63.5 / 64.0);
    assert_eq!(c.cpu_cores, 0.9);
    assert!(!c.client_bound);
    // Issue 14's table: 281 of 512 on one saturated core → client-bound.
    let c = ClientCheck::judge(512, 281.0, None, 9.5, 10.0, 1);
    assert_eq!((c.held_ratio, c.cpu_cores), (281.0 / 512.0, 0.95));
    assert!(c.client_bound);
    // Not held but with idle cores: the server (or the network), not the client.
    assert!(!ClientCheck::judge(512, 281.0, None, 9.5, 10.0, 2).client_bound);
    // With kernel stamps: 5.1 of 64 at the server while all 64 slots were busy, on a client
    // that got only 0.72 of its core (a shared machine): the client, waiting to read.
    let c = ClientCheck::judge(64, 5.1, Some(63.9), 7.2, 10.0, 1);
    assert_eq!(c.slots_busy_ratio, Some(63.9 / 64.0));
    assert!(c.client_bound);
    // 30 slots busy for 5.1 at the server: 25 responses waited to be read on average.
    assert!(ClientCheck::judge(64, 5.1, Some(30.0), 7.2, 10.0, 1).client_bound);
    // Slots hardly busier than the server (reads kept up): not the client.
    assert!(!ClientCheck::judge(64, 5.1, Some(5.5), 7.2, 10.0, 1).client_bound);
    // A 19 ms profile gets no verdict (CPU time in 10 ms steps; trial 8's break test).
    assert!(!ClientCheck::judge(4, 3.7, Some(3.95), 0.01, 0.019, 2).client_bound);
    // No wall time: no CPU share.
    assert_eq!(ClientCheck::judge(4, 4.0, None, 1.0, 0.0, 1).cpu_cores, 0.0);
}

/// Trial 32: a server whose listen backlog overflowed held 8 streams at 0.5 in flight (each
/// request waited ~32 ms to connect, E2EL ~16 ms) with idle client cores: not client-bound,
/// and still not the requested concurrency, so the point is invalid and says why.
#[test]
fn a_run_whose_requests_waited_to_be_sent_did_not_hold_its_concurrency() {
    let c = ClientCheck::judge(8, 0.49, Some(0.49), 0.3, 2.0, 2);
    assert!(!c.client_bound);
    assert_eq!(
        c.queue_note(2.0, 32.0, 16.0).unwrap(),
        "the requested concurrency was not held: the server had 0.5 of the 8 requested requests \
         in flight, because each request waited 32.0 ms on average between a free slot and its \
         send (67 % of the time a slot was busy), connecting to a server slow to accept \
         connections (a small listen backlog?) or re-sending on a fresh connection; the point is \
         invalid, kept off frontiers unless --include-invalid"
    );
    // Queue time under 10 % of the cycle (1.6 ms of 16): not what lowered the held ratio.
    assert_eq!(c.queue_note(2.0, 1.6, 16.0), None);
    assert!(c.queue_note(2.0, 1.8, 16.0).is_some());
    // Held (99.5 %): nothing to say, whatever the queue time.
    let held = ClientCheck::judge(8, 7.96, None, 0.3, 2.0, 2);
    assert_eq!(held.queue_note(2.0, 32.0, 16.0), None);
    // A profile under a second gets no verdict; nor does a client-bound run (its own note).
    assert_eq!(c.queue_note(0.5, 32.0, 16.0), None);
    let bound = ClientCheck::judge(512, 281.0, None, 9.5, 10.0, 1);
    assert_eq!(bound.queue_note(10.0, 32.0, 16.0), None);
    // No time at all: no share, no verdict.
    assert_eq!(c.queue_note(2.0, 0.0, 0.0), None);
}

/// Trial 9: a client-bound quickstart at 0.27 of 2 cores was told to run fewer streams. The
/// note names the cause the measurements show: out of CPU, kept from it by other processes,
/// or stalled with CPU to spare.
#[test]
fn client_bound_note_names_the_cause() {
    let out_of_cpu = ClientCheck::judge(512, 281.0, None, 9.5, 10.0, 1);
    assert_eq!(
        out_of_cpu.note(10.0),
        "the client, not the server, limited this run: the server had 281.0 of the 512 requested \
         requests in flight; it was out of CPU (0.95 of its 1 cores busy): run fewer streams per \
         client process, or give it more cores (client_bound: true; InferenceX results are valid \
         only without it: the point is invalid, kept off frontiers unless --include-invalid)"
    );
    let mut kept = ClientCheck::judge(64, 5.1, Some(30.0), 0.54, 2.0, 2);
    kept.runqueue_wait_s = Some(1.3);
    assert!(kept.client_bound);
    assert_eq!(
        kept.note(2.0),
        "the client, not the server, limited this run: the server had 5.1 of the 64 requested \
         requests in flight (its slots were busy 30.0: responses waited to be read); it used 0.27 \
         of its 2 cores, and its threads waited 1.3 s for a CPU in a 2.0 s profile: other \
         processes on this machine held the cores; run it on an idle machine or on cores of its \
         own (client_bound: true; InferenceX results are valid only without it: the point is \
         invalid, kept off frontiers unless --include-invalid)"
    );
    kept.runqueue_wait_s = Some(0.06);
    assert!(kept.note(2.0).contains(
        "it used 0.27 of its 2 cores and waited 0.1 s for one: it stalled with CPU to spare"
    ));
    kept.runqueue_wait_s = None;
    assert!(kept
        .note(2.0)
        .contains("it used 0.27 of its 2 cores: it stalled with CPU to spare"));
}

/// GPUs per worker saturate instead of overflowing on counts no real file has (a foreign
/// file's garbage reaches the store through them).
#[test]
fn gpu_counts_saturate() {
    let big = Parallelism {
        tp: u32::MAX,
        pp: u32::MAX,
        dcp_size: 1,
        pcp_size: u32::MAX,
        ep: 1,
    };
    assert_eq!(big.gpus(), u64::MAX);
    let p = Parallelism {
        tp: 8,
        pp: 2,
        dcp_size: 4,
        pcp_size: 1,
        ep: 8,
    };
    assert_eq!(p.gpus(), 16);
}

/// summary.json holds each latency value once: vLLM's `p99_ttft_ms` is written from the typed
/// `inferbench.ttft_ms` it sits beside. Changing the typed value moves both blocks (and what
/// `metric` and `latency_stats` read); a foreign file's block (no extras samples) is its own.
#[test]
fn the_vllm_block_is_written_from_the_typed_distributions() {
    let mut s = summarize(&run(), &ctx());
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["p99_ttft_ms"], v["inferbench"]["ttft_ms"]["p99"]);
    assert_eq!(v["mean_e2el_ms"], v["inferbench"]["e2el_ms"]["mean"]);
    let p99 = s
        .inferbench
        .ttft_ms
        .percentiles
        .iter_mut()
        .find(|(q, _)| *q == 99.0);
    p99.unwrap().1 = 1234.5;
    s.inferbench.e2el_ms.mean = 678.0;
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(
        (&v["p99_ttft_ms"], &v["inferbench"]["ttft_ms"]["p99"]),
        (&Value::from(1234.5), &Value::from(1234.5))
    );
    assert_eq!(
        (&v["mean_e2el_ms"], &v["inferbench"]["e2el_ms"]["mean"]),
        (&Value::from(678.0), &Value::from(678.0))
    );
    assert_eq!(s.metric("p99_ttft_ms"), Some(1234.5));
    let stat = keys::LatencyStat::from_vllm_key("mean_e2el_ms").unwrap();
    assert_eq!(
        s.latency_stats().find(|(k, _)| *k == stat).map(|(_, v)| v),
        Some(678.0)
    );
    // The key order of the block is kept (metadata, then each metric's statistics).
    let keys_before: Vec<String> = s.metrics.keys().cloned().collect();
    let written: Vec<String> = (v.as_object().unwrap().keys())
        .filter(|k| s.metrics.contains_key(*k))
        .cloned()
        .collect();
    assert_eq!(written, keys_before);
    // A vLLM file of its own: its statistics are what it says.
    let foreign: RunSummary = serde_json::from_value(serde_json::json!({
        "completed": 1, "request_throughput": 1.0, "p99_ttft_ms": 42.0, "mean_ttft_ms": 40.0
    }))
    .unwrap();
    let v = serde_json::to_value(&foreign).unwrap();
    assert_eq!(
        (&v["p99_ttft_ms"], &v["mean_ttft_ms"]),
        (&Value::from(42.0), &Value::from(40.0))
    );
    assert_eq!(foreign.metric("p99_ttft_ms"), Some(42.0));
}
