//! Advice: what the measurements say a programmer should do. Every probe writes its
//! own recommendations and observations (see
//! [`ProbeKind::recommend`](crate::probes::ProbeKind::recommend)); this collects them in
//! run order, says how complete each probe's sweep was (a partial one lowers the
//! confidence), and renders the summary a programmer can paste and the details.

use super::grid::{Grid, kinds_of};
use crate::present::Recommendation;
use crate::probes::{ProbeKind, Scale};
use crate::results::{Measurement, Run};
use serde::Serialize;

/// How much of a probe's sweep a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    /// Some cases of neither the default sweep nor `ioprobe run`'s selection.
    Partial,
    /// Every case `ioprobe run` measures, not the whole default sweep.
    Selection,
    /// Every case of the probe's default sweep.
    Full,
}

impl Coverage {
    pub fn name(self) -> &'static str {
        match self {
            Coverage::Partial => "partial sweep",
            Coverage::Selection => "ioprobe run's selection",
            Coverage::Full => "full default sweep",
        }
    }
}

/// How much of `kind`'s sweep `rows` cover, and how many of the default sweep's cases
/// they hold (measured, expected).
pub fn coverage(kind: &dyn ProbeKind, rows: &[&Measurement]) -> (Coverage, usize, usize) {
    let has = |names: &[String]| names.iter().all(|n| rows.iter().any(|m| &m.case == n));
    let full = kind.for_scale(Scale::Default).case_names();
    let measured = full
        .iter()
        .filter(|n| rows.iter().any(|m| &&m.case == n))
        .count();
    let c = if has(&full) {
        Coverage::Full
    } else if has(&kind.for_scale(Scale::Run).case_names()) {
        Coverage::Selection
    } else {
        Coverage::Partial
    };
    (c, measured, full.len())
}

/// One probe's recommendations from `rows`, with the confidence lowered one level when
/// the rows are not the probe's whole default sweep.
pub fn recommend_probe(
    kind: &dyn ProbeKind,
    rows: &[&Measurement],
    run: &Run,
    id: Option<i64>,
) -> Vec<Recommendation> {
    let (cov, measured, expected) = coverage(kind, rows);
    let mut recs = kind.recommend(rows, &run.environment);
    for r in &mut recs {
        r.evidence.runs = id.into_iter().collect();
        if cov != Coverage::Full {
            let how = if cov == Coverage::Selection {
                format!(
                    "measured by `ioprobe run`'s short selection ({measured} of the {expected} cases of the full sweep); `ioprobe {}` measures all",
                    kind.name()
                )
            } else {
                format!("a partial sweep ({measured} of the {expected} cases of the default sweep)")
            };
            let level = r.confidence.level.lower();
            r.confidence.cap(level, how);
        }
    }
    recs
}

/// Every recommendation of a run, in run order; `id` is the run's id in the store.
pub fn recommendations(run: &Run, id: Option<i64>) -> Vec<Recommendation> {
    kinds_of(run)
        .into_iter()
        .flat_map(|k| {
            let rows: Vec<&Measurement> = run.of_probe(k.name()).collect();
            recommend_probe(k, &rows, run, id)
        })
        .collect()
}

/// Observations that are not a choice, in run order.
pub fn observations(run: &Run) -> Vec<String> {
    kinds_of(run)
        .into_iter()
        .flat_map(|k| {
            let rows: Vec<&Measurement> = run.of_probe(k.name()).collect();
            k.advice(&rows, &run.environment)
        })
        .collect()
}

/// One line per recommendation, then the observations.
pub fn lines(recs: &[Recommendation], observations: &[String]) -> Vec<String> {
    recs.iter()
        .map(Recommendation::line)
        .chain(observations.iter().cloned())
        .collect()
}

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
                r.action.clone(),
                // The saving per call stays in the detail: the summary must fit.
                r.effect
                    .split(", saving")
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
    out
}
