//! Every handed case of `shared/cases/sse/` re-split at every byte boundary (and byte by byte)
//! through the pure SSE parser and chunk interpreter: the same output text, token chunks and
//! conclusion as the unsplit body.

use inferbench_client::openai::Interpreter;
use inferbench_client::sse::SseParser;
use inferbench_core::RequestRecord;
use inferbench_testutil::replay::{load_handed_cases, ReplayCase};

/// Bodies up to this size are re-split at every byte boundary.
const SPLIT_EVERY_BYTE_MAX: usize = 64 << 10;

/// Every case's body re-split into two pieces at every byte boundary (and into single bytes)
/// gives the same output text, token chunks, conclusion and completeness (a terminal signal
/// seen or not) as the unsplit body.
#[test]
fn handed_cases_any_split_same_result() {
    for (name, case) in load_handed_cases() {
        let body = ReplayCase::from_json(&case).unwrap().body_bytes();
        let parse = |pieces: &[&[u8]]| {
            let mut p = SseParser::new();
            let mut it = Interpreter::new();
            let mut rec = RequestRecord::default();
            for (i, piece) in pieces.iter().enumerate() {
                p.feed(piece, |ev| it.on_event(ev, i as u64, &mut rec))
                    .unwrap();
            }
            p.finish(|ev| it.on_event(ev, 0, &mut rec)).unwrap();
            let failure = it.failure.clone().map(|f| f.0);
            let complete = it.complete();
            it.finish(&mut rec, None);
            (
                rec.output_text,
                rec.chunks.len(),
                rec.completion_tokens,
                failure,
                complete,
            )
        };
        let whole = parse(&[&body]);
        // Every byte boundary for the small cases; for big bodies (the 1 MB degenerate one)
        // every boundary near an event start or end plus 512 spread evenly, so the test stays
        // linear in the body size.
        let splits: Vec<usize> = if body.len() <= SPLIT_EVERY_BYTE_MAX {
            (0..=body.len()).collect()
        } else {
            let mut v: Vec<usize> = (0..=512).map(|k| k * body.len() / 512).collect();
            for (i, w) in body.windows(2).enumerate() {
                if w == b"\n\n" {
                    v.extend(i.saturating_sub(8)..(i + 10).min(body.len()));
                }
            }
            v.sort_unstable();
            v.dedup();
            v
        };
        for i in splits {
            assert_eq!(
                parse(&[&body[..i], &body[i..]]),
                whole,
                "{name}: split at {i}"
            );
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(parse(&bytes), whole, "{name}: byte by byte");
    }
}
