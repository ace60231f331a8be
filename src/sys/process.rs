//! Child processes made with fork(2), for probes whose two sides must be separate
//! processes with their own rusage (the pipe probe), and reaping them.
//!
//! A [`Child`] is always reaped: `wait` reaps it, and dropping it unreaped kills it
//! (SIGKILL) and reaps it, so no error path leaves a zombie or a stray writer behind.

use super::calls::{SysError, SysResult};
use rustix::fd::{AsRawFd, BorrowedFd};
use rustix::process::{Pid, Signal, WaitOptions, kill_process, waitpid};

/// A forked child that has not been reaped yet.
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    reaped: bool,
}

impl Child {
    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw_nonzero().get()
    }

    /// Sends SIGKILL; a child that already exited is not an error.
    pub fn kill(&self) {
        let _ = kill_process(self.pid, Signal::KILL);
    }

    /// Waits for the child to end and reaps it; returns its exit status, or
    /// `128 + signal` when a signal ended it.
    pub fn wait(mut self) -> SysResult<i32> {
        let status = self.reap()?;
        Ok(status)
    }

    fn reap(&mut self) -> SysResult<i32> {
        loop {
            match waitpid(Some(self.pid), WaitOptions::empty()) {
                Ok(Some((_, st))) => {
                    self.reaped = true;
                    return Ok(st
                        .exit_status()
                        .or_else(|| st.terminating_signal().map(|s| 128 + s))
                        .unwrap_or(255));
                }
                Ok(None) => continue,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    self.reaped = true; // ECHILD: nothing left to reap
                    return Err(SysError::new("waitpid", e));
                }
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.reap();
        }
    }
}

/// Forks a child that runs `body` and exits with the status it returns (101 if it
/// panics). The child never returns into the caller's code, so no destructor of the
/// parent's state (the scratch directory, say) runs in it. In the child, SIGINT,
/// SIGTERM and SIGHUP get their default action back and the child is killed if the
/// parent dies, so Ctrl-C or a killed ioprobe never leaves it running.
///
/// The child first closes the descriptors in `close` (its copies of the other side's
/// pipe ends, so end-of-file and EPIPE work).
///
/// Must only be called while the process has a single thread: ioprobe measures with
/// one thread (a test checks this), so the child's copy of memory is consistent.
pub fn fork_child(close: &[BorrowedFd<'_>], body: impl FnOnce() -> i32) -> SysResult<Child> {
    let parent = rustix::process::getpid();
    // SAFETY: ioprobe is single-threaded while it measures (no helper threads are
    // started; a test asserts one thread), so no lock can be held by another thread at
    // the fork and the child may allocate. The child runs `body` and leaves with
    // `_exit`, never unwinding into or returning through the parent's frames.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(SysError {
            call: "fork",
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        });
    }
    if pid == 0 {
        for fd in close {
            // SAFETY: this is the child's own copy of the descriptor table; the
            // OwnedFds that own these numbers are never dropped in the child (it leaves
            // with `_exit`), so nothing closes them twice.
            unsafe { libc::close(fd.as_raw_fd()) };
        }
        let code = child_setup(parent)
            .map(|()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101))
            .unwrap_or(102);
        // SAFETY: `_exit` ends the child at once without running the parent's
        // destructors or atexit handlers; nothing after it runs.
        unsafe { libc::_exit(code) };
    }
    Ok(Child {
        pid: Pid::from_raw(pid).ok_or(SysError::new("fork", rustix::io::Errno::INVAL))?,
        reaped: false,
    })
}

fn child_setup(parent: Pid) -> Result<(), ()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: restoring the default disposition of a signal is always sound.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    super::os::die_with_parent().map_err(|_| ())?;
    // The parent may have died before the death signal was armed.
    if rustix::process::getppid() != Some(parent) {
        return Err(());
    }
    Ok(())
}

/// Whether this process's address space is limited (`ulimit -v`, RLIMIT_AS): threads,
/// whose stacks and malloc arenas reserve tens of MiB each, would then run it out.
pub fn address_space_limited() -> bool {
    rustix::process::getrlimit(rustix::process::Resource::As)
        .maximum
        .is_some()
}

/// Raises the soft limit on open descriptors to the hard one, for a probe that keeps
/// many connections open at once (two descriptors per kept row), until the guard is
/// dropped: then the limit is put back, so that nothing ioprobe starts later (a traced
/// program) inherits it. A refusal leaves the limit as it was: running out is then
/// reported by the call that needed one more.
pub fn raise_open_files() -> OpenFilesRaised {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let before = getrlimit(Resource::Nofile);
    let raised = before.current != before.maximum
        && setrlimit(
            Resource::Nofile,
            Rlimit {
                current: before.maximum,
                maximum: before.maximum,
            },
        )
        .is_ok();
    OpenFilesRaised(raised.then_some(before))
}

/// The soft limit [`raise_open_files`] replaced, put back on drop.
pub struct OpenFilesRaised(Option<rustix::process::Rlimit>);

impl Drop for OpenFilesRaised {
    fn drop(&mut self) {
        if let Some(l) = self.0.take() {
            let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_files_limit_is_put_back() {
        use rustix::process::{Resource, getrlimit};
        let before = getrlimit(Resource::Nofile);
        {
            let _raised = raise_open_files();
            assert_eq!(getrlimit(Resource::Nofile).current, before.maximum);
        }
        assert_eq!(getrlimit(Resource::Nofile), before);
    }

    #[test]
    fn exit_status_and_reaping() {
        let c = fork_child(&[], || 7).unwrap();
        assert_eq!(c.wait().unwrap(), 7);
        let c = fork_child(&[], || panic!("boom")).unwrap();
        assert_eq!(c.wait().unwrap(), 101);
    }

    #[test]
    fn dropping_an_unreaped_child_kills_and_reaps_it() {
        let c = fork_child(&[], || {
            std::thread::sleep(std::time::Duration::from_secs(30));
            0
        })
        .unwrap();
        let pid = c.pid();
        drop(c);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}
