//! One file's bytes, moved by the fastest method that works here: FICLONE, then
//! copy_file_range in a loop, then read/write; read/write from a pipe. A method is given up
//! for the next only while nothing has been copied: after data has moved, any error is
//! the file's failure. Sparse sources keep their holes (SEEK_DATA/SEEK_HOLE).

use crate::sys::calls::{self, SysError};
use crate::sys::os;
use rustix::fd::OwnedFd;
use std::borrow::Cow;

/// Bytes written so far by every copy of this process (for the progress display).
pub static MOVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// This thread's bytes not yet added to [`MOVED`]: one shared counter touched per
    /// file by two workers costs more than a small file's copy takes.
    static PENDING: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Test hook `cp-slow` (`IOPROBE_FAULT`): every call that moves data moves at most
/// 1 MiB ([`Path::for_tests`]) and is followed by a pause, so that a test can watch, or
/// change, a copy while it is under way.
static SLOW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns the `cp-slow` test hook on when `IOPROBE_FAULT` names it.
pub fn hook_slow_for_tests() {
    if crate::fault::enabled("cp-slow") {
        SLOW.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn moved(n: u64) {
    if SLOW.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let p = PENDING.get() + n;
    if p >= 8 << 20 {
        MOVED.fetch_add(p, std::sync::atomic::Ordering::Relaxed);
        PENDING.set(0);
    } else {
        PENDING.set(p);
    }
}

/// Adds this thread's pending bytes to [`MOVED`] (a worker, after each batch).
pub fn flush_moved() {
    MOVED.fetch_add(PENDING.take(), std::sync::atomic::Ordering::Relaxed);
}

/// Set when FICLONE failed once in this run: later files skip it (`--reflink=auto`).
static REFLINK_OFF: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Path {
    /// Under the `cp-slow` test hook, calls of at most 1 MiB.
    pub fn for_tests(mut self) -> Path {
        if SLOW.load(std::sync::atomic::Ordering::Relaxed) {
            self.chunk = self.chunk.min(1 << 20);
            self.buffer = self.buffer.min(1 << 20);
        }
        self
    }
}

/// What to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Auto,
    Always,
    Never,
}

/// The data path's settings.
#[derive(Debug, Clone, Copy)]
pub struct Path {
    pub reflink: When,
    pub sparse: When,
    /// The read/write buffer.
    pub buffer: usize,
    /// Bytes per copy_file_range call (also how often an interrupt is seen).
    pub chunk: usize,
    /// Try copy_file_range before the read/write loop (false when a saved copy run
    /// found the loop clearly faster on this filesystem).
    pub offload_first: bool,
}

/// How the bytes moved, for `--debug`.
#[derive(Debug, Clone, Default)]
pub struct Used {
    /// The method that moved the data: reflink, copy_file_range, read/write.
    pub method: &'static str,
    /// Why a faster method was not used.
    pub reflink: Cow<'static, str>,
    pub offload: Cow<'static, str>,
    pub sparse: Cow<'static, str>,
    pub bytes: u64,
}

/// Whether a copy_file_range/FICLONE error means "not here" (fall back) rather than a
/// failure of this copy.
fn unsupported(e: &SysError) -> bool {
    use rustix::io::Errno;
    [
        Errno::XDEV,
        Errno::INVAL,
        Errno::NOSYS,
        Errno::OPNOTSUPP,
        Errno::BADF,
        Errno::PERM,
        Errno::TXTBSY,
    ]
    .iter()
    .any(|x| x.raw_os_error() == e.errno)
}

fn interrupted() -> anyhow::Result<()> {
    crate::interrupt::check().map_err(anyhow::Error::from)
}

/// A reflink, where one may be tried (a new file, or an in-place one where the OS can
/// clone into it; not after this run's first refusal with `--reflink=auto`). Ok(true):
/// the copy is made; `used` says what happened either way.
fn try_reflink(
    src: &OwnedFd,
    dst: &mut OwnedFd,
    paths: (&std::path::Path, &std::path::Path),
    (size, created): (u64, bool),
    p: &Path,
    used: &mut Used,
) -> anyhow::Result<bool> {
    let off = REFLINK_OFF.load(std::sync::atomic::Ordering::Relaxed);
    if !created && os::REFLINK_REPLACES_FILE {
        used.reflink = "not tried (an existing file is written in place)".into();
    } else if off && p.reflink == When::Auto {
        used.reflink = "unsupported here (the first attempt of this run failed)".into();
    } else if p.reflink != When::Never && size > 0 {
        // The paths only for clonefile (macOS); made here, not for every file.
        let (s, d) = (calls::c_path(paths.0)?, calls::c_path(paths.1)?);
        match os::reflink(src, dst, &s, &d) {
            Ok(fresh) => {
                if let Some(fresh) = fresh {
                    *dst = fresh;
                }
                used.method = "reflink";
                used.reflink = "yes".into();
                moved(size);
                used.offload = "not needed".into();
                used.sparse = "kept by the filesystem".into();
                used.bytes = size;
                return Ok(true);
            }
            Err(e) if p.reflink == When::Always => {
                anyhow::bail!("--reflink=always: {e}")
            }
            Err(e) => {
                // One refusal per run is enough: a destination filesystem without
                // reflinks refuses every file.
                REFLINK_OFF.store(true, std::sync::atomic::Ordering::Relaxed);
                used.reflink = format!("unsupported ({})", e.short()).into();
            }
        }
    } else {
        used.reflink = if size == 0 {
            "not needed (empty)"
        } else {
            "not tried (--reflink=never)"
        }
        .into();
    }
    Ok(false)
}

/// The whole file's data: copy_file_range first where that pays here, else (or where
/// it is declined) read/write.
fn whole(src: &OwnedFd, dst: &OwnedFd, size: u64, p: &Path, used: &mut Used) -> anyhow::Result<()> {
    let mut off = 0;
    // An empty file needs no offload: one read says whether there is data anyway (a
    // /proc file reports size 0).
    let tried = if size == 0 {
        Offload::Declined("empty by its size: read instead".into())
    } else if !p.offload_first {
        Offload::Declined("the saved copy run found read/write faster here".into())
    } else {
        // Up to the size the source had when opened: no extra call to learn the end.
        offload(src, dst, &mut off, size, p)?
    };
    match tried {
        Offload::Done => {
            used.method = "copy_file_range";
            used.offload = "yes".into();
        }
        Offload::Declined(why) => {
            used.offload = format!("no ({why})").into();
            used.method = "read/write";
            off = read_write(src, dst, size == 0, p)?;
        }
    }
    used.bytes = off.max(used.bytes);
    Ok(())
}

/// Copies a regular file of `size` bytes (`blocks` 512-byte blocks allocated) from
/// `src` to the new, empty `dst`. Where the OS clones by path (macOS), the clone takes
/// the destination's name and `dst` becomes a descriptor of the clone.
pub fn regular(
    src: &OwnedFd,
    dst: &mut OwnedFd,
    paths: (&std::path::Path, &std::path::Path),
    (size, blocks): (u64, u64),
    created: bool,
    p: &Path,
) -> anyhow::Result<Used> {
    let mut used = Used::default();
    if try_reflink(src, dst, paths, (size, created), p, &mut used)? {
        return Ok(used);
    }
    let holey = blocks.saturating_mul(512) < size;
    if p.sparse == When::Always {
        // Holes for every run of zeros, as GNU's --sparse=always: each block read is
        // written only when it holds a non-zero byte.
        used.method = "read/write";
        used.offload = "no (--sparse=always looks at every block)".into();
        used.sparse = "--sparse=always: runs of zeros made holes".into();
        used.bytes = pump(src, dst, 0, p, Flow::HOLES)?;
        return Ok(used);
    }
    if p.sparse == When::Auto && holey {
        match sparse_copy(src, dst, size, p, &mut used) {
            Ok(()) => return Ok(used),
            Err(e)
                if used.bytes == 0
                    && e.downcast_ref::<SysError>()
                        .is_some_and(SysError::is_missing) =>
            {
                used.sparse = format!("unavailable ({e}): copied whole").into();
            }
            Err(e) => return Err(e),
        }
    } else {
        used.sparse = if holey {
            "no (--sparse=never)"
        } else {
            "no holes"
        }
        .into();
    }
    whole(src, dst, size, p, &mut used)?;
    Ok(used)
}

enum Offload {
    Done,
    Declined(String),
}

/// copy_file_range from `*off` to end of file (or `end`): never takes a short count
/// for the end, loops until 0. A 0 or an "unsupported" error before any byte moved
/// declines (the caller reads instead: /proc files report size 0); after, it is the
/// end, or a failure.
fn offload(
    src: &OwnedFd,
    dst: &OwnedFd,
    off: &mut u64,
    end: u64,
    p: &Path,
) -> anyhow::Result<Offload> {
    let start = *off;
    loop {
        interrupted()?;
        let want = (end - *off).min(p.chunk as u64) as usize;
        if want == 0 {
            return Ok(Offload::Done);
        }
        let (mut so, mut d) = (*off, *off);
        match os::copy_file_range(src, &mut so, dst, &mut d, want) {
            Ok(0) if *off == start => {
                return Ok(Offload::Declined(
                    "copy_file_range copied nothing at the start".into(),
                ));
            }
            Ok(0) => return Ok(Offload::Done),
            Ok(n) => {
                *off += n as u64;
                moved(n as u64);
            }
            Err(e) if *off == start && unsupported(&e) => {
                return Ok(Offload::Declined(format!("copy_file_range: {}", e.short())));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

thread_local! {
    /// This thread's read/write buffer, made once: a new zeroed 256 KiB buffer per
    /// file cost more than copying a small file.
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's read/write buffer, `size` bytes long.
fn with_buffer<R>(size: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    BUFFER.with_borrow_mut(|big| {
        if big.len() < size {
            *big = vec![0u8; size];
        }
        f(&mut big[..size])
    })
}

/// pread at `off`; a pipe or other stream, which has no offsets, is read.
fn read_at(src: &OwnedFd, buf: &mut [u8], off: u64) -> Result<usize, SysError> {
    calls::pread(src, buf, off).or_else(|e| {
        if e.errno == rustix::io::Errno::SPIPE.raw_os_error() {
            calls::read(src, buf)
        } else {
            Err(e)
        }
    })
}

/// read/write from the start to end of input; `empty`: the source says its size is 0.
fn read_write(src: &OwnedFd, dst: &OwnedFd, empty: bool, p: &Path) -> anyhow::Result<u64> {
    interrupted()?;
    let mut off = 0;
    // A source that says it is empty is read first into a small buffer (an empty file,
    // or a /proc file asked whether it has data).
    if empty {
        let mut first = [0u8; 512];
        let n = read_at(src, &mut first, 0)?;
        if n == 0 {
            return Ok(0);
        }
        calls::pwrite_all(dst, &first[..n], 0)?;
        off = n as u64;
        moved(off);
    }
    pump(src, dst, off, p, Flow::FILE)
}

/// How [`pump`] reads and writes.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    /// The source is a stream (a pipe, a device): read as it comes, after a poll that
    /// sees Ctrl-C (an idle pipe must not hide it).
    pub src_stream: bool,
    /// The destination is not a regular file (a device, a FIFO): write(2) at its own
    /// position, waiting (interruptibly) while it is full.
    pub dst_stream: bool,
    /// --sparse=always: blocks of zeros are skipped, and the size set at the end.
    pub holes: bool,
}

impl Flow {
    const FILE: Flow = Flow {
        src_stream: false,
        dst_stream: false,
        holes: false,
    };
    const HOLES: Flow = Flow {
        holes: true,
        ..Flow::FILE
    };
}

/// Writes all of `buf` to a stream that may be non-blocking (a FIFO opened so that
/// its open could not hang): a full stream is waited for with a poll that sees Ctrl-C.
fn write_stream(dst: &OwnedFd, mut buf: &[u8]) -> anyhow::Result<()> {
    while !buf.is_empty() {
        match calls::write(dst, buf) {
            Ok(0) => anyhow::bail!("write: wrote nothing"),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.errno == rustix::io::Errno::AGAIN.raw_os_error() => {
                crate::sys::pipes::wait_writable(dst, &crate::interrupt::requested)?;
                interrupted()?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes `buf` at `off`, leaving out the blocks that are all zeros (a hole there).
fn write_holes(dst: &OwnedFd, buf: &[u8], off: u64) -> anyhow::Result<()> {
    const BLOCK: usize = 4096;
    let mut i = 0;
    while i < buf.len() {
        let end = (i + BLOCK).min(buf.len());
        if buf[i..end].iter().all(|&b| b == 0) {
            i = end;
            continue;
        }
        // A run of non-zero blocks in one write.
        let mut j = end;
        while j < buf.len() {
            let e = (j + BLOCK).min(buf.len());
            if buf[j..e].iter().all(|&b| b == 0) {
                break;
            }
            j = e;
        }
        calls::pwrite_all(dst, &buf[i..j], off + i as u64)?;
        i = j;
    }
    Ok(())
}

/// Any source read to its end (a pipe, a device, a procfs or sysfs file whose size
/// is not its content) into `dst`, a new or truncated file or a stream.
pub fn stream(
    src: &OwnedFd,
    dst: &OwnedFd,
    flow: Flow,
    capacity: usize,
    p: &Path,
) -> anyhow::Result<Used> {
    let fifo = rustix::fs::fstat(src).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode as _) == rustix::fs::FileType::Fifo
    });
    if fifo {
        return from_pipe(src, dst, capacity, flow, p);
    }
    let mut used = Used {
        method: "read/write",
        reflink: "not applicable (not a regular file, or its size is not its content)".into(),
        offload: "no (read to end of file)".into(),
        sparse: if flow.holes {
            "--sparse=always: runs of zeros made holes"
        } else {
            "no (read to end of file)"
        }
        .into(),
        ..Used::default()
    };
    used.bytes = pump(src, dst, 0, p, flow)?;
    Ok(used)
}

/// read/write in the worker's buffer from `off` to the end of input; returns the
/// offset reached. A `pipe` is read as it comes, after a poll that sees Ctrl-C (an idle
/// pipe must not hide it); anything else with pread at the offset.
fn pump(src: &OwnedFd, dst: &OwnedFd, mut off: u64, p: &Path, flow: Flow) -> anyhow::Result<u64> {
    with_buffer(p.buffer, |buf| {
        loop {
            if flow.src_stream {
                crate::sys::pipes::wait_readable(src, &crate::interrupt::requested)?;
            }
            interrupted()?;
            let n = if flow.src_stream {
                match calls::read(src, buf) {
                    Ok(n) => n,
                    // Woken for a reader that went away, or a device with nothing yet.
                    Err(e) if e.errno == rustix::io::Errno::AGAIN.raw_os_error() => continue,
                    Err(e) => return Err(e.into()),
                }
            } else {
                read_at(src, buf, off)?
            };
            if n == 0 {
                if flow.holes && !flow.dst_stream {
                    crate::sys::copyfile::ftruncate(dst, off)?;
                }
                return Ok(off);
            }
            if flow.dst_stream {
                write_stream(dst, &buf[..n])?;
            } else if flow.holes {
                write_holes(dst, &buf[..n], off)?;
            } else {
                calls::pwrite_all(dst, &buf[..n], off)?;
            }
            off += n as u64;
            moved(n as u64);
        }
    })
}

/// Data extents only, holes recreated by the final size.
fn sparse_copy(
    src: &OwnedFd,
    dst: &OwnedFd,
    size: u64,
    p: &Path,
    used: &mut Used,
) -> anyhow::Result<()> {
    let mut at = 0;
    let mut extents = 0;
    while at < size {
        let Some(data) = os::seek_data(src, at)? else {
            break;
        };
        let hole = os::seek_hole(src, data)?.min(size);
        let mut off = data;
        match offload(src, dst, &mut off, hole, p)? {
            Offload::Done => {}
            Offload::Declined(_) => {
                let mut buf = vec![0u8; p.buffer];
                let mut o = off;
                while o < hole {
                    interrupted()?;
                    let want = ((hole - o) as usize).min(buf.len());
                    let n = calls::pread(src, &mut buf[..want], o)?;
                    if n == 0 {
                        break;
                    }
                    calls::pwrite_all(dst, &buf[..n], o)?;
                    o += n as u64;
                    moved(n as u64);
                }
                off = o;
            }
        }
        used.bytes += off - data;
        extents += 1;
        at = hole;
    }
    crate::sys::copyfile::ftruncate(dst, size)?;
    used.method = "copy_file_range";
    used.offload = "yes, per data extent".into();
    used.sparse = format!("SEEK_HOLE ({extents} data extents, holes kept)").into();
    Ok(())
}

/// A pipe (stdin, a FIFO) into the new file `dst`: read/write with the pipe's capacity
/// raised to `capacity` (when the pipe allows it), so the writer runs ahead.
///
/// Not splice: splice(2) from a pipe into a file holds the pipe's lock while the file
/// is written, so the process filling the pipe waits for every write into the file and
/// the two copies run one after the other. read(2) takes the lock only to copy out of
/// the pipe, and both run at once (on tmpfs, 1 GiB from `head`: read/write 256 KiB
/// 0.43 s, splice 0.58 s, `cat` 0.52 s; `bench/cp.sh` measures it).
fn from_pipe(
    src: &OwnedFd,
    dst: &OwnedFd,
    capacity: usize,
    flow: Flow,
    p: &Path,
) -> anyhow::Result<Used> {
    let granted = os::set_pipe_capacity(src, capacity);
    let mut used = Used {
        method: "read/write",
        reflink: "not applicable (pipe)".into(),
        sparse: "no (pipe)".into(),
        offload: match &granted {
            Ok(n) => format!(
                "no (reads of {} from a pipe of {}: splice would stall the pipe's writer)",
                crate::units::format_size(p.buffer as u64),
                crate::units::format_size(*n as u64)
            )
            .into(),
            Err(e) => format!(
                "no (reads of {} from a pipe; its capacity unchanged: {})",
                crate::units::format_size(p.buffer as u64),
                e.short()
            )
            .into(),
        },
        ..Used::default()
    };
    used.bytes = pump(
        src,
        dst,
        0,
        p,
        Flow {
            src_stream: true,
            ..flow
        },
    )?;
    Ok(used)
}
