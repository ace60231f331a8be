//! Output: human tables, JSON, CSV, Markdown and advice; one file per format. Report
//! code reads measurements and never measures.

pub mod advice;
pub mod compare;
pub mod csv;
pub mod grid;
pub mod html;
pub mod json;
pub mod markdown;
pub mod openmetrics;
pub mod plots;
pub mod table;

use crate::results::Run;
use anyhow::Result;

pub use crate::settings::Format;

/// Renders a run in `format`; stdout gets exactly this text. `id` is the run's id in
/// the store (evidence cites it), None for a run that was not saved.
pub fn render(run: &Run, id: Option<i64>, format: Format) -> Result<String> {
    let recs = advice::recommendations(run, id);
    let obs = advice::observations(run);
    Ok(match format {
        Format::Table => table::render_run(run, &recs, &obs),
        Format::Json => json::render_run(run, &recs, &obs)?,
        Format::Csv => csv::render_run(run)?,
        Format::Markdown => markdown::render_run(run, &recs, &obs),
    })
}

/// Renders machine facts in `format` (CSV gets two columns: fact, value).
pub fn render_environment(
    env: &crate::sys::machine::Environment,
    format: Format,
) -> Result<String> {
    Ok(match format {
        Format::Table => table::render_environment(env),
        Format::Json => json::render_environment(env)?,
        Format::Markdown => markdown::render_environment(env),
        Format::Csv => csv::render_grid(&grid::environment_grid(env))?,
    })
}
