//! Arrival processes: absolute send deadlines from one start instant (peers.md §5.1).
//!
//! Deadlines are offsets in ns from the profile start, computed by summing inter-arrival gaps
//! in f64 seconds and rounding once per arrival, so errors never accumulate (the per-hop sleep
//! drift of vLLM/tcpreplay is impossible by construction).

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
            // Arrivals get their own stream, independent of the prompt RNG using the same seed.
            rng: StdRng::seed_from_u64(seed ^ 0x6172_7269_7661_6c73),
            next_s: 0.0,
        }
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
        self.next_s += g.sample(&mut self.rng);
        Some((at * 1e9).round().min(u64::MAX as f64) as u64)
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
