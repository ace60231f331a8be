//! What a traced program did with I/O system calls: per process, target and operation,
//! the calls, bytes, a power-of-two histogram of request sizes, offsets (sequential or
//! random), short reads, bytes read again; and the patterns findings are made of
//! (lseek+read pairs, opens of one path, stat storms, fsyncs per write, read-then-write
//! copies, pipe capacities). Built from [`Event`]s; names no probe.
//!
//! `model.rs` is what the profile holds, `tables.rs` the task and descriptor tables,
//! `fd.rs` one descriptor, `memory.rs` the reads of the tracee's memory, and one file
//! per group of call families decodes them: `data.rs` (reads, writes, lseek,
//! sockets), `files.rs` (opens, closes, syncs, stats, paths), `mapped.rs` (in-kernel
//! copies, mmap, io_uring, AIO).

mod data;
mod fd;
mod files;
mod fold;
mod gaps;
mod mapped;
mod memory;
mod model;
mod op;
mod tables;
mod uring;

pub use gaps::Gaps;
pub use model::*;
pub use op::{AioOp, Op, UringOp};

use crate::names::Named;
use crate::sys::trace::calls::{Family, Syscall};
use crate::sys::trace::{Event, Timing};

impl Profile {
    /// After the last event: the note that says how many files were folded, if any.
    pub fn finish(&mut self) {
        let tasks: Vec<i32> = self.switch_words.keys().copied().collect();
        for tid in tasks {
            self.switched(tid);
        }
        if !self.uncopied.is_empty() {
            let calls = self.uncopied.iter().copied().collect::<Vec<_>>().join(", ");
            self.notes.insert(format!(
                "the eBPF tracer copies paths, iovec arrays (up to 32), msghdrs and io_uring parameters, not what {calls} also point to: those calls are counted, but the sizes or requests read from that memory are not (--tracer ptrace reads them)"
            ));
        }
        if !self.folded.is_empty() {
            let files: u64 = self.folded.values().sum();
            self.notes.insert(format!(
                "past {TARGETS} targets, {files} more files were folded into {} per-directory rows (\"DIR/* (more files, folded)\"): their opens, stats and re-reads are not told apart",
                self.folded.len()
            ));
        }
    }

    /// Takes one event into the profile.
    pub fn add(&mut self, e: &Event) {
        match *e {
            Event::Call {
                tid,
                call,
                args,
                ret,
                ref mem,
                timing,
            } => {
                self.mem = mem.clone();
                self.interval = self.time(tid, timing);
                self.call(tid, call, args, ret);
                self.interval = None; // a call no row counts keeps none
                if self.mem.missed() {
                    self.uncopied.insert(call.name());
                }
            }
            Event::Exec {
                tid,
                ref comm,
                program32,
                ref note,
                ref seen,
            } => self.exec(
                tid,
                comm.as_deref(),
                (program32, note.clone()),
                seen.as_ref(),
            ),
            Event::Created {
                tid,
                ref fds,
                what,
                ref names,
            } => self.created(tid, fds, what, names),
            Event::Task {
                tid,
                parent,
                pid: Some(pid),
                ref comm,
            } => self.task(tid, parent, pid, comm.as_deref()),
            Event::Task { pid: None, .. } => {}
            Event::Exit { tid } => {
                self.switched(tid);
                let pid = self.tgid.remove(&tid);
                self.last_read.remove(&tid);
                self.ended_at.remove(&tid);
                if pid == Some(tid) {
                    self.ended(tid);
                }
            }
        }
    }

    /// Task `tid`'s context switches between its first timed call and its last, to
    /// its process (the word is 30 bits wide, and wraps).
    fn switched(&mut self, tid: i32) {
        let Some((first, last)) = self.switch_words.remove(&tid) else {
            return;
        };
        let n = u64::from(last.wrapping_sub(first) & ((1 << 30) - 1));
        let pid = self.pid_of(tid);
        if let Some(p) = self.processes.get_mut(&pid) {
            p.switches += n;
        }
    }

    /// At a timed pair's second call, the interval from the first's end to its own,
    /// and whether the task was switched out in between (it waited, or another task
    /// ran). A first waits for its task's next call only.
    fn time(&mut self, tid: i32, t: Option<Timing>) -> Option<Interval> {
        if t.is_none() && self.ended_at.is_empty() {
            return None; // most calls: no pair open, none timed
        }
        if let Some(t) = t {
            let w = self
                .switch_words
                .entry(tid)
                .or_insert((t.switches, t.switches));
            w.1 = t.switches;
        }
        let first = self.ended_at.remove(&tid);
        let t = t?;
        if !t.second {
            self.ended_at.insert(tid, t);
            return None;
        }
        first.map(|f| Interval {
            ns: u64::from(t.ended_ns.wrapping_sub(f.ended_ns)),
            switched: f.switches != t.switches,
        })
    }

    pub(super) fn call(&mut self, tid: i32, sys: Syscall, a: [u64; 6], ret: i64) {
        *self.counts.entry(sys.name()).or_default() += 1;
        let name = Op::Call(sys);
        let pid = self.pid_of(tid);
        if sys == Syscall::Ptrace {
            if !self.traced {
                return; // no tracer of ioprobe's stands in its way
            }
            self.notes.insert(format!(
                "pid {pid} called ptrace, which fails under ioprobe trace (a process has one tracer)"
            ));
            return;
        }
        let fd0 = a[0] as i32;
        let ok = ret >= 0;
        let c = Call {
            pid,
            tid,
            sys,
            name,
            a,
            ret,
            ok,
            fd0,
        };
        match sys.family() {
            Family::Data => self.data_call(c),
            Family::Lseek => self.lseek_call(c),
            Family::Open => self.open_call(c),
            Family::Close => self.close_call(c),
            Family::Dup => {
                if ok && let Some(f) = self.fd(pid, fd0) {
                    self.set_fd(pid, ret as i32, f);
                }
            }
            Family::Sync => self.sync_call(c),
            Family::Copy => self.copy_call(c),
            Family::Mmap => self.mmap_call(c),
            Family::UringSetup => self.uring_setup(c),
            Family::Mapping => {
                let t = self.target("mappings");
                let s = self.op(pid, t, name);
                s.calls += 1;
                s.bytes += a[1];
                s.errors += u64::from(!ok);
            }
            Family::Fcntl => self.fcntl_call(c),
            Family::OnFd => self.fd_call(c),
            Family::Socket => self.socket_data(pid, tid, sys, a, ret),
            Family::AioSubmit => self.aio_submit(pid, a, ret),
            Family::Context => self.context_call(c),
            Family::Path => self.path_call(pid, sys, a, ok),
            Family::Stat => self.stat_call(c),
            Family::Ptrace => {}
        }
    }
}

/// One traced call's facts, as the per-family methods below take them.
#[derive(Clone, Copy)]
pub(super) struct Call {
    pub(super) pid: i32,
    pub(super) tid: i32,
    /// The call, decoded by the tracer.
    pub(super) sys: Syscall,
    /// The operation its calls are counted under.
    pub(super) name: Op,
    pub(super) a: [u64; 6],
    pub(super) ret: i64,
    pub(super) ok: bool,
    pub(super) fd0: i32,
}

/// Hand-built events for the decoders' tests: one task of a process no one else has
/// here, files that do not exist (their names are what the events say), memory as
/// the eBPF tracer copies it.
#[cfg(test)]
pub(super) mod testing {
    use super::Profile;
    use crate::sys::trace::calls::Syscall;
    use crate::sys::trace::{Created, Event, Memory};

    /// A task and process id no process has (pid_max is at most 2^22).
    pub const T: i32 = 100_000_000;
    /// Two files that do not exist: their names are what the events say.
    pub const F: &str = "/nonexistent-ioprobe/f";
    pub const G: &str = "/nonexistent-ioprobe/g";
    /// Where a test's path strings and arrays are, in the traced task.
    pub const AT: u64 = 0x1000;
    const AT_FDCWD: u64 = -100i64 as u64;

    /// An empty profile (as the eBPF tracer feeds it) with process T, "app".
    pub fn profile() -> Profile {
        let mut p = Profile::new(false, false);
        p.add(&Event::Task {
            tid: T,
            parent: 1,
            pid: Some(T),
            comm: Some("app".into()),
        });
        p
    }

    /// `sys` by T with `args` returning `ret`, its memory the `parts` given.
    pub fn call(
        p: &mut Profile,
        sys: Syscall,
        args: [u64; 6],
        ret: i64,
        parts: Vec<(u64, Vec<u8>, bool)>,
    ) {
        p.add(&Event::Call {
            tid: T,
            call: sys,
            args,
            ret,
            timing: None,
            mem: Memory::Captured(parts, std::cell::Cell::new(false)),
        });
    }

    /// The path string `path` at [`AT`], as the eBPF tracer copies it.
    pub fn path(path: &str) -> Vec<(u64, Vec<u8>, bool)> {
        vec![(AT, path.as_bytes().to_vec(), true)]
    }

    /// openat(AT_FDCWD, `name`) returning `fd` (a negative errno: failing).
    pub fn open(p: &mut Profile, name: &str, fd: i64) {
        call(
            p,
            Syscall::Openat,
            [AT_FDCWD, AT, 0, 0, 0, 0],
            fd,
            path(name),
        );
    }

    /// `n` plain calls `sys(fd, buf, size)` each returning `ret`.
    pub fn data(p: &mut Profile, sys: Syscall, fd: u64, size: u64, ret: i64, n: usize) {
        for _ in 0..n {
            call(p, sys, [fd, 0x9000, size, 0, 0, 0], ret, Vec::new());
        }
    }

    /// Descriptor `fd` made by socket(2) as a TCP socket /proc calls `socket:[N]`.
    pub fn socket(p: &mut Profile, fd: i32, n: u32) {
        p.add(&Event::Created {
            tid: T,
            fds: vec![fd],
            what: Created::Socket(Some("tcp")),
            names: vec![Some(format!("socket:[{n}]"))],
        });
    }

    /// The row of operation `op` on the target named `name`.
    pub fn row<'a>(p: &'a Profile, name: &str, op: &str) -> &'a super::OpStats {
        let t = p
            .targets
            .iter()
            .position(|t| t.name == name)
            .unwrap_or_else(|| panic!("no target {name}: {:?}", p.targets));
        p.ops
            .iter()
            .find(|((pid, at, o), _)| *pid == T && *at == t && o.name() == op)
            .map(|(_, s)| s)
            .unwrap_or_else(|| panic!("no {op} on {name}: {:?}", p.ops))
    }

    /// Target `name`'s index.
    pub fn target(p: &Profile, name: &str) -> usize {
        p.targets
            .iter()
            .position(|t| t.name == name)
            .expect("a target")
    }
}
