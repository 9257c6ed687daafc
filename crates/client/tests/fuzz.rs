//! Property test: random server byte streams (valid responses in random framings, splits,
//! pauses, encodings and endings; corrupted ones; pure garbage) through the real client over
//! TCP. Every request returns exactly one record, within its timeouts, success or one
//! classified error; a response generated valid and ended cleanly succeeds with the exact
//! text. No panic, no hang.

use std::time::{Duration, Instant};

use inferbench_client::{CancellationToken, Client, ClientConfig, RequestInput, RequestMeta};
use inferbench_core::RequestRecord;
use proptest::prelude::*;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// What the server does after writing a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// Keep the connection for the next request.
    KeepAlive,
    /// Close it.
    Close,
    /// Reset it (RST).
    Abort,
    /// Send nothing more, keep it open past the client's timeouts.
    Stall,
    /// Write stray bytes (a second response, garbage), then keep it.
    Stale,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Chunked,
    Length,
    CloseDelimited,
}

#[derive(Debug, Clone)]
struct Response {
    /// The head and body bytes, and where they are cut into writes.
    bytes: Vec<u8>,
    cuts: Vec<usize>,
    pause_ms: u64,
    after: After,
    /// The visible text when the response is valid and complete.
    expect_text: Option<String>,
}

/// (JSON string content as sent, its decoded text).
fn arb_token() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        "[a-z ]{1,6}".prop_map(|s| (s.clone(), s)),
        Just(("caf\u{e9}".to_string(), "caf\u{e9}".to_string())),
        Just((
            "\u{6f22}\u{5b57}".to_string(),
            "\u{6f22}\u{5b57}".to_string()
        )),
        Just(("\\ud83d\\ude80".to_string(), "\u{1f680}".to_string())),
        Just(("\\n\\\"q\\\"".to_string(), "\n\"q\"".to_string())),
        Just(("\\u00e9".to_string(), "\u{e9}".to_string())),
    ]
}

fn arb_response() -> impl Strategy<Value = Response> {
    let valid = (
        prop::collection::vec(arb_token(), 1..6),
        prop_oneof![Just("\n"), Just("\r\n")],
        any::<bool>(),
        prop_oneof![
            Just(Some("text/event-stream")),
            Just(Some("Text/Event-Stream; charset=utf-8")),
            Just(Some("application/json")),
            Just(None)
        ],
        prop_oneof![
            Just(Framing::Chunked),
            Just(Framing::Length),
            Just(Framing::CloseDelimited)
        ],
        any::<bool>(),
        any::<bool>(),
    );
    let corruption = prop_oneof![
        4 => Just(None),
        1 => (any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(Some),
    ];
    let after = prop_oneof![
        Just(After::KeepAlive),
        Just(After::Close),
        Just(After::Abort),
        Just(After::Stall),
        Just(After::Stale),
    ];
    let structured = (
        valid,
        corruption,
        any::<bool>(),
        prop::collection::vec(0usize..4096, 0..6),
        0u64..15,
        after,
    )
        .prop_map(
            |((toks, eol, bom, ctype, framing, usage, chat), corrupt, truncate, cuts, pause_ms, after)| {
                let mut body = Vec::new();
                if bom {
                    body.extend_from_slice("\u{feff}".as_bytes());
                }
                let mut text = String::new();
                for (wire, plain) in &toks {
                    let json = if chat {
                        format!("{{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{wire}\"}}}}]}}")
                    } else {
                        format!("{{\"choices\":[{{\"index\":0,\"text\":\"{wire}\"}}]}}")
                    };
                    body.extend_from_slice(format!("data: {json}{eol}{eol}").as_bytes());
                    text.push_str(plain);
                }
                if usage {
                    body.extend_from_slice(
                        format!("data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{}}}}}{eol}{eol}", toks.len())
                            .as_bytes(),
                    );
                }
                body.extend_from_slice(format!("data: [DONE]{eol}{eol}").as_bytes());
                let mut head = String::from(if framing == Framing::CloseDelimited {
                    "HTTP/1.0 200 OK\r\n"
                } else {
                    "HTTP/1.1 200 OK\r\n"
                });
                if let Some(ct) = ctype {
                    head.push_str(&format!("Content-Type: {ct}\r\n"));
                }
                let framed = match framing {
                    Framing::Chunked => {
                        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
                        let mut b = Vec::new();
                        for piece in body.chunks(37) {
                            b.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                            b.extend_from_slice(piece);
                            b.extend_from_slice(b"\r\n");
                        }
                        b.extend_from_slice(b"0\r\n\r\n");
                        b
                    }
                    Framing::Length => {
                        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
                        body
                    }
                    Framing::CloseDelimited => {
                        head.push_str("\r\n");
                        body
                    }
                };
                let mut bytes = head.into_bytes();
                bytes.extend_from_slice(&framed);
                let mut valid = true;
                if let Some((at, garbage)) = corrupt {
                    let i = at.index(bytes.len());
                    if truncate {
                        bytes.truncate(i);
                    } else {
                        bytes.splice(i..i, garbage);
                    }
                    valid = false;
                }
                // Close-delimited bodies end only when the connection closes.
                let after = if framing == Framing::CloseDelimited && after == After::KeepAlive {
                    After::Close
                } else {
                    after
                };
                let clean_end = matches!(after, After::KeepAlive | After::Close | After::Stale)
                    || (framing != Framing::CloseDelimited && after == After::Stall);
                Response {
                    cuts: cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect(),
                    bytes,
                    pause_ms,
                    after,
                    expect_text: (valid && clean_end).then_some(text),
                }
            },
        );
    let garbage = (
        prop::collection::vec(any::<u8>(), 0..600),
        prop::collection::vec(0usize..600, 0..4),
        prop_oneof![Just(After::Close), Just(After::Abort), Just(After::Stall)],
    )
        .prop_map(|(bytes, cuts, after)| Response {
            cuts,
            bytes,
            pause_ms: 1,
            after,
            expect_text: None,
        });
    prop_oneof![4 => structured, 1 => garbage]
}

async fn serve_conn(mut s: TcpStream, r: Response) {
    let _ = s.set_nodelay(true);
    loop {
        if !inferbench_testutil::replay::read_request(&mut s).await {
            return;
        }
        let mut cuts: Vec<usize> = r.cuts.iter().map(|&c| c.min(r.bytes.len())).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut prev = 0;
        for c in cuts.into_iter().chain([r.bytes.len()]) {
            if c > prev {
                if s.write_all(&r.bytes[prev..c]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(r.pause_ms)).await;
                prev = c;
            }
        }
        match r.after {
            After::KeepAlive => {}
            After::Close => {
                let _ = s.shutdown().await;
                return;
            }
            After::Abort => {
                let _ = s.set_zero_linger();
                return;
            }
            After::Stall => {
                tokio::time::sleep(Duration::from_secs(4)).await;
                return;
            }
            After::Stale => {
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE")
                    .await;
            }
        }
    }
}

/// `i`: the request's index on this client (the second one may go out on the first one's
/// connection, which a stalling server never answers: a timeout, rightly).
fn check(r: &RequestRecord, resp: &Response, i: u64, wall: Duration) -> Result<(), TestCaseError> {
    let ctx = || format!("{resp:?}\n{r:#?}");
    prop_assert!(
        wall < Duration::from_millis(2500),
        "took {wall:?}: {}",
        ctx()
    );
    prop_assert!(r.end_ns >= r.sent_ns, "{}", ctx());
    if r.success {
        prop_assert!(r.error_class.is_none() && r.error.is_none(), "{}", ctx());
        prop_assert!(!r.chunks.is_empty(), "{}", ctx());
        prop_assert!(
            r.first_token_ns.is_some_and(|t| t >= r.sent_ns),
            "{}",
            ctx()
        );
    } else {
        prop_assert!(r.error_class.is_some(), "{}", ctx());
        prop_assert!(
            r.error.as_deref().is_some_and(|m| !m.is_empty()),
            "{}",
            ctx()
        );
    }
    let answered = i == 0 || resp.after != After::Stall;
    if let Some(text) = resp.expect_text.as_ref().filter(|_| answered) {
        prop_assert!(r.success, "valid response failed: {}", ctx());
        prop_assert_eq!(&r.output_text, text, "{}", ctx());
    }
    Ok(())
}

proptest! {
    // 40 cases by default (about 12 s); `FUZZ_CASES=N` for a longer search.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(40),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_server_bytes_end_as_one_classified_record(resp in arb_response()) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let r2 = resp.clone();
            let server = tokio::spawn(async move {
                while let Ok((s, _)) = l.accept().await {
                    tokio::spawn(serve_conn(s, r2.clone()));
                }
            });
            let client = Client::new(ClientConfig {
                base_url: format!("http://{addr}"),
                model: "m".into(),
                idle_timeout: Duration::from_millis(300),
                request_timeout: Some(Duration::from_millis(1500)),
                ..Default::default()
            })
            .unwrap();
            let input = RequestInput { text: "hi", messages: None, prompt_tokens: 1, max_tokens: Some(8) };
            let cancel = CancellationToken::new();
            for i in 0..2 {
                if i == 1 {
                    // Past the pool's probation, so the second request may reuse the first's
                    // connection (and meet its stale bytes).
                    tokio::time::sleep(inferbench_client::pool::REUSE_QUIET + Duration::from_millis(20)).await;
                }
                let t0 = Instant::now();
                let rec = client.send(&input, RequestMeta { request_id: i, ..Default::default() }, &cancel).await;
                check(&rec, &resp, i, t0.elapsed())?;
                prop_assert_eq!(rec.request_id, i);
            }
            server.abort();
            Ok(())
        })?;
    }
}
