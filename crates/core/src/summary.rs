//! `RunSummary`: one per concurrency point, in vLLM `--save-result` field names and units plus
//! namespaced extras; and InferenceX's `agg_<RESULT_FILENAME>.json` shape (DESIGN.md §3).
//!
//! Flow: the loadgen collects [`crate::RequestRecord`]s, calls [`summarize`] with a
//! [`SummaryContext`] describing the run, and writes the [`RunSummary`] as `summary.json` (the file
//! vLLM's `benchmark_serving.py --save-result` would have written, so InferenceX's
//! `process_result.py` consumes it unchanged). Given a [`JobIdentity`] (InferenceX's environment
//! contract, reference/inferencex-producer.md §3.2), [`inferencex_aggregate`] turns the summary into
//! the `agg_<RESULT_FILENAME>.json` object (§7.1).
//!
//! Units follow vLLM exactly: latency statistics in **ms** (`*_ms` keys), `duration` in **s**,
//! throughputs per **s**, per-request `ttfts`/`itls` in **s**, token counts in tokens. Our own
//! extras live under the single top-level key `"inferbench"` so no consumer that iterates the
//! top-level keys (InferenceX: every key ending in `ms` or containing `tpot`) sees them.

pub mod agentic;
mod inferencex;
pub mod keys;

pub use inferencex::{
    inferencex_aggregate, inferencex_metrics, AggregateError, IdentityError, JobIdentity,
    Parallelism, RoleTopology, ThroughputGpus, Topology,
};

use crate::metrics::{self, Distribution, GoodputSlo, Metric, Rates};
use crate::record::{ErrorClass, Phase, RequestRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything about a run that the records alone do not say (flags, identity, wall-clock times).
/// `Default` gives vLLM/InferenceX defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SummaryContext {
    /// `--backend` name as written to the result (`"openai"`, `"openai-chat"`, `"vllm"`).
    pub backend: String,
    /// `--model` (vLLM `model_id`; InferenceX copies it into the aggregate's `model`).
    pub model_id: String,
    /// Tokenizer identity (`"o200k_base"`, or the `tokenizer.json` path).
    pub tokenizer_id: String,
    /// vLLM `best_of`; always 1 for us.
    pub best_of: u32,
    /// `--num-prompts` as requested (not the completed count).
    pub num_prompts: u64,
    /// `--request-rate` in requests/s; `None` = `inf` (written as the string `"inf"`).
    pub request_rate: Option<f64>,
    /// `--burstiness` (gamma shape; 1 = Poisson).
    pub burstiness: f64,
    /// `--max-concurrency`; `None` = unlimited (InferenceX requires it set).
    pub max_concurrency: Option<u32>,
    /// `--percentile-metrics`: which of ttft/tpot/itl/e2el get vLLM keys (default all four).
    pub percentile_metrics: Vec<Metric>,
    /// `--metric-percentiles` (default 90, 99, 99.9), each in `[0, 100]`.
    pub metric_percentiles: Vec<f64>,
    /// `--goodput` SLOs (ms); empty = `"request_goodput:": null`.
    pub goodput: GoodputSlo,
    /// `--save-detailed`: also write `ttfts`, `itls`, `generated_texts`, `errors`.
    pub save_detailed: bool,
    /// vLLM `date`, `%Y%m%d-%H%M%S` local time of the run start (the caller formats it; core
    /// reads no clock).
    pub date: String,
    /// Profiling window start as unix seconds (InferenceX's power window), when known.
    pub benchmark_start_time_unix: Option<f64>,
    /// Profiling window end as unix seconds, when known.
    pub benchmark_end_time_unix: Option<f64>,
    /// Overrides `duration` (s); by default it is the profiling window from the records (first
    /// send to last completion, DESIGN.md §4).
    pub duration_s: Option<f64>,
    /// True when the run was cut short by Ctrl-C / SIGTERM: copied into the extras.
    pub interrupted: bool,
    /// Why the run ended (completed, interrupted by a signal, server unreachable).
    pub stop_reason: StopReason,
    /// Profile requests that were planned but never sent because the run stopped early
    /// (0 when it completed, or in `--duration` mode).
    pub requests_not_sent: u64,
    /// Extra top-level `KEY: VALUE` strings (vLLM `--metadata`), written before the metrics.
    pub metadata: BTreeMap<String, String>,
}

impl Default for SummaryContext {
    fn default() -> Self {
        SummaryContext {
            backend: "openai".into(),
            model_id: String::new(),
            tokenizer_id: "o200k_base".into(),
            best_of: 1,
            num_prompts: 0,
            request_rate: None,
            burstiness: 1.0,
            max_concurrency: None,
            percentile_metrics: metrics::DEFAULT_PERCENTILE_METRICS.to_vec(),
            metric_percentiles: metrics::DEFAULT_PERCENTILES.to_vec(),
            goodput: GoodputSlo::default(),
            save_detailed: false,
            date: String::new(),
            benchmark_start_time_unix: None,
            benchmark_end_time_unix: None,
            duration_s: None,
            interrupted: false,
            stop_reason: StopReason::Completed,
            requests_not_sent: 0,
            metadata: BTreeMap::new(),
        }
    }
}

/// Why a run ended, written as `inferbench.stop_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every planned request was sent and finished (or the `--duration` ended).
    #[default]
    Completed,
    /// Ctrl-C / SIGTERM: results cover the finished requests.
    Interrupted,
    /// Only connect failures (a streak of them, or every request of a short run): the run
    /// stopped early; results cover the finished requests.
    ServerUnreachable,
    /// The run stopped itself on a failure gate (AgentX: the failed-request threshold was
    /// crossed, or a root warmup failed; bench: every warmup failed, so the profile was not
    /// sent); results cover the finished requests.
    Aborted,
}

/// The `failed_reason` of a point whose run stopped with `stop` before any profile request
/// succeeded (`failed`: the profile requests that failed), for a summary that names none (the
/// store reads such a file with this same rule). One status rule for every writer and view
/// (issue 39 §9; fresh tester's finding 1: a bench interrupted before any request finished
/// was `failed` and also `invalid_reason: "cut short: interrupted"`): a point that measured
/// nothing is **failed**, its cause this text (or the writer's own `failed_reason`), and it
/// has no `invalid_reason`, cut short or not; a point that measured something is invalid
/// when it has an invalid reason (`cut short: …` included), else ok.
pub fn nothing_measured_cause(stop: Option<StopReason>, failed: u64) -> String {
    match stop {
        Some(StopReason::ServerUnreachable) => "server unreachable: nothing measured".into(),
        Some(StopReason::Interrupted) if failed == 0 => INTERRUPTED_BEFORE_ANY.into(),
        Some(StopReason::Interrupted) => {
            format!("interrupted before any request succeeded ({failed} failed): nothing measured")
        }
        Some(StopReason::Aborted) if failed == 0 => {
            "stopped on a failure gate before any request finished".into()
        }
        _ if failed > 0 => "no successful request: every one failed".into(),
        _ => "no successful request".into(),
    }
}

/// [`nothing_measured_cause`] of a run interrupted before any request finished (and none
/// failed): the text `ingest` counts as an interrupted point.
pub const INTERRUPTED_BEFORE_ANY: &str = "interrupted before any request finished";

impl StopReason {
    /// The snake_case name (`"server_unreachable"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::Interrupted => "interrupted",
            StopReason::ServerUnreachable => "server_unreachable",
            StopReason::Aborted => "aborted",
        }
    }
}

/// `request_rate` as vLLM writes it: a number, or the string `"inf"` for an unlimited rate.
mod rate_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(r) if r.is_finite() => s.serialize_f64(*r),
            _ => s.serialize_str("inf"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum R {
            N(f64),
            S(String),
            Null(()),
        }
        Ok(match R::deserialize(d)? {
            R::N(x) if x.is_finite() => Some(x),
            R::S(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
            _ => None,
        })
    }
}

/// One run (concurrency point) in vLLM's `--save-result` JSON shape (field names, order and
/// units), plus the `inferbench` extras. `Serialize` writes exactly the file InferenceX's
/// `process_result.py` reads; `Deserialize` also reads vLLM/InferenceX-client result files (the
/// extras default when absent).
///
/// Each latency statistic is held once, typed: the extras' distributions (`inferbench.ttft_ms`,
/// `tpot_ms`, `itl_ms`, `e2el_ms`, ms). vLLM's keys among [`RunSummary::metrics`]
/// (`p99_ttft_ms`, …) are the vLLM-compatible block generated from them: [`RunSummary::latency`]
/// reads each from its distribution, and `Serialize` writes the block through
/// [`RunSummary::vllm_block`], so the file's two blocks cannot disagree. (A foreign file's
/// block, whose extras hold no sample, is its own.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct RunSummary {
    /// `%Y%m%d-%H%M%S` run start.
    #[serde(default)]
    pub date: String,
    /// Backend name.
    #[serde(default)]
    pub backend: String,
    /// Served model name (`--model`).
    #[serde(default)]
    pub model_id: String,
    /// Tokenizer identity.
    #[serde(default)]
    pub tokenizer_id: String,
    /// Always 1.
    #[serde(default)]
    pub best_of: u32,
    /// Requested number of prompts.
    #[serde(default)]
    pub num_prompts: u64,
    /// Requests/s, `None` = `"inf"`.
    #[serde(with = "rate_serde", default)]
    pub request_rate: Option<f64>,
    /// Gamma shape of inter-arrival times.
    #[serde(default)]
    pub burstiness: f64,
    /// Concurrency cap (`null` when unlimited).
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// Profiling window length, seconds.
    #[serde(default)]
    pub duration: f64,
    /// Profiling window start, unix seconds (InferenceX fork field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_start_time_unix: Option<f64>,
    /// Profiling window end, unix seconds (InferenceX fork field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_end_time_unix: Option<f64>,
    /// Successful profile requests.
    #[serde(default)]
    pub completed: u64,
    /// Σ client-side prompt tokens of successful requests.
    #[serde(default)]
    pub total_input_tokens: u64,
    /// Σ completion tokens of successful requests.
    #[serde(default)]
    pub total_output_tokens: u64,
    /// completed / duration, requests/s.
    #[serde(default)]
    pub request_throughput: f64,
    /// Goodput, requests/s; `null` without `--goodput`. The key has a trailing colon (sic, vLLM).
    #[serde(rename = "request_goodput:", default)]
    pub request_goodput: Option<f64>,
    /// total_output_tokens / duration, tokens/s.
    #[serde(default)]
    pub output_throughput: f64,
    /// (input + output) / duration, tokens/s.
    #[serde(default)]
    pub total_token_throughput: f64,
    /// Client-side prompt tokens per profile request (failures included), request order.
    #[serde(default)]
    pub input_lens: Vec<u32>,
    /// Completion tokens per profile request (0 for failures), request order.
    #[serde(default)]
    pub output_lens: Vec<u32>,
    /// `--save-detailed`: TTFT per request in **seconds** (0 for failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfts: Option<Vec<f64>>,
    /// `--save-detailed`: inter-chunk gaps per request in **seconds**.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itls: Option<Vec<Vec<f64>>>,
    /// `--save-detailed`: visible output text per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_texts: Option<Vec<String>>,
    /// `--save-detailed`: error per request (`""` on success, else `"<class>: <message>"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    /// vLLM `--metadata` pairs and the per-metric statistics, in vLLM's order:
    /// `mean_<m>_ms`, `median_<m>_ms`, `std_<m>_ms`, `p<q>_<m>_ms` for each selected metric `m`
    /// (values in ms). Any other unknown top-level key of a read file lands here too.
    #[serde(flatten)]
    pub metrics: serde_json::Map<String, serde_json::Value>,
    /// Our extras (absent in files from other tools).
    #[serde(default)]
    pub inferbench: Extras,
}

impl Serialize for RunSummary {
    /// The summary as vLLM's file plus the extras, with vLLM's latency keys written from the
    /// typed distributions ([`RunSummary::vllm_block`]).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let block = self.vllm_block();
        if block == self.metrics {
            return RunSummary::serialize(self, s);
        }
        let mut written = self.clone();
        written.metrics = block;
        RunSummary::serialize(&written, s)
    }
}

impl<'de> Deserialize<'de> for RunSummary {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RunSummary::deserialize(d)
    }
}

impl RunSummary {
    /// A numeric top-level metric by its vLLM key (`"p99_ttft_ms"`, …); a latency statistic's
    /// from its distribution ([`RunSummary::latency`]).
    pub fn metric(&self, key: &str) -> Option<f64> {
        let given = self.metrics.get(key).and_then(serde_json::Value::as_f64)?;
        Some(match keys::LatencyStat::from_vllm_key(key) {
            Some(stat) => self.latency(stat, given),
            None => given,
        })
    }

    /// The value of latency statistic `stat` in **ms**: its extras distribution's
    /// ([`Extras::latency`], the one source) when that holds samples and the statistic,
    /// else `given`, the value under its vLLM key (a foreign file's, whose extras are empty).
    pub fn latency(&self, stat: keys::LatencyStat, given: f64) -> f64 {
        let d = self.inferbench.latency(stat.metric);
        match d.count {
            0 => None,
            _ => stat.stat.of(d),
        }
        .unwrap_or(given)
    }

    /// The top-level keys as written (vLLM's block): [`RunSummary::metrics`] in their order,
    /// each latency statistic's value from its distribution ([`RunSummary::latency`]), every
    /// other key (`--metadata` strings, unknown keys) as it is.
    pub fn vllm_block(&self) -> serde_json::Map<String, serde_json::Value> {
        (self.metrics.iter())
            .map(|(k, v)| {
                let typed = keys::LatencyStat::from_vllm_key(k)
                    .zip(v.as_f64())
                    .map(|(stat, given)| serde_json::Value::from(self.latency(stat, given)));
                (k.clone(), typed.unwrap_or_else(|| v.clone()))
            })
            .collect()
    }

    /// The latency statistics among the top-level keys, in the file's order, each with its
    /// value in **ms** ([`RunSummary::latency`]): the keys [`keys::LatencyStat::from_vllm_key`]
    /// recognises (vLLM's `<stat>_<metric>_ms`) with a numeric value. Every other key
    /// (`--metadata` strings, a numeric `foo_ms`) is not a latency.
    pub fn latency_stats(&self) -> impl Iterator<Item = (keys::LatencyStat, f64)> + '_ {
        self.metrics.iter().filter_map(|(k, v)| {
            let stat = keys::LatencyStat::from_vllm_key(k)?;
            Some((stat, self.latency(stat, v.as_f64()?)))
        })
    }

    /// Fraction of profile requests that failed, `failed / (completed + failed)`; 0 without
    /// requests. (vLLM's exit gate uses `1 − completed/num_prompts`; see
    /// [`RunSummary::failure_rate_vs_requested`].)
    pub fn error_rate(&self) -> f64 {
        self.inferbench.error_rate
    }

    /// vLLM / InferenceX exit gate quantity `1 − completed / num_prompts` (0 when `num_prompts`
    /// is 0). The run fails when this exceeds `--max-error-rate` (default 0.05).
    pub fn failure_rate_vs_requested(&self) -> f64 {
        if self.num_prompts == 0 {
            return 0.0;
        }
        1.0 - self.completed as f64 / self.num_prompts as f64
    }
}

/// What the early-stop rule of `sweep --adaptive` read of one closed-loop point's noise
/// (issue 43; `inferbench_loadgen::early_stop`): the sample standard deviation of its steady
/// batch means, relative to their mean and scaled to batches of one round (conc requests: a
/// batch of k rounds has a variance 1/k of one round's), for each chart metric, and its degrees
/// of freedom (batches − 1). Read at the check that stopped the point, else at the last check
/// before its drain.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EarlyStopNoise {
    /// The point's concurrency (requests per round).
    pub conc: u64,
    /// Relative standard deviation of one round's median TPOT (0.01 = 1 %).
    pub tpot_round_sd: f64,
    /// Relative standard deviation of one round's throughput per user (tokens over summed
    /// E2EL; 0.01 = 1 %).
    pub rate_round_sd: f64,
    /// Degrees of freedom of both: the batches read, less one.
    pub dof: u64,
}

/// inferbench's own measurements, under `"inferbench"` in the result JSON. Latencies in ms,
/// rates per second, interactivity in tokens/s/user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Extras {
    /// Version of this extras layout (1).
    pub schema_version: u32,
    /// Profiling window on the run clock, ns since run start: `[first send, last completion]`.
    pub profile_window_ns: Option<[u64; 2]>,
    /// Warmup records seen (excluded from every metric).
    pub warmups: u64,
    /// Profile requests that failed. Requests the run itself cancelled (Ctrl-C/SIGTERM while
    /// they were in flight or waiting for a slot, error class `cancelled`) are not failures:
    /// they are [`Extras::cancelled_by_user`].
    pub failed: u64,
    /// failed / (successful + failed) profile requests (0 without any); requests cancelled by
    /// the run are in neither count.
    pub error_rate: f64,
    /// Profile requests cancelled by the run before they finished (Ctrl-C/SIGTERM, or the run
    /// stopping itself: see `stop_reason`): kept in the records with error class `cancelled`,
    /// excluded from `failed` and `error_rate`. The name is kept for compatibility.
    pub cancelled_by_user: u64,
    /// Failures by error class (`connect`, `http_status`, `timeout_idle`, …); `cancelled` is
    /// never a key (see `cancelled_by_user`).
    pub errors_by_class: BTreeMap<String, u64>,
    /// Successful requests by where `completion_tokens` came from: `{"server": n, "tokenizer": n}`.
    pub completion_tokens_source: BTreeMap<String, u64>,
    /// The run was cut short by a signal; results cover the finished requests only.
    pub interrupted: bool,
    /// Why the run ended (`completed`, `interrupted`, `server_unreachable`, `aborted`).
    pub stop_reason: StopReason,
    /// Profile requests planned but never sent because the run stopped early.
    pub requests_not_sent: u64,
    /// The point ran under `sweep --adaptive`'s early-stop rule (issue 43): its profile could
    /// end once its metrics were known to within `adaptive_tolerance` at 95 % confidence,
    /// before InferenceX's 10 × conc prompts. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
    /// Relative tolerance of the early-stop rule (0.02 = 2 %), with `adaptive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_tolerance: Option<f64>,
    /// Profile prompts the point sent, with `adaptive` (`num_prompts` equals it when the rule
    /// stopped the point early; otherwise every planned prompt was sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_used: Option<u64>,
    /// The early-stop rule's own noise reading of this point (issue 43, with `adaptive`): the
    /// relative spread of its steady rounds' means, which the sweep pools into the next points'
    /// noise term (`inferbench_loadgen::early_stop::NoisePool`). Absent without `adaptive`,
    /// and when the rule never had two steady batches to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stop_noise: Option<EarlyStopNoise>,
    /// Why a `--duration` run stopped sending before its duration ended, when it did so
    /// itself (issue 39): "stopped after N requests: the records kept would outgrow ulimit -v
    /// (X KiB)" — the records a closed loop keeps until its summary grow with every request,
    /// so under an address-space limit the run stops sending when they reach what the limit
    /// holds, lets its requests in flight finish and writes its summary as at the end of its
    /// duration. `stop_reason` stays `completed` and the point stays valid if its numbers are
    /// (its window is the time it sent). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_reason: Option<String>,
    /// Warmup requests that failed (they are excluded from every metric, but counted here);
    /// warmups cancelled by the run are `warmup_cancelled_by_user` instead.
    pub warmup_failed: u64,
    /// Warmup requests cancelled by the run (Ctrl-C/SIGTERM) before they finished.
    pub warmup_cancelled_by_user: u64,
    /// Warmup failures by error class (`cancelled` never a key).
    pub warmup_errors_by_class: BTreeMap<String, u64>,
    /// One sample error message per error class (the first profile failure of the class, else
    /// the first warmup failure), so the cause is in the summary, not only in the records.
    /// Cancellations by the run have none.
    pub error_samples: BTreeMap<String, String>,
    /// Profile requests carrying each anomaly code (`usage_exceeds_max_tokens`,
    /// `usage_below_stream`, `osl_mismatch`, `isl_mismatch`, `output_exceeds_max_tokens`,
    /// `not_streamed`, `usage_invalid`, `usage_above_stream`, `extra_choice`, `output_not_kept`;
    /// all ten always present), see [`crate::anomaly`].
    pub anomalies: BTreeMap<String, u64>,
    /// Successful profile requests with at least one anomaly.
    pub anomalous_requests: u64,
    /// anomalous_requests / successful profile requests (0 without any); the quantity
    /// `--max-anomaly-rate` gates.
    pub anomaly_rate: f64,
    /// TTFT (any channel), ms.
    pub ttft_ms: Distribution,
    /// TTFO: first visible output token (reasoning excluded), ms.
    pub ttfo_ms: Distribution,
    /// TPOT (request-weighted, first token excluded), ms.
    pub tpot_ms: Distribution,
    /// ITL (per chunk, pooled), ms.
    pub itl_ms: Distribution,
    /// E2EL (send → last token), ms.
    pub e2el_ms: Distribution,
    /// Interactivity = 1000 / TPOT statistic (`mean`, `median`, `p90`, …), tokens/s/user;
    /// `null` where the statistic is 0.
    pub interactivity: BTreeMap<String, Option<f64>>,
    /// E2E-normalized interactivity `1000 / percentile_q(E2EL_i/OSL_i)` at q = 75 and 90
    /// (`{"p75": …, "p90": …}`), tokens/s/user.
    pub e2e_normalized_interactivity: BTreeMap<String, Option<f64>>,
    /// Completion tokens per token-bearing chunk, per request.
    pub tokens_per_chunk: Distribution,
    /// The verdict when the run's chunks carry several tokens each (median tokens per chunk ≥
    /// [`metrics::MULTI_TOKEN_MEDIAN`]): `itl_ms` and `tpot_ms` are then gaps between chunks of
    /// several tokens (`itl_is: chunk_gap`), not per-token latencies. Absent for about one
    /// token per chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_token_chunks: Option<metrics::MultiTokenChunks>,
    /// Achieved OSL: completion tokens per successful profile request, tokens
    /// ([`metrics::achieved_osl`]); stored as `mean_achieved_osl`, `median_achieved_osl`,
    /// `p90_achieved_osl`, `p99_achieved_osl`. Count 0 in summaries written before it.
    pub achieved_osl: Distribution,
    /// Achieved ISL: prompt tokens per successful profile request (the server's count where it
    /// gave one), tokens ([`metrics::achieved_isl`]); stored as `mean_achieved_isl`,
    /// `median_achieved_isl`, `p90_achieved_isl`, …. Count 0 in summaries written before it.
    pub achieved_isl: Distribution,
    /// Client queue time (sent − scheduled: the arrival in open loop, the moment the slot became
    /// free in closed loop), ms, every profile request.
    pub client_queue_ms: Distribution,
    /// E2EL measured from the scheduled time (coordinated omission visible), ms.
    pub e2el_from_schedule_ms: Distribution,
    /// Schedule lag (released − scheduled), ms; `None` when the loadgen recorded no release time.
    pub schedule_lag_ms: Option<Distribution>,
    /// Configured, scheduled, sent and achieved request rates.
    pub rates: Rates,
    /// Requests in flight achieved by the client (mean over the window, and peak): a client
    /// self-check against `--max-concurrency`.
    pub concurrency: metrics::Concurrency,
    /// `--save-requests`: the records file, relative to the result file's directory when it is
    /// there, else as given (ingest reads it with the result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_file: Option<String>,
    /// Whether the client, not the server, limited a closed-loop run (set by the load
    /// generator, which measures its own CPU; absent for paced or uncapped runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientCheck>,
    /// The server's own view of the profiling window from its `/metrics` (absent when the
    /// server has none or scraping was off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<crate::server_metrics::ServerMetricsSummary>,
    /// Measured GPU power over the profiling window (absent when no sampler ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerSummary>,
    /// `--allow-empty-content`: the first content chunk ended TTFT even when its text was
    /// empty (absent when off, the default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_empty_content: bool,
    /// The HTTP proxy that carried the requests (`http://host:port`, credentials left out;
    /// from `http_proxy` / `HTTP_PROXY`), absent when they went directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// `--tls-ca FILE`: the PEM file of extra trusted CAs the `https://` requests verified
    /// against (the path as given), absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ca: Option<String>,
    /// `--insecure`: the server's certificate was not verified (absent when off, the
    /// default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tls_insecure: bool,
    /// Per-request header templates the run sent (`--header-template`, `--dp-rank-roundrobin`
    /// as `X-data-parallel-rank: {i%N}`), `NAME: VALUE` each; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header_templates: Vec<String>,
    /// Why the run's timings are not a valid measurement although it completed, `; `-joined:
    /// the prefix cache served a random-dataset run's prompts, the server fell behind its own
    /// schedule ([`crate::server_metrics::ServerMetricsSummary::late_chunk_fraction`]), or the
    /// client could not keep up ([`ClientCheck::client_bound`]); the store keeps such a point
    /// off every frontier, as a run cut short. Absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Why the point is *failed* rather than invalid (issue 39 §9): nothing was measured, no
    /// profile request succeeded (`nothing was measured: none of the N profile requests
    /// succeeded (N failed)`). One status for this case everywhere: `status.json` says `state:
    /// failed` with this cause, the store keeps it as the point's `error` (listed by `report
    /// --include-failed`, never on a frontier, `status: "failed"` in the dashboard's API), and
    /// it is not repeated in `invalid_reason`. Absent when something was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_reason: Option<String>,
    /// The server's settings and their fingerprint (what the server reported of itself, or
    /// the launch settings of an engine the runner started): the store draws one curve per
    /// configuration and fingerprint ([`crate::fingerprint`]). Absent when nothing was learnt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::fingerprint::ServerFingerprint>,
}

/// The client's self-check of a closed-loop run with `--max-concurrency` (`inferbench.client`):
/// did it hold the requested concurrency, and was it out of CPU? InferenceX-style results are
/// only valid when `client_bound` is false.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClientCheck {
    /// `--max-concurrency`.
    pub requested: u32,
    /// [`metrics::Concurrency::mean_in_flight_sending`] / `requested` (1 = held exactly).
    pub held_ratio: f64,
    /// The client process's CPU over the profile phase, s (user + system, all threads).
    pub cpu_s: f64,
    /// `cpu_s` / the profile phase's wall time: cores the client kept busy. Noise on a profile
    /// shorter than [`ClientCheck::MIN_WALL_S`] (CPU time comes in 10 ms steps, so a 1.3 ms
    /// profile can read 6 of 2 cores); the console shows "–" then.
    pub cpu_cores: f64,
    /// Cores available to the process (`available_parallelism`).
    pub cores_available: u32,
    /// [`metrics::Concurrency::slots_busy_sending`] / `requested`: the client's slots kept
    /// busy, each request until it was read; above `held_ratio` by the time responses waited
    /// for the client (absent with read-time stamps, where the two are one figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_busy_ratio: Option<f64>,
    /// Time the client's threads were runnable but waited for a CPU over the profile phase, s
    /// (Linux `/proc/self/task/*/schedstat`, summed over threads): other processes held the
    /// cores. Absent where the kernel does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runqueue_wait_s: Option<f64>,
    /// Held below [`ClientCheck::HELD_MIN`] while using at least [`ClientCheck::BUSY_MIN`] of
    /// its cores, or while responses waited to be read ([`ClientCheck::slots_busy_ratio`] above
    /// `held_ratio` by at least 1 − [`ClientCheck::HELD_MIN`]: the client's slots were busier
    /// than the server): the client, not the server, limited the run. Never on a profile
    /// shorter than [`ClientCheck::MIN_WALL_S`].
    pub client_bound: bool,
}

impl ClientCheck {
    /// Below this held ratio the requested concurrency was not held (issue 14: within 1 %).
    pub const HELD_MIN: f64 = 0.99;
    /// At or above this share of its cores the client counts as saturated.
    pub const BUSY_MIN: f64 = 0.9;
    /// A closed loop whose requests spent at least this share of a slot's cycle waiting to be
    /// sent (connecting) was not the requested concurrency ([`ClientCheck::queue_note`]):
    /// 10 %, well above the ~0.5 % a fresh connection costs a 15 ms request on loopback, so
    /// the client's own per-request time does not trip it.
    pub const QUEUE_SHARE_MAX: f64 = 0.1;
    /// Profiles shorter than this (s) get no verdict: process CPU time comes in 10 ms steps
    /// and a few requests' timing is noise (a 19 ms run was judged client-bound: trial).
    pub const MIN_WALL_S: f64 = 1.0;

    /// Judges a run: `mean_in_flight` while sending (arrival times), `slots_busy` the same
    /// with each request counted until it was read (`None` with read-time stamps), `cpu_s`
    /// over `wall_s` seconds.
    pub fn judge(
        requested: u32,
        mean_in_flight: f64,
        slots_busy: Option<f64>,
        cpu_s: f64,
        wall_s: f64,
        cores_available: u32,
    ) -> ClientCheck {
        let req = f64::from(requested.max(1));
        let held_ratio = mean_in_flight / req;
        let slots_busy_ratio = slots_busy.map(|s| s / req);
        let cpu_cores = if wall_s > 0.0 { cpu_s / wall_s } else { 0.0 };
        let busy = cpu_cores >= Self::BUSY_MIN * f64::from(cores_available.max(1));
        // Responses waited to be read for at least 1 % of the requested slots on average.
        let waited = slots_busy_ratio.is_some_and(|s| s - held_ratio >= 1.0 - Self::HELD_MIN);
        ClientCheck {
            requested,
            held_ratio,
            cpu_s,
            cpu_cores,
            cores_available,
            slots_busy_ratio,
            runqueue_wait_s: None,
            client_bound: wall_s >= Self::MIN_WALL_S
                && held_ratio < Self::HELD_MIN
                && (busy || waited),
        }
    }
}

impl ClientCheck {
    /// A run that did not hold its concurrency because its requests waited to be sent: not
    /// [`ClientCheck::client_bound`], held below [`ClientCheck::HELD_MIN`] over a profile of at
    /// least [`ClientCheck::MIN_WALL_S`] (`wall_s`), and the mean client queue time
    /// (`queue_ms`: a free slot to the request's first byte on the wire, ms) is at least
    /// [`ClientCheck::QUEUE_SHARE_MAX`] of a slot's cycle (`queue_ms` + the mean E2EL
    /// `e2el_ms`, ms). The time went to connecting (a server slow to accept: trial 32, a listen backlog of
    /// 5 overflowed and the kernel's 1 s SYN retry held 8 streams at 0.5 in flight) or to a
    /// re-send. Returns the note that makes the point invalid, `None` when the rule does not
    /// hold.
    pub fn queue_note(&self, wall_s: f64, queue_ms: f64, e2el_ms: f64) -> Option<String> {
        let cycle_ms = queue_ms + e2el_ms;
        let share = if cycle_ms > 0.0 {
            queue_ms / cycle_ms
        } else {
            0.0
        };
        let not_held = !self.client_bound
            && wall_s >= Self::MIN_WALL_S
            && self.held_ratio < Self::HELD_MIN
            && share >= Self::QUEUE_SHARE_MAX;
        not_held.then(|| {
            format!(
                "the requested concurrency was not held: the server had {:.1} of the {} \
                 requested requests in flight, because each request waited {queue_ms:.1} ms on \
                 average between a free slot and its send ({:.0} % of the time a slot was \
                 busy), connecting to a server slow to accept connections (a small listen \
                 backlog?) or re-sending on a fresh connection; the point is invalid, kept off \
                 frontiers unless --include-invalid",
                self.held_ratio * f64::from(self.requested),
                self.requested,
                share * 100.0
            )
        })
    }

    /// The note a client-bound run prints: what the client had in flight against what was
    /// asked, and the cause with its remedy. Out of CPU (at least [`ClientCheck::BUSY_MIN`] of
    /// its cores): fewer streams per client process, or more cores. Kept from its CPU (its
    /// threads waited for one at least a tenth of the profile's wall time, `wall_s`): other
    /// processes held the cores, so an idle machine or cores of its own. Neither: responses
    /// waited to be read with CPU to spare, a stall in the client (trial 9: a quickstart at
    /// 0.27 of 2 cores was told to run fewer streams).
    pub fn note(&self, wall_s: f64) -> String {
        let req = f64::from(self.requested);
        let waited = self.slots_busy_ratio.map_or(String::new(), |s| {
            format!(
                " (its slots were busy {:.1}: responses waited to be read)",
                s * req
            )
        });
        let busy = self.cpu_cores >= Self::BUSY_MIN * f64::from(self.cores_available.max(1));
        let kept = self
            .runqueue_wait_s
            .filter(|w| wall_s > 0.0 && *w >= 0.1 * wall_s);
        let cause = if busy {
            format!(
                "it was out of CPU ({:.2} of its {} cores busy): run fewer streams per client \
                 process, or give it more cores",
                self.cpu_cores, self.cores_available
            )
        } else if let Some(w) = kept {
            format!(
                "it used {:.2} of its {} cores, and its threads waited {w:.1} s for a CPU in a \
                 {wall_s:.1} s profile: other processes on this machine held the cores; run it on \
                 an idle machine or on cores of its own",
                self.cpu_cores, self.cores_available
            )
        } else {
            format!(
                "it used {:.2} of its {} cores{}: it stalled with CPU to spare (a slow disk \
                 for --save-requests, a throttled container, or a client bug worth reporting)",
                self.cpu_cores,
                self.cores_available,
                self.runqueue_wait_s
                    .map_or(String::new(), |w| format!(" and waited {w:.1} s for one"))
            )
        };
        format!(
            "the client, not the server, limited this run: the server had {:.1} of the {} \
             requested requests in flight{waited}; {cause} (client_bound: true; InferenceX \
             results are valid only without it: the point is invalid, kept off frontiers unless \
             --include-invalid)",
            self.held_ratio * req,
            self.requested
        )
    }
}

/// Measured GPU power of a point (`inferbench.power`), validated by InferenceX's rules
/// (reference/inferencex-producer.md §7.3; the full audit is `power_validation.json`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PowerSummary {
    /// The sampler (`nvidia-smi`, `amd-smi`).
    pub source: String,
    /// Every validity rule held.
    pub valid: bool,
    /// Reason codes when not valid.
    pub reasons: Vec<String>,
    /// GPUs observed.
    pub gpus: usize,
    /// When valid: `avg_power_w` (W per GPU), `avg_total_gpu_power_w` (W), `total_gpu_energy_j`
    /// (J), `joules_per_successful_query`, `joules_per_input_token`, `joules_per_output_token`,
    /// `joules_per_total_token` (J).
    pub metrics: BTreeMap<String, f64>,
    /// Σ per-GPU increase of the GPUs' own energy counters (NVML total energy, amd-smi
    /// accumulators) from the sampler's start to its stop, joules: the whole stream, not the
    /// window; beside the trapezoid, never instead of it. `None` without counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_counter_j: Option<f64>,
    /// The counter delta agrees with the stream's trapezoid within 5 % (InferenceX's advisory
    /// `accumulator_check`; never affects `valid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_counter_within_tolerance: Option<bool>,
}

impl Extras {
    /// The distribution of latency metric `m`, ms (`ttft_ms`, `tpot_ms`, `itl_ms`, `e2el_ms`,
    /// `ttfo_ms`).
    pub fn latency(&self, m: Metric) -> &Distribution {
        match m {
            Metric::Ttft => &self.ttft_ms,
            Metric::Tpot => &self.tpot_ms,
            Metric::Itl => &self.itl_ms,
            Metric::E2el => &self.e2el_ms,
            Metric::Ttfo => &self.ttfo_ms,
        }
    }

    /// The extras layout this build writes (`inferbench.schema_version`, the version of our
    /// `summary.json`, core::artifacts); a reader refuses a newer one.
    pub const SCHEMA_VERSION: u32 = 1;
}

impl Default for Extras {
    fn default() -> Self {
        Extras {
            schema_version: Extras::SCHEMA_VERSION,
            profile_window_ns: None,
            warmups: 0,
            failed: 0,
            error_rate: 0.0,
            cancelled_by_user: 0,
            errors_by_class: BTreeMap::new(),
            completion_tokens_source: BTreeMap::new(),
            interrupted: false,
            stop_reason: StopReason::Completed,
            requests_not_sent: 0,
            adaptive: false,
            adaptive_tolerance: None,
            prompts_used: None,
            early_stop_noise: None,
            stopped_reason: None,
            warmup_failed: 0,
            warmup_cancelled_by_user: 0,
            warmup_errors_by_class: BTreeMap::new(),
            error_samples: BTreeMap::new(),
            anomalies: crate::anomaly::counts(&[]),
            anomalous_requests: 0,
            anomaly_rate: 0.0,
            ttft_ms: Distribution::default(),
            ttfo_ms: Distribution::default(),
            tpot_ms: Distribution::default(),
            itl_ms: Distribution::default(),
            e2el_ms: Distribution::default(),
            interactivity: BTreeMap::new(),
            e2e_normalized_interactivity: BTreeMap::new(),
            tokens_per_chunk: Distribution::default(),
            multi_token_chunks: None,
            achieved_osl: Distribution::default(),
            achieved_isl: Distribution::default(),
            client_queue_ms: Distribution::default(),
            e2el_from_schedule_ms: Distribution::default(),
            schedule_lag_ms: None,
            rates: Rates::default(),
            concurrency: metrics::Concurrency::default(),
            requests_file: None,
            allow_empty_content: false,
            proxy: None,
            tls_ca: None,
            tls_insecure: false,
            header_templates: Vec::new(),
            client: None,
            server_metrics: None,
            power: None,
            invalid_reason: None,
            failed_reason: None,
            server: None,
        }
    }
}

/// Builds the [`RunSummary`] of the **profile-phase** records (warmups are counted in the extras
/// and otherwise ignored). Records may come in any order; the per-request lists follow
/// `request_id`. Pure and total: any records (none, all failed, zero duration) give a summary
/// without NaN or infinities (empty statistics are 0, like vLLM's `np.mean(x or 0)`).
pub fn summarize(records: &[RequestRecord], ctx: &SummaryContext) -> RunSummary {
    summarize_inner(records, ctx, None)
}

/// [`summarize`] of records some or all of which were [`RequestRecord::compact`]ed, whose
/// pooled ITL sample was taken before that: `itl` (ms; e.g. by [`crate::exact`] over the gaps
/// spilled to disk) replaces the one the chunks would give. Everything else comes from the
/// records as in `summarize`; `--save-detailed`'s per-request `itls` lists need full records.
pub fn summarize_compacted(
    records: &[RequestRecord],
    ctx: &SummaryContext,
    itl: Distribution,
) -> RunSummary {
    summarize_inner(records, ctx, Some(itl))
}

fn summarize_inner(
    records: &[RequestRecord],
    ctx: &SummaryContext,
    itl_given: Option<Distribution>,
) -> RunSummary {
    let mut prof: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    prof.sort_by_key(|r| r.request_id);
    // Metric functions filter the profile phase themselves; per-request lists follow `prof`.
    let recs = records;
    let window = metrics::profile_window_ns(recs);
    let duration = ctx
        .duration_s
        .filter(|d| d.is_finite() && *d >= 0.0)
        .or_else(|| window.map(|(a, b)| (b - a) as f64 / metrics::NS_PER_S))
        .unwrap_or(0.0);
    let totals = metrics::totals(recs);
    let tp = metrics::throughput(&totals, duration);
    let qs = &ctx.metric_percentiles;

    let dist = |m: Metric| Distribution::of(&metrics::sample_ms(recs, m), qs);
    let (ttft, tpot, itl, e2el, ttfo) = (
        dist(Metric::Ttft),
        dist(Metric::Tpot),
        itl_given.unwrap_or_else(|| dist(Metric::Itl)),
        dist(Metric::E2el),
        dist(Metric::Ttfo),
    );
    let metric_map = vllm_metrics(ctx, [&ttft, &tpot, &itl, &e2el]);
    let (ttfts, itls, generated_texts, errors) = match ctx.save_detailed {
        true => {
            let d = Detailed::of(&prof);
            (
                Some(d.ttfts),
                Some(d.itls),
                Some(d.generated_texts),
                Some(d.errors),
            )
        }
        false => (None, None, None, None),
    };
    let interactivity = interactivity_of(&tpot);
    let e2e_normalized_interactivity = metrics::E2E_INTERACTIVITY_QUANTILES
        .iter()
        .map(|&q| {
            (
                format!("p{}", metrics::percentile_label(q)),
                metrics::e2e_normalized_interactivity(recs, q),
            )
        })
        .collect();
    let (src_server, src_tok) = metrics::token_source_counts(recs);
    let lag = metrics::schedule_lag_ms(recs);
    let f = Failures::of(records, &totals);
    let anomalous_requests = crate::anomaly::anomalous_requests(recs);

    RunSummary {
        date: ctx.date.clone(),
        backend: ctx.backend.clone(),
        model_id: ctx.model_id.clone(),
        tokenizer_id: ctx.tokenizer_id.clone(),
        best_of: ctx.best_of,
        num_prompts: ctx.num_prompts,
        request_rate: ctx.request_rate.filter(|r| r.is_finite()),
        burstiness: ctx.burstiness,
        max_concurrency: ctx.max_concurrency,
        duration,
        benchmark_start_time_unix: ctx.benchmark_start_time_unix,
        benchmark_end_time_unix: ctx.benchmark_end_time_unix,
        completed: totals.completed,
        total_input_tokens: totals.input_tokens,
        total_output_tokens: totals.output_tokens,
        request_throughput: tp.request_rps,
        request_goodput: metrics::goodput_rps(recs, &ctx.goodput, duration),
        output_throughput: tp.output_tok_s,
        total_token_throughput: tp.total_tok_s,
        input_lens: prof.iter().map(|r| r.prompt_tokens_client).collect(),
        output_lens: prof
            .iter()
            .map(|r| if r.success { r.completion_tokens } else { 0 })
            .collect(),
        ttfts,
        itls,
        generated_texts,
        errors,
        metrics: metric_map,
        inferbench: Extras {
            schema_version: Extras::SCHEMA_VERSION,
            profile_window_ns: window.map(|(a, b)| [a, b]),
            warmups: (records.len() - prof.len()) as u64,
            failed: f.failed,
            error_rate: f.error_rate,
            cancelled_by_user: f.cancelled_by_user,
            errors_by_class: f.errors_by_class,
            completion_tokens_source: [
                ("server".to_string(), src_server),
                ("tokenizer".to_string(), src_tok),
            ]
            .into_iter()
            .collect(),
            interrupted: ctx.interrupted,
            stop_reason: ctx.stop_reason,
            requests_not_sent: ctx.requests_not_sent,
            adaptive: false,
            adaptive_tolerance: None,
            prompts_used: None,
            early_stop_noise: None,
            stopped_reason: None,
            warmup_failed: f.warmup_failed,
            warmup_cancelled_by_user: f.warmup_cancelled_by_user,
            warmup_errors_by_class: f.warmup_errors_by_class,
            error_samples: f.error_samples,
            anomalies: crate::anomaly::counts(recs),
            anomalous_requests,
            anomaly_rate: if totals.completed == 0 {
                0.0
            } else {
                anomalous_requests as f64 / totals.completed as f64
            },
            ttft_ms: ttft,
            ttfo_ms: ttfo,
            tpot_ms: tpot,
            itl_ms: itl,
            e2el_ms: e2el,
            interactivity,
            e2e_normalized_interactivity,
            tokens_per_chunk: Distribution::of(&metrics::tokens_per_chunk(recs), qs),
            multi_token_chunks: metrics::multi_token_chunks(&metrics::tokens_per_chunk(recs)),
            achieved_osl: Distribution::of(&metrics::achieved_osl(recs), qs),
            achieved_isl: Distribution::of(&metrics::achieved_isl(recs), qs),
            client_queue_ms: Distribution::of(&metrics::client_queue_ms(recs), qs),
            e2el_from_schedule_ms: Distribution::of(&metrics::e2el_from_schedule_ms(recs), qs),
            schedule_lag_ms: (!lag.is_empty()).then(|| Distribution::of(&lag, qs)),
            rates: metrics::rates(recs, ctx.request_rate.filter(|r| r.is_finite()), duration),
            concurrency: metrics::concurrency(recs),
            requests_file: None,
            allow_empty_content: false,
            proxy: None,
            tls_ca: None,
            tls_insecure: false,
            header_templates: Vec::new(),
            client: None,
            server_metrics: None,
            power: None,
            invalid_reason: None,
            failed_reason: None,
            server: None,
        },
    }
}

/// The failure counts of a run's summary. Requests the run cancelled (Ctrl-C/SIGTERM) are
/// neither successes nor failures: they are counted apart.
struct Failures {
    /// Profile requests that failed (cancelled ones excluded).
    failed: u64,
    /// `failed` / (completed + `failed`); 0 when nothing was sent.
    error_rate: f64,
    /// Profile requests the run cancelled.
    cancelled_by_user: u64,
    /// Profile failures per error class (`cancelled` left out).
    errors_by_class: BTreeMap<String, u64>,
    /// Warmup requests that failed.
    warmup_failed: u64,
    /// Warmup requests the run cancelled.
    warmup_cancelled_by_user: u64,
    /// Warmup failures per error class.
    warmup_errors_by_class: BTreeMap<String, u64>,
    /// One error message per class.
    error_samples: BTreeMap<String, String>,
}

impl Failures {
    /// The counts of `records` (every phase), with `totals` their profile totals.
    fn of(records: &[RequestRecord], totals: &metrics::Totals) -> Failures {
        let cancelled = |phase: Phase| {
            records
                .iter()
                .filter(|r| r.phase == phase && cancelled_by_run(r))
                .count() as u64
        };
        let cancelled_by_user = cancelled(Phase::Profile);
        let failed = totals.failed.saturating_sub(cancelled_by_user);
        let n_prof = totals.completed + failed;
        let mut errors_by_class = metrics::errors_by_class(records);
        errors_by_class.remove(ErrorClass::Cancelled.as_str());
        let (warmup_errors_by_class, error_samples) = failure_classes(records);
        Failures {
            failed,
            error_rate: if n_prof == 0 {
                0.0
            } else {
                failed as f64 / n_prof as f64
            },
            cancelled_by_user,
            errors_by_class,
            warmup_failed: warmup_errors_by_class.values().sum(),
            warmup_cancelled_by_user: cancelled(Phase::Warmup),
            warmup_errors_by_class,
            error_samples,
        }
    }
}

/// vLLM's flat metric keys: `ctx.metadata` as strings, then for each of
/// `ctx.percentile_metrics` (TTFT, TPOT, ITL, E2EL; TTFO is an extra only) `mean_<m>_ms`,
/// `median_<m>_ms`, `std_<m>_ms` and `p<q>_<m>_ms` from `dists` (in that metric order).
fn vllm_metrics(
    ctx: &SummaryContext,
    [ttft, tpot, itl, e2el]: [&Distribution; 4],
) -> serde_json::Map<String, serde_json::Value> {
    let mut map = serde_json::Map::new();
    for (k, v) in &ctx.metadata {
        map.insert(k.clone(), serde_json::Value::String(v.clone()));
    }
    for m in &ctx.percentile_metrics {
        let d = match m {
            Metric::Ttft => ttft,
            Metric::Tpot => tpot,
            Metric::Itl => itl,
            Metric::E2el => e2el,
            Metric::Ttfo => continue, // extras only: not a vLLM key
        };
        let stats = [keys::Stat::Mean, keys::Stat::Median, keys::Stat::Std].into_iter();
        for stat in stats.chain(
            d.percentiles
                .iter()
                .map(|(q, _)| keys::Stat::Percentile(*q)),
        ) {
            let v = stat.of(d).unwrap_or_default();
            let key = keys::LatencyStat { stat, metric: *m }.vllm_key();
            map.insert(key, serde_json::Value::from(v));
        }
    }
    map
}

/// `--save-detailed`'s per-request lists, one entry per profile request in `request_id`
/// order (vLLM's `ttfts`, `itls`, `generated_texts`, `errors`).
struct Detailed {
    /// TTFT, s; 0 for a failed request.
    ttfts: Vec<f64>,
    /// Inter-token latencies, s; empty for a failed request.
    itls: Vec<Vec<f64>>,
    generated_texts: Vec<String>,
    /// `class: message` of a failed request, empty for a successful one.
    errors: Vec<String>,
}

impl Detailed {
    fn of(prof: &[&RequestRecord]) -> Self {
        let s = 1.0 / metrics::MS_PER_S;
        Detailed {
            ttfts: (prof.iter())
                .map(|r| match (r.success, r.ttft_ms()) {
                    (true, Some(t)) => t * s,
                    _ => 0.0,
                })
                .collect(),
            itls: (prof.iter())
                .map(|r| {
                    if r.success {
                        r.itls_ms().map(|x| x * s).collect()
                    } else {
                        Vec::new()
                    }
                })
                .collect(),
            generated_texts: prof.iter().map(|r| r.output_text.clone()).collect(),
            errors: (prof.iter())
                .map(|r| {
                    if r.success {
                        return String::new();
                    }
                    let class = r.error_class.map_or("unclassified", |c| c.as_str());
                    match &r.error {
                        Some(m) => format!("{class}: {m}"),
                        None => class.to_string(),
                    }
                })
                .collect(),
        }
    }
}

/// Interactivity (tok/s/user) = 1000 / TPOT (ms) of each TPOT statistic: `mean`, `median`,
/// `p<q>` ([`metrics::interactivity_from_tpot_ms`]; `None` where TPOT is 0).
fn interactivity_of(tpot: &Distribution) -> BTreeMap<String, Option<f64>> {
    let mut out = BTreeMap::new();
    out.insert(
        "mean".to_string(),
        metrics::interactivity_from_tpot_ms(tpot.mean),
    );
    out.insert(
        "median".to_string(),
        metrics::interactivity_from_tpot_ms(tpot.median),
    );
    for (q, v) in &tpot.percentiles {
        out.insert(
            format!("p{}", metrics::percentile_label(*q)),
            metrics::interactivity_from_tpot_ms(*v),
        );
    }
    out
}

/// Failed requests (those the run cancelled aside): the warmup's count per error class, and
/// per class the message of its first failure by end time (profile phase first, then warmup).
fn failure_classes(records: &[RequestRecord]) -> (BTreeMap<String, u64>, BTreeMap<String, String>) {
    let mut warmup_errors_by_class = BTreeMap::new();
    let mut error_samples = BTreeMap::new();
    for phase in [Phase::Profile, Phase::Warmup] {
        let mut failed: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.phase == phase && !r.success && !cancelled_by_run(r))
            .collect();
        failed.sort_by_key(|r| (r.end_ns, r.request_id));
        for r in failed {
            let class = r.error_class.map_or("unclassified", |c| c.as_str());
            if phase == Phase::Warmup {
                *warmup_errors_by_class.entry(class.to_string()).or_insert(0) += 1;
            }
            error_samples
                .entry(class.to_string())
                .or_insert_with(|| r.error.clone().unwrap_or_default());
        }
    }
    (warmup_errors_by_class, error_samples)
}

/// Whether a record is a request the run itself cancelled while it was in flight or waiting
/// for a slot: error class `cancelled`, which only the run's cancellation token produces
/// (Ctrl-C/SIGTERM, or a sweep stopping a point whose engine died).
pub fn cancelled_by_run(r: &RequestRecord) -> bool {
    !r.success && r.error_class == Some(ErrorClass::Cancelled)
}

#[cfg(test)]
mod tests;
