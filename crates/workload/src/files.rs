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
    let io = |source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |reason: String| WorkloadError::Parse {
        path: path.to_path_buf(),
        line: None,
        reason,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(refuse(format!(
            "not a regular file ({}): only regular files are read",
            file_kind(&meta)
        )));
    }
    let too_big = |size: u64| {
        refuse(format!(
            "{size} bytes is larger than the {max_bytes}-byte limit of this input (split it, \
             or keep the first part)"
        ))
    };
    if meta.len() > max_bytes {
        return Err(too_big(meta.len()));
    }
    let f = std::fs::File::open(path).map_err(io)?;
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(max_bytes + 1).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > max_bytes {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
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
    for (bom, enc) in [
        (&b"\x00\x00\xFE\xFF"[..], "UTF-32 (big-endian)"),
        (&b"\xFF\xFE\x00\x00"[..], "UTF-32 (little-endian)"),
        (&b"\xFE\xFF"[..], "UTF-16 (big-endian)"),
        (&b"\xFF\xFE"[..], "UTF-16 (little-endian)"),
    ] {
        if bytes.starts_with(bom) {
            return Some((
                1,
                format!(
                    "the file is {enc} text (it starts with that byte-order mark); save it as \
                     UTF-8"
                ),
            ));
        }
    }
    if let Some(enc) = bomless_wide_encoding(bytes) {
        return Some((
            1,
            format!(
                "the file looks like {enc} text without a byte-order mark (every {} byte is \
                 NUL); save it as UTF-8 (e.g. `iconv -f {} -t UTF-8 FILE > FILE.utf8`)",
                if enc.starts_with("UTF-32") {
                    "three of four"
                } else {
                    "other"
                },
                iconv_name(enc)
            ),
        ));
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
}
