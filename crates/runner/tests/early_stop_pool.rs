//! Issue 43 (2026-12-08): the sweep's runner pools the early stop's noise over the points it
//! finished. Each valid adaptive point's summary carries its own noise reading
//! (`inferbench.early_stop_noise`); the runner keeps them in order and a later point's rule
//! reads those near its concurrency (`inferbench_loadgen::early_stop::NoisePool`). The server is
//! the in-process sim.

use inferbench_core::summary::EarlyStopNoise;
use inferbench_runner::bench::LoadgenPoint;
use inferbench_runner::sweep::{Outcome, SweepOptions};
use inferbench_runner::{run_jobs, BenchDefaults, JobSpec};
use tokio_util::sync::CancellationToken;

fn row(conc: u32) -> JobSpec {
    let v = serde_json::json!({
        "image": "none", "model": "m", "model-prefix": "fake", "precision": "fp8",
        "framework": "vllm", "runner": "h100", "isl": 32, "osl": 8, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": conc, "max-model-len": 328, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "fake_32_8", "disagg": false,
        "run-eval": false
    });
    JobSpec {
        index: 0,
        row: serde_json::from_value(v).unwrap(),
    }
}

/// Two adaptive points (conc 4 and 8, 10 × conc prompts, a 1e-9 tolerance): each summary has
/// its noise reading from its last check before the drain (conc 4: checks at 30 and 40
/// completions, the last before the drain at 30: 26 steady ones, 6 batches of one round,
/// 5 d.f.; conc 8: at 70 of 80, 62 steady, 7 batches, 6 d.f. — not the check at the full
/// count, which the rule meets with factor 0 whatever the noise), and the runner's pool holds
/// exactly those, in the order the points ran. A sweep without `--adaptive` writes none and
/// pools none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_pools_each_adaptive_points_noise_in_order() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        ..Default::default()
    })
    .expect("sim starts");
    let tmp = tempfile::tempdir().unwrap();
    let run = |adaptive: bool, out: std::path::PathBuf| {
        let url = sim.base_url();
        async move {
            let opts = SweepOptions {
                out_dir: out.clone(),
                runner_name: Some("h100-box_0".into()),
                base_url: Some(url),
                bench: BenchDefaults {
                    warmups_per_conc: 1,
                    early_stop_tolerance: adaptive.then_some(1e-9),
                    ..BenchDefaults::default()
                },
                ..SweepOptions::default()
            };
            let runner = LoadgenPoint::default();
            let jobs = vec![row(4), row(8)];
            let report = run_jobs(&jobs, &opts, &runner, &CancellationToken::new()).await;
            let outcomes: Vec<(u32, Outcome)> =
                report.points.iter().map(|p| (p.conc, p.outcome)).collect();
            assert_eq!(
                outcomes,
                [(4, Outcome::Ok), (8, Outcome::Ok)],
                "{}",
                report.render()
            );
            let read: Vec<Option<EarlyStopNoise>> = (report.points.iter())
                .map(|p| {
                    let s =
                        std::fs::read_to_string(out.join(&p.result_filename).join("summary.json"))
                            .unwrap();
                    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
                    serde_json::from_value(v["inferbench"]["early_stop_noise"].clone()).ok()
                })
                .collect();
            let pool = runner.noise_pool.lock().unwrap().clone();
            (read, pool)
        }
    };
    let (read, pool) = run(true, tmp.path().join("a")).await;
    let read: Vec<EarlyStopNoise> = read
        .into_iter()
        .map(|n| n.expect("a noise reading"))
        .collect();
    assert_eq!(pool, read);
    let at = |n: &EarlyStopNoise| (n.conc, n.dof);
    assert_eq!((at(&read[0]), at(&read[1])), ((4, 5), (8, 6)));
    let (read, pool) = run(false, tmp.path().join("b")).await;
    assert_eq!(read, vec![None, None]);
    assert!(pool.is_empty());
}
