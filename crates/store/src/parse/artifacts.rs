//! Our own artifact directories (DESIGN.md §3, written by `loadgen::output` and
//! `runner::artifacts`): a directory is one point when it holds `summary.json` (a vLLM-shaped
//! summary with our `inferbench` extras, read typed as core's `RunSummary` by `super::ours`;
//! one without `inferbench.schema_version` by the vLLM importer's rules) or an `agg_*.json`
//! (InferenceX's aggregate row, whose per-GPU figures win). Optional beside them: `job.json`
//! (provenance, the sweep id, the matrix row's identity; typed as core's `JobFile`), `requests.jsonl.zst` /
//! `requests.jsonl` (the records), `power.csv` and `server_metrics.jsonl` (telemetry), and
//! any other file, kept verbatim as the run's artifacts.

use std::path::{Path, PathBuf};

use inferbench_core::artifacts::JobFile;
use serde_json::{Map, Value};

use super::inferencex::inferencex_point;
use super::ours;
use super::requests::read_requests_or_mark;
use super::telemetry::{read_power, read_server_metrics};
use super::vllm::{foreign_facts, summary_point};
use super::{
    base_run, date_from_unix, dir_files, fill_per_gpu, job_identity_maps, num, read_json, Lookup,
    Overrides, ParseError, PointData, RunData, SourceKind,
};

/// The `agg_*.json` files directly in `dir`, sorted.
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
    let job_path = dir.join(inferbench_core::artifacts::JOB_FILE);
    let job_v = if job_path.is_file() {
        Some(read_json(&job_path)?.1)
    } else {
        None
    };
    // Our own job.json, typed (core::artifacts::JobFile): provenance and the sweep id come from
    // its fields, the point's identity from its matrix row (core's MatrixRow, `JobFile::row`);
    // a newer layout is refused.
    let job_file: Option<JobFile> = job_v
        .as_ref()
        .map(|v| serde_json::from_value(v.clone()))
        .transpose()
        .map_err(|e| format!("{d}/job.json: {e}"))?;
    let mut run = base_run(SourceKind::Artifacts, dir, &key_bytes);
    // A point directory's batch is the run that holds it (a sweep's or InferenceX's run
    // folder; our sweeps name it in job.json); a replay's `--result-dir` (its summary.json and
    // agentic aggregate, no job.json: a sweep's agentic points have one) is a run of its own
    // (trial 23: its batch was `results`, and `-f batch=results/replay` matched nothing).
    let standalone = summary.is_file()
        && job_v.is_none()
        && dir
            .join(inferbench_core::artifacts::AGENTIC_AGGREGATE_FILE)
            .is_file();
    let batch_dir = if standalone { Some(dir) } else { dir.parent() };
    run.batch = batch_dir
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
        (Some(s), _) => {
            // Ours (inferbench.schema_version): typed through core; else by name.
            let facts = if ours::is_ours(s) {
                ours::facts(&ours::read(s, &format!("{d}/summary.json"))?, s)
            } else {
                foreign_facts(s)
            };
            let row = job_file.as_ref().and_then(JobFile::row);
            summary_point(facts, a.as_ref(), j.as_ref(), row.as_ref(), ov, &mut run)?
        }
        (None, Some(a)) => {
            let mut p = inferencex_point(a, ov, &mut run.names, &format!("{d}/agg"))?;
            fill_per_gpu(&p.config.clone(), &mut p.metrics);
            run.date = p.date.clone();
            p
        }
        (None, None) => return Err(format!("{d}: neither summary.json nor agg_*.json")),
    };
    if let (Some(j), Some(jf)) = (&j, &job_file) {
        apply_job(j, jf, &mut run, &mut pt);
    }

    // Requests.
    let zst = dir.join("requests.jsonl.zst");
    let plain = dir.join("requests.jsonl");
    if zst.is_file() {
        read_requests_or_mark(&zst, &mut pt, &mut run.warnings)?;
    } else if plain.is_file() {
        read_requests_or_mark(&plain, &mut pt, &mut run.warnings)?;
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

/// What `job.json` says of the run, applied to `run` (and the point `pt`'s date): the
/// provenance (inferbench and engine versions, git commit, host), the `RESULT_FILENAME` when no
/// aggregate named it, the job itself as compact JSON, the sweep id as the batch, and the
/// window (unix s) and date when the summary had none, and the point's GPU-seconds
/// (`status.gpu_seconds`). The typed fields of `jf` first; a
/// job.json of an older layout through the lookup over `j`.
fn apply_job(j: &Map<String, Value>, jf: &JobFile, run: &mut RunData, pt: &mut PointData) {
    let undated = run.date.is_empty();
    apply_job_to_run(j, jf, run);
    if undated {
        pt.date = run.date.clone();
    }
    // The point's GPU-seconds (issue 43), once the runner settled them; a negative or
    // non-finite figure is no measurement and is left out.
    pt.gpu_seconds = jf
        .status
        .as_ref()
        .and_then(|s| s.gpu_seconds)
        .filter(|g| g.is_finite() && *g >= 0.0);
}

/// The eval directory `dir`'s `job.json`, when it has one, applied to its run as a point
/// directory's is ([`apply_job_to_run`]): provenance, the job, the sweep id as the batch
/// (trial 21: an eval-only run's page showed `job: {}` and no version or host). Errors: a
/// job.json that is not JSON or of a newer layout.
pub(crate) fn apply_eval_job(dir: &Path, run: &mut RunData) -> Result<(), ParseError> {
    let path = dir.join(inferbench_core::artifacts::JOB_FILE);
    if !path.is_file() {
        return Ok(());
    }
    let v = read_json(&path)?.1;
    let jf: JobFile =
        serde_json::from_value(v.clone()).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Value::Object(j) = &v {
        apply_job_to_run(j, &jf, run);
    }
    Ok(())
}

/// The run's part of [`apply_job`].
fn apply_job_to_run(j: &Map<String, Value>, jf: &JobFile, run: &mut RunData) {
    let none = Overrides::new();
    let l = Lookup::of_maps(&none, job_identity_maps(j));
    // The typed fields first; a job.json of an older layout (provenance at the top level,
    // `version`, `hostname`, `batch`) through the lookup.
    let p = &jf.provenance;
    let or_lookup = |typed: Option<&String>, names: &[&str]| {
        typed
            .filter(|v| !v.is_empty())
            .cloned()
            .unwrap_or_else(|| l.text(names))
    };
    run.inferbench_version = or_lookup(
        Some(&p.inferbench_version),
        &["inferbench_version", "version"],
    );
    run.git_sha = or_lookup(p.git_sha.as_ref(), &["git_sha", "inferbench_git_sha"]);
    run.engine_version = or_lookup(p.engine_version.as_ref(), &["engine_version"]);
    run.host = or_lookup(Some(&p.host), &["host", "hostname"]);
    if run.result_filename.is_empty() {
        run.result_filename = or_lookup(
            Some(&jf.result_filename),
            &["result_filename", "RESULT_FILENAME"],
        );
    }
    run.job = Value::Object(j.clone()).to_string();
    let sweep = or_lookup(jf.sweep_id.as_ref(), &["sweep_id", "batch", "sweep"]);
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
    }
}
