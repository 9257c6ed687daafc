//! inferbench-client (see crates/client/README or DESIGN.md §2).
