//! A command's start: the tracer `--tracer` names, or `auto`'s (eBPF where the kernel
//! allows it, else preload where the program is dynamically linked, else ptrace; or
//! ptrace where it ran faster for this command here: [`super::pick`]). The command
//! waits at its exec while the saved figures are read; when none are enough it is
//! stopped there, they are measured, and it starts again.

use super::checks::{preflight_program, spawn_error};
use super::options::Options;
use super::pick;
use super::running::{Running, Started, Tracing, UserCpu};
use super::saved;
use crate::error::Exit;
use crate::settings::Settings;
use crate::sys::trace::{Ptrace, Tracer, bpf, preload};
use anyhow::Result;
use std::ffi::OsString;
use std::time::Instant;

/// The eBPF programs being loaded on another thread while the figures are read (the
/// two take about as long; a short command no longer waits for both in turn).
type Loading = std::thread::JoinHandle<std::io::Result<bpf::Loaded>>;

/// Starts the command traced (the figures read, or measured first when none saved are
/// enough), with `closed` the standard descriptors it was given closed.
pub(super) fn start(opts: &Options, settings: &Settings, closed: &[i32]) -> Result<Started> {
    preflight_program(&opts.command[0])?;
    let store = settings.store_path().ok();
    let picked = pick::choose(opts.tracer, &opts.command, store.as_deref());
    let loading = loading(if picked.is_some() {
        Some(Tracer::Ptrace)
    } else {
        opts.tracer
    });
    // The saved figures are read while the command starts; it waits at its exec for
    // them, and when none are enough it is stopped there and they are measured first.
    let mut pending = saved::Pending::start(&opts.figures, settings)?;
    let spawned = match started(opts, &picked, closed, &mut pending, loading)? {
        Some(s) => s,
        None => {
            pending.measure_if_short(settings)?;
            started(opts, &picked, closed, &mut pending, None)?.ok_or_else(|| {
                anyhow::anyhow!("trace: the figures were measured, yet the command was held")
            })?
        }
    };
    Ok(spawned)
}

/// The command started, its figures in: None when they were not there at its exec
/// (it was stopped before it ran).
fn started(
    opts: &Options,
    picked: &Option<String>,
    closed: &[i32],
    pending: &mut saved::Pending,
    loading: Option<Loading>,
) -> Result<Option<Started>> {
    let user = UserCpu::children();
    let began = Instant::now();
    let mut gate = || pending.ready();
    let Some((mut running, tracing)) = spawn(opts, picked, closed, loading, &mut gate)? else {
        return Ok(None);
    };
    pending.figures()?;
    let (figures, measured) = pending.take();
    let mut prof =
        super::profile::Profile::new(tracing.path == Tracer::Ptrace, tracing.path != Tracer::Ebpf);
    if let Running::Ptrace(t) = &mut running {
        // The command's own exec happened while it was being started: look at its
        // program (setuid, file capabilities) as at any later exec. (The eBPF tracer
        // sees that exec.)
        prof.add(&t.first_exec());
    }
    Ok(Some(Started {
        running,
        tracing,
        prof,
        figures,
        measured,
        user,
        began,
    }))
}

/// Starts loading the eBPF programs when `named` (None: auto) may use them.
fn loading(named: Option<Tracer>) -> Option<Loading> {
    matches!(named, None | Some(Tracer::Ebpf))
        .then(|| std::thread::spawn(|| bpf::Loaded::load(bpf::Scope::Command)))
}

/// Starts the command under the tracer `--tracer` names, or under ptrace where `auto`
/// picked it for this command ([`pick`]); where ptrace is refused here (Yama, a
/// seccomp policy, a tracer around ioprobe), which happens before the program runs,
/// under auto's usual order instead.
fn spawn(
    opts: &Options,
    picked: &Option<String>,
    closed: &[i32],
    loading: Option<Loading>,
    gate: &mut dyn FnMut() -> bool,
) -> Result<Option<(Running, Tracing)>> {
    let Some(why) = picked else {
        return spawn_under(opts.tracer, &opts.command, closed, loading, gate);
    };
    match spawn_under(Some(Tracer::Ptrace), &opts.command, closed, None, gate) {
        Ok(r) => Ok(r.map(|(run, mut t)| {
            t.picked = Some(why.clone());
            (run, t)
        })),
        // A program that cannot be started (127, 126) is refused by every tracer.
        Err(e) if e.downcast_ref::<Exit>().is_none() => {
            spawn_under(opts.tracer, &opts.command, closed, loading, gate)
        }
        Err(e) => Err(e),
    }
}

/// Starts the command under `named` (None: auto's order). `gate` is asked before the
/// command's program runs: false stops it there (None).
fn spawn_under(
    named: Option<Tracer>,
    command: &[OsString],
    closed: &[i32],
    loading: Option<Loading>,
    gate: &mut dyn FnMut() -> bool,
) -> Result<Option<(Running, Tracing)>> {
    let mut tracing = Tracing::of(Tracer::Ebpf);
    let refused = |t: Tracer, why: String, needs: &str| -> anyhow::Error {
        Exit::with(
            1,
            format!(
                "trace: the {} tracer cannot run here: {why}{needs}; the command was not run",
                t.shown()
            ),
        )
        .into()
    };
    if matches!(named, None | Some(Tracer::Ebpf)) {
        match spawn_ebpf(command, closed, loading, gate)? {
            Ok(r) => return Ok(r.map(|r| (r, tracing))),
            Err(e) if named.is_some() => {
                let needs = " (it needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF)";
                return Err(refused(Tracer::Ebpf, crate::error::plain(&e), needs));
            }
            Err(e) => tracing.ebpf_unavailable = Some(crate::error::plain(&e)),
        }
    }
    let mut preload = None;
    if matches!(named, None | Some(Tracer::Preload)) {
        match preload_for(&command[0]) {
            Ok(p) => preload = Some(p),
            Err(why) if named.is_some() => return Err(refused(Tracer::Preload, why, "")),
            Err(why) => tracing.preload_unavailable = Some(why),
        }
    }
    tracing.path = if preload.is_some() {
        Tracer::Preload
    } else {
        Tracer::Ptrace
    };
    let mut held = false;
    let mut at_exec = || {
        held = !gate();
        !held
    };
    match Ptrace::spawn(command, closed, preload, &mut at_exec) {
        Ok(t) => Ok(Some((Running::Ptrace(t), tracing))),
        Err(_) if held => Ok(None),
        Err(e) => Err(spawn_error(&command[0], e)),
    }
}

/// The command under the eBPF tracer: forked while the programs finish loading
/// (it waits before its exec), let go once they are attached and `gate` agrees
/// (None: held, and dropped before its exec). Ok(Err): the programs cannot load.
fn spawn_ebpf(
    command: &[OsString],
    closed: &[i32],
    loading: Option<Loading>,
    gate: &mut dyn FnMut() -> bool,
) -> Result<std::io::Result<Option<Running>>> {
    let gated = match &loading {
        Some(l) if !l.is_finished() => {
            Some(bpf::Gated::fork(command, closed).map_err(|e| spawn_error(&command[0], e))?)
        }
        _ => None,
    };
    let loaded = match loading {
        Some(l) => l
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("loading the programs panicked"))),
        None => bpf::Loaded::load(bpf::Scope::Command),
    };
    let l = match loaded {
        Ok(l) => l,
        Err(e) => return Ok(Err(e)),
    };
    if !gate() {
        // Dropped here: the gated child exits before its exec, and the programs
        // unload.
        let (_gated, _loaded) = (gated, l);
        return Ok(Ok(None));
    }
    let t = match gated {
        Some(g) => l.release(g),
        None => l.spawn(command, closed),
    }
    .map_err(|e| spawn_error(&command[0], e))?;
    Ok(Ok(Some(Running::Ebpf(t))))
}

/// The preload library and ring for `prog`, or why the preload tracer cannot trace
/// it (a statically linked program, a libc it cannot run with).
fn preload_for(prog: &std::ffi::OsStr) -> std::result::Result<preload::Preload, String> {
    if let Some(path) = crate::sys::trace::program_path(prog) {
        preload::dynamic(&path)?;
    }
    preload::Preload::new().map_err(|e| crate::error::plain(&e))
}
