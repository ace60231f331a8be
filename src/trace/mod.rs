//! `ioprobe trace -- CMD`: runs CMD traced (see `sys::trace`), profiles its I/O
//! system calls ([`profile`]), prices them with this machine's saved figures and says
//! what to change ([`price`]). CMD keeps its stdin, stdout and stderr; the report goes
//! to stderr or `--output`; ioprobe exits with CMD's status. `trace --pid`/`--cgroup`
//! watches running processes over a window instead ([`attach`]): the same flow, from
//! another start.
//!
//! The flow ([`run`]): the checks before anything runs (`checks`), the start (a
//! command: `command`; processes: `attach`), both giving the tracer [`running`]; its
//! events into the profile; the work (`work`); the findings; the report of its
//! [`subject`] (`report`).

mod attach;
mod checks;
mod command;
pub mod figures;
pub mod findings;
mod options;
pub mod overhead;
mod pick;
pub mod price;
pub mod profile;
mod report;
mod running;
mod saved;
pub mod subject;
mod work;

pub use options::Options;
pub use pick::start_clock;
pub use running::Tracing;
pub use work::Work;

use crate::error::Exit;
use crate::present::Style;
use crate::settings::Settings;
use crate::sys::trace::Ended;
use anyhow::Result;
use report::Report;
use subject::Subject;

/// Runs the command traced, or attaches to the processes, and reports. Ok(status) is
/// the command's exit status (attached: 0, the processes run on), and a command that
/// signal N ended is `Exit::signalled(N)`: ioprobe ends by N too.
pub fn run(opts: &Options, settings: &Settings) -> Result<i32> {
    if opts.attaches() {
        attach::refuse_flags(opts)?;
    } else {
        usage(opts)?;
    }
    // Everything that could fail after the command is checked before it runs: the
    // standard descriptors it was given, the report's destination, the program (a
    // 32-bit one is refused), and the figures (measured first when none are saved).
    let closed = if opts.attaches() {
        Vec::new()
    } else {
        crate::sys::trace::stdio_closed_at_start()
    };
    let mut out = opts
        .output
        .as_deref()
        .map(checks::open_output)
        .transpose()?;
    let (started, attaching) = if opts.attaches() {
        let (s, a) = attach::start(opts, settings)?;
        (s, Some(a))
    } else {
        (command::start(opts, settings, &closed)?, None)
    };
    let Traced {
        subject,
        prof,
        work,
        figures,
        measured,
        detaching,
    } = follow(started, attaching, opts, settings)?;
    let budget = findings::Budget {
        work_s: work.estimate_s,
        user_cpu_s: work.user_cpu_s.max(work.own_work_s),
        own: own_known(&prof, &work),
    };
    let mut found = findings::findings(&prof, &figures, budget);
    if let Some(w) = subject.window() {
        findings::per_second(&mut found, work.estimate_s, w.seconds);
    }
    let report = Report {
        subject: &subject,
        work: &work,
        p: &prof,
        f: &figures,
        measured,
        found: &found,
    };
    let written = write_report(&report, opts, settings, out.as_mut());
    if let Some(d) = detaching {
        drop(d.join());
    }
    written?;
    match subject {
        Subject::Attached(_) => Ok(0),
        Subject::Command { ended, .. } => {
            keep(opts, settings, &work, prof.counts.values().sum(), measured);
            match ended {
                Ended::Code(c) => Ok(c),
                // ioprobe ends by the same signal once it has cleaned up (main).
                Ended::Signal(s) => Err(Exit::signalled(s)),
            }
        }
    }
}

/// A trace followed to its end: what it watched, its profile and work, the figures
/// that priced them, and the eBPF programs detaching.
struct Traced {
    subject: Subject,
    prof: profile::Profile,
    work: Work,
    figures: figures::Figures,
    measured: Option<i64>,
    detaching: running::Detaching,
}

/// Takes every event of the trace `started` into its profile until the command ends
/// (or the window `attaching`), then its work: the processes' user CPU, less what
/// ptrace's stops added to it ([`overhead`]), and its calls priced.
fn follow(
    started: running::Started,
    attaching: Option<attach::Attaching>,
    opts: &Options,
    settings: &Settings,
) -> Result<Traced> {
    let running::Started {
        mut running,
        mut tracing,
        mut prof,
        figures,
        measured,
        user,
        began,
    } = started;
    running.follow(&mut prof)?;
    let seconds = began.elapsed().as_secs_f64();
    let subject = match attaching {
        Some(a) => a.end(&running, seconds),
        None => Subject::Command {
            argv: opts
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            ended: running.ended().unwrap_or(Ended::Code(1)),
        },
    };
    running.count_into(&mut tracing);
    tracing.notes(&mut prof);
    prof.finish();
    let figures = on_its_cpus(&mut prof, figures);
    let stopped = running.stopped_calls();
    let user = user.since();
    let mut detaching = running.detach();
    let cost = tracer_cost(&prof, settings, &mut detaching);
    let work = Work::of(
        &prof,
        &figures,
        settings,
        (user, stopped),
        seconds,
        (tracing, cost),
    );
    Ok(Traced {
        subject,
        prof,
        work,
        figures,
        measured,
        detaching,
    })
}

/// The figures for the processes' CPUs: all confined to one, pipes priced on the pipe
/// probe's curve of both ends on one CPU (said in a note).
fn on_its_cpus(prof: &mut profile::Profile, figures: figures::Figures) -> figures::Figures {
    if !prof.one_cpu() || figures.pipe_one_cpu.is_none() {
        return figures;
    }
    let uses_pipes = prof.targets.iter().any(|t| t.kind == profile::Kind::Pipe);
    if uses_pipes {
        prof.notes.insert(
            "its processes could run on one CPU only: its pipes are priced on the pipe probe's curve of both ends on one CPU, which take turns".into(),
        );
    }
    figures.on_one_cpu()
}

/// How the run's own work per call is known: timed pairs (eBPF, with tracing's part
/// measured), or its user CPU split over its traced calls (ptrace and preload, which
/// do not time calls).
fn own_known(prof: &profile::Profile, work: &Work) -> findings::Own {
    let calls: u64 = prof.ops.values().map(|s| s.calls).sum();
    match work.tracer_cost {
        Some(c) => findings::Own::Timed {
            tracer_s: c.per_call_s,
        },
        None if work.tracer.path != crate::sys::trace::Tracer::Ebpf && calls > 0 => {
            findings::Own::Split {
                per_call_s: work.user_cpu_s / calls as f64,
            }
        }
        None => findings::Own::Unknown,
    }
}

/// The tracer's cost per timed call (eBPF), where enough calls were timed for the
/// program's own work to matter: pooled, or calibrated once the trace's programs are
/// gone (`detaching` joined first).
fn tracer_cost(
    prof: &profile::Profile,
    settings: &Settings,
    detaching: &mut running::Detaching,
) -> Option<overhead::TracerCost> {
    let timed: u64 = prof.ops.values().map(|s| s.gaps.len()).sum();
    let calls = prof.ops.values().map(|s| s.calls).sum();
    if timed < findings::MIN_TIMED || calls < overhead::MIN_CALLS {
        return None;
    }
    let mut store = settings.store_for_saving().ok().flatten();
    let host = crate::sys::machine::hostname();
    overhead::tracer_cost(calls, store.as_mut(), &host, || {
        if let Some(d) = detaching.take() {
            drop(d.join());
        }
    })
}

/// Keeps a command's trace (its calls, and its time under the tracer that ran) for
/// `auto`'s choice ([`pick`]), beside the store.
fn keep(opts: &Options, settings: &Settings, work: &Work, calls: u64, measured: Option<i64>) {
    if settings.no_save {
        return;
    }
    if let Ok(store) = settings.store_path() {
        let usual = opts.tracer.is_none() && work.tracer.picked.is_none();
        pick::keep(
            &store,
            &opts.command,
            work.tracer.path,
            usual,
            calls,
            measured.is_none(),
        );
    }
}

/// A command's trace given flags only an attached one takes, or no command.
fn usage(opts: &Options) -> Result<()> {
    if opts.duration.is_some() {
        return crate::error::usage(
            "trace: --duration is for --pid or --cgroup (a command is traced to its end)",
        );
    }
    if opts.command.is_empty() {
        return crate::error::usage(
            "trace: give the command after --, e.g. ioprobe trace -- dd if=FILE of=/dev/null",
        );
    }
    Ok(())
}

/// Writes the report, as text or JSON, to `--output` (opened as `out` before the
/// trace) or stderr.
fn write_report(
    report: &Report,
    opts: &Options,
    settings: &Settings,
    out: Option<&mut std::fs::File>,
) -> Result<()> {
    // Colour follows the report's destination: never into a file, and into stderr
    // only when it is a terminal.
    let style = Style {
        color: settings.style.color
            && out.is_none()
            && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..settings.style
    };
    let text = if opts.json {
        report.json()?
    } else {
        report.text(&style)
    };
    match (out, &opts.output) {
        (Some(f), Some(path)) => std::io::Write::write_all(f, text.as_bytes())
            .and_then(|()| f.sync_data().or(Ok(())))
            .map_err(|e| {
                anyhow::anyhow!("writing {}: {}", path.display(), crate::error::plain(&e))
            })?,
        _ => eprint!("{text}"),
    }
    Ok(())
}
