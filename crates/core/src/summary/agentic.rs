//! The AgentX (agentic-coding trace replay) aggregate: what InferenceX's
//! `utils/agentic/aggregation/process_agentic_result.py` writes as `<RESULT_FILENAME>.json` from
//! AIPerf's artifacts (reference/agentx.md §4.5), computed here directly from our
//! [`RequestRecord`]s, plus the validity rules of `validate_agentic_result.py` and AIPerf's
//! scenario (§4.7). Pure: no I/O, no clock.
//!
//! The per-request definitions are the ones our AIPerf-shaped `profile_export.jsonl` carries
//! ([`aiperf_metrics`], §4.2), so the InferenceX script run on our artifacts and [`aggregate`] run
//! on our records agree (the oracle test `crates/loadgen/tests/agentic_oracle.rs`):
//!
//! - ISL = `prompt_tokens` (server-reported, cached tokens included), OSL = `completion_tokens`;
//! - TTFT = first_token − sent, request latency (E2EL) = last_token − sent, both ms in the file;
//! - per-request inter-token latency = (E2EL − TTFT) / (OSL − 1) (AIPerf's ITL, our TPOT), none
//!   for OSL ≤ 1;
//! - `request_start_ns` = sent, `request_end_ns` = end (stream closed), on the run clock plus a
//!   wall-clock anchor in the files.
//!
//! Aggregate rules (§4.5): every record counts in `records_total`; warmup-phase records (primers
//! included) and failed records are dropped; latency statistics are in **seconds** over the kept
//! records with non-positive values dropped; statistics are mean, p50, p75, p90, p95 (exact,
//! linear interpolation, [`metrics::percentile_sorted`]) and the population std; `intvty.X` =
//! 1 / `itl.X` (tok/s/user, std over per-request 1/ITL); `e2e_norm_intvty.X` = 1 / X(E2EL/OSL);
//! QPS over consecutive 1-s completion windows from the first completion (the last partial window
//! dropped); throughput over max(end) − min(sent) of the kept records, per GPU ÷ the job's GPUs;
//! theoretical cache hit = Σ hit blocks / Σ blocks; every float rounded to 5 decimals (integral
//! values ≥ 1 written as integers), as the script's `round_floats`.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::inferencex::{Parallelism, RoleTopology, Topology};
use crate::metrics::{self, NS_PER_S};
use crate::prometheus::parse_labels;
use crate::record::{ErrorClass, Phase, RequestRecord};
use crate::server_metrics::ServerMetricsSummary;

/// `scenario_type` of every agentic aggregate (§4.5).
pub const SCENARIO_TYPE: &str = "agentic-coding";
/// Decimal places of every float in the aggregate (the script's `round_floats`).
pub const DECIMALS: usize = 5;
/// Width of one QPS window, s (§4.5).
pub const QPS_WINDOW_S: f64 = 1.0;
/// InferenceX's `--failed-request-threshold` default (`AIPERF_FAILED_REQUEST_THRESHOLD`),
/// fraction 0–1, inclusive (§4.7).
pub const DEFAULT_FAILED_REQUEST_THRESHOLD: f64 = 0.10;
/// Error-text substrings (lowercase) that mark a context-overflow error (AIPerf's default
/// `AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS`, §3.9).
pub const CONTEXT_OVERFLOW_SUBSTRINGS: [&str; 4] = [
    "context length",
    "maximum context",
    "context_length_exceeded",
    "prompt is too long",
];
/// Context-overflow errors ÷ profile records above which the AIPerf scenario is invalid
/// (`AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT`, fraction, §3.9).
pub const CONTEXT_OVERFLOW_RATE_LIMIT: f64 = 0.01;
/// Profiling phases at least this long (s) must have TTFT/ITL observations through
/// [`COVERAGE_MIN_FRACTION`] of the phase (§3.9).
pub const COVERAGE_MIN_DURATION_S: f64 = 900.0;
/// Fraction of the profiling phase the last TTFT/ITL observation must reach (§3.9).
pub const COVERAGE_MIN_FRACTION: f64 = 0.98;
/// The stored invalid reason of an AgentX replay shorter than [`COVERAGE_MIN_DURATION_S`]
/// (`replay --unsafe-override`, the agentic quickstart): its `submission_invalid_reasons`.
pub const SHORT_REPLAY_REASON: &str = "replay shorter than AgentX's 900 s minimum";

/// Whether `reason` (a point's stored invalid reason, parts joined with `; `) names only the
/// AgentX duration rule: every part is [`SHORT_REPLAY_REASON`] or AIPerf's `unsafe_override`
/// code for it. Such a point is a preview (issue 42): drawn on a preview frontier of its own,
/// never on a valid one.
pub fn only_short_replay(reason: &str) -> bool {
    let mut parts = reason
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .peekable();
    parts.peek().is_some() && parts.all(|p| p == SHORT_REPLAY_REASON || p == "unsafe_override")
}

/// The warning the script adds when `server_metrics_export.json` is missing or empty (§4.5).
pub const WARNING_NO_SERVER_METRICS: &str = "server_metrics_export.json missing or empty";

// ---------------------------------------------------------------------------------------------
// Per-record view (what profile_export.jsonl carries, §4.2)
// ---------------------------------------------------------------------------------------------

/// One record's AIPerf per-request metrics (reference/agentx.md §4.2), our definitions (module
/// doc). Failed records carry only `input_sequence_length` (AIPerf writes it as `error_isl`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AiperfRecordMetrics {
    /// `input_sequence_length`, tokens (`prompt_tokens`).
    pub input_sequence_length: u64,
    /// `output_sequence_length`, tokens (`completion_tokens`); successes only.
    pub output_sequence_length: Option<u64>,
    /// `time_to_first_token`, ms; successes with a token only.
    pub time_to_first_token_ms: Option<f64>,
    /// `request_latency` (E2EL = last token − sent), ms; successes only.
    pub request_latency_ms: Option<f64>,
    /// `inter_token_latency` = (E2EL − TTFT) / (OSL − 1), ms; successes with OSL > 1 only.
    pub inter_token_latency_ms: Option<f64>,
}

/// The AIPerf per-request metrics of `r` (§4.2; definitions in the module doc).
pub fn aiperf_metrics(r: &RequestRecord) -> AiperfRecordMetrics {
    let isl = u64::from(r.prompt_tokens);
    if !r.success {
        return AiperfRecordMetrics {
            input_sequence_length: isl,
            ..Default::default()
        };
    }
    AiperfRecordMetrics {
        input_sequence_length: isl,
        output_sequence_length: Some(u64::from(r.completion_tokens)),
        time_to_first_token_ms: r.ttft_ms(),
        request_latency_ms: r.e2el_ms(),
        inter_token_latency_ms: r.tpot_ms(),
    }
}

/// AIPerf's `ErrorDetails` of a failed request (§4.2): HTTP `code` (≥ 400 only), `type` = our
/// error class (`http_status`, `timeout_idle`, …), `message` = the record's error text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ErrorDetails {
    /// HTTP status when the server answered with an error status.
    pub code: Option<u16>,
    /// Error classification: the snake_case [`ErrorClass`] name.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Human-readable cause.
    pub message: String,
}

/// The error object of `r` in `profile_export.jsonl`, `None` for a success (§4.2).
pub fn error_details(r: &RequestRecord) -> Option<ErrorDetails> {
    if r.success {
        return None;
    }
    let kind = r.error_class.map(|c| c.as_str().to_string());
    let message = match (&r.error, &kind) {
        (Some(m), _) if !m.trim().is_empty() => m.clone(),
        (_, Some(k)) => k.clone(),
        _ => "request failed".to_string(),
    };
    Some(ErrorDetails {
        code: r.http_status.filter(|s| *s >= 400),
        kind,
        message,
    })
}

/// The category of an error in `request_accounting.error_categories`, the script's rule (§4.5):
/// the first non-empty of `type`, `code`; else the message's first line up to the first `:`
/// (at most 120 characters), `unknown` when empty.
pub fn error_category(d: &ErrorDetails) -> String {
    if let Some(k) = d.kind.as_deref().filter(|k| !k.is_empty()) {
        return k.to_string();
    }
    if let Some(c) = d.code {
        return c.to_string();
    }
    message_category(&d.message)
}

/// First line of `message` (Python `str.strip().splitlines()[0]`) up to the first `:`, at most
/// 120 characters; `unknown` when empty.
fn message_category(message: &str) -> String {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        )
    };
    let trimmed = message.trim_matches(|c: char| c.is_whitespace() || is_break(c));
    let first = trimmed.split(is_break).next().unwrap_or("");
    let head = first.split(':').next().unwrap_or("");
    if head.is_empty() {
        return "unknown".into();
    }
    head.chars().take(120).collect()
}

/// True when `r` failed with a context-overflow error (its text contains one of
/// [`CONTEXT_OVERFLOW_SUBSTRINGS`], case-insensitively; §3.9).
pub fn is_context_overflow(r: &RequestRecord) -> bool {
    if r.success {
        return false;
    }
    let text = r.error.as_deref().unwrap_or("").to_lowercase();
    CONTEXT_OVERFLOW_SUBSTRINGS.iter().any(|s| text.contains(s))
}

/// True when a record is kept by the aggregate: profile phase and successful (§4.5).
pub fn is_kept(r: &RequestRecord) -> bool {
    r.phase == Phase::Profile && r.success
}

// ---------------------------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------------------------

/// `{name, version}` of a component (`ROUTER_METADATA`; `KV_OFFLOAD_BACKEND_METADATA`, whose
/// version is optional), §4.5.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentMeta {
    /// Component name (`vllm-router`, `lmcache`, …).
    pub name: String,
    /// Component version; may be absent for a KV-offload backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Dataset provenance (AIPerf `metadata.dataset`, copied into the aggregate's `dataset`, §4.3,
/// §4.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetProvenance {
    /// `public_dataset` (HF corpus) or `local` (a `weka_trace` directory).
    pub source_type: String,
    /// AIPerf loader alias (`semianalysis_cc_traces_weka_with_subagents`, …).
    pub loader: String,
    /// HF dataset repo (`semianalysisai/cc-traces-weka-062126`); `None` for local traces.
    pub hf_dataset_name: Option<String>,
    /// HF split (`train`).
    pub hf_split: Option<String>,
    /// Traces in the loaded corpus.
    pub num_dataset_entries: u64,
}

/// What the aggregate copies from the job rather than the records (the script's environment,
/// §4.5): identity, layout, KV-offload settings, dataset and the KV pool capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgenticContext {
    /// `RUNNER_TYPE` (aggregate `hw`).
    pub hw: String,
    /// `CONC`: lanes (users).
    pub conc: u32,
    /// `IMAGE`.
    pub image: String,
    /// `RECIPE_FINGERPRINT`.
    pub recipe_fingerprint: String,
    /// `MODEL`.
    pub model: String,
    /// `MODEL_PREFIX` (aggregate `infmax_model_prefix`).
    pub model_prefix: String,
    /// `FRAMEWORK` (`vllm`, `sglang`, …); also picks the server-metrics adapter when there are no
    /// metrics.
    pub framework: String,
    /// `PRECISION`.
    pub precision: String,
    /// `SPEC_DECODING` (default `none`).
    pub spec_decoding: String,
    /// `DISAGG`.
    pub disagg: bool,
    /// Single node (`TP`, `PP_SIZE`, `DCP_SIZE`, `PCP_SIZE`, `EP_SIZE`, `DP_ATTENTION`) or
    /// multinode (`PREFILL_*` / `DECODE_*` workers and layouts; `prefill_gpus`/`decode_gpus` are
    /// not used here: the agentic script counts workers × tp × pp × pcp).
    pub topology: Topology,
    /// `KV_OFFLOADING` (`none`, `dram`, …).
    pub kv_offloading: String,
    /// `KV_OFFLOAD_BACKEND_METADATA` (`null` when offloading is `none`).
    pub kv_offload_backend: Option<ComponentMeta>,
    /// `TOTAL_CPU_DRAM_GB`, GB.
    pub allocated_cpu_dram_gb: i64,
    /// `ROUTER_METADATA`.
    pub router: Option<ComponentMeta>,
    /// `KV_P2P_TRANSFER` when set.
    pub kv_p2p_transfer: Option<String>,
    /// Dataset provenance (the script copies AIPerf's `metadata.dataset`).
    pub dataset: Option<DatasetProvenance>,
    /// GPU KV-cache pool, tokens, from the server log (vLLM `GPU KV cache size: N tokens` summed
    /// per engine, SGLang `max_total_num_tokens`); see [`kv_pool_tokens_from_server_log`].
    pub kv_cache_pool_tokens: Option<u64>,
}

impl Default for AgenticContext {
    fn default() -> Self {
        AgenticContext {
            hw: String::new(),
            conc: 0,
            image: String::new(),
            recipe_fingerprint: String::new(),
            model: String::new(),
            model_prefix: String::new(),
            framework: String::new(),
            precision: String::new(),
            spec_decoding: "none".into(),
            disagg: false,
            topology: Topology::SingleNode {
                parallelism: Parallelism {
                    tp: 1,
                    pp: 1,
                    dcp_size: 1,
                    pcp_size: 1,
                    ep: 1,
                },
                dp_attention: "false".into(),
            },
            kv_offloading: "none".into(),
            kv_offload_backend: None,
            allocated_cpu_dram_gb: 0,
            router: None,
            kv_p2p_transfer: None,
            dataset: None,
            kv_cache_pool_tokens: None,
        }
    }
}

fn truthy(s: &str) -> bool {
    matches!(s.to_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

fn role_gpus(r: &RoleTopology) -> u64 {
    u64::from(r.num_workers) * r.parallelism.gpus()
}

impl AgenticContext {
    /// GPUs of the job as the agentic script counts them (§4.5): tp · pp · pcp single node;
    /// Σ workers · tp · pp · pcp over prefill and decode multinode.
    pub fn num_gpus(&self) -> u64 {
        match &self.topology {
            Topology::SingleNode { parallelism, .. } => parallelism.gpus(),
            Topology::MultiNode {
                prefill, decode, ..
            } => role_gpus(prefill) + role_gpus(decode),
        }
    }

    fn layout(&self) -> (u32, u32, String, TopologyFields) {
        match &self.topology {
            Topology::SingleNode {
                parallelism,
                dp_attention,
            } => (
                parallelism.tp,
                parallelism.ep,
                dp_attention.clone(),
                TopologyFields::Single(SingleNodeFields {
                    pp: parallelism.pp,
                    dcp_size: parallelism.dcp_size,
                    pcp_size: parallelism.pcp_size,
                }),
            ),
            Topology::MultiNode {
                prefill,
                decode,
                prefill_hw,
                decode_hw,
                ..
            } => {
                let (p, mut d) = (prefill.parallelism, decode.parallelism);
                let num_prefill_gpu = role_gpus(prefill);
                let num_decode_gpu = role_gpus(decode);
                if num_decode_gpu == 0 {
                    d = Parallelism {
                        tp: 0,
                        ep: 0,
                        pp: 1,
                        dcp_size: 1,
                        pcp_size: 1,
                    };
                }
                let dp = if truthy(&prefill.dp_attention) || truthy(&decode.dp_attention) {
                    "true"
                } else {
                    "false"
                };
                let hw = match (prefill_hw, decode_hw) {
                    (Some(a), Some(b)) if !a.is_empty() => (Some(a.clone()), Some(b.clone())),
                    _ => (None, None),
                };
                (
                    p.tp + d.tp,
                    p.ep.max(d.ep),
                    dp.to_string(),
                    TopologyFields::Multi(MultiNodeFields {
                        prefill_num_workers: prefill.num_workers,
                        prefill_tp: p.tp,
                        prefill_pp: p.pp,
                        prefill_dcp_size: p.dcp_size,
                        prefill_pcp_size: p.pcp_size,
                        prefill_ep: p.ep,
                        prefill_dp_attention: prefill.dp_attention.clone(),
                        num_prefill_gpu,
                        decode_num_workers: decode.num_workers,
                        decode_tp: d.tp,
                        decode_pp: d.pp,
                        decode_dcp_size: d.dcp_size,
                        decode_pcp_size: d.pcp_size,
                        decode_ep: d.ep,
                        decode_dp_attention: decode.dp_attention.clone(),
                        num_decode_gpu,
                        prefill_hw: hw.0,
                        decode_hw: hw.1,
                    }),
                )
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The aggregate's shape (§4.5), key names and order as the script writes them
// ---------------------------------------------------------------------------------------------

/// `{}` for `None`, the object for `Some` (the script's empty dicts).
mod empty_obj {
    use super::*;
    use serde::ser::SerializeMap;

    pub fn serialize<S: Serializer, T: Serialize>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(t) => t.serialize(s),
            None => s.serialize_map(Some(0))?.end(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: DeserializeOwned>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        let v = Value::deserialize(d)?;
        match &v {
            Value::Null => Ok(None),
            Value::Object(m) if m.is_empty() => Ok(None),
            _ => T::deserialize(v)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// One statistic block: mean, p50, p75, p90, p95 and the population std (units of the metric).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (linear interpolation).
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Population standard deviation (0 for one value).
    pub std: f64,
}

impl Stats {
    /// The statistics of `values`; `None` when empty (the script's `{}`).
    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let p = |q| metrics::percentile_sorted(&v, q).unwrap_or(0.0);
        Some(Stats {
            mean: metrics::mean(values).unwrap_or(0.0),
            p50: p(50.0),
            p75: p(75.0),
            p90: p(90.0),
            p95: p(95.0),
            std: metrics::std_pop(values).unwrap_or(0.0),
        })
    }

    /// The slow-tail reciprocal (§4.5): mean/p50/…/p95 = 1 / the same statistic of `self`;
    /// std over the per-value reciprocals of `values` (all > 0). `None` when a statistic is not
    /// positive.
    fn reciprocal(&self, values: &[f64]) -> Option<Stats> {
        let inv = |x: f64| (x > 0.0).then(|| 1.0 / x);
        let per: Vec<f64> = values
            .iter()
            .filter(|v| **v > 0.0)
            .map(|v| 1.0 / v)
            .collect();
        Some(Stats {
            mean: inv(self.mean)?,
            p50: inv(self.p50)?,
            p75: inv(self.p75)?,
            p90: inv(self.p90)?,
            p95: inv(self.p95)?,
            std: metrics::std_pop(&per).unwrap_or(0.0),
        })
    }
}

/// `request_accounting` (§4.5): how the records were filtered.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RequestAccounting {
    /// Every record (every `profile_export.jsonl` line).
    pub records_total: u64,
    /// Records kept (profile phase and successful).
    pub records_profiled: u64,
    /// `records_total − records_profiled`.
    pub records_dropped_total: u64,
    /// Warmup-phase records (primers included; failed ones too).
    pub records_warmup_dropped: u64,
    /// Failed records of either phase.
    pub records_error_dropped: u64,
    /// Failed records by [`error_category`].
    pub error_categories: BTreeMap<String, u64>,
}

/// `request_metrics.qps` (§4.5): completions per 1-s window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QpsStats {
    /// Window width, s (1).
    pub window_seconds: f64,
    /// Complete windows.
    pub samples: u64,
    /// Mean completions/s over the windows; with no complete window, completions ÷ (last −
    /// first completion), per s.
    pub mean: f64,
    /// Median over windows, per s (absent with no window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    /// 75th percentile, per s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p75: Option<f64>,
    /// 90th percentile, per s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    /// 95th percentile, per s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<f64>,
    /// Population std, per s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
}

/// `request_metrics.latency` (§4.5), seconds (interactivity in tok/s/user); `{}` when no value.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Time to first token, s.
    #[serde(with = "empty_obj", default)]
    pub ttft: Option<Stats>,
    /// End-to-end latency (first send to last token), s.
    #[serde(with = "empty_obj", default)]
    pub e2el: Option<Stats>,
    /// Per-request inter-token latency (E2EL − TTFT)/(OSL − 1), s.
    #[serde(with = "empty_obj", default)]
    pub itl: Option<Stats>,
    /// Same as `itl` (the script reports ITL under both names).
    #[serde(with = "empty_obj", default)]
    pub tpot: Option<Stats>,
    /// 1 / `itl` statistic, tok/s/user; std over per-request 1/ITL.
    #[serde(with = "empty_obj", default)]
    pub intvty: Option<Stats>,
    /// 1 / statistic of per-request E2EL/OSL (s/token), tok/s/user; std over OSL/E2EL.
    #[serde(with = "empty_obj", default)]
    pub e2e_norm_intvty: Option<Stats>,
    /// Full-response ITL, s: not measured by us (always `{}`).
    #[serde(with = "empty_obj", default)]
    pub full_response_itl: Option<Stats>,
    /// 1 / full-response ITL: not measured (always `{}`).
    #[serde(with = "empty_obj", default)]
    pub full_response_intvty: Option<Stats>,
}

/// `request_metrics.tokens` (§4.5), tokens per request.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TokenStats {
    /// ISL (server-reported prompt tokens).
    #[serde(with = "empty_obj", default)]
    pub input: Option<Stats>,
    /// Actual OSL.
    #[serde(with = "empty_obj", default)]
    pub output_actual: Option<Stats>,
    /// Recorded (`out`) OSL of the trace request.
    #[serde(with = "empty_obj", default)]
    pub output_expected: Option<Stats>,
}

/// `{tokens_per_second}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TokensPerSecond {
    /// Tokens per second over the window.
    pub tokens_per_second: f64,
}

/// `throughput.per_gpu` (§4.5), tokens/s/GPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerGpuThroughput {
    /// (ISL + OSL) / duration / GPUs.
    pub total_tput_tps: f64,
    /// OSL / duration / GPUs.
    pub output_tput_tps: f64,
    /// ISL / duration / GPUs.
    pub input_tput_tps: f64,
}

/// `request_metrics.throughput` (§4.5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThroughputStats {
    /// Σ ISL / duration, tokens/s.
    pub input: TokensPerSecond,
    /// Σ OSL / duration, tokens/s.
    pub output: TokensPerSecond,
    /// Σ (ISL + OSL) / duration, tokens/s.
    pub total: TokensPerSecond,
    /// max(end) − min(sent) over the kept records, s.
    pub duration_seconds: f64,
    /// Per GPU (`{}` with zero GPUs).
    #[serde(with = "empty_obj", default)]
    pub per_gpu: Option<PerGpuThroughput>,
}

/// `request_metrics.cache` (§4.5).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestCacheStats {
    /// Σ hit blocks / Σ prompt blocks over the kept records (fraction 0–1); `null` without
    /// blocks.
    pub theoretical_cache_hit_rate: Option<f64>,
}

/// `request_metrics` (§4.5).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestMetrics {
    /// Completions per second over 1-s windows (`{}` with < 2 completions).
    #[serde(with = "empty_obj", default)]
    pub qps: Option<QpsStats>,
    /// Latency and interactivity.
    pub latency: LatencyStats,
    /// Token distributions.
    pub tokens: TokenStats,
    /// Token throughput (`{}` without a positive window).
    #[serde(with = "empty_obj", default)]
    pub throughput: Option<ThroughputStats>,
    /// Theoretical prefix-cache hit.
    pub cache: RequestCacheStats,
}

/// `server_metrics.cache` (§4.5), fractions 0–1 and token counts over the profiling window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerCache {
    /// GPU prefix-cache hit rate (vLLM hits/queries or `local_cache_hit` share; SGLang device
    /// hits / prompt tokens).
    pub gpu_cache_hit_rate: Option<f64>,
    /// CPU/offload hit rate (vLLM external; SGLang host).
    pub cpu_cache_hit_rate: Option<f64>,
    /// External (connector) hit rate.
    pub external_cache_hit_rate: Option<f64>,
    /// All cached / all prompt tokens.
    pub overall_cache_hit_rate: Option<f64>,
    /// vLLM `prefix_cache_hits` delta, tokens.
    pub prefix_cache_hits: Option<f64>,
    /// vLLM `prefix_cache_queries` delta, tokens.
    pub prefix_cache_queries: Option<f64>,
    /// vLLM `external_prefix_cache_hits` delta, tokens.
    pub external_prefix_cache_hits: Option<f64>,
    /// vLLM `external_prefix_cache_queries` delta, tokens.
    pub external_prefix_cache_queries: Option<f64>,
    /// SGLang `cached_tokens` by `cache_source`, tokens.
    pub cached_tokens_by_source: BTreeMap<String, f64>,
    /// Dynamo frontend hit rate (not mapped: always `null`).
    pub frontend_cache_hit_rate: Option<f64>,
    /// Dynamo router KV hit rate (not mapped).
    pub router_kv_hit_rate: Option<f64>,
    /// Dynamo router shared-cache hit rate (not mapped).
    pub router_shared_cache_hit_rate: Option<f64>,
    /// Dynamo frontend cached tokens (not mapped).
    pub frontend_cached_tokens: Option<f64>,
    /// Dynamo frontend input tokens (not mapped).
    pub frontend_input_tokens: Option<f64>,
}

/// `server_metrics.kv_cache` (§4.5).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerKvCache {
    /// Largest GPU KV-cache usage over series (fraction; values > 1.5 read as percent).
    pub gpu_usage_pct: Option<f64>,
    /// GPU KV pool capacity, tokens (server log; SGLang `max_total_num_tokens`).
    pub gpu_total_tokens: Option<u64>,
    /// CPU KV-cache usage, fraction.
    pub cpu_usage_pct: Option<f64>,
    /// SGLang HiCache host tokens used.
    pub cpu_used_tokens: Option<f64>,
    /// SGLang HiCache host tokens total.
    pub cpu_total_tokens: Option<f64>,
}

/// `server_metrics.kv_offload` (§4.5): vLLM offload bytes (B), times (s), bandwidths (B/s).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerKvOffload {
    /// GPU → CPU bytes.
    pub bytes_gpu_to_cpu: Option<f64>,
    /// CPU → GPU bytes.
    pub bytes_cpu_to_gpu: Option<f64>,
    /// GPU → CPU time, s.
    pub time_gpu_to_cpu: Option<f64>,
    /// CPU → GPU time, s.
    pub time_cpu_to_gpu: Option<f64>,
    /// GPU → CPU bytes / time, B/s.
    pub bandwidth_gpu_to_cpu_bytes_per_second: Option<f64>,
    /// CPU → GPU bytes / time, B/s.
    pub bandwidth_cpu_to_gpu_bytes_per_second: Option<f64>,
}

/// `server_metrics.tokens.prompt_by_source` (§4.5), tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptBySource {
    /// vLLM `local_cache_hit` / SGLang device hits.
    pub gpu_cache_hit: Option<f64>,
    /// vLLM `external_kv_transfer` / SGLang host hits.
    pub cpu_or_external_cache_hit: Option<f64>,
    /// vLLM `local_compute` / SGLang `realtime_tokens{mode=prefill_compute}`.
    pub computed: Option<f64>,
    /// Every source as the server labels it.
    pub raw: BTreeMap<String, f64>,
}

/// `server_metrics.tokens` (§4.5), tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerTokens {
    /// Server prompt-token counter delta (rounded), else Σ ISL of the kept records.
    pub prompt_total: Option<u64>,
    /// Server generation-token counter delta (rounded), else Σ OSL of the kept records.
    pub generation_total: Option<u64>,
    /// Kept records.
    pub requests_completed: Option<u64>,
    /// Prompt tokens by cache source.
    pub prompt_by_source: PromptBySource,
}

/// One `server_metrics.sources` entry (vLLM, per engine / worker / DP rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSource {
    /// `role|endpoint|worker_id=…|dp_rank=…|engine=…`.
    pub id: String,
    /// `combined`, `prefill`, `decode` or `router`.
    pub role: String,
    /// Prompt tokens of this source.
    pub prompt_tokens: Option<f64>,
    /// Generated tokens of this source.
    pub generation_tokens: Option<f64>,
    /// Prefix-cache hits / queries of this source.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Largest KV-cache usage of this source, fraction.
    pub gpu_kv_cache_usage_pct: Option<f64>,
}

/// `server_metrics` (§4.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerMetricsBlock {
    /// True when there were server metrics.
    pub present: bool,
    /// `vllm`, `sglang`, or `none`.
    pub adapter: String,
    /// Metric families in the export.
    pub metric_count: u64,
    /// Cache hit rates.
    pub cache: ServerCache,
    /// KV-cache usage and capacity.
    pub kv_cache: ServerKvCache,
    /// KV offload traffic.
    pub kv_offload: ServerKvOffload,
    /// Token totals.
    pub tokens: ServerTokens,
    /// Per-source breakdown (vLLM).
    pub sources: Vec<ServerSource>,
}

/// Single-node layout fields (`pp`, `dcp_size`, `pcp_size`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SingleNodeFields {
    /// `PP_SIZE`.
    pub pp: u32,
    /// `DCP_SIZE`.
    pub dcp_size: u32,
    /// `PCP_SIZE`.
    pub pcp_size: u32,
}

/// Multinode layout fields (decode zeroed to tp = ep = 0, pp = dcp = pcp = 1 when it has no
/// GPU).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)] // one field per `PREFILL_*`/`DECODE_*` variable, named as the script does
pub struct MultiNodeFields {
    pub prefill_num_workers: u32,
    pub prefill_tp: u32,
    pub prefill_pp: u32,
    pub prefill_dcp_size: u32,
    pub prefill_pcp_size: u32,
    pub prefill_ep: u32,
    pub prefill_dp_attention: String,
    pub num_prefill_gpu: u64,
    pub decode_num_workers: u32,
    pub decode_tp: u32,
    pub decode_pp: u32,
    pub decode_dcp_size: u32,
    pub decode_pcp_size: u32,
    pub decode_ep: u32,
    pub decode_dp_attention: String,
    pub num_decode_gpu: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_hw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_hw: Option<String>,
}

/// The layout fields, flattened into the aggregate's top level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TopologyFields {
    /// Multinode.
    Multi(MultiNodeFields),
    /// Single node.
    Single(SingleNodeFields),
}

/// InferenceX's agentic aggregate `<RESULT_FILENAME>.json` (reference/agentx.md §4.5), key names,
/// nesting and order as `process_agentic_result.py` writes them (power fields are added by the
/// power step, not here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)] // identity fields copied from [`AgenticContext`], documented there
pub struct AgenticAggregate {
    pub hw: String,
    pub conc: u32,
    pub image: String,
    pub recipe_fingerprint: String,
    pub model: String,
    pub infmax_model_prefix: String,
    pub framework: String,
    pub precision: String,
    pub spec_decoding: String,
    pub disagg: bool,
    /// Always [`SCENARIO_TYPE`].
    pub scenario_type: String,
    pub is_multinode: bool,
    /// Single node `TP`; multinode prefill + decode tp.
    pub tp: u32,
    /// Single node `EP_SIZE`; multinode max(prefill, decode) ep.
    pub ep: u32,
    pub dp_attention: String,
    pub kv_offloading: String,
    pub kv_offload_backend: Option<ComponentMeta>,
    pub allocated_cpu_dram_gb: i64,
    /// Every record.
    pub num_requests_total: u64,
    /// Kept records.
    pub num_requests_successful: u64,
    pub request_accounting: RequestAccounting,
    #[serde(flatten)]
    pub topology: TopologyFields,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<ComponentMeta>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_p2p_transfer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetProvenance>,
    pub request_metrics: RequestMetrics,
    pub server_metrics: ServerMetricsBlock,
    /// `server_metrics.kv_cache.gpu_total_tokens`, tokens.
    pub kv_cache_pool_tokens: Option<u64>,
    /// Notes (`server_metrics_export.json missing or empty`, an unsupported metrics backend).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl AgenticAggregate {
    /// The JSON object as the script writes it: every float rounded to [`DECIMALS`] places and
    /// integral values ≥ 1 as integers ([`round_floats`]).
    pub fn to_json(&self) -> Value {
        round_floats(serde_json::to_value(self).unwrap_or(Value::Null))
    }
}

/// Rounds `x` to [`DECIMALS`] places exactly as Python's `round(x, 5)` (correct rounding of the
/// binary value, ties to even); non-finite values unchanged.
pub fn round5(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.DECIMALS$}").parse().unwrap_or(x)
}

/// The script's `round_floats` on a JSON tree: every non-integer number rounded with
/// [`round5`]; a rounded value that is integral with magnitude ≥ 1 becomes an integer.
pub fn round_floats(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(0.0);
            let r = round5(x);
            if r.abs() >= 1.0 && r.fract() == 0.0 && r.abs() < 9.0e15 {
                Value::from(r as i64)
            } else {
                serde_json::Number::from_f64(r).map_or(Value::Null, Value::Number)
            }
        }
        Value::Array(a) => Value::Array(a.into_iter().map(round_floats).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, round_floats(v))).collect())
        }
        other => other,
    }
}

// ---------------------------------------------------------------------------------------------
// aggregate()
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Server metrics: the AIPerf export model and the script's vLLM / SGLang adapters
// ---------------------------------------------------------------------------------------------

/// One series of an AIPerf `server_metrics_export.json` metric (§4.4): its labels and
/// statistics over the profiling window (counter `total` delta and `rate` per s; gauge `avg`,
/// `min`, `max` (+ `std`, `p1`…`p99` when samples are given); histogram `count`, `sum`, `avg`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExportSeries {
    /// Label name → value (histogram `le` removed).
    pub labels: BTreeMap<String, String>,
    /// Statistic name → value.
    pub stats: BTreeMap<String, f64>,
    /// Histogram bucket deltas, `le` → observations (histograms only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<BTreeMap<String, f64>>,
    /// 1-s slices (filled by the writer when snapshots are at hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeslices: Option<Vec<Value>>,
}

/// One metric family of the export (§4.4).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExportMetric {
    /// `counter`, `gauge` or `histogram`.
    #[serde(rename = "type")]
    pub kind: String,
    /// HELP text (not kept by our scraper: empty).
    pub description: String,
    /// Unit (not kept: empty).
    pub unit: String,
    /// One entry per label set.
    pub series: Vec<ExportSeries>,
}

/// The AIPerf `server_metrics_export.json` model (§4.4): family name → metric. Family names
/// follow the Prometheus client: a counter `x_total` is family `x`; `x_bucket`/`x_sum`/`x_count`
/// with buckets are histogram `x`; gauges keep their name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerExport {
    /// Family name → metric.
    pub metrics: BTreeMap<String, ExportMetric>,
}

fn split_key(key: &str) -> (&str, &str) {
    match key.split_once('{') {
        Some((n, l)) => (n, l.strip_suffix('}').unwrap_or(l)),
        None => (key, ""),
    }
}

/// Builds the export model from a window summary ([`crate::server_metrics::summarize`]): every
/// counter and gauge of the summary, grouped into families. `gauge_samples` (the values behind
/// each gauge, [`crate::server_metrics::window_gauge_samples`]) adds `std` and `p1`…`p99`.
pub fn server_export(
    summary: &ServerMetricsSummary,
    gauge_samples: Option<&BTreeMap<String, Vec<f64>>>,
) -> ServerExport {
    let names: std::collections::BTreeSet<&str> = summary
        .counters
        .keys()
        .chain(summary.gauges.keys())
        .map(|k| split_key(k).0)
        .collect();
    let mut out = ServerExport::default();
    // Histograms: (family, labels without le) → series.
    let mut hist: BTreeMap<(String, BTreeMap<String, String>), ExportSeries> = BTreeMap::new();
    for (key, c) in &summary.counters {
        let (name, labels) = split_key(key);
        let mut labels = parse_labels(labels);
        let hist_family = name.strip_suffix("_bucket").or_else(|| {
            ["_sum", "_count"].iter().find_map(|s| {
                name.strip_suffix(s)
                    .filter(|base| names.contains(format!("{base}_bucket").as_str()))
            })
        });
        if let Some(base) = hist_family {
            let le = labels.remove("le");
            let s = hist.entry((base.to_string(), labels.clone())).or_default();
            s.labels = labels;
            if let Some(le) = le {
                s.buckets
                    .get_or_insert_with(BTreeMap::new)
                    .insert(le, c.delta);
            } else if name.ends_with("_sum") {
                s.stats.insert("sum".into(), c.delta);
            } else if name.ends_with("_count") {
                s.stats.insert("count".into(), c.delta);
            }
            continue;
        }
        let family = name.strip_suffix("_total").unwrap_or(name);
        let m = out.metrics.entry(family.to_string()).or_default();
        m.kind = "counter".into();
        m.series.push(ExportSeries {
            labels,
            stats: BTreeMap::from([("total".into(), c.delta), ("rate".into(), c.rate)]),
            ..Default::default()
        });
    }
    for ((family, _), mut s) in hist {
        if let (Some(sum), Some(count)) = (s.stats.get("sum"), s.stats.get("count")) {
            if *count > 0.0 {
                let avg = sum / count;
                s.stats.insert("avg".into(), avg);
            }
        }
        let m = out.metrics.entry(family).or_default();
        m.kind = "histogram".into();
        m.series.push(s);
    }
    for (key, g) in &summary.gauges {
        let (name, labels) = split_key(key);
        let mut stats = BTreeMap::from([
            ("avg".to_string(), g.mean),
            ("min".to_string(), g.min),
            ("max".to_string(), g.max),
        ]);
        if let Some(v) = gauge_samples.and_then(|m| m.get(key)) {
            if let Some(sd) = metrics::std_pop(v) {
                stats.insert("std".into(), sd);
            }
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            for q in [1, 5, 10, 25, 50, 75, 90, 95, 99] {
                if let Some(p) = metrics::percentile_sorted(&sorted, f64::from(q)) {
                    stats.insert(format!("p{q}"), p);
                }
            }
        }
        let m = out.metrics.entry(name.to_string()).or_default();
        if m.kind.is_empty() {
            m.kind = "gauge".into();
        }
        m.series.push(ExportSeries {
            labels: parse_labels(labels),
            stats,
            ..Default::default()
        });
    }
    out
}

const TOTAL_FIRST: [&str; 4] = ["total", "sum", "max", "avg"];
const MAX_FIRST: [&str; 3] = ["max", "avg", "total"];

impl ServerExport {
    fn series<'a>(&'a self, names: &'a [&'a str]) -> impl Iterator<Item = &'a ExportSeries> + 'a {
        names
            .iter()
            .filter_map(|n| self.metrics.get(*n))
            .flat_map(|m| m.series.iter())
    }

    fn stat(s: &ExportSeries, preferred: &[&str]) -> Option<f64> {
        preferred.iter().find_map(|k| s.stats.get(*k).copied())
    }

    /// The script's `sum_stat`: Σ over the series of the first preferred statistic.
    fn sum_stat(
        &self,
        names: &[&str],
        preferred: &[&str],
        filter: impl Fn(&ExportSeries) -> bool,
    ) -> Option<f64> {
        let v: Vec<f64> = self
            .series(names)
            .filter(|s| filter(s))
            .filter_map(|s| Self::stat(s, preferred))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    fn total(&self, name: &str) -> Option<f64> {
        self.sum_stat(&[name], &TOTAL_FIRST, |_| true)
    }

    /// The script's `gauge_stat`: max (or mean with `mean = true`) over the series.
    fn gauge_stat(&self, names: &[&str], preferred: &[&str], mean: bool) -> Option<f64> {
        let v: Vec<f64> = self
            .series(names)
            .filter_map(|s| Self::stat(s, preferred))
            .collect();
        if v.is_empty() {
            return None;
        }
        Some(if mean {
            metrics::mean(&v).unwrap_or(0.0)
        } else {
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        })
    }

    /// The script's `sum_by_label`.
    fn sum_by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.series(&[name]) {
            let (Some(l), Some(v)) = (s.labels.get(label), Self::stat(s, &TOTAL_FIRST)) else {
                continue;
            };
            *out.entry(l.clone()).or_insert(0.0) += v;
        }
        out
    }

    fn any_prefix(&self, prefixes: &[&str]) -> bool {
        self.metrics
            .keys()
            .any(|n| prefixes.iter().any(|p| n.starts_with(p)))
    }
}

fn rate(n: Option<f64>, d: Option<f64>) -> Option<f64> {
    match (n, d) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    }
}

fn normalize_fraction(v: Option<f64>) -> Option<f64> {
    v.map(|x| if x > 1.5 { x / 100.0 } else { x })
}

fn counter_int(v: Option<f64>) -> Option<u64> {
    v.map(|x| x.round_ties_even().max(0.0) as u64)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Vllm,
    Sglang,
    /// Recognised by the script (Dynamo, ATOM) but not ported.
    Other,
}

fn detect_backend(export: &ServerExport, framework: &str) -> Option<Backend> {
    let fw = framework.to_lowercase();
    let empty = export.metrics.is_empty();
    if fw.starts_with("dynamo") || export.any_prefix(&["dynamo_"]) {
        return Some(Backend::Other);
    }
    if export.any_prefix(&["atom:", "atom_"]) || (empty && fw == "atom") {
        return Some(Backend::Other);
    }
    if export.any_prefix(&["sglang:"]) || (empty && fw == "sglang") {
        return Some(Backend::Sglang);
    }
    if export.any_prefix(&["vllm:"]) || (empty && fw == "vllm") {
        return Some(Backend::Vllm);
    }
    None
}

fn empty_server_block(present: bool, metric_count: u64) -> ServerMetricsBlock {
    ServerMetricsBlock {
        present,
        adapter: "none".into(),
        metric_count,
        cache: ServerCache::default(),
        kv_cache: ServerKvCache::default(),
        kv_offload: ServerKvOffload::default(),
        tokens: ServerTokens::default(),
        sources: Vec::new(),
    }
}

fn server_block(
    server: Option<&ServerMetricsSummary>,
    ctx: &AgenticContext,
    kept: &[&RequestRecord],
) -> (ServerMetricsBlock, Vec<String>) {
    let export = server.map(|s| server_export(s, None)).unwrap_or_default();
    let mut warnings = Vec::new();
    let mut b = empty_server_block(!export.metrics.is_empty(), export.metrics.len() as u64);
    let backend = detect_backend(&export, &ctx.framework);
    if export.metrics.is_empty() {
        warnings.push(WARNING_NO_SERVER_METRICS.to_string());
    } else {
        match backend {
            Some(Backend::Vllm) => {
                b.adapter = "vllm".into();
                populate_vllm(&export, &mut b);
            }
            Some(Backend::Sglang) => {
                b.adapter = "sglang".into();
                populate_sglang(&export, &mut b);
            }
            _ => {
                let names: Vec<&str> = export.metrics.keys().take(10).map(String::as_str).collect();
                warnings.push(format!(
                    "unsupported agentic server metrics backend; framework={:?}, metric_names=[{}]",
                    ctx.framework.to_lowercase(),
                    names.join(", ")
                ));
            }
        }
    }
    if backend.is_some() {
        if let Some(cap) = ctx.kv_cache_pool_tokens {
            b.kv_cache.gpu_total_tokens = Some(cap);
        }
    }
    // apply_profile_totals: record sums when the server gave none.
    let (isl, osl) = kept.iter().fold((0u64, 0u64), |(i, o), r| {
        (
            i + u64::from(r.prompt_tokens),
            o + u64::from(r.completion_tokens),
        )
    });
    let any = !kept.is_empty();
    if b.tokens.prompt_total.is_none() && any {
        b.tokens.prompt_total = Some(isl);
    }
    if b.tokens.generation_total.is_none() && any {
        b.tokens.generation_total = Some(osl);
    }
    b.tokens.requests_completed = Some(kept.len() as u64);
    (b, warnings)
}

fn populate_vllm(m: &ServerExport, b: &mut ServerMetricsBlock) {
    b.tokens.prompt_total = counter_int(m.total("vllm:prompt_tokens"));
    b.tokens.generation_total = counter_int(m.total("vllm:generation_tokens"));
    let hits = m.total("vllm:prefix_cache_hits");
    let queries = m.total("vllm:prefix_cache_queries");
    let gpu_rate = rate(hits, queries);
    let ext_hits = m.total("vllm:external_prefix_cache_hits");
    let ext_queries = m.total("vllm:external_prefix_cache_queries");
    let ext_rate = rate(ext_hits, ext_queries);
    let c = &mut b.cache;
    c.gpu_cache_hit_rate = gpu_rate;
    c.external_cache_hit_rate = ext_rate;
    c.cpu_cache_hit_rate = ext_rate;
    let by_source = m.sum_by_label("vllm:prompt_tokens_by_source", "source");
    if !by_source.is_empty() {
        let local = by_source.get("local_cache_hit").copied();
        let external = by_source.get("external_kv_transfer").copied();
        let compute = by_source.get("local_compute").copied();
        let total: f64 = by_source.values().sum();
        if total > 0.0 {
            if let Some(l) = local {
                c.gpu_cache_hit_rate = Some(l / total);
            }
            if let Some(e) = external {
                c.cpu_cache_hit_rate = Some(e / total);
                c.external_cache_hit_rate = Some(e / total);
            }
            c.overall_cache_hit_rate =
                Some((local.unwrap_or(0.0) + external.unwrap_or(0.0)) / total);
        }
        b.tokens.prompt_by_source = PromptBySource {
            gpu_cache_hit: local,
            cpu_or_external_cache_hit: external,
            computed: compute,
            raw: by_source,
        };
    } else if gpu_rate.is_some() {
        c.overall_cache_hit_rate = gpu_rate;
    }
    c.prefix_cache_hits = hits;
    c.prefix_cache_queries = queries;
    c.external_prefix_cache_hits = ext_hits;
    c.external_prefix_cache_queries = ext_queries;
    b.kv_cache.gpu_usage_pct = normalize_fraction(m.gauge_stat(
        &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        &MAX_FIRST,
        false,
    ));
    b.kv_cache.cpu_usage_pct =
        normalize_fraction(m.gauge_stat(&["vllm:cpu_kv_cache_usage_perc"], &MAX_FIRST, false));
    let o = &mut b.kv_offload;
    o.bytes_gpu_to_cpu = m.total("vllm:kv_offload_bytes_gpu_to_cpu");
    o.bytes_cpu_to_gpu = m.total("vllm:kv_offload_bytes_cpu_to_gpu");
    o.time_gpu_to_cpu = m.total("vllm:kv_offload_time_gpu_to_cpu");
    o.time_cpu_to_gpu = m.total("vllm:kv_offload_time_cpu_to_gpu");
    o.bandwidth_gpu_to_cpu_bytes_per_second = rate(o.bytes_gpu_to_cpu, o.time_gpu_to_cpu);
    o.bandwidth_cpu_to_gpu_bytes_per_second = rate(o.bytes_cpu_to_gpu, o.time_cpu_to_gpu);
    b.sources = vllm_sources(m);
}

fn source_id(s: &ExportSeries) -> String {
    let component = s
        .labels
        .get("dynamo_component")
        .filter(|v| !v.is_empty())
        .or_else(|| s.labels.get("component"))
        .map(String::as_str)
        .unwrap_or("");
    let role = match component {
        "prefill" => "prefill",
        "backend" | "decode" => "decode",
        "frontend" | "router" => "router",
        _ => "combined",
    };
    let mut parts = vec![role.to_string()];
    for k in ["worker_id", "dp_rank", "engine"] {
        if let Some(v) = s.labels.get(k) {
            parts.push(format!("{k}={v}"));
        }
    }
    parts.join("|")
}

fn vllm_sources(m: &ServerExport) -> Vec<ServerSource> {
    let ids: std::collections::BTreeSet<String> = m
        .series(&[
            "vllm:prompt_tokens",
            "vllm:generation_tokens",
            "vllm:prefix_cache_hits",
            "vllm:prefix_cache_queries",
            "vllm:kv_cache_usage_perc",
            "vllm:prompt_tokens_by_source",
        ])
        .map(source_id)
        .collect();
    ids.into_iter()
        .filter(|id| !id.is_empty())
        .map(|id| {
            let of = |s: &ExportSeries| source_id(s) == id;
            let hits = m.sum_stat(&["vllm:prefix_cache_hits"], &TOTAL_FIRST, of);
            let queries = m.sum_stat(&["vllm:prefix_cache_queries"], &TOTAL_FIRST, of);
            let usage: Vec<f64> = m
                .series(&["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"])
                .filter(|s| of(s))
                .filter_map(|s| ServerExport::stat(s, &MAX_FIRST))
                .collect();
            let usage = (!usage.is_empty())
                .then(|| usage.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            ServerSource {
                role: id.split('|').next().unwrap_or("").to_string(),
                prompt_tokens: m.sum_stat(&["vllm:prompt_tokens"], &TOTAL_FIRST, of),
                generation_tokens: m.sum_stat(&["vllm:generation_tokens"], &TOTAL_FIRST, of),
                prefix_cache_hit_rate: rate(hits, queries),
                gpu_kv_cache_usage_pct: normalize_fraction(usage),
                id,
            }
        })
        .collect()
}

fn populate_sglang(m: &ServerExport, b: &mut ServerMetricsBlock) {
    let prompt = m.total("sglang:prompt_tokens");
    let generation = m.total("sglang:generation_tokens");
    b.tokens.prompt_total = counter_int(prompt);
    b.tokens.generation_total = counter_int(generation);
    let cached = m.sum_by_label("sglang:cached_tokens", "cache_source");
    let device = cached.get("device").copied();
    let host = cached.get("host").copied();
    let all_cached = (!cached.is_empty()).then(|| cached.values().sum::<f64>());
    let c = &mut b.cache;
    c.gpu_cache_hit_rate = rate(device, prompt);
    c.cpu_cache_hit_rate = rate(host, prompt);
    c.external_cache_hit_rate = c.cpu_cache_hit_rate;
    c.overall_cache_hit_rate = rate(all_cached, prompt).or_else(|| {
        normalize_fraction(m.gauge_stat(&["sglang:cache_hit_rate"], &["avg", "max", "total"], true))
    });
    c.cached_tokens_by_source = cached.clone();
    b.kv_cache.gpu_usage_pct =
        normalize_fraction(m.gauge_stat(&["sglang:token_usage"], &MAX_FIRST, false));
    let max_tokens = m.sum_stat(
        &["sglang:max_total_num_tokens"],
        &["max", "avg", "total", "sum"],
        |_| true,
    );
    let host_used = m.gauge_stat(&["sglang:hicache_host_used_tokens"], &MAX_FIRST, false);
    let host_total = m.gauge_stat(&["sglang:hicache_host_total_tokens"], &MAX_FIRST, false);
    b.kv_cache.cpu_usage_pct = rate(host_used, host_total);
    b.kv_cache.gpu_total_tokens = counter_int(max_tokens);
    b.kv_cache.cpu_used_tokens = host_used;
    b.kv_cache.cpu_total_tokens = host_total;
    let prefill_compute = m.sum_stat(&["sglang:realtime_tokens"], &TOTAL_FIRST, |s| {
        s.labels.get("mode").map(String::as_str) == Some("prefill_compute")
    });
    b.tokens.prompt_by_source = PromptBySource {
        gpu_cache_hit: device,
        cpu_or_external_cache_hit: host,
        computed: prefill_compute,
        raw: cached,
    };
}

/// GPU KV-cache pool capacity, tokens, from a server log as the script reads it (§4.5): vLLM
/// `GPU KV cache size: N tokens` lines (the last per `EngineCore[_DPk] pid=…` tag, summed over
/// tags; untagged lines summed), SGLang `max_total_num_tokens=N` (per `DPi TPj EPk` rank, summed;
/// a single value × `dp_size` when the log names a larger DP size). `framework` picks the parser
/// (`sglang`, else vLLM). `None` when the log has no such line.
pub fn kv_pool_tokens_from_server_log(framework: &str, log: &str) -> Option<u64> {
    if framework.to_lowercase() == "sglang" {
        sglang_pool(log)
    } else {
        vllm_pool(log)
    }
}

fn digits_after(s: &str, allow_commas: bool) -> Option<(u64, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || (allow_commas && c == ',')))
        .unwrap_or(s.len());
    let text: String = s[..end].chars().filter(|c| *c != ',').collect();
    Some((text.parse().ok()?, &s[end..]))
}

fn vllm_pool(log: &str) -> Option<u64> {
    let mut per_engine: BTreeMap<String, u64> = BTreeMap::new();
    let (mut bare, mut bare_found) = (0u64, false);
    for line in log.lines() {
        let Some(i) = line.find("GPU KV cache size:") else {
            continue;
        };
        let rest = line[i + "GPU KV cache size:".len()..].trim_start();
        let Some((tokens, tail)) = digits_after(rest, true) else {
            continue;
        };
        if !tail.trim_start().starts_with("tokens") || tokens == 0 {
            continue;
        }
        match engine_tag(line) {
            Some(tag) => {
                per_engine.insert(tag, tokens);
            }
            None => {
                bare += tokens;
                bare_found = true;
            }
        }
    }
    if !per_engine.is_empty() {
        return Some(per_engine.values().sum());
    }
    bare_found.then_some(bare)
}

/// `(EngineCore[_DPn] pid=N)` → `EngineCore[_DPn]`.
fn engine_tag(line: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = line[from..].find("(EngineCore") {
        let start = from + i + 1;
        let rest = &line[start..];
        let tag_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let tag = &rest[..tag_end];
        let ok_tag = tag == "EngineCore"
            || tag
                .strip_prefix("EngineCore_DP")
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        let after = rest[tag_end..].trim_start();
        if ok_tag {
            if let Some(p) = after.strip_prefix("pid=") {
                if let Some((_, t)) = digits_after(p, false) {
                    if t.starts_with(')') {
                        return Some(tag.to_string());
                    }
                }
            }
        }
        from = start;
    }
    None
}

fn sglang_pool(log: &str) -> Option<u64> {
    let dp_size = log.match_indices("dp_size=").find_map(|(i, _)| {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        if log[..i].ends_with(word) {
            return None;
        }
        let (v, tail) = digits_after(&log[i + "dp_size=".len()..], false)?;
        (!tail.starts_with(word)).then_some(v)
    });
    let dp_size = dp_size.filter(|v| *v > 0);
    let mut per_rank: BTreeMap<String, u64> = BTreeMap::new();
    let (mut bare, mut bare_n) = (0u64, 0u32);
    for line in log.lines() {
        let Some(i) = line.find("max_total_num_tokens=") else {
            continue;
        };
        let Some((tokens, _)) = digits_after(&line[i + "max_total_num_tokens=".len()..], false)
        else {
            continue;
        };
        if tokens == 0 {
            continue;
        }
        match rank_tag(line) {
            Some(tag) => {
                per_rank.insert(tag, tokens);
            }
            None => {
                bare += tokens;
                bare_n += 1;
            }
        }
    }
    let dp = dp_size.unwrap_or(1);
    if !per_rank.is_empty() {
        if per_rank.len() == 1 && dp > 1 {
            return per_rank.values().next().map(|v| v * dp);
        }
        return Some(per_rank.values().sum());
    }
    match bare_n {
        0 => None,
        1 if dp > 1 => Some(bare * dp),
        _ => Some(bare),
    }
}

/// `DP<i> TP<j> EP<k>` (whitespace-separated words) → that tag.
fn rank_tag(line: &str) -> Option<String> {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let is = |w: &str, p: &str| {
        w.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
    };
    words.windows(3).find_map(|w| {
        (is(w[0], "DP") && is(w[1], "TP") && is(w[2], "EP"))
            .then(|| format!("{} {} {}", w[0], w[1], w[2]))
    })
}

// ---------------------------------------------------------------------------------------------
// Validity (§4.7)
// ---------------------------------------------------------------------------------------------

/// Pass or fail, with the reasons of a failure.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Validity {
    /// True when no rule failed.
    pub valid: bool,
    /// Why not (empty when valid).
    pub reasons: Vec<String>,
}

impl Validity {
    fn from_reasons(reasons: Vec<String>) -> Self {
        Validity {
            valid: reasons.is_empty(),
            reasons,
        }
    }
}

/// The request counts `validate_agentic_result.py` reads from `profile_export_aiperf.json`
/// (`request_count.avg` = successful profile requests, `error_request_count.avg` = failed ones,
/// `completed_request_count.avg` = both), requests.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestCounts {
    /// Successful profile requests (`None` = the field is missing).
    pub request_count: Option<f64>,
    /// Failed profile requests (`None` = missing, read as 0).
    pub error_request_count: Option<f64>,
    /// Completed profile requests (`None` = missing: successes + errors).
    pub completed_request_count: Option<f64>,
}

impl RequestCounts {
    /// The counts of the profile-phase records.
    pub fn from_records(records: &[RequestRecord]) -> Self {
        let prof = records.iter().filter(|r| r.phase == Phase::Profile);
        let ok = prof.clone().filter(|r| r.success).count() as f64;
        let err = prof.filter(|r| !r.success).count() as f64;
        RequestCounts {
            request_count: Some(ok),
            error_request_count: Some(err),
            completed_request_count: Some(ok + err),
        }
    }
}

/// `validate_agentic_result.py` (§4.7): fails when the summary is missing (`counts = None`),
/// `request_count` is missing, a count is negative or not finite, the completed count is ≤ 0, or
/// errors ÷ completed exceeds `failed_request_threshold` (fraction 0–1, inclusive bound passes;
/// outside `[0, 1]` is itself a failure). Reasons worded as the script's.
pub fn validate(counts: Option<&RequestCounts>, failed_request_threshold: f64) -> Validity {
    let fail = |m: String| Validity::from_reasons(vec![m]);
    if !(0.0..=1.0).contains(&failed_request_threshold) {
        return fail("--failed-request-threshold must be between 0 and 1".into());
    }
    let Some(c) = counts else {
        return fail("profile_export_aiperf.json not found".into());
    };
    for (name, v) in [
        ("request_count", c.request_count),
        ("error_request_count", c.error_request_count),
        ("completed_request_count", c.completed_request_count),
    ] {
        if let Some(v) = v {
            if !v.is_finite() || v < 0.0 {
                return fail(format!(
                    "failed to read profile_export_aiperf.json: {name}.avg must be a finite non-negative number"
                ));
            }
        }
    }
    let Some(successes) = c.request_count else {
        return fail("request_count.avg is missing".into());
    };
    let errors = c.error_request_count.unwrap_or(0.0);
    let completed = c.completed_request_count.unwrap_or(successes + errors);
    if completed <= 0.0 {
        return fail("aiperf completed zero requests".into());
    }
    let rate = errors / completed;
    if rate > failed_request_threshold {
        return fail(format!(
            "aiperf request error rate exceeded the benchmark limit: {}/{} = {:.3}% > {:.3}%",
            fmt_g(errors),
            fmt_g(completed),
            rate * 100.0,
            failed_request_threshold * 100.0
        ));
    }
    Validity::from_reasons(Vec::new())
}

/// Python's `{:g}` for the counts (integral values without a fraction).
fn fmt_g(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Optional rule (§4.7, `AIPERF_REQUIRED_SERVER_METRIC_PREFIX`): some server metric name must
/// start with `prefix` (e.g. `vllm:`).
pub fn require_server_metric_prefix<'a>(
    mut names: impl Iterator<Item = &'a str>,
    prefix: &str,
) -> Validity {
    if names.any(|n| n.starts_with(prefix)) {
        Validity::from_reasons(Vec::new())
    } else {
        Validity::from_reasons(vec![format!(
            "no server metric with the required prefix {prefix:?}"
        )])
    }
}

/// Whether a `submission_valid` value says not valid: `false`, or the string `"false"` (vLLM's
/// `--metadata` pairs are strings, and AgentX's validity travels that way; docs/results.md).
pub fn submission_invalid(v: &Value) -> bool {
    matches!(v, Value::Bool(false)) || v.as_str() == Some("false")
}

/// AIPerf's scenario validity (`metadata.submission_valid` / `submission_invalid_reasons`,
/// §3.9, §4.7) from the records: `run_cancelled` when `run_cancelled`;
/// `context_overflow_rate_exceeded` when context-overflow errors exceed
/// [`CONTEXT_OVERFLOW_RATE_LIMIT`] of the profile records; `insufficient_profile_metric_coverage`
/// when the profiling phase lasted ≥ [`COVERAGE_MIN_DURATION_S`] and the last TTFT/ITL
/// observation (a token of a successful profile request) falls before
/// [`COVERAGE_MIN_FRACTION`] of it. `extra` reasons (e.g. `unsafe_override`) come first.
pub fn scenario_validity(
    records: &[RequestRecord],
    run_cancelled: bool,
    extra: &[String],
) -> Validity {
    let mut reasons: Vec<String> = extra.to_vec();
    if run_cancelled {
        reasons.push("run_cancelled".into());
    }
    let prof: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    if !prof.is_empty() {
        let overflow = prof.iter().filter(|r| is_context_overflow(r)).count();
        if overflow as f64 / prof.len() as f64 > CONTEXT_OVERFLOW_RATE_LIMIT {
            reasons.push("context_overflow_rate_exceeded".into());
        }
    }
    if let Some((start, end)) = metrics::profile_window_ns(records) {
        let dur = end.saturating_sub(start) as f64;
        if dur / NS_PER_S >= COVERAGE_MIN_DURATION_S {
            let last = prof
                .iter()
                .filter(|r| r.success)
                .filter_map(|r| r.last_token_ns.or(r.first_token_ns))
                .max();
            let covered = last.map_or(0.0, |t| t.saturating_sub(start) as f64);
            if covered < COVERAGE_MIN_FRACTION * dur {
                reasons.push("insufficient_profile_metric_coverage".into());
            }
        }
    }
    Validity::from_reasons(reasons)
}

/// True when `r` was cancelled by the client (AIPerf `was_cancelled`, §4.2).
pub fn was_cancelled(r: &RequestRecord) -> bool {
    r.error_class == Some(ErrorClass::Cancelled)
}

#[cfg(test)]
#[path = "agentic_tests.rs"]
mod tests;
