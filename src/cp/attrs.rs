//! A copy's attributes, in GNU cp's order: timestamps, owner, xattrs, then mode (so a
//! chown cannot clear setuid and setgid bits set before it); the mode a new file is
//! created with and ends with; what a directory's attributes need of its source.

use super::{Shared, errno_text};
use crate::sys::os;
use anyhow::{Result, bail};
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::fs::Metadata;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The permissions a new file ends with: the source's (with -p: setuid, setgid and
/// sticky too), else masked by the umask; 0666 less the umask with
/// --no-preserve=mode.
pub(super) fn new_mode(sh: &Shared, meta: &Metadata) -> u32 {
    let p = sh.opts.preserve;
    if p.mode {
        meta.mode() & 0o7777
    } else if p.no_mode {
        0o666 & !sh.umask
    } else {
        meta.mode() & 0o777 & !sh.umask
    }
}

/// The mode a new file is created with: its final permissions (the kernel applies the
/// umask), except that, as GNU cp does, group and others get nothing while its owner
/// may still change (ownership preserved), so that no one reads it under the wrong
/// owner. In a directory this run made, which stays 0700 until its contents are
/// written, no one else can reach the file anyway: it gets its final permissions at
/// once, and most files then need no chmod. setuid, setgid and sticky bits come only
/// with the final fchmod, after any chown.
pub(super) fn create_mode(sh: &Shared, meta: &Metadata, fresh: bool) -> u32 {
    let omitted = if sh.opts.preserve.ownership && !fresh {
        0o077
    } else {
        0
    };
    new_mode(sh, meta) & 0o777 & !omitted
}

/// The owner of a copy (--preserve=ownership): where the user may not give it away, the
/// group alone where the user belongs to it (GNU's fallback); silent when refused, as
/// GNU is without privileges. Returns whether the owner was kept.
pub(super) fn chown_fd(dst: &OwnedFd, m: &Metadata) -> Result<bool> {
    let (uid, gid) = (
        rustix::fs::Uid::from_raw(m.uid()),
        rustix::fs::Gid::from_raw(m.gid()),
    );
    match rustix::fs::fchown(dst, Some(uid), Some(gid)) {
        Ok(()) => Ok(true),
        Err(Errno::PERM | Errno::INVAL) => {
            let _ = rustix::fs::fchown(dst, None, Some(gid));
            Ok(false)
        }
        Err(e) => bail!("preserving ownership: {}", errno_text(e)),
    }
}

/// [`attributes`] on the open descriptors of a copied file, in the same order. Like
/// GNU cp, it asks the new file what it already is (one fstat) and skips a chown to
/// the owner it already has and a chmod to the mode it already has: each would be a
/// journalled inode update on ext4. An existing file written in place keeps its own
/// mode and owner unless they are preserved.
pub(super) fn fd_attributes(
    sh: &Shared,
    m: &Metadata,
    (src, dst): (&OwnedFd, &OwnedFd),
    created: bool,
    cloned: bool,
) -> Result<()> {
    let p = sh.opts.preserve;
    if p.timestamps {
        rustix::fs::futimens(dst, &timestamps(&Attrs::of(m)))?;
    }
    // Without -p a new file was created with its final mode: nothing to compare (a
    // clone made by path, as on macOS, has the source's).
    let now = if p.mode || p.ownership || cloned {
        Some(rustix::fs::fstat(dst)?)
    } else {
        None
    };
    let (mut chowned, mut lost_owner) = (false, false);
    if p.ownership
        && let Some(now) = &now
        && (now.st_uid, now.st_gid) != (m.uid(), m.gid())
    {
        if chown_fd(dst, m)? {
            chowned = true;
        } else {
            // Not permitted (not root): the copy stays ours, as with GNU cp, and so
            // loses setuid and setgid, which would otherwise grant our identity.
            lost_owner = true;
        }
    }
    if p.xattr
        && let Err(e) = os::copy_xattrs(src, dst)
        && !e.is_missing()
    {
        return Err(e.into());
    }
    if !(created || p.mode) {
        return Ok(());
    }
    let mut mode = new_mode(sh, m);
    if lost_owner {
        // GNU's rule: a file whose owner could not be kept loses setuid, setgid and
        // the sticky bit.
        mode &= !0o7000;
    }
    #[allow(clippy::unnecessary_cast)] // st_mode is a u16 on macOS
    let differs = match &now {
        Some(now) => now.st_mode as u32 & 0o7777 != mode,
        None => false,
    };
    if chowned || differs {
        rustix::fs::fchmod(dst, Mode::from_raw_mode(mode as _))?;
    }
    Ok(())
}

/// Sets a symlink's or special file's attributes in cp's order: timestamps, owner,
/// xattrs, then mode (so a chown cannot clear setuid/setgid bits set before it).
pub(super) fn attributes(sh: &Shared, src: &Path, m: &Metadata, path: &Path) -> Result<()> {
    let p = sh.opts.preserve;
    if m.file_type().is_symlink() {
        times_and_owner(
            p,
            path,
            &Attrs::of(m),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?;
        return Ok(());
    }
    times_and_owner(
        p,
        path,
        &Attrs::of(m),
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )?;
    if p.xattr && m.is_file() {
        let s = rustix::fs::open(src, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
        let d = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )?;
        if let Err(e) = os::copy_xattrs(&s, &d)
            && !e.is_missing()
        {
            return Err(e.into());
        }
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(new_mode(sh, m)))?;
    Ok(())
}

/// What a directory's or special file's attributes need of its source: kept for every
/// directory of a tree until its contents are in, so a few words, not a `Metadata`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attrs {
    pub mode: u32,
    uid: u32,
    gid: u32,
    times: [(i64, i64); 2],
}

impl Attrs {
    pub fn of(m: &Metadata) -> Attrs {
        Attrs {
            mode: m.mode(),
            uid: m.uid(),
            gid: m.gid(),
            times: [(m.atime(), m.atime_nsec()), (m.mtime(), m.mtime_nsec())],
        }
    }
}

/// The source's timestamps (with -p) and owner (with --preserve=ownership; refused
/// quietly when not permitted, as cp does, keeping the group where it can) on `path`,
/// by path with `flags`.
/// Ok(false): the owner was to be kept and could not be.
pub(super) fn times_and_owner(
    p: super::Preserve,
    path: &Path,
    a: &Attrs,
    flags: rustix::fs::AtFlags,
) -> Result<bool> {
    if p.timestamps {
        rustix::fs::utimensat(rustix::fs::CWD, path, &timestamps(a), flags)?;
    }
    if p.ownership {
        let gid = Some(rustix::fs::Gid::from_raw(a.gid));
        match rustix::fs::chownat(
            rustix::fs::CWD,
            path,
            Some(rustix::fs::Uid::from_raw(a.uid)),
            gid,
            flags,
        ) {
            Ok(()) => {}
            Err(Errno::PERM | Errno::INVAL) => {
                let _ = rustix::fs::chownat(rustix::fs::CWD, path, None, gid, flags);
                return Ok(false);
            }
            Err(e) => bail!("preserving ownership: {}", errno_text(e)),
        }
    }
    Ok(true)
}

pub(super) fn timestamps(a: &Attrs) -> rustix::fs::Timestamps {
    let t = |(s, ns): (i64, i64)| rustix::fs::Timespec {
        tv_sec: s,
        tv_nsec: ns as _,
    };
    rustix::fs::Timestamps {
        last_access: t(a.times[0]),
        last_modification: t(a.times[1]),
    }
}
