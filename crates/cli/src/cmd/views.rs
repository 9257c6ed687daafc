//! The `report` subcommand: its flags ([`ReportFlags`], `--help` text written once), the store
//! query they make, and what is printed ([`ReportFlags::run`]) from `inferbench_views`' tables
//! and analysis; with [`open_with_runs`] and [`filter`], which `plot` and `serve` share; `plot`
//! ([`PlotFlags`]) and `compare` ([`CompareFlags`]) likewise.

use std::path::PathBuf;

use inferbench_store::{compare, query, CostOptions, Filter, PointRow, Store};
use inferbench_views::report::{self, Format};

use super::ExitStatus;

/// Exit codes of `report` (its `--help`; README "Exit codes").
pub const REPORT_EXIT_CODES_HELP: &str =
    "Exit codes: 0 ok, also when no point matches the filters (it \
     says so); 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr), or with --history-at: a group's latest value is a regression; 2 bad flags, no \
     database, or a database with no runs yet (run `inferbench quickstart` or `inferbench \
     ingest`).";

/// Opens the database for reading and refuses one without any run, naming the commands that
/// fill it (exit 2 through `main`, as for a missing database file). An older-schema SQLite
/// file is read through a migrated in-memory copy, said on stderr ([`Store::open_existing`]).
pub fn open_with_runs(db: &str) -> anyhow::Result<Store> {
    let mut store = Store::open_existing(db)?;
    if let Some(note) = store.migrated_copy_note() {
        errln!("{note}");
    }
    if store.run_count()? == 0 {
        anyhow::bail!(
            "no runs in {db} — run `inferbench quickstart --db {db}` or `inferbench ingest PATH \
             --db {db}` (or `inferbench bench … --db {db}`) first"
        );
    }
    Ok(store)
}

/// Flags of `inferbench report`.
#[derive(Debug, clap::Args)]
#[command(after_help = REPORT_EXIT_CODES_HELP)]
pub struct ReportFlags {
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", hide_env_values = true, default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Filter `KEY=VALUE[|VALUE…]` on any dimension (model, hardware/hw, framework, precision,
    /// spec, tp, ep, dp_attention, disagg, isl, osl, conc, gpus, image, scenario, kv_offload,
    /// date, batch, source_kind); repeatable: every key must match, and the values given for
    /// one key (`a|b`, or the key repeated) are alternatives.
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// Only points dated on or after this day (YYYY-MM-DD).
    #[arg(long)]
    pub since: Option<String>,
    /// Only points dated on or before this day (YYYY-MM-DD).
    #[arg(long)]
    pub until: Option<String>,
    /// Only points on their group's Pareto frontier in (x, y).
    #[arg(long)]
    pub frontier: bool,
    /// Frontier x metric. Default: median_intvty (tok/s/user); p90_e2e_norm_intvty (AgentX's
    /// North-Star x) when every selected point is agentic-coding.
    #[arg(long)]
    pub x: Option<String>,
    /// Frontier y metric (tok/s/GPU by default). Cost, latency and energy metrics are
    /// lower-is-better; the frontier direction follows.
    #[arg(long, default_value = "tput_per_gpu")]
    pub y: String,
    /// Comma-separated columns (default: identity, conc, date and headline metrics). Any stored
    /// metric name, or a derived one: usd_per_m_{hyperscaler,neocloud,rental,custom}[_input|_output],
    /// tok_s_per_mw[_input|_output], j_per_token[_input|_output]; `all`: the default columns,
    /// then every metric a selected point holds (as the dashboard's `points.csv?columns=all`).
    #[arg(long, value_delimiter = ',')]
    pub columns: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutFormat::Table)]
    pub format: OutFormat,
    /// Custom $/GPU-hour (adds usd_per_m_custom*).
    #[arg(long, value_name = "USD")]
    pub gpu_hour_cost: Option<f64>,
    /// Custom all-in kW per GPU for tok/s/MW and J/token (replaces the hardware table value).
    #[arg(long, value_name = "KW")]
    pub gpu_kw: Option<f64>,
    /// Include failed points.
    #[arg(long)]
    pub include_failed: bool,
    /// Let invalid points (runs cut short, on a starved server or client, served by the
    /// prefix cache, AgentX replays shorter than 900 s) onto frontiers; by default they are
    /// listed (marked `invalid`) but never on one.
    #[arg(long)]
    pub include_invalid: bool,
    /// Instead of points: the history of y at this x per group (one value per batch), with a
    /// regression flag. y is interpolated along each frontier with InferenceX's monotone curve,
    /// as `compare --at` does. `auto`: 35 tok/s/user where the counted points' frontiers reach
    /// it, else the middle of their x range (the dashboard's `at=auto`, the same rule).
    #[arg(long, value_name = "X|auto")]
    pub history_at: Option<inferbench_views::analysis::At>,
    /// History: relative drop (or rise, for lower-is-better y) that counts as a regression.
    #[arg(long, default_value_t = 0.05)]
    pub regression_threshold: f64,
    /// History: how many previous values form the baseline (their median).
    #[arg(long, default_value_t = 3)]
    pub baseline_window: usize,
    /// Instead of points: per group, the most y (tok/s/GPU by default) and the most concurrent
    /// users per GPU at this SLO, `METRIC OP VALUE[UNIT]` (`median_intvty>=35`, `p99_ttft<=2s`),
    /// read off the group's frontier in (METRIC, y); when the bound lies outside the measured
    /// range it says so (`all_meet`: a lower bound, `none_meet`) instead of extrapolating.
    #[arg(long, value_name = "SLO", conflicts_with_all = ["history_at", "frontier", "x"])]
    pub capacity: Option<String>,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum OutFormat {
    /// Aligned table.
    Table,
    /// CSV, full precision.
    Csv,
    /// JSON array, full precision.
    Json,
}

impl OutFormat {
    /// The views crate's format.
    pub fn view(self) -> Format {
        match self {
            OutFormat::Table => Format::Table,
            OutFormat::Csv => Format::Csv,
            OutFormat::Json => Format::Json,
        }
    }
}

/// Builds the filter from the shared flags.
pub fn filter(
    filters: &[String],
    since: &Option<String>,
    until: &Option<String>,
    include_failed: bool,
) -> anyhow::Result<Filter> {
    for (flag, v) in [("--since", since), ("--until", until)] {
        if let Some(v) = v {
            anyhow::ensure!(
                query::is_calendar_day(v),
                "{flag} {v}: expected a calendar date YYYY-MM-DD"
            );
        }
    }
    let mut f = Filter {
        since: since.clone(),
        until: until.clone(),
        include_failed,
        ..Default::default()
    };
    for s in filters {
        f.add(s)?;
    }
    Ok(f)
}

impl ReportFlags {
    /// Runs `inferbench report`: the points (or `--frontier`, or `--history-at`) on stdout in
    /// `--format`, what matched nothing on stderr. Returns [`ExitStatus::Ok`], or
    /// [`ExitStatus::Failed`] when a history's latest value is a regression.
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run(self)
    }
}

/// [`ReportFlags::run`].
fn run(mut args: ReportFlags) -> anyhow::Result<ExitStatus> {
    let slo = (args.capacity.as_deref())
        .map(inferbench_core::slo::Slo::parse)
        .transpose()?;
    if let Some(slo) = &slo {
        // The SLO's metric is the frontier's x the capacity is read along.
        args.x = Some(slo.metric.clone());
    }
    let mut store = open_with_runs(&args.db)?;
    let x_given = args.x.is_some();
    let mut f = filter(&args.filters, &args.since, &args.until, args.include_failed)?;
    f.include_invalid = args.include_invalid;
    if args.x.is_none() {
        // AgentX points plot against p90 E2E-normalized interactivity (North-Star x).
        let rows = store.points(&f, &CostOptions::default())?;
        args.x = Some(inferbench_views::analysis::default_x(&rows).to_string());
    }
    let x = args.x.clone().unwrap_or_default();
    // Columns beyond the stored hot metrics and derived ones need the full metrics JSON.
    let known: Vec<String> = inferbench_store::query::derived_names();
    f.all_metrics = args.columns.iter().any(|c| {
        c == report::ALL_COLUMNS
            || c.contains('.')
            || (c.contains('_')
                && !inferbench_store::schema::POINT_METRICS.contains(&c.as_str())
                && !known.contains(c)
                && !report::DEFAULT_COLUMNS.contains(&c.as_str()))
    }) || [&x, &args.y].iter().any(|m| {
        !inferbench_store::schema::POINT_METRICS.contains(&m.as_str()) && !known.contains(m)
    });
    let cost = CostOptions {
        usd_per_gpu_hour: args.gpu_hour_cost,
        kw_per_gpu: args.gpu_kw,
    };
    // A name neither a column nor a metric inferbench defines must be stored with a point.
    let mut names = [x.as_str(), args.y.as_str()].into_iter().chain(
        (args.columns.iter())
            .map(String::as_str)
            .filter(|c| *c != report::ALL_COLUMNS),
    );
    if names.any(|m| !report::known_without_points(m)) {
        let mut all = f.clone();
        all.all_metrics = true;
        let rows = store.points(&all, &cost)?;
        report::check_metric("--x", &x, &rows)?;
        report::check_metric("--y", &args.y, &rows)?;
        for c in &args.columns {
            report::check_column(c, &rows)?;
        }
    }
    if args.frontier && args.history_at.is_none() {
        let rows = store.frontier(&f, &cost, &x, &args.y)?;
        // An empty frontier of only invalid points says why.
        let hidden = if rows.is_empty() && !args.include_invalid {
            store.points(&f, &cost)?.iter().filter(|r| !r.valid).count()
        } else {
            0
        };
        let failed = failed_left_out(&mut store, &f, rows.is_empty())?;
        // GPU time per group over every selected point, not the frontier's alone.
        let gpu = inferbench_views::analysis::gpu_seconds_by_group(&store.points(&f, &cost)?);
        let status = print_rows(&rows, &args, hidden, failed, &gpu)?;
        if rows.is_empty() && hidden == 0 {
            for h in report::filter_hints(&mut store, &args.filters, "-f ")? {
                errln!("  {h}");
            }
        }
        return Ok(status);
    }
    let mut rows = store.points(&f, &cost)?;
    inferbench_views::analysis::mark_frontier(&mut rows, &x, &args.y, args.include_invalid);
    if let Some(slo) = &slo {
        capacity(&rows, &args, slo)?;
        if rows.is_empty() {
            history_matched_nothing(&mut store, &args, &f)?;
        }
        return Ok(ExitStatus::Ok);
    }
    if let Some(at) = args.history_at {
        let at =
            inferbench_views::analysis::resolve_at(at, &rows, &x, &args.y, args.include_invalid);
        let Some(at) = at else {
            // `auto` without a counted frontier: nothing to read y at (the API answers `at`
            // null and no values).
            if rows.is_empty() {
                history_matched_nothing(&mut store, &args, &f)?;
            } else {
                errln!(
                    "--history-at auto: no counted point's frontier has {x} to take a default x \
                     from (--include-invalid counts invalid points)"
                );
            }
            return Ok(ExitStatus::Ok);
        };
        let status = history(&rows, &args, x_given, &x, at)?;
        if rows.is_empty() {
            history_matched_nothing(&mut store, &args, &f)?;
        }
        return Ok(status);
    }
    let failed = failed_left_out(&mut store, &f, rows.is_empty())?;
    let gpu = inferbench_views::analysis::gpu_seconds_by_group(&rows);
    let status = print_rows(&rows, &args, 0, failed, &gpu)?;
    if rows.is_empty() {
        for h in report::filter_hints(&mut store, &args.filters, "-f ")? {
            errln!("  {h}");
        }
        // A database of evals alone (trial 22: `eval` results ingested, then "no points").
        if args.filters.is_empty() {
            if let Some(note) = evals_note(&mut store, &args.db)? {
                errln!("{note}");
            }
        }
    }
    Ok(status)
}

/// `report --capacity`: per group the most y and users per GPU at the SLO
/// ([`inferbench_views::analysis::capacity_at`], the computation `/api/v1/tco?slo=` returns), in
/// `--format`: a table with a note per group, or CSV / JSON rows with a `status`.
fn capacity(
    rows: &[inferbench_store::PointRow],
    args: &ReportFlags,
    slo: &inferbench_core::slo::Slo,
) -> anyhow::Result<()> {
    use inferbench_views::analysis::CapacityStatus;
    let caps = inferbench_views::analysis::capacity_at(rows, slo, &args.y, args.include_invalid)?;
    let y_unit = inferbench_core::registry::metric(&args.y)
        .map(|m| m.unit)
        .unwrap_or("");
    let x_unit = inferbench_core::registry::metric(&slo.metric)
        .map(|m| m.unit)
        .unwrap_or("");
    let note = |c: &inferbench_views::analysis::GroupCapacity| -> String {
        let range = c.x_range.map_or(String::new(), |(lo, hi)| {
            format!(
                "; measured {} {} to {} {x_unit}",
                slo.metric,
                report::round_for_table(lo),
                report::round_for_table(hi)
            )
        });
        match c.status {
            CapacityStatus::Interpolated => format!(
                "on the frontier at {} (mean of {})",
                slo,
                if c.batches == 1 {
                    "1 batch".to_string()
                } else {
                    format!("{} batches", c.batches)
                }
            ),
            CapacityStatus::AllMeet => {
                format!("every measured point meets {slo}: at least this (not extrapolated){range}")
            }
            CapacityStatus::NoneMeet => format!("no measured point meets {slo}{range}"),
            CapacityStatus::Measured => format!(
                "no frontier reaches the bound: the best measured point meeting {slo}{range}"
            ),
            CapacityStatus::NoPoints => format!("no counted point has {}", slo.metric),
        }
    };
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    match args.format {
        OutFormat::Json => {
            let arr: Vec<serde_json::Value> = caps
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "group": c.group,
                        "slo": slo.to_string(),
                        "status": c.status.as_str(),
                        args.y.clone(): c.y,
                        "users_per_gpu": c.users_per_gpu,
                        "batches": c.batches,
                        "x_range": c.x_range.map(|(lo, hi)| [lo, hi]),
                        "note": note(c),
                    })
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&arr)?);
        }
        OutFormat::Csv => {
            outln!("group,slo,status,{},users_per_gpu,batches", args.y);
            for c in &caps {
                outln!(
                    "\"{}\",{},{},{},{},{}",
                    c.group.replace('"', "\"\""),
                    slo,
                    c.status.as_str(),
                    opt(c.y),
                    opt(c.users_per_gpu),
                    c.batches
                );
            }
        }
        OutFormat::Table => {
            outln!(
                "Capacity at {} ({} in {y_unit})",
                args.capacity.as_deref().unwrap_or(""),
                args.y
            );
            let w = caps.iter().map(|c| c.group.len()).max().unwrap_or(5).max(5);
            outln!(
                "{:<w$}  {:>14}  {:>13}  note",
                "group",
                args.y,
                "users_per_gpu"
            );
            let cell = |v: Option<f64>, lower_bound: bool| match v {
                Some(v) if lower_bound => format!(">= {}", report::round_for_table(v)),
                Some(v) => report::round_for_table(v),
                None => "-".to_string(),
            };
            for c in &caps {
                let lb = c.status == CapacityStatus::AllMeet;
                outln!(
                    "{:<w$}  {:>14}  {:>13}  {}",
                    c.group,
                    cell(c.y, lb),
                    cell(c.users_per_gpu, lb),
                    note(c)
                );
            }
        }
    }
    Ok(())
}

/// How many failed points `f` leaves out (it does without `--include-failed`); 0 unless
/// `needed` (an empty selection, whose message names `--include-failed` only when it would add
/// something: trial 24, a database of evals alone was offered it).
fn failed_left_out(store: &mut Store, f: &Filter, needed: bool) -> anyhow::Result<usize> {
    if !needed || f.include_failed {
        return Ok(0);
    }
    let mut all = f.clone();
    all.include_failed = true;
    let rows = store.points(&all, &CostOptions::default())?;
    Ok(rows.iter().filter(|r| r.error.is_some()).count())
}

/// Whether the database holds no point at all, failed ones included (a database of evals alone).
fn no_point_stored(store: &mut Store) -> anyhow::Result<bool> {
    let all = Filter {
        include_failed: true,
        ..Default::default()
    };
    Ok(store.points(&all, &CostOptions::default())?.is_empty())
}

/// What `report --history-at` says on stderr when its selection `f` holds no point: the filters
/// matched nothing (each that matches nothing by itself named with the closest stored value, as
/// plain `report` does), the database holds eval results and no throughput point, or only failed
/// points (trial 24: "no stored point matches the filters" without a filter or a hint).
fn history_matched_nothing(
    store: &mut Store,
    args: &ReportFlags,
    f: &Filter,
) -> anyhow::Result<()> {
    let filtered = !args.filters.is_empty() || args.since.is_some() || args.until.is_some();
    if filtered {
        errln!("no stored point matches the filters");
        for h in report::filter_hints(store, &args.filters, "-f ")? {
            errln!("  {h}");
        }
    } else if let Some(note) = no_point_stored(store)?
        .then(|| evals_note(store, &args.db))
        .transpose()?
        .flatten()
    {
        errln!("no throughput point is stored: {note}");
    } else if failed_left_out(store, f, true)? > 0 {
        errln!(
            "no point to follow: the runs in {} hold only failed points (`report \
             --include-failed` lists them)",
            args.db
        );
    } else {
        errln!("no stored point to follow in {}", args.db);
    }
    Ok(())
}

/// `report --history-at`: y at `x = at` per group, one value per batch, in `--format`; exit 1
/// when a group's latest value is a regression. Invalid points count only with
/// `--include-invalid` (as on frontiers). Table output carries each group's notes; CSV and
/// JSON print them on stderr.
fn history(
    rows: &[inferbench_store::PointRow],
    args: &ReportFlags,
    x_given: bool,
    x: &str,
    at: f64,
) -> anyhow::Result<ExitStatus> {
    // The one analysis behind `/api/v1/history` too (issue 39).
    let h = inferbench_views::analysis::history_at(
        rows,
        x,
        &args.y,
        at,
        args.baseline_window,
        args.regression_threshold,
        args.include_invalid,
    );
    // Groups by name, as this table always listed them.
    let mut sorted: Vec<&inferbench_views::analysis::HistoryGroup> = h.groups.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut regressed = false;
    let mut groups = Vec::new();
    for g in sorted {
        let (group, series) = (&g.name, &g.points);
        let of_group: Vec<&inferbench_store::PointRow> =
            rows.iter().filter(|r| &r.group() == group).collect();
        let mut notes = Vec::new();
        if series.is_empty() {
            let agentic = of_group
                .iter()
                .all(|r| r.scenario == query::AGENTIC_SCENARIO);
            let invalid = g.invalid;
            if !args.include_invalid && invalid == g.total {
                notes.push(g.all_invalid_note());
            } else if agentic && !x_given && x != query::NORTH_STAR_X {
                notes.push(format!(
                    "(an agentic-coding group: its x is {} (`--x {} -f scenario={}`), not {x})",
                    query::NORTH_STAR_X,
                    query::NORTH_STAR_X,
                    query::AGENTIC_SCENARIO
                ));
            } else {
                // Trial 8: an agentic group printed its header and nothing under it; trial 19:
                // "its frontiers lie elsewhere" without saying where.
                let where_ = match g.x_range {
                    Some((lo, hi)) => format!(
                        "its frontiers span {x} {} to {}",
                        report::round_for_table(lo),
                        report::round_for_table(hi)
                    ),
                    None => format!("its points lack {x}"),
                };
                notes.push(format!(
                    "(no batch of this group reaches {x} = {at}: {where_})"
                ));
            }
        }
        if !series.is_empty() && g.batches > series.len() {
            // A batch whose frontier ends just short of x used to vanish without a word.
            let n = g.batches - series.len();
            notes.push(format!(
                "({n} more batch{} of this group left out: {} frontier does not reach {x} = {at})",
                if n == 1 { "" } else { "es" },
                if n == 1 { "its" } else { "their" }
            ));
        }
        if series.last().is_some_and(|p| p.regression) {
            regressed = true;
            let earlier = (series.len() - 1).min(args.baseline_window.max(1));
            if earlier < 3 {
                // Trial 8: two identical quickstarts on a busy machine read as a regression.
                notes.push(format!(
                    "(baseline from {earlier} earlier batch{}: the run-to-run spread is unknown, and \
                     y at a fixed x moves a lot with a small shift of x where the frontier is steep; \
                     a simulated server on a busy machine varies by several %. Confirm with more \
                     batches or repeats before trusting this flag)",
                    if earlier == 1 { "" } else { "es" }
                ));
            }
        }
        groups.push(report::HistoryGroup {
            group,
            points: series,
            notes,
        });
    }
    let fmt = args.format.view();
    out!(
        "{}",
        report::render_history(&groups, x, &args.y, at, args.baseline_window, fmt)
    );
    if !matches!(fmt, Format::Table) {
        for g in &groups {
            for n in &g.notes {
                errln!("{}: {n}", g.group);
            }
        }
    }
    Ok(ExitStatus::failed_if(regressed))
}

/// Prints `rows` in the chosen format with the footer; `hidden` = invalid points kept off an
/// empty frontier (named instead of "no points match"); `failed` = failed points the selection
/// leaves out (`--include-failed` is offered only when some are); `gpu` = each group's GPU
/// time over the whole selection (a footer under the table, keys of the JSON rows).
fn print_rows(
    rows: &[inferbench_store::PointRow],
    args: &ReportFlags,
    hidden: usize,
    failed: usize,
    gpu: &[(String, inferbench_views::analysis::GpuSeconds)],
) -> anyhow::Result<ExitStatus> {
    let fmt = args.format.view();
    let table = matches!(fmt, Format::Table);
    let defaults = report::default_columns(rows, args.x.as_deref());
    // A table names what every row shares once, above it: the default table instead of a column
    // repeating it on every line, a table of chosen --columns for the identity it leaves out
    // (trial 11: `--columns conc,tput_per_gpu` said nothing of which model or hardware).
    let (cols, common) = match (args.columns.is_empty(), table) {
        (true, true) => report::split_common(rows, &defaults),
        (true, false) => (defaults.clone(), Vec::new()),
        (false, _) => {
            let chosen = report::chosen_columns(rows, args.x.as_deref(), &args.columns);
            let (_, common) = report::split_common(rows, &defaults);
            let shown = |kv: &String| {
                let key = kv.split('=').next().unwrap_or_default();
                args.columns.iter().any(|c| c == key)
            };
            let common = common
                .into_iter()
                .filter(|kv| table && !shown(kv))
                .collect();
            (chosen, common)
        }
    };
    if !common.is_empty() {
        outln!("every row: {}\n", common.join("  "));
    }
    if matches!(fmt, Format::Json) {
        let mut arr = report::json_rows(rows, &cols);
        report::add_gpu_seconds(&mut arr, rows, gpu);
        outln!("{}", serde_json::to_string_pretty(&arr)?);
    } else {
        out!("{}", report::render(rows, &cols, fmt));
    }
    // Chosen --columns that leave out what tells the rows apart (trial 20: `--columns
    // conc,tput_per_gpu` listed conc 16 twice, agentic points beside fixed-length ones).
    if table && !args.columns.is_empty() && rows.len() > 1 {
        let unseen = report::identity_left_out(rows, &defaults, &cols);
        if !unseen.is_empty() {
            errln!(
                "note: the rows differ in {}, which --columns leaves out: rows that look alike \
                 may be different configurations or runs (add those columns, or narrow with -f)",
                unseen.join(", ")
            );
        }
    }
    if rows.is_empty() && hidden > 0 {
        errln!(
            "no frontier point: the {hidden} matching point(s) are invalid ({}); \
             --include-invalid lets them compete",
            report::INVALID_CAUSES.replace('\u{a0}', " ")
        );
    } else if rows.is_empty() && !args.filters.is_empty() {
        errln!(
            "no points in {} match the filters (`inferbench report` without -f lists every \
             point; `--include-failed` adds failed ones)",
            args.db
        );
    } else if rows.is_empty() {
        errln!(
            "no points in {} match ({}bench results reach the database with `bench --db DB \
             --set hw=… --set framework=…` or `ingest DIR --set hw=… --set framework=…`)",
            args.db,
            // Trial 13 follow-up: a database holding only a failed point pointed at ingest.
            if args.include_failed || failed == 0 {
                ""
            } else {
                "`--include-failed` adds failed points; "
            }
        );
    } else if matches!(fmt, Format::Table) {
        // The same footer for the default, --columns and --frontier views: units, `*`, and
        // the price and power behind $/M and tok/s/MW.
        let foot = report::footer(
            &cols,
            args.x.as_deref().unwrap_or_default(),
            &args.y,
            report::Marks::of(rows).off_axes(rows, args.x.as_deref().unwrap_or_default(), &args.y),
        );
        let cost = CostOptions {
            usd_per_gpu_hour: args.gpu_hour_cost,
            kw_per_gpu: args.gpu_kw,
        };
        let assume = report::assumptions(rows, &cols, &cost);
        if foot.is_empty() && !assume.is_empty() {
            outln!();
        }
        out!("{foot}{assume}{}", report::gpu_seconds_footer(gpu));
    }
    Ok(ExitStatus::Ok)
}
// ----- plot

/// Exit codes of `plot` (its `--help`).
pub const PLOT_EXIT_CODES_HELP: &str = "Exit codes: 0 chart written (points without a value, or \
     clipped, are named on stderr); 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr), or an output file could not be written (a full disk or `ulimit -f`; the previous file is kept); 2 bad flags, no database, a database with no runs yet (run \
     `inferbench quickstart` or `inferbench ingest`), or no point to draw.";

/// Flags of `inferbench plot`.
#[derive(Debug, clap::Args)]
#[command(after_help = PLOT_EXIT_CODES_HELP)]
pub struct PlotFlags {
    /// Output file; `.svg` or `.png`.
    #[arg(long, short, default_value = "frontier.svg")]
    pub out: PathBuf,
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", hide_env_values = true, default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Filter `KEY=VALUE[|VALUE…]` (as `inferbench report`); repeatable.
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// Only points dated on or after this day (YYYY-MM-DD).
    #[arg(long)]
    pub since: Option<String>,
    /// Only points dated on or before this day (YYYY-MM-DD).
    #[arg(long)]
    pub until: Option<String>,
    /// x metric (default: median_intvty, or p99_ttft when y is an input-token metric, as
    /// InferenceX does).
    #[arg(long)]
    pub x: Option<String>,
    /// y metric (any stored or derived metric, e.g. usd_per_m_rental, tok_s_per_mw).
    #[arg(long, default_value = "tput_per_gpu")]
    pub y: String,
    /// Chart title [default: "<y label> vs. <x label>"].
    #[arg(long)]
    pub title: Option<String>,
    /// Width in pixels.
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
    /// Height in pixels.
    #[arg(long, default_value_t = 800)]
    pub height: u32,
    /// Draw only frontier points.
    #[arg(long)]
    pub frontier_only: bool,
    /// Let invalid points (runs cut short, on a starved server or client, served by the
    /// prefix cache, AgentX replays shorter than 900 s) form the frontier line; by default
    /// they are drawn as points only.
    #[arg(long)]
    pub include_invalid: bool,
    /// Keep points InferenceX clips (above $5/M tokens on built-in cost metrics, TTFT above 60 s).
    #[arg(long)]
    pub no_clip: bool,
    /// Custom $/GPU-hour for usd_per_m_custom*.
    #[arg(long, value_name = "USD")]
    pub gpu_hour_cost: Option<f64>,
    /// Custom all-in kW per GPU.
    #[arg(long, value_name = "KW")]
    pub gpu_kw: Option<f64>,
}

impl PlotFlags {
    /// Runs `inferbench plot`; returns its exit status (see its `--help`).
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run_plot(self)
    }
}

/// [`PlotFlags::run`].
fn run_plot(args: PlotFlags) -> anyhow::Result<ExitStatus> {
    // The chart never over the database it reads (issue 39's leftovers, 1).
    {
        use inferbench_loadgen::samefile::{check_distinct, NamedPath};
        let mut paths = vec![NamedPath::output("--out", &args.out)];
        paths.extend(super::db_read(&args.db));
        check_distinct(&paths)?;
        // Writable (a dangling link into a missing folder included) before the chart is drawn.
        inferbench_loadgen::output::check_file_writable("--out", &args.out)?;
    }
    let mut store = open_with_runs(&args.db)?;
    let f = filter(&args.filters, &args.since, &args.until, false)?;
    let rows = store.points(
        &f,
        &CostOptions {
            usd_per_gpu_hour: args.gpu_hour_cost,
            kw_per_gpu: args.gpu_kw,
        },
    )?;
    // The database has runs (checked above): an empty selection is the filters' doing (trial
    // 10: "store results with ingest" was printed for a filter that matched nothing), each
    // one that matches nothing named with the closest stored value, as `report` does (trial 22).
    if rows.is_empty() {
        let mut sel: Vec<String> = args.filters.iter().map(|f| format!("-f {f}")).collect();
        sel.extend(args.since.iter().map(|d| format!("--since {d}")));
        sel.extend(args.until.iter().map(|d| format!("--until {d}")));
        if sel.is_empty() {
            let failed = store.points(
                &inferbench_store::Filter {
                    include_failed: true,
                    ..Default::default()
                },
                &CostOptions::default(),
            )?;
            if !failed.is_empty() {
                anyhow::bail!(
                    "nothing to plot: the runs in {} hold only failed points (`report \
                     --include-failed` lists them)",
                    args.db
                );
            }
            // Trial 23: a database of evals alone was said to hold failed points.
            let note = evals_note(&mut store, &args.db)?.unwrap_or_default();
            anyhow::bail!("nothing to plot: {note}");
        }
        let hints: String = report::filter_hints(&mut store, &args.filters, "-f ")?
            .iter()
            .map(|h| format!("\n  {h}"))
            .collect();
        anyhow::bail!(
            "nothing to plot: no point in {} matches {} (`inferbench report` without them \
             lists every point){hints}",
            args.db,
            sel.join(" ")
        );
    }
    let x = args.x.unwrap_or_else(|| {
        let x = inferbench_views::analysis::default_x(&rows);
        if x == "median_intvty" && args.y.contains("input") {
            "p99_ttft".to_string()
        } else {
            x.to_string()
        }
    });
    report::check_metric("--x", &x, &rows)?;
    report::check_metric("--y", &args.y, &rows)?;
    let spec = inferbench_views::plot::PlotSpec {
        x,
        y: args.y,
        title: args.title.unwrap_or_default(),
        width: args.width,
        height: args.height,
        frontier_only: args.frontier_only,
        clip: !args.no_clip,
        include_invalid: args.include_invalid,
        source: String::new(),
    };
    // Drawn in memory, then written through a temporary file renamed onto --out (issue 39, a
    // fresh tester's finding 3: a failed write left a cut-short chart over the previous one).
    let ext = (args.out.extension().and_then(|e| e.to_str()))
        .unwrap_or("")
        .to_lowercase();
    let format = match ext.as_str() {
        "svg" => inferbench_views::plot::ChartFormat::Svg,
        "png" => inferbench_views::plot::ChartFormat::Png,
        _ => anyhow::bail!(
            "{}: unsupported format: use a .svg or .png file name",
            args.out.display()
        ),
    };
    let (bytes, drawn) = inferbench_views::plot::render(&rows, &spec, format)?;
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            anyhow::anyhow!(
                "--out {}: cannot create {}: {e}",
                args.out.display(),
                dir.display()
            )
        })?;
    }
    inferbench_loadgen::output::write_file(&args.out, &bytes)
        .map_err(|e| super::write_failed("--out", e))?;
    outln!("wrote {}", args.out.display());
    if let Some(n) = drawn.note() {
        errln!("inferbench plot: {n}");
    }
    Ok(ExitStatus::Ok)
}

// ----- compare

/// Exit codes of `compare` (its `--help`).
pub const COMPARE_EXIT_CODES_HELP: &str =
    "Exit codes: 0 compared; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr), or nothing to compare (a side matches \
     no valid point, or the two frontiers share no x range; it says which); 2 bad flags, no \
     database or one with no runs yet, or a side that pools several workloads (ISL/OSL or \
     scenario).";

/// Flags of `inferbench compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = COMPARE_EXIT_CODES_HELP)]
pub struct CompareFlags {
    /// Side A: comma-separated `KEY=VALUE[|VALUE…]` filters, e.g. `hw=h200,framework=sglang`.
    pub a: String,
    /// Side B, same syntax.
    pub b: String,
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", hide_env_values = true, default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Filters applied to both sides (e.g. `model=dsr1`, `isl=1024`); repeatable.
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// x metric to match on. Default: median_intvty (tok/s/user); p90_e2e_norm_intvty (AgentX's
    /// North-Star x) when every point of both sides is agentic-coding, as `report`.
    #[arg(long)]
    pub x: Option<String>,
    /// y metric to compare.
    #[arg(long, default_value = "tput_per_gpu")]
    pub y: String,
    /// Target x values (comma-separated); default: low, middle and high end of the overlap.
    /// Each side's y there is interpolated along its frontier with InferenceX's monotone curve
    /// (Steffen, d3's curveMonotoneX), not read off straight lines between the points: a
    /// chart, which draws straight segments, can differ by a few percent between two points.
    #[arg(long, value_delimiter = ',')]
    pub at: Vec<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Let invalid points (runs cut short, on a starved server or client, served by the
    /// prefix cache, AgentX replays shorter than 900 s) count; by default they are left out,
    /// as from every frontier.
    #[arg(long)]
    pub include_invalid: bool,
}

/// One side's filter: the common `--filter`s, then the side's comma-separated ones.
fn side(spec: &str, common: &[String]) -> anyhow::Result<Filter> {
    let mut f = Filter::default();
    for s in common {
        f.add(s)?;
    }
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        f.add(part)?;
    }
    Ok(f)
}

impl CompareFlags {
    /// Runs `inferbench compare`; returns its exit status (see its `--help`).
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run_compare(self)
    }
}

/// [`CompareFlags::run`].
fn run_compare(mut args: CompareFlags) -> anyhow::Result<ExitStatus> {
    // A database without runs is refused as `report` refuses it (exit 2; trial 18: exit 1
    // with "no stored point matches").
    let mut store = open_with_runs(&args.db)?;
    let cost = CostOptions::default();
    // Each side's points as stored; the one analysis (issue 39: the API's is the same)
    // leaves invalid ones out unless `--include-invalid` and finds the targets.
    let load = |spec: &str, store: &mut Store| -> anyhow::Result<Vec<PointRow>> {
        Ok(store.points(&side(spec, &args.filters)?, &cost)?)
    };
    let (ra, rb) = (load(&args.a, &mut store)?, load(&args.b, &mut store)?);
    if args.x.is_none() {
        let both: Vec<PointRow> = ra.iter().chain(&rb).cloned().collect();
        args.x = Some(inferbench_views::analysis::default_x(&both).to_string());
    }
    let x = args.x.clone().unwrap_or_default();
    let c = inferbench_views::analysis::compare_sides(
        (ra, rb),
        (&args.a, &args.b),
        &x,
        &args.y,
        &args.at,
        args.include_invalid,
        compare::FilterSyntax::Cli,
    );
    let (a, b, a_invalid, b_invalid) = (&c.a, &c.b, c.a_invalid, c.b_invalid);
    let both: Vec<PointRow> = a.iter().chain(b).cloned().collect();
    report::check_metric("--x", &x, &both)?;
    report::check_metric("--y", &args.y, &both)?;
    // A side that pools workloads or servers: the one check the API makes too (fresh tester
    // of issue 39 §5, item 6: the two answered the same pooled compare differently). A side
    // that matches nothing is said first (trial 18: a typo on side A was hidden behind side
    // B's pooled workloads): the check waits for both sides.
    if let Some(why) = &c.refused {
        anyhow::bail!("{why}");
    }
    let (wa, wb) = (compare::workloads(a), compare::workloads(b));
    if c.targets.is_empty() {
        // Say which side is empty before speaking of ranges (trial 8: two empty sides were
        // reported as frontiers that share no range).
        // A side whose matches are all invalid says so (trial 12: "no stored point matches"
        // for a batch that was there, kept out as invalid).
        let empty: Vec<String> = [
            ("A", &args.a, a.len(), a_invalid),
            ("B", &args.b, b.len(), b_invalid),
        ]
        .iter()
        .filter(|(_, _, n, _)| *n == 0)
        .map(|(name, f, _, invalid)| match invalid {
            // The shared -f filters narrow both sides (trial 20: `-f batch=nomatch` was the
            // cause and went unnamed).
            0 if !args.filters.is_empty() => {
                format!("{name} ({f} with -f {})", args.filters.join(" -f "))
            }
            0 => format!("{name} ({f})"),
            n => format!(
                "{name} ({f}: its {n} matching point(s) are invalid; --include-invalid counts them)"
            ),
        })
        .collect();
        if empty.is_empty() {
            errln!(
                "the frontiers of A ({}) and B ({}) share no {} range",
                inferbench_core::count(a.len(), "point"),
                inferbench_core::count(b.len(), "point"),
                x
            );
        } else if (a.is_empty() && a_invalid > 0) || (b.is_empty() && b_invalid > 0) {
            errln!("no valid point to compare for {}", empty.join(" nor "));
        } else {
            errln!(
                "no stored point matches {} (`inferbench report -f KEY=VALUE` lists what does)",
                empty.join(" nor ")
            );
            // Which of an empty side's filters matches nothing, with the closest stored value
            // (trial 19: `report -f hw=h10` said "did you mean h100?", `compare hw=h10 …` not).
            let specs: Vec<String> = [(&args.a, a.len()), (&args.b, b.len())]
                .iter()
                .filter(|(_, n)| *n == 0)
                .flat_map(|(spec, _)| spec.split(',').map(|s| s.trim().to_string()))
                .filter(|s| !s.is_empty())
                .collect();
            let shared = report::filter_hints(&mut store, &args.filters, "-f ")?;
            for h in shared
                .iter()
                .chain(&report::filter_hints(&mut store, &specs, "")?)
            {
                errln!("  {h}");
            }
            // A database of evals alone says what it holds, as `report` and `plot` do (trial
            // 24: "(no point is stored)" and nothing of the eval results).
            if no_point_stored(&mut store)? {
                if let Some(note) = evals_note(&mut store, &args.db)? {
                    errln!("{note}");
                }
            }
        }
        return Ok(ExitStatus::Failed);
    }
    let rows = &c.rows;
    let notes = out_of_reach(rows, (a, b), &x, &args.y);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(rows)?);
        for n in &notes {
            errln!("{n}");
        }
        return Ok(ExitStatus::Ok);
    }
    out!(
        "{}",
        inferbench_views::report::compare_table(rows, (&args.a, &args.b), (&wa, &wb), &x, &args.y)
    );
    for n in &notes {
        outln!("  {n}");
    }
    Ok(ExitStatus::Ok)
}

/// For each target of `rows` that a side's frontiers do not reach (its `n` is 0: an `--at`
/// outside its range), a note naming the x range they span, as `report --history-at` says it
/// (trial 24: `--at 500` printed `500.0  -  0  -  0` and nothing about why).
fn out_of_reach(
    rows: &[compare::CompareRow],
    (a, b): (&[PointRow], &[PointRow]),
    x: &str,
    y: &str,
) -> Vec<String> {
    let mut notes = Vec::new();
    for r in rows {
        let at = r.at;
        let parts: Vec<String> = [("A", r.n_a, a), ("B", r.n_b, b)]
            .into_iter()
            .filter(|(_, n, _)| *n == 0)
            .map(|(name, _, side)| match compare::x_span(side, x, y) {
                Some((lo, hi)) => {
                    let span = format!(
                        "{x} {} to {}",
                        report::round_for_table(lo),
                        report::round_for_table(hi)
                    );
                    if at < lo || at > hi {
                        format!("outside {name}'s frontiers ({span})")
                    } else {
                        // Batches whose frontiers leave a gap around `at`.
                        format!("between {name}'s frontiers ({span}; no batch's reaches it)")
                    }
                }
                None => format!("{name}'s points lack {x}"),
            })
            .collect();
        if !parts.is_empty() {
            notes.push(format!("(no value at {x} = {at}: {})", parts.join(" and ")));
        }
    }
    notes
}

/// What a database without throughput points holds, when it holds eval results: "DB holds N
/// eval results (accuracy, not throughput points): `inferbench serve --db DB` lists them on its
/// Evals page"; `None` without evals. Said by `report` and `plot` alike (trial 22, 23).
fn evals_note(store: &mut Store, db: &str) -> anyhow::Result<Option<String>> {
    let n = store.evals()?.len();
    Ok((n > 0).then(|| {
        format!(
            "{db} holds {} (accuracy, not throughput points): `inferbench serve --db {db}` lists \
             them on its Evals page",
            inferbench_core::count(n, "eval result")
        )
    }))
}
