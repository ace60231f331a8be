//! The rings, read from user space: the kernel's ring buffer of task records, the
//! CPUs' rings of call records, and the two read as one stream in ticket order.

use super::super::ptrace::os;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Each CPU's ring of call records, mapped from the `rings` array. Element `cpu`: a
/// page holding the head (at 0, written by `sys_exit` on that CPU) and the tail (at 64,
/// by ioprobe); the data (`size` bytes from the next page); one more page, which a
/// record starting near the data's end runs on into, so that every record lies
/// contiguous at its head modulo `size`. A record: its length (u32) and four bytes,
/// its ticket (u64), then its bytes, 8-aligned.
pub(super) struct CpuRings {
    base: *mut u8,
    cpus: usize,
    size: u64,
    _fd: OwnedFd,
}

/// Where a CPU's ring keeps its head and tail, its data, and a record's bytes.
pub(super) const HEAD: i16 = 0;
pub(super) const TAIL: i16 = 64;
pub(super) const DATA_AT: i32 = 4096;
pub(super) const RECORD_AT: i32 = 16;

/// An element of the `rings` array for `size` bytes of data.
pub(super) fn element(size: u32) -> u32 {
    size + 2 * DATA_AT as u32
}

impl CpuRings {
    pub(super) fn map(fd: OwnedFd, cpus: u32, size: u32) -> io::Result<CpuRings> {
        let len = element(size) as usize * cpus as usize;
        // SAFETY: maps the array's values, which the kernel lays out one after the other
        // from a page boundary, each `element(size)` bytes; unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error()).map_err(os("mmap of the CPUs' BPF rings"));
        }
        Ok(CpuRings {
            base: p as *mut u8,
            cpus: cpus as usize,
            size: u64::from(size),
            _fd: fd,
        })
    }

    fn at(&self, cpu: usize, off: usize) -> *mut u8 {
        // SAFETY: callers pass a CPU below `cpus` and an offset inside its element.
        unsafe {
            self.base
                .add(cpu * (self.size as usize + 2 * DATA_AT as usize) + off)
        }
    }

    fn word(&self, cpu: usize, off: i16) -> &AtomicU64 {
        // SAFETY: the head and the tail are 8-aligned words of the element's first page.
        unsafe { &*(self.at(cpu, off as usize) as *const AtomicU64) }
    }

    /// The record at `pos` of a CPU's ring (below its head): its ticket, its bytes, and
    /// the position after it.
    fn record(&self, cpu: usize, pos: u64) -> (u64, &[u8], u64) {
        let start = DATA_AT as usize + (pos & (self.size - 1)) as usize;
        // SAFETY: a published record (below the head, read with Acquire) lies whole in
        // the element, at most `BIG` + 16 bytes past the data's end.
        unsafe {
            let len = (self.at(cpu, start) as *const u32).read() as usize;
            let len = len.min(super::BIG as usize);
            let ticket = (self.at(cpu, start + 8) as *const u64).read();
            let bytes = std::slice::from_raw_parts(self.at(cpu, start + 16), len);
            (ticket, bytes, pos + ((len as u64 + 16 + 7) & !7))
        }
    }
}

impl Drop for CpuRings {
    fn drop(&mut self) {
        let len = element(self.size as u32) as usize * self.cpus;
        // SAFETY: the mapping made in CpuRings::map, with its length.
        unsafe { libc::munmap(self.base as *mut libc::c_void, len) };
    }
}

/// How long, and for how many reads, a missing ticket holds back the records after it: a
/// record being written on another CPU (microseconds; a guest's CPU the host has
/// stopped, longer). Past both the records go on, and the missing one comes out of
/// order if it comes. (The reads count too: a reader that had no CPU for 20 ms has not
/// looked again.)
const GAP_WAIT: std::time::Duration = std::time::Duration::from_millis(20);
const GAP_READS: u32 = 3;

/// The task ring and the CPUs' rings, read as one stream in the order of the records'
/// tickets.
pub(super) struct Rings {
    pub(super) tasks: Ring,
    cpus: CpuRings,
    /// Task records read before their turn, by ticket.
    waiting: std::collections::BTreeMap<u64, Vec<u8>>,
    /// The next ticket, and since when (and for how many reads) it has been missing
    /// while later ones were in.
    next: u64,
    missing: Option<(std::time::Instant, u32)>,
}

impl Rings {
    /// Maps the task ring (`ring`, [`super::TASK_RING`] bytes) and the CPUs' rings
    /// (`rings`: `cpus` of `size` bytes).
    pub(super) fn map(ring: OwnedFd, rings: OwnedFd, cpus: u32, size: u32) -> io::Result<Rings> {
        Ok(Rings::new(
            Ring::map(ring, super::TASK_RING)?,
            CpuRings::map(rings, cpus, size)?,
        ))
    }

    pub(super) fn new(tasks: Ring, cpus: CpuRings) -> Rings {
        Rings {
            tasks,
            cpus,
            waiting: Default::default(),
            next: 0,
            missing: None,
        }
    }

    /// Every record written since the last call, in ticket order, each CPU's ring freed
    /// as it is read. A missing ticket holds back those after it until a later call,
    /// for [`GAP_WAIT`] and [`GAP_READS`]; with `last` (no traced task runs) for none.
    pub(super) fn drain(&mut self, last: bool, mut each: impl FnMut(&[u8])) {
        // The CPUs' heads first, then the task ring: a task record whose ticket comes
        // before a call record seen is then seen too where both were made on one CPU
        // (the task program ended before the call's began), so that a reader preempted
        // between the two reads by the traced program finds no gap it made itself.
        let c = &self.cpus;
        let ends: Vec<u64> = (0..c.cpus)
            .map(|i| c.word(i, HEAD).load(Ordering::Acquire))
            .collect();
        let waiting = &mut self.waiting;
        self.tasks.drain(|r| {
            // A bell (8 bytes) only woke the reader.
            if r.len() >= super::SMALL as usize {
                let t = u64::from_ne_bytes(
                    r[TASK_TICKET..TASK_TICKET + 8].try_into().unwrap_or([0; 8]),
                );
                waiting.insert(t, r.to_vec());
            }
        });
        let mut at: Vec<u64> = (0..c.cpus)
            .map(|i| c.word(i, TAIL).load(Ordering::Relaxed))
            .collect();
        let front = |i: usize, at: &[u64]| (at[i] < ends[i]).then(|| c.record(i, at[i]).0);
        let mut fronts: Vec<Option<u64>> = (0..c.cpus).map(|i| front(i, &at)).collect();
        let mut read = 0u32;
        loop {
            let skip = last
                || self
                    .missing
                    .is_some_and(|(t, n)| n >= GAP_READS && t.elapsed() >= GAP_WAIT);
            let task = self.waiting.first_key_value().map(|(&t, _)| t);
            let Some((from, t)) = pick(&fronts, task, self.next, skip) else {
                let held = fronts.iter().any(Option::is_some) || task.is_some();
                if held {
                    let (since, reads) = self.missing.unwrap_or((std::time::Instant::now(), 0));
                    self.missing = Some((since, reads + 1));
                }
                break;
            };
            if t >= self.next {
                self.missing = None;
                self.next = t + 1;
            }
            match from {
                Some(i) => {
                    let (_, bytes, after) = c.record(i, at[i]);
                    each(bytes);
                    at[i] = after;
                    fronts[i] = front(i, &at);
                    read += 1;
                    if read.is_multiple_of(256) {
                        c.word(i, TAIL).store(after, Ordering::Release);
                    }
                }
                None => {
                    if let Some((_, r)) = self.waiting.pop_first() {
                        each(&r);
                    }
                }
            }
        }
        for (i, pos) in at.iter().enumerate() {
            c.word(i, TAIL).store(*pos, Ordering::Release);
        }
    }
}

/// Where a task record carries its ticket.
pub(super) const TASK_TICKET: usize = 72;

/// The next record to read: the lowest ticket at the front of a CPU's ring (`Some`
/// of its index) or among the task records (`None`), when it is `next` or one that
/// came late, or any lowest with `skip`; nothing while `next` is missing.
fn pick(
    fronts: &[Option<u64>],
    task: Option<u64>,
    next: u64,
    skip: bool,
) -> Option<(Option<usize>, u64)> {
    let cpu = fronts
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.map(|t| (Some(i), t)))
        .min_by_key(|&(_, t)| t);
    let low = match (cpu, task) {
        (Some(c), Some(t)) if t < c.1 => (None, t),
        (Some(c), _) => c,
        (None, Some(t)) => (None, t),
        (None, None) => return None,
    };
    (low.1 <= next || skip).then_some(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_ticket_goes_first_and_a_missing_one_holds_the_rest() {
        assert_eq!(
            pick(&[Some(1), Some(0)], None, 0, false),
            Some((Some(1), 0))
        );
        assert_eq!(pick(&[Some(2), None], Some(1), 1, false), Some((None, 1)));
        // Ticket 1 is being written somewhere: 2 and 3 wait, unless told not to.
        assert_eq!(pick(&[Some(2), Some(3)], None, 1, false), None);
        assert_eq!(pick(&[Some(2), Some(3)], None, 1, true), Some((Some(0), 2)));
        // A ticket that came after its turn was given up goes at once.
        assert_eq!(pick(&[None, Some(4)], None, 9, false), Some((Some(1), 4)));
        assert_eq!(pick(&[None, None], None, 0, true), None);
    }

    /// A memory file laid out as `n` CPUs' rings of `size` bytes.
    fn fake_rings(n: u32, size: u32) -> CpuRings {
        let fd = rustix::fs::memfd_create("rings", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, u64::from(element(size)) * u64::from(n)).unwrap();
        CpuRings::map(fd, n, size).unwrap()
    }

    /// A ring buffer's pages with nothing committed.
    fn fake_task_ring(size: u32) -> Ring {
        let fd = rustix::fs::memfd_create("ring", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, 4 * 65536 + 2 * u64::from(size)).unwrap();
        Ring::map(fd, size).unwrap()
    }

    /// Commits a task record (80 bytes, its first byte `tag`) with `ticket` into a
    /// ring buffer laid out as the kernel's: producer position on the second page, data
    /// from the third, each record after an 8-byte header.
    fn commit_task(ring: &Ring, ticket: u64, tag: u8) {
        let page = ring.page as u64;
        let prod = u64::from_ne_bytes(read_at(&ring.fd, page, 8).try_into().unwrap());
        let mut rec = vec![tag; 80];
        rec[TASK_TICKET..TASK_TICKET + 8].copy_from_slice(&ticket.to_ne_bytes());
        let at = 2 * page + (prod & (u64::from(ring.size) - 1));
        rustix::io::pwrite(&ring.fd, &80u64.to_ne_bytes(), at).unwrap();
        rustix::io::pwrite(&ring.fd, &rec, at + 8).unwrap();
        rustix::io::pwrite(&ring.fd, &(prod + 88).to_ne_bytes(), page).unwrap();
    }

    fn read_at(fd: &OwnedFd, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0; n];
        rustix::io::pread(fd, &mut b, at).unwrap();
        b
    }

    #[test]
    fn task_records_take_their_turn_among_the_calls() {
        let cpus = fake_rings(2, 4096);
        write(&cpus, 1, 1, 1, 80);
        let mut rings = Rings::new(fake_task_ring(4096), cpus);
        // The fork record (ticket 0) is still being committed on another CPU.
        assert_eq!(read(&mut rings, false), Vec::<u8>::new());
        commit_task(&rings.tasks, 0, 100);
        write(&rings.cpus, 0, 3, 3, 80);
        commit_task(&rings.tasks, 2, 102);
        assert_eq!(read(&mut rings, false), [100, 1, 102, 3]);
    }

    /// Writes a record of `len` bytes (its first byte `tag`) with `ticket` at the head of
    /// CPU `cpu`'s ring, and publishes it.
    fn write(r: &CpuRings, cpu: usize, ticket: u64, tag: u8, len: u32) {
        let head = r.word(cpu, HEAD).load(Ordering::Relaxed);
        let at = DATA_AT as usize + (head & (r.size - 1)) as usize;
        // SAFETY: inside CPU `cpu`'s element of the mapping.
        unsafe {
            (r.at(cpu, at) as *mut u32).write(len);
            (r.at(cpu, at + 8) as *mut u64).write(ticket);
            r.at(cpu, at + 16).write_bytes(tag, len as usize);
        }
        let next = head + ((u64::from(len) + 16 + 7) & !7);
        r.word(cpu, HEAD).store(next, Ordering::Release);
    }

    fn read(rings: &mut Rings, last: bool) -> Vec<u8> {
        let mut seen = Vec::new();
        rings.drain(last, |r| seen.push(r[0]));
        seen
    }

    #[test]
    fn records_of_several_cpus_come_out_in_ticket_order_and_free_their_rings() {
        let cpus = fake_rings(3, 4096);
        for (cpu, ticket) in [(0, 0), (1, 1), (0, 2), (2, 3), (1, 4), (0, 5)] {
            write(&cpus, cpu, ticket, ticket as u8, 80);
        }
        let mut rings = Rings::new(fake_task_ring(4096), cpus);
        assert_eq!(read(&mut rings, false), [0, 1, 2, 3, 4, 5]);
        for cpu in 0..3 {
            let c = &rings.cpus;
            assert_eq!(
                c.word(cpu, TAIL).load(Ordering::Relaxed),
                c.word(cpu, HEAD).load(Ordering::Relaxed)
            );
        }
        assert_eq!(read(&mut rings, false), Vec::<u8>::new());
    }

    #[test]
    fn a_record_still_being_written_holds_back_later_ones_for_a_while_only() {
        let cpus = fake_rings(2, 4096);
        write(&cpus, 0, 0, 0, 80);
        write(&cpus, 0, 2, 2, 80);
        let mut rings = Rings::new(fake_task_ring(4096), cpus);
        assert_eq!(read(&mut rings, false), [0]);
        assert_eq!(read(&mut rings, false), Vec::<u8>::new());
        write(&rings.cpus, 1, 1, 1, 80);
        assert_eq!(read(&mut rings, false), [1, 2]);
        // Ticket 4 never comes: 5 waits GAP_WAIT and GAP_READS reads, then goes on; 4
        // later goes at once.
        write(&rings.cpus, 1, 3, 3, 80);
        write(&rings.cpus, 0, 5, 5, 80);
        assert_eq!(read(&mut rings, false), [3]);
        std::thread::sleep(GAP_WAIT + std::time::Duration::from_millis(5));
        assert_eq!(read(&mut rings, false), Vec::<u8>::new());
        assert_eq!(read(&mut rings, false), Vec::<u8>::new());
        assert_eq!(read(&mut rings, false), [5]);
        write(&rings.cpus, 1, 4, 4, 80);
        write(&rings.cpus, 1, 7, 7, 80);
        assert_eq!(read(&mut rings, false), [4]);
        assert_eq!(read(&mut rings, true), [7]);
    }

    #[test]
    fn a_record_near_the_end_of_the_data_lies_whole_past_it() {
        let cpus = fake_rings(1, 4096);
        for t in 0..60u64 {
            write(&cpus, 0, t, t as u8, 200);
            let mut rings_read = Vec::new();
            let c = &cpus;
            let tail = c.word(0, TAIL).load(Ordering::Relaxed);
            let (ticket, bytes, after) = c.record(0, tail);
            rings_read.push((ticket, bytes.len(), bytes.iter().all(|&b| b == t as u8)));
            assert_eq!(rings_read, [(t, 200, true)]);
            c.word(0, TAIL).store(after, Ordering::Relaxed);
        }
    }
}
