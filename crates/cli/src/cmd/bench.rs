//! `inferbench bench` (stub: not implemented yet).

/// Flags of `inferbench bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the subcommand; returns the process exit code.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`inferbench bench` is not implemented yet")
}
