//! `inferbench sweep`: run a job matrix locally, submit it to Slurm as a job array, or write a
//! GitHub Actions workflow for it. Flags, their options file and each executor's work:
//! `inferbench_runner::flags`.

use inferbench_runner::flags::{Executor, SweepFlags};

use super::client_args::ClientArgs;
use super::ExitStatus;

/// `sweep`'s flags: the runner's, the client features of every point's requests, and the
/// CLI's own.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The runner's flags.
    #[command(flatten)]
    pub flags: SweepFlags,
    /// What every request carries.
    #[command(flatten)]
    pub client: ClientArgs,
    /// With --adaptive on Slurm/GitHub: points per curve in each follow-up round (its most
    /// valuable ones; a round is one submission, so more per round means fewer rounds).
    /// The local executor plans one per curve per round.
    #[arg(long, value_name = "K", default_value_t = inferbench_runner::adaptive::DEFAULT_ROUND_POINTS)]
    pub adaptive_round_points: usize,
}

/// Runs the subcommand: 0 all ok, 1 some point failed, 130 interrupted.
pub fn run(args: SweepArgs) -> anyhow::Result<ExitStatus> {
    let SweepArgs {
        mut flags,
        client,
        adaptive_round_points,
    } = args;
    client.apply(&mut flags.run);
    anyhow::ensure!(
        adaptive_round_points >= 1,
        "--adaptive-round-points must be at least 1"
    );
    let mut jobs = flags.jobs()?;
    let opts = flags.run.sweep_options()?;
    if let Some(tol) = flags.adaptive {
        anyhow::ensure!(
            tol.is_finite() && tol > 0.0,
            "--adaptive={tol}: the tolerance is a fraction > 0 (0.02 = 2 %)"
        );
        // AgentX rows below 900 s give only invalid points: nothing to plan on (issue 43).
        if let Some(why) = inferbench_runner::adaptive::cannot_plan(&jobs, &opts.bench) {
            anyhow::bail!(why);
        }
        // Slurm/GitHub: one round per call, planned from the points earlier rounds left under
        // --out, written as a new matrix that the executor then runs (issue 43).
        if !matches!(flags.executor, Executor::Local) && !flags.gather {
            // Each round's points may stop early too: their tasks read it from run-options.json.
            flags.run.adaptive_early_stop = Some(tol);
            match inferbench_runner::adaptive::next_round_matrix(
                &jobs,
                &opts.out_dir,
                tol,
                adaptive_round_points,
            )? {
                None => {
                    eprintln!(
                        "--adaptive: the frontier is known to within {tol} from the points under \
                         {}: no next round",
                        opts.out_dir.display()
                    );
                    return Ok(ExitStatus::Ok);
                }
                Some((path, round)) => {
                    eprintln!(
                        "--adaptive: next round, {} in {} (run `sweep --adaptive` again with the \
                         same --matrix and --out once its points are under --out)",
                        inferbench_core::count(round.len(), "row"),
                        path.display()
                    );
                    flags.matrix = path;
                    jobs = round;
                }
            }
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
