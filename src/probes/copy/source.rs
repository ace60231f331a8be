//! The copy probe's source file, its fingerprint, and the page-cache state it is put in
//! before every sample.
//!
//! The source's content depends on position (every 4 KiB block starts with its own
//! offset), so a copy that writes a block to the wrong place, twice, or not at all
//! changes the fingerprint, unlike a file of one repeated chunk. `--sparse` leaves
//! every other MiB a hole.

use crate::names::named_enum;
use crate::sys::calls::{self, SysResult};
use crate::sys::copyfile;
use crate::sys::copyfile::Advice;
use crate::sys::mapping::file_residency;
use anyhow::{Context as _, Result};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use std::ffi::CString;
use std::path::{Path, PathBuf};

named_enum! {
    /// Page-cache state asked of the source. Names are a contract (`--cache`, JSON).
    pub enum Cache as "cache state" {
        Warm = "warm",
        Cold = "cold",
    }
}

/// The source file: path, size and fingerprint.
pub struct Source {
    pub path: PathBuf,
    pub c_path: CString,
    pub size: u64,
    pub hash: u64,
    fd: OwnedFd,
}

/// The byte at offset `off` of a source (before the per-block offset stamp).
fn pattern(off: u64) -> u8 {
    (off % 251) as u8 + 1
}

/// Fills `buf` with the source content for file range `[off, off + buf.len())`.
fn content(buf: &mut [u8], off: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        let pos = off + i as u64;
        let block = pos & !4095;
        let k = (pos - block) as usize;
        *b = if k < 8 {
            block.to_le_bytes()[k] ^ 0xa5
        } else {
            pattern(pos)
        };
    }
}

/// Fingerprint of a byte stream, fed in pieces (4 independent lanes over 8-byte words,
/// then mixed with the length). Fast enough to check a GiB in well under a second.
#[derive(Default)]
pub struct Hasher {
    lanes: [u64; 4],
    tail: Vec<u8>,
    len: u64,
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher {
    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if !self.tail.is_empty() {
            let need = 32 - self.tail.len();
            let take = need.min(data.len());
            self.tail.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.tail.len() == 32 {
                let t = std::mem::take(&mut self.tail);
                self.block(&t);
            }
        }
        let whole = data.len() / 32 * 32;
        for b in data[..whole].chunks_exact(32) {
            self.block(b);
        }
        self.tail.extend_from_slice(&data[whole..]);
    }

    fn block(&mut self, b: &[u8]) {
        for (lane, w) in self.lanes.iter_mut().zip(b.chunks_exact(8)) {
            let v = u64::from_le_bytes(w.try_into().unwrap_or_default());
            *lane = (*lane ^ v).wrapping_mul(K).rotate_left(29);
        }
    }

    pub fn finish(mut self) -> u64 {
        let tail = std::mem::take(&mut self.tail);
        let mut h = self.len.wrapping_mul(K);
        for (i, &b) in tail.iter().enumerate() {
            h = (h ^ (b as u64) << (i % 8 * 8))
                .wrapping_mul(K)
                .rotate_left(17);
        }
        for l in self.lanes {
            h = (h ^ l).wrapping_mul(K).rotate_left(31);
        }
        h
    }
}

/// Size and fingerprint of the file at `path` (read with pread in 1 MiB pieces).
pub fn fingerprint(path: &std::ffi::CStr) -> Result<(u64, u64)> {
    let fd = calls::open(path, OFlags::RDONLY | OFlags::CLOEXEC, 0)
        .with_context(|| format!("opening {} to verify it", path.to_string_lossy()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut h = Hasher::default();
    let mut off = 0u64;
    loop {
        let n = calls::pread(&fd, &mut buf, off)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        off += n as u64;
    }
    Ok((off, h.finish()))
}

impl Source {
    /// Writes back every dirty page of the source's filesystem and waits for it.
    pub fn drain(&self) -> Result<()> {
        Ok(copyfile::syncfs(&self.fd)?)
    }

    /// Creates the source `name` (O_EXCL, 0600) in `dir`, `size` bytes, holes in every
    /// other MiB when `sparse`, fsync'd. `stop` is polled between MiBs.
    pub fn create_named(
        dir: &Path,
        name: &str,
        size: u64,
        sparse: bool,
        stop: &dyn Fn() -> bool,
    ) -> Result<Source> {
        let path = dir.join(name);
        let c_path = calls::c_path(&path)?;
        let fd = calls::open(
            c_path.as_c_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            0o600,
        )
        .with_context(|| format!("creating {}", path.display()))?;
        copyfile::ftruncate(&fd, size)?;
        let mut h = Hasher::default();
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0u64;
        while off < size {
            if stop() {
                return Err(crate::error::Interrupted.into());
            }
            let n = (size - off).min(buf.len() as u64) as usize;
            let hole = sparse && (off >> 20).is_multiple_of(2) && off + (n as u64) < size;
            if hole {
                buf[..n].fill(0);
            } else {
                content(&mut buf[..n], off);
                calls::pwrite_all(&fd, &buf[..n], off)?;
            }
            h.update(&buf[..n]);
            off += n as u64;
        }
        copyfile::fsync(&fd)?;
        Ok(Source {
            path,
            c_path,
            size,
            hash: h.finish(),
            fd,
        })
    }

    /// (resident pages, total pages) of the source now.
    pub fn residency(&self) -> SysResult<(usize, usize)> {
        file_residency(&self.fd, self.size)
    }

    /// Puts the source in `cache` state and returns the residency then observed.
    /// Warm: read it whole if any page is missing. Cold: fdatasync, then
    /// POSIX_FADV_DONTNEED (and, with `drop_all`, /proc/sys/vm/drop_caches).
    pub fn prepare(&self, cache: Cache, drop_all: bool) -> Result<(usize, usize)> {
        match cache {
            Cache::Warm => return crate::probes::ensure_resident(&self.fd, self.size),
            Cache::Cold => {
                crate::sys::os::fdatasync(&self.fd)?;
                copyfile::fadvise(&self.fd, Advice::DontNeed)?;
                if drop_all {
                    copyfile::drop_page_cache()?;
                }
            }
        }
        Ok(self.residency()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_independent_of_how_data_is_split() {
        let mut data = vec![0u8; 100_003];
        content(&mut data, 0);
        let whole = {
            let mut h = Hasher::default();
            h.update(&data);
            h.finish()
        };
        for piece in [1, 7, 32, 4096, 65_537] {
            let mut h = Hasher::default();
            for c in data.chunks(piece) {
                h.update(c);
            }
            assert_eq!(h.finish(), whole, "piece {piece}");
        }
        let mut changed = data.clone();
        changed[99_999] ^= 1;
        let mut h = Hasher::default();
        h.update(&changed);
        assert_ne!(h.finish(), whole);
        let mut h = Hasher::default();
        h.update(&data[..100_002]);
        assert_ne!(h.finish(), whole, "length matters");
    }

    #[test]
    fn blocks_differ_by_position() {
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        content(&mut a, 0);
        content(&mut b, 1 << 20);
        assert_ne!(a, b);
    }
}
