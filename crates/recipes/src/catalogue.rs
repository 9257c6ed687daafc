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

/// One model prefix in MODELS.md's support-matrix shape: active and deprecated scenarios.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrefixSupport {
    /// Model family code (`model-prefix`).
    pub model_prefix: String,
    /// Scenarios some active config runs, sorted.
    pub active: Vec<String>,
    /// Scenarios only archived configs run; a scenario that is also active appears with the
    /// precisions only archived configs run, e.g. `8k1k (bf16)`.
    pub deprecated: Vec<String>,
}

/// The support matrix folded per model prefix, as MODELS.md's table shows it (prefix, active
/// scenarios, deprecated scenarios).
pub fn support_by_prefix(rows: &[SupportRow]) -> Vec<PrefixSupport> {
    let mut out: Vec<PrefixSupport> = Vec::new();
    for r in rows {
        if out.last().is_none_or(|p| p.model_prefix != r.model_prefix) {
            out.push(PrefixSupport {
                model_prefix: r.model_prefix.clone(),
                active: Vec::new(),
                deprecated: Vec::new(),
            });
        }
        let Some(p) = out.last_mut() else { continue };
        let active = rows.iter().find(|a| {
            a.model_prefix == r.model_prefix
                && a.scenario == r.scenario
                && a.status == Status::Active
        });
        match (r.status, active) {
            (Status::Active, _) => p.active.push(r.scenario.clone()),
            (Status::Deprecated, None) => p.deprecated.push(r.scenario.clone()),
            (Status::Deprecated, Some(a)) => {
                let only: Vec<&str> = r
                    .precisions
                    .difference(&a.precisions)
                    .map(String::as_str)
                    .collect();
                if !only.is_empty() {
                    p.deprecated
                        .push(format!("{} ({})", r.scenario, only.join(",")));
                }
            }
        }
    }
    out
}

/// Renders [`support_by_prefix`] as an aligned text table: `model-prefix`, `active scenarios`,
/// `deprecated scenarios` (`-` for none).
pub fn prefix_table(rows: &[PrefixSupport]) -> String {
    let cell = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(", ")
        }
    };
    let mut lines = vec![[
        "model-prefix".to_string(),
        "active scenarios".into(),
        "deprecated scenarios".into(),
    ]];
    for r in rows {
        lines.push([r.model_prefix.clone(), cell(&r.active), cell(&r.deprecated)]);
    }
    let mut width = [0usize; 3];
    for l in &lines {
        for (i, c) in l.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = (l.iter().enumerate())
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

/// An exact decimal, as Python's `Decimal(str(value))` of a policy amount, in units of 10⁻²⁴.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dec(i128);

const DEC_SCALE: i32 = 24;

impl Dec {
    /// Parses Python `Decimal` text (`1`, `-0.75`, `1e-05`, ` 2.5 `); `None` for anything else,
    /// or beyond 24 decimal places or ±10¹⁴.
    pub fn parse(text: &str) -> Option<Dec> {
        let t = text.trim();
        let (neg, t) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let (mant, exp) = match t.find(['e', 'E']) {
            Some(i) => (&t[..i], t[i + 1..].parse::<i32>().ok()?),
            None => (t, 0),
        };
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let mut units: i128 = 0;
        for c in int.chars().chain(frac.chars()) {
            let d = c.to_digit(10)?;
            units = units.checked_mul(10)?.checked_add(d as i128)?;
        }
        let shift = DEC_SCALE.checked_add(exp)?.checked_sub(frac.len() as i32)?;
        if shift >= 0 {
            units = units.checked_mul(10i128.checked_pow(shift as u32)?)?;
        } else {
            let div = 10i128.checked_pow(shift.unsigned_abs())?;
            if units % div != 0 {
                return None;
            }
            units /= div;
        }
        if units >= 10i128.pow(DEC_SCALE as u32 + 14) {
            return None;
        }
        Some(Dec(if neg { -units } else { units }))
    }

    /// Quantized to 0.001 (`ROUND_HALF_UP`: halves away from zero) and printed with three
    /// decimals, like `format(score.quantize(Decimal("0.001"), ROUND_HALF_UP), ".3f")`.
    pub fn text3(self) -> String {
        let q = 10i128.pow(DEC_SCALE as u32 - 3);
        let a = self.0.unsigned_abs();
        let q = q as u128;
        let mut r = a / q;
        if (a % q) * 2 >= q {
            r += 1;
        }
        let sign = if self.0 < 0 { "-" } else { "" };
        format!("{sign}{}.{:03}", r / 1000, r % 1000)
    }

    fn add(self, o: Dec) -> Dec {
        Dec(self.0.saturating_add(o.0))
    }
}

/// A policy mapping key: its text (as Python's f-string writes it) and whether it is a string
/// (only string keys equal a row's `str(value)` or a criterion).
#[derive(Debug, Clone)]
struct PolicyKey {
    text: String,
    is_str: bool,
}

/// Parsed `configs/ci-priority.yaml` (version 1), scored as InferenceX's `utils/ci_priority.py`
/// does: exact decimals, quantized to 0.001 half-up.
#[derive(Debug, Clone, Default)]
pub struct CiPriority {
    base: Dec,
    event: Vec<(PolicyKey, Dec)>,
    multi_node: Dec,
    agentic: Dec,
    eval_only: Dec,
    precision: Vec<(PolicyKey, Dec)>,
    spec_decoding: Vec<(PolicyKey, Dec)>,
    framework_prefix: Vec<(PolicyKey, Dec)>,
    model_prefix: Vec<(PolicyKey, Dec)>,
    skip_queue_label: Option<String>,
    checklist_labels: Vec<String>,
    checklist_adjustment: Dec,
    patchwork_labels: Vec<String>,
    patchwork_score: Dec,
    patchwork_waived_by: Vec<String>,
}

/// `Decimal(str(value))` of a policy amount.
fn dec(n: &Node, file: &str, field: &str) -> Result<Dec> {
    let text = match &n.value {
        Yaml::Int(i) => Some(i.to_string()),
        Yaml::Float(f) => Some(crate::pyjson::float_repr(*f)),
        Yaml::Str(s) => Some(s.clone()),
        _ => None,
    };
    text.as_deref().and_then(Dec::parse).ok_or_else(|| {
        ConfigError::new(
            file,
            n.pos,
            field,
            format!(
                "must be a decimal number (at most 24 places, below 1e14), found {}",
                n.kind()
            ),
        )
        .into()
    })
}

fn dec_map(n: Option<&Node>, file: &str, field: &str) -> Result<Vec<(PolicyKey, Dec)>> {
    let mut out = Vec::new();
    if let Some(n) = n {
        let Some(m) = n.as_map() else {
            return Err(ConfigError::new(file, n.pos, field, "must be a mapping").into());
        };
        for (k, v) in m {
            let key = PolicyKey {
                text: k.key_text(),
                is_str: matches!(k.value, Yaml::Str(_)),
            };
            out.push((key, dec(v, file, &format!("{field}.{}", k.key_text()))?));
        }
    }
    Ok(out)
}

/// Python's `set(value)` of a label list, as strings (a string gives its characters; other
/// items can never equal a label).
fn label_set(n: Option<&Node>) -> Vec<String> {
    match n.map(|n| &n.value) {
        Some(Yaml::Seq(s)) => s
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        Some(Yaml::Str(s)) => s.chars().map(String::from).collect(),
        _ => vec![],
    }
}

fn required<'a>(n: Option<&'a Node>, at: &Node, file: &str, field: &str) -> Result<&'a Node> {
    n.ok_or_else(|| ConfigError::new(file, at.pos, field, "missing required field").into())
}

impl CiPriority {
    /// Parses `ci-priority.yaml` text.
    ///
    /// # Errors
    /// YAML errors, a version other than 1, missing `base-score`/`adjustments`/
    /// `labels.patchwork.names`/`labels.patchwork.score`, and amounts that are not decimals,
    /// naming `file:line:col` and the field.
    pub fn from_source(file: &str, text: &str) -> Result<Self> {
        let root = yaml::parse(text, file)?;
        if root.as_map().is_none() {
            return Err(ConfigError::new(file, root.pos, "", "must be a mapping").into());
        }
        let version_ok = match root.get("version").map(|n| &n.value) {
            Some(Yaml::Int(1)) | Some(Yaml::Bool(true)) => true,
            Some(Yaml::Float(f)) => *f == 1.0,
            _ => false,
        };
        if !version_ok {
            let (pos, v) = match root.get("version") {
                Some(n) => (n.pos, n.key_text()),
                None => (root.pos, "None".to_string()),
            };
            return Err(ConfigError::new(
                file,
                pos,
                "version",
                format!("Unsupported CI priority policy version: {v}"),
            )
            .into());
        }
        let adj = required(root.get("adjustments"), &root, file, "adjustments")?;
        let a = |k: &str| adj.get(k);
        let single = |k: &str| -> Result<Dec> {
            a(k).map(|n| dec(n, file, &format!("adjustments.{k}")))
                .transpose()
                .map(Option::unwrap_or_default)
        };
        let labels = required(root.get("labels"), &root, file, "labels")?;
        let patchwork = required(labels.get("patchwork"), labels, file, "labels.patchwork")?;
        let l = |k: &str, f: &str| labels.get(k).and_then(|x| x.get(f));
        Ok(CiPriority {
            base: dec(
                required(root.get("base-score"), &root, file, "base-score")?,
                file,
                "base-score",
            )?,
            event: dec_map(a("event"), file, "adjustments.event")?,
            multi_node: single("multi-node")?,
            agentic: single("agentic")?,
            eval_only: single("eval-only")?,
            precision: dec_map(a("precision"), file, "adjustments.precision")?,
            spec_decoding: dec_map(a("spec-decoding"), file, "adjustments.spec-decoding")?,
            framework_prefix: dec_map(a("framework-prefix"), file, "adjustments.framework-prefix")?,
            model_prefix: dec_map(a("model-prefix"), file, "adjustments.model-prefix")?,
            skip_queue_label: l("skip-queue", "name")
                .and_then(Node::as_str)
                .map(str::to_string),
            checklist_labels: label_set(l("checklist-complete", "names")),
            checklist_adjustment: l("checklist-complete", "adjustment")
                .map(|n| dec(n, file, "labels.checklist-complete.adjustment"))
                .transpose()?
                .unwrap_or_default(),
            patchwork_labels: label_set(Some(required(
                patchwork.get("names"),
                patchwork,
                file,
                "labels.patchwork.names",
            )?)),
            patchwork_score: dec(
                required(
                    patchwork.get("score"),
                    patchwork,
                    file,
                    "labels.patchwork.score",
                )?,
                file,
                "labels.patchwork.score",
            )?,
            patchwork_waived_by: label_set(patchwork.get("waived-by")),
        })
    }

    /// Loads `ci-priority.yaml`.
    ///
    /// # Errors
    /// As [`CiPriority::from_source`], plus I/O.
    pub fn load(path: &Path) -> Result<Self> {
        Self::from_source(&path.display().to_string(), &read_to_string(path)?)
    }

    /// Every criterion the policy understands (`--criteria-json` items).
    pub fn supported_criteria(&self) -> BTreeSet<String> {
        let mut s: BTreeSet<String> = [
            "multi-node",
            "agentic",
            "eval-only",
            "checklist-complete",
            "patchwork",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        for m in [
            &self.precision,
            &self.spec_decoding,
            &self.framework_prefix,
            &self.model_prefix,
        ] {
            s.extend(
                m.iter()
                    .filter(|(k, _)| k.is_str)
                    .map(|(k, _)| k.text.clone()),
            );
        }
        s
    }

    /// Score of a matrix row (reference §1.6): base + event + multi-node (row has a non-null
    /// `prefill`) + agentic + eval-only (`eval-only` is `true`) + precision + spec-decoding +
    /// first matching framework prefix (equal, or followed by `-`) + exact model prefix +
    /// checklist label; a patchwork label (unless waived) gives the patchwork score. With
    /// criteria, only the row facts they name count.
    ///
    /// # Errors
    /// [`Error::Usage`](crate::Error::Usage) for criteria the policy does not know.
    pub fn score(&self, row: &Row, ctx: &PriorityContext) -> Result<Dec> {
        let has = |names: &[String]| names.iter().any(|n| ctx.labels.contains(n));
        let crit = ctx.criteria.as_ref();
        if (crit.is_some_and(|c| c.contains("patchwork")) || has(&self.patchwork_labels))
            && !has(&self.patchwork_waived_by)
        {
            return Ok(self.patchwork_score);
        }
        let mut f = Facts::of(row);
        if let Some(c) = crit {
            let supported = self.supported_criteria();
            let unknown: Vec<&String> = c.difference(&supported).collect();
            if !unknown.is_empty() {
                return Err(crate::Error::Usage(format!(
                    "Unknown CI priority criteria: {}",
                    py_list(&unknown)
                )));
            }
            f = f.restricted(c, &self.framework_prefix, &self.model_prefix);
        }
        let lookup = |m: &[(PolicyKey, Dec)], v: &str| {
            m.iter()
                .find(|(k, _)| k.is_str && k.text == v)
                .map(|(_, x)| *x)
                .unwrap_or_default()
        };
        let mut s = self.base.add(lookup(&self.event, &ctx.event_name));
        if f.prefill {
            s = s.add(self.multi_node);
        }
        if f.agentic {
            s = s.add(self.agentic);
        }
        if f.eval_only {
            s = s.add(self.eval_only);
        }
        s = s.add(lookup(&self.precision, &f.precision));
        s = s.add(lookup(&self.spec_decoding, &f.spec_decoding));
        if let Some((_, v)) = self
            .framework_prefix
            .iter()
            .find(|(k, _)| (k.is_str && f.framework == k.text) || prefixed(&f.framework, &k.text))
        {
            s = s.add(*v);
        }
        s = s.add(lookup(&self.model_prefix, &f.model_prefix));
        if crit.is_some_and(|c| c.contains("checklist-complete")) || has(&self.checklist_labels) {
            s = s.add(self.checklist_adjustment);
        }
        Ok(s)
    }

    /// [`CiPriority::score`] printed with three decimals, e.g. `5.750`; an unknown criterion
    /// prints `error`.
    pub fn score_text(&self, row: &Row, ctx: &PriorityContext) -> String {
        self.score(row, ctx)
            .map(Dec::text3)
            .unwrap_or_else(|_| "error".into())
    }

    /// Whether the labels ask to skip the queue (`skip_queue`).
    pub fn skip_queue(&self, labels: &[String]) -> bool {
        self.skip_queue_label
            .as_ref()
            .is_some_and(|l| labels.contains(l))
    }
}

/// `value.startswith(f"{prefix}-")`.
fn prefixed(value: &str, prefix: &str) -> bool {
    value
        .strip_prefix(prefix)
        .is_some_and(|r| r.starts_with('-'))
}

/// Python's `repr` of a sorted list of strings (simple strings: `['a', 'b']`).
fn py_list(items: &[&String]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|s| {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{s}\"")
            } else {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
            }
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// Python's `str(value)` of a JSON value (collections print as a marker no key equals).
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => crate::pyjson::float_repr(f),
            _ => n.to_string(),
        },
        Value::Array(_) | Value::Object(_) => "\u{0}<collection>".into(),
    }
}

/// The row facts the score reads.
struct Facts {
    prefill: bool,
    agentic: bool,
    eval_only: bool,
    precision: String,
    spec_decoding: String,
    framework: String,
    model_prefix: String,
}

impl Facts {
    fn of(row: &Row) -> Facts {
        let s = |k: &str| row.get(k).map(py_str).unwrap_or_default();
        Facts {
            prefill: row.get("prefill").is_some_and(|p| !p.is_null()),
            agentic: row.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding"),
            eval_only: row.get("eval-only") == Some(&Value::Bool(true)),
            precision: s("precision"),
            spec_decoding: s("spec-decoding"),
            framework: s("framework"),
            model_prefix: s("model-prefix"),
        }
    }

    /// Only the facts the criteria name (`_entry_from_criteria`).
    fn restricted(
        self,
        c: &BTreeSet<String>,
        frameworks: &[(PolicyKey, Dec)],
        models: &[(PolicyKey, Dec)],
    ) -> Facts {
        let keep = |v: String| if c.contains(&v) { v } else { String::new() };
        let keep_prefixed = |v: String, keys: &[(PolicyKey, Dec)]| {
            let ok = keys.iter().any(|(k, _)| {
                k.is_str && c.contains(&k.text) && (v == k.text || prefixed(&v, &k.text))
            });
            if ok {
                v
            } else {
                String::new()
            }
        };
        Facts {
            prefill: c.contains("multi-node") && self.prefill,
            agentic: c.contains("agentic") && self.agentic,
            eval_only: c.contains("eval-only") && self.eval_only,
            precision: keep(self.precision),
            spec_decoding: keep(self.spec_decoding),
            framework: keep_prefixed(self.framework, frameworks),
            model_prefix: keep_prefixed(self.model_prefix, models),
        }
    }
}

/// What `ci_priority.py`'s flags give: `--event-name`, `--labels-json`, `--queue-namespace`
/// (default `local`), `--pr-number`, `--criteria-json`.
#[derive(Debug, Clone)]
pub struct PriorityContext {
    /// GitHub event name (`push`, `pull_request`; empty by default).
    pub event_name: String,
    /// PR labels.
    pub labels: Vec<String>,
    /// Queue-token namespace.
    pub queue_namespace: String,
    /// PR number: with the skip-queue label, rows get `skip-queue-pr: <number>`.
    pub pr_number: Option<i64>,
    /// Classifier facts that count (None = all).
    pub criteria: Option<BTreeSet<String>>,
}

impl Default for PriorityContext {
    fn default() -> Self {
        PriorityContext {
            event_name: String::new(),
            labels: Vec::new(),
            queue_namespace: "local".into(),
            pr_number: None,
            criteria: None,
        }
    }
}

/// Queue token: the first 32 hex chars of SHA-256 over
/// `<namespace>:<'/'-joined keys and indices>:<row>`, the row (before annotation) as
/// `json.dumps(row, sort_keys=True, separators=(',', ':'))` writes it.
pub fn queue_token(namespace: &str, path: &[String], row: &Row) -> String {
    let text = format!(
        "{namespace}:{}:{}",
        path.join("/"),
        crate::pyjson::dumps_canonical(&Value::Object(row.clone()))
    );
    Sha256::digest(text.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A copy of a matrix (any JSON) where every object with both `runner` and `framework` gets
/// `priority` (3-decimal string), `queue-token` and, with a PR number and the skip-queue label,
/// `skip-queue-pr`, like `ci_priority.py`'s `annotate_jobs`. Nested objects are annotated too.
///
/// # Errors
/// Criteria the policy does not know (only once a row is scored).
pub fn annotate_jobs(value: &Value, cfg: &CiPriority, ctx: &PriorityContext) -> Result<Value> {
    fn walk(
        v: &Value,
        path: &mut Vec<String>,
        cfg: &CiPriority,
        ctx: &PriorityContext,
        skip: bool,
    ) -> Result<Value> {
        match v {
            Value::Array(a) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    path.push(i.to_string());
                    let r = walk(x, path, cfg, ctx, skip);
                    path.pop();
                    out.push(r?);
                }
                Ok(Value::Array(out))
            }
            Value::Object(o) => {
                let mut out = Map::new();
                for (k, x) in o {
                    path.push(k.clone());
                    let r = walk(x, path, cfg, ctx, skip);
                    path.pop();
                    out.insert(k.clone(), r?);
                }
                if o.contains_key("runner") && o.contains_key("framework") {
                    let score = cfg.score(o, ctx)?;
                    out.insert("priority".into(), Value::String(score.text3()));
                    out.insert(
                        "queue-token".into(),
                        Value::String(queue_token(&ctx.queue_namespace, path, o)),
                    );
                    if let (true, Some(n)) = (skip, ctx.pr_number) {
                        out.insert("skip-queue-pr".into(), Value::from(n));
                    }
                }
                Ok(Value::Object(out))
            }
            other => Ok(other.clone()),
        }
    }
    let skip = cfg.skip_queue(&ctx.labels);
    walk(value, &mut Vec::new(), cfg, ctx, skip)
}

/// `annotate_jobs` output text: `json.dump(…, separators=(",", ":"))` plus a newline.
pub fn annotated_text(v: &Value) -> String {
    let mut s = crate::pyjson::dumps_compact_ascii(v);
    s.push('\n');
    s
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

    fn ctx(event: &str, labels: &[&str]) -> PriorityContext {
        PriorityContext {
            event_name: event.into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn priority_matches_reference_example() {
        let c = CiPriority::from_source("ci-priority.yaml", CFG).unwrap();
        let r = row(
            json!({"runner": "b200", "framework": "sglang", "precision": "fp4", "spec-decoding": "mtp", "model-prefix": "dsv4"}),
        );
        assert_eq!(c.score_text(&r, &ctx("push", &[])), "5.750");
        assert_eq!(
            c.score_text(&r, &ctx("pull_request", &["ci-checklist-complete"])),
            "4.000"
        );
        assert_eq!(c.score_text(&r, &ctx("push", &["engine-patch"])), "0.000");
        assert_eq!(
            c.score_text(&r, &ctx("push", &["engine-patch", "ci-patchwork-waived"])),
            "5.750"
        );
        // framework prefix: "sglang-disagg" matches "sglang", "dynamo-sglang" only its own entry.
        let mn = row(
            json!({"runner": "x", "framework": "sglang-disagg", "precision": "fp8", "model-prefix": "kimik3", "prefill": {}, "scenario-type": "agentic-coding"}),
        );
        assert_eq!(c.score_text(&mn, &ctx("push", &[])), "7.250");
        // Criteria: only the named facts count; unknown ones are an error.
        let mut k = ctx("push", &[]);
        k.criteria = Some(["fp4".to_string(), "agentic".to_string()].into());
        assert_eq!(c.score_text(&r, &k), "3.750");
        k.criteria = Some(["patchwork".to_string()].into());
        assert_eq!(c.score_text(&r, &k), "0.000");
        k.criteria = Some(["zz".to_string(), "fp9".to_string()].into());
        assert_eq!(
            c.score(&r, &k).unwrap_err().to_string(),
            "Unknown CI priority criteria: ['fp9', 'zz']"
        );
    }

    #[test]
    fn decimals_are_exact_and_round_half_up() {
        let d = |s: &str| Dec::parse(s).unwrap();
        assert_eq!(d("0.0005").add(d("0.0005")).text3(), "0.001");
        assert_eq!(d("0.0005").text3(), "0.001");
        assert_eq!(d("0.0004999").text3(), "0.000");
        assert_eq!(d("-0.0005").text3(), "-0.001");
        assert_eq!(d("-0.0004").text3(), "-0.000");
        assert_eq!(d("1e-05").add(d("2.5")).text3(), "2.500");
        assert_eq!(d(" 12 ").text3(), "12.000");
        for bad in ["", ".", "1.2.3", "abc", "1e400", "1e-30", "True"] {
            assert!(Dec::parse(bad).is_none(), "{bad}");
        }
        let e = CiPriority::from_source("p.yaml", "version: 2\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.yaml:1:10: version: Unsupported CI priority policy version: 2"
        );
        let e = CiPriority::from_source("p.yaml", "version: 1\nbase-score: x\nadjustments: {}\nlabels:\n  patchwork: {names: [], score: 0}\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("p.yaml:2:13: base-score: must be a decimal"),
            "{e}"
        );
    }

    #[test]
    fn queue_token_hashes_namespace_path_and_sorted_row() {
        // sha256("ns:single_node/8k1k/0:{\"a\":1,\"b\":\"\\u00e9\"}")[:32]
        let t = queue_token(
            "ns",
            &["single_node".into(), "8k1k".into(), "0".into()],
            &row(json!({"b": "é", "a": 1})),
        );
        let want: String =
            Sha256::digest("ns:single_node/8k1k/0:{\"a\":1,\"b\":\"\\u00e9\"}".as_bytes())
                .iter()
                .take(16)
                .map(|b| format!("{b:02x}"))
                .collect();
        assert_eq!(t, want);
    }
}
