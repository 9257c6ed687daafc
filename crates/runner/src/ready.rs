//! Readiness: poll `GET /health` until it answers 2xx, then `GET /v1/models` until it lists a
//! model, within a timeout (reference/inferencex-producer.md §5.2 polls `/health` only; we also
//! wait for the model list because some servers answer `/health` before the model is loaded).
//! Fails at once when the engine process exits; every failure carries the last 100 log lines.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::engine::{log_tail, EngineProcess};

/// Lines of server log carried by readiness errors.
pub const LOG_TAIL_LINES: usize = 100;

/// Why an engine never became ready.
#[derive(Debug, thiserror::Error)]
pub enum ReadyError {
    /// The deadline passed.
    #[error("engine not ready after {waited_s:.1} s (last probe: {last}); last {LOG_TAIL_LINES} lines of {log}:\n{tail}")]
    Timeout {
        /// Seconds waited.
        waited_s: f64,
        /// Result of the last probe.
        last: String,
        /// Server log path.
        log: String,
        /// Last lines of the server log.
        tail: String,
    },
    /// The engine process exited before it was ready.
    #[error("engine exited ({status}) before it was ready; last {LOG_TAIL_LINES} lines of {log}:\n{tail}")]
    Exited {
        /// Exit status.
        status: String,
        /// Server log path.
        log: String,
        /// Last lines of the server log.
        tail: String,
    },
}

/// One HTTP GET: status code and body, or a transport error message (the client crate's).
pub use inferbench_client::http_get;
use inferbench_client::http_get_via;

/// Waits until `base_url` (e.g. `http://127.0.0.1:8888`) answers `/health` with 2xx and then
/// `/v1/models` with 2xx and a non-empty `data` list. Polls every `interval`; gives up after
/// `timeout`; returns the first model id listed. `engine`, when given, is checked between polls.
/// Each probe reaches the server as `reach` says (an `https://` server over TLS, verified with
/// the sweep's `--tls-ca` / `--insecure`).
pub async fn wait_ready(
    base_url: &str,
    timeout: Duration,
    interval: Duration,
    mut engine: Option<&mut EngineProcess>,
    log_path: &Path,
    reach: &inferbench_client::Reach,
) -> Result<String, ReadyError> {
    let start = Instant::now();
    let base = base_url.trim_end_matches('/');
    let mut health_ok = false;
    let mut last: String;
    loop {
        if let Some(e) = engine.as_deref_mut() {
            if let Some(status) = e.try_exited() {
                // Let the last writes reach the log before reading it.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(ReadyError::Exited {
                    status: status.to_string(),
                    log: log_path.display().to_string(),
                    tail: log_tail(log_path, LOG_TAIL_LINES),
                });
            }
        }
        let probe_timeout = interval.max(Duration::from_secs(2));
        if !health_ok {
            match http_get_via(&format!("{base}/health"), probe_timeout, reach).await {
                Ok((s, _)) if (200..300).contains(&s) => {
                    health_ok = true;
                    continue;
                }
                Ok((s, body)) => {
                    last = format!(
                        "/health -> {s} {}",
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    )
                }
                Err(e) => last = e,
            }
        } else {
            match http_get_via(&format!("{base}/v1/models"), probe_timeout, reach).await {
                Ok((s, body)) if (200..300).contains(&s) => {
                    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    if let Some(id) = v["data"]
                        .as_array()
                        .and_then(|d| d.first())
                        .and_then(|m| m["id"].as_str())
                    {
                        return Ok(id.to_string());
                    }
                    last = format!(
                        "/v1/models -> {s} without a model: {}",
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    );
                }
                Ok((s, _)) => last = format!("/v1/models -> {s}"),
                Err(e) => last = e,
            }
        }
        if start.elapsed() >= timeout {
            return Err(ReadyError::Timeout {
                waited_s: start.elapsed().as_secs_f64(),
                last,
                log: log_path.display().to_string(),
                tail: log_tail(log_path, LOG_TAIL_LINES),
            });
        }
        tokio::time::sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A tiny server answering `/health` with `health` and `/v1/models` with `models`.
    async fn serve(health: u16, models: &'static str) -> (u16, tokio::task::JoinHandle<()>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let h = tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_string();
                    let (code, body) = if req.starts_with("GET /health") {
                        (health, "{\"status\":\"ok\"}".to_string())
                    } else {
                        (200, models.to_string())
                    };
                    let resp = format!(
                        "HTTP/1.1 {code} X\r\ncontent-length: {}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(resp.as_bytes()).await;
                });
            }
        });
        (port, h)
    }

    #[tokio::test]
    async fn ready_when_health_and_models_answer() {
        let (port, h) = serve(200, r#"{"object":"list","data":[{"id":"smol"}]}"#).await;
        let dir = tempfile::tempdir().unwrap();
        let id = wait_ready(
            &format!("http://127.0.0.1:{port}"),
            Duration::from_secs(5),
            Duration::from_millis(50),
            None,
            &dir.path().join("server.log"),
            &Default::default(),
        )
        .await
        .unwrap();
        assert_eq!(id, "smol");
        h.abort();
    }

    #[tokio::test]
    async fn timeout_names_last_probe_and_carries_log_tail() {
        let (port, h) = serve(503, "{}").await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let lines: Vec<String> = (0..150).map(|i| format!("line {i}")).collect();
        std::fs::write(&log, lines.join("\n")).unwrap();
        let e = wait_ready(
            &format!("http://127.0.0.1:{port}"),
            Duration::from_millis(300),
            Duration::from_millis(50),
            None,
            &log,
            &Default::default(),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("engine not ready after"), "{e}");
        assert!(e.contains("/health -> 503"), "{e}");
        assert!(e.contains("line 50\n") && e.ends_with("line 149"), "{e}");
        assert!(!e.contains("line 49\n"), "{e}");
        h.abort();
    }
}
