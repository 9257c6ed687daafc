//! SSE framing + chunk interpretation alone (no I/O): `inferbench selftest`'s parse figure
//! (`inferbench_loadgen::selftest::parse_ns_per_event`, 256-token completions streams in 16 KiB
//! pieces) as its own program, for instruction-count A/B runs:
//! `valgrind --tool=callgrind target/release/examples/parse_bench 200000`.
//! Argument: at least this many token events (default 2,000,000). Prints CPU ns per event.

fn main() {
    let min_events: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let ns = inferbench_loadgen::selftest::parse_ns_per_event(256, min_events);
    println!("{min_events}+ token events, {ns:.0} CPU ns/event");
}
