//! HTTP/1.1 framing of the measured request path (issue 14, "client ceiling"): the response
//! head (parsed with `httparse`) and the body's framing (`Content-Length`, chunked with
//! extensions and trailers, close-delimited, none), decoded in place so that body bytes reach
//! the SSE parser as slices of the connection's own read buffer: no allocation and no channel
//! hop per event (hyper's body path cost ≈ 20 % of a saturated client core, one `Bytes` and one
//! channel message per SSE event, because streaming servers write each event as one chunk).
//!
//! Limits (errors, never panics): a response head over [`HEAD_MAX`] bytes or with more than
//! [`MAX_HEADERS`] fields, a chunk-size line over [`CHUNK_LINE_MAX`] bytes, trailers over
//! [`TRAILERS_MAX`] bytes, chunk sizes and `Content-Length` values that do not fit in a `u64`.

/// Largest response head accepted, in bytes (status line, fields and the blank line), interim
/// `1xx` heads included while they are buffered: 16 KiB, the connection's largest read buffer.
pub const HEAD_MAX: usize = 16 * 1024;

/// Most header fields in one response head.
pub const MAX_HEADERS: usize = 100;

/// Longest chunk-size line (size, extensions, line end), in bytes.
pub const CHUNK_LINE_MAX: usize = 4096;

/// Most bytes of trailer fields after the last chunk.
pub const TRAILERS_MAX: usize = 16 * 1024;

/// How a response body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body: `1xx`, `204`, `304`.
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the connection.
    CloseDelimited,
}

/// What the client needs of a final response head.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// Status code (100–999).
    pub status: u16,
    /// The connection may carry another request after this response's body (HTTP/1.1
    /// without `Connection: close`, HTTP/1.0 with `Connection: keep-alive`, a delimited body).
    pub keep_alive: bool,
    /// How the body ends.
    pub framing: Framing,
    /// The first `Content-Type` is `text/event-stream` ([`is_event_stream`]).
    pub labelled_sse: bool,
    /// `Content-Encoding` codings other than `identity`, lower-cased, in order.
    pub codings: Vec<String>,
    /// An `inferbench-sim-time-scale` header's value: the server is `inferbench sim` running
    /// this many modelled seconds per wall-clock second (sent only when not 1).
    pub sim_time_scale: Option<f64>,
}

/// One step of [`parse_head`].
#[derive(Debug, PartialEq)]
pub enum HeadParse {
    /// The head is not complete yet: read more.
    Partial,
    /// An interim `1xx` response (not `101`) of this many bytes: skip it, the final response
    /// follows.
    Interim(usize),
    /// The final response head and its length in bytes (the body starts there).
    Final(Head, usize),
}

/// Parses the response head at the start of `buf`. Errors (a message): not an HTTP/1.x
/// response head, over [`HEAD_MAX`] bytes or [`MAX_HEADERS`] fields, a status below 100, an
/// invalid or conflicting `Content-Length`, `Transfer-Encoding` in an HTTP/1.0 response.
/// `Transfer-Encoding` with `Content-Length`: the former frames the body, and the connection
/// is not kept alive.
pub fn parse_head(buf: &[u8]) -> Result<HeadParse, String> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut fields);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= HEAD_MAX => {
            return Err(format!("response head over {HEAD_MAX} bytes"));
        }
        Ok(httparse::Status::Partial) => return Ok(HeadParse::Partial),
        Err(e) => return Err(format!("invalid response head: {e}")),
    };
    if len > HEAD_MAX {
        return Err(format!("response head over {HEAD_MAX} bytes"));
    }
    let status = resp.code.unwrap_or(0);
    if status < 100 {
        return Err(format!("invalid response head: status code {status}"));
    }
    if (100..200).contains(&status) && status != 101 {
        return Ok(HeadParse::Interim(len));
    }
    let http11 = resp.version == Some(1);
    let mut close = false;
    let mut keep_alive_token = false;
    let mut te: Option<bool> = None; // Some(chunked is the final coding)
    let mut length: Option<u64> = None;
    let mut labelled_sse: Option<bool> = None;
    let mut codings = Vec::new();
    let mut sim_time_scale = None;
    for f in resp.headers.iter() {
        let name = f.name.as_bytes();
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let last = f
                .value
                .split(|&b| b == b',')
                .map(<[u8]>::trim_ascii)
                .rfind(|t| !t.is_empty());
            let chunked = last.is_some_and(|t| t.eq_ignore_ascii_case(b"chunked"));
            // Several fields form one list: the last field's last coding decides.
            if last.is_some() || te.is_none() {
                te = Some(chunked);
            }
        } else if name.eq_ignore_ascii_case(b"content-length") {
            for v in f.value.split(|&b| b == b',') {
                let n = parse_length(v.trim_ascii()).ok_or_else(|| {
                    format!(
                        "invalid Content-Length {:?}",
                        String::from_utf8_lossy(f.value)
                    )
                })?;
                if length.is_some_and(|l| l != n) {
                    return Err("conflicting Content-Length values".into());
                }
                length = Some(n);
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for t in f.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                close |= t.eq_ignore_ascii_case(b"close");
                keep_alive_token |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"content-type") {
            labelled_sse.get_or_insert_with(|| is_event_stream(f.value));
        } else if name.eq_ignore_ascii_case(b"inferbench-sim-time-scale") {
            sim_time_scale = std::str::from_utf8(f.value)
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|k| k.is_finite() && *k > 0.0);
        } else if name.eq_ignore_ascii_case(b"content-encoding") {
            for c in String::from_utf8_lossy(f.value).split(',') {
                let c = c.trim().to_ascii_lowercase();
                if !c.is_empty() && c != "identity" {
                    codings.push(c);
                }
            }
        }
    }
    // Both: Transfer-Encoding overrides Content-Length (RFC 9112 §6.3, and hyper's reading
    // before this module), and the connection is not reused after it, since such a response may
    // be an attempt at response splitting: the body is read, nothing after it is trusted.
    let te_and_length = te.is_some() && length.is_some();
    if te.is_some() && !http11 {
        return Err("HTTP/1.0 response with Transfer-Encoding".into());
    }
    let framing = match (status, te, length) {
        (101 | 204 | 304, _, _) => Framing::Empty,
        (_, Some(true), _) => Framing::Chunked,
        (_, Some(false), _) => Framing::CloseDelimited,
        (_, None, Some(0)) => Framing::Empty,
        (_, None, Some(n)) => Framing::Length(n),
        (_, None, None) => Framing::CloseDelimited,
    };
    let keep_alive = status != 101
        && !te_and_length
        && framing != Framing::CloseDelimited
        && if http11 {
            !close
        } else {
            keep_alive_token && !close
        };
    Ok(HeadParse::Final(
        Head {
            status,
            keep_alive,
            framing,
            labelled_sse: labelled_sse.unwrap_or(false),
            codings,
            sim_time_scale,
        },
        len,
    ))
}

/// A `Content-Length` value: ASCII digits only, fitting in a `u64`.
fn parse_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// True when a `Content-Type` value is `text/event-stream`: media type compared
/// case-insensitively, parameters (`; charset=utf-8`) and whitespace allowed (RFC 9110 §8.3.1).
pub fn is_event_stream(content_type: &[u8]) -> bool {
    let essence = content_type
        .split(|&b| b == b';')
        .next()
        .unwrap_or(content_type);
    essence
        .trim_ascii()
        .eq_ignore_ascii_case(b"text/event-stream")
}

/// What [`BodyDecoder::step`] found at the front of its input.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// Body bytes (a slice of the input).
    Data(&'a [u8]),
    /// The body ended; input after the consumed bytes is not part of it.
    End,
    /// Every byte was consumed without more body data: read more.
    More,
}

/// Where a chunked body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// In the chunk-size digits.
    Size,
    /// Whitespace after the size.
    SizeWs,
    /// In a chunk extension (`;name=value`).
    Ext,
    /// After the size line's `\r`.
    SizeLf,
    /// Chunk data, this many bytes left.
    Data(u64),
    /// After chunk data: its `\r`.
    DataCr,
    /// After chunk data's `\r`.
    DataLf,
    /// At the start of a trailer line (or the final blank line).
    TrailerStart,
    /// Inside a trailer field line.
    Trailer,
    /// After the final blank line's `\r`.
    EndLf,
}

/// Decodes one body's framing incrementally, over input split anywhere.
#[derive(Debug)]
pub struct BodyDecoder {
    state: State,
}

#[derive(Debug)]
enum State {
    /// Bytes of a `Content-Length` body left.
    Length(u64),
    /// A chunked body: the state, the size being read, its digits, the bytes of the current
    /// size line and of the trailers so far.
    Chunked {
        at: Chunk,
        size: u64,
        digits: u32,
        line: usize,
        trailers: usize,
    },
    /// Until EOF.
    Close,
    /// The body has ended.
    Done,
}

impl BodyDecoder {
    /// A decoder for a body framed as `framing`.
    pub fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Chunked {
                at: Chunk::Size,
                size: 0,
                digits: 0,
                line: 0,
                trailers: 0,
            },
            Framing::CloseDelimited => State::Close,
        };
        Self { state }
    }

    /// True once the body has ended (its last byte decoded).
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// Decodes from the front of `input`: the bytes consumed and what they held. Call again
    /// with the rest until it returns [`Step::More`] or [`Step::End`]. Errors (a message):
    /// a chunk-size line that is not hex (or is over [`CHUNK_LINE_MAX`] bytes), a chunk size
    /// over `u64`, chunk data not followed by its line end, trailers over [`TRAILERS_MAX`].
    pub fn step<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Step<'a>), String> {
        match &mut self.state {
            State::Done => Ok((0, Step::End)),
            State::Close if input.is_empty() => Ok((0, Step::More)),
            State::Close => Ok((input.len(), Step::Data(input))),
            State::Length(left) => {
                if input.is_empty() {
                    return Ok((0, Step::More));
                }
                let n = input
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= n as u64;
                if *left == 0 {
                    self.state = State::Done;
                }
                Ok((n, Step::Data(&input[..n])))
            }
            State::Chunked { .. } => self.step_chunked(input),
        }
    }

    fn step_chunked<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Step<'a>), String> {
        let State::Chunked {
            at,
            size,
            digits,
            line,
            trailers,
        } = &mut self.state
        else {
            return Ok((0, Step::More));
        };
        let mut i = 0;
        while i < input.len() {
            if let Chunk::Data(left) = *at {
                let n = (input.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                let rest = left - n as u64;
                *at = if rest == 0 {
                    Chunk::DataCr
                } else {
                    Chunk::Data(rest)
                };
                return Ok((i + n, Step::Data(&input[i..i + n])));
            }
            let b = input[i];
            i += 1;
            match *at {
                Chunk::Size | Chunk::SizeWs | Chunk::Ext | Chunk::SizeLf => {
                    *line += 1;
                    if *line > CHUNK_LINE_MAX {
                        return Err(format!("chunk-size line over {CHUNK_LINE_MAX} bytes"));
                    }
                }
                _ => {}
            }
            let size_line_end = match (*at, b) {
                (Chunk::Size, _) if b.is_ascii_hexdigit() => {
                    let d = u64::from((b as char).to_digit(16).unwrap_or(0));
                    *size = size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(d))
                        .ok_or("chunk size over 2^64 bytes")?;
                    *digits += 1;
                    false
                }
                (Chunk::Size | Chunk::SizeWs, b' ' | b'\t') if *digits > 0 => {
                    *at = Chunk::SizeWs;
                    false
                }
                (Chunk::Size | Chunk::SizeWs, b';') if *digits > 0 => {
                    *at = Chunk::Ext;
                    false
                }
                (Chunk::Size | Chunk::SizeWs | Chunk::Ext, b'\r') if *digits > 0 => {
                    *at = Chunk::SizeLf;
                    false
                }
                (Chunk::Size | Chunk::SizeWs | Chunk::Ext | Chunk::SizeLf, b'\n')
                    if *digits > 0 =>
                {
                    true
                }
                (Chunk::Ext, _) => false,
                (Chunk::Size | Chunk::SizeWs | Chunk::SizeLf, _) => {
                    return Err(format!(
                        "invalid chunk-size line (byte {:?})",
                        char::from(b).escape_default().to_string()
                    ));
                }
                (Chunk::DataCr, b'\r') => {
                    *at = Chunk::DataLf;
                    false
                }
                (Chunk::DataCr | Chunk::DataLf, b'\n') => {
                    *at = Chunk::Size;
                    false
                }
                (Chunk::DataCr | Chunk::DataLf, _) => {
                    return Err("chunk data not followed by a line end".into());
                }
                (Chunk::TrailerStart, b'\r') => {
                    *at = Chunk::EndLf;
                    false
                }
                (Chunk::TrailerStart | Chunk::EndLf, b'\n') => {
                    self.state = State::Done;
                    return Ok((i, Step::End));
                }
                (Chunk::EndLf, _) => {
                    return Err("invalid line end after the last chunk".into());
                }
                (Chunk::TrailerStart | Chunk::Trailer, _) => {
                    *trailers += 1;
                    if *trailers > TRAILERS_MAX {
                        return Err(format!("trailers over {TRAILERS_MAX} bytes"));
                    }
                    *at = if b == b'\n' {
                        Chunk::TrailerStart
                    } else {
                        Chunk::Trailer
                    };
                    false
                }
                (Chunk::Data(_), _) => false,
            };
            if size_line_end {
                *at = if *size == 0 {
                    Chunk::TrailerStart
                } else {
                    Chunk::Data(*size)
                };
                *size = 0;
                *digits = 0;
                *line = 0;
            }
        }
        Ok((i, Step::More))
    }

    /// The connection ended (EOF) here: `Ok` when that ends the body (close-delimited, or
    /// already done), else why the body is incomplete.
    pub fn at_eof(&self) -> Result<(), String> {
        match &self.state {
            State::Done | State::Close => Ok(()),
            State::Length(left) => Err(format!(
                "connection closed before the body ended ({left} bytes of Content-Length missing)"
            )),
            State::Chunked { .. } => Err("connection closed before the chunked body ended".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Result<HeadParse, String> {
        parse_head(s.as_bytes())
    }

    fn final_head(s: &str) -> Head {
        match head(s) {
            Ok(HeadParse::Final(h, n)) => {
                assert_eq!(n, s.len());
                h
            }
            other => panic!("{s:?}: {other:?}"),
        }
    }

    /// Decodes `wire` fed in pieces of `piece` bytes: the body and whether it ended.
    fn decode(framing: Framing, wire: &[u8], piece: usize) -> Result<(Vec<u8>, bool), String> {
        let mut d = BodyDecoder::new(framing);
        let mut out = Vec::new();
        for part in wire.chunks(piece.max(1)) {
            let mut rest = part;
            loop {
                let (n, step) = d.step(rest)?;
                let data = match step {
                    Step::Data(x) => x.to_vec(),
                    Step::End => return Ok((out, true)),
                    Step::More => break,
                };
                out.extend_from_slice(&data);
                rest = &rest[n..];
            }
        }
        let ended = d.is_done();
        Ok((out, ended))
    }

    #[test]
    fn heads_and_their_framing() {
        let h = final_head("HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream; charset=utf-8\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(h.status, 200);
        assert_eq!(h.framing, Framing::Chunked);
        assert!(h.keep_alive && h.labelled_sse);
        let h = final_head("HTTP/1.1 200 OK\r\ncontent-length: 12\r\nConnection: close\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(12));
        assert!(!h.keep_alive && !h.labelled_sse);
        let h = final_head("HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!(h.framing, Framing::CloseDelimited);
        assert!(!h.keep_alive);
        let h =
            final_head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\n");
        assert!(h.keep_alive);
        let h = final_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
        assert_eq!(h.framing, Framing::CloseDelimited);
        assert!(!h.keep_alive);
        for s in ["204 No Content", "304 Not Modified"] {
            let h = final_head(&format!("HTTP/1.1 {s}\r\nContent-Length: 5\r\n\r\n"));
            assert_eq!(h.framing, Framing::Empty);
            assert!(h.keep_alive);
        }
        let h = final_head("HTTP/1.1 101 Switching\r\nUpgrade: x\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Empty, false));
        let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\nContent-Length: 7\r\nContent-Encoding: identity, GZIP\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(7));
        assert_eq!(h.codings, vec!["gzip".to_string()]);
        assert_eq!(h.sim_time_scale, None);
        // The sim's time scale (trial 33 F2); a value that is not a positive number is none.
        let h = final_head("HTTP/1.1 200 OK\r\nInferbench-Sim-Time-Scale: 10\r\n\r\n");
        assert_eq!(h.sim_time_scale, Some(10.0));
        let h = final_head("HTTP/1.1 200 OK\r\ninferbench-sim-time-scale: -2\r\n\r\n");
        assert_eq!(h.sim_time_scale, None);
        assert_eq!(
            head("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"),
            Ok(HeadParse::Interim(25))
        );
        assert_eq!(
            head("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"),
            Ok(HeadParse::Interim(40))
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Le"),
            Ok(HeadParse::Partial)
        );
        assert_eq!(head(""), Ok(HeadParse::Partial));
    }

    #[test]
    fn bad_heads_are_refused() {
        // Transfer-Encoding frames the body, and the connection is not reused (RFC 9112 §6.3).
        let both = final_head(
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!((both.framing, both.keep_alive), (Framing::Chunked, false));
        for bad in [
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "HTTP/1.1 099 Low\r\n\r\n",
            "SSH-2.0-OpenSSH\r\n\r\n",
            "\x16\x03\x01\x02\x00\x01\x00\x01\x7f",
        ] {
            assert!(head(bad).is_err(), "{bad:?}");
        }
        let big = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(HEAD_MAX));
        assert!(head(&big).unwrap_err().contains("over"));
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X{i}: 1\r\n")).collect();
        assert!(head(&format!("HTTP/1.1 200 OK\r\n{many}\r\n")).is_err());
    }

    #[test]
    fn chunked_bodies_split_anywhere() {
        let wire = b"5;name=\"v\"\r\nhello\r\n1 \t\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\nNEXT";
        for piece in 1..=wire.len() {
            let (body, ended) = decode(Framing::Chunked, wire, piece).unwrap();
            assert_eq!(body, b"hello 0123456789", "piece {piece}");
            assert!(ended);
        }
        // Bare LF line ends are accepted; without trailers.
        let (body, ended) = decode(Framing::Chunked, b"3\nabc\n0\n\n", 2).unwrap();
        assert_eq!((body.as_slice(), ended), (&b"abc"[..], true));
        // The end is reported with the bytes after it left unconsumed.
        let mut d = BodyDecoder::new(Framing::Chunked);
        let input = b"0\r\n\r\nHTTP/1.1";
        assert_eq!(d.step(input), Ok((5, Step::End)));
        assert!(d.is_done() && d.at_eof().is_ok());
        // Incomplete at EOF.
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert_eq!(d.step(b"5\r\nhe"), Ok((5, Step::Data(b"he"))));
        assert_eq!(d.step(b""), Ok((0, Step::More)));
        assert!(d.at_eof().is_err());
    }

    #[test]
    fn bad_chunking_is_an_error() {
        for bad in [
            &b"zz\r\nab\r\n"[..],
            b"\r\n",
            b";ext\r\n",
            b" 5\r\n",
            b"5 x\r\n",
            b"5\rx",
            b"2\r\nabc\r\n",
            b"2\r\nab\rx",
            b"11111111111111111\r\n",
            b"0\r\n\rx",
        ] {
            assert!(decode(Framing::Chunked, bad, 1).is_err(), "{bad:?}");
            assert!(decode(Framing::Chunked, bad, 64).is_err(), "{bad:?}");
        }
        // The largest size that fits is fine (data just never completes).
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert_eq!(d.step(b"ffffffffffffffff\r\n"), Ok((18, Step::More)));
        let long = format!("1;{}\r\n", "e".repeat(CHUNK_LINE_MAX));
        assert!(decode(Framing::Chunked, long.as_bytes(), 100)
            .unwrap_err()
            .contains("over"));
        let trailers = format!("0\r\n{}", "t: 1\r\n".repeat(TRAILERS_MAX / 4));
        assert!(decode(Framing::Chunked, trailers.as_bytes(), 1000)
            .unwrap_err()
            .contains("trailers"));
    }

    #[test]
    fn length_close_and_empty_bodies() {
        let (body, ended) = decode(Framing::Length(5), b"helloEXTRA", 3).unwrap();
        assert_eq!((body.as_slice(), ended), (&b"hello"[..], true));
        let mut d = BodyDecoder::new(Framing::Length(5));
        assert_eq!(d.step(b"hel"), Ok((3, Step::Data(b"hel"))));
        assert!(d.at_eof().unwrap_err().contains("2 bytes"));
        let (body, ended) = decode(Framing::CloseDelimited, b"all of it", 4).unwrap();
        assert_eq!((body.as_slice(), ended), (&b"all of it"[..], false));
        assert!(BodyDecoder::new(Framing::CloseDelimited).at_eof().is_ok());
        let mut d = BodyDecoder::new(Framing::Empty);
        assert!(d.is_done());
        assert_eq!(d.step(b"x"), Ok((0, Step::End)));
    }
}
