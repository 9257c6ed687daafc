//! Metric math over [`crate::RequestRecord`]s: percentiles, TTFT/TPOT/ITL/E2EL statistics,
//! throughput, goodput, interactivity (DESIGN.md §4). Owned by the metrics work of issue #2.
