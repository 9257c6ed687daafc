//! GPU energy counters beside the sampled power: snapshots of each GPU's hardware energy
//! accumulator at the start and the end of a sampler's stream (`<stem>_energy_start.csv` /
//! `<stem>_energy_end.csv` beside `<stem>.csv`, columns `gpu,total_energy_consumption` in joules:
//! amd-smi's `metric -E --csv` layout, which we also write from NVML's counter), and InferenceX's
//! advisory cross-check of the counter delta against the trapezoid over the whole stream
//! (`aggregate_power.py`'s `cross_check_accumulator`, reference/inferencex-producer.md §7.3 item 7).
//!
//! The check validates the instrument, never the window's metrics: it does not change
//! `power_valid`, and the counter energy is reported in its own field, never instead of the
//! trapezoid. Units: joules, seconds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::power::parse_csv;

/// Largest relative difference between counter delta and stream integral that passes
/// (InferenceX's `_ACCUMULATOR_TOLERANCE`).
pub const ACCUMULATOR_TOLERANCE: f64 = 0.05;

/// The two snapshot files of a power CSV: `dir/power.csv` → `dir/power_energy_start.csv`,
/// `dir/power_energy_end.csv`.
pub fn snapshot_paths(power_csv: &Path) -> (PathBuf, PathBuf) {
    let stem = power_csv
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("power");
    (
        power_csv.with_file_name(format!("{stem}_energy_start.csv")),
        power_csv.with_file_name(format!("{stem}_energy_end.csv")),
    )
}

/// Writes a snapshot: one `gpu,total_energy_consumption` row per GPU (joules).
///
/// Errors: the file cannot be written.
pub fn write_snapshot(path: &Path, joules_by_gpu: &[(String, f64)]) -> std::io::Result<()> {
    let mut s = String::from("gpu,total_energy_consumption\n");
    for (g, j) in joules_by_gpu {
        s.push_str(&format!("{g},{j:.3}\n"));
    }
    std::fs::write(path, s)
}

/// GPU id → accumulator joules from a snapshot's text; `None` without both columns or rows.
pub fn parse_snapshot(text: &str) -> Option<BTreeMap<String, f64>> {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header: Vec<String> = rd
        .headers()
        .ok()?
        .iter()
        .map(|c| c.trim().to_string())
        .collect();
    let gi = header.iter().position(|h| h == "gpu")?;
    let ei = header
        .iter()
        .position(|h| h == "total_energy_consumption")?;
    let mut out = BTreeMap::new();
    for rec in rd.records().map_while(Result::ok) {
        let gpu = rec.get(gi).unwrap_or("").trim();
        let e = rec.get(ei).unwrap_or("").trim().parse::<f64>();
        if let (false, Ok(e)) = (gpu.is_empty(), e) {
            if e.is_finite() {
                out.insert(gpu.to_string(), e);
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `accumulator_check` of `power_validation.json` (InferenceX's keys). Unavailable checks carry
/// only `available: false` and `reason`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccumulatorCheck {
    /// Both snapshots were read.
    pub available: bool,
    /// Why not (`missing_start_snapshot`, `missing_end_snapshot`,
    /// `unparseable_start_snapshot`, `unparseable_end_snapshot`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Σ per-GPU counter increase, joules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accumulator_delta_j: Option<f64>,
    /// Σ per-GPU trapezoid over every sample of the stream (no window clipping), joules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrated_stream_j: Option<f64>,
    /// |delta − integral| ÷ delta (`None` when the delta is not positive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_error: Option<Option<f64>>,
    /// No GPU's counter went backwards and the relative error is within the tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_tolerance: Option<bool>,
    /// [`ACCUMULATOR_TOLERANCE`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// Counter increase per GPU seen in both snapshots, joules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_gpu_delta_j: Option<BTreeMap<String, f64>>,
    /// GPUs in both the stream and the snapshots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrated_gpu_ids: Option<Vec<String>>,
    /// GPUs in only one snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmatched_gpus: Option<Vec<String>>,
    /// GPUs whose counter decreased (a reset, or a wrap we cannot undo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub negative_delta_gpus: Option<Vec<String>>,
    /// Earliest first to latest last sample of the integrated GPUs, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_span_s: Option<f64>,
}

impl AccumulatorCheck {
    fn unavailable(reason: &str) -> Self {
        AccumulatorCheck {
            available: false,
            reason: Some(reason.into()),
            accumulator_delta_j: None,
            integrated_stream_j: None,
            relative_error: None,
            within_tolerance: None,
            tolerance: None,
            per_gpu_delta_j: None,
            integrated_gpu_ids: None,
            unmatched_gpus: None,
            negative_delta_gpus: None,
            stream_span_s: None,
        }
    }
}

/// Numeric GPU ids in numeric order, others after them by name (InferenceX's `_gpu_sort_key`).
fn gpu_order(a: &String, b: &String) -> std::cmp::Ordering {
    match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        _ => a.cmp(b),
    }
}

/// The cross-check for `power_csv` (module docs); `None` when neither snapshot exists.
pub fn accumulator_check(power_csv: &Path) -> Option<AccumulatorCheck> {
    let (sp, ep) = snapshot_paths(power_csv);
    match (sp.is_file(), ep.is_file()) {
        (false, false) => return None,
        (false, true) => return Some(AccumulatorCheck::unavailable("missing_start_snapshot")),
        (true, false) => return Some(AccumulatorCheck::unavailable("missing_end_snapshot")),
        (true, true) => {}
    }
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| parse_snapshot(&t))
    };
    let Some(start) = read(&sp) else {
        return Some(AccumulatorCheck::unavailable("unparseable_start_snapshot"));
    };
    let Some(end) = read(&ep) else {
        return Some(AccumulatorCheck::unavailable("unparseable_end_snapshot"));
    };
    let mut matched: Vec<String> = start
        .keys()
        .filter(|g| end.contains_key(*g))
        .cloned()
        .collect();
    matched.sort_by(gpu_order);
    let per_gpu: BTreeMap<String, f64> = matched
        .iter()
        .map(|g| (g.clone(), end[g] - start[g]))
        .collect();
    let mut unmatched: Vec<String> = start
        .keys()
        .filter(|g| !end.contains_key(*g))
        .chain(end.keys().filter(|g| !start.contains_key(*g)))
        .cloned()
        .collect();
    unmatched.sort_by(gpu_order);
    let mut negative: Vec<String> = matched
        .iter()
        .filter(|g| per_gpu[*g] < 0.0)
        .cloned()
        .collect();
    negative.sort_by(gpu_order);

    // Every parseable sample of the stream, per GPU, in time order.
    let text = std::fs::read(power_csv)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut stream: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in parse_csv(&text).rows {
        if let (Some(t), Some(w), false) = (r.t, r.watts, r.gpu.is_empty()) {
            if t.is_finite() && w.is_finite() {
                stream.entry(r.gpu).or_default().push((t, w));
            }
        }
    }
    for v in stream.values_mut() {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    }
    let mut integrated: Vec<String> = stream
        .keys()
        .filter(|g| per_gpu.contains_key(*g))
        .cloned()
        .collect();
    integrated.sort_by(gpu_order);
    let trapezoid = |s: &[(f64, f64)]| -> f64 {
        s.windows(2)
            .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
            .sum()
    };
    let integrated_j: f64 = integrated.iter().map(|g| trapezoid(&stream[g])).sum();
    let bounds: Vec<f64> = integrated
        .iter()
        .flat_map(|g| [stream[g][0].0, stream[g][stream[g].len() - 1].0])
        .collect();
    let span = if bounds.is_empty() {
        0.0
    } else {
        bounds.iter().cloned().fold(f64::MIN, f64::max)
            - bounds.iter().cloned().fold(f64::MAX, f64::min)
    };
    let delta: f64 = per_gpu.values().sum();
    let rel = (delta > 0.0).then(|| (delta - integrated_j).abs() / delta);
    Some(AccumulatorCheck {
        available: true,
        reason: None,
        accumulator_delta_j: Some(delta),
        integrated_stream_j: Some(integrated_j),
        relative_error: Some(rel),
        within_tolerance: Some(
            negative.is_empty() && rel.is_some_and(|r| r <= ACCUMULATOR_TOLERANCE),
        ),
        tolerance: Some(ACCUMULATOR_TOLERANCE),
        per_gpu_delta_j: Some(per_gpu),
        integrated_gpu_ids: Some(integrated),
        unmatched_gpus: Some(unmatched),
        negative_delta_gpus: Some(negative),
        stream_span_s: Some(span),
    })
}
