//! What to tell a user whose run the server refused outright: `--base-url` ending in `/v1`
//! (the endpoint already starts with `/v1/`), caught before any request, and HTTP 404 answers
//! after the run, explained by the server's own `/v1/models` (a wrong `--model`) or else by
//! the request path; and the model a run without `--model` sends (the server's first).

use inferbench_core::ExitStatus;

/// `Some(reason)` when `base_url` ends in `/v1` and `endpoint` starts with `/v1/`: requests
/// would go to `…/v1/v1/…`, which servers answer with 404. The reason names the fix.
pub fn doubled_v1(base_url: &str, endpoint: &str) -> Option<String> {
    let base = base_url.trim().trim_end_matches('/');
    let ep = format!("/{}", endpoint.trim().trim_start_matches('/'));
    let root = base.strip_suffix("/v1")?;
    if !ep.starts_with("/v1/") {
        return None;
    }
    Some(format!(
        "should not end in /v1: the endpoint {ep} is appended (requests would go to \
         {base}{ep}); use --base-url {root}"
    ))
}

/// The model a run without `--model` sends: the first id the server's `GET
/// {base_url}/v1/models` lists, as vLLM's `bench serve` picks it. Errors (each naming the URL and
/// `--model`): the server cannot be reached, answers another status than 200, or lists none.
pub async fn served_model(base_url: &str) -> anyhow::Result<String> {
    let url = format!("{}/v1/models", base_url.trim().trim_end_matches('/'));
    let timeout = std::time::Duration::from_secs(10);
    let (why, status) = match inferbench_client::http_get(&url, timeout).await {
        Ok((200, body)) => match model_ids(&body).into_iter().next() {
            Some(id) => return Ok(id),
            None => ("it lists no model".to_string(), ExitStatus::Usage),
        },
        Ok((code, _)) => (format!("it answered HTTP {code}"), ExitStatus::Usage),
        // A server that cannot be reached ends as `bench` against it would: 3.
        Err(e) => (e, ExitStatus::Unreachable),
    };
    Err(inferbench_core::StatusError {
        status,
        message: format!(
            "--model not given and the server's {url} cannot say which model it serves \
             ({why}): pass --model (or check the address: --base-url, or --host and --port)"
        ),
    }
    .into())
}

/// The line that names the model [`served_model`] picked: `model "M": the first model the
/// server's /v1/models lists (--model not given)`.
pub fn served_model_note(model: &str) -> String {
    format!("model {model:?}: the first model the server's /v1/models lists (--model not given)")
}

/// The model ids an OpenAI-compatible `/v1/models` body lists (`{"data": [{"id": …}, …]}`),
/// in its order; empty for any other body.
pub fn model_ids(body: &[u8]) -> Vec<String> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    v.get("data")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("id")?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a failed request's message is an HTTP 404 answer (`HTTP 404 Not Found: …`).
pub fn is_not_found(error: &str) -> bool {
    error.starts_with("HTTP 404")
}

/// The hint after requests to `url` for `model` were answered 404 (`sample`: one such error
/// message). `served`: the ids of the server's `/v1/models`, `None` when it could not be read.
pub fn not_found_hint(model: &str, url: &str, sample: &str, served: Option<&[String]>) -> String {
    match served {
        Some(ids) if !ids.is_empty() && !ids.iter().any(|m| m == model) => format!(
            "the server does not serve model {model:?}; its /v1/models lists: {} (pass one with \
             --model)",
            ids.join(", ")
        ),
        Some(ids) if !ids.is_empty() => format!(
            "the server answered HTTP 404 for {url} although its /v1/models lists {model:?}: \
             check --base-url and --endpoint"
        ),
        _ => {
            let s = sample.to_ascii_lowercase();
            if s.contains("model") && (s.contains("does not exist") || s.contains("not found")) {
                format!(
                    "the server does not serve model {model:?} (its /v1/models could not be \
                     read to list the ones it does)"
                )
            } else {
                format!("the server answered HTTP 404 for {url}: check --base-url and --endpoint")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_v1_is_caught_with_the_fix() {
        assert_eq!(
            doubled_v1("http://h:8000/v1", "/v1/completions").as_deref(),
            Some(
                "should not end in /v1: the endpoint /v1/completions is appended (requests \
                 would go to http://h:8000/v1/v1/completions); use --base-url http://h:8000"
            )
        );
        assert!(doubled_v1("http://h:8000/v1/", "v1/chat/completions").is_some());
        assert_eq!(doubled_v1("http://h:8000", "/v1/completions"), None);
        // A base under /v1 with an endpoint below it is what the user asked for.
        assert_eq!(doubled_v1("http://h:8000/v1", "/completions"), None);
        assert_eq!(doubled_v1("http://h:8000/api/v10", "/v1/completions"), None);
    }

    #[test]
    fn models_list_and_hints() {
        let body =
            br#"{"object":"list","data":[{"id":"Llama-3.1-8B","object":"model"},{"id":"x"}]}"#;
        let ids = model_ids(body);
        assert_eq!(ids, vec!["Llama-3.1-8B".to_string(), "x".to_string()]);
        assert!(model_ids(b"not json").is_empty());
        let url = "http://h/v1/completions";
        let sample = "HTTP 404 Not Found: {\"message\":\"The model `m` does not exist.\"}";
        assert!(is_not_found(sample));
        assert!(!is_not_found("HTTP 503 Service Unavailable: busy"));
        assert_eq!(
            not_found_hint("m", url, sample, Some(&ids)),
            "the server does not serve model \"m\"; its /v1/models lists: Llama-3.1-8B, x \
             (pass one with --model)"
        );
        assert_eq!(
            not_found_hint("x", url, "HTTP 404 Not Found: no route", Some(&ids)),
            "the server answered HTTP 404 for http://h/v1/completions although its /v1/models \
             lists \"x\": check --base-url and --endpoint"
        );
        assert_eq!(
            not_found_hint("m", url, sample, None),
            "the server does not serve model \"m\" (its /v1/models could not be read to list \
             the ones it does)"
        );
        assert_eq!(
            not_found_hint("m", url, "HTTP 404 Not Found: ", None),
            "the server answered HTTP 404 for http://h/v1/completions: check --base-url and \
             --endpoint"
        );
    }
}
