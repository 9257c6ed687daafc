//! The AgentX explorer's data (issue 42): an agentic point's stored request records grouped into
//! session trees, one per play (one replay of a trace on a lane, AIPerf's root correlation id),
//! each with its streams (the main agent, then its sub-agents `<trace>::sa:<agent>`, each under the
//! stream that spawned it: the records' `parent_stream`, the main agent's stream for records
//! written before it was kept) and every request's send, first token and end on the point's
//! shared timeline, with the prompt blocks already cached (theoretical hit) and new, and how much
//! an idle-gap cap moved its send.
//!
//! Pure: records in, JSON out; `/api/v1/runs/{id}` calls it for each agentic point of the run.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use inferbench_core::RequestRecord;
use serde_json::{json, Value};

/// How many points' session trees [`SessionCache`] keeps; past it, the cache starts afresh
/// (each entry is one agentic point's trees: tens to hundreds of KB of JSON).
pub const CACHE_POINTS: usize = 256;

/// The session trees already built by `serve`, by point (issue 42: `/api/v1/runs/{id}`
/// decompressed and parsed every agentic point's records on each call). An entry is kept with
/// the digest of the records it was built from (the store's `requests.sha256`:
/// `Store::point_records_digest`) and the point's concurrency, and is used only while both are
/// unchanged, so a re-ingest into the database while it is served is never answered stale.
#[derive(Debug, Default)]
pub struct SessionCache {
    entries: HashMap<i64, (String, i64, Arc<Value>)>,
    builds: u64,
}

impl SessionCache {
    /// Point `point_id`'s trees when they were built from records of digest `digest` at
    /// concurrency `conc`.
    pub fn get(&self, point_id: i64, digest: &str, conc: i64) -> Option<Arc<Value>> {
        match self.entries.get(&point_id) {
            Some((d, c, v)) if d == digest && *c == conc => Some(v.clone()),
            _ => None,
        }
    }

    /// Keeps `trees`, built from records of digest `digest` at concurrency `conc`, for
    /// `point_id` (replacing an older entry), and counts one build.
    pub fn put(&mut self, point_id: i64, digest: String, conc: i64, trees: Arc<Value>) {
        self.builds += 1;
        if self.entries.len() >= CACHE_POINTS && !self.entries.contains_key(&point_id) {
            self.entries.clear();
        }
        self.entries.insert(point_id, (digest, conc, trees));
    }

    /// How many trees were built and kept since the cache was made (a cache hit builds none).
    pub fn builds(&self) -> u64 {
        self.builds
    }
}

/// Seconds between run-clock ns `t` and the timeline's zero `t0` (both ns).
fn secs(t: u64, t0: u64) -> f64 {
    (t as f64 - t0 as f64) / 1e9
}

/// The session trees of one agentic point from its request records (`records`; those without
/// AgentX identity, `agentic: None`, are not part of a session and are counted in
/// `"unattributed"`): `{"point_id", "conc", "t0_ns", "sessions": [tree…], "unattributed"}`,
/// trees by play. A tree is `{"play", "trace_id", "lane", "pass", "start_s", "end_s",
/// "requests", "streams": [stream…]}`, a stream `{"id", "agent" (null for the main agent),
/// "parent" (the id of the stream that spawned a sub-agent: the main agent's, or an enclosing
/// sub-agent's for a nested one; null for the main agent), "depth" (0 for the main agent, 1 for
/// its sub-agents, 2 for theirs…), "requests": [req…]}` (main agent first, then each stream's
/// sub-agents right after it by first send, depth first), a request `{"turn", "kind" (primer,
/// warmup, profile), "send_s", "ttft_s" (first token, null without one), "end_s",
/// "hit_blocks", "new_blocks", "gap_capped_s" (how much earlier than its recorded gap an
/// idle-gap cap sent it, s; 0 when none applied), "success", "error"}`. Every time is s since the point's
/// first send of a session request (`t0_ns`, run-clock ns), so all trees share one axis; `hit_blocks` are the
/// prompt's leading 64-token blocks already sent earlier in the session (theoretical prefix-cache
/// hit), `new_blocks` the rest.
pub fn session_trees(point_id: i64, conc: i64, records: &[RequestRecord]) -> Value {
    let t0 = (records.iter())
        .filter(|r| r.agentic.is_some())
        .map(|r| r.sent_ns)
        .min()
        .unwrap_or(0);
    // play → stream → requests
    let mut plays: BTreeMap<u32, (&RequestRecord, BTreeMap<String, Vec<&RequestRecord>>)> =
        BTreeMap::new();
    let mut unattributed = 0usize;
    for r in records {
        let Some(a) = &r.agentic else {
            unattributed += 1;
            continue;
        };
        let stream = r
            .conversation_id
            .clone()
            .unwrap_or_else(|| a.trace_id.clone());
        let entry = plays.entry(a.play).or_insert_with(|| (r, BTreeMap::new()));
        entry.1.entry(stream).or_default().push(r);
    }
    let sessions: Vec<Value> = plays
        .into_iter()
        .map(|(play, (first, streams))| {
            let a = first.agentic.as_ref().expect("grouped by agentic identity");
            let all = streams.values().flatten();
            let start = all.clone().map(|r| r.sent_ns).min().unwrap_or(t0);
            let end = all
                .clone()
                .map(|r| r.end_ns.max(r.sent_ns))
                .max()
                .unwrap_or(start);
            let n: usize = streams.values().map(Vec::len).sum();
            let mut list: Vec<(String, Vec<&RequestRecord>)> = streams.into_iter().collect();
            for (_, reqs) in &mut list {
                reqs.sort_by_key(|r| (r.sent_ns, r.turn, r.request_id));
            }
            // Sub-agents by first send; each stream's parent: what its records say, else (older
            // records, or a parent not in the point) the main agent's stream.
            list.sort_by_key(|(id, reqs)| (reqs.first().map_or(0, |r| r.sent_ns), id.clone()));
            let main = a.trace_id.as_str();
            let parent_of = |id: &str, reqs: &[&RequestRecord]| -> Option<String> {
                if id == main || !id.contains("::sa:") {
                    return None;
                }
                let recorded = (reqs.iter())
                    .find_map(|r| r.agentic.as_ref()?.parent_stream.clone())
                    .filter(|p| p != id && list.iter().any(|(other, _)| other == p));
                Some(recorded.unwrap_or_else(|| id.split("::sa:").next().unwrap_or(id).into()))
            };
            let parents: Vec<Option<String>> =
                list.iter().map(|(id, reqs)| parent_of(id, reqs)).collect();
            // Depth-first from the roots (streams without a parent in the point), children by
            // first send; a cycle of recorded parents is broken by visiting each stream once.
            let mut order: Vec<(usize, usize)> = Vec::new();
            let mut seen = vec![false; list.len()];
            let mut stack: Vec<(usize, usize)> = (0..list.len())
                .filter(|&i| parents[i].is_none())
                .rev()
                .map(|i| (i, 0))
                .collect();
            // The main agent first among the roots.
            stack.sort_by_key(|&(i, _)| list[i].0 == main);
            loop {
                while let Some((i, depth)) = stack.pop() {
                    if std::mem::replace(&mut seen[i], true) {
                        continue;
                    }
                    order.push((i, depth));
                    let kids = (0..list.len())
                        .rev()
                        .filter(|&k| !seen[k] && parents[k].as_deref() == Some(list[i].0.as_str()));
                    stack.extend(kids.map(|k| (k, depth + 1)));
                }
                match seen.iter().position(|s| !s) {
                    Some(i) => stack.push((i, 1)),
                    None => break,
                }
            }
            let streams: Vec<Value> = order
                .iter()
                .map(|&(i, depth)| {
                    let (id, reqs) = &list[i];
                    let agent = id.split_once("::sa:").map(|(_, agent)| agent);
                    let parent = parents[i].as_deref();
                    let requests: Vec<Value> = reqs
                        .iter()
                        .map(|r| {
                            let ag = r.agentic.as_ref();
                            let hit = ag.map_or(0, |g| g.hit_blocks);
                            let total = ag.map_or(0, |g| g.total_blocks);
                            json!({"turn": r.turn,
                                   "kind": ag.map_or("", |g| g.kind.as_str()),
                                   "send_s": secs(r.sent_ns, t0),
                                   "ttft_s": r.first_token_ns.map(|t| secs(t, t0)),
                                   "end_s": secs(r.end_ns.max(r.sent_ns), t0),
                                   "hit_blocks": hit,
                                   "new_blocks": total.saturating_sub(hit),
                                   "gap_capped_s": ag.map_or(0.0, |g| g.gap_capped_ns as f64 / 1e9),
                                   "success": r.success,
                                   "error": r.error_class.map(|c| c.as_str())})
                        })
                        .collect();
                    json!({"id": id, "agent": agent, "parent": parent, "depth": depth,
                           "requests": requests})
                })
                .collect();
            json!({"play": play, "trace_id": a.trace_id, "lane": a.lane, "pass": a.pass,
                   "start_s": secs(start, t0), "end_s": secs(end, t0), "requests": n,
                   "streams": streams})
        })
        .collect();
    json!({"point_id": point_id, "conc": conc, "t0_ns": t0, "sessions": sessions,
           "unattributed": unattributed})
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferbench_core::record::AgenticRef;

    fn rec(play: u32, stream: &str, turn: u32, sent_s: u64, end_s: u64, hit: u32) -> RequestRecord {
        let trace = stream.split("::sa:").next().unwrap().to_string();
        RequestRecord {
            conversation_id: Some(stream.to_string()),
            turn: Some(turn),
            success: true,
            sent_ns: sent_s * 1_000_000_000,
            first_token_ns: Some(sent_s * 1_000_000_000 + 500_000_000),
            end_ns: end_s * 1_000_000_000,
            agentic: Some(AgenticRef {
                lane: play % 2,
                play,
                trace_id: trace,
                kind: "profile".into(),
                hit_blocks: hit,
                total_blocks: 4,
                ..AgenticRef::default()
            }),
            ..RequestRecord::default()
        }
    }

    /// Two plays, the first with a sub-agent: one tree each, the main agent first with the
    /// sub-agent under it, times from the first send, cached vs new blocks per request.
    #[test]
    fn records_group_into_one_tree_per_play_with_sub_agents_under_the_main_agent() {
        let records = vec![
            rec(0, "t1::sa:helper", 0, 12, 14, 1),
            rec(0, "t1", 0, 10, 11, 0),
            rec(0, "t1", 1, 15, 16, 3),
            rec(1, "t2", 0, 11, 13, 0),
            RequestRecord::default(),
        ];
        let v = session_trees(7, 2, &records);
        // The record without a session neither joins one nor moves the axis's zero.
        assert_eq!(v["t0_ns"], json!(10_000_000_000u64));
        assert_eq!(v["unattributed"], json!(1));
        let s = v["sessions"].as_array().unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0]["trace_id"], "t1");
        assert_eq!(s[0]["requests"], json!(3));
        assert_eq!(s[0]["start_s"], json!(0.0));
        assert_eq!(s[0]["end_s"], json!(6.0));
        let streams = s[0]["streams"].as_array().unwrap();
        assert_eq!(streams[0]["id"], "t1");
        assert_eq!(streams[0]["parent"], Value::Null);
        assert_eq!(streams[1]["id"], "t1::sa:helper");
        assert_eq!(streams[1]["agent"], "helper");
        assert_eq!(streams[1]["parent"], "t1");
        let r = &streams[0]["requests"][1];
        assert_eq!(r["turn"], json!(1));
        assert_eq!(r["send_s"], json!(5.0));
        assert_eq!(r["ttft_s"], json!(5.5));
        assert_eq!(r["end_s"], json!(6.0));
        assert_eq!(
            (r["hit_blocks"].clone(), r["new_blocks"].clone()),
            (json!(3), json!(1))
        );
        assert_eq!(s[1]["trace_id"], "t2");
        assert_eq!(s[1]["start_s"], json!(1.0));
    }

    /// A nested sub-agent (issue 42 follow-up): `t1::sa:b` spawned by `t1::sa:a`, itself spawned
    /// by the main agent, nests under `a` (parent chain t1 → a → b, depths 0, 1, 2) although the
    /// replay flattened it; an older record without `parent_stream` (`t1::sa:c`) hangs off the
    /// main agent; a request whose start the idle caps moved 290 s earlier says so exactly.
    #[test]
    fn nested_sub_agents_nest_and_capped_gaps_are_marked() {
        let with = |mut r: RequestRecord, parent: Option<&str>, capped_ns: u64| {
            let a = r.agentic.as_mut().unwrap();
            a.parent_stream = parent.map(str::to_string);
            a.gap_capped_ns = capped_ns;
            r
        };
        let records = vec![
            with(rec(0, "t1::sa:b", 0, 13, 14, 0), Some("t1::sa:a"), 0),
            with(rec(0, "t1", 0, 10, 11, 0), None, 0),
            with(rec(0, "t1::sa:a", 0, 12, 13, 0), Some("t1"), 0),
            with(rec(0, "t1::sa:c", 0, 12, 15, 0), None, 0),
            with(rec(0, "t1", 1, 20, 21, 2), None, 290_000_000_000),
        ];
        let v = session_trees(1, 1, &records);
        let streams = v["sessions"][0]["streams"].as_array().unwrap();
        let shape: Vec<(String, Value, Value)> = streams
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_string(),
                    s["parent"].clone(),
                    s["depth"].clone(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                ("t1".into(), Value::Null, json!(0)),
                ("t1::sa:a".into(), json!("t1"), json!(1)),
                ("t1::sa:b".into(), json!("t1::sa:a"), json!(2)),
                ("t1::sa:c".into(), json!("t1"), json!(1)),
            ]
        );
        assert_eq!(streams[0]["requests"][0]["gap_capped_s"], json!(0.0));
        assert_eq!(streams[0]["requests"][1]["gap_capped_s"], json!(290.0));
    }
}
