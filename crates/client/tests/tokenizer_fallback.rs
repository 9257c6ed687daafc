//! The tokenizer fallback (no `usage` from the server) with the real embedded tokenizer
//! (tiktoken `o200k_base`): bounded in time (linear in the text), never panicking, exact on
//! ordinary text, and run where it delays no other request's timestamps.

mod common;

use common::hi;
use std::sync::Arc;
use std::time::{Duration, Instant};

use inferbench_client::{
    count_tokens, CancellationToken, Client, ClientConfig, RequestInput, RequestMeta, TokenCounter,
};
use inferbench_core::TokenSource;
use inferbench_testutil::replay::{spawn_replay, ReplayCase, ReplayEnd};
use inferbench_workload::Tokenizer;

fn o200k() -> (Tokenizer, Arc<TokenCounter>) {
    let tok = Tokenizer::load("o200k_base").unwrap();
    let t2 = tok.clone();
    (tok, Arc::new(move |s: &str| t2.count(s)))
}

/// Ordinary text: the piecewise count equals the count of the whole text, exactly.
#[test]
fn piecewise_count_is_exact_on_ordinary_text() {
    let (tok, counter) = o200k();
    let words = [
        "The",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "the",
        "lazy",
        "dog.",
        "Numbers",
        "12345",
        "and",
        "punctuation!?",
        "don't",
        "stop",
        "\n\n",
        "  indented",
        "caf\u{e9}",
        "\u{6f22}\u{5b57}",
        "\u{1f680}",
        "tab\tseparated",
        "end.",
    ];
    let mut text = String::new();
    let mut i = 0usize;
    while text.len() < 60_000 {
        text.push_str(words[(i * 7 + i / 3) % words.len()]);
        text.push(' ');
        i += 1;
    }
    assert_eq!(count_tokens(&*counter, &text), Some(tok.count(&text)));
    for n in [0usize, 1, 4095, 4096, 4097, 10_000] {
        let t = &text[..text.floor_char_boundary_compat(n)];
        assert_eq!(count_tokens(&*counter, t), Some(tok.count(t)), "prefix {n}");
    }
}

trait FloorBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}
impl FloorBoundary for String {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        i = i.min(self.len());
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// 1M repeated characters: the fallback neither panics nor takes quadratic time.
#[test]
fn degenerate_repetition_is_linear_and_never_panics() {
    let (_, counter) = o200k();
    let small = "x".repeat(100_000);
    let big = "x".repeat(1_000_000);
    let t0 = Instant::now();
    let n_small = count_tokens(&*counter, &small).unwrap();
    let t_small = t0.elapsed();
    let t1 = Instant::now();
    let n_big = count_tokens(&*counter, &big).unwrap();
    let t_big = t1.elapsed();
    assert!(
        n_small > 0 && n_big > 9 * n_small && n_big < 11 * n_small,
        "{n_small} {n_big}"
    );
    // Linear: 10× the text costs about 10× the time (quadratic would be 100×).
    assert!(
        t_big < t_small * 30 + Duration::from_millis(200),
        "100k: {t_small:?}, 1M: {t_big:?}"
    );
    assert!(t_big < Duration::from_secs(10), "1M chars took {t_big:?}");
    // A counter that panics: no unwinding, `None`.
    let bad: Arc<TokenCounter> = Arc::new(|_: &str| panic!("tokenizer exploded"));
    assert_eq!(count_tokens(&*bad, "some text"), None);
}

const TOK: &str = "data: {\"choices\":[{\"index\":0,\"text\":\" t\"}]}\n\n";

/// One degenerate response without usage (1M characters) beside four normal streams (a token
/// every 20 ms): the degenerate request succeeds with a tokenizer count, and the counting
/// delays none of the other streams' timestamps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn degenerate_count_does_not_delay_other_streams() {
    let (_, counter) = o200k();
    let big = format!(
        "data: {{\"choices\":[{{\"index\":0,\"text\":\"{}\",\"finish_reason\":\"length\"}}]}}\n\ndata: [DONE]\n\n",
        "x".repeat(1_000_000)
    );
    let degenerate = ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks: vec![(Duration::from_millis(30), big.into_bytes())],
        end: ReplayEnd::Close,
    };
    let mut normal_chunks: Vec<(Duration, Vec<u8>)> = (0..20)
        .map(|_| (Duration::from_millis(20), TOK.as_bytes().to_vec()))
        .collect();
    normal_chunks.push((
        Duration::ZERO,
        b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":20}}\n\ndata: [DONE]\n\n".to_vec(),
    ));
    let normal = ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks: normal_chunks,
        end: ReplayEnd::Close,
    };
    let d_addr = spawn_replay(degenerate).await.unwrap();
    let n_addr = spawn_replay(normal).await.unwrap();
    let mk = |addr: std::net::SocketAddr| {
        Client::new(ClientConfig {
            base_url: format!("http://{addr}"),
            model: "m".into(),
            token_counter: Some(counter.clone()),
            ..Default::default()
        })
        .unwrap()
    };
    let (dc, nc) = (mk(d_addr), mk(n_addr));
    let input = hi(None);
    let cancel = CancellationToken::new();
    // Timings on a shared machine: a batch whose timings miss the ±20 ms band is retried (up to
    // three batches); a fallback that blocked the I/O threads would miss it every time. Counts
    // and texts are asserted in every batch.
    let mut last = String::new();
    for _ in 0..3 {
        let t0 = Instant::now();
        let (d, normals) = tokio::join!(
            dc.send(&input, RequestMeta::default(), &cancel),
            futures_join4(&nc, &input, &cancel)
        );
        assert!(d.success, "{:?}", d.error);
        assert_eq!(d.completion_tokens_source, TokenSource::Tokenizer);
        assert_eq!(d.output_text.len(), 1_000_000);
        let want = count_tokens(&*counter, &d.output_text).unwrap();
        assert_eq!(d.completion_tokens as usize, want);
        assert!(t0.elapsed() < Duration::from_secs(20));
        let mut timing_ok = true;
        for r in normals {
            assert!(r.success, "{:?}", r.error);
            assert_eq!(r.completion_tokens, 20);
            let ttft = r.ttft_ms().unwrap();
            let itls: Vec<f64> = r.itls_ms().collect();
            assert_eq!(itls.len(), 19);
            if (ttft - 20.0).abs() > 20.0 || itls.iter().any(|g| (g - 20.0).abs() > 20.0) {
                timing_ok = false;
                last = format!("ttft {ttft:.1} ms, itls {itls:?}");
            }
        }
        if timing_ok {
            return;
        }
    }
    panic!("timings off in 3 batches; last: {last}");
}

async fn futures_join4(
    c: &Client,
    input: &RequestInput<'_>,
    cancel: &CancellationToken,
) -> Vec<inferbench_core::RequestRecord> {
    let (a, b, x, y) = tokio::join!(
        c.send(input, RequestMeta::default(), cancel),
        c.send(input, RequestMeta::default(), cancel),
        c.send(input, RequestMeta::default(), cancel),
        c.send(input, RequestMeta::default(), cancel)
    );
    vec![a, b, x, y]
}
