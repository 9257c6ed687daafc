//! `inferbench models priority` prints what InferenceX's `utils/ci_priority.py` prints for the
//! same matrix and flags: the two recorded invocations byte for byte, and, where python3 with
//! PyYAML is installed, the script itself run on more flag combinations (it is the oracle).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn shared() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(env!("CARGO_MANIFEST_DIR"), "data/inferencex")
}

fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or_default()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn ours(args: &[String], stdin: Option<&[u8]>) -> Output {
    run(
        Command::new(env!("CARGO_BIN_EXE_inferbench"))
            .args(["models", "priority"])
            .args(args),
        stdin,
    )
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn recorded_invocations_print_the_reference_bytes() {
    let Some(d) = shared() else { return };
    let policy = s(&d.join("configs/ci-priority.yaml"));
    let cases = [
        (
            vec![
                "--event-name",
                "pull_request",
                "--labels-json",
                r#"["sweep-enabled","ci-checklist-complete"]"#,
                "--input",
            ],
            "expected/full-sweep.json",
            "expected/ci-priority/full-sweep-pull_request.json",
        ),
        (
            vec![
                "--event-name",
                "push",
                "--queue-namespace",
                "inferencex/123",
                "--input",
            ],
            "expected/changelog/1b332e4c3/expected.json",
            "expected/ci-priority/changelog-1b332e4c3-push.json",
        ),
    ];
    for (flags, input, expected) in cases {
        let mut args: Vec<String> = vec!["--policy".into(), policy.clone()];
        args.extend(flags.iter().map(|f| f.to_string()));
        args.push(s(&d.join(input)));
        let out = ours(&args, None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = std::fs::read(d.join(expected)).unwrap();
        assert!(out.stdout == want, "{expected}: output differs");
    }
}

fn have_oracle() -> bool {
    inferbench_testutil::command_works(
        "python3",
        &["-c", "import yaml"],
        "python3 with PyYAML (the ci_priority.py oracle)",
        "scripts/setup/python.sh installs python3-yaml",
    )
}

#[test]
fn same_output_as_ci_priority_py_for_more_flags() {
    let Some(d) = shared() else { return };
    if !have_oracle() {
        return;
    }
    let script = d.join("utils/ci_priority.py");
    let tmp = std::env::temp_dir().join(format!("inferbench-prio-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // A policy with amounts past three decimals, strings and negatives: exact decimals, half-up.
    let odd = tmp.join("odd.yaml");
    std::fs::write(
        &odd,
        "version: 1\nbase-score: 1.0005\nadjustments:\n  event:\n    push: '2.0004'\n  multi-node: -0.0015\n  agentic: 1\n  eval-only: 0.25\n  precision:\n    fp4: 0.0005\n    fp8: -3.3335\n  spec-decoding:\n    mtp: 1e-3\n  framework-prefix:\n    dynamo: 0.1\n    dynamo-vllm: 5\n    sglang: 0.5\n  model-prefix:\n    kimik3: 1.5\n    dsr1: 0.0004\nlabels:\n  skip-queue:\n    name: skip_queue\n  checklist-complete:\n    names: [ci-checklist-complete]\n    adjustment: 0.0001\n  patchwork:\n    names: [ci-patchwork, engine-patch]\n    score: -0.0005\n    waived-by: [ci-patchwork-waived]\n",
    )
    .unwrap();
    let real = d.join("configs/ci-priority.yaml");
    let inputs = [
        "expected/changelog/056876ec1/expected.json",
        "expected/full-sweep-multinode.json",
        "expected/test-config-sample.json",
    ];
    let flag_sets: Vec<Vec<&str>> = vec![
        vec![],
        vec![
            "--event-name",
            "push",
            "--pr-number",
            "42",
            "--labels-json",
            r#"["skip_queue"]"#,
        ],
        vec![
            "--event-name",
            "pull_request",
            "--criteria-json",
            r#"["fp4","agentic","dynamo-vllm","kimik3","multi-node","checklist-complete"]"#,
        ],
        vec!["--labels-json", r#"["engine-patch"]"#, "--pr-number", "7"],
        vec![
            "--labels-json",
            r#"["ci-patchwork","ci-patchwork-waived","ci-checklist-complete"]"#,
            "--queue-namespace",
            "x/\u{fc}",
        ],
        vec![
            "--criteria-json",
            "null",
            "--labels-json",
            "null",
            "--event-name",
            "push",
        ],
        vec!["--criteria-json", r#"["patchwork"]"#],
    ];
    let mut compared = 0;
    for policy in [&real, &odd] {
        for input in inputs {
            let text = std::fs::read(d.join(input)).unwrap();
            for flags in &flag_sets {
                let mut args: Vec<String> = vec!["--policy".into(), s(policy)];
                args.extend(flags.iter().map(|f| f.to_string()));
                // The matrix on stdin, like the workflow pipes it.
                let want = run(
                    Command::new("python3").arg(&script).args(&args),
                    Some(&text),
                );
                assert!(
                    want.status.success(),
                    "oracle: {}",
                    String::from_utf8_lossy(&want.stderr)
                );
                let got = ours(&args, Some(&text));
                assert!(
                    got.status.success(),
                    "{}",
                    String::from_utf8_lossy(&got.stderr)
                );
                assert!(
                    got.stdout == want.stdout,
                    "{} {input} {flags:?}: output differs from ci_priority.py",
                    policy.display()
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 2 * inputs.len() * flag_sets.len());
    // Unknown criteria: both refuse (the script with a traceback), naming them sorted.
    let args: Vec<String> = vec![
        "--policy".into(),
        s(&real),
        "--criteria-json".into(),
        r#"["zz","fp9"]"#.into(),
        "--input".into(),
        s(&d.join(inputs[0])),
    ];
    let want = run(Command::new("python3").arg(&script).args(&args), None);
    assert!(!want.status.success());
    assert!(String::from_utf8_lossy(&want.stderr)
        .contains("Unknown CI priority criteria: ['fp9', 'zz']"));
    let got = ours(&args, None);
    assert_eq!(got.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&got.stderr)
            .contains("Unknown CI priority criteria: ['fp9', 'zz']"),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    std::fs::remove_dir_all(&tmp).ok();
}
