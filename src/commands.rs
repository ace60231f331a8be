//! Commands that work on saved results: saving runs, `history`, `show`, `compare`,
//! `export`, `import`, `report` and `advise`. Each returns the text for stdout.

use crate::error::{Regression, UsageError};
use crate::present::Recommendation;
use crate::probes::ProbeKind;
use crate::report::advice::Coverage;
use crate::report::{self, Format};
use crate::results::runref::{self, Named};
use crate::results::store::{self, Store};
use crate::results::{Measurement, Run, compare};
use crate::settings::{ExportFormat, Settings};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The store path from `--store`, or the default.
pub fn store_path(settings: &Settings) -> Result<PathBuf> {
    match &settings.store {
        Some(p) => Ok(p.clone()),
        None => store::default_path(),
    }
}

/// Opens the store for saving, unless `--no-save`; done before measuring so a broken
/// store fails fast.
pub fn store_for_saving(settings: &Settings) -> Result<Option<Store>> {
    if settings.no_save {
        return Ok(None);
    }
    let mut store = Store::open(&store_path(settings)?)?;
    store.check_writable()?;
    Ok(Some(store))
}

fn open_existing(settings: &Settings) -> Result<Store> {
    Store::open_read_only(&store_path(settings)?)
}

pub fn resolve(settings: &Settings, spec: &str) -> Result<Named> {
    runref::resolve(spec, &mut || open_existing(settings))
}

/// Writes `text` to `path` through a temporary file made with O_EXCL in the same
/// directory and a rename, so a reader never sees half a report and a symlink planted at
/// `path` is replaced, never followed. The file is 0644 less the umask, like any file a
/// user asks for. Refuses to replace the results store.
pub fn write_atomically(path: &Path, text: &str, store: Option<&Path>) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let shown = crate::units::escape(&path.display().to_string());
    let same =
        |a: &std::fs::Metadata, b: &std::fs::Metadata| (a.dev(), a.ino()) == (b.dev(), b.ino());
    if let (Some(Ok(s)), Ok(target)) = (store.map(std::fs::metadata), std::fs::metadata(path))
        && same(&s, &target)
    {
        return Err(UsageError(format!(
            "{shown} is the results store; write the report elsewhere"
        ))
        .into());
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".ioprobe-report-")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())
        .with_context(|| format!("writing {shown}"))?;
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("writing {shown}: {}", e.error))?;
    Ok(())
}

/// `ioprobe history`.
pub fn history(settings: &Settings) -> Result<String> {
    let store = open_existing(settings)?;
    let runs = store.list()?;
    let g = report::grid::Grid {
        title: format!("runs in {}", store.path().display()),
        headers: [
            "id",
            "date",
            "host",
            "kernel",
            "filesystem",
            "command",
            "probes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: runs
            .iter()
            .map(|r| {
                vec![
                    r.id.to_string(),
                    r.started_at.clone(),
                    r.host.clone(),
                    r.kernel.clone(),
                    r.filesystem.clone(),
                    r.command.clone(),
                    r.probes.clone(),
                ]
            })
            .collect(),
        footnotes: Vec::new(),
        numeric: false,
        ..Default::default()
    };
    Ok(match settings.format {
        Format::Markdown => report::markdown::render_grid(&g),
        Format::Json => {
            let v: Vec<serde_json::Value> = runs
                .iter()
                .map(|r| {
                    serde_json::json!({"id": r.id, "started_at": r.started_at, "host": r.host, "kernel": r.kernel,
                        "filesystem": r.filesystem, "command": r.command, "probes": r.probes.split(',').collect::<Vec<_>>()})
                })
                .collect();
            serde_json::to_string_pretty(&v)? + "\n"
        }
        Format::Csv => report::csv::render_grid(&g)?,
        Format::Table => report::table::render_grid(&g),
    })
}

/// `ioprobe show RUN`.
pub fn show(settings: &Settings, spec: &str) -> Result<String> {
    let named = resolve(settings, spec)?;
    report::render(&named.run, named.id, settings.format)
}

/// `ioprobe export RUN`: the run as JSON (the `--json` schema), or in the format asked
/// for with `--csv` / `--markdown`.
pub fn export(settings: &Settings, spec: &str, to: Option<ExportFormat>) -> Result<String> {
    let named = resolve(settings, spec)?;
    let format = match to {
        Some(ExportFormat::Openmetrics) => return Ok(report::openmetrics::render(&named.run)),
        Some(ExportFormat::Json) => Format::Json,
        Some(ExportFormat::Csv) => Format::Csv,
        Some(ExportFormat::Markdown) => Format::Markdown,
        None => match settings.format {
            Format::Table => Format::Json,
            other => other,
        },
    };
    report::render(&named.run, named.id, format)
}

/// `ioprobe import FILE…`: every file validated first, then all saved.
pub fn import(settings: &Settings, files: &[PathBuf]) -> Result<String> {
    let runs: Vec<Run> = files
        .iter()
        .map(|f| runref::load_json_file(f))
        .collect::<Result<_>>()?;
    let mut store = Store::open(&store_path(settings)?)?;
    let mut out = String::new();
    for (f, run) in files.iter().zip(&runs) {
        let id = store.save(run)?;
        out.push_str(&format!("imported {} as run {id}\n", f.display()));
    }
    Ok(out)
}

/// `ioprobe compare A B…`: B ÷ A for one B; for several, a matrix of each ÷ A.
/// `--fail-if-slower` looks at every B.
pub fn compare(
    settings: &Settings,
    a: &str,
    bs: &[String],
    fail_if_slower: Option<f64>,
) -> Result<(String, Option<Regression>)> {
    let na = resolve(settings, a)?;
    let mut comparisons = Vec::new();
    for b in bs {
        let nb = resolve(settings, b)?;
        let c = compare::compare(&na.label, &na.run, &nb.label, &nb.run);
        if c.rows.is_empty() {
            anyhow::bail!(
                "{} and {} have no measurement in common",
                na.label,
                nb.label
            );
        }
        comparisons.push(c);
    }
    let text = match comparisons.as_slice() {
        [one] => report::compare::render(one, settings.format)?,
        many => report::compare::render_matrix(many, settings.format)?,
    };
    let regression = fail_if_slower.and_then(|t| {
        let slow: Vec<String> = comparisons
            .iter()
            .flat_map(|c| {
                c.slower_than(t).into_iter().map(|r| {
                    let run = if comparisons.len() > 1 {
                        format!(" in {}", c.b)
                    } else {
                        String::new()
                    };
                    format!("{}/{} (+{:.1}%){run}", r.probe, r.case, r.slowdown * 100.0)
                })
            })
            .collect();
        (!slow.is_empty()).then(|| {
            Regression(format!(
                "{} measurement(s) slower by more than {:.1}%: {}",
                slow.len(),
                t * 100.0,
                slow.join(", ")
            ))
        })
    });
    Ok((text, regression))
}

/// `ioprobe report RUN --html FILE --svg DIR`.
pub fn report(
    settings: &Settings,
    spec: &str,
    html: Option<&Path>,
    svg: Option<&Path>,
) -> Result<String> {
    if html.is_none() && svg.is_none() {
        return Err(UsageError("report needs --html FILE and/or --svg DIR".into()).into());
    }
    let named = resolve(settings, spec)?;
    let store = store_path(settings)?;
    let plots = report::plots::plots(&named.run)?;
    let mut out = String::new();
    if let Some(path) = html {
        let recs = report::advice::recommendations(&named.run, named.id);
        let obs = report::advice::observations(&named.run);
        let page = report::html::render(&named.run, &recs, &obs, &named.label, &plots)?;
        write_atomically(path, &page, Some(&store))?;
        out.push_str(&format!("wrote {}\n", path.display()));
    }
    if let Some(dir) = svg {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (plot, path) in plots.iter().zip(report::html::svg_paths(&plots, dir)) {
            write_atomically(&path, &plot.svg, Some(&store))?;
            out.push_str(&format!("wrote {}\n", path.display()));
        }
    }
    Ok(out)
}

/// Saves a run if a store is open; returns its id.
pub fn save(store: Option<&mut Store>, run: &Run) -> Result<Option<i64>> {
    match store {
        Some(s) => Ok(Some(s.save(run)?)),
        None => Ok(None),
    }
}

/// Writes the HTML report of run `id` next to the store; returns its path.
pub fn write_run_report(store: &Store, id: i64, run: &Run) -> Result<PathBuf> {
    let dir = store
        .path()
        .parent()
        .map_or_else(|| PathBuf::from("reports"), |d| d.join("reports"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("run-{id}.html"));
    let plots = report::plots::plots(run)?;
    let page = report::html::render(
        run,
        &report::advice::recommendations(run, Some(id)),
        &report::advice::observations(run),
        &format!("run {id}"),
        &plots,
    )?;
    write_atomically(&path, &page, Some(store.path()))?;
    Ok(path)
}

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
            let candidates = runs.iter().rev().filter(|r| {
                machine_of(&r.host, &r.filesystem, &r.kernel) == machine
                    && r.probes.split(',').any(|p| p == kind.name())
            });
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
