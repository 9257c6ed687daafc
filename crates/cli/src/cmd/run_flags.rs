//! The `sweep`, `job` and `quickstart` subcommands' flags, written once with their `--help`
//! text ([`RunFlags`], shared by `sweep` and `job` and carried to Slurm tasks and GitHub rows
//! as `run-options.json`; [`SweepFlags`]; [`JobFlags`]; [`QuickstartFlags`]), their conversion
//! into the runner library's [`SweepOptions`], and what each executor does with them
//! ([`SweepFlags::write_github`], [`SweepFlags::slurm`], [`run_here`]). `cmd::sweep`,
//! `cmd::job` and `cmd::quickstart` add the signal handling.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use inferbench_eval::EvalBackend;
use inferbench_sim::golden::ThinkingMode;
use inferbench_sim::{Precision, SimConfig};

use super::ExitStatus;
use inferbench_runner::bench::LoadgenPoint;
use inferbench_runner::engine::EngineOptions;
use inferbench_runner::executor::{github, slurm};
use inferbench_runner::simsweep::{AgenticSimSweep, SimSweep};
use inferbench_runner::sweep::{gather, run_jobs, SWEEP_REPORT};
use inferbench_runner::{artifacts, load_matrix, load_row, BenchDefaults, JobSpec, SweepOptions};

/// Flags shared by `sweep` and `job`: where results go, how engines start, how points run.
/// Slurm tasks and GitHub rows receive them as a file ([`RunFlags::write_options_file`],
/// [`RunFlags::for_github`], read back by `job --options-file`), so a new flag needs no code
/// beyond its field.
#[derive(Debug, Clone, PartialEq, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFlags {
    /// Output directory: one sub-directory per point, named by its RESULT_FILENAME.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// runners.yaml (InferenceX format): rows whose runner label is not in it fail with
    /// `unknown_runner`.
    #[arg(long)]
    pub runner_config: Option<PathBuf>,
    /// Concrete runner name used in RESULT_FILENAME and RUNNER_NAME, e.g. `h100-cr_0`
    /// (default: the row's label's first runner in --runner-config, else the label itself; the
    /// host name is in provenance.json).
    /// Under GitHub Actions the workflow passes the runner's own name.
    #[arg(long)]
    pub runner_name: Option<String>,
    /// Engine port (0 = a free port per launch; a fixed port that is taken fails the row).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address engines bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Seconds to wait for /health and /v1/models before failing the row.
    #[arg(long, default_value_t = 1800.0)]
    pub ready_timeout: f64,
    /// Seconds between SIGTERM and SIGKILL when stopping an engine's process group.
    #[arg(long, default_value_t = 30.0)]
    pub stop_grace: f64,
    /// Python for SGLang and llama.cpp engines.
    #[arg(
        long,
        env = "INFERBENCH_PYTHON",
        hide_env_values = true,
        default_value = "python3"
    )]
    pub python: PathBuf,
    /// Directory of InferenceX-style benchmark scripts, searched before built-in templates
    /// (`<dir>/fixed_seq_len/<prefix>_<precision>_<hw>[_<framework>][_mtp].sh`).
    #[arg(long)]
    pub recipe_dir: Option<PathBuf>,
    /// One engine script for every row (started with InferenceX's environment; must serve on
    /// $PORT until stopped).
    #[arg(long)]
    pub engine_script: Option<PathBuf>,
    /// Local weights for a model name: `MODEL=PATH` (repeatable), e.g. a GGUF for llama.cpp.
    #[arg(long = "model-path", value_name = "MODEL=PATH")]
    pub model_paths: Vec<String>,
    /// CPU threads for llama.cpp.
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// Extra argument appended to every templated engine command (repeatable).
    #[arg(long = "engine-arg", allow_hyphen_values = true)]
    pub engine_args: Vec<String>,
    /// Extra argument for the `sim` engine (repeatable), e.g. `--sim-arg=--time-scale=50`.
    #[arg(long = "sim-arg", allow_hyphen_values = true)]
    pub sim_args: Vec<String>,
    /// Benchmark this running server instead of launching engines.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Prompts per unit of concurrency (InferenceX: 10).
    #[arg(long, default_value_t = 10)]
    pub prompts_per_conc: u32,
    /// Warmups per unit of concurrency (InferenceX: 2).
    #[arg(long, default_value_t = 2)]
    pub warmups_per_conc: u32,
    /// Fixed prompt count per point (overrides --prompts-per-conc).
    #[arg(long)]
    pub num_prompts: Option<u32>,
    /// Random range ratio (InferenceX: 0.8).
    #[arg(long, default_value_t = 0.8)]
    pub random_range_ratio: f64,
    /// Do not ask servers to ignore EOS (InferenceX sets ignore_eos).
    #[arg(long)]
    pub no_ignore_eos: bool,
    /// Tokenizer for prompt synthesis (o200k_base, cl100k_base, a tokenizer.json path, or
    /// `server`: the served model's own through its /tokenize endpoint, so ISL is exact).
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// Seed for prompt synthesis.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Endpoint path.
    #[arg(long, default_value = "/v1/completions")]
    pub endpoint: String,
    /// Per-request timeout in seconds.
    #[arg(long)]
    pub request_timeout: Option<f64>,
    /// AgentX traces for agentic-coding rows: a traces.jsonl or a directory of traces
    /// (InferenceX uses semianalysisai/cc-traces-weka-062126-256k; download it first).
    #[arg(long)]
    pub traces: Option<PathBuf>,
    /// Replay duration for agentic rows, seconds (default: the row's `duration`); below 900 s
    /// the points are stored as invalid.
    #[arg(long, value_name = "SECONDS")]
    pub agentic_duration: Option<f64>,
    /// Agentic rows: how long requests still in flight when the replay duration ends may run
    /// on, seconds (`replay --benchmark-grace-period`, AIPerf's name; default 30); what is still
    /// running then is cancelled.
    #[arg(long, value_name = "SECONDS")]
    pub agentic_grace_period: Option<f64>,
    /// Speculative-decoding rows: serve them with real verification instead of pinning throughput
    /// points to the golden acceptance length (InferenceX's synthetic acceptance).
    #[arg(long, help_heading = "Speculative decoding")]
    pub no_synthetic_acceptance: bool,
    /// Draft tokens per step k for `mtp` / `draft_model` rows (InferenceX's scripts: 3).
    #[arg(
        long,
        default_value_t = 3,
        value_name = "K",
        help_heading = "Speculative decoding"
    )]
    pub num_speculative_tokens: u32,
    /// Golden-curve mode: thinking_on (InferenceX's default) or thinking_off.
    #[arg(
        long,
        value_enum,
        default_value_t = ThinkingMode::ThinkingOn,
        help_heading = "Speculative decoding"
    )]
    pub thinking_mode: ThinkingMode,
    /// Pin this acceptance length instead of the golden curve's (reported as not golden).
    #[arg(long, value_name = "AL", help_heading = "Speculative decoding")]
    pub synthetic_acceptance_length: Option<f64>,
    /// Skip the GSM8K evals rows ask for (`run-eval`); eval-only rows are then not run at all.
    #[arg(long, help_heading = "Evals")]
    pub no_evals: bool,
    /// GSM8K data for evals: a directory with test.jsonl and train.jsonl (openai/gsm8k
    /// `main`). Default: the download cache (~/.cache/inferbench/gsm8k, fetched once); when
    /// that fails a row's eval fails with `eval_failed` (its throughput points run).
    #[arg(long, value_name = "DIR", help_heading = "Evals")]
    pub eval_data_dir: Option<PathBuf>,
    /// Only the first N GSM8K test problems (InferenceX's EVAL_LIMIT; default all 1,319).
    #[arg(long, value_name = "N", help_heading = "Evals")]
    pub eval_limit: Option<usize>,
    /// Output tokens per eval answer (default: the row's max-model-len − 4096, at most 16384;
    /// half of it at 4096 or less).
    #[arg(long, value_name = "TOKENS", help_heading = "Evals")]
    pub eval_max_tokens: Option<u32>,
    /// Eval requests in flight (default: the row's eval-conc, else its highest conc).
    #[arg(long, value_name = "N", help_heading = "Evals")]
    pub eval_concurrency: Option<usize>,
    /// Eval API: openai-chat (default; InferenceX's lm-eval with the chat template) or openai
    /// (completions).
    #[arg(long, value_enum, default_value_t = EvalBackend::OpenaiChat, help_heading = "Evals")]
    pub eval_backend: EvalBackend,
    /// Report eval-only rows' scores without failing them below the model's threshold.
    #[arg(long, help_heading = "Evals")]
    pub no_eval_threshold: bool,
    /// Re-run points already finished (default: skip them).
    #[arg(long)]
    pub force: bool,
    /// Show the load generator's live progress.
    #[arg(long)]
    pub progress: bool,
    /// What every request carries beyond the body (`--header-template`,
    /// `--dp-rank-roundrobin`, `--allow-empty-content`, `--backend`): flags of the CLI
    /// (`inferbench`'s `ClientArgs`), which sets this field; carried in `run-options.json`
    /// like the rest.
    #[arg(skip)]
    #[serde(
        default,
        skip_serializing_if = "inferbench_core::artifacts::ClientFeatures::is_default"
    )]
    pub client: inferbench_core::artifacts::ClientFeatures,
    /// Not a flag: `sweep --adaptive=TOL` sets it for the points of its Slurm/GitHub rounds,
    /// so each may stop early once its metrics are known to within TOL (issue 43); carried
    /// by `run-options.json`.
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_early_stop: Option<f64>,
}

impl RunFlags {
    /// Builds the runner's options, loading the runner config when given.
    pub fn sweep_options(&self) -> anyhow::Result<SweepOptions> {
        let runner_labels = match &self.runner_config {
            Some(p) => {
                // Named by its flag (trial 20: "cannot read examples/nosuch.yaml").
                let rc =
                    inferbench_recipes::schema::RunnerConfig::load(p).context("--runner-config")?;
                Some(rc.labels.into_iter().collect::<BTreeMap<_, _>>())
            }
            None => None,
        };
        let mut model_paths = Vec::new();
        for mp in &self.model_paths {
            let (m, p) = mp
                .split_once('=')
                .with_context(|| format!("--model-path {mp:?}: expected MODEL=PATH"))?;
            model_paths.push((m.to_string(), PathBuf::from(p)));
        }
        anyhow::ensure!(
            self.ready_timeout > 0.0 && self.ready_timeout.is_finite(),
            "--ready-timeout must be a positive number of seconds"
        );
        anyhow::ensure!(
            self.stop_grace >= 0.0 && self.stop_grace.is_finite(),
            "--stop-grace must be a non-negative number of seconds"
        );
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.random_range_ratio),
            "--random-range-ratio must be in [0, 1]"
        );
        if let Some(d) = self.agentic_duration {
            anyhow::ensure!(
                d > 0.0 && d.is_finite(),
                "--agentic-duration must be a positive number of seconds"
            );
        }
        if let Some(g) = self.agentic_grace_period {
            anyhow::ensure!(
                g >= 0.0 && g.is_finite(),
                "--agentic-grace-period must be a non-negative number of seconds"
            );
        }
        let abs = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        anyhow::ensure!(
            (1..=8).contains(&self.num_speculative_tokens),
            "--num-speculative-tokens: 1–8 (the golden curves' range)"
        );
        if let Some(al) = self.synthetic_acceptance_length {
            anyhow::ensure!(
                al >= 1.0 && al <= f64::from(self.num_speculative_tokens) + 1.0,
                "--synthetic-acceptance-length {al}: must be in [1, k + 1] for k = {} draft tokens",
                self.num_speculative_tokens
            );
        }
        anyhow::ensure!(
            self.eval_concurrency != Some(0),
            "--eval-concurrency must be ≥ 1"
        );
        inferbench_runner::point::header_templates(&self.client)?;
        inferbench_runner::point::backend(&self.client)?;
        Ok(SweepOptions {
            out_dir: abs(&self.out),
            runner_name: self.runner_name.clone(),
            runner_labels,
            engine: EngineOptions {
                python: self.python.clone(),
                host: self.host.clone(),
                recipe_dir: self.recipe_dir.as_ref().map(abs),
                script: self.engine_script.as_ref().map(abs),
                model_paths,
                threads: self.threads,
                extra_args: self.engine_args.clone(),
                sim_args: self.sim_args.clone(),
                spec: inferbench_runner::engine::SpecOptions {
                    synthetic: !self.no_synthetic_acceptance,
                    num_speculative_tokens: self.num_speculative_tokens,
                    thinking_mode: self.thinking_mode.key().to_string(),
                    acceptance_length: self.synthetic_acceptance_length,
                },
                ..EngineOptions::default()
            },
            port: self.port,
            ready_timeout: Duration::from_secs_f64(self.ready_timeout),
            stop_grace: Duration::from_secs_f64(self.stop_grace),
            bench: BenchDefaults {
                prompts_per_conc: self.prompts_per_conc,
                warmups_per_conc: self.warmups_per_conc,
                num_prompts: self.num_prompts,
                range_ratio: self.random_range_ratio,
                ignore_eos: !self.no_ignore_eos,
                tokenizer: self.tokenizer.clone(),
                seed: self.seed,
                endpoint: self.endpoint.clone(),
                request_timeout_s: self.request_timeout,
                traces: self.traces.as_ref().map(abs),
                agentic_duration_s: self.agentic_duration,
                agentic_grace_s: self.agentic_grace_period,
                agentic_warmup_per_lane: None,
                client: self.client.clone(),
                early_stop_tolerance: self.adaptive_early_stop,
            },
            force: self.force,
            base_url: self.base_url.clone(),
            progress_lines: true,
            evals: inferbench_runner::evals::EvalSettings {
                enabled: !self.no_evals,
                data_dir: self.eval_data_dir.as_ref().map(abs),
                limit: self.eval_limit,
                max_tokens: self.eval_max_tokens,
                concurrency: self.eval_concurrency,
                backend: self.eval_backend.backend(),
                check_threshold: !self.no_eval_threshold,
                ..Default::default()
            },
            ..SweepOptions::default()
        })
    }

    /// These flags as another machine's task needs them: every path absolute (resolved
    /// against this process's working directory), so a task started elsewhere in the shared
    /// file system reads and writes the same files.
    pub fn for_tasks(&self) -> RunFlags {
        let abs = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let mut a = self.clone();
        a.out = abs(&a.out);
        for p in [
            &mut a.runner_config,
            &mut a.recipe_dir,
            &mut a.engine_script,
            &mut a.traces,
            &mut a.eval_data_dir,
            &mut a.client.tls_ca,
        ]
        .into_iter()
        .flatten()
        {
            *p = abs(p);
        }
        for mp in &mut a.model_paths {
            if let Some((m, p)) = mp.split_once('=') {
                *mp = format!("{m}={}", abs(&PathBuf::from(p)).display());
            }
        }
        a
    }

    /// These flags as a GitHub runner's job needs them: its checkout is a fresh copy of the
    /// repository, so paths stay as given (relative to the repository root, where `sweep` is
    /// run), `out` is `results` (what the workflow uploads) and the runner name is the
    /// runner's own (the workflow passes it). Also returns a warning per absolute path, which
    /// names this machine's file system.
    pub fn for_github(&self) -> (RunFlags, Vec<String>) {
        let mut a = self.clone();
        a.out = PathBuf::from("results");
        a.runner_name = None;
        let mut warnings = Vec::new();
        let mut check = |flag: &str, p: &std::path::Path| {
            if p.is_absolute() {
                warnings.push(format!(
                    "{flag} {}: an absolute path, read as is on the GitHub runners (give it \
                     relative to the repository root)",
                    p.display()
                ));
            }
        };
        for (flag, p) in [
            ("--runner-config", &a.runner_config),
            ("--recipe-dir", &a.recipe_dir),
            ("--engine-script", &a.engine_script),
            ("--traces", &a.traces),
            ("--eval-data-dir", &a.eval_data_dir),
            ("--tls-ca", &a.client.tls_ca),
        ] {
            if let Some(p) = p {
                check(flag, p);
            }
        }
        for mp in &a.model_paths {
            if let Some((_, p)) = mp.split_once('=') {
                check("--model-path", std::path::Path::new(p));
            }
        }
        (a, warnings)
    }

    /// Writes `run` to `path` as an options file (`{"schema_version": 1, "run": {…}}`),
    /// atomically, creating its directory.
    pub fn write_options(run: RunFlags, path: &std::path::Path) -> anyhow::Result<()> {
        let file = OptionsFile {
            schema_version: OPTIONS_SCHEMA_VERSION,
            run,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        artifacts::write_json_atomic(path, &file)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Writes [`RunFlags::for_tasks`] to `path` as JSON (`{"schema_version": 1, "run": {…}}`,
    /// field names as the struct's), atomically, creating its directory. Errors: the file
    /// cannot be written.
    pub fn write_options_file(&self, path: &std::path::Path) -> anyhow::Result<()> {
        Self::write_options(self.for_tasks(), path)
    }

    /// Reads a file written by [`RunFlags::write_options_file`]. Errors name the file, and for
    /// bad JSON or an unknown field the line and column; a newer `schema_version` is refused.
    pub fn read_options_file(path: &std::path::Path) -> anyhow::Result<RunFlags> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: OptionsFile = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
        anyhow::ensure!(
            file.schema_version <= OPTIONS_SCHEMA_VERSION,
            "{}: schema_version {} is newer than this inferbench reads ({OPTIONS_SCHEMA_VERSION})",
            path.display(),
            file.schema_version
        );
        Ok(file.run)
    }
}

/// Version of the options file a Slurm task reads (`job --options-file`).
const OPTIONS_SCHEMA_VERSION: u32 = 1;

/// The options file's shape.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsFile {
    /// [`OPTIONS_SCHEMA_VERSION`] when written.
    schema_version: u32,
    /// The flags.
    run: RunFlags,
}

/// The run flags' file in `<out>/_slurm/` that every Slurm task reads.
pub const SLURM_OPTIONS_FILE: &str = "run-options.json";

/// The run flags' file in `--github-dir` that every GitHub row reads.
pub const GITHUB_OPTIONS_FILE: &str = "run-options.json";

/// Where the matrix runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Executor {
    /// In this process, one point after another.
    Local,
    /// An sbatch job array, one task per pending row.
    Slurm,
    /// Write the matrix and a reusable GitHub Actions workflow for self-hosted runners.
    Github,
}

/// Flags of `inferbench sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepFlags {
    /// Job matrix JSON (as printed by `inferbench matrix`, or the changelog's bucketed object).
    #[arg(long)]
    pub matrix: PathBuf,
    /// Executor.
    #[arg(long, value_enum, default_value_t = Executor::Local)]
    pub executor: Executor,
    /// Only these row indices (comma-separated, e.g. `0,3,5`).
    #[arg(long, value_delimiter = ',')]
    pub rows: Vec<usize>,
    /// Adaptive sweep: rows that differ only in concurrency are one curve, and within its
    /// listed range the sweep measures only the concurrencies that decide the group's frontier
    /// to within TOLERANCE (relative, in (0, 0.5], warned above 0.2; `--adaptive` alone: 0.02;
    /// outside: exit 2): the ends and the middle first,
    /// then where the curve bends. Local: every round in this process, and `sweep.json` says
    /// what it saved (`adaptive.full_list_gpu_seconds`, `adaptive.saved_fraction`). Slurm and
    /// GitHub: one round per call, written as `<out>/adaptive-round-<N>.json` from the points
    /// earlier rounds left under --out and run as that matrix; call again once they are back.
    /// A curve never measures more points than it lists, and each point may stop once its
    /// median interactivity and throughput are known to within TOLERANCE at 95 % confidence
    /// (its result says `inferbench.adaptive` and `prompts_used`).
    #[arg(
        long,
        value_name = "TOLERANCE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "0.02"
    )]
    pub adaptive: Option<f64>,
    /// The run flags, shared with `job`.
    #[command(flatten)]
    pub run: RunFlags,
    /// Slurm: partition.
    #[arg(long, help_heading = "Slurm")]
    pub partition: Option<String>,
    /// Slurm: time limit per task (e.g. `8:00:00`).
    #[arg(long, help_heading = "Slurm")]
    pub time: Option<String>,
    /// Slurm: most array tasks at once.
    #[arg(long, help_heading = "Slurm")]
    pub max_parallel: Option<u32>,
    /// Slurm: extra `#SBATCH` option (repeatable), e.g. `--sbatch-arg=--gres=gpu:8`.
    #[arg(
        long = "sbatch-arg",
        allow_hyphen_values = true,
        help_heading = "Slurm"
    )]
    pub sbatch_args: Vec<String>,
    /// Slurm: submit and return instead of waiting for the array and gathering results.
    #[arg(long, help_heading = "Slurm")]
    pub no_wait: bool,
    /// Slurm: do not submit; gather the points' status into sweep.json (after `--no-wait`).
    #[arg(long, help_heading = "Slurm")]
    pub gather: bool,
    /// Slurm: inferbench executable on the compute nodes (default: this executable).
    #[arg(long, help_heading = "Slurm")]
    pub inferbench_exe: Option<PathBuf>,
    /// GitHub: directory for `matrix.json` and `inferbench-sweep.yml`.
    #[arg(long, default_value = ".github/inferbench", help_heading = "GitHub")]
    pub github_dir: PathBuf,
    /// GitHub: command that runs inferbench on the runners.
    #[arg(long, default_value = "inferbench", help_heading = "GitHub")]
    pub github_inferbench: String,
}

/// The rows of `jobs` whose index is in `rows` (all of them when `rows` is empty); errors: an
/// index past the matrix (`matrix` names it).
pub fn select(
    jobs: Vec<JobSpec>,
    rows: &[usize],
    matrix: &std::path::Path,
) -> anyhow::Result<Vec<JobSpec>> {
    if rows.is_empty() {
        return Ok(jobs);
    }
    let len = jobs.len();
    for r in rows {
        anyhow::ensure!(
            *r < len,
            "--rows: index {r} out of range ({} has {len} rows)",
            matrix.display()
        );
    }
    Ok(jobs
        .into_iter()
        .filter(|j| rows.contains(&j.index))
        .collect())
}

/// Flags of `inferbench job`.
#[derive(Debug, clap::Args)]
pub struct JobFlags {
    /// Job matrix JSON.
    #[arg(long, required_unless_present = "row")]
    pub matrix: Option<PathBuf>,
    /// Row index in the matrix (0-based; Slurm passes `$SLURM_ARRAY_TASK_ID`).
    #[arg(long, required_unless_present = "row")]
    pub index: Option<usize>,
    /// The row itself as JSON, instead of --matrix/--index.
    #[arg(long, conflicts_with_all = ["matrix", "index"])]
    pub row: Option<String>,
    /// Every run flag from this JSON file instead (what `sweep --executor slurm` writes to
    /// `<out>/_slurm/run-options.json` for its tasks, and `--executor github` to
    /// `<github-dir>/run-options.json`). Of the run flags given beside it only --runner-name
    /// counts (a GitHub runner passes its own name); the others are ignored.
    #[arg(long, value_name = "FILE")]
    pub options_file: Option<PathBuf>,
    /// The run flags, shared with `sweep`.
    #[command(flatten)]
    pub run: RunFlags,
}

impl JobFlags {
    /// The row to run (`--row`, or `--matrix` and `--index`) and the run flags it runs with
    /// (`--options-file`'s, with `--runner-name` from the command line over the file's).
    pub fn resolve(self) -> anyhow::Result<(JobSpec, RunFlags)> {
        let job = match (&self.row, &self.matrix, self.index) {
            (Some(text), _, _) => {
                let mut rows = inferbench_runner::jobspec::parse_matrix(text, "--row".as_ref())?;
                anyhow::ensure!(
                    rows.len() == 1,
                    "--row: expected exactly one row, got {}",
                    rows.len()
                );
                rows.remove(0)
            }
            (None, Some(m), Some(i)) => load_row(m, i)?,
            _ => anyhow::bail!("give --matrix and --index, or --row"),
        };
        let run = match &self.options_file {
            Some(f) => {
                let mut run = RunFlags::read_options_file(f)?;
                if self.run.runner_name.is_some() {
                    run.runner_name = self.run.runner_name.clone();
                }
                run
            }
            None => self.run,
        };
        Ok((job, run))
    }
}

/// Runs `jobs` in this process with the load generator until `cancel` fires (the current point
/// and the engine stop, the remaining points are marked interrupted); says on stderr which
/// eval-only rows `--no-evals` leaves out, and prints the sweep's summary there. A sweep that
/// writes its report holds its output directory ([`artifacts::lock_out_dir`]). Returns the
/// exit status of how the sweep ended ([`inferbench_runner::SweepReport::end`]), or
/// [`ExitStatus::Usage`] when another sweep holds the directory.
pub async fn run_here(
    jobs: &[JobSpec],
    opts: &SweepOptions,
    progress: bool,
    adaptive: Option<f64>,
    cancel: &inferbench_runner::CancellationToken,
) -> ExitStatus {
    // One local sweep per output directory; `job` tasks of one Slurm or GitHub sweep share
    // theirs (each runs its own rows, the gather writes the report).
    let _lock = if opts.write_report {
        match artifacts::lock_out_dir(&opts.out_dir) {
            Ok(l) => Some(l),
            Err(e) => {
                errln!("error: {e}");
                return ExitStatus::Usage;
            }
        }
    } else {
        None
    };
    if !opts.evals.enabled {
        let n = jobs
            .iter()
            .filter(|j| inferbench_runner::evals::eval_only(j))
            .count();
        if n > 0 {
            errln!("--no-evals: {n} eval-only row(s) not run");
        }
    }
    let runner = LoadgenPoint {
        progress,
        ..LoadgenPoint::default()
    };
    let report = match adaptive {
        Some(tol) => inferbench_runner::adaptive::run_local(jobs, opts, &runner, cancel, tol).await,
        None => run_jobs(jobs, opts, &runner, cancel).await,
    };
    if let Some(a) = &report.adaptive {
        errln!(
            "adaptive (tolerance {}): {} of {} listed points in {} rounds, {:.0} GPU-s of an estimated {:.0} for the full list ({:.0} % saved)",
            a.tolerance,
            a.measured_points,
            a.listed_points,
            a.rounds,
            report.gpu_seconds,
            a.full_list_gpu_seconds,
            100.0 * a.saved_fraction
        );
        // Why each curve stopped where it did (issue 43): what it skipped and the noise used;
        // sweep.json's `adaptive.curves` also holds each proposal's reason.
        for c in &a.curves {
            let skipped: Vec<String> = (c.skipped.iter())
                .map(|n| format!("conc {} ({})", n.conc, n.reason))
                .collect();
            errln!(
                "adaptive: row {}: measured conc {:?}; noise σ {:.1} %{}; {}",
                c.row,
                c.measured,
                100.0 * c.noise,
                if c.noisy {
                    " (above the tolerance: undominated stretches measured as listed)"
                } else {
                    ""
                },
                if skipped.is_empty() {
                    "nothing skipped".to_string()
                } else {
                    format!("skipped {}", skipped.join(", "))
                }
            );
        }
    }
    if opts.progress_lines {
        err!("{}", report.render_after_progress());
    } else {
        err!("{}", report.render());
    }
    errln!("artifacts in {} ({})", opts.out_dir.display(), SWEEP_REPORT);
    ExitStatus::from(report.end())
}

impl SweepFlags {
    /// The matrix's rows selected by `--rows`. Errors: the matrix cannot be read or parsed, it
    /// has no rows (an empty array or a bucketed object with empty buckets), an index of
    /// `--rows` is out of range.
    pub fn jobs(&self) -> anyhow::Result<Vec<JobSpec>> {
        let jobs = load_matrix(&self.matrix)?;
        // Trial 19: `--matrix` of `[]` ran "0 points" and exited 0, as if all were done.
        anyhow::ensure!(
            !jobs.is_empty(),
            "{}: the matrix has no rows: nothing to run (`matrix` or `changelog` selected none)",
            self.matrix.display()
        );
        select(jobs, &self.rows, &self.matrix)
    }

    /// `--executor github`: writes the rows, the run flags (`run-options.json`, paths as given)
    /// and the reusable workflow into `--github-dir`, and says so (warnings on stderr). Returns
    /// the exit code (0).
    pub fn write_github(&self, jobs: &[JobSpec]) -> anyhow::Result<ExitStatus> {
        // The rows' run flags travel as a file in the repository, as Slurm tasks' do
        // (issue 12: the workflow ran `job` with its defaults, dropping every sweep flag).
        // The folder first, through the one check of every output folder (a dangling link on
        // its way included: issue 39, fresh tester's finding 2), before any file is written.
        if let Some(why) = inferbench_loadgen::output::dir_uncreatable(&self.github_dir) {
            anyhow::bail!("--github-dir {}: {why}", self.github_dir.display());
        }
        let options = self.github_dir.join(GITHUB_OPTIONS_FILE);
        let (run, path_warnings) = self.run.for_github();
        RunFlags::write_options(run, &options)?;
        // The workflow names both files relative to the repository root (trial 12: a
        // --github-dir given as an absolute path was written into the workflow as is).
        let (in_repo, dir_warning) = github::repo_relative(&self.github_dir)?;
        let in_repo_path = |name: &str| {
            let p = in_repo.join(name);
            p.strip_prefix(".").unwrap_or(&p).display().to_string()
        };
        let gh = github::GithubOptions {
            matrix_path: in_repo_path("matrix.json"),
            inferbench_cmd: self.github_inferbench.clone(),
            options_path: Some(in_repo_path(GITHUB_OPTIONS_FILE)),
            ..Default::default()
        };
        let files = github::write(jobs, &self.github_dir, &gh)?;
        for w in files
            .warnings
            .iter()
            .chain(&path_warnings)
            .chain(&dir_warning)
        {
            errln!("warning: {w}");
        }
        if self.run.runner_name.is_some() {
            errln!(
                "note: --runner-name is not passed to the workflow: each row runs under its \
                 GitHub runner's own name"
            );
        }
        outln!(
            "wrote {} ({}), {} (the run flags) and {}; commit them, copy the workflow \
             into .github/workflows/ and run it",
            files.matrix.display(),
            inferbench_core::count(jobs.len(), "row"),
            options.display(),
            files.workflow.display()
        );
        Ok(ExitStatus::Ok)
    }

    /// Gathers the points' status into `sweep.json` (with the runner name the tasks ran
    /// under) and prints its summary on stderr; returns the exit status of how the sweep
    /// ended.
    fn gather_report(&self, jobs: &[JobSpec], opts: &SweepOptions) -> anyhow::Result<ExitStatus> {
        let mut gopts = opts.clone();
        gopts.runner_name = self.run.runner_name.clone();
        let report = gather(jobs, &gopts);
        artifacts::write_json_atomic(&opts.out_dir.join(SWEEP_REPORT), &report)?;
        err!("{}", report.render());
        Ok(ExitStatus::from(report.end()))
    }

    /// `--executor slurm`: with `--gather` only gathers; otherwise submits the rows not yet
    /// finished (all with `--force`) as one job array whose tasks read `run-options.json`,
    /// then (unless `--no-wait`, which prints the job id) waits and gathers. Returns the exit
    /// status.
    pub async fn slurm(&self, jobs: &[JobSpec], opts: &SweepOptions) -> anyhow::Result<ExitStatus> {
        if self.gather {
            return self.gather_report(jobs, opts);
        }
        let matrix = std::path::absolute(&self.matrix)?;
        let pending: Vec<usize> = if opts.force {
            jobs.iter().map(|j| j.index).collect()
        } else {
            let done = gather(jobs, opts);
            let mut idx: Vec<usize> = done
                .points
                .iter()
                .filter(|p| p.outcome != inferbench_runner::Outcome::Ok)
                .map(|p| p.index)
                .collect();
            idx.dedup();
            idx
        };
        if pending.is_empty() {
            outln!(
                "all {} rows already finished; nothing to submit",
                jobs.len()
            );
            return Ok(ExitStatus::Ok);
        }
        // The tasks' flags travel as one file beside the script, not as a rebuilt argv.
        let dir = opts.out_dir.join("_slurm");
        let options_file = dir.join(SLURM_OPTIONS_FILE);
        self.run.write_options_file(&options_file)?;
        let so = slurm::SlurmOptions {
            inferbench_exe: match &self.inferbench_exe {
                Some(p) => p.clone(),
                None => std::env::current_exe()?,
            },
            partition: self.partition.clone(),
            time_limit: self.time.clone(),
            max_parallel: self.max_parallel,
            job_name: None,
            extra_sbatch: self.sbatch_args.clone(),
            job_args: vec!["--options-file".into(), options_file.display().to_string()],
            wait: !self.no_wait,
        };
        let job_id = slurm::submit(&matrix, &pending, &dir, &so).await?;
        errln!(
            "submitted Slurm job {job_id}: array {} ({} rows), script {}",
            slurm::array_spec(&pending),
            pending.len(),
            dir.join("job.sbatch").display()
        );
        if self.no_wait {
            outln!("{job_id}");
            return Ok(ExitStatus::Ok);
        }
        // Tasks ran `inferbench job` with a fixed runner name; gather with the same one.
        self.gather_report(jobs, opts)
    }
}

/// The quickstart's sweep flags (`inferbench quickstart` adds where results go: `--out`,
/// `--db`, `--no-db`).
#[derive(Debug, clap::Args)]
pub struct QuickstartFlags {
    /// Chart path (.svg or .png: only that file); default: both `<out>/<UTC time>/frontier.svg`
    /// and `frontier.png`.
    #[arg(long)]
    pub chart: Option<PathBuf>,
    /// Concurrency points, comma-separated [default: 1,2,4,8,16,32,64; --fast: 1,4,16,64].
    #[arg(long, value_delimiter = ',')]
    pub concurrency: Option<Vec<u32>>,
    /// Input length, tokens [default: 1024; --fast: 512].
    #[arg(long)]
    pub isl: Option<u32>,
    /// Output length, tokens [default: 256; --fast: 64].
    #[arg(long)]
    pub osl: Option<u32>,
    /// Prompts per point = this × concurrency (InferenceX uses 10) [default: 5; --fast: 2].
    #[arg(long)]
    pub prompts_per_conc: Option<u32>,
    /// Warmup requests per point = this × concurrency (InferenceX uses 2) [default: 1;
    /// --fast: 0].
    #[arg(long)]
    pub warmups_per_conc: Option<u32>,
    /// Simulated model (catalogue name).
    #[arg(long, default_value = "Llama-3.1-8B")]
    pub model: String,
    /// Simulated hardware (catalogue name).
    #[arg(long, default_value = "H100")]
    pub hardware: String,
    /// Weight precision.
    #[arg(long, default_value = "bf16")]
    pub precision: String,
    /// Tensor-parallel GPUs of the simulated server.
    #[arg(long, default_value_t = 1)]
    pub tp: u32,
    /// Simulated max-num-seqs: TTFT jumps once concurrency passes it [default: 32; --fast: 16].
    #[arg(long)]
    pub max_num_seqs: Option<u32>,
    /// Modelled seconds per wall second. Results are converted back to modelled time (every
    /// timestamp × this factor), so they describe the simulated hardware; keep one engine step
    /// above ~1 ms of wall time (the timer's granularity), i.e. this factor at most ~5 for an 8B
    /// model on H100. [default: 4; --fast: 8, past that guidance on purpose: a smoke run trades
    /// timing precision for speed]
    #[arg(long, allow_negative_numbers = true, value_parser = inferbench_sim::positive_f64)]
    pub time_scale: Option<f64>,
    /// Seed for prompts.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A seconds-long smoke run: concurrency 1,4,16,64, ISL 512, OSL 64, 2 prompts per
    /// concurrency, no warmups, max-num-seqs 16, time scale 8 (flags given explicitly win).
    #[arg(long)]
    pub fast: bool,
    /// AgentX instead: replay built-in agentic-coding sessions (sub-agents, prefix reuse) at
    /// 1, 2, 4, 8 lanes for 6 s of replay each (3 s with --fast; about 45 s in all with each
    /// point's warmup and drain), on the sim in real time (time scale 1), and show the
    /// North-Star frontier.
    #[arg(long)]
    pub agentic: bool,
}

impl QuickstartFlags {
    /// With `--fast`, the note under the table that its curve is not one to read (trial 16:
    /// with 2 prompts per unit of concurrency, conc 64 beat conc 16 in interactivity); `plan`
    /// is [`QuickstartFlags::plan`]'s sweep.
    pub fn fast_note(&self, plan: &SimSweep) -> Option<String> {
        self.fast.then(|| {
            format!(
                "--fast: a smoke run ({} prompt(s) per unit of concurrency, {} points), so each \
                 figure rests on few requests and the curve can cross itself (a higher conc \
                 showing a higher interactivity); read the curve of a run without --fast",
                plan.prompts_per_conc,
                plan.concurrency.len()
            )
        })
    }

    /// The fixed-length sweep the flags ask for, checked: positive concurrencies, lengths and
    /// prompt counts, a `.svg`/`.png` chart, ISL + OSL within the simulated model's context.
    pub fn plan(&self) -> anyhow::Result<SimSweep> {
        let p = plan_of(self)?;
        anyhow::ensure!(
            !p.concurrency.is_empty() && p.concurrency.iter().all(|&c| c > 0),
            "--concurrency needs positive values"
        );
        anyhow::ensure!(p.isl > 0, "--isl must be at least 1 token");
        anyhow::ensure!(p.osl > 0, "--osl must be at least 1 token");
        anyhow::ensure!(
            p.prompts_per_conc > 0,
            "--prompts-per-conc must be at least 1"
        );
        if let Some(c) = &self.chart {
            let ext = c.extension().and_then(|e| e.to_str()).unwrap_or("");
            anyhow::ensure!(
                ext.eq_ignore_ascii_case("svg") || ext.eq_ignore_ascii_case("png"),
                "--chart {}: use a .svg or .png file name",
                c.display()
            );
        }
        let info = inferbench_sim::describe(&p.sim)?;
        anyhow::ensure!(
            u64::from(p.isl) + u64::from(p.osl) <= u64::from(info.max_model_len),
            "--isl {} + --osl {} exceeds the simulated model's max_model_len {}",
            p.isl,
            p.osl,
            info.max_model_len
        );
        Ok(p)
    }

    /// `--agentic`'s sweep: lanes 1, 2, 4, 8 (or `--concurrency`), 6 s each (3 s with
    /// `--fast`), 64-token KV blocks; checked as [`QuickstartFlags::plan`] checks (positive
    /// lanes, a known precision, a sim that can start).
    pub fn agentic_plan(&self) -> anyhow::Result<AgenticSimSweep> {
        let lanes = self
            .concurrency
            .clone()
            .unwrap_or_else(|| AGENTIC_LANES.to_vec());
        anyhow::ensure!(
            !lanes.is_empty() && lanes.iter().all(|&c| c > 0),
            "--concurrency needs positive values"
        );
        let sweep = AgenticSimSweep {
            sim: SimConfig {
                hardware: self.hardware.clone(),
                model: self.model.clone(),
                precision: Precision::parse(&self.precision)?,
                tp: self.tp,
                block_size: 64,
                seed: self.seed,
                threads: 1,
                ..SimConfig::default()
            },
            lanes,
            duration: Duration::from_secs_f64(if self.fast { 3.0 } else { 6.0 }),
        };
        inferbench_sim::describe(&sweep.sim)?;
        Ok(sweep)
    }
}

/// Default lane counts of the agentic quickstart.
const AGENTIC_LANES: [u32; 4] = [1, 2, 4, 8];

/// The sweep the flags ask for, `--fast`'s defaults or the full ones filling the flags not
/// given. Errors: an unknown `--precision`.
fn plan_of(a: &QuickstartFlags) -> anyhow::Result<SimSweep> {
    let f = a.fast;
    let conc: &[u32] = if f {
        &[1, 4, 16, 64]
    } else {
        &[1, 2, 4, 8, 16, 32, 64]
    };
    Ok(SimSweep {
        sim: SimConfig {
            hardware: a.hardware.clone(),
            model: a.model.clone(),
            precision: Precision::parse(&a.precision)?,
            tp: a.tp,
            time_scale: a.time_scale.unwrap_or(if f { 8.0 } else { 4.0 }),
            max_num_seqs: a.max_num_seqs.unwrap_or(if f { 16 } else { 32 }),
            seed: a.seed,
            threads: 1,
            ..SimConfig::default()
        },
        concurrency: a.concurrency.clone().unwrap_or_else(|| conc.to_vec()),
        isl: a.isl.unwrap_or(if f { 512 } else { 1024 }),
        osl: a.osl.unwrap_or(if f { 64 } else { 256 }),
        prompts_per_conc: a.prompts_per_conc.unwrap_or(if f { 2 } else { 5 }),
        warmups_per_conc: a.warmups_per_conc.unwrap_or(if f { 0 } else { 1 }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunFlags,
    }

    /// Every flag survives the options file, paths come back absolute, and a damaged or newer
    /// file is refused with its name (and line:column for bad JSON).
    #[test]
    fn options_file_round_trip() {
        let given = Cli::parse_from([
            "x",
            "--out",
            "rel/out",
            "--runner-name",
            "h100-cr_0",
            "--model-path",
            "m=weights/m.gguf",
            "--engine-arg=--foo",
            "--sim-arg=--time-scale=50",
            "--num-prompts",
            "7",
            "--eval-limit",
            "3",
            "--thinking-mode",
            "thinking_off",
            "--eval-backend",
            "openai",
            "--no-evals",
            "--request-timeout",
            "1.5",
        ])
        .run;
        // The CLI's client flags (issue 41) ride in the same file.
        let given = RunFlags {
            client: inferbench_core::artifacts::ClientFeatures {
                header_templates: vec!["X-Req: {i}".into()],
                dp_rank_roundrobin: Some(4),
                allow_empty_content: true,
                backend: Some("openai-chat".into()),
                tls_ca: Some("certs/ca.pem".into()),
                insecure: false,
            },
            ..given
        };
        let dir = std::env::temp_dir().join(format!("ib-options-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(SLURM_OPTIONS_FILE);
        given.write_options_file(&f).unwrap();
        let back = RunFlags::read_options_file(&f).unwrap();
        assert_eq!(back, given.for_tasks());
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(back.out, cwd.join("rel/out"));
        assert_eq!(
            back.model_paths,
            [format!("m={}", cwd.join("weights/m.gguf").display())]
        );
        assert_eq!(back.engine_args, ["--foo"]);
        // `--tls-ca` comes back absolute, as the other paths.
        assert_eq!(back.client.tls_ca, Some(cwd.join("certs/ca.pem")));
        assert_eq!(back.num_prompts, Some(7));
        assert!(back.no_evals);
        assert_eq!(back.thinking_mode, ThinkingMode::ThinkingOff);
        assert_eq!(back.eval_backend, EvalBackend::Openai);
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.contains("\"thinking_mode\": \"thinking_off\""),
            "{text}"
        );
        assert!(text.contains("\"eval_backend\": \"openai\""), "{text}");

        std::fs::write(&f, "{\"schema_version\": 1,\n \"run\": {\"bogus\": 1}}").unwrap();
        let e = RunFlags::read_options_file(&f).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2:", f.display())), "{e}");
        assert!(e.contains("bogus"), "{e}");
        let mut v = serde_json::json!({"schema_version": 2});
        v["run"] = serde_json::to_value(&given).unwrap();
        std::fs::write(&f, v.to_string()).unwrap();
        let e = RunFlags::read_options_file(&f).unwrap_err().to_string();
        assert!(e.contains("schema_version 2 is newer"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod quickstart_tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        q: QuickstartFlags,
    }

    fn flags(argv: &[&str]) -> QuickstartFlags {
        let mut full = vec!["quickstart"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full).unwrap().q
    }

    /// `--fast` fills only the flags not given; bad values are refused naming the flag.
    #[test]
    fn plans_and_refusals() {
        let p = flags(&["--fast", "--isl", "256"]).plan().unwrap();
        assert_eq!(p.concurrency, [1, 4, 16, 64]);
        assert_eq!((p.isl, p.osl, p.prompts_per_conc), (256, 64, 2));
        assert_eq!((p.sim.time_scale, p.sim.max_num_seqs), (8.0, 16));
        let p = flags(&[]).plan().unwrap();
        assert_eq!((p.isl, p.osl, p.warmups_per_conc), (1024, 256, 1));
        for (argv, want) in [
            (&["--concurrency", "0"][..], "--concurrency"),
            (&["--osl", "0"][..], "--osl"),
            (&["--chart", "x.jpg"][..], "--chart"),
            (&["--isl", "1000000"][..], "max_model_len"),
            (&["--precision", "fp3"][..], "fp3"),
        ] {
            let e = format!("{:#}", flags(argv).plan().unwrap_err());
            assert!(e.contains(want), "{argv:?}: {e}");
        }
        let a = flags(&["--agentic", "--fast"]).agentic_plan().unwrap();
        assert_eq!(a.lanes, AGENTIC_LANES);
        assert_eq!((a.duration, a.sim.block_size), (Duration::from_secs(3), 64));
    }
}
