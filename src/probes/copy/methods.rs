//! Every way to copy a file, one function per method. Each opens the source, creates
//! the destination with O_CREAT|O_EXCL (mode 0600), copies exactly `size` bytes
//! (checking every call's result and byte count), and, in `fsync` mode, makes the data
//! durable before returning. The caller times the whole call.

use crate::harness::interrupt;
use crate::sys::buffer::AlignedBuf;
use crate::sys::calls::{self, short};
use crate::sys::copyfile;
use crate::sys::mapping::Mapping;
use crate::sys::pipes;
use crate::sys::rusage::RawRusage;
use crate::sys::uring::UringCopy;
use anyhow::{Result, anyhow, bail};
use rustix::fd::OwnedFd;
use rustix::fs::{Advice, OFlags};
use std::ffi::CStr;

/// How a copy is made. Names are a contract (`--method`, JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    ReadWrite,
    ReadWriteFadvise,
    PreadPwrite,
    MmapWrite,
    MmapMemcpyMsync,
    MmapMemcpyMunmap,
    Sendfile,
    Splice,
    CopyFileRange,
    Reflink,
    IoUring,
    Direct,
    Cp,
    Cat,
    Dd,
}

impl Method {
    /// In-process methods, in table order.
    pub const IN_PROCESS: [Method; 12] = [
        Method::ReadWrite,
        Method::ReadWriteFadvise,
        Method::PreadPwrite,
        Method::MmapWrite,
        Method::MmapMemcpyMsync,
        Method::MmapMemcpyMunmap,
        Method::Sendfile,
        Method::Splice,
        Method::CopyFileRange,
        Method::Reflink,
        Method::IoUring,
        Method::Direct,
    ];
    /// Public tools run as child processes with `--system-tools`.
    pub const TOOLS: [Method; 3] = [Method::Cp, Method::Cat, Method::Dd];

    pub fn name(self) -> &'static str {
        match self {
            Method::ReadWrite => "read-write",
            Method::ReadWriteFadvise => "read-write-fadvise",
            Method::PreadPwrite => "pread-pwrite",
            Method::MmapWrite => "mmap-write",
            Method::MmapMemcpyMsync => "mmap-memcpy-msync",
            Method::MmapMemcpyMunmap => "mmap-memcpy-munmap",
            Method::Sendfile => "sendfile",
            Method::Splice => "splice",
            Method::CopyFileRange => "copy-file-range",
            Method::Reflink => "reflink",
            Method::IoUring => "io-uring",
            Method::Direct => "direct",
            Method::Cp => "cp",
            Method::Cat => "cat",
            Method::Dd => "dd",
        }
    }

    pub fn parse(s: &str) -> Result<Method, String> {
        Method::IN_PROCESS
            .iter()
            .chain(Method::TOOLS.iter())
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown copy method '{s}' (valid: {})",
                    Method::IN_PROCESS
                        .iter()
                        .chain(Method::TOOLS.iter())
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    pub fn is_tool(self) -> bool {
        Method::TOOLS.contains(&self)
    }

    pub fn is_mmap(self) -> bool {
        matches!(
            self,
            Method::MmapWrite | Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap
        )
    }
}

/// One method with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub method: Method,
    /// User buffer (read-write, pread-pwrite, direct, io-uring per slot, dd bs, mmap-write chunk).
    pub buffer: Option<u64>,
    /// madvise(MADV_SEQUENTIAL) on the mappings (mmap methods).
    pub madvise: bool,
    /// mmap-write: one write of the whole mapping instead of `buffer` chunks.
    pub whole: bool,
    /// splice: F_SETPIPE_SZ of the private pipe (`None` = default).
    pub pipe_size: Option<u64>,
    /// io-uring: queue depth and registered buffers.
    pub depth: u32,
    pub registered: bool,
}

impl Variant {
    pub fn new(method: Method) -> Variant {
        Variant {
            method,
            buffer: None,
            madvise: false,
            whole: false,
            pipe_size: None,
            depth: 0,
            registered: false,
        }
    }

    /// The variant's label: method plus its parameters, e.g. `read-write/1MiB`,
    /// `mmap-write/whole+madvise`, `io-uring/qd16+fixed`.
    pub fn label(&self) -> String {
        let size = crate::units::size_label;
        let mut s = self.method.name().to_string();
        match self.method {
            Method::MmapWrite => {
                s += &format!(
                    "/{}",
                    if self.whole {
                        "whole".into()
                    } else {
                        size(self.buffer.unwrap_or(0))
                    }
                );
            }
            Method::Splice => {
                s += &format!("/pipe-{}", self.pipe_size.map_or("default".into(), size));
            }
            Method::IoUring => s += &format!("/qd{}", self.depth),
            _ => {
                if let Some(b) = self.buffer {
                    s += &format!("/{}", size(b));
                }
            }
        }
        if self.madvise {
            s += "+madvise";
        }
        if self.registered {
            s += "+fixed";
        }
        s
    }
}

/// What the destination's data had reached when the copy returned.
pub fn durability_state(method: Method, fsync: bool) -> &'static str {
    match (fsync, method) {
        (true, _) => "durable: fsync (or msync MS_SYNC + fsync) returned inside the timing",
        (false, Method::MmapMemcpyMsync) => "not durable: queued for write-back (msync MS_ASYNC)",
        (false, Method::Direct) => {
            "not durable: written to the device with O_DIRECT, device cache not flushed"
        }
        (false, Method::Reflink) => "not durable: blocks shared, metadata not synced",
        (false, Method::MmapMemcpyMunmap) => {
            "not durable: dirty pages left in the page cache by munmap"
        }
        (false, _) => "not durable: dirty in the page cache",
    }
}

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

/// Bytes one sendfile(2) or copy_file_range(2) call is asked to move: small enough that
/// a cold 1 GiB copy looks at the interrupt flag every quarter second or so.
const IN_KERNEL_STEP: u64 = 256 << 20;

/// A copy's result: rusage of the child tool, when a tool made it.
pub type ToolRusage = Option<(String, RawRusage)>;

/// Copies `src` (`size` bytes) to a new file `dst`, durably when `fsync`.
pub fn copy(
    v: &Variant,
    p: &mut Prepared,
    src: &CStr,
    dst: &CStr,
    size: u64,
    fsync: bool,
) -> Result<ToolRusage> {
    if v.method.is_tool() {
        return super::tools::run(v, src, dst, size, fsync).map(Some);
    }
    // A destination that is mapped must be opened for reading too.
    let access = if matches!(v.method, Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap) {
        OFlags::RDWR
    } else {
        OFlags::WRONLY
    };
    let direct = if v.method == Method::Direct {
        OFlags::DIRECT
    } else {
        OFlags::empty()
    };
    let s = open_src(src, direct)?;
    let d = create_dst(dst, access, direct)?;
    match v.method {
        Method::ReadWrite | Method::ReadWriteFadvise => {
            if v.method == Method::ReadWriteFadvise {
                copyfile::fadvise(&s, Advice::Sequential)?;
            }
            let buf = p.buf.as_mut().ok_or_else(|| anyhow!("no buffer"))?;
            let mut total = 0u64;
            loop {
                interrupt::check()?;
                let n = calls::read(&s, buf.as_mut_slice())?;
                if n == 0 {
                    break;
                }
                write_all(&d, &buf.as_slice()[..n])?;
                total += n as u64;
            }
            expect("read", total, size)?;
        }
        Method::PreadPwrite => {
            let buf = p.buf.as_mut().ok_or_else(|| anyhow!("no buffer"))?;
            let mut off = 0u64;
            while off < size {
                interrupt::check()?;
                let want = (size - off).min(buf.len() as u64) as usize;
                let n = calls::pread(&s, &mut buf.as_mut_slice()[..want], off)?;
                if n == 0 {
                    break;
                }
                calls::pwrite_all(&d, &buf.as_slice()[..n], off)?;
                off += n as u64;
            }
            expect("pread", off, size)?;
        }
        Method::MmapWrite => {
            if size > 0 {
                let map = Mapping::map_file(&s, size as usize, false)?;
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
                    write_all(&d, c)?;
                }
            }
        }
        Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap => {
            copyfile::ftruncate(&d, size)?;
            // Blocks reserved before mapping: a full filesystem fails here with ENOSPC
            // rather than as a SIGBUS on a store through the mapping.
            copyfile::reserve(&d, size)?;
            if size > 0 {
                let from = Mapping::map_file(&s, size as usize, false)?;
                let mut to = Mapping::map_file(&d, size as usize, true)?;
                if v.madvise {
                    from.advise(rustix::mm::Advice::Sequential)?;
                    to.advise(rustix::mm::Advice::Sequential)?;
                }
                if crate::fault::enabled("sigbus") {
                    // Test hook: the mapped destination loses its blocks, as on a full
                    // filesystem without reservation: the stores raise SIGBUS.
                    copyfile::ftruncate(&d, 0)?;
                }
                if !to.copy_from(&from, &interrupt::requested)? {
                    return Err(crate::error::Interrupted.into());
                }
                if v.method == Method::MmapMemcpyMsync {
                    to.sync(fsync)?; // MS_SYNC when durability is asked, else MS_ASYNC
                }
                drop(to); // munmap: dirty pages pass to the page cache
            }
        }
        Method::Sendfile => {
            let mut off = 0u64;
            while off < size {
                interrupt::check()?;
                let want = (size - off).min(IN_KERNEL_STEP) as usize;
                let n = copyfile::sendfile(&d, &s, &mut off, want)?;
                if n == 0 {
                    break;
                }
            }
            expect("sendfile", off, size)?;
        }
        Method::Splice => {
            let (pr, pw) = pipes::pipe()?;
            let cap = match v.pipe_size {
                Some(b) => pipes::set_capacity(&pw, b as usize)?,
                None => pipes::capacity(&pw)?,
            };
            let mut off = 0u64;
            while off < size {
                interrupt::check()?;
                let want = (size - off).min(cap as u64) as usize;
                let n = pipes::splice(&s, Some(&mut off), &pw, None, want)?;
                if n == 0 {
                    break;
                }
                let mut left = n;
                while left > 0 {
                    let m = pipes::splice(&pr, None, &d, None, left)?;
                    if m == 0 {
                        bail!("splice to the destination moved 0 bytes");
                    }
                    left -= m;
                }
            }
            expect("splice", off, size)?;
        }
        Method::CopyFileRange => {
            let (mut a, mut b) = (0u64, 0u64);
            while a < size {
                interrupt::check()?;
                let want = (size - a).min(IN_KERNEL_STEP) as usize;
                let n = copyfile::copy_file_range(&s, &mut a, &d, &mut b, want)?;
                if n == 0 {
                    break;
                }
            }
            expect("copy_file_range", a, size)?;
        }
        Method::Reflink => copyfile::ficlone(&d, &s)?,
        Method::IoUring => {
            if size > 0 {
                let u = p.uring.as_mut().ok_or_else(|| anyhow!("no ring"))?;
                if let Err(e) = u.copy(&s, &d, size, &interrupt::requested) {
                    interrupt::check()?;
                    return Err(e.into());
                }
            }
        }
        Method::Direct => {
            let buf = p.buf.as_mut().ok_or_else(|| anyhow!("no buffer"))?;
            let align = p.dio_align;
            let mut total = 0u64;
            loop {
                interrupt::check()?;
                let n = calls::read(&s, buf.as_mut_slice())?;
                if n == 0 {
                    break;
                }
                let aligned = n / align * align;
                write_all(&d, &buf.as_slice()[..aligned])?;
                if aligned < n {
                    // The file's unaligned tail: O_DIRECT cannot write it.
                    copyfile::clear_direct(&d)?;
                    write_all(&d, &buf.as_slice()[aligned..n])?;
                }
                total += n as u64;
            }
            expect("read", total, size)?;
        }
        Method::Cp | Method::Cat | Method::Dd => unreachable!("tools return above"),
    }
    if fsync {
        // Data and metadata (the new file's size and blocks) on stable storage.
        copyfile::fsync(&d)?;
    }
    calls::close(d)?;
    Ok(None)
}
