//! The trace model (reference/agentx.md §1.4): one [`Trace`] per session, its main agent and each
//! sub-agent as a [`Stream`] of recorded requests on one session clock. Also the two whole-trace
//! computations that need no prompt text: the `_256k` request filter ([`filter_isl_cap`], §1.6)
//! and the ideal prefix-cache hit ([`theoretical_hits`], §2.10).

use std::collections::HashSet;

/// One recorded model request (§1.4 request object).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Start time, seconds since the session's first request (`t`; sub-agent requests on the
    /// same clock as the main agent's).
    pub t_s: f64,
    /// Input tokens (`in`), the exact prompt length to synthesize (before the chat template and
    /// the cache-bust marker).
    pub input_tokens: u32,
    /// Output tokens (`out`): sent as `max_completion_tokens` with `ignore_eos`.
    pub output_tokens: u32,
    /// 64-token prefix-block identities (`hash_ids`), per-trace namespace. May cover fewer than
    /// `ceil(in / block_size)` blocks (the recorder truncates); the rest is synthesized as unique.
    pub hash_ids: Vec<u32>,
    /// Recorded end-to-end duration of the call, seconds (`api_time`); the recorded end is
    /// `t_s + api_time_s`.
    pub api_time_s: f64,
    /// Recorded model name (informational; replay sends `--model`).
    pub model: String,
}

impl TraceRequest {
    /// Recorded end, seconds on the session clock.
    pub fn end_s(&self) -> f64 {
        self.t_s + self.api_time_s
    }
}

/// Whether a stream is the main agent or a sub-agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// The main agent (stream 0 of every trace).
    Root,
    /// A sub-agent entry (`type: "subagent"`), a child session of the root.
    Subagent,
}

/// One conversation within a trace: the main agent or one sub-agent, requests in `t` order.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// Conversation id: the trace id for the root, `<trace>::sa:<agent_id>` for a sub-agent
    /// (AIPerf's naming, §2.5).
    pub id: String,
    /// Root or sub-agent.
    pub kind: StreamKind,
    /// Sub-agent label (`subagent_type`), empty for the root.
    pub label: String,
    /// The stream that spawned this sub-agent (its [`Stream::id`]: the root's for a sub-agent
    /// entry of the main agent, the enclosing sub-agent's for a nested one); `None` for the
    /// root. The replay flattens nested sub-agents (AIPerf's graph hangs them off the main
    /// agent); this keeps the real parent for what is recorded and shown.
    pub parent: Option<String>,
    /// Its requests, in recorded order (non-decreasing `t_s`).
    pub requests: Vec<TraceRequest>,
}

/// How a trace's hash ids are namespaced (`hash_id_scope`, §1.4, §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashIdScope {
    /// `"local"` (the default and what every corpus uses): ids are per trace, so equal ids in two
    /// traces are unrelated blocks.
    #[default]
    Local,
    /// `"global"`: one namespace across all traces of the load.
    Global,
}

/// One session trace: a root stream and its sub-agent streams sharing one hash namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Session id (`id`).
    pub id: String,
    /// Tokens per hash block (`block_size`, 64 in every SemiAnalysis corpus).
    pub block_size: u32,
    /// Declared tool + system prefix, tokens (`tool_tokens + system_tokens`, 0 when absent).
    pub system_prefix_tokens: u32,
    /// `streams[0]` is the root (present even when the main agent has no request of its own);
    /// sub-agents follow in order of their first request (ties: file order).
    pub streams: Vec<Stream>,
    /// Where it came from: `file:line`, for messages.
    pub origin: String,
    /// Hash-id namespace (`hash_id_scope`, default local).
    pub hash_id_scope: HashIdScope,
}

impl Trace {
    /// Memory this trace takes, bytes: its structs, the strings and every request's `hash_ids`
    /// (as allocated), with a fixed share per allocation for the allocator; what the memory
    /// budget counts for a trace kept (issue 39 §2).
    pub fn heap_bytes(&self) -> u64 {
        const PER_ALLOC: usize = 16;
        let streams: usize = (self.streams.iter())
            .map(|s| {
                let requests: usize = (s.requests.iter())
                    .map(|r| r.hash_ids.capacity() * 4 + r.model.capacity() + 2 * PER_ALLOC)
                    .sum();
                std::mem::size_of::<Stream>()
                    + s.id.capacity()
                    + s.label.capacity()
                    + s.requests.capacity() * std::mem::size_of::<TraceRequest>()
                    + requests
                    + 3 * PER_ALLOC
            })
            .sum();
        (std::mem::size_of::<Trace>()
            + self.id.capacity()
            + self.origin.capacity()
            + self.streams.capacity() * std::mem::size_of::<Stream>()
            + streams
            + 3 * PER_ALLOC) as u64
    }

    /// Number of model requests over all streams.
    pub fn request_count(&self) -> usize {
        self.streams.iter().map(|s| s.requests.len()).sum()
    }

    /// Largest `in + out` of any request of any stream, tokens (what `--max-context-length`
    /// compares, §1.6; sub-agents included). 0 for a trace without requests.
    pub fn peak_context_tokens(&self) -> u64 {
        self.streams
            .iter()
            .flat_map(|s| &s.requests)
            .map(|r| r.input_tokens as u64 + r.output_tokens as u64)
            .max()
            .unwrap_or(0)
    }

    /// The synthesis namespace key of this trace's hash ids (§2.2): a stable 64-bit key of the
    /// trace id for [`HashIdScope::Local`], 0 (one shared namespace) for
    /// [`HashIdScope::Global`]. Pass it as `scope` to the block corpus and renderer.
    pub fn hash_scope_key(&self) -> u64 {
        match self.hash_id_scope {
            HashIdScope::Local => super::synth::str_key(&self.id),
            HashIdScope::Global => 0,
        }
    }
}

/// The `_256k` rule (§1.6), for building capped corpora: drops every request (main-agent and
/// sub-agent alike) whose `in + out` exceeds `max_in_plus_out` tokens. If the earliest request
/// of the trace was dropped, all surviving `t` are shifted by one common offset so the first
/// survivor starts at 0 (overlaps preserved); otherwise times are unchanged. Sub-agent streams
/// left without requests are dropped; the root stays `streams[0]` even when emptied. `None`
/// when no request survives. (The subagent entry's own `t`/`duration_ms`/`total_tokens` are not
/// part of this model, so there is nothing else to recompute.)
pub fn filter_isl_cap(trace: &Trace, max_in_plus_out: u64) -> Option<Trace> {
    let keep = |r: &TraceRequest| r.input_tokens as u64 + r.output_tokens as u64 <= max_in_plus_out;
    let all = trace.streams.iter().flat_map(|s| &s.requests);
    let first_all = all.clone().map(|r| r.t_s).min_by(f64::total_cmp)?;
    let first_kept = all
        .filter(|r| keep(r))
        .map(|r| r.t_s)
        .min_by(f64::total_cmp)?;
    let shift = if first_kept > first_all {
        first_kept
    } else {
        0.0
    };
    let mut out = trace.clone();
    for s in &mut out.streams {
        s.requests.retain(|r| keep(r));
        for r in &mut s.requests {
            r.t_s -= shift;
        }
    }
    // Keep streams[0] (the root) whatever happens to its requests.
    let mut is_root = true;
    out.streams
        .retain(|s| std::mem::replace(&mut is_root, false) || !s.requests.is_empty());
    Some(out)
}

/// The ideal prefix-cache hit of every request (§2.10), indexed like `trace.streams[s].requests[r]`:
/// `(hit_blocks, total_blocks)`, where `total_blocks = len(hash_ids)` and `hit_blocks` is the
/// length of the leading run of its ids already seen by an earlier request of the trace. All
/// requests of all streams are walked in global `t` order (ties: stream order, then request
/// order) with one seen-set, so a sub-agent hits on the blocks it shares with its parent. The
/// walk is per trace (a [`HashIdScope::Global`] corpus would share one set across traces).
/// AIPerf's metric is Σ hit / Σ total over the measured requests.
pub fn theoretical_hits(trace: &Trace) -> Vec<Vec<(u32, u32)>> {
    let mut order: Vec<(f64, usize, usize)> = Vec::with_capacity(trace.request_count());
    for (si, s) in trace.streams.iter().enumerate() {
        for (ri, r) in s.requests.iter().enumerate() {
            order.push((r.t_s, si, ri));
        }
    }
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut out: Vec<Vec<(u32, u32)>> = trace
        .streams
        .iter()
        .map(|s| vec![(0, 0); s.requests.len()])
        .collect();
    let mut seen: HashSet<u32> = HashSet::new();
    for (_, si, ri) in order {
        let ids = &trace.streams[si].requests[ri].hash_ids;
        let hit = ids.iter().take_while(|h| seen.contains(h)).count();
        out[si][ri] = (hit as u32, ids.len() as u32);
        seen.extend(ids.iter().copied());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentx::load::tests::example_traces;

    fn r(t_s: f64, input_tokens: u32, output_tokens: u32) -> TraceRequest {
        TraceRequest {
            t_s,
            input_tokens,
            output_tokens,
            hash_ids: vec![],
            api_time_s: 1.0,
            model: String::new(),
        }
    }

    fn stream(id: &str, kind: StreamKind, requests: Vec<TraceRequest>) -> Stream {
        Stream {
            id: id.into(),
            kind,
            label: String::new(),
            parent: None,
            requests,
        }
    }

    fn trace(streams: Vec<Stream>) -> Trace {
        Trace {
            id: "x".into(),
            block_size: 64,
            system_prefix_tokens: 0,
            streams,
            origin: "test:1".into(),
            hash_id_scope: HashIdScope::Local,
        }
    }

    #[test]
    fn theoretical_hits_of_the_example() {
        let ex = example_traces();
        // Trace a: 0/19, then each turn re-reads its predecessor's blocks.
        assert_eq!(
            theoretical_hits(&ex[0]),
            vec![vec![(0, 19), (19, 27), (27, 33)]]
        );
        // Trace b in t order: root 0 (t 0), root 1 (7.5), sub 0 (12: ids 0,1 seen, 24 new),
        // sub 1 (16: 0,1,24..32 seen, 33 new), root 2 (23: 0..23 seen, 37 new).
        assert_eq!(
            theoretical_hits(&ex[1]),
            vec![vec![(0, 20), (20, 24), (24, 29)], vec![(2, 11), (11, 15)]]
        );
        let (hit, total) = ex
            .iter()
            .flat_map(theoretical_hits)
            .flatten()
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        // a: 0 + 19 + 27; b root: 0 + 20 + 24; b sub: 2 + 11 → 103 of 178 blocks (57.9 %).
        assert_eq!((hit, total), (103, 19 + 27 + 33 + 20 + 24 + 29 + 11 + 15));
    }

    #[test]
    fn theoretical_hits_ties_go_to_stream_order() {
        let mut a = r(1.0, 64, 1);
        a.hash_ids = vec![5];
        let b = a.clone();
        let t = trace(vec![
            stream("x", StreamKind::Root, vec![a]),
            stream("x::sa:1", StreamKind::Subagent, vec![b]),
        ]);
        assert_eq!(theoretical_hits(&t), vec![vec![(0, 1)], vec![(1, 1)]]);
    }

    #[test]
    fn isl_cap_drops_requests_and_shifts_time() {
        let t = trace(vec![
            stream(
                "x",
                StreamKind::Root,
                vec![r(0.0, 300, 10), r(4.0, 100, 10), r(9.0, 500, 1)],
            ),
            stream("x::sa:a", StreamKind::Subagent, vec![r(5.0, 400, 0)]),
            stream(
                "x::sa:b",
                StreamKind::Subagent,
                vec![r(6.0, 50, 0), r(7.0, 250, 0)],
            ),
        ]);
        let f = filter_isl_cap(&t, 256).unwrap();
        // The earliest (t 0, 310 tokens) went: everything shifts by the first survivor's 4 s.
        assert_eq!(f.streams.len(), 2);
        assert_eq!(f.streams[0].id, "x");
        assert_eq!(
            f.streams[0]
                .requests
                .iter()
                .map(|r| r.t_s)
                .collect::<Vec<_>>(),
            [0.0]
        );
        assert_eq!(f.streams[1].id, "x::sa:b");
        assert_eq!(
            f.streams[1]
                .requests
                .iter()
                .map(|r| r.t_s)
                .collect::<Vec<_>>(),
            [2.0, 3.0]
        );
        // The earliest survives: no shift.
        let f = filter_isl_cap(&t, 400).unwrap();
        assert_eq!(
            f.streams[0]
                .requests
                .iter()
                .map(|r| r.t_s)
                .collect::<Vec<_>>(),
            [0.0, 4.0]
        );
        assert_eq!(f.streams.len(), 3);
        // Only a sub-agent survives: the root stays, empty.
        let t2 = trace(vec![
            stream("x", StreamKind::Root, vec![r(0.0, 900, 0)]),
            stream("x::sa:a", StreamKind::Subagent, vec![r(5.0, 10, 0)]),
        ]);
        let f = filter_isl_cap(&t2, 256).unwrap();
        assert!(f.streams[0].requests.is_empty());
        assert_eq!(f.streams[1].requests[0].t_s, 0.0);
        assert!(filter_isl_cap(&t, 10).is_none());
        assert_eq!(filter_isl_cap(&t, u64::MAX).unwrap(), t);
        assert_eq!(t.peak_context_tokens(), 501);
    }
}
