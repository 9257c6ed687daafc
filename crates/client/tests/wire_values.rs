//! Issue 39, a fresh tester's protocol findings (f14): one rule for every backend
//! (completions, chat, Responses) for values a server sends where the protocol says otherwise:
//! a text delta that is not text, a usage count the client cannot represent or a usage that
//! is not an object, a finish reason or status hidden in invisible characters.

mod common;

use common::{send_hi, serve_events};
use std::time::Duration;

use inferbench_client::{Backend, Client, ClientConfig};
use inferbench_core::{Anomaly, ErrorClass, RequestRecord, TokenSource};

async fn send(events: &[String], backend: Backend) -> RequestRecord {
    let url = serve_events(events).await;
    let client = Client::new(ClientConfig {
        base_url: url,
        backend,
        model: "m".into(),
        idle_timeout: Duration::from_secs(2),
        ..Default::default()
    })
    .unwrap();
    send_hi(&client, Some(16)).await
}

fn ev(json: &str) -> String {
    format!("data: {json}\n\n")
}

/// One text piece as `backend` streams it; `value` is the JSON of the text field.
fn piece(backend: Backend, value: &str) -> String {
    ev(&match backend {
        Backend::OpenAiChat => {
            format!(r#"{{"choices":[{{"index":0,"delta":{{"content":{value}}}}}]}}"#)
        }
        Backend::OpenAiResponses => {
            format!(r#"{{"type":"response.output_text.delta","item_id":"m","delta":{value}}}"#)
        }
        _ => format!(r#"{{"choices":[{{"index":0,"text":{value}}}]}}"#),
    })
}

/// The end of a stream on `backend`: finish reason `reason` (Responses: status) and `usage`
/// (the JSON of the usage field, or none).
fn end(backend: Backend, reason: &str, usage: Option<&str>) -> Vec<String> {
    match backend {
        Backend::OpenAiResponses => {
            let usage = usage.map_or(String::new(), |u| format!(r#","usage":{u}"#));
            vec![ev(&format!(
                r#"{{"type":"response.completed","response":{{"object":"response","status":{reason}{usage}}}}}"#
            ))]
        }
        _ => {
            let usage = usage.map_or(String::new(), |u| format!(r#","usage":{u}"#));
            let choice = if backend == Backend::OpenAiChat {
                format!(r#"{{"index":0,"delta":{{}},"finish_reason":{reason}}}"#)
            } else {
                format!(r#"{{"index":0,"text":"","finish_reason":{reason}}}"#)
            };
            vec![
                ev(&format!(r#"{{"choices":[{choice}]{usage}}}"#)),
                "data: [DONE]\n\n".to_string(),
            ]
        }
    }
}

const BACKENDS: [Backend; 3] = [
    Backend::OpenAiCompletions,
    Backend::OpenAiChat,
    Backend::OpenAiResponses,
];

/// f14 item 1: "Hi", then a text delta that is a number or a bool, then " there", then a
/// clean end: every backend fails the request naming the value (`stream_error`), keeping the
/// text before it. The Responses backend answered "Hi there", a success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_delta_that_is_not_text_fails_on_every_backend() {
    for backend in BACKENDS {
        for bad in ["12345", "true", "1.5"] {
            let mut events = vec![
                piece(backend, r#""Hi""#),
                piece(backend, bad),
                piece(backend, r#"" there""#),
            ];
            let status = if backend == Backend::OpenAiResponses {
                r#""completed""#
            } else {
                r#""stop""#
            };
            events.extend(end(backend, status, None));
            let rec = send(&events, backend).await;
            assert!(!rec.success, "{backend:?} {bad}: {rec:#?}");
            assert_eq!(
                rec.error_class,
                Some(ErrorClass::StreamError),
                "{backend:?} {bad}"
            );
            assert_eq!(
                rec.error.as_deref(),
                Some(
                    format!(
                        "a chunk's output text field held {bad}, not a string: the server's \
                         output cannot be read"
                    )
                    .as_str()
                ),
                "{backend:?}"
            );
            assert_eq!(rec.output_text, "Hi", "{backend:?} {bad}");
        }
    }
}

/// f14 item 1, the other delta events of the Responses backend: refusal, reasoning and tool
/// arguments deltas that are a number or a bool fail the request naming the channel and value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_refusal_reasoning_and_tool_deltas_that_are_not_text_fail() {
    for (kind, value, channel) in [
        ("response.refusal.delta", "true", "refusal"),
        ("response.reasoning_text.delta", "7", "reasoning"),
        (
            "response.reasoning_summary_text.delta",
            "false",
            "reasoning",
        ),
        (
            "response.function_call_arguments.delta",
            "7",
            "tool arguments",
        ),
        (
            "response.custom_tool_call_input.delta",
            "true",
            "tool arguments",
        ),
    ] {
        let mut events = vec![ev(&format!(
            r#"{{"type":"{kind}","item_id":"m","delta":{value}}}"#
        ))];
        events.push(piece(Backend::OpenAiResponses, r#""ok""#));
        events.extend(end(Backend::OpenAiResponses, r#""completed""#, None));
        let rec = send(&events, Backend::OpenAiResponses).await;
        assert!(!rec.success, "{kind}: {rec:#?}");
        assert_eq!(
            rec.error.as_deref(),
            Some(
                format!(
                    "a chunk's {channel} field held {value}, not a string: the server's output \
                     cannot be read"
                )
                .replace("reasoning field", "reasoning text field")
                .replace("refusal field", "refusal text field")
                .as_str()
            ),
            "{kind}"
        );
    }
}

/// f14 item 1: a Responses delta of typed parts is read as a chat chunk's content parts are
/// (the one text rule), never dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_delta_of_parts_is_read_as_chat_reads_parts() {
    for backend in [Backend::OpenAiChat, Backend::OpenAiResponses] {
        let mut events = vec![
            piece(backend, r#""Hi""#),
            piece(backend, r#"[{"type":"output_text","text":" there"}]"#),
        ];
        let status = if backend == Backend::OpenAiResponses {
            r#""completed""#
        } else {
            r#""stop""#
        };
        events.extend(end(backend, status, None));
        let rec = send(&events, backend).await;
        assert!(rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(rec.output_text, "Hi there", "{backend:?}");
        assert_eq!(rec.chunk_count(), 2, "{backend:?}");
    }
}

/// "Hi", " there" and a clean end whose usage is `usage` (the JSON of the field; Responses:
/// `output_tokens` for `completion_tokens`).
fn with_usage(backend: Backend, usage: &str) -> Vec<String> {
    let mut events = vec![piece(backend, r#""Hi""#), piece(backend, r#"" there""#)];
    let (status, usage) = if backend == Backend::OpenAiResponses {
        (
            r#""completed""#,
            usage
                .replace("prompt_tokens", "input_tokens")
                .replace("completion_tokens", "output_tokens"),
        )
    } else {
        (r#""stop""#, usage.to_string())
    };
    events.extend(end(backend, status, Some(&usage)));
    events
}

/// f14 item 2: a usage count above `u32::MAX` is no count the client can represent: never
/// clamped (4294967297, 1e19 and 2^64 were stored as 4294967295 with source `server`), it is
/// `usage_invalid`, the completion count is the client's, and the value as sent is kept in
/// `completion_tokens_reported` when it is an integer literal within u64 (issue 39's typed
/// checks: `1e19` is no integer literal and 2^64 none the record can report, so neither is
/// kept). A prompt count too large is invalid the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_count_above_u32_is_invalid_never_clamped() {
    for backend in BACKENDS {
        for (sent, kept) in [
            ("4294967297", Some(4_294_967_297u64)),
            ("18446744073709551615", Some(u64::MAX)),
            ("1e19", None),
            ("18446744073709551616", None),
        ] {
            let usage = format!(r#"{{"prompt_tokens":8,"completion_tokens":{sent}}}"#);
            let rec = send(&with_usage(backend, &usage), backend).await;
            assert!(rec.success, "{backend:?} {sent}: {rec:#?}");
            assert_eq!(
                rec.completion_tokens_source,
                TokenSource::Tokenizer,
                "{backend:?}"
            );
            assert_eq!(rec.completion_tokens, 2, "{backend:?} {sent}");
            assert_eq!(rec.completion_tokens_reported, kept, "{backend:?} {sent}");
            assert_eq!(
                rec.anomalies,
                vec![Anomaly::UsageInvalid],
                "{backend:?} {sent}"
            );
        }
        // The prompt count: not taken, invalid; the completion count stands.
        let usage = r#"{"prompt_tokens":4294967296,"completion_tokens":2}"#;
        let rec = send(&with_usage(backend, usage), backend).await;
        assert!(rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(
            rec.completion_tokens_source,
            TokenSource::Server,
            "{backend:?}"
        );
        assert_eq!(rec.prompt_tokens, rec.prompt_tokens_client, "{backend:?}");
        assert_eq!(rec.completion_tokens_reported, None, "{backend:?}");
        assert_eq!(rec.anomalies, vec![Anomaly::UsageInvalid], "{backend:?}");
    }
}

/// f14 item 2: a usage that is there but not an object (`"lots"`, `[1,2]`, `5`, `true`) is
/// `usage_invalid` on every backend (it was read as absent); `null` is no usage, no anomaly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_that_is_not_an_object_is_invalid() {
    for backend in BACKENDS {
        for (usage, flagged) in [
            (r#""lots""#, true),
            ("[1,2]", true),
            ("5", true),
            ("true", true),
            ("null", false),
        ] {
            let rec = send(&with_usage(backend, usage), backend).await;
            assert!(rec.success, "{backend:?} {usage}: {rec:#?}");
            assert_eq!(
                rec.completion_tokens_source,
                TokenSource::Tokenizer,
                "{backend:?}"
            );
            let want = if flagged {
                vec![Anomaly::UsageInvalid]
            } else {
                vec![]
            };
            assert_eq!(rec.anomalies, want, "{backend:?} {usage}");
        }
    }
}

/// f14 item 3: a finish reason (Responses: the status and the incomplete reason) is read and
/// stored as its normalized word on every backend: `"\u200bstop\u200b"` ends the stream and is
/// stored `stop` (it was stored raw, with its zero-width spaces); a word broken inside by an
/// invisible character is no reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finish_reason_or_status_is_stored_as_its_word() {
    for backend in [Backend::OpenAiCompletions, Backend::OpenAiChat] {
        for (sent, stored) in [
            (r#""\u200bstop\u200b""#, Some("stop")),
            (r#""\ufeff Length. ""#, Some("length")),
            (r#""STOP""#, Some("stop")),
            (r#""st\u200bop""#, None),
        ] {
            let mut events = vec![piece(backend, r#""Hi""#)];
            let mut tail = end(backend, sent, None);
            tail.pop(); // no [DONE]: the reason alone ends the stream, or nothing does
            events.extend(tail);
            let rec = send(&events, backend).await;
            assert_eq!(
                rec.success,
                stored.is_some(),
                "{backend:?} {sent}: {rec:#?}"
            );
            assert_eq!(rec.finish_reason.as_deref(), stored, "{backend:?} {sent}");
        }
    }
    let r = Backend::OpenAiResponses;
    for (status, stored) in [
        (r#""\u200bcompleted\u200b""#, Some("stop")),
        (r#""Completed.""#, Some("stop")),
        (
            r#""\u200bincomplete","incomplete_details":{"reason":"max_output_tokens\u200b"}"#,
            Some("length"),
        ),
        (r#""compl\u200beted""#, None),
    ] {
        let mut events = vec![piece(r, r#""Hi""#)];
        events.extend(end(r, status, None));
        let rec = send(&events, r).await;
        assert_eq!(rec.success, stored.is_some(), "{status}: {rec:#?}");
        if stored.is_some() {
            assert_eq!(rec.finish_reason.as_deref(), stored, "{status}");
        }
    }
}
