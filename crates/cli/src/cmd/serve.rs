//! `inferbench serve`: the dashboard over a results database (read-only), until Ctrl-C.

use std::net::{IpAddr, SocketAddr};

use super::ExitStatus;

/// Flags of `inferbench serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 130 stopped by Ctrl-C, SIGTERM or SIGHUP (as `sim`); 2 no database, a \
     database with no runs yet, or the address cannot be bound."
)]
pub struct Args {
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL (opened read-only).
    #[arg(long, env = "INFERBENCH_DB", hide_env_values = true, default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Address to listen on. The default serves this machine only; `0.0.0.0` serves the
    /// network (the dashboard has no login: everything in the database is visible).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// TCP port (0 = any free port; the URL is printed).
    #[arg(long, default_value_t = 8321)]
    pub port: u16,
    /// Hide the paths (result directories, batches, job.json's paths) and host names stored
    /// with the runs: a path shown as `(path H)` (a hash of it, none of its names), hosts as
    /// `(host)`; a run's kept files (logs, job.json) are not served. For `--bind 0.0.0.0`.
    #[arg(long)]
    pub redact: bool,
}

/// Serves until Ctrl-C / SIGTERM; returns 130 then, as every long-running subcommand does
/// (trial 13: `serve` alone exited 0).
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    // Refuses a missing or empty database, as `report` does.
    drop(super::views::open_with_runs(&args.db)?);
    let store = inferbench_store::Store::open_read_only(&args.db)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let stop = super::shutdown_token("inferbench serve: stopping");
        let addr = SocketAddr::new(args.bind, args.port);
        let fail =
            |e: std::io::Error| anyhow::anyhow!("serving on {addr}: {e}{}", super::bind_hint(&e));
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(fail)?;
        let local = listener.local_addr().map_err(fail)?;
        // The landing page (`/`), which links into every view (issue 42: `/inference`).
        errln!("{}", inferbench_web::serving_line(store.location(), local));
        if !inferbench_web::is_loopback_ip(local.ip()) {
            // Trial 13: `--bind 0.0.0.0` said nothing of who can now reach the dashboard;
            // issue 39: nor that stored paths and host names are served.
            errln!(
                "{}",
                inferbench_web::exposure_warning(local.ip(), args.redact)
            );
        }
        inferbench_web::serve_listener(store, listener, args.redact, async move {
            stop.cancelled().await
        })
        .await
        .map_err(fail)
    })?;
    Ok(ExitStatus::Interrupted)
}
