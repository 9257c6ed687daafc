//! The `sim` subcommand's flags: written once with their `--help` text ([`SimFlags`]), turned
//! into a [`SimConfig`] by [`SimFlags::to_config`], and the `--bound` table ([`bound_table`]).
//! [`super::run`] serves the config.

use anyhow::Context as _;

use inferbench_sim::golden::ThinkingMode;
use inferbench_sim::{
    non_negative_f64, positive_f64, FaultSpec, Mode, Precision, SimConfig, SpecDecode,
    TokenizerKind,
};

/// Flags of `inferbench sim`. Defaults follow vLLM's where one exists.
#[derive(Debug, clap::Args)]
pub struct SimFlags {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 = any free port; the chosen one is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// `timed` (roofline step times) or `instant` (no modelled time; measures a client's ceiling).
    #[arg(long, value_enum, default_value = "timed")]
    pub mode: Mode,
    /// Catalogue hardware: H100, H200, B200, B300, GB200, GB300, MI300X, MI325X, MI355X.
    #[arg(long, default_value = "H100")]
    pub hardware: String,
    /// Catalogue model (name or Hugging Face id), e.g. Llama-3.3-70B, DeepSeek-R1, gpt-oss-120b.
    /// Default: the catalogue entry `--served-model-name` names, if any, else Llama-3.1-8B.
    #[arg(long)]
    pub model: Option<String>,
    /// Name served in /v1/models (default: the catalogue name).
    #[arg(long)]
    pub served_model_name: Option<String>,
    /// Weight precision: bf16 (also fp16, float16, bfloat16), fp8 (float8), fp4 (nvfp4, mxfp4).
    #[arg(long, default_value = "bf16")]
    pub precision: String,
    /// Tensor-parallel GPUs.
    #[arg(long, default_value_t = 1)]
    pub tp: u32,
    /// Modelled seconds per wall second (10 = run ten times faster than the modelled hardware).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = positive_f64)]
    pub time_scale: f64,
    /// Every engine step takes exactly this many milliseconds (modelled) instead of its roofline
    /// time: known timings for client tests (ITL = this, TTFT = prefill steps × this).
    #[arg(long, allow_negative_numbers = true, value_parser = non_negative_f64)]
    pub step_ms: Option<f64>,
    /// Most sequences per step (vLLM --max-num-seqs).
    #[arg(long, default_value_t = 256)]
    pub max_num_seqs: u32,
    /// Token budget per step (vLLM --max-num-batched-tokens).
    #[arg(long, default_value_t = 8192)]
    pub max_num_batched_tokens: u32,
    /// Tokens per KV block (16; AgentX uses 64).
    #[arg(long, default_value_t = 16)]
    pub block_size: u32,
    /// Fraction of HBM for weights + KV cache.
    #[arg(long, default_value_t = 0.9)]
    pub gpu_memory_utilization: f64,
    /// Use exactly this many KV blocks instead of sizing from memory.
    #[arg(long)]
    pub num_gpu_blocks_override: Option<u32>,
    /// Longest prompt + output in tokens (default: the model's).
    #[arg(long)]
    pub max_model_len: Option<u32>,
    /// Turn prefix caching off.
    #[arg(long)]
    pub no_enable_prefix_caching: bool,
    /// Speculative decoding: draft tokens per step (k).
    #[arg(long)]
    pub num_speculative_tokens: Option<u32>,
    /// Mean tokens per decode step with speculative decoding (1 ≤ AL ≤ k + 1).
    #[arg(
        long,
        requires = "num_speculative_tokens",
        conflicts_with = "golden_al"
    )]
    pub acceptance_length: Option<f64>,
    /// Take AL from an InferenceX golden_al_distribution YAML file (model key via
    /// --golden-al-key, mode via --thinking-mode).
    #[arg(long, requires = "num_speculative_tokens")]
    pub golden_al: Option<std::path::PathBuf>,
    /// Model key inside --golden-al (default: the file's only key).
    #[arg(long)]
    pub golden_al_key: Option<String>,
    /// thinking_on or thinking_off, for --golden-al.
    #[arg(long, value_enum, default_value_t = ThinkingMode::ThinkingOn)]
    pub thinking_mode: ThinkingMode,
    /// First N generated tokens of chat responses go to `reasoning_content`.
    #[arg(long, default_value_t = 0)]
    pub reasoning_tokens: u32,
    /// Output tokens when a request sets no max_tokens.
    #[arg(long, default_value_t = 256)]
    pub default_max_tokens: u32,
    /// Without ignore_eos, responses stop (finish_reason "stop") after this many tokens.
    #[arg(long)]
    pub eos_after: Option<u32>,
    /// Fault for every request (or a --fault-rate share): comma-separated items `status=503`
    /// (or `status=500/503/429`), `drop-after=N` (events), `error-after=N`, `malformed-after=N`,
    /// `stall-after=N` with `stall-ms=MS` (default forever), `first-byte-ms=MS`, `crlf`,
    /// `keepalive`, `keepalive-ms=MS`, `no-usage`. The same syntax per request in the
    /// `x-sim-fault` header.
    #[arg(long)]
    pub fault: Option<String>,
    /// Share of requests (0..1) that get --fault.
    #[arg(long, default_value_t = 1.0)]
    pub fault_rate: f64,
    /// Seed for fault draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Instant mode: most SSE events per socket write.
    #[arg(long, default_value_t = 64)]
    pub events_per_write: usize,
    /// Prompt tokenizer: o200k_base (exact, the load generator's default), cl100k_base, or
    /// approx (a fast character-class approximation).
    #[arg(long, default_value = "o200k_base")]
    pub tokenizer: String,
    /// Print the roofline bound of fixed-length points (`ISL/OSL`, e.g. `1024/1024`) for this
    /// hardware, model, precision and tp, at each `--bound-conc`, then exit without serving.
    #[arg(long, value_name = "ISL/OSL")]
    pub bound: Option<String>,
    /// Concurrencies for `--bound`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64,128,256"
    )]
    pub bound_conc: Vec<u32>,
    /// Runtime worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

impl SimFlags {
    /// `--model`, else the catalogue model `--served-model-name` names (so `sim
    /// --served-model-name deepseek-ai/DeepSeek-R1` models DeepSeek-R1), else Llama-3.1-8B.
    fn catalogue_model(&self) -> String {
        if let Some(m) = &self.model {
            return m.clone();
        }
        let cat = inferbench_sim::Catalogue::embedded();
        self.served_model_name
            .as_deref()
            .and_then(|n| cat.model(n).ok())
            .map_or_else(|| "Llama-3.1-8B".to_string(), |m| m.name.clone())
    }

    /// Converts the flags into a [`SimConfig`] (the one place clap types are seen).
    pub fn to_config(&self) -> anyhow::Result<SimConfig> {
        let spec_decode = match self.num_speculative_tokens {
            None => None,
            Some(k) => {
                let al = match (&self.golden_al, self.acceptance_length) {
                    (Some(path), _) => {
                        let text = std::fs::read_to_string(path)
                            .with_context(|| format!("reading {}", path.display()))?;
                        let g = inferbench_sim::golden::parse(&path.display().to_string(), &text)?;
                        inferbench_sim::golden::lookup(
                            &g,
                            self.golden_al_key.as_deref(),
                            Some(self.thinking_mode.key()),
                            k,
                        )
                        .with_context(|| {
                            format!(
                                "{}: no AL for key {:?}, mode {}, draft length {k}",
                                path.display(),
                                self.golden_al_key,
                                self.thinking_mode.key()
                            )
                        })?
                    }
                    (None, Some(al)) => al,
                    (None, None) => anyhow::bail!(
                        "--num-speculative-tokens needs --acceptance-length or --golden-al"
                    ),
                };
                Some(SpecDecode {
                    num_draft_tokens: k,
                    acceptance_length: al,
                })
            }
        };
        Ok(SimConfig {
            mode: self.mode,
            hardware: self.hardware.clone(),
            model: self.catalogue_model(),
            served_model_name: self.served_model_name.clone(),
            precision: Precision::parse(&self.precision)?,
            tp: self.tp,
            time_scale: self.time_scale,
            max_num_seqs: self.max_num_seqs,
            max_num_batched_tokens: self.max_num_batched_tokens,
            block_size: self.block_size,
            gpu_memory_utilization: self.gpu_memory_utilization,
            num_gpu_blocks_override: self.num_gpu_blocks_override,
            max_model_len: self.max_model_len,
            enable_prefix_caching: !self.no_enable_prefix_caching,
            spec_decode,
            reasoning_tokens: self.reasoning_tokens,
            default_max_tokens: self.default_max_tokens,
            eos_after: self.eos_after,
            fault: match &self.fault {
                Some(f) => Some(FaultSpec::parse(f).context("--fault")?),
                None => None,
            },
            fault_rate: self.fault_rate,
            seed: self.seed,
            events_per_write: self.events_per_write,
            threads: self.threads,
            fixed_step_s: self.step_ms.map(|ms| ms / 1000.0),
            tokenizer: TokenizerKind::parse(&self.tokenizer).map_err(anyhow::Error::msg)?,
            ..SimConfig::default()
        })
    }
}

/// The `--bound` table of `spec` (`ISL/OSL`): per concurrency in `concs`, the simulator's
/// roofline (default efficiencies and overhead) and the speed of light (full efficiency, no
/// overhead). Errors: a bad `spec`, hardware or model.
pub fn bound_table(cfg: &SimConfig, spec: &str, concs: &[u32]) -> anyhow::Result<String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    let (isl, osl) = spec
        .split_once('/')
        .and_then(|(i, o)| Some((i.trim().parse::<u32>().ok()?, o.trim().parse::<u32>().ok()?)))
        .with_context(|| format!("--bound {spec:?}: expected ISL/OSL, e.g. 1024/1024"))?;
    let cat = inferbench_sim::Catalogue::embedded();
    let hw = cat.hardware(&cfg.hardware)?;
    let model = cat.model(&cfg.model)?;
    let info = inferbench_sim::describe(cfg)?;
    writeln!(
        out,
        "{} {} on {}x{}, ISL {isl} / OSL {osl}, KV cache {} tokens",
        model.name, cfg.precision, cfg.tp, hw.name, info.kv_capacity_tokens
    )?;
    writeln!(
        out,
        "{:>6} {:>12} {:>14} {:>12} {:>12} {:>14} {:>12}",
        "conc",
        "step (ms)",
        "tok/s/user",
        "tok/s/GPU",
        "TTFT (ms)",
        "SoL tok/s/user",
        "SoL tok/s/GPU"
    )?;
    let sol = inferbench_sim::RooflineParams::speed_of_light();
    for &c in concs {
        let need = u64::from(c) * u64::from(isl + osl);
        if need > info.kv_capacity_tokens {
            writeln!(
                out,
                "{c:>6}   (needs {need} KV tokens: more than the cache holds)"
            )?;
            continue;
        }
        let b = inferbench_sim::point_bound(
            hw,
            model,
            cfg.precision,
            cfg.tp,
            c,
            isl,
            osl,
            &cfg.roofline,
        );
        let s = inferbench_sim::point_bound(hw, model, cfg.precision, cfg.tp, c, isl, osl, &sol);
        writeln!(
            out,
            "{c:>6} {:>12.2} {:>14.1} {:>12.1} {:>12.1} {:>14.1} {:>12.1}",
            b.decode_step_s * 1e3,
            b.interactivity_tok_s_user,
            b.total_tok_s_per_gpu,
            b.ttft_s * 1e3,
            s.interactivity_tok_s_user,
            s.total_tok_s_per_gpu
        )?;
    }
    writeln!(
        out,
        "step = one decode step of the batch; tok/s/GPU = input + output tokens; SoL = speed of \
         light: the same bound with the hardware's peak compute and memory bandwidth fully used \
         (no efficiency factors), the most any engine could reach"
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        flags: SimFlags,
    }

    fn config(argv: &[&str]) -> anyhow::Result<SimConfig> {
        let mut full = vec!["sim"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full)?.flags.to_config()
    }

    /// Flags become the config (mode, the model a served name implies, step time in seconds);
    /// bad values are refused.
    #[test]
    fn flags_to_config() {
        let c = config(&[]).unwrap();
        assert_eq!((c.mode, c.model.as_str()), (Mode::Timed, "Llama-3.1-8B"));
        let c = config(&[
            "--mode",
            "instant",
            "--served-model-name",
            "deepseek-ai/DeepSeek-R1",
            "--step-ms",
            "5",
        ])
        .unwrap();
        assert_eq!(c.mode, Mode::Instant);
        assert_eq!(c.model, "DeepSeek-R1");
        assert_eq!(c.fixed_step_s, Some(0.005));
        assert!(config(&["--num-speculative-tokens", "3"]).is_err());
        assert!(config(&["--time-scale", "-1"]).is_err());
        assert!(config(&["--mode", "fast"]).is_err());
        assert!(positive_f64("0").is_err() && non_negative_f64("0").is_ok());
    }

    /// The `--bound` table has its header, one line per concurrency, a legend, and refuses a
    /// bad spec.
    #[test]
    fn bound_table_lines() {
        let c = config(&[]).unwrap();
        let t = bound_table(&c, "1024/1024", &[1, 8]).unwrap();
        assert_eq!(t.lines().count(), 5, "{t}");
        assert!(t.lines().nth(1).unwrap().contains("SoL tok/s/GPU"), "{t}");
        assert!(t.lines().nth(4).unwrap().starts_with("step = "), "{t}");
        assert!(bound_table(&c, "1024", &[1]).is_err());
    }
}
