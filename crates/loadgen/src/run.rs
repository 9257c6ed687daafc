//! [`run_bench`]: warmups, then the profile phase under an arrival process and a concurrency
//! cap; records stream to `--save-requests` as they finish; the summary comes from
//! `inferbench_core::summary::summarize`.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Instant, UNIX_EPOCH};

use anyhow::Context;
use futures_util::FutureExt;
use inferbench_client::{
    CancellationToken, Client, ClientConfig, ClockSource, RequestMeta, RunClock,
};
use inferbench_core::metrics::{GoodputSlo, Metric};
use inferbench_core::summary::{summarize, PowerSummary, RunSummary, StopReason, SummaryContext};
use inferbench_core::{ErrorClass, Phase, RequestRecord, RunEnd};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::arrivals::{Arrivals, Schedule};
use crate::options::{BenchOptions, DatasetName, ProgressMode};
use crate::output;
use crate::progress::{Counters, Progress};
use crate::prompts::{self, PreparedPrompts};
use crate::server_cache;
use inferbench_core::server_metrics;
use inferbench_telemetry::sampler::PowerMode;
use inferbench_telemetry::scrape::{self, Scraper};

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
    /// How the point ended: passed; a gate failed (the failed fraction over
    /// `--max-error-rate`, the anomalous over `--max-anomaly-rate`, nothing measured, results
    /// not written, power not valid with `--require-power`); the server unreachable (a streak
    /// of connect failures stopped the run early, or every finished request of a shorter run
    /// failed to connect); or interrupted (Ctrl-C / SIGTERM). The CLI maps it to the exit code.
    pub end: RunEnd,
    /// Human-readable problems worth printing (dead server, write failures); the verdict's
    /// note among them.
    pub notes: Vec<String>,
    /// Why the run did not pass (the note that explains an `end` other than a pass, typed), `None`
    /// for a pass.
    pub verdict: Option<Verdict>,
    /// Every record, warmups included, in completion order, [`RequestRecord::compact`]ed
    /// (no chunks, no text: those are in `records_path`) unless `--save-detailed` kept them
    /// whole. A few hundred bytes each, whatever the output length (issue 14).
    pub records: Vec<RequestRecord>,
}

/// Why a run did not pass: the note that explains its exit code (also in
/// [`BenchOutcome::notes`]) and its kind, which callers act on instead of the note's words
/// (the sweep runner quotes it as the point's failure and leaves the interruption to its own
/// progress line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What ended the run this way.
    pub kind: VerdictKind,
    /// The note a person reads, one line.
    pub note: String,
}

/// What a [`Verdict`] is about, with the exit code it comes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictKind {
    /// Stopped by a signal ([`RunEnd::Interrupted`]).
    Interrupted,
    /// A streak of connect failures stopped it ([`RunEnd::Unreachable`]).
    ServerUnreachable,
    /// Every warmup request failed, so the profile did not run ([`RunEnd::GateFailed`]).
    WarmupsFailed,
    /// No profile request succeeded ([`RunEnd::GateFailed`]).
    NothingMeasured,
    /// More requests failed than `--max-error-rate` allows ([`RunEnd::GateFailed`]).
    ErrorRate,
    /// More successful requests were anomalous than `--max-anomaly-rate` allows
    /// ([`RunEnd::GateFailed`]).
    AnomalyRate,
    /// GPU power was not valid under `--require-power` ([`RunEnd::GateFailed`]).
    PowerInvalid,
}

impl Verdict {
    fn new(kind: VerdictKind, note: String) -> Verdict {
        Verdict { kind, note }
    }

    /// Whether this verdict says that nothing was measured (every warmup failed, or no
    /// profile request succeeded): the one that names the cause of the failures.
    fn measured_nothing(&self) -> bool {
        matches!(
            self.kind,
            VerdictKind::WarmupsFailed | VerdictKind::NothingMeasured
        )
    }
}

/// Consecutive `connect` failures after which the server is declared unreachable
/// (at least this many, or the concurrency cap if larger). Only an answer from the server (a
/// success, an HTTP error status, a malformed body) breaks the streak; cut or timed-out
/// streams do not.
const BREAKER_MIN: u64 = 32;

/// Stops the run when the server is clearly gone: a streak of connect failures.
#[derive(Debug)]
struct Breaker {
    threshold: u64,
    streak: AtomicU64,
    first_msg: Mutex<Option<String>>,
    /// Some request got past connecting (any outcome other than `connect` / `cancelled`).
    responded: std::sync::atomic::AtomicBool,
    /// The streak reached `threshold` once: the run stops, whatever finishes after (a request
    /// cut by the server's death ends as `stream_error` and resets the streak; read after the
    /// workers ended, the bare streak let a dead server's run end as completed, exit 1: trial).
    tripped: std::sync::atomic::AtomicBool,
    /// The first failure of any class but `cancelled` (its error text), for the note when
    /// every warmup failed.
    first_failure: Mutex<Option<String>>,
}

impl Breaker {
    fn observe(&self, rec: &RequestRecord) {
        if !rec.success && rec.error_class != Some(ErrorClass::Cancelled) {
            if let Ok(mut m) = self.first_failure.lock() {
                if m.is_none() {
                    *m = rec.error.clone();
                }
            }
        }
        if rec.error_class == Some(ErrorClass::Connect) {
            if self.streak.fetch_add(1, Ordering::Relaxed) + 1 >= self.threshold {
                self.tripped.store(true, Ordering::Relaxed);
            }
            if let Ok(mut m) = self.first_msg.lock() {
                if m.is_none() {
                    *m = rec.error.clone();
                }
            }
        } else if !matches!(
            rec.error_class,
            Some(ErrorClass::Cancelled | ErrorClass::ClientResource)
        ) {
            // A client out of its own files or ports says nothing about the server: neither
            // reached nor unreachable (issue 39: EMFILE was `connect`, "check --base-url").
            self.responded.store(true, Ordering::Relaxed);
            // Only an answer proves the server alive: a stream cut off or timed out is what
            // the requests in flight when it died end as (a streak reset by each of them
            // let a dead server's run make 58–63 connect failures instead of ≤ 48).
            if rec.success
                || matches!(
                    rec.error_class,
                    Some(ErrorClass::HttpStatus | ErrorClass::Malformed)
                )
            {
                self.streak.store(0, Ordering::Relaxed);
            }
        }
    }
    fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Relaxed)
    }
    /// Every finished request failed to connect (and there was at least one).
    fn never_reached(&self) -> bool {
        !self.responded.load(Ordering::Relaxed) && self.streak.load(Ordering::Relaxed) > 0
    }
    /// The first connect failure's text (if any) and the first failure's of any class but
    /// `cancelled` ("" without one): what the notes on an unreachable server or a failed
    /// warmup quote.
    fn report(&self) -> (Option<String>, String) {
        let unreachable_msg = self.first_msg.lock().ok().and_then(|m| m.clone());
        let first_failure = self
            .first_failure
            .lock()
            .ok()
            .and_then(|m| m.clone())
            .unwrap_or_default();
        (unreachable_msg, first_failure)
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
    /// `--max-concurrency` (`None` = no cap).
    cap: Option<u32>,
    /// Records sent to the collector so far (every phase).
    sent: AtomicU64,
    /// The early-stop rule's state (`BenchOptions::early_stop`), `None` without one.
    early: Option<crate::early_stop::Tracker>,
    /// A closed loop's first request id not sent after the early stop (`u64::MAX` until set:
    /// `Shared::within_last_round`).
    early_end: AtomicU64,
}

impl Shared {
    /// Hands a finished record to the collector.
    fn emit(&self, rec: RequestRecord) {
        if let Some(t) = &self.early {
            t.observe(&rec);
        }
        self.sent.fetch_add(1, Ordering::Release);
        let _ = self.tx.send(rec);
    }

    /// Whether request `i` of a closed loop of `round` requests in flight is still sent: always
    /// until the early-stop rule ends the profile; then only to complete the round, so that the
    /// point sends a whole number of rounds as the full protocol does (10 × conc): the first
    /// id fetched after the stop, rounded up to a multiple of `round`, is the end (set once;
    /// ids are handed out in order, so exactly the ids below it are sent).
    fn within_last_round(&self, i: u64, round: u64) -> bool {
        if !self.stopped_early() {
            return true;
        }
        let want = i.next_multiple_of(round.max(1));
        let end = match (self.early_end).compare_exchange(
            u64::MAX,
            want,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => want,
            Err(set) => set,
        };
        i < end
    }

    /// Whether the early-stop rule ended the profile: no more requests are sent.
    fn stopped_early(&self) -> bool {
        self.early
            .as_ref()
            .is_some_and(crate::early_stop::Tracker::stopped)
    }
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PhaseEnd {
    Completed,
    Cancelled,
    Unreachable,
    /// Every warmup failed: the profile was not run (vLLM's and InferenceX's "initial test
    /// run failed").
    Aborted,
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
/// partial results, a note and [`RunEnd::Unreachable`].
pub async fn run_bench(
    mut opts: BenchOptions,
    cancel: CancellationToken,
) -> anyhow::Result<BenchOutcome> {
    opts.validate()?;
    // Every output path, before the server is asked anything (issue 39 §8).
    output::check_output_paths(&opts)?;
    let mut notes = Vec::new();
    if opts.model.trim().is_empty() {
        opts.model = crate::hints::served_model(&opts.base_url, &opts.reach()).await?;
        notes.push(crate::hints::served_model_note(&opts.model));
    }
    let Some(prepared) = prepare_prompts(&opts, &cancel).await? else {
        return Ok(interrupted_before_start(&opts));
    };
    let client = bench_client(&opts, &prepared)?;
    // A closed loop holds its concurrency's connections (and a small margin), never more.
    if let Some(c) = opts.max_concurrency {
        client.limit_connections(c as usize);
    }
    let sink = match &opts.save_requests {
        Some(p) => Some(output::RecordSink::create(p)?),
        None => None,
    };
    let (goodput, percentile_metrics) = summary_flags(&opts)?;

    let (tx, rx) = mpsc::unbounded_channel();
    let counters = Arc::new(Counters::default());
    let collector = tokio::spawn(output::collect(
        rx,
        sink,
        counters.clone(),
        opts.save_detailed,
    ));
    let mut shared = shared_state(client, &prepared, tx, &cancel, opts.max_concurrency);
    if let Some(mut rule) = opts.early_stop {
        // The bias is bounded against the prompts this point would send without the rule.
        rule.planned = opts.resolved_num_prompts();
        if let Some(sh) = Arc::get_mut(&mut shared) {
            sh.early = Some(crate::early_stop::Tracker::new(rule));
        }
    }

    let date = run_date(opts.clock);
    // Held until the result is written (output::ResultClaim).
    let (opts, mut claim) = output::with_free_result_name(opts, &date);
    // GPU power for the whole point (power.csv beside the result), started before the
    // warmup so the stream brackets the profiling window.
    let power = start_power(&opts, &date, &mut notes).await?;
    let scraper = start_scraper(&opts).await;
    let scrape_missing = opts.server_metrics && scraper.is_none();
    let models = served_models(&opts).await;
    let n_warm = opts.resolved_num_warmups();
    let end = run_warmup(&shared, &opts, &counters, n_warm).await;
    let profile = run_profile(&shared, &opts, &counters, scraper.as_ref(), end).await;
    let end = profile.end;
    // A side file that cannot be written fails the point too (exit 1, issue 39 §8).
    let mut output_failed = false;
    let (server_metrics, first_scrape) = finish_scrape(
        scraper,
        &opts,
        &date,
        &profile,
        &mut notes,
        &mut output_failed,
    )
    .await;
    let simulator =
        (server_metrics.as_ref()).is_some_and(server_metrics::ServerMetricsSummary::is_simulator);
    let sim_header = shared.client.sim_time_scale();
    let (unreachable_msg, first_failure) = shared.breaker.report();
    let request_url = shared.client.uri().to_string();
    let proxy = shared.client.proxy().map(str::to_string);
    let stopped_early = shared.stopped_early();
    let fired = (shared.early.as_ref()).and_then(crate::early_stop::Tracker::fired);
    let early_noise = (shared.early.as_ref()).and_then(crate::early_stop::Tracker::noise);
    drop(shared);
    let (mut kept, write_error) = collector.await.context("record collector panicked")?;
    // A write that failed fails the point (exit 1, issue 39 §8), after writing what it can.
    let records_failed = write_error.is_some();
    output_failed |= records_failed;
    // What the result says of it (issue 39, fresh tester's finding 3: the result named the
    // truncated file with no reason, and `ingest` of it failed on every try).
    let records_cause = write_error.as_ref().map(|e| {
        format!(
            "the records file {} is incomplete: writing --save-requests failed ({e}); the \
             result does not name it, and the summary was computed from every record kept in \
             memory",
            opts.save_requests
                .as_deref()
                .map_or_else(String::new, |p| p.display().to_string())
        )
    });
    if let Some(e) = write_error {
        notes.push(format!(
            "writing --save-requests failed: {e} (records kept in memory for the summary; the \
             point fails, exit 1)"
        ));
    }
    let mut reasons = invalid_reasons(
        &opts,
        (&prepared, &kept.records),
        &counters,
        (server_metrics.as_ref(), sim_header),
        end,
        &mut notes,
    );
    let interrupted = end != PhaseEnd::Completed;
    let profile_records = kept
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .count() as u64;
    let profile_ok = kept
        .records
        .iter()
        .any(|r| r.phase == Phase::Profile && r.success);
    crate::power::drop_sampler_note(&mut notes, simulator, profile_ok);
    let ctx = summary_context(
        &opts,
        &prepared,
        (percentile_metrics, goodput),
        &date,
        &profile,
        (profile_records, stopped_early),
    );
    let (mut summary, itl_note) = kept.summarize(&ctx);
    if let Some(rule) = opts.early_stop {
        summary.inferbench.adaptive = true;
        summary.inferbench.adaptive_tolerance = Some(rule.tolerance);
        summary.inferbench.prompts_used = Some(profile_records);
        summary.inferbench.early_stop_noise = early_noise;
        // Said only when it saved prompts: a rule met at a check after the last send changed
        // nothing.
        let saved = profile_records < opts.resolved_num_prompts();
        if let (true, Some(a)) = (stopped_early && saved, fired) {
            notes.push(format!(
                "adaptive: the metrics were known to within {} % at 95 % confidence against \
                 the full protocol after {} of {} prompts (median TPOT: noise {:.2} % × {:.2} + \
                 bias {:.2} %; throughput: noise {:.2} % × {:.2} + bias {:.2} %; first round \
                 {:+.1} % E2EL); the point stopped there{}",
                rule.tolerance * 100.0,
                profile_records,
                opts.resolved_num_prompts(),
                a.tpot_noise * 100.0,
                a.noise_factor,
                a.tpot_bias * 100.0,
                a.rate_noise * 100.0,
                a.noise_factor,
                a.rate_bias * 100.0,
                a.first_round_excess * 100.0,
                pooled_words(&a, rule.pool.dof)
            ));
        }
    }
    // A --duration run that stopped sending at its record bound: the cause in the summary and
    // a warning; the point stands as a duration run that ended there.
    if let (Some(sent), Some(b)) = (profile.bounded, opts.record_bound) {
        let why = b.reason(sent);
        notes.push(format!(
            "warning: {why}; the run stopped sending there as at the end of its --duration \
             (requests in flight finished) and its summary covers them"
        ));
        summary.inferbench.stopped_reason = Some(why);
    }
    notes.extend(itl_note);
    notes.extend(kept.spill_note());
    let records = kept.records;
    judge_client(&opts, &mut summary, &profile, &mut notes, &mut reasons);
    judge_records(&records, &mut notes, &mut reasons);
    // Said once, by the verdict below; kept with the point so no view counts it. A point that
    // measured nothing is failed, not invalid (issue 39 §9): its cause is `failed_reason`.
    match gate_verdict(end, &opts, &summary, (profile_records, None)) {
        Some(v) if v.measured_nothing() => summary.inferbench.failed_reason = Some(v.note),
        _ => reasons.extend(gate_reason(end, &opts, &summary, profile_records)),
    }
    // A run cut short (interrupted, unreachable, aborted) before any profile request succeeded
    // is failed too, by the rule the store reads a summary with (issue 39, fresh tester's
    // finding 1: its summary had no `failed_reason`, and the store called it failed and
    // invalid at once).
    // Every warmup failed: the gate's own words, which say which requests failed and how
    // (the core rule's text says only that a gate stopped the run).
    if summary.completed == 0 && summary.inferbench.failed_reason.is_none() {
        summary.inferbench.failed_reason = Some(match end {
            PhaseEnd::Aborted => format!(
                "every warmup request failed ({n_warm} of {n_warm}; first: {}): the profile was \
                 not run, nothing measured",
                inferbench_core::text::one_line(&first_failure, 200)
            ),
            _ => inferbench_core::summary::nothing_measured_cause(
                Some(summary.inferbench.stop_reason),
                summary.inferbench.failed,
            ),
        });
    }
    // An incomplete records file fails the point (its cause beside any other).
    if let Some(cause) = records_cause {
        summary.inferbench.failed_reason = Some(match summary.inferbench.failed_reason.take() {
            Some(prev) => format!("{prev}; {cause}"),
            None => cause,
        });
    }
    summary.inferbench.server_metrics = server_metrics;
    // The server's settings (issue 39 §5): what it reported, and what the caller knows of
    // an engine it launched.
    summary.inferbench.server = inferbench_core::fingerprint::server_fingerprint(
        &opts.model,
        models.as_ref(),
        &first_scrape,
        &opts.server_settings,
    );
    // A failed point has no invalid reason: its cause is `failed_reason` (one status).
    summary.inferbench.invalid_reason = (!reasons.is_empty()
        && summary.inferbench.failed_reason.is_none())
    .then(|| reasons.join("; "));
    let power_validation = finish_power(power, &opts, &mut summary).await;
    let checks = (scrape_missing, request_url.as_str());
    let not_found = summary_notes(&opts, &summary, &records, checks, &mut notes).await;
    // The result names its records file, so `ingest` of the result alone stores them too.
    // Not an incomplete one: `ingest` would find it broken.
    summary.inferbench.requests_file = requests_file_name(&opts).filter(|_| !records_failed);
    summary.inferbench.allow_empty_content = opts.allow_empty_content;
    if let Some(p) = &proxy {
        notes.push(format!(
            "the requests went through the HTTP proxy {p} (--no-proxy: direct)"
        ));
    }
    summary.inferbench.proxy = proxy;
    summary.inferbench.tls_ca = (opts.tls.ca_file.as_ref()).map(|p| p.display().to_string());
    summary.inferbench.tls_insecure = opts.tls.insecure;
    summary.inferbench.header_templates = opts
        .header_templates
        .iter()
        .map(|t| format!("{}: {}", t.name, t.value))
        .collect();
    // A result that cannot be written is said, and fails the point (exit 1), but the summary
    // is still printed and the records kept (trial finding 4: exit 2 and no summary).
    let (written, write_failed) =
        match write_outputs(&opts, &summary, &date, claim.as_mut(), &mut notes) {
            Ok(w) => (w, output_failed),
            Err(e) => {
                notes.push(format!("the result was not written: {e:#}"));
                (output::Written::default(), true)
            }
        };
    let failure = (unreachable_msg, first_failure.as_str());
    // A run that measured nothing because the server refused it with 404 (a wrong --model)
    // says so in its verdict, once (trial 22: the warmups' 404 quoted, then the /v1/models
    // hint beside it).
    let hint = not_found.as_deref();
    let end_verdict = end_note(end, &opts, n_warm, failure, profile_ok, hint);
    let (run_end, gate_verdict) = decide_end(
        end,
        &opts,
        &summary,
        (profile_records, hint),
        power_validation.as_deref(),
        &mut notes,
    );
    let run_end = if write_failed && run_end.passed() {
        RunEnd::GateFailed
    } else {
        run_end
    };
    let verdict = end_verdict.or(gate_verdict);
    let folded = verdict.as_ref().is_some_and(Verdict::measured_nothing);
    notes.extend(verdict.iter().map(|v| v.note.clone()));
    notes.extend(not_found.filter(|_| !folded));
    Ok(BenchOutcome {
        summary,
        result_path: written.result,
        // Not named as written when its writes failed.
        records_path: opts.save_requests.clone().filter(|_| !records_failed),
        aggregate_path: written.aggregate,
        interrupted,
        end: run_end,
        notes,
        verdict,
        records,
    })
}

/// Starts the scraper of the server's `/metrics` when `--server-metrics` is on: a baseline
/// now, a mark at the profile start, one per `--server-metrics-interval`, a final one after
/// the profile (telemetry::scrape). `None` when off or the server has none.
async fn start_scraper(opts: &BenchOptions) -> Option<Scraper> {
    if opts.server_metrics {
        Scraper::start(&opts.base_url, opts.server_metrics_interval, &opts.reach()).await
    } else {
        None
    }
}

/// Writes the result files of `summary` (started at `date`; output::write_results_into, the
/// result through `claim`'s open file) and adds
/// the measured power to the InferenceX aggregate when one was written (a note in `notes` when
/// that fails). Errors: an unwritable result.
fn write_outputs(
    opts: &BenchOptions,
    summary: &RunSummary,
    date: &str,
    claim: Option<&mut output::ResultClaim>,
    notes: &mut Vec<String>,
) -> anyhow::Result<output::Written> {
    let written = output::write_results_into(opts, summary, date, claim)?;
    if let (Some(agg), Some(p)) = (&written.aggregate, &summary.inferbench.power) {
        if let Err(e) = patch_aggregate_power(agg, p) {
            notes.push(format!("adding power to {}: {e}", agg.display()));
        }
    }
    Ok(written)
}

/// Stops the power sampler `power` (if one ran) and adds its validated measurement over the
/// profiling window to `summary` (`inferbench.power`; the job's GPU count, when known, is
/// checked against the GPUs seen). Returns the path of its audit, `power_validation.json`.
async fn finish_power(
    power: Option<crate::power::PowerRun>,
    opts: &BenchOptions,
    summary: &mut RunSummary,
) -> Option<PathBuf> {
    let run = power?;
    let power_validation = run.validation().to_path_buf();
    let expected = opts
        .job_identity
        .as_ref()
        .and_then(|id| u32::try_from(id.num_gpus()).ok());
    summary.inferbench.power = Some(run.finish(summary, expected).await);
    Some(power_validation)
}

/// The notes on a finished summary, into `notes`: no Prometheus metrics from a server that
/// answered (`checks.0`: scraping was asked for and found none), the failures by class (not
/// the connect errors of a run stopped as unreachable, whose end note quotes them) and the
/// anomalies of the `records`. Returns the hint for HTTP 404 answers (asking the server at
/// `checks.1`, the request URL, for its models), which the caller says in the run's verdict
/// or beside it.
async fn summary_notes(
    opts: &BenchOptions,
    summary: &RunSummary,
    records: &[RequestRecord],
    (scrape_missing, request_url): (bool, &str),
    notes: &mut Vec<String>,
) -> Option<String> {
    // Said only of a server that answered: a dead one has its own message.
    if scrape_missing && summary.completed > 0 {
        notes.push(format!(
            "no Prometheus metrics at {}/metrics: no server metrics for this run",
            opts.base_url.trim_end_matches('/')
        ));
    }
    // A run stopped because the server is unreachable has its connect error quoted in its
    // end note already (trial 19: a dead port said "unreachable" three ways).
    let unreachable =
        summary.inferbench.stop_reason == inferbench_core::summary::StopReason::ServerUnreachable;
    // A 404 explained by the server's own /v1/models is said by that hint alone (trial 21:
    // a wrong --model's 404 was quoted three times).
    let not_found = not_found_note(opts, summary, request_url).await;
    let quoted: Vec<&str> = [
        unreachable.then_some(ErrorClass::Connect.as_str()),
        not_found
            .is_some()
            .then_some(ErrorClass::HttpStatus.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect();
    notes.extend(output::error_notes(summary, &quoted));
    notes.extend(output::anomaly_notes(summary, records));
    not_found
}

/// The prompts of the run: `opts.prepared` when given, else prepared from the dataset on a
/// blocking thread. `Ok(None)`: `cancel` fired during preparation (the run ends at once; the
/// blocking work stops at its next check or is abandoned with the process). Errors: the
/// preparation's (dataset, tokenizer), or no prompt at all.
async fn prepare_prompts(
    opts: &BenchOptions,
    cancel: &CancellationToken,
) -> anyhow::Result<Option<Arc<PreparedPrompts>>> {
    let prepared = match opts.prepared.clone() {
        Some(p) => p,
        None => {
            let o = opts.clone();
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let stop2 = stop.clone();
            let job = tokio::task::spawn_blocking(move || prompts::prepare_cancellable(&o, &stop2));
            // A signal during preparation ends the run at once (the blocking work stops at its
            // next check or is abandoned with the process).
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    stop.store(true, Ordering::Relaxed);
                    return Ok(None);
                }
                r = job => Arc::new(r.context("prompt preparation panicked")??),
            }
        }
    };
    if prepared.prompts.is_empty() {
        anyhow::bail!("no prompts to send");
    }
    Ok(Some(prompts::with_body_max_tokens(
        prepared,
        opts.body_max_tokens()?,
    )))
}

/// The HTTP client of the run, on a clock started now: the server, endpoint, backend, model,
/// headers and timeouts of `opts`, counting tokens with the prepared prompts' counter.
fn bench_client(opts: &BenchOptions, prepared: &PreparedPrompts) -> anyhow::Result<Client> {
    let clock = RunClock::start_on(opts.clock);
    Ok(Client::with_clock(
        ClientConfig {
            base_url: opts.base_url.clone(),
            endpoint: opts.endpoint.clone(),
            backend: opts.backend,
            model: opts.model.clone(),
            api_key: opts.api_key.clone(),
            headers: opts.headers.clone(),
            header_templates: opts.header_templates.clone(),
            allow_empty_content: opts.allow_empty_content,
            proxy: opts.proxy.clone(),
            no_proxy: opts.no_proxy_hosts.clone(),
            tls: opts.tls.clone(),
            extra_body: opts.extra_body.clone(),
            ignore_eos: opts.ignore_eos,
            max_tokens_field: opts.max_tokens_field,
            idle_timeout: opts.idle_timeout,
            request_timeout: opts.request_timeout,
            token_counter: prepared.counter.clone(),
            rx_timestamps: opts.rx_timestamps,
        },
        clock,
    )?)
}

/// `--goodput` (SLOs in ms) and `--percentile-metrics` parsed; errors name the flag.
fn summary_flags(opts: &BenchOptions) -> anyhow::Result<(GoodputSlo, Vec<Metric>)> {
    let goodput =
        GoodputSlo::parse(&opts.goodput).map_err(|e| anyhow::anyhow!("--goodput: {e}"))?;
    let mut percentile_metrics = Vec::new();
    for m in &opts.percentile_metrics {
        percentile_metrics.push(Metric::parse(m.trim()).with_context(|| {
            format!("--percentile-metrics: unknown metric {m:?} (ttft, tpot, itl, e2el)")
        })?);
    }
    Ok((goodput, percentile_metrics))
}

/// What the request tasks share: the client, the prompts, the records channel `tx`, the run's
/// `cancel`, a connect-failure breaker (its threshold the larger of [`BREAKER_MIN`] and the
/// cap) and the concurrency cap `conc` (`None`: unlimited) as a semaphore.
fn shared_state(
    client: Client,
    prepared: &Arc<PreparedPrompts>,
    tx: mpsc::UnboundedSender<RequestRecord>,
    cancel: &CancellationToken,
    conc: Option<u32>,
) -> Arc<Shared> {
    Arc::new(Shared {
        client,
        prompts: prepared.clone(),
        tx,
        cancel: cancel.clone(),
        breaker: Breaker {
            threshold: BREAKER_MIN.max(conc.map_or(0, u64::from)),
            streak: AtomicU64::new(0),
            first_msg: Mutex::new(None),
            first_failure: Mutex::new(None),
            responded: std::sync::atomic::AtomicBool::new(false),
            tripped: std::sync::atomic::AtomicBool::new(false),
        },
        sem: Arc::new(Semaphore::new(
            conc.map_or(Semaphore::MAX_PERMITS, |c| c as usize),
        )),
        cap: conc,
        sent: AtomicU64::new(0),
        early: None,
        early_end: AtomicU64::new(u64::MAX),
    })
}

/// Waits (up to 2 s) until every record sent so far has reached the collector, so that the
/// last progress line of a phase shows its final counts.
async fn settle(shared: &Shared, counters: &Counters) {
    let sent = shared.sent.load(Ordering::Acquire);
    counters
        .settle(
            sent,
            std::time::Duration::from_secs(2),
            shared.client.clock().source(),
        )
        .await;
}

/// Sends the `n_warm` warmup requests (the first prompt, unlimited arrivals, none when 0) with
/// their progress display. Returns how the phase ended; `Aborted` when every warmup failed (a
/// wrong `--model` or `--endpoint`, a server answering 4xx/5xx) but not only to connect
/// failures (those are the breaker's).
async fn run_warmup(
    shared: &Arc<Shared>,
    opts: &BenchOptions,
    counters: &Arc<Counters>,
    n_warm: u64,
) -> PhaseEnd {
    if n_warm == 0 {
        return PhaseEnd::Completed;
    }
    if !matches!(opts.progress, ProgressMode::Off) {
        inferbench_core::notice::line(&warmup_notice(n_warm, opts.num_warmups.is_some()));
    }
    let progress = Progress::start(
        opts.progress,
        "warmup",
        Some(n_warm),
        None,
        counters.clone(),
        opts.clock,
    );
    let mut end = run_phase(
        shared,
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
    settle(shared, counters).await;
    progress.finish().await;
    // Every warmup failed (a wrong --model or --endpoint, a server that answers 4xx/5xx):
    // sending the profile would only measure the failure (break test: 32k requests in 3 s).
    let (done, failed) = (
        counters.done.load(Ordering::Relaxed),
        counters.failed.load(Ordering::Relaxed),
    );
    // Every one failed to connect: the server is unreachable, and the profile is not sent
    // either (trial 13: 8 profile requests went to a closed port after 8 failed warmups).
    if end == PhaseEnd::Completed && done == n_warm && failed == n_warm {
        end = if shared.breaker.never_reached() {
            PhaseEnd::Unreachable
        } else {
            PhaseEnd::Aborted
        };
    }
    end
}

/// The profile phase as it ran.
struct ProfileRun {
    /// How the run ended (the warmup's end when the profile did not run).
    end: PhaseEnd,
    /// Profile start and end, unix seconds (both the profile start when it did not run).
    start_unix: f64,
    end_unix: f64,
    /// The client's own CPU over the profile: (CPU s, wall s), for the self-check.
    client_cpu: Option<(f64, f64)>,
    /// Time the client's threads waited for a CPU over the profile, s.
    client_wait: Option<f64>,
    /// A kept-alive connection showed bytes nobody asked for during the profile or right after
    /// it (the pool had trusted its connections until then): some responses may have been
    /// read by the wrong request.
    stray_bytes: bool,
    /// A `--duration` run stopped sending at its record bound
    /// ([`BenchOptions::record_bound`]) before its duration ended: the records it kept then
    /// (warmups included).
    bounded: Option<u64>,
}

/// Runs the profile phase unless the warmup ended the run (`end`): marks the scrape, opens a
/// capped closed loop's connections first, sends `--num-prompts` (or for `--duration`) under
/// the arrival process, with its progress display and the client's CPU measured around it. A
/// run whose every finished request failed to connect ends `Unreachable`.
async fn run_profile(
    shared: &Arc<Shared>,
    opts: &BenchOptions,
    counters: &Arc<Counters>,
    scraper: Option<&Scraper>,
    mut end: PhaseEnd,
) -> ProfileRun {
    counters.start_profile();
    let clock = shared.client.clock();
    let mut start_unix = unix_now(&clock);
    let mut end_unix = start_unix;
    // The client's own CPU over the profile phase: (CPU s, wall s), for the self-check.
    let mut client_cpu: Option<(f64, f64)> = None;
    let mut client_wait: Option<f64> = None;
    let mut stray_bytes = false;
    let mut bounded = None;
    if let Some(sc) = scraper {
        sc.mark("profile").await;
    }
    if end == PhaseEnd::Completed {
        let arrivals = match opts.request_rate {
            Some(r) => Arrivals::Gamma {
                rate_rps: r,
                burstiness: opts.burstiness,
            },
            None => Arrivals::Unlimited,
        };
        // The records kept before the profile (the warmups'), against the record bound.
        let kept_before = shared.sent.load(Ordering::Acquire);
        let bound = bound_count(opts, kept_before);
        let count = if opts.duration.is_some() {
            match (opts.num_prompts, bound) {
                (Some(n), Some(b)) => Some(n.min(b)),
                (n, b) => n.or(b),
            }
        } else {
            Some(opts.resolved_num_prompts())
        };
        // The warmup's connections, once quiet for 1 s (`TRUST_QUIET`), are reused from the
        // profile's first request on (none: nothing to wait for).
        tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => {}
            _ = shared.client.await_trust() => {}
        }
        // A closed loop with a cap opens its connections before its clock starts (the warmup
        // usually has; this tops up), so TCP set-up is not inside the measured window.
        // Its connections in flight: the cap, or fewer requests.
        let closed_loop = match (opts.request_rate, shared.cap) {
            (None, Some(cap)) => {
                Some(count.map_or(cap as usize, |c| c.min(u64::from(cap)) as usize))
            }
            _ => None,
        };
        if let Some(n) = closed_loop {
            tokio::select! {
                biased;
                _ = shared.cancel.cancelled() => {}
                _ = shared.client.preconnect(n) => {}
            }
        }
        let progress = Progress::start(
            opts.progress,
            "bench",
            count,
            opts.duration,
            counters.clone(),
            opts.clock,
        );
        start_unix = unix_now(&clock);
        let cpu_at_start = crate::selftest::process_cpu_s().map(|c| (c, clock.now()));
        let wait_at_start = crate::selftest::runqueue_wait_s();
        // Beside a closed loop with a cap: spare connections while the pool is on probation.
        let stale_before = shared.client.stale_seen();
        let spares = closed_loop.map(|n| {
            let client = shared.client.clone();
            tokio::spawn(async move { client.keep_spares(n.min(SPARES_MAX)).await })
        });
        end = run_phase(
            shared,
            PhaseSpec {
                phase: Phase::Profile,
                count,
                until: opts.duration.map(|d| clock.now() + d),
                arrivals,
                seed: opts.seed,
                fixed_prompt: None,
            },
        )
        .await;
        if let Some(s) = spares {
            s.abort();
        }
        // Every request of the profile has handed its record over: the bound ended the
        // sending when the profile sent its bounded count (and --num-prompts did not end it).
        let profile_sent = shared
            .sent
            .load(Ordering::Acquire)
            .saturating_sub(kept_before);
        if let (PhaseEnd::Completed, Some(b)) = (end, bound) {
            if profile_sent >= b && opts.num_prompts.is_none_or(|n| b < n) {
                bounded = Some(kept_before.saturating_add(profile_sent));
            }
        }
        end_unix = unix_now(&clock);
        client_cpu = match (cpu_at_start, crate::selftest::process_cpu_s()) {
            (Some((c0, t0)), Some(c1)) => Some((
                c1 - c0,
                clock.now().saturating_duration_since(t0).as_secs_f64(),
            )),
            _ => None,
        };
        client_wait = wait_at_start
            .zip(crate::selftest::runqueue_wait_s())
            .map(|(a, b)| (b - a).max(0.0));
        settle(shared, counters).await;
        // The last progress line before the idle audit: its rate is over the profile, not
        // the profile plus the audit's up to 200 ms (8 requests in 1.7 ms read "39 req/s").
        progress.finish().await;
        if end == PhaseEnd::Completed {
            // A server answering twice leaves the last real responses on idle connections.
            tokio::select! {
                biased;
                _ = shared.cancel.cancelled() => {}
                _ = shared.client.audit_idle() => {}
            }
        }
        stray_bytes = !stale_before && shared.client.stale_seen();
    }
    if end == PhaseEnd::Completed && shared.breaker.never_reached() {
        end = PhaseEnd::Unreachable;
    }
    ProfileRun {
        end,
        start_unix,
        end_unix,
        client_cpu,
        client_wait,
        stray_bytes,
        bounded,
    }
}

/// The profile requests a `--duration` run may send under its record bound
/// ([`BenchOptions::record_bound`]) after `kept` records (the warmups'): the bound less them,
/// at least 1; `None` without a bound or for a count run.
fn bound_count(opts: &BenchOptions, kept: u64) -> Option<u64> {
    opts.duration?;
    let b = opts.record_bound?;
    Some(b.records.saturating_sub(kept).max(1))
}

/// The server's `GET /v1/models` body as JSON, asked once beside the `/metrics` scrape (not
/// with `--no-server-metrics`, which asks the server nothing but the requests): what it says
/// of the served model goes into the point's server fingerprint
/// (`inferbench_core::fingerprint`, issue 39 §5). `None` when not asked, not answered 2xx
/// within 2 s, or not JSON.
async fn served_models(opts: &BenchOptions) -> Option<serde_json::Value> {
    if !opts.server_metrics {
        return None;
    }
    let url = format!("{}/v1/models", opts.base_url.trim_end_matches('/'));
    match inferbench_client::http_get_via(&url, std::time::Duration::from_secs(2), &opts.reach())
        .await
    {
        Ok((200..=299, body)) => serde_json::from_slice(&body).ok(),
        _ => None,
    }
}

/// Stops the `/metrics` scraper (if one ran), writes its snapshots to `server_metrics.jsonl`
/// beside the result (a note in `notes` and `write_failed` set when that fails) and summarizes them over the profile
/// window; also returns the first scrape's samples (the server's info metrics, for its
/// fingerprint), empty without one.
async fn finish_scrape(
    scraper: Option<Scraper>,
    opts: &BenchOptions,
    date: &str,
    profile: &ProfileRun,
    notes: &mut Vec<String>,
    write_failed: &mut bool,
) -> (
    Option<server_metrics::ServerMetricsSummary>,
    Vec<inferbench_core::prometheus::Sample>,
) {
    let Some(sc) = scraper else {
        return (None, Vec::new());
    };
    let snaps = sc.finish().await;
    let first = snaps.first().map(|s| s.samples.clone()).unwrap_or_default();
    if let Some(path) = output::side_file(opts, date, "server_metrics.jsonl") {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| scrape::write_jsonl_within(&path, &snaps, opts.server_metrics_max_bytes));
        match written {
            Err(e) => {
                notes.push(format!("writing {} failed: {e}", path.display()));
                *write_failed = true;
            }
            // Thinned to fit the file-size limit (issue 39's leftovers, 2): said, not failed.
            Ok(w) if w.kept < w.of => notes.push(format!(
                "{}: {} of {} /metrics scrapes written ({} bytes), evenly thinned to fit the \
                 {} bytes the file-size limit `ulimit -f` leaves it (the window summary uses \
                 every scrape){}",
                path.display(),
                w.kept,
                w.of,
                w.bytes,
                opts.server_metrics_max_bytes.unwrap_or(0),
                if w.kept == 0 {
                    ": not even the baseline and final fit, so none was written"
                } else {
                    ""
                }
            )),
            Ok(_) => {}
        }
    }
    let summary = server_metrics::summarize(&snaps, profile.start_unix, profile.end_unix);
    (Some(summary), first)
}

/// Why a profile whose kept-alive connections got bytes nobody asked for is invalid
/// ([`ProfileRun::stray_bytes`]; trial 32 F1).
const STRAY_BYTES_NOTE: &str = "the server wrote bytes after finished responses on kept-alive \
     connections during the profile (it answered a request twice, or wrote past a response's \
     end): a request sent on such a connection may have read an earlier request's response, so \
     the texts and times of the records are in doubt and the point is invalid, kept off \
     frontiers unless --include-invalid; --header 'Connection: close' gives every request a \
     connection of its own";

/// Tokens at the start of every prompt of `prepared` (the longest common prefix of their
/// texts, counted by the run's tokenizer: the cache-bust marker and the shared random prefix);
/// `prefix_len` when the run has no token counter.
fn shared_prompt_tokens(prepared: &PreparedPrompts, prefix_len: u32) -> u32 {
    let mut texts = prepared.prompts.iter().map(|p| p.text.as_str());
    let Some(first) = texts.next() else {
        return prefix_len;
    };
    let mut len = first.len();
    for t in texts {
        len = first
            .bytes()
            .zip(t.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    while !first.is_char_boundary(len) {
        len -= 1;
    }
    match &prepared.counter {
        Some(count) if prepared.prompts.len() > 1 => u32::try_from(count(&first[..len]))
            .unwrap_or(u32::MAX)
            .max(prefix_len),
        _ => prefix_len,
    }
}

/// The producer checks that make a completed point's numbers not the server's (each also a
/// note in `notes`): random prompts served from the prefix cache (a repeated run), a server
/// that fell behind its own schedule on more than [`server_metrics::LATE_CHUNKS_MAX`] of its
/// chunks (both judged on a profile that ran its course, `end`), or the sim running faster
/// than real time ([`scaled_sim_reason`]). Judged from the server's metrics `sm` (and the
/// sim's time-scale header, `sim_header`).
fn invalid_reasons(
    opts: &BenchOptions,
    (prepared, records): (&PreparedPrompts, &[RequestRecord]),
    counters: &Counters,
    (sm, sim_header): (Option<&server_metrics::ServerMetricsSummary>, Option<f64>),
    end: PhaseEnd,
    notes: &mut Vec<String>,
) -> Vec<String> {
    // Random prompts served from the prefix cache mean a repeated run (same seed): its TTFT is
    // the cache's, so the point is kept off the frontier (trial 11: a repeated run took it). Only a
    // profile phase that ran its course is judged: one cut short in its warmup (which sends
    // the first prompt again and again) has no profile window to compare (trial 7's spurious
    // warning on a sweep point interrupted there).
    let mut cache_reason = None;
    if let (Some(sm), PhaseEnd::Completed) = (sm, end) {
        if let (DatasetName::Random, Some(hits), Some(queries)) = (
            opts.dataset_name,
            sm.prefix_cache_hits,
            sm.prefix_cache_queries,
        ) {
            let max_prompt = prepared
                .prompts
                .iter()
                .map(|p| u64::from(p.prompt_tokens))
                .max()
                .unwrap_or(0);
            let sent = counters.done.load(Ordering::Relaxed);
            // The prompts are sent in order, from the first again after the last.
            let sent_tokens: u64 = (prepared.prompts.iter().cycle())
                .take(usize::try_from(sent).unwrap_or(usize::MAX))
                .map(|p| u64::from(p.prompt_tokens))
                .sum();
            let d = server_cache::PrefixCache { queries, hits };
            // What every request shares by design: the common start of the prompts (the
            // cache-bust marker, --random-prefix-len) and the template the server wraps them
            // in, measured by this run (issue 39, fresh tester: chat runs with --cache-bust
            // flagged for their template's opening and the marker).
            let overhead = server_cache::template_overhead(records);
            let shared_len =
                shared_prompt_tokens(prepared, opts.random_prefix_len).saturating_add(overhead);
            // The server counts its template too.
            let sent_tokens = sent_tokens + sent * u64::from(overhead);
            let max_prompt = max_prompt + u64::from(overhead);
            cache_reason =
                server_cache::cache_warning(&d, sent, shared_len, (max_prompt, sent_tokens));
        }
    }
    // A server that fell behind its own schedule (the sim starved of CPU on a busy machine)
    // sent its tokens late or in bursts: the point's latencies are this machine's, not the
    // server's. Only `inferbench sim` exposes the counters; the AgentX replay path does not
    // check them yet.
    let late_chunks = match (sm, end) {
        (Some(sm), PhaseEnd::Completed) => sm
            .late_chunk_fraction
            .filter(|f| *f > server_metrics::LATE_CHUNKS_MAX),
        _ => None,
    };
    let late_reason = late_chunks.map(|f| {
        format!(
            "the server fell behind its schedule on {:.0} % of its token chunks (its process \
             was starved of CPU) and sent their tokens late or in bursts: this point's TTFT, \
             TPOT and ITL are not the server's; the result is marked invalid (kept off \
             frontiers unless --include-invalid). Run it on an idle \
             machine (or the sim with a lower --time-scale)",
            f * 100.0
        )
    });
    let scaled_reason = scaled_sim_reason(sm.and_then(|sm| sm.sim_time_scale).or(sim_header), opts);
    // Every producer check that makes the point's numbers not the server's, in one field.
    let mut reasons = Vec::new();
    let invalid = (cache_reason.into_iter())
        .chain(late_reason)
        .chain(scaled_reason)
        .collect();
    invalidate(invalid, notes, &mut reasons);
    reasons
}

/// Why a point measured against `inferbench sim --time-scale K` (`k`: K ≠ 1, from its
/// `/metrics` gauge or, without scraping, its responses' `inferbench-sim-time-scale` header)
/// does not stand for the modelled hardware: its wall-clock times are K times shorter (trial
/// 32 F5: bench reported 10× an H100's speed, `--db --set hw=h100` would store it; trial 33
/// F2: with `--no-server-metrics`). `None` for other servers, time scale 1, or when the caller
/// rewrites the point in modelled time at that very scale ([`BenchOptions::rescaled_at`]:
/// quickstart, `sweep --sim`; a `--metadata` key does not count, trial 33 F3).
fn scaled_sim_reason(k: Option<f64>, opts: &BenchOptions) -> Option<String> {
    let k = k.filter(|k| (k - 1.0).abs() > 1e-9)?;
    if opts.rescaled_at.is_some_and(|r| (r - k).abs() <= 1e-9 * k) {
        return None;
    }
    Some(format!(
        "the server is inferbench's sim at --time-scale {k}: it ran {k}× the speed of the \
         hardware it models, so this point's latencies and throughput are not that hardware's; \
         the result is marked invalid (kept off frontiers unless --include-invalid). Run the \
         sim at --time-scale 1, or use quickstart / sweep --sim, which rescale to modelled time"
    ))
}

/// The note on a run that did not complete (`end`): the unreachable server (its first connect
/// error, the first of `failure`), the interruption, or every one of the `n_warm` warmups
/// failing (the first failure's text, the second of `failure`, or the `not_found` hint that
/// explains a 404 instead). `None` for a completed run.
/// Without a successful profile request (`measured` false) it says nothing was measured (trial
/// 13: "results cover the finished requests" where none had finished).
fn end_note(
    end: PhaseEnd,
    opts: &BenchOptions,
    n_warm: u64,
    (unreachable_msg, first_failure): (Option<String>, &str),
    measured: bool,
    not_found: Option<&str>,
) -> Option<Verdict> {
    let covered = if measured {
        "results cover the finished requests"
    } else {
        "nothing was measured"
    };
    let (kind, note) = match end {
        PhaseEnd::Unreachable => {
            let msg = unreachable_msg.unwrap_or_default();
            // Trial 32 F10 (a port that accepts and drops), a dead proxy, a refused tunnel,
            // TLS: the one rule of every unreachable message.
            let advice = inferbench_client::http::unreachable_advice(&msg);
            (
                VerdictKind::ServerUnreachable,
                format!(
                    "server unreachable at {}: {msg}; stopped early, {covered} ({advice})",
                    opts.base_url
                ),
            )
        }
        PhaseEnd::Cancelled if !measured => (
            VerdictKind::Interrupted,
            "interrupted before any request finished: nothing was measured".into(),
        ),
        PhaseEnd::Cancelled => (
            VerdictKind::Interrupted,
            "interrupted: results cover the finished requests".into(),
        ),
        // Why the server answered 404, instead of its answer.
        PhaseEnd::Aborted if not_found.is_some() => (
            VerdictKind::WarmupsFailed,
            format!(
                "every warmup request failed ({n_warm} of {n_warm}): {}; the profile was not \
                 run",
                not_found.unwrap_or_default()
            ),
        ),
        // One line of the server's answer (trial 16: a proxy's HTML page printed whole).
        PhaseEnd::Aborted => (
            VerdictKind::WarmupsFailed,
            format!(
                "every warmup request failed ({n_warm} of {n_warm}; first: {}): the profile \
                 was not run; check --model, --endpoint and the server's log",
                inferbench_core::text::one_line(first_failure, 200)
            ),
        ),
        PhaseEnd::Completed => return None,
    };
    Some(Verdict::new(kind, note))
}

/// What the summary is computed with: the run's flags (`metrics` = the parsed
/// `--percentile-metrics` and `--goodput`), the tokenizer, the start `date`, the profile's unix
/// window and end, and the requests planned but not sent (count mode only) given the
/// `profile_records` that were. A profile the early-stop rule ended (`stopped_early`) planned
/// what it sent: its `num_prompts` is the prompts it used, none unsent.
fn summary_context(
    opts: &BenchOptions,
    prepared: &PreparedPrompts,
    metrics: (Vec<Metric>, GoodputSlo),
    date: &str,
    profile: &ProfileRun,
    (profile_records, stopped_early): (u64, bool),
) -> SummaryContext {
    let (percentile_metrics, goodput) = metrics;
    let end = profile.end;
    let planned = if stopped_early {
        profile_records
    } else {
        opts.resolved_num_prompts()
    };
    // Count mode only: in --duration mode nothing was planned beyond what the time allowed.
    let requests_not_sent = if opts.duration.is_none() {
        planned.saturating_sub(profile_records)
    } else {
        0
    };
    // `num_prompts` is what the run set out to send: the planned count, or in --duration
    // mode the requests the time allowed (prepared prompts left unsent do not count).
    let num_prompts = if opts.duration.is_some() {
        profile_records
    } else {
        planned
    };
    SummaryContext {
        backend: opts.backend.name().to_string(),
        model_id: opts.model.clone(),
        tokenizer_id: prepared.tokenizer_id.clone(),
        best_of: 1,
        num_prompts,
        request_rate: opts.request_rate,
        burstiness: opts.burstiness,
        max_concurrency: opts.max_concurrency,
        percentile_metrics,
        metric_percentiles: opts.metric_percentiles.clone(),
        goodput,
        save_detailed: opts.save_detailed,
        date: date.to_string(),
        benchmark_start_time_unix: Some(profile.start_unix),
        benchmark_end_time_unix: Some(profile.end_unix),
        duration_s: None,
        interrupted: end == PhaseEnd::Cancelled,
        stop_reason: match end {
            PhaseEnd::Completed => StopReason::Completed,
            PhaseEnd::Cancelled => StopReason::Interrupted,
            PhaseEnd::Unreachable => StopReason::ServerUnreachable,
            PhaseEnd::Aborted => StopReason::Aborted,
        },
        requests_not_sent,
        metadata: opts.metadata.iter().cloned().collect(),
    }
}

/// Adds the client's self-check ([`client_check`]) of the profile to `summary`, and judges
/// whether the client measured the requested load: each of a client-bound run, a closed loop
/// whose requests waited to be sent ([`inferbench_core::summary::ClientCheck::queue_note`]) and
/// a profile whose connections got bytes nobody asked for ([`ProfileRun::stray_bytes`]) gets
/// its note in `notes` and in `reasons` (InferenceX results are valid only when the client
/// kept up).
fn judge_client(
    opts: &BenchOptions,
    summary: &mut RunSummary,
    profile: &ProfileRun,
    notes: &mut Vec<String>,
    reasons: &mut Vec<String>,
) {
    let client_cpu = profile.client_cpu;
    let wall_s = client_cpu.map_or(0.0, |c| c.1);
    let mut invalid = Vec::new();
    if let Some(mut check) = client_check(opts, summary, client_cpu) {
        check.runqueue_wait_s = profile.client_wait;
        // Trial 12: a quickstart beside another one stayed on the frontier with this note.
        invalid.extend(check.client_bound.then(|| check.note(wall_s)));
        let ib = &summary.inferbench;
        invalid.extend(check.queue_note(wall_s, ib.client_queue_ms.mean, ib.e2el_ms.mean));
        summary.inferbench.client = Some(check);
    }
    invalid.extend(profile.stray_bytes.then(|| STRAY_BYTES_NOTE.to_string()));
    invalidate(invalid, notes, reasons);
}

/// Each reason in `invalid` makes the point invalid (`reasons`) and is said once (`notes`).
fn invalidate(invalid: Vec<String>, notes: &mut Vec<String>, reasons: &mut Vec<String>) {
    notes.extend(invalid.iter().cloned());
    reasons.extend(invalid);
}

/// What the profile's records say about the numbers the server gave (each a note; the first
/// three also a reason the point is invalid): responses buffered whole, from
/// [`anomaly::WHOLE_SHARE_MAX`] of them (TTFT = E2EL, no streaming measured; trials 33/34 F1),
/// output tokens beyond `max_tokens` that inflate output throughput by more than
/// [`anomaly::EXCESS_OUTPUT_MAX`] (F9), usage below the streamed tokens by more than the same
/// share, usage above what the streamed text holds by the client's tokenizer by more than the
/// same share (issue 39: usage that contradicts the stream in either direction), usage that
/// is not a count in more than that share of the requests, and a server
/// that ends requests for "length" below their `max_tokens` (F8: a note only, the OSL is
/// short).
fn judge_records(records: &[RequestRecord], notes: &mut Vec<String>, reasons: &mut Vec<String>) {
    use inferbench_core::anomaly;
    let mut invalid = Vec::new();
    if let Some((whole, n)) = anomaly::arrived_whole(records) {
        invalid.push(format!(
            "{whole} of {n} successful requests received all their tokens at one instant: the \
             server, or a proxy in front of it, buffered those responses instead of streaming \
             them, so their TTFT is the whole response time and their TPOT/ITL are 0; the result \
             is marked invalid (kept off frontiers unless --include-invalid)"
        ));
    }
    let (excess, total) = anomaly::excess_output_tokens(records);
    if total > 0 && excess as f64 > anomaly::EXCESS_OUTPUT_MAX * total as f64 {
        invalid.push(format!(
            "{:.1} % of the run's output tokens ({excess} of {total}) are beyond the requests' \
             max_tokens (the anomalies above): its output throughput is not the server's; the \
             result is marked invalid (kept off frontiers unless --include-invalid)",
            100.0 * excess as f64 / total as f64
        ));
    }
    let (short, total) = anomaly::usage_shortfall_tokens(records);
    if total > 0 && short as f64 > anomaly::EXCESS_OUTPUT_MAX * total as f64 {
        invalid.push(format!(
            "{:.1} % of the output tokens the streams carried ({short} of {total}) are missing \
             from the server's usage (usage_below_stream above): output throughput built on \
             it undercounts the server's; the result is marked invalid (kept off frontiers \
             unless --include-invalid)",
            100.0 * short as f64 / total as f64
        ));
    }
    let (surplus, total) = anomaly::usage_surplus_tokens(records);
    if total > 0 && surplus as f64 > anomaly::EXCESS_OUTPUT_MAX * total as f64 {
        invalid.push(format!(
            "{:.1} % of the output tokens the server's usage reports ({surplus} of {total}) are \
             beyond what the streamed text holds by the client's tokenizer (usage_above_stream \
             above): output throughput built on it overcounts the server's; the result is \
             marked invalid (kept off frontiers unless --include-invalid)",
            100.0 * surplus as f64 / total as f64
        ));
    }
    let ok: Vec<&RequestRecord> = (records.iter())
        .filter(|r| r.success && r.phase == Phase::Profile)
        .collect();
    let bad = (ok.iter())
        .filter(|r| r.anomalies.contains(&anomaly::Anomaly::UsageInvalid))
        .count();
    if !ok.is_empty() && bad as f64 > anomaly::EXCESS_OUTPUT_MAX * ok.len() as f64 {
        invalid.push(format!(
            "{:.1} % of the successful requests ({bad} of {}) had a usage count that is not a \
             non-negative integer (usage_invalid above): their token counts are the client \
             tokenizer's, not the server's; the result is marked invalid (kept off frontiers \
             unless --include-invalid)",
            100.0 * bad as f64 / ok.len() as f64,
            ok.len()
        ));
    }
    invalidate(invalid, notes, reasons);
    if let (n, Some(r)) = anomaly::stopped_short(records) {
        notes.push(format!(
            "the server ended {n} request(s) with finish_reason \"length\" below their \
             max_tokens (e.g. request {}: {} of {} tokens): it caps the output length, so this \
             run's OSL is shorter than asked (its context or generation limit?)",
            r.request_id,
            r.completion_tokens,
            r.max_tokens.unwrap_or(0)
        ));
    }
}

/// `--save-requests` as the result names it (`inferbench.requests_file`): the bare file name
/// when it is in the result directory, else its absolute path (as given when that fails).
fn requests_file_name(opts: &BenchOptions) -> Option<String> {
    opts.save_requests.as_ref().map(|p| {
        let dir = opts
            .result_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        let (abs_p, abs_dir) = (std::path::absolute(p), std::path::absolute(&dir));
        match (&abs_p, &abs_dir) {
            (Ok(a), Ok(d)) if a.parent() == Some(d.as_path()) => a.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            (Ok(a), _) => a.display().to_string(),
            _ => p.display().to_string(),
        }
    })
}

/// How the run ended ([`RunEnd`]) from how its phase ended (`end`) and its summary, with the verdict of a
/// completed run that fails a gate (the caller adds its note to `notes`): nothing measured (of
/// `profile_records` sent; with the `not_found` hint that explains a 404), an error or anomaly rate over its gate, GPU power not valid under
/// `--require-power`. Interrupted, unreachable and aborted runs have their verdict from
/// [`end_note`]. Power that is not valid is always a note (a failure only with
/// `--require-power`, InferenceX's rule; `power_validation` the audit file).
fn decide_end(
    end: PhaseEnd,
    opts: &BenchOptions,
    summary: &RunSummary,
    (profile_records, not_found): (u64, Option<&str>),
    power_validation: Option<&std::path::Path>,
    notes: &mut Vec<String>,
) -> (RunEnd, Option<Verdict>) {
    let x = &summary.inferbench;
    let gate = gate_verdict(end, opts, summary, (profile_records, not_found));
    let code = match end {
        PhaseEnd::Cancelled => RunEnd::Interrupted,
        PhaseEnd::Unreachable => RunEnd::Unreachable,
        PhaseEnd::Aborted => RunEnd::GateFailed,
        PhaseEnd::Completed if gate.is_some() => RunEnd::GateFailed,
        PhaseEnd::Completed => RunEnd::Passed,
    };
    // Power: a note when not valid; a failure only with --require-power (InferenceX's rule).
    let Some(p) = x.power.as_ref().filter(|p| !p.valid) else {
        return (code, gate);
    };

    let note = format!(
        "GPU power not valid ({}); see {}",
        p.reasons.join(", "),
        power_validation.map_or("power_validation.json".into(), |v| v.display().to_string())
    );
    notes.push(note.clone());
    if opts.require_power && code.passed() {
        (
            RunEnd::GateFailed,
            Some(Verdict::new(VerdictKind::PowerInvalid, note)),
        )
    } else {
        (code, gate)
    }
}

/// The gate a completed run (`end`) fails, from its `summary`: nothing measured (of
/// `profile_records` sent; with the `not_found` hint that explains a 404), the failed share
/// over `--max-error-rate`, the anomalous share over `--max-anomaly-rate`. `None` for a run
/// cut short (its verdict is [`end_note`]'s) or one that passes every gate.
fn gate_verdict(
    end: PhaseEnd,
    opts: &BenchOptions,
    summary: &RunSummary,
    (profile_records, not_found): (u64, Option<&str>),
) -> Option<Verdict> {
    let x = &summary.inferbench;
    match end {
        PhaseEnd::Cancelled | PhaseEnd::Unreachable | PhaseEnd::Aborted => None,
        PhaseEnd::Completed if summary.completed == 0 => Some(Verdict::new(
            VerdictKind::NothingMeasured,
            format!(
                "nothing was measured: none of the {} profile requests succeeded ({} failed{}){}",
                profile_records,
                x.failed,
                if x.warmup_failed > 0 {
                    format!(", and {} of {} warmups", x.warmup_failed, x.warmups)
                } else {
                    String::new()
                },
                not_found.map_or(String::new(), |h| format!(": {h}"))
            ),
        )),
        PhaseEnd::Completed if summary.error_rate() > opts.max_error_rate => Some(Verdict::new(
            VerdictKind::ErrorRate,
            format!(
                "error rate {:.2} % exceeds --max-error-rate {:.2} %",
                summary.error_rate() * 100.0,
                opts.max_error_rate * 100.0
            ),
        )),
        PhaseEnd::Completed if opts.max_anomaly_rate.is_some_and(|m| x.anomaly_rate > m) => {
            Some(Verdict::new(
                VerdictKind::AnomalyRate,
                format!(
                    "anomaly rate {:.2} % ({} of {} successful requests) exceeds \
                     --max-anomaly-rate {:.2} %",
                    x.anomaly_rate * 100.0,
                    x.anomalous_requests,
                    summary.completed,
                    opts.max_anomaly_rate.unwrap_or(0.0) * 100.0
                ),
            ))
        }
        PhaseEnd::Completed => None,
    }
}

/// Why a point that failed a gate ([`gate_verdict`]) is not valid (trial of issue 39 §5: a run
/// with 68.75 % of its requests failed exited 1 but was stored valid and took the frontier):
/// its verdict, as `inferbench.invalid_reason` states it. `None` when it passes the gates.
fn gate_reason(
    end: PhaseEnd,
    opts: &BenchOptions,
    summary: &RunSummary,
    sent: u64,
) -> Option<String> {
    let v = gate_verdict(end, opts, summary, (sent, None))?;
    Some(format!(
        "failed its gate: {}; the result is marked invalid (kept off frontiers unless \
         --include-invalid)",
        v.note
    ))
}

/// The note of a run stopped before any request was sent.
const NOTE_BEFORE_START: &str = "interrupted during prompt preparation: no request was sent";

/// The outcome of a run stopped by a signal before any request was sent (during prompt
/// preparation): nothing written, ended [`RunEnd::Interrupted`].
fn interrupted_before_start(opts: &BenchOptions) -> BenchOutcome {
    let ctx = SummaryContext {
        // Dated as a run that started (trial 14: the stored failed point had no date).
        date: run_date(opts.clock),
        backend: opts.backend.name().to_string(),
        model_id: opts.model.clone(),
        num_prompts: if opts.duration.is_none() {
            opts.resolved_num_prompts()
        } else {
            0
        },
        request_rate: opts.request_rate,
        burstiness: opts.burstiness,
        max_concurrency: opts.max_concurrency,
        interrupted: true,
        stop_reason: StopReason::Interrupted,
        requests_not_sent: if opts.duration.is_none() {
            opts.resolved_num_prompts()
        } else {
            0
        },
        ..Default::default()
    };
    BenchOutcome {
        summary: summarize(&[], &ctx),
        result_path: None,
        records_path: None,
        aggregate_path: None,
        interrupted: true,
        end: RunEnd::Interrupted,
        notes: vec![NOTE_BEFORE_START.into()],
        verdict: Some(Verdict::new(
            VerdictKind::Interrupted,
            NOTE_BEFORE_START.into(),
        )),
        records: Vec::new(),
    }
}

/// Starts the power sampler of `opts.power` when there is a result directory (`power.csv` and
/// `power_validation.json` beside the result); a note when `auto` finds no tool or there is
/// nowhere to write. Errors: a tool named by `--power` is missing (or `--require-power`
/// without any).
async fn start_power(
    opts: &BenchOptions,
    date: &str,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<crate::power::PowerRun>> {
    if opts.power == PowerMode::Off {
        return Ok(None);
    }
    let Some(path) = output::side_file(opts, date, "power.csv") else {
        if opts.power != PowerMode::Auto || opts.require_power {
            anyhow::bail!("--power/--require-power need --result-dir (power.csv goes there)");
        }
        return Ok(None);
    };
    let validation = output::side_file(opts, date, "power_validation.json")
        .unwrap_or_else(|| path.with_file_name("power_validation.json"));
    crate::power::start(
        opts.power,
        opts.power_interval,
        path,
        validation,
        opts.require_power,
        opts.save_result.then_some(notes),
    )
    .await
}

/// A hint when requests were answered HTTP 404: the server's `/v1/models` (one GET) says
/// whether `--model` is wrong, else the path is (`crate::hints`).
async fn not_found_note(opts: &BenchOptions, s: &RunSummary, url: &str) -> Option<String> {
    let sample = s
        .inferbench
        .error_samples
        .get(ErrorClass::HttpStatus.as_str())?;
    inferbench_client::models::explain_not_found(
        &opts.base_url,
        &opts.model,
        url,
        sample,
        &opts.reach(),
    )
    .await
}

/// Adds InferenceX's power block to an `agg_*.json` file ([`crate::power::patch_aggregate`]).
fn patch_aggregate_power(path: &std::path::Path, p: &PowerSummary) -> anyhow::Result<()> {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let obj = v
        .as_object_mut()
        .context("the aggregate is not a JSON object")?;
    crate::power::patch_aggregate(obj, p);
    output::write_file(path, serde_json::to_string_pretty(&v)?.as_bytes())
}

/// Wall-clock now on the run's clock, unix seconds (0 before 1970).
fn unix_now(clock: &RunClock) -> f64 {
    clock
        .wall()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A run's date (`YYYYMMDD-HHMMSS`, local time) read from `clock`: the result file names' and
/// `date` field's.
pub(crate) fn run_date(clock: ClockSource) -> String {
    chrono::DateTime::<chrono::Local>::from(clock.wall())
        .format("%Y%m%d-%H%M%S")
        .to_string()
}

/// Most spare connections kept while the pool is on probation ([`Client::keep_spares`]): a
/// round of requests at up to 512 streams; above that the spares would double the server's
/// connections for the probation's 200 ms.
const SPARES_MAX: usize = 512;

/// Dispatches one phase and waits for all its requests.
async fn run_phase(sh: &Arc<Shared>, spec: PhaseSpec) -> PhaseEnd {
    let clock = sh.client.clock();
    let start_ns = clock.now_ns();
    if let (Phase::Profile, Some(t)) = (spec.phase, &sh.early) {
        t.start();
    }
    let mut schedule = match spec.count {
        Some(n) => Schedule::with_count(spec.arrivals, spec.seed, n),
        None => Schedule::new(spec.arrivals, spec.seed),
    };
    let paced = schedule.is_paced();
    if let (false, Some(cap)) = (paced, sh.cap) {
        return run_closed_loop(sh, &spec, cap, start_ns).await;
    }
    let mut tasks = JoinSet::new();
    let mut end = PhaseEnd::Completed;
    let n_prompts = sh.prompts.prompts.len();
    let far = clock.now() + std::time::Duration::from_secs(100 * 365 * 24 * 3600);
    let until = spec.until.unwrap_or(far);
    let mut i: u64 = 0;
    // Every request task by id, until it has finished: a task that panicked still yields a
    // record, so the run's counts always add up.
    let mut spawned: HashMap<tokio::task::Id, (RequestMeta, usize, u64)> = HashMap::new();
    loop {
        if spec.count.is_some_and(|c| i >= c) || sh.stopped_early() {
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
        let arrival_ns = start_ns.saturating_add(schedule.next().unwrap_or(0));
        let at = clock.instant_at(arrival_ns);
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
        // Paced: every arrival gets its task at its deadline and queues for a slot itself, so
        // arrivals are never delayed by the cap (the wait shows as client queue time). Closed
        // loop without a cap: every request at once. (Closed loop with a cap: the workers of
        // `run_closed_loop`.)
        let released_ns = clock.now_ns();
        let scheduled_ns = arrival_ns;
        let idx = spec.fixed_prompt.unwrap_or((i % n_prompts as u64) as usize);
        let meta = RequestMeta {
            request_id: i,
            phase: spec.phase,
            scheduled_ns,
            conversation_id: sh.prompts.prompts[idx].conversation_id.clone(),
            turn: sh.prompts.prompts[idx].turn,
            correlation_id: None,
            headers: sh.prompts.prompts[idx].headers.clone(),
        };
        while let Some(r) = tasks.try_join_next_with_id() {
            account(sh, &mut spawned, r);
        }
        let handle = tasks.spawn(request_task(sh.clone(), idx, meta.clone(), released_ns));
        spawned.insert(handle.id(), (meta, idx, released_ns));
        i += 1;
    }
    while let Some(r) = tasks.join_next_with_id().await {
        account(sh, &mut spawned, r);
    }
    // Ctrl-C after the last request was dispatched still interrupted the in-flight ones.
    if end == PhaseEnd::Completed && sh.cancel.is_cancelled() {
        end = PhaseEnd::Cancelled;
    }
    if end == PhaseEnd::Completed && sh.breaker.tripped() {
        end = PhaseEnd::Unreachable;
    }
    end
}

/// The client self-check of a closed-loop run with a concurrency cap (`None` for paced or
/// uncapped runs, without a CPU reading, or when no profile request succeeded): `cpu` =
/// (client CPU s, wall s) of the profile.
fn client_check(
    opts: &BenchOptions,
    summary: &RunSummary,
    cpu: Option<(f64, f64)>,
) -> Option<inferbench_core::summary::ClientCheck> {
    let conc = opts
        .max_concurrency
        .filter(|_| opts.request_rate.is_none())?;
    // Nothing measured, nothing to judge (trial 32 F12: an interrupted conc-512 run whose 512
    // requests were all in flight saved held 0.33, the ramp of one burst of sends).
    if summary.completed == 0 {
        return None;
    }
    let c = &summary.inferbench.concurrency;
    let held = c.mean_in_flight_sending?;
    let (cpu_s, wall_s) = cpu?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    Some(inferbench_core::summary::ClientCheck::judge(
        conc,
        held,
        c.slots_busy_sending,
        cpu_s,
        wall_s,
        cores,
    ))
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
    let why = if e.is_panic() {
        panic_cause(e.into_panic())
    } else {
        "internal error: the request task was aborted".to_string()
    };
    let rec = internal_error_record(sh, meta, idx, released_ns, why);
    sh.breaker.observe(&rec);
    sh.emit(rec);
}

/// "internal error: the request task panicked (MESSAGE); a client bug" from a panic payload.
fn panic_cause(p: Box<dyn std::any::Any + Send>) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into());
    format!("internal error: the request task panicked ({msg}); a client bug")
}

/// The failed (`malformed`) record of a request whose handling broke inside the client, ended
/// now, with `why` as its cause.
fn internal_error_record(
    sh: &Shared,
    meta: RequestMeta,
    idx: usize,
    released_ns: u64,
    why: String,
) -> RequestRecord {
    let prompt = &sh.prompts.prompts[idx];
    let now = sh.client.clock().now_ns();
    RequestRecord {
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
    }
}

/// Closed loop with a concurrency cap: `cap` workers (fewer when the phase has fewer
/// requests), each sending its next request the moment its previous one ended, as
/// `vllm bench serve`'s semaphore loop and AIPerf's workers keep a slot busy. A worker is a
/// slot: a request's `scheduled_ns` is when its worker's previous request ended (the phase
/// start for the first), so client queue time is the client's own delay (DESIGN.md §4). No
/// dispatcher task sits between a request's end and the next send, so a saturated client
/// still holds the requested concurrency (a dispatcher woken behind hundreds of ready
/// streams held 273 of 512: issue 14). Request ids are taken in order from one counter; a
/// panic while handling a request becomes that request's failed record and the worker goes
/// on.
async fn run_closed_loop(sh: &Arc<Shared>, spec: &PhaseSpec, cap: u32, start_ns: u64) -> PhaseEnd {
    let next = Arc::new(AtomicU64::new(0));
    let workers = spec.count.map_or(u64::from(cap), |c| c.min(u64::from(cap)));
    let n_prompts = sh.prompts.prompts.len() as u64;
    let mut set = JoinSet::new();
    // The start gate: every worker sends its first request (one poll of its send) before any
    // worker reads a response, so the phase reaches `cap` in flight in the time the sends take,
    // instead of its first responses' reads delaying the later workers' first polls (4,096
    // workers on one saturated core took ~1.5 s to all send: 97 % held over a 10 s window).
    let gate = Arc::new(tokio::sync::Barrier::new(workers as usize));
    for _ in 0..workers {
        let (sh, next) = (sh.clone(), next.clone());
        let (phase, count, until, fixed) = (spec.phase, spec.count, spec.until, spec.fixed_prompt);
        let mut gate = Some(gate.clone());
        set.spawn(async move {
            let clock = sh.client.clock();
            let mut free_ns = start_ns;
            loop {
                if sh.cancel.is_cancelled()
                    || sh.breaker.tripped()
                    || until.is_some_and(|u| clock.now() >= u)
                {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if count.is_some_and(|c| i >= c) || !sh.within_last_round(i, u64::from(cap)) {
                    break;
                }
                let released_ns = clock.now_ns();
                let idx = fixed.unwrap_or((i % n_prompts) as usize);
                let prompt = &sh.prompts.prompts[idx];
                let meta = RequestMeta {
                    request_id: i,
                    phase,
                    scheduled_ns: free_ns.min(released_ns),
                    conversation_id: prompt.conversation_id.clone(),
                    turn: prompt.turn,
                    correlation_id: None,
                    headers: prompt.headers.clone(),
                };
                let input = prompt.input();
                let send = AssertUnwindSafe(sh.client.send(&input, meta.clone(), &sh.cancel))
                    .catch_unwind();
                let sent = match gate.take() {
                    Some(g) => first_through_gate(send, &g).await,
                    None => send.await,
                };
                let mut rec = match sent {
                    Ok(rec) => rec,
                    Err(p) => internal_error_record(&sh, meta, idx, released_ns, panic_cause(p)),
                };
                free_ns = clock.now_ns();
                rec.released_ns = Some(released_ns);
                sh.breaker.observe(&rec);
                sh.emit(rec);
            }
            // A worker that sent nothing still passes the gate, or the others would wait.
            if let Some(g) = gate {
                g.wait().await;
            }
        });
    }
    while set.join_next().await.is_some() {}
    if sh.cancel.is_cancelled() {
        PhaseEnd::Cancelled
    } else if sh.breaker.tripped() {
        PhaseEnd::Unreachable
    } else {
        PhaseEnd::Completed
    }
}

/// Polls `send` once (which writes the request on a pooled connection), waits at `gate` until
/// every worker has done the same, then finishes it.
async fn first_through_gate<F: Future>(send: F, gate: &tokio::sync::Barrier) -> F::Output {
    let mut send = std::pin::pin!(send);
    let early = std::future::poll_fn(|cx| Poll::Ready(send.as_mut().poll(cx))).await;
    gate.wait().await;
    match early {
        Poll::Ready(out) => out,
        Poll::Pending => send.await,
    }
}

/// One request of a paced or uncapped phase: waits for a concurrency slot (paced runs with a
/// cap; the wait is client queue time), sends, and hands the record to the collector.
async fn request_task(sh: Arc<Shared>, idx: usize, meta: RequestMeta, released_ns: u64) {
    let prompt = &sh.prompts.prompts[idx];
    let permit = tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => None,
        p = sh.sem.clone().acquire_owned() => p.ok(),
    };
    let mut rec = if permit.is_some() {
        sh.client.send(&prompt.input(), meta, &sh.cancel).await
    } else {
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
    };
    drop(permit);
    rec.released_ns = Some(released_ns);
    sh.breaker.observe(&rec);
    sh.emit(rec);
}

/// The one line printed before the warmup phase, so a long warmup (InferenceX's default is
/// 2 × max concurrency: 8,192 requests at 4,096) is announced rather than silent. `explicit`:
/// the count came from `--num-warmups`.
fn warmup_notice(n_warm: u64, explicit: bool) -> String {
    if explicit {
        format!("warmup: {n_warm} requests (--num-warmups), not counted in the results")
    } else {
        format!(
            "warmup: {n_warm} requests (2 x max concurrency, InferenceX's default; \
             --num-warmups N to change), not counted in the results"
        )
    }
}

#[cfg(test)]
mod notice_tests {
    #[test]
    fn warmup_notice_names_the_count_and_its_source() {
        assert_eq!(
            super::warmup_notice(8192, false),
            "warmup: 8192 requests (2 x max concurrency, InferenceX's default; --num-warmups N \
             to change), not counted in the results"
        );
        assert_eq!(
            super::warmup_notice(3, true),
            "warmup: 3 requests (--num-warmups), not counted in the results"
        );
    }
}

#[cfg(test)]
mod judge_tests {
    use inferbench_core::anomaly::{self, Anomaly};
    use inferbench_core::{Channel, ChunkRecord, Phase, RequestRecord};

    /// A successful profile request of `chunks` token-bearing chunks whose usage says
    /// `completion` tokens, with its anomalies detected (max_tokens 1000).
    fn rec(chunks: usize, completion: u32) -> RequestRecord {
        let mut r = RequestRecord {
            success: true,
            phase: Phase::Profile,
            completion_tokens: completion,
            max_tokens: Some(1000),
            // streamed, not buffered whole
            first_token_ns: Some(0),
            last_token_ns: Some(chunks as u64 - 1),
            chunks: (0..chunks)
                .map(|i| ChunkRecord {
                    t_ns: i as u64,
                    channel: Channel::Content,
                    tokens: None,
                })
                .collect(),
            ..Default::default()
        };
        r.anomalies = anomaly::detect(&r, false);
        r
    }

    /// Trial of issue 39 §1–§3, finding 5: usage that is not a count invalidates the point past
    /// 1 % of the successful requests, as the other usage anomalies do.
    #[test]
    fn usage_invalid_past_one_percent_invalidates() {
        let judge = |recs: &[RequestRecord]| {
            let (mut notes, mut reasons) = (Vec::new(), Vec::new());
            super::judge_records(recs, &mut notes, &mut reasons);
            reasons
        };
        let mut recs: Vec<RequestRecord> = (0..100).map(|_| rec(100, 100)).collect();
        recs[0].anomalies.push(Anomaly::UsageInvalid);
        assert_eq!(judge(&recs), Vec::<String>::new());
        recs[1].anomalies.push(Anomaly::UsageInvalid);
        assert_eq!(
            judge(&recs),
            vec![
                "2.0 % of the successful requests (2 of 100) had a usage count that is not a \
                 non-negative integer (usage_invalid above): their token counts are the client \
                 tokenizer's, not the server's; the result is marked invalid (kept off frontiers \
                 unless --include-invalid)"
                    .to_string()
            ]
        );
    }

    /// Issue 39, finding 11: usage above what the streamed text holds (the client tokenizer's
    /// count) invalidates the point past 1 % of the run's output tokens, not at it, as usage
    /// below the stream does.
    #[test]
    fn usage_above_the_stream_past_one_percent_invalidates() {
        let judge = |recs: &[RequestRecord]| {
            let (mut notes, mut reasons) = (Vec::new(), Vec::new());
            super::judge_records(recs, &mut notes, &mut reasons);
            assert_eq!(notes, reasons);
            reasons
        };
        // One request of 8 streamed tokens (client count 8) with usage 60: bound 48, flagged;
        // its surplus 52 tokens.
        let above = |usage: u32| {
            let mut r = rec(8, usage);
            r.completion_tokens_client = Some(8);
            r.anomalies = anomaly::detect(&r, false);
            r
        };
        assert_eq!(above(48).anomalies, Vec::<Anomaly>::new());
        assert_eq!(above(60).anomalies, vec![Anomaly::UsageAboveStream]);
        // Others of 1000 streamed tokens each, their usage right (max_tokens 1000).
        let run = |rest: usize| {
            let mut v: Vec<RequestRecord> = (0..5).map(|_| rec(1000, 1000)).collect();
            v.push(rec(rest, rest as u32));
            v.push(above(60));
            v
        };
        // 52 of 60 + 5140 = 5200 output tokens: exactly 1 %, the point stands.
        assert_eq!(anomaly::usage_surplus_tokens(&run(140)), (52, 5200));
        assert_eq!(judge(&run(140)), Vec::<String>::new());
        // 52 of 5199: past 1 %, invalid.
        assert_eq!(
            judge(&run(139)),
            vec![
                "1.0 % of the output tokens the server's usage reports (52 of 5199) are beyond \
                 what the streamed text holds by the client's tokenizer (usage_above_stream \
                 above): output throughput built on it overcounts the server's; the result is \
                 marked invalid (kept off frontiers unless --include-invalid)"
                    .to_string()
            ]
        );
        // The same usage without a client count (no tokenizer): nothing judged.
        let mut blind = rec(8, 60);
        blind.anomalies = anomaly::detect(&blind, false);
        assert_eq!(judge(&[blind, rec(100, 100)]), Vec::<String>::new());
    }

    /// Issue 39: usage below the stream invalidates the point past the share that inflated
    /// usage does (1 %), not at it.
    #[test]
    fn usage_below_the_stream_past_one_percent_invalidates() {
        let judge = |recs: &[RequestRecord]| {
            let (mut notes, mut reasons) = (Vec::new(), Vec::new());
            super::judge_records(recs, &mut notes, &mut reasons);
            assert_eq!(notes, reasons);
            reasons
        };
        // 1 of 100 streamed tokens missing: exactly 1 %, the point stands (the anomaly stays).
        let at = [rec(100, 99)];
        assert_eq!(at[0].anomalies, vec![Anomaly::UsageBelowStream]);
        assert_eq!(judge(&at), Vec::<String>::new());
        // 2 of 100 (a second request with its usage right): 2 of 200 = 1.0 %, stands.
        assert_eq!(judge(&[rec(100, 98), rec(100, 100)]), Vec::<String>::new());
        // 3 of 200: 1.5 %, invalid.
        assert_eq!(
            judge(&[rec(100, 97), rec(100, 100)]),
            vec![
                "1.5 % of the output tokens the streams carried (3 of 200) are missing from the \
                 server's usage (usage_below_stream above): output throughput built on it \
                 undercounts the server's; the result is marked invalid (kept off frontiers \
                 unless --include-invalid)"
                    .to_string()
            ]
        );
    }
}

#[cfg(test)]
mod gate_tests {
    use super::{gate_reason, BenchOptions, PhaseEnd, RunSummary};

    /// Trial of issue 39 §5 (A): 11 of 16 requests failed, bench exited 1, yet the point was
    /// stored valid and took the frontier. Every failed gate is the point's invalid reason.
    #[test]
    fn a_point_over_a_gate_is_invalid_with_that_gate_as_its_reason() {
        let ctx = inferbench_core::summary::SummaryContext::default();
        let mut s: RunSummary = inferbench_core::summary::summarize(&[], &ctx);
        s.completed = 5;
        s.num_prompts = 16;
        s.inferbench.failed = 11;
        s.inferbench.error_rate = 11.0 / 16.0;
        let opts = BenchOptions::default();
        assert_eq!(
            gate_reason(PhaseEnd::Completed, &opts, &s, 16).as_deref(),
            Some(
                "failed its gate: error rate 68.75 % exceeds --max-error-rate 5.00 %; the result \
                 is marked invalid (kept off frontiers unless --include-invalid)"
            )
        );
        // At the gate, it stands; a run cut short says so by its stop reason, not here.
        let at = BenchOptions {
            max_error_rate: 11.0 / 16.0,
            ..BenchOptions::default()
        };
        assert_eq!(gate_reason(PhaseEnd::Completed, &at, &s, 16), None);
        assert_eq!(gate_reason(PhaseEnd::Cancelled, &opts, &s, 16), None);
        // The anomaly-rate gate is the same kind of verdict.
        s.inferbench.failed = 0;
        s.inferbench.error_rate = 0.0;
        s.inferbench.anomaly_rate = 0.4;
        s.inferbench.anomalous_requests = 2;
        let anomaly = BenchOptions {
            max_anomaly_rate: Some(0.1),
            ..BenchOptions::default()
        };
        assert_eq!(
            gate_reason(PhaseEnd::Completed, &anomaly, &s, 16).as_deref(),
            Some(
                "failed its gate: anomaly rate 40.00 % (2 of 5 successful requests) exceeds \
                 --max-anomaly-rate 10.00 %; the result is marked invalid (kept off frontiers \
                 unless --include-invalid)"
            )
        );
        assert_eq!(gate_reason(PhaseEnd::Completed, &opts, &s, 16), None);
    }
}

/// What the early stop's note adds when a metric's noise was pooled with the sweep's finished
/// points (issue 43, `early_stop::pooled_relative_half_width`): which metric, and the pool's
/// degrees of freedom; empty when neither was.
fn pooled_words(a: &crate::early_stop::Assessment, pool_dof: u64) -> String {
    let which = match (a.tpot_pooled, a.rate_pooled) {
        (true, true) => "both metrics'",
        (true, false) => "the median TPOT's",
        (false, true) => "the throughput's",
        (false, false) => return String::new(),
    };
    format!(
        " ({which} noise pooled with the sweep's finished points near this concurrency: \
         {pool_dof} more degrees of freedom)"
    )
}

#[cfg(test)]
mod pooled_words_tests {
    use super::pooled_words;
    use crate::early_stop::Assessment;

    /// The early stop's note names the metrics whose noise was pooled (issue 43) and the
    /// pool's degrees of freedom; nothing when neither was.
    #[test]
    fn the_note_says_which_noise_was_pooled() {
        let a = Assessment {
            tpot_noise: 0.01,
            tpot_bias: 0.0,
            rate_noise: 0.01,
            rate_bias: 0.0,
            first_round_excess: 0.0,
            noise_factor: 0.5,
            batches: 4,
            tpot_round_sd: 0.01,
            rate_round_sd: 0.01,
            tpot_pooled: false,
            rate_pooled: false,
        };
        assert_eq!(pooled_words(&a, 12), "");
        let both = Assessment {
            tpot_pooled: true,
            rate_pooled: true,
            ..a
        };
        assert_eq!(
            pooled_words(&both, 12),
            " (both metrics' noise pooled with the sweep's finished points near this \
             concurrency: 12 more degrees of freedom)"
        );
        let rate = Assessment {
            rate_pooled: true,
            ..a
        };
        assert!(pooled_words(&rate, 3).starts_with(" (the throughput's noise pooled"));
    }
}
