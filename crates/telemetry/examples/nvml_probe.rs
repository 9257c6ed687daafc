//! The NVML power path on a GPU machine, as one small binary (the release `inferbench` is
//! over the device tool's 64 MiB carry limit): samples every GPU through
//! [`inferbench_telemetry::sampler`] with `--power nvml` for N seconds (default 5) at 1 s,
//! then prints `power.csv`, the energy snapshots, and the energy integrated over the middle of
//! the stream beside the counters' delta (`accumulator_check`).
//!
//! `cargo build --release -p inferbench-telemetry --example nvml_probe` then
//! `nvml_probe [SECONDS] [DIR]`. Exit 2 when NVML is missing.

use std::time::Duration;

use inferbench_telemetry::{energy, power, sampler};

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let dir = std::path::PathBuf::from(std::env::args().nth(2).unwrap_or_else(|| ".".into()));
    let path = dir.join("power.csv");
    let interval = Duration::from_secs(1);
    let s = match sampler::PowerSampler::start(sampler::PowerMode::Nvml, interval, &path) {
        Ok(Some(s)) => s,
        Ok(None) => unreachable!("nvml mode never returns None"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let t0 = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    std::thread::sleep(Duration::from_secs(secs));
    let t1 = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    s.stop(interval);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    println!("== {}\n{text}", path.display());
    let (a, b) = energy::snapshot_paths(&path);
    for p in [&a, &b] {
        println!(
            "== {}\n{}",
            p.display(),
            std::fs::read_to_string(p).unwrap_or_default()
        );
    }
    let csv = power::parse_csv(&text);
    let i = power::integrate(&csv, t0, t1, None, power::DEFAULT_MAX_SAMPLE_GAP_S);
    println!(
        "window {:.3} s: valid {}, reasons {:?}, per-GPU energy {:?} J",
        t1 - t0,
        i.valid(),
        i.reasons,
        i.per_gpu_energy_j
    );
    println!(
        "accumulator_check: {}",
        serde_json::to_string_pretty(&energy::accumulator_check(&path)).unwrap_or_default()
    );
}
