//! The record every tracer gives: [`Event`]s, the memory a call's arguments point to,
//! what a process was when its program started, how the command ended, and what an
//! attach targets (a process, the tracer attaching, how its window ended).

/// What `ioprobe trace` sees: one traced system call that returned, or a
/// change in the traced tasks.
#[derive(Debug, Clone)]
pub enum Event {
    /// `tid` made system call `call` with `args`; it returned `ret` (a negative errno
    /// on failure). `mem` is where what its arguments point to is read.
    Call {
        tid: i32,
        call: super::calls::Syscall,
        args: [u64; 6],
        ret: i64,
        mem: Memory,
        /// When the call ended and how often its task had been switched out by then,
        /// for the calls the tracer times (eBPF: a sample of pairs).
        timing: Option<Timing>,
    },
    /// `tid` started (fork, vfork or clone) from `parent`; its process and program
    /// name, where the tracer saw them.
    Task {
        tid: i32,
        parent: i32,
        pid: Option<i32>,
        comm: Option<String>,
    },
    /// `tid` replaced its program (execve); the new program's name and whether it is
    /// a 32-bit one, where the tracer saw them, what the ptrace tracer noticed of it
    /// while it was still stopped at its exec (`note`: a 32-bit or setuid program; a
    /// short program may be gone from /proc once resumed), and (eBPF: looked at as soon
    /// as it started, as the process may be gone when the event is read) its
    /// descriptors (number, /proc link, position) and working directory.
    Exec {
        tid: i32,
        comm: Option<String>,
        program32: Option<bool>,
        note: Option<String>,
        seen: Option<Seen>,
    },
    /// `tid` ended.
    Exit { tid: i32 },
    /// `tid` made descriptors `fds` that no traced call names (the eBPF tracer's
    /// pipe2, socket, socketpair and accept, which it watches without counting them):
    /// what they are.
    Created {
        tid: i32,
        fds: Vec<i32>,
        what: Created,
        /// Each descriptor's /proc link, looked at when the record was read.
        names: Vec<Option<String>>,
    },
}

/// When a timed call ended (CLOCK_MONOTONIC, ns, the low 32 bits: a pair's interval
/// is far shorter than their 4.3 s) and its task's context switches then (voluntary
/// and involuntary, the low 30 bits). Calls are timed in pairs, a sample of
/// them: a first, and its task's next recorded call (`second`; a call not recorded
/// between them, getpid or futex, is part of the program's work in between). The time
/// from one to the other holds the program's own work between them and the second
/// call, where the count did not change (the task neither waited nor was preempted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub ended_ns: u32,
    pub switches: u32,
    pub second: bool,
}

/// A process as the eBPF tracer saw it when its program started.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub fds: Vec<(i32, String, u64)>,
    pub cwd: Option<String>,
}

impl Seen {
    /// Process `pid`'s descriptors and working directory, now.
    pub fn now(pid: i32) -> Seen {
        let fds = super::procfs::fds(pid)
            .into_iter()
            .filter_map(|fd| super::procfs::fd(pid, fd).map(|(name, pos)| (fd, name, pos)))
            .collect();
        Seen {
            fds,
            cwd: super::procfs::cwd(pid),
        }
    }
}

/// What an [`Event::Created`] made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Pipe,
    /// A socket, with its family as the socket probe names it (unix, unix-dgram,
    /// tcp, udp), when socket(2)'s arguments say it; None for accept's.
    Socket(Option<&'static str>),
}

/// Where the memory a traced call's arguments point to (paths, iovecs, msghdrs,
/// io_uring rings) is read from.
#[derive(Debug, Clone)]
pub enum Memory {
    /// The task is stopped at the call's exit (ptrace): its memory, from
    /// /proc/TID/mem.
    Live(i32),
    /// What the in-kernel tracer copied at the call's exit (eBPF): (address, bytes,
    /// whether a NUL-terminated string) each. Anything else was not copied: a read
    /// outside them returns None and is remembered ([`Memory::missed`]).
    Captured(Vec<(u64, Vec<u8>, bool)>, std::cell::Cell<bool>),
}

impl Default for Memory {
    /// Nothing copied.
    fn default() -> Memory {
        Memory::Captured(Vec::new(), std::cell::Cell::new(false))
    }
}

impl Memory {
    /// `len` bytes at `addr`.
    pub fn peek(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        match self {
            Memory::Live(tid) => {
                use std::os::unix::fs::FileExt;
                let mem = std::fs::File::open(format!("/proc/{tid}/mem")).ok()?;
                let mut buf = vec![0u8; len];
                mem.read_exact_at(&mut buf, addr).ok()?;
                Some(buf)
            }
            Memory::Captured(parts, missed) => {
                let found = parts.iter().find_map(|(at, b, _)| {
                    let from = usize::try_from(addr.checked_sub(*at)?).ok()?;
                    b.get(from..from.checked_add(len)?).map(<[u8]>::to_vec)
                });
                missed.set(missed.get() || found.is_none());
                found
            }
        }
    }

    /// The NUL-terminated string (a path) at `addr`, up to 4 KiB.
    pub fn string(&self, addr: u64) -> Option<String> {
        let bytes = match self {
            Memory::Live(tid) => live_string(*tid, addr)?,
            Memory::Captured(parts, missed) => {
                let found = parts
                    .iter()
                    .find(|(at, _, string)| *string && *at == addr)
                    .map(|(_, b, _)| b.clone());
                missed.set(missed.get() || found.is_none());
                found?
            }
        };
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A read asked for memory the in-kernel tracer had not copied.
    pub fn missed(&self) -> bool {
        matches!(self, Memory::Captured(_, m) if m.get())
    }
}

/// The NUL-terminated string at `addr` in task `tid`'s memory (stopped), up to 4 KiB.
pub(super) fn live_string(tid: i32, addr: u64) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mem = std::fs::File::open(format!("/proc/{tid}/mem")).ok()?;
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    let mut at = addr;
    while out.len() < 4096 {
        let n = mem.read_at(&mut buf, at).ok()?;
        if n == 0 {
            break;
        }
        if let Some(end) = buf[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&buf[..end]);
            return Some(out);
        }
        out.extend_from_slice(&buf[..n]);
        at += n as u64;
    }
    Some(out)
}

/// How a traced command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

/// A process attached to: its id, its program's name, its threads at the attach.
#[derive(Debug, Clone)]
pub struct Target {
    pub pid: i32,
    pub comm: String,
    pub threads: Vec<i32>,
}

/// A tracer: how `trace` watches a program. Its name is the one place a tracer is
/// spelt (`--tracer`, JSON `tracer.path`, the tracers `auto` learns from): written and
/// read only through serde and [`Tracer::name`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Tracer {
    /// Programs on the kernel's tracepoints: no stop, nothing in the process changed.
    Ebpf,
    /// An LD_PRELOAD library recording the wrapped calls, ptrace for the rest.
    Preload,
    /// ptrace stops at the traced calls (a seccomp filter picks them).
    Ptrace,
}

impl Tracer {
    /// The name flags and JSON use.
    pub fn name(self) -> &'static str {
        match self {
            Tracer::Ebpf => "ebpf",
            Tracer::Preload => "preload",
            Tracer::Ptrace => "ptrace",
        }
    }

    /// The name as prose writes it.
    pub fn shown(self) -> &'static str {
        match self {
            Tracer::Ebpf => "eBPF",
            t => t.name(),
        }
    }
}

impl std::fmt::Display for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.shown())
    }
}

/// How an attached trace's window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowEnd {
    Duration,
    Signal(i32),
    /// Every process attached to ended.
    Exited,
}

/// What the eBPF tracer's calibration measured ([`crate::sys::trace::bpf::cost`]), ns
/// per call.
#[derive(Debug, Clone, Copy)]
pub struct Calibration {
    /// The call untraced.
    pub bare_ns: f64,
    /// A timed pair's interval (the median), which holds the call and tracing's part.
    pub pair_ns: f64,
    /// Calls made with the programs attached.
    pub calls: u64,
}
