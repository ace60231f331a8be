//! File-copy system calls: ftruncate, fallocate, fsync, unlink, writable shared
//! mappings with madvise/msync, and wait4(2) for child tools' rusage; the calls that
//! differ by OS (sendfile, copy_file_range, reflink, fadvise, direct I/O, dropping the
//! page cache) come from [`super::os`].

use super::calls::{SysError, SysResult, check};
use super::mapping::Mapping;
use super::rusage::RawRusage;
use rustix::fd::AsFd;
use std::ffi::CStr;

pub use super::os::{
    Advice, clear_direct, copy_file_range, dio_alignment, direct_flags, drop_page_cache, fadvise,
    make_direct, reflink, sendfile,
};

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

/// Writes back every dirty page of `fd`'s filesystem and waits (syncfs(2); sync(2)
/// where there is none): what a durable measurement drains before it starts, so that
/// no earlier row's writeback is timed with it.
pub use super::os::syncfs;

/// fsync(2): data and metadata on stable storage.
pub fn fsync<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    check("fsync", rustix::fs::fsync(fd))
}

/// Whether a file's cached pages can be dropped here.
#[derive(Debug, Clone, PartialEq)]
pub enum Eviction {
    /// fdatasync + POSIX_FADV_DONTNEED leaves no page cached.
    Works,
    /// The OS has no way to (the call and errno).
    Missing(String),
    /// The advice succeeds and pages stay (a memory-backed filesystem such as tmpfs):
    /// how many stayed.
    Stays(String),
}

/// Whether a file's cached pages can be dropped here (fdatasync, then posix_fadvise
/// DONTNEED), tried on a small file of our own made in `dir` and removed after, and
/// verified with mincore(2): on a memory-backed filesystem (tmpfs) the advice succeeds
/// and every page stays. Other failures are errors.
pub fn eviction(dir: &std::path::Path) -> anyhow::Result<Eviction> {
    use rustix::fs::OFlags;
    const LEN: usize = 4 << 12;
    let path = super::calls::c_path(&dir.join("evict-probe.dat"))?;
    let fd = super::calls::open(
        path.as_c_str(),
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL,
        0o600,
    )?;
    let tried = super::calls::write(&fd, &[1u8; LEN])
        .and_then(|_| super::os::fdatasync(&fd))
        .and_then(|_| fadvise(&fd, Advice::DontNeed))
        .and_then(|_| super::mapping::file_residency(&fd, LEN as u64));
    drop(fd);
    remove_if_present(&path)?;
    match tried {
        Ok((0, _)) => Ok(Eviction::Works),
        Ok((resident, total)) => Ok(Eviction::Stays(format!(
            "{resident} of {total} pages stayed in the page cache after POSIX_FADV_DONTNEED"
        ))),
        Err(e) if e.is_missing() => Ok(Eviction::Missing(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// unlink(2); a missing file is not an error.
pub fn remove_if_present(path: &CStr) -> SysResult<()> {
    match rustix::fs::unlink(path) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(SysError::new("unlink", e)),
    }
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
