//! The repository's own master config (`examples/llamacpp-cpu.yaml`, the CPU llama.cpp sweep CI
//! runs) passes the strict schema and expands as the runner expects.

use std::path::PathBuf;

use inferbench_core::matrix::MatrixRow;
use inferbench_core::point::PointConfig;
use inferbench_recipes::matrix::{self, CommonOptions, FullSweepOptions, Selection};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

#[test]
fn llamacpp_cpu_example_expands() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cfg = root.join("examples/llamacpp-cpu.yaml");
    let configs = MasterConfigs::load(&[cfg]).unwrap();
    let runners = RunnerConfig::load(&root.join("examples/llamacpp-cpu-runners.yaml")).unwrap();
    let rows = matrix::generate(
        &configs,
        &runners,
        &Selection::FullSweep(FullSweepOptions::default()),
        &CommonOptions::default(),
    )
    .unwrap();
    assert!(!rows.is_empty());
    for raw in &rows {
        let r: MatrixRow = serde_json::from_value(serde_json::Value::Object(raw.clone())).unwrap();
        let p = PointConfig::from_row(&r, "cpu_0", 0);
        assert!(!p.is_multinode() && !p.is_agentic());
        let t = p.parallelism;
        assert_eq!((t.tp, t.pp, t.pcp_size), (1, 1, 1));
        assert_eq!(r.max_model_len, Some(r.isl.unwrap() + r.osl.unwrap() + 256));
        let rf = p.result_filename();
        assert!(
            rf.ends_with(&format!("_conc{}_cpu_0", r.conc.identity())),
            "{rf}"
        );
    }
    let catalogue_errors = inferbench_recipes::catalogue::unknown_runner_labels(&configs, &runners);
    assert!(catalogue_errors.is_empty(), "{catalogue_errors:?}");
}
