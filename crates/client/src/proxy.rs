//! HTTP proxies for the benchmark traffic, as vLLM's client honours them (aiohttp with
//! `trust_env`: `http_proxy` / `HTTP_PROXY`, `no_proxy` / `NO_PROXY`).
//!
//! `http://` targets use `http_proxy`: a proxied request goes to the proxy's address with an
//! absolute-form request target (`POST http://host:port/v1/… HTTP/1.1`), the `Host` header
//! kept, plus `Proxy-Authorization: Basic …` when the proxy URL carries credentials.
//! `https://` targets use `https_proxy`: each connection asks the proxy for a tunnel
//! (`CONNECT host:443`, the credentials on that request), then speaks TLS to the target through
//! it ([`crate::pool`]). The proxy itself is always spoken to in plain HTTP (an `http://`
//! proxy URL). Loopback targets (`localhost`, `127.0.0.0/8`, `::1`) are never proxied, nor hosts
//! `NO_PROXY` lists.

use std::net::IpAddr;

/// A parsed `http://[user[:password]@]host[:port]` proxy URL (port 80 by default).
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    /// `http://host:port`, credentials left out (what results record).
    pub url: String,
    /// Host to connect to.
    pub host: String,
    /// Port to connect to.
    pub port: u16,
    /// `Basic …` value of `Proxy-Authorization` when the URL carried credentials.
    pub(crate) auth: Option<String>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("url", &self.url)
            .field("auth", &self.auth.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Proxy {
    /// Parses a proxy URL. A value without a scheme is taken as `http://` (as curl and
    /// Python do). Errors: a scheme other than `http`, no host, an unclosed `[` of an IPv6
    /// host (or anything but `:PORT` after its `]`), or a bad port.
    pub fn parse(url: &str) -> Result<Proxy, String> {
        let url = url.trim();
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => {
                return Err(format!(
                    "proxy {:?}: only http:// proxies are supported, not {scheme}://",
                    redact(url)
                ))
            }
            None => url,
        };
        let authority = rest.split('/').next().unwrap_or("");
        let (creds, hostport) = match authority.rsplit_once('@') {
            Some((c, h)) => (Some(c), h),
            None => (None, authority),
        };
        // `[v6]:port`, `[v6]`, `host:port` or `host`.
        let (host, port) = match hostport.strip_prefix('[') {
            Some(v6) => match v6.split_once(']') {
                Some((h, "")) => (h, None),
                Some((h, p)) => match p.strip_prefix(':') {
                    Some(p) => (h, Some(p)),
                    None => {
                        return Err(format!(
                            "proxy {:?}: {p:?} after the IPv6 host [{h}] (expected :PORT)",
                            redact(url)
                        ))
                    }
                },
                None => {
                    return Err(format!(
                        "proxy {:?}: unclosed '[' in the IPv6 host (write http://[ADDR]:PORT)",
                        redact(url)
                    ))
                }
            },
            None => match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            },
        };
        let port = match port {
            None => 80,
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| format!("proxy {:?}: bad port {p:?}", redact(url)))?,
        };
        if host.is_empty() {
            return Err(format!("proxy {:?}: no host", redact(url)));
        }
        let auth = creds.map(|c| format!("Basic {}", base64(percent_decode(c).as_bytes())));
        let shown = if host.contains(':') {
            format!("http://[{host}]:{port}")
        } else {
            format!("http://{host}:{port}")
        };
        Ok(Proxy {
            url: shown,
            host: host.to_string(),
            port,
            auth,
        })
    }
}

/// The environment variables a proxy for an `https://` (`https`) or `http://` target comes
/// from, for messages: `https_proxy / HTTPS_PROXY` or `http_proxy / HTTP_PROXY`.
pub fn variable_for(https: bool) -> &'static str {
    if https {
        "https_proxy / HTTPS_PROXY"
    } else {
        "http_proxy / HTTP_PROXY"
    }
}

/// The proxy settings of the environment: `http_proxy` (else `HTTP_PROXY`), `https_proxy`
/// (else `HTTPS_PROXY`) and `no_proxy` (else `NO_PROXY`), each `None` when unset or empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// The proxy URL for `http://` targets.
    pub http_proxy: Option<String>,
    /// The proxy URL for `https://` targets (a `CONNECT` tunnel through it).
    pub https_proxy: Option<String>,
    /// Hosts never proxied (comma-separated; `*` for all).
    pub no_proxy: Option<String>,
}

impl ProxyEnv {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the variables through `get` (lower-case names win, as in Python's urllib).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let pick = |lower: &str, upper: &str| {
            get(lower)
                .or_else(|| get(upper))
                .filter(|v| !v.trim().is_empty())
        };
        ProxyEnv {
            http_proxy: pick("http_proxy", "HTTP_PROXY"),
            https_proxy: pick("https_proxy", "HTTPS_PROXY"),
            no_proxy: pick("no_proxy", "NO_PROXY"),
        }
    }

    /// The proxy URL for requests to `base_url`: `https_proxy` for an `https://` URL,
    /// `http_proxy` otherwise (whether it applies to the host is [`applies`]'s question).
    pub fn for_url(&self, base_url: &str) -> Option<String> {
        let https = base_url
            .trim_start()
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
        if https {
            self.https_proxy.clone()
        } else {
            self.http_proxy.clone()
        }
    }
}

/// Whether `host` is a loopback address or name (`localhost`, `*.localhost`, `127.0.0.0/8`,
/// `::1`): never proxied.
pub fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    let lower = h.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `NO_PROXY`'s list `no_proxy` exempts `host:port`: an entry `*`, the host itself, a
/// domain it is in (`example.com` or `.example.com` matches `api.example.com`), or `host:port`.
pub fn bypassed(host: &str, port: u16, no_proxy: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    no_proxy.split(',').map(str::trim).any(|e| {
        if e.is_empty() {
            return false;
        }
        if e == "*" {
            return true;
        }
        let e = e.to_ascii_lowercase();
        let (name, eport) = match e.rsplit_once(':') {
            Some((n, p)) if !n.contains(':') => (n.to_string(), p.parse::<u16>().ok()),
            _ => (e.clone(), None),
        };
        if eport.is_some_and(|p| p != port) {
            return false;
        }
        let name = name.trim_start_matches('.');
        let name = name.trim_start_matches('[').trim_end_matches(']');
        host == name || host.ends_with(&format!(".{name}"))
    })
}

/// The proxy a request to `host:port` goes through: `proxy` unless the host is loopback or
/// `no_proxy` exempts it.
pub fn applies(host: &str, port: u16, no_proxy: Option<&str>) -> bool {
    !is_loopback(host) && !no_proxy.is_some_and(|n| bypassed(host, port, n))
}

/// The proxy URL (credentials left out) that requests to `url` go through with `proxy` and
/// `no_proxy`, `None` when direct (or when `url` or `proxy` does not parse; the client then
/// reports the error).
pub fn used_for(url: &str, proxy: Option<&str>, no_proxy: Option<&str>) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let host = uri.host()?;
    let port = (uri.port_u16()).unwrap_or(if uri.scheme_str() == Some("https") {
        443
    } else {
        80
    });
    let p = proxy.filter(|_| applies(host, port, no_proxy))?;
    Proxy::parse(p).ok().map(|p| p.url)
}

fn redact(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((before, after)) => match before.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://***@{after}"),
            None => format!("***@{after}"),
        },
        None => url.to_string(),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (k, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if k <= c.len() {
                out.push(T[(n >> shift & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls() {
        let p = Proxy::parse("http://user:p%40ss@proxy.corp:3128/").unwrap();
        assert_eq!(
            (p.url.as_str(), p.host.as_str(), p.port),
            ("http://proxy.corp:3128", "proxy.corp", 3128)
        );
        assert_eq!(p.auth.as_deref(), Some("Basic dXNlcjpwQHNz")); // user:p@ss
        assert!(!format!("{p:?}").contains("dXNl"));
        let p = Proxy::parse("proxy.corp").unwrap();
        assert_eq!(p.url, "http://proxy.corp:80");
        assert_eq!(p.auth, None);
        let p = Proxy::parse("http://[::1]:8080").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("::1", 8080));
        let e = Proxy::parse("https://u:secret@p:443").unwrap_err();
        assert!(e.contains("only http://") && !e.contains("secret"), "{e}");
        assert!(Proxy::parse("http://p:99999").is_err());
        assert!(Proxy::parse("http://:80").is_err());
        // A fresh tester's finding 3: an unclosed bracket was read as [::1]:80.
        assert_eq!(
            Proxy::parse("http://[::1").unwrap_err(),
            "proxy \"http://[::1\": unclosed '[' in the IPv6 host (write http://[ADDR]:PORT)"
        );
        assert_eq!(
            Proxy::parse("http://[::1]8080").unwrap_err(),
            "proxy \"http://[::1]8080\": \"8080\" after the IPv6 host [::1] (expected :PORT)"
        );
        assert_eq!(Proxy::parse("http://[::1]").unwrap().port, 80);
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
    }

    #[test]
    fn loopback_and_no_proxy() {
        for h in [
            "localhost",
            "127.0.0.1",
            "127.8.9.1",
            "::1",
            "[::1]",
            "api.localhost",
        ] {
            assert!(is_loopback(h), "{h}");
            assert!(!applies(h, 80, None), "{h}");
        }
        assert!(!is_loopback("10.0.0.1"));
        let np = "example.com, .corp.net,10.1.2.3,gpu-node:8000";
        assert!(bypassed("api.example.com", 80, np));
        assert!(bypassed("example.com", 80, np));
        assert!(!bypassed("notexample.com", 80, np));
        assert!(bypassed("a.corp.net", 80, np));
        assert!(bypassed("10.1.2.3", 8000, np));
        assert!(bypassed("gpu-node", 8000, np));
        assert!(!bypassed("gpu-node", 8001, np));
        assert!(bypassed("anything", 1, "*"));
        assert!(applies("gpu-node", 8001, Some(np)));
        let env = ProxyEnv::from_lookup(|k| match k {
            "HTTP_PROXY" => Some("http://upper:1".into()),
            "http_proxy" => Some("http://lower:2".into()),
            "NO_PROXY" => Some(" ".into()),
            _ => None,
        });
        assert_eq!(env.http_proxy.as_deref(), Some("http://lower:2"));
        assert_eq!(env.no_proxy, None);
        let env = ProxyEnv::from_lookup(|k| match k {
            "HTTPS_PROXY" => Some("http://tunnel:3128".into()),
            "http_proxy" => Some("http://plain:80".into()),
            _ => None,
        });
        assert_eq!(
            env.for_url("https://api.example.com").as_deref(),
            Some("http://tunnel:3128")
        );
        assert_eq!(
            env.for_url("HTTPS://api.example.com").as_deref(),
            Some("http://tunnel:3128")
        );
        assert_eq!(
            env.for_url("http://api.example.com").as_deref(),
            Some("http://plain:80")
        );
        assert_eq!(
            used_for(
                "https://api.example.com/v1",
                Some("http://tunnel:3128"),
                Some("api.example.com:443")
            ),
            None
        );
    }
}
