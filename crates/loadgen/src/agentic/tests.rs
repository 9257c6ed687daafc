//! The scheduler on virtual time: a fake server that ends every request a fixed latency after it
//! was sent, and exact dispatch times.

use std::collections::BTreeMap;
use std::sync::Arc;

use inferbench_workload::agentx::Trace;

use super::plan::tests::{rq, trace};
use super::*;

const S: u64 = 1_000_000_000;

/// One dispatch as (kind, play, stream, turn, sent at s).
type Row = (Kind, u32, u32, u32, f64);

/// Runs the scheduler to the end: every request takes `latency(dispatch)` ns, `outcome(d)`
/// decides how it ends. Returns the dispatches in order with their send times.
fn simulate(
    traces: &[Trace],
    cfg: SchedConfig,
    latency: impl Fn(&Dispatch) -> u64,
    outcome: impl Fn(&Dispatch) -> Outcome,
) -> (Vec<Row>, Scheduler) {
    let plans: Vec<TreePlan> = traces
        .iter()
        .enumerate()
        .map(|(i, t)| TreePlan::build(i, t))
        .collect();
    let mut s = Scheduler::new(Arc::new(plans), cfg);
    let mut now = 0u64;
    let mut in_flight: BTreeMap<(u64, u64), (Ticket, Outcome)> = BTreeMap::new();
    let mut seq = 0u64;
    let mut rows = Vec::new();
    for _ in 0..100_000 {
        for d in s.poll(now) {
            assert_eq!(d.scheduled_ns, now, "sent when due: {d:?}");
            rows.push((d.kind, d.play, d.stream, d.turn, now as f64 / S as f64));
            in_flight.insert((now + latency(&d), seq), (d.ticket, outcome(&d)));
            seq += 1;
        }
        if s.is_done() {
            break;
        }
        let next_done = in_flight.keys().next().map(|k| k.0);
        let next = match (next_done, s.next_wakeup()) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        assert!(next >= now, "time goes forward");
        now = next;
        while let Some((&(t, q), _)) = in_flight.iter().next() {
            if t > now {
                break;
            }
            let (ticket, oc) = in_flight.remove(&(t, q)).unwrap();
            s.complete(ticket, now, oc);
        }
    }
    (rows, s)
}

fn ok(_: &Dispatch) -> Outcome {
    Outcome::Ok
}

fn cfg(lanes: u32, duration_s: u64) -> SchedConfig {
    SchedConfig {
        lanes,
        duration_ns: duration_s * S,
        start_ratio: (0.5, 0.5),
        warmup_per_lane: 2,
        ..SchedConfig::default()
    }
}

/// Ten requests at 0, 10, …, 90 s, each 2 s long.
fn ten() -> Trace {
    trace(vec![(0..10).map(|k| rq(10.0 * k as f64, 2.0)).collect()])
}

#[test]
fn primer_warmup_profile_and_recycle() {
    // t* = 45 s: turns 0–4 are history, turn 4 is re-sent as the primer, turns 5–6 warm up
    // with no delays, profiling starts when they drain (T0 = 3 s) and turn 7 waits its recorded
    // 8 s after turn 6. The play drains at 30 s and the lane recycles the trace from turn 0.
    let (rows, s) = simulate(&[ten()], cfg(1, 40), |_| S, ok);
    use Kind::*;
    assert_eq!(
        rows,
        vec![
            (Primer, 0, 0, 4, 0.0),
            (Warmup, 0, 0, 5, 1.0),
            (Warmup, 0, 0, 6, 2.0),
            (Profile, 0, 0, 7, 11.0),
            (Profile, 0, 0, 8, 20.0),
            (Profile, 0, 0, 9, 29.0),
            (Profile, 1, 0, 0, 30.0),
            (Profile, 1, 0, 1, 39.0),
        ]
    );
    assert_eq!(s.profile_start_ns(), Some(3 * S));
    assert_eq!(s.phase(), RunPhase::Ended);
    assert_eq!(s.stats().plays, 2);
    assert_eq!(s.stats().plays_finished, 1);
}

#[test]
fn primers_are_spread_so_every_lane_reaches_t_star_together() {
    // t* = 45 s in both trees. Lane 0 (ten()): the primer is turn 4, recorded at 40 s, lead
    // 5 s. Lane 1: turn 1 recorded at 30 s, lead 15 s. The longest lead fires at once, the
    // other 15 − 5 = 10 s later: both lanes are then 15 s from t* (no idle cap here).
    let b = trace(vec![vec![rq(0.0, 1.0), rq(30.0, 1.0), rq(90.0, 1.0)]]);
    let mut c = cfg(2, 30);
    c.system_idle_cap_ns = None;
    let (rows, _) = simulate(&[ten(), b.clone()], c, |_| S, ok);
    let primers: Vec<&Row> = rows.iter().filter(|r| r.0 == Kind::Primer).collect();
    assert_eq!(
        primers,
        [
            &(Kind::Primer, 1, 0, 1, 0.0),
            &(Kind::Primer, 0, 0, 4, 10.0)
        ]
    );
    // Leads are clamped by the system idle cap: with a 3 s cap both fire at once.
    let mut c = cfg(2, 30);
    c.system_idle_cap_ns = Some(3 * S);
    let (rows, _) = simulate(&[ten(), b], c, |_| S, ok);
    let at: Vec<f64> = rows
        .iter()
        .filter(|r| r.0 == Kind::Primer)
        .map(|r| r.4)
        .collect();
    assert_eq!(at, [0.0, 0.0]);
}

#[test]
fn first_profiling_turn_waits_its_gap_after_t_star() {
    // No warmup requests: turn 5 (t = 50) is 5 s after t* = 45 → sent at T0 + 5.
    let mut c = cfg(1, 20);
    c.warmup_per_lane = 0;
    let (rows, s) = simulate(&[ten()], c, |_| S, ok);
    assert_eq!(rows[0], (Kind::Primer, 0, 0, 4, 0.0));
    assert_eq!(s.profile_start_ns(), Some(S));
    assert_eq!(rows[1], (Kind::Profile, 0, 0, 5, 6.0));
    assert_eq!(rows[2], (Kind::Profile, 0, 0, 6, 15.0));
}

#[test]
fn idle_caps_shift_timers() {
    // Turn 1 is recorded 1,000 s after turn 0 ended.
    let tr = trace(vec![vec![rq(0.0, 1.0), rq(1001.0, 1.0), rq(1003.0, 1.0)]]);
    let mut c = cfg(1, 14);
    c.start_ratio = (0.0, 0.0);
    c.warmup_per_lane = 0;
    // Both caps: the system cap (10 s) wins with one lane.
    let (rows, s) = simulate(std::slice::from_ref(&tr), c.clone(), |_| S, ok);
    assert_eq!(rows[0], (Kind::Profile, 0, 0, 0, 0.0));
    assert_eq!(rows[1], (Kind::Profile, 0, 0, 1, 11.0));
    // Turn 2's recorded 1 s gap is kept.
    assert_eq!(rows[2], (Kind::Profile, 0, 0, 2, 13.0));
    // The tree cap applies first (1,001 → 301 s), then the system cap (→ 11 s).
    assert_eq!(s.stats().tree_skipped_ns, 700 * S);
    assert_eq!(s.stats().system_jumps, 1);
    assert_eq!(s.stats().system_skipped_ns, 290 * S);
    // Per-tree cap only: 300 s after the tree's last completion.
    c.system_idle_cap_ns = None;
    c.duration_ns = 302 * S;
    let (rows, s) = simulate(std::slice::from_ref(&tr), c.clone(), |_| S, ok);
    assert_eq!(rows[1], (Kind::Profile, 0, 0, 1, 301.0));
    assert_eq!(s.stats().tree_jumps, 1);
    assert_eq!(s.stats().tree_skipped_ns, 700 * S);
    // No caps: the recorded gap.
    c.tree_idle_cap_ns = None;
    c.duration_ns = 1002 * S;
    let (rows, _) = simulate(&[tr], c, |_| S, ok);
    assert_eq!(rows[1], (Kind::Profile, 0, 0, 1, 1001.0));
}

#[test]
fn subagent_spawns_after_its_parent_turn_and_the_join_waits() {
    // Root turns at 0 (4 s), 6 (5.5 s), 23; the sub-agent at 12 (4 s) and 17 (5 s).
    let root = vec![rq(0.0, 4.0), rq(6.0, 5.5), rq(23.0, 2.0)];
    let sub = vec![rq(12.0, 4.0), rq(17.0, 5.0)];
    let mut c = cfg(1, 30);
    c.start_ratio = (0.0, 0.0);
    c.warmup_per_lane = 0;
    // Every request takes 3 s here (the sub-agent's first 10 s: the join must wait for it).
    let lat = |d: &Dispatch| {
        if (d.stream, d.turn) == (1, 0) {
            10 * S
        } else {
            3 * S
        }
    };
    let (rows, _) = simulate(&[trace(vec![root, sub])], c, lat, ok);
    use Kind::Profile as P;
    assert_eq!(
        rows[..5],
        [
            (P, 0, 0, 0, 0.0),
            // 2 s after turn 0 ended at 3.
            (P, 0, 0, 1, 5.0),
            // Spawn: 0.5 s after the parent turn ended at 8.
            (P, 0, 1, 0, 8.5),
            // 1 s after its first request ended at 18.5.
            (P, 0, 1, 1, 19.5),
            // Join: 1 s after the sub-agent ended at 22.5 (its own gap, 11.5 s after 8, is
            // earlier).
            (P, 0, 0, 2, 23.5),
        ]
    );
}

#[test]
fn context_overflow_ends_the_stream_and_root_warmup_failure_aborts() {
    let mut c = cfg(1, 100);
    c.start_ratio = (0.0, 0.0);
    c.warmup_per_lane = 0;
    c.system_idle_cap_ns = None;
    c.tree_idle_cap_ns = None;
    // Turn 1 overflows: turns 2–9 are never sent; the play drains and the lane recycles.
    let (rows, s) = simulate(
        &[ten()],
        c.clone(),
        |_| S,
        |d| {
            if d.play == 0 && d.turn == 1 {
                Outcome::ContextOverflow
            } else {
                Outcome::Ok
            }
        },
    );
    assert_eq!(
        rows[..3],
        [
            (Kind::Profile, 0, 0, 0, 0.0),
            (Kind::Profile, 0, 0, 1, 9.0),
            (Kind::Profile, 1, 0, 0, 10.0),
        ]
    );
    assert_eq!(s.stats().skipped_after_overflow, 8);
    // An ordinary error goes on to the next turn.
    let (rows, _) = simulate(
        &[ten()],
        c.clone(),
        |_| S,
        |d| {
            if d.turn == 1 {
                Outcome::Error
            } else {
                Outcome::Ok
            }
        },
    );
    assert_eq!(rows[2], (Kind::Profile, 0, 0, 2, 18.0));
    // A failed root warmup request aborts the run.
    let mut c = cfg(1, 100);
    c.warmup_per_lane = 1;
    let (rows, s) = simulate(
        &[ten()],
        c,
        |_| S,
        |d| {
            if d.kind == Kind::Warmup {
                Outcome::Error
            } else {
                Outcome::Ok
            }
        },
    );
    assert_eq!(s.phase(), RunPhase::Aborted);
    assert!(rows.iter().all(|r| r.0 != Kind::Profile));
}

#[test]
fn lanes_are_trees_with_their_own_cache_bust_identity() {
    // Two lanes over two traces: one play each, different markers; per-lane t* draws differ
    // with the default 0.25–0.75 range but stay inside it.
    let plans: Vec<TreePlan> = [ten(), ten()]
        .iter()
        .enumerate()
        .map(|(i, t)| TreePlan::build(i, t))
        .collect();
    let mut c = SchedConfig {
        lanes: 4,
        ..SchedConfig::default()
    };
    c.warmup_per_lane = 0;
    let mut s = Scheduler::new(Arc::new(plans), c);
    // The four primers, at their spread times.
    let mut first = s.poll(0);
    for _ in 0..8 {
        if first.len() >= 4 {
            break;
        }
        let at = s.next_wakeup().unwrap();
        first.extend(s.poll(at));
    }
    let mut markers: Vec<u64> = first.iter().map(|d| d.marker_id).collect();
    markers.sort();
    markers.dedup();
    assert_eq!(markers.len(), 4, "one identity per play: {first:?}");
    let mut lanes: Vec<(u32, usize, u32)> =
        first.iter().map(|d| (d.lane, d.trace, d.pass)).collect();
    lanes.sort();
    assert_eq!(lanes, vec![(0, 0, 0), (1, 1, 0), (2, 0, 1), (3, 1, 1)]);
    for d in &first {
        // Primer turn = last history turn: t* in [22.5, 67.5] s → turn 2..=6.
        assert!((2..=6).contains(&d.turn), "{d:?}");
        assert!(d.marker_id < 1 << 48);
    }
}

/// Where the idle caps applied (issue 42 follow-up): each dispatch carries how far the caps
/// moved its own timer: turn 1 by the tree cap's 700 s and the system cap's 290 s, turns 0 and
/// 2 (recorded gap kept) by nothing; with the tree cap alone, 700 s.
#[test]
fn each_dispatch_says_how_far_the_idle_caps_moved_it() {
    let tr = trace(vec![vec![rq(0.0, 1.0), rq(1001.0, 1.0), rq(1003.0, 1.0)]]);
    let mut c = cfg(1, 14);
    c.start_ratio = (0.0, 0.0);
    c.warmup_per_lane = 0;
    let run = |c: SchedConfig| {
        let capped = std::cell::RefCell::new(Vec::new());
        simulate(
            std::slice::from_ref(&tr),
            c,
            |d| {
                capped.borrow_mut().push((d.turn, d.gap_capped_ns));
                S
            },
            ok,
        );
        capped.into_inner()
    };
    assert_eq!(run(c.clone()), vec![(0, 0), (1, 990 * S), (2, 0)]);
    c.system_idle_cap_ns = None;
    c.duration_ns = 302 * S;
    assert_eq!(run(c), vec![(0, 0), (1, 700 * S)]);
}

/// Issue 43's AgentX early stop: `end_profile_at` ends the profile as its duration would have
/// then. The replay of [`primer_warmup_profile_and_recycle`] (T0 = 3 s, a 40 s duration) told
/// to end at 25 s sends exactly what a 22 s duration sends (turns 7 and 8, none after 25 s),
/// and ends; before the profile (during the warmup) the call changes nothing.
#[test]
fn an_early_stop_ends_the_profile_as_the_duration_would() {
    let plans = vec![TreePlan::build(0, &ten())];
    let mut s = Scheduler::new(Arc::new(plans), cfg(1, 40));
    let mut now = 0u64;
    let mut in_flight: BTreeMap<(u64, u64), Ticket> = BTreeMap::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut seq = 0u64;
    for _ in 0..10_000 {
        if s.phase() == RunPhase::Warmup {
            s.end_profile_at(now);
        }
        if now >= 25 * S {
            s.end_profile_at(25 * S);
        }
        for d in s.poll(now) {
            rows.push((d.kind, d.play, d.stream, d.turn, now as f64 / S as f64));
            in_flight.insert((now + S, seq), d.ticket);
            seq += 1;
        }
        if s.is_done() {
            break;
        }
        let next_done = in_flight.keys().next().map(|k| k.0);
        now = match (next_done, s.next_wakeup()) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        }
        .max(now);
        while let Some((&(t, q), _)) = in_flight.iter().next() {
            if t > now {
                break;
            }
            let ticket = in_flight.remove(&(t, q)).unwrap();
            s.complete(ticket, now, Outcome::Ok);
        }
    }
    let (same, _) = simulate(&[ten()], cfg(1, 22), |_| S, ok);
    use Kind::*;
    assert_eq!(
        rows,
        vec![
            (Primer, 0, 0, 4, 0.0),
            (Warmup, 0, 0, 5, 1.0),
            (Warmup, 0, 0, 6, 2.0),
            (Profile, 0, 0, 7, 11.0),
            (Profile, 0, 0, 8, 20.0),
        ]
    );
    assert_eq!(rows, same);
    assert_eq!(s.profile_start_ns(), Some(3 * S));
    assert_eq!(s.phase(), RunPhase::Ended);
}
