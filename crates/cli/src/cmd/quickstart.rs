//! `inferbench quickstart`: the README's first command. Starts the simulated server in-process,
//! sweeps concurrency with the load generator, writes one artifact directory per point
//! (DESIGN.md §3: summary, aggregate, records, job.json, server log, `/metrics` snapshots) under
//! a fresh run directory `<out>/<UTC time>/`, ingests exactly those into the database, prints
//! the frontier table and draws the chart of this run. No GPU and no network needed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use inferbench_core::record::RequestRecord;
use inferbench_core::summary::{JobIdentity, RunSummary, SummaryContext};
use inferbench_loadgen::{run_bench, BenchOptions, CancellationToken, ProgressMode};
use inferbench_sim::{Precision, SimConfig};

/// Flags of `inferbench quickstart`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 ok; 1 a point failed (its requests errored) or the database or \
                  chart step failed; 2 bad flags, or a database that cannot be opened; 130 \
                  interrupted (Ctrl-C: the points finished so far are stored and drawn)."
)]
pub struct Args {
    /// Directory for the runs: each invocation writes a fresh `<out>/<UTC time>/` with one
    /// subdirectory per concurrency, and stores only those points.
    #[arg(long, default_value = "results/quickstart")]
    pub out: PathBuf,
    /// Database to ingest into (SQLite path or postgres:// URL).
    #[arg(long, env = "INFERBENCH_DB", default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Do not touch the database (artifacts, table and chart only; the chart is drawn from an
    /// in-memory database).
    #[arg(long)]
    pub no_db: bool,
    /// Chart path (.svg or .png: only that file); default: both `<out>/<UTC time>/frontier.svg`
    /// and `frontier.png`.
    #[arg(long)]
    pub chart: Option<PathBuf>,
    /// Concurrency points, comma-separated [default: 1,2,4,8,16,32,64; --fast: 1,4,16,64].
    #[arg(long, value_delimiter = ',')]
    pub concurrency: Option<Vec<u32>>,
    /// Input length, tokens [default: 1024; --fast: 512].
    #[arg(long)]
    pub isl: Option<u32>,
    /// Output length, tokens [default: 256; --fast: 64].
    #[arg(long)]
    pub osl: Option<u32>,
    /// Prompts per point = this × concurrency (InferenceX uses 10) [default: 5; --fast: 2].
    #[arg(long)]
    pub prompts_per_conc: Option<u32>,
    /// Warmup requests per point = this × concurrency (InferenceX uses 2) [default: 1;
    /// --fast: 0].
    #[arg(long)]
    pub warmups_per_conc: Option<u32>,
    /// Simulated model (catalogue name).
    #[arg(long, default_value = "Llama-3.1-8B")]
    pub model: String,
    /// Simulated hardware (catalogue name).
    #[arg(long, default_value = "H100")]
    pub hardware: String,
    /// Weight precision.
    #[arg(long, default_value = "bf16")]
    pub precision: String,
    /// Tensor-parallel GPUs of the simulated server.
    #[arg(long, default_value_t = 1)]
    pub tp: u32,
    /// Simulated max-num-seqs: TTFT jumps once concurrency passes it [default: 32; --fast: 16].
    #[arg(long)]
    pub max_num_seqs: Option<u32>,
    /// Modelled seconds per wall second. Results are converted back to modelled time (every
    /// timestamp × this factor), so they describe the simulated hardware; keep one engine step
    /// above ~1 ms of wall time (the timer's granularity), i.e. this factor at most ~5 for an 8B
    /// model on H100. [default: 4; --fast: 8, past that guidance on purpose: a smoke run trades
    /// timing precision for speed]
    #[arg(long, allow_negative_numbers = true, value_parser = super::sim::positive_f64)]
    pub time_scale: Option<f64>,
    /// Seed for prompts.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A seconds-long smoke run: concurrency 1,4,16,64, ISL 512, OSL 64, 2 prompts per
    /// concurrency, no warmups, max-num-seqs 16, time scale 8 (flags given explicitly win).
    #[arg(long)]
    pub fast: bool,
    /// AgentX instead: replay built-in agentic-coding sessions (sub-agents, prefix reuse) at
    /// 1, 2, 4, 8 lanes for 6 s each (3 s with --fast) and show the North-Star frontier.
    #[arg(long)]
    pub agentic: bool,
}

/// The sweep's shape after defaults (`--fast` or not) are applied to the flags not given.
struct Plan {
    concurrency: Vec<u32>,
    isl: u32,
    osl: u32,
    prompts_per_conc: u32,
    warmups_per_conc: u32,
    max_num_seqs: u32,
    time_scale: f64,
}

impl Plan {
    fn new(a: &Args) -> Plan {
        let f = a.fast;
        Plan {
            concurrency: a.concurrency.clone().unwrap_or_else(|| {
                if f {
                    vec![1, 4, 16, 64]
                } else {
                    vec![1, 2, 4, 8, 16, 32, 64]
                }
            }),
            isl: a.isl.unwrap_or(if f { 512 } else { 1024 }),
            osl: a.osl.unwrap_or(if f { 64 } else { 256 }),
            prompts_per_conc: a.prompts_per_conc.unwrap_or(if f { 2 } else { 5 }),
            warmups_per_conc: a.warmups_per_conc.unwrap_or(if f { 0 } else { 1 }),
            max_num_seqs: a.max_num_seqs.unwrap_or(if f { 16 } else { 32 }),
            time_scale: a.time_scale.unwrap_or(if f { 8.0 } else { 4.0 }),
        }
    }
}

/// One finished point.
struct Point {
    conc: u32,
    dir: PathBuf,
}

fn metric(s: &RunSummary, name: &str) -> Option<f64> {
    s.metrics.get(name).and_then(serde_json::Value::as_f64)
}

/// Runs the quickstart; returns the exit code (0 ok, 1 when a point failed, 130 on Ctrl-C).
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.agentic {
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        let (run_dir, sweep_id) = fresh_run_dir(&args.out)?;
        return super::quickstart_agentic::run(&args, &run_dir, &sweep_id);
    }
    let p = Plan::new(&args);
    anyhow::ensure!(
        !p.concurrency.is_empty() && p.concurrency.iter().all(|&c| c > 0),
        "--concurrency needs positive values"
    );
    anyhow::ensure!(p.isl > 0, "--isl must be at least 1 token");
    anyhow::ensure!(p.osl > 0, "--osl must be at least 1 token");
    anyhow::ensure!(
        p.prompts_per_conc > 0,
        "--prompts-per-conc must be at least 1"
    );
    if let Some(c) = &args.chart {
        let ext = c
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        anyhow::ensure!(
            ext == "svg" || ext == "png",
            "--chart {}: use a .svg or .png file name",
            c.display()
        );
    }
    let precision = Precision::parse(&args.precision)?;
    let cfg = SimConfig {
        hardware: args.hardware.clone(),
        model: args.model.clone(),
        precision,
        tp: args.tp,
        time_scale: p.time_scale,
        max_num_seqs: p.max_num_seqs,
        seed: args.seed,
        threads: 1,
        ..SimConfig::default()
    };
    let info = inferbench_sim::describe(&cfg)?;
    anyhow::ensure!(
        u64::from(p.isl) + u64::from(p.osl) <= u64::from(info.max_model_len),
        "--isl {} + --osl {} exceeds the simulated model's max_model_len {}",
        p.isl,
        p.osl,
        info.max_model_len
    );
    // Open (and migrate) the database before the sweep, so a bad --db fails in seconds; with
    // --no-db an in-memory SQLite database still feeds the chart.
    let (mut store, hw_key, model_prefix) = open_store_and_identity(&args)?;
    let sim_line = inferbench_sim::start_line(&cfg, &info);
    eprintln!("{sim_line}");
    eprintln!(
        "  (time scale {}: the sim runs {}x faster than the modelled hardware; every time below \
         is rescaled to the modelled hardware's)",
        p.time_scale, p.time_scale
    );
    eprintln!(
        "  random dataset: ISL {} / OSL {} tokens (exact lengths), {} prompt(s) and {} warmup(s) per \
         unit of concurrency, at conc {:?}",
        p.isl, p.osl, p.prompts_per_conc, p.warmups_per_conc, p.concurrency
    );
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let (run_dir, sweep_id) = fresh_run_dir(&args.out)?;
    let sim = inferbench_sim::spawn(cfg)?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let cancel = CancellationToken::new();
    let mut points = Vec::new();
    let mut exit = 0;
    rt.block_on(async {
        let stop = super::shutdown_token("inferbench quickstart: interrupted; stopping after this point");
        let c2 = cancel.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            c2.cancel();
        });
        for &conc in &p.concurrency {
            let runner = format!("{hw_key}-sim");
            let exp = format!("qs-{model_prefix}-{}-{}", p.isl, p.osl);
            let result_filename = format!(
                "{exp}_{precision}_sim_tp{}-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc{conc}_{runner}",
                args.tp
            );
            let dir = run_dir.join(&result_filename);
            std::fs::create_dir_all(&dir)?;
            let env: BTreeMap<&str, String> = [
                ("RUNNER_TYPE", hw_key.clone()),
                ("FRAMEWORK", "sim".into()),
                ("PRECISION", precision.to_string()),
                ("SPEC_DECODING", "none".into()),
                ("RESULT_FILENAME", result_filename.clone()),
                ("ISL", p.isl.to_string()),
                ("OSL", p.osl.to_string()),
                ("DISAGG", "false".into()),
                ("MODEL_PREFIX", model_prefix.clone()),
                ("IMAGE", format!("inferbench-sim:{}", env!("CARGO_PKG_VERSION"))),
                ("TP", args.tp.to_string()),
                ("EP_SIZE", "1".into()),
                ("DP_ATTENTION", "false".into()),
            ]
            .into_iter()
            .collect();
            let identity = JobIdentity::from_lookup(|k| env.get(k).cloned())?;
            let opts = BenchOptions {
                base_url: sim.base_url(),
                model: info.served_model_name.clone(),
                random_input_len: p.isl,
                random_output_len: p.osl,
                random_range_ratio: Some(1.0),
                ignore_eos: true,
                seed: args.seed,
                max_concurrency: Some(conc),
                num_prompts: Some(u64::from(p.prompts_per_conc.max(1) * conc)),
                num_warmups: Some(u64::from(p.warmups_per_conc * conc)),
                save_result: true,
                result_dir: Some(dir.clone()),
                result_filename: Some("summary.json".into()),
                save_requests: Some(dir.join("requests.jsonl")),
                job_identity: Some(identity.clone()),
                progress: ProgressMode::Off,
                // The simulated GPU draws no power of this machine's GPUs.
                power: inferbench_loadgen::PowerMode::Off,
                metadata: vec![
                    ("clock".into(), "modelled".into()),
                    ("sim_time_scale".into(), p.time_scale.to_string()),
                ],
                ..BenchOptions::default()
            };
            let started = inferbench_runner::artifacts::now_rfc3339();
            let t0 = std::time::Instant::now();
            let mut outcome = run_bench(opts.clone(), cancel.clone()).await?;
            for n in &outcome.notes {
                eprintln!("  note (conc {conc}): {n}");
            }
            outcome.summary = to_modelled_time(&opts, &outcome.summary, conc, p.time_scale)?;
            let plain = dir.join("requests.jsonl");
            if plain.exists() {
                inferbench_runner::bench::compress(&plain, &dir.join("requests.jsonl.zst"))?;
                std::fs::remove_file(&plain).ok();
            }
            let job = serde_json::json!({
                "identity": identity,
                "sweep_id": sweep_id,
                "provenance": inferbench_runner::artifacts::Provenance::current(
                    &format!("inferbench-sim:{}", env!("CARGO_PKG_VERSION")), &runner),
                "sim": {
                    "hardware": args.hardware, "model": args.model, "precision": precision.as_str(),
                    "tp": args.tp, "max_num_seqs": p.max_num_seqs, "time_scale": p.time_scale,
                    "kv_capacity_tokens": info.kv_capacity_tokens,
                },
                "bench": {"conc": conc, "isl": p.isl, "osl": p.osl,
                          "num_prompts": p.prompts_per_conc.max(1) * conc,
                          "num_warmups": p.warmups_per_conc * conc, "seed": args.seed},
                "started_at": started,
                "finished_at": inferbench_runner::artifacts::now_rfc3339(),
            });
            inferbench_runner::artifacts::write_json_atomic(&dir.join("job.json"), &job)?;
            std::fs::write(dir.join("server.log"), format!("{sim_line}\n"))?;
            let s = &outcome.summary;
            let cut = match (s.inferbench.cancelled_by_user, s.inferbench.requests_not_sent) {
                (0, 0) => String::new(),
                (c, n) => format!(" ({c} cancelled, {n} not sent: cut short)"),
            };
            eprintln!(
                "  conc {conc:>3}: {} ok, {} failed{cut}, {:.0} tok/s in+out (modelled), TTFT p99 {:.3} s, took {:.1} s of wall time",
                s.completed,
                s.inferbench.failed,
                s.total_token_throughput,
                metric(s, "p99_ttft_ms").unwrap_or(f64::NAN) / 1000.0,
                t0.elapsed().as_secs_f64()
            );
            if outcome.exit_code != 0 {
                exit = if outcome.interrupted { 130 } else { 1 };
            }
            points.push(Point { conc, dir });
            if cancel.is_cancelled() {
                break;
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    sim.shutdown();

    let chart = args
        .chart
        .clone()
        .unwrap_or_else(|| run_dir.join("frontier.svg"));
    match store_and_plot(&mut store, &args, &p, &run_dir, &sweep_id, &chart, &points) {
        Ok(msg) => eprintln!("{msg}"),
        Err(e) => {
            eprintln!("warning: database/chart step failed: {e:#}");
            exit = exit.max(1);
        }
    }
    eprintln!("artifacts in {}", run_dir.display());
    for p in &points {
        tracing::debug!("point conc {} in {}", p.conc, p.dir.display());
    }
    Ok(exit)
}

/// Opens (and migrates) `--db` (an in-memory SQLite database with `--no-db`), and the
/// simulated hardware's and model's keys as the store names them (`h100`, `llama3.1-8b`).
pub(crate) fn open_store_and_identity(
    args: &Args,
) -> anyhow::Result<(inferbench_store::Store, String, String)> {
    let mut store =
        inferbench_store::Store::open(if args.no_db { ":memory:" } else { &args.db })
            .with_context(|| format!("opening database {}", inferbench_store::redact(&args.db)))?;
    store.migrate()?;
    let cat = inferbench_sim::Catalogue::embedded();
    let hw_key = cat.hardware(&args.hardware)?.name.to_ascii_lowercase();
    let model_prefix = cat
        .model(&args.model)?
        .name
        .to_ascii_lowercase()
        .replace("llama-", "llama");
    Ok((store, hw_key, model_prefix))
}

/// Multiplies every timestamp of `records` by `k` (wall → modelled seconds of the simulated
/// hardware), recomputes the summary, and rewrites `summary.json`, the aggregate and
/// `requests.jsonl` with the modelled values. Client-side overheads are scaled too, so they
/// weigh `k` times more than in a real run; at k ≤ 5 that is well under a millisecond.
fn to_modelled_time(
    opts: &BenchOptions,
    wall: &RunSummary,
    conc: u32,
    k: f64,
) -> anyhow::Result<RunSummary> {
    let s = |t: u64| (t as f64 * k).round() as u64;
    let so = |t: Option<u64>| t.map(s);
    // The run kept compacted records only (issue 14): the full ones, chunks included, are in
    // its records file, read and rewritten one at a time.
    let path = opts
        .save_requests
        .as_ref()
        .context("quickstart saves its requests")?;
    let tmp = path.with_extension("jsonl.modelled");
    let mut kept = inferbench_loadgen::kept::KeptRecords::new(false);
    {
        use std::io::BufRead;
        let input = std::io::BufReader::new(
            std::fs::File::open(path).with_context(|| path.display().to_string())?,
        );
        let mut sink = inferbench_loadgen::output::RecordSink::create(&tmp)?;
        for (i, line) in input.lines().enumerate() {
            let line = line.with_context(|| path.display().to_string())?;
            let mut r: RequestRecord = serde_json::from_str(&line)
                .with_context(|| format!("{}:{}", path.display(), i + 1))?;
            r.scheduled_ns = s(r.scheduled_ns);
            r.released_ns = so(r.released_ns);
            r.sent_ns = s(r.sent_ns);
            r.first_byte_ns = so(r.first_byte_ns);
            r.first_token_ns = so(r.first_token_ns);
            r.first_output_token_ns = so(r.first_output_token_ns);
            r.last_token_ns = so(r.last_token_ns);
            r.end_ns = s(r.end_ns);
            r.read_end_ns = so(r.read_end_ns);
            for c in &mut r.chunks {
                c.t_ns = s(c.t_ns);
            }
            sink.write(&r)?;
            kept.push(r);
        }
    }
    std::fs::rename(&tmp, path).with_context(|| path.display().to_string())?;
    let start = wall.benchmark_start_time_unix;
    let ctx = SummaryContext {
        backend: wall.backend.clone(),
        model_id: wall.model_id.clone(),
        tokenizer_id: wall.tokenizer_id.clone(),
        num_prompts: wall.num_prompts,
        burstiness: wall.burstiness,
        max_concurrency: Some(conc),
        date: wall.date.clone(),
        benchmark_start_time_unix: start,
        benchmark_end_time_unix: match (start, wall.benchmark_end_time_unix) {
            (Some(a), Some(b)) => Some(a + (b - a) * k),
            _ => None,
        },
        interrupted: wall.inferbench.interrupted,
        stop_reason: wall.inferbench.stop_reason,
        requests_not_sent: wall.inferbench.requests_not_sent,
        metadata: opts.metadata.iter().cloned().collect(),
        ..SummaryContext::default()
    };
    let (mut modelled, note) = kept.summarize(&ctx);
    // Clock-free verdicts and counters of the wall-time run (trial 9: summary.json lost them).
    modelled.inferbench.client = wall.inferbench.client.clone();
    modelled.inferbench.server_metrics = wall.inferbench.server_metrics.clone();
    if let Some(n) = note {
        eprintln!("  note: {n}");
    }
    inferbench_loadgen::output::write_results(opts, &modelled, &wall.date)?;
    Ok(modelled)
}

/// Creates `<out>/<UTC time>/` (`20261130-094512-123`, millisecond resolution; `-2`, `-3`, …
/// appended if it exists) and returns it with the run's sweep id (`quickstart-<that name>`, the
/// store's `batch`).
fn fresh_run_dir(out: &Path) -> anyhow::Result<(PathBuf, String)> {
    let digits: String = inferbench_runner::artifacts::now_rfc3339()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let stamp = if digits.len() >= 17 {
        format!("{}-{}-{}", &digits[..8], &digits[8..14], &digits[14..17])
    } else {
        digits
    };
    for n in 1u32.. {
        let name = if n == 1 {
            stamp.clone()
        } else {
            format!("{stamp}-{n}")
        };
        let dir = out.join(&name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((dir, format!("quickstart-{name}"))),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    unreachable!("u32 names exhausted")
}

/// Stores this run's points, prints their table (stdout) from the stored rows, so it shows what
/// `report -f batch=<sweep id>` shows (trial 9: a point without interactivity was starred here
/// and not there), draws the chart, and returns the last line.
fn store_and_plot(
    store: &mut inferbench_store::Store,
    args: &Args,
    p: &Plan,
    run_dir: &Path,
    sweep_id: &str,
    chart: &Path,
    points: &[Point],
) -> anyhow::Result<String> {
    use inferbench_views::report as view;
    let report = store.ingest_path(run_dir, &inferbench_store::IngestOptions::default())?;
    let mut filter = inferbench_store::Filter::default();
    filter.add(&format!("batch={sweep_id}"))?;
    let mut rows = store.points(&filter, &inferbench_store::CostOptions::default())?;
    let spec = inferbench_views::plot::PlotSpec {
        title: format!(
            "inferbench quickstart: {} on simulated {} ({} / {} tokens)",
            args.model, args.hardware, p.isl, p.osl
        ),
        ..Default::default()
    };
    inferbench_store::query::mark_frontier(&mut rows, &spec.x, &spec.y);
    let cols: Vec<String> = [
        "conc",
        "tput_per_gpu",
        "median_intvty",
        "p99_ttft",
        "frontier",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    let invalid = rows.iter().any(|r| !r.valid);
    print!("\n{}", view::render(&rows, &cols, view::Format::Table));
    print!("{}", view::footer(&cols, &spec.x, &spec.y, invalid, false));
    print!(
        "{}",
        view::wrap("times are modelled: the simulated hardware's, not this machine's wall clock")
    );
    // A point cut short before any request finished is a failed point, not a row here.
    let failed: Vec<String> = points
        .iter()
        .filter(|pt| !rows.iter().any(|r| r.conc == i64::from(pt.conc)))
        .map(|pt| pt.conc.to_string())
        .collect();
    if !failed.is_empty() {
        print!(
            "{}",
            view::wrap(&format!(
                "conc {}: no request finished, stored as a failed point (`report \
                 --include-failed` lists it)",
                failed.join(", ")
            ))
        );
    }
    let drawn = inferbench_views::plot::plot(&rows, &spec, chart)?;
    if let Some(n) = drawn.note() {
        eprintln!("  chart: {n}");
    }
    // The default chart comes as SVG (any browser) and PNG (any image viewer).
    let mut charts = chart.display().to_string();
    if args.chart.is_none() {
        let png = chart.with_extension("png");
        inferbench_views::plot::plot(&rows, &spec, &png)?;
        charts = format!("{charts} and {}", png.display());
    }
    Ok(stored_line(
        args,
        store,
        &report,
        &charts,
        "cut short, kept off the frontier",
    ))
}

/// The last line of a quickstart: how many points went where (and how many of them the store
/// keeps as invalid, `why_invalid`), and the charts. With `--no-db` the points were read from a
/// throw-away in-memory store, and the line says they were not stored (it said "ingested …
/// into no database").
pub(super) fn stored_line(
    args: &Args,
    store: &inferbench_store::Store,
    report: &inferbench_store::IngestReport,
    charts: &str,
    why_invalid: &str,
) -> String {
    let mut notes = Vec::new();
    match report.invalid_points {
        0 => {}
        n if n == report.points => notes.push(format!("all invalid: {why_invalid}")),
        n => notes.push(format!("{n} of them invalid: {why_invalid}")),
    }
    if !report.skipped.is_empty() {
        notes.push(format!("{} skipped", report.skipped.len()));
    }
    let skipped = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    if args.no_db {
        format!(
            "{} points{skipped}, not stored (--no-db); chart: {charts}",
            report.points
        )
    } else {
        format!(
            "stored {} points{skipped} in {}; chart: {charts}",
            report.points,
            store.location()
        )
    }
}
