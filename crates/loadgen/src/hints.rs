//! What to tell a user whose run the server refused outright: `--base-url` ending in `/v1`
//! (the endpoint already starts with `/v1/`), caught before any request (HTTP 404 answers are
//! explained by [`inferbench_client::models`]); and the model a run without `--model` sends
//! (the server's first).

use inferbench_client::models::model_ids;
use inferbench_core::ExitStatus;

pub use inferbench_client::models::doubled_v1;

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
}
