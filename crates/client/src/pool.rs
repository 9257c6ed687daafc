//! Keep-alive HTTP/1.1 connection pool over `hyper::client::conn::http1`.
//!
//! Why not hyper-util's pooled client: a benchmark must know whether a request went out on a
//! reused connection. Some servers (llama.cpp's `llama-server`, cpp-httplib) advertise
//! keep-alive but close the connection right after each streamed response; a closed-loop client
//! that sends its next request at once races that close and the request dies unanswered. Only
//! in that case (reused connection, no response byte) [`crate::Client`] re-sends once on a fresh
//! connection, as curl does; a fresh connection that fails is always a recorded failure.

use std::sync::Mutex;
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
/// server fills every read; 32 KiB still holds ~170 typical SSE events per read and keeps the
/// per-stream memory low).
pub const READ_BUF_MAX: usize = 32 * 1024;

/// One connection's request handle.
pub type Sender = SendRequest<Full<Bytes>>;

/// Pool of idle connections to one `host:port`.
#[derive(Debug)]
pub struct Pool {
    host: String,
    port: u16,
    idle: Mutex<Vec<(Sender, Instant)>>,
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

    /// An idle live connection (`true` = reused) or a new one (`false`).
    pub async fn checkout(&self, fresh: bool) -> Result<(Sender, bool), ConnectError> {
        if !fresh {
            let now = Instant::now();
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            while let Some((s, since)) = idle.pop() {
                if !s.is_closed() && s.is_ready() && now.duration_since(since) < POOL_IDLE {
                    return Ok((s, true));
                }
            }
        }
        Ok((self.connect().await?, false))
    }

    /// Returns a connection whose previous response was read to the end.
    pub fn checkin(&self, s: Sender) {
        if !s.is_closed() {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.push((s, Instant::now()));
        }
    }

    async fn connect(&self) -> Result<Sender, ConnectError> {
        let addr = format!("{}:{}", self.host, self.port);
        let stream = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|source| ConnectError::Tcp {
                addr: addr.clone(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = http1::Builder::new()
            .max_buf_size(READ_BUF_MAX)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|source| ConnectError::Handshake { addr, source })?;
        tokio::spawn(async move {
            // Ends when the connection closes; errors surface on the request side.
            let _ = conn.await;
        });
        Ok(sender)
    }
}
