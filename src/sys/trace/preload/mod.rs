//! `ioprobe trace --tracer preload`: ptrace as the reference path runs it, plus a
//! library (`preload.c`, built by build.rs) that LD_PRELOAD loads into the
//! command. The library makes the command's own read, write, pread, pwrite, lseek,
//! close and open calls through a page it maps at the address ioprobe chose for this
//! trace (the gate), from which the seccomp filter lets calls through without a
//! stop, and records each in a ring shared with ioprobe (a memfd). Every other call
//! stops as under plain ptrace, so the counts stay strace's. This module makes the
//! library's and the ring's memfds and the command's environment, reads the ring,
//! and gives the ptrace tracer what its preload part needs (`ptrace/preloaded.rs`: the
//! loader's and library's own calls, execs given the library, the wait's tick).
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
pub(in crate::sys::trace) use tick::{EVERY_MS, Tick};

use std::io;

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
