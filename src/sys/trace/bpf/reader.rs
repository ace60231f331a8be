//! The ring's reader thread: it empties the ring as it fills and turns its records into
//! events, handed to the tracer in batches through a bounded channel. Where the profile
//! falls behind, the reader waits, the ring fills and the programs count the records it
//! has no room for ([`super::Ebpf::lost`]): memory stays bounded, whatever the rate
//! and however long the trace, and a loss is said, never silent.

use super::super::calls::{Pointee, Syscall};
use super::super::ptrace::{Maker, made, makers};
use super::super::{Event, Memory, Seen, Timing};
use super::ring::Rings;
use super::{
    AT, COMPAT, DATA, KIND_CALL, KIND_EXEC, KIND_EXIT, KIND_TASK, MSG, NUMBERS, READ_EVERY_MS,
    SMALL,
};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::mpsc::SyncSender;

/// Batches waiting for the profile at most, each of at most [`BATCH`] events (of 112
/// bytes: 1.8 MB): beyond them the reader waits and the ring takes the backlog. Eight
/// absorb a profile held up for a few scheduler slices at 2.5 million calls a second,
/// in at most about 15 MB (18 MB with the two batches in hand).
pub(super) const BACKLOG: usize = 8;

/// The most events handed over at once.
const BATCH: usize = 16 << 10;

/// The reader thread's side: the rings and how to decode their records.
pub(super) struct Reader {
    rings: Rings,
    decoder: Decoder,
}

/// Calls and descriptor makers indexed by their number.
struct Decoder {
    calls: Vec<Option<Syscall>>,
    makers: Vec<Option<Maker>>,
}

// SAFETY: the rings' mappings belong to the Rings alone, and once the Reader is moved
// to its thread nothing else touches them.
unsafe impl Send for Reader {}

impl Reader {
    pub(super) fn new(rings: Rings) -> Reader {
        let mut calls = vec![None; NUMBERS as usize];
        for (nr, c) in super::super::calls::traced() {
            if let Some(slot) = calls.get_mut(nr as usize) {
                *slot = Some(c);
            }
        }
        let mut by_nr = vec![None; NUMBERS as usize];
        for (nr, m) in makers() {
            if let Some(slot) = by_nr.get_mut(nr as usize) {
                *slot = Some(m);
            }
        }
        Reader {
            rings,
            decoder: Decoder {
                calls,
                makers: by_nr,
            },
        }
    }

    /// Until `stop` is written: waits for a wake-up (the ring's, the command's end,
    /// `stop`) or READ_EVERY_MS, empties the ring and sends its events; once more
    /// after `stop`. The command's end is sent as an empty batch, once.
    pub(super) fn run(
        mut self,
        to: SyncSender<Vec<Event>>,
        stop: &OwnedFd,
        pidfd: Option<OwnedFd>,
    ) {
        let fd = |f: Option<&OwnedFd>| libc::pollfd {
            fd: f.map_or(-1, |f| f.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut ended = pidfd.is_none();
        loop {
            let mut p = [
                fd(Some(&self.rings.tasks.fd)),
                fd(Some(stop)),
                fd(pidfd.as_ref().filter(|_| !ended)),
            ];
            // SAFETY: three pollfds on the stack (a negative descriptor is skipped).
            unsafe { libc::poll(p.as_mut_ptr(), 3, READ_EVERY_MS) };
            let last = p[1].revents & libc::POLLIN != 0;
            let end = !ended && p[2].revents & libc::POLLIN != 0;
            ended |= end;
            // Handed over BATCH events at a time, the rings freed as they are read: a
            // full ring waits in the kernel, not in this process.
            let mut batch = Vec::with_capacity(BATCH);
            let mut gone = false;
            let decoder = &self.decoder;
            self.rings.drain(last, |r| {
                if gone {
                    return;
                }
                decoder.decode(r, &mut batch);
                if batch.len() >= BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    gone = to.send(full).is_err();
                }
            });
            if gone || ((end || !batch.is_empty()) && to.send(batch).is_err()) {
                return;
            }
            if last {
                return;
            }
        }
    }
}

impl Decoder {
    /// One record as the events it stands for, pushed to `out`.
    fn decode(&self, r: &[u8], out: &mut Vec<Event>) {
        let i32_at = |at: usize| i32::from_ne_bytes(r[at..at + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |at: usize| u64::from_ne_bytes(r[at..at + 8].try_into().unwrap_or([0; 8]));
        let u16_at = |at: usize| u16::from_ne_bytes(r[at..at + 2].try_into().unwrap_or([0; 2]));
        if r.len() < SMALL as usize {
            return;
        }
        let comm = || {
            let c = &r[16..32];
            let end = c.iter().position(|&b| b == 0).unwrap_or(16);
            Some(String::from_utf8_lossy(&c[..end]).into_owned())
        };
        let tid = i32_at(4);
        match i32_at(0) {
            KIND_CALL => {
                let nr = i32_at(16) as u32;
                let args: [u64; 6] = std::array::from_fn(|i| u64_at(24 + 8 * i));
                let ret = u64_at(72) as i64;
                let Some(call) = self.calls.get(nr as usize).copied().flatten() else {
                    let fds = r
                        .get(DATA as usize..DATA as usize + 8)
                        .filter(|_| u16_at(12) == 8);
                    let maker = self.makers.get(nr as usize).copied().flatten();
                    out.extend(maker.and_then(|m| made(tid, m, &args, ret, fds)));
                    return;
                };
                let mem = captured(call.pointee(), &args, r, u16_at(12), u16_at(14) == 1);
                out.push(Event::Call {
                    tid,
                    call,
                    args,
                    ret,
                    mem,
                    timing: timing(i32_at(AT as usize) as u32, i32_at(8) as u32),
                });
            }
            KIND_TASK => out.push(Event::Task {
                tid,
                parent: i32_at(12),
                pid: Some(i32_at(8)),
                comm: comm(),
            }),
            KIND_EXEC => {
                let old = i32_at(8);
                if old != tid {
                    // A thread exec'd: it took its leader's id and its own ended.
                    out.push(Event::Exit { tid: old });
                    out.push(Event::Task {
                        tid,
                        parent: old,
                        pid: Some(tid),
                        comm: None,
                    });
                }
                out.push(Event::Exec {
                    tid,
                    comm: comm(),
                    program32: Some(i32_at(12) == COMPAT),
                    note: None,
                    seen: Some(Seen::now(tid)),
                });
            }
            KIND_EXIT => out.push(Event::Exit { tid }),
            _ => {}
        }
    }
}

/// A call record's timing: its end and its switches word, whose bit 30 marks a timed
/// call and bit 31 a pair's second.
pub(super) fn timing(ended_ns: u32, switches: u32) -> Option<Timing> {
    (switches & 1 << 30 != 0).then_some(Timing {
        ended_ns,
        switches: switches & ((1 << 30) - 1),
        second: switches >> 31 == 1,
    })
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
