//! Job-matrix expansion: `full-sweep` and `test-config`, as InferenceX's
//! `utils/matrix_logic/generate_sweep_configs.py` does it (reference §2).
//!
//! Rows are JSON objects (`serde_json::Map`, insertion-ordered) whose keys, key order and values
//! equal the reference generator's, so [`to_json_text`] prints the very bytes it prints. Typed
//! accessors live in [`crate::row`].
//!
//! Row kinds (reference §2.3): single-node fixed-seq (one row per concurrency), multi-node
//! fixed-seq (one row per search-space entry, `conc` is a list), single-node agentic (one row per
//! concurrency), multi-node agentic (one row per concurrency, `conc` a one-element list).

use inferbench_core::point::DP_ATTN_KEY;
use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::schema::{ConfigEntry, MasterConfigs, RunnerConfig};

/// Minimum concurrency eligible for an eval (`MIN_EVAL_CONC`).
pub const MIN_EVAL_CONC: i64 = 16;
/// Agentic duration injected into every agentic row, seconds (`DEFAULT_AGENTIC_DURATION_SECONDS`).
pub const DEFAULT_AGENTIC_DURATION_SECONDS: i64 = 3600;
/// Multi-node agentic concurrencies per allocation (each concurrency its own row).
pub const MAX_MULTINODE_AGENTIC_CONCURRENCIES_PER_ALLOCATION: usize = 1;
/// DRAM cap before utilization scaling: 3 TB decimal expressed in MiB (`MODELS.md` policy).
pub const MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB: i64 = 2_861_022;
/// Tokens added to ISL+OSL for `max-model-len`.
pub const MAX_MODEL_LEN_MARGIN: i64 = 256;

/// A matrix row.
pub type Row = Map<String, Value>;

/// Named sequence lengths accepted by `--seq-lens`: `1k1k` = (1024, 1024), `8k1k` = (8192, 1024).
pub const SEQ_LENS: [(&str, (i64, i64)); 2] = [("1k1k", (1024, 1024)), ("8k1k", (8192, 1024))];

/// `(isl, osl)` of a `--seq-lens` name.
pub fn seq_len_from_str(name: &str) -> Option<(i64, i64)> {
    SEQ_LENS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// Short name of a sequence-length pair: `1k1k`, `8k1k`, else `<isl>_<osl>`.
pub fn seq_len_to_str(isl: i64, osl: i64) -> String {
    SEQ_LENS
        .iter()
        .find(|(_, v)| *v == (isl, osl))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| format!("{isl}_{osl}"))
}

/// Scenario types.
pub const SCENARIO_TYPES: [&str; 2] = ["fixed-seq-len", "agentic-coding"];

/// Options shared by both sub-commands.
#[derive(Debug, Clone, Default)]
pub struct CommonOptions {
    /// `--no-evals`: throughput rows only, no `run-eval` marking.
    pub no_evals: bool,
    /// `--evals-only`: keep only eval rows (marked `eval-only: true`).
    pub evals_only: bool,
    /// `--all-evals`: every 8k1k row (and agentic row) becomes an eval; implies eval-only output.
    pub all_evals: bool,
    /// `--runner-node-filter`: expand rows to concrete runner names containing this substring.
    pub runner_node_filter: Option<String>,
    /// `--scenario-type`: restrict to these scenario types (None = all).
    pub scenario_types: Option<Vec<String>>,
}

/// `full-sweep` filters (all optional).
#[derive(Debug, Clone)]
pub struct FullSweepOptions {
    /// `--model-prefix`: keep config keys starting with any of these (prefix of the *key*).
    pub model_prefix: Vec<String>,
    /// `--precision`.
    pub precision: Vec<String>,
    /// `--framework`.
    pub framework: Vec<String>,
    /// `--runner-type`: runner labels (must exist in `runners.yaml`).
    pub runner_type: Vec<String>,
    /// `--seq-lens` names (`1k1k`, `8k1k`).
    pub seq_lens: Vec<String>,
    /// `--step-size` (default 2, must be > 1).
    pub step_size: i64,
    /// `--min-conc`.
    pub min_conc: Option<i64>,
    /// `--max-conc`.
    pub max_conc: Option<i64>,
    /// `--max-tp` (single-node fixed-seq only: larger tp is skipped).
    pub max_tp: Option<i64>,
    /// `--max-ep` (single-node fixed-seq only: larger ep is clamped).
    pub max_ep: Option<i64>,
    /// `--single-node`.
    pub single_node: bool,
    /// `--multi-node` (neither flag ⇒ both kinds).
    pub multi_node: bool,
}

impl Default for FullSweepOptions {
    fn default() -> Self {
        FullSweepOptions {
            model_prefix: vec![],
            precision: vec![],
            framework: vec![],
            runner_type: vec![],
            seq_lens: vec![],
            step_size: 2,
            min_conc: None,
            max_conc: None,
            max_tp: None,
            max_ep: None,
            single_node: false,
            multi_node: false,
        }
    }
}

/// `test-config` selection.
#[derive(Debug, Clone, Default)]
pub struct TestConfigOptions {
    /// `--config-keys`: exact keys or fnmatch globs (`*`, `?`, `[...]`).
    pub config_keys: Vec<String>,
    /// `--conc`: keep only these concurrencies.
    pub conc: Vec<i64>,
    /// `--seq-lens`.
    pub seq_lens: Vec<String>,
}

/// Which sub-command.
#[derive(Debug, Clone)]
pub enum Selection {
    /// `full-sweep`.
    FullSweep(FullSweepOptions),
    /// `test-config`.
    TestConfig(TestConfigOptions),
}

/// Generates the matrix exactly as `generate_sweep_configs.py <sub-command>` prints it.
///
/// # Errors
/// [`Error::Usage`] for bad flag combinations, unknown runner types or config keys;
/// [`Error::Generate`] when a DRAM-offload row needs hardware facts the runner file lacks.
pub fn generate(
    configs: &MasterConfigs,
    runners: &RunnerConfig,
    selection: &Selection,
    common: &CommonOptions,
) -> Result<Vec<Row>> {
    if common.no_evals && common.evals_only {
        return Err(Error::Usage(
            "--no-evals and --evals-only are mutually exclusive".into(),
        ));
    }
    if common.no_evals && common.all_evals {
        return Err(Error::Usage(
            "--all-evals cannot be combined with --no-evals".into(),
        ));
    }
    if let Some(types) = &common.scenario_types {
        for t in types {
            if !SCENARIO_TYPES.contains(&t.as_str()) {
                return Err(Error::Usage(format!(
                    "invalid --scenario-type '{t}' (choose from 'fixed-seq-len', 'agentic-coding')"
                )));
            }
        }
    }
    let mut rows = match selection {
        Selection::FullSweep(o) => full_sweep(configs, runners, o, common)?,
        Selection::TestConfig(o) => test_config(configs, runners, o, common)?,
    };
    if !common.no_evals {
        mark_eval_entries(&mut rows, common.evals_only || common.all_evals);
        if common.all_evals {
            rows = mark_all_eval_entries(rows);
        }
    }
    if common.evals_only || common.all_evals {
        rows.retain(|r| r.get("run-eval").and_then(Value::as_bool).unwrap_or(false));
        for r in &mut rows {
            r.insert("eval-only".into(), Value::Bool(true));
        }
    }
    Ok(rows)
}

/// The generator's stdout: `json.dumps(rows)` plus a newline.
pub fn to_json_text(rows: &[Row]) -> String {
    let v = Value::Array(rows.iter().cloned().map(Value::Object).collect());
    let mut s = crate::pyjson::dumps(&v);
    s.push('\n');
    s
}

fn parse_seq_lens(names: &[String]) -> Result<Option<HashSet<(i64, i64)>>> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut out = HashSet::new();
    for n in names {
        out.insert(seq_len_from_str(n).ok_or_else(|| {
            Error::Usage(format!(
                "invalid --seq-lens '{n}' (choose from '1k1k', '8k1k')"
            ))
        })?);
    }
    Ok(Some(out))
}

fn scenario_wanted(common: &CommonOptions, name: &str) -> bool {
    common
        .scenario_types
        .as_ref()
        .is_none_or(|t| t.iter().any(|x| x == name))
}

fn get_i64(m: &Map<String, Value>, k: &str) -> Option<i64> {
    m.get(k).and_then(Value::as_i64)
}

/// Geometric expansion: start, start·step, …, clamped to and always including `end`.
fn conc_range(start: i64, end: i64, step: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut c = start;
    while c <= end {
        out.push(c);
        if c == end {
            break;
        }
        c = c.saturating_mul(step);
        if c > end {
            c = end;
        }
    }
    out
}

/// Values of a search-space entry's conc form. `presence` selects the test-config rule (a present
/// `conc-list` key wins even if empty) vs the full-sweep rule (a non-empty list wins).
fn conc_values(bmk: &Map<String, Value>, step: i64, presence: bool) -> Vec<i64> {
    let list = bmk.get("conc-list").and_then(Value::as_array);
    let use_list = match list {
        Some(l) => presence || !l.is_empty(),
        None => false,
    };
    if use_list {
        return list
            .map(|l| l.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
    }
    match (get_i64(bmk, "conc-start"), get_i64(bmk, "conc-end")) {
        (Some(s), Some(e)) => conc_range(s, e, step),
        _ => vec![],
    }
}

fn with_defaults(worker: &Value) -> Value {
    let mut w = worker.as_object().cloned().unwrap_or_default();
    for k in ["pp", "dcp-size", "pcp-size"] {
        let v = w
            .get(k)
            .cloned()
            .filter(|v| !v.is_null())
            .unwrap_or(json!(1));
        w.insert(k.into(), v);
    }
    Value::Object(w)
}

fn worker_pair(bmk: &Map<String, Value>) -> (Value, Value) {
    (
        with_defaults(bmk.get("prefill").unwrap_or(&Value::Null)),
        with_defaults(bmk.get("decode").unwrap_or(&Value::Null)),
    )
}

fn component_metadata(row: &mut Row, bmk: &Map<String, Value>, cfg: &ConfigEntry) {
    for f in ["router", "kv-p2p-transfer"] {
        let v = match bmk.get(f) {
            Some(v) => Some(v),
            None => cfg.raw.get(f),
        };
        if let Some(v) = v.filter(|v| !v.is_null()) {
            row.insert(f.into(), v.clone());
        }
    }
}

fn spec(bmk: &Map<String, Value>) -> Value {
    bmk.get("spec-decoding")
        .filter(|v| !v.is_null())
        .cloned()
        .unwrap_or(json!("none"))
}

struct Base<'a> {
    cfg: &'a ConfigEntry,
}

impl Base<'_> {
    fn head(&self, runner: &str) -> Row {
        let mut r = Row::new();
        for f in ["image", "model", "model-prefix", "precision", "framework"] {
            r.insert(
                f.into(),
                self.cfg.raw.get(f).cloned().unwrap_or(Value::Null),
            );
        }
        r.insert("runner".into(), json!(runner));
        r
    }
}

fn kv_suffix(kv_offloading: &str, backend: Option<&Value>) -> String {
    if kv_offloading == "none" {
        "kvnone".into()
    } else {
        let name = backend
            .and_then(|b| b.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        format!("kv{kv_offloading}-{name}")
    }
}

fn worker_tag(w: &Value, role: &str) -> String {
    let ep = w.get("ep").and_then(Value::as_i64).unwrap_or(1);
    let dpa = w.get(DP_ATTN_KEY).and_then(Value::as_bool).unwrap_or(false);
    let mut tag = format!(
        "{role}{}x{}",
        w.get("num-worker").and_then(Value::as_i64).unwrap_or(0),
        w.get("tp").and_then(Value::as_i64).unwrap_or(0)
    );
    if ep != 1 {
        tag.push_str(&format!("ep{ep}"));
    }
    if dpa {
        tag.push_str("dpa");
    }
    tag
}

/// Multi-node agentic exp-name: `<prefix>_p<nw>x<tp>[ep<ep>][dpa]_d…_conc<c1x…>[_kv<mode>-<backend>]`.
pub fn multinode_agentic_exp_name(
    model_code: &str,
    prefill: &Value,
    decode: &Value,
    concs: &[i64],
    offload_suffix: &str,
) -> String {
    let c: Vec<String> = concs.iter().map(i64::to_string).collect();
    format!(
        "{model_code}_{}_{}_conc{}{offload_suffix}",
        worker_tag(prefill, "p"),
        worker_tag(decode, "d"),
        c.join("x")
    )
}

/// Agentic DRAM budget `total-cpu-dram-gb` (reference §2.4): 0 unless `kv-offloading: dram`,
/// else `floor(min(available MiB, 2_861_022) × 1_048_576 × utilization × gpus / gpus-per-node
/// / 1e9)`, computed like Python's `Decimal` (28 significant digits) from `str(utilization)`.
///
/// # Errors
/// [`Error::Generate`] when the runner has no hardware facts, or the topology does not fit/tile a
/// node.
pub fn agentic_dram_offload_gb(
    utilization: Option<f64>,
    bmk: &Map<String, Value>,
    runner: &str,
    runners: &RunnerConfig,
) -> Result<i64> {
    let kv = bmk
        .get("kv-offloading")
        .and_then(Value::as_str)
        .unwrap_or("none");
    if kv != "dram" {
        return Ok(0);
    }
    let hw = runners.hardware.get(runner).ok_or_else(|| {
        let keys: Vec<&str> = runners.hardware.keys().map(String::as_str).collect();
        Error::Generate(format!(
            "runner '{runner}' requires 'available-cpu-dram-mib' in runner hardware metadata ({}). Available hardware keys: {}",
            runners.file,
            keys.join(", ")
        ))
    })?;
    let util = utilization
        .ok_or_else(|| Error::Generate("kv-offloading 'dram' requires dram-utilization".into()))?;
    let gpn = hw.gpus_per_node;
    let gpu_count = dram_gpu_count(bmk, gpn, runner)?;
    let avail = hw
        .available_cpu_dram_mib
        .min(MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB);
    decimal_budget_gb(avail, &crate::pyjson::float_repr(util), gpu_count, gpn)
        .ok_or_else(|| Error::Generate(format!("DRAM budget overflow for runner '{runner}'")))
}

/// GPUs of one node that a DRAM-offload agentic entry uses (the `gpu_count` of the budget,
/// reference §2.4): `tp × pp × pcp-size` single-node, the prefill worker's share of a node
/// multi-node.
///
/// # Errors
/// [`Error::Generate`] when the topology does not fit (or tile) a node of `gpn` GPUs.
pub(crate) fn dram_gpu_count(bmk: &Map<String, Value>, gpn: i64, runner: &str) -> Result<i64> {
    if let Some(prefill) = bmk.get("prefill").filter(|v| v.is_object()) {
        return worker_gpus_per_node(prefill, gpn);
    }
    let tp = get_i64(bmk, "tp").unwrap_or(0);
    let pp = get_i64(bmk, "pp").unwrap_or(1);
    let pcp = get_i64(bmk, "pcp-size").unwrap_or(1);
    let n = tp * pp * pcp;
    if n > gpn {
        return Err(Error::Generate(format!(
            "tp={tp} with pp={pp} and pcp-size={pcp} requires {n} GPUs and exceeds gpus-per-node={gpn} for runner '{runner}'"
        )));
    }
    Ok(n)
}

fn worker_gpus_per_node(w: &Value, gpn: i64) -> Result<i64> {
    let tp = w.get("tp").and_then(Value::as_i64).unwrap_or(0);
    let pp = w.get("pp").and_then(Value::as_i64).unwrap_or(1);
    let pcp = w.get("pcp-size").and_then(Value::as_i64).unwrap_or(1);
    let per = tp * pp * pcp;
    if per <= 0 {
        return Err(Error::Generate(format!(
            "worker tp*pp*pcp-size={per} must be positive"
        )));
    }
    if per > gpn {
        if per % gpn != 0 {
            return Err(Error::Generate(format!(
                "worker tp*pp*pcp-size={per} spans multiple nodes but is not a multiple of gpus-per-node={gpn}"
            )));
        }
        return Ok(gpn);
    }
    if gpn % per != 0 {
        return Err(Error::Generate(format!(
            "worker tp*pp*pcp-size={per} does not divide gpus-per-node={gpn} evenly"
        )));
    }
    Ok(per)
}

/// `int(Decimal(mib) * 1048576 * Decimal(util_repr) * gpus / gpn / 1_000_000_000)` with Python's
/// default decimal context (28 significant digits, ROUND_HALF_EVEN), exact elsewhere.
fn decimal_budget_gb(mib: i64, util_repr: &str, gpus: i64, gpn: i64) -> Option<i64> {
    // util = num / 10^scale, exactly (repr digits).
    let (num, scale) = parse_decimal(util_repr)?;
    // P = mib * 1048576 * num * gpus (exact while below 28 digits, which holds for real inputs).
    let p: i128 = (mib as i128)
        .checked_mul(1_048_576)?
        .checked_mul(num)?
        .checked_mul(gpus as i128)?;
    // q1 = round28(P / (gpn * 10^scale)); represent as (mantissa, exp10).
    let den = (gpn as i128).checked_mul(10i128.checked_pow(scale)?)?;
    let (m, e) = round_sig(p, den, 28)?;
    // q2 = q1 / 1e9 (exact shift), then int() truncates toward zero.
    let e = e - 9;
    let v = if e >= 0 {
        m.checked_mul(10i128.checked_pow(e as u32)?)?
    } else {
        m / 10i128.checked_pow((-e) as u32)?
    };
    i64::try_from(v).ok()
}

fn parse_decimal(s: &str) -> Option<(i128, u32)> {
    if s.contains(['e', 'E']) {
        let (m, e) = s.split_once(['e', 'E'])?;
        let (n, sc) = parse_decimal(m)?;
        let e: i32 = e.parse().ok()?;
        let sc = sc as i32 - e;
        return if sc >= 0 {
            Some((n, sc as u32))
        } else {
            Some((n.checked_mul(10i128.checked_pow((-sc) as u32)?)?, 0))
        };
    }
    match s.split_once('.') {
        Some((i, f)) => {
            let digits = format!("{i}{f}");
            Some((digits.parse().ok()?, f.len() as u32))
        }
        None => Some((s.parse().ok()?, 0)),
    }
}

/// `num/den` (both positive) rounded half-even to `sig` significant digits, as `m × 10^e`.
fn round_sig(num: i128, den: i128, sig: u32) -> Option<(i128, i32)> {
    if num == 0 {
        return Some((0, 0));
    }
    // Find e so that num/den / 10^e has `sig` digits before the point.
    let int_digits = |x: i128| x.to_string().len() as i32;
    let approx = int_digits(num / den.max(1)).max(1);
    let mut e = if num / den == 0 {
        // value < 1: count leading zeros.
        let mut k = 0;
        let mut n = num;
        while n < den {
            n = n.checked_mul(10)?;
            k += 1;
        }
        -k + 1 - sig as i32
    } else {
        approx - sig as i32
    };
    loop {
        let (q, r, d) = if e >= 0 {
            let d = den.checked_mul(10i128.checked_pow(e as u32)?)?;
            (num / d, num % d, d)
        } else {
            let n = num.checked_mul(10i128.checked_pow((-e) as u32)?)?;
            (n / den, n % den, den)
        };
        if int_digits(q) > sig as i32 {
            e += 1;
            continue;
        }
        let twice = r.checked_mul(2)?;
        let q = if twice > d || (twice == d && q % 2 == 1) {
            q + 1
        } else {
            q
        };
        if int_digits(q) > sig as i32 {
            e += 1;
            continue;
        }
        return Some((q, e));
    }
}

fn dram_utilization(agentic_cfg: &Map<String, Value>) -> Option<f64> {
    agentic_cfg.get("dram-utilization").and_then(Value::as_f64)
}

fn full_sweep(
    configs: &MasterConfigs,
    runners: &RunnerConfig,
    o: &FullSweepOptions,
    common: &CommonOptions,
) -> Result<Vec<Row>> {
    check_full_sweep_options(o, runners)?;
    let (single, multi) = if !o.single_node && !o.multi_node {
        (true, true)
    } else {
        (o.single_node, o.multi_node)
    };
    let seq_filter = parse_seq_lens(&o.seq_lens)?;
    let mut rows = Vec::new();
    for cfg in &configs.entries {
        if !entry_selected(cfg, o) {
            continue;
        }
        let runner = cfg.str_field("runner");
        let Some(runners_for_entry) = entry_runners(runner, common, runners) else {
            continue;
        };
        let e = SweepEntry {
            base: Base { cfg },
            runners: runners_for_entry,
            model_code: cfg.str_field("model-prefix").to_string(),
            multinode: cfg.is_multinode(),
            disagg: cfg.is_disagg(),
        };
        // --single-node / --multi-node: whether this entry's layout is wanted.
        let layout_wanted = if e.multinode { multi } else { single };
        if scenario_wanted(common, "fixed-seq-len") {
            for seq in cfg.scenario("fixed-seq-len") {
                fixed_seq_rows(&mut rows, &e, seq, seq_filter.as_ref(), layout_wanted, o);
            }
        }
        if !layout_wanted {
            continue;
        }
        if scenario_wanted(common, "agentic-coding") {
            for ag in cfg.scenario("agentic-coding") {
                agentic_scenario_rows(&mut rows, &e, ag, runner, runners, o)?;
            }
        }
    }
    Ok(rows)
}

/// Refuses full-sweep options that cannot select anything: a `--step-size` of 1 or less,
/// `--min-conc` above `--max-conc`, or a `--runner-type` the runner config does not have
/// (naming the valid ones).
fn check_full_sweep_options(o: &FullSweepOptions, runners: &RunnerConfig) -> Result<()> {
    if o.step_size <= 1 {
        return Err(Error::Usage("--step-size must be greater than 1".into()));
    }
    if let (Some(lo), Some(hi)) = (o.min_conc, o.max_conc) {
        if lo > hi {
            return Err(Error::Usage(
                "--min-conc must be less than or equal to --max-conc".into(),
            ));
        }
    }
    if !o.runner_type.is_empty() {
        let mut invalid: Vec<&str> = o
            .runner_type
            .iter()
            .filter(|r| !runners.has_label(r))
            .map(String::as_str)
            .collect();
        if !invalid.is_empty() {
            invalid.sort();
            let mut valid: Vec<&str> = runners.labels.iter().map(|(l, _)| l.as_str()).collect();
            valid.sort();
            return Err(Error::Usage(format!(
                "invalid runner type(s): {}. Valid runner types are: {}",
                invalid.join(", "),
                valid.join(", ")
            )));
        }
    }
    Ok(())
}

/// Whether the master-config entry `cfg` passes the `--model-prefix`, `--precision`,
/// `--framework` and `--runner-type` filters of `o` (an empty filter passes everything).
fn entry_selected(cfg: &ConfigEntry, o: &FullSweepOptions) -> bool {
    let any = |filter: &[String], v: &str| filter.is_empty() || filter.iter().any(|p| p == v);
    (o.model_prefix.is_empty()
        || o.model_prefix
            .iter()
            .any(|p| cfg.key.starts_with(p.as_str())))
        && any(&o.precision, cfg.str_field("precision"))
        && any(&o.framework, cfg.str_field("framework"))
        && any(&o.runner_type, cfg.str_field("runner"))
}

/// The runners an entry's rows go to: its `runner` label, or with `--runner-node-filter` the
/// label's nodes whose name contains the filter (`None` when none does: the entry is skipped).
fn entry_runners(
    runner: &str,
    common: &CommonOptions,
    runners: &RunnerConfig,
) -> Option<Vec<String>> {
    match &common.runner_node_filter {
        Some(f) => {
            let nodes: Vec<String> = runners
                .nodes(runner)
                .iter()
                .filter(|n| n.contains(f.as_str()))
                .cloned()
                .collect();
            (!nodes.is_empty()).then_some(nodes)
        }
        None => Some(vec![runner.to_string()]),
    }
}

/// One master-config entry being expanded into rows.
struct SweepEntry<'a> {
    base: Base<'a>,
    /// The runners (labels or nodes) every row is repeated for.
    runners: Vec<String>,
    /// The entry's `model-prefix` (the first part of `exp-name`).
    model_code: String,
    multinode: bool,
    disagg: bool,
}

/// A fixed-seq-len item: `(isl, osl)` in tokens, their name, its search-space entries.
type SeqItem = ((i64, i64), String, Vec<Map<String, Value>>);

/// One fixed-seq-len item `seq`: its `(isl, osl)` in tokens, their `1k1k`-style name and its
/// `search-space` entries as objects (a non-object reads as empty, as the generator's
/// `.get()` does); `None` when `seq_filter` (`--seq-lens`) leaves its lengths out.
fn seq_item(seq: &Value, seq_filter: Option<&HashSet<(i64, i64)>>) -> Option<SeqItem> {
    let seq = seq.as_object().cloned().unwrap_or_default();
    let isl = get_i64(&seq, "isl").unwrap_or(0);
    let osl = get_i64(&seq, "osl").unwrap_or(0);
    if seq_filter.is_some_and(|f| !f.contains(&(isl, osl))) {
        return None;
    }
    let space = seq
        .get("search-space")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|b| b.as_object().cloned().unwrap_or_default())
        .collect();
    Some(((isl, osl), seq_len_to_str(isl, osl), space))
}

/// The rows of one fixed-seq-len item `seq` (`isl`, `osl` in tokens and a `search-space`) of
/// entry `e`, unless `seq_filter` (`--seq-lens`) leaves its lengths out or the entry's layout
/// is not wanted (`layout_wanted`): one multinode row per runner, or single-node rows per
/// concurrency and runner.
fn fixed_seq_rows(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    seq: &Value,
    seq_filter: Option<&HashSet<(i64, i64)>>,
    layout_wanted: bool,
    o: &FullSweepOptions,
) {
    let Some(((isl, osl), seq_str, space)) = seq_item(seq, seq_filter) else {
        return;
    };
    for bmk in space {
        if !layout_wanted {
            continue;
        }
        if e.multinode {
            if let Some(concs) = multinode_concs(&bmk, o) {
                multinode_fixed_rows(rows, e, (isl, osl), &seq_str, &bmk, &concs);
            }
        } else {
            single_node_fixed_rows(rows, e, (isl, osl), &seq_str, &bmk, o);
        }
    }
}

/// `concs` at or above `--min-conc`; `None` when that bound is not positive or leaves none
/// (the item is then left out).
fn at_least_min_conc(mut concs: Vec<i64>, o: &FullSweepOptions) -> Option<Vec<i64>> {
    if let Some(lo) = o.min_conc {
        if lo <= 0 {
            return None;
        }
        concs.retain(|c| *c >= lo);
        if concs.is_empty() {
            return None;
        }
    }
    Some(concs)
}

/// The concurrencies of a multinode search-space item `bmk` within `--min-conc` /
/// `--max-conc` (a `--max-conc` below them all gives just that value); `None` when the item
/// is left out (a non-positive bound, or nothing at or above `--min-conc`).
fn multinode_concs(bmk: &Map<String, Value>, o: &FullSweepOptions) -> Option<Vec<i64>> {
    let mut concs = at_least_min_conc(conc_values(bmk, o.step_size, false), o)?;
    if let Some(hi) = o.max_conc {
        let f: Vec<i64> = concs.iter().copied().filter(|c| *c <= hi).collect();
        if f.is_empty() {
            if hi > 0 {
                concs = vec![hi];
            } else {
                return None;
            }
        } else {
            concs = f;
        }
    }
    Some(concs)
}

/// One row per runner for the multinode search-space item `bmk` of entry `e` at `(isl, osl)`
/// tokens: its prefill/decode workers, every concurrency of `concs` in one list, the context length
/// `isl + osl +` [`MAX_MODEL_LEN_MARGIN`], and its component metadata.
fn multinode_fixed_rows(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    (isl, osl): (i64, i64),
    seq_str: &str,
    bmk: &Map<String, Value>,
    concs: &[i64],
) {
    let (prefill, decode) = worker_pair(bmk);
    let model_code = &e.model_code;
    for rv in &e.runners {
        let mut r = e.base.head(rv);
        r.insert("isl".into(), json!(isl));
        r.insert("osl".into(), json!(osl));
        r.insert("spec-decoding".into(), spec(bmk));
        r.insert("prefill".into(), prefill.clone());
        r.insert("decode".into(), decode.clone());
        r.insert("conc".into(), json!(concs));
        r.insert(
            "max-model-len".into(),
            json!(isl + osl + MAX_MODEL_LEN_MARGIN),
        );
        r.insert("exp-name".into(), json!(format!("{model_code}_{seq_str}")));
        r.insert("disagg".into(), json!(e.disagg));
        r.insert("run-eval".into(), json!(false));
        component_metadata(&mut r, bmk, e.base.cfg);
        rows.push(r);
    }
}

/// The concurrencies of a single-node search-space item `bmk`: its `conc-list` within
/// `--min-conc` / `--max-conc` (a `--max-conc` below them all gives just that value), else
/// its `conc-start`..`conc-end` range clamped to them, in `--step-size` steps. `None` when the
/// item is left out (a non-positive bound, or nothing at or above `--min-conc`).
fn single_node_concs(bmk: &Map<String, Value>, o: &FullSweepOptions) -> Option<Vec<i64>> {
    let list = bmk
        .get("conc-list")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty());
    if let Some(list) = list {
        let mut concs = at_least_min_conc(list.iter().filter_map(Value::as_i64).collect(), o)?;
        if let Some(hi) = o.max_conc {
            if hi <= 0 {
                return None;
            }
            let f: Vec<i64> = concs.iter().copied().filter(|c| *c <= hi).collect();
            concs = if f.is_empty() { vec![hi] } else { f };
        }
        Some(concs)
    } else {
        let mut start = get_i64(bmk, "conc-start").unwrap_or(0);
        let mut end = get_i64(bmk, "conc-end").unwrap_or(0);
        if let Some(lo) = o.min_conc {
            if lo <= 0 || end < lo {
                return None;
            }
            start = start.max(lo);
        }
        if let Some(hi) = o.max_conc {
            if hi <= 0 {
                return None;
            }
            if start > hi {
                start = hi;
                end = hi;
            } else {
                end = end.min(hi);
            }
        }
        Some(conc_range(start, end, o.step_size))
    }
}

/// One row per concurrency and runner for the single-node search-space item `bmk` of entry
/// `e` at `(isl, osl)` tokens, unless `--max-tp` leaves its TP out; `--max-ep` caps its EP
/// (a non-positive `--max-tp` / `--max-ep` leaves every item out).
fn single_node_fixed_rows(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    (isl, osl): (i64, i64),
    seq_str: &str,
    bmk: &Map<String, Value>,
    o: &FullSweepOptions,
) {
    let tp = get_i64(bmk, "tp").unwrap_or(0);
    let mut ep = bmk.get("ep").and_then(Value::as_i64);
    if let Some(mt) = o.max_tp {
        if mt <= 0 || tp > mt {
            return;
        }
    }
    if let Some(me) = o.max_ep {
        if me <= 0 {
            return;
        }
        if ep.is_some_and(|e| e > me) {
            ep = Some(me);
        }
    }
    if let Some(concs) = single_node_concs(bmk, o) {
        single_node_rows_at(rows, e, (isl, osl), seq_str, bmk, ep, &concs);
    }
}

/// One row per concurrency of `concs` (in that order) and runner of entry `e` for the
/// single-node search-space item `bmk` at `(isl, osl)` tokens, with expert parallelism `ep`
/// (`None`: the item's own, else 1).
fn single_node_rows_at(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    (isl, osl): (i64, i64),
    seq_str: &str,
    bmk: &Map<String, Value>,
    ep: Option<i64>,
    concs: &[i64],
) {
    for &c in concs {
        for rv in &e.runners {
            rows.push(single_fixed_row(
                &e.base,
                rv,
                isl,
                osl,
                bmk,
                c,
                ep,
                &e.model_code,
                seq_str,
                e.disagg,
            ));
        }
    }
}

/// The rows of one agentic-coding item `ag` of entry `e` (on the runner label `runner`): per
/// search-space item, its DRAM offload budget (GB, from the item's DRAM utilization and the
/// runner's memory) and its concurrencies within `--min-conc` / `--max-conc` (none: no rows).
/// Errors: a budget the runner config cannot give.
fn agentic_scenario_rows(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    ag: &Value,
    runner: &str,
    runners: &RunnerConfig,
    o: &FullSweepOptions,
) -> Result<()> {
    agentic_items(rows, e, ag, runner, runners, |bmk| {
        let mut concs = conc_values(bmk, o.step_size, false);
        if let Some(lo) = o.min_conc {
            concs.retain(|c| *c >= lo);
        }
        if let Some(hi) = o.max_conc {
            concs.retain(|c| *c <= hi);
        }
        concs
    })
}

/// The rows of one agentic-coding item `ag` of entry `e` (on the runner label `runner`), the
/// concurrencies of each search-space item chosen by `concs_of` (none: no rows): the loop
/// full-sweep and test-config share. Errors: a budget the runner config cannot give.
fn agentic_items(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    ag: &Value,
    runner: &str,
    runners: &RunnerConfig,
    concs_of: impl Fn(&Map<String, Value>) -> Vec<i64>,
) -> Result<()> {
    let ag = ag.as_object().cloned().unwrap_or_default();
    for bmk in ag
        .get("search-space")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let bmk = bmk.as_object().cloned().unwrap_or_default();
        let budget = agentic_dram_offload_gb(dram_utilization(&ag), &bmk, runner, runners)?;
        let concs = concs_of(&bmk);
        if concs.is_empty() {
            continue;
        }
        if e.multinode {
            multinode_agentic_rows(rows, e, &bmk, &concs, budget);
        } else {
            single_node_agentic_rows(rows, e, &bmk, &concs, budget);
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn single_fixed_row(
    base: &Base<'_>,
    runner: &str,
    isl: i64,
    osl: i64,
    bmk: &Map<String, Value>,
    conc: i64,
    ep: Option<i64>,
    model_code: &str,
    seq_str: &str,
    disagg: bool,
) -> Row {
    let mut r = base.head(runner);
    r.insert("isl".into(), json!(isl));
    r.insert("osl".into(), json!(osl));
    r.insert("tp".into(), bmk.get("tp").cloned().unwrap_or(Value::Null));
    for k in ["pp", "dcp-size", "pcp-size"] {
        r.insert(
            k.into(),
            bmk.get(k)
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(json!(1)),
        );
    }
    r.insert("conc".into(), json!(conc));
    r.insert(
        "max-model-len".into(),
        json!(isl + osl + MAX_MODEL_LEN_MARGIN),
    );
    r.insert("ep".into(), json!(ep.unwrap_or(1)));
    r.insert(
        DP_ATTN_KEY.into(),
        bmk.get(DP_ATTN_KEY)
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(json!(false)),
    );
    r.insert("spec-decoding".into(), spec(bmk));
    r.insert("exp-name".into(), json!(format!("{model_code}_{seq_str}")));
    r.insert("disagg".into(), json!(disagg));
    r.insert("run-eval".into(), json!(false));
    component_metadata(&mut r, bmk, base.cfg);
    r
}

/// The `kv-offloading` mode of search-space item `bmk` (`none` when absent).
fn kv_offloading(bmk: &Map<String, Value>) -> String {
    bmk.get("kv-offloading")
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_string()
}

/// `bmk`'s value of `key`, or `default` when it is absent or null.
fn or_default(bmk: &Map<String, Value>, key: &str, default: Value) -> Value {
    bmk.get(key)
        .filter(|v| !v.is_null())
        .cloned()
        .unwrap_or(default)
}

/// Completes an agentic-coding row `r` of entry `e` and pushes it, in the generator's field
/// order: KV offloading, the DRAM `budget` (GB), the duration (s), `exp_name`, `disagg` (the
/// multinode rows only), the scenario type, the offload backend, the component metadata.
fn push_agentic_row(
    rows: &mut Vec<Row>,
    mut r: Row,
    e: &SweepEntry<'_>,
    bmk: &Map<String, Value>,
    budget: i64,
    exp_name: String,
) {
    r.insert("kv-offloading".into(), json!(kv_offloading(bmk)));
    r.insert("total-cpu-dram-gb".into(), json!(budget));
    r.insert("duration".into(), json!(DEFAULT_AGENTIC_DURATION_SECONDS));
    r.insert("exp-name".into(), json!(exp_name));
    if e.multinode {
        r.insert("disagg".into(), json!(e.disagg));
    }
    r.insert("scenario-type".into(), json!("agentic-coding"));
    if let Some(b) = bmk.get("kv-offload-backend").filter(|v| !v.is_null()) {
        r.insert("kv-offload-backend".into(), b.clone());
    }
    component_metadata(&mut r, bmk, e.base.cfg);
    rows.push(r);
}

/// Multinode agentic-coding rows of search-space item `bmk`: per runner of entry `e`, one row
/// per batch of at most [`MAX_MULTINODE_AGENTIC_CONCURRENCIES_PER_ALLOCATION`] of `concs`,
/// with its prefill/decode workers and DRAM `budget` (GB).
fn multinode_agentic_rows(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    bmk: &Map<String, Value>,
    concs: &[i64],
    budget: i64,
) {
    let (prefill, decode) = worker_pair(bmk);
    let kv = kv_offloading(bmk);
    let backend = bmk.get("kv-offload-backend").filter(|v| !v.is_null());
    let suffix = if kv != "none" {
        format!("_{}", kv_suffix(&kv, backend))
    } else {
        String::new()
    };
    for rv in &e.runners {
        for batch in concs.chunks(MAX_MULTINODE_AGENTIC_CONCURRENCIES_PER_ALLOCATION) {
            let mut r = e.base.head(rv);
            r.insert("spec-decoding".into(), spec(bmk));
            r.insert("prefill".into(), prefill.clone());
            r.insert("decode".into(), decode.clone());
            r.insert("conc".into(), json!(batch));
            let name = multinode_agentic_exp_name(&e.model_code, &prefill, &decode, batch, &suffix);
            push_agentic_row(rows, r, e, bmk, budget, name);
        }
    }
}

/// Single-node agentic-coding rows of search-space item `bmk`: one per concurrency of `concs`
/// and runner of entry `e`, with its parallelism (`pp`, `dcp-size`, `pcp-size`, `ep` default
/// 1, `dp-attn` false) and DRAM `budget` (GB); `exp-name` is
/// `<model>_tp<tp>_conc<c>_<kv>[_spec-<spec>]`.
fn single_node_agentic_rows(
    rows: &mut Vec<Row>,
    e: &SweepEntry<'_>,
    bmk: &Map<String, Value>,
    concs: &[i64],
    budget: i64,
) {
    let spec_v = spec(bmk);
    let spec_s = spec_v.as_str().unwrap_or("none").to_string();
    let backend = bmk.get("kv-offload-backend").filter(|v| !v.is_null());
    let tp = bmk.get("tp").cloned().unwrap_or(Value::Null);
    let kv = kv_offloading(bmk);
    for &c in concs {
        for rv in &e.runners {
            let mut r = e.base.head(rv);
            r.insert("tp".into(), tp.clone());
            for k in ["pp", "dcp-size", "pcp-size", "ep"] {
                r.insert(k.into(), or_default(bmk, k, json!(1)));
            }
            r.insert(
                DP_ATTN_KEY.into(),
                or_default(bmk, DP_ATTN_KEY, json!(false)),
            );
            r.insert("spec-decoding".into(), spec_v.clone());
            r.insert("conc".into(), json!(c));
            let mut name = format!(
                "{}_tp{}_conc{c}_{}",
                e.model_code,
                tp.as_i64().unwrap_or(0),
                kv_suffix(&kv, backend)
            );
            if spec_s != "none" {
                name.push_str(&format!("_spec-{spec_s}"));
            }
            push_agentic_row(rows, r, e, bmk, budget, name);
        }
    }
}

/// Python `fnmatch.fnmatchcase` (`*`, `?`, `[seq]`, `[!seq]`), case-sensitive as on POSIX.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    let n: Vec<char> = name.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    fn class(p: &[char], i: usize, c: char) -> Option<(bool, usize)> {
        // p[i] == '['; returns (matched, index after ']') or None if no closing bracket.
        let mut j = i + 1;
        let negate = j < p.len() && p[j] == '!';
        if negate {
            j += 1;
        }
        let start = j;
        if j < p.len() && p[j] == ']' {
            j += 1;
        }
        while j < p.len() && p[j] != ']' {
            j += 1;
        }
        if j >= p.len() {
            return None;
        }
        let set = &p[start..j];
        let mut matched = false;
        let mut k = 0;
        while k < set.len() {
            if k + 2 < set.len() && set[k + 1] == '-' {
                if set[k] <= c && c <= set[k + 2] {
                    matched = true;
                }
                k += 3;
            } else {
                if set[k] == c {
                    matched = true;
                }
                k += 1;
            }
        }
        Some((matched != negate, j + 1))
    }
    fn go(n: &[char], p: &[char], ni: usize, pi: usize) -> bool {
        if pi == p.len() {
            return ni == n.len();
        }
        match p[pi] {
            '*' => (ni..=n.len()).any(|k| go(n, p, k, pi + 1)),
            '?' => ni < n.len() && go(n, p, ni + 1, pi + 1),
            '[' => match class(p, pi, if ni < n.len() { n[ni] } else { '\0' }) {
                Some((m, next)) => ni < n.len() && m && go(n, p, ni + 1, next),
                None => ni < n.len() && n[ni] == '[' && go(n, p, ni + 1, pi + 1),
            },
            c => ni < n.len() && n[ni] == c && go(n, p, ni + 1, pi + 1),
        }
    }
    go(&n, &p, 0, 0)
}

/// Expands `--config-keys` (exact keys, or globs when containing `*` or `?`), keeping first-seen
/// order without duplicates.
///
/// # Errors
/// [`Error::Usage`] for a pattern that matches nothing or an exact key that does not exist.
pub fn expand_config_keys(patterns: &[String], configs: &MasterConfigs) -> Result<Vec<String>> {
    let available: Vec<&str> = configs.keys().collect();
    let mut sorted = available.clone();
    sorted.sort();
    let mut out: Vec<String> = Vec::new();
    for pat in patterns {
        if pat.contains('*') || pat.contains('?') {
            let matches: Vec<&str> = available
                .iter()
                .copied()
                .filter(|k| fnmatch(k, pat))
                .collect();
            if matches.is_empty() {
                return Err(Error::Usage(format!(
                    "pattern '{pat}' matched no config keys.\nAvailable keys: {}",
                    sorted.join(", ")
                )));
            }
            for m in matches {
                if !out.iter().any(|o| o == m) {
                    out.push(m.to_string());
                }
            }
        } else {
            if !available.contains(&pat.as_str()) {
                return Err(Error::Usage(format!(
                    "config key(s) not found: {pat}.\nAvailable keys: {}",
                    sorted.join(", ")
                )));
            }
            if !out.iter().any(|o| o == pat) {
                out.push(pat.clone());
            }
        }
    }
    Ok(out)
}

/// The rows of `test-config`: for each of `--config-keys` (glob patterns expanded), every
/// fixed-seq-len and agentic-coding search-space item at its concurrencies (step 2) that
/// `--conc` keeps (all when empty), `--seq-lens` filtering the sequence lengths. No
/// `--min-conc`/`--max-tp`-style limits: a test runs what the config says.
fn test_config(
    configs: &MasterConfigs,
    runners: &RunnerConfig,
    o: &TestConfigOptions,
    common: &CommonOptions,
) -> Result<Vec<Row>> {
    let keys = expand_config_keys(&o.config_keys, configs)?;
    let seq_filter = parse_seq_lens(&o.seq_lens)?;
    let conc_filter = |v: Vec<i64>| -> Vec<i64> {
        if o.conc.is_empty() {
            v
        } else {
            v.into_iter().filter(|c| o.conc.contains(c)).collect()
        }
    };
    let mut rows = Vec::new();
    for key in keys {
        let Some(cfg) = configs.get(&key) else {
            continue;
        };
        let runner = cfg.str_field("runner");
        let runners_for_entry = test_entry_runners(runner, common, runners);
        if runners_for_entry.is_empty() {
            continue;
        }
        let e = SweepEntry {
            base: Base { cfg },
            runners: runners_for_entry,
            model_code: cfg.str_field("model-prefix").to_string(),
            multinode: cfg.is_multinode(),
            disagg: cfg.is_disagg(),
        };
        if scenario_wanted(common, "fixed-seq-len") {
            for seq in cfg.scenario("fixed-seq-len") {
                let Some((lens, seq_str, space)) = seq_item(seq, seq_filter.as_ref()) else {
                    continue;
                };
                for bmk in space {
                    let concs = conc_filter(conc_values(&bmk, 2, true));
                    if concs.is_empty() {
                        continue;
                    }
                    if e.multinode {
                        multinode_fixed_rows(&mut rows, &e, lens, &seq_str, &bmk, &concs);
                    } else {
                        let ep = bmk.get("ep").and_then(Value::as_i64);
                        single_node_rows_at(&mut rows, &e, lens, &seq_str, &bmk, ep, &concs);
                    }
                }
            }
        }
        if scenario_wanted(common, "agentic-coding") {
            for ag in cfg.scenario("agentic-coding") {
                agentic_items(&mut rows, &e, ag, runner, runners, |bmk| {
                    conc_filter(conc_values(bmk, 2, false))
                })?;
            }
        }
    }
    Ok(rows)
}

/// The runners a `test-config` entry's rows go to: its `runner` label, or with
/// `--runner-node-filter` the label itself (when its name contains the filter) and then its
/// nodes whose names do, each once (empty: the entry is skipped). Unlike full-sweep's
/// [`entry_runners`], the label can match, as the generator's test-config does.
fn test_entry_runners(runner: &str, common: &CommonOptions, runners: &RunnerConfig) -> Vec<String> {
    let Some(f) = &common.runner_node_filter else {
        return vec![runner.to_string()];
    };
    let mut out: Vec<String> = Vec::new();
    let label = runner.contains(f.as_str()).then(|| runner.to_string());
    for c in label
        .into_iter()
        .chain(runners.nodes(runner).iter().cloned())
    {
        if c.contains(f.as_str()) && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// Canonical text of a value with sorted keys (used as a grouping key, like the reference's
/// `_freeze_matrix_value`).
fn frozen(v: &Value) -> String {
    crate::pyjson::dumps_canonical(v)
}

/// Grouping key of a multi-node row: every field except conc/eval/exp-name fields.
fn multinode_parallelism_key(r: &Row) -> String {
    const IGNORED: [&str; 6] = [
        "conc",
        "run-eval",
        "eval-only",
        "eval-conc",
        "eval-all-concs",
        "exp-name",
    ];
    let mut m = Map::new();
    for (k, v) in r {
        if !IGNORED.contains(&k.as_str()) {
            m.insert(k.clone(), v.clone());
        }
    }
    frozen(&Value::Object(m))
}

fn concs_of(r: &Row) -> Vec<i64> {
    match r.get("conc") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_i64).collect(),
        Some(v) => v.as_i64().into_iter().collect(),
        None => vec![],
    }
}

fn is_8k1k(r: &Row) -> bool {
    get_i64(r, "isl") == Some(8192) && get_i64(r, "osl") == Some(1024)
}

fn is_agentic(r: &Row) -> bool {
    r.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding")
}

/// A row's concurrencies at or above [`MIN_EVAL_CONC`], ascending.
fn eval_eligible(r: &Row) -> Vec<i64> {
    let mut v: Vec<i64> = concs_of(r)
        .into_iter()
        .filter(|c| *c >= MIN_EVAL_CONC)
        .collect();
    v.sort();
    v
}

/// The `(row, conc)` with the highest conc of a group (the first on a tie).
fn highest(items: &[(usize, i64)]) -> (usize, i64) {
    let mut best = items[0];
    for &it in &items[1..] {
        if it.1 > best.1 {
            best = it;
        }
    }
    best
}

/// Default eval selection (`mark_eval_entries`, reference §2.5). Sets `run-eval` on every row and
/// `eval-conc` on the chosen multi-node rows: single-node 8k1k rows at their group's highest and
/// median concurrency, multi-node 8k1k rows at the highest eligible concurrency of each
/// parallelism, and with `include_agentic` one agentic-coding row per group.
pub fn mark_eval_entries(rows: &mut [Row], include_agentic: bool) {
    let mut eval = single_node_eval_rows(rows);
    let mut eval_conc: HashMap<usize, i64> = HashMap::new();
    let mut take = |(i, c): (usize, i64), with_conc: bool| {
        eval.insert(i);
        if with_conc {
            eval_conc.insert(i, c);
        }
    };
    // Multi-node fixed-seq: highest eligible conc per parallelism config.
    let mut mn_groups = ConcGroups::default();
    for (i, r) in rows.iter().enumerate() {
        if r.contains_key("tp") || !r.contains_key("prefill") || !is_8k1k(r) {
            continue;
        }
        if let Some(&best) = eval_eligible(r).last() {
            mn_groups.push(multinode_parallelism_key(r), (i, best));
        }
    }
    for (_, items) in &mn_groups.items {
        take(highest(items), true);
    }
    if include_agentic {
        let (ag_sn, ag_mn) = agentic_eval_groups(rows);
        for (_, items) in &ag_sn.items {
            take(highest(items), false);
        }
        for (_, items) in &ag_mn.items {
            take(highest(items), true);
        }
    }
    for (i, r) in rows.iter_mut().enumerate() {
        r.insert("run-eval".into(), json!(eval.contains(&i)));
        if let Some(c) = eval_conc.get(&i) {
            r.insert("eval-conc".into(), json!(c));
        }
    }
}

/// Single-node fixed-seq 8k1k rows to evaluate: grouped by (model, runner, framework,
/// precision, isl, osl, spec, dp-attn), the rows at the group's highest and median
/// concurrency (of those at or above [`MIN_EVAL_CONC`]).
fn single_node_eval_rows(rows: &[Row]) -> HashSet<usize> {
    let mut groups: Groups<usize> = Groups::default();
    for (i, r) in rows.iter().enumerate() {
        if !r.contains_key("tp") || !is_8k1k(r) || eval_eligible(r).is_empty() {
            continue;
        }
        let key = frozen(&json!([
            r.get("model"),
            r.get("runner"),
            r.get("framework"),
            r.get("precision"),
            r.get("isl"),
            r.get("osl"),
            r.get("spec-decoding"),
            r.get(DP_ATTN_KEY)
        ]));
        groups.push(key, i);
    }
    let mut eval = HashSet::new();
    for (_, idx) in &groups.items {
        let mut concs: Vec<i64> = idx
            .iter()
            .filter_map(|&i| get_i64(&rows[i], "conc"))
            .collect();
        concs.sort();
        concs.dedup();
        let (Some(&hi), Some(&med)) = (concs.last(), concs.get(concs.len() / 2)) else {
            continue;
        };
        for &i in idx {
            if get_i64(&rows[i], "conc").is_some_and(|c| c == hi || c == med) {
                eval.insert(i);
            }
        }
    }
    eval
}

/// Groups of `(row index, concurrency)`.
type ConcGroups = Groups<(usize, i64)>;

/// Agentic-coding rows grouped for evals: single-node ones by (model, runner, framework,
/// precision) with each row's highest concurrency, multi-node ones by parallelism with each
/// row's highest eligible concurrency (a row with none is left out).
fn agentic_eval_groups(rows: &[Row]) -> (ConcGroups, ConcGroups) {
    let mut single = ConcGroups::default();
    let mut multi = ConcGroups::default();
    for (i, r) in rows.iter().enumerate() {
        if !is_agentic(r) {
            continue;
        }
        if r.contains_key("prefill") {
            if let Some(&best) = eval_eligible(r).last() {
                multi.push(multinode_parallelism_key(r), (i, best));
            }
            continue;
        }
        let c = concs_of(r).into_iter().max().unwrap_or(0);
        let key = frozen(&json!([
            r.get("model"),
            r.get("runner"),
            r.get("framework"),
            r.get("precision")
        ]));
        single.push(key, (i, c));
    }
    (single, multi)
}

/// Groups in first-seen order with O(1) key lookup.
struct Groups<T> {
    items: Vec<(String, Vec<T>)>,
    index: HashMap<String, usize>,
}

impl<T> Default for Groups<T> {
    fn default() -> Self {
        Groups {
            items: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<T> Groups<T> {
    fn push(&mut self, key: String, item: T) {
        match self.index.get(&key) {
            Some(&i) => self.items[i].1.push(item),
            None => {
                self.index.insert(key.clone(), self.items.len());
                self.items.push((key, vec![item]));
            }
        }
    }
}

fn sorted_union(a: &[i64], b: &[i64]) -> Vec<i64> {
    let mut v: Vec<i64> = a.iter().chain(b).copied().collect();
    v.sort();
    v.dedup();
    v
}

/// `--all-evals` expansion (`mark_all_eval_entries`, reference §2.5).
pub fn mark_all_eval_entries(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut mn_idx: HashMap<String, usize> = HashMap::new();
    let mut mn_ag_idx: HashMap<String, usize> = HashMap::new();
    for mut r in rows {
        if is_agentic(&r) {
            if !r.contains_key("prefill") {
                r.insert("run-eval".into(), json!(true));
                out.push(r);
                continue;
            }
            let concs = concs_of(&r);
            let key = multinode_parallelism_key(&r);
            if let Some(&j) = mn_ag_idx.get(&key) {
                let merged = sorted_union(&concs_of(&out[j]), &concs);
                let max = merged.last().copied().unwrap_or(0);
                out[j].insert("conc".into(), json!(merged));
                out[j].insert("eval-conc".into(), json!(max));
                continue;
            }
            let uniq = sorted_union(&concs, &[]);
            let max = concs.iter().copied().max().unwrap_or(0);
            r.insert("conc".into(), json!(uniq));
            r.insert("run-eval".into(), json!(true));
            r.insert("eval-conc".into(), json!(max));
            mn_ag_idx.insert(key, out.len());
            out.push(r);
            continue;
        }
        if !is_8k1k(&r) {
            out.push(r);
            continue;
        }
        if r.contains_key("prefill") {
            let concs = concs_of(&r);
            let key = multinode_parallelism_key(&r);
            if let Some(&j) = mn_idx.get(&key) {
                let merged = sorted_union(&concs_of(&out[j]), &concs);
                out[j].insert("conc".into(), json!(merged));
                continue;
            }
            r.insert("conc".into(), json!(sorted_union(&concs, &[])));
            r.insert("run-eval".into(), json!(true));
            r.insert("eval-all-concs".into(), json!(true));
            r.shift_remove("eval-conc");
            mn_idx.insert(key, out.len());
            out.push(r);
            continue;
        }
        r.insert("run-eval".into(), json!(true));
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conc_range_always_includes_end() {
        assert_eq!(conc_range(4, 100, 2), vec![4, 8, 16, 32, 64, 100]);
        assert_eq!(conc_range(1, 32, 2), vec![1, 2, 4, 8, 16, 32]);
        assert_eq!(conc_range(5, 5, 2), vec![5]);
        assert_eq!(conc_range(3, 30, 4), vec![3, 12, 30]);
    }

    #[test]
    fn fnmatch_like_python() {
        assert!(fnmatch("dsr1-fp8-b200-sglang", "dsr1-*-sglang"));
        assert!(fnmatch("dsr1-fp8-b200-sglang", "dsr1-fp?-b200-*"));
        assert!(!fnmatch("dsr1-fp8-b200-sglang", "dsr1-fp?-b300-*"));
        assert!(fnmatch("a1", "a[0-9]"));
        assert!(!fnmatch("ab", "a[!b]"));
        assert!(fnmatch("a[", "a["));
    }

    #[test]
    fn dram_budget_matches_reference_examples() {
        // b200-dgxc (3_095_781 MiB, capped to 2_861_022), util 0.95, TP8 of 8 → 2849 GB.
        assert_eq!(decimal_budget_gb(2_861_022, "0.95", 8, 8), Some(2849));
        // h200-dgxc 1_471_356 MiB, util 0.80, 8 of 8 → 1234 GB.
        assert_eq!(decimal_budget_gb(1_471_356, "0.8", 8, 8), Some(1234));
        // B300 (2_964_436 capped), TP4 at 0.80 → 1199 GB.
        assert_eq!(decimal_budget_gb(2_861_022, "0.8", 4, 8), Some(1199));
    }

    #[test]
    fn dram_budget_matches_python_decimal() {
        // (MiB after cap, repr(utilization), gpus, gpus-per-node, Python
        // int(Decimal(mib) * 1048576 * Decimal(repr) * gpus / gpn / 1e9)).
        let cases = [
            (1458253, "0.75", 1, 8, 143),
            (403819, "0.123456789", 2, 4, 26),
            (2544390, "0.8", 1, 4, 533),
            (460488, "0.85", 1, 8, 51),
            (1109413, "0.95", 1, 8, 138),
            (2471684, "0.95", 4, 4, 2462),
            (2731645, "0.7", 4, 4, 2005),
            (2555938, "0.85", 1, 4, 569),
            (295381, "0.123456789", 2, 4, 19),
            (1857996, "0.75", 4, 4, 1461),
            (1393866, "0.123456789", 1, 4, 45),
            (2539407, "0.7", 2, 4, 931),
        ];
        for (mib, u, g, gpn, want) in cases {
            assert_eq!(
                decimal_budget_gb(mib, u, g, gpn),
                Some(want),
                "{mib} {u} {g}/{gpn}"
            );
        }
    }

    #[test]
    fn seq_len_names() {
        assert_eq!(seq_len_to_str(8192, 1024), "8k1k");
        assert_eq!(seq_len_to_str(1024, 8192), "1024_8192");
    }
}
