//! Gathering advice: each probe's recommendations and observations from a run (every
//! probe writes its own, see [`ProbeKind::recommend`]), how complete its sweep was (a
//! partial one lowers the confidence), and which saved runs `advise` takes them from.

use super::model::{Coverage, MachineAdvice, Recommendation, Source};
use crate::probes::{ProbeKind, Scale};
use crate::report::grid::kinds_of;
use crate::results::store::{Evidence, Store};
use crate::results::{Measurement, Run};
use crate::session::store_path;
use crate::settings::Settings;
use anyhow::Result;

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
        r.id = format!("{}.{}", kind.name(), r.id);
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

/// One machine as advice groups them: host, filesystem and kernel.
fn machine_of(host: &str, filesystem: &str, kernel: &str) -> String {
    format!("{host}, {filesystem}, kernel {kernel}")
}

/// Adds `probe`'s advice from `run` (saved as `id`) to `m`.
fn add_probe(m: &mut MachineAdvice, run: &Run, id: Option<i64>, kind: &dyn ProbeKind) {
    let rows: Vec<&Measurement> = run.of_probe(kind.name()).collect();
    let (cov, measured, expected) = super::coverage(kind, &rows);
    let mut recs = super::recommend_probe(kind, &rows, run, id);
    for r in &mut recs {
        r.evidence.machine = Some(m.machine.clone());
    }
    let obs = kind.advice(&rows, &run.environment);
    m.sources.push(Source {
        probe: kind.name().into(),
        run: id,
        started_at: run.started_at.clone(),
        host: run.environment.hostname.clone(),
        measured: true,
        coverage: Some(cov),
        cases: [measured, expected],
        advice: super::render::lines(&recs, &obs),
    });
    m.recs.extend(recs);
    m.observations.extend(obs);
}

/// `ioprobe advise`: per machine (host, filesystem, kernel; the newest first) and per
/// probe, the newest saved run that measured the probe's whole default sweep; without
/// one, the newest run that measured the most of it (`ioprobe run`'s selection before a
/// partial run), so a partial run never replaces a complete one. Returns None when
/// nothing is saved (the caller then measures).
pub fn advise_from_store(settings: &Settings) -> Result<Option<Vec<MachineAdvice>>> {
    let Some(store) = Store::open_read_only_if_any(&store_path(settings)?)? else {
        return Ok(None);
    };
    let runs = store.list()?;
    if runs.is_empty() {
        return Ok(None);
    }
    let mut machines: Vec<String> = Vec::new();
    for r in runs.iter().rev() {
        let m = machine_of(&r.host, &r.filesystem, &r.kernel);
        if !machines.contains(&m) {
            machines.push(m);
        }
    }
    let mut loaded: std::collections::HashMap<i64, Run> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for machine in machines {
        let mut m = MachineAdvice {
            machine: machine.clone(),
            sources: Vec::new(),
            recs: Vec::new(),
            observations: Vec::new(),
        };
        for &kind in crate::probes::REGISTRY {
            let Some(r0) = runs
                .iter()
                .find(|r| machine_of(&r.host, &r.filesystem, &r.kernel) == machine)
            else {
                continue;
            };
            let evidence = Evidence {
                host: &r0.host,
                filesystem: Some(&r0.filesystem),
                kernel: Some(&r0.kernel),
                probes: &[kind.name()],
                limit: usize::MAX,
            };
            let candidates = store.newest_with(&evidence)?;
            let mut chosen: Option<(Coverage, i64)> = None;
            for r in candidates {
                if let std::collections::hash_map::Entry::Vacant(e) = loaded.entry(r.id) {
                    e.insert(store.load(r.id)?);
                }
                let rows: Vec<&Measurement> = loaded[&r.id].of_probe(kind.name()).collect();
                let (cov, _, _) = super::coverage(kind, &rows);
                if chosen.is_none_or(|(c, _)| cov > c) {
                    chosen = Some((cov, r.id));
                }
                if cov == Coverage::Full {
                    break;
                }
            }
            match chosen {
                Some((_, id)) => add_probe(&mut m, &loaded[&id], Some(id), kind),
                None => m.sources.push(Source {
                    probe: kind.name().into(),
                    run: None,
                    started_at: String::new(),
                    host: String::new(),
                    measured: false,
                    coverage: None,
                    cases: [0, 0],
                    advice: Vec::new(),
                }),
            }
        }
        out.push(m);
    }
    Ok(Some(out))
}

/// Advice from one run (saved as `id`, if it was), for every probe it measured.
pub fn advice_of_run(run: &Run, id: Option<i64>) -> Vec<MachineAdvice> {
    let env = &run.environment;
    let mut m = MachineAdvice {
        machine: machine_of(
            &env.hostname,
            env.filesystem.as_ref().map_or("unknown", |f| &f.fs_type),
            &env.kernel,
        ),
        sources: Vec::new(),
        recs: Vec::new(),
        observations: Vec::new(),
    };
    for kind in kinds_of(run) {
        add_probe(&mut m, run, id, kind);
    }
    vec![m]
}
