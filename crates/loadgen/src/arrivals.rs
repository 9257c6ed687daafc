//! Arrival processes: absolute send deadlines from one start instant (peers.md §5.1).
//!
//! Deadlines are offsets in ns from the profile start, computed by summing inter-arrival gaps
//! in f64 seconds and rounding once per arrival, so errors never accumulate (the per-hop sleep
//! drift of vLLM/tcpreplay is impossible by construction).
//!
//! With a known number of arrivals ([`Schedule::with_count`]) the gaps are rescaled so that the
//! offered rate over the run is exactly the requested one: the last of `n` arrivals lands at
//! `(n − 1) / rate` s, so `(n − 1) / span` = rate (vLLM `bench serve` rescales its gamma delays
//! the same way so that different seeds offer the same load; the rescale is one pass over the
//! same random draws, no memory per arrival).

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};

/// The arrival process of one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// Every arrival at offset 0 (`--request-rate inf`): the concurrency cap alone paces sends.
    Unlimited,
    /// Gamma-distributed gaps with mean `1 / rate_rps` and shape `burstiness` (vLLM's
    /// `--burstiness`: gamma(shape = b, scale = 1 / (rate · b)); b = 1 is a Poisson process).
    /// The first arrival is at offset 0, as in vLLM.
    Gamma {
        /// Mean arrivals per second.
        rate_rps: f64,
        /// Gamma shape, > 0.
        burstiness: f64,
    },
}

/// Iterator of arrival offsets, ns from the phase start, non-decreasing.
#[derive(Debug)]
pub struct Schedule {
    kind: Arrivals,
    gamma: Option<Gamma<f64>>,
    rng: StdRng,
    next_s: f64,
    /// Multiplier of every gap (1 without rescaling).
    scale: f64,
}

/// The arrival RNG of `seed`: its own stream, independent of the prompt RNG using the same seed.
fn arrival_rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ 0x6172_7269_7661_6c73)
}

impl Schedule {
    /// A deterministic schedule for `seed`. Invalid rate/shape (≤ 0, NaN) degrade to
    /// [`Arrivals::Unlimited`]; `BenchOptions::validate` rejects them earlier.
    pub fn new(kind: Arrivals, seed: u64) -> Self {
        let gamma = match kind {
            Arrivals::Gamma {
                rate_rps,
                burstiness,
            } if rate_rps > 0.0 && burstiness > 0.0 => {
                Gamma::new(burstiness, 1.0 / (rate_rps * burstiness)).ok()
            }
            _ => None,
        };
        Self {
            kind,
            gamma,
            rng: arrival_rng(seed),
            next_s: 0.0,
            scale: 1.0,
        }
    }

    /// A schedule of `n` arrivals whose gaps are rescaled so the last lands at exactly
    /// `(n − 1) / rate` s (module doc); `n < 2` or an unlimited rate gives [`Schedule::new`].
    pub fn with_count(kind: Arrivals, seed: u64, n: u64) -> Self {
        let mut s = Self::new(kind, seed);
        if let (Some(g), Arrivals::Gamma { rate_rps, .. }) = (&s.gamma, kind) {
            if n >= 2 {
                let mut rng = arrival_rng(seed);
                let sum: f64 = (0..n - 1).map(|_| g.sample(&mut rng)).sum();
                let target = (n - 1) as f64 / rate_rps;
                if sum > 0.0 && sum.is_finite() && target.is_finite() {
                    s.scale = target / sum;
                }
            }
        }
        s
    }

    /// True when arrivals are paced by time (a finite rate).
    pub fn is_paced(&self) -> bool {
        self.gamma.is_some()
    }

    /// The arrival process.
    pub fn kind(&self) -> Arrivals {
        self.kind
    }
}

impl Iterator for Schedule {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let Some(g) = &self.gamma else {
            return Some(0);
        };
        let at = self.next_s;
        self.next_s += g.sample(&mut self.rng) * self.scale;
        // Saturates (never wraps): offsets stay non-decreasing whatever the rate.
        Some((at * 1e9).round().clamp(0.0, u64::MAX as f64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_is_all_at_zero() {
        let s = Schedule::new(Arrivals::Unlimited, 1);
        assert!(!s.is_paced());
        assert_eq!(s.take(3).collect::<Vec<_>>(), vec![0, 0, 0]);
    }

    #[test]
    fn poisson_mean_gap_matches_rate_and_is_deterministic() {
        let kind = Arrivals::Gamma {
            rate_rps: 100.0,
            burstiness: 1.0,
        };
        let a: Vec<u64> = Schedule::new(kind, 7).take(20_001).collect();
        let b: Vec<u64> = Schedule::new(kind, 7).take(20_001).collect();
        assert_eq!(a, b);
        assert_eq!(a[0], 0);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        // 20 000 gaps of mean 10 ms: total ≈ 200 s within 3 % (σ of the sum ≈ 0.7 %).
        let total_s = a[20_000] as f64 / 1e9;
        assert!((total_s - 200.0).abs() < 6.0, "{total_s}");
    }

    #[test]
    fn rescaled_schedule_offers_exactly_the_rate() {
        for (rate, b, seed, n) in [
            (1000.0, 1.0, 0u64, 500u64),
            (1000.0, 1.0, 1, 500),
            (10.0, 0.5, 7, 101),
            (3.0, 4.0, 2, 2),
        ] {
            let kind = Arrivals::Gamma {
                rate_rps: rate,
                burstiness: b,
            };
            let a: Vec<u64> = Schedule::with_count(kind, seed, n)
                .take(n as usize)
                .collect();
            assert_eq!(a[0], 0);
            assert!(a.windows(2).all(|w| w[0] <= w[1]));
            // last arrival at (n − 1) / rate s, to the nanosecond (one rounding)
            let want = ((n - 1) as f64 / rate * 1e9).round() as u64;
            assert!(
                a[n as usize - 1].abs_diff(want) <= 1,
                "{} vs {want}",
                a[n as usize - 1]
            );
            // the shape of the gaps is the un-rescaled one's
            let raw: Vec<u64> = Schedule::new(kind, seed).take(n as usize).collect();
            let k = a[n as usize - 1] as f64 / raw[n as usize - 1] as f64;
            for (x, y) in a.iter().zip(&raw) {
                assert!((*x as f64 - *y as f64 * k).abs() <= 2.0 + 1e-9 * *x as f64);
            }
        }
        // unlimited / one arrival: unchanged
        let s = Schedule::with_count(Arrivals::Unlimited, 0, 10);
        assert_eq!(s.take(2).collect::<Vec<_>>(), vec![0, 0]);
    }

    #[test]
    fn tiny_rates_saturate_instead_of_wrapping() {
        let kind = Arrivals::Gamma {
            rate_rps: 1e-12,
            burstiness: 1.0,
        };
        let a: Vec<u64> = Schedule::new(kind, 0).take(50).collect();
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "{a:?}");
        assert_eq!(a[49], u64::MAX);
    }

    #[test]
    fn burstiness_changes_dispersion_not_mean() {
        let gaps = |b: f64| -> (f64, f64) {
            let v: Vec<f64> = Schedule::new(
                Arrivals::Gamma {
                    rate_rps: 10.0,
                    burstiness: b,
                },
                3,
            )
            .take(20_001)
            .collect::<Vec<_>>()
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e9)
            .collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
            (mean, var.sqrt() / mean)
        };
        let (m1, cv1) = gaps(1.0);
        let (m4, cv4) = gaps(4.0);
        // Gamma(k): coefficient of variation 1/√k.
        assert!(
            (m1 - 0.1).abs() < 0.005 && (m4 - 0.1).abs() < 0.005,
            "{m1} {m4}"
        );
        assert!(
            (cv1 - 1.0).abs() < 0.05 && (cv4 - 0.5).abs() < 0.03,
            "{cv1} {cv4}"
        );
    }
}
