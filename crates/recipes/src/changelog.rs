//! `perf-changelog.yaml` processing: the entries added between a base and a head revision →
//! the bucketed job matrix InferenceX's `utils/process_changelog.py` prints (reference §4).
//!
//! Steps: line diff base→head (any deleted non-blank line is an error; the added lines are parsed
//! as YAML), strict entry validation, key expansion (`*` wildcards, regex-style: `?` is literal
//! here), all-evals entries first, per (config, scenario) coverage, `test-config --no-evals` for
//! throughput rows and `test-config --evals-only [--all-evals] --scenario-type …` for eval rows,
//! `eval-min-prefill-ep`, optional `--trim-conc`, recipe fingerprints, buckets, and output in the
//! field order of the reference's pydantic models (`model_dump_json(by_alias, exclude_none)`).

use inferbench_core::point::DP_ATTN_KEY;
use std::collections::{BTreeSet, HashMap};

use serde_json::{json, Map, Value};

use crate::error::{ConfigError, Error, Result};
use crate::matrix::{self, CommonOptions, Row, Selection, TestConfigOptions, SCENARIO_TYPES};
use crate::schema::{Checker, IntRule, MasterConfigs, RunnerConfig};
use crate::yaml::{self, Node, Pos, Yaml};

/// One validated changelog entry (defaults applied).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangelogEntry {
    /// `config-keys`: exact keys or `*` patterns (at least one).
    pub config_keys: Vec<String>,
    /// `description` lines (at least one).
    pub description: Vec<String>,
    /// `pr-link`.
    pub pr_link: String,
    /// `evals-only` (default false): no throughput rows.
    pub evals_only: bool,
    /// `all-evals` (default false): every eligible row is an eval; no throughput rows.
    pub all_evals: bool,
    /// `append-only` (default false): only newly added concurrency points run.
    pub append_only: bool,
    /// `eval-min-prefill-ep`: drop multi-node eval rows whose prefill ep is below it.
    pub eval_min_prefill_ep: Option<i64>,
    /// `scenario-type` restriction (None = both).
    pub scenario_type: Option<Vec<String>>,
    /// Line of the entry in the head changelog.
    pub line: usize,
    /// The head changelog file (as named by the caller), for error messages.
    pub file: String,
    /// Position of the entry in the head file's list (0-based; the same in diff mode and in
    /// [`validate_file`]), shown as `[index]` in error field paths.
    pub index: usize,
    /// Head-file position of each `config-keys` item (same order as `config_keys`).
    pub key_pos: Vec<Pos>,
}

impl ChangelogEntry {
    /// The entry as the reference's `ChangelogEntry.model_dump(by_alias, exclude_none)`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("config-keys".into(), json!(self.config_keys));
        m.insert("description".into(), json!(self.description));
        m.insert("pr-link".into(), json!(self.pr_link));
        m.insert("evals-only".into(), json!(self.evals_only));
        m.insert("all-evals".into(), json!(self.all_evals));
        m.insert("append-only".into(), json!(self.append_only));
        if let Some(ep) = self.eval_min_prefill_ep {
            m.insert("eval-min-prefill-ep".into(), json!(ep));
        }
        if let Some(s) = &self.scenario_type {
            m.insert("scenario-type".into(), json!(s));
        }
        Value::Object(m)
    }

    fn scenarios(&self) -> Vec<&'static str> {
        match &self.scenario_type {
            None => SCENARIO_TYPES.to_vec(),
            Some(s) => SCENARIO_TYPES
                .iter()
                .copied()
                .filter(|t| s.iter().any(|x| x == t))
                .collect(),
        }
    }
}

/// The lines added by a base→head change, as `git diff` reports them.
#[derive(Debug, Clone, Default)]
pub struct Added {
    /// Added lines joined with `\n` (what the reference feeds to `yaml.safe_load`).
    pub text: String,
    /// For each line of `text`, its 1-based line number in the head file.
    pub head_lines: Vec<usize>,
    /// 1-based head-file lines that start a top-level list item (`-` in column 1), used to give
    /// an added entry its index in the whole head file.
    pub entry_lines: Vec<usize>,
}

impl Added {
    /// The head-file line of line `line` (1-based) of `text`; `line` itself when out of range.
    pub fn head_line(&self, line: usize) -> usize {
        if line >= 1 && line <= self.head_lines.len() {
            self.head_lines[line - 1]
        } else {
            line
        }
    }

    /// The 0-based list index, in the whole head file, of the entry starting at head-file line
    /// `head_line` (the number of top-level items starting before it).
    pub fn head_index(&self, head_line: usize) -> usize {
        self.entry_lines.iter().filter(|&&l| l < head_line).count()
    }
}

/// The additions of a base→head change by this crate's own diff ([`crate::linediff`], equal
/// to git's), for when git is not installed; see [`added_from_diff`].
///
/// # Errors
/// As [`added_from_diff`].
pub fn added_lines(base: &str, head: &str, base_file: &str) -> Result<Added> {
    let text = crate::linediff::diff(base, head).to_unified("base", "head");
    added_from_diff(&text, head, base_file)
}

/// Python's `str.isspace` for one character (Unicode white space plus `\x1c`–`\x1f`).
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// The additions in `diff`, the output of `git diff` (or [`crate::linediff`]) from base to
/// `head`, selected like InferenceX's `process_changelog.py`: every `+` line except those
/// starting with `+++`, without the `+`. Line numbers come from the hunk headers.
///
/// # Errors
/// [`Error::Config`] naming the base file line of the first deleted line that is not blank
/// ("Deletions are not allowed"; like the reference, deleted lines starting with `--` pass), or
/// `diff:<line>` when the diff text itself is malformed.
pub fn added_from_diff(diff: &str, head: &str, base_file: &str) -> Result<Added> {
    let mut out = Added::default();
    let mut lines: Vec<&str> = Vec::new();
    let (mut old_line, mut new_line) = (0usize, 0usize);
    let (mut old_left, mut new_left) = (0usize, 0usize);
    for (n, l) in diff.split('\n').enumerate() {
        if old_left == 0 && new_left == 0 {
            if let Some(rest) = l.strip_prefix("@@ -") {
                let bad = || {
                    Error::Config(ConfigError::new(
                        "diff",
                        Pos {
                            line: n + 1,
                            col: 1,
                        },
                        "",
                        format!("malformed hunk header '{l}'"),
                    ))
                };
                let (ranges, _) = rest.split_once(" @@").ok_or_else(bad)?;
                let (old, new) = ranges.split_once(" +").ok_or_else(bad)?;
                let range = |s: &str| -> Option<(usize, usize)> {
                    match s.split_once(',') {
                        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                        None => Some((s.parse().ok()?, 1)),
                    }
                };
                let (os, ol) = range(old).ok_or_else(bad)?;
                let (ns, nl) = range(new).ok_or_else(bad)?;
                // A zero-length range names the line before it.
                old_line = if ol == 0 { os + 1 } else { os };
                new_line = if nl == 0 { ns + 1 } else { ns };
                (old_left, new_left) = (ol, nl);
            }
            continue;
        }
        match l.chars().next() {
            Some('+') => {
                if !l.starts_with("+++") {
                    lines.push(&l[1..]);
                    out.head_lines.push(new_line);
                }
                new_line += 1;
                new_left = new_left.saturating_sub(1);
            }
            Some('-') => {
                let content = &l[1..];
                // The reference skips diff lines starting with "---" (its file header), which
                // also skips deleted content starting with "--".
                if !content.trim_matches(py_space).is_empty() && !l.starts_with("---") {
                    return Err(ConfigError::new(
                        base_file,
                        Pos { line: old_line, col: 1 },
                        "",
                        format!("Deletions are not allowed in the changelog; only additions are permitted. Found deleted line: {content}"),
                    )
                    .into());
                }
                old_line += 1;
                old_left = old_left.saturating_sub(1);
            }
            Some('\\') => {}
            _ => {
                old_line += 1;
                new_line += 1;
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
        }
    }
    out.text = lines.join("\n");
    out.entry_lines = head
        .lines()
        .enumerate()
        .filter(|(_, l)| l == &"-" || l.starts_with("- "))
        .map(|(i, _)| i + 1)
        .collect();
    Ok(out)
}

const ENTRY_FIELDS: &[&str] = &[
    "config-keys",
    "description",
    "pr-link",
    "evals-only",
    "all-evals",
    "append-only",
    "eval-min-prefill-ep",
    "scenario-type",
];

fn remap(e: ConfigError, added: &Added, head_file: &str) -> ConfigError {
    ConfigError {
        file: head_file.to_string(),
        line: added.head_line(e.line),
        ..e
    }
}

/// Parses and validates the added entries (`ChangelogEntry` rules, reference §4.1).
///
/// # Errors
/// Every problem as `head_file:line:col: [index].field: message`, lines being head-file lines.
pub fn parse_entries(added: &Added, head_file: &str) -> Result<Vec<ChangelogEntry>> {
    if added.text.trim().is_empty() {
        return Err(Error::Usage(format!("no additions found in {head_file}")));
    }
    let root = yaml::parse(&added.text, head_file).map_err(|e| {
        // The loader's field path counts entries within the added text: renumber the entry
        // (`[k]…`) as its position in the head file, like every other changelog error.
        let mut e = remap(e, added, head_file);
        if let Some(rest) = e.field.strip_prefix('[').and_then(|f| f.split_once(']')) {
            let index = added
                .entry_lines
                .iter()
                .filter(|&&l| l <= e.line)
                .count()
                .saturating_sub(1);
            e.field = format!("[{index}]{}", rest.1);
        }
        Error::Config(e)
    })?;
    let index_of = |_: usize, n: &Node| added.head_index(added.head_line(n.pos.line));
    let (entries, errors) = validate_entry_list(&root, head_file, &index_of);
    let errors: Vec<ConfigError> = errors
        .into_iter()
        .map(|e| remap(e, added, head_file))
        .collect();
    if !errors.is_empty() {
        return Err(Error::from_many(errors));
    }
    let mut entries = entries;
    for e in &mut entries {
        e.line = added.head_line(e.line);
        for p in &mut e.key_pos {
            p.line = added.head_line(p.line);
        }
    }
    if entries.is_empty() {
        return Err(Error::Usage(format!(
            "no valid YAML entries found in the additions to {head_file}"
        )));
    }
    Ok(entries)
}

/// Validates a YAML node that should be a list of changelog entries. `index_of(i, item)` gives
/// the index shown in field paths for the `i`-th item (its position in the head file).
fn validate_entry_list(
    root: &Node,
    file: &str,
    index_of: &dyn Fn(usize, &Node) -> usize,
) -> (Vec<ChangelogEntry>, Vec<ConfigError>) {
    let mut c = Checker::new(file);
    let mut out = Vec::new();
    let Some(items) = root.as_seq() else {
        if !matches!(root.value, Yaml::Null) {
            c.err(
                root.pos,
                "",
                format!(
                    "the changelog must be a YAML list of entries, found {}",
                    root.kind()
                ),
            );
        }
        return (out, c.errors);
    };
    for (i, e) in items.iter().enumerate() {
        let index = index_of(i, e);
        let path = format!("[{index}]");
        if c.mapping(
            e,
            &path,
            ENTRY_FIELDS,
            &["config-keys", "description", "pr-link"],
        )
        .is_none()
        {
            continue;
        }
        let before = c.errors.len();
        let keys = str_list(&mut c, e, &path, "config-keys");
        let desc = str_list(&mut c, e, &path, "description");
        let pr = c.string(e, &path, "pr-link", 0);
        let evals_only = c.boolean(e, &path, "evals-only").unwrap_or(false);
        let all_evals = c.boolean(e, &path, "all-evals").unwrap_or(false);
        let append_only = c.boolean(e, &path, "append-only").unwrap_or(false);
        let min_ep = c.int(e, &path, "eval-min-prefill-ep", IntRule::AtLeastOne);
        let scen = match e
            .get("scenario-type")
            .filter(|n| !matches!(n.value, Yaml::Null))
        {
            None => None,
            Some(n) => {
                let v = str_list(&mut c, e, &path, "scenario-type");
                if let Some(v) = &v {
                    for (j, s) in v.iter().enumerate() {
                        if !SCENARIO_TYPES.contains(&s.as_str()) {
                            let pos = n
                                .as_seq()
                                .and_then(|s| s.get(j))
                                .map(|x| x.pos)
                                .unwrap_or(n.pos);
                            c.err(
                                pos,
                                &format!("{path}.scenario-type[{j}]"),
                                format!("must be 'fixed-seq-len' or 'agentic-coding', got '{s}'"),
                            );
                        }
                    }
                }
                v
            }
        };
        if append_only && (evals_only || all_evals || min_ep.is_some()) {
            c.err(e.pos, &format!("{path}.append-only"), "append-only cannot be combined with eval selection fields (evals-only, all-evals, eval-min-prefill-ep)");
        }
        if c.errors.len() == before {
            out.push(ChangelogEntry {
                config_keys: keys.unwrap_or_default(),
                description: desc.unwrap_or_default(),
                pr_link: pr.unwrap_or_default(),
                evals_only,
                all_evals,
                append_only,
                eval_min_prefill_ep: min_ep,
                scenario_type: scen,
                line: e.pos.line,
                file: file.to_string(),
                index,
                key_pos: e
                    .get("config-keys")
                    .and_then(Node::as_seq)
                    .map(|s| s.iter().map(|n| n.pos).collect())
                    .unwrap_or_default(),
            });
        }
    }
    (out, c.errors)
}

/// A list of strings with at least one element.
fn str_list(c: &mut Checker<'_>, e: &Node, path: &str, field: &str) -> Option<Vec<String>> {
    let n = e.get(field).filter(|n| !matches!(n.value, Yaml::Null))?;
    let p = format!("{path}.{field}");
    let Some(items) = n.as_seq() else {
        c.err(
            n.pos,
            &p,
            format!("must be a list of strings, found {}", n.kind()),
        );
        return None;
    };
    if items.is_empty() {
        c.err(n.pos, &p, "must contain at least one item");
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (i, it) in items.iter().enumerate() {
        match it.as_str() {
            Some(s) => out.push(s.to_string()),
            None => {
                ok = false;
                c.err(
                    it.pos,
                    &format!("{p}[{i}]"),
                    format!("must be a string, found {}", it.kind()),
                );
            }
        }
    }
    ok.then_some(out)
}

/// File-level rules of `validate_perf_changelog.py` (reference §4.2) on the head file: UTF-8 text
/// ending with a newline, no CR/tab/NUL, a YAML list root, no duplicate keys, one
/// `- config-keys:` line per entry, every entry valid; and, with a base, existing entries
/// unchanged and in order except a `pr-link` correction to the canonical
/// `https://github.com/SemiAnalysisAI/InferenceX/pull/<n>` form.
///
/// # Errors
/// All problems found, each naming `file:line`.
pub fn validate_file(
    head: &str,
    head_file: &str,
    base: Option<&str>,
) -> Result<Vec<ChangelogEntry>> {
    let mut errs = Vec::new();
    for (i, line) in head.split('\n').enumerate() {
        for (ch, what) in [('\r', "carriage return"), ('\t', "tab"), ('\0', "NUL byte")] {
            if let Some(col) = line.find(ch) {
                errs.push(ConfigError::new(
                    head_file,
                    Pos {
                        line: i + 1,
                        col: col + 1,
                    },
                    "",
                    format!("{what} not allowed"),
                ));
            }
        }
    }
    if !head.is_empty() && !head.ends_with('\n') {
        let line = head.split('\n').count();
        errs.push(ConfigError::new(
            head_file,
            Pos { line, col: 1 },
            "",
            "file must end with a newline",
        ));
    }
    if !errs.is_empty() {
        return Err(Error::from_many(errs));
    }
    let root = yaml::parse(head, head_file)?;
    if root.as_seq().is_none() {
        return Err(ConfigError::new(
            head_file,
            root.pos,
            "",
            format!("the changelog must be a YAML list, found {}", root.kind()),
        )
        .into());
    }
    let (entries, errors) = validate_entry_list(&root, head_file, &|i, _| i);
    if !errors.is_empty() {
        return Err(Error::from_many(errors));
    }
    let marker_lines = head
        .lines()
        .filter(|l| l.starts_with("- config-keys:"))
        .count();
    let n = root.as_seq().map(|s| s.len()).unwrap_or(0);
    if marker_lines != n {
        return Err(ConfigError::new(
            head_file,
            Pos::default(),
            "",
            format!("{marker_lines} lines start with '- config-keys:' but the file has {n} entries (each entry must start with '- config-keys:')"),
        )
        .into());
    }
    if let Some(base) = base {
        let base_root = yaml::parse(base, "base")?;
        let base_items = base_root.as_seq().unwrap_or(&[]);
        let head_items = root.as_seq().unwrap_or(&[]);
        if head_items.len() < base_items.len() {
            return Err(Error::Usage(format!(
                "{head_file}: {} existing entries were removed",
                base_items.len() - head_items.len()
            )));
        }
        for (i, (b, h)) in base_items.iter().zip(head_items).enumerate() {
            if b.to_json() == h.to_json() {
                continue;
            }
            let (mut bj, mut hj) = (b.to_json(), h.to_json());
            let canonical = hj
                .get("pr-link")
                .and_then(Value::as_str)
                .is_some_and(is_canonical_pr_link);
            if let (Some(bo), Some(ho)) = (bj.as_object_mut(), hj.as_object_mut()) {
                bo.remove("pr-link");
                ho.remove("pr-link");
            }
            if bj == hj && canonical {
                continue;
            }
            return Err(ConfigError::new(head_file, h.pos, format!("[{i}]"), "existing changelog entries are immutable (only a pr-link correction to the canonical form is allowed)").into());
        }
    }
    Ok(entries)
}

fn is_canonical_pr_link(s: &str) -> bool {
    s.strip_prefix("https://github.com/SemiAnalysisAI/InferenceX/pull/")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Expands changelog config keys against the master configs: `*` matches any run of characters
/// (full match), other characters are literal. First-seen order, no duplicates.
///
/// # Errors
/// [`Error::Usage`] for an unknown key or a pattern matching nothing.
pub fn expand_keys(keys: &[String], configs: &MasterConfigs) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for k in keys {
        if k.contains('*') {
            let matched: Vec<&str> = configs.keys().filter(|c| star_match(c, k)).collect();
            if matched.is_empty() {
                return Err(Error::Usage(format!(
                    "no config keys matched the wildcard pattern '{k}' in master configs"
                )));
            }
            for m in matched {
                if !out.iter().any(|o| o == m) {
                    out.push(m.to_string());
                }
            }
        } else if configs.get(k).is_none() {
            return Err(Error::Usage(format!(
                "config key '{k}' not found in master configs"
            )));
        } else if !out.contains(k) {
            out.push(k.clone());
        }
    }
    Ok(out)
}

/// [`expand_keys`] for one entry; a key or pattern that matches nothing is an
/// [`Error::Config`] at that key in the head file, e.g. `perf-changelog.yaml:3012:7:
/// [751].config-keys[0]: config key 'x' not found in master configs`.
fn expand_entry_keys(e: &ChangelogEntry, configs: &MasterConfigs) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for (j, k) in e.config_keys.iter().enumerate() {
        let matched = expand_keys(std::slice::from_ref(k), configs).map_err(|err| {
            let pos = e.key_pos.get(j).copied().unwrap_or(Pos {
                line: e.line,
                col: 1,
            });
            let field = format!("[{}].config-keys[{j}]", e.index);
            Error::Config(ConfigError::new(&e.file, pos, field, err.to_string()))
        })?;
        for m in matched {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    Ok(out)
}

/// Full match where `*` is the only wildcard.
fn star_match(name: &str, pat: &str) -> bool {
    let parts: Vec<&str> = pat.split('*').collect();
    if parts.len() == 1 {
        return name == pat;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

/// Run-wide options (`process_changelog.py` flags).
#[derive(Debug, Clone, Default)]
pub struct ProcessOptions {
    /// `--trim-conc`: keep only the lowest concurrency of each throughput curve.
    pub trim_conc: bool,
    /// `--all-evals`: expand every entry's eval selection.
    pub all_evals: bool,
    /// `--evals-only`: suppress throughput rows for every entry.
    pub evals_only: bool,
    /// Base ref recorded in `changelog_metadata`.
    pub base_ref: String,
    /// Head ref recorded in `changelog_metadata`.
    pub head_ref: String,
}

/// Master configs at the base revision, needed by append-only entries.
pub struct BaseConfigs<'a> {
    /// The base master configs.
    pub configs: &'a MasterConfigs,
}

/// Processes validated entries into the reference's output object (key order included).
///
/// # Errors
/// Usage errors (append-only mixed with other entries or with eval flags, unknown keys), generator
/// errors, and append-only violations.
pub fn process(
    entries: &[ChangelogEntry],
    configs: &MasterConfigs,
    runners: &RunnerConfig,
    opts: &ProcessOptions,
    base: Option<BaseConfigs<'_>>,
) -> Result<Value> {
    let has_append = check_entry_mix(entries, opts)?;
    let mut resolved: Vec<(&ChangelogEntry, Vec<String>)> = Vec::new();
    for e in entries {
        resolved.push((e, expand_entry_keys(e, configs)?));
    }
    if has_append {
        let Some(b) = &base else {
            return Err(Error::Usage(
                "append-only entries need the base revision's master configs".into(),
            ));
        };
        check_append_scope(&resolved, b.configs, configs)?;
    }
    // all-evals entries first (stable).
    resolved.sort_by_key(|(e, _)| !e.all_evals);
    let base_configs = base.as_ref().map(|b| b.configs);
    let (mut bench, evals) = collect_rows(&resolved, configs, base_configs, runners, opts)?;
    if opts.trim_conc {
        bench = trim_conc(bench);
    }
    let mut out = bucketed(bench, &evals)?;
    out.insert(
        "changelog_metadata".into(),
        json!({
            "base_ref": opts.base_ref,
            "head_ref": opts.head_ref,
            "entries": entries.iter().map(ChangelogEntry::to_json).collect::<Vec<_>>(),
        }),
    );
    Ok(Value::Object(out))
}

/// Append-only entries sweep alone and without eval modifiers. Returns whether there are
/// any. Errors: a mix, or an eval modifier with them.
fn check_entry_mix(entries: &[ChangelogEntry], opts: &ProcessOptions) -> Result<bool> {
    let has_append = entries.iter().any(|e| e.append_only);
    if has_append && !entries.iter().all(|e| e.append_only) {
        return Err(Error::Usage(
            "append-only entries cannot share a sweep with regular changelog entries".into(),
        ));
    }
    if has_append && (opts.all_evals || opts.evals_only) {
        return Err(Error::Usage(
            "append-only sweeps cannot use all-evals or evals-only modifiers".into(),
        ));
    }
    Ok(has_append)
}

/// The configs the append-only entries `resolved` select (with the scenarios each names) and
/// `base`'s and `configs`' difference checked against them ([`validate_append_only_scope`]:
/// every selected config exists in `base`, no other config changed, no top-level field did).
fn check_append_scope(
    resolved: &[(&ChangelogEntry, Vec<String>)],
    base: &MasterConfigs,
    configs: &MasterConfigs,
) -> Result<()> {
    let mut selected: Vec<(String, BTreeSet<&'static str>)> = Vec::new();
    for (e, keys) in resolved {
        for k in keys {
            let sc = e.scenarios();
            match selected.iter_mut().find(|(n, _)| n == k) {
                Some((_, s)) => s.extend(sc),
                None => selected.push((k.clone(), sc.into_iter().collect())),
            }
        }
    }
    validate_append_only_scope(base, configs, &selected)
}

/// The benchmark and eval rows of the `resolved` entries (each entry's configs by coverage
/// group and scenario; an append-only entry's rows are only those new since `base`). Errors:
/// the generator's.
fn collect_rows(
    resolved: &[(&ChangelogEntry, Vec<String>)],
    configs: &MasterConfigs,
    base: Option<&MasterConfigs>,
    runners: &RunnerConfig,
    opts: &ProcessOptions,
) -> Result<(Vec<Row>, Vec<Row>)> {
    let mut bench: Vec<Row> = Vec::new();
    let mut evals: Vec<Row> = Vec::new();
    let mut bench_seen: HashMap<String, BTreeSet<&str>> = HashMap::new();
    let mut eval_seen: HashMap<String, BTreeSet<&str>> = HashMap::new();
    for (e, keys) in resolved {
        let scen = e.scenarios();
        let expand_all = opts.all_evals || e.all_evals;
        let suppress = opts.evals_only || e.evals_only || e.all_evals;
        if !suppress {
            for (group, cfgs) in coverage_groups(keys, &scen, &mut bench_seen) {
                let common = CommonOptions {
                    no_evals: true,
                    scenario_types: (group.len() != SCENARIO_TYPES.len())
                        .then(|| group.iter().map(|s| s.to_string()).collect()),
                    ..Default::default()
                };
                let mut rows = test_config(configs, runners, &cfgs, &common)?;
                if e.append_only {
                    let b = base.unwrap_or(configs);
                    let base_rows = test_config(b, runners, &cfgs, &common)?;
                    rows = append_only_delta(&base_rows, &rows)?;
                }
                bench.extend(rows);
            }
        }
        if e.append_only {
            continue;
        }
        for (group, cfgs) in coverage_groups(keys, &scen, &mut eval_seen) {
            let common = CommonOptions {
                evals_only: true,
                all_evals: expand_all,
                scenario_types: Some(group.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            };
            let rows = test_config(configs, runners, &cfgs, &common)?;
            evals.extend(filter_eval_rows_by_prefill_ep(rows, e.eval_min_prefill_ep));
        }
    }
    Ok((bench, evals))
}

/// The output's row buckets in the reference's key order: `single_node` and `multi_node`
/// (objects of rows by sequence-length bucket or `agentic`, each with its recipe fingerprint),
/// then the four eval lists. Errors: a row that cannot be dumped.
fn bucketed(bench: Vec<Row>, evals: &[Row]) -> Result<Map<String, Value>> {
    let mut single = Map::new();
    let mut multi = Map::new();
    for mut r in bench {
        let fp = crate::identity::recipe_fingerprint(&r);
        r.insert("recipe-fingerprint".into(), json!(fp));
        let agentic = r.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
        let mn = r.get("prefill").is_some_and(|p| !p.is_null());
        let bucket = if agentic {
            "agentic".to_string()
        } else {
            matrix::seq_len_to_str(
                r.get("isl").and_then(Value::as_i64).unwrap_or(0),
                r.get("osl").and_then(Value::as_i64).unwrap_or(0),
            )
        };
        let dumped = dump_row(&r)?;
        let target = if mn { &mut multi } else { &mut single };
        match target.get_mut(&bucket) {
            Some(Value::Array(a)) => a.push(dumped),
            _ => {
                target.insert(bucket, json!([dumped]));
            }
        }
    }
    let mut buckets: [Vec<Value>; 4] = Default::default();
    for r in evals {
        let mn = r.get("prefill").is_some_and(|p| !p.is_null());
        let agentic = r.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
        let idx = match (mn, agentic) {
            (false, false) => 0,
            (false, true) => 1,
            (true, false) => 2,
            (true, true) => 3,
        };
        buckets[idx].push(dump_row(r)?);
    }
    let [ev, ag_ev, mn_ev, mn_ag_ev] = buckets;
    let mut out = Map::new();
    out.insert("single_node".into(), Value::Object(single));
    out.insert("multi_node".into(), Value::Object(multi));
    out.insert("evals".into(), Value::Array(ev));
    out.insert("agentic_evals".into(), Value::Array(ag_ev));
    out.insert("multinode_evals".into(), Value::Array(mn_ev));
    out.insert("multinode_agentic_evals".into(), Value::Array(mn_ag_ev));
    Ok(out)
}

/// Output text: the object compact (pydantic `model_dump_json`) plus a newline.
pub fn to_json_text(v: &Value) -> String {
    let mut s = crate::pyjson::dumps_compact(v);
    s.push('\n');
    s
}

/// Groups configs by the scenarios not yet covered for them, in first-seen group order.
fn coverage_groups<'s>(
    keys: &[String],
    scen: &[&'s str],
    seen: &mut HashMap<String, BTreeSet<&'s str>>,
) -> Vec<(Vec<&'s str>, Vec<String>)> {
    let mut groups: Vec<(Vec<&'s str>, Vec<String>)> = Vec::new();
    for k in keys {
        let done = seen.entry(k.clone()).or_default();
        let unseen: Vec<&'s str> = SCENARIO_TYPES
            .iter()
            .filter_map(|t| scen.iter().find(|s| **s == *t).copied())
            .filter(|t| !done.contains(t))
            .collect();
        if unseen.is_empty() {
            continue;
        }
        done.extend(unseen.iter().copied());
        match groups.iter_mut().find(|(g, _)| *g == unseen) {
            Some((_, v)) => v.push(k.clone()),
            None => groups.push((unseen, vec![k.clone()])),
        }
    }
    groups
}

fn test_config(
    configs: &MasterConfigs,
    runners: &RunnerConfig,
    keys: &[String],
    common: &CommonOptions,
) -> Result<Vec<Row>> {
    matrix::generate(
        configs,
        runners,
        &Selection::TestConfig(TestConfigOptions {
            config_keys: keys.to_vec(),
            ..Default::default()
        }),
        common,
    )
}

/// Drops multi-node eval rows whose `prefill.ep` (default 1) is below `min` (non-integer ep drops).
pub fn filter_eval_rows_by_prefill_ep(rows: Vec<Row>, min: Option<i64>) -> Vec<Row> {
    let Some(min) = min else { return rows };
    rows.into_iter()
        .filter(|r| match r.get("prefill") {
            Some(Value::Object(p)) => match p.get("ep") {
                None => 1 >= min,
                Some(v) => v.as_i64().is_some_and(|ep| ep >= min),
            },
            _ => true,
        })
        .collect()
}

fn curve_key(r: &Row) -> String {
    let mut m = Map::new();
    for (k, v) in r {
        if k != "conc" && k != "exp-name" {
            m.insert(k.clone(), v.clone());
        }
    }
    crate::pyjson::dumps_canonical(&Value::Object(m))
}

/// `--trim-conc`: single-node rows keep only the lowest concurrency per curve (all fields but
/// conc/exp-name); multi-node rows keep `[min(conc)]`.
pub fn trim_conc(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for mut r in rows {
        if r.get("prefill").is_some_and(|p| !p.is_null()) {
            if let Some(Value::Array(c)) = r.get("conc") {
                if c.len() > 1 {
                    let m = c.iter().filter_map(Value::as_i64).min().unwrap_or(0);
                    r.insert("conc".into(), json!([m]));
                }
            }
            out.push(r);
            continue;
        }
        let k = curve_key(&r);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(out.len()),
            None => groups.push((k, vec![out.len()])),
        }
        out.push(r);
    }
    let mut drop = BTreeSet::new();
    for (_, idx) in groups {
        if idx.len() > 1 {
            let keep = *idx
                .iter()
                .min_by_key(|&&i| {
                    out[i]
                        .get("conc")
                        .and_then(Value::as_i64)
                        .unwrap_or(i64::MAX)
                })
                .unwrap_or(&idx[0]);
            drop.extend(idx.into_iter().filter(|i| *i != keep));
        }
    }
    out.into_iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(_, r)| r)
        .collect()
}

fn concs(r: &Row) -> Result<Vec<i64>> {
    match r.get("conc") {
        Some(Value::Array(a)) if !a.is_empty() && a.iter().all(Value::is_i64) => {
            Ok(a.iter().filter_map(Value::as_i64).collect())
        }
        Some(v) if v.is_i64() => Ok(vec![v.as_i64().unwrap_or(0)]),
        other => Err(Error::Generate(format!(
            "append-only matrix entry has invalid concurrency value: {other:?}"
        ))),
    }
}

/// Append-only delta: only newly added concurrency points of existing curves.
///
/// # Errors
/// When a curve was added, removed or changed, an existing point removed, or nothing added.
pub fn append_only_delta(base: &[Row], head: &[Row]) -> Result<Vec<Row>> {
    let mut bg: Vec<(String, BTreeSet<i64>)> = Vec::new();
    let mut hg: Vec<(String, BTreeSet<i64>)> = Vec::new();
    for (rows, groups) in [(base, &mut bg), (head, &mut hg)] {
        for r in rows {
            let k = curve_key(r);
            let c = concs(r)?;
            match groups.iter_mut().find(|(g, _)| *g == k) {
                Some((_, s)) => s.extend(c),
                None => groups.push((k, c.into_iter().collect())),
            }
        }
    }
    if bg.is_empty() {
        return Err(Error::Generate(
            "append-only requires an existing curve in the base revision".into(),
        ));
    }
    let bkeys: BTreeSet<&String> = bg.iter().map(|(k, _)| k).collect();
    let hkeys: BTreeSet<&String> = hg.iter().map(|(k, _)| k).collect();
    if bkeys != hkeys {
        return Err(Error::Generate("append-only may not add, remove, or modify curve logic; only concurrency points may be added".into()));
    }
    let find = |g: &[(String, BTreeSet<i64>)], k: &str| {
        g.iter()
            .find(|(x, _)| x == k)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    for (k, bc) in &bg {
        let hc = find(&hg, k);
        let removed: Vec<i64> = bc.difference(&hc).copied().collect();
        if !removed.is_empty() {
            return Err(Error::Generate(format!(
                "append-only may not remove existing concurrency points: {removed:?}"
            )));
        }
    }
    let mut emitted: HashMap<String, BTreeSet<i64>> = HashMap::new();
    let mut delta = Vec::new();
    for r in head {
        let k = curve_key(r);
        let added: BTreeSet<i64> = find(&hg, &k).difference(&find(&bg, &k)).copied().collect();
        let em = emitted.entry(k).or_default();
        match r.get("conc") {
            Some(Value::Array(a)) => {
                let mut new = Vec::new();
                for c in a.iter().filter_map(Value::as_i64) {
                    if added.contains(&c) && em.insert(c) {
                        new.push(c);
                    }
                }
                if !new.is_empty() {
                    let mut d = r.clone();
                    d.insert("conc".into(), json!(new));
                    delta.push(d);
                }
            }
            Some(v) => {
                if let Some(c) = v.as_i64() {
                    if added.contains(&c) && em.insert(c) {
                        delta.push(r.clone());
                    }
                }
            }
            None => {}
        }
    }
    if delta.is_empty() {
        return Err(Error::Generate(
            "append-only did not add any concurrency points".into(),
        ));
    }
    Ok(delta)
}

fn validate_append_only_scope(
    base: &MasterConfigs,
    head: &MasterConfigs,
    selected: &[(String, BTreeSet<&'static str>)],
) -> Result<()> {
    let missing: Vec<&str> = selected
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| base.get(k).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(Error::Generate(format!("append-only requires every selected config to exist in the base revision; missing: {missing:?}")));
    }
    let mut all: BTreeSet<&str> = base.keys().collect();
    all.extend(head.keys());
    let mut unrelated: Vec<&str> = all
        .into_iter()
        .filter(|k| !selected.iter().any(|(s, _)| s == k))
        .filter(|k| base.get(k).map(|e| &e.raw) != head.get(k).map(|e| &e.raw))
        .collect();
    unrelated.sort();
    if !unrelated.is_empty() {
        return Err(Error::Generate(format!(
            "append-only PR changed configs not selected by its changelog entry: {unrelated:?}"
        )));
    }
    for (k, allowed) in selected {
        let (Some(b), Some(h)) = (base.get(k), head.get(k)) else {
            continue;
        };
        let bk: BTreeSet<&String> = b.raw.keys().collect();
        let hk: BTreeSet<&String> = h.raw.keys().collect();
        if bk != hk {
            return Err(Error::Generate(format!(
                "append-only changed top-level fields for config '{k}'"
            )));
        }
        for f in bk {
            if f != "scenarios" && b.raw.get(f) != h.raw.get(f) {
                return Err(Error::Generate(format!(
                    "append-only changed non-scenario field '{f}' in '{k}'"
                )));
            }
        }
        let empty = Map::new();
        let bs = b
            .raw
            .get("scenarios")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let hs = h
            .raw
            .get("scenarios")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        if bs.keys().collect::<BTreeSet<_>>() != hs.keys().collect::<BTreeSet<_>>() {
            return Err(Error::Generate(format!(
                "append-only added or removed a scenario in config '{k}'"
            )));
        }
        for (s, bv) in bs {
            let hv = hs.get(s).unwrap_or(&Value::Null);
            if !allowed.contains(s.as_str()) {
                if bv != hv {
                    return Err(Error::Generate(format!(
                        "append-only changed a scenario outside its changelog scope: '{k}' / '{s}'"
                    )));
                }
                continue;
            }
            concurrency_only(bv, hv, &format!("{k}.{s}"))?;
        }
    }
    Ok(())
}

fn concurrency_only(base: &Value, head: &Value, path: &str) -> Result<()> {
    const CONC: [&str; 3] = ["conc-list", "conc-start", "conc-end"];
    match (base, head) {
        (Value::Object(b), Value::Object(h)) => {
            let bk: BTreeSet<&String> = b.keys().filter(|k| !CONC.contains(&k.as_str())).collect();
            let hk: BTreeSet<&String> = h.keys().filter(|k| !CONC.contains(&k.as_str())).collect();
            if bk != hk {
                return Err(Error::Generate(format!(
                    "append-only changed config structure at {path}"
                )));
            }
            for k in bk {
                concurrency_only(&b[k.as_str()], &h[k.as_str()], &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(b), Value::Array(h)) => {
            if b.len() != h.len() {
                return Err(Error::Generate(format!(
                    "append-only changed config structure at {path}"
                )));
            }
            for (i, (x, y)) in b.iter().zip(h).enumerate() {
                concurrency_only(x, y, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (b, h) if b == h => Ok(()),
        _ => Err(Error::Generate(format!(
            "append-only changed non-concurrency value at {path}"
        ))),
    }
}

// ---- pydantic-shaped dumping -------------------------------------------------------------

/// A field of an output model: name, and the default dumped when the row lacks it
/// (`None` = omitted, like `exclude_none`).
type Field = (&'static str, Option<fn() -> Value>, Option<Sub>);

#[derive(Clone, Copy)]
enum Sub {
    Worker,
    Component,
    KvBackend,
}

fn f_false() -> Value {
    json!(false)
}
fn f_one() -> Value {
    json!(1)
}
fn f_empty() -> Value {
    json!([])
}

const SINGLE_NODE: &[Field] = &[
    ("image", None, None),
    ("model", None, None),
    ("model-prefix", None, None),
    ("precision", None, None),
    ("framework", None, None),
    ("spec-decoding", None, None),
    ("runner", None, None),
    ("isl", None, None),
    ("osl", None, None),
    ("tp", None, None),
    ("pp", None, None),
    ("dcp-size", None, None),
    ("pcp-size", None, None),
    ("ep", None, None),
    (DP_ATTN_KEY, None, None),
    ("conc", None, None),
    ("max-model-len", None, None),
    ("exp-name", None, None),
    ("disagg", None, None),
    ("run-eval", None, None),
    ("eval-only", Some(f_false), None),
    ("eval-framework", None, None),
    ("eval-suite", None, None),
    ("router", None, Some(Sub::Component)),
    ("recipe-fingerprint", None, None),
];

const MULTI_NODE: &[Field] = &[
    ("image", None, None),
    ("model", None, None),
    ("model-prefix", None, None),
    ("precision", None, None),
    ("framework", None, None),
    ("spec-decoding", None, None),
    ("runner", None, None),
    ("isl", None, None),
    ("osl", None, None),
    ("prefill", None, Some(Sub::Worker)),
    ("decode", None, Some(Sub::Worker)),
    ("conc", None, None),
    ("max-model-len", None, None),
    ("exp-name", None, None),
    ("disagg", None, None),
    ("run-eval", None, None),
    ("eval-only", Some(f_false), None),
    ("eval-conc", None, None),
    ("eval-all-concs", Some(f_false), None),
    ("eval-framework", None, None),
    ("eval-suite", None, None),
    ("router", None, Some(Sub::Component)),
    ("kv-p2p-transfer", None, None),
    ("recipe-fingerprint", None, None),
];

const SINGLE_NODE_AGENTIC: &[Field] = &[
    ("image", None, None),
    ("model", None, None),
    ("model-prefix", None, None),
    ("precision", None, None),
    ("framework", None, None),
    ("runner", None, None),
    ("tp", None, None),
    ("pp", None, None),
    ("dcp-size", None, None),
    ("pcp-size", None, None),
    ("ep", None, None),
    (DP_ATTN_KEY, None, None),
    ("spec-decoding", None, None),
    ("conc", None, None),
    ("kv-offloading", None, None),
    ("kv-offload-backend", None, Some(Sub::KvBackend)),
    ("router", None, Some(Sub::Component)),
    ("total-cpu-dram-gb", None, None),
    ("duration", None, None),
    ("exp-name", None, None),
    ("scenario-type", None, None),
    ("run-eval", None, None),
    ("eval-only", None, None),
    ("eval-framework", None, None),
    ("eval-suite", None, None),
    ("recipe-fingerprint", None, None),
];

const MULTI_NODE_AGENTIC: &[Field] = &[
    ("image", None, None),
    ("model", None, None),
    ("model-prefix", None, None),
    ("precision", None, None),
    ("framework", None, None),
    ("spec-decoding", None, None),
    ("runner", None, None),
    ("prefill", None, Some(Sub::Worker)),
    ("decode", None, Some(Sub::Worker)),
    ("conc", None, None),
    ("kv-offloading", None, None),
    ("kv-offload-backend", None, Some(Sub::KvBackend)),
    ("router", None, Some(Sub::Component)),
    ("kv-p2p-transfer", None, None),
    ("total-cpu-dram-gb", None, None),
    ("duration", None, None),
    ("exp-name", None, None),
    ("disagg", None, None),
    ("scenario-type", None, None),
    ("run-eval", None, None),
    ("eval-only", None, None),
    ("eval-conc", None, None),
    ("eval-framework", None, None),
    ("eval-suite", None, None),
    ("recipe-fingerprint", None, None),
];

const WORKER: &[Field] = &[
    ("num-worker", None, None),
    ("tp", None, None),
    ("pp", Some(f_one), None),
    ("dcp-size", Some(f_one), None),
    ("pcp-size", Some(f_one), None),
    ("ep", None, None),
    (DP_ATTN_KEY, None, None),
    ("hardware", None, None),
    ("additional-settings", Some(f_empty), None),
];
const COMPONENT: &[Field] = &[("name", None, None), ("version", None, None)];

fn dump_model(v: &Map<String, Value>, fields: &[Field], model: &str) -> Result<Value> {
    if let Some(extra) = v.keys().find(|k| !fields.iter().any(|(n, _, _)| n == k)) {
        return Err(Error::Generate(format!(
            "{model}: unexpected field '{extra}' in matrix row"
        )));
    }
    let mut out = Map::new();
    for (name, default, sub) in fields {
        let val = match v.get(*name) {
            Some(Value::Null) | None => default.map(|d| d()),
            Some(x) => Some(match (sub, x) {
                (Some(Sub::Worker), Value::Object(o)) => dump_model(o, WORKER, "WorkerConfig")?,
                (Some(Sub::Component | Sub::KvBackend), Value::Object(o)) => {
                    dump_model(o, COMPONENT, "ComponentMetadata")?
                }
                _ => x.clone(),
            }),
        };
        if let Some(val) = val {
            out.insert((*name).to_string(), val);
        }
    }
    Ok(Value::Object(out))
}

/// A generator row as the matching reference model dumps it (field order, defaults, no nulls).
///
/// # Errors
/// A row with a field its model does not know.
pub fn dump_row(r: &Row) -> Result<Value> {
    let agentic = r.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
    let mn = r.get("prefill").is_some_and(|p| !p.is_null());
    let (fields, name) = match (mn, agentic) {
        (false, false) => (SINGLE_NODE, "SingleNodeMatrixEntry"),
        (true, false) => (MULTI_NODE, "MultiNodeMatrixEntry"),
        (false, true) => (SINGLE_NODE_AGENTIC, "SingleNodeAgenticMatrixEntry"),
        (true, true) => (MULTI_NODE_AGENTIC, "MultiNodeAgenticMatrixEntry"),
    };
    dump_model(r, fields, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_wildcards_are_regex_like() {
        assert!(star_match("dsr1-fp8-b200-sglang", "dsr1-*-sglang"));
        assert!(star_match("dsr1-fp8-b200-sglang", "*"));
        assert!(star_match("ab", "a*b"));
        assert!(!star_match("dsr1-fp8", "dsr1-fp?"));
        assert!(star_match("dsr1-fp?", "dsr1-fp?"));
        assert!(!star_match("abc", "a*b"));
    }

    #[test]
    fn deletions_are_rejected_with_base_line() {
        let e = added_lines("- a: 1\n- b: 2\n", "- a: 1\n", "base.yaml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("base.yaml:2:1: Deletions are not allowed"),
            "{e}"
        );
        let a = added_lines("- a: 1\n", "- a: 1\n\n- b: 2\n", "base.yaml").unwrap();
        assert_eq!(a.text, "\n- b: 2");
        assert_eq!(a.head_lines, vec![2, 3]);
    }

    #[test]
    fn additions_from_a_diff_follow_the_reference_quirks() {
        // `+` lines starting with `+++` and `-` lines starting with `---` are skipped (the
        // reference takes them for file headers); blank deletions are allowed.
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,4 @@\n a\n-  \n---x\n+++y\n+- b: 1\n+\n\\ No newline at end of file\n";
        let a = added_from_diff(diff, "a\n++y\n- b: 1\n\n", "base.yaml").unwrap();
        assert_eq!(a.text, "- b: 1\n");
        assert_eq!(a.head_lines, vec![3, 4]);
        assert_eq!(a.entry_lines, vec![3]);
        let e = added_from_diff("@@ -7,2 +7 @@\n x\n-gone\n", "", "base.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "base.yaml:8:1: Deletions are not allowed in the changelog; only additions are permitted. Found deleted line: gone"
        );
        let e = added_from_diff("@@ -a +1 @@\n", "", "base.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "diff:1:1: malformed hunk header '@@ -a +1 @@'"
        );
        // A zero-length old range names the line before it.
        let e = added_from_diff("@@ -0,0 +1 @@\n+x\n@@ -3 +3,0 @@\n-y\n", "x\n", "b").unwrap_err();
        assert!(e.to_string().starts_with("b:3:1: Deletions"), "{e}");
    }

    #[test]
    fn trim_conc_keeps_lowest_point() {
        let rows: Vec<Row> = [
            json!({"a": 1, "conc": 8, "exp-name": "x8"}),
            json!({"a": 1, "conc": 2, "exp-name": "x2"}),
            json!({"a": 2, "conc": 4}),
            json!({"prefill": {}, "conc": [16, 4, 8]}),
        ]
        .into_iter()
        .map(|v| v.as_object().unwrap().clone())
        .collect();
        let t = trim_conc(rows);
        let concs: Vec<Value> = t.iter().map(|r| r["conc"].clone()).collect();
        assert_eq!(concs, vec![json!(2), json!(4), json!([4])]);
    }
}
