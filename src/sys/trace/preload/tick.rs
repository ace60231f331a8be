//! The preload tracer's wait: blocking in waitpid as the ptrace tracer does (a stop
//! then wakes it on the stopping task's CPU), interrupted every [`EVERY_MS`] by a
//! timer signal directed at this thread so that the ring is read while the program
//! runs without stops. The signal is blocked except around the wait, so that no other
//! call of ioprobe's is interrupted by it; one that arrives just before the wait only
//! delays the next read by a period.
//!
//! (Waiting instead on SIGCHLD through a signalfd and poll, as before 27 Nov 2026, woke
//! the tracer away from the stopping task: 100 starts of /bin/true took the tracer
//! 159 ms of CPU against ptrace's 81 ms.)

use std::io;

/// How often the ring is read while no task stops.
pub(in crate::sys::trace) const EVERY_MS: i64 = 2;

/// The timer and its signal, set up for the calling thread; undone on drop.
pub(in crate::sys::trace) struct Tick {
    /// The timer, once made (its id may be 0, a null `timer_t`).
    timer: Option<libc::timer_t>,
    signal: libc::c_int,
    blocked: libc::sigset_t,
    old_action: libc::sigaction,
    old_mask: libc::sigset_t,
}

extern "C" fn on_tick(_: libc::c_int) {}

impl Tick {
    /// Starts the timer for this thread. Err: where a thread-directed timer cannot be
    /// made (the caller then polls).
    pub(in crate::sys::trace) fn start() -> io::Result<Tick> {
        let signal = libc::SIGRTMIN() + 2;
        // SAFETY: sigset_t and sigaction are plain data, initialised by sigemptyset and
        // the fields set; sigaction installs a handler that does nothing (no
        // SA_RESTART, so that a wait it lands in returns EINTR); pthread_sigmask blocks
        // the signal in this thread only; gettid has no arguments.
        unsafe {
            let mut blocked: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut blocked);
            libc::sigaddset(&mut blocked, signal);
            let mut old_mask: libc::sigset_t = std::mem::zeroed();
            if libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, &mut old_mask) != 0 {
                return Err(io::Error::other("pthread_sigmask"));
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_tick as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old_action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut old_action) == -1 {
                let e = io::Error::last_os_error();
                libc::pthread_sigmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut());
                return Err(e);
            }
            let mut tick = Tick {
                timer: None,
                signal,
                blocked,
                old_action,
                old_mask,
            };
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = signal;
            event.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer) == -1 {
                return Err(io::Error::last_os_error()); // Drop puts the handler and mask back.
            }
            tick.timer = Some(timer);
            let period = libc::timespec {
                tv_sec: 0,
                tv_nsec: EVERY_MS * 1_000_000,
            };
            let spec = libc::itimerspec {
                it_interval: period,
                it_value: period,
            };
            if libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(tick)
        }
    }

    /// waitpid(-1, __WALL) with the timer's signal let in: the task and status, or
    /// -1 with errno (EINTR: the timer, or another signal).
    pub(in crate::sys::trace) fn wait(&self, status: &mut libc::c_int) -> libc::pid_t {
        // SAFETY: the mask calls change this thread's mask only, with a set we own;
        // waitpid writes the status into the caller's integer. errno is kept across
        // the second mask call (it cannot fail with a valid set and `how`).
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &self.blocked, std::ptr::null_mut());
            let tid = libc::waitpid(-1, status, libc::__WALL);
            let errno = *libc::__errno_location();
            libc::pthread_sigmask(libc::SIG_BLOCK, &self.blocked, std::ptr::null_mut());
            *libc::__errno_location() = errno;
            tid
        }
    }
}

impl Drop for Tick {
    fn drop(&mut self) {
        // SAFETY: deletes the timer we made (if any); then the handler and this
        // thread's mask as they were before `start` (a tick still pending is then
        // discarded: the old action is the default or what ioprobe had, and the
        // signal was blocked until the mask is restored).
        unsafe {
            if let Some(timer) = self.timer {
                libc::timer_delete(timer);
            }
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            if libc::sigismember(&pending, self.signal) == 1 {
                // Taken while still blocked, so that restoring the default action
                // (terminate) never meets a pending tick.
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::sigtimedwait(&self.blocked, &mut info, &zero);
            }
            libc::sigaction(self.signal, &self.old_action, std::ptr::null_mut());
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks left pending while blocked, and the timer itself, end with the Tick: the
    /// process lives on with the signal's default action (terminate) put back. (A
    /// timer whose id was 0 was once taken for none and never deleted.)
    #[test]
    fn a_dropped_tick_leaves_no_timer_and_no_pending_signal() {
        for _ in 0..3 {
            let t = Tick::start().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(3 * EVERY_MS as u64));
            drop(t);
            std::thread::sleep(std::time::Duration::from_millis(3 * EVERY_MS as u64));
        }
    }
}
