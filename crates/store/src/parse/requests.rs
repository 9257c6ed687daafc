//! Per-request records (DESIGN.md §3): `requests.jsonl.zst` / `requests.jsonl` in an artifact
//! directory, or the file a `bench --save-result` JSON names in `inferbench.requests_file`. One
//! JSON [`inferbench_core::RequestRecord`] a line; kept as one zstd blob per point, with the
//! counts and the E2E-normalized interactivity the records give (DESIGN.md §4).

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{ParseError, PointData, RequestsBlob, RequestsSource};

/// zstd level the store compresses plain request records at.
const ZSTD_LEVEL: i32 = 3;

/// Bytes of a request-records file read at a time (the read buffer; a longer line is read
/// whole, as long as it is).
const READ_BUFFER_BYTES: usize = 1 << 20;

/// Reads a request-records file (`.zst`-compressed when its name ends so) into `pt`: the blob,
/// and the E2E-normalized interactivity it gives. A plain file is read line by line and never
/// held whole (issue 39, fresh tester's finding 1: a 170 MB `--save-requests` file was read,
/// copied and compressed in memory, and `bench --db` at the advised `ulimit -v` ran out of
/// memory storing it): its compressed size is counted here and the blob is compressed again
/// from the file as it is written ([`RequestsSource`]), so storing it takes memory
/// independent of its size. A `.zst` file is kept as its own bytes.
pub(super) fn read_requests(path: &Path, pt: &mut PointData) -> Result<Repeats, String> {
    let at = path.display().to_string();
    let read = if at.ends_with(".zst") {
        let bytes = std::fs::read(path).map_err(|e| format!("{at}: {e}"))?;
        let dec = zstd::stream::read::Decoder::new(&bytes[..]).map_err(|e| format!("{at}: {e}"))?;
        let (mut blob, e2e, rep) = scan_requests(dec, &at, None)?;
        blob.jsonl_zst = bytes;
        (blob, e2e, rep)
    } else {
        let f = std::fs::File::open(path).map_err(|e| format!("{at}: {e}"))?;
        let mut enc = zstd::stream::write::Encoder::new(Counter(0), ZSTD_LEVEL)
            .map_err(|e| format!("{at}: {e}"))?;
        let (mut blob, e2e, rep) = scan_requests(f, &at, Some(&mut enc))?;
        let zst_len = enc.finish().map_err(|e| format!("{at}: {e}"))?.0;
        blob.source = Some(RequestsSource {
            path: path.to_path_buf(),
            zst_len,
        });
        (blob, e2e, rep)
    };
    let (mut blob, e2e, rep) = read;
    blob.file = Some(path.to_path_buf());
    // A file that repeats requests gives no distribution of its own: the summary's stands.
    if rep.lines == 0 {
        add_e2e_norm(&mut pt.metrics, e2e);
    }
    pt.requests = Some(blob);
    Ok(rep)
}

/// Records of a records file that repeat a request already in it (the same phase and
/// `request_id`): each request is recorded once, so a file with any is broken (fresh tester
/// of issue 39 §5, item 7: 10 requests each written twice were stored as 20, complete, their
/// histograms skewed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Repeats {
    /// Lines that repeat an earlier record's request.
    pub lines: u64,
    /// Distinct requests repeated.
    pub requests: u64,
    /// The first repeated ones (at most [`REPEATS_NAMED`]), `phase request_id`, in file order.
    pub named: Vec<String>,
}

/// How many repeated requests a message names.
const REPEATS_NAMED: usize = 5;

impl Repeats {
    /// `profile 0, profile 1, …` (the named ones, `…` when there are more).
    fn list(&self) -> String {
        let more = if self.requests as usize > self.named.len() {
            ", …"
        } else {
            ""
        };
        format!("{}{more}", self.named.join(", "))
    }
}

/// Reads the records file `path` into `pt` as [`read_requests`]; one that cannot be read whole
/// (truncated by a write that failed mid-run: `ulimit -f`, a full disk; a broken line) does not
/// lose the point (issue 39, fresh tester's finding 3: `ingest` of a result naming a truncated
/// `req.jsonl` failed on every try with "req.jsonl:5: EOF while parsing"). The point is stored
/// without records and marked failed, its `error` naming the file and the problem; a warning
/// (pushed on `warnings`) says so and what to do. A file that reads whole but holds fewer
/// profile records than the summary counts (`completed` + `inferbench.failed`, already in
/// `pt.metrics`: a file cut at a line boundary, or one whose broken last line was dropped) is
/// incomplete too: its records are stored, the point marked failed, and the warning gives both
/// counts (issue 39, fresh tester: 1,898 records stored against 6,000 completed, silently).
/// One check for every records file: a result's `--save-requests` file and a point
/// directory's `requests.jsonl[.zst]` (a sweep's point, a replay's `--result-dir`) alike
/// (issue 39, files, ingest and hints, 3: point directories were not checked). A record of a
/// newer layout still refuses the unit (a newer inferbench reads it).
///
/// # Errors
/// [`read_requests`]'s error for a record of a newer layout.
pub(super) fn read_requests_or_mark(
    path: &Path,
    pt: &mut PointData,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let (cause, warning) = match read_requests(path, pt) {
        Ok(rep) if rep.lines > 0 => {
            let n = pt.requests.as_ref().map_or(0, |b| b.n_records);
            (
                format!(
                    "its records file is broken: {} of its {n} record(s) repeat {} request(s) \
                     already in it ({}); each request is recorded once; the {n} are stored as \
                     they are",
                    rep.lines,
                    rep.requests,
                    rep.list()
                ),
                format!(
                    "{}: broken: {} of its {n} record(s) repeat {} request(s) already in it \
                     (phase and request_id: {}; each request is recorded once): the {n} are \
                     stored as they are and the point marked failed; its figures are the \
                     summary's own. To store it whole, ingest the result again with the run's \
                     own records file",
                    path.display(),
                    rep.lines,
                    rep.requests,
                    rep.list()
                ),
            )
        }
        Ok(_) => {
            let (Some(have), Some(want)) = (
                pt.requests.as_ref().map(|b| b.n_profile),
                expected_profile_records(&pt.metrics),
            ) else {
                return Ok(());
            };
            if have >= want {
                return Ok(());
            }
            (
                format!(
                    "its records file is incomplete: {have} profile record(s) of the {want} \
                     the summary counts (completed + failed); the {have} are stored"
                ),
                format!(
                    "{}: incomplete: {have} profile record(s) of the {want} the summary counts \
                     (completed + failed; a file cut short by a kill or a full disk, or a \
                     broken last line dropped): the {have} are stored and the point marked \
                     failed; its figures are the summary's own. To store them all, ingest the \
                     result again with its whole records file",
                    path.display()
                ),
            )
        }
        Err(e) if e.contains("is newer than this inferbench reads") => return Err(e),
        Err(e) => (
            format!(
                "its records file is incomplete or unreadable ({e}): the point's records are \
                 not stored"
            ),
            format!(
                "{}: incomplete or unreadable ({e}): the result is stored without its records \
                 and the point marked failed; its figures are the summary's own. To store the \
                 records that remain, drop its broken last line and ingest the result again \
                 (the point stays failed while the file holds fewer records than the summary \
                 counts)",
                path.display()
            ),
        ),
    };
    pt.error = Some(match pt.error.take() {
        Some(prev) => format!("{prev}; {cause}"),
        None => cause,
    });
    pt.records_incomplete = true;
    warnings.push(warning);
    Ok(())
}

/// The profile records a point's summary says its records file holds: its `completed` plus
/// its `inferbench.failed` requests (every one of them is recorded; requests the run cancelled
/// are recorded too but not required, as a foreign summary may not count them). `None` when
/// the summary gives no `completed`.
fn expected_profile_records(metrics: &BTreeMap<String, f64>) -> Option<i64> {
    let completed = *metrics.get("completed")?;
    let failed = metrics.get("inferbench.failed").copied().unwrap_or(0.0);
    let n = completed + failed;
    (n.is_finite() && n >= 0.0).then(|| n.round() as i64)
}

/// A writer that keeps nothing and counts the bytes written to it.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Calls `each` with every line of `r` (its `\n` kept), reading [`READ_BUFFER_BYTES`] at a
/// time; stops at the first error `each` returns. The one way both passes over a plain records
/// file read it, so that its compression is the same bytes both times.
fn for_each_line<R: Read>(
    r: R,
    at: &str,
    mut each: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut reader = std::io::BufReader::with_capacity(READ_BUFFER_BYTES, r);
    let mut line = Vec::new();
    let mut lineno = 0usize;
    loop {
        line.clear();
        let got = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{at}: line {}: {e}", lineno + 1))?;
        if got == 0 {
            return Ok(());
        }
        lineno += 1;
        each(lineno, &line)?;
    }
}

/// Compresses the plain records file `source` into `out` as [`read_requests`] counted it,
/// line by line (memory independent of the file's size), and checks that it is the file that
/// was read: the same SHA-256 (`sha256`) and the same compressed length.
///
/// # Errors
/// The file cannot be read, `out` cannot be written, or the file changed since it was read.
pub(crate) fn compress_into(
    source: &RequestsSource,
    sha256: &str,
    out: &mut impl std::io::Write,
) -> Result<(), String> {
    let at = source.path.display().to_string();
    let f = std::fs::File::open(&source.path).map_err(|e| format!("{at}: {e}"))?;
    let mut hasher = Sha256::new();
    let counted = CountingWriter { out, n: 0 };
    let mut enc =
        zstd::stream::write::Encoder::new(counted, ZSTD_LEVEL).map_err(|e| format!("{at}: {e}"))?;
    for_each_line(f, &at, |_, line| {
        hasher.update(line);
        std::io::Write::write_all(&mut enc, line).map_err(|e| format!("{at}: {e}"))
    })?;
    let counted = enc.finish().map_err(|e| format!("{at}: {e}"))?;
    if hex(&hasher.finalize()) != sha256 || counted.n != source.zst_len {
        return Err(format!(
            "{at}: the file changed while it was being stored; ingest it again"
        ));
    }
    Ok(())
}

/// A writer passing its bytes on to `out` and counting them.
struct CountingWriter<'a, W: std::io::Write> {
    out: &'a mut W,
    n: u64,
}

impl<W: std::io::Write> std::io::Write for CountingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.out.write(buf)?;
        self.n = self.n.saturating_add(k as u64);
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The subset of a [`inferbench_core::RequestRecord`] the store reads; unknown fields skipped,
/// a record of a newer layout refused (its `schema_version`).
#[derive(serde::Deserialize)]
struct LightRecord {
    #[serde(default)]
    #[allow(dead_code)]
    schema_version: inferbench_core::artifacts::SchemaVersion<1>,
    #[serde(default)]
    phase: inferbench_core::Phase,
    /// The request's index in its phase; absent in a foreign record.
    #[serde(default)]
    request_id: Option<u64>,
    success: bool,
    sent_ns: u64,
    #[serde(default)]
    last_token_ns: Option<u64>,
    #[serde(default)]
    completion_tokens: u32,
}

/// Validates the JSONL records (every non-empty line must parse), counts them and collects
/// `E2EL_i / OSL_i` (s/token) of successful profile requests; each line is also written to
/// `sink` when given (a plain file's compressed length is counted so). Returns the blob to
/// store, its bytes left empty for the caller, and the records that repeat a request
/// ([`Repeats`]; a record without a `request_id`, a foreign one, is not checked).
fn scan_requests<R: Read>(
    r: R,
    at: &str,
    mut sink: Option<&mut dyn std::io::Write>,
) -> Result<(RequestsBlob, Vec<f64>, Repeats), ParseError> {
    let mut hasher = Sha256::new();
    let (mut n, mut n_profile, mut n_failed) = (0i64, 0i64, 0i64);
    let mut e2e = Vec::new();
    let mut seen: std::collections::HashSet<(bool, u64)> = std::collections::HashSet::new();
    let mut repeated: std::collections::HashSet<(bool, u64)> = std::collections::HashSet::new();
    let mut rep = Repeats::default();
    for_each_line(r, at, |lineno, line| {
        hasher.update(line);
        if let Some(s) = sink.as_mut() {
            s.write_all(line).map_err(|e| format!("{at}: {e}"))?;
        }
        let t = line.trim_ascii();
        if t.is_empty() {
            return Ok(());
        }
        let rec: LightRecord = serde_json::from_slice(t)
            .map_err(|e| format!("{at}:{lineno}: invalid request record: {e}"))?;
        n += 1;
        let profile = rec.phase == inferbench_core::Phase::Profile;
        if let Some(id) = rec.request_id {
            if !seen.insert((profile, id)) {
                rep.lines += 1;
                if repeated.insert((profile, id)) {
                    rep.requests += 1;
                    if rep.named.len() < REPEATS_NAMED {
                        let phase = if profile { "profile" } else { "warmup" };
                        rep.named.push(format!("{phase} {id}"));
                    }
                }
            }
        }
        if profile {
            n_profile += 1;
            if !rec.success {
                n_failed += 1;
            } else if let Some(last) = rec.last_token_ns {
                if rec.completion_tokens > 0 {
                    let e2el_s = last.saturating_sub(rec.sent_ns) as f64 / 1e9;
                    e2e.push(e2el_s / f64::from(rec.completion_tokens));
                }
            }
        }
        Ok(())
    })?;
    Ok((
        RequestsBlob {
            jsonl_zst: Vec::new(),
            source: None,
            sha256: hex(&hasher.finalize()),
            n_records: n,
            n_profile,
            n_failed,
            file: None,
        },
        e2e,
        rep,
    ))
}

/// Adds `p75_e2e_norm_intvty` / `p90_e2e_norm_intvty` computed from the records when the summary
/// lacks them: 1 / percentile_q(E2EL_i / OSL_i) (DESIGN.md §4).
fn add_e2e_norm(m: &mut BTreeMap<String, f64>, mut ratios: Vec<f64>) {
    if ratios.is_empty() {
        return;
    }
    ratios.sort_by(f64::total_cmp);
    for q in [75.0, 90.0] {
        let key = format!("p{q}_e2e_norm_intvty");
        if let Some(p) = inferbench_core::analytics::percentile_sorted(&ratios, q) {
            if p > 0.0 {
                m.entry(key).or_insert(1.0 / p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, fresh tester's finding 1: a plain records file is not held in memory; its
    /// blob is compressed from the file as it is written, exactly the length counted when it
    /// was read, and decompresses to the file; a file changed in between is refused, never
    /// stored as something other than what was counted.
    #[test]
    fn a_plain_records_file_is_compressed_from_the_file_and_a_changed_one_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("requests.jsonl");
        let line = "{\"phase\":\"profile\",\"success\":true,\"sent_ns\":0,\"last_token_ns\":2000000000,\"completion_tokens\":4}\n";
        std::fs::write(&p, line.repeat(3)).unwrap();
        let mut pt = super::super::empty_point(Default::default(), 1, String::new());
        read_requests(&p, &mut pt).unwrap();
        let blob = pt.requests.unwrap();
        assert!(blob.jsonl_zst.is_empty());
        assert_eq!(blob.n_records, 3);
        assert_eq!(blob.n_profile, 3);
        assert_eq!(pt.metrics["p90_e2e_norm_intvty"], 2.0);
        let mut out = Vec::new();
        blob.write_zst(&mut out).unwrap();
        assert_eq!(out.len() as u64, blob.zst_len());
        assert_eq!(
            zstd::decode_all(&out[..]).unwrap(),
            line.repeat(3).as_bytes()
        );
        std::fs::write(&p, line.repeat(4)).unwrap();
        let e = blob.write_zst(&mut Vec::new()).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{}: the file changed while it was being stored; ingest it again",
                p.display()
            )
        );
    }

    /// Issue 39, fresh tester (ingest, finding 2): a records file that reads whole but holds
    /// fewer profile records than the summary counts (cut at a line boundary, or its broken
    /// last line dropped as the warning advised) fails the point with both counts and a
    /// warning; its records are stored. One holding them all (warmups and cancelled requests
    /// beside) is complete. Before: stored as complete, no warning.
    #[test]
    fn a_records_file_shorter_than_the_summary_fails_the_point_with_both_counts() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.jsonl");
        let ok = "{\"phase\":\"profile\",\"success\":true,\"sent_ns\":0,\"last_token_ns\":1,\"completion_tokens\":1}\n";
        let bad = "{\"phase\":\"profile\",\"success\":false,\"sent_ns\":0}\n";
        let warm = "{\"phase\":\"warmup\",\"success\":true,\"sent_ns\":0}\n";
        let point = || {
            let mut pt = super::super::empty_point(Default::default(), 1, String::new());
            pt.metrics.insert("completed".into(), 6.0);
            pt.metrics.insert("inferbench.failed".into(), 1.0);
            pt
        };
        // 5 of 7 (6 completed + 1 failed), 2 warmups beside: short.
        std::fs::write(&p, format!("{warm}{warm}{}{bad}", ok.repeat(4))).unwrap();
        let (mut pt, mut w) = (point(), Vec::new());
        read_requests_or_mark(&p, &mut pt, &mut w).unwrap();
        assert!(pt.records_incomplete);
        assert_eq!(
            pt.error.as_deref(),
            Some(
                "its records file is incomplete: 5 profile record(s) of the 7 the summary \
                 counts (completed + failed); the 5 are stored"
            )
        );
        assert_eq!(pt.requests.as_ref().map(|b| b.n_profile), Some(5));
        assert_eq!(
            w,
            [format!(
                "{}: incomplete: 5 profile record(s) of the 7 the summary counts (completed + \
                 failed; a file cut short by a kill or a full disk, or a broken last line \
                 dropped): the 5 are stored and the point marked failed; its figures are the \
                 summary's own. To store them all, ingest the result again with its whole \
                 records file",
                p.display()
            )]
        );
        // All 7: complete.
        std::fs::write(&p, format!("{warm}{}{bad}", ok.repeat(6))).unwrap();
        let (mut pt, mut w) = (point(), Vec::new());
        read_requests_or_mark(&p, &mut pt, &mut w).unwrap();
        assert!(
            !pt.records_incomplete && pt.error.is_none() && w.is_empty(),
            "{w:?}"
        );
        // A broken last line: unreadable, as before, and marked the same way.
        std::fs::write(&p, format!("{}{{\"phase\":", ok.repeat(6))).unwrap();
        let (mut pt, mut w) = (point(), Vec::new());
        read_requests_or_mark(&p, &mut pt, &mut w).unwrap();
        assert!(pt.records_incomplete && pt.requests.is_none());
        assert!(w[0].contains("incomplete or unreadable"), "{w:?}");
    }

    /// Fresh tester of issue 39 §5, item 7: a records file holding each of its requests twice
    /// (as many lines as the summary counts) was stored complete, its histograms skewed. A
    /// request repeated (the same phase and `request_id`) breaks the file: the point is failed
    /// naming the repeats, its records stored as they are, with a warning; a warmup and a
    /// profile request of the same id are two requests.
    #[test]
    fn a_records_file_repeating_requests_fails_the_point_naming_them() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("req.jsonl");
        let rec = |phase: &str, id: u64| {
            format!(
                "{{\"request_id\":{id},\"phase\":\"{phase}\",\"success\":true,\"sent_ns\":0,\
                 \"last_token_ns\":1000000000,\"completion_tokens\":1}}\n"
            )
        };
        let point = || {
            let mut pt = super::super::empty_point(Default::default(), 1, String::new());
            pt.metrics.insert("completed".into(), 20.0);
            pt
        };
        // 10 requests, each twice: 20 lines, as many as the summary's completed.
        let twice: String = (0..10).map(|i| rec("profile", i).repeat(2)).collect();
        std::fs::write(&p, format!("{}{twice}", rec("warmup", 0))).unwrap();
        let (mut pt, mut w) = (point(), Vec::new());
        read_requests_or_mark(&p, &mut pt, &mut w).unwrap();
        assert!(pt.records_incomplete);
        assert_eq!(
            pt.error.as_deref(),
            Some(
                "its records file is broken: 10 of its 21 record(s) repeat 10 request(s) \
                 already in it (profile 0, profile 1, profile 2, profile 3, profile 4, …); each \
                 request is recorded once; the 21 are stored as they are"
            )
        );
        assert_eq!(pt.requests.as_ref().map(|b| b.n_records), Some(21));
        // No distribution from a file that repeats requests.
        assert!(!pt.metrics.contains_key("p90_e2e_norm_intvty"));
        assert_eq!(
            w,
            [format!(
                "{}: broken: 10 of its 21 record(s) repeat 10 request(s) already in it (phase \
                 and request_id: profile 0, profile 1, profile 2, profile 3, profile 4, …; each \
                 request is recorded once): the 21 are stored as they are and the point marked \
                 failed; its figures are the summary's own. To store it whole, ingest the \
                 result again with the run's own records file",
                p.display()
            )]
        );
        // Each once, plus a warmup of the same id: complete.
        let once: String = (0..20).map(|i| rec("profile", i)).collect();
        std::fs::write(&p, format!("{}{once}", rec("warmup", 0))).unwrap();
        let (mut pt, mut w) = (point(), Vec::new());
        read_requests_or_mark(&p, &mut pt, &mut w).unwrap();
        assert!(pt.error.is_none() && w.is_empty(), "{w:?}");
        assert_eq!(pt.metrics["p90_e2e_norm_intvty"], 1.0);
    }

    /// Issue 39, fresh tester's finding 1: a result's per-request arrays are skipped while it
    /// is parsed (no importer reads them) and its bytes kept whole; bad JSON inside them is
    /// still refused with its line and column; a top-level array is read as it is.
    #[test]
    fn a_results_per_request_arrays_are_skipped_and_its_bytes_kept() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        let text = "{\"completed\": 1, \"itls\": [[0.1, 0.2]], \"ttfts\": [0.5],\n \
                    \"generated_texts\": [\"x\"], \"errors\": [\"\"], \"input_lens\": [3], \
                    \"output_lens\": [2], \"inferbench\": {\"itls\": 7}}";
        std::fs::write(&p, text).unwrap();
        let (bytes, v) = super::super::read_json(&p).unwrap();
        assert_eq!(bytes, text.as_bytes());
        assert_eq!(
            v,
            serde_json::json!({"completed": 1, "inferbench": {"itls": 7}})
        );
        std::fs::write(&p, "{\"completed\": 1,\n \"itls\": [[0.1,]]}").unwrap();
        let e = super::super::read_json(&p).unwrap_err();
        assert!(e.starts_with(&format!("{}:2:", p.display())), "{e}");
        std::fs::write(&p, "[{\"itls\": 1}]").unwrap();
        let (_, v) = super::super::read_json(&p).unwrap();
        assert_eq!(v, serde_json::json!([{"itls": 1}]));
    }
}
