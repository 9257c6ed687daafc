//! `inferbench serve`: the dashboard over a results database (read-only), until Ctrl-C.

use std::net::{IpAddr, SocketAddr};

use super::ExitStatus;

/// Flags of `inferbench serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 130 stopped by Ctrl-C, SIGTERM or SIGHUP (as `sim`); 2 no database, a \
     database with no runs yet, the address cannot be bound, or a `ulimit -v` below what serve \
     needs to open the database and serve (checked at start, naming the value that fits; never \
     a panic or SIGABRT). The start check covers the binary, the database's cache and the \
     threads (65 MiB under `ulimit -v`), not the rows a query over a large database holds: \
     leave room above the value it names for those."
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
    // Its own need against `ulimit -v` before anything is opened (issue 39: under `ulimit -v
    // 60000` a thread could not start, a panic, then a hang; lower, SIGSEGV or SIGABRT).
    let blocking = crate::limits::blocking_threads();
    let need = serve_need_bytes(SERVE_WORKERS as u64, blocking as u64);
    if let Some(budget) = crate::limits::current().memory {
        refuse_serve(need, budget.bytes, budget.what())?;
    }
    // Refuses a missing or empty database, as `report` does.
    drop(super::views::open_with_runs(&args.db)?);
    let store = inferbench_store::Store::open_read_only(&args.db)?;
    // Queries run one at a time (the store is behind a lock): under `ulimit -v` the blocking
    // pool is capped as the model counts it, so a burst of requests cannot start more
    // threads than the check allowed for.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(SERVE_WORKERS)
        .max_blocking_threads(blocking)
        .thread_stack_size(crate::limits::THREAD_STACK_BYTES as usize)
        .enable_all()
        .build()
        .map_err(|e| no_thread(e.into(), need))?;
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
    })
    .map_err(|e| no_thread(e, need))?;
    Ok(ExitStatus::Interrupted)
}

/// The dashboard's runtime workers: 2 (its pages and queries are light; queries run one at a
/// time on the blocking pool).
pub const SERVE_WORKERS: usize = 2;

/// Address space `serve` takes besides its threads, bytes: 50 MiB. Measured (2026-12-08, debug
/// build, the `sweep-h200` fixture's database of 12 points, 8 pages and API routes asked four
/// at a time): the lowest `ulimit -v` that opened the database and answered every request was
/// 60,000 KiB (58.6 MiB) with 2 workers and the blocking pool capped at 4; at 58,000 KiB a
/// query's thread could not start (requests unanswered), at 56,000 the runtime panicked, and
/// near 40,000 the dynamic loader fails (SIGSEGV) before inferbench runs. [`serve_need_bytes`]
/// models it as 50 MiB and 2.5 MiB a thread: 65 MiB (66,560 KiB).
pub const SERVE_BASE_BYTES: u64 = 50 << 20;

/// What `serve` with `workers` runtime workers and up to `blocking` blocking threads needs to
/// open its database and serve, bytes: [`SERVE_BASE_BYTES`] and
/// [`crate::limits::THREAD_BYTES`] for each thread. A query's rows come on top, and grow with
/// the database (the `--help` says so).
pub fn serve_need_bytes(workers: u64, blocking: u64) -> u64 {
    SERVE_BASE_BYTES.saturating_add(
        workers
            .saturating_add(blocking)
            .saturating_mul(crate::limits::THREAD_BYTES),
    )
}

/// Refuses (exit 2, before the database is opened) a `serve` whose `need` (bytes) is more than
/// the memory budget `budget` (bytes; `what`: `ulimit -v` or the memory available) holds.
///
/// # Errors
/// The need, the limit and the `ulimit -v` (KiB) that fits.
pub fn refuse_serve(need: u64, budget: u64, what: &str) -> anyhow::Result<()> {
    if need <= budget {
        return Ok(());
    }
    anyhow::bail!(
        "inferbench serve needs about {} MiB to open the database and serve ({} MiB for the \
         binary and the database's cache and {} MiB for its threads, as measured) and {what} \
         is {} MiB: raise it (`ulimit -v {}` fits) (nothing was served)",
        need.div_ceil(1 << 20),
        SERVE_BASE_BYTES >> 20,
        (need - SERVE_BASE_BYTES).div_ceil(1 << 20),
        budget >> 20,
        need.div_ceil(1024)
    )
}

/// `e`, naming `ulimit -v` and the value that fits (`need`, bytes) when it is a thread that
/// could not start (EAGAIN) under an address-space limit: exit 2, never a panic.
fn no_thread(e: anyhow::Error, need: u64) -> anyhow::Error {
    let text = format!("{e:#}");
    let eagain = text.contains("os error 11") || text.contains("Resource temporarily unavailable");
    if !eagain || text.contains("ulimit -v") {
        return e;
    }
    anyhow::anyhow!(
        "{text}: a thread of serve could not start; under an address-space limit (`ulimit -v`) \
         raise it (`ulimit -v {}` fits)",
        need.div_ceil(1024)
    )
}
