//! Monotone cubic Hermite interpolation with Steffen tangents (d3 `curveMonotoneX`), as used by
//! InferenceX-app for TCO, history and comparisons at a target interactivity
//! (reference/inferencex-app.md §4.9). No extrapolation.

/// A monotone spline through knots with strictly increasing x.
#[derive(Debug, Clone, PartialEq)]
pub struct MonotoneSpline {
    xs: Vec<f64>,
    ys: Vec<f64>,
    tangents: Vec<f64>,
}

fn sign(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

impl MonotoneSpline {
    /// Builds the spline. Knots are sorted by x; of several knots with the same x the first (in
    /// input order) is kept. Non-finite knots are dropped. `None` when no knot remains.
    ///
    /// Tangents: secants s_k = Δy/Δx over widths h_k; interior
    /// m_k = (sign s_{k−1} + sign s_k) · min(|s_{k−1}|, |s_k|, ½|p_k|) with
    /// p_k = (s_{k−1}·h_k + s_k·h_{k−1}) / (h_{k−1} + h_k); ends m_0 = (3·s_0 − m_1)/2 and
    /// m_{n−1} = (3·s_{n−2} − m_{n−2})/2; two knots give the straight line.
    pub fn new(knots: &[(f64, f64)]) -> Option<Self> {
        let mut k: Vec<(usize, f64, f64)> = knots
            .iter()
            .enumerate()
            .filter(|(_, p)| p.0.is_finite() && p.1.is_finite())
            .map(|(i, p)| (i, p.0, p.1))
            .collect();
        k.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        k.dedup_by(|b, a| a.1 == b.1);
        if k.is_empty() {
            return None;
        }
        let xs: Vec<f64> = k.iter().map(|p| p.1).collect();
        let ys: Vec<f64> = k.iter().map(|p| p.2).collect();
        let n = xs.len();
        let mut m = vec![0.0; n];
        if n == 2 {
            let s = (ys[1] - ys[0]) / (xs[1] - xs[0]);
            m = vec![s, s];
        } else if n > 2 {
            let h: Vec<f64> = (0..n - 1).map(|i| xs[i + 1] - xs[i]).collect();
            let s: Vec<f64> = (0..n - 1).map(|i| (ys[i + 1] - ys[i]) / h[i]).collect();
            for i in 1..n - 1 {
                let p = (s[i - 1] * h[i] + s[i] * h[i - 1]) / (h[i - 1] + h[i]);
                m[i] = (sign(s[i - 1]) + sign(s[i]))
                    * s[i - 1].abs().min(s[i].abs()).min(0.5 * p.abs());
            }
            m[0] = (3.0 * s[0] - m[1]) / 2.0;
            m[n - 1] = (3.0 * s[n - 2] - m[n - 2]) / 2.0;
        }
        Some(Self {
            xs,
            ys,
            tangents: m,
        })
    }

    /// The value at `x`; `None` outside [first x, last x] (no extrapolation). A single-knot
    /// spline answers only its exact x.
    pub fn eval(&self, x: f64) -> Option<f64> {
        let n = self.xs.len();
        if !x.is_finite() || x < self.xs[0] || x > self.xs[n - 1] {
            return None;
        }
        if n == 1 {
            return Some(self.ys[0]);
        }
        let i = self.xs.partition_point(|&v| v <= x).clamp(1, n - 1) - 1;
        let h = self.xs[i + 1] - self.xs[i];
        let t = (x - self.xs[i]) / h;
        let (t2, t3) = (t * t, t * t * t);
        let h00 = 2.0 * t3 - 3.0 * t2 + 1.0;
        let h10 = t3 - 2.0 * t2 + t;
        let h01 = -2.0 * t3 + 3.0 * t2;
        let h11 = t3 - t2;
        Some(
            h00 * self.ys[i]
                + h10 * h * self.tangents[i]
                + h01 * self.ys[i + 1]
                + h11 * h * self.tangents[i + 1],
        )
    }
}

/// Interpolates `y` at `x` over frontier knots, clamped at ≥ 0 (InferenceX rule); `None` outside
/// the knots' x-range.
pub fn interpolate_at(knots: &[(f64, f64)], x: f64) -> Option<f64> {
    MonotoneSpline::new(knots)?.eval(x).map(|v| v.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_steffen_values() {
        // Knots (1,1), (2,3), (3,4): s = 2, 1; p = 1.5; m1 = 2·min(2, 1, 0.75) = 1.5;
        // m0 = (6 − 1.5)/2 = 2.25; m2 = (3 − 1.5)/2 = 0.75.
        // At x = 1.5 (t = ½): ½·1 + ⅛·2.25 + ½·3 − ⅛·1.5 = 2.09375.
        let s = MonotoneSpline::new(&[(2.0, 3.0), (1.0, 1.0), (3.0, 4.0)]).unwrap();
        assert_eq!(s.tangents, vec![2.25, 1.5, 0.75]);
        assert_eq!(s.eval(1.5), Some(2.09375));
        // At x = 2.5: ½·3 + ⅛·1.5 + ½·4 − ⅛·0.75 = 3.59375.
        assert_eq!(s.eval(2.5), Some(3.59375));
        assert_eq!(s.eval(2.0), Some(3.0));
        assert_eq!(s.eval(3.0), Some(4.0));
    }

    #[test]
    fn no_extrapolation_and_degenerate_cases() {
        let s = MonotoneSpline::new(&[(1.0, 1.0), (3.0, 5.0)]).unwrap();
        assert_eq!(s.eval(2.0), Some(3.0)); // two knots: straight line
        assert_eq!(s.eval(0.999), None);
        assert_eq!(s.eval(3.001), None);
        let one = MonotoneSpline::new(&[(2.0, 7.0)]).unwrap();
        assert_eq!(one.eval(2.0), Some(7.0));
        assert_eq!(one.eval(2.1), None);
        assert_eq!(MonotoneSpline::new(&[]), None);
    }

    #[test]
    fn monotone_on_a_flat_step() {
        // A plateau must not overshoot: values stay within [0, 1] everywhere.
        let k = [(0.0, 0.0), (1.0, 0.0), (2.0, 1.0), (3.0, 1.0)];
        let s = MonotoneSpline::new(&k).unwrap();
        for i in 0..=300 {
            let v = s.eval(f64::from(i) / 100.0).unwrap();
            assert!((0.0..=1.0).contains(&v), "{v}");
        }
        assert_eq!(interpolate_at(&[(1.0, -1.0), (2.0, -2.0)], 1.5), Some(0.0));
    }
}
