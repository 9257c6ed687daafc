//! `inferbench changelog` selects the additions git's diff gives, in both the two-file and the
//! `--repo` mode, with git (`--diff git`), with the built-in diff (`--diff builtin`) and with
//! `auto` where git is absent: byte-exact InferenceX output on case 056876ec1, where another
//! alignment of the additions started them mid-entry and failed with a YAML error.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SHA: &str = "056876ec1";

fn case() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(
        env!("CARGO_MANIFEST_DIR"),
        &format!("data/inferencex/expected/changelog/{SHA}"),
    )
}

fn has_git() -> bool {
    inferbench_testutil::command_works("git", &["--version"], "git", "install git")
}

/// (base sha, head sha) from refs.txt.
fn refs(case: &Path) -> (String, String) {
    let t = std::fs::read_to_string(case.join("refs.txt")).unwrap();
    let get = |k: &str| {
        t.split_whitespace()
            .find_map(|p| p.strip_prefix(k))
            .unwrap()
            .to_string()
    };
    (get("base="), get("head="))
}

fn inferbench(args: &[&OsStr], path: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inferbench"));
    cmd.arg("changelog").args(args);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    // A user git configuration that would change the diff (another algorithm, no indent
    // heuristic, no context: git then trims the common tail first) must not matter.
    for (i, (k, v)) in [
        ("diff.algorithm", "histogram"),
        ("diff.indentHeuristic", "false"),
        ("diff.context", "0"),
        ("diff.noprefix", "true"),
    ]
    .into_iter()
    .enumerate()
    {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), k)
            .env(format!("GIT_CONFIG_VALUE_{i}"), v);
    }
    cmd.env("GIT_CONFIG_COUNT", "4")
        .env("GIT_DIFF_OPTS", "--unified=0");
    cmd.output().unwrap()
}

fn ok_stdout(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn two_file_args(case: &Path, engine: &str) -> Vec<std::ffi::OsString> {
    let (b, h) = refs(case);
    let c = case.join("configs");
    [
        "--base".into(),
        case.join("base-perf-changelog.yaml").into_os_string(),
        "--head".into(),
        case.join("head-perf-changelog.yaml").into_os_string(),
        "--base-ref".into(),
        b.into(),
        "--head-ref".into(),
        h.into(),
        "--config-files".into(),
        c.join("amd-master.yaml").into_os_string(),
        c.join("nvidia-master.yaml").into_os_string(),
        "--runner-config".into(),
        c.join("runners.yaml").into_os_string(),
        "--diff".into(),
        engine.into(),
    ]
    .into_iter()
    .collect()
}

#[test]
fn two_files_with_git_and_builtin_diff_print_the_reference_bytes() {
    let Some(case) = case() else { return };
    let want = std::fs::read_to_string(case.join("expected.json")).unwrap();
    let mut engines = vec!["builtin", "auto"];
    if has_git() {
        engines.push("git");
    }
    for engine in engines {
        let args = two_file_args(&case, engine);
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        assert_eq!(
            ok_stdout(&inferbench(&args, None), engine),
            want,
            "--diff {engine}"
        );
    }
}

#[test]
fn without_git_auto_falls_back_to_the_builtin_diff() {
    let Some(case) = case() else { return };
    let want = std::fs::read_to_string(case.join("expected.json")).unwrap();
    let empty = std::env::temp_dir().join(format!("inferbench-nogit-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let args = two_file_args(&case, "auto");
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = inferbench(&args, Some(&empty));
    assert_eq!(ok_stdout(&out, "auto without git"), want);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("note: git not available ("),
        "stderr: {err}"
    );
    // Asked for git where there is none: an error naming git, no output.
    let args = two_file_args(&case, "git");
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = inferbench(&args, Some(&empty));
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot run git"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&empty).ok();
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn repo_mode_with_git_and_builtin_diff_prints_the_reference_bytes() {
    let Some(case) = case() else { return };
    if !has_git() {
        return;
    }
    let repo = std::env::temp_dir().join(format!("inferbench-cl-diff-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&repo);
    std::fs::create_dir_all(repo.join("configs")).unwrap();
    for f in ["amd-master.yaml", "nvidia-master.yaml", "runners.yaml"] {
        std::fs::copy(case.join("configs").join(f), repo.join("configs").join(f)).unwrap();
    }
    let cl = repo.join("perf-changelog.yaml");
    std::fs::copy(case.join("base-perf-changelog.yaml"), &cl).unwrap();
    git(&repo, &["init", "-q"]);
    // A user configuration that would change the diff must not matter.
    git(&repo, &["config", "diff.algorithm", "histogram"]);
    git(&repo, &["config", "diff.indentHeuristic", "false"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::copy(case.join("head-perf-changelog.yaml"), &cl).unwrap();
    git(&repo, &["commit", "-q", "-am", "head"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let (b0, h0) = refs(&case);
    let want = std::fs::read_to_string(case.join("expected.json"))
        .unwrap()
        .replace(&b0, &base)
        .replace(&h0, &head);
    for engine in ["git", "builtin", "auto"] {
        let out = inferbench(
            &[
                OsStr::new("--repo"),
                repo.as_os_str(),
                OsStr::new("--base-ref"),
                OsStr::new(&base),
                OsStr::new("--head-ref"),
                OsStr::new(&head),
                OsStr::new("--diff"),
                OsStr::new(engine),
            ],
            None,
        );
        assert_eq!(ok_stdout(&out, engine), want, "--repo --diff {engine}");
    }
    std::fs::remove_dir_all(&repo).ok();
}
