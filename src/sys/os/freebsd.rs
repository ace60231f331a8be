//! FreeBSD: no splice, vmsplice, io_uring, file-to-file sendfile, reflink or pipe
//! capacity control; copy_file_range(2) from FreeBSD 13.

use super::Advice;
pub use super::bsd::{
    dio_alignment, drop_page_cache, for_each_dirent, mount_of, pipe_capacity, sendfile,
    set_pipe_capacity, splice, vmsplice,
};
use super::bsd::{sysctl_string, sysctl_u64};
use crate::sys::calls::{SysError, SysResult, check};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::OFlags;
use rustix::pipe::PipeFlags;
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use std::ffi::CStr;

/// The OS, as reports name it.
pub const NAME: &str = "FreeBSD";

/// copy_file_range(2) (FreeBSD 13+) between explicit offsets; returns bytes copied.
pub fn copy_file_range<A: AsFd, B: AsFd>(
    src: A,
    src_off: &mut u64,
    dst: B,
    dst_off: &mut u64,
    len: usize,
) -> SysResult<usize> {
    let mut so = *src_off as libc::off_t;
    let mut d_o = *dst_off as libc::off_t;
    // SAFETY: both descriptors are borrowed for the call; the offsets are our locals.
    let n = unsafe {
        libc::copy_file_range(
            src.as_fd().as_raw_fd(),
            &mut so,
            dst.as_fd().as_raw_fd(),
            &mut d_o,
            len,
            0,
        )
    };
    if n < 0 {
        return Err(SysError {
            call: "copy_file_range",
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        });
    }
    *src_off = so as u64;
    *dst_off = d_o as u64;
    Ok(n as usize)
}

/// No reflink call here.
pub fn reflink(
    _src_fd: &OwnedFd,
    _dst_fd: &OwnedFd,
    _src: &CStr,
    _dst: &CStr,
) -> SysResult<Option<OwnedFd>> {
    Err(SysError::missing(
        "reflink (no FICLONE or clonefile on FreeBSD)",
    ))
}

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

/// Open flags that bypass the buffer cache (O_DIRECT).
pub fn direct_flags() -> OFlags {
    OFlags::DIRECT
}

/// Nothing more than O_DIRECT is needed.
pub fn make_direct<Fd: AsFd>(_fd: Fd) -> SysResult<()> {
    Ok(())
}

/// Turns O_DIRECT off on an open file (for an unaligned tail).
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

/// CPUs the calling thread may run on now (cpuset).
pub fn allowed_cpus() -> SysResult<Vec<usize>> {
    let set = sched_getaffinity(None).map_err(|e| SysError::new("cpuset_getaffinity", e))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Lets the calling thread run only on the CPUs in `cpus` (cpuset).
pub fn set_affinity(cpus: &[usize]) -> SysResult<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    sched_setaffinity(None, &set).map_err(|e| SysError::new("cpuset_setaffinity", e))
}

/// getrusage's `who` for the calling thread alone, and what it covers in words.
pub const RUSAGE_OWN: (libc::c_int, &str) = (libc::RUSAGE_THREAD, "thread");

/// procctl(PROC_PDEATHSIG_CTL): this child dies with its parent.
pub fn die_with_parent() -> SysResult<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| SysError::new("procctl(PROC_PDEATHSIG_CTL)", e))
}

/// CPU model, CPUs and memory from sysctl hw.*; FreeBSD does not report cache sizes
/// there, so they stay unknown.
pub fn sysctl_facts() -> Option<super::Facts> {
    Some(super::Facts {
        cpu_model: sysctl_string("hw.model"),
        logical_cpus: sysctl_u64("hw.ncpu").map(|n| n as usize),
        memory_bytes: sysctl_u64("hw.physmem"),
        caches: Vec::new(),
    })
}

/// Free and inactive pages × the page size (vm.stats.vm.*): about what can be had
/// without paging.
pub fn memory_available() -> Option<u64> {
    let page = sysctl_u64("hw.pagesize")?;
    let free = sysctl_u64("vm.stats.vm.v_free_count")?;
    let inactive = sysctl_u64("vm.stats.vm.v_inactive_count").unwrap_or(0);
    Some((free + inactive) * page)
}
