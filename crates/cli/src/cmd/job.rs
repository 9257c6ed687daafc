//! `inferbench job`: run one matrix row (what the Slurm and GitHub executors call on each node):
//! engine up, one point per concurrency, artifacts, engine down. Flags and the run:
//! `inferbench_runner::flags`.

use inferbench_runner::flags::{run_here, JobFlags};
use inferbench_runner::{JobSpec, SweepOptions};

use super::client_args::ClientArgs;
use super::ExitStatus;

/// `job`'s flags: the runner's, and the client features of the row's requests (given here
/// they override an `--options-file`'s).
#[derive(Debug, clap::Args)]
pub struct JobArgs {
    /// The runner's flags.
    #[command(flatten)]
    pub flags: JobFlags,
    /// What every request carries.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Runs the subcommand: 0 ok, 1 failed, 130 interrupted.
pub fn run(args: JobArgs) -> anyhow::Result<ExitStatus> {
    let (job, mut run) = args.flags.resolve()?;
    args.client.apply(&mut run);
    let mut opts = run.sweep_options()?;
    opts.write_report = false;
    run_local(&[job], &opts, run.progress, None)
}

/// Runs `jobs` in this process ([`run_here`]; `adaptive`: `sweep --adaptive`'s tolerance); Ctrl-C / SIGTERM stop the current point and
/// the engine.
pub fn run_local(
    jobs: &[JobSpec],
    opts: &SweepOptions,
    progress: bool,
    adaptive: Option<f64>,
) -> anyhow::Result<ExitStatus> {
    // Where every point writes, before any engine starts or request is sent (issue 39 §8).
    inferbench_loadgen::output::check_dir_writable("--out", &opts.out_dir)?;
    let rt = tokio::runtime::Runtime::new()?;
    let code = rt.block_on(async {
        let cancel =
            super::shutdown_token("interrupted: stopping the current point and the engine");
        run_here(jobs, opts, progress, adaptive, &cancel).await
    });
    Ok(ExitStatus::from_code(code))
}
