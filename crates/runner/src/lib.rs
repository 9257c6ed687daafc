//! inferbench-runner (see crates/runner/README or DESIGN.md §2).
