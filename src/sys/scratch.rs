//! ioprobe's scratch directory: the only place it creates, truncates or deletes files.
//!
//! A `Scratch` is a fresh directory `.ioprobe-XXXXXX` (mode 0700) inside the user's
//! `--dir`; it and everything in it are removed when the value is dropped, which happens
//! on success, on error and after an interrupt (the harness stops between samples), and
//! by the SIGBUS handler. Only SIGKILL (or a power cut) can leave one behind: each holds
//! an owner file (pid, the process's start time, the boot id), and the next run in the
//! same `--dir` removes directories whose owner is gone, and says so. Age alone is never
//! taken as proof.

use super::calls::{self, SysError};
use crate::error::UsageError;
use crate::error::plain;
use anyhow::{Context, Result};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use std::path::{Path, PathBuf};

/// A scratch directory removed on drop.
pub struct Scratch {
    dir: tempfile::TempDir,
    parent: PathBuf,
}

/// Name of the owner file inside a scratch directory.
const OWNER: &str = "owner";
const OWNER_HEADER: &str = "ioprobe scratch owner v1";

/// This boot's id (changes at every boot, so a pid from before a reboot never matches).
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

/// The owner file's text for this process.
fn owner_text() -> String {
    let pid = std::process::id();
    format!(
        "{OWNER_HEADER}\npid {pid}\nstart {}\nboot {}\n",
        start_time(pid).unwrap_or(0),
        boot_id()
    )
}

/// Whether the process an owner file names is gone: None when the file is not an owner
/// file (then nothing is concluded).
fn owner_gone(text: &str) -> Option<(bool, u32)> {
    let mut lines = text.lines();
    if lines.next()? != OWNER_HEADER {
        return None;
    }
    let mut field = |name: &str| {
        lines
            .next()
            .and_then(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let pid: u32 = field("pid ")?.parse().ok()?;
    let start: u64 = field("start ")?.parse().ok()?;
    let boot = field("boot ")?;
    let alive = boot == boot_id() && start_time(pid) == Some(start);
    Some((!alive, pid))
}

/// A scratch directory left behind by a process that no longer exists.
pub struct Stale {
    pub path: PathBuf,
    pub pid: u32,
    pub bytes: u64,
}

fn tree_bytes(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Removes `.ioprobe-*` directories in `parent` whose owner file names a process that
/// is gone (a run killed with SIGKILL); returns what was removed. Directories without a
/// readable owner file (another run just starting, or not ioprobe's) are left alone.
pub fn reclaim_stale(parent: &Path) -> Vec<Stale> {
    let Ok(rd) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name();
        let is_scratch = name.to_string_lossy().starts_with(".ioprobe-")
            && e.file_type().is_ok_and(|t| t.is_dir()); // a symlink is not followed
        if !is_scratch {
            continue;
        }
        let path = e.path();
        let Ok(text) = std::fs::read_to_string(path.join(OWNER)) else {
            continue;
        };
        if let Some((true, pid)) = owner_gone(&text) {
            let bytes = tree_bytes(&path);
            if std::fs::remove_dir_all(&path).is_ok() {
                out.push(Stale { path, pid, bytes });
            }
        }
    }
    out
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // The SIGBUS handler must not name a directory that is about to go.
        super::signals::set_scratch(None);
    }
}

impl Scratch {
    /// Validates `parent` (exists, is a directory, writable) and creates the scratch
    /// directory inside it. Problems with `parent` are usage errors.
    pub fn create_in(parent: &Path) -> Result<Scratch> {
        let meta = std::fs::metadata(parent)
            .map_err(|e| UsageError(format!("--dir {}: {}", parent.display(), plain(&e))))?;
        if !meta.is_dir() {
            return Err(UsageError(format!("--dir {}: not a directory", parent.display())).into());
        }
        if !calls::can_write_dir(parent) {
            return Err(UsageError(format!("--dir {}: not writable", parent.display())).into());
        }
        let dir = tempfile::Builder::new()
            .prefix(".ioprobe-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(parent)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::ReadOnlyFilesystem
                | std::io::ErrorKind::NotFound => anyhow::Error::new(UsageError(format!(
                    "--dir {}: not writable ({})",
                    parent.display(),
                    plain(&e)
                ))),
                _ => anyhow::anyhow!(
                    "cannot create scratch directory in {}: {}",
                    parent.display(),
                    plain(&e)
                ),
            })?;
        std::fs::write(dir.path().join(OWNER), owner_text())
            .with_context(|| format!("writing the owner file in {}", dir.path().display()))?;
        super::signals::set_scratch(Some(dir.path()));
        let parent = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
        Ok(Scratch { dir, parent })
    }

    /// The scratch directory itself.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The user's directory that holds the scratch directory (canonical).
    pub fn parent(&self) -> &Path {
        &self.parent
    }

    /// Bytes free for an unprivileged user on the scratch filesystem.
    pub fn free_space(&self) -> Result<u64> {
        Ok(calls::free_space(self.path())?)
    }

    /// Refuses (usage error) to go on when `bytes` more would not fit on the filesystem.
    pub fn ensure_space(&self, bytes: u64, what: &str) -> Result<()> {
        let free = self.free_space()?;
        if bytes > free {
            return Err(UsageError(format!(
                "{what} needs {} but {} has only {} free",
                crate::units::format_size(bytes),
                self.parent.display(),
                crate::units::format_size(free)
            ))
            .into());
        }
        Ok(())
    }

    /// Creates `name` in the scratch directory with O_CREAT|O_EXCL, mode 0600, filled
    /// with `size` bytes of a non-zero pattern written with checked pwrite calls, then
    /// fdatasync'd so write-back does not run during measurements. `stop` is polled
    /// between 1 MiB chunks; when it returns true creation stops with `Interrupted`.
    pub fn create_file(
        &self,
        name: &str,
        size: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<(PathBuf, OwnedFd)> {
        let path = self.path().join(name);
        let fd = calls::open(&path, OFlags::RDWR | OFlags::CREATE | OFlags::EXCL, 0o600)
            .with_context(|| format!("creating {}", path.display()))?;
        let chunk = pattern_chunk(1 << 20);
        let mut off = 0u64;
        while off < size {
            if stop() {
                return Err(crate::error::Interrupted.into());
            }
            let n = (size - off).min(chunk.len() as u64) as usize;
            calls::pwrite_all(&fd, &chunk[..n], off).map_err(|e| space_hint(e, self))?;
            off += n as u64;
        }
        crate::sys::os::fdatasync(&fd).map_err(|e| space_hint(e, self))?;
        Ok((path, fd))
    }
}

/// A buffer of `len` bytes of a repeating non-zero pattern.
pub fn pattern_chunk(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 + 1).collect()
}

fn space_hint(e: SysError, s: &Scratch) -> anyhow::Error {
    if e.is_no_space() {
        anyhow::anyhow!(
            "{e} while filling a scratch file in {} (filesystem full or file size limit)",
            s.parent.display()
        )
    } else {
        e.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_files_tell_a_live_owner_from_a_gone_one() {
        assert_eq!(owner_gone(&owner_text()), Some((false, std::process::id())));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = format!("{OWNER_HEADER}\npid {pid}\nstart 1\nboot {}\n", boot_id());
        assert_eq!(owner_gone(&gone), Some((true, pid)));
        // Our own pid, but started at another time (pid reuse): gone.
        let reused = format!(
            "{OWNER_HEADER}\npid {}\nstart 1\nboot {}\n",
            std::process::id(),
            boot_id()
        );
        assert_eq!(owner_gone(&reused), Some((true, std::process::id())));
        // Another boot: gone.
        let rebooted = owner_text().replace(&boot_id(), "another-boot");
        assert_eq!(owner_gone(&rebooted).map(|g| g.0), Some(true));
        assert_eq!(owner_gone("something else"), None);
    }
}
