//! `inferbench sweep`: run a job matrix locally, submit it to Slurm as a job array, or write a
//! GitHub Actions workflow for it (logic in `inferbench-runner`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use inferbench_runner::engine::EngineOptions;
use inferbench_runner::executor::{github, slurm};
use inferbench_runner::sweep::{gather, SWEEP_REPORT};
use inferbench_runner::{artifacts, load_matrix, BenchDefaults, JobSpec, SweepOptions};

use super::{EvalBackend, ThinkingMode};

/// Flags shared by `sweep` and `job`: where results go, how engines start, how points run.
/// Slurm tasks and GitHub rows receive them as a file ([`RunArgs::write_options_file`],
/// [`RunArgs::for_github`], read back by `job --options-file`), so a new flag needs no code
/// beyond its field.
#[derive(Debug, Clone, PartialEq, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
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
    #[arg(long, env = "INFERBENCH_PYTHON", default_value = "python3")]
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
    /// Tokenizer for prompt synthesis (o200k_base, cl100k_base or a tokenizer.json path).
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
}

impl RunArgs {
    /// Builds the runner's options, loading the runner config when given.
    pub fn sweep_options(&self) -> anyhow::Result<SweepOptions> {
        let runner_labels = match &self.runner_config {
            Some(p) => {
                let rc = inferbench_recipes::schema::RunnerConfig::load(p)?;
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
    pub fn for_tasks(&self) -> RunArgs {
        let abs = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let mut a = self.clone();
        a.out = abs(&a.out);
        for p in [
            &mut a.runner_config,
            &mut a.recipe_dir,
            &mut a.engine_script,
            &mut a.traces,
            &mut a.eval_data_dir,
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
    pub fn for_github(&self) -> (RunArgs, Vec<String>) {
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
    fn write_options(run: RunArgs, path: &std::path::Path) -> anyhow::Result<()> {
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

    /// Writes [`RunArgs::for_tasks`] to `path` as JSON (`{"schema_version": 1, "run": {…}}`,
    /// field names as the struct's), atomically, creating its directory. Errors: the file
    /// cannot be written.
    pub fn write_options_file(&self, path: &std::path::Path) -> anyhow::Result<()> {
        Self::write_options(self.for_tasks(), path)
    }

    /// Reads a file written by [`RunArgs::write_options_file`]. Errors name the file, and for
    /// bad JSON or an unknown field the line and column; a newer `schema_version` is refused.
    pub fn read_options_file(path: &std::path::Path) -> anyhow::Result<RunArgs> {
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
    schema_version: u32,
    run: RunArgs,
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
pub struct Args {
    /// Job matrix JSON (as printed by `inferbench matrix`, or the changelog's bucketed object).
    #[arg(long)]
    pub matrix: PathBuf,
    /// Executor.
    #[arg(long, value_enum, default_value_t = Executor::Local)]
    pub executor: Executor,
    /// Only these row indices (comma-separated, e.g. `0,3,5`).
    #[arg(long, value_delimiter = ',')]
    pub rows: Vec<usize>,
    #[command(flatten)]
    pub run: RunArgs,
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

fn select(
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

/// Runs the subcommand; returns the process exit code (0 all ok, 1 some point failed,
/// 130 interrupted).
pub fn run(args: Args) -> anyhow::Result<i32> {
    let jobs = select(load_matrix(&args.matrix)?, &args.rows, &args.matrix)?;
    let opts = args.run.sweep_options()?;
    match args.executor {
        Executor::Local => super::job::run_local(&jobs, &opts, args.run.progress),
        Executor::Github => {
            // The rows' run flags travel as a file in the repository, as Slurm tasks' do
            // (issue 12: the workflow ran `job` with its defaults, dropping every sweep flag).
            let options = args.github_dir.join(GITHUB_OPTIONS_FILE);
            let (run, path_warnings) = args.run.for_github();
            RunArgs::write_options(run, &options)?;
            let gh = github::GithubOptions {
                matrix_path: args.github_dir.join("matrix.json").display().to_string(),
                inferbench_cmd: args.github_inferbench.clone(),
                options_path: Some(options.display().to_string()),
                ..Default::default()
            };
            let files = github::write(&jobs, &args.github_dir, &gh)?;
            for w in files.warnings.iter().chain(&path_warnings) {
                eprintln!("warning: {w}");
            }
            if args.run.runner_name.is_some() {
                eprintln!(
                    "note: --runner-name is not passed to the workflow: each row runs under its \
                     GitHub runner's own name"
                );
            }
            println!(
                "wrote {} ({} rows), {} (the run flags) and {}; commit them, copy the workflow \
                 into .github/workflows/ and run it",
                files.matrix.display(),
                jobs.len(),
                options.display(),
                files.workflow.display()
            );
            Ok(0)
        }
        Executor::Slurm if args.gather => {
            let mut gopts = opts.clone();
            gopts.runner_name = args.run.runner_name.clone();
            let report = gather(&jobs, &gopts);
            artifacts::write_json_atomic(&opts.out_dir.join(SWEEP_REPORT), &report)?;
            eprint!("{}", report.render());
            Ok(report.exit_code())
        }
        Executor::Slurm => {
            let matrix = std::path::absolute(&args.matrix)?;
            let pending: Vec<usize> = if opts.force {
                jobs.iter().map(|j| j.index).collect()
            } else {
                let done = gather(&jobs, &opts);
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
                println!(
                    "all {} rows already finished; nothing to submit",
                    jobs.len()
                );
                return Ok(0);
            }
            // The tasks' flags travel as one file beside the script, not as a rebuilt argv.
            let dir = opts.out_dir.join("_slurm");
            let options_file = dir.join(SLURM_OPTIONS_FILE);
            args.run.write_options_file(&options_file)?;
            let so = slurm::SlurmOptions {
                inferbench_exe: match &args.inferbench_exe {
                    Some(p) => p.clone(),
                    None => std::env::current_exe()?,
                },
                partition: args.partition.clone(),
                time_limit: args.time.clone(),
                max_parallel: args.max_parallel,
                job_name: None,
                extra_sbatch: args.sbatch_args.clone(),
                job_args: vec!["--options-file".into(), options_file.display().to_string()],
                wait: !args.no_wait,
            };
            let rt = tokio::runtime::Runtime::new()?;
            let job_id = rt.block_on(slurm::submit(&matrix, &pending, &dir, &so))?;
            eprintln!(
                "submitted Slurm job {job_id}: array {} ({} rows), script {}",
                slurm::array_spec(&pending),
                pending.len(),
                dir.join("job.sbatch").display()
            );
            if args.no_wait {
                println!("{job_id}");
                return Ok(0);
            }
            // Tasks ran `inferbench job` with a fixed runner name; gather with the same one.
            let mut gopts = opts.clone();
            gopts.runner_name = args.run.runner_name.clone();
            let report = gather(&jobs, &gopts);
            artifacts::write_json_atomic(&opts.out_dir.join(SWEEP_REPORT), &report)?;
            eprint!("{}", report.render());
            Ok(report.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
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
        let dir = std::env::temp_dir().join(format!("ib-options-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(SLURM_OPTIONS_FILE);
        given.write_options_file(&f).unwrap();
        let back = RunArgs::read_options_file(&f).unwrap();
        assert_eq!(back, given.for_tasks());
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(back.out, cwd.join("rel/out"));
        assert_eq!(
            back.model_paths,
            [format!("m={}", cwd.join("weights/m.gguf").display())]
        );
        assert_eq!(back.engine_args, ["--foo"]);
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
        let e = RunArgs::read_options_file(&f).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2:", f.display())), "{e}");
        assert!(e.contains("bogus"), "{e}");
        let mut v = serde_json::json!({"schema_version": 2});
        v["run"] = serde_json::to_value(&given).unwrap();
        std::fs::write(&f, v.to_string()).unwrap();
        let e = RunArgs::read_options_file(&f).unwrap_err().to_string();
        assert!(e.contains("schema_version 2 is newer"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
