//! [`SimConfig`]: everything that shapes the simulated server, with vLLM-like defaults.

use crate::catalogue::{Catalogue, CatalogueError, Precision};
use crate::fault::FaultSpec;
use crate::roofline::RooflineParams;
use crate::tokenize::TokenizerKind;

/// How time is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// One engine step loop with roofline step times (divided by `time_scale`).
    #[default]
    Timed,
    /// No modelled time: every token is streamed as fast as the socket takes it, several SSE
    /// events per write. Measures a client's ceiling.
    Instant,
}

/// `--mode timed|instant` (the values without their descriptions, as `--help` lists them;
/// the `clap` feature, for the CLI's `sim` flags).
#[cfg(feature = "clap")]
impl clap::ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        &[Mode::Timed, Mode::Instant]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Mode::Timed => "timed",
            Mode::Instant => "instant",
        }))
    }
}

/// A flag's value as a finite number > 0 (a clap value parser: `--time-scale`).
///
/// # Errors
/// Not a number, or not finite and positive: the reason, for the flag's message.
pub fn positive_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be a positive number".into()),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// A flag's value as a finite number ≥ 0 (a clap value parser: `--step-ms`).
///
/// # Errors
/// Not a number, or negative or not finite: the reason, for the flag's message.
pub fn non_negative_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err("must be a non-negative number".into()),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// Speculative decoding: each decode step verifies `num_draft_tokens` drafts and emits
/// `acceptance_length` tokens on average (the bonus token included, so 1 ≤ AL ≤ k + 1).
/// The roofline charges the verification (1 + k tokens per sequence); the drafter's own cost
/// (an MTP head or a small draft model) is not modelled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecDecode {
    /// Draft tokens proposed per step (`num_speculative_tokens`, k).
    pub num_draft_tokens: u32,
    /// Mean tokens emitted per decode step (AL), `1 ≤ AL ≤ k + 1`. Step `s` of a request emits
    /// `⌊s·AL⌋ − ⌊(s−1)·AL⌋` tokens: deterministic, with mean exactly AL.
    pub acceptance_length: f64,
}

/// Configuration of one simulated server.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Timed (default) or instant.
    pub mode: Mode,
    /// Catalogue hardware name. Default `"H100"`.
    pub hardware: String,
    /// Catalogue model name (also accepted as a request's `model`). Default `"Llama-3.1-8B"`.
    pub model: String,
    /// Name served in `/v1/models` and echoed in responses; `None` = the catalogue model's name.
    pub served_model_name: Option<String>,
    /// Weight precision. Default BF16.
    pub precision: Precision,
    /// Tensor-parallel GPUs. Default 1.
    pub tp: u32,
    /// Modelled seconds per wall second (10 = ten times faster than the modelled hardware).
    /// Default 1. Reported latencies in `/metrics` are modelled seconds.
    pub time_scale: f64,
    /// Most sequences in a step (vLLM `--max-num-seqs`). Default 256.
    pub max_num_seqs: u32,
    /// Token budget of one step (vLLM `--max-num-batched-tokens`; chunked prefill). Default 8192.
    pub max_num_batched_tokens: u32,
    /// Tokens per KV block. Default 16 (64 for AgentX runs).
    pub block_size: u32,
    /// Fraction of HBM the engine may use for weights and KV (vLLM `--gpu-memory-utilization`).
    /// Default 0.9.
    pub gpu_memory_utilization: f64,
    /// Use exactly this many KV blocks instead of sizing from memory (tests).
    pub num_gpu_blocks_override: Option<u32>,
    /// Longest prompt + output, tokens; `None` = the catalogue model's `max_model_len`.
    pub max_model_len: Option<u32>,
    /// Prefix caching on block hashes. Default on (as vLLM V1).
    pub enable_prefix_caching: bool,
    /// Speculative decoding; `None` = off.
    pub spec_decode: Option<SpecDecode>,
    /// The first N generated tokens of chat responses go to `reasoning_content`. Default 0.
    pub reasoning_tokens: u32,
    /// Output length when a request gives no `max_tokens`/`max_completion_tokens`. Default 256.
    pub default_max_tokens: u32,
    /// Natural response length: without `ignore_eos`, a response ends with `finish_reason`
    /// `"stop"` after this many tokens (at least `min_tokens`) when that is below `max_tokens`.
    /// `None` (default) = responses always run to `max_tokens` (`"length"`).
    pub eos_after: Option<u32>,
    /// Fault applied to a request with probability `fault_rate` (the `x-sim-fault` header
    /// overrides per request). Default none.
    pub fault: Option<FaultSpec>,
    /// Probability in 0..=1 that `fault` applies to a request. Default 1.
    pub fault_rate: f64,
    /// Seed of every random choice (fault draws). Same seed, same arrival order → same choices.
    pub seed: u64,
    /// Roofline efficiencies and fixed costs.
    pub roofline: RooflineParams,
    /// Every engine step takes exactly this many modelled seconds instead of its roofline time
    /// (for tests that want known timings: TTFT = prefill steps × step, ITL = step). Default
    /// `None`.
    pub fixed_step_s: Option<f64>,
    /// Instant mode: most SSE events written per body frame (one socket write). Default 64.
    pub events_per_write: usize,
    /// Worker threads of the runtime [`crate::spawn`] starts. Default 1.
    pub threads: usize,
    /// How prompts are tokenized (counts, prefix-cache hashes). Default `o200k_base`, the load
    /// generator's default, so requested and served prompt lengths agree.
    pub tokenizer: TokenizerKind,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            mode: Mode::Timed,
            hardware: "H100".into(),
            model: "Llama-3.1-8B".into(),
            served_model_name: None,
            precision: Precision::Bf16,
            tp: 1,
            time_scale: 1.0,
            max_num_seqs: 256,
            max_num_batched_tokens: 8192,
            block_size: 16,
            gpu_memory_utilization: 0.9,
            num_gpu_blocks_override: None,
            max_model_len: None,
            enable_prefix_caching: true,
            spec_decode: None,
            reasoning_tokens: 0,
            default_max_tokens: 256,
            eos_after: None,
            fault: None,
            fault_rate: 1.0,
            seed: 0,
            roofline: RooflineParams::default(),
            fixed_step_s: None,
            events_per_write: 64,
            threads: 1,
            tokenizer: TokenizerKind::default(),
        }
    }
}

/// Invalid [`SimConfig`] values; each names the field (the CLI flag of the same name).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Hardware/model/precision not in the catalogue.
    #[error(transparent)]
    Catalogue(#[from] CatalogueError),
    /// A field is outside its allowed range.
    #[error("{field} = {value} is invalid: {rule}")]
    Invalid {
        /// Field (flag) name.
        field: &'static str,
        /// The given value.
        value: String,
        /// What is allowed.
        rule: &'static str,
    },
    /// Weights leave no room for the KV cache.
    #[error(
        "{model} at {precision} needs {weights_gb:.1} GB of weights but {tp} x {hardware} with \
         gpu_memory_utilization {util} gives {budget_gb:.1} GB: no room for the KV cache \
         (raise --tp or lower the precision)"
    )]
    DoesNotFit {
        /// Model name.
        model: String,
        /// Precision.
        precision: Precision,
        /// Weight GB.
        weights_gb: f64,
        /// tp.
        tp: u32,
        /// Hardware name.
        hardware: String,
        /// gpu_memory_utilization.
        util: f64,
        /// Usable GB.
        budget_gb: f64,
    },
    /// An explicit `max_model_len` is longer than the KV cache holds.
    #[error(
        "max_model_len = {max_model_len} is larger than the {kv_capacity_tokens} tokens the KV \
         cache holds (num_gpu_blocks x block_size): lower --max-model-len, or raise \
         --num-gpu-blocks-override / --gpu-memory-utilization"
    )]
    ContextDoesNotFit {
        /// The requested max_model_len, tokens.
        max_model_len: u32,
        /// KV-cache capacity, tokens.
        kv_capacity_tokens: u64,
    },
}

/// Activation and runtime memory reserved per GPU before sizing the KV cache, bytes (2 GB; vLLM
/// profiles this at start-up, a fixed figure keeps the simulator deterministic).
pub const ACTIVATION_RESERVE_BYTES: f64 = 2e9;

/// Values derived from a validated config.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub served_name: String,
    pub model_name: String,
    pub num_blocks: u32,
    pub max_model_len: u32,
}

impl SimConfig {
    /// Checks every field and derives the KV-cache size:
    /// `num_blocks = ⌊(tp · HBM · util − weights − tp · 2 GB) / (kv bytes per token · block_size)⌋`.
    pub(crate) fn resolve(&self) -> Result<Resolved, ConfigError> {
        fn bad(field: &'static str, value: impl ToString, rule: &'static str) -> ConfigError {
            ConfigError::Invalid {
                field,
                value: value.to_string(),
                rule,
            }
        }
        let cat = Catalogue::embedded();
        let hw = cat.hardware(&self.hardware)?;
        let model = cat.model(&self.model)?;
        if self.tp == 0 {
            return Err(bad("tp", self.tp, "must be at least 1"));
        }
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return Err(bad(
                "time_scale",
                self.time_scale,
                "must be a positive number",
            ));
        }
        if self.max_num_seqs == 0 {
            return Err(bad("max_num_seqs", 0, "must be at least 1"));
        }
        if self.block_size == 0 {
            return Err(bad("block_size", 0, "must be at least 1"));
        }
        if self.max_num_batched_tokens < self.block_size {
            return Err(bad(
                "max_num_batched_tokens",
                self.max_num_batched_tokens,
                "must be at least block_size",
            ));
        }
        if !(self.gpu_memory_utilization > 0.0 && self.gpu_memory_utilization <= 1.0) {
            return Err(bad(
                "gpu_memory_utilization",
                self.gpu_memory_utilization,
                "must be in (0, 1]",
            ));
        }
        if !(0.0..=1.0).contains(&self.fault_rate) {
            return Err(bad("fault_rate", self.fault_rate, "must be in [0, 1]"));
        }
        if let Some(t) = self.fixed_step_s {
            if !(t.is_finite() && t >= 0.0) {
                return Err(bad(
                    "fixed_step_s",
                    t,
                    "must be a non-negative number of seconds",
                ));
            }
        }
        if self.threads == 0 {
            return Err(bad("threads", 0, "must be at least 1"));
        }
        if self.events_per_write == 0 {
            return Err(bad("events_per_write", 0, "must be at least 1"));
        }
        if let Some(s) = self.spec_decode {
            if s.num_draft_tokens == 0 {
                return Err(bad("num_draft_tokens", 0, "must be at least 1"));
            }
            let al = s.acceptance_length;
            if !(al >= 1.0 && al <= f64::from(s.num_draft_tokens) + 1.0) {
                return Err(bad(
                    "acceptance_length",
                    al,
                    "must be in [1, num_draft_tokens + 1]",
                ));
            }
        }
        let max_model_len = self.max_model_len.unwrap_or(model.max_model_len);
        if max_model_len == 0 {
            return Err(bad("max_model_len", 0, "must be at least 1"));
        }
        let num_blocks = match self.num_gpu_blocks_override {
            Some(0) => return Err(bad("num_gpu_blocks_override", 0, "must be at least 1")),
            Some(n) => n,
            None => {
                let tp = f64::from(self.tp);
                let budget = tp * hw.hbm_bytes() * self.gpu_memory_utilization;
                let weights = model.weight_bytes(self.precision);
                let free = budget - weights - tp * ACTIVATION_RESERVE_BYTES;
                let per_block =
                    model.kv_bytes_per_token(self.precision) as f64 * f64::from(self.block_size);
                let blocks = (free / per_block).floor();
                if blocks < 1.0 {
                    return Err(ConfigError::DoesNotFit {
                        model: model.name.clone(),
                        precision: self.precision,
                        weights_gb: weights / 1e9,
                        tp: self.tp,
                        hardware: hw.name.clone(),
                        util: self.gpu_memory_utilization,
                        budget_gb: budget / 1e9,
                    });
                }
                blocks.min(f64::from(u32::MAX - 1)) as u32
            }
        };
        // A sequence must fit in the cache (vLLM refuses to start otherwise): an explicit
        // max_model_len that cannot is an error; the catalogue default is capped.
        let capacity = u64::from(num_blocks) * u64::from(self.block_size);
        let max_model_len = match self.max_model_len {
            Some(m) if u64::from(m) > capacity => {
                return Err(ConfigError::ContextDoesNotFit {
                    max_model_len: m,
                    kv_capacity_tokens: capacity,
                })
            }
            Some(m) => m,
            None => max_model_len.min(capacity.min(u64::from(u32::MAX)) as u32),
        };
        Ok(Resolved {
            served_name: self
                .served_model_name
                .clone()
                .unwrap_or_else(|| model.name.clone()),
            model_name: model.name.clone(),
            num_blocks,
            max_model_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_blocks_sized_from_memory_budget() {
        // Llama-3.1-8B BF16 on one H100: (80e9·0.9 − 16.06e9 − 2e9) / (131072 · 16)
        // = 53.94e9 / 2,097,152 = 25,720.74 → 25,720 blocks.
        let r = SimConfig::default().resolve().unwrap();
        assert_eq!(r.num_blocks, 25_720);
        assert_eq!(r.served_name, "Llama-3.1-8B");
    }

    #[test]
    fn max_model_len_is_capped_or_refused_by_the_kv_cache() {
        // Issue: a tiny --num-gpu-blocks-override still advertised the model's full context.
        let cfg = SimConfig {
            num_gpu_blocks_override: Some(10),
            ..SimConfig::default()
        };
        assert_eq!(cfg.resolve().unwrap().max_model_len, 160);
        let cfg = SimConfig {
            num_gpu_blocks_override: Some(10),
            max_model_len: Some(161),
            ..SimConfig::default()
        };
        assert_eq!(
            cfg.resolve().unwrap_err().to_string(),
            "max_model_len = 161 is larger than the 160 tokens the KV cache holds \
             (num_gpu_blocks x block_size): lower --max-model-len, or raise \
             --num-gpu-blocks-override / --gpu-memory-utilization"
        );
        let cfg = SimConfig {
            threads: 0,
            ..SimConfig::default()
        };
        assert_eq!(
            cfg.resolve().unwrap_err().to_string(),
            "threads = 0 is invalid: must be at least 1"
        );
    }

    #[test]
    fn too_big_model_is_a_named_error() {
        let cfg = SimConfig {
            model: "DeepSeek-R1".into(),
            ..SimConfig::default()
        };
        let e = cfg.resolve().unwrap_err().to_string();
        assert!(e.contains("DeepSeek-R1") && e.contains("--tp"), "{e}");
        let cfg = SimConfig {
            tp: 0,
            ..SimConfig::default()
        };
        assert_eq!(
            cfg.resolve().unwrap_err().to_string(),
            "tp = 0 is invalid: must be at least 1"
        );
    }
}
