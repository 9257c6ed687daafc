//! inferbench-testutil: what the test suites of several crates share, kept out of the
//! libraries' public APIs (issue 12). `publish = false`; a dev-dependency only.
//!
//! - [`replay`]: an in-process HTTP/1.1 server that answers with one recorded response
//!   (`shared/cases/` format), byte for byte with its pauses.
//! - [`shared_dir`]: the project's `../shared` folder, or a skip that fails under
//!   `INFERBENCH_REQUIRE_SERVICES=1` (CI) instead of passing silently.
#![deny(missing_docs)]

pub mod replay;

use std::path::{Path, PathBuf};

/// `<workspace>/../shared/<rel>` when it exists. Otherwise `None` after a "skipping" line on
/// stderr, so a suite can return early on a checkout without the shared folder; under
/// `INFERBENCH_REQUIRE_SERVICES=1` (what `.ci/run` sets) a missing folder panics instead, so CI
/// never passes a suite that did not run. `manifest_dir`: the calling crate's
/// `env!("CARGO_MANIFEST_DIR")` (`crates/<name>`).
pub fn shared_dir(manifest_dir: &str, rel: &str) -> Option<PathBuf> {
    let p = Path::new(manifest_dir).join("../../../shared").join(rel);
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() != Ok("1"),
        "{} is missing but INFERBENCH_REQUIRE_SERVICES=1: check the shared folder out beside \
         this repository",
        p.display()
    );
    eprintln!(
        "skipping: {} not found (check ../shared out beside this repository)",
        p.display()
    );
    None
}
