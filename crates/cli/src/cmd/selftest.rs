//! `inferbench selftest`: the client's own ceiling against a zero-latency server, each level a
//! `bench` run (closed loop, random 32-token prompts, no warmup). Logic in
//! `inferbench_loadgen::selftest`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use inferbench_loadgen::selftest::{measure, render, SelftestOptions};

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

struct Spawned(Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_server(args: &Args, bin: &PathBuf) -> anyhow::Result<(Spawned, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut cmd = match &args.server_cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus]).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(["--coalesce", "--port", &port.to_string()])
        .args(["--threads", &args.server_threads.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = cmd
        .spawn()
        .with_context(|| format!("--spawn-server: cannot start {}", bin.display()))?;
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((Spawned(child), url));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!(
        "--spawn-server: {} did not listen on {url} within 5 s",
        bin.display()
    )
}

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
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
            let (s, u) = spawn_server(&args, bin)?;
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
    let mismatch = points.iter().any(|p| {
        p.failed > 0
            || p.usage_tokens != p.chunk_tokens
            || p.server_tokens.is_some_and(|s| s != p.chunk_tokens)
    });
    if mismatch {
        eprintln!("selftest: token totals differ from the server's count or requests failed");
        for p in points.iter().filter(|p| p.failed > 0) {
            eprintln!(
                "  conc {}: {} request(s) failed, e.g. {}",
                p.concurrency,
                p.failed,
                p.first_error.as_deref().unwrap_or("(no message)")
            );
        }
        return Ok(1);
    }
    Ok(0)
}
