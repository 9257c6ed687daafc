//! Side requests around a benchmark (readiness probes, `/metrics` snapshots, `/v1/models`,
//! `/tokenize`): one request on one fresh connection with a timeout, not the measured request
//! path. The connection is opened as the measured requests' are ([`crate::pool`]): plain TCP for
//! `http://`, TLS for `https://` verified as [`Reach::tls`] says, through the proxy in
//! [`Reach::proxy`] (a `CONNECT` tunnel for `https://`) unless `no_proxy` exempts the host;
//! hyper speaks HTTP/1.1 over it.

use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, HOST, USER_AGENT};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

use crate::tls::TlsOptions;

/// How a side request reaches the server: the same TLS verification and proxy as the
/// measured requests (`--tls-ca`, `--insecure`, `HTTP(S)_PROXY`/`NO_PROXY`). The default is a
/// direct connection with Mozilla's roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// How an `https://` URL's certificate is verified.
    pub tls: TlsOptions,
    /// Proxy URL (`http://[user:pass@]host:port`) for the request, as the measured requests
    /// use it; `None` = direct.
    pub proxy: Option<String>,
    /// Hosts never proxied (comma-separated, `*` for all).
    pub no_proxy: Option<String>,
}

/// Checks what [`http_request_via`] would set up before connecting: `url` parses as
/// `http://` or `https://` with a host, an `https://` URL's TLS configuration (a `--tls-ca`
/// that reads and holds certificates) and the proxy URL when one applies. Errors: the message
/// [`http_request_via`] would return for it (`bad url …`, `… --tls-ca FILE: …`, `… proxy: …`).
pub fn check_reach(url: &str, reach: &Reach) -> Result<(), String> {
    Route::new("GET", url, reach).map(|_| ())
}

/// Where one side request goes: its URL, TLS connector, proxy and pool.
struct Route {
    uri: Uri,
    host: String,
    proxy: Option<crate::proxy::Proxy>,
    absolute_form: bool,
    pool: crate::pool::Pool,
}

impl Route {
    fn new(method: &str, url: &str, reach: &Reach) -> Result<Route, String> {
        let at = format!("{method} {url}");
        let uri: Uri = url.parse().map_err(|e| format!("bad url {url}: {e}"))?;
        let https = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => true,
            Some(s) if s.eq_ignore_ascii_case("http") => false,
            _ => return Err(format!("bad url {url}: not http:// or https://")),
        };
        let Some(host) = uri.host().map(str::to_string) else {
            return Err(format!("bad url {url}: no host"));
        };
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            Some(
                crate::tls::TlsConnector::new(&host, &reach.tls)
                    .map_err(|e| format!("{at}: {e}"))?,
            )
        } else {
            None
        };
        let proxy = match reach.proxy.as_deref() {
            Some(p) if crate::proxy::applies(&host, port, reach.no_proxy.as_deref()) => {
                Some(crate::proxy::Proxy::parse(p).map_err(|e| {
                    format!(
                        "{at}: {e} (from the environment's {})",
                        crate::proxy::variable_for(https)
                    )
                })?)
            }
            _ => None,
        };
        // Through a proxy: a CONNECT tunnel for https://, the absolute-form target for http://.
        let (pool, absolute_form) =
            crate::pool::Pool::route(&host, port, https, proxy.as_ref(), false, tls);
        Ok(Route {
            uri,
            host,
            proxy,
            absolute_form,
            pool,
        })
    }
}

/// GETs `url` directly ([`Reach::default`]): see [`http_get_via`].
pub async fn http_get(url: &str, timeout: Duration) -> Result<(u16, Bytes), String> {
    http_get_via(url, timeout, &Reach::default()).await
}

/// GETs `url` (`http://` or `https://`) reached as `reach` says and returns the status code
/// and the whole body, or a message naming the URL: a bad URL, a TLS set-up error (a bad
/// `--tls-ca`), a connect, proxy or TLS handshake failure, a transport or body error, or no
/// answer within `timeout` (the whole exchange, connect included).
pub async fn http_get_via(
    url: &str,
    timeout: Duration,
    reach: &Reach,
) -> Result<(u16, Bytes), String> {
    http_request_via(Method::GET, url, &[], Bytes::new(), timeout, reach).await
}

/// Sends one `method` request with `headers` and `body` (a `Content-Length` body) to `url`
/// reached as `reach` says, on a fresh connection closed after it. Returns the status code and
/// the whole body. Errors as [`http_get_via`]'s, each naming `METHOD url`.
pub async fn http_request_via(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Bytes,
    timeout: Duration,
    reach: &Reach,
) -> Result<(u16, Bytes), String> {
    let at = format!("{method} {url}");
    tracing::debug!("side request: {at}");
    let Route {
        uri,
        host,
        proxy,
        absolute_form,
        pool,
    } = Route::new(method.as_str(), url, reach)?;
    let target: Uri = if absolute_form {
        uri.clone()
    } else {
        uri.path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e| format!("bad url {url}: {e}"))?
    };
    let authority = uri.authority().map_or(host.as_str(), |a| a.as_str());
    let mut req = Request::builder().method(method).uri(target);
    if let Some(h) = req.headers_mut() {
        h.insert(
            HOST,
            HeaderValue::from_str(authority).map_err(|e| format!("bad url {url}: {e}"))?,
        );
        h.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("inferbench/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(auth) = proxy.as_ref().and_then(|p| p.auth.as_deref()) {
            if absolute_form {
                if let Ok(v) = HeaderValue::from_str(auth) {
                    h.insert("proxy-authorization", v);
                }
            }
        }
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(body))
        .map_err(|e| format!("{at}: {e}"))?;
    let fut = async {
        let conn = pool
            .connect_stream()
            .await
            .map_err(|e| format!("{at}: {e}"))?;
        let (mut send, driver) = hyper::client::conn::http1::handshake(TokioIo::new(conn))
            .await
            .map_err(|e| format!("{at}: {}", inferbench_core::error_chain(&e)))?;
        let driver = tokio::spawn(driver);
        let resp = send.send_request(req).await.map_err(|e| {
            // hyper's own words say little: its causes do (trial 33 F6), e.g. "connection
            // closed before message completed".
            let why = std::error::Error::source(&e)
                .map_or_else(|| e.to_string(), inferbench_core::error_chain);
            format!("{at}: {why}")
        })?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{at}: body: {e}"))?
            .to_bytes();
        driver.abort();
        Ok((status, body))
    };
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| format!("{at}: no answer within {} ms", timeout.as_millis()))?
}
