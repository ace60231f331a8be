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

    /// Start of the mapping.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length of the mapping in bytes.
    pub fn byte_len(&self) -> usize {
        self.len
    }

    /// Runs `iters` iterations, each storing the first `n` bytes of the mapping with
    /// aligned volatile 8-byte stores (byte stores for a tail); the stored words depend
    /// on the iteration, so the compiler can neither drop, merge nor hoist them.
    /// `n` is clamped to the mapping.
    #[inline]
    pub fn store_loop(&mut self, n: usize, iters: u64) {
        let n = n.min(self.len);
        let words = n / 8;
        let base = self.ptr.as_ptr();
        for i in 0..iters {
            for w in 0..words {
                // SAFETY: w*8+8 <= n <= len: inside our live mapping; base is page
                // aligned (mmap), so base+w*8 is 8-byte aligned for the u64 store.
                unsafe {
                    std::ptr::write_volatile(
                        base.add(w * 8).cast::<u64>(),
                        i.wrapping_add(w as u64),
                    )
                };
            }
            for b in words * 8..n {
                // SAFETY: b < n <= len: inside our live mapping.
                unsafe { std::ptr::write_volatile(base.add(b), i as u8) };
            }
        }
    }

    /// Runs `iters` iterations, each loading the first `n` bytes with aligned volatile
    /// 8-byte loads (byte loads for a tail); returns their xor-fold, which the caller
    /// must consume (black_box). `n` is clamped to the mapping.
    #[inline]
    pub fn load_loop(&self, n: usize, iters: u64) -> u64 {
        let n = n.min(self.len);
        let words = n / 8;
        let base = self.ptr.as_ptr();
        let mut acc = 0u64;
        for _ in 0..iters {
            for w in 0..words {
                // SAFETY: w*8+8 <= n <= len: inside our live mapping, 8-byte aligned.
                acc ^= unsafe { std::ptr::read_volatile(base.add(w * 8).cast::<u64>()) };
            }
            for b in words * 8..n {
                // SAFETY: b < n <= len: inside our live mapping.
                acc ^= u64::from(unsafe { std::ptr::read_volatile(base.add(b)) });
            }
        }
        acc
    }

    /// Reads back the first `n` bytes (non-volatile), for tests and verification.
    pub fn to_vec(&self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n.min(self.len)];
        self.copy_out(0, &mut v);
        v
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

/// Private anonymous memory from its own mmap(2), unmapped on drop and never handed
/// back to the allocator. Buffers lent to the kernel by reference (vmsplice(2) without
/// SPLICE_F_GIFT) must be this: after munmap the pages a pipe still references keep
/// their bytes until the reader consumes them, whereas a heap buffer, once freed, is
/// rewritten by malloc's bookkeeping and the next allocations while the pipe still
/// holds its pages.
pub struct AnonPages {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AnonPages owns its mapping exclusively (like a Box<[u8]>); moving it to
// another thread moves that ownership.
unsafe impl Send for AnonPages {}

impl AnonPages {
    /// `len` bytes (at least one page is mapped), zero-filled by the kernel, page
    /// aligned, every page faulted in now.
    pub fn new(len: usize) -> SysResult<AnonPages> {
        AnonPages::touched(len, len)
    }

    /// `len` bytes of which only the first `touched` are faulted in now; the rest fault
    /// in when first used (for a buffer most of which is never written, such as a pipe
    /// reader's: one read returns at most the pipe's capacity).
    pub fn touched(len: usize, touched: usize) -> SysResult<AnonPages> {
        let map_len = len.max(1);
        // SAFETY: a fresh private anonymous mapping at an address the kernel chooses
        // (null hint): no existing memory is replaced; the result is checked.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                map_len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .map_err(|e| SysError::new("mmap", e))?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(SysError {
            call: "mmap",
            errno: libc::EFAULT,
        })?;
        let mut pages = AnonPages { ptr, len };
        let n = touched.min(len);
        pages.as_mut_slice()[..n].fill(0);
        Ok(pages)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is a live mapping of at least len readable bytes, owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live mapping of at least len writable bytes; &mut self makes
        // this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AnonPages {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping mmap returned (length rounded as in new), unmapped
        // once; no slice into it outlives self. Pages a pipe references stay alive in
        // the kernel with their contents.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len.max(1)) };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_loops_really_store_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.path().join("m"))
            .unwrap();
        f.set_len(4096).unwrap();
        let mut m = Mapping::map_file(&f, 13, true).unwrap();
        m.store_loop(13, 3); // last iteration i = 2
        let v = m.to_vec(13);
        assert_eq!(&v[..8], &2u64.to_ne_bytes());
        assert_eq!(&v[8..], &[2u8; 5]);
        // The file itself sees the stores (shared mapping).
        drop(m);
        let on_disk = std::fs::read(dir.path().join("m")).unwrap();
        assert_eq!(&on_disk[..8], &2u64.to_ne_bytes());
        let m = Mapping::map_file(&f, 13, false).unwrap();
        // One iteration: xor of the word and five tail bytes of 2 (odd count → 2).
        assert_eq!(m.load_loop(13, 1), 2 ^ 2);
        // Two iterations cancel out.
        assert_eq!(m.load_loop(13, 2), 0);
        let (res, pages) = m.resident_pages().unwrap();
        assert_eq!((res, pages), (1, 1));
    }
}
