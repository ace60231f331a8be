//! The mount table (/proc/self/mountinfo, where the OS has one): one parser for the
//! machine facts and for `cp`'s into-itself check, which must see through a bind mount
//! to the directory it shows.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::Mode;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount's id (statx's `stx_mnt_id`).
    pub id: u64,
    /// The filesystem's device, "major:minor".
    pub dev: String,
    /// The directory of the filesystem the mount shows: "/" for a whole filesystem, a
    /// subdirectory's path for a bind mount of it.
    pub root: PathBuf,
    pub point: PathBuf,
    /// Per-mount options (the sixth field).
    pub options: String,
    pub fs_type: String,
    pub source: String,
    /// Per-superblock options.
    pub super_options: String,
}

/// Decodes the octal escapes (`\040` for space) that /proc/self/mountinfo uses.
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("x"), 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fn path(s: &str) -> PathBuf {
    PathBuf::from(OsString::from_vec(unescape(s)))
}

/// Parses mountinfo's text; lines that do not read as mounts are passed over.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (pre, post) = line.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let post: Vec<&str> = post.split(' ').collect();
            if pre.len() < 6 || post.len() < 3 {
                return None;
            }
            Some(Mount {
                id: pre[0].parse().ok()?,
                dev: pre[2].to_string(),
                root: path(pre[3]),
                point: path(pre[4]),
                options: pre[5].to_string(),
                fs_type: post[0].to_string(),
                source: String::from_utf8_lossy(&unescape(post[1])).into_owned(),
                super_options: post[2].to_string(),
            })
        })
        .collect()
}

/// This process's mounts (empty where the OS has no /proc/self/mountinfo).
pub fn table() -> Vec<Mount> {
    // Room for a usual table, read in one call (a /proc file says its size is 0, so
    // read_to_string alone would start at 32 bytes and double eight times).
    let mut text = String::with_capacity(16 << 10);
    let read = std::fs::File::open("/proc/self/mountinfo")
        .and_then(|mut f| std::io::Read::read_to_string(&mut f, &mut text));
    if read.is_err() {
        text.clear();
    }
    parse(&text)
}

/// When `dir` is the root of a mount that shows a directory below its filesystem's
/// root (a bind mount of a subdirectory), the same directory opened through another
/// mount of that filesystem whose root holds it: `..` from there climbs the
/// directory's real ancestors, where `..` from `dir` leaves the mount. None for any
/// other directory, or when no such mount is visible from here (another namespace, a
/// covered mount point, no mount ids on this OS).
pub fn bind_source(dir: BorrowedFd<'_>) -> Option<OwnedFd> {
    let st = rustix::fs::fstat(dir).ok()?;
    let id = super::os::mount_id(dir)?;
    let up = rustix::fs::openat(dir, "..", super::os::dir_handle_flags(), Mode::empty()).ok()?;
    let ust = rustix::fs::fstat(&up).ok()?;
    let at_top = (ust.st_dev, ust.st_ino) == (st.st_dev, st.st_ino);
    if !at_top && super::os::mount_id(up.as_fd())? == id {
        return None; // inside its mount, not its root
    }
    let mounts = table();
    let me = mounts.iter().find(|m| m.id == id)?;
    if me.root == std::path::Path::new("/") {
        return None;
    }
    // Mounts of the same filesystem whose root holds this one's, widest first.
    let mut others: Vec<&Mount> = mounts
        .iter()
        .filter(|m| m.id != id && m.dev == me.dev && me.root.starts_with(&m.root))
        .collect();
    others.sort_by_key(|m| m.root.components().count());
    others.into_iter().find_map(|m| {
        let rest = me.root.strip_prefix(&m.root).ok()?;
        let fd = rustix::fs::open(
            m.point.join(rest),
            super::os::dir_handle_flags(),
            Mode::empty(),
        )
        .ok()?;
        let s = rustix::fs::fstat(&fd).ok()?;
        ((s.st_dev, s.st_ino) == (st.st_dev, st.st_ino)).then_some(fd)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_bind_mount_and_escapes() {
        let text = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                    99 22 8:1 /tmp/a\\040b/s /tmp/E rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                    garbage\n";
        let m = parse(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].id, 99);
        assert_eq!(m[1].dev, "8:1");
        assert_eq!(m[1].root, PathBuf::from("/tmp/a b/s"));
        assert_eq!(m[1].point, PathBuf::from("/tmp/E"));
        assert_eq!(m[1].fs_type, "ext4");
        assert_eq!(m[0].root, PathBuf::from("/"));
        assert_eq!(unescape("/plain"), b"/plain");
    }

    #[test]
    fn a_plain_directory_has_no_bind_source() {
        let d = tempfile::tempdir().unwrap();
        let fd = rustix::fs::open(
            d.path(),
            super::super::os::dir_handle_flags(),
            Mode::empty(),
        )
        .unwrap();
        assert!(bind_source(fd.as_fd()).is_none());
    }
}
