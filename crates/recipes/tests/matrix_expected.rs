//! The generator output must equal InferenceX's for the seven handed invocations
//! (`../shared/data/inferencex/expected/*.json`, produced by `generate_sweep_configs.py` on
//! `configs/nvidia-master.yaml` + `configs/runners.yaml`). Compared byte for byte (the reference
//! prints `json.dumps(rows)`), and as parsed JSON for a readable diff on failure.
//!
//! The invocation flags are not recorded next to the files; they were inferred from the file
//! names and contents (and are pinned here).

use std::path::PathBuf;

use inferbench_recipes::matrix::{
    self, CommonOptions, FullSweepOptions, Selection, TestConfigOptions,
};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

fn data_dir() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(env!("CARGO_MANIFEST_DIR"), "data/inferencex")
}

fn check(expected_file: &str, selection: Selection, common: CommonOptions) {
    let Some(d) = data_dir() else { return };
    let configs = MasterConfigs::load(&[d.join("configs/nvidia-master.yaml")]).unwrap();
    let runners = RunnerConfig::load(&d.join("configs/runners.yaml")).unwrap();
    let rows = matrix::generate(&configs, &runners, &selection, &common).unwrap();
    let got = matrix::to_json_text(&rows);
    let want = std::fs::read_to_string(d.join("expected").join(expected_file)).unwrap();
    if got.trim_end() != want.trim_end() {
        let g: Vec<serde_json::Value> = serde_json::from_str(&got).unwrap();
        let w: Vec<serde_json::Value> = serde_json::from_str(&want).unwrap();
        assert_eq!(g.len(), w.len(), "{expected_file}: row count");
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert_eq!(a, b, "{expected_file}: row {i} differs");
            assert_eq!(
                crate_dumps(a),
                crate_dumps(b),
                "{expected_file}: row {i} key order differs"
            );
        }
        panic!("{expected_file}: bytes differ but rows are equal (formatting)");
    }
    assert_eq!(
        got.ends_with('\n'),
        want.ends_with('\n'),
        "{expected_file}: trailing newline"
    );
}

fn crate_dumps(v: &serde_json::Value) -> String {
    inferbench_recipes::pyjson::dumps(v)
}

fn full(o: FullSweepOptions) -> Selection {
    Selection::FullSweep(o)
}

#[test]
fn full_sweep_default() {
    check(
        "full-sweep.json",
        full(FullSweepOptions::default()),
        CommonOptions::default(),
    );
}

#[test]
fn full_sweep_all_evals() {
    check(
        "full-sweep-all-evals.json",
        full(FullSweepOptions::default()),
        CommonOptions {
            all_evals: true,
            ..Default::default()
        },
    );
}

#[test]
fn full_sweep_evals_only() {
    check(
        "full-sweep-evals-only.json",
        full(FullSweepOptions::default()),
        CommonOptions {
            evals_only: true,
            ..Default::default()
        },
    );
}

#[test]
fn full_sweep_no_evals_agentic() {
    check(
        "full-sweep-no-evals-agentic.json",
        full(FullSweepOptions::default()),
        CommonOptions {
            no_evals: true,
            scenario_types: Some(vec!["agentic-coding".into()]),
            ..Default::default()
        },
    );
}

#[test]
fn full_sweep_multinode_max_conc_256() {
    // Inferred: `full-sweep --multi-node --max-conc 256` (every conc list capped at 256; lists
    // entirely above it collapse to [256]).
    check(
        "full-sweep-multinode.json",
        full(FullSweepOptions {
            multi_node: true,
            max_conc: Some(256),
            ..Default::default()
        }),
        CommonOptions::default(),
    );
}

#[test]
fn full_sweep_filtered_fp8_single_node_conc_4_to_64() {
    // Inferred: `full-sweep --single-node --precision fp8 --min-conc 4 --max-conc 64`.
    check(
        "full-sweep-filtered.json",
        full(FullSweepOptions {
            single_node: true,
            precision: vec!["fp8".into()],
            min_conc: Some(4),
            max_conc: Some(64),
            ..Default::default()
        }),
        CommonOptions::default(),
    );
}

#[test]
fn test_config_sample_twelve_keys() {
    // Inferred from the rows: `test-config --config-keys` with these twelve keys, in this order.
    let keys = [
        "dsr1-fp4-b200-dynamo-sglang",
        "dsr1-fp4-b300-dynamo-trt",
        "dsr1-fp8-b200-dynamo-sglang-mtp",
        "dsr1-fp8-b300-sglang",
        "dsr1-fp8-h100-dynamo-trt",
        "dsv4-fp4-b200-dynamo-sglang-mtp",
        "dsv4-fp4-b200-vllm",
        "dsv4-fp4-b300-sglang-agentic-hicache-mtp",
        "dsv4-fp4-gb200-dynamo-sglang",
        "dsv4-fp4-gb200-dynamo-vllm-mtp2",
        "dsv4-fp4-gb300-dynamo-trt",
        "dsv4-fp8-h200-dynamo-sglang-agentic-agg",
    ];
    check(
        "test-config-sample.json",
        Selection::TestConfig(TestConfigOptions {
            config_keys: keys.iter().map(|k| k.to_string()).collect(),
            ..Default::default()
        }),
        CommonOptions::default(),
    );
}

/// Every filter and mode runs on both master files and keeps its promise (the held-back
/// invocations use flags beyond the seven above).
#[test]
fn every_flag_combination_on_both_masters() {
    use inferbench_core::matrix::MatrixRow;
    use inferbench_core::point::PointConfig;
    let typed = |r: &inferbench_recipes::Row| {
        let row: MatrixRow = serde_json::from_value(serde_json::Value::Object(r.clone())).unwrap();
        PointConfig::from_row(&row, "n_0", 0)
    };
    let Some(d) = data_dir() else { return };
    let configs = MasterConfigs::load(&[
        d.join("configs/amd-master.yaml"),
        d.join("configs/nvidia-master.yaml"),
    ])
    .unwrap();
    let runners = RunnerConfig::load(&d.join("configs/runners.yaml")).unwrap();
    let run = |sel: Selection, common: CommonOptions| {
        matrix::generate(&configs, &runners, &sel, &common).unwrap()
    };

    let all = run(full(FullSweepOptions::default()), CommonOptions::default());
    assert!(all.len() > 1800, "{}", all.len());
    let amd = run(
        full(FullSweepOptions {
            model_prefix: vec!["dsr1-fp8-mi".into()],
            runner_type: vec!["mi355x".into()],
            ..Default::default()
        }),
        CommonOptions::default(),
    );
    assert!(!amd.is_empty() && amd.iter().all(|r| typed(r).runner_type == "mi355x"));

    let filtered = run(
        full(FullSweepOptions {
            framework: vec!["vllm".into()],
            seq_lens: vec!["8k1k".into()],
            max_tp: Some(4),
            max_ep: Some(2),
            step_size: 4,
            single_node: true,
            ..Default::default()
        }),
        CommonOptions::default(),
    );
    assert!(!filtered.is_empty());
    for r in &filtered {
        let p = typed(r);
        if !p.is_agentic() {
            assert!(p.parallelism.tp <= 4 && p.parallelism.ep <= 2, "{r:?}");
            assert_eq!((p.isl, p.osl), (Some(8192), Some(1024)));
        }
        assert!(!p.is_multinode());
    }

    let nodes = run(
        full(FullSweepOptions::default()),
        CommonOptions {
            runner_node_filter: Some("dgxc".into()),
            no_evals: true,
            ..Default::default()
        },
    );
    assert!(!nodes.is_empty() && nodes.iter().all(|r| typed(r).runner_type.contains("dgxc")));
    assert!(nodes
        .iter()
        .all(|r| !r.contains_key("run-eval") || !typed(r).is_agentic()));

    let evals = run(
        Selection::TestConfig(TestConfigOptions {
            config_keys: vec!["*".into()],
            conc: vec![16, 64],
            ..Default::default()
        }),
        CommonOptions {
            evals_only: true,
            ..Default::default()
        },
    );
    assert!(!evals.is_empty() && evals.iter().map(typed).all(|p| p.eval_only && p.run_eval));
    assert!(evals.iter().all(|r| typed(r)
        .row_conc
        .values()
        .iter()
        .all(|c| [16, 64].contains(c))));

    let bad = matrix::generate(
        &configs,
        &runners,
        &full(FullSweepOptions {
            runner_type: vec!["no-such-label".into()],
            ..Default::default()
        }),
        &CommonOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.starts_with("invalid runner type(s): no-such-label."),
        "{bad}"
    );
    let bad = matrix::generate(
        &configs,
        &runners,
        &Selection::TestConfig(TestConfigOptions {
            config_keys: vec!["nope-*".into()],
            ..Default::default()
        }),
        &CommonOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.starts_with("pattern 'nope-*' matched no config keys."),
        "{bad}"
    );
}
