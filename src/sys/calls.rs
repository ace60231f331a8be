//! Checked system-call wrappers used inside timed loops.
//!
//! Every wrapper returns `Result<_, SysError>` naming the call and its errno, so a
//! failing call stops a case with a message instead of producing a figure.

use rustix::fd::{AsFd, IntoRawFd, OwnedFd};
use rustix::fs::{Mode, OFlags, SeekFrom};
use std::ffi::{CStr, CString};
use std::fmt;
use std::path::Path;

/// A system call that failed: its name and errno.
#[derive(Debug, Clone)]
pub struct SysError {
    pub call: &'static str,
    pub errno: i32,
}

impl SysError {
    pub fn new(call: &'static str, errno: rustix::io::Errno) -> Self {
        SysError {
            call,
            errno: errno.raw_os_error(),
        }
    }

    /// A mechanism this OS does not have (ENOSYS), named by `call` (e.g. "splice (Linux
    /// only)"): probes report the row as unsupported with this reason.
    pub fn missing(call: &'static str) -> Self {
        SysError::new(call, rustix::io::Errno::NOSYS)
    }

    /// Whether this is [`SysError::missing`]: the OS lacks the mechanism.
    pub fn is_missing(&self) -> bool {
        self.errno == rustix::io::Errno::NOSYS.raw_os_error()
    }

    /// The errno as a short phrase ("Operation not supported"), without the call.
    pub fn short(&self) -> String {
        crate::error::plain(&std::io::Error::from_raw_os_error(self.errno))
    }

    /// True when the error says the filesystem is full or a file limit was hit.
    pub fn is_no_space(&self) -> bool {
        self.errno == libc::ENOSPC || self.errno == libc::EFBIG || self.errno == libc::EDQUOT
    }
}

impl fmt::Display for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let os = std::io::Error::from_raw_os_error(self.errno);
        write!(f, "{} failed: {}", self.call, os)
    }
}

impl std::error::Error for SysError {}

/// A result of one checked system call.
pub type SysResult<T> = Result<T, SysError>;

/// Names a failed call: rustix's result with the call's name attached.
pub(super) fn check<T>(call: &'static str, r: rustix::io::Result<T>) -> SysResult<T> {
    r.map_err(|e| SysError::new(call, e))
}

/// A short transfer: the call returned fewer bytes than asked, which no figure may hide.
pub fn short(call: &'static str, got: usize, want: usize) -> anyhow::Error {
    anyhow::anyhow!("{call} transferred {got} bytes, expected {want}")
}

/// The raw getppid(2) system call (rustix issues it directly, nothing is cached).
#[inline]
pub fn getppid() -> i32 {
    rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get())
}

/// open(2) with the given flags; `mode` matters only with O_CREAT. Accepts a `&CStr`
/// (no per-call conversion: use it in timed loops) or a `&Path` (copied to a C string).
#[inline]
pub fn open<P: rustix::path::Arg>(path: P, flags: OFlags, mode: u32) -> SysResult<OwnedFd> {
    check(
        "open",
        rustix::fs::open(
            path,
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode as _),
        ),
    )
}

/// open(2) read-write on an existing file, as seed 004 did (O_RDWR).
#[inline]
pub fn open_rdwr(path: &CStr) -> SysResult<OwnedFd> {
    open(path, OFlags::RDWR, 0)
}

/// close(2) with its result checked (a plain drop would ignore errors).
#[inline]
pub fn close(fd: OwnedFd) -> SysResult<()> {
    let raw = fd.into_raw_fd();
    // SAFETY: `raw` came from an OwnedFd we own and just released; nothing else
    // refers to it, and it is not used after this call.
    let r = unsafe { rustix::io::try_close(raw) };
    check("close", r)
}

/// read(2) into `buf`; returns bytes read.
#[inline]
pub fn read<Fd: AsFd>(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    check("read", rustix::io::read(fd, buf))
}

/// write(2) from `buf`; returns bytes written.
#[inline]
pub fn write<Fd: AsFd>(fd: Fd, buf: &[u8]) -> SysResult<usize> {
    check("write", rustix::io::write(fd, buf))
}

/// pread(2) at `offset`.
#[inline]
pub fn pread<Fd: AsFd>(fd: Fd, buf: &mut [u8], offset: u64) -> SysResult<usize> {
    check("pread", rustix::io::pread(fd, buf, offset))
}

/// pwrite(2) at `offset`.
#[inline]
pub fn pwrite<Fd: AsFd>(fd: Fd, buf: &[u8], offset: u64) -> SysResult<usize> {
    check("pwrite", rustix::io::pwrite(fd, buf, offset))
}

/// lseek(2) to an absolute offset.
#[inline]
pub fn lseek_set<Fd: AsFd>(fd: Fd, offset: u64) -> SysResult<u64> {
    check("lseek", rustix::fs::seek(fd, SeekFrom::Start(offset)))
}

/// fstat(2); returns st_size so the caller can consume it.
#[inline]
pub fn fstat_size<Fd: AsFd>(fd: Fd) -> SysResult<i64> {
    check("fstat", rustix::fs::fstat(fd)).map(|s| s.st_size)
}

/// stat(2) on a path; returns st_size.
#[inline]
pub fn stat_size(path: &CStr) -> SysResult<i64> {
    check("stat", rustix::fs::stat(path)).map(|s| s.st_size)
}

/// stat(2) on `name` in the directory open as `dir` (fstatat: one path component
/// looked up); returns st_size.
#[inline]
pub fn stat_at_size<Fd: AsFd>(dir: Fd, name: &CStr) -> SysResult<i64> {
    check(
        "fstatat",
        rustix::fs::statat(dir, name, rustix::fs::AtFlags::empty()),
    )
    .map(|s| s.st_size)
}

/// A directory opened to name files in (for the *at calls).
pub fn open_dir(path: &CStr) -> SysResult<OwnedFd> {
    open(path, OFlags::RDONLY | OFlags::DIRECTORY, 0)
}

/// Writes all of `buf` at `offset`, retrying short writes; fails on a zero-byte write.
pub fn pwrite_all<Fd: AsFd>(fd: Fd, mut buf: &[u8], mut offset: u64) -> SysResult<()> {
    while !buf.is_empty() {
        let n = pwrite(fd.as_fd(), buf, offset)?;
        if n == 0 {
            return Err(SysError {
                call: "pwrite",
                errno: libc::EIO,
            });
        }
        buf = &buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// Free bytes available to an unprivileged user on the filesystem holding `path`.
pub fn free_space(path: &Path) -> SysResult<u64> {
    let s = check("statvfs", rustix::fs::statvfs(path))?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// True when the calling process may write into `dir` (access(2) with W_OK|X_OK).
pub fn can_write_dir(dir: &Path) -> bool {
    rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok()
}

/// The system's page size.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// A path as a C string, made once so timed loops do not convert it on every call.
pub fn c_path(path: &Path) -> anyhow::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| anyhow::anyhow!("path {} contains a NUL byte", path.display()))
}

/// CLOCK_MONOTONIC's resolution (clock_getres(2)); 1 ns on most Linux machines.
pub fn monotonic_resolution() -> std::time::Duration {
    let t = rustix::time::clock_getres(rustix::time::ClockId::Monotonic);
    std::time::Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec.max(1) as u32)
}

/// CLOCK_MONOTONIC in nanoseconds: comparable between processes, unlike `Instant`.
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Descriptors this process has open now (entries of /proc/self/fd, or /dev/fd where
/// there is no /proc, less the one the listing itself uses). Probes that create
/// descriptors compare it before and after.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .or_else(|_| std::fs::read_dir("/dev/fd"))
        .map_or(0, |d| d.count().saturating_sub(1))
}

/// The width in columns of the terminal on stdout; None when stdout is not a terminal.
pub fn stdout_terminal_width() -> Option<usize> {
    let out = std::io::stdout();
    if !std::io::IsTerminal::is_terminal(&out) {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&out).ok()?;
    (size.ws_col > 0).then_some(size.ws_col as usize)
}

/// The width in columns of the terminal on stderr; None when stderr is not a terminal.
pub fn stderr_terminal_width() -> Option<usize> {
    let err = std::io::stderr();
    if !std::io::IsTerminal::is_terminal(&err) {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&err).ok()?;
    (size.ws_col > 0).then_some(size.ws_col as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_mechanism_is_named_and_recognised() {
        let e = SysError::missing("splice (Linux only)");
        assert!(e.is_missing());
        assert!(e.to_string().starts_with("splice (Linux only)"), "{e}");
        assert!(!SysError::new("open", rustix::io::Errno::NOENT).is_missing());
    }
}
