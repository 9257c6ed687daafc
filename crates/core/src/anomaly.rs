//! Numbers a server reports that cannot be true (issue 11). A request whose numbers are
//! implausible still succeeds; its record carries the [`Anomaly`] codes, the run summary counts
//! them per code (`inferbench.anomalies`) and the console warns once per code with an example.
//!
//! Checked once per request, at its end ([`detect`]), never per token.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::{Phase, RequestRecord, TokenSource};

/// The server's prompt token count may exceed or fall short of the drawn input length by at most
/// this fraction of the drawn length before `isl_mismatch` is raised (5 %, issue 11) …
pub const ISL_TOLERANCE_FRACTION: f64 = 0.05;
/// … and by at most this many tokens (32, issue 11: chat templates add a few tokens). Both
/// limits must be exceeded.
pub const ISL_TOLERANCE_TOKENS: u32 = 32;

/// A client-counted output (no `usage` from the server) may exceed the request's `max_tokens`
/// by this factor before `output_exceeds_max_tokens` is raised (2: a different tokenizer splits
/// text into up to about twice the model's tokens, trial 32's " t0" chunks) …
pub const OUTPUT_TOLERANCE_FACTOR: u32 = 2;
/// … plus this many tokens (32, as [`ISL_TOLERANCE_TOKENS`]).
pub const OUTPUT_TOLERANCE_TOKENS: u32 = 32;

/// One kind of implausible server-reported number. Serialized as the snake_case code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anomaly {
    /// `usage.completion_tokens` is above the request's `max_tokens`.
    UsageExceedsMaxTokens,
    /// `usage.completion_tokens` is below the number of token-bearing chunks (every such chunk
    /// carries at least one token). Past [`EXCESS_OUTPUT_MAX`] of the streamed tokens
    /// ([`usage_shortfall_tokens`]) the point is invalid.
    UsageBelowStream,
    /// With `--ignore-eos`, the server's completion tokens differ from the requested output
    /// length (`max_tokens`).
    OslMismatch,
    /// The server's `usage.prompt_tokens` differs from the client-side (drawn) input length by
    /// more than [`ISL_TOLERANCE_FRACTION`] and more than [`ISL_TOLERANCE_TOKENS`]: the client's
    /// tokenizer is not the served model's.
    IslMismatch,
    /// The server sent no `usage`, and the client's count of the text it streamed is above
    /// [`OUTPUT_TOLERANCE_FACTOR`] × `max_tokens` + [`OUTPUT_TOLERANCE_TOKENS`]: more text than
    /// `max_tokens` allows under any tokenizer (trial 32: 200,000 characters for max_tokens 16
    /// counted 25,000 tokens and inflated output tok/s 400×, unflagged).
    OutputExceedsMaxTokens,
    /// The request asked for a stream and the server answered with one JSON body
    /// (`"stream": true` ignored, or a proxy that buffers): the first token arrived with the
    /// last, so TTFT is the whole response time and TPOT and ITL are 0 (trial 32 F4). Noted by
    /// the client when it reads the body (not by [`detect`], which sees only numbers).
    NotStreamed,
    /// The server's `usage` held a `prompt_tokens` or `completion_tokens` that is not a
    /// non-negative integer (`-5`, `8.5`, `"x"`): the count comes from the client's tokenizer
    /// (source `tokenizer`) and the prompt count stays the client's. Past
    /// [`EXCESS_OUTPUT_MAX`] of the successful requests the point is invalid (trial of issue 39
    /// §1–§3, finding 5: such usage was ignored silently). Noted by the client when it reads
    /// the usage.
    UsageInvalid,
    /// The server's `usage` completion count is above what the streamed text can hold: more
    /// than [`OUTPUT_TOLERANCE_FACTOR`] × the client tokenizer's count of the streamed text
    /// (content, refusal, reasoning, plus the reasoning tokens the server says it did not
    /// stream) + [`OUTPUT_TOLERANCE_TOKENS`] (`RequestRecord::completion_tokens_client`; the
    /// same tolerance for re-tokenization as [`Anomaly::OutputExceedsMaxTokens`]). Judged only
    /// where the client has a tokenizer and the stream carried no tool call (whose arguments
    /// it does not keep); without a tokenizer nothing bounds it (a chunk may carry any number
    /// of tokens). Past [`EXCESS_OUTPUT_MAX`] of the run's output tokens
    /// ([`usage_surplus_tokens`]) the point is invalid, as for [`Anomaly::UsageBelowStream`]
    /// (issue 39, finding 11: usage 60 for 8 streamed tokens went unflagged).
    UsageAboveStream,
    /// A choice other than the requested one (`index` ≠ 0; one choice is asked for, n = 1)
    /// carried text, tool calls or a `finish_reason`: it is not output (not counted, never
    /// ends the stream); the record notes that the server sent it (issue 39, finding 7).
    /// Noted by the client when it reads the chunks; a note only, the point stands.
    ExtraChoice,
    /// The response carried more than the client keeps of one response
    /// (`inferbench_client::kept`: `max_tokens` + 16 chunk entries, 32 × `max_tokens` + 1 KiB
    /// of text): the rest was counted (chunks, tokens, bytes) but not kept
    /// (`RequestRecord::chunks_not_kept`, `RequestRecord::text_bytes_not_kept`), so the records
    /// file holds a prefix of its chunks and text and its ITL gaps are those of the kept chunks
    /// only. Noted by the client while it reads the response; a note only, the request and the
    /// point stand (issue 39: what the client keeps is bounded by what the estimates count).
    OutputNotKept,
}

impl Anomaly {
    /// Every code, in summary order.
    pub const ALL: [Anomaly; 10] = [
        Anomaly::UsageExceedsMaxTokens,
        Anomaly::UsageBelowStream,
        Anomaly::OslMismatch,
        Anomaly::IslMismatch,
        Anomaly::OutputExceedsMaxTokens,
        Anomaly::NotStreamed,
        Anomaly::UsageInvalid,
        Anomaly::UsageAboveStream,
        Anomaly::ExtraChoice,
        Anomaly::OutputNotKept,
    ];

    /// The code as written in records and summaries (`"usage_exceeds_max_tokens"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Anomaly::UsageExceedsMaxTokens => "usage_exceeds_max_tokens",
            Anomaly::UsageBelowStream => "usage_below_stream",
            Anomaly::OslMismatch => "osl_mismatch",
            Anomaly::IslMismatch => "isl_mismatch",
            Anomaly::OutputExceedsMaxTokens => "output_exceeds_max_tokens",
            Anomaly::NotStreamed => "not_streamed",
            Anomaly::UsageInvalid => "usage_invalid",
            Anomaly::UsageAboveStream => "usage_above_stream",
            Anomaly::ExtraChoice => "extra_choice",
            Anomaly::OutputNotKept => "output_not_kept",
        }
    }

    /// A one-line description of this anomaly in `rec` (the console's example), with the numbers.
    pub fn describe(self, rec: &RequestRecord) -> String {
        let id = rec.request_id;
        let max = rec
            .max_tokens
            .map_or_else(|| "none".to_string(), |m| m.to_string());
        match self {
            Anomaly::UsageExceedsMaxTokens => format!(
                "request {id}: usage says {} completion tokens for max_tokens {max} ({} token chunks); \
                 output throughput built on it is not real",
                rec.completion_tokens,
                rec.chunk_count()
            ),
            Anomaly::UsageBelowStream => format!(
                "request {id}: usage says {} completion tokens but {} token-bearing chunks arrived",
                rec.completion_tokens,
                rec.chunk_count()
            ),
            Anomaly::OslMismatch => format!(
                "request {id}: --ignore-eos asked for exactly {max} tokens, the server reports {} \
                 (does the server honour ignore_eos and the max-tokens field? see --max-tokens-field)",
                rec.completion_tokens
            ),
            Anomaly::IslMismatch => {
                let ratio = f64::from(rec.prompt_tokens) / f64::from(rec.prompt_tokens_client.max(1));
                format!(
                    "request {id}: the server counted {} prompt tokens for {} drawn (ratio {ratio:.2}); \
                     the client tokenizer is not the served model's: pass --tokenizer server (fit \
                     prompts through the server's /tokenize) or --tokenizer <the model's tokenizer.json>",
                    rec.prompt_tokens, rec.prompt_tokens_client
                )
            }
            Anomaly::OutputExceedsMaxTokens => format!(
                "request {id}: the client counted {} completion tokens in the streamed text (the \
                 server sent no usage) for max_tokens {max} ({} token chunks), more than a \
                 different tokenizer explains; output throughput built on it is not real",
                rec.completion_tokens,
                rec.chunk_count()
            ),
            Anomaly::NotStreamed => format!(
                "request {id}: the server answered with one JSON body, not an event stream \
                 (\"stream\": true ignored, or a buffering proxy); its TTFT is the whole response \
                 time and TPOT/ITL are 0, so latency columns do not measure streaming"
            ),
            // Which count stands depends on which field was bad (trial of issue 39, finding 8:
            // a bad `cached_tokens` alone said the completion tokens were the client's).
            Anomaly::UsageInvalid if rec.completion_tokens_source == crate::TokenSource::Server => {
                format!(
                    "request {id}: the server's usage held a token count that is not a \
                     non-negative integer (not its completion count: its {} completion tokens \
                     stand; the bad count was not taken)",
                    rec.completion_tokens
                )
            }
            Anomaly::UsageInvalid => format!(
                "request {id}: the server's usage held a token count that is not a non-negative \
                 integer; {} completion tokens were counted by the client's tokenizer instead",
                rec.completion_tokens
            ),
            Anomaly::UsageAboveStream => format!(
                "request {id}: usage says {} completion tokens but the client's tokenizer counts \
                 {} in the streamed text ({} token chunks); output throughput built on it is \
                 not real",
                rec.completion_tokens,
                rec.completion_tokens_client
                    .map_or_else(|| "?".to_string(), |n| n.to_string()),
                rec.chunk_count()
            ),
            Anomaly::ExtraChoice => format!(
                "request {id}: the server sent data on a choice other than index 0 (one choice \
                 was asked for); it was not counted as output"
            ),
            Anomaly::OutputNotKept => format!(
                "request {id}: the response carried more than the client keeps for max_tokens \
                 {max}: {} token chunks and {} bytes of text were counted but not kept (the \
                 record keeps {} chunks; its ITL gaps are those of the kept chunks)",
                rec.chunks_not_kept,
                rec.text_bytes_not_kept,
                rec.chunks.len()
            ),
        }
    }
}

impl std::fmt::Display for Anomaly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The anomalies of one finished request (empty for failed requests). The server's numbers are
/// judged where it reported them: completion-token checks need `completion_tokens_source =
/// server`, the ISL check needs a server prompt count (`prompt_tokens != prompt_tokens_client`);
/// without usage, only an output far above `max_tokens` ([`Anomaly::OutputExceedsMaxTokens`]).
/// `ignore_eos`: the request asked for exactly `max_tokens` tokens.
pub fn detect(rec: &RequestRecord, ignore_eos: bool) -> Vec<Anomaly> {
    let mut out = Vec::new();
    if !rec.success {
        return out;
    }
    if rec.completion_tokens_source == TokenSource::Server {
        let c = rec.completion_tokens;
        if rec.max_tokens.is_some_and(|m| c > m) {
            out.push(Anomaly::UsageExceedsMaxTokens);
        }
        if (c as usize) < rec.chunk_count() {
            out.push(Anomaly::UsageBelowStream);
        }
        if ignore_eos && rec.max_tokens.is_some_and(|m| c != m) {
            out.push(Anomaly::OslMismatch);
        }
        if rec
            .completion_tokens_client
            .is_some_and(|n| c > stream_bound(n))
        {
            out.push(Anomaly::UsageAboveStream);
        }
    } else if rec.max_tokens.is_some_and(|m| {
        rec.completion_tokens
            > m.saturating_mul(OUTPUT_TOLERANCE_FACTOR)
                .saturating_add(OUTPUT_TOLERANCE_TOKENS)
    }) {
        out.push(Anomaly::OutputExceedsMaxTokens);
    }
    if isl_mismatch(rec.prompt_tokens, rec.prompt_tokens_client) {
        out.push(Anomaly::IslMismatch);
    }
    out
}

/// The most completion tokens a usage may report for a stream whose text the client's
/// tokenizer counts `client` tokens: [`OUTPUT_TOLERANCE_FACTOR`] × `client` +
/// [`OUTPUT_TOLERANCE_TOKENS`] ([`Anomaly::UsageAboveStream`] above it).
pub fn stream_bound(client: u32) -> u32 {
    client
        .saturating_mul(OUTPUT_TOLERANCE_FACTOR)
        .saturating_add(OUTPUT_TOLERANCE_TOKENS)
}

/// True when `server` differs from `client` by more than [`ISL_TOLERANCE_FRACTION`] × `client`
/// and more than [`ISL_TOLERANCE_TOKENS`].
pub fn isl_mismatch(server: u32, client: u32) -> bool {
    let diff = server.abs_diff(client);
    diff > ISL_TOLERANCE_TOKENS && f64::from(diff) > ISL_TOLERANCE_FRACTION * f64::from(client)
}

/// Profile requests carrying each code: every code of [`Anomaly::ALL`] is present (0 when none),
/// so summaries and the store always have every count.
pub fn counts(records: &[RequestRecord]) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = Anomaly::ALL
        .iter()
        .map(|a| (a.as_str().to_string(), 0))
        .collect();
    for r in records.iter().filter(|r| r.phase == Phase::Profile) {
        for a in &r.anomalies {
            *m.entry(a.as_str().to_string()).or_insert(0) += 1;
        }
    }
    m
}

/// Successful profile requests with at least one anomaly.
pub fn anomalous_requests(records: &[RequestRecord]) -> u64 {
    records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.success && !r.anomalies.is_empty())
        .count() as u64
}

/// The first profile record carrying each code (the console's example), in [`Anomaly::ALL`]
/// order.
pub fn examples(records: &[RequestRecord]) -> Vec<(Anomaly, &RequestRecord)> {
    Anomaly::ALL
        .iter()
        .filter_map(|&a| {
            records
                .iter()
                .filter(|r| r.phase == Phase::Profile && r.anomalies.contains(&a))
                .min_by_key(|r| r.request_id)
                .map(|r| (a, r))
        })
        .collect()
}

/// Above this share of a run's output tokens, the tokens beyond `max_tokens` of requests with
/// [`Anomaly::UsageExceedsMaxTokens`] or [`Anomaly::OutputExceedsMaxTokens`] make its output
/// throughput not the server's ([`excess_output_tokens`]): 1 %, a rounding error's worth.
pub const EXCESS_OUTPUT_MAX: f64 = 0.01;

/// Tokens beyond `max_tokens` over the successful profile requests whose output count is above
/// it ([`Anomaly::UsageExceedsMaxTokens`], [`Anomaly::OutputExceedsMaxTokens`]), and the run's
/// output tokens (successful profile requests), as (excess, total). Trial 33 F9: 1,000,000
/// usage tokens for max_tokens 16 read "Output token throughput 8028415" on a valid point.
pub fn excess_output_tokens(records: &[RequestRecord]) -> (u64, u64) {
    let ok = records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.success);
    let total = ok.clone().map(|r| u64::from(r.completion_tokens)).sum();
    let excess = ok
        .filter(|r| {
            r.anomalies.iter().any(|a| {
                matches!(
                    a,
                    Anomaly::UsageExceedsMaxTokens | Anomaly::OutputExceedsMaxTokens
                )
            })
        })
        .map(|r| {
            u64::from(
                r.completion_tokens
                    .saturating_sub(r.max_tokens.unwrap_or(r.completion_tokens)),
            )
        })
        .sum();
    (excess, total)
}

/// Tokens the stream carried that the server's `usage` leaves out, over the successful profile
/// requests with [`Anomaly::UsageBelowStream`] (token-bearing chunks − usage completion
/// tokens: every such chunk carries at least one token), and the run's output tokens as the
/// streams show them at least (successful profile requests, each the larger of its usage and
/// its chunk count), as (short, total). Usage below the stream undercounts output throughput
/// as inflated usage overcounts it ([`excess_output_tokens`]); the same share,
/// [`EXCESS_OUTPUT_MAX`], makes a point invalid (issue 39).
pub fn usage_shortfall_tokens(records: &[RequestRecord]) -> (u64, u64) {
    let ok = records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.success);
    let streamed = |r: &RequestRecord| u64::try_from(r.chunk_count()).unwrap_or(u64::MAX);
    let total = ok
        .clone()
        .map(|r| u64::from(r.completion_tokens).max(streamed(r)))
        .fold(0u64, u64::saturating_add);
    let short = ok
        .filter(|r| r.anomalies.contains(&Anomaly::UsageBelowStream))
        .map(|r| streamed(r).saturating_sub(u64::from(r.completion_tokens)))
        .fold(0u64, u64::saturating_add);
    (short, total)
}

/// Tokens the server's `usage` reports beyond what the streams carried, over the successful
/// profile requests with [`Anomaly::UsageAboveStream`] (usage completion tokens − the client
/// tokenizer's count of the streamed text, `completion_tokens_client`), and the run's output
/// tokens (successful profile requests), as (surplus, total). Usage above the stream
/// overcounts output throughput; past [`EXCESS_OUTPUT_MAX`] the point is invalid, as for
/// [`usage_shortfall_tokens`] (issue 39, finding 11).
pub fn usage_surplus_tokens(records: &[RequestRecord]) -> (u64, u64) {
    let ok = records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.success);
    let total = ok
        .clone()
        .map(|r| u64::from(r.completion_tokens))
        .fold(0u64, u64::saturating_add);
    let surplus = ok
        .filter(|r| r.anomalies.contains(&Anomaly::UsageAboveStream))
        .map(|r| {
            let client = r.completion_tokens_client.unwrap_or(r.completion_tokens);
            u64::from(r.completion_tokens.saturating_sub(client))
        })
        .fold(0u64, u64::saturating_add);
    (surplus, total)
}

/// At or above this share of the successful multi-token requests arriving whole
/// ([`arrived_whole`]) a point's streaming numbers are not the server's: 10 %. A streaming
/// server's tokens are a decode step apart (milliseconds), so a request arrives whole only
/// when something buffered it (trial 34 F1: 19 of 20 buffered stood valid under an
/// all-requests rule).
pub const WHOLE_SHARE_MAX: f64 = 0.1;

/// Of the successful profile requests with two or more output tokens, how many received all
/// their tokens at one instant (first token = last token): buffered whole (one JSON body, or
/// an event stream a proxy held back), so their TTFT is the whole response time and TPOT/ITL 0
/// (trial 33 F1). Returns (whole, multi-token successes) when whole is at least
/// [`WHOLE_SHARE_MAX`] of them; `None` otherwise (single-token outputs are not judged: their
/// TTFT is their E2EL anyway).
pub fn arrived_whole(records: &[RequestRecord]) -> Option<(u64, u64)> {
    let (mut whole, mut multi) = (0u64, 0u64);
    for r in records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.success && r.completion_tokens >= 2)
    {
        multi += 1;
        whole += u64::from(r.first_token_ns == r.last_token_ns);
    }
    (whole > 0 && whole as f64 >= WHOLE_SHARE_MAX * multi as f64).then_some((whole, multi))
}

/// The successful profile requests the server ended with `finish_reason: "length"` while its
/// own count (`usage`) was below the request's `max_tokens`: it capped the output below what
/// was asked (trial 33 F8: 64 tokens for max_tokens 100), so the run's OSL is not the one
/// requested. Returns how many, and the first (by request id).
pub fn stopped_short(records: &[RequestRecord]) -> (u64, Option<&RequestRecord>) {
    let short = records.iter().filter(|r| {
        r.phase == Phase::Profile
            && r.success
            && r.finish_reason.as_deref() == Some("length")
            && r.completion_tokens_source == TokenSource::Server
            && r.max_tokens.is_some_and(|m| r.completion_tokens < m)
    });
    (
        short.clone().count() as u64,
        short.min_by_key(|r| r.request_id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Channel, ChunkRecord};

    /// Trial of issue 39, finding 8: a bad count other than the completion count (here
    /// `cached_tokens`) leaves the server's completion count standing, and the warning says so;
    /// only a client-counted completion count is said to be the client's.
    #[test]
    fn usage_invalid_says_which_count_stands() {
        let mut r = rec(2, 2, Some(8));
        r.completion_tokens_source = crate::TokenSource::Server;
        assert_eq!(
            Anomaly::UsageInvalid.describe(&r),
            "request 0: the server's usage held a token count that is not a non-negative integer \
             (not its completion count: its 2 completion tokens stand; the bad count was not \
             taken)"
        );
        r.completion_tokens_source = crate::TokenSource::Tokenizer;
        assert!(Anomaly::UsageInvalid
            .describe(&r)
            .ends_with("2 completion tokens were counted by the client's tokenizer instead"));
    }

    fn rec(chunks: usize, completion: u32, max: Option<u32>) -> RequestRecord {
        RequestRecord {
            success: true,
            completion_tokens: completion,
            max_tokens: max,
            prompt_tokens: 120,
            prompt_tokens_client: 120,
            chunks: (0..chunks)
                .map(|i| ChunkRecord {
                    t_ns: i as u64,
                    channel: Channel::Content,
                    tokens: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn usage_exceeds_max_tokens_case() {
        // shared/cases/sse/usage-exceeds-max-tokens.json: 3 chunks, usage 19503, max_tokens 4
        let r = rec(3, 19_503, Some(4));
        assert_eq!(detect(&r, false), vec![Anomaly::UsageExceedsMaxTokens]);
        assert_eq!(
            detect(&r, true),
            vec![Anomaly::UsageExceedsMaxTokens, Anomaly::OslMismatch]
        );
        assert_eq!(detect(&rec(3, 4, Some(4)), true), vec![]);
    }

    #[test]
    fn usage_below_stream() {
        assert_eq!(
            detect(&rec(3, 0, Some(16)), false),
            vec![Anomaly::UsageBelowStream]
        );
        assert_eq!(detect(&rec(3, 3, Some(16)), false), vec![]);
        // our own tokenizer count is not the server's number
        let mut r = rec(3, 0, Some(16));
        r.completion_tokens_source = TokenSource::Tokenizer;
        assert_eq!(detect(&r, true), vec![]);
    }

    #[test]
    fn osl_mismatch_only_with_ignore_eos() {
        assert_eq!(detect(&rec(5, 5, Some(8)), false), vec![]);
        assert_eq!(
            detect(&rec(5, 5, Some(8)), true),
            vec![Anomaly::OslMismatch]
        );
        assert_eq!(detect(&rec(5, 5, None), true), vec![]);
    }

    #[test]
    fn isl_mismatch_needs_both_limits() {
        // llama.cpp + SmolLM2: 120 drawn, 365 counted
        let mut r = rec(1, 1, Some(1));
        r.prompt_tokens = 365;
        assert_eq!(detect(&r, false), vec![Anomaly::IslMismatch]);
        assert!(r.anomalies.is_empty());
        // +32 exactly: not more than 32
        assert!(!isl_mismatch(152, 120));
        assert!(isl_mismatch(153, 120));
        // 10 000 drawn: 5 % = 500 tokens
        assert!(!isl_mismatch(10_500, 10_000));
        assert!(isl_mismatch(10_501, 10_000));
        assert!(isl_mismatch(9_499, 10_000));
        assert!(!isl_mismatch(0, 32));
        assert!(isl_mismatch(0, 33));
    }

    #[test]
    fn failed_requests_have_none() {
        let mut r = rec(3, 19_503, Some(4));
        r.success = false;
        assert_eq!(detect(&r, true), vec![]);
    }

    #[test]
    fn counts_and_examples() {
        let mut a = rec(3, 19_503, Some(4));
        a.request_id = 7;
        a.anomalies = detect(&a, false);
        let mut b = rec(3, 0, Some(4));
        b.request_id = 3;
        b.anomalies = detect(&b, false);
        let mut w = rec(3, 0, Some(4));
        w.phase = Phase::Warmup;
        w.anomalies = detect(&w, false);
        let recs = vec![a, b, w, rec(2, 2, Some(4))];
        let c = counts(&recs);
        assert_eq!(
            c.into_iter().collect::<Vec<_>>(),
            vec![
                ("extra_choice".to_string(), 0),
                ("isl_mismatch".to_string(), 0),
                ("not_streamed".to_string(), 0),
                ("osl_mismatch".to_string(), 0),
                ("output_exceeds_max_tokens".to_string(), 0),
                ("output_not_kept".to_string(), 0),
                ("usage_above_stream".to_string(), 0),
                ("usage_below_stream".to_string(), 1),
                ("usage_exceeds_max_tokens".to_string(), 1),
                ("usage_invalid".to_string(), 0),
            ]
        );
        assert_eq!(anomalous_requests(&recs), 2);
        let ex: Vec<(Anomaly, u64)> = examples(&recs)
            .into_iter()
            .map(|(a, r)| (a, r.request_id))
            .collect();
        assert_eq!(
            ex,
            vec![
                (Anomaly::UsageExceedsMaxTokens, 7),
                (Anomaly::UsageBelowStream, 3)
            ]
        );
        let s = Anomaly::UsageExceedsMaxTokens.describe(&recs[0]);
        assert_eq!(
            s,
            "request 7: usage says 19503 completion tokens for max_tokens 4 (3 token chunks); \
             output throughput built on it is not real"
        );
    }

    /// Trial 32 F2: `degenerate-first` sent 200,000 characters without usage for max_tokens
    /// 16 (25,000 tokens by the client's count); twice the tokens of a different tokenizer
    /// (" t0" chunks) is not flagged.
    #[test]
    fn output_exceeds_max_tokens_without_usage() {
        let mut r = rec(1, 25_000, Some(16));
        r.completion_tokens_source = TokenSource::Tokenizer;
        assert_eq!(detect(&r, false), vec![Anomaly::OutputExceedsMaxTokens]);
        assert_eq!(
            Anomaly::OutputExceedsMaxTokens.describe(&r),
            "request 0: the client counted 25000 completion tokens in the streamed text (the \
             server sent no usage) for max_tokens 16 (1 token chunks), more than a different \
             tokenizer explains; output throughput built on it is not real"
        );
        // The limit: 2 × 16 + 32 = 64 tokens.
        r.completion_tokens = 64;
        assert_eq!(detect(&r, true), vec![]);
        r.completion_tokens = 65;
        assert_eq!(detect(&r, true), vec![Anomaly::OutputExceedsMaxTokens]);
        // No max_tokens: nothing to exceed.
        r.max_tokens = None;
        assert_eq!(detect(&r, false), vec![]);
        // The server's usage is judged by its own rule, not this one.
        let r = rec(1, 25_000, Some(16));
        assert_eq!(detect(&r, false), vec![Anomaly::UsageExceedsMaxTokens]);
    }

    /// Trial 33 F1 / trial 34 F1: responses buffered whole, from 10 % of the multi-token
    /// successes; single-token outputs are not judged.
    #[test]
    fn arrived_whole_from_a_tenth_of_the_successes() {
        let at = |first: u64, last: u64, tokens: u32| RequestRecord {
            phase: Phase::Profile,
            success: true,
            first_token_ns: Some(first),
            last_token_ns: Some(last),
            completion_tokens: tokens,
            ..Default::default()
        };
        assert_eq!(arrived_whole(&[at(5, 5, 16), at(9, 9, 16)]), Some((2, 2)));
        assert_eq!(arrived_whole(&[at(5, 5, 16), at(9, 10, 16)]), Some((1, 2)));
        assert_eq!(arrived_whole(&[at(5, 6, 16), at(9, 10, 16)]), None);
        assert_eq!(arrived_whole(&[at(5, 5, 1), at(9, 9, 1)]), None);
        let mut failed = at(1, 2, 4);
        failed.success = false;
        assert_eq!(arrived_whole(&[at(5, 5, 16), failed]), Some((1, 1)));
        assert_eq!(arrived_whole(&[]), None);
        // 1 whole of 10 is the 10 % limit; 1 of 11 is below it.
        let mut v: Vec<RequestRecord> = (0..9).map(|i| at(i, i + 1, 8)).collect();
        v.push(at(50, 50, 8));
        assert_eq!(arrived_whole(&v), Some((1, 10)));
        v.push(at(60, 61, 8));
        assert_eq!(arrived_whole(&v), None);
    }

    /// Trial 33 F9 and F8: tokens beyond max_tokens, and "length" below it.
    #[test]
    fn excess_output_and_stopped_short() {
        let mut a = rec(50, 1_000_000, Some(16));
        a.phase = Phase::Profile;
        a.anomalies = detect(&a, false);
        let mut b = rec(16, 16, Some(16));
        b.phase = Phase::Profile;
        assert_eq!(excess_output_tokens(&[a, b]), (999_984, 1_000_016));
        let mut c = rec(64, 64, Some(100));
        c.phase = Phase::Profile;
        c.finish_reason = Some("length".into());
        c.request_id = 3;
        let mut d = c.clone();
        d.request_id = 1;
        d.finish_reason = Some("stop".into());
        let both = [c.clone(), d];
        let (n, first) = stopped_short(&both);
        assert_eq!((n, first.map(|r| r.request_id)), (1, Some(3)));
        // The client's own count is not the server's word.
        c.completion_tokens_source = TokenSource::Tokenizer;
        assert_eq!(stopped_short(&[c]).0, 0);
    }

    /// Issue 39: usage below the stream, as a share of the tokens the streams carried.
    #[test]
    fn usage_shortfall_counts_the_missing_stream_tokens() {
        let profile = |chunks, completion| {
            let mut r = rec(chunks, completion, Some(16));
            r.phase = Phase::Profile;
            r.anomalies = detect(&r, false);
            r
        };
        // 10 chunks, usage 4: 6 missing; 8 chunks, usage 8: none; usage 20 over 5 chunks
        // counts 20 in the total; a failed request and a warmup count nothing.
        let mut failed = profile(50, 0);
        failed.success = false;
        let mut warm = profile(50, 0);
        warm.phase = Phase::Warmup;
        let recs = [profile(10, 4), profile(8, 8), profile(5, 20), failed, warm];
        assert_eq!(usage_shortfall_tokens(&recs), (6, 38));
        assert_eq!(usage_shortfall_tokens(&[]), (0, 0));
        // The client's own count never falls short of the stream's.
        let mut own = profile(10, 4);
        own.completion_tokens_source = TokenSource::Tokenizer;
        own.anomalies = detect(&own, false);
        assert_eq!(usage_shortfall_tokens(&[own]), (0, 10));
    }

    /// Issue 39, finding 11: usage above 2 × the client's count of the streamed text + 32 is
    /// `usage_above_stream` (8 streamed tokens: 48 stands, 49 is flagged); without a client
    /// count (no tokenizer, or the chunks alone bound it) nothing is judged; the surplus is
    /// usage − the client's count.
    #[test]
    fn usage_above_the_stream_needs_the_client_count() {
        assert_eq!(stream_bound(8), 48);
        assert_eq!(stream_bound(u32::MAX), u32::MAX);
        let mut r = rec(8, 48, Some(100));
        r.completion_tokens_client = Some(8);
        assert_eq!(detect(&r, false), vec![]);
        r.completion_tokens = 49;
        assert_eq!(detect(&r, false), vec![Anomaly::UsageAboveStream]);
        r.completion_tokens = 60;
        r.anomalies = detect(&r, false);
        assert_eq!(r.anomalies, vec![Anomaly::UsageAboveStream]);
        r.phase = Phase::Profile;
        assert_eq!(
            usage_surplus_tokens(&[r.clone(), rec(8, 8, Some(100))]),
            (52, 68)
        );
        // No client count: no judgement (chunks bound nothing from above).
        let mut n = rec(8, 60, Some(100));
        n.anomalies = detect(&n, false);
        assert_eq!(n.anomalies, vec![]);
        assert_eq!(usage_surplus_tokens(&[n]), (0, 60));
        // The tokenizer's own count is not the server's number.
        let mut t = rec(8, 60, Some(100));
        t.completion_tokens_source = TokenSource::Tokenizer;
        t.completion_tokens_client = Some(8);
        assert_eq!(detect(&t, false), vec![]);
    }

    #[test]
    fn codes_serialize_snake_case() {
        let s = serde_json::to_string(&Anomaly::ALL).unwrap();
        assert_eq!(
            s,
            r#"["usage_exceeds_max_tokens","usage_below_stream","osl_mismatch","isl_mismatch","output_exceeds_max_tokens","not_streamed","usage_invalid","usage_above_stream","extra_choice","output_not_kept"]"#
        );
        for a in Anomaly::ALL {
            assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{a}\""));
        }
    }
}
