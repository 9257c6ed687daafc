//! Pareto frontiers ("rooflines") and AgentX North-Star gating
//! (reference/inferencex-app.md §4.6, §4.8).

/// Whether larger or smaller values of an axis are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Larger is better (throughput, interactivity, tok/s/MW).
    Higher,
    /// Smaller is better (latency, cost, J/token).
    Lower,
}

/// The chart's preference on each axis. InferenceX's four named directions map as:
/// `upper_left` = (Higher, Higher) (throughput vs interactivity), `upper_right` = (Lower, Higher)
/// (throughput vs E2E latency), `lower_left` = (Lower, Lower) (cost vs latency),
/// `lower_right` = (Higher, Lower) (cost vs interactivity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Goal {
    /// Preference on x.
    pub x: Better,
    /// Preference on y.
    pub y: Better,
}

fn oriented(v: f64, b: Better) -> f64 {
    match b {
        Better::Higher => v,
        Better::Lower => -v,
    }
}

/// Indices of the non-dominated points, sorted by x ascending (ties by index). A point is
/// dominated when another is at least as good on both axes and strictly better on one;
/// identical points are all kept (InferenceX flags every copy `roof`). Points with a
/// non-finite coordinate or a non-positive x are not eligible (InferenceX-app [B]).
pub fn pareto_frontier(points: &[(f64, f64)], goal: Goal) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let (x, y) = points[i];
            x.is_finite() && y.is_finite() && x > 0.0
        })
        .collect();
    // Best x first; among equal x, best y first.
    idx.sort_by(|&a, &b| {
        let (xa, ya) = (oriented(points[a].0, goal.x), oriented(points[a].1, goal.y));
        let (xb, yb) = (oriented(points[b].0, goal.x), oriented(points[b].1, goal.y));
        xb.total_cmp(&xa).then(yb.total_cmp(&ya)).then(a.cmp(&b))
    });
    let mut keep = Vec::new();
    let mut best_y = f64::NEG_INFINITY;
    let mut last: Option<(f64, f64)> = None;
    for i in idx {
        let (x, y) = (oriented(points[i].0, goal.x), oriented(points[i].1, goal.y));
        if y > best_y || last == Some((x, y)) {
            keep.push(i);
            best_y = best_y.max(y);
            last = Some((x, y));
        }
    }
    keep.sort_by(|&a, &b| points[a].0.total_cmp(&points[b].0).then(a.cmp(&b)));
    keep
}

/// AgentX "North-Star" gating (InferenceX-app [C] `canonicalFrontier.ts`): the canonical winners
/// are the Pareto frontier in (E2E-normalized interactivity ↑, y) space over points with a
/// positive finite normalized value; a view in other x coordinates keeps only the points that
/// are on its own frontier (computed over **all** eligible points) **and** canonical winners —
/// the intersection, not a frontier of winners. `points` are `(view_x, y, e2e_norm_intvty)`;
/// returns indices sorted by view x. An empty canonical set gives an empty result.
pub fn north_star_frontier(points: &[(f64, f64, f64)], view: Goal) -> Vec<usize> {
    let canon_pts: Vec<(f64, f64)> = points.iter().map(|p| (p.2, p.1)).collect();
    let canon = pareto_frontier(
        &canon_pts,
        Goal {
            x: Better::Higher,
            y: view.y,
        },
    );
    let view_pts: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
    pareto_frontier(&view_pts, view)
        .into_iter()
        .filter(|i| canon.contains(i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const UL: Goal = Goal {
        x: Better::Higher,
        y: Better::Higher,
    };

    #[test]
    fn frontier_throughput_vs_interactivity() {
        // (interactivity, tok/s/GPU)
        let p = [
            (10.0, 1000.0),
            (20.0, 800.0),
            (15.0, 700.0),
            (40.0, 300.0),
            (40.0, 200.0),
            (5.0, 900.0),
        ];
        // (15,700) is dominated by (20,800); (40,200) by (40,300); (5,900) by (10,1000).
        assert_eq!(pareto_frontier(&p, UL), vec![0, 1, 3]);
    }

    #[test]
    fn each_direction() {
        let p = [(1.0, 1.0), (2.0, 2.0), (3.0, 1.5)];
        assert_eq!(
            pareto_frontier(
                &p,
                Goal {
                    x: Better::Higher,
                    y: Better::Higher
                }
            ),
            vec![1, 2]
        );
        assert_eq!(
            pareto_frontier(
                &p,
                Goal {
                    x: Better::Lower,
                    y: Better::Higher
                }
            ),
            vec![0, 1]
        );
        assert_eq!(
            pareto_frontier(
                &p,
                Goal {
                    x: Better::Lower,
                    y: Better::Lower
                }
            ),
            vec![0]
        );
        assert_eq!(
            pareto_frontier(
                &p,
                Goal {
                    x: Better::Higher,
                    y: Better::Lower
                }
            ),
            vec![0, 2]
        );
    }

    #[test]
    fn ineligible_and_duplicates() {
        let p = [
            (0.0, 5000.0),
            (f64::NAN, 1.0),
            (2.0, 2.0),
            (2.0, 2.0),
            (1.0, 1.0),
        ];
        assert_eq!(pareto_frontier(&p, UL), vec![2, 3]);
    }

    #[test]
    fn north_star_is_an_intersection() {
        // (interactivity, tok/s/GPU, e2e-norm interactivity). Point 1 wins on interactivity but
        // its tail is bad (low e2e-norm): not a canonical winner, so it is gated out; point 2 is
        // a canonical winner but not on the interactivity frontier, so it stays out too.
        let p = [
            (10.0, 1000.0, 9.0),
            (30.0, 600.0, 2.0),
            (20.0, 500.0, 12.0),
            (25.0, 700.0, 20.0),
        ];
        assert_eq!(pareto_frontier(&p.map(|q| (q.0, q.1)), UL), vec![0, 3, 1]);
        assert_eq!(north_star_frontier(&p, UL), vec![0, 3]);
    }
}
