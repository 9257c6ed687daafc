//! Percentiles, energy integration, comparisons with confidence intervals, history flags.

/// Percentile of sorted values: the one NumPy-linear definition lives in
/// [`crate::metrics::percentile_sorted`] (DESIGN.md §4); re-exported here for analytics callers.
pub use crate::metrics::percentile_sorted;

/// Energy in joules of one GPU's power series `(unix s, W)` (sorted by time) over `[t0, t1]`:
/// trapezoid over the samples clipped to the window, with linearly interpolated boundary points
/// (InferenceX `aggregate_power.py`, reference/inferencex-producer.md §7.3). `None` when the
/// samples do not bracket the window (first > t0 or last < t1) or there are fewer than two.
pub fn energy_joules(samples: &[(f64, f64)], t0: f64, t1: f64) -> Option<f64> {
    if samples.len() < 2 || t1 < t0 {
        return None;
    }
    let (first, last) = (samples[0].0, samples[samples.len() - 1].0);
    if first > t0 || last < t1 {
        return None;
    }
    let at = |t: f64| -> f64 {
        let i = samples.partition_point(|s| s.0 < t);
        // A sample at the boundary (within 1 ns, as InferenceX) gives its own reading.
        if i < samples.len() && (samples[i].0 - t).abs() <= 1e-9 {
            return samples[i].1;
        }
        if i == 0 {
            return samples[0].1;
        }
        if i >= samples.len() {
            return samples[samples.len() - 1].1;
        }
        let (a, b) = (samples[i - 1], samples[i]);
        if b.0 == a.0 {
            return b.1;
        }
        a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0)
    };
    let mut pts = vec![(t0, at(t0))];
    pts.extend(samples.iter().copied().filter(|s| s.0 > t0 && s.0 < t1));
    pts.push((t1, at(t1)));
    Some(
        pts.windows(2)
            .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
            .sum(),
    )
}

/// Two-sided 95 % Student-t quantile t_{0.975, df} (standard table values; df ≥ 31 uses the
/// normal 1.96, within 3 % of the exact value for df > 30).
pub fn t975(df: f64) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df < 1.0 {
        return f64::INFINITY;
    }
    let i = df.floor() as usize;
    if i <= 30 {
        T[i - 1]
    } else {
        1.96
    }
}

/// Mean and sample variance (n − 1); `None` for an empty slice (variance 0 for one value).
pub fn mean_var(x: &[f64]) -> Option<(f64, f64)> {
    if x.is_empty() {
        return None;
    }
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = if x.len() > 1 {
        x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some((m, v))
}

/// Ratio of two configs' metric at matched interactivity.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// Mean of A's repeats, in the metric's unit.
    pub mean_a: f64,
    /// Mean of B's repeats, in the metric's unit.
    pub mean_b: f64,
    /// mean_a / mean_b.
    pub ratio: f64,
    /// 95 % confidence interval of the ratio when both sides have ≥ 2 repeats: delta method on
    /// log(ratio), se² = s_a²/(n_a·m_a²) + s_b²/(n_b·m_b²), Welch–Satterthwaite degrees of
    /// freedom, interval ratio·exp(±t_{0.975,df}·se). `None` otherwise.
    pub ci95: Option<(f64, f64)>,
    /// Repeats on A's side.
    pub n_a: usize,
    /// Repeats on B's side.
    pub n_b: usize,
}

/// Compares repeated measurements `a` and `b` (one value per repeat, e.g. tok/s/GPU of each run
/// interpolated at the same interactivity). `None` if either side is empty or B's mean is 0.
pub fn compare_ratio(a: &[f64], b: &[f64]) -> Option<Ratio> {
    let (ma, va) = mean_var(a)?;
    let (mb, vb) = mean_var(b)?;
    if mb == 0.0 {
        return None;
    }
    let ratio = ma / mb;
    let ci95 = if a.len() >= 2 && b.len() >= 2 && ma > 0.0 && mb > 0.0 {
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let ga = va / (na * ma * ma);
        let gb = vb / (nb * mb * mb);
        let se = (ga + gb).sqrt();
        if se == 0.0 {
            Some((ratio, ratio))
        } else {
            let df = (ga + gb).powi(2) / (ga * ga / (na - 1.0) + gb * gb / (nb - 1.0));
            let t = t975(df);
            Some((ratio * (-t * se).exp(), ratio * (t * se).exp()))
        }
    } else {
        None
    };
    Some(Ratio {
        mean_a: ma,
        mean_b: mb,
        ratio,
        ci95,
        n_a: a.len(),
        n_b: b.len(),
    })
}

/// One entry of a config's history at fixed interactivity.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HistoryPoint {
    /// Date (`YYYY-MM-DD`) of the run.
    pub date: String,
    /// Metric value at the target interactivity.
    pub value: f64,
    /// Median of the up-to-`window` previous values (the baseline), when there is one.
    pub baseline: Option<f64>,
    /// value / baseline − 1.
    pub change: Option<f64>,
    /// True when the value is worse than the baseline by more than the threshold.
    pub regression: bool,
    /// The batch (sweep directory, quickstart run) the value comes from, so entries of one
    /// date read apart; empty when the caller names none.
    pub batch: String,
    /// Unix time (s) the batch's latest run started, when its sources give it (`None` for
    /// imports without one): places batches of one day on a time axis.
    pub time_unix: Option<f64>,
}

/// Flags regressions in a dated series (sorted by date): each value is compared with the median
/// of the previous `window` values; with `higher_is_better`, a drop below
/// `baseline × (1 − threshold)` is a regression (a rise above `baseline × (1 + threshold)` when
/// lower is better). `threshold` is a fraction (0.05 = 5 %).
pub fn history_flags(
    series: &[(String, f64)],
    window: usize,
    threshold: f64,
    higher_is_better: bool,
) -> Vec<HistoryPoint> {
    let mut out = Vec::with_capacity(series.len());
    for (i, (date, v)) in series.iter().enumerate() {
        let lo = i.saturating_sub(window.max(1));
        let mut prev: Vec<f64> = series[lo..i].iter().map(|s| s.1).collect();
        prev.sort_by(f64::total_cmp);
        let baseline = percentile_sorted(&prev, 50.0);
        let change = baseline.filter(|b| *b != 0.0).map(|b| v / b - 1.0);
        let regression = change.is_some_and(|c| {
            if higher_is_better {
                c < -threshold
            } else {
                c > threshold
            }
        });
        out.push(HistoryPoint {
            date: date.clone(),
            value: *v,
            baseline,
            change,
            regression,
            batch: String::new(),
            time_unix: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_linear_percentiles() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&x, 50.0), Some(2.5));
        let p90 = percentile_sorted(&x, 90.0).unwrap();
        assert!((p90 - 3.7).abs() < 1e-12, "{p90}"); // numpy: 3.7 (rank 2.7 between 3 and 4)
        assert_eq!(percentile_sorted(&x, 0.0), Some(1.0));
        assert_eq!(percentile_sorted(&x, 100.0), Some(4.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
    }

    #[test]
    fn trapezoid_energy_with_boundary_interpolation() {
        // 100 W at t=0, 200 W at t=10: window [2, 8] → boundary 120 W and 180 W, 6 s × 150 W.
        let s = [(0.0, 100.0), (10.0, 200.0)];
        assert_eq!(energy_joules(&s, 2.0, 8.0), Some(900.0));
        // Three samples, whole window: (100+200)/2·10 + (200+200)/2·5 = 1500 + 1000.
        let s = [(0.0, 100.0), (10.0, 200.0), (15.0, 200.0)];
        assert_eq!(energy_joules(&s, 0.0, 15.0), Some(2500.0));
        // Not bracketed.
        assert_eq!(energy_joules(&s, -1.0, 15.0), None);
    }

    #[test]
    fn ratio_with_ci() {
        // A = [110, 90] (mean 100, s² 200), B = [50, 50] (mean 50, s² 0).
        let r = compare_ratio(&[110.0, 90.0], &[50.0, 50.0]).unwrap();
        assert_eq!(r.ratio, 2.0);
        // se = sqrt(200 / (2·100²)) = 0.1; df = 1 → t = 12.706.
        let (lo, hi) = r.ci95.unwrap();
        assert!((lo - 2.0 * (-1.2706f64).exp()).abs() < 1e-12);
        assert!((hi - 2.0 * (1.2706f64).exp()).abs() < 1e-12);
        // No repeats → no interval.
        let r = compare_ratio(&[120.0], &[100.0]).unwrap();
        assert_eq!((r.ratio, r.ci95), (1.2, None));
    }

    #[test]
    fn regression_flag() {
        let s: Vec<(String, f64)> = [100.0, 102.0, 98.0, 90.0, 101.0]
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("2026-01-0{}", i + 1), *v))
            .collect();
        let h = history_flags(&s, 3, 0.05, true);
        assert_eq!(h[0].baseline, None);
        assert!(!h[2].regression);
        // baseline = median(100, 102, 98) = 100; 90 is −10 % → regression.
        assert_eq!(h[3].baseline, Some(100.0));
        assert!(h[3].regression);
        // baseline = median(102, 98, 90) = 98; 101 is fine.
        assert!(!h[4].regression);
    }
}
