//! The aggregate's shape (reference/agentx.md §4.5): its structs, with the key names and order
//! InferenceX's script writes, and the script's float rounding ([`round_floats`]).

use super::*;

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
    pub(super) fn reciprocal(&self, values: &[f64]) -> Option<Stats> {
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
