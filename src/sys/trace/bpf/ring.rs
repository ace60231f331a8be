//! The ring buffer, read from user space.

use super::super::ptrace::os;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

pub(super) struct Ring {
    pub(super) consumer: *mut u8,
    pub(super) producer: *const u8,
    pub(super) page: usize,
    /// The ring map (polled for wake-ups).
    pub(super) fd: OwnedFd,
    /// The data area's size (a power of two).
    pub(super) size: u32,
}

impl Ring {
    pub(super) fn map(fd: OwnedFd, size: u32) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mmap = |len: usize, prot: i32, off: usize| {
            // SAFETY: maps the ring's pages as the kernel lays them out (a consumer
            // page, a producer page, the data twice); unmapped in Drop.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    off as libc::off_t,
                )
            };
            if p == libc::MAP_FAILED {
                Err(io::Error::last_os_error()).map_err(os("mmap of the BPF ring buffer"))
            } else {
                Ok(p as *mut u8)
            }
        };
        let consumer = mmap(page, libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let producer = mmap(page + 2 * size as usize, libc::PROT_READ, page).inspect_err(|_| {
            // SAFETY: the consumer page just mapped, not used anywhere.
            unsafe { libc::munmap(consumer as *mut libc::c_void, page) };
        })?;
        Ok(Ring {
            consumer,
            producer,
            page,
            fd,
            size,
        })
    }

    /// Every record committed since the last call, in the order they were reserved.
    pub(super) fn drain(&self, mut each: impl FnMut(&[u8])) {
        use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
        // SAFETY: the positions are 8-byte aligned words at the start of the consumer
        // and producer pages, written by the kernel (producer) and by us (consumer).
        let (cons, prod) = unsafe {
            (
                &*(self.consumer as *const AtomicU64),
                &*(self.producer as *const AtomicU64),
            )
        };
        let mut at = cons.load(Ordering::Acquire);
        let end = prod.load(Ordering::Acquire);
        let mask = self.size as u64 - 1;
        while at < end {
            // SAFETY: the data area starts one page into the producer mapping and is
            // mapped twice in a row, so a record that wraps is contiguous; a record's
            // 8-byte header is at `at`.
            let data = unsafe { self.producer.add(self.page) };
            let hdr = unsafe { &*(data.add((at & mask) as usize) as *const AtomicU32) };
            let len = hdr.load(Ordering::Acquire);
            if len & (1 << 31) != 0 {
                break; // reserved, not committed yet
            }
            let size = (len & !(3 << 30)) as usize;
            if len & (1 << 30) == 0 {
                // SAFETY: the committed record's `size` bytes follow its header.
                let rec =
                    unsafe { std::slice::from_raw_parts(data.add((at & mask) as usize + 8), size) };
                each(rec);
            }
            at += (size as u64 + 8 + 7) & !7;
            cons.store(at, Ordering::Release);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the two mappings made in Ring::map, with their lengths.
        unsafe {
            libc::munmap(self.consumer as *mut libc::c_void, self.page);
            libc::munmap(
                self.producer as *mut libc::c_void,
                self.page + 2 * self.size as usize,
            );
        }
    }
}
