//! A file copy through io_uring (the io-uring crate): `depth` buffers, each cycling
//! read → write at its own offset, optionally with registered (fixed) buffers.
//!
//! Every submitted operation is reaped before `copy` returns, on success and on error,
//! so the kernel never touches a buffer after it could be freed.

use crate::sys::buffer::AlignedBuf;
use crate::sys::calls::{SysError, SysResult};
use io_uring::{IoUring, opcode, types};
use rustix::fd::{AsRawFd, OwnedFd};

fn err(call: &'static str, e: std::io::Error) -> SysError {
    SysError {
        call,
        errno: e.raw_os_error().unwrap_or(0),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    Read,
    Write,
}

#[derive(Clone, Copy)]
struct Slot {
    phase: Phase,
    off: u64,
    len: usize,
    done: usize,
}

/// One copy's progress: the slots, the next offset to read, operations in flight and
/// completed, and the first error (after which nothing new is submitted).
struct Pass {
    slots: Vec<Slot>,
    next: u64,
    inflight: usize,
    ops: u64,
    err: Option<SysError>,
}

/// An io_uring with its buffers. Field order matters: the ring is dropped first.
pub struct UringCopy {
    ring: IoUring,
    bufs: Vec<AlignedBuf>,
    registered: bool,
}

impl UringCopy {
    /// A ring of `depth` entries with `depth` buffers of `buf_size` bytes (registered
    /// with the kernel when `registered`).
    pub fn new(depth: u32, buf_size: usize, registered: bool) -> SysResult<UringCopy> {
        let ring = IoUring::new(depth.max(1)).map_err(|e| err("io_uring_setup", e))?;
        let mut bufs: Vec<AlignedBuf> = (0..depth).map(|_| AlignedBuf::new(buf_size)).collect();
        if registered {
            let iov: Vec<libc::iovec> = bufs
                .iter_mut()
                .map(|b| libc::iovec {
                    iov_base: b.as_mut_slice().as_mut_ptr().cast(),
                    iov_len: b.len(),
                })
                .collect();
            // SAFETY: the iovecs describe buffers owned by the returned value, which are
            // never reallocated or freed while the ring (dropped first) exists.
            unsafe { ring.submitter().register_buffers(&iov) }
                .map_err(|e| err("io_uring_register(BUFFERS)", e))?;
        }
        Ok(UringCopy {
            ring,
            bufs,
            registered,
        })
    }

    /// Copies `size` bytes from `src` to `dst` (same offsets); returns the number of
    /// read and write operations completed.
    pub fn copy(
        &mut self,
        src: &OwnedFd,
        dst: &OwnedFd,
        size: u64,
        stop: &dyn Fn() -> bool,
    ) -> SysResult<u64> {
        let mut p = Pass {
            slots: vec![
                Slot {
                    phase: Phase::Idle,
                    off: 0,
                    len: 0,
                    done: 0,
                };
                self.bufs.len()
            ],
            next: 0,
            inflight: 0,
            ops: 0,
            err: None,
        };
        loop {
            if p.err.is_none() && stop() {
                // Interrupted: submit nothing more, reap what is in flight, then return.
                p.err = Some(SysError {
                    call: "io_uring copy",
                    errno: libc::EINTR,
                });
            }
            if p.err.is_none() {
                self.start_idle(&mut p, src, dst, size);
            }
            if p.inflight == 0 {
                break;
            }
            if let Err(e) = self.ring.submit_and_wait(1) {
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                // Cannot wait: the in-flight operations would outlive their buffers.
                // io_uring_enter only fails like this on a broken ring; stop hard.
                std::process::abort();
            }
            let done: Vec<(u64, i32)> = self
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result()))
                .collect();
            for (ud, res) in done {
                self.completed(&mut p, ud as usize, res, src, dst);
            }
        }
        match p.err {
            Some(e) => Err(e),
            None => Ok(p.ops),
        }
    }

    /// Starts a read in every idle slot while bytes remain.
    fn start_idle(&mut self, p: &mut Pass, src: &OwnedFd, dst: &OwnedFd, size: u64) {
        for i in 0..p.slots.len() {
            if p.slots[i].phase != Phase::Idle || p.next >= size {
                continue;
            }
            let len = (size - p.next).min(self.bufs[i].len() as u64) as usize;
            p.slots[i] = Slot {
                phase: Phase::Read,
                off: p.next,
                len,
                done: 0,
            };
            p.next += len as u64;
            let slot = p.slots[i];
            if let Err(e) = self.submit(i, &slot, src, dst) {
                p.err = Some(e);
                p.slots[i].phase = Phase::Idle;
                break;
            }
            p.inflight += 1;
        }
    }

    /// Slot `i`'s operation completed with `res`: a short read or write goes on, a
    /// finished read becomes the write, a finished write frees the slot.
    fn completed(&mut self, p: &mut Pass, i: usize, res: i32, src: &OwnedFd, dst: &OwnedFd) {
        p.inflight -= 1;
        p.ops += 1;
        let s = &mut p.slots[i];
        let call = if s.phase == Phase::Read {
            "io_uring read"
        } else {
            "io_uring write"
        };
        if res <= 0 {
            let errno = if res < 0 { -res } else { libc::EIO };
            p.err.get_or_insert(SysError { call, errno });
            s.phase = Phase::Idle;
            return;
        }
        s.done += res as usize;
        if s.done == s.len {
            s.done = 0;
            s.phase = if s.phase == Phase::Read {
                Phase::Write
            } else {
                Phase::Idle
            };
        }
        if s.phase == Phase::Idle || p.err.is_some() {
            s.phase = Phase::Idle;
            return;
        }
        let slot = *s;
        match self.submit(i, &slot, src, dst) {
            Ok(()) => p.inflight += 1,
            Err(e) => {
                p.err.get_or_insert(e);
                p.slots[i].phase = Phase::Idle;
            }
        }
    }

    /// Queues slot `i`'s next operation (the rest of its read or write).
    fn submit(&mut self, i: usize, s: &Slot, src: &OwnedFd, dst: &OwnedFd) -> SysResult<()> {
        let buf = self.bufs[i].as_mut_slice()[s.done..s.len].as_mut_ptr();
        let len = (s.len - s.done) as u32;
        let off = s.off + s.done as u64;
        let entry = match (s.phase, self.registered) {
            (Phase::Read, false) => opcode::Read::new(types::Fd(src.as_raw_fd()), buf, len)
                .offset(off)
                .build(),
            (Phase::Read, true) => {
                opcode::ReadFixed::new(types::Fd(src.as_raw_fd()), buf, len, i as u16)
                    .offset(off)
                    .build()
            }
            (_, false) => opcode::Write::new(types::Fd(dst.as_raw_fd()), buf, len)
                .offset(off)
                .build(),
            (_, true) => opcode::WriteFixed::new(types::Fd(dst.as_raw_fd()), buf, len, i as u16)
                .offset(off)
                .build(),
        }
        .user_data(i as u64);
        // SAFETY: the buffer belongs to `self.bufs[i]`, is not touched by us until this
        // operation's completion is reaped (the slot is busy), and `copy` reaps every
        // submitted operation before returning; the descriptors outlive the call.
        let pushed = unsafe { self.ring.submission().push(&entry) };
        if pushed.is_err() {
            return Err(SysError {
                call: "io_uring submission queue",
                errno: libc::EBUSY,
            });
        }
        // Submitted by the next submit_and_wait, together with its neighbours.
        Ok(())
    }
}
