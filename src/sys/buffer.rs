//! Page-aligned byte buffers without `unsafe`: a Vec over-allocated by one page and
//! viewed from its first page-aligned byte. Where a buffer lands relative to a page
//! changes how fast the kernel copies into it, so every run uses the same placement.

/// A zero-initialised, then pattern-filled, page-aligned buffer.
pub struct AlignedBuf {
    storage: Vec<u8>,
    offset: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` bytes aligned to the page size, every byte written (so its pages exist
    /// before any timing starts).
    pub fn new(len: usize) -> AlignedBuf {
        let page = super::calls::page_size();
        let mut storage = vec![0u8; len + page];
        let addr = storage.as_ptr() as usize;
        let offset = (page - addr % page) % page;
        storage[offset..offset + len].fill(1);
        AlignedBuf {
            storage,
            offset,
            len,
        }
    }

    /// The aligned bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.offset..self.offset + self.len]
    }

    /// The aligned bytes, read-only.
    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.offset..self.offset + self.len]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligned_and_sized() {
        for len in [1usize, 4095, 4096, 65536, 100_000] {
            let mut b = super::AlignedBuf::new(len);
            assert_eq!(b.as_mut_slice().len(), len);
            assert_eq!(
                b.as_slice().as_ptr() as usize % crate::sys::calls::page_size(),
                0
            );
            assert!(b.as_slice().iter().all(|&x| x == 1));
        }
    }
}
