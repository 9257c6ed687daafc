//! The server's chat-template overhead, measured by the replay itself (issue 39 §4).
//!
//! A replayed request carries exactly the trace's `in` tokens of synthesized text; the server's
//! `usage.prompt_tokens` also counts what its chat template wraps around the messages (BOS, role
//! headers and end marks, a default system prompt, the generation prompt) and the cache-bust
//! marker. Comparing the server's count with `in` alone flagged `isl_mismatch` on 4–7 % of a
//! faithful replay's requests: short sub-agent prompts whose extra ~43 tokens were that
//! overhead. So, before the warmup, the replay sends two probe requests (1 output token each)
//! whose text is nothing but the marker, and reads the overhead off the server's counts:
//!
//! * `[user: marker]` → `first_message` = fixed part + one message's framing + the marker;
//! * `[user: marker, assistant: "", user: ""]` → two more messages' framing, so
//!   `per_message` = (that − `first_message`) / 2.
//!
//! A request of `m` messages is then expected to count `in + first_message + per_message ×
//! (m − 1)` tokens, which is what its ISL check compares with (the client's `prompt_tokens`).
//! A wrong tokenizer (off in proportion to `in`) or a server that drops a message (short by
//! that message's tokens) still differs from it by more than the tolerance. The probes use no
//! trace text, so the tokenizer cannot leak into the measurement.

use std::time::Duration;

use inferbench_client::{CancellationToken, Client, RequestInput, RequestMeta};
use inferbench_core::Phase;
use serde_json::{json, Value};

/// The longest the two probes may take together before the replay goes on without them: 10 s.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(10);

/// The chat template's overhead on the server's prompt-token count, tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TemplateOverhead {
    /// Prompt tokens of a one-message conversation holding only the cache-bust marker: the
    /// template's fixed part, one message's framing and the marker.
    pub first_message: u32,
    /// Prompt tokens each further message adds (its role header and end marks).
    pub per_message: u32,
}

impl TemplateOverhead {
    /// From the server's prompt counts of the one-message probe (`one`) and the three-message
    /// probe (`three`); a three-message count below `one` (a template that drops empty
    /// messages) gives 0 per message.
    pub fn from_counts(one: u32, three: Option<u32>) -> Self {
        TemplateOverhead {
            first_message: one,
            per_message: three.map_or(0, |t| t.saturating_sub(one) / 2),
        }
    }

    /// The overhead of a request of `messages` chat messages (the marker in the first user
    /// message), tokens: `first_message + per_message × (messages − 1)`.
    pub fn tokens(&self, messages: u32) -> u32 {
        self.first_message
            .saturating_add(self.per_message.saturating_mul(messages.saturating_sub(1)))
    }
}

impl std::fmt::Display for TemplateOverhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tokens for the first message (template and cache-bust marker), {} per further \
             message",
            self.first_message, self.per_message
        )
    }
}

/// The two probe conversations: the marker alone, and the marker with an empty assistant turn
/// and an empty user turn after it.
pub fn probe_messages(marker: &str) -> (Value, Value) {
    (
        json!([{"role": "user", "content": marker}]),
        json!([
            {"role": "user", "content": marker},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": ""}
        ]),
    )
}

/// Measures the overhead on `client`'s server with the probes of [`probe_messages`] (`marker`:
/// a cache-bust marker no trace request uses), 1 output token each, within [`PROBE_DEADLINE`].
///
/// # Errors
/// Why it could not be measured: the first probe failed (the server unreachable or refusing
/// it: its error), timed out, or its answer had no `usage.prompt_tokens`. A failed second
/// probe only leaves `per_message` at 0.
pub async fn measure(
    client: &Client,
    marker: &str,
    cancel: &CancellationToken,
) -> Result<TemplateOverhead, String> {
    let stop = cancel.child_token();
    let probes = async {
        let (one, three) = probe_messages(marker);
        let one = probe(client, &one, u64::MAX - 1, &stop).await?;
        let three = probe(client, &three, u64::MAX - 2, &stop).await.ok();
        Ok(TemplateOverhead::from_counts(one, three))
    };
    match tokio::time::timeout(PROBE_DEADLINE, probes).await {
        Ok(r) => r,
        Err(_) => {
            stop.cancel();
            Err(format!(
                "the probes took longer than {} s",
                PROBE_DEADLINE.as_secs()
            ))
        }
    }
}

/// The server's prompt-token count of one probe conversation.
async fn probe(
    client: &Client,
    messages: &Value,
    request_id: u64,
    stop: &CancellationToken,
) -> Result<u32, String> {
    let input = RequestInput {
        text: "",
        messages: Some(messages),
        prompt_tokens: 0,
        max_tokens: Some(1),
    };
    let meta = RequestMeta {
        request_id,
        phase: Phase::Warmup,
        scheduled_ns: 0,
        conversation_id: None,
        turn: None,
        correlation_id: None,
        headers: Vec::new(),
    };
    // Not part of the load: no send index, so `{i}` templates (a dp-rank round-robin's) are
    // not sent and the run's requests start at index 0.
    let rec = client.send_unindexed(&input, meta, stop).await;
    if !rec.success {
        return Err(format!(
            "{}: {}",
            rec.error_class.map_or("error", |c| c.as_str()),
            rec.error.as_deref().unwrap_or("")
        ));
    }
    // `prompt_tokens` is the client's count (0 here) unless the server reported usage.
    if rec.prompt_tokens == 0 {
        return Err("the server reported no usage.prompt_tokens".into());
    }
    Ok(rec.prompt_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_per_message_count() {
        let o = TemplateOverhead::from_counts(43, Some(53));
        assert_eq!(
            o,
            TemplateOverhead {
                first_message: 43,
                per_message: 5
            }
        );
        assert_eq!(
            (o.tokens(0), o.tokens(1), o.tokens(2), o.tokens(7)),
            (43, 43, 48, 73)
        );
        // A template that drops empty messages, or no second probe: nothing per message.
        assert_eq!(TemplateOverhead::from_counts(43, Some(40)).per_message, 0);
        assert_eq!(TemplateOverhead::from_counts(43, None).tokens(9), 43);
        assert_eq!(
            o.to_string(),
            "43 tokens for the first message (template and cache-bust marker), 5 per further \
             message"
        );
        let (one, three) = probe_messages("[rid:1]\n\n");
        assert_eq!(one.as_array().unwrap().len(), 1);
        assert_eq!(three[2], json!({"role": "user", "content": ""}));
    }
}
