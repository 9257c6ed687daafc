//! Issue 40 §1: a point's configuration has one typed shape (`inferbench_core::point::PointConfig`)
//! and its fields one spelling. Counted over library source (every crate but `cli`, `sim` and
//! `testutil`; each file's text before its `#[cfg(test)]` module, `tests.rs` files and comment
//! lines not counted): one `Topology` type, the DP-attention field's names (`dp_attention`,
//! `dp-attn`) spelled as string literals in at most 4 files, and (§2) no unit read from a key's
//! suffix (units come from the tables of `core::summary::keys`).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs")
            && p.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(p);
        }
    }
}

/// `(file, code lines)` of the library source: text before `#[cfg(test)]`, no comment lines.
fn library_source() -> Vec<(PathBuf, Vec<String>)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&crates).unwrap() {
        let c = e.unwrap().path();
        if c.file_name()
            .is_some_and(|n| n != "cli" && n != "sim" && n != "testutil")
        {
            rust_files(&c.join("src"), &mut files);
        }
    }
    files.sort();
    assert!(files.len() > 100, "{}", files.len());
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let lib = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code = lib
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .map(str::to_string)
                .collect();
            (f, code)
        })
        .collect()
}

/// The library files whose code has a line matching `hit`.
fn files_where(hit: impl Fn(&str) -> bool) -> Vec<String> {
    library_source()
        .into_iter()
        .filter(|(_, code)| code.iter().any(|l| hit(l)))
        .map(|(f, _)| f.display().to_string())
        .collect()
}

#[test]
fn one_topology_type() {
    let found = files_where(|l| l.contains("struct Topology ") || l.contains("enum Topology "));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("summary/inferencex.rs"), "{found:?}");
}

#[test]
fn the_dp_attention_field_is_spelled_in_at_most_four_files() {
    let found = files_where(|l| l.contains("\"dp_attention\"") || l.contains("\"dp-attn\""));
    assert!(found.len() <= 4, "{found:#?}");
}

/// Whether code line `l` reads a unit from a key's suffix: `ends_with`, `strip_suffix`,
/// `trim_end_matches`, `rsplit_once` or `replace` on `"ms"`, `"_ms"` or `"_s"` (spaces ignored).
fn reads_a_unit_from_a_suffix(l: &str) -> bool {
    let l = l.replace(' ', "");
    let calls = [
        "ends_with(",
        "strip_suffix(",
        "trim_end_matches(",
        "rsplit_once(",
        "replace(",
    ];
    let suffixes = ["\"ms\"", "\"_ms\"", "\"_s\""];
    calls
        .iter()
        .any(|c| suffixes.iter().any(|s| l.contains(&format!("{c}{s}"))))
}

/// §2: nothing infers a unit from a key's name ([`reads_a_unit_from_a_suffix`]) in library
/// code: the statistics' keys and units are the tables of `core::summary::keys`.
#[test]
fn no_unit_is_read_from_a_key_suffix() {
    let found = files_where(reads_a_unit_from_a_suffix);
    assert_eq!(found, Vec::<String>::new());
}

/// The counter sees each kind of suffix read it looks for, and not a key merely named.
#[test]
fn the_suffix_counter_sees_each_kind() {
    for line in [
        "if key.ends_with(\"ms\") {",
        "let k = key.replace(\"_ms\", \"\");",
        "k.strip_suffix( \"_ms\")",
        "k.trim_end_matches(\"_s\")",
        "k.rsplit_once(\"_ms\")",
    ] {
        assert!(reads_a_unit_from_a_suffix(line), "{line}");
    }
    assert!(!reads_a_unit_from_a_suffix("m.get(\"p99_ttft_ms\")"));
}
