//! The `matrix`, `changelog` and `models` subcommands: their flags, written once with their
//! `--help` text ([`MatrixFlags`], [`ChangelogFlags`], [`ModelsFlags`]), and each command's
//! `run`: read the configs, call `inferbench_recipes`, write the JSON or table. `models
//! policy` wraps these tools in [`super::models_policy`].

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use inferbench_recipes::catalogue::{self, CiPriority, PriorityContext};
use inferbench_recipes::changelog::{self, BaseConfigs, ProcessOptions};
use inferbench_recipes::matrix::{
    self, CommonOptions, FullSweepOptions, Selection, TestConfigOptions,
};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

use super::ExitStatus;

// ----- matrix

/// `--runner-config` when not given: where InferenceX keeps it, relative to its checkout.
pub const DEFAULT_RUNNER_CONFIG: &str = "configs/runners.yaml";

/// Flags of `inferbench matrix`. A sub-command name ends a multi-value flag, so both InferenceX's
/// order (`full-sweep --config-files A B`) and `--config-files A B full-sweep` work.
#[derive(Debug, clap::Args)]
#[command(subcommand_precedence_over_arg = true)]
pub struct MatrixFlags {
    /// One or more master config files (YAML), merged in order; keys must be unique.
    #[arg(long, num_args = 1.., global = true)]
    pub config_files: Vec<PathBuf>,
    /// Runner labels and hardware facts (YAML).
    #[arg(long, default_value = DEFAULT_RUNNER_CONFIG, global = true)]
    pub runner_config: PathBuf,
    /// Throughput rows only: skip eval marking.
    #[arg(long, global = true, conflicts_with_all = ["evals_only", "all_evals"])]
    pub no_evals: bool,
    /// Keep only the eval rows (marked `eval-only: true`).
    #[arg(long, global = true)]
    pub evals_only: bool,
    /// Every 8k1k (and agentic) row becomes an eval; alone it also emits eval-only rows.
    #[arg(long, global = true)]
    pub all_evals: bool,
    /// Expand each row to the concrete runner names containing this substring.
    #[arg(long, global = true)]
    pub runner_node_filter: Option<String>,
    /// Scenario types to include (default: all).
    #[arg(long, num_args = 1.., global = true, value_parser = ["fixed-seq-len", "agentic-coding"])]
    pub scenario_type: Vec<String>,
    /// Write the JSON here instead of stdout.
    #[arg(long, short = 'o', global = true)]
    pub output: Option<PathBuf>,
    /// Fail when a config's runner label is missing from the runner config's labels
    /// (InferenceX does not check this; off by default to keep its output).
    #[arg(long, global = true)]
    pub check_runners: bool,
    #[command(subcommand)]
    command: MatrixSub,
}

/// The selection of `inferbench matrix`.
#[derive(Debug, clap::Subcommand)]
pub enum MatrixSub {
    /// Every config, with optional filters.
    FullSweep(FullSweepArgs),
    /// Only the given config keys (exact or `*`/`?` globs), fully expanded.
    TestConfig(TestConfigArgs),
}

/// Flags of `inferbench matrix full-sweep`.
#[derive(Debug, clap::Args)]
pub struct FullSweepArgs {
    /// Keep config keys starting with any of these prefixes (matched on the key, not on
    /// `model-prefix`).
    #[arg(long, num_args = 1..)]
    pub model_prefix: Vec<String>,
    /// Precisions to keep (fp4, fp8, …).
    #[arg(long, num_args = 1..)]
    pub precision: Vec<String>,
    /// Frameworks to keep (vllm, sglang, trt, …).
    #[arg(long, num_args = 1..)]
    pub framework: Vec<String>,
    /// Runner labels to keep (must exist in the runner config).
    #[arg(long, num_args = 1..)]
    pub runner_type: Vec<String>,
    /// Sequence lengths to keep.
    #[arg(long, num_args = 1.., value_parser = ["1k1k", "8k1k"])]
    pub seq_lens: Vec<String>,
    /// Concurrency multiplier of range expansion (must be > 1).
    #[arg(long, default_value_t = 2)]
    pub step_size: i64,
    /// Drop concurrencies below this.
    #[arg(long)]
    pub min_conc: Option<i64>,
    /// Drop concurrencies above this (single-node ranges collapse to it).
    #[arg(long)]
    pub max_conc: Option<i64>,
    /// Skip single-node entries with a larger tp.
    #[arg(long)]
    pub max_tp: Option<i64>,
    /// Clamp single-node ep to this.
    #[arg(long)]
    pub max_ep: Option<i64>,
    /// Only single-node configs (neither flag: both kinds).
    #[arg(long)]
    pub single_node: bool,
    /// Only multi-node configs (neither flag: both kinds).
    #[arg(long)]
    pub multi_node: bool,
}

/// Flags of `inferbench matrix test-config`.
#[derive(Debug, clap::Args)]
pub struct TestConfigArgs {
    /// Config keys or fnmatch globs; a key or pattern that matches nothing is an error.
    #[arg(long, num_args = 1.., required = true)]
    pub config_keys: Vec<String>,
    /// Keep only these concurrencies.
    #[arg(long, num_args = 1..)]
    pub conc: Vec<i64>,
    /// Sequence lengths to keep.
    #[arg(long, num_args = 1.., value_parser = ["1k1k", "8k1k"])]
    pub seq_lens: Vec<String>,
}

impl MatrixFlags {
    /// Runs `inferbench matrix`: the rows as JSON on stdout or in `--output`.
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run_matrix(self)
    }
}

fn run_matrix(args: MatrixFlags) -> anyhow::Result<ExitStatus> {
    anyhow::ensure!(
        !args.config_files.is_empty(),
        "--config-files is required (one or more master config YAML files)"
    );
    // `--output` never over a file it reads (issue 39's leftovers, 1).
    if let Some(out) = &args.output {
        use inferbench_loadgen::samefile::{check_distinct, NamedPath};
        let mut paths: Vec<NamedPath> = (args.config_files.iter())
            .map(|p| NamedPath::input("--config-files", p))
            .collect();
        paths.push(NamedPath::input("--runner-config", &args.runner_config));
        paths.push(NamedPath::output("--output", out));
        check_distinct(&paths)?;
        // Writable (a dangling link into a missing folder included) before any work.
        inferbench_loadgen::output::check_file_writable("--output", out)?;
    }
    let configs = MasterConfigs::load(&args.config_files)?;
    anyhow::ensure!(
        args.runner_config.is_file() || args.runner_config != Path::new(DEFAULT_RUNNER_CONFIG),
        "no runner config at the default {DEFAULT_RUNNER_CONFIG} (InferenceX's layout, relative to \
         the current directory): pass --runner-config FILE (e.g. examples/sim-runners.yaml)"
    );
    let runners = RunnerConfig::load(&args.runner_config)?;
    if args.check_runners {
        let errs = inferbench_recipes::catalogue::unknown_runner_labels(&configs, &runners);
        if !errs.is_empty() {
            return Err(inferbench_recipes::Error::from_many(errs).into());
        }
    }
    let selection = match args.command {
        MatrixSub::FullSweep(f) => Selection::FullSweep(FullSweepOptions {
            model_prefix: f.model_prefix,
            precision: f.precision,
            framework: f.framework,
            runner_type: f.runner_type,
            seq_lens: f.seq_lens,
            step_size: f.step_size,
            min_conc: f.min_conc,
            max_conc: f.max_conc,
            max_tp: f.max_tp,
            max_ep: f.max_ep,
            single_node: f.single_node,
            multi_node: f.multi_node,
        }),
        MatrixSub::TestConfig(t) => Selection::TestConfig(TestConfigOptions {
            config_keys: t.config_keys,
            conc: t.conc,
            seq_lens: t.seq_lens,
        }),
    };
    let common = CommonOptions {
        no_evals: args.no_evals,
        evals_only: args.evals_only,
        all_evals: args.all_evals,
        runner_node_filter: args.runner_node_filter,
        scenario_types: (!args.scenario_type.is_empty()).then_some(args.scenario_type),
    };
    let rows = matrix::generate(&configs, &runners, &selection, &common)?;
    if rows.is_empty() {
        // The reference prints `[]` and exits 0 here too; keep that output, but say so.
        errln!("warning: no matrix rows matched the selection and filters; the output is an empty list");
    }
    let text = matrix::to_json_text(&rows);
    match args.output {
        Some(p) => {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            }
            inferbench_loadgen::output::write_file(&p, text.as_bytes())
                .map_err(|e| super::write_failed("--output", e))?;
            errln!(
                "wrote {} ({})",
                p.display(),
                inferbench_core::count(rows.len(), "row")
            );
        }
        None => emit(&text)?,
    }
    Ok(ExitStatus::Ok)
}

// ----- changelog

/// Flags of `inferbench changelog`.
#[derive(Debug, clap::Args)]
pub struct ChangelogFlags {
    /// Base changelog file (with --head).
    #[arg(long, requires = "head", conflicts_with = "repo")]
    pub base: Option<PathBuf>,
    /// Head changelog file (with --base).
    #[arg(long)]
    pub head: Option<PathBuf>,
    /// Git repository to read both revisions from (with --base-ref and --head-ref; --check needs
    /// only --head-ref).
    #[arg(long, requires = "head_ref")]
    pub repo: Option<PathBuf>,
    /// Base git ref; with --base/--head files it is only recorded in the metadata.
    #[arg(long)]
    pub base_ref: Option<String>,
    /// Head git ref; with --base/--head files it is only recorded in the metadata.
    #[arg(long)]
    pub head_ref: Option<String>,
    /// Changelog path inside the repository.
    #[arg(long, default_value = "perf-changelog.yaml")]
    pub changelog_file: String,
    /// Master configs at head (default: the repository's configs/amd-master.yaml and
    /// configs/nvidia-master.yaml, in that order, like InferenceX's MASTER_CONFIGS).
    #[arg(long, num_args = 1..)]
    pub config_files: Vec<PathBuf>,
    /// Master configs at base, for append-only entries (with --repo they are read from the
    /// base ref).
    #[arg(long, num_args = 1..)]
    pub base_config_files: Vec<PathBuf>,
    /// Runner labels and hardware facts (default: the repository's `configs/runners.yaml`,
    /// i.e. `./configs/runners.yaml` without --repo, InferenceX's layout).
    #[arg(long)]
    pub runner_config: Option<PathBuf>,
    /// Keep only the lowest concurrency of each throughput curve (PR label `sweep-enabled`).
    #[arg(long)]
    pub trim_conc: bool,
    /// Expand every entry's eval selection without changing throughput.
    #[arg(long)]
    pub all_evals: bool,
    /// Suppress throughput for every entry.
    #[arg(long)]
    pub evals_only: bool,
    /// Only validate the head changelog file (validate_perf_changelog.py rules) and exit; needs
    /// only --head (or --repo with --head-ref); with a base too, existing entries must also be
    /// unchanged.
    #[arg(long)]
    pub check: bool,
    /// Write the JSON here instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Which line diff selects the additions: `git` (git's own, options pinned), `builtin`
    /// (this program's, equal to git's), or `auto` (git when installed, else builtin).
    #[arg(long, value_enum, default_value_t = DiffEngine::Auto)]
    pub diff: DiffEngine,
}

/// The line diff used for the additions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffEngine {
    /// git when it can be started, else builtin.
    Auto,
    /// `git -c diff.algorithm=myers -c diff.indentHeuristic=true diff --no-ext-diff --no-color
    /// --unified=3` (`--no-index` for two files).
    Git,
    /// The built-in line diff (Myers, three lines of context), for machines without git.
    Builtin,
}

/// The additions from base to head: git's diff (of the two files, or of the two refs), or the
/// built-in one where git is absent (`auto`) or asked for.
fn additions(
    args: &ChangelogFlags,
    base_text: &str,
    head_text: &str,
    base_name: &str,
) -> anyhow::Result<changelog::Added> {
    use inferbench_recipes::linediff::{self, GitError};
    if args.diff != DiffEngine::Builtin {
        let git = match (&args.repo, &args.base, &args.head) {
            (Some(repo), _, _) => linediff::git_diff_refs(
                repo,
                args.base_ref.as_deref().unwrap_or_default(),
                args.head_ref.as_deref().unwrap_or_default(),
                &args.changelog_file,
            ),
            (None, Some(_), Some(_)) => linediff::git_diff_texts(base_text, head_text),
            _ => bail!("no base and head to diff"),
        };
        match git {
            Ok(text) => return Ok(changelog::added_from_diff(&text, head_text, base_name)?),
            Err(GitError::Missing(e)) if args.diff == DiffEngine::Auto => {
                errln!("note: git not available ({e}); using the built-in diff");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(changelog::added_lines(base_text, head_text, base_name)?)
}

/// [`MasterConfigs::load`], with a missing file named as what it is (trial 12: `models
/// support` outside an InferenceX checkout said only "cannot read configs/amd-master.yaml").
fn load_masters(files: &[PathBuf]) -> anyhow::Result<MasterConfigs> {
    if let Some(missing) = files.iter().find(|p| is_missing_default(p)) {
        bail!("{}", missing_master(missing));
    }
    Ok(MasterConfigs::load(files)?)
}

/// Whether `p` is one of InferenceX's default master configs (`configs/*-master.yaml`, what the
/// flags default to) and absent: then the user gave no `--config-files` and is told so. A path
/// the user named keeps the plain "cannot read PATH: …".
fn is_missing_default(p: &std::path::Path) -> bool {
    !p.exists() && MASTER_CONFIGS.iter().any(|d| p.ends_with(d))
}

/// "PATH not found: …" for a master config that is not there, saying what to pass instead.
fn missing_master(path: &std::path::Path) -> String {
    format!(
        "{} not found: this reads InferenceX's master configs (configs/*-master.yaml); run it in \
         an InferenceX checkout or pass --config-files FILE… (a master config of your own, e.g. \
         examples/sim.yaml)",
        path.display()
    )
}

/// InferenceX's master configs, relative to its checkout (its MASTER_CONFIGS).
const MASTER_CONFIGS: [&str; 2] = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"];

/// `git show REV:PATH` in `repo`.
fn git_show(repo: &Path, rev: &str, path: &str) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .arg("show")
        .arg(format!("{rev}:{path}"))
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!(
            "git show {rev}:{path} in {} failed: {}",
            repo.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("{rev}:{path} is not UTF-8"))
}

/// A file's text; the error names it.
fn read_file(p: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))
}

/// `--check`: validates the head file alone, or against the base when one is given.
fn check(args: &ChangelogFlags) -> anyhow::Result<ExitStatus> {
    let (head_name, head_text, base_text) = match (&args.repo, &args.head) {
        (Some(repo), _) => {
            let h = args.head_ref.clone().unwrap_or_default();
            let base = match &args.base_ref {
                Some(b) => Some(git_show(repo, b, &args.changelog_file)?),
                None => None,
            };
            (
                format!("{h}:{}", args.changelog_file),
                git_show(repo, &h, &args.changelog_file)?,
                base,
            )
        }
        (None, Some(h)) => (
            h.display().to_string(),
            read_file(h)?,
            args.base.as_deref().map(read_file).transpose()?,
        ),
        (None, None) => bail!("--check needs --head FILE, or --repo DIR --head-ref REF"),
    };
    let entries = changelog::validate_file(&head_text, &head_name, base_text.as_deref())?;
    errln!("{head_name}: {} entries, valid", entries.len());
    Ok(ExitStatus::Ok)
}

impl ChangelogFlags {
    /// Runs `inferbench changelog`: the bucketed jobs as JSON on stdout or in `--output`, or
    /// with `--check` the head file's validation.
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run_changelog(self)
    }
}

fn run_changelog(args: ChangelogFlags) -> anyhow::Result<ExitStatus> {
    // `--output` never over a file it reads (issue 39's leftovers, 1).
    if let Some(out) = &args.output {
        use inferbench_loadgen::samefile::{check_distinct, NamedPath};
        let mut paths: Vec<NamedPath> = Vec::new();
        paths.extend(args.base.iter().map(|p| NamedPath::input("--base", p)));
        paths.extend(args.head.iter().map(|p| NamedPath::input("--head", p)));
        paths.extend((args.config_files.iter()).map(|p| NamedPath::input("--config-files", p)));
        paths.extend(
            (args.base_config_files.iter()).map(|p| NamedPath::input("--base-config-files", p)),
        );
        paths.extend((args.runner_config.iter()).map(|p| NamedPath::input("--runner-config", p)));
        if let Some(repo) = &args.repo {
            paths.push(NamedPath::input(
                "--repo's --changelog-file",
                repo.join(&args.changelog_file),
            ));
        }
        paths.push(NamedPath::output("--output", out));
        check_distinct(&paths)?;
        // Writable (a dangling link into a missing folder included) before any work.
        inferbench_loadgen::output::check_file_writable("--output", out)?;
    }
    if args.check {
        return check(&args);
    }
    let root = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let (base_name, head_name, base_text, head_text) = match (&args.repo, &args.base, &args.head) {
        (Some(repo), _, _) => {
            let Some(b) = args.base_ref.clone() else {
                bail!("--repo needs --base-ref (only --check works without a base)");
            };
            let h = args.head_ref.clone().unwrap_or_default();
            let bt = git_show(repo, &b, &args.changelog_file)?;
            let ht = git_show(repo, &h, &args.changelog_file)?;
            (
                format!("{b}:{}", args.changelog_file),
                format!("{h}:{}", args.changelog_file),
                bt,
                ht,
            )
        }
        (None, Some(b), Some(h)) => (
            b.display().to_string(),
            h.display().to_string(),
            read_file(b)?,
            read_file(h)?,
        ),
        _ => bail!(
            "give either --base FILE --head FILE, or --repo DIR --base-ref REF --head-ref REF (--check needs only the head)"
        ),
    };
    let added = additions(&args, &base_text, &head_text, &base_name)?;
    let entries = changelog::parse_entries(&added, &head_name)?;
    let config_files: Vec<PathBuf> = if args.config_files.is_empty() {
        MASTER_CONFIGS.iter().map(|p| root.join(p)).collect()
    } else {
        args.config_files.clone()
    };
    let configs = load_masters(&config_files)?;
    let runner_config = match &args.runner_config {
        Some(p) => p.clone(),
        None => {
            let p = root.join(DEFAULT_RUNNER_CONFIG);
            // Trial 22: "cannot read ./configs/runners.yaml" did not say it was a default.
            anyhow::ensure!(
                p.is_file(),
                "no runner config at the default {} (InferenceX's layout: {DEFAULT_RUNNER_CONFIG} \
                 in the repository, --repo or the current directory): pass --runner-config FILE \
                 (e.g. examples/sim-runners.yaml)",
                p.display()
            );
            p
        }
    };
    let runners = RunnerConfig::load(&runner_config)?;
    let needs_base = entries.iter().any(|e| e.append_only);
    let base_configs = if !needs_base {
        None
    } else if !args.base_config_files.is_empty() {
        Some(MasterConfigs::load(&args.base_config_files)?)
    } else if let (Some(repo), Some(b)) = (&args.repo, &args.base_ref) {
        let mut sources = Vec::new();
        for p in MASTER_CONFIGS {
            sources.push((format!("{b}:{p}"), git_show(repo, b, p)?));
        }
        let refs: Vec<(&str, &str)> = sources
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        Some(MasterConfigs::from_sources(&refs)?)
    } else {
        bail!("append-only entries need the base master configs: give --base-config-files or use --repo")
    };
    let opts = ProcessOptions {
        trim_conc: args.trim_conc,
        all_evals: args.all_evals,
        evals_only: args.evals_only,
        base_ref: args.base_ref.clone().unwrap_or(base_name),
        head_ref: args.head_ref.clone().unwrap_or(head_name),
    };
    let value = changelog::process(
        &entries,
        &configs,
        &runners,
        &opts,
        base_configs.as_ref().map(|c| BaseConfigs { configs: c }),
    )?;
    let text = changelog::to_json_text(&value);
    match &args.output {
        Some(p) => inferbench_loadgen::output::write_file(p, text.as_bytes())
            .map_err(|e| super::write_failed("--output", e))?,
        None => emit(&text)?,
    }
    Ok(ExitStatus::Ok)
}

// ----- models

/// Flags of `inferbench models`.
#[derive(Debug, clap::Args)]
pub struct ModelsFlags {
    #[command(subcommand)]
    command: ModelsSub,
}

/// The tools of `inferbench models`.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsSub {
    /// Support matrix: per model prefix and scenario, active vs deprecated, with precisions,
    /// frameworks and runner labels.
    Support {
        /// Active master configs.
        #[arg(long, num_args = 1.., default_values = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"])]
        config_files: Vec<PathBuf>,
        /// Directory of deprecated master configs (every *.yaml / *.yml in it); must exist when
        /// given. Default: `deprecated/` beside the first --config-files file (InferenceX's
        /// layout), else configs/deprecated, when one exists (a note on stderr otherwise).
        #[arg(long)]
        deprecated_dir: Option<PathBuf>,
        /// Output as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// One row per model prefix, as MODELS.md's support matrix: active scenarios and
        /// deprecated scenarios (a scenario also active shows the precisions only archived
        /// configs run, e.g. `8k1k (bf16)`).
        #[arg(long)]
        by_prefix: bool,
    },
    /// KV-offload DRAM policy check of every `kv-offloading: dram` agentic entry, and runner
    /// labels missing from the runner config. Exit code 1 when anything is an error.
    DramCheck {
        /// Active master configs.
        #[arg(long, num_args = 1.., default_values = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"])]
        config_files: Vec<PathBuf>,
        /// Runner labels and hardware facts.
        #[arg(long, default_value = "configs/runners.yaml")]
        runner_config: PathBuf,
        /// Output as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Add `priority`, `queue-token` (and `skip-queue-pr`) to every job of a matrix JSON, as
    /// InferenceX's `utils/ci_priority.py` does with the same flags; writes the result to stdout.
    Priority {
        /// Matrix JSON file (a list, or the bucketed object `inferbench changelog` prints);
        /// default stdin.
        #[arg(long, visible_alias = "matrix")]
        input: Option<PathBuf>,
        /// ci-priority.yaml.
        #[arg(
            long,
            visible_alias = "ci-priority",
            default_value = "configs/ci-priority.yaml"
        )]
        policy: PathBuf,
        /// GitHub event name (`push`, `pull_request`, …).
        #[arg(long, visible_alias = "event", default_value = "")]
        event_name: String,
        /// PR labels as a JSON array of strings.
        #[arg(long, default_value = "[]")]
        labels_json: String,
        /// More PR labels (with those of --labels-json).
        #[arg(long, num_args = 0..)]
        labels: Vec<String>,
        /// Queue-token namespace (e.g. the repository and run id).
        #[arg(long, visible_alias = "namespace", default_value = "local")]
        queue_namespace: String,
        /// PR number; with the skip-queue label every job gets `skip-queue-pr: <number>`.
        #[arg(long)]
        pr_number: Option<i64>,
        /// Only these classifier facts count (a JSON array of strings; empty or null = all).
        #[arg(long, default_value = "")]
        criteria_json: String,
    },
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    // Its errors decide the exit status at the end ([`crate::stdout`]).
    out!("{text}");
    Ok(())
}

/// A `--labels-json`/`--criteria-json` value: empty or `null` = None, else a JSON array of
/// strings.
fn json_strings(raw: &str, flag: &str) -> anyhow::Result<Option<Vec<String>>> {
    if raw.is_empty() {
        return Ok(None);
    }
    let v: serde_json::Value =
        serde_json::from_str(raw).map_err(|e| anyhow::anyhow!("{flag}: not JSON ({e}): {raw}"))?;
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Array(a) => a
            .into_iter()
            .map(|x| match x {
                serde_json::Value::String(s) => Ok(s),
                _ => Err(anyhow::anyhow!("{flag} must be a JSON array of strings")),
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .map(Some),
        _ => anyhow::bail!("{flag} must be a JSON array of strings"),
    }
}

/// The archived master configs for `models support` / `models policy`: every `*.yaml` / `*.yml`
/// in `--deprecated-dir`, else in `deprecated/` beside the first config file (InferenceX's
/// layout), else in `configs/deprecated`, sorted; with what was not found when none of the
/// defaults exists (then the list is empty), e.g. `configs/deprecated not found`.
///
/// # Errors
/// A given `--deprecated-dir` that cannot be read.
pub fn deprecated_files(
    config_files: &[PathBuf],
    deprecated_dir: Option<PathBuf>,
) -> anyhow::Result<(Vec<PathBuf>, Option<String>)> {
    const DEFAULT_DEPRECATED: &str = "configs/deprecated";
    // Beside the masters first (trial 20: `--config-files ../shared/…/configs/*.yaml`
    // looked for ./configs/deprecated only).
    let beside = (config_files.first())
        .and_then(|f| f.parent())
        .map(|d| d.join("deprecated"));
    let dir = deprecated_dir.or_else(|| {
        (beside.iter().cloned())
            .chain([PathBuf::from(DEFAULT_DEPRECATED)])
            .find(|d| d.is_dir())
    });
    let default_found = dir.is_some();
    let mut deprecated: Vec<PathBuf> = Vec::new();
    if let Some(dir) = dir {
        let rd = std::fs::read_dir(&dir).with_context(|| {
            format!("--deprecated-dir: cannot read directory {}", dir.display())
        })?;
        for e in rd {
            let p = e
                .with_context(|| format!("--deprecated-dir: cannot list {}", dir.display()))?
                .path();
            if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                deprecated.push(p);
            }
        }
    }
    deprecated.sort();
    let mut note = None;
    if !default_found {
        let mut looked: Vec<String> = (beside.iter()).map(|d| d.display().to_string()).collect();
        if !looked.iter().any(|d| d == DEFAULT_DEPRECATED) {
            looked.push(DEFAULT_DEPRECATED.into());
        }
        let what = match looked.as_slice() {
            [one] => format!("{one} not found"),
            _ => format!("neither {} found", looked.join(" nor ")),
        };
        note = Some(what);
    }
    Ok((deprecated, note))
}

/// [`MasterConfigs::load`] for the `models` tools: a missing default master config (the
/// user gave no `--config-files` outside an InferenceX checkout) is named as what it is.
///
/// # Errors
/// As [`MasterConfigs::load`], with that message for a missing default file.
pub fn load_master_configs(files: &[PathBuf]) -> anyhow::Result<MasterConfigs> {
    load_masters(files)
}

impl ModelsSub {
    /// Runs one `inferbench models` tool (`models policy` is [`super::models_policy`]'s): the
    /// tool's table or JSON on stdout; `dram-check` fails (1) on an error finding.
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run_models(ModelsFlags { command: self })
    }
}

fn run_models(args: ModelsFlags) -> anyhow::Result<ExitStatus> {
    match args.command {
        ModelsSub::Support {
            config_files,
            deprecated_dir,
            json,
            by_prefix,
        } => {
            let (deprecated, note) = deprecated_files(&config_files, deprecated_dir)?;
            if let Some(missing) = config_files.iter().find(|p| is_missing_default(p)) {
                bail!("{}", missing_master(missing));
            }
            let rows = catalogue::support_matrix(&config_files, &deprecated)?;
            match (json, by_prefix) {
                (true, false) => emit(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?,
                (true, true) => emit(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&catalogue::support_by_prefix(&rows))?
                ))?,
                (false, false) => emit(&catalogue::support_table(&rows))?,
                (false, true) => emit(&catalogue::prefix_table(&catalogue::support_by_prefix(
                    &rows,
                )))?,
            }
            if let Some(what) = note {
                errln!("note: {what}; listed active configs only (give --deprecated-dir)");
            }
            Ok(ExitStatus::Ok)
        }
        ModelsSub::DramCheck {
            config_files,
            runner_config,
            json,
        } => {
            let configs = load_masters(&config_files)?;
            let runners = RunnerConfig::load(&runner_config)?;
            let findings = catalogue::dram_policy_check(&configs, &runners);
            let errors = findings.iter().filter(|f| f.verdict == "error").count();
            if json {
                emit(&format!("{}\n", serde_json::to_string_pretty(&findings)?))?;
            } else {
                emit(&catalogue::dram_table(&findings))?;
                let count = |v: &str| findings.iter().filter(|f| f.verdict == v).count();
                errln!(
                    "{} findings: {} ok, {} capped, {errors} errors",
                    findings.len(),
                    count("ok"),
                    count("capped")
                );
            }
            Ok(ExitStatus::failed_if(errors > 0))
        }
        ModelsSub::Priority {
            input,
            policy,
            event_name,
            labels_json,
            labels,
            queue_namespace,
            pr_number,
            criteria_json,
        } => {
            let cfg = CiPriority::load(&policy)?;
            let mut all_labels = json_strings(&labels_json, "--labels-json")?.unwrap_or_default();
            all_labels.extend(labels);
            let ctx = PriorityContext {
                event_name,
                labels: all_labels,
                queue_namespace,
                pr_number,
                criteria: json_strings(&criteria_json, "--criteria-json")?
                    .map(|v| v.into_iter().collect()),
            };
            let (name, text) = match &input {
                Some(p) => (
                    p.display().to_string(),
                    std::fs::read_to_string(p)
                        .with_context(|| format!("cannot read {}", p.display()))?,
                ),
                None => {
                    let mut t = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                        .context("cannot read stdin")?;
                    ("<stdin>".to_string(), t)
                }
            };
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                anyhow::anyhow!("{name}:{}:{}: not JSON: {e}", e.line(), e.column())
            })?;
            let out = catalogue::annotate_jobs(&v, &cfg, &ctx)?;
            emit(&catalogue::annotated_text(&out))?;
            Ok(ExitStatus::Ok)
        }
    }
}

#[cfg(test)]
mod matrix_tests {
    use clap::{Args as _, Command, FromArgMatches};

    fn parse(argv: &[&str]) -> super::MatrixFlags {
        let cmd = super::MatrixFlags::augment_args(Command::new("matrix"));
        let m = cmd.try_get_matches_from(argv).unwrap();
        super::MatrixFlags::from_arg_matches(&m).unwrap()
    }

    #[test]
    fn clap_definition_is_valid() {
        super::MatrixFlags::augment_args(Command::new("matrix")).debug_assert();
    }

    #[test]
    fn common_flags_go_before_or_after_the_subcommand() {
        // Before the sub-command the file list must be ended by another flag (DESIGN.md §1).
        let a = parse(&[
            "matrix",
            "--config-files",
            "a.yaml",
            "b.yaml",
            "--runner-config",
            "r.yaml",
            "full-sweep",
            "--multi-node",
            "--max-conc",
            "256",
            "--all-evals",
        ]);
        assert_eq!(a.config_files.len(), 2);
        assert!(a.all_evals);
        match a.command {
            super::MatrixSub::FullSweep(f) => {
                assert!(f.multi_node && f.max_conc == Some(256) && f.step_size == 2)
            }
            super::MatrixSub::TestConfig(_) => panic!("wrong subcommand"),
        }
        let a = parse(&[
            "matrix",
            "test-config",
            "--config-keys",
            "dsr1-*",
            "x",
            "--config-files",
            "a.yaml",
            "--scenario-type",
            "agentic-coding",
            "--conc",
            "4",
            "8",
        ]);
        assert_eq!(a.scenario_type, vec!["agentic-coding".to_string()]);
        match a.command {
            super::MatrixSub::TestConfig(t) => {
                assert_eq!((t.config_keys.len(), t.conc), (2, vec![4, 8]))
            }
            super::MatrixSub::FullSweep(_) => panic!("wrong subcommand"),
        }
        let cmd = super::MatrixFlags::augment_args(Command::new("matrix"));
        assert!(cmd
            .try_get_matches_from(["matrix", "--no-evals", "--evals-only", "full-sweep"])
            .is_err());
    }
}

#[cfg(test)]
mod changelog_tests {
    use clap::{Args as _, Command};

    #[test]
    fn clap_definition_is_valid() {
        let cmd = super::ChangelogFlags::augment_args(Command::new("changelog"));
        cmd.clone().debug_assert();
        assert!(cmd
            .clone()
            .try_get_matches_from(["changelog", "--base", "a", "--head", "b", "--trim-conc"])
            .is_ok());
        assert!(cmd
            .clone()
            .try_get_matches_from(["changelog", "--base", "a"])
            .is_err());
        assert!(cmd
            .clone()
            .try_get_matches_from(["changelog", "--repo", ".", "--base-ref", "x"])
            .is_err());
        assert!(cmd
            .try_get_matches_from(["changelog", "--head", "b", "--check"])
            .is_ok());
    }
}

#[cfg(test)]
mod models_tests {
    use clap::{Args as _, Command};

    #[test]
    fn clap_definition_is_valid() {
        let cmd = super::ModelsFlags::augment_args(Command::new("models"));
        cmd.clone().debug_assert();
        assert!(cmd
            .clone()
            .try_get_matches_from(["models", "support", "--json"])
            .is_ok());
        assert!(cmd
            .try_get_matches_from([
                "models", "priority", "--matrix", "m.json", "--event", "push", "--labels", "a", "b"
            ])
            .is_ok());
    }
}
