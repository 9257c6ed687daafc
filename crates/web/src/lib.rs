//! inferbench's dashboard (`inferbench serve`): a versioned, read-only JSON API over the
//! results database (`/api/v1/…`, the same queries `inferbench report` runs) and the pages that
//! draw it, embedded in the binary (no npm at build or run time; the one chart library, uPlot,
//! is vendored under `assets/vendor/`).
//!
//! Routes ([`router`]):
//! - `GET /api/v1/options`: the selectable dimension values and the x/y metrics with label,
//!   unit and direction, how many points and evals the database holds, and the stored names
//!   of the model/hardware/… values given ([`api::options`]).
//! - `GET /api/v1/points?…`: points, frontier flags and per-group frontier knots for a
//!   chart ([`api::points`]); `GET /api/v1/points.csv?…`: the same rows as `report --format
//!   csv` writes them; `GET /api/v1/chart.png`, `GET /api/v1/chart.svg`: the same query drawn
//!   by `inferbench plot`'s renderer with title, units, legend and a source line
//!   ([`api::chart_png`]).
//! - `GET /api/v1/runs/{id}`, `…/runs/{id}/artifacts/{name}`, `…/points/{id}/latencies`,
//!   `…/points/{id}/power`, `…/points/{id}/server_metrics`: one run's provenance, points and
//!   kept files; a point's latency distributions, power samples and server-metric gauges.
//! - `GET /api/v1/compare?a=…&b=…`, `GET /api/v1/history?at=…`: two sides at matched x, and a
//!   group's y at fixed x over time with regression flags; `GET /api/v1/evals`, `GET
//!   /api/v1/models`: stored accuracy evals and the support matrix; `GET /api/v1/tco?at=…`:
//!   every group's y at one x, the TCO calculator's bars ([`analysis`]); `GET
//!   /api/v1/openapi.json`: the OpenAPI 3 document of every API route and its parameters, built
//!   from the one route table the router serves the API from ([`openapi::API_ROUTES`]).
//! - `GET /inference`: the Inference page (Pareto chart, selectors, URL state, exports);
//!   `GET /run?id=N`: a run's page; `GET /compare`, `GET /history`, `GET /evals`, `GET
//!   /models`, `GET /tco`, `GET /openapi`: the Compare, History, Evals, Models, TCO and API (every
//!   route of `/api/v1/openapi.json`) pages; `GET /`: the
//!   landing page (models, hardware, runs, dates and the latest batch from `GET
//!   /api/v1/overview`, linking into each view). Every page's nav bar and dark-mode toggle
//!   (`theme=dark`, remembered in localStorage) come from `common.js`;
//!   `GET /assets/NAME`: their scripts and styles.
//!
//! Bad query parameters answer 400 with `{"error": "…"}`; unknown routes 404. The store is
//! opened read-only ([`inferbench_store::Store::open_read_only`]). The numbers of compare,
//! history, TCO and frontiers come from `inferbench_views::analysis`, as `report`'s do; the
//! routes only format them. [`serve`] checks `Host` on a loopback address
//! ([`served_router`]); `serve --redact` hides stored paths and host names ([`redact`]).

pub mod analysis;
pub mod api;
pub mod openapi;
pub mod redact;
pub mod sessions;
pub mod timeline;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use inferbench_store::Store;

/// Shared state of the handlers: one store connection, used by one request at a time
/// (queries run on tokio's blocking pool).
#[derive(Clone)]
pub struct AppState {
    store: Arc<Mutex<Store>>,
    /// `serve --redact`: answers without stored absolute paths and host names ([`redact`]).
    redact: bool,
    /// The AgentX explorer's session trees already built, by point ([`sessions::SessionCache`]).
    sessions: Arc<Mutex<sessions::SessionCache>>,
}

impl AppState {
    /// Wraps an open store (open it with [`Store::open_read_only`]).
    pub fn new(store: Store) -> AppState {
        AppState {
            store: Arc::new(Mutex::new(store)),
            redact: false,
            sessions: Arc::default(),
        }
    }

    /// How many points' AgentX session trees this state has built from their stored records
    /// ([`sessions::SessionCache::builds`]): a repeated `/api/v1/runs/{id}` builds none.
    pub fn session_builds(&self) -> u64 {
        (self.sessions.lock().unwrap_or_else(|p| p.into_inner())).builds()
    }

    /// This state with `serve --redact`'s rewriting on or off ([`redact::layer`]). With it on,
    /// `batch=` filters match batches as the answers show them ([`redact::batch`]), never the
    /// stored paths, so a reader cannot confirm a guessed parent directory or full path.
    pub fn redacted(mut self, on: bool) -> AppState {
        self.redact = on;
        let view: Option<fn(&str) -> String> = if on { Some(redact::batch) } else { None };
        (self.store.lock().unwrap_or_else(|p| p.into_inner())).match_batches_as_shown(view);
        self
    }

    /// Runs `f` on the store in tokio's blocking pool; a poisoned lock (a panicked query) is
    /// recovered, since every query is read-only.
    pub(crate) async fn with_store<T, F>(&self, f: F) -> Result<T, api::ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T, api::ApiError> + Send + 'static,
    {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = store.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut guard)
        })
        .await
        .map_err(|e| api::ApiError::internal(format!("query task failed: {e}")))?
    }
}

/// One embedded file: name under `/assets/`, content type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/app.js"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/app.css"),
    ),
    (
        "common.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/common.js"),
    ),
    (
        "compare.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/compare.js"),
    ),
    (
        "presets.json",
        "application/json",
        include_bytes!("../assets/presets.json"),
    ),
    (
        "tco.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/tco.js"),
    ),
    (
        "evals.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/evals.js"),
    ),
    (
        "models.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/models.js"),
    ),
    (
        "history.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/history.js"),
    ),
    (
        "home.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/home.js"),
    ),
    (
        "openapi.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/openapi.js"),
    ),
    (
        "run.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/run.js"),
    ),
    (
        "uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/vendor/uPlot.iife.min.js"),
    ),
    (
        "uPlot.min.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/vendor/uPlot.min.css"),
    ),
];

/// The curated views of the Inference page (InferenceX's favourite presets): `[{id, category,
/// title, description, view: {model, sequence, hardware: [...], framework, precision,
/// spec_decoding, x, y}}]`, applied by `/inference?preset=ID`. One data file; a test checks
/// every view names known state keys and metrics.
pub const PRESETS_JSON: &str = include_str!("../assets/presets.json");

/// The Inference page's HTML (static: every value from the database is set by `app.js` as
/// text, never as markup).
const INFERENCE_HTML: &str = include_str!("../assets/inference.html");

/// The landing page's HTML (`/`: what the database holds, from `/api/v1/overview`; same rules
/// as [`INFERENCE_HTML`]).
const HOME_HTML: &str = include_str!("../assets/home.html");

/// The run page's HTML (`/run?id=N`; same rules as [`INFERENCE_HTML`]).
const RUN_HTML: &str = include_str!("../assets/run.html");

/// The Compare page's HTML (`/compare?…`; same rules as [`INFERENCE_HTML`]).
const COMPARE_HTML: &str = include_str!("../assets/compare.html");

/// The History page's HTML (`/history?…`; same rules as [`INFERENCE_HTML`]).
const HISTORY_HTML: &str = include_str!("../assets/history.html");

/// The Evals page's HTML (`/evals?task=…&model=…`; same rules as [`INFERENCE_HTML`]).
const EVALS_HTML: &str = include_str!("../assets/evals.html");

/// The Models page's HTML (`/models`; same rules as [`INFERENCE_HTML`]).
const MODELS_HTML: &str = include_str!("../assets/models.html");

/// The TCO calculator's HTML (`/tco?…`; same rules as [`INFERENCE_HTML`]).
const TCO_HTML: &str = include_str!("../assets/tco.html");

/// The API page's HTML (`/openapi`: every API route, its parameters and media type, from
/// `/api/v1/openapi.json`; same rules as [`INFERENCE_HTML`]).
const OPENAPI_HTML: &str = include_str!("../assets/openapi.html");

/// Content-Security-Policy of every page: scripts, styles and data only from this server, so a
/// string in the database can never run as script.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// The handler of an API route of [`openapi::API_ROUTES`] (every API route is served from
/// that table); a path without one answers 404, which the route-table test catches.
fn api_handler(path: &str) -> axum::routing::MethodRouter<AppState> {
    match path {
        "/api/v1/options" => get(api::options),
        "/api/v1/points" => get(api::points),
        "/api/v1/points.csv" => get(api::points_csv),
        "/api/v1/chart.png" => get(api::chart_png),
        "/api/v1/chart.svg" => get(api::chart_svg),
        "/api/v1/runs/{id}" => get(api::run),
        "/api/v1/runs/{id}/artifacts/{name}" => get(api::artifact),
        "/api/v1/points/{id}/latencies" => get(api::latencies),
        "/api/v1/points/{id}/power" => get(api::power),
        "/api/v1/points/{id}/server_metrics" => get(api::server_metrics),
        "/api/v1/points/{id}/timeline" => get(api::timeline),
        "/api/v1/compare" => get(analysis::compare),
        "/api/v1/history" => get(analysis::history),
        "/api/v1/evals" => get(analysis::evals),
        "/api/v1/evals/samples" => get(analysis::eval_samples),
        "/api/v1/models" => get(analysis::models),
        "/api/v1/tco" => get(analysis::tco),
        "/api/v1/overview" => get(api::overview),
        "/api/v1/openapi.json" => get(|| async { axum::Json(openapi::document()) }),
        _ => get(not_found),
    }
}

/// The dashboard's routes over `state`.
pub fn router(state: AppState) -> Router {
    let redacted = state.redact;
    let r = Router::new()
        .route("/", get(|| page(HOME_HTML)))
        .route("/inference", get(|| page(INFERENCE_HTML)))
        .route("/assets/{name}", get(asset))
        .route("/run", get(|| page(RUN_HTML)))
        .route("/compare", get(|| page(COMPARE_HTML)))
        .route("/history", get(|| page(HISTORY_HTML)))
        .route("/evals", get(|| page(EVALS_HTML)))
        .route("/models", get(|| page(MODELS_HTML)))
        .route("/tco", get(|| page(TCO_HTML)))
        .route("/openapi", get(|| page(OPENAPI_HTML)));
    // The API's routes come from its one table, which `/api/v1/openapi.json` describes (added
    // before the fallbacks, which apply to the routes present).
    let r = openapi::API_ROUTES
        .iter()
        .fold(r, |r, route| r.route(route.path, api_handler(route.path)))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    if redacted {
        r.layer(axum::middleware::from_fn_with_state(state, redact::layer))
    } else {
        r
    }
}

/// [`router`] as [`serve`] serves it on `local`: on a loopback address ([`is_loopback_ip`]),
/// only requests that name this machine's loopback ([`host_kind`]) are answered, others get
/// 403 (a page of another site whose name an attacker re-pointed at 127.0.0.1, DNS rebinding,
/// would otherwise read the API with the browser's help) and a malformed or repeated `Host`
/// 400. What a request names is its absolute-form target's authority when it has one (RFC 9112
/// §3.2.2: it wins over `Host`; HTTP/2's `:authority`), else its one `Host` header. A request
/// without either (an HTTP/1.0 tool) is answered. On another address every `Host` is answered
/// (the `--bind` warning says the dashboard is open to whoever reaches it).
pub fn served_router(state: AppState, local: SocketAddr) -> Router {
    let r = router(state);
    if is_loopback_ip(local.ip()) {
        r.layer(axum::middleware::from_fn(loopback_hosts_only))
    } else {
        r
    }
}

/// Whether `ip` is this machine's loopback: 127.0.0.0/8, `::1`, or an IPv4-mapped IPv6
/// loopback (`::ffff:127.0.0.1`, which `--bind` takes and which accepts only local peers).
pub fn is_loopback_ip(ip: std::net::IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// What a `Host` header value (or a request target's authority) names, for the loopback
/// guard of [`served_router`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// This machine's loopback: `localhost` or a name under `.localhost` (RFC 6761), an
    /// address in 127.0.0.0/8, `[::1]` or `[::ffff:127.x.y.z]`, with or without a port.
    Loopback,
    /// Another, well-formed name or address (403 on a loopback address).
    Other,
    /// Not a `host[:port]` (RFC 9110 §7.2): empty, user info, a port that is not a number in
    /// 0–65535, an unbracketed or malformed IPv6 address (400, whatever the name).
    Malformed,
}

/// Classifies `host` (`name[:port]`, `a.b.c.d[:port]` or `[v6][:port]`; [`HostKind`]). The port
/// is judged first and alike for every form, so a bad port is [`HostKind::Malformed`] whether
/// the name is a loopback one or not.
pub fn host_kind(host: &str) -> HostKind {
    let host = host.trim();
    let bad = |c: char| c.is_whitespace() || "@/?#\\".contains(c);
    if host.is_empty() || host.contains(bad) {
        return HostKind::Malformed;
    }
    let (name, port, bracketed) = if let Some(rest) = host.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return HostKind::Malformed;
        };
        match after {
            "" => (inside, None, true),
            a => match a.strip_prefix(':') {
                Some(p) => (inside, Some(p), true),
                None => return HostKind::Malformed,
            },
        }
    } else {
        match host.split_once(':') {
            Some((n, p)) => (n, Some(p), false),
            None => (host, None, false),
        }
    };
    // RFC 3986: `port = *DIGIT`, an empty one allowed; a number a TCP port can be.
    let port_ok = port.is_none_or(|p| {
        p.is_empty() || (p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok())
    });
    if !port_ok || name.is_empty() {
        return HostKind::Malformed;
    }
    if bracketed {
        return match name.parse::<std::net::Ipv6Addr>() {
            Ok(ip) if is_loopback_ip(ip.into()) => HostKind::Loopback,
            Ok(_) => HostKind::Other,
            Err(_) => HostKind::Malformed,
        };
    }
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let loopback = name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        HostKind::Loopback
    } else {
        HostKind::Other
    }
}

/// Whether `host` (a `Host` header: `name[:port]` or `[v6]:port`) names this machine's
/// loopback ([`host_kind`] is [`HostKind::Loopback`]).
pub fn is_loopback_host(host: &str) -> bool {
    host_kind(host) == HostKind::Loopback
}

/// The warning `serve` prints when listening on `ip`, a non-loopback address: who can read
/// what, including the absolute paths and host names stored with the runs unless `redact`.
pub fn exposure_warning(ip: std::net::IpAddr, redact: bool) -> String {
    let what = if redact {
        "every stored result (absolute paths and host names hidden: --redact)"
    } else {
        "every stored result, including the absolute paths (result directories, job.json's \
         output and model paths) and the host names stored with the runs; --redact hides them"
    };
    format!(
        "warning: listening on {ip} is reachable from other machines, and the dashboard has no \
         login: anyone who can reach this port can read {what}"
    )
}

/// The DNS-rebinding guard of [`served_router`]: the request's absolute-form authority, else
/// its one `Host`, must name the loopback (403 otherwise); two `Host` headers or a malformed
/// one are 400.
async fn loopback_hosts_only(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let reject =
        |status: StatusCode, message: String| api::ApiError { status, message }.into_response();
    let hosts: Vec<&HeaderValue> = req.headers().get_all(header::HOST).iter().collect();
    if hosts.len() > 1 {
        return reject(
            StatusCode::BAD_REQUEST,
            format!(
                "{} Host headers: a request names one host (RFC 9112 §3.2)",
                hosts.len()
            ),
        );
    }
    // RFC 9112 §3.2.2: an absolute-form target's authority is the host, whatever `Host` says.
    let (named, from) = match req.uri().authority() {
        Some(a) => (Some(Ok(a.as_str())), "the request target's authority"),
        None => (hosts.first().map(|h| h.to_str()), "Host"),
    };
    let Some(named) = named else {
        // No Host at all: an HTTP/1.0 tool (a browser always sends one).
        return next.run(req).await;
    };
    let named = named.ok();
    let shown = |h: &str| h.chars().take(100).collect::<String>();
    match named.map(host_kind) {
        Some(HostKind::Loopback) => next.run(req).await,
        Some(HostKind::Other) => reject(
            StatusCode::FORBIDDEN,
            format!(
                "{from} `{}` is not this machine's loopback: the dashboard, bound to a \
                 loopback address, answers only requests for localhost or 127.0.0.1 (a guard \
                 against DNS rebinding); open it at http://127.0.0.1:PORT/, or serve on another \
                 address with --bind",
                shown(named.unwrap_or_default())
            ),
        ),
        Some(HostKind::Malformed) | None => reject(
            StatusCode::BAD_REQUEST,
            format!(
                "{from} `{}` is not a host[:port] with a port in 0-65535",
                shown(named.unwrap_or("(not text)"))
            ),
        ),
    }
}

fn secured(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// One of the static pages, with the security headers.
async fn page(html: &'static str) -> Response {
    secured(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response())
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, ctype, body)) => {
            secured(([(header::CONTENT_TYPE, *ctype)], *body).into_response())
        }
        None => not_found().await,
    }
}

async fn method_not_allowed() -> Response {
    api::ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        message: "only GET is served: the dashboard and its API are read-only".into(),
    }
    .into_response()
}

async fn not_found() -> Response {
    api::ApiError {
        status: StatusCode::NOT_FOUND,
        message: "no such page or API route (the API is under /api/v1/)".into(),
    }
    .into_response()
}

/// Serves the dashboard on `addr` until `shutdown` resolves, printing nothing (the caller says
/// where: [`serving_line`]).
///
/// Errors: the address cannot be bound (in use, not local), or the server fails.
pub async fn serve(
    store: Store,
    addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(store, addr, false, shutdown).await
}

/// [`serve`], with `redact` (`serve --redact`): answers without the stored absolute paths and
/// host names ([`redact`]). Prints nothing: the caller says where it serves ([`serving_line`])
/// and, on a non-loopback address, [`exposure_warning`] (as the CLI's `serve` does).
///
/// Errors: the address cannot be bound (in use, not local), or the server fails.
pub async fn serve_with(
    store: Store,
    addr: SocketAddr,
    redact: bool,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    serve_listener(store, listener, redact, shutdown).await
}

/// The landing page's URL (`/`, which links into every view) of a dashboard listening on
/// `local`: `http://{local}/` (issue 42: `serve` printed `/inference`).
pub fn landing_url(local: SocketAddr) -> String {
    format!("http://{local}/")
}

/// The line `serve` prints once listening: `inferbench serve: {location} read-only at
/// {landing_url} (Ctrl-C stops)`.
pub fn serving_line(location: &str, local: SocketAddr) -> String {
    format!(
        "inferbench serve: {location} read-only at {} (Ctrl-C stops)",
        landing_url(local)
    )
}

/// Serves the dashboard on an already bound `listener` until `shutdown` resolves, printing
/// nothing (the CLI's `serve` prints [`serving_line`] and, off loopback, [`exposure_warning`]).
///
/// Errors: the listener's address cannot be read, or the server fails.
pub async fn serve_listener(
    store: Store,
    listener: tokio::net::TcpListener,
    redact: bool,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let state = AppState::new(store).redacted(redact);
    axum::serve(listener, served_router(state, local))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    /// The DNS-rebinding guard's names (issue 39): loopback names and addresses with or
    /// without a port pass; another name, or one re-pointed at 127.0.0.1, does not.
    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:8321",
            "LOCALHOST.:8321",
            "app.localhost:80",
            "127.0.0.1",
            "127.0.0.1:8321",
            "127.1.2.3:1",
            "[::1]:8321",
            "[::1]",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8321",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8321",
            "10.0.0.1:8321",
            "[::2]:8321",
            "[::1]x",
            "localhost:http",
            "",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    /// Trial of issue 39 §5 (E): the guard's edges. A bad port is malformed (400) for every
    /// host form alike, loopback names included; IPv4-mapped loopback is loopback.
    #[test]
    fn host_kinds_judge_the_port_alike_for_every_form() {
        use super::{host_kind, is_loopback_ip, HostKind::*};
        for (host, kind) in [
            ("localhost:8321", Loopback),
            ("localhost:", Loopback),
            ("127.0.0.1:0", Loopback),
            ("[::ffff:127.0.0.1]:8321", Loopback),
            ("[::ffff:127.9.9.9]", Loopback),
            ("evil.example:65535", Other),
            ("[::ffff:10.0.0.1]:80", Other),
            ("[2001:db8::1]", Other),
            ("localhost:65536", Malformed),
            ("127.0.0.1:99999", Malformed),
            ("[::1]:99999", Malformed),
            ("evil.example:99999", Malformed),
            ("localhost:http", Malformed),
            ("127.0.0.1:80x", Malformed),
            ("[::1]:-1", Malformed),
            ("evil.example:+80", Malformed),
            ("::1", Malformed),
            ("[::1", Malformed),
            ("[not-v6]:80", Malformed),
            ("user@127.0.0.1", Malformed),
            ("localhost:80:80", Malformed),
            ("", Malformed),
            (":80", Malformed),
        ] {
            assert_eq!(host_kind(host), kind, "{host}");
        }
        for (ip, lo) in [
            ("::ffff:127.0.0.1", true),
            ("127.0.0.2", true),
            ("::1", true),
            ("::ffff:10.0.0.1", false),
            ("0.0.0.0", false),
        ] {
            assert_eq!(is_loopback_ip(ip.parse().unwrap()), lo, "{ip}");
        }
    }
}
