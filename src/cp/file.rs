//! One non-directory, as GNU cp 9.1's copy_internal and copy_reg treat it: what to do
//! with an existing destination (-n, -i, -u, the same-file and just-created refusals,
//! backups, removal), hard links kept only to a finished first copy, symlinks and
//! special files made or read, and a regular file's data written into a new file
//! (O_EXCL, removed on any failure) or into the existing one in place (its inode, mode,
//! owner and other links kept, as GNU's O_TRUNC open keeps them).

use super::attrs::{attributes, create_mode, fd_attributes};
use super::data::{self, Flow};
use super::{Backup, Claim, Interactive, LinkMode, Shared, errno_text, q, same_file, say};
use crate::sys::os;
use anyhow::{Result, anyhow, bail};
use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::Metadata;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A file named in a directory: the *at calls' directories and its name (one path
/// component looked up per call, not the whole path from the working directory).
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    pub src: BorrowedFd<'a>,
    pub dst: BorrowedFd<'a>,
    pub name: &'a OsStr,
}

/// One non-directory to copy.
pub(super) struct Item<'a> {
    pub src: &'a Path,
    pub dst: &'a Path,
    /// A command-line operand.
    pub top: bool,
    /// Its directory was made by this run: nothing can be in the way.
    pub fresh: bool,
    pub at: Option<At<'a>>,
}

/// What [`copy_nondir`] made at the destination.
enum Made {
    Symlink,
    HardLink,
    Special,
    /// A file with the source's bytes, and how they moved.
    Data(data::Used),
}

/// A file this run created: removed on drop unless kept (a failed or interrupted copy
/// leaves no partial file under the destination's name).
struct Created<'a> {
    path: Option<&'a Path>,
}

impl Drop for Created<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn plain(e: &std::io::Error) -> String {
    crate::error::plain(e)
}

static TEMP_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A temporary name beside `dst`: same directory, so a rename over `dst` is atomic.
fn temp_beside(dst: &Path) -> PathBuf {
    let n = TEMP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = dst
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dst.with_file_name(format!(
        ".{}.ioprobe-cp-{}-{n}",
        name.chars().take(100).collect::<String>(),
        std::process::id()
    ))
}

/// Makes `dst` with `make`; where a file is in the way, makes it under a temporary name
/// and renames it over that file (GNU's force_linkat and force_symlinkat). A rename
/// between two links of one inode does nothing, so the temporary is removed after it.
fn replace_with(dst: &Path, make: impl Fn(&Path) -> std::io::Result<()>) -> std::io::Result<()> {
    match make(dst) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let tmp = temp_beside(dst);
            make(&tmp)?;
            let r = std::fs::rename(&tmp, dst);
            let _ = std::fs::remove_file(&tmp);
            r
        }
        r => r,
    }
}

/// `dst` made a hard link to `to` (a first copy), replacing what is there.
fn link_to(to: &Path, dst: &Path) -> Result<()> {
    replace_with(dst, |d| std::fs::hard_link(to, d)).map_err(|e| {
        anyhow!(
            "cannot create hard link {} to {}: {}",
            q(dst),
            q(to),
            plain(&e)
        )
    })
}

/// Asks whether to overwrite `dst` (-i): a line from stdin starting with y or Y.
fn ask(sh: &Shared, dst: &Path) -> Result<bool> {
    let _one = sh.asking.lock().map_err(|_| anyhow!("lock"))?;
    eprint!("ioprobe: cp: overwrite {}? ", q(dst));
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    Ok(matches!(line.trim_start().chars().next(), Some('y' | 'Y')))
}

/// Whether `src` is newer than `dst` (-u).
fn newer(src: &Metadata, dst: &Metadata) -> bool {
    (src.mtime(), src.mtime_nsec()) > (dst.mtime(), dst.mtime_nsec())
}

/// What the rules for an existing destination decided.
enum Settled {
    /// Nothing to do (-n, -i answered no, -u with a newer destination, already it).
    Skip,
    /// Copy into it in place.
    Keep,
    /// It is gone (removed, or renamed to this backup): make a new one.
    Gone(Option<PathBuf>),
}

/// Copies one non-directory `it` whose metadata is `meta` (`opened`: its descriptor,
/// when the caller opened it to read that).
pub(super) fn copy_nondir(
    sh: &Shared,
    it: Item,
    meta: &Metadata,
    opened: Option<std::fs::File>,
) -> Result<()> {
    crate::interrupt::check()?;
    let o = &sh.opts;
    let (src, dst) = (it.src, it.dst);
    let (existing, mut new_dst) = find_existing(sh, &it, meta)?;
    let mut backup = None;
    if let Some(d) = &existing {
        match settle_existing(sh, &it, meta, d)? {
            Settled::Skip => return Ok(()),
            Settled::Keep => {}
            Settled::Gone(b) => {
                backup = b;
                new_dst = true;
            }
        }
    }
    // Never copy through a symlink this run made for another operand.
    if it.top
        && o.backup == Backup::None
        && let Some(info) = &sh.dest_info
        && let Ok(l) = std::fs::symlink_metadata(dst)
        && l.file_type().is_symlink()
        && info
            .lock()
            .map_err(|_| anyhow!("lock"))?
            .contains(&(l.dev(), l.ino()))
    {
        bail!(
            "will not copy {} through just-created symlink {}",
            q(src),
            q(dst)
        );
    }
    if o.verbose {
        let b = backup
            .as_ref()
            .map(|b| format!(" (backup: {})", q(b)))
            .unwrap_or_default();
        say(format!("{} -> {}{b}", q(src), q(dst)));
    }
    // A second name of an inode already copied is linked to that copy, once it is
    // whole and in place.
    let mut first = None;
    if o.preserve.links
        && o.link == LinkMode::Copy
        && (meta.nlink() > 1
            || o.deref == super::Deref::Always
            || (it.top && o.deref == super::Deref::CommandLine))
    {
        match sh.links.claim((meta.dev(), meta.ino()), dst)? {
            Claim::Link(to) => {
                link_to(&to, dst)?;
                finish(sh, &it, Made::HardLink);
                return Ok(());
            }
            Claim::First(f) => first = Some(f),
        }
    }
    let made = make(sh, &it, meta, opened, existing.as_ref(), new_dst)?;
    if let Some(f) = first {
        f.publish();
    }
    finish(sh, &it, made);
    Ok(())
}

/// The destination, if something is there: (its metadata, whether it is to be made
/// new). A regular file is written through a symlink at the destination, anything else
/// replaces what is there: stat for the one, lstat for the other.
fn find_existing(sh: &Shared, it: &Item, meta: &Metadata) -> Result<(Option<Metadata>, bool)> {
    if it.fresh {
        return Ok((None, true));
    }
    let o = &sh.opts;
    let ft = meta.file_type();
    let use_lstat = (!ft.is_file() && (!o.copy_as_regular || ft.is_symlink()))
        || o.link != LinkMode::Copy
        || o.backup != Backup::None
        || o.remove_destination;
    let found = if use_lstat {
        std::fs::symlink_metadata(it.dst)
    } else {
        std::fs::metadata(it.dst)
    };
    match found {
        Ok(d) => Ok((Some(d), false)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, true)),
        // A symlink loop: -f removes it when the open fails.
        Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) && o.force => {
            Ok((None, false))
        }
        Err(e) => bail!("cannot stat {}: {}", q(it.dst), plain(&e)),
    }
}

/// GNU's rules for an existing destination `d`, in its order: same file, -u, -n/-i,
/// a directory in the way, just-created, then a backup or a removal.
fn settle_existing(sh: &Shared, it: &Item, meta: &Metadata, d: &Metadata) -> Result<Settled> {
    let o = &sh.opts;
    let (src, dst) = (it.src, it.dst);
    if o.interactive != Interactive::Never {
        match same_file_ok(sh, src, meta, dst, d) {
            SameFile::Refuse => bail!("{} and {} are the same file", q(src), q(dst)),
            SameFile::Done => return Ok(Settled::Skip),
            SameFile::Go => {}
        }
    }
    if o.update && !d.is_dir() && !newer(meta, d) {
        // Not copied, but a later name of the same inode still links to it.
        if o.preserve.links
            && meta.nlink() > 1
            && let Some(to) = sh.links.claim_existing((meta.dev(), meta.ino()), dst)?
        {
            link_to(&to, dst)?;
        }
        return Ok(Settled::Skip);
    }
    match o.interactive {
        Interactive::Never => {
            if o.debug {
                say(format!("{} -> {}: skipped, it exists (-n)", q(src), q(dst)));
            }
            return Ok(Settled::Skip);
        }
        Interactive::Ask if !ask(sh, dst)? => return Ok(Settled::Skip),
        _ => {}
    }
    if d.is_dir() {
        bail!("cannot overwrite directory {} with non-directory", q(dst));
    }
    if it.top
        && o.backup != Backup::Numbered
        && let Some(info) = &sh.dest_info
        && info
            .lock()
            .map_err(|_| anyhow!("lock"))?
            .contains(&(d.dev(), d.ino()))
    {
        bail!("will not overwrite just-created {} with {}", q(dst), q(src));
    }
    if o.backup != Backup::None {
        if o.backup != Backup::Numbered
            && super::backup::source_is_backup(src, meta, dst, &o.suffix)
        {
            bail!(
                "backing up {} might destroy source;  {} not copied",
                q(dst),
                q(src)
            );
        }
        return match super::backup::rename_aside(dst, o.backup, &o.suffix) {
            Ok(b) => Ok(Settled::Gone(Some(b))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settled::Gone(None)),
            Err(e) => bail!("cannot backup {}: {}", q(dst), plain(&e)),
        };
    }
    if o.remove_destination
        || (!o.attributes_only
            && ((o.preserve.links && d.nlink() > 1)
                || (o.deref == super::Deref::Never && !meta.file_type().is_file())))
    {
        remove_said(sh, dst)?;
        return Ok(Settled::Gone(None));
    }
    Ok(Settled::Keep)
}

/// Removes `dst` (gone already is fine); -v says so.
fn remove_said(sh: &Shared, dst: &Path) -> Result<()> {
    match std::fs::remove_file(dst) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            bail!("cannot remove {}: {}", q(dst), plain(&e))
        }
        _ => {}
    }
    if sh.opts.verbose {
        say(format!("removed {}", q(dst)));
    }
    Ok(())
}

/// `make(dst)`, or with -f over whatever is there.
fn make_at(
    dst: &Path,
    force: bool,
    make: impl Fn(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if force {
        replace_with(dst, make)
    } else {
        make(dst)
    }
}

/// `-s` and `-l`: a symbolic or hard link to the source instead of a copy.
fn make_link(sh: &Shared, it: &Item) -> Result<Made> {
    let o = &sh.opts;
    let (src, dst) = (it.src, it.dst);
    if o.link == LinkMode::Symbolic {
        if src.is_relative() && !in_working_dir(dst) {
            bail!(
                "{}: can make relative symbolic links only in current directory",
                crate::units::escape(&dst.display().to_string())
            );
        }
        make_at(dst, o.force, |d| std::os::unix::fs::symlink(src, d)).map_err(|e| {
            anyhow!(
                "cannot create symbolic link {} to {}: {}",
                q(dst),
                q(src),
                plain(&e)
            )
        })?;
        return Ok(Made::Symlink);
    }
    let flags = if sh.follows(it.top) {
        rustix::fs::AtFlags::SYMLINK_FOLLOW
    } else {
        rustix::fs::AtFlags::empty()
    };
    make_at(dst, o.force, |d| {
        rustix::fs::linkat(rustix::fs::CWD, src, rustix::fs::CWD, d, flags).map_err(Into::into)
    })
    .map_err(|e| {
        anyhow!(
            "cannot create hard link {} to {}: {}",
            q(dst),
            q(src),
            plain(&e)
        )
    })?;
    Ok(Made::HardLink)
}

/// Makes the destination: a symbolic or hard link (-s, -l), a copy of a symlink, a
/// regular file's data, or a special file.
fn make(
    sh: &Shared,
    it: &Item,
    meta: &Metadata,
    opened: Option<std::fs::File>,
    existing: Option<&Metadata>,
    new_dst: bool,
) -> Result<Made> {
    let o = &sh.opts;
    let (src, dst) = (it.src, it.dst);
    let ft = meta.file_type();
    if o.link != LinkMode::Copy {
        return make_link(sh, it);
    }
    if ft.is_symlink() {
        let target = std::fs::read_link(src)
            .map_err(|e| anyhow!("cannot read symbolic link {}: {}", q(src), plain(&e)))?;
        make_at(dst, o.force, |d| std::os::unix::fs::symlink(&target, d))
            .map_err(|e| anyhow!("cannot create symbolic link {}: {}", q(dst), plain(&e)))?;
        made_attributes(sh, src, meta, dst)?;
        return Ok(Made::Symlink);
    }
    if ft.is_file() || o.copy_as_regular {
        return Ok(Made::Data(copy_reg(
            sh, it, meta, opened, existing, new_dst,
        )?));
    }
    let kind = if ft.is_fifo() {
        "fifo"
    } else if ft.is_block_device() {
        "block"
    } else if ft.is_char_device() {
        "char"
    } else {
        "socket"
    };
    os::make_special(dst, kind, meta.rdev()).map_err(|e| {
        anyhow!(
            "cannot create {} {}: {}",
            if kind == "fifo" {
                "fifo"
            } else {
                "special file"
            },
            q(dst),
            errno_text(Errno::from_raw_os_error(e.errno))
        )
    })?;
    made_attributes(sh, src, meta, dst)?;
    Ok(Made::Special)
}

/// The attributes of a symlink or special file just made at `dst`, which is removed if
/// they cannot be set.
fn made_attributes(sh: &Shared, src: &Path, meta: &Metadata, dst: &Path) -> Result<()> {
    let mut guard = Created { path: Some(dst) };
    attributes(sh, src, meta, dst)
        .map_err(|e| anyhow!("setting the attributes of {}: {e:#}", q(dst)))?;
    guard.path = None;
    Ok(())
}

/// What GNU's same_file_ok says of a destination that exists.
enum SameFile {
    /// Copy.
    Go,
    /// Nothing to do (the destination is already what was asked for).
    Done,
    /// "are the same file".
    Refuse,
}

/// Whether `a` and `b` are one directory entry: the same name in the same directory.
fn same_name(a: &Path, b: &Path) -> bool {
    let dir = |p: &Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    a.file_name() == b.file_name()
        && matches!(
            (std::fs::metadata(dir(a)), std::fs::metadata(dir(b))),
            (Ok(x), Ok(y)) if same_file(&x, &y)
        )
}

/// The first half of GNU's same_file_ok: the two files' own (not followed) stats and
/// whether they are one file, or Err with the decision already made (a hard link of
/// the same file, two symlinks, or two different files being followed).
fn link_stats(
    sh: &Shared,
    src: &Path,
    ss: &Metadata,
    dst: &Path,
    ds: &Metadata,
) -> Result<(Metadata, Metadata, bool), SameFile> {
    let o = &sh.opts;
    let link = |m: &Metadata| m.file_type().is_symlink();
    let same = same_file(ss, ds);
    if same && o.link == LinkMode::Hard {
        return Err(SameFile::Done);
    }
    if o.deref == super::Deref::Never {
        if link(ss) && link(ds) {
            let sn = same_name(src, dst);
            if !sn {
                if o.backup != Backup::None {
                    return Err(SameFile::Go);
                }
                if same {
                    return Err(SameFile::Done);
                }
            }
            return Err(if sn { SameFile::Refuse } else { SameFile::Go });
        }
        return Ok((ss.clone(), ds.clone(), same));
    }
    if !same {
        return Err(SameFile::Go);
    }
    let (Ok(d), Ok(s)) = (
        std::fs::symlink_metadata(dst),
        std::fs::symlink_metadata(src),
    ) else {
        return Err(SameFile::Go);
    };
    let same_link = same_file(&s, &d);
    if link(&s) && link(&d) && o.remove_destination {
        return Err(SameFile::Go);
    }
    Ok((s, d, same_link))
}

/// GNU cp 9.1's same_file_ok (copy mode): whether copying `src` (`ss`, as followed or
/// not) onto the existing `dst` (`ds`) may go on. Two names of one file are refused,
/// except where the copy would not destroy the data: a backup is made first, the
/// destination is removed before it is written, symlinks are copied as symlinks, or
/// the link asked for (-l, -s) is already there.
fn same_file_ok(sh: &Shared, src: &Path, ss: &Metadata, dst: &Path, ds: &Metadata) -> SameFile {
    let o = &sh.opts;
    let link = |m: &Metadata| m.file_type().is_symlink();
    let (sl, dl, same_link) = match link_stats(sh, src, ss, dst, ds) {
        Ok(stats) => stats,
        Err(decided) => return decided,
    };
    if o.backup != Backup::None {
        if !same_link {
            if o.deref != super::Deref::Never && link(&sl) && !link(&dl) {
                return SameFile::Refuse;
            }
            return SameFile::Go;
        }
        return if same_name(src, dst) {
            SameFile::Refuse
        } else {
            SameFile::Go
        };
    }
    if o.remove_destination {
        if link(&dl) {
            return SameFile::Go;
        }
        if same_link && dl.nlink() > 1 && !same_name(src, dst) {
            return SameFile::Go;
        }
    }
    if !link(&sl) && !link(&dl) {
        if !same_file(&sl, &dl) {
            return SameFile::Go;
        }
        if o.link == LinkMode::Hard {
            return SameFile::Done;
        }
    }
    if o.link == LinkMode::Symbolic && link(&dl) {
        return SameFile::Go;
    }
    if o.deref == super::Deref::Never {
        let ts = if link(&sl) {
            std::fs::metadata(src)
        } else {
            Ok(sl.clone())
        };
        let td = if link(&dl) {
            std::fs::metadata(dst)
        } else {
            Ok(dl.clone())
        };
        let (Ok(ts), Ok(td)) = (ts, td) else {
            return SameFile::Go;
        };
        if !same_file(&ts, &td) {
            return SameFile::Go;
        }
        if o.link == LinkMode::Hard {
            return if link(&dl) {
                SameFile::Go
            } else {
                SameFile::Done
            };
        }
    }
    SameFile::Refuse
}

/// Whether `dst` names a file in the working directory (-s with a relative source).
fn in_working_dir(dst: &Path) -> bool {
    let parent = match dst.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => return true,
    };
    match (std::fs::metadata("."), std::fs::metadata(parent)) {
        (Ok(a), Ok(b)) => same_file(&a, &b),
        _ => true,
    }
}

/// After a copy: noted for the just-created checks, and named with --debug.
fn finish(sh: &Shared, it: &Item, made: Made) {
    if it.top
        && let Some(info) = &sh.dest_info
        && let Ok(m) = std::fs::symlink_metadata(it.dst)
        && let Ok(mut i) = info.lock()
    {
        i.insert((m.dev(), m.ino()));
    }
    if sh.opts.debug {
        let what = match made {
            Made::Symlink => "symlink".into(),
            Made::HardLink => "hard link".into(),
            Made::Special => "special file".into(),
            Made::Data(used) => format!(
                "method: {}, copy offload: {}, reflink: {}, sparse detection: {}",
                used.method, used.offload, used.reflink, used.sparse
            ),
        };
        say(format!("{} -> {}: {what}", q(it.src), q(it.dst)));
    }
}

/// Opens an existing destination for writing in place; a FIFO without a reader is
/// waited for (interruptibly: a blocking open would ignore Ctrl-C).
fn open_existing(dst: &Path, flags: OFlags, fifo: bool) -> Result<OwnedFd, Errno> {
    loop {
        let f = if fifo {
            flags | OFlags::NONBLOCK
        } else {
            flags
        };
        match rustix::fs::open(dst, f, Mode::empty()) {
            Err(Errno::NXIO) if fifo => {
                if crate::interrupt::requested() {
                    return Err(Errno::INTR);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// The source, open for reading (from the descriptor the caller opened, else opened
/// here and checked to be the file its metadata came from).
fn open_src(
    sh: &Shared,
    it: &Item,
    meta: &Metadata,
    opened: Option<std::fs::File>,
) -> Result<OwnedFd> {
    // Metadata read from the descriptor itself (a worker's open) needs no second look.
    if let Some(f) = opened {
        return Ok(OwnedFd::from(f));
    }
    let (dir, name) = match it.at {
        Some(a) => (a.src, Path::new(a.name)),
        None => (rustix::fs::CWD, it.src),
    };
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    if !sh.follows(it.top) {
        flags |= OFlags::NOFOLLOW;
    }
    // A FIFO opened without a writer must not hang past Ctrl-C: opened non-blocking,
    // and every read waits in a poll that sees it.
    if !meta.is_file() {
        flags |= OFlags::NONBLOCK;
    }
    let src = rustix::fs::openat(dir, name, flags, Mode::empty())
        .map_err(|e| anyhow!("cannot open {} for reading: {}", q(it.src), errno_text(e)))?;
    let st = rustix::fs::fstat(&src)?;
    if (st.st_dev as u64, st.st_ino as u64) != (meta.dev(), meta.ino()) {
        bail!(
            "skipping file {}, as it was replaced while being copied",
            q(it.src)
        );
    }
    Ok(src)
}

/// The destination, open for writing: the existing file in place (truncated unless
/// --attributes-only; with -f removed and made anew when it cannot be opened), else a
/// new file made with O_EXCL. Returns whether this run made it.
fn open_dst(
    sh: &Shared,
    it: &Item,
    meta: &Metadata,
    existing: Option<&Metadata>,
    new_dst: bool,
) -> Result<(OwnedFd, bool)> {
    let o = &sh.opts;
    let dstp = it.dst;
    if !new_dst {
        let mut flags = OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
        if !o.attributes_only {
            flags |= OFlags::TRUNC;
        }
        let fifo = existing.is_some_and(|d| d.file_type().is_fifo());
        match open_existing(dstp, flags, fifo) {
            Ok(fd) => return Ok((fd, false)),
            // Gone since: made anew below.
            Err(Errno::NOENT) => {}
            Err(Errno::INTR) => return Err(crate::error::Interrupted.into()),
            Err(_) if o.force => remove_said(sh, dstp)?,
            Err(e) => bail!("cannot create regular file {}: {}", q(dstp), errno_text(e)),
        }
    }
    // In a directory this run made the file is made under its own name, from the
    // directory's descriptor.
    let (dir, name) = match it.at {
        Some(a) if it.fresh => (a.dst, Path::new(a.name)),
        _ => (rustix::fs::CWD, dstp),
    };
    let mode = Mode::from_raw_mode(create_mode(sh, meta, it.fresh) as _);
    let cannot = |e: Errno| anyhow!("cannot create regular file {}: {}", q(dstp), errno_text(e));
    match rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        mode,
    ) {
        Ok(fd) => Ok((fd, true)),
        Err(Errno::EXIST) if std::fs::read_link(dstp).is_ok() => {
            // A dangling symlink. POSIX asks for the historical behaviour (write
            // through it), and GNU gives it then; the file it makes is not ours to
            // remove, the symlink still names it.
            if !o.open_dangling_dest_symlink {
                bail!("not writing through dangling symlink {}", q(dstp));
            }
            let fd = rustix::fs::openat(
                dir,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
                mode,
            )
            .map_err(cannot)?;
            Ok((fd, false))
        }
        Err(e) => Err(cannot(e)),
    }
}

/// A failed copy's error as cp words it ("error copying A to B: …"); an interruption
/// stays one.
fn copy_error(e: anyhow::Error, srcp: &Path, dstp: &Path) -> anyhow::Error {
    if let Some(s) = e.downcast_ref::<crate::sys::calls::SysError>() {
        return anyhow!("error copying {} to {}: {}", q(srcp), q(dstp), s.short());
    }
    if e.is::<crate::error::Interrupted>() {
        return e;
    }
    anyhow!("error copying {} to {}: {e:#}", q(srcp), q(dstp))
}

/// A regular source must come out whole: a method that stopped before the end it was
/// given (a copy_file_range that returns 0 early) is a failure here, not a short copy
/// reported as success. A source that shrank while it was copied is not: at the offset
/// the copy reached it now ends, so the copy holds what was there to read, and GNU cp
/// keeps such a copy and exits 0 too. A source that grew is copied as it was opened
/// (copy_file_range) or to its new end (read/write), as GNU's.
fn whole_or_fail(
    srcp: &Path,
    (src, meta): (&OwnedFd, &Metadata),
    dst: &OwnedFd,
    used: &data::Used,
) -> Result<()> {
    let got = if used.method == "reflink" || used.sparse.contains("holes kept") {
        rustix::fs::fstat(dst)?.st_size as u64
    } else {
        used.bytes
    };
    if meta.size() == 0 || got >= meta.size() {
        return Ok(());
    }
    let mut probe = [0u8; 1];
    if crate::sys::calls::pread(src, &mut probe, got)? == 0 {
        return Ok(()); // the source ends where the copy did: it shrank
    }
    bail!(
        "short copy of {}: {} of {} bytes ({})",
        q(srcp),
        got,
        meta.size(),
        used.method
    )
}

/// A regular file's bytes (or, read like one, a FIFO's or a device's) into a new file,
/// or into the existing destination in place (GNU's copy_reg).
fn copy_reg(
    sh: &Shared,
    it: &Item,
    meta: &Metadata,
    opened: Option<std::fs::File>,
    existing: Option<&Metadata>,
    new_dst: bool,
) -> Result<data::Used> {
    let o = &sh.opts;
    let (srcp, dstp) = (it.src, it.dst);
    let stream_src = !meta.is_file();
    let src = open_src(sh, it, meta, opened)?;
    // procfs and sysfs files: their size is not their content.
    let trusted = meta.is_file() && !pseudo_fs(&src, meta.dev());
    let (mut dst, made) = open_dst(sh, it, meta, existing, new_dst)?;
    let mut created = Created {
        path: made.then_some(dstp),
    };
    let dst_regular = created.path.is_some() || {
        let d = rustix::fs::fstat(&dst)?;
        rustix::fs::FileType::from_raw_mode(d.st_mode as _) == rustix::fs::FileType::RegularFile
    };
    let used = if o.attributes_only {
        Ok(data::Used {
            method: "none (--attributes-only)",
            reflink: "not needed".into(),
            offload: "not needed".into(),
            sparse: "not needed".into(),
            bytes: 0,
        })
    } else if trusted && dst_regular {
        data::regular(
            &src,
            &mut dst,
            (srcp, dstp),
            (meta.size(), meta.blocks()),
            created.path.is_some(),
            &sh.path,
        )
    } else {
        let flow = Flow {
            src_stream: stream_src,
            dst_stream: !dst_regular,
            holes: o.sparse == data::When::Always && dst_regular,
        };
        data::stream(&src, &dst, flow, sh.pipe_capacity, &sh.path)
    }
    .map_err(|e| copy_error(e, srcp, dstp))?;
    if trusted && dst_regular && !o.attributes_only {
        whole_or_fail(srcp, (&src, meta), &dst, &used)?;
    }
    if dst_regular {
        fd_attributes(
            sh,
            meta,
            (&src, &dst),
            created.path.is_some(),
            used.method == "reflink",
        )
        .map_err(|e| anyhow!("setting the attributes of {}: {e:#}", q(dstp)))?;
    }
    created.path = None;
    Ok(used)
}

thread_local! {
    /// Devices already asked whether they are a pseudo-filesystem: one fstatfs per
    /// filesystem and thread, not per file.
    static PSEUDO: std::cell::RefCell<Vec<(u64, bool)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether `fd`, on device `dev`, is on a pseudo-filesystem (procfs, sysfs, …).
fn pseudo_fs(fd: &OwnedFd, dev: u64) -> bool {
    PSEUDO.with_borrow_mut(|known| {
        if let Some(&(_, p)) = known.iter().find(|(d, _)| *d == dev) {
            return p;
        }
        let p = os::pseudo_fs(fd);
        known.push((dev, p));
        p
    })
}
