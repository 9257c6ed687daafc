//! Pareto charts (stub; filled in below).
