//! Process-wide dispositions for the signals a file-system fault raises.
//!
//! - SIGXFSZ (a write beyond `ulimit -f`) is ignored: the write then fails with EFBIG,
//!   which the checked calls already turn into a one-line error and clean-up.
//! - SIGBUS (a store through a mapping whose file could not be backed, e.g. a full
//!   filesystem) cannot be unwound from. Its handler uses only async-signal-safe
//!   system calls: it writes one line to stderr, removes the scratch directory named by
//!   [`set_scratch`] with getdents64/unlinkat, and exits with status 1.

use std::ffi::{CString, c_int};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The scratch directory the SIGBUS handler removes (a leaked C string), or null.
static SCRATCH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// SIGXFSZ's disposition before [`install`] first changed it (usize::MAX: not yet).
static ORIGINAL_XFSZ: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(usize::MAX);

/// The SIGXFSZ disposition ioprobe was started with, when [`install`] has changed it:
/// a traced command gets it back.
pub fn original_xfsz() -> Option<libc::sighandler_t> {
    match ORIGINAL_XFSZ.load(Ordering::SeqCst) {
        usize::MAX => None,
        h => Some(h as libc::sighandler_t),
    }
}

/// Ends this process by `sig`, as a traced command that `sig` killed ended (what strace
/// and GNU timeout do, so that a script sees the signal, not a status): no core file
/// (RLIMIT_CORE 0, so a core of ioprobe never replaces the command's), the signal's
/// default action restored and the signal unblocked, then raised. Returns where `sig`'s
/// default action does not end a process (stop, continue, ignore) or where raising it
/// did not end this one; the caller then exits with 128+`sig`.
pub fn die_by(sig: c_int) {
    const NOT_FATAL: [c_int; 8] = [
        libc::SIGSTOP,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGCONT,
        libc::SIGCHLD,
        libc::SIGURG,
        libc::SIGWINCH,
    ];
    if sig <= 0 || NOT_FATAL.contains(&sig) {
        return;
    }
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads a valid rlimit; lowering both limits to 0 is always
    // allowed. signal() installs the default action (no handler of ours runs after).
    // sigemptyset/sigaddset fill a zeroed local set that sigprocmask reads; raise sends
    // the signal to this thread. None of them touches memory of ours beyond the locals.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// Installs the dispositions (idempotent).
pub fn install() -> std::io::Result<()> {
    // SAFETY: SIG_IGN for SIGXFSZ replaces no Rust-visible state; the result is checked.
    let old = unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    if old == libc::SIG_ERR {
        return Err(std::io::Error::last_os_error());
    }
    let _ = ORIGINAL_XFSZ.compare_exchange(
        usize::MAX,
        old as usize,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    // SAFETY: a zeroed sigaction is valid; we set a plain handler that only performs
    // async-signal-safe system calls (see on_sigbus), with an empty mask.
    let r = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigbus as extern "C" fn(c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut())
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The stop signals whose disposition at start is kept for ioprobe and what it runs.
const STOP_SIGNALS: [c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];

/// Which of [`STOP_SIGNALS`] were ignored when ioprobe started, a bit per signal
/// number (u64::MAX: not read yet).
static IGNORED_AT_START: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// Reads which stop signals ioprobe was started with ignored (a shell's background job
/// ignores SIGINT and SIGQUIT, `nohup` SIGHUP). main calls it first, before any handler
/// replaces a disposition; later calls change nothing.
pub fn record_start_dispositions() {
    #[cfg(target_os = "linux")]
    record_reserved();
    let mask = STOP_SIGNALS
        .iter()
        .filter(|&&s| is_ignored(s).unwrap_or(false))
        .fold(0u64, |m, &s| m | 1 << s);
    let _ = IGNORED_AT_START.compare_exchange(u64::MAX, mask, Ordering::SeqCst, Ordering::SeqCst);
}

/// The signals glibc keeps for itself (SIGCANCEL 32, SIGSETXID 33): its sigaction
/// refuses them, and it handles 33 once a thread starts, which a program exec'd later
/// would find back at its default. Which of them were ignored when ioprobe started
/// (a bit per number; u64::MAX: not read yet), read with the raw system call.
#[cfg(target_os = "linux")]
static RESERVED_IGNORED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

#[cfg(target_os = "linux")]
const RESERVED: [c_int; 2] = [32, 33];

/// Reads which of glibc's reserved signals were ignored at start (main calls it
/// first, before any thread starts; later calls change nothing).
#[cfg(target_os = "linux")]
fn record_reserved() {
    let mut mask = 0u64;
    for sig in RESERVED {
        let mut old = [0usize; 4];
        // SAFETY: rt_sigaction with a null new action only writes the current one
        // into `old` (handler, flags, restorer, an 8-byte mask: 32 bytes).
        let r = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig as libc::c_long,
                std::ptr::null::<u8>(),
                old.as_mut_ptr(),
                8 as libc::c_long,
            )
        };
        if r == 0 && old[0] == libc::SIG_IGN {
            mask |= 1 << sig;
        }
    }
    let _ = RESERVED_IGNORED.compare_exchange(u64::MAX, mask, Ordering::SeqCst, Ordering::SeqCst);
}

/// glibc's reserved signals that were ignored when ioprobe started: a program it runs
/// gets them ignored again (with the raw system call, between fork and exec).
#[cfg(target_os = "linux")]
pub fn reserved_ignored_at_start() -> Vec<c_int> {
    record_reserved();
    let mask = RESERVED_IGNORED.load(Ordering::SeqCst);
    RESERVED
        .into_iter()
        .filter(|&s| mask & (1 << s) != 0)
        .collect()
}

/// Whether `sig`, one of SIGINT, SIGQUIT, SIGTERM and SIGHUP, was ignored when ioprobe
/// started: ioprobe then installs no handler for it, and a command it runs gets it
/// ignored, as it would without ioprobe.
pub fn ignored_at_start(sig: c_int) -> bool {
    record_start_dispositions();
    STOP_SIGNALS.contains(&sig) && IGNORED_AT_START.load(Ordering::SeqCst) & (1 << sig) != 0
}

/// Whether `sig` is ignored (SIG_IGN) in this process now. Err: the query failed.
fn is_ignored(sig: c_int) -> std::io::Result<bool> {
    // SAFETY: a null new action only reads the current one into `old`, a zeroed
    // sigaction we own; the result is checked.
    let (r, old) = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        let r = libc::sigaction(sig, std::ptr::null(), &mut old);
        (r, old)
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(old.sa_sigaction == libc::SIG_IGN)
}

/// Names the scratch directory the SIGBUS handler removes; None once it is gone.
pub fn set_scratch(path: Option<&std::path::Path>) {
    use std::os::unix::ffi::OsStrExt;
    let new = path
        .and_then(|p| CString::new(p.as_os_str().as_bytes()).ok())
        .map_or(std::ptr::null_mut(), CString::into_raw);
    let old = SCRATCH.swap(new, Ordering::SeqCst);
    if !old.is_null() {
        // SAFETY: `old` came from CString::into_raw above and is no longer published.
        drop(unsafe { CString::from_raw(old) });
    }
}

extern "C" fn on_sigbus(_sig: c_int) {
    const MSG: &[u8] = b"ioprobe: error: SIGBUS: a mapped file could not be backed (filesystem full or file truncated); scratch files removed\n";
    // SAFETY: write(2), open(2), rmdir(2) and _exit(2) are async-signal-safe; the path
    // pointer, when not null, is a valid C string that set_scratch never frees while
    // published.
    unsafe {
        libc::write(2, MSG.as_ptr().cast(), MSG.len());
        let dir = SCRATCH.load(Ordering::SeqCst);
        if !dir.is_null() {
            let fd = libc::open(
                dir,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            );
            if fd >= 0 {
                clear_dir(fd, 0);
                libc::close(fd);
            }
            libc::rmdir(dir);
        }
        libc::_exit(1);
    }
}

/// Removes everything inside the directory open as `fd` (subdirectories up to a small
/// depth), with system calls only: usable inside a signal handler.
fn clear_dir(fd: c_int, depth: u32) {
    let mut buf = [0u8; 4096];
    // Each pass lists from the start again: unlinking while listing may skip entries.
    for _ in 0..10_000 {
        let mut removed = false;
        let listed = super::os::for_each_dirent(fd, &mut buf, &mut |name, is_dir| {
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                return;
            }
            // SAFETY: openat/unlinkat relative to our directory descriptor with a
            // NUL-terminated name from the kernel's listing.
            unsafe {
                if is_dir && depth < 4 {
                    let sub = libc::openat(
                        fd,
                        name.as_ptr(),
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    );
                    if sub >= 0 {
                        clear_dir(sub, depth + 1);
                        libc::close(sub);
                    }
                    removed |= libc::unlinkat(fd, name.as_ptr(), libc::AT_REMOVEDIR) == 0;
                } else {
                    removed |= libc::unlinkat(fd, name.as_ptr(), 0) == 0;
                }
            }
        });
        if !listed || !removed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clear_dir_removes_files_and_subdirectories() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        for i in 0..300 {
            std::fs::write(
                dir.path().join(format!("file-with-a-long-name-{i:04}")),
                b"x",
            )
            .unwrap();
        }
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c"), b"y").unwrap();
        let f = std::fs::File::open(dir.path()).unwrap();
        super::clear_dir(f.as_raw_fd(), 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
