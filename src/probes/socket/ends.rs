//! The two ends of one socket stream, as run inside the writer and reader processes.
//!
//! The bytes are the pipe probe's stamped stream (see [`stream`]): every chunk starts
//! with its sequence number's stamp, the rest is a fixed pattern. The reader checks
//! every stamp byte and the last byte of every read, or every byte on a verification
//! pass. A file method sends a file stamped every page ([`FILE_GRID`]), whatever the
//! chunk, and wraps around it, so its stamps count modulo the file's pages. A datagram carries exactly
//! one chunk: the reader checks its length and stamp, and on UDP (which drops what the
//! receiver has no room for) counts the chunks it never got.

use super::{Family, Method};
use crate::harness::pair::Work;
use crate::names::Named;
use crate::probes::pipe::stream::{STAMP, check, fill, pattern, seq_of, stamp};
use crate::sys::calls::{self, monotonic_ns};
use crate::sys::mapping::AnonPages;
use crate::sys::{pipes, sockets};
use anyhow::{Result, bail};
use rustix::fd::OwnedFd;
use std::collections::BTreeMap;

/// What both ends need to know of the stream.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub family: Family,
    pub method: Method,
    pub chunk: u64,
    pub total: u64,
    /// Bytes of the file a file method sends (a whole number of [`FILE_GRID`]s): the
    /// stream wraps around it.
    pub wrap: Option<u64>,
}

/// The stamp grid of a file method's stream: one stamp per 4 KiB of the file.
pub const FILE_GRID: u64 = 4096;

impl Shape {
    fn datagram(&self) -> bool {
        self.family.datagram()
    }

    /// Bytes between two stamps: a chunk, or a file's grid.
    fn grid(&self) -> u64 {
        if self.method.from_file() {
            FILE_GRID
        } else {
            self.chunk
        }
    }
}

/// The file a file method sends: `chunks` stamped pieces of `chunk` bytes (the grid);
/// `corrupt` gives piece 1 (or the only one) a wrong stamp.
pub fn file_bytes(chunk: u64, chunks: u64, corrupt: bool) -> Vec<u8> {
    let mut v = vec![0u8; (chunk * chunks) as usize];
    for (seq, c) in v.chunks_mut(chunk as usize).enumerate() {
        fill(c);
        let mut st = stamp(seq as u64);
        if corrupt && seq as u64 == chunks.min(2) - 1 {
            st[0] ^= 0xff;
        }
        let k = c.len().min(STAMP);
        c[..k].copy_from_slice(&st[..k]);
    }
    v
}

/// Zerocopy bookkeeping: which send calls the kernel has released (completions come
/// as ranges of call ids, possibly out of order).
#[derive(Default)]
struct Completions {
    /// Every id below this is complete.
    floor: u32,
    /// Completed ranges above the floor, by first id.
    above: BTreeMap<u32, u32>,
    /// Ids completed with the data copied after all (loopback does this).
    copied: u64,
}

impl Completions {
    fn add(&mut self, lo: u32, hi: u32, copied: bool) {
        if copied {
            self.copied += u64::from(hi.wrapping_sub(lo)) + 1;
        }
        self.above.insert(lo, hi);
        while let Some((&lo, &hi)) = self.above.first_key_value() {
            if lo > self.floor {
                break;
            }
            self.above.pop_first();
            self.floor = self.floor.max(hi.wrapping_add(1));
        }
    }

    /// Blocks until every call id below `id + 1` is complete.
    fn wait(&mut self, sock: &OwnedFd, id: u32) -> Result<()> {
        let deadline = monotonic_ns() + 10_000_000_000;
        while self.floor <= id {
            for (lo, hi, copied) in sockets::zerocopy_completions(sock)? {
                self.add(lo, hi, copied);
            }
            if self.floor > id {
                break;
            }
            if monotonic_ns() > deadline {
                bail!("no zerocopy completion for send call {id} within 10 s");
            }
            // The error queue makes the socket report POLLERR.
            let mut fds = [rustix::event::PollFd::new(
                sock,
                rustix::event::PollFlags::ERR,
            )];
            let t = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            match rustix::event::poll(&mut fds, Some(&t)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(calls::SysError::new("poll", e).into()),
            }
        }
        Ok(())
    }
}

/// The writer: its buffer slots (memory methods) or its file (file methods).
pub struct Writer {
    shape: Shape,
    buf: AnonPages,
    slots: usize,
    file: Option<OwnedFd>,
    /// splice's pipe (read end, write end, capacity).
    pipe: Option<(OwnedFd, OwnedFd, u64)>,
    corrupt: bool,
}

/// Slots the writer rotates through: one for the copying calls; for zerocopy, enough
/// that a slot is seldom waited for (the kernel holds its pages until the completion),
/// within 32 MiB.
fn slots(method: Method, chunk: u64) -> usize {
    match method {
        Method::Zerocopy => ((32u64 << 20) / chunk).clamp(2, 64) as usize,
        _ => 1,
    }
}

impl Writer {
    /// Allocates and fills (touches) the slots, makes splice's pipe: done before the
    /// clock starts. `file` is the stream's file for a file method.
    pub fn new(shape: Shape, file: Option<OwnedFd>, corrupt: bool) -> Result<Writer> {
        let chunk = shape.chunk as usize;
        let slots = if shape.method.from_file() {
            0
        } else {
            slots(shape.method, shape.chunk)
        };
        let mut buf = AnonPages::new(chunk * slots)?;
        for s in buf.as_mut_slice().chunks_mut(chunk.max(1)) {
            fill(s);
        }
        let pipe = if shape.method == Method::Splice {
            let (r, w) = pipes::pipe()?;
            // A pipe as large as the chunk (within pipe-max-size) takes a chunk per
            // splice pair; the default where it cannot grow.
            let cap = match pipes::set_capacity(&w, shape.chunk.min(1 << 20) as usize) {
                Ok(c) => c as u64,
                Err(_) => pipes::capacity(&w).map_or(64 << 10, |c| c as u64),
            };
            Some((r, w, cap))
        } else {
            None
        };
        Ok(Writer {
            shape,
            buf,
            slots,
            file,
            pipe,
            corrupt,
        })
    }

    /// Bytes of memory its buffers hold.
    pub fn held(&self) -> u64 {
        self.buf.as_slice().len() as u64
    }

    /// The bytes the next [`Writer::send`] sends.
    pub fn set_total(&mut self, total: u64) {
        self.shape.total = total;
    }

    /// Sends the stream's bytes `from..from + total` (a warmed connection carries one
    /// stream across many transfers; a fresh one starts at 0). A chunk is a write, and
    /// a transfer ending inside a chunk leaves its rest to the next. For zerocopy,
    /// `first_id` is the socket's next send id (the kernel counts them per socket), and
    /// this returns only once the kernel has released every page (a sender must know
    /// that before it reuses a buffer), with the count it copied after all in
    /// `extra[0]`.
    pub fn send(&mut self, sock: &OwnedFd, from: u64, first_id: u32) -> Result<Work> {
        if self.shape.method.from_file() {
            return self.send_file(sock, from);
        }
        let sh = self.shape;
        let chunk = sh.chunk as usize;
        let end = from + sh.total;
        let bad = self
            .corrupt
            .then(|| from / sh.chunk + sh.total.div_ceil(sh.chunk).min(2) - 1);
        let zc = sh.method == Method::Zerocopy;
        let mut done_ids = Completions {
            floor: first_id,
            ..Completions::default()
        };
        let mut slot_id: Vec<Option<u32>> = vec![None; self.slots];
        let mut next_id = first_id;
        let mut work = Work::default();
        let mut at = from;
        while at < end {
            let (seq, within) = (at / sh.chunk, (at % sh.chunk) as usize);
            let n = (end - at).min(sh.chunk - within as u64) as usize;
            let slot = seq as usize % self.slots;
            if let (true, Some(id)) = (zc, slot_id[slot]) {
                done_ids.wait(sock, id)?;
            }
            let data = &mut self.buf.as_mut_slice()[slot * chunk..(slot + 1) * chunk];
            let mut st = stamp(seq);
            if bad == Some(seq) {
                st[0] ^= 0xff;
            }
            let k = chunk.min(STAMP);
            data[..k].copy_from_slice(&st[..k]);
            let data = &data[within..within + n];
            let mut done = 0;
            while done < n {
                let part = &data[done..];
                let moved = match sh.method {
                    Method::WriteRead => calls::write(sock, part)?,
                    Method::SendRecv => sockets::send(sock, part)?,
                    Method::SendmsgRecvmsg => sockets::sendmsg4(sock, part)?,
                    Method::Zerocopy => sockets::send_zerocopy(sock, part)?,
                    Method::Sendfile | Method::Splice => unreachable!("file methods"),
                };
                work.calls += 1;
                if zc {
                    slot_id[slot] = Some(next_id);
                    next_id = next_id.wrapping_add(1);
                }
                if moved == 0 {
                    bail!("{}: the socket accepted 0 bytes", sh.method.name());
                }
                if sh.datagram() && moved != n {
                    bail!("a datagram of {n} bytes went out as {moved}");
                }
                done += moved;
            }
            work.bytes += n as u64;
            at += n as u64;
        }
        if zc && next_id != first_id {
            done_ids.wait(sock, next_id.wrapping_sub(1))?;
            work.extra[0] = done_ids.copied;
        }
        Ok(work)
    }

    /// sendfile(2) or splice(2) through a pipe, from the file, in chunk-sized calls.
    fn send_file(&mut self, sock: &OwnedFd, from: u64) -> Result<Work> {
        let sh = self.shape;
        let Some(file) = &self.file else {
            bail!("a file method without its file");
        };
        let wrap = sh.wrap.unwrap_or(sh.total).max(1);
        let mut work = Work::default();
        while work.bytes < sh.total {
            let n = (sh.total - work.bytes).min(sh.chunk);
            let mut done = 0;
            while done < n {
                let at = (from + work.bytes + done) % wrap;
                let len = (n - done).min(wrap - at);
                let moved = match &self.pipe {
                    None => {
                        let mut off = at;
                        work.calls += 1;
                        crate::sys::os::sendfile(sock, file, &mut off, len as usize)? as u64
                    }
                    Some((pr, pw, cap)) => {
                        let mut off = at;
                        let got = pipes::splice(file, Some(&mut off), pw, None, len.min(*cap) as usize)?;
                        work.calls += 1;
                        let mut out = 0;
                        while out < got {
                            let k = pipes::splice(pr, None, sock, None, got - out)?;
                            work.calls += 1;
                            if k == 0 {
                                bail!("splice: the socket took 0 bytes");
                            }
                            out += k;
                        }
                        got as u64
                    }
                };
                if moved == 0 {
                    bail!("{}: 0 bytes moved from the file", sh.method.name());
                }
                done += moved;
            }
            work.bytes += n;
        }
        Ok(work)
    }
}

/// Checks received bytes at stream offset `off`: the stamps and last byte, or every
/// byte when `full`; a file method's stream wraps at its file's length.
fn verify(got: &[u8], off: u64, sh: &Shape, full: bool) -> Result<()> {
    let wrap = sh.wrap.unwrap_or(u64::MAX);
    let mut done = 0usize;
    while done < got.len() {
        let at = (off + done as u64) % wrap;
        let n = ((wrap - at) as usize).min(got.len() - done);
        let part = &got[done..done + n];
        let grid = sh.grid();
        check(part, at, grid)?;
        if full {
            for (i, &b) in part.iter().enumerate() {
                let pos = at + i as u64;
                let j = pos % grid;
                let want = if j < STAMP as u64 {
                    stamp(pos / grid)[j as usize]
                } else {
                    pattern(j)
                };
                if b != want {
                    bail!("stream corrupted at byte {}", off + (done + i) as u64);
                }
            }
        }
        done += n;
    }
    Ok(())
}

/// The reader: one chunk's buffer (and one byte more, to see an oversized datagram).
pub struct Reader {
    shape: Shape,
    buf: AnonPages,
    full: bool,
}

impl Reader {
    /// `full`: check every byte (the untimed verification pass).
    pub fn new(shape: Shape, full: bool) -> Result<Reader> {
        let len = shape.chunk as usize + 1;
        Ok(Reader {
            shape,
            buf: AnonPages::touched(len, len)?,
            full,
        })
    }

    /// The bytes the next [`Reader::receive_stream`] receives.
    pub fn set_total(&mut self, total: u64) {
        self.shape.total = total;
    }

    fn recv(&mut self, sock: &OwnedFd, want: usize) -> Result<usize> {
        let b = &mut self.buf.as_mut_slice()[..want];
        Ok(match self.shape.method {
            Method::SendRecv | Method::Zerocopy => sockets::recv(sock, b)?,
            Method::SendmsgRecvmsg => sockets::recvmsg4(sock, b)?,
            Method::WriteRead | Method::Sendfile | Method::Splice => calls::read(sock, b)?,
        })
    }

    /// Receives the stream's bytes `from..from + total` (see [`Writer::send`]); then,
    /// when `eof` (the writer's socket is closed once it is done), requires end of file.
    pub fn receive_stream(&mut self, sock: &OwnedFd, from: u64, eof: bool) -> Result<Work> {
        let sh = self.shape;
        let mut work = Work::default();
        while work.bytes < sh.total {
            let want = (sh.total - work.bytes).min(sh.chunk) as usize;
            let n = self.recv(sock, want)?;
            work.calls += 1;
            if n == 0 {
                bail!(
                    "short stream: end of file after {} of {} bytes",
                    work.bytes,
                    sh.total
                );
            }
            verify(&self.buf.as_slice()[..n], from + work.bytes, &sh, self.full)?;
            work.bytes += n as u64;
        }
        let mut one = [0u8; 1];
        if eof && calls::read(sock, &mut one)? != 0 {
            bail!("the stream carried more bytes than were sent");
        }
        Ok(work)
    }

    /// Receives datagrams until the stream's last one, or (`lossy`: UDP) until the
    /// writer says it is done (`done` readable) and nothing more is queued. Every
    /// datagram is one whole chunk, in order; on UDP, missing ones are lost, counted in
    /// `extra[0]`. The report ends at the last datagram.
    pub fn receive_datagrams(&mut self, sock: &OwnedFd, done: Option<&OwnedFd>) -> Result<Work> {
        let sh = self.shape;
        let chunks = sh.total.div_ceil(sh.chunk);
        let mut work = Work::default();
        let mut next = 0u64;
        loop {
            if next >= chunks {
                break;
            }
            let cap = sh.chunk as usize + 1;
            let n = match done {
                None => Some(self.recv(sock, cap)?),
                Some(d) => self.recv_or_done(sock, d, cap)?,
            };
            let Some(n) = n else { break };
            work.calls += 1;
            if n < STAMP {
                bail!("a datagram of {n} bytes, shorter than a stamp");
            }
            let got = &self.buf.as_slice()[..n];
            let seq = seq_of(got[..STAMP].try_into().unwrap_or_default());
            if seq < next || seq >= chunks || (done.is_none() && seq != next) {
                bail!("stream corrupted: datagram {next} carries the stamp of {seq}");
            }
            let want = (sh.total - seq * sh.chunk).min(sh.chunk) as usize;
            if n != want {
                bail!("datagram {seq} has {n} bytes, expected {want}");
            }
            verify(got, seq * sh.chunk, &sh, self.full)?;
            work.bytes += n as u64;
            work.extra[0] += seq - next;
            work.last_ns = monotonic_ns();
            next = seq + 1;
        }
        work.extra[0] += chunks - next;
        Ok(work)
    }

    /// One datagram, or None once the writer is done and nothing is queued.
    fn recv_or_done(&mut self, sock: &OwnedFd, done: &OwnedFd, cap: usize) -> Result<Option<usize>> {
        loop {
            match sockets::recv_nowait(sock, &mut self.buf.as_mut_slice()[..cap])? {
                Some(n) => return Ok(Some(n)),
                None => {
                    // Nothing queued: wait for a datagram or the writer's end.
                    let mut fds = [
                        rustix::event::PollFd::new(sock, rustix::event::PollFlags::IN),
                        rustix::event::PollFd::new(done, rustix::event::PollFlags::IN),
                    ];
                    match rustix::event::poll(&mut fds, None) {
                        Ok(_) | Err(rustix::io::Errno::INTR) => {}
                        Err(e) => return Err(calls::SysError::new("poll", e).into()),
                    }
                    if fds[0].revents().is_empty() && !fds[1].revents().is_empty() {
                        // Done, and loopback delivery is over when send returns: one
                        // last look.
                        return Ok(sockets::recv_nowait(sock, &mut self.buf.as_mut_slice()[..cap])?);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_settle_in_any_order() {
        let mut c = Completions::default();
        c.add(2, 3, false);
        assert_eq!(c.floor, 0);
        c.add(0, 1, true);
        assert_eq!((c.floor, c.copied), (4, 2));
        c.add(4, 4, false);
        assert_eq!(c.floor, 5);
    }

    #[test]
    fn a_wrapped_file_stream_checks_out_and_a_corrupt_one_does_not() {
        let g = FILE_GRID;
        let sh = Shape {
            family: Family::Unix,
            method: Method::Sendfile,
            chunk: 1000,
            total: 10 * g,
            wrap: Some(3 * g),
        };
        let file = file_bytes(g, 3, false);
        let mut off = 0u64;
        while off < sh.total {
            let at = (off % (3 * g)) as usize;
            let n = 700.min(3 * g as usize - at);
            verify(&file[at..at + n], off, &sh, true).unwrap();
            off += n as u64;
        }
        let bad = file_bytes(g, 3, true);
        assert!(verify(&bad[g as usize..2 * g as usize], g, &sh, false).is_err());
    }
}
