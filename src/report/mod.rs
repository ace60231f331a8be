//! Output: human tables, JSON, CSV, Markdown and advice; one file per format. Report
//! code reads measurements and never measures.

pub mod advice;
pub mod csv;
pub mod grid;
pub mod json;
pub mod markdown;
pub mod table;

use crate::results::Run;
use anyhow::Result;

/// The output format chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
}

/// Renders a run in `format`; stdout gets exactly this text.
pub fn render(run: &Run, format: Format) -> Result<String> {
    let advice = advice::advise(run);
    Ok(match format {
        Format::Table => table::render_run(run, &advice),
        Format::Json => json::render_run(run, &advice)?,
        Format::Csv => csv::render_run(run)?,
        Format::Markdown => markdown::render_run(run, &advice),
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
        Format::Csv => {
            let g = grid::environment_grid(env);
            let mut w = ::csv::Writer::from_writer(Vec::new());
            w.write_record(&g.headers)?;
            for r in &g.rows {
                w.write_record(r)?;
            }
            String::from_utf8(w.into_inner()?)?
        }
    })
}
