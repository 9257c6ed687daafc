//! The serving engine's own view of a point, from its Prometheus `/metrics` scraped around and
//! during the profiling window (issue 10): counters become deltas and rates over the window,
//! gauges become mean/min/max over the scrapes inside it, histogram buckets become deltas. The
//! engine-specific names of the few figures a reader wants (KV-cache usage, prefix-cache hit
//! rate, running/waiting requests, preemptions, tokens, speculative acceptance length) are
//! mapped here for vLLM, SGLang and llama.cpp (and `inferbench sim`, which uses vLLM's).
//!
//! Units: `unix_s` in Unix seconds; rates per second; KV-cache usage as a fraction 0–1; hit
//! rate as a fraction 0–1; acceptance length in tokens per verification step (≥ 1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::prometheus::Sample;

/// One scrape: when, in which phase of the run, and every sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// `baseline` (before warmup), `warmup`, `profile`, `final` (after the profile).
    pub phase: String,
    /// Unix seconds when the scrape's response arrived.
    pub unix_s: f64,
    /// The samples, as parsed by [`crate::prometheus::parse_prometheus`].
    pub samples: Vec<Sample>,
}

/// A counter over the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterStat {
    /// Increase over the window (a reset in between counts from the reset).
    pub delta: f64,
    /// `delta` ÷ the window's length, per second.
    pub rate: f64,
}

/// A gauge over the scrapes inside the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugeStat {
    /// Mean of the scraped values.
    pub mean: f64,
    /// Smallest scraped value.
    pub min: f64,
    /// Largest scraped value.
    pub max: f64,
    /// Scrapes that had it.
    pub n: usize,
}

/// Above this share of late token chunks ([`ServerMetricsSummary::late_chunk_fraction`]) a
/// point's timings are not a valid measurement: the load generator says so and sets
/// `inferbench.invalid_reason`. 20 %, measured on this project's 2-core machines with
/// `quickstart --fast` (debug build, 2026-12-03): idle 0–2 %; two quickstarts at once (a test
/// suite's load) 0–11 %, TPOT within ~15 %; six CPU-bound loops beside it 20–77 %, p99 TTFT
/// 1.7–4× the idle run's (and, on a machine building three crates, a median TPOT of 0.2 ms
/// where the model says 7).
pub const LATE_CHUNKS_MAX: f64 = 0.20;

/// The name prefix of the metrics only `inferbench sim` exposes.
const SIM_PREFIX: &str = "inferbench_sim:";

/// Whether scrapes `snaps` came from `inferbench sim` (a sample named `inferbench_sim:…`),
/// as [`ServerMetricsSummary::is_simulator`] tells from a summary.
pub fn from_simulator(snaps: &[Snapshot]) -> bool {
    (snaps.iter()).any(|s| s.samples.iter().any(|x| x.name.starts_with(SIM_PREFIX)))
}

/// The engine's view of one point (written as `inferbench.server_metrics`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerMetricsSummary {
    /// Engine family by metric prefix: `vllm`, `sglang`, `llamacpp`, or `unknown`.
    pub engine: String,
    /// Scrapes taken in all (baseline and final included).
    pub scrapes: usize,
    /// Scrapes inside the window.
    pub scrapes_in_window: usize,
    /// Largest KV-cache usage seen in the window, fraction 0–1.
    pub kv_cache_usage_max: Option<f64>,
    /// Mean KV-cache usage in the window, fraction 0–1.
    pub kv_cache_usage_mean: Option<f64>,
    /// Prefix-cache hits ÷ queries over the window (vLLM counters), or the mean of SGLang's
    /// `cache_hit_rate` gauge; fraction 0–1. llama.cpp exposes none.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Prompt tokens found in the prefix cache over the window (vLLM).
    pub prefix_cache_hits: Option<f64>,
    /// Prompt tokens looked up in the prefix cache over the window (vLLM).
    pub prefix_cache_queries: Option<f64>,
    /// Mean requests running (in a batch) in the window.
    pub running_mean: Option<f64>,
    /// Mean requests waiting (queued / deferred) in the window.
    pub waiting_mean: Option<f64>,
    /// Preemptions over the window (vLLM).
    pub preemptions: Option<f64>,
    /// Prompt tokens the engine processed over the window.
    pub prompt_tokens: Option<f64>,
    /// Tokens the engine generated over the window.
    pub generation_tokens: Option<f64>,
    /// Speculative decoding: 1 + accepted ÷ drafts over the window (vLLM counters), or the
    /// mean of SGLang's `spec_accept_length` gauge.
    pub spec_acceptance_length: Option<f64>,
    /// The share of the sim's streamed token chunks over the window written more than two
    /// steps (at least 4 ms) after their step was due, 0–1: `inferbench_sim:late_token_chunks_total`
    /// ÷ `inferbench_sim:token_chunks_total` (only `inferbench sim` exposes them). Above
    /// [`LATE_CHUNKS_MAX`] the server was starved of CPU and sent its tokens late or in bursts,
    /// so the point's TTFT/TPOT/ITL are the machine's, not the modelled server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_chunk_fraction: Option<f64>,
    /// The sim's `--time-scale` (`inferbench_sim:time_scale`, modelled seconds per wall-clock
    /// second; only `inferbench sim` exposes it): above 1 the server ran that many times faster
    /// than the hardware it models, so wall-clock times are not that hardware's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim_time_scale: Option<f64>,
    /// Every counter (`name{labels}` → stat).
    pub counters: BTreeMap<String, CounterStat>,
    /// Every gauge (`name{labels}` → stat).
    pub gauges: BTreeMap<String, GaugeStat>,
}

fn key(s: &Sample) -> String {
    if s.labels.is_empty() {
        s.name.clone()
    } else {
        format!("{}{{{}}}", s.name, s.labels)
    }
}

/// Whether a sample is a counter (or a histogram/summary part, which behave as counters): the
/// exposition conventions `_total`, `_count`, `_sum`, `_bucket`. `_created` timestamps are
/// neither and are skipped.
fn is_counter(name: &str) -> bool {
    ["_total", "_count", "_sum", "_bucket"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// Summarizes `snaps` (in time order) over the window `[start, end]` (Unix s): counters from the
/// last scrape at or before `start` (else the first) to the first at or after `end` (else the
/// last); gauges over the scrapes inside the window (else the nearest one after `start`).
pub fn summarize(snaps: &[Snapshot], start: f64, end: f64) -> ServerMetricsSummary {
    let mut out = ServerMetricsSummary {
        scrapes: snaps.len(),
        ..Default::default()
    };
    if snaps.is_empty() {
        out.engine = "unknown".into();
        return out;
    }
    let before = snaps.iter().rposition(|s| s.unix_s <= start).unwrap_or(0);
    let after = snaps
        .iter()
        .position(|s| s.unix_s >= end)
        .unwrap_or(snaps.len() - 1)
        .max(before);
    let inside: Vec<&Snapshot> = snaps
        .iter()
        .filter(|s| s.unix_s >= start && s.unix_s <= end)
        .collect();
    out.scrapes_in_window = inside.len();
    let span = (snaps[after].unix_s - snaps[before].unix_s).max(0.0);
    // Counters: the value at each scrape from `before` to `after`, summing increases so that a
    // reset (a drop) counts from zero.
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    for (i, snap) in snaps[before..=after].iter().enumerate() {
        for s in snap.samples.iter().filter(|s| is_counter(&s.name)) {
            if !s.value.is_finite() {
                continue;
            }
            let k = key(s);
            if i == 0 {
                last.insert(k.clone(), s.value);
                out.counters.entry(k).or_insert(CounterStat {
                    delta: 0.0,
                    rate: 0.0,
                });
                continue;
            }
            let prev = last.insert(k.clone(), s.value);
            let inc = match prev {
                Some(p) if s.value >= p => s.value - p,
                Some(_) => s.value, // reset
                None => 0.0,        // first seen mid-window: no baseline
            };
            out.counters
                .entry(k)
                .or_insert(CounterStat {
                    delta: 0.0,
                    rate: 0.0,
                })
                .delta += inc;
        }
    }
    for c in out.counters.values_mut() {
        c.rate = if span > 0.0 { c.delta / span } else { 0.0 };
    }
    for (k, values) in window_gauge_samples(snaps, start, end) {
        let n = values.len();
        let sum: f64 = values.iter().sum();
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        out.gauges.insert(
            k,
            GaugeStat {
                mean: sum / n as f64,
                min,
                max,
                n,
            },
        );
    }
    out.engine = engine_of(snaps);
    out.fill_headline();
    out
}

/// The gauge values [`summarize`] uses, per `name{labels}` key in scrape order: every finite
/// non-counter sample (`_created` skipped) of the scrapes inside `[start, end]` (Unix s), or of
/// the last scrape at or before `start` (else the first) when none is inside. Used for the
/// AIPerf-shaped `server_metrics_export.json` percentiles (reference/agentx.md §4.4).
pub fn window_gauge_samples(
    snaps: &[Snapshot],
    start: f64,
    end: f64,
) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    if snaps.is_empty() {
        return out;
    }
    let before = snaps.iter().rposition(|s| s.unix_s <= start).unwrap_or(0);
    let inside: Vec<&Snapshot> = snaps
        .iter()
        .filter(|s| s.unix_s >= start && s.unix_s <= end)
        .collect();
    let gauge_snaps: Vec<&Snapshot> = if inside.is_empty() {
        snaps.iter().skip(before).take(1).collect()
    } else {
        inside
    };
    for snap in gauge_snaps {
        for s in snap.samples.iter() {
            if is_counter(&s.name) || s.name.ends_with("_created") || !s.value.is_finite() {
                continue;
            }
            out.entry(key(s)).or_default().push(s.value);
        }
    }
    out
}

fn engine_of(snaps: &[Snapshot]) -> String {
    let names = snaps.iter().flat_map(|s| s.samples.iter().map(|x| &x.name));
    for n in names {
        for e in ["vllm", "sglang", "llamacpp"] {
            if n.starts_with(e) && n[e.len()..].starts_with(':') {
                return e.to_string();
            }
        }
    }
    "unknown".into()
}

impl ServerMetricsSummary {
    /// Whether the server is `inferbench sim`: it exposes `inferbench_sim:` counters (the
    /// late-chunk ones, `crates/sim/src/metrics.rs`) that no real engine has.
    pub fn is_simulator(&self) -> bool {
        self.counters.keys().any(|k| k.starts_with(SIM_PREFIX))
    }

    /// Sum of counter deltas whose metric name (labels aside) is one of `names`, `None` if none.
    fn counter(&self, names: &[&str]) -> Option<f64> {
        let mut hit = false;
        let mut v = 0.0;
        for (k, c) in &self.counters {
            let name = k.split('{').next().unwrap_or(k);
            if names.contains(&name) {
                hit = true;
                v += c.delta;
            }
        }
        hit.then_some(v)
    }

    /// Gauge stats whose metric name is one of `names`, summed over label sets per statistic
    /// (mean of sums ≈ sum of means; max of the largest series).
    fn gauge(&self, names: &[&str]) -> Option<(f64, f64)> {
        let mut hit = false;
        let (mut mean, mut max) = (0.0, f64::NEG_INFINITY);
        for (k, g) in &self.gauges {
            let name = k.split('{').next().unwrap_or(k);
            if names.contains(&name) {
                hit = true;
                mean += g.mean;
                max = max.max(g.max);
            }
        }
        hit.then_some((mean, max))
    }

    fn fill_headline(&mut self) {
        // KV-cache usage: vLLM v1 / v0, SGLang, llama.cpp (all fractions 0–1).
        if let Some((mean, max)) = self.gauge(&[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
            "llamacpp:kv_cache_usage_ratio",
        ]) {
            self.kv_cache_usage_mean = Some(mean);
            self.kv_cache_usage_max = Some(max);
        }
        let hits = self.counter(&[
            "vllm:prefix_cache_hits_total",
            "vllm:prefix_cache_hits",
            "vllm:gpu_prefix_cache_hits_total",
        ]);
        let queries = self.counter(&[
            "vllm:prefix_cache_queries_total",
            "vllm:prefix_cache_queries",
            "vllm:gpu_prefix_cache_queries_total",
        ]);
        self.prefix_cache_hits = hits;
        self.prefix_cache_queries = queries;
        self.prefix_cache_hit_rate = match (hits, queries) {
            (Some(h), Some(q)) if q > 0.0 => Some(h / q),
            _ => self.gauge(&["sglang:cache_hit_rate"]).map(|g| g.0),
        };
        self.running_mean = self
            .gauge(&[
                "vllm:num_requests_running",
                "sglang:num_running_reqs",
                "llamacpp:requests_processing",
            ])
            .map(|g| g.0);
        self.waiting_mean = self
            .gauge(&[
                "vllm:num_requests_waiting",
                "sglang:num_queue_reqs",
                "llamacpp:requests_deferred",
            ])
            .map(|g| g.0);
        self.preemptions = self.counter(&["vllm:num_preemptions_total"]);
        self.prompt_tokens = self.counter(&[
            "vllm:prompt_tokens_total",
            "sglang:prompt_tokens_total",
            "llamacpp:prompt_tokens_total",
        ]);
        self.generation_tokens = self.counter(&[
            "vllm:generation_tokens_total",
            "sglang:generation_tokens_total",
            "llamacpp:tokens_predicted_total",
        ]);
        let accepted = self.counter(&["vllm:spec_decode_num_accepted_tokens_total"]);
        let drafts = self.counter(&["vllm:spec_decode_num_drafts_total"]);
        self.late_chunk_fraction = match (
            self.counter(&["inferbench_sim:late_token_chunks_total"]),
            self.counter(&["inferbench_sim:token_chunks_total"]),
        ) {
            (Some(late), Some(steps)) if steps > 0.0 => Some(late / steps),
            _ => None,
        };
        self.sim_time_scale = self.gauge(&["inferbench_sim:time_scale"]).map(|g| g.1);
        self.spec_acceptance_length = match (accepted, drafts) {
            (Some(a), Some(d)) if d > 0.0 => Some(1.0 + a / d),
            _ => self.gauge(&["sglang:spec_accept_length"]).map(|g| g.0),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::parse_prometheus;

    fn snap(phase: &str, t: f64, text: &str) -> Snapshot {
        Snapshot {
            phase: phase.into(),
            unix_s: t,
            samples: parse_prometheus(text),
        }
    }

    /// The sim's late-chunk counters give the share of its token chunks written late over the
    /// window; other engines have none.
    #[test]
    fn late_chunk_fraction_from_the_sims_counters() {
        let text = |steps: u32, late: u32| {
            format!(
                "inferbench_sim:token_chunks_total{{engine=\"0\"}} {steps}\n\
                 inferbench_sim:late_token_chunks_total{{engine=\"0\"}} {late}\n"
            )
        };
        let snaps = vec![
            snap("baseline", 99.0, &text(100, 1)),
            snap("profile", 102.0, &text(600, 31)),
            snap("final", 105.0, &text(1100, 251)),
        ];
        let s = summarize(&snaps, 100.0, 104.0);
        assert_eq!(s.late_chunk_fraction, Some(250.0 / 1000.0));
        assert_eq!(s.sim_time_scale, None);
        assert!(s.late_chunk_fraction.unwrap() > LATE_CHUNKS_MAX);
        let vllm = summarize(
            &[snap("baseline", 99.0, "vllm:num_requests_running 0\n")],
            100.0,
            104.0,
        );
        assert_eq!(vllm.late_chunk_fraction, None);
        assert!(s.is_simulator() && !vllm.is_simulator());
        assert!(from_simulator(&snaps) && !from_simulator(&[]));
        // Absent, it is not written: summaries of other engines keep their bytes.
        assert!(!serde_json::to_string(&vllm).unwrap().contains("late_chunk"));
    }

    /// Trial 32 F5: the sim's `--time-scale` gauge is read back, so bench can tell its
    /// wall-clock times from the modelled hardware's.
    #[test]
    fn sim_time_scale_from_the_sims_gauge() {
        let g = "inferbench_sim:time_scale{engine=\"0\",model_name=\"m\"} 10\n";
        let snaps = vec![
            snap("baseline", 99.0, g),
            snap("profile", 102.0, g),
            snap("final", 105.0, g),
        ];
        assert_eq!(summarize(&snaps, 100.0, 104.0).sim_time_scale, Some(10.0));
    }

    #[test]
    fn vllm_window_deltas_gauges_and_headline() {
        let snaps = vec![
            snap("baseline", 99.0, "vllm:prompt_tokens_total{engine=\"0\"} 1000\nvllm:prefix_cache_hits_total 0\nvllm:prefix_cache_queries_total 0\nvllm:kv_cache_usage_perc 0.0\nvllm:num_requests_running 0\nvllm:spec_decode_num_accepted_tokens_total 0\nvllm:spec_decode_num_drafts_total 0\n"),
            snap("profile", 101.0, "vllm:prompt_tokens_total{engine=\"0\"} 3000\nvllm:prefix_cache_hits_total 500\nvllm:prefix_cache_queries_total 2000\nvllm:kv_cache_usage_perc 0.25\nvllm:num_requests_running 4\nvllm:spec_decode_num_accepted_tokens_total 30\nvllm:spec_decode_num_drafts_total 20\n"),
            snap("profile", 103.0, "vllm:prompt_tokens_total{engine=\"0\"} 5000\nvllm:prefix_cache_hits_total 1000\nvllm:prefix_cache_queries_total 4000\nvllm:kv_cache_usage_perc 0.75\nvllm:num_requests_running 8\nvllm:spec_decode_num_accepted_tokens_total 90\nvllm:spec_decode_num_drafts_total 60\n"),
            snap("final", 105.0, "vllm:prompt_tokens_total{engine=\"0\"} 5000\nvllm:prefix_cache_hits_total 1000\nvllm:prefix_cache_queries_total 4000\nvllm:kv_cache_usage_perc 0.0\nvllm:num_requests_running 0\nvllm:spec_decode_num_accepted_tokens_total 90\nvllm:spec_decode_num_drafts_total 60\n"),
        ];
        let s = summarize(&snaps, 100.0, 104.0);
        assert_eq!(s.engine, "vllm");
        assert_eq!((s.scrapes, s.scrapes_in_window), (4, 2));
        assert_eq!(s.prompt_tokens, Some(4000.0));
        assert_eq!(
            s.counters["vllm:prompt_tokens_total{engine=\"0\"}"],
            CounterStat {
                delta: 4000.0,
                rate: 4000.0 / 6.0
            }
        );
        assert_eq!(s.prefix_cache_hit_rate, Some(0.25));
        assert_eq!(s.kv_cache_usage_max, Some(0.75));
        assert_eq!(s.kv_cache_usage_mean, Some(0.5));
        assert_eq!(s.running_mean, Some(6.0));
        assert_eq!(s.spec_acceptance_length, Some(2.5));
        assert_eq!(s.preemptions, None);
    }

    #[test]
    fn llamacpp_names_counter_reset_and_no_scrapes() {
        let snaps = vec![
            snap("baseline", 0.0, "llamacpp:tokens_predicted_total 100\nllamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n"),
            snap("profile", 2.0, "llamacpp:tokens_predicted_total 40\nllamacpp:requests_processing 4\nllamacpp:requests_deferred 2\n"),
            snap("final", 4.0, "llamacpp:tokens_predicted_total 90\nllamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n"),
        ];
        let s = summarize(&snaps, 1.0, 3.0);
        assert_eq!(s.engine, "llamacpp");
        // 100 → 40 is a restart: 40 counted from zero, then +50.
        assert_eq!(s.generation_tokens, Some(90.0));
        assert_eq!((s.running_mean, s.waiting_mean), (Some(4.0), Some(2.0)));
        assert_eq!(s.prefix_cache_hit_rate, None);
        let none = summarize(&[], 0.0, 1.0);
        assert_eq!((none.engine.as_str(), none.scrapes), ("unknown", 0));
    }
}
