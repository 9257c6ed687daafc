//! Fixtures from the agentx-harness 1.0.12 comparison (docs/agentx-harness-comparison.md):
//! the five small traces both clients replayed, with the facts agentx-harness produced on them.

use std::path::PathBuf;

use inferbench_loadgen::agentic::TreePlan;
use inferbench_workload::agentx::synth::{plan_stream, plan_token_ids, BlockCorpus};
use inferbench_workload::agentx::{load_traces, theoretical_hits, LoadOptions, Trace};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Traces a, b (examples/agentx-traces.jsonl), c, d, e (scripts/agentx-compare-traces/), in the
/// order both clients load them (by id).
fn traces() -> Vec<Trace> {
    let mut all = Vec::new();
    for p in [
        repo().join("examples/agentx-traces.jsonl"),
        repo().join("scripts/agentx-compare-traces"),
    ] {
        all.extend(load_traces(&p, &LoadOptions::default()).unwrap().traces);
    }
    all.sort_by(|x, y| x.id.cmp(&y.id));
    all
}

#[test]
fn theoretical_hits_per_trace_match_agentx_harness() {
    let got: Vec<(u32, u32)> = traces()
        .iter()
        .map(|t| {
            theoretical_hits(t)
                .iter()
                .flatten()
                .fold((0, 0), |(h, n), &(a, b)| (h + a, n + b))
        })
        .collect();
    assert_eq!(
        got,
        vec![(46, 79), (57, 99), (271, 374), (177, 264), (124, 176)]
    );
}

#[test]
fn multi_subagent_joins_and_background() {
    let t = &traces()[2];
    let plan = TreePlan::build(2, t);
    // For each root turn, the sub-agents it joins (by label/id suffix).
    let mut joins: Vec<(u32, Vec<String>)> = Vec::new();
    for r in plan.reqs.iter().filter(|r| r.stream == 0) {
        let joined: Vec<String> = r
            .preds
            .iter()
            .map(|&(p, _)| &plan.reqs[p as usize])
            .filter(|p| p.stream != 0)
            .map(|p| {
                let id = &t.streams[p.stream as usize].id;
                id.rsplit_once("::sa:")
                    .map_or(id.clone(), |(_, a)| a.to_string())
            })
            .collect();
        if !joined.is_empty() {
            joins.push((r.turn, joined));
        }
    }
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let want = vec![
        (2, names(&["explore_001_aaaa0001", "explore_002_bbbb0002"])),
        (4, names(&["general_003_cccc0003"])),
    ];
    assert_eq!(joins, want, "background_004 gates nothing");
    // …but it is replayed (it keeps the lane until it drains).
    let bg = t
        .streams
        .iter()
        .position(|s| s.id.contains("background_004"))
        .expect("the background sub-agent");
    assert!(plan.streams_kept[bg]);
}

#[test]
fn a_partial_block_made_whole_is_sent_at_exactly_in_tokens() {
    // Trace d turn 6 extends turn 5's partial last block (id 90): exactly 3,000 token ids
    // (agentx-harness kept turn 5's 40-token tail there and sent 2,975).
    let t = &traces()[3];
    let tok = inferbench_workload::Tokenizer::load("o200k_base").unwrap();
    let corpus = BlockCorpus::new(&tok, 42).unwrap();
    let plans = plan_stream(t, 0);
    let req = &t.streams[0].requests[6];
    assert_eq!(req.input_tokens, 3000);
    let ids: usize = plan_token_ids(&plans[6], req, &corpus, t.hash_scope_key())
        .iter()
        .map(|(_, ids)| ids.len())
        .sum();
    assert_eq!(ids, 3000);
}
