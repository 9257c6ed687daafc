//! Records the git commit of the checkout as `INFERBENCH_GIT_SHA` for `job.json` provenance.
//! Reruns only when HEAD or the checked-out branch ref moves.
use std::path::Path;
use std::process::Command;

fn main() {
    let git = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.git");
    let head = git.join("HEAD");
    println!("cargo:rerun-if-changed={}", head.display());
    println!("cargo:rerun-if-env-changed=INFERBENCH_GIT_SHA");
    if let Ok(text) = std::fs::read_to_string(&head) {
        if let Some(r) = text.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed={}", git.join(r).display());
        }
    }
    if std::env::var("INFERBENCH_GIT_SHA").is_ok() {
        return;
    }
    let sha = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=INFERBENCH_GIT_SHA={sha}");
}
