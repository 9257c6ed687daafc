//! A point's telemetry side files: `power.csv` (GPU power samples; read and validated by
//! `inferbench_telemetry::power` with InferenceX's `aggregate_power.py` rules,
//! reference/inferencex-producer.md §5.4 and §7.3) and `server_metrics.jsonl` (the engine's
//! `/metrics` snapshots, as `loadgen`'s scraper writes them). In a point directory they have
//! these fixed names; beside a `bench --save-result` file `X.json` they are `X.power.csv`,
//! `X.server_metrics.jsonl` ([`super::SIDE_FILES`]).

use std::collections::BTreeMap;
use std::path::Path;

use inferbench_telemetry::power;
use serde_json::Value;

use super::{num, ParseError, PointData, RunData};

/// Reads a point's `power.csv` into its samples and, with the run's window known, its
/// measured power ([`add_measured_power`]); an unparseable file is a warning (kept as a file).
pub(super) fn read_power(
    power: &Path,
    run: &mut RunData,
    pt: &mut PointData,
) -> Result<(), ParseError> {
    let text = std::fs::read_to_string(power).map_err(|e| format!("{}: {e}", power.display()))?;
    match parse_power_csv(&text) {
        Ok(samples) => {
            if let (Some(t0), Some(t1)) = (run.start_unix, run.end_unix) {
                let gpus = pt.config.gpus();
                add_measured_power(
                    &mut pt.metrics,
                    &text,
                    (t0, t1),
                    gpus,
                    &mut run.warnings,
                    power,
                );
            }
            pt.power = samples;
        }
        Err(e) => run.warnings.push(format!(
            "{}: {e}; samples not stored (file kept)",
            power.display()
        )),
    }
    Ok(())
}

/// Reads a point's `server_metrics.jsonl` into its samples; lines not understood are a
/// warning.
pub(super) fn read_server_metrics(
    sm: &Path,
    run: &mut RunData,
    pt: &mut PointData,
) -> Result<(), ParseError> {
    let text = std::fs::read_to_string(sm).map_err(|e| format!("{}: {e}", sm.display()))?;
    let (rows, bad) = parse_server_metrics(&text);
    if bad > 0 {
        run.warnings.push(format!(
            "{}: {bad} lines not understood (file kept)",
            sm.display()
        ));
    }
    pt.server_metrics = rows;
    Ok(())
}

/// Parses `power.csv` with the telemetry crate's reader (InferenceX's column detection, CSV
/// quoting, timestamp and power formats): the usable `(gpu, unix s, W)` samples sorted by GPU
/// and time, duplicates dropped; an error naming the file-level problem otherwise.
pub fn parse_power_csv(text: &str) -> Result<Vec<(String, f64, f64)>, String> {
    let csv = power::parse_csv(text);
    if !csv.reasons.is_empty() {
        return Err(csv.reasons.join(", "));
    }
    let mut out: Vec<(String, f64, f64)> = csv
        .rows
        .into_iter()
        .filter_map(|r| Some((r.gpu, r.t?, r.watts?)))
        .filter(|(g, t, w)| !g.is_empty() && t.is_finite() && w.is_finite())
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    if out.is_empty() {
        return Err("no usable power samples".into());
    }
    Ok(out)
}

/// Measured power of a point from its `power.csv`, validated and integrated as InferenceX's
/// `aggregate_power.py` does (`inferbench_telemetry::power`): when every rule holds, the
/// metrics (`avg_power_w`, `total_gpu_energy_j`, `joules_per_*`) and `power_valid` 1; else
/// `power_valid` 0, no metric, and a warning naming the reasons. A producer's own validated
/// figures (`avg_power_w` already present) win.
fn add_measured_power(
    m: &mut BTreeMap<String, f64>,
    text: &str,
    (t0, t1): (f64, f64),
    gpus: i64,
    warnings: &mut Vec<String>,
    at: &Path,
) {
    if m.contains_key("avg_power_w") {
        return;
    }
    let expected = u32::try_from(gpus).ok().filter(|g| *g > 0);
    let p = power::integrate(
        &power::parse_csv(text),
        t0,
        t1,
        expected,
        power::DEFAULT_MAX_SAMPLE_GAP_S,
    );
    let count = |k: &str| m.get(k).copied().filter(|v| *v > 0.0).unwrap_or(0.0) as u64;
    let b = power::BenchmarkWindow {
        start_time_unix: t0,
        end_time_unix: t1,
        reported_duration_s: m.get("duration").copied().unwrap_or(t1 - t0),
        completed: count("completed"),
        total_input_tokens: count("total_input_tokens"),
        total_output_tokens: count("total_output_tokens"),
    };
    match power::metrics(&p, &b) {
        Some(metrics) => {
            for (k, v) in metrics {
                m.insert(k.to_string(), v);
            }
            m.insert("power_valid".into(), 1.0);
        }
        None => {
            let mut reasons = b.reasons();
            reasons.extend(p.reasons.iter().cloned());
            m.insert("power_valid".into(), 0.0);
            warnings.push(format!(
                "{}: power not valid ({}); no measured power stored",
                at.display(),
                reasons.join(", ")
            ));
        }
    }
}

/// Labels as stored: a Prometheus label string as written (`model_name="x"`), or an object as
/// compact JSON; empty when none.
fn labels_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Parses `server_metrics.jsonl`: each line `{"t": unix_s, "name": …, "labels": {…},
/// "value": x}`, `{"t": unix_s, "metrics": {name: value, …}}`, or the runner's snapshot
/// `{"phase": …, "unix_s": …, "samples": [{"name", "labels"?, "value"}]}` (`ts`/`timestamp`/
/// `t_unix`/`unix_s` accepted for `t`). Returns the samples and the number of lines not understood.
pub fn parse_server_metrics(text: &str) -> (Vec<(String, String, f64, f64)>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(l) else {
            bad += 1;
            continue;
        };
        let t = ["t", "ts", "timestamp", "t_unix", "unix_s"]
            .iter()
            .find_map(|k| o.get(*k).and_then(num));
        let Some(t) = t else {
            bad += 1;
            continue;
        };
        if let (Some(Value::String(name)), Some(v)) = (o.get("name"), o.get("value").and_then(num))
        {
            let labels = o.get("labels").map_or(String::new(), labels_text);
            out.push((name.clone(), labels, t, v));
        } else if let Some(Value::Array(samples)) = o.get("samples") {
            // The runner's snapshots: {"phase", "unix_s", "samples": [{name, labels?, value}]}.
            for smp in samples {
                if let (Some(Value::String(name)), Some(v)) =
                    (smp.get("name"), smp.get("value").and_then(num))
                {
                    let labels = smp.get("labels").map_or(String::new(), labels_text);
                    out.push((name.clone(), labels, t, v));
                }
            }
        } else if let Some(Value::Object(ms)) = o.get("metrics") {
            for (k, v) in ms {
                if let Some(x) = num(v) {
                    out.push((k.clone(), String::new(), t, x));
                }
            }
        } else {
            bad += 1;
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.total_cmp(&b.2)));
    out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2);
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_metrics_shapes() {
        let text = r#"{"phase":"start","unix_s":100.5,"samples":[{"name":"llamacpp:n_decode_total","value":0.0},{"name":"vllm:x","labels":{"engine":"0"},"value":2},{"name":"llamacpp:x","labels":"model_name=\"m\"","value":3}]}
{"t": 101, "name": "vllm:num_requests_running", "value": 4}
{"ts": 102, "metrics": {"a": 1}}
nonsense"#;
        let (rows, bad) = parse_server_metrics(text);
        assert_eq!(bad, 1);
        assert_eq!(
            rows,
            vec![
                ("a".into(), "".into(), 102.0, 1.0),
                ("llamacpp:n_decode_total".into(), "".into(), 100.5, 0.0),
                ("llamacpp:x".into(), "model_name=\"m\"".into(), 100.5, 3.0),
                ("vllm:num_requests_running".into(), "".into(), 101.0, 4.0),
                ("vllm:x".into(), "{\"engine\":\"0\"}".into(), 100.5, 2.0),
            ]
        );
    }

    #[test]
    fn power_csv_nvidia_smi_shape() {
        let csv = "timestamp, index, power.draw [W], power.limit [W]\n\
                   1000, 0, 300.5 W, 700 W\n1001, 0, 310 W, 700 W\n1000, 1, [N/A], 700\n";
        let s = parse_power_csv(csv).unwrap();
        assert_eq!(
            s,
            vec![("0".into(), 1000.0, 300.5), ("0".into(), 1001.0, 310.0)]
        );
    }
}
