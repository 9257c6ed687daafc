//! The engine model: one scheduler step at a time, like vLLM V1's scheduler, with no notion of
//! wall time (the caller turns each step's [`SeqWork`] list into seconds with the roofline).
//!
//! Each [`Engine::step`]:
//! 1. schedules running sequences first, in admission order: a prefilling sequence gets the next
//!    chunk of its prompt (as much as the token budget allows), a decoding one gets 1 token (or
//!    1 + k with speculative decoding). When the KV cache has too few free blocks, the most
//!    recently admitted running sequence is preempted (its blocks freed, its progress recomputed
//!    later, as vLLM's recompute preemption) until the sequence fits;
//! 2. if nothing was preempted, admits waiting sequences in arrival order while fewer than
//!    `max_num_seqs` run, budget is left and blocks are free; each admitted sequence first takes
//!    its prefix-cache hits (at most `⌊(prompt − 1) / block_size⌋` blocks: the last prompt token
//!    is always computed);
//! 3. applies the step: prefill progress, one token for each sequence whose prefill completed,
//!    AL-paced tokens for decodes; finished sequences free their blocks (which keep their hashes
//!    for later prefix hits).

use std::collections::{HashMap, VecDeque};

use crate::config::SpecDecode;
use crate::kv::BlockPool;
use crate::roofline::SeqWork;
use crate::tokenize::block_hash;

/// Scheduler limits.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Most running sequences.
    pub max_num_seqs: u32,
    /// Token budget per step.
    pub max_num_batched_tokens: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// KV blocks.
    pub num_blocks: u32,
    /// Prefix caching on.
    pub enable_prefix_caching: bool,
    /// Speculative decoding.
    pub spec_decode: Option<SpecDecode>,
    /// Token id of each output word (see [`crate::tokenize::TokenizerKind::output_ids`]), to
    /// hash blocks of generated tokens.
    pub output_ids: [u32; 64],
}

/// A request entering the engine.
#[derive(Debug, Clone)]
pub struct NewSeq {
    /// Caller's id (unique among live sequences).
    pub id: u64,
    /// Prompt tokens.
    pub prompt_len: u32,
    /// Chained hashes of the prompt's full blocks ([`crate::tokenize::block_hashes`]).
    pub block_hashes: Vec<u64>,
    /// Prompt tokens after the last full block (< block_size), to continue the hash chain over
    /// generated tokens.
    pub tail_tokens: Vec<u32>,
    /// Tokens to generate (≥ 1).
    pub output_len: u32,
}

/// Tokens one sequence produced in a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emit {
    /// Sequence id.
    pub id: u64,
    /// Tokens generated this step (≥ 1).
    pub tokens: u32,
    /// Tokens generated so far, this step's included.
    pub total: u32,
    /// Whether the sequence is done (it has left the engine).
    pub finished: bool,
}

/// What one step did.
#[derive(Debug, Clone, Default)]
pub struct StepResult {
    /// Work per scheduled sequence, for the roofline.
    pub work: Vec<SeqWork>,
    /// Token output per sequence that generated tokens.
    pub emits: Vec<Emit>,
    /// Ids of sequences preempted this step.
    pub preempted: Vec<u64>,
    /// Prompt tokens looked up in the prefix cache this step (`vllm:prefix_cache_queries`).
    pub prefix_queries: u64,
    /// Of those, tokens found cached (`vllm:prefix_cache_hits`).
    pub prefix_hits: u64,
    /// Sequences admitted from the waiting queue for the first time this step, with their
    /// prompt tokens found in the prefix cache (for queue time and `cached_tokens`).
    pub admitted: Vec<(u64, u32)>,
    /// Draft tokens proposed this step.
    pub draft_tokens: u64,
    /// Draft tokens accepted this step.
    pub accepted_tokens: u64,
    /// Verification passes (sequences that ran a spec-decode step).
    pub drafts: u64,
    /// Prompt tokens computed this step (prefill, recompute included).
    pub prefill_tokens: u64,
}

#[derive(Debug)]
struct Seq {
    prompt_len: u32,
    hashes: Vec<u64>,
    tail: Vec<u32>,
    output_len: u32,
    generated: u32,
    computed: u32,
    blocks: Vec<u32>,
    hashed_blocks: u32,
    last_hash: u64,
    spec_steps: u64,
    ever_admitted: bool,
    running: bool,
}

impl Seq {
    fn prefill_target(&self) -> u32 {
        // After a preemption the generated tokens are recomputed as prompt (all but the last,
        // whose KV the next decode writes).
        if self.generated == 0 {
            self.prompt_len
        } else {
            self.prompt_len + self.generated - 1
        }
    }
    fn in_prefill(&self) -> bool {
        self.generated == 0 || self.computed < self.prefill_target()
    }
}

/// The scheduler state.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    kv: BlockPool,
    waiting: VecDeque<u64>,
    running: Vec<u64>,
    seqs: HashMap<u64, Seq>,
    preemptions: u64,
}

fn blocks_for(tokens: u32, bs: u32) -> u32 {
    tokens.div_ceil(bs)
}

impl Engine {
    /// An idle engine.
    pub fn new(cfg: EngineConfig) -> Self {
        Engine {
            kv: BlockPool::new(cfg.num_blocks),
            cfg,
            waiting: VecDeque::new(),
            running: Vec::new(),
            seqs: HashMap::new(),
            preemptions: 0,
        }
    }

    /// Whether a sequence of `prompt_len + output_len` tokens can ever fit the KV cache.
    pub fn fits(&self, prompt_len: u32, output_len: u32) -> bool {
        let lookahead = self.cfg.spec_decode.map_or(0, |s| s.num_draft_tokens);
        u64::from(blocks_for(
            prompt_len
                .saturating_add(output_len)
                .saturating_add(lookahead),
            self.cfg.block_size,
        )) <= u64::from(self.kv.num_blocks())
    }

    /// Queues a sequence. Sequences with `output_len` 0 are given 1 (every request generates).
    pub fn add(&mut self, s: NewSeq) {
        self.seqs.insert(
            s.id,
            Seq {
                prompt_len: s.prompt_len.max(1),
                hashes: s.block_hashes,
                tail: s.tail_tokens,
                output_len: s.output_len.max(1),
                generated: 0,
                computed: 0,
                blocks: Vec::new(),
                hashed_blocks: 0,
                last_hash: 0,
                spec_steps: 0,
                ever_admitted: false,
                running: false,
            },
        );
        self.waiting.push_back(s.id);
    }

    /// Removes a sequence (client went away), freeing its blocks. Unknown ids are ignored.
    pub fn abort(&mut self, id: u64) {
        if let Some(s) = self.seqs.remove(&id) {
            self.kv.release(&s.blocks);
            if s.running {
                self.running.retain(|&r| r != id);
            } else {
                self.waiting.retain(|&r| r != id);
            }
        }
    }

    /// Sequences running (admitted, holding KV).
    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    /// Sequences waiting for admission.
    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// True when nothing is queued or running.
    pub fn is_idle(&self) -> bool {
        self.seqs.is_empty()
    }

    /// The KV block pool (usage, capacity).
    pub fn kv(&self) -> &BlockPool {
        &self.kv
    }

    /// Preemptions since start (`vllm:num_preemptions`).
    pub fn preemptions(&self) -> u64 {
        self.preemptions
    }

    /// Drops every cached prefix hash.
    pub fn reset_prefix_cache(&mut self) {
        self.kv.reset_prefix_cache();
    }

    fn decode_width(&self) -> u32 {
        1 + self.cfg.spec_decode.map_or(0, |s| s.num_draft_tokens)
    }

    fn preempt(&mut self, id: u64, res: &mut StepResult) {
        let s = self.seqs.get_mut(&id).expect("running id is live");
        self.kv.release(&s.blocks);
        s.blocks.clear();
        s.computed = 0;
        s.hashed_blocks = 0;
        s.last_hash = 0;
        s.running = false;
        self.waiting.push_front(id);
        self.preemptions += 1;
        res.preempted.push(id);
    }

    /// Runs one scheduling step and applies it (see the module doc): the running sequences
    /// first, then, when none was preempted, waiting ones while the token budget and the
    /// sequence limit allow; then every scheduled sequence advances.
    pub fn step(&mut self) -> StepResult {
        let mut res = StepResult::default();
        let mut budget = self.cfg.max_num_batched_tokens;
        let mut sched: Vec<(u64, u32)> = Vec::new();
        self.schedule_running(&mut budget, &mut sched, &mut res);
        if res.preempted.is_empty() {
            self.admit_waiting(&mut budget, &mut sched, &mut res);
        }
        self.apply(sched, &mut res);
        res
    }

    /// Step phase 1: running sequences, oldest first, each given its prefill chunk or its
    /// decode width out of `budget` (tokens) and the KV blocks for them, preempting from the
    /// newest when blocks run out; pushes `(id, tokens)` onto `sched`.
    fn schedule_running(
        &mut self,
        budget: &mut u32,
        sched: &mut Vec<(u64, u32)>,
        res: &mut StepResult,
    ) {
        let bs = self.cfg.block_size;
        let width = self.decode_width();
        let mut i = 0;
        while i < self.running.len() && *budget > 0 {
            let id = self.running[i];
            let s = &self.seqs[&id];
            let want = if s.in_prefill() {
                (s.prefill_target() - s.computed).min(*budget)
            } else {
                width.min(*budget)
            };
            let need = blocks_for(s.computed + want, bs).saturating_sub(s.blocks.len() as u32);
            let mut self_preempted = false;
            while self.kv.num_free() < need {
                let victim = *self.running.last().expect("non-empty");
                self.running.pop();
                self.preempt(victim, res);
                if victim == id {
                    self_preempted = true;
                    break;
                }
            }
            if self_preempted {
                break;
            }
            let new_blocks = self.kv.allocate(need).expect("checked free blocks");
            self.seqs
                .get_mut(&id)
                .expect("live")
                .blocks
                .extend(new_blocks);
            *budget -= want;
            sched.push((id, want));
            i += 1;
        }
    }

    /// Step phase 2: waiting sequences, first come first served, admitted while `budget`
    /// (tokens), `max_num_seqs` and free KV blocks allow, their prompt prefix served from the
    /// prefix cache when it is on; pushes `(id, tokens)` onto `sched`.
    fn admit_waiting(
        &mut self,
        budget: &mut u32,
        sched: &mut Vec<(u64, u32)>,
        res: &mut StepResult,
    ) {
        let bs = self.cfg.block_size;
        while *budget > 0 && (self.running.len() as u32) < self.cfg.max_num_seqs {
            let Some(&id) = self.waiting.front() else {
                break;
            };
            let prefix = self.cfg.enable_prefix_caching;
            let s = self.seqs.get_mut(&id).expect("waiting id is live");
            let max_hit_blocks = ((s.prompt_len - 1) / bs) as usize;
            let hits = if prefix {
                self.kv.acquire_hits(&s.hashes, max_hit_blocks)
            } else {
                Vec::new()
            };
            let cached = hits.len() as u32 * bs;
            let want = (s.prefill_target() - cached).min(*budget);
            let need = blocks_for(cached + want, bs) - hits.len() as u32;
            if self.kv.num_free() < need {
                self.kv.release(&hits);
                break;
            }
            let mut blocks = hits;
            let nhit = blocks.len() as u32;
            blocks.extend(self.kv.allocate(need).expect("checked free blocks"));
            s.blocks = blocks;
            s.computed = cached;
            s.hashed_blocks = nhit;
            s.last_hash = if nhit > 0 {
                s.hashes[nhit as usize - 1]
            } else {
                0
            };
            s.running = true;
            if prefix {
                res.prefix_queries += u64::from(s.prompt_len);
                res.prefix_hits += u64::from(cached);
            }
            if !s.ever_admitted {
                s.ever_admitted = true;
                res.admitted.push((id, cached));
            }
            self.waiting.pop_front();
            self.running.push(id);
            *budget -= want;
            sched.push((id, want));
        }
    }

    /// Step phase 3: advances every scheduled sequence (prefill progress, or decode tokens with
    /// speculative decoding's acceptance), records what it emitted, registers new block hashes,
    /// and frees finished sequences.
    fn apply(&mut self, sched: Vec<(u64, u32)>, res: &mut StepResult) {
        let bs = self.cfg.block_size;
        let spec = self.cfg.spec_decode;
        let mut finished = Vec::new();
        for (id, want) in sched {
            let s = self.seqs.get_mut(&id).expect("scheduled id is live");
            res.work.push(SeqWork {
                new_tokens: want,
                context_tokens: s.computed,
            });
            let emitted = if s.in_prefill() {
                s.computed += want;
                res.prefill_tokens += u64::from(want);
                u32::from(s.computed == s.prefill_target())
            } else {
                let remaining = s.output_len - s.generated;
                let n = match spec {
                    Some(sd) => {
                        s.spec_steps += 1;
                        let k = s.spec_steps as f64;
                        let al = sd.acceptance_length;
                        let n = ((k * al).floor() - ((k - 1.0) * al).floor()) as u32;
                        let n = n.clamp(1, sd.num_draft_tokens + 1).min(remaining);
                        res.drafts += 1;
                        res.draft_tokens += u64::from(sd.num_draft_tokens);
                        res.accepted_tokens += u64::from(n - 1);
                        n
                    }
                    None => 1,
                };
                s.computed += n;
                n
            };
            if emitted > 0 {
                s.generated += emitted;
                let done = s.generated >= s.output_len;
                res.emits.push(Emit {
                    id,
                    tokens: emitted,
                    total: s.generated,
                    finished: done,
                });
                if done {
                    finished.push(id);
                }
            }
            if self.cfg.enable_prefix_caching {
                register_hashes(&mut self.kv, s, bs, &self.cfg.output_ids);
            }
        }
        for id in finished {
            if let Some(s) = self.seqs.remove(&id) {
                self.kv.release(&s.blocks);
                self.running.retain(|&r| r != id);
            }
        }
    }
}

/// Gives every newly full block of `s` its hash: prompt blocks from the precomputed chain, later
/// blocks by extending the chain over the prompt tail and the generated token ids.
fn register_hashes(kv: &mut BlockPool, s: &mut Seq, bs: u32, out_ids: &[u32; 64]) {
    let full = s.computed / bs;
    while s.hashed_blocks < full && (s.hashed_blocks as usize) < s.blocks.len() {
        let j = s.hashed_blocks as usize;
        let h = if j < s.hashes.len() {
            s.hashes[j]
        } else {
            // Tokens of block j: positions j·bs .. (j+1)·bs; prompt tail first, then outputs.
            let start = j as u32 * bs;
            let mut toks = Vec::with_capacity(bs as usize);
            for pos in start..start + bs {
                if pos < s.prompt_len {
                    let tail_start = s.prompt_len - s.tail.len() as u32;
                    match s.tail.get((pos.saturating_sub(tail_start)) as usize) {
                        Some(&t) if pos >= tail_start => toks.push(t),
                        _ => toks.push(pos), // prompt given without tokens: placeholder
                    }
                } else {
                    toks.push(out_ids[((pos - s.prompt_len) % 64) as usize]);
                }
            }
            block_hash(s.last_hash, &toks)
        };
        kv.set_hash(s.blocks[j], h);
        s.last_hash = h;
        s.hashed_blocks += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::{block_hashes, output_token_id, tokenize};

    fn cfg(seqs: u32, budget: u32, blocks: u32) -> EngineConfig {
        EngineConfig {
            max_num_seqs: seqs,
            max_num_batched_tokens: budget,
            block_size: 16,
            num_blocks: blocks,
            enable_prefix_caching: true,
            spec_decode: None,
            output_ids: *crate::tokenize::TokenizerKind::Approx.output_ids(),
        }
    }

    fn seq(id: u64, prompt: u32, out: u32) -> NewSeq {
        // Distinct prompts per id: no accidental prefix sharing.
        let toks: Vec<u32> = (0..prompt).map(|i| i ^ ((id as u32) << 20)).collect();
        let n = toks.len() / 16 * 16;
        NewSeq {
            id,
            prompt_len: prompt,
            block_hashes: block_hashes(&toks, 16),
            tail_tokens: toks[n..].to_vec(),
            output_len: out,
        }
    }

    /// Runs to completion, checking invariants every step; returns (steps, tokens per id).
    fn drain(e: &mut Engine, max_steps: usize) -> (usize, HashMap<u64, u32>) {
        drain_from(e, max_steps, HashMap::new())
    }

    fn drain_from(
        e: &mut Engine,
        max_steps: usize,
        mut got: HashMap<u64, u32>,
    ) -> (usize, HashMap<u64, u32>) {
        let mut steps = 0;
        while !e.is_idle() {
            steps += 1;
            assert!(steps <= max_steps, "no progress after {max_steps} steps");
            let r = e.step();
            let t: u32 = r.work.iter().map(|w| w.new_tokens).sum();
            assert!(t <= e.cfg.max_num_batched_tokens);
            assert!(r.work.len() as u32 <= e.cfg.max_num_seqs);
            assert!(e.kv().num_used() <= e.kv().num_blocks());
            assert!(e.num_running() as u32 <= e.cfg.max_num_seqs);
            for em in &r.emits {
                let g = got.entry(em.id).or_default();
                *g += em.tokens;
                assert_eq!(*g, em.total);
            }
        }
        assert_eq!(e.kv().num_used(), 0, "blocks leaked");
        (steps, got)
    }

    #[test]
    fn tokens_conserved_and_nothing_starves_under_preemption() {
        // 40 sequences of 100 + 200 tokens need 19 blocks each at the end; 60 blocks fit ~3.
        let mut e = Engine::new(cfg(8, 256, 60));
        for id in 0..40 {
            e.add(seq(id, 100, 200));
        }
        let (_, got) = drain(&mut e, 100_000);
        assert_eq!(got.len(), 40);
        assert!(got.values().all(|&n| n == 200));
        assert!(e.preemptions() > 0, "test should exercise preemption");
    }

    #[test]
    fn chunked_prefill_respects_budget_and_emits_first_token_once() {
        let mut e = Engine::new(cfg(4, 64, 1000));
        e.add(seq(1, 200, 3));
        let mut first = None;
        for step in 1..=10 {
            let r = e.step();
            if let Some(em) = r.emits.first() {
                first.get_or_insert(step);
                assert!(em.tokens == 1);
            }
        }
        // 200 prompt tokens at 64 per step: steps 1-4 (64,64,64,8); first token at step 4.
        assert_eq!(first, Some(4));
        assert!(e.is_idle());
    }

    #[test]
    fn prefix_cache_hit_rate_equals_analytic_value() {
        // N requests share a P-token prefix (a multiple of 16) followed by U unique tokens; run
        // one after another, every request after the first hits the whole prefix:
        // hit rate = (N − 1)·P / (N·(P + U)).
        let (n, p, u) = (10u64, 512usize, 100usize);
        let prefix = tokenize(&"shared system prompt words ".repeat(200))[..p].to_vec();
        let mut e = Engine::new(cfg(4, 8192, 10_000));
        let (mut q, mut h) = (0u64, 0u64);
        for id in 0..n {
            let mut toks = prefix.clone();
            toks.extend((0..u as u32).map(|i| i + 1_000_000 * (id as u32 + 1)));
            let full = toks.len() / 16 * 16;
            e.add(NewSeq {
                id,
                prompt_len: toks.len() as u32,
                block_hashes: block_hashes(&toks, 16),
                tail_tokens: toks[full..].to_vec(),
                output_len: 4,
            });
            while !e.is_idle() {
                let r = e.step();
                q += r.prefix_queries;
                h += r.prefix_hits;
            }
        }
        assert_eq!(q, n * (p + u) as u64);
        assert_eq!(h, (n - 1) * p as u64);
    }

    #[test]
    fn full_prompt_hit_still_computes_last_block() {
        let mut e = Engine::new(cfg(4, 8192, 100));
        for id in 0..2 {
            let toks: Vec<u32> = (0..64).collect();
            e.add(NewSeq {
                id,
                prompt_len: 64,
                block_hashes: block_hashes(&toks, 16),
                tail_tokens: vec![],
                output_len: 1,
            });
            let r = e.step();
            if id == 1 {
                assert_eq!(r.prefix_hits, 48);
                assert_eq!(r.work[0].new_tokens, 16);
            }
        }
    }

    #[test]
    fn spec_decode_emits_al_tokens_per_step_on_average() {
        let mut c = cfg(4, 8192, 1000);
        c.spec_decode = Some(SpecDecode {
            num_draft_tokens: 3,
            acceptance_length: 2.5,
        });
        let mut e = Engine::new(c);
        e.add(seq(1, 32, 101));
        let mut per_step = Vec::new();
        let (mut drafts, mut acc) = (0, 0);
        while !e.is_idle() {
            let r = e.step();
            drafts += r.draft_tokens;
            acc += r.accepted_tokens;
            per_step.extend(r.emits.iter().map(|m| m.tokens));
        }
        // Prefill emits 1; then floor(2.5k) - floor(2.5(k-1)) = 2,3,2,3,... ; 100 tokens = 40 steps.
        assert_eq!(per_step[0], 1);
        assert_eq!(&per_step[1..5], &[2, 3, 2, 3]);
        assert_eq!(per_step.len(), 41);
        assert_eq!(per_step.iter().sum::<u32>(), 101);
        assert_eq!(drafts, 40 * 3);
        assert_eq!(acc, 100 - 40);
    }

    #[test]
    fn generated_blocks_are_cached_for_the_next_turn() {
        // Turn 1: 32 prompt tokens + 32 generated; turn 2 re-sends prompt + the generated ids.
        let mut e = Engine::new(cfg(4, 8192, 100));
        let p1: Vec<u32> = (0..32).map(|i| i + 7).collect();
        e.add(NewSeq {
            id: 1,
            prompt_len: 32,
            block_hashes: block_hashes(&p1, 16),
            tail_tokens: vec![],
            output_len: 33,
        });
        while !e.is_idle() {
            e.step();
        }
        let mut p2 = p1.clone();
        p2.extend((0..33).map(output_token_id));
        p2.extend([1, 2, 3]);
        e.add(NewSeq {
            id: 2,
            prompt_len: p2.len() as u32,
            block_hashes: block_hashes(&p2, 16),
            tail_tokens: p2[64..].to_vec(),
            output_len: 1,
        });
        let r = e.step();
        // 32 generated tokens were computed into KV (the 33rd never is): blocks 0..4 hit.
        assert_eq!(r.prefix_hits, 64);
    }

    #[test]
    fn max_num_seqs_bounds_running_and_queue_waits() {
        let mut e = Engine::new(cfg(2, 8192, 1000));
        for id in 0..5 {
            e.add(seq(id, 20, 5));
        }
        let r = e.step();
        assert_eq!(e.num_running(), 2);
        assert_eq!(e.num_waiting(), 3);
        let first: HashMap<u64, u32> = r.emits.iter().map(|m| (m.id, m.tokens)).collect();
        e.abort(0);
        assert_eq!(e.num_running(), 1);
        let (_, mut got) = drain_from(&mut e, 1000, first);
        got.remove(&0);
        assert_eq!(got.len(), 4);
        assert!(got.values().all(|&n| n == 5));
    }
}
