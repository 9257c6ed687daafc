//! A trace as a dependency graph of requests (reference/agentx.md §2.5, §3.5).
//!
//! Every request of a [`Trace`] becomes one [`PlanReq`] in a flat list ordered by recorded start
//! (ties: stream order, then turn). Its predecessors, each with the recorded end-to-start gap
//! that follows it:
//! - the previous request of its own stream (end-to-start delay `max(0, t_k − (t_{k−1} +
//!   api_time_{k−1}))`, §3.5 — recorded `think_time` is not used);
//! - a sub-agent's first request: its spawning turn, the latest-starting main-agent request
//!   that ended at or before it (gap: the recorded idle between them);
//! - a main-agent turn that joins sub-agents: the last request of every sub-agent whose recorded
//!   end is at or before this turn's start and that no earlier main-agent turn joins (the first
//!   such turn joins it).
//!
//! Nothing else links streams: AIPerf scopes its interval barriers per captured agent and links
//! the main agent and its sub-agents only by spawn and join. (Barriers across all streams
//! re-impose recorded server time whenever the server is faster than the recording: measured
//! against agentx-harness, docs/agentx-harness-comparison.md §6.)
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

/// Which streams of `trace` are replayed: the root always; a sub-agent only when a main-agent
/// turn ended at or before its first request (its spawning turn; nested sub-agents are
/// flattened into the trace's streams and hang off the main agent too; §2.5).
fn kept_streams(trace: &Trace) -> Vec<bool> {
    trace
        .streams
        .iter()
        .enumerate()
        .map(|(s, st)| {
            s == 0
                || st.requests.first().is_some_and(|first| {
                    trace.streams[0]
                        .requests
                        .iter()
                        .any(|r| r.end_s() <= first.t_s)
                })
        })
        .collect()
}

/// The `(stream, turn)` of every request of the `kept` streams, by recorded start (ties by
/// stream, then turn).
fn start_order(trace: &Trace, kept: &[bool]) -> Vec<(u32, u32)> {
    let mut order: Vec<(u32, u32)> = Vec::new();
    for (s, st) in trace.streams.iter().enumerate() {
        if kept[s] {
            order.extend((0..st.requests.len()).map(|k| (s as u32, k as u32)));
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
    order
}

/// A sub-agent's spawning turn: the root turn it waits for and the recorded gap after it, s.
type Spawn = (u32, f64);
/// A sub-agent a root turn joins: its stream, its last turn, and the recorded gap, s.
type Join = (u32, u32, f64);

/// A sub-agent's spawning turn per stream (`(root turn, gap s)`) and the sub-agents each root
/// turn joins (`(stream, last turn, gap s)`), §2.5: a sub-agent's first request waits for the
/// last main-agent request that ended at or before it; the joining turn (the first main-agent
/// request starting at or after the sub-agent's recorded end) waits for the sub-agent's last
/// request. Nothing else links streams (AIPerf scopes its interval barriers per captured
/// agent).
fn spawn_and_join(trace: &Trace, kept: &[bool]) -> (Vec<Option<Spawn>>, Vec<Vec<Join>>) {
    let n_streams = trace.streams.len();
    let root = &trace.streams[0].requests;
    let mut join_of: Vec<Vec<Join>> = vec![Vec::new(); root.len()];
    let mut spawn_of: Vec<Option<Spawn>> = vec![None; n_streams];
    for s in 1..n_streams {
        if !kept[s] {
            continue;
        }
        let st = &trace.streams[s].requests;
        let (Some(first), Some(last)) = (st.first(), st.last()) else {
            continue;
        };
        // Spawning turn: the latest-starting root request ended by the sub-agent's start.
        if let Some((k, p)) = root
            .iter()
            .enumerate()
            .filter(|(_, p)| p.end_s() <= first.t_s)
            .max_by(|a, b| a.1.t_s.total_cmp(&b.1.t_s).then(a.0.cmp(&b.0)))
        {
            spawn_of[s] = Some((k as u32, first.t_s - p.end_s()));
        }
        // Joining turn: the first root request starting at or after the sub-agent's end.
        let end = st.iter().map(|r| r.end_s()).fold(last.end_s(), f64::max);
        if let Some((k, j)) = root
            .iter()
            .enumerate()
            .filter(|(_, j)| j.t_s >= end)
            .min_by(|a, b| a.1.t_s.total_cmp(&b.1.t_s).then(a.0.cmp(&b.0)))
        {
            join_of[k].push((s as u32, st.len() as u32 - 1, j.t_s - last.end_s()));
        }
    }
    (spawn_of, join_of)
}

/// The successor lists of `reqs` in compressed sparse rows: `(succ, succ_at)` with the
/// successors of request `i` at `succ[succ_at[i]..succ_at[i + 1]]`, in request order.
fn successors_csr(reqs: &[PlanReq]) -> (Vec<u32>, Vec<u32>) {
    let mut counts = vec![0u32; reqs.len() + 1];
    for r in reqs {
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
    (succ, succ_at)
}

impl TreePlan {
    /// Builds the plan of `trace` (its index `trace_idx` in the loaded set).
    pub fn build(trace_idx: usize, trace: &Trace) -> TreePlan {
        let kept = kept_streams(trace);
        let order = start_order(trace, &kept);
        let req = |s: u32, k: u32| &trace.streams[s as usize].requests[k as usize];
        // index[stream][turn] = the request's position in `order`.
        let mut index = vec![Vec::new(); trace.streams.len()];
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
        let (spawn_of, join_of) = spawn_and_join(trace, &kept);
        let mut reqs: Vec<PlanReq> = Vec::with_capacity(order.len());
        for &(s, k) in &order {
            let r = req(s, k);
            let mut preds = Vec::new();
            if k > 0 {
                let p = req(s, k - 1);
                preds.push((index[s as usize][k as usize - 1], gap_ns(r.t_s - p.end_s())));
            } else if let Some((pk, gap)) = spawn_of[s as usize] {
                preds.push((index[0][pk as usize], gap_ns(gap)));
            }
            if s == 0 {
                for &(js, jk, gap) in &join_of[k as usize] {
                    preds.push((index[js as usize][jk as usize], gap_ns(gap)));
                }
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
        let (succ, succ_at) = successors_csr(&reqs);
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

    /// The most requests of this session in flight at once as recorded (overlapping
    /// [`PlanReq::t_ns`]..[`PlanReq::end_ns`]: the main agent and its parallel sub-agents,
    /// which take no lane of their own); at least 1. Each is a connection, so a replay at N
    /// lanes may hold up to N × this many (trial of issue 39 §1–§3, finding 3).
    pub fn peak_in_flight(&self) -> u64 {
        let mut edges: Vec<(u64, i64)> = (self.reqs.iter())
            .flat_map(|r| [(r.t_ns, 1), (r.end_ns.max(r.t_ns.saturating_add(1)), -1)])
            .collect();
        // Ends before starts at the same instant: back-to-back requests do not overlap.
        edges.sort_unstable();
        let (mut now, mut peak) = (0i64, 1i64);
        for (_, d) in edges {
            now += d;
            peak = peak.max(now);
        }
        peak as u64
    }
}

/// What replaying `traces` asks of the client per lane, the one rule of `replay`'s up-front
/// check and of the sweep's per-row check (issue 39: an AgentX row counted 1 connection per
/// lane in the sweep while the replay counted its sub-agents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneLoad {
    /// The most requests one session has in flight at once ([`TreePlan::peak_in_flight`]):
    /// connections per lane; 1 without traces.
    pub per_lane: u64,
    /// Memory one request in flight may take besides its connection, bytes: the largest
    /// request's `in` × [`crate::options::limits::BYTES_PER_PROMPT_TOKEN`] + what the client
    /// keeps and holds of a response of `out` tokens
    /// ([`crate::options::limits::kept_response_bytes`],
    /// [`crate::options::limits::held_stream_bytes`]: the one rule of the client and the
    /// estimates, issue 39); 0 without traces.
    pub request_bytes: u64,
    /// The longest request's `out`, tokens: what one record's output may take in the records
    /// files (`replay`'s `ulimit -f` plan); 0 without traces.
    pub out_tokens: u64,
}

impl LaneLoad {
    /// The load of no trace: 1 connection per lane, no request's bytes.
    pub const NONE: LaneLoad = LaneLoad {
        per_lane: 1,
        request_bytes: 0,
        out_tokens: 0,
    };

    /// Folds in the `i`th trace `t` (built into its [`TreePlan`], as the replay builds it): the
    /// larger of each field. The one per-lane cost of every check, whether it sees the traces
    /// one at a time while counting them (`replay`'s and the sweep's checks before the load,
    /// through `inferbench_workload::agentx::traces_budget_need_each`) or loaded
    /// ([`lane_load`]): issue 39, fresh tester's finding 1 (the first check counted 64 KiB per
    /// lane, the second 151 KiB, so the first one's advice was refused by the second).
    pub fn add(&mut self, i: usize, t: &Trace) {
        use crate::options::limits::{
            held_stream_bytes, kept_response_bytes, BYTES_PER_PROMPT_TOKEN,
        };
        self.per_lane = self.per_lane.max(TreePlan::build(i, t).peak_in_flight());
        let largest = (t.streams.iter().flat_map(|s| s.requests.iter()))
            .map(|r| {
                u64::from(r.input_tokens)
                    .saturating_mul(BYTES_PER_PROMPT_TOKEN)
                    .saturating_add(kept_response_bytes(u64::from(r.output_tokens)))
                    .saturating_add(held_stream_bytes(u64::from(r.output_tokens)))
            })
            .max()
            .unwrap_or(0);
        self.request_bytes = self.request_bytes.max(largest);
        let out = (t.streams.iter().flat_map(|s| s.requests.iter()))
            .map(|r| u64::from(r.output_tokens))
            .max()
            .unwrap_or(0);
        self.out_tokens = self.out_tokens.max(out);
    }
}

/// [`LaneLoad`] of `traces` ([`LaneLoad::add`] of each, from [`LaneLoad::NONE`]).
pub fn lane_load(traces: &[Trace]) -> LaneLoad {
    let mut load = LaneLoad::NONE;
    for (i, t) in traces.iter().enumerate() {
        load.add(i, t);
    }
    load
}

/// What loading the traces at `path` with `opts` keeps in memory, bytes
/// (`inferbench_workload::agentx::traces_budget_need`), and their [`LaneLoad`], in one pass
/// that keeps no trace: what `replay`'s and the sweep's checks count before the load.
///
/// # Errors
/// As `traces_budget_need`: what the load would refuse the files for (naming `file:line`).
pub fn counted_traces(
    path: &std::path::Path,
    opts: &inferbench_workload::agentx::LoadOptions,
) -> Result<(u64, LaneLoad), inferbench_workload::WorkloadError> {
    let mut load = LaneLoad::NONE;
    let mut i = 0usize;
    let bytes = inferbench_workload::agentx::traces_budget_need_each(path, opts, &mut |t| {
        load.add(i, t);
        i += 1;
    })?;
    Ok((bytes, load))
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
                    parent: None,
                    requests,
                })
                .collect(),
            origin: "test:1".into(),
        }
    }

    const S: u64 = 1_000_000_000;

    /// Trial of issue 39 §1–§3, finding 3: sub-agents take no lane, so a lane holds its
    /// session's overlapping requests: serial turns 1, a root turn beside two parallel
    /// sub-agents 3, back-to-back requests (end = next start) 1.
    #[test]
    fn peak_in_flight_counts_parallel_sub_agents() {
        let serial = TreePlan::build(0, &trace(vec![vec![rq(0.0, 2.0), rq(2.0, 3.0)]]));
        assert_eq!(serial.peak_in_flight(), 1);
        let root = vec![rq(0.0, 4.0), rq(5.0, 10.0), rq(30.0, 1.0)];
        let a = vec![rq(6.0, 4.0)];
        let b = vec![rq(7.0, 5.0)];
        let p = TreePlan::build(0, &trace(vec![root, a, b]));
        assert_eq!(p.peak_in_flight(), 3);
    }

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
    fn siblings_are_not_ordered_by_each_other() {
        // Sub-agent B starts after sub-agent A ended; only spawn and join link them to the main
        // agent (agentx-harness' scoping): B waits for its spawning turn, not for A.
        let root = vec![rq(0.0, 1.0), rq(2.0, 1.0), rq(20.0, 1.0)];
        let a = vec![rq(3.0, 2.0)];
        let b = vec![rq(6.0, 1.0)];
        let p = TreePlan::build(0, &trace(vec![root, a, b]));
        let order: Vec<(u32, u32)> = p.reqs.iter().map(|r| (r.stream, r.turn)).collect();
        assert_eq!(order, vec![(0, 0), (0, 1), (1, 0), (2, 0), (0, 2)]);
        assert_eq!(p.reqs[2].preds, vec![(1, 0)]);
        assert_eq!(p.reqs[3].preds, vec![(1, 3 * S)]);
        // The main agent's next turn: 17 s after its own previous, joins both (15 s, 13 s).
        assert_eq!(p.reqs[4].preds, vec![(1, 17 * S), (2, 15 * S), (3, 13 * S)]);
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
