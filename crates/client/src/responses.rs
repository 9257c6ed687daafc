//! The interpretation of OpenAI Responses API streams (`POST /v1/responses`, `--backend
//! openai-responses`), beside the completions/chat interpretation of [`crate::openai`]: the
//! same [`Interpreter`], the same token rules, other event shapes.
//!
//! Each SSE event's data is a JSON object whose `type` names it (the SSE `event:` line too; the
//! data's `type` wins). What carries tokens: non-empty `delta` text of
//! `response.output_text.delta` (content), `response.refusal.delta` (refusal),
//! `response.reasoning_text.delta`, `response.reasoning.delta` and
//! `response.reasoning_summary_text.delta` (reasoning), and a non-empty `delta` of
//! `response.function_call_arguments.delta` / `response.custom_tool_call_input.delta`
//! (tool). Every other event (`response.created`, `response.output_text.done` with the
//! whole text, …) carries none.
//!
//! The terminal signal is `response.completed` (when the response's own `status` agrees:
//! `terminal_verdict`): its `response.usage` (`input_tokens`,
//! `output_tokens`, `input_tokens_details.cached_tokens`) gives the token counts as chat's usage
//! chunk does; `finish_reason` is `length` when its `incomplete_details.reason` is
//! `max_output_tokens`, else `stop`. A `response.incomplete` for `max_output_tokens` is the same
//! answer cut at the requested length (OpenAI sends it when `max_output_tokens` is reached;
//! chat's `finish_reason: length`) and completes too; for any other reason it is a failure
//! (`stream_error`, with the reason), as are `response.failed` (with `response.error`'s code
//! and message) and an `error` event. A stream that ends without one of them was cut short
//! (`stream_error`, [`crate::openai::INCOMPLETE_RESPONSES_STREAM`]); `[DONE]` is not a
//! Responses terminal. Tokens after the terminal event fail the request (`stream_error`,
//! "tokens after response.completed: …"), as tokens after chat's end do. A whole (non-streamed) `response` object is read as one event.

use inferbench_core::{ErrorClass, RequestRecord};
use serde_json::Value;

use serde::Deserialize;

use crate::lenient::{
    self, arr_at, count_at, obj_at, str_at, LCount, TextKind, TextWire, WrongType,
};
use crate::openai::{excerpt, finish_reason_word, Here, Interpreter, UsageCounts};

/// Handles one event's `data` (SSE event name `event`, possibly empty) that arrived at `t_ns`.
pub(crate) fn on_data(
    it: &mut Interpreter,
    event: &[u8],
    data: &[u8],
    t_ns: u64,
    rec: &mut RequestRecord,
) {
    if data == b"[DONE]" {
        return;
    }
    let (v, relaxed) = match serde_json::from_slice::<Value>(data) {
        Ok(v) => (v, false),
        Err(err) => {
            match std::str::from_utf8(data)
                .ok()
                .and_then(lenient::parse_relaxed)
            {
                Some(v) => (v, true),
                None => {
                    it.fail(
                        ErrorClass::Malformed,
                        format!(
                            "undecodable JSON in event data ({err}): {}",
                            String::from_utf8_lossy(excerpt(data))
                        ),
                    );
                    return;
                }
            }
        }
    };
    // Every field read here is read typed (`lenient`'s one rule: null is absent, another
    // type fails the request naming it; issue 39's typed checks).
    let kind = match str_at(&v, "type") {
        Ok(Some(t)) => t.to_owned(),
        Ok(None) => String::from_utf8_lossy(event).into_owned(),
        Err(w) => return it.wrong_type(&w),
    };
    // A whole response object (non-streamed), or one without a `type`.
    if kind.is_empty() || kind == "response" {
        if v.get("object").and_then(Value::as_str) == Some("response") {
            return whole_response(it, &v, relaxed, t_ns, rec);
        }
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return it.fail(
                ErrorClass::StreamError,
                format!("error object: {}", cut(&v["error"].to_string())),
            );
        }
        return;
    }
    let delta_kind = match kind.as_str() {
        "response.output_text.delta" => Some(TextKind::Content),
        "response.refusal.delta" => Some(TextKind::Refusal),
        "response.reasoning_text.delta"
        | "response.reasoning.delta"
        | "response.reasoning_summary_text.delta" => Some(TextKind::Reasoning),
        _ => None,
    };
    if let Some(k) = delta_kind {
        // The delta is read as a chat chunk's text field is, by the one rule of every
        // backend ([`TextWire`]): a string is text, typed parts are read as parts, a number
        // or a bool fails the request naming it (issue 39's leftovers, 4; fresh tester of
        // issue 39, f14 item 1: `delta: 12345` between two strings was dropped silently).
        let field = v.get("delta").map_or(TextWire::None, |d| {
            TextWire::deserialize(d).unwrap_or_else(|_| TextWire::NotText(d.to_string()))
        });
        let mut here = Here::default();
        it.take_text(&field, k, relaxed, rec, &mut here);
        if it.failure.is_some() {
            return;
        }
        if here.content || here.refusal || here.reasoning {
            it.token_chunk(&here, None, t_ns, rec);
        } else if k == TextKind::Content && matches!(field, TextWire::Str(_)) {
            it.empty_content(t_ns, rec);
        }
        return;
    }
    match kind.as_str() {
        "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
            // Arguments are JSON text: a number, a bool, an array or an object is no piece of
            // it (f14 item 1; issue 39's typed checks).
            if let Some(d) = v.get("delta").filter(|d| !d.is_null() && !d.is_string()) {
                return it.not_args(&d.to_string());
            }
            let non_empty = v
                .get("delta")
                .is_some_and(|d| d.as_str().map_or(!d.is_null(), |s| !s.is_empty()));
            if non_empty {
                let here = Here {
                    tool: true,
                    ..Here::default()
                };
                it.token_chunk(&here, None, t_ns, rec);
            }
        }
        "response.completed" | "response.incomplete" => {
            // The response must be an object (issue 39's typed checks: a string completed as
            // `stop`).
            if let Err(w) = obj_at(&v, "response") {
                return it.wrong_type(&w);
            }
            let resp = v.get("response").unwrap_or(&Value::Null);
            match terminal_verdict(&kind, resp) {
                Ok((terminal, reason)) => finish(it, terminal, resp, reason.as_deref(), t_ns, rec),
                Err(msg) => it.fail(ErrorClass::StreamError, msg),
            }
        }
        "response.failed" => {
            let err = v.pointer("/response/error").unwrap_or(&Value::Null);
            it.fail(
                ErrorClass::StreamError,
                format!("response.failed: {}", describe_error(err)),
            );
        }
        "error" => it.fail(
            ErrorClass::StreamError,
            format!("error event: {}", describe_error(&v)),
        ),
        _ => {}
    }
}

/// Whether one event (SSE name `event`, `data`) carries tokens: a non-empty delta of a text
/// or tool event, as [`on_data`] reads them. For events after the terminal one.
pub(crate) fn carries_tokens(event: &[u8], data: &[u8]) -> bool {
    let v = serde_json::from_slice::<Value>(data).ok().or_else(|| {
        std::str::from_utf8(data)
            .ok()
            .and_then(lenient::parse_relaxed)
    });
    let Some(v) = v else {
        return false;
    };
    let kind = v.get("type").and_then(Value::as_str).map_or_else(
        || String::from_utf8_lossy(event).into_owned(),
        str::to_owned,
    );
    let delta = v.get("delta");
    match kind.as_str() {
        "response.output_text.delta"
        | "response.refusal.delta"
        | "response.reasoning_text.delta"
        | "response.reasoning.delta"
        | "response.reasoning_summary_text.delta" => match delta.map(TextWire::deserialize) {
            // As a chat chunk's text field ([`crate::openai::ChoiceWire::carries_tokens`]):
            // not text is something sent where text belongs.
            Some(Ok(TextWire::Str(t))) => !t.is_empty(),
            Some(Ok(TextWire::Parts(parts))) => parts.iter().any(|p| {
                let mut text = false;
                lenient::part_texts(p, TextKind::Content, &mut |_, t| text |= !t.is_empty())
                    .is_err()
                    || text
            }),
            Some(Ok(TextWire::NotText(_)) | Err(_)) => true,
            None | Some(Ok(TextWire::None)) => false,
        },
        "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
            delta.is_some_and(|d| d.as_str().map_or(!d.is_null(), |s| !s.is_empty()))
        }
        _ => false,
    }
}

/// The terminal event: usage, finish reason, the end of the stream at `t_ns`.
fn finish(
    it: &mut Interpreter,
    terminal: &'static str,
    resp: &Value,
    reason: Option<&str>,
    t_ns: u64,
    rec: &mut RequestRecord,
) {
    // A usage that is there but no object is invalid, as on chat (f14 item 2).
    if resp
        .get("usage")
        .is_some_and(|u| !u.is_object() && !u.is_null())
    {
        it.set_usage(
            &UsageCounts {
                prompt: LCount::default(),
                completion: LCount::default(),
                cached: LCount::default(),
                reasoning: LCount::default(),
                other_invalid: true,
            },
            rec,
        );
    }
    if let Some(u) = resp.get("usage").filter(|u| u.is_object()) {
        // A details field that is there but no object is invalid too (issue 39's typed
        // checks: `"input_tokens_details": 7` read as absent).
        let input = obj_at(u, "input_tokens_details");
        let output = obj_at(u, "output_tokens_details");
        let detail =
            |d: &Result<Option<&serde_json::Map<String, Value>>, WrongType>, key: &str| match d {
                Ok(Some(m)) => m.get(key).map_or(LCount::default(), count_of),
                _ => LCount::default(),
            };
        it.set_usage(
            &UsageCounts {
                prompt: count_at(u, "input_tokens"),
                completion: count_at(u, "output_tokens"),
                cached: detail(&input, "cached_tokens"),
                reasoning: detail(&output, "reasoning_tokens"),
                other_invalid: count_at(u, "total_tokens").1 || input.is_err() || output.is_err(),
            },
            rec,
        );
    }
    it.responses_terminal = terminal;
    rec.finish_reason = Some(
        if reason == Some("max_output_tokens") {
            "length"
        } else {
            "stop"
        }
        .to_string(),
    );
    it.responses_completed = true;
    it.done = true;
    it.done_ns = Some(t_ns);
}

/// A non-streamed `response` object: its output texts as one chunk each channel at `t_ns`.
fn whole_response(
    it: &mut Interpreter,
    v: &Value,
    relaxed: bool,
    t_ns: u64,
    rec: &mut RequestRecord,
) {
    let verdict = terminal_verdict("response", v);
    if let Err(msg) = verdict {
        return it.fail(ErrorClass::StreamError, msg);
    }
    let mut here = Here::default();
    if let Err(w) = output_texts(it, v, relaxed, rec, &mut here) {
        return it.wrong_type(&w);
    }
    if it.failure.is_some() {
        return;
    }
    if here.content || here.refusal || here.reasoning || here.tool {
        it.token_chunk(&here, None, t_ns, rec);
    }
    if let Ok((terminal, reason)) = verdict {
        finish(it, terminal, v, reason.as_deref(), t_ns, rec);
    }
}

/// Takes the texts of a whole response's `output` items (content, refusal and reasoning
/// parts; a tool call is a tool token), each field read typed: `output`, an item's `content`
/// and `summary` must be arrays, an item and a part objects, their `type` a string, a part's
/// `text` / `refusal` a string (a number or a bool there is [`Interpreter::not_text`]'s
/// message); any other type is the [`WrongType`] returned (issue 39's typed checks).
fn output_texts(
    it: &mut Interpreter,
    v: &Value,
    relaxed: bool,
    rec: &mut RequestRecord,
    here: &mut Here,
) -> Result<(), WrongType> {
    for (i, item) in arr_at(v, "output")?.into_iter().flatten().enumerate() {
        let at = format!("output[{i}]");
        if !item.is_object() {
            return Err(WrongType::new(at, item.to_string(), "an object"));
        }
        let under = |w: WrongType| w.under(&at);
        let item_kind = str_at(item, "type").map_err(under)?.unwrap_or("");
        if item_kind == "function_call" || item_kind == "custom_tool_call" {
            here.tool = true;
            continue;
        }
        let parts = arr_at(item, "content").map_err(under)?;
        let summary = arr_at(item, "summary").map_err(under)?;
        let content = parts.into_iter().flatten().enumerate();
        let summary = summary.into_iter().flatten().enumerate();
        let all = (content.map(|(n, p)| ("content", n, p)))
            .chain(summary.map(|(n, p)| ("summary", n, p)));
        for (key, n, part) in all {
            let at = format!("{at}.{key}[{n}]");
            if !part.is_object() {
                return Err(WrongType::new(at, part.to_string(), "an object"));
            }
            let under = |w: WrongType| w.under(&at);
            let part_kind = str_at(part, "type").map_err(under)?.unwrap_or("");
            let k = match (item_kind, part_kind) {
                (_, "refusal") => TextKind::Refusal,
                ("reasoning", _) | (_, "reasoning_text") | (_, "summary_text") => {
                    TextKind::Reasoning
                }
                _ => TextKind::Content,
            };
            let field = part.get("text").or_else(|| part.get("refusal"));
            // A part's text that is a number or a bool (`{"type": "output_text", "text": 5}`):
            // the output cannot be read (issue 39's leftovers, 4).
            if let Some(bad) = field.filter(|t| t.is_number() || t.is_boolean()) {
                it.not_text(k, &bad.to_string());
                return Ok(());
            }
            let key = if part.get("text").is_some() {
                "text"
            } else {
                "refusal"
            };
            if let Some(t) = str_at(part, key).map_err(under)? {
                it.take_text(&TextWire::Str(t.into()), k, relaxed, rec, here);
            }
        }
    }
    Ok(())
}

/// The one rule of a response's end, for the terminal events (`kind`: `response.completed`,
/// `response.incomplete`) and a whole response object (`kind` `response`): the event and the
/// response's own `status` must both say it ended well (issue 39, fresh tester's finding 5d: a
/// `response.completed` whose response said `status: "failed"` counted as a success).
/// `status` `failed` fails with the response's `error` ("KIND with status failed: CODE:
/// MESSAGE"; a whole response: "response.failed: …"); `incomplete` (or the
/// `response.incomplete` event) completes only for `incomplete_details.reason`
/// `max_output_tokens` (the answer cut at the requested length: terminal
/// `response.incomplete`), else fails ("response.incomplete: REASON"); any status other than
/// `completed` (`cancelled`, `in_progress`, `queued`, a non-string) fails ("KIND with status
/// S"); `completed` or no status completes (terminal `response.completed`). Returns the
/// terminal's name and the incomplete reason.
fn terminal_verdict(kind: &str, resp: &Value) -> Result<(&'static str, Option<String>), String> {
    // The status and the reason are words read by the rule of a chat `finish_reason`
    // ([`finish_reason_word`]: `"\u{200b}completed\u{200b}"` is `completed`; f14 item 3).
    let typed = |w: WrongType| w.message();
    let details = obj_at(resp, "incomplete_details").map_err(|w| typed(w.under("response")))?;
    let reason_raw = match details {
        Some(d) => str_at(&Value::Object(d.clone()), "reason")
            .map_err(|w| typed(w.under("response.incomplete_details")))?
            .map(str::to_owned),
        None => None,
    };
    let reason_raw = reason_raw.as_deref();
    let reason_word = reason_raw.and_then(finish_reason_word);
    let reason = reason_word.as_deref().or(reason_raw);
    let status = resp.get("status").filter(|s| !s.is_null());
    let status_str = status.map(|s| {
        s.as_str().map_or_else(
            || s.to_string(),
            |t| finish_reason_word(t).unwrap_or_else(|| t.to_owned()),
        )
    });
    match status_str.as_deref() {
        Some("failed") => {
            let err = describe_error(resp.get("error").unwrap_or(&Value::Null));
            return Err(if kind == "response" {
                format!("response.failed: {err}")
            } else {
                format!("{kind} with status failed: {err}")
            });
        }
        None | Some("completed") | Some("incomplete") => {}
        Some(other) => return Err(format!("{kind} with status {}", cut(other))),
    }
    if kind == "response.incomplete" || status_str.as_deref() == Some("incomplete") {
        if reason != Some("max_output_tokens") {
            return Err(format!(
                "response.incomplete: {}",
                reason.unwrap_or("no reason given")
            ));
        }
        return Ok(("response.incomplete", reason_word));
    }
    Ok(("response.completed", reason_word))
}

/// A usage count read by the rule of every backend ([`LCount`]): a JSON non-negative integer
/// literal is a count; a string, a negative number, a literal with a fraction or an exponent,
/// any other type is there but not a count (`usage_invalid`); null is absent.
fn count_of(v: &Value) -> LCount {
    LCount::deserialize(v).unwrap_or(LCount::INVALID)
}

/// `code: message` of an error object (either may be missing), else its JSON.
fn describe_error(e: &Value) -> String {
    let code = e.get("code").filter(|c| !c.is_null()).map(|c| match c {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let msg = e.get("message").and_then(Value::as_str);
    let s = match (code, msg) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (None, Some(m)) => m.to_string(),
        (Some(c), None) => c,
        (None, None) if e.is_null() => "no error details".to_string(),
        (None, None) => e.to_string(),
    };
    cut(&s)
}

/// At most 512 characters.
fn cut(s: &str) -> String {
    s.chars().take(512).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::Backend;
    use crate::sse::SseEvent;
    use inferbench_core::{Channel, TokenSource};

    /// Feeds `(event name, data, t_ns)` to an interpreter of `backend`.
    fn run(backend: Backend, empty: bool, events: &[(&str, &str, u64)]) -> RequestRecord {
        let mut it = Interpreter::for_backend(backend, empty);
        let mut rec = RequestRecord::default();
        for (name, data, t) in events {
            let ev = SseEvent {
                event: name.as_bytes(),
                data: data.as_bytes(),
            };
            it.on_event(ev, *t, &mut rec);
        }
        let complete = it.complete();
        it.finish(&mut rec, None);
        rec.success = complete;
        rec
    }

    fn delta(kind: &str, text: &str) -> String {
        format!(
            r#"{{"type":"{kind}","item_id":"msg_1","output_index":0,"content_index":0,"delta":{}}}"#,
            serde_json::to_string(text).unwrap()
        )
    }

    const COMPLETED: &str = r#"{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":3},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":11}}}"#;

    /// Issue 39's leftovers, 4: a delta or a part's text that is a number or a bool fails the
    /// request (`stream_error`, naming the value), as a chat chunk's text field does; the text
    /// before it is kept.
    #[test]
    fn a_delta_or_part_text_that_is_not_a_string_fails_the_request() {
        let c1 = delta("response.output_text.delta", "Hel");
        let whole = |part: &str| {
            format!(
                r#"{{"object":"response","status":"completed","output":[{{"type":"message","content":[{part}]}}]}}"#
            )
        };
        for (events, channel, value, text) in [
            (
                vec![
                    ("response.output_text.delta", c1.clone()),
                    (
                        "response.output_text.delta",
                        r#"{"type":"response.output_text.delta","delta":5}"#.to_string(),
                    ),
                ],
                "output",
                "5",
                "Hel",
            ),
            (
                vec![(
                    "response.refusal.delta",
                    r#"{"type":"response.refusal.delta","delta":true}"#.to_string(),
                )],
                "refusal",
                "true",
                "",
            ),
            (
                vec![("", whole(r#"{"type":"output_text","text":5}"#))],
                "output",
                "5",
                "",
            ),
            (
                vec![("", whole(r#"{"type":"refusal","refusal":1.5}"#))],
                "refusal",
                "1.5",
                "",
            ),
        ] {
            let evs: Vec<(&str, &str, u64)> = events
                .iter()
                .enumerate()
                .map(|(i, (n, d))| (*n, d.as_str(), 10 * (i as u64 + 1)))
                .collect();
            let mut it = Interpreter::for_backend(Backend::OpenAiResponses, false);
            let mut rec = RequestRecord::default();
            for (name, data, t) in &evs {
                let ev = SseEvent {
                    event: name.as_bytes(),
                    data: data.as_bytes(),
                };
                it.on_event(ev, *t, &mut rec);
            }
            assert_eq!(
                it.failure,
                Some((
                    ErrorClass::StreamError,
                    format!(
                        "a chunk's {channel} text field held {value}, not a string: the \
                         server's output cannot be read"
                    )
                )),
                "{events:?}"
            );
            assert_eq!(rec.output_text, text, "{events:?}");
        }
    }

    #[test]
    fn responses_stream_equals_the_same_answer_over_chat() {
        let created = r#"{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress"}}"#;
        let r1 = delta("response.reasoning_text.delta", "think");
        let c1 = delta("response.output_text.delta", "Hel");
        let c2 = delta("response.output_text.delta", "lo");
        let c3 = delta("response.output_text.delta", "!");
        let done_text = r#"{"type":"response.output_text.done","text":"Hello!"}"#;
        let resp = run(
            Backend::OpenAiResponses,
            false,
            &[
                ("response.created", created, 5),
                ("response.reasoning_text.delta", &r1, 10),
                ("response.output_text.delta", &c1, 20),
                ("response.output_text.delta", &c2, 30),
                ("response.output_text.delta", &c3, 40),
                ("response.output_text.done", done_text, 41),
                ("response.completed", COMPLETED, 50),
            ],
        );
        let chat = run(
            Backend::OpenAiChat,
            false,
            &[
                (
                    "",
                    r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
                    5,
                ),
                (
                    "",
                    r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
                    10,
                ),
                ("", r#"{"choices":[{"delta":{"content":"Hel"}}]}"#, 20),
                ("", r#"{"choices":[{"delta":{"content":"lo"}}]}"#, 30),
                (
                    "",
                    r#"{"choices":[{"delta":{"content":"!"},"finish_reason":"stop"}]}"#,
                    40,
                ),
                (
                    "",
                    r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":3}}}"#,
                    45,
                ),
                ("", "[DONE]", 50),
            ],
        );
        assert!(resp.success && chat.success);
        assert_eq!(resp.output_text, "Hello!");
        assert_eq!(resp.output_text, chat.output_text);
        assert_eq!(resp.first_token_ns, Some(10));
        assert_eq!(resp.first_output_token_ns, Some(20));
        assert_eq!(resp.last_token_ns, Some(40));
        assert_eq!(resp.chunks, chat.chunks);
        assert_eq!(
            resp.chunks.iter().map(|c| c.channel).collect::<Vec<_>>(),
            [
                Channel::Reasoning,
                Channel::Content,
                Channel::Content,
                Channel::Content
            ]
        );
        assert_eq!((resp.prompt_tokens, resp.completion_tokens), (7, 4));
        assert_eq!((chat.prompt_tokens, chat.completion_tokens), (7, 4));
        assert_eq!(resp.cached_tokens, Some(3));
        assert_eq!(resp.completion_tokens_source, TokenSource::Server);
        assert_eq!(resp.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn only_response_completed_completes() {
        let c1 = delta("response.output_text.delta", "a");
        // Cut short: no terminal event; `[DONE]` is not one for Responses.
        let cut_short = run(
            Backend::OpenAiResponses,
            false,
            &[("", &c1, 10), ("", "[DONE]", 20)],
        );
        assert!(!cut_short.success);
        assert_eq!(cut_short.completion_tokens, 1);
        // Capped at max_output_tokens: complete, finish `length`.
        let inc = r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":2,"output_tokens":1}}}"#;
        let capped = run(
            Backend::OpenAiResponses,
            false,
            &[("", &c1, 10), ("", inc, 20)],
        );
        assert!(capped.success);
        assert_eq!(capped.finish_reason.as_deref(), Some("length"));
        assert_eq!(capped.completion_tokens, 1);
    }

    #[test]
    fn failed_incomplete_and_error_events_fail_with_their_cause() {
        let c1 = delta("response.output_text.delta", "a");
        let cases = [
            (
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
                "response.failed: server_error: boom",
            ),
            (
                r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}"#,
                "response.incomplete: content_filter",
            ),
            (
                r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#,
                "error event: rate_limit_exceeded: slow down",
            ),
        ];
        for (ev, want) in cases {
            let mut it = Interpreter::for_backend(Backend::OpenAiResponses, false);
            let mut rec = RequestRecord::default();
            on_data(&mut it, b"", c1.as_bytes(), 10, &mut rec);
            on_data(&mut it, b"", ev.as_bytes(), 20, &mut rec);
            let (class, msg) = it.failure.clone().unwrap();
            assert_eq!(class, ErrorClass::StreamError);
            assert_eq!(msg, want);
            assert!(!it.complete());
        }
        let mut it = Interpreter::for_backend(Backend::OpenAiResponses, false);
        let mut rec = RequestRecord::default();
        on_data(&mut it, b"", b"{\"type\":", 10, &mut rec);
        assert_eq!(it.failure.unwrap().0, ErrorClass::Malformed);
    }

    #[test]
    fn tool_refusal_and_empty_deltas() {
        let tool = delta("response.function_call_arguments.delta", "{\"a\":");
        let refusal = delta("response.refusal.delta", "no");
        let empty = delta("response.output_text.delta", "");
        let rec = run(
            Backend::OpenAiResponses,
            false,
            &[
                ("", &empty, 5),
                ("", &tool, 10),
                ("", &refusal, 20),
                ("", COMPLETED, 30),
            ],
        );
        assert_eq!(
            rec.chunks
                .iter()
                .map(|c| (c.t_ns, c.channel))
                .collect::<Vec<_>>(),
            [(10, Channel::Tool), (20, Channel::Refusal)]
        );
        assert_eq!(rec.first_token_ns, Some(10));
        assert_eq!(rec.first_output_token_ns, Some(20));
        assert_eq!(rec.output_text, "");
        // --allow-empty-content: the empty delta ends TTFT and TTFO, adds no chunk.
        let rec = run(
            Backend::OpenAiResponses,
            true,
            &[("", &empty, 5), ("", &tool, 10), ("", COMPLETED, 30)],
        );
        assert_eq!(rec.first_token_ns, Some(5));
        assert_eq!(rec.first_output_token_ns, Some(5));
        assert_eq!(rec.chunks.len(), 1);
    }

    proptest::proptest! {
        /// Arbitrary bytes, and Responses-shaped events with random values in every text and
        /// count field, never panic the interpreter.
        #[test]
        fn responses_interpreter_never_panics(
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            v in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::Just("\"".to_string()),
                    proptest::prelude::Just(r"\ud83d".to_string()),
                    proptest::prelude::Just(r"\ude00".to_string()),
                    proptest::prelude::Just("[".to_string()),
                    proptest::prelude::Just("{".to_string()),
                    proptest::prelude::Just("}".to_string()),
                    proptest::prelude::Just(":".to_string()),
                    proptest::prelude::Just("null".to_string()),
                    proptest::prelude::Just("1e400".to_string()),
                    proptest::prelude::Just("-1".to_string()),
                    proptest::prelude::Just("NaN".to_string()),
                    "[a-z]{1,3}",
                ],
                0..30,
            ),
        ) {
            let v = v.concat();
            let mut it = Interpreter::for_backend(Backend::OpenAiResponses, true);
            let mut rec = RequestRecord::default();
            it.on_json(&raw, 1, &mut rec);
            for kind in ["response.output_text.delta", "response.completed", "response.failed", "error"] {
                let shaped = format!(
                    r#"{{"type":"{kind}","delta":{v},"response":{{"usage":{{"output_tokens":{v}}},"error":{v},"incomplete_details":{v}}},"output":{v}}}"#
                );
                on_data(&mut it, kind.as_bytes(), shaped.as_bytes(), 2, &mut rec);
            }
            let whole = format!(r#"{{"object":"response","output":[{{"type":{v},"content":[{{"text":{v}}}]}}],"usage":{v}}}"#);
            let mut it2 = Interpreter::for_backend(Backend::OpenAiResponses, false);
            it2.on_json(whole.as_bytes(), 3, &mut rec);
            it.finish(&mut rec, Some(&|s: &str| s.len()));
            it2.finish(&mut rec, None);
        }
    }

    #[test]
    fn whole_response_object_is_one_chunk() {
        let body = r#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"hm"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi there"}]}],"usage":{"input_tokens":3,"output_tokens":5}}"#;
        let mut it = Interpreter::for_backend(Backend::OpenAiResponses, false);
        let mut rec = RequestRecord::default();
        it.on_json(body.as_bytes(), 77, &mut rec);
        assert!(it.complete());
        it.finish(&mut rec, None);
        assert_eq!(rec.output_text, "Hi there");
        assert_eq!(rec.first_token_ns, Some(77));
        assert_eq!(rec.chunks.len(), 1);
        assert_eq!((rec.prompt_tokens, rec.completion_tokens), (3, 5));
    }
}
