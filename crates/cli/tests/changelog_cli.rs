//! `inferbench changelog --repo DIR --base-ref R --head-ref R`: both revisions read with
//! `git show`, configs from the repository, output equal to the reference's.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn changelog_from_two_git_refs() {
    let Some(case) = case_dir() else { return };
    if !inferbench_testutil::command_works("git", &["--version"], "git", "install git") {
        return;
    }
    let repo =
        std::env::temp_dir().join(format!("inferbench-changelog-git-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&repo);
    std::fs::create_dir_all(repo.join("configs")).unwrap();
    for f in ["amd-master.yaml", "nvidia-master.yaml", "runners.yaml"] {
        std::fs::copy(case.join("configs").join(f), repo.join("configs").join(f)).unwrap();
    }
    std::fs::copy(
        case.join("base-perf-changelog.yaml"),
        repo.join("perf-changelog.yaml"),
    )
    .unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(
        &repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-q",
            "-m",
            "base",
        ],
    );
    let base = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::copy(
        case.join("head-perf-changelog.yaml"),
        repo.join("perf-changelog.yaml"),
    )
    .unwrap();
    git(
        &repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-q",
            "-am",
            "head",
        ],
    );
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let out = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .arg("changelog")
        .arg("--repo")
        .arg(&repo)
        .args(["--base-ref", &base, "--head-ref", &head])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read_to_string(case.join("expected.json"))
        .unwrap()
        .replace("13162e8da18018aff7915cae5c04edbe52936ac1", &base)
        .replace("bb91726d161baf66c588aeeafff3aed60b54cf93", &head);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);

    // --check validates the head file (and that base entries are unchanged).
    let out = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .arg("changelog")
        .arg("--repo")
        .arg(&repo)
        .args(["--base-ref", &base, "--head-ref", &head, "--check"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&repo).ok();
}

/// The handed changelog case, or None (skip) when ../shared is absent.
fn case_dir() -> Option<PathBuf> {
    inferbench_testutil::shared_dir(
        env!("CARGO_MANIFEST_DIR"),
        "data/inferencex/expected/changelog/bb91726d1",
    )
}

/// Runs `inferbench changelog ARGS`; returns (exit code, stderr).
fn changelog(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .arg("changelog")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_needs_only_the_head_and_indexes_match_diff_mode() {
    let Some(case) = case_dir() else { return };
    let dir =
        std::env::temp_dir().join(format!("inferbench-changelog-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let os = std::ffi::OsStr::new;
    let head = case.join("head-perf-changelog.yaml");
    let head_text = std::fs::read_to_string(&head).unwrap();
    let n = head_text
        .lines()
        .filter(|l| l.starts_with("- config-keys:"))
        .count();
    let lines = head_text.lines().count();

    // --check with the head alone validates it.
    let (code, err) = changelog(&[os("--head"), head.as_os_str(), os("--check")]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err, format!("{}: {n} entries, valid\n", head.display()));

    // An added entry with an unknown key names the head file, line and entry index.
    let entry = "- config-keys:\n    - nonexistent-key-xyz\n  description:\n    - \"x\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n";
    let bad = dir.join("head.yaml");
    std::fs::write(&bad, format!("{head_text}{entry}")).unwrap();
    let configs = case.join("configs");
    let (code, err) = changelog(&[
        os("--base"),
        head.as_os_str(),
        os("--head"),
        bad.as_os_str(),
        os("--config-files"),
        configs.join("amd-master.yaml").as_os_str(),
        configs.join("nvidia-master.yaml").as_os_str(),
        os("--runner-config"),
        configs.join("runners.yaml").as_os_str(),
    ]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        format!(
            "error: {}:{}:7: [{n}].config-keys[0]: config key 'nonexistent-key-xyz' not found in master configs\n",
            bad.display(),
            lines + 2
        )
    );

    // A field error carries the same entry index in diff mode and in --check.
    std::fs::write(
        &bad,
        format!(
            "{head_text}{}",
            entry.replace("  pr-link:", "  reviewer: me\n  pr-link:")
        ),
    )
    .unwrap();
    let want = format!(
        "error: {}:{}:3: [{n}].reviewer: unknown field (allowed: config-keys, description, pr-link, evals-only, all-evals, append-only, eval-min-prefill-ep, scenario-type)\n",
        bad.display(),
        lines + 5
    );
    let (code, err) = changelog(&[
        os("--base"),
        head.as_os_str(),
        os("--head"),
        bad.as_os_str(),
    ]);
    assert_eq!((code, err.as_str()), (Some(2), want.as_str()));
    let (code, err) = changelog(&[os("--head"), bad.as_os_str(), os("--check")]);
    assert_eq!((code, err.as_str()), (Some(2), want.as_str()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Trial 22: without `--runner-config` the error read "cannot read ./configs/runners.yaml",
/// not saying that this is the flag's default.
#[test]
fn a_missing_default_runner_config_names_the_flag() {
    let Some(case) = case_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let head = case.join("head-perf-changelog.yaml");
    let configs = case.join("configs");
    let out = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .arg("changelog")
        .arg("--base")
        .arg(case.join("base-perf-changelog.yaml"))
        .arg("--head")
        .arg(&head)
        .arg("--config-files")
        .arg(configs.join("amd-master.yaml"))
        .arg(configs.join("nvidia-master.yaml"))
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: no runner config at the default ./configs/runners.yaml (InferenceX's layout: \
         configs/runners.yaml in the repository, --repo or the current directory): pass \
         --runner-config FILE (e.g. examples/sim-runners.yaml)\n"
    );
}
