//! `ioprobe trace --pid PID[,PID…]` and `--cgroup PATH`: a running service's I/O over
//! a window (`--duration`, or until Ctrl-C, SIGTERM or SIGHUP, or its end), priced per
//! second of its run. Every check that can refuse the attach runs before anything is
//! attached; detaching leaves the processes as they were (see `sys::trace::attach`).

use super::profile::Profile;
use super::{Options, Tracing, Via, Work, findings, open_output, report};
use crate::error::Exit;
use crate::settings::Settings;
use crate::sys::trace::attach::{self, End, Target, Way};
use crate::sys::trace::{Tracer, bpf};
use anyhow::Result;
use serde::Serialize;
use std::time::Instant;

/// What an attached trace watched, and for how long (JSON `window`).
#[derive(Debug, Clone, Serialize)]
pub struct Window {
    /// The processes attached to: (pid, program).
    pub pids: Vec<(i32, String)>,
    pub cgroup: Option<String>,
    pub seconds: f64,
    /// "duration", "signal" (SIGINT, SIGTERM or SIGHUP to ioprobe) or "exit" (every
    /// process attached to ended).
    pub ended_by: &'static str,
    /// ptrace: the system calls that stopped (traced or not: a running process
    /// cannot be given a seccomp filter).
    pub stopped_calls: Option<u64>,
}

impl Window {
    /// What was attached to, as the report's first line names it.
    fn shown(&self) -> Vec<String> {
        match &self.cgroup {
            Some(c) => vec![format!("cgroup {c}")],
            None => self
                .pids
                .iter()
                .map(|(p, c)| format!("{c} ({p})"))
                .collect(),
        }
    }
}

/// The tracer attached.
enum Attached {
    Ptrace(Tracer),
    Ebpf(bpf::Tracer),
}

/// Runs an attached trace and reports; Ok(0) (the processes run on).
pub fn run(opts: &Options, settings: &Settings) -> Result<i32> {
    refuse_flags(opts)?;
    let mut out = match &opts.output {
        Some(path) => Some(open_output(path)?),
        None => None,
    };
    let (way, targets, ebpf_unavailable) = choose(opts)?;
    let (figures, measured) = super::saved::now(&opts.figures, settings, &mut None)?;
    let window = attach::Window::start(opts.duration)
        .map_err(|e| anyhow::anyhow!("trace: cannot watch for Ctrl-C: {e}"))?;
    let cgroup = opts
        .cgroup
        .as_ref()
        .map(|c| attach::cgroup_dir(c))
        .transpose();
    let cgroup = cgroup.map_err(|e| Exit::with(1, format!("trace: {e}")))?;
    let cpu_before: Vec<f64> = targets
        .iter()
        .map(|t| attach::user_cpu(t.pid).unwrap_or(0.0))
        .collect();
    let began = Instant::now();
    let mut tracer = start(way, &targets, cgroup.as_deref())?;
    let mut prof = Profile::new(way == Way::Ptrace, way == Way::Ptrace).folding();
    follow(&mut tracer, &mut prof)?;
    let seconds = began.elapsed().as_secs_f64();
    drop(window);
    let ended_by = match attach::ending() {
        Some(End::Duration) => "duration",
        Some(End::Signal(_)) => "signal",
        _ => "exit",
    };
    let user = user_cpu(&targets, &cpu_before);
    let tracing = tracing_of(&tracer, way, ebpf_unavailable);
    super::tracer_notes(&mut prof, &tracing);
    prof.finish();
    let (stopped, traced_stops) = match &tracer {
        Attached::Ptrace(t) => (Some(t.entries()), t.stopped_calls()),
        Attached::Ebpf(_) => (None, 0),
    };
    // The attached processes' user CPU, less what ptrace's stops added, as for a
    // command.
    let work = Work::of(
        &prof,
        &figures,
        settings,
        (user, traced_stops),
        seconds,
        tracing,
    );
    let mut found = findings::findings(&prof, &figures, work.estimate_s);
    super::claims::per_second(&mut found, work.estimate_s, seconds);
    let w = Window {
        pids: targets.iter().map(|t| (t.pid, t.comm.clone())).collect(),
        cgroup: cgroup.map(|c| c.display().to_string()),
        seconds,
        ended_by,
        stopped_calls: stopped,
    };
    let shown = w.shown();
    let report = report::Report {
        cmd: &shown,
        ended: crate::sys::trace::Ended::Code(0),
        work: &work,
        p: &prof,
        f: &figures,
        measured,
        found: &found,
        window: Some(&w),
    };
    super::write_report(&report, opts, settings, out.as_mut())?;
    Ok(0)
}

/// The flags that cannot attach: the preload tracer, ptrace on a cgroup.
fn refuse_flags(opts: &Options) -> Result<()> {
    if opts.tracer == Via::Preload {
        return crate::error::usage(
            "trace: the preload tracer cannot attach to a running process (its library is loaded when a program starts): use --tracer ebpf or ptrace",
        );
    }
    if opts.cgroup.is_some() && opts.tracer == Via::Ptrace {
        return crate::error::usage(
            "trace: --cgroup needs the eBPF tracer (it filters on the cgroup in the kernel): use --tracer ebpf or auto",
        );
    }
    Ok(())
}

/// The user CPU the processes attached to took since `before` (those still there).
fn user_cpu(targets: &[Target], before: &[f64]) -> f64 {
    targets
        .iter()
        .zip(before)
        .filter_map(|(t, b)| attach::user_cpu(t.pid).map(|a| (a - b).max(0.0)))
        .sum()
}

/// The tracer that ran, as the report names it.
fn tracing_of(tracer: &Attached, way: Way, ebpf_unavailable: Option<String>) -> Tracing {
    Tracing {
        path: if way == Way::Ebpf { "ebpf" } else { "ptrace" },
        ebpf_unavailable,
        preload_unavailable: Some("it cannot attach to a running process".into()),
        picked: None,
        lost: match tracer {
            Attached::Ptrace(t) => t.lost(),
            Attached::Ebpf(t) => t.lost(),
        },
        unstopped_calls: 0,
        plain_starts: 0,
    }
}

/// Attaches `way` to `targets` (eBPF: or to the processes of `cgroup`).
fn start(way: Way, targets: &[Target], cgroup: Option<&std::path::Path>) -> Result<Attached> {
    Ok(match way {
        Way::Ebpf => {
            let pids: Vec<i32> = targets.iter().map(|t| t.pid).collect();
            let scope = match cgroup {
                Some(dir) => bpf::Scope::Cgroup(dir),
                None => bpf::Scope::Pids(&pids),
            };
            let loaded = bpf::Loaded::load(scope).map_err(|e| {
                Exit::with(
                    1,
                    format!(
                        "trace: the eBPF tracer cannot run here: {} (it needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF); nothing was attached",
                        crate::error::plain(&e)
                    ),
                )
            })?;
            Attached::Ebpf(loaded.attach(targets, cgroup.is_some())?)
        }
        Way::Ptrace => Attached::Ptrace(Tracer::attach(targets).map_err(|e| {
            Exit::with(
                1,
                format!(
                    "trace: cannot attach: {}; nothing is left attached",
                    crate::error::plain(&e)
                ),
            )
        })?),
    })
}

/// Takes every event into `prof` until the window ends (the tracer has detached).
fn follow(tracer: &mut Attached, prof: &mut Profile) -> Result<()> {
    loop {
        let ev = match tracer {
            Attached::Ptrace(t) => t.next_event()?,
            Attached::Ebpf(t) => t.next_event()?,
        };
        let Some(ev) = ev else { return Ok(()) };
        prof.add(&ev);
    }
}

/// The tracer that attaches, the processes checked for it, and why eBPF was not used
/// when `auto` fell back to ptrace. Err: one line, before anything is attached.
fn choose(opts: &Options) -> Result<(Way, Vec<Target>, Option<String>)> {
    let refuse = |why: String| -> anyhow::Error { Exit::with(1, format!("trace: {why}")).into() };
    if let Some(c) = &opts.cgroup {
        let dir = attach::cgroup_dir(c).map_err(refuse)?;
        let pids = attach::cgroup_processes(&dir);
        let targets = pids
            .into_iter()
            .filter_map(|p| attach::check(p, Way::Ebpf).ok())
            .collect();
        return Ok((Way::Ebpf, targets, None));
    }
    let check_all = |way| -> Result<Vec<Target>, String> {
        let mut v: Vec<Target> = Vec::new();
        for &p in &opts.pids {
            let t = attach::check(p, way)?;
            if !v.iter().any(|x| x.pid == t.pid) {
                v.push(t);
            }
        }
        Ok(v)
    };
    let mut why_not_ebpf = None;
    if opts.tracer != Via::Ptrace {
        let usable = bpf::Loaded::load(bpf::Scope::Pids(&[]))
            .map(drop)
            .map_err(|e| crate::error::plain(&e));
        match usable.and_then(|()| check_all(Way::Ebpf)) {
            Ok(t) => return Ok((Way::Ebpf, t, None)),
            Err(why) if opts.tracer == Via::Ebpf => {
                return Err(refuse(format!(
                    "the eBPF tracer cannot attach: {why}; nothing was attached"
                )));
            }
            Err(why) => why_not_ebpf = Some(why),
        }
    }
    let targets = check_all(Way::Ptrace).map_err(refuse)?;
    Ok((Way::Ptrace, targets, why_not_ebpf))
}
