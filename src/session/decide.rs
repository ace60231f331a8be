//! `ioprobe run`'s second part: after the first pass over every row, the rows an
//! undecided answer rests on are measured again (fresh processes and connections where
//! the probe's rows depend on them) and pooled into their rows, answer by answer, the
//! least settled first, until every answer is decided or the time is spent
//! ([`crate::harness::race`]).

use crate::advice::Recommendation;
use crate::harness::TimeLimit;
use crate::harness::race::{self, Visit};
use crate::probes::{Context, Probe};
use crate::results::{Measurement, Schedule, TopicSpend};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// The share of simulated reruns an answer must keep to be decided: high confidence's.
pub const TARGET: f64 = 0.95;

/// What a run's decision needs from the session: every configuration its rows came from
/// (each probe's, and the one past a sweep's edges), the rows' answers, and the time
/// limit's weight of each case a visit measures.
pub struct Inputs<'a> {
    pub configs: Vec<&'a dyn Probe>,
    pub assess: &'a dyn Fn(&[Measurement]) -> Vec<Recommendation>,
    pub weights: &'a dyn Fn(&dyn Probe, &BTreeSet<String>) -> Vec<(String, f64)>,
    /// Seconds each probe's first pass took, by probe name.
    pub first_pass: &'a BTreeMap<String, f64>,
}

/// The rows a recommendation rests on, by probe: its evidence (the choice, the best, the
/// sizes or methods tied with it, the nearest ruled out, the baseline).
fn rows_of(rec: &Recommendation) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &rec.evidence.rows {
        out.entry(r.probe.clone()).or_default().insert(r.case.clone());
    }
    out
}

/// Samples the rows of `wanted` again with `budget` (shared among the configurations
/// holding them by their number of cases) and pools the new samples into `rows`.
/// Returns the samples added.
fn visit(
    inputs: &Inputs,
    ctx: &Context,
    wanted: &BTreeMap<String, BTreeSet<String>>,
    budget: Duration,
    rows: &mut [Measurement],
) -> Result<usize> {
    let mut runs: Vec<(&dyn Probe, BTreeSet<String>)> = Vec::new();
    for &p in &inputs.configs {
        let Some(cases) = wanted.get(p.kind().name()) else {
            continue;
        };
        let mine: BTreeSet<String> = p
            .case_names()
            .into_iter()
            .filter(|c| cases.contains(c))
            .collect();
        if !mine.is_empty() {
            runs.push((p, mine));
        }
    }
    let total: usize = runs.iter().map(|r| r.1.len()).sum();
    let before: usize = rows.iter().map(|m| m.samples).sum();
    for (p, only) in runs {
        let share = budget.mul_f64(only.len() as f64 / total.max(1) as f64);
        let limit = TimeLimit::new(Some(share), (inputs.weights)(p, &only));
        let sub = Context {
            harness: ctx.harness,
            env: ctx.env,
            overhead: ctx.overhead,
            scratch: ctx.scratch,
            progress: ctx.progress,
            cpus: ctx.cpus,
            limit: &limit,
            only: Some(&only),
        };
        ctx.progress.add_rows(only.len() as u64);
        let name = p.kind().name();
        let regime = p.kind().regime_rows();
        for again in p
            .run(&sub)
            .map_err(|e| e.context(format!("probe {name}")))?
        {
            if let Some(m) = rows
                .iter_mut()
                .find(|m| m.probe == again.probe && m.case == again.case)
            {
                m.pool(again, regime);
            }
        }
    }
    Ok(rows
        .iter()
        .map(|m| m.samples)
        .sum::<usize>()
        .saturating_sub(before))
}

/// Races the answers of `rows` for `budget` (see the module); returns the run's
/// schedule, `first_pass_s` the first pass's seconds.
pub fn decide(
    inputs: &Inputs,
    ctx: &Context,
    rows: &mut Vec<Measurement>,
    (budget, first_pass_s): (Duration, f64),
) -> Result<Schedule> {
    let first: HashMap<(String, String), usize> = rows
        .iter()
        .map(|m| ((m.probe.clone(), m.case.clone()), m.samples))
        .collect();
    let recs = std::cell::RefCell::new((inputs.assess)(rows));
    let cell = std::cell::RefCell::new(std::mem::take(rows));
    let outcome = race::race(
        budget,
        TARGET,
        || {
            let now = (inputs.assess)(&cell.borrow());
            let out = now
                .iter()
                .map(|r| (r.id.clone(), agreement(r)))
                .collect();
            *recs.borrow_mut() = now;
            out
        },
        |id, b| -> Result<Visit> {
            let wanted = recs
                .borrow()
                .iter()
                .find(|r| r.id == id)
                .map(rows_of)
                .unwrap_or_default();
            let start = Instant::now();
            let samples = visit(inputs, ctx, &wanted, b, &mut cell.borrow_mut())?;
            Ok(Visit {
                seconds: start.elapsed().as_secs_f64(),
                samples,
            })
        },
    );
    *rows = cell.into_inner();
    let outcome = outcome?;
    let final_recs = (inputs.assess)(rows);
    let topics = final_recs
        .iter()
        .map(|rec| spend(rec, &outcome, rows, (&first, inputs.first_pass)))
        .collect();
    Ok(Schedule {
        first_pass_s,
        visits_s: outcome.seconds,
        target: TARGET,
        ended: if outcome.all_decided {
            "decided"
        } else {
            "limit"
        }
        .into(),
        topics,
    })
}

/// A recommendation's agreement as the race takes it: none (no choice was simulated)
/// counts as decided, a cap that measuring again may lift as undecided.
fn agreement(r: &Recommendation) -> Option<f64> {
    if r.confidence.unsettled {
        Some(0.0)
    } else {
        r.confidence.agreement
    }
}

/// One answer's time: its rows' share of their probes' first pass (by samples), and
/// its visits.
fn spend(
    rec: &Recommendation,
    outcome: &race::Outcome,
    rows: &[Measurement],
    (first, first_pass): (&HashMap<(String, String), usize>, &BTreeMap<String, f64>),
) -> TopicSpend {
    let wanted = rows_of(rec);
    let mine = |m: &&Measurement| wanted.get(&m.probe).is_some_and(|c| c.contains(&m.case));
    let first_of = |m: &Measurement| {
        first
            .get(&(m.probe.clone(), m.case.clone()))
            .copied()
            .unwrap_or(0)
    };
    let mut seconds = 0.0;
    for (probe, cases) in &wanted {
        let all: usize = rows
            .iter()
            .filter(|m| &m.probe == probe)
            .map(first_of)
            .sum();
        let these: usize = rows
            .iter()
            .filter(|m| &m.probe == probe && cases.contains(&m.case))
            .map(first_of)
            .sum();
        let probe_s = first_pass.get(probe).copied().unwrap_or(0.0);
        seconds += probe_s * these as f64 / all.max(1) as f64;
    }
    let raced = outcome.topics.iter().find(|(t, _)| t.id == rec.id);
    let (visits, visit_s) = raced.map_or((0, 0.0), |(t, _)| (t.visits, t.seconds));
    let agreement = rec.confidence.agreement;
    TopicSpend {
        id: rec.id.clone(),
        samples: rows.iter().filter(mine).map(|m| m.samples).sum(),
        seconds: seconds + visit_s,
        visits,
        visit_s,
        passes: rows
            .iter()
            .filter(mine)
            .map(|m| m.pass_medians().len().max(1))
            .max()
            .unwrap_or(1),
        agreement,
        stopped: if self::agreement(rec).is_none_or(|a| a >= TARGET) {
            "decided"
        } else if raced.is_some_and(|(t, _)| t.stalled()) {
            "stalled"
        } else {
            "limit"
        }
        .into(),
    }
}
