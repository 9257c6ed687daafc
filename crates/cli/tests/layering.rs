//! Issue 40 §3: the command layer lives in the CLI. Library crates return typed values and
//! errors; flag structs (`flags.rs`), printing and exit codes are `crates/cli`'s. This counts,
//! over each library crate's source (every crate but `cli`, `sim` and `testutil`; a file's text
//! before its `#[cfg(test)]` module, comment lines not counted), its `flags.rs` files, its
//! `print!`/`println!`/`eprint!`/`eprintln!` lines and its exit-code references (`ExitStatus`,
//! `ExitCode`, `StatusError`, `process::exit`; a child process's `std::process::ExitStatus` is
//! not one; nor is std's `ExitStatusExt`; our old `EXIT_*` constants are), and asserts none in
//! any of them: every command layer has moved (c1: eval, recipes, store, views, web, sim; c2:
//! loadgen, runner, client, core).

use std::path::{Path, PathBuf};

/// Library crates that must exist (a crate renamed or gone would otherwise pass unseen); every
/// library crate found under `crates/` is checked, these and any new one.
const EXPECTED: [&str; 10] = [
    "client", "core", "eval", "loadgen", "recipes", "runner", "store", "views", "web", "workload",
];

/// Crates not counted: the binary itself, the simulated server (a program of its own) and the
/// test-only helpers.
const NOT_LIBRARIES: [&str; 3] = ["cli", "sim", "testutil"];

/// Print macros (`print!(` also matches `eprint!(`).
const PRINTS: [&str; 2] = ["print!(", "println!("];

/// Exit-code names; `process::ExitStatus` (a child's) is taken out of a line before these are
/// looked for.
const EXITS: [&str; 5] = [
    "ExitStatus",
    "ExitCode",
    "StatusError",
    "process::exit",
    "EXIT_",
];

/// What one crate's library source holds of the command layer: `flags.rs` files, and the
/// lines (`file:line: text`) that print or name an exit code.
#[derive(Debug, Default)]
struct Layer {
    flags_files: Vec<String>,
    prints: Vec<String>,
    exits: Vec<String>,
}

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

/// The lines of `text` before its test module, without comment lines: (1-based line number,
/// line).
fn library_lines(text: &str) -> Vec<(usize, &str)> {
    let lib = text.split("\n#[cfg(test)]").next().unwrap_or_default();
    (lib.lines().enumerate())
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
        .collect()
}

fn is_print(line: &str) -> bool {
    PRINTS.iter().any(|p| line.contains(p))
}

fn is_exit_code(line: &str) -> bool {
    let ours = line
        .replace("process::ExitStatus", "")
        .replace("ExitStatusExt", "");
    EXITS.iter().any(|e| ours.contains(e))
}

/// Counts `src` (a crate's `src/` directory).
fn layer(src: &Path) -> Layer {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut out = Layer::default();
    for f in &files {
        if f.file_name().is_some_and(|n| n == "flags.rs") {
            out.flags_files.push(f.display().to_string());
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in library_lines(&text) {
            let at = || format!("{}:{n}: {}", f.display(), line.trim());
            if is_print(line) {
                out.prints.push(at());
            }
            if is_exit_code(line) {
                out.exits.push(at());
            }
        }
    }
    out
}

/// Every crate under `crates/` with a `src/`, by directory name.
fn crates() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn library_crates_have_no_flags_prints_or_exit_codes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let all = crates();
    for name in EXPECTED {
        assert!(all.iter().any(|c| c == name), "no crate {name} in {all:?}");
    }
    let mut found = Vec::new();
    for name in all.iter().filter(|c| !NOT_LIBRARIES.contains(&c.as_str())) {
        let l = layer(&root.join(name).join("src"));
        found.extend(l.flags_files.iter().map(|f| format!("flags file {f}")));
        found.extend(l.prints.iter().map(|p| format!("print {p}")));
        found.extend(l.exits.iter().map(|e| format!("exit code {e}")));
    }
    assert!(
        found.is_empty(),
        "command layer left in library crates (issue 40 §3: flags, printing and exit codes \
         belong in crates/cli):\n{}",
        found.join("\n")
    );
}

/// The counter itself: a print and an exit code in library text are found, the same in a
/// comment line, after `#[cfg(test)]`, or a child's `std::process::ExitStatus` are not.
#[test]
fn the_count_skips_comments_tests_and_child_exit_statuses() {
    let text = "fn a() {\n    println!(\"x\");\n    // println!(\"comment\");\n    \
                eprint!(\"y\");\n}\nfn b() -> inferbench_core::ExitStatus { todo!() }\n\
                fn c(_: std::process::ExitStatus) {}\n/// std::process::exit(2)\n\
                use std::os::unix::process::ExitStatusExt;\npub const EXIT_ERROR_RATE: i32 = 1;\n\
                #[cfg(test)]\nmod tests { fn t() { println!(); std::process::exit(1); } }\n";
    let lines = library_lines(text);
    let prints: Vec<usize> = (lines.iter())
        .filter(|(_, l)| is_print(l))
        .map(|p| p.0)
        .collect();
    let exits: Vec<usize> = (lines.iter())
        .filter(|(_, l)| is_exit_code(l))
        .map(|p| p.0)
        .collect();
    assert_eq!(prints, [2, 4]);
    assert_eq!(exits, [6, 10]);
}
