//! ptrace attached to running processes (`trace --pid`): every thread seized
//! (PTRACE_SEIZE, then PTRACE_INTERRUPT to take it to its first stop), new tasks
//! followed as under `spawn`, and every call stopped at (PTRACE_SYSCALL: a seccomp
//! filter cannot be given to a running process). Never PTRACE_O_EXITKILL: if ioprobe
//! dies, even by SIGKILL, the kernel detaches and the processes run on.
//!
//! Detaching leaves each task as it was: each is interrupted and detached at its next
//! stop; a signal it was about to receive is delivered with the detach, a task in a
//! group-stop stays stopped (the kernel keeps it), a task it started meanwhile is
//! detached at its first stop.

use super::super::attach::Target;
use super::regs::{os, ptrace};
use super::{Mode, Ptrace};
use std::collections::HashSet;
use std::io;

impl Ptrace {
    /// Attaches to every thread of `targets` (checked by `attach::check`): the tasks
    /// run on at once, stopping at each system call. Err: a thread could not be seized
    /// (those already seized are detached again).
    pub fn attach(targets: &[Target]) -> io::Result<Ptrace> {
        let mode = Mode::Attached {
            roots: targets.iter().map(|x| x.pid).collect(),
            entries: 0,
        };
        let mut t = Ptrace::new(targets.first().map_or(0, |t| t.pid), mode, None);
        let opts = libc::PTRACE_O_TRACESYSGOOD
            | libc::PTRACE_O_TRACEFORK
            | libc::PTRACE_O_TRACEVFORK
            | libc::PTRACE_O_TRACECLONE
            | libc::PTRACE_O_TRACEEXEC;
        for target in targets {
            // Threads started while the list was read were seized with their creator
            // (PTRACE_O_TRACECLONE) or show in the next reading.
            loop {
                let new: Vec<i32> = super::super::attach::threads(target.pid)
                    .into_iter()
                    .filter(|tid| !t.known.contains(tid))
                    .collect();
                if new.is_empty() {
                    break;
                }
                for tid in new {
                    match ptrace(libc::PTRACE_SEIZE, tid, 0, opts as usize) {
                        Ok(_) => {}
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                        Err(e) => {
                            let _ = t.detach_all();
                            return Err(e).map_err(os("ptrace(PTRACE_SEIZE)"));
                        }
                    }
                    t.known.insert(tid);
                    if let Err(e) = ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0)
                        && e.raw_os_error() != Some(libc::ESRCH)
                    {
                        let _ = t.detach_all();
                        return Err(e).map_err(os("ptrace(PTRACE_INTERRUPT)"));
                    }
                }
            }
            if !t.known.contains(&target.pid) {
                let _ = t.detach_all();
                return Err(io::Error::other(format!(
                    "pid {} ended before it could be attached to",
                    target.pid
                )));
            }
        }
        Ok(t)
    }

    /// System calls stopped at while attached, traced or not.
    pub fn entries(&self) -> u64 {
        match self.mode {
            Mode::Attached { entries, .. } => entries,
            Mode::Spawned => 0,
        }
    }

    /// Every attached process has ended.
    pub(super) fn roots_gone(&self) -> bool {
        matches!(&self.mode, Mode::Attached { roots, .. } if roots.is_empty())
    }

    /// Detaches from every task: each is interrupted, then detached at its next stop
    /// with the signal that stop was delivering. Tasks started meanwhile are detached
    /// at their first stop.
    pub(super) fn detach_all(&mut self) -> io::Result<()> {
        if let Some(tid) = self.held.take() {
            self.detach(tid, 0);
        }
        let mut waiting: HashSet<i32> = HashSet::new();
        for &tid in &self.known {
            // An error: gone, or already detached above.
            if ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0).is_ok() {
                waiting.insert(tid);
            }
        }
        self.known.clear();
        self.pending.clear();
        while !waiting.is_empty() {
            let (tid, status) = match wait_any() {
                Ok(Some(x)) => x,
                Ok(None) => break,
                Err(e) => return Err(e),
            };
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                waiting.remove(&tid);
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            let event = status >> 16;
            if super::new_task_event(sig, event) {
                // Its new task was attached by the kernel: detached at its first stop.
                let mut msg: libc::c_ulong = 0;
                if ptrace(
                    libc::PTRACE_GETEVENTMSG,
                    tid,
                    0,
                    &mut msg as *mut _ as usize,
                )
                .is_ok()
                {
                    waiting.insert(msg as i32);
                }
            }
            // A signal-delivery stop delivers its signal with the detach; any other
            // stop (the interrupt, a call's entry or exit, an event, a group-stop,
            // which the kernel keeps) detaches with none.
            let deliver = if event == 0 && sig != (libc::SIGTRAP | 0x80) {
                sig
            } else {
                0
            };
            self.detach(tid, deliver);
            waiting.remove(&tid);
        }
        Ok(())
    }

    /// PTRACE_DETACH of a stopped task, delivering `sig`.
    fn detach(&self, tid: i32, sig: i32) {
        let _ = ptrace(libc::PTRACE_DETACH, tid, 0, sig as usize);
    }
}

/// The next tracee to change state (EINTR retried): None when none is left.
fn wait_any() -> io::Result<Option<(i32, i32)>> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if tid != -1 {
            return Ok(Some((tid, status)));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ECHILD) => return Ok(None),
            _ => return Err(e).map_err(os("waitpid")),
        }
    }
}
