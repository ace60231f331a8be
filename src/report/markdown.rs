//! GitHub-flavoured Markdown tables (`--markdown`).

use super::grid::{Grid, environment_grid, probe_grids, run_header};
use crate::advice::Recommendation;
use crate::present::Style;
use crate::results::Run;

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// One grid as a Markdown section.
pub fn render_grid(g: &Grid) -> String {
    let mut out = format!("### {}\n\n", g.title);
    out.push_str(&format!(
        "| {} |\n",
        g.headers
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    let align: Vec<&str> = (0..g.headers.len())
        .map(|i| if g.right_aligned(i) { "---:" } else { "---" })
        .collect();
    out.push_str(&format!("| {} |\n", align.join(" | ")));
    for r in &g.rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    if !g.footnotes.is_empty() {
        out.push('\n');
        for f in &g.footnotes {
            out.push_str(&format!("- {f}\n"));
        }
    }
    out
}

/// The whole run as Markdown.
pub fn render_run(
    run: &Run,
    recs: &[Recommendation],
    observations: &[String],
    st: &Style,
) -> String {
    let mut out = format!("## ioprobe {}\n\n{}\n\n", run.command, run_header(run));
    for w in &run.warnings {
        out.push_str(&format!("> warning: {w}\n\n"));
    }
    for c in run.environment.caveats() {
        out.push_str(&format!("> note: {c}\n\n"));
    }
    for g in probe_grids(run, st) {
        out.push_str(&render_grid(&g));
        out.push('\n');
    }
    out.push_str(&render_advice(recs, observations, ""));
    out
}

/// The summary table, `between` (where the advice came from, say), each
/// recommendation in detail, and the observations.
pub fn render_advice(recs: &[Recommendation], observations: &[String], between: &str) -> String {
    let mut out = String::new();
    let summary = crate::report::advice::summary(recs);
    if !summary.rows.is_empty() {
        out.push_str(&render_grid(&summary));
        out.push('\n');
    }
    out.push_str(between);
    if !recs.is_empty() {
        out.push_str("### recommendations in detail\n\n");
        for r in recs {
            let mut lines = crate::report::advice::detail(r).into_iter();
            if let Some(head) = lines.next() {
                out.push_str(&format!("- **{head}**\n"));
            }
            for l in lines {
                out.push_str(&format!("  - {}\n", l.trim()));
            }
        }
        out.push('\n');
    }
    if !observations.is_empty() {
        out.push_str("### observations\n\n");
        for a in observations {
            out.push_str(&format!("- {a}\n"));
        }
    }
    out
}

/// Machine facts as Markdown.
pub fn render_environment(env: &crate::sys::machine::Environment) -> String {
    render_grid(&environment_grid(env))
}
