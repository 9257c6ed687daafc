//! The trace model (reference/agentx.md §1.4): one [`Trace`] per session, its main agent and each
//! sub-agent as a [`Stream`] of recorded requests on one session clock.

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
    /// Its requests, in recorded order (non-decreasing `t_s`).
    pub requests: Vec<TraceRequest>,
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
    /// `streams[0]` is the root; sub-agents follow in file order.
    pub streams: Vec<Stream>,
    /// Where it came from: `file:line`, for messages.
    pub origin: String,
}
