//! Human-readable tables (comfy-table) for stdout.

use super::grid::{Grid, environment_grid, probe_grids, run_header};
use crate::present::Recommendation;
use crate::results::Run;
use comfy_table::{CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

/// Renders one grid with a title line and footnotes.
pub fn render_grid(g: &Grid) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(g.headers.clone());
    for r in &g.rows {
        t.add_row(r.clone());
    }
    for i in (1..g.headers.len()).filter(|_| g.numeric) {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = format!("{}\n{t}\n", g.title);
    for f in &g.footnotes {
        out.push_str(&format!("  {f}\n"));
    }
    out
}

/// The whole run: header, one table per probe, then what to do (the summary), the
/// recommendations in detail and the observations.
pub fn render_run(run: &Run, recs: &[Recommendation], observations: &[String]) -> String {
    let mut out = format!("{}\n", run_header(run));
    for w in &run.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    for c in run.environment.caveats() {
        out.push_str(&format!("note: {c}\n"));
    }
    for g in probe_grids(run) {
        out.push('\n');
        out.push_str(&render_grid(&g));
    }
    out.push_str(&render_advice(recs, observations, ""));
    out
}

/// The summary table, `between` (where the advice came from, say), each
/// recommendation in detail, and the observations.
pub fn render_advice(recs: &[Recommendation], observations: &[String], between: &str) -> String {
    let mut out = String::new();
    let summary = super::advice::summary(recs);
    if !summary.rows.is_empty() {
        out.push('\n');
        out.push_str(&render_grid(&summary));
    }
    out.push_str(between);
    if !recs.is_empty() {
        out.push_str("\nrecommendations in detail:\n");
        for r in recs {
            for line in super::advice::detail(r) {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    if !observations.is_empty() {
        out.push_str("\nobservations:\n");
        for a in observations {
            out.push_str(&format!("  {a}\n"));
        }
    }
    out
}

/// Machine facts as a table.
pub fn render_environment(env: &crate::sys::machine::Environment) -> String {
    render_grid(&environment_grid(env))
}
