//! Minimal stand-alone runner of the simulated server for performance measurements without
//! building the whole CLI (same code path as `inferbench sim`: `inferbench_sim::serve`).
//!
//! `cargo run --release -p inferbench-sim --example serve -- [PORT] [instant|timed] [THREADS] [EVENTS_PER_WRITE] [TIME_SCALE]`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port: u16 = args.first().map_or(Ok(8000), |s| s.parse())?;
    let mode = match args.get(1).map(String::as_str) {
        Some("timed") => inferbench_sim::Mode::Timed,
        _ => inferbench_sim::Mode::Instant,
    };
    let threads: usize = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let events_per_write: usize = args.get(3).map_or(Ok(64), |s| s.parse())?;
    let time_scale: f64 = args.get(4).map_or(Ok(1.0), |s| s.parse())?;
    let cfg = inferbench_sim::SimConfig {
        mode,
        served_model_name: Some("sse-instant".into()),
        events_per_write,
        threads,
        time_scale,
        ..inferbench_sim::SimConfig::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        eprintln!("listening on http://{}", listener.local_addr()?);
        inferbench_sim::serve(cfg, listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
        Ok(())
    })
}
