//! `ioprobe export RUN`: a saved run in a machine format.

use crate::probes::resolve;
use crate::report::{self, Format};
use crate::settings::{ExportFormat, Settings};
use anyhow::Result;

/// `ioprobe export RUN`: the run as JSON (the `--json` schema), or in the format asked
/// for with `--csv` / `--markdown`.
pub fn export(settings: &Settings, spec: &str, to: Option<ExportFormat>) -> Result<String> {
    let named = resolve(settings, spec)?;
    let format = match to {
        Some(ExportFormat::Openmetrics) => return Ok(report::openmetrics::render(&named.run)),
        Some(ExportFormat::Json) => Format::Json,
        Some(ExportFormat::Csv) => Format::Csv,
        Some(ExportFormat::Markdown) => Format::Markdown,
        None => match settings.format {
            Format::Table => Format::Json,
            other => other,
        },
    };
    report::render(&named.run, named.id, format, &settings.style)
}
