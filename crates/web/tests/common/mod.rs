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
