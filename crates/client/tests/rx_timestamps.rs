//! Issue 14: a client too busy to read when the bytes arrive still measures the server's TTFT.
//! A server answers 100 ms after the request; the client's only thread is blocked from 20 ms to
//! 420 ms after the send (a saturated client core, made deterministic). With kernel receive
//! timestamps (the default, Linux) TTFT is the arrival time of the bytes (≈ 100 ms); read-time
//! stamps put it after the block (≈ 420 ms).

mod common;

use common::send_hi;
use std::io::{Read, Write};
use std::time::Duration;

use inferbench_client::{Backend, Client, ClientConfig};

const BLOCK: Duration = Duration::from_millis(400);

/// A one-shot server that answers a request 100 ms after it arrived with a three-token SSE
/// stream, all at once.
fn instant_once() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = Vec::new();
        let mut b = [0u8; 4096];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&b[..n]),
            }
        }
        // Answer 100 ms after the request, while the client's thread is blocked.
        std::thread::sleep(Duration::from_millis(100));
        let ev = "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n";
        let body = format!("{ev}{ev}{ev}data: [DONE]\n\n");
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        std::thread::sleep(Duration::from_secs(2));
    });
    url
}

/// TTFT (ms) of one request whose client thread is blocked right after the send.
fn ttft_with_busy_client(rx_timestamps: bool) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = Client::new(ClientConfig {
            base_url: instant_once(),
            backend: Backend::OpenAiCompletions,
            model: "m".into(),
            rx_timestamps,
            ..Default::default()
        })
        .unwrap();
        let send = tokio::spawn(async move { send_hi(&client, Some(3)).await });
        // Let the request go out, then hog the only thread while the answer arrives.
        tokio::time::sleep(Duration::from_millis(20)).await;
        std::thread::sleep(BLOCK);
        let rec = send.await.unwrap();
        assert!(rec.success, "{rec:#?}");
        assert_eq!(rec.chunks.len(), 3);
        rec.ttft_ms().unwrap()
    })
}

#[test]
fn a_busy_client_still_measures_the_servers_ttft() {
    let read_time = ttft_with_busy_client(false);
    assert!(read_time >= 350.0, "read-time TTFT {read_time} ms");
    if cfg!(target_os = "linux") {
        let kernel = ttft_with_busy_client(true);
        assert!(
            (95.0..250.0).contains(&kernel),
            "kernel-stamped TTFT {kernel} ms (the server answered after 100 ms)"
        );
    }
}
