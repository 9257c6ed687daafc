//! A line diff that gives what `git diff` gives (git's xdiff with its default Myers algorithm and
//! `diff.indentHeuristic=true`), for when git itself is not installed.
//!
//! The steps, as git performs them:
//!
//! 1. Lines (each with its `\n`, so a last line without one differs from the same text with one)
//!    are numbered by equivalence class. The common prefix and suffix are set aside.
//! 2. In the middle, a line with no equal line in the other file is changed outright; a line
//!    with very many equal lines in the other file (at least the integer "square root" git uses,
//!    capped at 1024) is also set aside as changed when it sits in a run made mostly of such
//!    lines and of unmatched lines. The rest are compared.
//! 3. The compared lines go through Myers' divide-and-conquer middle-snake search, with git's
//!    cost cut-offs: past a cost of 256 a diagonal that reached far with a 20-line snake is taken
//!    as the split, and past the cost limit the furthest-reaching diagonal is.
//! 4. Each group of changed lines is slid up and down over equal lines (merging with groups it
//!    meets); a group that can line up with a change in the other file is put at the lowest such
//!    place, otherwise the indent heuristic scores every position (blank lines around the split,
//!    indentation of the lines before and after) and the lowest score wins (the lower position
//!    on ties). This is done for the old file, then the new one.
//! 5. Changes are printed in hunks with 3 lines of context, joined when at most 6 lines apart;
//!    the hunk header names the closest old-file line above it that starts with a letter, `_` or
//!    `$` (cut at 80 bytes), like git's default function-name rule.

use std::collections::HashMap;

/// Kind of a diff line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// A line both files have (` `).
    Context,
    /// A line only the old file has (`-`).
    Delete,
    /// A line only the new file has (`+`).
    Insert,
}

impl Tag {
    /// The unified-diff prefix character.
    pub fn prefix(self) -> char {
        match self {
            Tag::Context => ' ',
            Tag::Delete => '-',
            Tag::Insert => '+',
        }
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Context, deleted or inserted.
    pub tag: Tag,
    /// The line without its `\n`.
    pub text: String,
    /// The line is the last of its file and has no `\n` (`\ No newline at end of file`).
    pub no_newline: bool,
}

/// One hunk, with the numbers its `@@ -a,b +c,d @@` header prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// First old-file line (1-based; the line before the hunk when `old_len` is 0).
    pub old_start: usize,
    /// Number of old-file lines (context and deleted).
    pub old_len: usize,
    /// First new-file line (1-based; the line before the hunk when `new_len` is 0).
    pub new_start: usize,
    /// Number of new-file lines (context and inserted).
    pub new_len: usize,
    /// Text after the closing `@@` (git's function name; empty when none).
    pub func: String,
    /// The lines, in order.
    pub lines: Vec<Line>,
}

impl Hunk {
    /// The header line without its newline, e.g. `@@ -6278,6 +6278,16 @@`.
    pub fn header(&self) -> String {
        fn range(start: usize, len: usize) -> String {
            if len == 1 {
                start.to_string()
            } else {
                format!("{start},{len}")
            }
        }
        let mut s = format!(
            "@@ -{} +{} @@",
            range(self.old_start, self.old_len),
            range(self.new_start, self.new_len)
        );
        if !self.func.is_empty() {
            s.push(' ');
            s.push_str(&self.func);
        }
        s
    }
}

/// The difference between two texts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Either text has a NUL byte in its first 8000 bytes: git prints `Binary files … differ`
    /// and no lines.
    pub binary: bool,
    /// The hunks (none when the texts are equal or binary).
    pub hunks: Vec<Hunk>,
}

impl Diff {
    /// The diff as `git diff` prints it after its `diff --git`/`index` lines: `--- a/OLD`,
    /// `+++ b/NEW` and the hunks (or the `Binary files` line); empty when the texts are equal.
    pub fn to_unified(&self, old_name: &str, new_name: &str) -> String {
        let mut out = String::new();
        if self.binary {
            out.push_str(&format!(
                "Binary files a/{old_name} and b/{new_name} differ\n"
            ));
            return out;
        }
        if self.hunks.is_empty() {
            return out;
        }
        out.push_str(&format!("--- a/{old_name}\n+++ b/{new_name}\n"));
        for h in &self.hunks {
            out.push_str(&h.header());
            out.push('\n');
            for l in &h.lines {
                out.push(l.tag.prefix());
                out.push_str(&l.text);
                out.push('\n');
                if l.no_newline {
                    out.push_str("\\ No newline at end of file\n");
                }
            }
        }
        out
    }
}

/// Diffs `old` against `new` like `git diff` with 3 lines of context.
pub fn diff(old: &str, new: &str) -> Diff {
    diff_with_context(old, new, 3)
}

/// Diffs `old` against `new` like `git diff -U<context>`.
pub fn diff_with_context(old: &str, new: &str, context: usize) -> Diff {
    if old == new {
        return Diff::default();
    }
    let has_nul = |s: &str| s.as_bytes().iter().take(8000).any(|&b| b == 0);
    if has_nul(old) || has_nul(new) {
        return Diff {
            binary: true,
            hunks: Vec::new(),
        };
    }
    let (a, b) = changed_lines(old, new);
    Diff {
        binary: false,
        hunks: emit_hunks(&a, &b, context),
    }
}

/// Per file: its lines (with terminators), their class ids, and which lines are changed.
struct File<'a> {
    recs: Vec<&'a str>,
    class: Vec<usize>,
    /// `changed[i]` for line `i`; one extra `false` at the end as a sentinel.
    changed: Vec<bool>,
}

impl File<'_> {
    fn n(&self) -> usize {
        self.recs.len()
    }
    fn chg(&self, i: usize) -> bool {
        self.changed.get(i).copied().unwrap_or(false)
    }
}

/// Runs steps 1–4: returns both files with their changed lines marked.
fn changed_lines<'a>(old: &'a str, new: &'a str) -> (File<'a>, File<'a>) {
    let recs1: Vec<&str> = old.split_inclusive('\n').collect();
    let recs2: Vec<&str> = new.split_inclusive('\n').collect();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    // Per class: occurrences in the old file, in the new file.
    let mut counts: Vec<[usize; 2]> = Vec::new();
    let mut classify = |recs: &[&'a str], side: usize| -> Vec<usize> {
        recs.iter()
            .map(|r| {
                let next = ids.len();
                let id = *ids.entry(r).or_insert(next);
                if id == counts.len() {
                    counts.push([0, 0]);
                }
                counts[id][side] += 1;
                id
            })
            .collect()
    };
    let class1 = classify(&recs1, 0);
    let class2 = classify(&recs2, 1);
    let mut a = File {
        changed: vec![false; recs1.len() + 1],
        recs: recs1,
        class: class1,
    };
    let mut b = File {
        changed: vec![false; recs2.len() + 1],
        recs: recs2,
        class: class2,
    };

    // Common prefix and suffix.
    let (n1, n2) = (a.n(), b.n());
    let lim = n1.min(n2);
    let mut start = 0;
    while start < lim && a.class[start] == b.class[start] {
        start += 1;
    }
    let mut tail = 0;
    while tail < lim - start && a.class[n1 - 1 - tail] == b.class[n2 - 1 - tail] {
        tail += 1;
    }
    let (end1, end2) = (n1 - tail, n2 - tail); // exclusive ends of the middle

    // Step 2: lines kept for the comparison (reduced index → line).
    let keep1 = kept_lines(&mut a, start, end1, |c| counts[c][1]);
    let keep2 = kept_lines(&mut b, start, end2, |c| counts[c][0]);
    let ha1: Vec<usize> = keep1.iter().map(|&i| a.class[i]).collect();
    let ha2: Vec<usize> = keep2.iter().map(|&i| b.class[i]).collect();

    // Step 3.
    let mut m = Myers::new(ha1.len(), ha2.len());
    let (ch1, ch2) = m.compare(&ha1, &ha2);
    for (k, &i) in keep1.iter().enumerate() {
        if ch1[k] {
            a.changed[i] = true;
        }
    }
    for (k, &i) in keep2.iter().enumerate() {
        if ch2[k] {
            b.changed[i] = true;
        }
    }

    // Step 4.
    compact(&mut a, &mut b);
    compact(&mut b, &mut a);
    (a, b)
}

/// git's rough integer square root: 2 to the power of the number of base-4 digits of `n`.
fn bogosqrt(mut n: usize) -> usize {
    let mut i = 1;
    while n > 0 {
        i <<= 1;
        n >>= 2;
    }
    i
}

/// Marks lines of `f.recs[start..end]` that skip the comparison as changed; returns the others.
/// `other_count(class)` is how often the class occurs in the other file.
fn kept_lines(
    f: &mut File<'_>,
    start: usize,
    end: usize,
    other_count: impl Fn(usize) -> usize,
) -> Vec<usize> {
    const MAX_EQ_LIMIT: usize = 1024;
    let mlim = bogosqrt(f.n()).min(MAX_EQ_LIMIT);
    // 0 = no match in the other file, 1 = some, 2 = many.
    let kind: Vec<u8> = (start..end)
        .map(|i| match other_count(f.class[i]) {
            0 => 0,
            nm if nm >= mlim => 2,
            _ => 1,
        })
        .collect();
    let mut keep = Vec::new();
    for (k, &d) in kind.iter().enumerate() {
        if d == 1 || (d == 2 && !many_in_unmatched_run(&kind, k)) {
            keep.push(start + k);
        } else {
            f.changed[start + k] = true;
        }
    }
    keep
}

/// For a line with many matches at `i`: whether the runs of no-match/many-match lines on both
/// sides (within 100 lines) hold at least one no-match line each and the many-match lines are
/// under a quarter of them all.
fn many_in_unmatched_run(kind: &[u8], i: usize) -> bool {
    const WINDOW: usize = 100;
    const KEEP_RUN: usize = 4;
    let lo = i.saturating_sub(WINDOW);
    let hi = (i + WINDOW).min(kind.len() - 1);
    let (mut none_before, mut many_before) = (0usize, 1usize);
    let mut j = i;
    while j > lo {
        j -= 1;
        match kind[j] {
            0 => none_before += 1,
            2 => many_before += 1,
            _ => break,
        }
    }
    if none_before == 0 {
        return false;
    }
    let (mut none_after, mut many_after) = (0usize, 1usize);
    for &k in &kind[i + 1..=hi] {
        match k {
            0 => none_after += 1,
            2 => many_after += 1,
            _ => break,
        }
    }
    if none_after == 0 {
        return false;
    }
    let none = none_before + none_after;
    let many = many_before + many_after;
    many * KEEP_RUN < many + none
}

/// Where a box is split, and whether each half still needs the exact (minimal) search.
struct Split {
    i1: i64,
    i2: i64,
    min_lo: bool,
    min_hi: bool,
}

/// Myers' search over class-id sequences, with git's cut-offs.
struct Myers {
    /// Forward and backward furthest-reaching positions per diagonal (offset by `off`).
    fwd: Vec<i64>,
    bwd: Vec<i64>,
    off: i64,
    max_cost: i64,
}

const SNAKE_CNT: i64 = 20;
const HEUR_MIN_COST: i64 = 256;
const K_HEUR: i64 = 4;
const LINE_MAX: i64 = i64::MAX;

impl Myers {
    fn new(n1: usize, n2: usize) -> Self {
        let ndiags = n1 + n2 + 3;
        Myers {
            fwd: vec![0; ndiags],
            bwd: vec![0; ndiags],
            off: n2 as i64 + 1,
            max_cost: (bogosqrt(ndiags) as i64).max(256),
        }
    }

    fn slot(&self, d: i64) -> usize {
        (d + self.off).clamp(0, self.fwd.len() as i64 - 1) as usize
    }
    fn f(&self, d: i64) -> i64 {
        self.fwd[self.slot(d)]
    }
    fn b(&self, d: i64) -> i64 {
        self.bwd[self.slot(d)]
    }
    fn set_f(&mut self, d: i64, v: i64) {
        let s = self.slot(d);
        self.fwd[s] = v;
    }
    fn set_b(&mut self, d: i64, v: i64) {
        let s = self.slot(d);
        self.bwd[s] = v;
    }

    /// Marks the changed elements of both sequences.
    fn compare(&mut self, ha1: &[usize], ha2: &[usize]) -> (Vec<bool>, Vec<bool>) {
        let mut ch1 = vec![false; ha1.len()];
        let mut ch2 = vec![false; ha2.len()];
        // Boxes (off1, lim1, off2, lim2, need_min); each is independent of the others.
        let mut stack = vec![(0i64, ha1.len() as i64, 0i64, ha2.len() as i64, false)];
        while let Some((mut off1, mut lim1, mut off2, mut lim2, need_min)) = stack.pop() {
            while off1 < lim1 && off2 < lim2 && eq(ha1, off1, ha2, off2) {
                off1 += 1;
                off2 += 1;
            }
            while off1 < lim1 && off2 < lim2 && eq(ha1, lim1 - 1, ha2, lim2 - 1) {
                lim1 -= 1;
                lim2 -= 1;
            }
            if off1 == lim1 {
                for c in &mut ch2[off2 as usize..lim2 as usize] {
                    *c = true;
                }
            } else if off2 == lim2 {
                for c in &mut ch1[off1 as usize..lim1 as usize] {
                    *c = true;
                }
            } else {
                let s = self.split(ha1, off1, lim1, ha2, off2, lim2, need_min);
                // A split must shrink the box; anything else would loop forever.
                let inside = (off1..=lim1).contains(&s.i1) && (off2..=lim2).contains(&s.i2);
                let shrinks = (s.i1, s.i2) != (off1, off2) && (s.i1, s.i2) != (lim1, lim2);
                if !inside || !shrinks {
                    for c in &mut ch1[off1 as usize..lim1 as usize] {
                        *c = true;
                    }
                    for c in &mut ch2[off2 as usize..lim2 as usize] {
                        *c = true;
                    }
                    continue;
                }
                stack.push((s.i1, lim1, s.i2, lim2, s.min_hi));
                stack.push((off1, s.i1, off2, s.i2, s.min_lo));
            }
        }
        (ch1, ch2)
    }

    /// The middle snake of a box both of whose sides are non-empty.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &mut self,
        ha1: &[usize],
        off1: i64,
        lim1: i64,
        ha2: &[usize],
        off2: i64,
        lim2: i64,
        need_min: bool,
    ) -> Split {
        let (dmin, dmax) = (off1 - lim2, lim1 - off2);
        let (fmid, bmid) = (off1 - off2, lim1 - lim2);
        let odd = (fmid - bmid) & 1 != 0;
        let (mut fmin, mut fmax, mut bmin, mut bmax) = (fmid, fmid, bmid, bmid);
        self.set_f(fmid, off1);
        self.set_b(bmid, lim1);
        let mut ec: i64 = 1;
        loop {
            let mut got_snake = false;
            // Forward pass: widen the diagonal range by one on each side (or narrow it at the
            // box edge), then extend every diagonal of the right parity.
            if fmin > dmin {
                fmin -= 1;
                self.set_f(fmin - 1, -1);
            } else {
                fmin += 1;
            }
            if fmax < dmax {
                fmax += 1;
                self.set_f(fmax + 1, -1);
            } else {
                fmax -= 1;
            }
            let mut d = fmax;
            while d >= fmin {
                let mut i1 = if self.f(d - 1) >= self.f(d + 1) {
                    self.f(d - 1) + 1
                } else {
                    self.f(d + 1)
                };
                let prev = i1;
                let mut i2 = i1 - d;
                while i1 < lim1 && i2 < lim2 && eq(ha1, i1, ha2, i2) {
                    i1 += 1;
                    i2 += 1;
                }
                if i1 - prev > SNAKE_CNT {
                    got_snake = true;
                }
                self.set_f(d, i1);
                if odd && bmin <= d && d <= bmax && self.b(d) <= i1 {
                    return Split {
                        i1,
                        i2,
                        min_lo: true,
                        min_hi: true,
                    };
                }
                d -= 2;
            }
            // Backward pass.
            if bmin > dmin {
                bmin -= 1;
                self.set_b(bmin - 1, LINE_MAX);
            } else {
                bmin += 1;
            }
            if bmax < dmax {
                bmax += 1;
                self.set_b(bmax + 1, LINE_MAX);
            } else {
                bmax -= 1;
            }
            let mut d = bmax;
            while d >= bmin {
                let mut i1 = if self.b(d - 1) < self.b(d + 1) {
                    self.b(d - 1)
                } else {
                    self.b(d + 1).saturating_sub(1)
                };
                let prev = i1;
                let mut i2 = i1.saturating_sub(d);
                while i1 > off1 && i2 > off2 && eq(ha1, i1 - 1, ha2, i2 - 1) {
                    i1 -= 1;
                    i2 -= 1;
                }
                if prev.saturating_sub(i1) > SNAKE_CNT {
                    got_snake = true;
                }
                self.set_b(d, i1);
                if !odd && fmin <= d && d <= fmax && i1 <= self.f(d) {
                    return Split {
                        i1,
                        i2,
                        min_lo: true,
                        min_hi: true,
                    };
                }
                d -= 2;
            }
            if !need_min {
                if got_snake && ec > HEUR_MIN_COST {
                    if let Some(s) = self.heuristic_split(
                        ha1,
                        off1,
                        lim1,
                        ha2,
                        off2,
                        lim2,
                        ec,
                        [fmin, fmax, fmid, bmin, bmax, bmid],
                    ) {
                        return s;
                    }
                }
                if ec >= self.max_cost {
                    return self.furthest_split(off1, lim1, off2, lim2, [fmin, fmax, bmin, bmax]);
                }
            }
            ec += 1;
        }
    }

    /// Past the heuristic cost: a diagonal that got far from its corner (weighted against its
    /// distance from the middle diagonal) and ends in a 20-line snake, forward first.
    #[allow(clippy::too_many_arguments)]
    fn heuristic_split(
        &self,
        ha1: &[usize],
        off1: i64,
        lim1: i64,
        ha2: &[usize],
        off2: i64,
        lim2: i64,
        ec: i64,
        [fmin, fmax, fmid, bmin, bmax, bmid]: [i64; 6],
    ) -> Option<Split> {
        let mut best = 0;
        let mut at = (0, 0);
        let mut d = fmax;
        while d >= fmin {
            let dd = (d - fmid).abs();
            let i1 = self.f(d);
            let i2 = i1 - d;
            let v = (i1 - off1) + (i2 - off2) - dd;
            if v > K_HEUR * ec
                && v > best
                && off1 + SNAKE_CNT <= i1
                && i1 < lim1
                && off2 + SNAKE_CNT <= i2
                && i2 < lim2
                && (1..=SNAKE_CNT).all(|k| eq(ha1, i1 - k, ha2, i2 - k))
            {
                best = v;
                at = (i1, i2);
            }
            d -= 2;
        }
        if best > 0 {
            return Some(Split {
                i1: at.0,
                i2: at.1,
                min_lo: true,
                min_hi: false,
            });
        }
        let mut d = bmax;
        while d >= bmin {
            let dd = (d - bmid).abs();
            let i1 = self.b(d);
            let i2 = i1.saturating_sub(d);
            let v = (lim1 - i1) + (lim2 - i2) - dd;
            if v > K_HEUR * ec
                && v > best
                && off1 < i1
                && i1 <= lim1 - SNAKE_CNT
                && off2 < i2
                && i2 <= lim2 - SNAKE_CNT
                && (0..SNAKE_CNT).all(|k| eq(ha1, i1 + k, ha2, i2 + k))
            {
                best = v;
                at = (i1, i2);
            }
            d -= 2;
        }
        (best > 0).then_some(Split {
            i1: at.0,
            i2: at.1,
            min_lo: false,
            min_hi: true,
        })
    }

    /// Past the cost limit: the forward or backward diagonal that reached furthest.
    fn furthest_split(
        &self,
        off1: i64,
        lim1: i64,
        off2: i64,
        lim2: i64,
        [fmin, fmax, bmin, bmax]: [i64; 4],
    ) -> Split {
        let (mut fbest, mut fbest1) = (-1i64, -1i64);
        let mut d = fmax;
        while d >= fmin {
            let mut i1 = self.f(d).min(lim1);
            let mut i2 = i1 - d;
            if lim2 < i2 {
                i1 = lim2 + d;
                i2 = lim2;
            }
            if fbest < i1 + i2 {
                fbest = i1 + i2;
                fbest1 = i1;
            }
            d -= 2;
        }
        let (mut bbest, mut bbest1) = (LINE_MAX, LINE_MAX);
        let mut d = bmax;
        while d >= bmin {
            let mut i1 = self.b(d).max(off1);
            let mut i2 = i1.saturating_sub(d);
            if i2 < off2 {
                i1 = off2 + d;
                i2 = off2;
            }
            if i1.saturating_add(i2) < bbest {
                bbest = i1 + i2;
                bbest1 = i1;
            }
            d -= 2;
        }
        if (lim1 + lim2).saturating_sub(bbest) < fbest - (off1 + off2) {
            Split {
                i1: fbest1,
                i2: fbest - fbest1,
                min_lo: true,
                min_hi: false,
            }
        } else {
            Split {
                i1: bbest1,
                i2: bbest.saturating_sub(bbest1),
                min_lo: false,
                min_hi: true,
            }
        }
    }
}

/// `ha1[i] == ha2[j]`, false outside either sequence.
fn eq(ha1: &[usize], i: i64, ha2: &[usize], j: i64) -> bool {
    match (usize::try_from(i), usize::try_from(j)) {
        (Ok(i), Ok(j)) => matches!((ha1.get(i), ha2.get(j)), (Some(a), Some(b)) if a == b),
        _ => false,
    }
}

// ---- step 4: sliding change groups -------------------------------------------------------

/// A run `start..end` of changed lines (empty between two unchanged lines).
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
}

fn group_init(f: &File<'_>) -> Group {
    let mut end = 0;
    while f.chg(end) {
        end += 1;
    }
    Group { start: 0, end }
}

fn group_next(f: &File<'_>, g: &mut Group) -> bool {
    if g.end >= f.n() {
        return false;
    }
    g.start = g.end + 1;
    g.end = g.start;
    while f.chg(g.end) {
        g.end += 1;
    }
    true
}

fn group_previous(f: &File<'_>, g: &mut Group) -> bool {
    if g.start == 0 {
        return false;
    }
    g.end = g.start - 1;
    g.start = g.end;
    while g.start > 0 && f.chg(g.start - 1) {
        g.start -= 1;
    }
    true
}

fn slide_down(f: &mut File<'_>, g: &mut Group) -> bool {
    if g.end < f.n() && g.start < g.end && f.class[g.start] == f.class[g.end] {
        f.changed[g.start] = false;
        g.start += 1;
        f.changed[g.end] = true;
        g.end += 1;
        while f.chg(g.end) {
            g.end += 1;
        }
        true
    } else {
        false
    }
}

fn slide_up(f: &mut File<'_>, g: &mut Group) -> bool {
    if g.start > 0 && g.start < g.end && f.class[g.start - 1] == f.class[g.end - 1] {
        g.start -= 1;
        f.changed[g.start] = true;
        g.end -= 1;
        f.changed[g.end] = false;
        while g.start > 0 && f.chg(g.start - 1) {
            g.start -= 1;
        }
        true
    } else {
        false
    }
}

/// Slides the change groups of `f` (keeping `o`'s groups in step), step 4 of the module doc.
fn compact(f: &mut File<'_>, o: &mut File<'_>) {
    const MAX_SLIDING: usize = 100;
    let mut g = group_init(f);
    let mut go = group_init(o);
    loop {
        if g.end != g.start {
            let mut groupsize;
            let mut earliest_end;
            let mut end_matching_other;
            loop {
                groupsize = g.end - g.start;
                end_matching_other = None;
                while slide_up(f, &mut g) {
                    group_previous(o, &mut go);
                }
                earliest_end = g.end;
                if go.end > go.start {
                    end_matching_other = Some(g.end);
                }
                while slide_down(f, &mut g) {
                    group_next(o, &mut go);
                    if go.end > go.start {
                        end_matching_other = Some(g.end);
                    }
                }
                if groupsize == g.end - g.start {
                    break;
                }
            }
            if g.end == earliest_end {
                // It cannot move.
            } else if end_matching_other.is_some() {
                while go.end == go.start {
                    if !slide_up(f, &mut g) || !group_previous(o, &mut go) {
                        break;
                    }
                }
            } else {
                let mut shift = earliest_end;
                if g.end > groupsize && g.end - groupsize - 1 > shift {
                    shift = g.end - groupsize - 1;
                }
                if g.end > MAX_SLIDING && g.end - MAX_SLIDING > shift {
                    shift = g.end - MAX_SLIDING;
                }
                let mut best: Option<(Score, usize)> = None;
                for s in shift..=g.end {
                    let mut score = Score::default();
                    score.add(&measure_split(f, s));
                    score.add(&measure_split(f, s - groupsize));
                    if best.as_ref().is_none_or(|(b, _)| score.cmp(b) <= 0) {
                        best = Some((score, s));
                    }
                }
                let best_shift = best.map(|(_, s)| s).unwrap_or(g.end);
                while g.end > best_shift {
                    if !slide_up(f, &mut g) || !group_previous(o, &mut go) {
                        break;
                    }
                }
            }
        }
        if !group_next(f, &mut g) {
            break;
        }
        group_next(o, &mut go);
    }
}

/// The space characters of git's own `isspace`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Indentation width of a line (tabs to multiples of 8, capped at 200); -1 for a blank line.
fn indent(rec: &str) -> i32 {
    const MAX_INDENT: i32 = 200;
    let mut ret = 0;
    for &c in rec.as_bytes() {
        if !is_space(c) {
            return ret;
        } else if c == b' ' {
            ret += 1;
        } else if c == b'\t' {
            ret += 8 - ret % 8;
        }
        if ret >= MAX_INDENT {
            return MAX_INDENT;
        }
    }
    -1
}

/// What the indent heuristic looks at around a split before line `split`.
struct Measure {
    end_of_file: bool,
    indent: i32,
    pre_blank: i32,
    pre_indent: i32,
    post_blank: i32,
    post_indent: i32,
}

fn measure_split(f: &File<'_>, split: usize) -> Measure {
    const MAX_BLANKS: i32 = 20;
    let n = f.n();
    let (end_of_file, ind) = if split >= n {
        (true, -1)
    } else {
        (false, indent(f.recs[split]))
    };
    let (mut pre_blank, mut pre_indent) = (0, -1);
    for i in (0..split.min(n)).rev() {
        pre_indent = indent(f.recs[i]);
        if pre_indent != -1 {
            break;
        }
        pre_blank += 1;
        if pre_blank == MAX_BLANKS {
            pre_indent = 0;
            break;
        }
    }
    let (mut post_blank, mut post_indent) = (0, -1);
    for i in split + 1..n {
        post_indent = indent(f.recs[i]);
        if post_indent != -1 {
            break;
        }
        post_blank += 1;
        if post_blank == MAX_BLANKS {
            post_indent = 0;
            break;
        }
    }
    Measure {
        end_of_file,
        indent: ind,
        pre_blank,
        pre_indent,
        post_blank,
        post_indent,
    }
}

/// Badness of a group position (lower is better).
#[derive(Default, Clone, Copy)]
struct Score {
    effective_indent: i32,
    penalty: i32,
}

impl Score {
    fn add(&mut self, m: &Measure) {
        const START_OF_FILE_PENALTY: i32 = 1;
        const END_OF_FILE_PENALTY: i32 = 21;
        const TOTAL_BLANK_WEIGHT: i32 = -30;
        const POST_BLANK_WEIGHT: i32 = 6;
        const RELATIVE_INDENT_PENALTY: i32 = -4;
        const RELATIVE_INDENT_WITH_BLANK_PENALTY: i32 = 10;
        const RELATIVE_OUTDENT_PENALTY: i32 = 24;
        const RELATIVE_OUTDENT_WITH_BLANK_PENALTY: i32 = 17;
        const RELATIVE_DEDENT_PENALTY: i32 = 23;
        const RELATIVE_DEDENT_WITH_BLANK_PENALTY: i32 = 17;
        if m.pre_indent == -1 && m.pre_blank == 0 {
            self.penalty += START_OF_FILE_PENALTY;
        }
        if m.end_of_file {
            self.penalty += END_OF_FILE_PENALTY;
        }
        let post_blank = if m.indent == -1 { 1 + m.post_blank } else { 0 };
        let total_blank = m.pre_blank + post_blank;
        self.penalty += TOTAL_BLANK_WEIGHT * total_blank + POST_BLANK_WEIGHT * post_blank;
        let indent = if m.indent != -1 {
            m.indent
        } else {
            m.post_indent
        };
        let any_blanks = total_blank != 0;
        self.effective_indent += indent;
        if indent == -1 || m.pre_indent == -1 || indent == m.pre_indent {
            // No adjustment.
        } else if indent > m.pre_indent {
            self.penalty += if any_blanks {
                RELATIVE_INDENT_WITH_BLANK_PENALTY
            } else {
                RELATIVE_INDENT_PENALTY
            };
        } else if m.post_indent != -1 && m.post_indent > indent {
            self.penalty += if any_blanks {
                RELATIVE_OUTDENT_WITH_BLANK_PENALTY
            } else {
                RELATIVE_OUTDENT_PENALTY
            };
        } else {
            self.penalty += if any_blanks {
                RELATIVE_DEDENT_WITH_BLANK_PENALTY
            } else {
                RELATIVE_DEDENT_PENALTY
            };
        }
    }

    /// Negative when `self` is better than `other`.
    fn cmp(&self, other: &Score) -> i32 {
        const INDENT_WEIGHT: i32 = 60;
        let c = (self.effective_indent > other.effective_indent) as i32
            - (self.effective_indent < other.effective_indent) as i32;
        INDENT_WEIGHT * c + (self.penalty - other.penalty)
    }
}

// ---- step 5: hunks ----------------------------------------------------------------------

/// A change: `n1` old lines at `i1` replaced by `n2` new lines at `i2` (0-based).
struct Change {
    i1: usize,
    i2: usize,
    n1: usize,
    n2: usize,
}

fn changes(a: &File<'_>, b: &File<'_>) -> Vec<Change> {
    let mut out = Vec::new();
    let (mut i1, mut i2) = (0, 0);
    while i1 < a.n() || i2 < b.n() {
        if a.chg(i1) || b.chg(i2) {
            let (s1, s2) = (i1, i2);
            while a.chg(i1) {
                i1 += 1;
            }
            while b.chg(i2) {
                i2 += 1;
            }
            out.push(Change {
                i1: s1,
                i2: s2,
                n1: i1 - s1,
                n2: i2 - s2,
            });
        } else {
            i1 += 1;
            i2 += 1;
        }
    }
    out
}

fn line(tag: Tag, rec: &str) -> Line {
    match rec.strip_suffix('\n') {
        Some(t) => Line {
            tag,
            text: t.to_string(),
            no_newline: false,
        },
        None => Line {
            tag,
            text: rec.to_string(),
            no_newline: true,
        },
    }
}

/// git's default function-name rule for a hunk header.
fn func_name(rec: &str) -> Option<String> {
    const SIZE: usize = 80;
    let b = rec.as_bytes();
    let first = *b.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b'$') {
        return None;
    }
    let mut len = b.len().min(SIZE);
    while len > 0 && is_space(b[len - 1]) {
        len -= 1;
    }
    Some(String::from_utf8_lossy(&b[..len]).into_owned())
}

fn emit_hunks(a: &File<'_>, b: &File<'_>, ctx: usize) -> Vec<Hunk> {
    let ch = changes(a, b);
    let mut hunks = Vec::new();
    let mut func = String::new();
    let mut func_limit: Option<usize> = None; // old-file line the previous search started at
    let mut k = 0;
    while k < ch.len() {
        // Changes at most 2*ctx lines apart share a hunk.
        let mut last = k;
        while last + 1 < ch.len() && ch[last + 1].i1 - (ch[last].i1 + ch[last].n1) <= 2 * ctx {
            last += 1;
        }
        let (first, end) = (&ch[k], &ch[last]);
        let s1 = first.i1.saturating_sub(ctx);
        let s2 = first.i2.saturating_sub(ctx);
        let post = ctx
            .min(a.n() - (end.i1 + end.n1))
            .min(b.n() - (end.i2 + end.n2));
        let e1 = end.i1 + end.n1 + post;
        let e2 = end.i2 + end.n2 + post;
        // Function name: search upwards from the line above the hunk to the previous start.
        let mut l = s1;
        while l > 0 && Some(l - 1) != func_limit {
            if let Some(f) = func_name(a.recs[l - 1]) {
                func = f;
                break;
            }
            l -= 1;
        }
        func_limit = s1.checked_sub(1);
        let mut lines = Vec::new();
        for i in s2..first.i2 {
            lines.push(line(Tag::Context, b.recs[i]));
        }
        for (j, c) in ch[k..=last].iter().enumerate() {
            if j > 0 {
                let p = &ch[k + j - 1];
                for i in p.i2 + p.n2..c.i2 {
                    lines.push(line(Tag::Context, b.recs[i]));
                }
            }
            for i in c.i1..c.i1 + c.n1 {
                lines.push(line(Tag::Delete, a.recs[i]));
            }
            for i in c.i2..c.i2 + c.n2 {
                lines.push(line(Tag::Insert, b.recs[i]));
            }
        }
        for i in end.i2 + end.n2..e2 {
            lines.push(line(Tag::Context, b.recs[i]));
        }
        let (c1, c2) = (e1 - s1, e2 - s2);
        hunks.push(Hunk {
            old_start: if c1 > 0 { s1 + 1 } else { s1 },
            old_len: c1,
            new_start: if c2 > 0 { s2 + 1 } else { s2 },
            new_len: c2,
            func: func.clone(),
            lines,
        });
        k = last + 1;
    }
    hunks
}

/// Parses the hunks of a unified diff (what `git diff` prints); lines outside hunks (file
/// headers) are skipped.
///
/// # Errors
/// A malformed `@@` header or a hunk shorter than its header says, naming the diff line.
pub fn parse_unified(text: &str) -> Result<Vec<Hunk>, String> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let (mut old_left, mut new_left) = (0usize, 0usize);
    for (n, l) in text.split('\n').enumerate() {
        if old_left == 0 && new_left == 0 {
            if let Some(rest) = l.strip_prefix("@@ -") {
                let h = parse_header(rest)
                    .ok_or_else(|| format!("diff line {}: bad hunk header '{l}'", n + 1))?;
                old_left = h.old_len;
                new_left = h.new_len;
                hunks.push(h);
            }
            if l == "\\ No newline at end of file" {
                if let Some(last) = hunks.last_mut().and_then(|h| h.lines.last_mut()) {
                    last.no_newline = true;
                }
            }
            continue;
        }
        let Some(h) = hunks.last_mut() else { continue };
        let (tag, text) = match l.chars().next() {
            Some(' ') => (Tag::Context, &l[1..]),
            Some('-') => (Tag::Delete, &l[1..]),
            Some('+') => (Tag::Insert, &l[1..]),
            Some('\\') => {
                if let Some(last) = h.lines.last_mut() {
                    last.no_newline = true;
                }
                continue;
            }
            _ => {
                return Err(format!(
                    "diff line {}: unexpected line in a hunk: '{l}'",
                    n + 1
                ))
            }
        };
        match tag {
            Tag::Context if old_left > 0 && new_left > 0 => {
                old_left -= 1;
                new_left -= 1;
            }
            Tag::Delete if old_left > 0 => old_left -= 1,
            Tag::Insert if new_left > 0 => new_left -= 1,
            _ => return Err(format!("diff line {}: hunk longer than its header", n + 1)),
        }
        h.lines.push(Line {
            tag,
            text: text.to_string(),
            no_newline: false,
        });
    }
    if old_left > 0 || new_left > 0 {
        return Err("diff ends inside a hunk".into());
    }
    Ok(hunks)
}

fn parse_header(rest: &str) -> Option<Hunk> {
    let (ranges, func) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |s: &str| -> Option<(usize, usize)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (old_start, old_len) = range(old)?;
    let (new_start, new_len) = range(new)?;
    Some(Hunk {
        old_start,
        old_len,
        new_start,
        new_len,
        func: func.strip_prefix(' ').unwrap_or(func).to_string(),
        lines: Vec::new(),
    })
}

// ---- git itself ------------------------------------------------------------------------

/// git's options pinned against the user's configuration: `git -c diff.algorithm=myers -c
/// diff.indentHeuristic=true diff --no-ext-diff --no-color --unified=3`. The context is pinned
/// too because with `diff.context=0` (or `GIT_DIFF_OPTS=-U0`) git first trims the common tail,
/// which can move where the changes line up.
pub const GIT_DIFF_ARGS: [&str; 8] = [
    "-c",
    "diff.algorithm=myers",
    "-c",
    "diff.indentHeuristic=true",
    "diff",
    "--no-ext-diff",
    "--no-color",
    "--unified=3",
];

/// Why git gave no diff.
#[derive(Debug)]
pub enum GitError {
    /// git could not be started (not installed or not on `PATH`).
    Missing(std::io::Error),
    /// git ran and failed: the command and its stderr.
    Failed(String),
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::Missing(e) => write!(f, "cannot run git: {e}"),
            GitError::Failed(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for GitError {}

fn run_git(cmd: &mut std::process::Command, ok_codes: &[i32]) -> Result<String, GitError> {
    let out = cmd.output().map_err(GitError::Missing)?;
    match out.status.code() {
        Some(c) if ok_codes.contains(&c) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        _ => Err(GitError::Failed(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// `git … diff --no-ext-diff --no-color --unified=3 --no-index OLD NEW` (pinned
/// [`GIT_DIFF_ARGS`]); `extra`
/// options go after `diff`. Exit status 1 (files differ) is success.
///
/// # Errors
/// [`GitError::Missing`] when git cannot be started, [`GitError::Failed`] otherwise.
pub fn git_diff_files(
    old: &std::path::Path,
    new: &std::path::Path,
    extra: &[&str],
) -> Result<String, GitError> {
    let mut cmd = std::process::Command::new("git");
    cmd.args(GIT_DIFF_ARGS)
        .args(extra)
        .arg("--no-index")
        .arg("--")
        .arg(old)
        .arg(new);
    run_git(&mut cmd, &[0, 1])
}

/// [`git_diff_files`] on two texts, written to a fresh temporary directory (so the diff is of
/// exactly these bytes, whatever the originals were: pipes, symlinks, files changed since).
///
/// # Errors
/// As [`git_diff_files`]; [`GitError::Failed`] when the temporary files cannot be written.
pub fn git_diff_texts(old: &str, new: &str) -> Result<String, GitError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    let mut dir = None;
    for _ in 0..100 {
        let d = base.join(format!(
            "inferbench-diff-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        if std::fs::create_dir(&d).is_ok() {
            dir = Some(d);
            break;
        }
    }
    let Some(dir) = dir else {
        return Err(GitError::Failed(format!(
            "cannot create a temporary directory in {}",
            base.display()
        )));
    };
    let (a, b) = (dir.join("base"), dir.join("head"));
    let written = std::fs::write(&a, old).and_then(|_| std::fs::write(&b, new));
    let out = match written {
        Ok(()) => git_diff_files(&a, &b, &[]),
        Err(e) => Err(GitError::Failed(format!(
            "cannot write {}: {e}",
            dir.display()
        ))),
    };
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// `git -C REPO … diff --no-ext-diff --no-color --unified=3 BASE HEAD -- PATH` (pinned
/// [`GIT_DIFF_ARGS`]),
/// what InferenceX's `process_changelog.py` runs.
///
/// # Errors
/// [`GitError::Missing`] when git cannot be started, [`GitError::Failed`] otherwise.
pub fn git_diff_refs(
    repo: &std::path::Path,
    base: &str,
    head: &str,
    path: &str,
) -> Result<String, GitError> {
    let mut cmd = std::process::Command::new("git");
    cmd.arg("-C")
        .arg(repo)
        .args(GIT_DIFF_ARGS)
        .arg(base)
        .arg(head)
        .arg("--")
        .arg(path);
    run_git(&mut cmd, &[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insertion_slides_to_the_blank_line_split() {
        let old = "- a: 1\n  b: 2\n\n- c: 3\n  b: 2\n";
        let new = "- a: 1\n  b: 2\n\n- x: 9\n  b: 2\n\n- c: 3\n  b: 2\n";
        let d = diff(old, new);
        assert_eq!(d.hunks.len(), 1);
        let plus: Vec<&str> = d.hunks[0]
            .lines
            .iter()
            .filter(|l| l.tag == Tag::Insert)
            .map(|l| l.text.as_str())
            .collect();
        assert_eq!(plus, vec!["- x: 9", "  b: 2", ""]);
        assert_eq!(d.hunks[0].header(), "@@ -1,5 +1,8 @@");
    }

    #[test]
    fn missing_newline_and_binary() {
        let d = diff("a\nb", "a\nc");
        assert_eq!(
            d.to_unified("x", "y"),
            "--- a/x\n+++ b/y\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        assert!(diff("a\0", "b").binary);
        assert_eq!(diff("same\n", "same\n"), Diff::default());
        let back = parse_unified(&d.to_unified("x", "y")).unwrap();
        assert_eq!(back, d.hunks);
    }

    #[test]
    fn function_name_from_old_file() {
        let old = "top\n1\n2\n3\n4\n5\n6\n";
        let new = "top\n1\n2\n3\n4\n5\nX\n";
        assert_eq!(diff(old, new).hunks[0].header(), "@@ -4,4 +4,4 @@ top");
    }
}
