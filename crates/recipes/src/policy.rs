//! InferenceX's own rules from `MODELS.md` as checks (`inferbench models policy`, issue 41):
//!
//! * **Engine submission policy**: an AgentX (agentic-coding) config on an additional engine
//!   (TensorRT-LLM, ATOM, TokenSpeed, … anything but the first-class vLLM and SGLang) needs, on
//!   the same hardware SKU, an AgentX config of every engine the model is mapped to, unless the
//!   SKU is brand-new hardware (the exception list) or the config key carries a waiver with its
//!   reason (the "new model architecture" exception). [`EngineFinding`].
//! * **Spec-decode-only AgentX** (Deprecation Notice): every agentic search-space entry running
//!   `spec-decoding: none` (or no `spec-decoding`, InferenceX's default) is a deprecated arm still
//!   running; a finding, never a violation. [`SpecDecodeFinding`].
//! * **Deprecation bookkeeping**: the support matrix (active and deprecated scenarios per model
//!   prefix) against the active configs and the archived ones in `configs/deprecated/`.
//!   [`DeprecationFinding`].
//!
//! The rules' data (the model-to-engine mapping, framework-to-engine patterns, exception SKUs,
//! waivers, the support matrix) is one YAML file, [`Policy`]; [`DEFAULT_POLICY`] is MODELS.md's
//! as embedded. Waivers live in that file, keyed by config key, because InferenceX's config
//! schema refuses unknown fields (`extra='forbid'`), so a config entry cannot carry one.
//!
//! Nothing here prints: [`check`] returns a [`PolicyReport`] the CLI renders.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::error::{read_to_string, ConfigError, Error, Result};
use crate::schema::{MasterConfigs, CLUSTER_LABEL_PREFIX};
use crate::yaml::{self, Node, Yaml};

/// The embedded default policy: MODELS.md's engine mapping, exception SKUs and support matrix
/// (`crates/recipes/data/models-policy.yaml`).
pub const DEFAULT_POLICY: &str = include_str!("../data/models-policy.yaml");

/// The name [`Policy::embedded`] gives its file in error messages and reports.
pub const DEFAULT_POLICY_NAME: &str = "<embedded models-policy.yaml>";

/// The status a policy gives a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScenarioStatus {
    /// Run and published.
    Active,
    /// No longer run (its configs archived or removed).
    Deprecated,
}

/// One row of the policy's support matrix and engine mapping: a model prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRule {
    /// The `model-prefix`, e.g. `dsv4`.
    pub prefix: String,
    /// MODELS.md's name of the model (may be empty).
    pub name: String,
    /// The primary native/upstream engines the mapping assigns (`vLLM`, `SGLang`); empty when
    /// MODELS.md maps none.
    pub engines: Vec<String>,
    /// Active scenarios (`agentic`, `8k1k`, …).
    pub active: Vec<String>,
    /// Deprecated scenarios.
    pub deprecated: Vec<String>,
    /// Precisions deprecated in every scenario (qwen3.5's `bf16`).
    pub deprecated_precisions: Vec<String>,
    /// Other `model-prefix` values of the same support-matrix row (`also-prefixes`): MODELS.md
    /// lists a model family under one prefix (`kimik2.5`: "Kimi-K2.5/2.6/2.7-Code"), while
    /// configs may spell a member's own (`kimik2.6`, `kimik2.7-code`; InferenceX's app maps
    /// them to the family's display name, `docs/reference/inferencex-app.md` §"model DB key").
    pub also_prefixes: Vec<String>,
}

/// The rules' data, read from a policy YAML ([`DEFAULT_POLICY`] or the user's `--policy`).
#[derive(Debug, Clone)]
pub struct Policy {
    /// Where it was read from (a path, or [`DEFAULT_POLICY_NAME`]).
    pub file: String,
    /// Engine name → framework names or `*` patterns, in file order (the first match wins).
    pub engines: Vec<(String, Vec<String>)>,
    /// First-class engines (vLLM, SGLang); every other engine is "additional".
    pub first_class: Vec<String>,
    /// Brand-new hardware SKUs → their MODELS.md names.
    pub exception_skus: BTreeMap<String, String>,
    /// Config key → the reason of its "new model architecture" waiver.
    pub waivers: BTreeMap<String, String>,
    /// Scenario status for every model (a model's own lists win).
    pub scenarios: BTreeMap<String, ScenarioStatus>,
    /// The support matrix and engine mapping, in file order.
    pub models: Vec<ModelRule>,
}

const TOP_KEYS: [&str; 7] = [
    "version",
    "engines",
    "first-class",
    "exception-skus",
    "waivers",
    "scenarios",
    "models",
];
const MODEL_KEYS: [&str; 6] = [
    "name",
    "engines",
    "active",
    "deprecated",
    "deprecated-precisions",
    "also-prefixes",
];

/// Reads a policy YAML field by field, collecting every problem.
struct Reader<'a> {
    file: &'a str,
    errors: Vec<ConfigError>,
}

impl Reader<'_> {
    fn err(&mut self, n: &Node, field: &str, msg: impl Into<String>) {
        self.errors
            .push(ConfigError::new(self.file, n.pos, field, msg.into()));
    }

    fn map<'n>(&mut self, n: &'n Node, field: &str) -> &'n [(Node, Node)] {
        match (&n.value, n.as_map()) {
            (_, Some(m)) => m,
            (Yaml::Null, _) => &[],
            _ => {
                self.err(n, field, format!("must be a mapping, found {}", n.kind()));
                &[]
            }
        }
    }

    fn string(&mut self, n: &Node, field: &str) -> Option<String> {
        match n.as_str() {
            Some(s) if !s.trim().is_empty() => Some(s.to_string()),
            _ => {
                self.err(
                    n,
                    field,
                    format!("must be a non-empty string, found {}", n.kind()),
                );
                None
            }
        }
    }

    fn strings(&mut self, n: Option<&Node>, field: &str) -> Vec<String> {
        let Some(n) = n else { return Vec::new() };
        let items = match (&n.value, n.as_seq()) {
            (_, Some(s)) => s,
            (Yaml::Null, _) => return Vec::new(),
            _ => {
                self.err(
                    n,
                    field,
                    format!("must be a list of strings, found {}", n.kind()),
                );
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (i, x) in items.iter().enumerate() {
            // A scenario such as `8k1k` is a plain string; a bare number is not a name.
            if let Some(s) = self.string(x, &format!("{field}[{i}]")) {
                out.push(s);
            }
        }
        out
    }

    fn unknown_keys(&mut self, m: &[(Node, Node)], allowed: &[&str], field: &str) {
        for (k, _) in m {
            let name = k.key_text();
            if !allowed.contains(&name.as_str()) {
                let at = if field.is_empty() {
                    name.clone()
                } else {
                    format!("{field}.{name}")
                };
                self.err(
                    k,
                    &at,
                    format!("unknown field (allowed: {})", allowed.join(", ")),
                );
            }
        }
    }
}

impl Policy {
    /// The embedded default policy ([`DEFAULT_POLICY`]).
    ///
    /// # Panics
    /// Never: the embedded file is checked by a unit test.
    pub fn embedded() -> Policy {
        Policy::from_source(DEFAULT_POLICY_NAME, DEFAULT_POLICY)
            .expect("the embedded models-policy.yaml is valid")
    }

    /// Loads a policy YAML file.
    ///
    /// # Errors
    /// [`Error::Io`] when unreadable; otherwise as [`Policy::from_source`].
    pub fn load(path: &Path) -> Result<Policy> {
        Policy::from_source(&path.display().to_string(), &read_to_string(path)?)
    }

    /// Parses policy YAML text; `file` names it in errors.
    ///
    /// # Errors
    /// [`Error::Config`] / [`Error::ConfigMany`] (every problem, each at `file:line:col` with
    /// its field): YAML syntax, `version` other than 1, unknown fields, wrong types, empty
    /// names or waiver reasons, a model engine or first-class engine missing from `engines`,
    /// a scenario status other than `active`/`deprecated`, a scenario both active and
    /// deprecated for one model.
    pub fn from_source(file: &str, text: &str) -> Result<Policy> {
        let root = yaml::parse(text, file)?;
        let mut r = Reader {
            file,
            errors: Vec::new(),
        };
        let mut p = Policy {
            file: file.to_string(),
            engines: Vec::new(),
            first_class: Vec::new(),
            exception_skus: BTreeMap::new(),
            waivers: BTreeMap::new(),
            scenarios: BTreeMap::new(),
            models: Vec::new(),
        };
        if root.as_map().is_none() {
            r.err(
                &root,
                "",
                format!("must be a mapping, found {}", root.kind()),
            );
            return Err(Error::from_many(r.errors));
        }
        let top = r.map(&root, "");
        r.unknown_keys(top, &TOP_KEYS, "");
        match root.get("version") {
            Some(Node {
                value: Yaml::Int(1),
                ..
            }) => {}
            Some(v) => r.err(v, "version", "unsupported policy version (expected 1)"),
            None => r.err(&root, "version", "missing required field (version: 1)"),
        }
        if let Some(e) = root.get("engines") {
            for (k, v) in r.map(e, "engines") {
                let name = k.key_text();
                let pats = r.strings(Some(v), &format!("engines.{name}"));
                p.engines.push((name, pats));
            }
        }
        let known: BTreeSet<String> = p.engines.iter().map(|(n, _)| n.clone()).collect();
        if let Some(n) = root.get("first-class") {
            p.first_class = r.strings(Some(n), "first-class");
            for (i, e) in p.first_class.clone().iter().enumerate() {
                if !known.contains(e) {
                    let at = n.as_seq().and_then(|s| s.get(i)).unwrap_or(n);
                    r.err(
                        at,
                        &format!("first-class[{i}]"),
                        format!("'{e}' is not an engine under engines"),
                    );
                }
            }
        }
        if let Some(n) = root.get("exception-skus") {
            for (k, v) in r.map(n, "exception-skus") {
                let sku = k.key_text().to_ascii_lowercase();
                let name = r.string(v, &format!("exception-skus.{sku}"));
                p.exception_skus.insert(sku, name.unwrap_or_default());
            }
        }
        if let Some(n) = root.get("waivers") {
            for (k, v) in r.map(n, "waivers") {
                let key = k.key_text();
                if v.as_str().is_none_or(|s| s.trim().is_empty()) {
                    r.err(
                        v,
                        &format!("waivers.{key}"),
                        "a waiver needs its reason (a non-empty string: why the mapped engine \
                         cannot support this model on this hardware yet)",
                    );
                    continue;
                }
                p.waivers
                    .insert(key, v.as_str().unwrap_or_default().to_string());
            }
        }
        if let Some(n) = root.get("scenarios") {
            for (k, v) in r.map(n, "scenarios") {
                let s = k.key_text();
                let st = match v.as_str() {
                    Some("active") => ScenarioStatus::Active,
                    Some("deprecated") => ScenarioStatus::Deprecated,
                    _ => {
                        r.err(
                            v,
                            &format!("scenarios.{s}"),
                            "must be 'active' or 'deprecated'",
                        );
                        continue;
                    }
                };
                p.scenarios.insert(s, st);
            }
        }
        if let Some(n) = root.get("models") {
            for (k, v) in r.map(n, "models") {
                let prefix = k.key_text();
                let f = format!("models.{prefix}");
                let m = r.map(v, &f);
                r.unknown_keys(m, &MODEL_KEYS, &f);
                let rule = ModelRule {
                    name: v
                        .get("name")
                        .and_then(|x| r.string(x, &format!("{f}.name")))
                        .unwrap_or_default(),
                    engines: r.strings(v.get("engines"), &format!("{f}.engines")),
                    active: r.strings(v.get("active"), &format!("{f}.active")),
                    deprecated: r.strings(v.get("deprecated"), &format!("{f}.deprecated")),
                    deprecated_precisions: r.strings(
                        v.get("deprecated-precisions"),
                        &format!("{f}.deprecated-precisions"),
                    ),
                    also_prefixes: r.strings(v.get("also-prefixes"), &format!("{f}.also-prefixes")),
                    prefix,
                };
                for a in &rule.also_prefixes {
                    let taken = *a == rule.prefix
                        || (p.models.iter()).any(|m| m.prefix == *a || m.also_prefixes.contains(a));
                    if taken {
                        r.err(
                            v.get("also-prefixes").unwrap_or(v),
                            &format!("{f}.also-prefixes"),
                            format!("'{a}' already names a row of the support matrix"),
                        );
                    }
                }
                if (p.models.iter()).any(|m| m.also_prefixes.contains(&rule.prefix)) {
                    r.err(
                        k,
                        &f,
                        format!("'{}' is already another row's also-prefix", rule.prefix),
                    );
                }
                for e in &rule.engines {
                    if !known.contains(e) {
                        r.err(
                            v.get("engines").unwrap_or(v),
                            &format!("{f}.engines"),
                            format!("'{e}' is not an engine under engines"),
                        );
                    }
                }
                for s in &rule.active {
                    if rule.deprecated.contains(s) {
                        r.err(
                            v.get("deprecated").unwrap_or(v),
                            &format!("{f}.deprecated"),
                            format!("scenario '{s}' is both active and deprecated"),
                        );
                    }
                }
                p.models.push(rule);
            }
        }
        if r.errors.is_empty() {
            Ok(p)
        } else {
            Err(Error::from_many(r.errors))
        }
    }

    /// The engine a framework runs: the first engine with a matching name or `*` pattern, else
    /// the framework's own name (an additional engine the policy does not name).
    pub fn engine_of(&self, framework: &str) -> String {
        let fw = framework.to_ascii_lowercase();
        self.engines
            .iter()
            .find(|(_, pats)| pats.iter().any(|p| glob(&p.to_ascii_lowercase(), &fw)))
            .map(|(e, _)| e.clone())
            .unwrap_or_else(|| framework.to_string())
    }

    /// The exception-list entry (key, MODELS.md's name) a runner label falls under: a key the
    /// label starts with once `cluster:`, `-` and `_` are dropped and case ignored
    /// (`cluster:tpu-v8t-x` → `tpuv8t`).
    pub fn new_hardware(&self, runner: &str) -> Option<(&str, &str)> {
        let r = runner.strip_prefix(CLUSTER_LABEL_PREFIX).unwrap_or(runner);
        let flat: String = (r.chars())
            .filter(|c| !matches!(c, '-' | '_'))
            .collect::<String>()
            .to_ascii_lowercase();
        (self.exception_skus.iter())
            .find(|(k, _)| !k.is_empty() && flat.starts_with(k.as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The support-matrix row of a model prefix: the row named by it, or the row that lists it
    /// under `also-prefixes`.
    pub fn model(&self, prefix: &str) -> Option<&ModelRule> {
        (self.models.iter())
            .find(|m| m.prefix == prefix)
            .or_else(|| (self.models.iter()).find(|m| m.also_prefixes.iter().any(|a| a == prefix)))
    }

    /// What the support matrix says of a scenario run at a precision by a model prefix:
    /// `None` when the prefix is not in the matrix; else the model's own lists, then the
    /// deprecated precisions, then the all-model scenario table; a scenario listed nowhere is
    /// [`Listed::Unlisted`].
    pub fn listed(&self, prefix: &str, scenario: &str, precision: &str) -> Option<Listed> {
        let m = self.model(prefix)?;
        Some(
            if (m.deprecated_precisions.iter()).any(|p| p.eq_ignore_ascii_case(precision)) {
                Listed::DeprecatedPrecision
            } else if m.active.iter().any(|s| s == scenario) {
                Listed::Active
            } else if m.deprecated.iter().any(|s| s == scenario)
                || self.scenarios.get(scenario) == Some(&ScenarioStatus::Deprecated)
            {
                Listed::Deprecated
            } else {
                Listed::Unlisted
            },
        )
    }
}

/// What the support matrix says of a (model, scenario, precision); see [`Policy::listed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// Listed active for the model.
    Active,
    /// Listed deprecated (for the model, or for every model).
    Deprecated,
    /// The precision is deprecated for the model in every scenario.
    DeprecatedPrecision,
    /// Neither active nor deprecated for the model.
    Unlisted,
}

/// `*`-pattern match (`*` = any run of characters, every other character literal).
fn glob(pat: &str, s: &str) -> bool {
    match pat.split_once('*') {
        None => pat == s,
        Some((head, rest)) => {
            let Some(tail) = s.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| glob(rest, &tail[i..]))
        }
    }
}

/// The hardware SKU of a runner label: without `cluster:`, up to the first `-` or `_`,
/// lower-cased (`cluster:gb300-nv` → `gb300`, `mi355x-disagg` → `mi355x`, `h200` → `h200`);
/// a first part without a digit takes a version part after it (`tpu-v8t-gke` → `tpuv8t`).
pub fn sku_of(runner: &str) -> String {
    let r = runner.strip_prefix(CLUSTER_LABEL_PREFIX).unwrap_or(runner);
    let mut parts = r.split(['-', '_']);
    let mut sku = parts.next().unwrap_or("").to_ascii_lowercase();
    let is_version = |p: &str| {
        let mut c = p.chars();
        c.next().is_some_and(|v| v.eq_ignore_ascii_case(&'v'))
            && c.next().is_some_and(|d| d.is_ascii_digit())
    };
    if !sku.chars().any(|c| c.is_ascii_digit()) {
        if let Some(v) = parts.next().filter(|p| is_version(p)) {
            sku.push_str(&v.to_ascii_lowercase());
        }
    }
    sku
}

/// The scenario code of a fixed-seq-len pair: `1k1k`, `1k8k`, `8k1k`, else `<isl>_<osl>`.
pub fn scenario_code(isl: i64, osl: i64) -> String {
    match (isl, osl) {
        (1024, 1024) => "1k1k".into(),
        (1024, 8192) => "1k8k".into(),
        (8192, 1024) => "8k1k".into(),
        _ => format!("{isl}_{osl}"),
    }
}

/// Agentic scenario code.
pub const AGENTIC: &str = "agentic";

/// A config entry's scenario codes, each once, in order (`8k1k`, …, then `agentic`).
fn scenarios_of(raw: &serde_json::Map<String, Value>) -> Vec<String> {
    let sc = raw.get("scenarios");
    let mut out: Vec<String> = Vec::new();
    for s in sc
        .and_then(|s| s.get("fixed-seq-len"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let i = |f: &str| s.get(f).and_then(Value::as_i64).unwrap_or(0);
        let code = scenario_code(i("isl"), i("osl"));
        if !out.contains(&code) {
            out.push(code);
        }
    }
    if sc
        .and_then(|s| s.get("agentic-coding"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        out.push(AGENTIC.into());
    }
    out
}

/// A config entry of an archived file (`configs/deprecated/`), read leniently: such files may
/// predate the current schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchivedEntry {
    /// Config key.
    pub key: String,
    /// `file:line` of the key.
    pub location: String,
    /// `model-prefix` (empty when absent).
    pub model_prefix: String,
    /// `precision` (empty when absent).
    pub precision: String,
    /// Scenario codes.
    pub scenarios: Vec<String>,
}

/// Reads archived master configs leniently (only YAML syntax must hold).
///
/// # Errors
/// [`Error::Io`] for an unreadable file, [`Error::Config`] for a YAML syntax error.
pub fn read_archived(paths: &[impl AsRef<Path>]) -> Result<Vec<ArchivedEntry>> {
    let mut out = Vec::new();
    for p in paths {
        let p = p.as_ref();
        let file = p.display().to_string();
        let root = yaml::parse(&read_to_string(p)?, &file)?;
        for (k, v) in root.as_map().unwrap_or(&[]) {
            let raw = match v.to_json() {
                Value::Object(o) => o,
                _ => continue,
            };
            let s = |f: &str| raw.get(f).and_then(Value::as_str).unwrap_or("").to_string();
            out.push(ArchivedEntry {
                key: k.key_text(),
                location: format!("{file}:{}", k.pos.line),
                model_prefix: s("model-prefix"),
                precision: s("precision"),
                scenarios: scenarios_of(&raw),
            });
        }
    }
    Ok(out)
}

/// The verdict of an [`EngineFinding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineVerdict {
    /// Breaks the ordering rule (exit 1).
    Violation,
    /// Allowed first: the SKU is brand-new hardware on the exception list.
    NewHardware,
    /// Allowed first: the config key has a waiver with its reason.
    Waived,
}

/// One engine-submission-policy finding: an AgentX config on an additional engine whose model
/// lacks an AgentX config of a mapped engine on the same SKU (one finding per missing engine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EngineFinding {
    /// Violation, or allowed by an exception.
    pub verdict: EngineVerdict,
    /// Config key.
    pub config: String,
    /// `file:line` of the key.
    pub location: String,
    /// `model-prefix`.
    pub model: String,
    /// Hardware SKU ([`sku_of`] the runner label).
    pub sku: String,
    /// The config's framework.
    pub framework: String,
    /// The engine it runs (additional, i.e. not first-class).
    pub engine: String,
    /// The mapped engine with no AgentX config on this SKU; `None` when the model has no
    /// engine mapping in the policy at all (then nothing can come first, and it is a violation).
    pub missing_engine: Option<String>,
    /// The waiver's reason, or the exception SKU's MODELS.md name; empty for a violation.
    pub reason: String,
}

/// One spec-decode-only AgentX finding: an agentic search-space entry without speculative
/// decoding (a deprecated arm still running; never a violation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecDecodeFinding {
    /// Config key.
    pub config: String,
    /// `file:line` of the key.
    pub location: String,
    /// `agentic-coding[i].search-space[j]`.
    pub entry: String,
    /// `model-prefix`.
    pub model: String,
    /// Hardware SKU.
    pub sku: String,
    /// Framework.
    pub framework: String,
    /// The first config key (in file order) with a spec-decoding agentic entry for the same
    /// model, SKU and framework; `None` when no such sibling exists.
    pub sibling: Option<String>,
}

/// The kind of a [`DeprecationFinding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeprecationKind {
    /// An active config runs a scenario (or precision) the support matrix lists as deprecated.
    DeprecatedButActive,
    /// An active config runs a scenario the support matrix lists neither active nor deprecated
    /// for the model.
    NotListedActive,
    /// An active config's model prefix is not in the support matrix.
    UnlistedModel,
    /// The support matrix lists a scenario active, but only archived configs run it.
    ActiveButArchived,
}

/// One deprecation-bookkeeping mismatch (a finding, not a violation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeprecationFinding {
    /// What disagrees.
    pub kind: DeprecationKind,
    /// Config key (for [`DeprecationKind::ActiveButArchived`]: the first archived one).
    pub config: String,
    /// `file:line` of the key.
    pub location: String,
    /// `model-prefix`.
    pub model: String,
    /// Scenario code; empty for [`DeprecationKind::UnlistedModel`].
    pub scenario: String,
    /// The config's precision.
    pub precision: String,
    /// The support-matrix row's prefix when it differs from `model` (the config spells one of
    /// the row's `also-prefixes`, e.g. `kimik2.6` under `kimik2.5`); `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix_row: Option<String>,
}

/// Everything [`check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PolicyReport {
    /// Engine submission policy findings (violations and allowed exceptions).
    pub engine_policy: Vec<EngineFinding>,
    /// Spec-decode-only AgentX findings.
    pub spec_decode_only: Vec<SpecDecodeFinding>,
    /// Deprecation bookkeeping mismatches.
    pub deprecations: Vec<DeprecationFinding>,
}

impl PolicyReport {
    /// Engine-policy violations (the only findings that fail the check).
    pub fn violations(&self) -> usize {
        (self.engine_policy.iter())
            .filter(|f| f.verdict == EngineVerdict::Violation)
            .count()
    }
}

/// The spec-decoding of an agentic search-space entry: absent or `null` is InferenceX's
/// default, `none`.
fn spec_decoding(entry: &Value) -> &str {
    entry
        .get("spec-decoding")
        .and_then(Value::as_str)
        .unwrap_or("none")
}

/// Runs the three rules over the active configs (`--config-files`) and the archived ones.
pub fn check(policy: &Policy, active: &MasterConfigs, archived: &[ArchivedEntry]) -> PolicyReport {
    let mut report = PolicyReport::default();
    let loc = |c: &crate::schema::ConfigEntry| format!("{}:{}", c.file, c.pos.line);
    let agentic: Vec<_> = (active.entries.iter())
        .filter(|c| !c.scenario("agentic-coding").is_empty())
        .collect();

    // Engine submission policy.
    let has_agentx = |model: &str, sku: &str, engine: &str| {
        agentic.iter().any(|c| {
            c.str_field("model-prefix") == model
                && sku_of(c.str_field("runner")) == sku
                && policy.engine_of(c.str_field("framework")) == engine
        })
    };
    for c in &agentic {
        let (model, framework) = (c.str_field("model-prefix"), c.str_field("framework"));
        let engine = policy.engine_of(framework);
        if policy.first_class.contains(&engine) {
            continue;
        }
        let sku = sku_of(c.str_field("runner"));
        let missing: Vec<Option<String>> = match policy.model(model) {
            Some(m) if !m.engines.is_empty() => (m.engines.iter())
                .filter(|e| !has_agentx(model, &sku, e))
                .map(|e| Some(e.clone()))
                .collect(),
            _ => vec![None],
        };
        for missing_engine in missing {
            let new_hw = policy.new_hardware(c.str_field("runner"));
            let (verdict, reason) = if let Some((_, name)) = new_hw {
                (EngineVerdict::NewHardware, name.to_string())
            } else if let Some(why) = policy.waivers.get(&c.key) {
                (EngineVerdict::Waived, why.clone())
            } else {
                (EngineVerdict::Violation, String::new())
            };
            report.engine_policy.push(EngineFinding {
                verdict,
                config: c.key.clone(),
                location: loc(c),
                model: model.to_string(),
                sku: sku.clone(),
                framework: framework.to_string(),
                engine: engine.clone(),
                missing_engine,
                reason,
            });
        }
    }

    // Spec-decode-only AgentX.
    let entries = |c: &crate::schema::ConfigEntry| -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, ag) in c.scenario("agentic-coding").iter().enumerate() {
            let space = ag.get("search-space").and_then(Value::as_array);
            for (j, e) in space.into_iter().flatten().enumerate() {
                out.push((
                    format!("agentic-coding[{i}].search-space[{j}]"),
                    spec_decoding(e).to_string(),
                ));
            }
        }
        out
    };
    for c in &agentic {
        let (model, framework) = (c.str_field("model-prefix"), c.str_field("framework"));
        let sku = sku_of(c.str_field("runner"));
        let sibling = (agentic.iter())
            .find(|o| {
                o.str_field("model-prefix") == model
                    && o.str_field("framework") == framework
                    && sku_of(o.str_field("runner")) == sku
                    && entries(o).iter().any(|(_, s)| s != "none")
            })
            .map(|o| o.key.clone());
        for (entry, spec) in entries(c) {
            if spec == "none" {
                report.spec_decode_only.push(SpecDecodeFinding {
                    config: c.key.clone(),
                    location: loc(c),
                    entry,
                    model: model.to_string(),
                    sku: sku.clone(),
                    framework: framework.to_string(),
                    sibling: sibling.clone(),
                });
            }
        }
    }

    // Deprecation bookkeeping.
    let matrix_row = |prefix: &str| {
        (policy.model(prefix))
            .filter(|m| m.prefix != prefix)
            .map(|m| m.prefix.clone())
    };
    let mut active_runs: BTreeSet<(String, String)> = BTreeSet::new();
    for c in &active.entries {
        let (model, precision) = (c.str_field("model-prefix"), c.str_field("precision"));
        let finding = |kind, scenario: &str| DeprecationFinding {
            kind,
            config: c.key.clone(),
            location: loc(c),
            model: model.to_string(),
            scenario: scenario.to_string(),
            precision: precision.to_string(),
            matrix_row: matrix_row(model),
        };
        if policy.model(model).is_none() {
            report
                .deprecations
                .push(finding(DeprecationKind::UnlistedModel, ""));
            continue;
        }
        for s in scenarios_of(&c.raw) {
            match policy.listed(model, &s, precision) {
                Some(Listed::Active) => {
                    active_runs.insert((model.to_string(), s));
                }
                Some(Listed::Deprecated | Listed::DeprecatedPrecision) => report
                    .deprecations
                    .push(finding(DeprecationKind::DeprecatedButActive, &s)),
                Some(Listed::Unlisted) => report
                    .deprecations
                    .push(finding(DeprecationKind::NotListedActive, &s)),
                None => {}
            }
        }
    }
    let mut reported: BTreeSet<(String, String)> = BTreeSet::new();
    for a in archived {
        for s in &a.scenarios {
            let key = (a.model_prefix.clone(), s.clone());
            if policy.listed(&a.model_prefix, s, &a.precision) == Some(Listed::Active)
                && !active_runs.contains(&key)
                && reported.insert(key)
            {
                report.deprecations.push(DeprecationFinding {
                    kind: DeprecationKind::ActiveButArchived,
                    config: a.key.clone(),
                    location: a.location.clone(),
                    model: a.model_prefix.clone(),
                    scenario: s.clone(),
                    precision: a.precision.clone(),
                    matrix_row: matrix_row(&a.model_prefix),
                });
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An AgentX master config: one agentic search-space entry per `specs` item (`""`: no
    /// `spec-decoding` field, InferenceX's default `none`).
    fn agentx(key: &str, prefix: &str, runner: &str, framework: &str, specs: &[&str]) -> String {
        let mut s = format!(
            "{key}:\n  image: img\n  model: m\n  model-prefix: {prefix}\n  runner: cluster:{runner}\n  precision: fp4\n  framework: {framework}\n  multinode: false\n  scenarios:\n    agentic-coding:\n    - search-space:\n"
        );
        for sd in specs {
            let sd = if sd.is_empty() {
                String::new()
            } else {
                format!("spec-decoding: {sd}, ")
            };
            s.push_str(&format!(
                "      - {{ tp: 8, kv-offloading: none, {sd}conc-list: [1] }}\n"
            ));
        }
        s
    }

    /// A fixed-seq-len master config.
    fn fixed(key: &str, prefix: &str, precision: &str, isl: i64, osl: i64) -> String {
        format!(
            "{key}:\n  image: img\n  model: m\n  model-prefix: {prefix}\n  runner: b200\n  precision: {precision}\n  framework: sglang\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: {isl}\n      osl: {osl}\n      search-space:\n      - {{ tp: 8, conc-start: 1, conc-end: 4 }}\n"
        )
    }

    fn configs(entries: &[String]) -> MasterConfigs {
        MasterConfigs::from_sources(&[("m.yaml", &entries.concat())]).unwrap()
    }

    fn engine_report(p: &Policy, entries: &[String]) -> Vec<EngineFinding> {
        check(p, &configs(entries), &[]).engine_policy
    }

    #[test]
    fn the_embedded_policy_is_models_md() {
        let p = Policy::embedded();
        assert_eq!(p.file, DEFAULT_POLICY_NAME);
        let engines = |m: &str| p.model(m).unwrap().engines.clone();
        assert_eq!(engines("dsv4"), ["vLLM", "SGLang"]);
        assert_eq!(engines("kimik3"), ["vLLM"]);
        assert_eq!(engines("minimaxm3"), ["vLLM"]);
        assert_eq!(engines("glm5.2"), ["SGLang"]);
        assert_eq!(engines("qwen3.5"), ["SGLang"]);
        assert_eq!(p.first_class, ["vLLM", "SGLang"]);
        assert_eq!(
            p.exception_skus.keys().collect::<Vec<_>>(),
            ["mi455x", "rubin", "tpuv8i", "tpuv8t", "vr200"]
        );
        assert!(p.waivers.is_empty());
        assert_eq!(p.models.len(), 13);
    }

    #[test]
    fn frameworks_map_to_engines_and_runners_to_skus() {
        let p = Policy::embedded();
        for (fw, engine) in [
            ("vllm", "vLLM"),
            ("dynamo-vllm", "vLLM"),
            ("llmd-vllm", "vLLM"),
            ("sglang", "SGLang"),
            ("sglang-disagg", "SGLang"),
            ("dynamo-sglang", "SGLang"),
            ("trt", "TensorRT-LLM"),
            ("dynamo-trt", "TensorRT-LLM"),
            ("atom", "ATOM"),
            ("atom-disagg", "ATOM"),
            ("vllm-disagg", "vLLM"),
            ("dynamo-vllm-disagg", "vLLM"),
            ("Dynamo-SGLang", "SGLang"),
            ("trtllm", "TensorRT-LLM"),
            ("tokenspeed", "TokenSpeed"),
            ("mystery-engine", "mystery-engine"),
            ("vllmx", "vllmx"),
        ] {
            assert_eq!(p.engine_of(fw), engine, "{fw}");
        }
        for (runner, sku) in [
            ("cluster:gb300-nv", "gb300"),
            ("cluster:mi355x-amds", "mi355x"),
            ("mi355x-disagg", "mi355x"),
            ("h200", "h200"),
            ("cluster:B300_cw", "b300"),
            ("cluster:tpu-v8t-gke", "tpuv8t"),
            ("rubin-nvl8", "rubin"),
            ("", ""),
        ] {
            assert_eq!(sku_of(runner), sku, "{runner}");
        }
        assert!(glob("*-vllm", "a-b-vllm") && !glob("*-vllm", "vllm") && glob("a*b*c", "abbc"));
        for (runner, key) in [
            ("cluster:mi455x-ualoe72", Some("mi455x")),
            ("cluster:tpu-v8t-gke", Some("tpuv8t")),
            ("TPU_v8i", Some("tpuv8i")),
            ("vr200-nvl72", Some("vr200")),
            ("cluster:rubin-nvl8", Some("rubin")),
            ("cluster:mi355x-amds", None),
            ("gb300", None),
        ] {
            assert_eq!(p.new_hardware(runner).map(|(k, _)| k), key, "{runner}");
        }
    }

    #[test]
    fn an_additional_engine_needs_every_mapped_engine_on_its_sku() {
        let p = Policy::embedded();
        let trt = agentx("dsv4-trt", "dsv4", "b300-nv", "dynamo-trt", &["mtp"]);
        let vllm = agentx("dsv4-vllm", "dsv4", "b300-cw", "vllm", &["mtp"]);
        let sglang = agentx("dsv4-sglang", "dsv4", "b300-nv", "sglang-disagg", &["mtp"]);
        // Violating: dsv4 is mapped to both; only vLLM is on b300 (another cluster, same SKU).
        let f = engine_report(&p, &[trt.clone(), vllm.clone()]);
        assert_eq!(
            f,
            [EngineFinding {
                verdict: EngineVerdict::Violation,
                config: "dsv4-trt".into(),
                location: "m.yaml:1".into(),
                model: "dsv4".into(),
                sku: "b300".into(),
                framework: "dynamo-trt".into(),
                engine: "TensorRT-LLM".into(),
                missing_engine: Some("SGLang".into()),
                reason: String::new(),
            }]
        );
        // Neither: one finding per missing engine.
        let f = engine_report(&p, std::slice::from_ref(&trt));
        let missing: Vec<_> = f.iter().map(|x| x.missing_engine.clone()).collect();
        assert_eq!(missing, [Some("vLLM".into()), Some("SGLang".into())]);
        // Compliant: both mapped engines have an AgentX config on b300.
        assert_eq!(engine_report(&p, &[trt, vllm, sglang]), []);
        // A mapped engine on another SKU does not count; a fixed-seq-len config is no AgentX.
        let atom = agentx("kimik3-atom", "kimik3", "mi355x-amds", "atom", &["mtp"]);
        let other = agentx("kimik3-vllm", "kimik3", "mi300x-amds", "vllm", &["mtp"]);
        let f = engine_report(&p, &[atom.clone(), other]);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].sku.as_str(), f[0].missing_engine.as_deref()),
            ("mi355x", Some("vLLM"))
        );
        let same = agentx("kimik3-vllm", "kimik3", "mi355x-tw", "vllm", &["mtp"]);
        assert_eq!(engine_report(&p, &[atom, same]), []);
        // vLLM/SGLang configs are never checked, mapped or not.
        let q = agentx("qwen3.5-vllm", "qwen3.5", "h200-dgxc", "vllm", &["mtp"]);
        assert_eq!(engine_report(&p, &[q]), []);
    }

    #[test]
    fn new_hardware_and_waivers_allow_an_engine_first() {
        let p = Policy::embedded();
        let atom = agentx("kimik3-atom", "kimik3", "mi455x-ualoe72", "atom", &["mtp"]);
        let f = engine_report(&p, std::slice::from_ref(&atom));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].verdict, EngineVerdict::NewHardware);
        assert_eq!(f[0].reason, "MI455X UALoE72");
        assert_eq!(f[0].missing_engine.as_deref(), Some("vLLM"));
        // The same on a SKU off the list is a violation, unless waived with a reason.
        let trt = agentx("glm5.2-trt", "glm5.2", "b200-dgxc", "trt", &["mtp"]);
        let f = engine_report(&p, std::slice::from_ref(&trt));
        assert_eq!(f[0].verdict, EngineVerdict::Violation);
        let waived = Policy::from_source(
            "p.yaml",
            &DEFAULT_POLICY.replace(
                "waivers: {}",
                "waivers:\n  glm5.2-trt: SGLang lacks the new attention kernel on b200",
            ),
        )
        .unwrap();
        let f = engine_report(&waived, &[trt]);
        assert_eq!(
            (f[0].verdict, f[0].reason.as_str()),
            (
                EngineVerdict::Waived,
                "SGLang lacks the new attention kernel on b200"
            )
        );
        let e = Policy::from_source(
            "p.yaml",
            &DEFAULT_POLICY.replace("waivers: {}", "waivers:\n  glm5.2-trt: \"\""),
        )
        .unwrap_err();
        // The empty reason sits on the line after `waivers:` (the embedded file's own line).
        let line = 2
            + (DEFAULT_POLICY.lines())
                .position(|l| l == "waivers: {}")
                .unwrap();
        let want = format!("p.yaml:{line}:15: waivers.glm5.2-trt: a waiver needs its reason");
        assert!(e.to_string().starts_with(&want), "{e}");
    }

    #[test]
    fn editing_the_mapping_changes_the_verdict() {
        let atom = agentx("glm5.2-atom", "glm5.2", "mi355x-amds", "atom", &["mtp"]);
        let sglang = agentx("glm5.2-sglang", "glm5.2", "mi355x-amds", "sglang", &["mtp"]);
        let both = [atom.clone(), sglang];
        assert_eq!(engine_report(&Policy::embedded(), &both), []);
        let text = DEFAULT_POLICY.replace(
            "  glm5.2:\n    name: GLM-5.2\n    engines: [SGLang]",
            "  glm5.2:\n    name: GLM-5.2\n    engines: [vLLM]",
        );
        assert_ne!(text, DEFAULT_POLICY);
        let f = engine_report(&Policy::from_source("p.yaml", &text).unwrap(), &both);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].verdict, f[0].missing_engine.as_deref()),
            (EngineVerdict::Violation, Some("vLLM"))
        );
        // A model the policy maps no engine to: nothing can come first.
        let f = engine_report(
            &Policy::embedded(),
            &[agentx("q-trt", "qwen3.8", "b300-nv", "trt", &["mtp"])],
        );
        assert_eq!(
            (f[0].verdict, f[0].missing_engine.clone()),
            (EngineVerdict::Violation, None)
        );
    }

    #[test]
    fn non_spec_decode_agentic_entries_are_deprecated_arms() {
        let p = Policy::embedded();
        let arms = agentx(
            "k-none",
            "kimik3",
            "b200-dgxc",
            "dynamo-vllm",
            &["none", "", "mtp"],
        );
        let sib = agentx("k-mtp", "kimik3", "b200-nscale", "dynamo-vllm", &["mtp"]);
        let other_fw = agentx("k-vllm", "kimik3", "b200-dgxc", "vllm", &["mtp"]);
        let other_sku = agentx("k-b300", "kimik3", "b300-nv", "dynamo-vllm", &["mtp"]);
        // Sibling present (the same config's own mtp entry counts: same SKU and framework).
        let r = check(&p, &configs(&[arms.clone(), sib]), &[]);
        let got: Vec<_> = (r.spec_decode_only.iter())
            .map(|f| (f.entry.as_str(), f.sibling.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("agentic-coding[0].search-space[0]", Some("k-none")),
                ("agentic-coding[0].search-space[1]", Some("k-none")),
            ]
        );
        assert_eq!(r.violations(), 0);
        // Sibling absent: spec-decode only on another framework or another SKU.
        let only_none = agentx("k-none", "kimik3", "b200-dgxc", "dynamo-vllm", &["none"]);
        let r = check(&p, &configs(&[only_none, other_fw, other_sku]), &[]);
        assert_eq!(r.spec_decode_only.len(), 1);
        assert_eq!(r.spec_decode_only[0].sibling, None);
        assert_eq!(
            (r.spec_decode_only[0].sku.as_str(), r.violations()),
            ("b200", 0)
        );
        // Compliant: every entry speculates.
        let r = check(&p, &configs(&[other_fw_only()]), &[]);
        assert_eq!(r.spec_decode_only, []);
    }

    fn other_fw_only() -> String {
        agentx(
            "k-vllm",
            "kimik3",
            "b200-dgxc",
            "vllm",
            &["mtp", "draft_model"],
        )
    }

    fn archived(key: &str, prefix: &str, precision: &str, scenario: &str) -> ArchivedEntry {
        ArchivedEntry {
            key: key.into(),
            location: format!("deprecated/x.yaml:{}", key.len()),
            model_prefix: prefix.into(),
            precision: precision.into(),
            scenarios: vec![scenario.into()],
        }
    }

    #[test]
    fn deprecation_bookkeeping_both_directions() {
        let p = Policy::embedded();
        let kinds = |r: &PolicyReport| -> Vec<(DeprecationKind, String, String)> {
            (r.deprecations.iter())
                .map(|f| (f.kind, f.config.clone(), f.scenario.clone()))
                .collect()
        };
        use DeprecationKind::*;
        // Deprecated but active: a retired model, a scenario retired for all models, a
        // deprecated precision; a scenario not listed for the model; a prefix not listed.
        let r = check(
            &p,
            &configs(&[
                fixed("glm51", "glm5.1", "fp8", 8192, 1024),
                fixed("k3-1k1k", "kimik3", "fp4", 1024, 1024),
                fixed("q-bf16", "qwen3.5", "bf16", 8192, 1024),
                fixed("k3-8k1k", "kimik3", "fp4", 8192, 1024),
                fixed("k26", "kimik2.6", "fp4", 8192, 1024),
                fixed("new", "newmodel9", "fp4", 8192, 1024),
                // Compliant: listed active.
                fixed("q-fp8", "qwen3.5", "fp8", 8192, 1024),
                fixed("dsr1", "dsr1", "fp8", 8192, 1024),
            ]),
            &[
                // Compliant reverse: archived, but also active / a deprecated precision /
                // a deprecated scenario.
                archived("dsr1-old", "dsr1", "fp4", "8k1k"),
                archived("q-bf16-old", "qwen3.5", "bf16", "8k1k"),
                archived("dsv4-1k1k", "dsv4", "fp4", "1k1k"),
                // The reverse: listed active, only archived (reported once per scenario).
                archived("dsv4-8k1k", "dsv4", "fp4", "8k1k"),
                archived("dsv4-8k1k-b", "dsv4", "fp8", "8k1k"),
            ],
        );
        assert_eq!(
            kinds(&r),
            [
                (DeprecatedButActive, "glm51".into(), "8k1k".into()),
                (DeprecatedButActive, "k3-1k1k".into(), "1k1k".into()),
                (DeprecatedButActive, "q-bf16".into(), "8k1k".into()),
                (NotListedActive, "k3-8k1k".into(), "8k1k".into()),
                // kimik2.6 is one of the kimik2.5 row's also-prefixes (Kimi-K2.5/2.6/2.7-Code).
                (DeprecatedButActive, "k26".into(), "8k1k".into()),
                (UnlistedModel, "new".into(), "".into()),
                (ActiveButArchived, "dsv4-8k1k".into(), "8k1k".into()),
            ]
        );
        assert_eq!(r.deprecations[4].matrix_row.as_deref(), Some("kimik2.5"));
        assert_eq!(r.deprecations[0].matrix_row, None);
        assert_eq!(r.deprecations[6].location, "deprecated/x.yaml:9");
        assert_eq!(r.violations(), 0);
        // Compliant both ways.
        let r = check(
            &p,
            &configs(&[fixed("dsv4", "dsv4", "fp4", 8192, 1024)]),
            &[archived("dsv4-8k1k", "dsv4", "fp4", "8k1k")],
        );
        assert_eq!(r.deprecations, []);
    }

    #[test]
    fn archived_files_are_read_leniently() {
        let dir = std::env::temp_dir().join(format!("ib-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("old.yaml");
        // `tp: "four"` would fail the schema; archived files only need to parse.
        std::fs::write(
            &f,
            fixed("old", "dsr1", "fp8", 1024, 8192).replace("tp: 8", "tp: \"four\""),
        )
        .unwrap();
        let a = read_archived(&[&f]).unwrap();
        assert_eq!(
            a,
            [ArchivedEntry {
                key: "old".into(),
                location: format!("{}:1", f.display()),
                model_prefix: "dsr1".into(),
                precision: "fp8".into(),
                scenarios: vec!["1k8k".into()],
            }]
        );
        std::fs::write(&f, "a: [").unwrap();
        assert!(read_archived(&[&f]).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_bad_policy_names_every_problem() {
        let e = Policy::from_source(
            "p.yaml",
            "version: 2\nengines:\n  vLLM: [vllm]\nfirst-class: [vLLM, SGLang]\nscenarios:\n  8k1k: retired\nmodels:\n  m:\n    engines: [TRT]\n    active: [8k1k]\n    deprecated: [8k1k]\n    color: red\nextra: 1\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.yaml:13:1: extra: unknown field (allowed: version, engines, first-class, exception-skus, waivers, scenarios, models)\n\
             p.yaml:1:10: version: unsupported policy version (expected 1)\n\
             p.yaml:4:21: first-class[1]: 'SGLang' is not an engine under engines\n\
             p.yaml:6:9: scenarios.8k1k: must be 'active' or 'deprecated'\n\
             p.yaml:12:5: models.m.color: unknown field (allowed: name, engines, active, deprecated, deprecated-precisions, also-prefixes)\n\
             p.yaml:9:14: models.m.engines: 'TRT' is not an engine under engines\n\
             p.yaml:11:17: models.m.deprecated: scenario '8k1k' is both active and deprecated"
        );
        assert!(Policy::from_source("p.yaml", "[1]").is_err());
        assert!(
            Policy::from_source("p.yaml", "version: 1\nmodels: {m: {active: [1]}}\n")
                .unwrap_err()
                .to_string()
                .contains("models.m.active[0]: must be a non-empty string, found an integer")
        );
        // A prefix names one row: an also-prefix that is a row, or is claimed twice, is refused.
        let e = Policy::from_source(
            "p.yaml",
            "version: 1\nmodels:\n  a:\n    also-prefixes: [a2, b]\n  b:\n    active: []\n  c:\n    also-prefixes: [a2]\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.yaml:5:3: models.b: 'b' is already another row's also-prefix\n\
             p.yaml:8:20: models.c.also-prefixes: 'a2' already names a row of the support matrix"
        );
    }

    #[test]
    fn an_also_prefix_reads_as_its_row() {
        let p = Policy::embedded();
        for (prefix, row) in [
            ("kimik2.6", "kimik2.5"),
            ("kimik2.7-code", "kimik2.5"),
            ("minimaxm2.7", "minimaxm2.5"),
            ("kimik2.5", "kimik2.5"),
        ] {
            assert_eq!(
                p.model(prefix).map(|m| m.prefix.as_str()),
                Some(row),
                "{prefix}"
            );
        }
        assert_eq!(
            p.listed("kimik2.6", "8k1k", "fp4"),
            Some(Listed::Deprecated)
        );
        assert!(p.model("kimik2").is_none());
        // Editing the YAML changes the reading: without the also-prefix, kimik2.6 is unlisted.
        let text = DEFAULT_POLICY.replace("    also-prefixes: [kimik2.6, kimik2.7-code]\n", "");
        assert_ne!(text, DEFAULT_POLICY);
        assert!(Policy::from_source("p.yaml", &text)
            .unwrap()
            .model("kimik2.6")
            .is_none());
    }
}
