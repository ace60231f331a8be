//! `ioprobe trace` through eBPF: the command runs untraced by ptrace (no stop, no
//! seccomp filter, its privileges kept), while four small BPF programs, assembled here
//! and loaded with bpf(2) (no compiler, no BPF toolchain), watch it from the kernel:
//!
//! - `sys_exit` (typed by BTF, `tp_btf`): for a task of the traced tree and a traced
//!   call, one record goes to a ring buffer: the call's number and arguments (still in
//!   the saved user registers at exit), its result, and the memory its profile reads
//!   (its path, iovec array, msghdr or io_uring parameters), copied there and then;
//! - `sched_process_fork`, `sched_process_exec`, `sched_process_exit`: the traced tree
//!   is a map in the kernel, so a new task is traced from its first call (the command
//!   itself from its exec: until then it is ioprobe's child waiting on a pipe).
//!
//! ioprobe reads the ring every few milliseconds, or when a program starts or the ring
//! is half full, so the command's calls cost it one bit looked up inline (the `live`
//! bitmap), its saved registers read through the tracepoint's typed pointer (no
//! helper call), and a record each. A record the ring had no room for is counted
//! ([`Tracer::lost`]) and said, never silently dropped. Needs root (or CAP_BPF with
//! CAP_PERFMON) and BTF (`/sys/kernel/btf/vmlinux`) for three offsets (`task_struct`'s
//! `pid` and `tgid`, `linux_binprm`'s `buf`) and the typed `sys_exit` tracepoint's id.

//!
//! `asm.rs` is the assembler, `programs.rs` the four programs, `kernel.rs` bpf(2),
//! the maps and BTF, `ring.rs` the ring buffer read from user space.

mod asm;
mod attach;
mod kernel;
mod programs;
mod ring;

use super::calls::{Pointee, Syscall};
use super::ptrace::{Child, Maker, PASSED, c_args, child_error, made, makers, os, pipe};
use super::{Ended, Event, Memory, Seen};
use attach::Attached;
use kernel::*;
use programs::{exec, exit, fork, sys_exit};
use ring::Ring;
use std::collections::{HashMap, HashSet, VecDeque};
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
/// A record without memory, and one with: header (80 bytes), 512 bytes of memory
/// (a path, or iovecs), a 56-byte msghdr.
pub(super) const SMALL: i32 = 80;
pub(super) const DATA: i16 = 80;
pub(super) const DATA_LEN: i32 = 512;
pub(super) const MSG: i16 = 592;
pub(super) const BIG: i32 = 648;
/// The ring buffer's size: 23,800 calls of 88-byte records, 3,200 with a path. The
/// reader thread empties it every [`READ_EVERY_MS`], and a record that finds it half
/// full wakes it at once: at the fastest traced rate measured here (1.5 million calls
/// a second, `dd bs=512`) half the ring is 8 ms, and under two `yes` loads no call was
/// lost. 8 MiB lost none either but cost a short command 2 ms more: the kernel
/// allocates, maps and unmaps every page of the ring.
pub(super) const RING: u32 = 2 << 20;
/// Tasks of the traced tree alive at once, and calls in flight.
pub(super) const TASKS: u32 = 16384;
/// Syscall numbers looked up (both architectures number theirs below 512).
pub(super) const NUMBERS: u32 = 512;
/// How often the ring is read while the command runs.
pub(super) const READ_EVERY_MS: i32 = 4;

/// The `live` bitmap's words: one bit for every task id below the kernel's
/// `pid_max` (32,768 ids: 4 KiB), read when the maps are made. Ids past it (pid_max
/// raised while tracing) are looked up in `tasks`, as without the bitmap.
fn live_words() -> u32 {
    let max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(1 << 22);
    max.clamp(64, 1 << 22).div_ceil(64)
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

/// The command and the programs watching it. A reader thread empties the ring as it
/// fills, turning records into events at once (and looking at a new program's
/// descriptors and working directory then, while they are there), so that the ring
/// never waits on the profile.
pub struct Tracer {
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
    queue: VecDeque<Event>,
    events: std::sync::mpsc::Receiver<Vec<Event>>,
    /// An eventfd: written, the reader empties the ring once more and ends.
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

/// The maps the programs share, and the scope's own (the processes or the cgroup
/// attached to).
fn make_maps(scope: Scope) -> io::Result<Maps> {
    const HASH: u32 = 1;
    const ARRAY: u32 = 2;
    const CGROUP_ARRAY: u32 = 8;
    const RINGBUF: u32 = 27;
    // The tree is small and changes at forks and execs only: allocated as it grows.
    const NO_PREALLOC: u32 = 1;
    let mut maps = Maps {
        tasks: map_create(HASH, 4, 4, TASKS, NO_PREALLOC)?,
        live: map_create(ARRAY, 4, 8, live_words(), 0)?,
        wanted: map_create(ARRAY, 4, 4, NUMBERS, 0)?,
        lost: map_create(ARRAY, 4, 8, 1, 0)?,
        ring: map_create(RINGBUF, 0, 0, RING, 0)?,
        pids: None,
        cgroup: None,
    };
    match scope {
        Scope::Command => {}
        Scope::Pids(pids) => {
            let map = map_create(HASH, 4, 4, pids.len().max(1) as u32, 0)?;
            for p in pids {
                map_update(&map, &p.to_ne_bytes(), &1u32.to_ne_bytes())?;
            }
            maps.pids = Some(map);
        }
        Scope::Cgroup(dir) => {
            let map = map_create(CGROUP_ARRAY, 4, 4, 1, 0)?;
            let d = std::fs::File::open(dir).map_err(os("opening the cgroup"))?;
            map_update(&map, &0u32.to_ne_bytes(), &d.as_raw_fd().to_ne_bytes())
                .map_err(os("bpf(BPF_MAP_UPDATE_ELEM) on the cgroup array"))?;
            maps.cgroup = Some(map);
        }
    }
    Ok(maps)
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
        let first = sys_exit(&maps);
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
    pub fn spawn(self, argv: &[std::ffi::OsString], close: &[i32]) -> io::Result<Tracer> {
        self.release(Gated::fork(argv, close)?)
    }

    /// Puts the gated child's pid in the tree and lets it exec.
    pub fn release(self, mut gated: Gated) -> io::Result<Tracer> {
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
            Tracer::start(maps, links, pid, pidfd, None)
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

impl Tracer {
    /// Starts reading the ring (waking at `pidfd`'s end, the command's) and watching
    /// `main`'s tree, or (attached) the processes `roots` names.
    fn start(
        maps: Maps,
        links: Vec<(OwnedFd, OwnedFd)>,
        main: i32,
        pidfd: Option<OwnedFd>,
        attached: Option<Attached>,
    ) -> io::Result<Tracer> {
        let Maps {
            tasks,
            live,
            wanted,
            lost,
            ring,
            pids,
            cgroup,
        } = maps;
        let ring = Ring::map(ring)?;
        let reader = Reader {
            ring,
            calls: super::calls::traced().into_iter().collect(),
            makers: makers().into_iter().collect(),
        };
        let (to, events) = std::sync::mpsc::channel();
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
        Ok(Tracer {
            main,
            ended: None,
            lost_map: lost,
            live: HashSet::from([main]),
            passed: 0,
            missing: HashSet::new(),
            queue: VecDeque::new(),
            events,
            stop,
            stopping: false,
            reader: Some(reader),
            links,
            _maps: [Some(tasks), Some(live), Some(wanted), pids, cgroup]
                .into_iter()
                .flatten()
                .collect(),
            attached,
        })
    }
}

impl Tracer {
    /// The traced command's pid.
    pub fn pid(&self) -> i32 {
        self.main
    }

    /// How the command ended, once [`Tracer::next_event`] has returned None.
    pub fn ended(&self) -> Option<Ended> {
        self.ended
    }

    /// Records the ring had no room for and tasks the tree could not hold: their calls
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
            if let Some(e) = self.queue.pop_front() {
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
                // The last records: the reader empties the ring once more, then ends
                // (which ends the channel).
                self.stop_reader();
                self.stopping = true;
            }
            let wait = std::time::Duration::from_millis(READ_EVERY_MS as u64);
            match self.events.recv_timeout(wait) {
                Ok(batch) => {
                    self.queue.extend(batch);
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
                    .filter(|t| !std::path::Path::new(&format!("/proc/{t}")).exists())
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

impl Tracer {
    /// Tells the reader to empty the ring once more and end.
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

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop_reader();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// The reader thread's side: the ring and how to decode its records.
struct Reader {
    ring: Ring,
    calls: HashMap<u64, Syscall>,
    makers: HashMap<u64, Maker>,
}

// SAFETY: the ring's mappings belong to the Ring alone, and once the Reader is moved
// to its thread nothing else touches them.
unsafe impl Send for Reader {}

impl Reader {
    /// Until `stop` is written: waits for a wake-up (the ring's, the command's end,
    /// `stop`) or READ_EVERY_MS, empties the ring and sends its events; once more
    /// after `stop`. The command's end is sent as an empty batch, once.
    fn run(self, to: std::sync::mpsc::Sender<Vec<Event>>, stop: &OwnedFd, pidfd: Option<OwnedFd>) {
        let fd = |f: Option<&OwnedFd>| libc::pollfd {
            fd: f.map_or(-1, |f| f.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut ended = pidfd.is_none();
        loop {
            let mut p = [
                fd(Some(&self.ring.fd)),
                fd(Some(stop)),
                fd(pidfd.as_ref().filter(|_| !ended)),
            ];
            // SAFETY: three pollfds on the stack (a negative descriptor is skipped).
            unsafe { libc::poll(p.as_mut_ptr(), 3, READ_EVERY_MS) };
            let last = p[1].revents & libc::POLLIN != 0;
            let end = !ended && p[2].revents & libc::POLLIN != 0;
            ended |= end;
            let mut batch = Vec::new();
            self.ring.drain(|r| batch.extend(self.decode(r)));
            if (end || !batch.is_empty()) && to.send(batch).is_err() {
                return;
            }
            if last {
                return;
            }
        }
    }

    /// One record as the events it stands for.
    fn decode(&self, r: &[u8]) -> Vec<Event> {
        let i32_at = |at: usize| i32::from_ne_bytes(r[at..at + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |at: usize| u64::from_ne_bytes(r[at..at + 8].try_into().unwrap_or([0; 8]));
        let u16_at = |at: usize| u16::from_ne_bytes(r[at..at + 2].try_into().unwrap_or([0; 2]));
        if r.len() < SMALL as usize {
            return Vec::new();
        }
        let comm = || {
            let c = &r[16..32];
            let end = c.iter().position(|&b| b == 0).unwrap_or(16);
            Some(String::from_utf8_lossy(&c[..end]).into_owned())
        };
        let tid = i32_at(4);
        match i32_at(0) {
            KIND_CALL => {
                let nr = u64_at(16);
                let args: [u64; 6] = std::array::from_fn(|i| u64_at(24 + 8 * i));
                let ret = u64_at(72) as i64;
                let Some(&call) = self.calls.get(&nr) else {
                    return self
                        .makers
                        .get(&nr)
                        .and_then(|&m| {
                            made(
                                tid,
                                m,
                                &args,
                                ret,
                                r.get(DATA as usize..DATA as usize + 8)
                                    .filter(|_| u16_at(12) == 8),
                            )
                        })
                        .into_iter()
                        .collect();
                };
                let mem = captured(call.pointee(), &args, r, u16_at(12), u16_at(14) == 1);
                vec![Event::Call {
                    tid,
                    call,
                    args,
                    ret,
                    mem,
                }]
            }
            KIND_TASK => vec![Event::Task {
                tid,
                parent: i32_at(12),
                pid: Some(i32_at(8)),
                comm: comm(),
            }],
            KIND_EXEC => {
                let old = i32_at(8);
                let mut v = Vec::new();
                if old != tid {
                    // A thread exec'd: it took its leader's id and its own ended.
                    v.push(Event::Exit { tid: old });
                    v.push(Event::Task {
                        tid,
                        parent: old,
                        pid: Some(tid),
                        comm: None,
                    });
                }
                v.push(Event::Exec {
                    tid,
                    comm: comm(),
                    program32: Some(i32_at(12) == COMPAT),
                    note: None,
                    seen: Some(Seen::now(tid)),
                });
                v
            }
            KIND_EXIT => vec![Event::Exit { tid }],
            _ => Vec::new(),
        }
    }
}

/// The memory a call record carries, as [`Memory::Captured`].
fn captured(p: Pointee, args: &[u64; 6], r: &[u8], len: u16, msg_ok: bool) -> Memory {
    let data = |n: usize| r.get(DATA as usize..DATA as usize + n).map(<[u8]>::to_vec);
    let mut parts = Vec::new();
    match p {
        Pointee::Path(n) if len > 0 => {
            // The length counts the NUL.
            if let Some(b) = data(len as usize - 1) {
                parts.push((args[n], b, true));
            }
        }
        Pointee::Iovecs(n) | Pointee::UringParams(n) if len > 0 => {
            if let Some(b) = data(len as usize) {
                parts.push((args[n], b, false));
            }
        }
        Pointee::Msghdr(n) if msg_ok => {
            let m = r[MSG as usize..MSG as usize + 56].to_vec();
            let iov = u64::from_ne_bytes(m[16..24].try_into().unwrap_or([0; 8]));
            parts.push((args[n], m, false));
            if let Some(b) = data(len as usize).filter(|_| len > 0) {
                parts.push((iov, b, false));
            }
        }
        _ => {}
    }
    Memory::Captured(parts, std::cell::Cell::new(false))
}
