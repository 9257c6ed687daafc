//! `inferbench matrix` / `changelog` / `models` end to end through the binary.

use std::path::PathBuf;
use std::process::Command;

fn data() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(env!("CARGO_MANIFEST_DIR"), "data/inferencex")
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

/// A fresh temp dir for one test (removed first, so reruns start clean).
fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("inferbench-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A valid single-node master config with one search-space row; `multinode` and the row's
/// fields are substituted.
fn master(multinode: &str, row: &str) -> String {
    format!(
        "k:\n  image: i\n  model: m\n  model-prefix: p\n  runner: r\n  precision: fp8\n  framework: vllm\n  multinode: {multinode}\n  scenarios:\n    fixed-seq-len:\n    - isl: 8192\n      osl: 1024\n      search-space:\n      - {{ {row} }}\n"
    )
}

/// Runs the binary; returns (exit code, stdout, stderr).
fn run_cli(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn errors_are_printed_once() {
    let dir = tmp("errors-once");
    let cfg = dir.join("boolstr.yaml");
    std::fs::write(&cfg, master("maybe", "tp: 8, conc-start: 4, conc-end: 8")).unwrap();
    let runners = dir.join("runners.yaml");
    std::fs::write(&runners, "labels:\n  r: [r_0]\n").unwrap();
    let missing = dir.join("missing.yaml");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let (code, _, err) = run_cli(&[
        os("matrix"),
        os("--config-files"),
        cfg.as_os_str(),
        os("--runner-config"),
        runners.as_os_str(),
        os("full-sweep"),
    ]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        format!(
            "error: {}:8:14: k.multinode: must be a boolean, found string 'maybe'\n",
            cfg.display()
        )
    );
    let enoent = std::fs::read(&missing).unwrap_err();
    let want_missing = format!("error: cannot read {}: {enoent}\n", missing.display());
    for argv in [
        vec![
            os("matrix"),
            os("--config-files"),
            missing.as_os_str(),
            os("--runner-config"),
            runners.as_os_str(),
            os("full-sweep"),
        ],
        vec![
            os("models"),
            os("support"),
            os("--config-files"),
            missing.as_os_str(),
        ],
        vec![
            os("models"),
            os("dram-check"),
            os("--config-files"),
            missing.as_os_str(),
        ],
        vec![
            os("changelog"),
            os("--base"),
            missing.as_os_str(),
            os("--head"),
            missing.as_os_str(),
        ],
    ] {
        let (code, _, err) = run_cli(&argv);
        assert_eq!(code, Some(2), "{argv:?}");
        assert_eq!(err, want_missing, "{argv:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn models_support_validates_active_configs_and_needs_an_existing_deprecated_dir() {
    let dir = tmp("models-support");
    let os = std::ffi::OsStr::new;
    let bad = dir.join("four.yaml");
    std::fs::write(
        &bad,
        master("false", "tp: \"four\", conc-start: 4, conc-end: 8"),
    )
    .unwrap();
    let good = dir.join("good.yaml");
    std::fs::write(&good, master("false", "tp: 8, conc-start: 4, conc-end: 8")).unwrap();
    let dep = dir.join("deprecated");
    std::fs::create_dir_all(&dep).unwrap();
    // Deprecated files are read leniently: a schema problem there is tolerated.
    std::fs::write(
        dep.join("old.yaml"),
        master("false", "tp: \"four\", conc-start: 4, conc-end: 8").replacen("k:\n", "old:\n", 1),
    )
    .unwrap();

    let (code, out, err) = run_cli(&[
        os("models"),
        os("support"),
        os("--config-files"),
        bad.as_os_str(),
        os("--deprecated-dir"),
        dep.as_os_str(),
    ]);
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert_eq!(
        err,
        format!(
            "error: {}:14:15: k.scenarios.fixed-seq-len[0].search-space[0].tp: must be an integer, found string 'four'\n",
            bad.display()
        )
    );
    let missing = dir.join("nope");
    let (code, out, err) = run_cli(&[
        os("models"),
        os("support"),
        os("--config-files"),
        good.as_os_str(),
        os("--deprecated-dir"),
        missing.as_os_str(),
    ]);
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert_eq!(
        err,
        format!(
            "error: --deprecated-dir: cannot read directory {}: {}\n",
            missing.display(),
            std::fs::read_dir(&missing).unwrap_err()
        )
    );
    let (code, out, err) = run_cli(&[
        os("models"),
        os("support"),
        os("--config-files"),
        good.as_os_str(),
        os("--deprecated-dir"),
        dep.as_os_str(),
    ]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert_eq!(
        out,
        "model-prefix  scenario  status      configs  precisions  frameworks  runners\n\
         p             8k1k      active      1        fp8         vllm        r\n\
         p             8k1k      deprecated  1        fp8         vllm        r\n"
    );
    // Without --deprecated-dir: `deprecated/` beside the config files, as InferenceX lays
    // them out (trial 20: only ./configs/deprecated was looked for).
    let (code, again, err) = run_cli(&[
        os("models"),
        os("support"),
        os("--config-files"),
        good.as_os_str(),
    ]);
    assert_eq!((code, err.as_str(), again), (Some(0), "", out));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn empty_selection_prints_empty_list_and_warns() {
    let dir = tmp("matrix-empty");
    let os = std::ffi::OsStr::new;
    let cfg = dir.join("m.yaml");
    std::fs::write(&cfg, master("false", "tp: 8, conc-start: 4, conc-end: 8")).unwrap();
    let runners = dir.join("runners.yaml");
    std::fs::write(&runners, "labels:\n  r: [r_0]\n").unwrap();
    let warning =
        "warning: no matrix rows matched the selection and filters; the output is an empty list\n";
    for extra in [
        &["full-sweep", "--precision", "fp3"][..],
        &["--runner-node-filter", "zzz", "full-sweep"][..],
    ] {
        let mut argv = vec![
            os("matrix"),
            os("--config-files"),
            cfg.as_os_str(),
            os("--runner-config"),
            runners.as_os_str(),
        ];
        argv.extend(extra.iter().map(|s| os(s)));
        let (code, out, err) = run_cli(&argv);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (Some(0), "[]\n", warning),
            "{extra:?}"
        );
    }
    // A non-empty selection prints no warning.
    let (code, out, err) = run_cli(&[
        os("matrix"),
        os("--config-files"),
        cfg.as_os_str(),
        os("--runner-config"),
        runners.as_os_str(),
        os("full-sweep"),
    ]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert!(out.starts_with("[{"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The shipped sim example (no ../shared needed): both argument orders give the same rows, and
/// a missing default runners.yaml says which flag to pass.
#[test]
fn example_config_in_either_argument_order_and_missing_default_runners() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cfg = root.join("examples/sim.yaml");
    let runners = root.join("examples/sim-runners.yaml");
    let flags_first = bin()
        .arg("matrix")
        .arg("--config-files")
        .arg(&cfg)
        .arg("--runner-config")
        .arg(&runners)
        .arg("full-sweep")
        .output()
        .unwrap();
    let sub_first = bin()
        .args(["matrix", "full-sweep", "--config-files"])
        .arg(&cfg)
        .arg("--runner-config")
        .arg(&runners)
        .output()
        .unwrap();
    assert!(
        flags_first.status.success(),
        "{}",
        String::from_utf8_lossy(&flags_first.stderr)
    );
    assert_eq!(flags_first.stdout, sub_first.stdout);
    let rows: serde_json::Value = serde_json::from_slice(&flags_first.stdout).unwrap();
    let concs: Vec<i64> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["conc"].as_i64().unwrap())
        .collect();
    assert_eq!(concs, vec![1, 2, 4, 8, 16]);
    assert_eq!(rows[0]["framework"], "sim");
    assert_eq!(rows[0]["runner"], "h100");
    // No --runner-config and no configs/runners.yaml in the current directory.
    let o = bin()
        .current_dir(std::env::temp_dir())
        .args(["matrix", "full-sweep", "--config-files"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: no runner config at the default configs/runners.yaml (InferenceX's layout, \
         relative to the current directory): pass --runner-config FILE (e.g. \
         examples/sim-runners.yaml)\n"
    );
}
