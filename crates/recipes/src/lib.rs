//! inferbench-recipes (see crates/recipes/README or DESIGN.md §2).
