//! Shared by the early-stop examples: a finished point's request records, read back.

use std::io::BufRead;
use std::path::Path;

use inferbench_core::record::RequestRecord;

/// A point's request records in the file's order (`requests.jsonl.zst` or `requests.jsonl`); a
/// line that is not a record is skipped with a count on stderr.
pub fn read_records(p: &Path) -> anyhow::Result<Vec<RequestRecord>> {
    let zst = p.join("requests.jsonl.zst");
    let reader: Box<dyn BufRead> = if zst.is_file() {
        Box::new(std::io::BufReader::new(zstd::Decoder::new(
            std::fs::File::open(zst)?,
        )?))
    } else {
        Box::new(std::io::BufReader::new(std::fs::File::open(
            p.join("requests.jsonl"),
        )?))
    };
    let (mut out, mut bad) = (Vec::new(), 0usize);
    for line in reader.lines() {
        match serde_json::from_str::<RequestRecord>(&line?) {
            Ok(r) => out.push(r),
            Err(_) => bad += 1,
        }
    }
    if bad > 0 {
        eprintln!("{}: {bad} lines were not records", p.display());
    }
    Ok(out)
}
