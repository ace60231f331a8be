//! What ioprobe does with the signals meant for the traced command, what an exec
//! means for its trace, and which standard descriptors ioprobe was started without.

use super::{LEFT_TO_TERMINAL, MAIN, PASSED, PASSED_ON};
use std::io;

/// While the command runs: SIGINT and SIGQUIT do not stop ioprobe (the terminal sends
/// them to the command too, and ioprobe reports what it traced once the command ends);
/// SIGTERM and SIGHUP are passed on to the command, then (from the trace loop) to every
/// other task it started. Detaching instead is not possible:
/// the command's seccomp filter would make its I/O calls fail (ENOSYS) without a tracer.
pub(in crate::sys::trace) fn forward_signals() -> io::Result<()> {
    // A signal ignored at start is left ignored: the command ignores it too.
    let handled = |s: &i32| !crate::sys::signals::ignored_at_start(*s);
    for sig in LEFT_TO_TERMINAL.into_iter().filter(handled) {
        // SAFETY: the action does nothing, which is async-signal-safe.
        unsafe { signal_hook::low_level::register(sig, || {}) }?;
    }
    for sig in PASSED_ON.into_iter().filter(handled) {
        // SAFETY: atomics and kill(2) are async-signal-safe; MAIN is the traced
        // command's pid, which stays reserved (a zombie) until the trace loop reaps it.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                PASSED.store(sig, std::sync::atomic::Ordering::Relaxed);
                let main = MAIN.load(std::sync::atomic::Ordering::Relaxed);
                if main > 0 {
                    libc::kill(main, sig);
                }
            })
        }?;
    }
    Ok(())
}

/// What the program process `pid` has just started means for its trace: a 32-bit
/// program (its calls pass the filter unseen), or one that is setuid,
/// setgid or has file capabilities (under ptrace the kernel runs it without them).
pub(in crate::sys::trace) fn exec_note(pid: i32) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let exe = super::super::procfs::exe(pid)?;
    if super::super::procfs::program32(pid) {
        return Some(format!(
            "pid {pid} ran the 32-bit program {}: its system calls were not traced",
            exe.display()
        ));
    }
    let m = std::fs::metadata(&exe).ok()?;
    let caps = rustix::fs::getxattr(&exe, "security.capability", &mut [0u8; 64]).is_ok();
    if m.mode() & 0o6000 != 0 || caps {
        return Some(format!(
            "pid {pid} ran {}, which is {}: under ptrace the kernel runs it without those privileges",
            exe.display(),
            if caps {
                "given file capabilities"
            } else {
                "setuid or setgid"
            }
        ));
    }
    None
}

/// Bit N set: standard descriptor N was closed when the process started, as recorded
/// by [`record_closed_stdio`] before Rust's runtime opens /dev/null on it.
pub(in crate::sys::trace) static CLOSED_AT_START: std::sync::atomic::AtomicU8 =
    std::sync::atomic::AtomicU8::new(0);

/// Runs from `.init_array`, before libc calls `main` and so before Rust's runtime
/// replaces a closed standard descriptor with /dev/null: records which were closed.
extern "C" fn record_closed_stdio() {
    let mut bits = 0u8;
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor table; no memory is passed.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            bits |= 1 << fd;
        }
    }
    CLOSED_AT_START.store(bits, std::sync::atomic::Ordering::Relaxed);
}

// SAFETY: an ELF constructor with the signature the dynamic loader calls; the function
// makes only async-signal-safe calls and touches nothing Rust initialises.
#[used]
#[unsafe(link_section = ".init_array")]
pub(in crate::sys::trace) static RECORD_CLOSED_STDIO: extern "C" fn() = record_closed_stdio;

/// The standard descriptors (0, 1, 2) ioprobe was started without, as seen before
/// Rust's runtime reopened them on /dev/null. (Telling them apart afterwards is not
/// possible: a caller's `subprocess.DEVNULL` is /dev/null open read-write too.)
pub fn stdio_closed_at_start() -> Vec<i32> {
    let bits = CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed);
    (0..3).filter(|fd| bits & (1 << fd) != 0).collect()
}
