//! Every measuring command runs through here: the store it saves to (opened before
//! measuring, so a broken one fails fast), then the probes end to end (signal handling,
//! pinning, scratch directory, machine facts, validation, harness overhead, every
//! probe's cases in order), then saving and rendering. Saved runs are found here too.

use crate::error::UsageError;
use crate::harness::measure_overhead;
use crate::interrupt;
use crate::present::Style;
use crate::probes::{Context, Probe};
use crate::progress::Progress;
use crate::report::{self, Format};
use crate::results::store::Store;
use crate::results::{HarnessInfo, Run, SCHEMA_VERSION, Tool, Unit, time::now_rfc3339};
use crate::settings::{Scale, Settings};

mod decide;
use crate::sys::affinity;
use crate::sys::load::Load;
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use anyhow::{Context as _, Result};
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

/// Throughput assumed for a whole-pass case nothing saved has measured: a guess, said so
/// (copies with eviction and fsync run at about this here; warm ones faster).
const GUESSED_RATE: f64 = 1e9;

/// Each case's figures in the newest saved run on this host that has it, by case name:
/// its median (bytes/s) and how many samples it took; and the newest such run.
type Prior = (std::collections::HashMap<String, (f64, usize)>, Option<i64>);

/// The [`Prior`] figures; empty when nothing is saved.
fn prior_rates(settings: &Settings, host: &str) -> Prior {
    let mut rates = std::collections::HashMap::new();
    let store = settings.store_path().ok().and_then(|p| {
        crate::results::store::Store::open_read_only_if_any(&p)
            .ok()
            .flatten()
    });
    let Some(store) = store else {
        return (rates, None);
    };
    let mut newest = None;
    let evidence = crate::results::store::Evidence::of(host, &[], 20);
    for r in store.newest_with(&evidence).unwrap_or_default() {
        let Ok(run) = store.load(r.id) else { continue };
        for m in run
            .measurements
            .iter()
            .filter(|m| m.is_ok() && m.unit == Unit::BytesPerSec)
        {
            if !rates.contains_key(&m.case) {
                rates.insert(m.case.clone(), (m.median, m.samples));
                newest.get_or_insert(r.id);
            }
        }
    }
    (rates, newest)
}

/// How long `probes` should take, in seconds, and where the figures came from: each
/// whole-pass case runs a warm-up and as many samples as it took last time (at least
/// the minimum) at its saved throughput, or the minimum at a guessed one; each
/// calibrated case its warm-up and half its budget.
fn estimate(
    probes: &[Box<dyn Probe>],
    h: &crate::harness::Config,
    (rates, run): &Prior,
) -> (f64, String) {
    let min = h.round_min();
    let mut guessed = false;
    let mut total = 0.0;
    for p in probes {
        total += p.setup_seconds().iter().sum::<f64>();
        for (name, bytes) in p.case_names().iter().zip(p.pass_bytes()) {
            total += match bytes {
                Some((lo, hi)) => {
                    let saved = rates.get(name).copied();
                    guessed |= saved.is_none();
                    let samples = saved.map_or(min, |s| s.1);
                    let pass = pass_seconds(h, (lo, hi), saved.map(|s| s.0));
                    (1 + samples.max(min)) as f64 * pass
                }
                None => (h.warmup + h.budget / 2).as_secs_f64(),
            };
        }
    }
    let from = match (run, guessed) {
        (Some(id), false) => format!("from run {id}'s figures"),
        (Some(id), true) => format!("from run {id}'s figures, the rest guessed at 1 GB/s"),
        (None, _) => "a guess: nothing measured here is saved yet".into(),
    };
    (total, from)
}

/// Each case's minimum cost in seconds, keyed as the time limit keys them: a whole-pass
/// case's warm-up and minimum rounds of passes, each pass as long as at its saved
/// throughput in `rates` (see [`pass_seconds`]), plus its set-up; a calibrated case
/// its warm-up and minimum samples. The time limit shares itself out in proportion
/// (given no rates), and their sum is the least a run of `probes` can take.
fn min_costs(
    probes: &[Box<dyn Probe>],
    h: &crate::harness::Config,
    rates: &std::collections::HashMap<String, (f64, usize)>,
) -> Vec<(String, f64)> {
    probes
        .iter()
        .flat_map(|p| case_costs(p.as_ref(), h, rates))
        .collect()
}

/// [`min_costs`] of one probe's cases.
fn case_costs(
    p: &dyn Probe,
    h: &crate::harness::Config,
    rates: &std::collections::HashMap<String, (f64, usize)>,
) -> Vec<(String, f64)> {
    let min = h.round_min();
    let name = p.kind().name();
    let setup = p.setup_seconds();
    let mut out = Vec::new();
    for (i, (case, bytes)) in p.case_names().iter().zip(p.pass_bytes()).enumerate() {
        let cost = setup.get(i).copied().unwrap_or(0.0)
            + match bytes {
                Some(b) => (1 + min) as f64 * pass_seconds(h, b, rates.get(case).map(|r| r.0)),
                None => (h.warmup + h.sample_time * h.min_samples as u32).as_secs_f64(),
            };
        out.push((crate::harness::TimeLimit::key(name, case), cost));
    }
    out
}

/// How long one pass of a whole-pass case (`lo`..`hi` bytes) lasts: the pass time
/// within its bytes at its saved throughput, or with none saved, at a guessed 1 GB/s.
/// A fixed pass (`lo` = `hi`) takes its bytes' time whatever the pass time: the first
/// trace's 16 MiB socket and pipe passes took 1.5–30 ms here (8 ms on average), and
/// counting each as the 25 ms pass time made it say "about 10 s" for 6.8 s.
fn pass_seconds(h: &crate::harness::Config, (lo, hi): (u64, u64), rate: Option<f64>) -> f64 {
    let rate = rate.unwrap_or(GUESSED_RATE);
    h.pass_time
        .as_secs_f64()
        .clamp(lo as f64 / rate, hi.max(lo) as f64 / rate)
}

/// The least `probes` can take, whatever their limit, in seconds: their
/// [`min_costs`] at the saved rates.
fn least_seconds(
    probes: &[Box<dyn Probe>],
    h: &crate::harness::Config,
    rates: &std::collections::HashMap<String, (f64, usize)>,
) -> f64 {
    min_costs(probes, h, rates).iter().map(|c| c.1).sum()
}

/// `run --precise --quick`'s share of its probes' time limits (rows sampled to ±1%):
/// the same selection in a little under half the time, so that with the rows past the
/// sweeps' edges, which sample after the limit is spent, it ends within 30 s.
const QUICK_RUN_SHARE: f64 = 0.48;
/// `run`'s and `run --quick`'s shares of the probes' time limits (58 s): 29 s and
/// 14.5 s, a first pass over every row and then the rows of the answers still
/// undecided (see `decide`).
const DECIDING_SHARE: f64 = 0.5;
const DECIDING_QUICK_SHARE: f64 = 0.25;

/// The command's time limit and how to name it: `--time-limit`, else the sum of its
/// probes' own limits, which their options took at the caller's `scale` (none with
/// `--thorough` or `--budget`, or when a probe has none).
fn time_limit(
    settings: &Settings,
    (probes, scale): (&[Box<dyn Probe>], Scale),
    command: &str,
) -> (Option<std::time::Duration>, String) {
    if let Some(t) = settings.time_limit {
        let shown = crate::units::format_minutes(t.as_secs_f64());
        return (
            Some(t),
            match settings.time_limit_by {
                Some(by) => format!("a time limit of {shown} ({by})"),
                None => format!("--time-limit {shown}"),
            },
        );
    }
    if settings.scale == Scale::Thorough || settings.budget_given {
        return (None, String::new());
    }
    let sum: Option<std::time::Duration> = probes.iter().map(|p| p.time_limit()).sum();
    // `run` samples until each answer is decided, within half its probes' limits
    // (which `--precise` gives whole: every row to ±1%); `run --quick` within a quarter.
    let quick_run = scale == Scale::Run && settings.mode == "quick";
    let share = match (scale == Scale::Run, settings.precise, quick_run) {
        (false, ..) => 1.0,
        (true, true, false) => 1.0,
        (true, true, true) => QUICK_RUN_SHARE,
        (true, false, false) => DECIDING_SHARE,
        (true, false, true) => DECIDING_QUICK_SHARE,
    };
    let sum = sum.map(|t| t.mul_f64(share));
    let label = sum.map_or(String::new(), |t| {
        format!(
            "the time limit of `{command}`{} ({}; --time-limit changes it)",
            if scale == Scale::Quick || quick_run {
                " --quick"
            } else {
                ""
            },
            crate::units::format_minutes(t.as_secs_f64())
        )
    });
    (sum, label)
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
    // `run` samples until each answer is decided, within its time limit (none under
    // --thorough or --budget: every row then samples to its own end, as --precise).
    let deciding = scale == Scale::Run && !settings.precise && time_limit.is_some();
    let harness = if deciding {
        first_pass(&settings.harness, settings.mode == "quick")
    } else {
        settings.harness.clone()
    };
    say_how_long(
        (settings, &harness),
        (probes, scale, time_limit),
        command,
        &env,
        total,
    );
    let progress = Progress::new(total as u64);
    if let Some(fs) = &env.filesystem {
        progress.note(&format!(
            "measuring in {} ({} on {})",
            fs.path, fs.fs_type, fs.source
        ));
    }
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
const FIRST_PASS_SHARE: f64 = 0.55;

/// `run`'s first pass samples each row a little: 3 passes of a whole-pass row and 3
/// samples of a calibrated one at least (6 and 5 otherwise), since the rows of an
/// undecided answer are sampled again and a decided one needs no more; `run --quick`'s
/// 2 of each, after a warm-up of 20 ms at most.
fn first_pass(h: &crate::harness::Config, quick: bool) -> crate::harness::Config {
    let least = if quick { 2 } else { 3 };
    crate::harness::Config {
        min_samples: h.min_samples.min(least),
        min_round_samples: least,
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

/// Before a run expected to last over 20 s: how many rows and about how long.
/// Under a time limit the rows sample until their interval is narrow or their share
/// of it is spent, and on this machine most spend it (a fresh `run` said "about 33 s"
/// from its rows' minimum samples and took 59 s, its limit 58 s; now it says 58 s and
/// takes 58.6–59.4 s, `run --quick` 28 s and 29.2 s): the limit is the estimate, unless the
/// rows' minimum samples alone take longer.
fn say_how_long(
    (settings, h): (&Settings, &crate::harness::Config),
    (probes, scale, limit): (&[Box<dyn Probe>], Scale, Option<std::time::Duration>),
    command: &str,
    env: &Environment,
    total: usize,
) {
    let (seconds, mut from) = expected((settings, h), probes, limit, &env.hostname);
    if scale == Scale::Run && !settings.precise && limit.is_some() {
        from = "its time limit, at most: every row once, then the rows of the answers still undecided, until each is decided".into();
    }
    if seconds > 20.0 {
        crate::progress::note(&format!(
            "{command}: {total} rows, about {} ({from}){}",
            crate::units::format_minutes(seconds),
            if scale == Scale::Quick || scale == Scale::Run {
                ""
            } else {
                "; --quick for a smaller set"
            }
        ));
    }
}

/// How long `probes` should take under `limit`, and where that comes from (see
/// [`say_how_long`]).
fn expected(
    (settings, h): (&Settings, &crate::harness::Config),
    probes: &[Box<dyn Probe>],
    limit: Option<std::time::Duration>,
    host: &str,
) -> (f64, String) {
    let prior = prior_rates(settings, host);
    let (mut seconds, mut from) = estimate(probes, h, &prior);
    if let Some(l) = limit {
        let least = least_seconds(probes, h, &prior.0);
        seconds = l.as_secs_f64().max(least);
        from = "its time limit: rows sample until their interval is narrow or their share is spent"
            .into();
    }
    (seconds, from)
}

/// The least measuring `probes` can take here, in seconds (each row its warm-up and
/// minimum samples; see [`least_seconds`]): as a time limit, the shortest run of them.
pub fn least_seconds_of(settings: &Settings, probes: &[Box<dyn Probe>]) -> f64 {
    let host = crate::sys::machine::hostname();
    least_seconds(probes, &settings.harness, &prior_rates(settings, &host).0)
}

/// How long measuring `probes` at `scale` should take here, in seconds, as a run of
/// them says before it starts (trace's first figures say it too).
pub fn expected_seconds(
    settings: &Settings,
    probes: &[Box<dyn Probe>],
    scale: Scale,
    command: &str,
) -> f64 {
    let (limit, _) = time_limit(settings, (probes, scale), command);
    expected(
        (settings, &settings.harness),
        probes,
        limit,
        &crate::sys::machine::hostname(),
    )
    .0
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::{Scale, pipe};
    use std::collections::HashMap;

    #[test]
    fn the_estimate_uses_saved_throughput_and_says_when_it_guesses() {
        let h = crate::harness::Config::quick();
        let opts = pipe::Options {
            chunk_sizes: vec![4096, 65536],
            fit: false,
            ..pipe::Options::for_scale(Scale::Default)
        };
        let total = opts.total as f64;
        let probes: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(opts))];
        let rows = probes[0].case_count();
        let passes = (1 + h.round_min()) as f64;
        let (guess, from) = estimate(&probes, &h, &(HashMap::new(), None));
        assert!((guess - rows as f64 * passes * total / GUESSED_RATE).abs() < 1e-6);
        assert!(from.starts_with("a guess"), "{from}");
        let names = probes[0].case_names();
        // Twice the guessed throughput, and fewer samples than the minimum last time.
        let rates: HashMap<String, (f64, usize)> =
            names.iter().map(|n| (n.clone(), (2e9, 2))).collect();
        let (saved, from) = estimate(&probes, &h, &(rates, Some(7)));
        assert!((saved - guess / 2.0).abs() < 1e-6, "{saved} vs {guess}");
        assert_eq!(from, "from run 7's figures");
        // Fitted passes last the pass time, at any throughput that keeps them between
        // their fewest and most bytes.
        let fitted: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(pipe::Options {
            chunk_sizes: vec![4096, 65536],
            ..pipe::Options::for_scale(Scale::Default)
        }))];
        let (fit, _) = estimate(&fitted, &h, &(HashMap::new(), None));
        let want = rows as f64 * passes * h.pass_time.as_secs_f64();
        assert!((fit - want).abs() < 1e-6, "{fit} vs {want}");
        assert_eq!(crate::units::format_minutes(40.0), "40 s");
        assert_eq!(crate::units::format_minutes(185.0), "3 min");
        assert_eq!(crate::units::format_minutes(3900.0), "1 h 5 min");
    }

    #[test]
    fn a_fixed_pass_shorter_than_the_pass_time_counts_its_bytes_time() {
        let h = crate::harness::Config::quick();
        let total = 16u64 << 20;
        assert!(total as f64 / GUESSED_RATE < h.pass_time.as_secs_f64());
        let probes: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(pipe::Options {
            chunk_sizes: vec![4096, 65536],
            total,
            fit: false,
            ..pipe::Options::for_scale(Scale::Quick)
        }))];
        let passes = (1 + h.round_min()) as f64;
        let rows = probes[0].case_count() as f64;
        let least = least_seconds(&probes, &h, &HashMap::new());
        let want = rows * passes * total as f64 / GUESSED_RATE;
        assert!((least - want).abs() < 1e-9, "{least} vs {want}");
        // The time limit's shares are the same costs, case by case.
        let costs = min_costs(&probes, &h, &HashMap::new());
        assert_eq!(costs.len(), rows as usize);
        assert!((costs.iter().map(|c| c.1).sum::<f64>() - least).abs() < 1e-9);
        // A saved rate four times the guess: a quarter of the time.
        let rates = probes[0]
            .case_names()
            .into_iter()
            .map(|n| (n, (4.0 * GUESSED_RATE, 6)))
            .collect();
        let fast = least_seconds(&probes, &h, &rates);
        assert!((fast - want / 4.0).abs() < 1e-9, "{fast}");
    }
}
