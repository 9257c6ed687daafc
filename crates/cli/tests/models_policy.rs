//! `inferbench models policy` (issue 41): MODELS.md's rules on the handed InferenceX master
//! configs (only what MODELS.md's "not yet enacted" note describes fails nothing: exit 0, no
//! engine violation), a violating config (exit 1) and its waiver, and `models support
//! --by-prefix` in MODELS.md's table shape.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn inferencex() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(env!("CARGO_MANIFEST_DIR"), "data/inferencex")
}

fn inferbench(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let o: Output = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

#[test]
fn master_configs_have_no_engine_violation_and_the_non_spec_arms_still_run() {
    let Some(d) = inferencex() else { return };
    // The defaults: configs/{amd,nvidia}-master.yaml and configs/deprecated, run in the checkout.
    let (code, out, err) = inferbench(&d, &["models", "policy"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[lines.len() - 3..],
        [
            "engine submission policy: 0 violation(s)",
            "spec-decode-only AgentX: 14 deprecated arm(s) still running",
            "deprecations: 3 mismatch(es)",
        ]
    );
    assert!(!out.contains("engine-policy"), "{out}");
    let arms: Vec<&str> = (lines.iter().copied())
        .filter(|l| l.starts_with("deprecated arm: "))
        .collect();
    assert_eq!(arms.len(), 14);
    assert_eq!(
        arms[0],
        "deprecated arm: configs/nvidia-master.yaml:7121: dsv4-fp4-gb300-dynamo-vllm-agentic.agentic-coding[0].search-space[0]: model dsv4 on gb300, framework dynamo-vllm, spec-decoding none; spec-decode sibling on gb300/dynamo-vllm: dsv4-fp4-gb300-dynamo-vllm-agentic-mtp-agg"
    );
    assert_eq!(
        arms[13],
        "deprecated arm: configs/nvidia-master.yaml:9593: kimik3-fp4-b200-dynamo-vllm-agentic-dspark.agentic-coding[0].search-space[8]: model kimik3 on b200, framework dynamo-vllm, spec-decoding none; spec-decode sibling on b200/dynamo-vllm: kimik3-fp4-b200-dynamo-vllm-agentic-dspark"
    );
    // Every non-spec arm has a spec-decode sibling on its SKU and framework in this snapshot.
    assert!(arms.iter().all(|l| !l.ends_with(": none")), "{out}");
    let mismatches: Vec<&str> = (lines.iter().copied())
        .filter(|l| l.starts_with("deprecation mismatch: "))
        .collect();
    assert_eq!(
        mismatches,
        [
            "deprecation mismatch: configs/nvidia-master.yaml:4164: kimik2.6-fp4-b200-dynamo-vllm: model kimik2.6 (MODELS.md row kimik2.5) runs 8k1k at fp4 in an active config, but MODELS.md lists it deprecated",
            "deprecation mismatch: configs/nvidia-master.yaml:9891: glm5.1-fp8-b200-tilert: model glm5.1 runs 1k1k at fp8 in an active config, but MODELS.md lists it deprecated",
            "deprecation mismatch: configs/nvidia-master.yaml:9891: glm5.1-fp8-b200-tilert: model glm5.1 runs 8k1k at fp8 in an active config, but MODELS.md lists it deprecated",
        ]
    );
    assert_eq!(lines.len(), 14 + 3 + 3);

    let (code, out, _) = inferbench(&d, &["models", "policy", "--format", "json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["summary"],
        serde_json::json!({"engine_policy_violations": 0, "deprecated_arms_running": 14, "deprecation_mismatches": 3})
    );
    assert_eq!(v["policy"], "<embedded models-policy.yaml>");
    assert_eq!(v["engine_policy"], serde_json::json!([]));
    assert_eq!(v["deprecations"][0]["kind"], "deprecated-but-active");
    assert_eq!(v["deprecations"][0]["matrix_row"], "kimik2.5");
    assert_eq!(v["deprecations"][1].get("matrix_row"), None);
}

#[test]
fn support_by_prefix_is_models_md_table_shape() {
    let Some(d) = inferencex() else { return };
    let (code, out, err) = inferbench(&d, &["models", "support", "--by-prefix"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert_eq!(
        out,
        "model-prefix  active scenarios  deprecated scenarios\n\
         dsr1          8k1k              1k1k\n\
         dsv4          8k1k, agentic     1k1k\n\
         glm5          -                 1k1k, 8k1k\n\
         glm5.1        1k1k, 8k1k        1k1k (fp4), 8k1k (fp4)\n\
         glm5.2        agentic           -\n\
         gptoss        -                 1k1k, 8k1k\n\
         kimik2.5      -                 1k1k, 8k1k\n\
         kimik2.6      8k1k              -\n\
         kimik3        agentic           -\n\
         minimaxm2.5   -                 1k1k, 8k1k\n\
         minimaxm3     agentic           1k1k, 8k1k\n\
         qwen3.5       8k1k, agentic     1k1k, 8k1k (bf16)\n"
    );
}

/// An AgentX config on `framework` for glm5.2 (mapped to SGLang) on `runner`.
fn glm(key: &str, runner: &str, framework: &str) -> String {
    format!(
        "{key}:\n  image: img\n  model: m\n  model-prefix: glm5.2\n  runner: {runner}\n  precision: fp4\n  framework: {framework}\n  multinode: false\n  scenarios:\n    agentic-coding:\n    - search-space:\n      - {{ tp: 8, kv-offloading: none, spec-decoding: mtp, conc-list: [1] }}\n"
    )
}

#[test]
fn a_violation_fails_and_a_waiver_in_the_policy_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("m.yaml"),
        glm("glm5.2-fp4-b200-trt", "cluster:b200-dgxc", "trt")
            + &glm("glm5.2-fp4-b300-sglang", "cluster:b300-nv", "sglang"),
    )
    .unwrap();
    std::fs::create_dir(d.join("deprecated")).unwrap();
    let (code, out, err) = inferbench(d, &["models", "policy", "--config-files", "m.yaml"]);
    assert_eq!((code, err.as_str()), (Some(1), ""));
    assert_eq!(
        out,
        "engine-policy violation: m.yaml:1: glm5.2-fp4-b200-trt: model glm5.2 on b200 runs TensorRT-LLM (framework trt) with no SGLang AgentX config for glm5.2 on b200 (missing engine: SGLang)\n\
         engine submission policy: 1 violation(s)\n\
         spec-decode-only AgentX: 0 deprecated arm(s) still running\n\
         deprecations: 0 mismatch(es)\n"
    );
    // The user's policy: the embedded one (--print-policy) with a waiver and its reason.
    let (code, text, _) = inferbench(d, &["models", "policy", "--print-policy"]);
    assert_eq!(code, Some(0));
    let embedded = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../recipes/data/models-policy.yaml"
    );
    assert_eq!(text, std::fs::read_to_string(embedded).unwrap());
    let waived = text.replace(
        "waivers: {}",
        "waivers:\n  glm5.2-fp4-b200-trt: new attention kernel not yet in SGLang\n  gone-key: x",
    );
    std::fs::write(d.join("p.yaml"), waived).unwrap();
    let (code, out, err) = inferbench(
        d,
        &[
            "models",
            "policy",
            "--config-files",
            "m.yaml",
            "--policy",
            "p.yaml",
        ],
    );
    assert_eq!(code, Some(0));
    assert_eq!(
        err,
        "note: the policy's waiver for gone-key matches no config key in --config-files\n"
    );
    assert!(out.starts_with(
        "engine-policy waived: m.yaml:1: glm5.2-fp4-b200-trt: model glm5.2 on b200 runs TensorRT-LLM (framework trt) before SGLang; waiver: new attention kernel not yet in SGLang\n\
         engine submission policy: 0 violation(s)\n"
    ), "{out}");
    // A policy that does not load: exit 2, naming file, line and field.
    std::fs::write(d.join("bad.yaml"), "version: 1\nwaivers:\n  k: \"\"\n").unwrap();
    let (code, out, err) = inferbench(
        d,
        &[
            "models",
            "policy",
            "--config-files",
            "m.yaml",
            "--policy",
            "bad.yaml",
        ],
    );
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert!(
        err.starts_with("error: --policy: bad.yaml:3:6: waivers.k: a waiver needs its reason"),
        "{err}"
    );
}
