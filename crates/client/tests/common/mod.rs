//! Set-up shared by the client's integration tests (each test file includes this module and
//! uses part of it): the one-word request they send and its default send.
#![allow(dead_code)]

use std::time::Duration;

use inferbench_client::{CancellationToken, Client, RequestInput, RequestMeta};
use inferbench_core::RequestRecord;
use inferbench_testutil::replay::{spawn_replay, ReplayCase, ReplayEnd};

/// The prompt "hi", counted as 1 prompt token, asking for `max_tokens` (`None`: the server's
/// default).
pub fn hi(max_tokens: Option<u32>) -> RequestInput<'static> {
    RequestInput {
        text: "hi",
        messages: None,
        prompt_tokens: 1,
        max_tokens,
    }
}

/// [`hi`] sent by `client` with the default request meta and a token never cancelled: the
/// request's record (a failed request is a record with its error class, never a panic).
pub async fn send_hi(client: &Client, max_tokens: Option<u32>) -> RequestRecord {
    client
        .send(
            &hi(max_tokens),
            RequestMeta::default(),
            &CancellationToken::new(),
        )
        .await
}

/// Serves `events` (whole SSE events, 1 ms apart) to every request on a fresh replay server,
/// then ends the body cleanly (chunked terminator); returns the server's base URL.
pub async fn serve_events(events: &[String]) -> String {
    let case = ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks: events
            .iter()
            .map(|e| (Duration::from_millis(1), e.clone().into_bytes()))
            .collect(),
        end: ReplayEnd::Close,
    };
    format!("http://{}", spawn_replay(case).await.unwrap())
}
