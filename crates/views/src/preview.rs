//! What a quickstart shows of the points it has just stored: the report's table of them with
//! its footer and the quickstart's own notes, the chart as SVG and PNG, and the last line
//! saying where the points went.

use std::path::Path;

use inferbench_store::query::PointRow;
use inferbench_store::{IngestReport, Store, StoreError};

use crate::plot::{plot, PlotSpec};
use crate::report::{footer, render, wrap, Format, Marks};

/// A quickstart's view of its batch.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    /// Table columns, in order (registry names: `conc`, `tput_per_gpu`, `frontier`, …).
    pub columns: Vec<String>,
    /// The chart; its `x` and `y` are also the axes the footer's `*` names.
    pub spec: PlotSpec,
    /// Lines after the footer, each wrapped as the footer is ([`wrap`]).
    pub notes: Vec<String>,
    /// The line naming the points that ran and finished no request (stored as failed points,
    /// no row here), printed after the notes, and alone when no point has a row.
    pub unmeasured: Option<String>,
    /// One legend for the `frontier` column's `*` and `invalid` marks in place of the
    /// report's two (the agentic preview, where every point is invalid for `report` and `*`
    /// marks a preview frontier: trial 16 found two `invalid` legends that disagreed).
    pub marks_legend: Option<String>,
}

/// What both quickstarts show their batch with: where it ran, its batch, the chart, whether
/// the store is a real database, and notes of the caller's own.
#[derive(Debug, Clone)]
pub struct Shown<'a> {
    /// The quickstart's run directory (`<out>/<UTC time>/`), ingested.
    pub run_dir: &'a Path,
    /// Its batch (`report -f batch=<batch>` shows the same rows).
    pub batch: &'a str,
    /// The chart's title.
    pub title: String,
    /// The chart file (SVG or PNG by its extension).
    pub chart: &'a Path,
    /// Also draw a PNG beside an SVG chart.
    pub png_too: bool,
    /// A real database (not `--no-db`'s in-memory one): the last line names it.
    pub stored: bool,
    /// Further lines under the table (e.g. `--fast`'s warning).
    pub notes: Vec<String>,
}

impl Preview {
    /// What every row shares, as `report`'s table names it above the table (`every row:
    /// model=…  isl=…  …  batch=…`; trial 17: the quickstart's table did not say which model
    /// or batch it showed), then the table of `rows` ([`render`]), the report's footer
    /// ([`footer`], legends for the marks the rows carry), then the notes: what a quickstart
    /// prints on stdout.
    pub fn table(&self, rows: &[PointRow]) -> String {
        let (_, common) = crate::report::split_common(
            rows,
            &crate::report::default_columns(rows, Some(&self.spec.x)),
        );
        let shown = |kv: &&String| {
            let key = kv.split('=').next().unwrap_or_default();
            !self.columns.iter().any(|c| c == key)
        };
        let common: Vec<&String> = common.iter().filter(shown).collect();
        let mut out = String::new();
        if !common.is_empty() {
            let joined: Vec<&str> = common.iter().map(|s| s.as_str()).collect();
            out.push_str(&format!("every row: {}\n\n", joined.join("  ")));
        }
        out.push_str(&render(rows, &self.columns, Format::Table));
        let mut marks = Marks::of(rows).off_axes(rows, &self.spec.x, &self.spec.y);
        if self.marks_legend.is_some() {
            (marks.star, marks.invalid) = (false, false);
        }
        out.push_str(&footer(&self.columns, &self.spec.x, &self.spec.y, marks));
        for n in (self.marks_legend.iter())
            .chain(&self.notes)
            .chain(&self.unmeasured)
        {
            out.push_str(&wrap(n));
        }
        out
    }

    /// Draws the chart of `rows` to `path` (its extension chooses SVG or PNG) and, with
    /// `png_too`, also to `path` with the extension `png` (an SVG for a browser, a PNG for any
    /// image viewer). Returns the files drawn (`a` or `a and b`) and what the chart left out
    /// ([`crate::plot::PlotReport::note`]). Errors: nothing to draw, or a file that cannot be
    /// written.
    pub fn draw(
        &self,
        rows: &[PointRow],
        path: &Path,
        png_too: bool,
    ) -> Result<(String, Option<String>), StoreError> {
        let note = plot(rows, &self.spec, path)?.note();
        let mut files = path.display().to_string();
        if png_too {
            let png = path.with_extension("png");
            plot(rows, &self.spec, &png)?;
            files = format!("{files} and {}", png.display());
        }
        Ok((files, note))
    }
}

/// Concurrencies of `ran` without a row in `rows`, as text: points cut short before any
/// request finished, which the store keeps as failed points, not rows.
pub fn unlisted(ran: &[i64], rows: &[PointRow]) -> Vec<String> {
    ran.iter()
        .filter(|&&c| !rows.iter().any(|r| r.conc == c))
        .map(i64::to_string)
        .collect()
}

/// The last line of a quickstart: how many points `report` ingested (how many of them the
/// store keeps as invalid, `why_invalid`; how many it skipped), where (`stored_in`, the
/// store's location; `None`: a throw-away in-memory store, `--no-db`), and the `charts`.
pub fn stored_line(
    report: &IngestReport,
    stored_in: Option<&str>,
    charts: &str,
    why_invalid: &str,
) -> String {
    let mut notes = Vec::new();
    // Failed points (nothing measured) are named apart from invalid ones (trial 14: "conc 1: no
    // request finished, stored as a failed point" above "1 point (all invalid: …)").
    let (f, i) = (report.failed_points, report.invalid_points);
    match f {
        0 => {}
        n if n == report.points => notes.push("failed: nothing measured".into()),
        n => notes.push(format!("{n} failed: nothing measured")),
    }
    match i {
        0 => {}
        n if n == report.points => notes.push(format!("all invalid: {why_invalid}")),
        n => notes.push(format!("{n} invalid: {why_invalid}")),
    }
    if !report.skipped.is_empty() {
        notes.push(format!("{} skipped", report.skipped.len()));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    let n = inferbench_core::count(report.points, "point");
    match stored_in {
        None => format!("{n}{notes}, not stored (--no-db); chart: {charts}"),
        Some(db) => format!("stored {n}{notes} in {db}; chart: {charts}"),
    }
}

impl Shown<'_> {
    /// Ingests the run directory into `store` and reads back its batch's rows (what `report
    /// -f batch=<batch>` lists): the ingest's report and the rows.
    fn stored_rows(&self, store: &mut Store) -> anyhow::Result<(IngestReport, Vec<PointRow>)> {
        let report = store.ingest_path(self.run_dir, &Default::default())?;
        // A write the database could not take (a full disk, `ulimit -f`) stopped the ingest:
        // an error, which the CLI says with the limit where it explains it.
        if let Some(w) = &report.write_failed {
            anyhow::bail!("storing {}: {}", w.path, w.reason);
        }
        let mut filter = inferbench_store::Filter::default();
        filter.add(&format!("batch={}", self.batch))?;
        let rows = store.points(&filter, &Default::default())?;
        Ok((report, rows))
    }
}

/// A quickstart's batch as stored, ready to show: its [`Preview`], the stored rows, the
/// ingest's report and what the store keeps as invalid. The caller prints [`Self::text`]
/// (stdout), then draws the chart ([`Self::draw`], its note on stderr), then prints
/// [`Self::stored_line`].
#[derive(Debug, Clone)]
pub struct QuickstartBatch {
    /// The table and chart settings.
    pub view: Preview,
    /// The batch's stored rows (frontier marked).
    pub rows: Vec<PointRow>,
    /// What the ingest of the run directory did.
    pub report: IngestReport,
    /// What the store keeps as invalid here, for the last line ([`stored_line`]).
    pub why_invalid: &'static str,
}

impl QuickstartBatch {
    /// What a quickstart prints on stdout of its batch: a blank line and the table of the rows
    /// ([`Preview::table`]); without rows (a quickstart interrupted before any request
    /// finished) only the notes, where trial 13 got an empty table and a "nothing to plot"
    /// warning.
    pub fn text(&self) -> String {
        if self.rows.is_empty() {
            let mut out = String::from("\nno request finished: nothing to tabulate or chart\n");
            if let Some(n) = &self.view.unmeasured {
                out.push_str(&wrap(n));
            }
            return out;
        }
        format!("\n{}", self.view.table(&self.rows))
    }

    /// Draws the chart ([`Preview::draw`]) to `chart` (and its PNG with `png_too`): the files
    /// drawn and what the chart left out; `none` and no note without rows (nothing is drawn).
    ///
    /// # Errors
    /// A file that cannot be written.
    pub fn draw(
        &self,
        chart: &Path,
        png_too: bool,
    ) -> Result<(String, Option<String>), StoreError> {
        if self.rows.is_empty() {
            return Ok(("none".into(), None));
        }
        self.view.draw(&self.rows, chart, png_too)
    }

    /// The last line ([`stored_line`]): `stored_in` the store's location (`None`: `--no-db`),
    /// `charts` what [`Self::draw`] drew.
    pub fn stored_line(&self, stored_in: Option<&str>, charts: &str) -> String {
        stored_line(&self.report, stored_in, charts, self.why_invalid)
    }
}

/// The fixed-length quickstart's view of its run: ingests `shown.run_dir` into `store` and
/// returns its batch from the stored rows, so the table shows what `report -f batch=<batch>`
/// shows (trial 9: a point without interactivity was starred here and not there).
/// `concs` are the concurrencies that ran.
///
/// # Errors
/// The ingest or the query failed.
pub fn fixed_quickstart(
    store: &mut Store,
    shown: &Shown<'_>,
    concs: &[i64],
) -> anyhow::Result<QuickstartBatch> {
    let (report, mut rows) = shown.stored_rows(store)?;
    let mut view = Preview {
        columns: [
            "conc",
            "tput_per_gpu",
            "median_intvty",
            "p99_ttft",
            "frontier",
        ]
        .map(String::from)
        .to_vec(),
        notes: std::iter::once(
            "times are modelled: the simulated hardware's, not this machine's wall clock".into(),
        )
        .chain(shown.notes.iter().cloned())
        .collect(),
        ..Preview::default()
    };
    view.spec.title = shown.title.clone();
    inferbench_store::query::mark_frontier(&mut rows, &view.spec.x, &view.spec.y);
    // A point cut short before any request finished is a failed point, not a row here.
    let failed = unlisted(concs, &rows);
    if !failed.is_empty() {
        view.unmeasured = Some(format!(
            "conc {}: no request finished, {}",
            failed.join(", "),
            how_stored(failed.len(), report.failed_points)
        ));
    }
    Ok(QuickstartBatch {
        view,
        rows,
        report,
        why_invalid: "cut short by the interruption, or timed on a starved CPU as a note above \
                      says; kept off frontiers unless --include-invalid",
    })
}

/// The agentic quickstart's view of its run, as [`fixed_quickstart`]'s: the North-Star
/// frontier (tok/s/GPU against p90 E2E-normalized interactivity) of its batch as a preview
/// (every point is invalid, far below 900 s; the lane counts in `cut_short` stay invalid and
/// off it), one legend for its marks, and the chart.
///
/// # Errors
/// The ingest or the query failed.
pub fn agentic_quickstart(
    store: &mut Store,
    shown: &Shown<'_>,
    cut_short: &[i64],
) -> anyhow::Result<QuickstartBatch> {
    use inferbench_store::query::NORTH_STAR_X;
    let (report, mut rows) = shown.stored_rows(store)?;
    // Every quickstart point is invalid (far below 900 s): its frontier is a preview, and the
    // footer says so once instead of `invalid` on every row. A point cut short stays invalid:
    // listed as such and off the preview, as the fixed-length quickstart keeps it.
    for r in &mut rows {
        r.valid = !cut_short.contains(&r.conc);
    }
    inferbench_store::query::mark_frontier_with(&mut rows, NORTH_STAR_X, "tput_per_gpu", false);
    let mut view = Preview {
        columns: [
            "conc",
            "tput_per_gpu",
            NORTH_STAR_X,
            "median_e2el",
            "frontier",
        ]
        .map(String::from)
        .to_vec(),
        spec: PlotSpec {
            x: NORTH_STAR_X.into(),
            y: "tput_per_gpu".into(),
            title: shown.title.clone(),
            // Rows are valid here unless cut short (above), so those draw hollow and off the line.
            include_invalid: false,
            ..Default::default()
        },
        notes: shown.notes.clone(),
        ..Preview::default()
    };
    // One legend for `*` and `invalid` (trial 16: the report's `invalid` legend, a second one
    // for cut-short points and a third line saying every point was invalid, beside a `*`).
    let mut legend = "conc = lanes (session trees replayed at once). Every point here is \
        shorter than AgentX's 900\u{a0}s, so every one is an invalid result: once stored, `report` \
        lists them but keeps them off its frontiers unless --include-invalid; `*` marks this run's preview frontier \
        (tok/s/GPU against p90 E2E-normalized interactivity) among the points that replayed \
        their whole time"
        .to_string();
    if cut_short.iter().any(|c| rows.iter().any(|r| r.conc == *c)) {
        legend.push_str(
            "; `invalid` = cut short besides (interrupted before its replay time ran out): \
             never on the preview frontier",
        );
    }
    view.marks_legend = Some(legend);
    // A point cut short before any request finished is a failed point, not a row here.
    let unlisted = unlisted(cut_short, &rows);
    if !unlisted.is_empty() {
        view.unmeasured = Some(format!(
            "lanes {}: cut short before any request finished, {}",
            unlisted.join(", "),
            how_stored(unlisted.len(), report.failed_points)
        ));
    }
    // The default chart comes as SVG and PNG, as the fixed-seq quickstart's.
    Ok(QuickstartBatch {
        view,
        rows,
        report,
        why_invalid: "replays under 900 s or cut short",
    })
}

/// How `n` points that ran and have no row are stored, when the ingest stored `failed` failed
/// points: all of them as failed points ([`stored_as_failed`]), or where fewer were stored, that
/// the rest left no result to ingest (issue 39, fresh tester's finding 3: lanes that could not
/// write their `status.json` were said to be "stored as failed points" above "stored 0
/// points").
fn how_stored(n: usize, failed: usize) -> String {
    let none = |n: usize| {
        if n == 1 {
            "not stored: it left no result to ingest (its line above says why)".to_string()
        } else {
            format!("not stored: {n} left no result to ingest (their lines above say why)")
        }
    };
    match failed.min(n) {
        f if f == n => stored_as_failed(n).to_string(),
        0 => none(n),
        f => format!("{}; {}", stored_as_failed_of(f, n), none(n - f)),
    }
}

/// "`f` of the `n` stored as failed points (…)": part of them.
fn stored_as_failed_of(f: usize, n: usize) -> String {
    format!(
        "{f} of the {n} stored as {} (`report --include-failed` lists {})",
        if f == 1 {
            "a failed point"
        } else {
            "failed points"
        },
        if f == 1 { "it" } else { "them" }
    )
}

/// How `n` points that measured nothing are stored: "stored as a failed point (`report
/// --include-failed` lists it)", or in the plural (trial 19: "lists it" of several).
fn stored_as_failed(n: usize) -> &'static str {
    if n == 1 {
        "stored as a failed point (`report --include-failed` lists it)"
    } else {
        "stored as failed points (`report --include-failed` lists them)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(conc: i64, x: f64, y: f64) -> PointRow {
        let mut r = PointRow {
            conc,
            valid: true,
            model: "m".into(),
            hardware: "h100".into(),
            framework: "sim".into(),
            scenario: "fixed_seq_len".into(),
            ..PointRow::default()
        };
        r.metrics.insert("median_intvty".into(), x);
        r.metrics.insert("tput_per_gpu".into(), y);
        r
    }

    #[test]
    fn table_notes_charts_and_last_line() {
        let rows = [row(1, 140.0, 1200.0), row(4, 130.0, 4000.0)];
        let p = Preview {
            columns: vec!["conc".into(), "tput_per_gpu".into(), "frontier".into()],
            notes: vec!["times are modelled".into()],
            ..Preview::default()
        };
        let t = p.table(&rows);
        // What every row shares, once above the table, as `report` names it (trial 17).
        assert!(
            t.starts_with("every row: model=m  ") && t.contains("hardware=h100  framework=sim"),
            "{t}"
        );
        assert!(t.contains("\n\nconc  tput_per_gpu"), "{t}");
        // Only a table with a `*` row explains `*` (trial 13).
        assert!(!t.contains("* = on its group's Pareto frontier"), "{t}");
        let mut rows = rows;
        rows[1].frontier = true;
        let t = p.table(&rows);
        assert!(t.contains("* = on its group's Pareto frontier"), "{t}");
        assert!(t.ends_with("\ntimes are modelled\n"), "{t}");
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("c.svg");
        let (files, note) = p.draw(&rows, &svg, true).unwrap();
        assert_eq!(
            files,
            format!(
                "{} and {}",
                svg.display(),
                dir.path().join("c.png").display()
            )
        );
        assert_eq!(note, None);
        assert!(dir.path().join("c.png").is_file());
        assert_eq!(unlisted(&[1, 2, 4], &rows), ["2"]);

        let mut report = IngestReport {
            points: 2,
            invalid_points: 1,
            ..IngestReport::default()
        };
        assert_eq!(
            stored_line(&report, Some("q.db"), "c.svg", "cut short"),
            "stored 2 points (1 invalid: cut short) in q.db; chart: c.svg"
        );
        report.invalid_points = 2;
        assert_eq!(
            stored_line(&report, None, "c.svg", "cut short"),
            "2 points (all invalid: cut short), not stored (--no-db); chart: c.svg"
        );
        // A failed point is named as failed, not as invalid (trial 14).
        report.invalid_points = 0;
        report.failed_points = 2;
        assert_eq!(
            stored_line(&report, Some("q.db"), "none", "cut short"),
            "stored 2 points (failed: nothing measured) in q.db; chart: none"
        );
        assert_eq!(
            stored_as_failed(2),
            "stored as failed points (`report --include-failed` lists them)"
        );
        // Issue 39, fresh tester's finding 3: only what the ingest stored is said stored.
        assert_eq!(how_stored(2, 2), stored_as_failed(2));
        assert_eq!(how_stored(1, 3), stored_as_failed(1));
        assert_eq!(
            how_stored(4, 0),
            "not stored: 4 left no result to ingest (their lines above say why)"
        );
        assert_eq!(
            how_stored(1, 0),
            "not stored: it left no result to ingest (its line above says why)"
        );
        assert_eq!(
            how_stored(3, 1),
            "1 of the 3 stored as a failed point (`report --include-failed` lists it); not \
             stored: 2 left no result to ingest (their lines above say why)"
        );
        report.invalid_points = 1;
        report.failed_points = 1;
        assert_eq!(
            stored_line(&report, Some("q.db"), "c.svg", "cut short"),
            "stored 2 points (1 failed: nothing measured; 1 invalid: cut short) in q.db; chart: c.svg"
        );
    }

    /// What the CLI prints of a quickstart's batch: with rows, a blank line and the table, the
    /// chart drawn; without (interrupted before any request finished), only the unmeasured
    /// line, nothing drawn (`none`, no file written), and the last line says so.
    #[test]
    fn a_batch_without_rows_shows_only_its_notes() {
        let view = Preview {
            columns: vec!["conc".into(), "tput_per_gpu".into()],
            unmeasured: Some("conc 1: no request finished".into()),
            ..Preview::default()
        };
        let report = IngestReport {
            points: 1,
            failed_points: 1,
            ..IngestReport::default()
        };
        let mut batch = QuickstartBatch {
            view,
            rows: Vec::new(),
            report,
            why_invalid: "cut short",
        };
        assert_eq!(
            batch.text(),
            "\nno request finished: nothing to tabulate or chart\nconc 1: no request finished\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("c.svg");
        assert_eq!(batch.draw(&svg, true).unwrap(), ("none".to_string(), None));
        assert!(!svg.exists());
        assert_eq!(
            batch.stored_line(Some("q.db"), "none"),
            "stored 1 point (failed: nothing measured) in q.db; chart: none"
        );
        batch.rows = vec![row(1, 140.0, 1200.0)];
        assert_eq!(batch.text(), format!("\n{}", batch.view.table(&batch.rows)));
        assert_eq!(
            batch.draw(&svg, false).unwrap().0,
            svg.display().to_string()
        );
        assert!(svg.is_file());
    }
}
