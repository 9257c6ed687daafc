//! InferenceX job identity (its benchmark-script environment contract) and the fixed-seq aggregate
//! `agg_<RESULT_FILENAME>.json` that InferenceX's `utils/process_result.py` builds from a vLLM
//! result file (reference/inferencex-producer.md §3.2, §7.1).
//!
//! Rules reproduced (§7.1): base fields from the identity, `conc = int(max_concurrency)`,
//! `model = model_id`; single node: `tp, pp, dcp_size, pcp_size, ep`, `dp_attention` as the raw
//! string, throughputs per GPU ÷ (tp·pp·pcp); multinode (disaggregated): per-role fields,
//! `tput_per_gpu` ÷ all GPUs, `output_tput_per_gpu` ÷ decode GPUs (all GPUs when there are none),
//! `input_tput_per_gpu` ÷ prefill GPUs (the per-GPU rule is [`ThroughputGpus`]), decode topology
//! forced to tp = ep = 0, pp = dcp = pcp = 1 when there are no decode GPUs. Then for every
//! top-level result key ending in `ms`: the key without `_ms` → value / 1000 (seconds); for every
//! key containing `tpot`: `…intvty` → 1000 / value (tokens/s/user). The power block (§7.3) is
//! added by whoever measured power.

use super::keys::LatencyStat;
use super::RunSummary;
use crate::point::DP_ATTENTION;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Parallel layout of one worker (InferenceX `Parallelism`): tensor, pipeline, decode-context,
/// prefill-context and expert parallel sizes. All ≥ 1 except where InferenceX forces decode
/// tp/ep to 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parallelism {
    /// Tensor parallel size (`TP`).
    pub tp: u32,
    /// Pipeline parallel size (`PP_SIZE`, default 1).
    pub pp: u32,
    /// Decode context parallel size (`DCP_SIZE`, default 1).
    pub dcp_size: u32,
    /// Prefill context parallel size (`PCP_SIZE`, default 1).
    pub pcp_size: u32,
    /// Expert parallel size (`EP_SIZE` / `*_EP`).
    pub ep: u32,
}

impl Parallelism {
    /// GPUs of one worker = tp · pp · pcp (InferenceX `gpus_per_worker`; dcp and ep reuse them).
    pub fn gpus(&self) -> u64 {
        // Saturating: a garbage count from a foreign file must not overflow (a debug panic).
        u64::from(self.tp)
            .saturating_mul(u64::from(self.pp))
            .saturating_mul(u64::from(self.pcp_size))
    }

    fn fields(&self, prefix: &str, out: &mut Map<String, Value>) {
        out.insert(format!("{prefix}tp"), self.tp.into());
        out.insert(format!("{prefix}pp"), self.pp.into());
        out.insert(format!("{prefix}dcp_size"), self.dcp_size.into());
        out.insert(format!("{prefix}pcp_size"), self.pcp_size.into());
        out.insert(format!("{prefix}ep"), self.ep.into());
    }
}

/// The GPUs a point's throughput is divided by, and the one definition of InferenceX's per-GPU
/// throughput rule (its result processing, `utils/process_result.py`;
/// reference/inferencex-producer.md §7.1). Totals are tokens/s; each result is **tokens/s per
/// GPU**:
///
/// | | aggregated (one server, tp·pp·pcp GPUs) | disaggregated (prefill + decode GPUs) |
/// |---|---|---|
/// | `tput_per_gpu` | total ÷ GPUs | total ÷ (prefill + decode) |
/// | `output_tput_per_gpu` | output ÷ GPUs | output ÷ decode (all GPUs when there are none) |
/// | `input_tput_per_gpu` | (total − output) ÷ GPUs | (total − output) ÷ prefill |
///
/// A disaggregated split with no prefill GPU (which InferenceX refuses; [`inferencex_aggregate`]
/// does too) divides its input throughput by all GPUs. A split never has zero GPUs, so nothing
/// divides by zero. [`inferencex_aggregate`] writes these; the store fills them from the totals
/// of a result that has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThroughputGpus {
    /// GPUs of the prefill role (all GPUs when aggregated).
    prefill: u64,
    /// GPUs of the decode role (all GPUs when aggregated).
    decode: u64,
    /// All GPUs (≥ 1).
    all: u64,
}

impl ThroughputGpus {
    /// One aggregated server on `gpus` GPUs ([`Parallelism::gpus`], tp·pp·pcp): every
    /// throughput ÷ `gpus`.
    pub fn aggregated(gpus: std::num::NonZeroU64) -> Self {
        let g = gpus.get();
        ThroughputGpus {
            prefill: g,
            decode: g,
            all: g,
        }
    }

    /// Disaggregated prefill/decode on `prefill` and `decode` GPUs (`num_prefill_gpu`,
    /// `num_decode_gpu`); `None` when both are 0. The sum saturates rather than overflows.
    pub fn disaggregated(prefill: u64, decode: u64) -> Option<Self> {
        let all = prefill.saturating_add(decode);
        (all > 0).then_some(ThroughputGpus {
            prefill: if prefill > 0 { prefill } else { all },
            decode: if decode > 0 { decode } else { all },
            all,
        })
    }

    /// All GPUs of the point (≥ 1).
    pub fn all(&self) -> u64 {
        self.all
    }

    /// `tput_per_gpu`: `total` (total token throughput, tokens/s) ÷ all GPUs, tokens/s per GPU.
    pub fn tput_per_gpu(&self, total: f64) -> f64 {
        total / self.all as f64
    }

    /// `output_tput_per_gpu`: `output` (output token throughput, tokens/s) ÷ decode GPUs (all
    /// GPUs when aggregated or there is no decode GPU), tokens/s per GPU.
    pub fn output_tput_per_gpu(&self, output: f64) -> f64 {
        output / self.decode as f64
    }

    /// `input_tput_per_gpu`: (`total` − `output`) (input token throughput, tokens/s) ÷ prefill
    /// GPUs (all GPUs when aggregated or there is no prefill GPU), tokens/s per GPU.
    pub fn input_tput_per_gpu(&self, total: f64, output: f64) -> f64 {
        (total - output) / self.prefill as f64
    }
}

/// One role (prefill or decode) of a disaggregated multinode job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleTopology {
    /// `*_NUM_WORKERS`.
    pub num_workers: u32,
    /// Per-worker layout (`*_TP`, `*_PP_SIZE`, `*_DCP_SIZE`, `*_PCP_SIZE`, `*_EP`).
    pub parallelism: Parallelism,
    /// `*_DP_ATTN`, the raw string (`"true"`/`"false"`).
    pub dp_attention: String,
}

/// Where the job ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Topology {
    /// One aggregated server (`IS_MULTINODE` unset/false).
    SingleNode {
        /// Layout.
        parallelism: Parallelism,
        /// `DP_ATTENTION`, the raw string (InferenceX writes it unchanged).
        dp_attention: String,
    },
    /// Disaggregated prefill/decode across nodes (`IS_MULTINODE=true`).
    MultiNode {
        /// `PREFILL_GPUS`.
        prefill_gpus: u64,
        /// `DECODE_GPUS` (0 for aggregated multinode).
        decode_gpus: u64,
        /// Prefill role.
        prefill: RoleTopology,
        /// Decode role.
        decode: RoleTopology,
        /// `PREFILL_HARDWARE` (set together with `decode_hw` or not at all).
        prefill_hw: Option<String>,
        /// `DECODE_HARDWARE`.
        decode_hw: Option<String>,
    },
}

/// The identity of one InferenceX job point: what `process_result.py` reads from its environment
/// (reference/inferencex-producer.md §3.2, §7.1). Build it with [`JobIdentity::from_env`],
/// [`JobIdentity::from_lookup`] or directly from flags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobIdentity {
    /// `RUNNER_TYPE`: the runner label (aggregate `hw`, e.g. `b200`, `cluster:b200-dgxc`).
    pub runner_type: String,
    /// `FRAMEWORK` (`vllm`, `sglang`, `trt`, …).
    pub framework: String,
    /// `PRECISION` (`fp8`, `fp4`, …).
    pub precision: String,
    /// `SPEC_DECODING` (`none`, `mtp`, …).
    pub spec_decoding: String,
    /// `RESULT_FILENAME`: the aggregate is `agg_<this>.json`.
    pub result_filename: String,
    /// `ISL` (nominal input length, tokens).
    pub isl: u32,
    /// `OSL` (nominal output length, tokens).
    pub osl: u32,
    /// `DISAGG` (`"true"` case-insensitively).
    pub disagg: bool,
    /// `MODEL_PREFIX` (aggregate `infmax_model_prefix`).
    pub model_prefix: String,
    /// `IMAGE` (container image).
    pub image: String,
    /// `RECIPE_FINGERPRINT` (default empty).
    pub recipe_fingerprint: String,
    /// `ROUTER_METADATA` parsed: exactly `{"name", "version"}`, both non-empty strings.
    pub router: Option<Value>,
    /// `KV_P2P_TRANSFER` when non-empty.
    pub kv_p2p_transfer: Option<String>,
    /// Single node or multinode layout.
    pub topology: Topology,
}

/// Why a [`JobIdentity`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// Required variables are unset (all of them listed, in InferenceX's declaration order).
    #[error("missing required environment variables: {}", .0.join(", "))]
    Missing(Vec<String>),
    /// A variable has a value of the wrong form.
    #[error("environment variable {var}={value:?}: {reason}")]
    Invalid {
        /// Variable name.
        var: String,
        /// Its value.
        value: String,
        /// What was expected.
        reason: String,
    },
    /// `DISAGG=true` without `IS_MULTINODE=true` (InferenceX: "Disaggregated mode requires
    /// multinode setup.").
    #[error(
        "DISAGG=true requires IS_MULTINODE=true (disaggregated mode requires a multinode setup)"
    )]
    DisaggRequiresMultinode,
    /// Multinode with no GPU in total or no prefill GPU.
    #[error("multinode results require at least one prefill GPU (PREFILL_GPUS={prefill}, DECODE_GPUS={decode})")]
    NoGpus {
        /// `PREFILL_GPUS`.
        prefill: u64,
        /// `DECODE_GPUS`.
        decode: u64,
    },
    /// `PREFILL_HARDWARE` and `DECODE_HARDWARE` must be set together.
    #[error("PREFILL_HARDWARE and DECODE_HARDWARE must be specified together")]
    HardwarePair,
}

const BASE_VARS: [&str; 10] = [
    "RUNNER_TYPE",
    "FRAMEWORK",
    "PRECISION",
    "SPEC_DECODING",
    "RESULT_FILENAME",
    "ISL",
    "OSL",
    "DISAGG",
    "MODEL_PREFIX",
    "IMAGE",
];
const SINGLE_VARS: [&str; 3] = ["TP", "EP_SIZE", "DP_ATTENTION"];
const MULTI_VARS: [&str; 10] = [
    "PREFILL_GPUS",
    "DECODE_GPUS",
    "PREFILL_NUM_WORKERS",
    "PREFILL_TP",
    "PREFILL_EP",
    "PREFILL_DP_ATTN",
    "DECODE_NUM_WORKERS",
    "DECODE_TP",
    "DECODE_EP",
    "DECODE_DP_ATTN",
];

impl JobIdentity {
    /// Reads the identity from the process environment (InferenceX's contract).
    pub fn from_env() -> Result<Self, IdentityError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the identity through `get(VAR)`, as InferenceX's `process_result.py` does from its
    /// environment: base variables always required (an empty string counts as present), then
    /// `TP, EP_SIZE, DP_ATTENTION` for single node or the `PREFILL_*`/`DECODE_*` set when
    /// `IS_MULTINODE` is `true`. `PP_SIZE`, `DCP_SIZE`, `PCP_SIZE` (and per-role `*_PP_SIZE`, …)
    /// default to 1; sizes must be positive integers.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, IdentityError> {
        let missing = |names: &[&str]| -> Result<(), IdentityError> {
            let m: Vec<String> = names
                .iter()
                .filter(|n| get(n).is_none())
                .map(|n| n.to_string())
                .collect();
            if m.is_empty() {
                Ok(())
            } else {
                Err(IdentityError::Missing(m))
            }
        };
        missing(&BASE_VARS)?;
        let s = |k: &str| get(k).unwrap_or_default();
        let int = |k: &str, default: Option<u64>, min: u64| -> Result<u64, IdentityError> {
            let v = match (get(k), default) {
                (Some(v), _) => v,
                (None, Some(d)) => return Ok(d),
                (None, None) => return Err(IdentityError::Missing(vec![k.to_string()])),
            };
            let n: u64 = v.trim().parse().map_err(|_| IdentityError::Invalid {
                var: k.to_string(),
                value: v.clone(),
                reason: "expected a non-negative integer".into(),
            })?;
            if n < min {
                return Err(IdentityError::Invalid {
                    var: k.to_string(),
                    value: v,
                    reason: format!("must be ≥ {min}"),
                });
            }
            Ok(n)
        };
        let u32_of = |k: &str, default: Option<u64>, min: u64| -> Result<u32, IdentityError> {
            let n = int(k, default, min)?;
            u32::try_from(n).map_err(|_| IdentityError::Invalid {
                var: k.to_string(),
                value: n.to_string(),
                reason: "too large".into(),
            })
        };
        let disagg = s("DISAGG").trim().eq_ignore_ascii_case("true");
        let multinode = get("IS_MULTINODE").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let router = match get("ROUTER_METADATA") {
            Some(v) if !v.trim().is_empty() => Some(parse_router(&v)?),
            _ => None,
        };
        let topology = if multinode {
            missing(&MULTI_VARS)?;
            let (p_hw, d_hw) = (
                get("PREFILL_HARDWARE").filter(|v| !v.is_empty()),
                get("DECODE_HARDWARE").filter(|v| !v.is_empty()),
            );
            if p_hw.is_some() != d_hw.is_some() {
                return Err(IdentityError::HardwarePair);
            }
            let role = |r: &str| -> Result<RoleTopology, IdentityError> {
                Ok(RoleTopology {
                    num_workers: u32_of(&format!("{r}_NUM_WORKERS"), None, 0)?,
                    parallelism: Parallelism {
                        tp: u32_of(&format!("{r}_TP"), None, 0)?,
                        pp: u32_of(&format!("{r}_PP_SIZE"), Some(1), 1)?,
                        dcp_size: u32_of(&format!("{r}_DCP_SIZE"), Some(1), 1)?,
                        pcp_size: u32_of(&format!("{r}_PCP_SIZE"), Some(1), 1)?,
                        ep: u32_of(&format!("{r}_EP"), None, 0)?,
                    },
                    dp_attention: s(&format!("{r}_DP_ATTN")),
                })
            };
            let (prefill_gpus, decode_gpus) =
                (int("PREFILL_GPUS", None, 0)?, int("DECODE_GPUS", None, 0)?);
            if prefill_gpus == 0 {
                return Err(IdentityError::NoGpus {
                    prefill: prefill_gpus,
                    decode: decode_gpus,
                });
            }
            Topology::MultiNode {
                prefill_gpus,
                decode_gpus,
                prefill: role("PREFILL")?,
                decode: role("DECODE")?,
                prefill_hw: p_hw,
                decode_hw: d_hw,
            }
        } else {
            if disagg {
                return Err(IdentityError::DisaggRequiresMultinode);
            }
            missing(&SINGLE_VARS)?;
            Topology::SingleNode {
                parallelism: Parallelism {
                    tp: u32_of("TP", None, 1)?,
                    pp: u32_of("PP_SIZE", Some(1), 1)?,
                    dcp_size: u32_of("DCP_SIZE", Some(1), 1)?,
                    pcp_size: u32_of("PCP_SIZE", Some(1), 1)?,
                    ep: u32_of("EP_SIZE", None, 1)?,
                },
                dp_attention: s("DP_ATTENTION"),
            }
        };
        Ok(JobIdentity {
            runner_type: s("RUNNER_TYPE"),
            framework: s("FRAMEWORK"),
            precision: s("PRECISION"),
            spec_decoding: s("SPEC_DECODING"),
            result_filename: s("RESULT_FILENAME"),
            isl: u32_of("ISL", None, 0)?,
            osl: u32_of("OSL", None, 0)?,
            disagg,
            model_prefix: s("MODEL_PREFIX"),
            image: s("IMAGE"),
            recipe_fingerprint: s("RECIPE_FINGERPRINT"),
            router,
            kv_p2p_transfer: get("KV_P2P_TRANSFER").filter(|v| !v.is_empty()),
            topology,
        })
    }

    /// GPUs of the whole job: tp·pp·pcp single node; prefill + decode GPUs multinode.
    pub fn num_gpus(&self) -> u64 {
        match &self.topology {
            Topology::SingleNode { parallelism, .. } => parallelism.gpus(),
            Topology::MultiNode {
                prefill_gpus,
                decode_gpus,
                ..
            } => prefill_gpus.saturating_add(*decode_gpus),
        }
    }

    /// The aggregate file name, `agg_<RESULT_FILENAME>.json`.
    pub fn aggregate_file_name(&self) -> String {
        format!("agg_{}.json", self.result_filename)
    }
}

fn parse_router(v: &str) -> Result<Value, IdentityError> {
    let bad = |reason: &str| IdentityError::Invalid {
        var: "ROUTER_METADATA".into(),
        value: v.to_string(),
        reason: reason.into(),
    };
    let parsed: Value = serde_json::from_str(v).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let obj = parsed
        .as_object()
        .ok_or_else(|| bad("expected a JSON object {\"name\", \"version\"}"))?;
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    if keys != ["name", "version"] {
        return Err(bad("expected exactly the keys \"name\" and \"version\""));
    }
    for k in ["name", "version"] {
        match obj.get(k).and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() => {}
            _ => return Err(bad(&format!("\"{k}\" must be a non-empty string"))),
        }
    }
    Ok(parsed)
}

/// Why an aggregate could not be built from a summary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AggregateError {
    /// The result has no `max_concurrency` (InferenceX needs `conc`).
    #[error("the result has no max_concurrency; InferenceX aggregates need --max-concurrency")]
    NoConcurrency,
    /// A layout with zero GPUs.
    #[error("the job identity has zero GPUs")]
    ZeroGpus,
}

/// Builds InferenceX's `agg_<RESULT_FILENAME>.json` object from a summary and a job identity
/// (field order as InferenceX writes it; rules in the module doc and reference §7.1).
/// `*_intvty` values whose TPOT statistic is 0 (no multi-token request) are `null` where Python
/// would raise `ZeroDivisionError`.
pub fn inferencex_aggregate(
    summary: &RunSummary,
    id: &JobIdentity,
) -> Result<Value, AggregateError> {
    let conc = summary
        .max_concurrency
        .ok_or(AggregateError::NoConcurrency)?;
    let total = summary.total_token_throughput;
    let output = summary.output_throughput;
    let mut d = Map::new();
    d.insert("hw".into(), id.runner_type.clone().into());
    d.insert("conc".into(), conc.into());
    d.insert("image".into(), id.image.clone().into());
    d.insert("model".into(), summary.model_id.clone().into());
    d.insert("infmax_model_prefix".into(), id.model_prefix.clone().into());
    d.insert("framework".into(), id.framework.clone().into());
    d.insert("precision".into(), id.precision.clone().into());
    d.insert("spec_decoding".into(), id.spec_decoding.clone().into());
    d.insert("disagg".into(), id.disagg.into());
    d.insert(
        "recipe_fingerprint".into(),
        id.recipe_fingerprint.clone().into(),
    );
    d.insert("isl".into(), id.isl.into());
    d.insert("osl".into(), id.osl.into());
    if let Some(r) = &id.router {
        d.insert("router".into(), r.clone());
    }
    if let Some(k) = &id.kv_p2p_transfer {
        d.insert("kv_p2p_transfer".into(), k.clone().into());
    }
    match &id.topology {
        Topology::SingleNode {
            parallelism,
            dp_attention,
        } => {
            let gpus = std::num::NonZeroU64::new(parallelism.gpus())
                .map(ThroughputGpus::aggregated)
                .ok_or(AggregateError::ZeroGpus)?;
            d.insert("is_multinode".into(), false.into());
            parallelism.fields("", &mut d);
            d.insert(DP_ATTENTION.into(), dp_attention.clone().into());
            per_gpu_fields(&gpus, total, output, &mut d);
        }
        Topology::MultiNode {
            prefill_gpus,
            decode_gpus,
            prefill,
            decode,
            prefill_hw,
            decode_hw,
        } => {
            // InferenceX refuses a job without prefill GPUs (and so one without any).
            let gpus = ThroughputGpus::disaggregated(*prefill_gpus, *decode_gpus)
                .filter(|_| *prefill_gpus > 0)
                .ok_or(AggregateError::ZeroGpus)?;
            let dec_par = if *decode_gpus > 0 {
                decode.parallelism
            } else {
                Parallelism {
                    tp: 0,
                    pp: 1,
                    dcp_size: 1,
                    pcp_size: 1,
                    ep: 0,
                }
            };
            d.insert("is_multinode".into(), true.into());
            prefill.parallelism.fields("prefill_", &mut d);
            d.insert(
                "prefill_dp_attention".into(),
                prefill.dp_attention.clone().into(),
            );
            d.insert("prefill_num_workers".into(), prefill.num_workers.into());
            dec_par.fields("decode_", &mut d);
            d.insert(
                "decode_dp_attention".into(),
                decode.dp_attention.clone().into(),
            );
            d.insert("decode_num_workers".into(), decode.num_workers.into());
            d.insert("num_prefill_gpu".into(), (*prefill_gpus).into());
            d.insert("num_decode_gpu".into(), (*decode_gpus).into());
            per_gpu_fields(&gpus, total, output, &mut d);
            if let (Some(p), Some(dh)) = (prefill_hw, decode_hw) {
                d.insert("prefill_hw".into(), p.clone().into());
                d.insert("decode_hw".into(), dh.clone().into());
            }
        }
    }
    d.extend(inferencex_metrics(summary));
    Ok(Value::Object(d))
}

/// `tput_per_gpu`, `output_tput_per_gpu`, `input_tput_per_gpu` (tokens/s per GPU, in this
/// order) from the `total` and `output` throughputs (tokens/s), by [`ThroughputGpus`]' rule.
fn per_gpu_fields(gpus: &ThroughputGpus, total: f64, output: f64, d: &mut Map<String, Value>) {
    d.insert("tput_per_gpu".into(), gpus.tput_per_gpu(total).into());
    d.insert(
        "output_tput_per_gpu".into(),
        gpus.output_tput_per_gpu(output).into(),
    );
    d.insert(
        "input_tput_per_gpu".into(),
        gpus.input_tput_per_gpu(total, output).into(),
    );
}

/// The latency and interactivity fields InferenceX's `process_result.py` derives from a result
/// (reference/inferencex-producer.md §7.1), in the result's order: each of vLLM's latency
/// statistics ([`RunSummary::latency_stats`], ms) under InferenceX's name in seconds
/// ([`LatencyStat::inferencex_key`], `p99_ttft`), and each TPOT statistic also as `…_intvty`
/// = 1000 / value (tokens/s/user, [`crate::metrics::interactivity_from_tpot_ms`]; `null` where
/// the TPOT statistic is 0). The table of vLLM's keys, not a key's suffix, says which keys are
/// latencies in ms: a numeric `foo_ms` key is none (`--metadata` values are strings, never read;
/// the extras are nested under `"inferbench"`). The aggregate and the store's reading of our own
/// summaries both take them from here.
pub fn inferencex_metrics(summary: &RunSummary) -> Map<String, Value> {
    let mut d = Map::new();
    for (stat, ms) in summary.latency_stats() {
        d.insert(stat.inferencex_key(), LatencyStat::seconds(ms).into());
        if let Some(k) = stat.inferencex_intvty_key() {
            let iv = crate::metrics::interactivity_from_tpot_ms(ms);
            d.insert(k, iv.map_or(Value::Null, Value::from));
        }
    }
    d
}
