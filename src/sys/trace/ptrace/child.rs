//! Starting the command as a tracee: everything the forked child needs prepared
//! before the fork, the child's steps (its signals, stdio, the wait to be seized, the
//! seccomp filter, exec), and the step it failed at.

use super::regs::os;
use super::signals::forward_signals;
use super::{LEFT_TO_TERMINAL, MAIN, PASSED_ON};
use std::io;

/// A close-on-exec pipe: (read end, write end).
pub(in crate::sys::trace) fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error()).map_err(os("pipe2"));
    }
    Ok((fds[0], fds[1]))
}

/// The command line as C strings.
pub(in crate::sys::trace) fn c_args(
    argv: &[std::ffi::OsString],
) -> io::Result<Vec<std::ffi::CString>> {
    use std::os::unix::ffi::OsStrExt;
    argv.iter()
        .map(|a| std::ffi::CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "an argument contains a NUL byte",
            )
        })
}

/// What each stop signal was when ioprobe started: ignored stays ignored (a background
/// job's SIGINT, nohup's SIGHUP), anything else is the default.
pub(in crate::sys::trace) fn start_dispositions() -> Vec<(libc::c_int, libc::sighandler_t)> {
    LEFT_TO_TERMINAL
        .iter()
        .chain(&PASSED_ON)
        .map(|&s| {
            let h = if crate::sys::signals::ignored_at_start(s) {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            (s, h)
        })
        .collect()
}

/// Everything the forked child needs, prepared before the fork: after it, the child
/// allocates nothing and makes only async-signal-safe calls.
pub(in crate::sys::trace) struct Child {
    pub(in crate::sys::trace) argv: Vec<*const libc::c_char>,
    /// The seccomp filter (ptrace; installed once through the gate).
    pub(in crate::sys::trace) filter: Option<libc::sock_fprog>,
    /// The pipe to wait on until the tracer is watching (read end, write end): the
    /// eBPF tracer has added the task, or ptrace has seized it.
    pub(in crate::sys::trace) gate: Option<(libc::c_int, libc::c_int)>,
    /// The environment, when not ioprobe's own (preload).
    pub(in crate::sys::trace) env: Option<Vec<*const libc::c_char>>,
    /// The program's path found in PATH beforehand ([`exec_path`]): exec'd from it,
    /// execvp makes no failed tries (under preload's filter, which stops at every
    /// execve, each would cost a stop); None: execvp searches.
    pub(in crate::sys::trace) file: Option<std::ffi::CString>,
    pub(in crate::sys::trace) signals: Vec<(libc::c_int, libc::sighandler_t)>,
    pub(in crate::sys::trace) xfsz: Option<libc::sighandler_t>,
    pub(in crate::sys::trace) close: Vec<libc::c_int>,
    /// glibc's reserved signals ioprobe was started with ignored.
    pub(in crate::sys::trace) reserved: Vec<libc::c_int>,
    pub(in crate::sys::trace) parent: libc::pid_t,
    /// Where a failed step writes (step, errno); close-on-exec, so a successful exec
    /// leaves the parent reading end of file.
    pub(in crate::sys::trace) errors: libc::c_int,
    pub(in crate::sys::trace) other_end: libc::c_int,
}

impl Child {
    /// A child that will run `argv` with the descriptors `close` closed, reporting a
    /// failed step on `errors` (read end, write end); neither filter nor gate yet.
    pub(in crate::sys::trace) fn new(
        argv: Vec<*const libc::c_char>,
        close: &[i32],
        errors: (i32, i32),
    ) -> Child {
        Child {
            argv,
            filter: None,
            gate: None,
            env: None,
            file: None,
            signals: start_dispositions(),
            xfsz: crate::sys::signals::original_xfsz(),
            close: close.to_vec(),
            reserved: crate::sys::signals::reserved_ignored_at_start(),
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            errors: errors.1,
            other_end: errors.0,
        }
    }

    /// Forks the child, which runs [`Child::run`]; its pid. The signal handlers are set
    /// first, so that no signal finds ioprobe without them.
    pub(in crate::sys::trace) fn start(&self) -> io::Result<i32> {
        forward_signals()?;
        // SAFETY: other threads may run (the eBPF programs loading): the child only
        // makes async-signal-safe calls on memory prepared before the fork (no lock
        // another thread held is taken), then execs or exits with _exit.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            return Err(io::Error::last_os_error()).map_err(os("fork"));
        }
        if pid == 0 {
            self.run();
        }
        MAIN.store(pid, std::sync::atomic::Ordering::Relaxed);
        Ok(pid)
    }

    /// The signal state CMD would have untraced (in the child, between fork and exec).
    fn restore_signals(&self) {
        // SAFETY: signal(2) and rt_sigaction(2) are async-signal-safe; the tables were
        // prepared before the fork.
        unsafe {
            for &(sig, h) in self.signals.iter() {
                libc::signal(sig, h);
            }
            // Rust's runtime ignores SIGPIPE at start (std's Command restores it for
            // children the same way); ioprobe's own SIGXFSZ is undone.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            if let Some(h) = self.xfsz {
                libc::signal(libc::SIGXFSZ, h);
            }
            // Ignored again if they were: glibc handles SIGSETXID once a thread has
            // started (ioprobe's start a thread before this fork), and an exec makes
            // a handled signal default.
            let ignore: [usize; 4] = [libc::SIG_IGN, 0, 0, 0];
            for &sig in self.reserved.iter() {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig as libc::c_long,
                    ignore.as_ptr(),
                    std::ptr::null_mut::<u8>(),
                    8 as libc::c_long,
                );
            }
        }
    }

    /// The child's side, between fork and exec: the signal state CMD would have
    /// untraced, the descriptors it must not see closed, death with ioprobe until
    /// seized, a wait on the gate until the tracer watches, no new privileges and the
    /// seccomp filter (ptrace), exec.
    pub(in crate::sys::trace) fn run(&self) -> ! {
        // SAFETY: only async-signal-safe calls, on memory prepared before the fork;
        // every path ends in execvp or _exit.
        unsafe {
            let fail = |step: i32| -> ! {
                let e = [step, *libc::__errno_location()];
                libc::write(self.errors, e.as_ptr() as *const libc::c_void, 8);
                libc::_exit(127);
            };
            libc::close(self.other_end);
            self.restore_signals();
            for &fd in self.close.iter() {
                libc::close(fd);
            }
            // Until ioprobe has seized it (PTRACE_O_EXITKILL from then on), the child
            // dies with ioprobe rather than stay stopped forever.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                fail(5);
            }
            if libc::getppid() != self.parent {
                libc::_exit(127);
            }
            // Wait until the tracer is watching: the eBPF tracer has added this task,
            // or ptrace has seized it (a running task can be seized; no stop needed).
            if let Some((rd, wr)) = self.gate {
                libc::close(wr);
                let mut b = 0u8;
                if libc::read(rd, &mut b as *mut u8 as *mut libc::c_void, 1) != 1 {
                    libc::_exit(127);
                }
            }
            if let Some(filter) = &self.filter {
                // Seized with PTRACE_O_EXITKILL, which takes over from here.
                libc::prctl(libc::PR_SET_PDEATHSIG, 0);
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
                    fail(2);
                }
                if libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    filter as *const libc::sock_fprog,
                ) == -1
                {
                    fail(3);
                }
            }
            // eBPF: PR_SET_PDEATHSIG stays: if ioprobe dies, the command dies with it,
            // as under ptrace (PTRACE_O_EXITKILL).
            let file = self.file.as_ref().map_or(self.argv[0], |f| f.as_ptr());
            match &self.env {
                Some(env) => libc::execvpe(file, self.argv.as_ptr(), env.as_ptr()),
                None => libc::execvp(file, self.argv.as_ptr()),
            };
            fail(4)
        }
    }
}

/// Where execvp would find `prog` ([`program_path`](super::super::program_path)), as
/// the exec's file; None when `prog` names a path (nothing is searched) or no PATH
/// entry has it (execvp then searches again and fails as it would untraced: not
/// found, or permission denied).
pub(in crate::sys::trace) fn exec_path(prog: &std::ffi::OsStr) -> Option<std::ffi::CString> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    if prog.as_bytes().contains(&b'/') {
        return None;
    }
    let found = super::super::program_path(prog)?;
    std::ffi::CString::new(found.into_os_string().into_vec()).ok()
}

/// The step the child failed at, read from its error pipe (closed here), as an error
/// naming it; None when the exec succeeded.
pub(in crate::sys::trace) fn child_error(rd: libc::c_int) -> Option<io::Error> {
    let mut e = [0i32; 2];
    // SAFETY: reads at most 8 bytes into a local array; the descriptor is ours.
    let n = unsafe { libc::read(rd, e.as_mut_ptr() as *mut libc::c_void, 8) };
    // SAFETY: closing the read end, which the caller handed over.
    unsafe { libc::close(rd) };
    if n != 8 {
        return None;
    }
    let err = io::Error::from_raw_os_error(e[1]);
    let step = [
        "",
        "ptrace",
        "prctl(PR_SET_NO_NEW_PRIVS)",
        "seccomp(SECCOMP_SET_MODE_FILTER)",
        "execvp",
        "prctl(PR_SET_PDEATHSIG)",
    ];
    let what = step.get(e[0] as usize).copied().unwrap_or("start");
    Some(io::Error::new(err.kind(), format!("{what}: {err}")))
}
