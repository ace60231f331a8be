//! Rendering of `ioprobe compare`: environment differences first, then one row per
//! matched measurement, in every output format.

use super::Format;
use super::grid::Grid;
use crate::names::Named;
use crate::present::Style;
use crate::results::Unit;
use crate::results::compare::{Comparison, Verdict};
use crate::units::{format_gbps, sig3};
use anyhow::Result;

fn value(unit: Unit, v: f64) -> String {
    if unit.higher_is_better() {
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
            ..Default::default()
        });
    }
    let rows = c
        .rows
        .iter()
        .map(|r| {
            vec![
                format!("{}/{}", r.probe, r.case),
                value(r.unit, r.a_median),
                value(r.unit, r.b_median),
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
    out.push(
        Grid {
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
            footnotes: footnotes(c),
            numeric: true,
            ..Default::default()
        }
        .optional(&["noise floor", "p", "A", "B", "95% interval"]),
    );
    out
}

/// Under the comparison: how verdicts are made, each row's note, and the rows that are
/// in one run only, unsupported in both or measured in one only.
fn footnotes(c: &Comparison) -> Vec<String> {
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
    footnotes
}

/// Renders a comparison in `format`.
pub fn render(c: &Comparison, format: Format, st: &Style) -> Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(c)? + "\n",
        Format::Table => {
            let mut s = if c.environment_differences.is_empty() {
                "environment: no differences\n\n".to_string()
            } else {
                String::new()
            };
            for g in grids(c) {
                s.push_str(&super::table::render_grid(&g, st));
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
                    r.unit.name().to_string(),
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

/// Several comparisons against one baseline as a matrix: a row per measurement of the
/// baseline, its median, then one column per run with its ratio to the baseline and
/// the verdict (seed 000's shape: machines side by side).
fn matrix_grid(cs: &[Comparison]) -> Grid {
    let base = cs.first().map_or(String::new(), |c| c.a.clone());
    let mut keys: Vec<(String, String, String, Unit, f64)> = Vec::new();
    for c in cs {
        for r in &c.rows {
            if !keys
                .iter()
                .any(|k| (&k.0, &k.1, &k.2) == (&r.probe, &r.case, &r.params))
            {
                keys.push((
                    r.probe.clone(),
                    r.case.clone(),
                    r.params.clone(),
                    r.unit,
                    r.a_median,
                ));
            }
        }
    }
    let rows = keys
        .iter()
        .map(|(probe, case, params, unit, a_median)| {
            let mut row = vec![format!("{probe}/{case}"), value(*unit, *a_median)];
            for c in cs {
                row.push(
                    c.rows
                        .iter()
                        .find(|r| (&r.probe, &r.case, &r.params) == (probe, case, params))
                        .map_or("-".into(), |r| match r.verdict {
                            Verdict::NoSignificantChange => format!("{}×", sig3(r.ratio)),
                            v => format!("{}× {}", sig3(r.ratio), v.text()),
                        }),
                );
            }
            row
        })
        .collect();
    let mut headers = vec!["measurement".to_string(), base.clone()];
    headers.extend(cs.iter().map(|c| format!("{} ÷ {base}", c.b)));
    let mut footnotes = vec![
        "each column: that run's median ÷ the first run's; faster/slower as in a two-run compare (p < 0.05, an interval that excludes 1, beyond the noise floor); - = not in that run".to_string(),
    ];
    for c in cs {
        for d in &c.environment_differences {
            footnotes.push(format!("{} differs in {}: {} → {}", c.b, d.fact, d.a, d.b));
        }
    }
    Grid {
        title: format!("compare: {} runs side by side, each ÷ {base}", cs.len() + 1),
        headers,
        rows,
        footnotes,
        numeric: true,
        ..Default::default()
    }
}

/// Renders a matrix of comparisons against one baseline in `format`; JSON holds every
/// pairwise comparison in full.
pub fn render_matrix(cs: &[Comparison], format: Format, st: &Style) -> Result<String> {
    Ok(match format {
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({ "comparisons": cs }))? + "\n"
        }
        Format::Table => super::table::render_grid(&matrix_grid(cs), st),
        Format::Markdown => super::markdown::render_grid(&matrix_grid(cs)),
        Format::Csv => super::csv::render_grid(&matrix_grid(cs))?,
    })
}
