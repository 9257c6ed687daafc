//! `inferbench-sim`: a simulated OpenAI-compatible inference server (DESIGN.md §6, issue 3).
//!
//! It stands in for a GPU engine so that the quickstart runs anywhere and every other crate has a
//! deterministic target with real queueing, batching and prefix-cache behaviour:
//!
//! - [`server`](crate::serve) — `/v1/completions`, `/v1/chat/completions`, `/v1/responses`
//!   (the Responses API: `input`, `max_output_tokens`, typed events ending in
//!   `response.completed` with usage) (SSE or whole JSON), `/v1/models`, `/health`, `/tokenize`, `/metrics` (vLLM metric names),
//!   `/reset_prefix_cache`; faults by flag or per request (`x-sim-fault`, see [`fault`]).
//! - [`engine`] — continuous batching with `max_num_seqs` and a token budget per step (chunked
//!   prefill), a paged KV cache ([`kv`]) with prefix caching and preemption.
//! - [`roofline`] — each step's time from the [`catalogue`] (hardware × model × precision × tp).
//! - [`tokenize`] — prompt token ids (embedded o200k/cl100k BPE, or a cheap approximation) and
//!   the chained block hashes of the prefix cache.
//!
//! ```no_run
//! let sim = inferbench_sim::spawn(inferbench_sim::SimConfig::default()).unwrap();
//! println!("simulated server at {}", sim.base_url());
//! sim.shutdown();
//! ```
#![deny(missing_docs)]

pub mod catalogue;
pub mod closed_loop;
mod config;
mod driver;
pub mod engine;
pub mod fault;
pub mod golden;
pub mod kv;
mod metrics;
pub mod roofline;
mod server;
mod sse;
pub mod tokenize;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use catalogue::{Catalogue, Hardware, Model, Precision};
pub use config::{
    non_negative_f64, positive_f64, ConfigError, Mode, SimConfig, SpecDecode,
    ACTIVATION_RESERVE_BYTES,
};
pub use fault::FaultSpec;
pub use metrics::BUSY as BUSY_SECONDS_METRIC;
pub use roofline::{point_bound, step_time, PointBound, RooflineParams, SeqWork, StepTime};
pub use server::any_request_served;
pub use tokenize::TokenizerKind;

/// Errors of [`spawn`] and [`serve`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Binding or accepting failed.
    #[error("simulated server I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// Facts about a configured server, for logs and the quickstart's job record.
#[derive(Debug, Clone)]
pub struct SimInfo {
    /// Name served in `/v1/models`.
    pub served_model_name: String,
    /// KV-cache blocks.
    pub num_gpu_blocks: u32,
    /// KV-cache capacity in tokens (`num_gpu_blocks × block_size`).
    pub kv_capacity_tokens: u64,
    /// Longest prompt + output, tokens.
    pub max_model_len: u32,
}

/// Validates `cfg` and returns what the server will run with.
pub fn describe(cfg: &SimConfig) -> Result<SimInfo, SimError> {
    let r = cfg.resolve()?;
    Ok(SimInfo {
        served_model_name: r.served_name,
        num_gpu_blocks: r.num_blocks,
        kv_capacity_tokens: u64::from(r.num_blocks) * u64::from(cfg.block_size),
        max_model_len: r.max_model_len,
    })
}

/// The settings that change a simulated server's performance, `(name, value)` in a fixed
/// order: what its `/metrics` reports as the labels of `inferbench_sim:config_info` and what
/// a point's server fingerprint hashes (`inferbench_core::fingerprint`). Load, seeds, ports
/// and worker threads are not among them (a fingerprint never includes the load).
pub fn settings(cfg: &SimConfig, info: &SimInfo) -> Vec<(&'static str, String)> {
    let mode = match cfg.mode {
        Mode::Timed => "timed",
        Mode::Instant => "instant",
    };
    let opt = |v: Option<String>| v.unwrap_or_else(|| "none".into());
    vec![
        ("mode", mode.to_string()),
        ("hardware", cfg.hardware.to_lowercase()),
        ("model", cfg.model.to_lowercase()),
        ("precision", cfg.precision.as_str().to_string()),
        ("tp", cfg.tp.to_string()),
        ("time_scale", cfg.time_scale.to_string()),
        ("max_num_seqs", cfg.max_num_seqs.to_string()),
        (
            "max_num_batched_tokens",
            cfg.max_num_batched_tokens.to_string(),
        ),
        ("block_size", cfg.block_size.to_string()),
        (
            "gpu_memory_utilization",
            cfg.gpu_memory_utilization.to_string(),
        ),
        ("num_gpu_blocks", info.num_gpu_blocks.to_string()),
        ("max_model_len", info.max_model_len.to_string()),
        (
            "enable_prefix_caching",
            cfg.enable_prefix_caching.to_string(),
        ),
        (
            "spec_decode",
            opt(cfg
                .spec_decode
                .as_ref()
                .map(|s| format!("k{}_al{}", s.num_draft_tokens, s.acceptance_length))),
        ),
        ("reasoning_tokens", cfg.reasoning_tokens.to_string()),
        ("eos_after", opt(cfg.eos_after.map(|n| n.to_string()))),
        // In `--fault`'s own syntax (`status=500`), not a debug string (issue 39 §5).
        (
            "fault",
            opt((cfg.fault.as_ref())
                .filter(|f| !f.is_none())
                .map(ToString::to_string)),
        ),
        ("fault_rate", cfg.fault_rate.to_string()),
        ("fixed_step_s", opt(cfg.fixed_step_s.map(|s| s.to_string()))),
        ("events_per_write", cfg.events_per_write.to_string()),
    ]
}

/// The Prometheus lines of `inferbench_sim:config_info` (value 1, the [`settings`] as labels,
/// escaped), as `/metrics` ends with them: a client of a server it did not start learns the
/// server's settings from them.
pub(crate) fn config_info_metric(cfg: &SimConfig, res: &config::Resolved) -> String {
    let info = SimInfo {
        served_model_name: res.served_name.clone(),
        num_gpu_blocks: res.num_blocks,
        kv_capacity_tokens: u64::from(res.num_blocks) * u64::from(cfg.block_size),
        max_model_len: res.max_model_len,
    };
    let esc = |v: &str| {
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    };
    let labels: Vec<String> = settings(cfg, &info)
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", esc(v)))
        .collect();
    format!(
        "# HELP inferbench_sim:config_info The simulated server's settings (labels).\n\
         # TYPE inferbench_sim:config_info gauge\ninferbench_sim:config_info{{{}}} 1\n",
        labels.join(",")
    )
}

/// The one line a simulated server announces itself with, wherever it runs (`inferbench sim`
/// on stderr, so also a sweep's `sim` engine log; `inferbench quickstart` on stderr and in each
/// point's `server.log`): served model, precision, TP × hardware, mode, time scale (modelled
/// seconds per wall second), max-num-seqs, KV-cache capacity (tokens, blocks) and
/// max_model_len (tokens).
pub fn start_line(cfg: &SimConfig, info: &SimInfo) -> String {
    let hw = Catalogue::embedded()
        .hardware(&cfg.hardware)
        .map_or_else(|_| cfg.hardware.clone(), |h| h.name.clone());
    let mode = match cfg.mode {
        Mode::Timed => "timed",
        Mode::Instant => "instant",
    };
    format!(
        "inferbench sim: {} {} on {}x{hw} ({mode} mode, time scale {}), max-num-seqs {}, KV cache \
         {} tokens in {} blocks, max_model_len {}",
        info.served_model_name,
        cfg.precision,
        cfg.tp,
        cfg.time_scale,
        cfg.max_num_seqs,
        info.kv_capacity_tokens,
        info.num_gpu_blocks,
        info.max_model_len
    )
}

/// Serves `cfg` on `listener` until `shutdown` resolves (then stops accepting; open
/// connections end with the runtime). Must run inside a tokio runtime.
pub async fn serve(
    cfg: SimConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), SimError> {
    let res = cfg.resolve()?;
    // Load the BPE tables now (≈ 0.3–1 s once per process) rather than inside the first
    // request, where it would stall every stream on this runtime thread.
    // On a thread of its own: tokio's blocking pool panics when it cannot start a thread
    // (issue 39, fresh tester's finding 3: under `ulimit -v 60000` "OS can't spawn worker
    // thread" panicked here); a thread that cannot start is an error the caller names.
    let tok = cfg.tokenizer;
    let (done, loaded) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("inferbench-sim-tokenizer".into())
        .spawn(move || {
            let _ = tok.output_ids();
            let _ = done.send(());
        })?;
    let _ = loaded.await;
    let (tx, engine) = if cfg.mode == Mode::Timed {
        let (tx, rx) = std::sync::mpsc::channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let app = Arc::new(server::App::new(cfg, res, tx));
    if let Some(rx) = engine {
        // The engine holds only a weak reference, so it stops once the server (and every
        // connection holding the App, hence the request sender) is gone.
        let weak = Arc::downgrade(&app);
        std::thread::Builder::new()
            .name("inferbench-sim-engine".into())
            .spawn(move || driver::run(weak, rx))?;
    }
    tokio::pin!(shutdown);
    let mut backoff = AcceptBackoff::default();
    // One descriptor held in reserve: out of files for longer than `AcceptBackoff::SHED_AFTER`,
    // the sim frees it to accept a waiting connection and answer it 503, so a client is told
    // instead of waiting in the backlog forever (issue 39, fresh tester's finding 1).
    let mut reserve = open_reserve();
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            r = listener.accept() => match r {
                Ok(s) => {
                    backoff.accepted();
                    s
                }
                Err(e) => {
                    // EMFILE and friends (issue 39, fresh tester's finding 2: 5,328 lines in
                    // 54 s at `ulimit -n 64`): counted for `/metrics`, said rarely, and waited
                    // out with a growing pause instead of spinning.
                    app.accept_errors.fetch_add(1, Ordering::Relaxed);
                    let now = std::time::Instant::now();
                    let (pause, line) = backoff.failed(&e.to_string(), now);
                    if let Some(line) = line {
                        tracing::warn!("{line}");
                    }
                    if out_of_files(&e) && backoff.shedding(now) && reserve.take().is_some() {
                        shed_one(&listener).await;
                        reserve = open_reserve();
                        continue;
                    }
                    tokio::select! {
                        _ = &mut shutdown => return Ok(()),
                        _ = tokio::time::sleep(pause) => {}
                    }
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| server::handle(app.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// The descriptor the accept loop holds in reserve (`/dev/null`), to free when out of files.
fn open_reserve() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

/// Whether a failed accept is the process (`EMFILE`) or the system (`ENFILE`) out of files.
fn out_of_files(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// The answer a connection accepted only to be refused gets: 503, JSON in OpenAI's error shape
/// ([`SHED_MESSAGE`]), the connection closed.
pub fn shed_response() -> String {
    let body = serde_json::json!({
        "error": {"message": SHED_MESSAGE, "type": "server_out_of_files", "code": 503}
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: \
         close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// What a connection refused for want of open files is told.
pub const SHED_MESSAGE: &str = "inferbench sim: out of open files (EMFILE, the open-file limit \
    ulimit -n) for longer than 2 s: this connection was accepted only to be refused; raise the \
    limit (the hard limit too) or lower the client's concurrency";

/// Accepts one waiting connection with the descriptor the caller freed and answers it
/// [`shed_response`]: its request read first (up to 64 KiB, 200 ms), so closing does not reset
/// it before the answer is read. Nothing waiting within 200 ms, or any I/O error: nothing.
async fn shed_one(listener: &tokio::net::TcpListener) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let wait = std::time::Duration::from_millis(200);
    let Ok(Ok((mut stream, _))) = tokio::time::timeout(wait, listener.accept()).await else {
        return;
    };
    let mut buf = vec![0u8; 64 << 10];
    let _ = tokio::time::timeout(wait, stream.read(&mut buf)).await;
    let _ = tokio::time::timeout(wait, stream.write_all(shed_response().as_bytes())).await;
    let _ = tokio::time::timeout(wait, stream.shutdown()).await;
}

/// `inferbench_sim:accept_errors_total`, the listener's failed accepts (`EMFILE` at the
/// open-file limit, …), as Prometheus text.
pub(crate) fn accept_errors_metric(n: u64) -> String {
    format!(
        "# HELP inferbench_sim:accept_errors_total Connections the sim failed to accept (e.g. \
         EMFILE: its open-file limit, ulimit -n, below the connections asked of it).\n\
         # TYPE inferbench_sim:accept_errors_total counter\n\
         inferbench_sim:accept_errors_total {n}\n"
    )
}

/// How the accept loop waits out failed accepts: the pause doubles from
/// [`AcceptBackoff::FIRST`] to [`AcceptBackoff::MAX`] while accepts keep failing (reset by a
/// success), and a line is said for the first failure and then at most once per
/// [`AcceptBackoff::EVERY`], with the failures since the last line.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    pause: Option<std::time::Duration>,
    last_line: Option<std::time::Instant>,
    since_line: u64,
    /// When the current run of failures began (`None` after a success).
    failing_since: Option<std::time::Instant>,
}

impl AcceptBackoff {
    /// The first pause after a failed accept.
    pub const FIRST: std::time::Duration = std::time::Duration::from_millis(10);
    /// The longest pause (short: a connection closing frees a descriptor for the next accept).
    pub const MAX: std::time::Duration = std::time::Duration::from_millis(100);
    /// The least time between two lines.
    pub const EVERY: std::time::Duration = std::time::Duration::from_secs(10);

    /// Failing accepts for this long (no success between), the sim sheds waiting connections:
    /// each is accepted with its reserve descriptor and answered 503 ([`shed_response`]) rather
    /// than left in the backlog, where its client would wait without end.
    pub const SHED_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

    /// A connection was accepted: the next failure pauses [`AcceptBackoff::FIRST`] again.
    pub fn accepted(&mut self) {
        self.pause = None;
        self.failing_since = None;
    }

    /// Whether accepts have failed for [`AcceptBackoff::SHED_AFTER`] or more at `now` (with no
    /// success since the first of them).
    pub fn shedding(&self, now: std::time::Instant) -> bool {
        self.failing_since
            .is_some_and(|t| now.saturating_duration_since(t) >= Self::SHED_AFTER)
    }

    /// An accept failed with `err` at `now`: the pause before the next accept, and the line to
    /// say (`None` when one was said less than [`AcceptBackoff::EVERY`] ago).
    pub fn failed(
        &mut self,
        err: &str,
        now: std::time::Instant,
    ) -> (std::time::Duration, Option<String>) {
        let pause = self.pause.map_or(Self::FIRST, |p| (p * 2).min(Self::MAX));
        self.pause = Some(pause);
        self.failing_since.get_or_insert(now);
        self.since_line += 1;
        let due = self
            .last_line
            .is_none_or(|t| now.saturating_duration_since(t) >= Self::EVERY);
        if !due {
            return (pause, None);
        }
        let hint = if err.contains("os error 24") || err.contains("Too many open files") {
            ": the open-file limit (ulimit -n) is below the connections asked of the sim; \
             raise it (the hard limit too) or lower the client's concurrency"
        } else {
            ""
        };
        let line = match self.last_line {
            None => format!("accept failed: {err}{hint} (pausing accepts; counted in /metrics as inferbench_sim:accept_errors_total)"),
            Some(_) => format!(
                "{} in the last {} s: {err}{hint}",
                match self.since_line {
                    1 => "1 failed accept".to_string(),
                    n => format!("{n} failed accepts"),
                },
                Self::EVERY.as_secs()
            ),
        };
        self.last_line = Some(now);
        self.since_line = 0;
        (pause, Some(line))
    }
}

/// A simulated server running on its own thread and runtime; stops on [`SimHandle::shutdown`]
/// or drop.
#[derive(Debug)]
pub struct SimHandle {
    /// The bound address (127.0.0.1, an OS-chosen port).
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SimHandle {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server and waits for its thread to end.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Starts a server for `cfg` on 127.0.0.1 with an OS-chosen port, on a new thread with its own
/// tokio runtime (`cfg.threads` workers), so it works from sync code and from any async test.
/// The port accepts connections when this returns.
pub fn spawn(cfg: SimConfig) -> Result<SimHandle, SimError> {
    cfg.resolve()?;
    let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let threads = cfg.threads.max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .thread_name("inferbench-sim")
        .build()?;
    let thread = std::thread::Builder::new()
        .name("inferbench-sim".into())
        .spawn(move || {
            rt.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!("simulated server could not listen: {e}");
                        return;
                    }
                };
                let stop = async {
                    let _ = stop_rx.await;
                };
                if let Err(e) = serve(cfg, listener, stop).await {
                    tracing::error!("simulated server stopped: {e}");
                }
            });
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
        })?;
    Ok(SimHandle {
        addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, fresh tester's finding 2: failed accepts (EMFILE at `ulimit -n 64`) pause
    /// 10, 20, 40 … ms up to 100 ms (a success starts over), and say one line at the first and
    /// then at most one per 10 s with the count since, not one per failure.
    #[test]
    fn failed_accepts_back_off_and_are_said_rarely() {
        use std::time::Duration;
        let emfile = "Too many open files (os error 24)";
        let t0 = std::time::Instant::now();
        let mut b = AcceptBackoff::default();
        let (p, line) = b.failed(emfile, t0);
        assert_eq!(p, Duration::from_millis(10));
        assert_eq!(
            line.as_deref(),
            Some("accept failed: Too many open files (os error 24): the open-file limit (ulimit -n) is below the connections asked of the sim; raise it (the hard limit too) or lower the client's concurrency (pausing accepts; counted in /metrics as inferbench_sim:accept_errors_total)")
        );
        let mut pauses = vec![];
        let mut lines = 0;
        for i in 1..=500u64 {
            let (p, line) = b.failed(emfile, t0 + Duration::from_millis(100 * i));
            pauses.push(p.as_millis());
            lines += usize::from(line.is_some());
        }
        assert_eq!(&pauses[..6], &[20, 40, 80, 100, 100, 100]);
        // 50 s of failures after the first: one line per 10 s.
        assert_eq!(lines, 5);
        let (_, line) = b.failed(emfile, t0 + Duration::from_secs(61));
        assert_eq!(
            line.as_deref(),
            Some("1 failed accept in the last 10 s: Too many open files (os error 24): the open-file limit (ulimit -n) is below the connections asked of the sim; raise it (the hard limit too) or lower the client's concurrency")
        );
        b.accepted();
        assert_eq!(
            b.failed(emfile, t0 + Duration::from_secs(62)).0,
            Duration::from_millis(10)
        );
        // Issue 39, fresh tester's finding 1: shedding starts once failures have lasted
        // SHED_AFTER (2 s) with no success between; a success starts over.
        let t1 = t0 + Duration::from_secs(62);
        assert!(!b.shedding(t1 + Duration::from_millis(1999)));
        b.failed(emfile, t1 + Duration::from_secs(1));
        assert!(b.shedding(t1 + Duration::from_secs(2)));
        b.accepted();
        assert!(!b.shedding(t1 + Duration::from_secs(3)));
        assert!(shed_response().starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert_eq!(
            accept_errors_metric(7).lines().last(),
            Some("inferbench_sim:accept_errors_total 7")
        );
    }

    /// `/metrics` names the settings a client cannot otherwise see (issue 39 §5): a standalone
    /// sim's max-num-seqs and time scale, escaped as Prometheus label values.
    #[test]
    fn config_info_names_the_settings() {
        let cfg = SimConfig {
            max_num_seqs: 32,
            time_scale: 4.0,
            ..SimConfig::default()
        };
        let res = cfg.resolve().unwrap();
        let m = config_info_metric(&cfg, &res);
        assert_eq!(
            m,
            "# HELP inferbench_sim:config_info The simulated server's settings (labels).\n\
             # TYPE inferbench_sim:config_info gauge\n\
             inferbench_sim:config_info{mode=\"timed\",hardware=\"h100\",model=\"llama-3.1-8b\",\
             precision=\"bf16\",tp=\"1\",time_scale=\"4\",max_num_seqs=\"32\",\
             max_num_batched_tokens=\"8192\",block_size=\"16\",gpu_memory_utilization=\"0.9\",\
             num_gpu_blocks=\"25720\",max_model_len=\"131072\",enable_prefix_caching=\"true\",\
             spec_decode=\"none\",reasoning_tokens=\"0\",eos_after=\"none\",fault=\"none\",\
             fault_rate=\"1\",fixed_step_s=\"none\",events_per_write=\"64\"} 1\n"
        );
    }

    /// Trial of issue 39 §5 (C): a sim started with `--fault` named it as a Rust debug string
    /// (`fault=FaultSpec { status: [500], … }`) in its settings, hence in group labels.
    #[test]
    fn config_info_names_a_fault_in_its_own_syntax() {
        let cfg = SimConfig {
            fault: Some(crate::fault::FaultSpec::parse("status=500/503,drop-after=2").unwrap()),
            fault_rate: 0.6,
            ..SimConfig::default()
        };
        let m = config_info_metric(&cfg, &cfg.resolve().unwrap());
        assert!(
            m.contains(",fault=\"status=500/503,drop-after=2\",fault_rate=\"0.6\","),
            "{m}"
        );
    }

    #[test]
    fn start_line_names_what_is_modelled() {
        let cfg = SimConfig::default();
        let info = describe(&cfg).unwrap();
        assert_eq!(
            start_line(&cfg, &info),
            "inferbench sim: Llama-3.1-8B bf16 on 1xH100 (timed mode, time scale 1), \
             max-num-seqs 256, KV cache 411520 tokens in 25720 blocks, max_model_len 131072"
        );
        // Catalogue names win over the spelling given; the mode and the scale are shown.
        let cfg = SimConfig {
            hardware: "h100".into(),
            mode: Mode::Instant,
            time_scale: 8.0,
            max_num_seqs: 16,
            ..SimConfig::default()
        };
        let line = start_line(&cfg, &describe(&cfg).unwrap());
        assert!(
            line.starts_with(
                "inferbench sim: Llama-3.1-8B bf16 on 1xH100 (instant mode, time scale 8), \
                 max-num-seqs 16, KV cache "
            ),
            "{line}"
        );
    }
}
