//! `inferbench matrix` / `changelog` / `models` end to end through the binary.

use std::path::PathBuf;
use std::process::Command;

fn data() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/inferencex");
    if d.join("configs/nvidia-master.yaml").exists() {
        return Some(d);
    }
    if std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() == Ok("1") {
        panic!("../shared/data/inferencex is required (INFERBENCH_REQUIRE_SERVICES=1)");
    }
    eprintln!("skipping: ../shared/data/inferencex not found");
    None
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_inferbench"))
}

#[test]
fn matrix_cli_prints_the_reference_bytes() {
    let Some(d) = data() else { return };
    let out = bin()
        .arg("matrix")
        .arg("--config-files")
        .arg(d.join("configs/nvidia-master.yaml"))
        .arg("--runner-config")
        .arg(d.join("configs/runners.yaml"))
        .args(["full-sweep", "--multi-node", "--max-conc", "256"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read(d.join("expected/full-sweep-multinode.json")).unwrap();
    assert!(
        out.stdout == want,
        "stdout differs from expected/full-sweep-multinode.json"
    );
}

#[test]
fn changelog_cli_prints_the_reference_bytes() {
    let Some(d) = data() else { return };
    let c = d.join("expected/changelog/bb91726d1");
    let out = bin()
        .arg("changelog")
        .arg("--base")
        .arg(c.join("base-perf-changelog.yaml"))
        .arg("--head")
        .arg(c.join("head-perf-changelog.yaml"))
        .args(["--base-ref", "13162e8da18018aff7915cae5c04edbe52936ac1"])
        .args(["--head-ref", "bb91726d161baf66c588aeeafff3aed60b54cf93"])
        .arg("--config-files")
        .arg(c.join("configs/amd-master.yaml"))
        .arg(c.join("configs/nvidia-master.yaml"))
        .arg("--runner-config")
        .arg(c.join("configs/runners.yaml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read(c.join("expected.json")).unwrap();
    assert!(out.stdout == want, "stdout differs from expected.json");
}

#[test]
fn bad_config_exits_2_naming_file_line_field() {
    let dir = std::env::temp_dir().join(format!("inferbench-matrix-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bad.yaml");
    std::fs::write(&cfg, "k:\n  image: i\n  model: m\n  model-prefix: p\n  runner: r\n  precision: fp8\n  framework: vllm\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - { isl: 1024, osl: 1024, search-space: [ { tp: 8, conc-start: 8, conc-end: 4 } ] }\n").unwrap();
    let runners = dir.join("runners.yaml");
    std::fs::write(&runners, "labels:\n  r: [r_0]\n").unwrap();
    let out = bin()
        .arg("matrix")
        .arg("--config-files")
        .arg(&cfg)
        .arg("--runner-config")
        .arg(&runners)
        .arg("full-sweep")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml:11:") && err.contains("k.scenarios.fixed-seq-len[0].search-space[0].conc-start: 'conc-start' (8) must be <= 'conc-end' (4)"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
