//! Strict schema of InferenceX master configs and `runners.yaml`.
//!
//! The rules are those of InferenceX's `utils/matrix_logic/validation.py` (pydantic models with
//! `extra='forbid'`) as described in `reference/inferencex-producer.md` §1: unknown keys, missing
//! required keys, wrong types, bad concurrency ranges, DCP not dividing TP, component-metadata scope
//! rules, KV-offload rules, the `cluster:` runner rule for agentic configs, `*` in keys and
//! duplicate keys across files. Every problem is reported (not just the first), each naming
//! `file:line:col` and the dotted field path.
//!
//! One deliberate difference: where pydantic's lax mode would coerce a value (`tp: "8"`,
//! `tp: 8.0`, `dp-attn: 1`), we reject it, because the reference generator copies the *raw*
//! YAML value into matrix rows, so a coerced value would leak into job definitions as a string or
//! float. An explicit `null` for an optional field is accepted as "absent", as pydantic does.

use inferbench_core::point::DP_ATTN_KEY;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{read_to_string, ConfigError, Error, Result};
use crate::yaml::{self, Node, Pos, Yaml};

/// The runner-label prefix required for agentic configs (`cluster:<name>`).
pub const CLUSTER_LABEL_PREFIX: &str = "cluster:";

/// Allowed `spec-decoding` values.
pub const SPEC_DECODING_VALUES: [&str; 3] = ["mtp", "draft_model", "none"];

/// One validated top-level entry ("config key") of a master config.
#[derive(Debug, Clone)]
pub struct ConfigEntry {
    /// The config key, e.g. `dsr1-fp4-b200-sglang`.
    pub key: String,
    /// The file it came from (as given by the caller).
    pub file: String,
    /// Position of the key in that file.
    pub pos: Pos,
    /// Position of the `runner` value (for "unknown runner label" errors).
    pub runner_pos: Pos,
    /// The entry as JSON, in YAML order, values exactly as PyYAML would load them.
    pub raw: Map<String, Value>,
}

impl ConfigEntry {
    /// A string field of the entry (`image`, `model`, `model-prefix`, `precision`, `framework`,
    /// `runner`); empty when absent (cannot happen after validation for required fields).
    pub fn str_field(&self, name: &str) -> &str {
        self.raw.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// `multinode` (false when absent).
    pub fn is_multinode(&self) -> bool {
        self.raw
            .get("multinode")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `disagg` (false when absent).
    pub fn is_disagg(&self) -> bool {
        self.raw
            .get("disagg")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The list under `scenarios.<name>` (`fixed-seq-len` or `agentic-coding`); empty if absent.
    pub fn scenario(&self, name: &str) -> &[Value] {
        self.raw
            .get("scenarios")
            .and_then(|s| s.get(name))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// All master configs of one invocation, merged in file order (keys unique across files).
#[derive(Debug, Clone, Default)]
pub struct MasterConfigs {
    /// Entries in file order, then document order.
    pub entries: Vec<ConfigEntry>,
}

impl MasterConfigs {
    /// Looks up a config key.
    pub fn get(&self, key: &str) -> Option<&ConfigEntry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// Config keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.key.as_str())
    }

    /// Loads and validates master config files, in the given order.
    ///
    /// # Errors
    /// [`Error::Io`] for unreadable files; [`Error::Config`]/[`Error::ConfigMany`] listing every
    /// schema problem with `file:line:col: field: message`.
    pub fn load(paths: &[impl AsRef<Path>]) -> Result<Self> {
        let mut sources = Vec::new();
        for p in paths {
            let p = p.as_ref();
            sources.push((p.display().to_string(), read_to_string(p)?));
        }
        let refs: Vec<(&str, &str)> = sources
            .iter()
            .map(|(f, s)| (f.as_str(), s.as_str()))
            .collect();
        Self::from_sources(&refs)
    }

    /// Validates master configs given as `(file name, YAML text)` pairs.
    ///
    /// # Errors
    /// As [`MasterConfigs::load`], minus I/O.
    pub fn from_sources(sources: &[(&str, &str)]) -> Result<Self> {
        let mut out = MasterConfigs::default();
        let mut errors = Vec::new();
        for (file, text) in sources {
            let root = match yaml::parse(text, file) {
                Ok(r) => r,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let Some(map) = root.as_map() else {
                errors.push(ConfigError::new(
                    *file,
                    root.pos,
                    "",
                    format!(
                        "a master config must be a mapping of config keys, found {}",
                        root.kind()
                    ),
                ));
                continue;
            };
            for (k, v) in map {
                let key = k.key_text();
                let mut v_ctx = Checker::new(file);
                if key.contains('*') {
                    v_ctx.err(k.pos, &key, "wildcard '*' is not allowed in master config keys (it is reserved for changelog patterns)");
                }
                if let Some(prev) = out.entries.iter().find(|e| e.key == key) {
                    v_ctx.err(
                        k.pos,
                        &key,
                        format!(
                            "duplicate configuration key (already defined in {}:{})",
                            prev.file, prev.pos.line
                        ),
                    );
                }
                v_ctx.master_entry(v, &key);
                if v_ctx.errors.is_empty() {
                    let raw = match v.to_json() {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    out.entries.push(ConfigEntry {
                        key,
                        file: file.to_string(),
                        pos: k.pos,
                        runner_pos: v.get("runner").map(|n| n.pos).unwrap_or(k.pos),
                        raw,
                    });
                } else {
                    errors.append(&mut v_ctx.errors);
                }
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(Error::from_many(errors))
        }
    }
}

/// Hardware facts of one runner label or cluster (`runners.yaml` `hardware` section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HardwareFacts {
    /// Host CPU DRAM available to benchmark jobs, MiB.
    pub available_cpu_dram_mib: i64,
    /// GPUs per node.
    pub gpus_per_node: i64,
}

/// Validated `runners.yaml`.
#[derive(Debug, Clone, Default)]
pub struct RunnerConfig {
    /// Label → concrete runner names, in file order.
    pub labels: Vec<(String, Vec<String>)>,
    /// Hardware key → facts.
    pub hardware: BTreeMap<String, HardwareFacts>,
    /// File name, for error messages.
    pub file: String,
}

impl RunnerConfig {
    /// Concrete runner names for a label (empty when unknown).
    pub fn nodes(&self, label: &str) -> &[String] {
        self.labels
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, n)| n.as_slice())
            .unwrap_or(&[])
    }

    /// Whether `label` is a known scheduling label.
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|(l, _)| l == label)
    }

    /// Loads and validates a runners file.
    ///
    /// # Errors
    /// I/O or schema errors naming `file:line:col` and field.
    pub fn load(path: &Path) -> Result<Self> {
        let text = read_to_string(path)?;
        Self::from_source(&path.display().to_string(), &text)
    }

    /// Validates `runners.yaml` text.
    ///
    /// # Errors
    /// Schema errors: `labels` missing or not a mapping, a label whose value is not a non-empty
    /// list of strings, unknown top-level or hardware keys, non-positive hardware numbers.
    pub fn from_source(file: &str, text: &str) -> Result<Self> {
        let root = yaml::parse(text, file)?;
        let mut c = Checker::new(file);
        let mut out = RunnerConfig {
            file: file.to_string(),
            ..Default::default()
        };
        if let Some(m) = c.mapping(&root, "", &["labels", "hardware"], &["labels"]) {
            let _ = m;
            if let Some(labels) = root.get("labels") {
                if let Some(entries) = c.expect_map(labels, "labels") {
                    for (k, v) in entries {
                        let path = format!("labels.{}", k.key_text());
                        match v.as_seq() {
                            Some(items) if !items.is_empty() => {
                                let mut names = Vec::new();
                                for (i, it) in items.iter().enumerate() {
                                    match it.as_str() {
                                        Some(s) => names.push(s.to_string()),
                                        None => c.err(
                                            it.pos,
                                            &format!("{path}[{i}]"),
                                            format!("must be a string, found {}", it.kind()),
                                        ),
                                    }
                                }
                                out.labels.push((k.key_text(), names));
                            }
                            Some(_) => c.err(v.pos, &path, "cannot be an empty list"),
                            None => c.err(
                                v.pos,
                                &path,
                                format!("must be a list of runner names, found {}", v.kind()),
                            ),
                        }
                    }
                }
            }
            if let Some(hw) = root.get("hardware") {
                if !matches!(hw.value, Yaml::Null) {
                    if let Some(entries) = c.expect_map(hw, "hardware") {
                        for (k, v) in entries {
                            let path = format!("hardware.{}", k.key_text());
                            if c.mapping(
                                v,
                                &path,
                                &["available-cpu-dram-mib", "gpus-per-node"],
                                &["available-cpu-dram-mib", "gpus-per-node"],
                            )
                            .is_some()
                            {
                                let mib =
                                    c.int(v, &path, "available-cpu-dram-mib", IntRule::Positive);
                                let gpn = c.int(v, &path, "gpus-per-node", IntRule::Positive);
                                if let (Some(mib), Some(gpn)) = (mib, gpn) {
                                    out.hardware.insert(
                                        k.key_text(),
                                        HardwareFacts {
                                            available_cpu_dram_mib: mib,
                                            gpus_per_node: gpn,
                                        },
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        if c.errors.is_empty() {
            Ok(out)
        } else {
            Err(Error::from_many(c.errors))
        }
    }
}

/// Integer constraints.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum IntRule {
    Any,
    Positive,
    AtLeastOne,
    NonNegative,
}

/// Collects schema errors for one file.
pub(crate) struct Checker<'a> {
    pub(crate) file: &'a str,
    pub(crate) errors: Vec<ConfigError>,
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn present(node: Option<&Node>) -> Option<&Node> {
    node.filter(|n| !matches!(n.value, Yaml::Null))
}

impl<'a> Checker<'a> {
    pub(crate) fn new(file: &'a str) -> Self {
        Checker {
            file,
            errors: Vec::new(),
        }
    }

    pub(crate) fn err(&mut self, pos: Pos, field: &str, msg: impl Into<String>) {
        self.errors
            .push(ConfigError::new(self.file, pos, field, msg));
    }

    /// Reports that `n` at `field` has the wrong type: "must be WANTED, found KIND".
    fn wrong_type(&mut self, n: &Node, field: &str, wanted: &str) {
        self.err(
            n.pos,
            field,
            format!("must be {wanted}, found {}", describe(n)),
        );
    }

    pub(crate) fn expect_map<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
    ) -> Option<&'n [(Node, Node)]> {
        match node.as_map() {
            Some(m) => Some(m),
            None => {
                self.err(
                    node.pos,
                    path,
                    format!("must be a mapping, found {}", node.kind()),
                );
                None
            }
        }
    }

    /// Checks that `node` is a mapping with only `allowed` keys and every `required` key
    /// (a required key whose value is `null` counts as missing).
    pub(crate) fn mapping<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        allowed: &[&str],
        required: &[&str],
    ) -> Option<&'n [(Node, Node)]> {
        let entries = self.expect_map(node, path)?;
        for (k, _) in entries {
            let name = k.key_text();
            if !allowed.contains(&name.as_str()) {
                self.err(
                    k.pos,
                    &join(path, &name),
                    format!("unknown field (allowed: {})", allowed.join(", ")),
                );
            }
        }
        for r in required {
            match entries.iter().find(|(k, _)| k.as_str() == Some(r)) {
                None => self.err(node.pos, &join(path, r), "missing required field"),
                Some((k, v)) if matches!(v.value, Yaml::Null) => {
                    self.err(k.pos, &join(path, r), "required field is null")
                }
                _ => {}
            }
        }
        Some(entries)
    }

    pub(crate) fn int(
        &mut self,
        map: &Node,
        path: &str,
        field: &str,
        rule: IntRule,
    ) -> Option<i64> {
        let n = present(map.get(field))?;
        let p = join(path, field);
        match n.value {
            Yaml::Int(i) => {
                let ok = match rule {
                    IntRule::Any => true,
                    IntRule::Positive | IntRule::AtLeastOne => i > 0,
                    IntRule::NonNegative => i >= 0,
                };
                if !ok && rule == IntRule::NonNegative {
                    self.err(n.pos, &p, format!("must be 0 or greater, got {i}"));
                    return None;
                }
                if !ok {
                    self.err(n.pos, &p, format!("must be greater than 0, got {i}"));
                    return None;
                }
                Some(i)
            }
            _ => {
                self.wrong_type(n, &p, "an integer");
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, map: &Node, path: &str, field: &str) -> Option<bool> {
        let n = present(map.get(field))?;
        match n.value {
            Yaml::Bool(b) => Some(b),
            _ => {
                self.wrong_type(n, &join(path, field), "a boolean");
                None
            }
        }
    }

    pub(crate) fn string(
        &mut self,
        map: &Node,
        path: &str,
        field: &str,
        min_len: usize,
    ) -> Option<String> {
        let n = present(map.get(field))?;
        match n.as_str() {
            Some(s) if s.chars().count() >= min_len => Some(s.to_string()),
            Some(_) => {
                self.err(n.pos, &join(path, field), "must be a non-empty string");
                None
            }
            None => {
                self.wrong_type(n, &join(path, field), "a string");
                None
            }
        }
    }

    pub(crate) fn literal(
        &mut self,
        map: &Node,
        path: &str,
        field: &str,
        allowed: &[&str],
    ) -> Option<String> {
        let n = present(map.get(field))?;
        match n.as_str() {
            Some(s) if allowed.contains(&s) => Some(s.to_string()),
            _ => {
                self.err(
                    n.pos,
                    &join(path, field),
                    format!(
                        "must be one of {}, found {}",
                        quoted_list(allowed),
                        describe(n)
                    ),
                );
                None
            }
        }
    }

    fn string_list(&mut self, map: &Node, path: &str, field: &str) -> Option<Vec<String>> {
        let n = present(map.get(field))?;
        let p = join(path, field);
        let Some(items) = n.as_seq() else {
            self.wrong_type(n, &p, "a list of strings");
            return None;
        };
        let mut out = Vec::new();
        for (i, it) in items.iter().enumerate() {
            match it.as_str() {
                Some(s) => out.push(s.to_string()),
                None => self.wrong_type(it, &format!("{p}[{i}]"), "a string"),
            }
        }
        Some(out)
    }

    fn list<'n>(&mut self, map: &'n Node, path: &str, field: &str) -> Option<&'n [Node]> {
        let n = present(map.get(field))?;
        match n.as_seq() {
            Some(s) => Some(s),
            None => {
                self.wrong_type(n, &join(path, field), "a list");
                None
            }
        }
    }

    /// `{name, version}` router metadata (both non-empty strings; version not an image ref).
    fn component(&mut self, node: &Node, path: &str) {
        if self
            .mapping(node, path, &["name", "version"], &["name", "version"])
            .is_some()
        {
            self.string(node, path, "name", 1);
            if let Some(v) = self.string(node, path, "version", 1) {
                if v.starts_with("image:") {
                    let pos = node.get("version").map(|n| n.pos).unwrap_or(node.pos);
                    self.err(pos, &join(path, "version"), "component version must be a release, package version, or source commit, not an image reference");
                }
            }
        }
    }

    /// `{name, version?}` KV-offload backend metadata.
    fn kv_backend(&mut self, node: &Node, path: &str) {
        if self
            .mapping(node, path, &["name", "version"], &["name"])
            .is_some()
        {
            self.string(node, path, "name", 1);
            if let Some(v) = self.string(node, path, "version", 1) {
                if v.starts_with("image:") {
                    let pos = node.get("version").map(|n| n.pos).unwrap_or(node.pos);
                    self.err(pos, &join(path, "version"), "component version must be a release, package version, or source commit, not an image reference");
                }
            }
        }
    }

    fn master_entry(&mut self, node: &Node, key: &str) {
        // `kv-p2p-transfer` is listed for single-node entries too, so that it gets the specific
        // "only for multinode entries" error below instead of "unknown field".
        const ALLOWED: &[&str] = &[
            "image",
            "model",
            "model-prefix",
            "precision",
            "framework",
            "runner",
            "multinode",
            "disagg",
            "router",
            "kv-p2p-transfer",
            "scenarios",
        ];
        const REQUIRED: &[&str] = &[
            "image",
            "model",
            "model-prefix",
            "precision",
            "framework",
            "runner",
            "multinode",
            "scenarios",
        ];
        let multinode = matches!(
            node.get("multinode").map(|n| &n.value),
            Some(Yaml::Bool(true))
        );
        if self.mapping(node, key, ALLOWED, REQUIRED).is_none() {
            return;
        }
        for f in [
            "image",
            "model",
            "model-prefix",
            "precision",
            "framework",
            "runner",
        ] {
            self.string(node, key, f, 0);
        }
        self.boolean(node, key, "multinode");
        let disagg = self.boolean(node, key, "disagg").unwrap_or(false);
        if disagg && !multinode {
            let pos = node.get("disagg").map(|n| n.pos).unwrap_or(node.pos);
            self.err(
                pos,
                &join(key, "disagg"),
                "disagg: true is only allowed when multinode: true",
            );
        }
        let top_router = present(node.get("router"));
        if let Some(r) = top_router {
            self.component(r, &join(key, "router"));
        }
        let top_transfer = if multinode {
            self.string(node, key, "kv-p2p-transfer", 1)
        } else {
            if let Some(v) = present(node.get("kv-p2p-transfer")) {
                self.err(
                    v.pos,
                    &join(key, "kv-p2p-transfer"),
                    "kv-p2p-transfer is only allowed for multinode entries (multinode: true)",
                );
            }
            None
        };
        let Some(scen) = present(node.get("scenarios")) else {
            return;
        };
        let Some((entries, has_agentic)) = self.scenarios(scen, &join(key, "scenarios"), multinode)
        else {
            return;
        };
        if has_agentic {
            self.cluster_runner(node, key);
        }
        self.scope_rules(
            node,
            key,
            &entries,
            (multinode, disagg),
            (top_router, top_transfer),
        );
    }

    /// The `scenarios` mapping at `spath`: at least one of its lists, each fixed-seq-len item
    /// and agentic-coding item checked with its search space. Returns (entry node, path) of
    /// every search-space entry, for the scope rules, and whether there is an agentic item;
    /// `None` when `scen` is not a mapping of those lists (nothing more is checked then).
    fn scenarios<'n>(
        &mut self,
        scen: &'n Node,
        spath: &str,
        multinode: bool,
    ) -> Option<(Vec<(&'n Node, String)>, bool)> {
        self.mapping(scen, spath, &["fixed-seq-len", "agentic-coding"], &[])?;
        let fixed = self.list(scen, spath, "fixed-seq-len");
        let agentic = self.list(scen, spath, "agentic-coding");
        if fixed.is_none_or(|f| f.is_empty()) && agentic.is_none_or(|a| a.is_empty()) {
            self.err(
                scen.pos,
                spath,
                "at least one scenario type must be specified (fixed-seq-len or agentic-coding)",
            );
        }
        let mut entries: Vec<(&Node, String)> = Vec::new();
        for (i, seq) in fixed.unwrap_or(&[]).iter().enumerate() {
            let p = format!("{spath}.fixed-seq-len[{i}]");
            if self
                .mapping(
                    seq,
                    &p,
                    &["isl", "osl", "search-space"],
                    &["isl", "osl", "search-space"],
                )
                .is_none()
            {
                continue;
            }
            self.int(seq, &p, "isl", IntRule::Any);
            self.int(seq, &p, "osl", IntRule::Any);
            for (j, e) in self
                .list(seq, &p, "search-space")
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                let ep = format!("{p}.search-space[{j}]");
                if multinode {
                    self.multinode_entry(e, &ep);
                } else {
                    self.single_node_entry(e, &ep);
                }
                entries.push((e, ep));
            }
        }
        for (i, ag) in agentic.unwrap_or(&[]).iter().enumerate() {
            let p = format!("{spath}.agentic-coding[{i}]");
            if self
                .mapping(
                    ag,
                    &p,
                    &["search-space", "dram-utilization"],
                    &["search-space"],
                )
                .is_none()
            {
                continue;
            }
            let util = present(ag.get("dram-utilization"));
            if let Some(u) = util {
                self.dram_utilization(u, &p);
            }
            for (j, e) in self
                .list(ag, &p, "search-space")
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                let ep = format!("{p}.search-space[{j}]");
                self.agentic_entry(e, &ep, multinode);
                if util.is_none() && e.get("kv-offloading").and_then(Node::as_str) == Some("dram") {
                    let pos = e.get("kv-offloading").map(|n| n.pos).unwrap_or(e.pos);
                    self.err(pos, &join(&ep, "kv-offloading"), format!("kv-offloading 'dram' requires dram-utilization in {p} (with runner hardware metadata)"));
                }
                entries.push((e, ep));
            }
        }
        Some((entries, agentic.is_some_and(|a| !a.is_empty())))
    }

    /// An agentic-coding item's `dram-utilization` (at `p`): a number in (0, 1].
    fn dram_utilization(&mut self, u: &Node, p: &str) {
        let v = match u.value {
            Yaml::Float(f) => Some(f),
            Yaml::Int(i) => Some(i as f64),
            _ => None,
        };
        match v {
            Some(f) if f > 0.0 && f <= 1.0 => {}
            Some(f) => self.err(
                u.pos,
                &join(p, "dram-utilization"),
                format!("must be in (0, 1], got {}", crate::pyjson::float_repr(f)),
            ),
            None => self.wrong_type(u, &join(p, "dram-utilization"), "a number"),
        }
    }

    /// An entry with agentic-coding items runs on one exact fleet: its runner is a
    /// `cluster:<name>` label.
    fn cluster_runner(&mut self, node: &Node, key: &str) {
        if let Some(r) = node.get("runner").and_then(Node::as_str) {
            if !r.starts_with(CLUSTER_LABEL_PREFIX) {
                let pos = node.get("runner").map(|n| n.pos).unwrap_or(node.pos);
                self.err(pos, &join(key, "runner"), format!("agentic master configs must use a 'cluster:<name>' runner label so every point runs on one exact hardware fleet, got '{r}'"));
            }
        }
    }

    /// Component metadata scope rules (reference §1.4): `router` / `kv-p2p-transfer` at the top
    /// level or in search-space `entries`, not both; `kv-p2p-transfer` only for multinode
    /// entries; a disaggregated multinode entry names it at the top or in every entry.
    fn scope_rules(
        &mut self,
        node: &Node,
        key: &str,
        entries: &[(&Node, String)],
        (multinode, disagg): (bool, bool),
        (top_router, top_transfer): (Option<&Node>, Option<String>),
    ) {
        for (field, top) in [
            ("router", top_router.is_some()),
            ("kv-p2p-transfer", top_transfer.is_some()),
        ] {
            if top {
                for (e, ep) in entries {
                    if let Some(v) = present(e.get(field)) {
                        self.err(v.pos, &join(ep, field), format!("{field} must be declared either at the top level or in search-space entries, not both"));
                    }
                }
            }
        }
        if !multinode {
            for (e, ep) in entries {
                if let Some(v) = present(e.get("kv-p2p-transfer")) {
                    self.err(
                        v.pos,
                        &join(ep, "kv-p2p-transfer"),
                        "kv-p2p-transfer is only valid when multinode=true",
                    );
                }
            }
        }
        if disagg && multinode && top_transfer.is_none() {
            let missing: Vec<&(&Node, String)> = entries
                .iter()
                .filter(|(e, _)| present(e.get("kv-p2p-transfer")).is_none())
                .collect();
            if entries.is_empty() {
                self.err(node.pos, &join(key, "kv-p2p-transfer"), "disagg=true requires kv-p2p-transfer at the top level or in every search-space entry");
            }
            for (e, ep) in missing {
                self.err(e.pos, &join(ep, "kv-p2p-transfer"), "disagg=true requires kv-p2p-transfer at the top level or in every search-space entry");
            }
        }
    }

    fn conc_fields(&mut self, e: &Node, path: &str) {
        let start = self.int(e, path, "conc-start", IntRule::Any);
        let end = self.int(e, path, "conc-end", IntRule::Any);
        let list_node = present(e.get("conc-list"));
        let mut list: Option<Vec<i64>> = None;
        if let Some(l) = list_node {
            match l.as_seq() {
                Some(items) => {
                    let mut vals = Vec::new();
                    for (i, it) in items.iter().enumerate() {
                        match it.value {
                            Yaml::Int(v) => vals.push(v),
                            _ => {
                                self.wrong_type(it, &format!("{path}.conc-list[{i}]"), "an integer")
                            }
                        }
                    }
                    list = Some(vals);
                }
                None => self.wrong_type(l, &join(path, "conc-list"), "a list of integers"),
            }
        }
        let has_start = present(e.get("conc-start")).is_some();
        let has_end = present(e.get("conc-end")).is_some();
        let has_range = has_start && has_end;
        let has_list = list_node
            .and_then(Node::as_seq)
            .is_some_and(|s| !s.is_empty());
        if has_range && has_list {
            self.err(e.pos, &join(path, "conc-list"), "cannot specify both 'conc-list' and 'conc-start'/'conc-end'; use either a list or a range");
        } else if !has_range && !has_list {
            let what = if has_start != has_end {
                "both 'conc-start' and 'conc-end' must be provided together"
            } else {
                "must specify either 'conc-list' or both 'conc-start' and 'conc-end'"
            };
            self.err(
                e.pos,
                &join(
                    path,
                    if has_start {
                        "conc-end"
                    } else if has_end {
                        "conc-start"
                    } else {
                        "conc-list"
                    },
                ),
                what,
            );
        }
        if has_range {
            if let (Some(s), Some(en)) = (start, end) {
                let pos = e.get("conc-start").map(|n| n.pos).unwrap_or(e.pos);
                if s <= 0 || en <= 0 {
                    self.err(
                        pos,
                        &join(path, "conc-start"),
                        format!(
                            "'conc-start' and 'conc-end' must be greater than 0, got {s} and {en}"
                        ),
                    );
                } else if s > en {
                    self.err(
                        pos,
                        &join(path, "conc-start"),
                        format!("'conc-start' ({s}) must be <= 'conc-end' ({en})"),
                    );
                }
            }
        }
        if has_list {
            if let (Some(vals), Some(l)) = (list, list_node) {
                if let Some(bad) = vals.iter().find(|v| **v <= 0) {
                    self.err(
                        l.pos,
                        &join(path, "conc-list"),
                        format!("entries must be greater than 0, got {bad}"),
                    );
                }
            }
        }
    }

    fn topology(&mut self, e: &Node, path: &str, tp: Option<i64>) {
        let dcp = self.int(e, path, "dcp-size", IntRule::Positive);
        self.int(e, path, "pp", IntRule::Positive);
        self.int(e, path, "pcp-size", IntRule::Positive);
        if let (Some(tp), Some(dcp)) = (tp, dcp.or(Some(1))) {
            if dcp != 0 && tp % dcp != 0 {
                let pos = e.get("dcp-size").map(|n| n.pos).unwrap_or(e.pos);
                self.err(
                    pos,
                    &join(path, "dcp-size"),
                    format!("'tp' ({tp}) must be divisible by 'dcp-size' ({dcp})"),
                );
            }
        }
    }

    fn single_node_entry(&mut self, e: &Node, path: &str) {
        const ALLOWED: &[&str] = &[
            "tp",
            "pp",
            "dcp-size",
            "pcp-size",
            "ep",
            "spec-decoding",
            DP_ATTN_KEY,
            "router",
            "conc-start",
            "conc-end",
            "conc-list",
        ];
        if self.mapping(e, path, ALLOWED, &["tp"]).is_none() {
            return;
        }
        // InferenceX's models take any int for tp/ep, but a non-positive one can only fail at
        // launch (no GPUs) or divide by zero in tput_per_gpu: rejected here.
        let tp = self.int(e, path, "tp", IntRule::Positive);
        self.topology(e, path, tp);
        self.int(e, path, "ep", IntRule::Positive);
        self.literal(e, path, "spec-decoding", &SPEC_DECODING_VALUES);
        self.boolean(e, path, DP_ATTN_KEY);
        if let Some(r) = present(e.get("router")) {
            self.component(r, &join(path, "router"));
        }
        self.conc_fields(e, path);
    }

    fn worker(&mut self, w: &Node, path: &str) -> Option<bool> {
        const ALLOWED: &[&str] = &[
            "num-worker",
            "tp",
            "pp",
            "dcp-size",
            "pcp-size",
            "ep",
            DP_ATTN_KEY,
            "hardware",
            "additional-settings",
        ];
        self.mapping(w, path, ALLOWED, &["num-worker", "tp", "ep", DP_ATTN_KEY])?;
        // `num-worker: 0` is legal (decode 0 = aggregated); tp/ep as in single_node_entry.
        self.int(w, path, "num-worker", IntRule::NonNegative);
        let tp = self.int(w, path, "tp", IntRule::Positive);
        self.topology(w, path, tp);
        self.int(w, path, "ep", IntRule::Positive);
        self.boolean(w, path, DP_ATTN_KEY);
        let hw = self.string(w, path, "hardware", 1);
        self.string_list(w, path, "additional-settings");
        Some(hw.is_some())
    }

    fn worker_pair(&mut self, e: &Node, path: &str) {
        let p = present(e.get("prefill"));
        let d = present(e.get("decode"));
        let ph = p.and_then(|p| self.worker(p, &join(path, "prefill")));
        let dh = d.and_then(|d| self.worker(d, &join(path, "decode")));
        if let (Some(ph), Some(dh)) = (ph, dh) {
            if ph != dh {
                self.err(
                    e.pos,
                    &join(path, "hardware"),
                    "'hardware' must be specified for both 'prefill' and 'decode', or neither",
                );
            }
        }
    }

    fn multinode_entry(&mut self, e: &Node, path: &str) {
        const ALLOWED: &[&str] = &[
            "spec-decoding",
            "prefill",
            "decode",
            "router",
            "kv-p2p-transfer",
            "conc-start",
            "conc-end",
            "conc-list",
        ];
        if self
            .mapping(e, path, ALLOWED, &["prefill", "decode"])
            .is_none()
        {
            return;
        }
        self.literal(e, path, "spec-decoding", &SPEC_DECODING_VALUES);
        self.worker_pair(e, path);
        if let Some(r) = present(e.get("router")) {
            self.component(r, &join(path, "router"));
        }
        self.string(e, path, "kv-p2p-transfer", 1);
        self.conc_fields(e, path);
    }

    fn agentic_entry(&mut self, e: &Node, path: &str, multinode: bool) {
        const ALLOWED: &[&str] = &[
            "tp",
            "pp",
            "dcp-size",
            "pcp-size",
            "ep",
            DP_ATTN_KEY,
            "spec-decoding",
            "prefill",
            "decode",
            "kv-offloading",
            "kv-offload-backend",
            "router",
            "kv-p2p-transfer",
            "conc-start",
            "conc-end",
            "conc-list",
        ];
        if self.mapping(e, path, ALLOWED, &[]).is_none() {
            return;
        }
        let has_tp = present(e.get("tp")).is_some();
        let has_p = present(e.get("prefill")).is_some();
        let has_d = present(e.get("decode")).is_some();
        let tp = self.int(e, path, "tp", IntRule::Positive);
        self.int(e, path, "ep", IntRule::Positive);
        self.boolean(e, path, DP_ATTN_KEY);
        self.literal(e, path, "spec-decoding", &SPEC_DECODING_VALUES);
        let offload = self.literal(e, path, "kv-offloading", &["none", "dram"]);
        let backend = present(e.get("kv-offload-backend"));
        if let Some(b) = backend {
            self.kv_backend(b, &join(path, "kv-offload-backend"));
        }
        if let Some(r) = present(e.get("router")) {
            self.component(r, &join(path, "router"));
        }
        self.string(e, path, "kv-p2p-transfer", 1);
        self.conc_fields(e, path);
        let kv_pos = e.get("kv-offloading").map(|n| n.pos).unwrap_or(e.pos);
        match (offload.as_deref(), backend) {
            (None, Some(b)) if present(e.get("kv-offloading")).is_none() => self.err(
                b.pos,
                &join(path, "kv-offload-backend"),
                "kv-offload-backend requires kv-offloading",
            ),
            (Some("none"), Some(b)) => self.err(
                b.pos,
                &join(path, "kv-offload-backend"),
                "kv-offload-backend can only be set when kv-offloading is not 'none'",
            ),
            (Some("dram"), None) => self.err(
                kv_pos,
                &join(path, "kv-offload-backend"),
                "kv-offload-backend is required when kv-offloading is 'dram'",
            ),
            _ => {}
        }
        let complete_mn = has_p && has_d;
        if usize::from(has_tp) + usize::from(complete_mn) != 1 || (has_p != has_d) {
            self.err(e.pos, path, "agentic search-space entries must specify exactly one of tp, or both prefill and decode");
            return;
        }
        if has_tp {
            if multinode {
                self.err(
                    e.pos,
                    &join(path, "tp"),
                    "entries of a multinode: true config need prefill and decode workers, not tp",
                );
            }
            if present(e.get("kv-offloading")).is_none() {
                self.err(
                    e.pos,
                    &join(path, "kv-offloading"),
                    "single-node agentic search-space entries must specify kv-offloading",
                );
            }
            self.topology(e, path, tp);
        } else {
            if !multinode {
                self.err(e.pos, &join(path, "prefill"), "entries of a multinode: false config must specify tp, not prefill/decode workers");
            }
            for f in ["pp", "dcp-size", "pcp-size"] {
                if let Some(n) = e.get(f) {
                    self.err(n.pos, &join(path, f), "multinode agentic search-space entries cannot specify 'pp', 'dcp-size', 'pcp-size' (set them inside prefill/decode)");
                }
            }
            self.worker_pair(e, path);
        }
    }
}

fn describe(n: &Node) -> String {
    match &n.value {
        Yaml::Str(s) => format!("string '{s}'"),
        Yaml::Int(i) => format!("integer {i}"),
        Yaml::Float(f) => format!("float {}", crate::pyjson::float_repr(*f)),
        Yaml::Bool(b) => format!("boolean {b}"),
        other => Node {
            value: other.clone(),
            pos: n.pos,
        }
        .kind()
        .to_string(),
    }
}

fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ")
}
