//! One self-contained HTML report (askama template, inline CSS and SVG, no JavaScript,
//! nothing fetched): advice, each probe's plots and table, and the machine facts.

use super::grid::{environment_grid, probe_grids, run_header};
use super::plots::{Plot, plots};
use crate::results::Run;
use anyhow::{Context, Result};
use askama::Template;

/// One probe's part of the page.
pub struct Section {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub footnotes: Vec<String>,
    pub numeric: bool,
    pub plots: Vec<Plot>,
}

#[derive(Template)]
#[template(path = "report.html")]
struct Page {
    title: String,
    header: String,
    warnings: Vec<String>,
    advice: Vec<String>,
    sections: Vec<Section>,
    machine: Vec<Vec<String>>,
    version: String,
    started_at: String,
}

/// Renders the run as an HTML document.
pub fn render(run: &Run, advice: &[String], label: &str) -> Result<String> {
    let mut all_plots = plots(run)?;
    let probes = run.probes();
    let sections = probe_grids(run)
        .into_iter()
        .zip(probes.iter())
        .map(|(g, probe)| {
            let (mine, rest): (Vec<Plot>, Vec<Plot>) =
                all_plots.drain(..).partition(|p| &p.name == probe);
            all_plots = rest;
            Section {
                title: g.title,
                headers: g.headers,
                rows: g.rows,
                footnotes: g.footnotes,
                numeric: g.numeric,
                plots: mine,
            }
        })
        .collect();
    let page = Page {
        title: label.to_string(),
        header: run_header(run),
        warnings: run.warnings.clone(),
        advice: advice.to_vec(),
        sections,
        machine: environment_grid(&run.environment).rows,
        version: run.tool.version.clone(),
        started_at: run.started_at.clone(),
    };
    page.render().context("rendering the HTML report")
}

/// Writes every plot as `DIR/<probe>.svg`; returns the paths written.
pub fn write_svgs(run: &Run, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut out = Vec::new();
    for p in plots(run)? {
        let path = dir.join(format!("{}.svg", p.name));
        std::fs::write(&path, p.svg).with_context(|| format!("writing {}", path.display()))?;
        out.push(path);
    }
    Ok(out)
}
