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
    let case = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/inferencex/expected/changelog/bb91726d1");
    if !case.is_dir() {
        if std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() == Ok("1") {
            panic!("../shared/data/inferencex is required (INFERBENCH_REQUIRE_SERVICES=1)");
        }
        eprintln!("skipping: ../shared/data/inferencex not found");
        return;
    }
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipping: git not installed");
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
