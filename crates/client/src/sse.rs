//! Byte-level, incremental Server-Sent Events parser (WHATWG HTML "server-sent events" §9.2.6,
//! with two documented leniencies).
//!
//! Feed it the response body in whatever pieces the transport delivers; it yields one
//! [`SseEvent`] per blank-line-terminated event. The result never depends on where the pieces
//! were split (property-tested below): a boundary right after `data:`, inside a JSON string, or
//! between the CR and LF of a CRLF changes nothing.
//!
//! Framing handled: LF, CRLF and lone CR line endings (mixed freely); `data:` with or without the
//! single optional space; multi-line `data` (joined with `\n`); `event:`, `id:` and `retry:`
//! lines; comment lines starting with `:` (keep-alives; never yielded). The parser splits only at
//! ASCII bytes (CR, LF, `:`), so a multi-byte UTF-8 character is never cut: event data is handed
//! over as bytes and decoded once the event is complete. One leading U+FEFF (UTF-8 BOM) is
//! stripped, as the spec's UTF-8 decode step does; a BOM anywhere else is ordinary data (so a
//! second one makes the first line's field name unknown, and that line is ignored).
//!
//! Leniencies (both documented on [`SseParser::finish`]): an event with an `event:` field but no
//! `data` is still yielded (so a bare `event: error` is not lost), and at a clean end of stream a
//! final event missing its blank line is yielded rather than silently dropped.

use memchr::memchr2;

/// Largest line or event the parser buffers, in bytes (16 MiB). A longer one is an error rather
/// than unbounded memory growth; real chunks are a few hundred bytes.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// One complete SSE event. Borrowed from the parser; valid only inside the callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field; empty when absent (the spec's default type "message").
    pub event: &'a [u8],
    /// The `data` field(s), joined by `\n`, without the final line break. Raw bytes: UTF-8 is
    /// validated by the consumer on the complete event.
    pub data: &'a [u8],
}

/// Parser error: the stream cannot be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line or event grew beyond the parser's limit ([`MAX_EVENT_BYTES`], or the one given
    /// to [`SseParser::with_limit`]), bytes.
    #[error("SSE line or event longer than {0} bytes")]
    TooLong(usize),
}

/// Incremental SSE parser. Reuse one per response; it keeps its buffers between events, so the
/// steady state allocates nothing. Memory: the longest line plus the longest event seen.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unterminated line carried over from the previous piece.
    line: Vec<u8>,
    /// Data of the event being assembled (lines joined by `\n`).
    data: Vec<u8>,
    /// `event:` field of the event being assembled.
    event: Vec<u8>,
    /// True once a `data` field was seen for the event being assembled (it may be empty).
    has_data: bool,
    /// The previous piece ended with CR: an LF at the start of the next piece completes a CRLF.
    skip_lf: bool,
    /// Comment lines seen (keep-alives), for diagnostics.
    comments: u64,
    /// How many bytes of a leading UTF-8 BOM (`EF BB BF`) matched so far; [`BOM_DONE`] once the
    /// start of the stream has been decided (BOM stripped or absent).
    bom: u8,
    /// The longest line or event buffered, bytes; 0: [`MAX_EVENT_BYTES`].
    limit: usize,
}

/// Buffer capacity kept between events, bytes (16 KiB, each of the line and data buffers): a
/// buffer that grew beyond it for one large event is shrunk back after it, so the largest
/// event's bytes are held only while it lasts.
pub const KEEP_CAPACITY: usize = 16 << 10;

/// Appends `add` to `buf`, growing its capacity at most to `limit` bytes (never the doubling
/// past it that `extend_from_slice` may take): a buffer never holds more than its limit.
fn extend_within(buf: &mut Vec<u8>, add: &[u8], limit: usize) {
    let need = buf.len() + add.len();
    if need > buf.capacity() {
        let want = (buf.capacity() * 2).max(need).min(limit.max(need));
        buf.reserve_exact(want - buf.len());
    }
    buf.extend_from_slice(add);
}

/// The UTF-8 encoding of U+FEFF.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
/// [`SseParser::bom`] once the stream's start is decided.
const BOM_DONE: u8 = u8::MAX;

impl SseParser {
    /// A fresh parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh parser that holds at most `limit` bytes of one line or event (a longer one is
    /// [`SseError::TooLong`]); the client's per-request cap, `inferbench_client::kept::held_bytes`.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit: limit.clamp(1, MAX_EVENT_BYTES),
            ..Self::default()
        }
    }

    /// The longest line or event this parser buffers, bytes.
    pub fn limit(&self) -> usize {
        if self.limit == 0 {
            MAX_EVENT_BYTES
        } else {
            self.limit
        }
    }

    /// Bytes of the unfinished line and event buffered now.
    pub fn pending_bytes(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// Comment lines (`: …`) seen so far; they never become events.
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// True when bytes of an unfinished line or event are buffered.
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty()
            || self.has_data
            || !self.event.is_empty()
            || (self.bom != 0 && self.bom != BOM_DONE)
    }

    /// Strips one leading U+FEFF (WHATWG: the decoder drops a leading BOM; a second one, or one
    /// anywhere else, is data). Works when the BOM's three bytes arrive in separate pieces: the
    /// matched prefix is held back until it is known whether it is a BOM. Returns the rest of
    /// `bytes` to parse. Called only until the start is decided (one branch per piece after).
    #[cold]
    fn strip_bom<'b>(&mut self, mut bytes: &'b [u8]) -> &'b [u8] {
        while self.bom != BOM_DONE {
            let Some((&b, rest)) = bytes.split_first() else {
                return bytes;
            };
            if b == BOM[self.bom as usize] {
                bytes = rest;
                self.bom += 1;
                if self.bom as usize == BOM.len() {
                    self.bom = BOM_DONE;
                }
            } else {
                // Not a BOM: the held-back prefix is ordinary line bytes (none is CR or LF).
                self.line.extend_from_slice(&BOM[..self.bom as usize]);
                self.bom = BOM_DONE;
            }
        }
        bytes
    }

    /// Feeds the next piece of the body; calls `on_event` for every event it completes, in order.
    ///
    /// Errors: [`SseError::TooLong`] when a line or event exceeds [`SseParser::limit`]; the
    /// parser should then be discarded.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        if self.bom != BOM_DONE {
            bytes = self.strip_bom(bytes);
        }
        let limit = self.limit();
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(pos) = memchr2(b'\n', b'\r', bytes) {
            // The usual streamed event, a lone `data:` line and its blank line both in this
            // read, goes to `on_event` straight from `bytes` (issue 14: copying every event
            // into `self.data` first was a visible share of a saturated client core). The
            // same event as the general path below would build, limits included.
            if self.line.is_empty()
                && !self.has_data
                && bytes[pos] == b'\n'
                && bytes.get(pos + 1) == Some(&b'\n')
            {
                if let Some(v) = bytes[..pos].strip_prefix(b"data:") {
                    let v = v.strip_prefix(b" ").unwrap_or(v);
                    if v.len() + 1 > limit {
                        return Err(SseError::TooLong(limit));
                    }
                    on_event(SseEvent {
                        event: &self.event,
                        data: v,
                    });
                    self.event.clear();
                    bytes = &bytes[pos + 2..];
                    continue;
                }
            }
            let end = pos;
            let mut next = pos + 1;
            if bytes[pos] == b'\r' {
                if next < bytes.len() {
                    if bytes[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            if self.line.is_empty() {
                self.process_line(&bytes[..end], &mut on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                if line.len() + end > limit {
                    return Err(SseError::TooLong(limit));
                }
                extend_within(&mut line, &bytes[..end], limit);
                // A `data` line that starts an event becomes the event's data in place (no
                // second copy of a large event: the parser holds one buffer of it at a time).
                if !self.has_data && line.starts_with(b"data:") {
                    let skip = if line.get(5) == Some(&b' ') { 6 } else { 5 };
                    line.drain(..skip);
                    let mut spare = std::mem::replace(&mut self.data, line);
                    spare.clear();
                    spare.shrink_to(KEEP_CAPACITY);
                    self.line = spare;
                    self.has_data = true;
                    bytes = &bytes[next..];
                    continue;
                }
                let r = self.process_line(&line, &mut on_event);
                line.clear();
                line.shrink_to(KEEP_CAPACITY);
                self.line = line;
                r?;
            }
            bytes = &bytes[next..];
        }
        if !bytes.is_empty() {
            if self.line.len() + bytes.len() > limit {
                return Err(SseError::TooLong(limit));
            }
            extend_within(&mut self.line, bytes, limit);
        }
        Ok(())
    }

    /// Ends the stream (the body closed cleanly). Leniency: a final line without its line break
    /// is processed, and an event missing its terminating blank line is yielded instead of being
    /// dropped as the spec says. Servers that forget the last blank line thus lose no tokens.
    pub fn finish(&mut self, mut on_event: impl FnMut(SseEvent<'_>)) -> Result<(), SseError> {
        if self.bom != BOM_DONE {
            // The body ended inside what could have been a BOM: those bytes are a line.
            self.line.extend_from_slice(&BOM[..self.bom as usize]);
            self.bom = BOM_DONE;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event);
        self.skip_lf = false;
        Ok(())
    }

    fn process_line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line[0] == b':' {
            self.comments += 1;
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                let limit = self.limit();
                if self.data.len() + value.len() + 1 > limit {
                    return Err(SseError::TooLong(limit));
                }
                if self.has_data {
                    extend_within(&mut self.data, b"\n", limit);
                }
                extend_within(&mut self.data, value, limit);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            // `id` and `retry` matter for reconnecting EventSource clients only; a benchmark
            // request never reconnects. Unknown field names are ignored, as the spec says.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) {
        if self.has_data || !self.event.is_empty() {
            on_event(SseEvent {
                event: &self.event,
                data: &self.data,
            });
        }
        self.data.clear();
        self.data.shrink_to(KEEP_CAPACITY);
        self.event.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// (event, data) pairs as owned strings, for comparisons.
    fn parse_pieces(pieces: &[&[u8]], finish: bool) -> Vec<(String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| {
            out.push((
                String::from_utf8(e.event.to_vec()).unwrap(),
                String::from_utf8(e.data.to_vec()).unwrap(),
            ))
        };
        for piece in pieces {
            p.feed(piece, &mut push).unwrap();
        }
        if finish {
            p.finish(&mut push).unwrap();
        }
        out
    }

    fn ev(event: &str, data: &str) -> (String, String) {
        (event.to_string(), data.to_string())
    }

    #[test]
    fn line_endings_lf_crlf_cr_and_mixed() {
        let want = vec![ev("", "a"), ev("", "b")];
        assert_eq!(parse_pieces(&[b"data: a\n\ndata: b\n\n"], false), want);
        assert_eq!(
            parse_pieces(&[b"data: a\r\n\r\ndata: b\r\n\r\n"], false),
            want
        );
        assert_eq!(parse_pieces(&[b"data: a\r\rdata: b\r\r"], false), want);
        assert_eq!(parse_pieces(&[b"data: a\r\n\ndata: b\n\r\n"], false), want);
        // CR at the end of one piece, LF at the start of the next: still one line break.
        assert_eq!(
            parse_pieces(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r", b"\n"], false),
            want
        );
    }

    #[test]
    fn data_with_and_without_space_and_only_one_space_stripped() {
        assert_eq!(
            parse_pieces(&[b"data:x\n\ndata: y\n\ndata:  z\n\n"], false),
            vec![ev("", "x"), ev("", "y"), ev("", " z")]
        );
    }

    #[test]
    fn comments_event_id_retry_and_multiline_data() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(
            b": ping\n\n:\n\nevent: error\nid: 7\nretry: 10\ndata: {\"a\":\ndata: 1}\nbogus\n\n",
            |e| out.push((e.event.to_vec(), e.data.to_vec())),
        )
        .unwrap();
        assert_eq!(out, vec![(b"error".to_vec(), b"{\"a\":\n1}".to_vec())]);
        assert_eq!(p.comments(), 2);
    }

    #[test]
    fn bare_event_without_data_is_yielded_but_empty_block_is_not() {
        assert_eq!(
            parse_pieces(&[b"\n\nid: 3\n\nevent: error\n\n"], false),
            vec![ev("error", "")]
        );
    }

    #[test]
    fn finish_flushes_a_final_event_without_blank_line() {
        assert_eq!(
            parse_pieces(&[b"data: a\n\ndata: b"], false),
            vec![ev("", "a")]
        );
        assert_eq!(
            parse_pieces(&[b"data: a\n\ndata: b"], true),
            vec![ev("", "a"), ev("", "b")]
        );
        assert_eq!(
            parse_pieces(&[b"data: a\n\ndata: b\n"], true),
            vec![ev("", "a"), ev("", "b")]
        );
    }

    #[test]
    fn utf8_split_inside_a_character_is_reassembled() {
        let s = "data: caf\u{e9} \u{6f22}\u{5b57} \u{1f680}\n\n".as_bytes();
        for i in 0..s.len() {
            assert_eq!(
                parse_pieces(&[&s[..i], &s[i..]], false),
                vec![ev("", "caf\u{e9} \u{6f22}\u{5b57} \u{1f680}")],
                "split at {i}"
            );
        }
    }

    #[test]
    fn one_leading_bom_is_stripped_wherever_the_pieces_split() {
        let s = b"\xEF\xBB\xBFdata: a\n\ndata: b\n\n";
        let want = vec![ev("", "a"), ev("", "b")];
        for i in 0..s.len() {
            for j in i..s.len() {
                assert_eq!(
                    parse_pieces(&[&s[..i], &s[i..j], &s[j..]], true),
                    want,
                    "split at {i}, {j}"
                );
            }
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(parse_pieces(&bytes, true), want);
    }

    #[test]
    fn other_bom_placements_are_data() {
        // A second leading BOM is part of the first field name: unknown field, line ignored.
        assert_eq!(
            parse_pieces(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n"], true),
            vec![ev("", "b")]
        );
        // A BOM after the first event, or inside data, is kept.
        assert_eq!(
            parse_pieces(
                &[b"data: a\n\n\xEF\xBB\xBFdata: b\n\ndata: \xEF\xBB\xBFc\n\n"],
                true
            ),
            vec![ev("", "a"), ev("", "\u{feff}c")]
        );
        // A partial BOM prefix followed by something else is ordinary bytes, split or not.
        let mut out = Vec::new();
        let mut p = SseParser::new();
        for piece in [&b"\xEF"[..], b"\xBB", b"x: 1\ndata: y\n\n"] {
            p.feed(piece, |e| out.push(e.data.to_vec())).unwrap();
        }
        assert_eq!(out, vec![b"y".to_vec()]);
        // The body ends inside a BOM prefix: nothing is yielded, nothing panics.
        assert_eq!(parse_pieces(&[b"\xEF\xBB"], true), vec![]);
        let mut p = SseParser::new();
        p.feed(b"\xEF", |_| {}).unwrap();
        assert!(p.has_partial());
    }

    #[test]
    fn too_long_line_is_an_error_not_unbounded_growth() {
        let mut p = SseParser::new();
        let big = vec![b'x'; MAX_EVENT_BYTES / 2 + 1];
        p.feed(&big, |_| {}).unwrap();
        assert_eq!(
            p.feed(&big, |_| {}),
            Err(SseError::TooLong(MAX_EVENT_BYTES))
        );
    }

    /// Splits `s` at the given cut points (sorted, deduplicated, clamped).
    fn split_at<'a>(s: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (s.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut out = Vec::new();
        let mut prev = 0;
        for c in cuts {
            out.push(&s[prev..c]);
            prev = c;
        }
        out.push(&s[prev..]);
        out
    }

    fn arb_stream() -> impl Strategy<Value = Vec<u8>> {
        let line_end = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
        let field = prop_oneof![
            "[ -~]{0,12}".prop_map(|v| format!("data: {v}")),
            "[ -~]{0,12}".prop_map(|v| format!("data:{v}")),
            "(é|漢|🚀|a){0,4}".prop_map(|v| format!("data: {v}")),
            Just("event: error".to_string()),
            Just(": keep-alive".to_string()),
            Just("id: 1".to_string()),
            Just(String::new()),
        ];
        (
            any::<bool>(),
            prop::collection::vec((field, line_end), 0..24),
        )
            .prop_map(|(bom, v)| {
                let mut s = if bom {
                    "\u{feff}".to_string()
                } else {
                    String::new()
                };
                for (f, e) in v {
                    s.push_str(&f);
                    s.push_str(e);
                }
                s.into_bytes()
            })
    }

    proptest! {
        /// Any split of a stream into pieces yields exactly the events of the unsplit stream.
        #[test]
        fn any_split_gives_the_same_events(
            s in arb_stream(),
            cuts in prop::collection::vec(0usize..10_000, 0..12),
        ) {
            let whole = parse_pieces(&[&s], true);
            let pieces = split_at(&s, &cuts);
            prop_assert_eq!(parse_pieces(&pieces, true), whole);
        }

        /// Arbitrary bytes never panic, whatever the split.
        #[test]
        fn arbitrary_bytes_never_panic(
            s in prop::collection::vec(any::<u8>(), 0..512),
            cuts in prop::collection::vec(0usize..1_000, 0..8),
        ) {
            let mut p = SseParser::new();
            let mut n = 0usize;
            for piece in split_at(&s, &cuts) {
                p.feed(piece, |e| n += e.data.len()).unwrap();
            }
            p.finish(|e| n += e.data.len()).unwrap();
        }
    }
}
