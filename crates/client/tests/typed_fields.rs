//! Issue 39's typed checks: every field the client reads has a typed check, the same on every
//! backend, through the whole client against a served response. A value of the wrong type
//! where the output is read fails the request as `stream_error` ("a chunk's FIELD held VALUE,
//! not TYPE: the server's output cannot be read"); one in the server's token report (usage,
//! llama.cpp's `timings`) is `usage_invalid`, the count not taken, the request standing. Null
//! or absence is absent everywhere. (Usage counts and usage details on every backend:
//! `strictness.rs`.)

mod common;

use common::{send_hi, serve_events};
use std::time::Duration;

use inferbench_client::{Backend, Client, ClientConfig};
use inferbench_core::{Anomaly, ErrorClass, RequestRecord, TokenSource};
use inferbench_testutil::replay::{spawn_replay, ReplayCase, ReplayEnd};

async fn send(backend: Backend, events: &[String]) -> RequestRecord {
    let client = Client::new(ClientConfig {
        base_url: serve_events(events).await,
        backend,
        model: "m".into(),
        idle_timeout: Duration::from_secs(2),
        ..Default::default()
    })
    .unwrap();
    send_hi(&client, Some(100)).await
}

/// One non-streamed JSON `body` to a chat request.
async fn send_body(body: &str) -> RequestRecord {
    let case = ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        chunks: vec![(Duration::ZERO, body.as_bytes().to_vec())],
        end: ReplayEnd::Close,
    };
    let client = Client::new(ClientConfig {
        base_url: format!("http://{}", spawn_replay(case).await.unwrap()),
        backend: Backend::OpenAiChat,
        model: "m".into(),
        idle_timeout: Duration::from_secs(2),
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

fn failure(field: &str, value: &str, expected: &str) -> String {
    format!("a chunk's {field} held {value}, not {expected}: the server's output cannot be read")
}

/// Asserts `rec` failed as `stream_error` with `want` and kept the text before it.
fn assert_failed(rec: &RequestRecord, want: &str, text: &str, what: &str) {
    assert!(!rec.success, "{what}: {rec:#?}");
    assert_eq!(rec.error_class, Some(ErrorClass::StreamError), "{what}");
    assert_eq!(rec.error.as_deref(), Some(want), "{what}");
    assert_eq!(rec.output_text, text, "{what}");
}

const CHAT_A: &str = r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#;
const CHAT_END: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#;

/// Completions (and chat, by the same rule): a text field holding an object that is no content
/// part (`{"a":1}`), an array holding one, or a part whose text is an object fails the request
/// naming it (it was ignored: the chunk counted no token and the request succeeded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_field_that_is_an_object_or_array_of_non_parts_fails() {
    for (backend, chunk, channel, value) in [
        (
            Backend::OpenAiCompletions,
            r#"{"choices":[{"index":0,"text":{"a":1}}]}"#,
            "output",
            r#"{"a":1}"#,
        ),
        (
            Backend::OpenAiCompletions,
            r#"{"choices":[{"index":0,"text":[{"a":1}]}]}"#,
            "output",
            r#"{"a":1}"#,
        ),
        (
            Backend::OpenAiChat,
            r#"{"choices":[{"index":0,"delta":{"content":{"a":1}}}]}"#,
            "output",
            r#"{"a":1}"#,
        ),
        (
            Backend::OpenAiChat,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":[{"type":"text","text":{}}]}}]}"#,
            "reasoning",
            "{}",
        ),
        (
            Backend::OpenAiChat,
            r#"{"choices":[{"index":0,"delta":{"refusal":{"type":7}}}]}"#,
            "refusal",
            r#"{"type":7}"#,
        ),
    ] {
        let first = match backend {
            Backend::OpenAiCompletions => r#"{"choices":[{"index":0,"text":"a"}]}"#,
            _ => CHAT_A,
        };
        let events = [ev(first), ev(chunk), ev(CHAT_END), ev("[DONE]")];
        let rec = send(backend, &events).await;
        let want = failure(&format!("{channel} text field"), value, "a string");
        assert_failed(&rec, &want, "a", &format!("{backend:?} {chunk}"));
    }
}

/// Chat: `choices`, a choice's `delta` / `message`, its `finish_reason`, the chunk's `object`
/// and every part of `tool_calls` (an array of objects; `function` an object; `id`, `type`,
/// `function.name`, `function.arguments` strings; `index` a count) are read typed, in a
/// stream's deltas and in a non-streamed body's message alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_structure_and_tool_calls_of_the_wrong_type_fail() {
    let tool =
        |calls: &str| format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":{calls}}}}}]}}"#);
    let cases: Vec<(String, &str, &str, &str)> = vec![
        (r#"{"choices":"x"}"#.into(), "choices", r#""x""#, "an array"),
        (r#"{"choices":[7]}"#.into(), "choices[0]", "7", "an object"),
        (
            r#"{"choices":[{"index":0,"delta":"b"}]}"#.into(),
            "choices[0].delta",
            r#""b""#,
            "an object",
        ),
        (
            r#"{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":5}]}"#.into(),
            "choices[0].finish_reason",
            "5",
            "a string",
        ),
        (
            r#"{"object":["chat.completion.chunk"],"choices":[]}"#.into(),
            "object",
            r#"["chat.completion.chunk"]"#,
            "a string",
        ),
        (
            tool(r#"{"index":0,"id":"c"}"#),
            "choices[0].delta.tool_calls",
            r#"{"index":0,"id":"c"}"#,
            "an array",
        ),
        (
            tool("[3]"),
            "choices[0].delta.tool_calls[0]",
            "3",
            "an object",
        ),
        (
            tool(r#"[{"index":0,"function":"f"}]"#),
            "choices[0].delta.tool_calls[0].function",
            r#""f""#,
            "an object",
        ),
        (
            tool(r#"[{"index":0,"function":{"name":5}}]"#),
            "choices[0].delta.tool_calls[0].function.name",
            "5",
            "a string",
        ),
        (
            tool(r#"[{"index":0,"function":{"arguments":7}}]"#),
            "choices[0].delta.tool_calls[0].function.arguments",
            "7",
            "a string",
        ),
        (
            tool(r#"[{"index":0,"function":{"arguments":{"city":"Paris"}}}]"#),
            "choices[0].delta.tool_calls[0].function.arguments",
            r#"{"city":"Paris"}"#,
            "a string",
        ),
        (
            tool(r#"[{"index":"0","function":{"arguments":"{"}}]"#),
            "choices[0].delta.tool_calls[0].index",
            r#""0""#,
            "a count",
        ),
    ];
    for (chunk, field, value, expected) in &cases {
        let events = [ev(CHAT_A), ev(chunk), ev(CHAT_END), ev("[DONE]")];
        let rec = send(Backend::OpenAiChat, &events).await;
        assert_failed(&rec, &failure(field, value, expected), "a", chunk);
    }
    // The well-typed tool call is a tool chunk and the request stands.
    let ok = tool(
        r#"[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]"#,
    );
    let rec = send(
        Backend::OpenAiChat,
        &[ev(CHAT_A), ev(&ok), ev(CHAT_END), ev("[DONE]")],
    )
    .await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.chunks.len(), 2);

    // A non-streamed body: the message's tool calls are read by the same rule.
    for (calls, field, value, expected) in [
        (
            r#"[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}}]"#,
            "choices[0].message.tool_calls[0].function.arguments",
            r#"{"a":1}"#,
            "a string",
        ),
        (
            r#"[{"id":"c1","type":"function","function":{"name":false,"arguments":"{}"}}]"#,
            "choices[0].message.tool_calls[0].function.name",
            "false",
            "a string",
        ),
        (
            r#""f()""#,
            "choices[0].message.tool_calls",
            r#""f()""#,
            "an array",
        ),
    ] {
        let body = format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":null,"tool_calls":{calls}}},"finish_reason":"tool_calls"}}],"usage":{{"prompt_tokens":1,"completion_tokens":5}}}}"#
        );
        let rec = send_body(&body).await;
        assert_failed(&rec, &failure(field, value, expected), "", &body);
    }
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":5}}"#;
    let rec = send_body(body).await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.completion_tokens, 5);
}

/// llama.cpp's `timings` are judged as usage is: a count above `u32::MAX` (or not a count)
/// is `usage_invalid` and not taken (`cache_n` 4294967296 was clamped to 4294967295 and
/// stored as the cached tokens), for every count of it (`prompt_n`, `predicted_n`, …), as is
/// a `timings` that is not an object; a good `cache_n` is the cached count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_timings_counts_are_judged_as_usage_counts() {
    for (timings, invalid, cached) in [
        (
            r#"{"cache_n":3,"prompt_n":5,"predicted_n":2}"#,
            false,
            Some(3),
        ),
        (r#"{"cache_n":4294967296,"prompt_n":5}"#, true, None),
        (r#"{"cache_n":3,"prompt_n":4294967296}"#, true, Some(3)),
        (r#"{"cache_n":3,"predicted_n":1e3}"#, true, Some(3)),
        (r#"{"cache_n":3,"draft_n":-2}"#, true, Some(3)),
        (r#"{"cache_n":3,"draft_n_accepted":"2"}"#, true, Some(3)),
        (r#"{"cache_n":3.0}"#, true, None),
        (r#""fast""#, true, None),
        ("null", false, None),
    ] {
        let end = format!(
            r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":8,"completion_tokens":2}},"timings":{timings}}}"#
        );
        let events = [ev(CHAT_A), ev(CHAT_A), ev(&end), ev("[DONE]")];
        let rec = send(Backend::OpenAiChat, &events).await;
        assert!(rec.success, "{timings}: {rec:#?}");
        let want: Vec<Anomaly> = if invalid {
            vec![Anomaly::UsageInvalid]
        } else {
            vec![]
        };
        assert_eq!(rec.anomalies, want, "{timings}");
        assert_eq!(rec.cached_tokens, cached, "{timings}");
        assert_eq!(rec.completion_tokens, 2, "{timings}");
        assert_eq!(
            rec.completion_tokens_source,
            TokenSource::Server,
            "{timings}"
        );
    }
}

/// Responses: every event field the client reads is read typed. A `response.completed`
/// whose `response` is not an object (it completed as `stop`), an `incomplete_details` that
/// is not an object or a `reason` that is not a string, an event `type` that is not a string,
/// a tool-argument delta that is an object or an array, and a whole response's `output` /
/// `content` / `summary` that are not arrays (or items and parts that are not objects) fail
/// the request naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_event_fields_of_the_wrong_type_fail() {
    let text = named(
        "response.output_text.delta",
        r#"{"type":"response.output_text.delta","delta":"a"}"#,
    );
    let completed = |resp: &str| {
        named(
            "response.completed",
            &format!(r#"{{"type":"response.completed","response":{resp}}}"#),
        )
    };
    let cases: Vec<(String, String)> = vec![
        (
            completed(r#""done""#),
            failure("response", r#""done""#, "an object"),
        ),
        (completed("5"), failure("response", "5", "an object")),
        (completed("[1]"), failure("response", "[1]", "an object")),
        (
            named(
                "response.incomplete",
                r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":"max_output_tokens"}}"#,
            ),
            failure(
                "response.incomplete_details",
                r#""max_output_tokens""#,
                "an object",
            ),
        ),
        (
            named(
                "response.incomplete",
                r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":["max_output_tokens"]}}}"#,
            ),
            failure(
                "response.incomplete_details.reason",
                r#"["max_output_tokens"]"#,
                "a string",
            ),
        ),
        (
            named("response.completed", r#"{"type":5,"response":{}}"#),
            failure("type", "5", "a string"),
        ),
        (
            named(
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":{"a":1}}"#,
            ),
            failure("output text field", r#"{"a":1}"#, "a string"),
        ),
        (
            named(
                "response.function_call_arguments.delta",
                r#"{"type":"response.function_call_arguments.delta","delta":{"a":1}}"#,
            ),
            failure("tool arguments field", r#"{"a":1}"#, "a string"),
        ),
    ];
    for (event, want) in &cases {
        let events = [text.clone(), event.clone()];
        let rec = send(Backend::OpenAiResponses, &events).await;
        assert_failed(&rec, want, "a", event);
    }
    // A well-typed completed response with null details completes.
    let rec = send(
        Backend::OpenAiResponses,
        &[
            text.clone(),
            completed(r#"{"status":"completed","incomplete_details":null,"usage":{"input_tokens":1,"output_tokens":1}}"#),
        ],
    )
    .await;
    assert!(rec.success, "{rec:#?}");
    assert_eq!(rec.finish_reason.as_deref(), Some("stop"));

    // A whole (non-streamed) response.
    for (output, want) in [
        (r#""Hello""#, failure("output", r#""Hello""#, "an array")),
        (
            r#"["Hello"]"#,
            failure("output[0]", r#""Hello""#, "an object"),
        ),
        (
            r#"[{"type":"message","content":"Hello"}]"#,
            failure("output[0].content", r#""Hello""#, "an array"),
        ),
        (
            r#"[{"type":"reasoning","summary":{"text":"hm"}}]"#,
            failure("output[0].summary", r#"{"text":"hm"}"#, "an array"),
        ),
        (
            r#"[{"type":"message","content":[{"type":"output_text","text":"a"},"b"]}]"#,
            failure("output[0].content[1]", r#""b""#, "an object"),
        ),
        (
            r#"[{"type":"message","content":[{"type":"output_text","text":{"value":"a"}}]}]"#,
            failure("output[0].content[0].text", r#"{"value":"a"}"#, "a string"),
        ),
        (
            r#"[{"type":["message"],"content":[]}]"#,
            failure("output[0].type", r#"["message"]"#, "a string"),
        ),
    ] {
        let body = format!(r#"{{"object":"response","status":"completed","output":{output}}}"#);
        let rec = send(Backend::OpenAiResponses, &[ev(&body)]).await;
        // The text before the fault is kept, as a stream's is.
        let kept = if output.contains(r#""text":"a""#) {
            "a"
        } else {
            ""
        };
        assert_failed(&rec, &want, kept, &body);
    }
}
