//! `ioprobe show RUN`: a saved run, as the measuring command printed it.

use crate::probes::resolve;
use crate::report;
use crate::settings::Settings;
use anyhow::Result;

/// `ioprobe show RUN`.
pub fn show(settings: &Settings, spec: &str) -> Result<String> {
    let named = resolve(settings, spec)?;
    report::render(&named.run, named.id, settings.format, &settings.style)
}
