//! Set-up shared by the client's integration tests (each test file includes this module and
//! uses part of it): the one-word request they send and its default send.
#![allow(dead_code)]

use inferbench_client::{CancellationToken, Client, RequestInput, RequestMeta};
use inferbench_core::RequestRecord;

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
