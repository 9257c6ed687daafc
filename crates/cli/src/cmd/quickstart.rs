//! `inferbench quickstart`: the README's first command. Starts the simulated server in-process
//! and runs one sim matrix row per concurrency through the runner (`run_jobs` against the
//! sim's URL, `LoadgenPoint` in modelled time), which writes one artifact directory per point
//! (DESIGN.md §3: summary, aggregate, records, job.json, server log, `/metrics` snapshots) under
//! a fresh run directory `<out>/<UTC time>/`; then ingests exactly those into the database,
//! prints the frontier table and draws the chart of this run. No GPU and no network needed.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use inferbench_runner::artifacts::fresh_run_dir;
use inferbench_runner::simsweep::SimSweep;
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

/// The sweep the flags ask for, `--fast`'s defaults or the full ones filling the flags not
/// given. Errors: an unknown `--precision`.
fn plan(a: &Args) -> anyhow::Result<SimSweep> {
    let f = a.fast;
    let full = [1, 2, 4, 8, 16, 32, 64];
    Ok(SimSweep {
        sim: SimConfig {
            hardware: a.hardware.clone(),
            model: a.model.clone(),
            precision: Precision::parse(&a.precision)?,
            tp: a.tp,
            time_scale: a.time_scale.unwrap_or(if f { 8.0 } else { 4.0 }),
            max_num_seqs: a.max_num_seqs.unwrap_or(if f { 16 } else { 32 }),
            seed: a.seed,
            threads: 1,
            ..SimConfig::default()
        },
        concurrency: (a.concurrency.clone()).unwrap_or_else(|| {
            if f {
                vec![1, 4, 16, 64]
            } else {
                full.to_vec()
            }
        }),
        isl: a.isl.unwrap_or(if f { 512 } else { 1024 }),
        osl: a.osl.unwrap_or(if f { 64 } else { 256 }),
        prompts_per_conc: a.prompts_per_conc.unwrap_or(if f { 2 } else { 5 }),
        warmups_per_conc: a.warmups_per_conc.unwrap_or(if f { 0 } else { 1 }),
    })
}

/// Runs the quickstart; returns the exit code (0 ok, 1 when a point failed, 130 on Ctrl-C).
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.agentic {
        let run_dir = fresh_run_dir(&args.out)?;
        return super::quickstart_agentic::run(&args, &run_dir, &sweep_id(&run_dir));
    }
    let p = plan(&args)?;
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
        let ext = c.extension().and_then(|e| e.to_str()).unwrap_or("");
        anyhow::ensure!(
            ext.eq_ignore_ascii_case("svg") || ext.eq_ignore_ascii_case("png"),
            "--chart {}: use a .svg or .png file name",
            c.display()
        );
    }
    let info = inferbench_sim::describe(&p.sim)?;
    anyhow::ensure!(
        u64::from(p.isl) + u64::from(p.osl) <= u64::from(info.max_model_len),
        "--isl {} + --osl {} exceeds the simulated model's max_model_len {}",
        p.isl,
        p.osl,
        info.max_model_len
    );
    // Open (and migrate) the database before the sweep, so a bad --db fails in seconds.
    let mut store = open_store(&args)?;
    let k = p.sim.time_scale;
    eprintln!("{}", inferbench_sim::start_line(&p.sim, &info));
    eprintln!(
        "  (time scale {k}: the sim runs {k}x faster than the modelled hardware; every time below \
         is rescaled to the modelled hardware's)"
    );
    eprintln!(
        "  random dataset: ISL {} / OSL {} tokens (exact lengths), {} prompt(s) and {} warmup(s) per \
         unit of concurrency, at conc {:?}",
        p.isl, p.osl, p.prompts_per_conc, p.warmups_per_conc, p.concurrency
    );
    let run_dir = fresh_run_dir(&args.out)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let report = rt.block_on(async {
        let cancel =
            super::shutdown_token("inferbench quickstart: interrupted; stopping after this point");
        p.run(&run_dir, &sweep_id(&run_dir), &cancel).await
    })?;
    let mut exit = report.exit_code();
    let concs: Vec<u32> = report.points.iter().map(|pt| pt.conc).collect();
    let chart = (args.chart.clone()).unwrap_or_else(|| run_dir.join("frontier.svg"));
    match store_and_plot(&mut store, &args, &p, &run_dir, &chart, &concs) {
        Ok(msg) => eprintln!("{msg}"),
        Err(e) => {
            eprintln!("warning: database/chart step failed: {e:#}");
            exit = exit.max(1);
        }
    }
    eprintln!("artifacts in {}", run_dir.display());
    Ok(exit)
}

/// The store's batch of a run: `quickstart-<run directory name>`.
fn sweep_id(run_dir: &Path) -> String {
    let name = run_dir.file_name().unwrap_or_default().to_string_lossy();
    format!("quickstart-{name}")
}

/// Opens (and migrates) `--db`; with `--no-db` an in-memory SQLite database, which still
/// feeds the table and the chart.
pub(crate) fn open_store(args: &Args) -> anyhow::Result<inferbench_store::Store> {
    let db = if args.no_db { ":memory:" } else { &args.db };
    let mut store = inferbench_store::Store::open(db)
        .with_context(|| format!("opening database {}", inferbench_store::redact(&args.db)))?;
    store.migrate()?;
    Ok(store)
}

/// Stores this run's points, prints their table (stdout) from the stored rows, so it shows what
/// `report -f batch=<sweep id>` shows (trial 9: a point without interactivity was starred here
/// and not there), draws the chart, and returns the last line.
fn store_and_plot(
    store: &mut inferbench_store::Store,
    args: &Args,
    p: &SimSweep,
    run_dir: &Path,
    chart: &Path,
    concs: &[u32],
) -> anyhow::Result<String> {
    use inferbench_views::report as view;
    let report = store.ingest_path(run_dir, &inferbench_store::IngestOptions::default())?;
    let mut filter = inferbench_store::Filter::default();
    filter.add(&format!("batch={}", sweep_id(run_dir)))?;
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
    let failed: Vec<String> = concs
        .iter()
        .filter(|&&c| !rows.iter().any(|r| r.conc == i64::from(c)))
        .map(|c| c.to_string())
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
