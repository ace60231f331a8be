//! FreeBSD: no splice, vmsplice, io_uring, file-to-file sendfile, reflink or pipe
//! capacity control; copy_file_range(2) from FreeBSD 13.

pub use super::bsd::{
    copy_xattrs, dio_alignment, drop_page_cache, for_each_dirent, fs_type_at, make_special,
    mount_id, mount_id_at, mount_of, own_fd_table, pipe_capacity, pseudo_fs, seek_data, seek_hole,
    sendfile, set_pipe_capacity, splice, vmsplice,
};
use super::bsd::{sysctl_string, sysctl_u64};
pub use super::linux_freebsd::*;
use crate::sys::calls::{SysError, SysResult};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use std::ffi::CStr;

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

/// procctl(PROC_PDEATHSIG_CTL): this child dies with its parent.
pub fn die_with_parent() -> SysResult<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| SysError::new("procctl(PROC_PDEATHSIG_CTL)", e))
}

/// CPU model and memory from sysctl hw.*; FreeBSD does not report cache sizes
/// there, so they stay unknown.
pub fn sysctl_facts() -> Option<super::Facts> {
    Some(super::Facts {
        cpu_model: sysctl_string("hw.model"),
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

/// No reflink here at all.
pub const REFLINK_REPLACES_FILE: bool = false;
