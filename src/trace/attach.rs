//! What attaching adds to a trace (`ioprobe trace --pid PID[,PID…]`, `--cgroup PATH`):
//! which processes, which tracer may attach to them, and when the window ends
//! (`--duration`, or Ctrl-C, SIGTERM or SIGHUP, or their end). Every check that can
//! refuse the attach runs before anything is attached; the eBPF programs are loaded
//! once, and watch nothing until the processes are put in their map; detaching leaves
//! the processes as they were (see `sys::trace::attach`).

use super::options::Options;
use super::profile::Profile;
use super::running::{Running, Started, Tracing, UserCpu};
use super::subject::{EndedBy, Subject, Window};
use crate::error::Exit;
use crate::settings::Settings;
use crate::sys::trace::attach::{self, Target, WindowEnd};
use crate::sys::trace::{Ptrace, Tracer, bpf};
use anyhow::Result;
use std::path::PathBuf;
use std::time::Instant;

/// An attach under way: what it watches, and its window's clock.
pub(super) struct Attaching {
    targets: Vec<Target>,
    cgroup: Option<PathBuf>,
    clock: attach::Clock,
}

/// The flags that cannot attach: the preload tracer, ptrace on a cgroup.
pub(super) fn refuse_flags(opts: &Options) -> Result<()> {
    if opts.tracer == Some(Tracer::Preload) {
        return crate::error::usage(
            "trace: the preload tracer cannot attach to a running process (its library is loaded when a program starts): use --tracer ebpf or ptrace",
        );
    }
    if opts.cgroup.is_some() && opts.tracer == Some(Tracer::Ptrace) {
        return crate::error::usage(
            "trace: --cgroup needs the eBPF tracer (it filters on the cgroup in the kernel): use --tracer ebpf or auto",
        );
    }
    Ok(())
}

/// Attaches to the processes (or cgroup) `opts` names, its figures read first.
pub(super) fn start(opts: &Options, settings: &Settings) -> Result<(Started, Attaching)> {
    let mut chosen = choose(opts)?;
    let mut pending = super::saved::Pending::start(&opts.figures, settings)?;
    if !pending.ready() {
        // None saved are enough: measured first, without the eBPF programs (their
        // program on every system call would weigh on the figures), loaded again after.
        let had = chosen.loaded.take().is_some();
        pending.measure_if_short(settings)?;
        if had {
            chosen.loaded = Some(load(&chosen.targets, chosen.cgroup.as_deref())?);
        }
    }
    let (figures, measured) = pending.take();
    let clock = attach::Clock::start(opts.duration)
        .map_err(|e| anyhow::anyhow!("trace: cannot watch for Ctrl-C: {e}"))?;
    let Chosen {
        targets,
        cgroup,
        loaded,
        tracing,
    } = chosen;
    let user = UserCpu::processes(targets.iter().map(|t| t.pid));
    let began = Instant::now();
    let running = match loaded {
        Some(l) => Running::Ebpf(l.attach(&targets, cgroup.as_deref())?),
        None => Running::Ptrace(Ptrace::attach(&targets).map_err(|e| {
            Exit::with(
                1,
                format!(
                    "trace: cannot attach: {}; nothing is left attached",
                    crate::error::plain(&e)
                ),
            )
        })?),
    };
    let stops = tracing.path == Tracer::Ptrace;
    let started = Started {
        running,
        tracing,
        prof: Profile::new(stops, stops).folding(),
        figures,
        measured,
        user,
        began,
    };
    Ok((
        started,
        Attaching {
            targets,
            cgroup,
            clock,
        },
    ))
}

impl Attaching {
    /// The window that ended after `seconds`, `running` having detached.
    pub(super) fn end(self, running: &Running, seconds: f64) -> Subject {
        drop(self.clock);
        let ended_by = match attach::ending() {
            Some(WindowEnd::Duration) => EndedBy::Duration,
            Some(WindowEnd::Signal(_)) => EndedBy::Signal,
            _ => EndedBy::Exit,
        };
        Subject::Attached(Window {
            pids: self
                .targets
                .iter()
                .map(|t| (t.pid, t.comm.clone()))
                .collect(),
            cgroup: self.cgroup.map(|c| c.display().to_string()),
            seconds,
            ended_by,
            stopped_calls: match running {
                Running::Ptrace(t) => Some(t.entries()),
                Running::Ebpf(_) => None,
            },
        })
    }
}

/// The eBPF programs for an attach to `targets`, or to the processes of `cgroup`:
/// loaded and watching nothing until [`bpf::Loaded::attach`].
fn load(targets: &[Target], cgroup: Option<&std::path::Path>) -> Result<bpf::Loaded> {
    let pids: Vec<i32> = targets.iter().map(|t| t.pid).collect();
    let scope = match cgroup {
        Some(dir) => bpf::Scope::Cgroup(dir),
        None => bpf::Scope::Pids(&pids),
    };
    bpf::Loaded::load(scope).map_err(|e| {
        Exit::with(
            1,
            format!(
                "trace: the eBPF tracer cannot run here: {} (it needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF); nothing was attached",
                crate::error::plain(&e)
            ),
        )
        .into()
    })
}

/// The tracer chosen to attach, the processes checked for it, and (eBPF) its programs
/// loaded, watching nothing yet.
struct Chosen {
    targets: Vec<Target>,
    cgroup: Option<PathBuf>,
    loaded: Option<bpf::Loaded>,
    tracing: Tracing,
}

/// The tracer that attaches, the processes checked for it, and why eBPF was not used
/// when `auto` fell back to ptrace. Err: one line, before anything is attached.
fn choose(opts: &Options) -> Result<Chosen> {
    let refuse = |why: String| -> anyhow::Error { Exit::with(1, format!("trace: {why}")).into() };
    let mut tracing = Tracing::of(Tracer::Ebpf);
    tracing.preload_unavailable = Some("it cannot attach to a running process".into());
    if let Some(c) = &opts.cgroup {
        let dir = attach::cgroup_dir(c).map_err(refuse)?;
        let targets: Vec<Target> = attach::cgroup_processes(&dir)
            .into_iter()
            .filter_map(|p| attach::check(p, Tracer::Ebpf).ok())
            .collect();
        let loaded = load(&targets, Some(&dir))?;
        return Ok(Chosen {
            targets,
            cgroup: Some(dir),
            loaded: Some(loaded),
            tracing,
        });
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
    if opts.tracer != Some(Tracer::Ptrace) {
        let ebpf = check_all(Tracer::Ebpf).and_then(|t| {
            let pids: Vec<i32> = t.iter().map(|t| t.pid).collect();
            let loaded =
                bpf::Loaded::load(bpf::Scope::Pids(&pids)).map_err(|e| crate::error::plain(&e))?;
            Ok((t, loaded))
        });
        match ebpf {
            Ok((targets, loaded)) => {
                return Ok(Chosen {
                    targets,
                    cgroup: None,
                    loaded: Some(loaded),
                    tracing,
                });
            }
            Err(why) if opts.tracer == Some(Tracer::Ebpf) => {
                return Err(refuse(format!(
                    "the eBPF tracer cannot attach: {why}; nothing was attached"
                )));
            }
            Err(why) => tracing.ebpf_unavailable = Some(why),
        }
    }
    tracing.path = Tracer::Ptrace;
    let targets = check_all(Tracer::Ptrace).map_err(refuse)?;
    Ok(Chosen {
        targets,
        cgroup: None,
        loaded: None,
        tracing,
    })
}
