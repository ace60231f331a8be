//! The two ends of one pipe stream, as run inside the writer and reader processes, and
//! the stamp that lets the reader prove it got every chunk, in order, unchanged.
//!
//! The writer sends `total` bytes in chunks of `chunk` bytes. Every chunk starts with an
//! 8-byte stamp (its sequence number xor a constant) and the rest of each chunk is a
//! fixed pattern. The reader counts bytes, checks every stamp byte it receives and the
//! last byte of every read against the pattern, and requires end-of-file right after
//! `total` bytes: a lost, repeated, reordered, zeroed or extra chunk fails the case.

pub use crate::harness::pair::Work;
use crate::names::{Named, named_enum};
use crate::sys::calls::{self, SysResult};
use crate::sys::mapping::AnonPages;
use crate::sys::pipes;
use anyhow::{Result, bail};
use rustix::fd::OwnedFd;

const MAGIC: u64 = 0x696f_7072_6f62_6521; // "ioprobe!"
/// Bytes of a chunk's stamp.
pub const STAMP: usize = 8;

named_enum! {
    /// How data enters and leaves the pipe. Names are a contract (`--method`, JSON).
    pub enum Method as "pipe method" {
        /// write(2) into the pipe, read(2) out of it: two copies.
        WriteRead = "write-read",
        /// vmsplice(2) of the writer's pages into the pipe, splice(2) to /dev/null: no copy.
        VmspliceSplice = "vmsplice-splice",
    }
}

/// The stamp of chunk `seq`.
pub fn stamp(seq: u64) -> [u8; STAMP] {
    (seq ^ MAGIC).to_le_bytes()
}

/// The chunk number a stamp carries (its inverse).
pub fn seq_of(st: [u8; STAMP]) -> u64 {
    u64::from_le_bytes(st) ^ MAGIC
}

/// The pattern's period.
const PERIOD: usize = 251;

/// The pattern byte at offset `j` of a chunk (past the stamp).
pub fn pattern(j: u64) -> u8 {
    ((j % PERIOD as u64) as u8) ^ 0x5a
}

/// Fills `chunk` with the pattern: one period (251 bytes) by hand, then by doubling
/// copies (memcpy speed; a byte-at-a-time loop took a third of a second per 256 MiB, in
/// every pass of the largest chunks).
pub fn fill(chunk: &mut [u8]) {
    let period = chunk.len().min(PERIOD);
    for (j, b) in chunk[..period].iter_mut().enumerate() {
        *b = pattern(j as u64);
    }
    let mut done = period;
    while done < chunk.len() {
        // `done` stays a multiple of the period, so each copy continues it.
        let n = done.min(chunk.len() - done);
        chunk.copy_within(..n, done);
        done += n;
    }
}


/// The writer's buffers: enough chunk-sized slots that, with vmsplice, a slot is never
/// re-stamped while the pipe may still hold its pages (see [`ring_slots`]). They live in
/// their own mapping, never in the heap: after the last vmsplice the writer returns and
/// frees while the pipe may still reference its last pipe-full of pages, and a freed
/// heap block is rewritten at once by malloc (that was the "wrong stamp" false alarm).
pub struct Source {
    buf: AnonPages,
    chunk: usize,
    slots: usize,
}

/// Slots the writer rotates through. write(2) copies, so one slot suffices. vmsplice
/// leaves pages in the pipe: at most `capacity` bytes (and at most one chunk per pipe
/// slot) are in flight, so `capacity / chunk + 2` slots keep a slot's stamp out of the
/// pipe before it is rewritten; a chunk larger than the pipe plus a page has left its
/// first page (the stamp) behind by the time its last byte is queued.
pub fn ring_slots(method: Method, chunk: u64, capacity: u64, page: u64) -> usize {
    match method {
        Method::WriteRead => 1,
        Method::VmspliceSplice if chunk >= capacity + page => 1,
        Method::VmspliceSplice => (capacity.div_ceil(chunk) + 2) as usize,
    }
}

impl Source {
    /// Allocates and fills (touches) every slot: done before the clock starts.
    pub fn new(chunk: u64, slots: usize) -> SysResult<Source> {
        let chunk = chunk as usize;
        let mut buf = AnonPages::new(chunk * slots)?;
        fill(&mut buf.as_mut_slice()[..chunk]);
        let (first, rest) = buf.as_mut_slice().split_at_mut(chunk);
        for slot in rest.chunks_mut(chunk.max(1)) {
            slot.copy_from_slice(&first[..slot.len()]);
        }
        Ok(Source { buf, chunk, slots })
    }

    /// Sends `total` bytes. `corrupt` (a test hook) gives chunk 1 (or the only chunk) a
    /// wrong stamp.
    pub fn send(
        &mut self,
        method: Method,
        pipe_w: &OwnedFd,
        total: u64,
        corrupt: bool,
    ) -> Result<Work> {
        let chunks = total.div_ceil(self.chunk as u64);
        let bad = if corrupt {
            Some(chunks.min(2) - 1)
        } else {
            None
        };
        let mut work = Work::default();
        let mut seq = 0u64;
        while work.bytes < total {
            let n = (total - work.bytes).min(self.chunk as u64) as usize;
            let slot = (seq as usize % self.slots) * self.chunk;
            let data = &mut self.buf.as_mut_slice()[slot..slot + n];
            let mut st = stamp(seq);
            if bad == Some(seq) {
                st[0] ^= 0xff;
            }
            let k = n.min(STAMP);
            data[..k].copy_from_slice(&st[..k]);
            let mut done = 0;
            while done < n {
                let moved = match method {
                    Method::WriteRead => calls::write(pipe_w, &data[done..])?,
                    Method::VmspliceSplice => pipes::vmsplice(pipe_w, &data[done..])?,
                };
                work.calls += 1;
                if moved == 0 {
                    bail!("{}: the pipe accepted 0 bytes", method.name());
                }
                done += moved;
            }
            work.bytes += n as u64;
            seq += 1;
        }
        Ok(work)
    }
}

/// The reader's side: a buffer of `read_size` bytes (read mode) or /dev/null (splice).
pub struct Sink {
    buf: AnonPages,
    chunk: u64,
    devnull: Option<OwnedFd>,
}

impl Sink {
    /// `checked` = read(2) and check every stamp; otherwise splice(2) to /dev/null,
    /// which never sees the data, so only the byte count is checked. `capacity` is the
    /// pipe's: a read returns at most that much, so only that part of the buffer (with
    /// margin) is faulted in before the clock starts; the rest is never written.
    pub fn new(chunk: u64, read_size: u64, checked: bool, capacity: u64) -> SysResult<Sink> {
        let devnull = if checked {
            None
        } else {
            Some(calls::open(
                c"/dev/null",
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                0,
            )?)
        };
        Ok(Sink {
            // Page aligned, its used pages faulted in now, not while the clock runs.
            buf: {
                let len = if checked { read_size as usize } else { 0 };
                AnonPages::touched(len, capacity.saturating_mul(4) as usize)?
            },
            chunk,
            devnull,
        })
    }

    /// Receives exactly `total` bytes in pieces of at most `read_size`. End-of-file is
    /// checked separately by [`Sink::expect_eof`], after the clock stops.
    pub fn receive(&mut self, pipe_r: &OwnedFd, total: u64, read_size: u64) -> Result<Work> {
        let mut work = Work::default();
        while work.bytes < total {
            let want = (total - work.bytes).min(read_size) as usize;
            let n = match &self.devnull {
                None => calls::read(pipe_r, &mut self.buf.as_mut_slice()[..want])?,
                Some(null) => pipes::splice(pipe_r, None, null, None, want)?,
            };
            work.calls += 1;
            if n == 0 {
                bail!(
                    "short stream: end of file after {} of {} bytes",
                    work.bytes,
                    total
                );
            }
            if self.devnull.is_none() {
                check(&self.buf.as_slice()[..n], work.bytes, self.chunk)?;
            }
            work.bytes += n as u64;
        }
        Ok(work)
    }

    /// After `total` bytes the writer must have closed the pipe: anything more is an
    /// error.
    pub fn expect_eof(&mut self, pipe_r: &OwnedFd) -> Result<()> {
        let mut one = [0u8; 1];
        let n = calls::read(pipe_r, &mut one)?;
        if n != 0 {
            bail!("the stream carried more bytes than were sent");
        }
        Ok(())
    }
}

/// Checks the bytes of stream range `[off, off + got.len())`: every stamp byte in it,
/// and its last byte against the pattern when that byte is not a stamp byte.
pub fn check(got: &[u8], off: u64, chunk: u64) -> Result<()> {
    let end = off + got.len() as u64;
    let mut seq = off / chunk;
    loop {
        let start = seq * chunk;
        if start >= end {
            break;
        }
        let st = stamp(seq);
        let stamp_end = (start + (STAMP as u64).min(chunk)).min(end);
        for pos in start.max(off)..stamp_end {
            if got[(pos - off) as usize] != st[(pos - start) as usize] {
                bail!("stream corrupted: chunk {seq} (byte {start}) carries the wrong stamp");
            }
        }
        seq += 1;
    }
    if let Some(&last) = got.last() {
        let j = (end - 1) % chunk;
        if j >= STAMP as u64 && last != pattern(j) {
            bail!("stream corrupted at byte {}: pattern mismatch", end - 1);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(total: u64, chunk: u64) -> Vec<u8> {
        let mut v = Vec::new();
        let mut seq = 0;
        while (v.len() as u64) < total {
            let n = (total - v.len() as u64).min(chunk);
            let st = stamp(seq);
            for j in 0..n {
                v.push(if (j as usize) < STAMP {
                    st[j as usize]
                } else {
                    pattern(j)
                });
            }
            seq += 1;
        }
        v
    }

    #[test]
    fn a_whole_stream_checks_out_in_any_read_size() {
        for (total, chunk) in [(10_000u64, 1024u64), (4096, 3), (100, 100), (5, 8)] {
            let s = stream(total, chunk);
            for piece in [1usize, 7, 1000, 5000] {
                let mut off = 0;
                for part in s.chunks(piece) {
                    check(part, off, chunk).unwrap();
                    off += part.len() as u64;
                }
            }
        }
    }

    #[test]
    fn a_lost_or_changed_chunk_is_caught() {
        let s = stream(8192, 1024);
        // Chunk 2 missing: chunk 3's stamp arrives where chunk 2's should.
        let mut lost = s[..2048].to_vec();
        lost.extend_from_slice(&s[3072..]);
        assert!(check(&lost, 0, 1024).is_err());
        let mut flipped = s.clone();
        flipped[1024] ^= 1;
        assert!(check(&flipped, 0, 1024).is_err());
        let zeroed = vec![0u8; 100];
        assert!(check(&zeroed, 5000, 1024).is_err());
    }

    /// The false alarm of issue 9: the writer vmsplices its last pipe-full, returns,
    /// releases its buffer and formats its result line before the reader has read the
    /// pipe. A heap buffer goes back to malloc, whose bookkeeping and the next
    /// allocations write into pages the pipe still references, so the reader saw a
    /// "wrong stamp" (slot 0, where free() puts its list pointers). Here the reader
    /// reads only after the writer's buffer is gone and the heap reused.
    #[test]
    fn spliced_pages_survive_the_writer_releasing_its_buffer() {
        let page = crate::sys::calls::page_size() as u64;
        for chunk in [1024u64, 4096, 16384] {
            let (r, w) = pipes::pipe().unwrap();
            let capacity = pipes::capacity(&w).unwrap() as u64;
            // Exactly what fits: vmsplice returns without a reader.
            let total = capacity.min(16 * chunk);
            let slots = ring_slots(Method::VmspliceSplice, chunk, capacity, page);
            let mut src = Source::new(chunk, slots).unwrap();
            let work = src.send(Method::VmspliceSplice, &w, total, false).unwrap();
            assert_eq!(work.bytes, total);
            drop(src);
            // What the writer process does next: allocate and write.
            let scribble: Vec<Vec<u8>> = (0..32)
                .map(|i| vec![0xa5u8; (slots + 1) * chunk as usize + i * 64])
                .collect();
            std::hint::black_box(&scribble);
            drop(w);
            let mut sink = Sink::new(chunk, chunk, true, capacity).unwrap();
            sink.receive(&r, total, chunk)
                .unwrap_or_else(|e| panic!("chunk {chunk}: {e:#}"));
            sink.expect_eof(&r).unwrap();
        }
    }

    #[test]
    fn the_fill_by_doubling_is_the_pattern() {
        for n in [0usize, 1, 250, 251, 252, 502, 1000, 4096, 100_003] {
            let mut v = vec![0u8; n];
            fill(&mut v);
            assert!(
                v.iter().enumerate().all(|(j, &b)| b == pattern(j as u64)),
                "{n}"
            );
        }
        let src = Source::new(1000, 3).unwrap();
        let all = src.buf.as_slice();
        assert!(
            all.iter()
                .enumerate()
                .all(|(i, &b)| b == pattern((i % 1000) as u64))
        );
    }

    #[test]
    fn ring_keeps_spliced_pages_out_of_reach() {
        assert_eq!(ring_slots(Method::WriteRead, 1024, 65536, 4096), 1);
        assert_eq!(ring_slots(Method::VmspliceSplice, 1024, 65536, 4096), 66);
        assert_eq!(ring_slots(Method::VmspliceSplice, 65536, 65536, 4096), 3);
        assert_eq!(ring_slots(Method::VmspliceSplice, 1 << 20, 65536, 4096), 1);
    }
}
