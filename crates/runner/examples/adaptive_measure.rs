//! `cargo run -p inferbench-runner --example adaptive_measure -- FULL_OUT ADAPTIVE_OUT`: issue
//! 43's measure (`adaptive::measure_dirs`) between a full-list sweep's `--out` and an adaptive
//! sweep's, one line per frontier group, and each `sweep.json`'s top-level `gpu_seconds` with
//! the saved fraction. Used by `scripts/adaptive-savings.sh`. Exit 0 when every group passes
//! (within 3 % over ≥ 90 % of the interactivity range), 1 when one does not, 2 on bad
//! arguments or a missing `sweep.json`.

use std::path::PathBuf;
use std::process::ExitCode;

use inferbench_runner::adaptive::{measure_dirs, MATCH_FRACTION, MATCH_TOLERANCE};

fn gpu_seconds(out: &std::path::Path) -> Option<f64> {
    let text = std::fs::read(out.join("sweep.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    v["gpu_seconds"].as_f64()
}

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [full, adaptive] = args.as_slice() else {
        eprintln!("usage: adaptive_measure FULL_OUT ADAPTIVE_OUT");
        return ExitCode::from(2);
    };
    let (Some(gf), Some(ga)) = (gpu_seconds(full), gpu_seconds(adaptive)) else {
        eprintln!("adaptive_measure: each directory needs a sweep.json with gpu_seconds");
        return ExitCode::from(2);
    };
    println!("full list: {gf:.1} GPU-s; adaptive: {ga:.1} GPU-s");
    if gf > 0.0 {
        println!(
            "saved: {:.1} % of the full list's GPU-seconds",
            100.0 * (1.0 - ga / gf)
        );
    }
    let mut ok = true;
    for (group, m) in measure_dirs(full, adaptive, MATCH_TOLERANCE) {
        match m {
            Some(m) => {
                println!(
                    "group {group}: within {:.0} % over {:.1} % of interactivity {:.1}..{:.1} (pass at {:.0} %: {}), worst gap {:.2} %, adaptive frontier missing over {:.1} %",
                    100.0 * m.tolerance,
                    100.0 * m.within_fraction,
                    m.x_range.0,
                    m.x_range.1,
                    100.0 * MATCH_FRACTION,
                    if m.passes() { "yes" } else { "no" },
                    100.0 * m.worst_gap,
                    100.0 * m.missing_fraction
                );
                ok &= m.passes();
            }
            None => {
                println!("group {group}: the full list has no valid point");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
