//! [`RunEnd`]: how a run ended, as the libraries report it (a `bench` point, a `replay`, a
//! sweep of points). The libraries return it and never an exit code; the CLI turns it into the
//! process's exit status in one place.

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RunEnd {
    /// Everything asked for ran and passed its gates.
    #[default]
    Passed,
    /// The run ended but failed a gate: the failed or anomalous share over its limit, nothing
    /// measured, results not written, GPU power not valid with `--require-power`, a
    /// `replay`'s failed-request threshold or main-agent warmup, a sweep's failed point.
    GateFailed,
    /// The server could not be reached: a streak of connection failures stopped the run, or
    /// every finished request failed to connect (partial results written).
    Unreachable,
    /// Stopped by Ctrl-C / SIGTERM (the run's cancellation); what finished was kept.
    Interrupted,
}

impl RunEnd {
    /// Whether the run passed ([`RunEnd::Passed`]).
    pub const fn passed(self) -> bool {
        matches!(self, RunEnd::Passed)
    }
}

#[cfg(test)]
mod tests {
    use super::RunEnd;

    /// The default is a pass; only a pass passes.
    #[test]
    fn default_passes() {
        assert_eq!(RunEnd::default(), RunEnd::Passed);
        assert!(RunEnd::Passed.passed());
        for e in [RunEnd::GateFailed, RunEnd::Unreachable, RunEnd::Interrupted] {
            assert!(!e.passed(), "{e:?}");
        }
    }
}
