//! `ioprobe report RUN`: a saved run's HTML page and SVG plots.

use crate::error::UsageError;
use crate::probes::resolve;
use crate::report::{self, write_atomically};
use crate::settings::Settings;
use anyhow::{Context, Result};
use std::path::Path;

/// `ioprobe report RUN --html FILE --svg DIR`.
pub fn report(
    settings: &Settings,
    spec: &str,
    html: Option<&Path>,
    svg: Option<&Path>,
) -> Result<String> {
    if html.is_none() && svg.is_none() {
        return Err(UsageError("report needs --html FILE and/or --svg DIR".into()).into());
    }
    let named = resolve(settings, spec)?;
    let store = settings.store_path()?;
    let plots = report::plots::plots(&named.run)?;
    let mut out = String::new();
    if let Some(path) = html {
        let page = report::html::page(&named.run, named.id, &named.label, &plots, &settings.style)?;
        write_atomically(path, &page, Some(&store))?;
        out.push_str(&format!("wrote {}\n", path.display()));
    }
    if let Some(dir) = svg {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (plot, path) in plots.iter().zip(report::html::svg_paths(&plots, dir)) {
            write_atomically(&path, &plot.svg, Some(&store))?;
            out.push_str(&format!("wrote {}\n", path.display()));
        }
    }
    Ok(out)
}
