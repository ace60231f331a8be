//! macOS: no splice, vmsplice, io_uring, copy_file_range, file-to-file sendfile,
//! pipe capacity control, posix_fadvise, per-thread rusage or CPU pinning. Reflink is
//! clonefile(2) (APFS); direct I/O is F_NOCACHE; fdatasync is fsync.

use super::Advice;
pub use super::bsd::{
    copy_xattrs, dio_alignment, drop_page_cache, for_each_dirent, fs_type_at, make_special,
    mount_id, mount_id_at, mount_of, own_fd_table, pipe_capacity, pseudo_fs, seek_data, seek_hole,
    sendfile, set_pipe_capacity, splice, vmsplice,
};
use super::bsd::{sysctl_string, sysctl_u64};
use crate::sys::calls::{SysError, SysResult, check};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::OFlags;
use std::ffi::CStr;

/// copy_file_range(2) does not exist here.
pub fn copy_file_range<A: AsFd, B: AsFd>(
    _src: A,
    _src_off: &mut u64,
    _dst: B,
    _dst_off: &mut u64,
    _len: usize,
) -> SysResult<usize> {
    Err(SysError::missing("copy_file_range (not on macOS)"))
}

/// clonefile(2), which makes a new name: the clone is made beside `dst` and renamed
/// over it (the empty file the caller made), opened for writing before the rename and
/// returned for the caller to use in place of its descriptor. On an error nothing has changed: the
/// caller's descriptor is still the destination's, to copy into another way. (An
/// earlier version removed `dst` first, so a refused clone left the caller writing
/// into a file with no name.) APFS only; other filesystems fail with ENOTSUP, reported
/// as unsupported.
pub fn reflink(
    _src_fd: &OwnedFd,
    _dst_fd: &OwnedFd,
    src: &CStr,
    dst: &CStr,
) -> SysResult<Option<OwnedFd>> {
    let mut name = dst.to_bytes().to_vec();
    name.extend_from_slice(b".ioprobe-clone");
    let clone = std::ffi::CString::new(name)
        .map_err(|_| SysError::new("clonefile", rustix::io::Errno::INVAL))?;
    // SAFETY: both paths are NUL-terminated C strings that outlive the call.
    let r = unsafe { libc::clonefile(src.as_ptr(), clone.as_ptr(), CLONE_NOFOLLOW) };
    if r != 0 {
        return Err(SysError {
            call: "clonefile",
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        });
    }
    // Opened before the rename, so that nothing can fail once `dst` is the clone.
    let fd = match crate::sys::calls::open(&clone, OFlags::WRONLY, 0) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = rustix::fs::unlink(&clone);
            return Err(e);
        }
    };
    if let Err(e) = rustix::fs::rename(&clone, dst) {
        let _ = rustix::fs::unlink(&clone);
        return Err(SysError::new("rename", e));
    }
    Ok(Some(fd))
}

/// <sys/clonefile.h>: do not follow a symbolic link at `src` (not in the libc crate).
const CLONE_NOFOLLOW: u32 = 0x0001;

/// posix_fadvise(2) does not exist here.
pub fn fadvise<Fd: AsFd>(_fd: Fd, _advice: Advice) -> SysResult<()> {
    Err(SysError::missing("posix_fadvise (not on macOS)"))
}

/// fdatasync is not in macOS's API: fsync(2) (which, unlike F_FULLFSYNC, does not
/// flush the drive's cache).
pub fn fdatasync<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    check("fsync", rustix::fs::fsync(fd))
}

/// Open flags for a directory used only as the base of *at calls: no O_PATH here, so
/// it is opened for reading (a directory we cannot read falls back to whole paths).
pub fn dir_handle_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

/// No O_DIRECT: [`make_direct`] sets F_NOCACHE instead.
pub fn direct_flags() -> OFlags {
    OFlags::empty()
}

/// fcntl(F_NOCACHE, 1): reads and writes bypass the unified buffer cache.
pub fn make_direct<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    nocache(fd, 1)
}

/// fcntl(F_NOCACHE, 0).
pub fn clear_direct<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    nocache(fd, 0)
}

fn nocache<Fd: AsFd>(fd: Fd, on: libc::c_int) -> SysResult<()> {
    // SAFETY: fcntl on a descriptor we borrow, with an integer argument.
    let r = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_NOCACHE, on) };
    if r == -1 {
        return Err(SysError {
            call: "fcntl(F_NOCACHE)",
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        });
    }
    Ok(())
}

/// pipe(2), then close-on-exec on both ends (no pipe2 here).
pub fn pipe() -> SysResult<(OwnedFd, OwnedFd)> {
    let (r, w) = check("pipe", rustix::pipe::pipe())?;
    for fd in [&r, &w] {
        check(
            "fcntl(F_SETFD)",
            rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC),
        )?;
    }
    Ok((r, w))
}

/// Every CPU: macOS has no affinity to read.
pub fn allowed_cpus() -> SysResult<Vec<usize>> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok((0..n).collect())
}

/// macOS has no CPU pinning.
pub fn set_affinity(_cpus: &[usize]) -> SysResult<()> {
    Err(SysError::missing("CPU pinning (macOS has none)"))
}

/// No per-thread getrusage: the process's, labelled so.
pub const RUSAGE_OWN: (libc::c_int, &str) = (libc::RUSAGE_SELF, "process");

/// No parent-death signal here; a child is still always killed and reaped by its
/// parent's handle.
pub fn die_with_parent() -> SysResult<()> {
    Ok(())
}

/// CPU model, memory and caches from sysctl hw.* / machdep.*.
pub fn sysctl_facts() -> Option<super::Facts> {
    let caches = [
        (1, "Data", "hw.l1dcachesize"),
        (2, "Unified", "hw.l2cachesize"),
        (3, "Unified", "hw.l3cachesize"),
    ]
    .into_iter()
    .filter_map(|(level, kind, name)| Some((level, kind, sysctl_u64(name).filter(|&b| b > 0)?)))
    .collect();
    Some(super::Facts {
        cpu_model: sysctl_string("machdep.cpu.brand_string"),
        memory_bytes: sysctl_u64("hw.memsize"),
        caches,
    })
}

/// Free and speculative pages × the page size (vm.page_*_count): about what can be had
/// without paging.
pub fn memory_available() -> Option<u64> {
    let page = sysctl_u64("hw.pagesize")?;
    let free = sysctl_u64("vm.page_free_count")?;
    let spec = sysctl_u64("vm.page_speculative_count").unwrap_or(0);
    Some((free + spec) * page)
}

/// clonefile makes a new file renamed over the destination: an existing destination
/// would lose its inode (its other links, its owner), so it is written in place instead.
pub const REFLINK_REPLACES_FILE: bool = true;
