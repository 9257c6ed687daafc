//! Changelog processing rules on a small config: all-evals entries first, per (config, scenario)
//! coverage, evals-only, scenario-type restriction, --trim-conc, eval-min-prefill-ep.

use inferbench_recipes::changelog::{self, ProcessOptions};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};
use serde_json::Value;

const CFG: &str = "\
a-fp8-h200-vllm:
  image: img
  model: m
  model-prefix: a
  runner: cluster:h200-x
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 64 }
    agentic-coding:
    - search-space:
      - { tp: 8, kv-offloading: none, conc-list: [1, 8] }
b-fp4-gb200-dynamo:
  image: img2
  model: m2
  model-prefix: b
  runner: gb200
  precision: fp4
  framework: dynamo-trt
  multinode: true
  disagg: true
  kv-p2p-transfer: nixl
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - conc-list: [16, 64, 256]
        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true }
        decode: { num-worker: 1, tp: 8, ep: 8, dp-attn: true }
      - conc-list: [32]
        prefill: { num-worker: 2, tp: 4, ep: 1, dp-attn: false }
        decode: { num-worker: 1, tp: 8, ep: 8, dp-attn: true }
";

fn run(entries_yaml: &str, opts: ProcessOptions) -> Value {
    let c = MasterConfigs::from_sources(&[("m.yaml", CFG)]).unwrap();
    let r = RunnerConfig::from_source(
        "r.yaml",
        "labels:\n  cluster:h200-x: [h200-x_0]\n  gb200: [gb200_0]\n",
    )
    .unwrap();
    let added = changelog::added_lines("", entries_yaml, "base").unwrap();
    let entries = changelog::parse_entries(&added, "head").unwrap();
    changelog::process(&entries, &c, &r, &opts, None).unwrap()
}

fn concs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["conc"].to_string())
        .collect()
}

const E: &str = "  description: [d]\n  pr-link: XXX\n";

#[test]
fn all_evals_entries_go_first_and_coverage_is_per_scenario() {
    let y = format!(
        "- config-keys: [a-*]\n{E}- config-keys: [a-fp8-h200-vllm]\n  all-evals: true\n  scenario-type: [fixed-seq-len]\n{E}"
    );
    let v = run(&y, ProcessOptions::default());
    // Throughput: the plain entry covers both scenarios of a.
    assert_eq!(
        concs(&v["single_node"]["8k1k"]),
        ["4", "8", "16", "32", "64"]
    );
    assert_eq!(concs(&v["single_node"]["agentic"]), ["1", "8"]);
    // Evals: the all-evals entry ran first for fixed-seq-len (every 8k1k row is an eval);
    // the plain entry only adds the agentic scenario's default eval (highest conc).
    assert_eq!(concs(&v["evals"]), ["4", "8", "16", "32", "64"]);
    assert_eq!(concs(&v["agentic_evals"]), ["8"]);
    assert!(v["evals"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["eval-only"] == true && r.get("recipe-fingerprint").is_none()));
    // Metadata keeps the file order, not the processing order.
    assert_eq!(v["changelog_metadata"]["entries"][1]["all-evals"], true);
}

#[test]
fn evals_only_trim_conc_and_prefill_ep_filter() {
    let y = format!("- config-keys: [b-fp4-gb200-dynamo]\n  eval-min-prefill-ep: 4\n{E}- config-keys: [a-fp8-h200-vllm]\n  evals-only: true\n{E}");
    let v = run(
        &y,
        ProcessOptions {
            trim_conc: true,
            ..Default::default()
        },
    );
    // a is evals-only: no throughput rows for it; b's multinode rows are trimmed to [min].
    assert!(v["single_node"].as_object().unwrap().is_empty());
    assert_eq!(concs(&v["multi_node"]["8k1k"]), ["[16]", "[32]"]);
    // b's eval rows: the ep1 prefill topology is dropped by eval-min-prefill-ep.
    let mn = v["multinode_evals"].as_array().unwrap();
    assert_eq!(mn.len(), 1);
    assert_eq!(
        (mn[0]["eval-conc"].as_i64(), mn[0]["prefill"]["ep"].as_i64()),
        (Some(256), Some(4))
    );
    // a's default evals: highest + median of [16, 32, 64].
    assert_eq!(concs(&v["evals"]), ["32", "64"]);
    let fp = v["multi_node"]["8k1k"][0]["recipe-fingerprint"]
        .as_str()
        .unwrap();
    assert_eq!(fp.len(), 64);
}
