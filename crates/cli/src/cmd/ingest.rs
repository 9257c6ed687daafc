//! `inferbench ingest` (stub: not implemented yet).

/// Flags of `inferbench ingest`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the subcommand; returns the process exit code.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`inferbench ingest` is not implemented yet")
}
