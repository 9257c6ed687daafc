//! Exact statistics of a sample of integers (ns) too large to keep in memory: count, sum and
//! sum of squares while the values stream past ([`Moments`]), then exact order statistics by
//! radix selection over re-reads of the sample ([`order_stats`]: 16 bits of the value per
//! pass, at most four passes). DESIGN.md §4 asks for percentiles over raw ns values, never
//! approximations; this is how a run of a million requests × 256 tokens gets them for ITL
//! without holding 256M gaps (issue 14).
//!
//! Pure: the caller supplies the passes (a closure that feeds every value once, from a file or
//! memory), so the algorithm is tested against [`crate::metrics::Distribution::of`] on samples
//! that fit in memory.

use crate::metrics::{percentile_index, Distribution};

const NS_PER_MS: f64 = 1_000_000.0;

/// Running count, sum, sum of squares, min and max of a sample of ns values. Sums are exact
/// integers (u128); `overflowed` marks a sum of squares beyond u128 (not reachable for ITL
/// values under 2^48 ns and fewer than 2^32 of them), when the variance comes from a
/// running f64 estimate instead.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Moments {
    /// Values seen.
    pub n: u64,
    /// Σ x (ns).
    pub sum: u128,
    /// Σ x² (ns²), exact unless `overflowed`.
    pub sumsq: u128,
    /// Σ x² no longer fits in u128.
    pub overflowed: bool,
    /// Smallest value (ns); 0 when empty.
    pub min: u64,
    /// Largest value (ns); 0 when empty.
    pub max: u64,
    /// Welford's running mean and M2 (ns, ns²), the fallback for `overflowed`.
    welford: (f64, f64),
}

impl Moments {
    /// Adds one value (ns).
    pub fn push(&mut self, v: u64) {
        if self.n == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
        self.sum += u128::from(v);
        match self.sumsq.checked_add(u128::from(v) * u128::from(v)) {
            Some(s) if !self.overflowed => self.sumsq = s,
            _ => self.overflowed = true,
        }
        let x = v as f64;
        let d = x - self.welford.0;
        self.welford.0 += d / self.n as f64;
        self.welford.1 += d * (x - self.welford.0);
    }

    /// Mean in ms; 0 when empty.
    pub fn mean_ms(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        self.sum as f64 / self.n as f64 / NS_PER_MS
    }

    /// Population standard deviation in ms (NumPy `np.std`, ddof = 0); 0 when empty. From the
    /// exact integer variance `(n·Σx² − (Σx)²) / n²` when it fits in u128.
    pub fn std_ms(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let n = u128::from(self.n);
        let exact = (!self.overflowed)
            .then(|| {
                let a = n.checked_mul(self.sumsq)?;
                let b = self.sum.checked_mul(self.sum)?;
                Some(a.saturating_sub(b) as f64 / (n as f64 * n as f64))
            })
            .flatten();
        let var = exact.unwrap_or(self.welford.1 / self.n as f64);
        (var.max(0.0) / (NS_PER_MS * NS_PER_MS)).sqrt()
    }
}

/// The values at 0-based ascending `ranks` (each `< n`, the sample's size) of a sample whose
/// largest value is `max`, by radix selection: each call of `pass` must feed every value of
/// the sample once, in any order. Makes ⌈bits(max) / 16⌉ passes (at most 4); memory is one
/// 65,536-bucket histogram (512 KiB) per distinct rank prefix still being resolved. Errors are
/// `pass`'s own. Ranks at or beyond the sample's size give `max`.
pub fn order_stats<E>(
    ranks: &[u64],
    max: u64,
    mut pass: impl FnMut(&mut dyn FnMut(u64)) -> Result<(), E>,
) -> Result<Vec<u64>, E> {
    const DIGIT: u32 = 16;
    const BUCKETS: usize = 1 << DIGIT;
    let bits = 64 - max.leading_zeros();
    let digits = bits.div_ceil(DIGIT).max(1);
    // Per rank: the value's bits resolved so far (above `shift`) and its rank among the
    // values that share them.
    let mut state: Vec<(u64, u64)> = ranks.iter().map(|&r| (0, r)).collect();
    for level in (0..digits).rev() {
        let shift = level * DIGIT;
        let mut prefixes: Vec<u64> = state.iter().map(|s| s.0).collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let mut hists = vec![vec![0u64; BUCKETS]; prefixes.len()];
        let above = shift + DIGIT;
        pass(&mut |v: u64| {
            let p = v.checked_shr(above).unwrap_or(0);
            if let Ok(i) = prefixes.binary_search(&p) {
                hists[i][((v >> shift) as usize) & (BUCKETS - 1)] += 1;
            }
        })?;
        for s in &mut state {
            let Ok(i) = prefixes.binary_search(&s.0) else {
                continue;
            };
            let mut before = 0u64;
            let mut digit = BUCKETS as u64 - 1;
            for (d, &c) in hists[i].iter().enumerate() {
                if before + c > s.1 {
                    digit = d as u64;
                    break;
                }
                before += c;
            }
            *s = ((s.0 << DIGIT) | digit, s.1.saturating_sub(before));
        }
    }
    Ok(state.into_iter().map(|(v, _)| v.min(max)).collect())
}

/// The [`Distribution`] in ms of a sample of ns values given its [`Moments`] and a way to
/// re-read it (`pass`, as for [`order_stats`]): count, mean, std, min and max from the
/// moments, median and the percentiles `qs` exact (NumPy's linear interpolation between the two
/// order statistics around each, as [`crate::metrics::percentile_sorted`]). An empty sample
/// gives zeros. Mean and std may differ from `Distribution::of` over the same values in the last
/// bits only: these come from exact integer sums, those from f64 sums.
pub fn distribution_ms<E>(
    m: &Moments,
    qs: &[f64],
    pass: impl FnMut(&mut dyn FnMut(u64)) -> Result<(), E>,
) -> Result<Distribution, E> {
    if m.n == 0 {
        return Ok(Distribution::of(&[], qs));
    }
    let n = usize::try_from(m.n).unwrap_or(usize::MAX);
    let wanted: Vec<f64> = std::iter::once(50.0).chain(qs.iter().copied()).collect();
    let idx: Vec<Option<(usize, usize, f64)>> =
        wanted.iter().map(|&q| percentile_index(n, q)).collect();
    let mut ranks: Vec<u64> = idx
        .iter()
        .flatten()
        .flat_map(|&(i, j, _)| [i as u64, j as u64])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    let values = order_stats(&ranks, m.max, pass)?;
    let at = |r: usize| {
        let k = ranks.binary_search(&(r as u64)).unwrap_or(0);
        values[k] as f64 / NS_PER_MS
    };
    let pct: Vec<f64> = idx
        .iter()
        .map(|ix| ix.map_or(0.0, |(i, j, t)| crate::metrics::lerp(at(i), at(j), t)))
        .collect();
    Ok(Distribution {
        count: n,
        mean: m.mean_ms(),
        median: pct[0],
        std: m.std_ms(),
        min: m.min as f64 / NS_PER_MS,
        max: m.max as f64 / NS_PER_MS,
        percentiles: qs.iter().copied().zip(pct[1..].iter().copied()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(v: &[u64]) -> impl FnMut(&mut dyn FnMut(u64)) -> Result<(), ()> + '_ {
        move |f: &mut dyn FnMut(u64)| {
            v.iter().for_each(|&x| f(x));
            Ok(())
        }
    }

    /// A sample with ties, zeros and values spanning every 16-bit digit.
    fn sample() -> Vec<u64> {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut v: Vec<u64> = (0..5000)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                match i % 5 {
                    0 => 1_000_000,        // a tie shared by a fifth of the sample
                    1 => s % 1_000,        // small
                    2 => s % (1u64 << 40), // ITL-sized
                    3 => 0,
                    _ => s >> 1, // near the top of u64
                }
            })
            .collect();
        v.push(u64::MAX);
        v
    }

    #[test]
    fn order_statistics_equal_a_sort() {
        let v = sample();
        let mut sorted = v.clone();
        sorted.sort_unstable();
        let ranks: Vec<u64> = vec![0, 1, 999, 1000, 2500, 4999, 5000];
        let got = order_stats(&ranks, *sorted.last().unwrap(), passes(&v)).unwrap();
        let want: Vec<u64> = ranks.iter().map(|&r| sorted[r as usize]).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn passes_follow_the_largest_value() {
        let v: Vec<u64> = (0..1000u64).map(|i| i * 7).collect();
        let mut calls = 0;
        let got = order_stats(&[0, 500, 999], 6993, |f: &mut dyn FnMut(u64)| {
            calls += 1;
            v.iter().for_each(|&x| f(x));
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(got, vec![0, 3500, 6993]);
        assert_eq!(calls, 1, "values under 2^16 need one pass");
    }

    /// The exact path gives what `Distribution::of` gives over the same values in ms: percentiles
    /// bit for bit, mean and std to the last bits.
    #[test]
    fn distribution_equals_the_in_memory_one() {
        let v: Vec<u64> = sample().into_iter().map(|x| x % (1u64 << 36)).collect();
        let mut m = Moments::default();
        v.iter().for_each(|&x| m.push(x));
        let qs = [25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0, 0.0];
        let got = distribution_ms(&m, &qs, passes(&v)).unwrap();
        let ms: Vec<f64> = v.iter().map(|&x| x as f64 / NS_PER_MS).collect();
        let want = Distribution::of(&ms, &qs);
        assert_eq!(got.count, want.count);
        assert_eq!(got.median, want.median);
        assert_eq!(got.percentiles, want.percentiles);
        assert_eq!((got.min, got.max), (want.min, want.max));
        assert!(
            (got.mean - want.mean).abs() <= want.mean * 1e-12,
            "{got:?} {want:?}"
        );
        assert!(
            (got.std - want.std).abs() <= want.std * 1e-9,
            "{got:?} {want:?}"
        );
    }

    #[test]
    fn known_small_sample() {
        // 1, 2, 3, 4 ms: mean 2.5, population std √1.25, p50 2.5, p90 3.7.
        let v = [4_000_000u64, 1_000_000, 3_000_000, 2_000_000];
        let mut m = Moments::default();
        v.iter().for_each(|&x| m.push(x));
        let d = distribution_ms(&m, &[90.0], passes(&v)).unwrap();
        assert_eq!(d.count, 4);
        assert_eq!(d.mean, 2.5);
        assert_eq!(d.std, 1.25f64.sqrt());
        assert_eq!(d.median, 2.5);
        assert_eq!(d.percentiles, vec![(90.0, 3.7)]);
        assert_eq!((d.min, d.max), (1.0, 4.0));
        let empty = distribution_ms(&Moments::default(), &[90.0], passes(&[])).unwrap();
        assert_eq!(empty, Distribution::of(&[], &[90.0]));
    }
}
