//! `ioprobe trace` through eBPF: the command runs untraced by ptrace (no stop, no
//! seccomp filter, its privileges kept), while four small BPF programs, assembled here
//! and loaded with bpf(2) (no compiler, no BPF toolchain), watch it from the kernel:
//!
//! - `sys_exit` (typed by BTF, `tp_btf`): for a task of the traced tree and a traced
//!   call, one record goes to its CPU's own ring: the call's number and arguments (still in
//!   the saved user registers at exit), its result, and the memory its profile reads
//!   (its path, iovec array, msghdr or io_uring parameters), copied there and then; a
//!   sample of pairs of calls (about one in 45 and its task's next recorded call) also
//!   carry when they ended and the task's context switches, for the program's own work
//!   between calls;
//! - `sched_process_fork`, `sched_process_exec`, `sched_process_exit`: the traced tree
//!   is a map in the kernel, so a new task is traced from its first call (the command
//!   itself from its exec: until then it is ioprobe's child waiting on a pipe); their
//!   records go to a ring buffer, which wakes ioprobe.
//!
//! Each record takes a ticket from one counter, and ioprobe reads the task ring and
//! the CPUs' rings as one stream in ticket order (a task moving between CPUs keeps its
//! calls' order), every few milliseconds, or when a program starts or a quarter of a
//! CPU's ring fills. The command's calls cost it one bit looked up inline (the `live`
//! bitmap, whose second bit per task marks a timed pair), its saved registers read
//! through the tracepoint's typed pointer (no helper call), a ticket, and a record
//! written without a lock or a helper call (only `sys_exit` writes a CPU's ring, and a
//! program never runs twice at once on one CPU). A record a ring had no room for is
//! counted ([`Ebpf::lost`]) and said, never
//! silently dropped. Needs root (or CAP_BPF with CAP_PERFMON) and BTF
//! (`/sys/kernel/btf/vmlinux`) for five offsets (`task_struct`'s `pid`, `tgid`,
//! `nvcsw` and `nivcsw`, `linux_binprm`'s `buf`) and the typed `sys_exit` tracepoint's
//! id. `calibrate.rs` measures what tracing puts in a timed pair's interval here.
//!
//! `asm.rs` is the assembler, `programs.rs` the four programs, `records.rs` how a
//! record goes into a ring, `kernel.rs` bpf(2),
//! the maps and BTF, `ring.rs` the rings read from user space in ticket order.

mod asm;
mod attach;
mod calibrate;
mod kernel;
mod programs;
mod reader;
mod records;
mod ring;

pub use calibrate::cost;

use super::calls::Pointee;
use super::ptrace::{Child, Maker, PASSED, c_args, child_error, makers, os, pipe};
use super::{Ended, Event};
use attach::Attached;
use kernel::*;
use programs::{exec, exit, fork, sys_exit};
use reader::Reader;
use ring::Rings;
use std::collections::{HashSet, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// The `tasks` map's values: a task of the traced tree, and the command's process
/// before its exec.
pub(super) const TRACED: i32 = 1;
pub(super) const WAITING: i32 = 2;
/// A task running a 32-bit program: its calls are numbered differently, so they are
/// not recorded (the report says so), but its children are followed.
pub(super) const COMPAT: i32 = 3;
/// Record kinds.
pub(super) const KIND_CALL: i32 = 1;
pub(super) const KIND_TASK: i32 = 2;
pub(super) const KIND_EXEC: i32 = 3;
pub(super) const KIND_EXIT: i32 = 4;
/// A record without memory, and one with: header (80 bytes; a call's number is 32 bits
/// at 16, the low 32 bits of its end, where timed, at [`AT`]), 512 bytes of memory (a
/// path, or iovecs), a 56-byte msghdr.
pub(super) const SMALL: i32 = 80;
pub(super) const AT: i16 = 20;
pub(super) const DATA: i16 = 80;
pub(super) const DATA_LEN: i32 = 512;
pub(super) const MSG: i16 = 592;
pub(super) const BIG: i32 = 648;
/// A CPU's ring of call records: 43,600 calls of 96-byte records, 6,300 with a
/// path. The reader thread empties the rings every [`READ_EVERY_MS`], and each quarter
/// of a ring filled wakes it at once: at the fastest traced rate measured here (1.5
/// million calls a second, `dd bs=512`) a quarter is 8 ms. One ring of 2 MiB (until
/// 29 Nov 2026) lost 2,897 of the 19,400 calls of 30 `dd bs=512` runs of 100 KB (a
/// shell loop, 2.4 MB of records in 100 ms, paths included) in CI, beside an
/// `ioprobe run` measuring: the reader had no CPU for the whole burst. 4 MiB holds such
/// a burst whole, on the one CPU a single-threaded burst runs on. Beyond four CPUs each
/// CPU's ring is smaller (16 MiB in all up to 64 CPUs), where the reader has CPUs to
/// run on.
pub(super) const RING: u32 = 4 << 20;
/// An attach's rings: 95,000 calls a CPU, about 33 ms of two 1-byte `/dev/zero`
/// readers here. An attach has no short command's start to save, and the running
/// processes may make calls faster than the profile takes them for a while: the rings
/// hold the backlog the reader's queue has no room for (2 MiB lost 0.03% of 176
/// million calls in 60 s of two such readers).
pub(super) const ATTACH_RING: u32 = 8 << 20;
/// The task ring: forks, execs and exits (88 bytes each), and the bells of the CPUs'
/// rings (16): 2,900 tasks between two reads, each of which wakes the reader.
pub(super) const TASK_RING: u32 = 256 << 10;
/// Tasks of the traced tree alive at once, and calls in flight.
pub(super) const TASKS: u32 = 16384;
/// Syscall numbers looked up (both architectures number theirs below 512).
pub(super) const NUMBERS: u32 = 512;
/// How often the rings are read while the command runs.
pub(super) const READ_EVERY_MS: i32 = 4;

/// The `live` bitmap's words: two bits for every task id below the kernel's
/// `pid_max` (32,768 ids: 8 KiB), read when the maps are made. Ids past it (pid_max
/// raised while tracing) are looked up in `tasks`, as without the bitmap.
fn live_words() -> u32 {
    let max = super::procfs::pid_max().unwrap_or(1 << 22);
    max.clamp(32, 1 << 22).div_ceil(32)
}

/// The `wanted` value of a descriptor maker: its fds (two ints) copied from
/// argument N, or nothing.
fn maker_value(m: Maker) -> u32 {
    match m {
        Maker::Pair(n, _) => 1 | (5 << 1) | ((n as u32) << 4),
        _ => 1,
    }
}

/// The `wanted` map's value for a traced call: bit 0, then the kind of memory to
/// copy (bits 1-3) and its argument (bits 4-6).
fn wanted_value(p: Pointee) -> u32 {
    let (kind, arg) = match p {
        Pointee::Nothing => (0, 0),
        Pointee::Path(n) => (1, n),
        Pointee::Iovecs(n) => (2, n),
        Pointee::Msghdr(n) => (3, n),
        Pointee::UringParams(n) => (4, n),
    };
    1 | (kind << 1) | ((arg as u32) << 4)
}

/// The command and the programs watching it. A reader thread empties the rings as
/// they fill, turning records into events at once (and looking at a new program's
/// descriptors and working directory then, while they are there), so that the rings
/// never wait on the profile.
pub struct Ebpf {
    main: i32,
    ended: Option<Ended>,
    lost_map: OwnedFd,
    /// The traced tasks not yet seen to end, and those of them missing from /proc
    /// at the last look.
    live: HashSet<i32>,
    missing: HashSet<i32>,
    /// The signal passed on to the command (0: none): a task learnt of later (its
    /// fork record read after the signal came) gets it too.
    passed: i32,
    /// Events to hand out before the batch's (an attach's opening descriptors).
    queue: VecDeque<Event>,
    /// The reader's batch being handed out, and those it has sent since.
    batch: std::vec::IntoIter<Event>,
    events: std::sync::mpsc::Receiver<Vec<Event>>,
    /// An eventfd: written, the reader empties the rings once more and ends.
    stop: std::sync::Arc<OwnedFd>,
    stopping: bool,
    reader: Option<std::thread::JoinHandle<()>>,
    /// Kept open while tracing: closing them detaches the programs.
    links: Vec<(OwnedFd, OwnedFd)>,
    _maps: Vec<OwnedFd>,
    /// Attached to running processes (None: the command ioprobe started).
    attached: Option<Attached>,
}

/// What the programs watch: the command ioprobe starts (its tree), or processes
/// already running (attached: every task of their process ids, or of a cgroup and
/// the cgroups below it), with the tasks they start.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    Command,
    Pids(&'a [i32]),
    Cgroup(&'a std::path::Path),
}

/// The maps made and the programs attached, with no task in the tree yet.
pub struct Loaded {
    maps: Maps,
    links: Vec<(OwnedFd, OwnedFd)>,
}

impl Loaded {
    /// Makes the maps and loads and attaches the programs: Err says why eBPF cannot
    /// trace here (no BTF, no privilege, a kernel that refuses a program).
    pub fn load(scope: Scope) -> io::Result<Loaded> {
        // The kernel's BTF is read (about 0.35 ms here) while the maps are made (0.6 ms):
        // neither needs the other, and a short command waits for both.
        let (types, maps) = std::thread::scope(|s| {
            let types = std::thread::Builder::new()
                .name("ebpf-btf".into())
                .spawn_scoped(s, kernel_types);
            let maps = make_maps(scope);
            let types = match types {
                Ok(t) => t
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("reading the kernel's BTF panicked"))),
                Err(_) => kernel_types(),
            };
            (types, maps)
        });
        // No BTF says more than a refused map: it is checked first.
        let (types, maps) = (types?, maps?);
        let mut wanted = vec![0u32; NUMBERS as usize];
        let calls = super::calls::traced().into_iter();
        for (nr, v) in calls
            .map(|(nr, c)| (nr, wanted_value(c.pointee())))
            .chain(makers().into_iter().map(|(nr, m)| (nr, maker_value(m))))
        {
            wanted[nr as usize] = v;
        }
        map_fill(&maps.wanted, &wanted)?;
        // sys_exit on this thread, the three others on a second one: the verifier takes
        // about 0.5 ms for sys_exit and as long for the three together here, so a short
        // command waits for the longer of the two only. A tracepoint's registration may
        // wait for an RCU grace period (one ended eBPF trace's detach less than one
        // before: about 12 ms here), which the figures' reading on the main thread
        // then overlaps.
        let others = [
            ("sched_process_fork", fork(&maps, types.offsets)),
            ("sched_process_exec", exec(&maps, types.offsets)),
            ("sched_process_exit", exit(&maps)),
        ];
        let first = sys_exit(&maps, types.offsets);
        let (first, others) = std::thread::scope(|s| {
            let others = std::thread::Builder::new()
                .name("ebpf-load".into())
                .spawn_scoped(s, || {
                    others
                        .iter()
                        .map(|(name, code)| attach(Point::Raw(name), code))
                        .collect::<io::Result<Vec<_>>>()
                });
            let first = attach(Point::Typed("sys_exit", types.sys_exit), &first);
            let others = match others {
                Ok(t) => t
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("loading the programs panicked"))),
                Err(e) => Err(e),
            };
            (first, others)
        });
        let mut links = vec![first?];
        links.extend(others?);
        Ok(Loaded { maps, links })
    }

    /// Starts `argv` with its pid in the tree: the child waits on a pipe until then,
    /// so its program's first call is traced.
    pub fn spawn(self, argv: &[std::ffi::OsString], close: &[i32]) -> io::Result<Ebpf> {
        self.release(Gated::fork(argv, close)?)
    }

    /// Puts the gated child's pid in the tree and lets it exec.
    pub fn release(self, mut gated: Gated) -> io::Result<Ebpf> {
        let Loaded { maps, links } = self;
        let (pid, rd) = (gated.pid, gated.errors);
        let Some(gate_wr) = gated.gate.take() else {
            return Err(io::Error::other("the command was already let go"));
        };
        let added = map_update(&maps.tasks, &pid.to_ne_bytes(), &WAITING.to_ne_bytes());
        if added.is_ok() {
            // SAFETY: one byte from a local to the gate's write end, ours.
            unsafe { libc::write(gate_wr, [1u8].as_ptr() as *const libc::c_void, 1) };
        }
        // SAFETY: closing the gate's write end, ours.
        unsafe { libc::close(gate_wr) };
        // The ring is mapped and its reader started while the child execs (on another
        // CPU when there is one); a failed exec then drops them.
        let tracer = added.and_then(|()| {
            // SAFETY: pidfd_open on our own child, not yet reaped.
            let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            let pidfd = (pidfd >= 0).then(|| owned(pidfd));
            Ebpf::start(maps, links, pid, pidfd, None)
        });
        let failed = child_error(rd);
        let tracer = tracer?;
        match failed {
            Some(e) => Err(e),
            None => Ok(tracer),
        }
    }
}

/// The command forked and waiting on a pipe, before its exec, until
/// [`Loaded::release`] lets it go: forked while the programs load, the fork is off a
/// short command's path. Dropped unreleased (the programs could not load), it exits
/// with 127 before its exec and is reaped.
pub struct Gated {
    pid: i32,
    /// The read end of the pipe the child reports a failed step on.
    errors: i32,
    /// The gate's write end, until released.
    gate: Option<i32>,
}

impl Gated {
    pub fn fork(argv: &[std::ffi::OsString], close: &[i32]) -> io::Result<Gated> {
        let args = c_args(argv)?;
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (rd, wr) = pipe()?;
        let (gate_rd, gate_wr) = pipe()?;
        let child = Child {
            gate: Some((gate_rd, gate_wr)),
            file: super::ptrace::exec_path(&argv[0]),
            ..Child::new(ptrs, close, (rd, wr))
        };
        let pid = child.start();
        // SAFETY: closing the parent's copies of the child's ends.
        unsafe {
            libc::close(wr);
            libc::close(gate_rd);
        }
        match pid {
            Ok(pid) => Ok(Gated {
                pid,
                errors: rd,
                gate: Some(gate_wr),
            }),
            Err(e) => {
                // SAFETY: closing our ends of the two pipes; no child holds them.
                unsafe {
                    libc::close(rd);
                    libc::close(gate_wr);
                }
                Err(e)
            }
        }
    }
}

impl Drop for Gated {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            // SAFETY: closing our pipe ends makes the child's read of the gate return
            // 0, and it exits; waitpid reaps our own child.
            unsafe {
                libc::close(gate);
                libc::close(self.errors);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

impl Ebpf {
    /// Starts reading the rings (waking at `pidfd`'s end, the command's) and watching
    /// `main`'s tree, or (attached) the processes `roots` names.
    fn start(
        maps: Maps,
        links: Vec<(OwnedFd, OwnedFd)>,
        main: i32,
        pidfd: Option<OwnedFd>,
        attached: Option<Attached>,
    ) -> io::Result<Ebpf> {
        let Maps {
            tasks,
            live,
            wanted,
            lost,
            ring,
            pids,
            cgroup,
            rings,
            ticket,
            cpus,
            cpu_ring,
        } = maps;
        let reader = Reader::new(Rings::map(ring, rings, cpus, cpu_ring)?);
        let (to, events) = std::sync::mpsc::sync_channel(reader::BACKLOG);
        // SAFETY: eventfd has no memory arguments; the descriptor is new and ours.
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop == -1 {
            return Err(io::Error::last_os_error()).map_err(os("eventfd"));
        }
        let stop = std::sync::Arc::new(owned(stop as libc::c_long));
        let stopped = stop.clone();
        let reader = std::thread::Builder::new()
            .name("ebpf-reader".into())
            .spawn(move || reader.run(to, &stopped, pidfd))
            .map_err(os("starting the eBPF ring reader"))?;
        Ok(Ebpf {
            main,
            ended: None,
            lost_map: lost,
            live: HashSet::from([main]),
            passed: 0,
            missing: HashSet::new(),
            queue: VecDeque::new(),
            batch: Vec::new().into_iter(),
            events,
            stop,
            stopping: false,
            reader: Some(reader),
            links,
            _maps: [
                Some(tasks),
                Some(live),
                Some(wanted),
                Some(ticket),
                pids,
                cgroup,
            ]
            .into_iter()
            .flatten()
            .collect(),
            attached,
        })
    }
}

impl Ebpf {
    /// The traced command's pid.
    pub fn pid(&self) -> i32 {
        self.main
    }

    /// How the command ended, once [`Ebpf::next_event`] has returned None.
    pub fn ended(&self) -> Option<Ended> {
        self.ended
    }

    /// Records the rings had no room for and tasks the tree could not hold: their calls
    /// are missing from the trace.
    pub fn lost(&self) -> u64 {
        let mut v = [0u8; 8];
        match map_lookup(&self.lost_map, &0u32.to_ne_bytes(), &mut v) {
            Ok(()) => u64::from_ne_bytes(v),
            Err(_) => 0,
        }
    }

    /// The next event, or None once the command has ended and every task it started
    /// has too.
    pub fn next_event(&mut self) -> io::Result<Option<Event>> {
        use std::sync::mpsc::RecvTimeoutError;
        loop {
            if let Some(e) = self.queue.pop_front().or_else(|| self.batch.next()) {
                match e {
                    Event::Task { tid, .. } => self.learn(tid),
                    Event::Exit { tid } => {
                        self.live.remove(&tid);
                    }
                    _ => {}
                }
                return Ok(Some(e));
            }
            if self.attached.is_some() {
                self.window_end();
            } else {
                self.pass_signal();
            }
            if self.ended.is_none() && self.attached.is_none() {
                self.reap()?;
            }
            if self.ended.is_some() && self.live.is_empty() && !self.stopping {
                // The last records: the reader empties the rings once more, then ends
                // (which ends the channel).
                self.stop_reader();
                self.stopping = true;
            }
            let wait = std::time::Duration::from_millis(READ_EVERY_MS as u64);
            match self.events.recv_timeout(wait) {
                Ok(batch) => {
                    self.batch = batch.into_iter();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self.ended.is_some() && !self.live.is_empty() && self.attached.is_none() {
                // Tasks still running after the command: waited for, as ptrace would.
                // One that has been gone from /proc for a whole reading period has
                // no record left to come (its exit record was lost): dropped.
                let gone: HashSet<i32> = self
                    .live
                    .iter()
                    .copied()
                    .filter(|&t| !super::procfs::exists(t))
                    .collect();
                for t in gone.intersection(&self.missing) {
                    self.live.remove(t);
                }
                self.missing = gone;
            }
        }
    }

    /// Task `tid` is traced; one learnt of after a signal was passed on (its fork
    /// record read later) gets it too.
    fn learn(&mut self, tid: i32) {
        if self.live.insert(tid) && self.passed != 0 {
            // SAFETY: kill(2) on a task of the traced tree.
            unsafe { libc::kill(tid, self.passed) };
        }
    }

    /// Passes a SIGTERM or SIGHUP ioprobe was sent to every traced task.
    fn pass_signal(&mut self) {
        let sig = PASSED.swap(0, std::sync::atomic::Ordering::Relaxed);
        if sig != 0 {
            self.passed = sig;
            for &t in &self.live {
                // SAFETY: kill(2) on a task of the traced tree.
                unsafe { libc::kill(t, sig) };
            }
        }
    }

    /// Reaps the command if it has ended.
    fn reap(&mut self) -> io::Result<()> {
        let mut status = 0;
        // SAFETY: waitpid on our own child, writing a local integer.
        let r = unsafe { libc::waitpid(self.main, &mut status, libc::WNOHANG) };
        if r == -1 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(());
            }
            return Err(e).map_err(os("waitpid"));
        }
        if r == self.main {
            self.ended = Some(if libc::WIFEXITED(status) {
                Ended::Code(libc::WEXITSTATUS(status))
            } else {
                Ended::Signal(libc::WTERMSIG(status))
            });
        }
        Ok(())
    }
}

impl Ebpf {
    /// Tells the reader to empty the rings once more and end.
    fn stop_reader(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: 8 bytes from a local to our eventfd.
        unsafe {
            libc::write(
                self.stop.as_raw_fd(),
                one.as_ptr() as *const libc::c_void,
                8,
            )
        };
    }
}

impl Drop for Ebpf {
    fn drop(&mut self) {
        self.stop_reader();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}
