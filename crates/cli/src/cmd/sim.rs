//! `inferbench sim`: run the simulated OpenAI-compatible inference server (crate
//! `inferbench-sim`; DESIGN.md §6).

use anyhow::Context as _;
use inferbench_sim::{FaultSpec, Mode, Precision, SimConfig, SpecDecode, TokenizerKind};

/// Flags of `inferbench sim`. Defaults follow vLLM's where one exists.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 = any free port; the chosen one is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// `timed` (roofline step times) or `instant` (no modelled time; measures a client's ceiling).
    #[arg(long, default_value = "timed", value_parser = ["timed", "instant"])]
    pub mode: String,
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
    #[arg(long, value_enum, default_value_t = super::ThinkingMode::ThinkingOn)]
    pub thinking_mode: super::ThinkingMode,
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

/// clap value parser: a finite number > 0.
pub(crate) fn positive_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be a positive number".into()),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// clap value parser: a finite number ≥ 0.
fn non_negative_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err("must be a non-negative number".into()),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

impl Args {
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
            mode: if self.mode == "instant" {
                Mode::Instant
            } else {
                Mode::Timed
            },
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

/// The `--bound` table: per concurrency, the simulator's roofline (default efficiencies and
/// overhead) and the speed of light (full efficiency, no overhead).
fn print_bound(cfg: &SimConfig, spec: &str, concs: &[u32]) -> anyhow::Result<()> {
    let (isl, osl) = spec
        .split_once('/')
        .and_then(|(i, o)| Some((i.trim().parse::<u32>().ok()?, o.trim().parse::<u32>().ok()?)))
        .with_context(|| format!("--bound {spec:?}: expected ISL/OSL, e.g. 1024/1024"))?;
    let cat = inferbench_sim::Catalogue::embedded();
    let hw = cat.hardware(&cfg.hardware)?;
    let model = cat.model(&cfg.model)?;
    let info = inferbench_sim::describe(cfg)?;
    println!(
        "{} {} on {}x{}, ISL {isl} / OSL {osl}, KV cache {} tokens",
        model.name, cfg.precision, cfg.tp, hw.name, info.kv_capacity_tokens
    );
    println!(
        "{:>6} {:>12} {:>14} {:>12} {:>12} {:>14} {:>12}",
        "conc",
        "step (ms)",
        "tok/s/user",
        "tok/s/GPU",
        "TTFT (ms)",
        "SoL tok/s/user",
        "SoL tok/s/GPU"
    );
    let sol = inferbench_sim::RooflineParams::speed_of_light();
    for &c in concs {
        let need = u64::from(c) * u64::from(isl + osl);
        if need > info.kv_capacity_tokens {
            println!("{c:>6}   (needs {need} KV tokens: more than the cache holds)");
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
        println!(
            "{c:>6} {:>12.2} {:>14.1} {:>12.1} {:>12.1} {:>14.1} {:>12.1}",
            b.decode_step_s * 1e3,
            b.interactivity_tok_s_user,
            b.total_tok_s_per_gpu,
            b.ttft_s * 1e3,
            s.interactivity_tok_s_user,
            s.total_tok_s_per_gpu
        );
    }
    Ok(())
}

/// Runs the server until Ctrl-C (or prints `--bound` and exits); returns the exit code
/// (0, or 130 on Ctrl-C).
pub fn run(args: Args) -> anyhow::Result<i32> {
    let cfg = args.to_config()?;
    if let Some(spec) = &args.bound {
        print_bound(&cfg, spec, &args.bound_conc)?;
        return Ok(0);
    }
    let info = inferbench_sim::describe(&cfg)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
            .await
            .with_context(|| format!("binding {}:{}", args.host, args.port))?;
        let addr = listener.local_addr()?;
        eprintln!("{}", inferbench_sim::start_line(&cfg, &info));
        println!("listening on http://{addr}");
        let stop = super::shutdown_token("inferbench sim: stopping");
        inferbench_sim::serve(cfg, listener, async move { stop.cancelled().await }).await?;
        Ok::<_, anyhow::Error>(130)
    })
}
