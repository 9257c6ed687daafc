//! One module per subcommand; each owns its flags (`Args`) and a `run` returning the exit code.
pub mod bench;
pub mod changelog;
pub mod compare;
pub mod db;
pub mod eval;
pub mod ingest;
pub mod job;
pub mod matrix;
pub mod models;
pub mod plot;
pub mod quickstart;
pub mod quickstart_agentic;
pub mod replay;
pub mod report;
pub mod selftest;
pub mod serve;
pub mod sim;
pub mod sweep;

/// The one shutdown token of a subcommand: cancelled on the first SIGINT (Ctrl-C) or SIGTERM,
/// after printing `message` to stderr. Call inside a tokio runtime; every long-running
/// subcommand (bench, job/sweep, quickstart, sim) stops through it.
pub fn shutdown_token(message: &'static str) -> inferbench_client::CancellationToken {
    let token = inferbench_client::CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        // Not eprintln!: with stderr closed (a reader gone) it would panic this task and the
        // token would never be cancelled.
        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{message}\n"));
        t.cancel();
    });
    token
}
