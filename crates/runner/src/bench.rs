//! [`LoadgenPoint`]: the real [`PointRunner`], one `inferbench_loadgen::run_bench` per point with
//! InferenceX's client settings (reference/inferencex-producer.md §5.3): random dataset at the
//! row's ISL/OSL, range ratio, `ignore_eos`, unlimited rate, `--max-concurrency conc`,
//! `10 × conc` prompts and `2 × conc` warmups, percentiles of ttft, tpot, itl, e2el, and the
//! InferenceX job identity so the aggregate `agg_<RESULT_FILENAME>.json` is produced.
//!
//! Request records stream to `requests.jsonl` while the point runs (nothing is lost if the
//! process dies) and are compressed to `requests.jsonl.zst` when it ends.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use inferbench_core::summary::JobIdentity;
use inferbench_loadgen::{run_bench, BenchOptions, ProgressMode, EXIT_ERROR_RATE};
use tokio_util::sync::CancellationToken;

use crate::point::{PointOutput, PointRequest, PointRunner};

/// Runs points with the load generator.
#[derive(Debug, Clone, Default)]
pub struct LoadgenPoint {
    /// Show the live progress bar (off in tests and under Slurm).
    pub progress: bool,
}

/// `BenchOptions` for a point (public so the CLI and tests can show exactly what is run).
pub fn bench_options(req: &PointRequest) -> BenchOptions {
    let env: BTreeMap<String, String> = req
        .spec
        .env_contract(&req.runner_name, req.conc, 0, &req.dir)
        .into_iter()
        .collect();
    // Multinode rows need PREFILL_GPUS/DECODE_GPUS, which only the engine knows: no aggregate.
    let identity = JobIdentity::from_lookup(|k| env.get(k).cloned()).ok();
    let b = &req.bench;
    BenchOptions {
        base_url: req.base_url.clone(),
        endpoint: Some(b.endpoint.clone()),
        model: req.model.clone(),
        random_input_len: req.isl,
        random_output_len: req.osl,
        random_range_ratio: Some(b.range_ratio),
        tokenizer: b.tokenizer.clone().unwrap_or_else(|| "o200k_base".into()),
        ignore_eos: b.ignore_eos,
        seed: b.seed,
        max_concurrency: Some(req.conc),
        request_rate: None,
        num_prompts: Some(u64::from(req.num_prompts)),
        num_warmups: Some(u64::from(req.num_warmups)),
        request_timeout: b.request_timeout_s.map(std::time::Duration::from_secs_f64),
        save_result: true,
        result_dir: Some(req.dir.clone()),
        result_filename: Some("summary.json".into()),
        save_requests: Some(req.dir.join("requests.jsonl")),
        job_identity: identity,
        progress: ProgressMode::Off,
        ..BenchOptions::default()
    }
}

impl PointRunner for LoadgenPoint {
    async fn run_point(
        &self,
        req: &PointRequest,
        cancel: &CancellationToken,
    ) -> anyhow::Result<PointOutput> {
        anyhow::ensure!(
            !req.spec.is_agentic(),
            "agentic-coding rows need AgentX trace replay, which `sweep` does not drive yet"
        );
        let mut opts = bench_options(req);
        if self.progress {
            opts.progress = ProgressMode::Auto;
        }
        let max_error_rate = opts.max_error_rate;
        let outcome = run_bench(opts, cancel.clone()).await?;
        for note in &outcome.notes {
            tracing::warn!("{}: {note}", req.result_filename);
        }
        let plain = req.dir.join("requests.jsonl");
        if plain.exists() {
            compress(&plain, &req.dir.join("requests.jsonl.zst"))
                .with_context(|| format!("compressing {}", plain.display()))?;
            std::fs::remove_file(&plain).ok();
        }
        let aggregate = match &outcome.aggregate_path {
            Some(p) => Some(serde_json::from_str(
                &std::fs::read_to_string(p).with_context(|| p.display().to_string())?,
            )?),
            None => None,
        };
        Ok(PointOutput {
            summary: serde_json::to_value(&outcome.summary)?,
            aggregate,
            completed: outcome.summary.completed,
            failed: outcome.summary.inferbench.failed,
            interrupted: outcome.interrupted && cancel.is_cancelled(),
            gate: (outcome.exit_code == EXIT_ERROR_RATE).then(|| {
                // The loadgen's own words when the gate was not the error rate (nothing
                // measured, --max-anomaly-rate).
                let other = outcome.notes.iter().find(|n| {
                    n.starts_with("nothing was measured") || n.starts_with("anomaly rate")
                });
                match other {
                    Some(n) => format!("{n}{}", first_error(&outcome.records)),
                    None => format!(
                        "{} of {} requests failed (more than the {:.0} % allowed){}",
                        outcome.summary.inferbench.failed,
                        outcome.summary.num_prompts,
                        max_error_rate * 100.0,
                        first_error(&outcome.records)
                    ),
                }
            }),
        })
    }
}

/// `; first error: <class>: <message>` of the first failed profile request, or empty.
fn first_error(records: &[inferbench_core::RequestRecord]) -> String {
    records
        .iter()
        .find_map(|r| {
            let class = r.error_class?;
            Some(format!(
                "; first error: {}: {}",
                class.as_str(),
                r.error.as_deref().unwrap_or("")
            ))
        })
        .unwrap_or_default()
}

/// zstd (level 3) of `src` into `dst`, via a temporary file renamed into place.
pub fn compress(src: &Path, dst: &Path) -> std::io::Result<()> {
    let tmp = dst.with_extension("zst.tmp");
    {
        let mut input = std::fs::File::open(src)?;
        let out = std::fs::File::create(&tmp)?;
        let mut enc = zstd::Encoder::new(out, 3)?;
        std::io::copy(&mut input, &mut enc)?;
        enc.finish()?.sync_all()?;
    }
    std::fs::rename(&tmp, dst)
}
