//! Plot primitives (plotters' SVG backend) that probes draw their plots with: bars of
//! medians with 95% CI whiskers, and throughput lines against a size on a log2 axis
//! with marks (cache sizes). They know no probe.

use crate::results::Measurement;
use crate::units::format_size;
use anyhow::{Result, anyhow};
use plotters::coord::ranged1d::SegmentValue;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One plot: a file-name stem, a title and the SVG text.
pub struct Plot {
    /// The probe it belongs to (set by the report) and a file-name stem.
    pub probe: String,
    pub name: String,
    pub title: String,
    pub svg: String,
}

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// An axis range plotters can draw: finite, non-empty, and positive on a log axis. A
/// degenerate range (no points, one value, NaN) would otherwise make plotters generate
/// ticks without end.
fn axis(lo: f64, hi: f64, log: bool) -> (f64, f64) {
    let lo = match (lo.is_finite(), log) {
        (true, true) => lo.max(1e-9),
        (true, false) => lo,
        (false, true) => 1.0,
        (false, false) => 0.0,
    };
    let hi = if hi.is_finite() && hi > lo * (1.0 + 1e-9) && hi > lo {
        hi
    } else if lo > 0.0 {
        lo * 2.0
    } else {
        lo + 1.0
    };
    (lo, hi)
}

fn e<E: std::fmt::Display>(err: E) -> anyhow::Error {
    anyhow!("drawing plot: {err}")
}

/// Horizontal bars of medians with 95% CI whiskers, log axis when values span decades.
pub fn bars(title: &str, rows: &[&Measurement], scale: f64, unit: &str) -> Result<String> {
    let mut svg = String::new();
    {
        let n = rows.len();
        let height = 80 + 28 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (900, height)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let lo = rows
            .iter()
            .map(|m| m.ci95[0].min(m.median) * scale)
            .fold(f64::INFINITY, f64::min);
        let hi = rows
            .iter()
            .map(|m| m.ci95[1].max(m.median) * scale)
            .fold(0.0, f64::max);
        // Row i is drawn at slot n-1-i so the first case is on top, as in the table.
        let names: Vec<String> = rows.iter().rev().map(|m| m.case.clone()).collect();
        let fmt_y = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(150);
        let log = hi / lo.max(1e-12) > 50.0;
        let bar_base;
        if log {
            let (xmin, xmax) = axis(lo / 2.0, hi * 2.0, true);
            bar_base = xmin;
            let mut chart = builder
                .build_cartesian_2d((xmin..xmax).log_scale(), (0..n - 1).into_segmented())
                .map_err(e)?;
            chart
                .configure_mesh()
                .y_label_formatter(&fmt_y)
                .y_labels(n + 1)
                .x_desc(format!("{unit} (log scale)"))
                .disable_y_mesh()
                .draw()
                .map_err(e)?;
            draw_bars(&mut chart, rows, scale, bar_base)?;
        } else {
            bar_base = 0.0;
            let (_, xmax) = axis(0.0, hi * 1.1, false);
            let mut chart = builder
                .build_cartesian_2d(0.0..xmax, (0..n - 1).into_segmented())
                .map_err(e)?;
            chart
                .configure_mesh()
                .y_label_formatter(&fmt_y)
                .y_labels(n + 1)
                .x_desc(unit.to_string())
                .disable_y_mesh()
                .draw()
                .map_err(e)?;
            draw_bars(&mut chart, rows, scale, bar_base)?;
        }
        root.present().map_err(e)?;
    }
    Ok(svg)
}

fn draw_bars<X>(
    chart: &mut ChartContext<
        '_,
        SVGBackend<'_>,
        Cartesian2d<
            X,
            plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>,
        >,
    >,
    rows: &[&Measurement],
    scale: f64,
    base: f64,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
{
    chart
        .draw_series(rows.iter().enumerate().map(|(k, m)| {
            let i = rows.len() - 1 - k;
            let mut r = Rectangle::new(
                [
                    (base, SegmentValue::Exact(i)),
                    (m.median * scale, SegmentValue::Exact(i + 1)),
                ],
                PALETTE[0].mix(0.75).filled(),
            );
            r.set_margin(4, 4, 0, 0);
            r
        }))
        .map_err(e)?;
    for (k, m) in rows.iter().enumerate() {
        let i = rows.len() - 1 - k;
        let (lo, hi) = (m.ci95[0] * scale, m.ci95[1] * scale);
        chart
            .draw_series(std::iter::once(bar_whisker(lo, hi, i)))
            .map_err(e)?;
        for x in [lo, hi] {
            chart
                .draw_series(std::iter::once(Circle::new(
                    (x, SegmentValue::CenterOf(i)),
                    3,
                    BLACK.filled(),
                )))
                .map_err(e)?;
        }
    }
    Ok(())
}

/// One bar of a ranked panel: its label, its family (colour) and its median with the
/// 95% CI, already scaled; None: not measured here, drawn as a labelled empty row.
pub struct RankedBar {
    pub label: String,
    pub family: usize,
    pub value: Option<(f64, f64, f64)>,
    /// Why there is no value ("unsupported: …"), printed in the empty row.
    pub missing: String,
}

/// A titled panel of bars, ranked fastest first when drawn.
pub struct Panel {
    pub title: String,
    pub bars: Vec<RankedBar>,
}

/// Label font size (plotters draws text at size ÷ 1.24 in SVG).
const LABEL_PX: u32 = 13;

/// A conservative width in pixels of `text` drawn at `px`: sans-serif lowercase letters
/// and digits average about 0.55 em, so 0.65 em leaves labels unclipped.
pub fn text_width(text: &str, px: u32) -> u32 {
    (text.chars().count() as f64 * px as f64 / 1.24 * 0.65).ceil() as u32
}

/// Panels of horizontal bars, each ranked fastest first, one colour per family (named in
/// a legend), a shared linear axis so panels compare, whiskers for the 95% CI, and rows
/// without a value labelled and left empty. The label column is as wide as the widest
/// label.
pub fn ranked_panels(
    title: &str,
    panels: &[Panel],
    families: &[&str],
    unit: &str,
) -> Result<String> {
    const ROW: u32 = 24;
    const PANEL_HEAD: u32 = 64;
    let label_w = panels
        .iter()
        .flat_map(|p| p.bars.iter())
        .map(|b| text_width(&b.label, LABEL_PX))
        .max()
        .unwrap_or(0)
        + 16;
    // As wide as the report's column (PAGE_W), wider only for labels that leave the
    // bars under 400 px.
    let width = (label_w + 400).max(PAGE_W);
    let heights: Vec<u32> = panels
        .iter()
        .map(|p| PANEL_HEAD + ROW * p.bars.len().max(1) as u32)
        .collect();
    let legend_h = 56;
    let height = legend_h + heights.iter().sum::<u32>();
    let hi = panels
        .iter()
        .flat_map(|p| p.bars.iter())
        .filter_map(|b| b.value.map(|v| v.2.max(v.0)))
        .fold(0.0, f64::max);
    let (_, xmax) = axis(0.0, hi * 1.08, false);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let (head, body) = root.split_vertically(legend_h);
        draw_legend(&head, title, families)?;
        let mut rest = body;
        for (panel, h) in panels.iter().zip(&heights) {
            let (area, below) = rest.split_vertically(*h);
            rest = below;
            draw_panel(&area, panel, label_w, xmax, unit)?;
        }
        root.present().map_err(e)?;
    }
    Ok(svg)
}

/// The drawing area of an SVG plot.
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A ranked plot's title and its legend: one coloured square and name per family.
fn draw_legend(head: &Area, title: &str, families: &[&str]) -> Result<()> {
    head.draw(&Text::new(
        title.to_string(),
        (12, 8),
        ("sans-serif", 18).into_font(),
    ))
    .map_err(e)?;
    let mut x = 12i32;
    for (i, name) in families.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        head.draw(&Rectangle::new(
            [(x, 34), (x + 14, 46)],
            c.mix(0.8).filled(),
        ))
        .map_err(e)?;
        head.draw(&Text::new(
            name.to_string(),
            (x + 18, 34),
            ("sans-serif", LABEL_PX).into_font(),
        ))
        .map_err(e)?;
        x += 18 + text_width(name, LABEL_PX) as i32 + 18;
    }
    Ok(())
}

/// One panel of a ranked plot: its bars fastest first, with whiskers for the 95% CI,
/// and rows without a value labelled.
fn draw_panel(area: &Area, panel: &Panel, label_w: u32, xmax: f64, unit: &str) -> Result<()> {
    let mut bars: Vec<&RankedBar> = panel.bars.iter().collect();
    bars.sort_by(|a, b| match (a.value, b.value) {
        (Some(x), Some(y)) => y.0.total_cmp(&x.0),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.label.cmp(&b.label),
    });
    let n = bars.len().max(1);
    // Row i is drawn at slot n-1-i so the fastest is on top.
    let names: Vec<String> = bars.iter().rev().map(|b| b.label.clone()).collect();
    let fmt_y = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(label_w)
        .build_cartesian_2d(0.0..xmax, (0..n - 1).into_segmented())
        .map_err(e)?;
    chart
        .configure_mesh()
        .y_label_formatter(&fmt_y)
        .y_labels(n + 1)
        .y_label_style(("sans-serif", LABEL_PX))
        .x_desc(unit.to_string())
        .disable_y_mesh()
        .draw()
        .map_err(e)?;
    for (k, b) in bars.iter().enumerate() {
        let i = n - 1 - k;
        let Some((median, lo, hi)) = b.value else {
            chart
                .draw_series(std::iter::once(Text::new(
                    b.missing.clone(),
                    (xmax * 0.01, SegmentValue::CenterOf(i)),
                    ("sans-serif", 12)
                        .into_font()
                        .color(&RGBColor(110, 110, 110))
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )))
                .map_err(e)?;
            continue;
        };
        let c = PALETTE[b.family % PALETTE.len()];
        let mut r = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (median, SegmentValue::Exact(i + 1)),
            ],
            c.mix(0.8).filled(),
        );
        r.set_margin(3, 3, 0, 0);
        chart.draw_series(std::iter::once(r)).map_err(e)?;
        chart
            .draw_series(std::iter::once(bar_whisker(lo, hi, i)))
            .map_err(e)?;
    }
    Ok(())
}

/// A line plot's series names, in order of first appearance.
fn series_names(pts: &[Point]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for p in pts {
        if !names.contains(&p.series.as_str()) {
            names.push(&p.series);
        }
    }
    names
}

/// A point's 95% CI as a whisker, with caps a small factor either side on the log axis.
fn whiskers(p: &Point, color: RGBColor) -> [PathElement<(f64, f64)>; 3] {
    let cap = |y: f64| {
        PathElement::new(
            vec![(p.x / 1.06, y), (p.x * 1.06, y)],
            color.stroke_width(1),
        )
    };
    [
        PathElement::new(vec![(p.x, p.lo), (p.x, p.hi)], color.stroke_width(1)),
        cap(p.lo),
        cap(p.hi),
    ]
}

/// Series' line and name in the legend beside a line plot, its top at `y`, the name
/// folded to lines of `room` px: the y below it.
fn legend_entry(area: &Area, y: i32, (name, room): (&str, u32), color: RGBColor) -> Result<i32> {
    area.draw(&PathElement::new(
        vec![(8, y), (32, y)],
        color.stroke_width(3),
    ))
    .map_err(e)?;
    // Characters a line holds, at this name's own width per character.
    let chars = name.chars().count() as u32;
    let per_line = (chars * room / text_width(name, LABEL_PX).max(1)).max(8);
    let lines = crate::units::wrap(name, per_line as usize);
    for (i, line) in lines.iter().enumerate() {
        area.draw(&Text::new(
            line.trim().to_string(),
            (38, y - 7 + 16 * i as i32),
            ("sans-serif", 13).into_font(),
        ))
        .map_err(e)?;
    }
    Ok(y + 22 + 16 * (lines.len() as i32 - 1))
}

/// A horizontal bar's 95% CI whisker, across row `i`.
fn bar_whisker(lo: f64, hi: f64, i: usize) -> PathElement<(f64, SegmentValue<usize>)> {
    PathElement::new(
        vec![
            (lo, SegmentValue::CenterOf(i)),
            (hi, SegmentValue::CenterOf(i)),
        ],
        BLACK.stroke_width(2),
    )
}

/// One point of a line plot: its series, x (bytes) and y (GB/s) with the 95% CI.
pub struct Point {
    pub series: String,
    pub x: f64,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Point {
    /// A measured row at `x` bytes, in GB/s with its interval.
    pub fn of(series: String, x: u64, m: &Measurement) -> Point {
        Point {
            series,
            x: x as f64,
            y: m.median / 1e9,
            lo: m.ci95[0] / 1e9,
            hi: m.ci95[1] / 1e9,
        }
    }
}

/// A size answer drawn on its series: the plateau (`from`–`to`, bytes) as a wide pale
/// band along the curve, the knee (the size to use) as a ring labelled "knee".
pub struct Span {
    pub series: String,
    pub from: u64,
    pub to: u64,
    pub knee: u64,
}

/// A vertical mark at `x` (a cache size), labelled, when it falls on the axis.
fn draw_mark<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<LogCoord<f64>, RangedCoordf64>>,
    label: &str,
    x: f64,
    ymax: f64,
) -> Result<()> {
    let xs = chart.x_range();
    if x < xs.start || x > xs.end {
        return Ok(());
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(x, 0.0), (x, ymax)],
            RGBColor(120, 120, 120).stroke_width(1),
        )))
        .map_err(e)?;
    chart
        .draw_series(std::iter::once(Text::new(
            label.to_string(),
            (x * 1.05, ymax * 0.97),
            ("sans-serif", 13).into_font().color(&RGBColor(90, 90, 90)),
        )))
        .map_err(e)?;
    Ok(())
}

/// A series' plateau as a wide pale band along its curve, and its knee as a ring
/// labelled "knee".
fn draw_span<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<LogCoord<f64>, RangedCoordf64>>,
    (series, sp): (&[&Point], &Span),
    color: RGBColor,
    ymax: f64,
) -> Result<()> {
    let on = |p: &&&Point| (sp.from as f64..=sp.to as f64).contains(&p.x);
    chart
        .draw_series(LineSeries::new(
            series.iter().filter(on).map(|p| (p.x, p.y)),
            color.mix(0.3).stroke_width(12),
        ))
        .map_err(e)?;
    if let Some(p) = series.iter().find(|p| p.x == sp.knee as f64) {
        chart
            .draw_series(std::iter::once(Circle::new(
                (p.x, p.y),
                8,
                color.stroke_width(2),
            )))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(Text::new(
                "knee",
                (p.x * 0.8, p.y + ymax * 0.05),
                ("sans-serif", 13).into_font().color(&color),
            )))
            .map_err(e)?;
    }
    Ok(())
}

/// Width of every plot: the HTML report's column (1000 px less its padding), so a
/// 1000 px window shows a plot whole, legend included, without scrolling sideways.
pub const PAGE_W: u32 = 960;

/// Width of the legend panel right of a line plot (the legend never covers data): its
/// longest name's, within 160–300 px; a longer name folds onto more lines.
fn legend_width(names: &[&str]) -> u32 {
    let longest = names
        .iter()
        .map(|n| text_width(n, LABEL_PX))
        .max()
        .unwrap_or(0);
    (longest + 46).clamp(160, 300)
}

/// Throughput (GB/s) against a size on a log2 axis: one line per series, each point
/// with its 95% CI as a whisker, vertical marks (e.g. cache sizes) labelled, each
/// series' size answer (`spans`: plateau and knee) marked on it, and the legend in its
/// own panel on the right.
pub fn lines(
    title: &str,
    x_desc: &str,
    pts: &[Point],
    (marks, spans): (&[(String, u64)], &[Span]),
) -> Result<String> {
    let mut svg = String::new();
    {
        let names = series_names(pts);
        let legend_w = legend_width(&names);
        let root = SVGBackend::with_string(&mut svg, (PAGE_W, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let (plot_area, legend_area) = root.split_horizontally(PAGE_W - legend_w);
        let (xmin, xmax) = axis(
            pts.iter().map(|p| p.x).fold(f64::INFINITY, f64::min) / 1.5,
            pts.iter().map(|p| p.x).fold(0.0, f64::max) * 1.5,
            true,
        );
        let (_, ymax) = axis(
            0.0,
            pts.iter().map(|p| p.hi.max(p.y)).fold(0.0, f64::max) * 1.15,
            false,
        );
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((xmin..xmax).log_scale().base(2.0), 0.0..ymax)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| format_size(v.round() as u64))
            .x_desc(x_desc)
            .y_desc("GB/s (10^9 B/s), 95% CI whiskers")
            .draw()
            .map_err(e)?;
        for (label, size) in marks {
            draw_mark(&mut chart, label, *size as f64, ymax)?;
        }
        let mut legend_y = 60;
        for (k, name) in names.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let series: Vec<&Point> = pts.iter().filter(|p| p.series == *name).collect();
            for sp in spans.iter().filter(|sp| sp.series == *name) {
                draw_span(&mut chart, (&series, sp), color, ymax)?;
            }
            chart
                .draw_series(LineSeries::new(
                    series.iter().map(|p| (p.x, p.y)),
                    color.stroke_width(2),
                ))
                .map_err(e)?;
            chart
                .draw_series(
                    series
                        .iter()
                        .map(|p| Circle::new((p.x, p.y), 3, color.filled())),
                )
                .map_err(e)?;
            chart
                .draw_series(series.iter().flat_map(|p| whiskers(p, color)))
                .map_err(e)?;
            legend_y = legend_entry(&legend_area, legend_y, (name, legend_w - 46), color)?;
        }
        root.present().map_err(e)?;
    }
    Ok(svg)
}
