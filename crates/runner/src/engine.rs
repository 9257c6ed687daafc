//! Engine recipes and processes: which command serves a row (built-in templates for vLLM, SGLang,
//! TensorRT-LLM, llama.cpp and the simulator, or an external script given InferenceX's
//! environment contract), and the running server as a process group whose whole tree is stopped.
//!
//! Flag mapping per engine (tp/ep/dp-attn/spec-decoding/max-model-len/kv-offload) is pinned by
//! the unit tests at the end of this file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::jobspec::JobSpec;

/// The serving engine a recipe resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "path")]
pub enum EngineKind {
    /// `vllm serve` (framework `vllm`).
    Vllm,
    /// `python -m sglang.launch_server` (framework `sglang`).
    Sglang,
    /// `trtllm-serve` (framework `trt` / `trtllm`).
    Trtllm,
    /// llama.cpp's `llama-server` through PyPI `xllamacpp` (framework `llamacpp` / `llama.cpp`).
    LlamaCpp,
    /// `inferbench sim`, the simulated server (framework `sim`).
    Sim,
    /// An external script started with InferenceX's environment contract (§3.2); it must start
    /// a server on `$PORT` and keep running until stopped.
    Script(PathBuf),
}

/// A row for which no recipe exists.
#[derive(Debug, thiserror::Error)]
#[error(
    "missing recipe for framework '{framework}' ({exp_name}): no built-in template (vllm, sglang, \
     trt, llamacpp, sim) and no script found ({})",
    if searched.is_empty() { "no --recipe-dir given".to_string() } else { format!("looked for: {searched}") }
)]
pub struct MissingRecipe {
    /// The row's framework.
    pub framework: String,
    /// The row's exp-name.
    pub exp_name: String,
    /// Script paths tried, comma-separated (empty when no recipe directory was given).
    pub searched: String,
}

/// Settings shared by every engine launch of a sweep.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Python interpreter for SGLang and llama.cpp (`INFERBENCH_PYTHON`, default `python3`).
    pub python: PathBuf,
    /// The `inferbench` executable, used for the `sim` engine.
    pub inferbench_exe: PathBuf,
    /// Address engines bind (default `127.0.0.1`).
    pub host: String,
    /// Directory of InferenceX-style benchmark scripts searched before built-in templates
    /// (`<dir>/<scenario-subdir><prefix>_<precision>_<hw>[_<framework>][_mtp].sh`, §3.3).
    pub recipe_dir: Option<PathBuf>,
    /// One script used for every row (overrides templates and `recipe_dir`).
    pub script: Option<PathBuf>,
    /// `model` → local path overrides (e.g. a GGUF file for llama.cpp).
    pub model_paths: Vec<(String, PathBuf)>,
    /// CPU threads for llama.cpp (default 2, reference/targets.md §1c).
    pub threads: u32,
    /// Extra arguments appended to every templated command line.
    pub extra_args: Vec<String>,
    /// Arguments for the `sim` engine after `sim --host H --port P` (e.g. `--preset tiny`).
    pub sim_args: Vec<String>,
    /// Speculative decoding of `mtp` / `draft_model` rows.
    pub spec: SpecOptions,
}

/// How speculative-decoding rows are served (producer reference §9).
#[derive(Debug, Clone, PartialEq)]
pub struct SpecOptions {
    /// Pin throughput runs to the golden acceptance length (InferenceX's synthetic acceptance:
    /// vLLM `rejection_sample_method: synthetic`, SGLang `SGLANG_SIMULATE_ACC_*`, TensorRT-LLM
    /// `TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`). Evals always verify for real.
    pub synthetic: bool,
    /// Draft tokens per step k (InferenceX's scripts: 3 for DeepSeek-V4 MTP).
    pub num_speculative_tokens: u32,
    /// Golden-curve mode: `thinking_on` (InferenceX's default) or `thinking_off`.
    pub thinking_mode: String,
    /// An explicit AL instead of the curve (InferenceX's `SYNTHETIC_ACCEPTANCE_LENGTH`).
    pub acceptance_length: Option<f64>,
}

impl Default for SpecOptions {
    fn default() -> Self {
        SpecOptions {
            synthetic: true,
            num_speculative_tokens: 3,
            thinking_mode: "thinking_on".into(),
            acceptance_length: None,
        }
    }
}

/// The acceptance a command pins for `spec` under `opts`: `None` for rows without speculative
/// decoding or with synthetic acceptance off; an explicit AL is reported as not golden.
pub fn synthetic_acceptance(
    spec: &JobSpec,
    opts: &SpecOptions,
) -> Option<inferbench_sim::golden::Acceptance> {
    if spec.row.spec_decoding == "none" || spec.row.spec_decoding.is_empty() || !opts.synthetic {
        return None;
    }
    let k = opts.num_speculative_tokens.max(1);
    Some(match opts.acceptance_length {
        Some(al) => inferbench_sim::golden::Acceptance {
            num_speculative_tokens: k,
            acceptance_length: al,
            golden: false,
            source: "given (--synthetic-acceptance-length)".into(),
            note: None,
        },
        None => inferbench_sim::golden::acceptance_for(
            &spec.row.model_prefix,
            Some(&spec_variant(&spec.row)),
            &opts.thinking_mode,
            k,
        ),
    })
}

/// The spec-decode variant a row names, for the golden-curve lookup: its draft model's name
/// (`draft-model` / `draft_model` / `speculative-model`, kept in the row's unmodelled fields)
/// and its `spec-decoding` value, joined.
pub fn spec_variant(row: &inferbench_core::matrix::MatrixRow) -> String {
    let mut parts: Vec<&str> = ["draft-model", "draft_model", "speculative-model"]
        .iter()
        .filter_map(|k| row.extra.get(*k).and_then(serde_json::Value::as_str))
        .collect();
    parts.push(&row.spec_decoding);
    parts.join(" ")
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            python: std::env::var_os("INFERBENCH_PYTHON")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("python3")),
            inferbench_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("inferbench")),
            host: "127.0.0.1".into(),
            recipe_dir: None,
            script: None,
            model_paths: Vec::new(),
            threads: 2,
            extra_args: Vec::new(),
            sim_args: Vec::new(),
            spec: SpecOptions::default(),
        }
    }
}

/// A fully resolved engine command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineCommand {
    /// Which engine.
    pub kind: EngineKind,
    /// Program to execute.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment added to the inherited one.
    pub env: Vec<(String, String)>,
    /// Files written into the point directory before launch (name, contents), e.g. the
    /// TensorRT-LLM `extra_llm_api_options` YAML.
    pub files: Vec<(String, String)>,
    /// Command printing the engine version (recorded in `job.json`), if known.
    pub version_probe: Option<Vec<String>>,
    /// The acceptance length the engine is pinned to (speculative-decoding rows with synthetic
    /// acceptance), recorded in `job.json` and compared with the measured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<inferbench_sim::golden::Acceptance>,
}

impl EngineCommand {
    /// The command as one shell-like line (for logs and `job.json`).
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|a| {
                if a.is_empty() || a.contains([' ', '"', '\'', '{']) {
                    format!("'{}'", a.replace('\'', r"'\''"))
                } else {
                    a.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The llama.cpp launcher (xllamacpp), embedded so the binary needs no checkout.
pub const LLAMACPP_LAUNCHER: &str = include_str!("../assets/llamacpp_serve.py");

/// Resolves the recipe for a row: `opts.script`, then an InferenceX-style script under
/// `opts.recipe_dir`, then the built-in template for the row's framework.
pub fn resolve_engine(spec: &JobSpec, opts: &EngineOptions) -> Result<EngineKind, MissingRecipe> {
    if let Some(s) = &opts.script {
        return Ok(EngineKind::Script(s.clone()));
    }
    let mut searched = Vec::new();
    if let Some(dir) = &opts.recipe_dir {
        for cand in script_candidates(spec) {
            let p = dir.join(&cand);
            if p.is_file() {
                return Ok(EngineKind::Script(p));
            }
            searched.push(p.display().to_string());
        }
    }
    let kind = match spec.row.framework.as_str() {
        "vllm" => EngineKind::Vllm,
        "sglang" => EngineKind::Sglang,
        "trt" | "trtllm" | "tensorrt-llm" => EngineKind::Trtllm,
        "llamacpp" | "llama.cpp" | "llama-cpp" => EngineKind::LlamaCpp,
        "sim" | "inferbench-sim" => EngineKind::Sim,
        _ => {
            return Err(MissingRecipe {
                framework: spec.row.framework.clone(),
                exp_name: spec.row.exp_name.clone(),
                searched: searched.join(", "),
            })
        }
    };
    if spec.is_multinode() {
        // Templates serve one single-node replica; multinode rows need a script.
        return Err(MissingRecipe {
            framework: format!("{} (multinode)", spec.row.framework),
            exp_name: spec.row.exp_name.clone(),
            searched: searched.join(", "),
        });
    }
    Ok(kind)
}

/// InferenceX's script routing (§3.3), relative to a recipe directory:
/// `<subdir><exp-name up to '_'>_<precision>_<hw>_<framework>[_mtp].sh`, then
/// `<subdir><…>_<hw>[_trt][_mtp].sh`; `hw` is the runner label without `cluster:` up to the
/// first `-`.
pub fn script_candidates(spec: &JobSpec) -> Vec<String> {
    let r = &spec.row;
    let subdir = if spec.is_agentic() {
        "agentic/"
    } else {
        "fixed_seq_len/"
    };
    let prefix = r.exp_name.split('_').next().unwrap_or(&r.exp_name);
    let label = r.runner.strip_prefix("cluster:").unwrap_or(&r.runner);
    let hw = label.split('-').next().unwrap_or(label);
    let base = format!("{subdir}{prefix}_{}_{hw}", r.precision);
    let mtp = if r.spec_decoding == "mtp" { "_mtp" } else { "" };
    let trt = if r.framework == "trt" { "_trt" } else { "" };
    vec![
        format!("{base}_{}{mtp}.sh", r.framework),
        format!("{base}{trt}{mtp}.sh"),
    ]
}

/// Local path to serve for `model`: an override from `opts.model_paths` (made absolute against
/// the current directory, since engines run in their own directory), else the name itself.
pub fn model_path(model: &str, opts: &EngineOptions) -> String {
    opts.model_paths
        .iter()
        .find(|(m, _)| m == model)
        .map(|(_, p)| {
            std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string()
        })
        .unwrap_or_else(|| model.to_string())
}

/// Number of llama.cpp slots (`n_parallel`) for a row: llama.cpp has no expert parallelism and
/// the master-config schema forbids extra keys, so the row's `ep` is read as the slot count
/// (it changes neither `GPU_COUNT` nor `exp-name`, and appears in `RESULT_FILENAME`).
pub fn llamacpp_slots(spec: &JobSpec) -> u32 {
    spec.ep().max(1)
}

/// Builds the command line serving `spec` on `port`. `point_dir` receives helper files.
pub fn build_command(
    kind: &EngineKind,
    spec: &JobSpec,
    runner_name: &str,
    conc: u32,
    port: u16,
    opts: &EngineOptions,
    point_dir: &Path,
) -> EngineCommand {
    let r = &spec.row;
    // Speculative decoding: the pinned acceptance for throughput runs.
    let acceptance = match kind {
        EngineKind::LlamaCpp => None,
        _ => synthetic_acceptance(spec, &opts.spec),
    };
    let c = CommandInputs {
        spec,
        model: model_path(&r.model, opts),
        port,
        conc,
        opts,
        point_dir,
        fixed_seq: !spec.is_agentic(),
        dram_gb: if r.kv_offloading.as_deref() == Some("dram") {
            r.total_cpu_dram_gb.filter(|g| *g > 0)
        } else {
            None
        },
        k: opts.spec.num_speculative_tokens.max(1),
        acceptance: acceptance.as_ref(),
    };
    let mut launch = match kind {
        EngineKind::Vllm => vllm_launch(&c),
        EngineKind::Sglang => sglang_launch(&c),
        EngineKind::Trtllm => trtllm_launch(&c),
        EngineKind::LlamaCpp => llamacpp_launch(&c),
        EngineKind::Sim => sim_launch(&c),
        EngineKind::Script(path) => {
            Launch::new("bash".to_string(), vec![path.display().to_string()], None)
        }
    };
    if !matches!(kind, EngineKind::Script(_)) {
        launch.args.extend(opts.extra_args.iter().cloned());
    }
    let mut env = spec.env_contract(runner_name, conc, port, point_dir);
    if c.model != r.model {
        env.push(("MODEL_PATH".into(), c.model.clone()));
    }
    if matches!(kind, EngineKind::Script(_)) && r.spec_decoding != "none" {
        script_spec_env(&c, &mut env);
    }
    env.extend(launch.spec_env);
    EngineCommand {
        kind: kind.clone(),
        program: launch.program,
        args: launch.args,
        env,
        files: launch.files,
        version_probe: launch.version_probe,
        acceptance,
    }
}

/// What an engine's command line is built from (see [`build_command`]).
struct CommandInputs<'a> {
    spec: &'a JobSpec,
    /// The weights to serve: `--model-path`'s mapping of the row's model, else its name.
    model: String,
    port: u16,
    /// The point's concurrency (batch and slot limits of engines that take one).
    conc: u32,
    opts: &'a EngineOptions,
    /// Where helper files go (the launcher, TensorRT-LLM's option file).
    point_dir: &'a Path,
    /// A fixed-sequence-length row: prefix caching off, as InferenceX's recipes.
    fixed_seq: bool,
    /// KV-cache offload to CPU DRAM, GB (rows with `kv_offloading: dram`).
    dram_gb: Option<u64>,
    /// Speculative tokens drafted per step (at least 1).
    k: u32,
    /// The pinned synthetic acceptance of a spec-decoding row, when on.
    acceptance: Option<&'a inferbench_sim::golden::Acceptance>,
}

/// One engine's launch: the program, its arguments and version probe, helper files
/// `(name, contents)` to write into the point directory, and the environment that pins
/// speculative decoding's acceptance.
struct Launch {
    program: String,
    args: Vec<String>,
    version_probe: Option<Vec<String>>,
    files: Vec<(String, String)>,
    spec_env: Vec<(String, String)>,
}

impl Launch {
    fn new(program: String, args: Vec<String>, version_probe: Option<Vec<String>>) -> Self {
        Launch {
            program,
            args,
            version_probe,
            files: Vec::new(),
            spec_env: Vec::new(),
        }
    }
}

fn s(x: &str) -> String {
    x.to_string()
}

fn n(x: u32) -> String {
    x.to_string()
}

/// `vllm serve`: parallelism (DP attention as one replica per GPU with experts sharded), the
/// context length, MTP / draft-model speculative config (synthetic acceptance when pinned),
/// DRAM KV offload (GB), prefix caching off for fixed-seq rows, the served model name.
fn vllm_launch(c: &CommandInputs) -> Launch {
    let (spec, r) = (c.spec, &c.spec.row);
    let mut a = vec![
        s("serve"),
        c.model.clone(),
        s("--host"),
        c.opts.host.clone(),
        s("--port"),
        n(c.port as u32),
    ];
    if spec.dp_attn() {
        // DP attention: one attention replica per GPU, experts sharded across them.
        a.extend([s("--tensor-parallel-size"), s("1")]);
        a.extend([s("--data-parallel-size"), n(spec.tp())]);
    } else {
        a.extend([s("--tensor-parallel-size"), n(spec.tp())]);
    }
    if spec.pp() > 1 {
        a.extend([s("--pipeline-parallel-size"), n(spec.pp())]);
    }
    if spec.dcp() > 1 {
        a.extend([s("--decode-context-parallel-size"), n(spec.dcp())]);
    }
    if spec.ep() > 1 || spec.dp_attn() {
        a.push(s("--enable-expert-parallel"));
    }
    if let Some(len) = r.max_model_len.filter(|l| *l > 0) {
        a.extend([s("--max-model-len"), n(len)]);
    }
    if matches!(r.spec_decoding.as_str(), "mtp" | "draft_model") {
        let mut cfg = serde_json::json!({
            "method": r.spec_decoding,
            "num_speculative_tokens": c.k,
        });
        if let Some(acc) = c.acceptance {
            cfg["rejection_sample_method"] = "synthetic".into();
            cfg["synthetic_acceptance_length"] = acc.acceptance_length.into();
        }
        a.extend([s("--speculative-config"), cfg.to_string()]);
    }
    if let Some(gb) = c.dram_gb {
        let backend = r
            .kv_offload_backend
            .as_ref()
            .map(|b| {
                if b.name == "lmcache" {
                    "lmcache"
                } else {
                    "native"
                }
            })
            .unwrap_or("native");
        a.extend([s("--kv-offloading-backend"), s(backend)]);
        a.extend([s("--kv-offloading-size"), gb.to_string()]);
    }
    if c.fixed_seq {
        // InferenceX fixed-seq recipes disable prefix caching (§5.1).
        a.push(s("--no-enable-prefix-caching"));
    }
    a.extend([s("--served-model-name"), r.model.clone()]);
    Launch::new(s("vllm"), a, Some(vec![s("vllm"), s("--version")]))
}

/// `python -m sglang.launch_server`: parallelism, the context length, MTP as EAGLE with `k`
/// steps (a pinned acceptance through SGLang's `SGLANG_SIMULATE_ACC_*` environment), DRAM
/// hierarchical cache (GB), radix cache off for fixed-seq rows, `conc` running requests.
fn sglang_launch(c: &CommandInputs) -> Launch {
    let (spec, r, k) = (c.spec, &c.spec.row, c.k);
    let mut a = vec![
        s("-m"),
        s("sglang.launch_server"),
        s("--model-path"),
        c.model.clone(),
        s("--host"),
        c.opts.host.clone(),
        s("--port"),
        n(c.port as u32),
        s("--tp-size"),
        n(spec.tp()),
    ];
    if spec.pp() > 1 {
        a.extend([s("--pp-size"), n(spec.pp())]);
    }
    if spec.ep() > 1 {
        a.extend([s("--ep-size"), n(spec.ep())]);
    }
    if spec.dp_attn() {
        a.extend([s("--enable-dp-attention"), s("--dp-size"), n(spec.tp())]);
    }
    if let Some(len) = r.max_model_len.filter(|l| *l > 0) {
        a.extend([s("--context-length"), n(len)]);
    }
    let mut spec_env = Vec::new();
    if r.spec_decoding == "mtp" {
        a.extend([
            s("--speculative-algorithm"),
            s("EAGLE"),
            s("--speculative-num-steps"),
            n(k),
            s("--speculative-eagle-topk"),
            s("1"),
            s("--speculative-num-draft-tokens"),
            n(k + 1),
        ]);
        if let Some(acc) = c.acceptance {
            spec_env.extend([
                (
                    s("SGLANG_SIMULATE_ACC_LEN"),
                    acc.acceptance_length.to_string(),
                ),
                (s("SGLANG_SIMULATE_ACC_METHOD"), s("match-expected")),
                (s("SGLANG_SIMULATE_ACC_TOKEN_MODE"), s("real-draft-token")),
            ]);
        }
    }
    if let Some(gb) = c.dram_gb {
        a.extend([
            s("--enable-hierarchical-cache"),
            s("--hicache-size"),
            gb.to_string(),
        ]);
    }
    if c.fixed_seq {
        a.push(s("--disable-radix-cache"));
    }
    a.extend([s("--max-running-requests"), n(c.conc.max(1))]);
    a.extend([s("--served-model-name"), r.model.clone()]);
    let py = c.opts.python.display().to_string();
    let mut launch = Launch::new(
        py.clone(),
        a,
        Some(vec![
            py,
            s("-c"),
            s("import sglang; print(sglang.__version__)"),
        ]),
    );
    launch.spec_env = spec_env;
    launch
}

/// `trtllm-serve`: parallelism and `conc` as the batch size, the context length, and an
/// `extra_llm_api_options.yaml` (written into the point directory) for DP attention, MTP (a
/// pinned acceptance as `TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`, AL − 1), block reuse off
/// for fixed-seq rows and the DRAM host cache (bytes).
fn trtllm_launch(c: &CommandInputs) -> Launch {
    let (spec, r, k) = (c.spec, &c.spec.row, c.k);
    let mut a = vec![
        s("serve"),
        c.model.clone(),
        s("--host"),
        c.opts.host.clone(),
        s("--port"),
        n(c.port as u32),
        s("--tp_size"),
        n(spec.tp()),
        s("--pp_size"),
        n(spec.pp()),
        s("--ep_size"),
        n(spec.ep()),
        s("--max_batch_size"),
        n(c.conc.max(1)),
    ];
    if let Some(len) = r.max_model_len.filter(|l| *l > 0) {
        a.extend([s("--max_seq_len"), n(len)]);
    }
    let mut spec_env = Vec::new();
    let mut yaml = String::new();
    if spec.dp_attn() {
        yaml.push_str("enable_attention_dp: true\n");
    }
    if r.spec_decoding == "mtp" {
        yaml.push_str(&format!(
            "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: {k}\n"
        ));
        if let Some(acc) = c.acceptance {
            // AL − 1 drafts accepted per step; the fraction is the chance of one more.
            let forced = ((acc.acceptance_length - 1.0) * 100.0).round() / 100.0;
            spec_env.push((
                s("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"),
                forced.to_string(),
            ));
        }
    }
    let mut kv = String::new();
    if c.fixed_seq {
        kv.push_str("  enable_block_reuse: false\n");
    }
    if let Some(gb) = c.dram_gb {
        kv.push_str(&format!("  host_cache_size: {}\n", gb * 1_000_000_000));
    }
    if !kv.is_empty() {
        yaml.push_str("kv_cache_config:\n");
        yaml.push_str(&kv);
    }
    let mut files = Vec::new();
    if !yaml.is_empty() {
        let f = c.point_dir.join("extra_llm_api_options.yaml");
        files.push((s("extra_llm_api_options.yaml"), yaml));
        a.extend([s("--extra_llm_api_options"), f.display().to_string()]);
    }
    let mut launch = Launch::new(
        s("trtllm-serve"),
        a,
        Some(vec![
            s("python3"),
            s("-c"),
            s("import tensorrt_llm; print(tensorrt_llm.__version__)"),
        ]),
    );
    launch.files = files;
    launch.spec_env = spec_env;
    launch
}

/// llama.cpp through our Python launcher (written into the point directory): the row's
/// [`llamacpp_slots`], the context per slot (tokens; 2048 without `max-model-len`) and the
/// CPU threads.
fn llamacpp_launch(c: &CommandInputs) -> Launch {
    let r = &c.spec.row;
    let slots = llamacpp_slots(c.spec);
    let ctx = r.max_model_len.filter(|l| *l > 0).unwrap_or(2048);
    let launcher = c.point_dir.join("llamacpp_serve.py");
    let a = vec![
        launcher.display().to_string(),
        s("--model"),
        c.model.clone(),
        s("--host"),
        c.opts.host.clone(),
        s("--port"),
        n(c.port as u32),
        s("--n-parallel"),
        n(slots),
        s("--ctx-per-slot"),
        n(ctx),
        s("--threads"),
        n(c.opts.threads.max(1)),
    ];
    let py = c.opts.python.display().to_string();
    let mut launch = Launch::new(
        py.clone(),
        a,
        Some(vec![
            py,
            s("-c"),
            s("import importlib.metadata as m; print('xllamacpp', m.version('xllamacpp'))"),
        ]),
    );
    launch.files = vec![(s("llamacpp_serve.py"), LLAMACPP_LAUNCHER.to_string())];
    launch
}

/// The `--time-scale` the `--sim-arg`s give the sim (`--time-scale=K` or `--time-scale K`; the
/// last one wins, as the sim's own parser takes it). `None` when none is given (the sim then
/// runs in real time) or the value is not a number (the sim refuses it at launch).
pub fn sim_time_scale_arg(args: &[String]) -> Option<f64> {
    let mut found = None;
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--time-scale=") {
            found = v.trim().parse().ok();
        } else if a == "--time-scale" {
            found = it.next().and_then(|v| v.trim().parse().ok());
        }
    }
    found
}

/// `inferbench sim`: the served model name and TP, the row's hardware (runner label up to its
/// first `-`) and precision where the sim's catalogue knows them, the curve's acceptance for
/// spec-decoding rows (always: the sim has no drafter to verify), then `--sim-arg`s.
fn sim_launch(c: &CommandInputs) -> Launch {
    let (spec, r) = (c.spec, &c.spec.row);
    // The sim has no drafter to verify: it always models the curve's acceptance, also for
    // evals and with synthetic acceptance off (which then only changes the real engines).
    let sim_acceptance = synthetic_acceptance(
        spec,
        &SpecOptions {
            synthetic: true,
            ..c.opts.spec.clone()
        },
    );
    let mut a = vec![
        s("sim"),
        s("--host"),
        c.opts.host.clone(),
        s("--port"),
        n(c.port as u32),
        s("--served-model-name"),
        r.model.clone(),
        s("--tp"),
        n(spec.tp()),
    ];
    // The row's hardware (runner label up to its first `-`) and precision, where the
    // sim's catalogue knows them; otherwise the sim's defaults (H100, bf16).
    let cat = inferbench_sim::catalogue::Catalogue::embedded();
    let label = r.runner.strip_prefix("cluster:").unwrap_or(&r.runner);
    let hw = label.split('-').next().unwrap_or(label);
    if cat.hardware(hw).is_ok() {
        a.extend([s("--hardware"), hw.to_string()]);
    }
    if inferbench_sim::catalogue::Precision::parse(&r.precision).is_ok() {
        a.extend([s("--precision"), r.precision.clone()]);
    }
    if let Some(acc) = &sim_acceptance {
        a.extend([
            s("--num-speculative-tokens"),
            n(acc.num_speculative_tokens),
            s("--acceptance-length"),
            acc.acceptance_length.to_string(),
        ]);
    }
    a.extend(c.opts.sim_args.iter().cloned());
    let exe = c.opts.inferbench_exe.display().to_string();
    Launch::new(exe.clone(), a, Some(vec![exe, s("--version")]))
}

/// The environment InferenceX's multinode injector reads (§9) for a spec-decoding row served
/// by a script: whether the acceptance is synthetic, the drafts per step, the thinking mode,
/// and the pinned acceptance length (tokens/step) when there is one.
fn script_spec_env(c: &CommandInputs, env: &mut Vec<(String, String)>) {
    env.push((
        "SYNTHETIC_ACCEPTANCE".into(),
        c.acceptance.is_some().to_string(),
    ));
    env.push(("NUM_SPEC_TOKENS".into(), c.k.to_string()));
    env.push(("THINKING_MODE".into(), c.opts.spec.thinking_mode.clone()));
    if let Some(acc) = c.acceptance {
        env.push((
            "SYNTHETIC_ACCEPTANCE_LENGTH".into(),
            acc.acceptance_length.to_string(),
        ));
    }
}

/// Errors starting or running an engine process.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Something already listens on the port the engine should use.
    #[error("port {port} on {host} is already in use (another server is running there); pick another with --port or stop it")]
    PortInUse {
        /// Host checked.
        host: String,
        /// Port.
        port: u16,
    },
    /// The program could not be started.
    #[error("cannot start engine `{program}`: {source}")]
    Spawn {
        /// Program.
        program: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Writing the log or helper files failed.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// Fails with [`EngineError::PortInUse`] when `host:port` cannot be bound or already accepts
/// connections.
pub fn check_port_free(host: &str, port: u16) -> Result<(), EngineError> {
    let in_use = || EngineError::PortInUse {
        host: host.to_string(),
        port,
    };
    if std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(300),
    )
    .is_ok()
    {
        return Err(in_use());
    }
    match std::net::TcpListener::bind((host, port)) {
        Ok(l) => {
            drop(l);
            Ok(())
        }
        Err(_) => Err(in_use()),
    }
}

/// Asks the OS for a currently free TCP port on `host` (bind port 0, release it).
pub fn free_port(host: &str) -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind((host, 0))?;
    Ok(l.local_addr()?.port())
}

/// A running engine: the leader of its own process group, with output appended to a log file.
pub struct EngineProcess {
    child: tokio::process::Child,
    pgid: i32,
    /// The server log (stdout and stderr, interleaved as written).
    pub log_path: PathBuf,
    exited: Option<std::process::ExitStatus>,
}

impl EngineProcess {
    /// Writes `cmd.files` into `dir` and starts `cmd` in a new process group (setsid-like, so the
    /// whole tree can be signalled), stdout+stderr appended to `log_path`, stdin closed.
    pub fn spawn(cmd: &EngineCommand, dir: &Path, log_path: &Path) -> Result<Self, EngineError> {
        for (name, contents) in &cmd.files {
            let p = dir.join(name);
            std::fs::write(&p, contents).map_err(|source| EngineError::Io { path: p, source })?;
        }
        let io_err = |source| EngineError::Io {
            path: log_path.to_path_buf(),
            source,
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(io_err)?;
        let log2 = log.try_clone().map_err(io_err)?;
        // The engine runs in `dir`: a relative program path (`.venv/bin/python`) means relative
        // to where inferbench was started, as the user typed it.
        let program = {
            let p = Path::new(&cmd.program);
            if p.is_relative() && p.components().count() > 1 {
                std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
            } else {
                p.to_path_buf()
            }
        };
        let mut c = tokio::process::Command::new(&program);
        c.args(&cmd.args)
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .process_group(0)
            .kill_on_drop(true);
        let child = c.spawn().map_err(|source| EngineError::Spawn {
            program: cmd.program.clone(),
            source,
        })?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        Ok(EngineProcess {
            child,
            pgid,
            log_path: log_path.to_path_buf(),
            exited: None,
        })
    }

    /// OS process id of the group leader.
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// `Some(status)` once the engine has exited (crash detection), without blocking.
    pub fn try_exited(&mut self) -> Option<std::process::ExitStatus> {
        if self.exited.is_none() {
            if let Ok(Some(st)) = self.child.try_wait() {
                self.exited = Some(st);
            }
        }
        self.exited
    }

    /// Stops the whole process group: SIGTERM, then SIGKILL to the group after `grace`
    /// (InferenceX waits 30 s). Returns the leader's exit status when known.
    pub async fn stop(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        if self.pgid > 0 {
            signal_group(self.pgid, libc::SIGTERM);
        }
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(st)) => Some(st),
            _ => None,
        };
        // Descendants may outlive the leader: the group gets SIGKILL either way (ESRCH if gone).
        if self.pgid > 0 && (status.is_none() || group_alive(self.pgid)) {
            if status.is_some() {
                // Leader exited cleanly; give the rest of the group a moment too.
                let deadline = tokio::time::Instant::now() + grace.min(Duration::from_secs(2));
                while group_alive(self.pgid) && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            signal_group(self.pgid, libc::SIGKILL);
        }
        let status = match status {
            Some(s) => Some(s),
            None => self.child.wait().await.ok(),
        };
        self.exited = status.or(self.exited);
        status
    }
}

fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: killpg has no memory-safety preconditions; errors (ESRCH) are ignored on purpose.
    unsafe {
        libc::killpg(pgid, sig);
    }
}

/// True while any process of group `pgid` exists (signal 0 probes without delivering).
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: as above; signal 0 only checks for existence.
    unsafe { libc::killpg(pgid, 0) == 0 }
}

/// The last `n` lines of a log file (lossy UTF-8), for error messages.
pub fn log_tail(path: &Path, n: usize) -> String {
    let Ok(bytes) = std::fs::read(path) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

/// Runs a version probe with a 20 s limit; the first non-empty output line, or `None`.
pub async fn probe_version(probe: &[String]) -> Option<String> {
    let (prog, args) = probe.split_first()?;
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(prog)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sim's time scale as `--sim-arg`s give it: both spellings, the last one wins.
    #[test]
    fn sim_time_scale_from_the_sim_args() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(sim_time_scale_arg(&a(&[])), None);
        assert_eq!(sim_time_scale_arg(&a(&["--time-scale=20"])), Some(20.0));
        assert_eq!(
            sim_time_scale_arg(&a(&["--time-scale", "8", "--step-ms=4"])),
            Some(8.0)
        );
        assert_eq!(
            sim_time_scale_arg(&a(&["--time-scale=2", "--time-scale", "0.5"])),
            Some(0.5)
        );
        assert_eq!(sim_time_scale_arg(&a(&["--time-scale"])), None);
        assert_eq!(sim_time_scale_arg(&a(&["--time-scale=x"])), None);
    }

    fn row(extra: &str) -> JobSpec {
        let base = r#"{"image": "img", "model": "org/M", "model-prefix": "m", "precision": "fp8", "framework": "vllm", "runner": "b200", "isl": 8192, "osl": 1024, "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 64, "max-model-len": 9472, "ep": 1, "dp-attn": false, "spec-decoding": "none", "exp-name": "m_8k1k", "disagg": false, "run-eval": false"#;
        let text = format!("{base}{extra}}}");
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Later keys in `extra` override earlier ones (serde_json keeps the last).
        v.as_object_mut().unwrap().retain(|_, _| true);
        JobSpec {
            index: 0,
            row: serde_json::from_value(v).unwrap(),
        }
    }

    fn line(kind: EngineKind, spec: &JobSpec) -> String {
        build_command(&kind, spec, "b200_0", 64, 8888, &opts(), Path::new("/p")).display()
    }

    fn opts() -> EngineOptions {
        EngineOptions {
            python: "python3".into(),
            inferbench_exe: "/bin/inferbench".into(),
            ..EngineOptions::default()
        }
    }

    /// The golden AL follows the spec-decode variant the row names (its draft model), with a
    /// note when the variant has no curve of the model (issue 41).
    #[test]
    fn synthetic_acceptance_keys_on_the_rows_variant() {
        let gqa = row(
            r#", "model-prefix": "minimaxm3", "spec-decoding": "mtp", "draft-model": "Inferact/MiniMax-M3-EAGLE3-GQA""#,
        );
        assert_eq!(spec_variant(&gqa.row), "Inferact/MiniMax-M3-EAGLE3-GQA mtp");
        let acc = synthetic_acceptance(&gqa, &SpecOptions::default()).unwrap();
        assert_eq!((acc.acceptance_length, acc.golden), (2.78, true));
        assert!(
            acc.source.contains("minimaxm3_eagle3_gqa.yaml"),
            "{}",
            acc.source
        );
        let cmd = build_command(
            &EngineKind::Vllm,
            &gqa,
            "b200_0",
            64,
            8888,
            &opts(),
            Path::new("/p"),
        );
        assert!(
            cmd.display()
                .contains(r#""synthetic_acceptance_length":2.78}"#),
            "{}",
            cmd.display()
        );
        // No draft model: `mtp` names no minimax-m3 curve, so the base (eagle3) curve, noted.
        let base = row(r#", "model-prefix": "minimaxm3", "spec-decoding": "mtp""#);
        let acc = synthetic_acceptance(&base, &SpecOptions::default()).unwrap();
        assert_eq!(acc.acceptance_length, 2.83);
        assert_eq!(
            acc.note.as_deref(),
            Some("no golden curve of minimax-m3 names variant \"mtp\": using minimax-m3 thinking_on k=3")
        );
    }

    #[test]
    fn sim_models_the_rows_hardware_and_precision_where_known() {
        assert_eq!(
            line(EngineKind::Sim, &row("")),
            "/bin/inferbench sim --host 127.0.0.1 --port 8888 --served-model-name org/M --tp 8 --hardware b200 --precision fp8"
        );
        // A label the catalogue does not know (and a precision it cannot model): sim defaults.
        assert_eq!(
            line(
                EngineKind::Sim,
                &row(r#", "runner": "cpu", "precision": "q4_1""#)
            ),
            "/bin/inferbench sim --host 127.0.0.1 --port 8888 --served-model-name org/M --tp 8"
        );
    }

    #[test]
    fn vllm_flags() {
        assert_eq!(
            line(EngineKind::Vllm, &row("")),
            "vllm serve org/M --host 127.0.0.1 --port 8888 --tensor-parallel-size 8 --max-model-len 9472 --no-enable-prefix-caching --served-model-name org/M"
        );
        let dep = row(r#", "ep": 8, "dp-attn": true, "spec-decoding": "mtp""#);
        assert_eq!(
            line(EngineKind::Vllm, &dep),
            r#"vllm serve org/M --host 127.0.0.1 --port 8888 --tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel --max-model-len 9472 --speculative-config '{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.53}' --no-enable-prefix-caching --served-model-name org/M"#
        );
        // dsv4 has a golden curve: 2.49 at k = 3 (InferenceX's single-node scripts' value);
        // k = 2 → 2.27; synthetic acceptance off → real verification.
        let dsv4 = row(r#", "model-prefix": "dsv4", "spec-decoding": "mtp""#);
        let cmd = build_command(
            &EngineKind::Vllm,
            &dsv4,
            "b200_0",
            64,
            8888,
            &opts(),
            Path::new("/p"),
        );
        assert!(cmd.display().contains(r#""num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.49}"#), "{}", cmd.display());
        let acc = cmd.acceptance.unwrap();
        assert_eq!(
            (acc.golden, acc.source.as_str()),
            (true, "deepseek-v4-pro thinking_on k=3")
        );
        let mut o = opts();
        o.spec.num_speculative_tokens = 2;
        let cmd = build_command(
            &EngineKind::Vllm,
            &dsv4,
            "b200_0",
            64,
            8888,
            &o,
            Path::new("/p"),
        );
        assert!(cmd.display().contains(r#"'{"method":"mtp","num_speculative_tokens":2,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.27}'"#), "{}", cmd.display());
        o.spec.synthetic = false;
        let cmd = build_command(
            &EngineKind::Vllm,
            &dsv4,
            "b200_0",
            64,
            8888,
            &o,
            Path::new("/p"),
        );
        assert!(
            cmd.display()
                .contains(r#"'{"method":"mtp","num_speculative_tokens":2}'"#),
            "{}",
            cmd.display()
        );
        assert_eq!(cmd.acceptance, None);
        // The sim serves the same pinned acceptance.
        let sim = build_command(
            &EngineKind::Sim,
            &dsv4,
            "b200_0",
            64,
            8888,
            &opts(),
            Path::new("/p"),
        );
        assert!(
            sim.display()
                .ends_with("--num-speculative-tokens 3 --acceptance-length 2.49"),
            "{}",
            sim.display()
        );
        let agentic = row(
            r#", "scenario-type": "agentic-coding", "kv-offloading": "dram", "kv-offload-backend": {"name": "vllm-simple"}, "total-cpu-dram-gb": 2849"#,
        );
        let l = line(EngineKind::Vllm, &agentic);
        assert!(
            l.contains("--kv-offloading-backend native --kv-offloading-size 2849"),
            "{l}"
        );
        assert!(!l.contains("prefix-caching"), "{l}");
    }

    #[test]
    fn sglang_flags() {
        let dep =
            row(r#", "framework": "sglang", "ep": 8, "dp-attn": true, "spec-decoding": "mtp""#);
        assert_eq!(
            line(EngineKind::Sglang, &dep),
            "python3 -m sglang.launch_server --model-path org/M --host 127.0.0.1 --port 8888 --tp-size 8 --ep-size 8 --enable-dp-attention --dp-size 8 --context-length 9472 --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --disable-radix-cache --max-running-requests 64 --served-model-name org/M"
        );
        let cmd = build_command(
            &EngineKind::Sglang,
            &dep,
            "b200_0",
            64,
            8888,
            &opts(),
            Path::new("/p"),
        );
        let env: Vec<&(String, String)> = cmd
            .env
            .iter()
            .filter(|(k, _)| k.starts_with("SGLANG_"))
            .collect();
        assert_eq!(
            env,
            [
                &("SGLANG_SIMULATE_ACC_LEN".to_string(), "2.53".to_string()),
                &(
                    "SGLANG_SIMULATE_ACC_METHOD".to_string(),
                    "match-expected".to_string()
                ),
                &(
                    "SGLANG_SIMULATE_ACC_TOKEN_MODE".to_string(),
                    "real-draft-token".to_string()
                ),
            ]
        );
    }

    #[test]
    fn trtllm_flags_and_options_file() {
        let dep = row(r#", "framework": "trt", "ep": 8, "dp-attn": true, "spec-decoding": "mtp""#);
        let cmd = build_command(
            &EngineKind::Trtllm,
            &dep,
            "b200_0",
            64,
            8888,
            &opts(),
            Path::new("/p"),
        );
        assert_eq!(
            cmd.display(),
            "trtllm-serve serve org/M --host 127.0.0.1 --port 8888 --tp_size 8 --pp_size 1 --ep_size 8 --max_batch_size 64 --max_seq_len 9472 --extra_llm_api_options /p/extra_llm_api_options.yaml"
        );
        assert_eq!(
            cmd.files[0].1,
            "enable_attention_dp: true\nspeculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\nkv_cache_config:\n  enable_block_reuse: false\n"
        );
        // AL 2.53 → 1.53 accepted drafts forced per step.
        assert!(cmd.env.contains(&(
            "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS".to_string(),
            "1.53".to_string()
        )));
    }

    #[test]
    fn llamacpp_maps_ep_to_slots_and_uses_model_override() {
        let r = row(r#", "framework": "llamacpp", "tp": 1, "ep": 4, "max-model-len": 384"#);
        let mut o = opts();
        o.model_paths.push(("org/M".into(), "/m/s.gguf".into()));
        let cmd = build_command(
            &EngineKind::LlamaCpp,
            &r,
            "cpu_0",
            2,
            9000,
            &o,
            Path::new("/p"),
        );
        assert_eq!(
            cmd.display(),
            "python3 /p/llamacpp_serve.py --model /m/s.gguf --host 127.0.0.1 --port 9000 --n-parallel 4 --ctx-per-slot 384 --threads 2"
        );
        assert!(cmd.env.contains(&("MODEL_PATH".into(), "/m/s.gguf".into())));
        assert!(cmd.env.contains(&("PORT".into(), "9000".into())));
    }

    #[test]
    fn recipe_resolution_and_missing_recipe() {
        let o = opts();
        assert_eq!(resolve_engine(&row(""), &o).unwrap(), EngineKind::Vllm);
        let err = resolve_engine(&row(r#", "framework": "atom""#), &o).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("missing recipe for framework 'atom'"),
            "{err}"
        );
        // Script routing like InferenceX's launchers (§3.3).
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("fixed_seq_len")).unwrap();
        let script = dir.path().join("fixed_seq_len/m_fp8_b200_atom.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let o2 = EngineOptions {
            recipe_dir: Some(dir.path().to_path_buf()),
            ..opts()
        };
        assert_eq!(
            resolve_engine(&row(r#", "framework": "atom""#), &o2).unwrap(),
            EngineKind::Script(script)
        );
        assert_eq!(
            script_candidates(&row(
                r#", "framework": "trt", "spec-decoding": "mtp", "runner": "cluster:b300-nv""#
            )),
            [
                "fixed_seq_len/m_fp8_b300_trt_mtp.sh",
                "fixed_seq_len/m_fp8_b300_trt_mtp.sh"
            ]
        );
    }

    #[test]
    fn port_in_use_is_detected() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let e = check_port_free("127.0.0.1", port).unwrap_err();
        assert!(e
            .to_string()
            .contains(&format!("port {port} on 127.0.0.1 is already in use")));
        drop(l);
        let free = free_port("127.0.0.1").unwrap();
        check_port_free("127.0.0.1", free).unwrap();
    }

    #[tokio::test]
    async fn stop_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = EngineCommand {
            kind: EngineKind::Script("x".into()),
            program: "bash".into(),
            // A child that ignores SIGTERM, and a leader that exits on it.
            args: vec![
                "-c".into(),
                "(trap '' TERM; sleep 600) & echo started; wait".into(),
            ],
            env: vec![],
            files: vec![],
            version_probe: None,
            acceptance: None,
        };
        let log = dir.path().join("server.log");
        let mut p = EngineProcess::spawn(&cmd, dir.path(), &log).unwrap();
        for _ in 0..100 {
            if log_tail(&log, 1) == "started" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pgid = p.pid();
        assert!(group_alive(pgid));
        assert!(p.try_exited().is_none());
        p.stop(Duration::from_millis(300)).await;
        for _ in 0..100 {
            if !group_alive(pgid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!group_alive(pgid), "process group {pgid} survived stop()");
        assert_eq!(log_tail(&log, 100), "started");
    }
}
