//! Rendering of `ioprobe compare`: environment differences first, then one row per
//! matched measurement, in every output format.

use super::Format;
use super::grid::Grid;
use crate::results::compare::Comparison;
use crate::units::{format_gbps, sig3};
use anyhow::Result;

fn value(unit: &str, v: f64) -> String {
    if unit == "bytes/s" {
        format!("{} GB/s", format_gbps(v))
    } else {
        format!("{} ns", sig3(v))
    }
}

/// "N measurements (first, second, third, …)".
fn few(list: &[String]) -> String {
    let names: Vec<&str> = list
        .iter()
        .take(4)
        .map(|s| s.split(' ').next().unwrap_or(s))
        .collect();
    let more = if list.len() > 4 { ", …" } else { "" };
    format!("{} measurement(s) ({}{more})", list.len(), names.join(", "))
}

fn grids(c: &Comparison) -> Vec<Grid> {
    let mut out = Vec::new();
    if !c.environment_differences.is_empty() {
        out.push(Grid {
            title: format!("environment differences ({} → {})", c.a, c.b),
            headers: vec!["fact".into(), c.a.clone(), c.b.clone()],
            rows: c
                .environment_differences
                .iter()
                .map(|d| vec![d.fact.clone(), d.a.clone(), d.b.clone()])
                .collect(),
            footnotes: Vec::new(),
            numeric: false,
        });
    }
    let rows = c
        .rows
        .iter()
        .map(|r| {
            vec![
                format!("{}/{}", r.probe, r.case),
                value(&r.unit, r.a_median),
                value(&r.unit, r.b_median),
                format!("{}×", sig3(r.ratio)),
                format!("{}× – {}×", sig3(r.ratio_ci95[0]), sig3(r.ratio_ci95[1])),
                if r.p_value < 0.001 {
                    "<0.001".into()
                } else {
                    format!("{:.3}", r.p_value)
                },
                format!("±{}%", sig3(r.noise_floor * 100.0)),
                r.verdict.text().into(),
            ]
        })
        .collect();
    let mut footnotes = vec![
        "B ÷ A of medians; interval: 95% bootstrap; p: two-sided Mann–Whitney U on the raw samples (ns/op: lower is faster; bytes/s: higher is faster)".to_string(),
        format!(
            "faster/slower needs p < 0.05, an interval that excludes 1 and a change beyond the row's noise floor: the largest of 1%, the band holding 90% of either run's samples, and twice the spread of all rows' ratios (±{}% here)",
            sig3(c.row_dispersion.exp_m1() * 100.0)
        ),
    ];
    for r in c.rows.iter().filter(|r| r.note.is_some()) {
        footnotes.push(format!(
            "{}/{}: {}",
            r.probe,
            r.case,
            r.note.as_deref().unwrap_or_default()
        ));
    }
    for (label, list) in [(&c.a, &c.only_in_a), (&c.b, &c.only_in_b)] {
        if !list.is_empty() {
            footnotes.push(format!("only in {label}: {}", few(list)));
        }
    }
    if !c.unsupported_in_both.is_empty() {
        footnotes.push(format!(
            "unsupported in both runs: {}",
            few(&c.unsupported_in_both)
        ));
    }
    for s in &c.status_differs {
        footnotes.push(format!("measured in one run only: {s}"));
    }
    out.push(Grid {
        title: format!("compare: A = {}, B = {}", c.a, c.b),
        headers: [
            "measurement",
            "A",
            "B",
            "B ÷ A",
            "95% interval",
            "p",
            "noise floor",
            "verdict",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        footnotes,
        numeric: true,
    });
    out
}

/// Renders a comparison in `format`.
pub fn render(c: &Comparison, format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(c)? + "\n",
        Format::Table => {
            let mut s = if c.environment_differences.is_empty() {
                "environment: no differences\n\n".to_string()
            } else {
                String::new()
            };
            for g in grids(c) {
                s.push_str(&super::table::render_grid(&g));
                s.push('\n');
            }
            s
        }
        Format::Markdown => grids(c)
            .iter()
            .map(super::markdown::render_grid)
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record([
                "probe",
                "case",
                "params",
                "unit",
                "a_median",
                "b_median",
                "ratio",
                "ratio_ci_low",
                "ratio_ci_high",
                "p_value",
                "noise_floor",
                "verdict",
            ])?;
            for r in &c.rows {
                w.write_record([
                    r.probe.clone(),
                    r.case.clone(),
                    r.params.clone(),
                    r.unit.clone(),
                    r.a_median.to_string(),
                    r.b_median.to_string(),
                    r.ratio.to_string(),
                    r.ratio_ci95[0].to_string(),
                    r.ratio_ci95[1].to_string(),
                    r.p_value.to_string(),
                    r.noise_floor.to_string(),
                    r.verdict.text().to_string(),
                ])?;
            }
            String::from_utf8(w.into_inner()?)?
        }
    })
}
