//! `ioprobe trace --tracer preload`: ptrace as the reference path runs it, plus a
//! library (`preload.c`, built by build.rs) that LD_PRELOAD loads into the
//! command. The library makes the command's own read, write, pread, pwrite, lseek,
//! close and open calls through a page it maps at the address ioprobe chose for this
//! trace (the gate), from which the seccomp filter lets calls through without a
//! stop, and records each in a ring shared with ioprobe (a memfd). Every other call
//! stops as under plain ptrace, so the counts stay strace's. This module makes the
//! library's and the ring's memfds and the command's environment, reads the ring,
//! and holds the tracer's preload part ([`Preloaded`]: the loader's and library's own
//! calls, execs given the library, the wait's tick).
//!
//! `ring.rs` is the library and its ring (the layout in `layout.rs`, which build.rs
//! hands to the C compiler), `elf.rs` the check that a program is dynamically linked,
//! `starts.rs` which program starts are given the library, `tick.rs` the wait that
//! blocks as ptrace's does and is interrupted to read the ring.

mod elf;
mod ring;
mod starts;
mod tick;

pub use elf::dynamic;
pub use ring::Preload;
pub(in crate::sys::trace) use starts::Starts;
pub(in crate::sys::trace) use tick::Tick;

use super::calls::Syscall;
use super::ptrace::{Maker, Pending, regs, set_regs, stack_and_envp};
use super::{Event, Memory, Seen};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io;

/// The preload tracer's part of [`Tracer`].
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
            std::thread::sleep(std::time::Duration::from_millis(tick::EVERY_MS as u64));
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

/// The environment array at `envp` in stopped task `tid` (`mem`, its memory): the
/// entries to keep (pointers to the task's own strings), and LD_PRELOAD's value if
/// it has one. Entries of a trace's (IOPROBE_TRACE_…) are dropped.
pub(super) fn environment_of(
    tid: i32,
    mem: &std::fs::File,
    envp: u64,
) -> io::Result<(Vec<u64>, Option<Vec<u8>>)> {
    use std::os::unix::fs::FileExt;
    let mut kept = Vec::new();
    let mut was = None;
    if envp == 0 {
        return Ok((kept, was));
    }
    // The pointers 64 at a time (one read instead of one each); the array may end
    // near the end of its mapping, so a short read is taken as far as it goes.
    let mut block = [0u8; 512];
    let mut have = 0..0u64;
    for i in 0..65536u64 {
        if !have.contains(&i) {
            let n = mem.read_at(&mut block, envp + 8 * i)? / 8;
            if n == 0 {
                return Err(io::Error::other("the environment array is unreadable"));
            }
            have = i..i + n as u64;
        }
        let at = ((i - have.start) * 8) as usize;
        let p = u64::from_ne_bytes(block[at..at + 8].try_into().unwrap_or_default());
        if p == 0 {
            break;
        }
        let mut head = [0u8; 26];
        let n = mem.read_at(&mut head, p).unwrap_or(0);
        let head = &head[..n];
        if head.starts_with(b"LD_PRELOAD=") {
            was = Some(super::live_string(tid, p + 11).unwrap_or_default());
        } else if !head.starts_with(b"IOPROBE_TRACE_RING=")
            && !head.starts_with(b"IOPROBE_TRACE_PRELOAD_WAS=")
        {
            kept.push(p);
        }
    }
    Ok((kept, was))
}

/// Whether `from..to` lies in one mapping of task `tid` (its /proc maps).
pub(super) fn in_one_mapping(tid: i32, from: u64, to: u64) -> io::Result<bool> {
    let maps = std::fs::read_to_string(format!("/proc/{tid}/maps"))?;
    Ok(maps.lines().any(|l| {
        let range = l.split(' ').next().unwrap_or("");
        let mut ends = range
            .split('-')
            .map(|h| u64::from_str_radix(h, 16).unwrap_or(0));
        let (start, end) = (ends.next().unwrap_or(0), ends.next().unwrap_or(0));
        start <= from && to <= end
    }))
}

/// A page-aligned address, from `random`, in a range programs leave alone: above
/// AddressSanitizer's shadow and below where mmap and the stack start (x86_64); in
/// the lower half of a 39-bit address space (aarch64). If the program has something
/// there, the library finds the page taken and every call goes the traced way.
pub(super) fn gate_address(random: u64) -> u64 {
    let (from, span) = if cfg!(target_arch = "x86_64") {
        (0x2000_0000_0000u64, 0x2000_0000_0000u64)
    } else {
        (0x40_0000_0000u64, 0x30_0000_0000u64)
    };
    (from + random % span) & !0xfff
}
