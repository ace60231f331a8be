//! A directory operand: the checks GNU makes before copying a directory (not into
//! itself, by device and inode; no cyclic symlink), the walk that makes directories and
//! hands files to a pool of workers in batches, and the directories' attributes once
//! their contents are in.

use super::attrs::Attrs;
use super::pool::{DirBatch, Pool, Queue};
use super::{Shared, fail, q, say};
use crate::sys::os;
use anyhow::{Result, anyhow, bail};
use rustix::fd::AsFd;
use rustix::fs::{Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A directory made or merged into, whose attributes are set once its contents are in.
struct DirDone {
    src: PathBuf,
    dst: PathBuf,
    attrs: Attrs,
    created: bool,
}

/// What the walk of one operand carries.
struct Walk {
    dirs: Vec<DirDone>,
    /// (dev, ino) of the source directories from the operand down to here.
    ancestors: Vec<(u64, u64)>,
    /// The operand's copy, when this run made it: met again in the source, the copy
    /// is inside the source (GNU's check, behind the one made before starting).
    made_top: Option<(u64, u64)>,
    top: (PathBuf, PathBuf),
}

/// Refuses a destination that is the source directory or inside it, by device and
/// inode of the destination and each of its ancestors, before anything is made (GNU
/// finds it only once the walk meets its own copy, after making files inside the
/// source). A path comparison would miss a bind mount; so would `..` alone, which
/// leaves a bind mount of part of the source at its mount point: at the root of such a
/// mount the walk also climbs the directory's real ancestors (`mounts::bind_source`).
fn not_into_itself(src: &Path, meta: &Metadata, dst: &Path) -> Result<()> {
    let start = match std::fs::metadata(dst) {
        Ok(m) if m.is_dir() => dst.to_path_buf(),
        _ => match dst.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        },
    };
    let Ok(fd) = rustix::fs::open(&start, os::dir_handle_flags(), Mode::empty()) else {
        return Ok(()); // making the copy fails, and says why
    };
    let mut todo = vec![fd];
    let mut seen = std::collections::HashSet::new();
    while let Some(mut fd) = todo.pop() {
        while seen.len() < 4096 {
            let st = rustix::fs::fstat(&fd)?;
            let here = (st.st_dev as u64, st.st_ino as u64);
            if here == (meta.dev(), meta.ino()) {
                bail!(
                    "cannot copy a directory, {}, into itself, {}",
                    q(src),
                    q(dst)
                );
            }
            if !seen.insert(here) {
                break;
            }
            // The same directory seen through its filesystem: its real parent is
            // climbed next (the directory itself is already looked at).
            if let Some(real) = crate::sys::mounts::bind_source(fd.as_fd()) {
                todo.push(rustix::fs::openat(
                    &real,
                    "..",
                    os::dir_handle_flags(),
                    Mode::empty(),
                )?);
            }
            let up = rustix::fs::openat(&fd, "..", os::dir_handle_flags(), Mode::empty())?;
            let ust = rustix::fs::fstat(&up)?;
            if (ust.st_dev, ust.st_ino) == (st.st_dev, st.st_ino) {
                break;
            }
            fd = up;
        }
    }
    Ok(())
}

/// The copy of directory `src` at `dst`: an existing directory is merged into (Ok
/// false), anything else there refused, and a missing one made, private until its
/// contents are in (Ok true).
fn prepare_dir(sh: &Shared, src: &Path, dst: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(dst) {
        Ok(m) if m.is_dir() => Ok(false),
        Ok(_) => bail!(
            "cannot overwrite non-directory {} with directory {}",
            q(dst),
            q(src)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            make_dir(sh, src, dst)?;
            Ok(true)
        }
        Err(e) => bail!("cannot stat {}: {}", q(dst), crate::error::plain(&e)),
    }
}

fn make_dir(sh: &Shared, src: &Path, dst: &Path) -> Result<()> {
    make_dir_said(sh, dst, || format!("{} -> {}", q(src), q(dst)))
}

/// Makes `dst`, private until its contents are in; -v says `line`.
fn make_dir_said(sh: &Shared, dst: &Path, line: impl FnOnce() -> String) -> Result<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dst)
        .map_err(|e| {
            anyhow!(
                "cannot create directory {}: {}",
                q(dst),
                crate::error::plain(&e)
            )
        })?;
    if sh.opts.verbose {
        say(line());
    }
    Ok(())
}

/// `--parents`: the directories of `src`'s name under `dir`, made where missing
/// (private until the copy is done); returns those whose attributes are then set:
/// the ones made, and with -p the existing ones too (GNU's re_protect), each with its
/// source's metadata and whether it was made.
pub(super) fn make_parents(
    sh: &Shared,
    dir: &Path,
    src: &OsStr,
) -> Result<Vec<(PathBuf, PathBuf, Metadata, bool)>> {
    let p = sh.opts.preserve;
    let all = p.mode || p.ownership || p.timestamps;
    let s = super::strip_trailing_slashes(src);
    let b = s.as_bytes();
    let mut made = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        if c != b'/' || i == 0 || b[i - 1] == b'/' {
            continue;
        }
        let sp = PathBuf::from(OsStr::from_bytes(&b[..i]));
        let dp = super::concat(dir.as_os_str(), sp.as_os_str());
        let exists = match std::fs::metadata(&dp) {
            Ok(m) if m.is_dir() => true,
            Ok(_) => bail!("{} exists but is not a directory", q(&dp)),
            Err(_) => false,
        };
        if exists && !all {
            continue;
        }
        let meta = std::fs::metadata(&sp)
            .map_err(|e| anyhow!("cannot stat {}: {}", q(&sp), crate::error::plain(&e)))?;
        if !meta.is_dir() {
            bail!("{} is not a directory", q(&sp));
        }
        if !exists {
            // -v names these unquoted, as GNU's does.
            make_dir_said(sh, &dp, || format!("{} -> {}", sp.display(), dp.display()))?;
        }
        made.push((dp, sp, meta, !exists));
    }
    Ok(made)
}

/// Copies the directory operand `src` to `dst`.
pub(super) fn tree(sh: &Arc<Shared>, src: &Path, dst: &Path, meta: Metadata) -> Result<()> {
    not_into_itself(src, &meta, dst)?;
    let created = prepare_dir(sh, src, dst)?;
    let made_top = if created {
        std::fs::symlink_metadata(dst)
            .ok()
            .map(|m| (m.dev(), m.ino()))
    } else {
        None
    };
    if let (Some(info), Ok(m)) = (&sh.dest_info, std::fs::symlink_metadata(dst))
        && let Ok(mut i) = info.lock()
    {
        i.insert((m.dev(), m.ino()));
    }
    let mut pool = Pool::start(sh);
    let mut w = Walk {
        dirs: Vec::new(),
        ancestors: vec![(meta.dev(), meta.ino())],
        made_top,
        top: (src.to_path_buf(), dst.to_path_buf()),
    };
    let walked = walk_dir(sh, &mut pool.queue, src, dst, meta, created, &mut w);
    pool.finish();
    for d in w.dirs.iter().rev() {
        finish_dir(sh, d);
    }
    walked
}

/// A directory's attributes and (with xattr kept) extended attributes.
fn finish_dir(sh: &Shared, d: &DirDone) {
    if let Err(e) = dir_attributes(sh, &d.dst, &d.attrs, d.created).and_then(|()| {
        if sh.opts.preserve.xattr {
            dir_xattrs(&d.src, &d.dst)
        } else {
            Ok(())
        }
    }) {
        fail(sh, format!("setting attributes of {}: {e:#}", q(&d.dst)));
    }
}

/// An entry of a directory that the walk looks at itself: a directory (or an entry
/// whose type the directory does not give, or a symlink followed with -L). Anything
/// else is queued for a worker.
fn plan(
    sh: &Shared,
    tx: &mut Queue,
    src: &Path,
    dst: &Path,
    fresh: bool,
    w: &mut Walk,
) -> Result<()> {
    let meta = if sh.follows(false) {
        std::fs::metadata(src)
    } else {
        std::fs::symlink_metadata(src)
    }
    .map_err(|e| anyhow!("cannot stat {}: {}", q(src), crate::error::plain(&e)))?;
    if !meta.is_dir() {
        let mut b = DirBatch {
            dirs: Arc::new((
                src.parent().unwrap_or(Path::new("")).to_path_buf(),
                dst.parent().unwrap_or(Path::new("")).to_path_buf(),
            )),
            fresh,
            names: Vec::new(),
            ends: Vec::new(),
            next: Default::default(),
        };
        let name = src.file_name().unwrap_or_default();
        b.names.extend_from_slice(name.as_bytes());
        b.ends.push((
            b.names.len(),
            meta.is_file() && !meta.file_type().is_symlink(),
        ));
        return tx.send_dir(b);
    }
    let key = (meta.dev(), meta.ino());
    if w.ancestors.contains(&key) {
        bail!("cannot copy cyclic symbolic link {}", q(src));
    }
    if w.made_top == Some(key) {
        bail!(
            "cannot copy a directory, {}, into itself, {}",
            q(&w.top.0),
            q(&w.top.1)
        );
    }
    // In a directory this run made, the name is free and is not the source: only
    // make it (a stat and a path walk per directory were most of the walk's time on a
    // tree of small directories).
    let created = if fresh {
        make_dir(sh, src, dst)?;
        true
    } else {
        prepare_dir(sh, src, dst)?
    };
    // -x: a directory on another filesystem is made, not copied into.
    if sh.opts.one_file_system && w.ancestors.last().is_some_and(|a| a.0 != meta.dev()) {
        w.dirs.push(DirDone {
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            attrs: Attrs::of(&meta),
            created,
        });
        return Ok(());
    }
    w.ancestors.push(key);
    let r = walk_dir(sh, tx, src, dst, meta, created, w);
    w.ancestors.pop();
    r
}

/// The directory `src`, its copy `dst` made (`created`: by this run): queues its files,
/// then walks its subdirectories.
fn walk_dir(
    sh: &Shared,
    tx: &mut Queue,
    src: &Path,
    dst: &Path,
    meta: Metadata,
    created: bool,
    w: &mut Walk,
) -> Result<()> {
    w.dirs.push(DirDone {
        src: src.to_path_buf(),
        dst: dst.to_path_buf(),
        attrs: Attrs::of(&meta),
        created,
    });
    let mine = w.dirs.len() - 1;
    // Names in order (each name read once: a sort key made per comparison
    // allocated a dozen names per entry).
    let mut entries: Vec<(OsString, Option<std::fs::FileType>)> = std::fs::read_dir(src)
        .map_err(|e| anyhow!("cannot access {}: {}", q(src), crate::error::plain(&e)))?
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name(), e.file_type().ok()))
        .collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Anything but a directory goes to the workers unexamined, the directory's
    // files in batches of their own: two workers seldom create files in the same
    // directory at once (each create holds the directory's lock), unless it is
    // one large directory, whose batches they share.
    let follow = sh.follows(false);
    let mut subdirs = Vec::new();
    let pair = Arc::new((src.to_path_buf(), dst.to_path_buf()));
    let new_batch = || DirBatch {
        dirs: Arc::clone(&pair),
        fresh: created,
        names: Vec::new(),
        ends: Vec::new(),
        next: Default::default(),
    };
    let mut batch = new_batch();
    for (name, t) in entries {
        if crate::interrupt::requested() {
            return Ok(());
        }
        match t {
            Some(t) if !(t.is_dir() || follow && t.is_symlink()) => {
                batch.names.extend_from_slice(name.as_bytes());
                batch.ends.push((batch.names.len(), t.is_file()));
                if batch.ends.len() >= Queue::BATCH {
                    tx.send_dir(std::mem::replace(&mut batch, new_batch()))?;
                }
            }
            _ => subdirs.push(name),
        }
    }
    if !batch.ends.is_empty() {
        tx.send_dir(batch)?;
    }
    for name in subdirs {
        if crate::interrupt::requested() {
            return Ok(());
        }
        if let Err(err) = plan(sh, tx, &src.join(&name), &dst.join(&name), created, w) {
            fail(sh, format!("{err:#}"));
        }
    }
    // Copying on this thread, everything under it is in: its attributes now, as GNU
    // sets them, so that what is kept grows with the depth, not the number of
    // directories.
    if tx.is_inline() {
        for d in w.dirs.drain(mine..).rev() {
            finish_dir(sh, &d);
        }
    }
    Ok(())
}

/// A directory's attributes, once its contents are in: timestamps and owner (with
/// -p), then mode (the source's with -p; a directory this run made gets the source's
/// permissions and sticky bit less the umask, as GNU's mkdir gives it; an existing
/// one keeps its own).
pub(super) fn dir_attributes(sh: &Shared, dst: &Path, m: &Attrs, created: bool) -> Result<()> {
    let p = sh.opts.preserve;
    let owned = super::attrs::times_and_owner(p, dst, m, rustix::fs::AtFlags::empty())?;
    let mode = if p.mode {
        // A directory whose owner could not be kept loses setuid and setgid (GNU
        // keeps its sticky bit).
        Some(m.mode & if owned { 0o7777 } else { 0o1777 })
    } else if created {
        let now = std::fs::symlink_metadata(dst)?.mode();
        Some(if p.no_mode {
            0o777 & !sh.umask
        } else {
            // The setgid bit a new directory inherits from its parent stays.
            (now & 0o2000) | (m.mode & 0o1777 & !sh.umask)
        })
    } else {
        None
    };
    if let Some(mode) = mode {
        std::fs::set_permissions(dst, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// A directory's extended attributes (-a, --preserve=xattr).
fn dir_xattrs(src: &Path, dst: &Path) -> Result<()> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let s = rustix::fs::open(src, flags, Mode::empty())?;
    let d = rustix::fs::open(dst, flags | OFlags::NOFOLLOW, Mode::empty())?;
    match os::copy_xattrs(&s, &d) {
        Err(e) if !e.is_missing() => Err(e.into()),
        _ => Ok(()),
    }
}
