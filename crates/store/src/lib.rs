//! inferbench-store (see crates/store/README or DESIGN.md §2).
