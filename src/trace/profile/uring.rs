//! io_uring requests, read from the traced program's submission ring.
//!
//! A program submits io_uring requests by writing SQEs into memory it shares with the
//! kernel, then (without SQPOLL) calls io_uring_enter. At that call's exit stop the
//! kernel has consumed the submitted SQEs and moved the ring's head past them, and the
//! SQEs are still in place: each one's opcode, descriptor and length say what was asked.
//! The ring's layout comes from io_uring_setup's parameters (read at its exit) and its
//! addresses from the program's mmap calls on the ring descriptor (or, with
//! IORING_SETUP_NO_MMAP, from the parameters). Bytes are those asked, as for AIO.
//! What cannot be read is said, never guessed: a ring polled by a kernel thread
//! (SQPOLL), whose submissions make no call, or a ring whose memory was not seen.

use super::memory::{iov_total, msghdr_iov, u64_at};
use super::op::{Op, UringOp};
use crate::sys::trace::Memory;

const SETUP_SQPOLL: u32 = 1 << 1;
const SETUP_SQE128: u32 = 1 << 10;
const SETUP_NO_MMAP: u32 = 1 << 14;
const SETUP_NO_SQARRAY: u32 = 1 << 16;
const OFF_SQ_RING: u64 = 0;
const OFF_SQES: u64 = 0x1000_0000;
/// io_uring_enter's flag: its descriptor is an index into the registered rings.
pub const ENTER_REGISTERED_RING: u64 = 1 << 4;
const SQE_FIXED_FILE: u8 = 1;

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

/// One ring, as its io_uring_setup described it.
#[derive(Debug, Clone, Copy)]
pub struct Ring {
    flags: u32,
    /// Offsets in the SQ ring mapping of the head, the mask and the index array.
    head: u32,
    mask: u32,
    array: u32,
    /// Where the program mapped the SQ ring and the SQE array.
    sq: Option<u64>,
    sqes: Option<u64>,
}

/// One request read from the ring: (descriptor, whether it is a registered-file index,
/// the operation's row name, bytes asked).
pub type Request = (i32, bool, Op, u64);

impl Ring {
    /// The ring io_uring_setup just made, from the parameters at `params`.
    pub fn setup(mem: &Memory, params: u64) -> Option<Ring> {
        let p = mem.peek(params, 120)?;
        let flags = u32_at(&p, 8);
        let mut r = Ring {
            flags,
            head: u32_at(&p, 40),
            mask: u32_at(&p, 48),
            array: u32_at(&p, 64),
            sq: None,
            sqes: None,
        };
        if flags & SETUP_NO_MMAP != 0 {
            // The program gave the memory: SQEs at sq_off.user_addr, rings at cq_off's.
            r.sqes = Some(u64_at(&p, 72));
            r.sq = Some(u64_at(&p, 112));
        }
        Some(r)
    }

    /// Why this ring's submissions cannot be seen at all, known from its setup.
    pub fn unseen(&self) -> Option<&'static str> {
        (self.flags & SETUP_SQPOLL != 0)
            .then_some("a kernel thread polls its io_uring submission ring (SQPOLL)")
    }

    /// The program mapped part of the ring (mmap at `offset` returned `addr`).
    pub fn mapped(&mut self, offset: u64, addr: u64) {
        match offset {
            OFF_SQ_RING => self.sq = Some(addr),
            OFF_SQES => self.sqes = Some(addr),
            _ => {}
        }
    }

    /// The `n` requests an io_uring_enter has just submitted, or why they cannot be
    /// read.
    pub fn submitted(&self, mem: &Memory, n: u64) -> Result<Vec<Request>, &'static str> {
        if let Some(why) = self.unseen() {
            return Err(why);
        }
        let (Some(sq), Some(sqes)) = (self.sq, self.sqes) else {
            return Err("its io_uring ring was mapped where ioprobe did not see it");
        };
        let unreadable = "its io_uring ring could not be read";
        let head = mem.peek(sq + u64::from(self.head), 4).ok_or(unreadable)?;
        let mask = mem.peek(sq + u64::from(self.mask), 4).ok_or(unreadable)?;
        let (head, mask) = (u32_at(&head, 0), u32_at(&mask, 0));
        let size: u64 = if self.flags & SETUP_SQE128 != 0 {
            128
        } else {
            64
        };
        let n = n.min(u64::from(mask) + 1) as u32;
        let mut out = Vec::new();
        for i in head.wrapping_sub(n)..head {
            let slot = i & mask;
            let idx = if self.flags & SETUP_NO_SQARRAY != 0 {
                slot
            } else {
                let a = mem
                    .peek(sq + u64::from(self.array) + 4 * u64::from(slot), 4)
                    .ok_or(unreadable)?;
                u32_at(&a, 0) & mask
            };
            let e = mem
                .peek(sqes + size * u64::from(idx), 64)
                .ok_or(unreadable)?;
            out.push(request(mem, &e));
        }
        Ok(out)
    }
}

/// One SQE's request.
fn request(mem: &Memory, e: &[u8]) -> Request {
    let (opcode, flags) = (e[0], e[1]);
    let fd = u32_at(e, 4) as i32;
    let (addr, len) = (u64_at(e, 16), u64::from(u32_at(e, 24)));
    let msg = |addr| {
        let (iov, n) = msghdr_iov(mem, addr);
        iov_total(mem, iov, n)
    };
    let (op, bytes) = match opcode {
        1 => (UringOp::Readv, iov_total(mem, addr, len)),
        2 => (UringOp::Writev, iov_total(mem, addr, len)),
        3 => (UringOp::Fsync, 0),
        4 | 22 => (UringOp::Read, len),
        5 | 23 => (UringOp::Write, len),
        9 => (UringOp::Sendmsg, msg(addr)),
        10 => (UringOp::Recvmsg, msg(addr)),
        26 => (UringOp::Send, len),
        27 => (UringOp::Recv, len),
        _ => (UringOp::Other, 0),
    };
    (fd, flags & SQE_FIXED_FILE != 0, Op::Uring(op), bytes)
}
