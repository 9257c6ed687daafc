//! Synthetic stored runs for benchmarks (the store's frontier and the dashboard's API at
//! 100,000 points; docs/perf/store.md, docs/performance.md). Deterministic: the same arguments
//! give the same run.

use std::collections::BTreeMap;

use crate::{ConfigKey, PointData, RunData, SourceKind};

/// Run number `run` of a synthetic database: 1,000 points of `model` on `isl`/`osl`, one per
/// (8 hardware × 5 frameworks = 40 groups) × 5 TP values × 5 concurrencies (4 … 1024), fp8,
/// image tag `img:{run % 8}`, dated `2026-01-{run % 28 + 1}`, batch `synthetic-{run}`. Each
/// point has median interactivity ≈ 200 / (1 + conc/16) tok/s/user and tok/s/GPU ≈ 100 ·
/// conc / TP, both with a ±10 % deterministic ripple, output and input tok/s/GPU half of it,
/// `p99_ttft` = conc / 100 s and `median_e2el` = conc / 10 s.
pub fn run(run: usize, model: &str, isl: i64, osl: i64) -> RunData {
    let hws = [
        "h100", "h200", "b200", "b300", "gb200", "mi300x", "mi325x", "mi355x",
    ];
    let fws = ["vllm", "sglang", "trt", "atom", "dynamo-sglang"];
    let points = (0..1000usize)
        .map(|i| {
            let (hw, fw) = (hws[i % 8], fws[(i / 8) % 5]);
            let tp = [1, 2, 4, 8, 16][(i / 40) % 5];
            let conc = [4, 16, 64, 256, 1024][(i / 200) % 5];
            let seed = (run * 1000 + i) as f64;
            let x = 200.0 / (1.0 + conc as f64 / 16.0) * (1.0 + (seed * 0.37).sin() * 0.1);
            let y = 100.0 * conc as f64 / tp as f64 * (1.0 + (seed * 0.73).cos() * 0.1);
            PointData {
                config: ConfigKey {
                    model: model.into(),
                    hardware: hw.into(),
                    framework: fw.into(),
                    precision: "fp8".into(),
                    spec_decoding: "none".into(),
                    tp,
                    pp: 1,
                    dcp: 1,
                    pcp: 1,
                    ep: 1,
                    prefill_tp: tp,
                    prefill_ep: 1,
                    decode_tp: tp,
                    decode_ep: 1,
                    num_prefill_gpu: tp,
                    num_decode_gpu: tp,
                    kv_offload: "off".into(),
                    scenario: "fixed_seq_len".into(),
                    isl,
                    osl,
                    image: format!("img:{}", run % 8),
                    ..Default::default()
                },
                conc,
                date: format!("2026-01-{:02}", run % 28 + 1),
                metrics: BTreeMap::from([
                    ("median_intvty".to_string(), x),
                    ("tput_per_gpu".to_string(), y),
                    ("output_tput_per_gpu".to_string(), y / 2.0),
                    ("input_tput_per_gpu".to_string(), y / 2.0),
                    ("p99_ttft".to_string(), conc as f64 / 100.0),
                    ("median_e2el".to_string(), conc as f64 / 10.0),
                ]),
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
        })
        .collect();
    RunData {
        run_key: format!("synthetic-{model}-{isl}-{osl}-{run}"),
        kind: SourceKind::InferenceX,
        source_path: format!("synthetic/{run}"),
        batch: format!("synthetic-{run}"),
        date: "2026-01-01".into(),
        start_unix: None,
        end_unix: None,
        inferbench_version: String::new(),
        git_sha: String::new(),
        engine_version: String::new(),
        host: String::new(),
        result_filename: String::new(),
        job: "{}".into(),
        points,
        evals: Vec::new(),
        artifacts: Vec::new(),
        names: Default::default(),
        warnings: Vec::new(),
    }
}
