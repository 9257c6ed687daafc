//! Kernel receive timestamps (issue 14): a TCP stream whose every read also reports when the
//! kernel received the first byte it returned (`SO_TIMESTAMPNS`, Linux), so a token's time is
//! when its bytes reached this host, not when a busy client task got round to reading them.
//! On a saturated client core the task may read a whole response at once; with these stamps its
//! TTFT stays the server's (what vllm-bench's one-read-per-wake-up loop approximates).
//!
//! How a stamp becomes a run-clock time ([`RxStamp::run_ns`]): the kernel stamps with
//! `CLOCK_REALTIME`; at the moment its bytes are handled their *age* (wall now − stamp) is taken
//! from the run's monotonic now, so wall-clock steps or slewing over a long run never shift
//! run times (the age is micro- to milliseconds). Where stamps are unavailable (not Linux,
//! the option refused, no control message) reads fall back to the time they are handled. The
//! kernel enables receive stamping system-wide lazily (a deferred work item when the first
//! socket asks), so the first bytes of a process's first connection may come unstamped: those
//! are timed at read.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The latest read's kernel receive time of one connection, ns since the Unix epoch
/// (`CLOCK_REALTIME`), 0 before the first stamped read. Cloned handles share it.
#[derive(Debug, Clone, Default)]
pub struct RxStamp(Arc<AtomicU64>);

impl RxStamp {
    /// The stamp of the latest read, ns since the Unix epoch; `None` before any stamped read.
    pub fn unix_ns(&self) -> Option<u64> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(ns),
        }
    }

    /// How long (ns) before `unix_ns` (a `CLOCK_REALTIME` reading,
    /// [`crate::clock::RunClock::unix_now_ns`]) the kernel
    /// received the latest read's first byte; `None` without a stamp or when it came at or
    /// after `unix_ns`. Both sides are wall-clock readings, so no mapping onto the run clock
    /// blurs it: bytes stamped before a request's write began cannot answer that request.
    pub fn before(&self, unix_ns: u64) -> Option<u64> {
        self.unix_ns().filter(|s| *s < unix_ns).map(|s| unix_ns - s)
    }

    fn set(&self, unix_ns: u64) {
        self.0.store(unix_ns, Ordering::Relaxed);
    }

    /// The run-clock time (ns) of the latest read given the run clock's `now_ns`: `now_ns`
    /// minus the stamp's age (`unix_now_ns`, the run clock's wall-clock reading
    /// [`crate::clock::RunClock::unix_now_ns`], taken only when there is a stamp), never below
    /// `floor_ns` (the request's send, its previous chunk) and never after `now_ns`; `now_ns`
    /// when there is no stamp or the stamp is older than the floor allows.
    #[inline]
    pub fn run_ns(&self, now_ns: u64, floor_ns: u64, unix_now_ns: impl FnOnce() -> u64) -> u64 {
        let Some(stamp) = self.unix_ns() else {
            return now_ns;
        };
        let age = unix_now_ns().saturating_sub(stamp);
        now_ns.saturating_sub(age).max(floor_ns).min(now_ns)
    }
}

/// A TCP stream that stamps each read ([`RxStamp`]); writes go straight through.
#[derive(Debug)]
pub struct StampedTcp {
    inner: TcpStream,
    stamp: RxStamp,
    /// `SO_TIMESTAMPNS` is on: reads go through `recvmsg`.
    stamping: bool,
}

impl StampedTcp {
    /// [`TcpStream::try_write`]: one write if the socket is known writable, no waker, no
    /// cooperative budget. `WouldBlock` otherwise.
    pub fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        self.inner.try_write(data)
    }

    /// Wraps `inner`, turning on kernel receive timestamps when `enable` and the system has
    /// them (Linux); otherwise reads are plain and the stamp stays empty.
    pub fn new(inner: TcpStream, enable: bool) -> Self {
        let stamping = enable && enable_timestamps(&inner);
        Self {
            inner,
            stamp: RxStamp::default(),
            stamping,
        }
    }

    /// The handle the request code reads the latest stamp from.
    pub fn stamp(&self) -> RxStamp {
        self.stamp.clone()
    }
}

#[cfg(target_os = "linux")]
fn enable_timestamps(s: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket fd and a c_int option value of the size passed.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

#[cfg(not(target_os = "linux"))]
fn enable_timestamps(_: &TcpStream) -> bool {
    false
}

/// One `recvmsg` into `buf`: bytes read and the `SCM_TIMESTAMPNS` stamp (ns since the epoch)
/// when the kernel attached one.
#[cfg(target_os = "linux")]
fn recv_stamped(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    // Room for one timespec control message (and a spare, in case others are enabled).
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: fd is a socket; iov points into `buf`, control into `control`, both live for
    // the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: walking the control buffer the kernel filled, with the libc macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if ts.tv_sec > 0 {
                    stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

impl AsyncRead for StampedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        #[cfg(target_os = "linux")]
        if this.stamping {
            use std::os::fd::AsRawFd;
            loop {
                ready!(this.inner.poll_read_ready(cx))?;
                let fd = this.inner.as_raw_fd();
                // SAFETY: recvmsg only writes initialised bytes into the unfilled part, and
                // `assume_init`/`advance` below cover exactly the `n` bytes it wrote.
                let unfilled = unsafe { buf.unfilled_mut() };
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(
                        unfilled.as_mut_ptr().cast::<u8>(),
                        unfilled.len(),
                    )
                };
                match this
                    .inner
                    .try_io(tokio::io::Interest::READABLE, || recv_stamped(fd, dst))
                {
                    Ok((n, stamp)) => {
                        // A read with data but no stamp clears the old one: its bytes are timed
                        // at read, never by an earlier response's stamp on this connection.
                        if n > 0 {
                            this.stamp.set(stamp.unwrap_or(0));
                        }
                        // SAFETY: the kernel wrote `n` bytes into the unfilled region.
                        unsafe { buf.assume_init(n) };
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for StampedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ClockSource;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn wall_ns() -> u64 {
        ClockSource::System.unix_now_ns()
    }

    #[test]
    fn run_time_is_now_minus_the_stamps_age_within_bounds() {
        let s = RxStamp::default();
        assert_eq!(s.run_ns(5_000, 100, wall_ns), 5_000, "no stamp: now");
        let wall = wall_ns();
        s.set(wall - 2_000_000); // 2 ms ago
        let t = s.run_ns(10_000_000, 0, wall_ns);
        // 2 ms plus the few µs between the two clock reads.
        assert!((7_500_000..=8_000_000).contains(&t), "{t}");
        assert_eq!(s.run_ns(10_000_000, 9_000_000, wall_ns), 9_000_000, "floor");
        s.set(wall + 60_000_000_000); // a stamp from the future (clock step): now
        assert_eq!(s.run_ns(10_000_000, 0, wall_ns), 10_000_000);
    }

    /// `before`: the stamp's lead over a later wall-clock reading, none for a later stamp.
    #[test]
    fn before_is_the_stamps_lead_over_a_wall_reading() {
        let s = RxStamp::default();
        assert_eq!(s.before(1_000), None, "no stamp");
        s.set(900);
        assert_eq!(s.before(1_000), Some(100));
        assert_eq!(s.before(900), None, "at the same instant: not before");
        assert_eq!(s.before(800), None);
    }

    /// Bytes that waited in the socket are stamped with their arrival, not their read.
    #[tokio::test]
    async fn a_late_read_carries_the_arrival_time() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let srv = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            // Answer only after the client asked (bytes received before SO_TIMESTAMPNS was
            // on carry no stamp; a real request is always sent after it is on).
            let mut ask = [0u8; 2];
            s.read_exact(&mut ask).await.unwrap();
            s.write_all(b"hello").await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        });
        let mut c = StampedTcp::new(TcpStream::connect(addr).await.unwrap(), true);
        let stamp = c.stamp();
        // The kernel turns software stamping on system-wide from a deferred work item: give
        // it a moment (bytes arriving before that carry no stamp and are timed at read).
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        c.write_all(b"go").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let mut buf = [0u8; 16];
        let n = c.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"hello");
        if cfg!(target_os = "linux") {
            let wall = wall_ns();
            let age = wall - stamp.unix_ns().expect("a kernel stamp");
            assert!(
                age >= 90_000_000,
                "the bytes arrived ≈ 100 ms before the read: {age}"
            );
        }
        srv.await.unwrap();
    }
}
