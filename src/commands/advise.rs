//! `ioprobe advise`: what to do on each machine, from the newest saved evidence.
//!
//! Per machine (host, filesystem, kernel) and probe, the run whose sweep is most
//! complete, pooled with the machine's other recent runs (`probes::advice`), and what
//! changed since the previous `advise`.

use crate::advice::pool;
use crate::advice::{Choice, MachineAdvice, Source};
use crate::probes::advice::{
    add_probe, advice_of_run, best_covered, load_once, machine_of, pooled_rows, runs_text,
};
use crate::report::advise::render_advice;
use crate::results::Run;
use crate::results::store::{Evidence, Store};
use crate::settings::Settings;
use anyhow::Result;
use std::collections::HashMap;

/// `ioprobe advise`: per machine (host, filesystem, kernel; the newest first) and per
/// probe, the newest saved run that measured the probe's whole default sweep; without
/// one, the newest run that measured the most of it (`ioprobe run`'s selection before a
/// partial run), so a partial run never replaces a complete one. Its rows are pooled
/// with the same rows of the machine's other recent runs ([`super::pool`]). Returns
/// None when nothing is saved (the caller then measures).
pub fn advise_from_store(settings: &Settings) -> Result<Option<Vec<MachineAdvice>>> {
    let Some(store) = Store::open_read_only_if_any(&settings.store_path()?)? else {
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
    let mut loaded: HashMap<i64, Run> = std::collections::HashMap::new();
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
            let ids: Vec<i64> = store.newest_with(&evidence)?.iter().map(|r| r.id).collect();
            let chosen = best_covered(&store, kind, &ids, &mut loaded)?;
            // The pool's candidates: the newest runs with the probe, loaded.
            let near: Vec<i64> = ids.iter().copied().take(2 * pool::POOL_MAX).collect();
            for &i in &near {
                load_once(&store, &mut loaded, i)?;
            }
            match chosen {
                Some((_, id)) => {
                    let rows = pooled_rows(kind, id, &near, &loaded);
                    add_probe(&mut m, (&loaded[&id], Some(id)), kind, &rows)
                }
                None => m.sources.push(Source {
                    probe: kind.name().into(),
                    run: None,
                    started_at: String::new(),
                    host: String::new(),
                    measured: false,
                    coverage: None,
                    cases: [0, 0],
                    pooled: Vec::new(),
                    advice: Vec::new(),
                }),
            }
        }
        out.push(m);
    }
    mark_changes(&store, &mut out)?;
    drop(store);
    record_seen(&settings.store_path()?, &out);
    Ok(Some(out))
}

/// Marks each recommendation whose action differs from the previous `advise`'s on the
/// same machine and topic id, with what it was and what evidence is new.
fn mark_changes(store: &Store, machines: &mut [MachineAdvice]) -> Result<()> {
    for m in machines {
        let seen = store.advice_seen(&m.machine)?;
        for r in &mut m.recs {
            let Some(before) = seen.get(&r.id).filter(|s| s.action != r.action) else {
                continue;
            };
            let now = runs_text(&r.evidence.runs);
            let why = if before.runs == now {
                "on the same runs: this ioprobe decides differently".to_string()
            } else {
                format!("the evidence is now runs {now}")
            };
            let still = match &r.choice {
                Choice::Method { tied, .. }
                    if tied.iter().any(|t| before.action == format!("use {t}")) =>
                {
                    "; it is still tied with the best"
                }
                _ => "",
            };
            r.changed = Some(format!(
                "changed since the advise of {}: it said \"{}\" from runs {}; {why}{still}",
                before.seen_at, before.action, before.runs
            ));
        }
    }
    Ok(())
}

/// Remembers what this `advise` said, for the next one to compare; a store that cannot
/// be written (read-only) is left as it is, and the next `advise` compares with older
/// advice.
fn record_seen(path: &std::path::Path, machines: &[MachineAdvice]) {
    let Ok(mut store) = Store::open(path) else {
        return;
    };
    let at = crate::results::time::now_rfc3339();
    for m in machines {
        let seen: Vec<(String, crate::results::store::Seen)> = m
            .recs
            .iter()
            .map(|r| {
                (
                    r.id.clone(),
                    crate::results::store::Seen {
                        action: r.action.clone(),
                        runs: runs_text(&r.evidence.runs),
                        seen_at: at.clone(),
                    },
                )
            })
            .collect();
        if store.record_advice(&m.machine, &seen).is_err() {
            return;
        }
    }
}

/// `ioprobe advise`: from the newest saved evidence, or from a run measured first when
/// nothing is saved yet.
pub fn advise(settings: &Settings) -> Result<String> {
    let blocks = match advise_from_store(settings)? {
        Some(blocks) => blocks,
        None => {
            crate::progress::note("nothing saved yet; measuring with a quick run first");
            let m = crate::session::measure(
                settings,
                "run",
                (crate::probes::registry(), crate::settings::Scale::Run),
                true,
            )?;
            if let Some(e) = m.failure() {
                return Err(e);
            }
            advice_of_run(&m.run, m.id)
        }
    };
    render_advice(&blocks, settings.format, &settings.style)
}
