//! Reading input files safely (issue 39 §3): only regular files, of a bounded size, with the
//! byte-order mark and encoding problems named precisely. Shared by the file datasets
//! (`--dataset-path`) and the AgentX trace loader (`--traces`).
//!
//! Also the documented caps every input field is bounded by, so that no value read from a file
//! can make the run allocate without bound (a trace line with `"in": 4000000000` asked the
//! prompt synthesis for 20 GB and aborted the replay mid-run).

use std::io::Read as _;
use std::path::Path;

use crate::error::WorkloadError;

/// Default cap on a prompt's or an output's length, tokens: 2^20 = 1,048,576, the longest
/// native context of any model InferenceX benchmarks (the ~1M-context families `dsv4*`,
/// `glm5.2*`, `minimaxm3*`, `kimik3*`; reference/agentx.md §1.1, whose full corpus drops
/// requests above 990,016 tokens). A trace request's `in` and `out`, a dataset line's output
/// length and a dataset prompt's token count are refused above it; `replay` raises it to the
/// model's context when `/v1/models` reports a larger `max_model_len` or `--max-model-len` is
/// larger.
pub const DEFAULT_MAX_CONTEXT_TOKENS: u32 = 1 << 20;

/// Longest prompt text of a dataset line or conversation, bytes: 16 MiB, i.e. 16 bytes per
/// token of [`DEFAULT_MAX_CONTEXT_TOKENS`] (real text averages about 4 bytes per token). A
/// longer prompt is refused at load, naming its line, before it is tokenized or sent.
pub const MAX_PROMPT_BYTES: usize = 16 << 20;

/// Largest `--dataset-path` file read, bytes: 2 GiB (ShareGPT_V3_unfiltered_cleaned_split.json,
/// the largest dataset vLLM's `bench serve` documents, is 642 MB).
pub const MAX_DATASET_FILE_BYTES: u64 = 2 << 30;

/// Largest AgentX trace file read, bytes: 8 GiB (the `062126-256k` corpus' `traces.jsonl` is
/// 569 MB, the full `062126` corpus about twice that; reference/agentx.md §1.1).
pub const MAX_TRACE_FILE_BYTES: u64 = 8 << 30;

/// Reads `path` whole if it is a regular file (after symlinks) of at most `max_bytes` bytes.
///
/// A FIFO, socket, character or block device is refused at once (without opening it: opening a
/// FIFO blocks until a writer comes), as is a directory; a file that grows past `max_bytes`
/// while it is read is refused too.
///
/// # Errors
/// [`WorkloadError::Io`] when the file cannot be read; [`WorkloadError::Parse`] (no line) naming
/// the file for a file that is not regular or is larger than `max_bytes`.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, WorkloadError> {
    let (f, len) = open_regular_file(path, max_bytes)?;
    let io = |source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut buf = Vec::new();
    // Fallible: a file within the size cap may still not fit this process's memory
    // (`ulimit -v`, issue 39 §2), which is an error, not an abort.
    reserve(&mut buf, len as usize, path)?;
    f.take(max_bytes + 1).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > max_bytes {
        return Err(too_big(path, buf.len() as u64, max_bytes));
    }
    Ok(buf)
}

/// Opens `path` for reading if it is a regular file (after symlinks) of at most `max_bytes`
/// bytes; returns the file and its size, bytes. A FIFO, socket, device or directory is refused
/// without being opened (opening a FIFO blocks until a writer comes).
///
/// # Errors
/// As [`read_regular_file`].
pub fn open_regular_file(
    path: &Path,
    max_bytes: u64,
) -> Result<(std::fs::File, u64), WorkloadError> {
    let io = |source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(WorkloadError::Parse {
            path: path.to_path_buf(),
            line: None,
            reason: format!(
                "not a regular file ({}): only regular files are read",
                file_kind(&meta)
            ),
        });
    }
    if meta.len() > max_bytes {
        return Err(too_big(path, meta.len(), max_bytes));
    }
    let f = std::fs::File::open(path).map_err(io)?;
    Ok((f, meta.len()))
}

/// The error for a file of `size` bytes above its `max_bytes` cap.
fn too_big(path: &Path, size: u64, max_bytes: u64) -> WorkloadError {
    WorkloadError::Parse {
        path: path.to_path_buf(),
        line: None,
        reason: format!(
            "{size} bytes is larger than the {max_bytes}-byte limit of this input (split it, \
             or keep the first part)"
        ),
    }
}

/// Reserves room for `more` bytes in `buf` without aborting when memory runs out.
///
/// # Errors
/// [`WorkloadError::Parse`] naming `path` and the bytes that did not fit (the address-space
/// limit `ulimit -v` or the machine's memory).
pub fn reserve(buf: &mut Vec<u8>, more: usize, path: &Path) -> Result<(), WorkloadError> {
    inferbench_core::fallible::fallible(|| buf.try_reserve(more)).map_err(|_| {
        WorkloadError::Parse {
            path: path.to_path_buf(),
            line: None,
            reason: format!(
                "{} more bytes to read it do not fit in this process's memory (`ulimit -v` or the \
             memory available): raise the limit or use a smaller file",
                more
            ),
        }
    })
}

/// A regular file read one line at a time ([`LineReader::next_line`]), so that memory holds one
/// line and what the caller keeps, never the whole file (issue 39 §2: a 1.9 GB dataset read
/// whole under `ulimit -v 1000000` aborted a `--num-prompts 2` bench). Each line is checked as
/// it is read: at most `max_line` bytes (a longer one is refused after `max_line + 1` bytes,
/// unread beyond), UTF-8 (a UTF-16 or UTF-32 byte-order mark at the start names the encoding;
/// bad bytes name the line and the file's byte offset, as [`encoding_problem`]); a leading
/// UTF-8 byte-order mark is skipped.
pub struct LineReader {
    path: std::path::PathBuf,
    reader: std::io::BufReader<std::fs::File>,
    buf: Vec<u8>,
    /// Lines read so far (the 1-based number of the last one).
    line: usize,
    /// Bytes of the file read so far.
    offset: u64,
    max_line: usize,
    max_bytes: u64,
}

impl LineReader {
    /// Opens `path` ([`open_regular_file`] with `max_bytes`) to be read in lines of at most
    /// `max_line` bytes.
    ///
    /// # Errors
    /// As [`open_regular_file`].
    /// The file's first [`HEAD_BYTES`] bytes are read before any line and checked for a
    /// UTF-16/UTF-32 encoding (a byte-order mark, or NUL bytes where that encoding puts them:
    /// [`wide_encoding_problem`]), so such a file is named at `FILE:1` instead of read as lines.
    ///
    /// # Errors
    /// As [`open_regular_file`]; [`WorkloadError::Io`] when the first read fails;
    /// [`WorkloadError::Parse`] at line 1 for a UTF-16/UTF-32 file.
    pub fn open(path: &Path, max_bytes: u64, max_line: usize) -> Result<Self, WorkloadError> {
        let (f, _) = open_regular_file(path, max_bytes)?;
        let mut r = LineReader {
            path: path.to_path_buf(),
            reader: std::io::BufReader::with_capacity(1 << 20, f),
            buf: Vec::new(),
            line: 0,
            offset: 0,
            max_line,
            max_bytes,
        };
        let head = r.head()?;
        if let Some(reason) = wide_encoding_problem(&head[..head.len().min(HEAD_BYTES)]) {
            return Err(r.refuse(1, reason));
        }
        Ok(r)
    }

    /// The bytes buffered at the start of the file (at most the reader's 1 MiB buffer, one
    /// read), without consuming them; empty once a line has been read.
    ///
    /// # Errors
    /// [`WorkloadError::Io`] when the read fails.
    pub fn head(&mut self) -> Result<&[u8], WorkloadError> {
        use std::io::BufRead as _;
        if self.offset > 0 {
            return Ok(&[]);
        }
        self.reader.fill_buf().map_err(|source| WorkloadError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Refuses a line-oriented file (JSONL) whose lines end in a carriage return alone,
    /// judged from its first buffered chunk ([`LineReader::head`]: a chunk with a CR before
    /// more text and no LF, [`line_ends_problem`]), before any line is read: read as lines, the
    /// whole file would be one line. Call it after [`LineReader::open`].
    ///
    /// # Errors
    /// [`WorkloadError::Parse`] at line 1 naming the line ends and the `tr` fix;
    /// [`WorkloadError::Io`] when the read fails.
    pub fn refuse_cr_only_line_ends(&mut self) -> Result<(), WorkloadError> {
        let head = self.head()?;
        let head = head.strip_prefix(UTF8_BOM).unwrap_or(head);
        match line_ends_problem(head) {
            Some(reason) => Err(self.refuse(1, reason)),
            None => Ok(()),
        }
    }

    /// The next line (without its `\n` or `\r\n`) and its 1-based number; `None` at the end.
    ///
    /// # Errors
    /// [`WorkloadError::Io`] when reading fails; [`WorkloadError::Parse`] naming the line for a
    /// line longer than `max_line` bytes, text that is not UTF-8 (or a UTF-16/32 file), memory
    /// that cannot hold the line, or a file that grew past `max_bytes`.
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, WorkloadError> {
        use std::io::BufRead as _;
        let start = self.offset;
        self.buf.clear();
        let mut ended = false;
        loop {
            let avail = self.reader.fill_buf().map_err(|source| WorkloadError::Io {
                path: self.path.clone(),
                source,
            })?;
            if avail.is_empty() {
                break;
            }
            let (chunk, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (&avail[..=i], true),
                None => (avail, false),
            };
            let room = (self.max_line + 2).saturating_sub(self.buf.len());
            let take = chunk.len().min(room);
            // Grown by doubling, never past the line cap, and fallibly: a line that does not
            // fit in memory is an error, not an abort.
            if self.buf.capacity() - self.buf.len() < take {
                let cap = self.max_line + 2;
                let want = (self.buf.capacity() * 2)
                    .max(self.buf.len() + take)
                    .min(cap)
                    - self.buf.len();
                let buf = &mut self.buf;
                if inferbench_core::fallible::fallible(|| buf.try_reserve_exact(want)).is_err() {
                    return Err(self.refuse(
                        self.line + 1,
                        format!(
                            "the line does not fit in this process's memory after {} bytes \
                             (`ulimit -v` or the memory available): raise the limit or split \
                             the line",
                            self.buf.len()
                        ),
                    ));
                }
            }
            self.buf.extend_from_slice(&chunk[..take]);
            let whole = take == chunk.len();
            self.reader.consume(take);
            self.offset += take as u64;
            let body = self.buf.len() - usize::from(self.buf.last() == Some(&b'\n'));
            if body > self.max_line {
                return Err(self.refuse(
                    self.line + 1,
                    format!(
                        "the line is longer than the {}-byte limit of a line of this input",
                        self.max_line
                    ),
                ));
            }
            if done && whole {
                ended = true;
                break;
            }
        }
        if self.offset > self.max_bytes {
            return Err(too_big(&self.path, self.offset, self.max_bytes));
        }
        if self.buf.is_empty() && !ended {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        let mut skip = 0;
        if self.line == 1 {
            let other_bom = [&b"\xFF\xFE"[..], b"\xFE\xFF", b"\x00\x00\xFE\xFF"]
                .iter()
                .any(|bom| self.buf.starts_with(bom));
            if let Some((_, reason)) = encoding_problem(&self.buf).filter(|_| other_bom) {
                return Err(self.refuse(1, reason));
            }
            if self.buf.starts_with(UTF8_BOM) {
                skip = UTF8_BOM.len();
            }
        }
        if let Err(e) = std::str::from_utf8(&self.buf[skip..]) {
            let at = skip + e.valid_up_to();
            return Err(self.refuse(
                self.line,
                format!(
                "not UTF-8 text: byte {} (column {}) is 0x{:02X}, which cannot start or continue \
                 a UTF-8 character",
                start + at as u64,
                at + 1,
                self.buf[at]
            ),
            ));
        }
        let text = std::str::from_utf8(&self.buf[skip..]).unwrap_or_default();
        Ok(Some((self.line, text)))
    }

    /// A [`WorkloadError::Parse`] for the line being read.
    fn refuse(&self, line: usize, reason: String) -> WorkloadError {
        WorkloadError::Parse {
            path: self.path.clone(),
            line: Some(line),
            reason,
        }
    }
}

/// Opens a JSONL input `path` to be read a line at a time with every input-file check of the
/// dataset loader (issue 39, fresh tester: GSM8K's splits had none of them): a regular file of
/// at most `max_bytes` bytes, lines of at most `max_line` bytes, a UTF-16/32 file named with
/// its `iconv` fix, a leading UTF-8 byte-order mark skipped, CR-only line ends named with their
/// `tr` fix ([`LineReader::open`], [`LineReader::refuse_cr_only_line_ends`]). Check each line
/// with [`jsonl_line_problem`] and word a parse failure with
/// [`crate::dataset::invalid_json`].
///
/// # Errors
/// As [`LineReader::open`] and [`LineReader::refuse_cr_only_line_ends`].
pub fn open_jsonl(
    path: &Path,
    max_bytes: u64,
    max_line: usize,
) -> Result<LineReader, WorkloadError> {
    let mut lines = LineReader::open(path, max_bytes, max_line)?;
    lines.refuse_cr_only_line_ends()?;
    Ok(lines)
}

/// Why a JSONL line cannot be JSON text before it is parsed, or `None`: a UTF-8 byte-order mark
/// after the first line ([`bom_in_line`]), or a NUL byte (a binary or zero-filled file; serde
/// said "expected value at line 1 column 1").
pub fn jsonl_line_problem(line: &str) -> Option<String> {
    if let Some(r) = bom_in_line(line.as_bytes()) {
        return Some(r);
    }
    line.bytes().position(|b| b == 0).map(|at| {
        format!(
            "the line holds a NUL byte at byte {}: a binary or zero-filled file, not JSON text",
            at + 1
        )
    })
}

/// What a non-regular file is, in words.
pub(crate) fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    "not a file"
}

/// The UTF-8 byte-order mark.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why `bytes` (a whole file) cannot be read as UTF-8 text, with the 1-based line where it
/// breaks: a UTF-16 or UTF-32 byte-order mark names the encoding and the fix; other bytes name
/// the line and byte offset. `None` when it is UTF-8 (with or without a leading UTF-8 BOM).
pub fn encoding_problem(bytes: &[u8]) -> Option<(usize, String)> {
    if let Some(reason) = wide_encoding_problem(bytes) {
        return Some((1, reason));
    }
    let e = std::str::from_utf8(bytes).err()?;
    let at = e.valid_up_to();
    let line = 1 + memchr::memchr_iter(b'\n', &bytes[..at]).count();
    let col = at
        - bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
    Some((
        line,
        format!(
            "not UTF-8 text: byte {at} (column {}) is 0x{:02X}, which cannot start or continue a \
             UTF-8 character",
            col + 1,
            bytes[at]
        ),
    ))
}

/// How many leading bytes of a file [`LineReader::open`] checks with [`wide_encoding_problem`]
/// before reading lines: 4 KiB.
pub const HEAD_BYTES: usize = 4 << 10;

/// Why a file starting with `head` (its first bytes; a prefix is enough) is UTF-16 or UTF-32
/// text rather than UTF-8, or `None`: a UTF-16/32 byte-order mark names the encoding; without
/// one, NUL bytes where that encoding puts them ([`SNIFF_BYTES`] looked at) name it with an
/// `iconv` command. Other bad bytes are left to the line reader or [`encoding_problem`].
pub fn wide_encoding_problem(head: &[u8]) -> Option<String> {
    for (bom, enc) in [
        (&b"\x00\x00\xFE\xFF"[..], "UTF-32 (big-endian)"),
        (&b"\xFF\xFE\x00\x00"[..], "UTF-32 (little-endian)"),
        (&b"\xFE\xFF"[..], "UTF-16 (big-endian)"),
        (&b"\xFF\xFE"[..], "UTF-16 (little-endian)"),
    ] {
        if head.starts_with(bom) {
            return Some(format!(
                "the file is {enc} text (it starts with that byte-order mark); save it as UTF-8"
            ));
        }
    }
    let enc = bomless_wide_encoding(head)?;
    Some(format!(
        "the file looks like {enc} text without a byte-order mark (every {} byte is NUL); save \
         it as UTF-8 (e.g. `iconv -f {} -t UTF-8 FILE > FILE.utf8`)",
        if enc.starts_with("UTF-32") {
            "three of four"
        } else {
            "other"
        },
        iconv_name(enc)
    ))
}

/// How many leading bytes [`bomless_wide_encoding`] looks at.
const SNIFF_BYTES: usize = 512;

/// UTF-16 or UTF-32 text without a byte-order mark, told by where its NUL bytes fall in the
/// first [`SNIFF_BYTES`] bytes (ASCII text in UTF-16LE is `X 00 X 00 …`, in UTF-16BE
/// `00 X 00 X …`, in UTF-32 three NULs per character). UTF-8 text has no NUL bytes, so a file
/// where at least half of one position class is NUL and the others are not is named.
fn bomless_wide_encoding(bytes: &[u8]) -> Option<&'static str> {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if head.len() < 4 || !head.contains(&0) {
        return None;
    }
    // NULs per position modulo 4, and how many positions of each class there are.
    let mut nul = [0usize; 4];
    let mut all = [0usize; 4];
    for (i, &b) in head.iter().enumerate() {
        all[i % 4] += 1;
        nul[i % 4] += usize::from(b == 0);
    }
    let mostly = |k: usize| 2 * nul[k] >= all[k] && all[k] > 0;
    let none = |k: usize| nul[k] == 0;
    if mostly(1) && mostly(2) && mostly(3) && none(0) {
        return Some("UTF-32 (little-endian)");
    }
    if mostly(0) && mostly(1) && mostly(2) && none(3) {
        return Some("UTF-32 (big-endian)");
    }
    if mostly(1) && mostly(3) && none(0) && none(2) {
        return Some("UTF-16 (little-endian)");
    }
    if mostly(0) && mostly(2) && none(1) && none(3) {
        return Some("UTF-16 (big-endian)");
    }
    None
}

/// The `iconv` name of an encoding [`bomless_wide_encoding`] names.
fn iconv_name(enc: &str) -> &'static str {
    match enc {
        "UTF-32 (little-endian)" => "UTF-32LE",
        "UTF-32 (big-endian)" => "UTF-32BE",
        "UTF-16 (little-endian)" => "UTF-16LE",
        _ => "UTF-16BE",
    }
}

/// Why a line-oriented file (JSONL) cannot be split into lines, or `None`: its lines end in a
/// carriage return (CR, `\r`) alone (classic Mac OS line ends), so the whole file would read as
/// one line. A file with no LF at all and a CR followed by more text is named, with the fix.
pub fn line_ends_problem(bytes: &[u8]) -> Option<String> {
    if memchr::memchr(b'\n', bytes).is_some() {
        return None;
    }
    let crs = memchr::memchr_iter(b'\r', bytes)
        .filter(|&i| bytes[i + 1..].iter().any(|b| !b.is_ascii_whitespace()))
        .count();
    (crs > 0).then(|| {
        format!(
            "the file's lines end in a carriage return alone (CR, \\r: classic Mac OS line \
             ends; {} lines and no LF), so it reads as one line; convert the line ends to LF \
             (e.g. `tr '\\r' '\\n' < FILE > FILE.jsonl`)",
            crs + 1
        )
    })
}

/// A hint for a line that failed to parse and holds a carriage return not followed by LF
/// (a file mixing CR-only line ends into LF ones): `Some(" (…)")` to append, else `None`.
pub fn lone_cr_hint(line: &str) -> Option<&'static str> {
    line.trim_end_matches(['\r', '\n'])
        .contains('\r')
        .then_some(
            " (the line holds a carriage return (CR, \\r) without LF: lines ending in CR alone \
         are not split; convert them to LF, e.g. `tr '\\r' '\\n'`)",
        )
}

/// The reason for a line that starts with a UTF-8 byte-order mark after the first line
/// (concatenated files each saved with one), or `None`.
pub fn bom_in_line(line: &[u8]) -> Option<String> {
    line.starts_with(UTF8_BOM).then(|| {
        "the line starts with a UTF-8 byte-order mark (U+FEFF, bytes EF BB BF; files \
         concatenated with their marks?): remove it"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bounded_regular_files_are_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.txt");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_regular_file(&p, 10).unwrap(), b"0123456789");
        let e = read_regular_file(&p, 9).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: 10 bytes is larger than the 9-byte limit of this input (split it, or keep \
                 the first part)",
                p.display()
            )
        );
        let e = read_regular_file(d.path(), 10).unwrap_err().to_string();
        assert!(e.ends_with("not a regular file (a directory): only regular files are read"));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_and_a_device_are_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            // Opening it would block until a writer came: the check must not open it.
            let e = read_regular_file(&fifo, 1 << 20).unwrap_err().to_string();
            assert!(e.ends_with("not a regular file (a FIFO): only regular files are read"));
        }
        let e = read_regular_file(Path::new("/dev/zero"), 1 << 20)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/dev/zero: not a regular file (a character device): only regular files are read"
        );
    }

    #[test]
    fn encodings_are_named() {
        assert_eq!(encoding_problem(b"\xEF\xBB\xBF{}"), None);
        assert_eq!(
            encoding_problem(b"\xFF\xFE{\x00").unwrap(),
            (
                1,
                "the file is UTF-16 (little-endian) text (it starts with that byte-order mark); \
                 save it as UTF-8"
                    .to_string()
            )
        );
        assert_eq!(
            encoding_problem(b"ok\n{\"a\xFF\"}").unwrap(),
            (
                2,
                "not UTF-8 text: byte 6 (column 4) is 0xFF, which cannot start or continue a \
                 UTF-8 character"
                    .to_string()
            )
        );
        assert!(bom_in_line(b"\xEF\xBB\xBF{}").is_some());
    }

    /// Issue 39 §10: UTF-16/UTF-32 without a byte-order mark was "invalid JSON" (its NUL bytes
    /// are valid UTF-8); it is named by where its NULs fall, with the iconv command.
    #[test]
    fn bomless_utf16_and_utf32_are_named() {
        let text = "{\"prompt\": \"hi\"}\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        let le32: Vec<u8> = text
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect();
        let be32: Vec<u8> = text
            .chars()
            .flat_map(|c| (c as u32).to_be_bytes())
            .collect();
        let msg = |enc: &str, every: &str, iconv: &str| {
            Some((
                1,
                format!(
                    "the file looks like {enc} text without a byte-order mark (every {every} \
                     byte is NUL); save it as UTF-8 (e.g. `iconv -f {iconv} -t UTF-8 FILE > \
                     FILE.utf8`)"
                ),
            ))
        };
        assert_eq!(
            encoding_problem(&le),
            msg("UTF-16 (little-endian)", "other", "UTF-16LE")
        );
        assert_eq!(
            encoding_problem(&be),
            msg("UTF-16 (big-endian)", "other", "UTF-16BE")
        );
        assert_eq!(
            encoding_problem(&le32),
            msg("UTF-32 (little-endian)", "three of four", "UTF-32LE")
        );
        assert_eq!(
            encoding_problem(&be32),
            msg("UTF-32 (big-endian)", "three of four", "UTF-32BE")
        );
        // A stray NUL in UTF-8 text is left to the parser.
        assert_eq!(encoding_problem(b"{\"a\": \"x\x00y\"}\n"), None);
    }

    /// Issue 39 §10: a JSONL file with CR-only line ends read as one line ("invalid JSON").
    #[test]
    fn cr_only_line_ends_are_named() {
        assert_eq!(
            line_ends_problem(b"{\"a\": 1}\r{\"a\": 2}\r{\"a\": 3}\r").unwrap(),
            "the file's lines end in a carriage return alone (CR, \\r: classic Mac OS line ends; \
             3 lines and no LF), so it reads as one line; convert the line ends to LF (e.g. \
             `tr '\\r' '\\n' < FILE > FILE.jsonl`)"
        );
        // CRLF and LF files, and one line ending in a lone CR, are fine.
        assert_eq!(line_ends_problem(b"{}\r\n{}\r\n"), None);
        assert_eq!(line_ends_problem(b"{}\n{}"), None);
        assert_eq!(line_ends_problem(b"{}\r"), None);
        assert!(lone_cr_hint("{}\r{}").is_some());
        assert!(lone_cr_hint("{}\r").is_none());
        assert!(bom_in_line(b"{}").is_none());
    }

    /// The line reader yields lines without `\n` / `\r\n`, skips a leading UTF-8 BOM, names
    /// a bad byte with its line, file offset and column, and refuses a line longer than its
    /// cap after reading no more than the cap (issue 39 §2).
    #[test]
    fn lines_are_read_one_at_a_time_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("l.txt");
        std::fs::write(&p, b"\xEF\xBB\xBFab\r\n\ncd\nef").unwrap();
        let mut r = LineReader::open(&p, 1 << 20, 8).unwrap();
        let mut got = Vec::new();
        while let Some((n, l)) = r.next_line().unwrap() {
            got.push((n, l.to_string()));
        }
        let want = [(1, "ab"), (2, ""), (3, "cd"), (4, "ef")];
        assert_eq!(got, want.map(|(n, l)| (n, l.to_string())));
        std::fs::write(&p, b"ok\n{\"a\xFF\"}\n").unwrap();
        let mut r = LineReader::open(&p, 1 << 20, 8).unwrap();
        assert_eq!(r.next_line().unwrap(), Some((1, "ok")));
        assert_eq!(
            r.next_line().unwrap_err().to_string(),
            format!(
                "{}:2: not UTF-8 text: byte 6 (column 4) is 0xFF, which cannot start or \
                 continue a UTF-8 character",
                p.display()
            )
        );
        std::fs::write(&p, b"12345678\n123456789\n").unwrap();
        let mut r = LineReader::open(&p, 1 << 20, 8).unwrap();
        assert_eq!(r.next_line().unwrap(), Some((1, "12345678")));
        assert_eq!(
            r.next_line().unwrap_err().to_string(),
            format!(
                "{}:2: the line is longer than the 8-byte limit of a line of this input",
                p.display()
            )
        );
        // A UTF-16 file is named when opened: its first bytes are checked before any line.
        std::fs::write(&p, b"\xFF\xFEa\x00\n\x00").unwrap();
        assert!(LineReader::open(&p, 1 << 20, 8)
            .err()
            .unwrap()
            .to_string()
            .ends_with(":1: the file is UTF-16 (little-endian) text (it starts with that byte-order mark); save it as UTF-8"));
    }

    /// s3's whole-file checks (issue 39 §10) on s1's streamed reads (issue 39 §2): BOM-less
    /// UTF-16/32 is named from the first bytes when the file is opened, CR-only line ends from
    /// the first chunk before any line is read (a line longer than the reader's cap would
    /// otherwise be refused as too long), and a file whose first chunk has an LF passes.
    #[test]
    fn the_first_bytes_name_the_encoding_and_cr_only_line_ends() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("w.jsonl");
        let text = "{\"prompt\": \"hi\"}\n".repeat(1000);
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        std::fs::write(&p, &be).unwrap();
        assert_eq!(
            LineReader::open(&p, 1 << 20, 16).err().unwrap().to_string(),
            format!(
                "{}:1: the file looks like UTF-16 (big-endian) text without a byte-order mark \
                 (every other byte is NUL); save it as UTF-8 (e.g. `iconv -f UTF-16BE -t UTF-8 \
                 FILE > FILE.utf8`)",
                p.display()
            )
        );
        std::fs::write(&p, b"\xEF\xBB\xBF{\"a\": 1}\r{\"a\": 2}\r{\"a\": 3}\r").unwrap();
        let mut r = LineReader::open(&p, 1 << 20, 8).unwrap();
        assert_eq!(
            r.refuse_cr_only_line_ends().unwrap_err().to_string(),
            format!(
                "{}:1: the file's lines end in a carriage return alone (CR, \\r: classic Mac OS \
                 line ends; 3 lines and no LF), so it reads as one line; convert the line ends \
                 to LF (e.g. `tr '\\r' '\\n' < FILE > FILE.jsonl`)",
                p.display()
            )
        );
        std::fs::write(&p, b"{\"a\": 1}\r\n{\"a\": 2}\r\n").unwrap();
        let mut r = LineReader::open(&p, 1 << 20, 16).unwrap();
        r.refuse_cr_only_line_ends().unwrap();
        assert_eq!(r.next_line().unwrap(), Some((1, "{\"a\": 1}")));
        // Once a line is read the head is gone: the check looks at nothing.
        r.refuse_cr_only_line_ends().unwrap();
        assert_eq!(r.next_line().unwrap(), Some((2, "{\"a\": 2}")));
        assert_eq!(r.next_line().unwrap(), None);
    }
}
