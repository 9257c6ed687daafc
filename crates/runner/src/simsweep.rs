//! A concurrency sweep against the simulator started in this process (`inferbench quickstart`).
//! Each concurrency is one single-node `sim` matrix row, run through [`run_jobs`] against the
//! sim's URL by [`LoadgenPoint`] in modelled time, so its point is named, run and written as
//! every sweep's is: `RESULT_FILENAME` and the InferenceX identity from [`JobSpec`], `job.json`
//! and `status.json` from the sweep, compressed records, the sim's start line as `server.log`.

use std::path::Path;
use std::time::{Duration, Instant};

use inferbench_core::summary::RunSummary;
use inferbench_sim::SimConfig;
use tokio_util::sync::CancellationToken;

use crate::bench::LoadgenPoint;
use crate::jobspec::JobSpec;
use crate::point::BenchDefaults;
use crate::sweep::{run_jobs, PointReport, SweepOptions, SweepReport};

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

impl SimSweep {
    /// The matrix rows, one per concurrency (index = its position): framework `sim`, runner
    /// the hardware key, exp-name `qs-<model prefix>-<isl>-<osl>`, image
    /// `inferbench-sim:<version>`, the served model name, TP, EP 1, no DP attention,
    /// disaggregation or speculative decoding. Errors: the sim configuration is invalid.
    pub fn jobs(&self) -> anyhow::Result<Vec<JobSpec>> {
        let info = inferbench_sim::describe(&self.sim)?;
        let (hw, prefix) = store_keys(&self.sim)?;
        let mut jobs = Vec::new();
        for (index, &conc) in self.concurrency.iter().enumerate() {
            let row = serde_json::json!({
                "image": format!("inferbench-sim:{}", env!("CARGO_PKG_VERSION")),
                "model": info.served_model_name, "model-prefix": prefix,
                "precision": self.sim.precision.as_str(), "framework": "sim", "runner": hw,
                "isl": self.isl, "osl": self.osl, "max-model-len": info.max_model_len,
                "tp": self.sim.tp, "ep": 1, "dp-attn": false, "disagg": false,
                "spec-decoding": "none", "conc": conc,
                "exp-name": format!("qs-{prefix}-{}-{}", self.isl, self.osl),
            });
            let row = serde_json::from_value(row)?;
            jobs.push(JobSpec { index, row });
        }
        Ok(jobs)
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
        let (hw, _) = store_keys(&self.sim)?;
        let info = inferbench_sim::describe(&self.sim)?;
        let start_line = inferbench_sim::start_line(&self.sim, &info);
        let k = self.sim.time_scale;
        eprintln!("{start_line}");
        eprintln!(
            "  (time scale {k}: the sim runs {k}x faster than the modelled hardware; every time \
             below is rescaled to the modelled hardware's)"
        );
        eprintln!(
            "  random dataset: ISL {} / OSL {} tokens (exact lengths), {} prompt(s) and {} \
             warmup(s) per unit of concurrency, at conc {:?}",
            self.isl, self.osl, self.prompts_per_conc, self.warmups_per_conc, self.concurrency
        );
        let sim = inferbench_sim::spawn(self.sim.clone())?;
        // The in-process sim's log is its start line; the sweep copies it into every point.
        let log = run_dir.join("server.log");
        std::fs::write(&log, start_line + "\n")?;
        let opts = SweepOptions {
            out_dir: run_dir.to_path_buf(),
            runner_name: Some(format!("{hw}-sim")),
            base_url: Some(sim.base_url()),
            bench: BenchDefaults {
                prompts_per_conc: self.prompts_per_conc,
                warmups_per_conc: self.warmups_per_conc,
                range_ratio: 1.0,
                seed: self.sim.seed,
                ..BenchDefaults::default()
            },
            write_report: false,
            sweep_id: Some(sweep_id.to_string()),
            server: Some(serde_json::json!({"sim": {
                "hardware": self.sim.hardware, "model": self.sim.model,
                "precision": self.sim.precision.as_str(), "tp": self.sim.tp,
                "max_num_seqs": self.sim.max_num_seqs, "time_scale": self.sim.time_scale,
                "kv_capacity_tokens": info.kv_capacity_tokens,
            }})),
            server_log: Some(log.clone()),
            ..SweepOptions::default()
        };
        let runner = LoadgenPoint {
            sim_time_scale: Some(self.sim.time_scale),
            indented_notes: true,
            ..LoadgenPoint::default()
        };
        let mut report = SweepReport::default();
        for job in &jobs {
            let t0 = Instant::now();
            let one = run_jobs(std::slice::from_ref(job), &opts, &runner, cancel).await;
            for pt in one.points {
                eprintln!("  conc {:>3}: {}", pt.conc, point_line(&pt, t0.elapsed()));
                report.points.push(pt);
            }
            if cancel.is_cancelled() {
                break;
            }
        }
        sim.shutdown();
        std::fs::remove_file(&log).ok();
        Ok(report)
    }
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
    format!(
        "{} ok, {} failed{cut}, {:.0} tok/s in+out (modelled), TTFT p99 {:.3} s, took {:.1} s \
         of wall time",
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
