//! Memory mappings of files: volatile stores and loads for the mmap cases, copies out
//! of a mapping for the read probe, and page-cache residency through mincore(2).

use super::calls::{SysError, SysResult};
use rustix::fd::AsFd;
use rustix::mm::{MapFlags, ProtFlags};
use std::ffi::c_void;
use std::ptr::NonNull;

/// A shared mapping of a file, unmapped on drop.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `fd` from offset 0 with MAP_SHARED, read-only or read-write.
    pub fn map_file<Fd: AsFd>(fd: Fd, len: usize, writable: bool) -> SysResult<Mapping> {
        if len == 0 {
            return Err(SysError {
                call: "mmap",
                errno: libc::EINVAL,
            });
        }
        let prot = if writable {
            ProtFlags::READ | ProtFlags::WRITE
        } else {
            ProtFlags::READ
        };
        // SAFETY: we ask the kernel for a fresh mapping at an address of its choosing
        // (null hint), so no existing memory is replaced; the result is checked.
        let p =
            unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, fd, 0) }
                .map_err(|e| SysError::new("mmap", e))?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(SysError {
            call: "mmap",
            errno: libc::EFAULT,
        })?;
        Ok(Mapping { ptr, len })
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty mapping (never constructed; kept for API symmetry).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores `n` bytes at `offset` with volatile 8-byte stores (and byte stores for the
    /// tail), each word derived from `seed`, so the compiler can neither drop nor merge them.
    /// Panics never: the range is clamped to the mapping.
    #[inline]
    pub fn store_volatile(&mut self, offset: usize, n: usize, seed: u64) {
        let end = offset.saturating_add(n).min(self.len);
        let mut i = offset.min(end);
        let mut w = seed;
        while i + 8 <= end {
            // SAFETY: i+8 <= end <= len, inside our live mapping; unaligned store is
            // allowed through write_unaligned semantics below.
            unsafe {
                std::ptr::write_volatile(
                    self.ptr.as_ptr().add(i).cast::<[u8; 8]>(),
                    w.to_ne_bytes(),
                )
            };
            w = w.wrapping_add(0x9E37_79B9_7F4A_7C15);
            i += 8;
        }
        while i < end {
            // SAFETY: i < end <= len, inside our live mapping.
            unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(i), w as u8) };
            i += 1;
        }
    }

    /// Loads `n` bytes at `offset` with volatile loads and returns their xor-fold, which
    /// the caller must consume (black_box) so the loads count as used.
    #[inline]
    pub fn load_volatile(&self, offset: usize, n: usize) -> u64 {
        let end = offset.saturating_add(n).min(self.len);
        let mut i = offset.min(end);
        let mut acc = 0u64;
        while i + 8 <= end {
            // SAFETY: i+8 <= end <= len, inside our live mapping; [u8; 8] has alignment 1.
            let b = unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(i).cast::<[u8; 8]>()) };
            acc ^= u64::from_ne_bytes(b);
            i += 8;
        }
        while i < end {
            // SAFETY: i < end <= len, inside our live mapping.
            acc ^= u64::from(unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(i)) });
            i += 1;
        }
        acc
    }

    /// Copies `dst.len()` bytes starting at `offset` out of the mapping (memcpy).
    /// Returns the number of bytes copied (less at the end of the mapping).
    #[inline]
    pub fn copy_out(&self, offset: usize, dst: &mut [u8]) -> usize {
        if offset >= self.len {
            return 0;
        }
        let n = dst.len().min(self.len - offset);
        // SAFETY: source range [offset, offset+n) lies inside the live mapping, the
        // destination is a distinct Rust buffer of at least n bytes; they cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(offset), dst.as_mut_ptr(), n)
        };
        n
    }

    /// Counts pages of the mapping that are resident in memory (mincore(2)).
    /// For a shared file mapping this is the file's page-cache residency.
    pub fn resident_pages(&self) -> SysResult<(usize, usize)> {
        let page = super::calls::page_size();
        let pages = self.len.div_ceil(page);
        let mut vec = vec![0u8; pages];
        // SAFETY: ptr/len describe our live mapping (page aligned, as mmap returns);
        // vec has one byte per page as mincore requires.
        let r = unsafe {
            libc::mincore(
                self.ptr.as_ptr().cast::<c_void>(),
                self.len,
                vec.as_mut_ptr().cast(),
            )
        };
        if r != 0 {
            return Err(SysError {
                call: "mincore",
                errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            });
        }
        Ok((vec.iter().filter(|b| *b & 1 == 1).count(), pages))
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned and the mapping is unmapped
        // only here, once; no reference into it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Page-cache residency of a whole file: (resident pages, total pages), via a temporary
/// read-only mapping and mincore(2). An empty file reports (0, 0).
pub fn file_residency<Fd: AsFd>(fd: Fd, len: u64) -> SysResult<(usize, usize)> {
    if len == 0 {
        return Ok((0, 0));
    }
    let len = usize::try_from(len).map_err(|_| SysError {
        call: "mmap",
        errno: libc::EOVERFLOW,
    })?;
    Mapping::map_file(fd, len, false)?.resident_pages()
}
