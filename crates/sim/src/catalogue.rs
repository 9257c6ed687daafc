//! The hardware × model catalogue (`crates/sim/data/catalogue.json`, embedded at build time).
//!
//! Every entry carries a `source` string naming the public page or model card its figures come
//! from; the file's `about` field states the conventions (dense TFLOP/s, one-direction
//! interconnect bandwidth, how KV bytes per token and attention FLOPs are derived).

use std::sync::OnceLock;

use serde::Deserialize;

/// Numeric precision of weights (and of the KV cache, see [`Model::kv_bytes_per_token`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    /// BF16/FP16 weights: 2 bytes per parameter, BF16 KV cache.
    Bf16,
    /// FP8 weights: 1 byte per parameter, FP8 KV cache.
    Fp8,
    /// FP4 weights (NVFP4/MXFP4): 0.5 byte per parameter (block scales ignored), FP8 KV cache.
    Fp4,
}

impl Precision {
    /// Parses `bf16`, `fp16`, `fp8`, `fp4`, `nvfp4`, `mxfp4` (case-insensitive).
    pub fn parse(s: &str) -> Result<Self, CatalogueError> {
        match s.to_ascii_lowercase().as_str() {
            "bf16" | "fp16" | "float16" | "bfloat16" => Ok(Precision::Bf16),
            "fp8" | "float8" => Ok(Precision::Fp8),
            "fp4" | "nvfp4" | "mxfp4" => Ok(Precision::Fp4),
            _ => Err(CatalogueError::UnknownPrecision(s.to_string())),
        }
    }

    /// Canonical lowercase name (`"bf16"`, `"fp8"`, `"fp4"`), also the key in `tflops`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
            Precision::Fp4 => "fp4",
        }
    }

    /// Bytes per weight parameter: 2, 1 or 0.5.
    pub fn weight_bytes_per_param(self) -> f64 {
        match self {
            Precision::Bf16 => 2.0,
            Precision::Fp8 => 1.0,
            Precision::Fp4 => 0.5,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Catalogue lookup errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogueError {
    /// `--hardware` names no catalogue entry.
    #[error("unknown hardware {0:?} (known: {1})")]
    UnknownHardware(String, String),
    /// `--model` names no catalogue entry.
    #[error("unknown model {0:?} (known: {1})")]
    UnknownModel(String, String),
    /// `--precision` is not bf16/fp16/fp8/fp4.
    #[error("unknown precision {0:?} (known: bf16, fp16, fp8, fp4, nvfp4, mxfp4)")]
    UnknownPrecision(String),
}

/// One accelerator (per-GPU figures).
#[derive(Debug, Clone, Deserialize)]
pub struct Hardware {
    /// Canonical name (`"H100"`).
    pub name: String,
    /// Other accepted names (case-insensitive).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// `"NVIDIA"` or `"AMD"`.
    pub vendor: String,
    /// HBM capacity per GPU, decimal GB (10⁹ bytes).
    pub hbm_gb: f64,
    /// HBM bandwidth per GPU, TB/s (10¹² bytes/s).
    pub hbm_tb_s: f64,
    /// Dense tensor throughput per GPU in TFLOP/s (10¹²), keyed by precision name.
    pub tflops: std::collections::BTreeMap<String, f64>,
    /// Scale-up bandwidth per GPU, one direction, GB/s (10⁹ bytes/s).
    pub interconnect_gb_s: f64,
    /// Public source of the figures.
    pub source: String,
}

impl Hardware {
    /// Dense peak FLOP/s per GPU at `p`. A precision the hardware has no tensor cores for runs at
    /// the next wider one it has (FP4 on H100 → FP8 rate; the weights still take 0.5 byte).
    pub fn peak_flops(&self, p: Precision) -> f64 {
        let order: &[Precision] = match p {
            Precision::Fp4 => &[Precision::Fp4, Precision::Fp8, Precision::Bf16],
            Precision::Fp8 => &[Precision::Fp8, Precision::Bf16],
            Precision::Bf16 => &[Precision::Bf16],
        };
        for q in order {
            if let Some(t) = self.tflops.get(q.as_str()) {
                return t * 1e12;
            }
        }
        // The embedded catalogue gives bf16 for every entry (checked by a test).
        1e12
    }

    /// HBM bytes per GPU (decimal).
    pub fn hbm_bytes(&self) -> f64 {
        self.hbm_gb * 1e9
    }

    /// HBM bandwidth per GPU, bytes/s.
    pub fn hbm_bytes_per_s(&self) -> f64 {
        self.hbm_tb_s * 1e12
    }
}

/// Mixture-of-experts shape.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub experts: u32,
    /// Routed experts each token activates.
    pub experts_per_token: u32,
}

/// One model architecture.
#[derive(Debug, Clone, Deserialize)]
pub struct Model {
    /// Canonical name (`"Llama-3.3-70B"`).
    pub name: String,
    /// Other accepted names, e.g. the Hugging Face id (case-insensitive).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Total parameters, billions.
    pub params_b: f64,
    /// Parameters used per token, billions (equal to `params_b` for dense models).
    pub active_params_b: f64,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size (elements of one token's residual stream; the all-reduce payload per token).
    pub hidden: u32,
    /// KV-cache bytes per token at BF16 (see the catalogue's `about`).
    pub kv_bytes_per_token_bf16: u64,
    /// Attention FLOPs one new token spends per context token (see the catalogue's `about`).
    pub attn_flops_per_ctx_token: u64,
    /// Longest context the model supports, tokens (the sim's default `max_model_len`).
    pub max_model_len: u32,
    /// MoE shape; `None` for dense models.
    pub moe: Option<Moe>,
    /// Public source of the figures.
    pub source: String,
}

impl Model {
    /// KV-cache bytes per token: BF16 for [`Precision::Bf16`], FP8 (half) for FP8 and FP4, as
    /// InferenceX's FP8/FP4 recipes run with `--kv-cache-dtype fp8`.
    pub fn kv_bytes_per_token(&self, p: Precision) -> u64 {
        match p {
            Precision::Bf16 => self.kv_bytes_per_token_bf16,
            Precision::Fp8 | Precision::Fp4 => self.kv_bytes_per_token_bf16 / 2,
        }
    }

    /// Parameters outside the routed experts (attention, embeddings, shared experts, dense
    /// layers) and parameters of one routed expert summed over layers, both absolute counts.
    /// From `total = dense + E·e` and `active = dense + k·e`. Dense models: `(params, 0)`.
    pub fn dense_and_expert_params(&self) -> (f64, f64) {
        let total = self.params_b * 1e9;
        let active = self.active_params_b * 1e9;
        match self.moe {
            Some(m) if m.experts > m.experts_per_token => {
                let e = (total - active) / f64::from(m.experts - m.experts_per_token);
                (active - f64::from(m.experts_per_token) * e, e)
            }
            _ => (total, 0.0),
        }
    }

    /// Weight bytes of the whole model at precision `p` (all GPUs together).
    pub fn weight_bytes(&self, p: Precision) -> f64 {
        self.params_b * 1e9 * p.weight_bytes_per_param()
    }
}

/// The parsed catalogue.
#[derive(Debug, Clone, Deserialize)]
pub struct Catalogue {
    /// Conventions of the figures.
    pub about: String,
    /// Accelerators.
    pub hardware: Vec<Hardware>,
    /// Model architectures.
    pub models: Vec<Model>,
}

const EMBEDDED: &str = include_str!("../data/catalogue.json");

impl Catalogue {
    /// The catalogue embedded in the binary (parsed once).
    pub fn embedded() -> &'static Catalogue {
        static CAT: OnceLock<Catalogue> = OnceLock::new();
        CAT.get_or_init(|| {
            serde_json::from_str(EMBEDDED)
                .expect("crates/sim/data/catalogue.json is valid (checked by a unit test)")
        })
    }

    /// Hardware by name or alias, case-insensitive.
    pub fn hardware(&self, name: &str) -> Result<&Hardware, CatalogueError> {
        self.hardware
            .iter()
            .find(|h| matches(&h.name, &h.aliases, name))
            .ok_or_else(|| {
                CatalogueError::UnknownHardware(
                    name.to_string(),
                    self.hardware
                        .iter()
                        .map(|h| h.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            })
    }

    /// Model by name or alias, case-insensitive.
    pub fn model(&self, name: &str) -> Result<&Model, CatalogueError> {
        self.models
            .iter()
            .find(|m| matches(&m.name, &m.aliases, name))
            .ok_or_else(|| {
                CatalogueError::UnknownModel(
                    name.to_string(),
                    self.models
                        .iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            })
    }
}

fn matches(name: &str, aliases: &[String], q: &str) -> bool {
    name.eq_ignore_ascii_case(q) || aliases.iter().any(|a| a.eq_ignore_ascii_case(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalogue_parses_and_is_complete() {
        let c = Catalogue::embedded();
        for h in [
            "H100", "H200", "B200", "B300", "GB200", "GB300", "MI300X", "MI325X", "MI355X",
        ] {
            let hw = c.hardware(h).unwrap();
            assert!(hw.tflops.contains_key("bf16"), "{h} lacks bf16");
            assert!(hw.tflops.contains_key("fp8"), "{h} lacks fp8");
            assert!(!hw.source.is_empty());
        }
        for m in [
            "Llama-3.3-70B",
            "DeepSeek-R1",
            "gpt-oss-120b",
            "Qwen3.5-397B-A17B",
            "SmolLM2-135M",
            "Llama-3.1-8B",
        ] {
            assert!(!c.model(m).unwrap().source.is_empty());
        }
        assert!(c.model("meta-llama/llama-3.3-70b-instruct").is_ok());
        let e = c.hardware("TPU").unwrap_err().to_string();
        assert!(e.contains("H100") && e.contains("\"TPU\""), "{e}");
    }

    #[test]
    fn kv_bytes_match_architecture() {
        let c = Catalogue::embedded();
        // Llama-3.3-70B: 2 (K,V) x 80 layers x 8 KV heads x 128 dims x 2 bytes.
        let m = c.model("Llama-3.3-70B").unwrap();
        assert_eq!(m.kv_bytes_per_token(Precision::Bf16), 2 * 80 * 8 * 128 * 2);
        assert_eq!(m.kv_bytes_per_token(Precision::Fp8), 80 * 8 * 128 * 2);
        // DeepSeek-R1 MLA: 61 layers x 576 values x 2 bytes.
        let d = c.model("DeepSeek-R1").unwrap();
        assert_eq!(d.kv_bytes_per_token(Precision::Bf16), 61 * 576 * 2);
        let (dense, expert) = d.dense_and_expert_params();
        assert!((dense + 256.0 * expert - 671e9).abs() < 1.0);
        assert!((dense + 8.0 * expert - 37e9).abs() < 1.0);
    }

    #[test]
    fn fp4_falls_back_to_fp8_rate_on_hopper() {
        let c = Catalogue::embedded();
        assert_eq!(
            c.hardware("H100").unwrap().peak_flops(Precision::Fp4),
            1979e12
        );
        assert_eq!(
            c.hardware("B200").unwrap().peak_flops(Precision::Fp4),
            9000e12
        );
    }
}
