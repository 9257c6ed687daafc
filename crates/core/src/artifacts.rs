//! The artifact contract: the version stamp every JSON artifact of ours carries, and the
//! per-point files the runner writes and the store reads (`status.json`, `job.json`), typed
//! here so that both sides use one definition.
//!
//! | file | versioned by |
//! |---|---|
//! | `summary.json` | `inferbench.schema_version` (vLLM's keys at the top level are vLLM's format) |
//! | `requests.jsonl[.zst]` | `schema_version` in every record (first key; compresses away) |
//! | `job.json`, `status.json`, `sweep.json` | top-level `schema_version` |
//! | `agg_*.json` | InferenceX's format, unversioned (InferenceX's scripts read it) |
//!
//! A reader accepts files without the stamp (written before it existed: version 1) and refuses
//! a version newer than it knows, naming both.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::matrix::MatrixRow;

/// A `schema_version` field that always serializes as `V` and takes no memory. Deserializing
/// accepts any version up to `V` (and a missing field, through `#[serde(default)]`), and fails
/// on a newer one with "schema_version N is newer than this inferbench reads (V)".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchemaVersion<const V: u32>;

impl<const V: u32> SchemaVersion<V> {
    /// The version this build writes.
    pub const CURRENT: u32 = V;
}

impl<const V: u32> Serialize for SchemaVersion<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(V)
    }
}

impl<'de, const V: u32> Deserialize<'de> for SchemaVersion<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ver<const V: u32>;
        impl<const V: u32> Visitor<'_> for Ver<V> {
            type Value = SchemaVersion<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a schema_version (an integer up to {V})")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                if n > u64::from(V) {
                    return Err(E::custom(format!(
                        "schema_version {n} is newer than this inferbench reads ({V})"
                    )));
                }
                Ok(SchemaVersion)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                match u64::try_from(n) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::custom(format!("schema_version {n} is negative"))),
                }
            }
        }
        d.deserialize_u64(Ver::<V>)
    }
}

/// Name of the per-point completion marker.
pub const STATUS_FILE: &str = "status.json";

/// Name of the per-point job description.
pub const JOB_FILE: &str = "job.json";

/// Name of an AgentX replay's aggregate (what InferenceX's `process_agentic_result.py` writes),
/// beside its `summary.json`; ingest takes a directory holding both without a job.json as a
/// replay's own batch.
pub const AGENTIC_AGGREGATE_FILE: &str = "agentic_aggregate.json";

/// How a point ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointState {
    /// Benchmark finished and its artifacts are complete.
    Ok,
    /// The point failed; `class` and `cause` say why. Re-runs retry it.
    Failed,
    /// Stopped by Ctrl-C / SIGTERM; partial artifacts kept. Re-runs retry it.
    Interrupted,
}

/// Failure classes of a row or point (stable snake_case labels in `status.json` / `sweep.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The row's runner label is not in the runner config.
    UnknownRunner,
    /// No built-in template or script serves the row's framework.
    MissingRecipe,
    /// The engine's port was taken.
    PortInUse,
    /// The engine could not be started (program missing, …).
    SpawnFailed,
    /// The engine never answered `/health` + `/v1/models` in time, or exited while starting.
    EngineNotReady,
    /// The engine exited while a point was running.
    EngineCrashed,
    /// The load generator failed (or every request failed).
    BenchFailed,
    /// The server (the launched engine, or `--base-url`) could not be reached: its connections
    /// were refused or timed out, nothing was measured (the load generator's exit status 3).
    /// With `--base-url` the sweep's later points are not started, with this class.
    ServerUnreachable,
    /// Writing artifacts failed.
    Io,
    /// Cancelled by the user.
    Interrupted,
    /// Another row of the sweep has the same `RESULT_FILENAME` (the later row is not run).
    DuplicateIdentity,
    /// An accuracy eval could not run or score (no data, every request failed, …).
    EvalFailed,
    /// An eval-only row scored below its model's threshold (InferenceX's validate_scores.py).
    EvalBelowThreshold,
}

/// Contents of `status.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointStatus {
    /// Version of this file's layout (1).
    #[serde(default)]
    pub schema_version: SchemaVersion<1>,
    /// Matrix row index.
    pub index: usize,
    /// Concurrency of the point.
    pub conc: u32,
    /// The row's `RESULT_FILENAME` (directory name, without a `_conc<N>` suffix for list rows).
    pub result_filename: String,
    /// Outcome.
    pub state: PointState,
    /// Failure class, when not ok.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<FailureClass>,
    /// Human-readable cause, when not ok (engine errors include the last 100 log lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// RFC 3339 UTC time the point started.
    pub started_at: String,
    /// RFC 3339 UTC time the point ended.
    pub finished_at: String,
    /// GPU-seconds the point cost (issue 43): the row's GPUs × (its own wall time, warmups
    /// included, + its equal share of its engine's launch, readiness and stop time); for sim
    /// rows in modelled time. The same figure as `sweep.json`'s `points[].gpu_seconds`, written
    /// once the engine that served the point stopped (a shared launch is only split then).
    /// Absent for points written before it was recorded, and while the engine still runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_seconds: Option<f64>,
    /// Profile prompts the point used when it ran under `sweep --adaptive`'s early-stop rule
    /// (issue 43: `inferbench.prompts_used` of its summary; fewer than 10 × conc when its
    /// metrics were known early). Absent for fixed-protocol points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_used: Option<u64>,
}

/// Provenance recorded in `job.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Provenance {
    /// `inferbench` package version.
    pub inferbench_version: String,
    /// Git commit inferbench was built from, when known.
    pub git_sha: Option<String>,
    /// Engine version from its probe (`vllm --version`, xllamacpp's package version, …).
    pub engine_version: Option<String>,
    /// Container image of the row.
    pub image: String,
    /// Host name the point ran on.
    pub host: String,
    /// Concrete runner name used in `RESULT_FILENAME`.
    pub runner_name: String,
    /// Slurm job / array task, when run under Slurm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slurm_job: Option<String>,
}

/// The engine that served a point, as `job.json` records it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineInfo {
    /// Engine kind (`vllm`, `sglang`, `llamacpp`, `sim`, `script:…`).
    pub kind: serde_json::Value,
    /// The command line as run (secrets masked).
    pub command: String,
    /// Where it served.
    pub base_url: String,
    /// The model name it served.
    pub served_model: Option<String>,
    /// Its version from the probe.
    pub version: Option<String>,
    /// Speculative decoding's pinned acceptance (sim engines), as the template set it.
    pub synthetic_acceptance: serde_json::Value,
}

/// What every request of a sweep's points carries beyond the body (issue 41: InferenceX's
/// recipes pass these from their benchmark scripts): `sweep`/`job`'s `--header-template`,
/// `--dp-rank-roundrobin`, `--allow-empty-content`, `--backend`, `--tls-ca` and `--insecure`,
/// as `bench` and `replay` take them. Written to `job.json` (`client`) when any is set, and carried to Slurm tasks and
/// GitHub rows in `run-options.json`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientFeatures {
    /// Per-request header templates `NAME: VALUE`, whose value may hold `{i}` (the request's
    /// send index, warmups included, from 0) or `{i%N}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub header_templates: Vec<String>,
    /// `X-data-parallel-rank: i mod N` on request i (N ≥ 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_rank_roundrobin: Option<u64>,
    /// The first content chunk ends TTFT even when its text is empty.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_empty_content: bool,
    /// The API spoken (`openai`, `openai-chat`, `openai-responses`); `None`: by the endpoint,
    /// as before (completions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// PEM file of extra trusted root certificates for an `https://` server (`--tls-ca`), as
    /// given (absolute in a Slurm task's options); the points' requests, readiness probes,
    /// `/metrics` scrapes and evals verify with it. Absent: Mozilla's roots only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// An `https://` server's certificate is not verified (`--insecure`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

impl ClientFeatures {
    /// Nothing set: the sweep sends what it always sent.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// A fixed-sequence point's client settings the matrix row does not hold.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchSettings {
    /// Profile prompts sent.
    pub num_prompts: u64,
    /// Warmup requests sent first.
    pub num_warmups: u64,
    /// Prompt and arrival seed.
    pub seed: u64,
    /// InferenceX's random range ratio.
    pub range_ratio: f64,
    /// Whether EOS was ignored.
    pub ignore_eos: bool,
}

/// An AgentX replay point's settings the matrix row does not hold, as the point ran them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplaySettings {
    /// The traces replayed (a `traces.jsonl` or a directory), as given.
    pub traces: Option<String>,
    /// Measured window, s (the row's `duration` unless overridden; AgentX's minimum for a valid
    /// result is 900).
    pub duration_s: f64,
    /// How long requests in flight at the end may run on before they are cancelled, s.
    pub grace_s: f64,
    /// Warmup requests per lane before the measured window.
    pub warmup_per_lane: u32,
    /// Seed of the session order and the synthesized prompt text.
    pub seed: u64,
}

/// Contents of `job.json`: what a point ran (the runner's JobSpec as JSON, `{index, row}`, whose
/// row [`JobFile::row`] reads as [`MatrixRow`]), on what, by whom, and how it ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct JobFile {
    /// Version of this file's layout (1).
    pub schema_version: SchemaVersion<1>,
    /// The JobSpec: the matrix row's index and the row (typed by [`JobFile::row`]); kept as
    /// JSON so a `job.json` of an older layout still reads.
    pub job: serde_json::Value,
    /// The point's `RESULT_FILENAME`.
    pub result_filename: String,
    /// Concurrency of the point.
    pub conc: u32,
    /// The engine, when the runner launched one.
    pub engine: Option<EngineInfo>,
    /// Who ran it and where.
    pub provenance: Provenance,
    /// RFC 3339 UTC start.
    pub started_at: String,
    /// RFC 3339 UTC end, once finished.
    pub finished_at: Option<String>,
    /// The point's status, once finished.
    pub status: Option<PointStatus>,
    /// What the `--base-url` server is, when the sweep ran against one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<serde_json::Value>,
    /// The sweep's id (its batch in the store), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_id: Option<String>,
    /// A fixed-sequence point's client settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<BenchSettings>,
    /// An AgentX replay point's settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySettings>,
    /// The client features every request of the point carried, when any was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientFeatures>,
}

impl JobFile {
    /// The job's matrix row (`job.row`), typed as the runner wrote it: `None` when `job.json` has
    /// no row, or one this version cannot read (an older layout, a mistyped field), which the
    /// reader then takes field by field. Fields the type does not model are kept in
    /// [`MatrixRow::extra`].
    pub fn row(&self) -> Option<MatrixRow> {
        let row = self.job.get("row")?;
        MatrixRow::deserialize(row).ok()
    }
}

/// Name of the report a local sweep writes into its output directory at its end (also when
/// interrupted): every point with its outcome (`ok`, `skipped`, `failed`, `interrupted`,
/// `not_started`), class and cause.
pub const SWEEP_REPORT: &str = "sweep.json";

/// Name of the lock file a local sweep holds in its output directory ([`lock_out_dir`]).
pub const SWEEP_LOCK: &str = "sweep.lock";

/// An output directory held by this process for a local sweep: an exclusive lock (`flock(2)`
/// on Linux, through [`std::fs::File::try_lock`]) on `<out>/sweep.lock`, released when dropped
/// or when the process ends however it ends (a crash leaves no stale lock, only the file).
/// Dropping it also removes the file, while still holding the lock (trials 26, 27: a 0-byte
/// `sweep.lock` stayed in every finished sweep's --out); [`lock_out_dir`] makes that safe by
/// checking, once locked, that the file it locked is still the one at the path. `ingest` skips
/// the file as sweep bookkeeping and asks it whether a sweep is running ([`sweep_running`]).
#[derive(Debug)]
pub struct OutLock {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl Drop for OutLock {
    fn drop(&mut self) {
        // Unlinked first, unlocked after (when `file` closes): a process that opened the old
        // file meanwhile finds, once it gets the lock, that the path no longer names it, and
        // starts again on a new file ([`lock_out_dir`]).
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether the open `file` is the file at `path` now (same device and inode on Unix; assumed
/// elsewhere, where the lock file is then never removed).
fn same_file(file: &std::fs::File, path: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Takes the output directory `out` (created if missing) for one local sweep, so two sweeps
/// started into the same `--out` do not run and overwrite the same points side by side (trial
/// 18: both ran all five points into one directory). Errors, in words for the console: another
/// process holds it, or the lock file cannot be created or locked.
pub fn lock_out_dir(out: &std::path::Path) -> Result<OutLock, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let path = out.join(SWEEP_LOCK);
    // A sweep that ends removes the file after we opened it: locking the removed file would
    // let a third sweep lock a new one beside us, so we start again (a few times at most).
    for _ in 0..8 {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        match file.try_lock() {
            Ok(()) if same_file(&file, &path) => return Ok(OutLock { file, path }),
            Ok(()) => continue,
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(format!(
                    "another sweep is writing into {} (it holds {}): wait for it to finish, or \
                     give this one another --out",
                    out.display(),
                    path.display()
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(format!("{}: locking: {e}", path.display()))
            }
        }
    }
    Err(format!(
        "{}: the lock file kept being replaced while locking it",
        path.display()
    ))
}

/// Whether a sweep is writing into `dir` now: its `sweep.lock` is held by another open file
/// ([`lock_out_dir`]). False when there is no lock file or it cannot be read. Takes (and at
/// once releases) a shared lock to ask, which a sweep starting at that instant could find
/// taken.
pub fn sweep_running(dir: &std::path::Path) -> bool {
    let Ok(file) = std::fs::File::open(dir.join(SWEEP_LOCK)) else {
        return false;
    };
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, Deserialize)]
    struct Doc {
        #[serde(default)]
        schema_version: SchemaVersion<2>,
        x: u32,
    }

    #[test]
    fn schema_version_writes_its_constant_and_refuses_newer() {
        let d = Doc {
            schema_version: SchemaVersion,
            x: 1,
        };
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"schema_version":2,"x":1}"#
        );
        assert!(serde_json::from_str::<Doc>(r#"{"x":1}"#).is_ok());
        assert!(serde_json::from_str::<Doc>(r#"{"schema_version":1,"x":1}"#).is_ok());
        let e = serde_json::from_str::<Doc>(r#"{"schema_version":3,"x":1}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("schema_version 3 is newer than this inferbench reads (2)"),
            "{e}"
        );
        assert!(serde_json::from_str::<Doc>(r#"{"schema_version":"1","x":1}"#).is_err());
        assert_eq!(std::mem::size_of::<SchemaVersion<2>>(), 0);
    }

    #[test]
    fn status_and_job_files_round_trip_with_their_version() {
        let s = PointStatus {
            schema_version: SchemaVersion,
            index: 3,
            conc: 64,
            result_filename: "rf".into(),
            state: PointState::Failed,
            class: Some(FailureClass::EngineNotReady),
            cause: Some("no /health".into()),
            started_at: "2026-12-03T12:00:00.000Z".into(),
            finished_at: "2026-12-03T12:01:00.000Z".into(),
            gpu_seconds: None,
            prompts_used: None,
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(
            text.starts_with(r#"{"schema_version":1,"index":3,"#),
            "{text}"
        );
        assert!(!text.contains("gpu_seconds"), "{text}");
        assert!(!text.contains("prompts_used"), "{text}");
        assert_eq!(serde_json::from_str::<PointStatus>(&text).unwrap(), s);
        let old = text.replace(r#""schema_version":1,"#, "");
        assert_eq!(serde_json::from_str::<PointStatus>(&old).unwrap(), s);
        // Issue 43: the point's GPU-seconds, once known, round-trip under their own key.
        let costed = PointStatus {
            gpu_seconds: Some(12.5),
            ..s.clone()
        };
        let text = serde_json::to_string(&costed).unwrap();
        assert!(text.ends_with(r#","gpu_seconds":12.5}"#), "{text}");
        assert_eq!(serde_json::from_str::<PointStatus>(&text).unwrap(), costed);
        let j = JobFile {
            result_filename: "rf".into(),
            conc: 64,
            status: Some(s),
            ..Default::default()
        };
        let text = serde_json::to_string(&j).unwrap();
        assert!(
            text.starts_with(r#"{"schema_version":1,"job":null,"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<JobFile>(&text).unwrap(), j);
    }

    #[test]
    fn the_job_row_reads_typed_or_not_at_all() {
        let mut j = JobFile {
            job: serde_json::json!({"index": 0, "row": {
                "image": "i", "model": "org/M", "model-prefix": "m", "precision": "fp8",
                "framework": "vllm", "runner": "b200", "conc": 4, "exp-name": "m_1k1k",
                "priority": 3}}),
            ..Default::default()
        };
        let row = j.row().unwrap();
        assert_eq!(row.model_prefix, "m");
        assert_eq!(row.extra["priority"], 3);
        // No row, a row of an older layout (no `image`) and a mistyped one: None, no panic.
        j.job = serde_json::json!({"index": 0});
        assert!(j.row().is_none());
        j.job = serde_json::json!({"row": {"model": "m", "conc": 4}});
        assert!(j.row().is_none());
        j.job = serde_json::json!({"row": 7});
        assert!(j.row().is_none());
        j.job = serde_json::Value::Null;
        assert!(j.row().is_none());
    }
}
