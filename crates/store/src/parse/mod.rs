//! Reading result files into [`RunData`] (no database access here): the data types every
//! format produces, discovery of the units under a path ([`discover`]), the shared identity
//! and lookup helpers (InferenceX field names, the normalizers of [`crate::normalize`]), and
//! the one importer interface, [`Importer`]. Each import format is its own module:
//!
//! - `artifacts`: our artifact directories (DESIGN.md §3), a directory with `summary.json`
//!   ([`parse_dir`]); `ours`: our own `summary.json` (marked by `inferbench.schema_version`),
//!   read typed as core's `RunSummary`, wherever it is met;
//! - `inferencex`: InferenceX `agg_*.json`, `agg_bmk.json` and `agg_eval_all.json` (a JSON
//!   array, or an object with `hw` and `conc`);
//! - `aiperf`: AIPerf `profile_export_aiperf.json` (metric objects with an `avg`);
//! - `vllm`: vLLM's and `inferbench bench`'s `--save-result` JSON (`completed` and
//!   `request_throughput`);
//! - [`crate::dump`]: InferenceX's public database dump, many runs from one directory or
//!   `*.dump[.zst]` file (`Store::ingest_inferencex_dump`); [`crate::evalset`]: eval sets.
//!
//! A point's side files are read by `telemetry` (`power.csv`, `server_metrics.jsonl`) and
//! `requests` (the request records). A result file goes to the first entry of [`IMPORTERS`]
//! that recognises its JSON ([`parse_file`]): **a new import format is one module here
//! implementing [`Importer`] and one entry in [`IMPORTERS`].**

mod aiperf;
mod artifacts;
mod inferencex;
mod ours;
mod requests;
mod telemetry;
mod vllm;

pub use vllm::INTERRUPTED_BEFORE_ANY;

use inferbench_core::point::DP_ATTENTION;
use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

use inferbench_core::matrix::{Conc, MatrixRow};
use inferbench_core::summary::ThroughputGpus;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::normalize;

pub(crate) use artifacts::apply_eval_job;
pub use artifacts::parse_dir;
pub use telemetry::{parse_power_csv, parse_server_metrics};

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

pub use crate::schema::ConfigKey;

impl ConfigKey {
    /// GPUs the point used: `num_prefill_gpu + num_decode_gpu` when disaggregated or multinode
    /// (InferenceX rule), else `tp × pp × pcp` (reference/inferencex-producer.md §7.1); the
    /// total of [`ConfigKey::throughput_gpus`].
    pub fn gpus(&self) -> i64 {
        i64::try_from(self.throughput_gpus().all()).unwrap_or(i64::MAX)
    }

    /// The point's GPUs as core's per-GPU throughput rule divides by them
    /// ([`ThroughputGpus`]): disaggregated over `num_prefill_gpu` and `num_decode_gpu` when
    /// the point is disaggregated or multinode and counts any GPU (a negative count is none),
    /// else one aggregated server on `tp × pp × pcp` GPUs (core's [`Parallelism::gpus`]; sizes
    /// below 1, i.e. absent, count as 1).
    ///
    /// [`Parallelism::gpus`]: inferbench_core::summary::Parallelism::gpus
    pub fn throughput_gpus(&self) -> ThroughputGpus {
        let count = |v: i64| u64::try_from(v).unwrap_or(0);
        let split = (self.disagg || self.is_multinode)
            .then(|| {
                ThroughputGpus::disaggregated(
                    count(self.num_prefill_gpu),
                    count(self.num_decode_gpu),
                )
            })
            .flatten();
        split.unwrap_or_else(|| {
            let size = |v: i64| u32::try_from(v.max(1)).unwrap_or(u32::MAX);
            let p = inferbench_core::summary::Parallelism {
                tp: size(self.tp),
                pp: size(self.pp),
                dcp_size: 1,
                pcp_size: size(self.pcp),
                ep: 1,
            };
            ThroughputGpus::aggregated(NonZeroU64::new(p.gpus()).unwrap_or(NonZeroU64::MIN))
        })
    }
}

/// The per-request records of a point, as stored.
#[derive(Debug, Clone)]
pub struct RequestsBlob {
    /// zstd-compressed JSONL (the artifact's bytes when it was already `.zst`); empty when
    /// [`RequestsBlob::source`] is set.
    pub jsonl_zst: Vec<u8>,
    /// A plain JSONL file compressed as it is written instead of held in memory (issue 39:
    /// storing a large `--save-requests` file took several times its size in memory); `None`
    /// when the bytes are [`RequestsBlob::jsonl_zst`].
    pub source: Option<RequestsSource>,
    /// SHA-256 hex of the uncompressed JSONL.
    pub sha256: String,
    /// Records in all (warmups included).
    pub n_records: i64,
    /// Records of the profile phase.
    pub n_profile: i64,
    /// Failed records of the profile phase.
    pub n_failed: i64,
    /// The records file read (`None` when not read from a file): a file a result used is
    /// not listed among an ingest's ignored non-result files.
    pub file: Option<PathBuf>,
}

/// A plain request-records file the store compresses while writing its blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestsSource {
    /// The JSONL file, as read when it was parsed.
    pub path: PathBuf,
    /// Bytes of its zstd compression (level 3) as counted when it was parsed: the blob's
    /// length, reserved before it is written.
    pub zst_len: u64,
}

impl RequestsBlob {
    /// Writes the compressed records into `out`: [`RequestsBlob::jsonl_zst`], or the source
    /// file compressed line by line (memory independent of its size).
    ///
    /// # Errors
    /// The source file cannot be read, has changed since it was parsed, or `out` fails.
    pub fn write_zst(&self, out: &mut impl std::io::Write) -> Result<(), String> {
        match &self.source {
            Some(src) => requests::compress_into(src, &self.sha256, out),
            None => out.write_all(&self.jsonl_zst).map_err(|e| e.to_string()),
        }
    }

    /// Bytes of the compressed records ([`RequestsBlob::write_zst`] writes exactly as many).
    pub fn zst_len(&self) -> u64 {
        self.source
            .as_ref()
            .map_or(self.jsonl_zst.len() as u64, |s| s.zst_len)
    }
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
    /// Its request-records file was named but incomplete: unreadable whole, or holding fewer
    /// profile records than the summary counts (issue 39, fresh tester); the point is failed
    /// (`error` says why) and the ingest warns.
    pub records_incomplete: bool,
    /// False when the result says it is not a valid submission (an AgentX replay's
    /// `submission_valid: false`); such points are stored and drawn, never on a frontier.
    pub valid: bool,
    /// Why the point is not valid (`valid` false): the causes joined with `; ` (`cut short:
    /// interrupted`, an AgentX replay's `submission_invalid_reasons`, the producer's own
    /// `inferbench.invalid_reason`); `None` for a valid point.
    pub invalid_reason: Option<String>,
    /// Per-request records, when the artifact has them.
    pub requests: Option<RequestsBlob>,
    /// Power samples `(gpu, unix s, W)`.
    pub power: Vec<(String, f64, f64)>,
    /// Server metric samples `(name, labels JSON, unix s, value)`.
    pub server_metrics: Vec<(String, String, f64, f64)>,
    /// The server's settings and their fingerprint (`inferbench_core::fingerprint`): part of
    /// the point's group; `None` when the source does not say (old files, foreign imports).
    pub server: Option<inferbench_core::fingerprint::ServerFingerprint>,
    /// GPU-seconds the point cost, as our runner recorded it (`job.json`'s
    /// `status.gpu_seconds`, issue 43): the row's GPUs × its wall time plus its share of the
    /// engine's launch and stop, modelled time for sim rows. `None` for imports, points stored
    /// before it was recorded, and standalone `bench`/`replay` results (no engine of ours).
    pub gpu_seconds: Option<f64>,
    /// The point ran under `sweep --adaptive`'s early-stop rule (our summary's
    /// `inferbench.adaptive`, issue 43); false for fixed-protocol points and imports.
    pub adaptive: bool,
    /// Profile prompts an adaptive point sent (`inferbench.prompts_used`); `None` when not
    /// adaptive or the summary does not say.
    pub prompts_used: Option<i64>,
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
    /// Headline score, fraction 0–1.
    pub score: Option<f64>,
    /// The score's standard error, fraction 0–1.
    pub score_se: Option<f64>,
    /// Every numeric field (`em_strict`, `em_strict_se`, `em_flexible`, `n_eff`, …).
    pub metrics: BTreeMap<String, f64>,
    /// Its scored questions, from an eval set's samples file (empty for aggregates, dumps
    /// and eval sets without one).
    pub samples: Vec<EvalSample>,
}

/// One scored question of an eval (a line of `samples_<task>*.jsonl`), texts bounded
/// ([`crate::evalset::MAX_TEXT_BYTES`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EvalSample {
    /// Index in the task's test split.
    pub doc_id: i64,
    /// The question asked (without the few-shot examples where they could be told apart).
    pub question: String,
    /// The model's response ("" when the request failed).
    pub response: String,
    /// The answer extracted from the response (strict filter).
    pub extracted: String,
    /// The target answer.
    pub target: String,
    /// Whether the extracted answer matched the target; `None` when the file did not say.
    pub correct: Option<bool>,
    /// Why the request failed ("" when it did not).
    pub error: String,
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
    /// directory, else a result file's directory, canonical: the batch `bench --db` gives).
    pub batch: String,
    /// UTC date `YYYY-MM-DD` ("" when unknown).
    pub date: String,
    /// Start of the benchmark window, unix seconds.
    pub start_unix: Option<f64>,
    /// End of the benchmark window, unix seconds.
    pub end_unix: Option<f64>,
    /// The producing inferbench's version, from `job.json` ("" when absent).
    pub inferbench_version: String,
    /// The producing inferbench's git commit, from `job.json` ("" when absent).
    pub git_sha: String,
    /// The serving engine's version, from `job.json` ("" when absent).
    pub engine_version: String,
    /// The host that ran the job, from `job.json` ("" when absent).
    pub host: String,
    /// InferenceX's `RESULT_FILENAME` (the `agg_*.json` stem, else `job.json`'s; "" when
    /// absent).
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
// Importers

/// One import format read from a single JSON file: how [`parse_file`] recognises it and reads
/// it. Each format is its own module of `parse`; [`IMPORTERS`] lists them.
pub trait Importer: Sync {
    /// The format's name (as [`SourceKind::as_str`] stores it).
    fn name(&self) -> &'static str;
    /// Whether the file's JSON `v` is this format.
    fn recognises(&self, v: &Value) -> bool;
    /// Reads the file at `path` (`bytes` as read, `v` their JSON) into one run; `ov` wins over
    /// the file's own identity values.
    fn parse(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        v: &Value,
        ov: &Overrides,
    ) -> Result<RunData, ParseError>;
}

/// The file formats, asked in this order; the first that recognises a file reads it. A new
/// import format is one module and one entry here.
pub const IMPORTERS: &[&dyn Importer] = &[
    &inferencex::AggFile,
    &aiperf::ProfileExport,
    &vllm::SaveResult,
];

/// Reads one JSON result file of any supported format.
pub fn parse_file(path: &Path, ov: &Overrides) -> Result<RunData, ParseError> {
    let (bytes, v) = read_json(path)?;
    let mut run = match IMPORTERS.iter().find(|i| i.recognises(&v)) {
        Some(i) => i.parse(path, bytes, &v, ov)?,
        None => return Err(format!("{}: {NOT_A_RESULT}", path.display())),
    };
    // Result files in one directory are one batch, as `bench --db` stores them (trial 15: two
    // `bench --db` runs into one `--result-dir` made one batch, their `ingest` one per file).
    if let Some(dir) = crate::IngestOptions::result_batch(path) {
        run.batch = dir;
    }
    Ok(run)
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
        // A point directory without its result: finished badly (status.json), or still running
        // (job.json alone; trial 18: its files were listed as "ignored non-result file(s)").
        if path.join("job.json").is_file() {
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

/// One identity field of a point, as [`Lookup`] reads it from each of its sources: from a
/// foreign file's JSON (or an untyped `job.json` level) by the names of [`Field::names`], first
/// match wins; from a typed matrix row by its typed field ([`row_field`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Hardware,
    ModelPrefix,
    Model,
    Framework,
    Precision,
    SpecDecoding,
    Disagg,
    IsMultinode,
    Tp,
    Pp,
    Dcp,
    Pcp,
    Ep,
    DpAttention,
    PrefillTp,
    PrefillEp,
    PrefillDpAttention,
    PrefillNumWorkers,
    DecodeTp,
    DecodeEp,
    DecodeDpAttention,
    DecodeNumWorkers,
    NumPrefillGpu,
    NumDecodeGpu,
    KvOffload,
    Scenario,
    Isl,
    Osl,
    Image,
    /// The point's concurrency as a result summary's sources give it (`max_concurrency`: vLLM's
    /// name; `CONC`: InferenceX's environment).
    Conc,
}

impl Field {
    /// Every field, in declaration order.
    const ALL: [Field; 30] = [
        Field::Hardware,
        Field::ModelPrefix,
        Field::Model,
        Field::Framework,
        Field::Precision,
        Field::SpecDecoding,
        Field::Disagg,
        Field::IsMultinode,
        Field::Tp,
        Field::Pp,
        Field::Dcp,
        Field::Pcp,
        Field::Ep,
        Field::DpAttention,
        Field::PrefillTp,
        Field::PrefillEp,
        Field::PrefillDpAttention,
        Field::PrefillNumWorkers,
        Field::DecodeTp,
        Field::DecodeEp,
        Field::DecodeDpAttention,
        Field::DecodeNumWorkers,
        Field::NumPrefillGpu,
        Field::NumDecodeGpu,
        Field::KvOffload,
        Field::Scenario,
        Field::Isl,
        Field::Osl,
        Field::Image,
        Field::Conc,
    ];

    /// The names foreign files give the field (InferenceX's aggregate and environment, vLLM's
    /// and AIPerf's exports, an untyped `job.json`, `--set` overrides), the first found wins.
    /// `runner` last for the hardware: a matrix row's runner label (`cluster:b200-dgxc`) when
    /// nothing else names it (agentic points without an aggregate).
    fn names(self) -> &'static [&'static str] {
        match self {
            Field::Hardware => &["hw", "hardware", "runner_type", "RUNNER_TYPE", "runner"],
            Field::ModelPrefix => &["infmax_model_prefix", "model_prefix", "MODEL_PREFIX"],
            Field::Model => &["model", "model_id", "MODEL"],
            Field::Framework => &["framework", "FRAMEWORK"],
            Field::Precision => &["precision", "PRECISION"],
            Field::SpecDecoding => &["spec_decoding", "SPEC_DECODING", "spec_method"],
            Field::Disagg => &["disagg", "DISAGG"],
            Field::IsMultinode => &["is_multinode", "IS_MULTINODE"],
            Field::Tp => &["tp", "TP"],
            Field::Pp => &["pp", "PP_SIZE", "pp_size"],
            Field::Dcp => &["dcp_size", "DCP_SIZE", "dcp"],
            Field::Pcp => &["pcp_size", "PCP_SIZE", "pcp"],
            Field::Ep => &["ep", "EP_SIZE", "ep_size"],
            Field::DpAttention => &[DP_ATTENTION, "DP_ATTENTION", "dp_attn"],
            Field::PrefillTp => &["prefill_tp"],
            Field::PrefillEp => &["prefill_ep"],
            Field::PrefillDpAttention => &["prefill_dp_attention"],
            Field::PrefillNumWorkers => &["prefill_num_workers"],
            Field::DecodeTp => &["decode_tp"],
            Field::DecodeEp => &["decode_ep"],
            Field::DecodeDpAttention => &["decode_dp_attention"],
            Field::DecodeNumWorkers => &["decode_num_workers"],
            Field::NumPrefillGpu => &["num_prefill_gpu"],
            Field::NumDecodeGpu => &["num_decode_gpu"],
            Field::KvOffload => &["offload_mode", "kv_offloading", "KV_OFFLOADING"],
            Field::Scenario => &["scenario_type", "scenario", "SCENARIO_TYPE"],
            Field::Isl => &["isl", "ISL"],
            Field::Osl => &["osl", "OSL"],
            Field::Image => &["image", "IMAGE"],
            Field::Conc => &["conc", "max_concurrency", "CONC"],
        }
    }
}

/// The value a typed matrix row gives `field`, straight from its typed field; `None` where the
/// row leaves it out, or does not model it (the pools' fields: a multinode row's `prefill` and
/// `decode` name no flat identity field; `is_multinode`: not a row field). A row's list of
/// concurrencies is given as the list (it names no one concurrency, and no later source is
/// asked). Not [`inferbench_core::point::PointConfig`]: it fills absent sizes with their
/// defaults, where an absent field here lets a later source give it.
fn row_field(row: &MatrixRow, field: Field) -> Option<Value> {
    let text = |s: &String| Some(Value::from(s.as_str()));
    match field {
        Field::Hardware => text(&row.runner),
        Field::ModelPrefix => text(&row.model_prefix),
        Field::Model => text(&row.model),
        Field::Framework => text(&row.framework),
        Field::Precision => text(&row.precision),
        Field::SpecDecoding => text(&row.spec_decoding),
        Field::Image => text(&row.image),
        Field::Disagg => row.disagg.map(Value::from),
        Field::Tp => row.tp.map(Value::from),
        Field::Pp => row.pp.map(Value::from),
        Field::Dcp => row.dcp_size.map(Value::from),
        Field::Pcp => row.pcp_size.map(Value::from),
        Field::Ep => row.ep.map(Value::from),
        Field::DpAttention => row.dp_attn.map(Value::from),
        Field::KvOffload => row.kv_offloading.as_deref().map(Value::from),
        Field::Scenario => row.scenario_type.as_deref().map(Value::from),
        Field::Isl => row.isl.map(Value::from),
        Field::Osl => row.osl.map(Value::from),
        Field::Conc => Some(match &row.conc {
            Conc::One(c) => Value::from(*c),
            Conc::List(v) => Value::from(v.clone()),
        }),
        Field::IsMultinode
        | Field::PrefillTp
        | Field::PrefillEp
        | Field::PrefillDpAttention
        | Field::PrefillNumWorkers
        | Field::DecodeTp
        | Field::DecodeEp
        | Field::DecodeDpAttention
        | Field::DecodeNumWorkers
        | Field::NumPrefillGpu
        | Field::NumDecodeGpu => None,
    }
}

/// What a [`Lookup`] is asked for: an identity [`Field`], or a value under names of the caller's
/// (a file's date, an eval's task, the run's provenance), which typed rows do not give.
#[derive(Clone, Copy)]
enum Key<'n> {
    Field(Field),
    Names(&'n [&'n str]),
}

impl From<Field> for Key<'_> {
    fn from(f: Field) -> Self {
        Key::Field(f)
    }
}

impl<'n, const N: usize> From<&'n [&'n str; N]> for Key<'n> {
    fn from(names: &'n [&'n str; N]) -> Self {
        Key::Names(names)
    }
}

impl<'n> From<&'n [&'n str]> for Key<'n> {
    fn from(names: &'n [&'n str]) -> Self {
        Key::Names(names)
    }
}

impl<'n> Key<'n> {
    fn names(self) -> &'n [&'n str] {
        match self {
            Key::Field(f) => f.names(),
            Key::Names(n) => n,
        }
    }
}

/// One source of identity values, in a [`Lookup`]'s order.
enum Source<'a> {
    /// A foreign file's JSON object, or an untyped `job.json` level: read by name.
    Map(&'a Map<String, Value>),
    /// A matrix row read typed (core's [`MatrixRow`], as the runner wrote it to `job.json`),
    /// with its fields the type does not model ([`MatrixRow::extra`], dashes as underscores):
    /// each identity field from its typed field ([`row_field`]); only a field the row leaves
    /// out is looked for among the extras, by name.
    Row(&'a MatrixRow, &'a Map<String, Value>),
}

impl Source<'_> {
    /// The first non-null value under `names` in `m`.
    fn by_name(m: &Map<String, Value>, names: &[&str]) -> Option<Value> {
        names
            .iter()
            .find_map(|n| m.get(*n).filter(|v| !v.is_null()))
            .cloned()
    }

    fn get(&self, key: Key<'_>) -> Option<Value> {
        match (self, key) {
            (Source::Map(m), _) => Self::by_name(m, key.names()),
            (Source::Row(row, extra), Key::Field(f)) => {
                row_field(row, f).or_else(|| Self::by_name(extra, f.names()))
            }
            (Source::Row(_, extra), Key::Names(n)) => Self::by_name(extra, n),
        }
    }

    /// Whether this source names an agentic-coding point (its `scenario_type`).
    fn says_agentic(&self) -> bool {
        let agentic = |v: Option<&Value>| v.and_then(Value::as_str) == Some("agentic-coding");
        match self {
            Source::Map(m) => agentic(m.get("scenario_type")),
            Source::Row(row, extra) => match &row.scenario_type {
                Some(s) => s == "agentic-coding",
                None => agentic(extra.get("scenario_type")),
            },
        }
    }
}

/// Looks identity fields up in several sources, first match wins: the `--set` overrides (by
/// name), then each source in order.
struct Lookup<'a> {
    overrides: &'a Overrides,
    sources: Vec<Source<'a>>,
}

impl<'a> Lookup<'a> {
    /// A lookup over JSON objects only (foreign files: InferenceX, AIPerf).
    fn of_maps(overrides: &'a Overrides, maps: Vec<&'a Map<String, Value>>) -> Self {
        Lookup {
            overrides,
            sources: maps.into_iter().map(Source::Map).collect(),
        }
    }

    fn get<'n>(&self, key: impl Into<Key<'n>>) -> Option<Value> {
        let key = key.into();
        for n in key.names() {
            if let Some(v) = self.overrides.get(*n) {
                return Some(Value::String(v.clone()));
            }
        }
        self.sources.iter().find_map(|s| s.get(key))
    }
    fn text<'n>(&self, key: impl Into<Key<'n>>) -> String {
        match self.get(key) {
            Some(Value::String(s)) => s,
            Some(Value::Null) | None => String::new(),
            Some(v) => v.to_string(),
        }
    }
    fn int<'n>(&self, key: impl Into<Key<'n>>) -> Option<i64> {
        self.get(key)
            .as_ref()
            .and_then(num)
            .map(|f| f.round() as i64)
    }
    fn flag<'n>(&self, key: impl Into<Key<'n>>) -> bool {
        self.get(key).is_some_and(|v| normalize::truthy(&v))
    }
}

/// `raw`, or `unknown` when a source gives nothing (what the normalizers store then).
fn or_unknown(raw: &str) -> &str {
    if raw.is_empty() {
        "unknown"
    } else {
        raw
    }
}

/// The KV-offload mode as stored: `off` for nothing, `none`, `off`, `false` or `0`; `on` for
/// `on`, `true` or `1`; any other mode (`cpu`, `lmcache`, …) lower-cased as given.
fn kv_offload(raw: &str) -> String {
    match raw.trim().to_lowercase().as_str() {
        "" | "none" | "off" | "false" | "0" => "off".to_string(),
        "on" | "true" | "1" => "on".to_string(),
        other => other.to_string(),
    }
}

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
    let hw_raw = l.text(Field::Hardware);
    let hw = normalize::hardware(or_unknown(&hw_raw));
    note("hardware", &hw_raw, &hw);
    let prefix = l.text(Field::ModelPrefix);
    let model_raw = l.text(Field::Model);
    let model = normalize::model(
        &prefix,
        if model_raw.is_empty() && prefix.is_empty() {
            "unknown"
        } else {
            &model_raw
        },
    );
    // The name the key came from: the prefix, unless it is the `unknown` an eval set without
    // one gets (trial 22: "model unknown → llama3.1-8b").
    note(
        "model",
        if prefix.is_empty() || prefix == "unknown" {
            &model_raw
        } else {
            &prefix
        },
        &model,
    );
    let fw_raw = l.text(Field::Framework);
    let (fw, fw_disagg) = normalize::framework(or_unknown(&fw_raw));
    note("framework", &fw_raw, &fw);
    let prec_raw = l.text(Field::Precision);
    let prec = normalize::precision(or_unknown(&prec_raw));
    note("precision", &prec_raw, &prec);

    let disagg = fw_disagg || l.flag(Field::Disagg);
    let is_multinode = l.flag(Field::IsMultinode);
    let one = |v: Option<i64>| v.unwrap_or(1);
    let tp = one(l.int(Field::Tp));
    let ep = one(l.int(Field::Ep));
    let dpa = l.flag(Field::DpAttention);
    let v2 = l.get(Field::PrefillTp).is_some();
    let (ptp, pep, pdpa, pnw, dtp, dep, ddpa, dnw, npg, ndg);
    if v2 {
        ptp = one(l.int(Field::PrefillTp));
        pep = one(l.int(Field::PrefillEp));
        pdpa = l.flag(Field::PrefillDpAttention);
        pnw = l.int(Field::PrefillNumWorkers).unwrap_or(0);
        dtp = one(l.int(Field::DecodeTp));
        dep = one(l.int(Field::DecodeEp));
        ddpa = l.flag(Field::DecodeDpAttention);
        dnw = l.int(Field::DecodeNumWorkers).unwrap_or(0);
        npg = l.int(Field::NumPrefillGpu).unwrap_or(ptp * pep);
        ndg = l.int(Field::NumDecodeGpu).unwrap_or(dtp * dep);
    } else {
        (ptp, pep, pdpa, pnw, dtp, dep, ddpa, dnw) = (tp, ep, dpa, 0, tp, ep, dpa, 0);
        npg = tp * ep;
        ndg = tp * ep;
    }
    let kv = kv_offload(&l.text(Field::KvOffload));
    let scenario = l.text(Field::Scenario).to_lowercase();
    ConfigKey {
        model: model.key,
        model_prefix: prefix.to_lowercase(),
        hardware: hw.key,
        framework: fw.key,
        precision: prec.key,
        spec_decoding: normalize::spec_method(&l.text(Field::SpecDecoding)),
        disagg,
        is_multinode,
        tp,
        pp: one(l.int(Field::Pp)),
        dcp: one(l.int(Field::Dcp)),
        pcp: one(l.int(Field::Pcp)),
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
        isl: l.int(Field::Isl).unwrap_or(0),
        osl: l.int(Field::Osl).unwrap_or(0),
        image: l.text(Field::Image).replace('#', "/"),
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

/// Unix seconds → UTC `YYYY-MM-DD` (chrono's calendar); "" outside chrono's range or for a
/// non-finite `t`.
pub fn date_from_unix(t: f64) -> String {
    utc_format(t, "%Y-%m-%d")
}

/// Unix seconds → UTC `YYYY-MM-DD HH:MM UTC`, to tell runs of one day apart (`report
/// --history-at`); "" as [`date_from_unix`].
pub fn minute_from_unix(t: f64) -> String {
    utc_format(t, "%Y-%m-%d %H:%M UTC")
}

fn utc_format(t: f64, fmt: &str) -> String {
    if !t.is_finite() {
        return String::new();
    }
    chrono::DateTime::from_timestamp(t.floor() as i64, 0)
        .map_or(String::new(), |d| d.format(fmt).to_string())
}

/// Numeric non-identity fields of an InferenceX aggregate row, kept under their names.
/// The numeric, non-identity fields of a flat result row, as metrics.
pub(crate) fn metrics_from(row: &Map<String, Value>) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    inferencex::agg_metrics(row, &mut m);
    m
}

/// The config key of a flat row of InferenceX field names (`ov` wins over the row).
pub(crate) fn config_from(
    row: &Map<String, Value>,
    ov: &Overrides,
    names: &mut Names,
) -> ConfigKey {
    config_key(&Lookup::of_maps(ov, vec![row]), names)
}

/// An eval row of InferenceX field names (`task`, the config's fields, the scores).
pub(crate) fn eval_from(row: &Map<String, Value>, ov: &Overrides, names: &mut Names) -> EvalData {
    inferencex::eval_row(row, ov, names)
}

/// Fills each per-GPU throughput (tokens/s per GPU) the result does not have from its totals
/// (`total_token_throughput`, `output_throughput`, tokens/s), by core's one rule
/// ([`ThroughputGpus`], InferenceX's result processing, reference/inferencex-producer.md
/// §7.1) over the point's GPUs ([`ConfigKey::throughput_gpus`]).
fn fill_per_gpu(cfg: &ConfigKey, m: &mut BTreeMap<String, f64>) {
    let gpus = cfg.throughput_gpus();
    let total = m.get("total_token_throughput").copied();
    let output = m.get("output_throughput").copied();
    if let Some(t) = total {
        m.entry("tput_per_gpu".into())
            .or_insert_with(|| gpus.tput_per_gpu(t));
    }
    if let Some(o) = output {
        m.entry("output_tput_per_gpu".into())
            .or_insert_with(|| gpus.output_tput_per_gpu(o));
    }
    if let (Some(t), Some(o)) = (total, output) {
        m.entry("input_tput_per_gpu".into())
            .or_insert_with(|| gpus.input_tput_per_gpu(t, o));
    }
}

/// Top-level keys of a result file that hold one entry per request (vLLM's and `bench`'s
/// `--save-detailed` arrays). No importer reads them, so [`read_json`] skips their values
/// while parsing (the file's bytes are kept verbatim): parsed, a detailed result of 1,000
/// requests of 4,096 tokens (62 MB) took about 10× its size in memory, and `bench --db
/// --save-detailed` ran out of memory storing it at the advised `ulimit -v` (issue 39, fresh
/// tester's finding 1).
pub const PER_REQUEST_KEYS: [&str; 6] = [
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
];

/// A JSON value whose top-level object leaves out [`PER_REQUEST_KEYS`] (their values are
/// checked as JSON and dropped); any other value as it is.
struct WithoutPerRequest;

impl<'de> serde::de::DeserializeSeed<'de> for WithoutPerRequest {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for WithoutPerRequest {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = m.next_key::<String>()? {
            if PER_REQUEST_KEYS.contains(&k.as_str()) {
                m.next_value::<serde::de::IgnoredAny>()?;
            } else {
                out.insert(k, m.next_value::<Value>()?);
            }
        }
        Ok(Value::Object(out))
    }
}

/// `bytes` parsed as JSON, a top-level object without its [`PER_REQUEST_KEYS`].
fn parse_without_per_request(bytes: &[u8]) -> serde_json::Result<Value> {
    use serde::de::DeserializeSeed;
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return serde_json::from_slice(bytes);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = WithoutPerRequest.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A JSON file's bytes and value (a top-level object without its per-request arrays,
/// [`PER_REQUEST_KEYS`]); errors name the file (and line:column for bad JSON).
pub(crate) fn read_json(path: &Path) -> Result<(Vec<u8>, Value), ParseError> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v = parse_without_per_request(&bytes).map_err(|e| {
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
        records_incomplete: false,
        valid: true,
        invalid_reason: None,
        requests: None,
        power: Vec::new(),
        server_metrics: Vec::new(),
        server: None,
        gpu_seconds: None,
        adaptive: false,
        prompts_used: None,
    }
}

/// Whether the override (`--set`) name `key` (any case, trimmed) is one an importer reads as
/// the point's identity (its config key, concurrency, task: a name of [`Field::names`], `date`
/// or `task`); every other `--set` key is a server setting ([`set_settings`]).
pub fn is_identity_name(key: &str) -> bool {
    let key = key.trim().to_lowercase();
    ["date", "task"].contains(&key.as_str())
        || (Field::ALL.iter()).any(|f| f.names().iter().any(|n| n.to_lowercase() == key))
}

/// The `--set` overrides that name no identity field ([`is_identity_name`]), as server
/// settings `set.<key>` (issue 39 §5: `--set max_num_seqs=256` tells two servers apart). Load
/// keys among them are dropped by the fingerprint itself.
pub fn set_settings(ov: &Overrides) -> BTreeMap<String, String> {
    ov.iter()
        .filter(|(k, _)| !is_identity_name(k))
        .map(|(k, v)| (format!("set.{}", k.trim()), v.clone()))
        .collect()
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

/// One level of a `job.json`'s identity ([`job_identity`]): an untyped level's object, dashed
/// keys under underscore names, or the runner's matrix row read typed with its extra fields.
pub(crate) enum JobLevel<'r> {
    /// A level read by name (dashes as underscores).
    Map(Map<String, Value>),
    /// The row at `job.row`, typed, and its [`MatrixRow::extra`] fields (dashes as underscores).
    Row(&'r MatrixRow, Map<String, Value>),
}

impl JobLevel<'_> {
    /// This level as a [`Lookup`] source.
    fn source(&self) -> Source<'_> {
        match self {
            JobLevel::Map(m) => Source::Map(m),
            JobLevel::Row(row, extra) => Source::Row(row, extra),
        }
    }
}

/// The identity levels of a `job.json` object `job`, outermost first ([`job_identity_maps`]),
/// with dashed keys (`model-prefix`, `scenario-type`) under the underscore names the lookup
/// reads. The runner's matrix row at `job.row`, when `row` holds it typed ([`JobFile::row`]),
/// gives its identity through the type ([`Source::Row`]: each field from the typed field; the
/// fields the type does not model by their names, for what the typed ones leave out); any
/// other level, and a row this version cannot type (an older layout), is read by name.
///
/// [`JobFile::row`]: inferbench_core::artifacts::JobFile::row
pub(crate) fn job_identity<'r>(
    job: &Map<String, Value>,
    row: Option<&'r MatrixRow>,
) -> Vec<JobLevel<'r>> {
    let underscored = |m: &mut dyn Iterator<Item = (&String, &Value)>| -> Map<String, Value> {
        m.map(|(k, v)| (k.replace('-', "_"), v.clone())).collect()
    };
    let typed_at = job
        .get("job")
        .and_then(|j| j.get("row"))
        .and_then(Value::as_object);
    job_identity_maps(job)
        .into_iter()
        .map(|m| match (row, typed_at) {
            (Some(row), Some(at)) if std::ptr::eq(m, at) => {
                JobLevel::Row(row, underscored(&mut row.extra.iter()))
            }
            _ => JobLevel::Map(underscored(&mut m.iter())),
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

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
        assert_eq!(date_from_unix(-1.0), "1969-12-31");
        assert_eq!(date_from_unix(f64::NAN), "");
        assert_eq!(minute_from_unix(1_772_359_800.0), "2026-03-01 10:10 UTC");
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

    /// The config key, concurrency and agentic flag a job.json gives through `job_identity`
    /// (as `vllm::summary_point` reads them, nothing else in the lookup).
    fn job_point(
        job: &Map<String, Value>,
        row: Option<&MatrixRow>,
    ) -> (ConfigKey, Option<i64>, bool) {
        let levels = job_identity(job, row);
        let none = Overrides::new();
        let l = Lookup {
            overrides: &none,
            sources: levels.iter().map(JobLevel::source).collect(),
        };
        let agentic = l.sources.iter().any(Source::says_agentic);
        let conc = l.int(Field::Conc);
        (config_key(&l, &mut Names::default()), conc, agentic)
    }

    /// `{"job": {"index": 0, "row": row}}`, how the runner's job.json holds a row.
    fn job_with(row: &Value) -> Map<String, Value> {
        let v = serde_json::json!({"schema_version": 1, "job": {"index": 0, "row": row}});
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_typed_matrix_row_gives_the_identity_its_json_gave() {
        let sn = serde_json::json!({"image": "lmsysorg/sglang:v0.5.16-cu130",
            "model": "nvidia/DeepSeek-R1-0528-FP4-V2", "model-prefix": "dsr1", "precision": "fp4",
            "framework": "sglang", "runner": "b200", "isl": 8192, "osl": 1024, "tp": 4, "pp": 1,
            "dcp-size": 1, "pcp-size": 1, "conc": 64, "max-model-len": 9472, "ep": 4,
            "dp-attn": true, "exp-name": "dsr1_8k1k", "disagg": false, "run-eval": false});
        let mn = serde_json::json!({"image": "lmsysorg/sglang:nightly",
            "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4", "precision": "fp4",
            "framework": "dynamo-sglang", "runner": "b300", "isl": 8192, "osl": 1024,
            "spec-decoding": "none", "prefill": {"num-worker": 1, "tp": 4, "ep": 1,
            "dp-attn": false}, "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true},
            "conc": [1, 8, 16, 32], "exp-name": "dsv4_8k1k", "disagg": true});
        // Agentic, with fields core's MatrixRow does not model: `priority`, and `is-multinode`,
        // which the lookup reads (as `is_multinode`) from `extra`.
        let ag = serde_json::json!({"image": "img", "model": "deepseek-ai/DeepSeek-V4-Pro",
            "model-prefix": "dsv4", "precision": "fp4", "framework": "sglang",
            "runner": "cluster:b200-dgxc", "tp": 8, "ep": 1, "dp-attn": false,
            "spec-decoding": "mtp", "conc": 8, "kv-offloading": "dram", "duration": 3600,
            "exp-name": "dsv4_agentic", "scenario-type": "agentic-coding", "priority": 3,
            "is-multinode": true});
        for raw in [&sn, &mn, &ag] {
            let job = job_with(raw);
            let row = inferbench_core::artifacts::JobFile {
                job: job["job"].clone(),
                ..Default::default()
            }
            .row()
            .expect("a row the runner writes reads typed");
            assert_eq!(job_point(&job, Some(&row)), job_point(&job, None), "{raw}");
        }
        let (k, conc, agentic) = job_point(&job_with(&ag), None);
        assert!(agentic && k.is_multinode && k.spec_decoding == "mtp" && k.kv_offload == "dram");
        assert_eq!((k.model_prefix.as_str(), k.tp, conc), ("dsv4", 8, Some(8)));
        let (k, conc, _) = job_point(&job_with(&mn), None);
        assert!(
            k.disagg && conc.is_none(),
            "a list `conc` names no one concurrency"
        );
        // A row this version cannot type (no `image`: an older layout) is read by name.
        let old = serde_json::json!({"model-prefix": "dsr1", "framework": "vllm", "tp": 2});
        let (k, _, _) = job_point(&job_with(&old), None);
        assert_eq!(
            (k.model_prefix.as_str(), k.framework.as_str(), k.tp),
            ("dsr1", "vllm", 2)
        );
    }

    /// Every row InferenceX's generator printed (../shared/data/inferencex/expected) names the
    /// same point read typed as read by name.
    #[test]
    fn every_handed_generator_row_reads_typed_as_by_name() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/inferencex/expected");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("skipping: {} absent", dir.display());
            return;
        };
        let mut checked = 0;
        for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let Ok(Value::Array(rows)) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            for raw in &rows {
                let Ok(row) = MatrixRow::deserialize(raw) else {
                    continue;
                };
                let job = job_with(raw);
                assert_eq!(
                    job_point(&job, Some(&row)),
                    job_point(&job, None),
                    "{}: {raw}",
                    p.display()
                );
                checked += 1;
            }
        }
        assert!(checked > 3000, "{checked}");
    }

    /// Where each identity field of a point directory comes from when its sources disagree,
    /// pinned field by field (the order: `--set` overrides, the aggregate `agg_*.json`, then
    /// `job.json`'s levels outermost first — its top level, `identity` and `provenance`, then
    /// the matrix row at `job.row`, read typed — and last what the summary itself gives: its
    /// `model_id`, mean ISL/OSL and `max_concurrency`). The run's `RESULT_FILENAME` is the
    /// aggregate's file name over job.json's `result_filename`.
    #[test]
    fn a_point_whose_sources_disagree_takes_each_field_from_the_same_source() {
        let d = tempfile::tempdir().unwrap();
        let w = |name: &str, v: Value| std::fs::write(d.path().join(name), v.to_string()).unwrap();
        // The summary (a foreign vLLM file): model A, ISL 1024, OSL 512, conc 32.
        w(
            "summary.json",
            serde_json::json!({"model_id": "org/Model-A", "completed": 10,
            "total_input_tokens": 10240, "total_output_tokens": 5120, "max_concurrency": 32,
            "request_throughput": 1.0, "output_throughput": 512.0,
            "total_token_throughput": 1536.0}),
        );
        // The aggregate: hardware, tp and precision.
        w(
            "agg_from-the-file-name.json",
            serde_json::json!({"hw": "h100", "tp": 2,
            "precision": "fp8", "conc": 16}),
        );
        // job.json: its top level (conc, result_filename), an `identity` level (framework),
        // provenance (image) and the row, which also gives each of those differently.
        w(
            "job.json",
            serde_json::json!({"schema_version": 1, "conc": 64,
            "result_filename": "from-job-json", "identity": {"framework": "trt"},
            "provenance": {"image": "img-from-provenance", "host": "h"},
            "job": {"index": 0, "row": {"image": "img-from-row", "model": "org/Model-B",
                "model-prefix": "dsr1", "precision": "fp4", "framework": "sglang",
                "runner": "b200", "isl": 8192, "tp": 8, "ep": 4, "dp-attn": true,
                "conc": [8, 64], "spec-decoding": "mtp", "exp-name": "e",
                "kv-offloading": "dram", "disagg": false, "priority": 3}}}),
        );
        let ov: Overrides = [("ep".to_string(), "2".to_string())].into();
        let run = parse_dir(d.path(), &ov).unwrap();
        let p = &run.points[0];
        assert_eq!(run.result_filename, "from-the-file-name");
        assert_eq!(
            p.conc, 16,
            "the aggregate's conc over job.json's 64, the row's list and the summary's 32"
        );
        let c = &p.config;
        assert_eq!(
            (c.hardware.as_str(), c.tp, c.precision.as_str(), c.ep),
            ("h100", 2, "fp8", 2)
        );
        assert_eq!(
            (c.framework.as_str(), c.image.as_str()),
            ("trt", "img-from-provenance")
        );
        assert_eq!(
            (
                c.model_prefix.as_str(),
                c.model.as_str(),
                c.spec_decoding.as_str()
            ),
            ("dsr1", "dsr1", "mtp")
        );
        assert_eq!((c.isl, c.osl), (8192, 512));
        assert!(c.dp_attention && c.prefill_dp_attention && c.decode_dp_attention);
        assert!(!c.disagg && !c.is_multinode);
        assert_eq!(c.kv_offload, "dram");
        assert_eq!(c.scenario, "fixed_seq_len");
        assert_eq!((c.pp, c.dcp, c.pcp), (1, 1, 1));
        assert_eq!((c.prefill_tp, c.prefill_ep, c.num_prefill_gpu), (2, 2, 4));

        // No aggregate, overrides or outer levels: the row over the summary, field by field;
        // a row's list of concurrencies names none (not the summary's 32).
        std::fs::remove_file(d.path().join("agg_from-the-file-name.json")).unwrap();
        w(
            "job.json",
            serde_json::json!({"schema_version": 1, "result_filename": "from-job-json",
            "job": {"index": 0, "row": {"image": "img-from-row", "model": "org/Model-B",
                "model-prefix": "", "precision": "fp4", "framework": "sglang",
                "runner": "b200", "osl": 2048, "tp": 8, "conc": [8, 64], "exp-name": "e"}}}),
        );
        let run = parse_dir(d.path(), &Overrides::new()).unwrap();
        let p = &run.points[0];
        assert_eq!(run.result_filename, "from-job-json");
        assert_eq!(p.conc, 0);
        let c = &p.config;
        assert_eq!(
            (
                c.hardware.as_str(),
                c.framework.as_str(),
                c.precision.as_str()
            ),
            ("b200", "sglang", "fp4")
        );
        assert_eq!(
            (c.model.as_str(), c.model_prefix.as_str(), c.image.as_str()),
            ("org/model-b", "", "img-from-row")
        );
        assert_eq!((c.isl, c.osl, c.tp, c.ep), (1024, 2048, 8, 1));
        assert_eq!(c.spec_decoding, "none");
        assert!(!c.dp_attention);
    }

    /// No name belongs to two fields; each is one `--set` takes as identity in any case, and
    /// a server setting's is not.
    #[test]
    fn each_identity_name_belongs_to_one_field() {
        let mut seen = BTreeSet::new();
        for f in Field::ALL {
            for n in f.names() {
                assert!(seen.insert(*n), "{n} names two fields");
                assert!(
                    is_identity_name(n) && is_identity_name(&n.to_uppercase()),
                    "{n}"
                );
            }
        }
        assert!(is_identity_name(" Task ") && is_identity_name("date"));
        assert!(!is_identity_name("max_num_seqs") && !is_identity_name("users"));
        let ov: Overrides = [("TP", "8"), ("max_num_seqs", "256")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        assert_eq!(
            set_settings(&ov),
            [("set.max_num_seqs".to_string(), "256".to_string())].into()
        );
    }

    /// A typed row gives each field from its typed field; a field the type does not model
    /// (`extra`) is read by name only where the typed row gives nothing (`hw` beside `runner`:
    /// the runner; `is-multinode`, which no typed field gives: read).
    #[test]
    fn a_typed_rows_field_wins_over_its_extras() {
        let raw = serde_json::json!({"image": "i", "model": "m", "model-prefix": "dsr1",
            "precision": "fp8", "framework": "vllm", "runner": "b200", "conc": 4,
            "exp-name": "e", "hw": "h100", "is-multinode": true});
        let job = job_with(&raw);
        let row = MatrixRow::deserialize(&raw).unwrap();
        let (k, conc, agentic) = job_point(&job, Some(&row));
        assert_eq!(
            (k.hardware.as_str(), conc, agentic),
            ("b200", Some(4), false)
        );
        assert!(k.is_multinode);
    }

    /// The store fills per-GPU throughput by core's rule; exact values for 9600 tokens/s in
    /// total, 1600 of them output.
    #[test]
    fn per_gpu_throughput_is_filled_by_cores_rule() {
        let fill = |cfg: &ConfigKey, m: &[(&str, f64)]| {
            let mut m: BTreeMap<String, f64> = m.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            fill_per_gpu(cfg, &mut m);
            ["tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"].map(|k| m.get(k).copied())
        };
        let totals = [
            ("total_token_throughput", 9600.0),
            ("output_throughput", 1600.0),
        ];
        // Aggregated: tp 4 × pp 2 × pcp 1 = 8 GPUs, each ÷ 8.
        let agg = ConfigKey {
            tp: 4,
            pp: 2,
            pcp: 1,
            num_prefill_gpu: 4,
            num_decode_gpu: 4,
            ..Default::default()
        };
        assert_eq!(agg.gpus(), 8);
        assert_eq!(
            fill(&agg, &totals),
            [Some(1200.0), Some(200.0), Some(1000.0)]
        );
        // Disaggregated, 8 prefill + 16 decode GPUs: total ÷ 24, output ÷ 16, input ÷ 8.
        let dis = ConfigKey {
            disagg: true,
            tp: 4,
            num_prefill_gpu: 8,
            num_decode_gpu: 16,
            ..Default::default()
        };
        assert_eq!(dis.gpus(), 24);
        assert_eq!(
            fill(&dis, &totals),
            [Some(400.0), Some(100.0), Some(1000.0)]
        );
        // Multinode without GPU counts: the aggregated rule over tp × pp × pcp.
        let bare = ConfigKey {
            is_multinode: true,
            tp: 8,
            ..Default::default()
        };
        assert_eq!(
            fill(&bare, &totals),
            [Some(1200.0), Some(200.0), Some(1000.0)]
        );
        // A figure the result has is kept; one needing a missing total is not made up.
        assert_eq!(
            fill(
                &dis,
                &[("output_throughput", 1600.0), ("tput_per_gpu", 7.0)]
            ),
            [Some(7.0), Some(100.0), None]
        );
        // Garbage counts neither panic nor divide by zero.
        let odd = ConfigKey {
            disagg: true,
            tp: -3,
            num_prefill_gpu: i64::MAX,
            num_decode_gpu: i64::MAX,
            ..Default::default()
        };
        assert!(fill(&odd, &totals)
            .iter()
            .all(|v| v.is_some_and(f64::is_finite)));
    }

    #[test]
    fn importers_have_distinct_names() {
        let names: BTreeSet<&str> = IMPORTERS.iter().map(|i| i.name()).collect();
        assert_eq!(names.len(), IMPORTERS.len());
    }
}
