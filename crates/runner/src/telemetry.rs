//! Server telemetry around a point: snapshots of the engine's Prometheus `/metrics` (vLLM,
//! SGLang, llama.cpp and the simulator all serve one) taken when a point starts and when it
//! ends, appended to `server_metrics.jsonl` in the point directory (DESIGN.md §3). Counters
//! differenced between the two snapshots give the server's own view of the point (tokens
//! processed, requests deferred, …). An engine without `/metrics` simply yields no file.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::ready::http_get;

/// One sample of the Prometheus text format: `name{labels} value`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    /// Metric name, e.g. `llamacpp:tokens_predicted_total`.
    pub name: String,
    /// The label set as written, without braces (`model_name="x"`), empty when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub labels: String,
    /// Value (`NaN`/`+Inf` are kept as IEEE values and serialized as null).
    pub value: f64,
}

/// Parses Prometheus text exposition: comment and blank lines skipped, lines that do not parse
/// ignored (never an error: telemetry must not fail a point).
pub fn parse_prometheus(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name_labels, rest) = match line.find('}') {
            Some(close) if line[..close].contains('{') => {
                (&line[..=close], line[close + 1..].trim())
            }
            _ => match line.split_once(char::is_whitespace) {
                Some((a, b)) => (a, b.trim()),
                None => continue,
            },
        };
        let value_text = rest.split_whitespace().next().unwrap_or("");
        let value = match value_text {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => match v.parse::<f64>() {
                Ok(x) => x,
                Err(_) => continue,
            },
        };
        let (name, labels) = match name_labels.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (name_labels, ""),
        };
        out.push(Sample {
            name: name.to_string(),
            labels: labels.to_string(),
            value,
        });
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_labels_and_values() {
        let text = "# HELP x y\n# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 512\nvllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3.0\nh_bucket{le=\"+Inf\"} 7 1700000000\nbad line here\nnan_metric NaN\n\n";
        let s = parse_prometheus(text);
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[0].name, "llamacpp:tokens_predicted_total");
        assert_eq!(s[0].value, 512.0);
        assert_eq!(s[1].labels, "model_name=\"m\",engine=\"0\"");
        assert_eq!(s[1].value, 3.0);
        assert_eq!(
            (s[2].name.as_str(), s[2].labels.as_str(), s[2].value),
            ("h_bucket", "le=\"+Inf\"", 7.0)
        );
        assert!(s[3].value.is_nan());
    }
}
