//! Issue 39, second trial: the same protocol rules on every backend (completions, chat,
//! Responses), through the whole client against a served stream.
//!
//! - a usage count is a JSON non-negative integer literal (`8`; issue 39's typed checks: not
//!   `8.0`, `8e0` or `0.99999999999999999`); a string (`"8"`), a negative number or a literal
//!   with a fraction or an exponent is `usage_invalid` (tokenizer count used), for every count
//!   of the report (completion/output, prompt/input, total, cached, reasoning), as is a
//!   details field that is not an object; a string completion count does not end a stream
//!   (finding 4, 5);
//! - `finish_reason` words meaning "no reason" (`None`, `none`, `undefined`, `<nil>`, blanks)
//!   end nothing (finding 5);
//! - tokens after the terminal signal (`[DONE]`, `response.completed`) fail the request, and
//!   each backend's messages name its own terminal signals (finding 6);
//! - only the requested choice (index 0) is output; data on another is `extra_choice`
//!   (finding 7);
//! - usage above what the streamed text holds by the client's tokenizer is
//!   `usage_above_stream` (finding 11).

mod common;

use common::{send_hi, serve_events};
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::openai::{
    INCOMPLETE_RESPONSES_STREAM, INCOMPLETE_STREAM, INVALID_USAGE_END,
};
use inferbench_client::{Backend, Client, ClientConfig, TokenCounter};
use inferbench_core::{Anomaly, ErrorClass, RequestRecord, TokenSource};

const ALL: [Backend; 3] = [
    Backend::OpenAiCompletions,
    Backend::OpenAiChat,
    Backend::OpenAiResponses,
];

/// One request of `backend` (max_tokens 100) to `events`, with a tokenizer that counts
/// whitespace-separated words when `words` is set.
async fn send(backend: Backend, events: &[String], words: bool) -> RequestRecord {
    let counter: Option<Arc<TokenCounter>> =
        words.then(|| Arc::new(|s: &str| s.split_whitespace().count()) as Arc<TokenCounter>);
    let client = Client::new(ClientConfig {
        base_url: serve_events(events).await,
        backend,
        model: "m".into(),
        idle_timeout: Duration::from_secs(2),
        token_counter: counter,
        ..Default::default()
    })
    .unwrap();
    send_hi(&client, Some(100)).await
}

fn ev(json: &str) -> String {
    format!("data: {json}\n\n")
}

fn named(name: &str, json: &str) -> String {
    format!("event: {name}\ndata: {json}\n\n")
}

/// `texts` as `backend` streams them, one token-bearing event each (chat: after a role chunk).
fn tokens(backend: Backend, texts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if backend == Backend::OpenAiChat {
        out.push(ev(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        ));
    }
    for t in texts {
        let t = serde_json::to_string(t).unwrap();
        out.push(match backend {
            Backend::OpenAiChat => ev(&format!(
                r#"{{"choices":[{{"index":0,"delta":{{"content":{t}}},"finish_reason":null}}]}}"#
            )),
            Backend::OpenAiResponses => named(
                "response.output_text.delta",
                &format!(r#"{{"type":"response.output_text.delta","delta":{t}}}"#),
            ),
            _ => ev(&format!(
                r#"{{"choices":[{{"index":0,"text":{t},"finish_reason":null}}]}}"#
            )),
        });
    }
    out
}

/// The end of a whole answer with `usage` (a JSON object in chat's names; Responses' names
/// are derived): a finish chunk with the usage and `[DONE]`, or `response.completed`.
fn end(backend: Backend, usage: &str) -> Vec<String> {
    match backend {
        Backend::OpenAiResponses => {
            let u = usage
                .replace("prompt_tokens_details", "input_tokens_details")
                .replace("completion_tokens_details", "output_tokens_details")
                .replace("prompt_tokens", "input_tokens")
                .replace("completion_tokens", "output_tokens");
            vec![named(
                "response.completed",
                &format!(
                    r#"{{"type":"response.completed","response":{{"object":"response","status":"completed","usage":{u}}}}}"#
                ),
            )]
        }
        Backend::OpenAiChat => vec![
            ev(&format!(
                r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}],"usage":{usage}}}"#
            )),
            ev("[DONE]"),
        ],
        _ => vec![
            ev(&format!(
                r#"{{"choices":[{{"index":0,"text":"","finish_reason":"stop"}}],"usage":{usage}}}"#
            )),
            ev("[DONE]"),
        ],
    }
}

fn with(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// Findings 4 and 5: every usage count of every backend is judged alike. A count that is
/// there but not a JSON non-negative integer literal is `usage_invalid` and is not taken (the
/// tokenizer's count, 3 words; the client's prompt count, 1). Issue 39's typed checks: the
/// rule is the literal's (`4.0`, `4e0` and `3.99999999999999999`, which an f64 reads as 4,
/// are no count), and a `prompt_tokens_details` / `completion_tokens_details` that is not an
/// object (`7`, `"x"`) is `usage_invalid` too (it read as absent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_usage_count_on_every_backend_is_a_json_non_negative_integer() {
    let cases: &[(&str, bool, Option<u32>)] = &[
        // (usage, usage_invalid, the server's completion count taken)
        (
            r#"{"prompt_tokens":8,"completion_tokens":4}"#,
            false,
            Some(4),
        ),
        (r#"{"prompt_tokens":8,"completion_tokens":4.0}"#, true, None),
        (r#"{"prompt_tokens":8,"completion_tokens":4e0}"#, true, None),
        (
            r#"{"prompt_tokens":8,"completion_tokens":3.99999999999999999}"#,
            true,
            None,
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"prompt_tokens_details":7}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"completion_tokens_details":"x"}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"prompt_tokens_details":[3]}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2e0}}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"prompt_tokens_details":null}"#,
            false,
            Some(4),
        ),
        (r#"{"prompt_tokens":8,"completion_tokens":"4"}"#, true, None),
        (r#"{"prompt_tokens":8,"completion_tokens":-4}"#, true, None),
        (r#"{"prompt_tokens":8,"completion_tokens":4.5}"#, true, None),
        (
            r#"{"prompt_tokens":"8","completion_tokens":4}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"total_tokens":"12"}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"total_tokens":-1}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":"3"}}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":1.5}}"#,
            true,
            Some(4),
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":0}}"#,
            false,
            Some(4),
        ),
    ];
    for backend in ALL {
        for &(usage, invalid, taken) in cases {
            let what = format!("{backend:?} {usage}");
            let events = with(tokens(backend, &["a ", "b ", "c"]), end(backend, usage));
            let rec = send(backend, &events, true).await;
            assert!(rec.success, "{what}: {rec:#?}");
            let want: Vec<Anomaly> = if invalid {
                vec![Anomaly::UsageInvalid]
            } else {
                vec![]
            };
            assert_eq!(rec.anomalies, want, "{what}");
            match taken {
                Some(n) => {
                    assert_eq!(rec.completion_tokens, n, "{what}");
                    assert_eq!(rec.completion_tokens_source, TokenSource::Server, "{what}");
                }
                None => {
                    assert_eq!(rec.completion_tokens, 3, "{what}");
                    assert_eq!(
                        rec.completion_tokens_source,
                        TokenSource::Tokenizer,
                        "{what}"
                    );
                }
            }
            let prompt = if usage.contains(r#""prompt_tokens":8"#) {
                8
            } else {
                1
            };
            assert_eq!(rec.prompt_tokens, prompt, "{what}");
            let cached = usage.contains(r#""cached_tokens":3"#).then_some(3);
            assert_eq!(rec.cached_tokens, cached, "{what}");
        }
    }
}

/// Issue 39 §5 (fresh tester): a usage count beyond any number's range (a 400-digit integer,
/// `1e400`, `-1e400`) is valid JSON that the strict parser refuses ("number out of range"):
/// on every backend it is `usage_invalid` and not taken, and the request stands (it failed as
/// `malformed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_usage_counts_are_usage_invalid_on_every_backend() {
    let huge = "9".repeat(400);
    let cases = [
        // (usage, the server's completion count taken, prompt count)
        (
            format!(r#"{{"prompt_tokens":8,"completion_tokens":{huge}}}"#),
            None,
            8,
        ),
        (
            r#"{"prompt_tokens":1e400,"completion_tokens":4}"#.to_string(),
            Some(4),
            1,
        ),
        (
            r#"{"prompt_tokens":8,"completion_tokens":4,"total_tokens":-1E+400}"#.to_string(),
            Some(4),
            8,
        ),
    ];
    for backend in ALL {
        for (usage, taken, prompt) in &cases {
            let what = format!("{backend:?} {}", &usage[..usage.len().min(60)]);
            let events = with(tokens(backend, &["a ", "b ", "c"]), end(backend, usage));
            let rec = send(backend, &events, true).await;
            assert!(rec.success, "{what}: {rec:#?}");
            assert_eq!(rec.error, None, "{what}");
            assert_eq!(rec.anomalies, vec![Anomaly::UsageInvalid], "{what}");
            assert_eq!(rec.completion_tokens, taken.unwrap_or(3), "{what}");
            assert_eq!(rec.prompt_tokens, *prompt, "{what}");
        }
    }
}

/// Finding 5: a usage chunk whose completion count is a string is no evidence of an end: the
/// stream cut after it fails (completions and chat; Responses ends only on its events).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_count_does_not_complete_a_stream() {
    for backend in [Backend::OpenAiCompletions, Backend::OpenAiChat] {
        for (usage, ok) in [
            (r#"{"prompt_tokens":8,"completion_tokens":"2"}"#, false),
            (r#"{"prompt_tokens":8,"completion_tokens":2}"#, true),
        ] {
            let events = with(
                tokens(backend, &["Hello", " wor"]),
                vec![ev(&format!(r#"{{"choices":[],"usage":{usage}}}"#))],
            );
            let rec = send(backend, &events, false).await;
            assert_eq!(rec.success, ok, "{backend:?} {usage}: {rec:#?}");
            if !ok {
                assert_eq!(rec.error_class, Some(ErrorClass::StreamError));
                // The message names the usage chunk that did arrive and was no count, and the
                // failed record keeps `usage_invalid` (fresh tester's finding 5a).
                let data = format!(r#"{{"choices":[],"usage":{usage}}}"#);
                assert_eq!(
                    rec.error,
                    Some(format!("{INCOMPLETE_STREAM}{INVALID_USAGE_END}{data}"))
                );
                assert_eq!(rec.anomalies, vec![Anomaly::UsageInvalid]);
                assert_eq!(rec.output_text, "Hello wor");
            }
        }
    }
}

/// Finding 5: `finish_reason` words that mean "no reason" end nothing; a real reason, last,
/// does (and is the record's `finish_reason`; a no-reason word never is). Issue 39 §7 (fresh
/// tester): the words are compared normalized (`NIL`, `'None'`, `(null)` are no reason), and
/// a value without a letter is none either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reason_words_are_not_a_finish_reason() {
    for backend in [Backend::OpenAiCompletions, Backend::OpenAiChat] {
        for (reason, ok) in [
            ("None", false),
            ("none", false),
            ("NULL", false),
            (" ", false),
            ("undefined", false),
            ("<nil>", false),
            ("NIL", false),
            ("nil", false),
            ("'None'", false),
            ("(null)", false),
            ("[undefined]", false),
            ("NaN", false),
            ("0", false),
            ("-", false),
            // Fresh tester's finding 5c: every non-letter trimmed from both ends (punctuation,
            // no-break and zero-width spaces), then one identifier-shaped word.
            ("None.", false),
            ("Null ", false),
            ("\\u00a0", false),
            ("\\u200b", false),
            ("\\u200bnull\\u200b", false),
            ("false", false),
            ("n/a", false),
            ("not given", false),
            ("stop.", true),
            ("\\u200bstop", true),
            ("tool_calls", true),
            ("end_turn", true),
            ("stop", true),
            ("eos", true),
            ("length", true),
            ("abort", true),
        ] {
            let last = match backend {
                Backend::OpenAiChat => format!(
                    r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#
                ),
                _ => {
                    format!(r#"{{"choices":[{{"index":0,"text":"","finish_reason":"{reason}"}}]}}"#)
                }
            };
            let events = with(tokens(backend, &["Hello", " wor"]), vec![ev(&last)]);
            let rec = send(backend, &events, false).await;
            let what = format!("{backend:?} {reason:?}");
            assert_eq!(rec.success, ok, "{what}: {rec:#?}");
            if ok {
                // Stored as its normalized word (f14 item 3): `stop.` and `\u200bstop` are `stop`.
                let sent: String = serde_json::from_str(&format!("\"{reason}\"")).unwrap();
                let word = sent.trim_matches(|c: char| !c.is_alphanumeric());
                assert_eq!(rec.finish_reason.as_deref(), Some(word), "{what}");
            } else {
                assert_eq!(rec.error.as_deref(), Some(INCOMPLETE_STREAM), "{what}");
                assert_eq!(rec.finish_reason, None, "{what}");
            }
        }
    }
}

/// Finding 6: tokens after the terminal signal fail the request on every backend, the
/// message naming the backend's signal; events without tokens after it change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_after_the_terminal_signal_fail_on_every_backend() {
    let usage = r#"{"prompt_tokens":8,"completion_tokens":2}"#;
    for backend in ALL {
        let whole = with(tokens(backend, &["Hello", " wor"]), end(backend, usage));
        let late = tokens(backend, &["ld"]).pop().unwrap();
        let rec = send(backend, &with(whole.clone(), vec![late.clone()]), false).await;
        assert!(!rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(rec.error_class, Some(ErrorClass::StreamError));
        let signal = match backend {
            Backend::OpenAiResponses => "response.completed",
            _ => "[DONE]",
        };
        let data = late
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap()
            .to_string();
        assert_eq!(
            rec.error.as_deref(),
            Some(format!("tokens after {signal}: {data}").as_str()),
            "{backend:?}"
        );
        // What arrived before the end is kept, the late tokens are not.
        assert_eq!(rec.output_text, "Hello wor", "{backend:?}");
        assert_eq!(rec.chunks.len(), 2, "{backend:?}");
        // No tokens after the end (a usage chunk, a text-done event, an empty delta): whole.
        let quiet = match backend {
            Backend::OpenAiResponses => vec![
                named(
                    "response.output_text.done",
                    r#"{"type":"response.output_text.done","text":"Hello wor"}"#,
                ),
                named(
                    "response.output_text.delta",
                    r#"{"type":"response.output_text.delta","delta":""}"#,
                ),
            ],
            _ => vec![ev(&format!(r#"{{"choices":[],"usage":{usage}}}"#))],
        };
        let rec = send(backend, &with(whole, quiet), false).await;
        assert!(rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(rec.completion_tokens, 2, "{backend:?}");
    }
}

/// Finding 6: a Responses stream's failure messages name its own terminal events, never
/// `[DONE]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_messages_name_responses_terminal_events() {
    let b = Backend::OpenAiResponses;
    let rec = send(b, &tokens(b, &["Hello", " wor"]), false).await;
    assert_eq!(rec.error.as_deref(), Some(INCOMPLETE_RESPONSES_STREAM));
    // `[DONE]` is no Responses terminal.
    let rec = send(b, &with(tokens(b, &["Hello"]), vec![ev("[DONE]")]), false).await;
    assert_eq!(rec.error.as_deref(), Some(INCOMPLETE_RESPONSES_STREAM));
    let rec = send(
        b,
        &end(b, r#"{"prompt_tokens":8,"completion_tokens":0}"#),
        false,
    )
    .await;
    assert_eq!(
        rec.error.as_deref(),
        Some(
            "stream ended without a token-bearing chunk (0 comment lines, response.completed seen)"
        )
    );
    let rec = send(Backend::OpenAiChat, &[ev("[DONE]")], false).await;
    assert_eq!(
        rec.error.as_deref(),
        Some("stream ended without a token-bearing chunk (0 comment lines, [DONE] seen)")
    );
}

/// Finding 7: only choice index 0 is output (n = 1). Text, a refusal or a finish on
/// another index is not counted, ends nothing, and marks the record `extra_choice`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_requested_choice_is_output() {
    for backend in [Backend::OpenAiCompletions, Backend::OpenAiChat] {
        let other = |body: &str| ev(&format!(r#"{{"choices":[{{"index":1,{body}}}]}}"#));
        let extra = match backend {
            Backend::OpenAiChat => vec![
                other(r#""delta":{"content":"other words here"},"finish_reason":null"#),
                other(r#""delta":{"refusal":"no"},"finish_reason":null"#),
            ],
            _ => vec![other(r#""text":"other words here","finish_reason":null"#)],
        };
        let mut events = tokens(backend, &["Hello", " wor"]);
        events.splice(1..1, extra.clone());
        events.push(ev(
            r#"{"choices":[{"index":0,"delta":{},"text":"","finish_reason":"stop"}]}"#,
        ));
        let rec = send(backend, &events, true).await;
        assert!(rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(rec.output_text, "Hello wor", "{backend:?}");
        assert_eq!(rec.chunks.len(), 2, "{backend:?}");
        assert_eq!(rec.completion_tokens, 2, "{backend:?}");
        assert_eq!(rec.anomalies, vec![Anomaly::ExtraChoice], "{backend:?}");
        // Only the other choice carries anything: no output at all.
        let mut only_other = extra;
        only_other.push(ev(
            r#"{"choices":[{"index":1,"delta":{},"text":"","finish_reason":"stop"}]}"#,
        ));
        only_other.push(ev("[DONE]"));
        let rec = send(backend, &only_other, true).await;
        assert!(!rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(
            rec.error.as_deref(),
            Some("stream ended without a token-bearing chunk (0 comment lines, [DONE] seen)"),
            "{backend:?}"
        );
        // Empty or finish-less placeholders on another index are not data.
        let mut quiet = tokens(backend, &["Hello", " wor"]);
        quiet.push(ev(
            r#"{"choices":[{"index":1,"delta":{"content":""},"text":"","finish_reason":null}]}"#,
        ));
        quiet.push(ev("[DONE]"));
        let rec = send(backend, &quiet, true).await;
        assert!(rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(rec.anomalies, vec![], "{backend:?}");
    }
}

/// Finding 11: 8 token-bearing chunks of one word each with usage 60: above 2 × 8 + 32 = 48,
/// `usage_above_stream`, the client's count kept beside the usage; 48 stands (not counted:
/// the chunks alone bound it); 49 is flagged. Without a tokenizer nothing is judged; usage
/// that names reasoning tokens the stream did not show is judged with them (12 hidden:
/// 2 × 20 + 32 = 72 stands, 90 is flagged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_above_what_the_stream_holds_is_usage_above_stream() {
    let words = ["w "; 8];
    for backend in ALL {
        for (usage, counted, flagged) in [
            (
                r#"{"prompt_tokens":8,"completion_tokens":60}"#,
                Some(8),
                true,
            ),
            (
                r#"{"prompt_tokens":8,"completion_tokens":49}"#,
                Some(8),
                true,
            ),
            (r#"{"prompt_tokens":8,"completion_tokens":48}"#, None, false),
            (
                r#"{"prompt_tokens":8,"completion_tokens":72,"completion_tokens_details":{"reasoning_tokens":12}}"#,
                None,
                false,
            ),
            (
                r#"{"prompt_tokens":8,"completion_tokens":90,"completion_tokens_details":{"reasoning_tokens":12}}"#,
                Some(20),
                true,
            ),
        ] {
            let what = format!("{backend:?} {usage}");
            let events = with(tokens(backend, &words), end(backend, usage));
            let rec = send(backend, &events, true).await;
            assert!(rec.success, "{what}: {rec:#?}");
            assert_eq!(rec.completion_tokens_source, TokenSource::Server, "{what}");
            assert_eq!(rec.completion_tokens_client, counted, "{what}");
            let want: Vec<Anomaly> = if flagged {
                vec![Anomaly::UsageAboveStream]
            } else {
                vec![]
            };
            assert_eq!(rec.anomalies, want, "{what}");
            // No tokenizer: chunks bound nothing from above, nothing is judged.
            let rec = send(backend, &events, false).await;
            assert_eq!(rec.completion_tokens_client, None, "{what}");
            assert_eq!(rec.anomalies, vec![], "{what}");
        }
    }
}

/// Fresh tester's finding 5a/5b: a usage chunk whose `completion_tokens` is no count (`NaN`,
/// `"4"`, `-4`, `1e400`, `4e-400`, a 20-digit integer beyond u64) as the stream's only end: the
/// request fails as cut short, its message names that usage chunk, and the record keeps
/// `usage_invalid`. `4e-400` is no count (its literal underflows to 0), neither before a
/// `finish_reason`: that request stands with the anomaly and the tokenizer's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_usage_chunk_as_the_only_end_is_named_and_flagged() {
    for backend in [Backend::OpenAiCompletions, Backend::OpenAiChat] {
        for count in [
            "NaN",
            "\"4\"",
            "-4",
            "1e400",
            "4e-400",
            "4E-400",
            "99999999999999999999",
        ] {
            let data = format!(
                r#"{{"choices":[],"usage":{{"prompt_tokens":8,"completion_tokens":{count},"total_tokens":12}}}}"#
            );
            let events = with(tokens(backend, &["Hello", " wor"]), vec![ev(&data)]);
            let rec = send(backend, &events, true).await;
            let what = format!("{backend:?} {count}");
            // "99999999999999999999": beyond what the record holds, no count (f14 item 2:
            // it was clamped and ended the stream).
            assert!(!rec.success, "{what}: {rec:#?}");
            assert_eq!(rec.error_class, Some(ErrorClass::StreamError), "{what}");
            assert_eq!(
                rec.error,
                Some(format!("{INCOMPLETE_STREAM}{INVALID_USAGE_END}{data}")),
                "{what}"
            );
            assert_eq!(rec.anomalies, vec![Anomaly::UsageInvalid], "{what}");
        }
        // With a real end, the underflowing count is usage_invalid and not taken.
        let events = with(
            tokens(backend, &["Hello", " wor"]),
            end(backend, r#"{"prompt_tokens":8,"completion_tokens":4e-400}"#),
        );
        let rec = send(backend, &events, true).await;
        assert!(rec.success, "{backend:?}: {rec:#?}");
        assert_eq!(rec.anomalies, vec![Anomaly::UsageInvalid], "{backend:?}");
        assert_eq!(rec.completion_tokens, 2, "{backend:?}");
        assert_eq!(rec.completion_tokens_source, TokenSource::Tokenizer);
    }
    // Responses: an underflowing output count is no count either.
    let events = with(
        tokens(Backend::OpenAiResponses, &["Hello", " wor"]),
        end(
            Backend::OpenAiResponses,
            r#"{"prompt_tokens":8,"completion_tokens":4e-400}"#,
        ),
    );
    let rec = send(Backend::OpenAiResponses, &events, true).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.anomalies, vec![Anomaly::UsageInvalid]);
    assert_eq!(rec.completion_tokens, 2);
}

/// Fresh tester's finding 5d: a Responses terminal event ends well only when the response's
/// own `status` agrees: `response.completed` with `status: "failed"` fails with the response's
/// error, with `incomplete` it is read as `response.incomplete` (complete only for
/// `max_output_tokens`), with `cancelled` (or any other status) it fails; a whole response
/// object follows the same rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_terminal_follows_the_responses_status() {
    let usage = r#"{"input_tokens":8,"output_tokens":2}"#;
    for (kind, status, reason, want) in [
        (
            "response.completed",
            r#""failed","error":{"code":"server_error","message":"boom"}"#,
            "",
            Err("response.completed with status failed: server_error: boom"),
        ),
        (
            "response.completed",
            r#""incomplete""#,
            r#","incomplete_details":{"reason":"content_filter"}"#,
            Err("response.incomplete: content_filter"),
        ),
        (
            "response.completed",
            r#""incomplete""#,
            r#","incomplete_details":{"reason":"max_output_tokens"}"#,
            Ok("length"),
        ),
        (
            "response.completed",
            r#""cancelled""#,
            "",
            Err("response.completed with status cancelled"),
        ),
        (
            "response.incomplete",
            r#""completed""#,
            r#","incomplete_details":{"reason":"content_filter"}"#,
            Err("response.incomplete: content_filter"),
        ),
        ("response.completed", r#""completed""#, "", Ok("stop")),
    ] {
        let end = named(
            kind,
            &format!(
                r#"{{"type":"{kind}","response":{{"object":"response","status":{status}{reason},"usage":{usage}}}}}"#
            ),
        );
        let events = with(
            tokens(Backend::OpenAiResponses, &["Hello", " wor"]),
            vec![end],
        );
        let rec = send(Backend::OpenAiResponses, &events, false).await;
        let what = format!("{kind} {status} {reason}");
        match want {
            Ok(fin) => {
                assert!(rec.success, "{what}: {rec:#?}");
                assert_eq!(rec.finish_reason.as_deref(), Some(fin), "{what}");
            }
            Err(msg) => {
                assert!(!rec.success, "{what}");
                assert_eq!(rec.error_class, Some(ErrorClass::StreamError), "{what}");
                assert_eq!(rec.error.as_deref(), Some(msg), "{what}");
            }
        }
    }
}

/// Fresh tester's finding 3: without usage, the client's count of a stream is at least its
/// token-bearing chunks (a server sends one per decode step), so TPOT agrees with ITL: ten
/// chunks of `x` are 10 tokens, not the tokenizer's 1 for `xxxxxxxxxx`; a count above the
/// chunks (chunks bundling tokens) stays the tokenizer's; empty-content chunks are no chunks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_the_count_is_at_least_the_token_bearing_chunks() {
    for backend in ALL {
        let x10 = ["x"; 10];
        for (texts, want) in [
            (&x10[..], 10),
            (&["Hello world foo", " bar"][..], 4),
            (&["a", "", "b", ""][..], 2),
        ] {
            let fin = end(backend, r#"{"prompt_tokens":8}"#);
            let events = with(tokens(backend, texts), fin);
            let rec = send(backend, &events, true).await;
            let what = format!("{backend:?} {texts:?}");
            assert!(rec.success, "{what}: {rec:#?}");
            assert_eq!(rec.completion_tokens, want, "{what}");
            assert_eq!(
                rec.completion_tokens_source,
                TokenSource::Tokenizer,
                "{what}"
            );
            assert_eq!(rec.anomalies, Vec::<Anomaly>::new(), "{what}");
        }
    }
}
