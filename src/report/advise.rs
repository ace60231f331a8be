//! `ioprobe advise`'s document: each machine's advice in every output format (the
//! summary and details of `advice.rs`, in text or Markdown; JSON; CSV).

use crate::advice::{MachineAdvice, Recommendation, Source};
use crate::present::Style;
use crate::report::{self, Format};
use anyhow::Result;

/// Renders advice in the chosen format. Text and Markdown: per machine, the summary
/// table, where each probe's advice comes from, the details and the observations. JSON:
/// `recommendations` (each citing its runs and machine), `sources`, and `advice` (the
/// per-probe line lists of earlier versions). CSV: a row per advice line.
pub fn render_advice(machines: &[MachineAdvice], format: Format, st: &Style) -> Result<String> {
    let source_line = |s: &Source| match (s.measured, s.run) {
        (false, _) => format!(
            "{}: no saved run measures it; run `ioprobe {}`",
            s.probe, s.probe
        ),
        (true, run) => format!(
            "{}: {} ({}, {}), {} ({} of {} default cases){}",
            s.probe,
            run.map_or("this run (not saved)".into(), |i| format!("run {i}")),
            s.started_at,
            s.host,
            s.coverage.map_or("", |c| c.name()),
            s.cases[0],
            s.cases[1],
            if s.pooled.is_empty() {
                String::new()
            } else {
                let ids: Vec<String> = s.pooled.iter().map(|i| i.to_string()).collect();
                format!(
                    "; pooled from {} runs ({}), recent runs weighing more",
                    s.pooled.len(),
                    ids.join(", ")
                )
            }
        ),
    };
    match format {
        Format::Table | Format::Markdown => Ok(text(machines, format, st, &source_line)),
        Format::Json => json(machines),
        Format::Csv => csv(machines),
    }
}

/// Text or Markdown: per machine, the summary, where each probe's advice came from,
/// the details and the observations.
fn text(
    machines: &[MachineAdvice],
    format: Format,
    st: &Style,
    source_line: &dyn Fn(&Source) -> String,
) -> String {
    let md = format == Format::Markdown;
    let mut out = String::new();
    for m in machines {
        let mut sources = if md {
            "### sources\n\n".to_string()
        } else {
            format!("\n{}\n", st.heading("from these runs:"))
        };
        for s in &m.sources {
            let bullet = if md { "- " } else { "  " };
            sources.push_str(&format!("{bullet}{}\n", source_line(s)));
        }
        if md {
            sources.push('\n');
            out.push_str(&format!("## advice for {}\n\n", m.machine));
            out.push_str(&report::markdown::render_advice(
                &m.recs,
                &m.observations,
                &sources,
            ));
        } else {
            out.push_str(&format!("advice for {}\n", m.machine));
            out.push_str(&report::table::render_advice(
                &m.recs,
                &m.observations,
                &sources,
                st,
            ));
        }
        out.push('\n');
    }
    out
}

/// JSON: `recommendations` (each citing its runs and machine), `sources`, and `advice`
/// (the per-probe line lists of earlier versions).
fn json(machines: &[MachineAdvice]) -> Result<String> {
    let recs: Vec<&Recommendation> = machines.iter().flat_map(|m| &m.recs).collect();
    let sources: Vec<serde_json::Value> = machines
        .iter()
        .flat_map(|m| {
            m.sources.iter().map(|s| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["machine"] = serde_json::json!(m.machine);
                v
            })
        })
        .collect();
    Ok(serde_json::to_string_pretty(&serde_json::json!({
        "recommendations": recs,
        "sources": sources,
        "advice": sources,
    }))? + "\n")
}

/// CSV: a row per advice line.
fn csv(machines: &[MachineAdvice]) -> Result<String> {
    let g = report::grid::Grid {
        title: "advice".into(),
        headers: ["probe", "run", "date", "host", "advice", "machine"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: machines
            .iter()
            .flat_map(|m| {
                m.sources.iter().flat_map(move |s| {
                    let lines = if s.measured {
                        s.advice.clone()
                    } else {
                        vec![format!("not measured; run `ioprobe {}`", s.probe)]
                    };
                    lines.into_iter().map(move |l| {
                        vec![
                            s.probe.clone(),
                            s.run.map_or(String::new(), |i| i.to_string()),
                            s.started_at.clone(),
                            s.host.clone(),
                            l,
                            m.machine.clone(),
                        ]
                    })
                })
            })
            .collect(),
        footnotes: Vec::new(),
        numeric: false,
        ..Default::default()
    };
    report::csv::render_grid(&g)
}
