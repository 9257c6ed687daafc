//! Append-only changelog entries: only newly added concurrency points of unchanged curves run.

use inferbench_recipes::changelog::{self, BaseConfigs, ProcessOptions};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

const BASE_CFG: &str = "\
a-fp8-h200-vllm:
  image: vllm/vllm-openai:v1
  model: m
  model-prefix: a
  runner: h200
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-list: [4, 8] }
b-fp8-h200-vllm:
  image: vllm/vllm-openai:v1
  model: m2
  model-prefix: b
  runner: h200
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 4, conc-list: [4] }
";

const RUNNERS: &str = "labels:\n  h200: [h200_0]\n";

const ENTRY: &str = "\
- config-keys: [a-fp8-h200-vllm]
  description: [\"Add conc 16 and 32.\"]
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/9
  append-only: true
";

fn run(head_cfg: &str) -> Result<serde_json::Value, String> {
    let base = MasterConfigs::from_sources(&[("base.yaml", BASE_CFG)]).unwrap();
    let head = MasterConfigs::from_sources(&[("head.yaml", head_cfg)]).unwrap();
    let runners = RunnerConfig::from_source("runners.yaml", RUNNERS).unwrap();
    let added = changelog::added_lines("", ENTRY, "base-changelog.yaml").unwrap();
    let entries = changelog::parse_entries(&added, "perf-changelog.yaml").unwrap();
    changelog::process(
        &entries,
        &head,
        &runners,
        &ProcessOptions::default(),
        Some(BaseConfigs { configs: &base }),
    )
    .map_err(|e| e.to_string())
}

#[test]
fn only_new_points_run() {
    let v = run(&BASE_CFG.replace("conc-list: [4, 8]", "conc-list: [4, 8, 16, 32]")).unwrap();
    let rows = v["single_node"]["8k1k"].as_array().unwrap();
    let concs: Vec<i64> = rows.iter().map(|r| r["conc"].as_i64().unwrap()).collect();
    assert_eq!(concs, vec![16, 32]);
    assert!(rows
        .iter()
        .all(|r| r["recipe-fingerprint"].as_str().unwrap().len() == 64));
    assert_eq!(v["evals"], serde_json::json!([]));
    assert_eq!(v["changelog_metadata"]["entries"][0]["append-only"], true);
}

#[test]
fn curve_changes_and_removals_are_refused() {
    let e = run(&BASE_CFG.replace("conc-list: [4, 8]", "conc-list: [8, 16]")).unwrap_err();
    assert_eq!(
        e,
        "append-only may not remove existing concurrency points: [4]"
    );
    let e = run(&BASE_CFG.replacen("vllm/vllm-openai:v1", "vllm/vllm-openai:v2", 1)).unwrap_err();
    assert_eq!(
        e,
        "append-only changed non-scenario field 'image' in 'a-fp8-h200-vllm'"
    );
    let e = run(&BASE_CFG.replace(
        "{ tp: 8, conc-list: [4, 8] }",
        "{ tp: 4, conc-list: [4, 8, 16] }",
    ))
    .unwrap_err();
    assert_eq!(e, "append-only changed non-concurrency value at a-fp8-h200-vllm.fixed-seq-len[0].search-space[0].tp");
    let e = run(&BASE_CFG.replace("{ tp: 4, conc-list: [4] }", "{ tp: 4, conc-list: [4, 8] }"))
        .unwrap_err();
    assert_eq!(
        e,
        "append-only PR changed configs not selected by its changelog entry: [\"b-fp8-h200-vllm\"]"
    );
    let e = run(BASE_CFG).unwrap_err();
    assert_eq!(e, "append-only did not add any concurrency points");
}
