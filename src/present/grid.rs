//! A neutral table (title, headers, rows of text, footnotes) that probes fill and the
//! table, Markdown, CSV and HTML renderers share.

use super::recommend::figure;
use crate::harness::stats::bimodal;
use crate::results::Measurement;

/// A titled table of text cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table (notes, warnings).
    pub footnotes: Vec<String>,
    /// True for figures (right-aligned after the first column), false for key/value text.
    pub numeric: bool,
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
        }
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
) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen_notes: Vec<&str> = Vec::new();
    for m in rows {
        if !seen_notes.contains(&m.note.as_str()) {
            seen_notes.push(&m.note);
            out.push(format!("{}: {}", label(m), m.note));
        }
    }
    out.extend(warnings(rows));
    out
}

/// Every warning of `rows`, with its case, and a warning for each row whose samples are
/// bimodal (see [`bimodal`]).
pub fn warnings(rows: &[&Measurement]) -> Vec<String> {
    rows.iter()
        .flat_map(|m| {
            m.warnings
                .iter()
                .map(move |w| format!("warning: {}: {w}", m.case))
                .chain(bimodal(&m.raw).map(|modes| {
                    let n = m.raw.len();
                    let low = (modes.low_share * n as f64).round() as usize;
                    format!(
                        "warning: {}: bimodal samples, {} near {} and {} near {}: the median depends on which regime a run lands in",
                        m.case,
                        low,
                        figure(m, modes.low),
                        n - low,
                        figure(m, modes.high)
                    )
                }))
        })
        .collect()
}
