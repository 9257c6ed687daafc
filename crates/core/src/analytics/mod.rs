//! Analytics over stored points: per-GPU throughput, cost ($/M tokens), power (tok/s/MW,
//! J/token), Pareto frontiers, North-Star gating, monotone-spline interpolation, comparisons and
//! history (DESIGN.md §4, issue #5). Pure functions: no I/O.
//!
//! Units: throughput in tok/s (per GPU where named), latency in seconds, interactivity in
//! tok/s/user, power in kW per GPU (all-in, provisioned) or W (measured), cost in $/GPU-hour.

pub mod cost;
pub mod pareto;
pub mod spline;
pub mod stats;

pub use cost::*;
pub use pareto::*;
pub use spline::*;
pub use stats::*;
