//! `ioprobe advise`: what to do on each machine, from the newest saved evidence.

use crate::present::Recommendation;
use crate::probes::ProbeKind;
use crate::report::advice::Coverage;
use crate::report::{self, Format};
use crate::results::store::{Evidence, Store};
use crate::results::{Measurement, Run};
use crate::session::store_path;
use crate::settings::Settings;
use anyhow::Result;

/// Where one probe's advice comes from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Source {
    pub probe: String,
    /// The saved run's id; None for a run that was not saved (`--no-save`) or when no
    /// run measures the probe.
    pub run: Option<i64>,
    pub started_at: String,
    pub host: String,
    /// False when no run of this machine measures the probe.
    pub measured: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    /// Cases of the probe's default sweep the run measured, of how many.
    pub cases: [usize; 2],
    /// The probe's advice lines (recommendations, then observations).
    pub advice: Vec<String>,
}

/// The advice for one machine: its recommendations, observations and their sources.
pub struct MachineAdvice {
    /// "host, filesystem, kernel".
    pub machine: String,
    pub sources: Vec<Source>,
    pub recs: Vec<Recommendation>,
    pub observations: Vec<String>,
}

/// One machine as advice groups them: host, filesystem and kernel.
fn machine_of(host: &str, filesystem: &str, kernel: &str) -> String {
    format!("{host}, {filesystem}, kernel {kernel}")
}

/// Adds `probe`'s advice from `run` (saved as `id`) to `m`.
fn add_probe(m: &mut MachineAdvice, run: &Run, id: Option<i64>, kind: &dyn ProbeKind) {
    let rows: Vec<&Measurement> = run.of_probe(kind.name()).collect();
    let (cov, measured, expected) = report::advice::coverage(kind, &rows);
    let mut recs = report::advice::recommend_probe(kind, &rows, run, id);
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
        advice: report::advice::lines(&recs, &obs),
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
                let (cov, _, _) = report::advice::coverage(kind, &rows);
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
    for kind in report::grid::kinds_of(run) {
        add_probe(&mut m, run, id, kind);
    }
    vec![m]
}

/// Renders advice in the chosen format. Text and Markdown: per machine, the summary
/// table, where each probe's advice comes from, the details and the observations. JSON:
/// `recommendations` (each citing its runs and machine), `sources`, and `advice` (the
/// per-probe line lists of earlier versions). CSV: a row per advice line.
pub fn render_advice(machines: &[MachineAdvice], format: Format) -> Result<String> {
    let source_line = |s: &Source| match (s.measured, s.run) {
        (false, _) => format!(
            "{}: no saved run measures it; run `ioprobe {}`",
            s.probe, s.probe
        ),
        (true, run) => format!(
            "{}: {} ({}, {}), {} ({} of {} default cases)",
            s.probe,
            run.map_or("this run (not saved)".into(), |i| format!("run {i}")),
            s.started_at,
            s.host,
            s.coverage.map_or("", |c| c.name()),
            s.cases[0],
            s.cases[1]
        ),
    };
    match format {
        Format::Table | Format::Markdown => {
            let md = format == Format::Markdown;
            let mut out = String::new();
            for m in machines {
                let mut sources = String::from(if md {
                    "### sources\n\n"
                } else {
                    "\nfrom these runs:\n"
                });
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
                    ));
                }
                out.push('\n');
            }
            Ok(out)
        }
        Format::Json => {
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
        Format::Csv => {
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
    }
}

/// `ioprobe advise`: from the newest saved evidence, or from a run measured first when
/// nothing is saved yet.
pub fn advise(settings: &Settings) -> Result<String> {
    let blocks = match advise_from_store(settings)? {
        Some(blocks) => blocks,
        None => {
            crate::progress::note("nothing saved yet; measuring with a quick run first");
            let m = crate::session::measure(settings, "run", crate::probes::registry(), true)?;
            if let Some(e) = m.failure() {
                return Err(e);
            }
            advice_of_run(&m.run, m.id)
        }
    };
    render_advice(&blocks, settings.format)
}
