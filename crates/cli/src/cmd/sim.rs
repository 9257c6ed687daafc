//! `inferbench sim`: run the simulated OpenAI-compatible inference server (crate
//! `inferbench-sim`; DESIGN.md §6). Flags and the `--bound` table: [`flags`].

pub mod flags;

use flags::{bound_table, SimFlags};

use super::ExitStatus;

/// Runs the server until Ctrl-C (130), or prints `--bound` and exits (0).
pub fn run(flags: SimFlags) -> anyhow::Result<ExitStatus> {
    let cfg = flags.to_config()?;
    if let Some(spec) = &flags.bound {
        out!("{}", bound_table(&cfg, spec, &flags.bound_conc)?);
        return Ok(ExitStatus::Ok);
    }
    let info = inferbench_sim::describe(&cfg)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((flags.host.as_str(), flags.port))
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "binding {}:{}: {e}{}",
                    flags.host,
                    flags.port,
                    super::bind_hint(&e)
                )
            })?;
        let addr = listener.local_addr()?;
        errln!("{}", inferbench_sim::start_line(&cfg, &info));
        outln!("listening on http://{addr}");
        let stop = super::shutdown_token("inferbench sim: stopping");
        inferbench_sim::serve(cfg, listener, async move { stop.cancelled().await }).await?;
        Ok::<_, anyhow::Error>(ExitStatus::Interrupted)
    })
}
