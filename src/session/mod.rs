//! Every measuring command runs through here: the store it saves to (opened before
//! measuring, so a broken one fails fast), then the probes end to end (signal handling,
//! pinning, scratch directory, machine facts, validation, harness overhead, every
//! probe's cases in order), then saving and rendering. Saved runs are found through
//! `results::store`, not here.

use crate::error::UsageError;
use crate::harness::measure_overhead;
use crate::interrupt;
use crate::present::Style;
use crate::probes::{Context, Probe};
use crate::progress::Progress;
use crate::report::{self, Format};
use crate::results::store::Store;
use crate::results::{HarnessInfo, Run, SCHEMA_VERSION, Tool, time::now_rfc3339};
use crate::settings::{Scale, Settings};

mod decide;
mod estimate;
use crate::sys::affinity;
use crate::sys::load::Load;
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use anyhow::{Context as _, Result};
use estimate::{case_costs, min_costs, say_how_long, time_limit};
pub use estimate::{expected_seconds, least_seconds_of};
use std::path::PathBuf;

/// Pins the calling thread when asked; a CPU outside the allowed set is a usage error.
fn pin(cpu: Option<usize>) -> Result<()> {
    let Some(cpu) = cpu else { return Ok(()) };
    let allowed = affinity::allowed_cpus()?;
    if !allowed.contains(&cpu) {
        return Err(UsageError(format!(
            "--cpu {cpu}: not available to this process (allowed: {})",
            allowed
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ))
        .into());
    }
    affinity::pin_to(cpu)?;
    Ok(())
}

/// Runs `probes` under `settings` and returns the run; scratch is gone when this returns.
pub fn run_probes(
    settings: &Settings,
    probes: Vec<Box<dyn Probe>>,
    command: &str,
    scale: Scale,
) -> Result<Run> {
    interrupt::install()?;
    crate::sys::signals::install()
        .map_err(|e| anyhow::anyhow!("cannot set signal dispositions: {e}"))?;
    let cpus = affinity::allowed_cpus()?;
    pin(settings.cpu)?;
    for s in crate::sys::scratch::reclaim_stale(&settings.dir) {
        crate::progress::note(&format!(
            "removed {} ({}) left behind by ioprobe process {}, which is gone",
            s.path.display(),
            crate::units::format_size(s.bytes),
            s.pid
        ));
    }
    let scratch = Scratch::create_in(&settings.dir)?;
    let result = run_in(settings, (&probes, scale), command, &scratch, &cpus);
    let removed = scratch_cleanup(scratch);
    let run = result?;
    removed?;
    Ok(run)
}

/// A CI wider than this (± fraction of the median) is wide for the advice too.
const WIDE: f64 = 0.05;

fn rel_ci(m: &crate::results::Measurement) -> f64 {
    if m.median == 0.0 {
        f64::INFINITY
    } else {
        (m.ci95[1] - m.ci95[0]) / 2.0 / m.median
    }
}

/// What a time limit cost: how many cases it cut short, and which rows finished with a
/// CI wider than the target (None when there was no limit, or it cut nothing).
fn limit_warning(
    limit: &crate::harness::TimeLimit,
    label: &str,
    rows: &[crate::results::Measurement],
    target: f64,
) -> Option<String> {
    limit.limit()?;
    let cut = limit.cut_cases();
    if cut == 0 {
        return None;
    }
    let missed = rows.iter().filter(|m| m.is_ok() && !m.converged).count();
    // Those the advice would call wide (its confidence drops past ±5%), by name.
    let wide: Vec<&str> = rows
        .iter()
        .filter(|m| m.is_ok() && !m.converged && rel_ci(m) > WIDE)
        .map(|m| m.case.as_str())
        .collect();
    let which = match (missed, wide.len()) {
        (0, _) => "every row still reached its CI target".to_string(),
        (m, 0) => format!(
            "{m} rows missed the ±{}% CI target, none by more than ±{}%",
            target * 100.0,
            WIDE * 100.0
        ),
        (m, n) => format!(
            "{m} rows missed the ±{}% CI target; {n} are wider than ±{}%: {}{}",
            target * 100.0,
            WIDE * 100.0,
            wide[..n.min(6)].join(", "),
            if n > 6 {
                format!(" and {} more", n - 6)
            } else {
                String::new()
            }
        ),
    };
    Some(format!(
        "{label}: {cut} cases had less than their budget; {which}"
    ))
}

fn scratch_cleanup(s: Scratch) -> Result<()> {
    let path = s.path().to_path_buf();
    drop(s);
    if path.exists() {
        anyhow::bail!("could not remove scratch directory {}", path.display());
    }
    Ok(())
}

fn run_in(
    settings: &Settings,
    (probes, scale): (&[Box<dyn Probe>], Scale),
    command: &str,
    scratch: &Scratch,
    cpus: &[usize],
) -> Result<Run> {
    let started_at = now_rfc3339();
    let started = std::time::Instant::now();
    let mut env = Environment::collect(Some(scratch.parent()));
    env.pinned_cpu = settings.cpu;
    for p in probes {
        p.validate(&env, scratch)?;
    }
    let total: usize = probes.iter().map(|p| p.case_count()).sum();
    let (time_limit, limit_label) = time_limit(settings, (probes, scale), command);
    let (deciding, harness) = sampling(settings, scale, time_limit);
    say_how_long(
        (settings, &harness),
        (probes, scale, time_limit),
        command,
        &env,
        total,
    );
    let progress = progress_in(&env, total);
    let share = if deciding { FIRST_PASS_SHARE } else { 1.0 };
    let limit = crate::harness::TimeLimit::new(
        time_limit.map(|t| t.mul_f64(share)),
        min_costs(probes, &harness, &Default::default()),
    );
    progress.start("harness", "timer and loop overhead");
    let overhead = measure_overhead(&settings.harness)?;
    let ctx = Context {
        harness: &harness,
        env: &env,
        overhead,
        scratch,
        progress: &progress,
        cpus,
        limit: &limit,
        only: None,
    };
    let mut info = harness_info(settings, scale, time_limit, overhead);
    let template = Run {
        schema_version: SCHEMA_VERSION,
        tool: Tool::this(),
        started_at,
        command: command.into(),
        environment: env.clone(),
        harness: info.clone(),
        measurements: Vec::new(),
        warnings: Vec::new(),
    };
    let deadline = time_limit.filter(|_| deciding).map(|t| (started, t));
    let measured = measure_all(&ctx, (probes, scale), (&template, deadline));
    progress.finish();
    let (measurements, loads, schedule) = measured?;
    if let Some(s) = &schedule {
        crate::progress::note(&decided_words(command, s, started.elapsed().as_secs_f64()));
    }
    info.schedule = schedule;
    env.load = loads;
    let warnings = run_warnings(
        &env,
        (!deciding).then_some((&limit, &limit_label)),
        settings,
        &measurements,
    );
    Ok(Run {
        environment: env,
        harness: info,
        measurements,
        warnings,
        ..template
    })
}

/// Whether the run samples until each answer is decided (`run` within its time limit;
/// none under --thorough or --budget: every row then samples to its own end, as
/// --precise), and the sampling settings its rows start with.
fn sampling(
    settings: &Settings,
    scale: Scale,
    time_limit: Option<std::time::Duration>,
) -> (bool, crate::harness::Config) {
    let deciding = scale == Scale::Run && !settings.precise && time_limit.is_some();
    let harness = if deciding {
        first_pass(&settings.harness, settings.mode == "quick")
    } else {
        settings.harness.clone()
    };
    (deciding, harness)
}

/// The progress display for `total` rows, after saying which filesystem is measured.
fn progress_in(env: &Environment, total: usize) -> Progress {
    let progress = Progress::new(total as u64);
    if let Some(fs) = &env.filesystem {
        progress.note(&format!(
            "measuring in {} ({} on {})",
            fs.path, fs.fs_type, fs.source
        ));
    }
    progress
}

/// A run's warnings: a debug build, a busy machine, and under a per-row time limit
/// (`limit`: not `run`'s decided sampling) what the limit cut.
fn run_warnings(
    env: &Environment,
    limit: Option<(&crate::harness::TimeLimit, &String)>,
    settings: &Settings,
    measurements: &[crate::results::Measurement],
) -> Vec<String> {
    let mut warnings = Vec::new();
    if env.build_profile == "debug" {
        warnings.push("debug build: figures are not representative; build with --release".into());
    }
    warnings.extend(busy_warning(&env.load));
    if let Some((limit, label)) = limit {
        warnings.extend(limit_warning(
            limit,
            label,
            measurements,
            settings.harness.target_rel_ci,
        ));
    }
    warnings
}

/// A run's rows, what the machine did during each probe, and `run`'s schedule.
type RunRows = (
    Vec<crate::results::Measurement>,
    std::collections::BTreeMap<String, Load>,
    Option<crate::results::Schedule>,
);

/// Every probe's rows, what the machine did during each probe, and with a `deadline`
/// (`run`: its start and time limit) the visits after the first pass until each answer
/// is decided ([`decide_rest`]) and their schedule.
fn measure_all(
    ctx: &Context,
    (probes, scale): (&[Box<dyn Probe>], Scale),
    (template, deadline): (&Run, Option<(std::time::Instant, std::time::Duration)>),
) -> Result<RunRows> {
    let (mut measurements, loads, extensions) = measure_each(probes, scale, ctx)?;
    let Some((started, limit)) = deadline else {
        return Ok((measurements, loads, None));
    };
    let configs: Vec<&dyn Probe> = probes
        .iter()
        .chain(&extensions)
        .map(|p| p.as_ref())
        .collect();
    let schedule = decide_rest(
        (ctx, template, &loads),
        configs,
        &mut measurements,
        limit.saturating_sub(started.elapsed()),
        started.elapsed().as_secs_f64(),
    )?;
    Ok((measurements, loads, Some(schedule)))
}

/// `run`'s visits after its first pass ([`decide`]): the rows of the answers still
/// undecided sampled again within `left`, answers assessed on a copy of `template`
/// holding the rows; the schedule.
fn decide_rest(
    (ctx, template, loads): (&Context, &Run, &std::collections::BTreeMap<String, Load>),
    configs: Vec<&dyn Probe>,
    measurements: &mut Vec<crate::results::Measurement>,
    left: std::time::Duration,
    first_pass_s: f64,
) -> Result<crate::results::Schedule> {
    let assess = |rows: &[crate::results::Measurement]| {
        let mut run = template.clone();
        run.measurements = rows.to_vec();
        crate::probes::advice::recommendations(&run, None)
    };
    let weights = |p: &dyn Probe, only: &std::collections::BTreeSet<String>| {
        let name = p.kind().name();
        case_costs(p, ctx.harness, &Default::default())
            .into_iter()
            .filter(|(k, _)| {
                k.strip_prefix(name)
                    .and_then(|c| c.strip_prefix('/'))
                    .is_some_and(|c| only.contains(c))
            })
            .collect()
    };
    let first: std::collections::BTreeMap<String, f64> =
        loads.iter().map(|(k, l)| (k.clone(), l.seconds)).collect();
    let inputs = decide::Inputs {
        configs,
        assess: &assess,
        weights: &weights,
        first_pass: &first,
    };
    decide::decide(&inputs, ctx, measurements, (left, first_pass_s))
}

/// What `run` says when it ends: how many answers it decided, and when.
fn decided_words(command: &str, s: &crate::results::Schedule, seconds: f64) -> String {
    let decided = s.topics.iter().filter(|t| t.stopped == "decided").count();
    let open: Vec<String> = s
        .topics
        .iter()
        .filter(|t| t.stopped != "decided")
        .map(|t| format!("{} ({})", t.id, t.stopped))
        .collect();
    let when = crate::units::format_minutes(seconds);
    if open.is_empty() {
        format!(
            "{command}: every answer decided ({decided} of {decided}) in {when}{}",
            if s.ended == "decided" {
                ", before its time limit"
            } else {
                ""
            }
        )
    } else {
        format!(
            "{command}: {decided} of {} answers decided in {when} (its time limit was spent); undecided: {}",
            s.topics.len(),
            open.join(", ")
        )
    }
}

/// The share of `run`'s time limit its first pass over every row may take; the rest
/// goes to the rows of the answers still undecided.
const FIRST_PASS_SHARE: f64 = 0.35;

/// `run`'s first pass samples each row a little: 2 passes of a whole-pass row and 2
/// samples of a calibrated one at least (6 and 5 otherwise). The rows of an undecided
/// answer are sampled again, a regime row's on another draw (which averages out what
/// more samples of one draw do not), and a decided answer needs no more. `run
/// --quick`'s warm-ups take 20 ms at most.
fn first_pass(h: &crate::harness::Config, quick: bool) -> crate::harness::Config {
    crate::harness::Config {
        min_samples: h.min_samples.min(2),
        min_round_samples: 2,
        warmup: if quick {
            h.warmup.min(std::time::Duration::from_millis(20))
        } else {
            h.warmup
        },
        ..h.clone()
    }
}

/// Runs each probe in turn (`ioprobe run`: once more past the edges its best rows sit
/// at): the measurements, what the rest of the machine did during each probe, and the
/// configurations that measured past the edges.
type ProbeRows = (
    Vec<crate::results::Measurement>,
    std::collections::BTreeMap<String, Load>,
    Vec<Box<dyn Probe>>,
);

fn measure_each(probes: &[Box<dyn Probe>], scale: Scale, ctx: &Context) -> Result<ProbeRows> {
    let mut measurements = Vec::new();
    let mut loads = std::collections::BTreeMap::new();
    let mut extensions = Vec::new();
    for p in probes {
        let before = crate::sys::load::snapshot();
        let mut m = p
            .run(ctx)
            .and_then(|mut m| {
                if scale == Scale::Run
                    && let Some(more) = p.beyond_edges(&m)
                {
                    ctx.progress.add_rows(more.case_count() as u64);
                    m.extend(more.run(ctx)?);
                    extensions.push(more);
                }
                Ok(m)
            })
            .map_err(|e| e.context(format!("probe {}", p.kind().name())))?;
        let after = crate::sys::load::snapshot();
        let load = Load::between(&before, &after, preemptions(&m));
        loads.insert(p.kind().name().to_string(), load);
        measurements.append(&mut m);
    }
    Ok((measurements, loads, extensions))
}

/// Involuntary context switches of the measuring thread per sample, over `rows`.
fn preemptions(rows: &[crate::results::Measurement]) -> f64 {
    let samples: usize = rows.iter().map(|m| m.samples).sum();
    let cs: u64 = rows.iter().map(|m| m.rusage.total.involuntary_cs).sum();
    if samples == 0 {
        0.0
    } else {
        cs as f64 / samples as f64
    }
}

/// "the machine was busy while … ran": which probes, and why.
fn busy_warning(loads: &std::collections::BTreeMap<String, Load>) -> Option<String> {
    let busy: Vec<String> = loads
        .iter()
        .filter(|(_, l)| l.busy)
        .map(|(p, l)| format!("{p} ({})", l.why_busy()))
        .collect();
    (!busy.is_empty()).then(|| {
        format!(
            "the machine was busy while these probes ran: {}; their figures may not repeat on a quieter machine, and their recommendations are at most medium confidence",
            busy.join("; ")
        )
    })
}

/// The scale that ran, as the run's header says it: "ioprobe run's selection" for
/// `run` (with "thorough sampling" under `--thorough`), else "quick mode", "default
/// mode" or "thorough mode".
fn scale_label(scale: Scale, mode: &str) -> String {
    match (scale, mode) {
        (Scale::Run, "thorough") => "ioprobe run's selection, thorough sampling".into(),
        (Scale::Run, _) => "ioprobe run's selection".into(),
        (_, m) => format!("{m} mode"),
    }
}

/// How the harness sampled, as the run records it.
fn harness_info(
    settings: &Settings,
    scale: Scale,
    time_limit: Option<std::time::Duration>,
    overhead: crate::harness::Overhead,
) -> HarnessInfo {
    let h = &settings.harness;
    HarnessInfo {
        mode: scale_label(scale, settings.mode),
        sample_time_s: h.sample_time.as_secs_f64(),
        warmup_s: h.warmup.as_secs_f64(),
        budget_per_case_s: h.budget.as_secs_f64(),
        pass_time_s: Some(h.pass_time.as_secs_f64()),
        time_limit_s: time_limit.map(|t| t.as_secs_f64()),
        min_samples: h.min_samples,
        target_rel_ci: h.target_rel_ci,
        overhead,
        ci_method: "order statistics of the binomial (distribution-free)".into(),
        schedule: None,
    }
}

/// Saves a run if a store is open; returns its id.
pub fn save(store: Option<&mut Store>, run: &Run) -> Result<Option<i64>> {
    match store {
        Some(s) => Ok(Some(s.save(run)?)),
        None => Ok(None),
    }
}

/// Writes the HTML report of run `id` next to the store, with the advice `recs` its
/// text gave (pooled for `run`); returns its path.
pub fn write_run_report(
    store: &Store,
    (id, run): (i64, &Run),
    recs: &[crate::advice::Recommendation],
    st: &Style,
) -> Result<PathBuf> {
    let dir = store
        .path()
        .parent()
        .map_or_else(|| PathBuf::from("reports"), |d| d.join("reports"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("run-{id}.html"));
    let plots = report::plots::plots(run)?;
    let page = report::html::page_with(run, recs, &format!("run {id}"), &plots, st)?;
    report::write_atomically(&path, &page, Some(store.path()))?;
    Ok(path)
}

/// A measuring command's result: the run, its id in the store, the text for stdout
/// (for a table, ending with where the run and its report went; other formats get
/// that on stderr), and the cases whose copy did not match its source.
pub struct Measured {
    pub run: Run,
    pub id: Option<i64>,
    pub text: String,
    pub failed: Vec<String>,
}

impl Measured {
    /// The command's failure when a method's copy did not match its source.
    pub fn failure(&self) -> Option<anyhow::Error> {
        (!self.failed.is_empty()).then(|| {
            anyhow::anyhow!(
                "{} case(s) FAILED verification (the copy differs from its source): {}",
                self.failed.len(),
                self.failed.join(", ")
            )
        })
    }
}

/// Measures `probes`, configured by the caller at `scale`, as command `name`, saves
/// the run (unless --no-save) and renders it; `html_report`: also write its HTML
/// report beside the store (`ioprobe run`).
pub fn measure(
    settings: &Settings,
    name: &str,
    (probes, scale): (Vec<Box<dyn Probe>>, Scale),
    html_report: bool,
) -> Result<Measured> {
    let mut store = settings.store_for_saving()?;
    if let Some(path) = &settings.openmetrics {
        report::check_writable(path)?;
    }
    let run = run_probes(settings, probes, name, scale)?;
    let id = save(store.as_mut(), &run)?;
    let mut where_to = Vec::new();
    // `run`'s advice pools this machine's saved runs, as `advise` does (not --fresh).
    let recs = match (id, &store) {
        (Some(id), Some(store)) if name == "run" && !settings.fresh => {
            let (recs, line) = crate::probes::advice::run_advice(store.path(), &run, id)?;
            where_to.push(line);
            recs
        }
        _ => crate::probes::advice::recommendations(&run, id),
    };
    let mut text = report::render_with(&run, &recs, settings.format, &settings.style)?;
    if let Some(path) = &settings.openmetrics {
        let store_path = store.as_ref().map(|s| s.path());
        report::write_atomically(path, &report::openmetrics::render(&run, &recs), store_path)?;
        where_to.push(format!("OpenMetrics: {}", path.display()));
    }
    if let (Some(id), Some(store)) = (id, &store) {
        where_to.push(format!("saved as run {id} in {}", store.path().display()));
        if html_report {
            let html = write_run_report(store, (id, &run), &recs, &settings.style)?;
            where_to.push(format!("HTML report: {}", html.display()));
        }
    }
    for line in &where_to {
        if settings.format == Format::Table {
            text.push_str(&format!("{line}\n"));
        } else {
            crate::progress::note(line);
        }
    }
    let failed = run
        .measurements
        .iter()
        .filter(|m| m.status == crate::results::Status::Failed)
        .map(|m| m.case.clone())
        .collect();
    Ok(Measured {
        run,
        id,
        text,
        failed,
    })
}
