//! inferbench-web (see crates/web/README or DESIGN.md §2).
