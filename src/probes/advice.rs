//! The probes' advice: each probe's recommendations and observations from a run
//! (every probe writes its own, see [`ProbeKind::recommend`]), how complete its sweep
//! was (a partial one lowers the confidence), and a probe's rows pooled with the same
//! rows of the machine's other saved runs (`run` and `advise` both take them so).

use super::{ProbeKind, Scale, kinds_of};
use crate::advice::pool;
use crate::advice::{Coverage, Level, MachineAdvice, Recommendation, Source, lines};
use crate::results::store::{Evidence, Store};
use crate::results::{Measurement, Run};
use anyhow::Result;
use std::collections::HashMap;

/// How much of `kind`'s sweep `rows` cover, and how many of the default sweep's cases
/// they hold (measured, expected).
pub fn coverage(kind: &dyn ProbeKind, rows: &[&Measurement]) -> (Coverage, usize, usize) {
    let has = |names: &[String]| names.iter().all(|n| rows.iter().any(|m| &m.case == n));
    let advised = |scale| {
        let mut v = kind.for_scale(scale).case_names();
        v.retain(|n| !kind.unadvised_cases().contains(&n.as_str()));
        v
    };
    let full = advised(Scale::Default);
    // Counted over every case of the default sweep, as its table prints them; a case no
    // recommendation reads is not needed for full coverage.
    let all = kind.for_scale(Scale::Default).case_names();
    let measured = all
        .iter()
        .filter(|n| rows.iter().any(|m| &&m.case == n))
        .count();
    let c = if has(&full) {
        Coverage::Full
    } else if has(&advised(Scale::Run)) {
        Coverage::Selection
    } else {
        Coverage::Partial
    };
    (c, measured, all.len())
}

/// What a partial sweep measured, in words: `--quick`'s sweep where the rows hold it
/// (its sizes are not the default sweep's), else how many cases and how many of them
/// the default sweep has.
fn partial_words(
    kind: &dyn ProbeKind,
    rows: &[&Measurement],
    (in_default, expected): (usize, usize),
) -> String {
    let mut cases: Vec<&str> = rows.iter().map(|m| m.case.as_str()).collect();
    cases.sort_unstable();
    cases.dedup();
    let quick = kind.for_scale(Scale::Quick).case_names();
    let n = cases.len();
    if !quick.is_empty() && quick.iter().all(|q| rows.iter().any(|m| &m.case == q)) {
        format!("`--quick`'s sweep ({n} cases; the default sweep has {expected})")
    } else if n == in_default {
        format!("a partial sweep ({in_default} of the {expected} cases of the default sweep)")
    } else {
        format!(
            "a partial sweep ({n} cases, {in_default} of them among the default sweep's {expected})"
        )
    }
}

/// One probe's recommendations from `rows`, with the confidence lowered one level when
/// the rows are not the probe's whole default sweep, and to medium where `run` left an
/// answer resting on regime rows in one draw (unless `pooled`: the rows were pooled
/// with the machine's other saved runs, a draw each).
pub fn recommend_probe(
    kind: &dyn ProbeKind,
    rows: &[&Measurement],
    run: &Run,
    (id, pooled): (Option<i64>, bool),
) -> Vec<Recommendation> {
    let (cov, measured, expected) = coverage(kind, rows);
    let mut recs = kind.recommend(rows, &run.environment);
    let busy = run.environment.load.get(kind.name()).filter(|l| l.busy);
    // A row pooled with the machine's other saved runs drew as many regimes as runs.
    let schedule = run.harness.schedule.as_ref().filter(|_| !pooled);
    for r in &mut recs {
        r.id = format!("{}.{}", kind.name(), r.id);
        r.evidence.runs = id.into_iter().collect();
        if schedule.is_some_and(|s| s.topics.iter().any(|t| t.id == r.id && t.one_draw)) {
            r.confidence.cap(
                Level::Medium,
                "its rows move between runs in regimes (a file's pages, a process pair and connection) and were measured in one draw only, the time limit coming first: a rerun may draw another".into(),
            );
        }
        if let Some(l) = busy {
            r.confidence.cap(
                Level::Medium,
                format!(
                    "the machine was busy while {} ran ({}): a quieter rerun may choose otherwise",
                    kind.name(),
                    l.why_busy()
                ),
            );
        }
        match cov {
            Coverage::Full => {}
            // `ioprobe run`'s selection brackets each topic's sweep: the sweep's own
            // checks (three sizes, the best inside) set the confidence; the caveat says
            // what the full sweep adds.
            Coverage::Selection => r.caveats.push(format!(
                "measured by `ioprobe run`'s selection ({measured} of the {expected} cases of the full sweep); `ioprobe {}` measures all",
                kind.name()
            )),
            Coverage::Partial => {
                let level = r.confidence.level.lower();
                r.confidence
                    .cap(level, partial_words(kind, rows, (measured, expected)));
            }
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
            recommend_probe(k, &rows, run, (id, false))
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
pub fn machine_of(host: &str, filesystem: &str, kernel: &str) -> String {
    format!("{host}, {filesystem}, kernel {kernel}")
}

/// Adds `kind`'s advice to `m`, from `rows` (each with the saved runs it pooled) taken
/// from `run` (saved as `id`).
pub fn add_probe(
    m: &mut MachineAdvice,
    (run, id): (&Run, Option<i64>),
    kind: &dyn ProbeKind,
    rows: &[(Measurement, Vec<i64>)],
) {
    let refs: Vec<&Measurement> = rows.iter().map(|r| &r.0).collect();
    let (cov, measured, expected) = coverage(kind, &refs);
    let pooled = rows.iter().any(|r| r.1.iter().any(|&x| Some(x) != id));
    let mut recs = recommend_probe(kind, &refs, run, (id, pooled));
    for r in &mut recs {
        r.evidence.machine = Some(m.machine.clone());
        let mut runs: Vec<i64> = rows
            .iter()
            .filter(|(x, _)| r.evidence.rows.iter().any(|e| e.case == x.case))
            .flat_map(|(_, ids)| ids.iter().copied())
            .chain(id)
            .collect();
        runs.sort_unstable();
        runs.dedup();
        r.evidence.runs = runs;
    }
    let obs = kind.advice(&refs, &run.environment);
    let mut pooled: Vec<i64> = rows.iter().flat_map(|r| r.1.iter().copied()).collect();
    pooled.sort_unstable();
    pooled.dedup();
    m.sources.push(Source {
        probe: kind.name().into(),
        run: id,
        started_at: run.started_at.clone(),
        host: run.environment.hostname.clone(),
        measured: true,
        coverage: Some(cov),
        cases: [measured, expected],
        pooled: if pooled.len() > 1 { pooled } else { Vec::new() },
        advice: lines(&recs, &obs),
    });
    m.recs.extend(recs);
    m.observations.extend(obs);
}

/// `kind`'s rows of the saved run `id`, pooled with the newest runs of the same machine
/// and environment that measured it (see [`super::pool`]), `id` first among them.
pub fn pooled_rows(
    kind: &dyn ProbeKind,
    id: i64,
    candidates: &[i64],
    loaded: &HashMap<i64, Run>,
) -> Vec<(Measurement, Vec<i64>)> {
    let base = &loaded[&id];
    let mut newest_first: Vec<i64> = candidates.iter().copied().chain([id]).collect();
    newest_first.sort_unstable_by(|a, b| b.cmp(a));
    newest_first.dedup();
    // The base run always pools, with the newest POOL_MAX - 1 others.
    let others: Vec<i64> = newest_first
        .iter()
        .copied()
        .filter(|&c| c != id && pool::same_environment(base, &loaded[&c]))
        .take(pool::POOL_MAX - 1)
        .collect();
    let ids: Vec<i64> = newest_first
        .into_iter()
        .filter(|c| *c == id || others.contains(c))
        .collect();
    let runs: Vec<&Run> = ids.iter().map(|i| &loaded[i]).collect();
    pool::pool(kind.name(), base, &runs)
        .into_iter()
        .map(|(m, at)| (m, at.iter().map(|&i| ids[i]).collect()))
        .collect()
}

/// Run `id` into `loaded`, unless it is there already.
pub fn load_once(store: &Store, loaded: &mut HashMap<i64, Run>, id: i64) -> Result<()> {
    if let std::collections::hash_map::Entry::Vacant(e) = loaded.entry(id) {
        e.insert(store.load(id)?);
    }
    Ok(())
}

/// Of runs `ids` (newest first), the one whose `kind` rows cover its topics best, the
/// first with full coverage: (coverage, run id), None when there is none. The runs
/// looked at are loaded into `loaded`.
pub fn best_covered(
    store: &Store,
    kind: &dyn ProbeKind,
    ids: &[i64],
    loaded: &mut HashMap<i64, Run>,
) -> Result<Option<(Coverage, i64)>> {
    let mut chosen: Option<(Coverage, i64)> = None;
    for &id in ids {
        load_once(store, loaded, id)?;
        let rows: Vec<&Measurement> = loaded[&id].of_probe(kind.name()).collect();
        let (cov, _, _) = coverage(kind, &rows);
        if chosen.is_none_or(|(c, _)| cov > c) {
            chosen = Some((cov, id));
        }
        if cov == Coverage::Full {
            break;
        }
    }
    Ok(chosen)
}

pub fn runs_text(runs: &[i64]) -> String {
    runs.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
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
        let rows: Vec<(Measurement, Vec<i64>)> = run
            .of_probe(kind.name())
            .map(|r| (r.clone(), id.into_iter().collect()))
            .collect();
        add_probe(&mut m, (run, id), kind, &rows);
    }
    vec![m]
}

/// What differs between two runs' environments that keeps them from pooling
/// ([`pool::same_environment`]): "kernel 6.17.1 → 6.18.0", "filesystem ext4 →
/// xfs", …
fn environment_change(before: &Run, now: &Run) -> String {
    let (a, b) = (&before.environment, &now.environment);
    let fs = |e: &crate::sys::machine::Environment| {
        e.filesystem.as_ref().map_or("?".to_string(), |f| {
            format!("{} on {}", f.fs_type, f.source)
        })
    };
    let mut out = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what} {x} → {y}"));
        }
    };
    differ("kernel", a.kernel.clone(), b.kernel.clone());
    differ("filesystem", fs(a), fs(b));
    differ("CPU", a.cpu_model.clone(), b.cpu_model.clone());
    differ(
        "CPUs",
        a.logical_cpus.to_string(),
        b.logical_cpus.to_string(),
    );
    differ("build", a.build_profile.clone(), b.build_profile.clone());
    if a.tuning != b.tuning {
        out.push("kernel tuning settings".into());
    }
    if out.is_empty() {
        "the host".into()
    } else {
        out.join(", ")
    }
}

/// `ioprobe run`'s advice: each probe's rows of the run just saved as `id`, pooled with
/// the newest saved runs of this machine in the same environment, as `advise` pools
/// them, and the line that says so ("pooled from 3 runs (this one and 2 since …)"), or
/// why the run stands alone (a new pool after a changed kernel, say).
pub fn run_advice(
    path: &std::path::Path,
    run: &Run,
    id: i64,
) -> Result<(Vec<Recommendation>, String)> {
    let Some(store) = Store::open_read_only_if_any(path)? else {
        return Ok((
            recommendations(run, Some(id)),
            "this run stands alone".into(),
        ));
    };
    let host = run.environment.hostname.as_str();
    let newest = store.newest_with(&Evidence::of(host, &[], 4 * pool::POOL_MAX))?;
    let mut loaded = std::collections::HashMap::from([(id, run.clone())]);
    let (mut same, mut other) = (Vec::new(), None);
    for r in newest.iter().filter(|r| r.id != id) {
        load_once(&store, &mut loaded, r.id)?;
        if pool::same_environment(run, &loaded[&r.id]) {
            same.push(r.id);
        } else if other.is_none() {
            other = Some((r.id, environment_change(&loaded[&r.id], run)));
        }
    }
    let mut m = MachineAdvice {
        machine: newest
            .iter()
            .find(|r| r.id == id)
            .map_or(String::new(), |r| {
                machine_of(host, &r.filesystem, &r.kernel)
            }),
        sources: Vec::new(),
        recs: Vec::new(),
        observations: Vec::new(),
    };
    for kind in kinds_of(run) {
        let with: Vec<i64> = same
            .iter()
            .copied()
            .filter(|i| loaded[i].of_probe(kind.name()).next().is_some())
            .collect();
        let rows = pooled_rows(kind, id, &with, &loaded);
        add_probe(&mut m, (run, Some(id)), kind, &rows);
    }
    let mut pooled: Vec<i64> = m.sources.iter().flat_map(|s| s.pooled.clone()).collect();
    pooled.sort_unstable();
    pooled.dedup();
    // Each probe pools its own newest runs (at most POOL_MAX); probes measured by other
    // commands between two `run`s pool other runs, so the runs in all may be more.
    let most = m.sources.iter().map(|s| s.pooled.len()).max().unwrap_or(0);
    // The oldest pooled run other than this one, to the minute.
    let since = pooled
        .iter()
        .filter(|&&i| i != id)
        .map(|i| loaded[i].started_at.as_str())
        .min()
        .unwrap_or("");
    let since = since.get(..16).unwrap_or(since).replace('T', " ");
    let line = match (pooled.len(), other) {
        (n, _) if n > most && most > 1 => format!(
            "advice pooled from up to {most} runs a probe ({n} runs in all: this one and {} since {since}); --fresh for this run alone",
            n - 1
        ),
        (n, _) if n > 1 => format!(
            "advice pooled from {n} runs (this one and {} since {since}); --fresh for this run alone",
            n - 1
        ),
        (_, Some((rid, what))) => {
            format!("this run stands alone: a new pool, as {what} since run {rid}")
        }
        _ => "this run stands alone: no saved run of this machine to pool with".into(),
    };
    Ok((m.recs, line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Named;
    use crate::probes::syscalls;

    /// A syscalls run saved before `null_vector_dirty`, `stat_name` and the round trips
    /// existed still covers the sweep: no recommendation reads those cases (trace
    /// does). Without another case it is partial.
    #[test]
    fn a_case_no_advice_reads_is_not_needed_for_full_coverage() {
        use syscalls::Case::{NullVectorDirty, PipeRoundTrip, StatName, SwitchRoundTrip};
        let rows: Vec<Measurement> = syscalls::Case::ALL
            .iter()
            .filter(|c| ![NullVectorDirty, StatName, PipeRoundTrip, SwitchRoundTrip].contains(c))
            .map(|c| crate::advice::testing::m(c.name(), 100.0, 0.01))
            .collect();
        let refs: Vec<&Measurement> = rows.iter().collect();
        let (cov, measured, expected) = coverage(&syscalls::Kind, &refs);
        // Full, though 13 of the sweep's 17 cases: none of the 4 is read by any advice.
        assert_eq!((cov, measured, expected), (Coverage::Full, 13, 17));
        let (cov, _, _) = coverage(&syscalls::Kind, &refs[1..]);
        assert_ne!(cov, Coverage::Full);
    }

    /// `copy --quick` measures a 32 MiB file, none of the default sweep's cases: its
    /// caveat names `--quick`'s sweep, not "0 of the 84 cases".
    #[test]
    fn a_quick_sweep_is_named_as_such_not_as_none_of_the_default() {
        let kind = &crate::probes::copy::Kind;
        let rows: Vec<Measurement> = kind
            .for_scale(Scale::Quick)
            .case_names()
            .iter()
            .map(|c| crate::advice::testing::m(c, 1e9, 0.01))
            .collect();
        let refs: Vec<&Measurement> = rows.iter().collect();
        let (cov, measured, expected) = coverage(kind, &refs);
        assert_eq!((cov, measured), (Coverage::Partial, 0));
        let words = partial_words(kind, &refs, (measured, expected));
        assert!(words.starts_with("`--quick`'s sweep ("), "{words}");
        assert!(
            words.contains(&format!("the default sweep has {expected}")),
            "{words}"
        );
        // Some of the quick cases only: how many, and how many of them are the default's.
        let words = partial_words(kind, &refs[..3], (0, expected));
        assert_eq!(
            words,
            format!("a partial sweep (3 cases, 0 of them among the default sweep's {expected})")
        );
    }
}
