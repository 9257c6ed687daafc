//! `inferbench quickstart`: the README's first command. Starts the simulated server in-process
//! and runs one sim matrix row per concurrency through the runner (`run_jobs` against the
//! sim's URL, `LoadgenPoint` in modelled time), which writes one artifact directory per point
//! (DESIGN.md §3: summary, aggregate, records, job.json, server log, `/metrics` snapshots) under
//! a fresh run directory `<out>/<UTC time>/`; then ingests exactly those into the database,
//! prints the frontier table and draws the chart of this run. No GPU and no network needed.

use std::path::PathBuf;

use super::preview;
use crate::cmd::run_flags::QuickstartFlags;
use inferbench_runner::artifacts::fresh_run_dir;
use inferbench_runner::simsweep::sweep_id;

use super::ExitStatus;

/// What Ctrl-C / SIGTERM print: the current point is cut at once (what it finished is kept,
/// marked invalid), the rest do not start, and the finished points are stored and drawn
/// (trial 17: "stopping after this point" promised a point that was in fact cut).
const STOP: &str =
    "inferbench quickstart: interrupted; cutting the current point short and storing what finished";

/// Flags of `inferbench quickstart`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 ok; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or a point failed (its requests errored) or the database or \
                  chart step failed, or out of memory midway (ulimit -v named); 2 bad flags, a \
                  database that cannot be opened, an --out or --chart that cannot be written \
                  (checked before any point), a largest point (or, with --agentic, lane count) \
                  beyond the open-file limit (ulimit -n: the in-process sim's end of each \
                  connection counts too) or the memory, named with the value that fits, or out \
                  of memory before any request (ulimit -v named, never SIGABRT); 130 \
                  interrupted by Ctrl-C, SIGTERM or SIGHUP (the points finished so far are stored and drawn)."
)]
pub struct Args {
    /// Directory for the runs: each invocation writes a fresh `<out>/<UTC time>/` with one
    /// subdirectory per concurrency, and stores only those points.
    #[arg(long, default_value = "results/quickstart")]
    pub out: PathBuf,
    /// Database to ingest into (SQLite path or postgres:// URL).
    #[arg(long, env = "INFERBENCH_DB", hide_env_values = true, default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Do not touch the database (artifacts, table and chart only; the chart is drawn from an
    /// in-memory database).
    #[arg(long)]
    pub no_db: bool,
    /// The sweep: the sim, the points, the chart.
    #[command(flatten)]
    pub sweep: QuickstartFlags,
}

/// Runs the quickstart: 0 ok, 1 when a point failed or the database/chart step did, 130 on
/// Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    let q = &args.sweep;
    // The chart never over the database (issue 39's leftovers, 1), for either pipeline.
    if let (Some(chart), false) = (&q.chart, args.no_db) {
        use inferbench_loadgen::samefile::{check_distinct, db_path, NamedPath};
        let mut paths = vec![NamedPath::output("--chart", chart)];
        paths.extend(db_path(&args.db));
        check_distinct(&paths)?;
    }
    if q.agentic {
        return run_agentic(&args);
    }
    let p = q.plan()?;
    // Its own need against `ulimit -v` / `ulimit -n` before the in-process sim starts (issue
    // 39, fresh tester's finding 2: `quickstart --fast` under `ulimit -v 100000` ran out of
    // memory naming no value): refused (exit 2) naming the value at which it starts.
    refuse_beyond(&quickstart_need(&p))?;
    check_outputs(&args)?;
    // Open (and migrate) the database before the sweep, so a bad --db fails in seconds.
    let mut store = open_store(&args)?;
    let run_dir = fresh_run_dir(&args.out)?;
    let batch = sweep_id(&run_dir);
    let report = super::on_runtime(STOP, |cancel| {
        let (p, run_dir, batch) = (&p, &run_dir, &batch);
        async move { p.run(run_dir, batch, &cancel).await }
    })?;
    let mut exit = ExitStatus::from(report.end());
    // The points that ran: one never started has no row and no failed point either.
    let concs: Vec<i64> = (report.points.iter())
        .filter(|pt| pt.outcome != inferbench_runner::Outcome::NotStarted)
        .map(|pt| pt.conc.into())
        .collect();
    let chart = (q.chart.clone()).unwrap_or_else(|| run_dir.join("frontier.svg"));
    let title = format!(
        "inferbench quickstart: {} on simulated {} ({} / {} tokens)",
        q.model, q.hardware, p.isl, p.osl
    );
    let shown = preview::fixed_quickstart(
        &mut store,
        shown(&args, &run_dir, &batch, &chart, title, q.fast_note(&p)),
        &concs,
    );
    match shown {
        Ok(msg) => errln!("{msg}"),
        Err(e) => {
            errln!(
                "warning: database/chart step failed: {}",
                crate::fsize::explain(&format!("{e:#}"))
            );
            if exit == ExitStatus::Ok {
                exit = ExitStatus::Failed;
            }
        }
    }
    errln!("artifacts in {}", run_dir.display());
    Ok(exit)
}

/// Memory the in-process sim takes in a quickstart besides the client's own process, bytes:
/// 32 MiB (its engine and tokenizer threads, 2 × [`crate::limits::THREAD_BYTES`], its
/// model tables and KV bookkeeping; the standalone sim measured 108–110 MiB with the binary's
/// own mappings, which the client's base already counts).
pub const QUICKSTART_SIM_BYTES: u64 = 32 << 20;

/// What a quickstart's largest point asks of the process ([`crate::limits::check`]): its
/// largest concurrency's streams, its `prompts_per_conc × conc` requests and warmups with
/// their random prompts (`isl` tokens each, `BYTES_PER_PROMPT_TOKEN`) and output tokens
/// (what the client keeps and holds of one response of `osl` tokens in flight,
/// `kept_response_bytes` and `held_stream_bytes`; 8 bytes a kept chunk's ITL gap, up to the
/// spill), and the in-process sim ([`QUICKSTART_SIM_BYTES`], among the prompts' bytes).
///
/// The sim runs in this process ([`crate::limits::Need::server_in_process`]): the server end of
/// each connection counts against `ulimit -n` too.
pub fn quickstart_need(p: &inferbench_runner::simsweep::SimSweep) -> crate::limits::Need {
    use inferbench_loadgen::options::limits::{
        held_stream_bytes, kept_gaps, kept_response_bytes, BYTES_PER_PROMPT_TOKEN,
    };
    let conc = u64::from(p.concurrency.iter().copied().max().unwrap_or(1));
    let prompts = u64::from(p.prompts_per_conc).saturating_mul(conc);
    let requests = prompts.saturating_add(u64::from(p.warmups_per_conc).saturating_mul(conc));
    let (isl, osl) = (u64::from(p.isl), u64::from(p.osl));
    crate::limits::Need {
        flag: "--concurrency",
        streams: conc,
        requests,
        per_stream: 1,
        request_bytes: kept_response_bytes(osl).saturating_add(held_stream_bytes(osl)),
        prompt_bytes: prompts
            .saturating_mul(isl)
            .saturating_mul(BYTES_PER_PROMPT_TOKEN)
            .saturating_add(QUICKSTART_SIM_BYTES),
        output_bytes: requests
            .saturating_mul(kept_gaps(osl))
            .min(inferbench_loadgen::kept::SPILL_VALUES as u64)
            .saturating_mul(8),
        uncapped: false,
        lower: crate::limits::LOWER_QUICKSTART,
        server_in_process: true,
    }
}

/// What `quickstart --agentic`'s largest lane count asks of the process
/// ([`crate::limits::check`]; issue 39, fresh tester's finding 3: it had no check, and under
/// `ulimit -n 20` every lane failed "Too many open files"): its lanes, each holding its
/// session's peak of requests in flight ([`inferbench_loadgen::agentic::lane_load`] of the
/// built-in sessions, as `replay` counts a lane), each request's bytes in flight, the sessions
/// kept (their JSONL × [`crate::limits::TRACE_BYTES_PER_FILE_BYTE`]) and the in-process sim
/// ([`QUICKSTART_SIM_BYTES`] among the prompts' bytes), whose server ends count too.
pub fn agentic_quickstart_need(
    sweep: &inferbench_runner::simsweep::AgenticSimSweep,
) -> crate::limits::Need {
    let sessions = inferbench_runner::simsweep::AgenticSimSweep::sessions();
    let lane = inferbench_loadgen::agentic::lane_load(&sessions);
    let mut jsonl = Vec::new();
    // Writing to memory cannot fail.
    let _ = inferbench_workload::agentx::synthetic::write_jsonl(&sessions, &mut jsonl);
    let kept = (jsonl.len() as u64).saturating_mul(crate::limits::TRACE_BYTES_PER_FILE_BYTE);
    crate::limits::Need {
        flag: "--concurrency",
        streams: u64::from(sweep.lanes.iter().copied().max().unwrap_or(1)),
        requests: 0,
        per_stream: lane.per_lane,
        request_bytes: lane.request_bytes,
        prompt_bytes: kept.saturating_add(QUICKSTART_SIM_BYTES),
        output_bytes: 0,
        uncapped: false,
        lower: crate::limits::LOWER_QUICKSTART,
        server_in_process: true,
    }
}

/// The one up-front check of both quickstarts: `need` ([`quickstart_need`],
/// [`agentic_quickstart_need`]) against `ulimit -n` / `ulimit -v` after lifting the soft
/// open-file limit, before the in-process sim starts.
///
/// # Errors
/// [`crate::limits::check`]'s refusal naming the limit and the value at which the run
/// starts (exit 2, nothing sent).
pub fn refuse_beyond(need: &crate::limits::Need) -> anyhow::Result<()> {
    let limits = crate::limits::raise_open_files();
    crate::limits::check(need, &limits)
        .map_err(anyhow::Error::msg)
        .map_err(|e| {
            crate::limits::advise_no_stream(e, &limits, |at| crate::limits::check(need, at).is_ok())
        })
}

/// `--agentic`: the AgentX pipeline on the embedded simulator in seconds
/// (`AgenticSimSweep`), its North-Star frontier shown as a preview.
/// `--out` and `--chart`, checked writable before the database is opened and the sweep runs
/// (issue 39 §8). Errors: `FLAG PATH: why`, exit 2.
fn check_outputs(args: &Args) -> anyhow::Result<()> {
    // A `file:` URI is refused before `--out` is created (issue 39, fresh tester's finding 1).
    if !args.no_db {
        inferbench_store::refuse_sqlite_uri(&args.db)?;
    }
    inferbench_loadgen::output::check_dir_writable("--out", &args.out)?;
    // The chart never over the database or its SQLite side files (`--db c.svg --chart c.svg`;
    // trial of issue 39's leftovers, finding 1's kind).
    if let (Some(chart), false) = (&args.sweep.chart, args.no_db) {
        use inferbench_loadgen::samefile::{check_distinct, db_path, NamedPath};
        let mut paths = db_path(&args.db);
        paths.push(NamedPath::output("--chart", chart));
        check_distinct(&paths)?;
    }
    // Where the points will be stored, as `bench --db` checks it (a database in a folder
    // SQLite cannot write its side files in failed only after the sweep: trial of issue 39's
    // leftovers, finding 5's kind).
    if !args.no_db {
        inferbench_store::Store::check_target(&args.db)?;
    }
    // The database and each point's summary within `ulimit -f`, before the sweep (trial of
    // issue 39's leftovers, finding 4's kind).
    let mut planned = vec![crate::fsize::Planned::between(
        "a point's summary.json",
        crate::fsize::REPLAY_SUMMARY_BYTES,
        crate::fsize::RESULT_UPPER_BYTES,
    )];
    if !args.no_db {
        // At most: the schema and a point's rows (an upper estimate, so the advised limit is
        // true; issue 39, second round, finding 3).
        if let (Some(least), Some(most)) = (
            crate::fsize::db_bytes(&args.db),
            crate::fsize::db_upper_bytes(&args.db, 0),
        ) {
            planned.push(crate::fsize::Planned::between("--db", least, most));
        }
    }
    crate::fsize::check(&planned, crate::fsize::limit()).map_err(anyhow::Error::msg)?;
    args.sweep.chart.as_deref().map_or(Ok(()), |c| {
        inferbench_loadgen::output::check_file_writable("--chart", c)
    })
}

fn run_agentic(args: &Args) -> anyhow::Result<ExitStatus> {
    let q = &args.sweep;
    let sweep = q.agentic_plan()?;
    refuse_beyond(&agentic_quickstart_need(&sweep))?;
    let run_dir = fresh_run_dir(&args.out)?;
    let batch = sweep_id(&run_dir);
    check_outputs(args)?;
    let mut store = open_store(args)?;
    let report = super::on_runtime(STOP, |cancel| {
        let (sweep, run_dir, batch) = (&sweep, &run_dir, &batch);
        async move { sweep.run(run_dir, batch, &cancel).await }
    })?;
    let chart = q
        .chart
        .clone()
        .unwrap_or_else(|| run_dir.join("frontier.svg"));
    let title = format!(
        "inferbench quickstart --agentic: {} on simulated {} (a preview: runs < 900 s are invalid)",
        q.model, q.hardware
    );
    let mut exit = ExitStatus::from(report.end);
    match preview::agentic_quickstart(
        &mut store,
        shown(args, &run_dir, &batch, &chart, title, None),
        &report.cut_short,
    ) {
        Ok(line) => errln!("{line}"),
        // After the run: its files are kept, and a failed store is 1, never 0 nor "bad
        // flags" (trial of issue 39's leftovers, finding 1).
        Err(e) => {
            errln!(
                "warning: database/chart step failed: {}",
                crate::fsize::explain(&format!("{e:#}"))
            );
            if exit == ExitStatus::Ok {
                exit = ExitStatus::Failed;
            }
        }
    }
    errln!("artifacts in {}", run_dir.display());
    Ok(exit)
}

/// What the view of the run needs: the run, its chart (a PNG too unless `--chart` named one),
/// whether `--db` is real, and a `note` of the caller's.
fn shown<'a>(
    args: &Args,
    run_dir: &'a std::path::Path,
    batch: &'a str,
    chart: &'a std::path::Path,
    title: String,
    note: Option<String>,
) -> preview::Shown<'a> {
    preview::Shown {
        run_dir,
        batch,
        title,
        chart,
        png_too: args.sweep.chart.is_none(),
        stored: !args.no_db,
        notes: note.into_iter().collect(),
    }
}

/// Opens (and migrates) `--db`; with `--no-db` an in-memory SQLite database, which still
/// feeds the table and the chart.
fn open_store(args: &Args) -> anyhow::Result<inferbench_store::Store> {
    let db = if args.no_db { ":memory:" } else { &args.db };
    use inferbench_store::StoreError;
    let mut store = inferbench_store::Store::open(db).map_err(|e| match e {
        // These name the database already (trial 24: "opening database X: `X` is not a
        // database file").
        StoreError::NotADatabase(_) | StoreError::ForeignDatabase(..) => anyhow::Error::new(e),
        e => anyhow::Error::new(e).context(format!(
            "opening database {}",
            inferbench_store::redact(&args.db)
        )),
    })?;
    store.migrate()?;
    Ok(store)
}
