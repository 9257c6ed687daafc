//! The repository's own master config (`examples/llamacpp-cpu.yaml`, the CPU llama.cpp sweep CI
//! runs) passes the strict schema and expands as the runner expects.

use std::path::PathBuf;

use inferbench_recipes::matrix::{self, CommonOptions, FullSweepOptions, Selection};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};
use inferbench_recipes::{result_filename, RowExt};

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
    for r in &rows {
        assert!(!r.is_multinode() && !r.is_agentic());
        let t = r.topology().unwrap();
        assert_eq!((t.tp, t.pp, t.pcp), (1, 1, 1));
        assert_eq!(
            r.max_model_len(),
            Some(r.seq_lens().unwrap().0 + r.seq_lens().unwrap().1 + 256)
        );
        let rf = result_filename(r, "cpu_0");
        assert!(
            rf.ends_with(&format!("_conc{}_cpu_0", r.concurrencies()[0])),
            "{rf}"
        );
    }
    let catalogue_errors = inferbench_recipes::catalogue::unknown_runner_labels(&configs, &runners);
    assert!(catalogue_errors.is_empty(), "{catalogue_errors:?}");
}
