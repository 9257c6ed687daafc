//! Reading result files into [`RunData`]: our artifact directories (DESIGN.md §3), vLLM
//! `--save-result` JSON, InferenceX `agg_*.json` / `agg_bmk.json`, AIPerf
//! `profile_export_aiperf.json`. No database access here.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use inferbench_telemetry::power;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::normalize;

/// Where a result came from (stored in `runs.source_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// An inferbench artifact directory (one point).
    Artifacts,
    /// vLLM `benchmark_serving --save-result` JSON (one point).
    VllmResult,
    /// InferenceX `agg_<RESULT_FILENAME>.json` (one point) or `agg_bmk.json` (array of points).
    InferenceX,
    /// AIPerf `profile_export_aiperf.json` summary export (one point).
    Aiperf,
    /// One workflow run of InferenceX's public database dump ([`crate::dump`]).
    InferenceXDump,
}

impl SourceKind {
    /// Name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Artifacts => "inferbench",
            SourceKind::VllmResult => "vllm",
            SourceKind::InferenceX => "inferencex",
            SourceKind::Aiperf => "aiperf",
            SourceKind::InferenceXDump => "inferencex-dump",
        }
    }
}

/// Identity values supplied by the user for imports that lack them (vLLM and AIPerf files name
/// no hardware, framework or parallelism), keyed like InferenceX's aggregate fields
/// (`hw`, `framework`, `precision`, `model_prefix`, `tp`, `ep`, `isl`, `osl`, `conc`, …).
/// They take precedence over the file's own values.
pub type Overrides = BTreeMap<String, String>;

/// The configuration a point was measured in: the natural key of `configs`
/// (see [`crate::schema::CONFIG_KEY`]). Text fields are canonical lowercase names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
#[allow(missing_docs)]
pub struct ConfigKey {
    pub model: String,
    pub model_prefix: String,
    pub hardware: String,
    pub framework: String,
    pub precision: String,
    pub spec_decoding: String,
    pub disagg: bool,
    pub is_multinode: bool,
    pub tp: i64,
    pub pp: i64,
    pub dcp: i64,
    pub pcp: i64,
    pub ep: i64,
    pub dp_attention: bool,
    pub prefill_tp: i64,
    pub prefill_ep: i64,
    pub prefill_dp_attention: bool,
    pub prefill_num_workers: i64,
    pub decode_tp: i64,
    pub decode_ep: i64,
    pub decode_dp_attention: bool,
    pub decode_num_workers: i64,
    pub num_prefill_gpu: i64,
    pub num_decode_gpu: i64,
    /// KV-cache offload mode (`off` unless the artifact says otherwise).
    pub kv_offload: String,
    /// `fixed_seq_len`, `agentic`, … (InferenceX scenario type).
    pub scenario: String,
    /// Input / output sequence length in tokens (0 when the workload has none, e.g. traces).
    pub isl: i64,
    pub osl: i64,
    pub image: String,
}

impl ConfigKey {
    /// GPUs the point used: `num_prefill_gpu + num_decode_gpu` when disaggregated or multinode
    /// (InferenceX rule), else `tp × pp × pcp` (reference/inferencex-producer.md §7.1).
    pub fn gpus(&self) -> i64 {
        if (self.disagg || self.is_multinode) && self.num_prefill_gpu + self.num_decode_gpu > 0 {
            self.num_prefill_gpu + self.num_decode_gpu
        } else {
            (self.tp.max(1)) * (self.pp.max(1)) * (self.pcp.max(1))
        }
    }
}

/// The per-request records of a point, as stored.
#[derive(Debug, Clone)]
pub struct RequestsBlob {
    /// zstd-compressed JSONL (the artifact's bytes when it was already `.zst`).
    pub jsonl_zst: Vec<u8>,
    /// SHA-256 hex of the uncompressed JSONL.
    pub sha256: String,
    /// Records, profile records, failed profile records.
    pub n_records: i64,
    pub n_profile: i64,
    pub n_failed: i64,
}

/// One measured point.
#[derive(Debug, Clone)]
pub struct PointData {
    /// Its configuration.
    pub config: ConfigKey,
    /// Concurrency (max in-flight requests; 0 = unlimited).
    pub conc: i64,
    /// UTC date `YYYY-MM-DD` of the measurement ("" when unknown).
    pub date: String,
    /// Flat metric map: InferenceX names and units (seconds, tok/s, tok/s/GPU, tok/s/user);
    /// extras namespaced `inferbench.*`.
    pub metrics: BTreeMap<String, f64>,
    /// Failure text for a point that produced no valid measurement.
    pub error: Option<String>,
    /// False when the result says it is not a valid submission (an AgentX replay's
    /// `submission_valid: false`); such points are stored and drawn, never on a frontier.
    pub valid: bool,
    /// Per-request records, when the artifact has them.
    pub requests: Option<RequestsBlob>,
    /// Power samples `(gpu, unix s, W)`.
    pub power: Vec<(String, f64, f64)>,
    /// Server metric samples `(name, labels JSON, unix s, value)`.
    pub server_metrics: Vec<(String, String, f64, f64)>,
}

/// One eval result: a task's accuracy for a configuration (reference/inferencex-app.md §3.5).
#[derive(Debug, Clone, PartialEq)]
pub struct EvalData {
    /// Configuration (ISL/OSL parsed from the source path's `_<n>k<m>k_`, × 1024).
    pub config: ConfigKey,
    /// Lowercase task name (`gsm8k`).
    pub task: String,
    /// Concurrency the eval ran at (0 when not given).
    pub conc: i64,
    /// Headline score and its standard error (fraction 0–1).
    pub score: Option<f64>,
    pub score_se: Option<f64>,
    /// Every numeric field (`em_strict`, `em_strict_se`, `em_flexible`, `n_eff`, …).
    pub metrics: BTreeMap<String, f64>,
}

/// One ingestable unit: written in one transaction.
#[derive(Debug, Clone)]
pub struct RunData {
    /// `sha256:<hex>` of the result bytes (natural key of `runs`).
    pub run_key: String,
    /// Format.
    pub kind: SourceKind,
    /// Path it was read from.
    pub source_path: String,
    /// Sweep this run belongs to (job.json `sweep_id`, else the parent directory of an artifact
    /// directory, else the file path).
    pub batch: String,
    /// UTC date `YYYY-MM-DD` ("" when unknown).
    pub date: String,
    /// Benchmark window, unix seconds.
    pub start_unix: Option<f64>,
    pub end_unix: Option<f64>,
    /// Provenance from `job.json` ("" when absent).
    pub inferbench_version: String,
    pub git_sha: String,
    pub engine_version: String,
    pub host: String,
    pub result_filename: String,
    /// `job.json` as compact JSON (`{}` when absent).
    pub job: String,
    /// The points.
    pub points: Vec<PointData>,
    /// Eval results (InferenceX `agg_eval_all.json` rows).
    pub evals: Vec<EvalData>,
    /// Files kept verbatim: (name, bytes).
    pub artifacts: Vec<(String, Vec<u8>)>,
    /// Names met while normalizing: unknown ones, and known ones stored under another key.
    pub names: Names,
    /// Non-fatal oddities worth reporting.
    pub warnings: Vec<String>,
}

/// What normalizing a run's identity names found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// Names no rule recognised `(kind, name)`: stored as they are (lowercased).
    pub unknown: BTreeSet<(String, String)>,
    /// Recognised names stored under a different key `(kind, name as given, key)`, e.g.
    /// `("model", "Llama-3.1-8B", "llama3.1-8b")`; a mere change of case is not listed, nor
    /// hardware (runner labels such as `h200-nv_3` → `h200` would list every runner).
    pub renamed: BTreeSet<(String, String, String)>,
}

/// Why a unit could not be read.
pub type ParseError = String;

/// Error text (suffix) of a JSON file that parses but is no known result format; such files met
/// while walking a directory are listed as ignored, not as failures.
pub const NOT_A_RESULT: &str = "not a recognised result file (expected an inferbench/vLLM result, InferenceX agg_*.json, or AIPerf profile_export_aiperf.json)";

/// SHA-256 hex of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// Discovery

/// A unit found under a path: an artifact directory or a result file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// Directory with `summary.json` and/or `agg_*.json`.
    Dir(PathBuf),
    /// A JSON result file.
    File(PathBuf),
    /// A point directory of a sweep that did not finish (`status.json`/`job.json`, no
    /// `summary.json`): reported, nothing to store.
    Unfinished(PathBuf),
    /// An eval set: `meta_env.json` and lm-eval result files ([`crate::evalset`]).
    Eval(PathBuf),
}

/// An inferbench artifact directory has a `summary.json`. (A directory holding only
/// `agg_*.json` files, like InferenceX's `bmk_*` artifacts, is walked and each file imported.)
fn is_artifact_dir(dir: &Path) -> bool {
    dir.join("summary.json").is_file()
}

fn agg_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("agg_") && n.ends_with(".json"))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// The subdirectory where an AgentX replay point keeps its AIPerf-shaped export.
pub const AIPERF_ARTIFACTS: &str = "aiperf_artifacts";

/// Finds the units under `path` in a deterministic (sorted) order. Files that are not JSON are
/// returned in `ignored` (they are reported, not silently skipped).
pub fn discover(
    path: &Path,
    units: &mut Vec<Unit>,
    ignored: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    if path.is_dir() {
        if is_artifact_dir(path) {
            units.push(Unit::Dir(path.to_path_buf()));
            // Nested point directories are their own units; a replay point's AIPerf export
            // (`aiperf_artifacts/`) is the same point again, not another one.
            let mut subs: Vec<PathBuf> = std::fs::read_dir(path)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir() && p.file_name() != Some(AIPERF_ARTIFACTS.as_ref()))
                .collect();
            subs.sort();
            for s in subs {
                discover(&s, units, ignored)?;
            }
            return Ok(());
        }
        if crate::evalset::is_eval_set(path) {
            // A sweep's eval that failed has its status and job files but no result.
            let unfinished =
                !crate::evalset::has_results(path) && path.join("status.json").is_file();
            units.push(if unfinished {
                Unit::Unfinished(path.to_path_buf())
            } else {
                Unit::Eval(path.to_path_buf())
            });
            return Ok(());
        }
        if path.join("status.json").is_file() && path.join("job.json").is_file() {
            units.push(Unit::Unfinished(path.to_path_buf()));
            return Ok(());
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            if e.is_dir() {
                discover(&e, units, ignored)?;
            } else if side_file_owner(&e).is_some() {
                // Read with its result file (parse_file), not a unit of its own.
            } else if e.extension().and_then(|x| x.to_str()) == Some("json") {
                units.push(Unit::File(e));
            } else {
                ignored.push(e);
            }
        }
        Ok(())
    } else if path.is_file() {
        units.push(Unit::File(path.to_path_buf()));
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{}: no such file or directory", path.display()),
        ))
    }
}

/// The side files of one point, by their fixed names in a point directory: the `/metrics`
/// snapshots, the GPU power samples, the power validation and the GPUs' energy-counter
/// snapshots. Beside a `bench --save-result` file `X.json` they are `X.<name>`
/// (`X.server_metrics.jsonl`, …).
pub const SIDE_FILES: &[&str] = &[
    "server_metrics.jsonl",
    "power.csv",
    "power_validation.json",
    "power_energy_start.csv",
    "power_energy_end.csv",
];

/// The JSON files of `dir` that may be results: not side files, not a sweep's `sweep.json`.
fn result_candidates(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    p.is_file()
                        && name.ends_with(".json")
                        && name != "sweep.json"
                        && !SIDE_FILES
                            .iter()
                            .any(|k| name == *k || name.ends_with(&format!(".{k}")))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The result file a side file outside a point directory belongs to: `X.<side>` beside `X.json`;
/// or a fixed-named `<side>` (written by `bench` before side files were named after the
/// result) when its directory holds exactly one other JSON file. `None` for any other file.
pub fn side_file_owner(p: &Path) -> Option<PathBuf> {
    let name = p.file_name()?.to_str()?;
    let dir = p.parent()?;
    if is_artifact_dir(dir) {
        return None;
    }
    for kind in SIDE_FILES {
        if name == *kind {
            let c = result_candidates(dir);
            return (c.len() == 1).then(|| c[0].clone());
        }
        if let Some(stem) = name.strip_suffix(&format!(".{kind}")) {
            let r = dir.join(format!("{stem}.json"));
            return r.is_file().then_some(r);
        }
    }
    None
}

/// The side files of the result file `result` that exist, as `(fixed name, path)`:
/// `X.<side>` beside `X.json`, else a fixed-named one that [`side_file_owner`] gives to it.
pub fn result_side_files(result: &Path) -> Vec<(&'static str, PathBuf)> {
    let (Some(dir), Some(stem)) = (result.parent(), result.file_stem().and_then(|s| s.to_str()))
    else {
        return Vec::new();
    };
    SIDE_FILES
        .iter()
        .filter_map(|kind| {
            let named = dir.join(format!("{stem}.{kind}"));
            if named.is_file() {
                return Some((*kind, named));
            }
            let fixed = dir.join(kind);
            (fixed.is_file() && side_file_owner(&fixed).as_deref() == Some(result))
                .then_some((*kind, fixed))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Value helpers

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

/// Looks identity fields up in several JSON objects, first match wins.
struct Lookup<'a> {
    overrides: &'a Overrides,
    maps: Vec<&'a Map<String, Value>>,
}

impl Lookup<'_> {
    fn get(&self, names: &[&str]) -> Option<Value> {
        for n in names {
            if let Some(v) = self.overrides.get(*n) {
                return Some(Value::String(v.clone()));
            }
        }
        for m in &self.maps {
            for n in names {
                if let Some(v) = m.get(*n) {
                    if !v.is_null() {
                        return Some(v.clone());
                    }
                }
            }
        }
        None
    }
    fn text(&self, names: &[&str]) -> String {
        match self.get(names) {
            Some(Value::String(s)) => s,
            Some(Value::Null) | None => String::new(),
            Some(v) => v.to_string(),
        }
    }
    fn int(&self, names: &[&str]) -> Option<i64> {
        self.get(names)
            .as_ref()
            .and_then(num)
            .map(|f| f.round() as i64)
    }
    fn flag(&self, names: &[&str]) -> bool {
        self.get(names).is_some_and(|v| normalize::truthy(&v))
    }
}

/// Keys of an InferenceX aggregate row that are identity, not metrics.
const IDENTITY_KEYS: &[&str] = &[
    "hw",
    "conc",
    "image",
    "model",
    "infmax_model_prefix",
    "model_prefix",
    "framework",
    "precision",
    "spec_decoding",
    "isl",
    "osl",
    "disagg",
    "is_multinode",
    "tp",
    "pp",
    "dcp_size",
    "pcp_size",
    "ep",
    "dp_attention",
    "prefill_tp",
    "prefill_ep",
    "prefill_dp_attention",
    "prefill_num_workers",
    "prefill_pp",
    "prefill_dcp",
    "prefill_pcp",
    "decode_tp",
    "decode_ep",
    "decode_dp_attention",
    "decode_num_workers",
    "decode_pp",
    "decode_dcp",
    "decode_pcp",
    "num_prefill_gpu",
    "num_decode_gpu",
    "recipe_fingerprint",
    "router",
    "kv_p2p_transfer",
    "scenario_type",
    "offload_mode",
    "kv_offloading",
    "users",
    "prefill_hw",
    "decode_hw",
    "power_metric_schema_version",
    "power_valid",
];

/// Builds the config key from identity sources, recording unknown names.
fn config_key(l: &Lookup<'_>, names: &mut Names) -> ConfigKey {
    let mut note = |kind: &str, raw: &str, n: &normalize::Norm| {
        if !n.known {
            names.unknown.insert((kind.to_string(), n.key.clone()));
        } else if kind != "hardware" && !raw.is_empty() && raw.trim().to_lowercase() != n.key {
            names
                .renamed
                .insert((kind.to_string(), raw.trim().to_string(), n.key.clone()));
        }
    };
    // `runner` last: a matrix row's runner label (`cluster:b200-dgxc`) when nothing else names
    // the hardware (agentic points without an aggregate).
    let hw_raw = l.text(&["hw", "hardware", "runner_type", "RUNNER_TYPE", "runner"]);
    let hw = normalize::hardware(if hw_raw.is_empty() {
        "unknown"
    } else {
        &hw_raw
    });
    note("hardware", &hw_raw, &hw);
    let prefix = l.text(&["infmax_model_prefix", "model_prefix", "MODEL_PREFIX"]);
    let model_raw = l.text(&["model", "model_id", "MODEL"]);
    let model = normalize::model(
        &prefix,
        if model_raw.is_empty() && prefix.is_empty() {
            "unknown"
        } else {
            &model_raw
        },
    );
    note(
        "model",
        if prefix.is_empty() {
            &model_raw
        } else {
            &prefix
        },
        &model,
    );
    let fw_raw = l.text(&["framework", "FRAMEWORK"]);
    let (fw, fw_disagg) = normalize::framework(if fw_raw.is_empty() {
        "unknown"
    } else {
        &fw_raw
    });
    note("framework", &fw_raw, &fw);
    let prec_raw = l.text(&["precision", "PRECISION"]);
    let prec = normalize::precision(if prec_raw.is_empty() {
        "unknown"
    } else {
        &prec_raw
    });
    note("precision", &prec_raw, &prec);

    let disagg = fw_disagg || l.flag(&["disagg", "DISAGG"]);
    let is_multinode = l.flag(&["is_multinode", "IS_MULTINODE"]);
    let one = |v: Option<i64>| v.unwrap_or(1);
    let tp = one(l.int(&["tp", "TP"]));
    let ep = one(l.int(&["ep", "EP_SIZE", "ep_size"]));
    let dpa = l.flag(&["dp_attention", "DP_ATTENTION", "dp_attn"]);
    let v2 = l.get(&["prefill_tp"]).is_some();
    let (ptp, pep, pdpa, pnw, dtp, dep, ddpa, dnw, npg, ndg);
    if v2 {
        ptp = one(l.int(&["prefill_tp"]));
        pep = one(l.int(&["prefill_ep"]));
        pdpa = l.flag(&["prefill_dp_attention"]);
        pnw = l.int(&["prefill_num_workers"]).unwrap_or(0);
        dtp = one(l.int(&["decode_tp"]));
        dep = one(l.int(&["decode_ep"]));
        ddpa = l.flag(&["decode_dp_attention"]);
        dnw = l.int(&["decode_num_workers"]).unwrap_or(0);
        npg = l.int(&["num_prefill_gpu"]).unwrap_or(ptp * pep);
        ndg = l.int(&["num_decode_gpu"]).unwrap_or(dtp * dep);
    } else {
        (ptp, pep, pdpa, pnw, dtp, dep, ddpa, dnw) = (tp, ep, dpa, 0, tp, ep, dpa, 0);
        npg = tp * ep;
        ndg = tp * ep;
    }
    let kv = l.text(&["offload_mode", "kv_offloading", "KV_OFFLOADING"]);
    let kv = match kv.trim().to_lowercase().as_str() {
        "" | "none" | "off" | "false" | "0" => "off".to_string(),
        "on" | "true" | "1" => "on".to_string(),
        other => other.to_string(),
    };
    let scenario = l
        .text(&["scenario_type", "scenario", "SCENARIO_TYPE"])
        .to_lowercase();
    ConfigKey {
        model: model.key,
        model_prefix: prefix.to_lowercase(),
        hardware: hw.key,
        framework: fw.key,
        precision: prec.key,
        spec_decoding: normalize::spec_method(&l.text(&[
            "spec_decoding",
            "SPEC_DECODING",
            "spec_method",
        ])),
        disagg,
        is_multinode,
        tp,
        pp: one(l.int(&["pp", "PP_SIZE", "pp_size"])),
        dcp: one(l.int(&["dcp_size", "DCP_SIZE", "dcp"])),
        pcp: one(l.int(&["pcp_size", "PCP_SIZE", "pcp"])),
        ep,
        dp_attention: dpa,
        prefill_tp: ptp,
        prefill_ep: pep,
        prefill_dp_attention: pdpa,
        prefill_num_workers: pnw,
        decode_tp: dtp,
        decode_ep: dep,
        decode_dp_attention: ddpa,
        decode_num_workers: dnw,
        num_prefill_gpu: npg,
        num_decode_gpu: ndg,
        kv_offload: kv,
        scenario: if scenario.is_empty() {
            "fixed_seq_len".into()
        } else {
            scenario
        },
        isl: l.int(&["isl", "ISL"]).unwrap_or(0),
        osl: l.int(&["osl", "OSL"]).unwrap_or(0),
        image: l.text(&["image", "IMAGE"]).replace('#', "/"),
    }
}

/// `YYYYMMDD-HHMMSS` (vLLM) or ISO `YYYY-MM-DD…` → `YYYY-MM-DD`.
fn date_from_text(s: &str) -> Option<String> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() >= 10 && b[4] == b'-' && b[7] == b'-' && b[..4].iter().all(u8::is_ascii_digit) {
        return s.get(..10).map(str::to_string);
    }
    if b.len() >= 8 && b[..8].iter().all(u8::is_ascii_digit) {
        return Some(format!("{}-{}-{}", &s[..4], &s[4..6], &s[6..8]));
    }
    None
}

/// Unix seconds → UTC `YYYY-MM-DD` (days-from-civil inverse, proleptic Gregorian).
pub fn date_from_unix(t: f64) -> String {
    let days = (t / 86_400.0).floor() as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Flattens a vLLM-shaped summary (ms latencies) into InferenceX names and units: `*_ms` keys →
/// seconds without the suffix; TPOT statistics also give `*_intvty` = 1000 / TPOT_ms; other
/// numeric top-level keys kept; the `inferbench` extras object flattened as `inferbench.<key>`
/// (its `*_ms` values also converted) and its E2E-normalized interactivity / TTFO statistics
/// promoted to the hot names.
fn summary_metrics(s: &Map<String, Value>, out: &mut BTreeMap<String, f64>) {
    for (k, v) in s {
        if k == "inferbench" {
            continue;
        }
        let Some(x) = num(v).filter(|_| !v.is_string() || k.ends_with("_ms")) else {
            continue;
        };
        if let Some(base) = k.strip_suffix("_ms") {
            out.insert(base.to_string(), x / 1000.0);
            if base.contains("tpot") && x > 0.0 {
                out.insert(base.replace("tpot", "intvty"), 1000.0 / x);
            }
        } else {
            out.insert(k.clone(), x);
        }
    }
    if let Some(Value::Object(ext)) = s.get("inferbench") {
        flatten_extras("inferbench", ext, 1.0, out);
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

/// Flattens numeric leaves as `prefix.key[.sub…]`; a key ending `_ms` loses the suffix and its
/// values (or its whole sub-object's, e.g. a latency distribution) are converted to seconds —
/// except counts.
fn flatten_extras(
    prefix: &str,
    m: &Map<String, Value>,
    scale: f64,
    out: &mut BTreeMap<String, f64>,
) {
    for (k, v) in m {
        let (name, sc) = match k.strip_suffix("_ms") {
            Some(base) => (base, 1e-3),
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

/// Numeric non-identity fields of an InferenceX aggregate row, kept under their names.
/// The numeric, non-identity fields of a flat result row, as metrics.
pub(crate) fn metrics_from(row: &Map<String, Value>) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    agg_metrics(row, &mut m);
    m
}

/// The config key of a flat row of InferenceX field names (`ov` wins over the row).
pub(crate) fn config_from(
    row: &Map<String, Value>,
    ov: &Overrides,
    names: &mut Names,
) -> ConfigKey {
    let l = Lookup {
        overrides: ov,
        maps: vec![row],
    };
    config_key(&l, names)
}

/// An eval row of InferenceX field names (`task`, the config's fields, the scores).
pub(crate) fn eval_from(row: &Map<String, Value>, ov: &Overrides, names: &mut Names) -> EvalData {
    eval_row(row, ov, names)
}

fn agg_metrics(row: &Map<String, Value>, out: &mut BTreeMap<String, f64>) {
    for (k, v) in row {
        if IDENTITY_KEYS.contains(&k.as_str()) || v.is_string() {
            continue;
        }
        if let Some(x) = num(v) {
            out.insert(k.clone(), x);
        }
    }
}

/// Fills per-GPU throughput from the totals when missing: ÷ gpus (single node; for
/// disaggregated rows output ÷ decode GPUs and input ÷ prefill GPUs, InferenceX §7.1).
fn fill_per_gpu(cfg: &ConfigKey, m: &mut BTreeMap<String, f64>) {
    let g = cfg.gpus() as f64;
    let disagg = cfg.disagg || cfg.is_multinode;
    let total = m.get("total_token_throughput").copied();
    let output = m.get("output_throughput").copied();
    if let Some(t) = total {
        m.entry("tput_per_gpu".into()).or_insert(t / g);
    }
    if let Some(o) = output {
        let d = if disagg && cfg.num_decode_gpu > 0 {
            cfg.num_decode_gpu as f64
        } else {
            g
        };
        m.entry("output_tput_per_gpu".into()).or_insert(o / d);
    }
    if let (Some(t), Some(o)) = (total, output) {
        let p = if disagg && cfg.num_prefill_gpu > 0 {
            cfg.num_prefill_gpu as f64
        } else {
            g
        };
        m.entry("input_tput_per_gpu".into()).or_insert((t - o) / p);
    }
}

/// A JSON file's bytes and value; errors name the file (and line:column for bad JSON).
pub(crate) fn read_json(path: &Path) -> Result<(Vec<u8>, Value), ParseError> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{}:{}:{}: invalid JSON: {e}",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    Ok((bytes, v))
}

pub(crate) fn base_run(kind: SourceKind, path: &Path, key_bytes: &[u8]) -> RunData {
    RunData {
        run_key: format!("sha256:{}", sha256_hex(key_bytes)),
        kind,
        source_path: path.display().to_string(),
        batch: path.display().to_string(),
        date: String::new(),
        start_unix: None,
        end_unix: None,
        inferbench_version: String::new(),
        git_sha: String::new(),
        engine_version: String::new(),
        host: String::new(),
        result_filename: String::new(),
        job: "{}".into(),
        points: Vec::new(),
        evals: Vec::new(),
        artifacts: Vec::new(),
        names: Names::default(),
        warnings: Vec::new(),
    }
}

pub(crate) fn empty_point(config: ConfigKey, conc: i64, date: String) -> PointData {
    PointData {
        config,
        conc,
        date,
        metrics: BTreeMap::new(),
        error: None,
        valid: true,
        requests: None,
        power: Vec::new(),
        server_metrics: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Result files

/// Reads one JSON result file of any supported format.
pub fn parse_file(path: &Path, ov: &Overrides) -> Result<RunData, ParseError> {
    let (bytes, v) = read_json(path)?;
    let p = path.display();
    match &v {
        Value::Array(rows) => {
            if rows.is_empty() {
                return Err(format!("{p}: empty array, no points"));
            }
            let mut run = base_run(SourceKind::InferenceX, path, &bytes);
            if rows.iter().all(|r| r.get("task").is_some()) {
                for (i, row) in rows.iter().enumerate() {
                    let Value::Object(o) = row else {
                        return Err(format!("{p}: element {i} is not an object"));
                    };
                    run.evals.push(eval_row(o, ov, &mut run.names));
                }
                return Ok(run);
            }
            let mut seen: BTreeMap<(ConfigKey, i64), usize> = BTreeMap::new();
            for (i, row) in rows.iter().enumerate() {
                let Value::Object(o) = row else {
                    return Err(format!("{p}: element {i} is not an object"));
                };
                if !o.contains_key("hw") {
                    return Err(format!(
                        "{p}: element {i} has no `hw`: not an InferenceX aggregate row"
                    ));
                }
                let pt = inferencex_point(o, ov, &mut run.names, &format!("{p}[{i}]"))?;
                // InferenceX keeps the last of duplicate rows (etl/benchmark-ingest.ts).
                let key = (pt.config.clone(), pt.conc);
                if let Some(&j) = seen.get(&key) {
                    run.warnings.push(format!(
                        "{p}[{i}]: duplicate of element {j}; the later one is kept"
                    ));
                    let old = run
                        .points
                        .iter()
                        .position(|q| (q.config.clone(), q.conc) == key);
                    if let Some(old) = old {
                        run.points.remove(old);
                    }
                }
                seen.insert(key, i);
                run.points.push(pt);
            }
            run.date = run
                .points
                .iter()
                .map(|p| p.date.clone())
                .max()
                .unwrap_or_default();
            Ok(run)
        }
        Value::Object(o) if o.contains_key("hw") && o.contains_key("conc") => {
            let mut run = base_run(SourceKind::InferenceX, path, &bytes);
            let pt = inferencex_point(o, ov, &mut run.names, &p.to_string())?;
            run.date = pt.date.clone();
            run.result_filename = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.strip_prefix("agg_"))
                .unwrap_or("")
                .to_string();
            run.points.push(pt);
            Ok(run)
        }
        Value::Object(o) if is_aiperf(o) => aiperf_run(path, &bytes, o, ov),
        Value::Object(o) if o.contains_key("completed") && o.contains_key("request_throughput") => {
            let mut run = base_run(SourceKind::VllmResult, path, &bytes);
            let mut pt = summary_point(o, None, None, ov, &mut run)?;
            run.artifacts.push(("summary.json".into(), bytes));
            // `bench --save-requests`: the records file the result names (beside it, or a path).
            let records = o
                .get("inferbench")
                .and_then(|x| x.get("requests_file"))
                .and_then(Value::as_str)
                .map(|f| path.parent().unwrap_or(Path::new(".")).join(f))
                .filter(|f| f.is_file());
            if let Some(f) = records {
                read_requests(&f, &mut pt)?;
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
        _ => Err(format!("{p}: {NOT_A_RESULT}")),
    }
}

fn inferencex_point(
    o: &Map<String, Value>,
    ov: &Overrides,
    names: &mut Names,
    at: &str,
) -> Result<PointData, ParseError> {
    let l = Lookup {
        overrides: ov,
        maps: vec![o],
    };
    let cfg = config_key(&l, names);
    let conc = l
        .int(&["conc", "users"])
        .ok_or_else(|| format!("{at}: no `conc`"))?;
    if cfg.isl == 0 && cfg.osl == 0 && cfg.scenario == "fixed_seq_len" {
        return Err(format!("{at}: no `isl`/`osl`"));
    }
    let mut m = BTreeMap::new();
    agg_metrics(o, &mut m);
    let date = l.text(&["date"]);
    let date = date_from_text(&date).unwrap_or_default();
    let mut pt = empty_point(cfg, conc, date);
    pt.metrics = m;
    Ok(pt)
}

/// `_<n>k<m>k_` in an eval source path → (n × 1024, m × 1024).
fn isl_osl_from_source(src: &str) -> Option<(i64, i64)> {
    for part in src.split(['_', '/', '.']) {
        let Some(rest) = part.strip_suffix('k') else {
            continue;
        };
        if let Some((a, b)) = rest.split_once('k') {
            if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
                return Some((a * 1024, b * 1024));
            }
        }
    }
    None
}

fn eval_row(o: &Map<String, Value>, ov: &Overrides, names: &mut Names) -> EvalData {
    let mut extra = Map::new();
    if let Some((isl, osl)) = o
        .get("source")
        .and_then(Value::as_str)
        .and_then(isl_osl_from_source)
    {
        extra.insert("isl".into(), Value::from(isl));
        extra.insert("osl".into(), Value::from(osl));
    }
    let l = Lookup {
        overrides: ov,
        maps: vec![o, &extra],
    };
    let mut config = config_key(&l, names);
    if config.isl == 0 {
        config.scenario = "eval".into();
    }
    let mut metrics = BTreeMap::new();
    for (k, v) in o {
        if IDENTITY_KEYS.contains(&k.as_str()) || v.is_string() || k == "timestamp" {
            continue;
        }
        if let Some(x) = num(v) {
            metrics.insert(k.clone(), x);
        }
    }
    EvalData {
        config,
        task: l.text(&["task"]).to_lowercase(),
        conc: l.int(&["conc"]).unwrap_or(0),
        score: metrics.get("score").or(metrics.get("em_strict")).copied(),
        score_se: metrics
            .get("score_se")
            .or(metrics.get("em_strict_se"))
            .copied(),
        metrics,
    }
}

fn is_aiperf(o: &Map<String, Value>) -> bool {
    [
        "request_throughput",
        "time_to_first_token",
        "request_latency",
    ]
    .iter()
    .any(|k| matches!(o.get(*k), Some(Value::Object(m)) if m.contains_key("avg")))
}

/// Seconds per unit for AIPerf metric units.
fn unit_scale(unit: &str) -> f64 {
    match unit.trim() {
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        _ => 1.0,
    }
}

fn aiperf_run(
    path: &Path,
    bytes: &[u8],
    o: &Map<String, Value>,
    ov: &Overrides,
) -> Result<RunData, ParseError> {
    let mut run = base_run(SourceKind::Aiperf, path, bytes);
    let stat = |k: &str, s: &str| -> Option<f64> {
        let m = o.get(k)?.as_object()?;
        let scale = m
            .get("unit")
            .and_then(Value::as_str)
            .map_or(1.0, unit_scale);
        num(m.get(s)?).map(|x| x * scale)
    };
    let mut m = BTreeMap::new();
    // Latencies → seconds with InferenceX names. AIPerf's "inter_token_latency" is
    // (latency − TTFT)/(OSL − 1), i.e. TPOT (reference/peers.md §4).
    for (src, dst) in [
        ("time_to_first_token", "ttft"),
        ("inter_token_latency", "tpot"),
        ("request_latency", "e2el"),
        ("inter_chunk_latency", "itl"),
        ("time_to_first_output_token", "ttfo"),
    ] {
        for (s, pre) in [
            ("avg", "mean_"),
            ("p50", "median_"),
            ("p90", "p90_"),
            ("p99", "p99_"),
            ("std", "std_"),
        ] {
            if let Some(x) = stat(src, s) {
                m.insert(format!("{pre}{dst}"), x);
                if dst == "tpot" && x > 0.0 {
                    m.insert(format!("{pre}intvty"), 1.0 / x);
                }
            }
        }
    }
    for (src, dst) in [
        ("request_throughput", "request_throughput"),
        ("output_token_throughput", "output_throughput"),
        ("total_token_throughput", "total_token_throughput"),
        ("benchmark_duration", "duration"),
        ("completed_request_count", "completed"),
        ("request_count", "num_prompts"),
        ("error_request_count", "failed"),
        ("effective_concurrency", "inferbench.effective_concurrency"),
    ] {
        if let Some(x) = stat(src, "avg") {
            m.insert(dst.to_string(), x);
        }
    }
    if !m.contains_key("total_token_throughput") {
        if let (Some(i), Some(out)) = (
            stat("input_token_throughput", "avg"),
            m.get("output_throughput"),
        ) {
            m.insert("total_token_throughput".into(), i + out);
        }
    }
    let mut ident = Map::new();
    if let Some(x) = stat("input_sequence_length", "avg") {
        ident.insert("isl".into(), Value::from(x.round() as i64));
    }
    if let Some(x) = stat("output_sequence_length", "avg") {
        ident.insert("osl".into(), Value::from(x.round() as i64));
    }
    let conc = o
        .get("input_config")
        .and_then(|c| c.pointer("/loadgen/concurrency"))
        .and_then(num)
        .or_else(|| stat("effective_concurrency", "avg").map(f64::round));
    if let Some(c) = conc {
        ident.insert("conc".into(), Value::from(c as i64));
    }
    if let Some(Value::Object(md)) = o.get("input_config").and_then(|c| c.get("endpoint")) {
        if let Some(models) = md.get("model_names").and_then(Value::as_array) {
            if let Some(first) = models.first() {
                ident.insert("model".into(), first.clone());
            }
        }
    }
    let l = Lookup {
        overrides: ov,
        maps: vec![&ident, o],
    };
    let cfg = config_key(&l, &mut run.names);
    let conc = l.int(&["conc"]).unwrap_or_else(|| {
        run.warnings.push(format!(
            "{}: no concurrency found; stored as conc 0",
            path.display()
        ));
        0
    });
    let mut m2 = m;
    fill_per_gpu(&cfg, &mut m2);
    let date = o
        .get("start_time")
        .and_then(Value::as_str)
        .and_then(date_from_text)
        .unwrap_or_default();
    run.date = date.clone();
    let mut pt = empty_point(cfg, conc, date);
    pt.metrics = m2;
    run.points.push(pt);
    run.artifacts
        .push(("profile_export_aiperf.json".into(), bytes.to_vec()));
    Ok(run)
}

/// Reads a request-records file (`.zst`-compressed when its name ends so) into `pt`: the blob,
/// and the E2E-normalized interactivity it gives.
fn read_requests(path: &Path, pt: &mut PointData) -> Result<(), String> {
    let at = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{at}: {e}"))?;
    let (blob, e2e) = if at.ends_with(".zst") {
        let dec = zstd::stream::read::Decoder::new(&bytes[..]).map_err(|e| format!("{at}: {e}"))?;
        let (mut blob, e2e) = scan_requests(dec, &at, true)?;
        blob.jsonl_zst = bytes;
        (blob, e2e)
    } else {
        scan_requests(&bytes[..], &at, false)?
    };
    add_e2e_norm(&mut pt.metrics, e2e);
    pt.requests = Some(blob);
    Ok(())
}

/// A point from a vLLM-shaped summary, with optional InferenceX aggregate and job.json objects.
fn summary_point(
    s: &Map<String, Value>,
    agg: Option<&Map<String, Value>>,
    job: Option<&Map<String, Value>>,
    ov: &Overrides,
    run: &mut RunData,
) -> Result<PointData, ParseError> {
    let mut maps: Vec<&Map<String, Value>> = Vec::new();
    if let Some(a) = agg {
        maps.push(a);
    }
    // The runner's job.json keeps the matrix row with InferenceX's dashed keys
    // (`model-prefix`, `scenario-type`): read them under the underscore names.
    let job_parts: Vec<Map<String, Value>> = job
        .map(job_identity_maps)
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.replace('-', "_"), v.clone()))
                .collect()
        })
        .collect();
    maps.extend(job_parts.iter());
    // The summary's own metadata (`scenario_type` of an AgentX replay).
    let meta = s.get("metadata").and_then(Value::as_object);
    let agentic = maps
        .iter()
        .copied()
        .chain(meta)
        .any(|m| m.get("scenario_type").and_then(Value::as_str) == Some("agentic-coding"));
    // Derived identity from the summary itself: model id, mean ISL/OSL (not for agentic
    // points, whose lengths vary by design), concurrency.
    let mut derived = Map::new();
    if let Some(v) = s.get("model_id") {
        derived.insert("model".into(), v.clone());
    }
    if agentic {
        derived.insert("scenario_type".into(), Value::from("agentic-coding"));
    }
    let completed = s.get("completed").and_then(num).unwrap_or(0.0);
    if completed > 0.0 && !agentic {
        for (src, dst) in [
            ("total_input_tokens", "isl"),
            ("total_output_tokens", "osl"),
        ] {
            if let Some(t) = s.get(src).and_then(num) {
                derived.insert(dst.into(), Value::from((t / completed).round() as i64));
            }
        }
    }
    if let Some(c) = s.get("max_concurrency").and_then(num) {
        derived.insert("conc".into(), Value::from(c as i64));
    }
    maps.push(&derived);
    let l = Lookup {
        overrides: ov,
        maps,
    };
    let cfg = config_key(&l, &mut run.names);
    let conc = l.int(&["conc", "max_concurrency", "CONC"]).unwrap_or(0);
    let mut m = BTreeMap::new();
    summary_metrics(s, &mut m);
    if let Some(a) = agg {
        agg_metrics(a, &mut m); // the aggregate's per-GPU figures win (InferenceX rules)
    }
    fill_per_gpu(&cfg, &mut m);
    let start = s.get("benchmark_start_time_unix").and_then(num);
    let end = s.get("benchmark_end_time_unix").and_then(num);
    run.start_unix = start;
    run.end_unix = end;
    let date = s
        .get("date")
        .and_then(Value::as_str)
        .and_then(date_from_text)
        .or_else(|| start.map(date_from_unix))
        .unwrap_or_default();
    run.date = date.clone();
    let mut pt = empty_point(cfg, conc, date);
    if completed == 0.0 {
        pt.error = Some("no successful request".into());
    }
    pt.metrics = m;
    // Not a complete result: an AgentX replay's `submission_valid: false` (at the top in our
    // summaries, or in `metadata`), or a run cut short (Ctrl-C, an unreachable server, an
    // abort: our `inferbench.interrupted` / `stop_reason`).
    let not_valid = |v: &Value| matches!(v, Value::Bool(false)) || v.as_str() == Some("false");
    let agentic_invalid = agentic
        && s.get("submission_valid")
            .or_else(|| meta.and_then(|m| m.get("submission_valid")))
            .is_some_and(not_valid);
    let x = s.get("inferbench").and_then(Value::as_object);
    let cut_short = x.is_some_and(|x| {
        x.get("interrupted").and_then(Value::as_bool) == Some(true)
            || x.get("stop_reason")
                .and_then(Value::as_str)
                .is_some_and(|r| r != "completed")
    });
    // Or timings the producer found not valid (a server that fell behind its schedule).
    let timing_invalid = x.is_some_and(|x| x.get("invalid_reason").is_some_and(|r| !r.is_null()));
    pt.valid = !(agentic_invalid || cut_short || timing_invalid);
    Ok(pt)
}

/// job.json may nest the identity (`job`, `spec`, `identity`, `env`); all levels are searched,
/// outermost first.
fn job_identity_maps(job: &Map<String, Value>) -> Vec<&Map<String, Value>> {
    const NESTS: [&str; 7] = [
        "identity",
        "provenance",
        "job",
        "spec",
        "env",
        "matrix_row",
        "row",
    ];
    // Breadth first, two levels: the runner's job.json keeps the matrix row at `job.row`.
    let mut v = vec![job];
    let mut i = 0;
    while i < v.len() && i < 16 {
        let m = v[i];
        for k in NESTS {
            if let Some(Value::Object(o)) = m.get(k) {
                if !v.iter().any(|x| std::ptr::eq(*x, o)) {
                    v.push(o);
                }
            }
        }
        i += 1;
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Artifact directories

/// Reads one artifact directory (DESIGN.md §3). `summary.json` or an `agg_*.json` is required;
/// `requests.jsonl.zst` (or `requests.jsonl`), `job.json`, `power.csv`, `server_metrics.jsonl` and
/// `server.log` are optional. Every regular file is kept in `artifacts` (the requests file goes to
/// the `requests` table instead).
pub fn parse_dir(dir: &Path, ov: &Overrides) -> Result<RunData, ParseError> {
    let d = dir.display();
    let summary = dir.join("summary.json");
    let aggs = agg_files(dir).map_err(|e| format!("{d}: {e}"))?;
    let mut key_bytes = Vec::new();
    let summary_v = if summary.is_file() {
        let (b, v) = read_json(&summary)?;
        key_bytes.extend_from_slice(&b);
        Some(v)
    } else {
        None
    };
    let agg_v = match aggs.first() {
        Some(a) => {
            let (b, v) = read_json(a)?;
            key_bytes.extend_from_slice(&b);
            Some(v)
        }
        None => None,
    };
    let job_path = dir.join("job.json");
    let job_v = if job_path.is_file() {
        Some(read_json(&job_path)?.1)
    } else {
        None
    };
    let mut run = base_run(SourceKind::Artifacts, dir, &key_bytes);
    run.batch = dir
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if aggs.len() > 1 {
        run.warnings.push(format!(
            "{d}: {} agg_*.json files; identity taken from {}",
            aggs.len(),
            aggs[0].display()
        ));
    }
    let as_obj =
        |v: &Option<Value>, name: &str| -> Result<Option<Map<String, Value>>, ParseError> {
            match v {
                None => Ok(None),
                Some(Value::Object(o)) => Ok(Some(o.clone())),
                Some(_) => Err(format!("{d}/{name}: not a JSON object")),
            }
        };
    let s = as_obj(&summary_v, "summary.json")?;
    let a = as_obj(&agg_v, "agg_*.json")?;
    let j = as_obj(&job_v, "job.json")?;
    if a.is_some() {
        run.result_filename = aggs[0]
            .file_stem()
            .and_then(|x| x.to_str())
            .and_then(|x| x.strip_prefix("agg_"))
            .unwrap_or("")
            .to_string();
    }
    let mut pt = match (&s, &a) {
        (Some(s), _) => summary_point(s, a.as_ref(), j.as_ref(), ov, &mut run)?,
        (None, Some(a)) => {
            let mut p = inferencex_point(a, ov, &mut run.names, &format!("{d}/agg"))?;
            fill_per_gpu(&p.config.clone(), &mut p.metrics);
            run.date = p.date.clone();
            p
        }
        (None, None) => return Err(format!("{d}: neither summary.json nor agg_*.json")),
    };
    if let Some(j) = &j {
        let l = Lookup {
            overrides: &Overrides::new(),
            maps: job_identity_maps(j),
        };
        run.inferbench_version = l.text(&["inferbench_version", "version"]);
        run.git_sha = l.text(&["git_sha", "inferbench_git_sha"]);
        run.engine_version = l.text(&["engine_version"]);
        run.host = l.text(&["host", "hostname"]);
        if run.result_filename.is_empty() {
            run.result_filename = l.text(&["result_filename", "RESULT_FILENAME"]);
        }
        run.job = Value::Object(j.clone()).to_string();
        let sweep = l.text(&["sweep_id", "batch", "sweep"]);
        if !sweep.is_empty() {
            run.batch = sweep;
        }
        if run.start_unix.is_none() {
            run.start_unix = l
                .get(&["start_unix", "started_at_unix", "start_time_unix"])
                .as_ref()
                .and_then(num);
            run.end_unix = l
                .get(&["end_unix", "ended_at_unix", "end_time_unix"])
                .as_ref()
                .and_then(num);
        }
        if run.date.is_empty() {
            run.date = run.start_unix.map(date_from_unix).unwrap_or_default();
            pt.date = run.date.clone();
        }
    }

    // Requests.
    let zst = dir.join("requests.jsonl.zst");
    let plain = dir.join("requests.jsonl");
    if zst.is_file() {
        read_requests(&zst, &mut pt)?;
    } else if plain.is_file() {
        read_requests(&plain, &mut pt)?;
    }

    // Power and server metrics.
    let power = dir.join("power.csv");
    if power.is_file() {
        read_power(&power, &mut run, &mut pt)?;
    }
    let sm = dir.join("server_metrics.jsonl");
    if sm.is_file() {
        read_server_metrics(&sm, &mut run, &mut pt)?;
    }

    // Keep every regular file (the requests went to their table).
    run.artifacts
        .extend(dir_files(dir, &["requests.jsonl.zst", "requests.jsonl"])?);
    run.points.push(pt);
    Ok(run)
}

/// `(name, bytes)` of every regular file directly in `dir` but those named in `skip`, sorted
/// by name: what a run keeps as its artifacts. Errors name the file that could not be read.
pub(crate) fn dir_files(dir: &Path, skip: &[&str]) -> Result<Vec<(String, Vec<u8>)>, ParseError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if skip.contains(&name.as_str()) {
            continue;
        }
        let b = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        out.push((name, b));
    }
    Ok(out)
}

/// Reads a point's `power.csv` into its samples and, with the run's window known, its
/// measured power ([`add_measured_power`]); an unparseable file is a warning (kept as a file).
fn read_power(power: &Path, run: &mut RunData, pt: &mut PointData) -> Result<(), ParseError> {
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
fn read_server_metrics(sm: &Path, run: &mut RunData, pt: &mut PointData) -> Result<(), ParseError> {
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

/// The subset of a [`inferbench_core::RequestRecord`] the store reads; unknown fields skipped.
#[derive(serde::Deserialize)]
struct LightRecord {
    #[serde(default)]
    phase: inferbench_core::Phase,
    success: bool,
    sent_ns: u64,
    #[serde(default)]
    last_token_ns: Option<u64>,
    #[serde(default)]
    completion_tokens: u32,
}

/// Validates the JSONL records (every non-empty line must parse), counts them and collects
/// `E2EL_i / OSL_i` (s/token) of successful profile requests. Returns the blob to store
/// (`zst` = the original compressed bytes, else compressed here at level 3).
fn scan_requests<R: Read>(
    r: R,
    at: &str,
    compressed: bool,
) -> Result<(RequestsBlob, Vec<f64>), ParseError> {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, r);
    let mut hasher = Sha256::new();
    let mut raw = if compressed { None } else { Some(Vec::new()) };
    let (mut n, mut n_profile, mut n_failed) = (0i64, 0i64, 0i64);
    let mut e2e = Vec::new();
    let mut line = Vec::new();
    let mut lineno = 0usize;
    loop {
        line.clear();
        let got = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{at}: line {}: {e}", lineno + 1))?;
        if got == 0 {
            break;
        }
        lineno += 1;
        hasher.update(&line);
        if let Some(r) = raw.as_mut() {
            r.extend_from_slice(&line);
        }
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        let rec: LightRecord = serde_json::from_slice(t)
            .map_err(|e| format!("{at}:{lineno}: invalid request record: {e}"))?;
        n += 1;
        if rec.phase == inferbench_core::Phase::Profile {
            n_profile += 1;
            if !rec.success {
                n_failed += 1;
            } else if let Some(last) = rec.last_token_ns {
                if rec.completion_tokens > 0 {
                    let e2el_s = last.saturating_sub(rec.sent_ns) as f64 / 1e9;
                    e2e.push(e2el_s / f64::from(rec.completion_tokens));
                }
            }
        }
    }
    let jsonl_zst = match raw {
        Some(r) => zstd::encode_all(&r[..], 3).map_err(|e| format!("{at}: {e}"))?,
        None => Vec::new(),
    };
    let sha: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((
        RequestsBlob {
            jsonl_zst,
            sha256: sha,
            n_records: n,
            n_profile,
            n_failed,
        },
        e2e,
    ))
}

/// Adds `p75_e2e_norm_intvty` / `p90_e2e_norm_intvty` computed from the records when the summary
/// lacks them: 1 / percentile_q(E2EL_i / OSL_i) (DESIGN.md §4).
fn add_e2e_norm(m: &mut BTreeMap<String, f64>, mut ratios: Vec<f64>) {
    if ratios.is_empty() {
        return;
    }
    ratios.sort_by(f64::total_cmp);
    for q in [75.0, 90.0] {
        let key = format!("p{q}_e2e_norm_intvty");
        if let Some(p) = inferbench_core::analytics::percentile_sorted(&ratios, q) {
            if p > 0.0 {
                m.entry(key).or_insert(1.0 / p);
            }
        }
    }
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
    fn a_replay_points_aiperf_export_is_not_another_point() {
        let d = tempfile::tempdir().unwrap();
        let point = d.path().join("p1");
        std::fs::create_dir_all(point.join(AIPERF_ARTIFACTS)).unwrap();
        std::fs::write(point.join("summary.json"), "{}").unwrap();
        std::fs::write(
            point
                .join(AIPERF_ARTIFACTS)
                .join("profile_export_aiperf.json"),
            "{}",
        )
        .unwrap();
        let nested = point.join("p2");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(nested.join("summary.json"), "{}").unwrap();
        let (mut units, mut ignored) = (Vec::new(), Vec::new());
        discover(d.path(), &mut units, &mut ignored).unwrap();
        let dirs: Vec<PathBuf> = units
            .iter()
            .map(|u| match u {
                Unit::Dir(p) | Unit::Unfinished(p) | Unit::File(p) | Unit::Eval(p) => p.clone(),
            })
            .collect();
        assert_eq!(dirs, vec![point, nested]);
    }

    #[test]
    fn dates() {
        assert_eq!(date_from_unix(0.0), "1970-01-01");
        assert_eq!(date_from_unix(1_767_225_600.0), "2026-01-01");
        assert_eq!(date_from_unix(1_709_208_000.0), "2024-02-29");
        assert_eq!(
            date_from_text("20250611-093000").as_deref(),
            Some("2025-06-11")
        );
        assert_eq!(
            date_from_text("2026-03-01T10:00:00").as_deref(),
            Some("2026-03-01")
        );
        assert_eq!(date_from_text("2026-03-0\u{e9}"), None); // no panic inside a character
        assert_eq!(date_from_text("garbage"), None);
    }

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
