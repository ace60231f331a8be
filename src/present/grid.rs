//! A neutral table (title, headers, rows of text, footnotes) that probes fill and the
//! table, Markdown, CSV and HTML renderers share.

use crate::harness::stats::bimodal;
use crate::results::Measurement;

/// A titled table of text cells.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Grid {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table (notes, warnings).
    pub footnotes: Vec<String>,
    /// True for figures (right-aligned after the first column), false for key/value text.
    pub numeric: bool,
    /// Columns a narrow terminal may leave out, the first given dropped first (`--wide`
    /// keeps every column; machine formats always have them all).
    pub drop_order: Vec<usize>,
    /// The row to highlight (the fastest, say), when colour is on.
    pub best_row: Option<usize>,
    /// The column that takes the width the others leave when the grid must wrap to fit
    /// (the summary's "why"): the widths printing the fewest lines win.
    pub flex: Option<usize>,
}

impl Grid {
    /// A numeric grid with these headers.
    pub fn numeric(title: String, headers: &[&str], rows: Vec<Vec<String>>) -> Grid {
        Grid {
            title,
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows,
            footnotes: Vec::new(),
            numeric: true,
            ..Grid::default()
        }
    }

    /// Marks these columns (by header) as optional: a narrow terminal drops them, in
    /// this order. A header the grid does not have is ignored.
    pub fn optional(mut self, headers: &[&str]) -> Grid {
        self.drop_order = headers
            .iter()
            .filter_map(|h| self.headers.iter().position(|x| x == h))
            .collect();
        self
    }

    /// Whether column `c` is right-aligned: in a numeric grid, a column after the first
    /// whose cells (those that are not "-") mostly start with a digit. Names stay left.
    pub fn right_aligned(&self, c: usize) -> bool {
        if !self.numeric || c == 0 {
            return false;
        }
        let cells: Vec<&str> = self
            .rows
            .iter()
            .filter_map(|r| r.get(c).map(String::as_str))
            .filter(|s| *s != "-")
            .collect();
        let digits = cells
            .iter()
            .filter(|s| s.starts_with(|ch: char| ch.is_ascii_digit()))
            .count();
        2 * digits >= cells.len()
    }

    /// Highlights the row whose value of `key` is the highest (None: no row).
    pub fn best_by(mut self, key: impl Fn(usize) -> Option<f64>) -> Grid {
        self.best_row = (0..self.rows.len())
            .filter_map(|i| key(i).filter(|v| v.is_finite()).map(|v| (i, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i);
        self
    }
}

/// "low – high" of a row's 95% CI, each end formatted by `f`.
pub fn ci_text(m: &Measurement, f: &dyn Fn(f64) -> String) -> String {
    format!("{} – {}", f(m.ci95[0]), f(m.ci95[1]))
}

/// Each distinct note once (labelled with `label` of the first row that has it), then
/// every warning with its case.
pub fn notes_and_warnings(
    rows: &[&Measurement],
    label: &dyn Fn(&Measurement) -> String,
    verbose: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen_notes: Vec<&str> = Vec::new();
    for m in rows {
        if !seen_notes.contains(&m.note.as_str()) {
            seen_notes.push(&m.note);
            out.push(format!("{}: {}", label(m), m.note));
        }
    }
    out.extend(warnings(rows, verbose));
    out
}

/// The start of the harness's warning for a row whose CI missed the target.
const WIDE_CI: &str = "95% CI is ±";

/// One line for every row whose CI is wider than the target: how many, the widest, and
/// the first few cases (each row's own line with `--verbose`, and in JSON).
fn folded_wide_ci(rows: &[&Measurement]) -> Option<String> {
    let wide: Vec<(&Measurement, f64)> = rows
        .iter()
        .filter(|m| m.warnings.iter().any(|w| w.starts_with(WIDE_CI)))
        .map(|m| {
            (
                *m,
                (m.ci95[1] - m.ci95[0]) / 2.0 / m.median.abs().max(f64::MIN_POSITIVE),
            )
        })
        .collect();
    let (worst, half) = wide.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let names: Vec<&str> = wide.iter().take(4).map(|(m, _)| m.case.as_str()).collect();
    let more = if wide.len() > 4 { ", …" } else { "" };
    Some(format!(
        "warning: {} row{} with a 95% CI wider than the ±1% target (time budget spent), widest ±{}% ({}): {}{more}; --verbose lists each",
        wide.len(),
        if wide.len() == 1 { "" } else { "s" },
        crate::units::sig3(half * 100.0),
        worst.case,
        names.join(", ")
    ))
}

/// Every warning of `rows`, with its case, and a warning for each row whose samples are
/// bimodal (see [`bimodal`]). The rows whose CI missed the target share one line unless
/// `--verbose`.
pub fn warnings(rows: &[&Measurement], verbose: bool) -> Vec<String> {
    let folded = if verbose { None } else { folded_wide_ci(rows) };
    folded
        .into_iter()
        .chain(rows.iter().flat_map(|m| {
            m.warnings
                .iter()
                .filter(move |w| verbose || !w.starts_with(WIDE_CI))
                .map(move |w| format!("warning: {}: {w}", m.case))
                .chain(bimodal(&m.raw).map(|modes| {
                    let n = m.raw.len();
                    let low = (modes.low_share * n as f64).round() as usize;
                    format!(
                        "warning: {}: bimodal samples, {} near {} and {} near {}: the median depends on which regime a run lands in",
                        m.case,
                        low,
                        m.unit.figure(modes.low),
                        n - low,
                        m.unit.figure(modes.high)
                    )
                }))
        }))
        .collect()
}
