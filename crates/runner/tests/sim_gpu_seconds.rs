//! A sim row's GPU-seconds are the sim's modelled busy time (issue 43): the row's GPUs × the
//! modelled seconds its engine spent in steps while the point ran, warmups included, whatever
//! the wall clock, the machine's load or the client's own preparation took.

use inferbench_runner::simsweep::SimSweep;
use inferbench_sim::SimConfig;
use tokio_util::sync::CancellationToken;

/// Every step takes exactly 10 ms of modelled time (`fixed_step_s`); at conc 1 each request
/// runs alone: one prefill step (which gives the first token) and 7 decode steps for 8 output
/// tokens, so 2 warmups + 4 prompts are 6 × 8 = 48 steps, 0.48 modelled s, × TP 2 = 0.96
/// GPU-s, with no launch share. Wall time × scale would be neither exact nor this.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sim_points_gpu_seconds_are_its_modelled_busy_time() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = SimSweep {
        sim: SimConfig {
            hardware: "h100".into(),
            tp: 2,
            max_num_seqs: 16,
            time_scale: 50.0,
            fixed_step_s: Some(0.01),
            ..SimConfig::default()
        },
        concurrency: vec![1],
        isl: 32,
        osl: 8,
        prompts_per_conc: 4,
        warmups_per_conc: 2,
    };
    let report = sweep
        .run(dir.path(), "gpu-seconds", &CancellationToken::new())
        .await
        .unwrap();
    let p = &report.points[0];
    assert!(p.gpu_seconds_modelled, "{p:?}");
    let g = p.gpu_seconds.unwrap();
    assert!((g - 0.96).abs() < 1e-9, "{g}");
    assert_eq!(p.launch_gpu_seconds, None);
}
