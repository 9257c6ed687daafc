//! Prompts for replayed turns: per-stream cursors that follow the conversation turn by turn,
//! and rendering of a turn's messages while its request is in flight.
//!
//! Interim implementation (until the block-hash synthesis of `workload::agentx::synth` is wired
//! in): one user message per turn whose shared leading blocks are byte-identical across turns.

use serde_json::{json, Value};

use inferbench_workload::agentx::{theoretical_hits, Trace};

/// Builds prompts for one run.
#[derive(Debug, Default)]
pub struct Prompter {
    hits: Vec<Vec<Vec<(u32, u32)>>>,
}

/// Where a stream's conversation stands (the next turn to plan).
#[derive(Debug, Default)]
pub struct StreamCursor {
    next_turn: u32,
}

/// A planned turn: enough to render it later.
#[derive(Debug, Clone, Default)]
pub struct TurnPlan {
    blocks: Vec<u32>,
    tail_tokens: u32,
}

impl Prompter {
    /// A prompter for `traces`.
    pub fn new(traces: &[Trace]) -> Prompter {
        let hits = traces.iter().map(theoretical_hits).collect();
        Prompter { hits }
    }

    /// A cursor at turn 0 of `stream` of trace `trace`.
    pub fn cursor(&self, _trace: usize, _stream: u32) -> StreamCursor {
        StreamCursor::default()
    }

    /// Advances `cursor` to `turn` (turns in between are followed, not rendered) and plans it.
    pub fn plan_turn(
        &self,
        cursor: &mut StreamCursor,
        trace: &Trace,
        stream: u32,
        turn: u32,
    ) -> TurnPlan {
        cursor.next_turn = turn + 1;
        let r = &trace.streams[stream as usize].requests[turn as usize];
        let covered = (r.input_tokens / 64).min(r.hash_ids.len() as u32) as usize;
        TurnPlan {
            blocks: r.hash_ids[..covered].to_vec(),
            tail_tokens: r.input_tokens - 64 * covered as u32,
        }
    }

    /// The chat messages of a planned turn and its prompt length in tokens (before the chat
    /// template and the marker).
    pub fn render(
        &self,
        plan: &TurnPlan,
        trace: &Trace,
        _stream: u32,
        _turn: u32,
        marker: &str,
    ) -> (Value, u32) {
        let mut text = String::from(marker);
        for b in &plan.blocks {
            for k in 0..64 {
                text.push_str(&format!(" {}b{b}k{k}", trace.id.len()));
            }
        }
        for _ in 0..plan.tail_tokens {
            text.push_str(" tail");
        }
        let tokens = plan.blocks.len() as u32 * 64 + plan.tail_tokens;
        (json!([{"role": "user", "content": text}]), tokens)
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
