//! The one run clock: nanoseconds since the run start on the monotonic clock (DESIGN.md §3).

use std::time::{Duration, Instant};

/// A monotonic clock anchored at the run start. `Copy`, so every task stamps the same timeline.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    anchor: Instant,
}

impl Default for RunClock {
    fn default() -> Self {
        Self::start()
    }
}

impl RunClock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Self {
            anchor: Instant::now(),
        }
    }

    /// The instant of ns 0.
    pub fn anchor(&self) -> Instant {
        self.anchor
    }

    /// Nanoseconds since the anchor, now.
    pub fn now_ns(&self) -> u64 {
        self.ns_at(Instant::now())
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
}
