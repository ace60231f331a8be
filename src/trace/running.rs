//! The tracer running, whatever it watches: one type for a command ioprobe started
//! and for processes it attached to, handing out the same events; and what the report
//! says of the tracer that ran ([`Tracing`]).

use super::figures::Figures;
use super::overhead::children_user_s;
use super::profile::Profile;
use crate::names::Named;
use crate::sys::trace::calls::Syscall;
use crate::sys::trace::{Ended, Ptrace, Tracer, bpf, procfs};
use serde::Serialize;

/// The tracer, running.
pub(super) enum Running {
    Ptrace(Ptrace),
    Ebpf(bpf::Ebpf),
}

impl Running {
    /// Takes every event into `prof` until the command and its tasks have ended, or
    /// the window has (the tracer has detached).
    pub(super) fn follow(&mut self, prof: &mut Profile) -> std::io::Result<()> {
        loop {
            let ev = match self {
                Running::Ptrace(t) => t.next_event()?,
                Running::Ebpf(t) => t.next_event()?,
            };
            let Some(ev) = ev else { return Ok(()) };
            prof.add(&ev);
        }
    }

    /// How the command ended, once followed (None: attached).
    pub(super) fn ended(&self) -> Option<Ended> {
        match self {
            Running::Ptrace(t) => t.ended(),
            Running::Ebpf(t) => t.ended(),
        }
    }

    /// The calls ptrace stopped at and traced, whose stops added user time (`overhead`
    /// corrects for it); none under eBPF, which runs in the kernel.
    pub(super) fn stopped_calls(&self) -> u64 {
        match self {
            Running::Ptrace(t) => t.stopped_calls(),
            Running::Ebpf(_) => 0,
        }
    }

    /// The tracer's own counts, once followed, into `tracing`: records lost, preload's
    /// calls without a stop and its plain starts.
    pub(super) fn count_into(&self, tracing: &mut Tracing) {
        match self {
            Running::Ptrace(t) => {
                tracing.lost = t.lost();
                tracing.unstopped_calls = t.unstopped_calls();
                tracing.plain_starts = t.plain_starts();
            }
            Running::Ebpf(t) => tracing.lost = t.lost(),
        }
    }

    /// The tracer let go: the eBPF programs detach on a thread (each tracepoint's
    /// static key switched off, the ring unmapped: about 0.35 ms here) while the
    /// report is written.
    pub(super) fn detach(self) -> Detaching {
        match self {
            Running::Ebpf(t) => std::thread::Builder::new()
                .name("ebpf-detach".into())
                .spawn(move || drop(t))
                .ok(),
            Running::Ptrace(_) => None,
        }
    }
}

/// A trace started: the tracer running, the profile its events go to, the figures to
/// price them with, and where its time and user CPU are counted from.
pub(super) struct Started {
    pub running: Running,
    pub tracing: Tracing,
    pub prof: Profile,
    pub figures: Figures,
    /// The run measured for the figures, where none saved were enough.
    pub measured: Option<i64>,
    pub user: UserCpu,
    pub began: std::time::Instant,
}

/// Where the traced processes' user CPU time is read: ioprobe's waited-for children
/// (a command), or the processes attached to (their /proc), from when tracing began.
pub(super) enum UserCpu {
    Children(f64),
    Processes(Vec<(i32, f64)>),
}

impl UserCpu {
    /// ioprobe's children's user CPU so far.
    pub(super) fn children() -> UserCpu {
        UserCpu::Children(children_user_s())
    }

    /// The processes `pids`' user CPU so far.
    pub(super) fn processes(pids: impl Iterator<Item = i32>) -> UserCpu {
        UserCpu::Processes(
            pids.map(|p| (p, procfs::user_cpu(p).unwrap_or(0.0)))
                .collect(),
        )
    }

    /// The user CPU seconds taken since (processes attached to: those still there).
    pub(super) fn since(&self) -> f64 {
        match self {
            UserCpu::Children(before) => (children_user_s() - before).max(0.0),
            UserCpu::Processes(before) => before
                .iter()
                .filter_map(|&(p, b)| procfs::user_cpu(p).map(|a| (a - b).max(0.0)))
                .sum(),
        }
    }
}

/// The eBPF tracer's programs detaching, joined once the report is written.
pub(super) type Detaching = Option<std::thread::JoinHandle<()>>;

/// The tracer that ran, and why not the others (JSON `tracer`).
#[derive(Debug, Clone, Serialize)]
pub struct Tracing {
    /// The tracer that ran ("ebpf", "preload" or "ptrace").
    pub path: Tracer,
    /// Why eBPF was not used, when `--tracer auto` fell back.
    pub ebpf_unavailable: Option<String>,
    /// Why preload was not used, when `--tracer auto` fell back to ptrace.
    pub preload_unavailable: Option<String>,
    /// Why `--tracer auto` took ptrace for this command (`pick`: it ran faster so
    /// here, or is being tried), else null.
    pub picked: Option<String>,
    /// Calls and tasks the eBPF rings or maps had no room for, or preload calls
    /// whose task died as it made them (their calls are missing from the counts); 0
    /// under ptrace.
    pub lost: u64,
    /// Preload: the calls its library recorded without a stop (the rest stopped).
    pub unstopped_calls: u64,
    /// preload: program starts that ran without the library (their earlier processes
    /// made too few calls through it to pay for its loading).
    pub plain_starts: u64,
}

impl Tracing {
    /// `path`, with nothing yet said of the others.
    pub(super) fn of(path: Tracer) -> Tracing {
        Tracing {
            path,
            ebpf_unavailable: None,
            preload_unavailable: None,
            picked: None,
            lost: 0,
            unstopped_calls: 0,
            plain_starts: 0,
        }
    }

    /// What the report must say about the tracer that ran: calls it lost, counts that
    /// may differ from strace's.
    pub(super) fn notes(&self, prof: &mut Profile) {
        match self.path {
            Tracer::Ebpf if self.lost > 0 => {
                prof.notes.insert(format!(
                    "the eBPF tracer lost {} records (its rings or task map were full): the counts miss those calls; --tracer ptrace misses none",
                    self.lost
                ));
            }
            Tracer::Preload => preload_notes(self.lost, prof),
            _ => {}
        }
    }
}

/// What preload may count differently: calls of processes that died as it recorded
/// them, its own loader's mmap, a program reading its own memory map.
fn preload_notes(lost: u64, prof: &mut Profile) {
    if lost > 0 {
        prof.notes.insert(format!(
            "{lost} calls are missing from the counts: their process died as the preload library recorded them; --tracer ptrace misses none"
        ));
    }
    if prof.counts.contains_key(Syscall::Mmap.name()) {
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
    if !readers.is_empty() {
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
