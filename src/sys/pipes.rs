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
