//! Request header fields the client writes itself, and which of them a user may set: the one
//! rule for `--header`, `--header-template` / `--dp-rank-roundrobin` and a dataset line's
//! `extra_headers` (issue 39, fresh tester's finding 4: a dataset's `Content-Length`,
//! `Transfer-Encoding` or `Host` was sent, and the server's HTTP 400s were counted against it).

/// Fields that frame the message, describe its body's encoding, or manage the connection hop
/// by hop: the client writes every request's `Content-Length`, sends its JSON body unencoded
/// and keeps its connections itself, so none of these is ever a user's, run-wide or per
/// request (RFC 9110 §7.6.1's connection options `Connection`, `Keep-Alive`,
/// `Proxy-Connection`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`; RFC 9112's framing
/// `Content-Length`; `Expect`; and `Content-Encoding`, which would say the body is compressed
/// when it is not). f14 item 4: `--header 'Connection: close'` and `Content-Encoding: gzip`
/// were sent as given.
pub const FRAMING_FIELDS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "connection",
    "keep-alive",
    "proxy-connection",
    "content-encoding",
];

/// Fields a user may set once for every request (`--header`) but never per request: `Host`
/// (`--header Host: NAME` replaces the `--base-url`'s authority) and `Content-Type` with a
/// JSON media type (`application/json; charset=utf-8` replaces the client's
/// `application/json`). Per request (a template, a dataset line) either would be a second
/// line beside the client's own.
pub const RUN_WIDE_FIELDS: &[&str] = &["host", "content-type"];

/// Whether `value` is a JSON media type (`application/json`, `application/vnd.x+json`,
/// parameters allowed, case-insensitive): what the body the client sends is.
pub fn is_json_media_type(value: &str) -> bool {
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|sub| sub.len() > "+json".len() && sub.ends_with("+json"))
}

/// Why the header `name: value` may not be set by a user, or `None` when it may: always for
/// [`FRAMING_FIELDS`]; for [`RUN_WIDE_FIELDS`] when `per_request` (a `--header-template` or a
/// dataset's `extra_headers`); and a `Content-Type` that is no JSON media type
/// ([`is_json_media_type`]) anywhere, since the body is JSON. The name is compared
/// case-insensitively, surrounding whitespace ignored.
pub fn header_refusal(name: &str, value: &str, per_request: bool) -> Option<String> {
    let lower = name.trim().to_ascii_lowercase();
    if FRAMING_FIELDS.contains(&lower.as_str()) {
        return Some(format!(
            "{} is a framing, body-encoding or connection field the client writes itself; it \
             cannot be set",
            name.trim()
        ));
    }
    if lower == "content-type" && !is_json_media_type(value) {
        return Some(format!(
            "{}: {:?} would misdescribe the body: the client sends JSON (only a JSON media type, \
             given once with --header, may replace its application/json)",
            name.trim(),
            value.trim()
        ));
    }
    if per_request && RUN_WIDE_FIELDS.contains(&lower.as_str()) {
        return Some(format!(
            "{} cannot be set per request (give it once for every request with --header)",
            name.trim()
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{header_refusal, is_json_media_type};

    /// Framing, body-encoding and hop-by-hop fields are refused everywhere, `Host` and a JSON
    /// `Content-Type` only per request, a `Content-Type` that is not JSON everywhere, any other
    /// name nowhere (f14 item 4: `Connection`, `Content-Encoding` and `Content-Type:
    /// text/plain` were sent as given).
    #[test]
    fn framing_fields_everywhere_run_wide_fields_per_request() {
        for n in [
            "Content-Length",
            " transfer-encoding",
            "TE",
            "Trailer",
            "Upgrade",
            "Expect",
            "Keep-Alive",
            "Proxy-Connection",
            "Connection",
            "Content-Encoding",
        ] {
            assert!(header_refusal(n, "x", false).is_some(), "{n}");
            assert!(header_refusal(n, "x", true).is_some(), "{n}");
        }
        assert_eq!(
            header_refusal("Connection", "close", false).as_deref(),
            Some(
                "Connection is a framing, body-encoding or connection field the client writes \
                 itself; it cannot be set"
            )
        );
        for (n, v) in [
            ("Host", "api.example"),
            ("content-type", "application/json; charset=utf-8"),
            ("Content-Type", "application/vnd.api+json"),
        ] {
            assert_eq!(header_refusal(n, v, false), None, "{n}");
            assert_eq!(
                header_refusal(n, v, true),
                Some(format!(
                    "{n} cannot be set per request (give it once for every request with --header)"
                ))
            );
        }
        for per_request in [false, true] {
            assert_eq!(
                header_refusal("Content-Type", " text/plain ", per_request).as_deref(),
                Some(
                    "Content-Type: \"text/plain\" would misdescribe the body: the client sends \
                     JSON (only a JSON media type, given once with --header, may replace its \
                     application/json)"
                )
            );
        }
        for n in [
            "X-Tenant",
            "Authorization",
            "X-data-parallel-rank",
            "User-Agent",
        ] {
            assert_eq!(header_refusal(n, "v", true), None, "{n}");
        }
    }

    #[test]
    fn json_media_types() {
        for v in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/problem+json",
        ] {
            assert!(is_json_media_type(v), "{v}");
        }
        for v in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/+json",
            "json",
            "",
        ] {
            assert!(!is_json_media_type(v), "{v}");
        }
    }
}
