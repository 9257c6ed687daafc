//! "Why a point sits where it does" (issue 42): one point's server state (requests running and
//! waiting, KV-cache usage, prefix-cache hit rate, preemptions) beside the client's requests in
//! flight on one time axis, with the profile window, the warmup, the client's self-check and the
//! point's validity verdict. Pure: stored records, server series and summary in, JSON out;
//! `/api/v1/points/{id}/timeline` formats it.

use std::collections::BTreeMap;

use inferbench_core::{Phase, RequestRecord};
use inferbench_store::detail::ServerSeries;
use inferbench_store::PointRow;
use serde_json::{json, Value};

/// The server series the timeline draws, by key: the Prometheus names that carry it (vLLM,
/// SGLang, llama.cpp; the first name a point has wins), its unit, and how label sets (engines)
/// combine at one scrape (`true`: summed; `false`: averaged).
const SERVER_KEYS: &[(&str, &[&str], &str, bool)] = &[
    (
        "running",
        &[
            "vllm:num_requests_running",
            "sglang:num_running_reqs",
            "llamacpp:requests_processing",
        ],
        "requests",
        true,
    ),
    (
        "waiting",
        &[
            "vllm:num_requests_waiting",
            "sglang:num_queue_reqs",
            "llamacpp:requests_deferred",
        ],
        "requests",
        true,
    ),
    (
        "kv_usage",
        &[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
            "llamacpp:kv_cache_usage_ratio",
        ],
        "fraction (1 = 100 %)",
        false,
    ),
    (
        "preemptions",
        &["vllm:num_preemptions_total", "sglang:num_preemptions_total"],
        "preemptions since the first scrape",
        true,
    ),
];

/// vLLM's prefix-cache counters (hits, queries), tokens: their ratio is the hit rate.
const PREFIX_HITS: &[(&str, &str)] = &[
    (
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_queries_total",
    ),
    ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries"),
    (
        "vllm:gpu_prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_queries_total",
    ),
];

/// Series `name`'s samples combined over its label sets: `[unix s, value]` by time, summed
/// (`sum`) or averaged per scrape time. Empty when the point has no such series.
fn combined(series: &[ServerSeries], name: &str, sum: bool) -> Vec<[f64; 2]> {
    let mut at: BTreeMap<u64, (f64, f64, usize)> = BTreeMap::new();
    for s in series.iter().filter(|s| s.name == name) {
        for &[t, v] in &s.samples {
            if t.is_finite() && v.is_finite() {
                let e = at.entry(t.to_bits()).or_insert((t, 0.0, 0));
                e.1 += v;
                e.2 += 1;
            }
        }
    }
    let mut out: Vec<[f64; 2]> = at
        .into_values()
        .map(|(t, v, n)| [t, if sum { v } else { v / n as f64 }])
        .collect();
    out.sort_by(|a, b| a[0].total_cmp(&b[0]));
    out
}

/// The timeline of one point. `records`: its stored request records; `series`: its
/// server-metric series (unix s); `summary`: the run's `summary.json` when the run kept one
/// (its `inferbench.profile_window_ns`, `benchmark_start_time_unix`, `clock` and
/// `sim_time_scale`, `inferbench.client` and `inferbench.concurrency`); `row`: the point.
///
/// Answer: `{"point_id", "axis", "clock", "time_scale", "profile_window": [s, s] | null,
/// "warmup": [s, s] | null, "client": {"in_flight": [[s, n]…], "max_in_flight",
/// "mean_in_flight"}, "server": [{"key", "name", "unit", "samples": [[s, v]…]}…],
/// "self_check": {"requested", "held_ratio", "client_bound", "cpu_cores", "cores_available"}
/// | null, "verdict": {"valid", "invalid_reason", "error"}}`. Every time is s since the
/// profile's start (the first send when the summary does not give it) on the records' clock:
/// `clock` `"modelled"` for the sim's rescaled rows, where the server's wall-clock scrapes are
/// placed at (t − profile start) × `time_scale`. `in_flight` is a step series: the client's
/// requests sent and not yet ended after each send or end (warmup and profile alike).
/// `prefix_hit_rate` (hits / queries since the server started, fraction) joins `server` where
/// the server counts them; `preemptions` counts from the first scrape.
pub fn point_timeline(
    row: &PointRow,
    records: &[RequestRecord],
    series: &[ServerSeries],
    summary: Option<&Value>,
) -> Value {
    let ib = summary.map(|s| &s["inferbench"]);
    let window_ns = ib
        .and_then(|i| i["profile_window_ns"].as_array())
        .and_then(|w| Some((w.first()?.as_u64()?, w.get(1)?.as_u64()?)));
    let first_send = records.iter().map(|r| r.sent_ns).min();
    let zero = window_ns.map(|w| w.0).or(first_send).unwrap_or(0);
    let s_of = |t: u64| (t as f64 - zero as f64) / 1e9;
    let modelled = summary.is_some_and(|s| s["clock"] == "modelled");
    let scale = if modelled {
        // vLLM-style summaries write it as a string ("8"); the server-metric summary as a
        // number.
        let k = |v: &Value| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok());
        summary
            .and_then(|s| k(&s["sim_time_scale"]))
            .or_else(|| ib.and_then(|i| k(&i["server_metrics"]["sim_time_scale"])))
            .filter(|k| k.is_finite() && *k > 0.0)
            .unwrap_or(1.0)
    } else {
        1.0
    };
    // The server's scrapes: unix s → s since the profile's start.
    let start_unix = summary.and_then(|s| s["benchmark_start_time_unix"].as_f64());
    let first_scrape = (series.iter())
        .filter_map(|s| s.samples.first().map(|p| p[0]))
        .fold(f64::INFINITY, f64::min);
    let origin = start_unix.unwrap_or(first_scrape);
    let on_axis = |t: f64| (t - origin) * scale;

    // Client in flight: +1 at each send, −1 at each end; the count after every instant.
    let mut events: BTreeMap<u64, i64> = BTreeMap::new();
    for r in records {
        *events.entry(r.sent_ns).or_default() += 1;
        *events.entry(r.end_ns.max(r.sent_ns)).or_default() -= 1;
    }
    let mut n = 0i64;
    let mut in_flight = Vec::with_capacity(events.len());
    for (t, d) in events {
        n += d;
        in_flight.push(json!([s_of(t), n]));
    }
    let warm: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Warmup)
        .collect();
    let warmup = (!warm.is_empty()).then(|| {
        let a = warm.iter().map(|r| r.sent_ns).min().unwrap_or(0);
        let b = warm
            .iter()
            .map(|r| r.end_ns.max(r.sent_ns))
            .max()
            .unwrap_or(a);
        json!([s_of(a), s_of(b)])
    });

    let mut server = Vec::new();
    for (key, names, unit, sum) in SERVER_KEYS {
        let Some(name) = names.iter().find(|n| series.iter().any(|s| s.name == **n)) else {
            continue;
        };
        let mut samples = combined(series, name, *sum);
        if *key == "preemptions" {
            let base = samples.first().map_or(0.0, |p| p[1]);
            for p in &mut samples {
                p[1] -= base;
            }
        }
        let samples: Vec<Value> = (samples.iter())
            .map(|p| json!([on_axis(p[0]), p[1]]))
            .collect();
        server.push(json!({"key": key, "name": name, "unit": unit, "samples": samples}));
    }
    if let Some((hits, queries)) = PREFIX_HITS
        .iter()
        .find(|(h, q)| [h, q].iter().all(|n| series.iter().any(|s| s.name == **n)))
    {
        let q: BTreeMap<u64, f64> = (combined(series, queries, true).into_iter())
            .map(|p| (p[0].to_bits(), p[1]))
            .collect();
        let samples: Vec<Value> = combined(series, hits, true)
            .into_iter()
            .filter_map(|[t, h]| {
                let q = *q.get(&t.to_bits())?;
                (q > 0.0).then(|| json!([on_axis(t), h / q]))
            })
            .collect();
        server.push(
            json!({"key": "prefix_hit_rate", "name": format!("{hits} / {queries}"),
                           "unit": "fraction (1 = 100 %)", "samples": samples}),
        );
    }

    let self_check = ib.and_then(|i| {
        let c = i.get("client").filter(|c| c.is_object())?;
        Some(
            json!({"requested": c["requested"], "held_ratio": c["held_ratio"],
                    "client_bound": c["client_bound"], "cpu_cores": c["cpu_cores"],
                    "cores_available": c["cores_available"]}),
        )
    });
    let conc = ib.map(|i| &i["concurrency"]);
    let max = records_max(&in_flight);
    json!({
        "point_id": row.point_id,
        "axis": "s since the profile's start",
        "clock": if modelled { "modelled" } else { "run" },
        "time_scale": scale,
        "profile_window": window_ns.map(|(a, b)| json!([s_of(a), s_of(b)])),
        "warmup": warmup,
        "client": {"in_flight": in_flight, "max_in_flight": max,
                   "mean_in_flight": conc.map(|c| c["mean_in_flight"].clone())},
        "server": server,
        "self_check": self_check,
        "verdict": {"valid": row.shown_valid(),
                    "invalid_reason": (row.status() == "invalid").then(|| {
                        row.shown_invalid_reason().unwrap_or(crate::api::NO_REASON_STORED)
                    }),
                    "error": row.error},
    })
}

/// The largest count of a step series `[[t, n]…]` (0 when empty).
fn records_max(steps: &[Value]) -> i64 {
    steps
        .iter()
        .filter_map(|p| p[1].as_i64())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(phase: Phase, sent_ms: u64, end_ms: u64) -> RequestRecord {
        RequestRecord {
            phase,
            sent_ns: sent_ms * 1_000_000,
            end_ns: end_ms * 1_000_000,
            success: true,
            ..RequestRecord::default()
        }
    }

    fn series(name: &str, labels: &str, samples: &[[f64; 2]]) -> ServerSeries {
        ServerSeries {
            name: name.into(),
            labels: labels.into(),
            samples: samples.to_vec(),
        }
    }

    /// One warmup then two overlapping profile requests; two engines' running counts summed,
    /// their KV usage averaged, preemptions from the first scrape, the prefix hit rate as
    /// hits / queries; server times placed from the profile's start × the modelled scale.
    #[test]
    fn client_and_server_share_the_profile_axis() {
        let records = [
            rec(Phase::Warmup, 0, 100),
            rec(Phase::Profile, 200, 600),
            rec(Phase::Profile, 300, 500),
        ];
        let summary = json!({"clock": "modelled", "sim_time_scale": "2",
            "benchmark_start_time_unix": 1000.0,
            "inferbench": {"profile_window_ns": [200_000_000u64, 600_000_000u64],
                "client": {"requested": 2, "held_ratio": 0.995, "client_bound": false,
                           "cpu_cores": 0.1, "cores_available": 2, "cpu_s": 0.01},
                "concurrency": {"mean_in_flight": 1.5, "max_in_flight": 2}}});
        let sv = [
            series(
                "vllm:num_requests_running",
                "engine=\"0\"",
                &[[1000.0, 1.0], [1000.25, 2.0]],
            ),
            series(
                "vllm:num_requests_running",
                "engine=\"1\"",
                &[[1000.0, 1.0], [1000.25, 0.0]],
            ),
            series("vllm:kv_cache_usage_perc", "engine=\"0\"", &[[1000.0, 0.5]]),
            series(
                "vllm:kv_cache_usage_perc",
                "engine=\"1\"",
                &[[1000.0, 0.25]],
            ),
            series(
                "vllm:gpu_cache_usage_perc",
                "engine=\"0\"",
                &[[1000.0, 0.9]],
            ),
            series(
                "vllm:num_preemptions_total",
                "",
                &[[1000.0, 3.0], [1000.25, 5.0]],
            ),
            series(
                "vllm:prefix_cache_hits_total",
                "",
                &[[1000.0, 30.0], [1000.25, 0.0]],
            ),
            series(
                "vllm:prefix_cache_queries_total",
                "",
                &[[1000.0, 40.0], [1000.25, 0.0]],
            ),
        ];
        let row = PointRow {
            point_id: 3,
            valid: false,
            invalid_reason: Some("client-bound".into()),
            ..PointRow::default()
        };
        let v = point_timeline(&row, &records, &sv, Some(&summary));
        assert_eq!(v["clock"], "modelled");
        assert_eq!(v["profile_window"], json!([0.0, 0.4]));
        assert_eq!(v["warmup"], json!([-0.2, -0.1]));
        assert_eq!(
            v["client"]["in_flight"],
            json!([[-0.2, 1], [-0.1, 0], [0.0, 1], [0.1, 2], [0.3, 1], [0.4, 0]])
        );
        assert_eq!(v["client"]["max_in_flight"], 2);
        assert_eq!(v["client"]["mean_in_flight"], 1.5);
        let by: BTreeMap<&str, &Value> = (v["server"].as_array().unwrap().iter())
            .map(|s| (s["key"].as_str().unwrap(), &s["samples"]))
            .collect();
        assert_eq!(*by["running"], json!([[0.0, 2.0], [0.5, 2.0]]));
        assert_eq!(*by["kv_usage"], json!([[0.0, 0.375]]));
        assert_eq!(*by["preemptions"], json!([[0.0, 0.0], [0.5, 2.0]]));
        // Queries 0 at the second scrape: no rate there.
        assert_eq!(*by["prefix_hit_rate"], json!([[0.0, 0.75]]));
        assert!(!by.contains_key("waiting"));
        assert_eq!(
            v["self_check"],
            json!({"requested": 2, "held_ratio": 0.995, "client_bound": false,
                   "cpu_cores": 0.1, "cores_available": 2})
        );
        assert_eq!(
            v["verdict"],
            json!({"valid": false, "invalid_reason": "client-bound", "error": null})
        );
    }

    /// No summary (an import): the axis starts at the first send, the scrapes at the first
    /// scrape, and there is no self-check.
    #[test]
    fn without_a_summary_the_first_send_is_zero() {
        let records = [rec(Phase::Profile, 1000, 1500)];
        let sv = [series(
            "vllm:num_requests_waiting",
            "",
            &[[50.0, 0.0], [51.0, 3.0]],
        )];
        let row = PointRow {
            valid: true,
            ..PointRow::default()
        };
        let v = point_timeline(&row, &records, &sv, None);
        assert_eq!(v["profile_window"], Value::Null);
        assert_eq!(v["warmup"], Value::Null);
        assert_eq!(v["client"]["in_flight"], json!([[0.0, 1], [0.5, 0]]));
        assert_eq!(v["server"][0]["samples"], json!([[0.0, 0.0], [1.0, 3.0]]));
        assert_eq!(v["self_check"], Value::Null);
        assert_eq!(
            v["verdict"],
            json!({"valid": true, "invalid_reason": null, "error": null})
        );
    }
}
