//! Agentic aggregate tests with hand-computed values (reference/agentx.md §4.5, §4.7).

use super::*;
use crate::record::{AgenticRef, Channel, ChunkRecord};
use crate::server_metrics::{summarize, Snapshot};

const MS: u64 = 1_000_000;

/// A successful request: sent at `sent` ms, first token `ttft` ms later, last token `e2el` ms
/// after the send, stream closed 50 ms after the last token.
#[allow(clippy::too_many_arguments)]
fn ok(
    id: u64,
    conv: &str,
    sent: u64,
    ttft: u64,
    e2el: u64,
    isl: u32,
    osl: u32,
    blocks: (u32, u32),
    expected: u32,
) -> RequestRecord {
    let first = (sent + ttft) * MS;
    let last = (sent + e2el) * MS;
    RequestRecord {
        request_id: id,
        conversation_id: Some(conv.into()),
        turn: Some(id as u32),
        phase: Phase::Profile,
        success: true,
        sent_ns: sent * MS,
        scheduled_ns: sent * MS,
        first_byte_ns: Some(first),
        first_token_ns: Some(first),
        first_output_token_ns: Some(first),
        last_token_ns: Some(last),
        end_ns: last + 50 * MS,
        chunks: [first, last]
            .iter()
            .map(|t| ChunkRecord {
                t_ns: *t,
                channel: Channel::Content,
                tokens: None,
            })
            .collect(),
        prompt_tokens: isl,
        prompt_tokens_client: isl,
        completion_tokens: osl,
        agentic: Some(AgenticRef {
            trace_id: conv.split("::").next().unwrap_or("").into(),
            kind: "profile".into(),
            hit_blocks: blocks.0,
            total_blocks: blocks.1,
            expected_output_tokens: expected,
            expected_input_tokens: isl,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn failed(
    id: u64,
    phase: Phase,
    class: ErrorClass,
    msg: &str,
    status: Option<u16>,
) -> RequestRecord {
    RequestRecord {
        request_id: id,
        phase,
        success: false,
        error_class: Some(class),
        error: Some(msg.into()),
        http_status: status,
        sent_ns: 100 * MS,
        end_ns: 200 * MS,
        prompt_tokens: 77,
        ..Default::default()
    }
}

/// Three kept records (module doc numbers), a warmup success, a profile failure, a warmup
/// failure.
fn fixture() -> Vec<RequestRecord> {
    let mut warm = ok(9, "t1", 0, 10, 20, 5, 1, (9, 9), 1);
    warm.phase = Phase::Warmup;
    vec![
        ok(0, "t1", 0, 100, 1100, 1000, 11, (0, 10), 10),
        ok(1, "t2", 500, 200, 2200, 2000, 11, (5, 10), 12),
        ok(2, "t1::sa:a", 1000, 150, 3150, 3000, 21, (15, 20), 20),
        warm,
        failed(
            10,
            Phase::Profile,
            ErrorClass::HttpStatus,
            "HTTP 500: Internal Server Error\nbody",
            Some(500),
        ),
        failed(11, Phase::Warmup, ErrorClass::TimeoutIdle, "idle", None),
    ]
}

fn ctx() -> AgenticContext {
    AgenticContext {
        hw: "h200".into(),
        conc: 4,
        model: "m".into(),
        framework: "vllm".into(),
        topology: Topology::SingleNode {
            parallelism: Parallelism {
                tp: 2,
                pp: 1,
                dcp_size: 1,
                pcp_size: 1,
                ep: 1,
            },
            dp_attention: "false".into(),
        },
        ..Default::default()
    }
}

fn stats(mean: f64, p50: f64, p75: f64, p90: f64, p95: f64, std: f64) -> Option<Stats> {
    Some(Stats {
        mean,
        p50,
        p75,
        p90,
        p95,
        std,
    })
}

#[test]
fn hand_computed_aggregate() {
    let a = aggregate(&fixture(), &ctx(), None);
    let acc = &a.request_accounting;
    assert_eq!(
        (
            acc.records_total,
            acc.records_profiled,
            acc.records_dropped_total,
            acc.records_warmup_dropped,
            acc.records_error_dropped
        ),
        (6, 3, 3, 2, 2)
    );
    assert_eq!(
        acc.error_categories,
        BTreeMap::from([("http_status".into(), 1), ("timeout_idle".into(), 1)])
    );
    assert_eq!((a.num_requests_total, a.num_requests_successful), (6, 3));
    let l = &a.request_metrics.latency;
    // TTFT [0.1, 0.2, 0.15] s.
    assert_eq!(l.ttft, stats(0.15, 0.15, 0.175, 0.19, 0.195, 0.04082));
    // E2EL [1.1, 2.2, 3.15] s.
    assert_eq!(l.e2el, stats(2.15, 2.2, 2.675, 2.96, 3.055, 0.83766));
    // ITL (E2EL − TTFT)/(OSL − 1) = [0.1, 0.2, 0.15] s; TPOT the same.
    assert_eq!(l.itl, stats(0.15, 0.15, 0.175, 0.19, 0.195, 0.04082));
    assert_eq!(l.tpot, l.itl);
    // 1/ITL statistic; std over [10, 5, 6.667].
    let inv = stats(6.66667, 6.66667, 5.71429, 5.26316, 5.12821, 2.0787);
    assert_eq!(l.intvty, inv);
    // E2EL/OSL = [0.1, 0.2, 0.15] s/token → the same reciprocals.
    assert_eq!(l.e2e_norm_intvty, inv);
    assert_eq!((l.full_response_itl, l.full_response_intvty), (None, None));
    let t = &a.request_metrics.tokens;
    assert_eq!(
        t.input,
        stats(2000.0, 2000.0, 2500.0, 2800.0, 2900.0, 816.49658)
    );
    assert_eq!(
        t.output_actual,
        stats(14.33333, 11.0, 16.0, 19.0, 20.0, 4.71405)
    );
    assert_eq!(
        t.output_expected,
        stats(14.0, 12.0, 16.0, 18.4, 19.2, 4.32049)
    );
    // Ends 1.15, 2.75, 4.2 s → windows [1.15, 2.15) 1, [2.15, 3.15) 1, [3.15, 4.15) 0.
    let q = a.request_metrics.qps.unwrap();
    assert_eq!((q.window_seconds, q.samples, q.mean), (1.0, 3, 0.66667));
    assert_eq!((q.p50, q.p95, q.std), (Some(1.0), Some(1.0), Some(0.4714)));
    // Duration 4.2 s (first send 0 to last end 4.2 s); 2 GPUs.
    let th = a.request_metrics.throughput.unwrap();
    assert_eq!(th.duration_seconds, 4.2);
    assert_eq!(th.input.tokens_per_second, 1428.57143);
    assert_eq!(th.output.tokens_per_second, 10.2381);
    assert_eq!(th.total.tokens_per_second, 1438.80952);
    assert_eq!(
        th.per_gpu,
        Some(PerGpuThroughput {
            total_tput_tps: 719.40476,
            output_tput_tps: 5.11905,
            input_tput_tps: 714.28571,
        })
    );
    // (0 + 5 + 15) / (10 + 10 + 20).
    assert_eq!(
        a.request_metrics.cache.theoretical_cache_hit_rate,
        Some(0.5)
    );
    // No server metrics: totals from the records, the script's warning.
    let s = &a.server_metrics;
    assert!(!s.present);
    assert_eq!(s.adapter, "none");
    assert_eq!(s.tokens.prompt_total, Some(6000));
    assert_eq!(s.tokens.generation_total, Some(43));
    assert_eq!(s.tokens.requests_completed, Some(3));
    assert_eq!(a.warnings, vec![WARNING_NO_SERVER_METRICS.to_string()]);
    assert_eq!((a.tp, a.ep, a.dp_attention.as_str()), (2, 1, "false"));
    assert_eq!(a.scenario_type, "agentic-coding");

    // JSON shape: key names and integers as the script writes them.
    let j = a.to_json();
    assert_eq!(
        j["request_metrics"]["tokens"]["input"]["mean"],
        serde_json::json!(2000)
    );
    assert_eq!(
        j["request_metrics"]["latency"]["full_response_itl"],
        serde_json::json!({})
    );
    assert_eq!(j["pp"], serde_json::json!(1));
    assert!(j.get("router").is_none() && j.get("dataset").is_none());
    assert_eq!(j["kv_offload_backend"], Value::Null);
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        &keys[..6],
        &[
            "hw",
            "conc",
            "image",
            "recipe_fingerprint",
            "model",
            "infmax_model_prefix"
        ]
    );
    // Deserializes back to the same value.
    let back: AgenticAggregate = serde_json::from_value(j).unwrap();
    assert_eq!(back, a);
}

#[test]
fn odd_inputs_do_not_panic() {
    let empty = aggregate(&[], &AgenticContext::default(), None);
    assert_eq!(empty.request_accounting, RequestAccounting::default());
    let j = empty.to_json();
    assert_eq!(j["request_metrics"]["qps"], serde_json::json!({}));
    assert_eq!(j["request_metrics"]["throughput"], serde_json::json!({}));
    assert_eq!(
        j["request_metrics"]["latency"]["ttft"],
        serde_json::json!({})
    );
    assert_eq!(
        j["request_metrics"]["cache"]["theoretical_cache_hit_rate"],
        Value::Null
    );
    assert_eq!(empty.server_metrics.tokens.prompt_total, None);
    assert_eq!(empty.server_metrics.tokens.requests_completed, Some(0));

    // All failed.
    let all_failed: Vec<RequestRecord> = (0..3)
        .map(|i| failed(i, Phase::Profile, ErrorClass::Connect, "refused", None))
        .collect();
    let a = aggregate(&all_failed, &ctx(), None);
    assert_eq!(a.num_requests_successful, 0);
    assert_eq!(a.request_accounting.error_categories["connect"], 3);
    assert!(a.request_metrics.latency.e2el.is_none());

    // Zero OSL and one-token requests: no ITL, no E2E ratio; one completion: no QPS.
    let zero = ok(0, "t", 0, 100, 100, 10, 0, (0, 0), 0);
    let a = aggregate(&[zero], &ctx(), None);
    let l = &a.request_metrics.latency;
    assert!(l.itl.is_none() && l.intvty.is_none() && l.e2e_norm_intvty.is_none());
    assert!(l.ttft.is_some());
    assert!(a.request_metrics.qps.is_none());
    assert_eq!(a.request_metrics.cache.theoretical_cache_hit_rate, None);

    // Two completions within one second: no window, completions / span.
    let a = aggregate(
        &[
            ok(0, "t", 0, 10, 100, 10, 5, (0, 1), 5),
            ok(1, "t", 0, 10, 600, 10, 5, (0, 1), 5),
        ],
        &ctx(),
        None,
    );
    let q = a.request_metrics.qps.unwrap();
    assert_eq!((q.samples, q.mean, q.p50), (0, 4.0, None));
}

#[test]
fn error_categories_follow_the_script() {
    let d = |kind: Option<&str>, code: Option<u16>, msg: &str| ErrorDetails {
        code,
        kind: kind.map(String::from),
        message: msg.into(),
    };
    assert_eq!(
        error_category(&d(Some("timeout_idle"), Some(500), "x")),
        "timeout_idle"
    );
    assert_eq!(error_category(&d(Some(""), Some(503), "x")), "503");
    assert_eq!(
        error_category(&d(None, None, "  HTTP 500: boom\nmore: x")),
        "HTTP 500"
    );
    assert_eq!(error_category(&d(None, None, ":leading")), "unknown");
    assert_eq!(error_category(&d(None, None, "   ")), "unknown");
    assert_eq!(error_category(&d(None, None, &"x".repeat(200))).len(), 120);
    // The record's error object.
    let r = failed(
        1,
        Phase::Profile,
        ErrorClass::HttpStatus,
        "HTTP 429: slow down",
        Some(429),
    );
    let e = error_details(&r).unwrap();
    assert_eq!(
        (e.code, e.kind.as_deref()),
        (Some(429), Some("http_status"))
    );
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        serde_json::json!({"code": 429, "type": "http_status", "message": "HTTP 429: slow down"})
    );
    assert!(error_details(&ok(0, "t", 0, 1, 2, 1, 1, (0, 0), 1)).is_none());
}

#[test]
fn rounding_is_pythons() {
    assert_eq!(round5(0.015625), 0.01562); // tie to even
    assert_eq!(round5(0.046875), 0.04688);
    assert_eq!(round5(1.0 / 3.0), 0.33333);
    assert_eq!(round5(f64::INFINITY), f64::INFINITY);
    let v = round_floats(
        serde_json::json!({"a": 2.0, "b": 0.5, "c": [1e-7, 12345.678901], "d": 3, "e": -4.000001}),
    );
    assert_eq!(
        v,
        serde_json::json!({"a": 2, "b": 0.5, "c": [0.0, 12345.6789], "d": 3, "e": -4})
    );
}

#[test]
fn validity_rules_match_the_script() {
    let c = |ok: f64, err: Option<f64>, done: Option<f64>| RequestCounts {
        request_count: Some(ok),
        error_request_count: err,
        completed_request_count: done,
    };
    assert!(validate(Some(&c(90.0, Some(10.0), Some(100.0))), 0.10).valid);
    let v = validate(Some(&c(2.0, Some(65.0), Some(67.0))), 0.10);
    assert_eq!(
        v.reasons,
        vec!["aiperf request error rate exceeded the benchmark limit: 65/67 = 97.015% > 10.000%"]
    );
    assert!(validate(Some(&c(12.0, None, None)), 0.10).valid);
    assert_eq!(
        validate(None, 0.1).reasons,
        vec!["profile_export_aiperf.json not found"]
    );
    assert_eq!(
        validate(Some(&c(0.0, None, None)), 0.1).reasons,
        vec!["aiperf completed zero requests"]
    );
    let missing = RequestCounts::default();
    assert_eq!(
        validate(Some(&missing), 0.1).reasons,
        vec!["request_count.avg is missing"]
    );
    assert!(!validate(Some(&c(1.0, Some(-1.0), None)), 0.1).valid);
    assert!(!validate(Some(&c(1.0, None, None)), 1.5).valid);
    // From records: 3 successes, 1 profile error (warmups ignored) → 25% > 10%.
    let counts = RequestCounts::from_records(&fixture());
    assert_eq!(
        (
            counts.request_count,
            counts.error_request_count,
            counts.completed_request_count
        ),
        (Some(3.0), Some(1.0), Some(4.0))
    );
    assert!(!validate(Some(&counts), 0.10).valid);
    assert!(validate(Some(&counts), 0.25).valid); // inclusive bound
    assert!(require_server_metric_prefix(["sglang:x", "vllm:y"].into_iter(), "vllm:").valid);
    assert!(!require_server_metric_prefix(["sglang:x"].into_iter(), "vllm:").valid);
}

#[test]
fn scenario_validity_rules() {
    let mut recs = fixture();
    assert!(scenario_validity(&recs, false, &[]).valid);
    recs.push(failed(
        20,
        Phase::Profile,
        ErrorClass::HttpStatus,
        "HTTP 400: This model's maximum context length is 8192 tokens",
        Some(400),
    ));
    let v = scenario_validity(&recs, true, &["unsafe_override".into()]);
    assert_eq!(
        v.reasons,
        vec![
            "unsafe_override",
            "run_cancelled",
            "context_overflow_rate_exceeded"
        ]
    );
    // 1000 s profiling phase whose last token is at 900 s: coverage 90% < 98%.
    let long = vec![
        ok(0, "t", 0, 10, 900_000, 10, 5, (0, 1), 5),
        failed(1, Phase::Profile, ErrorClass::TimeoutTotal, "slow", None),
    ];
    let mut long = long;
    long[1].sent_ns = 0;
    long[1].end_ns = 1_000_000 * MS;
    assert_eq!(
        scenario_validity(&long, false, &[]).reasons,
        vec!["insufficient_profile_metric_coverage"]
    );
}

fn snap(phase: &str, t: f64, text: &str) -> Snapshot {
    Snapshot {
        phase: phase.into(),
        unix_s: t,
        samples: crate::prometheus::parse_prometheus(text),
    }
}

#[test]
fn vllm_server_block() {
    let base = "vllm:prefix_cache_hits_total{engine=\"0\"} 0\nvllm:prefix_cache_queries_total{engine=\"0\"} 0\nvllm:prompt_tokens_total{engine=\"0\"} 0\nvllm:generation_tokens_total{engine=\"0\"} 0\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.1\nvllm:request_prompt_tokens_bucket{engine=\"0\",le=\"+Inf\"} 0\nvllm:request_prompt_tokens_sum{engine=\"0\"} 0\nvllm:request_prompt_tokens_count{engine=\"0\"} 0\n";
    let mid = "vllm:prefix_cache_hits_total{engine=\"0\"} 400\nvllm:prefix_cache_queries_total{engine=\"0\"} 500\nvllm:prompt_tokens_total{engine=\"0\"} 600\nvllm:generation_tokens_total{engine=\"0\"} 20.4\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.6\n";
    let end = "vllm:prefix_cache_hits_total{engine=\"0\"} 800\nvllm:prefix_cache_queries_total{engine=\"0\"} 1000\nvllm:prompt_tokens_total{engine=\"0\"} 1200\nvllm:generation_tokens_total{engine=\"0\"} 40.6\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.3\nvllm:request_prompt_tokens_bucket{engine=\"0\",le=\"+Inf\"} 3\nvllm:request_prompt_tokens_sum{engine=\"0\"} 1200\nvllm:request_prompt_tokens_count{engine=\"0\"} 3\n";
    let snaps = vec![
        snap("baseline", 0.0, base),
        snap("profile", 1.0, mid),
        snap("final", 2.0, end),
    ];
    let summary = summarize(&snaps, 0.5, 2.0);
    let mut c = ctx();
    c.kv_cache_pool_tokens = Some(123_456);
    let a = aggregate(&fixture(), &c, Some(&summary));
    let s = &a.server_metrics;
    assert!(s.present);
    assert_eq!(s.adapter, "vllm");
    // prefix_cache_hits, prefix_cache_queries, prompt_tokens, generation_tokens, kv usage,
    // request_prompt_tokens (histogram).
    assert_eq!(s.metric_count, 6);
    assert_eq!(s.cache.gpu_cache_hit_rate, Some(0.8));
    assert_eq!(s.cache.overall_cache_hit_rate, Some(0.8));
    assert_eq!(s.cache.prefix_cache_hits, Some(800.0));
    assert_eq!(s.kv_cache.gpu_usage_pct, Some(0.6));
    assert_eq!(s.kv_cache.gpu_total_tokens, Some(123_456));
    assert_eq!(a.kv_cache_pool_tokens, Some(123_456));
    assert_eq!(s.tokens.prompt_total, Some(1200));
    assert_eq!(s.tokens.generation_total, Some(41));
    assert_eq!(s.sources.len(), 1);
    assert_eq!(s.sources[0].id, "combined|engine=0");
    assert_eq!(s.sources[0].prefix_cache_hit_rate, Some(0.8));
    assert!(a.warnings.is_empty());

    // prompt_tokens_by_source overrides the GPU rate; external share.
    let by_src = "vllm:prompt_tokens_by_source_total{source=\"local_cache_hit\"} 600\nvllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 200\nvllm:prompt_tokens_by_source_total{source=\"local_compute\"} 200\n";
    let zero = "vllm:prompt_tokens_by_source_total{source=\"local_cache_hit\"} 0\nvllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 0\nvllm:prompt_tokens_by_source_total{source=\"local_compute\"} 0\n";
    let summary = summarize(
        &[
            snap("baseline", 0.0, &format!("{base}{zero}")),
            snap("final", 2.0, &format!("{end}{by_src}")),
        ],
        0.5,
        2.0,
    );
    let a = aggregate(&fixture(), &ctx(), Some(&summary));
    let cache = &a.server_metrics.cache;
    assert_eq!(cache.gpu_cache_hit_rate, Some(0.6));
    assert_eq!(cache.external_cache_hit_rate, Some(0.2));
    assert_eq!(cache.overall_cache_hit_rate, Some(0.8));
    assert_eq!(
        a.server_metrics.tokens.prompt_by_source.raw["local_compute"],
        200.0
    );
    // The export model: counters as families without `_total`, histogram with buckets.
    let e = server_export(&summary, None);
    assert_eq!(e.metrics["vllm:prefix_cache_hits"].kind, "counter");
    assert_eq!(
        e.metrics["vllm:prefix_cache_hits"].series[0].stats["total"],
        800.0
    );
    let h = &e.metrics["vllm:request_prompt_tokens"];
    assert_eq!(h.kind, "histogram");
    assert_eq!(h.series[0].stats["avg"], 400.0);
    assert_eq!(h.series[0].buckets.as_ref().unwrap()["+Inf"], 3.0);
    assert_eq!(e.metrics["vllm:kv_cache_usage_perc"].kind, "gauge");
}

#[test]
fn sglang_server_block() {
    let t0 = "sglang:prompt_tokens_total 0\nsglang:cached_tokens_total{cache_source=\"device\"} 0\nsglang:cached_tokens_total{cache_source=\"host\"} 0\nsglang:token_usage 45\nsglang:max_total_num_tokens{dp_rank=\"0\"} 1000\nsglang:max_total_num_tokens{dp_rank=\"1\"} 1200\n";
    let t1 = "sglang:prompt_tokens_total 1000\nsglang:cached_tokens_total{cache_source=\"device\"} 500\nsglang:cached_tokens_total{cache_source=\"host\"} 100\nsglang:token_usage 25\nsglang:max_total_num_tokens{dp_rank=\"0\"} 1000\nsglang:max_total_num_tokens{dp_rank=\"1\"} 1200\n";
    let summary = summarize(
        &[snap("baseline", 0.0, t0), snap("final", 1.0, t1)],
        0.0,
        1.0,
    );
    let mut c = ctx();
    c.framework = "sglang".into();
    let a = aggregate(&fixture(), &c, Some(&summary));
    let s = &a.server_metrics;
    assert_eq!(s.adapter, "sglang");
    assert_eq!(s.cache.gpu_cache_hit_rate, Some(0.5));
    assert_eq!(s.cache.cpu_cache_hit_rate, Some(0.1));
    assert_eq!(s.cache.overall_cache_hit_rate, Some(0.6));
    // Gauge 45 → percent → 0.45 (max over the two scrapes).
    assert_eq!(s.kv_cache.gpu_usage_pct, Some(0.45));
    assert_eq!(s.kv_cache.gpu_total_tokens, Some(2200));
    assert_eq!(s.tokens.prompt_total, Some(1000));
    // No generation counter: Σ OSL of the kept records.
    assert_eq!(s.tokens.generation_total, Some(43));
}

#[test]
fn multinode_layout() {
    let role = |workers, tp, dp: &str| RoleTopology {
        num_workers: workers,
        parallelism: Parallelism {
            tp,
            pp: 1,
            dcp_size: 1,
            pcp_size: 1,
            ep: tp,
        },
        dp_attention: dp.into(),
    };
    let mut c = ctx();
    c.topology = Topology::MultiNode {
        prefill_gpus: 0,
        decode_gpus: 0,
        prefill: role(2, 4, "true"),
        decode: role(0, 8, "false"),
        prefill_hw: None,
        decode_hw: None,
    };
    assert_eq!(c.num_gpus(), 8);
    let a = aggregate(&fixture(), &c, None);
    // No decode GPU: decode tp/ep forced to 0.
    assert_eq!((a.tp, a.ep, a.dp_attention.as_str()), (4, 4, "true"));
    let TopologyFields::Multi(m) = &a.topology else {
        panic!("multinode fields expected");
    };
    assert_eq!(
        (m.num_prefill_gpu, m.num_decode_gpu, m.decode_tp),
        (8, 0, 0)
    );
    let j = a.to_json();
    assert_eq!(j["prefill_num_workers"], serde_json::json!(2));
    assert!(j.get("pp").is_none());
    assert_eq!(
        a.request_metrics
            .throughput
            .unwrap()
            .per_gpu
            .unwrap()
            .input_tput_tps,
        round5(6000.0 / 4.2 / 8.0)
    );
}

#[test]
fn kv_pool_from_server_logs() {
    let vllm = "(EngineCore_DP0 pid=11) INFO GPU KV cache size: 1,000,000 tokens\n(EngineCore_DP1 pid=12) INFO GPU KV cache size: 2,000,000 tokens\n(EngineCore_DP0 pid=11) INFO GPU KV cache size: 1,500,000 tokens\n";
    assert_eq!(
        kv_pool_tokens_from_server_log("vllm", vllm),
        Some(3_500_000)
    );
    assert_eq!(
        kv_pool_tokens_from_server_log(
            "vllm",
            "INFO GPU KV cache size: 42 tokens\nINFO GPU KV cache size: 8 tokens\n"
        ),
        Some(50)
    );
    assert_eq!(kv_pool_tokens_from_server_log("vllm", "nothing"), None);
    let sg =
        "server_args dp_size=2 tp_size=8\n[DP0 TP0 EP0] max_total_num_tokens=9205760, chunked\n";
    assert_eq!(
        kv_pool_tokens_from_server_log("sglang", sg),
        Some(18_411_520)
    );
    let sg2 = "[DP0 TP0 EP0] max_total_num_tokens=100\n[DP1 TP0 EP0] max_total_num_tokens=200\n";
    assert_eq!(kv_pool_tokens_from_server_log("sglang", sg2), Some(300));
}

/// Issue 42: a point is a preview when its only invalid reasons are the duration rule.
#[test]
fn only_the_duration_rule_makes_a_preview() {
    assert!(only_short_replay(SHORT_REPLAY_REASON));
    assert!(only_short_replay(
        "replay shorter than AgentX's 900 s minimum; unsafe_override"
    ));
    assert!(!only_short_replay(""));
    assert!(!only_short_replay("the server fell behind"));
    assert!(!only_short_replay(
        "replay shorter than AgentX's 900 s minimum; insufficient_profile_metric_coverage"
    ));
}
