//! The AgentX (agentic-coding trace replay) aggregate: what InferenceX's
//! `utils/agentic/aggregation/process_agentic_result.py` writes as `<RESULT_FILENAME>.json` from
//! AIPerf's artifacts (reference/agentx.md §4.5), computed here directly from our
//! [`RequestRecord`]s, plus the validity rules of `validate_agentic_result.py` and AIPerf's
//! scenario (§4.7). Pure: no I/O, no clock.
//!
//! The per-request definitions are the ones our AIPerf-shaped `profile_export.jsonl` carries
//! ([`aiperf_metrics`], §4.2), so the InferenceX script run on our artifacts and [`aggregate`] run
//! on our records agree (the oracle test `crates/loadgen/tests/agentic_oracle.rs`):
//!
//! - ISL = `prompt_tokens` (server-reported, cached tokens included), OSL = `completion_tokens`;
//! - TTFT = first_token − sent, request latency (E2EL) = last_token − sent, both ms in the file;
//! - per-request inter-token latency = (E2EL − TTFT) / (OSL − 1) (AIPerf's ITL, our TPOT), none
//!   for OSL ≤ 1;
//! - `request_start_ns` = sent, `request_end_ns` = end (stream closed), on the run clock plus a
//!   wall-clock anchor in the files.
//!
//! Aggregate rules (§4.5): every record counts in `records_total`; warmup-phase records (primers
//! included) and failed records are dropped; latency statistics are in **seconds** over the kept
//! records with non-positive values dropped; statistics are mean, p50, p75, p90, p95 (exact,
//! linear interpolation, [`metrics::percentile_sorted`]) and the population std; `intvty.X` =
//! 1 / `itl.X` (tok/s/user, std over per-request 1/ITL); `e2e_norm_intvty.X` = 1 / X(E2EL/OSL);
//! QPS over consecutive 1-s completion windows from the first completion (the last partial window
//! dropped); throughput over max(end) − min(sent) of the kept records, per GPU ÷ the job's GPUs;
//! theoretical cache hit = Σ hit blocks / Σ blocks; every float rounded to 5 decimals (integral
//! values ≥ 1 written as integers), as the script's `round_floats`.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::inferencex::{Parallelism, RoleTopology, Topology};
use crate::metrics::{self, NS_PER_S};
use crate::prometheus::parse_labels;
use crate::record::{ErrorClass, Phase, RequestRecord};
use crate::server_metrics::ServerMetricsSummary;

mod aggregate;
mod context;
mod records;
mod server;
mod shape;
mod validity;

pub use aggregate::*;
pub use context::*;
pub use records::*;
pub use server::*;
pub use shape::*;
pub use validity::*;

/// `scenario_type` of every agentic aggregate (§4.5).
pub const SCENARIO_TYPE: &str = "agentic-coding";
/// Decimal places of every float in the aggregate (the script's `round_floats`).
pub const DECIMALS: usize = 5;
/// Width of one QPS window, s (§4.5).
pub const QPS_WINDOW_S: f64 = 1.0;
/// InferenceX's `--failed-request-threshold` default (`AIPERF_FAILED_REQUEST_THRESHOLD`),
/// fraction 0–1, inclusive (§4.7).
pub const DEFAULT_FAILED_REQUEST_THRESHOLD: f64 = 0.10;
/// Error-text substrings (lowercase) that mark a context-overflow error (AIPerf's default
/// `AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS`, §3.9).
pub const CONTEXT_OVERFLOW_SUBSTRINGS: [&str; 4] = [
    "context length",
    "maximum context",
    "context_length_exceeded",
    "prompt is too long",
];
/// Context-overflow errors ÷ profile records above which the AIPerf scenario is invalid
/// (`AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT`, fraction, §3.9).
pub const CONTEXT_OVERFLOW_RATE_LIMIT: f64 = 0.01;
/// Profiling phases at least this long (s) must have TTFT/ITL observations through
/// [`COVERAGE_MIN_FRACTION`] of the phase (§3.9).
pub const COVERAGE_MIN_DURATION_S: f64 = 900.0;
/// Fraction of the profiling phase the last TTFT/ITL observation must reach (§3.9).
pub const COVERAGE_MIN_FRACTION: f64 = 0.98;
/// The stored invalid reason of an AgentX replay shorter than [`COVERAGE_MIN_DURATION_S`]
/// (`replay --unsafe-override`, the agentic quickstart): its `submission_invalid_reasons`.
pub const SHORT_REPLAY_REASON: &str = "replay shorter than AgentX's 900 s minimum";

/// Whether `reason` (a point's stored invalid reason, parts joined with `; `) names only the
/// AgentX duration rule: every part is [`SHORT_REPLAY_REASON`] or AIPerf's `unsafe_override`
/// code for it. Such a point is a preview (issue 42): drawn on a preview frontier of its own,
/// never on a valid one.
pub fn only_short_replay(reason: &str) -> bool {
    let mut parts = reason
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .peekable();
    parts.peek().is_some() && parts.all(|p| p == SHORT_REPLAY_REASON || p == "unsafe_override")
}

/// The warning the script adds when `server_metrics_export.json` is missing or empty (§4.5).
pub const WARNING_NO_SERVER_METRICS: &str = "server_metrics_export.json missing or empty";

#[cfg(test)]
#[path = "agentic_tests.rs"]
mod tests;
