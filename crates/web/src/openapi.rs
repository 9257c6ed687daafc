//! The API's one route table ([`API_ROUTES`]) and the OpenAPI 3 document built from it
//! (`GET /api/v1/openapi.json`, [`document`]). [`crate::router`] serves the API routes from this
//! table only, so a route and its description cannot drift apart: a new API route is a new
//! entry here (its path, summary, parameters and answer type) and an arm of
//! `crate::api_handler`.

use serde_json::{json, Map, Value};

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    /// A `{name}` segment of the path (always required).
    Path,
    /// A query parameter.
    Query,
}

/// One parameter of a route.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name (`model`, `id`).
    pub name: &'static str,
    /// Path or query.
    pub location: In,
    /// Whether the route answers 400 without it (path parameters always are).
    pub required: bool,
    /// JSON-schema type of its value: `string`, `number`, `integer` or `boolean`.
    pub ty: &'static str,
    /// What it means, with its unit or format.
    pub description: &'static str,
}

const fn q(name: &'static str, ty: &'static str, description: &'static str) -> Param {
    Param {
        name,
        location: In::Query,
        required: false,
        ty,
        description,
    }
}

const fn required(name: &'static str, ty: &'static str, description: &'static str) -> Param {
    Param {
        name,
        location: In::Query,
        required: true,
        ty,
        description,
    }
}

const fn path(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        location: In::Path,
        required: true,
        ty: "string",
        description,
    }
}

/// One API route: a GET on `path` (written in full, `/api/v1/points`).
#[derive(Debug, Clone, Copy)]
pub struct ApiRoute {
    /// The full path, `{name}` for a path parameter (axum's and OpenAPI's syntax alike).
    pub path: &'static str,
    /// One line: what it answers.
    pub summary: &'static str,
    /// Its parameters, in groups (the shared filter set and the route's own).
    pub params: &'static [&'static [Param]],
    /// The media type of a 200 answer.
    pub media: &'static str,
}

/// The filters every point selection takes (`/api/v1/points` and the routes built on it): any
/// `report --filter` key as `KEY=VALUE` (`|` or repeating for OR), the dates, the include flags
/// and the custom cost; the keys listed are the common ones.
pub const FILTERS: &[Param] = &[
    q(
        "model",
        "string",
        "model (as `report -f model=…`; `|` separates alternatives)",
    ),
    q(
        "hardware",
        "string",
        "hardware (`hw` is an alias), e.g. h200",
    ),
    q("hw", "string", "alias of `hardware`"),
    q(
        "framework",
        "string",
        "serving framework (vllm, sglang, trt, …)",
    ),
    q(
        "precision",
        "string",
        "weight precision (fp8, fp4, bf16, …)",
    ),
    q(
        "spec",
        "string",
        "speculative decoding (`spec_decoding` alike): none, mtp, …",
    ),
    q("tp", "integer", "tensor parallelism"),
    q("ep", "integer", "expert parallelism"),
    q("isl", "integer", "input sequence length (ISL), tokens"),
    q("osl", "integer", "output sequence length (OSL), tokens"),
    q("conc", "integer", "concurrency (conc)"),
    q(
        "scenario",
        "string",
        "workload scenario: fixed_seq_len or agentic-coding",
    ),
    q(
        "batch",
        "string",
        "a batch (result directory or sweep id) as the answers show it",
    ),
    q("since", "string", "first date, YYYY-MM-DD (inclusive)"),
    q("until", "string", "last date, YYYY-MM-DD (inclusive)"),
    q(
        "x",
        "string",
        "x metric (a registry name; default median_intvty, AgentX: p90_e2e_norm_intvty; on \
         the chart routes (points, points.csv, chart.png, chart.svg) p99_ttft for a y of input \
         tokens)",
    ),
    q(
        "y",
        "string",
        "y metric (a registry name; default tput_per_gpu)",
    ),
    q(
        "include_invalid",
        "boolean",
        "let invalid points count (frontiers, analyses)",
    ),
    q("include_failed", "boolean", "list failed points too"),
    q(
        "gpu_hour_cost",
        "number",
        "custom price, US $ per GPU-hour (adds usd_per_m_custom*, tokens_per_usd_custom*)",
    ),
    q(
        "gpu_kw",
        "number",
        "custom all-in power, kW per GPU (tok/s/MW, J/token)",
    ),
];

const CHART: &[Param] = &[
    q("frontier_only", "boolean", "only frontier points"),
    q(
        "clip",
        "boolean",
        "drop what InferenceX's chart drops (above $5/M tokens on a built-in cost y, TTFT x \
         above 60 s) before the frontier; default false, true for chart.png and chart.svg",
    ),
    q(
        "latest_only",
        "boolean",
        "per configuration only its latest run",
    ),
];

const POINTS: &[Param] = &[q(
    "metrics",
    "string",
    "`all`: every stored and derived metric of each point; `none` (default)",
)];

const COLUMNS: &[Param] = &[q(
    "columns",
    "string",
    "comma-separated columns as `report --columns` takes them; `all`: the default ones then every metric; default: report's default columns",
)];

const AT: &[Param] = &[required(
    "at",
    "string",
    "x to read at (a number in x's unit) or `auto` (35 tok/s/user where reached, else mid-range)",
)];

const NAMES: &[Param] = &[
    q(
        "model",
        "string",
        "a model name to resolve to the stored one",
    ),
    q("hardware", "string", "a hardware name to resolve"),
    q("hw", "string", "alias of `hardware`"),
    q("framework", "string", "a framework name to resolve"),
    q("precision", "string", "a precision to resolve"),
    q(
        "spec_decoding",
        "string",
        "a speculative-decoding value to resolve",
    ),
    q("spec", "string", "alias of `spec_decoding`"),
];

const RUN_ID: &[Param] = &[path("id", "run id (positive integer)")];
const POINT_ID: &[Param] = &[path("id", "point id (positive integer)")];
const ARTIFACT: &[Param] = &[
    path("id", "run id (positive integer)"),
    path("name", "the kept file's name, percent-encoded"),
];

const COMPARE: &[Param] = &[
    required(
        "a",
        "string",
        "side A: comma-separated KEY=VALUE filters, e.g. hw=h200,framework=sglang",
    ),
    required("b", "string", "side B, as `a`"),
    q(
        "at",
        "string",
        "comma-separated target x values (default: low, middle, high of the overlap)",
    ),
];

const HISTORY: &[Param] = &[
    q(
        "window",
        "integer",
        "previous values the regression baseline is the median of (default 3)",
    ),
    q(
        "threshold",
        "number",
        "relative change flagged as a regression (default 0.05)",
    ),
];

const TCO: &[Param] = &[q(
    "slo",
    "string",
    "an SLO expression (median_intvty>=35, p99_ttft<=2s): adds per-group capacity",
)];

const EVALS: &[Param] = &[
    q("task", "string", "eval task (gsm8k, …)"),
    q("model", "string", "model"),
    q("hardware", "string", "hardware"),
    q("framework", "string", "framework"),
    q("precision", "string", "precision"),
];

const EVAL_SAMPLES: &[Param] = &[
    required(
        "run",
        "integer",
        "the eval's run id (`run_id` of an /api/v1/evals row)",
    ),
    required("task", "string", "eval task (gsm8k, …)"),
    q("conc", "integer", "the eval row's concurrency (default 0)"),
    q(
        "correct",
        "boolean",
        "only right (true) or wrong (false) answers",
    ),
    q("offset", "integer", "first row, 0-based (default 0)"),
    q("limit", "integer", "rows per page, 1 to 500 (default 50)"),
];

/// Every API route the dashboard serves, in the router's order.
pub const API_ROUTES: &[ApiRoute] = &[
    ApiRoute {
        path: "/api/v1/options",
        summary: "selectable dimension values, x/y metrics with label, unit and direction, defaults, stored counts, names resolved",
        params: &[NAMES],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/points",
        summary: "points, frontier flags and per-group frontier knots of a chart",
        params: &[FILTERS, CHART, POINTS],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/points.csv",
        summary: "the selected points as CSV, as `report --format csv` prints them: its default columns, or those `columns` names",
        params: &[FILTERS, CHART, COLUMNS],
        media: "text/csv",
    },
    ApiRoute {
        path: "/api/v1/chart.png",
        summary: "the chart of the selection drawn by `inferbench plot`'s renderer, 1600x1000 RGB PNG with title, units, legend and source line",
        params: &[FILTERS, CHART],
        media: "image/png",
    },
    ApiRoute {
        path: "/api/v1/chart.svg",
        summary: "the SVG twin of /api/v1/chart.png",
        params: &[FILTERS, CHART],
        media: "image/svg+xml",
    },
    ApiRoute {
        path: "/api/v1/runs/{id}",
        summary: "one run: provenance, its points, its batch's points, kept files and evals",
        params: &[RUN_ID],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/runs/{id}/artifacts/{name}",
        summary: "a file kept with the run, as a download",
        params: &[ARTIFACT],
        media: "application/octet-stream",
    },
    ApiRoute {
        path: "/api/v1/points/{id}/latencies",
        summary: "TTFT, TPOT, ITL and E2EL distributions (ms) over the point's counted requests",
        params: &[POINT_ID],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/points/{id}/power",
        summary: "the point's power samples per GPU (W)",
        params: &[POINT_ID],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/points/{id}/server_metrics",
        summary: "the point's server-metric gauges over the run, and the server's settings",
        params: &[POINT_ID],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/points/{id}/timeline",
        summary: "why the point sits where it does: server running, waiting, KV usage, prefix \
                  hits and preemptions beside the client's requests in flight on one axis, \
                  the profile window and warmup, the client self-check and the validity verdict",
        params: &[POINT_ID],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/compare",
        summary: "y of side A and side B at matched x, with ratios and 95% intervals",
        params: &[FILTERS, COMPARE],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/history",
        summary: "per group, y at x = at for each batch over time, with regression flags",
        params: &[FILTERS, AT, HISTORY],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/evals",
        summary: "stored accuracy evals",
        params: &[EVALS],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/evals/samples",
        summary: "one page of an eval's scored questions: question, response, extracted answer, target, correct",
        params: &[EVAL_SAMPLES],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/models",
        summary: "the support matrix: which model runs on which hardware and framework",
        params: &[],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/tco",
        summary: "the TCO calculator's bars: every group's y at one x; capacity at an SLO",
        params: &[FILTERS, AT, TCO],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/overview",
        summary: "what the database holds: models, hardware, counts, date range, the latest batch",
        params: &[],
        media: "application/json",
    },
    ApiRoute {
        path: "/api/v1/openapi.json",
        summary: "this document: every API route and its parameters (OpenAPI 3)",
        params: &[],
        media: "application/json",
    },
];

/// `operationId` of a path: `get` and its segments, letters and digits kept
/// (`/api/v1/runs/{id}` → `get_api_v1_runs_id`).
fn operation_id(path: &str) -> String {
    let mut id = String::from("get");
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        let seg = seg.trim_start_matches('{').trim_end_matches('}');
        id.extend(
            seg.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    id
}

/// The OpenAPI 3.0 document of [`API_ROUTES`]: each path written in full, a GET with its
/// summary, parameters (name, place, required, schema type, description), the 200 answer's media
/// type and the `{"error": "…"}` answers of 400 and 404.
pub fn document() -> Value {
    let mut paths = Map::new();
    for r in API_ROUTES {
        let mut params: Vec<Value> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for p in r.params.iter().flat_map(|g| g.iter()) {
            // A later group's parameter of the same name (the route's own) is not repeated.
            if seen.contains(&p.name) {
                continue;
            }
            seen.push(p.name);
            params.push(json!({
                "name": p.name,
                "in": match p.location { In::Path => "path", In::Query => "query" },
                "required": p.required,
                "description": p.description,
                "schema": {"type": p.ty},
            }));
        }
        let body = if r.media == "application/json" {
            json!({"application/json": {"schema": {"type": "object"}}})
        } else {
            json!({r.media: {"schema": {"type": "string", "format": "binary"}}})
        };
        let error = json!({"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}});
        paths.insert(
            r.path.to_string(),
            json!({"get": {
                "operationId": operation_id(r.path),
                "summary": r.summary,
                "parameters": params,
                "responses": {
                    "200": {"description": "OK", "content": body},
                    "400": {"description": "a bad parameter, named in `error`", "content": error},
                    "404": {"description": "no such route or item", "content": error},
                },
            }}),
        );
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "inferbench dashboard API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Read-only JSON API over an inferbench results database (`inferbench serve`). Numbers come from the same analysis as `inferbench report`.",
        },
        "paths": paths,
        "components": {"schemas": {"Error": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "string"}},
        }}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_unique_and_plain() {
        assert_eq!(operation_id("/api/v1/runs/{id}"), "get_api_v1_runs_id");
        assert_eq!(operation_id("/api/v1/points.csv"), "get_api_v1_points_csv");
        let mut ids: Vec<String> = API_ROUTES.iter().map(|r| operation_id(r.path)).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), API_ROUTES.len());
    }
}
