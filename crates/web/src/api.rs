//! The JSON API, version 1 (`/api/v1/…`). Every response is JSON (the CSV export aside); errors
//! are `{"error": "…"}` with 400 for a bad parameter, 404 for an unknown route and 500 only for
//! a database failure.
//!
//! Query parameters of `points` and `points.csv` (all optional, repeatable where a filter):
//! - any `inferbench report --filter` key (`model`, `hardware`/`hw`, `framework`, `precision`,
//!   `spec`, `tp`, `ep`, `isl`, `osl`, `conc`, `scenario`, `batch`, …): `KEY=VALUE`, several
//!   values with `|` or by repeating the key (OR within a key, AND across keys);
//! - `since`, `until`: `YYYY-MM-DD`, inclusive;
//! - `x` (default `median_intvty`; `p90_e2e_norm_intvty` when every selected point is
//!   agentic-coding), `y` (default `tput_per_gpu`): metric names of the registry
//!   (`inferbench_core::registry`);
//! - `include_invalid`, `include_failed`, `frontier_only`, `latest_only` (per configuration
//!   only its latest run, InferenceX's "one run per line"): `true`/`false`/`1`/`0`;
//! - `gpu_hour_cost` (US $ per GPU-hour, adds `usd_per_m_custom*`), `gpu_kw` (kW per GPU for
//!   tok/s/MW and J/token): positive numbers.

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use inferbench_core::analytics::pareto::Better;
use inferbench_core::registry;
use inferbench_store::query::{self, AGENTIC_SCENARIO, NORTH_STAR_X};
use inferbench_store::{CostOptions, Filter, PointRow, Store};
use serde_json::{json, Value};

use crate::AppState;

/// An API error: its status and the message sent as `{"error": message}`.
#[derive(Debug)]
pub struct ApiError {
    /// 400 (bad parameter), 404 (no such route) or 500 (database failure).
    pub status: StatusCode,
    /// Human-readable cause, naming the parameter at fault.
    pub message: String,
}

impl ApiError {
    /// A 400 naming what was wrong with the request.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }
    /// A 500 (the database or a query task failed).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}

pub use inferbench_core::registry::{X_METRICS, Y_METRICS};

/// `{key, label, unit, label_with_unit, better}` of a registry metric; `better` is `"higher"`,
/// `"lower"` or `null` when neither side is (achieved OSL).
pub fn metric_json(key: &str) -> Option<Value> {
    let m = registry::metric(key)?;
    Some(json!({
        "key": m.key,
        "label": m.label,
        "unit": m.unit,
        "label_with_unit": m.label_with_unit(),
        "better": m.better.map(|b| match b { Better::Higher => "higher", Better::Lower => "lower" }),
    }))
}

/// `GET /api/v1/options[?model=…&hardware=…]`: `{"dimensions": {model: [...], scenario: [...],
/// isl, osl, hardware, framework, precision, spec_decoding, disagg, batch}, "sequences":
/// ["1024/1024", …, "agentic-coding"], "x_metrics": [metric…], "y_metrics": [metric…],
/// "defaults": {x, x_agentic, y, sequence}, "stored": {"points", "evals"}, "resolved": {key:
/// {given: stored}}}` (values as [`Store::dimension_values`] gives them, metrics as
/// [`metric_json`]; `sequence`: [`Store::busiest_sequence`], or null; `stored`: how many
/// points (failed ones included) and eval results the database holds). Each optional
/// `model`, `hardware`/`hw`, `framework`, `precision` or `spec_decoding`/`spec` value is
/// answered in `resolved` with the name the store keeps it under, as `report -f` and
/// `/api/v1/points` match it ([`resolve_names`]: `model=Llama-3.1-8B` → `llama3.1-8b`), so
/// that a page selects what the API would match; any other parameter is a 400.
pub async fn options(
    State(state): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let resolved = resolve_names(&pairs)?;
    let (dims, sequences, busiest, counts) = state
        .with_store(|s| {
            let db = |e: inferbench_store::StoreError| ApiError::internal(e.to_string());
            Ok((
                s.dimension_values().map_err(db)?,
                s.sequences().map_err(db)?,
                s.busiest_sequence().map_err(db)?,
                s.table_counts().map_err(db)?,
            ))
        })
        .await?;
    let stored = |t: &str| counts.iter().find(|(n, _)| n == t).map_or(0, |c| c.1);
    let list =
        |keys: &[&str]| -> Vec<Value> { keys.iter().filter_map(|k| metric_json(k)).collect() };
    Ok(Json(json!({
        "dimensions": dims,
        "sequences": sequences,
        "x_metrics": list(X_METRICS),
        "y_metrics": list(Y_METRICS),
        "defaults": {"x": "median_intvty", "x_agentic": NORTH_STAR_X, "x_input": INPUT_X,
                     "y": "tput_per_gpu", "sequence": busiest},
        "stored": {"points": stored("points"), "evals": stored("evals")},
        "resolved": resolved,
    })))
}

/// The identity keys [`options`] resolves (aliases `hw` and `spec` included).
const RESOLVED_KEYS: [&str; 7] = [
    "model",
    "hardware",
    "hw",
    "framework",
    "precision",
    "spec_decoding",
    "spec",
];

/// Each `(key, value)` of `pairs` mapped to the name the store keeps it under, by the store's
/// own filter ([`Filter::add`], what `report -f` and `/api/v1/points` use): `{key: {value:
/// stored}}` with the key's canonical name (`hw` → `hardware`); a value no rule knows maps to
/// itself as the filter matches it (lower case). A key other than [`RESOLVED_KEYS`] is a 400.
pub fn resolve_names(pairs: &[(String, String)]) -> Result<Value, ApiError> {
    let mut out = serde_json::Map::new();
    for (k, v) in pairs {
        if !RESOLVED_KEYS.contains(&k.as_str()) {
            return Err(ApiError::bad_request(format!(
                "`{k}`: unknown parameter (options resolves {})",
                RESOLVED_KEYS.join(", ")
            )));
        }
        let mut f = Filter::default();
        f.add(&format!("{k}={v}"))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        // One key, one value per `|`-separated part: the stored names joined back with `|`.
        if let Some((key, names)) = f.eq.into_iter().next() {
            let entry = out.entry(key).or_insert_with(|| json!({}));
            entry[v.as_str()] = Value::String(names.join("|"));
        }
    }
    Ok(Value::Object(out))
}

/// A parsed `points` query.
#[derive(Debug, Clone)]
pub struct PointsQuery {
    /// Dimension filters, dates and the include flags.
    pub filter: Filter,
    /// Custom price and power.
    pub cost: CostOptions,
    /// x metric; `None` = the default for the selected points.
    pub x: Option<String>,
    /// y metric.
    pub y: String,
    /// Only frontier points.
    pub frontier_only: bool,
    /// Per configuration only its latest run ([`query::keep_latest_runs`]).
    pub latest_only: bool,
    /// `clip=`: drop the points InferenceX's chart drops ([`inferbench_views::plot::clipped`]:
    /// above $5 per million tokens on a built-in cost y, a TTFT x above 60 s) before the
    /// frontier; `None` (not given): the route's default (off for `points` and `points.csv`,
    /// on for the chart exports, as `plot` clips unless `--no-clip`).
    pub clip: Option<bool>,
    /// The dimension filters as given (`hw=h100`), to name one that matches nothing.
    pub filter_specs: Vec<String>,
}

fn flag(key: &str, v: &str) -> Result<bool, ApiError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "`{key}={v}`: expected true or false"
        ))),
    }
}

fn positive(key: &str, v: &str) -> Result<f64, ApiError> {
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(ApiError::bad_request(format!(
            "`{key}={v}`: expected a positive number"
        ))),
    }
}

/// A calendar date `YYYY-MM-DD` ([`inferbench_store::query::is_calendar_day`]).
fn day(key: &str, v: &str) -> Result<String, ApiError> {
    if inferbench_store::query::is_calendar_day(v) {
        Ok(v.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "`{key}={v}`: expected a calendar date YYYY-MM-DD"
        )))
    }
}

fn known_metric(key: &str, v: &str) -> Result<String, ApiError> {
    if registry::metric(v).is_some() {
        Ok(v.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "`{key}={v}`: unknown metric (x: {}; y: {})",
            X_METRICS.join(", "),
            Y_METRICS.join(", ")
        )))
    }
}

/// Parses the query pairs of `points` / `points.csv` (module docs); a bad or unknown
/// parameter is a 400 naming it.
pub fn parse_points_query(pairs: &[(String, String)]) -> Result<PointsQuery, ApiError> {
    let mut q = PointsQuery {
        filter: Filter::default(),
        cost: CostOptions::default(),
        x: None,
        y: "tput_per_gpu".into(),
        frontier_only: false,
        latest_only: false,
        clip: None,
        filter_specs: Vec::new(),
    };
    // A parameter with one value given twice is a mistake, not "the last one wins".
    const SINGLE: [&str; 11] = [
        "clip",
        "x",
        "y",
        "include_invalid",
        "include_failed",
        "frontier_only",
        "latest_only",
        "gpu_hour_cost",
        "gpu_kw",
        "since",
        "until",
    ];
    for name in SINGLE {
        if pairs.iter().filter(|(k, _)| k == name).count() > 1 {
            return Err(ApiError::bad_request(format!(
                "`{name}`: given more than once (one value only)"
            )));
        }
    }
    for (k, v) in pairs {
        match k.as_str() {
            "x" => q.x = Some(known_metric(k, v)?),
            "y" => q.y = known_metric(k, v)?,
            "include_invalid" => q.filter.include_invalid = flag(k, v)?,
            "include_failed" => q.filter.include_failed = flag(k, v)?,
            "frontier_only" => q.frontier_only = flag(k, v)?,
            "latest_only" => q.latest_only = flag(k, v)?,
            "clip" => q.clip = Some(flag(k, v)?),
            "gpu_hour_cost" => q.cost.usd_per_gpu_hour = Some(positive(k, v)?),
            "gpu_kw" => q.cost.kw_per_gpu = Some(positive(k, v)?),
            "since" => q.filter.since = Some(day(k, v)?),
            "until" => q.filter.until = Some(day(k, v)?),
            _ => {
                if v.is_empty() {
                    return Err(ApiError::bad_request(format!("`{k}=`: empty value")));
                }
                q.filter
                    .add(&format!("{k}={v}"))
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                q.filter_specs.push(format!("{k}={v}"));
            }
        }
    }
    // A custom-cost metric without its price is a column of nulls: say what it needs.
    let custom =
        |m: &str| m.starts_with("usd_per_m_custom") || m.starts_with("tokens_per_usd_custom");
    if q.cost.usd_per_gpu_hour.is_none() && (custom(&q.y) || q.x.as_deref().is_some_and(custom)) {
        return Err(ApiError::bad_request(
            "`usd_per_m_custom*` needs `gpu_hour_cost` (your $/GPU-hour; so does \
             `tokens_per_usd_custom*`)"
                .to_string(),
        ));
    }
    Ok(q)
}

/// The selected rows with frontier flags, the x used and how many points `clip` dropped
/// (`clip_default`: whether the route clips when `clip` is not given). Reads every stored metric only when
/// x or y is not a hot column; `chart_only`: the rows carry just the metrics a chart and its
/// frontiers need (x, y and the North-Star x), not the ~60 of a table.
fn select(
    store: &mut Store,
    q: &PointsQuery,
    chart_only: bool,
    clip_default: bool,
) -> Result<(Vec<PointRow>, String, usize), ApiError> {
    let db = |e: inferbench_store::StoreError| ApiError::internal(e.to_string());
    let mut f = q.filter.clone();
    let hot = |m: &str| {
        inferbench_store::schema::POINT_METRICS.contains(&m)
            || query::derived_names().iter().any(|d| d == m)
    };
    f.all_metrics = q.filter.all_metrics || !hot(&q.y) || q.x.as_deref().is_some_and(|x| !hot(x));
    if chart_only {
        let x = q.x.as_deref().unwrap_or("median_intvty");
        f.only_metrics = Some(vec![
            x.to_string(),
            q.y.clone(),
            NORTH_STAR_X.to_string(),
            INPUT_X.to_string(),
            "input_tput_per_gpu".into(),
            "output_tput_per_gpu".into(),
        ]);
    }
    let mut rows = store.points(&f, &q.cost).map_err(db)?;
    if q.latest_only {
        query::keep_latest_runs(&mut rows);
    }
    let x =
        q.x.clone()
            .unwrap_or_else(|| chart_x(&q.y, &rows).to_string());
    // InferenceX's clipping, before the frontier: a dropped point is on no line either.
    let before = rows.len();
    if q.clip.unwrap_or(clip_default) {
        rows.retain(|r| match (r.get(&x), r.get(&q.y)) {
            (Some(xv), Some(yv)) => !inferbench_views::plot::clipped(&x, &q.y, xv, yv),
            _ => true,
        });
    }
    let clipped = before - rows.len();
    inferbench_views::analysis::mark_frontier(&mut rows, &x, &q.y, f.include_invalid);
    if q.frontier_only {
        rows.retain(|r| r.frontier);
    }
    Ok((rows, x, clipped))
}

/// The x of a chart of `y` over `rows` when none is asked for (the Inference page, `points`,
/// `points.csv`, `chart.png`/`.svg`): AgentX's North-Star x (p90 E2E-normalized
/// interactivity) when every row is agentic; [`INPUT_X`] (P99 TTFT) for a y of input tokens
/// ([`is_input_metric`]: InferenceX draws input throughput, cost per input token and input
/// tok/s/MW against TTFT, its chart definitions' `i_xmetric`); median interactivity otherwise.
pub fn chart_x(y: &str, rows: &[PointRow]) -> &'static str {
    let x = inferbench_views::analysis::default_x(rows);
    if x == NORTH_STAR_X {
        x
    } else if is_input_metric(y) {
        INPUT_X
    } else {
        "median_intvty"
    }
}

/// The default x of a chart of an input-token y ([`chart_x`]): P99 TTFT, in s.
pub const INPUT_X: &str = "p99_ttft";

/// Whether y metric `y` counts input tokens only (`input_tput_per_gpu`,
/// `usd_per_m_<regime>_input`, `tok_s_per_mw_input`): one of its `_`-separated words is `input`.
pub fn is_input_metric(y: &str) -> bool {
    y.split('_').any(|w| w == "input")
}

/// `GET /api/v1/points`: `{"x": metric, "y": metric, "count": n, "groups": [{"name", "public",
/// "frontier": [[x, y]…] sorted by x}], "points": [point…]}`. A point ([`ChartPoint`]) carries
/// the identity a chart and its tooltip use, `group`, `parallelism` (`TP8`, `DEP8`, …),
/// `valid`, `frontier`, `public` (imported from InferenceX's dump: its own group, beside a
/// local run of the same configuration), `point_id`/`run_id`, and its `x` and `y` values
/// (`null` when unknown); with
/// `metrics=all` also every stored metric (the hot columns, the summary's flattened extras and
/// registry names, vLLM's statistics) and every derived one (`metrics`). Groups and points are in the
/// store's order (group, parallelism, conc, date, batch).
pub async fn points(
    State(state): State<AppState>,
    Query(mut pairs): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let mut with_metrics = false;
    if let Some(i) = pairs.iter().position(|(k, _)| k == "metrics") {
        let (k, v) = pairs.remove(i);
        with_metrics = match v.as_str() {
            "all" => true,
            "none" => false,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "`{k}={v}`: expected all or none"
                )))
            }
        };
    }
    let mut q = parse_points_query(&pairs)?;
    // Every stored metric too (the summary's extras, `p999_ttft`, `mean_achieved_osl`, …),
    // not the hot columns only: one JSON parse per row, on request.
    q.filter.all_metrics |= with_metrics;
    let y = q.y.clone();
    let (rows, x, hints) = state
        .with_store(move |s| {
            let (rows, x, clipped) = select(s, &q, !with_metrics, false)?;
            // The prices and power a cost or per-MW y assumes, per hardware (InferenceX's
            // badges under its chart), as `report` footnotes them.
            let assumed = inferbench_views::report::assumption_parts(
                &rows,
                std::slice::from_ref(&q.y),
                &q.cost,
            )
            .unwrap_or_default()
            .iter()
            .map(|p| p.replace('\u{a0}', " ").replace("(--gpu-kw)", "(yours)"))
            .collect::<Vec<String>>();
            // Nothing matched: which filter matches nothing by itself, with the closest stored
            // value, as `report -f` says it (trial 20: `count 0` and no word).
            let hints = if rows.is_empty() {
                inferbench_views::report::filter_hints(s, &q.filter_specs, "")
                    .map_err(|e| ApiError::internal(e.to_string()))?
            } else {
                Vec::new()
            };
            Ok((rows, x, (hints, assumed, clipped)))
        })
        .await?;
    let (hints, assumed, clipped) = hints;
    let mut answer = PointsAnswer::new(&rows, &x, &y, with_metrics);
    answer.note = (!hints.is_empty()).then(|| hints.join("; "));
    answer.assumptions = assumed;
    answer.clipped = clipped;
    Ok(Json(answer).into_response())
}

/// The `invalid_reason` of an invalid point stored without one (before the store kept reasons).
pub const NO_REASON_STORED: &str = "invalid (no reason stored with this point)";

/// One point of [`points`], borrowed from its row (serialized straight into the response).
/// Identity fields as in [`PointRow`].
#[derive(Debug, serde::Serialize)]
#[allow(missing_docs)]
pub struct ChartPoint<'a> {
    /// [`PointRow::group`].
    pub group: String,
    /// [`PointRow::parallelism`].
    pub parallelism: String,
    /// The point's configuration under its column names (`model` … `image`), from the
    /// store's one typed identity ([`PointRow::identity`]).
    #[serde(flatten)]
    pub identity: inferbench_store::query::PointIdentity<'a>,
    pub conc: i64,
    pub date: &'a str,
    /// The batch's full name (a result directory's path, a sweep id): what `batch=` filters take.
    pub batch: &'a str,
    /// The batch as tables show it ([`inferbench_core::text::batch_label`]: a directory's last
    /// two components); pages show this one (trial 21: absolute paths in the API's answers).
    pub batch_label: String,
    pub error: Option<&'a str>,
    /// [`PointRow::status`]: `"ok"`, `"invalid"` or `"failed"` (nothing measured; `error`
    /// says why).
    pub status: &'static str,
    pub valid: bool,
    /// Why the point is invalid ([`PointRow::invalid_reason`], as `report --columns
    /// conc,error` says it: "server fell behind …"); `null` when valid. A point stored without
    /// a reason (before schema version 4) says so.
    pub invalid_reason: Option<&'a str>,
    pub frontier: bool,
    /// Invalid only by AgentX's duration rule (a replay under 900 s,
    /// [`inferbench_core::summary::agentic::only_short_replay`]): drawn on its group's
    /// `preview_frontier`, never on a valid frontier.
    pub preview: bool,
    /// From InferenceX's public database dump (`source_kind` `inferencex-dump`), not a local
    /// run.
    pub public: bool,
    pub point_id: i64,
    pub run_id: i64,
    /// The x metric's value, `null` when unknown.
    pub x: Option<f64>,
    /// The y metric's value, `null` when unknown.
    pub y: Option<f64>,
    /// Input throughput, tok/s/GPU (the tooltip's), `null` when unknown.
    pub input_tput_per_gpu: Option<f64>,
    /// Output throughput, tok/s/GPU (the tooltip's), `null` when unknown.
    pub output_tput_per_gpu: Option<f64>,
    /// Every metric, with `metrics=all` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<&'a std::collections::BTreeMap<String, f64>>,
    /// [`PointRow::adaptive`]: the point ran under `sweep --adaptive`'s early stop (issue
    /// 43); absent for a fixed-protocol point.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
    /// [`PointRow::prompts_used`]: the profile prompts an adaptive point sent; absent when not
    /// adaptive or unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_used: Option<i64>,
}

impl<'a> ChartPoint<'a> {
    /// The point of row `r` on axes `x`, `y`.
    pub fn new(r: &'a PointRow, x: &str, y: &str, with_metrics: bool) -> ChartPoint<'a> {
        ChartPoint {
            group: r.group(),
            parallelism: r.parallelism(),
            identity: r.identity(),
            conc: r.conc,
            date: &r.date,
            batch: &r.batch,
            batch_label: inferbench_core::text::batch_label(&r.batch),
            error: r.error.as_deref(),
            status: r.status(),
            valid: r.shown_valid(),
            // One status (issue 39, fresh tester's finding 1): a failed point's cause is its
            // `error`, never an invalid reason.
            invalid_reason: match (r.status(), r.shown_invalid_reason()) {
                ("invalid", Some(why)) => Some(why),
                ("invalid", None) => Some(NO_REASON_STORED),
                _ => None,
            },
            frontier: r.frontier,
            preview: is_preview(r),
            public: r.source_kind == inferbench_store::query::PUBLIC_SOURCE,
            point_id: r.point_id,
            run_id: r.run_id,
            x: r.get(x).filter(|v| v.is_finite()),
            y: r.get(y).filter(|v| v.is_finite()),
            input_tput_per_gpu: r.get("input_tput_per_gpu").filter(|v| v.is_finite()),
            output_tput_per_gpu: r.get("output_tput_per_gpu").filter(|v| v.is_finite()),
            metrics: with_metrics.then_some(&r.metrics),
            adaptive: r.adaptive,
            prompts_used: r.prompts_used,
        }
    }
}

/// A group of [`points`]: its name and frontier knots `[x, y]` sorted by x.
#[derive(Debug, serde::Serialize)]
pub struct ChartGroup {
    /// [`PointRow::group`].
    pub name: String,
    /// InferenceX's published points (an imported dump), not a local run.
    pub public: bool,
    /// The group's frontier points' `[x, y]`, by x.
    pub frontier: Vec<[f64; 2]>,
    /// The frontier of the group's preview points alone ([`ChartPoint::preview`], not on
    /// `frontier`), `[x, y]` by x: drawn dashed as "preview: under 900 s"; empty when none.
    pub preview_frontier: Vec<[f64; 2]>,
}

/// Whether row `r` is a preview: invalid only by AgentX's duration rule ([`ChartPoint::preview`]).
pub fn is_preview(r: &PointRow) -> bool {
    !r.valid
        && r.error.is_none()
        && (r.invalid_reason.as_deref())
            .is_some_and(inferbench_core::summary::agentic::only_short_replay)
}

/// The answer of [`points`].
#[derive(Debug, serde::Serialize)]
pub struct PointsAnswer<'a> {
    /// [`metric_json`] of x.
    pub x: Option<Value>,
    /// [`metric_json`] of y.
    pub y: Option<Value>,
    /// Number of points.
    pub count: usize,
    /// Groups in the points' order.
    pub groups: Vec<ChartGroup>,
    /// The points.
    pub points: Vec<ChartPoint<'a>>,
    /// Why no point matched, when a filter matches nothing by itself (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a cost or power y (`usd_per_m_*`, `tokens_per_usd_*`, `tok_s_per_mw*`,
    /// `j_per_token*`): per hardware of the points, the $/GPU-hour and all-in kW/GPU it assumes
    /// (`h100 $1.30/GPU-hour (hyperscaler)`, `… 1.37 kW/GPU all-in`; yours: `(custom)`,
    /// `(yours)`), as `report` footnotes them ([`inferbench_views::report::assumption_parts`]);
    /// absent for other metrics.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    /// How many selected points `clip=true` dropped (InferenceX's chart clipping: above $5 per
    /// million tokens on a built-in cost y, a TTFT x above 60 s); absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub clipped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl<'a> PointsAnswer<'a> {
    /// The answer for `rows` (frontier already marked) on axes `x`, `y`.
    pub fn new(rows: &'a [PointRow], x: &str, y: &str, with_metrics: bool) -> PointsAnswer<'a> {
        let points: Vec<ChartPoint> = rows
            .iter()
            .map(|r| ChartPoint::new(r, x, y, with_metrics))
            .collect();
        let mut groups: Vec<ChartGroup> = Vec::new();
        for p in &points {
            if groups.last().is_none_or(|g| g.name != p.group) {
                groups.push(ChartGroup {
                    name: p.group.clone(),
                    public: p.public,
                    frontier: Vec::new(),
                    preview_frontier: Vec::new(),
                });
            }
            if let (true, Some(a), Some(b), Some(g)) = (p.frontier, p.x, p.y, groups.last_mut()) {
                g.frontier.push([a, b]);
            }
        }
        // Previews make a frontier of their own (issue 42: `quickstart --agentic`'s four invalid
        // points drew no line), never mixed with the valid one.
        let previews: Vec<(String, &PointRow)> = rows
            .iter()
            .filter(|r| is_preview(r) && !r.frontier)
            .map(|r| (r.group(), r))
            .collect();
        for g in &mut groups {
            g.frontier.sort_by(|a, b| a[0].total_cmp(&b[0]));
            if previews.is_empty() {
                continue;
            }
            let mine: Vec<&PointRow> = (previews.iter())
                .filter(|(name, _)| *name == g.name)
                .map(|(_, r)| *r)
                .collect();
            g.preview_frontier = inferbench_store::compare::frontier_knots(&mine, x, y)
                .into_iter()
                .map(|(a, b)| [a, b])
                .collect();
        }
        PointsAnswer {
            x: metric_json(x),
            y: metric_json(y),
            count: rows.len(),
            groups,
            points,
            note: None,
            assumptions: Vec::new(),
            clipped: 0,
        }
    }
}

/// `GET /api/v1/points.csv[?columns=C1,C2…|all]&…`: the selected rows as `inferbench report
/// --format csv` prints them with the same filters (full precision), as a download: `report`'s
/// default columns, or those `columns=` names as `report --columns` takes them (any stored or
/// derived metric and the identity columns; `all`: the default columns then every metric a
/// selected point holds), one rule for both ([`inferbench_views::report::chosen_columns`]). An
/// unknown column is a 400 naming it.
pub async fn points_csv(
    State(state): State<AppState>,
    Query(mut pairs): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let asked: Vec<String> = match pairs.iter().rposition(|(k, _)| k == "columns") {
        Some(i) => {
            let v = pairs.remove(i).1;
            if pairs.iter().any(|(k, _)| k == "columns") {
                return Err(ApiError::bad_request(
                    "`columns`: given more than once (one comma-separated list)",
                ));
            }
            (v.split(','))
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        }
        None => Vec::new(),
    };
    let mut q = parse_points_query(&pairs)?;
    q.filter.all_metrics = true;
    let (rows, x, _) = state
        .with_store(move |s| select(s, &q, false, false))
        .await?;
    for c in &asked {
        inferbench_views::report::check_column_as("`columns`:", c, &rows)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
    }
    let cols = inferbench_views::report::chosen_columns(&rows, Some(&x), &asked);
    let body =
        inferbench_views::report::render(&rows, &cols, inferbench_views::report::Format::Csv);
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"inferbench-points.csv\"",
            ),
        ],
        body,
    )
        .into_response())
}

/// Width × height of the charts `/api/v1/chart.{png,svg}` draw, pixels.
pub const CHART_SIZE: (u32, u32) = (1600, 1000);

/// The title of an exported chart: its models, then its scenario(s) (`ISL/OSL 1024/1024` for a
/// fixed-length sequence, the scenario's name otherwise), joined by ` · `; each list in first
/// seen order, comma-separated.
pub fn chart_title(rows: &[PointRow]) -> String {
    let mut models: Vec<&str> = Vec::new();
    let mut scenarios: Vec<String> = Vec::new();
    for r in rows {
        if !models.contains(&r.model.as_str()) {
            models.push(&r.model);
        }
        let sc = if r.scenario == AGENTIC_SCENARIO || r.isl <= 0 {
            r.scenario.clone()
        } else {
            format!("ISL/OSL {}/{}", r.isl, r.osl)
        };
        if !scenarios.contains(&sc) {
            scenarios.push(sc);
        }
    }
    format!("{} · {}", models.join(", "), scenarios.join(", "))
}

/// The source line of an exported chart: `source: DATABASE · DATE–DATE · filters: … ·
/// inferbench VERSION` (the dates those of the drawn rows; `filters: none` when none was
/// given; the include/latest flags named when set).
pub fn chart_source(database: &str, rows: &[PointRow], q: &PointsQuery) -> String {
    let first = rows.iter().map(|r| r.date.as_str()).min().unwrap_or("");
    let last = rows.iter().map(|r| r.date.as_str()).max().unwrap_or("");
    let mut filters = q.filter_specs.clone();
    if let Some(d) = &q.filter.since {
        filters.push(format!("since={d}"));
    }
    if let Some(d) = &q.filter.until {
        filters.push(format!("until={d}"));
    }
    for (on, name) in [
        (q.filter.include_invalid, "include_invalid"),
        (q.filter.include_failed, "include_failed"),
        (q.frontier_only, "frontier_only"),
        (q.latest_only, "latest_only"),
    ] {
        if on {
            filters.push(name.to_string());
        }
    }
    let filters = if filters.is_empty() {
        "none".to_string()
    } else {
        filters.join(" ")
    };
    format!(
        "source: {database} · {first} – {last} · filters: {filters} · inferbench {}",
        env!("CARGO_PKG_VERSION")
    )
}

/// `GET /api/v1/chart.png` (and [`chart_svg`]): the Inference page's chart for the same
/// query as `/api/v1/points` (filters, `x`, `y`, include flags, custom cost), drawn by the one
/// renderer `inferbench plot` uses (`inferbench_views::plot::render`) at [`CHART_SIZE`]: title
/// ([`chart_title`]), axis labels with units, legend, concurrency labels and a source line
/// ([`chart_source`]; under `serve --redact` the database and batch names are redacted). The PNG
/// is RGB without alpha. 400 for a bad parameter or when no point has both metrics.
pub async fn chart_png(
    State(state): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    chart(state, pairs, inferbench_views::plot::ChartFormat::Png).await
}

/// `GET /api/v1/chart.svg`: the SVG twin of [`chart_png`] (same query, same drawing).
pub async fn chart_svg(
    State(state): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    chart(state, pairs, inferbench_views::plot::ChartFormat::Svg).await
}

async fn chart(
    state: AppState,
    pairs: Vec<(String, String)>,
    format: inferbench_views::plot::ChartFormat,
) -> Result<Response, ApiError> {
    use inferbench_views::plot::{render, ChartFormat, PlotSpec};
    let q = parse_points_query(&pairs)?;
    let redacted = state.redact;
    let (bytes, _) = state
        .with_store(move |s| {
            let (rows, x, _) = select(s, &q, true, true)?;
            // The stored batch names too, as every answer's text ([`crate::redact::Batches`]).
            let batches = if redacted {
                crate::redact::Batches::of(s).map_err(|e| ApiError::internal(e.to_string()))?
            } else {
                crate::redact::Batches::default()
            };
            let shown = |t: &str| {
                if redacted {
                    batches.text(t)
                } else {
                    t.to_string()
                }
            };
            let spec = PlotSpec {
                x,
                y: q.y.clone(),
                title: chart_title(&rows),
                width: CHART_SIZE.0,
                height: CHART_SIZE.1,
                frontier_only: q.frontier_only,
                // Clipped above when asked or by default (`clip=false` keeps every point).
                clip: false,
                include_invalid: q.filter.include_invalid,
                source: shown(&chart_source(s.location(), &rows, &q)),
            };
            render(&rows, &spec, format).map_err(|e| ApiError::bad_request(e.to_string()))
        })
        .await?;
    let (ctype, file) = match format {
        ChartFormat::Png => ("image/png", "chart.png"),
        ChartFormat::Svg => ("image/svg+xml", "chart.svg"),
    };
    let disposition = format!("inline; filename=\"inferbench-{file}\"");
    Ok((
        [
            (header::CONTENT_TYPE, ctype.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'".to_string(),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `GET /api/v1/overview`: what the database holds, for the landing page: `{"models":
/// [{"name", "points"}…], "hardware": [{"name", "points"}…]` (by name; successful points, valid
/// or not), `"points"` (successful), `"failed"`, `"runs"` (distinct runs of any point),
/// `"batches"`, `"evals"`, `"first_date"`, `"last_date"` (`YYYY-MM-DD` over every point, `null`
/// when none), `"latest_batch"`: `{"batch", "batch_label", "date", "points", "models": […],
/// "run_id"}` of the newest point's batch (by date, then its run's start time; `run_id` that
/// point's run), or `null`}. Takes no parameter (any is a 400).
pub async fn overview(
    State(state): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    if let Some((k, _)) = pairs.first() {
        return Err(ApiError::bad_request(format!(
            "`{k}`: unknown parameter (overview takes none)"
        )));
    }
    let (rows, counts) = state
        .with_store(|s| {
            let f = Filter {
                include_failed: true,
                include_invalid: true,
                only_metrics: Some(Vec::new()),
                ..Filter::default()
            };
            Ok((
                s.points(&f, &CostOptions::default()).map_err(db_err)?,
                s.table_counts().map_err(db_err)?,
            ))
        })
        .await?;
    Ok(Json(overview_json(&rows, &counts)))
}

/// The answer of [`overview`] for `rows` (every point, failed and invalid included) and the
/// store's table counts.
pub fn overview_json(rows: &[PointRow], counts: &[(String, i64)]) -> Value {
    use std::collections::{BTreeMap, BTreeSet};
    let ok: Vec<&PointRow> = rows.iter().filter(|r| r.error.is_none()).collect();
    let tally = |key: fn(&PointRow) -> &str| -> Vec<Value> {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &ok {
            *m.entry(key(r)).or_default() += 1;
        }
        m.into_iter()
            .map(|(name, n)| json!({"name": name, "points": n}))
            .collect()
    };
    let runs: BTreeSet<i64> = rows.iter().map(|r| r.run_id).collect();
    let batches: BTreeSet<&str> = rows.iter().map(|r| r.batch.as_str()).collect();
    let newest = rows.iter().max_by(|a, b| {
        (a.date.as_str(), a.start_unix.unwrap_or(f64::NEG_INFINITY))
            .partial_cmp(&(b.date.as_str(), b.start_unix.unwrap_or(f64::NEG_INFINITY)))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let latest = newest.map(|n| {
        let of_batch: Vec<&PointRow> = rows.iter().filter(|r| r.batch == n.batch).collect();
        let models: BTreeSet<&str> = of_batch.iter().map(|r| r.model.as_str()).collect();
        json!({"batch": n.batch, "batch_label": inferbench_core::text::batch_label(&n.batch),
               "date": n.date, "points": of_batch.len(), "models": models, "run_id": n.run_id})
    });
    let evals = counts.iter().find(|(t, _)| t == "evals").map_or(0, |c| c.1);
    json!({
        "models": tally(|r| &r.model),
        "hardware": tally(|r| &r.hardware),
        "points": ok.len(),
        "failed": rows.len() - ok.len(),
        "runs": runs.len(),
        "batches": batches.len(),
        "evals": evals,
        "first_date": rows.iter().map(|r| r.date.as_str()).min(),
        "last_date": rows.iter().map(|r| r.date.as_str()).max(),
        "latest_batch": latest,
    })
}

/// A path id (`/runs/{id}`, `/points/{id}`): a positive integer, else 400.
fn path_id(what: &str, raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|&i| i > 0).ok_or_else(|| {
        ApiError::bad_request(format!("{what} id `{raw}`: expected a positive integer"))
    })
}

fn not_found(what: String) -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        message: what,
    }
}

fn db_err(e: inferbench_store::StoreError) -> ApiError {
    ApiError::internal(e.to_string())
}

/// `GET /api/v1/runs/{id}`: `{"run": RunInfo, "points": [row…] (as in `points`, every
/// metric; failed and invalid points included), "batch_points": [row…] (every point of the
/// run's batch: a sweep's other concurrencies), "artifacts": [{"name", "size", "url"}],
/// "evals": [EvalRow…] (the run's accuracy evals, as in `/api/v1/evals`); each point also has
/// `gpu_seconds` (GPU·s its runner recorded, null when unknown), "sessions":
/// [{"point_id", "conc", "t0_ns", "sessions": [tree…], "unattributed"}…] (one entry per
/// agentic point of the run, its AgentX session trees from the stored request records:
/// [`crate::sessions::session_trees`]; empty for other runs)}`; 404
/// when there is no such run. `frontier` in both lists: the batch's own frontier of tok/s/GPU
/// against `x` (a metric as in `/api/v1/options`): median interactivity, or AgentX's p90
/// E2E-normalized interactivity for an agentic batch.
pub async fn run(
    State(state): State<AppState>,
    axum::extract::Path(raw): axum::extract::Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id("run", &raw)?;
    let redacted = state.redact;
    let cache = state.sessions.clone();
    let (info, rows, files) = state
        .with_store(move |s| {
            let info = s
                .run_info(id)
                .map_err(db_err)?
                .ok_or_else(|| not_found(format!("no run {id}")))?;
            let rows = s.run_points(id, &CostOptions::default()).map_err(db_err)?;
            let files = s.run_artifacts(id).map_err(db_err)?;
            let evals = s.run_evals(id).map_err(db_err)?;
            let mut f = Filter {
                include_failed: true,
                include_invalid: true,
                ..Filter::default()
            };
            // The batch as filters match it (its shown form under --redact), then exactly
            // this run's batch (a filter also matches other batches ending alike).
            let shown = if redacted {
                crate::redact::batch(&info.batch)
            } else {
                info.batch.clone()
            };
            f.add(&format!("batch={shown}"))
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let mut batch = s.points(&f, &CostOptions::default()).map_err(db_err)?;
            batch.retain(|r| r.batch == info.batch);
            // The AgentX explorer's session trees, from each agentic point's stored records:
            // built once per point and records digest (issue 42: decompressed and parsed on
            // every call before), then from the cache.
            let mut sessions = Vec::new();
            for r in rows.iter().filter(|r| r.scenario == AGENTIC_SCENARIO) {
                sessions.push(session_trees_cached(s, &cache, r.point_id, r.conc)?);
            }
            Ok((info, (rows, batch), (files, evals, sessions)))
        })
        .await?;
    let (files, evals, sessions) = files;
    let (mut rows, mut batch) = rows;
    // An agentic batch's frontier runs over AgentX's North-Star x, as on the Inference page
    // (trial 26: the Run page showed median interactivity for agentic points).
    let x = inferbench_views::analysis::default_x(&batch);
    // Invalid points never on it, as on every frontier (issue 39). The run's points are marked
    // as their batch marks them (trial of issue 39 §5: a run's point was on the frontier of
    // the run's own points and off the batch's in the same answer); one outside the batch
    // list is marked among the run's points.
    inferbench_views::analysis::mark_frontier(&mut rows, x, "tput_per_gpu", false);
    inferbench_views::analysis::mark_frontier(&mut batch, x, "tput_per_gpu", false);
    let on_batch: std::collections::BTreeMap<i64, bool> =
        batch.iter().map(|b| (b.point_id, b.frontier)).collect();
    for r in &mut rows {
        if let Some(&f) = on_batch.get(&r.point_id) {
            r.frontier = f;
        }
    }
    let files: Vec<Value> = files
        .iter()
        .map(|a| {
            json!({"name": a.name, "size": a.size,
                   "url": format!("/api/v1/runs/{id}/artifacts/{}", percent_encode(&a.name))})
        })
        .collect();
    // Each point with the GPU-seconds it cost (issue 42: the run page shows them per point;
    // null when unknown, as `/api/v1/history` gives them per group).
    let with_gpu_seconds = |rows: &[PointRow]| -> Result<Value, ApiError> {
        let mut v = serde_json::to_value(PointsAnswer::new(rows, x, "tput_per_gpu", true).points)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        for (p, r) in v.as_array_mut().into_iter().flatten().zip(rows) {
            p["gpu_seconds"] = json!(r.gpu_seconds);
        }
        Ok(v)
    };
    let (pts, sib) = (with_gpu_seconds(&rows)?, with_gpu_seconds(&batch)?);
    Ok(Json(
        json!({"run": crate::analysis::with_batch_label(&info), "x": metric_json(x), "points": pts,
               "batch_points": sib, "artifacts": files, "evals": evals,
               "sessions": sessions}),
    ))
}

/// Point `point_id`'s AgentX session trees ([`crate::sessions::session_trees`]) from `cache`
/// when it holds them for the stored records' digest and `conc`, else built from the records
/// (decompressed and parsed) and kept there; a point without records has no digest and gets
/// the trees of none, unbuilt and uncached.
fn session_trees_cached(
    s: &mut Store,
    cache: &std::sync::Mutex<crate::sessions::SessionCache>,
    point_id: i64,
    conc: i64,
) -> Result<Value, ApiError> {
    let Some(digest) = s.point_records_digest(point_id).map_err(db_err)? else {
        return Ok(crate::sessions::session_trees(point_id, conc, &[]));
    };
    let lock = || cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = lock().get(point_id, &digest, conc) {
        return Ok((*v).clone());
    }
    let bytes = s.point_records(point_id).map_err(db_err)?;
    let records = parse_records(bytes.as_deref().unwrap_or_default()).0;
    let trees = crate::sessions::session_trees(point_id, conc, &records);
    lock().put(point_id, digest, conc, std::sync::Arc::new(trees.clone()));
    Ok(trees)
}

/// Percent-encodes everything but unreserved URL characters (RFC 3986 §2.3).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `GET /api/v1/runs/{id}/artifacts/{name}`: a file kept with the run, as a download
/// (`text/plain` for logs, JSON, CSV and JSONL, else `application/octet-stream`); 404 when the
/// run has no file of that name. Names are looked up in the database, never on disk.
pub async fn artifact(
    State(state): State<AppState>,
    axum::extract::Path((raw, name)): axum::extract::Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id = path_id("run", &raw)?;
    let lookup = name.clone();
    let bytes = state
        .with_store(move |s| s.run_artifact(id, &lookup).map_err(db_err))
        .await?
        .ok_or_else(|| not_found(format!("run {id} has no file `{name}`")))?;
    let text = [".log", ".json", ".jsonl", ".csv", ".txt", ".yaml", ".yml"]
        .iter()
        .any(|e| name.ends_with(e));
    let ctype = if text {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    };
    let disposition = format!("inline; filename=\"{}\"", percent_encode(&name));
    Ok((
        [
            (header::CONTENT_TYPE, ctype.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; sandbox".to_string(),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// Summary of one latency sample in ms: count, p50/p90/p99, min, max, a 20-bin histogram of
/// p0–p99 (`[[lo, hi, count]…]`, equal widths from min to p99; one bin when those are equal) and
/// `overflow`, the values above p99 (`{"from": p99, "to": max, "count"}`, `null` when none), so
/// that one stalled interval does not squeeze every other into the first bar (issue 39: ITL
/// 0–1,600 ms with everything in the first bar). The bins' counts and the overflow's add up to
/// `count`.
pub fn distribution(mut v: Vec<f64>) -> Value {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let (Some(&lo), Some(&hi)) = (v.first(), v.last()) else {
        return json!({"count": 0, "unit": "ms"});
    };
    let p = |q: f64| inferbench_core::metrics::percentile_sorted(&v, q);
    let top = p(99.0).unwrap_or(hi).clamp(lo, hi);
    let bins = if top > lo { 20 } else { 1 };
    let w = (top - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    let mut over = 0u64;
    for &x in &v {
        if x > top {
            over += 1;
            continue;
        }
        let b = if w > 0.0 {
            (((x - lo) / w) as usize).min(bins - 1)
        } else {
            0
        };
        counts[b] += 1;
    }
    let hist: Vec<Value> = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| json!([lo + w * i as f64, lo + w * (i + 1) as f64, c]))
        .collect();
    let overflow = (over > 0).then(|| json!({"from": top, "to": hi, "count": over}));
    json!({"count": v.len(), "unit": "ms", "min": lo, "max": hi,
           "p50": p(50.0), "p90": p(90.0), "p99": p(99.0), "histogram": hist,
           "overflow": overflow})
}

/// A stored records file's request records (one JSON object a line; blank lines skipped) and
/// the number of lines that are not request records.
fn parse_records(bytes: &[u8]) -> (Vec<inferbench_core::record::RequestRecord>, usize) {
    let mut records = Vec::new();
    let mut unreadable = 0usize;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<inferbench_core::record::RequestRecord>(line) {
            Ok(r) => records.push(r),
            Err(_) => unreadable += 1,
        }
    }
    (records, unreadable)
}

/// `GET /api/v1/points/{id}/latencies`: TTFT, TPOT, ITL and E2EL distributions ([`distribution`],
/// ms) over the point's counted requests (profile phase, successful:
/// `inferbench_core::metrics::counts`), plus `records` (lines read) and `unreadable` (lines that
/// are not request records); 404 when the point kept no records.
pub async fn latencies(
    State(state): State<AppState>,
    axum::extract::Path(raw): axum::extract::Path<String>,
) -> Result<Json<Value>, ApiError> {
    use inferbench_core::metrics::{sample_ms, Metric};
    let id = path_id("point", &raw)?;
    let bytes = state
        .with_store(move |s| s.point_records(id).map_err(db_err))
        .await?
        .ok_or_else(|| not_found(format!("point {id} has no stored request records")))?;
    let (records, unreadable) = parse_records(&bytes);
    Ok(Json(json!({
        "point_id": id,
        "records": records.len() + unreadable,
        "unreadable": unreadable,
        "ttft": distribution(sample_ms(&records, Metric::Ttft)),
        "tpot": distribution(sample_ms(&records, Metric::Tpot)),
        "itl": distribution(sample_ms(&records, Metric::Itl)),
        "e2el": distribution(sample_ms(&records, Metric::E2el)),
    })))
}

/// `GET /api/v1/points/{id}/power`: `{"point_id", "samples": [{"gpu", "t_unix", "power_w"}…]}`
/// by GPU then time (empty when the point has no power.csv).
pub async fn power(
    State(state): State<AppState>,
    axum::extract::Path(raw): axum::extract::Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id("point", &raw)?;
    let samples = state
        .with_store(move |s| s.point_power(id).map_err(db_err))
        .await?;
    Ok(Json(json!({"point_id": id, "samples": samples})))
}

/// `GET /api/v1/points/{id}/timeline`: why the point sits where it does (issue 42): the
/// server's running, waiting, KV-cache usage, prefix-cache hit rate and preemptions beside the
/// client's requests in flight on one time axis (s since the profile's start), the profile
/// window and the warmup on it, the client's self-check and the point's validity verdict
/// ([`crate::timeline::point_timeline`]: the answer's fields). 404 when there is no such point;
/// a point without records or scrapes has empty series.
pub async fn timeline(
    State(state): State<AppState>,
    axum::extract::Path(raw): axum::extract::Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id("point", &raw)?;
    let (row, bytes, series, summary) = state
        .with_store(move |s| {
            let row = s
                .point_row(id, &CostOptions::default())
                .map_err(db_err)?
                .ok_or_else(|| not_found(format!("no point {id}")))?;
            let bytes = s.point_records(id).map_err(db_err)?;
            let series = s.point_server_metrics(id).map_err(db_err)?;
            // The run's summary.json (our runs: one point each); none for imports, or when
            // the run holds several points (whose summary it would not be).
            let one = s
                .run_points(row.run_id, &CostOptions::default())
                .map_err(db_err)?;
            let summary = if one.len() == 1 {
                s.run_artifact(row.run_id, "summary.json").map_err(db_err)?
            } else {
                None
            };
            Ok((row, bytes, series, summary))
        })
        .await?;
    let records = parse_records(bytes.as_deref().unwrap_or_default()).0;
    let summary: Option<Value> = summary.and_then(|b| serde_json::from_slice(&b).ok());
    Ok(Json(crate::timeline::point_timeline(
        &row,
        &records,
        &series,
        summary.as_ref(),
    )))
}

/// Whether a Prometheus series is a gauge worth a timeline (queue depths, KV-cache use): not a
/// counter (`_total`), histogram or summary part (`_bucket`, `_sum`, `_count`), nor an `_info`.
fn is_gauge(name: &str) -> bool {
    !["_total", "_bucket", "_sum", "_count", "_info", "_created"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// The unit of a server-metric gauge by its name (vLLM's and SGLang's, the sim's), for the
/// chart's axis: `None` where the name says nothing of it.
pub fn gauge_unit(name: &str) -> Option<&'static str> {
    let n = name.rsplit(':').next().unwrap_or(name);
    Some(if n == "time_scale" {
        "modelled s per wall-clock s"
    } else if n.ends_with("_perc") || n == "token_usage" || n.ends_with("hit_rate") {
        "fraction (1 = 100 %)"
    } else if n.starts_with("num_requests_") || n.ends_with("_reqs") {
        "requests"
    } else if n.ends_with("_seconds") {
        "s"
    } else if n.ends_with("_bytes") {
        "bytes"
    } else if n.ends_with("throughput") {
        "tok/s"
    } else if n.ends_with("_tokens") || n == "num_used_tokens" {
        "tokens"
    } else {
        return None;
    })
}

/// Server-metric gauges that are settings of the server, not its state over the run (the sim's
/// `--time-scale`): shown once with their value, never as a time series.
pub const SETTING_GAUGES: &[&str] = &["inferbench_sim:time_scale"];

/// `GET /api/v1/points/{id}/server_metrics`: the point's server-metric gauges over the run
/// (requests running and waiting, KV-cache usage, …; counters and histograms are left out),
/// `{"point_id", "series": [{"name", "labels", "unit", "samples": [[unix s, value]…]}…],
/// "settings": [{"name", "labels", "unit", "value"}…]}`: `unit` by the name ([`gauge_unit`],
/// `null` when unknown); settings ([`SETTING_GAUGES`]: the sim's `time_scale`) are listed with
/// their last value instead of as series (issue 39: drawn as a flat time series).
pub async fn server_metrics(
    State(state): State<AppState>,
    axum::extract::Path(raw): axum::extract::Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id("point", &raw)?;
    let mut series = state
        .with_store(move |s| s.point_server_metrics(id).map_err(db_err))
        .await?;
    series.retain(|s| is_gauge(&s.name));
    let (settings, series): (Vec<_>, Vec<_>) = series
        .into_iter()
        .partition(|s| SETTING_GAUGES.contains(&s.name.as_str()));
    let series: Vec<Value> = (series.iter())
        .map(|s| {
            json!({"name": s.name, "labels": s.labels, "unit": gauge_unit(&s.name),
                   "samples": s.samples})
        })
        .collect();
    let settings: Vec<Value> = (settings.iter())
        .map(|s| {
            json!({"name": s.name, "labels": s.labels, "unit": gauge_unit(&s.name),
                   "value": s.samples.last().map(|p| p[1])})
        })
        .collect();
    Ok(Json(
        json!({"point_id": id, "series": series, "settings": settings}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39: 99 intervals of 10–20 ms and one stall of 1,600 ms drew 0–1,600 ms with
    /// everything in the first bar. The bins now cover p0–p99; the stall is the overflow.
    #[test]
    fn histogram_covers_p0_to_p99_with_an_overflow_bin() {
        let mut v: Vec<f64> = (0..99).map(|i| 10.0 + f64::from(i % 11)).collect();
        v.push(1600.0);
        let d = distribution(v);
        let p99 = d["p99"].as_f64().unwrap();
        // NumPy's linear p99: 20 + 0.01 × (1,600 − 20) = 35.8.
        assert!((p99 - 35.8).abs() < 1e-9, "{p99}");
        let bins = d["histogram"].as_array().unwrap();
        assert_eq!(bins.len(), 20);
        assert_eq!(bins[0][0], json!(10.0));
        assert_eq!(bins[19][1].as_f64().unwrap(), p99);
        let counts: Vec<u64> = bins.iter().map(|b| b[2].as_u64().unwrap()).collect();
        // 10 … 20 ms (9 each) over bins of (35.8 − 10) / 20 = 1.29 ms: at most two values a
        // bin, where the old 0–1,600 ms bins put all 99 in the first.
        assert_eq!(
            counts,
            [18, 9, 9, 18, 9, 9, 18, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(counts.iter().sum::<u64>(), 99);
        assert_eq!(
            d["overflow"],
            json!({"from": p99, "to": 1600.0, "count": 1})
        );
    }

    /// Issue 43: a point of `sweep --adaptive` carries `adaptive` and `prompts_used` in the
    /// API's point JSON; a fixed-protocol point's JSON has neither key (as before).
    #[test]
    fn an_adaptive_point_says_how_many_prompts_it_used() {
        let adaptive = PointRow {
            conc: 64,
            adaptive: true,
            prompts_used: Some(224),
            ..PointRow::default()
        };
        let fixed = PointRow {
            conc: 64,
            ..PointRow::default()
        };
        let v = serde_json::to_value(ChartPoint::new(&adaptive, "x", "y", false)).unwrap();
        assert_eq!(
            (&v["adaptive"], &v["prompts_used"]),
            (&json!(true), &json!(224))
        );
        let v = serde_json::to_value(ChartPoint::new(&fixed, "x", "y", false)).unwrap();
        assert!(
            v.get("adaptive").is_none() && v.get("prompts_used").is_none(),
            "{v}"
        );
    }
}
