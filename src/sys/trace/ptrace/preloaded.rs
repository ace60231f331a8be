//! The preload tracer's part of the ptrace tracer: the ring read while tasks run, the
//! loader's and the library's own calls told from the program's, and the library
//! given to the programs a task execs.

use super::super::calls::Syscall;
use super::super::preload::{EVERY_MS, Preload, Starts, Tick, dynamic};
use super::super::{Event, Memory, Seen};
use super::regs::{regs, set_regs, stack_and_envp};
use super::{Maker, Pending};
use std::collections::{HashMap, HashSet, VecDeque};

/// The preload tracer's part of [`Ptrace`](super::Ptrace).
pub(in crate::sys::trace) struct Preloaded {
    pub(in crate::sys::trace) ring: Preload,
    /// The wait interrupted every few ms to read the ring ([`Tick`]); None where it
    /// cannot be set up (the tracer then polls).
    pub(in crate::sys::trace) tick: Option<Tick>,
    pub(in crate::sys::trace) makers: HashMap<u64, Maker>,
    /// (task, descriptor) open on the library or the ring.
    pub(in crate::sys::trace) own: HashSet<(i32, i32)>,
    /// Tasks given the library whose loader has not yet mapped its gate: only their
    /// opens may be of the library (the path is read from the task to tell).
    pub(in crate::sys::trace) loading: HashSet<i32>,
    /// The command's descriptors and working directory at its exec.
    pub(in crate::sys::trace) first: Option<Seen>,
    /// Which later program starts are given the library.
    pub(in crate::sys::trace) starts: Starts,
}

impl Drop for Preloaded {
    fn drop(&mut self) {
        self.quiet();
    }
}

impl Preloaded {
    /// No task changed state: the ring's new calls into `queue` (true when there
    /// were some), else (without a [`Tick`]) a sleep of a tick's period.
    pub(in crate::sys::trace) fn idle(&mut self, queue: &mut VecDeque<Event>) -> bool {
        let before = queue.len();
        self.ring.read(queue);
        if queue.len() > before {
            return true;
        }
        if self.tick.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(EVERY_MS as u64));
        }
        false
    }

    /// The trace is over: the timer stopped, its signal as it was.
    pub(in crate::sys::trace) fn quiet(&mut self) {
        self.tick = None;
    }

    /// Whether `call` by `tid` is on the trace's own files (opening them, or using
    /// a descriptor of theirs); `tid` is stopped at the call's entry.
    pub(in crate::sys::trace) fn own(&self, tid: i32, call: Syscall, args: &[u64; 6]) -> bool {
        let fd = match call {
            Syscall::Openat | Syscall::Open if self.loading.contains(&tid) => {
                let at = call.path_arg().unwrap_or(1);
                return Memory::Live(tid)
                    .string(args[at])
                    .is_some_and(|p| self.ring.is_own(&p));
            }
            // The gate's page, mapped by the library's constructor.
            Syscall::Mmap | Syscall::Munmap if args[0] == self.ring.gate() => return true,
            Syscall::Mmap => args[4],
            Syscall::Read
            | Syscall::Pread64
            | Syscall::Fstat
            | Syscall::Newfstatat
            | Syscall::Lseek
            | Syscall::Close => args[0],
            _ => return false,
        };
        !self.own.is_empty() && self.own.contains(&(tid, fd as i32))
    }

    /// What an own call other than an open changes, seen at its entry: a close
    /// forgets the descriptor (one that fails had nothing to forget), the gate's mmap
    /// ends the loading (the library is loaded; should the mmap fail, its calls stop
    /// as any other, and nothing else is taken for its own).
    pub(in crate::sys::trace) fn own_at_entry(&mut self, tid: i32, call: Syscall, args: &[u64; 6]) {
        match call {
            Syscall::Close => {
                self.own.remove(&(tid, args[0] as i32));
            }
            Syscall::Mmap if args[0] == self.ring.gate() => {
                self.loading.remove(&tid);
            }
            _ => {}
        }
    }

    /// An execve (`at`: execveat) by stopped `tid`: when its program is dynamically
    /// linked and worth it ([`Starts`]), the library is added to the environment it passes, as to the command's
    /// own (the library removes it again before the program's code runs). The
    /// environment array it passed, or None (not changed).
    pub(in crate::sys::trace) fn exec(
        &mut self,
        tid: i32,
        at: bool,
        args: &[u64; 6],
    ) -> Option<Pending> {
        const AT_FDCWD: i32 = -100;
        let (dir, path) = if at {
            (args[0] as i32, args[1])
        } else {
            (AT_FDCWD, args[0])
        };
        let path = Memory::Live(tid).string(path)?;
        let target = if path.starts_with('/') {
            path
        } else if path.is_empty() {
            format!("/proc/{tid}/fd/{dir}")
        } else if dir == AT_FDCWD {
            format!("/proc/{tid}/cwd/{path}")
        } else {
            format!("/proc/{tid}/fd/{dir}/{path}")
        };
        dynamic(std::path::Path::new(&target)).ok()?;
        let file = std::fs::metadata(&target).ok()?;
        let program = (
            std::os::unix::fs::MetadataExt::dev(&file),
            std::os::unix::fs::MetadataExt::ino(&file),
        );
        if !self.starts.give(tid, program) {
            return None;
        }
        let mut r = regs(tid).ok()?;
        let (sp, envp) = stack_and_envp(&mut r, at);
        let old = *envp;
        *envp = self.ring.exec_environment(tid, old, sp).ok()?;
        set_regs(tid, &r).ok()?;
        Some(Pending::Exec { at, envp: old })
    }
}
