//! Pipes: creation (close-on-exec), capacity (F_SETPIPE_SZ / F_GETPIPE_SZ), vmsplice(2),
//! splice(2), and waiting for a descriptor to become readable without ignoring signals.

use super::calls::{SysError, SysResult};
use rustix::fd::{AsFd, OwnedFd};
use rustix::pipe::{IoSliceRaw, PipeFlags, SpliceFlags};

/// A pipe (read end, write end), both close-on-exec.
pub fn pipe() -> SysResult<(OwnedFd, OwnedFd)> {
    rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(|e| SysError::new("pipe2", e))
}

/// Asks for a capacity; returns the capacity the kernel granted (it rounds up to a
/// power-of-two number of pages).
pub fn set_capacity<Fd: AsFd>(fd: Fd, bytes: usize) -> SysResult<usize> {
    rustix::pipe::fcntl_setpipe_size(&fd, bytes).map_err(|e| SysError::new("F_SETPIPE_SZ", e))?;
    capacity(fd)
}

/// The pipe's capacity now (F_GETPIPE_SZ).
pub fn capacity<Fd: AsFd>(fd: Fd) -> SysResult<usize> {
    rustix::pipe::fcntl_getpipe_size(fd).map_err(|e| SysError::new("F_GETPIPE_SZ", e))
}

/// vmsplice(2) of `buf` into the pipe's write end (no SPLICE_F_GIFT): the pipe holds
/// references to the pages, so the data the reader sees is whatever the pages hold when
/// it reads. Returns bytes queued (may be fewer than `buf.len()`).
pub fn vmsplice<Fd: AsFd>(pipe_w: Fd, buf: &[u8]) -> SysResult<usize> {
    let iov = [IoSliceRaw::from_slice(buf)];
    // SAFETY: `pipe_w` is a pipe's write end, so the kernel only reads `buf` (it maps
    // its pages into the pipe; they stay referenced, never freed under us). Without
    // SPLICE_F_GIFT no alignment or immutability promise is made: a later change to
    // `buf` can only change the bytes a reader sees, which the caller's buffer
    // rotation prevents and the reader's stamp check would detect.
    unsafe { rustix::pipe::vmsplice(pipe_w, &iov, SpliceFlags::empty()) }
        .map_err(|e| SysError::new("vmsplice", e))
}

/// splice(2) of up to `len` bytes between `from` and `to` (one must be a pipe), with
/// optional file offsets. Returns bytes moved; 0 at end of input.
pub fn splice<A: AsFd, B: AsFd>(
    from: A,
    from_off: Option<&mut u64>,
    to: B,
    to_off: Option<&mut u64>,
    len: usize,
) -> SysResult<usize> {
    rustix::pipe::splice(from, from_off, to, to_off, len, SpliceFlags::MOVE)
        .map_err(|e| SysError::new("splice", e))
}

/// Waits until `fd` is readable (data or end of file). Signals interrupt the wait; it
/// then returns `Ok(false)` if `stop()` says to give up, and waits again otherwise.
pub fn wait_readable<Fd: AsFd>(fd: Fd, stop: &dyn Fn() -> bool) -> SysResult<bool> {
    use rustix::event::{PollFd, PollFlags, poll};
    loop {
        if stop() {
            return Ok(false);
        }
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) => return Ok(true),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(SysError::new("poll", e)),
        }
    }
}
