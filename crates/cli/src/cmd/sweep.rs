//! `inferbench sweep`: run a job matrix locally, submit it to Slurm as a job array, or write a
//! GitHub Actions workflow for it. Flags, their options file and each executor's work:
//! `crate::cmd::run_flags`.

use crate::cmd::run_flags::{Executor, SweepFlags};

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
        if let Some(warning) = adaptive_tolerance(tol).map_err(anyhow::Error::msg)? {
            errln!("warning: {warning}");
        }
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
                    errln!(
                        "--adaptive: the frontier is known to within {tol} from the points under \
                         {}: no next round (why each point was skipped: {})",
                        opts.out_dir.display(),
                        opts.out_dir
                            .join(inferbench_runner::adaptive::PLAN_FILE)
                            .display()
                    );
                    return Ok(ExitStatus::Ok);
                }
                Some((path, round)) => {
                    errln!(
                        "--adaptive: next round, {} in {} (run `sweep --adaptive` again with the \
                         same --matrix and --out once its points are under --out; the reasons: \
                         {})",
                        inferbench_core::count(round.len(), "row"),
                        path.display(),
                        opts.out_dir
                            .join(inferbench_runner::adaptive::PLAN_FILE)
                            .display()
                    );
                    flags.matrix = path;
                    jobs = round;
                }
            }
        }
    }
    match flags.executor {
        Executor::Local => {
            use inferbench_loadgen::samefile::NamedPath;
            // The matrix as given (an adaptive round's is written under --out, not read here).
            let mut inputs = vec![NamedPath::input("--matrix", &flags.matrix)];
            inputs.extend(
                (flags.run.runner_config.iter()).map(|p| NamedPath::input("--runner-config", p)),
            );
            super::job::run_local(&jobs, &opts, flags.run.progress, flags.adaptive, &inputs)
        }
        Executor::Github => flags.write_github(&jobs),
        Executor::Slurm => tokio::runtime::Runtime::new()?.block_on(flags.slurm(&jobs, &opts)),
    }
}

/// The largest `--adaptive` tolerance accepted: 0.5 (a frontier known to within ±50 %).
pub const MAX_ADAPTIVE_TOLERANCE: f64 = 0.5;

/// Tolerances above this (0.2) are accepted with a warning: the planner stops after the ends
/// and the middle of most curves.
pub const COARSE_ADAPTIVE_TOLERANCE: f64 = 0.2;

/// Checks `--adaptive=TOL` (a relative fraction: 0.02 = 2 %). Returns the warning to print for
/// a coarse tolerance (above [`COARSE_ADAPTIVE_TOLERANCE`]), if any. Errors (exit 2): a
/// tolerance outside (0, [`MAX_ADAPTIVE_TOLERANCE`]], such as 5 (meant as 5 %?) or 1e9, which
/// would plan nothing past the first round and report what it "saved" against it.
pub fn adaptive_tolerance(tol: f64) -> Result<Option<String>, String> {
    if !(tol.is_finite() && tol > 0.0 && tol <= MAX_ADAPTIVE_TOLERANCE) {
        let percent = if tol.is_finite() && tol > 1.0 && tol <= 100.0 {
            format!(" (for {tol} %, write --adaptive={})", tol / 100.0)
        } else {
            String::new()
        };
        return Err(format!(
            "--adaptive={tol}: the tolerance is a fraction in (0, {MAX_ADAPTIVE_TOLERANCE}] \
             (0.02 = 2 %){percent}"
        ));
    }
    Ok((tol > COARSE_ADAPTIVE_TOLERANCE).then(|| {
        format!(
            "--adaptive={tol}: a tolerance above {COARSE_ADAPTIVE_TOLERANCE} knows the frontier \
             only coarsely (most curves stop at their ends and middle)"
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::adaptive_tolerance;

    /// A fresh tester's finding 2: `--adaptive=5` and `--adaptive=1e9` were accepted silently.
    #[test]
    fn adaptive_tolerance_outside_zero_to_half_is_refused_and_above_a_fifth_warned() {
        assert_eq!(
            adaptive_tolerance(5.0),
            Err(
                "--adaptive=5: the tolerance is a fraction in (0, 0.5] (0.02 = 2 %) (for 5 %, \
                 write --adaptive=0.05)"
                    .into()
            )
        );
        assert_eq!(
            adaptive_tolerance(1e9),
            Err(
                "--adaptive=1000000000: the tolerance is a fraction in (0, 0.5] (0.02 = 2 %)"
                    .into()
            )
        );
        for bad in [0.0, -0.1, f64::NAN, f64::INFINITY, 0.500_001] {
            assert!(adaptive_tolerance(bad).is_err(), "{bad}");
        }
        assert_eq!(adaptive_tolerance(0.02), Ok(None));
        assert_eq!(adaptive_tolerance(0.2), Ok(None));
        assert_eq!(
            adaptive_tolerance(0.5),
            Ok(Some(
                "--adaptive=0.5: a tolerance above 0.2 knows the frontier only coarsely (most \
                 curves stop at their ends and middle)"
                    .into()
            ))
        );
    }
}
