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
const MODEL_KEYS: [&str; 5] = [
    "name",
    "engines",
    "active",
    "deprecated",
    "deprecated-precisions",
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
                    prefix,
                };
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
        self.engines
            .iter()
            .find(|(_, pats)| pats.iter().any(|p| glob(p, framework)))
            .map(|(e, _)| e.clone())
            .unwrap_or_else(|| framework.to_string())
    }

    /// The rule of a model prefix.
    pub fn model(&self, prefix: &str) -> Option<&ModelRule> {
        self.models.iter().find(|m| m.prefix == prefix)
    }

    /// What the support matrix says of a scenario run at a precision by a model prefix:
    /// `None` when the prefix is not in the matrix; else the model's own lists, then the
    /// deprecated precisions, then the all-model scenario table; a scenario listed nowhere is
    /// [`Listed::Unlisted`].
    pub fn listed(&self, prefix: &str, scenario: &str, precision: &str) -> Option<Listed> {
        let m = self.model(prefix)?;
        Some(if m.deprecated_precisions.iter().any(|p| p == precision) {
            Listed::DeprecatedPrecision
        } else if m.active.iter().any(|s| s == scenario) {
            Listed::Active
        } else if m.deprecated.iter().any(|s| s == scenario)
            || self.scenarios.get(scenario) == Some(&ScenarioStatus::Deprecated)
        {
            Listed::Deprecated
        } else {
            Listed::Unlisted
        })
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
/// lower-cased (`cluster:gb300-nv` → `gb300`, `mi355x-disagg` → `mi355x`, `h200` → `h200`).
pub fn sku_of(runner: &str) -> String {
    let r = runner.strip_prefix(CLUSTER_LABEL_PREFIX).unwrap_or(runner);
    r.split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
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
            let (verdict, reason) = if let Some(name) = policy.exception_skus.get(&sku) {
                (EngineVerdict::NewHardware, name.clone())
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
                });
            }
        }
    }
    report
}
