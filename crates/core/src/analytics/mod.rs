//! Analytics over stored points: per-GPU throughput, cost ($/M tokens), power (tok/s/MW,
//! J/token), Pareto frontiers, interpolation, comparisons (DESIGN.md §4, issue #5).
