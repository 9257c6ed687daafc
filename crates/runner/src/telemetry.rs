//! Server telemetry around a point: snapshots of the engine's Prometheus `/metrics` (vLLM,
//! SGLang, llama.cpp and the simulator all serve one) taken when a point starts and when it
//! ends, appended to `server_metrics.jsonl` in the point directory (DESIGN.md §3). Counters
//! differenced between the two snapshots give the server's own view of the point (tokens
//! processed, requests deferred, …). An engine without `/metrics` simply yields no file.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::ready::http_get;

pub use inferbench_core::prometheus::{parse_prometheus, Sample};

/// Fetches `<base>/metrics` and appends one line
/// `{"phase": phase, "unix_s": <f64>, "samples": [...]}` to `<dir>/server_metrics.jsonl`.
/// Returns whether a snapshot was written (false when the server has no `/metrics`).
pub async fn snapshot(base_url: &str, phase: &str, dir: &Path) -> bool {
    let Ok((200, body)) = http_get(&format!("{base_url}/metrics"), Duration::from_secs(3)).await
    else {
        return false;
    };
    let samples = parse_prometheus(&String::from_utf8_lossy(&body));
    let unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let line = serde_json::json!({"phase": phase, "unix_s": unix_s, "samples": samples});
    let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server_metrics.jsonl"))
    else {
        return false;
    };
    writeln!(f, "{line}").is_ok()
}
