//! Every in-process way to copy a file, one function per method. [`copy`] opens the
//! source, creates the destination with O_CREAT|O_EXCL (mode 0600), lets the method
//! copy exactly `size` bytes (checking every call's result and byte count), and, in
//! `fsync` mode, makes the data durable before returning. The caller times the whole
//! call.

use crate::interrupt;
use crate::names::Named;
use crate::sys::buffer::AlignedBuf;
use crate::sys::calls::{self, short};
use crate::sys::copyfile;
use crate::sys::copyfile::Advice;
use crate::sys::mapping::Mapping;
use crate::sys::pipes;
use crate::sys::uring::UringCopy;
use anyhow::{Result, anyhow, bail};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use std::ffi::CStr;

pub use super::variant::{Method, Variant};

/// Per-variant state built outside the timing (buffers, io_uring).
pub struct Prepared {
    buf: Option<AlignedBuf>,
    uring: Option<UringCopy>,
    /// O_DIRECT file-offset alignment (from statx, 512 when not reported).
    dio_align: usize,
}

impl Prepared {
    pub fn new(v: &Variant, dio_align: u64) -> Result<Prepared> {
        let buf = match v.method {
            Method::ReadWrite | Method::ReadWriteFadvise | Method::PreadPwrite => {
                Some(AlignedBuf::new(v.buffer.unwrap_or(1 << 20) as usize))
            }
            Method::Direct => {
                let b = v.buffer.unwrap_or(1 << 20).div_ceil(dio_align) * dio_align;
                Some(AlignedBuf::new(b as usize))
            }
            _ => None,
        };
        let uring = match v.method {
            Method::IoUring => Some(UringCopy::new(
                v.depth,
                v.buffer.unwrap_or(1 << 20) as usize,
                v.registered,
            )?),
            _ => None,
        };
        Ok(Prepared {
            buf,
            uring,
            dio_align: dio_align.max(1) as usize,
        })
    }
}

fn open_src(path: &CStr, extra: OFlags) -> Result<OwnedFd> {
    Ok(calls::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | extra,
        0,
    )?)
}

/// Creates the destination: `access` (WRONLY, or RDWR to map it) plus `extra` flags.
fn create_dst(path: &CStr, access: OFlags, extra: OFlags) -> Result<OwnedFd> {
    Ok(calls::open(
        path,
        access | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | extra,
        0o600,
    )?)
}

fn write_all(fd: &OwnedFd, mut data: &[u8]) -> Result<()> {
    while !data.is_empty() {
        let n = calls::write(fd, data)?;
        if n == 0 {
            bail!("write accepted 0 bytes");
        }
        data = &data[n..];
    }
    Ok(())
}

fn expect(call: &'static str, got: u64, size: u64) -> Result<()> {
    if got != size {
        return Err(short(call, got as usize, size as usize));
    }
    Ok(())
}

/// Copies `src` (`size` bytes) to a new file `dst` with an in-process method,
/// durably when `fsync`. The probe sends the system tools to [`super::tools`].
pub fn copy(
    v: &Variant,
    p: &mut Prepared,
    src: &CStr,
    dst: &CStr,
    size: u64,
    fsync: bool,
) -> Result<()> {
    // A destination that is mapped must be opened for reading too.
    let access = if matches!(v.method, Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap) {
        OFlags::RDWR
    } else {
        OFlags::WRONLY
    };
    let direct = if v.method == Method::Direct {
        copyfile::direct_flags()
    } else {
        OFlags::empty()
    };
    let s = open_src(src, direct)?;
    let mut d = create_dst(dst, access, direct)?;
    if v.method == Method::Direct {
        copyfile::make_direct(&s)?;
        copyfile::make_direct(&d)?;
    }
    if v.method == Method::Reflink {
        // Where the OS clones by path (macOS), the destination is made anew.
        if let Some(fresh) = copyfile::reflink(&s, &d, src, dst)? {
            d = fresh;
        }
    }
    let ends = Ends { s: &s, d: &d, size };
    match v.method {
        Method::ReadWrite => read_write(&ends, buffer(p)?, false)?,
        Method::ReadWriteFadvise => read_write(&ends, buffer(p)?, true)?,
        Method::PreadPwrite => pread_pwrite(&ends, buffer(p)?)?,
        Method::MmapWrite => mmap_write(&ends, v)?,
        Method::MmapMemcpyMsync => mmap_memcpy(&ends, v, Some(fsync))?,
        Method::MmapMemcpyMunmap => mmap_memcpy(&ends, v, None)?,
        Method::Sendfile => sendfile(&ends)?,
        Method::Splice => splice(&ends, v.pipe_size)?,
        Method::CopyFileRange => copy_file_range(&ends)?,
        Method::Reflink => {} // done above
        Method::IoUring => io_uring(&ends, p)?,
        Method::Direct => direct_io(&ends, p)?,
        Method::Cp | Method::Cat | Method::Dd => {
            bail!(
                "{} is a system tool, not an in-process method",
                v.method.name()
            )
        }
    }
    if fsync {
        // Data and metadata (the new file's size and blocks) on stable storage.
        copyfile::fsync(&d)?;
    }
    calls::close(d)?;
    Ok(())
}

/// The two open ends of a copy and the bytes it must move.
struct Ends<'a> {
    s: &'a OwnedFd,
    d: &'a OwnedFd,
    size: u64,
}

fn buffer(p: &mut Prepared) -> Result<&mut AlignedBuf> {
    p.buf.as_mut().ok_or_else(|| anyhow!("no buffer"))
}

/// read(2) into a user buffer, write(2) it out (with POSIX_FADV_SEQUENTIAL first when
/// `fadvise`).
fn read_write(e: &Ends, buf: &mut AlignedBuf, fadvise: bool) -> Result<()> {
    if fadvise {
        copyfile::fadvise(e.s, Advice::Sequential)?;
    }
    let mut total = 0u64;
    loop {
        interrupt::check()?;
        let n = calls::read(e.s, buf.as_mut_slice())?;
        if n == 0 {
            break;
        }
        write_all(e.d, &buf.as_slice()[..n])?;
        total += n as u64;
    }
    expect("read", total, e.size)
}

/// pread(2)/pwrite(2) at explicit offsets.
fn pread_pwrite(e: &Ends, buf: &mut AlignedBuf) -> Result<()> {
    let mut off = 0u64;
    while off < e.size {
        interrupt::check()?;
        let want = (e.size - off).min(buf.len() as u64) as usize;
        let n = calls::pread(e.s, &mut buf.as_mut_slice()[..want], off)?;
        if n == 0 {
            break;
        }
        calls::pwrite_all(e.d, &buf.as_slice()[..n], off)?;
        off += n as u64;
    }
    expect("pread", off, e.size)
}

/// The source mapped; write(2) from the mapping, whole or in `buffer` chunks.
fn mmap_write(e: &Ends, v: &Variant) -> Result<()> {
    if e.size == 0 {
        return Ok(());
    }
    let map = Mapping::map_file(e.s, e.size as usize, false)?;
    if v.madvise {
        map.advise(rustix::mm::Advice::Sequential)?;
    }
    let bytes = map.bytes();
    let step = if v.whole {
        bytes.len()
    } else {
        v.buffer.unwrap_or(1 << 20) as usize
    };
    for c in bytes.chunks(step.max(1)) {
        interrupt::check()?;
        write_all(e.d, c)?;
    }
    Ok(())
}

/// Both files mapped, memcpy between them; then msync (`Some(durable)`: MS_SYNC when
/// durable, else MS_ASYNC) or, with `None`, munmap alone.
fn mmap_memcpy(e: &Ends, v: &Variant, msync: Option<bool>) -> Result<()> {
    copyfile::ftruncate(e.d, e.size)?;
    // Blocks reserved before mapping: a full filesystem fails here with ENOSPC rather
    // than as a SIGBUS on a store through the mapping.
    copyfile::reserve(e.d, e.size)?;
    if e.size == 0 {
        return Ok(());
    }
    let from = Mapping::map_file(e.s, e.size as usize, false)?;
    let mut to = Mapping::map_file(e.d, e.size as usize, true)?;
    if v.madvise {
        from.advise(rustix::mm::Advice::Sequential)?;
        to.advise(rustix::mm::Advice::Sequential)?;
    }
    if crate::fault::enabled("sigbus") {
        // Test hook: the mapped destination loses its blocks, as on a full filesystem
        // without reservation: the stores raise SIGBUS.
        copyfile::ftruncate(e.d, 0)?;
    }
    if !to.copy_from(&from, &interrupt::requested)? {
        return Err(crate::error::Interrupted.into());
    }
    if let Some(durable) = msync {
        to.sync(durable)?;
    }
    drop(to); // munmap: dirty pages pass to the page cache
    Ok(())
}

/// Bytes one sendfile(2) or copy_file_range(2) call is asked to move: small enough that
/// a cold 1 GiB copy looks at the interrupt flag every quarter second or so.
pub const IN_KERNEL_STEP: u64 = 256 << 20;

/// sendfile(2) file to file.
fn sendfile(e: &Ends) -> Result<()> {
    let mut off = 0u64;
    while off < e.size {
        interrupt::check()?;
        let want = (e.size - off).min(IN_KERNEL_STEP) as usize;
        if copyfile::sendfile(e.d, e.s, &mut off, want)? == 0 {
            break;
        }
    }
    expect("sendfile", off, e.size)
}

/// splice(2) source → private pipe (of `pipe_size`, or the default) → destination.
fn splice(e: &Ends, pipe_size: Option<u64>) -> Result<()> {
    let (pr, pw) = pipes::pipe()?;
    let cap = match pipe_size {
        Some(b) => pipes::set_capacity(&pw, b as usize)?,
        None => pipes::capacity(&pw)?,
    };
    let mut off = 0u64;
    while off < e.size {
        interrupt::check()?;
        let want = (e.size - off).min(cap as u64) as usize;
        let n = pipes::splice(e.s, Some(&mut off), &pw, None, want)?;
        if n == 0 {
            break;
        }
        let mut left = n;
        while left > 0 {
            let m = pipes::splice(&pr, None, e.d, None, left)?;
            if m == 0 {
                bail!("splice to the destination moved 0 bytes");
            }
            left -= m;
        }
    }
    expect("splice", off, e.size)
}

/// copy_file_range(2): in-kernel, may share or offload blocks.
fn copy_file_range(e: &Ends) -> Result<()> {
    let (mut a, mut b) = (0u64, 0u64);
    while a < e.size {
        interrupt::check()?;
        let want = (e.size - a).min(IN_KERNEL_STEP) as usize;
        if copyfile::copy_file_range(e.s, &mut a, e.d, &mut b, want)? == 0 {
            break;
        }
    }
    expect("copy_file_range", a, e.size)
}

/// io_uring reads and writes, one buffer per queue slot.
fn io_uring(e: &Ends, p: &mut Prepared) -> Result<()> {
    if e.size == 0 {
        return Ok(());
    }
    let u = p.uring.as_mut().ok_or_else(|| anyhow!("no ring"))?;
    if let Err(err) = u.copy(e.s, e.d, e.size, &interrupt::requested) {
        interrupt::check()?;
        return Err(err.into());
    }
    Ok(())
}

/// O_DIRECT on both ends with an aligned buffer; the unaligned tail written buffered.
fn direct_io(e: &Ends, p: &mut Prepared) -> Result<()> {
    let align = p.dio_align;
    let buf = buffer(p)?;
    let mut total = 0u64;
    loop {
        interrupt::check()?;
        let n = calls::read(e.s, buf.as_mut_slice())?;
        if n == 0 {
            break;
        }
        let aligned = n / align * align;
        write_all(e.d, &buf.as_slice()[..aligned])?;
        if aligned < n {
            // The file's unaligned tail: O_DIRECT cannot write it.
            copyfile::clear_direct(e.d)?;
            write_all(e.d, &buf.as_slice()[aligned..n])?;
        }
        total += n as u64;
    }
    expect("read", total, e.size)
}
