//! `inferbench selftest` (stub: not implemented yet).

/// Flags of `inferbench selftest`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the subcommand; returns the process exit code.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`inferbench selftest` is not implemented yet")
}
