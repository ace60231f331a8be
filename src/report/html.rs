//! One self-contained HTML report (askama template, inline CSS and SVG, no JavaScript,
//! nothing fetched): advice, each probe's plots and table, and the machine facts.

use super::grid::{Grid, environment_grid, grids_of, run_header};
use super::plots::Plot;
use crate::advice::Recommendation;
use crate::present::Style;
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
    /// What about the machine may make a figure mislead.
    notes: Vec<String>,
    summary: Grid,
    /// Each recommendation's title and its detail lines.
    details: Vec<(String, Vec<String>)>,
    observations: Vec<String>,
    sections: Vec<Section<'a>>,
    machine: Vec<Vec<String>>,
    version: String,
    started_at: String,
}

/// The run's HTML page, the one way every command assembles it: its tables, `plots`
/// (from [`plots`](super::plots::plots)), its recommendations (citing run `id`, when it
/// was saved) and observations.
pub fn page(run: &Run, id: Option<i64>, label: &str, plots: &[Plot], st: &Style) -> Result<String> {
    let recs = crate::probes::advice::recommendations(run, id);
    page_with(run, &recs, label, plots, st)
}

/// The page with the recommendations given: `run`'s pooled advice, which its text
/// output shows too.
pub fn page_with(
    run: &Run,
    recs: &[Recommendation],
    label: &str,
    plots: &[Plot],
    st: &Style,
) -> Result<String> {
    let obs = crate::probes::advice::observations(run);
    render(run, recs, &obs, label, plots, st)
}

/// Renders the run as an HTML document.
fn render(
    run: &Run,
    recs: &[Recommendation],
    observations: &[String],
    label: &str,
    plots: &[Plot],
    st: &Style,
) -> Result<String> {
    let sections = run
        .probes()
        .into_iter()
        .map(|probe| {
            let grids = grids_of(run, &probe, st);
            let title = match grids.as_slice() {
                [one] => one.title.clone(),
                _ => probe.clone(),
            };
            Section {
                title,
                grids,
                plots: plots.iter().filter(|p| p.probe == probe).collect(),
            }
        })
        .collect();
    let page = Page {
        title: label.to_string(),
        header: run_header(run),
        warnings: run.warnings.clone(),
        notes: run.environment.caveats(),
        summary: crate::report::advice::summary(recs),
        details: recs
            .iter()
            .map(|r| {
                let mut lines = crate::report::advice::detail(r);
                let head = lines.remove(0);
                (head, lines.iter().map(|l| l.trim().to_string()).collect())
            })
            .collect(),
        observations: observations.to_vec(),
        sections,
        machine: environment_grid(&run.environment).rows,
        version: run.tool.version.clone(),
        started_at: run.started_at.clone(),
    };
    page.render().context("rendering the HTML report")
}

/// A plot's file name in the SVG directory: its name reduced to `[a-z0-9_-]` (names come
/// from run documents, which may be hostile), so no name can climb out of the directory.
pub fn svg_file_name(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let stem = if stem.trim_matches('_').is_empty() {
        "plot".to_string()
    } else {
        stem
    };
    format!("{stem}.svg")
}

/// Where each plot goes: `DIR/<name>.svg`, names made safe and unique.
pub fn svg_paths(plots: &[Plot], dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut seen: Vec<String> = Vec::new();
    plots
        .iter()
        .map(|p| {
            let mut file = svg_file_name(&p.name);
            let mut k = 2;
            while seen.contains(&file) {
                file = format!("{}-{k}.svg", file.trim_end_matches(".svg"));
                k += 1;
            }
            seen.push(file.clone());
            dir.join(file)
        })
        .collect()
}
