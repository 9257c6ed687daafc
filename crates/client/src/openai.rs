//! OpenAI-compatible request bodies and the interpretation of streamed responses
//! (`/v1/completions` and `/v1/chat/completions`).
//!
//! What counts as a token (DESIGN.md §4, reference/peers.md §4): a chunk carries generated tokens
//! when it has non-empty visible text (`choices[].text` or `delta.content`), non-empty refusal
//! text (`delta.refusal`, OpenAI's field for a declined answer), non-empty reasoning
//! (`delta.reasoning_content` or `delta.reasoning`) or a non-empty `delta.tool_calls`.
//! `delta.content` may also be an array of typed parts (Mistral, gpt-oss relays): text parts
//! are content, thinking parts reasoning. Every field is read typed (`lenient`'s readers):
//! null or absence is absent; a value of another type where the output is read fails the
//! request (`Interpreter::wrong_type`'s message, `stream_error`), one in the usage report or
//! llama.cpp's `timings` is `usage_invalid`; it never fails the chunk's parse. Role-only,
//! usage-only, finish-only and empty-text chunks, comments and `[DONE]` never count. TTFT ends at
//! the first token-bearing chunk of any channel; TTFO ends at the first visible one (content or
//! refusal: what a user is shown); the output text is the content only (a refusal is its own
//! channel, [`Channel::Refusal`], and never an answer to score). `usage.completion_tokens` gives
//! the token count (source `server`); without it the configured tokenizer counts the received
//! text (content, refusal and reasoning), plus one token per tool-call-only chunk (source
//! `tokenizer`).
//!
//! When a stream is complete ([`Interpreter::complete`]): it carried `[DONE]`, a real
//! `finish_reason` ([`is_finish_reason`]) on the requested choice, or a usage chunk with a
//! valid completion count after its last token. A stream whose body ends (cleanly or not)
//! without any of them was cut short, e.g. by a proxy that timed out its upstream: the request
//! fails as `stream_error`, never a shorter success. Tokens after `[DONE]` or after the
//! requested choice's `finish_reason` fail it too (one rule: nothing of an answer follows its
//! end).
//!
//! Only the requested choice is output (index 0, n = 1); data on another is the anomaly
//! `extra_choice` and is not counted. A usage count is a JSON non-negative integer literal
//! (`lenient::LCount`: no fraction, no exponent); any count of the report that is not is `usage_invalid`. Usage
//! above what the chunks alone bound is judged by the tokenizer's count of the text
//! ([`PendingCount`], `usage_above_stream`).

use inferbench_core::{Channel, ChunkRecord, ErrorClass, RequestRecord, TokenSource};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::kept::KeptBudget;
use crate::lenient::{self, LCount, LStr, Obj, ObjList, TextKind, TextWire, ToolCalls, WrongType};
use crate::sse::SseEvent;

/// Which OpenAI-compatible API the client speaks (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Backend {
    /// `POST /v1/completions` with `prompt` and `max_tokens` (`--backend openai`; vLLM's
    /// `openai`/`vllm` backends).
    #[default]
    OpenAiCompletions,
    /// `POST /v1/chat/completions` with `messages` and `max_completion_tokens`
    /// (`--backend openai-chat`).
    OpenAiChat,
    /// `POST /v1/responses` with `input` and `max_output_tokens`, streamed as typed events
    /// (`response.output_text.delta`, …, `response.completed` with usage): OpenAI's Responses
    /// API as vLLM and GuideLLM serve it (`--backend openai-responses`; [`crate::responses`]).
    OpenAiResponses,
}

impl Backend {
    /// The endpoint path used when `--endpoint` is not given.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            Backend::OpenAiCompletions => "/v1/completions",
            Backend::OpenAiChat => "/v1/chat/completions",
            Backend::OpenAiResponses => "/v1/responses",
        }
    }

    /// The `--backend` name (`openai`, `openai-chat` or `openai-responses`), as written to
    /// result files.
    pub fn name(self) -> &'static str {
        match self {
            Backend::OpenAiCompletions => "openai",
            Backend::OpenAiChat => "openai-chat",
            Backend::OpenAiResponses => "openai-responses",
        }
    }

    /// Parses a `--backend` name. `vllm`, `sglang` and `openai-completions` are accepted as
    /// aliases of `openai` (they share vLLM's completions client); `chat` of `openai-chat`;
    /// `responses` of `openai-responses`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "openai" | "vllm" | "sglang" | "openai-completions" => Some(Backend::OpenAiCompletions),
            "openai-chat" | "chat" => Some(Backend::OpenAiChat),
            "openai-responses" | "responses" => Some(Backend::OpenAiResponses),
            _ => None,
        }
    }
}

/// Which body field(s) carry the requested output length (`--max-tokens-field`). Some servers
/// honour only one of them (Ollama, llama-cpp-python #1907, LM Studio read only `max_tokens`;
/// OpenAI's chat API deprecated it for `max_completion_tokens`), so by default chat requests send
/// both with the same value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MaxTokensField {
    /// `max_tokens` and `max_completion_tokens`, equal.
    Both,
    /// `max_tokens` only (the completions API's field).
    MaxTokens,
    /// `max_completion_tokens` only.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The default for `backend`: [`MaxTokensField::Both`] for chat, [`MaxTokensField::MaxTokens`]
    /// for completions (the completions API defines only `max_tokens`). The Responses API has
    /// its own field, `max_output_tokens`, always sent (this setting does not apply to it).
    pub fn default_for(backend: Backend) -> Self {
        match backend {
            Backend::OpenAiCompletions | Backend::OpenAiResponses => MaxTokensField::MaxTokens,
            Backend::OpenAiChat => MaxTokensField::Both,
        }
    }

    /// Parses `both`, `max_tokens` or `max_completion_tokens` (`-` accepted for `_`).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().replace('-', "_").as_str() {
            "both" => Some(MaxTokensField::Both),
            "max_tokens" => Some(MaxTokensField::MaxTokens),
            "max_completion_tokens" => Some(MaxTokensField::MaxCompletionTokens),
            _ => None,
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            MaxTokensField::Both => &["max_tokens", "max_completion_tokens"],
            MaxTokensField::MaxTokens => &["max_tokens"],
            MaxTokensField::MaxCompletionTokens => &["max_completion_tokens"],
        }
    }
}

/// What one request asks for. Borrowed so that prompts (possibly 100k × 8k tokens) are not
/// copied per request.
#[derive(Debug, Clone, Copy)]
pub struct RequestInput<'a> {
    /// Prompt text: `prompt` for completions; the single user message for chat when `messages`
    /// is `None`.
    pub text: &'a str,
    /// Full chat `messages` array (multi-turn datasets); overrides `text` for chat.
    pub messages: Option<&'a Value>,
    /// Client-side prompt token count (vLLM's `input_lens`).
    pub prompt_tokens: u32,
    /// Requested output tokens (`max_tokens` / `max_completion_tokens`); `None` leaves it to
    /// the server.
    pub max_tokens: Option<u32>,
}

/// Builds the JSON request body. Streaming with `stream_options.include_usage` always (token
/// counts from the server, peers.md bug 21; the Responses API always reports usage on
/// `response.completed` and gets `input` (the messages, else the text) and `max_output_tokens`
/// instead); temperature 0 as vLLM's and InferenceX's clients;
/// the output length in the field(s) of `max_field` (`None` = [`MaxTokensField::default_for`]
/// the backend); `ignore_eos` only when set (vLLM/SGLang extension); `extra_body` keys are
/// merged last and override ours.
pub fn build_body(
    backend: Backend,
    model: &str,
    input: &RequestInput<'_>,
    ignore_eos: bool,
    max_field: Option<MaxTokensField>,
    extra_body: Option<&Map<String, Value>>,
) -> Vec<u8> {
    let max_field = max_field.unwrap_or(MaxTokensField::default_for(backend));
    let mut m = Map::new();
    m.insert("model".into(), Value::from(model));
    match backend {
        Backend::OpenAiCompletions => {
            m.insert("prompt".into(), Value::from(input.text));
        }
        Backend::OpenAiChat => {
            let messages = match input.messages {
                Some(v) => v.clone(),
                None => serde_json::json!([{"role": "user", "content": input.text}]),
            };
            m.insert("messages".into(), messages);
        }
        Backend::OpenAiResponses => {
            let items = match input.messages {
                Some(v) => v.clone(),
                None => Value::from(input.text),
            };
            m.insert("input".into(), items);
        }
    }
    if let Some(n) = input.max_tokens {
        if backend == Backend::OpenAiResponses {
            m.insert("max_output_tokens".into(), Value::from(n));
        } else {
            for k in max_field.keys() {
                m.insert((*k).into(), Value::from(n));
            }
        }
    }
    m.insert("temperature".into(), Value::from(0.0));
    m.insert("stream".into(), Value::Bool(true));
    if backend != Backend::OpenAiResponses {
        m.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    if ignore_eos {
        m.insert("ignore_eos".into(), Value::Bool(true));
    }
    if let Some(extra) = extra_body {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    serde_json::to_vec(&Value::Object(m)).unwrap_or_default()
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct ChunkWire<'a> {
    #[serde(default)]
    pub(crate) choices: ObjList<ChoiceWire<'a>>,
    /// `usage`: an object, or there but no object (`usage_invalid`).
    #[serde(default)]
    pub(crate) usage: Obj<UsageWire>,
    /// llama.cpp's `timings` (final chunk): `cache_n` = prompt tokens reused from its prompt
    /// cache, its only prefix-cache figure (no Prometheus counter; reference/targets.md §1c).
    /// There but no object, or a count in it that is not one: `usage_invalid`.
    #[serde(default)]
    pub(crate) timings: Obj<TimingsWire>,
    #[serde(default)]
    pub(crate) error: Option<IgnoredValue>,
    #[serde(default, borrow)]
    pub(crate) object: LStr<'a>,
    #[serde(default, borrow)]
    pub(crate) message: LStr<'a>,
}

impl ChunkWire<'_> {
    /// The first field of this chunk that holds a value of the wrong type where the output is
    /// read (issue 39's typed checks): `choices` not an array or an element not an object, a
    /// choice's `delta` / `message` not an object, its `finish_reason` not a string, a
    /// `tool_calls` fault ([`ToolCalls`]), the chunk's `object` not a string. Text fields are
    /// judged where they are taken ([`Interpreter::take_text`]); usage and timings faults are
    /// `usage_invalid`, not failures.
    pub(crate) fn wrong_type(&self) -> Option<WrongType> {
        if let Some((at, v)) = &self.choices.1 {
            let expected = if at.is_empty() {
                "an array"
            } else {
                "an object"
            };
            return Some(WrongType::new(format!("choices{at}"), v.clone(), expected));
        }
        if let Some(v) = &self.object.1 {
            return Some(WrongType::new("object", v.clone(), "a string"));
        }
        for (i, c) in self.choices.0.iter().enumerate() {
            let here = format!("choices[{i}]");
            if let Some(v) = &c.finish_reason.1 {
                let w = WrongType::new("finish_reason", v.clone(), "a string");
                return Some(w.under(&here));
            }
            for (name, d) in [("delta", &c.delta), ("message", &c.message)] {
                if let Some(v) = &d.1 {
                    return Some(WrongType::new(name, v.clone(), "an object").under(&here));
                }
                if let Some(bad) = d.0.as_ref().and_then(|d| d.tool_calls.bad.clone()) {
                    return Some(bad.under(&format!("{here}.{name}")));
                }
            }
        }
        None
    }
}

/// An `error` field's presence (its value is reported from the raw data).
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct IgnoredValue;

impl<'de> Deserialize<'de> for IgnoredValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| IgnoredValue)
    }
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct ChoiceWire<'a> {
    #[serde(default, borrow)]
    pub(crate) text: TextWire<'a>,
    #[serde(default, borrow)]
    pub(crate) delta: Obj<DeltaWire<'a>>,
    /// Non-streaming chat responses carry `message` instead of `delta`.
    #[serde(default, borrow)]
    pub(crate) message: Obj<DeltaWire<'a>>,
    #[serde(default, borrow)]
    pub(crate) finish_reason: LStr<'a>,
    /// The choice's `index` (absent: by its position).
    #[serde(default)]
    pub(crate) index: LCount,
}

impl ChoiceWire<'_> {
    /// Whether this choice, one of `of` choices in its chunk, is the requested one (n = 1):
    /// an explicit `index: 0`, or the only choice of its chunk when it has no index. A choice
    /// with another index, a negative or non-count index, or no index beside other choices is
    /// not (trial of issue 39, finding 4: a choice without index beside `index: 0` was merged
    /// into the output, and a `finish_reason` on `index: -1` ended the stream).
    pub(crate) fn requested(&self, of: usize) -> bool {
        match &self.index {
            LCount(Some(i), _) => *i == 0,
            LCount(None, true) => false,
            LCount(None, false) => of == 1,
        }
    }

    /// Whether this choice carries anything of an answer: tokens
    /// ([`ChoiceWire::carries_tokens`]) or a real `finish_reason` ([`is_finish_reason`]).
    pub(crate) fn carries_data(&self) -> bool {
        self.carries_tokens() || self.finish_reason.as_deref().is_some_and(is_finish_reason)
    }

    /// Whether this choice carries tokens: non-empty text on any channel, or tool calls.
    pub(crate) fn carries_tokens(&self) -> bool {
        let deltas = [&self.delta.0, &self.message.0].into_iter().flatten();
        let fields = std::iter::once(&self.text).chain(
            deltas
                .clone()
                .flat_map(|d| [&d.content, &d.refusal, &d.reasoning_content, &d.reasoning]),
        );
        let mut text = false;
        for f in fields {
            match f {
                TextWire::None => {}
                TextWire::NotText(_) => text = true,
                TextWire::Str(s) => text |= !s.is_empty(),
                TextWire::Parts(parts) => {
                    for p in parts {
                        // Not text is something sent where text belongs, as `NotText`.
                        text |= lenient::part_texts(p, TextKind::Content, &mut |_, t| {
                            text |= !t.is_empty()
                        })
                        .is_err();
                    }
                }
            }
        }
        text || deltas.into_iter().any(|d| d.tool_calls.any)
    }
}

/// `finish_reason` values that say "no reason", after normalizing ([`is_finish_reason`]): the
/// empty string, `null` (a JSON null written as text, or JavaScript's `String(null)`), `nil`
/// (Go's `<nil>`, Ruby's and Lua's nil), `none` (Python's `str(None)`: a server that formats a
/// missing reason), `undefined` (JavaScript's `String(undefined)`), `nan`, `false`,
/// `nullptr` and `nothing`. Real servers send JSON `null` while
/// streaming and a word at the end (vLLM, SGLang, TRT-LLM: `stop`, `length`, `abort`,
/// `tool_calls`; llama.cpp: `stop`, `length`; OpenAI also `content_filter`,
/// `function_call`); none of them uses one of these words as a reason (issue 39, finding 5).
pub const NO_FINISH_REASON: &[&str] = &[
    "",
    "null",
    "nil",
    "none",
    "undefined",
    "nan",
    "false",
    "nullptr",
    "nothing",
];

/// Whether `f` is a real `finish_reason` (issue 39, fresh tester's finding 5c: `"None."` was
/// one). Normalized (every character that is not a letter or digit trimmed from both ends:
/// whitespace, zero-width and other format characters, quotes, brackets, punctuation; then
/// ASCII-lowercased), a real reason is one word of an identifier's shape: an ASCII letter,
/// then ASCII letters, digits, `_` or `-` (`stop`, `tool_calls`, `end_turn`, `eos`,
/// `stop-sequence`), and not one of [`NO_FINISH_REASON`]. Any such word counts, known or not
/// (servers name their own); a sentence, a number, `n/a` or a non-ASCII word is no reason.
/// Only a real reason on the requested choice ends a stream.
pub fn is_finish_reason(f: &str) -> bool {
    finish_reason_word(f).is_some()
}

/// The real `finish_reason` in `f` as it is stored (the record's `finish_reason`) and
/// compared: its normalized word ([`is_finish_reason`]: `"\u{200b}stop\u{200b}"`,
/// `" Stop. "` → `stop`), or `None` when `f` is no reason. A reason is stored so, never raw
/// (f14 item 3: `"\u{200b}stop\u{200b}"` was accepted and stored with its zero-width
/// spaces, so it matched no `stop` or `length` downstream). The Responses API's `status` and
/// `incomplete_details.reason` are read by the same rule.
pub fn finish_reason_word(f: &str) -> Option<String> {
    let norm = f
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_ascii_lowercase();
    let mut chars = norm.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (shaped && !NO_FINISH_REASON.contains(&norm.as_str())).then_some(norm)
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct DeltaWire<'a> {
    #[serde(default, borrow)]
    pub(crate) content: TextWire<'a>,
    #[serde(default, borrow)]
    pub(crate) reasoning_content: TextWire<'a>,
    #[serde(default, borrow)]
    pub(crate) reasoning: TextWire<'a>,
    #[serde(default)]
    pub(crate) tool_calls: ToolCalls,
    /// OpenAI's `delta.refusal`: the model declined; its text is generated output.
    #[serde(default, borrow)]
    pub(crate) refusal: TextWire<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct UsageWire {
    #[serde(default)]
    pub(crate) prompt_tokens: LCount,
    #[serde(default)]
    pub(crate) completion_tokens: LCount,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Obj<DetailsWire>,
    /// Read only to be judged: a value that is not a count is `usage_invalid` too.
    #[serde(default)]
    pub(crate) total_tokens: LCount,
    #[serde(default)]
    pub(crate) completion_tokens_details: Obj<CompletionDetailsWire>,
}

impl UsageWire {
    /// Every count above `u32::MAX` made no count ([`LCount::representable`]); returns
    /// `completion_tokens` as sent when it was one of them.
    pub(crate) fn representable(&mut self) -> Option<u64> {
        let (c, big) = self.completion_tokens.representable();
        self.completion_tokens = c;
        self.prompt_tokens = self.prompt_tokens.representable().0;
        self.total_tokens = self.total_tokens.representable().0;
        if let Some(d) = self.prompt_tokens_details.0.as_mut() {
            d.cached_tokens = d.cached_tokens.representable().0;
        }
        if let Some(d) = self.completion_tokens_details.0.as_mut() {
            d.reasoning_tokens = d.reasoning_tokens.representable().0;
        }
        big
    }

    /// A count in this usage was there but not a non-negative integer (`usage_invalid`):
    /// `prompt_tokens`, `completion_tokens`, `total_tokens`,
    /// `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`;
    /// or one of the two details was there but no object (`"prompt_tokens_details": 7`).
    pub(crate) fn invalid(&self) -> bool {
        self.prompt_tokens.1
            || self.completion_tokens.1
            || self.total_tokens.1
            || self.prompt_tokens_details.is_bad()
            || self.completion_tokens_details.is_bad()
            || self
                .prompt_tokens_details
                .0
                .as_ref()
                .is_some_and(|d| d.cached_tokens.1)
            || (self.completion_tokens_details.0.as_ref()).is_some_and(|d| d.reasoning_tokens.1)
    }
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct CompletionDetailsWire {
    /// Tokens of reasoning the server generated (hidden when it streams none).
    #[serde(default)]
    pub(crate) reasoning_tokens: LCount,
}

/// llama.cpp's `timings`: its token counts, each read as a count ([`LCount`]; `-1`, llama-server's
/// "not measured", is absent: [`crate::lenient::timings_count`]); only `cache_n` is used, every
/// one is judged (a count that is not one, or one above `u32::MAX`, is
/// `usage_invalid`, never clamped: issue 39's typed checks).
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct TimingsWire {
    #[serde(default, deserialize_with = "crate::lenient::timings_count")]
    pub(crate) cache_n: LCount,
    #[serde(default, deserialize_with = "crate::lenient::timings_count")]
    pub(crate) prompt_n: LCount,
    #[serde(default, deserialize_with = "crate::lenient::timings_count")]
    pub(crate) predicted_n: LCount,
    #[serde(default, deserialize_with = "crate::lenient::timings_count")]
    pub(crate) draft_n: LCount,
    #[serde(default, deserialize_with = "crate::lenient::timings_count")]
    pub(crate) draft_n_accepted: LCount,
}

impl TimingsWire {
    /// A count of it that is there but no count the record can hold (`usage_invalid`).
    pub(crate) fn invalid(&self) -> bool {
        [
            self.cache_n,
            self.prompt_n,
            self.predicted_n,
            self.draft_n,
            self.draft_n_accepted,
        ]
        .iter()
        .any(|c| c.unusable())
    }
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct DetailsWire {
    #[serde(default)]
    pub(crate) cached_tokens: LCount,
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Counts tokens of received text when the server sends no usage (the tokenizer fallback).
/// Called through [`count_tokens`], which bounds the text per call and catches panics.
pub type TokenCounter = dyn Fn(&str) -> usize + Send + Sync;

/// Target size of one piece handed to the [`TokenCounter`], bytes.
pub const COUNT_PIECE_BYTES: usize = 4096;

/// Size of the pieces a stretch of [`COUNT_PIECE_BYTES`] without any word boundary is cut
/// into, bytes. BPE merging is quadratic in a pre-tokenized word's length (1M repeated
/// characters are one "word"), so this bounds the work per byte.
pub const COUNT_HARD_PIECE_BYTES: usize = 256;

/// Counts the tokens of `text` with `counter` in time linear in `text.len()`, never unwinding.
///
/// The text is cut into pieces of at most [`COUNT_PIECE_BYTES`] before a space that follows a
/// non-space byte. For the embedded tiktoken encodings (and Llama-3-style pre-tokenizers) such
/// a point is always a pre-tokenization boundary, so the sum equals the count of the whole
/// text. A stretch of that length with no such point (a degenerate repetition) is cut into
/// [`COUNT_HARD_PIECE_BYTES`] pieces at character boundaries; that may add about one token per
/// cut, only for such stretches. `None` when `counter` panicked on a piece (the caller keeps
/// its own estimate).
pub fn count_tokens(counter: &TokenCounter, text: &str) -> Option<usize> {
    let mut total = 0usize;
    let mut ok = true;
    for_each_piece(text, |piece| {
        if !ok {
            return;
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| counter(piece))) {
            Ok(n) => total = total.saturating_add(n),
            Err(_) => ok = false,
        }
    });
    ok.then_some(total)
}

/// Calls `f` on consecutive pieces of `text` that concatenate to `text` (see [`count_tokens`]).
fn for_each_piece(text: &str, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    let mut pos = 0;
    while b.len() - pos > COUNT_PIECE_BYTES {
        let end = pos + COUNT_PIECE_BYTES;
        // The last space in (pos, end] whose previous byte is not whitespace.
        let cut = memchr::memrchr_iter(b' ', &b[pos + 1..=end])
            .map(|i| pos + 1 + i)
            .find(|&i| !b[i - 1].is_ascii_whitespace());
        match cut {
            Some(c) => {
                f(&text[pos..c]);
                pos = c;
            }
            None => {
                let end = floor_boundary(text, end);
                while pos < end {
                    let mut e = floor_boundary(text, (pos + COUNT_HARD_PIECE_BYTES).min(end));
                    if e <= pos {
                        e = ceil_boundary(text, pos + 1);
                    }
                    f(&text[pos..e]);
                    pos = e;
                }
            }
        }
    }
    if pos < b.len() {
        f(&text[pos..]);
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Text still to be counted after the stream. Returned by [`Interpreter::finish_usage`] when
/// the server sent no `usage` (the count is the completion tokens), or when its completion
/// count is above what the chunks alone bound (the count judges it: `usage_above_stream`);
/// run [`PendingCount::count`] where it delays no I/O (the client uses a blocking-pool
/// thread), then store the result with [`PendingCount::apply`].
#[derive(Debug)]
pub struct PendingCount {
    /// The server's usage gave the completion tokens; the count only judges it.
    check_usage: bool,
    /// Reasoning tokens the server's usage reports and the stream did not show (no reasoning
    /// text arrived), added to the count that judges the usage.
    hidden_reasoning: u32,
    reasoning: String,
    /// Refusal text (`delta.refusal`), counted like content.
    refusal: String,
    /// Token-bearing chunks whose tokens are tool calls only (no text to count).
    tool_chunks: usize,
    /// Tokens of the text that was not kept ([`crate::kept`]), counted chunk by chunk as it
    /// streamed; `None` when the counter failed on it (or there was none while text was
    /// dropped): the count then stands on the chunks.
    not_kept_tokens: Option<usize>,
    /// Token-bearing chunks the record counted, kept or not.
    chunks: u32,
}

impl PendingCount {
    /// Tokens of `output_text` plus the refusal and reasoning text, via [`count_tokens`]
    /// (linear time, no unwinding), plus those of the text not kept (counted as it streamed,
    /// each chunk's text alone: a token split across two chunks' texts, or across the end of
    /// the kept text, may count once on each side, so at most one token per chunk past the
    /// kept budget above the whole text's count), plus one per tool-call-only chunk (their arguments are not
    /// kept, and every token-bearing chunk carries at least one token: a lower bound; a
    /// tool-call-only stream used to count 0, break test of issue 14); `None` when the counter
    /// panicked.
    pub fn count(&self, output_text: &str, counter: &TokenCounter) -> Option<usize> {
        let mut n = count_tokens(counter, output_text)?.saturating_add(self.not_kept_tokens?);
        for other in [&self.refusal, &self.reasoning] {
            if !other.is_empty() {
                n = n.saturating_add(count_tokens(counter, other)?);
            }
        }
        Some(n.saturating_add(self.tool_chunks))
    }

    /// Whether the count only judges the server's usage (it gave the completion tokens).
    pub fn judges_usage(&self) -> bool {
        self.check_usage
    }

    /// Stores `n`, the [`PendingCount::count`], raised to the number of token-bearing chunks:
    /// a server sends a chunk per decode step, so a stream of N token-bearing chunks generated
    /// at least N tokens, whatever another tokenizer makes of their joined text (issue 39,
    /// fresh tester's finding 3: 10 chunks of `x` counted 2 tokens, TPOT 186 ms beside ITL
    /// 20 ms; the rule `usage_below_stream` holds the server's usage to, and the count without
    /// a tokenizer). Stored as the completion tokens when the server sent no usage; else as
    /// `completion_tokens_client` (plus the reasoning tokens the usage reports and the stream
    /// did not show), which [`inferbench_core::anomaly::detect`] compares with the usage.
    pub fn apply(&self, n: usize, rec: &mut RequestRecord) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        let streamed = n.max(self.chunks);
        if self.check_usage {
            rec.completion_tokens_client = Some(streamed.saturating_add(self.hidden_reasoning));
        } else {
            rec.completion_tokens = streamed;
        }
    }
}

/// Turns the events of one streamed response into the fields of a [`RequestRecord`].
///
/// Feed every event with the arrival time of the bytes that completed it; after a failure or
/// `[DONE]` further events are ignored. At the body's end, [`Interpreter::complete`] says
/// whether the server ended the response; then call [`Interpreter::finish`] (or
/// [`Interpreter::finish_usage`]) once.
#[derive(Debug, Default)]
pub struct Interpreter {
    /// `[DONE]` was seen.
    pub done: bool,
    /// Arrival time of `[DONE]`, ns since run start.
    pub done_ns: Option<u64>,
    /// The first failure (`event: error`, an error object, undecodable data).
    pub failure: Option<(ErrorClass, String)>,
    usage_completion: Option<u32>,
    /// `usage.completion_tokens` as sent, when above `u32::MAX` (no count: not taken).
    usage_completion_big: Option<u64>,
    /// A usage count that was there but not a non-negative integer (`usage_invalid`).
    usage_invalid: bool,
    usage_prompt: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens` (Responses:
    /// `output_tokens_details.reasoning_tokens`): generated tokens the stream may not show.
    usage_reasoning: Option<u32>,
    /// A choice other than the requested one (index ≠ 0) carried text, tool calls or a
    /// `finish_reason` (`extra_choice`).
    extra_choice: bool,
    /// Cumulative completion tokens of the last token-bearing chunk that carried usage
    /// (`continuous_usage_stats`), for per-chunk token counts.
    last_cum_completion: u32,
    /// A chunk carried a real `finish_reason` on the requested choice: the answer ended there,
    /// and tokens after it fail the request (as tokens after `[DONE]` do).
    finish_seen: bool,
    /// The last token-less chunk after the last token carried usage whose
    /// `completion_tokens` was there but not a count (`usage_invalid`): the excerpt of that
    /// chunk, named when the stream ends without a terminal signal (a usage chunk did arrive;
    /// it was not a count).
    invalid_usage_tail: Option<String>,
    /// The last chunk that carried `usage` carried no token, and no token-bearing chunk came
    /// after it: the stream's usage chunk (vLLM's `continuous_usage_stats` puts usage on every
    /// chunk, the role chunk included, so usage before or on a token ends nothing).
    usage_tail: bool,
    /// Reasoning text, kept only for the tokenizer fallback.
    reasoning: String,
    /// Refusal text, kept only for the tokenizer fallback.
    refusal: String,
    /// A lone high surrogate that ended the last visible text (its low half may start the
    /// next chunk's text).
    pending_content: Option<u32>,
    /// The same for the reasoning text.
    pending_reasoning: Option<u32>,
    /// The same for the refusal text.
    pending_refusal: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens` was seen (it wins over llama.cpp timings).
    usage_cached: bool,
    /// The stream is a Responses API stream ([`crate::responses`]): typed events, complete
    /// only on `response.completed`.
    pub(crate) responses: bool,
    /// `response.completed` (or a `response.incomplete` for `max_output_tokens`) was seen.
    pub(crate) responses_completed: bool,
    /// Which of the two it was (for messages).
    pub(crate) responses_terminal: &'static str,
    /// `--allow-empty-content`: the first chunk with a content field, even an empty one, ends
    /// TTFT (and TTFO); it carries no token and adds no chunk.
    pub(crate) allow_empty_content: bool,
    /// What the record keeps ([`crate::kept`]); `None` without a `max_tokens`.
    kept: Option<KeptBudget>,
    /// The response's chunk cap ([`crate::http::ResponseCap::chunks`]): the token-bearing
    /// chunk past it cuts the response off, not counted.
    cut: Option<crate::http::ResponseCap>,
    /// Counts the text not kept as it streams (the client's tokenizer).
    counter: Option<Counter>,
    /// Generated text so far over every channel, bytes as JSON writes them
    /// ([`crate::kept::json_text_len`]), kept or not; measured only with a kept budget.
    pub(crate) text_bytes: u64,
    /// The part of it kept in the record (`output_text`, and the refusal and reasoning text).
    kept_text: u64,
    /// Text was dropped: nothing more is kept (the kept text stays one prefix).
    text_full: bool,
    /// Token-bearing chunks counted but not kept (`chunks_not_kept`).
    chunks_not_kept: u64,
    /// Those of them whose tokens are tool calls only.
    tool_chunks_not_kept: usize,
    /// Tokens of the dropped text, counted chunk by chunk; `None` once the counter failed on
    /// one (or text was dropped with no counter).
    not_kept_tokens: Option<usize>,
}

/// Runs `count` (tokenizing text that is not kept, as it streams) where it stalls no other
/// stream: on a multi-thread runtime's worker through `block_in_place` (the runtime hands this
/// worker's other tasks to another thread meanwhile; the handed case
/// `degenerate-output-without-usage` made other streams' TTFT 30 ms late when counted inline),
/// elsewhere (a current-thread runtime, no runtime) inline. Nothing is copied: the text is
/// counted where it lies.
fn count_off_io<T>(count: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(count)
        }
        _ => count(),
    }
}

/// The token counter an [`Interpreter`] counts dropped text with.
#[derive(Clone)]
struct Counter(std::sync::Arc<TokenCounter>);

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Counter")
    }
}

/// Appends `s` to `dst`. `relaxed`: `s` came through [`lenient::relax`] and may start with a
/// lone low surrogate sentinel (joined with `pending`, the lone high surrogate that ended the
/// previous text) or end with a lone high one (kept in `pending`). A lone half that finds no
/// partner becomes U+FFFD.
fn push_text(dst: &mut String, pending: &mut Option<u32>, s: &str, relaxed: bool) {
    if !relaxed {
        if pending.take().is_some() {
            dst.push('\u{FFFD}');
        }
        dst.push_str(s);
        return;
    }
    let mut s = s;
    if let Some(c) = s.chars().next() {
        if let Some(lo) = lenient::as_low(c) {
            match pending.take() {
                Some(hi) => dst.push(lenient::join_pair(hi, lo)),
                None => dst.push('\u{FFFD}'),
            }
            s = &s[c.len_utf8()..];
        }
    }
    if pending.take().is_some() {
        dst.push('\u{FFFD}');
    }
    if let Some(c) = s.chars().next_back() {
        if let Some(hi) = lenient::as_high(c) {
            *pending = Some(hi);
            s = &s[..s.len() - c.len_utf8()];
        }
    }
    dst.push_str(s);
}

impl Interpreter {
    /// A fresh interpreter for one response (completions or chat chunks).
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh interpreter for one response of `backend` (Responses API events for
    /// [`Backend::OpenAiResponses`]); `allow_empty_content`: the first content field, even an
    /// empty one, ends TTFT (`--allow-empty-content`; TRT-LLM streams that open with an empty
    /// content chunk).
    pub fn for_backend(backend: Backend, allow_empty_content: bool) -> Self {
        Self {
            responses: backend == Backend::OpenAiResponses,
            allow_empty_content,
            not_kept_tokens: Some(0),
            ..Self::default()
        }
    }

    /// Bounds what the record keeps for a request for `max_tokens` tokens ([`crate::kept`]:
    /// chunk entries and text past the budget are counted, not kept) and cuts the response off
    /// at its chunk cap ([`crate::http::ResponseCap`]); `counter` tokenizes the text not kept
    /// as it streams (the tokenizer fallback when no usage comes). Without `max_tokens`
    /// everything is kept.
    pub fn keeping(
        mut self,
        max_tokens: Option<u32>,
        counter: Option<std::sync::Arc<TokenCounter>>,
    ) -> Self {
        self.kept = max_tokens.map(KeptBudget::of);
        self.cut = max_tokens.map(crate::http::ResponseCap::of);
        self.counter = counter.map(Counter);
        self.not_kept_tokens = Some(0);
        self
    }

    /// Fails the response: a token-bearing chunk came past `cap`'s chunks.
    fn cut_off(&mut self, cap: crate::http::ResponseCap) {
        if let Some(why) = cap.passed(0, cap.chunks.saturating_add(1), 0) {
            self.fail(ErrorClass::StreamError, why);
        }
    }

    /// Token-bearing chunks so far, kept or not.
    pub fn chunks_counted(&self, rec: &RequestRecord) -> u64 {
        (rec.chunks.len() as u64).saturating_add(self.chunks_not_kept)
    }

    /// Generated text so far over every channel, kept or not, bytes as JSON writes them.
    pub fn text_bytes(&self) -> u64 {
        self.text_bytes
    }

    /// Counts `rest`, generated text past the kept budget: its bytes, and its tokens with the
    /// counter (alone: see [`PendingCount::count`] for the rounding).
    fn drop_text(&mut self, rest: &str, rec: &mut RequestRecord) {
        self.text_full = true;
        rec.text_bytes_not_kept = rec
            .text_bytes_not_kept
            .saturating_add(crate::kept::json_text_len(rest));
        self.not_kept_tokens = match (self.not_kept_tokens, &self.counter) {
            (Some(n), Some(c)) => {
                count_off_io(|| count_tokens(&*c.0, rest)).map(|k| n.saturating_add(k))
            }
            _ => None,
        };
    }

    /// Whether the events so far end a complete response: `[DONE]`, a `finish_reason`, or a
    /// usage chunk after the last token (the server's own end of the answer). A stream whose
    /// body ends without one was cut short (a proxy or load balancer that timed out its
    /// upstream closes the body cleanly): a failure ([`INCOMPLETE_STREAM`]), not a shorter
    /// answer. `finish_reason` and usage without `[DONE]` is complete (some servers omit it).
    pub fn complete(&self) -> bool {
        if self.responses {
            return self.responses_completed;
        }
        self.done || self.finish_seen || self.usage_tail
    }

    pub(crate) fn fail(&mut self, class: ErrorClass, msg: String) {
        if self.failure.is_none() {
            self.failure = Some((class, msg));
        }
    }

    /// Handles one SSE event that arrived at `t_ns` (ns since run start).
    pub fn on_event(&mut self, ev: SseEvent<'_>, t_ns: u64, rec: &mut RequestRecord) {
        if self.failure.is_some() {
            return;
        }
        if self.done {
            return self.after_terminal(ev);
        }
        if ev.event == b"error" {
            let msg = String::from_utf8_lossy(excerpt(ev.data)).into_owned();
            self.fail(ErrorClass::StreamError, format!("event: error: {msg}"));
            return;
        }
        let data = trim_ascii(ev.data);
        if data.is_empty() {
            return;
        }
        if self.responses {
            return crate::responses::on_data(self, ev.event, data, t_ns, rec);
        }
        if data == b"[DONE]" {
            self.done = true;
            self.done_ns = Some(t_ns);
            return;
        }
        self.on_json(data, t_ns, rec);
    }

    /// An event after the stream's terminal signal (`[DONE]`; Responses: `response.completed`
    /// or `response.incomplete`): nothing of it is taken, and tokens there (text on any
    /// channel or tool calls, on the requested choice) fail the request (`stream_error`): the
    /// answer went on past its end, so the measured one is not the server's whole answer
    /// (issue 39, finding 6; as tokens after a `finish_reason` do).
    fn after_terminal(&mut self, ev: SseEvent<'_>) {
        let data = trim_ascii(ev.data);
        let tokens = if self.responses {
            crate::responses::carries_tokens(ev.event, data)
        } else {
            chunk_carries_tokens(data)
        };
        if tokens {
            let msg = format!(
                "tokens after {}: {}",
                self.terminal_signal().unwrap_or("the end"),
                String::from_utf8_lossy(excerpt(data))
            );
            self.fail(ErrorClass::StreamError, msg);
        }
    }

    /// The terminal signal this stream carried, as its backend names it: `[DONE]`
    /// (completions, chat), `response.completed` or `response.incomplete` (Responses); `None`
    /// before one.
    pub fn terminal_signal(&self) -> Option<&'static str> {
        match (self.done, self.responses) {
            (false, _) => None,
            (true, false) => Some("[DONE]"),
            (true, true) => Some(self.responses_terminal),
        }
    }

    /// The message of a stream of this backend that ended without a terminal signal:
    /// [`INCOMPLETE_STREAM`] (completions, chat) or [`INCOMPLETE_RESPONSES_STREAM`]; when the
    /// stream's last chunk was a usage chunk whose `completion_tokens` is not a count
    /// (`usage_invalid`), [`INCOMPLETE_STREAM`] followed by [`INVALID_USAGE_END`] and that
    /// chunk (a usage chunk did arrive: it was no count, so it ended nothing).
    pub fn incomplete_message(&self) -> String {
        if self.responses {
            INCOMPLETE_RESPONSES_STREAM.to_string()
        } else if let Some(d) = &self.invalid_usage_tail {
            format!("{INCOMPLETE_STREAM}{INVALID_USAGE_END}{d}")
        } else {
            INCOMPLETE_STREAM.to_string()
        }
    }

    /// Handles one JSON object (a `data:` payload, or a whole non-streaming response body).
    /// The usual chunk shape is read in one pass (`fastchunk`, exactly as strict `serde_json`
    /// reads it); anything else goes to strict `serde_json`, and a chunk that rejects is
    /// retried with what Python's `json`
    /// accepts (lone surrogates, `NaN`, duplicate keys, raw control characters) before it
    /// counts as `malformed`.
    pub fn on_json(&mut self, data: &[u8], t_ns: u64, rec: &mut RequestRecord) {
        if self.responses {
            return crate::responses::on_data(self, b"", data, t_ns, rec);
        }
        // The usual shape in one pass (`fastchunk`); anything else takes serde's path below.
        if let Some(c) = crate::fastchunk::parse(data) {
            return self.apply(c, false, data, t_ns, rec);
        }
        let err = match serde_json::from_slice::<ChunkWire<'_>>(data) {
            Ok(c) => return self.apply(c, false, data, t_ns, rec),
            Err(e) => e,
        };
        let Ok(text) = std::str::from_utf8(data) else {
            self.fail(
                ErrorClass::Malformed,
                format!(
                    "invalid UTF-8 in event data ({err}): {}",
                    String::from_utf8_lossy(excerpt(data))
                ),
            );
            return;
        };
        if let Some(v) = lenient::parse_relaxed(text) {
            if let Ok(c) = ChunkWire::deserialize(&v) {
                return self.apply(c, true, data, t_ns, rec);
            }
        }
        self.fail(
            ErrorClass::Malformed,
            format!(
                "undecodable JSON in event data ({err}): {}",
                String::from_utf8_lossy(excerpt(data))
            ),
        );
    }

    fn apply(
        &mut self,
        mut chunk: ChunkWire<'_>,
        relaxed: bool,
        data: &[u8],
        t_ns: u64,
        rec: &mut RequestRecord,
    ) {
        if chunk.error.is_some() {
            let v: Option<Value> = serde_json::from_slice::<Value>(data).ok().or_else(|| {
                std::str::from_utf8(data)
                    .ok()
                    .and_then(lenient::parse_relaxed)
            });
            let msg = v
                .as_ref()
                .and_then(|v| v.get("error"))
                .map_or_else(|| "?".to_string(), |e| e.to_string());
            let msg: String = msg.chars().take(512).collect();
            self.fail(ErrorClass::StreamError, format!("error object: {msg}"));
            return;
        }
        if chunk.object.as_deref() == Some("error") {
            let msg = chunk.message.as_deref().unwrap_or("");
            self.fail(ErrorClass::StreamError, format!("error object: {msg}"));
            return;
        }
        // A field of the wrong type where the output is read: the output cannot be read.
        if let Some(w) = chunk.wrong_type() {
            return self.wrong_type(&w);
        }
        let of = chunk.choices.0.len();
        // The answer ended at its finish_reason: tokens after it (on the requested choice) fail
        // the request as tokens after `[DONE]` do, nothing of them taken (issue 39, fresh
        // tester's finding 5e: a finish_reason on the role chunk, then three tokens and
        // `[DONE]`, succeeded with finish_reason null).
        if self.finish_seen
            && (chunk.choices.0.iter()).any(|c| c.requested(of) && c.carries_tokens())
        {
            let msg = format!(
                "tokens after finish_reason {:?}: {}",
                rec.finish_reason.as_deref().unwrap_or(""),
                String::from_utf8_lossy(excerpt(data))
            );
            self.fail(ErrorClass::StreamError, msg);
            return;
        }
        let mut here = Here::default();
        let mut finish_here = false;
        for choice in &chunk.choices.0 {
            // Only the requested choice is output ([`ChoiceWire::requested`]). Data on any
            // other is `extra_choice`, never counted (issue 39, finding 7).
            if !choice.requested(of) {
                self.extra_choice |= choice.carries_data();
                continue;
            }
            self.take_text(&choice.text, TextKind::Content, relaxed, rec, &mut here);
            for d in [&choice.delta.0, &choice.message.0].into_iter().flatten() {
                self.take_text(&d.content, TextKind::Content, relaxed, rec, &mut here);
                self.take_text(&d.refusal, TextKind::Refusal, relaxed, rec, &mut here);
                for r in [&d.reasoning_content, &d.reasoning] {
                    self.take_text(r, TextKind::Reasoning, relaxed, rec, &mut here);
                }
                if d.tool_calls.any {
                    here.tool = true;
                }
            }
            // Only the requested choice ends the stream, and only with a reason
            // ([`is_finish_reason`]): trial of issue 39 §1–§3, finding 6.
            if let Some(f) = choice.finish_reason.as_deref().and_then(finish_reason_word) {
                rec.finish_reason = Some(f);
                finish_here = true;
            }
        }
        let token_bearing = here.content || here.refusal || here.reasoning || here.tool;
        if !token_bearing && self.allow_empty_content {
            let empty_content = chunk.choices.0.iter().any(|c| {
                c.requested(of)
                    && (matches!(c.text, TextWire::Str(_))
                        || [&c.delta.0, &c.message.0]
                            .into_iter()
                            .flatten()
                            .any(|d| matches!(d.content, TextWire::Str(_))))
            });
            if empty_content {
                self.empty_content(t_ns, rec);
            }
        }
        // A finish_reason ends the answer: only a trailing usage chunk and `[DONE]` may follow
        // (tokens after it failed the request above).
        if finish_here {
            self.finish_seen = true;
        }
        // A count the record cannot hold is no count, never clamped; a usage that is there
        // but no object is invalid (f14 item 2), on every backend.
        if let Some(u) = chunk.usage.0.as_mut() {
            if let Some(big) = u.representable() {
                self.usage_completion_big = Some(big);
            }
        }
        self.usage_invalid |= chunk.usage.is_bad();
        // Usage ends it only with a completion count (an empty `"usage":{}` is no evidence).
        let usage_counted =
            (chunk.usage.0.as_ref()).is_some_and(|u| u.completion_tokens.0.is_some());
        let usage_not_a_count = (chunk.usage.0.as_ref())
            .is_some_and(|u| u.completion_tokens.0.is_none() && u.completion_tokens.1);
        if token_bearing {
            self.usage_tail = false;
            self.invalid_usage_tail = None;
        } else if usage_counted {
            self.usage_tail = true;
            self.invalid_usage_tail = None;
        } else if usage_not_a_count {
            self.invalid_usage_tail = Some(String::from_utf8_lossy(excerpt(data)).into_owned());
        }
        let mut chunk_tokens = None;
        if let Some(u) = chunk.usage.0 {
            self.usage_invalid |= u.invalid();
            if let Some(r) =
                (u.completion_tokens_details.0.as_ref()).and_then(|d| d.reasoning_tokens.0)
            {
                self.usage_reasoning = Some(clamp_u32(r));
            }
            if let Some(p) = u.prompt_tokens.0 {
                self.usage_prompt = Some(clamp_u32(p));
            }
            if let Some(c) = u.completion_tokens.0 {
                // Checked above: it fits.
                let c = clamp_u32(c);
                self.usage_completion = Some(c);
                if token_bearing {
                    chunk_tokens = Some(c.saturating_sub(self.last_cum_completion));
                    self.last_cum_completion = c;
                }
            }
            if let Some(cached) = u.prompt_tokens_details.0.and_then(|d| d.cached_tokens.0) {
                rec.cached_tokens = Some(clamp_u32(cached));
                self.usage_cached = true;
            }
        }
        // llama.cpp: `timings.cache_n` when usage gives no cached count (usage wins). Its
        // counts are judged as usage's: a count that is not one, or above u32::MAX, is
        // `usage_invalid` and not taken, never clamped (issue 39's typed checks).
        self.usage_invalid |= chunk.timings.is_bad();
        if let Some(t) = chunk.timings.0 {
            self.usage_invalid |= t.invalid();
            if let Some(n) = t.cache_n.as_u32() {
                if !self.usage_cached {
                    rec.cached_tokens = Some(n);
                }
            }
        }
        if !token_bearing {
            return;
        }
        self.token_chunk(&here, chunk_tokens, t_ns, rec);
    }

    /// `--allow-empty-content`: a content field with empty text arrived at `t_ns`; it ends
    /// TTFT and TTFO when nothing did before (no token, no chunk).
    pub(crate) fn empty_content(&mut self, t_ns: u64, rec: &mut RequestRecord) {
        if !self.allow_empty_content {
            return;
        }
        if rec.first_token_ns.is_none() {
            rec.first_token_ns = Some(t_ns);
        }
        if rec.first_output_token_ns.is_none() {
            rec.first_output_token_ns = Some(t_ns);
        }
    }

    /// Usage as the server reported it (Responses' `input_tokens` / `output_tokens` /
    /// `input_tokens_details.cached_tokens` / `output_tokens_details.reasoning_tokens`),
    /// applied at the end like a usage chunk's: a count that is there but not a count is not
    /// taken and is `usage_invalid`, as is `other_invalid` (a count only judged, such as
    /// `total_tokens`).
    pub(crate) fn set_usage(&mut self, u: &UsageCounts, rec: &mut RequestRecord) {
        let (prompt, _) = u.prompt.representable();
        let (completion, big) = u.completion.representable();
        let (cached, _) = u.cached.representable();
        let (reasoning, _) = u.reasoning.representable();
        if big.is_some() {
            self.usage_completion_big = big;
        }
        self.usage_invalid |=
            prompt.1 || completion.1 || cached.1 || reasoning.1 || u.other_invalid;
        let u = UsageCounts {
            prompt,
            completion,
            cached,
            reasoning,
            other_invalid: u.other_invalid,
        };
        if let Some(p) = u.prompt.0 {
            self.usage_prompt = Some(clamp_u32(p));
        }
        if let Some(c) = u.completion.0 {
            self.usage_completion = Some(clamp_u32(c));
        }
        if let Some(c) = u.cached.0 {
            rec.cached_tokens = Some(clamp_u32(c));
            self.usage_cached = true;
        }
        if let Some(r) = u.reasoning.0 {
            self.usage_reasoning = Some(clamp_u32(r));
        }
    }

    /// Records one token-bearing chunk at `t_ns` on the channels `here` names: TTFT, TTFO,
    /// the last token time and a [`ChunkRecord`] (`chunk_tokens` when the server counted them).
    pub(crate) fn token_chunk(
        &mut self,
        here: &Here,
        chunk_tokens: Option<u32>,
        t_ns: u64,
        rec: &mut RequestRecord,
    ) {
        let channel = if here.content {
            Channel::Content
        } else if here.refusal {
            Channel::Refusal
        } else if here.reasoning {
            Channel::Reasoning
        } else {
            Channel::Tool
        };
        // The chunk past the cap cuts the response off and is not counted: the record counts
        // exactly the cap's chunks (issue 39: a record cut at the cap said 244 chunks for a
        // cap of 224, the rest of the read that passed it).
        if let Some(cap) = self.cut {
            if self.chunks_counted(rec) >= cap.chunks {
                self.cut_off(cap);
                return;
            }
        }
        if rec.first_token_ns.is_none() {
            rec.first_token_ns = Some(t_ns);
        }
        if (here.content || here.refusal) && rec.first_output_token_ns.is_none() {
            rec.first_output_token_ns = Some(t_ns);
        }
        rec.last_token_ns = Some(t_ns);
        if self
            .kept
            .is_some_and(|k| rec.chunks.len() as u64 >= k.chunks)
        {
            self.chunks_not_kept += 1;
            rec.chunks_not_kept = rec.chunks_not_kept.saturating_add(1);
            if channel == Channel::Tool {
                self.tool_chunks_not_kept += 1;
            }
            return;
        }
        rec.chunks.push(ChunkRecord {
            t_ns,
            channel,
            tokens: chunk_tokens,
        });
    }

    /// Fails the request: a chunk's text of channel `kind` held `value` (JSON: a number or a
    /// bool), not a string ([`ErrorClass::StreamError`], "a chunk's output text field held 5,
    /// not a string: the server's output cannot be read").
    pub(crate) fn not_text(&mut self, kind: TextKind, value: &str) {
        let channel = match kind {
            TextKind::Content => "output",
            TextKind::Reasoning => "reasoning",
            TextKind::Refusal => "refusal",
        };
        let w = WrongType::new(
            format!("{channel} text field"),
            value.to_string(),
            "a string",
        );
        self.wrong_type(&w);
    }

    /// Fails the request: a field the output is read from holds a value of the wrong type
    /// ([`ErrorClass::StreamError`], "a chunk's choices[0].delta held \"x\", not an object:
    /// the server's output cannot be read"; the value cut to 40 characters).
    pub(crate) fn wrong_type(&mut self, w: &WrongType) {
        self.fail(ErrorClass::StreamError, w.message());
    }

    /// Fails the request: a tool call's arguments piece held `value` (JSON: a number or a
    /// bool), not a string of JSON text ([`ErrorClass::StreamError`], "a chunk's tool
    /// arguments field held 7, not a string: the server's output cannot be read").
    pub(crate) fn not_args(&mut self, value: &str) {
        let w = WrongType::new("tool arguments field", value.to_string(), "a string");
        self.wrong_type(&w);
    }

    /// Appends the text of one text-bearing field to the output (content), the refusal or the
    /// reasoning text and notes in `here` which channels got non-empty text. `kind`: the
    /// field's channel (typed parts may say otherwise, [`lenient::part_texts`]).
    pub(crate) fn take_text(
        &mut self,
        field: &TextWire<'_>,
        kind: TextKind,
        relaxed: bool,
        rec: &mut RequestRecord,
        here: &mut Here,
    ) {
        // Not text: what the server generated cannot be read, so the request fails with the
        // value (issue 39, fresh tester: `"text": 123` was ignored, no anomaly), in a plain
        // field or in typed parts (issue 39's leftovers, 4: `[{"type": "text", "text": 5}]`).
        let not_text = match field {
            TextWire::NotText(v) => Some(v.clone()),
            TextWire::Parts(parts) => parts
                .iter()
                .find_map(|p| lenient::part_texts(p, kind, &mut |_, _| {}).err()),
            _ => None,
        };
        if let Some(v) = not_text {
            self.not_text(kind, &v);
            return;
        }
        let mut put = |kind: TextKind, t: &str| {
            if t.is_empty() {
                return;
            }
            // The text of the token-bearing chunk past the cap is not taken either (the cut
            // record's text and counts are those of the cap's chunks).
            if let Some(cap) = self.cut {
                if self.chunks_counted(rec) >= cap.chunks {
                    self.cut_off(cap);
                    return;
                }
            }
            // Past the kept budget the text is counted, not kept (crate::kept); without a
            // budget (no max_tokens) nothing is measured here.
            let keep = match self.kept {
                None => t.len(),
                Some(k) => {
                    let len = crate::kept::json_text_len(t);
                    self.text_bytes = self.text_bytes.saturating_add(len);
                    let room = k.text_bytes.saturating_sub(self.kept_text);
                    let keep = if self.text_full {
                        0
                    } else if len <= room {
                        t.len()
                    } else {
                        crate::kept::json_text_prefix(t, room)
                    };
                    self.kept_text = self.kept_text.saturating_add(if keep == t.len() {
                        len
                    } else {
                        crate::kept::json_text_len(&t[..keep])
                    });
                    keep
                }
            };
            let (t, rest) = t.split_at(keep);
            if !rest.is_empty() {
                self.drop_text(rest, rec);
            }
            match kind {
                TextKind::Content => {
                    push_text(&mut rec.output_text, &mut self.pending_content, t, relaxed);
                    here.content = true;
                }
                TextKind::Reasoning => {
                    push_text(&mut self.reasoning, &mut self.pending_reasoning, t, relaxed);
                    here.reasoning = true;
                }
                TextKind::Refusal => {
                    push_text(&mut self.refusal, &mut self.pending_refusal, t, relaxed);
                    here.refusal = true;
                }
            }
        };
        match field {
            TextWire::None | TextWire::NotText(_) => {}
            TextWire::Str(s) => put(kind, s),
            TextWire::Parts(parts) => {
                for p in parts {
                    // Checked above: every part's text is text.
                    let _ = lenient::part_texts(p, kind, &mut put);
                }
            }
        }
    }

    /// Applies the server's `usage` (source `server`) and returns `None`; without usage, sets
    /// the count of token-bearing chunks (source `tokenizer`, a lower bound when chunks bundle
    /// tokens) and returns the [`PendingCount`] a tokenizer may refine. Either way the output
    /// text is complete afterwards (a dangling surrogate half becomes U+FFFD).
    pub fn finish_usage(mut self, rec: &mut RequestRecord) -> Option<PendingCount> {
        if self.pending_content.take().is_some() {
            rec.output_text.push('\u{FFFD}');
        }
        if self.pending_reasoning.take().is_some() {
            self.reasoning.push('\u{FFFD}');
        }
        if self.pending_refusal.take().is_some() {
            self.refusal.push('\u{FFFD}');
        }
        if let Some(p) = self.usage_prompt {
            rec.prompt_tokens = p;
        }
        use inferbench_core::anomaly::{stream_bound, Anomaly};
        let not_kept = self.chunks_not_kept > 0 || self.text_full;
        for (seen, code) in [
            (self.usage_invalid, Anomaly::UsageInvalid),
            (self.extra_choice, Anomaly::ExtraChoice),
            (not_kept, Anomaly::OutputNotKept),
        ] {
            if seen && !rec.anomalies.contains(&code) {
                rec.anomalies.push(code);
            }
        }
        // The server's count as sent when it was too large to be one (not taken).
        rec.completion_tokens_reported = self.usage_completion_big;
        let chunks = u32::try_from(self.chunks_counted(rec)).unwrap_or(u32::MAX);
        let tool_chunks = (rec.chunks.iter())
            .filter(|c| c.channel == Channel::Tool)
            .count()
            .saturating_add(self.tool_chunks_not_kept);
        // Dropped text with no counter (or one that failed on it): no count of it.
        let not_kept_tokens = if self.text_full {
            self.not_kept_tokens
        } else {
            Some(0)
        };
        match self.usage_completion {
            Some(c) => {
                rec.completion_tokens = c;
                rec.completion_tokens_source = TokenSource::Server;
                // Usage the chunks alone cannot hold (each carries at least one token, and
                // may carry several): the tokenizer's count of the text judges it, unless tool
                // calls (their arguments are not kept) make that count a guess.
                let hidden_reasoning = if self.reasoning.is_empty() {
                    self.usage_reasoning.unwrap_or(0)
                } else {
                    0
                };
                (c > stream_bound(chunks.saturating_add(hidden_reasoning)) && tool_chunks == 0)
                    .then_some(PendingCount {
                        check_usage: true,
                        hidden_reasoning,
                        reasoning: self.reasoning,
                        refusal: self.refusal,
                        tool_chunks: 0,
                        not_kept_tokens,
                        chunks,
                    })
            }
            None => {
                rec.completion_tokens = chunks;
                rec.completion_tokens_source = TokenSource::Tokenizer;
                Some(PendingCount {
                    check_usage: false,
                    hidden_reasoning: 0,
                    reasoning: self.reasoning,
                    refusal: self.refusal,
                    tool_chunks,
                    not_kept_tokens,
                    chunks,
                })
            }
        }
    }

    /// Final token counts, here and now: `usage` when the server sent it (source `server`;
    /// judged by `counter`'s count when it is above what the chunks bound,
    /// [`PendingCount::apply`]), else `counter` over visible, refusal and reasoning text via
    /// [`count_tokens`] (source `tokenizer`), else (no counter, or it panicked) the number of
    /// token-bearing chunks (source `tokenizer`, a lower bound when chunks bundle tokens).
    pub fn finish(self, rec: &mut RequestRecord, counter: Option<&TokenCounter>) {
        if let (Some(pending), Some(counter)) = (self.finish_usage(rec), counter) {
            if let Some(n) = pending.count(&rec.output_text, counter) {
                pending.apply(n, rec);
            }
        }
    }
}

/// One usage report's counts as read ([`LCount`]: absent, a count, or there but not a count),
/// for [`Interpreter::set_usage`].
#[derive(Debug, Default)]
pub(crate) struct UsageCounts {
    pub(crate) prompt: LCount,
    pub(crate) completion: LCount,
    pub(crate) cached: LCount,
    pub(crate) reasoning: LCount,
    /// Another count of the report (`total_tokens`) was there but not a count.
    pub(crate) other_invalid: bool,
}

/// Which channels one chunk carried non-empty text (or tool calls) on.
#[derive(Debug, Default)]
pub(crate) struct Here {
    pub(crate) content: bool,
    pub(crate) refusal: bool,
    pub(crate) reasoning: bool,
    pub(crate) tool: bool,
}

/// The error message of a completions or chat stream that ended without
/// [`Interpreter::complete`] (class `stream_error`).
pub const INCOMPLETE_STREAM: &str = "stream ended without finish_reason, usage or [DONE]";

/// What [`INCOMPLETE_STREAM`] is followed by when the stream's last chunk was a usage chunk
/// whose `completion_tokens` is not a count (then that chunk's data, up to 512 bytes).
pub const INVALID_USAGE_END: &str =
    ": its last chunk's usage.completion_tokens is not a count (usage_invalid): ";

/// The error message of a Responses stream that ended without its terminal event (class
/// `stream_error`; [`crate::responses`]).
pub const INCOMPLETE_RESPONSES_STREAM: &str =
    "stream ended without response.completed or response.incomplete (max_output_tokens)";

/// Whether one completions/chat `data:` payload carries tokens on the requested choice
/// ([`ChoiceWire::carries_tokens`]); `[DONE]`, undecodable data and other choices do not.
fn chunk_carries_tokens(data: &[u8]) -> bool {
    let check = |c: &ChunkWire<'_>| {
        (c.choices.0.iter()).any(|ch| ch.requested(c.choices.0.len()) && ch.carries_tokens())
    };
    if data == b"[DONE]" {
        return false;
    }
    if let Some(c) = crate::fastchunk::parse(data) {
        return check(&c);
    }
    if let Ok(c) = serde_json::from_slice::<ChunkWire<'_>>(data) {
        return check(&c);
    }
    let v = std::str::from_utf8(data)
        .ok()
        .and_then(lenient::parse_relaxed);
    v.and_then(|v| ChunkWire::deserialize(&v).ok().map(|c| check(&c)))
        .unwrap_or(false)
}

/// At most the first 512 bytes, for error messages.
pub(crate) fn excerpt(b: &[u8]) -> &[u8] {
    &b[..b.len().min(512)]
}

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[(&str, &str, u64)]) -> (Interpreter, RequestRecord) {
        let mut it = Interpreter::new();
        let mut rec = RequestRecord::default();
        for (e, d, t) in events {
            it.on_event(
                SseEvent {
                    event: e.as_bytes(),
                    data: d.as_bytes(),
                },
                *t,
                &mut rec,
            );
        }
        (it, rec)
    }

    #[test]
    fn role_usage_and_empty_chunks_are_not_tokens() {
        let (it, mut rec) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
                5,
            ),
            ("", r#"{"choices":[{"delta":{"content":null}}]}"#, 6),
            ("", r#"{"choices":[{"text":""}]}"#, 7),
            ("", r#"{"choices":[{"delta":{"content":"Hi"}}]}"#, 200),
            (
                "",
                r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
                210,
            ),
            (
                "",
                r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#,
                300,
            ),
            ("", "[DONE]", 301),
        ]);
        assert!(it.done && it.failure.is_none());
        assert_eq!(rec.first_token_ns, Some(200));
        assert_eq!(rec.last_token_ns, Some(200));
        assert_eq!(rec.chunks.len(), 1);
        it.finish(&mut rec, None);
        assert_eq!(rec.completion_tokens, 2);
        assert_eq!(rec.prompt_tokens, 7);
        assert_eq!(rec.completion_tokens_source, TokenSource::Server);
        assert_eq!(rec.finish_reason.as_deref(), Some("length"));
        assert_eq!(rec.output_text, "Hi");
    }

    #[test]
    fn llamacpp_timings_cache_n_is_the_cached_count_unless_usage_has_one() {
        // llama.cpp's final chunk: usage without details, timings.cache_n = reused prompt.
        let (_, rec) = run(&[
            ("", r#"{"choices":[{"delta":{"content":"a"}}]}"#, 1),
            (
                "",
                r#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":300,"completion_tokens":1},"timings":{"cache_n":256,"prompt_n":44}}"#,
                2,
            ),
        ]);
        assert_eq!(rec.cached_tokens, Some(256));
        // usage.prompt_tokens_details.cached_tokens wins, whichever comes first.
        let (_, rec) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"content":"a"}}],"timings":{"cache_n":9}}"#,
                1,
            ),
            (
                "",
                r#"{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":128}},"timings":{"cache_n":256}}"#,
                2,
            ),
        ]);
        assert_eq!(rec.cached_tokens, Some(128));
    }

    #[test]
    fn llamacpp_timings_minus_one_is_not_measured_and_other_negatives_are_invalid() {
        // llama-server's result_timings starts each count at -1 ("not measured") and writes it
        // as it is: no anomaly, no cached count taken from it.
        let (it, rec) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"content":"a"}}],"timings":{"cache_n":-1,"prompt_n":-1,"predicted_n":-1}}"#,
                1,
            ),
            (
                "",
                r#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":30,"completion_tokens":1}}"#,
                2,
            ),
        ]);
        assert_eq!(rec.cached_tokens, None);
        assert!(!it.usage_invalid);
        let (it, rec) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"content":"a"}}],"timings":{"cache_n":-2}}"#,
                1,
            ),
            (
                "",
                r#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":30,"completion_tokens":1}}"#,
                2,
            ),
        ]);
        assert_eq!(rec.cached_tokens, None);
        assert!(it.usage_invalid);
    }

    #[test]
    fn reasoning_and_tool_calls_count_for_ttft_not_ttfo() {
        let (it, mut rec) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"reasoning_content":"th"}}]}"#,
                10,
            ),
            ("", r#"{"choices":[{"delta":{"reasoning":"ink"}}]}"#, 20),
            (
                "",
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
                30,
            ),
            ("", r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#, 35),
            ("", r#"{"choices":[{"delta":{"content":"A"}}]}"#, 40),
        ]);
        assert_eq!(rec.first_token_ns, Some(10));
        assert_eq!(rec.first_output_token_ns, Some(40));
        let ch: Vec<_> = rec.chunks.iter().map(|c| (c.t_ns, c.channel)).collect();
        assert_eq!(
            ch,
            vec![
                (10, Channel::Reasoning),
                (20, Channel::Reasoning),
                (30, Channel::Tool),
                (40, Channel::Content)
            ]
        );
        let count = |s: &str| s.chars().count();
        it.finish(&mut rec, Some(&count));
        // no usage: tokenizer over visible + reasoning text ("A" + "think"), plus one for the
        // tool-call-only chunk
        assert_eq!(rec.completion_tokens, 7);
        assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
        assert_eq!(rec.output_text, "A");
    }

    #[test]
    fn a_text_field_that_is_not_a_string_fails_the_request_with_its_value() {
        for (data, channel, value) in [
            (r#"{"choices":[{"text":123}]}"#, "output", "123"),
            (
                r#"{"choices":[{"delta":{"content":true}}]}"#,
                "output",
                "true",
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":1.5}}]}"#,
                "reasoning",
                "1.5",
            ),
            (r#"{"choices":[{"delta":{"refusal":7}}]}"#, "refusal", "7"),
            // Typed content parts (issue 39's leftovers, 4: ignored before).
            (
                r#"{"choices":[{"delta":{"content":[{"type":"text","text":5}]}}]}"#,
                "output",
                "5",
            ),
            (
                r#"{"choices":[{"delta":{"content":[{"type":"text","text":"b"},{"type":"output_text","text":true}]}}]}"#,
                "output",
                "true",
            ),
            (
                r#"{"choices":[{"message":{"content":[{"type":"refusal","refusal":2}]}}]}"#,
                "output",
                "2",
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":[{"type":"thinking","thinking":8}]}}]}"#,
                "reasoning",
                "8",
            ),
        ] {
            let (it, rec) = run(&[("", r#"{"choices":[{"text":"a"}]}"#, 1), ("", data, 2)]);
            assert_eq!(
                it.failure,
                Some((
                    ErrorClass::StreamError,
                    format!(
                        "a chunk's {channel} text field held {value}, not a string: the \
                         server's output cannot be read"
                    )
                )),
                "{data}"
            );
            assert_eq!(rec.output_text, "a", "{data}");
        }
        // A null text is no text, as before.
        let (it, _) = run(&[("", r#"{"choices":[{"text":null}]}"#, 1)]);
        assert_eq!(it.failure, None);
    }

    #[test]
    fn error_event_error_object_and_bad_json_are_classified() {
        let (it, _) = run(&[("error", r#"{"error":{"message":"boom"}}"#, 1)]);
        assert_eq!(it.failure.unwrap().0, ErrorClass::StreamError);
        let (it, _) = run(&[("", r#"{"error":{"message":"boom"}}"#, 1)]);
        assert_eq!(it.failure.unwrap().0, ErrorClass::StreamError);
        let (it, _) = run(&[("", r#"{"object":"error","message":"boom"}"#, 1)]);
        assert_eq!(it.failure.unwrap().0, ErrorClass::StreamError);
        let (it, _) = run(&[("", r#"{"choices":[{"text":"a"#, 1)]);
        assert_eq!(it.failure.unwrap().0, ErrorClass::Malformed);
        let mut it = Interpreter::new();
        it.on_json(
            b"{\"choices\":[{\"text\":\"\xff\"}]}",
            1,
            &mut RequestRecord::default(),
        );
        let (class, msg) = it.failure.unwrap();
        assert_eq!(class, ErrorClass::Malformed);
        assert!(msg.contains("invalid UTF-8"), "{msg}");
    }

    #[test]
    fn continuous_usage_gives_per_chunk_tokens() {
        let (_, rec) = run(&[
            (
                "",
                r#"{"choices":[{"text":"ab"}],"usage":{"completion_tokens":2}}"#,
                1,
            ),
            (
                "",
                r#"{"choices":[{"text":"cde"}],"usage":{"completion_tokens":5}}"#,
                2,
            ),
        ]);
        let t: Vec<_> = rec.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(t, vec![Some(2), Some(3)]);
    }

    proptest::proptest! {
        /// Arbitrary bytes, and chunk-shaped JSON with random values in every text and count
        /// field, never panic the interpreter.
        #[test]
        fn interpreter_never_panics(
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            v in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::Just("\"".to_string()),
                    proptest::prelude::Just(r"\ud83d".to_string()),
                    proptest::prelude::Just(r"\ude00".to_string()),
                    proptest::prelude::Just("[".to_string()),
                    proptest::prelude::Just("]".to_string()),
                    proptest::prelude::Just("{".to_string()),
                    proptest::prelude::Just("}".to_string()),
                    proptest::prelude::Just(":".to_string()),
                    proptest::prelude::Just(",".to_string()),
                    proptest::prelude::Just("null".to_string()),
                    proptest::prelude::Just("1e400".to_string()),
                    proptest::prelude::Just("-1".to_string()),
                    proptest::prelude::Just("NaN".to_string()),
                    proptest::prelude::Just("\"type\"".to_string()),
                    proptest::prelude::Just("\"text\"".to_string()),
                    proptest::prelude::Just("\"thinking\"".to_string()),
                    "[a-z]{1,3}",
                ],
                0..30,
            ),
        ) {
            let v = v.concat();
            let mut it = Interpreter::new();
            let mut rec = RequestRecord::default();
            it.on_json(&raw, 1, &mut rec);
            let shaped = format!(
                r#"{{"choices":[{{"delta":{{"content":{v}}},"text":{v}}}],"usage":{{"completion_tokens":{v}}}}}"#
            );
            let mut it = Interpreter::new();
            it.on_json(shaped.as_bytes(), 2, &mut rec);
            it.finish(&mut rec, Some(&|s: &str| s.len()));
        }
    }

    #[test]
    fn content_parts_and_split_surrogates() {
        let (it, mut rec) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]}]}}]}"#,
                10,
            ),
            (
                "",
                r#"{"choices":[{"delta":{"content":[{"type":"text","text":"A\ud83d"}]}}]}"#,
                20,
            ),
            ("", r#"{"choices":[{"delta":{"content":"\ude00B"}}]}"#, 30),
            ("", r#"{"choices":[{"delta":{"content":"\ud83d"}}]}"#, 40),
        ]);
        assert_eq!(rec.first_token_ns, Some(10));
        assert_eq!(rec.first_output_token_ns, Some(20));
        assert_eq!(rec.chunks.len(), 4);
        it.finish(&mut rec, Some(&|s: &str| s.chars().count()));
        // The dangling high half at the end becomes U+FFFD.
        assert_eq!(rec.output_text, "A\u{1F600}B\u{FFFD}");
        // Tokenizer over visible ("A😀B�" = 4 chars) + reasoning ("hm" = 2).
        assert_eq!(rec.completion_tokens, 6);
    }

    #[test]
    fn complete_only_after_done_finish_reason_or_a_trailing_usage_chunk() {
        let tok = |t: &'static str, u: Option<u32>| match u {
            None => format!(r#"{{"choices":[{{"text":"{t}"}}]}}"#),
            Some(n) => {
                format!(r#"{{"choices":[{{"text":"{t}"}}],"usage":{{"completion_tokens":{n}}}}}"#)
            }
        };
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#;
        let role_usage =
            r#"{"choices":[{"delta":{"role":"assistant"}}],"usage":{"completion_tokens":0}}"#;
        let table: Vec<(Vec<String>, bool)> = vec![
            (vec![tok("a", None), tok("b", None)], false),
            (vec![tok("a", None), "[DONE]".into()], true),
            (
                vec![
                    tok("a", None),
                    r#"{"choices":[{"text":"","finish_reason":"length"}]}"#.into(),
                ],
                true,
            ),
            (
                vec![
                    tok("a", None),
                    r#"{"choices":[{"text":"b","finish_reason":null}]}"#.into(),
                ],
                false,
            ),
            (
                vec![
                    tok("a", None),
                    r#"{"choices":[{"text":"b","finish_reason":""}]}"#.into(),
                ],
                false,
            ),
            (vec![tok("a", None), usage.into()], true),
            (vec![tok("a", None), usage.into(), tok("b", None)], false),
            // continuous_usage_stats: usage on the role chunk and on every token
            (
                vec![role_usage.into(), tok("a", Some(1)), tok("b", Some(2))],
                false,
            ),
            (
                vec![role_usage.into(), tok("a", Some(1)), usage.into()],
                true,
            ),
        ];
        for (events, want) in table {
            let evs: Vec<(&str, &str, u64)> = events.iter().map(|d| ("", d.as_str(), 1)).collect();
            let (it, _) = run(&evs);
            assert_eq!(it.complete(), want, "{events:?}");
        }
    }

    #[test]
    fn refusal_is_its_own_channel_and_counts_like_content() {
        let (it, mut rec) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"role":"assistant","content":"","refusal":null}}]}"#,
                5,
            ),
            ("", r#"{"choices":[{"delta":{"refusal":"No"}}]}"#, 40),
            (
                "",
                r#"{"choices":[{"delta":{"content":[{"type":"refusal","refusal":" way"}]}}]}"#,
                60,
            ),
            (
                "",
                r#"{"choices":[{"delta":{"content":"."},"finish_reason":"stop"}]}"#,
                70,
            ),
        ]);
        assert_eq!(rec.first_token_ns, Some(40));
        assert_eq!(rec.first_output_token_ns, Some(40));
        let ch: Vec<_> = rec.chunks.iter().map(|c| (c.t_ns, c.channel)).collect();
        assert_eq!(
            ch,
            vec![
                (40, Channel::Refusal),
                (60, Channel::Refusal),
                (70, Channel::Content)
            ]
        );
        it.finish(&mut rec, Some(&|s: &str| s.chars().count()));
        // "." (content) + "No way" (refusal) = 7 chars
        assert_eq!(rec.completion_tokens, 7);
        assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
        assert_eq!(rec.output_text, ".");
    }

    /// `--allow-empty-content`: the first chunk with a content (or completions `text`) field
    /// ends TTFT and TTFO at its arrival even when empty, adding no chunk or token; without
    /// it, TTFT ends at the first text.
    #[test]
    fn allow_empty_content_ends_ttft_at_the_empty_chunk() {
        for (backend, empty) in [
            (
                Backend::OpenAiChat,
                r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            ),
            (
                Backend::OpenAiCompletions,
                r#"{"choices":[{"index":0,"text":""}]}"#,
            ),
        ] {
            for allow in [true, false] {
                let mut it = Interpreter::for_backend(backend, allow);
                let mut rec = RequestRecord::default();
                for (d, t) in [
                    (empty, 5),
                    (r#"{"choices":[{"delta":{"content":"a"},"text":"a"}]}"#, 10),
                    (r#"{"choices":[],"usage":{"completion_tokens":1}}"#, 11),
                ] {
                    it.on_event(
                        SseEvent {
                            event: b"",
                            data: d.as_bytes(),
                        },
                        t,
                        &mut rec,
                    );
                }
                assert!(it.complete());
                it.finish(&mut rec, None);
                let want = if allow { 5 } else { 10 };
                assert_eq!(rec.first_token_ns, Some(want), "{backend:?} {allow}");
                assert_eq!(rec.first_output_token_ns, Some(want), "{backend:?} {allow}");
                assert_eq!(rec.chunks.len(), 1);
                assert_eq!(rec.chunks[0].t_ns, 10);
                assert_eq!(rec.completion_tokens, 1);
            }
        }
        // A role-only chunk (no content field) never ends TTFT.
        let mut it = Interpreter::for_backend(Backend::OpenAiChat, true);
        let mut rec = RequestRecord::default();
        let role = r#"{"choices":[{"delta":{"role":"assistant"}}]}"#;
        it.on_event(
            SseEvent {
                event: b"",
                data: role.as_bytes(),
            },
            5,
            &mut rec,
        );
        assert_eq!(rec.first_token_ns, None);
    }

    #[test]
    fn escaped_text_is_decoded() {
        let (_, rec) = run(&[("", r#"{"choices":[{"text":"a\"b\n\u00e9"}]}"#, 1)]);
        assert_eq!(rec.output_text, "a\"b\n\u{e9}");
    }

    #[test]
    fn body_shapes() {
        let input = RequestInput {
            text: "hi",
            messages: None,
            prompt_tokens: 1,
            max_tokens: Some(8),
        };
        let b = build_body(Backend::OpenAiCompletions, "m", &input, true, None, None);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            r#"{"model":"m","prompt":"hi","max_tokens":8,"temperature":0.0,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}"#
        );
        let mut extra = Map::new();
        extra.insert("temperature".into(), Value::from(1));
        let b = build_body(Backend::OpenAiChat, "m", &input, false, None, Some(&extra));
        assert_eq!(
            String::from_utf8(b).unwrap(),
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"max_completion_tokens":8,"temperature":1,"stream":true,"stream_options":{"include_usage":true}}"#
        );
        let b = build_body(
            Backend::OpenAiChat,
            "m",
            &input,
            false,
            Some(MaxTokensField::MaxCompletionTokens),
            None,
        );
        assert_eq!(
            String::from_utf8(b).unwrap(),
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":8,"temperature":0.0,"stream":true,"stream_options":{"include_usage":true}}"#
        );
        let b = build_body(
            Backend::OpenAiCompletions,
            "m",
            &input,
            false,
            Some(MaxTokensField::Both),
            None,
        );
        assert_eq!(
            String::from_utf8(b).unwrap(),
            r#"{"model":"m","prompt":"hi","max_tokens":8,"max_completion_tokens":8,"temperature":0.0,"stream":true,"stream_options":{"include_usage":true}}"#
        );
        assert_eq!(
            MaxTokensField::parse("max-completion-tokens"),
            Some(MaxTokensField::MaxCompletionTokens)
        );
        assert_eq!(MaxTokensField::parse("both"), Some(MaxTokensField::Both));
        assert_eq!(MaxTokensField::parse("max"), None);
    }
}
