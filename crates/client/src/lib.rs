//! inferbench-client: HTTP + SSE streaming against OpenAI-compatible servers; one request → one
//! [`RequestRecord`] (DESIGN.md §2–4). It measures, it never schedules load (that is
//! `inferbench-loadgen`).
//!
//! - [`sse::SseParser`]: byte-level incremental SSE framing, split-invariant.
//! - [`openai`]: request bodies and the interpretation of streamed chunks (what is a token, TTFT
//!   vs TTFO, usage, errors). Chunks are decoded as leniently as Python's `json` (lone
//!   surrogates, `NaN`, duplicate keys), so a sample a Python client keeps is never lost here;
//!   every field the client reads is read typed (`lenient`: a wrong type is never read as
//!   absent: it fails the request where the output is read, and is `usage_invalid` in a
//!   usage report); the tokenizer fallback is bounded in time
//!   ([`count_tokens`]) and runs after the stream, off the I/O threads.
//! - `responses`: the Responses API's typed events (`--backend openai-responses`), read by the
//!   same [`openai::Interpreter`] with the same token rules.
//! - [`models`]: a server's `/v1/models`, and what a 404 for a model means.
//! - [`pool`]: keep-alive connections that are never reused with unread bytes (see its doc).
//! - [`Client`]: its own HTTP/1.1 exchange over keep-alive connections ([`wire`]: response
//!   heads, body framing, decoded in place in each connection's read buffer), idle and total
//!   timeouts, cancellation, timestamps on the shared [`RunClock`]: when the kernel received
//!   the bytes ([`rxstamp`], Linux), else when they are read.
//!
//! ```no_run
//! # async fn demo() -> Result<(), inferbench_client::ClientError> {
//! use inferbench_client::{Client, ClientConfig, RequestInput, RequestMeta};
//! let client = Client::new(ClientConfig { model: "m".into(), ..Default::default() })?;
//! let input = RequestInput { text: "Hello", messages: None, prompt_tokens: 1, max_tokens: Some(16) };
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let record = client.send(&input, RequestMeta::default(), &cancel).await;
//! println!("ttft {:?} ms, ok {}", record.ttft_ms(), record.success);
//! # Ok(()) }
//! ```
//!
//! [`RequestRecord`]: inferbench_core::RequestRecord
#![deny(missing_docs)]

pub mod clock;
pub(crate) mod fastchunk;
pub mod get;
pub mod headers;
pub mod http;
pub mod kept;
pub(crate) mod lenient;
pub mod models;
pub mod openai;
pub mod pool;
pub mod proxy;
pub(crate) mod responses;
pub mod rxstamp;
pub mod sse;
pub mod tls;
pub mod wire;

pub use clock::{ClockSource, RunClock};
pub use get::{http_get, http_get_via, http_request_via, Reach};
pub use headers::HeaderTemplate;
pub use http::{
    any_request_sent, join_url, target_uri, Client, ClientConfig, ClientError, RequestMeta,
    DEFAULT_IDLE_TIMEOUT,
};
pub use openai::{count_tokens, Backend, MaxTokensField, RequestInput, TokenCounter};
pub use tokio_util::sync::CancellationToken;
