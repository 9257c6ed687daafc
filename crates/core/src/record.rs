//! [`RequestRecord`]: one per request, streamed as JSON lines to `requests.jsonl` as requests
//! finish (DESIGN.md §3). Everything in a run summary is recomputable from these records.
//!
//! All timestamps are **nanoseconds on one monotonic clock relative to the run start** (`u64`,
//! field names end in `_ns`). A timestamp that never happened (e.g. no token arrived) is `None`.

use serde::{Deserialize, Serialize};

/// Whether a request belongs to the warmup (excluded from all metrics) or the measured profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Warmup request: sent before the profiling window, never counted.
    Warmup,
    /// Measured request.
    #[default]
    Profile,
}

/// How a failed request ended. Every request ends as success or exactly one of these
/// (issue #2, DESIGN.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// TCP/TLS connect failed or the connection was refused/reset before a response head arrived.
    Connect,
    /// The server answered with a non-2xx HTTP status.
    HttpStatus,
    /// No byte arrived for longer than the idle timeout (`--idle-timeout`, seconds).
    TimeoutIdle,
    /// The whole request took longer than the total timeout (`--request-timeout`, seconds).
    TimeoutTotal,
    /// The stream ended abnormally: connection dropped mid-body, `event: error`, an `error`
    /// object in a chunk, or no token-bearing chunk before the end.
    StreamError,
    /// Bytes that are not a valid response: undecodable JSON in a `data:` line, invalid UTF-8, an
    /// invalid HTTP head or body framing (a Content-Length that ends an event stream before its
    /// `[DONE]` while more bytes follow), …
    Malformed,
    /// Cancelled by the client (Ctrl-C/SIGTERM, or the run's duration ended).
    Cancelled,
    /// The client ran out of one of its own resources before the request reached the server:
    /// open files (`EMFILE`: the process's `ulimit -n`; `ENFILE`: the system's), socket buffers
    /// or memory (`ENOBUFS`, `ENOMEM`), local ports (`EADDRNOTAVAIL` on connect). The client's
    /// limit, never the server's failure: not `connect`, never "server unreachable" (exit 3).
    ClientResource,
}

impl ErrorClass {
    /// The snake_case name used in JSON and in the store (`"timeout_idle"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::HttpStatus => "http_status",
            ErrorClass::TimeoutIdle => "timeout_idle",
            ErrorClass::TimeoutTotal => "timeout_total",
            ErrorClass::StreamError => "stream_error",
            ErrorClass::Malformed => "malformed",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::ClientResource => "client_resource",
        }
    }
}

/// Which part of the generated output a chunk carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// Visible content (`text` for completions, `delta.content` for chat).
    Content,
    /// Reasoning tokens (`reasoning_content` / `reasoning`): count for TTFT, not for TTFO/output text.
    Reasoning,
    /// Tool-call deltas: count for TTFT.
    Tool,
    /// Refusal text (OpenAI's `delta.refusal`): generated and shown, so it counts for TTFT,
    /// TTFO and the token count, but it is not the output text (not an answer).
    Refusal,
}

/// Where `completion_tokens` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TokenSource {
    /// The server's `usage` object.
    #[default]
    Server,
    /// Our tokenizer applied to the received text (the server sent no usage).
    Tokenizer,
}

/// One token-bearing chunk (SSE event) of a streamed response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// Arrival time of the bytes that completed this event, ns since run start.
    pub t_ns: u64,
    /// Which channel carried the generated text.
    pub channel: Channel,
    /// Tokens in this chunk when the server says (e.g. `continuous_usage_stats`); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
}

/// The record of one request (DESIGN.md §3). Serialized as one JSON object per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RequestRecord {
    /// Version of the record's layout (1), written first on every line of `requests.jsonl`
    /// (zero-sized; see [`crate::artifacts`]).
    #[serde(default)]
    pub schema_version: crate::artifacts::SchemaVersion<1>,
    /// Index of the request within the run (0-based, in schedule order; warmups have their own
    /// sequence in the same space, see `phase`).
    pub request_id: u64,
    /// Conversation / session id (AgentX lanes, multi-turn datasets); `None` for single-turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Turn index within the conversation (0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Warmup or profile.
    pub phase: Phase,
    /// True when the request completed with at least one token-bearing chunk and no error.
    pub success: bool,
    /// Error class when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    /// Human-readable error cause (status line + body excerpt, I/O error, …). Never contains the
    /// API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// HTTP status of the response head, when one arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// When the scheduler wanted to send the request (ns since run start): its arrival time
    /// under a request rate; in closed loop (no rate, a concurrency cap) the moment its slot
    /// became free (the previous request on it ended; the phase start for the first wave),
    /// DESIGN.md §4.
    pub scheduled_ns: u64,
    /// When the arrival process actually released the request (its timer fired; in closed
    /// loop, when its slot (worker) took it up), ns since run start; `released −
    /// scheduled` is the schedule lag, `sent − released` the wait for a concurrency slot. Optional: `None` when the loadgen does not record it (added by the
    /// workload/metrics work, serde-compatible with records that lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_ns: Option<u64>,
    /// When the request went out (ns since run start): the start of the write that put its
    /// first bytes into the kernel, on the connection that answered (before any byte was
    /// written: when it asked for a connection). `sent − scheduled` is the client queue time,
    /// so a write the client's own scheduling delayed is queue time, not TTFT (issue 14).
    pub sent_ns: u64,
    /// First response byte (status line) arrival.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ns: Option<u64>,
    /// First chunk carrying generated tokens, reasoning and tool calls included (TTFT end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_ns: Option<u64>,
    /// First chunk carrying visible content or a refusal (TTFO end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_output_token_ns: Option<u64>,
    /// Last token-bearing chunk (E2EL end; not the usage chunk or `[DONE]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_token_ns: Option<u64>,
    /// When the response ended (stream closed, error, timeout).
    pub end_ns: u64,
    /// When this process finished reading the response, when that differs in kind from
    /// `end_ns`: with kernel receive timestamps (`inferbench_client::rxstamp`) the record's
    /// times are when the bytes arrived, and `read_end − end` is how long the end waited for a
    /// busy client. `None` when times are read times (then it equals `end_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_end_ns: Option<u64>,
    /// Token-bearing chunks in arrival order. Empty for failed requests with no token.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<ChunkRecord>,
    /// Prompt tokens: server `usage.prompt_tokens` if given, else our client-side count.
    pub prompt_tokens: u32,
    /// Client-side prompt token count (what vLLM's `input_lens` reports).
    pub prompt_tokens_client: u32,
    /// Requested output length (`max_tokens`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Completion tokens (`usage.completion_tokens`, or tokenizer count of the received text).
    pub completion_tokens: u32,
    /// Where `completion_tokens` came from.
    pub completion_tokens_source: TokenSource,
    /// The server's `usage.completion_tokens` as sent when it is above `u32::MAX`: no count
    /// the record can hold, so not taken (`usage_invalid`, `completion_tokens` is the client's
    /// count; f14 item 2), never clamped; absent otherwise (trial of issue 39 §1–§3, finding 7:
    /// 10^12 was stored as 4294967295 with no trace of the real value). Tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_reported: Option<u64>,
    /// The client tokenizer's count of the streamed text (content, refusal, reasoning, plus
    /// the reasoning tokens the server's usage says it did not stream), counted only to judge
    /// the server's `usage` ([`crate::anomaly::Anomaly::UsageAboveStream`]): set when the
    /// server sent a completion count above what the chunks alone bound
    /// ([`crate::anomaly::stream_bound`] of the chunk count), the client has a tokenizer and
    /// the stream carried no tool call; absent (and omitted) otherwise. Tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_client: Option<u32>,
    /// Cached prompt tokens reported by the server (`usage.prompt_tokens_details.cached_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
    /// `finish_reason` of the last choice, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Visible output text (content channel only), kept for `--save-detailed` and evals.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_text: String,
    /// Implausible server-reported numbers of this request ([`crate::anomaly::detect`], issue
    /// 11); the request still counts as a success. Empty (and omitted) when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<crate::anomaly::Anomaly>,
    /// AgentX replay identity of the request (`inferbench replay`); `None` (and omitted) for
    /// every other workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agentic: Option<AgenticRef>,
    /// Token-bearing chunks that [`RequestRecord::compact`] dropped from `chunks` (their ITL
    /// gaps went to the run's on-disk ITL sample first); 0 for a full record. Never serialized:
    /// a records file always has every chunk.
    #[serde(skip)]
    pub compacted_chunks: u32,
    /// Token-bearing chunks that arrived and were counted but not kept in `chunks`: past the
    /// client's kept budget (`inferbench_client::kept::kept_chunks`, `max_tokens` + 16), only
    /// their number is kept, and the last token time (`last_token_ns`) is the last one's
    /// ([`crate::anomaly::Anomaly::OutputNotKept`]); 0 (omitted) when every chunk was kept.
    /// [`RequestRecord::chunk_count`] counts them.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub chunks_not_kept: u32,
    /// Bytes of generated text (all channels, as JSON writes them) that arrived and were
    /// counted but not kept: past the client's kept budget
    /// (`inferbench_client::kept::kept_text_bytes`, 32 × `max_tokens` + 1 KiB) `output_text`
    /// holds a prefix; when the server sent no usage, the tokenizer counted the rest as it
    /// streamed. 0 (omitted) when all of it was kept.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub text_bytes_not_kept: u64,
}

/// What an AgentX replay request was (reference/agentx.md §3, §4.2): its lane, session tree and
/// place in the trace. `conversation_id` holds the stream (`<trace>` or `<trace>::sa:<agent>`),
/// `turn` the request's index in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AgenticRef {
    /// Lane (0-based; `--concurrency` lanes, each one session tree at a time).
    pub lane: u32,
    /// Play serial, run-wide: one per session-tree replay (AIPerf's `root_correlation_id`).
    pub play: u32,
    /// Trace (session) id.
    pub trace_id: String,
    /// How many earlier plays of this trace the run made (recycle pass).
    pub pass: u32,
    /// `primer`, `warmup` or `profile`.
    pub kind: String,
    /// Leading hash blocks of the prompt already seen in the trace (theoretical prefix-cache
    /// hit, §2.10), blocks.
    pub hit_blocks: u32,
    /// Hash blocks of the prompt (`hash_ids` length), blocks.
    pub total_blocks: u32,
    /// Recorded output length (`out`), tokens; what a profile request asks for.
    pub expected_output_tokens: u32,
    /// Recorded input length (`in`), tokens: the synthesized prompt before chat template and
    /// cache-bust marker.
    pub expected_input_tokens: u32,
    /// The stream that spawned this request's stream (its conversation id: the main agent's
    /// for a sub-agent it spawned, the enclosing sub-agent's for a nested one); `None` (omitted)
    /// for the main agent, and in records written before it was kept (readers then take the
    /// main agent, `<trace>` of `<trace>::sa:<agent>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_stream: Option<String>,
    /// How much earlier than its recorded gap asked the idle-gap caps (reference/agentx.md §3.6:
    /// the per-tree cap, 300 s, and the whole-system cap, 10 s) moved this request's send, ns;
    /// 0 (omitted, and in older records) when no cap applied to it.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub gap_capped_ns: u64,
}

/// `skip_serializing_if` of a count that is omitted when 0.
fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

/// `skip_serializing_if` of a count that is omitted when 0.
fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

const NS_PER_MS: f64 = 1_000_000.0;

impl RequestRecord {
    /// Maps every timestamp of the record through `f` (ns since the run's start: scheduled,
    /// released, sent, first byte/token/output token, last token, end, read end and each
    /// chunk's arrival); counts, texts and errors are left alone. The one list of a record's
    /// times, for code that rescales (modelled time) or shifts them.
    pub fn map_times(&mut self, f: impl Fn(u64) -> u64) {
        let so = |t: Option<u64>| t.map(&f);
        self.scheduled_ns = f(self.scheduled_ns);
        self.released_ns = so(self.released_ns);
        self.sent_ns = f(self.sent_ns);
        self.first_byte_ns = so(self.first_byte_ns);
        self.first_token_ns = so(self.first_token_ns);
        self.first_output_token_ns = so(self.first_output_token_ns);
        self.last_token_ns = so(self.last_token_ns);
        self.end_ns = f(self.end_ns);
        self.read_end_ns = so(self.read_end_ns);
        for c in &mut self.chunks {
            c.t_ns = f(c.t_ns);
        }
    }

    /// TTFT in ms = first_token − sent (DESIGN.md §4). `None` without a token.
    pub fn ttft_ms(&self) -> Option<f64> {
        self.first_token_ns.map(|t| ns_diff_ms(t, self.sent_ns))
    }

    /// TTFO in ms = first_output_token − sent (reasoning excluded). `None` without visible content
    /// or refusal.
    pub fn ttfo_ms(&self) -> Option<f64> {
        self.first_output_token_ns
            .map(|t| ns_diff_ms(t, self.sent_ns))
    }

    /// E2EL in ms = last_token − sent (not the trailing usage chunk or `[DONE]`).
    pub fn e2el_ms(&self) -> Option<f64> {
        self.last_token_ns.map(|t| ns_diff_ms(t, self.sent_ns))
    }

    /// TPOT in ms = (E2EL − TTFT) / (completion_tokens − 1); `None` when ≤ 1 token (DESIGN.md §4).
    pub fn tpot_ms(&self) -> Option<f64> {
        if self.completion_tokens <= 1 {
            return None;
        }
        let (e2el, ttft) = (self.e2el_ms()?, self.ttft_ms()?);
        Some((e2el - ttft) / f64::from(self.completion_tokens - 1))
    }

    /// Token-bearing chunks that arrived: `chunks.len()` plus those counted but not kept
    /// ([`RequestRecord::chunks_not_kept`]), or the count a compacted record keeps.
    pub fn chunk_count(&self) -> usize {
        (self.chunks.len())
            .saturating_add(self.chunks_not_kept as usize)
            .max(self.compacted_chunks as usize)
    }

    /// Drops what only the records file needs, keeping every field the summary reads but ITL:
    /// `chunks` (their number stays in `compacted_chunks`) and `output_text`. What is left is a
    /// few hundred bytes whatever the output length (issue 14: ≤ 1 KiB per finished request
    /// kept in memory); take [`RequestRecord::itl_gaps_ns`] first.
    pub fn compact(&mut self) {
        self.compacted_chunks = u32::try_from(self.chunk_count()).unwrap_or(u32::MAX);
        self.chunks = Vec::new();
        self.output_text = String::new();
    }

    /// Inter-chunk gaps in ns between consecutive token-bearing chunks (saturating at 0); the
    /// exact values behind [`RequestRecord::itls_ms`].
    pub fn itl_gaps_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.chunks
            .windows(2)
            .map(|w| w[1].t_ns.saturating_sub(w[0].t_ns))
    }

    /// Inter-chunk gaps in ms between consecutive token-bearing chunks (vLLM's ITL, pooled by the
    /// caller over requests). `chunks.len() − 1` values.
    pub fn itls_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.itl_gaps_ns().map(|g| g as f64 / NS_PER_MS)
    }

    /// Client queue time in ms = sent − scheduled (coordinated-omission visibility).
    pub fn queue_ms(&self) -> f64 {
        ns_diff_ms(self.sent_ns, self.scheduled_ns)
    }
}

/// `(a − b)` in ms, saturating at 0 when `a < b`.
fn ns_diff_ms(a: u64, b: u64) -> f64 {
    a.saturating_sub(b) as f64 / NS_PER_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> RequestRecord {
        // sent at 1 ms, tokens at 11, 13, 16 ms → TTFT 10, E2EL 15, TPOT (15−10)/(3−1) = 2.5
        RequestRecord {
            scheduled_ns: 500_000,
            sent_ns: 1_000_000,
            first_token_ns: Some(11_000_000),
            first_output_token_ns: Some(13_000_000),
            last_token_ns: Some(16_000_000),
            end_ns: 17_000_000,
            completion_tokens: 3,
            success: true,
            chunks: [11, 13, 16]
                .iter()
                .map(|ms| ChunkRecord {
                    t_ns: ms * 1_000_000,
                    channel: Channel::Content,
                    tokens: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn per_request_latencies() {
        let r = rec();
        assert_eq!(r.ttft_ms(), Some(10.0));
        assert_eq!(r.ttfo_ms(), Some(12.0));
        assert_eq!(r.e2el_ms(), Some(15.0));
        assert_eq!(r.tpot_ms(), Some(2.5));
        assert_eq!(r.itls_ms().collect::<Vec<_>>(), vec![2.0, 3.0]);
        assert_eq!(r.queue_ms(), 0.5);
    }

    #[test]
    fn tpot_undefined_for_one_token() {
        let mut r = rec();
        r.completion_tokens = 1;
        assert_eq!(r.tpot_ms(), None);
    }

    #[test]
    fn json_round_trip_and_names() {
        let mut r = rec();
        r.success = false;
        r.error_class = Some(ErrorClass::TimeoutIdle);
        r.anomalies = vec![crate::anomaly::Anomaly::UsageExceedsMaxTokens];
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains("\"anomalies\":[\"usage_exceeds_max_tokens\"]"));
        assert!(s.contains("\"error_class\":\"timeout_idle\""));
        assert!(s.contains("\"completion_tokens_source\":\"server\""));
        assert!(s.contains("\"phase\":\"profile\""));
        let back: RequestRecord = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
    }

    /// An `agentic` block written before `parent_stream` and `gap_capped_ns` existed (older
    /// `requests.jsonl`, older databases) reads with them absent/0, and a request without them
    /// writes neither (files of main-agent, uncapped requests are as before).
    #[test]
    fn agentic_identity_reads_without_its_newer_fields() {
        let old = r#"{"lane":1,"play":2,"trace_id":"t","pass":0,"kind":"profile","hit_blocks":3,"total_blocks":4,"expected_output_tokens":5,"expected_input_tokens":6}"#;
        let a: AgenticRef = serde_json::from_str(old).unwrap();
        assert_eq!(a.parent_stream, None);
        assert_eq!(a.gap_capped_ns, 0);
        assert_eq!(a.hit_blocks, 3);
        assert_eq!(serde_json::to_string(&a).unwrap(), old);
        let nested = AgenticRef {
            parent_stream: Some("t::sa:a".into()),
            gap_capped_ns: 290_000_000_000,
            ..a
        };
        let v = serde_json::to_value(&nested).unwrap();
        assert_eq!(v["parent_stream"], "t::sa:a");
        assert_eq!(v["gap_capped_ns"], 290_000_000_000u64);
        assert_eq!(serde_json::from_value::<AgenticRef>(v).unwrap(), nested);
    }
}
