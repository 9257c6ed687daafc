//! Pareto charts with `plotters`: every point of each group as a faint disc in a ring, labelled
//! with its concurrency, its frontier as straight segments with solid markers, axis labels with
//! units, and a legend of the groups. SVG (vector, no fonts needed at render time) or PNG
//! (bitmap; text drawn with the system's sans-serif font).

use std::collections::BTreeMap;
use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::label;
use inferbench_store::compare::frontier_knots;
use inferbench_store::query::PointRow;
use inferbench_store::StoreError;

/// What to draw.
#[derive(Debug, Clone)]
pub struct PlotSpec {
    /// Metric on x (default `median_intvty`).
    pub x: String,
    /// Metric on y (default `tput_per_gpu`).
    pub y: String,
    /// Chart title.
    pub title: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Draw only frontier points.
    pub frontier_only: bool,
    /// InferenceX's clipping: drop points above $5 per million tokens on the built-in cost
    /// metrics (`usd_per_m_{hyperscaler,neocloud,rental}*`, not custom) and points whose TTFT
    /// x is above 60 s (reference/inferencex-app.md §4.5). On by default.
    pub clip: bool,
    /// Let invalid points ([`PointRow::valid`] false: AgentX runs below 900 s) form the
    /// frontier line too; without it they are drawn as points only.
    pub include_invalid: bool,
    /// A source line drawn under the chart (database, date range, filters, inferbench
    /// version: the dashboard's export, `/api/v1/chart.png`); empty draws none.
    pub source: String,
}

/// The image format of [`render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartFormat {
    /// SVG text (UTF-8).
    Svg,
    /// PNG, 8-bit RGB without an alpha channel (colour type 2), on a white background.
    Png,
}

/// Whether InferenceX's chart clipping drops a point at (x, y).
pub fn clipped(x_metric: &str, y_metric: &str, x: f64, y: f64) -> bool {
    let cost = y_metric.starts_with("usd_per_m_") && !y_metric.starts_with("usd_per_m_custom");
    (cost && y > 5.0) || (x_metric.contains("ttft") && x > 60.0)
}

impl Default for PlotSpec {
    fn default() -> Self {
        Self {
            x: "median_intvty".into(),
            y: "tput_per_gpu".into(),
            title: String::new(),
            width: 1200,
            height: 800,
            frontier_only: false,
            clip: true,
            include_invalid: false,
            source: String::new(),
        }
    }
}

/// A colour-blind-safe palette (Okabe–Ito) extended with darker shades.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(170, 40, 40),
    RGBColor(60, 60, 160),
    RGBColor(40, 120, 40),
];

/// What a drawn chart left out, so callers can say so (trial 9: a point without
/// interactivity vanished from the chart without a word).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlotReport {
    /// Points drawn.
    pub drawn: usize,
    /// Points without a finite x or y: `conc N of GROUP (no METRIC)`, in row order.
    pub missing: Vec<String>,
    /// Points InferenceX's clipping dropped ([`clipped`]).
    pub clipped: usize,
}

impl PlotReport {
    /// One line naming what was not drawn, or `None` when everything was.
    pub fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!(
                "{} point(s) lack a value: {}",
                self.missing.len(),
                self.missing.join("; ")
            ));
        }
        if self.clipped > 0 {
            parts.push(format!(
                "{} point(s) clipped as InferenceX does (above $5/M tokens or TTFT above 60 s; \
                 --no-clip keeps them)",
                self.clipped
            ));
        }
        (!parts.is_empty()).then(|| format!("not drawn: {}", parts.join("; ")))
    }
}

/// The rows of each group that a chart draws (finite x and y, not clipped), and what it left
/// out. Errors when no row has both metrics.
fn grouped<'a>(
    rows: &'a [PointRow],
    spec: &PlotSpec,
) -> Result<(BTreeMap<String, Vec<&'a PointRow>>, PlotReport), StoreError> {
    let mut groups: BTreeMap<String, Vec<&PointRow>> = BTreeMap::new();
    let mut report = PlotReport::default();
    for r in rows {
        let x = r.get(&spec.x).filter(|v| v.is_finite());
        let y = r.get(&spec.y).filter(|v| v.is_finite());
        let (Some(x), Some(y)) = (x, y) else {
            let lacking: Vec<&str> = [(&spec.x, x), (&spec.y, y)]
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(m, _)| m.as_str())
                .collect();
            report.missing.push(format!(
                "conc {} of {} (no {})",
                r.conc,
                r.group(),
                lacking.join(", no ")
            ));
            continue;
        };
        if spec.clip && clipped(&spec.x, &spec.y, x, y) {
            report.clipped += 1;
        } else {
            report.drawn += 1;
            groups.entry(r.group()).or_default().push(r);
        }
    }
    if groups.is_empty() {
        return Err(StoreError::Other(format!(
            "nothing to plot: no point has both {} and {}",
            spec.x, spec.y
        )));
    }
    Ok((groups, report))
}

/// Draws the chart to `out`; the extension chooses the format (`.svg` or `.png`). Returns what
/// was drawn and left out. The chart is drawn in memory ([`render`]) and written to
/// `<out>.tmp` (listed in `inferbench_core::tempfiles` while it exists), flushed to disk and
/// renamed onto `out` (through a symbolic link, onto the file it leads to), so a write that
/// fails (a full disk, `ulimit -f`) leaves the previous chart as it was and no temporary file
/// (issue 39, a fresh tester's finding 3: a cut-short chart replaced it). Errors when there is
/// nothing to plot (no row has both metrics) or the file cannot be written (`OUT: why`).
pub fn plot(rows: &[PointRow], spec: &PlotSpec, out: &Path) -> Result<PlotReport, StoreError> {
    let ext = out
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_lowercase();
    let err = |e: String| StoreError::Other(format!("{}: {e}", out.display()));
    let format = match ext.as_str() {
        "svg" => ChartFormat::Svg,
        "png" => ChartFormat::Png,
        _ => {
            grouped(rows, spec)?;
            return Err(err(
                "unsupported format: use a .svg or .png file name".into()
            ));
        }
    };
    // The file's directory is made before drawing, so a bad path says what is wrong (trial
    // 14: a missing directory gave the backend's debug text).
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| err(format!("cannot create its directory: {e}")))?;
    }
    // Never a device, FIFO, socket or directory (issue 39 §1): refused before it is written.
    if std::fs::metadata(out).is_ok_and(|m| !m.is_file()) {
        return Err(err("it exists and is not a regular file".into()));
    }
    let (bytes, report) = render(rows, spec, format)?;
    // A link is written through (the file it leads to is replaced, not the link).
    let target = match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf())
        }
        _ => out.to_path_buf(),
    };
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = target.with_file_name(name);
    let _pending = inferbench_core::tempfiles::register(&tmp);
    let written = (|| {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_data()?;
        std::fs::rename(&tmp, &target)
    })();
    if let Err(e) = written {
        std::fs::remove_file(&tmp).ok();
        return Err(err(format!("cannot write it: {e}")));
    }
    Ok(report)
}

/// Draws the chart in memory, as [`plot`] draws it to a file (the same renderer: the
/// dashboard's `/api/v1/chart.png` and `/api/v1/chart.svg`): the image's bytes and what was
/// drawn and left out. A PNG is 8-bit RGB without alpha on white. Errors when there is nothing
/// to plot (no row has both metrics), the size is zero, or the backend or the PNG encoder fails.
pub fn render(
    rows: &[PointRow],
    spec: &PlotSpec,
    format: ChartFormat,
) -> Result<(Vec<u8>, PlotReport), StoreError> {
    let (groups, report) = grouped(rows, spec)?;
    let (w, h) = (spec.width, spec.height);
    if w == 0 || h == 0 {
        return Err(StoreError::Other(format!("chart size {w}x{h}: zero")));
    }
    let err = |e: String| StoreError::Other(format!("drawing the chart: {e}"));
    match format {
        ChartFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
                draw(root, &groups, spec).map_err(err)?;
            }
            Ok((svg.into_bytes(), report))
        }
        ChartFormat::Png => {
            let mut rgb = vec![255u8; w as usize * h as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
                draw(root, &groups, spec).map_err(err)?;
            }
            let mut png = Vec::new();
            {
                let mut enc = ::png::Encoder::new(&mut png, w, h);
                enc.set_color(::png::ColorType::Rgb);
                enc.set_depth(::png::BitDepth::Eight);
                let mut writer = enc.write_header().map_err(|e| err(e.to_string()))?;
                writer
                    .write_image_data(&rgb)
                    .map_err(|e| err(e.to_string()))?;
                writer.finish().map_err(|e| err(e.to_string()))?;
            }
            Ok((png, report))
        }
    }
}

/// Tick label: integers when the axis spans ≥ 10 units, else up to 3 decimals.
fn tick(v: f64, span: f64) -> String {
    if span >= 10.0 {
        format!("{v:.0}")
    } else if span >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let span = (hi - lo).abs().max(hi.abs() * 0.1).max(1e-9);
    (
        (lo - span * 0.05).max(if lo >= 0.0 { 0.0 } else { f64::MIN }),
        hi + span * 0.08,
    )
}

/// The chart's coordinates: metric values on both axes.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Plot ranges: (x0, x1) and (y0, y1) in metric units, padded around the points.
type Ranges = ((f64, f64), (f64, f64));

/// Draws `groups` (curve name → points) on `root`: axes, each group's points, frontier and
/// concurrency labels ([`draw_group`]), and the legend in the emptiest corner. Errors: the
/// backend's, as text.
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    groups: &BTreeMap<String, Vec<&PointRow>>,
    spec: &PlotSpec,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    // The source line, under the chart (only when given: the CLI's charts stay as they were).
    let root = if spec.source.is_empty() {
        root
    } else {
        let (_, h) = root.dim_in_pixel();
        let (chart_area, foot) = root.split_vertically(h.saturating_sub(28));
        foot.draw(&Text::new(
            spec.source.clone(),
            (20, 4),
            ("sans-serif", 14).into_font().color(&RGBColor(80, 80, 80)),
        ))
        .map_err(|x| e(&x))?;
        chart_area
    };
    let all = groups.values().flatten();
    let xs: Vec<f64> = all.clone().filter_map(|r| r.get(&spec.x)).collect();
    let ys: Vec<f64> = all.filter_map(|r| r.get(&spec.y)).collect();
    let (x0, x1) = padded(
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let (y0, y1) = padded(
        ys.iter().copied().fold(f64::INFINITY, f64::min),
        ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let title = if spec.title.is_empty() {
        format!("{} vs. {}", label(&spec.y), label(&spec.x))
    } else {
        spec.title.clone()
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 26))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|x| e(&x))?;
    let fmt_x = move |v: &f64| tick(*v, x1 - x0);
    let fmt_y = move |v: &f64| tick(*v, y1 - y0);
    chart
        .configure_mesh()
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&fmt_y)
        .max_light_lines(4)
        .x_desc(x_desc(groups, spec))
        .y_desc(label(&spec.y))
        .axis_desc_style(("sans-serif", 20))
        .label_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|x| e(&x))?;
    // Label boxes already drawn (pixels), so that a later label moves aside rather than
    // overprinting one (trial 8: `2` and `4` of one curve ran into each other).
    let mut placed: Vec<PixelBox> = Vec::new();
    let markers = obstacles(&chart, groups, spec);
    for (i, (name, rows)) in groups.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let ranges = ((x0, x1), (y0, y1));
        draw_group(
            &mut chart,
            (name, rows),
            c,
            spec,
            ranges,
            (&mut placed, &markers),
        )
        .map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(legend_position(groups, spec, ((x0, x1), (y0, y1))))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// The x-axis title: the metric, then what the point labels are (concurrency, or lanes for
/// AgentX points) and what a hollow point means.
fn x_desc(groups: &BTreeMap<String, Vec<&PointRow>>, spec: &PlotSpec) -> String {
    let any_invalid = groups.values().flatten().any(|r| !r.valid);
    // AgentX points' concurrency is the number of lanes (sessions replayed at once).
    let all_agentic = groups
        .values()
        .flatten()
        .all(|r| r.scenario == "agentic-coding");
    format!(
        "{}   [point labels: {}{}]",
        label(&spec.x),
        if all_agentic {
            "lanes (concurrency)"
        } else {
            "concurrency"
        },
        if any_invalid && !spec.include_invalid {
            "; hollow: invalid, kept off frontiers unless --include-invalid"
        } else if any_invalid {
            "; hollow: invalid"
        } else {
            ""
        }
    )
}

/// What a point label must not cover, as pixel boxes: every drawn marker of every group
/// (trial 10: with two close curves one group's labels sat on the other's points) and the
/// frontier lines (trial 11: a label sat under its own curve's next segment, and one on
/// another curve's), as 2 px boxes every 4 px along each segment.
fn obstacles<DB: DrawingBackend>(
    chart: &Chart<'_, DB>,
    groups: &BTreeMap<String, Vec<&PointRow>>,
    spec: &PlotSpec,
) -> Vec<PixelBox> {
    let mut markers: Vec<PixelBox> = groups
        .values()
        .flatten()
        .filter_map(|r| Some(chart.backend_coord(&(r.get(&spec.x)?, r.get(&spec.y)?))))
        .map(|(px, py)| (px - 5, py - 5, px + 5, py + 5))
        .collect();
    for rows in groups.values() {
        let competing: Vec<&PointRow> = rows
            .iter()
            .copied()
            .filter(|r| r.counts(spec.include_invalid))
            .collect();
        let px: Vec<(i32, i32)> = frontier_knots(&competing, &spec.x, &spec.y)
            .iter()
            .map(|p| chart.backend_coord(p))
            .collect();
        markers.extend(px.windows(2).flat_map(|w| segment_boxes(w[0], w[1])));
    }
    markers
}

/// One group (`name`, its `rows`) in colour `c`: its points (valid filled, invalid hollow;
/// none with `frontier_only`), its frontier as straight segments with its knots, and each
/// point's concurrency label placed clear of the `placed` labels and the `markers`
/// (the placed one added). `ranges`: the plot ranges, for coinciding labels.
fn draw_group<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    (name, rows): (&String, &Vec<&PointRow>),
    c: RGBColor,
    spec: &PlotSpec,
    ((x0, x1), (y0, y1)): Ranges,
    (placed, markers): (&mut Vec<PixelBox>, &[PixelBox]),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let competing: Vec<&PointRow> = rows
        .iter()
        .copied()
        .filter(|r| r.counts(spec.include_invalid))
        .collect();
    let knots = frontier_knots(&competing, &spec.x, &spec.y);
    if !spec.frontier_only {
        // Valid points filled faintly inside a ring of the group's colour (trial 19: the
        // faint disc alone read as a label without a marker), invalid ones hollow.
        let at = |r: &&PointRow| (r.get(&spec.x).unwrap_or(0.0), r.get(&spec.y).unwrap_or(0.0));
        chart.draw_series(
            (rows.iter().filter(|r| r.valid)).map(|r| Circle::new(at(r), 4, c.mix(0.35).filled())),
        )?;
        let scatter = chart.draw_series(rows.iter().map(|r| {
            let ring = if r.valid { 1 } else { 2 };
            Circle::new(at(r), 4, c.stroke_width(ring))
        }))?;
        // A group with no frontier (only invalid points) is named by its points.
        if knots.is_empty() {
            scatter
                .label(name.clone())
                .legend(move |(x, y)| Circle::new((x + 12, y), 4, c.stroke_width(2)));
        }
    }
    // The frontier drawn as straight segments between its points: the line never shows
    // a rise or dip that is not in the data (a spline through the knots can ripple).
    if !knots.is_empty() {
        chart
            .draw_series(LineSeries::new(knots.clone(), c.stroke_width(3)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
    }
    // Frontier points filled, unless invalid (on a frontier only with include_invalid):
    // those stay hollow, as the legend note says.
    let knot_valid = |(kx, ky): (f64, f64)| {
        competing
            .iter()
            .find(|r| r.get(&spec.x) == Some(kx) && r.get(&spec.y) == Some(ky))
            .is_none_or(|r| r.valid)
    };
    // An invalid knot is a ring on a white disc: without the disc the 3 px frontier line
    // running through it makes it look filled (trial 6).
    chart.draw_series(
        knots
            .iter()
            .filter(|&&p| !knot_valid(p))
            .map(|&p| Circle::new(p, 5, WHITE.filled())),
    )?;
    chart.draw_series(knots.iter().map(|&p| {
        let style = if knot_valid(p) {
            c.filled()
        } else {
            c.stroke_width(2)
        };
        Circle::new(p, 5, style)
    }))?;
    // Each point labelled with its concurrency (as InferenceX's charts do); frontier
    // points in the group's colour, the others faint.
    let on_frontier = |x: f64, y: f64| knots.iter().any(|&(kx, ky)| kx == x && ky == y);
    let mut labelled: Vec<(f64, f64, bool, i64)> = rows
        .iter()
        .filter_map(|r| {
            let (x, y) = (r.get(&spec.x)?, r.get(&spec.y)?);
            let f = on_frontier(x, y);
            (f || !spec.frontier_only).then_some((x, y, f, r.conc))
        })
        .collect();
    // Points of one group at the same concurrency that (nearly) coincide, e.g. repeats
    // of a run, get one label, not `1616`.
    labelled = one_label_per_spot(labelled, (x1 - x0, y1 - y0));
    let offsets: Vec<(i32, i32)> = labelled
        .iter()
        .map(|&(x, y, _, conc)| {
            let at = chart.backend_coord(&(x, y));
            place_label(at, conc.to_string().len(), placed, markers)
        })
        .collect();
    chart.draw_series(labelled.iter().zip(offsets).map(|(&(x, y, f, conc), off)| {
        let colour = if f { c.to_rgba() } else { c.mix(0.5) };
        EmptyElement::at((x, y))
            + Text::new(
                conc.to_string(),
                off,
                ("sans-serif", 13).into_font().color(&colour),
            )
    }))?;
    Ok(())
}

/// Where the legend goes: the corner whose legend box (its size from the longest group name
/// and the number of groups) covers the fewest points; upper right, where a
/// throughput-against-interactivity frontier leaves room, on a tie.
fn legend_position(
    groups: &BTreeMap<String, Vec<&PointRow>>,
    spec: &PlotSpec,
    ((x0, x1), (y0, y1)): Ranges,
) -> SeriesLabelPosition {
    let pts: Vec<(f64, f64)> = groups
        .values()
        .flatten()
        .filter_map(|r| Some((r.get(&spec.x)?, r.get(&spec.y)?)))
        .collect();
    let longest = groups.keys().map(|k| k.chars().count()).max().unwrap_or(0);
    // Plot area in pixels (figure less margins, axis label areas and caption) and the
    // legend's share of it: ~9 px per label character plus the swatch, ~22 px per row.
    let area_w = f64::from(spec.width.saturating_sub(40 + 90).max(1));
    let area_h = f64::from(spec.height.saturating_sub(40 + 60 + 40).max(1));
    let box_frac = (
        ((longest as f64 * 9.0 + 60.0) / area_w).min(1.0),
        ((groups.len() as f64 * 22.0 + 20.0) / area_h).min(1.0),
    );
    legend_corner(&pts, (x0, x1), (y0, y1), box_frac)
}

/// A drawn label's box in pixels: left, top, right, bottom.
type PixelBox = (i32, i32, i32, i32);

/// Where a point label of `chars` digits goes, as a text offset from its point `at` (pixels):
/// the first of upper right (the usual place), lower right, upper left, lower left, and
/// further up or down, whose box overlaps no label in `placed` (labels of every group drawn
/// so far) and no point marker in `markers` (every group's); when each overlaps something,
/// the one that overprints fewest labels, then fewest markers (upper right on a tie). The
/// chosen box is added to `placed`. Sizes are those of the 13 px sans-serif labels (about 8
/// px per digit) and the 5 px markers.
fn place_label(
    at: (i32, i32),
    chars: usize,
    placed: &mut Vec<PixelBox>,
    markers: &[PixelBox],
) -> (i32, i32) {
    let (w, h) = (8 * chars.max(1) as i32 + 2, 14);
    let candidates = [
        (6, -16),
        (6, 4),
        (-6 - w, -16),
        (-6 - w, 4),
        (6, -32),
        (6, 20),
        (-6 - w, -32),
        (-6 - w, 20),
        (-w / 2, -30),
        (-w / 2, 16),
        (6, -48),
        (6, 36),
    ];
    let boxed = |(dx, dy): (i32, i32)| (at.0 + dx, at.1 + dy, at.0 + dx + w, at.1 + dy + h);
    let overlaps = |a: PixelBox, b: &PixelBox| a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
    let cost = |o: (i32, i32)| {
        let b = boxed(o);
        let labels = placed.iter().filter(|p| overlaps(b, p)).count();
        let points = markers.iter().filter(|m| overlaps(b, m)).count();
        (labels, points)
    };
    // min_by_key keeps the first of equal costs: the candidates' order is the preference.
    let off = candidates
        .iter()
        .copied()
        .min_by_key(|&o| cost(o))
        .unwrap_or(candidates[0]);
    placed.push(boxed(off));
    off
}

/// Boxes of 2 × 2 px every 4 px along the segment from `a` to `b` (pixels), ends included:
/// what a label must not cover of a drawn line.
fn segment_boxes(a: (i32, i32), b: (i32, i32)) -> Vec<PixelBox> {
    let (dx, dy) = (f64::from(b.0 - a.0), f64::from(b.1 - a.1));
    let steps = ((dx.hypot(dy) / 4.0).ceil() as i32).max(1);
    (0..=steps)
        .map(|i| {
            let t = f64::from(i) / f64::from(steps);
            let x = a.0 + (dx * t).round() as i32;
            let y = a.1 + (dy * t).round() as i32;
            (x - 1, y - 1, x + 1, y + 1)
        })
        .collect()
}

/// Drops a label `(x, y, on_frontier, conc)` when an earlier one of the same concurrency sits
/// within 1 % of the axis spans `span` = (x span, y span) of it; a frontier label wins over a
/// non-frontier one at the same spot.
fn one_label_per_spot(
    mut labels: Vec<(f64, f64, bool, i64)>,
    span: (f64, f64),
) -> Vec<(f64, f64, bool, i64)> {
    labels.sort_by_key(|l| !l.2);
    let near = |a: f64, b: f64, s: f64| (a - b).abs() <= s.abs() * 0.01;
    let mut kept: Vec<(f64, f64, bool, i64)> = Vec::with_capacity(labels.len());
    for l in labels {
        if !kept
            .iter()
            .any(|k| k.3 == l.3 && near(k.0, l.0, span.0) && near(k.1, l.1, span.1))
        {
            kept.push(l);
        }
    }
    kept
}

/// The legend corner that covers the fewest of `pts` (data coordinates, axis ranges `x` and
/// `y`), for a legend box of `frac` = (width, height) as fractions of the plot area; ties go in
/// the order upper right, upper left, lower right, lower left.
fn legend_corner(
    pts: &[(f64, f64)],
    x: (f64, f64),
    y: (f64, f64),
    frac: (f64, f64),
) -> SeriesLabelPosition {
    // Each point's place in the plot area, 0..1 from the left and from the bottom.
    let rel = |v: f64, (lo, hi): (f64, f64)| {
        if hi > lo {
            (v - lo) / (hi - lo)
        } else {
            0.5
        }
    };
    let corners = [
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::LowerLeft, false, false),
    ];
    let covered = |right: bool, top: bool| {
        pts.iter()
            .filter(|&&(px, py)| {
                let (u, v) = (rel(px, x), rel(py, y));
                let in_x = if right {
                    u >= 1.0 - frac.0
                } else {
                    u <= frac.0
                };
                let in_y = if top { v >= 1.0 - frac.1 } else { v <= frac.1 };
                in_x && in_y
            })
            .count()
    };
    let mut best = (SeriesLabelPosition::UpperRight, usize::MAX);
    for (pos, right, top) in corners {
        let n = covered(right, top);
        if n < best.1 {
            best = (pos, n);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agentic_charts_name_lanes_and_invalid_knots_are_rings_on_white() {
        let row = |conc: i64, x: f64, y: f64| {
            let mut r = PointRow {
                scenario: "agentic-coding".into(),
                conc,
                valid: false,
                model: "m".into(),
                ..PointRow::default()
            };
            r.metrics.insert("median_intvty".into(), x);
            r.metrics.insert("tput_per_gpu".into(), y);
            // AgentX frontiers are North-Star gated (the one frontier rule, issue 39): both
            // points are winners in (p90 E2E-normalized interactivity, y) too.
            r.metrics
                .insert(inferbench_store::query::NORTH_STAR_X.into(), x);
            r
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.svg");
        let spec = PlotSpec {
            include_invalid: true,
            ..PlotSpec::default()
        };
        plot(&[row(1, 10.0, 100.0), row(2, 20.0, 50.0)], &spec, &out).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(
            svg.contains("[point labels: lanes (concurrency); hollow: invalid]"),
            "{svg}"
        );
        // Two white discs under the two invalid frontier rings.
        let discs = svg
            .lines()
            .filter(|l| {
                l.contains("<circle") && l.contains("r=\"5\"") && l.contains("fill=\"#FFFFFF\"")
            })
            .count();
        assert_eq!(discs, 2, "{svg}");
    }

    /// Trial 9: a point without interactivity vanished from the chart without a word.
    #[test]
    fn points_left_out_are_reported() {
        let row = |conc: i64, x: Option<f64>, y: f64| {
            let mut r = PointRow {
                conc,
                valid: true,
                model: "m".into(),
                hardware: "h100".into(),
                framework: "sim".into(),
                precision: "bf16".into(),
                spec_decoding: "none".into(),
                isl: 512,
                osl: 64,
                scenario: "fixed_seq_len".into(),
                ..PointRow::default()
            };
            if let Some(x) = x {
                r.metrics.insert("median_intvty".into(), x);
            }
            r.metrics.insert("tput_per_gpu".into(), y);
            r
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.svg");
        let got = plot(
            &[
                row(1, Some(140.0), 1200.0),
                row(64, None, 13000.0),
                row(128, Some(f64::NAN), 13100.0),
            ],
            &PlotSpec::default(),
            &out,
        )
        .unwrap();
        assert_eq!(got.drawn, 1);
        assert_eq!(
            got.note().unwrap(),
            "not drawn: 2 point(s) lack a value: conc 64 of m 512/64 h100_sim_bf16 (no \
             median_intvty); conc 128 of m 512/64 h100_sim_bf16 (no median_intvty)"
        );
        let all = plot(&[row(1, Some(140.0), 1200.0)], &PlotSpec::default(), &out).unwrap();
        assert_eq!(all.note(), None);
        // A chart in a directory not made yet gets it (as --out does); a path under a file
        // says what is wrong in words (trial 14: the backend's debug text).
        let one = [row(1, Some(140.0), 1200.0)];
        let deep = dir.path().join("new/dir/c.png");
        plot(&one, &PlotSpec::default(), &deep).unwrap();
        assert!(deep.is_file());
        let under_file = out.join("c.png");
        let e = plot(&one, &PlotSpec::default(), &under_file)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "{}: cannot create its directory: ",
                under_file.display()
            )) && !e.contains("Os {"),
            "{e}"
        );
    }

    /// Issue 42: the dashboard's export is `plot`'s drawing (one renderer): the in-memory SVG is
    /// the file's byte for byte, a source line adds one text under the chart, and the PNG is
    /// opaque RGB (colour type 2) of the asked size.
    #[test]
    fn render_draws_what_plot_writes() {
        let mut r = PointRow {
            conc: 8,
            valid: true,
            model: "m".into(),
            hardware: "h100".into(),
            framework: "sim".into(),
            precision: "bf16".into(),
            spec_decoding: "none".into(),
            isl: 512,
            osl: 64,
            scenario: "fixed_seq_len".into(),
            ..PointRow::default()
        };
        r.metrics.insert("median_intvty".into(), 50.0);
        r.metrics.insert("tput_per_gpu".into(), 900.0);
        let rows = [r];
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.svg");
        plot(&rows, &PlotSpec::default(), &out).unwrap();
        let (svg, report) = render(&rows, &PlotSpec::default(), ChartFormat::Svg).unwrap();
        assert_eq!(report.drawn, 1);
        assert_eq!(
            String::from_utf8(svg).unwrap(),
            std::fs::read_to_string(&out).unwrap()
        );
        let spec = PlotSpec {
            source: "source: test.db".into(),
            ..PlotSpec::default()
        };
        let (svg, _) = render(&rows, &spec, ChartFormat::Svg).unwrap();
        assert!(String::from_utf8(svg)
            .unwrap()
            .lines()
            .any(|l| l == "source: test.db"));
        let (png, _) = render(&rows, &spec, ChartFormat::Png).unwrap();
        assert_eq!(&png[16..24], &[0, 0, 4, 176, 0, 0, 3, 32]); // 1200 × 800
        assert_eq!((png[24], png[25]), (8, 2));
        let empty = PlotSpec {
            width: 0,
            ..PlotSpec::default()
        };
        assert!(render(&rows, &empty, ChartFormat::Png).is_err());
    }

    #[test]
    fn a_label_that_would_overprint_another_moves_aside() {
        let mut placed = Vec::new();
        // The first goes upper right of its point.
        assert_eq!(place_label((100, 100), 1, &mut placed, &[]), (6, -16));
        // A point 3 px to the right: upper right would overlap, lower right is free.
        assert_eq!(place_label((103, 101), 1, &mut placed, &[]), (6, 4));
        // A third there: upper left.
        assert_eq!(place_label((102, 100), 1, &mut placed, &[]), (-16, -16));
        // A far point keeps the usual place.
        assert_eq!(place_label((300, 300), 2, &mut placed, &[]), (6, -16));
        assert_eq!(placed.len(), 4);
        for (i, a) in placed.iter().enumerate() {
            for b in &placed[i + 1..] {
                assert!(
                    !(a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3),
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn a_label_keeps_off_another_groups_points() {
        // Another curve's marker sits just upper right of the point (trial 10): the label
        // goes lower right instead of onto it.
        let other = [(108, 86, 118, 96)];
        let mut placed = Vec::new();
        assert_eq!(place_label((100, 100), 1, &mut placed, &other), (6, 4));
        // Hemmed in by markers everywhere, a label still never overprints a label: it takes
        // the place with the fewest markers under it.
        let everywhere: Vec<PixelBox> = (-60..60)
            .step_by(4)
            .flat_map(|dx| (-60..60).step_by(4).map(move |dy| (dx, dy)))
            .map(|(dx, dy)| (200 + dx, 200 + dy, 202 + dx, 202 + dy))
            .collect();
        let mut placed = vec![(206, 184, 216, 198)];
        let off = place_label((200, 200), 1, &mut placed, &everywhere);
        assert_ne!(off, (6, -16));
        assert!(!overlap(placed[0], placed[1]), "{placed:?}");
    }

    /// A segment running through the usual upper-right place sends the label elsewhere.
    #[test]
    fn a_label_keeps_off_lines() {
        let line = segment_boxes((100, 100), (140, 70));
        assert_eq!(line.first(), Some(&(99, 99, 101, 101)));
        assert_eq!(line.last(), Some(&(139, 69, 141, 71)));
        assert_eq!(line.len(), 14); // 50 px long: 13 steps of ≤ 4 px
        let mut placed = Vec::new();
        let off = place_label((100, 100), 1, &mut placed, &line);
        assert_eq!(off, (6, 4));
        assert!(!line.iter().any(|m| overlap(placed[0], *m)), "{placed:?}");
    }

    fn overlap(a: PixelBox, b: PixelBox) -> bool {
        a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
    }

    #[test]
    fn coinciding_points_of_one_concurrency_get_one_label() {
        let got = one_label_per_spot(
            vec![
                (50.0, 50.0, false, 16),
                (50.4, 49.7, true, 16),
                (50.0, 50.0, false, 4),
                (60.0, 50.0, false, 16),
            ],
            (100.0, 100.0),
        );
        assert_eq!(
            got,
            vec![
                (50.4, 49.7, true, 16),
                (50.0, 50.0, false, 4),
                (60.0, 50.0, false, 16)
            ]
        );
    }

    #[test]
    fn legend_goes_where_it_covers_the_fewest_points() {
        let pos =
            |pts: &[(f64, f64)]| match legend_corner(pts, (0.0, 100.0), (0.0, 100.0), (0.4, 0.2)) {
                SeriesLabelPosition::UpperRight => "UpperRight",
                SeriesLabelPosition::UpperLeft => "UpperLeft",
                SeriesLabelPosition::LowerRight => "LowerRight",
                SeriesLabelPosition::LowerLeft => "LowerLeft",
                _ => "other",
            };
        // A falling frontier leaves the upper right empty.
        assert_eq!(
            pos(&[(10.0, 95.0), (50.0, 60.0), (95.0, 10.0)]),
            "UpperRight"
        );
        // Points up there (agentic quickstart: more lanes, more tok/s and interactivity).
        assert_eq!(pos(&[(70.0, 90.0), (95.0, 95.0), (5.0, 5.0)]), "UpperLeft");
        assert_eq!(
            pos(&[
                (70.0, 90.0),
                (80.0, 85.0),
                (5.0, 95.0),
                (10.0, 90.0),
                (5.0, 5.0)
            ]),
            "LowerRight"
        );
        assert_eq!(pos(&[]), "UpperRight");
    }

    #[test]
    fn inferencex_clipping() {
        assert!(clipped("median_intvty", "usd_per_m_rental", 50.0, 5.01));
        assert!(!clipped("median_intvty", "usd_per_m_rental", 50.0, 5.0));
        assert!(!clipped("median_intvty", "usd_per_m_custom", 50.0, 9.0));
        assert!(clipped("p99_ttft", "input_tput_per_gpu", 60.5, 1.0));
        assert!(!clipped("median_e2el", "tput_per_gpu", 600.0, 1.0));
    }
}
