//! Per-request headers: templates whose value depends on the request's send index
//! (`--header-template 'NAME: {i}'`, `--dp-rank-roundrobin N`), and headers a dataset line
//! names for its own request (`extra_headers`).
//!
//! The send index `i` counts every request the [`crate::Client`] sends, warmups included, from
//! 0, in the order their sends began (a re-send of the same request on a fresh connection keeps
//! its index). A request outside the load ([`crate::Client::send_unindexed`]: the replay's
//! chat-template probes) takes none and carries only the templates without `{i}`. `--dp-rank-roundrobin N` is the template `X-data-parallel-rank: {i%N}`: vLLM's
//! data-parallel rank header, bypassing its load balancer (InferenceX #2696).

use http::header::{HeaderName, HeaderValue};

use crate::http::ClientError;

/// The header vLLM reads to route a request to one data-parallel rank.
pub const DP_RANK_HEADER: &str = "X-data-parallel-rank";

/// One `NAME: VALUE` header whose value may hold the placeholders `{i}` (the send index) and
/// `{i%N}` (the send index modulo `N`, `N` ≥ 1). Any other text is sent as written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeaderTemplate {
    /// Header name.
    pub name: String,
    /// Value template.
    pub value: String,
}

impl HeaderTemplate {
    /// Parses `NAME: VALUE` (`--header-template`). Errors: no colon, an empty name, or a
    /// `{i%N}` whose `N` is not a positive integer.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (name, value) = spec
            .split_once(':')
            .ok_or_else(|| format!("{spec:?}: expected NAME: VALUE (e.g. 'X-Req: {{i}}')"))?;
        let t = HeaderTemplate {
            name: name.trim().to_string(),
            value: value.trim().to_string(),
        };
        if t.name.is_empty() {
            return Err(format!("{spec:?}: empty header name"));
        }
        parts(&t.value)?;
        Ok(t)
    }

    /// `X-data-parallel-rank: {i%n}` (`--dp-rank-roundrobin n`); `n` is at least 1.
    pub fn dp_rank(n: u64) -> Self {
        HeaderTemplate {
            name: DP_RANK_HEADER.to_string(),
            value: format!("{{i%{}}}", n.max(1)),
        }
    }

    /// Whether the value holds no `{i}` / `{i%N}`: the same on every request (also those
    /// outside the load, which take no send index). A value that does not parse is not.
    pub fn is_index_free(&self) -> bool {
        parts(&self.value).is_ok_and(|ps| ps.iter().all(|p| matches!(p, Part::Lit(_))))
    }

    /// The value for send index `i`. Errors as [`HeaderTemplate::parse`].
    pub fn render(&self, i: u64) -> Result<String, String> {
        let mut out = String::new();
        for p in parts(&self.value)? {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Index(m) => out.push_str(&m.map_or(i, |m| i % m).to_string()),
            }
        }
        Ok(out)
    }
}

enum Part<'a> {
    Lit(&'a str),
    /// The send index, modulo the value when given.
    Index(Option<u64>),
}

fn parts(value: &str) -> Result<Vec<Part<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find("{i") {
        let tail = &rest[at + 2..];
        let (part, used) = if let Some(t) = tail.strip_prefix('}') {
            (Part::Index(None), rest.len() - t.len())
        } else if let Some(t) = tail.strip_prefix('%') {
            let end = t
                .find('}')
                .ok_or_else(|| format!("{value:?}: unclosed {{i%N}}"))?;
            let n: u64 = t[..end]
                .trim()
                .parse()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("{value:?}: N in {{i%N}} must be an integer ≥ 1"))?;
            (Part::Index(Some(n)), rest.len() - t.len() + end + 1)
        } else {
            out.push(Part::Lit(&rest[..at + 2]));
            rest = tail;
            continue;
        };
        if at > 0 {
            out.push(Part::Lit(&rest[..at]));
        }
        out.push(part);
        rest = &rest[used..];
    }
    if !rest.is_empty() {
        out.push(Part::Lit(rest));
    }
    Ok(out)
}

/// Templates checked once ([`crate::Client::with_clock`]): valid names, values valid for index 0
/// (digits are always valid, so for every index).
#[derive(Debug, Clone, Default)]
pub(crate) struct Templates(Vec<(HeaderName, HeaderTemplate)>);

impl Templates {
    pub(crate) fn compile(ts: &[HeaderTemplate]) -> Result<Self, ClientError> {
        let mut out = Vec::with_capacity(ts.len());
        for t in ts {
            let bad = |reason: String| ClientError::InvalidHeader {
                name: t.name.clone(),
                reason,
            };
            let name =
                HeaderName::from_bytes(t.name.trim().as_bytes()).map_err(|e| bad(e.to_string()))?;
            let v = t.render(0).map_err(bad)?;
            if let Some(why) = inferbench_core::http_fields::header_refusal(&t.name, &v, true) {
                return Err(bad(why));
            }
            HeaderValue::from_str(&v).map_err(|e| bad(e.to_string()))?;
            out.push((name, t.clone()));
        }
        Ok(Templates(out))
    }

    /// Appends the header lines of send index `i` (`None`: a request outside the load, which
    /// gets only the templates without `{i}`), then `extra` (a request's own headers; a pair
    /// that is not a valid header is left out with a warning).
    pub(crate) fn render(&self, i: Option<u64>, extra: &[(String, String)], out: &mut Vec<u8>) {
        for (name, t) in &self.0 {
            let value = match i {
                Some(i) => t.render(i),
                None if t.is_index_free() => t.render(0),
                None => continue,
            };
            if let Ok(v) = value {
                push_line(out, name.as_str(), v.as_bytes());
            }
        }
        for (k, v) in extra {
            // Datasets refuse these at load; a request built otherwise never sends them.
            if inferbench_core::http_fields::header_refusal(k, v, true).is_some() {
                tracing::warn!("request header {k:?} is the client's own: not sent");
                continue;
            }
            match (
                HeaderName::from_bytes(k.trim().as_bytes()),
                HeaderValue::from_str(v.trim()),
            ) {
                (Ok(name), Ok(value)) => push_line(out, name.as_str(), value.as_bytes()),
                _ => tracing::warn!("request header {k:?} is not a valid HTTP header: not sent"),
            }
        }
    }
}

fn push_line(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_render_the_send_index() {
        let t = HeaderTemplate::parse("X-Req: req-{i}/{i%3}{x}{i").unwrap();
        assert_eq!(t.name, "X-Req");
        assert_eq!(t.render(7).unwrap(), "req-7/1{x}{i");
        assert_eq!(HeaderTemplate::dp_rank(4).render(6).unwrap(), "2");
        assert_eq!(HeaderTemplate::dp_rank(4).name, DP_RANK_HEADER);
        assert!(HeaderTemplate::parse("X-Req {i}").is_err());
        assert!(HeaderTemplate::parse(": {i}").is_err());
        assert!(HeaderTemplate::parse("X: {i%0}").is_err());
        assert!(HeaderTemplate::parse("X: {i%2").is_err());
        let bad = HeaderTemplate::parse("Bad Name: {i}").unwrap();
        assert!(Templates::compile(&[bad]).is_err());
    }

    #[test]
    fn rendered_lines_and_invalid_request_headers() {
        let ts = Templates::compile(&[HeaderTemplate::dp_rank(2)]).unwrap();
        let mut out = Vec::new();
        let extra = [
            ("X-Tenant".to_string(), "a".to_string()),
            ("bad name".to_string(), "b".to_string()),
            ("Content-Length".to_string(), "3".to_string()),
            ("Host".to_string(), "evil".to_string()),
            ("connection".to_string(), "close".to_string()),
        ];
        ts.render(Some(3), &extra, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "x-data-parallel-rank: 1\r\nx-tenant: a\r\n"
        );
    }

    /// Issue 39, fresh tester's finding 4: a template may not set a field the client writes
    /// itself (framing, `Host`, `Connection`: one rule with datasets' `extra_headers`).
    #[test]
    fn templates_of_the_clients_own_fields_are_refused() {
        for (spec, why) in [
            ("Content-Length: {i}", "Content-Length is a framing, body-encoding or connection field the client writes itself; it cannot be set"),
            ("Transfer-Encoding: chunked", "Transfer-Encoding is a framing, body-encoding or connection field the client writes itself; it cannot be set"),
            ("Host: h{i}", "Host cannot be set per request (give it once for every request with --header)"),
            ("Connection: close", "Connection is a framing, body-encoding or connection field the client writes itself; it cannot be set"),
            ("Content-Encoding: gzip", "Content-Encoding is a framing, body-encoding or connection field the client writes itself; it cannot be set"),
            ("Content-Type: application/json", "Content-Type cannot be set per request (give it once for every request with --header)"),
        ] {
            let t = HeaderTemplate::parse(spec).unwrap();
            match Templates::compile(&[t]) {
                Err(ClientError::InvalidHeader { reason, .. }) => assert_eq!(reason, why, "{spec}"),
                other => panic!("{spec}: {other:?}"),
            }
        }
    }

    /// A request outside the load (no send index) gets the index-free templates only.
    #[test]
    fn unindexed_requests_get_only_index_free_templates() {
        let ts = Templates::compile(&[
            HeaderTemplate::dp_rank(2),
            HeaderTemplate::parse("X-Pool: a{i}b").unwrap(),
            HeaderTemplate::parse("X-Tenant: t1").unwrap(),
        ])
        .unwrap();
        let mut out = Vec::new();
        ts.render(None, &[("X-Own".into(), "o".into())], &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "x-tenant: t1\r\nx-own: o\r\n"
        );
        assert!(HeaderTemplate::parse("X: {x}{i").unwrap().is_index_free());
        assert!(!HeaderTemplate::parse("X: {i%3}").unwrap().is_index_free());
    }
}
