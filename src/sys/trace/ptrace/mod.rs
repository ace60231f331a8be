//! `ioprobe trace` on Linux: the command runs as a ptrace tracee (seized before its
//! exec) under a seccomp filter that stops it only at the I/O-relevant system calls
//! (SECCOMP_RET_TRACE), so every other call runs at full speed. At each stop,
//! PTRACE_GET_SYSCALL_INFO (Linux 5.3+) gives the number and arguments; the tracee is
//! then run to the syscall-exit stop for the return value. Forks, vforks, clones and
//! execs are followed (PTRACE_O_TRACE*). This module turns all of it into a stream of
//! [`Event`]s and keeps every `unsafe` of tracing.

//!
//! `child.rs` starts the command, `filter.rs` is the seccomp filter (and the calls that
//! make descriptors, which the preload and eBPF tracers watch), `regs.rs` the ptrace
//! requests and registers, `signals.rs` what ioprobe does with the signals meant for
//! the command.

mod attach;
mod child;
mod filter;
mod preloaded;
mod regs;
mod signals;
mod spawn;

pub(super) use child::{Child, c_args, child_error, exec_path, pipe};
pub(super) use filter::{Maker, made, makers};
pub(super) use regs::{ip_and_result, os, ptrace, regs, set_regs, stack_and_envp};
pub use signals::stdio_closed_at_start;

use super::calls::Syscall;
use super::calls::traced;
use super::procfs::comm as comm_of;
use super::{Ended, Event, Memory, Seen};
use preloaded::Preloaded;
use regs::syscall_info;
use signals::exec_note;
use std::collections::{HashMap, HashSet, VecDeque};
use std::io;

/// Signals ioprobe leaves to the terminal (it sends them to the command's process
/// group itself) and signals it passes on to the command.
pub(super) const LEFT_TO_TERMINAL: [i32; 2] = [libc::SIGINT, libc::SIGQUIT];
pub(super) const PASSED_ON: [i32; 2] = [libc::SIGTERM, libc::SIGHUP];

/// The signal passed on to the command (0: none yet): the trace loop passes it on to
/// every other traced task too, so that a shell's children do not outlive it.
pub(super) static PASSED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The traced command's pid, for the signal handlers (0 before it is started).
pub(super) static MAIN: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Whether a stop (its signal and ptrace event) is a fork, vfork or clone: a new task
/// is attached and its id is the event message.
pub(super) fn new_task_event(sig: i32, event: i32) -> bool {
    sig == libc::SIGTRAP
        && [
            libc::PTRACE_EVENT_FORK,
            libc::PTRACE_EVENT_VFORK,
            libc::PTRACE_EVENT_CLONE,
        ]
        .contains(&event)
}

/// The traced command and the state of its tasks.
pub struct Ptrace {
    main: i32,
    ended: Option<Ended>,
    /// Tasks seen.
    known: HashSet<i32>,
    /// Calls stopped at seccomp, waiting for their exit stop.
    pending: HashMap<i32, Pending>,
    /// The traced calls by number: each is decoded here, once.
    calls: HashMap<u64, Syscall>,
    /// The task held at its syscall-exit stop while the caller looks at the call (its
    /// memory, its /proc/PID/fd), resumed by the next [`Ptrace::next_event`].
    held: Option<i32>,
    /// The preload library's ring and what goes with it (None: plain ptrace).
    preload: Option<Box<Preloaded>>,
    /// Events to hand out in this order: the ring's calls, then the stop's event.
    queue: VecDeque<Event>,
    /// Calls handed out from stops (not from the ring).
    stopped_calls: u64,
    /// The signal passed on to the command (0: none): a task first seen later gets
    /// it too.
    passed: i32,
    /// What the command's own program is, noted at its exec stop ([`exec_note`]).
    first_note: Option<String>,
    /// The command ioprobe started, or processes attached to.
    mode: Mode,
}

/// How the tracer holds its tasks.
pub(super) enum Mode {
    /// The command ioprobe started: it stops only at the calls its seccomp filter
    /// traces, and the trace ends with it and its tasks.
    Spawned,
    /// Attached to running processes (`trace --pid`): every call stops, at its entry
    /// and its exit (PTRACE_SYSCALL: a running process cannot be given a seccomp
    /// filter), and the trace ends by detaching, when the window ends or `roots` (the
    /// processes attached to that have not ended) is empty. `entries`: the system
    /// calls stopped at, traced or not.
    Attached { roots: HashSet<i32>, entries: u64 },
}

/// A call stopped at its seccomp stop, until its exit.
pub(super) enum Pending {
    /// Counted.
    Call(Syscall, [u64; 6]),
    /// A descriptor maker (preload): not counted, what it made is told.
    Maker(Maker, [u64; 6]),
    /// The dynamic loader's open of the preload library: not the command's; its
    /// descriptor is left out of what follows. (The library's other calls stop only
    /// at their entry.)
    OwnOpen,
    /// An exec (preload) given the library in its environment: the environment
    /// array it passed, put back if the exec fails.
    Exec { at: bool, envp: u64 },
}

impl Ptrace {
    /// A tracer of `main`'s tasks, none of them known yet.
    pub(super) fn new(main: i32, mode: Mode, preload: Option<Box<Preloaded>>) -> Ptrace {
        Ptrace {
            main,
            ended: None,
            known: HashSet::new(),
            pending: HashMap::new(),
            calls: traced().into_iter().collect(),
            held: None,
            preload,
            queue: VecDeque::new(),
            stopped_calls: 0,
            passed: 0,
            first_note: None,
            mode,
        }
    }

    /// Whether the tracer attached to running processes.
    fn attached(&self) -> bool {
        matches!(self.mode, Mode::Attached { .. })
    }

    /// The traced command's pid.
    pub fn pid(&self) -> i32 {
        self.main
    }

    /// How the command ended, once [`Ptrace::next_event`] has returned None.
    pub fn ended(&self) -> Option<Ended> {
        self.ended
    }

    /// The command's own exec, which happened while it was being started: under
    /// preload with what it had then (its descriptors, its working directory).
    pub fn first_exec(&mut self) -> Event {
        let seen = self.preload.as_mut().and_then(|p| p.first.take());
        let comm = seen.as_ref().and_then(|_| comm_of(self.main));
        Event::Exec {
            tid: self.main,
            comm,
            program32: None,
            note: self.first_note.take(),
            seen,
        }
    }

    /// Calls handed out from stops (under preload, the rest came from the ring).
    pub fn stopped_calls(&self) -> u64 {
        self.stopped_calls
    }

    /// Preload: calls missing because their task died between taking a ring slot
    /// and making the call.
    pub fn lost(&self) -> u64 {
        self.preload.as_ref().map_or(0, |p| p.ring.lost())
    }

    /// Preload: calls the library recorded, made without a stop.
    pub fn unstopped_calls(&self) -> u64 {
        self.preload.as_ref().map_or(0, |p| p.ring.calls_read())
    }

    /// Program starts under preload that ran without the library ([`preload::Starts`]).
    pub fn plain_starts(&self) -> u64 {
        self.preload.as_ref().map_or(0, |p| p.starts.plain)
    }

    /// Resumes `tid` after a stop, delivering `sig`: to its next traced call's stop
    /// (attached: to its next system call).
    fn go(&self, tid: i32, sig: i32) -> io::Result<()> {
        let request = if self.attached() {
            libc::PTRACE_SYSCALL
        } else {
            libc::PTRACE_CONT
        };
        self.resume(request, tid, sig)
    }

    /// Resumes `tid` with `request`, delivering `sig`; a task that vanished meanwhile
    /// (killed) is not an error.
    fn resume(&self, request: libc::c_uint, tid: i32, sig: i32) -> io::Result<()> {
        match ptrace(request, tid, 0, sig as usize) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            r => r.map(|_| ()).map_err(os("ptrace(resume)")),
        }
    }

    /// The next event, or None when no traced task is left. After a [`Event::Call`],
    /// its task stays stopped until this is called again, so that its memory
    /// ([`Memory::Live`]) and descriptors can be read.
    ///
    /// Under preload, the calls the ring holds come before each event: a task's
    /// calls are in the ring before its next stop or its end, so each task's calls
    /// stay in the order it made them.
    pub fn next_event(&mut self) -> io::Result<Option<Event>> {
        if let Some(e) = self.queue.pop_front() {
            return Ok(Some(e));
        }
        if let Some(t) = self.held.take() {
            self.go(t, 0)?;
        }
        loop {
            if self.attached() && (super::attach::ending().is_some() || self.roots_gone()) {
                self.detach_all()?;
                return Ok(None);
            }
            let Some((tid, status)) = self.wait()? else {
                if let Some(p) = &mut self.preload {
                    p.ring.finish(&mut self.queue);
                    p.quiet();
                }
                return Ok(self.queue.pop_front());
            };
            if tid == 0 {
                // Preload: calls read from the ring while no task stopped.
                match self.queue.pop_front() {
                    Some(e) => return Ok(Some(e)),
                    None => continue,
                }
            }
            let exited = libc::WIFEXITED(status) || libc::WIFSIGNALED(status);
            let event = if exited {
                Some(self.exited(tid, status))
            } else if libc::WIFSTOPPED(status) {
                self.stopped(tid, status)?
            } else {
                None
            };
            let Some(e) = event else { continue };
            let Some(p) = &mut self.preload else {
                return Ok(Some(e));
            };
            p.ring.read(&mut self.queue);
            if exited {
                p.ring.ended(tid, &mut self.queue);
                p.own.retain(|&(t, _)| t != tid);
                p.loading.remove(&tid);
                let calls = p.ring.take_calls(tid);
                p.starts.ended(tid, calls);
            }
            self.queue.push_back(e);
            return Ok(self.queue.pop_front());
        }
    }

    /// The next task whose state changed and its wait status (None: no traced task
    /// is left), passing on a signal ioprobe was sent to every traced task. Under
    /// preload, while no task changes state, the ring is read as the command runs
    /// (so that its calls are not all left to read when it ends): Some((0, 0)) when
    /// that queued calls.
    fn wait(&mut self) -> io::Result<Option<(i32, i32)>> {
        loop {
            let mut status = 0;
            let tid = match &self.preload {
                Some(p) => match &p.tick {
                    Some(t) => t.wait(&mut status),
                    // SAFETY: waitpid writes the status into a local integer.
                    None => unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) },
                },
                // SAFETY: as above.
                None => unsafe { libc::waitpid(-1, &mut status, libc::__WALL) },
            };
            let failed = (tid == -1).then(io::Error::last_os_error);
            let interrupted = failed
                .as_ref()
                .is_some_and(|e| e.raw_os_error() == Some(libc::EINTR));
            // Preload: no task changed state (WNOHANG) or the tick interrupted the wait:
            // the ring is read (an interruption then goes on as any other below).
            if (tid == 0 || interrupted)
                && let Some(p) = &mut self.preload
            {
                if p.idle(&mut self.queue) {
                    return Ok(Some((0, 0)));
                }
                if tid == 0 {
                    continue;
                }
            }
            let sig = PASSED.swap(0, std::sync::atomic::Ordering::Relaxed);
            if sig != 0 {
                self.passed = sig;
                for &t in &self.known {
                    // SAFETY: kill(2) on a task this process traces (still reserved).
                    unsafe { libc::kill(t, sig) };
                }
            }
            let Some(e) = failed else {
                return Ok(Some((tid, status)));
            };
            match e.raw_os_error() {
                Some(libc::EINTR) if self.attached() && super::attach::ending().is_some() => {
                    return Ok(Some((0, 0)));
                }
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(e).map_err(os("waitpid")),
            }
        }
    }

    /// Task `tid` is traced; one first seen after a signal was passed on gets it too.
    fn learn(&mut self, tid: i32) {
        if self.known.insert(tid) && self.passed != 0 {
            // SAFETY: kill(2) on a task this process traces.
            unsafe { libc::kill(tid, self.passed) };
        }
    }

    /// A task ended (the command's own end is how the trace ends).
    fn exited(&mut self, tid: i32, status: i32) -> Event {
        self.known.remove(&tid);
        self.pending.remove(&tid);
        if let Mode::Attached { roots, .. } = &mut self.mode {
            roots.remove(&tid);
        }
        if tid == self.main {
            self.ended = Some(if libc::WIFEXITED(status) {
                Ended::Code(libc::WEXITSTATUS(status))
            } else {
                Ended::Signal(libc::WTERMSIG(status))
            });
        }
        Event::Exit { tid }
    }

    /// A task stopped: a group-stop or a new task's first stop, a traced call's entry
    /// or exit, a fork or exec, or a signal to deliver. Some: what the caller sees.
    fn stopped(&mut self, tid: i32, status: i32) -> io::Result<Option<Event>> {
        let sig = libc::WSTOPSIG(status);
        let event = status >> 16;
        self.learn(tid);
        if event == libc::PTRACE_EVENT_STOP {
            if [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&sig) {
                // A group-stop: the task stays stopped (its parent sees it stopped)
                // until a SIGCONT, as untraced.
                self.resume(libc::PTRACE_LISTEN, tid, 0)?;
            } else {
                // A new task's first stop, or the wake-up after a group-stop.
                self.go(tid, 0)?;
            }
            return Ok(None);
        }
        if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_SECCOMP {
            return self.seccomp_stop(tid).map(|()| None);
        }
        if sig == libc::SIGTRAP | 0x80 {
            return self.syscall_stop(tid);
        }
        if new_task_event(sig, event) {
            return self.new_task(tid).map(Some);
        }
        if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_EXEC {
            let given = matches!(self.pending.remove(&tid), Some(Pending::Exec { .. }));
            // Under preload the profile reads calls a little late, as the eBPF
            // tracer's: what the program started with is looked at now.
            let (comm, seen) = match &mut self.preload {
                Some(p) => {
                    p.ring.read(&mut self.queue);
                    let calls = p.ring.take_calls(tid);
                    p.starts.started(tid, calls);
                    p.own.retain(|&(t, _)| t != tid);
                    if given {
                        p.loading.insert(tid);
                    } else {
                        p.loading.remove(&tid);
                    }
                    (comm_of(tid), Some(Seen::now(tid)))
                }
                None => (None, None),
            };
            // Looked at while the task is stopped: a short program (a 32-bit one runs
            // untraced to its end) may have left /proc by the time the event is read.
            let note = exec_note(tid);
            self.go(tid, 0)?;
            return Ok(Some(Event::Exec {
                tid,
                comm,
                program32: None,
                note,
                seen,
            }));
        }
        // Another ptrace event goes on; a signal for the task (under PTRACE_SEIZE
        // group-stops come as PTRACE_EVENT_STOP above) is delivered.
        let deliver = if sig == libc::SIGTRAP && event != 0 {
            0
        } else {
            sig
        };
        if deliver != 0
            && let Some(p) = &mut self.preload
            && let Ok(r) = regs(tid)
        {
            // A signal that may end the task as it returns from a call through the
            // gate (SIGPIPE after a write): the call's result, from its register.
            let (ip, ret) = ip_and_result(&r);
            p.ring.signalled(tid, ip, ret);
        }
        self.go(tid, deliver)?;
        Ok(None)
    }

    /// A seccomp stop: a traced call's entry, kept until its exit stop.
    fn seccomp_stop(&mut self, tid: i32) -> io::Result<()> {
        let (_, nr, args, _) = syscall_info(tid)?;
        // The filter stops only at the traced calls: every number is known.
        let pending = match (self.calls.get(&nr), &mut self.preload) {
            (Some(&call), Some(p)) if p.own(tid, call, &args) => {
                // Only an open's result matters (the descriptor to leave out later):
                // the library's other calls go on without a stop at their exit (8
                // fewer stops per program the library is loaded into).
                if !matches!(call, Syscall::Openat | Syscall::Open) {
                    p.own_at_entry(tid, call, &args);
                    return self.go(tid, 0);
                }
                Some(Pending::OwnOpen)
            }
            (Some(&call), _) => Some(Pending::Call(call, args)),
            (None, Some(p)) if nr == libc::SYS_execve as u64 => p.exec(tid, false, &args),
            (None, Some(p)) if nr == libc::SYS_execveat as u64 => p.exec(tid, true, &args),
            (None, Some(p)) => p.makers.get(&nr).map(|&m| Pending::Maker(m, args)),
            (None, None) => None,
        };
        if let Some(p) = pending {
            self.pending.insert(tid, p);
        }
        self.resume(libc::PTRACE_SYSCALL, tid, 0)
    }

    /// A syscall stop: at a traced call's exit, the call (its task held stopped).
    fn syscall_stop(&mut self, tid: i32) -> io::Result<Option<Event>> {
        let (op, _, _, ret) = syscall_info(tid)?;
        if op == libc::PTRACE_SYSCALL_INFO_ENTRY
            && let Mode::Attached { entries, .. } = &mut self.mode
        {
            // Attached, every call stops at its entry: the traced ones are kept.
            *entries += 1;
            return self.seccomp_stop(tid).map(|()| None);
        }
        if op != libc::PTRACE_SYSCALL_INFO_EXIT {
            self.resume(libc::PTRACE_SYSCALL, tid, 0)?;
            return Ok(None);
        }
        match self.pending.remove(&tid) {
            Some(Pending::Call(call, args)) => {
                self.held = Some(tid);
                self.stopped_calls += 1;
                return Ok(Some(Event::Call {
                    tid,
                    call,
                    args,
                    ret,
                    timing: None,
                    mem: super::Memory::Live(tid),
                }));
            }
            Some(Pending::OwnOpen) => {
                if let Some(p) = &mut self.preload
                    && ret >= 0
                {
                    p.own.insert((tid, ret as i32));
                }
            }
            Some(Pending::Maker(m, args)) => {
                let pair = match m {
                    Maker::Pair(n, _) => Memory::Live(tid).peek(args[n], 8),
                    _ => None,
                };
                let made = made(tid, m, &args, ret, pair.as_deref());
                self.go(tid, 0)?;
                return Ok(made);
            }
            Some(Pending::Exec { at, envp }) => {
                // The exec failed (one that succeeds ends at its exec event): the
                // register gets back the array the program passed.
                if let Ok(mut r) = regs(tid) {
                    *stack_and_envp(&mut r, at).1 = envp;
                    set_regs(tid, &r)?;
                }
            }
            None => {}
        }
        self.go(tid, 0)?;
        Ok(None)
    }

    /// A fork, vfork or clone by `tid`: the new task, traced from its start.
    fn new_task(&mut self, tid: i32) -> io::Result<Event> {
        let mut msg: libc::c_ulong = 0;
        ptrace(
            libc::PTRACE_GETEVENTMSG,
            tid,
            0,
            &mut msg as *mut _ as usize,
        )
        .map_err(os("ptrace(PTRACE_GETEVENTMSG)"))?;
        let child = msg as i32;
        self.learn(child);
        // Under preload the profile follows descriptors across forks itself, as
        // under eBPF: it needs the new task's process.
        let pid = self
            .preload
            .as_ref()
            .and_then(|_| super::procfs::tgid(child));
        self.go(tid, 0)?;
        Ok(Event::Task {
            tid: child,
            parent: tid,
            pid,
            comm: pid.and_then(|_| comm_of(tid)),
        })
    }
}
