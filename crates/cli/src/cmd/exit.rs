//! [`ExitStatus`]: the one list of `inferbench`'s process exit codes, shared by every
//! subcommand (`bench`'s and `replay`'s gates, sweeps, evals, the CLI's usage errors), and
//! the one mapping of how a library's run ended ([`inferbench_core::RunEnd`]) to them; an
//! error's status is [`super::error_status`].

/// The exit status of an `inferbench` subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitStatus {
    /// 0: everything asked for was done and passed its gates.
    Ok = 0,
    /// 1: the run ended but failed a gate: error or anomaly rate, nothing measured, a failed
    /// point or eval, required power not valid, something skipped (`ingest`).
    Failed = 1,
    /// 2: bad flags, files or setup (nothing, or nothing useful, was run).
    Usage = 2,
    /// 3: the server was unreachable (partial results written).
    Unreachable = 3,
    /// 130 (128 + SIGINT): interrupted by Ctrl-C / SIGTERM / SIGHUP; what finished was saved.
    Interrupted = 130,
    /// 141 (128 + SIGPIPE): stdout's reader went away (`inferbench report | head`).
    BrokenPipe = 141,
}

impl ExitStatus {
    /// The process exit code.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// [`ExitStatus::Failed`] when `failed`, else [`ExitStatus::Ok`].
    pub const fn failed_if(failed: bool) -> ExitStatus {
        if failed {
            ExitStatus::Failed
        } else {
            ExitStatus::Ok
        }
    }
}

/// The exit status of a run that ended as `end` ([`inferbench_core::RunEnd`], what the libraries
/// return): passed 0, a gate failed 1, the server unreachable 3, interrupted 130.
impl From<inferbench_core::RunEnd> for ExitStatus {
    fn from(end: inferbench_core::RunEnd) -> ExitStatus {
        match end {
            inferbench_core::RunEnd::Passed => ExitStatus::Ok,
            inferbench_core::RunEnd::GateFailed => ExitStatus::Failed,
            inferbench_core::RunEnd::Unreachable => ExitStatus::Unreachable,
            inferbench_core::RunEnd::Interrupted => ExitStatus::Interrupted,
        }
    }
}

/// An error that ends a subcommand with its own [`ExitStatus`] rather than
/// [`ExitStatus::Usage`] (e.g. a server that could not be reached before the run: 3). The
/// CLI finds it in an `anyhow` chain with `downcast_ref`.
#[derive(Debug)]
pub struct StatusError {
    /// The exit status to end with.
    pub status: ExitStatus,
    /// The message printed after `error: `.
    pub message: String,
}

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StatusError {}

#[cfg(test)]
mod tests {
    use super::ExitStatus;

    /// The codes are the documented ones (each subcommand's `--help`).
    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(
            [0, 1, 2, 3, 130, 141],
            [
                ExitStatus::Ok.code(),
                ExitStatus::Failed.code(),
                ExitStatus::Usage.code(),
                ExitStatus::Unreachable.code(),
                ExitStatus::Interrupted.code(),
                ExitStatus::BrokenPipe.code(),
            ]
        );
        assert_eq!(ExitStatus::failed_if(true), ExitStatus::Failed);
        assert_eq!(ExitStatus::failed_if(false), ExitStatus::Ok);
    }

    /// How a run ended maps to the documented codes (each subcommand's `--help`): 0, 1, 3,
    /// 130.
    #[test]
    fn run_ends_map_to_their_codes() {
        use inferbench_core::RunEnd;
        let codes = [
            RunEnd::Passed,
            RunEnd::GateFailed,
            RunEnd::Unreachable,
            RunEnd::Interrupted,
        ]
        .map(|e| ExitStatus::from(e).code());
        assert_eq!(codes, [0, 1, 3, 130]);
    }
}
