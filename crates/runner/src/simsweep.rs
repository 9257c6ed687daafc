//! A concurrency sweep against the simulator started in this process (`inferbench quickstart`).
//! Each concurrency is one single-node `sim` matrix row, run through [`run_jobs`] against the
//! sim's URL by [`LoadgenPoint`] in modelled time, so its point is named, run and written as
//! every sweep's is: `RESULT_FILENAME` and the InferenceX identity from [`JobSpec`], `job.json`
//! and `status.json` from the sweep, compressed records, the sim's start line as `server.log`.

use inferbench_core::point::DP_ATTN_KEY;
use std::path::Path;
use std::time::{Duration, Instant};

use inferbench_core::summary::RunSummary;
use inferbench_sim::SimConfig;
use tokio_util::sync::CancellationToken;

use crate::bench::LoadgenPoint;
use crate::jobspec::JobSpec;
use crate::point::BenchDefaults;
use crate::sweep::{run_jobs, Outcome, PointReport, SweepOptions, SweepReport};

/// A fixed-sequence sweep of the in-process simulator: random prompts of exactly `isl` tokens
/// asking for exactly `osl`, `prompts_per_conc × conc` prompts after `warmups_per_conc × conc`
/// warmups at each concurrency.
#[derive(Debug, Clone)]
pub struct SimSweep {
    /// The simulated server: hardware, model, precision, TP, time scale (results are rewritten
    /// in modelled time), max-num-seqs, seed (also the prompts' seed).
    pub sim: SimConfig,
    /// Concurrencies, in run order.
    pub concurrency: Vec<u32>,
    /// Input length, tokens.
    pub isl: u32,
    /// Output length, tokens.
    pub osl: u32,
    /// Prompts per unit of concurrency.
    pub prompts_per_conc: u32,
    /// Warmup requests per unit of concurrency.
    pub warmups_per_conc: u32,
}

/// The simulated hardware's and model's keys as the store names them (`h100`, `llama3.1-8b`):
/// what a sim row's `runner` and `model-prefix` hold. Errors: a hardware or model name the
/// sim's catalogue does not know.
pub fn store_keys(sim: &SimConfig) -> anyhow::Result<(String, String)> {
    let cat = inferbench_sim::Catalogue::embedded();
    let hw = cat.hardware(&sim.hardware)?.name.to_ascii_lowercase();
    let model = cat.model(&sim.model)?.name.to_ascii_lowercase();
    Ok((hw, model.replace("llama-", "llama")))
}

/// One single-node `sim` matrix row per concurrency of `concs` (index = its position): image
/// `inferbench-sim:<version>`, the served model name, the store's model prefix and hardware
/// key (as runner), precision, TP, EP 1, no DP attention, disaggregation or speculative
/// decoding, plus the scenario's own keys from `fields(sim info, model prefix)`. Errors: the
/// sim configuration is invalid, or a row that does not read as a matrix row.
fn sim_rows(
    sim: &SimConfig,
    concs: &[u32],
    fields: impl Fn(&inferbench_sim::SimInfo, &str) -> serde_json::Value,
) -> anyhow::Result<Vec<JobSpec>> {
    let info = inferbench_sim::describe(sim)?;
    let (hw, prefix) = store_keys(sim)?;
    let mut jobs = Vec::new();
    for (index, &conc) in concs.iter().enumerate() {
        let mut row = serde_json::json!({
            "image": format!("inferbench-sim:{}", env!("CARGO_PKG_VERSION")),
            "model": info.served_model_name, "model-prefix": prefix,
            "precision": sim.precision.as_str(), "framework": "sim", "runner": hw,
            "tp": sim.tp, "ep": 1, DP_ATTN_KEY: false, "disagg": false,
            "spec-decoding": "none", "conc": conc,
        });
        if let (Some(r), serde_json::Value::Object(extra)) =
            (row.as_object_mut(), fields(&info, &prefix))
        {
            r.extend(extra);
        }
        jobs.push(JobSpec {
            index,
            row: serde_json::from_value(row)?,
        });
    }
    Ok(jobs)
}

impl SimSweep {
    /// The matrix rows, one per concurrency (index = its position): framework `sim`, runner
    /// the hardware key, exp-name `qs-<model prefix>-<isl>-<osl>`, image
    /// `inferbench-sim:<version>`, the served model name, TP, EP 1, no DP attention,
    /// disaggregation or speculative decoding. Errors: the sim configuration is invalid.
    pub fn jobs(&self) -> anyhow::Result<Vec<JobSpec>> {
        sim_rows(&self.sim, &self.concurrency, |info, prefix| {
            serde_json::json!({
                "isl": self.isl, "osl": self.osl, "max-model-len": info.max_model_len,
                "exp-name": format!("qs-{prefix}-{}-{}", self.isl, self.osl),
            })
        })
    }

    /// Starts the simulator, runs [`SimSweep::jobs`] one point at a time into `run_dir`
    /// (`<run_dir>/<RESULT_FILENAME>/`, each `job.json` naming `sweep_id`, the store's batch)
    /// and stops the sim. Prints to stderr the sim's start line and what the sweep sends, then
    /// one line per point ([`point_line`]). Cancelling `cancel` cuts the current point short
    /// (it keeps its artifacts) and runs no other. Failed points are in the report, not
    /// errors. Errors: an invalid sim configuration, a sim that cannot start, or a `run_dir`
    /// that cannot be written.
    pub async fn run(
        &self,
        run_dir: &Path,
        sweep_id: &str,
        cancel: &CancellationToken,
    ) -> anyhow::Result<SweepReport> {
        let jobs = self.jobs()?;
        let info = inferbench_sim::describe(&self.sim)?;
        let start_line = inferbench_sim::start_line(&self.sim, &info);
        let k = self.sim.time_scale;
        inferbench_core::notice::line(&start_line);
        inferbench_core::notice::line(&format!(
            "  (time scale {k}: the sim runs {k}x faster than the modelled hardware; every time \
             below is rescaled to the modelled hardware's)"
        ));
        inferbench_core::notice::line(&format!(
            "  random dataset: ISL {} / OSL {} tokens (exact lengths), {} prompt(s) and {} \
             warmup(s) per unit of concurrency, at conc {:?}",
            self.isl, self.osl, self.prompts_per_conc, self.warmups_per_conc, self.concurrency
        ));
        let bench = BenchDefaults {
            prompts_per_conc: self.prompts_per_conc,
            warmups_per_conc: self.warmups_per_conc,
            range_ratio: 1.0,
            seed: self.sim.seed,
            ..BenchDefaults::default()
        };
        let server = serde_json::json!({
            "hardware": self.sim.hardware, "model": self.sim.model,
            "precision": self.sim.precision.as_str(), "tp": self.sim.tp,
            "max_num_seqs": self.sim.max_num_seqs, "time_scale": self.sim.time_scale,
            "kv_capacity_tokens": info.kv_capacity_tokens,
        });
        let target = SimTarget::start(&self.sim, start_line, run_dir, sweep_id, server, bench)?;
        let runner = LoadgenPoint {
            sim_time_scale: Some(self.sim.time_scale),
            indented_notes: true,
            ..LoadgenPoint::default()
        };
        let mut report = SweepReport::default();
        (target.run_each(&jobs, &runner, cancel, |pt, took| {
            inferbench_core::notice::line(&format!(
                "  conc {:>3}: {}",
                pt.conc,
                point_line(&pt, took)
            ));
            report.points.push(pt);
        }))
        .await;
        Ok(report)
    }
}

/// The agentic quickstart's sweep: the built-in AgentX sessions (sub-agents, compaction)
/// replayed for `duration` at each lane count of `lanes` against the simulator started in this
/// process (64-token KV blocks, prefix caching, real time), each lane count one
/// `agentic-coding` matrix row run through [`run_jobs`] as any sweep's. Every point is invalid
/// (far below AgentX's 900 s).
#[derive(Debug, Clone)]
pub struct AgenticSimSweep {
    /// The simulated server (hardware, model, precision, TP, seed).
    pub sim: SimConfig,
    /// Lane counts, in run order.
    pub lanes: Vec<u32>,
    /// Replay duration per point.
    pub duration: Duration,
}

/// What [`AgenticSimSweep::run`] did.
#[derive(Debug, Clone, Default)]
pub struct AgenticSweepReport {
    /// How the sweep ended ([`SweepReport::end`]: interrupted, or a point failed).
    pub end: inferbench_core::RunEnd,
    /// Lane counts whose replay did not run its course (Ctrl-C, an abort): never on a preview.
    pub cut_short: Vec<i64>,
}

impl AgenticSimSweep {
    /// The built-in sessions every point replays (the `quickstart` shape, seed 42): what
    /// [`AgenticSimSweep::run`] writes to `traces.jsonl`, for the caller's up-front checks of
    /// their lanes' load.
    pub fn sessions() -> Vec<inferbench_workload::agentx::Trace> {
        inferbench_workload::agentx::synthetic::shaped("quickstart", None, 42)
    }

    /// The matrix rows, one per lane count (index = its position): `agentic-coding` rows of
    /// framework `sim`, runner the hardware key, exp-name `qs-agentic-<model prefix>`, image
    /// `inferbench-sim:<version>`, the served model name, TP, EP 1, no DP attention, KV
    /// offloading, disaggregation or speculative decoding, `duration` the replay's seconds.
    /// Errors: the sim configuration is invalid.
    pub fn jobs(&self) -> anyhow::Result<Vec<JobSpec>> {
        sim_rows(&self.sim, &self.lanes, |_, prefix| {
            serde_json::json!({
                "pp": 1, "dcp-size": 1, "pcp-size": 1, "kv-offloading": "none",
                "duration": self.duration.as_secs(),
                "scenario-type": inferbench_core::summary::agentic::SCENARIO_TYPE,
                "exp-name": format!("qs-agentic-{prefix}"),
            })
        })
    }

    /// Starts the sim, writes the built-in sessions to `<run_dir>/traces.jsonl` and replays
    /// them at each lane count through [`run_jobs`], as a sweep of `agentic-coding` rows runs
    /// (one artifact directory per point under `run_dir`: summary, compressed records, the
    /// AIPerf/InferenceX artifacts, `job.json` naming `sweep_id`, `status.json`, the sim's
    /// start line as `server.log`), and stops the sim. Prints to stderr the sim's start line,
    /// what is replayed, and one line per point ([`agentic_point_line`]). Cancelling `cancel`
    /// cuts the current point short and runs no other. Errors: an invalid sim configuration,
    /// a sim that cannot start, or files that cannot be written.
    pub async fn run(
        &self,
        run_dir: &Path,
        sweep_id: &str,
        cancel: &CancellationToken,
    ) -> anyhow::Result<AgenticSweepReport> {
        let cfg = &self.sim;
        let jobs = self.jobs()?;
        let info = inferbench_sim::describe(cfg)?;
        let traces = Self::sessions();
        let n_req: usize = traces.iter().map(|t| t.request_count()).sum();
        // The sessions reach the points as every sweep's traces do, through a file; it stays
        // with the run as the record of what was replayed.
        std::fs::create_dir_all(run_dir)?;
        let traces_path = run_dir.join("traces.jsonl");
        let mut w = std::io::BufWriter::new(std::fs::File::create(&traces_path)?);
        inferbench_workload::agentx::synthetic::write_jsonl(&traces, &mut w)?;
        std::io::Write::flush(&mut w)?;
        let start_line = inferbench_sim::start_line(cfg, &info);
        inferbench_core::notice::line(&start_line);
        inferbench_core::notice::line(&format!(
            "  AgentX replay of {} built-in sessions ({n_req} requests, sub-agents, compaction), {} s \
             per point at {:?} lanes; real time (time scale 1)",
            traces.len(),
            self.duration.as_secs_f64(),
            self.lanes
        ));
        // The legend of the per-point lines below, where the figure is (trial 15: it was
        // explained under the stdout table, which does not show it).
        inferbench_core::notice::line(
            "  theoretical hit = share of prompt blocks already sent earlier in the session \
             (the best a prefix cache can do)",
        );
        let bench = BenchDefaults {
            traces: Some(traces_path),
            agentic_duration_s: Some(self.duration.as_secs_f64()),
            agentic_grace_s: Some(5.0),
            agentic_warmup_per_lane: Some(2),
            seed: 42,
            ..BenchDefaults::default()
        };
        let server = serde_json::json!({
            "hardware": cfg.hardware, "model": cfg.model,
            "precision": cfg.precision.as_str(), "tp": cfg.tp, "time_scale": 1,
            "kv_capacity_tokens": info.kv_capacity_tokens,
        });
        let target = SimTarget::start(cfg, start_line, run_dir, sweep_id, server, bench)?;
        let runner = LoadgenPoint {
            // Real time: nothing is rescaled, but no GPU power is sampled.
            sim_time_scale: Some(1.0),
            indented_notes: true,
            ..LoadgenPoint::default()
        };
        let mut report = AgenticSweepReport::default();
        let mut points = SweepReport::default();
        (target.run_each(&jobs, &runner, cancel, |pt, took| {
            // A point cut short says so on its line, as a fixed-length point's does (trial 26).
            let cut = if pt.outcome == Outcome::Interrupted {
                " (cut short by the interruption)"
            } else {
                ""
            };
            inferbench_core::notice::line(&format!(
                "  lanes {:>2}: {}{cut}",
                pt.conc,
                agentic_point_line(&pt, took)
            ));
            if matches!(pt.outcome, Outcome::Interrupted | Outcome::Failed) {
                report.cut_short.push(i64::from(pt.conc));
            }
            points.points.push(pt);
        }))
        .await;
        report.end = points.end();
        Ok(report)
    }
}

/// The simulator a quickstart sweep runs against, started in this process, and the sweep
/// options that point at it.
struct SimTarget {
    sim: inferbench_sim::SimHandle,
    /// `server.log` in the run directory: the sim's start line, which the sweep copies into
    /// every point; removed when the sweep ends.
    log: std::path::PathBuf,
    opts: SweepOptions,
}

impl SimTarget {
    /// Starts the sim of `cfg`, writes its `start_line` as the run's `server.log`, and builds
    /// the options of a sweep into `run_dir` against it: runner `<hardware>-sim`, no sweep
    /// report, id `sweep_id`, `server` as the job's `{"sim": …}` description, `bench`.
    /// Errors: a sim that cannot start, a log that cannot be written.
    fn start(
        cfg: &SimConfig,
        start_line: String,
        run_dir: &Path,
        sweep_id: &str,
        server: serde_json::Value,
        bench: BenchDefaults,
    ) -> anyhow::Result<Self> {
        let (hw, _) = store_keys(cfg)?;
        let sim = inferbench_sim::spawn(cfg.clone())?;
        let log = run_dir.join("server.log");
        std::fs::write(&log, start_line + "\n")?;
        let opts = SweepOptions {
            out_dir: run_dir.to_path_buf(),
            runner_name: Some(format!("{hw}-sim")),
            base_url: Some(sim.base_url()),
            bench,
            write_report: false,
            sweep_id: Some(sweep_id.to_string()),
            server: Some(serde_json::json!({ "sim": server })),
            server_log: Some(log.clone()),
            ..SweepOptions::default()
        };
        Ok(SimTarget { sim, log, opts })
    }

    /// Runs `jobs` one at a time through `runner` (none after a cancelled one), handing each
    /// point to `each` with the wall time since its job started, then stops the sim.
    async fn run_each(
        self,
        jobs: &[JobSpec],
        runner: &LoadgenPoint,
        cancel: &CancellationToken,
        mut each: impl FnMut(PointReport, Duration),
    ) {
        for (i, job) in jobs.iter().enumerate() {
            let t0 = Instant::now();
            let one = run_jobs(std::slice::from_ref(job), &self.opts, runner, cancel).await;
            for pt in one.points {
                each(pt, t0.elapsed());
            }
            if cancel.is_cancelled() {
                // The points never started are named, as `sweep` names them (trial 25: an
                // interrupted quickstart said nothing of conc 8…64).
                let rest: Vec<String> = (jobs[i + 1..].iter())
                    .flat_map(|j| j.row.conc.values())
                    .map(|c| c.to_string())
                    .collect();
                if !rest.is_empty() {
                    let what = if job.is_agentic() { "lanes" } else { "conc" };
                    inferbench_core::notice::line(&format!(
                        "  {what} {}: not started (the run was interrupted)",
                        rest.join(", ")
                    ));
                }
                break;
            }
        }
        self.sim.shutdown();
        std::fs::remove_file(&self.log).ok();
    }
}

/// An agentic point's progress line (after `lanes N: `) from its `summary.json` and its AIPerf
/// export: requests ok and failed, tok/s in+out over all GPUs, p90 E2E-normalized interactivity
/// (tok/s/user), the theoretical prefix-cache hit, and the wall time `took` with the warmup;
/// the sweep's cause when the point left no summary.
pub fn agentic_point_line(pt: &PointReport, took: Duration) -> String {
    let summary = std::fs::read_to_string(pt.dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<RunSummary>(&t).ok());
    let Some(s) = summary else {
        return format!("failed: {}", pt.cause.as_deref().unwrap_or("no summary"));
    };
    let hit = std::fs::read_to_string(pt.dir.join("aiperf_artifacts/profile_export_aiperf.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.pointer("/theoretical_prefix_cache_hit/avg")?.as_f64());
    format!(
        "{} ok, {} failed, {:.0} tok/s in+out (all GPUs), p90 E2E-norm interactivity {:.1} \
         tok/s/user, theoretical hit {}, took {:.1} s with the warmup",
        s.completed,
        s.inferbench.failed,
        s.total_token_throughput,
        s.inferbench
            .e2e_normalized_interactivity
            .get("p90")
            .copied()
            .flatten()
            .unwrap_or(f64::NAN),
        hit.map_or("n/a".into(), |h| format!("{h:.1} %")),
        took.as_secs_f64()
    )
}

/// The store's batch of a quickstart run: `quickstart-<run directory name>`.
pub fn sweep_id(run_dir: &Path) -> String {
    let name = run_dir.file_name().unwrap_or_default().to_string_lossy();
    format!("quickstart-{name}")
}

/// A point's progress line (after `conc N: `) from its `summary.json`, in modelled time:
/// requests ok and failed, whether it was cut short, tok/s in+out, p99 TTFT in s, and the wall
/// time `took`; the sweep's cause when the point left no summary.
pub fn point_line(pt: &PointReport, took: Duration) -> String {
    let summary = std::fs::read_to_string(pt.dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<RunSummary>(&t).ok());
    let Some(s) = summary else {
        return format!("failed: {}", pt.cause.as_deref().unwrap_or("no summary"));
    };
    let cut = match (
        s.inferbench.cancelled_by_user,
        s.inferbench.requests_not_sent,
    ) {
        (0, 0) => String::new(),
        (c, n) => format!(" ({c} cancelled, {n} not sent: cut short)"),
    };
    if s.completed == 0 {
        // Trial 13: "0 tok/s, TTFT p99 0.000 s" for a point where nothing was measured.
        return format!(
            "{} ok, {} failed{cut}: nothing measured, took {:.1} s of wall time",
            s.completed,
            s.inferbench.failed,
            took.as_secs_f64()
        );
    }
    format!(
        "{} ok, {} failed{cut}, {:.0} tok/s in+out (all GPUs, modelled), TTFT p99 {:.3} s, \
         took {:.1} s of wall time",
        s.completed,
        s.inferbench.failed,
        s.total_token_throughput,
        s.metric("p99_ttft_ms").unwrap_or(f64::NAN) / 1000.0,
        took.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows name their points as the quickstart always did, through the runner's
    /// RESULT_FILENAME.
    #[test]
    fn rows_give_the_quickstart_result_filenames() {
        let s = SimSweep {
            sim: SimConfig {
                hardware: "h100".into(),
                max_num_seqs: 16,
                time_scale: 8.0,
                ..SimConfig::default()
            },
            concurrency: vec![1, 64],
            isl: 512,
            osl: 64,
            prompts_per_conc: 2,
            warmups_per_conc: 0,
        };
        let jobs = s.jobs().unwrap();
        let names: Vec<String> = jobs.iter().map(|j| j.result_filename("h100-sim")).collect();
        assert_eq!(
            names,
            [
                "qs-llama3.1-8b-512-64_bf16_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc1_h100-sim",
                "qs-llama3.1-8b-512-64_bf16_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc64_h100-sim",
            ]
        );
        assert_eq!((jobs[1].index, jobs[1].row.runner.as_str()), (1, "h100"));
        assert_eq!(
            store_keys(&s.sim).unwrap(),
            ("h100".into(), "llama3.1-8b".into())
        );
        let bad = SimConfig {
            hardware: "no-such-gpu".into(),
            ..SimConfig::default()
        };
        assert!(store_keys(&bad).is_err());
    }
}
