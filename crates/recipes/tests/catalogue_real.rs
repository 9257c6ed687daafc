//! Catalogue tools on the handed InferenceX snapshot (`../shared/data/inferencex/configs`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use inferbench_recipes::catalogue::{self, Status};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

fn configs_dir() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(env!("CARGO_MANIFEST_DIR"), "data/inferencex/configs")
}

#[test]
fn support_matrix_separates_active_and_deprecated() {
    let Some(d) = configs_dir() else { return };
    let active = [d.join("amd-master.yaml"), d.join("nvidia-master.yaml")];
    let mut dep: Vec<PathBuf> = std::fs::read_dir(d.join("deprecated"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dep.sort();
    let rows = catalogue::support_matrix(&active, &dep).unwrap();
    let find = |p: &str, s: &str, st: Status| {
        rows.iter()
            .find(|r| r.model_prefix == p && r.scenario == s && r.status == st)
    };
    // 1k1k was deprecated on 2026-07-17: every dsr1 1k1k entry lives in deprecated/.
    assert_eq!(
        find("dsr1", "1k1k", Status::Deprecated).unwrap().configs,
        51
    );
    assert!(find("dsr1", "1k1k", Status::Active).is_none());
    assert_eq!(find("dsr1", "8k1k", Status::Active).unwrap().configs, 51);
    // gptoss is fully deprecated; kimik3 is agentic-only.
    assert!(rows
        .iter()
        .filter(|r| r.model_prefix == "gptoss")
        .all(|r| r.status == Status::Deprecated));
    let kimik3: Vec<&str> = rows
        .iter()
        .filter(|r| r.model_prefix == "kimik3")
        .map(|r| r.scenario.as_str())
        .collect();
    assert_eq!(kimik3, vec!["agentic"]);
    let dsv4_agentic = find("dsv4", "agentic", Status::Active).unwrap();
    assert_eq!(dsv4_agentic.configs, 19);
    assert!(dsv4_agentic
        .runners
        .iter()
        .all(|r| r.starts_with("cluster:")));
    let table = catalogue::support_table(&rows);
    assert!(
        table.starts_with("model-prefix  scenario  status      configs"),
        "{table}"
    );
}

#[test]
fn dram_policy_check_on_snapshot() {
    let Some(d) = configs_dir() else { return };
    let c =
        MasterConfigs::load(&[d.join("amd-master.yaml"), d.join("nvidia-master.yaml")]).unwrap();
    let r = RunnerConfig::load(&d.join("runners.yaml")).unwrap();
    let f = catalogue::dram_policy_check(&c, &r);
    // The three runner labels used but missing from runners.yaml (reference §1.5) are the only errors.
    let missing: BTreeSet<&str> = f
        .iter()
        .filter(|x| x.verdict == "error")
        .map(|x| x.runner.as_str())
        .collect();
    assert_eq!(
        missing,
        BTreeSet::from(["cluster:mi325x-tw", "gb300-nv", "h200-dgxc"])
    );
    assert!(f
        .iter()
        .filter(|x| x.verdict == "error")
        .all(|x| x.entry == "runner"));
    // Reference example: b200-dgxc, dram-utilization 0.95, TP8 → 2849 GB (host DRAM capped at 3 TB).
    let b200 = f
        .iter()
        .find(|x| {
            x.config == "dsv4-fp4-b200-vllm-agentic-mtp"
                && x.entry == "agentic-coding[0].search-space[0]"
        })
        .unwrap();
    assert_eq!(
        (b200.total_cpu_dram_gb, b200.verdict.as_str()),
        (Some(2849), "capped")
    );
    let unknown = catalogue::unknown_runner_labels(&c, &r);
    assert_eq!(
        unknown.len(),
        f.iter().filter(|x| x.verdict == "error").count()
    );
    assert!(unknown[0]
        .to_string()
        .contains(".runner: unknown runner label"));
}

#[test]
fn ci_priority_file_from_snapshot() {
    let Some(d) = configs_dir() else { return };
    let cfg = catalogue::CiPriority::load(&d.join("ci-priority.yaml")).unwrap();
    let row = serde_json::json!({"runner": "cluster:b200-dgxc", "framework": "sglang", "precision": "fp4",
        "spec-decoding": "mtp", "model-prefix": "dsv4", "scenario-type": "agentic-coding"});
    let row = row.as_object().unwrap().clone();
    // push 1+2, agentic +1, fp4 +0.75, mtp +0.75, sglang +0.5, dsv4 +0.75.
    let ctx = catalogue::PriorityContext {
        event_name: "push".into(),
        ..Default::default()
    };
    assert_eq!(cfg.score_text(&row, &ctx), "6.750");
    assert!(cfg.skip_queue(&["skip_queue".into()]));
}

/// `ci_priority.py`'s output for the two recorded invocations
/// (`../shared/data/inferencex/expected/ci-priority/README.md`), byte for byte.
#[test]
fn ci_priority_outputs_equal_the_reference() {
    let Some(d) = configs_dir() else { return };
    let root = d.join("..");
    let cfg = catalogue::CiPriority::load(&d.join("ci-priority.yaml")).unwrap();
    let cases = [
        (
            "expected/full-sweep.json",
            catalogue::PriorityContext {
                event_name: "pull_request".into(),
                labels: vec!["sweep-enabled".into(), "ci-checklist-complete".into()],
                ..Default::default()
            },
            "expected/ci-priority/full-sweep-pull_request.json",
        ),
        (
            "expected/changelog/1b332e4c3/expected.json",
            catalogue::PriorityContext {
                event_name: "push".into(),
                queue_namespace: "inferencex/123".into(),
                ..Default::default()
            },
            "expected/ci-priority/changelog-1b332e4c3-push.json",
        ),
    ];
    for (input, ctx, expected) in cases {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(input)).unwrap()).unwrap();
        let out = catalogue::annotate_jobs(&v, &cfg, &ctx).unwrap();
        let got = catalogue::annotated_text(&out);
        let want = std::fs::read_to_string(root.join(expected)).unwrap();
        if got != want {
            let g: serde_json::Value = serde_json::from_str(&got).unwrap();
            let w: serde_json::Value = serde_json::from_str(&want).unwrap();
            assert_eq!(g, w, "{expected}: values differ");
            panic!("{expected}: same values, different bytes");
        }
    }
    // 1,355 rows in the full sweep, each with a queue token.
    let text =
        std::fs::read_to_string(root.join("expected/ci-priority/full-sweep-pull_request.json"))
            .unwrap();
    assert_eq!(text.matches("\"queue-token\":\"").count(), 1355);
}
