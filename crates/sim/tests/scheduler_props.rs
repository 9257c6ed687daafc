//! Property tests of the engine model over random workloads: whatever the mix of prompt and
//! output lengths, limits, KV size, prefix sharing, speculative decoding and client aborts,
//! every step respects the limits, the KV cache never exceeds its capacity or leaks, tokens are
//! conserved (each surviving request gets exactly its output length) and nothing starves.

use std::collections::HashMap;

use inferbench_sim::engine::{Engine, EngineConfig, NewSeq};
use inferbench_sim::tokenize::{block_hashes, TokenizerKind};
use inferbench_sim::SpecDecode;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Req {
    prompt: u32,
    output: u32,
    prefix_group: u8,
    arrive_step: u32,
    abort_after: Option<u32>,
}

fn req() -> impl Strategy<Value = Req> {
    (
        1u32..600,
        1u32..80,
        0u8..3,
        0u32..40,
        prop::option::weighted(0.1, 0u32..30),
    )
        .prop_map(
            |(prompt, output, prefix_group, arrive_step, abort_after)| Req {
                prompt,
                output,
                prefix_group,
                arrive_step,
                abort_after,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn engine_invariants_hold(
        reqs in prop::collection::vec(req(), 1..40),
        max_num_seqs in 1u32..12,
        budget in 16u32..2048,
        extra_blocks in 0u32..200,
        spec in prop::option::of((1u32..4, 0.0f64..1.0)),
        block_size in prop::sample::select(vec![4u32, 16, 64]),
    ) {
        // Enough blocks for the largest single request (the server rejects bigger ones).
        let lookahead = spec.map_or(0, |(k, _)| k);
        let biggest = reqs.iter().map(|r| (r.prompt + r.output + lookahead).div_ceil(block_size)).max().unwrap();
        let cfg = EngineConfig {
            max_num_seqs,
            max_num_batched_tokens: budget.max(block_size),
            block_size,
            num_blocks: biggest + extra_blocks,
            enable_prefix_caching: true,
            spec_decode: spec.map(|(k, f)| SpecDecode {
                num_draft_tokens: k,
                acceptance_length: 1.0 + f * f64::from(k),
            }),
            output_ids: *TokenizerKind::Approx.output_ids(),
        };
        let mut e = Engine::new(cfg.clone());
        let mut got: HashMap<u64, u32> = HashMap::new();
        let mut first_emit_step: HashMap<u64, u32> = HashMap::new();
        let mut alive: HashMap<u64, u32> = HashMap::new();
        let mut aborted = Vec::new();
        let mut step = 0u32;
        loop {
            for (i, r) in reqs.iter().enumerate() {
                if r.arrive_step == step {
                    // Prompts of one prefix group share their first 256 tokens.
                    let toks: Vec<u32> = (0..r.prompt)
                        .map(|j| if j < 256 { u32::from(r.prefix_group) * 1_000_000 + j } else { (i as u32 + 1) * 10_000 + j })
                        .collect();
                    let full = toks.len() / block_size as usize * block_size as usize;
                    e.add(NewSeq {
                        id: i as u64,
                        prompt_len: r.prompt,
                        block_hashes: block_hashes(&toks, block_size as usize),
                        tail_tokens: toks[full..].to_vec(),
                        output_len: r.output,
                    });
                    alive.insert(i as u64, step);
                }
            }
            for (i, r) in reqs.iter().enumerate() {
                if let (Some(a), Some(&since)) = (r.abort_after, alive.get(&(i as u64))) {
                    if step == since + a {
                        e.abort(i as u64);
                        alive.remove(&(i as u64));
                        aborted.push(i as u64);
                    }
                }
            }
            if e.is_idle() && step > 40 {
                break;
            }
            let res = e.step();
            step += 1;
            prop_assert!(step < 200_000, "no progress");
            let tokens: u32 = res.work.iter().map(|w| w.new_tokens).sum();
            prop_assert!(tokens <= cfg.max_num_batched_tokens);
            prop_assert!(res.work.len() as u32 <= max_num_seqs);
            prop_assert!(e.num_running() as u32 <= max_num_seqs);
            prop_assert!(e.kv().num_used() <= e.kv().num_blocks());
            prop_assert!(res.prefix_hits <= res.prefix_queries);
            if !e.is_idle() {
                // Something runs or waits: a step with nothing scheduled would be a stall.
                prop_assert!(!res.work.is_empty() || e.num_running() == 0);
            }
            for m in &res.emits {
                let g = got.entry(m.id).or_default();
                *g += m.tokens;
                prop_assert_eq!(*g, m.total);
                first_emit_step.entry(m.id).or_insert(step);
                if m.finished {
                    alive.remove(&m.id);
                }
            }
        }
        prop_assert_eq!(e.kv().num_used(), 0, "KV blocks leaked");
        for (i, r) in reqs.iter().enumerate() {
            let id = i as u64;
            if aborted.contains(&id) {
                prop_assert!(got.get(&id).copied().unwrap_or(0) <= r.output);
            } else {
                prop_assert_eq!(got.get(&id).copied(), Some(r.output), "request {} starved or lost tokens", id);
            }
        }
    }
}
