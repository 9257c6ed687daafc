//! The one run clock: nanoseconds since the run start on the monotonic clock (DESIGN.md §3),
//! and the one seam every time read of `client` and `loadgen` goes through (issue 40 §4).
//!
//! **The seam.** [`ClockSource`] says where time is read: [`ClockSource::System`] (the
//! default, every real run) reads `std::time::Instant::now` and `SystemTime::now`, exactly
//! what the client read before the seam; [`ClockSource::Tokio`] reads tokio's clock, which a
//! test pauses (`#[tokio::test(start_paused = true)]`) so pacing, timeouts and the
//! `--duration` end run in virtual time, exactly and fast (tokio's timers and this clock then
//! agree: a sleep until `t` wakes with the clock reading `t`, rounded up to tokio's 1 ms
//! timer tick). Outside a paused runtime `Tokio` reads the same monotonic time as `System`.
//!
//! **Why an enum, not a trait object.** The client stamps every chunk; a `dyn Clock` would
//! put an indirect call on that hot path. [`ClockSource`] is a `Copy` two-variant enum whose
//! `System` arm is the direct, inlined `Instant::now()` (one well-predicted branch per read),
//! so [`RunClock`] stays `Copy` and real runs time exactly as before.
//!
//! **Wall time.** [`RunClock::unix_now_ns`] is the `CLOCK_REALTIME` reading the kernel receive
//! stamps are set against ([`crate::rxstamp`]) and that results' start/end dates come from.
//! Under `System` it is `SystemTime::now()`; under `Tokio` it is the wall time when the
//! process first read it plus the (virtual) monotonic time since, so virtual runs have
//! consistent dates (kernel stamps are real wall times: virtual-time tests turn
//! `rx_timestamps` off).

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where a [`RunClock`] reads time. `Copy`; the default is the system clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClockSource {
    /// The operating system's monotonic and wall clocks (every real run).
    #[default]
    System,
    /// tokio's clock: virtual under a paused test runtime, the system's monotonic clock
    /// otherwise (wall time derived from it, see the module docs).
    Tokio,
}

impl ClockSource {
    /// Monotonic now.
    #[inline]
    pub fn now(self) -> Instant {
        match self {
            ClockSource::System => Instant::now(),
            ClockSource::Tokio => tokio::time::Instant::now().into_std(),
        }
    }

    /// Wall-clock now (`CLOCK_REALTIME` under `System`).
    #[inline]
    pub fn wall(self) -> SystemTime {
        match self {
            ClockSource::System => SystemTime::now(),
            ClockSource::Tokio => {
                static BASE: OnceLock<(Instant, SystemTime)> = OnceLock::new();
                let (mono, wall) = *BASE
                    .get_or_init(|| (tokio::time::Instant::now().into_std(), SystemTime::now()));
                wall + self.now().saturating_duration_since(mono)
            }
        }
    }

    /// Wall-clock now as ns since the Unix epoch; 0 before 1970.
    #[inline]
    pub fn unix_now_ns(self) -> u64 {
        self.wall()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

/// A monotonic clock anchored at the run start. `Copy`, so every task stamps the same timeline.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    anchor: Instant,
    source: ClockSource,
}

impl Default for RunClock {
    fn default() -> Self {
        Self::start()
    }
}

impl RunClock {
    /// A clock on the system clock whose zero is now.
    pub fn start() -> Self {
        Self::start_on(ClockSource::System)
    }

    /// A clock reading `source` whose zero is now.
    pub fn start_on(source: ClockSource) -> Self {
        Self {
            anchor: source.now(),
            source,
        }
    }

    /// Where this clock reads time.
    pub fn source(&self) -> ClockSource {
        self.source
    }

    /// The instant of ns 0.
    pub fn anchor(&self) -> Instant {
        self.anchor
    }

    /// Monotonic now (the instant, not run ns: for deadlines and elapsed times).
    #[inline]
    pub fn now(&self) -> Instant {
        self.source.now()
    }

    /// Nanoseconds since the anchor, now.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.ns_at(self.now())
    }

    /// Wall-clock now ([`ClockSource::wall`]).
    pub fn wall(&self) -> SystemTime {
        self.source.wall()
    }

    /// Wall-clock now, ns since the Unix epoch (the kernel receive stamps' clock); 0 before
    /// 1970.
    #[inline]
    pub fn unix_now_ns(&self) -> u64 {
        self.source.unix_now_ns()
    }

    /// Nanoseconds since the anchor at `t` (0 when `t` is before the anchor).
    pub fn ns_at(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.anchor).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The instant `ns` nanoseconds after the anchor.
    pub fn instant_at(&self, ns: u64) -> Instant {
        self.anchor + Duration::from_nanos(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let c = RunClock::start();
        assert_eq!(c.ns_at(c.instant_at(1_234_567)), 1_234_567);
        if let Some(before) = c.anchor().checked_sub(Duration::from_secs(1)) {
            assert_eq!(c.ns_at(before), 0);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_source_is_virtual_when_paused() {
        let c = RunClock::start_on(ClockSource::Tokio);
        let w0 = c.unix_now_ns();
        assert_eq!(c.now_ns(), 0);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(c.now_ns(), 1_500_000_000);
        assert_eq!(c.unix_now_ns() - w0, 1_500_000_000);
        tokio::time::advance(Duration::from_nanos(7)).await;
        assert_eq!(c.now_ns(), 1_500_000_007);
    }
}
