//! [`aggregate`]: the agentic aggregate computed from the records (request accounting, latency
//! statistics, QPS, throughput).

use super::*;

/// Builds the agentic aggregate (§4.5) from every record of the run (warmups, primers and
/// failures included: they count in `request_accounting`), the job context and the server's view
/// of the profiling window (`None` = no `/metrics`). Floats rounded as the script does.
pub fn aggregate(
    records: &[RequestRecord],
    ctx: &AgenticContext,
    server: Option<&ServerMetricsSummary>,
) -> AgenticAggregate {
    let kept: Vec<&RequestRecord> = records.iter().filter(|r| is_kept(r)).collect();
    let accounting = request_accounting(records);
    let (tp, ep, dp_attention, topology) = ctx.layout();
    let mut request_metrics = request_metrics(&kept);
    if let Some(t) = request_metrics.throughput.as_mut() {
        let g = ctx.num_gpus();
        if g > 0 {
            let g = g as f64;
            t.per_gpu = Some(PerGpuThroughput {
                total_tput_tps: t.total.tokens_per_second / g,
                output_tput_tps: t.output.tokens_per_second / g,
                input_tput_tps: t.input.tokens_per_second / g,
            });
        }
    }
    let (server_metrics, warnings) = server_block(server, ctx, &kept);
    let raw = AgenticAggregate {
        hw: ctx.hw.clone(),
        conc: ctx.conc,
        image: ctx.image.clone(),
        recipe_fingerprint: ctx.recipe_fingerprint.clone(),
        model: ctx.model.clone(),
        infmax_model_prefix: ctx.model_prefix.clone(),
        framework: ctx.framework.clone(),
        precision: ctx.precision.clone(),
        spec_decoding: ctx.spec_decoding.clone(),
        disagg: ctx.disagg,
        scenario_type: SCENARIO_TYPE.into(),
        is_multinode: matches!(ctx.topology, Topology::MultiNode { .. }),
        tp,
        ep,
        dp_attention,
        kv_offloading: ctx.kv_offloading.clone(),
        kv_offload_backend: ctx.kv_offload_backend.clone(),
        allocated_cpu_dram_gb: ctx.allocated_cpu_dram_gb,
        num_requests_total: accounting.records_total,
        num_requests_successful: kept.len() as u64,
        request_accounting: accounting,
        topology,
        router: ctx.router.clone(),
        kv_p2p_transfer: ctx.kv_p2p_transfer.clone().filter(|s| !s.is_empty()),
        dataset: ctx.dataset.clone(),
        kv_cache_pool_tokens: server_metrics.kv_cache.gpu_total_tokens,
        request_metrics,
        server_metrics,
        warnings,
    };
    // Round every float as the script does (a JSON round trip keeps one rounding rule).
    serde_json::from_value(raw.to_json()).unwrap_or(raw)
}

/// `request_accounting` of all records (§4.5).
pub fn request_accounting(records: &[RequestRecord]) -> RequestAccounting {
    let mut a = RequestAccounting {
        records_total: records.len() as u64,
        ..Default::default()
    };
    for r in records {
        if r.phase == Phase::Warmup {
            a.records_warmup_dropped += 1;
        }
        if let Some(d) = error_details(r) {
            a.records_error_dropped += 1;
            *a.error_categories.entry(error_category(&d)).or_default() += 1;
        }
        if is_kept(r) {
            a.records_profiled += 1;
        }
    }
    a.records_dropped_total = a.records_total - a.records_profiled;
    a
}

fn positive_s(values_ms: impl Iterator<Item = f64>) -> Vec<f64> {
    values_ms
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v / 1000.0)
        .collect()
}

fn request_metrics(kept: &[&RequestRecord]) -> RequestMetrics {
    let m: Vec<AiperfRecordMetrics> = kept.iter().map(|r| aiperf_metrics(r)).collect();
    let ttft = positive_s(m.iter().filter_map(|x| x.time_to_first_token_ms));
    let e2el = positive_s(m.iter().filter_map(|x| x.request_latency_ms));
    let itl = positive_s(m.iter().filter_map(|x| x.inter_token_latency_ms));
    let itl_stats = Stats::of(&itl);
    let ratios: Vec<f64> = m
        .iter()
        .filter_map(|x| {
            let (e, o) = (x.request_latency_ms?, x.output_sequence_length? as f64);
            (e.is_finite() && e > 0.0 && o > 0.0).then(|| e / 1000.0 / o)
        })
        .collect();
    let latency = LatencyStats {
        ttft: Stats::of(&ttft),
        e2el: Stats::of(&e2el),
        itl: itl_stats,
        tpot: itl_stats,
        intvty: itl_stats.and_then(|s| s.reciprocal(&itl)),
        e2e_norm_intvty: Stats::of(&ratios).and_then(|s| s.reciprocal(&ratios)),
        full_response_itl: None,
        full_response_intvty: None,
    };
    let isl: Vec<f64> = m.iter().map(|x| x.input_sequence_length as f64).collect();
    let osl: Vec<f64> = m
        .iter()
        .filter_map(|x| x.output_sequence_length.map(|o| o as f64))
        .collect();
    let expected: Vec<f64> = kept
        .iter()
        .filter_map(|r| r.agentic.as_ref())
        .map(|a| f64::from(a.expected_output_tokens))
        .collect();
    let tokens = TokenStats {
        input: Stats::of(&isl),
        output_actual: Stats::of(&osl),
        output_expected: Stats::of(&expected),
    };
    let (hit, total) = kept
        .iter()
        .filter_map(|r| r.agentic.as_ref())
        .fold((0u64, 0u64), |(h, t), a| {
            (h + u64::from(a.hit_blocks), t + u64::from(a.total_blocks))
        });
    RequestMetrics {
        qps: qps(kept),
        latency,
        tokens,
        throughput: throughput(kept, &isl, &osl),
        cache: RequestCacheStats {
            theoretical_cache_hit_rate: (total > 0).then(|| hit as f64 / total as f64),
        },
    }
}

fn qps(kept: &[&RequestRecord]) -> Option<QpsStats> {
    let mut ends: Vec<u64> = kept.iter().map(|r| r.end_ns).collect();
    if ends.len() < 2 {
        return None;
    }
    ends.sort_unstable();
    let (first, last) = (ends[0], ends[ends.len() - 1]);
    if last <= first {
        return None;
    }
    let window = (QPS_WINDOW_S * NS_PER_S) as u64;
    let mut values = Vec::new();
    let mut lo = first;
    while lo + window <= last {
        let hi = lo + window;
        let n = ends.iter().filter(|t| **t >= lo && **t < hi).count();
        values.push(n as f64 / QPS_WINDOW_S);
        lo = hi;
    }
    let Some(s) = Stats::of(&values) else {
        return Some(QpsStats {
            window_seconds: QPS_WINDOW_S,
            samples: 0,
            mean: ends.len() as f64 / ((last - first) as f64 / NS_PER_S),
            p50: None,
            p75: None,
            p90: None,
            p95: None,
            std: None,
        });
    };
    Some(QpsStats {
        window_seconds: QPS_WINDOW_S,
        samples: values.len() as u64,
        mean: s.mean,
        p50: Some(s.p50),
        p75: Some(s.p75),
        p90: Some(s.p90),
        p95: Some(s.p95),
        std: Some(s.std),
    })
}

fn throughput(kept: &[&RequestRecord], isl: &[f64], osl: &[f64]) -> Option<ThroughputStats> {
    let start = kept.iter().map(|r| r.sent_ns).min()?;
    let end = kept.iter().map(|r| r.end_ns).max()?;
    if end <= start {
        return None;
    }
    let d = (end - start) as f64 / NS_PER_S;
    let (i, o) = (isl.iter().sum::<f64>(), osl.iter().sum::<f64>());
    let tps = |x: f64| TokensPerSecond {
        tokens_per_second: x / d,
    };
    Some(ThroughputStats {
        input: tps(i),
        output: tps(o),
        total: tps(i + o),
        duration_seconds: d,
        per_gpu: None,
    })
}
