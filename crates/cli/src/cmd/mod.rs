//! One module per subcommand: a `run` that takes the subcommand's flags (a library's flags
//! struct, or a small `Args` of its own), calls the library and returns the [`ExitStatus`].

pub use exit::{ExitStatus, StatusError};

pub mod bench;
pub mod bench_flags;
pub mod client_args;
pub mod db;
pub mod eval;
pub mod exit;
pub mod ingest;
pub mod job;
pub mod models_policy;
pub mod preview;
pub mod progress;
pub mod quickstart;
pub mod recipes;
pub mod replay;
pub mod replay_flags;
pub mod run_flags;
pub mod serve;
pub mod sim;
pub mod sweep;
pub mod tls_args;
pub mod views;

/// The exit status of a subcommand that ended with error `e` (the one mapping of the
/// libraries' typed errors to exit codes): a [`StatusError`]'s own; the server unreachable
/// when `--model` was not given and `/v1/models` could not be asked
/// ([`inferbench_client::models::ServedModelError::Unreachable`]); else [`ExitStatus::Usage`]
/// (bad flags, files or setup).
pub fn error_status(e: &anyhow::Error) -> ExitStatus {
    use inferbench_client::models::ServedModelError;
    if let Some(s) = e.downcast_ref::<StatusError>() {
        return s.status;
    }
    match e.downcast_ref::<ServedModelError>() {
        Some(ServedModelError::Unreachable(_)) => ExitStatus::Unreachable,
        _ => ExitStatus::Usage,
    }
}

/// The error of a user-named output file whose write failed once its content was made (a
/// full disk, `ulimit -f`): exit 1 ([`ExitStatus::Failed`], as a stdout that cannot be
/// written), `FLAG: why; the previous file (if any) is kept` (every such file is written
/// through a temporary file renamed onto it: `inferbench_loadgen::output::write_streamed`).
/// Checks made before the work (a path that is a folder, a folder that cannot be made) stay
/// usage errors (2).
pub fn write_failed(flag: &str, e: anyhow::Error) -> anyhow::Error {
    StatusError {
        status: ExitStatus::Failed,
        message: format!("{flag}: {e:#}; the previous file (if any) is kept"),
    }
    .into()
}

/// The help text's words for [`write_failed`]'s exit 1, the same in every subcommand's list
/// (the help test checks each list holds them).
#[cfg(test)]
pub const WRITE_FAILED_HELP: &str =
    "an output file could not be written (a full disk or `ulimit -f`; the previous file is kept)";

/// The multi-threaded tokio runtime a long-running subcommand runs in: a worker per core
/// ([`crate::limits::worker_threads`]) and at most [`crate::limits::blocking_threads`] blocking
/// threads (4 under `ulimit -v`, else 32; tokio's default of 512, 2 MiB of stack each, is
/// 1 GiB of address space that `ulimit -v` counts: trial of issue 39 §1–§3, finding 2).
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::limits::worker_threads())
        .max_blocking_threads(crate::limits::blocking_threads())
        .thread_stack_size(crate::limits::THREAD_STACK_BYTES as usize)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Runs `sweep` on a 2-worker runtime (blocking threads capped as [`runtime`]'s) with the one shutdown token ([`shutdown_token`],
/// `message` printed when a signal cancels it; a sweep stops after its current point).
pub fn on_runtime<T, F: std::future::Future<Output = anyhow::Result<T>>>(
    message: &'static str,
    sweep: impl FnOnce(inferbench_client::CancellationToken) -> F,
) -> anyhow::Result<T> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(crate::limits::blocking_threads())
        .enable_all()
        .build()?;
    rt.block_on(async { sweep(shutdown_token(message)).await })
}

/// The one shutdown token of a subcommand: cancelled on the first SIGINT (Ctrl-C), SIGTERM or
/// SIGHUP (the terminal closed, an ssh session dropped: issue 39, fresh tester), after printing
/// `message (on SIGINT)` / `(on SIGTERM)` / `(on SIGHUP)` to stderr, so a stop nobody asked for
/// says what stopped it. All three are the same graceful stop: the current point is cut, what
/// finished is saved (summary, database row, records), engines are stopped, exit 130. SIGQUIT
/// keeps its default (quit at once with a core dump: the deliberate "no cleanup" stop). Call
/// inside a tokio runtime; every long-running subcommand (bench, replay, job/sweep, quickstart,
/// sim, serve, eval) stops through it.
pub fn shutdown_token(message: &'static str) -> inferbench_client::CancellationToken {
    let token = inferbench_client::CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        // Which signal, so that a stop nobody at the terminal asked for explains itself.
        #[cfg(unix)]
        let which = {
            use tokio::signal::unix::{signal, SignalKind};
            // A signal that cannot be registered (never seen in practice) is simply not
            // waited for; Ctrl-C always is.
            let wait = |kind: SignalKind| async move {
                match signal(kind) {
                    Ok(mut s) => {
                        s.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = wait(SignalKind::terminate()) => "SIGTERM",
                _ = wait(SignalKind::hangup()) => "SIGHUP",
            }
        };
        #[cfg(not(unix))]
        let which = {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        };
        // Not eprintln!: with stderr closed (a reader gone) it would panic this task and the
        // token would never be cancelled.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("{message} (on {which})\n"),
        );
        t.cancel();
    });
    token
}

/// What to do about a listener that could not bind: for a port in use, pick another (`serve`,
/// `sim`); empty otherwise.
pub fn bind_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::AddrInUse {
        " (another process serves there: pick another with --port)"
    } else {
        ""
    }
}

/// A database flag's value as paths the command reads, for the same-file check
/// ([`inferbench_loadgen::samefile::check_distinct`]): a SQLite file and its `-wal`, `-shm`
/// and `-journal` (SQLite reads a WAL database's `-wal`: `plot --out DB-wal` would destroy
/// committed rows); a `postgres://` URL names none.
pub fn db_read(db: &str) -> Vec<inferbench_loadgen::samefile::NamedPath> {
    use inferbench_loadgen::samefile::{NamedPath, Role};
    (inferbench_loadgen::samefile::db_path(db).into_iter())
        .map(|p| NamedPath {
            role: Role::Input,
            ..p
        })
        .collect()
}
