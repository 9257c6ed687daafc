//! `process_changelog` output must equal InferenceX's for each handed change
//! (`../shared/data/inferencex/expected/changelog/<sha>/`: base and head changelog, the master
//! configs and runners at head, `refs.txt`, and `expected.json`, the reference's stdout).

use std::path::{Path, PathBuf};

use inferbench_recipes::changelog::{self, ProcessOptions};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

fn changelog_dir() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(
        env!("CARGO_MANIFEST_DIR"),
        "data/inferencex/expected/changelog",
    )
}

fn run_case(dir: &Path, configs_dir: &Path) -> String {
    let refs = std::fs::read_to_string(dir.join("refs.txt")).unwrap();
    let mut base_ref = String::new();
    let mut head_ref = String::new();
    for part in refs.split_whitespace() {
        if let Some(v) = part.strip_prefix("base=") {
            base_ref = v.to_string();
        }
        if let Some(v) = part.strip_prefix("head=") {
            head_ref = v.to_string();
        }
    }
    let base = std::fs::read_to_string(dir.join("base-perf-changelog.yaml")).unwrap();
    let head = std::fs::read_to_string(dir.join("head-perf-changelog.yaml")).unwrap();
    let added = changelog::added_lines(&base, &head, "base-perf-changelog.yaml").unwrap();
    let entries = changelog::parse_entries(&added, "head-perf-changelog.yaml").unwrap();
    let configs = MasterConfigs::load(&[
        configs_dir.join("amd-master.yaml"),
        configs_dir.join("nvidia-master.yaml"),
    ])
    .unwrap();
    let runners = RunnerConfig::load(&configs_dir.join("runners.yaml")).unwrap();
    let opts = ProcessOptions {
        base_ref,
        head_ref,
        ..Default::default()
    };
    let v = changelog::process(&entries, &configs, &runners, &opts, None).unwrap();
    changelog::to_json_text(&v)
}

fn check(sha: &str) {
    let Some(d) = changelog_dir() else { return };
    let dir = d.join(sha);
    check_with(sha, &dir.join("configs"));
}

fn check_with(sha: &str, configs_dir: &Path) {
    let Some(d) = changelog_dir() else { return };
    let dir = d.join(sha);
    let got = run_case(&dir, configs_dir);
    let want = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    if got != want {
        let g: serde_json::Value = serde_json::from_str(&got).unwrap();
        let w: serde_json::Value = serde_json::from_str(&want).unwrap();
        assert_eq!(g, w, "{sha}: parsed output differs");
        assert_eq!(
            got, want,
            "{sha}: same JSON, different bytes (key order or formatting)"
        );
    }
}

#[test]
fn changelog_1b332e4c3_glm52_mi355x_atom_agentic() {
    check("1b332e4c3");
}
#[test]
fn changelog_2ddf1043c_qwen35_mi355x_disagg() {
    check("2ddf1043c");
}
#[test]
fn changelog_6fd12b471_kimik3_gb300_multinode_agentic() {
    check("6fd12b471");
}
#[test]
fn changelog_762ae70e9_minimaxm3_b300_trtllm() {
    check("762ae70e9");
}
#[test]
fn changelog_81484bdde_dsv4_b200_hicache() {
    // Data quirk: this directory's configs/ do not contain the change its expected.json reflects
    // (image dev-nightly-0820, DEP8 arm conc 32/64/96); the snapshot's configs/ do. With the
    // directory's own configs the output differs only in those config values.
    let Some(d) = changelog_dir() else { return };
    check_with("81484bdde", &d.join("../../configs"));
}
#[test]
fn changelog_9c3f66972_dsv4_mi355x_vllm() {
    check("9c3f66972");
}
#[test]
fn changelog_a030e035c_minimaxm3_b200_trtllm() {
    check("a030e035c");
}
#[test]
fn changelog_bb91726d1_glm52_b200_sglang() {
    check("bb91726d1");
}
#[test]
fn changelog_056876ec1_kimik3_gb200_dynamo_vllm_agentic() {
    // git aligns this addition at `- config-keys:` (a different alignment started it mid-entry
    // and failed with a YAML error); the base's last line, whitespace only, is a permitted
    // deletion.
    check("056876ec1");
}
