//! Issue 40 §4: every time read in `client` and `loadgen` (and the sweep's GPU-second
//! account in `runner/src/sweep.rs`) goes through the run clock's seam
//! (`inferbench_client::clock`), so pacing, timeouts and the `--duration` end can run on a
//! virtual clock. This counts direct reads of the system clocks in the library source (each
//! file's text before its `#[cfg(test)]` module): none outside `clock.rs`.

use std::path::{Path, PathBuf};

/// Direct clock reads the seam replaces.
const READS: [&str; 6] = [
    "Instant::now(",
    "SystemTime::now(",
    "Local::now(",
    "Utc::now(",
    ".elapsed()",
    "UNIX_EPOCH.elapsed(",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_time_read_bypasses_the_clock_seam() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&crates.join("client/src"), &mut files);
    rust_files(&crates.join("loadgen/src"), &mut files);
    files.push(crates.join("runner/src/sweep.rs"));
    files.sort();
    assert!(files.len() > 20, "{files:?}");
    let mut found = Vec::new();
    for f in &files {
        if f.file_name().is_some_and(|n| n == "clock.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let lib = text.split("\n#[cfg(test)]").next().unwrap_or_default();
        for (i, line) in lib.lines().enumerate() {
            if READS.iter().any(|r| line.contains(r)) {
                found.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "time reads outside the clock:\n{}",
        found.join("\n")
    );
}
