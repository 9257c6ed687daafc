//! `inferbench sweep`: run a job matrix locally, submit it to Slurm as a job array, or write a
//! GitHub Actions workflow for it. Flags, their options file and each executor's work:
//! `inferbench_runner::flags`.

use inferbench_runner::flags::{Executor, SweepFlags};

use super::ExitStatus;

/// Runs the subcommand: 0 all ok, 1 some point failed, 130 interrupted.
pub fn run(flags: SweepFlags) -> anyhow::Result<ExitStatus> {
    let jobs = flags.jobs()?;
    let opts = flags.run.sweep_options()?;
    if let Some(tol) = flags.adaptive {
        anyhow::ensure!(
            tol.is_finite() && tol > 0.0,
            "--adaptive={tol}: the tolerance is a fraction > 0 (0.02 = 2 %)"
        );
        anyhow::ensure!(
            matches!(flags.executor, Executor::Local),
            "--adaptive runs on the local executor only (Slurm/GitHub follow-up rounds are not \
             built yet)"
        );
        // AgentX rows below 900 s give only invalid points: nothing to plan on (issue 43).
        if let Some(why) = inferbench_runner::adaptive::cannot_plan(&jobs, &opts.bench) {
            anyhow::bail!(why);
        }
    }
    let code = match flags.executor {
        Executor::Local => {
            return super::job::run_local(&jobs, &opts, flags.run.progress, flags.adaptive)
        }
        Executor::Github => flags.write_github(&jobs)?,
        Executor::Slurm => tokio::runtime::Runtime::new()?.block_on(flags.slurm(&jobs, &opts))?,
    };
    Ok(ExitStatus::from_code(code))
}
