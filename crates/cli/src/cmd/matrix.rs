//! `inferbench matrix`: InferenceX master configs → job matrix JSON on stdout, with the flags of
//! InferenceX's `generate_sweep_configs.py` (common flags may come before or after the
//! sub-command).

use std::io::Write;
use std::path::{Path, PathBuf};

use inferbench_recipes::matrix::{
    self, CommonOptions, FullSweepOptions, Selection, TestConfigOptions,
};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

/// `--runner-config` when not given: where InferenceX keeps it, relative to its checkout.
pub const DEFAULT_RUNNER_CONFIG: &str = "configs/runners.yaml";

/// Flags of `inferbench matrix`. A sub-command name ends a multi-value flag, so both InferenceX's
/// order (`full-sweep --config-files A B`) and `--config-files A B full-sweep` work.
#[derive(Debug, clap::Args)]
#[command(subcommand_precedence_over_arg = true)]
pub struct Args {
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
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Every config, with optional filters.
    FullSweep(FullSweepArgs),
    /// Only the given config keys (exact or `*`/`?` globs), fully expanded.
    TestConfig(TestConfigArgs),
}

#[derive(Debug, clap::Args)]
struct FullSweepArgs {
    /// Keep config keys starting with any of these prefixes (matched on the key, not on
    /// `model-prefix`).
    #[arg(long, num_args = 1..)]
    model_prefix: Vec<String>,
    /// Precisions to keep (fp4, fp8, …).
    #[arg(long, num_args = 1..)]
    precision: Vec<String>,
    /// Frameworks to keep (vllm, sglang, trt, …).
    #[arg(long, num_args = 1..)]
    framework: Vec<String>,
    /// Runner labels to keep (must exist in the runner config).
    #[arg(long, num_args = 1..)]
    runner_type: Vec<String>,
    /// Sequence lengths to keep.
    #[arg(long, num_args = 1.., value_parser = ["1k1k", "8k1k"])]
    seq_lens: Vec<String>,
    /// Concurrency multiplier of range expansion (must be > 1).
    #[arg(long, default_value_t = 2)]
    step_size: i64,
    /// Drop concurrencies below this.
    #[arg(long)]
    min_conc: Option<i64>,
    /// Drop concurrencies above this (single-node ranges collapse to it).
    #[arg(long)]
    max_conc: Option<i64>,
    /// Skip single-node entries with a larger tp.
    #[arg(long)]
    max_tp: Option<i64>,
    /// Clamp single-node ep to this.
    #[arg(long)]
    max_ep: Option<i64>,
    /// Only single-node configs (neither flag: both kinds).
    #[arg(long)]
    single_node: bool,
    /// Only multi-node configs (neither flag: both kinds).
    #[arg(long)]
    multi_node: bool,
}

#[derive(Debug, clap::Args)]
struct TestConfigArgs {
    /// Config keys or fnmatch globs; a key or pattern that matches nothing is an error.
    #[arg(long, num_args = 1.., required = true)]
    config_keys: Vec<String>,
    /// Keep only these concurrencies.
    #[arg(long, num_args = 1..)]
    conc: Vec<i64>,
    /// Sequence lengths to keep.
    #[arg(long, num_args = 1.., value_parser = ["1k1k", "8k1k"])]
    seq_lens: Vec<String>,
}

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    anyhow::ensure!(
        !args.config_files.is_empty(),
        "--config-files is required (one or more master config YAML files)"
    );
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
        Sub::FullSweep(f) => Selection::FullSweep(FullSweepOptions {
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
        Sub::TestConfig(t) => Selection::TestConfig(TestConfigOptions {
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
        eprintln!("warning: no matrix rows matched the selection and filters; the output is an empty list");
    }
    let text = matrix::to_json_text(&rows);
    match args.output {
        Some(p) => {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            }
            std::fs::write(&p, text)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
            eprintln!("wrote {} ({} rows)", p.display(), rows.len());
        }
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(e.into());
                }
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, Command, FromArgMatches};

    fn parse(argv: &[&str]) -> super::Args {
        let cmd = super::Args::augment_args(Command::new("matrix"));
        let m = cmd.try_get_matches_from(argv).unwrap();
        super::Args::from_arg_matches(&m).unwrap()
    }

    #[test]
    fn clap_definition_is_valid() {
        super::Args::augment_args(Command::new("matrix")).debug_assert();
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
            super::Sub::FullSweep(f) => {
                assert!(f.multi_node && f.max_conc == Some(256) && f.step_size == 2)
            }
            super::Sub::TestConfig(_) => panic!("wrong subcommand"),
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
            super::Sub::TestConfig(t) => assert_eq!((t.config_keys.len(), t.conc), (2, vec![4, 8])),
            super::Sub::FullSweep(_) => panic!("wrong subcommand"),
        }
        let cmd = super::Args::augment_args(Command::new("matrix"));
        assert!(cmd
            .try_get_matches_from(["matrix", "--no-evals", "--evals-only", "full-sweep"])
            .is_err());
    }
}
