//! The adaptive sweep's planner (issue 43, `sweep --adaptive[=TOLERANCE]`): which concurrencies
//! of a group's curves to measure so that the group's Pareto frontier (y, e.g. tok/s/GPU,
//! against x, e.g. interactivity) is known to within a relative tolerance. Pure: no I/O, no
//! clock; the executor measures what [`next_round`] proposes and calls it again with the
//! results, until it proposes nothing ([`run`] is that loop over a closure).
//!
//! The rule, per curve (the rows of a group that differ only in concurrency), over its listed
//! range `lo..=hi`:
//! 1. Measure the ends and the (geometric) middle first.
//! 2. Then, between two neighbouring measured points, the curve is uncertain by as much as two
//!    reasonable readings of it disagree there: the quadratics (in log x and log y over log
//!    concurrency) through the three points to the left and to the right (at the curve's ends:
//!    the one quadratic against the straight line), or as much as a point in its middle would
//!    move the frontier drawn through its ends (the quadratics' predicted point against the
//!    straight stretch the chart and `report` draw between two knots, in linear x and y: a
//!    throughput peak, or a convex stretch, where both fits agree, is not cut off). An
//!    interval is also worth a point where another curve of the group crosses this one inside
//!    it (a point there can change which curve wins). An interval is worth a point when that
//!    exceeds max(tolerance, what the curve's run-to-run noise makes of it: 2 σ at the
//!    noise level below) **and** the interval could be on the group's frontier: no
//!    other curve's measured point serves its x with a y above its own by more than the
//!    tolerance plus 2√2 σ of noise, the other curves (read between their points) do not beat its
//!    best y by that much at every x it spans, and its predicted middle point, even at the top
//!    of its uncertainty, does not lie under another curve by more than the threshold (the
//!    point would not change the frontier).
//!    An invalid end (say the highest concurrency overloads the server) leaves the stretch
//!    beyond the last valid point unknown: it is bisected first.
//!
//!    **Noise from few points** ([`few_point_noise`], [`group_noise`]; issue 43, 2026-12-07
//!    evening). [`noise_estimate`] needs six points of a curve; on llama.cpp (2 loaded cores,
//!    20–35 % run-to-run noise, docs/performance.md "adaptive sweep on llama.cpp") curves of
//!    3–4 points left it at 0, the dominance margin was the bare tolerance, one lucky point
//!    (ep 4 conc 1) dominated every stretch and both adaptive sweeps skipped ep 1 conc 8 and
//!    ep 4 conc 8, knots of every full sweep's frontier. The planner also reads what no real
//!    curve can do, each a difference of two noisy points (σ ≥ excess / √2): interactivity
//!    rising with concurrency (more concurrent users never make each one faster: x is
//!    non-increasing in conc on any engine), and throughput per GPU dipping and rising again
//!    (a closed loop's throughput rises while the engine has room and may fall past saturation,
//!    more so the higher the concurrency: unimodal; a rise then a fall is real and shows
//!    nothing). Run-to-run noise belongs to the machine and the engine, so a group's curves
//!    share it: the group's largest estimate serves every curve, and a curve's noise σ is the
//!    larger of that and its own [`noise_estimate`]. A stretch is dominated only by more than
//!    tolerance + 2√2 σ ([`DOMINANCE_SIGMAS`]: 2 σ of a comparison of two noisy points). When
//!    the group's evidence exceeds the tolerance, no stretch can be "known" to within it from
//!    its noisy ends: every listed concurrency inside a stretch not dominated by that margin
//!    is measured ([`Why::Noisy`]; its bend, width in x and predicted point are not read),
//!    which at large noise is the full list, the honest answer (on the llama.cpp sweeps: all
//!    10 points). A noiseless monotone curve shows no evidence (the sim's closed loop and the
//!    savings table are unchanged); with seeded 1–2 % noise on the sim's shape the plan keeps
//!    its saving (`adaptive::noisy` tests). [`skipped`] says why each listed concurrency is
//!    left out ([`Skip`]); `sweep.json`'s `adaptive.curves` ([`CurvePlan`]) holds, per curve,
//!    each proposal's and each skip's reason and the noise used.
//! 3. One point per curve per round (Slurm/GitHub rounds: up to k, [`next_round_k`]): the
//!    middle of its most valuable interval, ranked by its uncertainty times its share of the
//!    group's x range (what it can cost the measure, [`frontier_match`]); a stretch under
//!    [`MIN_X_SHARE`] of that range is not split for a bend. A curve stops when no interval is
//!    worth a point, none is wider than [`MIN_SPLIT_RATIO`] with an unmeasured concurrency
//!    inside, or it has measured its listed count ([`Curve::listed`]: an adaptive sweep never
//!    measures more points of a curve than the full list would).
//!
//! 4. On the local executor ([`LocalOrder`]): every curve's ends and middle first, then each
//!    curve's refinement (the last seeded first), so a curve is refined against all of its
//!    group, not only the curves before it; then back to any curve the others' points made
//!    worth more. [`explain`] gives each proposal's reason.
//!
//! Every proposal lies inside the listed range and is proposed at most once (an invalid point
//! is never proposed again and never counts as measured), so a plan always ends, after at most
//! `hi − lo + 1` points per curve, and is deterministic for the same measurements.

use std::collections::BTreeMap;

use crate::jobspec::JobSpec;

/// The default `--adaptive` tolerance: 2 %.
pub const DEFAULT_TOLERANCE: f64 = 0.02;

/// The narrowest interval (higher / lower concurrency) the planner still splits for a bend:
/// below it run-to-run noise, not the curve, decides the bend (a sim sweep on a busy machine
/// with 15 % noise split 17..20 down to single steps).
pub const MIN_SPLIT_RATIO: f64 = 1.25;

/// The narrowest stretch of a curve, in x, as a share of its group's x range (over every
/// curve's valid points), that the planner still splits for a bend (not for a crossing): the
/// issue's measure counts the fraction of the x range within 3 %, so a stretch of 2 % of it
/// cannot fail it alone (a stretch of a steep low-concurrency end, where throughput doubles
/// while interactivity barely moves, would otherwise be split down to single steps).
pub const MIN_X_SHARE: f64 = 0.02;

/// One measured point of a curve: x (e.g. median interactivity, tok/s/user) and y (e.g.
/// tok/s/GPU, higher is better), or `None` for an invalid point (tried, never counted).
pub type Measured = Option<(f64, f64)>;

/// One curve of a group: its listed concurrency range and what was measured so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Curve {
    /// Lowest listed concurrency.
    pub lo: u32,
    /// Highest listed concurrency.
    pub hi: u32,
    /// Concurrency → its point ([`Measured`]).
    pub points: BTreeMap<u32, Measured>,
    /// The most points (valid or not) the plan may measure on this curve, `None` = no cap.
    /// [`Curve::listed`] sets it to the listed count: an adaptive sweep never measures more
    /// points of a curve than its full list would.
    pub max_points: Option<usize>,
    /// The listed concurrencies ([`Curve::listed`]; empty for [`Curve::new`]): an interval
    /// with an unmeasured listed one inside is split at it (the one nearest its geometric
    /// middle), and before any interval without one, so that under the cap the plan reproduces
    /// the list's frontier (the issue's measure) before it refines between listed points.
    pub listed: Vec<u32>,
}

impl Curve {
    /// A curve over `lo..=hi` with nothing measured.
    pub fn new(lo: u32, hi: u32) -> Curve {
        Curve {
            lo: lo.min(hi),
            hi: hi.max(lo),
            points: BTreeMap::new(),
            max_points: None,
            listed: Vec::new(),
        }
    }

    /// A curve over the range of `listed` (its lowest to its highest concurrency) that may
    /// measure at most `listed.len()` points (distinct concurrencies). An empty list gives the
    /// one-point range 1..=1 with a cap of 1.
    pub fn listed(listed: &[u32]) -> Curve {
        let mut distinct: Vec<u32> = listed.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut c = Curve::new(
            distinct.first().copied().unwrap_or(1),
            distinct.last().copied().unwrap_or(1),
        );
        c.max_points = Some(distinct.len().max(1));
        c.listed = distinct;
        c
    }

    /// Whether the curve has measured as many points as it may ([`Curve::max_points`]).
    fn spent(&self) -> bool {
        self.max_points.is_some_and(|m| self.points.len() >= m)
    }

    /// The valid points, by concurrency: (conc, x, y).
    fn valid(&self) -> Vec<(u32, f64, f64)> {
        self.points
            .iter()
            .filter_map(|(c, m)| m.map(|(x, y)| (*c, x, y)))
            .filter(|(_, x, y)| x.is_finite() && y.is_finite())
            .collect()
    }

    /// Whether `c` is untried and inside the range.
    fn open(&self, c: u32) -> bool {
        (self.lo..=self.hi).contains(&c) && !self.points.contains_key(&c)
    }
}

/// The geometric middle of `a` and `b`, rounded, strictly between them when there is room;
/// `None` when `b ≤ a + 1`.
fn middle(a: u32, b: u32) -> Option<u32> {
    if b <= a + 1 {
        return None;
    }
    let m = ((a.max(1) as f64) * (b as f64)).sqrt().round() as u32;
    Some(m.clamp(a + 1, b - 1))
}

/// y at `t` of the quadratic through three (t, y) points (Lagrange form).
fn quad(p: [(f64, f64); 3], t: f64) -> f64 {
    let [(t0, y0), (t1, y1), (t2, y2)] = p;
    y0 * (t - t1) * (t - t2) / ((t0 - t1) * (t0 - t2))
        + y1 * (t - t0) * (t - t2) / ((t1 - t0) * (t1 - t2))
        + y2 * (t - t0) * (t - t1) / ((t2 - t0) * (t2 - t1))
}

/// What [`bend_parts`] finds of one interval: its uncertainty, the two quadratics'
/// disagreement where both exist, and the curve's predicted point (x, y) at the interval's
/// middle (in log concurrency) where a quadratic exists.
type BendParts = (f64, Option<f64>, Option<(f64, f64)>);

/// How far, relative, the curve may be off between valid points `i` and `i + 1` of `v`: in
/// log–log space (where throughput against interactivity is close to a power law, and
/// differences of logarithms are relative differences), over log-concurrency, the
/// disagreement at the interval's middle of the two quadratics through three neighbouring
/// points each (the left and the right one: a smooth curve makes them agree, a knee does not),
/// in x and in y; at either end of the curve, where only one exists, that quadratic against
/// the straight line; and at least how far the predicted point lies from the straight stretch
/// the frontier is drawn with. Infinite without three points or with a non-positive value.
/// Also the two quadratics' disagreement alone (relative) where both exist: a third
/// difference of the curve, which a smooth curve keeps small and run-to-run noise does not
/// ([`noise_estimate`]); and the predicted point ([`BendParts`]).
fn bend_parts(v: &[(u32, f64, f64)], i: usize) -> BendParts {
    let t = |c: u32| (c.max(1) as f64).ln();
    let ln = |p: &(u32, f64, f64)| -> Option<(f64, f64, f64)> {
        (p.1 > 0.0 && p.2 > 0.0).then(|| (t(p.0), p.1.ln(), p.2.ln()))
    };
    let (Some(a), Some(b)) = (ln(&v[i]), ln(&v[i + 1])) else {
        return (f64::INFINITY, None, None);
    };
    let tm = (a.0 + b.0) / 2.0;
    let chord = ((a.1 + b.1) / 2.0, (a.2 + b.2) / 2.0);
    let at = |start: usize| -> Option<(f64, f64)> {
        let w = v.get(start..start + 3)?;
        let k = [ln(&w[0]), ln(&w[1]), ln(&w[2])];
        let [Some(p0), Some(p1), Some(p2)] = k else {
            return Some((f64::INFINITY, f64::INFINITY));
        };
        Some((
            quad([(p0.0, p0.1), (p1.0, p1.1), (p2.0, p2.1)], tm),
            quad([(p0.0, p0.2), (p1.0, p1.2), (p2.0, p2.2)], tm),
        ))
    };
    let gap = |p: (f64, f64), q: (f64, f64)| (p.0 - q.0).abs().max((p.1 - q.1).abs());
    let (left, right) = (i.checked_sub(1).and_then(at), at(i));
    let both = match (left, right) {
        (Some(l), Some(r)) => Some(gap(l, r).exp_m1()).filter(|d| d.is_finite()),
        _ => None,
    };
    let d = match (left, right) {
        (Some(l), Some(r)) => gap(l, r),
        (Some(q), None) | (None, Some(q)) => gap(q, chord),
        (None, None) => f64::INFINITY,
    };
    // What a point in the middle would move the frontier by: the curve's predicted point there
    // (the quadratics' mean) against the straight line the frontier draws between the ends
    // (the view interpolates y at x). Near a peak of
    // throughput (an overloaded server, an AgentX replay whose sessions queue) both quadratics
    // agree while the frontier's chord cuts the top off by several %.
    let pred = match (left, right) {
        (Some(l), Some(r)) => ((l.0 + r.0) / 2.0, (l.1 + r.1) / 2.0),
        (Some(q), None) | (None, Some(q)) => q,
        (None, None) => return (f64::INFINITY, both, None),
    };
    let predicted =
        Some((pred.0.exp(), pred.1.exp())).filter(|p| p.0.is_finite() && p.1.is_finite());
    // The chord is drawn as the dashboard and `report` draw a frontier between two knots: in
    // linear x and y (their monotone cubic is the straight line through two knots), which
    // for a convex stretch lies further from the curve than the log-log chord.
    let (ax, bx, ay, by) = (a.1.exp(), b.1.exp(), a.2.exp(), b.2.exp());
    let dev = if (bx - ax).abs() > 1e-12 * ax.abs().max(bx.abs()) {
        let f = ((pred.0.exp() - ax) / (bx - ax)).clamp(0.0, 1.0);
        let chord = ay + f * (by - ay);
        if chord > 0.0 {
            (pred.1 - chord.ln()).abs()
        } else {
            f64::INFINITY
        }
    } else {
        0.0
    };
    let d = d.max(dev);
    // A difference of logarithms → a relative difference.
    let d = d.exp_m1();
    if d.is_nan() {
        (f64::INFINITY, both, predicted)
    } else {
        (d, both, predicted)
    }
}

/// How much of a point's relative noise the two quadratics' disagreement ([`bend_parts`])
/// carries, as a standard deviation: at an interval's middle with evenly spaced points the
/// disagreement is the third difference (−1, 3, −3, 1) / 8 of four neighbouring points, so
/// independent noise of σ per point gives √20 / 8 ≈ 0.559 σ.
pub const DISAGREEMENT_PER_NOISE: f64 = 0.559;

/// The relative run-to-run noise (one standard deviation) of curve `v`'s valid points as the
/// planner can see it from one measurement per concurrency: the lower quartile, over the
/// intervals with three neighbouring points on either side, of the two quadratics'
/// disagreement (`bend_parts`), over the lower quartile of its absolute value under noise
/// alone (0.319 × [`DISAGREEMENT_PER_NOISE`]). That disagreement is a third difference of the
/// curve: a smooth curve, however bent, keeps it small, noise does not, and a knee shows in at
/// most the three intervals whose four points span it, so it does not move the lower quartile
/// of four or more. 0 with fewer than three such intervals (nothing to tell noise from a
/// knee).
pub fn noise_estimate(v: &[(u32, f64, f64)]) -> f64 {
    let mut d: Vec<f64> = (0..v.len().saturating_sub(1))
        .filter_map(|k| bend_parts(v, k).1)
        .collect();
    if d.len() < 3 {
        return 0.0;
    }
    d.sort_by(f64::total_cmp);
    d[(d.len() - 1) / 4] / (0.319 * DISAGREEMENT_PER_NOISE)
}

/// The relative run-to-run noise (one standard deviation) that curve `v`'s valid points show
/// from as few as two points (issue 43: on llama.cpp with 20–35 % noise, curves of 3–4
/// points left [`noise_estimate`] at 0): evidence that no real curve can produce, read as a
/// difference of two noisy points (σ√2), so σ ≥ the excess / √2:
/// - **x rising with concurrency.** Interactivity is non-increasing in concurrency on any
///   engine (more concurrent users never make each one faster), so a higher concurrency whose
///   x exceeds a lower one's by r (relative, x_b / x_a − 1) shows noise of σ ≥ r / √2 (the
///   largest over every pair).
/// - **y dipping and rising again.** Throughput per GPU in a closed loop rises with
///   concurrency while the engine has room and may fall past saturation (overload:
///   preemption, KV-cache thrashing, queueing), which grows with concurrency: it is unimodal,
///   so a point whose y lies under the highest y on both sides of it by d (relative, the lower
///   of those two maxima / its y − 1) shows σ ≥ d / √2. A rise then a fall (a peak) is a
///   real shape and shows nothing.
///
/// A noiseless monotone curve (the sim's closed loop, a power law) shows 0. Units: relative
/// (0.1 = 10 %).
pub fn few_point_noise(v: &[(u32, f64, f64)]) -> f64 {
    let mut s = 0.0f64;
    let ok = |a: f64| a.is_finite() && a > 0.0;
    for (k, a) in v.iter().enumerate() {
        for b in &v[k + 1..] {
            if ok(a.1) && ok(b.1) && b.1 > a.1 {
                s = s.max((b.1 / a.1 - 1.0) / std::f64::consts::SQRT_2);
            }
        }
    }
    for k in 1..v.len().saturating_sub(1) {
        let high = |w: &[(u32, f64, f64)]| w.iter().map(|p| p.2).fold(f64::NEG_INFINITY, f64::max);
        let m = high(&v[..k]).min(high(&v[k + 1..]));
        if ok(v[k].2) && ok(m) && m > v[k].2 {
            s = s.max((m / v[k].2 - 1.0) / std::f64::consts::SQRT_2);
        }
    }
    s
}

/// The run-to-run noise (relative, one standard deviation) that the group `curves` shows by
/// evidence no real curve produces ([`few_point_noise`]): run-to-run noise is a property of
/// the machine and the engine, which a group's curves share (same engine, same sweep), so the
/// largest of its curves' estimates, used for every curve. The plan takes each curve's noise
/// as the larger of this and the curve's own [`noise_estimate`] (which needs six points and
/// reads a smooth bend as ≈ 1–3 %, so it scales the thresholds but never alone makes a group
/// "noisy", [`Why::Noisy`]). 0 for noiseless monotone curves.
pub fn group_noise(curves: &[Curve]) -> f64 {
    curves
        .iter()
        .map(|c| few_point_noise(&c.valid()))
        .filter(|s| s.is_finite())
        .fold(0.0, f64::max)
}

/// How many of a point's noise σ (relative, [`group_noise`]) a stretch must lie under another
/// curve, beyond the tolerance, to be pruned as dominated: 2 σ of a comparison of two noisy
/// points (each σ, their ratio σ√2), 2√2 ≈ 2.83.
pub const DOMINANCE_SIGMAS: f64 = 2.0 * std::f64::consts::SQRT_2;

/// y of the group's best other curve at `x`: the highest y among other curves' valid points
/// with an x at least `x` (a point that serves at least that x with that y), `None` without.
fn best_other_at(curves: &[Curve], me: usize, x: f64) -> Option<f64> {
    curves
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != me)
        .flat_map(|(_, c)| c.valid())
        .filter(|(_, px, _)| *px >= x)
        .map(|(_, _, y)| y)
        .fold(None, |acc: Option<f64>, y| {
            Some(acc.map_or(y, |a| a.max(y)))
        })
}

/// y of the group's other curves at `x`: the highest of their curves read between their
/// neighbouring valid points (linear in log x and log y, as the frontier is drawn), `None`
/// where none reaches `x`.
fn others_at(curves: &[Curve], me: usize, x: f64) -> Option<f64> {
    let mut best: Option<f64> = None;
    for (j, c) in curves.iter().enumerate() {
        if j == me {
            continue;
        }
        for w in c.valid().windows(2) {
            let ((_, x0, y0), (_, x1, y1)) = (w[0], w[1]);
            let (lo, hi) = (x0.min(x1), x0.max(x1));
            if !(lo..=hi).contains(&x) || x0 <= 0.0 || x1 <= 0.0 || y0 <= 0.0 || y1 <= 0.0 {
                continue;
            }
            let y = if x1 == x0 {
                y0.max(y1)
            } else {
                let f = (x.ln() - x0.ln()) / (x1.ln() - x0.ln());
                (y0.ln() + f * (y1.ln() - y0.ln())).exp()
            };
            best = Some(best.map_or(y, |b| b.max(y)));
        }
    }
    best
}

/// Whether the group's other curves, read between their valid points ([`others_at`]: as the
/// frontier is drawn), serve more than `y` at every x of `x_lo..=x_hi` (checked at
/// [`DOMINANCE_SAMPLES`] evenly spaced x, both ends included): a stretch of a curve whose best
/// y is below that is under the frontier wherever it lies. False where another curve does not
/// reach one of those x (nothing is known there).
fn others_above(curves: &[Curve], me: usize, x_lo: f64, x_hi: f64, y: f64) -> bool {
    (0..DOMINANCE_SAMPLES).all(|s| {
        let f = s as f64 / (DOMINANCE_SAMPLES - 1) as f64;
        let x = x_lo + f * (x_hi - x_lo);
        others_at(curves, me, x).is_some_and(|o| o > y)
    })
}

/// How many x of a stretch [`others_above`] checks (both ends included).
pub const DOMINANCE_SAMPLES: usize = 9;

/// The concurrencies to measure next, `(curve index, conc)`, at most one per curve, in curve
/// order; empty when the group's frontier is known to within `tolerance` (or nothing is left
/// to try, or every curve has spent its [`Curve::max_points`]). A `tolerance` that is not a
/// positive number is read as [`DEFAULT_TOLERANCE`]. [`next_round_k`] with `k` = 1.
pub fn next_round(curves: &[Curve], tolerance: f64) -> Vec<(usize, u32)> {
    next_round_k(curves, tolerance, 1)
}

/// The concurrencies to measure next, up to `k` per curve (a `k` of 0 is read as 1), in curve
/// order and, within a curve, most valuable first: at the start its open ends and middle (all
/// three at once when `k` ≥ 3); then the bisection towards an invalid end (one point); then the
/// middles of its `k` most uncertain intervals that could be on the frontier (see the module
/// doc). Never more than a curve's [`Curve::max_points`] less what it has measured. For Slurm
/// and GitHub follow-up rounds, where each round is a job submission: a larger `k` means fewer
/// rounds for a few more points. Empty when nothing is worth measuring.
pub fn next_round_k(curves: &[Curve], tolerance: f64, k: usize) -> Vec<(usize, u32)> {
    let tol = if tolerance.is_finite() && tolerance > 0.0 {
        tolerance
    } else {
        DEFAULT_TOLERANCE
    };
    let k = k.max(1);
    let mut out = Vec::new();
    for (i, c) in curves.iter().enumerate() {
        let room = c
            .max_points
            .map_or(usize::MAX, |m| m.saturating_sub(c.points.len()));
        out.extend(
            candidates(curves, i, tol)
                .into_iter()
                .take(k.min(room))
                .map(|m| (i, m)),
        );
    }
    out
}

/// The concurrencies worth measuring on curve `i` of `curves`, most valuable first (the rule of
/// the module doc); empty when none is, or the curve has spent its points.
fn candidates(curves: &[Curve], i: usize, tol: f64) -> Vec<u32> {
    explain_curve(curves, i, tol)
        .into_iter()
        .map(|c| c.conc)
        .collect()
}

/// Why the planner proposes a concurrency ([`explain`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Why {
    /// One of the curve's first three points: an end of its listed range or its middle.
    Seed,
    /// Between the last valid point and an invalid one beyond it (or below it): that stretch
    /// of the curve is unknown.
    BesideInvalid,
    /// The curve's interpolation between the interval's valid ends is uncertain by
    /// `uncertainty` (relative, [`bend_parts`]'s measure) over `share` (0..=1) of the group's x
    /// range, and no other curve's measured point serves the interval's x with more y.
    Bend {
        /// Relative uncertainty of the interpolation (0.05 = 5 %).
        uncertainty: f64,
        /// The interval's share of the group's x range (0..=1).
        share: f64,
    },
    /// Another curve of the group crosses this one inside the interval: a point here could
    /// change which curve wins.
    Crossing {
        /// Relative uncertainty of the interpolation (as in [`Why::Bend`]).
        uncertainty: f64,
        /// The interval's share of the group's x range (0..=1).
        share: f64,
    },
    /// Another curve's measured point inside the interval's x span is a knot of the group's
    /// frontier as drawn (no measured point dominates it), though this curve, read straight
    /// between the interval's ends, serves its x with more than the tolerance more: without a
    /// point here the drawn frontier dips to it (issue 43: on the sim's closed loop TP 1's
    /// conc 16 dented TP 2's 16..64 stretch by 41 %).
    FalseKnot {
        /// How much more this curve serves at the knot's x than the knot (0.7 = 70 %).
        gap: f64,
        /// The interval's share of the group's x range (0..=1).
        share: f64,
    },
    /// The group's run-to-run noise ([`group_noise`]) exceeds the tolerance: a stretch between
    /// two noisy points is not known to within it however straight it reads, so a listed
    /// concurrency inside a stretch that no other curve dominates by more than tolerance +
    /// [`DOMINANCE_SIGMAS`] σ is measured (issue 43: on llama.cpp both adaptive sweeps
    /// skipped ep 1 conc 8 and ep 4 conc 8, knots of every full sweep's frontier).
    Noisy {
        /// The group's noise, relative, one standard deviation (0.2 = 20 %).
        noise: f64,
        /// The interval's share of the group's x range (0..=1).
        share: f64,
    },
}

/// One proposal of [`explain`]: the concurrency and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// The concurrency to measure.
    pub conc: u32,
    /// Why it is worth a point.
    pub why: Why,
    /// Whether it is a listed concurrency inside an interval (ranked before unlisted ones).
    pub listed: bool,
}

/// Every concurrency the planner would propose per curve of `curves` (one group) at
/// `tolerance` (a non-positive or non-finite one read as [`DEFAULT_TOLERANCE`]), most valuable
/// first, with the reason: what [`next_round_k`] takes its first `k` of (it also caps them at
/// a curve's [`Curve::max_points`]). An empty list: the curve needs no more points.
pub fn explain(curves: &[Curve], tolerance: f64) -> Vec<Vec<Candidate>> {
    let tol = if tolerance.is_finite() && tolerance > 0.0 {
        tolerance
    } else {
        DEFAULT_TOLERANCE
    };
    (0..curves.len())
        .map(|i| explain_curve(curves, i, tol))
        .collect()
}

/// [`explain`] for curve `i`.
fn explain_curve(curves: &[Curve], i: usize, tol: f64) -> Vec<Candidate> {
    plan_curve(curves, i, tol).0
}

/// Why the planner does not propose a listed concurrency of a curve ([`skipped`]): the rule
/// of the module doc that leaves it out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Skip {
    /// The curve measured as many points as it lists ([`Curve::max_points`]).
    Spent,
    /// Not between two valid points: beside an invalid end, closer to it than
    /// [`MIN_SPLIT_RATIO`], or while the stretch beside an invalid point is bisected first.
    BesideInvalid,
    /// Its stretch (between the valid neighbours) is narrower than [`MIN_SPLIT_RATIO`].
    Close,
    /// The stretch's interpolation is known: uncertain by `uncertainty` (relative), not more
    /// than `threshold` = max(tolerance, what the noise makes of it), with the noise at most
    /// the tolerance.
    Known {
        /// Relative uncertainty of the interpolation ([`Why::Bend`]).
        uncertainty: f64,
        /// The threshold it stays under (relative).
        threshold: f64,
    },
    /// The stretch spans under [`MIN_X_SHARE`] of the group's interactivity range.
    Narrow {
        /// The stretch's share of the group's x range (0..=1).
        share: f64,
    },
    /// Another curve of the group serves the stretch's x with a y above the stretch's best by
    /// `by` (relative), more than `margin` = tolerance + [`DOMINANCE_SIGMAS`] σ of the group's
    /// noise ([`group_noise`]).
    Dominated {
        /// How much more the other curve serves (0.3 = 30 %; infinite where the other curves,
        /// read between their points, are above it at every x of the stretch).
        by: f64,
        /// The margin it exceeds (relative).
        margin: f64,
    },
    /// The curve's predicted point in the stretch, even at the top of its uncertainty, lies
    /// under another curve by more than the threshold: it could not change the frontier.
    Buried,
    /// Its stretch is proposed at another concurrency first (`at`).
    Pending {
        /// The concurrency the stretch is split at first.
        at: u32,
    },
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pc = |v: f64| 100.0 * v;
        match *self {
            Why::Seed => write!(f, "seed: an end or the middle of the listed range"),
            Why::BesideInvalid => write!(f, "beside an invalid point: that stretch is unknown"),
            Why::Bend { uncertainty, share } => write!(
                f,
                "bend: the interpolation is uncertain by {:.1} % over {:.1} % of the group's x range",
                pc(uncertainty),
                pc(share)
            ),
            Why::Crossing { uncertainty, share } => write!(
                f,
                "crossing: another curve crosses this stretch (uncertain by {:.1} %, {:.1} % of the x range)",
                pc(uncertainty),
                pc(share)
            ),
            Why::FalseKnot { gap, share } => write!(
                f,
                "false knot: another curve's point inside this stretch is a knot {:.1} % under it ({:.1} % of the x range)",
                pc(gap),
                pc(share)
            ),
            Why::Noisy { noise, share } => write!(
                f,
                "noisy: the group's noise σ {:.1} % exceeds the tolerance, so this undominated stretch is not known without its listed points ({:.1} % of the x range)",
                pc(noise),
                pc(share)
            ),
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pc = |v: f64| 100.0 * v;
        match *self {
            Skip::Spent => write!(f, "spent: the curve measured as many points as it lists"),
            Skip::BesideInvalid => write!(f, "beside an invalid point"),
            Skip::Close => write!(
                f,
                "close: its stretch is narrower than {MIN_SPLIT_RATIO}× in concurrency"
            ),
            Skip::Known {
                uncertainty,
                threshold,
            } => write!(
                f,
                "known: the stretch is uncertain by {:.1} %, under the threshold {:.1} %",
                pc(uncertainty),
                pc(threshold)
            ),
            Skip::Narrow { share } => write!(
                f,
                "narrow: the stretch spans {:.2} % of the group's x range (under {:.0} %)",
                pc(share),
                pc(MIN_X_SHARE)
            ),
            Skip::Dominated { by, margin } if by.is_finite() => write!(
                f,
                "dominated: another curve serves its x with {:.1} % more than its best, beyond the margin {:.1} % (tolerance + {DOMINANCE_SIGMAS:.2} σ)",
                pc(by),
                pc(margin)
            ),
            Skip::Dominated { margin, .. } => write!(
                f,
                "dominated: the other curves lie above its best by more than the margin {:.1} % (tolerance + {DOMINANCE_SIGMAS:.2} σ) at every x of the stretch",
                pc(margin)
            ),
            Skip::Buried => write!(
                f,
                "buried: its predicted point lies under another curve by more than the threshold"
            ),
            Skip::Pending { at } => write!(f, "pending: its stretch is split at conc {at} first"),
        }
    }
}

/// Why each listed concurrency of curve `i` of `curves` (one group) that is not measured is
/// not proposed now, at `tolerance` (read as [`explain`] reads it), by concurrency. Empty for
/// a curve that measured every listed concurrency. What `sweep.json`'s `adaptive.curves[]`
/// says of a curve's skipped points when it stops.
pub fn skipped(curves: &[Curve], i: usize, tolerance: f64) -> Vec<(u32, Skip)> {
    let tol = if tolerance.is_finite() && tolerance > 0.0 {
        tolerance
    } else {
        DEFAULT_TOLERANCE
    };
    match curves.get(i) {
        Some(_) => plan_curve(curves, i, tol).1,
        None => Vec::new(),
    }
}

/// [`explain_curve`] and [`skipped`]: the candidates of curve `i`, most valuable first, and
/// why each of its listed, untried concurrencies that is not a candidate is left out.
fn plan_curve(curves: &[Curve], i: usize, tol: f64) -> (Vec<Candidate>, Vec<(u32, Skip)>) {
    let c = &curves[i];
    let untried: Vec<u32> = c.listed.iter().copied().filter(|x| c.open(*x)).collect();
    // Every untried listed concurrency inside `a..b` (exclusive) skipped for `why`.
    let mut skips: Vec<(u32, Skip)> = Vec::new();
    let skip = |a: u32, b: u32, why: Skip, skips: &mut Vec<(u32, Skip)>| {
        skips.extend(
            (untried.iter().copied())
                .filter(|x| *x > a && *x < b)
                .map(|x| (x, why)),
        );
    };
    if c.spent() {
        skip(0, u32::MAX, Skip::Spent, &mut skips);
        return (Vec::new(), skips);
    }
    let seed = |conc: u32| Candidate {
        conc,
        why: Why::Seed,
        listed: true,
    };
    // 1. The ends and the middle.
    let mut first: Vec<u32> = Vec::new();
    for m in [Some(c.lo), Some(c.hi), middle(c.lo, c.hi)]
        .into_iter()
        .flatten()
    {
        if c.open(m) && !first.contains(&m) {
            first.push(m);
        }
    }
    if !first.is_empty() {
        let at = first[0];
        skip(0, u32::MAX, Skip::Pending { at }, &mut skips);
        skips.retain(|s| !first.contains(&s.0));
        return (first.into_iter().map(seed).collect(), skips);
    }
    // 2. An invalid end leaves the stretch beyond the last valid point unknown: measure
    //    between them first (the highest stretch first: it decides the frontier's far end).
    let v = c.valid();
    // Outside the valid points: beside an invalid end.
    match (v.first(), v.last()) {
        (Some(lo), Some(hi)) => {
            skip(0, lo.0, Skip::BesideInvalid, &mut skips);
            skip(hi.0, u32::MAX, Skip::BesideInvalid, &mut skips);
        }
        _ => skip(0, u32::MAX, Skip::BesideInvalid, &mut skips),
    }
    // Not closer than MIN_SPLIT_RATIO: a run of invalid points (an overloaded or starved
    // server) is not walked one concurrency at a time.
    let open_between = |a: u32, b: u32| -> Option<u32> {
        if (b as f64) < a.max(1) as f64 * MIN_SPLIT_RATIO {
            return None;
        }
        middle(a, b).filter(|m| c.open(*m))
    };
    let beyond = v.last().and_then(|top| {
        let b = c.points.range(top.0 + 1..).next().map(|(k, _)| *k)?;
        open_between(top.0, b)
    });
    let below = v.first().and_then(|bottom| {
        let a = c.points.range(..bottom.0).next_back().map(|(k, _)| *k)?;
        open_between(a, bottom.0)
    });
    if let Some(m) = beyond.or(below) {
        let mut rest: Vec<(u32, Skip)> = (untried.iter().copied())
            .filter(|x| *x != m)
            .map(|x| (x, Skip::Pending { at: m }))
            .collect();
        rest.sort_by_key(|s| s.0);
        return (
            vec![Candidate {
                conc: m,
                why: Why::BesideInvalid,
                listed: c.listed.contains(&m),
            }],
            rest,
        );
    }
    // 3. The uncertain intervals that could be on the frontier, most valuable first (a stable
    //    sort: of equal ones, the lower).
    let xs = curves.iter().flat_map(|c| c.valid()).map(|p| p.1);
    let span = xs.clone().fold(f64::NEG_INFINITY, f64::max) - xs.fold(f64::INFINITY, f64::min);
    let mut ranked: Vec<(f64, Candidate)> = Vec::new();
    // The group's noise (shared by its curves), and whether it exceeds the tolerance: then a
    // stretch between two noisy points is not known to within it, whatever its bend, and its
    // listed points are measured unless it is dominated by more than the noise could make.
    let evidence = group_noise(curves);
    let noise = noise_estimate(&v).max(evidence);
    let noisy = evidence > tol;
    let margin = tol + DOMINANCE_SIGMAS * noise;
    for k in 0..v.len().saturating_sub(1) {
        let (a, b) = (v[k].0, v[k + 1].0);
        let listed_inside = (c.listed.iter().copied())
            .filter(|x| *x > a && *x < b && c.open(*x))
            .min_by(|p, q| {
                let m = ((a.max(1) as f64) * (b as f64)).sqrt();
                let d = |x: u32| ((x as f64).ln() - m.ln()).abs();
                d(*p).total_cmp(&d(*q)).then(p.cmp(q))
            });
        let noisy_listed = noisy && listed_inside.is_some();
        if (b as f64) < a.max(1) as f64 * MIN_SPLIT_RATIO && !noisy_listed {
            skip(a, b, Skip::Close, &mut skips);
            continue;
        }
        let Some(m) = middle(a, b) else {
            continue;
        };
        // A listed concurrency inside, untried: the one nearest the middle.
        // An invalid try inside leaves the interval's other untried concurrencies.
        let m = if let Some(l) = listed_inside {
            l
        } else if c.open(m) {
            m
        } else {
            match (a + 1..b).find(|x| c.open(*x)) {
                Some(x) => x,
                None => continue,
            }
        };
        // A stretch narrower in x than MIN_X_SHARE of the group's x range weighs at most that
        // much in the issue's measure (the fraction of the range within 3 %): not worth a
        // point unless another curve crosses it.
        let narrow = (v[k + 1].1 - v[k].1).abs() < MIN_X_SHARE * span;
        let (u, _, predicted) = bend_parts(&v, k);
        // Worth a point only above the tolerance and above what noise alone makes of the
        // uncertainty (2 σ of the disagreement at the group's estimated noise).
        let threshold = tol.max(2.0 * DISAGREEMENT_PER_NOISE * noise);
        // Does another curve of the group cross this one inside the stretch (above it at
        // one end, below at the other)? Then a point here can change which curve wins,
        // and the frontier's chord from one curve to the other cuts below both.
        let side = |p: &(u32, f64, f64)| others_at(curves, i, p.1).map(|o| p.2 >= o);
        let crosses = matches!((side(&v[k]), side(&v[k + 1])), (Some(a), Some(b)) if a != b);
        let share = if span > 0.0 {
            (v[k + 1].1 - v[k].1).abs() / span
        } else {
            1.0
        };
        let pending = Skip::Pending { at: m };
        if let Some(gap) = false_knot(curves, i, (&v[k], &v[k + 1]), tol) {
            let cand = Candidate {
                conc: m,
                why: Why::FalseKnot { gap, share },
                listed: listed_inside.is_some(),
            };
            ranked.push((gap.min(1.0) * share, cand));
            skip(a, b, pending, &mut skips);
            continue;
        }
        // Could this stretch be on the frontier? Its best y (throughput rises with
        // concurrency: the higher end's) against the other curves: a measured point that
        // serves its lowest x with more, or the other curves read between their points (as
        // the frontier is drawn) above it by more than the margin (the tolerance plus what
        // the noise of two compared points could make) at every x it spans.
        let (x_lo, x_hi) = (v[k].1.min(v[k + 1].1), v[k].1.max(v[k + 1].1));
        let best = v[k].2.max(v[k + 1].2);
        let bar = best * (1.0 + margin);
        let dominated = match best_other_at(curves, i, x_lo).filter(|o| *o > bar) {
            Some(o) => Some(o / best - 1.0),
            None => others_above(curves, i, x_lo, x_hi, bar).then_some(f64::INFINITY),
        };
        if noisy_listed {
            // Noise above the tolerance: neither the bend, the stretch's width nor the
            // predicted point (from noisy neighbours) can say the stretch is known.
            if let (Some(by), false) = (dominated, crosses) {
                skip(a, b, Skip::Dominated { by, margin }, &mut skips);
                continue;
            }
            let cand = Candidate {
                conc: m,
                why: Why::Noisy { noise, share },
                listed: true,
            };
            ranked.push((noise.min(1.0) * share.max(MIN_X_SHARE), cand));
            skip(a, b, pending, &mut skips);
            continue;
        }
        if (u <= threshold || narrow) && !crosses {
            let why = if u <= threshold {
                Skip::Known {
                    uncertainty: u,
                    threshold,
                }
            } else {
                Skip::Narrow { share }
            };
            skip(a, b, why, &mut skips);
            continue;
        }
        if let (Some(by), false) = (dominated, crosses) {
            skip(a, b, Skip::Dominated { by, margin }, &mut skips);
            continue;
        }
        // Would the point change the group's frontier? Its predicted place, even at the top of
        // its uncertainty, under another curve by more than the threshold: it would not (a
        // dominated curve's stretch whose far end alone reaches past the others, say TP 1's
        // 16..256 on the sim, is not split at 64 where TP 2 wins).
        let buried = predicted.is_some_and(|(px, py)| {
            others_at(curves, i, px)
                .is_some_and(|o| o > py * (1.0 + u.min(1.0)) * (1.0 + threshold))
        });
        if !crosses && buried {
            skip(a, b, Skip::Buried, &mut skips);
            continue;
        }
        let u = if crosses { u.max(tol) } else { u };
        // Ranked by what it can cost the measure: the uncertainty (capped at 100 %) times the
        // stretch's share of the group's x range, so that a curve's capped points go where the
        // frontier is decided, not to a steep end that interactivity barely spans.
        let why = if crosses {
            Why::Crossing {
                uncertainty: u,
                share,
            }
        } else {
            Why::Bend {
                uncertainty: u,
                share,
            }
        };
        let cand = Candidate {
            conc: m,
            why,
            listed: listed_inside.is_some(),
        };
        ranked.push((u.min(1.0) * share, cand));
        skip(a, b, pending, &mut skips);
    }
    ranked.sort_by(|a, b| b.1.listed.cmp(&a.1.listed).then(b.0.total_cmp(&a.0)));
    let cands: Vec<Candidate> = ranked.into_iter().map(|(_, c)| c).collect();
    skips.retain(|s| !cands.iter().any(|c| c.conc == s.0));
    skips.sort_by_key(|s| s.0);
    (cands, skips)
}

/// [`Why::FalseKnot`]: the largest relative gap by which curve `me`, read straight (linear in
/// x and y, as a frontier is drawn) between its valid points `a` and `b`, serves the x of
/// another curve's valid point inside (a, b)'s x span that no valid point of the group
/// dominates, when above `tol`; `None` otherwise.
fn false_knot(
    curves: &[Curve],
    me: usize,
    (a, b): (&(u32, f64, f64), &(u32, f64, f64)),
    tol: f64,
) -> Option<f64> {
    let (x_lo, x_hi) = (a.1.min(b.1), a.1.max(b.1));
    if x_hi <= x_lo {
        return None;
    }
    let all: Vec<(f64, f64)> = curves
        .iter()
        .flat_map(|c| c.valid())
        .map(|p| (p.1, p.2))
        .collect();
    let mut worst: Option<f64> = None;
    for (j, c) in curves.iter().enumerate() {
        if j == me {
            continue;
        }
        for q in c.valid() {
            let (qx, qy) = (q.1, q.2);
            if !(qx > x_lo && qx < x_hi && qy > 0.0) {
                continue;
            }
            let dominated = all
                .iter()
                .any(|&(x, y)| x >= qx && y >= qy && (x > qx || y > qy));
            if dominated {
                continue;
            }
            let line = a.2 + (b.2 - a.2) * (qx - a.1) / (b.1 - a.1);
            let gap = line / qy - 1.0;
            if gap > tol && worst.is_none_or(|w| gap > w) {
                worst = Some(gap);
            }
        }
    }
    worst
}

/// Runs a whole plan: rounds of [`next_round`], each proposal measured by `measure(curve,
/// conc)`, until a round proposes nothing. Returns the curves with every point measured, and
/// the proposals in the order made.
pub fn run(
    curves: Vec<Curve>,
    tolerance: f64,
    measure: impl FnMut(usize, u32) -> Measured,
) -> (Vec<Curve>, Vec<(usize, u32)>) {
    let (curves, order, _) = run_k(curves, tolerance, 1, measure);
    (curves, order)
}

/// [`run`] with up to `k` points per curve per round ([`next_round_k`]); also returns the
/// number of rounds.
pub fn run_k(
    mut curves: Vec<Curve>,
    tolerance: f64,
    k: usize,
    mut measure: impl FnMut(usize, u32) -> Measured,
) -> (Vec<Curve>, Vec<(usize, u32)>, usize) {
    let mut order = Vec::new();
    let mut rounds = 0;
    loop {
        let round = next_round_k(&curves, tolerance, k);
        if round.is_empty() {
            return (curves, order, rounds);
        }
        rounds += 1;
        for (i, c) in round {
            let m = measure(i, c);
            curves[i].points.insert(c, m);
            order.push((i, c));
        }
    }
}

/// The local executor's order of an adaptive sweep's points ([`run_local`]), one point at a
/// time: first every curve's ends and middle, one curve after the other (so that each curve's
/// refinement is planned against every curve of its group, not only the ones before it),
/// then each curve's refinement, all of one curve's points in a row, the curves in reverse
/// order (the last seeded curve's engine is still up). Since 2026-12-08 a curve left behind
/// is returned to when the others' refinement makes it worth more points (the group's noise
/// read from their points turned it noisy: llama.cpp's ep 4 conc 2, "not revisited" before),
/// the last such curve first, until no curve proposes a point (a relaunch of its engine).
/// Deterministic; at most each curve's [`Curve::max_points`].
#[derive(Debug, Clone, Default)]
pub struct LocalOrder {
    /// `None` while seeding; then 1 + the curve being refined (0: done).
    refining: Option<usize>,
}

impl LocalOrder {
    /// The next point `(curve index, conc)` of `curves`, whose group ids are `groups`
    /// (`groups[i]` for curve `i`; curves of one id compete for one frontier), at `tolerance`
    /// (as [`next_round_k`] reads it); `None` when the sweep is done.
    pub fn next(
        &mut self,
        curves: &[Curve],
        groups: &[usize],
        tolerance: f64,
    ) -> Option<(usize, u32)> {
        self.next_candidate(curves, groups, tolerance)
            .map(|(i, c)| (i, c.conc))
    }

    /// [`LocalOrder::next`] with the planner's reason for the point ([`Candidate`]).
    pub fn next_candidate(
        &mut self,
        curves: &[Curve],
        groups: &[usize],
        tolerance: f64,
    ) -> Option<(usize, Candidate)> {
        let tol = if tolerance.is_finite() && tolerance > 0.0 {
            tolerance
        } else {
            DEFAULT_TOLERANCE
        };
        let propose = |i: usize, seeds_only: bool| -> Option<Candidate> {
            let (sub, me) = group_of(curves, groups, i)?;
            let first = explain_curve(&sub, me, tol).into_iter().next()?;
            (!seeds_only || first.why == Why::Seed).then_some(first)
        };
        if self.refining.is_none() {
            if let Some(p) = (0..curves.len()).find_map(|i| propose(i, true).map(|c| (i, c))) {
                return Some(p);
            }
            self.refining = Some(curves.len());
        }
        let mut cur = self.refining.unwrap_or(0);
        while cur > 0 {
            if let Some(c) = propose(cur - 1, false) {
                self.refining = Some(cur);
                return Some((cur - 1, c));
            }
            cur -= 1;
        }
        // Every curve has been refined once. A curve left behind may be worth more points now
        // that the others were (the group's noise read from their points can turn it noisy,
        // or a crossing appear): return to it, the last such curve first, as the pass did.
        // Each proposal is a point not measured yet, so this ends.
        if let Some((i, c)) = (0..curves.len())
            .rev()
            .find_map(|i| propose(i, false).map(|c| (i, c)))
        {
            self.refining = Some(i + 1);
            return Some((i, c));
        }
        self.refining = Some(0);
        None
    }
}

/// The curves of curve `i`'s group (`groups[i]`, curves of one id compete for one frontier)
/// and `i`'s index among them; `None` when `i` is out of range.
fn group_of(curves: &[Curve], groups: &[usize], i: usize) -> Option<(Vec<Curve>, usize)> {
    curves.get(i)?;
    let g = groups.get(i).copied().unwrap_or(usize::MAX);
    let members: Vec<usize> = (0..curves.len())
        .filter(|j| *j == i || groups.get(*j) == Some(&g))
        .collect();
    let sub: Vec<Curve> = members.iter().map(|j| curves[*j].clone()).collect();
    let me = members.iter().position(|j| *j == i)?;
    Some((sub, me))
}

/// One concurrency of a curve and the planner's reason for it ([`CurvePlan`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlanNote {
    /// The concurrency.
    pub conc: u32,
    /// Why it was proposed ([`Why`]'s text) or skipped ([`Skip`]'s text).
    pub reason: String,
}

/// What the planner did with one curve of an adaptive sweep (`sweep.json`'s
/// `adaptive.curves[]`), so that a reader can see why a point was measured or skipped.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CurvePlan {
    /// The matrix row the curve's points were made from (its first listed row's index).
    pub row: usize,
    /// The listed concurrencies.
    pub listed: Vec<u32>,
    /// The concurrencies measured (valid or not), in the order proposed.
    pub measured: Vec<u32>,
    /// The run-to-run noise the plan used for the curve when it stopped (relative, one
    /// standard deviation: 0.1 = 10 %): the larger of the group's evidence ([`group_noise`])
    /// and the curve's own [`noise_estimate`].
    pub noise: f64,
    /// Whether the group's evidence of noise exceeded the tolerance ([`Why::Noisy`]): its
    /// undominated stretches were measured at their listed points.
    pub noisy: bool,
    /// Each proposal, in order, with its reason ([`Why`]).
    pub proposals: Vec<PlanNote>,
    /// Each listed concurrency not measured, with the reason the plan stopped without it
    /// ([`Skip`]; "not revisited" where the local order had left the curve when the rest of
    /// its group made the point worth measuring).
    pub skipped: Vec<PlanNote>,
}

/// [`CurvePlan`]s (without their `row`, 0) of a finished plan: `curves` as measured, `groups`
/// as [`LocalOrder::next`] takes them, `tolerance` as it reads it, and `proposals` the
/// (curve index, [`Candidate`]) made, in order. Skips are read from the final measurements;
/// a listed concurrency the planner would still propose (a sweep cut short; before 2026-12-08
/// the local order never returned to a curve it left) is skipped as "not revisited" with that
/// reason.
pub fn curve_plans(
    curves: &[Curve],
    groups: &[usize],
    tolerance: f64,
    proposals: &[(usize, Candidate)],
) -> Vec<CurvePlan> {
    let tol = if tolerance.is_finite() && tolerance > 0.0 {
        tolerance
    } else {
        DEFAULT_TOLERANCE
    };
    (0..curves.len())
        .map(|i| {
            let (sub, me) = group_of(curves, groups, i).unwrap_or((vec![curves[i].clone()], 0));
            let (cands, skips) = plan_curve(&sub, me, tol);
            let evidence = group_noise(&sub);
            let mut skipped: Vec<PlanNote> = skips
                .into_iter()
                .map(|(conc, why)| PlanNote {
                    conc,
                    reason: why.to_string(),
                })
                .collect();
            skipped.extend(cands.iter().map(|c| PlanNote {
                conc: c.conc,
                reason: format!(
                    "not revisited: the local order had left this curve (now: {})",
                    c.why
                ),
            }));
            skipped.retain(|n| curves[i].listed.contains(&n.conc));
            skipped.sort_by_key(|n| n.conc);
            let mine = proposals.iter().filter(|p| p.0 == i);
            CurvePlan {
                row: 0,
                listed: curves[i].listed.clone(),
                measured: mine.clone().map(|p| p.1.conc).collect(),
                noise: noise_estimate(&curves[i].valid()).max(evidence),
                noisy: evidence > tol,
                proposals: mine
                    .map(|p| PlanNote {
                        conc: p.1.conc,
                        reason: p.1.why.to_string(),
                    })
                    .collect(),
                skipped,
            }
        })
        .collect()
}

/// What `sweep.json` says of an adaptive sweep (`adaptive`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdaptiveReport {
    /// The tolerance the frontier is known to (relative, 0.02 = 2 %).
    pub tolerance: f64,
    /// Rounds of points run.
    pub rounds: usize,
    /// Listed concurrencies over every curve (the full list's points).
    pub listed_points: usize,
    /// Points measured (valid or not).
    pub measured_points: usize,
    /// GPU-seconds the full listed set would have taken, estimated from the measured points
    /// ([`full_list_gpu_seconds`]: a skipped point from its neighbours' throughput conc / E2EL
    /// and its own prompts; a point the early-stop rule ended counts at its GPU-seconds ×
    /// planned / used prompts).
    pub full_list_gpu_seconds: f64,
    /// 1 − spent / `full_list_gpu_seconds` (0 when the estimate is 0).
    pub saved_fraction: f64,
    /// Per curve, what the planner measured and skipped and why, and the noise it used
    /// ([`CurvePlan`]); empty in a `sweep.json` written before 2026-12-07 (evening).
    #[serde(default)]
    pub curves: Vec<CurvePlan>,
}

/// What one measured point of a curve tells [`full_list_gpu_seconds`] about its cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointCost {
    /// The point's GPU-seconds without its launch share (GPU-s; a point the early-stop rule
    /// ended scaled up to its planned prompts or duration).
    pub gpu_seconds: f64,
    /// Prompts the point was planned with (the count `gpu_seconds` stands for).
    pub prompts: f64,
    /// The point's mean E2EL (s), `None` where a point's cost does not follow from it (an
    /// AgentX replay runs for its planned duration at every concurrency) or it is unknown.
    pub mean_e2el_s: Option<f64>,
}

/// A measured point's closed-loop terms: (throughput X = conc / mean E2EL in requests/s, GPU-s
/// per closed-loop second ρ = GPU-s / (prompts / X)), `None` when it has no positive E2EL.
fn closed_loop_terms(conc: u32, p: &PointCost) -> Option<(f64, f64)> {
    let e = p.mean_e2el_s.filter(|e| e.is_finite() && *e > 0.0)?;
    let x = f64::from(conc.max(1)) / e;
    let busy = p.prompts / x;
    (busy.is_finite() && busy > 0.0 && p.gpu_seconds.is_finite()).then(|| (x, p.gpu_seconds / busy))
}

/// GPU-seconds of the full listed set of one curve, estimated from what was measured
/// (`measured`: concurrency → [`PointCost`]; `prompts`: a concurrency's planned prompts). A
/// listed concurrency that was measured costs what it cost. One that was not is estimated from
/// how a closed-loop point's cost arises: by Little's law its requests complete at X = conc /
/// E2EL per second, so its profile lasts ≈ prompts / X, and it costs ρ × that, where ρ (GPU-s
/// per profiled second) holds its GPUs and its warmup's share. So a skipped point costs
/// `ρ × prompts(c) / X`, with
/// - between two measured concurrencies a < c < b: ρ interpolated linearly in conc, and
///   prompts / X the lower of two readings, E2EL(c) interpolated linearly in conc (exact where
///   E2EL is affine in conc: a batched engine whose step time grows by a fixed amount per
///   sequence, as the sim's, or a saturated one, E2EL = conc / X) and X(c) interpolated
///   linearly in conc (exact where throughput is flat or linear). Where E2EL is convex and X
///   concave in conc (queueing sets in, throughput saturates), each reading overestimates the
///   point, so the lower one is the closer; with 10 × conc prompts a cost affine in conc is
///   estimated exactly;
/// - below the lowest measured b: b's X and ρ (throughput does not rise as conc falls: for
///   10 × conc prompts, cost(b) × c / b);
/// - above the highest measured a: a's ρ and E2EL, X = c / E2EL(a) (latency does not fall as
///   conc rises: for 10 × conc prompts, cost(a)).
///
/// The ends are thus extrapolated conservatively, as lower bounds of what the point would
/// cost (the saving is not overstated). A skipped concurrency next to a measured point
/// without an E2EL (an AgentX replay, whose cost is its planned duration, not its prompts)
/// falls back to the cost interpolated linearly in log-concurrency, the nearest measured
/// one's beyond the ends. 0 without any measurement. Units: GPU-seconds.
pub fn full_list_gpu_seconds(
    listed: &[u32],
    measured: &BTreeMap<u32, PointCost>,
    prompts: impl Fn(u32) -> f64,
) -> f64 {
    let t = |c: u32| f64::from(c.max(1)).ln();
    let lin = |x: f64, a: f64, b: f64, ya: f64, yb: f64| ya + (x - a) / (b - a) * (yb - ya);
    listed
        .iter()
        .map(|&c| {
            if let Some(p) = measured.get(&c) {
                return p.gpu_seconds;
            }
            let below = measured.range(..c).next_back();
            let above = measured.range(c..).next();
            let n = prompts(c);
            let cf = f64::from(c.max(1));
            let model = match (below, above) {
                (Some((&a, pa)), Some((&b, pb))) => closed_loop_terms(a, pa)
                    .zip(closed_loop_terms(b, pb))
                    .map(|((xa, ra), (xb, rb))| {
                        let (fa, fb) = (f64::from(a.max(1)), f64::from(b.max(1)));
                        // E2EL linear in conc (E = conc / X at each end) or X linear in
                        // conc: the lower of the two.
                        let e = lin(cf, fa, fb, fa / xa, fb / xb);
                        let x = lin(cf, fa, fb, xa, xb);
                        lin(cf, fa, fb, ra, rb) * n * (e / cf).min(1.0 / x)
                    }),
                (None, Some((&b, pb))) => closed_loop_terms(b, pb).map(|(x, r)| r * n / x),
                (Some((&a, pa)), None) => {
                    closed_loop_terms(a, pa).map(|(x, r)| r * n * f64::from(a.max(1)) / x / cf)
                }
                (None, None) => return 0.0,
            };
            if let Some(g) = model.filter(|g| g.is_finite() && *g >= 0.0) {
                return g;
            }
            match (below, above) {
                (Some((&a, pa)), Some((&b, pb))) => {
                    lin(t(c), t(a), t(b), pa.gpu_seconds, pb.gpu_seconds)
                }
                (Some((_, p)), None) | (None, Some((_, p))) => p.gpu_seconds,
                (None, None) => 0.0,
            }
        })
        .sum()
}

/// The issue's measure's tolerance: the adaptive frontier is within 3 % of the full list's.
pub const MATCH_TOLERANCE: f64 = 0.03;

/// The issue's measure's coverage: within [`MATCH_TOLERANCE`] over at least 90 % of the full
/// list's interactivity range.
pub const MATCH_FRACTION: f64 = 0.90;

/// Samples of the interactivity range [`frontier_match`] compares at (midpoints of this many
/// equal stretches).
pub const MATCH_SAMPLES: usize = 1000;

/// How closely a group's frontier from one set of points (an adaptive sweep's) reproduces its
/// frontier from another (the full list's): issue 43's "within 3 % at matched interactivity
/// over ≥ 90 % of its interactivity range".
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FrontierMatch {
    /// The relative gap counted as a match (0.03 = 3 %).
    pub tolerance: f64,
    /// Fraction (0..=1) of the full frontier's interactivity range, linear in x (the chart's
    /// axis), where the other frontier exists and its y is within `tolerance` of the full
    /// one's: |y_other / y_full − 1| ≤ tolerance.
    pub within_fraction: f64,
    /// The largest relative gap |y_other / y_full − 1| over the samples where both exist
    /// (0 when there is none).
    pub worst_gap: f64,
    /// Fraction of the range where the other frontier does not reach (no interpolation there).
    pub missing_fraction: f64,
    /// The full frontier's interactivity range (lowest x, highest x).
    pub x_range: (f64, f64),
}

impl FrontierMatch {
    /// Whether the measure passes: `within_fraction` ≥ [`MATCH_FRACTION`].
    pub fn passes(&self) -> bool {
        self.within_fraction >= MATCH_FRACTION
    }
}

/// The knots of the Pareto frontier (both axes higher-is-better: throughput per GPU against
/// interactivity) of `points` (x, y), sorted by x; non-finite points and x ≤ 0 are skipped.
pub fn frontier_knots(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    use inferbench_core::analytics::{pareto_frontier, Better, Goal};
    let goal = Goal {
        x: Better::Higher,
        y: Better::Higher,
    };
    pareto_frontier(points, goal)
        .into_iter()
        .map(|k| points[k])
        .collect()
}

/// Issue 43's measure, pure: compares the frontier of one group's `found` points (x, y) with
/// the frontier of its `full` points (x = median interactivity, tok/s/user, or for AgentX rows
/// p90 E2E-normalized interactivity, on which the North-Star gate is the Pareto rule itself;
/// y = throughput per GPU, tok/s/GPU). Each frontier is the Pareto frontier of its points
/// ([`frontier_knots`]), read at x the way `report` and the dashboard read a frontier at a
/// target interactivity (`core::analytics::interpolate_at`: monotone cubic through the knots,
/// no extrapolation). At [`MATCH_SAMPLES`] evenly spaced x over the full frontier's range (a
/// single-knot frontier: its x), the relative gap |y_found / y_full − 1| is compared with
/// `tolerance` (a tolerance that is not a non-negative number is read as
/// [`MATCH_TOLERANCE`]); where the found frontier does not reach x the sample is missing, not
/// within. `None` when `full` has no frontier (no valid point).
pub fn frontier_match(
    full: &[(f64, f64)],
    found: &[(f64, f64)],
    tolerance: f64,
) -> Option<FrontierMatch> {
    use inferbench_core::analytics::interpolate_at;
    let tol = if tolerance.is_finite() && tolerance >= 0.0 {
        tolerance
    } else {
        MATCH_TOLERANCE
    };
    let a = frontier_knots(full);
    let b = frontier_knots(found);
    let (lo, hi) = (a.first()?.0, a.last()?.0);
    let n = if hi > lo { MATCH_SAMPLES } else { 1 };
    let (mut within, mut missing, mut worst) = (0usize, 0usize, 0.0f64);
    for s in 0..n {
        let x = if n == 1 {
            lo
        } else {
            lo + (hi - lo) * (s as f64 + 0.5) / n as f64
        };
        let Some(want) = interpolate_at(&a, x) else {
            missing += 1;
            continue;
        };
        let Some(got) = interpolate_at(&b, x) else {
            missing += 1;
            continue;
        };
        let gap = if want > 0.0 {
            (got / want - 1.0).abs()
        } else if got == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        worst = worst.max(gap);
        if gap <= tol {
            within += 1;
        }
    }
    Some(FrontierMatch {
        tolerance: tol,
        within_fraction: within as f64 / n as f64,
        worst_gap: worst,
        missing_fraction: missing as f64 / n as f64,
        x_range: (lo, hi),
    })
}

/// One point of a fixed-sequence-length row in the sim's roofline model, in modelled time
/// (no server, no queueing: `inferbench_sim::roofline::point_bound` with the simulator's
/// default efficiencies): what a planner test or the savings benchmark measures instead of
/// running the sim.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPoint {
    /// Interactivity, tok/s/user (1 / decode step).
    pub x: f64,
    /// Input + output tok/s per GPU.
    pub y: f64,
    /// GPU-seconds of the point's profile: InferenceX's fixed protocol, 10 × conc prompts at
    /// concurrency conc (10 rounds of one batched prefill and OSL decode steps), × TP.
    pub gpu_seconds: f64,
}

/// The sim's roofline model of one point: `hardware` and `model` catalogue names
/// (`inferbench_sim::Catalogue`), `precision` as the sim parses it, TP `tp`, concurrency
/// `conc`, ISL/OSL in tokens. Errors: a name or precision the catalogue does not know.
pub fn sim_model_point(
    hardware: &str,
    model: &str,
    precision: &str,
    tp: u32,
    conc: u32,
    isl: u32,
    osl: u32,
) -> anyhow::Result<ModelPoint> {
    use inferbench_sim::catalogue::{Catalogue, Precision};
    use inferbench_sim::roofline::{point_bound, RooflineParams};
    let cat = Catalogue::embedded();
    let hw = cat.hardware(hardware)?;
    let m = cat.model(model)?;
    let p = Precision::parse(precision)?;
    let b = point_bound(hw, m, p, tp, conc, isl, osl, &RooflineParams::default());
    let round = b.prefill_s + f64::from(osl) * b.decode_step_s;
    Ok(ModelPoint {
        x: b.interactivity_tok_s_user,
        y: b.total_tok_s_per_gpu,
        gpu_seconds: 10.0 * round * f64::from(tp.max(1)),
    })
}

/// The curve a single-node row belongs to: the row without its concurrency. InferenceX names
/// AgentX rows with their concurrency (`exp-name` `dsv4_tp8_conc96_kvnone_spec-mtp`, its
/// generator's outputs under `data/inferencex/expected/`), so that `_`-delimited `conc<N>`
/// part is left out too: without it every AgentX row was a one-point curve of its own and
/// `--adaptive` measured every listed concurrency (issue 43, the lead's AgentX sweep on the sim).
fn curve_key(spec: &JobSpec) -> String {
    let mut row = spec.row.clone();
    if let inferbench_core::matrix::Conc::One(c) = row.conc {
        row.exp_name = exp_name_at(&row.exp_name, c, None);
    }
    row.conc = inferbench_core::matrix::Conc::One(0);
    serde_json::to_string(&row).unwrap_or_default()
}

/// `exp_name` with its `_`-delimited part `conc<from>` (if any) replaced by `conc<to>`, or
/// `conc*` when `to` is `None`; names without such a part are returned as they are.
fn exp_name_at(exp_name: &str, from: u32, to: Option<u32>) -> String {
    let part = format!("conc{from}");
    let new = to.map_or_else(|| "conc*".to_string(), |c| format!("conc{c}"));
    exp_name
        .split('_')
        .map(|p| if p == part { new.as_str() } else { p })
        .collect::<Vec<_>>()
        .join("_")
}

/// The matrix row of curve `spec` (any of its rows) at concurrency `c`: the listed row itself
/// when `c` is listed in `listed` (rows of one curve, as [`curves_of`] grouped them), else
/// `spec`'s row with `conc` set to `c` and its `exp-name`'s `conc<N>` part (AgentX rows) named
/// for `c`.
fn row_at(spec: &JobSpec, listed: &[JobSpec], c: u32) -> inferbench_core::matrix::MatrixRow {
    let key = curve_key(spec);
    if let Some(j) = listed.iter().find(|j| {
        matches!(j.row.conc, inferbench_core::matrix::Conc::One(k) if k == c) && curve_key(j) == key
    }) {
        return j.row.clone();
    }
    let mut row = spec.row.clone();
    if let inferbench_core::matrix::Conc::One(from) = row.conc {
        row.exp_name = exp_name_at(&row.exp_name, from, Some(c));
    }
    row.conc = inferbench_core::matrix::Conc::One(c);
    row
}

/// The frontier group a row competes in (`report`'s group: model, ISL/OSL, scenario, hardware,
/// framework, precision, spec decoding).
fn group_key(spec: &JobSpec) -> String {
    let r = &spec.row;
    format!(
        "{}|{:?}|{:?}|{:?}|{}|{}|{}|{}",
        r.model, r.isl, r.osl, r.scenario_type, r.runner, r.framework, r.precision, r.spec_decoding
    )
}

/// (x, y) of a finished point from its `summary.json`: median interactivity (AgentX rows: p90
/// E2E-normalized interactivity, the North-Star x of `report`'s agentic frontier, on which
/// that frontier's North-Star gate is the Pareto rule itself), tok/s/user, and throughput per
/// GPU over the row's GPUs; `None` when the file is missing, marked invalid, or lacks either.
fn point_xy(dir: &std::path::Path, spec: &JobSpec) -> Measured {
    let text = std::fs::read(dir.join("summary.json")).ok()?;
    let summary: inferbench_core::summary::RunSummary = serde_json::from_slice(&text).ok()?;
    if summary.inferbench.invalid_reason.is_some() {
        return None;
    }
    let v = inferbench_core::slo::point_values(&summary, u64::from(spec.gpu_count()));
    let x = if spec.is_agentic() {
        "p90_e2e_norm_intvty"
    } else {
        "median_intvty"
    };
    Some((*v.get(x)?, *v.get("tput_per_gpu")?))
}

/// `inferbench.prompts_used` of the point's `summary.json` (set when it ran under the
/// early-stop rule), `None` without.
fn prompts_used(dir: &std::path::Path) -> Option<u64> {
    let text = std::fs::read(dir.join("summary.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    v["inferbench"]["prompts_used"].as_u64()
}

/// The mean E2EL (s) of a point's `summary.json` (`mean_e2el_ms`), `None` when it has none.
fn mean_e2el_s(dir: &std::path::Path) -> Option<f64> {
    let text = std::fs::read(dir.join("summary.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    v["mean_e2el_ms"].as_f64().map(|ms| ms / 1000.0)
}

/// The profiled seconds (`duration`) of an adaptive point's `summary.json` (issue 43: an AgentX
/// replay its early stop ended), or `None` when the point was not adaptive or has none.
fn profiled_s(dir: &std::path::Path) -> Option<f64> {
    let text = std::fs::read(dir.join("summary.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    if v["inferbench"]["adaptive"].as_bool() != Some(true) {
        return None;
    }
    v["duration"].as_f64()
}

/// Why `sweep --adaptive` cannot plan `jobs` run with `bench`'s client settings, or `None`
/// when it can. An AgentX (`agentic-coding`) row replayed for less than AgentX's 900 s minimum
/// (`--agentic-duration`, else the row's `duration`, else 3,600 s) makes only invalid points,
/// and an invalid point never counts as measured: the plan would run each curve's ends and
/// middle and stop knowing nothing of its frontier. Multinode and eval-only rows run as listed
/// and are not checked.
pub fn cannot_plan(jobs: &[JobSpec], bench: &crate::point::BenchDefaults) -> Option<String> {
    let short: Vec<String> = jobs
        .iter()
        .filter(|j| j.is_agentic() && !j.is_multinode() && !crate::evals::eval_only(j))
        .filter_map(|j| {
            let d = bench.replay_settings(j.row.duration).duration_s;
            (d < crate::bench::MIN_VALID_AGENTIC_S).then(|| crate::sweep::row_name(j, bench))
        })
        .collect();
    if short.is_empty() {
        return None;
    }
    Some(format!(
        "--adaptive cannot plan agentic-coding rows replayed for less than AgentX's {} s \
         minimum: {}. Every such point is invalid, and an invalid point never counts as \
         measured, so no frontier could be found; give --agentic-duration of at least {} s (or \
         rows with such a `duration`), or sweep them without --adaptive",
        crate::bench::MIN_VALID_AGENTIC_S,
        short.join(", "),
        crate::bench::MIN_VALID_AGENTIC_S
    ))
}

/// What `sweep --adaptive` on Slurm/GitHub writes under `--out` at each call
/// ([`next_round_matrix`]): a JSON array of [`CurvePlan`]s, one per curve (`measured`: the
/// concurrencies measured before the round, ascending; `proposals`: the round's, with their
/// reasons; `skipped`: each listed concurrency left out and why, "later round:" for one the
/// planner would propose after this round). Overwritten each call: the last says why the plan
/// stopped.
pub const PLAN_FILE: &str = "adaptive-plan.json";

/// Prefix of the matrices `sweep --adaptive` writes for Slurm/GitHub follow-up rounds:
/// `<out>/adaptive-round-<N>.json`.
pub const ROUND_PREFIX: &str = "adaptive-round-";

/// The points of earlier rounds found under `out` (its point directories, and one level
/// below: each with a `job.json` whose row and concurrency name the point): curve key →
/// concurrency → [`Measured`] (`None` for a point that failed, was interrupted or is invalid:
/// tried, never counted). A directory without a finished `status.json` is not a point yet.
fn measured_under(out: &std::path::Path) -> BTreeMap<String, BTreeMap<u32, Measured>> {
    let mut found: BTreeMap<String, BTreeMap<u32, Measured>> = BTreeMap::new();
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    let subdirs = |d: &std::path::Path| -> Vec<std::path::PathBuf> {
        let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    for d in subdirs(out) {
        dirs.extend(subdirs(&d));
        dirs.push(d);
    }
    for d in dirs {
        let Some(job) = std::fs::read(d.join(crate::artifacts::JOB_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice::<crate::artifacts::JobFile>(&b).ok())
        else {
            continue;
        };
        let Some(status) = crate::artifacts::read_status(&d) else {
            continue;
        };
        let Some(row) = job.row() else {
            continue;
        };
        let spec = JobSpec { index: 0, row };
        let ok =
            status.state == crate::artifacts::PointState::Ok && !crate::sweep::summary_invalid(&d);
        let m = if ok { point_xy(&d, &spec) } else { None };
        found
            .entry(curve_key(&spec))
            .or_default()
            .insert(job.conc, m);
    }
    found
}

/// The default points per curve of a Slurm/GitHub follow-up round (`sweep
/// --adaptive-round-points`): each round is a job submission and a wait, so a round proposes
/// the 3 most valuable points of each curve rather than one.
pub const DEFAULT_ROUND_POINTS: usize = 3;

/// Issue 43's measure between two sweeps' output directories (`--out` of the full list and of
/// `sweep --adaptive`): per frontier group (`report`'s group), the valid points under each
/// (as follow-up rounds read them: `job.json`, a finished `status.json`, `summary.json`; failed
/// and invalid points never count) compared by [`frontier_match`] at `tolerance`. Returns
/// (group, the measure; `None` when the full sweep has no valid point in the group), groups in
/// order. Unreadable directories read as empty.
pub fn measure_dirs(
    full: &std::path::Path,
    found: &std::path::Path,
    tolerance: f64,
) -> Vec<(String, Option<FrontierMatch>)> {
    let by_group = |out: &std::path::Path| -> BTreeMap<String, Vec<(f64, f64)>> {
        let mut g: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for (curve, points) in measured_under(out) {
            let Ok(row) = serde_json::from_str::<inferbench_core::matrix::MatrixRow>(&curve) else {
                continue;
            };
            let key = group_key(&JobSpec { index: 0, row });
            g.entry(key)
                .or_default()
                .extend(points.values().flatten().copied());
        }
        g
    };
    let (a, b) = (by_group(full), by_group(found));
    a.iter()
        .map(|(k, pts)| {
            let other = b.get(k).map(Vec::as_slice).unwrap_or(&[]);
            (k.clone(), frontier_match(pts, other, tolerance))
        })
        .collect()
}

/// `sweep --adaptive` on Slurm/GitHub, one round per call: the curves of `jobs` (as
/// [`run_local`] forms them) with the points earlier rounds left under `out` as measured,
/// [`next_round_k`] per group with up to `per_curve` points per curve (0 read as 1), and the
/// proposals written as a new matrix,
/// `<out>/adaptive-round-<N>.json` (and each curve's reasons to [`PLAN_FILE`], also when no
/// point is proposed) (N = 1 + the rounds written before; rows in `jobs`' order
/// of curves, each its curve's row at the proposed concurrency; the first round also holds
/// the rows that run as listed: multinode and eval-only rows). Returns that file and its rows
/// (indexed as the file is, what the executor submits), or `None` when no group proposes a
/// point: the frontier is known to within `tolerance` from what is under `out`. Errors: `out`
/// cannot be created, the file cannot be written.
pub fn next_round_matrix(
    jobs: &[JobSpec],
    out: &std::path::Path,
    tolerance: f64,
    per_curve: usize,
) -> anyhow::Result<Option<(std::path::PathBuf, Vec<JobSpec>)>> {
    let (curves, fixed) = curves_of(jobs);
    let measured = measured_under(out);
    let planned: Vec<Curve> = curves
        .iter()
        .map(|(_, spec, listed)| {
            let mut c = Curve::listed(listed);
            if let Some(m) = measured.get(&curve_key(spec)) {
                c.points = m
                    .iter()
                    .filter(|(k, _)| (c.lo..=c.hi).contains(*k))
                    .map(|(k, v)| (*k, *v))
                    .collect();
            }
            c
        })
        .collect();
    let mut groups: Vec<&str> = curves.iter().map(|c| c.0.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut proposals: Vec<(usize, u32)> = Vec::new();
    // Why (issue 43): per curve, this round's proposals and the listed concurrencies left out,
    // with their reasons, written to `<out>/adaptive-plan.json` (the last round's says why the
    // plan stopped).
    let mut plans: Vec<CurvePlan> = Vec::new();
    for g in groups {
        let members: Vec<usize> = (0..curves.len()).filter(|i| curves[*i].0 == g).collect();
        let sub: Vec<Curve> = members.iter().map(|i| planned[*i].clone()).collect();
        let round = next_round_k(&sub, tolerance, per_curve);
        let why = explain(&sub, tolerance);
        let evidence = group_noise(&sub);
        let tol = if tolerance.is_finite() && tolerance > 0.0 {
            tolerance
        } else {
            DEFAULT_TOLERANCE
        };
        for (k, &i) in members.iter().enumerate() {
            let note = |c: &Candidate, later: bool| PlanNote {
                conc: c.conc,
                reason: if later {
                    format!("later round: {}", c.why)
                } else {
                    c.why.to_string()
                },
            };
            let now = |c: &&Candidate| round.contains(&(k, c.conc));
            let mut skipped: Vec<PlanNote> = skipped(&sub, k, tolerance)
                .into_iter()
                .map(|(conc, why)| PlanNote {
                    conc,
                    reason: why.to_string(),
                })
                .chain(why[k].iter().filter(|c| !now(c)).map(|c| note(c, true)))
                .filter(|n| sub[k].listed.contains(&n.conc))
                .collect();
            skipped.sort_by_key(|n| n.conc);
            plans.push(CurvePlan {
                row: curves[i].1.index,
                listed: sub[k].listed.clone(),
                measured: sub[k].points.keys().copied().collect(),
                noise: noise_estimate(&sub[k].valid()).max(evidence),
                noisy: evidence > tol,
                proposals: why[k].iter().filter(now).map(|c| note(c, false)).collect(),
                skipped,
            });
        }
        proposals.extend(round.into_iter().map(|(k, c)| (members[k], c)));
    }
    plans.sort_by_key(|p| p.row);
    std::fs::create_dir_all(out)?;
    crate::artifacts::write_json_atomic(&out.join(PLAN_FILE), &plans)?;
    proposals.sort_unstable();
    if proposals.is_empty() {
        return Ok(None);
    }
    let earlier = std::fs::read_dir(out)?
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(ROUND_PREFIX) && n.ends_with(".json"))
        })
        .count();
    let mut rows: Vec<inferbench_core::matrix::MatrixRow> = Vec::new();
    if earlier == 0 {
        rows.extend(fixed.iter().map(|j| j.row.clone()));
    }
    rows.extend(
        proposals
            .iter()
            .map(|&(i, c)| row_at(&curves[i].1, jobs, c)),
    );
    let path = out.join(format!("{ROUND_PREFIX}{}.json", earlier + 1));
    crate::artifacts::write_json_atomic(&path, &rows)?;
    let specs = rows
        .into_iter()
        .enumerate()
        .map(|(index, row)| JobSpec { index, row })
        .collect();
    Ok(Some((path, specs)))
}

/// The adaptive curves of `jobs` — (group, template row, listed concurrencies), single-node
/// rows that differ only in concurrency — and the rows that run as listed (multinode rows,
/// whose concurrencies share one launch, and eval-only rows).
#[allow(clippy::type_complexity)]
fn curves_of(jobs: &[JobSpec]) -> (Vec<(String, JobSpec, Vec<u32>)>, Vec<JobSpec>) {
    let mut curves: Vec<(String, JobSpec, Vec<u32>)> = Vec::new();
    let mut fixed: Vec<JobSpec> = Vec::new();
    for j in jobs {
        let single = !j.is_multinode() && !crate::evals::eval_only(j);
        let one = match &j.row.conc {
            inferbench_core::matrix::Conc::One(c) => Some(*c),
            _ => None,
        };
        match (single, one) {
            (true, Some(c)) => match curves.iter_mut().find(|k| curve_key(&k.1) == curve_key(j)) {
                Some(k) => k.2.push(c),
                None => curves.push((group_key(j), j.clone(), vec![c])),
            },
            _ => fixed.push(j.clone()),
        }
    }
    (curves, fixed)
}

/// `sweep --adaptive[=TOLERANCE]` on the local executor: the single-node rows of `jobs` that
/// differ only in concurrency are one curve over their listed range (multinode rows, whose
/// concurrencies share one launch, and evals run as listed); curves of one `report` group
/// compete for its frontier. One curve at a time, each round runs the point [`next_round`]
/// proposes for it (planned with every curve's points so far) through one
/// [`crate::sweep::run_jobs_with`] (so each is an ordinary point, its artifacts and
/// GPU-seconds as always, and the curve's engine stays up across its rounds: one launch per
/// curve), reads its (x, y) back, and moves to the next curve when it proposes no more; it
/// stops after the last curve, or when `cancel` fires. The merged report carries [`AdaptiveReport`] and is written to
/// `<out>/sweep.json` when `opts.write_report`.
pub async fn run_local<R: crate::point::PointRunner>(
    jobs: &[JobSpec],
    opts: &crate::sweep::SweepOptions,
    runner: &R,
    cancel: &crate::CancellationToken,
    tolerance: f64,
) -> crate::sweep::SweepReport {
    use crate::sweep::{run_jobs, run_jobs_with, PointKind, SweepReport};
    let mut round_opts = opts.clone();
    round_opts.write_report = false;
    // The second lever: each point may stop once its metrics are known to the tolerance.
    if tolerance.is_finite() && tolerance > 0.0 {
        round_opts.bench.early_stop_tolerance = Some(tolerance);
    }
    // Curves: (group, template row, listed concurrencies).
    let (curves, fixed) = curves_of(jobs);
    let mut report = SweepReport::default();
    if !fixed.is_empty() {
        let r = run_jobs(&fixed, &round_opts, runner, cancel).await;
        report.points.extend(r.points);
    }
    let mut planned: Vec<Curve> = curves.iter().map(|(_, _, l)| Curve::listed(l)).collect();
    // The order of [`LocalOrder`]: every curve's ends and middle first (one curve after the
    // other), then each curve's refinement, the last seeded first (its engine is still up),
    // all of one curve's rounds in a row through one `run_jobs_with` (relaunched each round,
    // TP 2 at conc 2 cost 55.7 GPU-s against the list's 36.7). A curve the others dominate
    // is not refined and so never relaunched.
    let mut group_names: Vec<&str> = curves.iter().map(|c| c.0.as_str()).collect();
    group_names.sort_unstable();
    group_names.dedup();
    let groups: Vec<usize> = (curves.iter())
        .map(|c| group_names.binary_search(&c.0.as_str()).unwrap_or(0))
        .collect();
    let mut order = LocalOrder::default();
    let mut rounds = 0;
    // The curves in the order their points ran, one entry per run of one curve's points (a
    // launch of its engine).
    let mut runs: Vec<usize> = Vec::new();
    let mut pending: Vec<(usize, u32)> = Vec::new();
    // Every proposal and why, for `adaptive.curves` (what a reader of sweep.json sees).
    let mut proposals: Vec<(usize, Candidate)> = Vec::new();
    let plan = |report: &SweepReport| -> Vec<JobSpec> {
        for (i, c) in std::mem::take(&mut pending) {
            let spec = &curves[i].1;
            let p = (report.points.iter())
                .find(|p| p.kind == PointKind::Throughput && p.conc == c && p.index == spec.index);
            let ok = p.is_some_and(|p| {
                matches!(p.outcome, crate::Outcome::Ok | crate::Outcome::Skipped) && !p.invalid
            });
            let m = p.filter(|_| ok).and_then(|p| point_xy(&p.dir, spec));
            planned[i].points.insert(c, m);
        }
        let Some((i, cand)) = order.next_candidate(&planned, &groups, tolerance) else {
            return Vec::new();
        };
        let c = cand.conc;
        proposals.push((i, cand));
        rounds += 1;
        if runs.last() != Some(&i) {
            runs.push(i);
        }
        pending = vec![(i, c)];
        let mut j = curves[i].1.clone();
        j.row = row_at(&curves[i].1, jobs, c);
        vec![j]
    };
    let r = run_jobs_with(&[], &round_opts, runner, cancel, plan).await;
    report.points.extend(r.points);
    report.gpu_seconds = report.points.iter().filter_map(|p| p.gpu_seconds).sum();
    // What the listed set would have cost, with the plain sweep's launch accounting: each
    // point's own GPU-seconds (a point the early-stop rule ended after `prompts_used` of its
    // planned prompts scaled up to all of them), interpolated over the list, plus the curve's
    // launches once, as spent (one per curve, as the plain sweep's).
    let mut gpu_by_curve: Vec<BTreeMap<u32, PointCost>> = vec![BTreeMap::new(); curves.len()];
    // A curve refined after the others were seeded was launched once per run of its points:
    // the plain sweep launches it once, so its launch shares count divided by its runs.
    let runs_of = |i: usize| runs.iter().filter(|r| **r == i).count().max(1) as f64;
    let mut launches = 0.0;
    for p in report
        .points
        .iter()
        .filter(|p| p.kind == PointKind::Throughput)
    {
        let Some(i) = curves.iter().position(|(_, spec, _)| spec.index == p.index) else {
            continue;
        };
        let Some(g) = p.gpu_seconds else { continue };
        let launch = p.launch_gpu_seconds.unwrap_or(0.0);
        launches += launch / runs_of(i);
        let spec = &curves[i].1;
        let planned_prompts = f64::from(opts.bench.prompts(p.conc));
        let k = if spec.is_agentic() {
            // An AgentX replay costs by the second: one its early stop ended after `d` s of
            // its planned duration's profiling is scaled up to all of it.
            let planned = opts.bench.replay_settings(spec.row.duration).duration_s;
            profiled_s(&p.dir)
                .filter(|d| *d > 0.0 && *d < planned)
                .map_or(1.0, |d| planned / d)
        } else {
            let planned = planned_prompts;
            let used = prompts_used(&p.dir).map_or(planned, |u| u as f64);
            if used > 0.0 && used < planned {
                planned / used
            } else {
                1.0
            }
        };
        let cost = PointCost {
            gpu_seconds: (g - launch).max(0.0) * k,
            prompts: planned_prompts,
            mean_e2el_s: if spec.is_agentic() {
                None
            } else {
                mean_e2el_s(&p.dir)
            },
        };
        gpu_by_curve[i].insert(p.conc, cost);
    }
    let mut listed: Vec<u32> = Vec::new();
    let full: f64 = curves
        .iter()
        .zip(&gpu_by_curve)
        .map(|((_, _, l), g)| {
            listed.extend(l);
            full_list_gpu_seconds(l, g, |c| f64::from(opts.bench.prompts(c)))
        })
        .sum::<f64>()
        + launches
        + report
            .points
            .iter()
            .filter(|p| fixed.iter().any(|f| f.index == p.index))
            .filter_map(|p| p.gpu_seconds)
            .sum::<f64>();
    report.adaptive = Some(AdaptiveReport {
        tolerance,
        rounds,
        listed_points: listed.len(),
        measured_points: planned.iter().map(|c| c.points.len()).sum(),
        full_list_gpu_seconds: full,
        saved_fraction: if full > 0.0 {
            1.0 - report.gpu_seconds / full
        } else {
            0.0
        },
        curves: curve_plans(&planned, &groups, tolerance, &proposals)
            .into_iter()
            .zip(&curves)
            .map(|(p, (_, spec, _))| CurvePlan {
                row: spec.index,
                ..p
            })
            .collect(),
    });
    if opts.write_report {
        let _ = crate::artifacts::write_json_atomic(
            &opts.out_dir.join(crate::sweep::SWEEP_REPORT),
            &report,
        );
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A curve with a knee at conc 40: throughput grows linearly to 40 then is flat;
    /// interactivity falls as 1000 / (10 + conc).
    fn knee(c: u32) -> Measured {
        let c = c as f64;
        Some((1000.0 / (10.0 + c), 100.0 * c.min(40.0)))
    }

    #[test]
    fn starts_with_the_ends_and_the_middle() {
        let mut c = Curve::new(1, 256);
        let mut seen = Vec::new();
        for _ in 0..3 {
            let r = next_round(std::slice::from_ref(&c), 0.02);
            assert_eq!(r.len(), 1);
            seen.push(r[0].1);
            c.points.insert(r[0].1, knee(r[0].1));
        }
        assert_eq!(seen, [1, 256, 16]);
    }

    /// The knee at 40 lies between listed doubling concurrencies (32, 64): the plan brackets it
    /// within 1.5× and stops, deterministically, having measured under 20 of the 256.
    #[test]
    fn a_knee_between_listed_concurrencies_is_found() {
        let (curves, order) = run(vec![Curve::new(1, 256)], 0.02, |_, c| knee(c));
        let measured: Vec<u32> = curves[0].points.keys().copied().collect();
        // Bracketed tighter than the doubling list's 32..64.
        let below = measured.iter().filter(|c| **c <= 40).max().unwrap();
        let above = measured.iter().filter(|c| **c >= 40).min().unwrap();
        assert!(*above as f64 / *below as f64 <= 1.5, "{measured:?}");
        assert!(order.len() < 20, "{}", order.len());
        assert!(measured.iter().all(|c| (1..=256).contains(c)));
        let again = run(vec![Curve::new(1, 256)], 0.02, |_, c| knee(c)).1;
        assert_eq!(order, again);
    }

    /// A smooth power law (y = 50,000 / x, convex, which the chart's stretches between knots
    /// cut) takes no more points than its list and passes the measure; a flat y stops after
    /// the ends and the middle.
    #[test]
    fn a_smooth_curve_stops_early() {
        let power = |_: usize, c: u32| {
            let c = c as f64;
            Some((1000.0 / c.sqrt(), 50.0 * c.sqrt()))
        };
        let (curves, order) = run(vec![Curve::listed(&LISTED)], 0.02, power);
        assert!(order.len() <= 9, "{order:?}");
        let full: Vec<(f64, f64)> = LISTED.iter().filter_map(|c| power(0, *c)).collect();
        let found: Vec<(f64, f64)> = curves[0].points.values().flatten().copied().collect();
        assert!(frontier_match(&full, &found, MATCH_TOLERANCE)
            .unwrap()
            .passes());
        // Flat y: the ends and the middle, then nothing.
        let (_, order) = run(vec![Curve::new(1, 256)], 0.02, |_, c| {
            Some((1000.0 / c as f64, 500.0))
        });
        assert_eq!(order, [(0, 1), (0, 256), (0, 16)]);
    }

    /// ±10 % deterministic noise: the plan never loops, never leaves the range, proposes each
    /// concurrency at most once, and is the same every time.
    #[test]
    fn a_noisy_curve_ends_inside_the_range() {
        let noisy = |c: u32| {
            let h = (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            let e = 1.0 + 0.2 * ((h % 1000) as f64 / 1000.0 - 0.5);
            Some((1000.0 / (10.0 + c as f64), 80.0 * (c as f64).min(64.0) * e))
        };
        let (curves, order) = run(vec![Curve::new(4, 128)], 0.02, |_, c| noisy(c));
        // Noise splits intervals down to MIN_SPLIT_RATIO, no further: an interval is split
        // only when its ends are ≥ 1.25× apart, into halves ≥ √1.25 ≈ 1.118× apart, so at
        // most ln(32) / ln(1.118) ≈ 31 intervals.
        assert!(order.len() <= 32, "{order:?}");
        let mut cs: Vec<u32> = order.iter().map(|o| o.1).collect();
        assert!(cs.iter().all(|c| (4..=128).contains(c)));
        let n = cs.len();
        cs.sort();
        cs.dedup();
        assert_eq!(cs.len(), n, "a concurrency proposed twice");
        assert_eq!(curves[0].points.len(), n);
        assert_eq!(
            run(vec![Curve::new(4, 128)], 0.02, |_, c| noisy(c)).1,
            order
        );
    }

    /// An invalid point is tried once, never counted: the plan goes around it.
    #[test]
    fn invalid_points_never_count_and_are_not_retried() {
        let (curves, order) = run(vec![Curve::new(1, 256)], 0.02, |_, c| {
            if c == 16 {
                None
            } else {
                knee(c)
            }
        });
        assert_eq!(order.iter().filter(|o| o.1 == 16).count(), 1);
        assert_eq!(curves[0].points[&16], None);
        assert!(curves[0].valid().iter().all(|p| p.0 != 16));
    }

    /// The highest listed concurrency is invalid (an overloaded server): the stretch below it
    /// is bisected instead of left unknown, and the highest valid point ends the curve.
    #[test]
    fn an_invalid_end_is_approached_from_inside() {
        let (curves, order) = run(vec![Curve::new(1, 256)], 0.02, |_, c| {
            if c > 100 {
                None
            } else {
                knee(c)
            }
        });
        let valid = curves[0].valid();
        let top = valid.last().unwrap().0;
        assert!((64..=100).contains(&top), "{order:?}");
        assert!(order.iter().all(|o| (1..=256).contains(&o.1)));
        // Never closer than MIN_SPLIT_RATIO to the invalid points: no walk through 101, 102, …
        let invalid: Vec<u32> = (curves[0].points.iter())
            .filter(|(_, m)| m.is_none())
            .map(|(c, _)| *c)
            .collect();
        assert!(invalid.len() <= 3, "{invalid:?}");
    }

    /// Two curves of one group: one dominated everywhere by more than the tolerance (70 % less
    /// throughput at any interactivity it reaches) stops after its first three points, while
    /// the winner is refined.
    /// Issue 43: a point of another curve inside a stretch's x span that no measured point
    /// dominates is a knot of the drawn frontier; when the stretch, read straight, serves its
    /// x with more than the tolerance more (TP 1's conc 16 at x 114 against TP 2's 16..64
    /// read at 14,323 tok/s/GPU: 71.8 %), the stretch is split at its listed middle (32), and
    /// not once that point dominates the knot.
    #[test]
    fn a_false_knot_of_another_curve_splits_the_stretch_over_it() {
        let concs = [1, 2, 4, 8, 16, 32, 64, 128, 256];
        let mut tp2 = Curve::listed(&concs);
        for (c, x, y) in [
            (1, 214.3, 530.4),
            (16, 179.5, 6631.3),
            (64, 103.2, 15633.1),
            (256, 38.3, 23982.6),
        ] {
            tp2.points.insert(c, Some((x, y)));
        }
        let mut tp1 = Curve::listed(&concs);
        for (c, x, y) in [(1, 141.9, 700.7), (16, 114.3, 8338.4), (256, 21.3, 26631.8)] {
            tp1.points.insert(c, Some((x, y)));
        }
        let e = explain(&[tp2.clone(), tp1.clone()], 0.02);
        let knot = e[0]
            .iter()
            .find(|c| matches!(c.why, Why::FalseKnot { .. }))
            .copied();
        let Some(Candidate {
            conc: 32,
            why: Why::FalseKnot { gap, .. },
            listed: true,
        }) = knot
        else {
            panic!("{e:?}");
        };
        assert_eq!((gap * 1000.0).round(), 718.0);
        tp2.points.insert(32, Some((143.7, 10762.0)));
        let e = explain(&[tp2, tp1], 0.02);
        assert!(
            !e[0].iter().any(|c| matches!(c.why, Why::FalseKnot { .. })),
            "{e:?}"
        );
    }

    #[test]
    fn a_dominated_curve_stops_early() {
        let (_, order) = run(
            vec![Curve::new(1, 256), Curve::new(1, 256)],
            0.02,
            |i, c| {
                let (x, y) = knee(c).unwrap();
                Some(if i == 0 { (x, y) } else { (x * 0.5, y * 0.3) })
            },
        );
        let of = |k: usize| order.iter().filter(|o| o.0 == k).count();
        assert_eq!(of(1), 3, "{order:?}");
        assert!(of(0) > 3, "{order:?}");
    }

    /// Two AgentX curves of one group (TP 1 and TP 2 per GPU) in (p90 E2E-normalized
    /// interactivity, tok/s/GPU), whose throughput saturates and then falls under overload (a
    /// replay's sessions queue, TP 1's beyond conc ≈ 110): TP 1 wins below ≈ 25 tok/s/user,
    /// TP 2 above.
    fn agentic(i: usize, c: u32) -> Measured {
        let c = c as f64;
        Some(if i == 0 {
            (
                400.0 / (8.0 + c),
                160.0 * c / (1.0 + c / 32.0) / (1.0 + (c / 300.0).powi(2)),
            )
        } else {
            (
                700.0 / (12.0 + c),
                120.0 * c / (1.0 + c / 16.0) / (1.0 + (c / 400.0).powi(2)),
            )
        })
    }

    /// The North-Star frontier (`report`'s agentic frontier: x is the gate's own, so the gate
    /// is the Pareto rule) of `curves`' valid points, as (x, y) sorted by x.
    fn north_star(curves: &[Curve]) -> Vec<(f64, f64)> {
        let pts: Vec<(f64, f64, f64)> = (curves.iter())
            .flat_map(|c| c.valid())
            .map(|(_, x, y)| (x, y, x))
            .collect();
        let goal = inferbench_core::analytics::Goal {
            x: inferbench_core::analytics::Better::Higher,
            y: inferbench_core::analytics::Better::Higher,
        };
        (inferbench_core::analytics::north_star_frontier(&pts, goal).into_iter())
            .map(|k| (pts[k].0, pts[k].1))
            .collect()
    }

    /// Issue 43 on AgentX rows, at the planner: on the synthetic agentic curves the adaptive
    /// plan's North-Star frontier is the full list's (every concurrency 1..=256 of both curves)
    /// within 3 % at matched x over ≥ 90 % of its x range (the issue's measure), from a few
    /// dozen points, deterministically.
    #[test]
    fn an_agentic_group_frontier_is_found_on_the_north_star_x() {
        let dense: Vec<Curve> = (0..2)
            .map(|i| {
                let mut c = Curve::new(1, 256);
                c.points = (1..=256).map(|k| (k, agentic(i, k))).collect();
                c
            })
            .collect();
        let full = north_star(&dense);
        let (curves, order) = run(vec![Curve::new(1, 256); 2], 0.02, agentic);
        let again = run(vec![Curve::new(1, 256); 2], 0.02, agentic).1;
        assert_eq!(order, again);
        assert!(order.iter().all(|(_, c)| (1..=256).contains(c)));
        assert!(order.len() <= 40, "{} points: {order:?}", order.len());
        let found = north_star(&curves);
        // Both curves reach the frontier, in both plans.
        for f in [&full, &found] {
            assert!(
                f.iter().any(|p| p.0 > 30.0) && f.iter().any(|p| p.0 < 5.0),
                "{f:?}"
            );
        }
        // The issue's measure (`frontier_match`, the frontier read as `report` reads it).
        let m = frontier_match(&full, &found, MATCH_TOLERANCE).unwrap();
        assert!(m.passes(), "{m:?}");
    }

    #[test]
    fn degenerate_ranges() {
        let (_, order) = run(vec![Curve::new(8, 8)], 0.02, |_, c| knee(c));
        assert_eq!(order, [(0, 8)]);
        let (_, order) = run(vec![Curve::new(4, 5)], f64::NAN, |_, c| knee(c));
        assert_eq!(order, [(0, 4), (0, 5)]);
        assert_eq!(middle(1, 2), None);
        assert_eq!(middle(1, 256), Some(16));
    }

    /// A measured point of a fixed-protocol curve (10 × conc prompts) with mean E2EL `e` s.
    fn cost(conc: u32, gpu_seconds: f64, e: f64) -> (u32, PointCost) {
        let prompts = f64::from(10 * conc);
        let mean_e2el_s = Some(e);
        (
            conc,
            PointCost {
                gpu_seconds,
                prompts,
                mean_e2el_s,
            },
        )
    }

    fn ten_per_conc(c: u32) -> f64 {
        f64::from(10 * c)
    }

    /// A saturated engine (throughput flat at 2 requests/s, E2EL = conc / 2 s, 1 GPU, no
    /// overhead): a cost ∝ conc (5 GPU-s × conc) is estimated exactly between the measured
    /// ends. The old rule (cost linear in log conc) said 5 + 23.75 + 42.5 + 61.25 + 80 = 212.5.
    /// So is a cost affine in conc, and a point between neighbours whose throughput is linear.
    #[test]
    fn full_list_estimate_is_exact_for_a_cost_linear_in_conc() {
        let m: BTreeMap<u32, PointCost> = [cost(1, 5.0, 0.5), cost(16, 80.0, 8.0)].into();
        assert_eq!(
            full_list_gpu_seconds(&[1, 2, 4, 8, 16], &m, ten_per_conc),
            5.0 + 10.0 + 20.0 + 40.0 + 80.0
        );
        // A batched engine (the sim's shape): E2EL = 1 + 0.5 × conc s, ρ = 1, so a point costs
        // 10 × E2EL = 10 + 5 × conc GPU-s. E2EL read linearly in conc is exact (conc 3: 25);
        // X linear in conc (1 / 1.5 and 9 / 5.5 requests/s at the ends) would say 33.
        let m: BTreeMap<u32, PointCost> = [cost(1, 15.0, 1.5), cost(9, 55.0, 5.5)].into();
        let est = full_list_gpu_seconds(&[1, 3, 5, 7, 9], &m, ten_per_conc);
        assert!(
            (est - (15.0 + 25.0 + 35.0 + 45.0 + 55.0)).abs() < 1e-12,
            "{est}"
        );
        // Throughput rising between the neighbours (X(2) = 2, X(6) = 4 requests/s, so E2EL 1
        // and 1.5 s), ρ = 1: E2EL read linearly (1.25 s at conc 4) gives 40 × 1.25 / 4 = 12.5,
        // X read linearly (3 requests/s) 40 / 3; the lower one is taken.
        let m: BTreeMap<u32, PointCost> = [cost(2, 10.0, 1.0), cost(6, 15.0, 1.5)].into();
        assert_eq!(full_list_gpu_seconds(&[4], &m, ten_per_conc), 12.5);
        // ρ (GPU-s per profiled second: GPUs and the warmup's share) interpolated too: 2 GPUs
        // at conc 1, 3 at conc 3 (ρ 2 and 3), X = 1 request/s: conc 2 costs 2.5 × 20 s.
        let m: BTreeMap<u32, PointCost> = [cost(1, 20.0, 1.0), cost(3, 90.0, 3.0)].into();
        assert_eq!(full_list_gpu_seconds(&[2], &m, ten_per_conc), 50.0);
        assert_eq!(
            full_list_gpu_seconds(&[1, 2], &BTreeMap::new(), ten_per_conc),
            0.0
        );
    }

    /// The ends are extrapolated conservatively, as the least the point can cost: below the
    /// lowest measured concurrency its throughput (X = 2 requests/s at conc 4: conc 1 and 2
    /// cost 10 / 2 and 20 / 2 GPU-s), above the highest its E2EL (4 s at conc 8: conc 16 and
    /// 32 cost 160 × 4 / 16 = 40 and 320 × 4 / 32 = 40 GPU-s, where a cost ∝ conc would be 80
    /// and 160: the saving is understated, never overstated).
    #[test]
    fn full_list_estimate_extrapolates_the_ends_as_lower_bounds() {
        let m: BTreeMap<u32, PointCost> = [cost(4, 20.0, 2.0), cost(8, 40.0, 4.0)].into();
        assert_eq!(
            full_list_gpu_seconds(&[1, 2, 4, 8, 16, 32], &m, ten_per_conc),
            5.0 + 10.0 + 20.0 + 40.0 + 40.0 + 40.0
        );
    }

    /// Points without an E2EL (AgentX replays, whose cost is their planned duration): the cost
    /// interpolated in log-concurrency, the nearest measured one's beyond the ends.
    #[test]
    fn full_list_estimate_without_e2el_interpolates_cost_in_log_concurrency() {
        let p = |conc: u32, gpu_seconds: f64| {
            let prompts = f64::from(10 * conc);
            (
                conc,
                PointCost {
                    gpu_seconds,
                    prompts,
                    mean_e2el_s: None,
                },
            )
        };
        let m: BTreeMap<u32, PointCost> = [p(1, 10.0), p(4, 30.0)].into();
        assert_eq!(
            full_list_gpu_seconds(&[1, 2, 4, 8], &m, ten_per_conc),
            10.0 + 20.0 + 30.0 + 30.0
        );
    }

    /// A recorded real sim sweep (docs/performance.md, issue 43's 18:40–19:55 section 3:
    /// `inferbench sim --time-scale 1`, TP 1 of the issue's config, GPU-s in modelled time):
    /// the adaptive sweep measured conc 1, 16 (early-stopped at 128 of 160 prompts: its
    /// GPU-s × 160 / 128) and 256; its skipped points estimated against what the full list's
    /// sweep measured at them (within 7 %; the old rule: 4–61 % high).
    #[test]
    fn full_list_estimate_on_the_recorded_sim_sweep() {
        let m: BTreeMap<u32, PointCost> = [
            cost(1, 19.5927, 1.6756),
            cost(16, 20.8664 * 1.25, 2.1097),
            cost(256, 110.9338, 10.0093),
        ]
        .into();
        let full = [
            (2, 20.3561),
            (4, 21.6562),
            (8, 22.9020),
            (32, 30.7895),
            (64, 42.6499),
            (128, 66.1856),
        ];
        let mut got = Vec::new();
        for (c, measured) in full {
            let est = full_list_gpu_seconds(&[c], &m, ten_per_conc);
            assert!(
                (est / measured - 1.0).abs() <= 0.07,
                "conc {c}: {est} for {measured}"
            );
            got.push((c, (est * 100.0).round() / 100.0));
        }
        assert_eq!(
            got,
            [
                (2, 20.01),
                (4, 20.84),
                (8, 22.55),
                (32, 32.37),
                (64, 44.67),
                (128, 68.2)
            ]
        );
    }

    /// The recorded llama.cpp sweeps (docs/performance.md, "adaptive sweep on llama.cpp,
    /// SmolLM2 (issue 43)"; SmolLM2 Q4_1 on 2 shared CPU cores, ep 1 = 1 slot, 10 × conc
    /// prompts): ep 1 conc 8 estimated from conc 4 and 16 of the same sweep (GPU-s without the
    /// launch share, mean E2EL s), against what conc 8 measured in that sweep. Conc 16 is
    /// super-linear on this engine (throughput 0.62–0.66 requests/s against 0.89–1.18 at
    /// conc 4), so any interpolation between 4 and 16 reads conc 8 high: the old rule by
    /// 82–103 %, this one by 20–28 % in the full sweeps (its X reading, the lower one
    /// here; E2EL read linearly would say 135.6 and 120.0). The adaptive sweeps' own conc 4 and
    /// 16 ran slower (load), so no interpolation of theirs reaches 77.5–91.5: 168.4 and 128.0
    /// (the old rule 225.0 and 157.8).
    #[test]
    fn full_list_estimate_on_the_recorded_llamacpp_sweeps() {
        let old = |g4: f64, g16: f64| g4 + 0.5 * (g16 - g4);
        // (conc 4 GPU-s, E2EL s; conc 16 GPU-s, E2EL s; conc 8 measured GPU-s or 0)
        let sweeps = [
            ("full A", (54.5588, 4.4908), (280.0759, 25.6665), 91.2439),
            ("full B", (39.8995, 3.3887), (272.8167, 24.2777), 77.0828),
            ("adaptive", (80.7442, 7.1800), (369.2657, 33.6713), 0.0),
            ("adaptive B", (64.6260, 5.6150), (250.9472, 22.6605), 0.0),
        ];
        let mut got = Vec::new();
        for (name, (g4, e4), (g16, e16), measured) in sweeps {
            let m: BTreeMap<u32, PointCost> = [cost(4, g4, e4), cost(16, g16, e16)].into();
            let est = full_list_gpu_seconds(&[8], &m, ten_per_conc);
            if measured > 0.0 {
                assert!(
                    (est / measured - 1.0).abs() <= 0.30,
                    "{name}: {est} for {measured}"
                );
                assert!((old(g4, g16) / measured - 1.0) > 0.8, "{name}");
            }
            got.push((
                name,
                (est * 10.0).round() / 10.0,
                (old(g4, g16) * 10.0).round() / 10.0,
            ));
        }
        assert_eq!(
            got,
            [
                ("full A", 117.1, 167.3),
                ("full B", 92.2, 156.4),
                ("adaptive", 168.4, 225.0),
                ("adaptive B", 128.0, 157.8),
            ]
        );
    }

    /// The issue's measure on straight frontiers, by hand: full (10, 100)–(20, 50); found
    /// (10, 100)–(20, 45) is off by 0.5·d / (100 − 5·d) at x = 10 + d, within 3 % for
    /// d ≤ 3 / 0.65 = 4.615…: samples 0..=461 of 1,000 (x = 10.005 + 0.01·s); at the last
    /// sample (d = 9.995) 4.9975 / 50.025.
    #[test]
    fn frontier_match_by_hand() {
        let full = [(10.0, 100.0), (20.0, 50.0), (12.0, 40.0)];
        let same = frontier_match(&full, &full, 0.03).unwrap();
        assert_eq!(same.within_fraction, 1.0);
        assert_eq!(same.worst_gap, 0.0);
        assert_eq!(same.x_range, (10.0, 20.0));
        assert!(same.passes());
        let m = frontier_match(&full, &[(10.0, 100.0), (20.0, 45.0)], 0.03).unwrap();
        assert_eq!(m.within_fraction, 0.462);
        assert_eq!(m.missing_fraction, 0.0);
        assert!((m.worst_gap - 4.9975 / 50.025).abs() < 1e-12, "{m:?}");
        assert!(!m.passes());
        // A found frontier that stops at x = 15 is missing beyond it: 500 of 1,000 samples.
        let m = frontier_match(&full, &[(10.0, 100.0), (15.0, 75.0)], 0.03).unwrap();
        assert_eq!((m.within_fraction, m.missing_fraction), (0.5, 0.5));
        // No valid full point: no measure; a bad tolerance reads as 3 %.
        assert_eq!(frontier_match(&[], &full, 0.03), None);
        assert_eq!(frontier_match(&[(f64::NAN, 1.0)], &full, 0.03), None);
        assert_eq!(
            frontier_match(&full, &full, f64::NAN).unwrap().tolerance,
            MATCH_TOLERANCE
        );
    }

    /// The local executor's order: every curve's ends and middle first, then the last seeded
    /// curve's refinement, then the first's (never back to a curve it left).
    #[test]
    fn the_local_order_seeds_every_curve_before_refining() {
        let mut curves = vec![Curve::listed(&LISTED); 2];
        let mut order = LocalOrder::default();
        let mut seen = Vec::new();
        while let Some((i, c)) = order.next(&curves, &[0, 0], 0.02) {
            seen.push((i, c));
            curves[i]
                .points
                .insert(c, knee(c).map(|(x, y)| (x, y * (1.0 + i as f64))));
        }
        assert_eq!(
            seen[..6],
            [(0, 1), (0, 256), (0, 16), (1, 1), (1, 256), (1, 16)]
        );
        // After the seeds: curve 1's points, then curve 0's, each in one stretch.
        let rest: Vec<usize> = seen[6..].iter().map(|p| p.0).collect();
        let first_zero = rest.iter().position(|i| *i == 0).unwrap_or(rest.len());
        assert!(rest[first_zero..].iter().all(|i| *i == 0), "{seen:?}");
        assert!(rest[..first_zero].iter().all(|i| *i == 1), "{seen:?}");
        // Curve 0 has half curve 1's throughput at the same interactivity: dominated everywhere
        // by far more than the tolerance, so never refined (and never relaunched).
        assert_eq!(first_zero, rest.len(), "{seen:?}");
        assert!(order.next(&curves, &[0, 0], 0.02).is_none());
    }

    /// The local order returns to a curve it left when the others' refinement makes it worth
    /// more points (the lead's llama.cpp sweep, 2026-12-07: "ep 4 conc 2 not revisited: the
    /// local order had left this curve"). Two curves of one group, listed 1..16, x = 1000 /
    /// (10 + conc), y = 10 conc^0.8 (curve 0) and 8 conc^0.8 (curve 1, 20 % under it: dominated
    /// by more than 2 %, so never refined while the group reads noiseless); curve 0's conc 8
    /// reads half its y (a dip and rise of throughput: noise, σ 10.5 %). Seeds 1, 16, 4 of
    /// each; curve 1 refined first (nothing: dominated); curve 0 gets 8 (bend) and 2 (noisy);
    /// now the margin is 2 % + 2√2 σ = 31.7 % and curve 1 is no longer dominated: the order
    /// goes back to it for 8 and 2 (`noisy:`). Before 2026-12-08 the sweep ended after curve
    /// 0's 2 and curve 1's 2 and 8 were reported "not revisited".
    #[test]
    fn a_curve_left_behind_is_revisited_when_the_group_turns_noisy() {
        let listed = [1u32, 2, 4, 8, 16];
        let mut curves = vec![Curve::listed(&listed); 2];
        let at = |i: usize, c: u32| -> Measured {
            let cf = f64::from(c);
            let x = 1000.0 / (10.0 + cf);
            let mut y = if i == 0 { 10.0 } else { 8.0 } * cf.powf(0.8);
            if i == 0 && c == 8 {
                y *= 0.5;
            }
            Some((x, y))
        };
        let mut order = LocalOrder::default();
        let mut made = Vec::new();
        while let Some((i, c)) = order.next_candidate(&curves, &[0, 0], 0.02) {
            made.push((i, c));
            curves[i].points.insert(c.conc, at(i, c.conc));
            assert!(made.len() <= 10, "{made:?}");
        }
        let seen: Vec<(usize, u32)> = made.iter().map(|(i, c)| (*i, c.conc)).collect();
        assert_eq!(
            seen,
            [
                (0, 1),
                (0, 16),
                (0, 4),
                (1, 1),
                (1, 16),
                (1, 4),
                (0, 8),
                (0, 2),
                (1, 8),
                (1, 2)
            ]
        );
        assert!(matches!(made[6].1.why, Why::Bend { .. }), "{made:?}");
        assert!(
            made[7..]
                .iter()
                .all(|(_, c)| matches!(c.why, Why::Noisy { .. })),
            "{made:?}"
        );
        assert!(order.next(&curves, &[0, 0], 0.02).is_none());
        let plans = curve_plans(&curves, &[0, 0], 0.02, &made);
        assert!(plans.iter().all(|p| p.skipped.is_empty()), "{plans:?}");
    }

    /// The noise estimate: small on a smooth curve (x = 1000 / (10 + conc), y = 50 conc^0.8:
    /// 1.35 %, whose threshold 2 × 0.559 × 1.35 % = 1.5 % stays under a 2 % tolerance), large
    /// on a noisy one (±3 % alternating on y, the worst case for a third difference: every
    /// interval's disagreement ≈ (1 + 3 + 3 + 1) / 8 × 3 % in log y, read as σ ≈ 3 % / (0.319 ×
    /// 0.559) ≈ 17 %), and 0 with too few intervals to tell noise from a knee.
    #[test]
    fn the_noise_estimate_sees_noise_not_bends() {
        let pts = |e: f64| -> Vec<(u32, f64, f64)> {
            (LISTED.iter().enumerate())
                .map(|(k, &c)| {
                    let c_ = c as f64;
                    let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
                    (
                        c,
                        1000.0 / (10.0 + c_),
                        50.0 * c_.powf(0.8) * (1.0 + sign * e),
                    )
                })
                .collect()
        };
        let smooth = noise_estimate(&pts(0.0));
        let noisy = noise_estimate(&pts(0.03));
        assert!((smooth - 0.013508).abs() < 1e-6, "{smooth}");
        assert!((noisy - 0.170837).abs() < 1e-6, "{noisy}");
        assert_eq!(noise_estimate(&pts(0.03)[..4]), 0.0);
    }

    /// The listed doubling concurrencies 1..=256.
    const LISTED: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

    /// The issue's TP 1 + TP 2 group in the sim's own roofline model (H100, Llama-3.1-8B, bf16,
    /// ISL 1024 / OSL 256): curve `i` is TP `i + 1`.
    fn sim_tp(i: usize, c: u32) -> ModelPoint {
        sim_model_point("H100", "Llama-3.1-8B", "bf16", i as u32 + 1, c, 1024, 256).unwrap()
    }

    /// The full list's and a plan's (x, y) points and GPU-seconds, `cost` the fraction of a
    /// full point an adaptive point spends (1: every point runs its 10 × conc prompts).
    fn full_and_plan(
        f: impl Fn(usize, u32) -> ModelPoint,
        curves: usize,
        k: usize,
        cost: f64,
    ) -> (FrontierMatch, f64, f64, usize, usize) {
        let full: Vec<(f64, f64)> = (0..curves)
            .flat_map(|i| LISTED.iter().map(move |c| (i, *c)))
            .map(|(i, c)| f(i, c))
            .map(|p| (p.x, p.y))
            .collect();
        let full_gs: f64 = (0..curves)
            .flat_map(|i| LISTED.iter().map(move |c| (i, *c)))
            .map(|(i, c)| f(i, c).gpu_seconds)
            .sum();
        let (planned, order, rounds) =
            run_k(vec![Curve::listed(&LISTED); curves], 0.02, k, |i, c| {
                let p = f(i, c);
                Some((p.x, p.y))
            });
        let found: Vec<(f64, f64)> = planned
            .iter()
            .flat_map(|c| c.valid())
            .map(|p| (p.1, p.2))
            .collect();
        let spent: f64 = order.iter().map(|&(i, c)| f(i, c).gpu_seconds * cost).sum();
        let m = frontier_match(&full, &found, MATCH_TOLERANCE).unwrap();
        (m, spent, full_gs, order.len(), rounds)
    }

    /// Issue 43 at the planner, on the sim's own model of its TP 1 + TP 2 shape: at the default
    /// tolerance the plan's frontier passes the measure against the full list's, never measures
    /// more points than the list (18), and with points that stop early at the stopping rule's
    /// floor (loadgen's 3 rounds of conc prompts of 10) spends ≤ 50 % of the list's GPU-seconds.
    #[test]
    fn the_sim_shape_passes_the_measure_for_half_the_gpu_time() {
        let (m, _, _, n, _) = full_and_plan(sim_tp, 2, 1, 1.0);
        assert!(m.passes(), "{m:?}");
        assert_eq!(n, 12);
        let (m, spent, full, _, _) = full_and_plan(sim_tp, 2, 1, 0.3);
        assert!(m.passes(), "{m:?}");
        assert!(spent <= 0.5 * full, "{spent} of {full}");
    }

    /// Several points per round (Slurm/GitHub follow-up rounds): on the sim's TP 1 + TP 2
    /// shape, 3 per curve per round needs 4 rounds where 1 needs 9, still within the
    /// list's count, and the frontier still passes the measure.
    #[test]
    fn several_points_per_round_need_fewer_rounds() {
        let (m1, _, _, n1, r1) = full_and_plan(sim_tp, 2, 1, 1.0);
        let (m3, _, _, n3, r3) = full_and_plan(sim_tp, 2, 3, 1.0);
        assert!(m1.passes() && m3.passes(), "{m1:?} {m3:?}");
        assert!(n3 <= 18 && n1 <= 18, "{n1} {n3}");
        assert!(2 * r3 < r1, "{r1} rounds of 1, {r3} of 3");
        assert_eq!((r1, r3), (9, 4));
        // The first round of 3 is each curve's ends and middle.
        let round = next_round_k(&[Curve::listed(&LISTED), Curve::listed(&LISTED)], 0.02, 3);
        assert_eq!(
            round,
            [(0, 1), (0, 256), (0, 16), (1, 1), (1, 256), (1, 16)]
        );
    }

    /// The cap: however uncertain, a curve never measures more points than it lists (the
    /// noisy curve with 15 listed concurrencies would take more).
    #[test]
    fn a_plan_never_measures_more_than_the_list() {
        let noisy = |c: u32| {
            let h = (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            let e = 1.0 + 0.4 * ((h % 1000) as f64 / 1000.0 - 0.5);
            Some((1000.0 / (10.0 + c as f64), 80.0 * (c as f64).min(64.0) * e))
        };
        let listed: Vec<u32> = (0..6).map(|k| 4 << k).collect();
        let (_, free) = run(vec![Curve::new(4, 128)], 0.02, |_, c| noisy(c));
        assert!(free.len() > listed.len(), "{free:?}");
        let (c, capped) = run(vec![Curve::listed(&listed)], 0.02, |_, c| noisy(c));
        assert_eq!(capped.len(), listed.len());
        assert_eq!(c[0].max_points, Some(6));
        assert_eq!(
            capped,
            run(vec![Curve::listed(&listed)], 0.02, |_, c| noisy(c)).1
        );
    }
}

/// Issue 43's replay: the planner's rounds on a real sim sweep's recorded points.
#[cfg(test)]
mod replay {
    use super::*;

    /// The full list's points of the issue's config, recorded (curve 0 = TP 1, 1 = TP 2;
    /// conc, median interactivity tok/s/user, tok/s/GPU).
    const RECORDED: [(usize, u32, f64, f64); 18] = [
        (0, 1, 141.94, 707.4),
        (0, 2, 139.29, 1393.4),
        (0, 4, 134.47, 2581.9),
        (0, 8, 125.43, 4845.5),
        (0, 16, 110.6, 8522.8),
        (0, 32, 90.06, 13786.4),
        (0, 64, 64.88, 19840.8),
        (0, 128, 41.11, 24898.8),
        (0, 256, 24.0, 29458.5),
        (1, 1, 214.4, 528.6),
        (1, 2, 211.07, 1041.2),
        (1, 4, 205.12, 1971.1),
        (1, 8, 193.36, 3736.6),
        (1, 16, 174.58, 6629.9),
        (1, 32, 145.47, 11134.1),
        (1, 64, 108.55, 16347.3),
        (1, 128, 71.29, 21486.8),
        (1, 256, 42.95, 26297.8),
    ];

    /// A recorded point; a concurrency the list does not hold reads between its listed
    /// neighbours (linear in log conc, log x, log y).
    fn recorded(i: usize, c: u32) -> Measured {
        let pts: Vec<(u32, f64, f64)> = (RECORDED.iter())
            .filter(|p| p.0 == i)
            .map(|p| (p.1, p.2, p.3))
            .collect();
        if let Some(p) = pts.iter().find(|p| p.0 == c) {
            return Some((p.1, p.2));
        }
        let w = pts.windows(2).find(|w| w[0].0 < c && c < w[1].0)?;
        let f = ((c as f64).ln() - (w[0].0 as f64).ln())
            / ((w[1].0 as f64).ln() - (w[0].0 as f64).ln());
        let l = |a: f64, b: f64| (a.ln() + f * (b.ln() - a.ln())).exp();
        Some((l(w[0].1, w[1].1), l(w[0].2, w[1].2)))
    }

    const LISTED: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

    /// GPU-seconds of each point of [`RECORDED`], in its order.
    const GPU_S: [f64; 18] = [
        20.7, 20.8, 22.0, 23.5, 26.0, 32.7, 43.7, 67.9, 109.7, 27.2, 28.5, 29.7, 29.7, 37.5, 41.3,
        52.7, 79.7, 126.2,
    ];

    /// Joint rounds (`next_round_k`, as Slurm/GitHub rounds plan), each round's candidates and
    /// why written to `log` (shown by a failing assertion).
    fn joint(tol: f64, log: &mut String) -> Vec<Curve> {
        let mut curves = vec![Curve::listed(&LISTED); 2];
        for round in 1.. {
            let why = explain(&curves, tol);
            let r = next_round_k(&curves, tol, 1);
            if r.is_empty() {
                break;
            }
            log.push_str(&format!("round {round}: {r:?}\n"));
            for (i, w) in why.iter().enumerate() {
                for c in w {
                    log.push_str(&format!("  curve {i}: conc {} {:?}\n", c.conc, c.why));
                }
            }
            for (i, c) in r {
                curves[i].points.insert(c, recorded(i, c));
            }
        }
        curves
    }

    /// `run_local`'s order ([`LocalOrder`]), each point and why written to `log`.
    fn local(tol: f64, measure: impl Fn(usize, u32) -> Measured, log: &mut String) -> Vec<Curve> {
        let mut curves = vec![Curve::listed(&LISTED); 2];
        let mut order = LocalOrder::default();
        while let Some((i, c)) = order.next(&curves, &[0, 0], tol) {
            let why = explain(&curves, tol);
            let w = why[i].iter().find(|w| w.conc == c).unwrap();
            log.push_str(&format!("curve {i}: conc {c} {:?}\n", w.why));
            curves[i].points.insert(c, measure(i, c));
        }
        curves
    }

    fn report(name: &str, curves: &[Curve], log: &mut String) -> (usize, FrontierMatch) {
        let full: Vec<(f64, f64)> = RECORDED.iter().map(|p| (p.2, p.3)).collect();
        let found: Vec<(f64, f64)> = (curves.iter())
            .flat_map(|c| c.valid())
            .map(|p| (p.1, p.2))
            .collect();
        let n: usize = curves.iter().map(|c| c.points.len()).sum();
        let m = frontier_match(&full, &found, MATCH_TOLERANCE).unwrap();
        let chosen: Vec<Vec<u32>> = (curves.iter())
            .map(|c| c.points.keys().copied().collect())
            .collect();
        let noise: Vec<f64> = curves.iter().map(|c| noise_estimate(&c.valid())).collect();
        log.push_str(&format!(
            "{name}: {n} points {chosen:?}, noise {noise:?}, {m:?}\n"
        ));
        (n, m)
    }

    /// The cheapest subset of the recorded points (each curve's ends always in) whose frontier
    /// passes the issue's measure against the full list's: what no plan can beat. Returns its
    /// GPU-seconds; the subset is written to `log`.
    fn oracle(log: &mut String) -> f64 {
        let full: Vec<(f64, f64)> = RECORDED.iter().map(|p| (p.2, p.3)).collect();
        let total: f64 = GPU_S.iter().sum();
        let free: Vec<usize> = (0..18).filter(|k| ![0, 8, 9, 17].contains(k)).collect();
        let mut best: Option<(f64, Vec<usize>)> = None;
        for mask in 0u32..(1 << free.len()) {
            let mut pick: Vec<usize> = vec![0, 8, 9, 17];
            pick.extend(
                (0..free.len())
                    .filter(|b| mask & (1 << b) != 0)
                    .map(|b| free[b]),
            );
            let cost: f64 = pick.iter().map(|k| GPU_S[*k]).sum();
            if best.as_ref().is_some_and(|b| b.0 <= cost) {
                continue;
            }
            let found: Vec<(f64, f64)> = pick.iter().map(|k| full[*k]).collect();
            if frontier_match(&full, &found, MATCH_TOLERANCE)
                .unwrap()
                .passes()
            {
                best = Some((cost, pick));
            }
        }
        let (cost, pick) = best.unwrap();
        let names: Vec<String> = (pick.iter())
            .map(|k| format!("TP {} conc {}", RECORDED[*k].0 + 1, RECORDED[*k].1))
            .collect();
        log.push_str(&format!(
            "oracle: {cost:.1} GPU-s = {:.1} % {names:?}\n",
            100.0 * cost / total
        ));
        cost
    }

    /// Issue 43's replay (2026-12-07): the full list of the issue's config on `inferbench sim
    /// --time-scale 1` (every point valid; TP 1 conc 256 and TP 2 conc 8, made invalid by load
    /// in the sweep, rerun alone right after it), fed round by round into the planner in the
    /// local executor's order ([`LocalOrder`]) and in joint rounds ([`next_round_k`], as
    /// Slurm/GitHub follow-ups plan). With the rule before this date the real sweep measured
    /// 16 of 18 points: TP 1, planned first and alone, took 7 points although TP 2 wins at
    /// every x TP 2 reaches, and each bend between noisy neighbours looked worth a point. Now
    /// TP 1 stops at its ends and middle (its stretch 16..256 is split only where TP 2 would
    /// not bury the point) and the plan's frontier is the list's within 1.1 % everywhere.
    #[test]
    fn the_recorded_sim_sweep_replayed() {
        let total: f64 = GPU_S.iter().sum();
        let cost = |curves: &[Curve]| -> f64 {
            (RECORDED.iter().zip(GPU_S))
                .filter(|(p, _)| curves[p.0].points.contains_key(&p.1))
                .map(|(_, g)| g)
                .sum()
        };
        // What each step chose and why, shown by a failing assertion (the test prints nothing).
        let mut log = String::new();
        let s = local(DEFAULT_TOLERANCE, recorded, &mut log);
        let (n, m) = report("local order", &s, &mut log);
        let chosen: Vec<Vec<u32>> = s
            .iter()
            .map(|c| c.points.keys().copied().collect())
            .collect();
        assert_eq!(
            chosen,
            [vec![1, 16, 256], vec![1, 2, 4, 16, 32, 64, 128, 256]],
            "{log}"
        );
        assert_eq!(n, 11, "{log}");
        assert!(m.passes(), "{m:?}\n{log}");
        assert_eq!((m.within_fraction, m.missing_fraction), (1.0, 0.0));
        assert!(m.worst_gap < 0.011, "{m:?}");
        // 579.2 of 819.5 GPU-s: 29.3 % saved by the plan alone (no point stopped early).
        let spent = cost(&s);
        assert!(
            (spent - 579.2).abs() < 0.05,
            "{spent} of {total} GPU-s\n{log}"
        );
        assert!((total - 819.5).abs() < 0.05, "{total}");
        // Deterministic.
        assert_eq!(local(DEFAULT_TOLERANCE, recorded, &mut String::new()), s);
        // Joint rounds: TP 1 is also split at 64 and 128 (planned beside TP 2's seeds only).
        let j = joint(DEFAULT_TOLERANCE, &mut log);
        let (n, m) = report("joint", &j, &mut log);
        assert_eq!(n, 13, "{log}");
        assert!(m.passes(), "{m:?}\n{log}");
        // No plan can pass the measure for less than 38.3 % of the list here (TP 1 conc 1 and
        // 256, TP 2 conc 1, 4 and 256): TP 2's curve is almost straight in (x, y) from conc 4
        // to 256, which the planner's log–log reading of a curve does not see from 3 points.
        let best = oracle(&mut log);
        assert!((best - 313.5).abs() < 0.05, "{best}\n{log}");
    }
}

/// Issue 43 on a noisy real engine: the planner on llama.cpp's recorded points.
#[cfg(test)]
mod noisy {
    use super::*;

    /// One curve's recorded points: (conc, median interactivity tok/s/user, tok/s/GPU in+out).
    type Points = &'static [(u32, f64, f64)];

    /// docs/performance.md, "2026-12-07 (evening): adaptive sweep on llama.cpp, SmolLM2":
    /// `examples/llamacpp-cpu.yaml` (ep 1 and ep 4, conc 1..16 doubling) on the 2-core VM,
    /// 20–35 % run-to-run noise. Curve 0 = ep 1, 1 = ep 4.
    const FULL_A: [Points; 2] = [
        &[
            (1, 101.11, 111.0),
            (2, 57.92, 111.3),
            (4, 81.30, 123.6),
            (8, 103.88, 137.4),
            (16, 50.65, 85.3),
        ],
        &[
            (1, 63.52, 91.5),
            (2, 22.35, 138.7),
            (4, 7.78, 106.4),
            (8, 7.88, 117.5),
            (16, 5.81, 94.8),
        ],
    ];
    const FULL_B: [Points; 2] = [
        &[
            (1, 74.59, 152.4),
            (2, 85.87, 136.3),
            (4, 103.67, 160.5),
            (8, 112.58, 173.6),
            (16, 51.68, 89.7),
        ],
        &[
            (1, 65.47, 90.8),
            (2, 13.54, 97.2),
            (4, 7.26, 99.5),
            (8, 11.97, 193.1),
            (16, 5.30, 87.5),
        ],
    ];
    /// The two adaptive sweeps' 7 points each (both skipped ep 1 conc 2 and 8, ep 4 conc 8).
    const ADAPTIVE: [Points; 2] = [
        &[(1, 38.77, 70.5), (4, 49.95, 77.8), (16, 37.40, 65.1)],
        &[
            (1, 56.94, 92.5),
            (2, 12.40, 72.0),
            (4, 5.34, 68.8),
            (16, 5.06, 81.7),
        ],
    ];
    const ADAPTIVE_B: [Points; 2] = [
        &[(1, 94.06, 101.7), (4, 57.41, 99.5), (16, 57.42, 96.4)],
        &[
            (1, 109.50, 129.6),
            (2, 14.19, 85.0),
            (4, 5.64, 74.5),
            (16, 4.90, 84.1),
        ],
    ];
    const LISTED: [u32; 5] = [1, 2, 4, 8, 16];

    /// `run_local`'s order ([`LocalOrder`], one group) over the two curves, each point read
    /// from `sweep` where it measured it, else from `full` (what the real engine gave a full
    /// sweep there). Returns the curves and the proposals made.
    fn plan(sweep: [Points; 2], full: [Points; 2]) -> (Vec<Curve>, Vec<(usize, Candidate)>) {
        let mut curves = vec![Curve::listed(&LISTED); 2];
        let mut order = LocalOrder::default();
        let mut made = Vec::new();
        while let Some((i, c)) = order.next_candidate(&curves, &[0, 0], DEFAULT_TOLERANCE) {
            let p = (sweep[i].iter().chain(full[i].iter()))
                .find(|p| p.0 == c.conc)
                .expect("a listed concurrency");
            curves[i].points.insert(c.conc, Some((p.1, p.2)));
            made.push((i, c));
        }
        (curves, made)
    }

    /// docs/performance.md, "2026-12-07 (21:30–00:02 UTC)", check 2: the full list A
    /// (21:49–21:59 UTC) and the `--adaptive` sweep (22:28–22:37 UTC) of the same config,
    /// (conc, 1000 / median TPOT, total tok/s); curve 0 = ep 1, 1 = ep 4.
    const FULL_LATE: [Points; 2] = [
        &[
            (1, 104.33, 171.6),
            (2, 108.16, 174.4),
            (4, 98.83, 157.3),
            (8, 106.31, 175.9),
            (16, 97.19, 172.2),
        ],
        &[
            (1, 117.67, 225.5),
            (2, 26.05, 177.6),
            (4, 12.58, 187.8),
            (8, 11.41, 191.4),
            (16, 10.0, 159.1),
        ],
    ];
    const ADAPTIVE_LATE: [Points; 2] = [
        &[
            (1, 115.7, 226.0),
            (2, 99.94, 198.9),
            (4, 112.55, 209.8),
            (8, 104.63, 172.3),
            (16, 68.57, 109.0),
        ],
        &[(1, 106.45, 214.3), (4, 12.41, 175.9), (16, 10.44, 159.9)],
    ];

    /// That `--adaptive` sweep replayed in the local order: the seeds (1, 16, 4 of each), ep 4
    /// with nothing to refine yet, then ep 1's 2 (`bend:`) and 8 (`noisy:`: the group's σ
    /// 8.9 %), as the sweep ran them; the sweep ended there and reported ep 4 conc 2 "not
    /// revisited: the local order had left this curve". Now the order returns to ep 4 for
    /// conc 2 (`noisy:`, answered from the full list A), and the plan ends with every listed
    /// point measured but ep 4 conc 8, dominated (28.5 % against a margin of 27.2 %).
    #[test]
    fn the_late_llamacpp_sweep_revisits_ep4_conc_2() {
        let (curves, made) = plan(ADAPTIVE_LATE, FULL_LATE);
        let order: Vec<(usize, u32)> = made.iter().map(|(i, c)| (*i, c.conc)).collect();
        assert_eq!(
            order,
            [
                (0, 1),
                (0, 16),
                (0, 4),
                (1, 1),
                (1, 16),
                (1, 4),
                (0, 2),
                (0, 8),
                (1, 2)
            ]
        );
        assert!(matches!(made[8].1.why, Why::Noisy { .. }), "{made:?}");
        let plans = curve_plans(&curves, &[0, 0], DEFAULT_TOLERANCE, &made);
        assert!(plans[0].skipped.is_empty(), "{plans:?}");
        let skipped: Vec<(u32, &str)> = (plans[1].skipped.iter())
            .map(|n| (n.conc, n.reason.split(':').next().unwrap_or("")))
            .collect();
        assert_eq!(skipped, [(8, "dominated")]);
    }

    /// The noise the planner sees in each adaptive sweep's 7 points: the first's ep 1
    /// interactivity rises from conc 1 to 4 (38.77 → 49.95: 28.84 %, σ ≥ 28.84 % / √2 =
    /// 20.39 %); the second's curves are monotone in x (ep 1's 57.41 → 57.42 at conc 4 → 16
    /// is 0.017 %), but ep 4's throughput dips and rises again (129.6, 85.0, 74.5, 84.1:
    /// 84.1 / 74.5 = +12.89 %, σ ≥ 9.11 %). Both above the 2 % tolerance; the many-point
    /// estimate says 0 for curves of 3 and 4 points.
    #[test]
    fn few_points_show_the_noise() {
        let group = |s: [Points; 2]| -> Vec<Curve> {
            (0..2)
                .map(|i| {
                    let mut c = Curve::listed(&LISTED);
                    c.points = s[i].iter().map(|p| (p.0, Some((p.1, p.2)))).collect();
                    c
                })
                .collect()
        };
        let r = |v: f64| (v * 1e4).round() / 1e4;
        let a = group(ADAPTIVE);
        let b = group(ADAPTIVE_B);
        assert_eq!(r(few_point_noise(&a[0].valid())), 0.2039);
        assert_eq!(r(few_point_noise(&a[1].valid())), 0.1326);
        assert_eq!(r(few_point_noise(&b[0].valid())), 0.0001);
        assert_eq!(r(few_point_noise(&b[1].valid())), 0.0911);
        assert_eq!((r(group_noise(&a)), r(group_noise(&b))), (0.2039, 0.0911));
        assert_eq!(noise_estimate(&a[1].valid()), 0.0);
        // The 7 points as the sweeps left them. The first: every skipped concurrency is now
        // proposed. The second: ep 4's conc 8 is (its stretch spans 0.71 % of the x range,
        // which the bend rule calls narrow), while ep 1's 4..16 still lies under ep 4's conc 1
        // (129.6 against 99.5: 30.3 %) by more than 2 % + 2√2 × 9.11 % = 27.8 %; ep 4's conc 8
        // then shows the noise in x (see below) and ep 1's 8 is measured too.
        let sk = |g: &[Curve]| -> Vec<Vec<(u32, Skip)>> {
            (0..2).map(|i| skipped(g, i, DEFAULT_TOLERANCE)).collect()
        };
        assert_eq!(sk(&a), [vec![], vec![]]);
        let sb = sk(&b);
        let Skip::Dominated { by, margin } = sb[0][0].1 else {
            panic!("{sb:?}");
        };
        assert_eq!((sb[0].len(), sb[0][0].0, sb[1].len()), (1, 8, 0), "{sb:?}");
        assert_eq!((r(by), r(margin)), (0.3025, 0.2777));
        let e = explain(&b, DEFAULT_TOLERANCE);
        let got: Vec<Vec<(u32, String)>> = (e.iter())
            .map(|c| c.iter().map(|c| (c.conc, c.why.to_string())).collect())
            .collect();
        let noisy = |conc: u32, share: &str| {
            vec![(
                conc,
                format!(
                    "noisy: the group's noise σ 9.1 % exceeds the tolerance, so this undominated \
                     stretch is not known without its listed points ({share} % of the x range)"
                ),
            )]
        };
        assert_eq!(got, [noisy(2, "35.0"), noisy(8, "0.7")], "{e:?}");
    }

    /// Issue 43's llama.cpp sweeps, replayed: both adaptive sweeps' 7 points fed to the planner
    /// in the local executor's order, a further point read from full sweep A or B. Before the
    /// few-point noise rule the plan stopped at the same 7 points (ep 1 conc 2 and 8 and ep 4
    /// conc 8 skipped: ep 1 read flat under ep 4's lucky conc 1, ep 4's 4..16 under ep 1); now
    /// the group's noise (20.4 % and 9.1 %, above the 2 % tolerance) leaves no stretch
    /// dominated by more than 2 % + 2√2 σ, and the plan measures every listed point: ep 4 conc
    /// 8 and ep 1 conc 8 included, knots of every full sweep's frontier.
    #[test]
    fn the_llamacpp_adaptive_sweeps_measure_the_knots_they_skipped() {
        for (name, sweep) in [("adaptive", ADAPTIVE), ("adaptive B", ADAPTIVE_B)] {
            for (fname, full) in [("full A", FULL_A), ("full B", FULL_B)] {
                let (curves, made) = plan(sweep, full);
                let order: Vec<(usize, u32)> = made.iter().map(|(i, c)| (*i, c.conc)).collect();
                assert_eq!(
                    order,
                    [
                        (0, 1),
                        (0, 16),
                        (0, 4),
                        (1, 1),
                        (1, 16),
                        (1, 4),
                        (1, 2),
                        (1, 8),
                        if name == "adaptive" { (0, 8) } else { (0, 2) },
                        if name == "adaptive" { (0, 2) } else { (0, 8) },
                    ],
                    "{name} / {fname}: {made:?}"
                );
                // Every refinement is the noise rule's.
                assert!(
                    made[6..]
                        .iter()
                        .all(|(_, c)| matches!(c.why, Why::Noisy { .. })),
                    "{name} / {fname}: {made:?}"
                );
                assert!(curves.iter().all(|c| c.points.len() == 5));
                let plans = curve_plans(&curves, &[0, 0], DEFAULT_TOLERANCE, &made);
                assert!(plans.iter().all(|p| p.noisy && p.skipped.is_empty()));
            }
        }
    }

    /// A seeded standard normal draw per (seed, curve, conc, axis): splitmix64 → Box–Muller.
    fn normal(seed: u64, i: usize, c: u32, axis: u64) -> f64 {
        let mix = |mut z: u64| {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let k = mix(seed ^ mix((i as u64) << 40 ^ u64::from(c) << 8 ^ axis));
        let u1 = ((mix(k) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let u2 = ((mix(k ^ 1) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// The issue's sim shape (TP 1 + TP 2, conc 1..256 doubling, the sim's roofline model) with
    /// seeded relative noise `sigma` on x and y, planned in the local executor's order:
    /// (points, GPU-s at the full protocol, the list's GPU-s, the measure against the list's
    /// frontier from the same noisy readings (the plan's choice alone, as a replay), whether
    /// the group read as noisy at the end).
    fn noisy_sim(seed: u64, sigma: f64) -> (usize, f64, f64, FrontierMatch, bool) {
        let listed: Vec<u32> = (0..9).map(|k| 1 << k).collect();
        let model = |i: usize, c: u32| {
            sim_model_point("H100", "Llama-3.1-8B", "bf16", i as u32 + 1, c, 1024, 256).unwrap()
        };
        let at = |i: usize, c: u32| {
            let p = model(i, c);
            (
                p.x * (1.0 + sigma * normal(seed, i, c, 0)),
                p.y * (1.0 + sigma * normal(seed, i, c, 1)),
            )
        };
        let full: Vec<(f64, f64)> = (0..2)
            .flat_map(|i| listed.iter().map(move |c| (i, *c)))
            .map(|(i, c)| at(i, c))
            .collect();
        let full_gs: f64 = (0..2)
            .flat_map(|i| listed.iter().map(move |c| model(i, *c).gpu_seconds))
            .sum();
        let mut curves = vec![Curve::listed(&listed); 2];
        let mut order = LocalOrder::default();
        let mut spent = 0.0;
        while let Some((i, c)) = order.next(&curves, &[0, 0], DEFAULT_TOLERANCE) {
            curves[i].points.insert(c, Some(at(i, c)));
            spent += model(i, c).gpu_seconds;
        }
        let n = curves.iter().map(|c| c.points.len()).sum();
        let found: Vec<(f64, f64)> = (curves.iter())
            .flat_map(|c| c.valid())
            .map(|p| (p.1, p.2))
            .collect();
        let m = frontier_match(&full, &found, MATCH_TOLERANCE).unwrap();
        (
            n,
            spent,
            full_gs,
            m,
            group_noise(&curves) > DEFAULT_TOLERANCE,
        )
    }

    /// Issue 43's check (c): the sim's shape with seeded 1 % and 2 % noise (the real sim's
    /// run-to-run noise, docs/performance.md), 20 seeds each, at the full protocol (no early
    /// stop): how much of the noiseless plan's saving (12 of 18 points, 617.0 of 825.9 GPU-s:
    /// 25.3 %) the noise rule keeps. All of it: 26.2 % saved at 1 % (no seed reads noisy: a
    /// rise of x needs two neighbours within the noise of each other, and the sim's x falls
    /// 2–42 % per doubling), 26.8 % at 2 % (2 of 20 seeds read noisy; none measures all 18).
    /// Printed with `--nocapture`; docs/performance.md records it.
    #[test]
    fn seeded_sim_noise_keeps_most_of_the_saving() {
        let (n0, s0, full, m0, noisy0) = noisy_sim(0, 0.0);
        assert_eq!(
            (n0, (s0 * 10.0).round(), (full * 10.0).round()),
            (12, 6170.0, 8259.0)
        );
        assert!(m0.passes() && !noisy0);
        let mut rows = Vec::new();
        for sigma in [0.01, 0.02] {
            let runs: Vec<_> = (1..=20).map(|seed| noisy_sim(seed, sigma)).collect();
            let pts: usize = runs.iter().map(|r| r.0).sum();
            let spent: f64 = runs.iter().map(|r| r.1).sum();
            let noisy = runs.iter().filter(|r| r.4).count();
            let full18 = runs.iter().filter(|r| r.0 == 18).count();
            let pass = runs.iter().filter(|r| r.3.passes()).count();
            let saved = 1.0 - spent / (20.0 * full);
            println!(
                "σ {:.0} %: mean {:.2} points, saved {:.1} % (noiseless 25.3 %), {noisy} of 20 read noisy, {full18} measured all 18, measure passes {pass} of 20",
                100.0 * sigma,
                pts as f64 / 20.0,
                100.0 * saved
            );
            rows.push((pts, (saved * 1000.0).round(), noisy, full18, pass));
        }
        // (points over 20 seeds, saved ‰, seeds read noisy, seeds that measured all 18,
        // seeds whose plan passes the measure against the list from the same readings). With
        // the few-point rule switched off (`group_noise` 0): the same at 1 %; at 2 % 221
        // points, 29.0 % saved, 11 passes.
        assert_eq!(rows, [(234, 262.0, 0, 0, 18), (227, 268.0, 2, 0, 12)]);
    }

    /// What `sweep.json`'s `adaptive.curves` says of the noiseless sim shape (the plan of
    /// `seeded_sim_noise_keeps_most_of_the_saving` at σ 0): per curve, each proposal's and each
    /// skipped listed concurrency's reason, and the noise used.
    #[test]
    fn the_plan_says_why_each_point_was_skipped() {
        let listed: Vec<u32> = (0..9).map(|k| 1 << k).collect();
        let model = |i: usize, c: u32| {
            sim_model_point("H100", "Llama-3.1-8B", "bf16", i as u32 + 1, c, 1024, 256).unwrap()
        };
        let mut curves = vec![Curve::listed(&listed); 2];
        let mut order = LocalOrder::default();
        let mut made = Vec::new();
        while let Some((i, c)) = order.next_candidate(&curves, &[0, 0], DEFAULT_TOLERANCE) {
            let p = model(i, c.conc);
            curves[i].points.insert(c.conc, Some((p.x, p.y)));
            made.push((i, c));
        }
        let plans = curve_plans(&curves, &[0, 0], DEFAULT_TOLERANCE, &made);
        // TP 1: its ends and middle; 1..16 lies under TP 2's conc 1 (86.8 % more), and
        // 16..256's predicted middle under TP 2. TP 2: every listed point.
        assert_eq!(plans[0].measured, [1, 256, 16]);
        assert_eq!(plans[1].measured, [1, 256, 16, 64, 4, 128, 32, 2, 8]);
        assert_eq!(plans[0].proposals[0].reason, Why::Seed.to_string());
        assert!(plans.iter().all(|p| !p.noisy));
        // The noise used: TP 1's none, TP 2's its own many-point estimate (a smooth curve's
        // bends read as 1.3 %; the group shows no evidence of noise).
        let r = |v: f64| (v * 1e4).round() / 1e4;
        assert_eq!((plans[0].noise, r(plans[1].noise)), (0.0, 0.0133));
        let dominated = "dominated: another curve serves its x with 86.8 % more than its best, \
                         beyond the margin 2.0 % (tolerance + 2.83 σ)";
        let buried = "buried: its predicted point lies under another curve by more than the \
                      threshold";
        let skipped: Vec<(u32, &str)> = (plans[0].skipped.iter())
            .map(|n| (n.conc, n.reason.as_str()))
            .collect();
        assert_eq!(
            skipped,
            [
                (2, dominated),
                (4, dominated),
                (8, dominated),
                (32, buried),
                (64, buried),
                (128, buried)
            ]
        );
        assert!(plans[1].skipped.is_empty());
        // As sweep.json holds it.
        let json = serde_json::to_value(&plans[0]).unwrap();
        assert_eq!(json["skipped"][3]["conc"], 32);
        assert_eq!(json["noisy"], false);
    }
}
