//! ioprobe's scratch directory: the only place it creates, truncates or deletes files.
//!
//! A `Scratch` is a fresh directory `.ioprobe-XXXXXX` (mode 0700) inside the user's
//! `--dir`; it and everything in it are removed when the value is dropped, which happens
//! on success, on error and after an interrupt (the harness stops between samples).

use super::calls::{self, SysError};
use crate::error::UsageError;
use anyhow::{Context, Result};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use std::path::{Path, PathBuf};

/// A scratch directory removed on drop.
pub struct Scratch {
    dir: tempfile::TempDir,
    parent: PathBuf,
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
        calls::fdatasync(&fd).map_err(|e| space_hint(e, self))?;
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

/// An io::Error without the "(os error N)" suffix, for one-line messages.
fn plain(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
