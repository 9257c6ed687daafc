//! HTTP front end: routing, request parsing and validation, fault decisions, and the response
//! bodies (streamed SSE or whole JSON). Built directly on hyper 1 (HTTP/1.1, keep-alive).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::config::{Mode, Resolved, SimConfig};
use crate::driver::{AbortGuard, EngineMsg, TokenMsg};
use crate::engine::NewSeq;
use crate::fault::{u01, FaultSpec};
use crate::metrics::Metrics;
use crate::sse::{Api, Writer};
use crate::tokenize::block_hashes;

/// Largest request body accepted, bytes (64 MiB).
const MAX_BODY_BYTES: usize = 64 << 20;

/// Client-ceiling counters served at `GET /stats` (reset by `POST /stats/reset`): the same
/// field names as `shared/tools/sse-instant`, so `inferbench selftest` can read either server.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    first_start_ns: Option<u64>,
    last_done_ns: u64,
    inflight: u64,
    inflight_max: u64,
    inflight_integral_ns: f64,
    last_change_ns: u64,
    tokens: u64,
    completed: u64,
    started: u64,
}

impl Stats {
    fn change(&mut self, now_ns: u64, delta: i64) {
        self.inflight_integral_ns +=
            self.inflight as f64 * now_ns.saturating_sub(self.last_change_ns) as f64;
        self.last_change_ns = now_ns;
        self.inflight = self.inflight.saturating_add_signed(delta);
        self.inflight_max = self.inflight_max.max(self.inflight);
    }

    fn json(&self, uptime_s: f64) -> Value {
        let window_s = match self.first_start_ns {
            Some(f) if self.last_done_ns > f => (self.last_done_ns - f) as f64 / 1e9,
            _ => 0.0,
        };
        let per_s = |v: f64| if window_s > 0.0 { v / window_s } else { 0.0 };
        json!({
            "uptime_s": uptime_s,
            "window_s": window_s,
            "inflight_now": self.inflight,
            "inflight_max": self.inflight_max,
            "inflight_avg": per_s(self.inflight_integral_ns / 1e9),
            "tokens_per_s": per_s(self.tokens as f64),
            "responses_per_s": per_s(self.completed as f64),
            "streams_started": self.started,
            "responses_completed": self.completed,
            "tokens": self.tokens,
        })
    }
}

/// One generation in flight for [`Stats`]; records its end (and tokens sent) on drop.
pub(crate) struct InFlight {
    app: Arc<App>,
    tokens: u64,
}

impl InFlight {
    fn new(app: &Arc<App>) -> Self {
        let now = app.start.elapsed().as_nanos() as u64;
        let mut s = app.stats.lock().expect("stats lock");
        s.first_start_ns.get_or_insert(now);
        s.started += 1;
        s.change(now, 1);
        drop(s);
        InFlight {
            app: app.clone(),
            tokens: 0,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let now = self.app.start.elapsed().as_nanos() as u64;
        let mut s = self.app.stats.lock().expect("stats lock");
        s.change(now, -1);
        s.tokens += self.tokens;
        s.completed += 1;
        s.last_done_ns = now;
    }
}

/// Shared server state.
pub(crate) struct App {
    pub stats: Mutex<Stats>,
    pub cfg: SimConfig,
    pub res: Resolved,
    pub metrics: Mutex<Metrics>,
    pub engine_tx: Option<std::sync::mpsc::Sender<EngineMsg>>,
    model_json: String,
    next_index: AtomicU64,
    /// Streamed token chunks written in timed mode, and those written late (more than two
    /// steps, at least 4 ms, after their step was due): `inferbench_sim:token_chunks_total`
    /// and `late_token_chunks_total`, from which a client tells a sim starved of CPU.
    pub chunks: AtomicU64,
    /// See [`App::chunks`].
    pub late_chunks: AtomicU64,
    /// Connections the listener failed to accept (`EMFILE` at the open-file limit, …):
    /// `inferbench_sim:accept_errors_total`.
    pub accept_errors: AtomicU64,
    start: std::time::Instant,
    fits_blocks: u32,
    /// `inferbench_sim:config_info`, appended to every `/metrics` answer.
    config_info: String,
}

impl App {
    pub fn new(
        cfg: SimConfig,
        res: Resolved,
        engine_tx: Option<std::sync::mpsc::Sender<EngineMsg>>,
    ) -> Self {
        let model_json = serde_json::to_string(&res.served_name).expect("string serializes");
        let config_info = crate::config_info_metric(&cfg, &res);
        App {
            config_info,
            stats: Mutex::new(Stats::default()),
            metrics: Mutex::new(Metrics::new(res.num_blocks, cfg.block_size)),
            fits_blocks: res.num_blocks,
            cfg,
            res,
            engine_tx,
            model_json,
            next_index: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
            late_chunks: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            start: std::time::Instant::now(),
        }
    }

    /// Modelled seconds since start (wall seconds × time_scale).
    pub fn model_now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * self.cfg.time_scale
    }
}

/// The response body type of every route.
pub(crate) enum SimBody {
    Full(Option<Bytes>),
    Sse(Box<SseBody>),
    /// Fails on first poll: the connection is closed mid-response.
    Broken,
}

/// The error a [`SimBody`] yields to make hyper drop the connection (a simulated fault).
#[derive(Debug, thiserror::Error)]
#[error("simulated connection drop")]
pub(crate) struct DropConnection;

impl Body for SimBody {
    type Data = Bytes;
    type Error = DropConnection;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, DropConnection>>> {
        match self.get_mut() {
            SimBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Sse(s) => s.poll_next(cx),
            SimBody::Broken => Poll::Ready(Some(Err(DropConnection))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, SimBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

enum Source {
    Instant,
    Engine(mpsc::UnboundedReceiver<TokenMsg>, AbortGuard),
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Phase {
    Role,
    Tokens,
    Usage,
    Done,
    End,
}

/// A streamed SSE response.
pub(crate) struct SseBody {
    app: Arc<App>,
    w: Writer,
    src: Source,
    phase: Phase,
    output_len: u32,
    finish: &'static str,
    sent: u32,
    pending: Option<TokenMsg>,
    events: u32,
    usage: bool,
    fault: FaultSpec,
    malformed_done: bool,
    stalled: bool,
    stall: Option<Pin<Box<tokio::time::Sleep>>>,
    keepalive: Option<Pin<Box<tokio::time::Sleep>>>,
    dropping: bool,
    max_events: usize,
    counted: bool,
    inflight: InFlight,
}

enum Gate {
    Go,
    Stop,
}

impl SseBody {
    /// Fault checks before one data event (module doc of `fault`).
    fn gate(&mut self, buf: &mut Vec<u8>) -> Gate {
        if self.fault.drop_after == Some(self.events) && !self.dropping {
            // Let hyper flush what was already written before the connection is cut.
            self.dropping = true;
            self.stall = Some(Box::pin(tokio::time::sleep(Duration::from_millis(20))));
            return Gate::Stop;
        }
        if self.fault.stall_after == Some(self.events) && !self.stalled {
            self.stalled = true;
            let d = Duration::from_millis(self.fault.stall_ms.unwrap_or(86_400_000));
            self.stall = Some(Box::pin(tokio::time::sleep(d)));
            return Gate::Stop;
        }
        if self.fault.error_after == Some(self.events) && self.phase != Phase::End {
            self.w.error_event(buf);
            self.w.done(buf);
            self.events += if self.w.api() == Api::Responses { 1 } else { 2 };
            self.phase = Phase::End;
            return Gate::Stop;
        }
        if self.fault.malformed_after == Some(self.events) && !self.malformed_done {
            self.malformed_done = true;
            self.w.malformed_event(buf);
            self.events += 1;
        }
        if self.fault.keepalive {
            self.w.comment(buf);
        }
        Gate::Go
    }

    fn next_tokens(&mut self, cx: &mut Context<'_>) -> Poll<Option<TokenMsg>> {
        if let Some(p) = self.pending {
            return Poll::Ready(Some(p));
        }
        let m = match &mut self.src {
            Source::Instant => Some(TokenMsg {
                tokens: 1,
                finished: self.sent + 1 >= self.output_len,
                cached: 0,
                due: None,
            }),
            Source::Engine(rx, guard) => match rx.poll_recv(cx) {
                Poll::Ready(m) => {
                    if let Some(m) = m {
                        self.w.cached_tokens = Some(m.cached);
                    }
                    if m.is_none_or(|m| m.finished) {
                        guard.armed = false;
                    }
                    m
                }
                Poll::Pending => return Poll::Pending,
            },
        };
        self.pending = m;
        Poll::Ready(m)
    }

    /// [`Self::poll_inner`] plus the `keepalive-ms` fault: a comment whenever the stream has
    /// been idle that long.
    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, DropConnection>>> {
        let r = self.poll_inner(cx);
        let Some(ms) = self.fault.keepalive_ms else {
            return r;
        };
        let every = Duration::from_millis(ms);
        let t = self
            .keepalive
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
        if r.is_ready() {
            t.as_mut().reset(tokio::time::Instant::now() + every);
            return r;
        }
        if t.as_mut().poll(cx).is_ready() {
            t.as_mut().reset(tokio::time::Instant::now() + every);
            let _ = t.as_mut().poll(cx); // register for the next interval
            let mut buf = Vec::with_capacity(16);
            self.w.comment(&mut buf);
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))));
        }
        Poll::Pending
    }

    fn poll_inner(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, DropConnection>>> {
        if let Some(s) = &mut self.stall {
            if s.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.stall = None;
        }
        if self.dropping {
            return Poll::Ready(Some(Err(DropConnection)));
        }
        let mut buf = Vec::with_capacity(if self.max_events > 1 { 16 * 1024 } else { 512 });
        let mut n = 0;
        while n < self.max_events {
            match self.phase {
                Phase::End => break,
                Phase::Role => {
                    if let Gate::Stop = self.gate(&mut buf) {
                        break;
                    }
                    self.w.role_event(&mut buf);
                    self.events += 1;
                    n += 1;
                    self.phase = Phase::Tokens;
                }
                Phase::Tokens => {
                    let m = match self.next_tokens(cx) {
                        Poll::Pending => {
                            if buf.is_empty() {
                                return Poll::Pending;
                            }
                            break;
                        }
                        Poll::Ready(None) => {
                            // Engine went away (shutdown): end the stream abruptly.
                            self.dropping = true;
                            break;
                        }
                        Poll::Ready(Some(m)) => m,
                    };
                    if let Gate::Stop = self.gate(&mut buf) {
                        break;
                    }
                    self.pending = None;
                    if let Some((due, late_after)) = m.due {
                        let late =
                            std::time::Instant::now().saturating_duration_since(due) > late_after;
                        self.app.chunks.fetch_add(1, Ordering::Relaxed);
                        if late {
                            self.app.late_chunks.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let tokens = m.tokens.min(self.output_len - self.sent);
                    let finish = m.finished.then_some(self.finish);
                    let written = self
                        .w
                        .token_events(&mut buf, self.sent, tokens, finish, self.usage);
                    self.sent += tokens;
                    self.inflight.tokens = u64::from(self.sent);
                    self.events += written;
                    n += written as usize;
                    if m.finished || self.sent >= self.output_len {
                        self.phase = Phase::Usage;
                    }
                }
                Phase::Usage => {
                    if self.w.api() == Api::Responses {
                        if let Gate::Stop = self.gate(&mut buf) {
                            break;
                        }
                        self.w
                            .completed_event(&mut buf, self.sent, self.finish, self.usage);
                        self.events += 1;
                        n += 1;
                    } else if self.usage {
                        if let Gate::Stop = self.gate(&mut buf) {
                            break;
                        }
                        self.w.usage_event(&mut buf, self.sent);
                        self.events += 1;
                        n += 1;
                    }
                    self.phase = Phase::Done;
                }
                Phase::Done => {
                    if let Gate::Stop = self.gate(&mut buf) {
                        break;
                    }
                    self.w.done(&mut buf);
                    self.events += 1;
                    n += 1;
                    self.phase = Phase::End;
                    self.count_instant();
                }
            }
        }
        if buf.is_empty() {
            if self.stall.is_some() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if self.dropping {
                return Poll::Ready(Some(Err(DropConnection)));
            }
            if self.phase == Phase::End {
                return Poll::Ready(None);
            }
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
    }

    fn count_instant(&mut self) {
        if matches!(self.src, Source::Instant) && !self.counted {
            self.counted = true;
            let mut m = self.app.metrics.lock().expect("metrics lock");
            m.generation_tokens += u64::from(self.sent);
            if self.finish == "stop" {
                m.success_stop += 1;
            } else {
                m.success_length += 1;
            }
        }
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct StreamOptions {
    include_usage: Option<bool>,
    continuous_usage_stats: Option<bool>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct GenRequest {
    model: Option<String>,
    prompt: Option<Value>,
    messages: Option<Vec<Value>>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    /// The Responses API's output limit.
    max_output_tokens: Option<u64>,
    /// The Responses API's prompt: a string or a list of message items.
    input: Option<Value>,
    min_tokens: Option<u64>,
    n: Option<u64>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
}

type Resp = Response<SimBody>;

fn json_response(status: StatusCode, v: &Value) -> Resp {
    let mut r = Response::new(SimBody::Full(Some(Bytes::from(v.to_string()))));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error_response(app: &App, status: StatusCode, kind: &str, msg: &str) -> Resp {
    app.metrics.lock().expect("metrics lock").errors += 1;
    json_response(
        status,
        &json!({"error": {"message": msg, "type": kind, "param": null, "code": status.as_u16()}}),
    )
}

fn text_response(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Resp {
    let mut r = Response::new(SimBody::Full(Some(body.into())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// Routes one request.
pub(crate) async fn handle(app: Arc<App>, req: Request<Incoming>) -> Result<Resp, Infallible> {
    let path = req.uri().path().to_string();
    let r = match (req.method(), path.as_str()) {
        (&Method::GET, "/health") | (&Method::GET, "/ping") => {
            text_response(StatusCode::OK, "text/plain", "")
        }
        (&Method::GET, "/version") => json_response(
            StatusCode::OK,
            &json!({"version": concat!("inferbench-sim ", env!("CARGO_PKG_VERSION"))}),
        ),
        (&Method::GET, "/v1/models") => json_response(
            StatusCode::OK,
            &json!({"object": "list", "data": [{
                "id": app.res.served_name, "object": "model", "created": unix_now(),
                "owned_by": "inferbench-sim", "root": app.res.model_name,
                "max_model_len": app.res.max_model_len}]}),
        ),
        (&Method::GET, "/metrics") => {
            let mut text = app.metrics.lock().expect("metrics lock").render(
                &app.res.served_name,
                (
                    app.chunks.load(Ordering::Relaxed),
                    app.late_chunks.load(Ordering::Relaxed),
                ),
                app.cfg.time_scale,
            );
            text.push_str(&app.config_info);
            text.push_str(&crate::accept_errors_metric(
                app.accept_errors.load(Ordering::Relaxed),
            ));
            text_response(StatusCode::OK, "text/plain; version=0.0.4", text)
        }
        (&Method::GET, "/stats") => {
            let uptime = app.start.elapsed().as_secs_f64();
            json_response(
                StatusCode::OK,
                &app.stats.lock().expect("stats lock").json(uptime),
            )
        }
        (&Method::POST, "/stats/reset") => {
            let mut s = app.stats.lock().expect("stats lock");
            let inflight = s.inflight;
            *s = Stats {
                inflight,
                inflight_max: inflight,
                last_change_ns: app.start.elapsed().as_nanos() as u64,
                ..Stats::default()
            };
            text_response(StatusCode::OK, "text/plain", "")
        }
        (&Method::POST, "/reset_prefix_cache") => {
            if let Some(tx) = &app.engine_tx {
                let _ = tx.send(EngineMsg::ResetPrefixCache);
            }
            text_response(StatusCode::OK, "text/plain", "")
        }
        (&Method::POST, "/tokenize") => match read_json(req).await {
            Ok(v) => tokenize_route(&app, &v).await,
            Err(e) => error_response(&app, StatusCode::BAD_REQUEST, "BadRequestError", &e),
        },
        (&Method::POST, "/v1/completions") => generate(app, req, Api::Completions).await,
        (&Method::POST, "/v1/chat/completions") => generate(app, req, Api::Chat).await,
        (&Method::POST, "/v1/responses") => generate(app, req, Api::Responses).await,
        // Not a request error of the engine: request_errors_total stays as it is.
        _ => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": {"message": format!("no route for {} {path}", req.method()),
                "type": "NotFoundError", "param": null, "code": 404}}),
        ),
    };
    Ok(r)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn read_body(req: Request<Incoming>) -> Result<Bytes, String> {
    let limited = http_body_util::Limited::new(req.into_body(), MAX_BODY_BYTES);
    limited
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| format!("could not read request body: {e}"))
}

async fn read_json(req: Request<Incoming>) -> Result<Value, String> {
    let b = read_body(req).await?;
    serde_json::from_slice(&b).map_err(|e| format!("request body is not valid JSON: {e}"))
}

/// Longest prompt accepted, in bytes per token of `max_model_len`. Real text averages about 4
/// bytes per BPE token; a prompt over 64 bytes per token of the context cannot fit, so it is
/// refused before tokenizing (vLLM likewise answers 400 for prompts over the context length).
pub(crate) const MAX_PROMPT_BYTES_PER_TOKEN: u64 = 64;

/// Prompts longer than this many bytes are tokenized on tokio's blocking pool, not on the I/O
/// thread (≈ 1 ms of BPE work), so one long prompt never stalls other streams or `/health`.
const INLINE_TOKENIZE_BYTES: usize = 16 * 1024;

/// A request's prompt before tokenization.
enum PromptInput {
    /// Text to tokenize (a completions prompt, or chat messages through the template).
    Text(String),
    /// Token ids given by the client.
    Ids(Vec<u32>),
}

/// The prompt of a completions `prompt` or chat `messages` (messages win when both are given).
fn prompt_input(prompt: Option<&Value>, messages: Option<&[Value]>) -> Result<PromptInput, String> {
    if let Some(msgs) = messages {
        if msgs.is_empty() {
            return Err("messages must contain at least one message".into());
        }
        // A minimal chat template: "<|role|>\n" + content + "\n" per message, then the
        // generation prompt "<|assistant|>\n".
        let mut text = String::new();
        for m in msgs {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            text.push_str("<|");
            text.push_str(role);
            text.push_str("|>\n");
            match m.get("content") {
                Some(Value::String(s)) => text.push_str(s),
                Some(Value::Array(parts)) => {
                    for p in parts {
                        if let Some(t) = p.get("text").and_then(Value::as_str) {
                            text.push_str(t);
                        }
                    }
                }
                Some(Value::Null) | None => {}
                Some(_) => return Err("message content must be a string or a list of parts".into()),
            }
            text.push('\n');
        }
        text.push_str("<|assistant|>\n");
        return Ok(PromptInput::Text(text));
    }
    match prompt {
        Some(Value::String(s)) => Ok(PromptInput::Text(s.clone())),
        Some(Value::Array(a)) if a.is_empty() => Err("prompt is empty".into()),
        Some(Value::Array(a)) => match &a[0] {
            Value::String(s) if a.len() == 1 => Ok(PromptInput::Text(s.clone())),
            Value::Number(_) => {
                let mut ids = Vec::with_capacity(a.len());
                for v in a {
                    let t = v
                        .as_u64()
                        .and_then(|t| u32::try_from(t).ok())
                        .ok_or("prompt token ids must be integers in 0..2^32")?;
                    ids.push(t);
                }
                Ok(PromptInput::Ids(ids))
            }
            _ => Err("prompt must be a string, [string] or a list of token ids (batched prompts are not supported)".into()),
        },
        Some(_) => Err("prompt must be a string or a list of token ids".into()),
        None => Err("missing field `prompt` (or `messages`)".into()),
    }
}

/// Token ids of `input`: refuses text over [`MAX_PROMPT_BYTES_PER_TOKEN`] × `max_model_len`
/// bytes (400), tokenizes text over [`INLINE_TOKENIZE_BYTES`] on the blocking pool.
async fn tokenize_prompt(app: &App, input: PromptInput) -> Result<Vec<u32>, String> {
    let text = match input {
        PromptInput::Ids(ids) => return Ok(ids),
        PromptInput::Text(t) => t,
    };
    let limit = u64::from(app.res.max_model_len) * MAX_PROMPT_BYTES_PER_TOKEN;
    if text.len() as u64 > limit {
        return Err(format!(
            "This model's maximum context length is {} tokens. However, the prompt is {} bytes, \
             and a prompt over {limit} bytes ({MAX_PROMPT_BYTES_PER_TOKEN} bytes per token) \
             cannot fit. Please reduce the length of the messages or prompt.",
            app.res.max_model_len,
            text.len()
        ));
    }
    let tok = app.cfg.tokenizer;
    let inline = text.len() <= INLINE_TOKENIZE_BYTES;
    let encode = move || {
        let mut ids = Vec::new();
        tok.encode_into(&text, &mut ids);
        ids
    };
    if inline {
        return Ok(encode());
    }
    tokio::task::spawn_blocking(encode)
        .await
        .map_err(|e| format!("tokenization failed: {e}"))
}
async fn tokenize_route(app: &App, v: &Value) -> Resp {
    let msgs = v
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice);
    let ids = match prompt_input(v.get("prompt"), msgs) {
        Ok(input) => tokenize_prompt(app, input).await,
        Err(e) => Err(e),
    };
    match ids {
        Ok(ids) => json_response(
            StatusCode::OK,
            &json!({"count": ids.len(), "max_model_len": app.res.max_model_len, "tokens": ids}),
        ),
        Err(e) => error_response(app, StatusCode::BAD_REQUEST, "BadRequestError", &e),
    }
}

/// Set once this process's sim has begun serving a generation request (never cleared): the
/// out-of-memory net's "the server stopped mid-run" (exit 1) against "no request had been
/// served" (exit 2), as the client's `any_request_sent` is for a client (issue 39, fresh
/// tester's finding 2: a sim that ran out of memory while serving said "(nothing was sent)"
/// and exited 2).
static REQUEST_SERVED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a sim of this process has begun serving a generation request (`/v1/completions`,
/// `/v1/chat/completions`, `/v1/responses`). Async-signal-safe (one atomic load).
pub fn any_request_served() -> bool {
    REQUEST_SERVED.load(Ordering::Relaxed)
}

async fn generate(app: Arc<App>, req: Request<Incoming>, api: Api) -> Resp {
    REQUEST_SERVED.store(true, Ordering::Relaxed);
    let index = app.next_index.fetch_add(1, Ordering::Relaxed);
    let (header_fault, r) = match read_request(&app, req).await {
        Ok(x) => x,
        Err(rej) => return rej.respond(&app),
    };
    let ids = match prompt_ids(&app, &r, api).await {
        Ok(ids) => ids,
        Err(rej) => return rej.respond(&app),
    };
    let prompt_len = u32::try_from(ids.len()).unwrap_or(u32::MAX);
    let (output_len, finish) = match output_plan(&app, &r, prompt_len) {
        Ok(x) => x,
        Err(rej) => return rej.respond(&app),
    };
    let fault = match apply_fault(&app, header_fault, index).await {
        Ok(f) => f,
        Err(rej) => return rej.respond(&app),
    };

    let stream = r.stream.unwrap_or(false);
    let so = r.stream_options.unwrap_or_default();
    // The Responses API always reports usage (on `response.completed`).
    let include_usage =
        !fault.no_usage && (!stream || api == Api::Responses || so.include_usage.unwrap_or(false));
    let mut w = Writer::new(api, index, unix_now(), &app.model_json, fault.crlf);
    w.prompt_tokens = prompt_len;
    w.continuous_usage = !fault.no_usage && so.continuous_usage_stats.unwrap_or(false);
    w.reasoning_tokens = if api != Api::Completions {
        app.cfg.reasoning_tokens
    } else {
        0
    };

    let inflight = InFlight::new(&app);
    let src = match token_source(&app, ids, index, output_len, finish) {
        Ok(src) => src,
        Err(rej) => return rej.respond(&app),
    };
    if !stream {
        let mut inflight = inflight;
        let r = whole_response(&app, src, &mut w, output_len, finish, include_usage, &fault).await;
        if r.status() == StatusCode::OK {
            inflight.tokens = u64::from(output_len);
        }
        return r;
    }
    let reply = Reply {
        w,
        src,
        output_len,
        finish,
        include_usage,
        fault,
        inflight,
    };
    sse_response(&app, api, reply)
}

/// Why a generation request is refused: the HTTP status, error type and message of its JSON
/// error body ([`error_response`], which also counts it).
struct Reject {
    status: StatusCode,
    kind: &'static str,
    msg: String,
}

impl Reject {
    fn new(status: StatusCode, kind: &'static str, msg: &str) -> Self {
        Reject {
            status,
            kind,
            msg: msg.to_string(),
        }
    }

    /// A `400 BadRequestError` with `msg`.
    fn bad(msg: &str) -> Self {
        Reject::new(StatusCode::BAD_REQUEST, "BadRequestError", msg)
    }

    /// The error response (counted as an error).
    fn respond(self, app: &App) -> Resp {
        error_response(app, self.status, self.kind, &self.msg)
    }
}

/// Reads a generation request: its `x-sim-fault` header (a [`FaultSpec`], when present) and
/// its JSON body. `Err`: the error response (400 for a bad header or body, 404 for a model
/// that is neither the served name nor the model's).
async fn read_request(
    app: &App,
    req: Request<Incoming>,
) -> Result<(Option<FaultSpec>, GenRequest), Reject> {
    let header_fault = match req.headers().get("x-sim-fault") {
        Some(h) => match h
            .to_str()
            .map_err(|e| e.to_string())
            .and_then(|s| FaultSpec::parse(s).map_err(|e| e.to_string()))
        {
            Ok(f) => Some(f),
            Err(e) => return Err(Reject::bad(&format!("x-sim-fault: {e}"))),
        },
        None => None,
    };
    let body = read_body(req).await.map_err(|e| Reject::bad(&e))?;
    let r: GenRequest =
        serde_json::from_slice(&body).map_err(|e| Reject::bad(&format!("invalid request: {e}")))?;
    if let Some(m) = &r.model {
        if *m != app.res.served_name && !m.eq_ignore_ascii_case(&app.res.model_name) {
            return Err(Reject::new(
                StatusCode::NOT_FOUND,
                "NotFoundError",
                &format!("The model `{m}` does not exist."),
            ));
        }
    }
    Ok((header_fault, r))
}

/// The prompt's token ids (chat `messages` or a completions `prompt`, text tokenized by the
/// model's tokenizer). `Err`: a 400 for a missing or bad prompt, or an `n` other than 1.
async fn prompt_ids(app: &App, r: &GenRequest, api: Api) -> Result<Vec<u32>, Reject> {
    let input = match api {
        Api::Chat => match &r.messages {
            Some(m) => prompt_input(None, Some(m)),
            None => Err("missing field `messages`".to_string()),
        },
        Api::Completions => prompt_input(r.prompt.as_ref(), None),
        // `input`: a string (one user message) or a list of message items.
        Api::Responses => match &r.input {
            Some(Value::String(s)) => {
                prompt_input(None, Some(&[json!({"role": "user", "content": s})]))
            }
            Some(Value::Array(items)) => prompt_input(None, Some(items)),
            Some(_) => Err("input must be a string or a list of input items".to_string()),
            None => Err("missing field `input`".to_string()),
        },
    };
    let ids = match input {
        Ok(input) => tokenize_prompt(app, input).await,
        Err(e) => Err(e),
    };
    let ids = ids.map_err(|e| Reject::bad(&e))?;
    match r.n {
        None | Some(1) => Ok(ids),
        Some(0) => Err(Reject::bad("n must be at least 1")),
        Some(n) => Err(Reject::bad(&format!(
            "n = {n} is not supported by the simulator (only n = 1)"
        ))),
    }
}

/// How many tokens the reply has and why it ends, for a prompt of `prompt_len` tokens:
/// `max_completion_tokens` / `max_tokens` (else the configured default, at least
/// `min_tokens`, within the context), cut at the configured EOS position unless `ignore_eos`
/// (finish `stop`, else `length`). `Err`: a 400 for a zero or inconsistent limit, or a request
/// beyond the maximum context length (vLLM's message).
fn output_plan(app: &App, r: &GenRequest, prompt_len: u32) -> Result<(u32, &'static str), Reject> {
    let max_len = app.res.max_model_len;
    let requested = r
        .max_completion_tokens
        .or(r.max_tokens)
        .or(r.max_output_tokens);
    let max_tokens = match requested {
        Some(0) => return Err(Reject::bad("max_tokens must be at least 1")),
        Some(n) => {
            if let Some(min) = r.min_tokens.filter(|&m| m > n) {
                return Err(Reject::bad(&format!(
                    "min_tokens must be less than or equal to max_tokens={n}, got {min}."
                )));
            }
            n
        }
        None => u64::from(app.cfg.default_max_tokens)
            .max(r.min_tokens.unwrap_or(0))
            .min(u64::from(max_len.saturating_sub(prompt_len)).max(1)),
    };
    if u64::from(prompt_len) + max_tokens > u64::from(max_len) {
        return Err(Reject::bad(&format!(
            "This model's maximum context length is {max_len} tokens. However, you requested \
                 {} tokens ({prompt_len} in the messages, {max_tokens} in the completion). Please \
                 reduce the length of the messages or completion.",
            u64::from(prompt_len) + max_tokens
        )));
    }
    let max_tokens = max_tokens as u32; // ≤ max_model_len
    let min_tokens = r.min_tokens.unwrap_or(0).min(u64::from(max_tokens)) as u32;
    let ignore_eos = r.ignore_eos.unwrap_or(false);
    Ok(match app.cfg.eos_after {
        Some(n) if !ignore_eos && n.max(min_tokens).max(1) < max_tokens => {
            (n.max(min_tokens).max(1), "stop")
        }
        _ => (max_tokens, "length"),
    })
}

/// The fault of request `index`: the `x-sim-fault` header's, else the configured one with
/// probability `fault_rate` (seeded per request). Applies its first-byte delay (ms); `Err`: the
/// simulated HTTP error status it picks, if any.
async fn apply_fault(
    app: &App,
    header_fault: Option<FaultSpec>,
    index: u64,
) -> Result<FaultSpec, Reject> {
    // Fault: the header wins; else the configured fault with probability fault_rate.
    let fault = match header_fault {
        Some(f) => f,
        None => match &app.cfg.fault {
            Some(f) if u01(app.cfg.seed, index, 1) < app.cfg.fault_rate => f.clone(),
            _ => FaultSpec::default(),
        },
    };
    if let Some(ms) = fault.first_byte_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if !fault.status.is_empty() {
        let pick = (u01(app.cfg.seed, index, 2) * fault.status.len() as f64) as usize;
        let code = fault.status[pick.min(fault.status.len() - 1)];
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Err(Reject::new(
            status,
            "SimulatedFault",
            &format!("simulated fault: HTTP {code} (request {index})"),
        ));
    }
    Ok(fault)
}

/// Where request `index`'s `output_len` tokens come from: in timed mode the engine (the prompt
/// `ids` as KV blocks, prefix-cache hashes when caching is on, finishing with `finish`),
/// otherwise at once (its prompt tokens counted here). `Err`: a 400 for a request that needs
/// more KV blocks than the cache has, a 503 when the engine stopped.
fn token_source(
    app: &App,
    ids: Vec<u32>,
    index: u64,
    output_len: u32,
    finish: &'static str,
) -> Result<Source, Reject> {
    let prompt_len = u32::try_from(ids.len()).unwrap_or(u32::MAX);
    match (&app.engine_tx, app.cfg.mode) {
        (Some(tx), Mode::Timed) => {
            let lookahead = app.cfg.spec_decode.map_or(0, |s| s.num_draft_tokens);
            let need = (u64::from(prompt_len) + u64::from(output_len) + u64::from(lookahead))
                .div_ceil(u64::from(app.cfg.block_size));
            if need > u64::from(app.fits_blocks) {
                return Err(Reject::bad(&format!(
                    "request needs {need} KV blocks but the cache has {}",
                    app.fits_blocks
                )));
            }
            let bs = app.cfg.block_size as usize;
            let hashes = if app.cfg.enable_prefix_caching {
                block_hashes(&ids, bs)
            } else {
                Vec::new()
            };
            let tail = ids[ids.len() / bs * bs..].to_vec();
            drop(ids);
            let (ttx, trx) = mpsc::unbounded_channel();
            let msg = EngineMsg::Add {
                seq: NewSeq {
                    id: index,
                    prompt_len,
                    block_hashes: hashes,
                    tail_tokens: tail,
                    output_len,
                },
                arrival_s: app.model_now(),
                finish_reason: finish,
                tx: ttx,
            };
            if tx.send(msg).is_err() {
                return Err(Reject::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    "engine stopped",
                ));
            }
            Ok(Source::Engine(
                trx,
                AbortGuard {
                    tx: tx.clone(),
                    id: index,
                    armed: true,
                },
            ))
        }
        _ => {
            app.metrics.lock().expect("metrics lock").prompt_tokens += u64::from(prompt_len);
            Ok(Source::Instant)
        }
    }
}

/// A reply being sent: its writer, token source, `output_len` tokens ending with `finish`,
/// whether usage is included, its fault, and its in-flight count.
struct Reply {
    w: Writer,
    src: Source,
    output_len: u32,
    finish: &'static str,
    include_usage: bool,
    fault: FaultSpec,
    inflight: InFlight,
}

/// The streamed (`text/event-stream`) response of `reply`: chat replies open with the role
/// chunk; up to `events_per_write` events per write at once, 1024 from the engine.
fn sse_response(app: &Arc<App>, api: Api, reply: Reply) -> Resp {
    let max_events = match reply.src {
        Source::Instant => app.cfg.events_per_write,
        Source::Engine(..) => 1024,
    };
    let body = SseBody {
        app: app.clone(),
        w: reply.w,
        src: reply.src,
        phase: if api != Api::Completions {
            Phase::Role
        } else {
            Phase::Tokens
        },
        output_len: reply.output_len,
        finish: reply.finish,
        sent: 0,
        pending: None,
        events: 0,
        usage: reply.include_usage,
        fault: reply.fault,
        malformed_done: false,
        stalled: false,
        stall: None,
        keepalive: None,
        dropping: false,
        max_events,
        counted: false,
        inflight: reply.inflight,
    };
    let mut resp = Response::new(SimBody::Sse(Box::new(body)));
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    // Faster (or slower) than real time: say so on every stream, so a client that does not
    // scrape /metrics can tell its wall-clock times are not the modelled hardware's (trial 33
    // F2). Absent at time scale 1.
    if app.cfg.time_scale != 1.0 {
        if let Ok(v) = HeaderValue::from_str(&app.cfg.time_scale.to_string()) {
            h.insert(SIM_TIME_SCALE_HEADER, v);
        }
    }
    resp
}

/// The response header naming the sim's `--time-scale` when it is not 1 (modelled seconds per
/// wall-clock second), on every streamed response.
pub const SIM_TIME_SCALE_HEADER: &str = "inferbench-sim-time-scale";

async fn whole_response(
    app: &Arc<App>,
    src: Source,
    w: &mut Writer,
    output_len: u32,
    finish: &'static str,
    usage: bool,
    fault: &FaultSpec,
) -> Resp {
    if let Source::Engine(mut rx, mut guard) = src {
        loop {
            match rx.recv().await {
                Some(m) if m.finished => {
                    guard.armed = false;
                    w.cached_tokens = Some(m.cached);
                    break;
                }
                Some(_) => {}
                None => {
                    return error_response(
                        app,
                        StatusCode::SERVICE_UNAVAILABLE,
                        "ServiceUnavailable",
                        "engine stopped",
                    )
                }
            }
        }
    } else {
        let mut m = app.metrics.lock().expect("metrics lock");
        m.generation_tokens += u64::from(output_len);
        if finish == "stop" {
            m.success_stop += 1;
        } else {
            m.success_length += 1;
        }
    }
    if fault.stall_after.is_some() {
        let ms = fault.stall_ms.unwrap_or(86_400_000);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let mut body = w.full_body(output_len, finish, usage);
    if fault.drop_after.is_some() {
        let mut r = Response::new(SimBody::Broken);
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return r;
    }
    if fault.error_after.is_some() {
        return error_response(
            app,
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "simulated fault: engine error",
        );
    }
    if fault.malformed_after.is_some() {
        body.truncate(body.len() / 2);
    }
    let mut r = Response::new(SimBody::Full(Some(Bytes::from(body))));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}
