//! Keep-alive HTTP/1.1 connection pool over `hyper::client::conn::http1`.
//!
//! Why not hyper-util's pooled client: a benchmark must know whether a request went out on a
//! reused connection. Some servers (llama.cpp's `llama-server`, cpp-httplib) advertise
//! keep-alive but close the connection right after each streamed response; a closed-loop client
//! that sends its next request at once races that close and the request dies unanswered. Only
//! in that case (reused connection, no response byte) [`crate::Client`] re-sends once on a fresh
//! connection, as curl does; a fresh connection that fails is always a recorded failure.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Idle pooled connections older than this are not reused (4 s: below uvicorn's 5 s and
/// cpp-httplib's 5 s keep-alive timeouts).
pub const POOL_IDLE: Duration = Duration::from_secs(4);

/// Largest read buffer per connection, bytes (hyper's default grows to ~400 KiB when a fast
/// server fills every read; 16 KiB still holds ~85 typical SSE events per read and keeps the
/// per-stream memory low).
pub const READ_BUF_MAX: usize = 16 * 1024;

/// One connection's request handle.
pub type Sender = SendRequest<Full<Bytes>>;

/// One connection's I/O driver. The client polls it in the request's own task (not a spawned
/// task), so decoded body frames reach the SSE parser without a cross-task wake-up per event.
pub type Driver = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// A connection: request handle plus its I/O driver.
pub struct Conn {
    /// Sends requests.
    pub sender: Sender,
    /// Drives the socket; must be polled while a request is in flight.
    pub driver: Driver,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Conn")
    }
}

impl Conn {
    /// Polls the driver once without a real waker: `true` when the connection has ended
    /// (closed by the server, or failed).
    pub fn poll_ended(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        matches!(Pin::new(&mut self.driver).poll(&mut cx), Poll::Ready(_))
    }
}

/// Pool of idle connections to one `host:port`.
#[derive(Debug)]
pub struct Pool {
    host: String,
    port: u16,
    idle: Mutex<Vec<(Conn, Instant)>>,
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
    /// The HTTP/1 handshake failed.
    #[error("HTTP handshake with {addr} failed: {source}")]
    Handshake {
        /// `host:port`.
        addr: String,
        /// hyper's error.
        source: hyper::Error,
    },
}

impl Pool {
    /// A pool for `host:port`.
    pub fn new(host: &str, port: u16) -> Self {
        Self {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle live connection (`true` = reused) or a new one (`false`). Idle connections the
    /// server already closed (their driver sees EOF) are dropped here.
    pub async fn checkout(&self, fresh: bool) -> Result<(Conn, bool), ConnectError> {
        if !fresh {
            let now = Instant::now();
            loop {
                let next = {
                    let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                    idle.pop()
                };
                let Some((mut c, since)) = next else { break };
                if now.duration_since(since) < POOL_IDLE
                    && !c.sender.is_closed()
                    && c.sender.is_ready()
                    && !c.poll_ended()
                {
                    return Ok((c, true));
                }
            }
        }
        Ok((self.connect().await?, false))
    }

    /// Returns a connection whose previous response was read to the end.
    pub fn checkin(&self, c: Conn) {
        if !c.sender.is_closed() {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.push((c, Instant::now()));
        }
    }

    async fn connect(&self) -> Result<Conn, ConnectError> {
        let addr = format!("{}:{}", self.host, self.port);
        let stream = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|source| ConnectError::Tcp {
                addr: addr.clone(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        let (sender, driver) = http1::Builder::new()
            .max_buf_size(READ_BUF_MAX)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|source| ConnectError::Handshake { addr, source })?;
        Ok(Conn { sender, driver })
    }
}
