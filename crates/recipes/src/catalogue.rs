//! Catalogue tools: the model support matrix, the KV-offload DRAM policy check and the CI
//! priority score (reference §1.5, §1.6, §2.4, §8.7).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{read_to_string, ConfigError, Result};
use crate::matrix::{self, Row, MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB};
use crate::schema::{MasterConfigs, RunnerConfig};
use crate::yaml::{self, Node, Yaml};

/// Whether a scenario is in an active master config or only in `configs/deprecated/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In an active master config (the sweep generator selects it).
    Active,
    /// Archived under `configs/deprecated/`.
    Deprecated,
}

/// One line of the support matrix: a model prefix × scenario × status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SupportRow {
    /// Model family code (`model-prefix`), e.g. `dsr1`.
    pub model_prefix: String,
    /// `8k1k`, `1k1k`, `<isl>_<osl>` for fixed-seq-len, or `agentic`.
    pub scenario: String,
    /// Active or deprecated.
    pub status: Status,
    /// Precisions seen.
    pub precisions: BTreeSet<String>,
    /// Runner labels (hardware) seen.
    pub runners: BTreeSet<String>,
    /// Frameworks seen.
    pub frameworks: BTreeSet<String>,
    /// Config keys contributing.
    pub configs: usize,
}

/// A config file's entries read leniently: `(key, model-prefix, precision, runner, framework,
/// scenario names)`. Used for deprecated files, which may predate the current schema.
fn lenient_entries(node: &Node) -> Vec<(String, [String; 4], Vec<String>)> {
    let mut out = Vec::new();
    for (k, v) in node.as_map().unwrap_or(&[]) {
        let s = |f: &str| v.get(f).and_then(Node::as_str).unwrap_or("").to_string();
        let mut scen = Vec::new();
        if let Some(sc) = v.get("scenarios") {
            for seq in sc
                .get("fixed-seq-len")
                .and_then(Node::as_seq)
                .unwrap_or(&[])
            {
                let i = |f: &str| match seq.get(f).map(|n| &n.value) {
                    Some(Yaml::Int(x)) => *x,
                    _ => 0,
                };
                scen.push(matrix::seq_len_to_str(i("isl"), i("osl")));
            }
            if sc
                .get("agentic-coding")
                .and_then(Node::as_seq)
                .is_some_and(|a| !a.is_empty())
            {
                scen.push("agentic".into());
            }
        }
        out.push((
            k.key_text(),
            [
                s("model-prefix"),
                s("precision"),
                s("runner"),
                s("framework"),
            ],
            scen,
        ));
    }
    out
}

/// Builds the support matrix from active master config files and deprecated ones.
///
/// Active files are validated with the full schema (as `inferbench matrix` does), deprecated
/// ones only parsed, since they may predate the current schema.
///
/// # Errors
/// Unreadable files, YAML syntax errors, and any schema problem in an active file
/// ([`MasterConfigs::load`]'s errors).
pub fn support_matrix(
    active: &[impl AsRef<Path>],
    deprecated: &[impl AsRef<Path>],
) -> Result<Vec<SupportRow>> {
    MasterConfigs::load(active)?;
    let mut acc: BTreeMap<(String, String, Status), SupportRow> = BTreeMap::new();
    for (files, status) in [
        (
            active.iter().map(|p| p.as_ref()).collect::<Vec<_>>(),
            Status::Active,
        ),
        (
            deprecated.iter().map(|p| p.as_ref()).collect::<Vec<_>>(),
            Status::Deprecated,
        ),
    ] {
        for f in files {
            let text = read_to_string(f)?;
            let node = yaml::parse(&text, &f.display().to_string())?;
            for (_key, [prefix, precision, runner, framework], scen) in lenient_entries(&node) {
                for s in BTreeSet::from_iter(scen) {
                    let row = acc
                        .entry((prefix.clone(), s.clone(), status))
                        .or_insert_with(|| SupportRow {
                            model_prefix: prefix.clone(),
                            scenario: s.clone(),
                            status,
                            precisions: BTreeSet::new(),
                            runners: BTreeSet::new(),
                            frameworks: BTreeSet::new(),
                            configs: 0,
                        });
                    row.precisions.insert(precision.clone());
                    row.runners.insert(runner.clone());
                    row.frameworks.insert(framework.clone());
                    row.configs += 1;
                }
            }
        }
    }
    Ok(acc.into_values().collect())
}

/// Renders the support matrix as an aligned text table.
pub fn support_table(rows: &[SupportRow]) -> String {
    let join = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
    let mut lines = vec![[
        "model-prefix".to_string(),
        "scenario".into(),
        "status".into(),
        "configs".into(),
        "precisions".into(),
        "frameworks".into(),
        "runners".into(),
    ]];
    for r in rows {
        lines.push([
            r.model_prefix.clone(),
            r.scenario.clone(),
            match r.status {
                Status::Active => "active".into(),
                Status::Deprecated => "deprecated".into(),
            },
            r.configs.to_string(),
            join(&r.precisions),
            join(&r.frameworks),
            join(&r.runners),
        ]);
    }
    let mut width = [0usize; 7];
    for l in &lines {
        for (i, c) in l.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = width[i]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// One finding of [`dram_policy_check`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DramFinding {
    /// Config key.
    pub config: String,
    /// `file:line` of the config key.
    pub location: String,
    /// Runner label.
    pub runner: String,
    /// Search-space index within the agentic scenario (`agentic-coding[i].search-space[j]`).
    pub entry: String,
    /// Budget `total-cpu-dram-gb` in GB (10^9 bytes) when computable.
    pub total_cpu_dram_gb: Option<i64>,
    /// `ok`, `capped` (host DRAM above the 3 TB policy cap, budget computed on the cap) or
    /// `error`.
    pub verdict: String,
    /// Explanation; every amount in GB (10^9 bytes), like the budget.
    pub detail: String,
}

/// MiB (2^20 bytes, the unit of `available-cpu-dram-mib`) → GB (10^9 bytes, the unit of
/// `total-cpu-dram-gb`), rounded to the nearest GB for display.
fn mib_as_gb(mib: i64) -> String {
    format!("{:.0} GB", mib as f64 * 1_048_576.0 / 1e9)
}

/// Renders [`dram_policy_check`] findings, one per line, in the config-error style:
/// `verdict  file:line: config.entry: budget N GB; detail` (`budget` only when computable),
/// e.g. `ok      nvidia-master.yaml:1393: kimik3-fp4-h200-vllm-agentic.agentic-coding[0].
/// search-space[2]: budget 1234 GB; host DRAM 1543 GB × dram-utilization 0.8 × 8/8 GPUs`.
pub fn dram_table(findings: &[DramFinding]) -> String {
    let mut out = String::new();
    for f in findings {
        let budget = f
            .total_cpu_dram_gb
            .map(|g| format!("budget {g} GB; "))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<6}  {}: {}.{}: {budget}{}\n",
            f.verdict, f.location, f.config, f.entry, f.detail
        ));
    }
    out
}

/// Checks every `kv-offloading: dram` agentic entry against the KV-offload DRAM policy
/// (`MODELS.md`, reference §2.4/§8.7): the runner label must have hardware facts, the topology
/// must fit (or tile) a node, and the budget is `min(host MiB, 2_861_022 MiB) × utilization ×
/// GPUs used / GPUs per node`. Also reports config runner labels missing from `labels`
/// (InferenceX never checks them; reference §1.5).
pub fn dram_policy_check(configs: &MasterConfigs, runners: &RunnerConfig) -> Vec<DramFinding> {
    let mut out = Vec::new();
    for cfg in &configs.entries {
        let runner = cfg.str_field("runner").to_string();
        let location = format!("{}:{}", cfg.file, cfg.pos.line);
        if !runners.has_label(&runner) {
            out.push(DramFinding {
                config: cfg.key.clone(),
                location: location.clone(),
                runner: runner.clone(),
                entry: "runner".into(),
                total_cpu_dram_gb: None,
                verdict: "error".into(),
                detail: format!(
                    "runner label '{runner}' is not defined under labels in {}",
                    runners.file
                ),
            });
        }
        for (i, ag) in cfg.scenario("agentic-coding").iter().enumerate() {
            let util = ag.get("dram-utilization").and_then(Value::as_f64);
            for (j, bmk) in ag
                .get("search-space")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let Some(bmk) = bmk.as_object() else { continue };
                if bmk.get("kv-offloading").and_then(Value::as_str) != Some("dram") {
                    continue;
                }
                let entry = format!("agentic-coding[{i}].search-space[{j}]");
                let r = matrix::agentic_dram_offload_gb(util, bmk, &runner, runners);
                let (gb, verdict, detail) = match r {
                    Ok(gb) => {
                        let hw = runners.hardware.get(&runner);
                        let avail = hw.map(|h| h.available_cpu_dram_mib).unwrap_or(0);
                        let gpn = hw.map(|h| h.gpus_per_node).unwrap_or(0);
                        let gpus = matrix::dram_gpu_count(bmk, gpn, &runner).unwrap_or(0);
                        let util = format!(
                            "{} × {gpus}/{gpn} GPUs",
                            util.map(crate::pyjson::float_repr).unwrap_or_default()
                        );
                        if avail > MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB {
                            let cap = mib_as_gb(MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB);
                            (
                                Some(gb),
                                "capped",
                                format!(
                                    "host DRAM {} is above the {cap} policy cap, so the budget is {cap} × dram-utilization {util}",
                                    mib_as_gb(avail)
                                ),
                            )
                        } else {
                            (
                                Some(gb),
                                "ok",
                                format!("host DRAM {} × dram-utilization {util}", mib_as_gb(avail)),
                            )
                        }
                    }
                    Err(e) => (None, "error", e.to_string()),
                };
                out.push(DramFinding {
                    config: cfg.key.clone(),
                    location: location.clone(),
                    runner: runner.clone(),
                    entry,
                    total_cpu_dram_gb: gb,
                    verdict: verdict.into(),
                    detail,
                });
            }
        }
    }
    out
}

/// Parsed `configs/ci-priority.yaml`. All amounts are kept in thousandths (the score is
/// quantized to 0.001) so sums are exact.
#[derive(Debug, Clone, Default)]
pub struct CiPriority {
    base: i64,
    event: Vec<(String, i64)>,
    multi_node: i64,
    agentic: i64,
    eval_only: i64,
    precision: Vec<(String, i64)>,
    spec_decoding: Vec<(String, i64)>,
    framework_prefix: Vec<(String, i64)>,
    model_prefix: Vec<(String, i64)>,
    skip_queue_label: Option<String>,
    checklist_labels: Vec<String>,
    checklist_adjustment: i64,
    patchwork_labels: Vec<String>,
    patchwork_score: i64,
    patchwork_waived_by: Vec<String>,
}

fn milli(n: &Node, file: &str, field: &str) -> Result<i64> {
    match &n.value {
        Yaml::Int(i) => Ok(i * 1000),
        Yaml::Float(f) => Ok((f * 1000.0).round() as i64),
        _ => Err(ConfigError::new(
            file,
            n.pos,
            field,
            format!("must be a number, found {}", n.kind()),
        )
        .into()),
    }
}

fn milli_map(n: Option<&Node>, file: &str, field: &str) -> Result<Vec<(String, i64)>> {
    let mut out = Vec::new();
    if let Some(n) = n {
        let Some(m) = n.as_map() else {
            return Err(ConfigError::new(file, n.pos, field, "must be a mapping").into());
        };
        for (k, v) in m {
            out.push((
                k.key_text(),
                milli(v, file, &format!("{field}.{}", k.key_text()))?,
            ));
        }
    }
    Ok(out)
}

fn str_vec(n: Option<&Node>) -> Vec<String> {
    match n {
        Some(n) => match &n.value {
            Yaml::Seq(s) => s
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            Yaml::Str(s) => vec![s.clone()],
            _ => vec![],
        },
        None => vec![],
    }
}

impl CiPriority {
    /// Parses `ci-priority.yaml` text.
    ///
    /// # Errors
    /// YAML errors and non-numeric adjustments, naming `file:line:col` and the field.
    pub fn from_source(file: &str, text: &str) -> Result<Self> {
        let root = yaml::parse(text, file)?;
        if root.as_map().is_none() {
            return Err(ConfigError::new(file, root.pos, "", "must be a mapping").into());
        }
        let adj = root.get("adjustments");
        let a = |k: &str| adj.and_then(|a| a.get(k));
        let single = |k: &str| -> Result<i64> {
            a(k).map(|n| milli(n, file, &format!("adjustments.{k}")))
                .transpose()
                .map(|v| v.unwrap_or(0))
        };
        let labels = root.get("labels");
        let l = |k: &str, f: &str| labels.and_then(|x| x.get(k)).and_then(|x| x.get(f));
        Ok(CiPriority {
            base: root
                .get("base-score")
                .map(|n| milli(n, file, "base-score"))
                .transpose()?
                .unwrap_or(1000),
            event: milli_map(a("event"), file, "adjustments.event")?,
            multi_node: single("multi-node")?,
            agentic: single("agentic")?,
            eval_only: single("eval-only")?,
            precision: milli_map(a("precision"), file, "adjustments.precision")?,
            spec_decoding: milli_map(a("spec-decoding"), file, "adjustments.spec-decoding")?,
            framework_prefix: milli_map(
                a("framework-prefix"),
                file,
                "adjustments.framework-prefix",
            )?,
            model_prefix: milli_map(a("model-prefix"), file, "adjustments.model-prefix")?,
            skip_queue_label: l("skip-queue", "name")
                .and_then(Node::as_str)
                .map(str::to_string),
            checklist_labels: str_vec(l("checklist-complete", "names")),
            checklist_adjustment: l("checklist-complete", "adjustment")
                .map(|n| milli(n, file, "labels.checklist-complete.adjustment"))
                .transpose()?
                .unwrap_or(0),
            patchwork_labels: str_vec(l("patchwork", "names")),
            patchwork_score: l("patchwork", "score")
                .map(|n| milli(n, file, "labels.patchwork.score"))
                .transpose()?
                .unwrap_or(0),
            patchwork_waived_by: str_vec(l("patchwork", "waived-by")),
        })
    }

    /// Loads `ci-priority.yaml`.
    ///
    /// # Errors
    /// As [`CiPriority::from_source`], plus I/O.
    pub fn load(path: &Path) -> Result<Self> {
        Self::from_source(&path.display().to_string(), &read_to_string(path)?)
    }

    /// Score of a matrix row in thousandths (reference §1.6): base + event + multi-node (row has
    /// `prefill`) + agentic + eval-only + precision + spec-decoding + first matching framework
    /// prefix (equal, or followed by `-`) + exact model prefix + checklist label; a patchwork label
    /// (unless waived) forces the patchwork score.
    pub fn score_milli(&self, row: &Row, event: &str, labels: &[String]) -> i64 {
        let has = |names: &[String]| names.iter().any(|n| labels.contains(n));
        if has(&self.patchwork_labels) && !has(&self.patchwork_waived_by) {
            return self.patchwork_score;
        }
        let get = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or("");
        let lookup = |m: &[(String, i64)], v: &str| {
            m.iter().find(|(k, _)| k == v).map(|(_, x)| *x).unwrap_or(0)
        };
        let mut s = self.base + lookup(&self.event, event);
        if row.get("prefill").is_some_and(|p| !p.is_null()) {
            s += self.multi_node;
        }
        if get("scenario-type") == "agentic-coding" {
            s += self.agentic;
        }
        if row
            .get("eval-only")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            s += self.eval_only;
        }
        s += lookup(&self.precision, get("precision"));
        s += lookup(&self.spec_decoding, get("spec-decoding"));
        let fw = get("framework");
        if let Some((_, v)) = self.framework_prefix.iter().find(|(p, _)| {
            fw == p
                || fw
                    .strip_prefix(p.as_str())
                    .is_some_and(|r| r.starts_with('-'))
        }) {
            s += v;
        }
        s += lookup(&self.model_prefix, get("model-prefix"));
        if has(&self.checklist_labels) {
            s += self.checklist_adjustment;
        }
        s
    }

    /// The score printed with three decimals, e.g. `5.750`.
    pub fn score_text(&self, row: &Row, event: &str, labels: &[String]) -> String {
        let m = self.score_milli(row, event, labels);
        let sign = if m < 0 { "-" } else { "" };
        format!("{sign}{}.{:03}", m.abs() / 1000, m.abs() % 1000)
    }

    /// Whether the labels ask to skip the queue (`skip_queue`).
    pub fn skip_queue(&self, labels: &[String]) -> bool {
        self.skip_queue_label
            .as_ref()
            .is_some_and(|l| labels.contains(l))
    }
}

/// Queue token: the first 32 hex chars of SHA-256 over `<namespace>:<json_path>:<canonical row>`
/// (canonical = sorted keys, compact separators, ASCII; reference §1.6).
pub fn queue_token(namespace: &str, json_path: &str, row: &Row) -> String {
    let text = format!(
        "{namespace}:{json_path}:{}",
        crate::pyjson::dumps_canonical(&Value::Object(row.clone()))
    );
    Sha256::digest(text.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Stamps `ci-priority` (3-decimal string) and `queue-token` on every row of a matrix (a JSON list
/// of rows, or an object of buckets as `changelog` prints); `skip-queue-pr: true` when asked.
pub fn stamp_priority(
    matrix: &mut Value,
    cfg: &CiPriority,
    event: &str,
    labels: &[String],
    namespace: &str,
) {
    fn walk(v: &mut Value, path: &str, f: &mut dyn FnMut(&mut Map<String, Value>, &str)) {
        match v {
            Value::Array(a) => {
                for (i, x) in a.iter_mut().enumerate() {
                    walk(x, &format!("{path}[{i}]"), f);
                }
            }
            Value::Object(o) => {
                if o.contains_key("runner") && o.contains_key("framework") {
                    f(o, path);
                } else {
                    for (k, x) in o.iter_mut() {
                        if k != "changelog_metadata" {
                            walk(x, &format!("{path}.{k}"), f);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let skip = cfg.skip_queue(labels);
    walk(matrix, "$", &mut |row, path| {
        let score = cfg.score_text(row, event, labels);
        let token = queue_token(namespace, path, row);
        row.insert("ci-priority".into(), Value::String(score));
        row.insert("queue-token".into(), Value::String(token));
        if skip {
            row.insert("skip-queue-pr".into(), Value::Bool(true));
        }
    });
}

/// Config runner labels missing from `runners.yaml` `labels`, each naming the config's
/// `file:line` and field `<key>.runner`.
pub fn unknown_runner_labels(configs: &MasterConfigs, runners: &RunnerConfig) -> Vec<ConfigError> {
    configs
        .entries
        .iter()
        .filter(|c| !runners.has_label(c.str_field("runner")))
        .map(|c| {
            ConfigError::new(
                &c.file,
                c.runner_pos,
                format!("{}.runner", c.key),
                format!(
                    "unknown runner label '{}' (not under labels in {})",
                    c.str_field("runner"),
                    runners.file
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CFG: &str = "version: 1\nbase-score: 1.0\nadjustments:\n  event:\n    push: 2.0\n  multi-node: 1.25\n  agentic: 1.0\n  eval-only: 0.0\n  precision:\n    fp4: 0.75\n  spec-decoding:\n    mtp: 0.75\n  framework-prefix:\n    sglang: 0.5\n    dynamo-sglang: 0.5\n  model-prefix:\n    kimik3: 1.5\n    dsv4: 0.75\nlabels:\n  skip-queue:\n    name: skip_queue\n  checklist-complete:\n    names: [ci-checklist-complete]\n    adjustment: 0.25\n  patchwork:\n    names: [ci-patchwork, engine-patch]\n    score: 0.0\n    waived-by: [ci-patchwork-waived]\n";

    fn row(v: Value) -> Row {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn priority_matches_reference_example() {
        let c = CiPriority::from_source("ci-priority.yaml", CFG).unwrap();
        let r = row(
            json!({"runner": "b200", "framework": "sglang", "precision": "fp4", "spec-decoding": "mtp", "model-prefix": "dsv4"}),
        );
        assert_eq!(c.score_text(&r, "push", &[]), "5.750");
        assert_eq!(
            c.score_text(&r, "pull_request", &["ci-checklist-complete".into()]),
            "4.000"
        );
        assert_eq!(c.score_text(&r, "push", &["engine-patch".into()]), "0.000");
        assert_eq!(
            c.score_text(
                &r,
                "push",
                &["engine-patch".into(), "ci-patchwork-waived".into()]
            ),
            "5.750"
        );
        // framework prefix: "sglang-disagg" matches "sglang", "dynamo-sglang" only its own entry.
        let mn = row(
            json!({"runner": "x", "framework": "sglang-disagg", "precision": "fp8", "model-prefix": "kimik3", "prefill": {}, "scenario-type": "agentic-coding"}),
        );
        assert_eq!(c.score_text(&mn, "push", &[]), "7.250");
    }

    #[test]
    fn queue_token_is_32_hex() {
        let t = queue_token("ns", "$.single_node.8k1k[0]", &row(json!({"a": 1})));
        assert_eq!(t.len(), 32);
        assert!(t.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
