//! One plain HTTP GET with a timeout, for the side requests around a benchmark (readiness
//! probes, `/metrics` snapshots): hyper's pooled legacy client, not the measured request path.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// GETs `url` (http only) and returns the status code and the whole body, or a message naming
/// the URL: a bad URL, a transport error, a body error, or no answer within `timeout`.
pub async fn http_get(url: &str, timeout: Duration) -> Result<(u16, Bytes), String> {
    let client: Client<_, Empty<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let uri: hyper::Uri = url.parse().map_err(|e| format!("bad url {url}: {e}"))?;
    let fut = async {
        let resp = client
            .get(uri)
            .await
            // hyper-util's own words ("client error (SendRequest)") say nothing: its causes do
            // (trial 33 F6), e.g. "connection closed before message completed".
            .map_err(|e| {
                let why = std::error::Error::source(&e)
                    .map_or_else(|| e.to_string(), inferbench_core::error_chain);
                format!("GET {url}: {why}")
            })?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("GET {url}: body: {e}"))?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| format!("GET {url}: no answer within {} ms", timeout.as_millis()))?
}
