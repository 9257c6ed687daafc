//! The Compare and History endpoints: the same analyses as `inferbench compare` and
//! `inferbench report --history-at` (`inferbench_store::compare`), as JSON for the dashboard's
//! Compare and History pages. Common filters, `x`, `y`, `since`/`until`, `gpu_hour_cost` and
//! `gpu_kw` are those of `/api/v1/points` ([`crate::api::parse_points_query`]).

use axum::extract::{Query, State};
use axum::Json;
use inferbench_store::{compare, Filter};
use serde_json::{json, Value};

use crate::api::{parse_points_query, ApiError};
use crate::AppState;

/// Removes the last `key` from `pairs` and returns its value.
fn take(pairs: &mut Vec<(String, String)>, key: &str) -> Option<String> {
    let i = pairs.iter().rposition(|(k, _)| k == key)?;
    let v = pairs.remove(i).1;
    pairs.retain(|(k, _)| k != key);
    Some(v)
}

/// `KEY=VALUE[|VALUE…]` parts of a side, comma-separated (`hw=h200,framework=sglang`), added to
/// `common`; a bad part is a 400 naming the side.
fn side(name: &str, spec: &str, common: &Filter) -> Result<Filter, ApiError> {
    let mut f = common.clone();
    let parts: Vec<&str> = spec.split(',').filter(|p| !p.trim().is_empty()).collect();
    if parts.is_empty() {
        return Err(ApiError::bad_request(format!(
            "`{name}={spec}`: expected KEY=VALUE[,KEY=VALUE…], e.g. {name}=hw=h200,framework=sglang"
        )));
    }
    for p in parts {
        f.add(p)
            .map_err(|e| ApiError::bad_request(format!("`{name}`: {e}")))?;
    }
    Ok(f)
}

/// The required `at` parameter ([`inferbench_views::analysis::At`], parsed as `report
/// --history-at` parses it: a number or `auto`), removed from `pairs`; `what` says in the 400
/// what the x is for.
fn required_at(
    pairs: &mut Vec<(String, String)>,
    what: &str,
) -> Result<inferbench_views::analysis::At, ApiError> {
    use inferbench_views::analysis::AUTO_AT_HELP;
    match take(pairs, "at") {
        Some(v) => v
            .parse()
            .map_err(|e: String| ApiError::bad_request(format!("`at={v}`: {e}"))),
        None => Err(ApiError::bad_request(format!(
            "`at` is required: the x (e.g. interactivity in tok/s/user) {what}, or {AUTO_AT_HELP}"
        ))),
    }
}

/// `at` as asked, or for `auto` the default x over the counted points of `rows`
/// ([`inferbench_views::analysis::resolve_at`], as `report --history-at auto`); NaN (`null` in
/// JSON, no value anywhere) when `auto` finds no frontier.
fn resolve_at(
    at: inferbench_views::analysis::At,
    rows: &[inferbench_store::PointRow],
    x: &str,
    y: &str,
    include_invalid: bool,
) -> f64 {
    inferbench_views::analysis::resolve_at(at, rows, x, y, include_invalid).unwrap_or(f64::NAN)
}

/// The points the common parameters select (filters, `x`, `y`, cost), with the x (default
/// median interactivity) and y they name, and a note on the filters when nothing matched.
async fn selected(state: &AppState, pairs: &[(String, String)]) -> Result<Selected, ApiError> {
    let q = parse_points_query(pairs)?;
    let include_invalid = q.filter.include_invalid;
    let (f, cost, specs) = (q.filter, q.cost, q.filter_specs);
    let (rows, hints) = state
        .with_store(move |s| {
            let rows = (s.points(&f, &cost)).map_err(|e| ApiError::internal(e.to_string()))?;
            let hints = if rows.is_empty() {
                unmatched(s, &specs)?
            } else {
                Vec::new()
            };
            Ok((rows, hints))
        })
        .await?;
    // The x `report` reads when none is given: the one rule (North-Star x for an all-agentic
    // selection).
    let x = (q.x.clone()).unwrap_or_else(|| inferbench_views::analysis::default_x(&rows).into());
    Ok(Selected {
        rows,
        x,
        y: q.y,
        include_invalid,
        note: (!hints.is_empty()).then(|| hints.join("; ")),
    })
}

/// What [`selected`] found.
struct Selected {
    rows: Vec<inferbench_store::PointRow>,
    x: String,
    y: String,
    /// `include_invalid=true`: invalid points count ([`inferbench_store::PointRow::counts`]).
    include_invalid: bool,
    /// When nothing matched: which filter matches nothing by itself, with the closest stored
    /// value (trial 22: History and TCO said nothing of `model=typo`).
    note: Option<String>,
}

fn number(key: &str, v: &str) -> Result<f64, ApiError> {
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(ApiError::bad_request(format!(
            "`{key}={v}`: expected a number"
        ))),
    }
}

/// `GET /api/v1/compare?a=SPEC&b=SPEC[&at=X1,X2…]&…`: y of side A and side B at matched x.
/// `a`, `b` (required): comma-separated filters of each side, added to the common ones.
/// `at`: target x values (default: the low end, middle and high end of the x range both
/// frontiers cover). Answer: `{"x", "y", "a", "b", "count_a", "count_b", "targets": [x…],
/// "rows": [{at, mean_a, n_a, mean_b, n_b, ratio_a_over_b, ci95_low, ci95_high}…] (as
/// `inferbench compare --json`), "frontier_a": [[x, y]…], "frontier_b": […]}` (each side's
/// frontier knots over all its points, sorted by x), "batches_a": [{"batch", "batch_label",
/// "knots": [[x, y]…]}…], "batches_b": […] (each batch's own frontier: a side's repeats are
/// its batches, and `rows` average these curves at each target), "note": null or why there
/// is nothing to compare}`. No overlap: `targets` and `rows` are empty and `note` says why, in
/// `inferbench compare`'s words (trial 17: a side matching nothing answered `count_a: 0`
/// with no word). As `inferbench compare`, invalid points are left out unless
/// `include_invalid=true`: `count_a`/`count_b` are the points counted, `invalid_a`/`invalid_b`
/// those left out, and a side left with none says so in `note` ("no valid point to compare
/// for …").
pub async fn compare(
    State(state): State<AppState>,
    Query(mut pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let need = |v: Option<String>, k: &str| {
        v.ok_or_else(|| {
            ApiError::bad_request(format!(
                "`{k}` is required: side {}'s filters, e.g. {k}=hw=h200,framework=sglang",
                k.to_uppercase()
            ))
        })
    };
    let a = need(take(&mut pairs, "a"), "a")?;
    let b = need(take(&mut pairs, "b"), "b")?;
    let at: Vec<f64> = match take(&mut pairs, "at") {
        None => Vec::new(),
        Some(v) => v
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| number("at", s))
            .collect::<Result<_, _>>()?,
    };
    let q = parse_points_query(&pairs)?;
    let (fa, fb) = (side("a", &a, &q.filter)?, side("b", &b, &q.filter)?);
    let y = q.y.clone();
    let cost = q.cost;
    let include_invalid = q.filter.include_invalid;
    // Every filter of both sides, shared ones first: what the hints look at.
    let specs: Vec<String> = (q.filter_specs.iter().cloned())
        .chain([&a, &b].into_iter().flat_map(|s| side_specs(s)))
        .collect();
    let (ra, rb, hints) = state
        .with_store(move |s| {
            let db = |e: inferbench_store::StoreError| ApiError::internal(e.to_string());
            let (ra, rb) = (
                s.points(&fa, &cost).map_err(db)?,
                s.points(&fb, &cost).map_err(db)?,
            );
            let hints = if !ra.iter().any(|r| r.counts(include_invalid))
                || !rb.iter().any(|r| r.counts(include_invalid))
            {
                unmatched(s, &specs)?
            } else {
                Vec::new()
            };
            Ok((ra, rb, hints))
        })
        .await?;
    // The one analysis `inferbench compare` runs (issue 39): invalid points do not count
    // unless asked (trial 24: the API compared three targets where the CLI found no valid
    // point).
    // The x `inferbench compare` reads when none is given (the one rule).
    let x = (q.x.clone()).unwrap_or_else(|| {
        let both: Vec<inferbench_store::PointRow> = ra.iter().chain(&rb).cloned().collect();
        inferbench_views::analysis::default_x(&both).into()
    });
    let c = inferbench_views::analysis::compare_sides(
        (ra, rb),
        (&a, &b),
        &x,
        &y,
        &at,
        include_invalid,
        compare::FilterSyntax::Query,
    );
    // A side that pools workloads or servers: refused as `inferbench compare` refuses it, by
    // the one check (a side that matches nothing is the answer's note, before any pooling).
    if let Some(why) = c.refused {
        return Err(ApiError::bad_request(why));
    }
    let (ra, rb, a_invalid, b_invalid, targets) = (c.a, c.b, c.a_invalid, c.b_invalid, c.targets);
    let pooled = || compare::pooled_workloads(&ra, &rb, &a, &b, compare::FilterSyntax::Query);
    let rows = c.rows;
    let sides = [
        ("A", &a, ra.len(), a_invalid),
        ("B", &b, rb.len(), b_invalid),
    ];
    let empty: Vec<String> = (sides.iter())
        .filter(|(_, _, n, _)| *n == 0)
        .map(|(side, f, _, invalid)| match invalid {
            0 => format!("{side} ({f})"),
            n => format!(
                "{side} ({f}: its {n} matching point(s) are invalid; include_invalid=true, the page's \"include invalid\", counts them)"
            ),
        })
        .collect();
    // Only invalid points where a side is empty: said as `inferbench compare` says it.
    let only_invalid = sides
        .iter()
        .any(|(_, _, n, invalid)| *n == 0 && *invalid > 0);
    // The other side of an empty one is drawn alone, unless it pools workloads: then its
    // frontier would mix them (trial 20: 200 with a mixed frontier here, 400 with both sides).
    let pooled_side = if empty.is_empty() { None } else { pooled() };
    let draw = pooled_side.is_none();
    let note = if only_invalid {
        let also = pooled_side.map_or(String::new(), |p| format!("; {p}"));
        Some(format!(
            "no valid point to compare for {}{also}",
            empty.join(" nor ")
        ))
    } else if !empty.is_empty() {
        // Which filter matches nothing, with the closest stored value (trial 22: the note
        // named the sides but not the `model=typo` shared by both).
        let why: String = hints.iter().map(|h| format!("; {h}")).collect();
        let also = pooled_side.map_or(String::new(), |p| format!("; {p}"));
        Some(format!(
            "no stored point matches {}{why}{also}",
            empty.join(" nor ")
        ))
    } else if rows.is_empty() {
        Some(format!(
            "the frontiers of A ({}) and B ({}) share no {x} range",
            inferbench_core::count(ra.len(), "point"),
            inferbench_core::count(rb.len(), "point"),
        ))
    } else {
        None
    };
    let knots = |rows: &[inferbench_store::PointRow]| {
        let all: Vec<&inferbench_store::PointRow> = rows.iter().filter(|_| draw).collect();
        compare::frontier_knots(&all, &x, &y)
            .into_iter()
            .map(|(x, y)| [x, y])
            .collect::<Vec<_>>()
    };
    // Each batch's own frontier: the curves the table's means average (trial 21: a chart of
    // the pooled frontier and a table of per-batch means seemed to disagree).
    let per_batch = |rows: &[inferbench_store::PointRow]| -> Vec<Value> {
        if !draw {
            return Vec::new();
        }
        compare::by_batch(rows)
            .into_iter()
            .map(|(batch, pts)| {
                let k: Vec<[f64; 2]> = compare::frontier_knots(&pts, &x, &y)
                    .into_iter()
                    .map(|(x, y)| [x, y])
                    .collect();
                json!({
                    "batch_label": inferbench_core::text::batch_label(&batch),
                    "batch": batch,
                    "knots": k,
                })
            })
            .collect()
    };
    Ok(Json(json!({
        "x": x,
        "y": y,
        "a": a,
        "b": b,
        "count_a": ra.len(),
        "count_b": rb.len(),
        "invalid_a": a_invalid,
        "invalid_b": b_invalid,
        "targets": targets,
        "rows": rows,
        "frontier_a": knots(&ra),
        "frontier_b": knots(&rb),
        "batches_a": per_batch(&ra),
        "batches_b": per_batch(&rb),
        "note": note,
    })))
}

/// The `KEY=VALUE` parts of a side's spec (`hw=h200,framework=sglang`).
fn side_specs(spec: &str) -> Vec<String> {
    (spec.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// For each of `specs` that matches no stored point by itself, a line saying so with the
/// closest stored value ([`inferbench_views::report::filter_hints`], as `/api/v1/points`
/// gives it), each distinct line once.
fn unmatched(s: &mut inferbench_store::Store, specs: &[String]) -> Result<Vec<String>, ApiError> {
    let mut hints = inferbench_views::report::filter_hints(s, specs, "")
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let mut seen = std::collections::HashSet::new();
    hints.retain(|h| seen.insert(h.clone()));
    Ok(hints)
}

/// `item` (a history point, an eval row: anything with a `batch`) as JSON with `batch_label`
/// beside `batch`: the batch as tables show it ([`inferbench_core::text::batch_label`]; trial
/// 21: the API and the History page gave absolute paths where tables show two components).
pub(crate) fn with_batch_label(item: &impl serde::Serialize) -> Value {
    let mut v = serde_json::to_value(item).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        let label = o
            .get("batch")
            .and_then(Value::as_str)
            .map(inferbench_core::text::batch_label);
        if let Some(l) = label {
            o.insert("batch_label".into(), Value::String(l));
        }
    }
    v
}

/// `GET /api/v1/history?at=X[&window=N][&threshold=F]&…`: per group, y at x = `at` for each
/// batch (its frontier interpolated there), dated by the batch's latest point, flagged against
/// the median of the `window` (default 3) previous values with the relative `threshold`
/// (default 0.05), as `inferbench report --history-at X` prints it: the same function,
/// [`inferbench_views::analysis::history_at`], so invalid points count only with
/// `include_invalid=true`. `at=auto`: [`inferbench_views::analysis::default_at`]. Answer:
/// `{"x", "y", "at", "window", "threshold", "include_invalid", "x_range": [lo, hi] | null,
/// "default_at", "groups": [{"name", "points": [{date, time_unix, batch, batch_label, value,
/// baseline, change, regression}…], "latest_regression": bool, "total", "invalid",
/// "invalid_reason", "x_range"}…]}`, groups in the store's order; `x_range` is the x extent of
/// the counted points' frontiers (`compare::x_span`; a group's own beside it),
/// `total`/`invalid` a group's points and its invalid ones (left out unless
/// `include_invalid=true`), `invalid_reason` why (the first stored reason, `; and N more
/// reasons` when they differ; null when none is invalid), `time_unix` the batch's latest run start (s) or null; "note": null, or
/// which filter matches nothing when no point matched. Each group also has `gpu_seconds`
/// (GPU·s its points' runner recorded, [`inferbench_views::analysis::gpu_seconds_of`], every
/// point whatever its validity; null when none recorded any) and `gpu_seconds_unknown` (its
/// points without a record), the figures `report` prints per group. `"frames"`: the replay
/// over time, `[{"date", "groups": [{"name", "frontier": [[x, y]…]}…]}…]`, one per date of the
/// counted points, oldest first, each group's frontier from its counted points dated up to
/// then ([`inferbench_views::analysis::replay_frames`]).
pub async fn history(
    State(state): State<AppState>,
    Query(mut pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let at = required_at(&mut pairs, "to follow over time")?;
    let window = match take(&mut pairs, "window") {
        None => 3,
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "`window={v}`: expected a positive whole number"
                )))
            }
        },
    };
    let threshold = match take(&mut pairs, "threshold") {
        None => 0.05,
        Some(v) => match number("threshold", &v)? {
            t if t >= 0.0 => t,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "`threshold={v}`: expected a number ≥ 0"
                )))
            }
        },
    };
    let Selected {
        rows,
        x,
        y,
        include_invalid,
        note,
    } = selected(&state, &pairs).await?;
    let at = resolve_at(at, &rows, &x, &y, include_invalid);
    // The one analysis `report --history-at` runs (issue 39: this route counted invalid
    // points, and `include_invalid=false` changed nothing).
    let h = inferbench_views::analysis::history_at(
        &rows,
        &x,
        &y,
        at,
        window,
        threshold,
        include_invalid,
    );
    let groups: Vec<Value> = (h.groups.iter())
        .map(|g| {
            let points: Vec<Value> = g.points.iter().map(with_batch_label).collect();
            json!({
                "name": g.name,
                "points": points,
                "latest_regression": g.points.last().is_some_and(|p| p.regression),
                "total": g.total,
                "invalid": g.invalid,
                "invalid_reason": g.invalid_reason,
                "x_range": g.x_range.map(|(lo, hi)| [lo, hi]),
                "gpu_seconds": g.gpu_seconds.total,
                "gpu_seconds_unknown": g.gpu_seconds.unknown,
            })
        })
        .collect();
    let x_range = h.x_range.map(|(lo, hi)| [lo, hi]);
    // The replay over time (issue 42): each date's frontiers, from the one analysis layer.
    let frames: Vec<Value> =
        inferbench_views::analysis::replay_frames(&rows, &x, &y, include_invalid)
            .into_iter()
            .map(|f| {
                let groups: Vec<Value> = (f.groups.iter())
                    .map(|(name, knots)| {
                        let k: Vec<[f64; 2]> = knots.iter().map(|&(a, b)| [a, b]).collect();
                        json!({"name": name, "frontier": k})
                    })
                    .collect();
                json!({"date": f.date, "groups": groups})
            })
            .collect();
    Ok(Json(json!({
        "frames": frames,
        "x": x,
        "y": y,
        "at": at,
        "window": window,
        "threshold": threshold,
        "include_invalid": include_invalid,
        "x_range": x_range,
        "default_at": inferbench_views::analysis::default_at(&x, h.x_range),
        "groups": groups,
        "note": note,
    })))
}

/// `GET /api/v1/evals[?task=…&model=…&hardware=…&framework=…&precision=…]`: stored accuracy
/// evals (`inferbench_store::overview::EvalRow`, plus its `batch_label` as tables show the
/// batch and its `threshold`, the pass mark [`eval_threshold`], `null` when the task has none), `{"tasks": [task…], "rows": [row…]}`, each
/// filter an exact match on the canonical key (several values with `|`). `tasks` lists every
/// stored task whatever the filters. An unknown parameter is a 400.
pub async fn evals(
    State(state): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    const KEYS: [&str; 5] = ["task", "model", "hardware", "framework", "precision"];
    let mut want: Vec<(&str, Vec<String>)> = Vec::new();
    for (k, v) in &pairs {
        let k = if k == "hw" { "hardware" } else { k.as_str() };
        let Some(key) = KEYS.iter().find(|x| **x == k) else {
            return Err(ApiError::bad_request(format!(
                "`{k}`: unknown parameter (known: {})",
                KEYS.join(", ")
            )));
        };
        // The store's keys for the names, as `-f` takes them (trial 23: `model=Llama-3.1-8B`
        // and `model=llama8b` found nothing here while /api/v1/points found llama3.1-8b).
        let mut f = Filter::default();
        let canonical = match f.add(&format!("{key}={v}")) {
            Ok(()) => f.eq.remove(*key).unwrap_or_default(),
            Err(_) => v.split('|').map(|s| s.trim().to_lowercase()).collect(),
        };
        want.push((key, canonical));
    }
    let rows = state
        .with_store(|s| s.evals().map_err(|e| ApiError::internal(e.to_string())))
        .await?;
    let mut tasks: Vec<&str> = rows.iter().map(|r| r.task.as_str()).collect();
    tasks.dedup();
    let field = |r: &inferbench_store::overview::EvalRow, k: &str| -> String {
        match k {
            "task" => r.task.clone(),
            "model" => r.model.clone(),
            "hardware" => r.hardware.clone(),
            "framework" => r.framework.clone(),
            _ => r.precision.clone(),
        }
    };
    let kept: Vec<&inferbench_store::overview::EvalRow> = rows
        .iter()
        .filter(|r| want.iter().all(|(k, vs)| vs.contains(&field(r, k))))
        .collect();
    let kept: Vec<Value> = kept
        .into_iter()
        .map(|r| {
            let mut v = with_batch_label(r);
            v["threshold"] = json!(eval_threshold(&r.task, &r.model));
            v
        })
        .collect();
    Ok(Json(json!({ "tasks": tasks, "rows": kept })))
}

/// Most rows one `/api/v1/evals/samples` page answers.
pub const EVAL_SAMPLES_MAX_LIMIT: u64 = 500;

/// `GET /api/v1/evals/samples?run=ID&task=T[&conc=N&correct=true|false&offset=O&limit=L]`:
/// one page of an eval's scored questions (the evals drawer), `{"run", "task", "conc",
/// "total", "offset", "limit", "rows": [{"doc_id", "question", "response", "extracted",
/// "target", "correct" (`null` when the file did not say), "error"}]}`, rows in doc_id order.
/// `conc` is the eval row's concurrency (default 0), `offset` 0-based (default 0), `limit`
/// 1–[`EVAL_SAMPLES_MAX_LIMIT`] (default 50). `total` counts every matching row (0 when the
/// eval set had no samples file, or was stored before they were kept). A missing `run`/`task`,
/// a malformed number or an unknown parameter is a 400.
pub async fn eval_samples(
    State(state): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    const KEYS: [&str; 6] = ["run", "task", "conc", "correct", "offset", "limit"];
    let get = |k: &str| -> Option<String> {
        pairs
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.trim().to_string())
    };
    if let Some((k, _)) = pairs.iter().find(|(k, _)| !KEYS.contains(&k.as_str())) {
        return Err(ApiError::bad_request(format!(
            "`{k}`: unknown parameter (known: {})",
            KEYS.join(", ")
        )));
    }
    fn int<T: std::str::FromStr>(k: &str, v: Option<String>, default: T) -> Result<T, ApiError> {
        match v {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| {
                ApiError::bad_request(format!("`{k}={v}`: expected a non-negative integer"))
            }),
        }
    }
    let run: i64 = match get("run") {
        None => return Err(ApiError::bad_request("`run`: required (the eval's run id)")),
        Some(v) => v.parse().ok().filter(|&i| i > 0).ok_or_else(|| {
            ApiError::bad_request(format!("`run={v}`: expected a positive integer"))
        })?,
    };
    let task = get("task")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::bad_request("`task`: required (gsm8k, …)"))?
        .to_lowercase();
    let conc: i64 = int("conc", get("conc"), 0i64)?;
    let offset: u64 = int("offset", get("offset"), 0u64)?;
    let limit: u64 = int("limit", get("limit"), 50u64)?;
    if conc < 0 {
        return Err(ApiError::bad_request(format!(
            "`conc={conc}`: expected a non-negative integer"
        )));
    }
    if !(1..=EVAL_SAMPLES_MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "`limit={limit}`: expected 1 to {EVAL_SAMPLES_MAX_LIMIT}"
        )));
    }
    let correct = match get("correct").as_deref() {
        None | Some("") => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "`correct={v}`: expected true or false"
            )))
        }
    };
    let t = task.clone();
    let (total, rows) = state
        .with_store(move |s| {
            s.eval_samples(run, &t, conc, correct, offset, limit)
                .map_err(|e| ApiError::internal(e.to_string()))
        })
        .await?;
    Ok(Json(json!({
        "run": run, "task": task, "conc": conc, "total": total, "offset": offset,
        "limit": limit, "rows": rows,
    })))
}

/// The pass mark of `task` for `model` (issue 42's threshold marker): GSM8K's per-model
/// threshold (InferenceX's `thresholds.yaml`, `inferbench_eval::gsm8k::threshold`), keyed by
/// model prefix, so the longest prefix of the stored name with a threshold of its own wins
/// (`gptoss120b` → `gptoss`, 0.91), else the task default 0.90; `None` for another task.
pub fn eval_threshold(task: &str, model: &str) -> Option<f64> {
    use inferbench_eval::gsm8k::threshold;
    if task != "gsm8k" {
        return None;
    }
    let default = threshold(None);
    let own = (1..=model.len())
        .rev()
        .filter(|&i| model.is_char_boundary(i))
        .map(|i| threshold(Some(&model[..i])))
        .find(|t| *t != default);
    Some(own.unwrap_or(default))
}

/// `GET /api/v1/models`: the support matrix (`inferbench_store::overview::SupportRow`), what
/// has been measured per model × hardware × framework × precision: `{"rows": [row…]}`.
pub async fn models(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let rows = state
        .with_store(|s| {
            s.support_matrix()
                .map_err(|e| ApiError::internal(e.to_string()))
        })
        .await?;
    Ok(Json(json!({ "rows": rows })))
}

/// `GET /api/v1/tco?at=X[&…]`: the TCO calculator's bars — per group, y at x = `at` (each
/// batch's frontier interpolated there with the monotone spline, never extrapolated; the mean
/// over batches, its repeats), best first (highest for higher-is-better y, else lowest).
/// `gpu_hour_cost` / `gpu_kw` give the custom price and power behind `usd_per_m_custom*`,
/// `tok_s_per_mw*` and `j_per_token*`. The same function for every caller,
/// [`inferbench_views::analysis::tco_at`]: invalid points count only with
/// `include_invalid=true`; `at=auto` reads at [`inferbench_views::analysis::default_at`].
/// Answer: `{"x", "y", "at", "better": "higher"|"lower", "include_invalid", "x_range",
/// "default_at", "bars": [{"group", "public", "value", "batches"}…], "unreached": [group…],
/// "invalid_only": [group…], "invalid", "invalid_reason", "note"}` (`unreached`: groups whose
/// counted frontiers do not reach `at`; `invalid_only`: those among them with no valid point;
/// `invalid`: the invalid points left out, 0 with `include_invalid=true`; `invalid_reason`:
/// why, the first stored reason and `; and N more reasons` when they differ, null when none was
/// left out; `note`: null, or which filter matches nothing). Each bar and every group in
/// `"groups": [{"name", "gpu_seconds", "gpu_seconds_unknown"}…]` (store order, unreached ones
/// too) carries the GPU-seconds its points recorded (null when none did), as `/history` and
/// `report` give them. With `slo=EXPR`
/// (`median_intvty>=35`, `p99_ttft<=2s`; x is then the SLO's metric) the answer also holds
/// `"capacity": [{"group", "slo", "status", "value", "users_per_gpu", "batches", "x_range"}…]`:
/// per group the most y and users per GPU at the SLO,
/// [`inferbench_views::analysis::capacity_at`], the numbers `report --capacity` prints.
pub async fn tco(
    State(state): State<AppState>,
    Query(mut pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let at = required_at(&mut pairs, "to read each group at")?;
    let slo = take(&mut pairs, "slo")
        .map(|e| {
            inferbench_core::slo::Slo::parse(&e).map_err(|e| ApiError::bad_request(e.to_string()))
        })
        .transpose()?;
    if let Some(slo) = &slo {
        // Capacity is read along the SLO's metric: it is the x.
        match pairs.iter().find(|(k, _)| k == "x") {
            Some((_, x)) if *x != slo.metric => {
                return Err(ApiError::bad_request(format!(
                    "`slo` {slo} reads capacity along {}: leave `x` out or make it {}",
                    slo.metric, slo.metric
                )))
            }
            Some(_) => {}
            None => pairs.push(("x".into(), slo.metric.clone())),
        }
    }
    let Selected {
        rows,
        x,
        y,
        include_invalid,
        note,
    } = selected(&state, &pairs).await?;
    let at = resolve_at(at, &rows, &x, &y, include_invalid);
    // The one analysis (issue 39: this route read invalid points).
    let t = inferbench_views::analysis::tco_at(&rows, &x, &y, at, include_invalid);
    // `report --capacity`'s computation, as a field (issue 43).
    let capacity = match &slo {
        Some(slo) => Some(
            inferbench_views::analysis::capacity_at(&rows, slo, &y, include_invalid)
                .map_err(|e| ApiError::bad_request(e.to_string()))?
                .iter()
                .map(|c| {
                    json!({"group": c.group, "slo": slo.to_string(), "status": c.status.as_str(),
                           "value": c.y, "users_per_gpu": c.users_per_gpu,
                           "batches": c.batches, "x_range": c.x_range.map(|(lo, hi)| [lo, hi])})
                })
                .collect::<Vec<Value>>(),
        ),
        None => None,
    };
    let bars: Vec<Value> = (t.bars.iter())
        .map(|b| {
            json!({"group": b.group, "public": b.public, "value": b.value, "batches": b.batches,
                   "gpu_seconds": b.gpu_seconds.total})
        })
        .collect();
    // Every group's GPU time (issue 43), bars and unreached alike.
    let groups: Vec<Value> = (t.gpu_seconds.iter())
        .map(|(name, g)| {
            json!({"name": name, "gpu_seconds": g.total, "gpu_seconds_unknown": g.unknown})
        })
        .collect();
    let higher = t.better == inferbench_core::analytics::Better::Higher;
    let mut answer = json!({
        "x": x,
        "y": y,
        "at": at,
        "better": if higher { "higher" } else { "lower" },
        "include_invalid": include_invalid,
        "x_range": t.x_range.map(|(lo, hi)| [lo, hi]),
        "default_at": inferbench_views::analysis::default_at(&x, t.x_range),
        "bars": bars,
        "unreached": t.unreached,
        "invalid_only": t.invalid_only,
        "invalid": t.invalid,
        "invalid_reason": t.invalid_reason,
        "groups": groups,
        "note": note,
    });
    if let (Some(c), Value::Object(m)) = (capacity, &mut answer) {
        m.insert("capacity".into(), c.into());
    }
    Ok(Json(answer))
}
