//! GPU power around a run, shared by `bench` (and so sweeps) and the AgentX replay: start the
//! sampler before the first request ([`start`]), stop it after the last, then integrate
//! `power.csv` over the profiling window with InferenceX's validity rules, write
//! `power_validation.json` and give the summary's power block ([`PowerRun::finish`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use inferbench_core::summary::{PowerSummary, RunSummary};
use inferbench_telemetry::power;
use inferbench_telemetry::sampler::{PowerMode, PowerSampler};

/// A running sampler and where its results go.
pub struct PowerRun {
    sampler: PowerSampler,
    csv: PathBuf,
    validation: PathBuf,
    interval: Duration,
}

/// Starts the sampler of `mode` writing `csv` (its directory created), the validation to go to
/// `validation`. `Ok(None)` for `off`, or `auto` without any sampler (then `note` is pushed
/// to `notes` when given).
///
/// Errors: a sampler named by `mode` is missing, `require` without any sampler, or the
/// directory cannot be created.
pub async fn start(
    mode: PowerMode,
    interval: Duration,
    csv: PathBuf,
    validation: PathBuf,
    require: bool,
    notes: Option<&mut Vec<String>>,
) -> anyhow::Result<Option<PowerRun>> {
    if mode == PowerMode::Off {
        return Ok(None);
    }
    if let Some(dir) = csv.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--result-dir: cannot create {}", dir.display()))?;
    }
    let p2 = csv.clone();
    let started = tokio::task::spawn_blocking(move || PowerSampler::start(mode, interval, &p2))
        .await
        .context("power sampler start panicked")?
        .map_err(anyhow::Error::msg)?;
    match started {
        Some(sampler) => Ok(Some(PowerRun {
            sampler,
            csv,
            validation,
            interval,
        })),
        None if require => {
            anyhow::bail!("--require-power: no power sampler found (NVML, nvidia-smi, amd-smi)")
        }
        None => {
            if let (PowerMode::Auto, Some(n)) = (mode, notes) {
                n.push(NO_SAMPLER_NOTE.into());
            }
            Ok(None)
        }
    }
}

/// The note of a run whose `--power auto` found no sampler (see [`drop_sampler_note`]).
pub const NO_SAMPLER_NOTE: &str =
    "no GPU power sampler found (NVML, nvidia-smi, amd-smi): power is not measured";

/// Drops [`NO_SAMPLER_NOTE`] from `notes` where it tells the user nothing: the server is
/// `inferbench sim` (`simulator`: no GPU to measure; trial 13), or no request finished
/// (`measured` false: there was nothing to measure power for; trial 15, a run against an
/// unreachable server). The one rule of `bench`, `replay` and the sweeps' points.
pub fn drop_sampler_note(notes: &mut Vec<String>, simulator: bool, measured: bool) {
    if simulator || !measured {
        notes.retain(|n| n != NO_SAMPLER_NOTE);
    }
}

impl PowerRun {
    /// Where [`PowerRun::finish`] writes the validation sidecar.
    pub fn validation(&self) -> &Path {
        &self.validation
    }

    /// Stops the sampler, validates and integrates `power.csv` over `s`'s profiling window
    /// (`telemetry::power`, InferenceX's rules; `expected_gpus` checked when known), writes the
    /// validation sidecar with the energy-counter cross-check, and returns the summary's power
    /// block.
    pub async fn finish(self, s: &RunSummary, expected_gpus: Option<u32>) -> PowerSummary {
        let source = self.sampler.source().name().to_string();
        let (sampler, interval) = (self.sampler, self.interval);
        let _ = tokio::task::spawn_blocking(move || sampler.stop(interval)).await;
        let text = std::fs::read(&self.csv)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let window = power::BenchmarkWindow {
            start_time_unix: s.benchmark_start_time_unix.unwrap_or(f64::NAN),
            end_time_unix: s.benchmark_end_time_unix.unwrap_or(f64::NAN),
            reported_duration_s: s.duration,
            completed: s.completed,
            total_input_tokens: s.total_input_tokens,
            total_output_tokens: s.total_output_tokens,
        };
        let integration = power::integrate(
            &power::parse_csv(&text),
            window.start_time_unix,
            window.end_time_unix,
            expected_gpus.filter(|g| *g > 0),
            power::DEFAULT_MAX_SAMPLE_GAP_S,
        );
        let source_path = self.csv.display().to_string();
        let mut v = power::validation(&integration, &window, &source_path, "summary");
        v.accumulator_check = inferbench_telemetry::energy::accumulator_check(&self.csv);
        let _ = std::fs::write(
            &self.validation,
            serde_json::to_string_pretty(&v).unwrap_or_default(),
        );
        PowerSummary {
            source,
            valid: v.power_valid,
            reasons: v.reasons.clone(),
            gpus: integration.observed_gpu_ids.len(),
            metrics: power::metrics(&integration, &window)
                .map(|m| m.into_iter().map(|(k, x)| (k.to_string(), x)).collect())
                .unwrap_or_default(),
            energy_counter_j: v
                .accumulator_check
                .as_ref()
                .and_then(|c| c.accumulator_delta_j),
            energy_counter_within_tolerance: v
                .accumulator_check
                .as_ref()
                .and_then(|c| c.within_tolerance),
        }
    }
}

/// Adds InferenceX's power block to an aggregate (`agg_*.json`, the AgentX `<RF>.json`;
/// aggregate_power.py's keys): always `power_metric_schema_version` 2 and `power_valid` 1/0,
/// and when valid the metrics rounded as InferenceX rounds them.
pub fn patch_aggregate(obj: &mut serde_json::Map<String, serde_json::Value>, p: &PowerSummary) {
    obj.insert("power_metric_schema_version".into(), 2.into());
    obj.insert("power_valid".into(), i32::from(p.valid).into());
    if p.valid {
        for (k, x) in &p.metrics {
            obj.insert(k.clone(), power::round_metric(k, *x).into());
        }
    }
}
