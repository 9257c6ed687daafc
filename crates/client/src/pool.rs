//! Keep-alive HTTP/1.1 connection pool: TCP connections ([`StampedTcp`]) with their own read
//! buffers, spoken to by [`crate::Client`] ([`crate::wire`] decodes the responses).
//!
//! Why not hyper-util's pooled client: a benchmark must know whether a request went out on a
//! reused connection. Some servers (llama.cpp's `llama-server`, cpp-httplib) advertise
//! keep-alive but close the connection right after each streamed response; a closed-loop client
//! that sends its next request at once races that close and the request dies unanswered. Only
//! in that case (reused connection, no response byte) [`crate::Client`] re-sends once on a fresh
//! connection, as curl does; a fresh connection that fails is always a recorded failure.
//!
//! Stale bytes. A server or proxy that writes a second response for one request (or any byte
//! nobody asked for) would hand the next request on that connection a stale response, shifting
//! every later measurement by one. Rules:
//! - a connection goes back to the pool only after its response body was read to the end (a
//!   response that ended abnormally, was abandoned, or ended after `[DONE]` without its body
//!   end in time is closed), and only when its socket, polled at check-in and again at
//!   checkout, shows no unread byte and no close;
//! - *probation*: until one pooled connection of this pool has stayed quiet for
//!   [`REUSE_QUIET`] after its response, a connection is reused only after [`REUSE_QUIET`] of
//!   quiet (the oldest first); sooner requests get a fresh connection. A trusted pool reuses
//!   the most recently returned connection, as before;
//! - once any connection showed unread bytes, or a reused connection answered a request with
//!   bytes that are not a response head (most likely an earlier response's rest) or with a
//!   head the kernel received before the request's write began (with kernel receive stamps),
//!   the pool reuses nothing: every request of the run gets a fresh connection.
//!
//! Pre-opened connections ([`Pool::preconnect`]) never carried a request, so no stale response
//! can be waiting on them: they are handed out at once, also on probation, after the idle
//! ones that may be reused and before a new connect. Checkout reports them as
//! [`Origin::PreOpened`]: the one re-send applies to them (the server may have closed them
//! since), but bytes on them are never taken for an earlier response (trial 33 F7: an SSH
//! banner was called "the rest of an earlier response").
//!
//! `bench` waits, between its warmup and its profile, for the warmup's connections to stay
//! quiet for 1 s ([`Pool::await_trust`]), so a server writing stale bytes within that time is
//! caught before the profile and nothing is reused in it.
//!
//! Left open: stale bytes that a server sends later than that (or, in a run without warmups,
//! more than [`REUSE_QUIET`] after a response on a pool already trusted) reach a request sent
//! on that connection before they arrive (the pool turns suspicious as soon as a request's own
//! response shows up as unread bytes). Such records are not repaired, but the point does not
//! stand: `bench` marks it invalid when the pool turned suspicious during its profile, or when
//! its idle connections hold such bytes 200 ms after it ([`Pool::audit_idle`]).
//!
//! Open connections are bounded once [`Pool::set_limit`] is given one (`bench` and `replay`
//! give their concurrency plus [`CONNECTION_MARGIN`]): a request that needs a new connection
//! at the limit first closes the newest idle one (the one probation would keep longest; the
//! oldest ones are the nearest to [`REUSE_QUIET`] and trust), and pre-opened spares are only
//! opened below it (issue 39: on probation, without warmups, up to 1,025 sockets at 150
//! streams). Only a request finding every connection in use goes over it.
//!
//! Also left open: a server that serves one connection at a time and keeps it alive stalls a
//! run without warmups: on probation the second request goes out on another connection, which
//! that server does not accept while it waits on the first.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::task::{ready, Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::clock::ClockSource;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use inferbench_core::ErrorClass;

use crate::rxstamp::{RxStamp, StampedTcp};

/// Where a checked-out connection comes from ([`Pool::checkout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Opened for this request.
    Fresh,
    /// Opened ahead of time ([`Pool::preconnect`]), never used: no earlier response can be on
    /// it, but the server may have closed it since.
    PreOpened,
    /// Carried earlier requests (kept alive): bytes on it before this request's answer are an
    /// earlier response's rest.
    Reused,
}

impl Origin {
    /// Not opened for this request: the server may have closed it while idle, so a request
    /// that dies on it before any response byte is re-sent once.
    pub fn opened_before(self) -> bool {
        self != Origin::Fresh
    }
}

/// Idle pooled connections older than this are not reused (4 s: below uvicorn's 5 s and
/// cpp-httplib's 5 s keep-alive timeouts).
pub const POOL_IDLE: Duration = Duration::from_secs(4);

/// Quiet time after a response before its connection is reused while the pool is on probation
/// (see the module doc): 200 ms.
pub const REUSE_QUIET: Duration = Duration::from_millis(200);

/// Largest read buffer per connection, bytes. It starts at [`READ_BUF_INIT`] and doubles up
/// to this when a read fills it (a fast server); 16 KiB still holds ~85 typical SSE events per
/// read and keeps the per-stream memory low. A response head must fit in it
/// ([`crate::wire::HEAD_MAX`]).
pub const READ_BUF_MAX: usize = 16 * 1024;

/// A connection's read buffer when it opens, bytes.
pub const READ_BUF_INIT: usize = 4 * 1024;

/// Connections a limited pool may hold beyond the concurrency it was given
/// ([`Pool::set_limit`]): 16, room for the spares that save a few probation requests their
/// connect, for connections the server closed and nobody has polled yet, and no more (each is
/// a file descriptor of the process's `ulimit -n` and a socket the server accepts).
pub const CONNECTION_MARGIN: usize = 16;

/// One open connection counted in its pool's `open` (released when the connection drops).
struct OpenSlot(Arc<AtomicUsize>);

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl OpenSlot {
    /// Counts one more open connection in `open`.
    fn take(open: &Arc<AtomicUsize>) -> OpenSlot {
        open.fetch_add(1, Ordering::Relaxed);
        OpenSlot(open.clone())
    }
}

/// A connection's byte stream: plain TCP, or TLS over it for `https://` targets
/// ([`crate::tls`]). An enum, so a plain connection's reads and writes are one `match` away
/// from the socket (no boxing, no dynamic dispatch).
#[derive(Debug)]
pub enum Stream {
    /// `http://`: the socket itself.
    Plain(StampedTcp),
    /// `https://`: TLS over the socket (boxed: the TLS state is large and only held once).
    Tls(Box<tokio_rustls::client::TlsStream<StampedTcp>>),
}

impl Stream {
    fn stamp(&self) -> RxStamp {
        match self {
            Stream::Plain(t) => t.stamp(),
            Stream::Tls(t) => t.get_ref().0.stamp(),
        }
    }

    fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(t) => t.try_write(data),
            // Through the TLS session only: the caller falls back to `poll_write`.
            Stream::Tls(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(t) => Pin::new(t).poll_read(cx, buf),
            Stream::Tls(t) => Pin::new(t.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(t) => Pin::new(t).poll_write(cx, data),
            Stream::Tls(t) => Pin::new(t.as_mut()).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(t) => Pin::new(t).poll_flush(cx),
            Stream::Tls(t) => Pin::new(t.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(t) => Pin::new(t).poll_shutdown(cx),
            Stream::Tls(t) => Pin::new(t.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A keep-alive HTTP/1.1 connection: the socket and the read buffer it owns. The request code
/// ([`crate::Client`]) writes requests and decodes responses in place in [`Conn::unread`], in
/// the request's own task (no spawned driver, no channel between socket and parser).
pub struct Conn {
    io: Stream,
    /// Read buffer; `buf[start..end]` is read but not yet consumed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The latest read filled the buffer: double it (up to [`READ_BUF_MAX`]) before the next.
    grow: bool,
    /// Kernel receive time of the socket's latest read ([`crate::rxstamp`]).
    pub stamp: RxStamp,
    /// Counted in its pool's open connections while it lives.
    _slot: OpenSlot,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Conn")
    }
}

/// How an idle connection looked when polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleState {
    /// Open, nothing unread.
    Open,
    /// Closed by the server (EOF) or by a socket error.
    Closed,
    /// The server wrote bytes nobody asked for (a second response, garbage).
    Stale,
}

impl Conn {
    fn new(io: Stream, slot: OpenSlot) -> Self {
        let stamp = io.stamp();
        Self {
            io,
            buf: vec![0; READ_BUF_INIT],
            start: 0,
            end: 0,
            grow: false,
            stamp,
            _slot: slot,
        }
    }

    /// Polls an idle connection once without a real waker: `true` when it has ended (closed
    /// by the server, failed, or holding bytes nobody asked for).
    pub fn poll_ended(&mut self) -> bool {
        self.poll_idle() != IdleState::Open
    }

    /// Polls an idle connection once without a real waker: reads any byte that has arrived
    /// and says whether the connection is still usable (unread bytes make it stale).
    pub fn poll_idle(&mut self) -> IdleState {
        if self.start < self.end {
            return IdleState::Stale;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match self.poll_fill(&mut cx) {
            Poll::Pending => IdleState::Open,
            Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => IdleState::Closed,
            Poll::Ready(Ok(_)) => IdleState::Stale,
        }
    }

    /// The bytes read and not yet consumed.
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks the first `n` unread bytes consumed (at most all of them).
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads once from the socket into the free part of the buffer (moving unread bytes to its
    /// front, or growing it up to [`READ_BUF_MAX`], when the tail is full). `Ok(0)`: EOF.
    /// Errors: the socket's, or `OutOfMemory` when [`READ_BUF_MAX`] unread bytes fill the
    /// buffer (callers consume body bytes as they come and bound heads below that).
    pub fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.grow && self.buf.len() < READ_BUF_MAX {
            self.buf.resize((self.buf.len() * 2).min(READ_BUF_MAX), 0);
            self.grow = false;
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < READ_BUF_MAX {
                self.buf.resize((self.buf.len() * 2).min(READ_BUF_MAX), 0);
            } else {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    format!("{READ_BUF_MAX} unread bytes fill the read buffer"),
                )));
            }
        }
        let mut rb = ReadBuf::new(&mut self.buf[self.end..]);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut rb))?;
        let n = rb.filled().len();
        self.grow = self.end + n == self.buf.len();
        self.end += n;
        Poll::Ready(Ok(n))
    }

    /// Writes from `data` once: the bytes written (`Ok(0)` only for empty `data`). Errors:
    /// the socket's.
    pub fn poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
    }

    /// Writes from `data` once if the socket is known writable, outside tokio's cooperative
    /// budget: a task that spent its budget reading the previous response still sends its next
    /// request now instead of after every other ready task (issue 14: that deferral was
    /// 0.3–0.7 ms of the TTFT mean at 64 streams on a saturated client core). Errors:
    /// `WouldBlock` when not known writable (then use [`Conn::poll_write`]), else the socket's.
    pub fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        self.io.try_write(data)
    }

    /// Flushes what a TLS session holds of the written request (nothing to do on plain TCP).
    /// Errors: the socket's.
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Stream::Plain(_) => Poll::Ready(Ok(())),
            Stream::Tls(t) => Pin::new(t.as_mut()).poll_flush(cx),
        }
    }
}

/// Pool of idle connections to one `host:port`.
#[derive(Debug)]
pub struct Pool {
    host: String,
    port: u16,
    /// Idle connections with their check-in time, oldest first.
    idle: Mutex<VecDeque<(Conn, Instant)>>,
    /// Pre-opened connections that never carried a request, with their open time.
    unused: Mutex<Vec<(Conn, Instant)>>,
    /// One pooled connection stayed quiet for [`REUSE_QUIET`] after its response: reuse at
    /// once.
    trusted: AtomicBool,
    /// A connection showed stale bytes: probation for the rest of the run.
    suspicious: AtomicBool,
    /// A request took a pre-opened connection ([`Pool::keep_spares`] replaces it).
    spare_taken: tokio::sync::Notify,
    /// A connection came back to the pool open after its response (the server keeps
    /// connections alive): [`Pool::keep_spares`] waits for it.
    kept_alive: AtomicBool,
    /// Turn on kernel receive timestamps on new connections.
    rx_timestamps: bool,
    /// `https://` targets: the TLS handshake after connecting (and tunnelling).
    tls: Option<crate::tls::TlsConnector>,
    /// An `https://` target through a proxy: the `CONNECT` tunnel asked of `host:port` (the
    /// proxy) first.
    tunnel: Option<Tunnel>,
    /// `host:port` is a proxy's, set from these environment variables
    /// ([`crate::proxy::variable_for`]): a failed connect names the proxy, not the server.
    proxy_var: Option<&'static str>,
    /// Connections open now (idle, pre-opened, checked out, connecting).
    open: Arc<AtomicUsize>,
    /// Most connections held open ([`Pool::set_limit`]); `usize::MAX`: no limit.
    limit: AtomicUsize,
    /// Where check-in times, probation and deadlines read time ([`Pool::with_clock`]).
    clock: ClockSource,
}

/// An HTTP `CONNECT` tunnel through a proxy to the real target (`HTTPS_PROXY`).
#[derive(Clone)]
pub struct Tunnel {
    /// `host:port` of the target, as the `CONNECT` request names it.
    pub target: String,
    /// `Proxy-Authorization` value, when the proxy URL carried credentials.
    pub auth: Option<String>,
}

impl std::fmt::Debug for Tunnel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tunnel")
            .field("target", &self.target)
            .field("auth", &self.auth.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Largest `CONNECT` response head read from a proxy, bytes.
const TUNNEL_HEAD_MAX: usize = 16 * 1024;

/// Asks the proxy on `io` for a tunnel to `t.target` and reads its answer. Errors: the
/// proxy's refusal (its status line), a closed connection or an unreadable answer.
async fn open_tunnel(io: &mut StampedTcp, t: &Tunnel) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut req = format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n", t.target);
    if let Some(a) = &t.auth {
        req.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    io.write_all(req.as_bytes())
        .await
        .map_err(|e| format!("writing CONNECT: {e}"))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 512];
    let end = loop {
        if let Some(p) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if head.len() > TUNNEL_HEAD_MAX {
            return Err(format!(
                "its CONNECT answer is longer than {TUNNEL_HEAD_MAX} bytes"
            ));
        }
        let n = io
            .read(&mut byte)
            .await
            .map_err(|e| format!("reading its CONNECT answer: {e}"))?;
        if n == 0 {
            return Err("it closed the connection before answering CONNECT".into());
        }
        head.extend_from_slice(&byte[..n]);
    };
    let status = String::from_utf8_lossy(&head[..end]);
    let line = status.lines().next().unwrap_or("").trim().to_string();
    let code = line.split_whitespace().nth(1).unwrap_or("");
    if !line.starts_with("HTTP/1.") || !code.starts_with('2') {
        return Err(format!("it refused CONNECT {}: {line:?}", t.target));
    }
    if end != head.len() {
        return Err("it sent bytes after its CONNECT answer, before TLS began".into());
    }
    Ok(())
}

/// What to do about a failed TLS handshake whose error reads `msg` (rustls's words), after
/// it: a server answering in plain HTTP (`InvalidContentType`), a certificate not issued for
/// the host name, a self-signed CA certificate served as the server's (`CaUsedAsEndEntity`:
/// trusted only when given itself with `--tls-ca`), or one no given CA signed; "" for
/// anything else.
pub fn tls_hint(msg: &str) -> &'static str {
    if msg.contains("InvalidContentType") {
        " (the server answered in plain HTTP, not TLS: use http:// in --base-url)"
    } else if msg.contains("NotValidForName") || msg.contains("not valid for name") {
        " (the server's certificate is not issued for this host name: use a name it was \
         issued for in --base-url, or skip verification with --insecure)"
    } else if msg.contains("CaUsedAsEndEntity") {
        " (the server presents a CA certificate as its own, self-signed: give that exact \
         certificate with --tls-ca FILE, or skip verification with --insecure)"
    } else if msg.contains("UnknownIssuer") {
        " (no CA given trusts the server's certificate: give the CA that signed it with \
         --tls-ca FILE, or skip verification with --insecure)"
    } else if msg.contains("certificate") {
        " (the server's certificate does not verify: see the cause; --tls-ca FILE gives its \
         CA, --insecure skips verification)"
    } else {
        ""
    }
}

/// Why a new connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// TCP connect failed (refused, unreachable, DNS).
    #[error("cannot connect to {addr}: {source}")]
    Tcp {
        /// `host:port`.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The client ran out of one of its own resources before anything reached the server
    /// ([`client_resource_error`]): the client's limit, not the server's failure.
    #[error(
        "the client could not open a connection to {addr}: {source} (the client's own \
         limit, not the server's: {hint})"
    )]
    Resource {
        /// `host:port`.
        addr: String,
        /// The I/O error (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`, `EADDRNOTAVAIL`).
        source: std::io::Error,
        /// What to raise or free ([`client_resource_error`]).
        hint: &'static str,
    },
    /// TCP connect to the proxy (from the environment) failed: the proxy is unreachable,
    /// whatever the server's state.
    #[error("cannot connect to the proxy {addr} (from the environment's {var}): {source}")]
    Proxy {
        /// The proxy's `host:port`.
        addr: String,
        /// The variables it came from ([`crate::proxy::variable_for`]).
        var: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The proxy would not open a `CONNECT` tunnel to an `https://` target.
    #[error("the proxy {addr} gave no tunnel: {reason}")]
    Tunnel {
        /// The proxy's `host:port`.
        addr: String,
        /// What it answered (or how the connection failed).
        reason: String,
    },
    /// The TLS handshake with an `https://` target failed (a certificate that does not verify,
    /// no common protocol, not a TLS server).
    #[error("TLS handshake with {addr} failed: {source}{hint}")]
    Tls {
        /// The target's `host:port`.
        addr: String,
        /// rustls's error.
        source: std::io::Error,
        /// What to do about a certificate that does not verify (empty otherwise).
        hint: &'static str,
    },
}

impl ConnectError {
    /// The record's error class: [`ErrorClass::ClientResource`] for a client limit, else
    /// [`ErrorClass::Connect`].
    pub fn class(&self) -> ErrorClass {
        match self {
            ConnectError::Tcp { .. }
            | ConnectError::Proxy { .. }
            | ConnectError::Tunnel { .. }
            | ConnectError::Tls { .. } => ErrorClass::Connect,
            ConnectError::Resource { .. } => ErrorClass::ClientResource,
        }
    }
}

/// When `e` is the client running out of its own resources, what to raise or free: open
/// files (`EMFILE`: this process's `ulimit -n`; `ENFILE`: the system's `fs.file-max`), socket
/// buffers or memory (`ENOBUFS`, `ENOMEM`), or local ports (`EADDRNOTAVAIL` from a connect:
/// the ephemeral range is used up). `None` for any other error (the server's side).
pub fn client_resource_error(e: &io::Error) -> Option<&'static str> {
    match e.raw_os_error()? {
        libc::EMFILE => Some("raise the open-file limit, `ulimit -n`, or lower the concurrency"),
        libc::ENFILE => Some("the system's open-file table is full (`fs.file-max`)"),
        libc::ENOBUFS | libc::ENOMEM => Some("the client is out of memory or socket buffers"),
        libc::EADDRNOTAVAIL => {
            Some("no local port left (`net.ipv4.ip_local_port_range`, or connections in TIME_WAIT)")
        }
        _ => None,
    }
}

impl Pool {
    /// A pool for `host:port` whose connections stamp reads with the kernel's receive time
    /// when `rx_timestamps` (and the system supports it).
    pub fn new(host: &str, port: u16, rx_timestamps: bool) -> Self {
        Self {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            idle: Mutex::new(VecDeque::new()),
            unused: Mutex::new(Vec::new()),
            trusted: AtomicBool::new(false),
            suspicious: AtomicBool::new(false),
            spare_taken: tokio::sync::Notify::new(),
            kept_alive: AtomicBool::new(false),
            rx_timestamps,
            tls: None,
            tunnel: None,
            proxy_var: None,
            open: Arc::new(AtomicUsize::new(0)),
            limit: AtomicUsize::new(usize::MAX),
            clock: ClockSource::System,
        }
    }

    /// The same pool reading time from `clock` (default [`ClockSource::System`]; the client
    /// passes its run clock's source).
    pub fn with_clock(mut self, clock: ClockSource) -> Self {
        self.clock = clock;
        self
    }

    /// The pool that reaches `host:port` (an `https://` target when `https`) directly or
    /// through `proxy`: through a proxy its address is the proxy's, with a `CONNECT` tunnel to
    /// the target for `https://` and the request in absolute form for `http://`; `tls` speaks
    /// TLS over the connection (or the tunnel). Returns the pool and whether requests must be
    /// sent in absolute form. The one rule for benchmark requests and side requests alike.
    pub fn route(
        host: &str,
        port: u16,
        https: bool,
        proxy: Option<&crate::proxy::Proxy>,
        rx_timestamps: bool,
        tls: Option<crate::tls::TlsConnector>,
    ) -> (Pool, bool) {
        let tunnel = match (proxy, https) {
            (Some(p), true) => Some(Tunnel {
                target: if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                },
                auth: p.auth.clone(),
            }),
            _ => None,
        };
        let pool = match proxy {
            Some(p) => Pool::new(&p.host, p.port, rx_timestamps)
                .via_proxy(crate::proxy::variable_for(https)),
            None => Pool::new(host, port, rx_timestamps),
        };
        (pool.with_tls(tls, tunnel), proxy.is_some() && !https)
    }

    /// This pool's connections speak TLS (`tls`, for an `https://` target), through a
    /// `CONNECT` tunnel first when `tunnel` is given (the pool's address is then the proxy's).
    pub fn with_tls(
        mut self,
        tls: Option<crate::tls::TlsConnector>,
        tunnel: Option<Tunnel>,
    ) -> Self {
        self.tls = tls;
        self.tunnel = tunnel;
        self
    }

    /// This pool's `host:port` is a proxy's, from the environment variables `var`
    /// ([`crate::proxy::variable_for`]): a connection it cannot make fails as
    /// [`ConnectError::Proxy`], naming the proxy and the variables.
    pub fn via_proxy(mut self, var: &'static str) -> Self {
        self.proxy_var = Some(var);
        self
    }

    /// Holds at most `n` connections open from now on (see the module doc): a new connection
    /// at the limit closes an idle one first, spares are opened only below it. Callers give
    /// their concurrency plus [`CONNECTION_MARGIN`].
    pub fn set_limit(&self, n: usize) {
        self.limit.store(n.max(1), Ordering::Relaxed);
    }

    /// Connections open now: idle, pre-opened, in use or connecting.
    pub fn open_len(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections that may still be opened below the limit (`usize::MAX` without one).
    fn headroom(&self) -> usize {
        self.limit
            .load(Ordering::Relaxed)
            .saturating_sub(self.open_len())
    }

    /// At the limit, closes one idle connection to make room for a new one: the newest idle
    /// (the oldest are the nearest to reuse and to trust), else the oldest pre-opened one.
    fn make_room(&self) {
        if self.headroom() > 0 {
            return;
        }
        let evicted = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.pop_back().is_some()
        };
        if !evicted {
            let mut unused = self.unused.lock().unwrap_or_else(|p| p.into_inner());
            if !unused.is_empty() {
                unused.remove(0);
            }
        }
    }

    /// True while connections are reused only after [`REUSE_QUIET`], or not at all once stale
    /// bytes were seen (see the module doc).
    pub fn on_probation(&self) -> bool {
        self.suspicious.load(Ordering::Relaxed) || !self.trusted.load(Ordering::Relaxed)
    }

    /// True once probation has ended either way: trusted, or suspicious for the rest of the run.
    fn settled(&self) -> bool {
        self.trusted.load(Ordering::Relaxed) || self.suspicious.load(Ordering::Relaxed)
    }

    /// Records that a connection of this pool received bytes nobody asked for: from now on no
    /// connection is reused (every request gets a fresh one).
    pub fn mark_stale(&self) {
        if !self.suspicious.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{}:{} wrote bytes after a finished response (a second response?): keep-alive \
                 is off for it from now on, every request gets a fresh connection",
                self.host,
                self.port,
            );
        }
    }

    /// Takes the next idle connection to try: the newest when trusted, else the oldest once it
    /// has been quiet for [`REUSE_QUIET`]. Drops connections idle longer than [`POOL_IDLE`].
    fn next_idle(&self, now: Instant) -> Option<(Conn, Instant)> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while idle
            .front()
            .is_some_and(|(_, since)| now.duration_since(*since) >= POOL_IDLE)
        {
            idle.pop_front();
        }
        if self.suspicious.load(Ordering::Relaxed) {
            idle.clear();
            return None;
        }
        if !self.on_probation() {
            return idle.pop_back();
        }
        if idle
            .front()
            .is_some_and(|(_, since)| now.duration_since(*since) >= REUSE_QUIET)
        {
            return idle.pop_front();
        }
        None
    }

    /// An idle live connection ([`Origin::Reused`]), a pre-opened one ([`Origin::PreOpened`])
    /// or a new one ([`Origin::Fresh`]; the only kind when `fresh`). Idle connections the
    /// server already closed (their socket reads EOF) or that hold unread bytes are dropped here;
    /// unread bytes on an idle connection turn the pool stale ([`Pool::mark_stale`]), on a
    /// pre-opened one (a server that talks first, not an earlier response) they do not.
    pub async fn checkout(&self, fresh: bool) -> Result<(Conn, Origin), ConnectError> {
        if !fresh {
            let now = self.clock.now();
            while let Some((mut c, since)) = self.next_idle(now) {
                match c.poll_idle() {
                    IdleState::Open => {
                        if now.duration_since(since) >= REUSE_QUIET {
                            self.trusted.store(true, Ordering::Relaxed);
                        }
                        return Ok((c, Origin::Reused));
                    }
                    IdleState::Stale => self.mark_stale(),
                    IdleState::Closed => {}
                }
            }
            while let Some(mut c) = self.next_unused(now) {
                if c.poll_idle() == IdleState::Open {
                    return Ok((c, Origin::PreOpened));
                }
            }
        }
        self.make_room();
        Ok((self.connect().await?, Origin::Fresh))
    }

    /// The newest pre-opened connection younger than [`POOL_IDLE`] (older ones are dropped).
    fn next_unused(&self, now: Instant) -> Option<Conn> {
        let mut unused = self.unused.lock().unwrap_or_else(|p| p.into_inner());
        unused.retain(|(_, opened)| now.duration_since(*opened) < POOL_IDLE);
        let c = unused.pop().map(|(c, _)| c);
        if c.is_some() {
            self.spare_taken.notify_one();
        }
        c
    }

    /// Opens connections until `n` are held (idle and pre-opened together), at most `parallel`
    /// connects at a time, and stops at the first failure or after `deadline`, so the sends of a
    /// closed-loop phase find their connections ready instead of connecting inside the measured
    /// window. Returns how many it opened. A failure here is not recorded anywhere: the
    /// requests that then connect themselves record it.
    pub async fn preconnect(&self, n: usize, parallel: usize, deadline: Duration) -> usize {
        let want = n.saturating_sub(self.idle_len() + self.unused_len());
        self.open_unused(want, parallel, deadline).await
    }

    /// While the pool is on probation and has seen no stale bytes, keeps `n` pre-opened
    /// connections ready, replacing each one a request takes (at most `parallel` connects at a
    /// time). On probation a request that finds no idle connection quiet for [`REUSE_QUIET`]
    /// needs a new one: connecting inside its own measurement cost a saturated client a whole
    /// round of its run queue (≈ 11 ms at 64 streams) and the server an accept before its
    /// answer, for every request of the first [`REUSE_QUIET`] (issue 14: ~900 connects in a
    /// 10 s run at 64 streams, the TTFT mean 1–4 ms). Returns once the pool is trusted or
    /// suspicious, or when a connect fails (the requests then connect themselves and record
    /// it). Spares left when it returns stay pre-opened connections (handed out after the idle
    /// ones, dropped after [`POOL_IDLE`]): they cannot be told from those [`Pool::preconnect`]
    /// opened for the first requests of a trusted pool, which must not be closed.
    pub async fn keep_spares(&self, n: usize, parallel: usize) {
        loop {
            if self.settled() {
                return;
            }
            let taken = self.spare_taken.notified();
            // Only once a response has kept its connection open: a server that closes after
            // every response would never use a spare, and one that serves one connection at
            // a time would sit reading a spare that never carries a request (trial 30).
            let want = if self.kept_alive.load(Ordering::Relaxed) {
                n.saturating_sub(self.unused_len())
            } else {
                0
            };
            if want > 0 {
                if self.open_unused(want, parallel, REUSE_QUIET).await < want {
                    return;
                }
                continue;
            }
            // Trust is checked again at least this often.
            let _ = tokio::time::timeout(REUSE_QUIET / 4, taken).await;
        }
    }

    /// Waits, at most `limit`, until the pool leaves probation: the oldest idle connection
    /// stays quiet for `quiet` after its response (a stale one is dropped and turns the pool
    /// suspicious; a closed one is dropped). Returns at once when the pool is trusted or
    /// suspicious already, or holds no idle connection to judge by. `bench` calls it between
    /// its warmup and its profile so that the profile starts trusted instead of connecting
    /// afresh for its first [`REUSE_QUIET`] (issue 14), with a `quiet` well above
    /// [`REUSE_QUIET`]: trusting after 200 ms put every profile request on a warmup connection
    /// whose stale copy came at 300 ms, each then reading the previous one's response (trial 30
    /// F0); a longer wait, once per point, catches such a server before the profile.
    pub async fn await_trust(&self, quiet: Duration, limit: Duration) {
        let stop = self.clock.now() + limit;
        loop {
            if self.settled() {
                return;
            }
            let now = self.clock.now();
            let quiet_at = {
                let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                let Some((c, since)) = idle.front_mut() else {
                    return;
                };
                let at = *since + quiet;
                if at <= now {
                    match c.poll_idle() {
                        IdleState::Open => {
                            self.trusted.store(true, Ordering::Relaxed);
                            return;
                        }
                        IdleState::Stale => {
                            idle.pop_front();
                            drop(idle);
                            self.mark_stale();
                            return;
                        }
                        IdleState::Closed => {
                            idle.pop_front();
                            continue;
                        }
                    }
                }
                at
            };
            if quiet_at > stop {
                return;
            }
            tokio::time::sleep_until(quiet_at.into()).await;
        }
    }

    /// Opens `want` connections into the pre-opened set, at most `parallel` at a time, until
    /// the first failure or `deadline`. Returns how many it opened.
    async fn open_unused(&self, want: usize, parallel: usize, deadline: Duration) -> usize {
        let want = want.min(self.headroom());
        let stop_at = self.clock.now() + deadline;
        let mut opened = 0;
        let mut pending = futures_util::stream::FuturesUnordered::new();
        let mut started = 0;
        loop {
            while started < want && pending.len() < parallel.max(1) {
                pending.push(self.connect());
                started += 1;
            }
            let next = tokio::time::timeout_at(
                stop_at.into(),
                futures_util::StreamExt::next(&mut pending),
            );
            match next.await {
                Ok(Some(Ok(c))) => {
                    opened += 1;
                    let mut unused = self.unused.lock().unwrap_or_else(|p| p.into_inner());
                    unused.push((c, self.clock.now()));
                }
                Ok(Some(Err(_))) | Err(_) => return opened,
                Ok(None) => return opened,
            }
        }
    }

    /// True once a connection of this pool showed bytes nobody asked for ([`Pool::mark_stale`]):
    /// keep-alive is off for the rest of the run. `bench` compares it before and after its
    /// profile: turned on in between, some of the profile's responses may have been read by
    /// the wrong request.
    pub fn stale_seen(&self) -> bool {
        self.suspicious.load(Ordering::Relaxed)
    }

    /// The end-of-phase check for bytes nobody asked for: waits until the newest idle
    /// connection has been quiet for `quiet` after its response, then polls every idle
    /// connection once (a stale one is dropped and turns the pool suspicious, a closed one is
    /// dropped). A server that answers one request twice, the copy later than the quiet time
    /// before the next request went out on its connection, hands each later request on it the
    /// previous one's response; the last real response then arrives on an idle connection
    /// and is caught here (trial 32 F1: 19 of 32 requests read another request's response,
    /// without a word). Returns at once when the pool is suspicious already or holds no idle
    /// connection.
    pub async fn audit_idle(&self, quiet: Duration) {
        if self.stale_seen() {
            return;
        }
        let newest = {
            let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.back().map(|(_, since)| *since)
        };
        let Some(newest) = newest else {
            return;
        };
        tokio::time::sleep_until((newest + quiet).into()).await;
        let mut stale = false;
        {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.retain_mut(|(c, _)| match c.poll_idle() {
                IdleState::Open => true,
                IdleState::Stale => {
                    stale = true;
                    false
                }
                IdleState::Closed => false,
            });
        }
        if stale {
            self.mark_stale();
        }
    }

    /// Pre-opened connections held now.
    pub fn unused_len(&self) -> usize {
        self.unused.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Returns a connection whose previous response was read to the end. Its socket is polled
    /// once first: a connection that already holds unread bytes (a second response) or was
    /// closed is dropped instead.
    pub fn checkin(&self, mut c: Conn) {
        match c.poll_idle() {
            IdleState::Open if !self.suspicious.load(Ordering::Relaxed) => {
                self.kept_alive.store(true, Ordering::Relaxed);
                let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                idle.push_back((c, self.clock.now()));
            }
            IdleState::Stale => self.mark_stale(),
            IdleState::Open | IdleState::Closed => {}
        }
    }

    /// Idle connections held now.
    pub fn idle_len(&self) -> usize {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Opens one connection as [`Pool::checkout`] would open a fresh one (TCP, the `CONNECT`
    /// tunnel, TLS) and hands its byte stream over, outside the pool (a side request's,
    /// [`crate::get`]). Errors: [`ConnectError`]'s.
    pub(crate) async fn connect_stream(&self) -> Result<Stream, ConnectError> {
        Ok(self.connect().await?.io)
    }

    /// Opens a new connection, counted in the open ones from the start (a failed connect
    /// releases its count). Errors: [`ConnectError::Resource`] for the client's own limits
    /// ([`client_resource_error`]), [`ConnectError::Tcp`] otherwise.
    async fn connect(&self) -> Result<Conn, ConnectError> {
        let slot = OpenSlot::take(&self.open);
        let addr = format!("{}:{}", self.host, self.port);
        let stream = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|source| match client_resource_error(&source) {
                Some(hint) => ConnectError::Resource {
                    addr: addr.clone(),
                    source,
                    hint,
                },
                None => match self.proxy_var {
                    Some(var) => ConnectError::Proxy {
                        addr: addr.clone(),
                        var,
                        source,
                    },
                    None => ConnectError::Tcp {
                        addr: addr.clone(),
                        source,
                    },
                },
            })?;
        let _ = stream.set_nodelay(true);
        let mut tcp = StampedTcp::new(stream, self.rx_timestamps);
        if let Some(t) = &self.tunnel {
            open_tunnel(&mut tcp, t)
                .await
                .map_err(|reason| ConnectError::Tunnel {
                    addr: addr.clone(),
                    reason,
                })?;
        }
        let io = match &self.tls {
            None => Stream::Plain(tcp),
            Some(tls) => {
                let target = self.tunnel.as_ref().map_or(addr, |t| t.target.clone());
                let tls = tls.connect(tcp).await.map_err(|source| {
                    let hint = tls_hint(&source.to_string());
                    ConnectError::Tls {
                        addr: target,
                        source,
                        hint,
                    }
                })?;
                Stream::Tls(Box::new(tls))
            }
        };
        Ok(Conn::new(io, slot))
    }
}

#[cfg(test)]
mod hint_tests {
    use super::tls_hint;

    /// A fresh tester's finding 3: the `--tls-ca` hint came for a name mismatch and for a
    /// self-signed certificate given as its own CA; a plain-HTTP answer had none. rustls's
    /// words for each, and the hint after them.
    #[test]
    fn each_tls_failure_gets_its_own_hint() {
        let plain = "received corrupt message of type InvalidContentType";
        assert!(tls_hint(plain).contains("plain HTTP, not TLS: use http://"));
        let name = "invalid peer certificate: certificate not valid for name \"127.0.0.2\"; \
                    certificate is only valid for localhost or 127.0.0.1";
        assert!(tls_hint(name).contains("not issued for this host name"));
        assert!(!tls_hint(name).contains("--tls-ca"));
        let own = "invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))";
        assert!(tls_hint(own).contains("give that exact certificate with --tls-ca FILE"));
        let unknown = "invalid peer certificate: UnknownIssuer";
        assert!(tls_hint(unknown).contains("give the CA that signed it with --tls-ca FILE"));
        assert_eq!(tls_hint("connection reset"), "");
    }
}
