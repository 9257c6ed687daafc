//! inferbench-workload (see crates/workload/README or DESIGN.md §2).
