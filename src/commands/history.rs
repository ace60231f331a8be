//! `ioprobe history`: the saved runs, one line each.

use crate::report::{self, Format};
use crate::settings::Settings;
use anyhow::Result;

/// `ioprobe history`.
pub fn history(settings: &Settings) -> Result<String> {
    let store = settings.open_store()?;
    let runs = store.list()?;
    let g = report::grid::Grid {
        title: format!("runs in {}", store.path().display()),
        headers: [
            "id",
            "date",
            "host",
            "kernel",
            "filesystem",
            "command",
            "probes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: runs
            .iter()
            .map(|r| {
                vec![
                    r.id.to_string(),
                    r.started_at.clone(),
                    r.host.clone(),
                    r.kernel.clone(),
                    r.filesystem.clone(),
                    r.command.clone(),
                    r.probes.join(","),
                ]
            })
            .collect(),
        footnotes: Vec::new(),
        numeric: false,
        ..Default::default()
    };
    Ok(match settings.format {
        Format::Markdown => report::markdown::render_grid(&g),
        Format::Json => {
            let v: Vec<serde_json::Value> = runs
                .iter()
                .map(|r| {
                    serde_json::json!({"id": r.id, "started_at": r.started_at, "host": r.host, "kernel": r.kernel,
                        "filesystem": r.filesystem, "command": r.command, "probes": r.probes})
                })
                .collect();
            serde_json::to_string_pretty(&v)? + "\n"
        }
        Format::Csv => report::csv::render_grid(&g)?,
        Format::Table => report::table::render_grid(&g, &settings.style),
    })
}
