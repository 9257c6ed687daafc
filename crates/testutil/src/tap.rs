//! A TCP forwarder that keeps what clients send: tests put it between the client and a server
//! (the in-process sim) and count the requests that arrived, byte for byte. It forwards to one
//! upstream whatever the request names, so it serves as a test's forward proxy too.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Every byte clients sent through the forwarder, one entry per connection, in accept order.
/// Clearing it forgets what was sent so far (bytes of a connection already open are then
/// dropped).
pub type Sent = Arc<Mutex<Vec<Vec<u8>>>>;

/// Starts a forwarder to `upstream` (a server's base URL, `http://IP:PORT`, as the sim's
/// `base_url()` gives it) on a free loopback port of the current tokio runtime; returns its
/// `http://127.0.0.1:PORT` URL and what clients send through it. A connection the upstream
/// refuses is closed. Panics when `upstream` is not `http://IP:PORT` or no loopback port can be
/// bound.
pub async fn spawn_tap(upstream: &str) -> (String, Sent) {
    let upstream: SocketAddr = (upstream.trim_start_matches("http://"))
        .trim_end_matches('/')
        .parse()
        .unwrap_or_else(|e| panic!("{upstream}: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sent: Sent = Arc::default();
    let keep = sent.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let keep = keep.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                let slot = {
                    let mut k = keep.lock().unwrap();
                    k.push(Vec::new());
                    k.len() - 1
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                    let _ = cw.shutdown().await;
                });
                let mut buf = [0u8; 16 * 1024];
                loop {
                    match cr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if let Some(conn) = keep.lock().unwrap().get_mut(slot) {
                                conn.extend_from_slice(&buf[..n]);
                            }
                            if sw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = sw.shutdown().await;
            });
        }
    });
    (format!("http://{addr}"), sent)
}

/// The request lines (`POST /v1/completions HTTP/1.1`, as sent) of the POSTs in `sent`, by
/// connection and in order within one. A request line follows the previous request's body with
/// no line break between, so each is found by its `POST ` and ends at its `\r\n`.
pub fn post_lines(sent: &Sent) -> Vec<String> {
    let mut lines = Vec::new();
    for conn in sent.lock().unwrap().iter() {
        let text = String::from_utf8_lossy(conn);
        for (i, _) in text.match_indices("POST ") {
            let rest = &text[i..];
            lines.push(rest[..rest.find("\r\n").unwrap_or(rest.len())].to_string());
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two requests on one connection, the second right after the first's body: both lines.
    #[tokio::test]
    async fn keeps_what_clients_send_and_finds_each_post_line() {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_addr = upstream.local_addr().unwrap();
        let (url, sent) = spawn_tap(&format!("http://{up_addr}")).await;
        let mut c = TcpStream::connect(url.trim_start_matches("http://"))
            .await
            .unwrap();
        let (mut s, _) = upstream.accept().await.unwrap();
        let req = b"POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}POST /b HTTP/1.1\r\n\r\n";
        c.write_all(req).await.unwrap();
        let mut got = vec![0u8; req.len()];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got[..], &req[..]);
        assert_eq!(sent.lock().unwrap().concat(), req.to_vec());
        assert_eq!(post_lines(&sent), ["POST /a HTTP/1.1", "POST /b HTTP/1.1"]);
    }
}
