//! Rendering advice: the summary table a programmer can paste and each recommendation
//! in detail, as the text and Markdown reports show them (a machine's advice in every
//! format is `advise.rs`).

use super::grid::Grid;
use crate::advice::Recommendation;

/// The summary: one row per operation (the first recommendation naming it).
pub fn summary(recs: &[Recommendation]) -> Grid {
    let mut seen: Vec<&str> = Vec::new();
    let rows = recs
        .iter()
        .filter_map(|r| {
            let op = r.operation.as_deref()?;
            if seen.contains(&op) {
                return None;
            }
            seen.push(op);
            Some(vec![
                op.to_string(),
                if r.changed.is_some() {
                    format!("{} (changed)", r.action)
                } else {
                    r.action.clone()
                },
                // The saving per call and what a fit found stay in the detail: the
                // summary must fit.
                r.effect
                    .split(", saving")
                    .flat_map(|s| s.split("; "))
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                r.confidence.level.name().to_string(),
            ])
        })
        .collect();
    Grid {
        title: "what to do".into(),
        headers: ["operation", "do this", "why (the figure)", "confidence"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows,
        footnotes: Vec::new(),
        numeric: false,
        flex: Some(2),
        ..Default::default()
    }
}

/// A recommendation in detail, as indented text lines.
pub fn detail(r: &Recommendation) -> Vec<String> {
    let runs = if r.evidence.runs.is_empty() {
        "this run".to_string()
    } else {
        let ids: Vec<String> = r.evidence.runs.iter().map(|i| i.to_string()).collect();
        format!("run {}", ids.join(", "))
    };
    let rows: Vec<String> = r
        .evidence
        .rows
        .iter()
        .map(|e| {
            let modes = e.modes.map_or(String::new(), |[lo, hi]| {
                format!(", bimodal: {} and {}", e.unit.figure(lo), e.unit.figure(hi))
            });
            format!(
                "{} {} {} ({}–{}{modes})",
                e.role,
                e.case,
                e.unit.figure(e.median),
                e.unit.bare(e.ci95[0]),
                e.unit.bare(e.ci95[1])
            )
        })
        .collect();
    let mut out = vec![
        format!("{}: {}", r.title(), r.action),
        format!("  effect: {}", r.effect),
    ];
    if let Some(t) = r.choice.ties_text() {
        out.push(format!("  tied with the best: {t}"));
    }
    out.extend([
        format!("  evidence ({runs}): {}", rows.join("; ")),
        format!(
            "  confidence {}: {}",
            r.confidence.level.name(),
            r.confidence.reasons.join("; ")
        ),
    ]);
    if !r.caveats.is_empty() {
        out.push(format!("  caveats: {}", r.caveats.join("; ")));
    }
    if let Some(c) = &r.changed {
        out.push(format!("  {c}"));
    }
    out
}
