//! The own line diff ([`linediff`]) against real `git diff --no-index`: the same hunks (headers,
//! function names, every line) and so the same changelog additions, on every handed changelog
//! case, on large unrelated files (git's cost cut-offs), and on random line edits. Skips (with a
//! message) when git or ../shared is absent; INFERBENCH_REQUIRE_SERVICES=1 makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use inferbench_recipes::changelog;
use inferbench_recipes::linediff::{self, Hunk, GIT_DIFF_ARGS};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn require() -> bool {
    std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() == Ok("1")
}

fn has_git() -> bool {
    if Command::new("git").arg("--version").output().is_ok() {
        return true;
    }
    if require() {
        panic!("git is required (INFERBENCH_REQUIRE_SERVICES=1)");
    }
    eprintln!("skipping: git not installed");
    false
}

fn shared() -> Option<PathBuf> {
    // The shared folder, or a skip (a failure under INFERBENCH_REQUIRE_SERVICES=1).
    inferbench_testutil::shared_dir(env!("CARGO_MANIFEST_DIR"), "data/inferencex")
}

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "inferbench-linediff-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// git's diff of two files, with the pinned options plus context settings pinned too.
fn git_diff(old: &Path, new: &Path) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "diff.suppressBlankEmpty=false",
            "-c",
            "diff.noprefix=false",
        ])
        .args(GIT_DIFF_ARGS)
        .args(["--unified=3", "--inter-hunk-context=0", "--no-index", "--"])
        .arg(old)
        .arg(new)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "git: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts the own diff equals git's on `old` → `new`; returns the number of hunks.
fn same_as_git(old: &str, new: &str, what: &str) -> usize {
    let dir = scratch();
    let (a, b) = (dir.join("old.yaml"), dir.join("new.yaml"));
    std::fs::write(&a, old).unwrap();
    std::fs::write(&b, new).unwrap();
    let text = git_diff(&a, &b);
    std::fs::remove_dir_all(&dir).ok();
    let ours = linediff::diff(old, new);
    if text.contains("\nBinary files ") || text.starts_with("Binary files ") {
        assert!(ours.binary, "{what}: git says binary");
        return 0;
    }
    assert!(!ours.binary, "{what}: not binary for git");
    let theirs: Vec<Hunk> = linediff::parse_unified(&text).unwrap();
    if theirs != ours.hunks {
        let t = text
            .lines()
            .skip_while(|l| !l.starts_with("@@"))
            .collect::<Vec<_>>();
        let o = ours.to_unified("old", "new");
        let o = o.lines().skip(2).collect::<Vec<_>>();
        let first = t
            .iter()
            .zip(&o)
            .position(|(x, y)| x != y)
            .unwrap_or(t.len().min(o.len()));
        panic!(
            "{what}: hunks differ from git's at diff line {first}:\n git: {:?}\nours: {:?}",
            &t[first.saturating_sub(3)..(first + 5).min(t.len())],
            &o[first.saturating_sub(3)..(first + 5).min(o.len())]
        );
    }
    // And so the additions the changelog selects (both may fail alike on deletions).
    let g = changelog::added_from_diff(&text, new, "old.yaml");
    let w = changelog::added_lines(old, new, "old.yaml");
    match (g, w) {
        (Ok(g), Ok(w)) => {
            assert_eq!(g.text, w.text, "{what}: added text");
            assert_eq!(g.head_lines, w.head_lines, "{what}: head lines");
        }
        (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string(), "{what}: error"),
        (g, w) => panic!(
            "{what}: git gives {:?}, ours {:?}",
            g.map(|a| a.text),
            w.map(|a| a.text)
        ),
    }
    ours.hunks.len()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn every_changelog_case_diffs_like_git() {
    let Some(d) = shared() else { return };
    if !has_git() {
        return;
    }
    let mut cases: Vec<PathBuf> = std::fs::read_dir(d.join("expected/changelog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 9, "{cases:?}");
    for c in &cases {
        let base = read(&c.join("base-perf-changelog.yaml"));
        let head = read(&c.join("head-perf-changelog.yaml"));
        let name = c.file_name().unwrap().to_string_lossy().to_string();
        assert!(same_as_git(&base, &head, &name) >= 1, "{name}");
        same_as_git(&head, &base, &format!("{name} reversed"));
        // The snapshot changelog against each case's base: many hunks far apart.
        same_as_git(
            &base,
            &read(&d.join("perf-changelog.yaml")),
            &format!("{name} → snapshot"),
        );
        // Master configs between the case and the snapshot.
        for f in ["amd-master.yaml", "nvidia-master.yaml"] {
            same_as_git(
                &read(&c.join("configs").join(f)),
                &read(&d.join("configs").join(f)),
                &format!("{name} {f} → snapshot"),
            );
        }
    }
}

/// 056876ec1: git starts the addition at `- config-keys:` and ends it with the blank line; the
/// only deletion is a whitespace-only line at the end of the base.
#[test]
fn case_056876ec1_additions_are_gits() {
    let Some(d) = shared() else { return };
    let c = d.join("expected/changelog/056876ec1");
    let base = read(&c.join("base-perf-changelog.yaml"));
    let head = read(&c.join("head-perf-changelog.yaml"));
    let a = changelog::added_lines(&base, &head, "base-perf-changelog.yaml").unwrap();
    assert_eq!(a.head_lines, (6281..=6290).collect::<Vec<_>>());
    assert!(a.text.starts_with(
        "- config-keys:\n    - kimik3-fp4-gb200-dynamo-vllm-agentic-dspark-mooncake-dcp16-agg\n"
    ));
    assert!(a
        .text
        .ends_with("  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2700\n"));
    let d = linediff::diff(&base, &head);
    let headers: Vec<String> = d.hunks.iter().map(Hunk::header).collect();
    assert_eq!(headers, ["@@ -6278,6 +6278,16 @@", "@@ -6287,4 +6297,3 @@"]);
}

#[test]
fn large_unrelated_files_diff_like_git() {
    let Some(d) = shared() else { return };
    if !has_git() {
        return;
    }
    let c = |p: &str| read(&d.join(p));
    // Thousands of edits: past the heuristic cost (256) and the cost limit.
    same_as_git(
        &c("configs/amd-master.yaml"),
        &c("configs/nvidia-master.yaml"),
        "amd → nvidia",
    );
    same_as_git(
        &c("configs/nvidia-master.yaml"),
        &c("perf-changelog.yaml"),
        "nvidia → changelog",
    );
    let mut dep: Vec<PathBuf> = std::fs::read_dir(d.join("configs/deprecated"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dep.sort();
    for w in dep.windows(2) {
        same_as_git(
            &read(&w[0]),
            &read(&w[1]),
            &format!("{} → {}", w[0].display(), w[1].display()),
        );
    }
}

/// A small deterministic generator (xorshift64*), so big cases need no extra dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const VOCAB: &[&str] = &[
    "",
    "",
    // Longer than git's 80-byte function-name buffer, with spaces where it is cut.
    "zeta wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww  y  yyyyyyyyyyyyyyyyyyyy",
    "Omega: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "- config-keys:",
    "    - dsr1-fp8-b200-sglang",
    "    - kimik3-fp4-gb200-dynamo-vllm",
    "  description:",
    "    - \"Add concurrency 48\"",
    "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1",
    "  ",
    "\t- tabbed",
    "top: level",
    "_under",
    "$dollar",
    "        deep:",
    "a",
    "b",
    "}",
    // Not space for git's indent rule (vertical tab, form feed), CR, non-ASCII.
    "\u{b}  vt",
    "  \u{c}",
    "\u{e9}t\u{e9} \u{2014}",
    "cr\r",
    "  \r",
];

fn random_edit(rng: &mut Rng, lines: usize, edits: usize, vocab: usize) -> (String, String) {
    let pick = |rng: &mut Rng| -> String {
        if rng.below(8) == 0 {
            format!("unique-{}", rng.next() % 1_000_000)
        } else {
            VOCAB[rng.below(vocab.min(VOCAB.len()))].to_string()
        }
    };
    let old: Vec<String> = (0..lines).map(|_| pick(rng)).collect();
    let mut new = old.clone();
    for _ in 0..edits {
        let at = rng.below(new.len() + 1);
        match rng.below(3) {
            0 => {
                let n = 1 + rng.below(6);
                for k in 0..n {
                    new.insert(at + k, pick(rng));
                }
            }
            1 => {
                let n = (1 + rng.below(6)).min(new.len() - at.min(new.len()));
                new.drain(at..at + n);
            }
            _ => {
                if at < new.len() {
                    new[at] = pick(rng);
                }
            }
        }
    }
    let join = |v: &[String], nl: bool| {
        let mut s = v.join("\n");
        if nl && !v.is_empty() {
            s.push('\n');
        }
        s
    };
    let nl_old = rng.below(5) != 0;
    let nl_new = rng.below(5) != 0;
    (join(&old, nl_old), join(&new, nl_new))
}

#[test]
fn big_random_edits_diff_like_git() {
    if !has_git() {
        return;
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Many edits over few distinct lines: many-match discards, sliding, heuristic cut-offs.
    for (i, (lines, edits, vocab)) in [
        (3000, 400, 6),
        (2000, 900, 24),
        (5000, 60, 3),
        (1500, 1500, 24),
    ]
    .into_iter()
    .enumerate()
    {
        let (old, new) = random_edit(&mut rng, lines, edits, vocab);
        same_as_git(&old, &new, &format!("big case {i}"));
    }
}

/// Files of over 32k lines with a few hundred block moves: the cost limit rises above 256, so
/// git's "good snake" split heuristic decides.
#[test]
fn long_files_with_block_moves_diff_like_git() {
    if !has_git() {
        return;
    }
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let cases = [
        (40_000usize, 400usize, 5usize),
        (36_000, 1200, 5),
        (34_000, 300, 40),
        (33_000, 2500, 3),
    ];
    for (i, (lines, moves, len)) in cases.into_iter().enumerate() {
        let old: Vec<String> = (0..lines).map(|k| format!("line {k}")).collect();
        let mut new = old.clone();
        for _ in 0..moves {
            let n = 1 + rng.below(len);
            let from = rng.below(new.len() - n);
            let block: Vec<String> = new.drain(from..from + n).collect();
            let to = rng.below(new.len());
            for (k, l) in block.into_iter().enumerate() {
                new.insert(to + k, l);
            }
        }
        same_as_git(
            &(old.join("\n") + "\n"),
            &(new.join("\n") + "\n"),
            &format!("moves case {i}"),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_seed: RngSeed::Fixed(11), ..ProptestConfig::default() })]

    /// Random line edits of random small files: the same hunks as git.
    #[test]
    fn random_line_edits_diff_like_git(seed in any::<u64>(), lines in 0usize..60, edits in 0usize..8, vocab in 2usize..=VOCAB.len()) {
        if Command::new("git").arg("--version").output().is_err() {
            if require() {
                panic!("git is required (INFERBENCH_REQUIRE_SERVICES=1)");
            }
            return Ok(());
        }
        let mut rng = Rng(seed | 1);
        let (old, new) = random_edit(&mut rng, lines, edits, vocab);
        same_as_git(&old, &new, &format!("seed {seed} lines {lines} edits {edits} vocab {vocab}"));
    }
}

/// A repeated pattern with one more (or one fewer) copy: a group that slides far, so the indent
/// heuristic's whole window and its start/end-of-file terms decide.
fn periodic_edit(rng: &mut Rng) -> (String, String) {
    const SMALL: &[&str] = &["", "a:", "  b: 1", "    c", "\td", "- e", ""];
    // Periods past 10 lines reach the heuristic's 100-line window at the top of the run.
    let len = if rng.below(3) == 0 {
        1 + rng.below(40)
    } else {
        1 + rng.below(4)
    };
    let period: Vec<&str> = (0..len).map(|_| SMALL[rng.below(SMALL.len())]).collect();
    let copies = 1 + rng.below(if len > 4 { 8 } else { 60 });
    let mut old: Vec<&str> = Vec::new();
    for _ in 0..rng.below(3) {
        old.push(SMALL[rng.below(SMALL.len())]);
    }
    for _ in 0..copies {
        old.extend(&period);
    }
    for _ in 0..rng.below(3) {
        old.push(SMALL[rng.below(SMALL.len())]);
    }
    let mut new = old.clone();
    let at = rng.below(old.len() + 1);
    if rng.below(2) == 0 || at + period.len() > new.len() {
        for (k, l) in period.iter().enumerate() {
            new.insert(at + k, l);
        }
    } else {
        new.drain(at..at + period.len());
    }
    let nl = |v: &[&str]| {
        let mut s = v.join("\n");
        if !v.is_empty() {
            s.push('\n');
        }
        s
    };
    if rng.below(2) == 0 {
        (nl(&old), nl(&new))
    } else {
        (nl(&new), nl(&old))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, rng_seed: RngSeed::Fixed(12), ..ProptestConfig::default() })]

    /// Far-sliding groups in repeated patterns: the same hunks as git.
    #[test]
    fn sliding_groups_diff_like_git(seed in any::<u64>()) {
        if Command::new("git").arg("--version").output().is_err() {
            if require() {
                panic!("git is required (INFERBENCH_REQUIRE_SERVICES=1)");
            }
            return Ok(());
        }
        let mut rng = Rng(seed | 1);
        let (old, new) = periodic_edit(&mut rng);
        same_as_git(&old, &new, &format!("seed {seed}"));
    }
}

/// Applies hunks to `old`; None when a context or deleted line does not match.
fn apply(old: &str, hunks: &[Hunk]) -> Option<String> {
    let lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut at = 0usize; // next old line (0-based)
    for h in hunks {
        let start = if h.old_len == 0 {
            h.old_start
        } else {
            h.old_start - 1
        };
        while at < start {
            out.push_str(lines.get(at)?);
            at += 1;
        }
        for l in &h.lines {
            let text = format!("{}{}", l.text, if l.no_newline { "" } else { "\n" });
            match l.tag {
                linediff::Tag::Context | linediff::Tag::Delete => {
                    if *lines.get(at)? != text {
                        return None;
                    }
                    at += 1;
                    if l.tag == linediff::Tag::Context {
                        out.push_str(&text);
                    }
                }
                linediff::Tag::Insert => out.push_str(&text),
            }
        }
    }
    for l in &lines[at.min(lines.len())..] {
        out.push_str(l);
    }
    Some(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, rng_seed: RngSeed::Fixed(13), ..ProptestConfig::default() })]

    /// Any texts (no git needed): no panic, and the hunks turn the old text into the new one.
    #[test]
    fn hunks_patch_old_into_new(old in "[ab \t\r\n\u{e9}]{0,80}", new in "[ab \t\r\n\u{e9}]{0,80}") {
        let d = linediff::diff(&old, &new);
        prop_assert!(!d.binary);
        prop_assert_eq!(apply(&old, &d.hunks), Some(new.clone()));
        prop_assert_eq!(linediff::parse_unified(&d.to_unified("a", "b")).unwrap(), d.hunks);
    }
}
