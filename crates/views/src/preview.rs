//! What a quickstart shows of the points it has just stored: the report's table of them with
//! its footer and the quickstart's own notes, the chart as SVG and PNG, and the last line
//! saying where the points went.

use std::path::Path;

use inferbench_store::query::PointRow;
use inferbench_store::{IngestReport, StoreError};

use crate::plot::{plot, PlotSpec};
use crate::report::{footer, render, wrap, Format};

/// A quickstart's view of its batch.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    /// Table columns, in order (registry names: `conc`, `tput_per_gpu`, `frontier`, …).
    pub columns: Vec<String>,
    /// The chart; its `x` and `y` are also the axes the footer's `*` names.
    pub spec: PlotSpec,
    /// The footer explains `invalid` rows.
    pub invalid: bool,
    /// AgentX points: the footer says their `*` is North-Star gated.
    pub agentic: bool,
    /// Lines after the footer, each wrapped as the footer is ([`wrap`]).
    pub notes: Vec<String>,
}

impl Preview {
    /// The table of `rows` ([`render`]), the report's footer ([`footer`]), then the notes:
    /// what a quickstart prints on stdout.
    pub fn table(&self, rows: &[PointRow]) -> String {
        let mut out = render(rows, &self.columns, Format::Table);
        out.push_str(&footer(
            &self.columns,
            &self.spec.x,
            &self.spec.y,
            self.invalid,
            self.agentic,
        ));
        for n in &self.notes {
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
    match report.invalid_points {
        0 => {}
        n if n == report.points => notes.push(format!("all invalid: {why_invalid}")),
        n => notes.push(format!("{n} of them invalid: {why_invalid}")),
    }
    if !report.skipped.is_empty() {
        notes.push(format!("{} skipped", report.skipped.len()));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    let n = report.points;
    match stored_in {
        None => format!("{n} points{notes}, not stored (--no-db); chart: {charts}"),
        Some(db) => format!("stored {n} points{notes} in {db}; chart: {charts}"),
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
        assert!(t.starts_with("conc  tput_per_gpu"), "{t}");
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
            "stored 2 points (1 of them invalid: cut short) in q.db; chart: c.svg"
        );
        report.invalid_points = 2;
        assert_eq!(
            stored_line(&report, None, "c.svg", "cut short"),
            "2 points (all invalid: cut short), not stored (--no-db); chart: c.svg"
        );
    }
}
