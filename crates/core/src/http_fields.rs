//! Request header fields the client writes itself, and which of them a user may set: the one
//! rule for `--header`, `--header-template` / `--dp-rank-roundrobin` and a dataset line's
//! `extra_headers` (issue 39, fresh tester's finding 4: a dataset's `Content-Length`,
//! `Transfer-Encoding` or `Host` was sent, and the server's HTTP 400s were counted against it).

/// Fields that frame the message or manage the connection hop by hop: the client writes every
/// request's `Content-Length` and keeps its connections itself, so none of these is ever a
/// user's (RFC 9110 §7.6.1's connection options and RFC 9112's framing fields).
pub const FRAMING_FIELDS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "keep-alive",
    "proxy-connection",
];

/// Fields a user may set once for every request (`--header`) but never per request: `Host`
/// (`--header Host: NAME` replaces the `--base-url`'s authority) and `Connection`
/// (`--header 'Connection: close'` closes every connection after its response). Per request
/// (a template, a dataset line) the first would be a second `Host` line and the second would
/// close a connection the pool means to reuse.
pub const RUN_WIDE_FIELDS: &[&str] = &["host", "connection"];

/// Why the header `name` may not be set by a user, or `None` when it may: always for
/// [`FRAMING_FIELDS`]; for [`RUN_WIDE_FIELDS`] when `per_request` (a `--header-template` or a
/// dataset's `extra_headers`). The name is compared case-insensitively, surrounding whitespace
/// ignored.
pub fn header_refusal(name: &str, per_request: bool) -> Option<String> {
    let lower = name.trim().to_ascii_lowercase();
    if FRAMING_FIELDS.contains(&lower.as_str()) {
        return Some(format!(
            "{} is a framing or connection field the client writes itself; it cannot be set",
            name.trim()
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
    use super::header_refusal;

    /// Framing fields are refused everywhere, `Host` and `Connection` only per request, any
    /// other name nowhere.
    #[test]
    fn framing_fields_everywhere_run_wide_fields_per_request() {
        for n in [
            "Content-Length",
            " transfer-encoding",
            "TE",
            "Expect",
            "Keep-Alive",
        ] {
            assert!(header_refusal(n, false).is_some(), "{n}");
            assert!(header_refusal(n, true).is_some(), "{n}");
        }
        for n in ["Host", "connection"] {
            assert_eq!(header_refusal(n, false), None, "{n}");
            assert_eq!(
                header_refusal(n, true),
                Some(format!(
                    "{n} cannot be set per request (give it once for every request with --header)"
                ))
            );
        }
        assert_eq!(
            header_refusal("Content-Length", true).as_deref(),
            Some("Content-Length is a framing or connection field the client writes itself; it cannot be set")
        );
        for n in [
            "X-Tenant",
            "Authorization",
            "X-data-parallel-rank",
            "User-Agent",
        ] {
            assert_eq!(header_refusal(n, true), None, "{n}");
        }
    }
}
