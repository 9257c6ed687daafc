//! Running jobs: for each matrix row and each of its concurrencies, bring an engine up (or reuse
//! the one serving the previous point when its command line is identical), wait until it is
//! ready, run the point, write its artifacts, stop the engine's whole process group.
//!
//! A failed row is recorded (`status.json` with class and cause, `job.json`, the server log) and
//! the sweep goes on; a re-run skips points whose `status.json` says `ok`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use inferbench_client::ClockSource;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::artifacts::{
    self, now_rfc3339, point_dir, provenance_now, write_json_atomic, EngineInfo, FailureClass,
    JobFile, PointState, PointStatus, SchemaVersion, JOB_FILE, STATUS_FILE,
};
use crate::engine::{
    build_command, check_port_free, free_port, log_tail, probe_version, resolve_engine,
    EngineCommand, EngineError, EngineKind, EngineOptions, EngineProcess,
};
use crate::evals::{self, EvalSettings};
use crate::jobspec::JobSpec;
use crate::point::{BenchDefaults, PointOutput, PointRequest, PointRunner};
use crate::ready::{wait_ready, ReadyError, LOG_TAIL_LINES};
use inferbench_core::artifacts::BenchSettings;

/// Settings of a sweep (or of one `inferbench job`).
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Root of the artifact tree: one directory per point.
    pub out_dir: PathBuf,
    /// Concrete runner name for `RESULT_FILENAME` (default: this host's name).
    pub runner_name: Option<String>,
    /// Runner labels → runner names (from `runners.yaml`); when set, rows whose `runner` label
    /// is absent fail with `unknown_runner`.
    pub runner_labels: Option<BTreeMap<String, Vec<String>>>,
    /// Engine settings.
    pub engine: EngineOptions,
    /// Engine port; 0 = a free port chosen per launch. A fixed port that is taken fails the
    /// row with `port_in_use`.
    pub port: u16,
    /// Readiness timeout (InferenceX waits forever by default; we do not).
    pub ready_timeout: Duration,
    /// Poll interval of the readiness probe.
    pub ready_interval: Duration,
    /// Grace period between SIGTERM and SIGKILL when stopping an engine (InferenceX: 30 s).
    pub stop_grace: Duration,
    /// Client settings for each point.
    pub bench: BenchDefaults,
    /// Re-run points even when their `status.json` says `ok`.
    pub force: bool,
    /// Benchmark an already running server instead of launching engines.
    pub base_url: Option<String>,
    /// Write `<out>/sweep.json` at the end (off for `inferbench job`, whose Slurm tasks share
    /// one output directory).
    pub write_report: bool,
    /// Print one line per finished point to stderr (`[3/10] row 2 conc 4: ok`).
    pub progress_lines: bool,
    /// Accuracy evals of `run-eval` / `eval-only` rows.
    pub evals: EvalSettings,
    /// The sweep's id, recorded in each point's `job.json` as `sweep_id` (the store's `batch`,
    /// e.g. `quickstart-20261130-094512-123`); `None`: the store groups points by their
    /// output directory.
    pub sweep_id: Option<String>,
    /// With `base_url`: what that server is (e.g. the in-process simulator's configuration),
    /// recorded in each point's `job.json` as `server`, where a launched engine has `engine`.
    pub server: Option<serde_json::Value>,
    /// With `base_url`: the server's log file, copied into each point directory as
    /// `server.log` when the point ends (as a launched engine's log is).
    pub server_log: Option<PathBuf>,
    /// The record bound of each AgentX (`agentic-coding`) row's points, by row index
    /// ([`inferbench_loadgen::agentic::ReplayOptions::record_bound`], as `replay` has it): a
    /// replay keeps every record until its summary, as many as the server answers in its
    /// duration, so under an address-space limit (`ulimit -v`) the CLI sets each row's from
    /// the room its largest point leaves beside its lanes and traces, and the point's profile
    /// ends when its records reach it (its summary says why: `inferbench.stopped_reason`)
    /// instead of running out of memory. A setting of this process, never serialized; a row
    /// not in it is not bounded.
    pub record_bounds: BTreeMap<usize, inferbench_loadgen::options::RecordBound>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            out_dir: PathBuf::from("results"),
            runner_name: None,
            runner_labels: None,
            engine: EngineOptions::default(),
            port: 0,
            ready_timeout: Duration::from_secs(1800),
            ready_interval: Duration::from_millis(500),
            stop_grace: Duration::from_secs(30),
            bench: BenchDefaults::default(),
            force: false,
            base_url: None,
            write_report: true,
            progress_lines: false,
            evals: EvalSettings::default(),
            sweep_id: None,
            server: None,
            server_log: None,
            record_bounds: BTreeMap::new(),
        }
    }
}

/// How a point ended in this sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran and succeeded.
    Ok,
    /// Already finished by an earlier run; skipped.
    Skipped,
    /// Failed (see class and cause).
    Failed,
    /// Interrupted by the user while it ran.
    Interrupted,
    /// Never started: the sweep was interrupted before its turn (nothing written for it;
    /// trial 13: such points were counted as interrupted).
    NotStarted,
}

/// What a point measures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// A throughput point: the load generator at one concurrency.
    #[default]
    Throughput,
    /// The row's accuracy eval (GSM8K, [`crate::evals`]).
    Eval,
}

impl PointKind {
    fn is_throughput(&self) -> bool {
        *self == PointKind::Throughput
    }
}

/// One line of `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointReport {
    /// Matrix row index.
    pub index: usize,
    /// Throughput point or eval (absent in `sweep.json` for throughput points).
    #[serde(default, skip_serializing_if = "PointKind::is_throughput")]
    pub kind: PointKind,
    /// Concurrency (of an eval: the requests it keeps in flight).
    pub conc: u32,
    /// The row's `RESULT_FILENAME` (empty when the runner name could not be resolved).
    pub result_filename: String,
    /// Point directory.
    pub dir: PathBuf,
    /// Outcome.
    pub outcome: Outcome,
    /// Failure class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<FailureClass>,
    /// Failure cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// An ok throughput point whose result is not valid (an AgentX replay under 900 s, a
    /// server behind its schedule, a client-bound run): kept, never on a frontier.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invalid: bool,
    /// GPU-seconds this point cost: the row's GPUs × (its own run time + an equal share of
    /// its engine's launch, readiness, warmup and stop time, split over the points that
    /// launch served). For sim rows, the row's GPUs × the modelled seconds the sim's engine
    /// spent in steps while the point ran (its `inferbench_sim:busy_seconds_total` counter
    /// before and after the point, warmups included; no launch share: the sim models no engine
    /// start), so neither this machine's load nor the client's preparation counts
    /// ([`PointReport::gpu_seconds_modelled`]); where the counter cannot be read, wall time ×
    /// the sim's time scale. Absent for a point that did not run (skipped, not started,
    /// gathered from Slurm/GitHub).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_seconds: Option<f64>,
    /// `gpu_seconds` is the sim's modelled busy time (a sim row whose counter was read), not
    /// wall time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gpu_seconds_modelled: bool,
    /// The part of `gpu_seconds` that is the point's share of its engine's launch, readiness,
    /// warmup and stop time (GPU-seconds; absent without a launch of ours, `--base-url`):
    /// `sweep --adaptive` counts a curve's launch once when it estimates the full list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_gpu_seconds: Option<f64>,
}

impl PointReport {
    /// `conc 4` for a throughput point, `eval (conc 16)` for an eval.
    pub fn what(&self) -> String {
        match self.kind {
            PointKind::Throughput => format!("conc {}", self.conc),
            PointKind::Eval => format!("eval (conc {})", self.conc),
        }
    }

    /// The failure class as `sweep.json` spells it (`eval_failed`), or "" without one.
    pub fn class_name(&self) -> String {
        self.class
            .and_then(|c| serde_json::to_value(c).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// Result of a sweep: every point, in matrix order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// GPU-seconds the sweep spent: the sum of its points' `gpu_seconds`.
    #[serde(default)]
    pub gpu_seconds: f64,
    /// One entry per (row, concurrency).
    pub points: Vec<PointReport>,
    /// `sweep --adaptive`: the tolerance, rounds and the GPU time saved against the full list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::adaptive::AdaptiveReport>,
    /// The sweep's own report (`sweep.json`) could not be written at its end: the path and the
    /// OS error. Never exit 0 with it ([`SweepReport::exit_code`]); not itself written.
    #[serde(skip)]
    pub write_error: Option<String>,
}

impl SweepReport {
    /// Count of points with `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        self.points.iter().filter(|p| p.outcome == outcome).count()
    }

    /// How the sweep ended: interrupted when a point was cut short or never started because
    /// of Ctrl-C / SIGTERM; a gate failed when any point failed (or was not started because
    /// of one: an unreachable `--base-url`) or the sweep's report could not be written
    /// ([`SweepReport::write_error`]); else passed. The CLI maps it to the exit code.
    pub fn end(&self) -> inferbench_core::RunEnd {
        use inferbench_core::RunEnd;
        let not_started_by_user = (self.points.iter())
            .filter(|p| {
                p.outcome == Outcome::NotStarted && p.class == Some(FailureClass::Interrupted)
            })
            .count();
        if self.count(Outcome::Interrupted) + not_started_by_user > 0 {
            RunEnd::Interrupted
        } else if self.count(Outcome::Failed) > 0 || self.write_error.is_some() {
            RunEnd::GateFailed
        } else {
            RunEnd::Passed
        }
    }

    /// One line per failed or interrupted point with its cause, plus totals, for the terminal
    /// (what `sweep --gather` prints, where no progress line came before).
    pub fn render(&self) -> String {
        self.render_with(true)
    }

    /// [`SweepReport::render`] below the progress lines, which gave each point's cause
    /// already (trial 17: a failed eval's long cause printed twice, an interrupted point
    /// three times): a failed point is named once more without its cause, an interrupted one
    /// only in the totals.
    pub fn render_after_progress(&self) -> String {
        self.render_with(false)
    }

    fn render_with(&self, causes: bool) -> String {
        let mut s = String::new();
        if let Some(e) = &self.write_error {
            s.push_str(&format!("FAILED writing the sweep's report: {e}\n"));
        }
        for p in &self.points {
            if !causes && p.outcome == Outcome::Failed {
                let class = p.class_name();
                s.push_str(&format!(
                    "FAILED row {} {} [{class}] (its cause is above and in {SWEEP_REPORT})\n",
                    p.index,
                    p.what()
                ));
            }
            if causes && matches!(p.outcome, Outcome::Failed | Outcome::Interrupted) {
                let class = p.class_name();
                let first = p
                    .cause
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("");
                // An interrupted point is not a failure: its class says it once.
                let what = p.what();
                let line = if matches!(p.outcome, Outcome::Interrupted) {
                    format!("INTERRUPTED row {} {what}: {first}\n", p.index)
                } else {
                    format!("FAILED row {} {what} [{class}]: {first}\n", p.index)
                };
                s.push_str(&line);
            }
        }
        let not_started = match self.count(Outcome::NotStarted) {
            0 => String::new(),
            n => format!(", {n} not started"),
        };
        // Trial 14: "3 ok" under three lines that each said INVALID.
        let invalid = match self.points.iter().filter(|p| p.invalid).count() {
            0 => String::new(),
            n => format!(" ({n} of them invalid: kept off frontiers)"),
        };
        // Trial 23: a row's eval was counted as "1 point"; evals are named as such.
        let evals = (self.points.iter())
            .filter(|p| p.kind == PointKind::Eval)
            .count();
        let throughput = self.points.len() - evals;
        let what = match (throughput, evals) {
            (n, 0) => inferbench_core::count(n, "point"),
            (0, e) => inferbench_core::count(e, "eval"),
            (n, e) => format!(
                "{} and {}",
                inferbench_core::count(n, "point"),
                inferbench_core::count(e, "eval")
            ),
        };
        s.push_str(&format!(
            "{what}: {} ok{invalid}, {} skipped (already done), {} failed, {} interrupted{not_started}\n",
            self.count(Outcome::Ok),
            self.count(Outcome::Skipped),
            self.count(Outcome::Failed),
            self.count(Outcome::Interrupted)
        ));
        if !self.end().passed() {
            // Trial 13: nothing said that an interrupted sweep resumes.
            s.push_str(
                "rerun the same command to resume: points already done are skipped (--force \
                 runs them again)\n",
            );
        }
        s
    }
}

/// Name of the sweep report written under the output directory.
pub use inferbench_core::artifacts::SWEEP_REPORT;

/// The concrete runner name for a row, or why the row cannot run (unknown runner label).
pub fn runner_name_for(spec: &JobSpec, opts: &SweepOptions) -> Result<String, String> {
    if let Some(labels) = &opts.runner_labels {
        if !labels.contains_key(&spec.row.runner) {
            let mut known: Vec<&str> = labels.keys().map(String::as_str).collect();
            known.truncate(12);
            return Err(format!(
                "unknown runner label '{}' in {}: not in the runner config (known labels: {}{})",
                spec.row.runner,
                spec,
                known.join(", "),
                if labels.len() > 12 { ", …" } else { "" }
            ));
        }
    }
    // Without a concrete name: the label's first runner in the runner config (`h100-sim_0`),
    // else the label itself (`h100`), never this host's name, so names agree across hosts
    // (Slurm tasks and their gather) and carry the hardware as InferenceX's do.
    let name = opts.runner_name.as_deref().unwrap_or_else(|| {
        opts.runner_labels
            .as_ref()
            .and_then(|l| l.get(&spec.row.runner))
            .and_then(|r| r.first())
            .map_or(spec.row.runner.as_str(), String::as_str)
    });
    Ok(artifacts::sanitize_name(name))
}

/// One (row, concurrency) to run.
#[derive(Debug, Clone)]
struct Point {
    spec: JobSpec,
    kind: PointKind,
    conc: u32,
    rf: String,
    dir: PathBuf,
    runner_name: String,
}

/// A failure with its class.
#[derive(Debug, Clone)]
struct Failure {
    class: FailureClass,
    cause: String,
}

impl Failure {
    fn new(class: FailureClass, cause: impl Into<String>) -> Self {
        Failure {
            class,
            cause: cause.into(),
        }
    }
}

/// A launched, ready engine and what is known about it.
struct Running {
    process: EngineProcess,
    base_url: String,
    command: EngineCommand,
    engine_dir: PathBuf,
    version: Option<String>,
    served_model: String,
    port: u16,
}

/// Runs `jobs` one point after another and writes `<out>/sweep.json`. Never fails as a whole:
/// every problem is recorded on the point(s) it affects and the sweep continues. Cancelling
/// `cancel` stops the current point (its partial artifacts are kept), stops the engine and
/// marks the remaining points interrupted.
pub async fn run_jobs<R: PointRunner>(
    jobs: &[JobSpec],
    opts: &SweepOptions,
    runner: &R,
    cancel: &CancellationToken,
) -> SweepReport {
    run_jobs_with(jobs, opts, runner, cancel, |_: &SweepReport| Vec::new()).await
}

/// [`run_jobs`] whose rows grow as it runs: once the points of `jobs` (and of every batch
/// before) have run, `more` is asked, with the report so far, for the next rows to run (empty:
/// the sweep ends). The engine is kept up from one batch to the next when it serves the next
/// batch's first point, so a planner that feeds one curve's rounds in a row (`sweep
/// --adaptive`) launches that curve's engine once, as the plain sweep does.
pub async fn run_jobs_with<R: PointRunner>(
    jobs: &[JobSpec],
    opts: &SweepOptions,
    runner: &R,
    cancel: &CancellationToken,
    mut more: impl FnMut(&SweepReport) -> Vec<JobSpec>,
) -> SweepReport {
    if let Err(e) = std::fs::create_dir_all(&opts.out_dir) {
        return out_dir_failed(jobs, opts, &e);
    }
    let mut report = SweepReport::default();
    let mut points = expand_points(jobs, opts);
    let mut engine: Option<Running> = None;
    let mut gpu = GpuAccount::default();
    let mut i = 0;
    loop {
        // This batch has run (or none was given): the next, if any.
        if i == points.len() && !cancel.is_cancelled() {
            points.extend(expand_points(&more(&report), opts));
        }
        if i >= points.len() {
            break;
        }
        let total = points.len();
        let (point, pre_fail) = points[i].clone();
        let (point, pre_fail) = (&point, &pre_fail);
        i += 1;
        if let Some(r) = settled_before_start(point, pre_fail.as_ref(), opts, cancel) {
            push(&mut report, opts, total, r);
            continue;
        }
        let iter_start = gpu.clock.now();
        let cost = PointCost {
            gpus: row_gpus(&point.spec) as f64,
            scale: modelled_scale(point, opts).unwrap_or(1.0),
        };
        let started_at = now_rfc3339();
        if let Some(f) = pre_fail {
            finish_point(point, opts, &started_at, None, None, None, Some(f.clone()));
            push(
                &mut report,
                opts,
                total,
                record(point, Outcome::Failed, Some(f.clone())),
            );
            continue;
        }
        let had_engine = engine.is_some();
        if let Err((outcome, f)) =
            ensure_engine(point, opts, cancel, &started_at, &mut engine).await
        {
            // A launch that failed still held the GPUs while it tried.
            let mut r = record(point, outcome, Some(f));
            r.gpu_seconds = Some(cost.of(gpu.secs_since(iter_start)));
            push(&mut report, opts, total, r);
            continue;
        }
        if !had_engine && engine.is_some() {
            gpu.launched(iter_start);
        }
        let run_start = gpu.clock.now();
        let base_url = match (&engine, &opts.base_url) {
            (Some(run), _) => run.base_url.clone(),
            (None, Some(u)) => u.trim_end_matches('/').to_string(),
            (None, None) => unreachable!("an engine is running or a base URL is given"),
        };
        // A sim row's GPU time is the sim's modelled busy time over the point (issue 43).
        let is_sim = is_sim_row(point, opts);
        let busy_before = if is_sim {
            sim_busy_seconds(&base_url).await
        } else {
            None
        };
        let fail = if point.kind == PointKind::Eval {
            eval_point(point, &started_at, &base_url, &mut engine, opts, cancel).await
        } else {
            let bench = bench_point(
                point,
                &started_at,
                base_url.clone(),
                &mut engine,
                opts,
                runner,
                cancel,
            );
            match bench.await {
                Ok(fail) => fail,
                Err(f) => {
                    push(
                        &mut report,
                        opts,
                        total,
                        record(point, Outcome::Failed, Some(f)),
                    );
                    gpu.ran(&mut report, iter_start, run_start, cost, None);
                    continue;
                }
            }
        };
        let busy = match (busy_before, engine.as_ref().map(|r| r.base_url.as_str())) {
            // The engine that served the point is still the one up (a crash relaunches).
            (Some(b), Some(url)) if url == base_url => sim_busy_seconds(&base_url)
                .await
                .and_then(|a| modelled_busy(b, a)),
            (Some(b), None) if opts.base_url.is_some() => sim_busy_seconds(&base_url)
                .await
                .and_then(|a| modelled_busy(b, a)),
            _ => None,
        };
        let unreachable = unreachable_base_url(point, opts, &fail);
        push(
            &mut report,
            opts,
            total,
            record(point, outcome_of(&fail), fail),
        );
        gpu.ran(&mut report, iter_start, run_start, cost, busy);
        if let Some(why) = unreachable {
            not_started_after(&points[i..], &why, &mut report, opts, cancel);
            break;
        }

        // Stop the engine after the last point it serves (the next batch's first included).
        if i == points.len() && !cancel.is_cancelled() {
            points.extend(expand_points(&more(&report), opts));
        }
        let next = points.get(i).map(|(next, _)| next);
        if !serves_next(engine.as_ref(), next, opts) {
            stop(engine.take(), opts).await;
        }
        if engine.is_none() {
            gpu.stopped(&mut report);
        }
    }
    stop(engine.take(), opts).await;
    gpu.stopped(&mut report);
    report.gpu_seconds = report.points.iter().filter_map(|p| p.gpu_seconds).sum();
    for p in &report.points {
        stamp_gpu_seconds(p);
    }
    if opts.write_report {
        let path = opts.out_dir.join(SWEEP_REPORT);
        if let Err(e) = write_json_atomic(&path, &report) {
            report.write_error = Some(format!("{}: {e}", path.display()));
        }
    }
    report
}

/// Why a directory `dir` could not be written, without creating it (a refused sweep leaves no
/// directory behind): [`inferbench_loadgen::output::dir_uncreatable`], the one check of a
/// folder written at the end (a dangling link on its way included). `None` when it can be.
fn dir_unwritable(dir: &Path) -> Option<String> {
    inferbench_loadgen::output::dir_uncreatable(dir)
}

/// Why an existing entry `path` of a directory the sweep writes into could not be replaced:
/// not a regular file or directory (a FIFO, device, socket: [`inferbench_loadgen::output::non_regular`]),
/// or a regular file that does not open for writing. `None` when it can be (or is missing).
fn entry_unwritable(path: &Path) -> Option<String> {
    let m = std::fs::symlink_metadata(path).ok()?;
    if m.is_dir() {
        return None;
    }
    if let Some(why) = inferbench_loadgen::output::non_regular(path) {
        return Some(why);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .err()
        .map(|e| format!("cannot write it: {e}"))
}

/// Checks, before the first launch or request, every place a sweep or `job` of `jobs` writes
/// (issue 39's leftovers, 3): `--out` and its `sweep.json` (when written), each point's
/// directory (to run: not already done, or `--force`) and every file already in it, which the
/// point replaces, and each engine's log directory (`_engines/<rf>/`). Nothing is created.
/// An adaptive round's later points (not listed up front) are not checked here: a write of
/// theirs that fails fails the point.
///
/// # Errors
/// One line per path that could not be written, naming it and the OS error (the caller exits
/// 2, nothing launched or sent).
pub fn check_outputs(jobs: &[JobSpec], opts: &SweepOptions) -> Result<(), String> {
    let mut why: Vec<String> = Vec::new();
    let mut dir = |d: &Path, what: &str| {
        if let Some(w) = dir_unwritable(d) {
            why.push(format!("{what} {}: {w}", d.display()));
            return false;
        }
        true
    };
    let mut dirs: Vec<(PathBuf, String)> = vec![(opts.out_dir.clone(), "--out".to_string())];
    let mut seen_engines = std::collections::HashSet::new();
    for (point, _) in expand_points(jobs, opts) {
        if !opts.force && artifacts::is_done(&point.dir) {
            continue;
        }
        dirs.push((
            point.dir.clone(),
            format!("row {} {} writes to", point.spec.index, point_what(&point)),
        ));
        let engines = engine_dir(&opts.out_dir, &point.rf);
        if seen_engines.insert(engines.clone()) {
            dirs.push((
                engines,
                format!("row {}'s engine log goes to", point.spec.index),
            ));
        }
    }
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for (d, what) in &dirs {
        if !dir(d, what) {
            continue;
        }
        if d == &opts.out_dir {
            continue;
        }
        if let Ok(entries) = std::fs::read_dir(d) {
            for e in entries.flatten() {
                files.push((e.path(), what.clone()));
            }
        }
    }
    if opts.write_report {
        files.push((
            opts.out_dir.join(SWEEP_REPORT),
            "the sweep's report".to_string(),
        ));
    }
    for (f, what) in files {
        if let Some(w) = entry_unwritable(&f) {
            why.push(format!("{what} {}: {w}", f.display()));
        }
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} where the sweep writes cannot be written (nothing was launched or sent):\n  {}",
            inferbench_core::count(why.len(), "path"),
            why.join("\n  ")
        ))
    }
}

/// The files an eval point writes into its directory besides `job.json` and `status.json`
/// (InferenceX's collector reads them; `inferbench eval` writes the same three).
pub const EVAL_POINT_FILES: [&str; 3] =
    ["samples_gsm8k.jsonl", "results_gsm8k.json", "meta_env.json"];

/// Every path a sweep (or `job`) of `jobs` reads or writes, for one same-file check of the
/// whole sweep before the first launch (issue 39's leftovers, 2: two points, or a point and an
/// input, naming one file were found only when that point ran): the inputs of `opts` (the
/// `--traces` files (a `--traces` folder also as an input folder), a `--tokenizer` file,
/// `--eval-data-dir`'s `test.jsonl`/`train.jsonl` and the folder itself,
/// `--tls-ca`, `--engine-script`, the server log it copies, each `--model-path` file), `sweep.json` (when
/// written), and for each point to run (not done, or `--force`) its `job.json`, `status.json`,
/// `server.log` (the engine's, copied) and what the load
/// generator writes there ([`inferbench_loadgen::samefile::bench_paths`] of its options; an
/// AgentX point's [`inferbench_loadgen::samefile::REPLAY_FILES`]; an eval point's
/// [`EVAL_POINT_FILES`]), and each engine's `server.log`. A point's files are named `row N
/// conc C's FILE` (`row N eval's FILE`). The caller adds its own inputs (`--matrix`,
/// `--runner-config`, `--options-file`) and checks them all with
/// [`inferbench_loadgen::samefile::check_distinct`].
pub fn sweep_paths(
    jobs: &[JobSpec],
    opts: &SweepOptions,
) -> Vec<inferbench_loadgen::samefile::NamedPath> {
    use inferbench_loadgen::samefile::{self, NamedPath};
    let mut v: Vec<NamedPath> = Vec::new();
    if let Some(t) = &opts.bench.traces {
        v.extend(samefile::replay_paths(Some(t), "", None));
    }
    if let Some(d) = &opts.evals.data_dir {
        for f in ["test.jsonl", "train.jsonl"] {
            v.push(NamedPath::input(
                format!("--eval-data-dir's {f}"),
                d.join(f),
            ));
        }
    }
    v.extend((opts.bench.client.tls_ca.iter()).map(|p| NamedPath::input("--tls-ca", p)));
    v.extend((opts.engine.script.iter()).map(|p| NamedPath::input("--engine-script", p)));
    v.extend((opts.server_log.iter()).map(|p| NamedPath::input("the server log", p)));
    v.extend(
        (opts.engine.model_paths.iter())
            .filter(|(_, p)| p.is_file())
            .map(|(m, p)| NamedPath::input(format!("--model-path {m}="), p)),
    );
    if opts.write_report {
        v.push(NamedPath::output(
            "--out's sweep.json",
            opts.out_dir.join(SWEEP_REPORT),
        ));
    }
    let mut tokenizer_listed = false;
    let mut seen_engines = std::collections::HashSet::new();
    for (point, _) in expand_points(jobs, opts) {
        if !opts.force && artifacts::is_done(&point.dir) {
            continue;
        }
        let what = match point.kind {
            PointKind::Throughput => format!("row {} conc {}'s", point.spec.index, point.conc),
            PointKind::Eval => format!("row {} eval's", point.spec.index),
        };
        for f in [artifacts::JOB_FILE, artifacts::STATUS_FILE, "server.log"] {
            v.push(NamedPath::output(format!("{what} {f}"), point.dir.join(f)));
        }
        match point.kind {
            PointKind::Eval => v.extend(
                EVAL_POINT_FILES
                    .iter()
                    .map(|f| NamedPath::output(format!("{what} {f}"), point.dir.join(f))),
            ),
            PointKind::Throughput if point.spec.is_agentic() => v.extend(
                samefile::REPLAY_FILES
                    .iter()
                    .map(|f| NamedPath::output(format!("{what} {f}"), point.dir.join(f))),
            ),
            PointKind::Throughput => {
                let req = point_request(&point, opts, String::new());
                for p in samefile::bench_paths(&crate::bench::bench_options(&req)) {
                    match p.role {
                        // The sweep's own inputs (one tokenizer for every point): listed once.
                        samefile::Role::Input if p.flag == "--tokenizer" => {
                            if !tokenizer_listed {
                                tokenizer_listed = true;
                                v.push(p);
                            }
                        }
                        samefile::Role::Input
                        | samefile::Role::InputDir
                        | samefile::Role::OutputDir => v.push(p),
                        samefile::Role::Output => {
                            let name = p
                                .path
                                .file_name()
                                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                            v.push(NamedPath::output(format!("{what} {name}"), p.path));
                        }
                    }
                }
            }
        }
        let engines = engine_dir(&opts.out_dir, &point.rf);
        if seen_engines.insert(engines.clone()) {
            v.push(NamedPath::output(
                format!("row {}'s engine log", point.spec.index),
                engines.join("server.log"),
            ));
        }
    }
    v
}

/// `conc 4` or `eval` for a planned point, for messages.
fn point_what(point: &Point) -> String {
    match point.kind {
        PointKind::Throughput => format!("conc {}", point.conc),
        PointKind::Eval => format!("eval (conc {})", point.conc),
    }
}

/// Writes point `p`'s settled GPU-seconds into its `status.json` and the status `job.json`
/// embeds (which `ingest` reads into `points.gpu_seconds`), once its engine stopped: a shared
/// launch is only split over its points then. Nothing for a point without them (skipped,
/// not started) or whose `status.json` is not this point's; a file that cannot be rewritten
/// keeps its point without the figure (`sweep.json` still has it), with an error logged.
fn stamp_gpu_seconds(p: &PointReport) {
    let Some(gpu_seconds) = p.gpu_seconds else {
        return;
    };
    let Some(mut status) = crate::artifacts::read_status(&p.dir) else {
        return;
    };
    if status.index != p.index || status.conc != p.conc {
        return;
    }
    status.gpu_seconds = Some(gpu_seconds);
    // job.json first, the status marker last (as `finish_point` writes them).
    let job_path = p.dir.join(JOB_FILE);
    if let Some(mut job) = std::fs::read_to_string(&job_path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    {
        if let Some(obj) = job.as_object_mut() {
            obj.insert(
                "status".into(),
                serde_json::to_value(&status).unwrap_or_default(),
            );
            if let Err(e) = write_json_atomic(&job_path, &job) {
                tracing::error!("{}: cannot write gpu_seconds: {e}", job_path.display());
            }
        }
    }
    if let Err(e) = write_json_atomic(&p.dir.join(STATUS_FILE), &status) {
        tracing::error!("{}: cannot write {STATUS_FILE}: {e}", p.dir.display());
    }
}

/// With `--base-url` every point asks the same server: when `point` failed because it was
/// unreachable (`fail`), why the points after it are not started (trial 19: a dead URL was
/// tried, and said, once per point). `None` otherwise.
fn unreachable_base_url(
    point: &Point,
    opts: &SweepOptions,
    fail: &Option<Failure>,
) -> Option<String> {
    let (url, f) = (opts.base_url.as_ref()?, fail.as_ref()?);
    (f.class == FailureClass::ServerUnreachable).then(|| {
        format!(
            "not started: the server at {url} was unreachable at row {} conc {}",
            point.spec.index, point.conc
        )
    })
}

/// Settles the points `rest` without starting them, for the reason `why` (class
/// `server_unreachable`): each is skipped when done before (as always), else not started; one
/// progress line says how many were not started.
fn not_started_after(
    rest: &[(Point, Option<Failure>)],
    why: &str,
    report: &mut SweepReport,
    opts: &SweepOptions,
    cancel: &CancellationToken,
) {
    let mut n = 0;
    for (point, pre_fail) in rest {
        let r = settled_before_start(point, pre_fail.as_ref(), opts, cancel).unwrap_or_else(|| {
            n += 1;
            let f = Failure::new(FailureClass::ServerUnreachable, why);
            record(point, Outcome::NotStarted, Some(f))
        });
        report.points.push(r);
    }
    if opts.progress_lines && n > 0 {
        let points = if n == 1 { "point" } else { "points" };
        inferbench_core::notice::line(&format!("{n} more {points} {why}"));
    }
}

/// The report of a sweep whose output directory `opts.out_dir` could not be created (`e`):
/// every point of every row in `jobs` failed with class `io`, nothing run or written.
fn out_dir_failed(jobs: &[JobSpec], opts: &SweepOptions, e: &std::io::Error) -> SweepReport {
    let mut report = SweepReport::default();
    for spec in jobs {
        for conc in spec.row.conc.values() {
            report.points.push(PointReport {
                index: spec.index,
                kind: PointKind::Throughput,
                conc,
                result_filename: String::new(),
                dir: opts.out_dir.clone(),
                outcome: Outcome::Failed,
                class: Some(FailureClass::Io),
                cause: Some(format!("{}: {e}", opts.out_dir.display())),
                invalid: false,
                gpu_seconds: None,
                launch_gpu_seconds: None,
                gpu_seconds_modelled: false,
            });
        }
    }
    report
}

/// What a row's largest point asks of the client process, for the up-front check of `sweep`
/// and `job` against `ulimit -n` / `ulimit -v` before any engine starts (issue 39 §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLoad {
    /// 0-based index of the row in the matrix.
    pub index: usize,
    /// The row's largest concurrency (streams in flight at once) over its points, eval
    /// included.
    pub conc: u32,
    /// Requests its largest throughput point sends and keeps (warmups and profile; 0 for an
    /// AgentX or eval-only row, whose requests are not known up front).
    pub requests: u64,
    /// Bytes of random prompts that point builds before its first request (0 when none).
    pub prompt_bytes: u64,
    /// Bytes of that point's records' output tokens
    /// (`BenchOptions::estimated_output_bytes`: the same count its run checks again; 0 when
    /// not known up front).
    pub output_bytes: u64,
    /// Connections each stream may hold at once: 1, or for an AgentX row its traces' peak of
    /// requests in flight per session (sub-agents take no lane), as `replay` counts it
    /// ([`inferbench_loadgen::agentic::lane_load`]).
    pub per_stream: u64,
    /// Bytes each connection's request in flight takes besides its stream's: for an AgentX row
    /// its traces' largest request ([`inferbench_loadgen::agentic::LaneLoad::request_bytes`]);
    /// otherwise its output tokens until its record is compacted
    /// (`BenchOptions::estimated_in_flight_bytes`).
    pub request_bytes: u64,
    /// Whether the row reads the sweep's `--traces` (an AgentX row): its traces, as their load
    /// keeps them, are in [`RowLoad::prompt_bytes`], and the caller adds the room for reading
    /// them (issue 39, fresh tester's finding 2: left out, a sweep launched every agentic row
    /// under the `ulimit -v` at which `replay` of the same file was refused).
    pub reads_traces: bool,
    /// Whether the row is an AgentX row (`agentic-coding`): what to lower is its conc or its
    /// traces, never an isl or a prompt count it does not have.
    pub agentic: bool,
    /// How messages name the row ([`row_name`]).
    pub name: String,
}

/// How every message about matrix row `spec` names it, under the sweep's settings `bench`
/// (the one row-naming function: issue 39, files, ingest and hints, 4: an AgentX row's
/// refusal read as a fixed-length row's, "the row's isl"). A fixed-length row by its
/// sequence lengths and concurrencies, `row 1 (isl 1024, osl 1024, conc 4x8)`; an AgentX row
/// (`agentic-coding`, which has no isl) by what identifies it: the traces it replays (the
/// sweep's `--traces`, or `no --traces`), its replay duration in seconds (`--agentic-duration`,
/// else the row's `duration`, else 3,600) and its concurrencies, `row 0 (agentic-coding:
/// traces t.jsonl, 1800 s, conc 4x8)`; an eval-only row as a fixed-length one.
pub fn row_name(spec: &JobSpec, bench: &crate::point::BenchDefaults) -> String {
    let conc = spec.row.conc.identity();
    if spec.is_agentic() {
        let traces = match &bench.traces {
            Some(t) => format!("traces {}", t.display()),
            None => "no --traces".to_string(),
        };
        let d = bench.replay_settings(spec.row.duration).duration_s;
        return format!(
            "row {} (agentic-coding: {traces}, {d} s, conc {conc})",
            spec.index
        );
    }
    let len = |v: Option<u32>| v.map_or_else(|| "unset".to_string(), |v| v.to_string());
    format!(
        "row {} (isl {}, osl {}, conc {conc})",
        spec.index,
        len(spec.row.isl),
        len(spec.row.osl)
    )
}

/// Each row of `jobs` as its largest point loads the client ([`RowLoad`]), in order; a row
/// with no point (eval-only with evals off) is left out. An adaptive round's points lie within
/// a row's listed range, so the listed largest bounds them. An AgentX row is counted as
/// `replay` counts its lanes: `lanes`, the `--traces`' [`inferbench_loadgen::agentic::LaneLoad`]
/// the caller counted with their bytes in one pass keeping none
/// ([`inferbench_loadgen::agentic::counted_traces`]; [`inferbench_loadgen::agentic::LaneLoad::NONE`]
/// where they could not be counted: each such point then fails with the reading's error).
/// `traces_bytes`: what the traces take once loaded (the caller's count), added to an AgentX
/// row's prompts. The traces are never loaded here (issue 39, fresh tester's finding 1: loaded
/// only where they fit, a row under a tight limit counted 64 KiB per lane, so the `ulimit -v`
/// its refusal advised was refused again at 151 KiB per lane).
pub fn row_loads(
    jobs: &[JobSpec],
    opts: &SweepOptions,
    traces_bytes: u64,
    lanes: inferbench_loadgen::agentic::LaneLoad,
) -> Vec<RowLoad> {
    let need = traces_bytes;
    let lane_load = || lanes;
    jobs.iter()
        .filter_map(|spec| {
            let planned = plan(spec, "", opts);
            let conc = planned.iter().map(|(_, c, _)| *c).max()?;
            let top = planned
                .iter()
                .filter(|(k, _, _)| *k == PointKind::Throughput)
                .map(|(_, c, _)| *c)
                .max();
            let (requests, prompt_bytes, output_bytes, in_flight) = match top {
                Some(c) if !spec.is_agentic() => {
                    let point = Point {
                        spec: spec.clone(),
                        kind: PointKind::Throughput,
                        conc: c,
                        rf: String::new(),
                        dir: PathBuf::new(),
                        runner_name: String::new(),
                    };
                    let o =
                        crate::bench::bench_options(&point_request(&point, opts, String::new()));
                    (
                        o.estimated_record_count(),
                        o.estimated_prompt_bytes(),
                        o.estimated_output_bytes(),
                        o.estimated_in_flight_bytes(),
                    )
                }
                _ => (0, 0, 0, 0),
            };
            let (per_stream, request_bytes, prompt_bytes) = if spec.is_agentic() {
                let l = lane_load();
                (
                    l.per_lane,
                    l.request_bytes,
                    prompt_bytes.saturating_add(need),
                )
            } else {
                (1, in_flight, prompt_bytes)
            };
            Some(RowLoad {
                index: spec.index,
                conc,
                requests,
                prompt_bytes,
                output_bytes,
                per_stream,
                request_bytes,
                reads_traces: spec.is_agentic() && opts.bench.traces.is_some(),
                agentic: spec.is_agentic(),
                name: row_name(spec, &opts.bench),
            })
        })
        .collect()
}

/// Expands the rows `jobs` into their points, in order (each row's [`plan`]), each with the
/// failure it has before it starts: an unknown runner label (`unknown_runner`, the row's every
/// point), or a `RESULT_FILENAME` directory an earlier row already has (`duplicate_identity`:
/// the second would be skipped as done or overwrite the first, so it is not run).
fn expand_points(jobs: &[JobSpec], opts: &SweepOptions) -> Vec<(Point, Option<Failure>)> {
    let mut points: Vec<(Point, Option<Failure>)> = Vec::new();
    let mut seen: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    for spec in jobs {
        let runner_name = runner_name_for(spec, opts);
        let (rf, fail, rn) = match &runner_name {
            Ok(rn) => (spec.result_filename(rn), None, rn.clone()),
            Err(msg) => (
                spec.result_filename(&artifacts::sanitize_name(&spec.row.runner)),
                Some(Failure::new(FailureClass::UnknownRunner, msg.clone())),
                String::new(),
            ),
        };
        for (kind, conc, dir) in plan(spec, &rf, opts) {
            // Two rows with one identity would share a directory: the second would be skipped
            // as "done" or overwrite the first. It fails instead, writing nothing.
            let fail = match seen.get(&dir) {
                Some(first) => Some(Failure::new(
                    FailureClass::DuplicateIdentity,
                    format!(
                        "row {} has the same RESULT_FILENAME ({rf}) as row {first}: rows differ only in fields the identity does not encode; not run",
                        spec.index
                    ),
                )),
                None => {
                    seen.insert(dir.clone(), spec.index);
                    fail.clone()
                }
            };
            points.push((
                Point {
                    spec: spec.clone(),
                    kind,
                    conc,
                    rf: rf.clone(),
                    dir,
                    runner_name: rn.clone(),
                },
                fail,
            ));
        }
    }
    points
}

/// The report of a point settled before it starts, writing nothing: interrupted when `cancel`
/// fired, failed when `pre_fail` is a duplicate identity, skipped when its directory is done
/// (and `--force` is off). `None`: the point is to start.
fn settled_before_start(
    point: &Point,
    pre_fail: Option<&Failure>,
    opts: &SweepOptions,
    cancel: &CancellationToken,
) -> Option<PointReport> {
    if cancel.is_cancelled() {
        return Some(record(
            point,
            Outcome::NotStarted,
            Some(Failure::new(
                FailureClass::Interrupted,
                "sweep interrupted before this point started",
            )),
        ));
    }
    if let Some(f) = pre_fail.filter(|f| f.class == FailureClass::DuplicateIdentity) {
        return Some(record(point, Outcome::Failed, Some(f.clone())));
    }
    if !opts.force && artifacts::is_done(&point.dir) {
        return Some(record(point, Outcome::Skipped, None));
    }
    None
}

/// Whether the running engine `run` can serve `point` as engine `kind` without a relaunch: not
/// a script, and the same command line as the point's own.
fn can_serve(run: &Running, kind: &EngineKind, point: &Point, opts: &SweepOptions) -> bool {
    !matches!(kind, EngineKind::Script(_))
        && same_command(&run.command, &template(kind, point, opts, run))
}

/// Makes `engine` the one `point` needs (none with `--base-url`): keeps the running one when it
/// can serve the point, else stops it and launches the point's. A point whose engine cannot be
/// resolved (`missing_recipe`) or launched is finished (markers written, started at
/// `started_at`) and returned as `Err((outcome, failure))`.
async fn ensure_engine(
    point: &Point,
    opts: &SweepOptions,
    cancel: &CancellationToken,
    started_at: &str,
    engine: &mut Option<Running>,
) -> Result<(), (Outcome, Failure)> {
    if opts.base_url.is_some() {
        return Ok(());
    }
    let kind = match resolve_engine(&point.spec, &opts.engine) {
        Ok(kind) => kind,
        Err(e) => {
            let f = Failure::new(FailureClass::MissingRecipe, e.to_string());
            finish_point(point, opts, started_at, None, None, None, Some(f.clone()));
            return Err((Outcome::Failed, f));
        }
    };
    if engine
        .as_ref()
        .is_some_and(|run| !can_serve(run, &kind, point, opts))
    {
        stop(engine.take(), opts).await;
    }
    if engine.is_none() {
        match launch(&kind, point, opts, cancel).await {
            Ok(run) => *engine = Some(run),
            Err(f) => {
                let log = engine_dir(&opts.out_dir, &point.rf).join("server.log");
                finish_point(
                    point,
                    opts,
                    started_at,
                    None,
                    Some(&log),
                    None,
                    Some(f.clone()),
                );
                let outcome = if f.class == FailureClass::Interrupted {
                    Outcome::Interrupted
                } else {
                    Outcome::Failed
                };
                return Err((outcome, f));
            }
        }
    }
    Ok(())
}

/// The load generator's request for the throughput point `point` against `base_url`: the
/// row's model, ISL/OSL in tokens (0 for agentic rows, whose lengths come from the traces), and
/// the sweep's prompt and warmup counts at the point's concurrency.
fn point_request(point: &Point, opts: &SweepOptions, base_url: String) -> PointRequest {
    let (isl, osl) = if point.spec.is_agentic() {
        (0, 0)
    } else {
        (
            point.spec.row.isl.unwrap_or(0),
            point.spec.row.osl.unwrap_or(0),
        )
    };
    PointRequest {
        spec: point.spec.clone(),
        conc: point.conc,
        base_url,
        model: point.spec.row.model.clone(),
        isl,
        osl,
        num_prompts: opts.bench.prompts(point.conc),
        num_warmups: opts.bench.warmups(point.conc),
        bench: opts.bench.clone(),
        dir: point.dir.clone(),
        result_filename: point.rf.clone(),
        runner_name: point.runner_name.clone(),
        sim_time_scale: modelled_scale(point, opts),
        record_bound: (point.spec.is_agentic())
            .then(|| opts.record_bounds.get(&point.spec.index).copied())
            .flatten(),
    }
}

/// The sim's time scale (modelled seconds per wall second) for a sim row whose sim runs at
/// other than 1, else `None`: what its point is rewritten in modelled time by.
fn modelled_scale(point: &Point, opts: &SweepOptions) -> Option<f64> {
    match crate::engine::resolve_engine(&point.spec, &opts.engine) {
        Ok(crate::engine::EngineKind::Sim) => {
            crate::engine::sim_time_scale_arg(&opts.engine.sim_args)
                .filter(|k| (k - 1.0).abs() > 1e-9)
        }
        _ => None,
    }
}

/// Whether `point`'s row runs on the simulated server (`framework: sim`, or the engine forced
/// to the sim).
fn is_sim_row(point: &Point, opts: &SweepOptions) -> bool {
    matches!(
        crate::engine::resolve_engine(&point.spec, &opts.engine),
        Ok(crate::engine::EngineKind::Sim)
    )
}

/// The sim's modelled busy seconds (`inferbench_sim:busy_seconds_total` on `base_url`'s
/// `/metrics`), or `None` when the server does not answer in 5 s, answers other than 200 or
/// has no such counter (an older sim, a server that is no sim).
async fn sim_busy_seconds(base_url: &str) -> Option<f64> {
    let url = format!("{base_url}/metrics");
    let (status, body) = crate::ready::http_get(&url, Duration::from_secs(5))
        .await
        .ok()?;
    if status != 200 {
        return None;
    }
    busy_in(&String::from_utf8_lossy(&body))
}

/// The sim's busy counter in a `/metrics` text: the sum over its series (one per engine), or
/// `None` without one or with a value that is not a finite number.
fn busy_in(text: &str) -> Option<f64> {
    let v: Vec<f64> = inferbench_core::prometheus::parse_prometheus(text)
        .into_iter()
        .filter(|s| s.name == inferbench_sim::BUSY_SECONDS_METRIC)
        .map(|s| s.value)
        .collect();
    let sum: f64 = v.iter().sum();
    (!v.is_empty() && sum.is_finite()).then_some(sum)
}

/// Modelled busy seconds between two readings of the counter, `None` when it went backwards
/// (the sim restarted in between: the reading is not this point's).
fn modelled_busy(before: f64, after: f64) -> Option<f64> {
    (after >= before).then_some(after - before)
}

/// GPUs a row holds while it runs: tp·pp·pcp of a single-node row; for a multinode row the
/// sum over its pools of workers × tp·pp·pcp (at least 1).
fn row_gpus(spec: &JobSpec) -> u64 {
    if spec.is_multinode() {
        let pool = |w: &Option<inferbench_core::matrix::WorkerSpec>| {
            w.as_ref().map_or(0, |w| {
                u64::from(w.num_worker)
                    * u64::from(w.tp.max(1))
                    * u64::from(w.pp.max(1))
                    * u64::from(w.pcp_size.max(1))
            })
        };
        (pool(&spec.row.prefill) + pool(&spec.row.decode)).max(1)
    } else {
        u64::from(spec.gpu_count()).max(1)
    }
}

/// What one second of a point costs: its row's GPUs, and the modelled seconds per wall second
/// (1 for real engines).
#[derive(Debug, Clone, Copy)]
struct PointCost {
    gpus: f64,
    scale: f64,
}

impl PointCost {
    /// GPU-seconds of `wall_secs` wall-clock seconds.
    fn of(self, wall_secs: f64) -> f64 {
        self.gpus * self.scale * wall_secs
    }
}

/// GPU time of a sweep's engine launches: from the iteration that launched an engine to its
/// stop, the time its points did not run themselves (launch, readiness, stop) is split equally
/// over the points that launch served; a point without a launch of ours (`--base-url`) costs
/// its own wall time. Wall time is read from `clock` (the runner's seam onto the client's
/// [`ClockSource`]; the system clock in every sweep).
#[derive(Debug, Default)]
struct GpuAccount {
    /// Where iteration, run and launch times are read.
    clock: ClockSource,
    /// When the running engine's launch began.
    since: Option<std::time::Instant>,
    /// The points it served: report index, own wall seconds, cost, modelled busy seconds (a
    /// sim row's, [`PointReport::gpu_seconds_modelled`]).
    served: Vec<(usize, f64, PointCost, Option<f64>)>,
}

impl GpuAccount {
    /// Seconds on `clock` from `t` to now (0 when `t` is later).
    fn secs_since(&self, t: std::time::Instant) -> f64 {
        self.clock.now().saturating_duration_since(t).as_secs_f64()
    }

    fn launched(&mut self, at: std::time::Instant) {
        self.since = Some(at);
        self.served.clear();
    }

    /// The point just pushed onto `report` ran from `run_start` to now (its iteration began at
    /// `iter_start`); `busy`: the sim's modelled busy seconds over it, for a sim row whose
    /// counter was read (its GPU-seconds are then `gpus × busy`, with no launch share).
    fn ran(
        &mut self,
        report: &mut SweepReport,
        iter_start: std::time::Instant,
        run_start: std::time::Instant,
        cost: PointCost,
        busy: Option<f64>,
    ) {
        let Some(idx) = report.points.len().checked_sub(1) else {
            return;
        };
        if let Some(b) = busy {
            let p = &mut report.points[idx];
            p.gpu_seconds = Some(cost.gpus * b);
            p.gpu_seconds_modelled = true;
        }
        if self.since.is_some() {
            self.served
                .push((idx, self.secs_since(run_start), cost, busy));
        } else if busy.is_none() {
            report.points[idx].gpu_seconds = Some(cost.of(self.secs_since(iter_start)));
        }
    }

    /// The engine stopped (or there was none): settles the points it served.
    fn stopped(&mut self, report: &mut SweepReport) {
        let Some(since) = self.since.take() else {
            return;
        };
        let served = std::mem::take(&mut self.served);
        let own: f64 = served.iter().map(|s| s.1).sum();
        let overhead = settle_overhead(self.secs_since(since), own, served.len());
        for (idx, secs, cost, busy) in served {
            let Some(p) = report.points.get_mut(idx) else {
                continue;
            };
            if busy.is_some() {
                // Modelled: the sim models no launch, so none of this machine's start-up.
                p.launch_gpu_seconds = Some(0.0);
            } else {
                p.gpu_seconds = Some(cost.of(secs + overhead));
                p.launch_gpu_seconds = Some(cost.of(overhead));
            }
        }
    }
}

/// Each served point's share of an engine's time outside its points: (`total` − `own`) / `n`
/// wall seconds (never negative; 0 without points).
fn settle_overhead(total: f64, own: f64, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        (total - own).max(0.0) / n as f64
    }
}

/// Runs the throughput point `point` against `base_url` with `runner`, watching the engine:
/// writes `job.json`, benchmarks, judges the outcome and finishes the point (markers written,
/// started at `started_at`); an engine that crashed is stopped so that the next point
/// relaunches. `Err`: the point's directory could not be made (an `io` failure; nothing
/// written, the point is not finished). `Ok`: the point's failure, if any.
async fn bench_point<R: PointRunner>(
    point: &Point,
    started_at: &str,
    base_url: String,
    engine: &mut Option<Running>,
    opts: &SweepOptions,
    runner: &R,
    cancel: &CancellationToken,
) -> Result<Option<Failure>, Failure> {
    let req = point_request(point, opts, base_url);
    if let Err(e) = std::fs::create_dir_all(&point.dir) {
        return Err(Failure::new(
            FailureClass::Io,
            format!("{}: {e}", point.dir.display()),
        ));
    }
    write_job_json(point, opts, started_at, None, engine.as_ref(), None);
    // The load generator scrapes the engine's /metrics into server_metrics.jsonl itself.
    let (out, crashed) = run_watched(runner, &req, engine, cancel).await;
    let log = engine
        .as_ref()
        .map(|r| r.process.log_path.clone())
        .or_else(|| opts.server_log.clone());
    // Keep whatever the load generator produced, even when the point failed.
    let (output, fail) = judge_point(point, out, crashed, log.as_deref(), cancel);
    if crashed.is_some() {
        // Keep the crashed engine's log with this point; the next point relaunches.
        if let Some(mut run) = engine.take() {
            run.process.stop(opts.stop_grace).await;
        }
    }
    Ok(finish_point(
        point,
        opts,
        started_at,
        engine.as_ref(),
        log.as_deref(),
        output.as_ref(),
        fail,
    ))
}

/// Runs `runner` on `req` while polling the engine every 250 ms: an engine that exits mid-point
/// cancels the point (a child of `cancel`), whose partial output is still awaited. Returns the
/// runner's result and the engine's exit status if it exited (during the point or by its end).
async fn run_watched<R: PointRunner>(
    runner: &R,
    req: &PointRequest,
    engine: &mut Option<Running>,
    cancel: &CancellationToken,
) -> (
    anyhow::Result<PointOutput>,
    Option<std::process::ExitStatus>,
) {
    let point_cancel = cancel.child_token();
    let fut = runner.run_point(req, &point_cancel);
    tokio::pin!(fut);
    let mut crashed = None;
    let out = loop {
        tokio::select! {
            out = &mut fut => break out,
            _ = tokio::time::sleep(Duration::from_millis(250)), if engine.is_some() => {
                if let Some(st) = engine.as_mut().and_then(|e| e.process.try_exited()) {
                    crashed = Some(st);
                    point_cancel.cancel();
                    break fut.await;
                }
            }
        }
    };
    if crashed.is_none() {
        crashed = engine.as_mut().and_then(|e| e.process.try_exited());
    }
    (out, crashed)
}

/// Judges a throughput point from the runner's result `out` and the engine's exit status
/// `crashed`: an engine crash (`engine_crashed`, with the last lines of the server log `log`),
/// an interruption (`cancel` fired or the run stopped itself), no completed request or a gate
/// the output failed (`bench_failed`, in the gate's words when it has them; `server_unreachable`
/// when the load generator could not reach the server). Returns the output
/// to keep (even of a failed point) and the failure, if any.
fn judge_point(
    point: &Point,
    out: anyhow::Result<PointOutput>,
    crashed: Option<std::process::ExitStatus>,
    log: Option<&Path>,
    cancel: &CancellationToken,
) -> (Option<PointOutput>, Option<Failure>) {
    match (out, crashed) {
        (out, Some(st)) => {
            let log_path = log.map(Path::to_path_buf).unwrap_or_default();
            let f = Failure::new(
                FailureClass::EngineCrashed,
                format!(
                    "engine crashed mid-point ({st}) at conc {}; last {LOG_TAIL_LINES} lines of {}:\n{}",
                    point.conc,
                    log_path.display(),
                    log_tail(&log_path, LOG_TAIL_LINES)
                ),
            );
            (out.ok(), Some(f))
        }
        (Ok(o), None) if o.interrupted || cancel.is_cancelled() => {
            let f = Failure::new(
                FailureClass::Interrupted,
                format!(
                    "stopped after {} completed and {} failed requests",
                    o.completed, o.failed
                ),
            );
            (Some(o), Some(f))
        }
        (Ok(o), None) if o.completed == 0 => {
            let class = if o.unreachable {
                FailureClass::ServerUnreachable
            } else {
                FailureClass::BenchFailed
            };
            // Say what happened: every request failed, or none finished at all (cancelled
            // at the end of the window, or none sent).
            // The load generator's own reason first (the server unreachable, every warmup
            // failed: trial 18).
            let what = if let Some(g) = &o.gate {
                g.clone()
            } else if o.failed > 0 {
                format!("no request completed: all {} failed", o.failed)
            } else {
                "no request completed in the measured window (none failed: those in flight at its end were cancelled after the grace period, or none was sent)"
                    .to_string()
            };
            let f = Failure::new(class, what);
            (Some(o), Some(f))
        }
        (Ok(o), None) => {
            let f = o
                .gate
                .clone()
                .map(|g| Failure::new(FailureClass::BenchFailed, g));
            (Some(o), f)
        }
        (Err(e), None) => (
            None,
            Some(Failure::new(FailureClass::BenchFailed, format!("{e:#}"))),
        ),
    }
}

/// A finished point's outcome from its failure: ok without one, interrupted for class
/// `interrupted`, else failed.
fn outcome_of(fail: &Option<Failure>) -> Outcome {
    match fail {
        None => Outcome::Ok,
        Some(f) if f.class == FailureClass::Interrupted => Outcome::Interrupted,
        Some(_) => Outcome::Failed,
    }
}

/// Whether the running engine (if any) also serves the next point `next` (if any): a point
/// after it whose engine resolves and [`can_serve`]s; otherwise it is stopped now.
fn serves_next(engine: Option<&Running>, next: Option<&Point>, opts: &SweepOptions) -> bool {
    let (Some(run), Some(next)) = (engine, next) else {
        return false;
    };
    resolve_engine(&next.spec, &opts.engine).is_ok_and(|k| can_serve(run, &k, next, opts))
}

/// Appends a point's report (an ok throughput point marked invalid when its summary says so),
/// printing one progress line to stderr when asked.
fn push(report: &mut SweepReport, opts: &SweepOptions, total: usize, mut r: PointReport) {
    if r.outcome == Outcome::Ok && r.kind == PointKind::Throughput {
        r.invalid = summary_invalid(&r.dir);
    }
    if opts.progress_lines {
        let what = match r.outcome {
            Outcome::Ok if r.kind == PointKind::Eval => {
                format!("ok{}", eval_headline(&r.dir, opts.evals.check_threshold))
            }
            Outcome::Ok => format!("ok{}", headline(&r.dir)),
            Outcome::Skipped => "skipped (done before)".to_string(),
            Outcome::NotStarted => match &r.cause {
                Some(c) if r.class != Some(FailureClass::Interrupted) => c.clone(),
                _ => "not started (the sweep was interrupted)".to_string(),
            },
            Outcome::Failed | Outcome::Interrupted => format!(
                "{}: {}",
                r.class_name(),
                r.cause
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
            ),
        };
        inferbench_core::notice::line(&format!(
            "[{}/{total}] row {} {}: {what}",
            report.points.len() + 1,
            r.index,
            r.what()
        ));
    }
    report.points.push(r);
}

/// Whether the `summary.json` in `dir` marks its point as not valid: an AgentX replay's
/// `submission_valid` false, or a producer check's `inferbench.invalid_reason` (a server
/// behind its schedule, a client-bound run, a prefix cache on random prompts). False when it
/// cannot be read.
pub(crate) fn summary_invalid(dir: &std::path::Path) -> bool {
    use inferbench_core::summary::agentic::submission_invalid;
    let Some(v) = std::fs::read(dir.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    else {
        return false;
    };
    let agentic_invalid = (v.get("submission_valid")).is_some_and(submission_invalid);
    agentic_invalid
        || v.pointer("/inferbench/invalid_reason")
            .is_some_and(|r| !r.is_null())
}

/// `, gsm8k strict-match 0.7500 ± 0.2500, flexible-extract … (4 problems, threshold 0.90)` from
/// an eval's `results_gsm8k.json`, or nothing. With `checked` false (`--no-eval-threshold`) the
/// threshold is named as not applied.
fn eval_headline(dir: &std::path::Path, checked: bool) -> String {
    let Some(v) = std::fs::read(dir.join(inferbench_eval::gsm8k::RESULTS_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    else {
        return String::new();
    };
    let f = |k: &str| {
        v.pointer(&format!("/results/gsm8k/{}", k.replace('/', "~1")))
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(f64::NAN)
    };
    format!(
        ", gsm8k strict-match {:.4} ± {:.4}, flexible-extract {:.4} ± {:.4} ({} problems, threshold {:.2}{})",
        f("exact_match,strict-match"),
        f("exact_match_stderr,strict-match"),
        f("exact_match,flexible-extract"),
        f("exact_match_stderr,flexible-extract"),
        v.pointer("/n-samples/gsm8k/effective").and_then(serde_json::Value::as_u64).unwrap_or(0),
        v.get("threshold").and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN),
        if checked { "" } else { " not applied: --no-eval-threshold" },
    )
}

/// `, <tok/s> tok/s in+out (all GPUs), TTFT p99 <s>, <duration> s of wall time measured` from a
/// point's `summary.json`, or nothing; "modelled" where the point is in the sim's modelled time.
/// Agentic points show their North-Star x (p90 E2E-normalized interactivity, tok/s/user)
/// instead of TTFT, and `INVALID` when `submission_valid` is false.
fn headline(dir: &std::path::Path) -> String {
    use inferbench_core::summary::agentic::submission_invalid;
    let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) else {
        return String::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return String::new();
    };
    let f = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    let (Some(t), Some(d)) = (f("total_token_throughput"), f("duration")) else {
        return String::new();
    };
    // A point against the sim at a time scale is rewritten in modelled time (`clock` in its
    // metadata): its numbers are the simulated hardware's, not this machine's (trial 28).
    let modelled = v.get("clock").and_then(|c| c.as_str()) == Some("modelled");
    let all_gpus = if modelled {
        "all GPUs, modelled"
    } else {
        "all GPUs"
    };
    let time = if modelled {
        "modelled time"
    } else {
        "wall time"
    };
    if v.get("scenario_type").and_then(|s| s.as_str()) == Some("agentic-coding") {
        let x = v
            .pointer("/inferbench/e2e_normalized_interactivity/p90")
            .and_then(serde_json::Value::as_f64)
            .map_or("n/a".to_string(), |x| format!("{x:.1}"));
        let invalid = (v.get("submission_valid")).is_some_and(submission_invalid);
        return format!(
            ", {t:.0} tok/s in+out ({all_gpus}), p90 E2E-norm interactivity {x} tok/s/user, \
             {d:.1} s measured after the warmup (first send to last completion){}",
            if invalid {
                ", INVALID (submission_valid=false)"
            } else {
                ""
            }
        );
    }
    match f("p99_ttft_ms") {
        Some(ttft) => format!(
            ", {t:.0} tok/s in+out ({all_gpus}), TTFT p99 {:.3} s, {d:.1} s of {time} measured",
            ttft / 1000.0
        ),
        None => String::new(),
    }
}

/// The points of one row, in run order: a throughput point per concurrency (none for an
/// eval-only row), then the row's eval when it asks for one and evals are on. Each with its
/// directory: `point_dir` for throughput points, [`evals::eval_dir`] for the eval.
fn plan(spec: &JobSpec, rf: &str, opts: &SweepOptions) -> Vec<(PointKind, u32, PathBuf)> {
    let list_row = matches!(spec.row.conc, crate::jobspec::Conc::List(_));
    let mut v = Vec::new();
    if !evals::eval_only(spec) {
        for conc in spec.row.conc.values() {
            let dir = point_dir(&opts.out_dir, rf, conc, list_row);
            v.push((PointKind::Throughput, conc, dir));
        }
    }
    if opts.evals.enabled && evals::wants_eval(spec) {
        let dir = evals::eval_dir(&opts.out_dir, spec, rf);
        // The concurrency it really runs at: `--eval-concurrency`, else the row's.
        let conc = opts.evals.concurrency.map_or_else(
            || evals::eval_conc(spec),
            |c| c.clamp(1, u32::MAX as usize) as u32,
        );
        v.push((PointKind::Eval, conc, dir));
    }
    v
}

/// Runs a row's eval on the ready engine (or `--base-url`) and writes its artifact and
/// markers; returns the failure, if any. An engine that exits during the eval is a crash, and
/// it is stopped so that the next point relaunches.
async fn eval_point(
    point: &Point,
    started_at: &str,
    base_url: &str,
    engine: &mut Option<Running>,
    opts: &SweepOptions,
    cancel: &CancellationToken,
) -> Option<Failure> {
    if let Err(e) = std::fs::create_dir_all(&point.dir) {
        return Some(Failure::new(
            FailureClass::Io,
            format!("{}: {e}", point.dir.display()),
        ));
    }
    write_job_json(point, opts, started_at, None, engine.as_ref(), None);
    let run = evals::run_eval(
        &point.spec,
        &point.spec.point(&point.runner_name, point.conc),
        base_url,
        &point.dir,
        &opts.evals,
        &crate::point::tls(&opts.bench.client),
        &cancel.child_token(),
    )
    .await;
    let log = engine
        .as_ref()
        .map(|r| r.process.log_path.clone())
        .or_else(|| opts.server_log.clone());
    let crashed = engine.as_mut().and_then(|e| e.process.try_exited());
    let fail = match (run, crashed) {
        (_, Some(st)) => {
            let log_path = log.clone().unwrap_or_default();
            if let Some(mut run) = engine.take() {
                run.process.stop(opts.stop_grace).await;
            }
            Some(Failure::new(
                FailureClass::EngineCrashed,
                format!(
                    "engine crashed during the eval ({st}); last {LOG_TAIL_LINES} lines of {}:\n{}",
                    log_path.display(),
                    log_tail(&log_path, LOG_TAIL_LINES)
                ),
            ))
        }
        (Ok(r), None) if r.interrupted => Some(Failure::new(
            FailureClass::Interrupted,
            format!("stopped after {} problems were scored", r.scores.n),
        )),
        (Ok(r), None)
            if opts.evals.check_threshold
                && evals::eval_only(&point.spec)
                && !r.scores.passes(r.threshold) =>
        {
            Some(Failure::new(
                FailureClass::EvalBelowThreshold,
                format!(
                    "gsm8k strict-match {:.4}, flexible-extract {:.4}: below the threshold {:.2} for model prefix {} (thresholds.yaml); scores kept in {}",
                    r.scores.strict,
                    r.scores.flexible,
                    r.threshold,
                    point.spec.row.model_prefix,
                    point.dir.display()
                ),
            ))
        }
        (Ok(_), None) => None,
        (Err((class, cause)), None) => Some(Failure::new(class, cause)),
    };
    finish_point(
        point,
        opts,
        started_at,
        engine.as_ref(),
        log.as_deref(),
        None,
        fail,
    )
}

fn record(point: &Point, outcome: Outcome, fail: Option<Failure>) -> PointReport {
    PointReport {
        index: point.spec.index,
        kind: point.kind,
        conc: point.conc,
        result_filename: point.rf.clone(),
        dir: point.dir.clone(),
        outcome,
        class: fail.as_ref().map(|f| f.class),
        cause: fail.map(|f| f.cause),
        invalid: false,
        gpu_seconds: None,
        launch_gpu_seconds: None,
        gpu_seconds_modelled: false,
    }
}

/// Directory holding an engine's helper files and live log, named after the first point it
/// serves.
fn engine_dir(out: &Path, rf: &str) -> PathBuf {
    out.join("_engines").join(rf)
}

fn template(kind: &EngineKind, point: &Point, opts: &SweepOptions, run: &Running) -> EngineCommand {
    build_command(
        kind,
        &point.spec,
        &point.runner_name,
        point.conc,
        run.port,
        &engine_options(point, opts),
        &run.engine_dir,
    )
}

/// The engine settings of a point: an eval verifies speculative drafts for real (synthetic
/// acceptance bypasses verification and corrupts accuracy, producer reference §9), so its
/// engine differs from the throughput points' and is relaunched.
fn engine_options<'a>(
    point: &Point,
    opts: &'a SweepOptions,
) -> std::borrow::Cow<'a, EngineOptions> {
    if point.kind == PointKind::Eval && opts.engine.spec.synthetic {
        let mut e = opts.engine.clone();
        e.spec.synthetic = false;
        std::borrow::Cow::Owned(e)
    } else {
        std::borrow::Cow::Borrowed(&opts.engine)
    }
}

/// Two commands start the same server when program, arguments and helper files agree (the
/// environment differs per point: CONC, RESULT_FILENAME).
fn same_command(a: &EngineCommand, b: &EngineCommand) -> bool {
    a.program == b.program && a.args == b.args && a.files == b.files && a.acceptance == b.acceptance
}

async fn launch(
    kind: &EngineKind,
    point: &Point,
    opts: &SweepOptions,
    cancel: &CancellationToken,
) -> Result<Running, Failure> {
    let host = opts.engine.host.clone();
    let port = if opts.port == 0 {
        free_port(&host).map_err(|e| {
            Failure::new(
                FailureClass::SpawnFailed,
                format!("no free port on {host}: {e}"),
            )
        })?
    } else {
        opts.port
    };
    check_port_free(&host, port)
        .map_err(|e| Failure::new(FailureClass::PortInUse, e.to_string()))?;
    let dir = engine_dir(&opts.out_dir, &point.rf);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::new(FailureClass::Io, format!("{}: {e}", dir.display())))?;
    let cmd = build_command(
        kind,
        &point.spec,
        &point.runner_name,
        point.conc,
        port,
        &engine_options(point, opts),
        &dir,
    );
    let log = dir.join("server.log");
    let _ = std::fs::remove_file(&log);
    tracing::info!(cmd = %cmd.display(), "starting engine for {}", point.spec);
    let mut process = EngineProcess::spawn(&cmd, &dir, &log).map_err(|e| match e {
        EngineError::PortInUse { .. } => Failure::new(FailureClass::PortInUse, e.to_string()),
        _ => Failure::new(FailureClass::SpawnFailed, e.to_string()),
    })?;
    let base_url = format!(
        "http://{}:{port}",
        if host == "0.0.0.0" {
            "127.0.0.1"
        } else {
            &host
        }
    );
    let reach = crate::point::reach(&opts.bench.client);
    let ready = tokio::select! {
        r = wait_ready(&base_url, opts.ready_timeout, opts.ready_interval, Some(&mut process), &log, &reach) => r,
        _ = cancel.cancelled() => {
            process.stop(opts.stop_grace).await;
            return Err(Failure::new(FailureClass::Interrupted, "interrupted while the engine was starting"));
        }
    };
    match ready {
        Ok(served_model) => {
            let version = match &cmd.version_probe {
                Some(p) => probe_version(p).await,
                None => None,
            };
            Ok(Running {
                process,
                base_url,
                command: cmd,
                engine_dir: dir,
                version,
                served_model,
                port,
            })
        }
        Err(e) => {
            process.stop(opts.stop_grace).await;
            // The engine may have died because its port was taken after our check.
            let tail = log_tail(&log, LOG_TAIL_LINES).to_lowercase();
            let class = if tail.contains("address already in use") || tail.contains("couldn't bind")
            {
                FailureClass::PortInUse
            } else {
                FailureClass::EngineNotReady
            };
            let msg = match &e {
                ReadyError::Timeout { .. } | ReadyError::Exited { .. } => {
                    format!("{} ({}): {e}", point.spec, cmd.display())
                }
            };
            Err(Failure::new(class, msg))
        }
    }
}

async fn stop(engine: Option<Running>, opts: &SweepOptions) {
    if let Some(mut run) = engine {
        run.process.stop(opts.stop_grace).await;
    }
}

/// `job.json`: the JobSpec, the point, the engine command (or what the server at `base_url`
/// is, [`SweepOptions::server`]), provenance, the sweep id when the sweep has one, and a
/// fixed-sequence point's client settings the row does not hold (`bench`: prompts, warmups,
/// seed, range ratio, ignore_eos).
fn write_job_json(
    point: &Point,
    opts: &SweepOptions,
    started_at: &str,
    finished_at: Option<&str>,
    engine: Option<&Running>,
    status: Option<&PointStatus>,
) {
    let mut prov = provenance_now(&point.spec.row.image, &point.runner_name);
    prov.engine_version = engine.and_then(|e| e.version.clone());
    let b = &opts.bench;
    let job = JobFile {
        schema_version: SchemaVersion,
        job: serde_json::to_value(&point.spec).unwrap_or_default(),
        result_filename: point.rf.clone(),
        conc: point.conc,
        engine: engine.map(|e| EngineInfo {
            kind: serde_json::to_value(&e.command.kind).unwrap_or_default(),
            command: e.command.display(),
            base_url: e.base_url.clone(),
            served_model: Some(e.served_model.clone()),
            version: e.version.clone(),
            synthetic_acceptance: serde_json::to_value(&e.command.acceptance).unwrap_or_default(),
        }),
        provenance: prov,
        started_at: started_at.to_string(),
        finished_at: finished_at.map(str::to_string),
        status: status.cloned(),
        server: opts.server.clone(),
        sweep_id: opts.sweep_id.clone(),
        bench: (point.kind == PointKind::Throughput && !point.spec.is_agentic()).then(|| {
            BenchSettings {
                num_prompts: u64::from(b.prompts(point.conc)),
                num_warmups: u64::from(b.warmups(point.conc)),
                seed: b.seed,
                range_ratio: b.range_ratio,
                ignore_eos: b.ignore_eos,
            }
        }),
        // Issue 12's live comparison: the agentic quickstart's own job.json said which
        // traces, window, grace, warmups and seed it replayed; the sweep's did not.
        replay: (point.spec.is_agentic()).then(|| b.replay_settings(point.spec.row.duration)),
        client: (!b.client.is_default()).then(|| b.client.clone()),
    };
    let _ = write_json_atomic(&point.dir.join(JOB_FILE), &job);
}

/// Writes the end-of-point artifacts: summary and aggregate whenever the load generator
/// produced them (failed points keep theirs), server log copy, `job.json` and the
/// `status.json` marker (last, so a crash before it leaves the point undone). Returns the final
/// failure (a write error turns a good point into an `io` failure).
fn finish_point(
    point: &Point,
    opts: &SweepOptions,
    started_at: &str,
    engine: Option<&Running>,
    log: Option<&Path>,
    output: Option<&PointOutput>,
    failure: Option<Failure>,
) -> Option<Failure> {
    if let Err(e) = std::fs::create_dir_all(&point.dir) {
        return Some(Failure::new(
            FailureClass::Io,
            format!("{}: {e}", point.dir.display()),
        ));
    }
    let mut failure = failure;
    if let Some(out) = output {
        let agg_name = format!("agg_{}.json", point.rf);
        let mut summary = out.summary.clone();
        if let Some(acc) = engine.and_then(|e| e.command.acceptance.as_ref()) {
            let check = acceptance_check(acc, &summary);
            if check["flagged"] == true {
                inferbench_core::notice::line(&format!(
                    "warning: row {} conc {}: measured acceptance length {:.2} against the pinned {} ({}): the engine did not hold the synthetic acceptance",
                    point.spec.index,
                    point.conc,
                    check["measured_acceptance_length"].as_f64().unwrap_or(f64::NAN),
                    acc.acceptance_length,
                    acc.source
                ));
            }
            if let Some(ext) = summary
                .get_mut("inferbench")
                .and_then(|v| v.as_object_mut())
            {
                ext.insert("spec_decoding".into(), check);
            }
        }
        let wrote = write_json_atomic(&point.dir.join("summary.json"), &summary).and_then(|_| {
            match &out.aggregate {
                Some(a) => write_json_atomic(&point.dir.join(agg_name), a),
                None => Ok(()),
            }
        });
        if let Err(e) = wrote {
            failure.get_or_insert(Failure::new(
                FailureClass::Io,
                format!("{}: writing summary: {e}", point.dir.display()),
            ));
        }
    }
    if let Some(log) = log {
        if log.exists() {
            let _ = std::fs::copy(log, point.dir.join("server.log"));
        }
    }
    let finished_at = now_rfc3339();
    let (state, class, cause) = match &failure {
        None => (PointState::Ok, None, None),
        Some(f) if f.class == FailureClass::Interrupted => (
            PointState::Interrupted,
            Some(f.class),
            Some(f.cause.clone()),
        ),
        Some(f) => (PointState::Failed, Some(f.class), Some(f.cause.clone())),
    };
    let status = PointStatus {
        schema_version: SchemaVersion,
        index: point.spec.index,
        conc: point.conc,
        result_filename: point.rf.clone(),
        state,
        class,
        cause,
        started_at: started_at.to_string(),
        finished_at: finished_at.clone(),
        // Known once the engine that served the point stopped: [`stamp_gpu_seconds`].
        gpu_seconds: None,
        // An adaptive point's prompts (issue 43's early stop), from its summary.
        prompts_used: output.and_then(|o| o.summary["inferbench"]["prompts_used"].as_u64()),
    };
    write_job_json(
        point,
        opts,
        started_at,
        Some(&finished_at),
        engine,
        Some(&status),
    );
    if let Err(e) = write_json_atomic(&point.dir.join(STATUS_FILE), &status) {
        tracing::error!("{}: cannot write {STATUS_FILE}: {e}", point.dir.display());
    }
    failure
}

/// Relative gap between the measured and the pinned acceptance length above which a point is
/// flagged: 10 %. A stream's last verification step is cut short by its output length, which
/// biases the measured AL low on short outputs (the sim measured 2.33 against 2.49 at 32-token
/// outputs, 2.487 at 512); a real engine that ignores the synthetic setting misses by more.
pub const ACCEPTANCE_GAP_FLAG: f64 = 0.10;

/// `inferbench.spec_decoding` of a speculative-decoding point's summary: the pinned acceptance
/// (k, AL, golden or not, its source) beside the one measured from the engine's /metrics
/// (`inferbench.server_metrics.spec_acceptance_length`), their gap in tokens, and `flagged`
/// when the gap exceeds [`ACCEPTANCE_GAP_FLAG`] of the pinned AL (or nothing was measured:
/// `measured_acceptance_length: null`, not flagged).
pub fn acceptance_check(
    acc: &inferbench_sim::golden::Acceptance,
    summary: &serde_json::Value,
) -> serde_json::Value {
    let measured = summary
        .pointer("/inferbench/server_metrics/spec_acceptance_length")
        .and_then(serde_json::Value::as_f64);
    let gap = measured.map(|m| m - acc.acceptance_length);
    let mut check = serde_json::json!({
        "num_speculative_tokens": acc.num_speculative_tokens,
        "target_acceptance_length": acc.acceptance_length,
        "golden": acc.golden,
        "source": acc.source,
        "measured_acceptance_length": measured,
        "acceptance_length_gap": gap,
        "flagged": gap.is_some_and(|g| g.abs() > ACCEPTANCE_GAP_FLAG * acc.acceptance_length),
    });
    // Why the row's spec-decode variant did not pick the curve (base curve used), when so.
    if let (Some(note), Some(o)) = (&acc.note, check.as_object_mut()) {
        o.insert("note".into(), note.clone().into());
    }
    check
}

/// Reads the `status.json` of every point of `jobs` under `out` (what the Slurm executor
/// gathers after the array finished): points without a marker are reported as failed with
/// cause "no result".
pub fn gather(jobs: &[JobSpec], opts: &SweepOptions) -> SweepReport {
    let mut report = SweepReport::default();
    for spec in jobs {
        let rn = runner_name_for(spec, opts)
            .unwrap_or_else(|_| artifacts::sanitize_name(&spec.row.runner));
        let rf = spec.result_filename(&rn);
        for (kind, conc, dir) in plan(spec, &rf, opts) {
            let (outcome, class, cause) = match artifacts::read_status(&dir) {
                Some(st) => match st.state {
                    PointState::Ok => (Outcome::Ok, None, None),
                    PointState::Failed => (Outcome::Failed, st.class, st.cause),
                    PointState::Interrupted => (Outcome::Interrupted, st.class, st.cause),
                },
                None => (
                    Outcome::Failed,
                    None,
                    Some(format!("no result: {} has no {STATUS_FILE}", dir.display())),
                ),
            };
            let invalid =
                outcome == Outcome::Ok && kind == PointKind::Throughput && summary_invalid(&dir);
            report.points.push(PointReport {
                index: spec.index,
                kind,
                conc,
                result_filename: rf.clone(),
                dir,
                outcome,
                class,
                cause,
                invalid,
                gpu_seconds: None,
                launch_gpu_seconds: None,
                gpu_seconds_modelled: false,
            });
        }
    }
    report
}

#[cfg(test)]
mod tests {
    /// Issue 39 (files, ingest and hints), 4: the one row-naming function names a fixed-length
    /// row by its isl, osl and concurrencies, and an AgentX row (no isl) by what identifies it:
    /// its traces, its replay duration (`--agentic-duration` over the row's `duration`, else
    /// 3,600 s) and its concurrencies.
    #[test]
    fn rows_are_named_by_what_identifies_them() {
        use super::row_name;
        let text = r#"[{"image": "i", "model": "m", "model-prefix": "m", "precision": "fp8", "framework": "vllm", "runner": "h100", "isl": 1024, "osl": 8192, "spec-decoding": "none", "tp": 4, "ep": 1, "dp-attn": false, "conc": 8, "exp-name": "x"},
            {"image": "i", "model": "m", "model-prefix": "m", "precision": "fp8", "framework": "vllm", "runner": "h100", "spec-decoding": "none", "tp": 4, "ep": 1, "dp-attn": false, "conc": 16, "exp-name": "a", "scenario-type": "agentic-coding", "duration": 1800}]"#;
        let jobs = crate::jobspec::parse_matrix(text, std::path::Path::new("m.json")).unwrap();
        let mut bench = crate::point::BenchDefaults::default();
        assert_eq!(
            row_name(&jobs[0], &bench),
            "row 0 (isl 1024, osl 8192, conc 8)"
        );
        assert_eq!(
            row_name(&jobs[1], &bench),
            "row 1 (agentic-coding: no --traces, 1800 s, conc 16)"
        );
        bench.traces = Some(std::path::PathBuf::from("cc/traces.jsonl"));
        bench.agentic_duration_s = Some(600.0);
        assert_eq!(
            row_name(&jobs[1], &bench),
            "row 1 (agentic-coding: traces cc/traces.jsonl, 600 s, conc 16)"
        );
    }

    /// Issue 39's leftovers, 3: a sweep whose `sweep.json` could not be written at its end
    /// never exits 0, and says so first.
    #[test]
    fn a_report_that_could_not_be_written_is_never_exit_0() {
        let mut r = SweepReport::default();
        assert_eq!(r.end(), inferbench_core::RunEnd::Passed);
        r.write_error = Some("res/sweep.json: No space left on device (os error 28)".into());
        assert_eq!(r.end(), inferbench_core::RunEnd::GateFailed);
        assert!(r.render().starts_with(
            "FAILED writing the sweep's report: res/sweep.json: No space left on device (os \
             error 28)\n"
        ));
    }

    use super::*;

    /// GPU time (issue 43): an engine's time outside its points is split equally over the
    /// points it served; a row's GPUs count every pool of a multinode row; sim rows cost in
    /// modelled time.
    /// The sim's busy counter read from its `/metrics` text (summed over engines), and a
    /// counter that went backwards (a restarted sim) or is missing gives no modelled time.
    #[test]
    fn the_sims_busy_counter_is_read_and_checked() {
        let text = "# TYPE inferbench_sim:busy_seconds_total counter\n\
                    inferbench_sim:busy_seconds_total{engine=\"0\",model_name=\"m\"} 12.5\n\
                    vllm:generation_tokens_total{engine=\"0\"} 9\n";
        assert_eq!(busy_in(text), Some(12.5));
        assert_eq!(busy_in("vllm:generation_tokens_total 9\n"), None);
        assert_eq!(busy_in("inferbench_sim:busy_seconds_total NaN\n"), None);
        assert_eq!(modelled_busy(2.0, 5.5), Some(3.5));
        assert_eq!(modelled_busy(5.0, 1.0), None);
    }

    #[test]
    fn gpu_seconds_split_launches_and_count_every_gpu() {
        assert_eq!(settle_overhead(10.0, 4.0, 3), 2.0);
        assert_eq!(settle_overhead(3.0, 4.0, 2), 0.0);
        assert_eq!(settle_overhead(5.0, 0.0, 0), 0.0);
        let cost = PointCost {
            gpus: 8.0,
            scale: 4.0,
        };
        assert_eq!(cost.of(2.5), 80.0);
        let spec = |text: &str| JobSpec {
            index: 0,
            row: serde_json::from_str(text).unwrap(),
        };
        let single = spec(
            r#"{"image": "i", "model": "m", "model-prefix": "m", "precision": "fp8", "framework": "vllm", "runner": "h100", "isl": 1024, "osl": 1024, "spec-decoding": "none", "tp": 4, "ep": 1, "dp-attn": false, "conc": 8, "exp-name": "x"}"#,
        );
        assert_eq!(row_gpus(&single), 4);
        let multi = spec(
            r#"{"image": "i", "model": "org/M", "model-prefix": "m", "precision": "fp8", "framework": "dynamo-sglang", "runner": "b300", "isl": 1024, "osl": 1024, "spec-decoding": "none", "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": false, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "conc": [1, 8], "exp-name": "m_1k1k", "disagg": true}"#,
        );
        assert_eq!(row_gpus(&multi), 4 + 2 * 8);
    }

    /// The eval's progress line names its threshold, and says when `--no-eval-threshold` left
    /// it unapplied (trial 8: it printed "threshold 0.90" either way).
    #[test]
    fn eval_line_says_whether_the_threshold_applies() {
        let dir = tempfile::tempdir().unwrap();
        let results = serde_json::json!({
            "results": {"gsm8k": {
                "exact_match,strict-match": 0.75, "exact_match_stderr,strict-match": 0.25,
                "exact_match,flexible-extract": 0.5, "exact_match_stderr,flexible-extract": 0.5,
            }},
            "n-samples": {"gsm8k": {"effective": 4}},
            "threshold": 0.9,
        });
        std::fs::write(
            dir.path().join("results_gsm8k.json"),
            serde_json::to_vec(&results).unwrap(),
        )
        .unwrap();
        assert_eq!(
            eval_headline(dir.path(), true),
            ", gsm8k strict-match 0.7500 ± 0.2500, flexible-extract 0.5000 ± 0.5000 (4 problems, threshold 0.90)"
        );
        assert_eq!(
            eval_headline(dir.path(), false),
            ", gsm8k strict-match 0.7500 ± 0.2500, flexible-extract 0.5000 ± 0.5000 (4 problems, threshold 0.90 not applied: --no-eval-threshold)"
        );
        assert_eq!(eval_headline(&dir.path().join("none"), true), "");
    }

    /// A point's progress line names its throughput's scope and its clock: a sim point at a
    /// time scale is in modelled time (trial 28: the sweep's line read as wall time).
    #[test]
    fn point_line_names_its_clock() {
        let dir = tempfile::tempdir().unwrap();
        let mut summary = serde_json::json!({
            "total_token_throughput": 1259.4, "duration": 8.44, "p99_ttft_ms": 34.0,
        });
        let write = |v: &serde_json::Value| {
            std::fs::write(dir.path().join("summary.json"), v.to_string()).unwrap()
        };
        write(&summary);
        assert_eq!(
            headline(dir.path()),
            ", 1259 tok/s in+out (all GPUs), TTFT p99 0.034 s, 8.4 s of wall time measured"
        );
        summary["clock"] = "modelled".into();
        write(&summary);
        assert_eq!(
            headline(dir.path()),
            ", 1259 tok/s in+out (all GPUs, modelled), TTFT p99 0.034 s, 8.4 s of modelled time \
             measured"
        );
    }
}
