//! inferbench-testutil: what the test suites of several crates share, kept out of the
//! libraries' public APIs (issue 12). `publish = false`; a dev-dependency only.
//!
//! - [`replay`]: an in-process HTTP/1.1 server that answers with one recorded response
//!   (`shared/cases/` format), byte for byte with its pauses.
//! - [`records`]: request records built from explicit times.
//! - [`tap`]: a TCP forwarder that keeps what clients send (a counting proxy).
//! - [`browser`]: headless Chromium's DOM of a page, and the readers tests judge it with.
//! - [`tls`]: a TLS front with a test CA for `https://` targets.
//! - [`shared_dir`], [`env_or_skip`], [`command_works`], [`available`]: what a test needs (the
//!   project's `../shared` folder, a service a setup script started, a program), or a skip that
//!   fails under `INFERBENCH_REQUIRE_SERVICES=1` (CI) instead of passing silently.
#![deny(missing_docs)]

pub mod browser;
pub mod records;
pub mod replay;
pub mod tap;
pub mod tls;

use std::path::{Path, PathBuf};

/// Whether `INFERBENCH_REQUIRE_SERVICES=1` (what `.ci/run` sets): a test must then fail, not
/// skip, when something it needs is missing.
pub fn services_required() -> bool {
    std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() == Ok("1")
}

/// Whether a test may go on: `true` when `ok`. Otherwise a `skipping: WHAT is missing (HOW)`
/// line on stderr and `false`, or, under [`services_required`], a panic with the same words, so
/// CI never passes a test that did not run. `what`: the missing thing; `how`: how to get it.
pub fn available(ok: bool, what: &str, how: &str) -> bool {
    if ok {
        return true;
    }
    assert!(
        !services_required(),
        "{what} is missing ({how}) but INFERBENCH_REQUIRE_SERVICES=1"
    );
    eprintln!("skipping: {what} is missing ({how})");
    false
}

/// The environment variable `var` (a setup script exports it), or `None` after
/// [`available`]'s skip. `how`: the setup script to run.
pub fn env_or_skip(var: &str, how: &str) -> Option<String> {
    let v = std::env::var(var).ok().filter(|v| !v.is_empty());
    available(v.is_some(), var, how).then(|| v.unwrap_or_default())
}

/// Whether `program args…` runs and exits 0 (`python3 -c "import yaml"`, `git --version`),
/// else [`available`]'s skip naming `what` and `how`.
pub fn command_works(program: &str, args: &[&str], what: &str, how: &str) -> bool {
    let ok = std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    available(ok, what, how)
}

/// `<workspace>/../shared/<rel>` when it exists. Otherwise `None` after a "skipping" line on
/// stderr, so a suite can return early on a checkout without the shared folder; under
/// `INFERBENCH_REQUIRE_SERVICES=1` (what `.ci/run` sets) a missing folder panics instead, so CI
/// never passes a suite that did not run. `manifest_dir`: the calling crate's
/// `env!("CARGO_MANIFEST_DIR")` (`crates/<name>`).
pub fn shared_dir(manifest_dir: &str, rel: &str) -> Option<PathBuf> {
    let p = Path::new(manifest_dir).join("../../../shared").join(rel);
    available(
        p.exists(),
        &p.display().to_string(),
        "check the shared folder out beside this repository",
    )
    .then_some(p)
}
