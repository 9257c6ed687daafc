//! AgentX: agentic-coding trace replay inputs (reference/agentx.md). Traces in InferenceX's
//! "Weka" JSONL layout ([`trace`]) become per-request prompts synthesized from 64-token block
//! hashes ([`synth`]). Scheduling (lanes, spawn/join, delays, idle caps) is the loadgen's.

pub mod trace;

pub use trace::{Stream, StreamKind, Trace, TraceRequest};
