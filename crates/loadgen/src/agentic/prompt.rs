//! Prompts for replayed turns (reference/agentx.md §2): per-stream cursors that follow each
//! conversation turn by turn ([`Reconstructor`]: LCP truncation, pre-canned assistant blocks,
//! trailing user message), and rendering of a turn's messages from the run's [`BlockCorpus`]
//! while its request is in flight only.

use serde_json::Value;

use inferbench_workload::agentx::synth::{render_messages, BlockCorpus, Reconstructor, TurnPlan};
use inferbench_workload::agentx::{theoretical_hits, Trace};
use inferbench_workload::{Tokenizer, WorkloadError};

/// Builds prompts for one run: the block corpus (tokenized once) and each trace's theoretical
/// prefix-cache hits.
#[derive(Debug)]
pub struct Prompter {
    corpus: BlockCorpus,
    hits: Vec<Vec<Vec<(u32, u32)>>>,
}

/// Where one stream's conversation stands in a play: the reconstruction state and the next
/// turn it has not followed yet.
#[derive(Debug)]
pub struct StreamCursor {
    recon: Reconstructor,
    next_turn: u32,
}

impl Prompter {
    /// A prompter for `traces` whose block texts come from a corpus tokenized with `tok` and
    /// fixed by `seed` (`--random-seed`; the same seed gives byte-identical prompts).
    ///
    /// # Errors
    /// The tokenizer yields too few tokens for the corpus.
    pub fn new(traces: &[Trace], tok: &Tokenizer, seed: u64) -> Result<Prompter, WorkloadError> {
        Ok(Prompter {
            corpus: BlockCorpus::new(tok, seed)?,
            hits: traces.iter().map(theoretical_hits).collect(),
        })
    }

    /// A cursor at turn 0 of `stream` of `trace`.
    pub fn cursor(&self, trace: &Trace, stream: u32) -> StreamCursor {
        StreamCursor {
            recon: Reconstructor::for_stream(trace, stream as usize),
            next_turn: 0,
        }
    }

    /// Advances `cursor` through `turn` (earlier turns are followed, not rendered; a turn
    /// already passed restarts the stream from turn 0) and returns that turn's plan.
    pub fn plan_turn(
        &self,
        cursor: &mut StreamCursor,
        trace: &Trace,
        stream: u32,
        turn: u32,
    ) -> TurnPlan {
        let reqs = &trace.streams[stream as usize].requests;
        if turn < cursor.next_turn {
            *cursor = self.cursor(trace, stream);
        }
        let prev = |k: u32| (k > 0).then(|| &reqs[k as usize - 1]);
        for k in cursor.next_turn..turn {
            cursor.recon.next_turn(&reqs[k as usize], prev(k));
        }
        cursor.next_turn = turn + 1;
        cursor.recon.next_turn(&reqs[turn as usize], prev(turn))
    }

    /// The chat messages of a planned turn (the cache-bust `marker` before the first user
    /// message) and its prompt length in tokens before the chat template and the marker
    /// (= the trace's `in`).
    pub fn render(
        &self,
        plan: &TurnPlan,
        trace: &Trace,
        stream: u32,
        marker: &str,
    ) -> (Value, u32) {
        let req = &trace.streams[stream as usize].requests[plan.turn as usize];
        let v = render_messages(
            plan,
            req,
            &self.corpus,
            trace.hash_scope_key(),
            Some(marker),
        );
        (v, plan.prompt_tokens)
    }

    /// Theoretical prefix-cache hit of a request: (hit blocks, total blocks), §2.10.
    pub fn theoretical_hit(&self, trace: usize, stream: u32, turn: u32) -> (u32, u32) {
        self.hits
            .get(trace)
            .and_then(|t| t.get(stream as usize))
            .and_then(|s| s.get(turn as usize))
            .copied()
            .unwrap_or((0, 0))
    }
}
