//! What a run keeps in memory of its finished requests (issue 14): every record
//! [`RequestRecord::compact`]ed to a few hundred bytes once it is written to `--save-requests`,
//! and the pooled ITL sample as raw ns gaps, spilled to an anonymous temporary file past
//! [`SPILL_VALUES`] so that exact ITL percentiles ([`inferbench_core::exact`]) cost memory
//! that does not grow with the run. A million requests × 256 tokens keep ≈ 0.44 GB of records
//! instead of ≈ 7.6 GB (measured: docs/performance.md).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use inferbench_core::exact::{self, Moments};
use inferbench_core::metrics::{self, Distribution};
use inferbench_core::summary::{summarize, summarize_compacted, RunSummary, SummaryContext};
use inferbench_core::RequestRecord;

/// ITL gaps held in memory before they go to the spill file: 1 Mi values (8 MiB).
pub const SPILL_VALUES: usize = 1 << 20;

/// The pooled ITL sample (ns gaps of successful profile requests), in memory up to
/// [`SPILL_VALUES`], then appended to an anonymous temporary file (removed by the OS when the
/// sample is dropped). A spill file that cannot be created or written keeps the values in
/// memory instead: nothing is lost, only memory is spent.
#[derive(Debug, Default)]
pub struct ItlSample {
    moments: Moments,
    buf: Vec<u64>,
    spill: Option<BufWriter<File>>,
    /// Values wholly written to the spill file; a batch whose write failed is not counted (and
    /// stays in `buf`), so no value is read twice.
    on_disk: u64,
    spill_error: Option<String>,
}

impl ItlSample {
    /// Adds one gap (ns).
    pub fn push(&mut self, v: u64) {
        self.moments.push(v);
        self.buf.push(v);
        if self.buf.len() >= SPILL_VALUES && self.spill_error.is_none() {
            if let Err(e) = self.flush() {
                self.spill_error = Some(e.to_string());
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.spill.is_none() {
            self.spill = Some(BufWriter::with_capacity(1 << 20, tempfile::tempfile()?));
        }
        let w = self.spill.as_mut().expect("created above");
        for v in &self.buf {
            w.write_all(&v.to_le_bytes())?;
        }
        w.flush()?;
        self.on_disk += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Whether values went to the spill file (false while everything is in memory).
    pub fn spilled(&self) -> bool {
        self.on_disk > 0
    }

    /// Values in the sample.
    pub fn len(&self) -> u64 {
        self.moments.n
    }

    /// Whether the sample is empty.
    pub fn is_empty(&self) -> bool {
        self.moments.n == 0
    }

    /// The sample's [`Distribution`] in ms at percentiles `qs`: exactly `Distribution::of`
    /// while it fits in memory; from the spill file by [`exact::distribution_ms`] (exact order
    /// statistics, mean and std from integer sums) once it did not. Errors: reading the spill
    /// file back.
    pub fn distribution(&mut self, qs: &[f64]) -> std::io::Result<Distribution> {
        let (on_disk, tail) = (self.on_disk, &self.buf);
        let Some(w) = self.spill.as_mut().filter(|_| on_disk > 0) else {
            let ms: Vec<f64> = tail.iter().map(|&v| v as f64 / 1_000_000.0).collect();
            return Ok(Distribution::of(&ms, qs));
        };
        let file = w.get_mut();
        exact::distribution_ms(&self.moments, qs, |f: &mut dyn FnMut(u64)| {
            file.seek(SeekFrom::Start(0))?;
            let mut r = BufReader::with_capacity(1 << 20, &*file);
            let mut b = [0u8; 8];
            for _ in 0..on_disk {
                r.read_exact(&mut b)?;
                f(u64::from_le_bytes(b));
            }
            tail.iter().for_each(|&v| f(v));
            Ok(())
        })
    }
}

/// The finished records of a run as kept in memory, in completion order, plus the ITL sample
/// taken from them before compaction. With `full` (`--save-detailed`, whose per-request lists
/// need every chunk) records are kept whole and the summary is [`summarize`]'s own.
#[derive(Debug, Default)]
pub struct KeptRecords {
    /// Records in completion order, compacted unless `full`.
    pub records: Vec<RequestRecord>,
    itl: ItlSample,
    full: bool,
}

impl KeptRecords {
    /// Empty; `full` keeps whole records.
    pub fn new(full: bool) -> Self {
        Self {
            full,
            ..Self::default()
        }
    }

    /// Takes one finished record (already written wherever it goes).
    pub fn push(&mut self, mut rec: RequestRecord) {
        if !self.full {
            if metrics::counts(&rec) {
                for g in rec.itl_gaps_ns() {
                    self.itl.push(g);
                }
            }
            rec.compact();
        }
        self.records.push(rec);
    }

    /// The run's summary (see [`summarize`]); the ITL statistics come from the kept sample when
    /// records were compacted. A spill file that cannot be read back leaves the ITL statistics
    /// at zero and says so in the returned note.
    pub fn summarize(&mut self, ctx: &SummaryContext) -> (RunSummary, Option<String>) {
        if self.full {
            return (summarize(&self.records, ctx), None);
        }
        match self.itl.distribution(&ctx.metric_percentiles) {
            Ok(d) => (summarize_compacted(&self.records, ctx, d), None),
            Err(e) => (
                summarize_compacted(
                    &self.records,
                    ctx,
                    Distribution::of(&[], &ctx.metric_percentiles),
                ),
                Some(read_back_note(&e)),
            ),
        }
    }

    /// The pooled ITL sample's distribution (ms) at `qs` (percentiles 0–100), from the kept
    /// sample (records compacted) or the records' chunks (`full`). Errors: the spill file
    /// could not be read back.
    pub fn itl_distribution(&mut self, qs: &[f64]) -> std::io::Result<Distribution> {
        if self.full {
            let v: Vec<f64> = self
                .records
                .iter()
                .filter(|r| metrics::counts(r))
                .flat_map(|r| r.itls_ms())
                .collect();
            return Ok(Distribution::of(&v, qs));
        }
        self.itl.distribution(qs)
    }

    /// Why ITL values stayed in memory rather than on disk, when they did.
    pub fn spill_error(&self) -> Option<&str> {
        self.itl.spill_error.as_deref()
    }

    /// The note for the run when ITL values stayed in memory ([`KeptRecords::spill_error`]).
    pub fn spill_note(&self) -> Option<String> {
        self.spill_error().map(|e| {
            format!("the ITL sample could not go to a temporary file ({e}): it was kept in memory")
        })
    }

    /// The ITL sample (for its size and whether it spilled).
    pub fn itl(&self) -> &ItlSample {
        &self.itl
    }
}

/// The note for the run when the spilled ITL sample could not be read back.
pub fn read_back_note(e: &std::io::Error) -> String {
    format!("reading the ITL sample back from its temporary file failed: {e}; ITL statistics are missing")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As the collector sees them: no first byte or schedule stamp, the end 10 ns after the
    /// last token, no prompt tokens.
    fn rec(id: u64, sent: u64, chunks: &[u64]) -> RequestRecord {
        let r = inferbench_testutil::records::streamed(id, sent, chunks);
        RequestRecord {
            scheduled_ns: 0,
            first_byte_ns: None,
            end_ns: r.end_ns + 10,
            prompt_tokens: 0,
            prompt_tokens_client: 0,
            ..r
        }
    }

    /// Compacted records give the summary the full records give, byte for byte as JSON.
    #[test]
    fn compacted_records_summarize_as_the_full_ones() {
        let recs: Vec<RequestRecord> = (0..50u64)
            .map(|i| {
                let t: Vec<u64> = (0..(i % 7 + 1))
                    .map(|k| 1_000 * i + 10_000 + k * (1_000 + 37 * i + k * k))
                    .collect();
                rec(i, 1_000 * i, &t)
            })
            .collect();
        let ctx = SummaryContext::default();
        let full = summarize(&recs, &ctx);
        let mut kept = KeptRecords::new(false);
        recs.iter().cloned().for_each(|r| kept.push(r));
        assert!(kept
            .records
            .iter()
            .all(|r| r.chunks.is_empty() && r.output_text.is_empty()));
        let (got, note) = kept.summarize(&ctx);
        assert_eq!(note, None);
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&full).unwrap()
        );
        assert!(full.inferbench.itl_ms.count > 0);
    }

    /// Past SPILL_VALUES the gaps go to disk and the percentiles stay exact.
    #[test]
    fn a_spilled_sample_gives_exact_percentiles() {
        let mut s = ItlSample::default();
        let n = SPILL_VALUES as u64 * 2 + 123;
        let val = |i: u64| (i * 2_654_435_761) % 10_000_019;
        for i in 0..n {
            s.push(val(i));
        }
        assert!(s.spilled());
        assert_eq!(s.buf.len(), 123);
        let qs = [90.0, 99.0, 99.9];
        let got = s.distribution(&qs).unwrap();
        let ms: Vec<f64> = (0..n).map(|i| val(i) as f64 / 1e6).collect();
        let want = Distribution::of(&ms, &qs);
        assert_eq!(got.count, want.count);
        assert_eq!(got.median, want.median);
        assert_eq!(got.percentiles, want.percentiles);
        assert_eq!((got.min, got.max), (want.min, want.max));
        assert!((got.mean - want.mean).abs() < 1e-9 * want.mean);
        assert!((got.std - want.std).abs() < 1e-9 * want.std);
    }
}
