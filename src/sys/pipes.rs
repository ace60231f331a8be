//! Pipes: creation (close-on-exec), capacity, vmsplice(2) and splice(2) (from
//! [`super::os`]: Linux only), and waiting for a descriptor to become readable without
//! ignoring signals.

use super::calls::{SysError, SysResult};
use rustix::fd::AsFd;

pub use super::os::{
    pipe, pipe_capacity as capacity, set_pipe_capacity as set_capacity, splice, vmsplice,
};

/// Waits until `fd` is readable (data or end of file). Signals interrupt the wait; it
/// then returns `Ok(false)` if `stop()` says to give up, and waits again otherwise.
pub fn wait_readable<Fd: AsFd>(fd: Fd, stop: &dyn Fn() -> bool) -> SysResult<bool> {
    wait_for(fd, rustix::event::PollFlags::IN, stop)
}

/// Waits until `fd` takes a write without blocking (or its reader is gone), as
/// [`wait_readable`] does for reading.
pub fn wait_writable<Fd: AsFd>(fd: Fd, stop: &dyn Fn() -> bool) -> SysResult<bool> {
    wait_for(fd, rustix::event::PollFlags::OUT, stop)
}

/// Polls `fd` for `what`, with a timeout too: a signal that arrives between `stop()`
/// and the poll does not interrupt it.
fn wait_for<Fd: AsFd>(
    fd: Fd,
    what: rustix::event::PollFlags,
    stop: &dyn Fn() -> bool,
) -> SysResult<bool> {
    use rustix::event::{PollFd, Timespec, poll};
    loop {
        if stop() {
            return Ok(false);
        }
        let mut fds = [PollFd::new(&fd, what)];
        let t = Timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        match poll(&mut fds, Some(&t)) {
            Ok(0) => continue,
            Ok(_) => return Ok(true),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(SysError::new("poll", e)),
        }
    }
}
