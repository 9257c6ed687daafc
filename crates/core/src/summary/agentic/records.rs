//! The per-record view: what AIPerf's `profile_export.jsonl` carries of one request
//! (reference/agentx.md §4.2), its error details and category, and which records the aggregate
//! keeps.

use super::*;

/// One record's AIPerf per-request metrics (reference/agentx.md §4.2), our definitions (module
/// doc). Failed records carry only `input_sequence_length` (AIPerf writes it as `error_isl`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AiperfRecordMetrics {
    /// `input_sequence_length`, tokens (`prompt_tokens`).
    pub input_sequence_length: u64,
    /// `output_sequence_length`, tokens (`completion_tokens`); successes only.
    pub output_sequence_length: Option<u64>,
    /// `time_to_first_token`, ms; successes with a token only.
    pub time_to_first_token_ms: Option<f64>,
    /// `request_latency` (E2EL = last token − sent), ms; successes only.
    pub request_latency_ms: Option<f64>,
    /// `inter_token_latency` = (E2EL − TTFT) / (OSL − 1), ms; successes with OSL > 1 only.
    pub inter_token_latency_ms: Option<f64>,
}

/// The AIPerf per-request metrics of `r` (§4.2; definitions in the module doc).
pub fn aiperf_metrics(r: &RequestRecord) -> AiperfRecordMetrics {
    let isl = u64::from(r.prompt_tokens);
    if !r.success {
        return AiperfRecordMetrics {
            input_sequence_length: isl,
            ..Default::default()
        };
    }
    AiperfRecordMetrics {
        input_sequence_length: isl,
        output_sequence_length: Some(u64::from(r.completion_tokens)),
        time_to_first_token_ms: r.ttft_ms(),
        request_latency_ms: r.e2el_ms(),
        inter_token_latency_ms: r.tpot_ms(),
    }
}

/// AIPerf's `ErrorDetails` of a failed request (§4.2): HTTP `code` (≥ 400 only), `type` = our
/// error class (`http_status`, `timeout_idle`, …), `message` = the record's error text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ErrorDetails {
    /// HTTP status when the server answered with an error status.
    pub code: Option<u16>,
    /// Error classification: the snake_case [`ErrorClass`] name.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Human-readable cause.
    pub message: String,
}

/// The error object of `r` in `profile_export.jsonl`, `None` for a success (§4.2).
pub fn error_details(r: &RequestRecord) -> Option<ErrorDetails> {
    if r.success {
        return None;
    }
    let kind = r.error_class.map(|c| c.as_str().to_string());
    let message = match (&r.error, &kind) {
        (Some(m), _) if !m.trim().is_empty() => m.clone(),
        (_, Some(k)) => k.clone(),
        _ => "request failed".to_string(),
    };
    Some(ErrorDetails {
        code: r.http_status.filter(|s| *s >= 400),
        kind,
        message,
    })
}

/// The category of an error in `request_accounting.error_categories`, the script's rule (§4.5):
/// the first non-empty of `type`, `code`; else the message's first line up to the first `:`
/// (at most 120 characters), `unknown` when empty.
pub fn error_category(d: &ErrorDetails) -> String {
    if let Some(k) = d.kind.as_deref().filter(|k| !k.is_empty()) {
        return k.to_string();
    }
    if let Some(c) = d.code {
        return c.to_string();
    }
    message_category(&d.message)
}

/// First line of `message` (Python `str.strip().splitlines()[0]`) up to the first `:`, at most
/// 120 characters; `unknown` when empty.
fn message_category(message: &str) -> String {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        )
    };
    let trimmed = message.trim_matches(|c: char| c.is_whitespace() || is_break(c));
    let first = trimmed.split(is_break).next().unwrap_or("");
    let head = first.split(':').next().unwrap_or("");
    if head.is_empty() {
        return "unknown".into();
    }
    head.chars().take(120).collect()
}

/// True when `r` failed with a context-overflow error (its text contains one of
/// [`CONTEXT_OVERFLOW_SUBSTRINGS`], case-insensitively; §3.9).
pub fn is_context_overflow(r: &RequestRecord) -> bool {
    if r.success {
        return false;
    }
    let text = r.error.as_deref().unwrap_or("").to_lowercase();
    CONTEXT_OVERFLOW_SUBSTRINGS.iter().any(|s| text.contains(s))
}

/// True when a record is kept by the aggregate: profile phase and successful (§4.5).
pub fn is_kept(r: &RequestRecord) -> bool {
    r.phase == Phase::Profile && r.success
}
