//! The `replay` subcommand: its flags ([`ReplayFlags`], written once with their `--help`
//! text), their conversion into the loadgen library's [`ReplayOptions`], and the command
//! itself: load the traces ([`ReplayFlags::prepare_checked`]), replay them with power around
//! the window, print and write the results ([`ReplayFlags::run`]). `cmd::replay` adds the
//! limits check and the signal handling.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::CancellationToken;
use inferbench_core::RunEnd;
use inferbench_workload::agentx::load::over_budget;
use inferbench_workload::agentx::synthetic::{self, SHAPES};
use inferbench_workload::agentx::{load_traces, LoadOptions, LoadReport, Trace};
use inferbench_workload::files::DEFAULT_MAX_CONTEXT_TOKENS;

use inferbench_loadgen::agentic::prompt::Prompter;

/// The files a replay writes into `--result-dir`, each refused up front when it exists and is
/// not a regular file (issue 39 §1).
const REPLAY_FILES: [&str; 11] = [
    "summary.json",
    "requests.jsonl",
    inferbench_core::artifacts::AGENTIC_AGGREGATE_FILE,
    "server_metrics.jsonl",
    "power.csv",
    "power_energy_start.csv",
    "power_energy_end.csv",
    "power_validation.json",
    "aiperf_artifacts/profile_export.jsonl",
    "aiperf_artifacts/profile_export_aiperf.json",
    "aiperf_artifacts/server_metrics_export.json",
];
use super::bench_flags::{secs, PowerFlags, TargetFlags};
use super::ExitStatus;
use inferbench_loadgen::agentic::{
    replay_end, replay_summary, run_replay, theoretical_hit_rate, write_artifacts, ReplayOptions,
    ReplayStop, SchedConfig,
};
use inferbench_loadgen::output::{nothing_measured, render_report};
use inferbench_loadgen::ProgressMode;

/// Above this many tokens a trace request's `in` or `out` is refused without asking the
/// server for the model's context: 2^24 = 16,777,216, 16× the longest context of any model
/// InferenceX benchmarks (2^20). A value above it (`"in": 4000000000`) is not a recording.
pub const SERVER_CONTEXT_CEILING: u32 = 1 << 24;

/// Shortest duration InferenceX accepts as a valid AgentX result, s (AIPerf's scenario lock).
pub const MIN_VALID_DURATION_S: f64 = 900.0;

/// Flags of `inferbench replay`.
#[derive(Debug, clap::Args)]
// One of --traces and --synthetic (trial 29: without either, the error named only --traces).
#[command(group(clap::ArgGroup::new("trace_source").required(true).args(["traces", "synthetic"])))]
#[command(
    after_help = "Exit codes: 0 ok; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or failed-request threshold crossed, a main-agent \
                  warmup request failed, nothing succeeded, or GPU power not valid with \
                  --require-power, or out of memory midway (ulimit -v named); 2 bad flags or \
                  traces (FILE:LINE named), a --result-dir that \
                  cannot be written (checked before any request), a concurrency \
                  this process cannot hold (ulimit -n, ulimit -v), or out of memory before \
                  any request (ulimit -v named, never SIGABRT); 3 server \
                  unreachable (before profiling, or no request reached it; partial results \
                  written); 130 interrupted by Ctrl-C, SIGTERM or SIGHUP (finished requests saved).\n\nExample (a short run on the \
                  simulator):\n  inferbench sim --block-size 64 &\n  inferbench replay --traces \
                  traces.jsonl --model sim --concurrency 4 --benchmark-duration 60 \
                  --unsafe-override --result-dir replay-out"
)]
pub struct ReplayFlags {
    // ----- traces
    /// Trace file (JSONL, one trace per line) or a directory of `.jsonl` / `.json` traces
    /// (the layout of InferenceX's published AgentX traces, e.g.
    /// semianalysisai/cc-traces-weka-062126-256k).
    #[arg(long, help_heading = "Traces")]
    pub traces: Option<PathBuf>,
    /// Built-in synthetic traces instead of --traces: quickstart (6 short sessions), 062126 or
    /// 062126-256k (shaped like SemiAnalysis' corpus; see `inferbench agentx-traces`).
    #[arg(long, value_parser = SHAPES, help_heading = "Traces")]
    pub synthetic: Option<String>,
    /// Skip malformed trace lines (reported) instead of stopping at the first.
    #[arg(long, help_heading = "Traces")]
    pub skip_invalid: bool,
    /// Drop whole traces whose peak input + output exceeds this many tokens. Traces above the
    /// server's max_model_len (its /v1/models) are dropped the same way, and the count said.
    #[arg(long, help_heading = "Traces")]
    pub max_context_length: Option<u64>,
    /// Keep only the first N traces (after --max-context-length).
    #[arg(long, help_heading = "Traces")]
    pub num_dataset_entries: Option<usize>,
    /// Largest `in` or `out` a trace request may have, tokens, for a model with a context above
    /// 2^20. The bound in force is the larger of 2^20, this and the model's max_model_len from
    /// the server's /v1/models; a request above it is refused at load (FILE:LINE: field, exit
    /// 2), before any request is sent.
    #[arg(long, help_heading = "Traces")]
    pub max_model_len: Option<u32>,
    /// Tokenizer of the block texts (64 token ids per hash block): o200k_base (embedded),
    /// cl100k_base, or the served model's tokenizer.json for exact prompt lengths.
    #[arg(long, default_value = "o200k_base", help_heading = "Traces")]
    pub tokenizer: String,

    // ----- target
    /// The server and what every request carries.
    #[command(flatten)]
    pub target: TargetFlags,
    /// Chat endpoint path.
    #[arg(long, default_value = "/v1/chat/completions", help_heading = "Target")]
    pub endpoint: String,

    // ----- schedule
    /// Lanes: session trees replayed at once (sub-agents take no extra lane).
    #[arg(long, default_value_t = 8, help_heading = "Schedule")]
    pub concurrency: u32,
    /// Profiling duration, s. Below 900 s only with --unsafe-override (result marked invalid).
    #[arg(long, default_value_t = 3600.0, help_heading = "Schedule")]
    pub benchmark_duration: f64,
    /// Seed of the start points and cache-bust identities.
    #[arg(long, default_value_t = 42, help_heading = "Schedule")]
    pub random_seed: u64,
    /// Earliest start point t*, fraction of each trace's span.
    #[arg(long, default_value_t = 0.25, help_heading = "Schedule")]
    pub trajectory_start_min_ratio: f64,
    /// Latest start point t*, fraction of each trace's span.
    #[arg(long, default_value_t = 0.75, help_heading = "Schedule")]
    pub trajectory_start_max_ratio: f64,
    /// Warmup requests per lane after its primers (1 output token, no delays).
    #[arg(long, default_value_t = 10, help_heading = "Schedule")]
    pub warmup_requests_per_lane: u32,
    /// Longest warmup before profiling starts anyway, s.
    #[arg(long, default_value_t = 1800.0, help_heading = "Schedule")]
    pub warmup_grace_period: f64,
    /// Per-tree idle cap, s (0 = off).
    #[arg(long, default_value_t = 300.0, help_heading = "Schedule")]
    pub trace_idle_gap_cap_seconds: f64,
    /// Whole-system idle cap, s (0 = off).
    #[arg(long, default_value_t = 10.0, help_heading = "Schedule")]
    pub system_idle_gap_cap_seconds: f64,
    /// Time in-flight requests get after the duration, s; the rest are cancelled.
    #[arg(long, default_value_t = 30.0, help_heading = "Schedule")]
    pub benchmark_grace_period: f64,
    /// Stop when more than this fraction of profile requests failed.
    #[arg(long, default_value_t = 0.10, help_heading = "Schedule")]
    pub failed_request_threshold: f64,
    /// Accepted for AIPerf compatibility: token counts always come from the server's usage.
    #[arg(long, help_heading = "Schedule")]
    pub use_server_token_count: bool,
    /// Allow rule-breaking settings (duration < 900 s); the result is marked invalid.
    #[arg(long, help_heading = "Schedule")]
    pub unsafe_override: bool,
    /// Fail a request after this many seconds without a byte.
    #[arg(long, default_value_t = 600.0, help_heading = "Schedule")]
    pub idle_timeout: f64,
    /// Fail a request after this many seconds in total (AIPerf: 21,600).
    #[arg(long, default_value_t = 21600.0, help_heading = "Schedule")]
    pub request_timeout: f64,

    // ----- output
    /// Directory for requests.jsonl and the summaries.
    #[arg(long, help_heading = "Output")]
    pub result_dir: Option<PathBuf>,
    /// Do not scrape the server's /metrics.
    #[arg(long, help_heading = "Output")]
    pub no_server_metrics: bool,
    /// GPU power around the replay (power.csv, power_validation.json in --result-dir).
    #[command(flatten)]
    pub power: PowerFlags,
    /// Seconds between /metrics scrapes (InferenceX's AgentX: 1 s slices).
    #[arg(long, default_value_t = 1.0, help_heading = "Output")]
    pub server_metrics_interval: f64,
    /// Live progress: auto, bar, plain, off.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Output")]
    pub progress: ProgressMode,
    /// Most memory the traces (read or generated) may take, bytes: the CLI's memory budget
    /// less what the lanes and the process need (issue 39 §2); a load that needs more is
    /// refused naming how many traces fit. Not a flag; `None`: not bounded.
    #[arg(skip)]
    pub memory_budget: Option<u64>,
}

impl ReplayFlags {
    /// The replay's options; errors name the flag (ranges, the 900 s minimum without
    /// `--unsafe-override`).
    pub fn options(&self) -> anyhow::Result<ReplayOptions> {
        let extra_body = self.target.parsed_extra_body()?;
        inferbench_loadgen::options::extra_body_max_tokens(
            inferbench_client::Backend::OpenAiChat,
            extra_body.as_ref(),
        )?;
        let headers = self.target.parsed_headers()?;
        let (lo, hi) = (
            self.trajectory_start_min_ratio,
            self.trajectory_start_max_ratio,
        );
        if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo > hi {
            anyhow::bail!(
                "--trajectory-start-min-ratio {lo} / --trajectory-start-max-ratio {hi}: need \
                 0 ≤ min ≤ max ≤ 1"
            );
        }
        if self.concurrency == 0 {
            anyhow::bail!("--concurrency: must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.failed_request_threshold) {
            anyhow::bail!("--failed-request-threshold: must be in [0, 1]");
        }
        let duration = secs("--benchmark-duration", self.benchmark_duration)?;
        if self.benchmark_duration < MIN_VALID_DURATION_S && !self.unsafe_override {
            anyhow::bail!(
                "--benchmark-duration {} s is below AgentX's minimum of {MIN_VALID_DURATION_S} \
                 s; add --unsafe-override to run it anyway (the result is marked invalid)",
                self.benchmark_duration
            );
        }
        let cap = |flag: &str, v: f64| -> anyhow::Result<Option<u64>> {
            if v == 0.0 {
                Ok(None)
            } else {
                Ok(Some(secs(flag, v)?.as_nanos() as u64))
            }
        };
        let non_neg = |flag: &str, v: f64| -> anyhow::Result<Duration> {
            if v == 0.0 {
                Ok(Duration::ZERO)
            } else {
                secs(flag, v)
            }
        };
        Ok(ReplayOptions {
            base_url: self.target.checked_base_url(&self.endpoint)?,
            endpoint: Some(self.endpoint.clone()),
            model: self.target.model(),
            api_key: self.target.api_key.clone(),
            headers,
            header_templates: self.target.parsed_header_templates()?,
            allow_empty_content: self.target.allow_empty_content,
            proxy: self.target.proxy_env().for_url(&self.target.base_url()),
            no_proxy_hosts: self.target.proxy_env().no_proxy,
            // `--tls-ca` / `--insecure` are the CLI's flags, set after this.
            tls: Default::default(),
            extra_body,
            max_tokens_field: self.target.max_tokens_field,
            idle_timeout: secs("--idle-timeout", self.idle_timeout)?,
            request_timeout: Some(secs("--request-timeout", self.request_timeout)?),
            sched: SchedConfig {
                lanes: self.concurrency,
                duration_ns: duration.as_nanos() as u64,
                start_ratio: (lo, hi),
                warmup_per_lane: self.warmup_requests_per_lane,
                warmup_grace_ns: non_neg("--warmup-grace-period", self.warmup_grace_period)?
                    .as_nanos() as u64,
                system_idle_cap_ns: cap(
                    "--system-idle-gap-cap-seconds",
                    self.system_idle_gap_cap_seconds,
                )?,
                tree_idle_cap_ns: cap(
                    "--trace-idle-gap-cap-seconds",
                    self.trace_idle_gap_cap_seconds,
                )?,
                seed: self.random_seed,
            },
            grace: non_neg("--benchmark-grace-period", self.benchmark_grace_period)?,
            failed_request_threshold: self.failed_request_threshold,
            save_requests: self.result_dir.as_ref().map(|d| d.join("requests.jsonl")),
            progress: self.progress,
            server_metrics_interval: if self.no_server_metrics {
                None
            } else {
                Some(secs(
                    "--server-metrics-interval",
                    self.server_metrics_interval,
                )?)
            },
            clock: inferbench_client::ClockSource::System,
            // The records files and the scrapes of --result-dir within `ulimit -f` (issue 39,
            // files, ingest and hints, 2): bounded at run time, their size not known up front.
            records_room: (self.result_dir.as_ref().and(crate::fsize::limit())).map(|bytes| {
                inferbench_loadgen::agentic::RecordsRoom {
                    bytes,
                    line_bytes: crate::fsize::record_upper_line_base(),
                    line_bytes_per_token: crate::fsize::RECORD_UPPER_BYTES_PER_TOKEN,
                }
            }),
            server_metrics_max_bytes: self.result_dir.as_ref().and(crate::fsize::limit()),
            record_bound: None,
        })
    }
}

/// A replay ready to start ([`ReplayFlags::prepare_checked`]): its options, traces and prompts.
pub struct PreparedReplay {
    opts: ReplayOptions,
    traces: Arc<Vec<Trace>>,
    prompter: Arc<Prompter>,
}

impl PreparedReplay {
    /// Sets the replay's record bound ([`ReplayOptions::record_bound`]: the CLI's, from
    /// `ulimit -v` once the lanes' need is known).
    pub fn set_record_bound(&mut self, bound: Option<inferbench_loadgen::options::RecordBound>) {
        self.opts.record_bound = bound;
    }
}

impl ReplayFlags {
    /// The bound on every trace request's `in` and `out`, tokens: the larger of 2^20
    /// ([`DEFAULT_MAX_CONTEXT_TOKENS`]), `--max-model-len` and `served` (the model's
    /// `max_model_len` from the server's `/v1/models`, [`ReplayFlags::served_context`]).
    pub fn token_cap(&self, served: Option<u64>) -> u32 {
        let served = served.map_or(0, |s| u32::try_from(s).unwrap_or(u32::MAX));
        DEFAULT_MAX_CONTEXT_TOKENS
            .max(self.max_model_len.unwrap_or(0))
            .max(served)
    }

    /// [`ReplayFlags::prepare_checked`] without a check (the tests').
    #[cfg(test)]
    pub async fn prepare_bounded(
        &self,
        tls: inferbench_client::tls::TlsOptions,
    ) -> anyhow::Result<PreparedReplay> {
        self.prepare_checked(tls, |_, _| Ok(())).await
    }

    /// Everything before the replay: the options (flag errors first), `--result-dir`, the traces
    /// (what was skipped or dropped said on stderr, with a line saying what will run), the
    /// block texts' tokenizer and prompts, with the server asked for the model's context
    /// ([`ReplayFlags::served_context`], its `/v1/models`): a trace whose peak input + output is
    /// above it is dropped as `--max-context-length` drops one (before `--num-dataset-entries`
    /// keeps the first N; the count said on stderr), since the server refuses its requests
    /// (HTTP 400); and every request's `in` and `out` is bounded by
    /// [`ReplayFlags::token_cap`] of it (a request above fails with its `FILE:LINE: field`
    /// before anything is sent, skipped with `--skip-invalid`). `tls` (the CLI's
    /// `--tls-ca`/`--insecure`) verifies the measured requests and that `/v1/models` request
    /// alike.
    ///
    /// `check` is called once the traces are read, before the server is asked anything, with
    /// the most requests one session has in flight at once and the largest request's memory in
    /// flight, bytes ([`inferbench_loadgen::agentic::lane_load`] of the traces read, the rule
    /// the sweep's per-row check uses too): the CLI refuses there what this process cannot
    /// hold, so a refused replay connects to nothing. It is called again when the server's
    /// context makes the traces read again (other traces then take the place of those
    /// dropped, whose lanes' load was not checked), before any request is sent.
    ///
    /// # Errors
    /// `check`'s; a flag, trace or `--result-dir` error (the flag, `FILE:LINE` or path named).
    pub async fn prepare_checked(
        &self,
        tls: inferbench_client::tls::TlsOptions,
        mut check: impl FnMut(u64, u64) -> anyhow::Result<()>,
    ) -> anyhow::Result<PreparedReplay> {
        let mut opts = self.options()?;
        opts.tls = tls;
        // Where the results go, before the server is asked anything (issue 39 §8): the
        // directory and every fixed file written into it (a FIFO or device there is refused
        // without a connection, not even /v1/models).
        self.check_result_dir()?;
        // Read first, bounded by the ceiling: a line beyond it is refused before anything is
        // sent (no connection, not even /v1/models).
        let bound = self.token_cap(None);
        let mut report = self.load_traces(bound.max(SERVER_CONTEXT_CEILING), None)?;
        let load = inferbench_loadgen::agentic::lane_load(&report.traces);
        check(load.per_lane, load.request_bytes)?;
        let served = self.served_context(&opts.reach()).await;
        let context = self.context_bound(served);
        // The largest request of the traces kept (one over the context is dropped whole).
        let peak = (report.traces.iter())
            .filter(|t| context.is_none_or(|c| t.peak_context_tokens() <= c))
            .flat_map(|t| &t.streams)
            .flat_map(|s| &s.requests)
            .map(|r| r.input_tokens.max(r.output_tokens))
            .max()
            .unwrap_or(0);
        let cap = self.token_cap(served);
        // Read again only when the server's context drops a trace read (filter, then cap:
        // when every trace read fits, they are already the first that fit) or a request is
        // above the cap in force.
        let over_context =
            context.is_some_and(|c| report.traces.iter().any(|t| t.peak_context_tokens() > c));
        let over_cap = peak > bound && peak > cap;
        if over_context || over_cap {
            let token_cap = if over_cap {
                cap
            } else {
                bound.max(SERVER_CONTEXT_CEILING)
            };
            report = self.load_traces(token_cap, served)?;
            // The traces kept now may be others (read on past those the context dropped, up to
            // `--num-dataset-entries`): their lanes' load is checked as the first read's was.
            let load = inferbench_loadgen::agentic::lane_load(&report.traces);
            check(load.per_lane, load.request_bytes)?;
        }
        self.prepare_loaded(opts, report, served)
    }

    /// The model's context length, tokens, as the server's `/v1/models` reports it (3 s at
    /// most); `None` when the server cannot be asked, or reports none.
    /// The server is reached as `reach` says (TLS, proxy).
    pub async fn served_context(&self, reach: &inferbench_client::Reach) -> Option<u64> {
        let model = self.target.model();
        let model = (!model.trim().is_empty()).then_some(model.as_str());
        inferbench_client::models::served_max_model_len(&self.target.base_url(), model, reach).await
    }

    /// What the line before the replay says of `n` traces dropped over
    /// [`ReplayFlags::context_bound`] of `served`: by `--max-context-length`, or over the
    /// server's `max_model_len` when that is the smaller.
    pub fn dropped_note(&self, n: usize, served: Option<u64>) -> String {
        inferbench_workload::agentx::dropped_note(n, self.max_context_length, served)
    }

    /// The bound on a trace's peak input + output, tokens: the smaller of
    /// `--max-context-length` and `served` (the model's context from the server); `None`
    /// without either.
    pub fn context_bound(&self, served: Option<u64>) -> Option<u64> {
        inferbench_workload::agentx::context_bound(self.max_context_length, served)
    }

    /// The traces to replay: `--traces` read with `--skip-invalid`, `--max-context-length`,
    /// `--num-dataset-entries` and every request's `in` and `out` at most `token_cap` tokens
    /// ([`LoadOptions::token_cap`]), or the `--synthetic` shape with the same two cuts; traces
    /// above [`ReplayFlags::context_bound`] of `served` (the model's context from the server)
    /// dropped first.
    pub fn load_traces(&self, token_cap: u32, served: Option<u64>) -> anyhow::Result<LoadReport> {
        let max_context = self.context_bound(served);
        let load = LoadOptions {
            skip_invalid: self.skip_invalid,
            max_context_length: max_context,
            num_dataset_entries: self.num_dataset_entries,
            token_cap: Some(token_cap),
            memory_budget: self.memory_budget,
        };
        Ok(match (&self.traces, &self.synthetic) {
            // Named by its flag (trial 17: a bare "No such file or directory").
            (Some(p), _) if !p.exists() => {
                anyhow::bail!("--traces {}: no such file or directory", p.display())
            }
            (Some(p), _) => load_traces(p, &load)?,
            (None, Some(shape)) => {
                // Generated a session at a time, filtered and capped as it comes, each kept
                // session counted against the budget (issue 39 §2: the whole corpus was built
                // before any check, 1.2 GB at its peak).
                let mut traces = Vec::new();
                let (mut dropped_by_context, mut used) = (0, 0u64);
                let mut over = None;
                let mut counted = 0usize;
                synthetic::shaped_each(shape, None, self.random_seed, &mut |t| {
                    if self
                        .num_dataset_entries
                        .is_some_and(|n| traces.len() + counted >= n)
                    {
                        return false;
                    }
                    if max_context.is_some_and(|m| t.peak_context_tokens() > m) {
                        dropped_by_context += 1;
                        return true;
                    }
                    used = used.saturating_add(t.heap_bytes());
                    if counted > 0 {
                        counted += 1;
                        return true;
                    }
                    if let Some(most) = self.memory_budget.filter(|&m| used > m) {
                        if traces.is_empty() {
                            // Not one session: counted, not kept, to what the run reads, so
                            // that the refusal names the limit that holds them (issue 39's
                            // leftovers: "raise the limit" gave no value).
                            counted = 1;
                            return true;
                        }
                        over = Some(over_budget(most, traces.len()));
                        return false;
                    }
                    traces.push(t);
                    true
                });
                if counted > 0 {
                    return Err(inferbench_workload::WorkloadError::NoneFits {
                        path: std::path::PathBuf::from(format!("--synthetic {shape}")),
                        line: None,
                        what: "trace",
                        count: counted,
                        need: used,
                        room: self.memory_budget.unwrap_or(0),
                    }
                    .into());
                }
                if let Some(why) = over {
                    anyhow::bail!("--synthetic {shape}: {why}");
                }
                LoadReport {
                    traces,
                    skipped: Vec::new(),
                    dropped_by_context,
                    files: 0,
                    notes: Vec::new(),
                }
            }
            (None, None) => anyhow::bail!("give --traces PATH or --synthetic SHAPE"),
        })
    }

    /// `--result-dir` created and probed, and each fixed file the replay writes into it a
    /// regular file or absent (issue 39 §8), before any request. Errors: the path and why.
    fn check_result_dir(&self) -> anyhow::Result<()> {
        if let Some(d) = &self.result_dir {
            inferbench_loadgen::output::check_dir_writable("--result-dir", d)?;
            inferbench_loadgen::output::check_files_in_dir("--result-dir", d, &REPLAY_FILES)?;
        }
        Ok(())
    }

    /// The rest of [`ReplayFlags::prepare_checked`] once the traces are loaded.
    fn prepare_loaded(
        &self,
        opts: ReplayOptions,
        report: LoadReport,
        served: Option<u64>,
    ) -> anyhow::Result<PreparedReplay> {
        anyhow::ensure!(!report.traces.is_empty(), "no trace to replay");
        for s in &report.skipped {
            errln!("inferbench: skipped {s}");
        }
        for n in &report.notes {
            errln!("inferbench: warning: {n}");
        }
        let n_req: usize = report.traces.iter().map(Trace::request_count).sum();
        errln!(
            "inferbench replay: {} traces ({} requests) from {} file(s){}{}; {} lanes for {} s \
             against {}",
            report.traces.len(),
            n_req,
            report.files,
            if report.skipped.is_empty() {
                String::new()
            } else {
                format!(", {} invalid line(s) skipped", report.skipped.len())
            },
            if report.dropped_by_context > 0 {
                self.dropped_note(report.dropped_by_context, served)
            } else {
                String::new()
            },
            self.concurrency,
            self.benchmark_duration,
            self.target.base_url()
        );
        let traces = Arc::new(report.traces);
        let tok = inferbench_workload::Tokenizer::load(&self.tokenizer)?;
        let prompter = Arc::new(Prompter::new(&traces, &tok, self.random_seed)?);
        Ok(PreparedReplay {
            opts,
            traces,
            prompter,
        })
    }

    /// Replays `prepared` until its window ends or `cancel` fires, with GPU power sampled
    /// around it; prints the report and the agentic lines (stdout) and the notes (stderr),
    /// writes `summary.json`, `requests.jsonl` and the AIPerf/InferenceX artifacts into
    /// `--result-dir`. Returns the exit status of how the replay ended ([`replay_end`]; a
    /// failed gate as well for results not written or power that is not valid with
    /// `--require-power`).
    pub async fn run(
        self,
        mut prepared: PreparedReplay,
        cancel: CancellationToken,
    ) -> anyhow::Result<ExitStatus> {
        if prepared.opts.model.trim().is_empty() {
            prepared.opts.model = inferbench_loadgen::hints::served_model(
                &prepared.opts.base_url,
                &prepared.opts.reach(),
            )
            .await?;
            errln!(
                "inferbench: {}",
                inferbench_loadgen::hints::served_model_note(&prepared.opts.model)
            );
        }
        let model = prepared.opts.model.clone();
        let allow_empty_content = prepared.opts.allow_empty_content;
        let endpoint = prepared.opts.endpoint.clone().unwrap_or_default();
        let proxy = inferbench_client::proxy::used_for(
            &inferbench_client::join_url(&prepared.opts.base_url, &endpoint),
            prepared.opts.proxy.as_deref(),
            prepared.opts.no_proxy_hosts.as_deref(),
        );
        let header_templates: Vec<String> = (prepared.opts.header_templates.iter())
            .map(|t| format!("{}: {}", t.name, t.value))
            .collect();
        let unsafe_run = self.benchmark_duration < MIN_VALID_DURATION_S;
        let mut power_notes = Vec::new();
        self.power.check(self.result_dir.is_some())?;
        let power = match &self.result_dir {
            Some(d) => {
                inferbench_loadgen::power::start(
                    self.power.mode(),
                    secs("--power-interval", self.power.power_interval)?,
                    d.join("power.csv"),
                    d.join("power_validation.json"),
                    self.power.require_power,
                    Some(&mut power_notes),
                )
                .await?
            }
            None => None,
        };
        let tls = prepared.opts.tls.clone();
        let out = run_replay(prepared.opts, prepared.traces, prepared.prompter, cancel).await?;
        let mut summary = replay_summary(&out, &model, self.concurrency, !unsafe_run);
        summary.inferbench.tls_ca = (tls.ca_file.as_ref()).map(|p| p.display().to_string());
        summary.inferbench.tls_insecure = tls.insecure;
        summary.inferbench.allow_empty_content = allow_empty_content;
        if let Some(p) = &proxy {
            errln!("inferbench: the requests went through the HTTP proxy {p} (--no-proxy: direct)");
        }
        summary.inferbench.proxy = proxy;
        summary.inferbench.header_templates = header_templates;
        if let Some(p) = power {
            summary.inferbench.power = Some(p.finish(&summary, None).await);
        }
        out!("{}", render_report(&summary));
        // Nothing measured (an unreachable server): the report said so; no plays or validity.
        let measured = !nothing_measured(&summary);
        // Plays of a replay in which nothing succeeded say nothing (trial 24).
        let plays = measured && summary.completed > 0;
        let hit = theoretical_hit_rate(&out.records);
        let st = &out.stats;
        if plays {
            outln!(
                "Agentic: {} plays (replays of a session tree; {} finished), theoretical \
             prefix-cache hit {} (prompt blocks already sent earlier in their session), idle gaps \
             cut short by the caps: {} system-wide ({:.1} s skipped) / {} per tree ({:.1} s)",
                st.plays,
                st.plays_finished,
                hit.map_or("n/a".into(), |h| format!("{:.2} %", h * 100.0)),
                st.system_jumps,
                st.system_skipped_ns as f64 / 1e9,
                st.tree_jumps,
                st.tree_skipped_ns as f64 / 1e9,
            );
        }
        if out.profile_window_ns.is_some() && out.stop == ReplayStop::Completed {
            outln!(
                "Window: the benchmark duration above runs from the first profiled send to the \
                 last completion: {} s of replay after the warmup, plus up to {} s for requests \
                 still in flight at its end",
                self.benchmark_duration,
                self.benchmark_grace_period
            );
        }
        // Every reason the point is invalid, the run's own first (trial 24: a replay that
        // measured nothing, or was interrupted, gave only the duration reason).
        let mut invalid = Vec::new();
        match out.stop {
            ReplayStop::Interrupted => invalid.push("interrupted".to_string()),
            ReplayStop::FailedThreshold => invalid.push("too many requests failed".into()),
            ReplayStop::WarmupFailed => invalid.push("a warmup request failed".into()),
            ReplayStop::Completed => {}
        }
        // A replay that ran its course and measured nothing is failed, not invalid (issue 39
        // §4, fresh tester): said as its status, its cause the summary's `failed_reason`.
        // (Not where the report already said nothing was measured: a server never reached.)
        if let Some(why) = &summary.inferbench.failed_reason {
            if measured {
                outln!("Status: failed ({why})");
            }
            invalid.clear();
        } else if summary.completed == 0 {
            invalid.push("no request succeeded".into());
        }
        if unsafe_run {
            invalid.push(format!(
                "duration below {MIN_VALID_DURATION_S} s with --unsafe-override"
            ));
        }
        if measured && !invalid.is_empty() && summary.inferbench.failed_reason.is_none() {
            outln!("Validity: invalid ({})", invalid.join("; "));
        }
        // A write that fails at the end fails the point (exit 1), never 0, and is never said
        // to be written (issue 39 §2, §6).
        let mut write_failed = out.records_write_error.is_some();
        // The summary says its records file is incomplete, as `bench`'s does (issue 39, fresh
        // tester's finding 3): the point is failed, and `ingest` stores it so.
        if let (Some(e), Some(dir)) = (&out.records_write_error, &self.result_dir) {
            let cause = format!(
                "the records file {} is incomplete: writing it failed ({e}); the summary was \
                 computed from every record kept in memory",
                dir.join("requests.jsonl").display()
            );
            summary.inferbench.failed_reason =
                Some(match summary.inferbench.failed_reason.take() {
                    Some(prev) => format!("{prev}; {cause}"),
                    None => cause,
                });
            summary.inferbench.invalid_reason = None;
        }
        if let Some(dir) = &self.result_dir {
            let path = dir.join("summary.json");
            let written = (|| -> anyhow::Result<()> {
                let text = serde_json::to_string_pretty(&summary)?;
                inferbench_loadgen::output::write_file(&path, text.as_bytes())?;
                let ctx = inferbench_core::summary::agentic::AgenticContext {
                    conc: self.concurrency,
                    model: self.target.model(),
                    ..Default::default()
                };
                write_artifacts(
                    dir,
                    &out,
                    &ctx,
                    !unsafe_run,
                    summary.inferbench.power.as_ref(),
                )?;
                Ok(())
            })();
            match written {
                Ok(()) => {
                    let records = if out.records_write_error.is_some() {
                        String::new()
                    } else {
                        format!("{}, ", dir.join("requests.jsonl").display())
                    };
                    errln!(
                        "wrote {}, {records}{} and {}/",
                        path.display(),
                        dir.join(inferbench_core::artifacts::AGENTIC_AGGREGATE_FILE)
                            .display(),
                        dir.join("aiperf_artifacts").display()
                    );
                }
                Err(e) => {
                    errln!(
                        "inferbench: writing the results failed: {e:#} (the point fails, exit 1)"
                    );
                    write_failed = true;
                }
            }
        }
        inferbench_loadgen::power::drop_sampler_note(
            &mut power_notes,
            inferbench_core::server_metrics::from_simulator(&out.server_snapshots),
            summary.completed > 0,
        );
        for n in out.notes.iter().chain(&power_notes) {
            errln!("inferbench: {n}");
        }
        let power_invalid = summary.inferbench.power.as_ref().filter(|p| !p.valid);
        if let Some(p) = power_invalid {
            errln!(
                "inferbench: GPU power not valid ({}); see power_validation.json",
                p.reasons.join(", ")
            );
        }
        // A replay cut short said why in its notes above.
        let ran_its_course = out.stop == ReplayStop::Completed;
        if let Some(why) =
            (summary.inferbench.failed_reason.as_ref()).filter(|_| measured && ran_its_course)
        {
            errln!("inferbench: {why}");
        }
        let mut end = replay_end(&out, &summary);
        if end.passed() && (write_failed || self.power.require_power && power_invalid.is_some()) {
            end = RunEnd::GateFailed;
        }
        Ok(ExitStatus::from(end))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        flags: ReplayFlags,
    }

    fn options(argv: &[&str]) -> anyhow::Result<ReplayOptions> {
        let mut full = vec!["replay", "--synthetic", "quickstart", "--model", "m"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full)?.flags.options()
    }

    /// One trace source is required, either of the two (trial 29: the error named only
    /// --traces), and not both.
    #[test]
    fn traces_or_synthetic_one_of_them() {
        let none = Cli::try_parse_from(["replay", "--model", "m"])
            .err()
            .unwrap();
        assert!(
            none.to_string()
                .contains("<--traces <TRACES>|--synthetic <SYNTHETIC>>"),
            "{none}"
        );
        let both = ["replay", "--traces", "t.jsonl", "--synthetic", "quickstart"];
        assert!(Cli::try_parse_from(both).is_err());
        assert!(Cli::try_parse_from(["replay", "--traces", "t.jsonl"]).is_ok());
    }

    /// Issue 39 §3: a request above 2^20 tokens loads only when the model's context (the
    /// server's /v1/models, or --max-model-len) is that long (a trace over the server's
    /// context is dropped); one above 2^24 is refused; the errors name FILE:LINE and the field.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn trace_lengths_are_bounded_by_the_models_context() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"requests\": [{\"t\": 0, \"in\": 64, \"out\": 1}]}\n\
             {\"id\": \"b\", \"requests\": [{\"t\": 0, \"in\": 2000000, \"out\": 1}]}\n",
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let flags = |url: &str, extra: &[&str]| {
            let mut argv = vec![
                "replay",
                "--traces",
                p,
                "--model",
                "sim",
                "--base-url",
                url,
                "--benchmark-duration",
                "60",
                "--unsafe-override",
            ];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).unwrap().flags
        };
        let sim = |len: u32| {
            inferbench_sim::spawn(inferbench_sim::SimConfig {
                mode: inferbench_sim::Mode::Instant,
                served_model_name: Some("sim".into()),
                max_model_len: Some(len),
                num_gpu_blocks_override: Some(len / 8),
                ..Default::default()
            })
            .expect("sim starts")
        };
        // A server whose model has a 1M context: the 2M trace is over it, dropped (its
        // requests would be refused, HTTP 400).
        let small = sim(1 << 20);
        let r = flags(&small.base_url(), &[])
            .prepare_bounded(Default::default())
            .await
            .unwrap();
        assert_eq!(r.traces.len(), 1);
        // A server that cannot be asked: 2^20 bounds a request, refused naming the line.
        let e = flags("http://127.0.0.1:9", &[])
            .prepare_bounded(Default::default())
            .await
            .err()
            .unwrap();
        assert_eq!(
            inferbench_core::error_chain(e.as_ref()),
            format!(
                "{p}:2: requests[0].in: 2000000 tokens is above the cap of 1048576 tokens (a \
                 model's context; `replay --max-model-len` raises it)"
            )
        );
        // A 4M context from /v1/models, or --max-model-len (nothing listens there): loads.
        let big = sim(4 << 20);
        let r = flags(&big.base_url(), &[])
            .prepare_bounded(Default::default())
            .await
            .unwrap();
        assert_eq!(r.traces.len(), 2);
        let dead = "http://127.0.0.1:9";
        assert_eq!(flags(dead, &[]).token_cap(None), 1 << 20);
        let f = flags(dead, &["--max-model-len", "3000000"]);
        assert_eq!(f.token_cap(Some(5_000_000)), 5_000_000);
        assert_eq!(
            f.prepare_bounded(Default::default())
                .await
                .unwrap()
                .traces
                .len(),
            2
        );
    }

    /// A fresh tester's finding 4: `replay --synthetic 062126-256k` against a sim of a 131,072
    /// context sent 185k-token warmups and aborted with HTTP 400. Traces whose peak input +
    /// output is above the server's max_model_len (its /v1/models) are dropped as
    /// --max-context-length drops them, before --num-dataset-entries keeps the first N, and
    /// the line before the replay says how many and why.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn traces_over_the_servers_context_are_dropped_then_capped() {
        let flags = |url: &str, extra: &[&str]| {
            let mut argv = vec![
                "replay",
                "--synthetic",
                "quickstart",
                "--model",
                "sim",
                "--base-url",
                url,
                "--benchmark-duration",
                "60",
                "--unsafe-override",
            ];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).unwrap().flags
        };
        let dead = "http://127.0.0.1:9";
        let all = flags(dead, &[]).load_traces(1 << 20, None).unwrap().traces;
        let mut peaks: Vec<u64> = all.iter().map(Trace::peak_context_tokens).collect();
        peaks.sort_unstable();
        // A context between the shortest and the longest sessions' peaks.
        let len = peaks[peaks.len() / 2];
        let fit = |ts: &[Trace]| ts.iter().filter(|t| t.peak_context_tokens() <= len).count();
        let within = fit(&all);
        assert!(within > 0 && within < all.len(), "{peaks:?}");
        let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
            mode: inferbench_sim::Mode::Instant,
            served_model_name: Some("sim".into()),
            max_model_len: Some(len as u32),
            num_gpu_blocks_override: Some(len as u32 / 8 + 64),
            ..Default::default()
        })
        .expect("sim starts");
        let r = flags(&sim.base_url(), &[])
            .prepare_bounded(Default::default())
            .await
            .unwrap();
        assert_eq!(r.traces.len(), within);
        assert!(r.traces.iter().all(|t| t.peak_context_tokens() <= len));
        // Filter, then cap: the first one kept is the first that fits.
        let r = flags(&sim.base_url(), &["--num-dataset-entries", "1"])
            .prepare_bounded(Default::default())
            .await
            .unwrap();
        let first = all.iter().find(|t| t.peak_context_tokens() <= len).unwrap();
        assert_eq!(r.traces.len(), 1);
        assert_eq!(r.traces[0].id, first.id);
        // The smaller of --max-context-length and the server's context binds, and is named.
        let f = flags(dead, &["--max-context-length", "1000"]);
        assert_eq!(f.context_bound(Some(500)), Some(500));
        assert_eq!(f.context_bound(Some(5000)), Some(1000));
        assert_eq!(flags(dead, &[]).context_bound(None), None);
        assert_eq!(
            f.dropped_note(3, Some(500)),
            ", 3 dropped (peak input + output above the server's max_model_len of 500 tokens, \
             from its /v1/models)"
        );
        assert_eq!(
            f.dropped_note(3, Some(5000)),
            ", 3 dropped by --max-context-length"
        );
        assert_eq!(
            f.dropped_note(2, None),
            ", 2 dropped by --max-context-length"
        );
    }

    /// The defaults are InferenceX's AgentX invocation; rule-breaking or out-of-range values
    /// are refused naming the flag.
    #[test]
    fn defaults_and_refusals() {
        let o = options(&[]).unwrap();
        assert_eq!(o.sched.lanes, 8);
        assert_eq!(o.sched.duration_ns, 3_600_000_000_000);
        assert_eq!(o.sched.start_ratio, (0.25, 0.75));
        assert_eq!(o.endpoint.as_deref(), Some("/v1/chat/completions"));
        assert_eq!(o.request_timeout, Some(Duration::from_secs(21_600)));
        assert_eq!(o.server_metrics_interval, Some(Duration::from_secs(1)));
        assert_eq!(o.progress, ProgressMode::Auto);
        let o = options(&[
            "--benchmark-duration",
            "60",
            "--unsafe-override",
            "--no-server-metrics",
            "--trace-idle-gap-cap-seconds",
            "0",
            "--progress",
            "off",
            "--max-tokens-field",
            "both",
        ])
        .unwrap();
        assert_eq!(o.sched.duration_ns, 60_000_000_000);
        assert_eq!(o.sched.tree_idle_cap_ns, None);
        assert_eq!(o.server_metrics_interval, None);
        assert_eq!(o.progress, ProgressMode::Off);
        assert_eq!(
            o.max_tokens_field,
            Some(inferbench_client::MaxTokensField::Both)
        );
        for (argv, want) in [
            (
                &["--benchmark-duration", "60"][..],
                "below AgentX's minimum",
            ),
            (&["--concurrency", "0"][..], "--concurrency"),
            (
                &["--failed-request-threshold", "2"][..],
                "--failed-request-threshold",
            ),
            (
                &["--trajectory-start-min-ratio", "0.9"][..],
                "--trajectory-start-max-ratio",
            ),
            (&["--idle-timeout", "0"][..], "--idle-timeout"),
        ] {
            let e = options(argv).unwrap_err().to_string();
            assert!(e.contains(want), "{argv:?}: {e}");
        }
    }
}
