//! What a server says about the models it serves (`GET /v1/models`), and what a user whose
//! requests it answered with HTTP 404 is told: a wrong `--model` (named with the ones it does
//! serve) or a wrong path. Shared by `bench`, `replay` and `eval`; and the server URL of
//! vLLM's `--host`/`--port`.

/// A server's root URL from `--base-url`, else `--host` and `--port` (vLLM's rule:
/// `http://HOST:PORT`, an IPv6 host bracketed).
pub fn server_url(base_url: Option<&str>, host: &str, port: u16) -> String {
    match base_url {
        Some(u) => u.to_string(),
        None if host.contains(':') && !host.starts_with('[') => format!("http://[{host}]:{port}"),
        None => format!("http://{host}:{port}"),
    }
}

/// The server flags of `bench`, `replay`, `selftest` and `eval`, as vLLM's `bench serve` takes
/// them: `--base-url`, else `--host` and `--port`. [`ServerFlags::url`] is the root URL.
#[cfg(feature = "clap")]
#[derive(Debug, Clone, clap::Args)]
pub struct ServerFlags {
    /// Server root URL (http only). Default: http://HOST:PORT of --host and --port.
    #[arg(long, help_heading = "Target")]
    pub base_url: Option<String>,
    /// Server host, as vLLM's `bench serve` takes it (used when --base-url is not given).
    #[arg(
        long,
        default_value = "127.0.0.1",
        conflicts_with = "base_url",
        help_heading = "Target"
    )]
    pub host: String,
    /// Server port, as vLLM's `bench serve` takes it (used when --base-url is not given).
    #[arg(
        long,
        default_value_t = 8000,
        conflicts_with = "base_url",
        help_heading = "Target"
    )]
    pub port: u16,
}

#[cfg(feature = "clap")]
impl ServerFlags {
    /// The server's root URL ([`server_url`] of the three flags).
    pub fn url(&self) -> String {
        server_url(self.base_url.as_deref(), &self.host, self.port)
    }
}

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

/// Why requests to `endpoint` under `base_url` cannot be sent, checked before the server is
/// asked anything: a base doubling the endpoint's `/v1` ([`doubled_v1`]) or not a usable
/// `http://` URL ([`crate::target_uri`]). `Err` holds the reason, which callers give after
/// `--base-url: ` (`bench`, `replay`, `eval` alike).
pub fn check_base_url(base_url: &str, endpoint: &str) -> Result<(), String> {
    if let Some(reason) = doubled_v1(base_url, endpoint) {
        return Err(reason);
    }
    crate::target_uri(base_url, endpoint)
        .map(|_| ())
        .map_err(|e| e.to_string())
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

/// The context length, tokens, that an OpenAI-compatible `/v1/models` body reports for
/// `model` (vLLM's and the simulator's `max_model_len` on each entry): that model's entry, else
/// (no `model`, or not listed) the largest over all entries. `None` when no entry reports one,
/// or when one reports a value that is not a count ([`checked_max_model_len`] says which).
pub fn max_model_len(body: &[u8], model: Option<&str>) -> Option<u64> {
    checked_max_model_len(body, model).ok().flatten()
}

/// [`max_model_len`], with the count rule of every field the client reads (a JSON
/// non-negative integer literal, `lenient::LCount`; issue 39's typed checks: `"4096"`,
/// `4096.0` or `-1` were read as "reports none" silently).
///
/// # Errors
/// An entry read holds a `max_model_len` that is there but not a count: "the server's
/// /v1/models gives max_model_len \"4096\" for m, not a count of tokens" (the value as JSON, cut
/// to 40 characters).
pub fn checked_max_model_len(body: &[u8], model: Option<&str>) -> Result<Option<u64>, String> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Ok(None);
    };
    let Some(data) = v.get("data").and_then(serde_json::Value::as_array) else {
        return Ok(None);
    };
    let len = |m: &serde_json::Value| -> Result<Option<u64>, String> {
        match crate::lenient::count_at(m, "max_model_len") {
            crate::lenient::LCount(n, false) => Ok(n),
            _ => Err(format!(
                "the server's /v1/models gives max_model_len {} for {}, not a count of tokens",
                inferbench_core::text::one_line(&m["max_model_len"].to_string(), 40),
                m.get("id")
                    .map_or_else(|| "a model".to_string(), |id| id.to_string())
            )),
        }
    };
    let listed = model.and_then(|id| {
        data.iter()
            .find(|m| m.get("id").and_then(serde_json::Value::as_str) == Some(id))
    });
    match listed {
        Some(m) => len(m),
        None => {
            let mut most = None;
            for m in data {
                most = most.max(len(m)?);
            }
            Ok(most)
        }
    }
}

/// [`max_model_len`] of the server at `base_url` (`GET {base_url}/v1/models`, 3 s at most,
/// reached as `reach` says: TLS and proxy as the measured requests); `None` when it cannot be
/// asked or reports none (callers fall back to their own cap). A value that is not a count is
/// said in one notice line ([`inferbench_core::notice::line`]: "inferbench: the server's
/// /v1/models gives max_model_len … not a count of tokens: not used") and not used.
pub async fn served_max_model_len(
    base_url: &str,
    model: Option<&str>,
    reach: &crate::Reach,
) -> Option<u64> {
    let url = format!("{}/v1/models", base_url.trim().trim_end_matches('/'));
    match crate::http_get_via(&url, std::time::Duration::from_secs(3), reach).await {
        Ok((200, body)) => match checked_max_model_len(&body, model) {
            Ok(n) => n,
            Err(why) => {
                inferbench_core::notice::line(&format!("inferbench: {why}: not used"));
                None
            }
        },
        _ => None,
    }
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

/// The hint for requests for `model` to `url` that the server at `base_url` answered with
/// HTTP 404 (`sample`: one such error message), its `/v1/models` read (5 s at most) to name
/// the models it serves (reached as `reach` says). `None` when `sample` is not a 404.
pub async fn explain_not_found(
    base_url: &str,
    model: &str,
    url: &str,
    sample: &str,
    reach: &crate::Reach,
) -> Option<String> {
    if !is_not_found(sample) {
        return None;
    }
    let models = format!("{}/v1/models", base_url.trim().trim_end_matches('/'));
    let served = match crate::http_get_via(&models, std::time::Duration::from_secs(5), reach).await
    {
        Ok((200, body)) => Some(model_ids(&body)),
        _ => None,
    };
    Some(not_found_hint(model, url, sample, served.as_deref()))
}

/// Why [`served_model`] has no model to give; its message names the URL and `--model`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServedModelError {
    /// Nothing answered HTTP there: the server cannot be reached (the CLI ends as a run
    /// against it would, "server unreachable").
    #[error("{0}")]
    Unreachable(String),
    /// The question could not be asked (a `--tls-ca` that does not read), or the server
    /// answered another status than 200 or lists no model: the user's to fix (`--model`, the
    /// address; the CLI's usage error).
    #[error("{0}")]
    NoModel(String),
}

/// The model a run without `--model` sends: the first id the server's `GET
/// {base_url}/v1/models` lists, as vLLM's `bench serve` picks it (`bench`, `replay` and `eval`
/// alike), reached as `reach` says (an `https://` server over TLS).
///
/// # Errors
/// Each naming the URL and `--model`: [`ServedModelError::Unreachable`] when the server cannot
/// be reached; [`ServedModelError::NoModel`] when it cannot be asked, answers another status
/// than 200, or lists none.
pub async fn served_model(
    base_url: &str,
    reach: &crate::Reach,
) -> Result<String, ServedModelError> {
    let url = format!("{}/v1/models", base_url.trim().trim_end_matches('/'));
    // What cannot be set up (a `--tls-ca` that does not read) is the user's to fix: 2.
    if let Err(why) = crate::get::check_reach(&url, reach) {
        return Err(ServedModelError::NoModel(format!(
            "--model not given, and {url} cannot be asked which model the server serves: {why}"
        )));
    }
    let timeout = std::time::Duration::from_secs(10);
    let (why, unreachable) = match crate::http_get_via(&url, timeout, reach).await {
        Ok((200, body)) => match model_ids(&body).into_iter().next() {
            Some(id) => return Ok(id),
            None => ("it lists no model".to_string(), false),
        },
        Ok((code, _)) => (format!("it answered HTTP {code}"), false),
        // A server that cannot be reached ends as a run against it would.
        Err(e) => (e, true),
    };
    if unreachable {
        // Nothing answered HTTP there: --model would not help (trial 33 F6); a dead proxy is
        // named as what to fix (the one rule, `http::unreachable_advice`).
        Err(ServedModelError::Unreachable(format!(
            "--model not given, and {url} could not be asked which model the server serves \
             ({why}): {}",
            crate::http::unreachable_advice(&why)
        )))
    } else {
        Err(ServedModelError::NoModel(format!(
            "--model not given and the server's {url} cannot say which model it serves \
             ({why}): pass --model (or check the address: --base-url, or --host and --port)"
        )))
    }
}

/// The line that names the model [`served_model`] picked: `model "M": the first model the
/// server's /v1/models lists (--model not given)`.
pub fn served_model_note(model: &str) -> String {
    format!("model {model:?}: the first model the server's /v1/models lists (--model not given)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An https:// target without --model is asked over TLS (issue 41): a `--tls-ca` that
    /// does not read is named, not "plain HTTP only".
    #[tokio::test]
    async fn an_https_target_is_asked_over_tls() {
        let reach = crate::Reach {
            tls: crate::tls::TlsOptions {
                ca_file: Some("/nonexistent/ca.pem".into()),
                insecure: false,
            },
            ..Default::default()
        };
        let e = served_model("https://127.0.0.1:9", &reach)
            .await
            .unwrap_err();
        assert_eq!(
            e,
            ServedModelError::NoModel(
                "--model not given, and https://127.0.0.1:9/v1/models cannot be asked which model \
             the server serves: GET https://127.0.0.1:9/v1/models: --tls-ca /nonexistent/ca.pem: \
             No such file or directory (os error 2)"
                    .into()
            )
        );
    }

    #[test]
    fn models_list_and_hints() {
        let body =
            br#"{"object":"list","data":[{"id":"Llama-3.1-8B","object":"model"},{"id":"x"}]}"#;
        let ids = model_ids(body);
        assert_eq!(ids, vec!["Llama-3.1-8B".to_string(), "x".to_string()]);
        assert!(model_ids(b"not json").is_empty());
        let lens = br#"{"data":[{"id":"a","max_model_len":4096},{"id":"b","max_model_len":131072},{"id":"c"}]}"#;
        assert_eq!(max_model_len(lens, Some("a")), Some(4096));
        assert_eq!(max_model_len(lens, Some("c")), None);
        assert_eq!(max_model_len(lens, Some("zzz")), Some(131_072));
        assert_eq!(max_model_len(lens, None), Some(131_072));
        assert_eq!(max_model_len(body, None), None);
        assert_eq!(max_model_len(b"[]", None), None);
        // Issue 39's typed checks: a max_model_len that is not a count is said, not read as
        // "reports none"; null is none.
        for (lens, want) in [
            (
                &br#"{"data":[{"id":"a","max_model_len":"4096"}]}"#[..],
                r#"the server's /v1/models gives max_model_len "4096" for "a", not a count of tokens"#,
            ),
            (
                br#"{"data":[{"id":"a","max_model_len":4096.0}]}"#,
                r#"the server's /v1/models gives max_model_len 4096.0 for "a", not a count of tokens"#,
            ),
            (
                br#"{"data":[{"id":"b","max_model_len":1},{"max_model_len":-1}]}"#,
                r#"the server's /v1/models gives max_model_len -1 for a model, not a count of tokens"#,
            ),
        ] {
            assert_eq!(checked_max_model_len(lens, None), Err(want.to_string()));
            assert_eq!(max_model_len(lens, None), None);
        }
        let lens = br#"{"data":[{"id":"a","max_model_len":null},{"id":"b","max_model_len":8}]}"#;
        assert_eq!(checked_max_model_len(lens, Some("a")), Ok(None));
        assert_eq!(checked_max_model_len(lens, None), Ok(Some(8)));
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

    #[test]
    fn server_url_from_host_and_port() {
        assert_eq!(server_url(None, "127.0.0.1", 8000), "http://127.0.0.1:8000");
        assert_eq!(server_url(None, "::1", 8000), "http://[::1]:8000");
        assert_eq!(server_url(Some("http://h:1"), "x", 2), "http://h:1");
    }
}
