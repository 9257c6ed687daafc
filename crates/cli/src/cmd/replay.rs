//! `inferbench replay`: AgentX agentic-coding trace replay against an OpenAI-compatible chat
//! server (reference/agentx.md). Flag names follow agentx-harness / AIPerf; defaults are
//! InferenceX's invocation (§3.10). The logic lives in `inferbench_loadgen::agentic`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use inferbench_loadgen::agentic::prompt::Prompter;
use inferbench_loadgen::agentic::{
    self, exit_code, replay_summary, run_replay, theoretical_hit_rate, ReplayOptions, ReplayStop,
    SchedConfig,
};
use inferbench_loadgen::output::render_report;
use inferbench_workload::agentx::synthetic::{self, SyntheticSpec};
use inferbench_workload::agentx::{filter_isl_cap, load_traces, LoadOptions, LoadReport, Trace};

use super::bench::{progress_mode, secs};

/// Shortest duration InferenceX accepts as a valid AgentX result, s (AIPerf's scenario lock).
pub const MIN_VALID_DURATION_S: f64 = 900.0;

/// Built-in synthetic corpus shapes.
const SHAPES: [&str; 3] = ["quickstart", "062126", "062126-256k"];

/// The synthetic traces of `shape` (one of [`SHAPES`]); `traces` overrides the session count.
pub fn synthetic_traces(shape: &str, traces: Option<usize>, seed: u64) -> Vec<Trace> {
    let mut spec = match shape {
        "quickstart" => SyntheticSpec::quickstart(),
        _ => SyntheticSpec::corpus_062126(),
    };
    spec.seed = seed;
    if let Some(n) = traces {
        spec.traces = n;
    }
    let all = synthetic::generate(&spec);
    if shape.ends_with("256k") {
        // The `_256k` rule: requests with in + out > 256,000 dropped (reference/agentx.md §1.6).
        all.iter()
            .filter_map(|t| filter_isl_cap(t, 256_000))
            .collect()
    } else {
        all
    }
}

/// Flags of `inferbench agentx-traces`.
#[derive(Debug, clap::Args)]
pub struct TracesArgs {
    /// Corpus shape: quickstart, 062126 (≈ 393 sessions, 99k requests) or 062126-256k.
    #[arg(long, default_value = "062126-256k", value_parser = SHAPES)]
    pub shape: String,
    /// Sessions (default: the shape's).
    #[arg(long)]
    pub traces: Option<usize>,
    /// Seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Output JSONL file (one trace per line, the corpus's traces.jsonl layout).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
}

/// A writer that only counts the bytes written to it.
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Bytes for a person: `512 B`, `37 kB`, `488 MB`, `1.2 GB` (SI units).
fn human_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1e3 {
        format!("{bytes} B")
    } else if b < 1e6 {
        format!("{:.0} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{:.1} GB", b / 1e9)
    }
}

/// `inferbench agentx-traces`: writes a synthetic AgentX corpus and prints its shape.
pub fn run_traces(args: TracesArgs) -> anyhow::Result<i32> {
    let traces = synthetic_traces(&args.shape, args.traces, args.seed);
    let reqs: Vec<&inferbench_workload::agentx::TraceRequest> = traces
        .iter()
        .flat_map(|t| &t.streams)
        .flat_map(|s| &s.requests)
        .collect();
    // Said before a large write (the full-size shapes are hundreds of MB): the exact size, from
    // a first pass that only counts bytes.
    let mut counter = ByteCount(0);
    synthetic::write_jsonl(&traces, &mut counter).context("sizing the corpus")?;
    let est = counter.0;
    eprintln!(
        "writing {} sessions ({} requests, {}) to {}{}",
        traces.len(),
        reqs.len(),
        human_size(est),
        args.out.display(),
        if est > 100_000_000 {
            " (`--shape quickstart` or `--traces N` writes a smaller corpus)"
        } else {
            ""
        }
    );
    let f = std::fs::File::create(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    synthetic::write_jsonl(&traces, std::io::BufWriter::new(f))
        .with_context(|| format!("writing {}", args.out.display()))?;
    let mut isl: Vec<f64> = reqs.iter().map(|r| f64::from(r.input_tokens)).collect();
    let mut osl: Vec<f64> = reqs.iter().map(|r| f64::from(r.output_tokens)).collect();
    isl.sort_by(f64::total_cmp);
    osl.sort_by(f64::total_cmp);
    let q = |v: &[f64], p: f64| inferbench_core::metrics::percentile_sorted(v, p).unwrap_or(0.0);
    let (mut hit, mut total) = (0u64, 0u64);
    for t in &traces {
        for s in inferbench_workload::agentx::theoretical_hits(t) {
            for (h, n) in s {
                hit += u64::from(h);
                total += u64::from(n);
            }
        }
    }
    let bytes = std::fs::metadata(&args.out).map(|m| m.len()).unwrap_or(0);
    println!(
        "wrote {}: {} sessions, {} requests, ISL p50 {:.0} / p99 {:.0} tokens, OSL p50 {:.0} \
         tokens, theoretical hit {:.1} %, {}",
        args.out.display(),
        traces.len(),
        reqs.len(),
        q(&isl, 50.0),
        q(&isl, 99.0),
        q(&osl, 50.0),
        if total > 0 {
            hit as f64 * 100.0 / total as f64
        } else {
            0.0
        },
        human_size(bytes)
    );
    Ok(0)
}

/// Flags of `inferbench replay`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 ok; 1 failed-request threshold crossed, a main-agent \
                  warmup request failed, or nothing succeeded; 2 bad flags or traces; 130 \
                  interrupted (finished requests saved).\n\nExample (a short run on the \
                  simulator):\n  inferbench sim --block-size 64 &\n  inferbench replay --traces \
                  traces.jsonl --model sim --concurrency 4 --benchmark-duration 60 \
                  --unsafe-override --result-dir replay-out"
)]
pub struct Args {
    // ----- traces
    /// Trace file (JSONL, one trace per line) or a directory of `.jsonl` / `.json` traces
    /// (InferenceX's "Weka" layout, reference/agentx.md §1.4).
    #[arg(long, required_unless_present = "synthetic", help_heading = "Traces")]
    pub traces: Option<PathBuf>,
    /// Built-in synthetic traces instead of --traces: quickstart (6 short sessions), 062126 or
    /// 062126-256k (shaped like SemiAnalysis' corpus; see `inferbench agentx-traces`).
    #[arg(long, conflicts_with = "traces", value_parser = SHAPES, help_heading = "Traces")]
    pub synthetic: Option<String>,
    /// Skip malformed trace lines (reported) instead of stopping at the first.
    #[arg(long, help_heading = "Traces")]
    pub skip_invalid: bool,
    /// Drop whole traces whose peak input + output exceeds this many tokens.
    #[arg(long, help_heading = "Traces")]
    pub max_context_length: Option<u64>,
    /// Keep only the first N traces (after --max-context-length).
    #[arg(long, help_heading = "Traces")]
    pub num_dataset_entries: Option<usize>,
    /// Tokenizer of the block texts (64 token ids per hash block): o200k_base (embedded),
    /// cl100k_base, or the served model's tokenizer.json for exact prompt lengths.
    #[arg(long, default_value = "o200k_base", help_heading = "Traces")]
    pub tokenizer: String,

    // ----- target
    #[command(flatten)]
    pub target: super::TargetArgs,
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
    pub power: super::PowerArgs,
    /// Seconds between /metrics scrapes (InferenceX's AgentX: 1 s slices).
    #[arg(long, default_value_t = 1.0, help_heading = "Output")]
    pub server_metrics_interval: f64,
    /// Live progress: auto, bar, plain, off.
    #[arg(long, default_value = "auto", value_parser = ["auto", "bar", "plain", "off"], help_heading = "Output")]
    pub progress: String,
}

impl Args {
    fn options(&self) -> anyhow::Result<ReplayOptions> {
        let extra_body = self.target.parsed_extra_body()?;
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
            base_url: self.target.base_url.clone(),
            endpoint: Some(self.endpoint.clone()),
            model: self.target.model.clone(),
            api_key: self.target.api_key.clone(),
            headers,
            extra_body,
            max_tokens_field: self.target.max_tokens(),
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
            progress: progress_mode(&self.progress),
            server_metrics_interval: if self.no_server_metrics {
                None
            } else {
                Some(secs(
                    "--server-metrics-interval",
                    self.server_metrics_interval,
                )?)
            },
        })
    }
}

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let opts = args.options()?;
    let load = LoadOptions {
        skip_invalid: args.skip_invalid,
        max_context_length: args.max_context_length,
        num_dataset_entries: args.num_dataset_entries,
    };
    let report = match (&args.traces, &args.synthetic) {
        (Some(p), _) => load_traces(p, &load)?,
        (None, Some(shape)) => {
            let mut traces = synthetic_traces(shape, None, args.random_seed);
            let before = traces.len();
            if let Some(max) = args.max_context_length {
                traces.retain(|t| t.peak_context_tokens() <= max);
            }
            let dropped_by_context = before - traces.len();
            if let Some(n) = args.num_dataset_entries {
                traces.truncate(n);
            }
            LoadReport {
                traces,
                skipped: Vec::new(),
                dropped_by_context,
                files: 0,
            }
        }
        (None, None) => anyhow::bail!("give --traces PATH or --synthetic SHAPE"),
    };
    anyhow::ensure!(!report.traces.is_empty(), "no trace to replay");
    for s in &report.skipped {
        eprintln!("inferbench: skipped {s}");
    }
    let n_req: usize = report
        .traces
        .iter()
        .flat_map(|t| &t.streams)
        .map(|s| s.requests.len())
        .sum();
    eprintln!(
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
            format!(
                ", {} dropped by --max-context-length",
                report.dropped_by_context
            )
        } else {
            String::new()
        },
        args.concurrency,
        args.benchmark_duration,
        args.target.base_url
    );
    let traces = Arc::new(report.traces);
    let tok = inferbench_workload::Tokenizer::load(&args.tokenizer)?;
    let prompter = Arc::new(Prompter::new(&traces, &tok, args.random_seed)?);
    if let Some(d) = &args.result_dir {
        std::fs::create_dir_all(d)
            .with_context(|| format!("--result-dir: cannot create {}", d.display()))?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let unsafe_run = args.benchmark_duration < MIN_VALID_DURATION_S;
    rt.block_on(async move {
        let cancel = super::shutdown_token(
            "inferbench: interrupted; finishing up and saving finished requests",
        );
        let mut power_notes = Vec::new();
        args.power.check(args.result_dir.is_some())?;
        let power = match &args.result_dir {
            Some(d) => {
                inferbench_loadgen::power::start(
                    args.power.mode(),
                    super::bench::secs("--power-interval", args.power.power_interval)?,
                    d.join("power.csv"),
                    d.join("power_validation.json"),
                    args.power.require_power,
                    Some(&mut power_notes),
                )
                .await?
            }
            None => None,
        };
        let out = run_replay(opts, traces, prompter, cancel).await?;
        let mut summary = replay_summary(&out, &args.target.model, args.concurrency, !unsafe_run);
        if let Some(p) = power {
            summary.inferbench.power = Some(p.finish(&summary, None).await);
        }
        print!("{}", render_report(&summary));
        let hit = theoretical_hit_rate(&out.records);
        let st = &out.stats;
        println!(
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
        if out.profile_window_ns.is_some() && out.stop == ReplayStop::Completed {
            println!(
                "Window: the benchmark duration above runs from the first profiled send to the \
                 last completion: {} s of replay after the warmup, plus up to {} s for requests \
                 still in flight at its end",
                args.benchmark_duration, args.benchmark_grace_period
            );
        }
        if unsafe_run {
            println!(
                "Validity: invalid (duration below {MIN_VALID_DURATION_S} s with --unsafe-override)"
            );
        }
        if let Some(dir) = &args.result_dir {
            let path = dir.join("summary.json");
            let text = serde_json::to_string_pretty(&summary)?;
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            let ctx = inferbench_core::summary::agentic::AgenticContext {
                conc: args.concurrency,
                model: args.target.model.clone(),
                ..Default::default()
            };
            agentic::write_artifacts(
                dir,
                &out,
                &ctx,
                !unsafe_run,
                summary.inferbench.power.as_ref(),
            )?;
            eprintln!(
                "wrote {}, {}, {} and {}/",
                path.display(),
                dir.join("requests.jsonl").display(),
                dir.join("agentic_aggregate.json").display(),
                dir.join("aiperf_artifacts").display()
            );
        }
        for n in out.notes.iter().chain(&power_notes) {
            eprintln!("inferbench: {n}");
        }
        let power_invalid = summary.inferbench.power.as_ref().filter(|p| !p.valid);
        if let Some(p) = power_invalid {
            eprintln!(
                "inferbench: GPU power not valid ({}); see power_validation.json",
                p.reasons.join(", ")
            );
        }
        if summary.completed == 0 && out.stop == ReplayStop::Completed {
            eprintln!("inferbench: nothing was measured: no profile request succeeded");
        }
        let mut code = exit_code(&out, &summary);
        if code == 0 && args.power.require_power && power_invalid.is_some() {
            code = 1;
        }
        anyhow::Ok(code)
    })
}
