//! The client's own ceiling (`inferbench selftest`): closed-loop streams against a server that
//! outruns the client (`shared/tools/sse-instant --coalesce`, or any zero-latency
//! OpenAI-compatible server), measuring streamed tokens/s and requests/s per client CPU second,
//! whether the requested concurrency was held, CPU per token, RSS per in-flight stream, and
//! whether our token totals equal the server's.
//!
//! Each level is a `bench` run ([`run_bench`]: the same prompts, closed-loop workers, client,
//! records and summary as `inferbench bench`), so the ceiling it reports is bench's own (issue
//! 14: a separate loop held 511.6 of 512 where bench held 273). CPU is bench's own reading of
//! the profile phase (`/proc/self/stat`, user + system, all threads), RSS from
//! `/proc/self/status`; on other systems those fields are `None`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::{Backend, CancellationToken};
use inferbench_core::Phase;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::options::BenchOptions;
use crate::run::run_bench;

/// What to measure.
#[derive(Debug, Clone)]
pub struct SelftestOptions {
    /// Server root (e.g. `http://127.0.0.1:8000` where `sse-instant --coalesce` listens).
    pub base_url: String,
    /// Model name sent.
    pub model: String,
    /// API flavour (completions by default).
    pub backend: Backend,
    /// Output tokens per request (`max_tokens`, default 256 as the reference runs).
    pub tokens_per_request: u32,
    /// Concurrency levels, one measurement each (default 64 and 512).
    pub concurrency: Vec<u32>,
    /// Sending window per level (default 10 s); in-flight streams then finish.
    pub duration: Duration,
    /// The most records a level keeps before it stops sending
    /// ([`BenchOptions::record_bound`]; the CLI derives it from `ulimit -v`); `None`: none.
    pub record_bound: Option<crate::options::RecordBound>,
}

impl Default for SelftestOptions {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8000".into(),
            model: "selftest".into(),
            backend: Backend::OpenAiCompletions,
            tokens_per_request: 256,
            concurrency: vec![64, 512],
            duration: Duration::from_secs(10),
            record_bound: None,
        }
    }
}

/// One concurrency level's measurements. Rates per wall second unless named per CPU second.
#[derive(Debug, Clone, Serialize)]
pub struct SelftestPoint {
    /// Requested concurrency.
    pub concurrency: u32,
    /// Wall time from the first send to the last completion, s.
    pub wall_s: f64,
    /// Requests finished.
    pub requests: u64,
    /// Why the level stopped sending before its duration ended, when it did: its records
    /// reached what `ulimit -v` holds ([`SelftestOptions::record_bound`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_reason: Option<String>,
    /// Requests failed (any class).
    pub failed: u64,
    /// The first failure's class and message (`http_status: …`), when any request failed
    /// (trial 11: a wrong `--model` failed every request and nothing said why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Σ `usage.completion_tokens` of successful requests.
    pub usage_tokens: u64,
    /// Σ token-bearing chunks received (sse-instant sends one token per chunk).
    pub chunk_tokens: u64,
    /// The server's own count of tokens sent in the window (`GET /stats` `tokens`), when the
    /// server has that endpoint.
    pub server_tokens: Option<u64>,
    /// Σ usage tokens / wall s.
    pub tokens_per_s: f64,
    /// Requests / wall s.
    pub requests_per_s: f64,
    /// Client CPU (user + system, all threads) in the window, s.
    pub cpu_s: Option<f64>,
    /// Tokens per client CPU second: the per-core ceiling.
    pub tokens_per_cpu_s: Option<f64>,
    /// Requests per client CPU second.
    pub requests_per_cpu_s: Option<f64>,
    /// Client CPU per token, ns.
    pub cpu_ns_per_token: Option<f64>,
    /// The client's slots held while sending (`inferbench.concurrency.slots_busy_sending`,
    /// each request until this process read it; `mean_in_flight_sending` without kernel
    /// stamps): from the first to the last send.
    pub avg_in_flight: f64,
    /// `avg_in_flight / concurrency`.
    pub held_ratio: f64,
    /// The server's time-averaged in-flight count (`inflight_avg` of sse-instant), when given.
    pub server_avg_in_flight: Option<f64>,
    /// TTFT mean, ms, as bench reports it (on an instant server: the client's own delay).
    pub ttft_mean_ms: Option<f64>,
    /// ITL mean, ms, as bench reports it.
    pub itl_mean_ms: Option<f64>,
    /// Bench's client self-check verdict (`inferbench.client.client_bound`).
    pub client_bound: Option<bool>,
    /// RSS before the level started, KiB.
    pub rss_base_kib: Option<u64>,
    /// Peak RSS sampled every 50 ms during the level, KiB.
    pub rss_peak_kib: Option<u64>,
    /// (peak − base) / concurrency, KiB per in-flight stream (prompt bytes are ~10 here).
    pub rss_per_stream_kib: Option<f64>,
}

/// CPU seconds (user + system) of this process from `/proc/self/stat` (USER_HZ = 100).
pub fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Seconds this process's threads have spent runnable but waiting for a CPU, summed over the
/// threads alive now (Linux `/proc/self/task/<tid>/schedstat`, its second field, ns; threads
/// that already exited are not counted). `None` where the kernel does not say.
pub fn runqueue_wait_s() -> Option<f64> {
    let mut total_ns: u64 = 0;
    let mut any = false;
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Ok(s) = std::fs::read_to_string(e.path().join("schedstat")) else {
            continue;
        };
        if let Some(w) = s
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.parse::<u64>().ok())
        {
            total_ns = total_ns.saturating_add(w);
            any = true;
        }
    }
    any.then(|| total_ns as f64 / 1e9)
}

/// Resident set size of this process in KiB (`VmRSS`).
pub fn process_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Minimal `METHOD path` over a fresh connection, returning the JSON body (for `/stats`).
async fn http_json(base: &str, method: &str, path: &str) -> Option<Value> {
    let uri: http::Uri = base.parse().ok()?;
    let host = uri.host()?;
    let port = uri.port_u16().unwrap_or(80);
    let mut s = tokio::net::TcpStream::connect((host, port)).await.ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.ok()?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    // The body may be chunked; take the JSON object between the first '{' and the last '}'.
    let (a, b) = (body.find('{')?, body.rfind('}')?);
    serde_json::from_str(&body[a..=b]).ok()
}

/// Prompt length of the selftest's requests, tokens (issue 14's harness: 32-token prompts).
pub const PROMPT_TOKENS: u32 = 32;

/// Measures one concurrency level through the same path as `inferbench bench` ([`run_bench`]:
/// random prompts, closed loop at `concurrency`, `duration` of sending, the records kept and
/// summarized), so what it reports is what a bench run of that shape gets. The calling runtime
/// decides how many cores the client uses (the CLI uses bench's multi-threaded runtime with
/// `--client-threads` workers, one by default).
/// Memory figures include the records a bench run keeps. Errors: the server unreachable.
/// `cancel` (the CLI's shutdown token: Ctrl-C, SIGTERM, SIGHUP) cuts the level short as it
/// cuts a bench run; the caller then stops.
pub async fn measure(
    opts: &SelftestOptions,
    concurrency: u32,
    cancel: &CancellationToken,
) -> anyhow::Result<SelftestPoint> {
    let _ = http_json(&opts.base_url, "POST", "/stats/reset").await;
    let mut bench = BenchOptions {
        backend: opts.backend,
        base_url: opts.base_url.clone(),
        model: opts.model.clone(),
        random_input_len: PROMPT_TOKENS,
        random_output_len: opts.tokens_per_request,
        ignore_eos: true,
        max_concurrency: Some(concurrency),
        duration: Some(opts.duration),
        // Duration mode without a request count: 10 prompts per slot are prepared and cycled.
        num_prompts: None,
        num_warmups: Some(0),
        server_metrics: false,
        power: inferbench_telemetry::sampler::PowerMode::Off,
        idle_timeout: Duration::from_secs(30),
        progress: crate::options::ProgressMode::Off,
        max_error_rate: 1.0,
        record_bound: opts.record_bound,
        ..BenchOptions::default()
    };
    // Prompts (and the tokenizer) first, so the memory figures are the run's alone.
    let o = bench.clone();
    bench.prepared = Some(Arc::new(
        tokio::task::spawn_blocking(move || crate::prompts::prepare(&o)).await??,
    ));
    let rss_base = process_rss_kib();
    let peak = Arc::new(AtomicU64::new(rss_base.unwrap_or(0)));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            let mut iv = tokio::time::interval(Duration::from_millis(50));
            loop {
                iv.tick().await;
                if let Some(r) = process_rss_kib() {
                    peak.fetch_max(r, Ordering::Relaxed);
                }
            }
        })
    };
    let out = run_bench(bench, cancel.clone()).await;
    sampler.abort();
    let out = out?;
    anyhow::ensure!(
        out.end != crate::RunEnd::Unreachable,
        "cannot reach the server at {}",
        opts.base_url
    );
    let stats = http_json(&opts.base_url, "GET", "/stats").await;
    let s = &out.summary;
    let prof = || out.records.iter().filter(|r| r.phase == Phase::Profile);
    let requests = prof().count() as u64;
    let usage_tokens: u64 = prof()
        .filter(|r| r.success)
        .map(|r| u64::from(r.completion_tokens))
        .sum();
    let chunk_tokens: u64 = prof().map(|r| r.chunk_count() as u64).sum();
    let wall = s.duration;
    let cpu_s = s.inferbench.client.as_ref().map(|c| c.cpu_s);
    let per_cpu = |n: u64| cpu_s.filter(|c| *c > 0.0).map(|c| n as f64 / c);
    // The client's slots held (each request until read); with kernel receive stamps the
    // server's own in-flight count is far lower on an instant server, since every response
    // is there at once and waits for the client.
    let c = &s.inferbench.concurrency;
    let avg_in_flight = c
        .slots_busy_sending
        .or(c.mean_in_flight_sending)
        .unwrap_or(c.mean_in_flight);
    let rss_peak = rss_base.map(|_| peak.load(Ordering::Relaxed));
    Ok(SelftestPoint {
        concurrency,
        wall_s: wall,
        requests,
        stopped_reason: s.inferbench.stopped_reason.clone(),
        failed: s.inferbench.failed,
        first_error: s
            .inferbench
            .error_samples
            .iter()
            .next()
            .map(|(class, msg)| format!("{class}: {msg}")),
        usage_tokens,
        chunk_tokens,
        server_tokens: stats.as_ref().and_then(|s| s["tokens"].as_u64()),
        tokens_per_s: if wall > 0.0 {
            usage_tokens as f64 / wall
        } else {
            0.0
        },
        requests_per_s: if wall > 0.0 {
            requests as f64 / wall
        } else {
            0.0
        },
        cpu_s,
        tokens_per_cpu_s: per_cpu(usage_tokens),
        requests_per_cpu_s: per_cpu(requests),
        cpu_ns_per_token: cpu_s
            .filter(|_| usage_tokens > 0)
            .map(|c| c * 1e9 / usage_tokens as f64),
        avg_in_flight,
        held_ratio: avg_in_flight / f64::from(concurrency.max(1)),
        server_avg_in_flight: stats.as_ref().and_then(|s| s["inflight_avg"].as_f64()),
        ttft_mean_ms: metric(s, "mean_ttft_ms"),
        itl_mean_ms: metric(s, "mean_itl_ms"),
        client_bound: s.inferbench.client.as_ref().map(|c| c.client_bound),
        rss_base_kib: rss_base,
        rss_peak_kib: rss_peak,
        rss_per_stream_kib: match (rss_base, rss_peak) {
            (Some(b), Some(p)) => Some(p.saturating_sub(b) as f64 / f64::from(concurrency.max(1))),
            _ => None,
        },
    })
}

/// A vLLM metric of the summary (`mean_ttft_ms`, …), when present ([`RunSummary::metric`]:
/// a latency statistic from its typed distribution).
///
/// [`RunSummary::metric`]: inferbench_core::summary::RunSummary::metric
fn metric(s: &inferbench_core::summary::RunSummary, key: &str) -> Option<f64> {
    s.metric(key)
}

/// Parser-only ceiling: CPU ns per event to frame and interpret a typical completions stream
/// (`events` token chunks of ~190 bytes each, as sse-instant writes them, plus usage and
/// `[DONE]`), fed in 16 KiB pieces, over at least `min_events` events. No I/O.
pub fn parse_ns_per_event(events: u32, min_events: u64) -> f64 {
    use inferbench_client::openai::Interpreter;
    use inferbench_client::sse::SseParser;
    use inferbench_core::RequestRecord;
    const WORDS: [&str; 4] = [" the", " of", " and", " to"];
    let mut body = Vec::new();
    for i in 0..events {
        body.extend_from_slice(
            format!(
                "data: {{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"selftest\",\"choices\":[{{\"index\":0,\"text\":\"{}\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}}]}}\n\n",
                WORDS[i as usize % 4]
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":2,\"completion_tokens\":{events}}}}}\n\ndata: [DONE]\n\n").as_bytes(),
    );
    let rounds = (min_events / u64::from(events.max(1))).max(1);
    let cpu0 = process_cpu_s();
    // Real CPU work, so always the system clock (never a test's virtual one).
    let clock = inferbench_client::RunClock::start();
    let mut total = 0u64;
    for _ in 0..rounds {
        let mut p = SseParser::new();
        let mut it = Interpreter::new();
        let mut rec = RequestRecord::default();
        for piece in body.chunks(16 * 1024) {
            let _ = p.feed(piece, |ev| it.on_event(ev, 1, &mut rec));
        }
        let _ = p.finish(|ev| it.on_event(ev, 1, &mut rec));
        total += rec.chunks.len() as u64;
    }
    // CPU time when available (the figure must not count time the core spent on other
    // processes); wall time otherwise.
    let ns = match (cpu0, process_cpu_s()) {
        (Some(a), Some(b)) if b > a => (b - a) * 1e9,
        _ => clock.now_ns() as f64,
    };
    ns / total.max(1) as f64
}

/// A plain-text table of the points: tok/s per wall and per client CPU second, the
/// concurrency held (bench's time-averaged in flight while sending ÷ requested), TTFT and ITL
/// means in ms as bench reports them, bench's `client_bound` verdict, the token totals (usage /
/// chunks / the server's count) and peak RSS growth per stream in KiB.
pub fn render(points: &[SelftestPoint]) -> String {
    let opt = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |x| format!("{x:.p$}"));
    let mut o = String::from(
        "conc  requests  failed  tok/s(wall)  tok/CPU-s   req/CPU-s  CPU ns/tok  held   TTFT ms  ITL ms  client_bound  tokens(usage/chunks/server)     KiB/stream\n",
    );
    for p in points {
        o.push_str(&format!(
            "{:<5} {:<9} {:<7} {:<12.0} {:<11} {:<10} {:<11} {:<6.3} {:<8} {:<7} {:<13} {:<31} {}\n",
            p.concurrency,
            p.requests,
            p.failed,
            p.tokens_per_s,
            opt(p.tokens_per_cpu_s, 0),
            opt(p.requests_per_cpu_s, 0),
            opt(p.cpu_ns_per_token, 0),
            p.held_ratio,
            opt(p.ttft_mean_ms, 2),
            opt(p.itl_mean_ms, 3),
            p.client_bound.map_or("-".into(), |b| b.to_string()),
            format!(
                "{}/{}/{}",
                p.usage_tokens,
                p.chunk_tokens,
                p.server_tokens.map_or("-".into(), |s| s.to_string())
            ),
            opt(p.rss_per_stream_kib, 1),
        ));
    }
    // Trial 12: `held` had no unit and KiB/stream looked odd at low concurrency. Trial 24: the
    // footer said the client was saturated on purpose under `client_bound false`.
    let not_bound: Vec<String> = (points.iter())
        .filter(|p| p.client_bound == Some(false))
        .map(|p| p.concurrency.to_string())
        .collect();
    let verdict = if !not_bound.is_empty() {
        format!(
            " (false at concurrency {}: the client was not the limit there, so those figures are \
             not its ceiling)",
            not_bound.join(", ")
        )
    } else if !points.is_empty() && points.iter().all(|p| p.client_bound == Some(true)) {
        " (expected here: the selftest saturates the client on purpose)".to_string()
    } else {
        String::new()
    };
    o.push_str(&format!(
        "held: share of the requested concurrency the client's slots kept busy (1.000 = all); \
         KiB/stream: peak RSS growth / concurrency, which includes what bench keeps of every \
         finished request, so it is larger at low concurrency; client_bound: bench's own \
         self-check said the client, not the server, limited the run{verdict}; tokens: output \
         tokens counted from the server's usage / from the streamed chunks / by the server \
         itself (all three equal when nothing was lost)\n",
    ));
    o
}

/// The mean ITL (ms) above which a level's server is taken for a timed one, not an instant
/// one. An instant server (`inferbench sim --mode instant`, sse-instant) sends every token of a
/// response at once, so the client sees inter-token gaps of microseconds even when saturated;
/// a server that paces its tokens (the timed sim: 7.5 ms) is 1 ms or more apart.
pub const INSTANT_MAX_ITL_MS: f64 = 1.0;

/// The warning (one line) when some level of `points` ran against a server that is not
/// instant (mean ITL above [`INSTANT_MAX_ITL_MS`]): the selftest's figures then measure that
/// server, not the client. `None` when every level's ITL is below it or unknown.
pub fn not_instant(points: &[SelftestPoint]) -> Option<String> {
    let slow: Vec<String> = (points.iter())
        .filter(|p| p.itl_mean_ms.is_some_and(|itl| itl > INSTANT_MAX_ITL_MS))
        .map(|p| {
            let ttft = p
                .ttft_mean_ms
                .map_or(String::new(), |t| format!(", TTFT {t:.2} ms"));
            format!(
                "ITL {:.3} ms{ttft} at concurrency {}",
                p.itl_mean_ms.unwrap_or_default(),
                p.concurrency
            )
        })
        .collect();
    if slow.is_empty() {
        return None;
    }
    Some(format!(
        "selftest: warning: the server is not an instant one (mean {}; an instant server's ITL \
         stays under {INSTANT_MAX_ITL_MS} ms): these figures measure the server, not the client \
         (serve with `inferbench sim --mode instant` or sse-instant, or pass --spawn-server)\n",
        slow.join("; ")
    ))
}

/// A server process started for a selftest ([`spawn_server`]); killed and reaped when dropped.
pub struct SpawnedServer(std::process::Child);

impl Drop for SpawnedServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the zero-latency server `bin` (sse-instant) with `--coalesce --port <free> --threads
/// threads`, under `taskset -c cpus` when given, and waits (up to 5 s) until it listens.
/// Returns it and its URL. Errors name `--spawn-server`.
pub fn spawn_server(
    bin: &std::path::Path,
    cpus: Option<&str>,
    threads: u32,
) -> anyhow::Result<(SpawnedServer, String)> {
    use anyhow::Context as _;
    use std::process::{Command, Stdio};
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut cmd = match cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus]).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(["--coalesce", "--port", &port.to_string()])
        .args(["--threads", &threads.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // The server ends with this process however it ends (issue 39: SIGTERM or SIGHUP to the
    // selftest alone, or an abort, left it running): the kernel sends it SIGTERM when the
    // thread that started it (the main thread) exits. `taskset` execs the server, which keeps
    // the setting.
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: only async-signal-safe calls between fork and exec: prctl and getppid.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have ended before the setting took: end now.
                if libc::getppid() == 1 {
                    libc::_exit(0);
                }
                Ok(())
            });
        }
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("--spawn-server: cannot start {}", bin.display()))?;
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((SpawnedServer(child), url));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!(
        "--spawn-server: {} did not listen on {url} within 5 s",
        bin.display()
    )
}

/// What is wrong with `points` (stderr lines): token totals that differ from the server's
/// count, or failed requests with the first error of each level; `None` when all agree.
pub fn problems(points: &[SelftestPoint]) -> Option<String> {
    let mismatch = points.iter().any(|p| {
        p.failed > 0
            || p.usage_tokens != p.chunk_tokens
            || p.server_tokens.is_some_and(|s| s != p.chunk_tokens)
    });
    if !mismatch {
        return None;
    }
    let mut out =
        String::from("selftest: token totals differ from the server's count or requests failed\n");
    for p in points.iter().filter(|p| p.failed > 0) {
        out.push_str(&format!(
            "  conc {}: {} request(s) failed, e.g. {}\n",
            p.concurrency,
            p.failed,
            p.first_error.as_deref().unwrap_or("(no message)")
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level with the given latencies and verdict; the rest as an instant run's.
    fn point(conc: u32, ttft: f64, itl: f64, client_bound: Option<bool>) -> SelftestPoint {
        SelftestPoint {
            concurrency: conc,
            wall_s: 1.0,
            requests: 10,
            stopped_reason: None,
            failed: 0,
            first_error: None,
            usage_tokens: 160,
            chunk_tokens: 160,
            server_tokens: Some(160),
            tokens_per_s: 160.0,
            requests_per_s: 10.0,
            cpu_s: Some(1.0),
            tokens_per_cpu_s: Some(160.0),
            requests_per_cpu_s: Some(10.0),
            cpu_ns_per_token: Some(6.25e6),
            avg_in_flight: f64::from(conc),
            held_ratio: 1.0,
            server_avg_in_flight: None,
            ttft_mean_ms: Some(ttft),
            itl_mean_ms: Some(itl),
            client_bound,
            rss_base_kib: None,
            rss_peak_kib: None,
            rss_per_stream_kib: None,
        }
    }

    /// Trial 24: against the timed sim (TTFT 56 ms, ITL 7.5 ms, `client_bound false`) nothing
    /// said the server was not instant, and the footer claimed the client was saturated.
    #[test]
    fn a_timed_server_is_named_and_the_footer_follows_client_bound() {
        let timed = [
            point(64, 56.0, 7.5, Some(false)),
            point(512, 60.25, 7.6, Some(false)),
        ];
        assert_eq!(
            not_instant(&timed).as_deref(),
            Some(
                "selftest: warning: the server is not an instant one (mean ITL 7.500 ms, TTFT \
                 56.00 ms at concurrency 64; ITL 7.600 ms, TTFT 60.25 ms at concurrency 512; an \
                 instant server's ITL stays under 1 ms): these figures measure the server, not \
                 the client (serve with `inferbench sim --mode instant` or sse-instant, or pass \
                 --spawn-server)\n"
            )
        );
        let table = render(&timed);
        assert!(
            table.contains(
                "client_bound: bench's own self-check said the client, not the server, limited \
                 the run (false at concurrency 64, 512: the client was not the limit there, so \
                 those figures are not its ceiling); tokens:"
            ) && !table.contains("saturates the client on purpose"),
            "{table}"
        );
        // An instant server: sub-millisecond ITL, even with a long TTFT from a saturated
        // client; the footer's claim holds.
        let instant = [
            point(64, 3.0, 0.004, Some(true)),
            point(512, 80.0, 0.9, Some(true)),
        ];
        assert_eq!(not_instant(&instant), None);
        assert!(render(&instant).contains(
            "limited the run (expected here: the selftest saturates the client on purpose); \
             tokens:"
        ));
        // Unknown verdicts claim nothing.
        let unknown = [point(64, 3.0, 0.004, None)];
        assert!(render(&unknown).contains("limited the run; tokens:"));
    }

    #[test]
    fn proc_readers_work_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_s().is_some());
            assert!(process_rss_kib().unwrap() > 0);
        }
    }
}
