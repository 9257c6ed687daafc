//! Queries for `report`, `plot` and `compare`: points joined with their config and run,
//! filtered by any dimension, with derived cost/power metrics and Pareto frontiers.
//!
//! Sorting and grouping happen in Rust on the decoded rows, so SQLite and PostgreSQL (whose text
//! collations differ) give identical output.

use inferbench_core::point::DP_ATTENTION;
use std::collections::BTreeMap;

use inferbench_core::analytics::{self, Better, Goal, Throughputs};
use serde::Serialize;

use crate::db::Val;
use crate::{schema, Store, StoreError};

/// Whether the filterable column `k` holds integers: every config-key column but the text
/// ones ([`schema::CONFIG_TEXT`]), and the point's `gpus` and `conc`.
fn is_int_col(k: &str) -> bool {
    (schema::CONFIG_KEY.contains(&k) && !schema::CONFIG_TEXT.contains(&k))
        || k == "gpus"
        || k == "conc"
}

/// Whether `v` is a calendar date written `YYYY-MM-DD` (2026-02-30 and 2026-13-01 are not):
/// what `--since`, `--until` and the dashboard API's `since`/`until` take.
pub fn is_calendar_day(v: &str) -> bool {
    v.len() == 10
        && v.as_bytes()[4] == b'-'
        && v.as_bytes()[7] == b'-'
        && chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok()
}

/// Dimension filters: each `(column, allowed values)` must match one value (AND across columns,
/// OR within one). Columns: every config natural-key column (`model`, `hardware`, `framework`,
/// `precision`, `spec_decoding`, `tp`, `ep`, `dp_attention`, `disagg`, `isl`, `osl`, `image`,
/// `scenario`, `kv_offload`, …), plus `gpus`, `conc`, `date`, `source_kind`, `batch`. Dates may
/// also be bounded with `since` / `until` (inclusive, `YYYY-MM-DD`).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Column → allowed values.
    pub eq: BTreeMap<String, Vec<String>>,
    /// Earliest date, inclusive.
    pub since: Option<String>,
    /// Latest date, inclusive.
    pub until: Option<String>,
    /// Include failed points (`error` not NULL); off by default.
    pub include_failed: bool,
    /// Let invalid points ([`PointRow::valid`] false) onto frontiers ([`Store::frontier`]);
    /// they are always listed by [`Store::points`].
    pub include_invalid: bool,
    /// Also load every stored metric of each point (the `metrics` JSON: `p99.9_ttft`,
    /// `std_tpot`, `request_throughput`, `inferbench.*` extras, …) into [`PointRow::metrics`];
    /// off by default because it costs a JSON parse per row.
    pub all_metrics: bool,
    /// Load only these metrics (stored columns or [`derived_names`]) into
    /// [`PointRow::metrics`], besides `completed` and `failed`; `None` loads every stored
    /// column and every derived metric. A chart needs two or three of the ~60, and each costs
    /// a map insert per row (the dashboard API benchmark in docs/performance.md).
    pub only_metrics: Option<Vec<String>>,
}

impl Filter {
    /// Parses `key=v1|v2` into the filter; errors name the bad part.
    pub fn add(&mut self, spec: &str) -> Result<(), StoreError> {
        let (k, v) = spec.split_once('=').ok_or_else(|| {
            StoreError::Other(format!("filter `{spec}`: expected KEY=VALUE[|VALUE…]"))
        })?;
        let k = k.trim().to_lowercase();
        let k = match k.as_str() {
            "hw" => "hardware".to_string(),
            "spec" => "spec_decoding".to_string(),
            "dpa" | "dp_attn" => DP_ATTENTION.to_string(),
            _ => k,
        };
        if !Self::columns().contains(&k.as_str()) {
            // Trial 16: `-f framwork=vllm` named every key but not the one meant.
            let aliases = ["hw", "spec", "dpa", "dp_attn"];
            let hint =
                inferbench_core::text::closest(&k, Self::columns().iter().copied().chain(aliases))
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
            return Err(StoreError::Other(format!(
                "filter `{spec}`: unknown key `{k}`{hint}; known: {}; aliases: hw = hardware, \
                 spec = spec_decoding, dpa and dp_attn = dp_attention",
                Self::columns().join(", ")
            )));
        }
        // Identity values are matched by the key ingest stored (`Llama-3.1-8B` and `llama8b`
        // find `llama3.1-8b`, `H100` finds `h100`); a name no rule knows is matched as given.
        let canonical = |x: &str| -> String {
            let n = match k.as_str() {
                "hardware" => crate::normalize::hardware(x),
                "model" => crate::normalize::model("", x),
                "framework" => crate::normalize::framework(x).0,
                "precision" => crate::normalize::precision(x),
                "spec_decoding" => return crate::normalize::spec_method(x),
                // A batch is a path or a name as stored: case matters (trial 23: a result
                // directory with capitals matched nothing).
                "batch" => return x.trim().to_string(),
                _ => return x.trim().to_lowercase(),
            };
            if n.known {
                n.key
            } else {
                x.trim().to_lowercase()
            }
        };
        let vals: Vec<String> = v.split('|').map(canonical).collect();
        if k != "date" && k != "batch" && is_int_col(k.as_str()) {
            for x in &vals {
                let ok = x.parse::<i64>().is_ok() || matches!(x.as_str(), "true" | "false");
                if !ok {
                    return Err(StoreError::Other(format!(
                        "filter `{spec}`: `{x}` is not an integer"
                    )));
                }
            }
        }
        self.eq.entry(k).or_default().extend(vals);
        Ok(())
    }

    /// Filterable column names.
    pub fn columns() -> Vec<&'static str> {
        let mut v: Vec<&str> = schema::CONFIG_KEY.to_vec();
        v.extend(["gpus", "conc", "date", "source_kind", "batch"]);
        v
    }
}

/// One point with its configuration, run and metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PointRow {
    /// Canonical model key (`llama3.1-8b`, `dsr1`, …).
    pub model: String,
    /// Canonical hardware key (`h100`, `mi355x`, …).
    pub hardware: String,
    /// Canonical framework key (`vllm`, `sglang`, `sim`, …).
    pub framework: String,
    /// Canonical precision key (`fp8`, `bf16`, …).
    pub precision: String,
    /// Speculative-decoding method (`none`, `mtp`, …).
    pub spec_decoding: String,
    /// Prefill/decode disaggregation.
    pub disagg: bool,
    /// Tensor parallelism.
    pub tp: i64,
    /// Pipeline parallelism.
    pub pp: i64,
    /// Expert parallelism.
    pub ep: i64,
    /// Data-parallel attention (dp-attn).
    pub dp_attention: bool,
    /// GPUs of the prefill side (disaggregated configs; else 0).
    pub num_prefill_gpu: i64,
    /// GPUs of the decode side (disaggregated configs; else 0).
    pub num_decode_gpu: i64,
    /// GPUs the config uses in all (the per-GPU metrics' divisor).
    pub gpus: i64,
    /// KV-cache offload setting (`off`, …).
    pub kv_offload: String,
    /// Workload scenario (`fixed_seq_len`, `agentic-coding`).
    pub scenario: String,
    /// Input sequence length, tokens (0 for agentic points).
    pub isl: i64,
    /// Output sequence length, tokens (0 for agentic points).
    pub osl: i64,
    /// Serving engine image(s).
    pub image: String,
    /// Concurrency.
    pub conc: i64,
    /// UTC date.
    pub date: String,
    /// Sweep/batch of the run (repeats differ here).
    pub batch: String,
    /// `inferbench`, `vllm`, `inferencex`, `aiperf`.
    pub source_kind: String,
    /// Failure text, if the point failed.
    pub error: Option<String>,
    /// False for a result that is not a valid submission (AgentX: a replay shorter than 900 s
    /// or cut short, `submission_valid: false`): drawn and listed, never on a frontier unless
    /// asked ([`mark_frontier_with`]).
    pub valid: bool,
    /// Why the point is invalid (`valid` false): `cut short: interrupted`, an AgentX replay's
    /// reasons, the producer's own; `None` for a valid point or one stored before the
    /// reason was kept (schema version 4).
    pub invalid_reason: Option<String>,
    /// Hot metrics plus derived cost/power metrics (see [`derived_names`]); missing = unknown.
    pub metrics: BTreeMap<String, f64>,
    /// True when on its group's Pareto frontier (set by [`mark_frontier`]).
    pub frontier: bool,
    /// `points.id`: the point's id in this database (the dashboard's run page links by it).
    pub point_id: i64,
    /// `runs.id` of the run it came from ([`Store::run_info`]).
    pub run_id: i64,
    /// Unix time (s) its run's measurement started (`runs.start_unix`: vLLM's
    /// `benchmark_start_time_unix`), when the source gives it.
    pub start_unix: Option<f64>,
    /// The server's fingerprint (`points.server_fingerprint`, 16 hex digits of
    /// `inferbench_core::fingerprint`); empty when the source did not say (points stored
    /// before schema version 5, foreign imports).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server_fingerprint: String,
    /// The server's canonical settings the fingerprint hashes (`points.server_settings`),
    /// key → value; empty when unknown.
    #[serde(skip)]
    pub server_settings: BTreeMap<String, String>,
    /// What [`PointRow::group`] appends to tell this point's server from another one whose
    /// points would share the group's name ([`label_servers`]): the settings that differ,
    /// e.g. `max_num_seqs=256, time_scale=1`; empty when no other server shares the name.
    #[serde(skip)]
    pub server_label: String,
    /// GPU-seconds the point cost (`points.gpu_seconds`, issue 43: the row's GPUs × its wall
    /// time plus its share of its engine's launch and stop; modelled time for sim rows).
    /// `None` when unknown: imports, points stored before schema version 6, results our
    /// runner did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_seconds: Option<f64>,
    /// The point ran under `sweep --adaptive`'s early-stop rule (`points.adaptive`, issue 43):
    /// its profile could end before InferenceX's 10 × conc prompts once its metrics were
    /// known to within the sweep's tolerance at 95 % confidence. False for fixed-protocol
    /// points, imports and points stored before schema version 8.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
    /// Profile prompts an adaptive point sent (`points.prompts_used`); `None` when not
    /// adaptive or unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_used: Option<i64>,
}

/// A point's identity as the dashboard's API names it ([`PointRow::identity`]): its
/// configuration's fields under their `configs` column names ([`schema::CONFIG_KEY`], and
/// `gpus`), borrowed from the row, in key order. Serialized flat into each point of
/// `/api/v1/points`; sizes are integers (0 = not set), ISL/OSL in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PointIdentity<'a> {
    /// [`PointRow::model`].
    pub model: &'a str,
    /// [`PointRow::hardware`].
    pub hardware: &'a str,
    /// [`PointRow::framework`].
    pub framework: &'a str,
    /// [`PointRow::precision`].
    pub precision: &'a str,
    /// [`PointRow::spec_decoding`].
    pub spec_decoding: &'a str,
    /// [`PointRow::disagg`].
    pub disagg: bool,
    /// [`PointRow::tp`].
    pub tp: i64,
    /// [`PointRow::ep`].
    pub ep: i64,
    /// [`PointRow::dp_attention`].
    pub dp_attention: bool,
    /// [`PointRow::gpus`].
    pub gpus: i64,
    /// [`PointRow::scenario`].
    pub scenario: &'a str,
    /// [`PointRow::isl`], tokens.
    pub isl: i64,
    /// [`PointRow::osl`], tokens.
    pub osl: i64,
    /// [`PointRow::image`].
    pub image: &'a str,
}

impl PointRow {
    /// Whether this point counts in an analysis (frontiers, compare, history at x, TCO): a
    /// valid point always, an invalid one ([`PointRow::valid`] false) only when
    /// `include_invalid` (`--include-invalid`, the API's `include_invalid=true`). The one
    /// validity predicate of every view (issue 39: History and TCO used invalid points). A
    /// failed point ([`PointRow::status`]) never counts.
    pub fn counts(&self, include_invalid: bool) -> bool {
        self.error.is_none() && (self.valid || include_invalid)
    }

    /// This point's identity as the API names it ([`PointIdentity`]), borrowed.
    pub fn identity(&self) -> PointIdentity<'_> {
        PointIdentity {
            model: &self.model,
            hardware: &self.hardware,
            framework: &self.framework,
            precision: &self.precision,
            spec_decoding: &self.spec_decoding,
            disagg: self.disagg,
            tp: self.tp,
            ep: self.ep,
            dp_attention: self.dp_attention,
            gpus: self.gpus,
            scenario: &self.scenario,
            isl: self.isl,
            osl: self.osl,
            image: &self.image,
        }
    }

    /// Whether the point is valid as every view shows it: a failed point (an `error`:
    /// nothing measured) is not, whatever its stored validity (trial of issue 39, finding 7:
    /// `"valid": true` beside an error and `"status": "failed"`).
    pub fn shown_valid(&self) -> bool {
        self.valid && self.error.is_none()
    }

    /// Why the point is invalid as every view shows it: `None` for a valid point and for a
    /// failed one (a failed point's cause is its `error`, never an invalid reason: a point
    /// stored before the one status rule may hold `cut short: interrupted` beside its error;
    /// issue 39, fresh tester's finding 1); else the stored reason (`None` when stored before
    /// reasons were kept).
    pub fn shown_invalid_reason(&self) -> Option<&str> {
        if self.valid || self.error.is_some() {
            return None;
        }
        self.invalid_reason.as_deref()
    }

    /// The point's one status (issue 39 §9): `"failed"` when it has an `error` (nothing was
    /// measured: listed only with `--include-failed`/`include_failed`, never on a frontier),
    /// else `"invalid"` when not valid (`invalid_reason` says why; off frontiers unless
    /// `--include-invalid`), else `"ok"`. `report`'s `frontier` column and the API's `status`
    /// say it.
    pub fn status(&self) -> &'static str {
        if self.error.is_some() {
            "failed"
        } else if !self.valid {
            "invalid"
        } else {
            "ok"
        }
    }

    /// Group of a curve: one line in a chart (model, ISL/OSL, scenario, hardware, framework,
    /// precision, spec decoding, disaggregation) — InferenceX's hardware key × precision per
    /// (model, sequence) chart; InferenceX's own published points are a group of their own
    /// ([`PUBLIC_GROUP_SUFFIX`]).
    pub fn group(&self) -> String {
        // Agentic replays have no ISL/OSL: the scenario suffix names them instead of `0/0`.
        let seq = if self.scenario == AGENTIC_SCENARIO {
            String::new()
        } else {
            format!(" {}/{}", self.isl, self.osl)
        };
        let mut g = format!(
            "{}{seq} {}_{}_{}",
            self.model, self.hardware, self.framework, self.precision
        );
        if self.spec_decoding != "none" {
            g.push_str(&format!("_{}", self.spec_decoding));
        }
        if self.disagg {
            g.push_str("_disagg");
        }
        if self.scenario != "fixed_seq_len" {
            g.push_str(&format!(" {}", self.scenario));
        }
        // InferenceX's published points (an imported dump) are a curve of their own beside
        // a local run of the same configuration, as on InferenceX's unofficial-run overlay.
        if self.source_kind == PUBLIC_SOURCE {
            g.push_str(PUBLIC_GROUP_SUFFIX);
        }
        // Points of differently configured servers are curves of their own (issue 39 §5),
        // named apart by their differing settings ([`label_servers`]).
        if !self.server_label.is_empty() {
            g.push_str(" · ");
            g.push_str(&self.server_label);
        }
        g
    }

    /// Parallelism label as InferenceX prints it: `TP8`, `EP8`, `TEP8` (tp = ep > 1), `DEP8`
    /// (same with DP attention); disaggregated points show their GPU split `P4+D8`.
    pub fn parallelism(&self) -> String {
        if self.disagg {
            return format!("P{}+D{}", self.num_prefill_gpu, self.num_decode_gpu);
        }
        let base = if self.tp == self.ep && self.tp > 1 {
            if self.dp_attention {
                format!("DEP{}", self.tp)
            } else {
                format!("TEP{}", self.tp)
            }
        } else if self.ep > 1 {
            format!("TP{}EP{}", self.tp, self.ep)
        } else {
            format!("TP{}", self.tp)
        };
        if self.pp > 1 {
            format!("{base}PP{}", self.pp)
        } else {
            base
        }
    }

    /// A metric value by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "conc" => Some(self.conc as f64),
            "gpus" => Some(self.gpus as f64),
            _ => self.metrics.get(name).copied(),
        }
    }
}

/// Names of derived metrics added to each row: `usd_per_m_<regime>[_input|_output]` and its
/// reciprocal `tokens_per_usd_<regime>[_input|_output]` (tokens per $1 = 10⁶ ÷ $/M) for
/// `hyperscaler`, `neocloud`, `rental` and `custom` (when a custom $/GPU-h is given),
/// `tok_s_per_mw[_input|_output]`, `j_per_token[_input|_output]` (provisioned, from the all-in
/// kW table or the custom kW).
pub fn derived_names() -> Vec<String> {
    let mut v = Vec::new();
    for r in ["hyperscaler", "neocloud", "rental", "custom"] {
        for k in ["", "_input", "_output"] {
            v.push(format!("usd_per_m_{r}{k}"));
            v.push(format!("tokens_per_usd_{r}{k}"));
        }
    }
    for base in ["tok_s_per_mw", "j_per_token"] {
        for k in ["", "_input", "_output"] {
            v.push(format!("{base}{k}"));
        }
    }
    v
}

/// Whether higher or lower is better for a metric name: the metric registry's direction
/// (`inferbench_core::registry`; latencies, costs, energy and power lower, throughput and
/// interactivity higher).
pub fn better(metric: &str) -> Better {
    inferbench_core::registry::better(metric)
}

/// Ids per `IN (…)` list when fetching rows by id.
const ID_CHUNK: usize = 2000;

/// Custom cost/power inputs for derived metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct CostOptions {
    /// Custom $/GPU-hour (adds `usd_per_m_custom*`).
    pub usd_per_gpu_hour: Option<f64>,
    /// Custom all-in kW per GPU (replaces the table's value for per-MW and J/token).
    pub kw_per_gpu: Option<f64>,
}

/// Adds the cost and power metrics of `row` derived from its per-GPU throughputs (those
/// `wanted`). A failed point (`error` set: nothing was measured) gets none (trial 15: its row
/// showed `-` for $/M tokens, which divides by its zero throughput, beside `0` tok/s/MW).
fn add_derived(row: &mut PointRow, c: &CostOptions, wanted: &dyn Fn(&str) -> bool) {
    if row.error.is_some() {
        return;
    }
    let t = Throughputs {
        total: row.get("tput_per_gpu").unwrap_or(0.0),
        input: row.get("input_tput_per_gpu").unwrap_or(0.0),
        output: row.get("output_tput_per_gpu").unwrap_or(0.0),
    };
    let d = analytics::derive(&row.hardware, t, c.usd_per_gpu_hour, c.kw_per_gpu);
    let kinds = ["", "_input", "_output"];
    for (r, name) in ["hyperscaler", "neocloud", "rental"].iter().enumerate() {
        for (k, suf) in kinds.iter().enumerate() {
            if let Some(v) = d.usd_per_m[r][k] {
                insert_if(row, format!("usd_per_m_{name}{suf}"), v, wanted);
            }
            if let Some(v) = d.tokens_per_usd[r][k] {
                insert_if(row, format!("tokens_per_usd_{name}{suf}"), v, wanted);
            }
        }
    }
    for (k, suf) in kinds.iter().enumerate() {
        if let Some(v) = d.usd_per_m_custom[k] {
            insert_if(row, format!("usd_per_m_custom{suf}"), v, wanted);
        }
        if let Some(v) = d.tokens_per_usd_custom[k] {
            insert_if(row, format!("tokens_per_usd_custom{suf}"), v, wanted);
        }
        if let Some(v) = d.tok_s_per_mw[k] {
            insert_if(row, format!("tok_s_per_mw{suf}"), v, wanted);
        }
        if let Some(v) = d.joules_per_token[k] {
            insert_if(row, format!("j_per_token{suf}"), v, wanted);
        }
    }
}

fn insert_if(row: &mut PointRow, name: String, v: f64, wanted: &dyn Fn(&str) -> bool) {
    if wanted(&name) {
        row.metrics.insert(name, v);
    }
}

/// The stored throughputs the derived metrics are computed from.
const DERIVED_INPUTS: [&str; 3] = ["tput_per_gpu", "input_tput_per_gpu", "output_tput_per_gpu"];

/// The dimensions a dashboard offers as selectors ([`Store::dimension_values`]), each a
/// [`Filter`] key.
pub const SELECTOR_DIMENSIONS: &[&str] = &[
    "model",
    "scenario",
    "isl",
    "osl",
    "hardware",
    "framework",
    "precision",
    "spec_decoding",
    "disagg",
    "batch",
];

impl Store {
    /// The distinct values of each [`SELECTOR_DIMENSIONS`] column over the stored points
    /// (failed ones included): integers in numeric order, text in byte order, booleans as
    /// `false`/`true`; ISL/OSL without the 0 of agentic replays (they have none). One small
    /// query per dimension over the configs and runs tables.
    pub fn dimension_values(&mut self) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
        self.require_migrated()?;
        let mut out = BTreeMap::new();
        for &d in SELECTOR_DIMENSIONS {
            let sql = if d == "batch" {
                "SELECT DISTINCT r.batch FROM runs r \
                 WHERE EXISTS (SELECT 1 FROM points p WHERE p.run_id = r.id)"
                    .to_string()
            } else {
                format!(
                    "SELECT DISTINCT c.{d} FROM configs c \
                     WHERE EXISTS (SELECT 1 FROM points p WHERE p.config_id = c.id)"
                )
            };
            let mut vals: Vec<String> = self
                .conn
                .query(&sql, &[])?
                .into_iter()
                .filter_map(|r| {
                    let v = r.into_iter().next()?;
                    Some(match (d, v.as_i64(), v.as_str()) {
                        // Agentic replays store no ISL/OSL (0): not a value to select.
                        ("isl" | "osl", Some(0), _) => return None,
                        ("disagg", Some(i), _) => (i != 0).to_string(),
                        (_, Some(i), _) => i.to_string(),
                        (_, None, Some(s)) => s.to_string(),
                        _ => return None,
                    })
                })
                .collect();
            vals.sort_by(|a, b| match (a.parse::<i64>(), b.parse::<i64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => a.cmp(b),
            });
            vals.dedup();
            out.insert(d.to_string(), vals);
        }
        Ok(out)
    }

    /// The distinct sequences of the stored points, as a dashboard's scenario selector lists
    /// them: `ISL/OSL` (`1024/1024`, numeric order) for fixed-length scenarios, the scenario
    /// name (`agentic-coding`) for those without ISL/OSL.
    pub fn sequences(&mut self) -> Result<Vec<String>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            "SELECT DISTINCT c.scenario, c.isl, c.osl FROM configs c \
             WHERE EXISTS (SELECT 1 FROM points p WHERE p.config_id = c.id)",
            &[],
        )?;
        let mut seq: Vec<(i64, i64, String)> = rows
            .iter()
            .map(|r| {
                let scenario = r[0].as_str().unwrap_or("").to_string();
                let (isl, osl) = (r[1].as_i64().unwrap_or(0), r[2].as_i64().unwrap_or(0));
                if scenario == AGENTIC_SCENARIO || (isl == 0 && osl == 0) {
                    (i64::MAX, i64::MAX, scenario)
                } else {
                    (isl, osl, format!("{isl}/{osl}"))
                }
            })
            .collect();
        seq.sort();
        seq.dedup_by(|a, b| a.2 == b.2);
        Ok(seq.into_iter().map(|s| s.2).collect())
    }

    /// The sequence (as [`Store::sequences`] names it) with the most points, the larger one on
    /// a tie; `None` in an empty database. The dashboard opens on it (it opened on the first,
    /// often the 512/64 of a `quickstart --fast`: trial 7).
    pub fn busiest_sequence(&mut self) -> Result<Option<String>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            "SELECT c.scenario, c.isl, c.osl, COUNT(*) FROM points p \
             JOIN configs c ON p.config_id = c.id GROUP BY c.scenario, c.isl, c.osl",
            &[],
        )?;
        let mut best: Option<(i64, i64, String)> = None;
        let mut counts: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for r in &rows {
            let scenario = r[0].as_str().unwrap_or("").to_string();
            let (isl, osl) = (r[1].as_i64().unwrap_or(0), r[2].as_i64().unwrap_or(0));
            let name = if scenario == AGENTIC_SCENARIO || (isl == 0 && osl == 0) {
                scenario
            } else {
                format!("{isl}/{osl}")
            };
            let e = counts.entry(name).or_default();
            e.0 += r[3].as_i64().unwrap_or(0);
            e.1 = e.1.max(isl + osl);
        }
        for (name, (n, size)) in counts {
            if best.as_ref().is_none_or(|b| (n, size) > (b.0, b.1)) {
                best = Some((n, size, name));
            }
        }
        Ok(best.map(|b| b.2))
    }

    /// Points matching `filter`, with derived metrics, sorted by (group, parallelism, conc,
    /// date, batch).
    pub fn points(
        &mut self,
        filter: &Filter,
        cost: &CostOptions,
    ) -> Result<Vec<PointRow>, StoreError> {
        self.require_migrated()?;
        self.points_where(filter, cost, None, Labels::Stored)
    }

    /// Frontier points only: per [`PointRow::group`], the Pareto frontier of (x, y)
    /// ([`better`] gives directions), rows flagged `frontier`. When x and y are stored columns
    /// this reads only `(id, config, x, y)` of the matching points and then the full rows of the
    /// winners (the fast path measured in docs/perf/store.md); derived metrics fall back to
    /// [`Store::points`] + [`mark_frontier`].
    pub fn frontier(
        &mut self,
        filter: &Filter,
        cost: &CostOptions,
        x: &str,
        y: &str,
    ) -> Result<Vec<PointRow>, StoreError> {
        self.require_migrated()?;
        let stored = |m: &str| m == "conc" || schema::POINT_METRICS.contains(&m);
        // AgentX groups gate on a third metric (North-Star): the general path. Invalid points
        // (any kind: cut short, served by the prefix cache, a starved server) stay off the
        // fast path's frontier unless `include_invalid` (trial 12: a cache-served point took it).
        // Imported public points are groups of their own ([`PointRow::group`]), which the
        // fast path's config-only grouping cannot tell apart: the general path too.
        let mut any = |sql: &str| -> Result<bool, StoreError> {
            let r = self.conn.query(sql, &[])?;
            Ok(r.first()
                .and_then(|r| r.first())
                .and_then(|v| v.as_i64())
                .unwrap_or(0)
                > 0)
        };
        let any_agentic = any("SELECT COUNT(*) FROM configs WHERE scenario = 'agentic-coding'")?;
        let any_public = any(&format!(
            "SELECT COUNT(*) FROM runs WHERE source_kind = '{PUBLIC_SOURCE}'"
        ))?;
        let shown_batches = self.batch_view.is_some() && filter.eq.contains_key("batch");
        if !(stored(x) && stored(y)) || any_agentic || any_public || shown_batches {
            let mut rows = self.points_where(filter, cost, None, Labels::Stored)?;
            mark_frontier_with(&mut rows, x, y, filter.include_invalid);
            rows.retain(|r| r.frontier);
            return Ok(rows);
        }
        // Group key of every config (small table), and the group's name as a row shows it
        // ([`PointRow::group`] before any server label; no public runs on this path).
        let mut groups: BTreeMap<i64, String> = BTreeMap::new();
        let mut names: BTreeMap<i64, String> = BTreeMap::new();
        for r in self.conn.query(
            "SELECT id, model, isl, osl, scenario, hardware, framework, precision, spec_decoding, disagg FROM configs",
            &[],
        )? {
            let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
            let key = format!(
                "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
                s(1), r[2].as_i64().unwrap_or(0), r[3].as_i64().unwrap_or(0), s(4), s(5), s(6), s(7), s(8),
                r[9].as_i64().unwrap_or(0)
            );
            let id = r[0].as_i64().unwrap_or(0);
            groups.insert(id, key);
            let named = PointRow {
                model: s(1),
                isl: r[2].as_i64().unwrap_or(0),
                osl: r[3].as_i64().unwrap_or(0),
                scenario: s(4),
                hardware: s(5),
                framework: s(6),
                precision: s(7),
                spec_decoding: s(8),
                disagg: r[9].as_i64().unwrap_or(0) != 0,
                ..PointRow::default()
            };
            names.insert(id, named.group());
        }
        // Points of differently configured servers in one group are curves of their own
        // ([`PointRow::group`], issue 39 §5), which the config-only grouping below cannot tell
        // apart: the general path then.
        let mut servers: BTreeMap<&str, &str> = BTreeMap::new();
        let mut named_servers: BTreeMap<&str, &str> = BTreeMap::new();
        let fps = self.conn.query(
            "SELECT DISTINCT config_id, server_fingerprint FROM points",
            &[],
        )?;
        let (mut mixed, mut mixed_names) = (false, false);
        for r in &fps {
            let id = r[0].as_i64().unwrap_or(0);
            let g = groups.get(&id).map_or("", String::as_str);
            let fp = r[1].as_str().unwrap_or("");
            mixed |= *servers.entry(g).or_insert(fp) != fp;
            let name = names.get(&id).map_or("", String::as_str);
            mixed_names |= *named_servers.entry(name).or_insert(fp) != fp;
        }
        if mixed {
            let mut rows = self.points_where(filter, cost, None, Labels::Stored)?;
            mark_frontier_with(&mut rows, x, y, filter.include_invalid);
            rows.retain(|r| r.frontier);
            return Ok(rows);
        }
        let (where_sql, params) = where_clause(filter);
        // Joins only when the filter names config or run columns.
        let joins = if where_sql.contains("c.") || where_sql.contains("r.") {
            " JOIN configs c ON c.id = p.config_id JOIN runs r ON r.id = p.run_id"
        } else {
            ""
        };
        let valid_sql = if filter.include_invalid {
            ""
        } else {
            " AND p.valid = 1"
        };
        let sql = format!(
            "SELECT p.id, p.config_id, p.{x}, p.{y} FROM points p{joins} WHERE 1 = 1{where_sql}{valid_sql}"
        );
        let rows = self.conn.query_xy(&sql, &params)?;
        let mut by_group: BTreeMap<&str, GroupPoints> = BTreeMap::new();
        for &(id, cid, xv, yv) in &rows {
            let g = groups.get(&cid).map_or("", String::as_str);
            let e = by_group.entry(g).or_default();
            e.0.push(id);
            e.1.push((xv, yv));
        }
        let goal = Goal {
            x: better(x),
            y: better(y),
        };
        let mut winners: Vec<i64> = Vec::new();
        for (ids, pts) in by_group.values() {
            winners.extend(
                analytics::pareto_frontier(pts, goal)
                    .into_iter()
                    .map(|i| ids[i]),
            );
        }
        if winners.is_empty() {
            return Ok(Vec::new());
        }
        // Every stored point's group name has one server (`mixed_names` false): no row can
        // get a server label ([`apply_labels`] clears them all), so the winners' rows skip
        // reading every stored server ([`Store::stored_servers`], a scan of all points: 39 %
        // of this call's instructions at 100,000 points; docs/performance.md, 2026-12-07
        // evening). A group name with two servers (two configs named alike) reads them.
        let labels = if mixed_names {
            Labels::Stored
        } else {
            Labels::OneServerEach
        };
        let mut out = Vec::new();
        for chunk in winners.chunks(ID_CHUNK) {
            out.extend(self.points_where(filter, cost, Some(chunk), labels)?);
        }
        for r in &mut out {
            r.frontier = true;
        }
        sort_rows(&mut out);
        Ok(out)
    }

    /// The points with these ids (`points.id`) that also match `filter`, in the store's order.
    pub(crate) fn points_by_id(
        &mut self,
        filter: &Filter,
        cost: &CostOptions,
        ids: &[i64],
    ) -> Result<Vec<PointRow>, StoreError> {
        self.points_where(filter, cost, Some(ids), Labels::Stored)
    }

    fn points_where(
        &mut self,
        filter: &Filter,
        cost: &CostOptions,
        ids: Option<&[i64]>,
        labels: Labels,
    ) -> Result<Vec<PointRow>, StoreError> {
        let wanted = |m: &str| {
            filter
                .only_metrics
                .as_ref()
                .is_none_or(|w| w.iter().any(|x| x == m))
        };
        let any_derived = derived_names().iter().any(|d| wanted(d));
        let cols: Vec<&str> = schema::POINT_METRICS
            .iter()
            .copied()
            .filter(|m| wanted(m) || (any_derived && DERIVED_INPUTS.contains(m)))
            .collect();
        let hot = cols.iter().map(|m| format!(", p.{m}")).collect::<String>();
        let extra = if filter.all_metrics {
            ", p.metrics"
        } else {
            ""
        };
        let mut sql = format!(
            "SELECT c.model, c.hardware, c.framework, c.precision, c.spec_decoding, c.disagg, c.tp, c.pp,
                    c.ep, c.dp_attention, c.num_prefill_gpu, c.num_decode_gpu, c.gpus, c.kv_offload,
                    c.scenario, c.isl, c.osl, c.image, p.conc, p.date, r.batch, r.source_kind, p.error,
                    p.valid, p.completed, p.failed{hot}{extra}, p.server_fingerprint,
                    p.server_settings, p.invalid_reason, p.id, p.run_id, r.start_unix,
                    p.gpu_seconds, p.adaptive, p.prompts_used
             FROM points p JOIN configs c ON c.id = p.config_id JOIN runs r ON r.id = p.run_id WHERE 1 = 1"
        );
        // Batches matched as shown ([`Store::match_batches_as_shown`]): not in SQL (whose
        // suffix match would confirm hidden parent directories), but on the shown form below.
        let shown_batches = self.batch_view.zip(filter.eq.get("batch"));
        let sql_filter;
        let filter = match shown_batches {
            Some(_) => {
                let mut f = filter.clone();
                f.eq.remove("batch");
                sql_filter = f;
                &sql_filter
            }
            None => filter,
        };
        let (where_sql, params) = where_clause(filter);
        sql.push_str(&where_sql);
        if let Some(ids) = ids {
            // Integers from the database itself, written as literals: PostgreSQL then plans an
            // index lookup (a generic plan over 500 parameters scanned the table: 24 ms a chunk).
            let list: Vec<String> = ids.iter().map(i64::to_string).collect();
            sql.push_str(&format!(" AND p.id IN ({})", list.join(", ")));
        }
        let rows = self.conn.query(&sql, &params)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
            let n = |i: usize| r[i].as_i64().unwrap_or(0);
            let mut metrics = BTreeMap::new();
            for (j, name) in ["completed", "failed"].iter().enumerate() {
                if let Some(v) = r[24 + j].as_f64() {
                    metrics.insert(name.to_string(), v);
                }
            }
            for (j, name) in cols.iter().enumerate() {
                if let Some(v) = r[26 + j].as_f64() {
                    metrics.insert(name.to_string(), v);
                }
            }
            if filter.all_metrics {
                let text = r[26 + cols.len()].as_str().unwrap_or("{}");
                if let Ok(serde_json::Value::Object(m)) = serde_json::from_str(text) {
                    for (k, v) in m {
                        if let Some(x) = v.as_f64() {
                            metrics.entry(k).or_insert(x);
                        }
                    }
                }
            }
            let mut row = PointRow {
                model: s(0),
                hardware: s(1),
                framework: s(2),
                precision: s(3),
                spec_decoding: s(4),
                disagg: n(5) != 0,
                tp: n(6),
                pp: n(7),
                ep: n(8),
                dp_attention: n(9) != 0,
                num_prefill_gpu: n(10),
                num_decode_gpu: n(11),
                gpus: n(12),
                kv_offload: s(13),
                scenario: s(14),
                isl: n(15),
                osl: n(16),
                image: s(17),
                conc: n(18),
                date: s(19),
                batch: s(20),
                source_kind: s(21),
                error: r[22].as_str().map(String::from),
                valid: r[23].as_i64().unwrap_or(1) != 0,
                invalid_reason: r[r.len() - 7].as_str().map(String::from),
                metrics,
                frontier: false,
                point_id: r[r.len() - 6].as_i64().unwrap_or(0),
                run_id: r[r.len() - 5].as_i64().unwrap_or(0),
                start_unix: r[r.len() - 4].as_f64(),
                server_fingerprint: r[r.len() - 9].as_str().unwrap_or("").to_string(),
                server_settings: r[r.len() - 8]
                    .as_str()
                    .and_then(|t| serde_json::from_str(t).ok())
                    .unwrap_or_default(),
                server_label: String::new(),
                gpu_seconds: r[r.len() - 3].as_f64(),
                adaptive: r[r.len() - 2].as_i64().unwrap_or(0) != 0,
                prompts_used: r[r.len() - 1].as_i64(),
            };
            if any_derived {
                add_derived(&mut row, cost, &wanted);
            }
            out.push(row);
        }
        if let Some((view, values)) = shown_batches {
            out.retain(|r| {
                let shown = view(&r.batch);
                values.iter().any(|v| batch_named(&shown, v))
            });
        }
        if labels == Labels::Stored {
            let servers = self.stored_servers()?;
            apply_labels(&mut out, &servers);
        }
        sort_rows(&mut out);
        Ok(out)
    }

    /// Every server stored under each group name ([`ServersByGroup`]; invalid points' servers
    /// too, never a failed point's: it measured nothing, and its server, e.g. one without the
    /// sim's `/metrics`, renamed the valid group; fresh tester of issue 39 §5, item 3): what a
    /// point's server label tells it apart from, whatever the filter (trial of issue 39 §5:
    /// `?batch=x` gave the bare name, the run page another label than the chart's). One
    /// `DISTINCT` over the points. A failed point listed with `include_failed` is labelled
    /// among these with its own server added ([`apply_labels`]).
    pub fn stored_servers(&mut self) -> Result<ServersByGroup, StoreError> {
        let rows = self.conn.query(
            "SELECT DISTINCT c.model, c.hardware, c.framework, c.precision, c.spec_decoding,
                    c.disagg, c.scenario, c.isl, c.osl, r.source_kind, p.server_fingerprint,
                    p.server_settings
             FROM points p JOIN configs c ON c.id = p.config_id JOIN runs r ON r.id = p.run_id
             WHERE p.error IS NULL",
            &[],
        )?;
        let mut out: ServersByGroup = BTreeMap::new();
        for r in rows {
            let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
            let n = |i: usize| r[i].as_i64().unwrap_or(0);
            let row = PointRow {
                model: s(0),
                hardware: s(1),
                framework: s(2),
                precision: s(3),
                spec_decoding: s(4),
                disagg: n(5) != 0,
                scenario: s(6),
                isl: n(7),
                osl: n(8),
                source_kind: s(9),
                ..PointRow::default()
            };
            let settings: BTreeMap<String, String> = (r[11].as_str())
                .and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_default();
            out.entry(row.group())
                .or_default()
                .entry(s(10))
                .or_insert(settings);
        }
        Ok(out)
    }
}

/// Labels that tell servers apart (issue 39 §5): for each fingerprint of `servers` (fingerprint
/// → its canonical settings), the settings whose values differ among them, every one, in the
/// order of the names shown, as `key=value` with the source prefix (`sim.`, `vllm.`, …) dropped unless two
/// differing keys would then read alike; a setting a server does not name reads `none` (as the
/// sim writes an unset one). The fingerprint's first 8 digits are added in brackets only where
/// two labels would still be alike; `server not recorded` for the empty fingerprint. A label
/// is relative to the servers given: another set of servers may differ on other keys.
pub fn settings_labels(
    servers: &BTreeMap<String, BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let recorded = || servers.iter().filter(|(fp, _)| !fp.is_empty());
    let keys: std::collections::BTreeSet<&String> =
        recorded().flat_map(|(_, s)| s.keys()).collect();
    let mut differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let mut vals = recorded().map(|(_, s)| s.get(*k));
            let first = vals.next().flatten();
            vals.any(|v| v != first)
        })
        .collect();
    // By the name shown (`launch.x` among `sim.*` by `x`), then the whole key.
    differing.sort_by_key(|k| (k.split_once('.').map_or(k.as_str(), |(_, b)| b), k.as_str()));
    let short = |k: &str| -> String {
        let s = k.split_once('.').map_or(k, |(_, b)| b);
        let clash = (differing.iter())
            .filter(|d| d.split_once('.').map_or(d.as_str(), |(_, b)| b) == s)
            .count()
            > 1;
        if clash { k } else { s }.to_string()
    };
    let named: BTreeMap<&String, String> = servers
        .iter()
        .map(|(fp, settings)| {
            let label = if fp.is_empty() {
                "server not recorded".to_string()
            } else {
                (differing.iter())
                    .map(|k| {
                        let v = settings.get(*k).map_or("none", String::as_str);
                        format!("{}={v}", short(k))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            (fp, label)
        })
        .collect();
    let alike = |l: &String| l.is_empty() || named.values().filter(|x| *x == l).count() > 1;
    named
        .iter()
        .map(|(fp, l)| {
            let l = match (alike(l) && !fp.is_empty(), l.is_empty()) {
                (true, true) => format!("server {}", &fp[..fp.len().min(8)]),
                (true, false) => format!("{l} [{}]", &fp[..fp.len().min(8)]),
                (false, _) => l.clone(),
            };
            ((*fp).clone(), l)
        })
        .collect()
}

/// Group name ([`PointRow::group`] without a server label) → server fingerprint → that
/// server's canonical settings: the servers among which [`settings_labels`] tells apart.
pub type ServersByGroup = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// Sets each row's [`PointRow::server_label`] (issue 39 §5) relative to the servers of `rows`
/// themselves: where rows of one group name (the configuration's) come from servers with
/// different fingerprints, each server's label is [`settings_labels`]'s (every setting on which
/// those servers differ, in key order; the fingerprint's first 8 digits only where that is not
/// enough); `server not recorded` for rows without a fingerprint. Groups served by one server
/// keep their plain name (labels cleared). [`Store::points`] labels against every server stored
/// under the name instead ([`Store::stored_servers`]), so a label does not change with the
/// filter.
pub fn label_servers(rows: &mut [PointRow]) {
    for r in rows.iter_mut() {
        r.server_label.clear();
    }
    let mut servers: ServersByGroup = BTreeMap::new();
    // A failed point measured nothing: its server names no curve (fresh tester of issue 39
    // §5, item 3).
    for r in rows.iter().filter(|r| r.error.is_none()) {
        servers
            .entry(r.group())
            .or_default()
            .entry(r.server_fingerprint.clone())
            .or_insert_with(|| r.server_settings.clone());
    }
    apply_labels(rows, &servers);
}

/// Sets each row's [`PointRow::server_label`] from `servers` (the servers each group name is
/// told apart among, which include the rows' own): [`settings_labels`] of the row's group,
/// empty where the group has one server. A row whose server `servers` lacks (stored since it
/// was read) is labelled among them with it added.
pub fn apply_labels(rows: &mut [PointRow], servers: &ServersByGroup) {
    let mut labels: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for r in rows.iter_mut() {
        r.server_label.clear();
        let g = r.group();
        let Some(known) = servers.get(&g) else {
            continue;
        };
        let fp = &r.server_fingerprint;
        let missing = !known.contains_key(fp);
        if known.len() + usize::from(missing) < 2 {
            continue;
        }
        if missing {
            let mut with = known.clone();
            with.insert(fp.clone(), r.server_settings.clone());
            r.server_label = settings_labels(&with).remove(fp).unwrap_or_default();
            continue;
        }
        let of_group = labels.entry(g).or_insert_with(|| settings_labels(known));
        r.server_label = of_group.get(fp).cloned().unwrap_or_default();
    }
}

/// Sorts rows by (model, ISL, OSL as numbers, group, parallelism, conc, date, batch, image);
/// keys computed once per row (trial 21: the group's text put OSL 64 after 256).
fn sort_rows(rows: &mut [PointRow]) {
    rows.sort_by_cached_key(|r| {
        (
            r.model.clone(),
            r.isl,
            r.osl,
            r.group(),
            r.parallelism(),
            r.conc,
            r.date.clone(),
            r.batch.clone(),
            r.image.clone(),
        )
    });
}

/// How [`Store::points_where`] sets its rows' server labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Labels {
    /// Against every server stored under each group name ([`Store::stored_servers`]).
    Stored,
    /// None to set: the caller knows every stored group name has one server, where
    /// [`apply_labels`] would leave every label empty.
    OneServerEach,
}

/// Point ids and their (x, y) of one frontier group.
type GroupPoints = (Vec<i64>, Vec<(f64, f64)>);

/// The quickstart batches (a `LIKE` pattern) that `batch=VALUE` names by directory: a
/// quickstart run's directory, as quickstart prints it ("artifacts in
/// results/quickstart/20261204-194515-696", whatever its `--out`), names its batch
/// `quickstart-20261204-194515-696` (trial 22: the directory matched nothing); `quickstart` or
/// the directory holding the runs (`results/quickstart`) names every quickstart run.
/// `None` when the value's last component cannot be a run's name.
pub fn quickstart_batch(value: &str) -> Option<String> {
    let last = value.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    if last == "quickstart" {
        Some("quickstart-%".into())
    } else if last.is_empty() || last.contains(['%', '_']) {
        None
    } else {
        Some(format!("quickstart-{last}"))
    }
}

/// Whether `batch=value` names a batch shown as `shown`: the shown name itself, its last
/// components (`value` after a `/`), or, for a quickstart run, its directory
/// ([`quickstart_batch`]) — the SQL filter's rules, on what the reader sees.
fn batch_named(shown: &str, value: &str) -> bool {
    let v = value.trim();
    let tail = v.trim_end_matches('/');
    if shown == v || (!tail.is_empty() && shown.ends_with(&format!("/{tail}"))) {
        return true;
    }
    match quickstart_batch(v) {
        Some(q) => match q.strip_suffix('%') {
            Some(prefix) => shown.starts_with(prefix),
            None => shown == q,
        },
        None => false,
    }
}

impl Store {
    /// Matches `batch=` filters against batches as `view` shows them (`serve --redact`: a
    /// directory as `(path H)`, a hash of the whole path) instead of their stored names, so a
    /// reader cannot confirm what the view hides (a guessed parent directory, a full path);
    /// `None` restores matching the stored names. Applies to [`Store::points`] and
    /// [`Store::frontier`].
    pub fn match_batches_as_shown(&mut self, view: Option<fn(&str) -> String>) {
        self.batch_view = view;
    }
}

/// ` AND …` conditions and parameters of a filter (tables aliased p, c, r).
fn where_clause(filter: &Filter) -> (String, Vec<Val>) {
    let mut sql = String::new();
    let mut params: Vec<Val> = Vec::new();
    for (k, vals) in &filter.eq {
        // `batch=NAME` also matches a sweep directory by its last component, as tables show it,
        // and quickstart runs by their directory ([`quickstart_batch`]).
        if k == "batch" {
            let one = "(r.batch = ? OR r.batch LIKE ? OR r.batch LIKE ?)";
            sql.push_str(&format!(" AND ({})", vec![one; vals.len()].join(" OR ")));
            for v in vals {
                params.push(Val::Text(v.clone()));
                params.push(Val::Text(format!("%/{}", v.trim_end_matches('/'))));
                // The value itself (as `=` above) when it names no quickstart run.
                params.push(Val::Text(quickstart_batch(v).unwrap_or_else(|| v.clone())));
            }
            continue;
        }
        let col = match k.as_str() {
            "conc" | "date" => format!("p.{k}"),
            "source_kind" | "batch" => format!("r.{k}"),
            _ => format!("c.{k}"),
        };
        let qs = vec!["?"; vals.len()].join(", ");
        sql.push_str(&format!(" AND {col} IN ({qs})"));
        for v in vals {
            if is_int_col(k) {
                let i = match v.as_str() {
                    "true" => 1,
                    "false" => 0,
                    _ => v.parse::<i64>().unwrap_or(i64::MIN),
                };
                params.push(Val::Int(i));
            } else {
                params.push(Val::Text(v.clone()));
            }
        }
    }
    if let Some(s) = &filter.since {
        sql.push_str(" AND p.date >= ?");
        params.push(s.clone().into());
    }
    if let Some(u) = &filter.until {
        sql.push_str(" AND p.date <= ?");
        params.push(u.clone().into());
    }
    if !filter.include_failed {
        sql.push_str(" AND p.error IS NULL");
    }
    (sql, params)
}

/// Marks each row's `frontier` flag: per [`PointRow::group`], the Pareto frontier of (x, y) with
/// the metrics' directions ([`better`]). Rows lacking x or y, and invalid rows
/// ([`PointRow::valid`] false), are never on it.
pub fn mark_frontier(rows: &mut [PointRow], x: &str, y: &str) {
    mark_frontier_with(rows, x, y, false);
}

/// [`mark_frontier`], with invalid points ([`PointRow::valid`] false) competing too when
/// `include_invalid` (`report --include-invalid`); without it they are never on a frontier.
pub fn mark_frontier_with(rows: &mut [PointRow], x: &str, y: &str, include_invalid: bool) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        if r.counts(include_invalid) {
            groups.entry(r.group()).or_default().push(i);
        }
    }
    for idx in groups.values() {
        let members: Vec<&PointRow> = idx.iter().map(|&i| &rows[i]).collect();
        let winners = frontier_of(&members, x, y);
        for k in winners {
            rows[idx[k]].frontier = true;
        }
    }
}

/// The one frontier rule: the Pareto frontier of `rows` (one group's, or one batch's) in
/// (x, y) with the metrics' directions ([`better`]), AgentX rows gated on the North-Star x
/// ([`analytics::north_star_frontier`] over [`NORTH_STAR_X`]); indices into `rows`, sorted by
/// x. Rows lacking x or y are never on it. [`mark_frontier_with`] and the frontiers that
/// compare, history at x and TCO interpolate (`compare::frontier_knots`) both use it, so a
/// chart's frontier is the curve its numbers are read off. Which rows count (validity) is the
/// caller's ([`PointRow::counts`]).
pub fn frontier_of(rows: &[&PointRow], x: &str, y: &str) -> Vec<usize> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let goal = Goal {
        x: better(x),
        y: better(y),
    };
    let get = |r: &PointRow, m: &str| r.get(m).unwrap_or(f64::NAN);
    if first.scenario == AGENTIC_SCENARIO {
        // AgentX: North-Star gating on p90 E2E-normalized interactivity.
        let pts: Vec<(f64, f64, f64)> = (rows.iter())
            .map(|r| (get(r, x), get(r, y), get(r, NORTH_STAR_X)))
            .collect();
        analytics::north_star_frontier(&pts, goal)
    } else {
        let pts: Vec<(f64, f64)> = rows.iter().map(|r| (get(r, x), get(r, y))).collect();
        analytics::pareto_frontier(&pts, goal)
    }
}

/// The scenario name of AgentX points (InferenceX's `scenario-type`).
pub const AGENTIC_SCENARIO: &str = "agentic-coding";

/// Keeps, per configuration (its [`PointRow::group`] and [`PointRow::parallelism`]), only the
/// points of its latest batch: the newest date, ties to the highest run id — InferenceX's "one
/// run per line" rule (its `latest_benchmarks` view, reference/inferencex-app.md §2.3, 007:
/// all concurrencies of the winning run, never a curve stitched across runs). Order is kept.
pub fn keep_latest_runs(rows: &mut Vec<PointRow>) {
    let mut best: BTreeMap<(String, String), (String, String, i64)> = BTreeMap::new();
    for r in rows.iter() {
        let key = (r.group(), r.parallelism());
        let cand = (r.date.clone(), r.batch.clone(), r.run_id);
        let e = best.entry(key).or_insert_with(|| cand.clone());
        if (&cand.0, cand.2) > (&e.0, e.2) {
            *e = cand;
        }
    }
    rows.retain(|r| {
        best.get(&(r.group(), r.parallelism()))
            .is_some_and(|(_, batch, _)| *batch == r.batch)
    });
}

/// `source_kind` of points imported from InferenceX's public database dump
/// (`inferbench ingest --inferencex-dump`).
pub const PUBLIC_SOURCE: &str = "inferencex-dump";

/// What [`PointRow::group`] appends for [`PUBLIC_SOURCE`] points, so that InferenceX's
/// published curve and a local run of the same configuration get a frontier each.
pub const PUBLIC_GROUP_SUFFIX: &str = " · InferenceX";

/// The x of AgentX frontiers and their North-Star gate: p90 E2E-normalized interactivity,
/// tok/s/user = 1 / p90(E2EL / OSL) (DESIGN.md §4; reference/agentx.md §4.5).
pub const NORTH_STAR_X: &str = "p90_e2e_norm_intvty";

#[cfg(test)]
mod tests {
    /// A quickstart run is named by the directory quickstart prints, and all of them by
    /// `quickstart` (trial 22); other values name no quickstart batch.
    #[test]
    fn quickstart_batches_by_directory() {
        let q = |v: &str| super::quickstart_batch(v);
        assert_eq!(q("quickstart").as_deref(), Some("quickstart-%"));
        assert_eq!(q("results/quickstart/").as_deref(), Some("quickstart-%"));
        assert_eq!(
            q("results/quickstart/20261204-194515-696/").as_deref(),
            Some("quickstart-20261204-194515-696")
        );
        assert_eq!(
            q("/tmp/qs/20261204-194515-696").as_deref(),
            Some("quickstart-20261204-194515-696")
        );
        assert_eq!(q("a_b"), None);
        assert_eq!(q("/"), None);
    }

    /// A mistyped filter key names the one meant (trial 16), an alias included.
    #[test]
    fn an_unknown_filter_key_suggests_the_closest() {
        let err = |spec: &str| Filter::default().add(spec).unwrap_err().to_string();
        let e = err("framwork=vllm");
        assert!(
            e.starts_with("filter `framwork=vllm`: unknown key `framwork` (did you mean `framework`?); known: model,"),
            "{e}"
        );
        assert!(err("hx=h100").contains("(did you mean `hw`?)"));
        assert!(!err("colour=red").contains("did you mean"));
    }

    /// The integer columns are the config key's non-text columns and the point's two counts.
    #[test]
    fn integer_columns() {
        let ints: Vec<&str> = (Filter::columns().into_iter())
            .filter(|c| is_int_col(c))
            .collect();
        assert_eq!(
            ints,
            [
                "disagg",
                "is_multinode",
                "tp",
                "pp",
                "dcp",
                "pcp",
                "ep",
                "dp_attention",
                "prefill_tp",
                "prefill_ep",
                "prefill_dp_attention",
                "prefill_num_workers",
                "decode_tp",
                "decode_ep",
                "decode_dp_attention",
                "decode_num_workers",
                "num_prefill_gpu",
                "num_decode_gpu",
                "isl",
                "osl",
                "gpus",
                "conc"
            ]
        );
        assert!(crate::schema::CONFIG_TEXT
            .iter()
            .all(|c| crate::schema::CONFIG_KEY.contains(c)));
    }

    /// `--since`/`--until`: real calendar dates only (trial 13: 2026-13-01 was accepted).
    #[test]
    fn calendar_days() {
        assert!(is_calendar_day("2026-12-03") && is_calendar_day("2024-02-29"));
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2025-02-29",
            "2026-1-05",
            "20261203",
            "",
        ] {
            assert!(!is_calendar_day(bad), "{bad}");
        }
    }

    use super::*;

    /// The API's point identity is the configuration under its column names: each of its keys
    /// is a filterable column (the one field list, `CONFIG_KEY`, and `gpus`), the key's in key
    /// order.
    #[test]
    fn a_points_identity_names_its_configuration_columns() {
        let row = PointRow {
            model: "m".into(),
            tp: 8,
            gpus: 8,
            ..Default::default()
        };
        let v = serde_json::to_value(row.identity()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let columns = Filter::columns();
        assert!(keys.iter().all(|k| columns.contains(k)), "{keys:?}");
        let at: Vec<usize> = (keys.iter())
            .filter_map(|k| schema::CONFIG_KEY.iter().position(|c| c == k))
            .collect();
        assert_eq!(at.len(), keys.len() - 1, "all but `gpus` are key columns");
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert_eq!(
            (v["model"].as_str(), v["tp"].as_i64()),
            (Some("m"), Some(8))
        );
    }

    #[test]
    fn metric_directions() {
        assert_eq!(better("median_intvty"), Better::Higher);
        assert_eq!(better("p99_ttft"), Better::Lower);
        assert_eq!(better("usd_per_m_rental_output"), Better::Lower);
        assert_eq!(better("tok_s_per_mw"), Better::Higher);
        assert_eq!(better("p90_e2e_norm_intvty"), Better::Higher);
        assert_eq!(better("median_e2el"), Better::Lower);
    }

    #[test]
    fn latest_runs_win_per_configuration() {
        let row = |batch: &str, date: &str, run_id: i64, conc: i64, tp: i64| PointRow {
            model: "dsr1".into(),
            hardware: "h200".into(),
            framework: "sglang".into(),
            precision: "fp8".into(),
            spec_decoding: "none".into(),
            disagg: false,
            tp,
            pp: 1,
            ep: 1,
            dp_attention: false,
            num_prefill_gpu: tp,
            num_decode_gpu: tp,
            gpus: tp,
            kv_offload: "off".into(),
            scenario: "fixed_seq_len".into(),
            isl: 1024,
            osl: 1024,
            image: String::new(),
            conc,
            date: date.into(),
            batch: batch.into(),
            source_kind: "inferbench".into(),
            error: None,
            valid: true,
            invalid_reason: None,
            metrics: BTreeMap::new(),
            frontier: false,
            point_id: 0,
            run_id,
            start_unix: None,
            ..PointRow::default()
        };
        let mut rows = vec![
            row("old", "2026-01-01", 1, 4, 8),
            row("old", "2026-01-01", 1, 16, 8),
            row("new", "2026-02-01", 2, 4, 8),
            // Same date, higher run id wins; TP4 is its own configuration.
            row("tie-a", "2026-02-01", 3, 4, 4),
            row("tie-b", "2026-02-01", 4, 4, 4),
            row("tie-b", "2026-02-01", 4, 64, 4),
        ];
        keep_latest_runs(&mut rows);
        let kept: Vec<(&str, i64)> = rows.iter().map(|r| (r.batch.as_str(), r.conc)).collect();
        assert_eq!(kept, [("new", 4), ("tie-b", 4), ("tie-b", 64)]);
    }

    #[test]
    fn filter_parsing() {
        let mut f = Filter::default();
        f.add("hw=H200|b200").unwrap();
        f.add("tp=8").unwrap();
        assert_eq!(f.eq["hardware"], vec!["h200", "b200"]);
        assert!(f.add("tp=eight").is_err());
        assert!(f.add("colour=red").is_err());
        assert!(f.add("nokey").is_err());
        // Identity values are matched by the stored key, as ingest normalizes them; a name no
        // rule knows is matched as given (lowercased), since ingest stores it so.
        f.add("model=Llama-3.1-8B|llama8b|Mystery-1T").unwrap();
        assert_eq!(
            f.eq["model"],
            vec!["llama3.1-8b", "llama3.1-8b", "mystery-1t"]
        );
        f.add("framework=TensorRT-LLM").unwrap();
        f.add("precision=nvfp4").unwrap();
        f.add("spec=false").unwrap();
        f.add("hw=cluster:b200-dgxc_3").unwrap();
        assert_eq!(f.eq["framework"], vec!["trt"]);
        assert_eq!(f.eq["precision"], vec!["fp4"]);
        assert_eq!(f.eq["spec_decoding"], vec!["none"]);
        assert_eq!(f.eq["hardware"], vec!["h200", "b200", "b200"]);
    }
}
