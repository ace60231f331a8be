//! File-copy system calls: sendfile(2), copy_file_range(2), FICLONE, posix_fadvise(2),
//! ftruncate, fsync, O_DIRECT flags and alignment (statx STATX_DIOALIGN), unlink,
//! writable shared mappings with madvise/msync, and wait4(2) for child tools' rusage.

use super::calls::{SysError, SysResult, check};
use super::mapping::Mapping;
use super::rusage::RawRusage;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Advice, AtFlags, OFlags, StatxFlags};
use std::ffi::CStr;

/// sendfile(2) from `src` at `*off` into `dst`; returns bytes moved.
pub fn sendfile<A: AsFd, B: AsFd>(dst: A, src: B, off: &mut u64, len: usize) -> SysResult<usize> {
    check("sendfile", rustix::fs::sendfile(dst, src, Some(off), len))
}

/// copy_file_range(2) between explicit offsets; returns bytes copied.
pub fn copy_file_range<A: AsFd, B: AsFd>(
    src: A,
    src_off: &mut u64,
    dst: B,
    dst_off: &mut u64,
    len: usize,
) -> SysResult<usize> {
    check(
        "copy_file_range",
        rustix::fs::copy_file_range(src, Some(src_off), dst, Some(dst_off), len),
    )
}

/// ioctl(FICLONE): make `dst` share `src`'s blocks (reflink).
pub fn ficlone<A: AsFd, B: AsFd>(dst: A, src: B) -> SysResult<()> {
    check("ioctl(FICLONE)", rustix::fs::ioctl_ficlone(dst, src))
}

/// posix_fadvise(2) over the whole file.
pub fn fadvise<Fd: AsFd>(fd: Fd, advice: Advice) -> SysResult<()> {
    check("posix_fadvise", rustix::fs::fadvise(fd, 0, None, advice))
}

/// ftruncate(2).
pub fn ftruncate<Fd: AsFd>(fd: Fd, len: u64) -> SysResult<()> {
    check("ftruncate", rustix::fs::ftruncate(fd, len))
}

/// Reserves `len` bytes of blocks for `fd` with fallocate(2), so stores through a
/// mapping of it cannot fail for lack of space (a SIGBUS). Returns false where the
/// filesystem cannot reserve (EOPNOTSUPP); a full filesystem is an error (ENOSPC).
pub fn reserve<Fd: AsFd>(fd: Fd, len: u64) -> SysResult<bool> {
    if len == 0 {
        return Ok(true);
    }
    match rustix::fs::fallocate(fd, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::OPNOTSUPP) => Ok(false),
        Err(e) => Err(SysError::new("fallocate", e)),
    }
}

/// fsync(2): data and metadata on stable storage.
pub fn fsync<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    check("fsync", rustix::fs::fsync(fd))
}

/// Turns O_DIRECT off on an open file (for an unaligned tail).
pub fn clear_direct<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    let fl = check("fcntl(F_GETFL)", rustix::fs::fcntl_getfl(&fd))?;
    check(
        "fcntl(F_SETFL)",
        rustix::fs::fcntl_setfl(&fd, fl - OFlags::DIRECT),
    )
}

/// Direct-I/O alignment of the file at `path` (memory, file offset), from statx
/// STATX_DIOALIGN; `None` when the kernel or filesystem does not report it.
pub fn dio_alignment(path: &CStr) -> SysResult<Option<(u32, u32)>> {
    let st = check(
        "statx",
        rustix::fs::statx(
            rustix::fs::CWD,
            path,
            AtFlags::empty(),
            StatxFlags::DIOALIGN,
        ),
    )?;
    if st.stx_mask & StatxFlags::DIOALIGN.bits() == 0 || st.stx_dio_offset_align == 0 {
        return Ok(None);
    }
    Ok(Some((st.stx_dio_mem_align, st.stx_dio_offset_align)))
}

/// unlink(2); a missing file is not an error.
pub fn remove_if_present(path: &CStr) -> SysResult<()> {
    match rustix::fs::unlink(path) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(SysError::new("unlink", e)),
    }
}

/// Writes "1" to /proc/sys/vm/drop_caches (root only): drops the whole page cache.
pub fn drop_page_cache() -> SysResult<()> {
    let fd: OwnedFd = check(
        "open(/proc/sys/vm/drop_caches)",
        rustix::fs::open(c"/proc/sys/vm/drop_caches", OFlags::WRONLY, 0.into()),
    )?;
    super::calls::write(&fd, b"1\n").map(|_| ())
}

impl Mapping {
    /// madvise(2) over the whole mapping.
    pub fn advise(&self, advice: rustix::mm::Advice) -> SysResult<()> {
        // SAFETY: the range is exactly our live mapping; MADV_SEQUENTIAL and friends
        // only change read-ahead and reclaim hints, never the contents.
        unsafe { rustix::mm::madvise(self.as_ptr().cast(), self.byte_len(), advice) }
            .map_err(|e| SysError::new("madvise", e))
    }

    /// msync(2) of the whole mapping, synchronous (MS_SYNC) or queued (MS_ASYNC).
    pub fn sync(&self, wait: bool) -> SysResult<()> {
        let flags = if wait {
            rustix::mm::MsyncFlags::SYNC
        } else {
            rustix::mm::MsyncFlags::ASYNC
        };
        // SAFETY: the range is exactly our live shared file mapping.
        unsafe { rustix::mm::msync(self.as_ptr().cast(), self.byte_len(), flags) }
            .map_err(|e| SysError::new("msync", e))
    }

    /// Copies all of `src` into this (writable) mapping from offset 0 (memcpy); both
    /// must have the same length.
    /// memcpy of the whole of `src` in pieces of 64 MiB; `stop()` is asked between
    /// pieces, and a true answer ends the copy early with `Ok(false)`.
    pub fn copy_from(&mut self, src: &Mapping, stop: &dyn Fn() -> bool) -> SysResult<bool> {
        if src.byte_len() != self.byte_len() {
            return Err(SysError {
                call: "memcpy",
                errno: libc::EINVAL,
            });
        }
        const PIECE: usize = 64 << 20;
        let mut off = 0;
        while off < self.byte_len() {
            if off > 0 && stop() {
                return Ok(false);
            }
            let n = (self.byte_len() - off).min(PIECE);
            // SAFETY: two distinct live mappings of equal length, [off, off+n) inside
            // both; the destination is writable (mapped PROT_WRITE by the caller).
            unsafe {
                std::ptr::copy_nonoverlapping(src.as_ptr().add(off), self.as_ptr().add(off), n)
            };
            off += n;
        }
        Ok(true)
    }

    /// The mapped bytes, read-only.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is live for `self`'s lifetime and `byte_len` long; the
        // file is private to ioprobe's scratch directory, so nothing truncates it under
        // us while the slice is borrowed.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.byte_len()) }
    }
}

/// Waits for child `pid` and returns (exit status or 128 + signal, its rusage).
pub fn wait_with_rusage(pid: u32) -> SysResult<(i32, RawRusage)> {
    let mut status = 0;
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    loop {
        // SAFETY: `status` and `ru` are valid, properly sized out-parameters owned here.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, ru.as_mut_ptr()) };
        if r == pid as libc::pid_t {
            break;
        }
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if r < 0 && errno == libc::EINTR {
            continue;
        }
        return Err(SysError {
            call: "wait4",
            errno,
        });
    }
    // SAFETY: wait4 succeeded, so it filled the (zeroed) struct.
    let ru = unsafe { ru.assume_init() };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Ok((code, super::rusage::from_libc(&ru)))
}
