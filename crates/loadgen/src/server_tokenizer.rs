//! `--tokenizer server`: count tokens with the served model's own tokenizer through the
//! server's `POST /tokenize`, so random prompts can be fitted to exact input lengths without a
//! tokenizer file (issue 11).
//!
//! Request body `{"model", "prompt", "content"}` covers the known servers: vLLM and SGLang read
//! `model` + `prompt` and answer `{"tokens": [...], "count": n, "max_model_len": m}`; llama.cpp
//! reads `content` and answers `{"tokens": [...]}`; `inferbench sim` answers like vLLM. The count
//! is `count` when present, else the length of `tokens`. Server defaults for special tokens are
//! kept, so the count is what the server's `usage.prompt_tokens` will say.
//!
//! A tiny blocking HTTP/1.1 client (keep-alive, `Content-Length` or chunked bodies): prompt
//! preparation runs on a blocking thread, and this keeps it free of the async client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context};

/// Timeout of one `/tokenize` call (connect, write, each read), 60 s.
pub const TOKENIZE_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest `/tokenize` response read, bytes (64 MiB: ~10M token ids as JSON).
const MAX_RESPONSE: usize = 64 << 20;

/// Where the server's `/tokenize` is and what to send.
#[derive(Debug, Clone)]
pub struct ServerTokenizer {
    host: String,
    port: u16,
    path: String,
    model: String,
    api_key: Option<String>,
    /// `https://`: TLS verified as the measured requests are (`--tls-ca`, `--insecure`).
    tls: Option<inferbench_client::tls::TlsConnector>,
}

/// A connection's byte stream: plain TCP or TLS over it.
enum Io {
    Plain(TcpStream),
    Tls(Box<inferbench_client::tls::BlockingTlsStream>),
}

impl Read for Io {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(buf),
            Io::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Io {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(buf),
            Io::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Io::Plain(s) => s.flush(),
            Io::Tls(s) => s.flush(),
        }
    }
}

/// One keep-alive connection to the tokenizer (one per worker thread).
#[derive(Default)]
pub struct TokConn(Option<BufReader<Io>>);

impl std::fmt::Debug for TokConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TokConn").field(&self.0.is_some()).finish()
    }
}

impl ServerTokenizer {
    /// `/tokenize` under `base_url` (`http://host[:port][/prefix]`, or `https://…` over TLS
    /// verified as `tls` says).
    ///
    /// # Errors
    /// A URL that is not `http://host[:port]…` or `https://host[:port]…`; TLS that cannot be
    /// set up (a `--tls-ca` that does not read).
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<&str>,
        tls: &inferbench_client::tls::TlsOptions,
    ) -> anyhow::Result<Self> {
        let (rest, https) = match base_url.strip_prefix("http://") {
            Some(r) => (r, false),
            None => (
                base_url.strip_prefix("https://").with_context(|| {
                    format!(
                        "--tokenizer server: --base-url {base_url:?} is not http://host:port \
                         or https://host:port"
                    )
                })?,
                true,
            ),
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let (host, port) = match authority
            .rsplit_once(':')
            .filter(|_| !authority.ends_with(']'))
        {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .with_context(|| format!("--tokenizer server: bad port in {base_url:?}"))?,
            ),
            None => (authority, if https { 443 } else { 80 }),
        };
        if host.is_empty() {
            bail!("--tokenizer server: no host in --base-url {base_url:?}");
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let tls = if https {
            Some(
                inferbench_client::tls::TlsConnector::new(&host, tls)
                    .map_err(|e| anyhow::anyhow!("--tokenizer server: {e}"))?,
            )
        } else {
            None
        };
        Ok(Self {
            host,
            port,
            path: format!("{prefix}/tokenize"),
            model: model.to_string(),
            api_key: api_key.map(str::to_string),
            tls,
        })
    }

    /// Tokens of `text` under the server's tokenizer. Reuses `conn` (keep-alive) and retries
    /// once on a fresh connection when a reused one fails.
    ///
    /// # Errors
    /// Connection failures, a non-200 status (naming the endpoint), a body without `count` or
    /// `tokens`.
    pub fn count(&self, conn: &mut TokConn, text: &str) -> anyhow::Result<u32> {
        let body = serde_json::to_vec(&serde_json::json!({
            "model": self.model, "prompt": text, "content": text,
        }))?;
        let reused = conn.0.is_some();
        match self.post(conn, &body) {
            Ok(v) => Ok(v),
            Err(_) if reused => {
                conn.0 = None;
                self.post(conn, &body)
            }
            Err(e) => Err(e),
        }
    }

    fn post(&self, conn: &mut TokConn, body: &[u8]) -> anyhow::Result<u32> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let at = format!("POST {scheme}://{}:{}{}", self.host, self.port, self.path);
        if conn.0.is_none() {
            let s = TcpStream::connect((self.host.as_str(), self.port))
                .with_context(|| format!("{at}: cannot connect"))?;
            s.set_read_timeout(Some(TOKENIZE_TIMEOUT))?;
            s.set_write_timeout(Some(TOKENIZE_TIMEOUT))?;
            let _ = s.set_nodelay(true);
            let io = match &self.tls {
                None => Io::Plain(s),
                Some(tls) => Io::Tls(Box::new(
                    tls.connect_blocking(s)
                        .with_context(|| format!("{at}: TLS"))?,
                )),
            };
            conn.0 = Some(BufReader::new(io));
        }
        let Some(r) = conn.0.as_mut() else {
            bail!("{at}: no connection");
        };
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n",
            self.path,
            self.host,
            self.port,
            body.len()
        );
        if let Some(k) = &self.api_key {
            head.push_str(&format!("Authorization: Bearer {k}\r\n"));
        }
        head.push_str("\r\n");
        let res = (|| -> anyhow::Result<(u16, Vec<u8>, bool)> {
            let w = r.get_mut();
            w.write_all(head.as_bytes())?;
            w.write_all(body)?;
            w.flush()?;
            read_response(r)
        })();
        let (status, bytes, keep) = match res {
            Ok(x) => x,
            Err(e) => {
                conn.0 = None;
                return Err(e.context(at));
            }
        };
        if !keep {
            conn.0 = None;
        }
        if status != 200 {
            let excerpt = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
            bail!(
                "{at}: HTTP {status}: {} (--tokenizer server needs the server's /tokenize: vLLM, SGLang, llama.cpp or inferbench sim)",
                excerpt.trim()
            );
        }
        parse_count(&bytes).with_context(|| at.clone())
    }
}

/// The token count of a `/tokenize` response body: `count`, else the length of `tokens`.
/// Each is read typed (issue 39's typed checks): `count` must be a JSON integer literal
/// (`"7"`, `7.0`, `-1` are refused, never passed over for `tokens`), `tokens` an array; null is
/// absent.
///
/// # Errors
/// Not JSON; neither field; a field of the wrong type ("the /tokenize response's count is
/// \"7\", not a count of tokens"); a count above `u32::MAX`.
pub fn parse_count(body: &[u8]) -> anyhow::Result<u32> {
    let v: serde_json::Value =
        serde_json::from_slice(body).context("the /tokenize response is not JSON")?;
    let shown = |x: &serde_json::Value| inferbench_core::text::one_line(&x.to_string(), 40);
    match v.get("count") {
        None | Some(serde_json::Value::Null) => {}
        // An integer literal: serde_json reads only those as u64 (a fraction or an exponent
        // is an f64, whatever it rounds to).
        Some(n @ serde_json::Value::Number(x)) if x.is_u64() => {
            let n = n.as_u64().unwrap_or(u64::MAX);
            return u32::try_from(n).context("count out of range");
        }
        Some(x) => bail!(
            "the /tokenize response's count is {}, not a count of tokens",
            shown(x)
        ),
    }
    match v.get("tokens") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Array(t)) => {
            return u32::try_from(t.len()).context("too many tokens")
        }
        Some(x) => bail!(
            "the /tokenize response's tokens is {}, not an array",
            shown(x)
        ),
    }
    bail!("the /tokenize response has neither `count` nor `tokens`")
}

/// Reads one HTTP/1.x response: (status, body, connection reusable).
fn read_response<R: Read>(r: &mut BufReader<R>) -> anyhow::Result<(u16, Vec<u8>, bool)> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        bail!("connection closed before a response");
    }
    let mut parts = line.split_whitespace();
    let version = parts.next().unwrap_or("");
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {:?}", line.trim()))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut keep = version == "HTTP/1.1";
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            bail!("connection closed inside the response head");
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
            match k.as_str() {
                "content-length" => length = v.parse().ok(),
                "transfer-encoding" => chunked = v.contains("chunked"),
                "connection" if v.contains("close") => keep = false,
                "connection" if v.contains("keep-alive") => keep = true,
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size_hex = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_hex, 16)
                .with_context(|| format!("bad chunk size {size_hex:?}"))?;
            if size == 0 {
                // trailers until the blank line
                loop {
                    line.clear();
                    if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            if body.len() + size > MAX_RESPONSE {
                bail!("response over {MAX_RESPONSE} bytes");
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?;
        }
    } else if let Some(n) = length {
        if n > MAX_RESPONSE {
            bail!("response over {MAX_RESPONSE} bytes");
        }
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.take(MAX_RESPONSE as u64).read_to_end(&mut body)?;
        keep = false;
    }
    Ok((status, body, keep))
}

/// Shortens `text` (never below byte `keep_bytes`, a char boundary) until the server counts
/// exactly `target` tokens, by interpolation search over char boundaries (bisection every
/// third step, so a non-linear tokenizer still converges in O(log n) calls). `full` is the
/// server's count of the whole `text` (≥ `target` expected). Returns the text and its server
/// count: `target` when reachable, else the nearest count found (a single character can add
/// several tokens).
///
/// # Errors
/// As [`ServerTokenizer::count`].
pub fn fit_prefix(
    tok: &ServerTokenizer,
    conn: &mut TokConn,
    text: &str,
    keep_bytes: usize,
    full: u32,
    target: u32,
) -> anyhow::Result<(String, u32)> {
    if full <= target {
        return Ok((text.to_string(), full));
    }
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .filter(|&i| i >= keep_bytes)
        .chain(std::iter::once(text.len()))
        .collect();
    // (index into bounds, count); lo's count is a guess until measured.
    let mut lo: (usize, u32, bool) = (0, 0, false);
    let mut hi: (usize, u32) = (bounds.len() - 1, full);
    let mut step = 0u32;
    while hi.0 > lo.0 + 1 {
        step += 1;
        let span = (hi.0 - lo.0) as f64;
        let k = if step.is_multiple_of(3) || hi.1 <= lo.1 {
            lo.0 + (hi.0 - lo.0) / 2
        } else {
            let frac = f64::from(target.saturating_sub(lo.1)) / f64::from(hi.1 - lo.1);
            lo.0 + (frac * span).round() as usize
        }
        .clamp(lo.0 + 1, hi.0 - 1);
        let c = tok.count(conn, &text[..bounds[k]])?;
        if c == target {
            return Ok((text[..bounds[k]].to_string(), c));
        }
        if c < target {
            lo = (k, c, true);
        } else {
            hi = (k, c);
        }
    }
    // No cut gives exactly `target`: the nearest of the two neighbours.
    if lo.2 && target - lo.1 <= hi.1 - target {
        Ok((text[..bounds[lo.0]].to_string(), lo.1))
    } else {
        Ok((text[..bounds[hi.0]].to_string(), hi.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_parts() {
        let no_tls = inferbench_client::tls::TlsOptions::default();
        let t = ServerTokenizer::new("http://127.0.0.1:8000", "m", None, &no_tls).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8000, "/tokenize")
        );
        let t = ServerTokenizer::new("http://h/x/", "m", None, &no_tls).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("h", 80, "/x/tokenize")
        );
        let t = ServerTokenizer::new("http://[::1]", "m", None, &no_tls).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        let t = ServerTokenizer::new("http://[::1]:9000", "m", None, &no_tls).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9000));
        // https:// (issue 41): TLS on port 443 unless given; a --tls-ca that does not read is
        // named.
        let t = ServerTokenizer::new("https://h", "m", None, &no_tls).unwrap();
        assert_eq!((t.host.as_str(), t.port, t.tls.is_some()), ("h", 443, true));
        let bad_ca = inferbench_client::tls::TlsOptions {
            ca_file: Some("/nonexistent/ca.pem".into()),
            insecure: false,
        };
        let e = ServerTokenizer::new("https://h:8443", "m", None, &bad_ca)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--tokenizer server: --tls-ca /nonexistent/ca.pem: No such file or directory (os \
             error 2)"
        );
        assert!(ServerTokenizer::new("ftp://h", "m", None, &no_tls).is_err());
        assert!(ServerTokenizer::new("http://:80", "m", None, &no_tls).is_err());
        assert!(ServerTokenizer::new("http://h:99999", "m", None, &no_tls).is_err());
    }

    #[test]
    fn both_response_shapes() {
        assert_eq!(
            parse_count(br#"{"tokens":[1,2,3],"count":3,"max_model_len":8}"#).unwrap(),
            3
        );
        assert_eq!(parse_count(br#"{"tokens":[5,6]}"#).unwrap(), 2);
        assert_eq!(parse_count(br#"{"count":7}"#).unwrap(), 7);
        assert!(parse_count(br#"{"n":7}"#).is_err());
        // Issue 39's typed checks: a wrongly typed count is refused, never passed over.
        for (body, why) in [
            (
                &br#"{"count":"7","tokens":[1]}"#[..],
                r#"the /tokenize response's count is "7", not a count of tokens"#,
            ),
            (
                br#"{"count":7.0}"#,
                "the /tokenize response's count is 7.0, not a count of tokens",
            ),
            (
                br#"{"count":-1}"#,
                "the /tokenize response's count is -1, not a count of tokens",
            ),
            (
                br#"{"tokens":{"a":1}}"#,
                r#"the /tokenize response's tokens is {"a":1}, not an array"#,
            ),
        ] {
            assert_eq!(parse_count(body).unwrap_err().to_string(), why);
        }
        assert_eq!(parse_count(br#"{"count":null,"tokens":[1]}"#).unwrap(), 1);
        assert!(parse_count(b"nope").is_err());
    }
}
