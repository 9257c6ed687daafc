//! A trace as a dependency graph of requests (reference/agentx.md §2.5, §3.5).
//!
//! Every request of a [`Trace`] becomes one [`PlanReq`] in a flat list ordered by recorded start
//! (ties: stream order, then turn). Its predecessors, each with the recorded end-to-start gap
//! that follows it:
//! - the previous request of its own stream (end-to-start delay `max(0, t_k − (t_{k−1} +
//!   api_time_{k−1}))`, §3.5 — recorded `think_time` is not used);
//! - on every other stream of the trace, the latest request whose recorded interval ended at or
//!   before this request's recorded start (AIPerf's cross-stream interval barrier; a touch counts
//!   as ordered, an overlap creates no edge). This one rule gives a sub-agent's spawn (its first
//!   request waits for the parent turn that ended before it) and its join (the parent's next turn
//!   waits for the sub-agent's last request), and keeps recorded happens-before order between
//!   concurrent agents. A barrier already implied by the same stream's previous request (which
//!   waits for the same request) is left out, so the graph stays linear in size.
//!
//! Sub-agent streams whose first request has no predecessor (no parent turn before them) are
//! dropped, as AIPerf drops sub-agents without a preceding parent turn (§2.5); a sub-agent with no
//! following parent turn gates nothing (background) and still keeps its lane until it drains.

use inferbench_workload::agentx::Trace;

/// Nanoseconds per second, for recorded times (seconds, f64) → gaps (ns, u64).
const NS_PER_S: f64 = 1e9;

/// Seconds (finite, may be negative) → ns, clamped at 0.
fn gap_ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * NS_PER_S).round() as u64
    } else {
        0
    }
}

/// One request of a [`TreePlan`].
#[derive(Debug, Clone, PartialEq)]
pub struct PlanReq {
    /// Stream index in [`Trace::streams`].
    pub stream: u32,
    /// Request index within the stream (the turn).
    pub turn: u32,
    /// Recorded start, ns since the session's first request.
    pub t_ns: u64,
    /// Recorded end (start + `api_time`), ns since the session's first request.
    pub end_ns: u64,
    /// Predecessors: (index into [`TreePlan::reqs`], gap in ns to wait after it completes).
    pub preds: Vec<(u32, u64)>,
}

/// A trace's requests as a DAG, ready for the scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct TreePlan {
    /// Index of the trace in the loaded set.
    pub trace: usize,
    /// Requests ordered by recorded start; predecessors always have a smaller index.
    pub reqs: Vec<PlanReq>,
    /// Streams kept (sub-agents without a preceding parent turn are dropped, §2.5).
    pub streams_kept: Vec<bool>,
    /// Recorded span of request starts (min and extent), ns: t* is drawn in it (§3.3).
    pub span_ns: (u64, u64),
    /// Successors of each request (CSR: `succ[succ_at[i]..succ_at[i + 1]]`).
    succ: Vec<u32>,
    succ_at: Vec<u32>,
}

impl TreePlan {
    /// Builds the plan of `trace` (its index `trace_idx` in the loaded set).
    pub fn build(trace_idx: usize, trace: &Trace) -> TreePlan {
        // Keep the root; a sub-agent only when some request of another kept stream ended at or
        // before its first request's start (iterate: a nested sub-agent may hang off another).
        let n_streams = trace.streams.len();
        let mut kept = vec![false; n_streams];
        if n_streams > 0 {
            kept[0] = true;
        }
        loop {
            let mut changed = false;
            for s in 1..n_streams {
                if kept[s] {
                    continue;
                }
                let Some(first) = trace.streams[s].requests.first() else {
                    continue;
                };
                let spawned = (0..n_streams).any(|o| {
                    o != s
                        && kept[o]
                        && trace.streams[o]
                            .requests
                            .iter()
                            .any(|r| r.end_s() <= first.t_s)
                });
                if spawned {
                    kept[s] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }

        // Flat order by recorded start.
        let mut order: Vec<(u32, u32)> = Vec::new();
        for (s, st) in trace.streams.iter().enumerate() {
            if !kept[s] {
                continue;
            }
            for k in 0..st.requests.len() {
                order.push((s as u32, k as u32));
            }
        }
        let req = |s: u32, k: u32| &trace.streams[s as usize].requests[k as usize];
        order.sort_by(|a, b| {
            req(a.0, a.1)
                .t_s
                .total_cmp(&req(b.0, b.1).t_s)
                .then(a.0.cmp(&b.0))
                .then(a.1.cmp(&b.1))
        });
        let mut index = vec![Vec::new(); n_streams];
        for (i, &(s, k)) in order.iter().enumerate() {
            let v: &mut Vec<u32> = &mut index[s as usize];
            debug_assert_eq!(v.len(), k as usize);
            v.push(i as u32);
        }
        let t0 = order
            .iter()
            .map(|&(s, k)| req(s, k).t_s)
            .fold(f64::INFINITY, f64::min);
        let t0 = if t0.is_finite() { t0 } else { 0.0 };

        // Per stream, requests sorted by recorded end, for the barrier lookup.
        let by_end: Vec<Vec<(f64, u32)>> = (0..n_streams)
            .map(|s| {
                let mut v: Vec<(f64, u32)> = trace.streams[s]
                    .requests
                    .iter()
                    .enumerate()
                    .map(|(k, r)| (r.end_s(), k as u32))
                    .collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                v
            })
            .collect();

        let mut reqs: Vec<PlanReq> = Vec::with_capacity(order.len());
        // Per (stream, other stream): the barrier the stream's previous request had.
        let mut last_barrier: Vec<Vec<Option<u32>>> = vec![vec![None; n_streams]; n_streams];
        for &(s, k) in &order {
            let r = req(s, k);
            let mut preds = Vec::new();
            if k > 0 {
                let p = req(s, k - 1);
                preds.push((index[s as usize][k as usize - 1], gap_ns(r.t_s - p.end_s())));
            }
            for o in 0..n_streams {
                if o == s as usize || !kept[o] {
                    continue;
                }
                // The latest (by start, i.e. highest turn) request of `o` ended by r.t_s.
                let ends = &by_end[o];
                let upto = ends.partition_point(|&(e, _)| e <= r.t_s);
                let Some(turn) = ends[..upto].iter().map(|&(_, k)| k).max() else {
                    continue;
                };
                let prev = &mut last_barrier[s as usize][o];
                if k > 0 && *prev == Some(turn) {
                    continue;
                }
                *prev = Some(turn);
                let p = req(o as u32, turn);
                preds.push((index[o][turn as usize], gap_ns(r.t_s - p.end_s())));
            }
            reqs.push(PlanReq {
                stream: s,
                turn: k,
                t_ns: gap_ns(r.t_s - t0),
                end_ns: gap_ns(r.end_s() - t0),
                preds,
            });
        }
        let span_ns = match (reqs.first(), reqs.iter().map(|r| r.t_ns).max()) {
            (Some(f), Some(max)) => (f.t_ns, max - f.t_ns),
            _ => (0, 0),
        };
        let mut counts = vec![0u32; reqs.len() + 1];
        for r in &reqs {
            for &(p, _) in &r.preds {
                counts[p as usize + 1] += 1;
            }
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let succ_at = counts.clone();
        let mut succ = vec![0u32; *counts.last().unwrap_or(&0) as usize];
        for (i, r) in reqs.iter().enumerate() {
            for &(p, _) in &r.preds {
                let at = &mut counts[p as usize];
                succ[*at as usize] = i as u32;
                *at += 1;
            }
        }
        TreePlan {
            trace: trace_idx,
            reqs,
            streams_kept: kept,
            span_ns,
            succ,
            succ_at,
        }
    }

    /// Requests that list `i` as a predecessor.
    pub fn successors(&self, i: usize) -> &[u32] {
        &self.succ[self.succ_at[i] as usize..self.succ_at[i + 1] as usize]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use inferbench_workload::agentx::{Stream, StreamKind, TraceRequest};

    pub(crate) fn rq(t: f64, api: f64) -> TraceRequest {
        TraceRequest {
            t_s: t,
            input_tokens: 128,
            output_tokens: 8,
            hash_ids: vec![0, 1],
            api_time_s: api,
            model: "m".into(),
        }
    }

    pub(crate) fn trace(streams: Vec<Vec<TraceRequest>>) -> Trace {
        Trace {
            id: "tr".into(),
            block_size: 64,
            system_prefix_tokens: 0,
            hash_id_scope: Default::default(),
            streams: streams
                .into_iter()
                .enumerate()
                .map(|(i, requests)| Stream {
                    id: if i == 0 {
                        "tr".into()
                    } else {
                        format!("tr::sa:a{i}")
                    },
                    kind: if i == 0 {
                        StreamKind::Root
                    } else {
                        StreamKind::Subagent
                    },
                    label: String::new(),
                    requests,
                })
                .collect(),
            origin: "test:1".into(),
        }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn single_stream_end_to_start() {
        // Starts 0, 5, 12 with api times 2, 3, 1: gaps 3 s and 4 s after completion.
        let p = TreePlan::build(
            0,
            &trace(vec![vec![rq(0.0, 2.0), rq(5.0, 3.0), rq(12.0, 1.0)]]),
        );
        assert_eq!(p.reqs.len(), 3);
        assert_eq!(p.reqs[0].preds, vec![]);
        assert_eq!(p.reqs[1].preds, vec![(0, 3 * S)]);
        assert_eq!(p.reqs[2].preds, vec![(1, 4 * S)]);
        assert_eq!(p.span_ns, (0, 12 * S));
    }

    #[test]
    fn subagent_spawn_and_join() {
        // Example trace b's shape: root turn 1 ends at 11.5 s, the sub-agent starts at 12.0 and
        // ends at 22.0; the root's next turn at 23.0 joins it (1.0 s after its end).
        let root = vec![rq(0.0, 4.0), rq(6.0, 5.5), rq(23.0, 2.0)];
        let sub = vec![rq(12.0, 4.0), rq(17.0, 5.0)];
        let p = TreePlan::build(0, &trace(vec![root, sub]));
        let order: Vec<(u32, u32)> = p.reqs.iter().map(|r| (r.stream, r.turn)).collect();
        assert_eq!(order, vec![(0, 0), (0, 1), (1, 0), (1, 1), (0, 2)]);
        // Spawn: the sub-agent's first request waits 0.5 s after root turn 1.
        assert_eq!(p.reqs[2].preds, vec![(1, S / 2)]);
        // Its second: own previous (gap 1 s); the root barrier is the same turn, left out.
        assert_eq!(p.reqs[3].preds, vec![(2, S)]);
        // Join: root turn 2 waits 11.5 s after its own previous and 1 s after the sub-agent.
        assert_eq!(p.reqs[4].preds, vec![(1, 11 * S + S / 2), (3, S)]);
        assert_eq!(p.streams_kept, vec![true, true]);
    }

    #[test]
    fn overlap_is_no_edge_and_background_gates_nothing() {
        // The sub-agent runs 3..20; the root's turn at 10 overlaps it (no edge), as does its
        // turn at 15; nothing follows the sub-agent: background.
        let root = vec![rq(0.0, 2.0), rq(10.0, 1.0), rq(15.0, 1.0)];
        let sub = vec![rq(3.0, 17.0)];
        let p = TreePlan::build(0, &trace(vec![root, sub]));
        let order: Vec<(u32, u32)> = p.reqs.iter().map(|r| (r.stream, r.turn)).collect();
        assert_eq!(order, vec![(0, 0), (1, 0), (0, 1), (0, 2)]);
        assert_eq!(p.reqs[1].preds, vec![(0, S)]);
        assert_eq!(p.reqs[2].preds, vec![(0, 8 * S)]);
        assert_eq!(p.reqs[3].preds, vec![(2, 4 * S)]);
    }

    #[test]
    fn orphan_subagent_is_dropped() {
        // A sub-agent that starts before any root request ended has no spawning turn.
        let root = vec![rq(0.0, 5.0), rq(8.0, 1.0)];
        let sub = vec![rq(1.0, 1.0)];
        let p = TreePlan::build(0, &trace(vec![root, sub]));
        assert_eq!(p.streams_kept, vec![true, false]);
        assert_eq!(p.reqs.len(), 2);
        assert_eq!(p.reqs[1].preds, vec![(0, 3 * S)]);
    }
}
