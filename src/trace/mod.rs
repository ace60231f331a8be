//! `ioprobe trace -- CMD`: runs CMD traced (see `sys::trace`), profiles its I/O
//! system calls ([`profile`]), prices them with this machine's saved figures and says
//! what to change ([`price`]). CMD keeps its stdin, stdout and stderr; the report goes
//! to stderr or `--output`; ioprobe exits with CMD's status.

mod attach;
mod claims;
pub mod figures;
pub mod findings;
pub mod overhead;
mod pick;
pub mod price;
pub mod profile;
mod relays;
mod report;
mod saved;
mod uring;

use crate::error::Exit;
use crate::present::Style;
use crate::settings::Settings;
use crate::sys::trace::Ended;
use crate::sys::trace::{Tracer, preload};
use anyhow::Result;
use figures::Figures;
use profile::Profile;
use report::Report;
use serde::Serialize;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

/// The trace command's options.
#[derive(Debug, Clone)]
pub struct Options {
    pub command: Vec<OsString>,
    pub output: Option<PathBuf>,
    pub json: bool,
    /// Runs to price with instead of this host's newest (RUN specs).
    pub figures: Vec<String>,
    /// How to watch the command.
    pub tracer: Via,
    /// Attach to these running processes instead of running a command.
    pub pids: Vec<i32>,
    /// Attach to every process of this cgroup (eBPF).
    pub cgroup: Option<PathBuf>,
    /// Attached: how long to watch (None: until Ctrl-C or the processes end).
    pub duration: Option<std::time::Duration>,
}

/// How `trace` watches the command: eBPF where the kernel allows it (root, or CAP_BPF
/// with CAP_PERFMON), else preload where the program is dynamically linked, else
/// ptrace; or one of them, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Auto,
    Ebpf,
    Preload,
    Ptrace,
}

/// The tracer that ran, and why not the others (JSON `tracer`).
#[derive(Debug, Clone, Serialize)]
pub struct Tracing {
    /// "ebpf", "preload" or "ptrace".
    pub path: &'static str,
    /// Why eBPF was not used, when `--tracer auto` fell back.
    pub ebpf_unavailable: Option<String>,
    /// Why preload was not used, when `--tracer auto` fell back to ptrace.
    pub preload_unavailable: Option<String>,
    /// Why `--tracer auto` took ptrace for this command ([`pick`]: it ran faster so
    /// here, or is being tried), else null.
    pub picked: Option<String>,
    /// Calls and tasks the eBPF ring buffer or maps had no room for, or preload calls
    /// whose task died as it made them (their calls are missing from the counts); 0
    /// under ptrace.
    pub lost: u64,
    /// Preload: the calls its library recorded without a stop (the rest stopped).
    pub unstopped_calls: u64,
    /// preload: program starts that ran without the library (their earlier processes
    /// made too few calls through it to pay for its loading).
    pub plain_starts: u64,
}

/// The eBPF programs being loaded on another thread while the figures are read (the
/// two take about as long; a short command no longer waits for both in turn).
type Loading = std::thread::JoinHandle<std::io::Result<crate::sys::trace::bpf::Loaded>>;

/// The eBPF programs [`load_early`] started loading before the flags were parsed.
static EARLY: std::sync::Mutex<Option<Loading>> = std::sync::Mutex::new(None);

/// Starts loading the eBPF programs for a command at once, before clap has parsed the
/// flags (about 0.5 ms here, which the load then overlaps), when `args` (the process's
/// own) name `trace` first and nothing before the command rules the eBPF tracer out:
/// no `--pid` or `--cgroup` (attaching loads its own), no `--tracer` but `auto` or
/// `ebpf`, no help. A guess the parsed flags contradict only loses the programs:
/// [`start_loading`] and the attach path drop them before anything is traced.
pub fn load_early(args: &[OsString]) {
    pick::start_clock();
    if args.get(1).is_none_or(|a| a != "trace") {
        return;
    }
    let mut flags = args[2..].iter().map(|a| a.to_string_lossy());
    let (mut named, mut store) = (false, None);
    while let Some(a) = flags.next() {
        let tracer = match a.as_ref() {
            "--" => break,
            "--store" => {
                store = flags.next().map(|s| std::path::PathBuf::from(s.as_ref()));
                continue;
            }
            t if t.starts_with("--store=") => {
                store = Some(t["--store=".len()..].into());
                continue;
            }
            "--tracer" => flags.next(),
            t if t.starts_with("--tracer=") => Some(t["--tracer=".len()..].to_owned().into()),
            t if t.starts_with("--pid") || t.starts_with("--cgroup") => return,
            "-h" | "--help" => return,
            _ => continue,
        };
        if tracer.as_ref().is_none_or(|t| t != "auto" && t != "ebpf") {
            return;
        }
        named = tracer.is_some_and(|t| t == "ebpf");
    }
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    if !named && end < args.len() && pick::early(store, &args[end + 1..]) {
        return; // auto takes ptrace for this command
    }
    let loading = std::thread::spawn(|| {
        use crate::sys::trace::bpf;
        bpf::Loaded::load(bpf::Scope::Command)
    });
    *EARLY.lock().unwrap_or_else(|e| e.into_inner()) = Some(loading);
}

/// The programs [`load_early`] loaded, joined and dropped: nothing of them stays
/// attached (an attached `sys_exit` with an empty tree still runs at every system call
/// on the machine).
pub(crate) fn drop_early() {
    if let Some(l) = EARLY.lock().unwrap_or_else(|e| e.into_inner()).take() {
        drop(l.join());
    }
}

/// Starts loading the eBPF programs when `via` may use them (or takes those
/// [`load_early`] started; dropped when `via` rules eBPF out).
fn start_loading(via: Via) -> Option<Loading> {
    use crate::sys::trace::bpf;
    if !matches!(via, Via::Auto | Via::Ebpf) {
        drop_early();
        return None;
    }
    let early = EARLY.lock().unwrap_or_else(|e| e.into_inner()).take();
    early.or_else(|| {
        Some(std::thread::spawn(|| {
            bpf::Loaded::load(bpf::Scope::Command)
        }))
    })
}

/// The tracer, running.
enum Running {
    Ptrace(Tracer),
    Ebpf(crate::sys::trace::bpf::Tracer),
}

impl Running {
    /// Starts the command under the tracer `via` chooses.
    /// `gate` is asked before the command's program runs: false stops it there (None).
    fn spawn(
        via: Via,
        command: &[OsString],
        closed: &[i32],
        loading: Option<Loading>,
        gate: &mut dyn FnMut() -> bool,
    ) -> Result<Option<(Running, Tracing)>> {
        let mut tracing = Tracing {
            path: "ebpf",
            ebpf_unavailable: None,
            preload_unavailable: None,
            picked: None,
            lost: 0,
            unstopped_calls: 0,
            plain_starts: 0,
        };
        if matches!(via, Via::Auto | Via::Ebpf) {
            match Running::spawn_ebpf(command, closed, loading, gate)? {
                Ok(r) => return Ok(r.map(|r| (r, tracing))),
                Err(e) if via == Via::Ebpf => {
                    return Err(Exit::with(
                        1,
                        format!(
                            "trace: the eBPF tracer cannot run here: {} (it needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF); the command was not run",
                            crate::error::plain(&e)
                        ),
                    )
                    .into());
                }
                Err(e) => tracing.ebpf_unavailable = Some(crate::error::plain(&e)),
            }
        }
        let mut preload = None;
        if matches!(via, Via::Auto | Via::Preload) {
            match preload_for(&command[0]) {
                Ok(p) => preload = Some(p),
                Err(why) if via == Via::Preload => {
                    return Err(Exit::with(
                        1,
                        format!(
                            "trace: the preload tracer cannot run here: {why}; the command was not run"
                        ),
                    )
                    .into());
                }
                Err(why) => tracing.preload_unavailable = Some(why),
            }
        }
        tracing.path = if preload.is_some() {
            "preload"
        } else {
            "ptrace"
        };
        let mut held = false;
        let mut at_exec = || {
            held = !gate();
            !held
        };
        match Tracer::spawn(command, closed, preload, &mut at_exec) {
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
        use crate::sys::trace::bpf;
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

    fn next_event(&mut self) -> std::io::Result<Option<crate::sys::trace::Event>> {
        match self {
            Running::Ptrace(t) => t.next_event(),
            Running::Ebpf(t) => t.next_event(),
        }
    }

    fn ended(&self) -> Option<Ended> {
        match self {
            Running::Ptrace(t) => t.ended(),
            Running::Ebpf(t) => t.ended(),
        }
    }

    fn lost(&self) -> u64 {
        match self {
            Running::Ptrace(t) => t.lost(),
            Running::Ebpf(t) => t.lost(),
        }
    }
}

/// The preload library and ring for `prog`, or why the preload tracer cannot trace
/// it (a statically linked program, a libc it cannot run with).
fn preload_for(prog: &std::ffi::OsStr) -> std::result::Result<preload::Preload, String> {
    if let Some(path) = crate::sys::trace::program_path(prog) {
        preload::dynamic(&path)?;
    }
    preload::Preload::new().map_err(|e| crate::error::plain(&e))
}

/// The JSON document `--json` writes (schema version 1).
/// Runs the command traced and reports; Ok(status) is the command's exit status, and
/// a command that signal N ended is `Exit::signalled(N)`: ioprobe ends by N too.
pub fn run(opts: &Options, settings: &Settings) -> Result<i32> {
    if !opts.pids.is_empty() || opts.cgroup.is_some() {
        drop_early();
        return attach::run(opts, settings);
    }
    usage(opts)?;
    let shown = opts
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>();
    // Everything that could fail after the command is checked before it runs: the
    // standard descriptors it was given, the report's destination, the program (a
    // 32-bit one is refused), and the figures (measured first when none are saved).
    let closed = crate::sys::trace::stdio_closed_at_start();
    let mut out = match &opts.output {
        Some(path) => Some(open_output(path)?),
        None => None,
    };
    preflight_program(&opts.command[0])?;
    let store = settings.store_path().ok();
    let picked = pick::choose(opts.tracer, &opts.command, store.as_deref());
    let loading = start_loading(if picked.is_some() {
        Via::Ptrace
    } else {
        opts.tracer
    });
    // The saved figures are read while the command starts; it waits at its exec for
    // them, and when none are enough it is stopped there and they are measured first.
    let mut pending = saved::Pending::start(&opts.figures, settings)?;
    let traced = match trace_command(opts, &picked, &closed, settings, &mut pending, loading)? {
        Some(t) => t,
        None => {
            pending.measure_if_short(settings)?;
            trace_command(opts, &picked, &closed, settings, &mut pending, None)?.ok_or_else(
                || anyhow::anyhow!("trace: the figures were measured, yet the command was held"),
            )?
        }
    };
    let (prof, ended, work, detaching) = traced;
    let (figures, measured) = pending.take();
    let found = findings::findings(&prof, &figures, work.estimate_s);
    let report = Report {
        cmd: &shown,
        ended,
        work: &work,
        p: &prof,
        f: &figures,
        measured,
        found: &found,
        window: None,
    };
    let written = write_report(&report, opts, settings, out.as_mut());
    if let Some(d) = detaching {
        drop(d.join());
    }
    written?;
    if let Some(store) = store.filter(|_| !settings.no_save) {
        let usual = opts.tracer == Via::Auto && work.tracer.picked.is_none();
        let calls = prof.counts.values().sum();
        pick::keep(
            &store,
            &opts.command,
            work.tracer.path,
            usual,
            calls,
            measured.is_none(),
        );
    }
    match ended {
        Ended::Code(c) => Ok(c),
        // ioprobe ends by the same signal once it has cleaned up (main).
        Ended::Signal(s) => Err(crate::error::Exit::signalled(s)),
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

/// The eBPF tracer's programs detaching (each tracepoint's static key switched off,
/// the ring unmapped: about 0.35 ms here) while the report is written.
type Detaching = Option<std::thread::JoinHandle<()>>;

/// A traced command: its profile, how it ended, its work here, the eBPF tracer
/// detaching.
type Traced = (Profile, Ended, Work, Detaching);

/// Runs the command traced to its end: its profile, how it ended, its work here (user
/// CPU less what tracing added, plus its calls priced with the figures `pending`
/// gives), and the eBPF tracer detaching. None: the figures were not there when the
/// command reached its exec, and it was stopped before it ran.
fn trace_command(
    opts: &Options,
    picked: &Option<String>,
    closed: &[i32],
    settings: &Settings,
    pending: &mut saved::Pending,
    loading: Option<Loading>,
) -> Result<Option<Traced>> {
    let before = crate::sys::rusage::getrusage_children()
        .map(|r| r.user_us as f64 * 1e-6)
        .unwrap_or(0.0);
    let start = Instant::now();
    let mut gate = || pending.ready();
    let Some((mut tracer, mut tracing)) = spawn(opts, picked, closed, loading, &mut gate)? else {
        return Ok(None);
    };
    let figures = pending.figures()?;
    let mut prof = Profile::new(tracing.path == "ptrace", tracing.path != "ebpf");
    if let Running::Ptrace(t) = &mut tracer {
        // The command's own exec happened while it was being started: look at its
        // program (setuid, file capabilities) as at any later exec. (The eBPF tracer
        // sees that exec.)
        prof.add(&t.first_exec());
    }
    while let Some(ev) = tracer.next_event()? {
        prof.add(&ev);
    }
    tracing.lost = tracer.lost();
    if let Running::Ptrace(t) = &tracer {
        tracing.unstopped_calls = t.unstopped_calls();
        tracing.plain_starts = t.plain_starts();
    }
    tracer_notes(&mut prof, &tracing);
    prof.finish();
    let elapsed = start.elapsed().as_secs_f64();
    let ended = tracer.ended().unwrap_or(Ended::Code(1));
    let user = |r: crate::sys::rusage::RawRusage| r.user_us as f64 * 1e-6;
    let user_cpu = crate::sys::rusage::getrusage_children()
        .map(|r| user(r) - before)
        .unwrap_or(0.0);
    // The eBPF tracer runs in the kernel: it adds no user time to correct for; the
    // preload library's own work per call is small beside a stop's.
    let calls: u64 = match &tracer {
        Running::Ptrace(t) => t.stopped_calls(),
        Running::Ebpf(_) => 0,
    };
    let work = Work::of(
        &prof,
        figures,
        settings,
        (user_cpu, calls),
        elapsed,
        tracing,
    );
    let detaching = match tracer {
        Running::Ebpf(t) => std::thread::Builder::new()
            .name("ebpf-detach".into())
            .spawn(move || drop(t))
            .ok(),
        Running::Ptrace(_) => None,
    };
    Ok(Some((prof, ended, work, detaching)))
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
        return Running::spawn(opts.tracer, &opts.command, closed, loading, gate);
    };
    match Running::spawn(Via::Ptrace, &opts.command, closed, None, gate) {
        Ok(r) => Ok(r.map(|(run, mut t)| {
            t.picked = Some(why.clone());
            (run, t)
        })),
        // A program that cannot be started (127, 126) is refused by every tracer.
        Err(e) if e.downcast_ref::<Exit>().is_none() => {
            Running::spawn(opts.tracer, &opts.command, closed, loading, gate)
        }
        Err(e) => Err(e),
    }
}

/// What the report must say about the tracer that ran: calls it lost, counts that may
/// differ from strace's.
fn tracer_notes(prof: &mut Profile, tracing: &Tracing) {
    if tracing.lost > 0 && tracing.path == "ebpf" {
        prof.notes.insert(format!(
            "the eBPF tracer lost {} records (its ring buffer or task map was full): the counts miss those calls; --tracer ptrace misses none",
            tracing.lost
        ));
    }
    if tracing.lost > 0 && tracing.path == "preload" {
        prof.notes.insert(format!(
            "{} calls are missing from the counts: their process died as the preload library recorded them; --tracer ptrace misses none",
            tracing.lost
        ));
    }
    if tracing.path == "preload" && prof.counts.contains_key("mmap") {
        prof.notes.insert(
            "under preload the dynamic loader also loads ioprobe's library into each program, and its own bookkeeping for it can take one more anonymous mmap per program than untraced: mmap may count that many more than strace (--tracer ptrace counts exactly)".to_string(),
        );
    }
    let readers: std::collections::BTreeSet<&str> = prof
        .opens
        .keys()
        .filter(|(pid, path)| reads_own_map(*pid, path))
        .filter_map(|(pid, _)| prof.processes.get(pid).map(|p| p.comm.as_str()))
        .collect();
    if tracing.path == "preload" && !readers.is_empty() {
        prof.notes.insert(format!(
            "{} read its own memory map (/proc/self/maps), which under preload can hold ioprobe's library and ring: the reads of it, and what the program does with what it read, may differ from an untraced run (--tracer ptrace or ebpf leave the map as it is)",
            readers.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
}

/// Whether `path`, opened by process `pid`, is that process's own memory map.
fn reads_own_map(pid: i32, path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/proc/") else {
        return false;
    };
    let Some((who, file)) = rest.split_once('/') else {
        return false;
    };
    let own = who == "self" || who == "thread-self" || who.parse::<i32>() == Ok(pid);
    own && matches!(file, "maps" | "smaps" | "smaps_rollup" | "numa_maps")
}

/// What the profile's calls would take here, at `figures`.
fn priced(prof: &Profile, figures: &Figures) -> f64 {
    prof.ops
        .iter()
        .filter_map(|(&(_, t, op), s)| {
            price::time_here(
                figures,
                &prof.targets[t],
                op,
                s,
                prof.pipe_sizes.contains_key(&t),
            )
        })
        .sum()
}

/// How long the run took under trace, and the work it would be here without tracing:
/// its processes' user CPU time less what tracing added to it ([`overhead`]) plus its
/// traced calls at this machine's measured cost. Waiting (a disk, the network, a sleep)
/// and untraced system calls are not in the estimate.
#[derive(Debug, Clone, Serialize)]
pub struct Work {
    pub traced_wall_s: f64,
    /// User CPU time without tracing, estimated: `user_correction` says how.
    pub user_cpu_s: f64,
    pub user_correction: overhead::Correction,
    pub priced_calls_s: f64,
    pub estimate_s: f64,
    /// The tracer that ran.
    pub tracer: Tracing,
}

impl Work {
    /// The work of a trace that took `seconds`: `user` CPU seconds less what tracing
    /// added to `stopped` calls ([`overhead`]), plus the profile's calls priced with
    /// `figures`.
    fn of(
        prof: &Profile,
        figures: &Figures,
        settings: &Settings,
        (user, stopped): (f64, u64),
        seconds: f64,
        tracer: Tracing,
    ) -> Work {
        let (user_cpu, correction) = {
            let host = crate::sys::machine::hostname();
            // The store is opened only when the calls are enough to correct for.
            let mut store = (stopped >= overhead::MIN_CALLS)
                .then(|| settings.store_for_saving().ok().flatten())
                .flatten();
            overhead::correct(user, stopped, store.as_mut(), &host)
        };
        let priced = priced(prof, figures);
        Work {
            traced_wall_s: seconds,
            user_cpu_s: user_cpu,
            user_correction: correction,
            priced_calls_s: priced,
            estimate_s: user_cpu + priced,
            tracer,
        }
    }
}

/// Opens `--output` for writing before the command runs (created or truncated), so
/// that a report that could not be written is known before anything happens.
/// /dev/full, which takes the open but no byte, is refused too.
fn open_output(path: &std::path::Path) -> Result<std::fs::File> {
    use std::os::unix::fs::FileTypeExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| {
            Exit::with(
                1,
                format!(
                    "trace: cannot write the report to {}: {} (the command was not run)",
                    path.display(),
                    crate::error::plain(&e)
                ),
            )
        })?;
    let m = f.metadata()?;
    if m.file_type().is_char_device() && std::os::unix::fs::MetadataExt::rdev(&m) == libc_full_dev()
    {
        return Err(Exit::with(
            1,
            format!(
                "trace: cannot write the report to {}: No space left on device (the command was not run)",
                path.display()
            ),
        )
        .into());
    }
    Ok(f)
}

/// /dev/full's device number (1, 7), as Linux numbers it.
fn libc_full_dev() -> u64 {
    std::fs::metadata("/dev/full").map_or(u64::MAX, |m| std::os::unix::fs::MetadataExt::rdev(&m))
}

/// Refuses, before it runs, a program whose calls could not be traced: a 32-bit
/// (i386 or x32) ELF, whose system calls the filter's architecture check lets through
/// unseen. Its report would otherwise say "no calls".
fn preflight_program(prog: &std::ffi::OsStr) -> Result<()> {
    use std::io::Read;
    let Some(path) = crate::sys::trace::program_path(prog) else {
        return Ok(()); // the spawn says "command not found"
    };
    let mut head = [0u8; 5];
    let read = std::fs::File::open(&path).and_then(|mut f| f.read_exact(&mut head));
    if read.is_ok() && head[..4] == *b"\x7fELF" && head[4] == 1 {
        return Err(Exit::with(
            1,
            format!(
                "trace: {} is a 32-bit program: its system calls cannot be traced (64-bit programs only); it was not run",
                path.display()
            ),
        )
        .into());
    }
    Ok(())
}

/// CMD not found: 127, as a shell gives; found but not executable (permission, format,
/// a directory, a missing `#!` interpreter): 126; tracing refused: 1, naming the
/// cause.
fn spawn_error(prog: &std::ffi::OsStr, e: std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let why = crate::error::plain(&e);
    let shown = prog.to_string_lossy();
    let cause = why.strip_prefix("execvp: ").unwrap_or(&why).to_string();
    if why.starts_with("execvp") {
        let found = crate::sys::trace::program_path(prog);
        return match (e.kind(), found) {
            (ErrorKind::NotFound, None) => {
                Exit::with(127, format!("{shown}: command not found")).into()
            }
            (ErrorKind::NotFound, Some(path)) => {
                // The file is there: what is missing is its interpreter.
                let first = std::fs::read(&path).unwrap_or_default();
                let line = first.split(|&b| b == b'\n').next().unwrap_or_default();
                match line.strip_prefix(b"#!") {
                    Some(interp) => {
                        let interp = String::from_utf8_lossy(interp);
                        let interp = interp.split_whitespace().next().unwrap_or("").to_string();
                        Exit::with(
                            126,
                            format!("{shown}: bad interpreter {interp}: No such file or directory"),
                        )
                        .into()
                    }
                    None => Exit::with(
                        127,
                        format!("{shown}: cannot execute: required file not found"),
                    )
                    .into(),
                }
            }
            _ => Exit::with(126, format!("{shown}: {cause}")).into(),
        };
    }
    match e.kind() {
        ErrorKind::Unsupported => anyhow::anyhow!("{why}"),
        ErrorKind::ResourceBusy => anyhow::anyhow!("cannot trace {shown}: {why}"),
        _ => {
            let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            let hint = if scope == "3" {
                " (Yama ptrace_scope is 3: no process may trace)"
            } else if why.contains("seccomp") || why.contains("prctl") {
                " (a seccomp policy or container forbids installing a filter)"
            } else {
                " (a seccomp policy, a container or Yama forbids ptrace)"
            };
            anyhow::anyhow!("cannot trace {shown}: {why}{hint}")
        }
    }
}

pub use report::thousands;

#[cfg(test)]
mod tests {
    use super::reads_own_map;

    #[test]
    fn a_process_reading_its_own_map_is_told_from_one_reading_another() {
        assert!(reads_own_map(42, "/proc/self/maps"));
        assert!(reads_own_map(42, "/proc/42/maps"));
        assert!(reads_own_map(42, "/proc/thread-self/smaps"));
        assert!(!reads_own_map(42, "/proc/43/maps"));
        assert!(!reads_own_map(42, "/proc/self/status"));
        assert!(!reads_own_map(42, "/etc/maps"));
    }
}
