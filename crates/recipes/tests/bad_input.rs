//! Malformed master configs, runner files and changelogs produce errors naming
//! `file:line:col: field: message` — never a panic (also fuzzed with mutated YAML).

use inferbench_recipes::changelog;
use inferbench_recipes::matrix::{self, CommonOptions, Selection, TestConfigOptions};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};
use proptest::prelude::*;

const GOOD: &str = "\
dsr1-fp8-h200-sglang:
  image: lmsysorg/sglang:v0.5.12-cu130
  model: deepseek-ai/DeepSeek-R1-0528
  model-prefix: dsr1
  runner: h200
  precision: fp8
  framework: sglang
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 64 }
      - { tp: 8, ep: 8, dp-attn: true, conc-list: [128, 256] }
";

const RUNNERS: &str = "\
labels:
  h200: [h200-cw_00, h200-cw_01]
  cluster:b200-dgxc: [b200-dgxc_00]
hardware:
  cluster:b200-dgxc:
    available-cpu-dram-mib: 3_095_781
    gpus-per-node: 8
";

fn load_err(text: &str) -> String {
    match MasterConfigs::from_sources(&[("m.yaml", text)]) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_config_loads_and_expands() {
    let c = MasterConfigs::from_sources(&[("m.yaml", GOOD)]).unwrap();
    let r = RunnerConfig::from_source("runners.yaml", RUNNERS).unwrap();
    let rows = matrix::generate(
        &c,
        &r,
        &Selection::TestConfig(TestConfigOptions {
            config_keys: vec!["dsr1-*".into()],
            ..Default::default()
        }),
        &CommonOptions::default(),
    )
    .unwrap();
    let concs: Vec<i64> = rows.iter().map(|r| r["conc"].as_i64().unwrap()).collect();
    assert_eq!(concs, vec![4, 8, 16, 32, 64, 128, 256]);
    // Eval marking: tp8 group (dp-attn false) → highest 64 and median of [16,32,64] = 32;
    // dp-attn group → 256 and median of [128,256] = 256.
    let evals: Vec<i64> = rows
        .iter()
        .filter(|r| r["run-eval"] == true)
        .map(|r| r["conc"].as_i64().unwrap())
        .collect();
    assert_eq!(evals, vec![32, 64, 256]);
    assert_eq!(rows[0]["max-model-len"], 9472);
    assert_eq!(rows[0]["exp-name"], "dsr1_8k1k");
}

#[test]
fn wrong_type_names_line_column_and_field() {
    let e = load_err(&GOOD.replace("{ tp: 8, conc-start: 4", "{ tp: \"8\", conc-start: 4"));
    assert_eq!(
        e,
        "m.yaml:14:15: dsr1-fp8-h200-sglang.scenarios.fixed-seq-len[0].search-space[0].tp: must be an integer, found string '8'"
    );
}

#[test]
fn unknown_key_is_rejected() {
    let e = load_err(&GOOD.replace(
        "  framework: sglang\n",
        "  framework: sglang\n  trace-source: weka\n",
    ));
    assert!(
        e.starts_with("m.yaml:8:3: dsr1-fp8-h200-sglang.trace-source: unknown field (allowed: "),
        "{e}"
    );
}

#[test]
fn missing_key_is_reported_at_the_mapping() {
    let e = load_err(&GOOD.replace("  image: lmsysorg/sglang:v0.5.12-cu130\n", ""));
    assert_eq!(
        e,
        "m.yaml:2:3: dsr1-fp8-h200-sglang.image: missing required field"
    );
}

#[test]
fn bad_conc_ranges() {
    let e = load_err(&GOOD.replace("conc-start: 4, conc-end: 64", "conc-start: 64, conc-end: 4"));
    assert_eq!(
        e,
        "m.yaml:14:30: dsr1-fp8-h200-sglang.scenarios.fixed-seq-len[0].search-space[0].conc-start: 'conc-start' (64) must be <= 'conc-end' (4)"
    );
    let e = load_err(&GOOD.replace("conc-list: [128, 256]", "conc-list: [0, 256]"));
    assert!(
        e.contains("search-space[1].conc-list: entries must be greater than 0, got 0"),
        "{e}"
    );
    let e = load_err(&GOOD.replace(
        "conc-list: [128, 256]",
        "conc-list: [128], conc-start: 1, conc-end: 2",
    ));
    assert!(
        e.contains("cannot specify both 'conc-list' and 'conc-start'/'conc-end'"),
        "{e}"
    );
    let e = load_err(&GOOD.replace(", conc-end: 64", ""));
    assert!(
        e.contains(
            "search-space[0].conc-end: both 'conc-start' and 'conc-end' must be provided together"
        ),
        "{e}"
    );
}

#[test]
fn topology_and_literal_rules() {
    let e = load_err(&GOOD.replace("{ tp: 8, conc-start", "{ tp: 8, dcp-size: 3, conc-start"));
    assert!(
        e.contains("search-space[0].dcp-size: 'tp' (8) must be divisible by 'dcp-size' (3)"),
        "{e}"
    );
    let e = load_err(&GOOD.replace("{ tp: 8, conc-start", "{ tp: 8, pp: 0, conc-start"));
    assert!(
        e.contains("search-space[0].pp: must be greater than 0, got 0"),
        "{e}"
    );
    let e = load_err(&GOOD.replace(
        "{ tp: 8, conc-start",
        "{ tp: 8, spec-decoding: eagle, conc-start",
    ));
    assert!(
        e.contains(
            "spec-decoding: must be one of 'mtp', 'draft_model', 'none', found string 'eagle'"
        ),
        "{e}"
    );
    let e = load_err(&GOOD.replace("multinode: false", "multinode: false\n  disagg: true"));
    assert!(
        e.contains("disagg: true is only allowed when multinode: true"),
        "{e}"
    );
}

#[test]
fn agentic_rules() {
    let agentic = "\
k-agentic:
  image: i
  model: m
  model-prefix: p
  runner: h200
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: native }, conc-list: [1, 2] }
";
    let e = load_err(agentic);
    assert!(e.contains("m.yaml:5:11: k-agentic.runner: agentic master configs must use a 'cluster:<name>' runner label"), "{e}");
    assert!(
        e.contains("kv-offloading 'dram' requires dram-utilization"),
        "{e}"
    );
    let e = load_err(&agentic.replace(
        "kv-offloading: dram, kv-offload-backend: { name: native }",
        "kv-offloading: none, kv-offload-backend: { name: native }",
    ));
    assert!(
        e.contains("kv-offload-backend can only be set when kv-offloading is not 'none'"),
        "{e}"
    );
    let e = load_err(&agentic.replace(
        "kv-offloading: dram, kv-offload-backend: { name: native }, ",
        "",
    ));
    assert!(
        e.contains("single-node agentic search-space entries must specify kv-offloading"),
        "{e}"
    );
    let e = load_err(&agentic.replace(
        "conc-list: [1, 2] }",
        "conc-list: [1, 2], kv-p2p-transfer: nixl }",
    ));
    assert!(
        e.contains(
            "search-space[0].kv-p2p-transfer: kv-p2p-transfer is only valid when multinode=true"
        ),
        "{e}"
    );
    let e = load_err(&agentic.replace(
        "{ name: native }",
        "{ name: lmcache, version: \"image:lmcache:1\" }",
    ));
    assert!(
        e.contains("kv-offload-backend.version: component version must be a release"),
        "{e}"
    );
}

#[test]
fn dram_budget_needs_hardware_facts() {
    let cfg = "\
k:
  image: i
  model: m
  model-prefix: p
  runner: cluster:h200-nowhere
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.8
      search-space:
      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: native }, conc-list: [1] }
";
    let c = MasterConfigs::from_sources(&[("m.yaml", cfg)]).unwrap();
    let r = RunnerConfig::from_source("runners.yaml", RUNNERS).unwrap();
    let e = matrix::generate(
        &c,
        &r,
        &Selection::TestConfig(TestConfigOptions {
            config_keys: vec!["k".into()],
            ..Default::default()
        }),
        &CommonOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("runner 'cluster:h200-nowhere' requires 'available-cpu-dram-mib'"),
        "{e}"
    );
    let unknown = inferbench_recipes::catalogue::unknown_runner_labels(&c, &r);
    assert_eq!(
        unknown[0].to_string(),
        "m.yaml:5:11: k.runner: unknown runner label 'cluster:h200-nowhere' (not under labels in runners.yaml)"
    );
}

#[test]
fn file_level_problems() {
    let e = MasterConfigs::from_sources(&[("a.yaml", GOOD), ("b.yaml", GOOD)])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "b.yaml:1:1: dsr1-fp8-h200-sglang: duplicate configuration key (already defined in a.yaml:1)");
    let e = load_err(&GOOD.replace("dsr1-fp8-h200-sglang:", "dsr1-*:"));
    assert!(
        e.starts_with("m.yaml:1:1: dsr1-*: wildcard '*' is not allowed"),
        "{e}"
    );
    let e = load_err("k: [1, 2\n");
    assert!(e.starts_with("m.yaml:"), "{e}");
    assert!(e.contains("YAML syntax error"), "{e}");
    let e = load_err("- a\n- b\n");
    assert_eq!(
        e,
        "m.yaml:1:1: a master config must be a mapping of config keys, found a list"
    );
    let e = load_err(&format!("{GOOD}  image: again\n"));
    assert!(
        e.contains("duplicate key 'image' (first defined at line 2)"),
        "{e}"
    );
}

#[test]
fn runner_file_problems() {
    let e = RunnerConfig::from_source("r.yaml", "labels:\n  h200: []\n")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "r.yaml:2:9: labels.h200: cannot be an empty list");
    let e = RunnerConfig::from_source(
        "r.yaml",
        "labels: {}\nhardware:\n  x: { gpus-per-node: 8, cpus: 3 }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("r.yaml:3:26: hardware.x.cpus: unknown field"),
        "{e}"
    );
    assert!(
        e.contains("hardware.x.available-cpu-dram-mib: missing required field"),
        "{e}"
    );
    let e = RunnerConfig::from_source("r.yaml", "hardware: {}\n")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "r.yaml:1:1: labels: missing required field");
}

const ENTRY: &str = "
- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - \"Bump the image.\"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1
";

fn changelog_err(base: &str, head: &str) -> String {
    let added = match changelog::added_lines(base, head, "base.yaml") {
        Ok(a) => a,
        Err(e) => return e.to_string(),
    };
    match changelog::parse_entries(&added, "head.yaml") {
        Ok(entries) => {
            let c = MasterConfigs::from_sources(&[("m.yaml", GOOD)]).unwrap();
            let r = RunnerConfig::from_source("runners.yaml", RUNNERS).unwrap();
            match changelog::process(&entries, &c, &r, &Default::default(), None) {
                Ok(_) => panic!("expected an error"),
                Err(e) => e.to_string(),
            }
        }
        Err(e) => e.to_string(),
    }
}

#[test]
fn changelog_problems_name_head_lines() {
    let base = "- config-keys: [x]\n  description: [d]\n  pr-link: p\n";
    let head = format!("{base}{ENTRY}");
    // A valid addition processes.
    let added = changelog::added_lines(base, &head, "base.yaml").unwrap();
    let entries = changelog::parse_entries(&added, "head.yaml").unwrap();
    assert_eq!(entries[0].line, 5);
    // Unknown field, wrong type, missing field: lines are head-file lines, and `[1]` is the
    // entry's position in the head file (the base already has entry [0]).
    let e = changelog_err(
        base,
        &format!(
            "{base}{}",
            ENTRY.replace("  pr-link:", "  reviewer: me\n  pr-link:")
        ),
    );
    assert_eq!(e, "head.yaml:9:3: [1].reviewer: unknown field (allowed: config-keys, description, pr-link, evals-only, all-evals, append-only, eval-min-prefill-ep, scenario-type)");
    let e = changelog_err(
        base,
        &format!(
            "{base}{}",
            ENTRY
                .replace("- \"Bump the image.\"", "\"Bump\"")
                .replace("  description:\n    ", "  description: ")
        ),
    );
    assert_eq!(
        e,
        "head.yaml:7:16: [1].description: must be a list of strings, found a string"
    );
    let e = changelog_err(
        base,
        &format!(
            "{base}{}",
            ENTRY.replace(
                "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n",
                ""
            )
        ),
    );
    assert_eq!(e, "head.yaml:5:3: [1].pr-link: missing required field");
    let e = changelog_err(
        base,
        &format!(
            "{base}{}",
            ENTRY.replace(
                "pull/1\n",
                "pull/1\n  evals-only: true\n  append-only: true\n"
            )
        ),
    );
    assert!(
        e.starts_with("head.yaml:5:3: [1].append-only: append-only cannot be combined"),
        "{e}"
    );
    let e = changelog_err(
        base,
        &format!(
            "{base}{}",
            ENTRY.replace("pull/1\n", "pull/1\n  scenario-type: [agentic]\n")
        ),
    );
    assert_eq!(e, "head.yaml:10:19: [1].scenario-type[0]: must be 'fixed-seq-len' or 'agentic-coding', got 'agentic'");
    // Deletion of an existing line.
    let e = changelog_err(base, &head.replace("  description: [d]\n", ""));
    assert!(
        e.starts_with("base.yaml:2:1: Deletions are not allowed"),
        "{e}"
    );
    // Unknown config key / wildcard matching nothing.
    let e = changelog_err(
        base,
        &format!(
            "{base}{}",
            ENTRY.replace("dsr1-fp8-h200-sglang", "dsr1-fp8-h100-sglang")
        ),
    );
    assert_eq!(
        e,
        "head.yaml:6:7: [1].config-keys[0]: config key 'dsr1-fp8-h100-sglang' not found in master configs"
    );
    let e = changelog_err(
        base,
        &format!(
            "{base}{}",
            ENTRY.replace("dsr1-fp8-h200-sglang", "gptoss-*")
        ),
    );
    assert_eq!(
        e,
        "head.yaml:6:7: [1].config-keys[0]: no config keys matched the wildcard pattern 'gptoss-*' in master configs"
    );
    // No additions at all.
    let e = changelog_err(base, base);
    assert_eq!(e, "no additions found in head.yaml");
}

#[test]
fn changelog_file_rules() {
    let ok = format!("- config-keys: [x]\n  description: [d]\n  pr-link: p\n{ENTRY}");
    assert_eq!(
        changelog::validate_file(&ok, "perf-changelog.yaml", None)
            .unwrap()
            .len(),
        2
    );
    let e = changelog::validate_file(ok.trim_end(), "perf-changelog.yaml", None)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "perf-changelog.yaml:9:1: file must end with a newline");
    let e = changelog::validate_file(
        &ok.replace("  pr-link: p", "\tpr-link: p"),
        "perf-changelog.yaml",
        None,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "perf-changelog.yaml:3:1: tab not allowed");
    let e = changelog::validate_file(
        &ok.replace(
            "- config-keys:\n    - dsr1",
            "- description: [z]\n  config-keys:\n    - dsr1",
        )
        .replace("  description:\n    - \"Bump the image.\"\n", ""),
        "perf-changelog.yaml",
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("lines start with '- config-keys:'"), "{e}");
    // Editing an existing entry is refused; a pr-link correction to the canonical form is allowed.
    let base = "- config-keys: [x]\n  description: [d]\n  pr-link: XXX\n";
    let fixed = "- config-keys: [x]\n  description: [d]\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/7\n";
    assert!(changelog::validate_file(fixed, "c.yaml", Some(base)).is_ok());
    let e = changelog::validate_file(&fixed.replace("[d]", "[e]"), "c.yaml", Some(base))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "c.yaml:1:3: [0]: existing changelog entries are immutable (only a pr-link correction to the canonical form is allowed)");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Deleting, duplicating or replacing bytes of a valid config never panics: loading returns
    /// Ok or a positioned error, and generation from whatever loads never panics either.
    #[test]
    fn mutated_configs_never_panic(edits in prop::collection::vec((0usize..GOOD.len(), 0u8..4, prop::sample::select(vec![b' ', b':', b'-', b'[', b']', b'{', b'}', b'\n', b'0', b'x', b'"', b'*', b'#'])), 1..6)) {
        let mut bytes = GOOD.as_bytes().to_vec();
        for (pos, op, ch) in edits {
            if bytes.is_empty() {
                break; // an earlier truncation emptied it: nothing left to remove or replace
            }
            let p = pos.min(bytes.len() - 1);
            match op {
                0 => { bytes.remove(p); }
                1 => bytes.insert(p, ch),
                2 => bytes[p] = ch,
                _ => bytes.truncate(p),
            }
        }
        let text = String::from_utf8_lossy(&bytes).to_string();
        match MasterConfigs::from_sources(&[("m.yaml", &text)]) {
            Ok(c) => {
                let r = RunnerConfig::from_source("runners.yaml", RUNNERS).unwrap();
                let keys: Vec<String> = c.keys().map(str::to_string).collect();
                if !keys.is_empty() {
                    let _ = matrix::generate(&c, &r, &Selection::TestConfig(TestConfigOptions { config_keys: keys, ..Default::default() }), &CommonOptions::default());
                }
            }
            Err(e) => {
                let s = e.to_string();
                prop_assert!(s.starts_with("m.yaml:"), "{}", s);
            }
        }
    }

    /// Arbitrary added changelog text never panics.
    #[test]
    fn arbitrary_changelog_additions_never_panic(extra in "[-a-z:\\[\\]{} \n\"0-9*]{0,120}") {
        let base = "- config-keys: [x]\n  description: [d]\n  pr-link: p\n";
        let head = format!("{base}{extra}");
        if let Ok(added) = changelog::added_lines(base, &head, "base.yaml") {
            let _ = changelog::parse_entries(&added, "head.yaml");
        }
    }
}

#[test]
fn changelog_unknown_keys_name_entry_file_line_field() {
    let base = "- config-keys: [x]\n  description: [d]\n  pr-link: p\n";
    let head = format!(
        "{base}{}",
        ENTRY.replace("dsr1-fp8-h200-sglang", "nonexistent-key-xyz")
    );
    assert_eq!(
        changelog_err(base, &head),
        "head.yaml:6:7: [1].config-keys[0]: config key 'nonexistent-key-xyz' not found in master configs"
    );
    let head = format!(
        "{base}{}",
        ENTRY.replace(
            "    - dsr1-fp8-h200-sglang\n",
            "    - dsr1-fp8-h200-sglang\n    - dsr9-*\n"
        )
    );
    assert_eq!(
        changelog_err(base, &head),
        "head.yaml:7:7: [1].config-keys[1]: no config keys matched the wildcard pattern 'dsr9-*' in master configs"
    );
}

#[test]
fn changelog_entry_index_is_the_head_file_position_in_diff_and_check_modes() {
    let base = "- config-keys: [x]\n  description: [d]\n  pr-link: p\n- config-keys: [y]\n  description: [d]\n  pr-link: p\n";
    let head = format!(
        "{base}{}",
        ENTRY.replace("  pr-link:", "  reviewer: me\n  pr-link:")
    );
    let want = "head.yaml:12:3: [2].reviewer: unknown field (allowed: config-keys, description, pr-link, evals-only, all-evals, append-only, eval-min-prefill-ep, scenario-type)";
    assert_eq!(changelog_err(base, &head), want);
    let check = changelog::validate_file(&head, "head.yaml", Some(base))
        .unwrap_err()
        .to_string();
    assert_eq!(check, want);
    // A valid addition carries the same index and the head-file key position.
    let head = format!("{base}{ENTRY}");
    let added = changelog::added_lines(base, &head, "base.yaml").unwrap();
    let diff = changelog::parse_entries(&added, "head.yaml").unwrap();
    let full = changelog::validate_file(&head, "head.yaml", Some(base)).unwrap();
    assert_eq!((diff[0].index, diff[0].line), (2, 8));
    assert_eq!(diff[0], full[2]);
}

#[test]
fn dram_check_table_states_every_amount_in_gb() {
    let cfg = "\
k:
  image: i
  model: m
  model-prefix: p
  runner: cluster:b200-dgxc
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.95
      search-space:
      - { tp: 4, kv-offloading: dram, kv-offload-backend: { name: native }, conc-list: [1] }
small:
  image: i
  model: m
  model-prefix: p
  runner: cluster:h200-dgxc
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.8
      search-space:
      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: native }, conc-list: [1] }
";
    let c = MasterConfigs::from_sources(&[("m.yaml", cfg)]).unwrap();
    let runners =
        format!("{RUNNERS}  cluster:h200-dgxc:\n    available-cpu-dram-mib: 1_471_356\n    gpus-per-node: 8\n");
    let r = RunnerConfig::from_source("runners.yaml", &runners).unwrap();
    let f = inferbench_recipes::catalogue::dram_policy_check(&c, &r);
    // 3_095_781 MiB = 3246 GB, capped at 2_861_022 MiB = 3000 GB; 3000 × 0.95 × 4/8 = 1424.9.
    // 1_471_356 MiB = 1543 GB; 1543 × 0.8 × 8/8 = 1234.2.
    assert_eq!(
        inferbench_recipes::catalogue::dram_table(&f),
        "capped  m.yaml:1: k.agentic-coding[0].search-space[0]: budget 1424 GB; host DRAM 3246 GB is above the 3000 GB policy cap, so the budget is 3000 GB × dram-utilization 0.95 × 4/8 GPUs\n\
         error   m.yaml:14: small.runner: runner label 'cluster:h200-dgxc' is not defined under labels in runners.yaml\n\
         ok      m.yaml:14: small.agentic-coding[0].search-space[0]: budget 1234 GB; host DRAM 1543 GB × dram-utilization 0.8 × 8/8 GPUs\n"
    );
}

#[test]
fn non_positive_parallelism_is_rejected() {
    let e = load_err(&GOOD.replace("{ tp: 8, conc-start", "{ tp: 0, conc-start"));
    assert_eq!(
        e,
        "m.yaml:14:15: dsr1-fp8-h200-sglang.scenarios.fixed-seq-len[0].search-space[0].tp: must be greater than 0, got 0"
    );
    let e = load_err(&GOOD.replace("ep: 8,", "ep: -1,"));
    assert!(
        e.ends_with("search-space[1].ep: must be greater than 0, got -1"),
        "{e}"
    );
}

#[test]
fn integer_overflow_names_the_field() {
    let e = load_err(&GOOD.replace(
        "{ tp: 8, conc-start",
        "{ tp: 99999999999999999999, conc-start",
    ));
    assert_eq!(
        e,
        "m.yaml:14:15: dsr1-fp8-h200-sglang.scenarios.fixed-seq-len[0].search-space[0].tp: integer '99999999999999999999' is out of range"
    );
    // In a changelog addition the entry index is its position in the head file.
    let base = "- config-keys: [x]\n  description: [d]\n  pr-link: p\n";
    let head = format!(
        "{base}{}",
        ENTRY.replace(
            "pull/1\n",
            "pull/1\n  eval-min-prefill-ep: 99999999999999999999\n"
        )
    );
    assert_eq!(
        changelog_err(base, &head),
        "head.yaml:10:24: [1].eval-min-prefill-ep: integer '99999999999999999999' is out of range"
    );
}

#[test]
fn top_level_kv_p2p_transfer_needs_multinode() {
    let e = load_err(&GOOD.replace(
        "  multinode: false\n",
        "  multinode: false\n  kv-p2p-transfer: nixl\n",
    ));
    assert_eq!(
        e,
        "m.yaml:9:20: dsr1-fp8-h200-sglang.kv-p2p-transfer: kv-p2p-transfer is only allowed for multinode entries (multinode: true)"
    );
}
