//! Comparisons of two configurations at matched interactivity, and a configuration's history at
//! fixed interactivity with regression flags (issue #5; formulas in
//! `inferbench_core::analytics`).
//!
//! A *side* is a set of points (a selection, e.g. one hardware × framework × precision). Each
//! batch (sweep) of a side gives one curve: the Pareto frontier of (x, y) over the batch's points,
//! interpolated at the target x with the monotone (Steffen) spline — no extrapolation, so a batch
//! whose frontier does not cover the target contributes nothing there. Batches are the repeats.

use std::collections::BTreeMap;

use inferbench_core::analytics::{self, HistoryPoint, Ratio};
use serde::Serialize;

use crate::query::{better, PointRow};

/// A compare side's `rows` without its invalid points unless `include_invalid`
/// ([`PointRow::valid`]: kept off frontiers, so not compared either), and how many it left out.
/// `inferbench compare` and `/api/v1/compare` both go through it.
pub fn keep_valid(mut rows: Vec<PointRow>, include_invalid: bool) -> (Vec<PointRow>, usize) {
    let all = rows.len();
    rows.retain(|r| r.counts(include_invalid));
    let left_out = all - rows.len();
    (rows, left_out)
}

/// Frontier knots `(x, y)` of a set of rows, sorted by x: the points of the one frontier rule
/// ([`crate::query::frontier_of`], North-Star gated for AgentX rows) that `report` and the
/// dashboard mark.
pub fn frontier_knots(rows: &[&PointRow], x: &str, y: &str) -> Vec<(f64, f64)> {
    crate::query::frontier_of(rows, x, y)
        .into_iter()
        .map(|i| {
            let r = rows[i];
            (r.get(x).unwrap_or(f64::NAN), r.get(y).unwrap_or(f64::NAN))
        })
        .collect()
}

/// `rows` grouped by batch (a side's repeats), batches in name order.
pub fn by_batch(rows: &[PointRow]) -> BTreeMap<String, Vec<&PointRow>> {
    let mut m: BTreeMap<String, Vec<&PointRow>> = BTreeMap::new();
    for r in rows {
        m.entry(r.batch.clone()).or_default().push(r);
    }
    m
}

/// Values of y at `at` per batch (batches whose frontier covers `at`).
pub fn values_at(rows: &[PointRow], x: &str, y: &str, at: f64) -> Vec<f64> {
    by_batch(rows)
        .values()
        .filter_map(|b| analytics::interpolate_at(&frontier_knots(b, x, y), at))
        .collect()
}

/// The x range over which some batch of `rows` has a frontier to read y at (the union of every
/// batch's frontier's x extent): `(lowest, highest)`, in x's unit; `None` without any frontier
/// point. What History and `report --history-at` name when `at` lies outside every frontier
/// (trial 19: "pick an x inside their range" without the range).
pub fn x_span(rows: &[PointRow], x: &str, y: &str) -> Option<(f64, f64)> {
    by_batch(rows)
        .values()
        .flat_map(|b| frontier_knots(b, x, y))
        .map(|(kx, _)| kx)
        .filter(|kx| kx.is_finite())
        .fold(None, |acc: Option<(f64, f64)>, v| {
            Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })
}

/// A point's workload: the model and `ISL/OSL`, or the model and scenario for agentic replays
/// (no fixed lengths). y at a given x compares only within one.
pub fn workload(r: &PointRow) -> String {
    if r.scenario == crate::query::AGENTIC_SCENARIO {
        format!("{} {}", r.model, r.scenario)
    } else {
        format!("{} {}/{}", r.model, r.isl, r.osl)
    }
}

/// The workloads of a side, sorted.
pub fn workloads(rows: &[PointRow]) -> Vec<String> {
    let set: std::collections::BTreeSet<String> = rows.iter().map(workload).collect();
    set.into_iter().collect()
}

/// Why sides A and B (`spec_a`, `spec_b`: their comma-separated filters) cannot be compared,
/// or `None`: a side pools points of several workloads into one curve (trial 9: 1k/1k and
/// 8k/1k points compared as one), or the sides are of different workloads while neither side's
/// filters name one (`model`, `isl`, `osl`, `scenario`), which would compare across them by
/// accident.
/// `how` is the syntax the caller's shared filters take, which the advice quotes (trial 16:
/// the HTTP API's error quoted the CLI's `-f`).
pub fn pooled_workloads(
    a: &[PointRow],
    b: &[PointRow],
    spec_a: &str,
    spec_b: &str,
    how: FilterSyntax,
) -> Option<String> {
    let (one, scenario) = match how {
        FilterSyntax::Cli => ("-f model=… -f isl=… -f osl=…", "-f scenario=…"),
        FilterSyntax::Query => ("&model=…&isl=…&osl=…", "&scenario=…"),
    };
    for (name, spec, rows) in [("A", spec_a, a), ("B", spec_b, b)] {
        let w = workloads(rows);
        if w.len() > 1 {
            return Some(format!(
                "side {name} ({spec}) pools points of {} workloads ({}): compare one, e.g. \
                 `{one}` or `{scenario}`",
                w.len(),
                w.join(", ")
            ));
        }
    }
    let names = |spec: &str| {
        spec.split(',').any(|p| {
            let k = p.split('=').next().unwrap_or("").trim();
            matches!(k, "model" | "isl" | "osl" | "scenario")
        })
    };
    let (wa, wb) = (workloads(a), workloads(b));
    if !wa.is_empty() && !wb.is_empty() && wa != wb && !names(spec_a) && !names(spec_b) {
        return Some(format!(
            "A is {} and B is {}: compare one workload (`{one}`), or name it in the sides \
             (`model=…,isl=…`) to compare across them on purpose",
            wa[0], wb[0]
        ));
    }
    None
}

/// Why side `name` (its filters `spec`, its counted `rows`) cannot be one side of a comparison,
/// or `None`: its batches come from servers with different settings (different
/// [`PointRow::server_fingerprint`]s), so they are not repeats of one configuration and their
/// mean would blend them (trial of issue 39 §5: one mean over sims with max_num_seqs 8/16/256,
/// time scales 1 and 8 and a fault sim). The reason names each server by the settings on which
/// they differ ([`crate::query::settings_labels`]) with its batches (at most 3, then `…`), and
/// how to narrow the side to one.
pub fn pooled_servers(name: &str, spec: &str, rows: &[PointRow]) -> Option<String> {
    let mut servers: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut batches: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for r in rows {
        servers
            .entry(r.server_fingerprint.clone())
            .or_insert_with(|| r.server_settings.clone());
        batches
            .entry(r.server_fingerprint.as_str())
            .or_default()
            .insert(r.batch.as_str());
    }
    if servers.len() < 2 {
        return None;
    }
    let labels = crate::query::settings_labels(&servers);
    let each: Vec<String> = labels
        .iter()
        .map(|(fp, label)| {
            let b = &batches[fp.as_str()];
            let mut shown: Vec<String> = (b.iter().take(3))
                .map(|x| inferbench_core::text::batch_label(x))
                .collect();
            if b.len() > 3 {
                shown.push("…".into());
            }
            format!("{label} (batch {})", shown.join(", "))
        })
        .collect();
    let first_batch = batches.values().next().and_then(|b| b.iter().next());
    let example = first_batch.map_or(String::new(), |b| {
        let comma = if spec.trim().is_empty() { "" } else { "," };
        format!(
            ", e.g. `{spec}{comma}batch={}`",
            inferbench_core::text::batch_label(b)
        )
    });
    Some(format!(
        "side {name} ({spec}) pools batches from {} servers with different settings, which are \
         not repeats of one configuration: {}; narrow the side to one server's batches{example}, \
         or compare two of them as A and B",
        servers.len(),
        each.join("; ")
    ))
}

/// How a caller writes the filters both sides share, for advice in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterSyntax {
    /// `inferbench compare`'s repeatable `-f KEY=VALUE`.
    Cli,
    /// The HTTP API's query parameters beside `a` and `b` (`/api/compare?a=…&b=…&model=…`).
    Query,
}

/// One line of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    /// Target x (e.g. interactivity, tok/s/user).
    pub at: f64,
    /// Ratio A/B with its CI; `None` when a side has no value there.
    #[serde(skip)]
    pub ratio: Option<Ratio>,
    /// Mean of A's repeats at `at`, in the metric's unit (`None`: A has no value there).
    pub mean_a: Option<f64>,
    /// A's repeats with a value at `at`.
    pub n_a: usize,
    /// Mean of B's repeats at `at`, in the metric's unit (`None`: B has no value there).
    pub mean_b: Option<f64>,
    /// B's repeats with a value at `at`.
    pub n_b: usize,
    /// `mean_a / mean_b` (`None` when a side has no value).
    pub ratio_a_over_b: Option<f64>,
    /// Lower bound of the ratio's 95 % confidence interval ([`Ratio::ci95`]; `None` with fewer
    /// than 2 repeats on a side).
    pub ci95_low: Option<f64>,
    /// Upper bound of the ratio's 95 % confidence interval.
    pub ci95_high: Option<f64>,
}

/// Default targets when none are given: the low end, middle and high end of the x-range both
/// sides' frontiers cover (empty when they do not overlap).
pub fn default_targets(a: &[PointRow], b: &[PointRow], x: &str, y: &str) -> Vec<f64> {
    let range = |rows: &[PointRow]| -> Option<(f64, f64)> {
        let all: Vec<&PointRow> = rows.iter().collect();
        let k = frontier_knots(&all, x, y);
        Some((k.first()?.0, k.last()?.0))
    };
    let (Some((a0, a1)), Some((b0, b1))) = (range(a), range(b)) else {
        return Vec::new();
    };
    let (lo, hi) = (a0.max(b0), a1.min(b1));
    if lo > hi {
        return Vec::new();
    }
    if lo == hi {
        return vec![lo];
    }
    vec![lo, (lo + hi) / 2.0, hi]
}

/// Compares sides A and B at each target x.
pub fn compare(
    a: &[PointRow],
    b: &[PointRow],
    x: &str,
    y: &str,
    targets: &[f64],
) -> Vec<CompareRow> {
    targets
        .iter()
        .map(|&at| {
            let va = values_at(a, x, y, at);
            let vb = values_at(b, x, y, at);
            let ratio = analytics::compare_ratio(&va, &vb);
            let mean = |v: &[f64]| analytics::mean_var(v).map(|m| m.0);
            CompareRow {
                at,
                mean_a: mean(&va),
                n_a: va.len(),
                mean_b: mean(&vb),
                n_b: vb.len(),
                ratio_a_over_b: ratio.as_ref().map(|r| r.ratio),
                ci95_low: ratio.as_ref().and_then(|r| r.ci95.map(|c| c.0)),
                ci95_high: ratio.as_ref().and_then(|r| r.ci95.map(|c| c.1)),
                ratio,
            }
        })
        .collect()
}

/// History of y at fixed x for each group ([`PointRow::group`]): one value per batch, dated by
/// the batch's latest point and timed by its latest run start (when known), sorted by (date,
/// time, batch), flagged against the median of the previous
/// `window` values with a relative `threshold`.
pub fn history(
    rows: &[PointRow],
    x: &str,
    y: &str,
    at: f64,
    window: usize,
    threshold: f64,
) -> BTreeMap<String, Vec<HistoryPoint>> {
    let mut groups: BTreeMap<String, Vec<PointRow>> = BTreeMap::new();
    for r in rows {
        groups.entry(r.group()).or_default().push(r.clone());
    }
    let hib = better(y) == analytics::Better::Higher;
    groups
        .into_iter()
        .map(|(g, rs)| {
            // (date, time, batch, value): a batch dated by its latest point's day, timed by its
            // latest run start where the sources give one.
            type Entry = (String, Option<f64>, String, f64);
            let mut series: Vec<Entry> = by_batch(&rs)
                .into_iter()
                .filter_map(|(batch, b)| {
                    let date = b.iter().map(|r| r.date.clone()).max().unwrap_or_default();
                    let time = (b.iter().filter_map(|r| r.start_unix))
                        .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
                    analytics::interpolate_at(&frontier_knots(&b, x, y), at)
                        .map(|v| (date, time, batch, v))
                })
                .collect();
            series.sort_by(|p, q| {
                (&p.0, p.1.unwrap_or(0.0), &p.2)
                    .partial_cmp(&(&q.0, q.1.unwrap_or(0.0), &q.2))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let s: Vec<(String, f64)> = series.iter().map(|e| (e.0.clone(), e.3)).collect();
            let mut h = analytics::history_flags(&s, window, threshold, hib);
            for (p, (_, time, batch, _)) in h.iter_mut().zip(series) {
                p.batch = batch;
                p.time_unix = time;
            }
            (g, h)
        })
        .collect()
}
