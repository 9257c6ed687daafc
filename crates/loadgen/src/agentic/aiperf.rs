//! AIPerf-shaped artifacts of an AgentX replay in `<result-dir>/aiperf_artifacts/`
//! (reference/agentx.md §4.1–4.4), so InferenceX's `process_agentic_result.py` and
//! `validate_agentic_result.py` read our runs unchanged:
//!
//! - `profile_export.jsonl` ([`ProfileExportWriter`], §4.2): one line per record, warmup and
//!   profile, successes and errors, streamed through a `BufWriter`;
//! - `profile_export_aiperf.json` ([`aiperf_summary`], §4.3): profiling-phase metric objects
//!   `{unit, avg, min, max, std, p1…p99, count, sum}`, counts, wall-clock window, error summary,
//!   scenario validity and dataset provenance;
//! - `server_metrics_export.json` ([`server_metrics_export`], §4.4): our `/metrics` snapshots
//!   over the profiling window as AIPerf families (counter `total`/`rate`, gauge
//!   `avg/min/max/std/p1…p99`, histogram `count/sum/avg` + bucket deltas) with optional 1-s
//!   timeslices.
//!
//! Per-request definitions are [`inferbench_core::summary::agentic::aiperf_metrics`] (shared with
//! the aggregate). Timestamps in the files are Unix ns: run-clock ns + `anchor_unix_ns` (the
//! wall-clock time of the run clock's zero).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use inferbench_core::metrics::{self, NS_PER_S};
use inferbench_core::prometheus::parse_labels;
use inferbench_core::server_metrics::{summarize, window_gauge_samples, Snapshot};
use inferbench_core::summary::agentic::{
    aiperf_metrics, error_details, is_context_overflow, is_kept, scenario_validity, server_export,
    was_cancelled, DatasetProvenance, ErrorDetails, ServerExport,
};
use inferbench_core::{Phase, RequestRecord};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Folder of the AIPerf artifacts inside the result directory (§4.1).
pub const ARTIFACT_DIR: &str = "aiperf_artifacts";
/// Per-request records (§4.2).
pub const PROFILE_EXPORT_JSONL: &str = "profile_export.jsonl";
/// Run summary (§4.3).
pub const PROFILE_EXPORT_AIPERF_JSON: &str = "profile_export_aiperf.json";
/// Server metrics over the profiling window (§4.4).
pub const SERVER_METRICS_EXPORT_JSON: &str = "server_metrics_export.json";
/// Percentiles of every AIPerf metric object (§4.3).
pub const AIPERF_PERCENTILES: [u32; 9] = [1, 5, 10, 25, 50, 75, 90, 95, 99];

/// `<result_dir>/aiperf_artifacts`.
pub fn artifact_dir(result_dir: &Path) -> PathBuf {
    result_dir.join(ARTIFACT_DIR)
}

fn trace_of(r: &RequestRecord) -> &str {
    match &r.agentic {
        Some(a) => &a.trace_id,
        None => r
            .conversation_id
            .as_deref()
            .map(|c| c.split("::").next().unwrap_or(c))
            .unwrap_or(""),
    }
}

fn stream_of(r: &RequestRecord) -> &str {
    r.conversation_id.as_deref().unwrap_or_else(|| trace_of(r))
}

fn play_of(r: &RequestRecord) -> u32 {
    r.agentic.as_ref().map_or(0, |a| a.play)
}

/// The `X-Correlation-ID` of stream `stream` (`<trace>` or `<trace>::sa:<agent>`) in play
/// `play` (§4.2, AIPerf `x_correlation_id`): `<play, 8 digits>-<stream>`; stable for every turn
/// of the stream in that play, distinct across recycle passes. The replay sends it as the
/// `X-Correlation-ID` header, so server logs and the export line up.
pub fn correlation_id_of(play: u32, stream: &str) -> String {
    format!("{play:08}-{stream}")
}

/// [`correlation_id_of`] of a record's play and stream.
pub fn correlation_id(r: &RequestRecord) -> String {
    correlation_id_of(play_of(r), stream_of(r))
}

/// The session tree's id (AIPerf `root_correlation_id`): the correlation id of the root stream
/// (`<play>-<trace id>`) for every stream of the tree.
pub fn root_correlation_id(r: &RequestRecord) -> String {
    correlation_id_of(play_of(r), trace_of(r))
}

/// A metric value: token counts as integers (as AIPerf writes them), times as floats.
#[derive(Serialize)]
#[serde(untagged)]
enum Num {
    Int(u64),
    Float(f64),
}

#[derive(Serialize)]
struct MetricValue {
    value: Num,
    unit: &'static str,
}

fn mv(value: f64, unit: &'static str) -> Option<MetricValue> {
    Some(MetricValue {
        value: Num::Float(value),
        unit,
    })
}

fn tokens(value: u64) -> Option<MetricValue> {
    Some(MetricValue {
        value: Num::Int(value),
        unit: "tokens",
    })
}

#[derive(Serialize)]
struct LineMetadata<'a> {
    session_num: u32,
    x_request_id: String,
    x_correlation_id: String,
    conversation_id: &'a str,
    turn_index: u32,
    root_correlation_id: String,
    request_start_ns: u64,
    request_ack_ns: Option<u64>,
    request_end_ns: u64,
    worker_id: String,
    benchmark_phase: &'static str,
    was_cancelled: bool,
    cancellation_time_ns: Option<u64>,
    source_trace_id: &'a str,
    source_kind: &'a str,
}

#[derive(Serialize, Default)]
struct LineMetrics {
    #[serde(skip_serializing_if = "Option::is_none")]
    input_sequence_length: Option<MetricValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_sequence_length: Option<MetricValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_to_first_token: Option<MetricValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_latency: Option<MetricValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inter_token_latency: Option<MetricValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_isl: Option<MetricValue>,
}

#[derive(Serialize)]
struct Line<'a> {
    metadata: LineMetadata<'a>,
    metrics: LineMetrics,
    error: Option<ErrorDetails>,
}

fn line(r: &RequestRecord, anchor_unix_ns: u64) -> Line<'_> {
    let abs = |t: u64| anchor_unix_ns.saturating_add(t);
    let m = aiperf_metrics(r);
    let metrics = if r.success {
        LineMetrics {
            input_sequence_length: tokens(m.input_sequence_length),
            output_sequence_length: m.output_sequence_length.and_then(tokens),
            time_to_first_token: m.time_to_first_token_ms.and_then(|v| mv(v, "ms")),
            request_latency: m.request_latency_ms.and_then(|v| mv(v, "ms")),
            inter_token_latency: m.inter_token_latency_ms.and_then(|v| mv(v, "ms")),
            error_isl: None,
        }
    } else {
        LineMetrics {
            error_isl: tokens(m.input_sequence_length),
            ..Default::default()
        }
    };
    let cancelled = was_cancelled(r);
    Line {
        metadata: LineMetadata {
            session_num: play_of(r),
            x_request_id: format!("req-{:010}", r.request_id),
            x_correlation_id: correlation_id(r),
            conversation_id: stream_of(r),
            turn_index: r.turn.unwrap_or(0),
            root_correlation_id: root_correlation_id(r),
            request_start_ns: abs(r.sent_ns),
            request_ack_ns: r.first_byte_ns.map(abs),
            request_end_ns: abs(r.end_ns),
            worker_id: format!("lane_{}", r.agentic.as_ref().map_or(0, |a| a.lane)),
            benchmark_phase: match r.phase {
                Phase::Warmup => "warmup",
                Phase::Profile => "profiling",
            },
            was_cancelled: cancelled,
            cancellation_time_ns: cancelled.then(|| abs(r.end_ns)),
            source_trace_id: trace_of(r),
            source_kind: r.agentic.as_ref().map_or("", |a| a.kind.as_str()),
        },
        metrics,
        error: error_details(r),
    }
}

/// One `profile_export.jsonl` object for `r` (§4.2): `metadata` (ids, Unix-ns timestamps,
/// `benchmark_phase` `warmup` | `profiling`, cancellation), `metrics` (`{value, unit}`: ISL/OSL
/// tokens, TTFT/request latency/ITL ms; `error_isl` only for a failure), `error` (`null` or
/// `{code, type, message}`).
pub fn profile_export_line(r: &RequestRecord, anchor_unix_ns: u64) -> Value {
    serde_json::to_value(line(r, anchor_unix_ns)).unwrap_or(Value::Null)
}

/// Streams `profile_export.jsonl` (§4.2): one line per record as records finish, through a
/// `BufWriter` (call [`ProfileExportWriter::finish`] to flush).
#[derive(Debug)]
pub struct ProfileExportWriter {
    path: PathBuf,
    out: BufWriter<File>,
    anchor_unix_ns: u64,
    lines: u64,
}

impl ProfileExportWriter {
    /// Creates (truncates) `<result_dir>/aiperf_artifacts/profile_export.jsonl`, creating the
    /// folders. `anchor_unix_ns` = Unix ns of the run clock's zero.
    pub fn create(result_dir: &Path, anchor_unix_ns: u64) -> io::Result<Self> {
        let dir = artifact_dir(result_dir);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(PROFILE_EXPORT_JSONL);
        regular_or_missing(&path)?;
        let out = BufWriter::new(File::create(&path)?);
        Ok(ProfileExportWriter {
            path,
            out,
            anchor_unix_ns,
            lines: 0,
        })
    }

    /// Appends one record's line.
    pub fn write(&mut self, r: &RequestRecord) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, &line(r, self.anchor_unix_ns))?;
        self.out.write_all(b"\n")?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Flushes and returns the file's path.
    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.out.flush()?;
        Ok(self.path)
    }
}

/// What the AIPerf summary needs beyond the records.
#[derive(Debug, Clone, PartialEq)]
pub struct AiperfRunInfo {
    /// Unix ns of the run clock's zero.
    pub anchor_unix_ns: u64,
    /// Host UTC offset, s, for the naive local `start_time`/`end_time` (§4.3; InferenceX records
    /// the offset separately). [`local_utc_offset_s`] gives the host's.
    pub utc_offset_s: i32,
    /// The run was cancelled (failure threshold, signal): `was_cancelled`, `run_cancelled`.
    pub was_cancelled: bool,
    /// `metadata.scenario` name.
    pub scenario: String,
    /// Further `submission_invalid_reasons` decided by the caller (e.g. `unsafe_override`).
    pub extra_invalid_reasons: Vec<String>,
    /// `metadata.dataset` (copied into the InferenceX aggregate's `dataset`).
    pub dataset: Option<DatasetProvenance>,
}

impl Default for AiperfRunInfo {
    fn default() -> Self {
        AiperfRunInfo {
            anchor_unix_ns: 0,
            utc_offset_s: 0,
            was_cancelled: false,
            scenario: "agentx".into(),
            extra_invalid_reasons: Vec::new(),
            dataset: None,
        }
    }
}

/// The host's current UTC offset, s (for [`AiperfRunInfo::utc_offset_s`]).
pub fn local_utc_offset_s() -> i32 {
    chrono::DateTime::<chrono::Local>::from(inferbench_client::ClockSource::System.wall())
        .offset()
        .local_minus_utc()
}

/// Naive ISO timestamp (`2025-10-17T20:22:08.939332`) of Unix ns `t` at UTC offset `offset_s`.
fn naive_iso(t_unix_ns: u64, offset_s: i32) -> Option<String> {
    let secs = i64::try_from(t_unix_ns / 1_000_000_000).ok()? + i64::from(offset_s);
    let nanos = (t_unix_ns % 1_000_000_000) as u32;
    let dt = chrono::DateTime::from_timestamp(secs, nanos)?;
    Some(dt.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
}

/// An AIPerf metric object over `values` (§4.3): `{unit, avg, min, max, std, p1…p99, count,
/// sum}`; `None` when empty.
pub fn metric_object(unit: &str, values: &[f64]) -> Option<Value> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut m = Map::new();
    m.insert("unit".into(), unit.into());
    m.insert("avg".into(), json!(metrics::mean(values)));
    m.insert("min".into(), json!(sorted[0]));
    m.insert("max".into(), json!(sorted[sorted.len() - 1]));
    m.insert("std".into(), json!(metrics::std_pop(values)));
    for q in AIPERF_PERCENTILES {
        m.insert(
            format!("p{q}"),
            json!(metrics::percentile_sorted(&sorted, f64::from(q))),
        );
    }
    m.insert("count".into(), json!(values.len()));
    m.insert("sum".into(), json!(values.iter().sum::<f64>()));
    Some(Value::Object(m))
}

fn scalar(unit: &str, v: f64) -> Value {
    json!({"unit": unit, "avg": v})
}

/// `profile_export_aiperf.json` (§4.3) from every record of the run: metric objects over the
/// successful profile records (`request_latency`, `time_to_first_token`, `inter_token_latency`
/// ms; `input_sequence_length`, `output_sequence_length` tokens; `e2e_output_token_throughput`
/// tokens/sec/user), counts (`request_count` = successful, `error_request_count`,
/// `completed_request_count`, `context_overflow_count`, `osl_mismatch_count` = OSL ≠ recorded
/// `out`), throughputs over `benchmark_duration` (profile window: first send to last end of the
/// profile records, s), `effective_concurrency` (Σ request time / window),
/// `theoretical_prefix_cache_hit` (`sum` = hit blocks, `count` = blocks, `avg` %), naive local
/// `start_time`/`end_time`, `was_cancelled`, `error_summary`, and `metadata` (scenario,
/// validity, dataset).
pub fn aiperf_summary(records: &[RequestRecord], info: &AiperfRunInfo) -> Value {
    let prof: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    let kept: Vec<&RequestRecord> = records.iter().filter(|r| is_kept(r)).collect();
    let m: Vec<_> = kept.iter().map(|r| aiperf_metrics(r)).collect();
    let ok = kept.len() as f64;
    let errors = (prof.len() - kept.len()) as f64;
    let mut out = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            out.insert(k.to_string(), v);
        }
    };
    put("request_count", Some(scalar("requests", ok)));
    put("error_request_count", Some(scalar("requests", errors)));
    put(
        "completed_request_count",
        Some(scalar("requests", ok + errors)),
    );
    let col =
        |f: &dyn Fn(&inferbench_core::summary::agentic::AiperfRecordMetrics) -> Option<f64>| {
            m.iter().filter_map(f).collect::<Vec<f64>>()
        };
    put(
        "request_latency",
        metric_object("ms", &col(&|x| x.request_latency_ms)),
    );
    put(
        "time_to_first_token",
        metric_object("ms", &col(&|x| x.time_to_first_token_ms)),
    );
    put(
        "inter_token_latency",
        metric_object("ms", &col(&|x| x.inter_token_latency_ms)),
    );
    let isl = col(&|x| Some(x.input_sequence_length as f64));
    let osl = col(&|x| x.output_sequence_length.map(|o| o as f64));
    put("input_sequence_length", metric_object("tokens", &isl));
    put("output_sequence_length", metric_object("tokens", &osl));
    let per_user = col(&|x| {
        let (o, e) = (x.output_sequence_length? as f64, x.request_latency_ms?);
        (o > 0.0 && e > 0.0).then(|| o / (e / 1000.0))
    });
    put(
        "e2e_output_token_throughput",
        metric_object("tokens/sec/user", &per_user),
    );
    let window = metrics::profile_window_ns(records);
    let (sum_isl, sum_osl) = (isl.iter().sum::<f64>(), osl.iter().sum::<f64>());
    put("total_isl", Some(scalar("tokens", sum_isl)));
    put("total_osl", Some(scalar("tokens", sum_osl)));
    if let Some((start, end)) = window.filter(|(s, e)| e > s) {
        let d = (end - start) as f64 / NS_PER_S;
        for (k, v) in window_figures(&prof, ok, (sum_isl, sum_osl), d) {
            put(k, Some(v));
        }
    }
    put("theoretical_prefix_cache_hit", prefix_hit(&kept));
    let overflow = prof.iter().filter(|r| is_context_overflow(r)).count() as f64;
    put("context_overflow_count", Some(scalar("requests", overflow)));
    let mismatch = kept
        .iter()
        .filter(|r| {
            r.agentic
                .as_ref()
                .is_some_and(|a| a.expected_output_tokens != r.completion_tokens)
        })
        .count() as f64;
    put("osl_mismatch_count", Some(scalar("requests", mismatch)));
    let iso = |t: u64| naive_iso(info.anchor_unix_ns.saturating_add(t), info.utc_offset_s);
    put("start_time", window.and_then(|w| iso(w.0)).map(Value::from));
    put("end_time", window.and_then(|w| iso(w.1)).map(Value::from));
    put("was_cancelled", Some(Value::Bool(info.was_cancelled)));
    put("error_summary", Some(error_summary(&prof)));
    let validity = scenario_validity(records, info.was_cancelled, &info.extra_invalid_reasons);
    put(
        "metadata",
        Some(json!({
            "scenario": info.scenario,
            "submission_valid": validity.valid,
            "submission_invalid_reasons": validity.reasons,
            "dataset": info.dataset,
        })),
    );
    put(
        "producer",
        Some(json!({"name": "inferbench", "version": env!("CARGO_PKG_VERSION")})),
    );
    Value::Object(out)
}

/// The figures of [`aiperf_summary`] over the profile window of `d` seconds: its length,
/// the request rate of `ok` successful requests, the token throughputs of `(Σ ISL, Σ OSL)`
/// tokens, and `effective_concurrency` (Σ request time of the `prof` records / `d`).
fn window_figures(
    prof: &[&RequestRecord],
    ok: f64,
    (sum_isl, sum_osl): (f64, f64),
    d: f64,
) -> [(&'static str, Value); 6] {
    let busy: f64 = prof
        .iter()
        .map(|r| r.end_ns.saturating_sub(r.sent_ns) as f64 / NS_PER_S)
        .sum();
    [
        ("benchmark_duration", scalar("sec", d)),
        ("request_throughput", scalar("requests/sec", ok / d)),
        ("input_token_throughput", scalar("tokens/sec", sum_isl / d)),
        ("output_token_throughput", scalar("tokens/sec", sum_osl / d)),
        (
            "total_token_throughput",
            scalar("tokens/sec", (sum_isl + sum_osl) / d),
        ),
        ("effective_concurrency", scalar("requests", busy / d)),
    ]
}

/// `theoretical_prefix_cache_hit` of the `kept` records: hit blocks (`sum`) of all prompt
/// blocks (`count`), `avg` in %; `None` without agentic records.
fn prefix_hit(kept: &[&RequestRecord]) -> Option<Value> {
    let (hit, total) = kept
        .iter()
        .filter_map(|r| r.agentic.as_ref())
        .fold((0u64, 0u64), |(h, t), a| {
            (h + u64::from(a.hit_blocks), t + u64::from(a.total_blocks))
        });
    (total > 0).then(|| {
        json!({
            "unit": "%",
            "avg": 100.0 * hit as f64 / total as f64,
            "sum": hit,
            "count": total,
        })
    })
}

/// `error_summary`: the failed `prof` records grouped by their error details, each with its
/// count, in the details' order.
fn error_summary(prof: &[&RequestRecord]) -> Value {
    let mut groups: BTreeMap<ErrorDetails, u64> = BTreeMap::new();
    for d in prof.iter().filter_map(|r| error_details(r)) {
        *groups.entry(d).or_default() += 1;
    }
    let summary: Vec<Value> = groups
        .into_iter()
        .map(|(d, n)| json!({"error_details": d, "count": n}))
        .collect();
    Value::Array(summary)
}

/// The AIPerf `server_metrics_export.json` model (§4.4) of `snaps` over the profiling window
/// `[start_unix_s, end_unix_s]` (Unix s): [`inferbench_core::server_metrics::summarize`] for
/// counters and gauges (the same numbers the aggregate uses, give it the same window), gauge
/// `std`/`p1`…`p99` from the window's samples, and with `slice_s` the per-series timeslices
/// (gauges: `avg/min/max` of the scrapes in the slice; counters: `total`/`rate` between the last
/// scrapes at or before the slice edges; `is_complete` false for a shorter last slice;
/// histograms have none).
pub fn server_metrics_export(
    snaps: &[Snapshot],
    start_unix_s: f64,
    end_unix_s: f64,
    slice_s: Option<f64>,
) -> ServerExport {
    let summary = summarize(snaps, start_unix_s, end_unix_s);
    let samples = window_gauge_samples(snaps, start_unix_s, end_unix_s);
    let mut export = server_export(&summary, Some(&samples));
    if let Some(w) = slice_s.filter(|w| w.is_finite() && *w > 0.0) {
        add_timeslices(&mut export, snaps, start_unix_s, end_unix_s, w);
    }
    export
}

/// Family name and counter-ness of a raw sample for timeslices; `None` for histogram parts and
/// `_created`.
fn slice_family(name: &str) -> Option<(&str, bool)> {
    if ["_bucket", "_sum", "_count", "_created"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        return None;
    }
    Some(match name.strip_suffix("_total") {
        Some(base) => (base, true),
        None => (name, false),
    })
}

fn add_timeslices(export: &mut ServerExport, snaps: &[Snapshot], start: f64, end: f64, w: f64) {
    if end <= start {
        return;
    }
    // (family, labels) → time-ordered (unix_s, value).
    type Key = (String, BTreeMap<String, String>);
    let mut series: BTreeMap<Key, (bool, Vec<(f64, f64)>)> = BTreeMap::new();
    for s in snaps {
        for x in s.samples.iter().filter(|x| x.value.is_finite()) {
            let Some((fam, counter)) = slice_family(&x.name) else {
                continue;
            };
            let e = series
                .entry((fam.to_string(), parse_labels(&x.labels)))
                .or_insert((counter, Vec::new()));
            e.1.push((s.unix_s, x.value));
        }
    }
    let n = ((end - start) / w).ceil().max(1.0) as usize;
    for ((fam, labels), (counter, points)) in series {
        let Some(m) = export.metrics.get_mut(&fam) else {
            continue;
        };
        let Some(target) = m.series.iter_mut().find(|s| s.labels == labels) else {
            continue;
        };
        let mut slices = Vec::new();
        for k in 0..n {
            let lo = start + k as f64 * w;
            let hi = (lo + w).min(end);
            let complete = hi - lo >= w * (1.0 - 1e-9);
            let base = json!({
                "start_ns": (lo * NS_PER_S) as u64,
                "end_ns": (hi * NS_PER_S) as u64,
                "is_complete": complete,
            });
            let Value::Object(mut obj) = base else {
                continue;
            };
            if counter {
                let at = |t: f64| points.iter().rev().find(|p| p.0 <= t).map(|p| p.1);
                let first_in = points.iter().find(|p| p.0 >= lo && p.0 <= hi).map(|p| p.1);
                let (Some(a), Some(b)) = (at(lo).or(first_in), at(hi)) else {
                    continue;
                };
                let total = if b >= a { b - a } else { b };
                obj.insert("total".into(), json!(total));
                obj.insert(
                    "rate".into(),
                    json!(total / (hi - lo).max(f64::MIN_POSITIVE)),
                );
            } else {
                let v: Vec<f64> = points
                    .iter()
                    .filter(|p| p.0 >= lo && (p.0 < hi || (k + 1 == n && p.0 <= hi)))
                    .map(|p| p.1)
                    .collect();
                if v.is_empty() {
                    continue;
                }
                obj.insert("avg".into(), json!(metrics::mean(&v)));
                obj.insert(
                    "min".into(),
                    json!(v.iter().copied().fold(f64::INFINITY, f64::min)),
                );
                obj.insert(
                    "max".into(),
                    json!(v.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
                );
            }
            slices.push(Value::Object(obj));
        }
        target.timeslices = Some(slices);
    }
}

/// An error when `path` exists and is not a regular file (issue 39 §1: never written into a
/// device, FIFO or socket).
fn regular_or_missing(path: &Path) -> io::Result<()> {
    match crate::output::non_regular(path) {
        Some(why) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {why}", path.display()),
        )),
        None => Ok(()),
    }
}

/// Writes `v` as pretty JSON through `<path>.tmp` renamed onto `path`
/// ([`crate::output::write_streamed`]): a failed write keeps the previous file (issue 39, a
/// fresh tester's finding 3's kind).
fn write_json(path: &Path, v: &impl Serialize) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    regular_or_missing(path)?;
    crate::output::write_streamed(path, |out| {
        serde_json::to_writer_pretty(&mut *out, v)?;
        out.write_all(b"\n")?;
        Ok(())
    })
    .map_err(|e| io::Error::other(format!("{e:#}")))
}

/// Writes every record to `<result_dir>/aiperf_artifacts/profile_export.jsonl` (the non-streaming
/// form of [`ProfileExportWriter`]); returns the path.
pub fn write_profile_export(
    result_dir: &Path,
    records: &[RequestRecord],
    anchor_unix_ns: u64,
) -> io::Result<PathBuf> {
    let mut w = ProfileExportWriter::create(result_dir, anchor_unix_ns)?;
    for r in records {
        w.write(r)?;
    }
    w.finish()
}

/// Writes [`aiperf_summary`] to `<result_dir>/aiperf_artifacts/profile_export_aiperf.json`;
/// returns the path.
pub fn write_aiperf_summary(
    result_dir: &Path,
    records: &[RequestRecord],
    info: &AiperfRunInfo,
) -> io::Result<PathBuf> {
    let path = artifact_dir(result_dir).join(PROFILE_EXPORT_AIPERF_JSON);
    write_json(&path, &aiperf_summary(records, info))?;
    Ok(path)
}

/// Writes `export` to `<result_dir>/aiperf_artifacts/server_metrics_export.json` as
/// `{"metrics": …}` plus the window (`profiling_window_unix_s`) and scrape count; returns the
/// path. Write nothing when there were no snapshots: the script then reports the server metrics
/// as missing, as [`inferbench_core::summary::agentic::aggregate`] does for `None`.
pub fn write_server_metrics_export(
    result_dir: &Path,
    export: &ServerExport,
    window_unix_s: (f64, f64),
    scrapes: usize,
) -> io::Result<PathBuf> {
    let path = artifact_dir(result_dir).join(SERVER_METRICS_EXPORT_JSON);
    let v = json!({
        "profiling_window_unix_s": [window_unix_s.0, window_unix_s.1],
        "scrapes": scrapes,
        "metrics": export.metrics,
    });
    write_json(&path, &v)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferbench_core::record::{AgenticRef, ChunkRecord};
    use inferbench_core::{Channel, ErrorClass};

    const MS: u64 = 1_000_000;

    fn rec(id: u64, phase: Phase, success: bool) -> RequestRecord {
        RequestRecord {
            request_id: id,
            conversation_id: Some("tr::sa:x".into()),
            turn: Some(2),
            phase,
            success,
            error_class: (!success).then_some(ErrorClass::Cancelled),
            error: (!success).then(|| "cancelled".to_string()),
            sent_ns: 10 * MS,
            first_byte_ns: Some(15 * MS),
            first_token_ns: Some(20 * MS),
            last_token_ns: Some(40 * MS),
            end_ns: 41 * MS,
            chunks: vec![ChunkRecord {
                t_ns: 20 * MS,
                channel: Channel::Content,
                tokens: None,
            }],
            prompt_tokens: 100,
            completion_tokens: 5,
            agentic: Some(AgenticRef {
                lane: 3,
                play: 7,
                trace_id: "tr".into(),
                kind: "profile".into(),
                hit_blocks: 1,
                total_blocks: 2,
                expected_output_tokens: 5,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn jsonl_line_shape() {
        let v = profile_export_line(&rec(1, Phase::Profile, true), 1_000_000_000_000);
        let md = &v["metadata"];
        assert_eq!(md["request_start_ns"], json!(1_000_010_000_000u64));
        assert_eq!(md["request_ack_ns"], json!(1_000_015_000_000u64));
        assert_eq!(md["request_end_ns"], json!(1_000_041_000_000u64));
        assert_eq!(md["benchmark_phase"], "profiling");
        assert_eq!(md["conversation_id"], "tr::sa:x");
        assert_eq!(md["x_correlation_id"], "00000007-tr::sa:x");
        assert_eq!(md["root_correlation_id"], "00000007-tr");
        assert_eq!(
            (md["turn_index"].clone(), md["session_num"].clone()),
            (json!(2), json!(7))
        );
        assert_eq!(md["worker_id"], "lane_3");
        assert_eq!(md["cancellation_time_ns"], Value::Null);
        let m = &v["metrics"];
        assert_eq!(
            m["time_to_first_token"],
            json!({"value": 10.0, "unit": "ms"})
        );
        assert_eq!(m["request_latency"], json!({"value": 30.0, "unit": "ms"}));
        // (30 − 10) / (5 − 1).
        assert_eq!(
            m["inter_token_latency"],
            json!({"value": 5.0, "unit": "ms"})
        );
        assert_eq!(
            m["output_sequence_length"],
            json!({"value": 5, "unit": "tokens"})
        );
        assert_eq!(v["error"], Value::Null);

        let mut w = rec(2, Phase::Warmup, false);
        w.http_status = None;
        let v = profile_export_line(&w, 0);
        assert_eq!(v["metadata"]["benchmark_phase"], "warmup");
        assert_eq!(v["metadata"]["was_cancelled"], true);
        assert_eq!(v["metadata"]["cancellation_time_ns"], json!(41 * MS));
        assert_eq!(
            v["metrics"],
            json!({"error_isl": {"value": 100, "unit": "tokens"}})
        );
        assert_eq!(
            v["error"],
            json!({"code": null, "type": "cancelled", "message": "cancelled"})
        );
    }

    #[test]
    fn summary_objects_and_counts() {
        let recs = vec![
            rec(1, Phase::Profile, true),
            rec(2, Phase::Profile, false),
            rec(3, Phase::Warmup, true),
        ];
        let info = AiperfRunInfo {
            anchor_unix_ns: 1_700_000_000 * 1_000_000_000,
            utc_offset_s: 3600,
            ..Default::default()
        };
        let s = aiperf_summary(&recs, &info);
        assert_eq!(s["request_count"], json!({"unit": "requests", "avg": 1.0}));
        assert_eq!(s["error_request_count"]["avg"], json!(1.0));
        assert_eq!(s["completed_request_count"]["avg"], json!(2.0));
        let rl = &s["request_latency"];
        assert_eq!(
            (rl["avg"].clone(), rl["p99"].clone(), rl["count"].clone()),
            (json!(30.0), json!(30.0), json!(1))
        );
        assert_eq!(
            s["benchmark_duration"],
            json!({"unit": "sec", "avg": 0.031})
        );
        assert_eq!(
            s["theoretical_prefix_cache_hit"],
            json!({"unit": "%", "avg": 50.0, "sum": 1, "count": 2})
        );
        // 2023-11-14T22:13:20 UTC + 10 ms, one hour east.
        assert_eq!(s["start_time"], "2023-11-14T23:13:20.010000");
        assert_eq!(s["metadata"]["submission_valid"], true);
        assert_eq!(s["error_summary"][0]["count"], json!(1));
        assert_eq!(s["osl_mismatch_count"]["avg"], json!(0.0));
        // Empty run: no panic, counts zero, no window.
        let e = aiperf_summary(&[], &AiperfRunInfo::default());
        assert_eq!(e["request_count"]["avg"], json!(0.0));
        assert!(e.get("benchmark_duration").is_none() && e.get("request_latency").is_none());
    }

    #[test]
    fn server_export_with_timeslices() {
        let snap = |t: f64, c: f64, g: f64| {
            Snapshot {
            phase: "profile".into(),
            unix_s: t,
            samples: inferbench_core::prometheus::parse_prometheus(&format!(
                "vllm:prompt_tokens_total{{engine=\"0\"}} {c}\nvllm:kv_cache_usage_perc{{engine=\"0\"}} {g}\n"
            )),
        }
        };
        let snaps = vec![
            snap(100.0, 0.0, 0.0),
            snap(100.5, 50.0, 0.2),
            snap(101.0, 100.0, 0.4),
            snap(101.5, 150.0, 0.6),
            snap(102.0, 300.0, 0.8),
            snap(102.6, 300.0, 0.0),
        ];
        let e = server_metrics_export(&snaps, 100.0, 102.5, Some(1.0));
        let c = &e.metrics["vllm:prompt_tokens"].series[0];
        assert_eq!(c.stats["total"], 300.0);
        let ts = c.timeslices.as_ref().unwrap();
        assert_eq!(ts.len(), 3);
        assert_eq!(
            (ts[0]["total"].clone(), ts[1]["total"].clone()),
            (json!(100.0), json!(200.0))
        );
        assert_eq!(ts[2]["is_complete"], false);
        let g = &e.metrics["vllm:kv_cache_usage_perc"].series[0];
        // Scrapes 100.0 … 102.0 are inside the window.
        assert_eq!(g.stats["max"], 0.8);
        assert_eq!(g.stats["p50"], 0.4);
        let gts = g.timeslices.as_ref().unwrap();
        assert_eq!(gts[0]["avg"], json!(0.1));
        assert_eq!(gts[1]["max"], json!(0.6));
    }
}
