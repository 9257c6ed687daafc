//! What the quickstarts show of the batch they just stored: `inferbench_views::preview` builds
//! it ([`preview::QuickstartBatch`]); this prints it: the table on stdout, what the chart left
//! out on stderr, and returns the last line for the caller to print.

use inferbench_store::Store;
use inferbench_views::ingest::IngestText as _;
use inferbench_views::preview::{self, QuickstartBatch};

pub use inferbench_views::preview::Shown;

/// The fixed-length quickstart's view of its run ([`preview::fixed_quickstart`]): prints the
/// table of its batch (stdout), draws the chart (and its PNG with `png_too`), says on stderr
/// what the chart left out, and returns the last line ([`preview::stored_line`]). `concs` are
/// the concurrencies that ran. Errors: the ingest, the query, a result the ingest skipped (its
/// reasons said on stderr: a store that left something out is never exit 0), or a chart that
/// cannot be written.
pub fn fixed_quickstart(
    store: &mut Store,
    shown: Shown<'_>,
    concs: &[i64],
) -> anyhow::Result<String> {
    let batch = preview::fixed_quickstart(store, &shown, concs)?;
    show(store, &shown, &batch)
}

/// The agentic quickstart's view of its run ([`preview::agentic_quickstart`]), shown as
/// [`fixed_quickstart`]'s (the same errors). Returns the last line.
pub fn agentic_quickstart(
    store: &mut Store,
    shown: Shown<'_>,
    cut_short: &[i64],
) -> anyhow::Result<String> {
    let batch = preview::agentic_quickstart(store, &shown, cut_short)?;
    show(store, &shown, &batch)
}

/// Prints `batch`'s table (stdout), draws its chart (what it left out on stderr) and returns
/// the last line, naming `store` when `shown.stored`.
fn show(store: &Store, shown: &Shown<'_>, batch: &QuickstartBatch) -> anyhow::Result<String> {
    out!("{}", batch.text());
    let (charts, note) = batch.draw(shown.chart, shown.png_too)?;
    if let Some(n) = note {
        errln!("  chart: {n}");
    }
    let db = shown.stored.then(|| store.location());
    let line = batch.stored_line(db, &charts);
    if !batch.report.skipped.is_empty() {
        err!("{}", batch.report.render_skipped());
        anyhow::bail!("{line}; the store skipped a result (said above)");
    }
    Ok(line)
}
