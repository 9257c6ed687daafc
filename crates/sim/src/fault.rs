//! Fault injection: what a request should suffer, from `--fault` (with `--fault-rate`) or the
//! per-request `x-sim-fault` header.
//!
//! Syntax (header value and flag alike): comma-separated items, each `name` or `name=value`:
//!
//! | item | effect (what the client sees) |
//! |---|---|
//! | `status=503` or `status=500/503/429` | that HTTP status (one drawn per request from the list) with an OpenAI-style JSON error body; nothing is generated |
//! | `drop-after=N` | N SSE events, then the connection closes without the terminating chunk (non-streaming: it closes without any response) |
//! | `error-after=N` | N events, then `data: {"error": {...}}` (code 500) and `data: [DONE]`: the stream ends cleanly but failed, as vLLM reports an engine error mid-stream (non-streaming: HTTP 500 after generating) |
//! | `malformed-after=N` | N events, then one `data:` line whose JSON is cut short, then the stream goes on |
//! | `stall-after=N` | N events, then silence for `stall-ms` (default: forever) |
//! | `stall-ms=MS` | stall length for `stall-after`, milliseconds |
//! | `first-byte-ms=MS` | the response head is delayed MS milliseconds |
//! | `crlf` | SSE lines end in CRLF (`\r\n\r\n` between events) |
//! | `keepalive` | a `: keep-alive` comment before every event |
//! | `keepalive-ms=MS` | a `: keep-alive` comment whenever MS milliseconds pass with nothing sent (during a queue wait or a stall too) |
//! | `no-usage` | no `usage` anywhere, even when `stream_options.include_usage` asks for it |
//!
//! Events count every `data:` event (the chat role event and the usage event included, comments
//! not). `drop-after=0` drops before the first event.

/// A parsed fault specification; the default is "no fault".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultSpec {
    /// Respond with one of these statuses instead of generating (empty = no error).
    pub status: Vec<u16>,
    /// Close the connection after this many events.
    pub drop_after: Option<u32>,
    /// Send one truncated JSON event after this many events.
    pub malformed_after: Option<u32>,
    /// End the stream with an error event after this many events.
    pub error_after: Option<u32>,
    /// Stop sending after this many events ...
    pub stall_after: Option<u32>,
    /// ... for this long (milliseconds; `None` = forever).
    pub stall_ms: Option<u64>,
    /// Delay of the response head, milliseconds.
    pub first_byte_ms: Option<u64>,
    /// CRLF line endings.
    pub crlf: bool,
    /// A comment before every event.
    pub keepalive: bool,
    /// A comment after this many idle milliseconds.
    pub keepalive_ms: Option<u64>,
    /// Never send `usage`.
    pub no_usage: bool,
}

/// A malformed fault specification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fault item {item:?}: {reason}")]
pub struct FaultParseError {
    /// The offending item.
    pub item: String,
    /// What is wrong.
    pub reason: String,
}

impl FaultSpec {
    /// Parses the syntax in the module doc. Empty input gives the default (no fault).
    pub fn parse(s: &str) -> Result<Self, FaultParseError> {
        let mut f = FaultSpec::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            let err = |reason: &str| FaultParseError {
                item: item.to_string(),
                reason: reason.to_string(),
            };
            let num = |v: Option<&str>| -> Result<u64, FaultParseError> {
                v.ok_or_else(|| err("needs =<number>"))?
                    .parse::<u64>()
                    .map_err(|_| err("value is not a non-negative integer"))
            };
            let count = |v: Option<&str>| -> Result<u32, FaultParseError> {
                u32::try_from(num(v)?).map_err(|_| err("value too large"))
            };
            match name {
                "status" => {
                    let v = value.ok_or_else(|| err("needs =<code>[/<code>...]"))?;
                    for c in v.split('/') {
                        let code: u16 = c
                            .trim()
                            .parse()
                            .map_err(|_| err("status is not a number"))?;
                        if !(400..=599).contains(&code) {
                            return Err(err("status must be in 400..=599"));
                        }
                        f.status.push(code);
                    }
                }
                "drop-after" => f.drop_after = Some(count(value)?),
                "malformed-after" => f.malformed_after = Some(count(value)?),
                "error-after" => f.error_after = Some(count(value)?),
                "stall-after" => f.stall_after = Some(count(value)?),
                "stall-ms" => f.stall_ms = Some(num(value)?),
                "first-byte-ms" => f.first_byte_ms = Some(num(value)?),
                "keepalive-ms" => {
                    let ms = num(value)?;
                    if ms == 0 {
                        return Err(err("must be at least 1"));
                    }
                    f.keepalive_ms = Some(ms);
                }
                "crlf" | "keepalive" | "no-usage" if value.is_some() => {
                    return Err(err("takes no value"))
                }
                "crlf" => f.crlf = true,
                "keepalive" => f.keepalive = true,
                "no-usage" => f.no_usage = true,
                _ => return Err(err(
                    "unknown (known: status, drop-after, error-after, malformed-after, stall-after, stall-ms, first-byte-ms, crlf, keepalive, keepalive-ms, no-usage)",
                )),
            }
        }
        Ok(f)
    }

    /// True when the spec does nothing.
    pub fn is_none(&self) -> bool {
        *self == FaultSpec::default()
    }
}

/// The spec in its own syntax (the module doc's), items in the table's order: what `--fault`
/// would take to do the same (`status=500/503,drop-after=3,crlf`); empty for no fault. The sim's
/// `inferbench_sim:config_info` reports it so (a point's server settings name the fault
/// compactly, not as a Rust debug string).
impl std::fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut items: Vec<String> = Vec::new();
        if !self.status.is_empty() {
            let codes: Vec<String> = self.status.iter().map(u16::to_string).collect();
            items.push(format!("status={}", codes.join("/")));
        }
        let counts = [
            ("drop-after", self.drop_after),
            ("error-after", self.error_after),
            ("malformed-after", self.malformed_after),
            ("stall-after", self.stall_after),
        ];
        items.extend((counts.iter()).filter_map(|(k, v)| v.map(|v| format!("{k}={v}"))));
        let ms = [
            ("stall-ms", self.stall_ms),
            ("first-byte-ms", self.first_byte_ms),
        ];
        items.extend((ms.iter()).filter_map(|(k, v)| v.map(|v| format!("{k}={v}"))));
        items.extend(self.crlf.then(|| "crlf".to_string()));
        items.extend(self.keepalive.then(|| "keepalive".to_string()));
        items.extend(self.keepalive_ms.map(|v| format!("keepalive-ms={v}")));
        items.extend(self.no_usage.then(|| "no-usage".to_string()));
        f.write_str(&items.join(","))
    }
}

/// Deterministic per-request random numbers: `u01(seed, request_index, salt)` in [0, 1).
pub(crate) fn u01(seed: u64, index: u64, salt: u64) -> f64 {
    let z = crate::tokenize::mix64(
        seed ^ crate::tokenize::mix64(index.wrapping_mul(0x9E37_79B9) ^ salt),
    );
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_item() {
        let f = FaultSpec::parse(
            "status=500/503, drop-after=3,malformed-after=2,stall-after=1,stall-ms=250,first-byte-ms=40,crlf,keepalive,no-usage",
        )
        .unwrap();
        assert_eq!(f.status, vec![500, 503]);
        assert_eq!(f.drop_after, Some(3));
        assert_eq!(f.malformed_after, Some(2));
        assert_eq!(f.stall_after, Some(1));
        assert_eq!(f.stall_ms, Some(250));
        assert_eq!(f.first_byte_ms, Some(40));
        assert!(f.crlf && f.keepalive && f.no_usage);
        assert!(FaultSpec::parse("").unwrap().is_none());
    }

    /// Trial of issue 39 §5 (C): the sim's settings named its fault as a Rust debug string
    /// (`FaultSpec { status: [500], … }`). It is written in `--fault`'s syntax, which parses
    /// back to the same spec.
    #[test]
    fn displays_in_its_own_syntax_and_parses_back() {
        let all = "status=500/503,drop-after=3,error-after=4,malformed-after=2,stall-after=1,\
                   stall-ms=250,first-byte-ms=40,crlf,keepalive,keepalive-ms=9,no-usage";
        let f = FaultSpec::parse(all).unwrap();
        assert_eq!(f.to_string(), all);
        assert_eq!(FaultSpec::parse(&f.to_string()).unwrap(), f);
        assert_eq!(
            FaultSpec::parse("status=500").unwrap().to_string(),
            "status=500"
        );
        assert_eq!(FaultSpec::default().to_string(), "");
    }

    #[test]
    fn rejects_bad_items_by_name() {
        let e = FaultSpec::parse("crlf,explode").unwrap_err();
        assert_eq!(e.item, "explode");
        assert!(FaultSpec::parse("status=200").is_err());
        assert!(FaultSpec::parse("drop-after=x").is_err());
        assert!(FaultSpec::parse("crlf=1").is_err());
    }

    #[test]
    fn draws_are_deterministic_and_uniformish() {
        let a: Vec<f64> = (0..1000).map(|i| u01(7, i, 1)).collect();
        let b: Vec<f64> = (0..1000).map(|i| u01(7, i, 1)).collect();
        assert_eq!(a, b);
        let mean = a.iter().sum::<f64>() / 1000.0;
        assert!((mean - 0.5).abs() < 0.05, "{mean}");
        assert!(a.iter().all(|x| (0.0..1.0).contains(x)));
    }
}
