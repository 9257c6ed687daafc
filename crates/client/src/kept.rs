//! What the client keeps and holds of one response: the one rule of the client and of every
//! estimate that advises a `ulimit -v` or `ulimit -f` (issue 39, fresh tester: a server inside
//! the client's caps, [`crate::http::ResponseCap`], made the advised values false, as the
//! estimates counted ~one chunk and ~48 bytes a token while the record kept whatever came).
//!
//! The caps decide when a response is cut off (it fails, `stream_error`); these budgets decide
//! what the record *keeps* of a response that is not cut off:
//!
//! - chunk entries (`RequestRecord::chunks`, one timestamp each, the ITL gaps): at most
//!   [`kept_chunks`] (`max_tokens` + [`KEPT_EXTRA_CHUNKS`]); later token-bearing chunks are
//!   counted (`chunks_not_kept`, the last token time moves on) but not kept;
//! - generated text over every channel (content, refusal, reasoning), as JSON writes it
//!   ([`json_text_len`]): at most [`kept_text_bytes`] (32 × `max_tokens` + 1 KiB); later text
//!   is counted (`text_bytes_not_kept`) and, when the client has a tokenizer, tokenized as it
//!   streams, chunk by chunk, without being kept;
//! - one SSE line or event, or one non-streamed JSON body, held while it is parsed: at most
//!   [`held_bytes`] (100 KiB + the kept text budget); a longer one cuts the response off
//!   ("an event larger than the client's cap").
//!
//! A record that dropped anything carries the anomaly `output_not_kept`. Without a `max_tokens`
//! nothing is bounded here (no budget is planned).

/// Chunk entries a record keeps besides one per requested token: 16 (servers that overshoot
/// `max_tokens` by a few tokens, or send a few token-bearing chunks of other channels, keep
/// every entry).
pub const KEPT_EXTRA_CHUNKS: u64 = 16;

/// Bytes of generated text a record keeps per requested token, as JSON writes them: 32. Real
/// text averages 3–8 bytes a token; a token's text is at most a few hundred bytes.
pub const KEPT_TEXT_BYTES_PER_MAX_TOKEN: u64 = 32;

/// Bytes of generated text a record keeps besides [`KEPT_TEXT_BYTES_PER_MAX_TOKEN`] per
/// requested token: 1 KiB.
pub const KEPT_EXTRA_TEXT_BYTES: u64 = 1024;

/// Bytes of one SSE line or event (or one non-streamed JSON body) the client holds besides the
/// kept text budget: 100 KiB (a chat chunk with 20 top logprobs is ~4 KiB; the handed case
/// `degenerate-output-without-usage` streams events of 100 KB).
pub const HELD_BASE_BYTES: u64 = 100 << 10;

/// Copies of the largest held event a stream may have at once, for the memory estimate: 2
/// (the event's bytes, which the SSE parser holds in one buffer, and its text unescaped while
/// it is interpreted).
pub const HELD_COPIES: u64 = 2;

/// Memory a stream may hold for what it reads besides [`HELD_COPIES`] of the largest event,
/// bytes: the SSE parser's line and data buffers kept between events
/// ([`crate::sse::KEEP_CAPACITY`] each).
pub const HELD_SLACK_BYTES: u64 = 2 * crate::sse::KEEP_CAPACITY as u64;

/// Memory one stream may hold at once for reading a response of a request for `max_tokens`
/// tokens besides what it keeps, bytes: [`HELD_COPIES`] × [`held_bytes`] +
/// [`HELD_SLACK_BYTES`]. The per-stream term of every memory estimate.
pub fn held_stream_bytes(max_tokens: u64) -> u64 {
    held_bytes(max_tokens)
        .saturating_mul(HELD_COPIES)
        .saturating_add(HELD_SLACK_BYTES)
}

/// Chunk entries a record of a request for `max_tokens` tokens keeps at most: `max_tokens` +
/// [`KEPT_EXTRA_CHUNKS`].
pub fn kept_chunks(max_tokens: u64) -> u64 {
    max_tokens.saturating_add(KEPT_EXTRA_CHUNKS)
}

/// Bytes of generated text (all channels, as JSON writes them: [`json_text_len`]) a record of a
/// request for `max_tokens` tokens keeps at most: [`KEPT_TEXT_BYTES_PER_MAX_TOKEN`] ×
/// `max_tokens` + [`KEPT_EXTRA_TEXT_BYTES`].
pub fn kept_text_bytes(max_tokens: u64) -> u64 {
    max_tokens
        .saturating_mul(KEPT_TEXT_BYTES_PER_MAX_TOKEN)
        .saturating_add(KEPT_EXTRA_TEXT_BYTES)
}

/// The longest SSE line or event, or non-streamed JSON body, the client holds for a request
/// for `max_tokens` tokens, bytes: [`HELD_BASE_BYTES`] + [`kept_text_bytes`]; a longer one cuts
/// the response off (`stream_error`). At most [`crate::sse::MAX_EVENT_BYTES`].
pub fn held_bytes(max_tokens: u64) -> u64 {
    HELD_BASE_BYTES
        .saturating_add(kept_text_bytes(max_tokens))
        .min(crate::sse::MAX_EVENT_BYTES as u64)
}

/// What a record keeps of one response: the budgets of a request for `max_tokens` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptBudget {
    /// Chunk entries ([`kept_chunks`]).
    pub chunks: u64,
    /// Text bytes as JSON writes them ([`kept_text_bytes`]).
    pub text_bytes: u64,
}

impl KeptBudget {
    /// The budget of a request for `max_tokens` tokens.
    pub fn of(max_tokens: u32) -> Self {
        let n = u64::from(max_tokens);
        Self {
            chunks: kept_chunks(n),
            text_bytes: kept_text_bytes(n),
        }
    }
}

/// The bytes `s` takes as a JSON string's contents (serde_json's escapes: `"`, `\` and the
/// short control escapes 2 bytes, other control characters 6, everything else as is): what
/// `requests.jsonl` holds of it, never less than its bytes in memory.
pub fn json_text_len(s: &str) -> u64 {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

/// The length of the longest prefix of `s` (on a character boundary) whose [`json_text_len`] is
/// at most `budget`, bytes of `s`.
pub fn json_text_prefix(s: &str, budget: u64) -> usize {
    let mut used = 0u64;
    for (i, c) in s.char_indices() {
        let mut buf = [0u8; 4];
        used += json_text_len(c.encode_utf8(&mut buf));
        if used > budget {
            return i;
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_exact_arithmetic() {
        assert_eq!(kept_chunks(16), 32);
        assert_eq!(kept_text_bytes(16), 1536);
        assert_eq!(held_bytes(16), 102_400 + 1536);
        assert_eq!(held_stream_bytes(512), 2 * (102_400 + 17_408) + 32_768);
        assert_eq!(held_bytes(u64::MAX), 16 << 20);
        assert_eq!(
            KeptBudget::of(512),
            KeptBudget {
                chunks: 528,
                text_bytes: 17_408
            }
        );
        assert_eq!(json_text_len("a\"b\n\u{1}é"), 1 + 2 + 1 + 2 + 6 + 2);
        assert_eq!(json_text_prefix("ab\"c", 3), 2);
        assert_eq!(json_text_prefix("ab\"c", 4), 3);
        assert_eq!(json_text_prefix("éé", 3), 2);
        assert_eq!(json_text_prefix("abc", 10), 3);
    }
}
