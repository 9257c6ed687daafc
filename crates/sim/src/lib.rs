//! inferbench-sim (see crates/sim/README or DESIGN.md §2).
