//! The command layer lives in the CLI (issue 40 §3): the library crates listed in [`CRATES`]
//! carry no `flags.rs`, print nothing and define or use no exit code. Counted over each
//! library source file's text before its `#[cfg(test)]` module, comment lines not counted:
//! `print!` / `println!` / `eprint!` / `eprintln!`; `ExitCode`, our `ExitStatus` (a child
//! process's `std::process::ExitStatus` is fine), `StatusError`, `process::exit`, `EXIT_*`
//! constants. The libraries return typed ends and errors (`inferbench_core::RunEnd`,
//! `ServedModelError`, …), hand lines to `inferbench_core::notice` and progress to
//! `inferbench_loadgen::progress`; the CLI prints and maps them to exit codes.

use std::path::{Path, PathBuf};

/// The library crates this check covers (`crates/<name>`).
const CRATES: [&str; 4] = ["loadgen", "runner", "client", "core"];

/// Files allowed their hits for now (none: core's exit codes are the CLI's
/// `crates/cli/src/cmd/exit.rs`). An entry without hits fails the check, so none outlives its
/// reason.
const PENDING: [&str; 0] = [];

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The library text of a source file: the lines before its first `#[cfg(test)]` line,
/// comment lines (`//`, `///`, `//!`) left out.
fn library_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim_start() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
}

/// What `line` holds of the command layer: each print macro and exit-code name it uses.
fn hits(line: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for mac in ["print!(", "println!(", "eprint!(", "eprintln!("] {
        // `print!(` is inside `eprint!(`: count a macro only where its name starts.
        let mut at = 0;
        while let Some(i) = line[at..].find(mac) {
            let start = at + i;
            let before = line[..start].chars().next_back();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                found.push(mac);
            }
            at = start + mac.len();
        }
    }
    for name in ["ExitCode", "StatusError", "process::exit"] {
        found.extend(line.matches(name).map(|_| name));
    }
    // Our ExitStatus; a child's `process::ExitStatus` (and std's `ExitStatusExt`) is fine.
    let mut at = 0;
    while let Some(i) = line[at..].find("ExitStatus") {
        let start = at + i;
        let end = start + "ExitStatus".len();
        let std_one = line[..start].ends_with("process::") || line[end..].starts_with("Ext");
        if !std_one {
            found.push("ExitStatus");
        }
        at = end;
    }
    let mut at = 0;
    while let Some(i) = line[at..].find("EXIT_") {
        let start = at + i;
        let before = line[..start].chars().next_back();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            found.push("EXIT_*");
        }
        at = start + "EXIT_".len();
    }
    found
}

/// The counter finds what it is meant to and nothing else.
#[test]
fn the_counter_finds_prints_and_exit_codes() {
    assert_eq!(hits(r#"eprintln!("{x}");"#), ["eprintln!("]);
    assert_eq!(
        hits(r#"print!("a"); println!("b")"#),
        ["print!(", "println!("]
    );
    assert_eq!(hits("return Ok(ExitStatus::Failed);"), ["ExitStatus"]);
    assert_eq!(hits("std::process::exit(2)"), ["process::exit"]);
    assert_eq!(hits("pub const EXIT_ERROR_RATE: i32 = 1;"), ["EXIT_*"]);
    assert_eq!(
        hits("Err(StatusError { status, message })"),
        ["StatusError"]
    );
    assert!(hits("fn try_exited(&mut self) -> Option<std::process::ExitStatus> {").is_empty());
    assert!(hits("use std::os::unix::process::ExitStatusExt as _;").is_empty());
    assert!(hits("let notice = format!(\"{x}\"); sprint!(y)").is_empty());
    let text =
        "/// eprintln!(\"doc\")\nfn f() {}\n#[cfg(test)]\nmod tests { fn g() { println!(); } }\n";
    assert_eq!(library_lines(text).count(), 1);
}

/// No `flags.rs`, print or exit code in the library source of [`CRATES`], except the
/// [`PENDING`] files, each of which still has hits.
#[test]
fn libraries_carry_no_command_layer() {
    let root = root();
    let mut found = Vec::new();
    let mut pending_hits = vec![0usize; PENDING.len()];
    for krate in CRATES {
        let src = root.join("crates").join(krate).join("src");
        for file in rust_files(&src) {
            let rel = file.strip_prefix(&root).unwrap().display().to_string();
            if file.file_name().is_some_and(|n| n == "flags.rs") {
                found.push(format!(
                    "{rel}: a flags.rs (the command layer is the CLI's)"
                ));
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in library_lines(&text) {
                for h in hits(line) {
                    match PENDING.iter().position(|p| *p == rel) {
                        Some(i) => pending_hits[i] += 1,
                        None => found.push(format!("{rel}:{n}: {h} in `{}`", line.trim())),
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the command layer in library source:\n{}",
        found.join("\n")
    );
    let stale: Vec<&str> = (PENDING.iter().zip(&pending_hits))
        .filter(|(_, n)| **n == 0)
        .map(|(p, _)| *p)
        .collect();
    assert!(stale.is_empty(), "PENDING entries without hits: {stale:?}");
}
