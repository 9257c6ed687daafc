//! Per-request records (DESIGN.md §3): `requests.jsonl.zst` / `requests.jsonl` in an artifact
//! directory, or the file a `bench --save-result` JSON names in `inferbench.requests_file`. One
//! JSON [`inferbench_core::RequestRecord`] a line; kept as one zstd blob per point, with the
//! counts and the E2E-normalized interactivity the records give (DESIGN.md §4).

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{ParseError, PointData, RequestsBlob};

/// Reads a request-records file (`.zst`-compressed when its name ends so) into `pt`: the blob,
/// and the E2E-normalized interactivity it gives.
pub(super) fn read_requests(path: &Path, pt: &mut PointData) -> Result<(), String> {
    let at = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{at}: {e}"))?;
    let (blob, e2e) = if at.ends_with(".zst") {
        let dec = zstd::stream::read::Decoder::new(&bytes[..]).map_err(|e| format!("{at}: {e}"))?;
        let (mut blob, e2e) = scan_requests(dec, &at, true)?;
        blob.jsonl_zst = bytes;
        (blob, e2e)
    } else {
        scan_requests(&bytes[..], &at, false)?
    };
    add_e2e_norm(&mut pt.metrics, e2e);
    pt.requests = Some(blob);
    Ok(())
}

/// Reads the records file `path` into `pt` as [`read_requests`]; one that cannot be read whole
/// (truncated by a write that failed mid-run: `ulimit -f`, a full disk; a broken line) does not
/// lose the point (issue 39, fresh tester's finding 3: `ingest` of a result naming a truncated
/// `req.jsonl` failed on every try with "req.jsonl:5: EOF while parsing"). The point is stored
/// without records and marked failed, its `error` naming the file and the problem; a warning
/// (pushed on `warnings`) says so and what to do. A record of a newer layout still refuses the
/// unit (a newer inferbench reads it).
///
/// # Errors
/// [`read_requests`]'s error for a record of a newer layout.
pub(super) fn read_requests_or_mark(
    path: &Path,
    pt: &mut PointData,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    match read_requests(path, pt) {
        Ok(()) => Ok(()),
        Err(e) if e.contains("is newer than this inferbench reads") => Err(e),
        Err(e) => {
            let cause = format!(
                "its records file is incomplete or unreadable ({e}): the point's records are \
                 not stored"
            );
            pt.error = Some(match pt.error.take() {
                Some(prev) => format!("{prev}; {cause}"),
                None => cause,
            });
            warnings.push(format!(
                "{}: incomplete or unreadable ({e}): the result is stored without its records \
                 and the point marked failed; its figures are the summary's own. To store the \
                 records, repair the file (e.g. drop its broken last line) and ingest the \
                 result again",
                path.display()
            ));
            Ok(())
        }
    }
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
    success: bool,
    sent_ns: u64,
    #[serde(default)]
    last_token_ns: Option<u64>,
    #[serde(default)]
    completion_tokens: u32,
}

/// Validates the JSONL records (every non-empty line must parse), counts them and collects
/// `E2EL_i / OSL_i` (s/token) of successful profile requests. Returns the blob to store
/// (`zst` = the original compressed bytes, else compressed here at level 3).
fn scan_requests<R: Read>(
    r: R,
    at: &str,
    compressed: bool,
) -> Result<(RequestsBlob, Vec<f64>), ParseError> {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, r);
    let mut hasher = Sha256::new();
    let mut raw = if compressed { None } else { Some(Vec::new()) };
    let (mut n, mut n_profile, mut n_failed) = (0i64, 0i64, 0i64);
    let mut e2e = Vec::new();
    let mut line = Vec::new();
    let mut lineno = 0usize;
    loop {
        line.clear();
        let got = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{at}: line {}: {e}", lineno + 1))?;
        if got == 0 {
            break;
        }
        lineno += 1;
        hasher.update(&line);
        if let Some(r) = raw.as_mut() {
            r.extend_from_slice(&line);
        }
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        let rec: LightRecord = serde_json::from_slice(t)
            .map_err(|e| format!("{at}:{lineno}: invalid request record: {e}"))?;
        n += 1;
        if rec.phase == inferbench_core::Phase::Profile {
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
    }
    let jsonl_zst = match raw {
        Some(r) => zstd::encode_all(&r[..], 3).map_err(|e| format!("{at}: {e}"))?,
        None => Vec::new(),
    };
    let sha: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((
        RequestsBlob {
            jsonl_zst,
            sha256: sha,
            n_records: n,
            n_profile,
            n_failed,
        },
        e2e,
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
