//! GPU board power over a benchmark window, as InferenceX's `utils/aggregate_power.py` computes
//! and validates it (reference/inferencex-producer.md §7.3): every GPU integrated on its own by
//! the trapezoid rule with linearly interpolated boundary points ([`energy_joules`]), and every
//! validity rule applied, each failure named by InferenceX's reason code.
//!
//! Units: timestamps in Unix seconds (`f64`), power in watts, energy in joules, gaps in seconds.
//!
//! Input is the `power.csv` a sampler writes (nvidia-smi `--query-gpu … --format=csv`, amd-smi
//! CSV, or ours): the timestamp column is the first whose header contains `time`, the power
//! column the first containing `power` but none of `limit`/`cap`/`max`/`min`, the GPU column the
//! one named `index`, `gpu`, `gpu_id`, `gpu_index`, `card` or `device` (case-insensitive).

use std::collections::BTreeMap;

use inferbench_core::analytics::energy_joules;
use serde::Serialize;

/// InferenceX's default largest gap between two samples of one GPU inside the window, seconds.
pub const DEFAULT_MAX_SAMPLE_GAP_S: f64 = 3.0;

/// The integration method's name in the validation sidecar (InferenceX's string).
pub const INTEGRATION_METHOD: &str = "per_device_trapezoidal_with_linear_boundary_interpolation";

/// One CSV row as read: `None` where the cell did not parse.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Unix seconds.
    pub t: Option<f64>,
    /// Watts.
    pub watts: Option<f64>,
    /// GPU identity as written (trimmed; may be empty).
    pub gpu: String,
}

/// A parsed power CSV: its rows, or the reasons it could not be read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PowerCsv {
    /// Data rows in file order.
    pub rows: Vec<Row>,
    /// File-level problems (`telemetry_file_empty`, `timestamp_column_missing`, …); when not
    /// empty, `rows` is empty.
    pub reasons: Vec<String>,
}

fn push_reason(reasons: &mut Vec<String>, r: &str) {
    if !reasons.iter().any(|x| x == r) {
        reasons.push(r.to_string());
    }
}

/// Parses a power CSV's text (RFC 4180, cells trimmed, ragged rows allowed).
pub fn parse_csv(text: &str) -> PowerCsv {
    let mut out = PowerCsv::default();
    if text.is_empty() {
        push_reason(&mut out.reasons, "telemetry_file_empty");
        return out;
    }
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header: Vec<String> = match rd.headers() {
        Ok(h) => h.iter().map(|c| c.trim().to_string()).collect(),
        Err(_) => {
            push_reason(&mut out.reasons, "telemetry_file_unreadable");
            return out;
        }
    };
    let lower: Vec<String> = header.iter().map(|h| h.to_lowercase()).collect();
    let ti = lower.iter().position(|h| h.contains("time"));
    let pi = lower.iter().position(|h| {
        h.contains("power") && !["limit", "cap", "max", "min"].iter().any(|x| h.contains(x))
    });
    let gi = lower.iter().position(|h| {
        ["index", "gpu", "gpu_id", "gpu_index", "card", "device"].contains(&h.as_str())
    });
    for (col, reason) in [
        (ti, "timestamp_column_missing"),
        (pi, "power_column_missing"),
        (gi, "gpu_identity_column_missing"),
    ] {
        if col.is_none() {
            push_reason(&mut out.reasons, reason);
        }
    }
    let (Some(ti), Some(pi), Some(gi)) = (ti, pi, gi) else {
        return out;
    };
    for rec in rd.records() {
        let Ok(rec) = rec else {
            push_reason(&mut out.reasons, "telemetry_file_unreadable");
            out.rows.clear();
            return out;
        };
        let cell = |i: usize| rec.get(i).unwrap_or("").trim();
        out.rows.push(Row {
            t: parse_timestamp(cell(ti)),
            watts: parse_power(cell(pi)),
            gpu: cell(gi).to_string(),
        });
    }
    out
}

/// The leftmost `-?\d+(\.\d+)?` in `s`, as text.
fn first_number(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let start = (0..b.len()).find(|&i| digit(i) || (b[i] == b'-' && digit(i + 1)))?;
    let mut end = start + 1;
    while digit(end) {
        end += 1;
    }
    if b.get(end) == Some(&b'.') && digit(end + 1) {
        end += 2;
        while digit(end) {
            end += 1;
        }
    }
    Some(&s[start..end])
}

/// A timestamp cell in Unix seconds: a plain number (seconds, or milliseconds above 1e12),
/// nvidia-smi's `YYYY/MM/DD HH:MM:SS[.f]` (local time) or ISO 8601 (naive = local time).
pub fn parse_timestamp(s: &str) -> Option<f64> {
    use chrono::{DateTime, Local, NaiveDateTime, TimeZone};
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if first_number(s) == Some(s) {
        let n: f64 = s.parse().ok()?;
        return Some(if n > 1e12 { n / 1000.0 } else { n });
    }
    let local = |n: NaiveDateTime| {
        Local
            .from_local_datetime(&n)
            .earliest()
            .map(|d| d.timestamp_micros() as f64 / 1e6)
    };
    for fmt in ["%Y/%m/%d %H:%M:%S%.f", "%Y/%m/%d %H:%M:%S"] {
        if let Ok(n) = NaiveDateTime::parse_from_str(s, fmt) {
            return local(n);
        }
    }
    let iso = if s.contains(' ') && !s.contains('T') {
        s.replacen(' ', "T", 1)
    } else {
        s.to_string()
    };
    if let Ok(d) = DateTime::parse_from_rfc3339(&iso.replace('z', "Z")) {
        return Some(d.timestamp_micros() as f64 / 1e6);
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f%:z",
        "%Y-%m-%dT%H:%M:%S%:z",
        "%Y-%m-%dT%H:%M%:z",
    ] {
        if let Ok(d) = DateTime::parse_from_str(&iso, fmt) {
            return Some(d.timestamp_micros() as f64 / 1e6);
        }
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(&iso, fmt) {
            return local(n);
        }
    }
    None
}

/// A power cell in watts: the first number in it (`412.34 W`, `412.34`); `[N/A]`, `N/A`, `NA`
/// and cells without a number give `None`.
pub fn parse_power(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() || ["[n/a]", "n/a", "na"].contains(&s.to_lowercase().as_str()) {
        return None;
    }
    first_number(s)?.parse().ok()
}

/// The benchmark's formal window and counts (from the run summary: `benchmark_start_time_unix`,
/// `benchmark_end_time_unix`, `duration`, `completed`, `total_input_tokens`,
/// `total_output_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BenchmarkWindow {
    /// Unix seconds.
    pub start_time_unix: f64,
    /// Unix seconds.
    pub end_time_unix: f64,
    /// The summary's `duration`, seconds.
    pub reported_duration_s: f64,
    /// Successful requests.
    pub completed: u64,
    /// Prompt tokens of successful requests.
    pub total_input_tokens: u64,
    /// Output tokens of successful requests.
    pub total_output_tokens: u64,
}

impl BenchmarkWindow {
    /// `end − start`, seconds: the integration window.
    pub fn integration_duration_s(&self) -> f64 {
        self.end_time_unix - self.start_time_unix
    }

    /// InferenceX's benchmark checks: `invalid_benchmark_window` (non-finite or empty window,
    /// non-positive duration: nothing else can be checked), `benchmark_duration_mismatch`
    /// (|duration − (end − start)| > max(0.5 s, 1 %)), `invalid_successful_query_count`,
    /// `invalid_input_token_count`, `invalid_output_token_count` (zero counts).
    pub fn reasons(&self) -> Vec<String> {
        let (s, e, d) = (
            self.start_time_unix,
            self.end_time_unix,
            self.reported_duration_s,
        );
        if !(s.is_finite() && e.is_finite() && d.is_finite()) || e <= s || d <= 0.0 {
            return vec!["invalid_benchmark_window".into()];
        }
        let mut r = Vec::new();
        let w = e - s;
        if (d - w).abs() > 0.5f64.max(w * 0.01) {
            r.push("benchmark_duration_mismatch".into());
        }
        for (n, code) in [
            (self.completed, "invalid_successful_query_count"),
            (self.total_input_tokens, "invalid_input_token_count"),
            (self.total_output_tokens, "invalid_output_token_count"),
        ] {
            if n == 0 {
                r.push(code.into());
            }
        }
        r
    }
}

/// The auditable result of integrating one power stream over a window (InferenceX's
/// `PowerIntegration`, field for field in the sidecar).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PowerIntegration {
    /// Reason codes in discovery order; empty = valid. (Not serialized: the sidecar's one
    /// `reasons` holds the benchmark's and these, [`Validation::reasons`].)
    #[serde(skip)]
    pub reasons: Vec<String>,
    /// The GPU count the topology implies (tp × pp × pcp), when known.
    pub expected_gpu_count: Option<u32>,
    /// GPUs seen in the window, in GPU order (numeric ids numerically).
    pub observed_gpu_ids: Vec<String>,
    /// Distinct-timestamp samples per GPU near the window.
    pub per_gpu_sample_counts: BTreeMap<String, usize>,
    /// Largest gap between consecutive samples spanning the window, seconds.
    pub per_gpu_max_sample_gap_s: BTreeMap<String, f64>,
    /// Energy per GPU over the window, joules.
    pub per_gpu_energy_j: BTreeMap<String, f64>,
    /// Per-GPU reason codes.
    pub device_issues: BTreeMap<String, Vec<String>>,
    /// Σ per-GPU energy, joules (when every GPU integrated).
    pub total_gpu_energy_j: Option<f64>,
    /// Total energy ÷ window, watts.
    pub avg_total_gpu_power_w: Option<f64>,
    /// Average per GPU, watts.
    pub avg_power_w: Option<f64>,
}

impl PowerIntegration {
    /// Whether no rule failed.
    pub fn valid(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// GPU order of InferenceX's sidecar: numeric ids by value, then other ids by text.
fn gpu_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// Validates and integrates `csv` over `[start, end]` (Unix s): rows farther than `max_gap_s`
/// outside the window are ignored, an unparsable timestamp anywhere or an invalid power
/// (missing, negative) near the window invalidates the stream, readings of one GPU at the same
/// timestamp are averaged, and each GPU needs ≥ 2 samples bracketing the window with no gap
/// over `max_gap_s` inside it. Reason codes as InferenceX's `integrate_power`.
pub fn integrate(
    csv: &PowerCsv,
    start: f64,
    end: f64,
    expected_gpu_count: Option<u32>,
    max_gap_s: f64,
) -> PowerIntegration {
    let mut out = PowerIntegration {
        expected_gpu_count,
        ..Default::default()
    };
    if !(start.is_finite() && end.is_finite()) || end <= start {
        out.reasons.push("invalid_benchmark_window".into());
        return out;
    }
    if expected_gpu_count == Some(0) {
        push_reason(&mut out.reasons, "invalid_expected_gpu_count");
    }
    if !max_gap_s.is_finite() || max_gap_s <= 0.0 {
        out.reasons = vec!["invalid_max_sample_gap".into()];
        return out;
    }
    for r in &csv.reasons {
        push_reason(&mut out.reasons, r);
    }
    if !csv.reasons.is_empty() {
        return out;
    }
    let mut raw: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut missing_identity = false;
    for row in &csv.rows {
        let Some(t) = row.t.filter(|t| t.is_finite()) else {
            push_reason(&mut out.reasons, "invalid_timestamp_sample");
            continue;
        };
        if t < start - max_gap_s || t > end + max_gap_s {
            continue;
        }
        let Some(w) = row.watts.filter(|w| w.is_finite() && *w >= 0.0) else {
            push_reason(&mut out.reasons, "invalid_power_sample");
            continue;
        };
        if row.gpu.is_empty() {
            missing_identity = true;
            continue;
        }
        raw.entry(row.gpu.clone()).or_default().push((t, w));
    }
    if missing_identity {
        push_reason(&mut out.reasons, "gpu_identity_missing");
    }
    if raw.is_empty() {
        push_reason(&mut out.reasons, "no_usable_power_samples");
        return out;
    }
    let mut ids: Vec<String> = raw.keys().cloned().collect();
    ids.sort_by(|a, b| gpu_order(a, b));
    if let Some(n) = expected_gpu_count.filter(|n| *n > 0) {
        if ids.len() != n as usize {
            push_reason(&mut out.reasons, "expected_gpu_count_mismatch");
        }
    }
    for id in &ids {
        let mut v = raw.remove(id).unwrap_or_default();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Same timestamp: the mean of its readings.
        let mut samples: Vec<(f64, f64)> = Vec::with_capacity(v.len());
        let mut i = 0;
        while i < v.len() {
            let j = v[i..].iter().take_while(|s| s.0 == v[i].0).count() + i;
            let mean = v[i..j].iter().map(|s| s.1).sum::<f64>() / (j - i) as f64;
            samples.push((v[i].0, mean));
            i = j;
        }
        out.per_gpu_sample_counts.insert(id.clone(), samples.len());
        let issue = if samples.len() < 2 {
            Some("insufficient_power_samples")
        } else if samples[0].0 > start || samples[samples.len() - 1].0 < end {
            Some("benchmark_window_not_bracketed")
        } else {
            // The samples spanning the window: the last at or before start … the first at or
            // after end.
            let left = samples.partition_point(|s| s.0 <= start) - 1;
            let right = samples.partition_point(|s| s.0 < end);
            let gap = samples[left..=right]
                .windows(2)
                .map(|w| w[1].0 - w[0].0)
                .fold(0.0, f64::max);
            out.per_gpu_max_sample_gap_s.insert(id.clone(), gap);
            if let Some(e) = energy_joules(&samples, start, end) {
                out.per_gpu_energy_j.insert(id.clone(), e);
            }
            (gap > max_gap_s).then_some("sampling_gap_exceeded")
        };
        if let Some(code) = issue {
            out.device_issues.insert(id.clone(), vec![code.to_string()]);
            push_reason(&mut out.reasons, code);
        }
    }
    if out.per_gpu_energy_j.len() == ids.len() {
        let e: f64 = out.per_gpu_energy_j.values().sum();
        let p = e / (end - start);
        out.total_gpu_energy_j = Some(e);
        out.avg_total_gpu_power_w = Some(p);
        out.avg_power_w = Some(p / ids.len() as f64);
    }
    out.observed_gpu_ids = ids;
    out
}

/// The energy metrics of a valid measurement (InferenceX's `_derived_metrics`): average power
/// per GPU and in total (W), total energy (J), and J per successful request, input, output and
/// total token. `None` when the integration is invalid or incomplete, or a count is zero.
pub fn metrics(p: &PowerIntegration, b: &BenchmarkWindow) -> Option<BTreeMap<&'static str, f64>> {
    if !p.valid() || !b.reasons().is_empty() {
        return None;
    }
    let (avg, total_w, e) = (
        p.avg_power_w?,
        p.avg_total_gpu_power_w?,
        p.total_gpu_energy_j?,
    );
    let tin = b.total_input_tokens as f64;
    let tout = b.total_output_tokens as f64;
    Some(BTreeMap::from([
        ("avg_power_w", avg),
        ("avg_total_gpu_power_w", total_w),
        ("total_gpu_energy_j", e),
        ("joules_per_successful_query", e / b.completed as f64),
        ("joules_per_input_token", e / tin),
        ("joules_per_output_token", e / tout),
        ("joules_per_total_token", e / (tin + tout)),
    ]))
}

/// Rounds like InferenceX's aggregate: 3 decimals for `_w`/`_j` keys, 6 otherwise (the
/// decimal nearest the binary value, ties to even, as Python's `round`).
pub fn round_metric(key: &str, v: f64) -> f64 {
    let d = if key.ends_with("_w") || key.ends_with("_j") {
        3
    } else {
        6
    };
    format!("{v:.d$}").parse().unwrap_or(v)
}

/// An energy counter's increase from `start` to `end` (joules), with one wrap-around at
/// `wrap_j` handled (`end < start` then means the counter passed `wrap_j` once); `None` when
/// the counter went backwards without a known wrap. Reported beside the trapezoid, never
/// instead of it.
pub fn counter_delta(start: f64, end: f64, wrap_j: Option<f64>) -> Option<f64> {
    if end >= start {
        return Some(end - start);
    }
    wrap_j.filter(|w| *w > start).map(|w| w - start + end)
}

/// Everything the validation sidecar `power_validation.json` holds (InferenceX's keys).
#[derive(Debug, Clone, Serialize)]
pub struct Validation<'a> {
    /// Always 1 (InferenceX's sidecar schema).
    pub schema_version: u32,
    /// No reason at all.
    pub power_valid: bool,
    /// Benchmark reasons, then the stream's.
    pub reasons: Vec<String>,
    /// The power CSV.
    pub telemetry_source: &'a str,
    /// The benchmark result the window came from.
    pub benchmark_result: &'a str,
    /// The window and counts, with InferenceX's `integration_duration_s`.
    pub benchmark_window: WindowOut<'a>,
    /// [`INTEGRATION_METHOD`].
    pub integration_method: &'static str,
    /// The stream's audit fields.
    #[serde(flatten)]
    pub integration: &'a PowerIntegration,
    /// Observed GPU count.
    pub observed_gpu_count: usize,
    /// Metrics rounded to 6 decimals; empty when invalid.
    pub metrics: BTreeMap<&'static str, f64>,
    /// The energy-counter cross-check (advisory; `null` without snapshots), set by the caller
    /// from [`crate::energy::accumulator_check`].
    pub accumulator_check: Option<crate::energy::AccumulatorCheck>,
}

/// The sidecar's `benchmark_window`: the window's fields and its `integration_duration_s`.
#[derive(Debug, Clone, Serialize)]
pub struct WindowOut<'a> {
    /// The window.
    #[serde(flatten)]
    pub window: &'a BenchmarkWindow,
    /// `end − start`, seconds.
    pub integration_duration_s: f64,
}

/// Builds the sidecar for one point.
pub fn validation<'a>(
    p: &'a PowerIntegration,
    b: &'a BenchmarkWindow,
    telemetry_source: &'a str,
    benchmark_result: &'a str,
) -> Validation<'a> {
    let mut reasons = b.reasons();
    for r in &p.reasons {
        push_reason(&mut reasons, r);
    }
    let metrics = metrics(p, b)
        .map(|m| {
            m.into_iter()
                .map(|(k, v)| (k, format!("{v:.6}").parse().unwrap_or(v)))
                .collect()
        })
        .unwrap_or_default();
    Validation {
        schema_version: 1,
        power_valid: reasons.is_empty(),
        reasons,
        telemetry_source,
        benchmark_result,
        benchmark_window: WindowOut {
            window: b,
            integration_duration_s: b.integration_duration_s(),
        },
        integration_method: INTEGRATION_METHOD,
        integration: p,
        observed_gpu_count: p.observed_gpu_ids.len(),
        metrics,
        accumulator_check: None,
    }
}
