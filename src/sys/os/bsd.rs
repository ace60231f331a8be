//! What macOS and FreeBSD share: the Linux-only mechanisms are missing (each returns
//! [`SysError::missing`] with the reason), directory clean-up in a signal handler is
//! left to the next run, and machine facts come from sysctl.

use crate::sys::calls::{SysError, SysResult};
use rustix::fd::AsFd;
use std::ffi::{CStr, CString};

/// sendfile(2) copies file to socket here, never file to file.
pub fn sendfile<A: AsFd, B: AsFd>(
    _dst: A,
    _src: B,
    _off: &mut u64,
    _len: usize,
) -> SysResult<usize> {
    Err(SysError::missing(
        "sendfile file to file (Linux only; sockets here)",
    ))
}

/// No pipe capacity control (F_SETPIPE_SZ is Linux's).
pub fn set_pipe_capacity<Fd: AsFd>(_fd: Fd, _bytes: usize) -> SysResult<usize> {
    Err(SysError::missing("F_SETPIPE_SZ (Linux only)"))
}

/// No way to read a pipe's capacity (F_GETPIPE_SZ is Linux's).
pub fn pipe_capacity<Fd: AsFd>(_fd: Fd) -> SysResult<usize> {
    Err(SysError::missing("F_GETPIPE_SZ (Linux only)"))
}

/// vmsplice(2) is Linux's.
pub fn vmsplice<Fd: AsFd>(_pipe_w: Fd, _buf: &[u8]) -> SysResult<usize> {
    Err(SysError::missing("vmsplice (Linux only)"))
}

/// splice(2) is Linux's.
pub fn splice<A: AsFd, B: AsFd>(
    _from: A,
    _from_off: Option<&mut u64>,
    _to: B,
    _to_off: Option<&mut u64>,
    _len: usize,
) -> SysResult<usize> {
    Err(SysError::missing("splice (Linux only)"))
}

/// No /proc/sys/vm/drop_caches.
pub fn drop_page_cache() -> SysResult<()> {
    Err(SysError::missing("drop_caches (Linux only)"))
}

/// The statx DIOALIGN query is Linux's: alignment unknown (callers use 512).
pub fn dio_alignment(_path: &CStr) -> SysResult<Option<(u32, u32)>> {
    Ok(None)
}

/// Not in a signal handler here: getdents64 is Linux's, and a SIGBUS leaves the scratch
/// directory for the next run to reclaim (its owner file names a dead process).
pub fn for_each_dirent(
    _fd: libc::c_int,
    _buf: &mut [u8],
    _each: &mut dyn FnMut(&CStr, bool),
) -> bool {
    false
}

/// An integer sysctl by name, if the OS has it.
pub fn sysctl_u64(name: &str) -> Option<u64> {
    let name = CString::new(name).ok()?;
    let mut v: u64 = 0;
    let mut len = std::mem::size_of::<u64>();
    // SAFETY: `name` is NUL-terminated; `v`/`len` describe a writable u64 buffer and
    // sysctlbyname writes at most `len` bytes (4 for an int-sized value, which then
    // sits in the low bytes on these little-endian targets, as `v` was zero).
    let r = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            (&mut v as *mut u64).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    (r == 0 && (len == 4 || len == 8)).then_some(if len == 4 { v & 0xffff_ffff } else { v })
}

/// A string sysctl by name, if the OS has it.
pub fn sysctl_string(name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    let mut buf = vec![0u8; 256];
    let mut len = buf.len();
    // SAFETY: as above, with a 256-byte buffer whose length is passed in `len`.
    let r = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        return None;
    }
    buf.truncate(len);
    let s = CStr::from_bytes_until_nul(&buf)
        .ok()?
        .to_string_lossy()
        .trim()
        .to_string();
    (!s.is_empty()).then_some(s)
}

/// Mount ids (and so the bind-mount look-through) are Linux's.
pub fn mount_id(_fd: rustix::fd::BorrowedFd<'_>) -> Option<u64> {
    None
}

/// No mount ids here.
pub fn mount_id_at(_path: &std::path::Path) -> Option<u64> {
    None
}

/// No statmount(2) here: the caller reads the mount table.
pub fn fs_type_at(_path: &std::path::Path) -> Option<String> {
    None
}

/// The mount holding `dir` from statfs(2): (mount point, fs type, source, flags).
pub fn mount_of(dir: &std::path::Path) -> Option<(String, String, String, String)> {
    let st = rustix::fs::statfs(dir).ok()?;
    let text = |raw: &[libc::c_char]| {
        let bytes: Vec<u8> = raw
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some((
        text(&st.f_mntonname),
        text(&st.f_fstypename),
        text(&st.f_mntfromname),
        format!("flags {:#x}", st.f_flags),
    ))
}

/// io_uring is Linux's.
pub mod uring {
    use crate::sys::calls::{SysError, SysResult};
    use rustix::fd::OwnedFd;

    /// Never made: [`UringCopy::new`] says io_uring is missing.
    pub struct UringCopy(());

    impl UringCopy {
        pub fn new(_depth: u32, _buf_size: usize, _registered: bool) -> SysResult<UringCopy> {
            Err(SysError::missing("io_uring (Linux only)"))
        }

        pub fn copy(
            &mut self,
            _src: &OwnedFd,
            _dst: &OwnedFd,
            _size: u64,
            _stop: &dyn Fn() -> bool,
        ) -> SysResult<u64> {
            Err(SysError::missing("io_uring (Linux only)"))
        }
    }
}

/// SEEK_DATA is not used here: sparse files are copied whole.
pub fn seek_data<Fd: AsFd>(_fd: Fd, _from: u64) -> SysResult<Option<u64>> {
    Err(SysError::missing("lseek(SEEK_DATA) (used on Linux only)"))
}

pub fn seek_hole<Fd: AsFd>(_fd: Fd, _from: u64) -> SysResult<u64> {
    Err(SysError::missing("lseek(SEEK_HOLE) (used on Linux only)"))
}

/// Extended attributes are copied on Linux only.
pub fn copy_xattrs<A: AsFd, B: AsFd>(_src: A, _dst: B) -> SysResult<(usize, usize)> {
    Err(SysError::missing("xattr copy (Linux only)"))
}

/// No per-thread descriptor tables here: the shared one is kept.
pub fn own_fd_table() -> SysResult<()> {
    Ok(())
}

/// Making FIFOs and devices (cp -a as root) is done on Linux only.
pub fn make_special(_path: &std::path::Path, _kind: &str, _rdev: u64) -> SysResult<()> {
    Err(SysError::missing(
        "mknod (cp -a makes special files on Linux only)",
    ))
}

/// No procfs or sysfs whose sizes lie here.
pub fn pseudo_fs<Fd: AsFd>(_fd: Fd) -> bool {
    false
}

/// No MSG_ZEROCOPY (Linux's).
pub fn enable_zerocopy<Fd: AsFd>(_fd: Fd) -> SysResult<()> {
    Err(SysError::missing("MSG_ZEROCOPY (Linux only)"))
}

/// No MSG_ZEROCOPY (Linux's).
pub fn send_zerocopy<Fd: AsFd>(_fd: Fd, _buf: &[u8]) -> SysResult<usize> {
    Err(SysError::missing("MSG_ZEROCOPY (Linux only)"))
}

/// No MSG_ZEROCOPY (Linux's).
pub fn zerocopy_completions<Fd: AsFd>(_fd: Fd) -> SysResult<Vec<(u32, u32, bool)>> {
    Err(SysError::missing("MSG_ZEROCOPY (Linux only)"))
}

/// TCP_INFO's segment count is Linux's.
pub fn tcp_segments_out<Fd: AsFd>(_fd: Fd) -> SysResult<u64> {
    Err(SysError::missing("TCP_INFO segments (Linux only)"))
}

/// No syncfs(2) here: sync(2), every filesystem's dirty pages written back (sync waits
/// for them on these systems).
pub fn syncfs<Fd: rustix::fd::AsFd>(_fd: Fd) -> crate::sys::calls::SysResult<()> {
    rustix::fs::sync();
    Ok(())
}
