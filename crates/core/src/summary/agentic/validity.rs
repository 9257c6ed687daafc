//! Validity (reference/agentx.md §4.7): `validate_agentic_result.py`'s rules and AIPerf's scenario
//! checks.

use super::*;

/// Pass or fail, with the reasons of a failure.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Validity {
    /// True when no rule failed.
    pub valid: bool,
    /// Why not (empty when valid).
    pub reasons: Vec<String>,
}

impl Validity {
    fn from_reasons(reasons: Vec<String>) -> Self {
        Validity {
            valid: reasons.is_empty(),
            reasons,
        }
    }
}

/// The request counts `validate_agentic_result.py` reads from `profile_export_aiperf.json`
/// (`request_count.avg` = successful profile requests, `error_request_count.avg` = failed ones,
/// `completed_request_count.avg` = both), requests.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestCounts {
    /// Successful profile requests (`None` = the field is missing).
    pub request_count: Option<f64>,
    /// Failed profile requests (`None` = missing, read as 0).
    pub error_request_count: Option<f64>,
    /// Completed profile requests (`None` = missing: successes + errors).
    pub completed_request_count: Option<f64>,
}

impl RequestCounts {
    /// The counts of the profile-phase records.
    pub fn from_records(records: &[RequestRecord]) -> Self {
        let prof = records.iter().filter(|r| r.phase == Phase::Profile);
        let ok = prof.clone().filter(|r| r.success).count() as f64;
        let err = prof.filter(|r| !r.success).count() as f64;
        RequestCounts {
            request_count: Some(ok),
            error_request_count: Some(err),
            completed_request_count: Some(ok + err),
        }
    }
}

/// `validate_agentic_result.py` (§4.7): fails when the summary is missing (`counts = None`),
/// `request_count` is missing, a count is negative or not finite, the completed count is ≤ 0, or
/// errors ÷ completed exceeds `failed_request_threshold` (fraction 0–1, inclusive bound passes;
/// outside `[0, 1]` is itself a failure). Reasons worded as the script's.
pub fn validate(counts: Option<&RequestCounts>, failed_request_threshold: f64) -> Validity {
    let fail = |m: String| Validity::from_reasons(vec![m]);
    if !(0.0..=1.0).contains(&failed_request_threshold) {
        return fail("--failed-request-threshold must be between 0 and 1".into());
    }
    let Some(c) = counts else {
        return fail("profile_export_aiperf.json not found".into());
    };
    for (name, v) in [
        ("request_count", c.request_count),
        ("error_request_count", c.error_request_count),
        ("completed_request_count", c.completed_request_count),
    ] {
        if let Some(v) = v {
            if !v.is_finite() || v < 0.0 {
                return fail(format!(
                    "failed to read profile_export_aiperf.json: {name}.avg must be a finite non-negative number"
                ));
            }
        }
    }
    let Some(successes) = c.request_count else {
        return fail("request_count.avg is missing".into());
    };
    let errors = c.error_request_count.unwrap_or(0.0);
    let completed = c.completed_request_count.unwrap_or(successes + errors);
    if completed <= 0.0 {
        return fail("aiperf completed zero requests".into());
    }
    let rate = errors / completed;
    if rate > failed_request_threshold {
        return fail(format!(
            "aiperf request error rate exceeded the benchmark limit: {}/{} = {:.3}% > {:.3}%",
            fmt_g(errors),
            fmt_g(completed),
            rate * 100.0,
            failed_request_threshold * 100.0
        ));
    }
    Validity::from_reasons(Vec::new())
}

/// Python's `{:g}` for the counts (integral values without a fraction).
fn fmt_g(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Optional rule (§4.7, `AIPERF_REQUIRED_SERVER_METRIC_PREFIX`): some server metric name must
/// start with `prefix` (e.g. `vllm:`).
pub fn require_server_metric_prefix<'a>(
    mut names: impl Iterator<Item = &'a str>,
    prefix: &str,
) -> Validity {
    if names.any(|n| n.starts_with(prefix)) {
        Validity::from_reasons(Vec::new())
    } else {
        Validity::from_reasons(vec![format!(
            "no server metric with the required prefix {prefix:?}"
        )])
    }
}

/// Whether a `submission_valid` value says not valid: `false`, or the string `"false"` (vLLM's
/// `--metadata` pairs are strings, and AgentX's validity travels that way; docs/results.md).
pub fn submission_invalid(v: &Value) -> bool {
    matches!(v, Value::Bool(false)) || v.as_str() == Some("false")
}

/// AIPerf's scenario validity (`metadata.submission_valid` / `submission_invalid_reasons`,
/// §3.9, §4.7) from the records: `run_cancelled` when `run_cancelled`;
/// `context_overflow_rate_exceeded` when context-overflow errors exceed
/// [`CONTEXT_OVERFLOW_RATE_LIMIT`] of the profile records; `insufficient_profile_metric_coverage`
/// when the profiling phase lasted ≥ [`COVERAGE_MIN_DURATION_S`] and the last TTFT/ITL
/// observation (a token of a successful profile request) falls before
/// [`COVERAGE_MIN_FRACTION`] of it. `extra` reasons (e.g. `unsafe_override`) come first.
pub fn scenario_validity(
    records: &[RequestRecord],
    run_cancelled: bool,
    extra: &[String],
) -> Validity {
    let mut reasons: Vec<String> = extra.to_vec();
    if run_cancelled {
        reasons.push("run_cancelled".into());
    }
    let prof: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    if !prof.is_empty() {
        let overflow = prof.iter().filter(|r| is_context_overflow(r)).count();
        if overflow as f64 / prof.len() as f64 > CONTEXT_OVERFLOW_RATE_LIMIT {
            reasons.push("context_overflow_rate_exceeded".into());
        }
    }
    if let Some((start, end)) = metrics::profile_window_ns(records) {
        let dur = end.saturating_sub(start) as f64;
        if dur / NS_PER_S >= COVERAGE_MIN_DURATION_S {
            let last = prof
                .iter()
                .filter(|r| r.success)
                .filter_map(|r| r.last_token_ns.or(r.first_token_ns))
                .max();
            let covered = last.map_or(0.0, |t| t.saturating_sub(start) as f64);
            if covered < COVERAGE_MIN_FRACTION * dur {
                reasons.push("insufficient_profile_metric_coverage".into());
            }
        }
    }
    Validity::from_reasons(reasons)
}

/// True when `r` was cancelled by the client (AIPerf `was_cancelled`, §4.2).
pub fn was_cancelled(r: &RequestRecord) -> bool {
    r.error_class == Some(ErrorClass::Cancelled)
}
