//! The one analysis layer behind every view of y at a given x: which points count
//! ([`PointRow::counts`]), frontiers ([`mark_frontier`]), compare ([`compare_sides`]), history
//! at x ([`history_at`]), the TCO bars ([`tco_at`]) and capacity at an SLO ([`capacity_at`]). `inferbench report`/`compare` and the
//! dashboard's routes (`/api/v1/points`, `/compare`, `/history`, `/tco`) all call these and
//! only format what they return, so the API's numbers are the CLI's by construction (issue 39:
//! History and TCO answered an invalid point's 12,323 tok/s/GPU where `report --history-at`
//! said no batch reaches x).
//!
//! Every function takes the store's rows as selected ([`inferbench_store::Store::points`],
//! invalid points included) and `include_invalid`; invalid points count only with it.

use inferbench_core::analytics::{Better, HistoryPoint};
use inferbench_store::compare::{self, CompareRow};
use inferbench_store::query::{self, PointRow};

/// InferenceX's default interactivity for History and TCO, in tok/s/user (its pages open
/// there).
pub const DEFAULT_INTERACTIVITY: f64 = 35.0;

/// The x every view reads when none is asked for (`report`, `plot`, `compare`, the dashboard's
/// `/api/v1/points`, `/history`, `/tco`, `/compare`): AgentX's North-Star x
/// ([`query::NORTH_STAR_X`], p90 E2E-normalized interactivity, tok/s/user) when every row of
/// `rows` (the selection, as the store answered it) is agentic-coding, else median
/// interactivity (`median_intvty`, tok/s/user). The one rule (fresh tester of issue 39 §5,
/// item 1: History and TCO read an agentic database along `median_intvty` where `report
/// --history-at` read the North-Star x).
pub fn default_x(rows: &[PointRow]) -> &'static str {
    if !rows.is_empty() && rows.iter().all(|r| r.scenario == query::AGENTIC_SCENARIO) {
        query::NORTH_STAR_X
    } else {
        "median_intvty"
    }
}

/// The rows of `rows` that count ([`PointRow::counts`]), cloned, and how many were left out
/// as invalid.
pub fn counted(rows: &[PointRow], include_invalid: bool) -> (Vec<PointRow>, usize) {
    compare::keep_valid(rows.to_vec(), include_invalid)
}

/// Marks each row's `frontier` flag per group over the points that count
/// ([`query::mark_frontier_with`]): what `report`, `/api/v1/points` and the run page show.
pub fn mark_frontier(rows: &mut [PointRow], x: &str, y: &str, include_invalid: bool) {
    query::mark_frontier_with(rows, x, y, include_invalid);
}

/// The x range (lowest, highest; x's unit) over which some batch of the counted rows has a
/// frontier ([`compare::x_span`] over [`counted`] rows); `None` without one.
pub fn x_range(rows: &[PointRow], x: &str, y: &str, include_invalid: bool) -> Option<(f64, f64)> {
    compare::x_span(&counted(rows, include_invalid).0, x, y)
}

/// The x a History or TCO view opens at when none is given: [`DEFAULT_INTERACTIVITY`] when x is
/// an interactivity metric (tok/s/user) and `range` covers it, else the middle of `range`;
/// `None` without a range.
pub fn default_at(x: &str, range: Option<(f64, f64)>) -> Option<f64> {
    let (lo, hi) = range?;
    if x.ends_with("intvty") && (lo..=hi).contains(&DEFAULT_INTERACTIVITY) {
        Some(DEFAULT_INTERACTIVITY)
    } else {
        Some((lo + hi) / 2.0)
    }
}

/// Where History and TCO read y: an x given in x's unit, or [`At::Auto`], the view's default
/// x ([`default_at`] over the counted points). `report --history-at` and the API's `at=` parse
/// it with the same [`std::str::FromStr`] (fresh tester of issue 39 §5, item 5: the API
/// offered `at=auto`, the CLI refused it as an invalid float).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum At {
    /// [`default_at`] over the counted points' x range ([`resolve_at`]).
    Auto,
    /// This x, finite, in x's unit.
    X(f64),
}

/// What `auto` means, for help texts and errors.
pub const AUTO_AT_HELP: &str = "`auto` (35 tok/s/user where the counted points' frontiers \
                                reach it, else the middle of their x range)";

impl std::str::FromStr for At {
    type Err = String;

    /// `auto`, or a finite number; else an error naming both forms (the caller names the
    /// value: `--history-at`'s parser, the API's `` `at=VALUE`: ``).
    fn from_str(s: &str) -> Result<At, String> {
        let t = s.trim();
        if t == "auto" {
            return Ok(At::Auto);
        }
        match t.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(At::X(x)),
            _ => Err(format!(
                "expected a number (the x, in its unit) or {AUTO_AT_HELP}"
            )),
        }
    }
}

/// The x `at` names over `rows` (x and y metrics, validity as [`counted`]): the given x, or for
/// [`At::Auto`] [`default_at`] of [`x_range`]; `None` when `auto` finds no frontier.
pub fn resolve_at(
    at: At,
    rows: &[PointRow],
    x: &str,
    y: &str,
    include_invalid: bool,
) -> Option<f64> {
    match at {
        At::X(v) => Some(v),
        At::Auto => default_at(x, x_range(rows, x, y, include_invalid)),
    }
}

/// The GPU time a group's points spent (issue 43), as our runner recorded it per point
/// ([`PointRow::gpu_seconds`]: the row's GPUs × its wall time plus its share of its engine's
/// launch and stop; modelled time for sim rows). Every selected point counts, valid or not: an
/// invalid or failed point held its GPUs too.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuSeconds {
    /// Sum of the recorded GPU-seconds, in GPU·s; `None` when no point recorded any (imports,
    /// points stored before schema version 6), never a 0 standing in for unknown.
    pub total: Option<f64>,
    /// Points with a recorded figure.
    pub recorded: usize,
    /// Points without one (left out of `total`).
    pub unknown: usize,
}

/// [`GpuSeconds`] of `rows` (all of them, whatever their validity).
pub fn gpu_seconds_of<'a>(rows: impl IntoIterator<Item = &'a PointRow>) -> GpuSeconds {
    let mut g = GpuSeconds::default();
    for r in rows {
        match r.gpu_seconds {
            Some(s) => {
                g.total = Some(g.total.unwrap_or(0.0) + s);
                g.recorded += 1;
            }
            None => g.unknown += 1,
        }
    }
    g
}

/// [`GpuSeconds`] per group ([`PointRow::group`]) of `rows`, in the rows' order: what `report`
/// prints under its table and in `--format json`, and `/api/v1/history` and `/api/v1/tco`
/// answer per group.
pub fn gpu_seconds_by_group(rows: &[PointRow]) -> Vec<(String, GpuSeconds)> {
    group_order(rows)
        .into_iter()
        .map(|name| {
            let g = gpu_seconds_of(rows.iter().filter(|r| r.group() == name));
            (name, g)
        })
        .collect()
}

/// One group of a [`History`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryGroup {
    /// [`PointRow::group`].
    pub name: String,
    /// y at x per batch whose frontier reaches x, oldest first
    /// ([`compare::history`] over the counted points).
    pub points: Vec<HistoryPoint>,
    /// The group's points, all of them.
    pub total: usize,
    /// Its invalid points (left out unless `include_invalid`).
    pub invalid: usize,
    /// Why its invalid points are invalid ([`invalid_reasons`]); `None` when none is.
    pub invalid_reason: Option<String>,
    /// Its batches with a counted point.
    pub batches: usize,
    /// Where its counted points' frontiers lie ([`compare::x_span`]), `None` without one.
    pub x_range: Option<(f64, f64)>,
    /// The GPU time all its points spent ([`gpu_seconds_of`]).
    pub gpu_seconds: GpuSeconds,
}

impl HistoryGroup {
    /// `report --history-at`'s note for a group whose every point is invalid: how many, and
    /// the stored reason(s) ([`HistoryGroup::invalid_reason`]; trial of issue 39 §5: a fixed
    /// "AgentX replays shorter than 900 s or cut short" where a sim's time scale was the
    /// reason).
    pub fn all_invalid_note(&self) -> String {
        let why = self.invalid_reason.as_deref().unwrap_or(NO_REASON_STORED);
        format!(
            "(every point of this group is invalid ({}: {why}): none counts; --include-invalid \
             lets them)",
            self.invalid
        )
    }
}

/// y at one x per group and batch, with regression flags: `report --history-at` and
/// `/api/v1/history`.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// Every group of the selection in the rows' order, also one whose points are all
    /// invalid (its `points` empty).
    pub groups: Vec<HistoryGroup>,
    /// [`x_range`] of the selection (counted points only).
    pub x_range: Option<(f64, f64)>,
}

/// [`History`] of `rows` at `x = at` (y per batch on its frontier, monotone spline, never
/// extrapolated), each value flagged against the median of the `window` previous ones with the
/// relative `threshold` (0.05 = 5 %).
pub fn history_at(
    rows: &[PointRow],
    x: &str,
    y: &str,
    at: f64,
    window: usize,
    threshold: f64,
    include_invalid: bool,
) -> History {
    let (kept, _) = counted(rows, include_invalid);
    let mut h = compare::history(&kept, x, y, at, window, threshold);
    let groups = group_order(rows)
        .into_iter()
        .map(|name| {
            let of: Vec<&PointRow> = rows.iter().filter(|r| r.group() == name).collect();
            let mine: Vec<PointRow> = (of.iter())
                .filter(|r| r.counts(include_invalid))
                .map(|r| (*r).clone())
                .collect();
            let batches: std::collections::BTreeSet<&str> =
                mine.iter().map(|r| r.batch.as_str()).collect();
            HistoryGroup {
                points: h.remove(&name).unwrap_or_default(),
                total: of.len(),
                invalid: of.iter().filter(|r| !r.valid).count(),
                invalid_reason: invalid_reasons(of.iter().copied()),
                batches: batches.len(),
                x_range: compare::x_span(&mine, x, y),
                gpu_seconds: gpu_seconds_of(of.iter().copied()),
                name,
            }
        })
        .collect();
    History {
        groups,
        x_range: compare::x_span(&kept, x, y),
    }
}

/// One frame of History's replay over time (issue 42): the frontier of each group as it was
/// on `date`, from the counted points dated up to that day.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayFrame {
    /// The frame's UTC date, `YYYY-MM-DD`.
    pub date: String,
    /// `(group, knots)` for each group with a frontier by then, in the rows' group order; the
    /// knots `(x, y)` sorted by x, in x's and y's units ([`compare::frontier_knots`] over the
    /// group's counted points of every batch dated up to `date`).
    pub groups: Vec<(String, Vec<(f64, f64)>)>,
}

/// The replay over time of `rows`' frontiers in (x, y): one [`ReplayFrame`] per distinct
/// date of the points that count ([`counted`]), oldest first; points without a date are left
/// out. The History page plays these frames; empty when no dated point counts.
pub fn replay_frames(
    rows: &[PointRow],
    x: &str,
    y: &str,
    include_invalid: bool,
) -> Vec<ReplayFrame> {
    let (kept, _) = counted(rows, include_invalid);
    let dates: std::collections::BTreeSet<&str> = (kept.iter())
        .map(|r| r.date.as_str())
        .filter(|d| !d.is_empty())
        .collect();
    let order = group_order(&kept);
    dates
        .into_iter()
        .map(|date| {
            let groups = (order.iter())
                .filter_map(|name| {
                    let upto: Vec<&PointRow> = (kept.iter())
                        .filter(|r| !r.date.is_empty() && r.date.as_str() <= date)
                        .filter(|r| &r.group() == name)
                        .collect();
                    let knots = compare::frontier_knots(&upto, x, y);
                    (!knots.is_empty()).then(|| (name.clone(), knots))
                })
                .collect();
            ReplayFrame {
                date: date.to_string(),
                groups,
            }
        })
        .collect()
}

/// What the stored reasons of the invalid points among `rows` say, for a line that names why
/// they were left out: the first point's reason (`invalid_reason`, or `invalid (no reason
/// stored with this point)` for one stored before reasons were kept), then `; and N more
/// reason(s)` when the others differ. `None` when every point is valid (trial of issue 39 §5:
/// `report --history-at` gave a fixed list of causes where the stored reason was another).
pub fn invalid_reasons<'a>(rows: impl IntoIterator<Item = &'a PointRow>) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for r in rows.into_iter().filter(|r| !r.valid) {
        let why = (r.invalid_reason.as_deref()).unwrap_or(NO_REASON_STORED);
        if !seen.contains(&why) {
            seen.push(why);
        }
    }
    let first = seen.first()?;
    Some(match seen.len() - 1 {
        0 => first.to_string(),
        n => format!("{first}; and {}", inferbench_core::count(n, "more reason")),
    })
}

/// An invalid point's reason where none was stored (points stored before schema version 4).
pub const NO_REASON_STORED: &str = "invalid (no reason stored with this point)";

/// The distinct groups of `rows`, in the rows' order (the store's).
fn group_order(rows: &[PointRow]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for r in rows {
        let g = r.group();
        if !order.contains(&g) {
            order.push(g);
        }
    }
    order
}

/// One bar of the TCO view: a group's y at x.
#[derive(Debug, Clone, PartialEq)]
pub struct TcoBar {
    /// [`PointRow::group`].
    pub group: String,
    /// InferenceX's published points (an imported dump), not a local run.
    pub public: bool,
    /// Mean over the batches whose frontier reaches x of their y there, in y's unit.
    pub value: f64,
    /// How many batches the mean is over.
    pub batches: usize,
    /// The GPU time all the group's points spent ([`gpu_seconds_of`]).
    pub gpu_seconds: GpuSeconds,
}

/// Every group's y at one x: `/api/v1/tco`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tco {
    /// Groups with a value, best first (highest for higher-is-better y, else lowest).
    pub bars: Vec<TcoBar>,
    /// Groups whose counted frontiers do not reach x (all-invalid groups included).
    pub unreached: Vec<String>,
    /// Groups left without a counted point: every point invalid (a subset of `unreached`).
    pub invalid_only: Vec<String>,
    /// Invalid points left out (0 with `include_invalid`).
    pub invalid: usize,
    /// Why those were invalid ([`invalid_reasons`]); `None` when none was left out.
    pub invalid_reason: Option<String>,
    /// y's direction.
    pub better: Better,
    /// [`x_range`] of the selection (counted points only).
    pub x_range: Option<(f64, f64)>,
    /// Every group's GPU time ([`gpu_seconds_by_group`]), bars and unreached alike, in the
    /// rows' order.
    pub gpu_seconds: Vec<(String, GpuSeconds)>,
}

/// [`Tco`] of `rows` at `x = at`: per group the mean over batches of y on each batch's
/// frontier at `at` (the same values as [`history_at`] gives per batch).
pub fn tco_at(rows: &[PointRow], x: &str, y: &str, at: f64, include_invalid: bool) -> Tco {
    let better = query::better(y);
    let gpu_seconds = gpu_seconds_by_group(rows);
    let mut bars = Vec::new();
    let (mut unreached, mut invalid_only) = (Vec::new(), Vec::new());
    for g in group_order(rows) {
        let of: Vec<PointRow> = (rows.iter())
            .filter(|r| r.group() == g && r.counts(include_invalid))
            .cloned()
            .collect();
        if of.is_empty() {
            invalid_only.push(g.clone());
        }
        let v = compare::values_at(&of, x, y, at);
        if v.is_empty() {
            unreached.push(g);
            continue;
        }
        bars.push(TcoBar {
            public: of[0].source_kind == query::PUBLIC_SOURCE,
            value: v.iter().sum::<f64>() / v.len() as f64,
            batches: v.len(),
            gpu_seconds: (gpu_seconds.iter())
                .find(|(name, _)| *name == g)
                .map(|(_, s)| *s)
                .unwrap_or_default(),
            group: g,
        });
    }
    bars.sort_by(|a, b| {
        let o = a.value.total_cmp(&b.value);
        if better == Better::Higher {
            o.reverse()
        } else {
            o
        }
    });
    let left_out: Vec<&PointRow> = rows.iter().filter(|r| !r.counts(include_invalid)).collect();
    Tco {
        bars,
        unreached,
        invalid_only,
        invalid: left_out.len(),
        invalid_reason: invalid_reasons(left_out),
        better,
        x_range: x_range(rows, x, y, include_invalid),
        gpu_seconds,
    }
}

/// How a group's [`GroupCapacity`] was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityStatus {
    /// The SLO's bound lies inside the group's frontier: y read off it there (as TCO reads y
    /// at x), the mean over the batches that reach it.
    Interpolated,
    /// Every counted point meets the SLO: the bound lies beyond the measured range, and the
    /// values are the best measured (a lower bound; not extrapolated).
    AllMeet,
    /// No counted point meets the SLO: the bound lies beyond the measured range the other
    /// way; no value.
    NoneMeet,
    /// Some points meet and some do not, but no batch's frontier reaches the bound (the
    /// batches' ranges do not overlap it): the best measured meeting values.
    Measured,
    /// No counted point has the SLO's metric (or every point is invalid).
    NoPoints,
}

impl CapacityStatus {
    /// The JSON / CSV name (`interpolated`, `all_meet`, `none_meet`, `measured`,
    /// `no_points`).
    pub fn as_str(self) -> &'static str {
        match self {
            CapacityStatus::Interpolated => "interpolated",
            CapacityStatus::AllMeet => "all_meet",
            CapacityStatus::NoneMeet => "none_meet",
            CapacityStatus::Measured => "measured",
            CapacityStatus::NoPoints => "no_points",
        }
    }
}

/// One group's capacity at an SLO ([`capacity_at`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupCapacity {
    /// [`PointRow::group`].
    pub group: String,
    /// How the values were found.
    pub status: CapacityStatus,
    /// The most y (tok/s/GPU for `tput_per_gpu`) at the SLO; `None` when none meets.
    pub y: Option<f64>,
    /// The most concurrent users per GPU (concurrency / GPUs) at the SLO; `None` when none
    /// meets.
    pub users_per_gpu: Option<f64>,
    /// Batches the interpolated values are a mean over (0 otherwise).
    pub batches: usize,
    /// Where the group's counted frontiers lie in the SLO's metric ([`compare::x_span`]).
    pub x_range: Option<(f64, f64)>,
}

/// The key of the users-per-GPU curve [`capacity_at`] reads (concurrency / GPUs of a point).
pub const USERS_PER_GPU: &str = "users_per_gpu";

/// Why a capacity question was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum CapacityError {
    /// The SLO bounds its metric from the side that gets worse with load (`median_intvty<=35`,
    /// `p99_ttft>=2`): no largest load answers it.
    WrongDirection(String),
}

impl std::fmt::Display for CapacityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CapacityError::WrongDirection(slo) => write!(
                f,
                "capacity at `{slo}`: the SLO must bound the metric from its better side (>= for \
                 higher-is-better metrics such as interactivity, <= for latencies)"
            ),
        }
    }
}

impl std::error::Error for CapacityError {}

/// "Max y per GPU and max concurrent users per GPU at this SLO" per group, from the stored
/// points: `report --capacity` and `/api/v1/tco?slo=` (issue 43). Per group over its counted
/// points (invalid ones only with `include_invalid`): where the SLO's bound lies inside the
/// group's frontier of (SLO metric, y), y and users per GPU are read off each batch's frontier
/// there and averaged over the batches ([`CapacityStatus::Interpolated`], the same curve as
/// [`tco_at`]); outside it the answer says so ([`CapacityStatus::AllMeet`] with the best
/// measured values as a lower bound, [`CapacityStatus::NoneMeet`]) instead of extrapolating.
/// Groups in the rows' order. Errors: [`CapacityError`].
pub fn capacity_at(
    rows: &[PointRow],
    slo: &inferbench_core::slo::Slo,
    y: &str,
    include_invalid: bool,
) -> Result<Vec<GroupCapacity>, CapacityError> {
    use inferbench_core::slo::SloOp;
    let x = slo.metric.as_str();
    let good_side = match query::better(x) {
        Better::Higher => matches!(slo.op, SloOp::Ge | SloOp::Gt),
        Better::Lower => matches!(slo.op, SloOp::Le | SloOp::Lt),
    };
    if !good_side {
        return Err(CapacityError::WrongDirection(slo.to_string()));
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let best = |v: &mut dyn Iterator<Item = f64>, b: Better| {
        v.filter(|x| x.is_finite())
            .fold(None, |acc: Option<f64>, x| {
                Some(acc.map_or(x, |a| match b {
                    Better::Higher => a.max(x),
                    Better::Lower => a.min(x),
                }))
            })
    };
    let mut out = Vec::new();
    for g in group_order(rows) {
        let of: Vec<PointRow> = (rows.iter())
            .filter(|r| r.group() == g && r.counts(include_invalid))
            .filter(|r| r.metrics.get(x).is_some_and(|v| v.is_finite()))
            .cloned()
            .map(|mut r| {
                if r.gpus > 0 {
                    r.metrics
                        .insert(USERS_PER_GPU.into(), r.conc as f64 / r.gpus as f64);
                }
                r
            })
            .collect();
        let x_range = compare::x_span(&of, x, y);
        let ys = compare::values_at(&of, x, y, slo.value);
        let us = compare::values_at(&of, x, USERS_PER_GPU, slo.value);
        let meeting: Vec<&PointRow> = of
            .iter()
            .filter(|r| slo.met_by(r.metrics.get(x).copied()))
            .collect();
        let measured = |rs: &[&PointRow]| {
            (
                best(
                    &mut rs.iter().filter_map(|r| r.metrics.get(y).copied()),
                    query::better(y),
                ),
                best(
                    &mut rs
                        .iter()
                        .filter_map(|r| r.metrics.get(USERS_PER_GPU).copied()),
                    Better::Higher,
                ),
            )
        };
        let (status, yv, uv, batches) = if of.is_empty() {
            (CapacityStatus::NoPoints, None, None, 0)
        } else if !ys.is_empty() {
            (CapacityStatus::Interpolated, mean(&ys), mean(&us), ys.len())
        } else if meeting.is_empty() {
            (CapacityStatus::NoneMeet, None, None, 0)
        } else if meeting.len() == of.len() {
            let (yv, uv) = measured(&meeting);
            (CapacityStatus::AllMeet, yv, uv, 0)
        } else {
            let (yv, uv) = measured(&meeting);
            (CapacityStatus::Measured, yv, uv, 0)
        };
        out.push(GroupCapacity {
            group: g,
            status,
            y: yv,
            users_per_gpu: uv,
            batches,
            x_range,
        });
    }
    Ok(out)
}

/// Two sides compared at matched x: `inferbench compare` and `/api/v1/compare`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Side A's counted points.
    pub a: Vec<PointRow>,
    /// Side B's counted points.
    pub b: Vec<PointRow>,
    /// Side A's points left out as invalid.
    pub a_invalid: usize,
    /// Side B's points left out as invalid.
    pub b_invalid: usize,
    /// The x values compared: `at` as given, else the low end, middle and high end of the
    /// range both sides' frontiers cover ([`compare::default_targets`]; empty without overlap).
    pub targets: Vec<f64>,
    /// One row per target ([`compare::compare`]); empty when `refused`.
    pub rows: Vec<CompareRow>,
    /// Why the sides are not compared, the one check of both `inferbench compare` (an error)
    /// and `/api/v1/compare` (400): with points on both sides, a side that pools workloads
    /// or two sides of different workloads not named in their filters
    /// ([`compare::pooled_workloads`]), then a side whose batches come from servers with
    /// different settings, not repeats of one configuration ([`compare::pooled_servers`]).
    pub refused: Option<String>,
}

/// Compares sides `a` and `b` (the store's rows of each, selected by the filters `specs`) at
/// `at` (or the default targets). A side is one workload on one server (its batches are its
/// repeats only when they share the server's settings): a side that pools workloads or servers
/// is [`Comparison::refused`] (no rows), in the words of the first check that fails; `how`
/// is how the caller's filters are written, for the advice in that reason.
pub fn compare_sides(
    (a, b): (Vec<PointRow>, Vec<PointRow>),
    specs: (&str, &str),
    x: &str,
    y: &str,
    at: &[f64],
    include_invalid: bool,
    how: compare::FilterSyntax,
) -> Comparison {
    let (a, a_invalid) = compare::keep_valid(a, include_invalid);
    let (b, b_invalid) = compare::keep_valid(b, include_invalid);
    let workloads = (!a.is_empty() && !b.is_empty())
        .then(|| compare::pooled_workloads(&a, &b, specs.0, specs.1, how))
        .flatten();
    let refused = workloads
        .or_else(|| compare::pooled_servers("A", specs.0, &a))
        .or_else(|| compare::pooled_servers("B", specs.1, &b));
    if refused.is_some() {
        return Comparison {
            a,
            b,
            a_invalid,
            b_invalid,
            targets: Vec::new(),
            rows: Vec::new(),
            refused,
        };
    }
    let targets = if at.is_empty() {
        compare::default_targets(&a, &b, x, y)
    } else {
        at.to_vec()
    };
    let rows = compare::compare(&a, &b, x, y, &targets);
    Comparison {
        a,
        b,
        a_invalid,
        b_invalid,
        targets,
        rows,
        refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(batch: &str, conc: i64, x: f64, y: f64, valid: bool) -> PointRow {
        let mut r = PointRow {
            model: "llama3.1-8b".into(),
            hardware: "h100".into(),
            framework: "vllm".into(),
            precision: "bf16".into(),
            spec_decoding: "none".into(),
            tp: 1,
            gpus: 1,
            scenario: "fixed_seq_len".into(),
            isl: 1024,
            osl: 1024,
            source_kind: "inferbench".into(),
            ..PointRow::default()
        };
        r.batch = batch.into();
        r.conc = conc;
        r.date = "2026-12-01".into();
        r.valid = valid;
        r.invalid_reason = (!valid).then(|| "server fell behind".to_string());
        r.metrics.insert("median_intvty".into(), x);
        r.metrics.insert("tput_per_gpu".into(), y);
        r
    }

    /// A batch whose conc-64 point is invalid and the only one reaching x = 20: counted only
    /// with `include_invalid`, in history, TCO, compare and x ranges alike.
    fn batch() -> Vec<PointRow> {
        vec![
            row("b1", 4, 100.0, 1000.0, true),
            row("b1", 16, 60.0, 3000.0, true),
            row("b1", 64, 20.0, 12323.0, false),
        ]
    }

    /// GPU-seconds per group (issue 43): every point counts, the invalid one too (it held its
    /// GPUs); an unrecorded point is counted apart, not as 0; a group with none recorded has no
    /// total. History and TCO carry the same figures.
    #[test]
    fn gpu_seconds_per_group_sum_every_recorded_point() {
        let mut rows = batch();
        rows[0].gpu_seconds = Some(120.5);
        rows[2].gpu_seconds = Some(480.25);
        let mut other = row("b2", 4, 90.0, 900.0, true);
        other.hardware = "h200".into();
        rows.push(other);
        let by = gpu_seconds_by_group(&rows);
        assert_eq!(
            by,
            [
                (
                    "llama3.1-8b 1024/1024 h100_vllm_bf16".to_string(),
                    GpuSeconds {
                        total: Some(600.75),
                        recorded: 2,
                        unknown: 1
                    }
                ),
                (
                    "llama3.1-8b 1024/1024 h200_vllm_bf16".to_string(),
                    GpuSeconds {
                        total: None,
                        recorded: 0,
                        unknown: 1
                    }
                ),
            ]
        );
        let h = history_at(&rows, "median_intvty", "tput_per_gpu", 80.0, 3, 0.05, false);
        let from_history: Vec<(String, GpuSeconds)> = (h.groups.iter())
            .map(|g| (g.name.clone(), g.gpu_seconds))
            .collect();
        assert_eq!(from_history, by);
        let t = tco_at(&rows, "median_intvty", "tput_per_gpu", 80.0, false);
        assert_eq!(t.gpu_seconds, by);
        let bar = (t.bars.iter()).find(|b| b.group == by[0].0).unwrap();
        assert_eq!(bar.gpu_seconds, by[0].1);
    }

    #[test]
    fn invalid_points_count_only_when_asked() {
        let rows = batch();
        let h = history_at(&rows, "median_intvty", "tput_per_gpu", 30.0, 3, 0.05, false);
        assert_eq!(h.groups.len(), 1);
        assert!(h.groups[0].points.is_empty());
        assert_eq!((h.groups[0].total, h.groups[0].invalid), (3, 1));
        assert_eq!(h.x_range, Some((60.0, 100.0)));
        let t = tco_at(&rows, "median_intvty", "tput_per_gpu", 30.0, false);
        assert!(t.bars.is_empty());
        assert_eq!(t.unreached.len(), 1);
        assert!(t.invalid_only.is_empty());
        let c = compare_sides(
            (rows.clone(), rows.clone()),
            ("hw=h100", "hw=h100"),
            "median_intvty",
            "tput_per_gpu",
            &[30.0],
            false,
            compare::FilterSyntax::Cli,
        );
        assert_eq!((c.rows[0].n_a, c.a_invalid), (0, 1));

        let h = history_at(&rows, "median_intvty", "tput_per_gpu", 20.0, 3, 0.05, true);
        assert_eq!(h.groups[0].points[0].value, 12323.0);
        assert_eq!(h.x_range, Some((20.0, 100.0)));
        let t = tco_at(&rows, "median_intvty", "tput_per_gpu", 20.0, true);
        assert_eq!(t.bars[0].value, 12323.0);
    }

    /// Trial of issue 39 §5 (F, D): an all-invalid group's note gave a fixed list of causes;
    /// it gives the stored reason, the first and how many more when they differ, and the TCO
    /// answer counts the points it left out with the same words.
    #[test]
    fn invalid_groups_say_their_stored_reasons() {
        let mut rows = batch();
        let scaled = "the sim ran at --time-scale 8";
        for r in &mut rows {
            r.valid = false;
            r.invalid_reason = Some(scaled.into());
        }
        let (x, y) = ("median_intvty", "tput_per_gpu");
        let h = history_at(&rows, x, y, 30.0, 3, 0.05, false);
        assert_eq!(
            h.groups[0].all_invalid_note(),
            "(every point of this group is invalid (3: the sim ran at --time-scale 8): none \
             counts; --include-invalid lets them)"
        );
        rows[1].invalid_reason = Some("cut short: interrupted".into());
        rows[2].invalid_reason = None;
        let h = history_at(&rows, x, y, 30.0, 3, 0.05, false);
        assert_eq!(
            h.groups[0].invalid_reason.as_deref(),
            Some("the sim ran at --time-scale 8; and 2 more reasons")
        );
        let t = tco_at(&rows, x, y, 30.0, false);
        assert_eq!(
            (t.invalid, t.invalid_reason.as_deref()),
            (3, Some("the sim ran at --time-scale 8; and 2 more reasons"))
        );
        assert_eq!(
            invalid_reasons(&rows[2..]).as_deref(),
            Some("invalid (no reason stored with this point)")
        );
        // Counted, none is left out.
        let t = tco_at(&rows, x, y, 30.0, true);
        assert_eq!((t.invalid, t.invalid_reason), (0, None));
        assert_eq!(invalid_reasons(&batch()[..2]), None);
    }

    /// A side's batches are repeats only on one server (trial of issue 39 §5: one mean over
    /// sims with max_num_seqs 8/16/256): a side that pools servers is refused, naming the
    /// settings on which they differ and each one's batches; one server per side compares.
    #[test]
    fn compare_refuses_a_side_that_pools_servers() {
        use std::collections::BTreeMap;
        let on = |batch: &str, fp: &str, seqs: &str, scale: &str| -> Vec<PointRow> {
            let settings: BTreeMap<String, String> = [
                ("sim.max_num_seqs".to_string(), seqs.to_string()),
                ("sim.time_scale".to_string(), scale.to_string()),
                ("sim.hardware".to_string(), "h100".to_string()),
            ]
            .into();
            let mut rows = batch_of(batch);
            for r in &mut rows {
                r.server_fingerprint = fp.into();
                r.server_settings = settings.clone();
            }
            rows
        };
        let a: Vec<PointRow> = [
            on("runs/s8", "00000000000000a8", "8", "1"),
            on("runs/s256", "0000000000000256", "256", "8"),
            on("runs/s256b", "0000000000000256", "256", "8"),
        ]
        .concat();
        let b = on("runs/s16", "0000000000000016", "16", "1");
        let (x, y) = ("median_intvty", "tput_per_gpu");
        let c = compare_sides(
            (a.clone(), b.clone()),
            ("hw=h100", "batch=s16"),
            x,
            y,
            &[],
            false,
            compare::FilterSyntax::Cli,
        );
        assert_eq!(
            c.refused.as_deref(),
            Some(
                "side A (hw=h100) pools batches from 2 servers with different settings, which \
                 are not repeats of one configuration: max_num_seqs=8, time_scale=1 (batch \
                 runs/s8); max_num_seqs=256, time_scale=8 (batch runs/s256, runs/s256b); narrow \
                 the side to one server's batches, e.g. `hw=h100,batch=runs/s8`, or compare \
                 two of them as A and B"
            )
        );
        assert!(c.rows.is_empty() && c.targets.is_empty());
        // B pooling is said as B's.
        let c = compare_sides(
            (b.clone(), a.clone()),
            ("", "hw=h100"),
            x,
            y,
            &[],
            false,
            compare::FilterSyntax::Cli,
        );
        assert!(c
            .refused
            .unwrap()
            .starts_with("side B (hw=h100) pools batches from 2"));
        // One server per side (its two batches are repeats): compared.
        let one: Vec<PointRow> = a.into_iter().filter(|r| r.batch != "runs/s8").collect();
        let c = compare_sides(
            (one, b),
            ("", ""),
            x,
            y,
            &[60.0],
            false,
            compare::FilterSyntax::Cli,
        );
        assert_eq!(c.refused, None);
        assert_eq!((c.rows[0].n_a, c.rows[0].n_b), (2, 1));
    }

    /// Fresh tester of issue 39 §5, item 6: a side pooling two workloads on two servers was
    /// "pools 2 workloads" in `inferbench compare` and "pools batches from 2 servers" in the
    /// API, each caller checking in its own order. One check here: workloads first, then
    /// servers, in the caller's filter syntax.
    #[test]
    fn a_side_pooling_workloads_and_servers_is_refused_by_one_check() {
        let mut a = batch_of("runs/a");
        let mut other = batch_of("runs/a2");
        for r in &mut other {
            r.isl = 8192;
            r.server_fingerprint = "00000000000000ff".into();
        }
        a.extend(other);
        let b = batch_of("runs/b");
        let (x, y) = ("median_intvty", "tput_per_gpu");
        let refused = |how| {
            compare_sides(
                (a.clone(), b.clone()),
                ("precision=bf16", "precision=fp8"),
                x,
                y,
                &[],
                false,
                how,
            )
            .refused
        };
        assert_eq!(
            refused(compare::FilterSyntax::Cli).as_deref(),
            Some(
                "side A (precision=bf16) pools points of 2 workloads (llama3.1-8b 1024/1024, \
                 llama3.1-8b 8192/1024): compare one, e.g. `-f model=… -f isl=… -f osl=…` or \
                 `-f scenario=…`"
            )
        );
        assert_eq!(
            refused(compare::FilterSyntax::Query).as_deref(),
            Some(
                "side A (precision=bf16) pools points of 2 workloads (llama3.1-8b 1024/1024, \
                 llama3.1-8b 8192/1024): compare one, e.g. `&model=…&isl=…&osl=…` or \
                 `&scenario=…`"
            )
        );
    }

    /// [`batch`]'s points under another batch name.
    fn batch_of(name: &str) -> Vec<PointRow> {
        let mut rows = batch();
        for r in &mut rows {
            r.batch = name.into();
        }
        rows
    }

    /// The curve history, TCO and compare read y off is the frontier `report` and the API mark:
    /// for AgentX rows shown against another x, North-Star gated (B is on the plain Pareto
    /// frontier in (median interactivity, y) but not among the North-Star winners).
    #[test]
    fn agentic_curves_are_the_marked_north_star_frontier() {
        let mut rows: Vec<PointRow> = [(10.0, 100.0, 5.0), (20.0, 50.0, 1.0), (30.0, 10.0, 8.0)]
            .iter()
            .enumerate()
            .map(|(i, &(x, y, ns))| {
                let mut r = row("b1", 4 << i, x, y, true);
                r.scenario = query::AGENTIC_SCENARIO.into();
                r.metrics.insert(query::NORTH_STAR_X.into(), ns);
                r
            })
            .collect();
        mark_frontier(&mut rows, "median_intvty", "tput_per_gpu", false);
        let marked: Vec<bool> = rows.iter().map(|r| r.frontier).collect();
        assert_eq!(marked, [true, false, true]);
        let all: Vec<&PointRow> = rows.iter().collect();
        assert_eq!(
            compare::frontier_knots(&all, "median_intvty", "tput_per_gpu"),
            [(10.0, 100.0), (30.0, 10.0)]
        );
        // At x = 20 the value comes off A–C (two knots: a straight line), not B's 50.
        let h = history_at(&rows, "median_intvty", "tput_per_gpu", 20.0, 3, 0.05, false);
        assert_eq!(h.groups[0].points[0].value, 55.0);
    }

    #[test]
    fn default_at_is_35_inside_the_range_else_its_middle() {
        assert_eq!(default_at("median_intvty", Some((10.0, 80.0))), Some(35.0));
        assert_eq!(default_at("median_intvty", Some((60.0, 100.0))), Some(80.0));
        assert_eq!(default_at("median_ttft", Some((10.0, 80.0))), Some(45.0));
        assert_eq!(default_at("median_intvty", None), None);
    }

    /// Capacity at an SLO: inside the frontier y and users per GPU are read off it (the
    /// curve TCO reads); beyond it the answer says so instead of extrapolating; invalid
    /// points count only when asked; a bound from the worse side is refused.
    #[test]
    fn capacity_reads_the_frontier_and_never_extrapolates() {
        use inferbench_core::slo::Slo;
        let rows = batch();
        let at = |e: &str, inv: bool| {
            capacity_at(&rows, &Slo::parse(e).unwrap(), "tput_per_gpu", inv).unwrap()
        };
        // Between conc 4 (x 100, y 1000) and conc 16 (x 60, y 3000).
        let c = at("median_intvty>=80", false);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, CapacityStatus::Interpolated);
        assert_eq!(c[0].y, Some(2000.0));
        assert_eq!(c[0].users_per_gpu, Some(10.0));
        assert_eq!((c[0].batches, c[0].x_range), (1, Some((60.0, 100.0))));
        assert_eq!(
            c[0].y,
            Some(tco_at(&rows, "median_intvty", "tput_per_gpu", 80.0, false).bars[0].value)
        );
        // Below the range: every counted point meets; the best measured, a lower bound.
        let c = at("median_intvty>=30", false);
        assert_eq!(c[0].status, CapacityStatus::AllMeet);
        assert_eq!((c[0].y, c[0].users_per_gpu), (Some(3000.0), Some(16.0)));
        // The invalid conc-64 point counts only when asked, and then x 30 is inside.
        let c = at("median_intvty>=30", true);
        assert_eq!(c[0].status, CapacityStatus::Interpolated);
        // Above the range: none meets.
        let c = at("median_intvty>=150", false);
        assert_eq!(c[0].status, CapacityStatus::NoneMeet);
        assert_eq!((c[0].y, c[0].users_per_gpu), (None, None));
        // A metric the points lack.
        assert_eq!(
            at("p99_ttft<=2s", false)[0].status,
            CapacityStatus::NoPoints
        );
        assert!(matches!(
            capacity_at(
                &rows,
                &Slo::parse("median_intvty<=80").unwrap(),
                "tput_per_gpu",
                false
            ),
            Err(CapacityError::WrongDirection(_))
        ));
    }
}
