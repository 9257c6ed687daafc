//! Text output of `inferbench report`: an aligned table, CSV or JSON over [`PointRow`]s.
//! Table and CSV/JSON output are identical for SQLite and PostgreSQL (rows are decoded into the
//! same values and sorted in Rust).

use inferbench_core::point::DP_ATTENTION;
use inferbench_store::query::PointRow;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned, human-readable; numbers rounded for reading.
    Table,
    /// RFC 4180 CSV, full precision (shortest round-trip decimal).
    Csv,
    /// JSON array of objects, full precision.
    Json,
}

/// Columns shown by default: identity, load, then the headline metrics.
pub const DEFAULT_COLUMNS: &[&str] = &[
    "model",
    "isl",
    "osl",
    "hardware",
    "framework",
    "precision",
    "spec",
    "parallelism",
    "conc",
    "date",
    "tput_per_gpu",
    "output_tput_per_gpu",
    "median_intvty",
    "p99_ttft",
    "median_e2el",
    "usd_per_m_rental",
    "tok_s_per_mw",
    "frontier",
];

/// The columns `report` shows when none are asked for: [`DEFAULT_COLUMNS`], plus the
/// frontier's `x` (when given and not among them) and, with agentic-coding rows, their
/// North-Star x, both before `median_intvty` (first of the interactivity columns); a `scenario` column after `osl` when agentic and
/// fixed-seq rows are mixed (agentic rows have no ISL/OSL), instead of `isl`/`osl` when every
/// row is agentic; a `batch` column after `date` when
/// the rows come from more than one run, and a `run` (its id) after it when two rows share
/// setup, concurrency and batch; a `source` column when InferenceX's published points
/// (an imported dump) are listed beside local ones. The dashboard's CSV export uses the same columns.
pub fn default_columns(rows: &[PointRow], x: Option<&str>) -> Vec<String> {
    use inferbench_store::query::{AGENTIC_SCENARIO, NORTH_STAR_X};
    let mut c: Vec<String> = DEFAULT_COLUMNS.iter().map(|s| s.to_string()).collect();
    let agentic = rows.iter().any(|r| r.scenario == AGENTIC_SCENARIO);
    // The frontier's x goes first among the interactivity columns, where the eye looks for it
    // (trial 8: the agentic x came last, after the cost and power columns).
    for x in [x, agentic.then_some(NORTH_STAR_X)].into_iter().flatten() {
        if !c.iter().any(|k| k == x) {
            let at = c
                .iter()
                .position(|k| k == "median_intvty")
                .or_else(|| c.iter().position(|k| k == "frontier"))
                .unwrap_or(c.len());
            c.insert(at, x.to_string());
        }
    }
    if agentic && rows.iter().any(|r| r.scenario != AGENTIC_SCENARIO) {
        let at = c.iter().position(|k| k == "osl").map_or(0, |i| i + 1);
        c.insert(at, "scenario".into());
    } else if agentic {
        // Only agentic replays: no ISL/OSL to show, the scenario names them.
        let at = c.iter().position(|k| k == "isl").unwrap_or(1);
        c.retain(|k| k != "isl" && k != "osl");
        c.insert(at, "scenario".into());
    }
    // InferenceX's published points beside local ones: say which is which.
    let public = |r: &PointRow| r.source_kind == inferbench_store::query::PUBLIC_SOURCE;
    if rows.iter().any(public) && !rows.iter().all(public) {
        let at = c
            .iter()
            .position(|k| k == "date")
            .map_or(c.len(), |i| i + 1);
        c.insert(at, "source".into());
    }
    // The run a point came from: a column when rows differ in it, else named once above a
    // table (`every row: … batch=…`), and always a field of CSV and JSON (trial 14: a table of
    // one batch, and its JSON, said nowhere which run it was).
    let at = c
        .iter()
        .position(|k| k == "date")
        .map_or(c.len(), |i| i + 1);
    c.insert(at, "batch".into());
    // Two runs of one setup, concurrency and batch (two `bench` runs into one --result-dir, a
    // repeated point): the run id tells their rows apart, as the dashboard's `/run?id=` names
    // them (trial 23: two identical-looking rows).
    if has_repeats(rows) {
        c.insert(at + 1, "run".into());
    }
    // Failed points (`--include-failed`) say why (trial 14: the footer pointed at an `error`
    // column the default table did not have).
    if rows.iter().any(|r| r.error.is_some()) {
        c.push("error".into());
    }
    c
}

/// Whether two of `rows` share their setup, sequence, concurrency and batch (different runs).
fn has_repeats(rows: &[PointRow]) -> bool {
    let mut seen = std::collections::HashSet::new();
    rows.iter().any(|r| {
        !seen.insert((
            r.group(),
            r.parallelism(),
            r.scenario.as_str(),
            r.isl,
            r.osl,
            r.conc,
            r.batch.as_str(),
        ))
    })
}

/// Identity columns a table may take out when every row has the same value in them.
pub(crate) const HOISTABLE: &[&str] = &[
    "model",
    "isl",
    "osl",
    "scenario",
    "hardware",
    "framework",
    "precision",
    "spec",
    "parallelism",
    "date",
    "batch",
];

/// Splits the identity columns in which all `rows` agree off a table's `columns`, so that the
/// default table stays narrow: returns the columns left and the `key=value` pairs taken out (in
/// column order; `key` is the column's name, which `report -f` also takes). Metric columns,
/// `conc` and `frontier` always stay; nothing is taken out of an empty `rows`.
pub fn split_common(rows: &[PointRow], columns: &[String]) -> (Vec<String>, Vec<String>) {
    let mut kept = Vec::new();
    let mut common = Vec::new();
    for c in columns {
        let first = rows.first().map(|r| cell(r, c, false));
        let same = first
            .as_ref()
            .is_some_and(|f| f.is_some() && rows.iter().all(|r| &cell(r, c, false) == f));
        match first {
            Some(Some(v)) if same && HOISTABLE.contains(&c.as_str()) => {
                common.push(format!("{c}={v}"))
            }
            _ => kept.push(c.clone()),
        }
    }
    (kept, common)
}

/// The identity columns of `defaults` (those [`split_common`] may take out, `date` aside) in
/// which `rows` differ and that `columns` does not name: what tells the rows apart that a table
/// of those chosen columns leaves out (`report --columns`' note), in `defaults`' order.
pub fn identity_left_out(
    rows: &[PointRow],
    defaults: &[String],
    columns: &[String],
) -> Vec<String> {
    let (varying, _) = split_common(rows, defaults);
    (varying.into_iter())
        .filter(|c| HOISTABLE.contains(&c.as_str()) && c != "date")
        .filter(|c| !columns.iter().any(|k| k == c))
        .collect()
}

pub use inferbench_core::text::batch_label;

/// A human label with unit for a metric or column name (chart axes, notes): the metric
/// registry's (`inferbench_core::registry`), else the name itself.
pub fn label(name: &str) -> String {
    match inferbench_core::registry::metric(name) {
        Some(m) => m.label_with_unit(),
        None => name.to_string(),
    }
}

/// The unit shown under a column's name in table output: the registry's unit, else empty.
fn unit(col: &str) -> &'static str {
    inferbench_core::registry::metric(col)
        .map(|m| m.unit)
        .unwrap_or("")
}

/// A column's value as text: full precision when `exact`, else rounded for tables.
fn cell(r: &PointRow, col: &str, exact: bool) -> Option<String> {
    let num = |v: f64| -> String {
        if exact {
            format!("{v}")
        } else {
            round_for_table(v)
        }
    };
    Some(match col {
        "model" => r.model.clone(),
        "hardware" | "hw" => r.hardware.clone(),
        "framework" => r.framework.clone(),
        "precision" => r.precision.clone(),
        "spec" | "spec_decoding" => r.spec_decoding.clone(),
        "parallelism" => r.parallelism(),
        "group" => r.group(),
        "tp" => r.tp.to_string(),
        "pp" => r.pp.to_string(),
        "ep" => r.ep.to_string(),
        DP_ATTENTION => r.dp_attention.to_string(),
        "disagg" => r.disagg.to_string(),
        "gpus" => r.gpus.to_string(),
        // Agentic replays have no fixed sequence lengths: not applicable, never `0`.
        "isl" | "osl" if r.scenario == inferbench_store::query::AGENTIC_SCENARIO => return None,
        "isl" => r.isl.to_string(),
        "osl" => r.osl.to_string(),
        "conc" => r.conc.to_string(),
        "date" => r.date.clone(),
        // Tables show a sweep directory's last component (`results/agentic` → `agentic`), at
        // most BATCH_WIDTH characters (a single bench point's batch is its long file name).
        "batch" if !exact => batch_label(&r.batch),
        "batch" => r.batch.clone(),
        "run" => r.run_id.to_string(),
        "image" => r.image.clone(),
        "scenario" => r.scenario.clone(),
        "kv_offload" => r.kv_offload.clone(),
        "source_kind" | "source" => r.source_kind.clone(),
        "frontier" => {
            // A failed point (`--include-failed`; nothing, or too little, was measured) says
            // so rather than `invalid` (trial 13).
            if r.error.is_some() {
                "failed".into()
            } else if r.frontier && !r.valid {
                "* invalid".into()
            } else if r.frontier {
                "*".into()
            } else if !r.valid {
                "invalid".into()
            } else {
                String::new()
            }
        }
        "valid" => r.shown_valid().to_string(),
        // The one status of the API's points too (`ok`, `invalid`, `failed`: issue 39's
        // leftovers, 4), from the one function.
        "status" => r.status().to_string(),
        // A failed point's cause; an invalid one's reason (trial 16: empty for invalid rows).
        "error" => match (&r.error, &r.invalid_reason) {
            (Some(e), _) => e.clone(),
            (None, Some(why)) if !r.valid => format!("invalid: {why}"),
            (None, None) if !r.valid => "invalid (stored before reasons were kept)".into(),
            _ => String::new(),
        },
        "invalid_reason" => r.shown_invalid_reason().unwrap_or_default().to_string(),
        // Issue 43: whether the point ran under `sweep --adaptive`'s early stop, and the
        // profile prompts it sent (`-` for a fixed-protocol point: all 10 × conc).
        "adaptive" => r.adaptive.to_string(),
        "prompts_used" => return r.prompts_used.map(|n| n.to_string()),
        m => return r.get(m).map(num),
    })
}

/// Why a point is stored as invalid (`valid = false`), as the tables' footers and messages
/// say it: every cause the runner, `bench` and the store set (see docs/results.md).
pub const INVALID_CAUSES: &str = "the run was cut short, its server fell behind its schedule \
     (starved of CPU), the client could not keep up, the server's prefix cache served a random \
     prompt set, or an AgentX replay ran for less than 900\u{a0}s";

/// The identity and status columns `--columns` takes besides metrics (what [`cell`] reads
/// from a point other than its metrics).
pub const ROW_COLUMNS: &[&str] = &[
    "model",
    "hardware",
    "hw",
    "framework",
    "precision",
    "spec",
    "spec_decoding",
    "parallelism",
    "group",
    "tp",
    "pp",
    "ep",
    DP_ATTENTION,
    "disagg",
    "gpus",
    "isl",
    "osl",
    "conc",
    "date",
    "batch",
    "run",
    "image",
    "scenario",
    "kv_offload",
    "source_kind",
    "source",
    "frontier",
    "valid",
    "status",
    "error",
    "invalid_reason",
    "adaptive",
    "prompts_used",
];

/// Checks `name`, given to `flag`, as a metric: one inferbench defines
/// ([`inferbench_core::registry::metric`]: stored, derived, cost and power metrics) or one
/// stored with a point of `rows` (an imported file's own metric; `rows` loaded with all
/// metrics). Errors (trial 13: a misspelled `--x` drew an empty column and blamed the
/// filters): the flag, the name, and the usual frontier axes.
pub fn check_metric(flag: &str, name: &str, rows: &[PointRow]) -> anyhow::Result<()> {
    check_name(flag, name, rows, &[])
}

/// Checks a `--columns` entry: one of [`ROW_COLUMNS`] or a metric ([`check_metric`]).
pub fn check_column(name: &str, rows: &[PointRow]) -> anyhow::Result<()> {
    check_column_as("--columns", name, rows)
}

/// [`check_column`] with the option named as the caller writes it (`--columns`, the API's
/// `` `columns=` ``); [`ALL_COLUMNS`] is known.
pub fn check_column_as(flag: &str, name: &str, rows: &[PointRow]) -> anyhow::Result<()> {
    if name == ALL_COLUMNS {
        return Ok(());
    }
    check_name(flag, name, rows, ROW_COLUMNS)
}

/// The column list that stands for [`all_columns`]: `report --columns all`,
/// `/api/v1/points.csv?columns=all`.
pub const ALL_COLUMNS: &str = "all";

/// Every column of `rows`: [`default_columns`] (x = `x`), then every other metric any row
/// holds (stored and derived: latency statistics, server figures, costs, tokens per $1, power),
/// by name.
pub fn all_columns(rows: &[PointRow], x: Option<&str>) -> Vec<String> {
    let mut cols = default_columns(rows, x);
    let mut rest: Vec<&String> = (rows.iter())
        .flat_map(|r| r.metrics.keys())
        .filter(|k| !cols.contains(k))
        .collect();
    rest.sort();
    rest.dedup();
    cols.extend(rest.into_iter().cloned());
    cols
}

/// The columns `report` (`--columns`) and `/api/v1/points.csv` (`columns=`) print for the
/// columns asked for: [`default_columns`] when none is, [`all_columns`] for `all`, else those
/// named, in their order (each checked by the caller, [`check_column_as`]). The one rule of
/// both (fresh tester of issue 39 §5, item 4: the CSV export added ~240 metric columns
/// `report --format csv` did not have).
pub fn chosen_columns(rows: &[PointRow], x: Option<&str>, asked: &[String]) -> Vec<String> {
    match asked {
        [] => default_columns(rows, x),
        [one] if one == ALL_COLUMNS => all_columns(rows, x),
        _ => asked.to_vec(),
    }
}

/// [`check_metric`] with `also` (identity columns) known too; the error suggests the closest
/// known name (trial 15: `--columns` typos got the whole list and no "did you mean").
fn check_name(flag: &str, name: &str, rows: &[PointRow], also: &[&str]) -> anyhow::Result<()> {
    if also.contains(&name)
        || inferbench_core::registry::metric(name).is_some()
        || rows.iter().any(|r| r.get(name).is_some())
    {
        return Ok(());
    }
    let stored = rows
        .iter()
        .flat_map(|r| r.metrics.keys().map(String::as_str));
    let known = inferbench_core::registry::names();
    let candidates = (known.iter().map(String::as_str))
        .chain(also.iter().copied())
        .chain(stored);
    let hint = inferbench_core::text::closest(name, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    let identity = if also.is_empty() {
        String::new()
    } else {
        format!("; identity columns: {}", also.join(", "))
    };
    anyhow::bail!(
        "{flag} {name}: unknown metric{hint} (inferbench defines none of that name and no \
         selected point stores one; x axes: {}; y axes: {}; `report --format json` lists every \
         metric a point holds){identity}",
        inferbench_core::registry::X_METRICS.join(", "),
        inferbench_core::registry::Y_METRICS.join(", ")
    )
}

/// Whether `name` is known without looking at any point: a [`ROW_COLUMNS`] entry or a metric
/// the registry defines.
pub fn known_without_points(name: &str) -> bool {
    ROW_COLUMNS.contains(&name) || inferbench_core::registry::metric(name).is_some()
}

fn is_text_col(col: &str) -> bool {
    matches!(
        col,
        "model"
            | "hardware"
            | "hw"
            | "framework"
            | "precision"
            | "spec"
            | "spec_decoding"
            | "parallelism"
            | "group"
            | "date"
            | "batch"
            | "image"
            | "scenario"
            | "kv_offload"
            | "source_kind"
            | "source"
            | "frontier"
            | "valid"
            | "status"
            | "error"
            | "invalid_reason"
            | DP_ATTENTION
            | "disagg"
    )
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Renders rows with the given columns. Missing values print as `-` (table), empty (CSV) or
/// `null` (JSON).
pub fn render(rows: &[PointRow], columns: &[String], format: Format) -> String {
    match format {
        Format::Table => {
            let mut grid: Vec<Vec<String>> = vec![columns.to_vec()];
            // A second header line gives each metric column's unit (`s`, `tok/s/GPU`, …).
            let units: Vec<String> = columns
                .iter()
                .map(|c| match unit(c) {
                    "" => String::new(),
                    u => format!("({u})"),
                })
                .collect();
            if units.iter().any(|u| !u.is_empty()) {
                grid.push(units);
            }
            // With the `invalid_reason` column beside it, `error` does not repeat the reason
            // (trial 18: rows hundreds of characters wide).
            let both = columns.iter().any(|c| c == "invalid_reason");
            for r in rows {
                grid.push(
                    columns
                        .iter()
                        .map(|c| match c.as_str() {
                            "error" if both && r.error.is_none() && r.invalid_reason.is_some() => {
                                "invalid (see invalid_reason)".into()
                            }
                            _ => cell(r, c, false).unwrap_or_else(|| "-".into()),
                        })
                        .collect(),
                );
            }
            let widths: Vec<usize> = (0..columns.len())
                .map(|i| {
                    grid.iter()
                        .map(|row| row[i].chars().count())
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let mut out = String::new();
            for row in &grid {
                let line: Vec<String> = row
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        if is_text_col(&columns[i]) {
                            format!("{v:<w$}", w = widths[i])
                        } else {
                            format!("{v:>w$}", w = widths[i])
                        }
                    })
                    .collect();
                out.push_str(line.join("  ").trim_end());
                out.push('\n');
            }
            out
        }
        Format::Csv => {
            let mut out = columns
                .iter()
                .map(|c| csv_field(c))
                .collect::<Vec<_>>()
                .join(",");
            out.push('\n');
            for r in rows {
                let line: Vec<String> = columns
                    .iter()
                    .map(|c| csv_field(&cell(r, c, true).unwrap_or_default()))
                    .collect();
                out.push_str(&line.join(","));
                out.push('\n');
            }
            out
        }
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json_rows(rows, columns))
                .unwrap_or_else(|_| "[]".into());
            s.push('\n');
            s
        }
    }
}

/// The rows of `render`'s `--format json`: one object per row with each column (numbers as
/// numbers, `frontier`/`valid` as booleans, `status` as `PointRow::status` says it, `error`
/// and `invalid_reason` as stored), plus `valid`, `status` (`"ok"`, `"invalid"` or
/// `"failed"`, the API's `status`), `error` and `invalid_reason` whatever the columns.
pub fn json_rows(rows: &[PointRow], columns: &[String]) -> Vec<serde_json::Value> {
    rows.iter()
        .map(|r| {
            let mut o = serde_json::Map::new();
            for c in columns {
                let v = match cell(r, c, true) {
                    None => serde_json::Value::Null,
                    // `*` (or `* invalid`) only: `invalid` and `failed` are not on one.
                    Some(s) if c == "frontier" => serde_json::Value::Bool(s.starts_with('*')),
                    Some(s) if c == "valid" || c == "adaptive" => {
                        serde_json::Value::Bool(s == "true")
                    }
                    // JSON keeps `error` for failures; `invalid_reason` says the rest.
                    Some(_) if c == "error" => r.error.clone().into(),
                    Some(_) if c == "invalid_reason" => r.shown_invalid_reason().into(),
                    Some(s) if is_text_col(c) => serde_json::Value::String(s),
                    Some(s) => s
                        .parse::<f64>()
                        .ok()
                        .map(|f| {
                            if f.fract() == 0.0 && f.abs() < 1e15 && !s.contains('.') {
                                serde_json::Value::from(f as i64)
                            } else {
                                serde_json::Value::from(f)
                            }
                        })
                        .unwrap_or(serde_json::Value::String(s)),
                };
                o.insert(c.clone(), v);
            }
            // Whatever the columns, a row says whether it counts (trial 15: the
            // frontier flag alone cannot tell an invalid or failed point from a valid
            // one off the frontier).
            o.entry("valid").or_insert(r.shown_valid().into());
            // Its status as the API's points say it (`PointRow::status`: `ok`, `invalid`,
            // `failed`; issue 39's leftovers, 4: the API had it, `report` did not).
            o.entry("status").or_insert(r.status().into());
            o.entry("error")
                .or_insert(r.error.clone().map_or(serde_json::Value::Null, Into::into));
            o.entry("invalid_reason")
                .or_insert(r.shown_invalid_reason().into());
            // An adaptive point says so, and how many prompts it sent (issue 43); a
            // fixed-protocol row is left as it was.
            if r.adaptive {
                o.entry("adaptive").or_insert(true.into());
                o.entry("prompts_used")
                    .or_insert(r.prompts_used.map_or(serde_json::Value::Null, Into::into));
            }
            serde_json::Value::Object(o)
        })
        .collect()
}

/// `report --format json`'s GPU time (issue 43): each row of a group with a recorded figure
/// (`gpu`, [`crate::analysis::gpu_seconds_by_group`] over the whole selection) gains `group`
/// ([`PointRow::group`]), `gpu_seconds` (the point's own, GPU·s, `null` when unrecorded) and
/// `group_gpu_seconds` (its group's total, the `gpu_seconds` `/api/v1/history` and
/// `/api/v1/tco` answer for the group). Rows of groups without any (imports, older points)
/// are left as they are. `arr` holds [`json_rows`] of `rows`, in order.
pub fn add_gpu_seconds(
    arr: &mut [serde_json::Value],
    rows: &[PointRow],
    gpu: &[(String, crate::analysis::GpuSeconds)],
) {
    for (o, r) in arr.iter_mut().zip(rows) {
        let group = r.group();
        let Some(total) = (gpu.iter())
            .find(|(name, _)| *name == group)
            .and_then(|(_, g)| g.total)
        else {
            continue;
        };
        if let Some(o) = o.as_object_mut() {
            o.insert("group".into(), group.into());
            o.insert("gpu_seconds".into(), r.gpu_seconds.into());
            o.insert("group_gpu_seconds".into(), total.into());
        }
    }
}

/// The table's GPU-time footer (issue 43): one line per group of `gpu`
/// ([`crate::analysis::gpu_seconds_by_group`] over the selection) with its recorded
/// GPU-seconds and GPU-hours, how many points recorded them and how many did not; "" when no
/// group has any (imports and points stored before schema version 6 only).
pub fn gpu_seconds_footer(gpu: &[(String, crate::analysis::GpuSeconds)]) -> String {
    if gpu.iter().all(|(_, g)| g.total.is_none()) {
        return String::new();
    }
    let mut out = String::from(
        "\nGPU time per group (the runner's record per point: the row's GPUs × its wall time and \
         its share of the engine's launch and stop; sim rows: the sim's modelled busy time):\n",
    );
    for (name, g) in gpu {
        let points = |n: usize| inferbench_core::count(n, "point");
        let line = match g.total {
            None => format!("unknown ({} without a record)", points(g.unknown)),
            Some(t) => {
                let mut l = format!(
                    "{} GPU-s ({} GPU-h) over {}",
                    round_for_table(t),
                    round_for_table(t / 3600.0),
                    points(g.recorded)
                );
                if g.unknown > 0 {
                    l.push_str(&format!(
                        "; {} without a record, not counted",
                        points(g.unknown)
                    ));
                }
                l
            }
        };
        out.push_str(&format!("  {name}: {line}\n"));
    }
    out
}

/// What a table's rows carry that its [`footer`] explains: each legend line is printed only
/// when some row needs it (trial 13: `*` and `invalid` were explained under tables without
/// them, `failed` never).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    /// Some row is on its group's frontier (`*`).
    pub star: bool,
    /// Some row is invalid (`valid = false`) but measured.
    pub invalid: bool,
    /// Some row is a failed point (`--include-failed`: no request, or too few, finished).
    pub failed: bool,
    /// Some row is an agentic-coding replay, whose `*` is North-Star gated.
    pub agentic: bool,
    /// Some measured row lacks the frontier's x or y (a `-`): set by [`Marks::off_axes`].
    pub off_axes: bool,
    /// Some row has conc 0: `bench` without `--max-concurrency` (no cap; vLLM's default).
    pub uncapped: bool,
    /// Some row ran under `sweep --adaptive`'s early stop (issue 43).
    pub adaptive: bool,
}

impl Marks {
    /// The marks of `rows`, as [`cell`]'s `frontier` column shows them.
    pub fn of(rows: &[PointRow]) -> Self {
        Marks {
            star: rows.iter().any(|r| r.frontier && r.error.is_none()),
            invalid: rows.iter().any(|r| !r.valid && r.error.is_none()),
            failed: rows.iter().any(|r| r.error.is_some()),
            agentic: rows
                .iter()
                .any(|r| r.scenario == inferbench_store::query::AGENTIC_SCENARIO),
            off_axes: false,
            uncapped: rows.iter().any(|r| r.conc == 0),
            adaptive: rows.iter().any(|r| r.adaptive),
        }
    }

    /// These marks with [`Marks::off_axes`] set when a measured row of `rows` has no finite
    /// value of the frontier's `x` or `y` (trial 21: an instant server's points showed `-`
    /// for interactivity and a blank frontier cell, and nothing said why).
    pub fn off_axes(mut self, rows: &[PointRow], x: &str, y: &str) -> Self {
        let has = |r: &PointRow, m: &str| r.get(m).is_some_and(f64::is_finite);
        self.off_axes = rows
            .iter()
            .any(|r| r.error.is_none() && (!has(r, x) || !has(r, y)));
        self
    }
}

/// The footer under a table of `columns` (`report`'s table format, whatever the columns):
/// one `units:` line naming each metric column's label and unit from the metric registry, and,
/// when the `frontier` column is shown, what each mark its rows carry means (`marks`): `*` for
/// the frontier of `y` against `x` (North-Star gated for agentic-coding rows, said in the same
/// line so a mixed table's legend is right for every group), `invalid` and `failed`; without a
/// `frontier` or `valid` column, that some rows are invalid or failed; a `source` or `batch`
/// column is named. Empty when there is none of these.
pub fn footer(columns: &[String], x: &str, y: &str, marks: Marks) -> String {
    let units: Vec<(&str, String)> = columns
        .iter()
        .filter_map(|c| {
            let m = inferbench_core::registry::metric(c)?;
            (!m.unit.is_empty()).then(|| (c.as_str(), m.label_with_unit()))
        })
        .collect();
    let mut out = String::new();
    if !units.is_empty() {
        out.push_str("units:\n");
        let w = units.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
        for (c, l) in &units {
            out.push_str(&format!("  {c:<w$}  {l}\n"));
        }
    }
    let frontier_col = columns.iter().any(|c| c == "frontier");
    if frontier_col && marks.star {
        let mut star = format!(
            "* = on its group's Pareto frontier of {} against {} (a group: model, ISL/OSL, \
             scenario, hardware, framework, precision, spec decoding, disaggregation)",
            label(y),
            label(x)
        );
        if marks.agentic && x != inferbench_store::query::NORTH_STAR_X {
            star.push_str(&format!(
                "; an agentic-coding group's `*` is North-Star gated: on that frontier and on \
                 its frontier against {}",
                label(inferbench_store::query::NORTH_STAR_X)
            ));
        }
        out.push_str(&wrap(&star));
    }
    if frontier_col && marks.off_axes {
        let mut line = format!(
            "`-` = no value; a point without {} or {} has no place on their frontier (its \
             frontier cell is blank)",
            label(x),
            label(y)
        );
        if [x, y].iter().any(|m| m.contains("intvty")) {
            line.push_str(
                ": interactivity is 1000 / TPOT (ms), undefined when TPOT is 0, i.e. every \
                 output token after the first arrived at once (an instant or non-streaming \
                 server)",
            );
        }
        out.push_str(&wrap(&line));
    }
    let why = if columns.iter().any(|c| c == "error") {
        "the `error` column says why"
    } else {
        "`report … --columns conc,error` says why"
    };
    if frontier_col && marks.invalid {
        out.push_str(&wrap(&format!(
            "invalid = not a complete, valid result ({INVALID_CAUSES}): listed, on a \
                 frontier only with --include-invalid; {why}"
        )));
    }
    if frontier_col && marks.failed {
        out.push_str(&wrap(&format!(
            "failed = nothing measured (no request finished, or every one failed): listed with \
             --include-failed, its latencies `-`, its throughputs 0; {why}"
        )));
    }
    // A table whose columns show which rows are invalid or failed needs no pointer to them
    // (trial 19: the line below under `--columns conc,error,invalid_reason`).
    let shows_which =
        |c: &String| ["frontier", "valid", "error", "invalid_reason"].contains(&c.as_str());
    if (marks.invalid || marks.failed) && !columns.iter().any(shows_which) {
        // Trial 12: a --columns table without `frontier` showed invalid rows as if valid.
        out.push_str(&wrap(&format!(
            "some rows are invalid (not a complete, valid result: {INVALID_CAUSES}): add \
                 `valid` or `frontier` to --columns to see which"
        )));
    }
    if marks.adaptive && !columns.iter().any(|c| c == "prompts_used") {
        out.push_str(&wrap(
            "some rows ran under `sweep --adaptive`'s early stop: their profile ended once \
             median interactivity and throughput were known within the sweep's tolerance at \
             95 % confidence, with fewer prompts than InferenceX's 10 × conc; `report … \
             --columns conc,adaptive,prompts_used` says which and how many",
        ));
    }
    if columns.iter().any(|c| c == "source") {
        out.push_str(&wrap(
            "source = where a point came from (inferencex-dump: InferenceX's published results, \
             imported with `ingest --inferencex-dump`; a group and frontier of their own beside \
             a local run of the same configuration)",
        ));
    }
    if columns.iter().any(|c| c == "batch") {
        out.push_str(&wrap(
            "batch = the run a point came from (the last two parts of a result directory, a \
             result file's name, a quickstart's id; -f batch= takes it as shown, or a \
             quickstart's directory; --format csv shows it whole)",
        ));
    }
    if marks.uncapped && columns.iter().any(|c| c == "conc") {
        // Trials 26, 27: a `bench` point without --max-concurrency read as "conc 0".
        out.push_str(&wrap(
            "conc 0 = no concurrency cap (`bench` without --max-concurrency, as vLLM's default: \
             requests go out at --request-rate however many are in flight)",
        ));
    }
    if columns.iter().any(|c| c == "run") {
        out.push_str(&wrap(
            "run = the stored run's id, which tells apart rows of one setup, concurrency and \
             batch (two runs into one result directory); the dashboard's /run?id=N shows it",
        ));
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

/// Footer width: lines of [`footer`] break between words before this many characters.
const FOOTER_WIDTH: usize = 100;

/// `text` broken between words into lines of at most [`FOOTER_WIDTH`] characters (a longer word
/// stays whole), continuation lines indented by four spaces; ends with a newline. A no-break
/// space (U+00A0) joins a number to its unit and is printed as a plain space.
pub fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split([' ', '\n']).filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > FOOTER_WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = "   ".into();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out.replace('\u{a0}', " ")
}

/// The price and power a table's derived columns assume, one line per table (empty when no
/// `usd_per_m_*`, `tokens_per_usd_*`, `tok_s_per_mw*` or `j_per_token*` column is shown): for each hardware in
/// `rows` (base key, sorted), the $/GPU-hour of each cost regime shown and the all-in kW per GPU
/// (InferenceX-app's `HW_REGISTRY`, see [`inferbench_core::analytics::cost::HW_SPECS`]), or
/// the custom figures of `cost`; hardware outside the table is named as having neither.
pub fn assumptions(
    rows: &[PointRow],
    columns: &[String],
    cost: &inferbench_store::CostOptions,
) -> String {
    let Some(parts) = assumption_parts(rows, columns, cost) else {
        return String::new();
    };
    wrap(&format!(
        "assumptions: {} (InferenceX's SemiAnalysis figures; --gpu-hour-cost and --gpu-kw set \
         your own)",
        parts.join("; ")
    ))
}

/// What [`assumptions`] names, one entry per hardware of `rows` (base key, sorted):
/// `h100 $1.30/GPU-hour (hyperscaler), 1.37 kW/GPU all-in` (no-break spaces inside a figure),
/// `rtx4090 not in the hardware table: no cost or power`; `None` when none of `columns` is a
/// cost (`usd_per_m_*`, `tokens_per_usd_*`) or power (`tok_s_per_mw*`, `j_per_token*`) metric.
/// The dashboard shows them under a chart of such a y (`/api/v1/points`' `assumptions`).
pub fn assumption_parts(
    rows: &[PointRow],
    columns: &[String],
    cost: &inferbench_store::CostOptions,
) -> Option<Vec<String>> {
    use inferbench_core::analytics::cost::{hw_spec, Regime};
    let regimes: Vec<&str> = ["custom", "hyperscaler", "neocloud", "rental"]
        .into_iter()
        .filter(|r| {
            columns.iter().any(|c| {
                (c.strip_prefix("usd_per_m_"))
                    .or_else(|| c.strip_prefix("tokens_per_usd_"))
                    .is_some_and(|t| t.starts_with(r))
            })
        })
        .collect();
    let power = columns
        .iter()
        .any(|c| c.starts_with("tok_s_per_mw") || c.starts_with("j_per_token"));
    if regimes.is_empty() && !power {
        return None;
    }
    let mut hardware: Vec<String> = rows
        .iter()
        .map(|r| hw_spec(&r.hardware).map_or(r.hardware.clone(), |s| s.key.to_string()))
        .collect();
    hardware.sort();
    hardware.dedup();
    let parts: Vec<String> = hardware
        .iter()
        .map(|hw| {
            let Some(spec) = hw_spec(hw) else {
                return format!("{hw} not in the hardware table: no cost or power");
            };
            let mut figs: Vec<String> = regimes
                .iter()
                .filter_map(|&r| {
                    let usd = match r {
                        "custom" => cost.usd_per_gpu_hour?,
                        "hyperscaler" => Regime::Hyperscaler.usd_per_gpu_hour(spec),
                        "neocloud" => Regime::Neocloud.usd_per_gpu_hour(spec),
                        _ => Regime::Rental.usd_per_gpu_hour(spec),
                    };
                    Some(format!("${usd:.2}/GPU-hour\u{a0}({r})"))
                })
                .collect();
            if power {
                figs.push(match cost.kw_per_gpu {
                    Some(kw) => format!("{kw:.2}\u{a0}kW/GPU\u{a0}(--gpu-kw)"),
                    None => format!("{:.2}\u{a0}kW/GPU\u{a0}all-in", spec.all_in_kw),
                });
            }
            format!("{hw} {}", figs.join(", "))
        })
        .collect();
    Some(parts)
}

/// `inferbench compare`'s table: a header naming the sides (`a`, `b`: their filters), their
/// workloads (`wa`, `wb`) and the axes, one line per target x (each side's mean y, its batch
/// count, A/B and its 95 % interval), and the notes on what the columns mean.
pub fn compare_table(
    rows: &[inferbench_store::compare::CompareRow],
    (a, b): (&str, &str),
    (wa, wb): (&[String], &[String]),
    x: &str,
    y: &str,
) -> String {
    let one = |v: &[String]| v.first().cloned().unwrap_or_else(|| "-".into());
    let mut out = format!(
        "A = {a}   B = {b}   workload {}   y = {} at x = {}\n",
        if wa == wb {
            one(wa)
        } else {
            format!("A {}, B {}", one(wa), one(wb))
        },
        label(y),
        label(x)
    );
    let f = |v: Option<f64>| v.map_or("-".to_string(), round_for_table);
    let mut grid: Vec<[String; 7]> = vec![[
        "x".into(),
        "A".into(),
        "n A".into(),
        "B".into(),
        "n B".into(),
        "A/B".into(),
        "95% CI of A/B".into(),
    ]];
    let mut no_ci = false;
    for r in rows {
        let ci = match (r.ci95_low, r.ci95_high) {
            (Some(l), Some(h)) => format!("[{l:.3}, {h:.3}]"),
            _ => {
                no_ci |= r.ratio_a_over_b.is_some();
                "-".into()
            }
        };
        grid.push([
            round_for_table(r.at),
            f(r.mean_a),
            r.n_a.to_string(),
            f(r.mean_b),
            r.n_b.to_string(),
            r.ratio_a_over_b.map_or("-".into(), |x| format!("{x:.3}")),
            ci,
        ]);
    }
    out.push_str(&aligned(&grid, &[]));
    out.push_str(
        "  (A, B: mean over batches of y on each batch's frontier at x; n = batches whose frontier \
         reaches x, i.e. repeats; y between two of a frontier's points is interpolated, with the \
         monotone spline InferenceX uses, not measured)\n",
    );
    if no_ci {
        out.push_str(
            "  (no CI where a side has a single batch there: the interval needs at least 2 repeats \
             on each side)\n",
        );
    }
    out
}

/// For each `-f` filter that matches no stored point by itself, a line saying so, with the
/// closest stored value of its dimension and the stored ones (trial 18: `-f hw=h10` printed an
/// empty table and nothing about the typo, while a typo in the key got "did you mean").
/// `flag` is how a filter is written (`-f ` for report's, "" for a compare side's and the
/// dashboard API's `key=value` parameters). Errors: the store's, or a filter it cannot parse.
pub fn filter_hints(
    store: &mut inferbench_store::Store,
    filters: &[String],
    flag: &str,
) -> anyhow::Result<Vec<String>> {
    let mut hints = Vec::new();
    let mut dims = None;
    for spec in filters {
        let mut one = inferbench_store::Filter {
            include_failed: true,
            ..Default::default()
        };
        one.add(spec)?;
        if !store
            .points(&one, &inferbench_store::CostOptions::default())?
            .is_empty()
        {
            continue;
        }
        let dims = match &mut dims {
            Some(d) => d,
            None => dims.insert(store.dimension_values()?),
        };
        let mut said = false;
        for (col, vals) in &one.eq {
            let Some(known) = dims.get(col) else { continue };
            // Batches as tables show them, which `-f batch=` also takes (trial 21: the hint
            // listed absolute paths).
            let labels: Vec<String>;
            let known = if col == "batch" {
                let set: std::collections::BTreeSet<String> =
                    known.iter().map(|b| batch_label(b)).collect();
                labels = set.into_iter().collect();
                &labels
            } else {
                known
            };
            for v in vals {
                // Nothing stored in that dimension at all (a database of evals alone).
                if known.is_empty() {
                    hints.push(format!(
                        "`{flag}{spec}`: no stored point has {col}={v} (no point is stored)"
                    ));
                    said = true;
                    continue;
                }
                let near = inferbench_core::text::closest(v, known.iter().map(String::as_str));
                let mut shown: Vec<&str> = known.iter().take(8).map(String::as_str).collect();
                if known.len() > 8 {
                    shown.push("…");
                }
                // Several values are `a|b` (trial 26: `hardware=h100,h200` matched nothing,
                // both stored, and nothing said how to ask for either).
                let listed: Vec<&str> = v.split(',').map(str::trim).collect();
                let or_hint =
                    if listed.len() > 1 && listed.iter().all(|x| known.iter().any(|k| k == x)) {
                        format!(
                            "; several values are separated by `|`: {col}={}",
                            listed.join("|")
                        )
                    } else {
                        near.map_or(String::new(), |n| format!("; did you mean {n}?"))
                    };
                hints.push(format!(
                    "`{flag}{spec}`: no stored point has {col}={v}{or_hint} (stored: {})",
                    shown.join(", ")
                ));
                said = true;
            }
        }
        if !said {
            hints.push(format!("`{flag}{spec}` matches no stored point by itself"));
        }
    }
    Ok(hints)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferbench_store::CostOptions;
    use std::collections::BTreeMap;

    #[test]
    fn footer_names_units_with_or_without_the_frontier_column() {
        let cols = |c: &[&str]| -> Vec<String> { c.iter().map(|s| s.to_string()).collect() };
        let star = Marks {
            star: true,
            ..Marks::default()
        };
        let invalid = Marks {
            invalid: true,
            ..Marks::default()
        };
        assert_eq!(
            footer(
                &cols(&["hardware", "conc", "p99_ttft", "tput_per_gpu"]),
                "median_intvty",
                "tput_per_gpu",
                Marks::default()
            ),
            "\nunits:\n  p99_ttft      TTFT, P99 (s)\n  tput_per_gpu  Throughput per GPU (tok/s/GPU)\n"
        );
        assert_eq!(
            footer(
                &cols(&["conc", "median_e2el", "frontier"]),
                "median_intvty",
                "tput_per_gpu",
                star
            ),
            "\nunits:\n  median_e2el  End-to-end latency, median (s)\n\
             * = on its group's Pareto frontier of Throughput per GPU (tok/s/GPU) against Interactivity, median\n\
             \x20   (tok/s/user) (a group: model, ISL/OSL, scenario, hardware, framework, precision, spec decoding,\n\
             \x20   disaggregation)\n"
        );
        assert_eq!(
            footer(&cols(&["hardware", "conc"]), "x", "y", Marks::default()),
            ""
        );
        let uncapped = Marks {
            uncapped: true,
            ..Marks::default()
        };
        assert_eq!(
            footer(&cols(&["hardware", "conc"]), "x", "y", uncapped),
            "\nconc 0 = no concurrency cap (`bench` without --max-concurrency, as vLLM's default: requests go out\n\
             \x20   at --request-rate however many are in flight)\n"
        );
        assert_eq!(footer(&cols(&["hardware"]), "x", "y", uncapped), "");
        // Trial 25: the `run` column was not explained.
        assert_eq!(
            footer(&cols(&["conc", "run"]), "x", "y", Marks::default()),
            "\nrun = the stored run's id, which tells apart rows of one setup, concurrency and batch (two runs into\n\
             \x20   one result directory); the dashboard's /run?id=N shows it\n"
        );
        assert_eq!(
            footer(&cols(&["conc", "batch"]), "x", "y", invalid),
            "\nsome rows are invalid (not a complete, valid result: the run was cut short, its server fell behind\n\
             \x20   its schedule (starved of CPU), the client could not keep up, the server's prefix cache served a\n\
             \x20   random prompt set, or an AgentX replay ran for less than 900 s): add `valid` or `frontier` to\n\
             \x20   --columns to see which\n\
             batch = the run a point came from (the last two parts of a result directory, a result file's name, a\n\
             \x20   quickstart's id; -f batch= takes it as shown, or a quickstart's directory; --format csv shows it\n\
             \x20   whole)\n"
        );
        // Columns that show which rows are invalid need no pointer to them (trial 19).
        let f = footer(
            &cols(&["conc", "error", "invalid_reason"]),
            "x",
            "y",
            invalid,
        );
        assert!(!f.contains("to see which"), "{f}");
        let f = footer(&cols(&["conc", "frontier"]), "x", "y", invalid);
        assert!(
            f.contains(
                "\ninvalid = not a complete, valid result (the run was cut short, its server fell behind its schedule\n\
                 \x20   (starved of CPU), the client could not keep up, the server's prefix cache served a random prompt\n\
                 \x20   set, or an AgentX replay ran for less than 900 s): listed, on a frontier only with\n\
                 \x20   --include-invalid; `report … --columns conc,error` says why\n"
            ),
            "{f:?}"
        );
        // A mixed table (fixed-seq and agentic groups): the legend says how each is marked.
        assert_eq!(
            footer(
                &cols(&["conc", "frontier"]),
                "median_intvty",
                "tput_per_gpu",
                Marks {
                    agentic: true,
                    ..star
                }
            ),
            "\n* = on its group's Pareto frontier of Throughput per GPU (tok/s/GPU) against Interactivity, median\n\
             \x20   (tok/s/user) (a group: model, ISL/OSL, scenario, hardware, framework, precision, spec decoding,\n\
             \x20   disaggregation); an agentic-coding group's `*` is North-Star gated: on that frontier and on its\n\
             \x20   frontier against E2E-normalized interactivity, P90 (tok/s/user)\n"
        );
        // Trial 13: no legend for a mark no row carries; `failed` explained when one does.
        assert_eq!(
            footer(&cols(&["conc", "frontier"]), "x", "y", Marks::default()),
            ""
        );
        assert_eq!(
            footer(
                &cols(&["conc", "frontier"]),
                "x",
                "y",
                Marks {
                    failed: true,
                    ..Marks::default()
                }
            ),
            "\nfailed = nothing measured (no request finished, or every one failed): listed with --include-failed,\n\
             \x20   its latencies `-`, its throughputs 0; `report … --columns conc,error` says why\n"
        );
    }

    /// Trial 21: an instant server's point (TPOT 0, so no interactivity) showed `-` and a blank
    /// frontier cell; the footer says why, only when a measured row lacks an axis.
    #[test]
    fn a_point_without_an_axis_value_is_explained() {
        let mut m = BTreeMap::new();
        m.insert("tput_per_gpu".to_string(), 2500.0);
        let instant = PointRow {
            valid: true,
            metrics: m.clone(),
            ..PointRow::default()
        };
        m.insert("median_intvty".to_string(), 40.0);
        let timed = PointRow {
            valid: true,
            metrics: m,
            ..PointRow::default()
        };
        let marks =
            |rows: &[PointRow]| Marks::default().off_axes(rows, "median_intvty", "tput_per_gpu");
        assert!(!marks(std::slice::from_ref(&timed)).off_axes);
        assert!(marks(&[timed, instant]).off_axes);
        assert_eq!(
            footer(
                &["conc".to_string(), "frontier".to_string()],
                "median_intvty",
                "tput_per_gpu",
                Marks {
                    off_axes: true,
                    ..Marks::default()
                }
            ),
            "\n`-` = no value; a point without Interactivity, median (tok/s/user) or Throughput per GPU (tok/s/GPU)\n\
             \x20   has no place on their frontier (its frontier cell is blank): interactivity is 1000 / TPOT (ms),\n\
             \x20   undefined when TPOT is 0, i.e. every output token after the first arrived at once (an instant or\n\
             \x20   non-streaming server)\n"
        );
    }

    /// The marks a footer explains come from the rows as the `frontier` column shows them: a
    /// failed point is `failed`, not `invalid` or `*`.
    #[test]
    fn marks_of_rows() {
        let mut ok = PointRow {
            valid: true,
            frontier: true,
            conc: 4,
            ..PointRow::default()
        };
        let failed = PointRow {
            error: Some("no successful request".into()),
            frontier: true,
            conc: 4,
            ..PointRow::default()
        };
        assert_eq!(
            Marks::of(std::slice::from_ref(&failed)),
            Marks {
                failed: true,
                ..Marks::default()
            }
        );
        ok.scenario = inferbench_store::query::AGENTIC_SCENARIO.into();
        assert_eq!(
            Marks::of(&[ok, failed]),
            Marks {
                star: true,
                failed: true,
                agentic: true,
                ..Marks::default()
            }
        );
        // Conc 0 (no concurrency cap) is explained when a row has it.
        assert!(Marks::of(&[PointRow::default()]).uncapped);
        assert_eq!(round_for_table(0.0), "0");
        assert_eq!(round_for_table(0.01234), "0.0123");
    }

    /// JSON: `frontier` is true only for a `*` point (an invalid or failed one is not on a
    /// frontier), `valid` a boolean; every row carries `valid`, `error` and `invalid_reason`
    /// whatever the columns; the table's `error` cell gives an invalid row's reason.
    #[test]
    fn json_frontier_and_valid_are_booleans() {
        let mut invalid = row();
        invalid.valid = false;
        invalid.invalid_reason = Some("cut short: interrupted".into());
        invalid.frontier = false;
        let mut on = row();
        on.frontier = true;
        // Stored valid, as a failed point is: it still says `"valid": false` (trial of issue
        // 39, finding 7).
        let mut failed = row();
        failed.frontier = false;
        failed.error = Some("server unreachable: nothing measured".into());
        let cols: Vec<String> = ["conc", "valid", "frontier"].map(String::from).to_vec();
        let v: serde_json::Value =
            serde_json::from_str(&render(&[invalid.clone(), on.clone()], &cols, Format::Json))
                .unwrap();
        assert_eq!(
            v,
            serde_json::json!([
                {"conc": 4, "valid": false, "status": "invalid", "frontier": false, "error": null,
                 "invalid_reason": "cut short: interrupted"},
                {"conc": 4, "valid": true, "status": "ok", "frontier": true, "error": null, "invalid_reason": null}
            ])
        );
        let err = |r: &PointRow| cell(r, "error", false).unwrap();
        assert_eq!(err(&invalid), "invalid: cut short: interrupted");
        // Beside the invalid_reason column the table does not repeat it (trial 18).
        let cols = ["error".to_string(), "invalid_reason".to_string()];
        let t = render(std::slice::from_ref(&invalid), &cols, Format::Table);
        assert_eq!(
            t.lines().nth(1).unwrap().trim_end(),
            "invalid (see invalid_reason)  cut short: interrupted"
        );
        assert_eq!(err(&failed), "server unreachable: nothing measured");
        assert_eq!(err(&on), "");
        let cols: Vec<String> = ["conc", "frontier"].map(String::from).to_vec();
        let v: serde_json::Value =
            serde_json::from_str(&render(&[invalid, on, failed], &cols, Format::Json)).unwrap();
        assert_eq!(
            v,
            serde_json::json!([
                {"conc": 4, "frontier": false, "valid": false, "status": "invalid", "error": null,
                 "invalid_reason": "cut short: interrupted"},
                {"conc": 4, "frontier": true, "valid": true, "status": "ok", "error": null, "invalid_reason": null},
                {"conc": 4, "frontier": false, "valid": false, "status": "failed",
                 "error": "server unreachable: nothing measured", "invalid_reason": null}
            ])
        );
        // A failed point stored before the one status rule (fresh tester's finding 1), its
        // error beside `cut short: interrupted`: failed, and no invalid reason shown, in the
        // JSON, the CSV's `invalid_reason` column or the `error` cell.
        let mut old = row();
        old.frontier = false;
        old.valid = false;
        old.error = Some("interrupted before any request finished".into());
        old.invalid_reason = Some("cut short: interrupted".into());
        let cols: Vec<String> = ["conc", "invalid_reason"].map(String::from).to_vec();
        let v: serde_json::Value =
            serde_json::from_str(&render(std::slice::from_ref(&old), &cols, Format::Json)).unwrap();
        assert_eq!(
            v,
            serde_json::json!([
                {"conc": 4, "invalid_reason": null, "valid": false, "status": "failed",
                 "error": "interrupted before any request finished"}
            ])
        );
        assert_eq!(
            render(std::slice::from_ref(&old), &cols, Format::Csv),
            "conc,invalid_reason\n4,\n"
        );
        assert_eq!(err(&old), "interrupted before any request finished");
    }

    /// Issue 39's leftovers, 4: `status` is a column of the table, the CSV and the JSON, with
    /// the API's values from the one `PointRow::status` (a failed point stored valid says
    /// `failed`, an invalid one `invalid`).
    #[test]
    fn status_is_a_column_with_the_apis_values() {
        let mut invalid = row();
        invalid.valid = false;
        let mut failed = row();
        failed.error = Some("server unreachable: nothing measured".into());
        let rows = [row(), invalid, failed];
        let cols: Vec<String> = ["conc", "status"].map(String::from).to_vec();
        assert_eq!(
            render(&rows, &cols, Format::Csv),
            "conc,status\n4,ok\n4,invalid\n4,failed\n"
        );
        let v: serde_json::Value =
            serde_json::from_str(&render(&rows, &cols, Format::Json)).unwrap();
        let got: Vec<&str> = (v.as_array().unwrap().iter())
            .map(|r| r["status"].as_str().unwrap())
            .collect();
        assert_eq!(got, ["ok", "invalid", "failed"]);
        assert!(check_column("status", &[]).is_ok());
    }

    /// Trial 13: a misspelled `--x`, `--y` or `--columns` name was drawn as an empty column.
    #[test]
    fn unknown_metric_and_column_names_are_errors() {
        let mut stored = row();
        stored.metrics.insert("my_custom_metric".into(), 1.0);
        let rows = vec![stored];
        assert!(check_metric("--x", "median_intvty", &[]).is_ok());
        assert!(check_metric("--y", "usd_per_m_rental", &[]).is_ok());
        assert!(check_metric("--y", "my_custom_metric", &rows).is_ok());
        let e = check_metric("--x", "nonsense", &rows)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--x nonsense: unknown metric (")
                && e.contains("x axes: median_intvty, "),
            "{e}"
        );
        assert!(check_column("conc", &[]).is_ok());
        assert!(check_column("tput_per_gpu", &[]).is_ok());
        let e = check_column("tput_per_gpux", &rows)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--columns tput_per_gpux: unknown metric (did you mean `tput_per_gpu`?)")
                && e.contains("identity columns: model, hardware"),
            "{e}"
        );
        // Trial 15: the closest name, whether an identity column, a metric or a stored one.
        let hint = |flag: &str, name: &str| {
            let e = if flag == "--columns" {
                check_column(name, &rows)
            } else {
                check_metric(flag, name, &rows)
            };
            let e = e.unwrap_err().to_string();
            e.split_once("did you mean `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(c, _)| c.to_string())
        };
        assert_eq!(hint("--columns", "hardwre").as_deref(), Some("hardware"));
        assert_eq!(hint("--columns", "p99_tft").as_deref(), Some("p99_ttft"));
        assert_eq!(
            hint("--x", "median_intvity").as_deref(),
            Some("median_intvty")
        );
        assert_eq!(
            hint("--y", "my_custom_metrc").as_deref(),
            Some("my_custom_metric")
        );
        assert_eq!(hint("--x", "nonsense"), None);
        assert!(known_without_points("valid") && !known_without_points("my_custom_metric"));
    }

    #[test]
    fn assumptions_name_each_hardware_price_and_power_shown() {
        let cols = |c: &[&str]| -> Vec<String> { c.iter().map(|s| s.to_string()).collect() };
        let mut b = row();
        b.hardware = "b200-nv".into();
        let mut odd = row();
        odd.hardware = "rtx4090".into();
        let rows = vec![row(), b, odd, row()];
        let none = CostOptions::default();
        assert_eq!(
            assumptions(
                &rows,
                &cols(&["conc", "usd_per_m_rental", "tok_s_per_mw"]),
                &none
            ),
            "assumptions: b200 $2.90/GPU-hour (rental), 1.71 kW/GPU all-in; h200 $1.60/GPU-hour (rental),\n\
             \x20   1.37 kW/GPU all-in; rtx4090 not in the hardware table: no cost or power (InferenceX's\n\
             \x20   SemiAnalysis figures; --gpu-hour-cost and --gpu-kw set your own)\n"
        );
        let custom = CostOptions {
            usd_per_gpu_hour: Some(2.5),
            kw_per_gpu: Some(1.0),
        };
        assert_eq!(
            assumptions(
                &rows[..1],
                &cols(&[
                    "usd_per_m_custom_output",
                    "usd_per_m_hyperscaler",
                    "j_per_token"
                ]),
                &custom
            ),
            "assumptions: h200 $2.50/GPU-hour (custom), $1.41/GPU-hour (hyperscaler), 1.00 kW/GPU (--gpu-kw)\n\
             \x20   (InferenceX's SemiAnalysis figures; --gpu-hour-cost and --gpu-kw set your own)\n"
        );
        assert_eq!(
            assumptions(&rows, &cols(&["conc", "tput_per_gpu"]), &none),
            ""
        );
        // Tokens per $1 (issue 42) assume their regime's price as $/M does.
        assert_eq!(
            assumptions(&rows[..1], &cols(&["tokens_per_usd_neocloud"]), &none),
            "assumptions: h200 $1.74/GPU-hour (neocloud) (InferenceX's SemiAnalysis figures; \
             --gpu-hour-cost and\n\x20   --gpu-kw set your own)\n"
        );
    }

    /// Issue 13: the default table names the identity every row shares once instead of
    /// repeating it; what differs (here the hardware) stays a column, as do conc and metrics.
    #[test]
    fn split_common_takes_out_shared_identity_columns_only() {
        let cols: Vec<String> = [
            "model",
            "hardware",
            "isl",
            "conc",
            "tput_per_gpu",
            "frontier",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut b = row();
        b.hardware = "b200".into();
        let (kept, common) = split_common(&[row(), b, row()], &cols);
        assert_eq!(kept, ["hardware", "conc", "tput_per_gpu", "frontier"]);
        assert_eq!(common, ["model=dsr1", "isl=1024"]);
        let (kept, common) = split_common(&[], &cols);
        assert_eq!((kept, common.len()), (cols.clone(), 0));
    }

    /// `report --columns`' note: the identity columns in which the rows differ and that the
    /// chosen columns leave out, `date` never among them, in the default columns' order.
    #[test]
    fn identity_left_out_names_varying_identity_not_chosen() {
        let cols: Vec<String> = [
            "model",
            "hardware",
            "precision",
            "date",
            "conc",
            "tput_per_gpu",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut b = row();
        b.hardware = "b200".into();
        b.precision = "fp4".into();
        b.date = "2026-03-02".into();
        b.conc = 8;
        let rows = [row(), b];
        let chosen = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            identity_left_out(&rows, &cols, &chosen(&["conc", "tput_per_gpu"])),
            ["hardware", "precision"]
        );
        assert_eq!(
            identity_left_out(&rows, &cols, &chosen(&["precision", "conc"])),
            ["hardware"]
        );
        assert!(identity_left_out(&rows[..1], &cols, &chosen(&["conc"])).is_empty());
    }

    /// Trial 23: two `bench` runs into one --result-dir gave two rows nothing told apart; the
    /// run id is a column after `batch` then, and only then.
    #[test]
    fn repeated_points_of_one_batch_show_their_run() {
        let mut a = row();
        a.run_id = 7;
        let mut b = row();
        b.run_id = 9;
        let cols = default_columns(&[a.clone(), b.clone()], None);
        let at = cols.iter().position(|c| c == "batch").unwrap();
        assert_eq!(cols[at + 1], "run", "{cols:?}");
        assert_eq!(cell(&b, "run", false).as_deref(), Some("9"));
        b.conc += 1;
        assert!(!default_columns(&[a.clone(), b.clone()], None).contains(&"run".to_string()));
        b.conc = a.conc;
        b.batch = "other".into();
        assert!(!default_columns(&[a, b], None).contains(&"run".to_string()));
    }

    /// Trial 6: only agentic rows → `scenario` instead of the `isl`/`osl` they do not have; a
    /// long batch name (a bench point's file name) is cut to 32 characters in tables only, keeping
    /// its head and tail.
    #[test]
    fn agentic_only_tables_and_long_batches() {
        let mut a = row();
        a.scenario = inferbench_store::query::AGENTIC_SCENARIO.into();
        a.batch = "results/openai-infqps-concurrency16-Llama-3.1-8B-20261201-221319.json".into();
        let cols = default_columns(std::slice::from_ref(&a), None);
        assert_eq!(&cols[..3], ["model", "scenario", "hardware"]);
        assert!(!cols.iter().any(|c| c == "isl" || c == "osl"), "{cols:?}");
        assert_eq!(
            cell(&a, "batch", false).unwrap(),
            "openai-inf…-20261201-221319.json"
        );
        // Trial 7: two quickstarts of one hour looked alike at 24 characters; whole now.
        a.batch = "quickstart-20261202-031245-117".into();
        assert_eq!(
            cell(&a, "batch", false).unwrap(),
            "quickstart-20261202-031245-117"
        );
        assert_eq!(cell(&a, "batch", true).unwrap(), a.batch);
        // Trial 10: a bench point's batch `results/bench` showed as `bench`.
        for (batch, shown) in [
            ("/home/u/results/bench/", "results/bench"),
            ("results/bench", "results/bench"),
            ("bench", "bench"),
            ("/sweeps/v0.9", "sweeps/v0.9"),
            ("/x/results/agg_dsr1_1k1k.json", "agg_dsr1_1k1k.json"),
        ] {
            assert_eq!(batch_label(batch), shown, "{batch}");
        }
    }

    fn row() -> PointRow {
        PointRow {
            model: "dsr1".into(),
            hardware: "h200".into(),
            framework: "sglang".into(),
            precision: "fp8".into(),
            spec_decoding: "none".into(),
            disagg: false,
            tp: 8,
            pp: 1,
            ep: 8,
            dp_attention: true,
            num_prefill_gpu: 8,
            num_decode_gpu: 8,
            gpus: 8,
            kv_offload: "off".into(),
            scenario: "fixed_seq_len".into(),
            isl: 1024,
            osl: 1024,
            image: "a,b".into(),
            conc: 4,
            date: "2026-03-01".into(),
            batch: "b".into(),
            source_kind: "inferbench".into(),
            valid: true,
            invalid_reason: None,
            error: None,
            metrics: BTreeMap::from([
                ("tput_per_gpu".to_string(), 102.4),
                ("p99_ttft".into(), 0.18),
            ]),
            frontier: true,
            point_id: 1,
            run_id: 1,
            start_unix: None,
            ..PointRow::default()
        }
    }

    #[test]
    fn three_formats() {
        let cols: Vec<String> = [
            "hardware",
            "parallelism",
            "conc",
            "tput_per_gpu",
            "p99_ttft",
            "median_e2el",
            "image",
            "frontier",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let rows = [row()];
        assert_eq!(
            render(&rows, &cols, Format::Table),
            "hardware  parallelism  conc  tput_per_gpu  p99_ttft  median_e2el  image  frontier\n\
             \x20                             (tok/s/GPU)       (s)          (s)\n\
             h200      DEP8            4         102.4     0.180            -  a,b    *\n"
        );
        assert_eq!(
            render(&rows, &cols, Format::Csv),
            "hardware,parallelism,conc,tput_per_gpu,p99_ttft,median_e2el,image,frontier\n\
             h200,DEP8,4,102.4,0.18,,\"a,b\",*\n"
        );
        let j: serde_json::Value =
            serde_json::from_str(&render(&rows, &cols, Format::Json)).unwrap();
        assert_eq!(
            j,
            serde_json::json!([{"hardware": "h200", "parallelism": "DEP8", "conc": 4, "tput_per_gpu": 102.4,
              "p99_ttft": 0.18, "median_e2el": null, "image": "a,b", "frontier": true,
              "valid": true, "status": "ok", "error": null, "invalid_reason": null}])
        );
    }

    /// GPU time per group (issue 43): a footer line per group and, in JSON, the group's total
    /// beside each of its rows; nothing at all when no group recorded any.
    #[test]
    fn gpu_seconds_footer_and_json_keys() {
        let mut a = row();
        a.gpu_seconds = Some(5400.0);
        let mut b = row();
        b.conc = 16;
        let mut c = row();
        c.hardware = "b200".into();
        let rows = [a, b, c];
        let gpu = crate::analysis::gpu_seconds_by_group(&rows);
        let (ga, gc) = (rows[0].group(), rows[2].group());
        assert_eq!(
            gpu_seconds_footer(&gpu),
            format!(
                "\nGPU time per group (the runner's record per point: the row's GPUs × its wall \
                 time and its share of the engine's launch and stop; sim rows: the sim's \
                 modelled busy time):\n  {ga}: 5400 GPU-s (1.500 GPU-h) over 1 point; 1 point without a \
                 record, not counted\n  {gc}: unknown (1 point without a record)\n"
            )
        );
        let cols = vec!["conc".to_string()];
        let mut arr = json_rows(&rows, &cols);
        add_gpu_seconds(&mut arr, &rows, &gpu);
        assert_eq!(
            serde_json::Value::from(arr),
            serde_json::json!([
                {"conc": 4, "valid": true, "status": "ok", "error": null, "invalid_reason": null,
                 "group": ga, "gpu_seconds": 5400.0, "group_gpu_seconds": 5400.0},
                {"conc": 16, "valid": true, "status": "ok", "error": null, "invalid_reason": null,
                 "group": ga, "gpu_seconds": null, "group_gpu_seconds": 5400.0},
                {"conc": 4, "valid": true, "status": "ok", "error": null, "invalid_reason": null},
            ])
        );
        let none = crate::analysis::gpu_seconds_by_group(&rows[1..]);
        assert_eq!(gpu_seconds_footer(&none), "");
    }

    /// An adaptive point (issue 43): `--columns adaptive,prompts_used` cells, its JSON row
    /// says so whatever the columns (a fixed-protocol row is unchanged), and the table's footer
    /// points at the columns unless they are shown.
    #[test]
    fn adaptive_points_show_their_prompts_used() {
        let mut a = row();
        a.adaptive = true;
        a.prompts_used = Some(33);
        let b = row();
        assert_eq!(cell(&a, "prompts_used", false).as_deref(), Some("33"));
        assert_eq!(cell(&b, "prompts_used", false), None);
        assert_eq!(cell(&a, "adaptive", false).as_deref(), Some("true"));
        let rows = [a, b];
        let cols = vec!["conc".to_string()];
        assert_eq!(
            serde_json::Value::from(json_rows(&rows, &cols)),
            serde_json::json!([
                {"conc": 4, "valid": true, "status": "ok", "error": null, "invalid_reason": null,
                 "adaptive": true, "prompts_used": 33},
                {"conc": 4, "valid": true, "status": "ok", "error": null, "invalid_reason": null},
            ])
        );
        let shown = vec!["conc".to_string(), "adaptive".into(), "prompts_used".into()];
        assert_eq!(
            serde_json::Value::from(json_rows(&rows, &shown)),
            serde_json::json!([
                {"conc": 4, "adaptive": true, "prompts_used": 33, "valid": true, "status": "ok",
                 "error": null, "invalid_reason": null},
                {"conc": 4, "adaptive": false, "prompts_used": null, "valid": true, "status": "ok",
                 "error": null, "invalid_reason": null},
            ])
        );
        let marks = Marks::of(&rows);
        assert!(marks.adaptive);
        let foot = footer(&cols, "median_intvty", "tput_per_gpu", marks);
        assert!(
            foot.contains("--columns conc,adaptive,prompts_used"),
            "{foot}"
        );
        assert!(!footer(&shown, "x", "y", marks).contains("early stop"));
        assert!(!footer(&cols, "x", "y", Marks::of(&rows[1..])).contains("early stop"));
        for c in ["adaptive", "prompts_used"] {
            assert!(check_column(c, &rows).is_ok(), "{c}");
        }
    }

    #[test]
    fn labels() {
        assert_eq!(
            label("usd_per_m_rental_output"),
            "Cost per million output tokens, rental ($/M tokens)"
        );
        assert_eq!(
            label("usd_per_m_custom"),
            "Cost per million total (input + output) tokens, custom ($/M tokens)"
        );
        assert_eq!(label("p90_tpot"), "TPOT, P90 (s)");
        assert_eq!(label("conc"), "conc");
    }
}

/// Rounds a metric value for a table cell: 4 significant-ish digits that never hide a
/// thousand (`1234`, `56.7`, `0.123`, `0.0123`); zero is `0`. CSV and JSON print full precision instead.
pub fn round_for_table(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        // A failed point's throughputs (trial 13: `0.0000` read as a rounded small value).
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// Text cells as aligned lines: each column as wide as its widest cell, left-aligned where
/// `left[i]`, else right-aligned; two spaces before the first column and between columns,
/// trailing blanks trimmed; every line ends with a newline.
pub fn aligned<R: AsRef<[String]>>(grid: &[R], left: &[bool]) -> String {
    let cols = grid.iter().map(|r| r.as_ref().len()).max().unwrap_or(0);
    let w: Vec<usize> = (0..cols)
        .map(|i| {
            grid.iter()
                .filter_map(|r| r.as_ref().get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in grid {
        let cells: Vec<String> = r
            .as_ref()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if left.get(i).copied().unwrap_or(false) {
                    format!("{c:<w$}", w = w[i])
                } else {
                    format!("{c:>w$}", w = w[i])
                }
            })
            .collect();
        out.push_str(format!("  {}", cells.join("  ")).trim_end());
        out.push('\n');
    }
    out
}

/// One group of `report --history-at`: its name, its values per batch (oldest first, from
/// `inferbench_store::compare::history`) and the notes a table prints under it (why values are
/// missing, how little a flag rests on).
#[derive(Debug, Clone)]
pub struct HistoryGroup<'a> {
    /// [`PointRow::group`].
    pub group: &'a str,
    /// One value per batch.
    pub points: &'a [inferbench_core::analytics::HistoryPoint],
    /// Lines printed under the group's rows in table output (each in parentheses already).
    pub notes: Vec<String>,
}

/// Renders `report --history-at`: y at `x = at` per group and batch, with the median of the
/// previous `window` values (the baseline), the relative change, and the regression flag.
/// Table: one block per group with column headers and units (numbers rounded as
/// [`round_for_table`], the change in %), its notes under it. CSV and JSON: one row/object per
/// value with the group, x, at, y and full precision (`change` as a fraction); notes are left
/// to the caller.
pub fn render_history(
    groups: &[HistoryGroup<'_>],
    x: &str,
    y: &str,
    at: f64,
    window: usize,
    format: Format,
) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    match format {
        Format::Table => {
            let mut out = String::new();
            let y_unit = match unit(y) {
                "" => String::new(),
                u => format!("({u})"),
            };
            for (gi, g) in groups.iter().enumerate() {
                if gi > 0 {
                    out.push('\n');
                }
                out.push_str(&format!(
                    "{}: {} at {} = {at}\n",
                    g.group,
                    label(y),
                    label(x)
                ));
                if !g.points.is_empty() {
                    let mut grid: Vec<[String; 6]> = vec![
                        [
                            "date".into(),
                            "batch".into(),
                            y.into(),
                            format!("median of previous {}", window.max(1)),
                            "change".into(),
                            String::new(),
                        ],
                        [
                            String::new(),
                            String::new(),
                            y_unit.clone(),
                            y_unit.clone(),
                            "(%)".into(),
                            String::new(),
                        ],
                    ];
                    for p in g.points {
                        // With its time where known: batches of one day read apart (trial 20).
                        let when = p.time_unix.map_or_else(
                            || p.date.clone(),
                            inferbench_store::parse::minute_from_unix,
                        );
                        grid.push([
                            when,
                            batch_label(&p.batch),
                            round_for_table(p.value),
                            p.baseline.map_or("-".into(), round_for_table),
                            p.change
                                .map_or("-".into(), |c| format!("{:+.1}", c * 100.0)),
                            if p.regression {
                                "REGRESSION".into()
                            } else {
                                String::new()
                            },
                        ]);
                    }
                    out.push_str(&aligned(&grid, &[true, true, false, false, false, true]));
                }
                for n in &g.notes {
                    for l in wrap(n).lines() {
                        out.push_str(&format!("  {l}\n"));
                    }
                }
            }
            out
        }
        Format::Csv => {
            let mut out =
                String::from("group,x,at,y,date,batch,value,baseline,change,regression\n");
            for g in groups {
                for p in g.points {
                    let f = [
                        g.group.to_string(),
                        x.to_string(),
                        format!("{at}"),
                        y.to_string(),
                        p.date.clone(),
                        p.batch.clone(),
                        format!("{}", p.value),
                        opt(p.baseline),
                        opt(p.change),
                        p.regression.to_string(),
                    ];
                    let line: Vec<String> = f.iter().map(|s| csv_field(s)).collect();
                    out.push_str(&line.join(","));
                    out.push('\n');
                }
            }
            out
        }
        Format::Json => {
            let arr: Vec<serde_json::Value> = groups
                .iter()
                .flat_map(|g| {
                    g.points.iter().map(move |p| {
                        serde_json::json!({
                            "group": g.group, "x": x, "at": at, "y": y, "date": p.date,
                            "batch": p.batch, "value": p.value, "baseline": p.baseline,
                            "change": p.change, "regression": p.regression,
                        })
                    })
                })
                .collect();
            let mut s = serde_json::to_string_pretty(&arr).unwrap_or_else(|_| "[]".into());
            s.push('\n');
            s
        }
    }
}
