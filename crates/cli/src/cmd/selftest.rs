//! `inferbench selftest`: the client's own ceiling against a zero-latency server, each level a
//! `bench` run (closed loop, random 32-token prompts, no warmup). Logic in
//! `inferbench_loadgen::selftest`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use inferbench_loadgen::selftest::{measure, problems, render, spawn_server, SelftestOptions};

use super::ExitStatus;

/// Flags of `inferbench selftest`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Method (docs/perf/client.md): start a server that outruns the client, \
    pinned to other cores, e.g.\n  taskset -c 0 sse-instant --coalesce --port 8000 --threads 1\nthen\n  \
    taskset -c 1 inferbench selftest --base-url http://127.0.0.1:8000\n\
    (or let selftest start it: --spawn-server PATH --server-cpus 0). The client runs on one core \
    unless --client-threads says otherwise; tok/CPU-s is tokens per client CPU second."
)]
pub struct Args {
    /// Zero-latency OpenAI-compatible server to stream from: `inferbench sim --mode instant
    /// --port 8000` (then `--model Llama-3.1-8B`, the name it serves) or the project's
    /// sse-instant (`--spawn-server`).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    pub base_url: String,
    /// Start this server binary (sse-instant) with `--coalesce --port <free>` first, and stop it
    /// afterwards; --base-url is then ignored.
    #[arg(long, value_name = "PATH")]
    pub spawn_server: Option<PathBuf>,
    /// CPU list for the spawned server (`taskset -c`), e.g. `0`.
    #[arg(long, value_name = "CPUS")]
    pub server_cpus: Option<String>,
    /// Server threads for the spawned server.
    #[arg(long, default_value_t = 1)]
    pub server_threads: u32,
    /// Model name sent.
    #[arg(long, default_value = "selftest")]
    pub model: String,
    /// Output tokens per request.
    #[arg(long, default_value_t = 256)]
    pub tokens: u32,
    /// Concurrency levels (comma list).
    #[arg(long, default_value = "64,512")]
    pub concurrency: String,
    /// Sending window per level, seconds (in-flight streams then finish).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Client worker threads (1: the per-core figure). The runtime is bench's own kind (tokio's
    /// multi-threaded scheduler, here with this many workers), so the ceiling is bench's.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Also write the measurements as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    let concurrency = args
        .concurrency
        .split(',')
        .map(|s| s.trim().parse::<u32>().ok().filter(|c| *c > 0))
        .collect::<Option<Vec<_>>>()
        .context("--concurrency: expected a comma list of positive integers")?;
    let duration = Duration::try_from_secs_f64(args.duration)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--duration: expected a positive number of seconds")?;
    let (_server, base_url) = match &args.spawn_server {
        Some(bin) => {
            let (s, u) = spawn_server(bin, args.server_cpus.as_deref(), args.server_threads)?;
            (Some(s), u)
        }
        None => (None, args.base_url.clone()),
    };
    let opts = SelftestOptions {
        base_url,
        model: args.model.clone(),
        tokens_per_request: args.tokens,
        concurrency: concurrency.clone(),
        duration,
        ..Default::default()
    };
    // The scheduler bench runs on, so that nothing but the flags differs from a bench run.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.max(1))
        .enable_all()
        .build()?;
    let parse_ns = inferbench_loadgen::selftest::parse_ns_per_event(args.tokens, 2_000_000);
    eprintln!(
        "selftest: SSE framing + chunk interpretation alone: {parse_ns:.0} CPU ns/event ({:.2} M events per CPU second)",
        1e3 / parse_ns
    );
    let mut points = Vec::new();
    for c in concurrency {
        eprintln!(
            "selftest: concurrency {c} for {:.1} s against {}",
            args.duration, opts.base_url
        );
        points.push(rt.block_on(measure(&opts, c))?);
    }
    print!("{}", render(&points));
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&points)?)
            .with_context(|| format!("--json: cannot write {}", p.display()))?;
    }
    if let Some(problems) = problems(&points) {
        eprint!("{problems}");
        return Ok(ExitStatus::Failed);
    }
    Ok(ExitStatus::Ok)
}
