//! AgentX: agentic-coding trace replay inputs (reference/agentx.md). Traces in InferenceX's
//! "Weka" JSONL layout ([`load`], into the [`trace`] model) become per-request prompts
//! synthesized from 64-token block hashes ([`synth`]). Scheduling (lanes, spawn/join, delays,
//! idle caps) is the loadgen's.
//!
//! ```no_run
//! use inferbench_workload::agentx::*;
//! use inferbench_workload::{cache_bust_marker, Tokenizer};
//! let report = load_traces("traces.jsonl".as_ref(), &LoadOptions::default())?;
//! let corpus = BlockCorpus::new(&Tokenizer::load("o200k_base")?, 42)?;
//! let trace = &report.traces[0];
//! let stream = &trace.streams[0];
//! let mut rc = Reconstructor::for_stream(trace, 0);
//! let marker = cache_bust_marker(0x1234);
//! for (k, req) in stream.requests.iter().enumerate() {
//!     let plan = rc.next_turn(req, k.checked_sub(1).map(|j| &stream.requests[j]));
//!     let mut body = Vec::new();
//!     render_messages_into(&mut body, &plan, req, &corpus, trace.hash_scope_key(), Some(&marker));
//! }
//! # Ok::<(), inferbench_workload::WorkloadError>(())
//! ```

pub mod load;
pub mod synth;
pub mod synthetic;
pub mod trace;

pub use load::{
    context_bound, dropped_note, load_traces, traces_budget_need, traces_budget_need_each,
    LoadOptions, LoadReport, BLOCK_TOKENS, MAX_ID_BYTES, MAX_SUBAGENT_TOTAL_TOKENS,
    MAX_TOOL_USE_COUNT, MAX_TRACE_SECONDS,
};
pub use synth::{
    escape_json_into, hash64, mix64, plan_stream, plan_token_ids, render_messages,
    render_messages_into, str_key, system_prefix_blocks, tail_key, unique_block_key, BlockCorpus,
    Reconstructor, Role, Segment, TurnPlan, DEFAULT_CORPUS_TOKENS,
};
pub use trace::{
    filter_isl_cap, theoretical_hits, HashIdScope, Stream, StreamKind, Trace, TraceRequest,
};
