//! [`run_bench`]: warmups, then the profile phase under an arrival process and a concurrency
//! cap; records stream to `--save-requests` as they finish; the summary comes from
//! `inferbench_core::summary::summarize`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use inferbench_client::{CancellationToken, Client, ClientConfig, RequestMeta, RunClock};
use inferbench_core::metrics::{GoodputSlo, Metric};
use inferbench_core::summary::{summarize, RunSummary, SummaryContext};
use inferbench_core::{ErrorClass, Phase, RequestRecord};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::arrivals::{Arrivals, Schedule};
use crate::options::BenchOptions;
use crate::output;
use crate::progress::{Counters, Progress};
use crate::prompts::{self, PreparedPrompts};

/// Exit code when the failed fraction exceeds `--max-error-rate`.
pub const EXIT_ERROR_RATE: i32 = 1;
/// Exit code when the server became unreachable and the run stopped early.
pub const EXIT_SERVER_UNREACHABLE: i32 = 3;
/// Exit code after Ctrl-C / SIGTERM (128 + SIGINT, the shell convention).
pub const EXIT_INTERRUPTED: i32 = 130;

/// What one benchmark point produced.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    /// The vLLM-shaped summary (with the `inferbench` extras).
    pub summary: RunSummary,
    /// Where the result JSON was written (`--save-result`).
    pub result_path: Option<PathBuf>,
    /// Where the request records were written (`--save-requests`).
    pub records_path: Option<PathBuf>,
    /// Where `agg_<RESULT_FILENAME>.json` was written (job identity given).
    pub aggregate_path: Option<PathBuf>,
    /// Cut short by a signal (cancellation) or an unreachable server.
    pub interrupted: bool,
    /// 0 ok; [`EXIT_ERROR_RATE`], [`EXIT_SERVER_UNREACHABLE`] or [`EXIT_INTERRUPTED`].
    pub exit_code: i32,
    /// Human-readable problems worth printing (dead server, write failures).
    pub notes: Vec<String>,
    /// Every record, warmups included, in completion order.
    pub records: Vec<RequestRecord>,
}

/// Consecutive `connect` failures after which the server is declared unreachable
/// (at least this many, or the concurrency cap if larger).
const BREAKER_MIN: u64 = 32;

/// Stops the run when the server is clearly gone: a streak of connect failures.
#[derive(Debug)]
struct Breaker {
    threshold: u64,
    streak: AtomicU64,
    first_msg: Mutex<Option<String>>,
}

impl Breaker {
    fn observe(&self, rec: &RequestRecord) {
        if rec.error_class == Some(ErrorClass::Connect) {
            self.streak.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut m) = self.first_msg.lock() {
                if m.is_none() {
                    *m = rec.error.clone();
                }
            }
        } else if rec.error_class != Some(ErrorClass::Cancelled) {
            self.streak.store(0, Ordering::Relaxed);
        }
    }
    fn tripped(&self) -> bool {
        self.streak.load(Ordering::Relaxed) >= self.threshold
    }
}

/// Everything request tasks share.
struct Shared {
    client: Client,
    prompts: Arc<PreparedPrompts>,
    tx: mpsc::UnboundedSender<RequestRecord>,
    cancel: CancellationToken,
    breaker: Breaker,
    sem: Arc<Semaphore>,
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PhaseEnd {
    Completed,
    Cancelled,
    Unreachable,
}

struct PhaseSpec {
    phase: Phase,
    count: Option<u64>,
    until: Option<Instant>,
    arrivals: Arrivals,
    seed: u64,
    /// Always send this prompt (warmups use the first prompt, as vLLM/InferenceX).
    fixed_prompt: Option<usize>,
}

/// Runs one benchmark point: prepares prompts (unless given), sends warmups then the profile
/// phase, streams records to `--save-requests`, writes the result files and decides the exit
/// code. `cancel` (Ctrl-C/SIGTERM) ends the run early: finished records are kept, in-flight
/// requests end as `cancelled`, the summary is marked interrupted and still written.
///
/// Errors: invalid options (naming the flag), unreadable dataset/tokenizer (naming the file),
/// bad URL or header, an unwritable output path. A dead server is not an error: it yields
/// partial results, a note and [`EXIT_SERVER_UNREACHABLE`].
pub async fn run_bench(
    opts: BenchOptions,
    cancel: CancellationToken,
) -> anyhow::Result<BenchOutcome> {
    opts.validate()?;
    let prepared = match opts.prepared.clone() {
        Some(p) => p,
        None => {
            let o = opts.clone();
            Arc::new(
                tokio::task::spawn_blocking(move || prompts::prepare(&o))
                    .await
                    .context("prompt preparation panicked")??,
            )
        }
    };
    if prepared.prompts.is_empty() {
        anyhow::bail!("no prompts to send");
    }
    let clock = RunClock::start();
    let client = Client::with_clock(
        ClientConfig {
            base_url: opts.base_url.clone(),
            endpoint: opts.endpoint.clone(),
            backend: opts.backend,
            model: opts.model.clone(),
            api_key: opts.api_key.clone(),
            headers: opts.headers.clone(),
            extra_body: opts.extra_body.clone(),
            ignore_eos: opts.ignore_eos,
            idle_timeout: opts.idle_timeout,
            request_timeout: opts.request_timeout,
            token_counter: prepared.counter.clone(),
        },
        clock,
    )?;
    let sink = match &opts.save_requests {
        Some(p) => Some(output::RecordSink::create(p)?),
        None => None,
    };
    let goodput =
        GoodputSlo::parse(&opts.goodput).map_err(|e| anyhow::anyhow!("--goodput: {e}"))?;
    let mut percentile_metrics = Vec::new();
    for m in &opts.percentile_metrics {
        percentile_metrics.push(Metric::parse(m.trim()).with_context(|| {
            format!("--percentile-metrics: unknown metric {m:?} (ttft, tpot, itl, e2el)")
        })?);
    }

    let (tx, rx) = mpsc::unbounded_channel();
    let counters = Arc::new(Counters::default());
    let collector = tokio::spawn(output::collect(rx, sink, counters.clone()));
    let conc = opts.max_concurrency;
    let shared = Arc::new(Shared {
        client,
        prompts: prepared.clone(),
        tx,
        cancel: cancel.clone(),
        breaker: Breaker {
            threshold: BREAKER_MIN.max(conc.map_or(0, u64::from)),
            streak: AtomicU64::new(0),
            first_msg: Mutex::new(None),
        },
        sem: Arc::new(Semaphore::new(
            conc.map_or(Semaphore::MAX_PERMITS, |c| c as usize),
        )),
    });

    let date = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
    let n_warm = opts.resolved_num_warmups();
    let mut end = PhaseEnd::Completed;
    if n_warm > 0 {
        let progress = Progress::start(
            opts.progress,
            "warmup",
            Some(n_warm),
            None,
            counters.clone(),
        );
        end = run_phase(
            &shared,
            PhaseSpec {
                phase: Phase::Warmup,
                count: Some(n_warm),
                until: None,
                arrivals: Arrivals::Unlimited,
                seed: opts.seed,
                fixed_prompt: Some(0),
            },
        )
        .await;
        progress.finish().await;
        counters.reset();
    }
    let mut start_unix = unix_now();
    let mut end_unix = start_unix;
    if end == PhaseEnd::Completed {
        let arrivals = match opts.request_rate {
            Some(r) => Arrivals::Gamma {
                rate_rps: r,
                burstiness: opts.burstiness,
            },
            None => Arrivals::Unlimited,
        };
        let count = if opts.duration.is_some() {
            opts.num_prompts
        } else {
            Some(opts.resolved_num_prompts())
        };
        let progress = Progress::start(
            opts.progress,
            "bench",
            count,
            opts.duration,
            counters.clone(),
        );
        start_unix = unix_now();
        end = run_phase(
            &shared,
            PhaseSpec {
                phase: Phase::Profile,
                count,
                until: opts.duration.map(|d| Instant::now() + d),
                arrivals,
                seed: opts.seed,
                fixed_prompt: None,
            },
        )
        .await;
        end_unix = unix_now();
        progress.finish().await;
    }
    let mut notes = Vec::new();
    let unreachable_msg = shared.breaker.first_msg.lock().ok().and_then(|m| m.clone());
    drop(shared);
    let (records, write_error) = collector.await.context("record collector panicked")?;
    if let Some(e) = write_error {
        notes.push(format!(
            "writing --save-requests failed: {e} (records kept in memory for the summary)"
        ));
    }
    let interrupted = end != PhaseEnd::Completed;
    match end {
        PhaseEnd::Unreachable => notes.push(format!(
            "server unreachable at {}: {}; stopped early, results cover the finished requests",
            opts.base_url,
            unreachable_msg.unwrap_or_default()
        )),
        PhaseEnd::Cancelled => {
            notes.push("interrupted: results cover the finished requests".into())
        }
        PhaseEnd::Completed => {}
    }

    let ctx = SummaryContext {
        backend: opts.backend.name().to_string(),
        model_id: opts.model.clone(),
        tokenizer_id: prepared.tokenizer_id.clone(),
        best_of: 1,
        num_prompts: opts.resolved_num_prompts(),
        request_rate: opts.request_rate,
        burstiness: opts.burstiness,
        max_concurrency: opts.max_concurrency,
        percentile_metrics,
        metric_percentiles: opts.metric_percentiles.clone(),
        goodput,
        save_detailed: opts.save_detailed,
        date: date.clone(),
        benchmark_start_time_unix: Some(start_unix),
        benchmark_end_time_unix: Some(end_unix),
        duration_s: None,
        interrupted,
        metadata: opts.metadata.iter().cloned().collect(),
    };
    let summary = summarize(&records, &ctx);
    let written = output::write_results(&opts, &summary, &date)?;
    let exit_code = match end {
        PhaseEnd::Cancelled => EXIT_INTERRUPTED,
        PhaseEnd::Unreachable => EXIT_SERVER_UNREACHABLE,
        PhaseEnd::Completed if summary.error_rate() > opts.max_error_rate => {
            notes.push(format!(
                "error rate {:.2} % exceeds --max-error-rate {:.2} %",
                summary.error_rate() * 100.0,
                opts.max_error_rate * 100.0
            ));
            EXIT_ERROR_RATE
        }
        PhaseEnd::Completed => 0,
    };
    Ok(BenchOutcome {
        summary,
        result_path: written.result,
        records_path: opts.save_requests.clone(),
        aggregate_path: written.aggregate,
        interrupted,
        exit_code,
        notes,
        records,
    })
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Dispatches one phase and waits for all its requests.
async fn run_phase(sh: &Arc<Shared>, spec: PhaseSpec) -> PhaseEnd {
    let clock = sh.client.clock();
    let start_ns = clock.now_ns();
    let mut schedule = Schedule::new(spec.arrivals, spec.seed);
    let paced = schedule.is_paced();
    let mut tasks = JoinSet::new();
    let mut end = PhaseEnd::Completed;
    let n_prompts = sh.prompts.prompts.len();
    let far = Instant::now() + std::time::Duration::from_secs(100 * 365 * 24 * 3600);
    let until = spec.until.unwrap_or(far);
    let mut i: u64 = 0;
    // Every request task by id, until it has finished: a task that panicked still yields a
    // record, so the run's counts always add up.
    let mut spawned: HashMap<tokio::task::Id, (RequestMeta, usize, u64)> = HashMap::new();
    loop {
        if spec.count.is_some_and(|c| i >= c) {
            break;
        }
        if sh.cancel.is_cancelled() {
            end = PhaseEnd::Cancelled;
            break;
        }
        if sh.breaker.tripped() {
            end = PhaseEnd::Unreachable;
            break;
        }
        let scheduled_ns = start_ns + schedule.next().unwrap_or(0);
        let at = clock.instant_at(scheduled_ns);
        if at >= until {
            break;
        }
        if paced {
            tokio::select! {
                biased;
                _ = sh.cancel.cancelled() => { end = PhaseEnd::Cancelled; break; }
                _ = tokio::time::sleep_until(at.into()) => {}
            }
        }
        let released_ns = if paced { clock.now_ns() } else { scheduled_ns };
        // Closed loop (no rate): the dispatcher waits for a slot, so at most `conc` tasks exist.
        // Paced: every arrival gets its task at its deadline and queues for a slot itself, so
        // arrivals are never delayed by the cap (the wait shows as client queue time).
        let permit = if paced {
            None
        } else {
            let acquire = sh.sem.clone().acquire_owned();
            tokio::select! {
                biased;
                _ = sh.cancel.cancelled() => { end = PhaseEnd::Cancelled; break; }
                _ = tokio::time::sleep_until(until.into()) => { break; }
                p = acquire => p.ok(),
            }
        };
        let idx = spec.fixed_prompt.unwrap_or((i % n_prompts as u64) as usize);
        let meta = RequestMeta {
            request_id: i,
            phase: spec.phase,
            scheduled_ns,
            conversation_id: sh.prompts.prompts[idx].conversation_id.clone(),
            turn: sh.prompts.prompts[idx].turn,
        };
        while let Some(r) = tasks.try_join_next_with_id() {
            account(sh, &mut spawned, r);
        }
        let handle = tasks.spawn(request_task(
            sh.clone(),
            idx,
            meta.clone(),
            released_ns,
            permit,
        ));
        spawned.insert(handle.id(), (meta, idx, released_ns));
        i += 1;
    }
    while let Some(r) = tasks.join_next_with_id().await {
        account(sh, &mut spawned, r);
    }
    if end == PhaseEnd::Completed && sh.breaker.tripped() {
        end = PhaseEnd::Unreachable;
    }
    end
}

/// Settles one finished request task: a normal end already sent its record; a task that
/// panicked (a bug, never the server's bytes alone) gets a failed record here instead of
/// vanishing from the run.
fn account(
    sh: &Shared,
    spawned: &mut HashMap<tokio::task::Id, (RequestMeta, usize, u64)>,
    r: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
) {
    let id = match &r {
        Ok((id, ())) => *id,
        Err(e) => e.id(),
    };
    let Some((meta, idx, released_ns)) = spawned.remove(&id) else {
        return;
    };
    let Err(e) = r else { return };
    let prompt = &sh.prompts.prompts[idx];
    let now = sh.client.clock().now_ns();
    let why = if e.is_panic() {
        let p = e.into_panic();
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        format!("internal error: the request task panicked ({msg}); a client bug")
    } else {
        "internal error: the request task was aborted".to_string()
    };
    let rec = RequestRecord {
        request_id: meta.request_id,
        conversation_id: meta.conversation_id,
        turn: meta.turn,
        phase: meta.phase,
        success: false,
        error_class: Some(ErrorClass::Malformed),
        error: Some(why),
        scheduled_ns: meta.scheduled_ns,
        released_ns: Some(released_ns),
        sent_ns: now.max(meta.scheduled_ns),
        end_ns: now.max(meta.scheduled_ns),
        prompt_tokens: prompt.prompt_tokens,
        prompt_tokens_client: prompt.prompt_tokens,
        max_tokens: prompt.max_tokens,
        ..Default::default()
    };
    sh.breaker.observe(&rec);
    let _ = sh.tx.send(rec);
}

async fn request_task(
    sh: Arc<Shared>,
    idx: usize,
    meta: RequestMeta,
    released_ns: u64,
    permit: Option<OwnedSemaphorePermit>,
) {
    let prompt = &sh.prompts.prompts[idx];
    let permit = match permit {
        Some(p) => Some(p),
        None => {
            tokio::select! {
                biased;
                _ = sh.cancel.cancelled() => None,
                p = sh.sem.clone().acquire_owned() => p.ok(),
            }
        }
    };
    let mut rec = match permit {
        Some(_) => sh.client.send(&prompt.input(), meta, &sh.cancel).await,
        None => {
            let now = sh.client.clock().now_ns();
            RequestRecord {
                request_id: meta.request_id,
                conversation_id: meta.conversation_id,
                turn: meta.turn,
                phase: meta.phase,
                success: false,
                error_class: Some(ErrorClass::Cancelled),
                error: Some("cancelled while waiting for a concurrency slot".into()),
                scheduled_ns: meta.scheduled_ns,
                sent_ns: now,
                end_ns: now,
                prompt_tokens: prompt.prompt_tokens,
                prompt_tokens_client: prompt.prompt_tokens,
                max_tokens: prompt.max_tokens,
                ..Default::default()
            }
        }
    };
    drop(permit);
    rec.released_ns = Some(released_ns);
    sh.breaker.observe(&rec);
    let _ = sh.tx.send(rec);
}
