//! AgentX: agentic-coding trace replay inputs (reference/agentx.md). Traces in InferenceX's
//! "Weka" JSONL layout ([`load`], into the [`trace`] model) become per-request prompts
//! synthesized from 64-token block hashes ([`synth`]). Scheduling (lanes, spawn/join, delays,
//! idle caps) is the loadgen's.

pub mod load;
pub mod synth;
pub mod trace;

pub use load::{load_traces, LoadOptions, LoadReport, BLOCK_TOKENS};
pub use trace::{
    filter_isl_cap, theoretical_hits, HashIdScope, Stream, StreamKind, Trace, TraceRequest,
};
