//! The command started traced: forked, waiting on a pipe while ioprobe seizes it,
//! then driven to its exec, where the caller's gate says whether it goes on.

use super::super::preload;
use super::child::{Child, c_args, child_error, exec_path, pipe};
use super::filter::{filter, makers};
use super::preloaded::Preloaded;
use super::regs::{os, ptrace, wait_status};
use super::signals::exec_note;
use super::{MAIN, Mode, Ptrace};
use crate::sys::trace::{Ended, Seen};
use std::collections::HashSet;
use std::io;

impl Ptrace {
    /// Starts `argv` (the program, found in PATH, and its arguments) traced. Its
    /// stdin, stdout and stderr stay its own, the descriptors in `close` (standard
    /// descriptors ioprobe was started without) are closed again, SIGPIPE and SIGXFSZ
    /// get back the dispositions a program is started with, and the signal mask is
    /// ioprobe's own (as it was given). Err: it could not be started (the message
    /// names the step: `execvp` with the errno a shell maps to 126 or 127), or tracing
    /// is not permitted (the message names the call that failed).
    ///
    /// The child waits on a pipe before installing its seccomp filter; ioprobe seizes
    /// it there, running (PTRACE_SEIZE: no stop is needed, and group-stops are reported
    /// and kept, so SIGSTOP and SIGTSTP stop the command as they would untraced), with
    /// PTRACE_O_TRACESECCOMP (a filter that returns SECCOMP_RET_TRACE with no such
    /// tracer fails those calls with ENOSYS) and PTRACE_O_EXITKILL (if ioprobe dies,
    /// even by SIGKILL, the kernel kills the command rather than leave it running with
    /// its I/O calls failing), then lets it go on with a byte. Another tracer that
    /// took the child at its fork (`strace -f ioprobe …`) makes the seize fail at
    /// once: the child exits at the closed pipe, and the error names that tracer.
    ///
    /// With `preload`, the command starts with the preload library (see
    /// [`preload`]), and the filter lets its calls through.
    ///
    /// `gate` is asked at the command's exec, before its program's first instruction:
    /// false kills it there (it has run nothing of its own) and fails.
    pub fn spawn(
        argv: &[std::ffi::OsString],
        close: &[i32],
        preload: Option<preload::Preload>,
        gate: &mut dyn FnMut() -> bool,
    ) -> io::Result<Ptrace> {
        let args = c_args(argv)?;
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let prog = filter(preload.as_ref().map(|p| p.gate()));
        let env = preload.as_ref().map(|p| p.environment()).transpose()?;
        let env_ptrs = env.as_ref().map(|e| {
            let mut v: Vec<*const libc::c_char> = e.iter().map(|a| a.as_ptr()).collect();
            v.push(std::ptr::null());
            v
        });
        let (rd, wr) = pipe()?;
        let (gate_rd, gate_wr) = pipe()?;
        let child = Child {
            filter: Some(libc::sock_fprog {
                len: prog.len() as u16,
                filter: prog.as_ptr() as *mut libc::sock_filter,
            }),
            gate: Some((gate_rd, gate_wr)),
            env: env_ptrs,
            file: exec_path(&argv[0]),
            ..Child::new(ptrs, close, (rd, wr))
        };
        let pid = child.start();
        // SAFETY: closing the parent's copies of the child's ends, which it owns.
        unsafe {
            libc::close(wr);
            libc::close(gate_rd);
        }
        let pid = pid.inspect_err(|_| {
            // SAFETY: closing our ends of the two pipes; no child holds them.
            unsafe {
                libc::close(rd);
                libc::close(gate_wr);
            }
        })?;
        // After the fork: the command must not start with the tick's signal blocked.
        let preload = preload.map(|ring| {
            Box::new(Preloaded {
                tick: preload::Tick::start().ok(),
                ring,
                makers: makers().into_iter().collect(),
                own: HashSet::new(),
                loading: HashSet::new(),
                first: None,
                starts: Default::default(),
            })
        });
        let seized = Ptrace::seize(pid);
        if seized.is_ok() {
            // SAFETY: one byte from a local to our end of the gate.
            unsafe { libc::write(gate_wr, b"g".as_ptr() as *const libc::c_void, 1) };
        }
        // SAFETY: closing our end of the gate: unseized, the child's read returns 0
        // and it exits before its exec.
        unsafe { libc::close(gate_wr) };
        if let Err(e) = seized {
            let _ = child_error(rd);
            // SAFETY: reaping our own child, which exits at the closed gate.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL) };
            return Err(e);
        }
        let result = Ptrace::start(pid, preload, gate);
        let failed = child_error(rd);
        let tracer = result?;
        match failed {
            Some(e) => Err(e),
            None => Ok(tracer),
        }
    }

    /// Seizes the child, waiting at the gate, with the options. Refused because
    /// another tracer already follows it (a `strace -f` or a debugger around
    /// ioprobe took it at its fork): an error naming that tracer.
    fn seize(pid: i32) -> io::Result<()> {
        let opts = libc::PTRACE_O_TRACESYSGOOD
            | libc::PTRACE_O_TRACEFORK
            | libc::PTRACE_O_TRACEVFORK
            | libc::PTRACE_O_TRACECLONE
            | libc::PTRACE_O_TRACEEXEC
            | libc::PTRACE_O_TRACESECCOMP
            | libc::PTRACE_O_EXITKILL;
        let seized = ptrace(libc::PTRACE_SEIZE, pid, 0, opts as usize);
        if let Err(e) = &seized
            && e.raw_os_error() == Some(libc::EPERM)
            && let Some((tracer, comm)) = super::super::attach::tracer_of(pid)
        {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "another tracer, {comm} (pid {tracer}), follows ioprobe's children, and a process can have only one: use --tracer ebpf, or run ioprobe outside {comm}"
                ),
            ));
        }
        seized.map(|_| ()).map_err(os("ptrace(PTRACE_SEIZE)"))
    }

    /// Drives the seized child to its execve; the calls it makes before the exec (an
    /// error report) are let through. At the exec, `gate` says whether it goes on.
    fn start(
        pid: i32,
        preload: Option<Box<Preloaded>>,
        gate: &mut dyn FnMut() -> bool,
    ) -> io::Result<Ptrace> {
        let mut t = Ptrace::new(pid, Mode::Spawned, preload);
        t.known.insert(pid);
        loop {
            let status = wait_status(pid, libc::__WALL)?;
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                // It never reached exec; the pipe says why.
                t.ended = Some(Ended::Code(127));
                return Ok(t);
            }
            let sig = libc::WSTOPSIG(status);
            let event = status >> 16;
            if event == libc::PTRACE_EVENT_STOP {
                // A group-stop before the exec: not the command's yet.
                t.resume(libc::PTRACE_CONT, pid, 0)?;
            } else if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_EXEC {
                if !gate() {
                    return Err(held_at_exec(pid));
                }
                if let Some(p) = &mut t.preload {
                    p.first = Some(Seen::now(pid));
                    p.loading.insert(pid);
                }
                t.first_note = exec_note(pid);
                t.resume(libc::PTRACE_CONT, pid, 0)?;
                return Ok(t);
            } else if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_SECCOMP {
                t.resume(libc::PTRACE_CONT, pid, 0)?;
            } else {
                let deliver = if sig == libc::SIGTRAP || sig == libc::SIGSTOP {
                    0
                } else {
                    sig
                };
                t.resume(libc::PTRACE_CONT, pid, deliver)?;
            }
        }
    }
}

/// Kills the child `pid`, seized and stopped at its exec (its program has run nothing),
/// reaps it, and says so.
fn held_at_exec(pid: i32) -> io::Error {
    // No signal is passed on to it from now on.
    MAIN.store(0, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: kill(2) on our own child, stopped under our trace and not yet reaped.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    while let Ok(status) = wait_status(pid, libc::__WALL) {
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            break;
        }
    }
    io::Error::other("the command was stopped at its exec, before it ran")
}
