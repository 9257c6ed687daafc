//! `inferbench job`: run one matrix row (what the Slurm and GitHub executors call on each node):
//! engine up, one point per concurrency, artifacts, engine down.

use std::path::PathBuf;

use inferbench_runner::bench::LoadgenPoint;
use inferbench_runner::sweep::run_jobs;
use inferbench_runner::{load_row, JobSpec, SweepOptions};

use super::sweep::RunArgs;

/// Flags of `inferbench job`.
#[derive(Debug, clap::Args)]
pub struct Args {
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
    #[command(flatten)]
    pub run: RunArgs,
}

/// Runs the subcommand; returns the process exit code (0 ok, 1 failed, 130 interrupted).
pub fn run(args: Args) -> anyhow::Result<i32> {
    let job = match (&args.row, &args.matrix, args.index) {
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
    let run = match &args.options_file {
        Some(f) => {
            let mut run = RunArgs::read_options_file(f)?;
            if args.run.runner_name.is_some() {
                run.runner_name = args.run.runner_name.clone();
            }
            run
        }
        None => args.run,
    };
    let mut opts = run.sweep_options()?;
    opts.write_report = false;
    run_local(&[job], &opts, run.progress)
}

/// Runs `jobs` in this process with the load generator; Ctrl-C / SIGTERM stop the current point
/// and the engine, and the remaining points are marked interrupted. Prints a summary to stderr.
pub fn run_local(jobs: &[JobSpec], opts: &SweepOptions, progress: bool) -> anyhow::Result<i32> {
    if !opts.evals.enabled {
        let n = jobs
            .iter()
            .filter(|j| inferbench_runner::evals::eval_only(j))
            .count();
        if n > 0 {
            eprintln!("--no-evals: {n} eval-only row(s) not run");
        }
    }
    let rt = tokio::runtime::Runtime::new()?;
    let report = rt.block_on(async {
        let cancel =
            super::shutdown_token("interrupted: stopping the current point and the engine");
        run_jobs(
            jobs,
            opts,
            &LoadgenPoint {
                progress,
                ..LoadgenPoint::default()
            },
            &cancel,
        )
        .await
    });
    eprint!("{}", report.render());
    eprintln!(
        "artifacts in {} ({})",
        opts.out_dir.display(),
        inferbench_runner::sweep::SWEEP_REPORT
    );
    Ok(report.exit_code())
}
