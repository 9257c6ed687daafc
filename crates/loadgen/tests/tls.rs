//! Issue 41, `https://` targets: a TLS front in the test (a CA and a server certificate made
//! here with rcgen) terminating TLS before the in-process sim. With the CA as `--tls-ca` every
//! request succeeds with the sim's exact token counts; without it every request fails as a
//! recorded `connect` error naming the certificate and the two flags; `--insecure` goes
//! through; `HTTPS_PROXY` opens one `CONNECT` tunnel per connection through a proxy in the
//! test, which the summary names.

use std::sync::{Arc, Mutex};

use inferbench_core::{ErrorClass, Phase, RequestRecord};
use inferbench_loadgen::{run_bench, BenchOptions, CancellationToken, ProgressMode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A name the client cannot resolve: only a proxy's tunnel reaches it.
const FAR_HOST: &str = "bench-target.invalid";

/// The in-process sim (serving model `m`) behind a TLS front whose certificate a test CA
/// signed for `localhost`, `127.0.0.1` and [`FAR_HOST`]; the CA's PEM is in `ca`.
struct TlsSim {
    _sim: inferbench_sim::SimHandle,
    port: u16,
    _dir: tempfile::TempDir,
    ca: std::path::PathBuf,
}

impl TlsSim {
    /// `--tls-ca` with the test CA.
    fn with_ca(&self) -> inferbench_client::tls::TlsOptions {
        inferbench_client::tls::TlsOptions {
            ca_file: Some(self.ca.clone()),
            insecure: false,
        }
    }
}

fn sim() -> inferbench_sim::SimHandle {
    inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        ..Default::default()
    })
    .expect("sim starts")
}

fn upstream(sim: &inferbench_sim::SimHandle) -> String {
    sim.base_url().trim_start_matches("http://").to_string()
}

async fn sim_behind_tls() -> TlsSim {
    let sim = sim();
    let (ca_pem, acceptor) =
        inferbench_testutil::tls::certificates(&["localhost", "127.0.0.1", FAR_HOST]);
    let port = inferbench_testutil::tls::spawn_tls_front(acceptor, upstream(&sim)).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    TlsSim {
        _sim: sim,
        port,
        _dir: dir,
        ca,
    }
}

/// The request head `client` sends (through its blank line), read a byte at a time so nothing
/// after it is taken; `None` when the connection ends first.
async fn read_head(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut b).await.unwrap_or(0) == 0 {
            return None;
        }
        head.push(b[0]);
    }
    Some(head)
}

/// A `CONNECT` proxy: records each tunnel's target and joins it to `127.0.0.1:port` whatever
/// host it names.
async fn spawn_connect_proxy(port: u16) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let tunnels: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = tunnels.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let Some(head) = read_head(&mut client).await else {
                    return;
                };
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                seen.lock().unwrap().push(line);
                let Ok(mut server) = TcpStream::connect(("127.0.0.1", port)).await else {
                    return;
                };
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    (format!("http://{addr}"), tunnels)
}

fn opts(base_url: String, tls: inferbench_client::tls::TlsOptions) -> BenchOptions {
    BenchOptions {
        base_url,
        model: "m".into(),
        progress: ProgressMode::Off,
        random_input_len: 16,
        random_output_len: 5,
        num_prompts: Some(4),
        num_warmups: Some(1),
        max_concurrency: Some(2),
        server_metrics: false,
        tls,
        ..Default::default()
    }
}

fn profile(recs: &[RequestRecord]) -> Vec<&RequestRecord> {
    recs.iter().filter(|r| r.phase == Phase::Profile).collect()
}

/// The run passed and each of its 4 profile requests succeeded with the sim's exact counts
/// (16 prompt, 5 completion tokens), as [`opts`] asks.
fn assert_exact(out: &inferbench_loadgen::BenchOutcome) {
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let recs = profile(&out.records);
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert!(r.success, "{:?}", r.error);
        assert_eq!((r.prompt_tokens, r.completion_tokens), (16, 5), "{r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_targets_verify_with_tls_ca_and_tunnel_through_https_proxy() {
    let front = sim_behind_tls().await;
    let (port, with_ca) = (front.port, front.with_ca());

    // --tls-ca: every request over TLS, the sim's exact counts.
    let url = format!("https://localhost:{port}");
    let out = run_bench(opts(url.clone(), with_ca.clone()), CancellationToken::new())
        .await
        .unwrap();
    assert_exact(&out);
    assert_eq!(out.summary.total_output_tokens, 20);
    assert_eq!(out.summary.inferbench.proxy, None);
    // The result records how the server was verified (a fresh tester's finding 3).
    assert_eq!(
        out.summary.inferbench.tls_ca,
        Some(front.ca.display().to_string())
    );
    assert!(!out.summary.inferbench.tls_insecure);

    // No --tls-ca: the certificate does not verify; every request is a recorded connect error.
    let out = run_bench(
        opts(url.clone(), Default::default()),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_ne!(out.end, inferbench_loadgen::RunEnd::Passed);
    assert!(!out.records.is_empty());
    for r in &out.records {
        assert!(!r.success);
        assert_eq!(r.error_class, Some(ErrorClass::Connect), "{r:?}");
        let e = r.error.as_deref().unwrap_or("");
        assert!(
            e.contains(&format!("TLS handshake with localhost:{port} failed: "))
                && e.contains("UnknownIssuer")
                && e.contains("--tls-ca FILE")
                && e.contains("--insecure"),
            "{e}"
        );
    }

    let verdict = out
        .verdict
        .as_ref()
        .map(|v| v.note.clone())
        .unwrap_or_default();
    assert!(
        verdict.ends_with(
            "(the server is there, but TLS could not be set up with it: see the cause above)"
        ),
        "{verdict}"
    );

    // --insecure: no verification, same answers.
    let insecure = inferbench_client::tls::TlsOptions {
        ca_file: None,
        insecure: true,
    };
    let out = run_bench(opts(url, insecure), CancellationToken::new())
        .await
        .unwrap();
    assert!(out.summary.inferbench.tls_insecure);
    assert_eq!(out.summary.inferbench.tls_ca, None);
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert!(profile(&out.records)
        .iter()
        .all(|r| r.success && r.completion_tokens == 5));

    // HTTPS_PROXY: a name only the proxy reaches, one CONNECT per connection, TLS end to end.
    let (proxy, tunnels) = spawn_connect_proxy(port).await;
    let far = format!("https://{FAR_HOST}:{port}");
    let o = BenchOptions {
        proxy: Some(proxy.clone()),
        ..opts(far, with_ca)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let recs = profile(&out.records);
    assert!(recs.iter().all(|r| r.success && r.completion_tokens == 5));
    let lines = tunnels.lock().unwrap().clone();
    assert!(!lines.is_empty() && lines.len() <= 5, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| *l == format!("CONNECT {FAR_HOST}:{port} HTTP/1.1")),
        "{lines:?}"
    );
    assert_eq!(
        out.summary.inferbench.proxy.as_deref(),
        Some(proxy.as_str())
    );
}

/// A proxy that refuses `CONNECT` (403): every request is a recorded `connect` error quoting
/// its answer; nothing is sent past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_tunnel_is_a_recorded_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                if read_head(&mut client).await.is_none() {
                    return;
                }
                let _ = client
                    .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    let o = BenchOptions {
        proxy: Some(format!("http://{addr}")),
        ..opts(format!("https://{FAR_HOST}:8443"), Default::default())
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_ne!(out.end, inferbench_loadgen::RunEnd::Passed);
    assert!(!out.records.is_empty());
    for r in &out.records {
        assert!(!r.success);
        assert_eq!(r.error_class, Some(ErrorClass::Connect), "{r:?}");
        assert_eq!(
            r.error.as_deref(),
            Some(
                format!(
                    "the proxy 127.0.0.1:{} gave no tunnel: it refused CONNECT {FAR_HOST}:8443: \
                     \"HTTP/1.1 403 Forbidden\"",
                    addr.port()
                )
                .as_str()
            ),
            "{r:?}"
        );
    }
}

/// Issue 41's side requests over TLS: `bench` without `--model` against the TLS front asks the
/// sim's `/v1/models` through it (the model named in the notes), scrapes its `/metrics` through
/// it (the server's window in the summary, vLLM's names) and records its fingerprint from `/v1/models`; the requests' counts stay
/// exact. Without the fix the lookup refused an `https://` target and no scrape answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_requests_reach_an_https_server_with_the_same_tls() {
    let front = sim_behind_tls().await;
    let (port, with_ca) = (front.port, front.with_ca());
    let o = BenchOptions {
        model: String::new(),
        server_metrics: true,
        server_metrics_interval: std::time::Duration::from_millis(100),
        ..opts(format!("https://localhost:{port}"), with_ca)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert!(
        out.notes.iter().any(|n| n
            == "model \"m\": the first model the server's /v1/models lists (--model not given)"),
        "{:?}",
        out.notes
    );
    let recs = profile(&out.records);
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert!(r.success, "{:?}", r.error);
        assert_eq!((r.prompt_tokens, r.completion_tokens), (16, 5), "{r:?}");
    }
    let sm = out
        .summary
        .inferbench
        .server_metrics
        .as_ref()
        .expect("server metrics scraped over TLS");
    assert_eq!(sm.engine, "vllm");
    // The window opens with the profile's first scrape, which may follow the first tokens.
    let generated = sm.generation_tokens.unwrap_or(0.0);
    assert!(generated > 0.0 && generated <= 20.0, "{sm:?}");
    assert!(out.summary.inferbench.server.is_some());

    // Without the CA the side requests fail as the requests do: no model can be looked up.
    let o = BenchOptions {
        model: String::new(),
        ..opts(format!("https://localhost:{port}"), Default::default())
    };
    let e = run_bench(o, CancellationToken::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("UnknownIssuer") && e.contains("--tls-ca FILE"),
        "{e}"
    );
}

/// `--tokenizer server` against an `https://` server (issue 41): the prompts are fitted through
/// its `/tokenize` over TLS (verified with the CA), so every request carries exactly the
/// asked-for 16 prompt tokens by the server's count; without the CA preparing the prompts fails
/// naming the certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_tokenizer_speaks_tls() {
    let front = sim_behind_tls().await;
    let (port, with_ca) = (front.port, front.with_ca());
    let url = format!("https://localhost:{port}");
    let o = BenchOptions {
        tokenizer: "server".into(),
        ..opts(url.clone(), with_ca)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_exact(&out);
    assert_eq!(out.summary.tokenizer_id, "server");

    let o = BenchOptions {
        tokenizer: "server".into(),
        ..opts(url, Default::default())
    };
    let e = format!(
        "{:#}",
        run_bench(o, CancellationToken::new()).await.unwrap_err()
    );
    assert!(
        e.contains(&format!("POST https://localhost:{port}/tokenize"))
            && e.contains("UnknownIssuer"),
        "{e}"
    );
}

/// A fresh tester's finding 3: an `HTTPS_PROXY` nothing listens on said "is the server running
/// … check --base-url". The records and the verdict name the proxy and its variables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_proxy_is_named_not_the_server() {
    // A port nothing listens on: bound, then closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let o = BenchOptions {
        proxy: Some(format!("http://127.0.0.1:{port}")),
        ..opts(format!("https://{FAR_HOST}:8443"), Default::default())
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_ne!(out.end, inferbench_loadgen::RunEnd::Passed);
    assert!(!out.records.is_empty());
    let want = format!(
        "cannot connect to the proxy 127.0.0.1:{port} (from the environment's https_proxy / \
         HTTPS_PROXY): Connection refused (os error 111)"
    );
    for r in &out.records {
        assert_eq!(r.error_class, Some(ErrorClass::Connect), "{r:?}");
        assert_eq!(r.error.as_deref(), Some(want.as_str()), "{r:?}");
    }
    let note = &out.verdict.as_ref().unwrap().note;
    assert!(
        note.contains(&want)
            && note.ends_with(
                "(the proxy is not reachable, whatever the server's state: check the proxy \
                 variable named above, or NO_PROXY / --no-proxy to go direct)"
            )
            && !note.contains("is the server running"),
        "{note}"
    );
}

/// A fresh tester's finding 3: `https://` to a plain-HTTP server said a bare
/// "InvalidContentType". The record says the server answered in plain HTTP and to use http://.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_to_a_plain_http_server_says_use_http() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = client.read(&mut buf).await;
                let _ = client
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    let out = run_bench(
        opts(format!("https://{addr}"), Default::default()),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_ne!(out.end, inferbench_loadgen::RunEnd::Passed);
    assert!(!out.records.is_empty());
    for r in &out.records {
        assert_eq!(r.error_class, Some(ErrorClass::Connect), "{r:?}");
        let e = r.error.as_deref().unwrap_or_default();
        assert!(
            e.contains("InvalidContentType")
                && e.ends_with(
                    "(the server answered in plain HTTP, not TLS: use http:// in --base-url)"
                ),
            "{e}"
        );
    }
}

/// A fresh tester's finding 3: `HTTPS_PROXY='http://[::1'` (unclosed bracket) was read as
/// `[::1]:80`. It is refused before any request, naming the variable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unclosed_bracket_in_the_proxy_is_refused_naming_the_variable() {
    let o = BenchOptions {
        proxy: Some("http://[::1".into()),
        ..opts(format!("https://{FAR_HOST}:8443"), Default::default())
    };
    let e = match run_bench(o, CancellationToken::new()).await {
        Err(e) => inferbench_core::error_chain(e.as_ref()),
        Ok(out) => panic!("ran: {:?}", out.records.first()),
    };
    assert!(
        e.contains(
            "proxy \"http://[::1\": unclosed '[' in the IPv6 host (write http://[ADDR]:PORT) \
             (from the environment's https_proxy / HTTPS_PROXY)"
        ),
        "{e}"
    );
}

/// A fresh tester's finding 3: a server whose certificate is self-signed (a CA certificate
/// served as its own, as `openssl req -x509` makes), given with `--tls-ca`, failed
/// `CaUsedAsEndEntity` with the hint to give `--tls-ca`. As curl does, the exact certificate
/// given is trusted; another self-signed one still is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_given_with_tls_ca_is_trusted() {
    let sim = sim();
    let (cert_pem, acceptor) = inferbench_testutil::tls::self_signed(&["localhost"]);
    let port = inferbench_testutil::tls::spawn_tls_front(acceptor, upstream(&sim)).await;
    let dir = tempfile::tempdir().unwrap();
    let given = |pem: String| {
        let path = dir.path().join(format!("ca{}.pem", pem.len() % 1000));
        std::fs::write(&path, pem).unwrap();
        inferbench_client::tls::TlsOptions {
            ca_file: Some(path),
            insecure: false,
        }
    };
    let url = format!("https://localhost:{port}");
    let out = run_bench(opts(url.clone(), given(cert_pem)), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?} {:?}",
        out.notes,
        out.records.first()
    );
    assert!(profile(&out.records).iter().all(|r| r.success));
    // Another self-signed certificate given: still refused.
    let (other, _) = inferbench_testutil::tls::self_signed(&["localhost"]);
    let out = run_bench(opts(url, given(other + "\n")), CancellationToken::new())
        .await
        .unwrap();
    assert_ne!(out.end, inferbench_loadgen::RunEnd::Passed);
    let e = out.records[0].error.as_deref().unwrap_or_default();
    assert!(
        e.contains("CaUsedAsEndEntity") || e.contains("UnknownIssuer"),
        "{e}"
    );
}
