//! Trial of issue 39, finding 4: the requested choice is resolved per choice, not per chunk.
//! Only an explicit `index: 0`, or the only choice of a chunk without an index, is output; a
//! choice without index beside others, or with a negative index, is `extra_choice` and never
//! counted, and its `finish_reason` does not end the stream (completions and chat alike).

mod common;

use std::time::Duration;

use common::{send_hi, serve_events};
use inferbench_client::openai::INCOMPLETE_STREAM;
use inferbench_client::{Backend, Client, ClientConfig};
use inferbench_core::{Anomaly, ErrorClass};

const BACKENDS: [Backend; 2] = [Backend::OpenAiCompletions, Backend::OpenAiChat];

/// One choice's JSON for `backend`: `index` (raw JSON, or none), its text, its finish reason.
fn choice(backend: Backend, index: Option<&str>, text: &str, finish: Option<&str>) -> String {
    let mut fields = Vec::new();
    if let Some(i) = index {
        fields.push(format!("\"index\":{i}"));
    }
    fields.push(match backend {
        Backend::OpenAiChat => format!("\"delta\":{{\"content\":\"{text}\"}}"),
        _ => format!("\"text\":\"{text}\""),
    });
    if let Some(f) = finish {
        fields.push(format!("\"finish_reason\":\"{f}\""));
    }
    format!("{{{}}}", fields.join(","))
}

fn event(choices: &[String]) -> String {
    format!("data: {{\"choices\":[{}]}}\n\n", choices.join(","))
}

fn client(url: String, backend: Backend) -> Client {
    Client::new(ClientConfig {
        base_url: url,
        backend,
        model: "m".into(),
        idle_timeout: Duration::from_secs(2),
        ..Default::default()
    })
    .unwrap()
}

/// A choice without index (or `index: -1`) in the same chunk as `index: 0`: only "Hello" is
/// output, 1 token chunk, and the request carries `extra_choice`.
#[tokio::test]
async fn only_index_zero_is_output_beside_other_choices() {
    for backend in BACKENDS {
        for other in [None, Some("-1"), Some("1"), Some("\"0\"")] {
            let events = [
                event(&[
                    choice(backend, other, "X", None),
                    choice(backend, Some("0"), "Hello", None),
                ]),
                event(&[choice(backend, Some("0"), "", Some("stop"))]),
                "data: [DONE]\n\n".to_string(),
            ];
            let rec = send_hi(&client(serve_events(&events).await, backend), Some(8)).await;
            assert!(rec.success, "{backend:?} {other:?}: {:?}", rec.error);
            assert_eq!(rec.output_text, "Hello", "{backend:?} {other:?}");
            assert_eq!(rec.chunks.len(), 1, "{backend:?} {other:?}");
            assert!(
                rec.anomalies.contains(&Anomaly::ExtraChoice),
                "{backend:?} {other:?}: {:?}",
                rec.anomalies
            );
        }
    }
}

/// A `finish_reason` on `index: -1` alone does not end the stream: a body that ends after it
/// without `[DONE]` or usage fails as incomplete. The only choice of a chunk without an index
/// is still the answer.
#[tokio::test]
async fn a_finish_reason_on_another_index_does_not_end_the_stream() {
    for backend in BACKENDS {
        let events = [
            event(&[choice(backend, Some("0"), "Hello", None)]),
            event(&[choice(backend, Some("-1"), "", Some("stop"))]),
        ];
        let rec = send_hi(&client(serve_events(&events).await, backend), Some(8)).await;
        assert!(!rec.success, "{backend:?}");
        assert_eq!(
            rec.error_class,
            Some(ErrorClass::StreamError),
            "{backend:?}"
        );
        assert_eq!(rec.error.as_deref(), Some(INCOMPLETE_STREAM), "{backend:?}");
        let events = [
            event(&[choice(backend, None, "Hi", None)]),
            event(&[choice(backend, None, "", Some("stop"))]),
            "data: [DONE]\n\n".to_string(),
        ];
        let rec = send_hi(&client(serve_events(&events).await, backend), Some(8)).await;
        assert!(rec.success, "{backend:?}: {:?}", rec.error);
        assert_eq!(rec.output_text, "Hi");
        assert!(!rec.anomalies.contains(&Anomaly::ExtraChoice));
    }
}

/// Trial of issue 39, finding 8, and the fresh tester's finding 5e: tokens after a
/// `finish_reason` fail the request as tokens after `[DONE]` do (one rule: nothing of an
/// answer follows its end), whether the body then ends, sends `[DONE]`, or the reason came on
/// a content-less role chunk; the record keeps the reason the message names.
#[tokio::test]
async fn tokens_after_a_finish_reason_fail_the_request() {
    for backend in BACKENDS {
        for done in [false, true] {
            for first_text in ["Hello", ""] {
                let more = event(&[choice(backend, Some("0"), " more", None)]);
                let mut events = vec![
                    event(&[choice(backend, Some("0"), first_text, Some("stop"))]),
                    more.clone(),
                    event(&[choice(backend, Some("0"), " again", None)]),
                ];
                if done {
                    events.push("data: [DONE]\n\n".to_string());
                }
                let what = format!("{backend:?} done {done} first {first_text:?}");
                let rec = send_hi(&client(serve_events(&events).await, backend), Some(8)).await;
                assert!(!rec.success, "{what}");
                assert_eq!(rec.error_class, Some(ErrorClass::StreamError), "{what}");
                let data = more.trim_start_matches("data: ").trim_end();
                assert_eq!(
                    rec.error.as_deref(),
                    Some(format!("tokens after finish_reason \"stop\": {data}").as_str()),
                    "{what}"
                );
                assert_eq!(rec.output_text, first_text, "{what}");
                assert_eq!(rec.finish_reason.as_deref(), Some("stop"), "{what}");
            }
        }
    }
}
