//! The HTTP client: one streamed request → one [`RequestRecord`], whatever happens.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Poll};
use std::time::{Duration, Instant};

use http::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONNECTION, CONTENT_LENGTH,
    CONTENT_TYPE, HOST, TRANSFER_ENCODING, USER_AGENT,
};
use http::Uri;
use inferbench_core::{ErrorClass, Phase, RequestRecord};
use serde_json::{Map, Value};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::clock::RunClock;
use crate::openai::{
    build_body, excerpt, Backend, Interpreter, MaxTokensField, PendingCount, RequestInput,
    TokenCounter,
};
use crate::pool::{Conn, IdleState, Origin, Pool, REUSE_QUIET};
use crate::rxstamp::RxStamp;
use crate::sse::SseParser;
use crate::wire::{parse_head, BodyDecoder, Head, HeadParse, Step};

/// Default idle timeout: 600 s without a byte (issue #2 `--idle-timeout` default).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Largest non-streaming JSON response body read, in bytes (64 MiB).
const MAX_JSON_BODY: usize = 64 << 20;

/// How to reach one OpenAI-compatible endpoint. `Debug` never prints the API key.
#[derive(Clone)]
pub struct ClientConfig {
    /// Server root, e.g. `http://127.0.0.1:8000` (`--base-url`): `http://` or `https://`
    /// (TLS, verified as `tls` says).
    pub base_url: String,
    /// Path appended to `base_url` (`--endpoint`); `None` = the backend's default.
    pub endpoint: Option<String>,
    /// API flavour (`--backend`).
    pub backend: Backend,
    /// `model` field of every request (`--model`).
    pub model: String,
    /// Sent as `Authorization: Bearer …` (`--api-key` / `OPENAI_API_KEY`). Never recorded.
    pub api_key: Option<String>,
    /// Extra request headers (`--header K:V`).
    pub headers: Vec<(String, String)>,
    /// Headers whose value depends on the request's send index (`--header-template`,
    /// `--dp-rank-roundrobin`; [`crate::headers`]).
    pub header_templates: Vec<crate::headers::HeaderTemplate>,
    /// The first content field ends TTFT even when its text is empty
    /// (`--allow-empty-content`; off by default).
    pub allow_empty_content: bool,
    /// HTTP proxy URL for the requests (`http_proxy` / `HTTP_PROXY` unless `--no-proxy`;
    /// [`crate::proxy`]): used unless the target is loopback or `no_proxy` exempts it.
    pub proxy: Option<String>,
    /// Hosts never proxied (`no_proxy` / `NO_PROXY`: comma-separated, `*` for all).
    pub no_proxy: Option<String>,
    /// How `https://` targets are verified (`--tls-ca`, `--insecure`).
    pub tls: crate::tls::TlsOptions,
    /// JSON object merged into every request body, overriding our keys (`--extra-body`).
    pub extra_body: Option<Map<String, Value>>,
    /// Send `ignore_eos: true` (`--ignore-eos`); also makes completion counts other than
    /// `max_tokens` an `osl_mismatch` anomaly.
    pub ignore_eos: bool,
    /// Body field(s) for the output length (`--max-tokens-field`); `None` = the backend's
    /// default ([`MaxTokensField::default_for`]).
    pub max_tokens_field: Option<MaxTokensField>,
    /// A request fails with `timeout_idle` after this long without a byte (`--idle-timeout`;
    /// default [`DEFAULT_IDLE_TIMEOUT`]). Applies from the send, so a server that never answers
    /// is caught too.
    pub idle_timeout: Duration,
    /// A request fails with `timeout_total` when not finished this long after it was sent
    /// (`--request-timeout`); `None` = no limit.
    pub request_timeout: Option<Duration>,
    /// Counts tokens of received text when the server sends no `usage`; `None` = count
    /// token-bearing chunks instead.
    pub token_counter: Option<Arc<TokenCounter>>,
    /// Time bytes by the kernel's receive timestamp (`SO_TIMESTAMPNS`, [`crate::rxstamp`])
    /// rather than by when this process read them (default true; Linux only). A saturated
    /// client then still measures the server's TTFT and ITL.
    pub rx_timestamps: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8000".into(),
            endpoint: None,
            backend: Backend::default(),
            model: String::new(),
            api_key: None,
            headers: Vec::new(),
            header_templates: Vec::new(),
            allow_empty_content: false,
            proxy: None,
            no_proxy: None,
            tls: crate::tls::TlsOptions::default(),
            extra_body: None,
            ignore_eos: false,
            max_tokens_field: None,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_timeout: None,
            token_counter: None,
            rx_timestamps: true,
        }
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("endpoint", &self.endpoint)
            .field("backend", &self.backend)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("header_templates", &self.header_templates)
            .field("allow_empty_content", &self.allow_empty_content)
            .field(
                "proxy",
                &self.proxy.as_deref().map(crate::proxy::Proxy::parse),
            )
            .field("no_proxy", &self.no_proxy)
            .field("extra_body", &self.extra_body)
            .field("ignore_eos", &self.ignore_eos)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("token_counter", &self.token_counter.is_some())
            .finish()
    }
}

/// Configuration errors of [`Client::new`]. Messages never contain the API key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// `--base-url` + `--endpoint` is not a valid URL.
    #[error("invalid URL {url:?} (from --base-url and --endpoint): {reason}")]
    InvalidUrl {
        /// The URL as assembled.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A scheme other than `http` and `https`.
    #[error("unsupported URL scheme in {url:?}: only http:// and https:// are supported")]
    UnsupportedScheme {
        /// The URL as assembled.
        url: String,
    },
    /// TLS for an `https://` target cannot be set up (a `--tls-ca` file that does not read, a
    /// host that is no TLS server name).
    #[error("TLS for {url:?}: {reason}")]
    Tls {
        /// The URL as assembled.
        url: String,
        /// Why.
        reason: String,
    },
    /// A `--header` (or the API key) is not a valid HTTP header.
    #[error("invalid header {name:?}: {reason}")]
    InvalidHeader {
        /// Header name as given.
        name: String,
        /// Why it was rejected (never the value of `Authorization`).
        reason: String,
    },
}

/// The URL requests go to, `base_url` joined with `endpoint`, as text and parsed, when it is a
/// usable `http://HOST[:PORT]/…` or `https://HOST[:PORT]/…` URL. Errors: no scheme (trial 13: `--base-url 127.0.0.1:8000`
/// got only "invalid format"), a scheme other than http, no host, or not a URL. What
/// [`Client::new`] checks first, and what a caller checks before asking the server anything
/// (trial 22: `bench` without `--model` asked an `https://` server for its models first).
pub fn target_uri(base_url: &str, endpoint: &str) -> Result<(String, Uri), ClientError> {
    let url = join_url(base_url, endpoint);
    if !url.contains("://") {
        return Err(ClientError::InvalidUrl {
            url,
            reason: "missing the http:// scheme (give --base-url as http://HOST:PORT)".into(),
        });
    }
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| ClientError::InvalidUrl {
            url: url.clone(),
            reason: e.to_string(),
        })?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        Some(_) => return Err(ClientError::UnsupportedScheme { url }),
        None => {
            return Err(ClientError::InvalidUrl {
                url,
                reason: "missing http:// scheme".into(),
            })
        }
    }
    if uri.host().is_none() {
        return Err(ClientError::InvalidUrl {
            url,
            reason: "missing host".into(),
        });
    }
    Ok((url, uri))
}

/// Identity and schedule of one request, filled into its record.
#[derive(Debug, Clone, Default)]
pub struct RequestMeta {
    /// Index of the request within the run (schedule order).
    pub request_id: u64,
    /// Warmup or profile.
    pub phase: Phase,
    /// When the scheduler wanted to send it, ns since run start.
    pub scheduled_ns: u64,
    /// Conversation / session id (multi-turn).
    pub conversation_id: Option<String>,
    /// Turn within the conversation.
    pub turn: Option<u32>,
    /// Sent as the `X-Correlation-ID` header: AgentX's session-affinity id, stable for every
    /// turn of one conversation (reference/agentx.md §3.10), so a router keeps a session on one
    /// replica. `None` sends no such header; an id that is not a valid header value is dropped.
    pub correlation_id: Option<String>,
    /// This request's own headers (a dataset line's `extra_headers`), sent after the fixed and
    /// templated ones; a pair that is not a valid header is left out with a warning.
    pub headers: Vec<(String, String)>,
}

/// How long the warmup's connections must stay quiet after their responses before
/// [`Client::await_trust`] lets the profile reuse them at once: 1 s (5 × the in-run
/// [`REUSE_QUIET`]; a server writing stale bytes within it is caught before the profile).
pub const TRUST_QUIET: Duration = Duration::from_secs(1);

/// The longest [`Client::preconnect`] waits for its connections: 5 s.
pub const PRECONNECT_DEADLINE: Duration = Duration::from_secs(5);

/// Set once this process has begun sending its first request (any [`Client`]'s
/// [`Client::send`] or [`Client::send_unindexed`]); never cleared. The CLI's out-of-memory net
/// reads it from a signal handler (an atomic load) to tell "nothing was sent" (exit 2) from a
/// run that ended midway (exit 1).
static REQUEST_SENT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process has begun sending a request ([`REQUEST_SENT`]). Async-signal-safe (one
/// atomic load).
pub fn any_request_sent() -> bool {
    REQUEST_SENT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Streaming OpenAI-compatible HTTP/1.1 client over keep-alive connections: it writes each
/// request and decodes each response itself ([`crate::wire`]), in the request's own task, so
/// body bytes reach the SSE parser as slices of the connection's read buffer.
///
/// Cheap to clone (connection pool shared). Every [`Client::send`] returns exactly one record
/// and never panics. The only re-send: a request that died on a *reused* keep-alive connection
/// before any response byte goes out once more on a fresh connection (the server had closed the
/// idle connection; see [`crate::pool`]). Failures on fresh connections are always recorded.
#[derive(Clone)]
pub struct Client {
    pool: Arc<Pool>,
    uri: Uri,
    /// The request head up to its per-request fields: the request line (origin-form target)
    /// and every fixed header line, each ending in CRLF.
    head: Arc<[u8]>,
    /// `X-Correlation-ID` lines given with `--header`, sent when a request has no correlation
    /// id of its own (empty when none).
    correlation_lines: Arc<[u8]>,
    /// A `--header Connection: close` asked for one request per connection: none is reused.
    close_requested: bool,
    /// `--header-template`s, rendered per request with its send index.
    templates: Arc<crate::headers::Templates>,
    /// The proxy the requests go through, when one applies.
    proxy: Option<crate::proxy::Proxy>,
    /// Requests sent so far (the next send index).
    sends: Arc<std::sync::atomic::AtomicU64>,
    /// The bits of the last `inferbench-sim-time-scale` a response head carried (0: none).
    sim_time_scale: Arc<std::sync::atomic::AtomicU64>,
    cfg: Arc<ClientConfig>,
    clock: RunClock,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("uri", &self.uri)
            .field("cfg", &self.cfg)
            .finish()
    }
}

impl Client {
    /// A client whose clock starts now. See [`Client::with_clock`].
    pub fn new(cfg: ClientConfig) -> Result<Self, ClientError> {
        Self::with_clock(cfg, RunClock::start())
    }

    /// A client stamping records on `clock` (the run's clock). Every time the client reads
    /// (send, chunk and end times, the idle and total deadlines, its pool's check-in times)
    /// comes from `clock`'s [`crate::ClockSource`]: a paused test runtime with
    /// [`crate::ClockSource::Tokio`] runs them in virtual time. Errors: bad URL, non-http
    /// scheme, invalid header name/value.
    pub fn with_clock(cfg: ClientConfig, clock: RunClock) -> Result<Self, ClientError> {
        let endpoint = cfg
            .endpoint
            .clone()
            .unwrap_or_else(|| cfg.backend.default_endpoint().to_string());
        let (url, uri) = target_uri(&cfg.base_url, &endpoint)?;
        let host = uri.host().unwrap_or_default();
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        // `https://`: TLS on every connection; its set-up errors (a bad --tls-ca) come now.
        let tls = if https {
            Some(
                crate::tls::TlsConnector::new(host, &cfg.tls).map_err(|reason| {
                    ClientError::Tls {
                        url: url.clone(),
                        reason,
                    }
                })?,
            )
        } else {
            None
        };
        let proxy = match cfg.proxy.as_deref() {
            Some(p) if crate::proxy::applies(host, port, cfg.no_proxy.as_deref()) => Some(
                crate::proxy::Proxy::parse(p).map_err(|reason| ClientError::InvalidUrl {
                    url: url.clone(),
                    reason: format!(
                        "{reason} (from the environment's {})",
                        crate::proxy::variable_for(https)
                    ),
                })?,
            ),
            _ => None,
        };
        // Through a proxy: its address, and the absolute-form target (`Host` kept); for an
        // `https://` target a CONNECT tunnel to it instead (the request then as sent direct).
        let (pool, absolute_form) =
            Pool::route(host, port, https, proxy.as_ref(), cfg.rx_timestamps, tls);
        let pool = Arc::new(pool.with_clock(clock.source()));
        let path: Uri = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e: http::uri::InvalidUri| ClientError::InvalidUrl {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        let authority = uri.authority().map_or(host, |a| a.as_str());
        let mut headers = HeaderMap::new();
        headers.insert(
            HOST,
            HeaderValue::from_str(authority).map_err(|e| ClientError::InvalidUrl {
                url: url.clone(),
                reason: e.to_string(),
            })?,
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        for (k, v) in &cfg.headers {
            let name = HeaderName::from_bytes(k.trim().as_bytes()).map_err(|e| {
                ClientError::InvalidHeader {
                    name: k.clone(),
                    reason: e.to_string(),
                }
            })?;
            let mut value =
                HeaderValue::from_str(v.trim()).map_err(|e| ClientError::InvalidHeader {
                    name: k.clone(),
                    reason: e.to_string(),
                })?;
            if name == AUTHORIZATION {
                value.set_sensitive(true);
            }
            // The client frames every request itself (one rule with templates and dataset
            // headers: `inferbench_core::http_fields`); a `--header Host: NAME` replaces the
            // URL's authority rather than adding a second `Host` line, and a JSON
            // `Content-Type` the client's own.
            if let Some(reason) = inferbench_core::http_fields::header_refusal(k, v, false) {
                return Err(ClientError::InvalidHeader {
                    name: k.clone(),
                    reason,
                });
            }
            if name == HOST || name == CONTENT_TYPE {
                headers.insert(name, value);
                continue;
            }
            headers.append(name, value);
        }
        // Who is asking, for server logs and proxies (agentx-harness and AIPerf send theirs);
        // a `--header User-Agent: …` replaces it.
        if !headers.contains_key(USER_AGENT) {
            headers.insert(
                USER_AGENT,
                HeaderValue::from_static(concat!("inferbench/", env!("CARGO_PKG_VERSION"))),
            );
        }
        if let Some(key) = cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ClientError::InvalidHeader {
                    name: "Authorization".into(),
                    reason: "the API key contains characters not allowed in a header".into(),
                }
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        // The request head's fixed part, written once here. Framing fields are ours alone
        // (every request is sent with its Content-Length); a `--header X-Correlation-ID` is
        // kept apart because a request's own correlation id replaces it.
        let correlation = HeaderName::from_static("x-correlation-id");
        let mut head = Vec::with_capacity(256);
        let mut correlation_lines = Vec::new();
        head.extend_from_slice(b"POST ");
        if absolute_form {
            head.extend_from_slice(uri.to_string().as_bytes());
        } else {
            head.extend_from_slice(path.path_and_query().map_or("/", |p| p.as_str()).as_bytes());
        }
        head.extend_from_slice(b" HTTP/1.1\r\n");
        if let Some(auth) = proxy.as_ref().and_then(|p| p.auth.as_deref()) {
            // Through a tunnel the proxy read it with CONNECT; the target must not see it.
            if absolute_form {
                push_field(&mut head, "proxy-authorization", auth.as_bytes());
            }
        }
        let mut close_requested = false;
        for (name, value) in &headers {
            if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
                continue;
            }
            if name == CONNECTION {
                close_requested |= value
                    .as_bytes()
                    .split(|&b| b == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
            }
            let out = if name == correlation {
                &mut correlation_lines
            } else {
                &mut head
            };
            push_field(out, name.as_str(), value.as_bytes());
        }
        let templates = Arc::new(crate::headers::Templates::compile(&cfg.header_templates)?);
        Ok(Self {
            pool,
            uri,
            head: head.into(),
            correlation_lines: correlation_lines.into(),
            close_requested,
            templates,
            proxy,
            sends: Arc::default(),
            sim_time_scale: Arc::default(),
            cfg: Arc::new(cfg),
            clock,
        })
    }

    /// The request URL (`base_url` + endpoint).
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The proxy URL the requests go through (credentials left out), `None` when direct.
    pub fn proxy(&self) -> Option<&str> {
        self.proxy.as_ref().map(|p| p.url.as_str())
    }

    /// The client's configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// The run clock records are stamped on.
    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// Opens keep-alive connections until `n` are held, 64 connects at a time, for at most
    /// [`PRECONNECT_DEADLINE`] (see [`Pool::preconnect`]): a closed-loop phase calls it before
    /// its clock starts, so its first `n` sends do not pay for TCP set-up inside the measured
    /// window (at 4,096 streams on one saturated client core the connects alone took ~3 % of
    /// a 10 s window). Returns how many it opened; failures are left to the requests.
    pub async fn preconnect(&self, n: usize) -> usize {
        self.pool.preconnect(n, 64, PRECONNECT_DEADLINE).await
    }

    /// Bounds the connections this client (and its clones) holds open to `concurrency` plus
    /// [`crate::pool::CONNECTION_MARGIN`] (see [`Pool::set_limit`]): a closed loop at
    /// `concurrency` streams calls it before its first request, so probation's fresh
    /// connections and spares never multiply the sockets (issue 39: 1,025 at 150 streams).
    pub fn limit_connections(&self, concurrency: usize) {
        self.pool
            .set_limit(concurrency.saturating_add(crate::pool::CONNECTION_MARGIN));
    }

    /// Connections this client holds open now (idle, pre-opened, in use, connecting).
    pub fn open_connections(&self) -> usize {
        self.pool.open_len()
    }

    /// Keeps `n` pre-opened connections ready, 64 connects at a time, while the pool is on
    /// probation (see [`Pool::keep_spares`]): a closed-loop phase runs it beside its workers so
    /// that the requests of its first [`crate::pool::REUSE_QUIET`] do not connect inside their
    /// own measurement. Returns once the pool is trusted or suspicious, or a connect failed.
    pub async fn keep_spares(&self, n: usize) {
        self.pool.keep_spares(n, 64).await
    }

    /// Waits (at most [`TRUST_QUIET`] + [`REUSE_QUIET`]) until the pool's oldest idle
    /// connection stayed quiet for [`TRUST_QUIET`] after its response, so reuse starts at once
    /// (see [`Pool::await_trust`]): `bench` calls it after its warmup (≤ 1 s more start-up).
    pub async fn await_trust(&self) {
        self.pool
            .await_trust(TRUST_QUIET, TRUST_QUIET + REUSE_QUIET)
            .await
    }

    /// The time scale `inferbench sim` declared on its responses (`inferbench-sim-time-scale`,
    /// sent only when not 1): modelled seconds per wall-clock second. `None` from any other
    /// server, or before a response head arrived.
    pub fn sim_time_scale(&self) -> Option<f64> {
        let bits = self
            .sim_time_scale
            .load(std::sync::atomic::Ordering::Relaxed);
        (bits != 0).then(|| f64::from_bits(bits))
    }

    /// True once a connection showed bytes nobody asked for: keep-alive is off for the rest
    /// of the run (see [`Pool::stale_seen`]).
    pub fn stale_seen(&self) -> bool {
        self.pool.stale_seen()
    }

    /// Waits until the idle connections have been quiet for [`REUSE_QUIET`] after their
    /// responses and checks them for bytes nobody asked for ([`Pool::audit_idle`]; ≤ 200 ms):
    /// `bench` calls it after its profile.
    pub async fn audit_idle(&self) {
        self.pool.audit_idle(REUSE_QUIET).await
    }

    /// Sends one streamed request and returns its record (success, or one [`ErrorClass`] with
    /// a message). `cancel` ends it early as `cancelled`. Timestamps are ns on the run clock:
    /// when the kernel received the bytes (`ClientConfig::rx_timestamps`, Linux), else when
    /// they are read from the connection (before parsing).
    ///
    /// Never panics and never loses the record: a panic while handling the response is caught
    /// and the record (with what was measured so far) ends as `malformed`. Without `usage`, the
    /// tokenizer fallback counts the text after the stream, on a blocking-pool thread, so it
    /// delays no other request's timestamps (see [`crate::openai::count_tokens`]).
    pub async fn send(
        &self,
        input: &RequestInput<'_>,
        meta: RequestMeta,
        cancel: &CancellationToken,
    ) -> RequestRecord {
        // Per-request header lines: templates on the send index, then the request's own.
        let index = self
            .sends
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.send_at(Some(index), input, meta, cancel).await
    }

    /// Sends a request that is not part of the load (a probe, such as the replay's
    /// chat-template probes before its warmup) as [`Client::send`] does, except that it takes
    /// no send index: the next [`Client::send`] gets the index it would have had, and of the
    /// `--header-template`s only those without `{i}` are sent (a dp-rank round-robin's header
    /// is not). The request's own headers are sent.
    pub async fn send_unindexed(
        &self,
        input: &RequestInput<'_>,
        meta: RequestMeta,
        cancel: &CancellationToken,
    ) -> RequestRecord {
        self.send_at(None, input, meta, cancel).await
    }

    /// [`Client::send`] at send index `index` (`None`: outside the load, index-free templates
    /// only).
    async fn send_at(
        &self,
        index: Option<u64>,
        input: &RequestInput<'_>,
        meta: RequestMeta,
        cancel: &CancellationToken,
    ) -> RequestRecord {
        REQUEST_SENT.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut rec = RequestRecord {
            request_id: meta.request_id,
            conversation_id: meta.conversation_id,
            turn: meta.turn,
            phase: meta.phase,
            scheduled_ns: meta.scheduled_ns,
            prompt_tokens: input.prompt_tokens,
            prompt_tokens_client: input.prompt_tokens,
            max_tokens: input.max_tokens,
            ..Default::default()
        };
        let correlation = meta
            .correlation_id
            .as_deref()
            .and_then(|c| HeaderValue::from_str(c).ok());
        let mut lines = Vec::new();
        self.templates.render(index, &meta.headers, &mut lines);
        let outcome =
            catch_unwind(self.exchange(input, (correlation, &lines), cancel, &mut rec)).await;
        match outcome {
            Ok(Some(pending)) => self.count_off_thread(&mut rec, pending, cancel).await,
            Ok(None) => {}
            Err(panic) => {
                let now = self.clock.now_ns();
                if rec.end_ns < rec.sent_ns {
                    rec.end_ns = now.max(rec.sent_ns);
                }
                rec.success = false;
                rec.error_class = Some(ErrorClass::Malformed);
                rec.error = Some(format!(
                    "internal error while handling the response (a client bug; the record keeps \
                     what was measured): {panic}"
                ));
            }
        }
        if rec.success {
            // Once per request, at its end: implausible server numbers (issue 11), after what
            // the exchange itself noted (a response that was not a stream).
            let found = inferbench_core::anomaly::detect(&rec, self.cfg.ignore_eos);
            rec.anomalies.extend(found);
            rec.anomalies.sort();
        } else {
            // A failed request keeps only `usage_invalid`: what the server sent as usage was no
            // count, whatever else ended the request (issue 39, fresh tester's finding 5a: a
            // stream whose only end was a usage chunk with `completion_tokens: NaN` failed
            // without it). It counts in `anomalies`, not in the anomaly rate (successes only).
            rec.anomalies
                .retain(|a| *a == inferbench_core::anomaly::Anomaly::UsageInvalid);
        }
        rec
    }

    /// The tokenizer fallback for a response without `usage`: counts on a blocking-pool thread
    /// (never on the I/O threads), keeps the chunk count when the counter panics or `cancel`
    /// fires first.
    async fn count_off_thread(
        &self,
        rec: &mut RequestRecord,
        pending: PendingCount,
        cancel: &CancellationToken,
    ) {
        let Some(counter) = self.cfg.token_counter.clone() else {
            return;
        };
        let text = rec.output_text.clone();
        let check = std::sync::Arc::new(pending);
        let job = {
            let pending = check.clone();
            tokio::task::spawn_blocking(move || pending.count(&text, &*counter))
        };
        tokio::select! {
            r = job => match r {
                Ok(Some(n)) => check.apply(n, rec),
                Ok(None) | Err(_) if check.judges_usage() => tracing::warn!(
                    "request {}: the tokenizer failed on the output text; the server's usage \
                     was not compared with the stream",
                    rec.request_id
                ),
                Ok(None) | Err(_) => tracing::warn!(
                    "request {}: the tokenizer failed on the output text; completion_tokens is \
                     the number of token-bearing chunks",
                    rec.request_id
                ),
            },
            _ = cancel.cancelled() => {}
        }
    }

    /// One request/response exchange, filling `rec`: sends and waits for the response head
    /// ([`Client::response_head`]), reads the body ([`Client::read_body`]) and judges the
    /// outcome ([`Client::finish_exchange`]). Returns the text still to be counted (the server
    /// sent no `usage`, or one to judge: [`PendingCount`]).
    async fn exchange(
        &self,
        input: &RequestInput<'_>,
        (correlation, lines): (Option<HeaderValue>, &[u8]),
        cancel: &CancellationToken,
        rec: &mut RequestRecord,
    ) -> Option<PendingCount> {
        let body = build_body(
            self.cfg.backend,
            &self.cfg.model,
            input,
            self.cfg.ignore_eos,
            self.cfg.max_tokens_field,
            self.cfg.extra_body.as_ref(),
        );
        let request = self.request_bytes(&body, correlation.as_ref(), lines);
        drop(body);
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        let sent = self.clock.now();
        rec.sent_ns = self.clock.ns_at(sent);
        let limits = Deadlines {
            sent,
            idle: self.cfg.idle_timeout,
            total: self.cfg.request_timeout.map(|d| sent + d),
        };
        let sleep = tokio::time::sleep_until(limits.at(sent).into());
        tokio::pin!(sleep);

        // 1. Response head, read in this task.
        let head = self
            .response_head(&request, &limits, &mut cancelled, &mut sleep)
            .await;
        drop(request);
        let (head, conn, written, wrote_at) = match head {
            Ok(r) => r,
            Err((class, msg)) => return self.fail_now(rec, class, msg),
        };
        if let Some(k) = head.sim_time_scale {
            (self.sim_time_scale).store(k.to_bits(), std::sync::atomic::Ordering::Relaxed);
        }
        // The send time is when the request's first bytes went to the kernel (on the
        // connection that answered), not when this task first asked for a connection: a
        // saturated client's deferred write is its own queue (`client_queue_ms`), not the
        // server's TTFT (issue 14: measured against a loopback capture).
        if let Some(at) = wrote_at {
            rec.sent_ns = self.clock.ns_at(at);
        }
        let head_at = self.clock.now();
        // Times are the kernel's receive times where it gives them (`rxstamp`), never before
        // the send nor before the previous time of this request.
        let stamp = conn.stamp.clone();
        let last_t = stamp.run_ns(self.clock.ns_at(head_at), rec.sent_ns, || {
            self.clock.unix_now_ns()
        });
        rec.first_byte_ns = Some(last_t);
        rec.http_status = Some(head.status);
        let Ok(status) = http::StatusCode::from_u16(head.status) else {
            let msg = format!("invalid response status {}", head.status);
            return self.fail_now(rec, ErrorClass::Malformed, msg);
        };
        let decoder = match Decoder::for_codings(&head.codings) {
            Ok(d) => d,
            Err(msg) if status.is_success() => {
                return self.fail_now(rec, ErrorClass::Malformed, msg);
            }
            Err(_) => None,
        };
        if status.is_success() {
            // One ChunkRecord per token is typical; avoid regrowth for up to 4096 of them.
            rec.chunks
                .reserve(input.max_tokens.map_or(0, |n| n.min(4096) as usize));
        }

        // 2. Body: SSE events (or one JSON object / an error body), byte by byte as read.
        let mut st = BodyState {
            mode: if status.is_success() {
                Mode::Sniff
            } else {
                Mode::ErrorBody
            },
            labelled_sse: head.labelled_sse,
            decoder,
            // One event, or a non-streamed body, is held up to the client's cap when the
            // request has a max_tokens (crate::kept::held_bytes).
            parser: input
                .max_tokens
                .map_or_else(SseParser::new, |m| SseParser::with_limit(held_limit(m))),
            interp: Interpreter::for_backend(self.cfg.backend, self.cfg.allow_empty_content)
                .keeping(input.max_tokens, self.cfg.token_counter.clone()),
            raw: Vec::new(),
            done_read_ns: None,
            cap: input.max_tokens.map(ResponseCap::of),
            decoded: 0,
        };
        let mut read = BodyRead {
            framing: BodyDecoder::new(head.framing),
            // A request cut short by an early response leaves its connection unusable.
            keep_alive: head.keep_alive && written && !self.close_requested,
            conn: Some(conn),
            stamp,
            last_t,
            last_byte: head_at,
        };
        let transport = self
            .read_body(&mut st, &mut read, &limits, &mut cancelled, &mut sleep, rec)
            .await;

        // 3. The outcome.
        self.finish_exchange(st, transport, status, &read.stamp, rec)
    }

    /// The whole request: the fixed head, its per-request header `lines`, this request's
    /// correlation id (else a `--header` one), its `Content-Length`, the JSON body.
    fn request_bytes(
        &self,
        body: &[u8],
        correlation: Option<&HeaderValue>,
        lines: &[u8],
    ) -> Vec<u8> {
        let mut req = Vec::with_capacity(self.head.len() + 96 + lines.len() + body.len());
        req.extend_from_slice(&self.head);
        req.extend_from_slice(lines);
        match correlation {
            Some(c) => push_field(&mut req, "x-correlation-id", c.as_bytes()),
            None => req.extend_from_slice(&self.correlation_lines),
        }
        req.extend_from_slice(b"content-length: ");
        req.extend_from_slice(body.len().to_string().as_bytes());
        req.extend_from_slice(b"\r\n\r\n");
        req.extend_from_slice(body);
        req
    }

    /// Sends the request (on a pooled connection, re-sent once on a fresh one when a reused
    /// connection turns out closed before any response byte) and reads the response head.
    /// Returns the head, its connection (body bytes read with the head are in its buffer) and
    /// whether the whole request was written (a server may answer early, e.g. 413, and stop
    /// reading). Errors, with their class: cancelled, a timeout (`limits`), a failed connect,
    /// a connection that failed before the head (`connect`: no usable response), an invalid
    /// head (`malformed`: the server answered, not in HTTP/1.x).
    async fn response_head(
        &self,
        request: &[u8],
        limits: &Deadlines,
        cancelled: &mut Pin<&mut WaitForCancellationFuture<'_>>,
        sleep: &mut Pin<&mut tokio::time::Sleep>,
    ) -> Result<(Head, Conn, bool, Option<Instant>), (ErrorClass, String)> {
        let fut = async {
            let mut retried = false;
            loop {
                let (mut c, origin) = self
                    .pool
                    .checkout(retried)
                    .await
                    .map_err(|e| (e.class(), connect_failure(&e, &self.uri)))?;
                match write_and_read_head(&mut c, request, &self.clock).await {
                    Ok((head, written, sent)) => {
                        // Bytes the kernel received before this request's write began cannot
                        // answer it: on a kept-alive connection they are an earlier response's
                        // rest (trial 32 F1: a server answering twice; its real answer came µs
                        // after the checkout's poll and was read, TTFT 0, as the next one's).
                        let early = sent
                            .filter(|_| origin == Origin::Reused)
                            .and_then(|s| c.stamp.before(s.unix_ns));
                        let Some(lead) = early else {
                            return Ok((head, c, written, sent.map(|s| s.at)));
                        };
                        self.pool.mark_stale();
                        return Err((
                            ErrorClass::Malformed,
                            format!(
                                "the response head on a kept-alive connection from {} began \
                                 arriving {:.3} ms before the request was sent: the rest of an \
                                 earlier response (the server answered a request twice, or \
                                 wrote past a response's end); keep-alive is off from now on",
                                self.uri,
                                lead as f64 / 1e6
                            ),
                        ));
                    }
                    // The server closed the idle keep-alive connection: re-send once.
                    Err(HeadError::Io {
                        answered: false, ..
                    }) if origin.opened_before() && !retried => {
                        retried = true;
                    }
                    // Some response bytes came, then the connection ended: the server is
                    // reachable and its answer incomplete (trial 30: not "unreachable").
                    Err(HeadError::Io {
                        answered: true,
                        msg,
                    }) => {
                        return Err((
                            ErrorClass::Malformed,
                            format!("incomplete response head from {}: {msg}", self.uri),
                        ))
                    }
                    // A fresh connection (or the re-send's) that the server took and then
                    // dropped without a byte: `connect` (no usable response), but the words
                    // say it was accepted (trial 32 F10: "is the server listening?" misled).
                    Err(HeadError::Io { msg, .. }) => {
                        return Err((
                            ErrorClass::Connect,
                            format!("{ACCEPTED_THEN_FAILED} {}: {msg}", self.uri),
                        ))
                    }
                    // The server answered, but not with an HTTP/1.x head we can read: it is
                    // reachable, so not `connect` (trial 29: a garbage or oversized head was
                    // reported as "server unreachable", exit 3). On a kept-alive connection
                    // such bytes are most likely the rest of an earlier response, written past
                    // its end (trial 31 F4): say so, and reuse no connection from now on.
                    Err(HeadError::Invalid(msg)) => {
                        let leftover = if origin == Origin::Reused {
                            self.pool.mark_stale();
                            " (on a kept-alive connection: most likely the rest of an earlier \
                             response, written past that response's end)"
                        } else {
                            ""
                        };
                        // The parser's own "invalid response head: " is said once (trial 34 F4).
                        let why = msg.strip_prefix("invalid response head: ").unwrap_or(&msg);
                        return Err((
                            ErrorClass::Malformed,
                            format!("invalid response head from {}: {why}{leftover}", self.uri),
                        ));
                    }
                }
            }
        };
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                _ = &mut *cancelled => {
                    return Err((ErrorClass::Cancelled, "cancelled before the response head".into()));
                }
                r = &mut fut => return r,
                _ = &mut *sleep => {
                    let now = self.clock.now();
                    if let Some(class) = limits.expired(now, limits.sent) {
                        let flag = match class {
                            ErrorClass::TimeoutTotal => "--request-timeout",
                            _ => "--idle-timeout",
                        };
                        let msg = format!("no response head after {:.3} s ({flag})", (now - limits.sent).as_secs_f64());
                        return Err((class, msg));
                    }
                    sleep.as_mut().reset(limits.at(limits.sent).into());
                }
            }
        }
    }

    /// Reads the body into `st` until it ends, `[DONE]` arrived and the body end did not
    /// follow within [`DONE_GRACE`], `st` has seen enough (an error body) or failed, a timeout
    /// (`limits`) or cancellation. A body read to its end returns its connection to the pool
    /// (when the response allows keep-alive). Returns the transport failure, if any (a failure
    /// after `[DONE]` is none).
    async fn read_body(
        &self,
        st: &mut BodyState,
        read: &mut BodyRead,
        limits: &Deadlines,
        cancelled: &mut Pin<&mut WaitForCancellationFuture<'_>>,
        sleep: &mut Pin<&mut tokio::time::Sleep>,
        rec: &mut RequestRecord,
    ) -> Option<(ErrorClass, String)> {
        sleep.as_mut().reset(limits.at(read.last_byte).into());
        // Set once `[DONE]` arrived: the result is decided; the body end is awaited only this
        // long (to keep the connection), never failing the request.
        let mut done_grace: Option<Instant> = None;
        // Body bytes that came in the head's read carry its time.
        let mut flow = self.on_bytes(read.last_t, st, read, rec);
        loop {
            if let Flow::Stop(transport) = flow {
                return transport;
            }
            if st.interp.done && done_grace.is_none() {
                let at = read.last_byte + DONE_GRACE;
                done_grace = Some(at);
                sleep.as_mut().reset(at.into());
            }
            flow = tokio::select! {
                biased;
                _ = &mut *cancelled => {
                    return (!st.interp.done)
                        .then(|| (ErrorClass::Cancelled, "cancelled while streaming".into()));
                }
                r = fill(&mut read.conn) => {
                    let now = self.clock.now();
                    match r {
                        Ok(0) => self.on_eof(now, st, read, rec),
                        Ok(_) => {
                            let t = read.stamp.run_ns(self.clock.ns_at(now), read.last_t, || self.clock.unix_now_ns());
                            read.last_t = t;
                            read.last_byte = now;
                            self.on_bytes(t, st, read, rec)
                        }
                        Err(e) => Flow::Stop((!st.interp.done).then(|| {
                            (ErrorClass::StreamError, format!("connection failed mid-body: {e}"))
                        })),
                    }
                }
                _ = &mut *sleep => {
                    let now = self.clock.now();
                    if let Some(at) = done_grace {
                        if now >= at {
                            // `[DONE]` arrived but the body did not end: the measurement
                            // stands; the connection is closed, never reused.
                            return None;
                        }
                        sleep.as_mut().reset(at.into());
                    } else if let Some(class) = limits.expired(now, read.last_byte) {
                        let msg = match class {
                            ErrorClass::TimeoutTotal => format!("request not finished {:.3} s after send (--request-timeout)", (now - limits.sent).as_secs_f64()),
                            _ => format!("no byte for {:.3} s (--idle-timeout)", (now - read.last_byte).as_secs_f64()),
                        };
                        return Some((class, msg));
                    } else {
                        sleep.as_mut().reset(limits.at(read.last_byte).into());
                    }
                    Flow::Continue
                }
            };
        }
    }

    /// Decodes the body bytes in the connection's buffer in place and hands each piece to
    /// `st`, all stamped `t`: the time of the read that carried them (the kernel's receive
    /// time of the latest read where there is one, else when it was read). Consumes what it
    /// decoded; at the body's end returns the connection to the pool (when reusable).
    fn on_bytes(
        &self,
        t: u64,
        st: &mut BodyState,
        read: &mut BodyRead,
        rec: &mut RequestRecord,
    ) -> Flow {
        let Some(conn) = read.conn.as_mut() else {
            return Flow::Continue;
        };
        loop {
            let (n, step) = match read.framing.step(conn.unread()) {
                Ok(s) => s,
                Err(msg) => {
                    return Flow::Stop((!st.interp.done).then(|| {
                        (
                            ErrorClass::Malformed,
                            format!("invalid HTTP body framing: {msg}"),
                        )
                    }));
                }
            };
            match step {
                Step::Data(data) => {
                    let r = st.on_wire(data, t, rec);
                    conn.consume(n);
                    if st.interp.done && st.done_read_ns.is_none() {
                        st.done_read_ns = Some(self.clock.now_ns());
                    }
                    match r {
                        Ok(true) => {}
                        Ok(false) => return Flow::Stop(None),
                        Err(e) => return Flow::Stop(Some(e)),
                    }
                    if st.interp.failure.is_some() {
                        return Flow::Stop(None);
                    }
                }
                Step::More => {
                    conn.consume(n);
                    return Flow::Continue;
                }
                Step::End => {
                    conn.consume(n);
                    // An event stream whose declared framing (Content-Length, the chunked
                    // terminator) ended before `[DONE]` while more bytes already followed: the
                    // framing cut the stream short and the rest would go uncounted. A failure,
                    // not a shorter success (trial 29 #2). Bytes arriving later than this
                    // poll are only the pool's stale-bytes warning.
                    let stream =
                        st.mode == Mode::Sse || (st.mode == Mode::Sniff && st.labelled_sse);
                    if stream && !st.interp.done && conn.poll_idle() == IdleState::Stale {
                        let extra = conn.unread().len();
                        read.conn = None;
                        self.pool.mark_stale();
                        return Flow::Stop(Some((
                            ErrorClass::Malformed,
                            format!(
                                "the body ended at its declared length before the stream's \
                                 [DONE], and {extra} more bytes followed on the connection: \
                                 the server's Content-Length or chunked framing is wrong; the \
                                 tokens after it were not counted"
                            ),
                        )));
                    }
                    // Body read to the end: the connection can carry the next request (the
                    // pool checks it for unread bytes first).
                    if let Some(c) = read.conn.take().filter(|_| read.keep_alive) {
                        self.pool.checkin(c);
                    }
                    return Flow::Stop(st.on_end(t, rec).err());
                }
            }
        }
    }

    /// The server closed the connection at `now`: the end of a close-delimited body, else a
    /// body cut short (`stream_error`, none after `[DONE]`).
    fn on_eof(
        &self,
        now: Instant,
        st: &mut BodyState,
        read: &mut BodyRead,
        rec: &mut RequestRecord,
    ) -> Flow {
        read.conn = None;
        match read.framing.at_eof() {
            Ok(()) => {
                let t = read.stamp.run_ns(self.clock.ns_at(now), read.last_t, || {
                    self.clock.unix_now_ns()
                });
                read.last_t = t;
                Flow::Stop(st.on_end(t, rec).err())
            }
            Err(msg) => Flow::Stop((!st.interp.done).then(|| {
                (
                    ErrorClass::StreamError,
                    format!("connection failed mid-body: {msg}"),
                )
            })),
        }
    }

    /// Judges a finished exchange: the end time (`[DONE]`'s, else when reading stopped), the
    /// usage counts, and success or the first failure (HTTP status, the interpreter's, the
    /// transport's, no token-bearing chunk, an event stream that ended without a terminal
    /// signal: [`Interpreter::complete`]). Returns the text still to be counted.
    fn finish_exchange(
        &self,
        st: BodyState,
        transport: Option<(ErrorClass, String)>,
        status: http::StatusCode,
        stamp: &RxStamp,
        rec: &mut RequestRecord,
    ) -> Option<PendingCount> {
        // `[DONE]` ends the measurement; what the server does afterwards does not count, for
        // the slot's read end either.
        let read_end = (st.done_read_ns).unwrap_or_else(|| self.clock.now_ns());
        rec.end_ns = match st.interp.done_ns {
            Some(t) => t,
            None => read_end,
        };
        // With kernel stamps, when the end was read (the wait for a busy client shows there).
        if stamp.unix_ns().is_some() {
            rec.read_end_ns = Some(read_end.max(rec.end_ns));
        }
        let BodyState {
            mode,
            mut interp,
            parser,
            raw,
            ..
        } = st;
        let interp_failure = interp.failure.take();
        let terminal = interp.terminal_signal();
        let incomplete_msg = interp.incomplete_message();
        // Only an event stream has a terminal signal to miss; one JSON body is complete by
        // being whole JSON (a cut one fails to parse).
        let incomplete = mode == Mode::Sse && !interp.complete();
        let pending = interp.finish_usage(rec);
        if !status.is_success() {
            let msg = format!(
                "HTTP {}: {}",
                status,
                String::from_utf8_lossy(excerpt(&raw)).trim()
            );
            set_failed(rec, ErrorClass::HttpStatus, msg);
            return pending;
        }
        if let Some((class, msg)) = interp_failure.or(transport) {
            set_failed(rec, class, msg);
            return pending;
        }
        if rec.chunks.is_empty() {
            let msg = format!(
                "stream ended without a token-bearing chunk ({} comment lines{})",
                parser.comments(),
                terminal.map_or_else(String::new, |t| format!(", {t} seen"))
            );
            set_failed(rec, ErrorClass::StreamError, msg);
            return pending;
        }
        if incomplete {
            set_failed(rec, ErrorClass::StreamError, incomplete_msg.to_string());
            return pending;
        }
        rec.success = true;
        if mode == Mode::Json {
            // Asked for a stream, got one JSON body: TTFT = E2EL (trial 32 F4).
            rec.anomalies
                .push(inferbench_core::anomaly::Anomaly::NotStreamed);
        }
        pending
    }

    /// Fails `rec` now (before any body was read): nothing to count.
    fn fail_now(
        &self,
        rec: &mut RequestRecord,
        class: ErrorClass,
        msg: String,
    ) -> Option<PendingCount> {
        rec.end_ns = self.clock.now_ns();
        set_failed(rec, class, msg);
        None
    }
}

/// How a `connect` failure begins when the TCP connection was made and then failed before
/// any response byte (closed or reset by the peer): something listens there, but does not
/// answer HTTP (a TLS or other service's port, a proxy without a backend, a server at its
/// connection limit). See [`accepted_then_failed`].
pub const ACCEPTED_THEN_FAILED: &str =
    "the connection was accepted, then failed before any response byte from";

/// The message of a failed connect: a reset or abort during the handshake means something
/// accepted the connection and dropped it at once (trial 33 F5: a server at its connection
/// limit resets; "is the server listening?" misled), worded as [`ACCEPTED_THEN_FAILED`];
/// anything else (refused, unreachable, DNS) as the error says.
fn connect_failure(e: &crate::pool::ConnectError, uri: &Uri) -> String {
    let crate::pool::ConnectError::Tcp { source, .. } = e else {
        // The client's own limit: its own words ([`crate::pool::ConnectError::Resource`]).
        return e.to_string();
    };
    match source.kind() {
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
            format!("{ACCEPTED_THEN_FAILED} {uri}: {source} (while connecting)")
        }
        _ => e.to_string(),
    }
}

/// True when a `connect` failure's message is a failed TLS handshake
/// ([`crate::pool::ConnectError::Tls`]): something answered, but TLS could not be set up.
pub fn tls_failed(msg: &str) -> bool {
    msg.starts_with("TLS handshake with ")
}

/// True when a `connect` failure's message is a proxy that gave no `CONNECT` tunnel
/// ([`crate::pool::ConnectError::Tunnel`]).
pub fn tunnel_refused(msg: &str) -> bool {
    msg.starts_with("the proxy ") && msg.contains(" gave no tunnel: ")
}

/// True when a `connect` failure's message is a proxy that could not be reached
/// ([`crate::pool::ConnectError::Proxy`]).
pub fn proxy_unreachable(msg: &str) -> bool {
    msg.starts_with("cannot connect to the proxy ")
}

/// True when a `connect` failure's message says the connection was accepted first
/// ([`ACCEPTED_THEN_FAILED`]), not refused or unroutable.
pub fn accepted_then_failed(msg: &str) -> bool {
    msg.starts_with(ACCEPTED_THEN_FAILED)
}

/// What to check when a server could not be reached, from the connect failure's message `msg`:
/// a measured request's error, or a side request's (`GET url: …`, a download's) whose cause
/// follows a `: `. The one rule of `bench`/`replay`'s end note, the `/v1/models` lookup and
/// `eval`'s download: a proxy that could not be reached ([`proxy_unreachable`]) is named as
/// what to fix, whatever the server's state; then a proxy that gave no tunnel, a TLS failure,
/// a port that accepts and drops; else the address.
pub fn unreachable_advice(msg: &str) -> &'static str {
    let causes = || std::iter::once(msg).chain(msg.match_indices(": ").map(|(i, _)| &msg[i + 2..]));
    if causes().any(tls_failed) {
        "the server is there, but TLS could not be set up with it: see the cause above"
    } else if causes().any(proxy_unreachable) {
        "the proxy is not reachable, whatever the server's state: check the proxy variable named \
         above, or NO_PROXY / --no-proxy to go direct"
    } else if causes().any(tunnel_refused) {
        "the proxy is there but gave no tunnel: check https_proxy/HTTPS_PROXY, or NO_PROXY / \
         --no-proxy to go direct"
    } else if causes().any(accepted_then_failed) {
        "something listens there but drops connections without an HTTP answer: is it the \
         server's HTTP port (not TLS or another service), is the server still starting, or at \
         its connection limit? check --base-url, or --host and --port"
    } else {
        "is the server running and listening there? check the address: --base-url, or --host \
         and --port"
    }
}

/// How long the body end is awaited after `[DONE]` before the connection is given up (the
/// request's result is decided at `[DONE]`).
const DONE_GRACE: Duration = Duration::from_millis(100);

/// Most bytes looked at to decide whether a body that is not labelled `text/event-stream` is
/// an event stream (only leading whitespace can make it that long).
const SNIFF_MAX: usize = 64 << 10;

/// How the body of a response is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Not yet known: SSE or one JSON object (the first significant bytes decide).
    Sniff,
    /// An event stream.
    Sse,
    /// One JSON object (a non-streaming response).
    Json,
    /// A non-2xx body, kept only as an excerpt for the error message.
    ErrorBody,
}

/// A request's time limits: `idle` since the last byte, and `total` (an instant) since the
/// send (`--idle-timeout`, `--request-timeout`).
struct Deadlines {
    sent: Instant,
    idle: Duration,
    total: Option<Instant>,
}

impl Deadlines {
    /// When the request times out if no byte arrives after `last` (the earlier of the idle
    /// and the total deadline).
    fn at(&self, last: Instant) -> Instant {
        let idle_at = last
            .checked_add(self.idle)
            .unwrap_or(last + Duration::from_secs(1 << 30));
        match self.total {
            Some(t) => t.min(idle_at),
            None => idle_at,
        }
    }

    /// Which timeout has expired at `now` with the last byte at `last` ([`timeout_class`]).
    fn expired(&self, now: Instant, last: Instant) -> Option<ErrorClass> {
        timeout_class(now, last, self.idle, self.total)
    }
}

/// A response body being read: its framing, whether its connection may carry another request
/// after it, the connection (`None` once closed or handed back), the connection's receive
/// stamp, and the latest time given to body bytes (run-clock ns) and when they were read.
struct BodyRead {
    framing: BodyDecoder,
    keep_alive: bool,
    conn: Option<Conn>,
    stamp: RxStamp,
    last_t: u64,
    last_byte: Instant,
}

/// Whether [`Client::on_bytes`] wants more of the body, or reading stops (with the
/// transport failure, if any).
enum Flow {
    Continue,
    Stop(Option<(ErrorClass, String)>),
}

/// The state of reading one response body.
struct BodyState {
    mode: Mode,
    /// `Content-Type: text/event-stream` (any case, any parameters).
    labelled_sse: bool,
    /// A `Content-Encoding` the server applied although we asked for none.
    decoder: Option<Decoder>,
    parser: SseParser,
    interp: Interpreter,
    /// The JSON body, the error body excerpt, or the bytes seen while sniffing.
    raw: Vec<u8>,
    /// When this process read `[DONE]` (run-clock ns): the request's end as far as the
    /// client's slot goes; the server's body end after it is the server's time (trial 34 F2:
    /// a chunked terminator 20 ms after `[DONE]` made an idle client look client-bound).
    done_read_ns: Option<u64>,
    /// What one response may carry ([`ResponseCap`]); `None` without a `max_tokens`.
    cap: Option<ResponseCap>,
    /// Decoded body bytes so far.
    decoded: u64,
}

/// Decoded body bytes a response may carry besides [`RESPONSE_BYTES_PER_MAX_TOKEN`] per
/// requested token: 1 MiB.
pub const RESPONSE_BASE_BYTES: u64 = 1 << 20;

/// Decoded body bytes a response may carry per requested token (`max_tokens`): 64 KiB (a
/// chat chunk with 20 top logprobs is ~4 KiB).
pub const RESPONSE_BYTES_PER_MAX_TOKEN: u64 = 64 << 10;

/// Token-bearing chunks a response may carry per requested token: 16, plus
/// [`RESPONSE_EXTRA_CHUNKS`]. Between 1× and this, output beyond `max_tokens` is an anomaly
/// (`output_exceeds_max_tokens`); past it the response is cut off.
pub const RESPONSE_CHUNKS_PER_MAX_TOKEN: u64 = 16;

/// Token-bearing chunks a response may carry besides [`RESPONSE_CHUNKS_PER_MAX_TOKEN`] per
/// requested token: 64.
pub const RESPONSE_EXTRA_CHUNKS: u64 = 64;

/// The most one response may carry before it is cut off and fails (`stream_error`, "response
/// cut off: …"): a server that ignores `max_tokens` (400 MB for `max_tokens` 8) ends that
/// request, not the run for want of memory (trial of issue 39, finding 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseCap {
    /// The requested `max_tokens`.
    pub max_tokens: u32,
    /// Decoded body bytes: [`RESPONSE_BASE_BYTES`] + [`RESPONSE_BYTES_PER_MAX_TOKEN`] ×
    /// `max_tokens`.
    pub bytes: u64,
    /// Token-bearing chunks: [`RESPONSE_CHUNKS_PER_MAX_TOKEN`] × `max_tokens` +
    /// [`RESPONSE_EXTRA_CHUNKS`].
    pub chunks: u64,
}

impl ResponseCap {
    /// The cap of a request for `max_tokens` tokens.
    pub fn of(max_tokens: u32) -> Self {
        let n = u64::from(max_tokens);
        Self {
            max_tokens,
            bytes: RESPONSE_BASE_BYTES
                .saturating_add(n.saturating_mul(RESPONSE_BYTES_PER_MAX_TOKEN)),
            chunks: n
                .saturating_mul(RESPONSE_CHUNKS_PER_MAX_TOKEN)
                .saturating_add(RESPONSE_EXTRA_CHUNKS),
        }
    }

    /// Why a response of `bytes` decoded bytes, `chunks` token-bearing chunks and `text_bytes`
    /// bytes of output text so far passes the cap; `None` within it. Past the byte cap, the
    /// reason says what filled it: output beyond `max_tokens` (more token chunks than
    /// `max_tokens`, or text making up a quarter of the bytes or more: the bytes of the read
    /// being checked are not parsed yet), else bytes that carried no
    /// tokens (keepalive comments, empty or token-less events; issue 39, fresh tester: an
    /// endless stream of `: keepalive` comments was said to ignore max_tokens).
    pub fn passed(&self, bytes: u64, chunks: u64, text_bytes: u64) -> Option<String> {
        if bytes > self.bytes {
            let output = chunks > u64::from(self.max_tokens) || text_bytes >= bytes / 4;
            let why = if output {
                "the server ignored max_tokens".to_string()
            } else {
                format!(
                    "only {chunks} token chunks ({text_bytes} bytes of text) arrived: the rest \
                     carried no tokens (keepalive comments, empty or token-less events)"
                )
            };
            return Some(format!(
                "response cut off: more than {} bytes (the client's cap: 1 MiB + 64 KiB × \
                 max_tokens {}): {why}",
                self.bytes, self.max_tokens
            ));
        }
        (chunks > self.chunks).then(|| {
            format!(
                "response cut off: more than {} token chunks (the client's cap: 16 × max_tokens \
                 {} + 64): the server ignored max_tokens",
                self.chunks, self.max_tokens
            )
        })
    }
}

/// The longest event or non-streamed body held for a request for `max_tokens` tokens, bytes
/// ([`crate::kept::held_bytes`]).
fn held_limit(max_tokens: u32) -> usize {
    usize::try_from(crate::kept::held_bytes(u64::from(max_tokens))).unwrap_or(usize::MAX)
}

/// Why a response was cut off at one `what` (an SSE line or event, a JSON body) longer than
/// `most` bytes, the client's cap on what it holds at once for `cap`'s `max_tokens`.
fn held_past(cap: ResponseCap, most: usize, what: &str) -> String {
    format!(
        "response cut off: one {what} longer than {most} bytes (the client's cap on what it holds \
         at once: 100 KiB + 32 × max_tokens {} + 1 KiB): a single event larger than the \
         client's cap, not keepalive bytes",
        cap.max_tokens
    )
}

/// The failure of an SSE framing error: past the per-request limit (`cap`: a request with a
/// `max_tokens`) the response is cut off ([`held_past`], `stream_error`); past the parser's
/// own limit, malformed.
fn too_long(e: crate::sse::SseError, cap: Option<ResponseCap>) -> (ErrorClass, String) {
    match (e, cap) {
        (crate::sse::SseError::TooLong(most), Some(c)) => (
            ErrorClass::StreamError,
            held_past(c, most, "SSE line or event"),
        ),
        (e, _) => (ErrorClass::Malformed, e.to_string()),
    }
}

impl BodyState {
    /// Bytes as they came off the connection. `Ok(false)`: stop reading (enough of an error
    /// body). Errors: undecodable content encoding, SSE framing limits, JSON body too large.
    fn on_wire(
        &mut self,
        data: &[u8],
        t: u64,
        rec: &mut RequestRecord,
    ) -> Result<bool, (ErrorClass, String)> {
        match self.decoder.as_mut() {
            None => self.on_data(data, t, rec),
            Some(d) => {
                let out = d.decode(data)?;
                self.on_data(&out, t, rec)
            }
        }
    }

    /// Decoded body bytes.
    fn on_data(
        &mut self,
        data: &[u8],
        t: u64,
        rec: &mut RequestRecord,
    ) -> Result<bool, (ErrorClass, String)> {
        self.decoded = self.decoded.saturating_add(data.len() as u64);
        if let Some(cap) = self.cap {
            // Chunks and text counted, kept or not (crate::kept): a response whose text is
            // past the kept budget is not made of keepalives.
            if let Some(why) = cap.passed(
                self.decoded,
                self.interp.chunks_counted(rec),
                self.interp.text_bytes(),
            ) {
                return Err((ErrorClass::StreamError, why));
            }
        }
        match self.mode {
            Mode::Sse => {
                let interp = &mut self.interp;
                let cap = self.cap;
                self.parser
                    .feed(data, |ev| interp.on_event(ev, t, rec))
                    .map_err(|e| too_long(e, cap))?;
                Ok(true)
            }
            Mode::Json => {
                let most = self.cap.map_or(MAX_JSON_BODY, |c| held_limit(c.max_tokens));
                if self.raw.len() + data.len() > most {
                    return Err(match self.cap {
                        Some(c) => (ErrorClass::StreamError, held_past(c, most, "JSON body")),
                        None => (
                            ErrorClass::Malformed,
                            format!("JSON response body over {MAX_JSON_BODY} bytes"),
                        ),
                    });
                }
                self.raw.extend_from_slice(data);
                Ok(true)
            }
            Mode::ErrorBody => {
                let room = 4096usize.saturating_sub(self.raw.len());
                self.raw.extend_from_slice(&data[..data.len().min(room)]);
                Ok(self.raw.len() < 4096)
            }
            Mode::Sniff => {
                self.raw.extend_from_slice(data);
                let decided = match sniff_sse(&self.raw, self.labelled_sse) {
                    Some(sse) => sse,
                    None if self.raw.len() > SNIFF_MAX => self.labelled_sse,
                    None => return Ok(true),
                };
                self.decide(decided, t, rec)
            }
        }
    }

    /// Leaves sniffing: replays the bytes seen so far in the chosen mode.
    fn decide(
        &mut self,
        sse: bool,
        t: u64,
        rec: &mut RequestRecord,
    ) -> Result<bool, (ErrorClass, String)> {
        let seen = std::mem::take(&mut self.raw);
        self.mode = if sse { Mode::Sse } else { Mode::Json };
        self.on_data(&seen, t, rec)
    }

    /// The body ended cleanly.
    fn on_end(&mut self, t: u64, rec: &mut RequestRecord) -> Result<(), (ErrorClass, String)> {
        if let Some(d) = self.decoder.as_mut() {
            let out = d.finish()?;
            self.on_data(&out, t, rec)?;
        }
        if self.mode == Mode::Sniff {
            self.decide(self.labelled_sse, t, rec)?;
        }
        match self.mode {
            Mode::Sse => {
                let interp = &mut self.interp;
                let cap = self.cap;
                self.parser
                    .finish(|ev| interp.on_event(ev, t, rec))
                    .map_err(|e| too_long(e, cap))?;
            }
            Mode::Json => {
                let body = self.raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&self.raw);
                self.interp.on_json(body, t, rec);
            }
            Mode::ErrorBody | Mode::Sniff => {}
        }
        Ok(())
    }
}

/// Whether a 2xx body that starts with `prefix` is an event stream: `Some(true)` when its
/// first significant bytes (after one optional BOM and leading whitespace) are an SSE field
/// (`data`, `event`, `id`, `retry`, followed by `:` or a line end) or a `:` comment,
/// `Some(false)` when they are anything else, `None` while too few bytes have arrived to
/// tell. A body labelled `text/event-stream` is an event stream unless it starts with `{` or
/// `[` (a JSON response under the wrong label).
fn sniff_sse(prefix: &[u8], labelled_sse: bool) -> Option<bool> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let mut p = prefix;
    if p.len() < BOM.len() && BOM.starts_with(p) {
        return None;
    }
    p = p.strip_prefix(BOM).unwrap_or(p);
    let start = p
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))?;
    let p = &p[start..];
    match p[0] {
        b':' => return Some(true),
        b'{' | b'[' => return Some(false),
        _ if labelled_sse => return Some(true),
        _ => {}
    }
    let mut undecided = false;
    for name in [&b"data"[..], b"event", b"id", b"retry"] {
        if p.len() > name.len() {
            if p.starts_with(name) && matches!(p[name.len()], b':' | b'\r' | b'\n') {
                return Some(true);
            }
        } else if name.starts_with(p) {
            undecided = true;
        }
    }
    if undecided {
        None
    } else {
        Some(false)
    }
}

/// A decoder for a `Content-Encoding` the server applied unasked (we send no
/// `Accept-Encoding`; Python clients decode it transparently, so the sample is kept).
enum Decoder {
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
}

impl Decoder {
    /// The decoder for the response's `Content-Encoding` codings ([`Head::codings`]:
    /// lower-cased, without `identity`): `gzip`, `x-gzip`, `deflate`; none for none. Errors:
    /// an encoding we cannot decode (several, `br`, …).
    fn for_codings(codings: &[String]) -> Result<Option<Self>, String> {
        match codings {
            [] => Ok(None),
            [c] if c == "gzip" || c == "x-gzip" => Ok(Some(Decoder::Gzip(
                flate2::write::GzDecoder::new(Vec::new()),
            ))),
            [c] if c == "deflate" => Ok(Some(Decoder::Deflate(flate2::write::ZlibDecoder::new(
                Vec::new(),
            )))),
            _ => Err(format!(
                "response Content-Encoding {:?} cannot be decoded (the request asked for none)",
                codings.join(", ")
            )),
        }
    }

    fn decode(&mut self, data: &[u8]) -> Result<Vec<u8>, (ErrorClass, String)> {
        use std::io::Write;
        let r = match self {
            Decoder::Gzip(d) => d.write_all(data).map(|_| std::mem::take(d.get_mut())),
            Decoder::Deflate(d) => d.write_all(data).map(|_| std::mem::take(d.get_mut())),
        };
        r.map_err(|e| {
            (
                ErrorClass::Malformed,
                format!("undecodable compressed body: {e}"),
            )
        })
    }

    fn finish(&mut self) -> Result<Vec<u8>, (ErrorClass, String)> {
        let r = match self {
            Decoder::Gzip(d) => d.try_finish().map(|_| std::mem::take(d.get_mut())),
            Decoder::Deflate(d) => d.try_finish().map(|_| std::mem::take(d.get_mut())),
        };
        r.map_err(|e| {
            (
                ErrorClass::Malformed,
                format!("undecodable compressed body: {e}"),
            )
        })
    }
}

/// Polls `fut` to completion, turning a panic into `Err(message)` instead of unwinding into
/// the caller (the record the future was filling stays with the caller).
async fn catch_unwind<F: Future>(fut: F) -> Result<F::Output, String> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(p) => Poll::Ready(Err(panic_message(p.as_ref()))),
        }
    })
    .await
}

/// The message of a panic payload.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// Reads once into the connection's buffer (pending forever without a connection).
async fn fill(conn: &mut Option<Conn>) -> std::io::Result<usize> {
    match conn.as_mut() {
        Some(c) => std::future::poll_fn(|cx| c.poll_fill(cx)).await,
        None => std::future::pending().await,
    }
}

/// Why no response head came from a connection.
enum HeadError {
    /// The connection failed or closed first; `answered`: some response byte had arrived.
    Io { answered: bool, msg: String },
    /// The bytes are not a response head we accept ([`parse_head`]).
    Invalid(String),
}

/// When the write that put a request's first bytes into the kernel began: on the monotonic
/// clock (the send time of the record) and on `CLOCK_REALTIME` (to set against kernel receive
/// stamps, [`crate::rxstamp::RxStamp::before`]).
#[derive(Debug, Clone, Copy)]
struct SentAt {
    at: Instant,
    unix_ns: u64,
}

impl SentAt {
    /// Now, on both of `clock`'s clocks.
    fn now(clock: &RunClock) -> Self {
        SentAt {
            at: clock.now(),
            unix_ns: clock.unix_now_ns(),
        }
    }
}

/// Writes `request` on `c` while reading its response head (a server may answer before it
/// read the whole request, e.g. nginx's 413, and a write blocked on its full receive window
/// must not hide that answer); interim `1xx` responses are skipped. Returns the final head,
/// consumed from the buffer (body bytes read with it stay there), whether the whole request
/// was written, and when the write that put its first bytes into the kernel began (the send
/// time: a write the runtime deferred, e.g. for its cooperative budget, is not the server's
/// time). Errors: the connection failed or closed before a head (the write's error is named
/// when there was one), or an invalid head.
async fn write_and_read_head(
    c: &mut Conn,
    request: &[u8],
    clock: &RunClock,
) -> Result<(Head, bool, Option<SentAt>), HeadError> {
    let mut written = 0;
    let mut first_write: Option<SentAt> = None;
    let mut write_err: Option<std::io::Error> = None;
    let mut answered = false;
    // Bytes arrived that may complete a head: parsed only then, so a server trickling a long
    // head costs one parse per line end, not one per read or wake-up.
    let mut fresh = false;
    std::future::poll_fn(|cx| {
        while written < request.len() && write_err.is_none() {
            // The send time is the first write's start: later writes take no clock readings.
            let at = first_write.is_none().then(|| SentAt::now(clock));
            // A write the socket takes now goes out now, whatever the task's budget; only a
            // full socket falls back to the waker-registering poll.
            let r = match c.try_write(&request[written..]) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    c.poll_write(cx, &request[written..])
                }
                r => Poll::Ready(r),
            };
            match r {
                Poll::Ready(Ok(0)) => write_err = Some(std::io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    first_write = first_write.or(at);
                    written += n;
                }
                Poll::Ready(Err(e)) => write_err = Some(e),
                Poll::Pending => break,
            }
        }
        // A TLS session may still hold the request's last records (a no-op on plain TCP).
        if written == request.len() && write_err.is_none() {
            if let Poll::Ready(Err(e)) = c.poll_flush(cx) {
                write_err = Some(e);
            }
        }
        loop {
            if std::mem::take(&mut fresh) {
                match parse_head(c.unread()) {
                    Ok(HeadParse::Final(head, n)) => {
                        c.consume(n);
                        return Poll::Ready(Ok((head, written == request.len(), first_write)));
                    }
                    Ok(HeadParse::Interim(n)) => {
                        c.consume(n);
                        fresh = true;
                        continue;
                    }
                    Ok(HeadParse::Partial) => {}
                    Err(msg) => return Poll::Ready(Err(HeadError::Invalid(msg))),
                }
            }
            let failed = |what: String, write_err: &mut Option<std::io::Error>| HeadError::Io {
                answered,
                msg: match write_err.take() {
                    Some(w) => format!("writing the request: {w}"),
                    None => what,
                },
            };
            match ready!(c.poll_fill(cx)) {
                Ok(0) => {
                    let what = if answered {
                        "connection closed inside the response head"
                    } else {
                        "connection closed before the response head"
                    };
                    return Poll::Ready(Err(failed(what.into(), &mut write_err)));
                }
                Ok(n) => {
                    answered = true;
                    let unread = c.unread();
                    // Also the first bytes of a head: garbage without a line end (a TLS
                    // alert from an https port) is refused at once, not left to EOF or the
                    // idle timeout (trial 30).
                    fresh = unread.len() == n
                        || unread.len() >= crate::wire::HEAD_MAX
                        || memchr::memchr(b'\n', &unread[unread.len().saturating_sub(n)..])
                            .is_some();
                }
                Err(e) => return Poll::Ready(Err(failed(e.to_string(), &mut write_err))),
            }
        }
    })
    .await
}

/// Appends the header line `name: value` + CRLF.
fn push_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

fn set_failed(rec: &mut RequestRecord, class: ErrorClass, msg: String) {
    rec.success = false;
    rec.error_class = Some(class);
    rec.error = Some(msg);
}

/// Which timeout (if any) has expired at `now`: total first, then idle since `last_byte`.
fn timeout_class(
    now: Instant,
    last_byte: Instant,
    idle: Duration,
    total_deadline: Option<Instant>,
) -> Option<ErrorClass> {
    if total_deadline.is_some_and(|t| now >= t) {
        Some(ErrorClass::TimeoutTotal)
    } else if now.saturating_duration_since(last_byte) >= idle {
        Some(ErrorClass::TimeoutIdle)
    } else {
        None
    }
}

/// `base` without trailing `/` + `endpoint` with exactly one leading `/`: the URL requests go
/// to (named in messages about them).
pub fn join_url(base: &str, endpoint: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    let endpoint = endpoint.trim();
    if endpoint.is_empty() {
        return base.to_string();
    }
    format!("{base}/{}", endpoint.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    /// The one advice rule reads a side request's cause after its `METHOD url: ` prefix.
    #[test]
    fn unreachable_advice_reads_the_cause_of_a_side_request() {
        let proxy = "cannot connect to the proxy 127.0.0.1:9 (from the environment's \
                     http_proxy / HTTP_PROXY): Connection refused (os error 111)";
        for msg in [
            proxy.to_string(),
            format!("GET http://h:8000/v1/models: {proxy}"),
        ] {
            assert!(
                super::unreachable_advice(&msg).starts_with("the proxy is not reachable"),
                "{msg}"
            );
        }
        assert!(super::unreachable_advice(
            "GET http://h/v1/models: cannot connect to h:80: Connection refused"
        )
        .starts_with("is the server running and listening there?"));
    }

    use super::*;

    /// Issue 39, fresh tester's finding 4: `--header` may not set a framing field (one rule
    /// with templates and datasets, `inferbench_core::http_fields`), and a `--header Host`
    /// replaces the URL's authority: one `Host` line, never two.
    #[test]
    fn header_flags_refuse_framing_fields_and_host_replaces() {
        let with = |k: &str, v: &str| ClientConfig {
            base_url: "http://h:1".into(),
            headers: vec![(k.to_string(), v.to_string())],
            ..Default::default()
        };
        for k in ["Content-Length", "transfer-encoding", "Expect"] {
            match Client::new(with(k, "3")) {
                Err(ClientError::InvalidHeader { name, reason }) => {
                    assert_eq!(name, k);
                    assert_eq!(
                        reason,
                        format!("{k} is a framing, body-encoding or connection field the client writes itself; it cannot be set")
                    );
                }
                Err(e) => panic!("{k}: {e}"),
                Ok(_) => panic!("{k}: accepted"),
            }
        }
        let c = Client::new(with("Host", "api.example")).unwrap();
        let head = String::from_utf8_lossy(&c.head).to_ascii_lowercase();
        assert_eq!(head.matches("\r\nhost: ").count(), 1, "{head}");
        assert!(head.contains("\r\nhost: api.example\r\n"), "{head}");
        // f14 item 4: every hop-by-hop field and a body description that is not the body's.
        for (k, v) in [
            ("Connection", "close"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"),
            ("Trailer", "X"),
            ("Upgrade", "h2c"),
            ("TE", "trailers"),
            ("Content-Encoding", "gzip"),
            ("Content-Type", "text/plain"),
        ] {
            assert!(
                matches!(
                    Client::new(with(k, v)),
                    Err(ClientError::InvalidHeader { .. })
                ),
                "{k}"
            );
        }
        // A JSON Content-Type replaces the client's: one line.
        let c = Client::new(with("Content-Type", "application/json; charset=utf-8")).unwrap();
        let head = String::from_utf8_lossy(&c.head).to_ascii_lowercase();
        assert_eq!(head.matches("\r\ncontent-type: ").count(), 1, "{head}");
        assert!(
            head.contains("\r\ncontent-type: application/json; charset=utf-8\r\n"),
            "{head}"
        );
    }

    #[test]
    fn url_join_and_validation() {
        assert_eq!(
            join_url("http://h:1/", "/v1/completions"),
            "http://h:1/v1/completions"
        );
        assert_eq!(join_url("http://h:1", "v1/x"), "http://h:1/v1/x");
        let cfg = |u: &str| ClientConfig {
            base_url: u.into(),
            ..Default::default()
        };
        assert!(matches!(
            Client::new(cfg("ftp://h")),
            Err(ClientError::UnsupportedScheme { .. })
        ));
        // https:// is TLS (issue 41), on port 443 unless given.
        let c = Client::new(cfg("https://h")).unwrap();
        assert_eq!(c.uri().to_string(), "https://h/v1/completions");
        // Trial 13: a host:port without its scheme says what to give.
        let e = Client::new(cfg("127.0.0.1:8000")).unwrap_err().to_string();
        assert!(
            e.ends_with("missing the http:// scheme (give --base-url as http://HOST:PORT)"),
            "{e}"
        );
        assert!(matches!(
            Client::new(cfg("h:1")),
            Err(ClientError::InvalidUrl { .. })
        ));
        assert!(matches!(
            Client::new(cfg("http://h:1 2")),
            Err(ClientError::InvalidUrl { .. })
        ));
    }

    #[tokio::test]
    async fn a_panic_inside_the_exchange_becomes_an_error_not_an_unwind() {
        let mut rec = RequestRecord::default();
        let r = catch_unwind(async {
            rec.output_text.push_str("partial");
            tokio::task::yield_now().await;
            if rec.output_text.len() < 100 {
                panic!("boom {}", 7);
            }
            1
        })
        .await;
        assert_eq!(r, Err("boom 7".to_string()));
        // The record the future was filling is still there, with what it measured.
        assert_eq!(rec.output_text, "partial");
        assert_eq!(catch_unwind(async { 5 }).await, Ok(5));
    }

    #[test]
    fn sniffing_and_media_types() {
        for (p, want) in [
            (&b"data: x"[..], Some(true)),
            (b"data:x", Some(true)),
            (b"data\n", Some(true)),
            (b": ping", Some(true)),
            (b"event: e", Some(true)),
            (b"id: 1", Some(true)),
            (b"retry: 5", Some(true)),
            (b"\xEF\xBB\xBF\r\n data: x", Some(true)),
            (b"{\"a\":1}", Some(false)),
            (b" [1]", Some(false)),
            (b"<html>", Some(false)),
            (b"dat", None),
            (b"\xEF\xBB", None),
            (b"   ", None),
            (b"", None),
            (b"datum: x", Some(false)),
            (b"ids: x", Some(false)),
        ] {
            assert_eq!(
                sniff_sse(p, false),
                want,
                "{:?}",
                String::from_utf8_lossy(p)
            );
        }
        assert_eq!(sniff_sse(b"<html>", true), Some(true));
        assert_eq!(sniff_sse(b"{", true), Some(false));
        let ct = |v: &str| crate::wire::is_event_stream(v.as_bytes());
        assert!(ct("text/event-stream"));
        assert!(ct("Text/Event-Stream"));
        assert!(ct("text/event-stream; charset=utf-8"));
        assert!(ct(" TEXT/EVENT-STREAM\t;charset=UTF-8"));
        assert!(!ct("application/json"));
        assert!(!ct("text/event-streams"));
        assert!(!crate::wire::parse_head(b"HTTP/1.1 200 OK\r\n\r\n")
            .is_ok_and(|h| matches!(h, HeadParse::Final(h, _) if h.labelled_sse)));
    }

    /// Trial 33 F5: a reset or abort during connect is "accepted, then failed" (something
    /// listens there); a refusal stays as the OS says it.
    #[test]
    fn a_reset_during_connect_is_worded_as_accepted() {
        let uri: Uri = "http://127.0.0.1:9/v1/completions".parse().unwrap();
        let err = |kind| crate::pool::ConnectError::Tcp {
            addr: "127.0.0.1:9".into(),
            source: std::io::Error::from(kind),
        };
        for kind in [
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::ConnectionAborted,
        ] {
            let m = connect_failure(&err(kind), &uri);
            assert!(accepted_then_failed(&m), "{m}");
            assert!(m.ends_with(" (while connecting)"), "{m}");
            assert!(!m.contains("cannot connect"), "{m}");
        }
        let m = connect_failure(&err(std::io::ErrorKind::ConnectionRefused), &uri);
        assert!(!accepted_then_failed(&m), "{m}");
        assert!(m.starts_with("cannot connect to 127.0.0.1:9: "), "{m}");
    }

    #[test]
    fn api_key_is_never_printed() {
        let cfg = ClientConfig {
            api_key: Some("sk-secret-123".into()),
            headers: vec![("Authorization".into(), "Bearer sk-other-456".into())],
            ..Default::default()
        };
        let client = Client::new(cfg).unwrap();
        let dbg = format!("{client:?}");
        assert!(
            !dbg.contains("sk-secret-123") && !dbg.contains("sk-other-456"),
            "{dbg}"
        );
        let bad = ClientConfig {
            api_key: Some("sk-\nsecret".into()),
            ..Default::default()
        };
        let err = Client::new(bad).unwrap_err().to_string();
        assert!(!err.contains("secret"), "{err}");
    }
}
