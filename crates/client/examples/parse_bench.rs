//! SSE framing + chunk interpretation alone (no I/O): the loop of
//! `inferbench selftest`'s parse figure, for instruction-count A/B runs
//! (`valgrind --tool=callgrind target/release/examples/parse_bench 100000`).
//! Prints ns per token event (wall; use CPU-isolated runs or callgrind for comparisons).

use inferbench_client::openai::Interpreter;
use inferbench_client::sse::SseParser;
use inferbench_core::RequestRecord;

fn main() {
    let min_events: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let events = 256u32;
    const WORDS: [&str; 4] = [" the", " of", " and", " to"];
    let mut body = Vec::new();
    for i in 0..events {
        body.extend_from_slice(
            format!(
                "data: {{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"selftest\",\"choices\":[{{\"index\":0,\"text\":\"{}\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}}]}}\n\n",
                WORDS[i as usize % 4]
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":2,\"completion_tokens\":{events}}}}}\n\ndata: [DONE]\n\n").as_bytes(),
    );
    let rounds = (min_events / u64::from(events)).max(1);
    let t0 = std::time::Instant::now();
    let mut total = 0u64;
    for _ in 0..rounds {
        let mut p = SseParser::new();
        let mut it = Interpreter::new();
        let mut rec = RequestRecord::default();
        for piece in body.chunks(16 * 1024) {
            let _ = p.feed(piece, |ev| it.on_event(ev, 1, &mut rec));
        }
        let _ = p.finish(|ev| it.on_event(ev, 1, &mut rec));
        total += rec.chunks.len() as u64;
    }
    let ns = t0.elapsed().as_nanos() as f64 / total.max(1) as f64;
    println!("{total} token events, {ns:.0} ns/event");
}
