//! inferbench-loadgen (see crates/loadgen/README or DESIGN.md §2).
