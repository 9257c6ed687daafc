//! vLLM `benchmark_serving --save-result` JSON, and the same shape from `inferbench bench
//! --save-result` (DESIGN.md §3 "RunSummary"; the fields InferenceX's client writes and
//! `process_result.py` reads, reference/inferencex-producer.md §6.4, §7.1): recognised by
//! `completed` and `request_throughput`. Latencies `*_ms` become seconds under InferenceX names
//! (TPOT also gives interactivity, 1000 / TPOT ms); identity from `model_id`, the mean ISL/OSL
//! (`total_input_tokens` / `total_output_tokens` ÷ `completed`) and `max_concurrency`, the rest
//! from the user's overrides. Our `inferbench` extras object is flattened as `inferbench.*`;
//! the records file it names (`requests_file`) and the side files beside the result
//! (`X.power.csv`, `X.server_metrics.jsonl`, …) are read as a point directory's are. Our
//! `summary.json` is this shape too: [`summary_point`] also reads artifact directories. Our own
//! summaries (those with `inferbench.schema_version`) are read typed by `super::ours`; the rest
//! by name here ([`foreign_facts`]).

use std::collections::BTreeMap;
use std::path::Path;

use inferbench_core::matrix::MatrixRow;
use inferbench_core::metrics::{interactivity_from_tpot_ms, MS_PER_S};
use inferbench_core::registry;
use inferbench_core::summary::keys::{self, LatencyStat};
use inferbench_core::summary::StopReason;
use serde_json::{Map, Value};

use super::ours;
use super::requests::read_requests_or_mark;
use super::telemetry::{read_power, read_server_metrics};
use super::{
    base_run, config_key, date_from_text, date_from_unix, empty_point, fill_per_gpu,
    inferencex::agg_metrics, job_identity, num, result_side_files, Field, Importer, JobLevel,
    Lookup, Overrides, ParseError, PointData, RunData, Source, SourceKind, NOT_A_RESULT,
};

/// A vLLM-shaped `--save-result` file (vLLM's or `inferbench bench`'s).
pub(super) struct SaveResult;

impl Importer for SaveResult {
    fn name(&self) -> &'static str {
        SourceKind::VllmResult.as_str()
    }

    fn recognises(&self, v: &Value) -> bool {
        v.as_object()
            .is_some_and(|o| o.contains_key("completed") && o.contains_key("request_throughput"))
    }

    fn parse(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        v: &Value,
        ov: &Overrides,
    ) -> Result<RunData, ParseError> {
        let Value::Object(o) = v else {
            return Err(format!("{}: {NOT_A_RESULT}", path.display()));
        };
        let mut run = base_run(SourceKind::VllmResult, path, &bytes);
        // `bench --save-result` writes our summary: read typed (super::ours), the rest by name.
        let (facts, records) = if ours::is_ours(o) {
            let s = ours::read(o, &path.display().to_string())?;
            let records = s.inferbench.requests_file.clone();
            (ours::facts(&s, o), records)
        } else {
            let records = o
                .get("inferbench")
                .and_then(|x| x.get("requests_file"))
                .and_then(Value::as_str)
                .map(str::to_string);
            (foreign_facts(o), records)
        };
        let mut pt = summary_point(facts, None, None, None, ov, &mut run)?;
        run.artifacts.push(("summary.json".into(), bytes));
        // `bench --save-requests`: the records file the result names (beside it, or a path).
        let records = records
            .map(|f| path.parent().unwrap_or(Path::new(".")).join(f))
            .filter(|f| f.is_file());
        if let Some(f) = records {
            read_requests_or_mark(&f, &mut pt, &mut run.warnings)?;
        }
        // The side files `bench` wrote beside it, stored as a point directory's are.
        for (kind, side) in result_side_files(path) {
            match kind {
                "power.csv" => read_power(&side, &mut run, &mut pt)?,
                "server_metrics.jsonl" => read_server_metrics(&side, &mut run, &mut pt)?,
                _ => {}
            }
            let b = std::fs::read(&side).map_err(|e| format!("{}: {e}", side.display()))?;
            run.artifacts.push((kind.to_string(), b));
        }
        run.points.push(pt);
        Ok(run)
    }
}

/// What a point takes from a vLLM-shaped summary, however the summary was read: our own
/// `summary.json` typed through core ([`super::ours::facts`]), a foreign file's JSON by
/// [`foreign_facts`]. [`summary_point`] builds the point from it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SummaryFacts {
    /// `model_id` as the file gives it (absent in some foreign files).
    pub model_id: Option<Value>,
    /// Successful profile requests.
    pub completed: f64,
    /// Σ prompt tokens of the successful requests, tokens.
    pub total_input_tokens: Option<f64>,
    /// Σ completion tokens of the successful requests, tokens.
    pub total_output_tokens: Option<f64>,
    /// `max_concurrency` (absent when unlimited).
    pub max_concurrency: Option<f64>,
    /// The summary names itself an agentic-coding point (`scenario_type` at its top level or
    /// in its `metadata`).
    pub agentic: bool,
    /// Why the summary says it is no valid submission (`submission_valid: false` at its top
    /// level or in its `metadata`, with its `submission_invalid_reasons`; counted for agentic
    /// points only); `None` when it does not say so.
    pub submission_invalid: Option<String>,
    /// Why the run was cut short, when it was: our `inferbench.stop_reason` other than
    /// `completed` (`interrupted` also when only `inferbench.interrupted` is true; an unknown
    /// reason reads as `aborted`). `None` for a run that completed or a foreign file.
    pub cut_short: Option<StopReason>,
    /// Why the producer found its timings not valid (our `inferbench.invalid_reason`).
    pub timing_invalid: Option<String>,
    /// Why the producer found the point failed (our `inferbench.failed_reason`: nothing was
    /// measured); stored as the point's `error`.
    pub failed_reason: Option<String>,
    /// UTC `YYYY-MM-DD` of the file's `date`, when it has one.
    pub date: Option<String>,
    /// The profiling window, unix seconds.
    pub start_unix: Option<f64>,
    /// End of the profiling window, unix seconds.
    pub end_unix: Option<f64>,
    /// Our `inferbench.adaptive` (issue 43): the point ran under the early-stop rule.
    pub adaptive: bool,
    /// Our `inferbench.prompts_used`: profile prompts an adaptive point sent.
    pub prompts_used: Option<i64>,
    /// The point's metrics: InferenceX names and units (seconds, tok/s, tok/s/user), extras
    /// as `inferbench.*`; per-GPU figures are filled later from the configuration.
    pub metrics: BTreeMap<String, f64>,
    /// The server's settings and fingerprint (our `inferbench.server`); `None` for a file
    /// without them (foreign, or ours before issue 39 §5).
    pub server: Option<inferbench_core::fingerprint::ServerFingerprint>,
}

/// `(agentic, submission_invalid)` as a summary's top-level keys `top` and its `metadata`
/// object say (an AgentX replay's `summary.json` writes them at its top level, trial 11; other
/// files in `metadata`): `scenario_type = agentic-coding`, and when `submission_valid` is false
/// (a boolean or the string `"false"`) why: its `submission_invalid_reasons` (an array or a
/// string, AIPerf's codes or our text) joined with `; `, else `submission_valid: false`.
pub(super) fn scenario_flags(top: &Map<String, Value>) -> (bool, Option<String>) {
    let meta = top.get("metadata").and_then(Value::as_object);
    let field = |k: &str| top.get(k).or_else(|| meta.and_then(|m| m.get(k)));
    let agentic = meta
        .into_iter()
        .chain(std::iter::once(top))
        .any(|m| m.get("scenario_type").and_then(Value::as_str) == Some("agentic-coding"));
    let invalid = field("submission_valid")
        .is_some_and(inferbench_core::summary::agentic::submission_invalid);
    let reasons = match field("submission_invalid_reasons") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join("; "),
        Some(Value::String(r)) => r.clone(),
        _ => String::new(),
    };
    let why = invalid.then(|| {
        if reasons.is_empty() {
            "submission_valid: false".to_string()
        } else {
            reasons
        }
    });
    (agentic, why)
}

/// The facts of a foreign vLLM-shaped summary `s` (vLLM's `--save-result`, InferenceX's client,
/// or one of ours written before `inferbench.schema_version`), read from its JSON by name.
pub(super) fn foreign_facts(s: &Map<String, Value>) -> SummaryFacts {
    let (agentic, submission_invalid) = scenario_flags(s);
    let x = s.get("inferbench").and_then(Value::as_object);
    let mut metrics = BTreeMap::new();
    summary_metrics(s, &mut metrics);
    SummaryFacts {
        model_id: s.get("model_id").cloned(),
        completed: s.get("completed").and_then(num).unwrap_or(0.0),
        total_input_tokens: s.get("total_input_tokens").and_then(num),
        total_output_tokens: s.get("total_output_tokens").and_then(num),
        max_concurrency: s.get("max_concurrency").and_then(num),
        agentic,
        submission_invalid,
        cut_short: x.and_then(|x| {
            let reason = x.get("stop_reason").and_then(Value::as_str);
            let interrupted = x.get("interrupted").and_then(Value::as_bool) == Some(true);
            cut_short(
                reason
                    .map(|r| serde_json::from_value(Value::from(r)).unwrap_or(StopReason::Aborted)),
                interrupted,
            )
        }),
        timing_invalid: x
            .and_then(|x| x.get("invalid_reason"))
            .filter(|r| !r.is_null())
            .map(|r| r.as_str().map_or_else(|| r.to_string(), String::from)),
        failed_reason: x
            .and_then(|x| x.get("failed_reason"))
            .and_then(Value::as_str)
            .map(String::from),
        date: s
            .get("date")
            .and_then(Value::as_str)
            .and_then(date_from_text),
        start_unix: s.get("benchmark_start_time_unix").and_then(num),
        end_unix: s.get("benchmark_end_time_unix").and_then(num),
        metrics,
        server: None,
        adaptive: false,
        prompts_used: None,
    }
}

/// A point from a vLLM-shaped summary's facts `f`, with optional InferenceX aggregate and
/// job.json objects (identity: `ov` first, then the aggregate, the job with its matrix row —
/// typed when `row` holds it, core's `MatrixRow` as the runner wrote it — and what the summary
/// itself gives). Sets the run's window and date.
pub(super) fn summary_point(
    f: SummaryFacts,
    agg: Option<&Map<String, Value>>,
    job: Option<&Map<String, Value>>,
    row: Option<&MatrixRow>,
    ov: &Overrides,
    run: &mut RunData,
) -> Result<PointData, ParseError> {
    let mut sources: Vec<Source<'_>> = agg.into_iter().map(Source::Map).collect();
    // The runner's job.json: its levels by name (InferenceX's dashed keys, `model-prefix`,
    // under the underscore names), its matrix row typed.
    let job_levels = job.map(|j| job_identity(j, row)).unwrap_or_default();
    sources.extend(job_levels.iter().map(JobLevel::source));
    // The summary's own `scenario_type` (f.agentic), or the aggregate's or the job's.
    let agentic = f.agentic || sources.iter().any(Source::says_agentic);
    // Derived identity from the summary itself: model id, mean ISL/OSL (not for agentic
    // points, whose lengths vary by design), concurrency.
    let mut derived = Map::new();
    if let Some(v) = &f.model_id {
        derived.insert("model".into(), v.clone());
    }
    if agentic {
        derived.insert("scenario_type".into(), Value::from("agentic-coding"));
    }
    let completed = f.completed;
    if completed > 0.0 && !agentic {
        for (total, dst) in [
            (f.total_input_tokens, "isl"),
            (f.total_output_tokens, "osl"),
        ] {
            if let Some(t) = total {
                derived.insert(dst.into(), Value::from((t / completed).round() as i64));
            }
        }
    }
    if let Some(c) = f.max_concurrency {
        derived.insert("conc".into(), Value::from(c as i64));
    }
    sources.push(Source::Map(&derived));
    let l = Lookup {
        overrides: ov,
        sources,
    };
    let cfg = config_key(&l, &mut run.names);
    let conc = l.int(Field::Conc).unwrap_or(0);
    let mut m = f.metrics;
    if let Some(a) = agg {
        agg_metrics(a, &mut m); // the aggregate's per-GPU figures win (InferenceX rules)
    }
    fill_per_gpu(&cfg, &mut m);
    run.start_unix = f.start_unix;
    run.end_unix = f.end_unix;
    let date = f
        .date
        .or_else(|| f.start_unix.map(date_from_unix))
        .unwrap_or_default();
    run.date = date.clone();
    let mut pt = empty_point(cfg, conc, date);
    // What the producer learnt of the server (issue 39 §5); ingest adds the `--set` keys.
    pt.server = f.server;
    // An adaptive point's early stop (issue 43): it ran under the rule, and how many prompts it
    // sent.
    pt.adaptive = f.adaptive;
    pt.prompts_used = f.prompts_used.filter(|_| f.adaptive);
    // A point that measured but whose producer failed it (its records file incomplete: issue
    // 39, fresh tester's finding 3) is failed, its cause the producer's.
    if completed > 0.0 {
        pt.error = f.failed_reason.clone();
    }
    if completed == 0.0 {
        // Why, as far as the summary says (trial 14: a point interrupted before it sent
        // anything said "no successful request").
        let failed = m.get("inferbench.failed").copied().unwrap_or(0.0);
        pt.error = Some(f.failed_reason.clone().unwrap_or_else(|| {
            inferbench_core::summary::nothing_measured_cause(f.cut_short, failed as u64)
        }));
        // Nothing was measured: the zeros a summary writes for its latencies and rates are
        // placeholders, stored as absent (trial 13: `0.0000` TTFT and E2EL beside `-`
        // interactivity for a point where no request finished).
        m.retain(|k, _| {
            !(k.ends_with("ttft")
                || k.ends_with("tpot")
                || k.ends_with("itl")
                || k.ends_with("e2el")
                || k.ends_with("ttfo")
                || k.ends_with("intvty"))
        });
    }
    pt.metrics = m;
    // Not a complete result: an AgentX replay's `submission_valid: false`, or a run cut short
    // (Ctrl-C, an unreachable server, an abort), or timings the producer found not valid (a
    // server that fell behind its schedule).
    // Each cause is kept as the point's `invalid_reason` (trial 16: an invalid row had no
    // reason anywhere).
    // A point that measured nothing is failed, its cause the `error` above, and never also
    // invalid, cut short or not (core's `nothing_measured_cause`: one rule with the summary's
    // writer; issue 39, fresh tester's finding 1: `status: failed` beside
    // `invalid_reason: "cut short: interrupted"`).
    // Nor for its AgentX submission (issue 39 §4, fresh tester: "replay shorter than AgentX's
    // 900 s minimum" beside the failure) or any other reason: it is not valid, and why is its
    // `error` alone.
    let reasons: Vec<String> = (f.cut_short.map(|r| cut_short_text(r).to_string()))
        .into_iter()
        .chain(f.submission_invalid.filter(|_| agentic))
        .chain(f.timing_invalid.and_then(|r| without_nothing_measured(&r)))
        .filter(|_| completed > 0.0)
        .collect();
    pt.valid = reasons.is_empty();
    pt.invalid_reason = (!reasons.is_empty()).then(|| reasons.join("; "));
    Ok(pt)
}

/// `reason` (an `inferbench.invalid_reason`, causes joined with `; `) without the
/// `failed its gate: nothing was measured…` cause that files written before
/// `inferbench.failed_reason` carried (issue 39 §9: such a point is failed, its cause the
/// point's `error`, not also invalid); `None` when nothing else is left.
fn without_nothing_measured(reason: &str) -> Option<String> {
    const GATE: &str = "failed its gate: nothing was measured";
    const TAIL: &str =
        "; the result is marked invalid (kept off frontiers unless --include-invalid)";
    let Some(at) = reason.find(GATE) else {
        return Some(reason.to_string());
    };
    let end = reason[at..]
        .find(TAIL)
        .map_or(reason.len(), |e| at + e + TAIL.len());
    let rest = format!("{}{}", &reason[..at], &reason[end..]);
    let rest = rest
        .trim_matches(|c: char| c == ';' || c == ' ')
        .replace("; ; ", "; ");
    (!rest.is_empty()).then_some(rest)
}

/// How a point's `invalid_reason` names a run cut short for `r`.
fn cut_short_text(r: StopReason) -> &'static str {
    match r {
        StopReason::Interrupted => "cut short: interrupted",
        StopReason::ServerUnreachable => "cut short: the server became unreachable",
        StopReason::Aborted => "cut short: stopped on a failure gate",
        StopReason::Completed => "completed",
    }
}

/// Why a run was cut short, from its `stop_reason` (`None` when the file has none) and its
/// `interrupted` flag: `None` when it completed.
pub(super) fn cut_short(reason: Option<StopReason>, interrupted: bool) -> Option<StopReason> {
    match reason {
        Some(r) if r != StopReason::Completed => Some(r),
        _ if interrupted => Some(StopReason::Interrupted),
        _ => None,
    }
}

/// The stored error of a point interrupted (Ctrl-C) before any request finished (core's
/// [`inferbench_core::summary::INTERRUPTED_BEFORE_ANY`]).
pub use inferbench_core::summary::INTERRUPTED_BEFORE_ANY;

/// Flattens a vLLM-shaped summary into InferenceX names and units: vLLM's latency statistics
/// (the explicit table of its keys, core's [`LatencyStat::from_vllm_key`]: ms, a number or a
/// numeric string) → seconds under InferenceX's name; TPOT statistics also give `*_intvty` =
/// 1000 / TPOT_ms; every other numeric top-level key kept under its name, value unchanged (a
/// `foo_ms` key outside the table included: no unit is read from a name); the `inferbench`
/// extras object flattened as `inferbench.<key>` (the distributions core's
/// [`keys::EXTRAS_MS_FIELDS`] lists in ms converted) and its E2E-normalized interactivity /
/// TTFO statistics promoted to the hot names.
fn summary_metrics(s: &Map<String, Value>, out: &mut BTreeMap<String, f64>) {
    for (k, v) in s {
        if k == "inferbench" {
            continue;
        }
        match LatencyStat::from_vllm_key(k) {
            Some(stat) => {
                let Some(ms) = num(v) else { continue };
                out.insert(stat.inferencex_key(), LatencyStat::seconds(ms));
                if let (Some(ik), Some(iv)) =
                    (stat.inferencex_intvty_key(), interactivity_from_tpot_ms(ms))
                {
                    out.insert(ik, iv);
                }
            }
            None if v.is_string() => {}
            None => {
                if let Some(x) = num(v) {
                    out.insert(k.clone(), x);
                }
            }
        }
    }
    if let Some(Value::Object(ext)) = s.get("inferbench") {
        extras_metrics(ext, out);
        for (k, v) in out.clone() {
            let Some(rest) = k.strip_prefix("inferbench.") else {
                continue;
            };
            let leaf = rest.rsplit('.').next().unwrap_or(rest);
            for q in ["p75", "p90"] {
                let hot = format!("{q}_e2e_norm_intvty");
                if leaf == hot
                    || rest == format!("e2e_norm_intvty.{q}")
                    || rest == format!("e2e_normalized_interactivity.{q}")
                {
                    out.entry(hot).or_insert(v);
                }
            }
            for (a, b, hot) in [
                ("median_ttfo", "ttfo.median", "median_ttfo"),
                ("p99_ttfo", "ttfo.p99", "p99_ttfo"),
            ] {
                if leaf == a || rest == b {
                    out.entry(hot.to_string()).or_insert(v);
                }
            }
        }
    }
}

/// The metrics of a summary's `inferbench` extras object `ext`, added to `out`, by the one rule
/// both readings of a summary (typed, [`super::ours`], and by name) use: every numeric leaf
/// flattened as `inferbench.<key>[.sub…]` ([`flatten_extras`]: the distributions core lists in
/// ms converted to s), then every one of core's registry distributions found there
/// ([`registry::distribution_bases`]: `inferbench.<base>.<stat>`, count ≥ 1) also under its
/// registry names ([`registry::distribution_stat_name`]: `p99.9` of `ttft` → `p999_ttft`, `std`
/// of `achieved_osl` → `std_achieved_osl`; `count`, `min`, `max` stay flattened only). A name
/// `out` already holds keeps its value (vLLM's block of the same statistic). Nothing from an
/// empty distribution (count 0: a summary written before the field, or no success). So a new
/// metric defined in core (its extras field named as its registry base) needs nothing here.
pub(super) fn extras_metrics(ext: &Map<String, Value>, out: &mut BTreeMap<String, f64>) {
    flatten_extras("inferbench", ext, 1.0, out);
    let mut named = Vec::new();
    for base in registry::distribution_bases() {
        let prefix = format!("inferbench.{base}.");
        if !out
            .get(&format!("{prefix}count"))
            .is_some_and(|n| *n >= 1.0)
        {
            continue;
        }
        let stats = out.range(prefix.clone()..);
        for (k, v) in stats.take_while(|(k, _)| k.starts_with(&prefix)) {
            if let Some(name) = registry::distribution_stat_name(base, &k[prefix.len()..]) {
                named.push((name, *v));
            }
        }
    }
    for (k, v) in named {
        out.entry(k).or_insert(v);
    }
}

/// Flattens numeric leaves as `prefix.key[.sub…]`; a field that core's
/// [`keys::EXTRAS_MS_FIELDS`] lists in ms (a latency distribution, or an older summary's single
/// value) takes the table's name and its values are converted to seconds — except counts. Any
/// other field keeps its name and values (`scale` applies to a sub-object of a converted field).
fn flatten_extras(
    prefix: &str,
    m: &Map<String, Value>,
    scale: f64,
    out: &mut BTreeMap<String, f64>,
) {
    for (k, v) in m {
        let (name, sc) = match keys::extras_ms_field(k).filter(|_| prefix == "inferbench") {
            Some(name) => (name, 1.0 / MS_PER_S),
            None => (k.as_str(), scale),
        };
        match v {
            // The server's every counter and gauge stay in server_metrics.jsonl (stored as
            // series); the point keeps the headline figures.
            Value::Object(_)
                if prefix == "inferbench.server_metrics"
                    && (name == "counters" || name == "gauges") => {}
            Value::Object(o) => flatten_extras(&format!("{prefix}.{name}"), o, sc, out),
            Value::Number(_) => {
                let x = num(v).unwrap_or(f64::NAN);
                let x = if k == "count" { x } else { x * sc };
                out.insert(format!("{prefix}.{name}"), x);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_summary_flattening() {
        let s: Value = serde_json::json!({
            "completed": 10, "request_throughput": 2.0, "mean_tpot_ms": 20.0,
            "p99_ttft_ms": 1500.0, "date": "20260101-000000",
            "inferbench": {"e2e_norm_intvty": {"p90": 12.5}, "median_ttfo_ms": 40.0,
                "server_metrics": {"engine": "vllm", "kv_cache_usage_max": 0.75,
                    "counters": {"vllm:prompt_tokens_total": {"delta": 5.0, "rate": 1.0}},
                    "gauges": {"vllm:num_requests_running": {"mean": 2.0, "min": 1.0, "max": 3.0, "n": 2}}}}
        });
        let mut m = BTreeMap::new();
        summary_metrics(s.as_object().unwrap(), &mut m);
        assert_eq!(m["mean_tpot"], 0.02);
        assert_eq!(m["mean_intvty"], 50.0);
        assert_eq!(m["p99_ttft"], 1.5);
        assert_eq!(m["p90_e2e_norm_intvty"], 12.5);
        assert_eq!(m["median_ttfo"], 0.04);
        assert_eq!(m["completed"], 10.0);
        assert_eq!(m["inferbench.server_metrics.kv_cache_usage_max"], 0.75);
        assert!(
            !m.keys()
                .any(|k| k.contains("counters") || k.contains("gauges")),
            "{m:?}"
        );
    }
}
