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
        Some(ExportFormat::Openmetrics) => {
            let recs = crate::probes::advice::recommendations(&named.run, named.id);
            return Ok(report::openmetrics::render(&named.run, &recs));
        }
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

/// `export --output FILE`: `text` written atomically (a temporary file in FILE's
/// directory, fsynced, renamed over it), never over the results store.
pub fn write_to(settings: &Settings, path: &std::path::Path, text: &str) -> Result<()> {
    report::write_atomically(path, text, settings.store_path().ok().as_deref())
}
