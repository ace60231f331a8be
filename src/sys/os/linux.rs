//! Linux: every mechanism ioprobe measures exists here.

pub use super::linux_freebsd::*;

use crate::sys::calls::{SysError, SysResult, check};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, OFlags, StatxFlags};
use rustix::pipe::{IoSliceRaw, SpliceFlags};
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

/// Makes the new, empty file `dst` (open as `dst_fd`) share the blocks of `src` (open
/// as `src_fd`): ioctl(FICLONE). Returns a new descriptor for the destination when the
/// OS had to make the file anew (never here).
pub fn reflink(
    src_fd: &OwnedFd,
    dst_fd: &OwnedFd,
    _src: &CStr,
    _dst: &CStr,
) -> SysResult<Option<OwnedFd>> {
    check("ioctl(FICLONE)", rustix::fs::ioctl_ficlone(dst_fd, src_fd))?;
    Ok(None)
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

/// Writes "1" to /proc/sys/vm/drop_caches (root only): drops the whole page cache.
pub fn drop_page_cache() -> SysResult<()> {
    let fd: OwnedFd = check(
        "open(/proc/sys/vm/drop_caches)",
        rustix::fs::open(c"/proc/sys/vm/drop_caches", OFlags::WRONLY, 0.into()),
    )?;
    crate::sys::calls::write(&fd, b"1\n").map(|_| ())
}

/// Asks for a pipe capacity (F_SETPIPE_SZ); returns the capacity the kernel granted
/// (it rounds up to a power-of-two number of pages).
pub fn set_pipe_capacity<Fd: AsFd>(fd: Fd, bytes: usize) -> SysResult<usize> {
    rustix::pipe::fcntl_setpipe_size(&fd, bytes).map_err(|e| SysError::new("F_SETPIPE_SZ", e))?;
    pipe_capacity(fd)
}

/// The pipe's capacity now (F_GETPIPE_SZ).
pub fn pipe_capacity<Fd: AsFd>(fd: Fd) -> SysResult<usize> {
    rustix::pipe::fcntl_getpipe_size(fd).map_err(|e| SysError::new("F_GETPIPE_SZ", e))
}

/// vmsplice(2) of `buf` into the pipe's write end (no SPLICE_F_GIFT): the pipe holds
/// references to the pages, so the data the reader sees is whatever the pages hold when
/// it reads. Returns bytes queued (may be fewer than `buf.len()`).
pub fn vmsplice<Fd: AsFd>(pipe_w: Fd, buf: &[u8]) -> SysResult<usize> {
    let iov = [IoSliceRaw::from_slice(buf)];
    // SAFETY: `pipe_w` is a pipe's write end, so the kernel only reads `buf` (it maps
    // its pages into the pipe; they stay referenced, never freed under us). Without
    // SPLICE_F_GIFT no alignment or immutability promise is made: a later change to
    // `buf` can only change the bytes a reader sees, which the caller's buffer
    // rotation prevents and the reader's stamp check would detect.
    unsafe { rustix::pipe::vmsplice(pipe_w, &iov, SpliceFlags::empty()) }
        .map_err(|e| SysError::new("vmsplice", e))
}

/// splice(2) of up to `len` bytes between `from` and `to` (one must be a pipe), with
/// optional file offsets. Returns bytes moved; 0 at end of input.
pub fn splice<A: AsFd, B: AsFd>(
    from: A,
    from_off: Option<&mut u64>,
    to: B,
    to_off: Option<&mut u64>,
    len: usize,
) -> SysResult<usize> {
    rustix::pipe::splice(from, from_off, to, to_off, len, SpliceFlags::MOVE)
        .map_err(|e| SysError::new("splice", e))
}

/// Arms a signal that kills this (child) process when its parent dies
/// (PR_SET_PDEATHSIG).
pub fn die_with_parent() -> SysResult<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| SysError::new("prctl(PR_SET_PDEATHSIG)", e))
}

/// Reads directory entries of `fd` into `buf` with getdents64(2) and calls `each`
/// with (name, is a directory) for every one; returns false when nothing could be read.
/// System calls only: usable inside a signal handler.
pub fn for_each_dirent(fd: libc::c_int, buf: &mut [u8], each: &mut dyn FnMut(&CStr, bool)) -> bool {
    // SAFETY: lseek and getdents64 on the caller's directory descriptor into its buffer.
    let n = unsafe {
        libc::lseek(fd, 0, libc::SEEK_SET);
        libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len())
    };
    if n <= 0 {
        return false;
    }
    let n = n as usize;
    let mut off = 0usize;
    while off + 19 < n {
        // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
        let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
        if reclen == 0 || off + reclen > n {
            return true;
        }
        let kind = buf[off + 18];
        let name = &buf[off + 19..off + reclen];
        off += reclen;
        if let Ok(name) = CStr::from_bytes_until_nul(name) {
            each(name, kind == libc::DT_DIR);
        }
    }
    true
}

/// The id of the mount `fd` is on (statx's STATX_MNT_ID, Linux 5.8+), as
/// /proc/self/mountinfo numbers mounts.
pub fn mount_id(fd: rustix::fd::BorrowedFd<'_>) -> Option<u64> {
    given_mount_id(rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID).ok()?)
}

/// The id of the mount `path` is on (see [`mount_id`]), the last component followed.
pub fn mount_id_at(path: &std::path::Path) -> Option<u64> {
    given_mount_id(
        rustix::fs::statx(rustix::fs::CWD, path, AtFlags::empty(), StatxFlags::MNT_ID).ok()?,
    )
}

/// The type of the filesystem `path` is on (the last component followed), asked of
/// its mount alone: statx's unique mount id, then statmount(2) (Linux 6.8+), without
/// reading the mount table (about 0.1 ms for /proc/self/mountinfo here). None where
/// either is missing, and for a type that carries a subtype in the table (`fuse.X`).
pub fn fs_type_at(path: &std::path::Path) -> Option<String> {
    const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
    const STATMOUNT_FS_TYPE: u64 = 0x20;
    // The same number on every architecture (the shared table, 424 on).
    const SYS_STATMOUNT: libc::c_long = 457;
    // struct statmount: `mask` at 8, `fs_type` (an offset into `str`) at 36, `str` at
    // 512 (the fixed part, spare words included).
    const STR: usize = 512;
    #[repr(C)]
    struct MntIdReq {
        size: u32,
        spare: u32,
        mnt_id: u64,
        param: u64,
    }
    let unique = StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE);
    let s = rustix::fs::statx(rustix::fs::CWD, path, AtFlags::empty(), unique).ok()?;
    if s.stx_mask & STATX_MNT_ID_UNIQUE == 0 {
        return None;
    }
    let req = MntIdReq {
        size: std::mem::size_of::<MntIdReq>() as u32,
        spare: 0,
        mnt_id: s.stx_mnt_id,
        param: STATMOUNT_FS_TYPE,
    };
    let mut buf = [0u8; 1024];
    // SAFETY: statmount reads the 24-byte request (version 0) and writes at most
    // `buf.len()` bytes into `buf` (EOVERFLOW past it).
    let r = unsafe {
        libc::syscall(
            SYS_STATMOUNT,
            &req as *const MntIdReq,
            buf.as_mut_ptr(),
            buf.len(),
            0,
        )
    };
    let u32_at = |at: usize| u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or_default());
    let mask = u64::from_ne_bytes(buf[8..16].try_into().unwrap_or_default());
    if r != 0 || mask & STATMOUNT_FS_TYPE == 0 || (u32_at(0) as usize) <= STR {
        return None;
    }
    let name = buf.get(STR + u32_at(36) as usize..)?;
    let name = &name[..name.iter().position(|&b| b == 0)?];
    let name = std::str::from_utf8(name).ok()?;
    (!name.is_empty() && !name.starts_with("fuse")).then(|| name.to_string())
}

/// The mount id a statx answer carries, when the kernel gave one (Linux 5.8+).
fn given_mount_id(s: rustix::fs::Statx) -> Option<u64> {
    (s.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(s.stx_mnt_id)
}

/// The mount holding a directory: read from /proc/self/mountinfo by the caller here.
pub fn mount_of(_dir: &std::path::Path) -> Option<(String, String, String, String)> {
    None
}

/// Machine facts this OS gives outside /proc and /sys: none (they are read there).
pub fn sysctl_facts() -> Option<super::Facts> {
    None
}

/// Available memory: read from /proc/meminfo by the caller here.
pub fn memory_available() -> Option<u64> {
    None
}

/// The next offset at or after `from` holding data (SEEK_DATA); None past the last.
pub fn seek_data<Fd: AsFd>(fd: Fd, from: u64) -> SysResult<Option<u64>> {
    match rustix::fs::seek(fd, rustix::fs::SeekFrom::Data(from)) {
        Ok(o) => Ok(Some(o)),
        Err(rustix::io::Errno::NXIO) => Ok(None),
        Err(e) => Err(SysError::new("lseek(SEEK_DATA)", e)),
    }
}

/// The bytes a listxattr/getxattr-style call returns, read into a small buffer that
/// doubles while the kernel says it is too small (ERANGE), up to the 64 KiB the kernel
/// allows. (rustix reports at most the buffer's length, so an empty buffer cannot ask
/// for the size.)
fn sized(
    mut call: impl FnMut(&mut [u8]) -> rustix::io::Result<usize>,
) -> rustix::io::Result<Vec<u8>> {
    // On the stack first: most files have no xattrs, and a heap buffer per file showed
    // in a copy of empty files.
    let mut first = [0u8; 256];
    match call(&mut first) {
        Ok(n) => return Ok(first[..n].to_vec()),
        Err(rustix::io::Errno::RANGE) => {}
        Err(e) => return Err(e),
    }
    let mut len = 512;
    loop {
        let mut buf = vec![0u8; len];
        match call(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(rustix::io::Errno::RANGE) if len < 64 * 1024 => len *= 2,
            Err(e) => return Err(e),
        }
    }
}

/// The next hole at or after `from` (SEEK_HOLE; the file's end counts as one).
pub fn seek_hole<Fd: AsFd>(fd: Fd, from: u64) -> SysResult<u64> {
    check(
        "lseek(SEEK_HOLE)",
        rustix::fs::seek(fd, rustix::fs::SeekFrom::Hole(from)),
    )
}

/// Copies every extended attribute of `src` to `dst`; returns how many. An attribute
/// the destination refuses (EPERM on a trusted or security one without privilege,
/// ENOTSUP on a filesystem without xattrs) is counted in the second number.
pub fn copy_xattrs<A: AsFd, B: AsFd>(src: A, dst: B) -> SysResult<(usize, usize)> {
    // A small buffer first: most files have none, and a 64 KiB buffer per file (zeroed
    // here, and allocated again by the kernel at that size) cost more than the copy of
    // a small file.
    let names = match sized(|buf| rustix::fs::flistxattr(&src, buf)) {
        Ok(names) => names,
        Err(rustix::io::Errno::NOTSUP) => return Ok((0, 0)),
        Err(e) => return Err(SysError::new("flistxattr", e)),
    };
    if names.is_empty() {
        return Ok((0, 0));
    }
    let (mut done, mut refused) = (0, 0);
    for name in names.split(|&b| b == 0).filter(|s| !s.is_empty()) {
        let Ok(name) = std::ffi::CString::new(name) else {
            continue;
        };
        let value = sized(|buf| rustix::fs::fgetxattr(&src, name.as_c_str(), buf))
            .map_err(|e| SysError::new("fgetxattr", e))?;
        match rustix::fs::fsetxattr(
            &dst,
            name.as_c_str(),
            &value,
            rustix::fs::XattrFlags::empty(),
        ) {
            Ok(()) => done += 1,
            Err(
                rustix::io::Errno::PERM | rustix::io::Errno::NOTSUP | rustix::io::Errno::ACCESS,
            ) => refused += 1,
            Err(e) => return Err(SysError::new("fsetxattr", e)),
        }
    }
    Ok((done, refused))
}

/// Gives the calling thread a descriptor table of its own, a copy of the process's
/// (unshare CLONE_FILES): its opens and closes no longer take the lock, nor bounce the
/// cache lines, of a table the other threads use too. For a thread that uses only
/// descriptors it opens itself and hands none to another thread (a cp worker).
pub fn own_fd_table() -> SysResult<()> {
    // SAFETY: the contract above: descriptors opened before the call are in the copy;
    // the caller neither receives descriptors from other threads afterwards nor hands
    // its own to them, so no thread sees a number from a table it does not share.
    let r = unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) };
    check("unshare", r)
}

/// Makes a FIFO, block or character device or socket node at `path` (mode 0600; its
/// mode is set afterwards): `kind` is fifo, block, char or socket.
pub fn make_special(path: &std::path::Path, kind: &str, rdev: u64) -> SysResult<()> {
    use rustix::fs::FileType;
    let t = match kind {
        "fifo" => FileType::Fifo,
        "block" => FileType::BlockDevice,
        "char" => FileType::CharacterDevice,
        _ => FileType::Socket,
    };
    check(
        "mknodat",
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            t,
            rustix::fs::Mode::from_raw_mode(0o600),
            rdev,
        ),
    )
}

/// FICLONE clones into the open descriptor: an existing destination keeps its inode.
pub const REFLINK_REPLACES_FILE: bool = false;

/// Whether `fd` is on a filesystem whose files report a size that is not their content
/// (procfs, sysfs and the other kernel pseudo-filesystems): such a file is read to
/// end of file, never trusted to `st_size` nor scanned for holes.
pub fn pseudo_fs<Fd: AsFd>(fd: Fd) -> bool {
    const MAGICS: [i64; 11] = [
        0x9fa0,      // proc
        0x6265_6572, // sysfs
        0x6462_6720, // debugfs
        0x7472_6163, // tracefs
        0x7363_6673, // securityfs
        0x6367_7270, // cgroup2
        0x0027_e0eb, // cgroup
        0x6263_6673, // bpf
        0xcafe_4a11, // bpf (BPF_FS_MAGIC)
        0x6269_6e6d, // binfmt_misc
        0x6e73_6673, // nsfs
    ];
    // f_type is an i32 on 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::fstatfs(fd).is_ok_and(|s| MAGICS.contains(&(s.f_type as i64)))
}

/// SO_ZEROCOPY (asm-generic/socket.h; libc does not export it yet).
const SO_ZEROCOPY: libc::c_int = 60;
/// The origin of a zerocopy completion on the error queue (linux/errqueue.h).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// A completion whose data the kernel copied after all (linux/errqueue.h).
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// The errno of the libc call that just failed, named.
fn last_error(call: &'static str) -> SysError {
    SysError::new(
        call,
        rustix::io::Errno::from_io_error(&std::io::Error::last_os_error())
            .unwrap_or(rustix::io::Errno::IO),
    )
}

/// setsockopt(SO_ZEROCOPY, 1): lets send(MSG_ZEROCOPY) pin the caller's pages. The
/// kernel refuses it where the family has no zerocopy (AF_UNIX: EOPNOTSUPP).
pub fn enable_zerocopy<Fd: AsFd>(fd: Fd) -> SysResult<()> {
    use rustix::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: `fd` is a live descriptor borrowed for the call; the option value points
    // to a c_int that outlives it, and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ZEROCOPY,
            (&raw const one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(last_error("setsockopt(SO_ZEROCOPY)"));
    }
    Ok(())
}

/// send(2) with MSG_ZEROCOPY: the kernel keeps references to `buf`'s pages until a
/// completion for this call arrives on the error queue ([`zerocopy_completions`]); the
/// caller must not change them before.
pub fn send_zerocopy<Fd: AsFd>(fd: Fd, buf: &[u8]) -> SysResult<usize> {
    use rustix::fd::AsRawFd;
    // SAFETY: `buf` is a live slice for the call; the kernel only reads it.
    let r = unsafe {
        libc::send(
            fd.as_fd().as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_ZEROCOPY,
        )
    };
    if r < 0 {
        return Err(last_error("send(MSG_ZEROCOPY)"));
    }
    Ok(r as usize)
}

/// Reads the zerocopy completions waiting on `fd`'s error queue without blocking:
/// each as (first call id, last call id, whether the kernel copied the data instead).
pub fn zerocopy_completions<Fd: AsFd>(fd: Fd) -> SysResult<Vec<(u32, u32, bool)>> {
    use rustix::fd::AsRawFd;
    let mut out = Vec::new();
    loop {
        // u64 words keep the control buffer aligned for cmsghdr.
        let mut control = [0u64; 16];
        // SAFETY: a zeroed msghdr is valid (no name, no data); its control buffer
        // points to `control`, which outlives the call, with its size in bytes.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: `msg` is a valid msghdr as above; MSG_ERRQUEUE reads only control data.
        let r = unsafe {
            libc::recvmsg(
                fd.as_fd().as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            let e = last_error("recvmsg(MSG_ERRQUEUE)");
            if e.errno == libc::EAGAIN {
                return Ok(out);
            }
            return Err(e);
        }
        // SAFETY: the kernel filled `msg.msg_control` with `msg_controllen` bytes of
        // well-formed cmsg headers; the CMSG macros walk them within that length, and
        // each data pointer is read unaligned as the struct the header says it holds.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let len = (*c).cmsg_len as usize;
                if len
                    >= libc::CMSG_LEN(std::mem::size_of::<libc::sock_extended_err>() as u32)
                        as usize
                {
                    let e: libc::sock_extended_err =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    if e.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                        out.push((
                            e.ee_info,
                            e.ee_data,
                            e.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
                        ));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
    }
}

/// Segments a TCP socket has sent (TCP_INFO's tcpi_segs_out).
pub fn tcp_segments_out<Fd: AsFd>(fd: Fd) -> SysResult<u64> {
    use rustix::fd::AsRawFd;
    // SAFETY: tcp_info is plain integers, valid zeroed.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` and `len` outlive the call; the kernel writes at most `len` bytes.
    let r = unsafe {
        libc::getsockopt(
            fd.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(last_error("getsockopt(TCP_INFO)"));
    }
    Ok(u64::from(info.tcpi_segs_out))
}

/// syncfs(2): writes back every dirty page of the filesystem holding `fd` and waits
/// for it.
pub fn syncfs<Fd: rustix::fd::AsFd>(fd: Fd) -> crate::sys::calls::SysResult<()> {
    crate::sys::calls::check("syncfs", rustix::fs::syncfs(fd))
}
