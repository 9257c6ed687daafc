//! Helpers shared by the web crate's test binaries.

use std::path::Path;

/// Copies the tree `from` to `to`, with each `(what, with)` replaced in its JSON files.
pub fn copy_tree_replacing(from: &Path, to: &Path, swaps: &[(&str, &str)]) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree_replacing(&e.path(), &dst, swaps);
        } else if dst.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let text = swaps
                .iter()
                .fold(text, |t, (what, with)| t.replace(what, with));
            std::fs::write(dst, text).unwrap();
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The store's sweep-h200 fixture, and a copy of it in `dir/h100` run on h100 whose points are
/// all invalid (the producer's `inferbench.invalid_reason`): returns (fixture, copy), the two
/// directories to ingest.
pub fn sweep_and_invalid_h100_copy(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    let bad = dir.join("h100");
    copy_tree_replacing(
        &fx,
        &bad,
        &[
            ("h200-nv_0", "h100-nv_0"),
            ("sweep-2026-03-01-h200", "sweep-2026-03-01-h100"),
            (
                "\"inferbench\": {",
                "\"inferbench\": {\"invalid_reason\": \"the server fell behind\",",
            ),
        ],
    );
    (fx, bad)
}
