//! Commands that work on saved results: saving runs, `history`, `show`, `compare`,
//! `export`, `import`, `report` and `advise`. Each returns the text for stdout.

use crate::cli::Settings;
use crate::error::{Regression, UsageError};
use crate::report::{self, Format};
use crate::results::runref::{self, Named};
use crate::results::store::{self, Store};
use crate::results::{Run, compare};
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

fn resolve(settings: &Settings, spec: &str) -> Result<Named> {
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
    report::render(&named.run, settings.format)
}

/// `ioprobe export RUN`: the run as JSON (the `--json` schema), or in the format asked
/// for with `--csv` / `--markdown`.
pub fn export(settings: &Settings, spec: &str) -> Result<String> {
    let named = resolve(settings, spec)?;
    let format = match settings.format {
        Format::Table => Format::Json,
        other => other,
    };
    report::render(&named.run, format)
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

/// `ioprobe compare A B [--fail-if-slower P]`.
pub fn compare(
    settings: &Settings,
    a: &str,
    b: &str,
    fail_if_slower: Option<f64>,
) -> Result<(String, Option<Regression>)> {
    let na = resolve(settings, a)?;
    let nb = resolve(settings, b)?;
    let c = compare::compare(&na.label, &na.run, &nb.label, &nb.run);
    if c.rows.is_empty() {
        anyhow::bail!(
            "{} and {} have no measurement in common",
            na.label,
            nb.label
        );
    }
    let text = report::compare::render(&c, settings.format)?;
    let regression = fail_if_slower.and_then(|t| {
        let slow = c.slower_than(t);
        (!slow.is_empty()).then(|| {
            let names: Vec<String> = slow
                .iter()
                .map(|r| format!("{}/{} (+{:.1}%)", r.probe, r.case, r.slowdown * 100.0))
                .collect();
            Regression(format!(
                "{} measurement(s) slower by more than {:.1}%: {}",
                slow.len(),
                t * 100.0,
                names.join(", ")
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
        let advice = report::advice::advise(&named.run);
        let page = report::html::render(&named.run, &advice, &named.label, &plots)?;
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
        &report::advice::advise(run),
        &format!("run {id}"),
        &plots,
    )?;
    write_atomically(&path, &page, Some(store.path()))?;
    Ok(path)
}

/// Advice for one probe, and the run it comes from.
pub struct AdviceBlock {
    pub probe: String,
    /// The saved run's id; None for a run that was not saved (`--no-save`).
    pub run_id: Option<i64>,
    pub started_at: String,
    pub host: String,
    /// Empty when no run measures the probe.
    pub lines: Vec<String>,
    pub measured: bool,
}

/// `ioprobe advise`: for every probe, advice from the newest saved run that has it.
/// Returns None when nothing is saved (the caller then runs a quick measurement).
pub fn advise_from_store(settings: &Settings) -> Result<Option<Vec<AdviceBlock>>> {
    let Some(store) = Store::open_read_only_if_any(&store_path(settings)?)? else {
        return Ok(None);
    };
    let runs = store.list()?;
    if runs.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for probe in crate::probes::REGISTRY.iter().map(|k| k.name()) {
        let Some(summary) = runs
            .iter()
            .rev()
            .find(|r| r.probes.split(',').any(|p| p == probe))
        else {
            out.push(AdviceBlock {
                probe: probe.into(),
                run_id: None,
                started_at: String::new(),
                host: String::new(),
                lines: Vec::new(),
                measured: false,
            });
            continue;
        };
        let run = store.load(summary.id)?;
        out.extend(advice_of_run(&run, Some(summary.id), Some(probe)));
    }
    Ok(Some(out))
}

/// Advice from one run, per probe it measured (or only `only`).
pub fn advice_of_run(run: &Run, id: Option<i64>, only: Option<&str>) -> Vec<AdviceBlock> {
    run.probes()
        .into_iter()
        .filter(|p| only.is_none_or(|o| o == p))
        .map(|probe| {
            let mut part = run.clone();
            part.measurements.retain(|m| m.probe == probe);
            AdviceBlock {
                lines: report::advice::advise(&part),
                probe,
                run_id: id,
                started_at: run.started_at.clone(),
                host: run.environment.hostname.clone(),
                measured: true,
            }
        })
        .collect()
}

/// Renders advice in the chosen format: text grouped by source run, or one JSON
/// document, CSV or Markdown with a row per recommendation.
pub fn render_advice(blocks: &[AdviceBlock], format: Format) -> Result<String> {
    let source = |b: &AdviceBlock| match b.run_id {
        Some(id) => format!("run {id}"),
        None => "this run (not saved)".to_string(),
    };
    match format {
        Format::Table => {
            let mut out = String::new();
            let mut last = None;
            for b in blocks {
                if !b.measured {
                    out.push_str(&format!(
                        "{}: no saved run measures it; run `ioprobe {}`\n",
                        b.probe, b.probe
                    ));
                    continue;
                }
                let head = format!("from {} ({}, {}):\n", source(b), b.started_at, b.host);
                if last.as_ref() != Some(&head) {
                    out.push_str(&head);
                    last = Some(head);
                }
                for line in &b.lines {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            Ok(out)
        }
        Format::Json => {
            let v: Vec<serde_json::Value> = blocks
                .iter()
                .map(|b| {
                    serde_json::json!({"probe": b.probe, "run": b.run_id, "started_at": b.started_at,
                        "host": b.host, "measured": b.measured, "advice": b.lines})
                })
                .collect();
            Ok(serde_json::to_string_pretty(&serde_json::json!({ "advice": v }))? + "\n")
        }
        Format::Csv | Format::Markdown => {
            let g = report::grid::Grid {
                title: "advice".into(),
                headers: ["probe", "run", "date", "host", "advice"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                rows: blocks
                    .iter()
                    .flat_map(|b| {
                        let lines = if b.measured {
                            b.lines.clone()
                        } else {
                            vec![format!("not measured; run `ioprobe {}`", b.probe)]
                        };
                        lines.into_iter().map(move |l| {
                            vec![
                                b.probe.clone(),
                                b.run_id.map_or(String::new(), |i| i.to_string()),
                                b.started_at.clone(),
                                b.host.clone(),
                                l,
                            ]
                        })
                    })
                    .collect(),
                footnotes: Vec::new(),
                numeric: false,
            };
            Ok(if format == Format::Csv {
                report::csv::render_grid(&g)?
            } else {
                report::markdown::render_grid(&g)
            })
        }
    }
}
