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
    /// 1, 2, 4, 8 lanes for 6 s of replay each (3 s with --fast; about 45 s in all with each
    /// point's warmup and drain), on the sim in real time (time scale 1), and show the
    /// North-Star frontier.
    #[arg(long)]
    pub agentic: bool,
}

/// The sweep the flags ask for, `--fast`'s defaults or the full ones filling the flags not
/// given. Errors: an unknown `--precision`.
fn plan(a: &Args) -> anyhow::Result<SimSweep> {
    let f = a.fast;
    let conc: &[u32] = if f {
        &[1, 4, 16, 64]
    } else {
        &[1, 2, 4, 8, 16, 32, 64]
    };
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
        concurrency: a.concurrency.clone().unwrap_or_else(|| conc.to_vec()),
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
    let concs: Vec<i64> = report.points.iter().map(|pt| pt.conc.into()).collect();
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
    concs: &[i64],
) -> anyhow::Result<String> {
    use inferbench_views::preview::{stored_line, unlisted, Preview};
    let report = store.ingest_path(run_dir, &Default::default())?;
    let mut filter = inferbench_store::Filter::default();
    filter.add(&format!("batch={}", sweep_id(run_dir)))?;
    let mut rows = store.points(&filter, &Default::default())?;
    let mut view = Preview {
        columns: [
            "conc",
            "tput_per_gpu",
            "median_intvty",
            "p99_ttft",
            "frontier",
        ]
        .map(String::from)
        .to_vec(),
        invalid: rows.iter().any(|r| !r.valid),
        notes: vec![
            "times are modelled: the simulated hardware's, not this machine's wall clock".into(),
        ],
        ..Preview::default()
    };
    view.spec.title = format!(
        "inferbench quickstart: {} on simulated {} ({} / {} tokens)",
        args.model, args.hardware, p.isl, p.osl
    );
    inferbench_store::query::mark_frontier(&mut rows, &view.spec.x, &view.spec.y);
    // A point cut short before any request finished is a failed point, not a row here.
    let failed = unlisted(concs, &rows);
    if !failed.is_empty() {
        view.notes.push(format!(
            "conc {}: no request finished, stored as a failed point (`report --include-failed` \
             lists it)",
            failed.join(", ")
        ));
    }
    print!("\n{}", view.table(&rows));
    let (charts, note) = view.draw(&rows, chart, args.chart.is_none())?;
    if let Some(n) = note {
        eprintln!("  chart: {n}");
    }
    let db = (!args.no_db).then(|| store.location());
    Ok(stored_line(
        &report,
        db,
        &charts,
        "cut short or timed on a starved CPU (the notes above say which), kept off the \
         frontier",
    ))
}
