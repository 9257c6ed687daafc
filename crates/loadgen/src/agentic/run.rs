//! [`run_replay`]: the AgentX replay against a live server. The [`Scheduler`] decides what to
//! send and when; this loop reads the run clock, renders each prompt while its request is in
//! flight only, sends it through the one client, and feeds completions back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use inferbench_client::{
    Backend, CancellationToken, Client, ClientConfig, ClockSource, MaxTokensField, RequestInput,
    RequestMeta, RunClock,
};
use inferbench_core::metrics::Distribution;
use inferbench_core::summary::{summarize_compacted, RunSummary, StopReason, SummaryContext};
use inferbench_core::{AgenticRef, ErrorClass, Phase, RequestRecord, RunEnd};
use inferbench_telemetry::scrape::Scraper;
use inferbench_workload::agentx::Trace;
use tokio::sync::mpsc;

use super::overhead::TemplateOverhead;
use super::plan::TreePlan;
use super::prompt::{Prompter, StreamCursor};
use super::sched::{Dispatch, Kind, Outcome, RunPhase, SchedConfig, SchedStats, Scheduler};
use crate::options::ProgressMode;
use crate::output::{self, RecordSink};
use crate::progress::{Counters, Progress};

/// Substrings (lower case) of an error body that mean the prompt exceeded the server's context
/// (AIPerf's `AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS` defaults, reference/agentx.md §3.9).
pub const CONTEXT_OVERFLOW_MARKERS: [&str; 5] = [
    "context length",
    "maximum context",
    "context_length_exceeded",
    "prompt is too long",
    "context window",
];

/// Everything a replay needs besides the traces.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Server base URL (`--base-url`), without the endpoint.
    pub base_url: String,
    /// Endpoint path (`--endpoint`, default `/v1/chat/completions`).
    pub endpoint: Option<String>,
    /// Model name sent in every request (`--model`).
    pub model: String,
    /// Bearer token.
    pub api_key: Option<String>,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// `--header-template` / `--dp-rank-roundrobin`: headers rendered per request from its
    /// send index.
    pub header_templates: Vec<inferbench_client::HeaderTemplate>,
    /// `--allow-empty-content`: the first content field ends TTFT even when empty.
    pub allow_empty_content: bool,
    /// HTTP proxy URL for the requests (`http_proxy` / `HTTP_PROXY`; `None` with
    /// `--no-proxy`); loopback targets and `no_proxy_hosts` are never proxied.
    pub proxy: Option<String>,
    /// `no_proxy` / `NO_PROXY`: hosts never proxied.
    pub no_proxy_hosts: Option<String>,
    /// How an `https://` target is verified (`--tls-ca FILE`, `--insecure`).
    pub tls: inferbench_client::tls::TlsOptions,
    /// Extra body keys (`--extra-body`), merged last.
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Output-length field(s) (`--max-tokens-field`; default `max_completion_tokens`, as
    /// AIPerf sends, §2.8).
    pub max_tokens_field: Option<MaxTokensField>,
    /// Idle timeout per request.
    pub idle_timeout: Duration,
    /// Total timeout per request (`None` = none).
    pub request_timeout: Option<Duration>,
    /// Lanes, duration, t*, warmup, idle caps, seed.
    pub sched: SchedConfig,
    /// Time in-flight requests get after the duration ends (AIPerf's benchmark grace, 30 s);
    /// the rest are cancelled and left out of the metrics.
    pub grace: Duration,
    /// Stop when more than this fraction of profile requests failed (`--failed-request-threshold`,
    /// 0.10), counted once max(lanes, 10) profile records exist; context overflows excluded.
    pub failed_request_threshold: f64,
    /// `--save-requests`: every record as JSONL, written as requests finish.
    pub save_requests: Option<PathBuf>,
    /// Live progress.
    pub progress: ProgressMode,
    /// Scrape the server's `/metrics` at this interval (InferenceX's AgentX: 1 s slices), with a
    /// baseline before the warmup, a mark at T0 and a final scrape; `None` = off.
    pub server_metrics_interval: Option<Duration>,
    /// Where the replay reads time (not a flag): [`ClockSource::System`] for every real
    /// replay; tests pass [`ClockSource::Tokio`] under a paused runtime.
    pub clock: ClockSource,
    /// The file-size room of the records files (`requests.jsonl` and AIPerf's
    /// `profile_export.jsonl`, a line per record each), set from `ulimit -f` by the CLI (not a
    /// flag); `None`: unbounded. The replay's request count is not known up front (it runs for
    /// a duration), so the files are bounded instead: the profile ends early, as at its
    /// duration and with a note, once the lines written and the most requests in flight at
    /// once could no longer fit (issue 39, files, ingest and hints, 2).
    pub records_room: Option<RecordsRoom>,
    /// The most bytes `server_metrics.jsonl` may hold (the file-size limit; `None`: all the
    /// scrapes): past it the scrapes are thinned evenly to fit
    /// (`inferbench_telemetry::scrape::write_jsonl_within`), as `bench`'s are.
    pub server_metrics_max_bytes: Option<u64>,
    /// The most records the replay keeps before its profile ends (issue 39: a replay keeps
    /// every record until its summary, as many as the server answers in its duration; the CLI
    /// derives the bound from `ulimit -v`): reached in the profile, the profile ends there as
    /// at the end of its duration (requests in flight get the grace), with a note and
    /// `inferbench.stopped_reason`. Not a flag; `None`: not bounded.
    pub record_bound: Option<crate::options::RecordBound>,
}

/// How much a replay's records files may hold ([`ReplayOptions::records_room`]), and the most
/// bytes one record's line takes in either of them (as estimated by the caller: a fixed part
/// and a part per output token; a request's output tokens are at most its trace's `out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordsRoom {
    /// Bytes each records file may hold.
    pub bytes: u64,
    /// Bytes of one record's line at most, before its output tokens.
    pub line_bytes: u64,
    /// Bytes per output token of one record's line at most.
    pub line_bytes_per_token: u64,
}

impl ReplayOptions {
    /// How the side requests (`/v1/models`, `/metrics`) reach the server: the measured
    /// requests' TLS verification and proxy.
    pub fn reach(&self) -> inferbench_client::Reach {
        inferbench_client::Reach {
            tls: self.tls.clone(),
            proxy: self.proxy.clone(),
            no_proxy: self.no_proxy_hosts.clone(),
        }
    }
}

impl Default for ReplayOptions {
    /// InferenceX's AgentX client settings (reference/agentx.md §3.10; `inferbench replay`'s
    /// flag defaults): chat endpoint, idle timeout 600 s, request timeout 21,600 s, 30 s grace,
    /// failed-request threshold 10 %, `/metrics` every 1 s, no records file, no progress; the
    /// base URL `http://127.0.0.1:8000` and an empty model are placeholders to set.
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8000".into(),
            endpoint: None,
            model: String::new(),
            api_key: None,
            headers: Vec::new(),
            header_templates: Vec::new(),
            allow_empty_content: false,
            proxy: None,
            no_proxy_hosts: None,
            tls: Default::default(),
            extra_body: None,
            max_tokens_field: None,
            idle_timeout: Duration::from_secs(600),
            request_timeout: Some(Duration::from_secs(21_600)),
            sched: SchedConfig::default(),
            grace: Duration::from_secs(30),
            failed_request_threshold: 0.10,
            save_requests: None,
            progress: ProgressMode::Off,
            server_metrics_interval: Some(Duration::from_secs(1)),
            clock: ClockSource::System,
            records_room: None,
            server_metrics_max_bytes: None,
            record_bound: None,
        }
    }
}

/// What a replay produced.
#[derive(Debug)]
pub struct ReplayOutcome {
    /// Every record (primers, warmup, profile; the duration-cut ones marked cancelled), in
    /// completion order, compacted ([`RequestRecord::compact`]: no chunks or output text; the
    /// records file has them whole).
    pub records: Vec<RequestRecord>,
    /// Profile start (T0) and end, ns on the run clock.
    pub profile_window_ns: Option<(u64, u64)>,
    /// Wall-clock time of the run clock's zero, ns since the Unix epoch.
    pub anchor_unix_ns: u64,
    /// Scheduler counters (idle jumps, plays, overflow skips).
    pub stats: SchedStats,
    /// Why it stopped.
    pub stop: ReplayStop,
    /// Why the profile ended before its duration when the record bound ended it
    /// ([`ReplayOptions::record_bound`]): "stopped after N requests: …".
    pub stopped_reason: Option<String>,
    /// Problems worth printing; the stop note among them.
    pub notes: Vec<String>,
    /// The note on why the replay stopped when it did not complete (interrupted, the failure
    /// threshold, a failed main-agent warmup or an unreachable server; also in `notes`):
    /// the point's outcome, which callers state as such rather than as a warning.
    pub stop_note: Option<String>,
    /// `/metrics` snapshots (empty when scraping was off or the server has none).
    pub server_snapshots: Vec<inferbench_core::server_metrics::Snapshot>,
    /// The pooled ITL sample (ms, the default percentiles) over the counted records, taken
    /// before they were compacted; `None` when it could not be read back (then the summary's
    /// ITL statistics are empty and `notes` says why).
    pub itl_ms: Option<Distribution>,
    /// The server's chat-template overhead measured before the warmup (issue 39 §4), which each
    /// request's ISL check adds to the trace's `in`; `None` when it could not be measured.
    pub template_overhead: Option<TemplateOverhead>,
    /// Why writing the records file (`requests.jsonl`, `save_requests`) failed, if it did
    /// (also in `notes`): the point fails, exit 1 (issue 39 §2: it exited 0 and said "wrote").
    pub records_write_error: Option<String>,
    /// The early stop's tolerance when the replay ran under it ([`run_replay_adaptive`]), and
    /// whether it ended the replay before its duration.
    pub early_stop: Option<(f64, bool)>,
    /// [`ReplayOptions::server_metrics_max_bytes`], which [`write_artifacts`] writes the
    /// scrapes within.
    pub server_metrics_max_bytes: Option<u64>,
}

/// How a replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayStop {
    /// The duration elapsed (or every trace ran out).
    Completed,
    /// Ctrl-C / SIGTERM.
    Interrupted,
    /// The failed-request threshold was crossed.
    FailedThreshold,
    /// A root warmup request failed (§3.4).
    WarmupFailed,
}

fn is_context_overflow(rec: &RequestRecord) -> bool {
    if rec.success {
        return false;
    }
    let Some(e) = rec.error.as_deref() else {
        return false;
    };
    let e = e.to_ascii_lowercase();
    CONTEXT_OVERFLOW_MARKERS.iter().any(|m| e.contains(m))
}

struct Done {
    ticket: super::sched::Ticket,
    rec: RequestRecord,
}

/// Runs the replay of `traces` until the duration ends, the failure threshold is crossed, a
/// root warmup request fails, or `cancel` fires. Finished records are always returned (and
/// streamed to `--save-requests`); cancelled in-flight requests are recorded as `cancelled`.
///
/// Errors: a bad URL/header, an unwritable `--save-requests`, no usable trace.
pub async fn run_replay(
    opts: ReplayOptions,
    traces: Arc<Vec<Trace>>,
    prompter: Arc<Prompter>,
    cancel: CancellationToken,
) -> anyhow::Result<ReplayOutcome> {
    run_replay_adaptive(opts, traces, prompter, cancel, None).await
}

/// [`run_replay`] under `sweep --adaptive`'s early stop for AgentX (issue 43, `early_stop`,
/// [`crate::early_stop::AgenticEarlyStop`]): the replay may end before its duration, never
/// before 900 s of profiling, once its p90 E2E-normalized interactivity is known within the
/// rule's tolerance; it then ends as at its duration (a note says so) and its outcome's
/// `early_stop` carries the tolerance. `None`: exactly [`run_replay`]. Errors: as
/// [`run_replay`].
pub async fn run_replay_adaptive(
    opts: ReplayOptions,
    traces: Arc<Vec<Trace>>,
    prompter: Arc<Prompter>,
    cancel: CancellationToken,
    early_stop: Option<crate::early_stop::AgenticEarlyStop>,
) -> anyhow::Result<ReplayOutcome> {
    let plans: Vec<TreePlan> = traces
        .iter()
        .enumerate()
        .map(|(i, t)| TreePlan::build(i, t))
        .collect();
    if plans.iter().all(|p| p.reqs.is_empty()) {
        anyhow::bail!("no trace has a request to replay");
    }
    // The chat template's overhead on the server's prompt counts, measured before the run
    // clock starts and before the `/metrics` baseline (issue 39 §4).
    let body_max =
        crate::options::extra_body_max_tokens(Backend::OpenAiChat, opts.extra_body.as_ref())?;
    let mut probe_notes = Vec::new();
    let overhead = measure_overhead(&opts, &cancel, &mut probe_notes).await?;
    let per_lane = plans
        .iter()
        .map(TreePlan::peak_in_flight)
        .max()
        .unwrap_or(1);
    let mut sched = Scheduler::new(Arc::new(plans), opts.sched.clone());
    let clock = RunClock::start_on(opts.clock);
    let anchor_unix_ns = clock.unix_now_ns();
    let client = replay_client(&opts, clock)?;
    // Connections beyond each lane's peak of requests in flight (its session's main agent and
    // parallel sub-agents) are closed when idle: the open-file check counted that many.
    client.limit_connections((opts.sched.lanes as usize).saturating_mul(per_lane as usize));
    let mut sinks = Sinks::start(&opts, clock.source()).await?;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    // Requests in flight end early on Ctrl-C, the failure threshold, or after the grace.
    let stop_requests = CancellationToken::new();
    let mut cursors: HashMap<(u32, u32), StreamCursor> = HashMap::new();
    let mut st = LoopState::new(u64::from(opts.sched.lanes).max(10));
    st.early_rule = early_stop.map(|r| r.with_duration(opts.sched.duration_ns));
    st.notes.append(&mut probe_notes);
    st.anchor_unix_ns = anchor_unix_ns;
    st.count_lines = opts.records_room.is_some();
    // A line per request in flight at most at once, each of the traces' longest output.
    let room = opts.records_room.map(|r| {
        let out = (traces.iter())
            .flat_map(|t| t.streams.iter().flat_map(|s| s.requests.iter()))
            .map(|q| u64::from(q.output_tokens))
            .max()
            .unwrap_or(0);
        let line = r
            .line_bytes
            .saturating_add(out.saturating_mul(r.line_bytes_per_token));
        let in_flight = u64::from(opts.sched.lanes).saturating_mul(per_lane);
        (r.bytes, line.saturating_mul(in_flight))
    });

    loop {
        let now = clock.now_ns();
        if let Some((bytes, reserve)) = room {
            st.room_check(bytes, reserve, &mut sched, now);
        }
        let was_warmup = sched.phase() == RunPhase::Warmup;
        let batch = if st.stop == ReplayStop::Completed {
            sched.poll(now)
        } else {
            Vec::new()
        };
        if was_warmup && sched.phase() != RunPhase::Warmup {
            sinks.start_profile(&opts).await;
        }
        for d in batch {
            st.in_flight += 1;
            let id = st.next_id;
            st.next_id += 1;
            spawn_request(
                &client,
                &traces,
                &prompter,
                &mut cursors,
                (d, id, overhead, body_max),
                &done_tx,
                &stop_requests,
            );
        }
        st.follow_phase(&sched, now, &stop_requests);
        let ending = st.stop != ReplayStop::Completed
            || matches!(sched.phase(), RunPhase::Ended | RunPhase::Aborted);
        if ending && st.in_flight == 0 {
            break;
        }
        let wake = st.wake_at(ending, &sched, &clock, opts.grace);
        tokio::select! {
            biased;
            _ = cancel.cancelled(), if st.stop != ReplayStop::Interrupted => {
                st.stop = ReplayStop::Interrupted;
                stop_requests.cancel();
            }
            Some(done) = done_rx.recv() => {
                st.on_done(done, &mut sched, &sinks.rec_tx, &opts, &stop_requests);
            }
            _ = async {
                match wake {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending::<()>().await,
                }
            } => {
                if ending {
                    // The grace ended: what is still in flight is cancelled.
                    stop_requests.cancel();
                }
            }
        }
    }
    sinks.end_progress(st.next_id).await;
    if st.profile_window.is_none() {
        if let Some(t0) = sched.profile_start_ns() {
            st.profile_window = Some((t0, clock.now_ns()));
        }
    }
    let (kept, write_error, server_snapshots) = sinks.finish().await?;
    let mut notes = st.notes;
    let records_write_error = write_error.clone();
    let (records, itl_ms) = kept_results(kept, write_error, &mut notes);
    let not_found = match (st.stop, first_warmup_failure(&records)) {
        (ReplayStop::WarmupFailed, Some(r)) => {
            let url = inferbench_client::join_url(
                &opts.base_url,
                opts.endpoint
                    .as_deref()
                    .unwrap_or(Backend::OpenAiChat.default_endpoint()),
            );
            let msg = r.error.as_deref().unwrap_or_default();
            inferbench_client::models::explain_not_found(
                &opts.base_url,
                &opts.model,
                &url,
                msg,
                &opts.reach(),
            )
            .await
        }
        _ => None,
    };
    let stop_note = stop_note(st.stop, &records, &opts, not_found).or(st.threshold_note);
    notes.extend(stop_note.clone());
    Ok(ReplayOutcome {
        records,
        profile_window_ns: st.profile_window,
        anchor_unix_ns,
        stats: sched.stats().clone(),
        stop: st.stop,
        stopped_reason: st.bounded,
        notes,
        stop_note,
        server_snapshots,
        itl_ms,
        template_overhead: overhead,
        records_write_error,
        early_stop: early_stop.map(|r| (r.tolerance, st.early_stopped)),
        server_metrics_max_bytes: opts.server_metrics_max_bytes,
    })
}

/// The marker of the template probes: a cache-bust marker of the same shape as the requests'
/// (12 hex digits), of an id the run's markers are not drawn from in practice.
const PROBE_MARKER_ID: u64 = 0xffff_ffff_ffff;

/// The server's chat-template overhead ([`super::overhead::measure`], on a client of its own so
/// the run clock starts after it). `None` when it could not be measured: a note says why unless
/// the server could not be reached at all or answered 404 (a wrong `--model`: the run itself
/// then says so). Errors: a bad URL or header (as the run's client).
async fn measure_overhead(
    opts: &ReplayOptions,
    cancel: &CancellationToken,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<TemplateOverhead>> {
    let probe_client = replay_client(opts, RunClock::start_on(opts.clock))?;
    let marker = inferbench_workload::cache_bust_marker(PROBE_MARKER_ID);
    Ok(
        match super::overhead::measure(&probe_client, &marker, cancel).await {
            Ok(o) => Some(o),
            Err(e) => {
                // An unreachable server or a wrong --model (404) fails the run's own requests
                // too, which say so; only a probe-specific failure gets a note.
                let said_by_the_run =
                    e.starts_with(ErrorClass::Connect.as_str()) || e.contains("HTTP 404");
                if !said_by_the_run && !cancel.is_cancelled() {
                    notes.push(format!(
                        "the chat template's overhead could not be measured ({e}): isl_mismatch \
                         compares each request's server prompt count with the trace's `in` alone"
                    ));
                }
                None
            }
        },
    )
}

/// The records of the replay and their pooled ITL distribution (ms, at the default
/// percentiles, sampled before compaction) from what the collector `kept`; the notes on reading
/// spilled gaps back, on spilling, and on a `--save-requests` `write_error` go to `notes`.
fn kept_results(
    mut kept: crate::kept::KeptRecords,
    write_error: Option<String>,
    notes: &mut Vec<String>,
) -> (Vec<RequestRecord>, Option<Distribution>) {
    let itl_ms = match kept.itl_distribution(&SummaryContext::default().metric_percentiles) {
        Ok(d) => Some(d),
        Err(e) => {
            notes.push(crate::kept::read_back_note(&e));
            None
        }
    };
    notes.extend(kept.spill_note());
    if let Some(e) = write_error {
        notes.push(format!("writing --save-requests failed: {e}"));
    }
    (kept.records, itl_ms)
}

/// The replay's HTTP client on the run clock `clock`: chat completions to `opts`' server and
/// model, EOS ignored, `max_completion_tokens` unless `--max-tokens-field` says otherwise,
/// read-time stamps on, no client-side token counting (the server's usage counts).
fn replay_client(opts: &ReplayOptions, clock: RunClock) -> anyhow::Result<Client> {
    Ok(Client::with_clock(
        ClientConfig {
            base_url: opts.base_url.clone(),
            endpoint: opts.endpoint.clone(),
            backend: Backend::OpenAiChat,
            model: opts.model.clone(),
            api_key: opts.api_key.clone(),
            headers: opts.headers.clone(),
            header_templates: opts.header_templates.clone(),
            allow_empty_content: opts.allow_empty_content,
            proxy: opts.proxy.clone(),
            no_proxy: opts.no_proxy_hosts.clone(),
            tls: opts.tls.clone(),
            extra_body: opts.extra_body.clone(),
            ignore_eos: true,
            max_tokens_field: Some(
                opts.max_tokens_field
                    .unwrap_or(MaxTokensField::MaxCompletionTokens),
            ),
            idle_timeout: opts.idle_timeout,
            request_timeout: opts.request_timeout,
            token_counter: None,
            rx_timestamps: true,
        },
        clock,
    )?)
}

/// Where a replay's records and telemetry go: the records collector (and `--save-requests`),
/// the progress display over its counters, and the server's `/metrics` scraper.
struct Sinks {
    /// Finished records, to the collector.
    rec_tx: mpsc::UnboundedSender<RequestRecord>,
    collector: tokio::task::JoinHandle<(crate::kept::KeptRecords, Option<String>)>,
    counters: Arc<Counters>,
    progress: Option<Progress>,
    scraper: Option<Scraper>,
    /// The scrape has its profile mark.
    marked: bool,
    /// The run clock's source (progress displays and the settle wait read time from it).
    clock: ClockSource,
}

impl Sinks {
    /// Opens `--save-requests`, starts the collector, the `/metrics` scraper (with
    /// `--server-metrics-interval`) and the warmup's progress display. Errors: the records file
    /// cannot be created.
    async fn start(opts: &ReplayOptions, clock: ClockSource) -> anyhow::Result<Sinks> {
        let sink = match &opts.save_requests {
            Some(p) => Some(RecordSink::create(p)?),
            None => None,
        };
        let (rec_tx, rec_rx) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters::default());
        // Records are compacted as they finish (issue 14: an hour-long replay of ~100k requests
        // of ~800 tokens kept gigabytes of chunks): the AIPerf files and the agentic aggregate
        // read per-request times only, and the pooled ITL sample is taken before compaction.
        let collector = tokio::spawn(output::collect(rec_rx, sink, counters.clone(), false));
        let scraper = match opts.server_metrics_interval {
            Some(iv) => Scraper::start(&opts.base_url, iv, &opts.reach()).await,
            None => None,
        };
        let progress = Some(Progress::start(
            opts.progress,
            "warmup",
            None,
            None,
            counters.clone(),
            clock,
        ));
        Ok(Sinks {
            rec_tx,
            collector,
            counters,
            progress,
            scraper,
            marked: false,
            clock,
        })
    }

    /// The switch from warmup to the profile: marks the scrape (once), ends the warmup's
    /// progress display and starts the replay's (over the `--duration`), counting from the
    /// profile start.
    async fn start_profile(&mut self, opts: &ReplayOptions) {
        if let (Some(sc), false) = (&self.scraper, self.marked) {
            sc.mark("profile").await;
            self.marked = true;
        }
        if let Some(p) = self.progress.take() {
            p.finish().await;
        }
        self.counters.start_profile();
        self.progress = Some(Progress::start(
            opts.progress,
            "replay",
            None,
            Some(Duration::from_nanos(opts.sched.duration_ns)),
            self.counters.clone(),
            self.clock,
        ));
    }

    /// Ends the progress display once the collector counted every one of the `sent` records
    /// (waiting at most 2 s), so that its last line shows them all.
    async fn end_progress(&mut self, sent: u64) {
        self.counters
            .settle(sent, Duration::from_secs(2), self.clock)
            .await;
        if let Some(p) = self.progress.take() {
            p.finish().await;
        }
    }

    /// Closes the records channel and stops the scraper; returns the kept records, the
    /// `--save-requests` write error (if any) and the `/metrics` snapshots.
    async fn finish(
        self,
    ) -> anyhow::Result<(
        crate::kept::KeptRecords,
        Option<String>,
        Vec<inferbench_core::server_metrics::Snapshot>,
    )> {
        drop(self.rec_tx);
        let server_snapshots = match self.scraper {
            Some(sc) => sc.finish().await,
            None => Vec::new(),
        };
        let (kept, write_error) = self.collector.await.context("record collector panicked")?;
        Ok((kept, write_error, server_snapshots))
    }
}

/// What the replay loop keeps between its turns.
struct LoopState {
    /// Why the replay stops (`Completed` while it runs).
    stop: ReplayStop,
    /// Profile requests finished (not cut by the run), and those of them that failed (context
    /// overflows excluded): the failure threshold's counts.
    profile_done: u64,
    profile_failed: u64,
    /// Profile requests finished before the failure threshold is judged (lanes, at least 10).
    arm_after: u64,
    /// Requests sent and not finished.
    in_flight: u64,
    /// The next request id (also the number sent so far).
    next_id: u64,
    /// The profiling window on the run clock, ns: `(profile start, the moment it ended)`.
    profile_window: Option<(u64, u64)>,
    /// When the grace for requests in flight at the end runs out.
    grace_deadline: Option<tokio::time::Instant>,
    /// Notes for the user.
    notes: Vec<String>,
    /// The failure threshold's note, once it stopped the replay.
    threshold_note: Option<String>,
    /// The early stop's samples ([`crate::early_stop::agentic_sample`]) and the first profile
    /// send, ns on the run clock (issue 43).
    early_samples: Vec<crate::early_stop::AgenticSample>,
    first_profile_send: Option<u64>,
    /// The early stop ended the profile.
    early_stopped: bool,
    /// The early-stop rule, `None` without `sweep --adaptive`.
    early_rule: Option<crate::early_stop::AgenticEarlyStop>,
    /// Bytes of the records files' lines so far (`requests.jsonl`'s and
    /// `profile_export.jsonl`'s, the larger), counted only under a records room.
    records_bytes: u64,
    /// Whether the records room ended the profile.
    room_stopped: bool,
    /// Unix ns of the run clock's zero (the AIPerf lines' times).
    anchor_unix_ns: u64,
    /// Whether to count the records' lines (a records room is set).
    count_lines: bool,
    /// Records handed to the collector (every phase), against the record bound.
    kept: u64,
    /// The record bound ended the profile: its reason.
    bounded: Option<String>,
}

impl LoopState {
    fn new(arm_after: u64) -> Self {
        LoopState {
            stop: ReplayStop::Completed,
            profile_done: 0,
            profile_failed: 0,
            arm_after,
            in_flight: 0,
            next_id: 0,
            profile_window: None,
            grace_deadline: None,
            notes: Vec::new(),
            threshold_note: None,
            early_samples: Vec::new(),
            first_profile_send: None,
            early_stopped: false,
            early_rule: None,
            records_bytes: 0,
            room_stopped: false,
            anchor_unix_ns: 0,
            count_lines: false,
            kept: 0,
            bounded: None,
        }
    }

    /// The records room ([`ReplayOptions::records_room`]): once the lines written
    /// (`records_bytes`) and `reserve` (the lines of the most requests in flight at once)
    /// would pass `bytes`, the profile ends at `now` as at its duration, with a note (once,
    /// while profiling: the warmup is within the room by the caller's check).
    fn room_check(&mut self, bytes: u64, reserve: u64, sched: &mut Scheduler, now: u64) {
        if self.room_stopped
            || self.stop != ReplayStop::Completed
            || sched.phase() != RunPhase::Profile
            || self.records_bytes.saturating_add(reserve) <= bytes
        {
            return;
        }
        sched.end_profile_at(now);
        self.room_stopped = true;
        self.notes.push(format!(
            "the records files (requests.jsonl, profile_export.jsonl) reached what the \
             file-size limit `ulimit -f` leaves them ({} of {bytes} bytes, with {reserve} kept \
             for the requests in flight): the profile ended early, as at its duration, and every \
             file is whole (raise `ulimit -f` for the whole duration)",
            self.records_bytes
        ));
    }

    /// Follows the scheduler's phase at `now` (run clock, ns): the profiling window closes
    /// when the profile ends; a failed root warmup (`Aborted`) stops the replay and cancels
    /// the requests in flight (`stop_requests`).
    fn follow_phase(&mut self, sched: &Scheduler, now: u64, stop_requests: &CancellationToken) {
        if let (Some(t0), None) = (sched.profile_start_ns(), self.profile_window) {
            if matches!(sched.phase(), RunPhase::Ended) {
                self.profile_window = Some((t0, now));
            }
        }
        if sched.phase() == RunPhase::Aborted && self.stop == ReplayStop::Completed {
            self.stop = ReplayStop::WarmupFailed;
            stop_requests.cancel();
        }
    }

    /// When the loop wakes next without a finished request: the end of the `grace` (started
    /// now when the replay is `ending`), else the scheduler's next dispatch on the run clock
    /// `clock`; `None`: only a finished request or a signal wakes it.
    fn wake_at(
        &mut self,
        ending: bool,
        sched: &Scheduler,
        clock: &RunClock,
        grace: Duration,
    ) -> Option<tokio::time::Instant> {
        if ending && self.grace_deadline.is_none() {
            self.grace_deadline = Some(tokio::time::Instant::from_std(clock.now() + grace));
        }
        if ending {
            self.grace_deadline
        } else {
            sched
                .next_wakeup()
                .map(|ns| tokio::time::Instant::from_std(clock.instant_at(ns)))
        }
    }

    /// A finished request: counted for the failure threshold (profile requests not cut by the
    /// run), completed in the scheduler with its outcome (ok, context overflow, error) and
    /// handed to the collector (`rec_tx`). Crossing `--failed-request-threshold` (a fraction)
    /// stops the replay with a note and cancels the requests in flight.
    fn on_done(
        &mut self,
        Done { ticket, rec }: Done,
        sched: &mut Scheduler,
        rec_tx: &mpsc::UnboundedSender<RequestRecord>,
        opts: &ReplayOptions,
        stop_requests: &CancellationToken,
    ) {
        self.in_flight -= 1;
        let overflow = is_context_overflow(&rec);
        let outcome = if rec.success {
            Outcome::Ok
        } else if overflow {
            Outcome::ContextOverflow
        } else {
            Outcome::Error
        };
        let cut = rec.error_class == Some(ErrorClass::Cancelled);
        if rec.phase == Phase::Profile && !cut {
            self.profile_done += 1;
            if !rec.success && !overflow {
                self.profile_failed += 1;
            }
        }
        sched.complete(ticket, rec.end_ns.max(rec.sent_ns), outcome);
        if rec.phase == Phase::Profile && !cut {
            self.early_stop_check(&rec, sched);
        }
        if self.count_lines {
            let saved = serde_json::to_vec(&rec).map_or(0, |v| v.len() as u64 + 1);
            let aiperf = super::aiperf::profile_export_line(&rec, self.anchor_unix_ns)
                .to_string()
                .len() as u64
                + 1;
            self.records_bytes = self.records_bytes.saturating_add(saved.max(aiperf));
        }
        let end = rec.end_ns.max(rec.sent_ns);
        let _ = rec_tx.send(rec);
        self.kept += 1;
        self.record_bound_check(opts, sched, end);
        let (done, failed) = (self.profile_done, self.profile_failed);
        if self.stop == ReplayStop::Completed
            && done >= self.arm_after
            && failed as f64 > opts.failed_request_threshold * done as f64
        {
            self.stop = ReplayStop::FailedThreshold;
            let note = format!(
                "{failed} of {done} profile requests failed (more than \
                 --failed-request-threshold {:.0} %): stopped; results cover the finished \
                 requests",
                opts.failed_request_threshold * 100.0
            );
            self.threshold_note = Some(note);
            stop_requests.cancel();
        }
    }
}

impl LoopState {
    /// The record bound ([`ReplayOptions::record_bound`]): once the records kept reach it in
    /// the profile, the profile ends at `now` as at its duration, once, with a note.
    fn record_bound_check(&mut self, opts: &ReplayOptions, sched: &mut Scheduler, now: u64) {
        let Some(b) = opts.record_bound else {
            return;
        };
        if self.bounded.is_some()
            || self.kept < b.records
            || self.stop != ReplayStop::Completed
            || sched.phase() != RunPhase::Profile
        {
            return;
        }
        sched.end_profile_at(now);
        let why = b.reason(self.kept);
        self.notes.push(format!(
            "warning: {why}; the replay ended there as at the end of its --benchmark-duration \
             (requests in flight got the grace) and its summary covers them"
        ));
        self.bounded = Some(why);
    }

    /// `sweep --adaptive`'s AgentX early stop (issue 43): takes the finished profile request
    /// `rec` (not cut by the run) as a sample and, when a check is due (at least 900 s after the
    /// first profile send) and the p90 E2E-normalized interactivity is known, ends the profile
    /// at `rec`'s end as if the duration had run out, with a note. Nothing once the replay is
    /// stopping for another reason.
    fn early_stop_check(&mut self, rec: &RequestRecord, sched: &mut Scheduler) {
        let Some(rule) = self.early_rule else {
            return;
        };
        self.first_profile_send = Some(
            self.first_profile_send
                .map_or(rec.sent_ns, |t| t.min(rec.sent_ns)),
        );
        if self.early_stopped
            || self.stop != ReplayStop::Completed
            || sched.phase() != RunPhase::Profile
        {
            return;
        }
        let Some(s) = crate::early_stop::agentic_sample(rec) else {
            return;
        };
        self.early_samples.push(s);
        let now = rec.end_ns.max(rec.sent_ns);
        let profiled = now.saturating_sub(self.first_profile_send.unwrap_or(now));
        let n = self.early_samples.len() as u64;
        if rule.due(profiled, n) && rule.known(&self.early_samples, profiled) {
            sched.end_profile_at(now);
            self.early_stopped = true;
            self.notes.push(format!(
                "early stop (sweep --adaptive): p90 E2E-normalized interactivity known within \
                 {:.1} % at 95 % confidence after {n} profile requests and {:.0} s of profiling; \
                 the replay ended as at its duration",
                rule.tolerance * 100.0,
                profiled as f64 / 1e9
            ));
        }
    }
}

/// The note on how a replay that did not complete stopped (`stop`): interrupted, or aborted
/// by a failed main-agent warmup (the first such failure in `records`: an unreachable server
/// says so; `not_found`: the explanation of a 404 by the server's /v1/models). `None`
/// otherwise (the failure threshold keeps its own note, `LoopState::threshold_note`).
fn stop_note(
    stop: ReplayStop,
    records: &[RequestRecord],
    opts: &ReplayOptions,
    not_found: Option<String>,
) -> Option<String> {
    match stop {
        ReplayStop::Interrupted => Some("interrupted: results cover the finished requests".into()),
        // A 404 the server's /v1/models explains (a wrong --model), instead of its answer
        // (trial 23: the raw 404 quoted, the served models not named, as `bench` names them).
        ReplayStop::WarmupFailed if not_found.is_some() => Some(format!(
            "a main-agent warmup request failed: {}; the replay was aborted (AgentX rule)",
            not_found.unwrap_or_default()
        )),
        ReplayStop::WarmupFailed => {
            let first = first_warmup_failure(records);
            Some(match first {
                Some(r) if r.error_class == Some(ErrorClass::Connect) => format!(
                    "server unreachable at {}: {} (check --base-url); nothing was measured",
                    opts.base_url,
                    r.error.as_deref().unwrap_or("connection failed")
                ),
                Some(r) => format!(
                    "a main-agent warmup request failed ({}: {}): the replay was aborted \
                     (AgentX rule)",
                    r.error_class.map_or("error", |c| c.as_str()),
                    r.error.as_deref().unwrap_or("")
                ),
                None => "a main-agent warmup request failed: the replay was aborted (AgentX rule)"
                    .into(),
            })
        }
        _ => None,
    }
}

/// The first warmup request that failed (not cancelled by the run).
fn first_warmup_failure(records: &[RequestRecord]) -> Option<&RequestRecord> {
    records.iter().find(|r| {
        !r.success && r.phase == Phase::Warmup && r.error_class != Some(ErrorClass::Cancelled)
    })
}

/// Plans the dispatched turn (cheap), then renders and sends it on a task; the prompt text
/// exists only while the request is in flight.
#[allow(clippy::too_many_arguments)]
///
/// The request's client-side prompt count is the trace's `in` plus the measured template
/// overhead for its number of messages (`overhead`, issue 39 §4), so that its ISL check
/// compares like with like. Its `max_tokens` is the length an `--extra-body` sets
/// (`body_max`, [`crate::options::extra_body_max_tokens`]) when it sets one, else the trace's
/// `out` (1 for a warmup). A prompt whose synthesis fails (a panic) is recorded as a failed
/// request with the cause; the run goes on.
fn spawn_request(
    client: &Client,
    traces: &Arc<Vec<Trace>>,
    prompter: &Arc<Prompter>,
    cursors: &mut HashMap<(u32, u32), StreamCursor>,
    (d, request_id, overhead, body_max): (
        Dispatch,
        u64,
        Option<TemplateOverhead>,
        Option<Option<u32>>,
    ),
    done_tx: &mpsc::UnboundedSender<Done>,
    stop: &CancellationToken,
) {
    let trace = &traces[d.trace];
    let stream = &trace.streams[d.stream as usize];
    let req = &stream.requests[d.turn as usize];
    let cursor = cursors
        .entry((d.play, d.stream))
        .or_insert_with(|| prompter.cursor(trace, d.stream));
    let plan = prompter.plan_turn(cursor, trace, d.stream, d.turn);
    if d.turn as usize + 1 == stream.requests.len() {
        // Nothing of this stream is sent after its last turn: free the cursor.
        cursors.remove(&(d.play, d.stream));
    }
    let (hit_blocks, total_blocks) = prompter.theoretical_hit(d.trace, d.stream, d.turn);
    // An `--extra-body` output length is what the server is sent, for every request.
    let max_tokens = match body_max {
        Some(set) => set,
        None if d.kind == Kind::Profile => Some(req.output_tokens.max(1)),
        None => Some(1),
    };
    let meta = RequestMeta {
        request_id,
        phase: d.phase,
        scheduled_ns: d.scheduled_ns,
        conversation_id: Some(stream.id.clone()),
        turn: Some(d.turn),
        // The id the AIPerf export names this conversation by (one per play and stream).
        correlation_id: Some(super::aiperf::correlation_id_of(d.play, &stream.id)),
        headers: Vec::new(),
    };
    let agentic = AgenticRef {
        lane: d.lane,
        play: d.play,
        trace_id: trace.id.clone(),
        pass: d.pass,
        kind: match d.kind {
            Kind::Primer => "primer",
            Kind::Warmup => "warmup",
            Kind::Profile => "profile",
        }
        .to_string(),
        hit_blocks,
        total_blocks,
        expected_output_tokens: req.output_tokens,
        expected_input_tokens: req.input_tokens,
        parent_stream: stream.parent.clone(),
        gap_capped_ns: d.gap_capped_ns,
    };
    let client = client.clone();
    let traces = Arc::clone(traces);
    let prompter = Arc::clone(prompter);
    let done_tx = done_tx.clone();
    let stop = stop.clone();
    let ticket = d.ticket;
    let marker = inferbench_workload::cache_bust_marker(d.marker_id);
    let template_tokens = overhead.map_or(0, |o| o.tokens(plan.segments.len() as u32));
    tokio::spawn(async move {
        let trace = &traces[d.trace];
        let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            prompter.render(&plan, trace, d.stream, &marker)
        }));
        let mut rec = match rendered {
            Ok((messages, prompt_tokens)) => {
                let input = RequestInput {
                    text: "",
                    messages: Some(&messages),
                    prompt_tokens: prompt_tokens.saturating_add(template_tokens),
                    max_tokens,
                };
                client.send(&input, meta, &stop).await
            }
            Err(panic) => synthesis_failed(&client, meta, &plan, max_tokens, panic),
        };
        rec.agentic = Some(agentic);
        let _ = done_tx.send(Done { ticket, rec });
    });
}

/// The failed record of a request whose prompt could not be synthesized (`panic`: the payload
/// of the panic it raised): sent and ended now, class `malformed` (as the client's own internal
/// errors), its cause in `error`.
fn synthesis_failed(
    client: &Client,
    meta: RequestMeta,
    plan: &inferbench_workload::agentx::synth::TurnPlan,
    max_tokens: Option<u32>,
    panic: Box<dyn std::any::Any + Send>,
) -> RequestRecord {
    let why = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown cause".into());
    let now = client.clock().now_ns();
    RequestRecord {
        request_id: meta.request_id,
        phase: meta.phase,
        conversation_id: meta.conversation_id,
        turn: meta.turn,
        scheduled_ns: meta.scheduled_ns,
        sent_ns: now,
        end_ns: now,
        success: false,
        error_class: Some(ErrorClass::Malformed),
        error: Some(format!(
            "the client could not synthesize this request's prompt ({} tokens; a client bug, \
             nothing was sent): {why}",
            plan.prompt_tokens
        )),
        prompt_tokens_client: plan.prompt_tokens,
        max_tokens,
        ..Default::default()
    }
}

/// Records that count for the metrics: profile requests not cut off by the end of the run
/// (those cancelled after the duration's grace, or by Ctrl-C, stay in `requests.jsonl` only).
pub fn measured(records: &[RequestRecord]) -> Vec<RequestRecord> {
    records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.error_class != Some(ErrorClass::Cancelled))
        .cloned()
        .collect()
}

/// The vLLM-shaped [`RunSummary`] of a replay (metrics over [`measured`] records; warmups and
/// primers counted as warmups), with `metadata.scenario_type = agentic-coding` and
/// `submission_valid`; `valid` is false for runs below AgentX's 900 s minimum
/// (`--unsafe-override`). Input tokens are the server's counts (`usage.prompt_tokens`, as AIPerf
/// with `--use-server-token-count` and InferenceX's aggregate), not the synthesized `in`. The
/// window (duration, unix span) is the profiled records' first send to last completion.
/// Requests cut at the duration's end are left out; after Ctrl-C the cancelled ones count as
/// `cancelled_by_user`. A replay that never reached the server stops as `server_unreachable`.
pub fn replay_summary(out: &ReplayOutcome, model: &str, lanes: u32, valid: bool) -> RunSummary {
    // Requests cut at the duration's end are left out (AIPerf); after Ctrl-C they are kept,
    // counted as cancelled by the user (neither successes nor failures).
    let interrupted = out.stop == ReplayStop::Interrupted;
    let kept: Vec<RequestRecord> = out
        .records
        .iter()
        .filter(|r| {
            interrupted || r.phase == Phase::Warmup || r.error_class != Some(ErrorClass::Cancelled)
        })
        .map(|r| {
            let mut r = r.clone();
            r.prompt_tokens_client = r.prompt_tokens;
            r
        })
        .collect();
    // One window everywhere (duration, throughput, the unix span, the power window): the
    // profiled records' first send to last completion (DESIGN.md §4), else T0 → end.
    let (t0, t1) = inferbench_core::metrics::profile_window_ns(&kept)
        .or(out.profile_window_ns)
        .unwrap_or((0, 0));
    let anchor_s = out.anchor_unix_ns as f64 / 1e9;
    let ctx = SummaryContext {
        backend: "openai-chat".into(),
        model_id: model.to_string(),
        tokenizer_id: "server".into(),
        best_of: 1,
        num_prompts: kept.iter().filter(|r| r.phase == Phase::Profile).count() as u64,
        max_concurrency: Some(lanes),
        burstiness: 1.0,
        // Read when the summary is made (the system clock: a summary is real time).
        date: crate::run::run_date(ClockSource::System),
        benchmark_start_time_unix: Some(anchor_s + t0 as f64 / 1e9),
        benchmark_end_time_unix: Some(anchor_s + t1 as f64 / 1e9),
        interrupted: out.stop == ReplayStop::Interrupted,
        stop_reason: match out.stop {
            ReplayStop::Completed => StopReason::Completed,
            ReplayStop::Interrupted => StopReason::Interrupted,
            ReplayStop::FailedThreshold | ReplayStop::WarmupFailed => StopReason::Aborted,
        },
        metadata: [
            ("scenario_type".to_string(), "agentic-coding".to_string()),
            (
                "submission_valid".to_string(),
                (valid && out.stop == ReplayStop::Completed).to_string(),
            ),
        ]
        .into_iter()
        // Why, for the store's `invalid_reason` (a run cut short says so by its stop reason).
        .chain((!valid).then(|| {
            (
                "submission_invalid_reasons".to_string(),
                inferbench_core::summary::agentic::SHORT_REPLAY_REASON.to_string(),
            )
        }))
        .collect(),
        ..Default::default()
    };
    // Records are compacted: the ITL statistics come from the sample taken before that (the
    // filter above never changes it: ITL counts successful profile requests only).
    let itl = out
        .itl_ms
        .clone()
        .unwrap_or_else(|| Distribution::of(&[], &ctx.metric_percentiles));
    let mut s = summarize_compacted(&kept, &ctx, itl);
    // Under `sweep --adaptive`'s early stop (issue 43): the rule's tolerance and the profile
    // requests the replay kept (`num_prompts`), whether or not it stopped early.
    if let Some((tolerance, _)) = out.early_stop {
        s.inferbench.adaptive = true;
        s.inferbench.adaptive_tolerance = Some(tolerance);
        s.inferbench.prompts_used = Some(ctx.num_prompts);
    }
    s.inferbench.stopped_reason = out.stopped_reason.clone();
    if !interrupted && never_reached(out, s.completed) {
        s.inferbench.stop_reason = StopReason::ServerUnreachable;
    }
    if s.completed == 0 {
        // Every end that measured nothing, cut short or not, writes its cause (issue 39, fresh
        // tester: a replay cut short wrote none while `bench` did; one rule for both).
        s.inferbench.failed_reason = nothing_measured_reason(out);
    }
    // The server's settings, as its first /metrics scrape reports them (issue 39 §5: a
    // replay against another server is not in the same group).
    let first = out
        .server_snapshots
        .first()
        .map_or(&[][..], |f| &f.samples[..]);
    s.inferbench.server = inferbench_core::fingerprint::server_fingerprint(model, None, first, &[]);
    s
}

/// Why a replay measured nothing, or `None` when a profile request succeeded. Such a point is
/// *failed* (issue 39 §9, and §4 of the fresh tester for replay): the summary's
/// `inferbench.failed_reason`, the AgentX aggregate's `failed_reason`, never an
/// `invalid_reason`. By how it ended, with `bench`'s texts where `bench` has the same end
/// (core's `nothing_measured_cause`): a server never reached, `server unreachable: nothing
/// measured`; interrupted, `interrupted before any request finished` (or `… succeeded (F
/// failed): nothing measured`); a failed root warmup, `a main-agent warmup request failed:
/// the replay was aborted (AgentX rule), nothing measured` (the console's note names the
/// failure); the failed-request threshold, `too many requests failed: the replay was aborted
/// before any succeeded (F profile requests failed), nothing measured`; a replay that ran its course, `nothing was measured: none of the N
/// profile requests succeeded (F failed)`, or `nothing was measured: no profile request was
/// sent within the replay window` when none was.
pub fn nothing_measured_reason(out: &ReplayOutcome) -> Option<String> {
    let profile = || {
        out.records
            .iter()
            .filter(|r| r.phase == Phase::Profile && r.error_class != Some(ErrorClass::Cancelled))
    };
    if profile().any(|r| r.success) {
        return None;
    }
    let failed = profile().filter(|r| !r.success).count();
    if out.stop != ReplayStop::Interrupted && never_reached(out, 0) {
        return Some(inferbench_core::summary::nothing_measured_cause(
            Some(StopReason::ServerUnreachable),
            failed as u64,
        ));
    }
    let sent = profile().count();
    Some(match out.stop {
        ReplayStop::Interrupted => inferbench_core::summary::nothing_measured_cause(
            Some(StopReason::Interrupted),
            failed as u64,
        ),
        ReplayStop::WarmupFailed => {
            "a main-agent warmup request failed: the replay was aborted (AgentX rule), nothing \
             measured"
                .into()
        }
        ReplayStop::FailedThreshold => format!(
            "too many requests failed: the replay was aborted before any succeeded ({failed} \
             profile requests failed), nothing measured"
        ),
        ReplayStop::Completed if sent == 0 => {
            "nothing was measured: no profile request was sent within the replay window".into()
        }
        ReplayStop::Completed => format!(
            "nothing was measured: none of the {sent} profile requests succeeded ({failed} failed)"
        ),
    })
}

/// Nothing succeeded and every failure (the replay's own cancellations aside) was a connect
/// error: the server was never reached.
fn never_reached(out: &ReplayOutcome, completed: u64) -> bool {
    let failed = || {
        out.records
            .iter()
            .filter(|r| !r.success && r.error_class != Some(ErrorClass::Cancelled))
    };
    completed == 0
        && failed().next().is_some()
        && failed().all(|r| r.error_class == Some(ErrorClass::Connect))
}

/// Σ hit / Σ total hash blocks over the successful measured requests (§2.10), or `None` when
/// no request had a hash block.
pub fn theoretical_hit_rate(records: &[RequestRecord]) -> Option<f64> {
    let (hit, total) = records
        .iter()
        .filter(|r| r.success && r.phase == Phase::Profile)
        .filter_map(|r| r.agentic.as_ref())
        .fold((0u64, 0u64), |(h, t), a| {
            (h + u64::from(a.hit_blocks), t + u64::from(a.total_blocks))
        });
    (total > 0).then(|| hit as f64 / total as f64)
}

/// How a replay ended (as `bench`'s point): interrupted; the server unreachable when every
/// failure (the replay's own cancellations aside) was a connect error and nothing succeeded; a
/// gate failed for the failure threshold, a failed root warmup, nothing measured or a failed
/// write of the records file; else passed.
pub fn replay_end(out: &ReplayOutcome, summary: &RunSummary) -> RunEnd {
    // Requests the replay itself cancelled (after an abort) say nothing about the server.
    if never_reached(out, summary.completed) && out.stop != ReplayStop::Interrupted {
        return RunEnd::Unreachable;
    }
    match out.stop {
        ReplayStop::Interrupted => RunEnd::Interrupted,
        ReplayStop::FailedThreshold | ReplayStop::WarmupFailed => RunEnd::GateFailed,
        ReplayStop::Completed if summary.completed == 0 => RunEnd::GateFailed,
        ReplayStop::Completed if out.records_write_error.is_some() => RunEnd::GateFailed,
        ReplayStop::Completed => RunEnd::Passed,
    }
}

/// Unix seconds of a run-clock instant.
fn unix_s(out: &ReplayOutcome, ns: u64) -> f64 {
    (out.anchor_unix_ns as f64 + ns as f64) / 1e9
}

/// Writes a replay's InferenceX/AIPerf-compatible artifacts under `result_dir` and returns the
/// InferenceX AgentX aggregate (reference/agentx.md §4.1–4.5): `aiperf_artifacts/`
/// (`profile_export.jsonl`, `profile_export_aiperf.json`, `server_metrics_export.json` when
/// snapshots exist), the snapshots themselves in `server_metrics.jsonl` (as `bench` writes them,
/// for the store's server time series) and `agentic_aggregate.json` (what `process_agentic_result.py` would write
/// for `ctx`, with InferenceX's power block when `power` was measured, as `power_adapter.py`
/// patches it). `valid = false` adds the `unsafe_override` reason (duration below 900 s).
/// Returns the aggregate as written.
///
/// Errors: the files cannot be written.
pub fn write_artifacts(
    result_dir: &std::path::Path,
    out: &ReplayOutcome,
    ctx: &inferbench_core::summary::agentic::AgenticContext,
    valid: bool,
    power: Option<&inferbench_core::summary::PowerSummary>,
) -> anyhow::Result<serde_json::Value> {
    use super::aiperf;
    std::fs::create_dir_all(aiperf::artifact_dir(result_dir))
        .with_context(|| format!("creating {}", result_dir.display()))?;
    aiperf::write_profile_export(result_dir, &out.records, out.anchor_unix_ns)
        .context("writing profile_export.jsonl")?;
    let info = aiperf::AiperfRunInfo {
        anchor_unix_ns: out.anchor_unix_ns,
        utc_offset_s: aiperf::local_utc_offset_s(),
        was_cancelled: out.stop != ReplayStop::Completed,
        scenario: "inferencex-agentx".into(),
        extra_invalid_reasons: if valid {
            Vec::new()
        } else {
            vec!["unsafe_override".into()]
        },
        dataset: ctx.dataset.clone(),
    };
    aiperf::write_aiperf_summary(result_dir, &out.records, &info)
        .context("writing profile_export_aiperf.json")?;
    let (t0, t1) = out.profile_window_ns.unwrap_or((0, 0));
    let window = (unix_s(out, t0), unix_s(out, t1));
    let server = if out.server_snapshots.is_empty() {
        None
    } else {
        // The scrapes themselves, as `bench` keeps them (issue 42: the store had no server
        // time series for agentic points, so the run page could not show why one sits where it
        // does; the AIPerf export holds only window summaries).
        let path = result_dir.join("server_metrics.jsonl");
        inferbench_telemetry::scrape::write_jsonl_within(
            &path,
            &out.server_snapshots,
            out.server_metrics_max_bytes,
        )
        .with_context(|| format!("writing {}", path.display()))?;
        let export =
            aiperf::server_metrics_export(&out.server_snapshots, window.0, window.1, Some(1.0));
        aiperf::write_server_metrics_export(
            result_dir,
            &export,
            window,
            out.server_snapshots.len(),
        )
        .context("writing server_metrics_export.json")?;
        Some(inferbench_core::server_metrics::summarize(
            &out.server_snapshots,
            window.0,
            window.1,
        ))
    };
    let agg = inferbench_core::summary::agentic::aggregate(&out.records, ctx, server.as_ref());
    let mut json = agg.to_json();
    if let (Some(p), Some(obj)) = (power, json.as_object_mut()) {
        crate::power::patch_aggregate(obj, p);
    }
    // A replay that measured nothing is failed, and says why (issue 39 §4, fresh tester).
    if let (Some(why), Some(obj)) = (nothing_measured_reason(out), json.as_object_mut()) {
        obj.insert("failed_reason".into(), serde_json::Value::from(why));
    }
    let path = result_dir.join(inferbench_core::artifacts::AGENTIC_AGGREGATE_FILE);
    output::write_file(&path, serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferbench_workload::agentx::{Reconstructor, TraceRequest};

    /// A scheduler of one lane replaying a long trace, driven (every request answered at once)
    /// into its profile; the run clock's time then, ns.
    fn profiling_scheduler() -> (Scheduler, u64) {
        use super::super::plan::tests::{rq, trace};
        let tr = trace(vec![(0..400).map(|k| rq(10.0 * k as f64, 2.0)).collect()]);
        let plans = vec![TreePlan::build(0, &tr)];
        let mut s = Scheduler::new(
            Arc::new(plans),
            SchedConfig {
                lanes: 1,
                duration_ns: 3_600_000_000_000,
                start_ratio: (0.0, 0.0),
                warmup_per_lane: 1,
                ..SchedConfig::default()
            },
        );
        let mut now = 0;
        for _ in 0..100 {
            for d in s.poll(now) {
                s.complete(d.ticket, now, super::super::Outcome::Ok);
            }
            if s.phase() == RunPhase::Profile {
                return (s, now);
            }
            now = s.next_wakeup().unwrap_or(now + 1).max(now + 1);
        }
        panic!("no profile: {:?}", s.phase());
    }

    /// A successful profile request sent at `sent` (ns), 300 ms long, 10 output tokens.
    fn profiled(id: u64, sent: u64) -> RequestRecord {
        let mut r: RequestRecord = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "request_id": id, "phase": "profile", "success": true,
            "scheduled_ns": sent, "sent_ns": sent, "end_ns": sent + 300_000_000, "chunks": [],
            "prompt_tokens": 100, "prompt_tokens_client": 100, "completion_tokens": 10,
            "completion_tokens_source": "server", "output_text": ""
        }))
        .expect("a record");
        r.first_token_ns = Some(sent + 100_000_000);
        r.last_token_ns = Some(r.end_ns);
        r
    }

    /// Issue 43's AgentX early stop in the replay loop: steady requests (30 ms per output token)
    /// one a second from the profile's start are known from the 100th on, but the rule waits
    /// for 900 s of profiling from the first send: the first due check after it is the 910th
    /// request (899.3 s at the 900th, checks every 10 from 100), whose end ends the profile as
    /// its duration would (the next poll finds it ended), once, with a note. Without the rule
    /// nothing stops.
    #[test]
    fn the_early_stop_ends_the_profile_after_900_s_of_profiling() {
        let rule = crate::early_stop::AgenticEarlyStop::for_lanes(0.02, 1);
        for (rule, stops_at) in [(rule, Some(910u64)), (None, None)] {
            let (mut sched, t0) = profiling_scheduler();
            let mut st = LoopState::new(10);
            st.early_rule = rule;
            let mut stopped_at = None;
            for i in 0..1000u64 {
                let r = profiled(i, t0 + i * 1_000_000_000);
                st.early_stop_check(&r, &mut sched);
                if st.early_stopped && stopped_at.is_none() {
                    stopped_at = Some(i + 1);
                    assert!(sched.poll(r.end_ns).is_empty());
                    assert_eq!(sched.phase(), RunPhase::Ended);
                }
            }
            assert_eq!(stopped_at, stops_at);
            let notes: Vec<&String> = st
                .notes
                .iter()
                .filter(|n| n.contains("early stop"))
                .collect();
            assert_eq!(notes.len(), usize::from(stops_at.is_some()), "{notes:?}");
            if stops_at.is_some() {
                assert!(
                    notes[0].contains("after 910 profile requests and 909 s of profiling"),
                    "{}",
                    notes[0]
                );
            } else {
                assert_eq!(sched.phase(), RunPhase::Profile);
            }
        }
    }

    /// Issue 39 (files, ingest and hints), 2: the records room ends the profile, as its
    /// duration would (the next poll finds it ended), once the lines written and the reserve
    /// for the requests in flight would pass the room: not at 900 + 100 of 1,000 bytes, at 901;
    /// once, with a note giving the counts. Never during the warmup, nor once the replay is
    /// stopping for another reason.
    #[test]
    fn the_records_room_ends_the_profile_before_the_files_pass_it() {
        let (mut sched, now) = profiling_scheduler();
        let mut st = LoopState::new(10);
        st.records_bytes = 900;
        st.room_check(1000, 100, &mut sched, now);
        assert!(!st.room_stopped);
        assert_eq!(sched.phase(), RunPhase::Profile);
        st.records_bytes = 901;
        st.room_check(1000, 100, &mut sched, now);
        assert!(st.room_stopped);
        assert!(sched.poll(now).is_empty());
        assert_eq!(sched.phase(), RunPhase::Ended);
        st.room_check(1000, 100, &mut sched, now);
        assert_eq!(
            st.notes,
            [
                "the records files (requests.jsonl, profile_export.jsonl) reached what the \
              file-size limit `ulimit -f` leaves them (901 of 1000 bytes, with 100 kept for the \
              requests in flight): the profile ended early, as at its duration, and every file \
              is whole (raise `ulimit -f` for the whole duration)"
            ]
        );
        let (mut sched, now) = profiling_scheduler();
        let mut st = LoopState::new(10);
        st.records_bytes = 5000;
        st.stop = ReplayStop::Interrupted;
        st.room_check(1000, 100, &mut sched, now);
        assert!(!st.room_stopped && st.notes.is_empty());
    }

    /// Issue 39 §3: a prompt whose synthesis fails mid-run is a failed record with its cause,
    /// not a lost task (the loop would wait for it forever) or an abort.
    #[test]
    fn a_synthesis_panic_is_a_failed_record_with_its_cause() {
        let client = replay_client(&ReplayOptions::default(), RunClock::start()).unwrap();
        let req = TraceRequest {
            t_s: 0.0,
            input_tokens: 200,
            output_tokens: 7,
            hash_ids: vec![1, 2, 3],
            api_time_s: 1.0,
            model: String::new(),
        };
        let plan = Reconstructor::new(0, 0).next_turn(&req, None);
        let meta = RequestMeta {
            request_id: 9,
            phase: Phase::Profile,
            scheduled_ns: 5,
            conversation_id: Some("t::sa:x".into()),
            turn: Some(0),
            correlation_id: None,
            headers: Vec::new(),
        };
        let panic = std::panic::catch_unwind(|| panic!("grid index 9 out of range")).unwrap_err();
        let rec = synthesis_failed(&client, meta, &plan, Some(7), panic);
        assert!(!rec.success);
        assert_eq!(rec.error_class, Some(ErrorClass::Malformed));
        assert_eq!(
            rec.error.as_deref(),
            Some(
                "the client could not synthesize this request's prompt (200 tokens; a client \
                 bug, nothing was sent): grid index 9 out of range"
            )
        );
        assert_eq!(
            (rec.request_id, rec.scheduled_ns, rec.turn, rec.max_tokens),
            (9, 5, Some(0), Some(7))
        );
        assert_eq!(rec.conversation_id.as_deref(), Some("t::sa:x"));
        assert_eq!((rec.prompt_tokens_client, rec.sent_ns), (200, rec.end_ns));
    }
}
