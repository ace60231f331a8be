//! Reading what a call's arguments point to in the tracee's memory (as the tracer
//! gives it): iovec arrays, msghdrs, mmsghdr vectors, AIO control blocks.

use super::op::AioOp;
use crate::sys::trace::Memory;

pub(in crate::trace) fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// A struct msghdr's iovec array and count (x86-64 and aarch64 layout: msg_iov at 16,
/// msg_iovlen at 24).
pub(in crate::trace) fn msghdr_iov(mem: &Memory, addr: u64) -> (u64, u64) {
    mem.peek(addr, 56)
        .map_or((0, 0), |b| (u64_at(&b, 16), u64_at(&b, 24)))
}

/// The bytes of the first `n` messages of a struct mmsghdr array at `addr` (64 bytes
/// each: a msghdr, then msg_len).
pub(super) fn mmsg_total(mem: &Memory, addr: u64, n: u64) -> u64 {
    let n = n.min(1024) as usize;
    mem.peek(addr, 64 * n).map_or(0, |b| {
        b.chunks_exact(64)
            .map(|c| u32::from_ne_bytes(c[56..60].try_into().unwrap_or([0; 4])) as u64)
            .sum()
    })
}

/// The first `n` iocbs of an io_submit array of pointers at `addr`: (descriptor,
/// operation, bytes asked) each.
pub(super) fn iocbs(mem: &Memory, addr: u64, n: u64) -> Vec<(i32, AioOp, u64)> {
    let n = n.min(1024) as usize;
    let Some(ptrs) = mem.peek(addr, 8 * n) else {
        return Vec::new();
    };
    (0..n)
        .filter_map(|i| {
            let cb = mem.peek(u64_at(&ptrs, 8 * i), 64)?;
            let opcode = u16::from_ne_bytes(cb[16..18].try_into().ok()?);
            let fd = u32::from_ne_bytes(cb[20..24].try_into().ok()?) as i32;
            let nbytes = u64_at(&cb, 32);
            let (op, bytes) = match opcode {
                0 => (AioOp::Pread, nbytes),
                1 => (AioOp::Pwrite, nbytes),
                7 => (AioOp::Preadv, iov_total(mem, u64_at(&cb, 24), nbytes)),
                8 => (AioOp::Pwritev, iov_total(mem, u64_at(&cb, 24), nbytes)),
                2 => (AioOp::Fsync, 0),
                3 => (AioOp::Fdsync, 0),
                _ => (AioOp::Other, 0),
            };
            Some((fd, op, bytes))
        })
        .collect()
}

/// The total length of the `n` iovecs at `addr`.
pub(in crate::trace) fn iov_total(mem: &Memory, addr: u64, n: u64) -> u64 {
    let n = n.min(1024) as usize;
    let Some(buf) = mem.peek(addr, 16 * n) else {
        return 0;
    };
    buf.chunks_exact(16)
        .map(|c| u64::from_ne_bytes(c[8..16].try_into().unwrap_or([0; 8])))
        .sum()
}
