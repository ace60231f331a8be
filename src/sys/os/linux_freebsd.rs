//! What Linux and FreeBSD share: posix_fadvise, fdatasync, O_DIRECT, pipe2, CPU
//! affinity and per-thread rusage.

use super::Advice;
use crate::sys::calls::{SysError, SysResult, check};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::OFlags;
use rustix::pipe::PipeFlags;
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// getrusage's `who` for the calling thread alone, and what it covers in words.
pub const RUSAGE_OWN: (libc::c_int, &str) = (libc::RUSAGE_THREAD, "thread");

/// posix_fadvise(2) over the whole file.
pub fn fadvise<Fd: AsFd>(fd: Fd, advice: Advice) -> SysResult<()> {
    let a = match advice {
        Advice::Sequential => rustix::fs::Advice::Sequential,
        Advice::DontNeed => rustix::fs::Advice::DontNeed,
    };
    check("posix_fadvise", rustix::fs::fadvise(fd, 0, None, a))
}

/// fdatasync(2).
pub fn fdatasync<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    check("fdatasync", rustix::fs::fdatasync(fd))
}

/// Open flags that bypass the page cache (O_DIRECT).
pub fn direct_flags() -> OFlags {
    OFlags::DIRECT
}

/// What else a descriptor opened with [`direct_flags`] needs (nothing here).
pub fn make_direct<Fd: AsFd>(_fd: Fd) -> SysResult<()> {
    Ok(())
}

/// Turns direct I/O off on an open file (for an unaligned tail).
pub fn clear_direct<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    let fl = check("fcntl(F_GETFL)", rustix::fs::fcntl_getfl(&fd))?;
    check(
        "fcntl(F_SETFL)",
        rustix::fs::fcntl_setfl(&fd, fl - OFlags::DIRECT),
    )
}

/// A pipe (read end, write end), both close-on-exec.
pub fn pipe() -> SysResult<(OwnedFd, OwnedFd)> {
    rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(|e| SysError::new("pipe2", e))
}

/// CPUs the calling thread may run on now.
pub fn allowed_cpus() -> SysResult<Vec<usize>> {
    let set = sched_getaffinity(None).map_err(|e| SysError::new("sched_getaffinity", e))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Lets the calling thread run only on the CPUs in `cpus`.
pub fn set_affinity(cpus: &[usize]) -> SysResult<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    sched_setaffinity(None, &set).map_err(|e| SysError::new("sched_setaffinity", e))
}

/// Open flags for a directory used only as the base of *at calls: O_PATH, which needs
/// no read permission on it.
pub fn dir_handle_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC
}
