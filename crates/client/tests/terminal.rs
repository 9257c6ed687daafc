//! Issue 39 §1: a response is complete only when the server said so. An event stream is whole
//! when it carried `[DONE]`, a `finish_reason` or a usage chunk after its last token; one that
//! ends without any (the chunked terminator, a close-delimited body's EOF, a Content-Length
//! reached: what a proxy that timed out its upstream sends) fails as `stream_error`, on every
//! backend, never a shorter success. One JSON body is whole by being whole JSON. A refusal
//! (`delta.refusal`) is generated output.

mod common;

use common::{send_hi, serve_events};
use std::time::Duration;

use inferbench_client::openai::INCOMPLETE_STREAM;
use inferbench_client::{Backend, Client, ClientConfig};
use inferbench_core::{Anomaly, Channel, ErrorClass, RequestRecord, TokenSource};
use inferbench_testutil::replay::{read_request, spawn_replay, ReplayCase, ReplayEnd};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// How the body of a test response ends.
#[derive(Debug, Clone, Copy)]
enum End {
    /// The chunked terminator (`0\r\n\r\n`): a clean end, the connection kept.
    Chunked,
    /// No framing (`Connection: close`): the server closes the connection.
    CloseDelimited,
    /// `Content-Length` equal to the body: a clean end, the connection kept.
    Length,
}

const ENDS: [End; 3] = [End::Chunked, End::CloseDelimited, End::Length];

/// Serves `events` (one SSE event each) to every request, ending the body as `end` says.
async fn serve(events: &[String], end: End) -> String {
    let body: String = events.concat();
    match end {
        End::Chunked => serve_events(events).await,
        End::CloseDelimited | End::Length => {
            let framing = match end {
                End::Length => format!("Content-Length: {}", body.len()),
                _ => "Connection: close".to_string(),
            };
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{framing}\r\n\r\n{body}"
            );
            let close = matches!(end, End::CloseDelimited);
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", l.local_addr().unwrap());
            tokio::spawn(async move {
                while let Ok((mut s, _)) = l.accept().await {
                    let r = response.clone();
                    tokio::spawn(async move {
                        while read_request(&mut s).await {
                            if s.write_all(r.as_bytes()).await.is_err() || close {
                                let _ = s.shutdown().await;
                                return;
                            }
                        }
                    });
                }
            });
            url
        }
    }
}

async fn send(url: String, backend: Backend) -> RequestRecord {
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

/// The tokens "Hello", " wor" as `backend` streams them (chat: after a role chunk), each with
/// `usage` (completion tokens so far) when `continuous` (vLLM's `continuous_usage_stats`,
/// which puts usage on the role chunk too).
fn tokens(backend: Backend, continuous: bool) -> Vec<String> {
    let usage = |n: u32| {
        if continuous {
            format!(r#","usage":{{"prompt_tokens":8,"completion_tokens":{n}}}"#)
        } else {
            String::new()
        }
    };
    let mut out = Vec::new();
    match backend {
        Backend::OpenAiChat => {
            out.push(ev(&format!(
                r#"{{"choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]{}}}"#,
                usage(0)
            )));
            for (i, t) in ["Hello", " wor"].iter().enumerate() {
                out.push(ev(&format!(
                    r#"{{"choices":[{{"index":0,"delta":{{"content":"{t}"}},"finish_reason":null}}]{}}}"#,
                    usage(i as u32 + 1)
                )));
            }
        }
        _ => {
            for (i, t) in ["Hello", " wor"].iter().enumerate() {
                out.push(ev(&format!(
                    r#"{{"choices":[{{"index":0,"text":"{t}","finish_reason":null}}]{}}}"#,
                    usage(i as u32 + 1)
                )));
            }
        }
    }
    out
}

fn finish_event(backend: Backend) -> String {
    match backend {
        Backend::OpenAiChat => ev(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
        _ => ev(r#"{"choices":[{"index":0,"text":"","finish_reason":"stop"}]}"#),
    }
}

const USAGE_CHUNK: &str = r#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}"#;
const BACKENDS: [Backend; 2] = [Backend::OpenAiCompletions, Backend::OpenAiChat];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_without_a_terminal_signal_fails_on_every_backend_and_every_end() {
    for backend in BACKENDS {
        for continuous in [false, true] {
            for end in ENDS {
                let what = format!("{backend:?}, continuous usage {continuous}, {end:?}");
                let rec = send(serve(&tokens(backend, continuous), end).await, backend).await;
                assert!(!rec.success, "{what}: {rec:#?}");
                assert_eq!(rec.error_class, Some(ErrorClass::StreamError), "{what}");
                assert_eq!(rec.error.as_deref(), Some(INCOMPLETE_STREAM), "{what}");
                // What arrived is kept in the failed record.
                assert_eq!(rec.output_text, "Hello wor", "{what}");
                assert_eq!(rec.chunks.len(), 2, "{what}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_terminal_signal_alone_completes_the_stream() {
    for backend in BACKENDS {
        for end in ENDS {
            // (terminal events, completion tokens, their source)
            let terminals: [(Vec<String>, u32, TokenSource); 4] = [
                (vec![ev("[DONE]")], 2, TokenSource::Tokenizer),
                (vec![finish_event(backend)], 2, TokenSource::Tokenizer),
                (vec![ev(USAGE_CHUNK)], 2, TokenSource::Server),
                (
                    vec![finish_event(backend), ev(USAGE_CHUNK)],
                    2,
                    TokenSource::Server,
                ),
            ];
            for (i, (tail, n, source)) in terminals.into_iter().enumerate() {
                let what = format!("{backend:?}, {end:?}, terminal {i}");
                let mut events = tokens(backend, false);
                events.extend(tail);
                let rec = send(serve(&events, end).await, backend).await;
                assert!(rec.success, "{what}: {rec:#?}");
                assert_eq!(rec.output_text, "Hello wor", "{what}");
                assert_eq!(
                    (rec.completion_tokens, rec.completion_tokens_source),
                    (n, source),
                    "{what}"
                );
            }
            // Continuous usage: usage on every chunk ends nothing, the usage chunk after the
            // last token does.
            let mut events = tokens(backend, true);
            events.push(ev(USAGE_CHUNK));
            let rec = send(serve(&events, end).await, backend).await;
            assert!(rec.success, "{backend:?}, {end:?}, continuous: {rec:#?}");
            assert_eq!(rec.completion_tokens, 2);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_chunk_before_more_tokens_does_not_end_the_stream() {
    let mut events = tokens(Backend::OpenAiCompletions, false);
    events.insert(1, ev(USAGE_CHUNK));
    let rec = send(
        serve(&events, End::Chunked).await,
        Backend::OpenAiCompletions,
    )
    .await;
    assert_eq!(rec.error.as_deref(), Some(INCOMPLETE_STREAM), "{rec:#?}");
}

/// One JSON body (a non-streamed answer) is complete by being whole JSON, with or without a
/// finish_reason or usage; it succeeds with `not_streamed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_json_body_needs_no_terminal_signal() {
    for body in [
        r#"{"choices":[{"message":{"content":"Hello wor"}}]}"#,
        r#"{"choices":[{"text":"Hello wor"}]}"#,
    ] {
        let case = ReplayCase {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            chunks: vec![(Duration::ZERO, body.as_bytes().to_vec())],
            end: ReplayEnd::Close,
        };
        let url = format!("http://{}", spawn_replay(case).await.unwrap());
        let rec = send(url, Backend::OpenAiChat).await;
        assert!(rec.success, "{body}: {rec:#?}");
        assert_eq!(rec.output_text, "Hello wor");
        assert_eq!(rec.anomalies, vec![Anomaly::NotStreamed]);
    }
}

/// A refusal-only answer (`delta.refusal`) without usage: its text is counted by the
/// tokenizer like content, it starts TTFT and TTFO, and its chunks are the refusal channel;
/// the output text (the answer) stays empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_output_counted_by_the_tokenizer_without_usage() {
    let events: Vec<String> = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"refusal":"I cannot"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"refusal":" help with that."},"finish_reason":"stop"}]}"#,
    ]
    .iter()
    .map(|j| ev(j))
    .collect();
    let url = serve(&events, End::Chunked).await;
    let client = Client::new(ClientConfig {
        base_url: url,
        backend: Backend::OpenAiChat,
        model: "m".into(),
        token_counter: Some(std::sync::Arc::new(|s: &str| s.split_whitespace().count())),
        ..Default::default()
    })
    .unwrap();
    let rec = send_hi(&client, Some(16)).await;
    assert!(rec.success, "{rec:#?}");
    // "I cannot" + " help with that." = 5 words
    assert_eq!(rec.completion_tokens, 5);
    assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
    assert_eq!(rec.output_text, "");
    let channels: Vec<Channel> = rec.chunks.iter().map(|c| c.channel).collect();
    assert_eq!(channels, vec![Channel::Refusal, Channel::Refusal]);
    assert_eq!(rec.first_token_ns, Some(rec.chunks[0].t_ns));
    assert_eq!(rec.first_output_token_ns, Some(rec.chunks[0].t_ns));
    assert_eq!(rec.finish_reason.as_deref(), Some("stop"));
}

/// Trial of issue 39 §1–§3, finding 5: a usage count that is there but not a non-negative
/// integer (negative, fractional, a word) is `usage_invalid`: the completion tokens come from
/// the tokenizer (source `tokenizer`) and the prompt count stays the client's; null or a
/// missing field is only absent (no anomaly).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_that_is_not_a_count_is_usage_invalid() {
    for (usage, invalid) in [
        (r#"{"prompt_tokens":8,"completion_tokens":-5}"#, true),
        (r#"{"prompt_tokens":8,"completion_tokens":8.5}"#, true),
        (r#"{"prompt_tokens":-1,"completion_tokens":2}"#, true),
        (r#"{"prompt_tokens":8,"completion_tokens":"x"}"#, true),
        (r#"{"prompt_tokens":8,"completion_tokens":null}"#, false),
    ] {
        let mut events = tokens(Backend::OpenAiChat, false);
        events.push(ev(&format!(
            r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}],"usage":{usage}}}"#
        )));
        let url = serve(&events, End::Chunked).await;
        let client = Client::new(ClientConfig {
            base_url: url,
            backend: Backend::OpenAiChat,
            model: "m".into(),
            token_counter: Some(std::sync::Arc::new(|s: &str| s.chars().count())),
            ..Default::default()
        })
        .unwrap();
        let rec = send_hi(&client, Some(16)).await;
        assert!(rec.success, "{usage}: {rec:#?}");
        assert_eq!(
            rec.anomalies
                .contains(&inferbench_core::anomaly::Anomaly::UsageInvalid),
            invalid,
            "{usage}: {:?}",
            rec.anomalies
        );
        if usage.contains("\"completion_tokens\":2") {
            // A valid completion count is the server's; the bad prompt count is not taken.
            assert_eq!(rec.completion_tokens, 2, "{usage}");
            assert_eq!(rec.completion_tokens_source, TokenSource::Server);
            assert_eq!(rec.prompt_tokens, 1, "{usage}");
        } else {
            // "Hello wor": 9 characters, the tokenizer's count.
            assert_eq!(rec.completion_tokens, 9, "{usage}");
            assert_eq!(
                rec.completion_tokens_source,
                TokenSource::Tokenizer,
                "{usage}"
            );
        }
    }
}

/// Trial of issue 39 §1–§3, finding 6: weak evidence of an end, each followed by a close,
/// fails the request (`stream_error`): an empty `"usage":{}` last; `finish_reason` on
/// `choices[index=1]` when one choice was asked for; `finish_reason: "null"` as a string; a
/// `finish_reason` on the first chunk followed by more tokens. A real reason on the requested
/// choice, last, still completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weak_terminal_evidence_does_not_complete_a_cut_stream() {
    let chat = |content: &str, finish: &str| {
        ev(&format!(
            r#"{{"choices":[{{"index":0,"delta":{{"content":"{content}"}},"finish_reason":{finish}}}]}}"#
        ))
    };
    let base = tokens(Backend::OpenAiChat, false);
    let with = |extra: &[String]| -> Vec<String> {
        let mut v = base.clone();
        v.extend_from_slice(extra);
        v
    };
    let cases: Vec<(&str, Vec<String>, bool)> = vec![
        (
            "empty usage",
            with(&[ev(r#"{"choices":[],"usage":{}}"#)]),
            false,
        ),
        (
            "finish on choice 1",
            with(&[ev(
                r#"{"choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}"#,
            )]),
            false,
        ),
        ("finish \"null\"", with(&[chat("", "\"null\"")]), false),
        (
            "finish then tokens",
            vec![chat("Hello", "\"stop\""), chat(" wor", "null")],
            false,
        ),
        ("finish last", with(&[chat("", "\"stop\"")]), true),
    ];
    for (what, events, ok) in cases {
        let url = serve(&events, End::CloseDelimited).await;
        let rec = send(url, Backend::OpenAiChat).await;
        assert_eq!(rec.success, ok, "{what}: {rec:#?}");
        if !ok {
            assert_eq!(
                rec.error_class,
                Some(inferbench_core::ErrorClass::StreamError),
                "{what}"
            );
        }
    }
}

/// Trial of issue 39 §1–§3, finding 7: usage of 10^12 completion tokens was stored as
/// 4294967295 with no trace of the real value; the record keeps it as sent, and (f14 item 2) a
/// count the record cannot hold is no count: `usage_invalid`, the client's count instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_usage_keeps_its_real_value() {
    let mut events = tokens(Backend::OpenAiChat, false);
    events.push(ev(
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":1000000000000}}"#,
    ));
    let url = serve(&events, End::Chunked).await;
    let rec = send(url, Backend::OpenAiChat).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.completion_tokens, 2);
    assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
    assert_eq!(rec.completion_tokens_reported, Some(1_000_000_000_000));
    assert_eq!(rec.anomalies, vec![Anomaly::UsageInvalid]);
    let line = serde_json::to_string(&rec).unwrap();
    assert!(
        line.contains(r#""completion_tokens_reported":1000000000000"#),
        "{line}"
    );
}
