//! One self-contained HTML report (askama template, inline CSS and SVG, no JavaScript,
//! nothing fetched): advice, each probe's plots and table, and the machine facts.

use super::grid::{Grid, environment_grid, grids_of, run_header};
use super::plots::Plot;
use crate::results::Run;
use anyhow::{Context, Result};
use askama::Template;

/// One probe's part of the page: its plots and its tables.
pub struct Section<'a> {
    pub title: String,
    pub grids: Vec<Grid>,
    pub plots: Vec<&'a Plot>,
}

#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    title: String,
    header: String,
    warnings: Vec<String>,
    advice: Vec<String>,
    sections: Vec<Section<'a>>,
    machine: Vec<Vec<String>>,
    version: String,
    started_at: String,
}

/// Renders the run as an HTML document with `plots` (from [`plots`](super::plots::plots)).
pub fn render(run: &Run, advice: &[String], label: &str, plots: &[Plot]) -> Result<String> {
    let sections = run
        .probes()
        .into_iter()
        .map(|probe| {
            let grids = grids_of(run, &probe);
            let title = match grids.as_slice() {
                [one] => one.title.clone(),
                _ => probe.clone(),
            };
            Section {
                title,
                grids,
                plots: plots.iter().filter(|p| p.name == probe).collect(),
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
pub fn write_svgs(plots: &[Plot], dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut out = Vec::new();
    for p in plots {
        let path = dir.join(format!("{}.svg", p.name));
        std::fs::write(&path, &p.svg).with_context(|| format!("writing {}", path.display()))?;
        out.push(path);
    }
    Ok(out)
}
