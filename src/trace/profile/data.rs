//! The data calls: reads and writes (plain, positioned, vectored), lseek, socket
//! data, and the read-then-write pairs that are copies.

use super::Call;
use super::memory::{iov_total, mmsg_total, msghdr_iov};
use super::model::{Kind, Profile, overlap_then_merge};
use super::op::Op;
use crate::sys::trace::calls::Syscall;

impl Profile {
    /// The path at `addr` in the calling task, or, where there is none (NULL or "":
    /// AT_EMPTY_PATH, utimensat(fd, NULL)), the target of descriptor `fd`.
    pub(super) fn named(&mut self, pid: i32, addr: u64, fd: i32) -> String {
        let spelled = (addr != 0).then(|| self.mem.string(addr)).flatten();
        self.named_as(pid, spelled, fd)
    }

    /// [`Profile::named`], its path `spelled` already read (None: none, or not read).
    pub(super) fn named_as(&mut self, pid: i32, spelled: Option<String>, fd: i32) -> String {
        if let Some(path) = spelled.filter(|p| !p.is_empty()) {
            return path;
        }
        self.fd(pid, fd)
            .map(|f| self.targets[f.target].name.clone())
            .unwrap_or_else(|| "?".into())
    }

    /// Socket data: what each call asked to move (its size bucket) and what it moved.
    pub(super) fn socket_data(&mut self, pid: i32, tid: i32, sys: Syscall, a: [u64; 6], ret: i64) {
        let name = Op::Call(sys);
        let ok = ret >= 0;
        let done = if ok { ret as u64 } else { 0 };
        let (asked, moved) = match sys {
            Syscall::Sendto | Syscall::Recvfrom => (a[2], done),
            Syscall::Sendmsg | Syscall::Recvmsg => {
                let (iov, n) = msghdr_iov(&self.mem, a[1]);
                (iov_total(&self.mem, iov, n), done)
            }
            // The messages sent or received: each mmsghdr's msg_len.
            _ => {
                let got = mmsg_total(&self.mem, a[1], done);
                (got, got)
            }
        };
        if let Some(f) = self.fd(pid, a[0] as i32) {
            let s = self.op(pid, f.target, name);
            s.calls += 1;
            s.bytes += moved;
            s.errors += u64::from(!ok);
            s.record_size(asked);
            // A file's bytes sent right after they were read: a copy sendfile makes.
            if matches!(sys, Syscall::Sendto | Syscall::Sendmsg) {
                let kind = self.targets[f.target].kind;
                self.pair_reads_and_writes((pid, tid), f.target, kind, false, moved);
            }
        }
    }

    /// `read` | `write` | `pread64` | `pwrite64` | `readv` | `writev` | `preadv` | `pwritev` | `preadv2` | `pwritev2`.
    pub(super) fn data_call(&mut self, c: Call) {
        let Call {
            pid,
            tid,
            sys,
            name,
            a,
            ret,
            ok,
            fd0,
            ..
        } = c;
        let vectored = sys.is_vectored();
        let asked = if vectored {
            iov_total(&self.mem, a[1], a[2])
        } else {
            a[2]
        };
        let positioned = sys.is_positioned();
        let reading = sys.is_read();
        let Some(mut f) = self.fd(pid, fd0) else {
            return;
        };
        let offset = if positioned { a[3] } else { f.pos };
        let moved = if ok { ret as u64 } else { 0 };
        let kind = self.targets[f.target].kind;
        // A folded row holds many files: their ranges are not one file's.
        let reread =
            if reading && kind == Kind::File && moved > 0 && !self.folded.contains_key(&f.target) {
                overlap_then_merge(self.read.entry(f.target).or_default(), offset, moved)
            } else {
                0
            };
        let after_lseek = f.after_lseek;
        let sequential = f.end.is_none_or(|e| e == offset);
        let s = self.op(pid, f.target, name);
        s.calls += 1;
        s.bytes += moved;
        s.errors += u64::from(!ok);
        s.record_size(asked);
        if sequential {
            s.sequential += 1;
        } else {
            s.random += 1;
        }
        if reading && ok {
            if moved == 0 && asked > 0 {
                s.eof += 1;
            } else if moved < asked {
                s.short += 1;
            }
        }
        s.reread_bytes += reread;
        s.after_lseek += u64::from(after_lseek);
        f.end = Some(offset + moved);
        f.after_lseek = false;
        if !positioned {
            f.pos += moved;
        }
        self.set_fd(pid, fd0, f);
        self.pair_reads_and_writes((pid, tid), f.target, kind, reading, moved);
    }

    /// Remembers a thread's last file read, so that a write of the same bytes right
    /// after it counts as a read-then-write copy; counts file writes not yet synced.
    pub(super) fn pair_reads_and_writes(
        &mut self,
        (pid, tid): (i32, i32),
        target: usize,
        kind: Kind,
        reading: bool,
        moved: u64,
    ) {
        if reading {
            if moved > 0 && kind == Kind::File {
                self.last_read.insert(tid, (target, moved));
            }
            return;
        }
        if let Some((src, n)) = self.last_read.remove(&tid)
            && n == moved
            && src != target
            && moved > 0
        {
            let c = self.copies.entry((pid, src, target)).or_default();
            c.0 += 1;
            c.1 += moved;
        }
        if kind == Kind::File {
            let u = self.unsynced.entry((pid, target)).or_default();
            u.0 += 1;
            u.1 += moved;
        }
    }

    /// `lseek`.
    pub(super) fn lseek_call(&mut self, c: Call) {
        let Call {
            pid,
            name,
            ret,
            ok,
            fd0,
            ..
        } = c;
        if let Some(mut f) = self.fd(pid, fd0) {
            if ok {
                f.pos = ret as u64;
            }
            f.after_lseek = true;
            self.set_fd(pid, fd0, f);
            let s = self.op(pid, f.target, name);
            s.calls += 1;
            s.errors += u64::from(!ok);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::sys::trace::calls::Syscall;

    /// Reads: calls, bytes, their size bucket, in order or not, after an lseek, bytes
    /// read again, a short read and the end of the file.
    #[test]
    fn reads_count_bytes_sizes_order_rereads_and_short_reads() {
        let mut p = profile();
        open(&mut p, F, 5);
        data(&mut p, Syscall::Read, 5, 4096, 4096, 2);
        call(&mut p, Syscall::Lseek, [5, 0, 0, 0, 0, 0], 0, Vec::new());
        data(&mut p, Syscall::Read, 5, 4096, 4096, 1);
        data(&mut p, Syscall::Read, 5, 4096, 100, 1);
        data(&mut p, Syscall::Read, 5, 4096, 0, 1);
        let r = row(&p, F, "read");
        assert_eq!((r.calls, r.bytes), (5, 3 * 4096 + 100));
        assert_eq!(r.sizes.get(&4096), Some(&5));
        // The read after the lseek back to 0 is out of order; the rest follow on.
        assert_eq!((r.sequential, r.random, r.after_lseek), (4, 1, 1));
        // 0..4096 read twice, and 4096..4196 of the short read too.
        assert_eq!(r.reread_bytes, 4096 + 100);
        assert_eq!((r.short, r.eof), (1, 1));
        assert_eq!(row(&p, F, "lseek").calls, 1);
        assert_eq!(p.counts.get("read"), Some(&5));
    }

    /// Positioned writes leave the position; a vectored write's size is its iovecs'
    /// total, read from the copied array; a failed call is an error, not bytes.
    #[test]
    fn positioned_and_vectored_calls_read_their_offsets_and_iovecs() {
        let mut p = profile();
        open(&mut p, F, 6);
        call(
            &mut p,
            Syscall::Pwrite64,
            [6, 0x9000, 512, 1 << 20, 0, 0],
            512,
            Vec::new(),
        );
        let iovecs: Vec<u8> = [(0x9000u64, 100u64), (0xa000, 28)]
            .iter()
            .flat_map(|(b, l)| b.to_ne_bytes().into_iter().chain(l.to_ne_bytes()))
            .collect();
        call(
            &mut p,
            Syscall::Writev,
            [6, AT, 2, 0, 0, 0],
            128,
            vec![(AT, iovecs, false)],
        );
        data(&mut p, Syscall::Write, 6, 4096, -28, 1);
        let pw = row(&p, F, "pwrite64");
        assert_eq!((pw.calls, pw.bytes), (1, 512));
        let wv = row(&p, F, "writev");
        assert_eq!((wv.bytes, wv.sizes.get(&128)), (128, Some(&1)));
        // The pwrite at 1 MiB left the position at 0, where the writev went: after
        // a call ending at 1 MiB + 512, out of order.
        assert_eq!((wv.sequential, wv.random), (0, 1));
        assert_eq!(p.fds[&T][&6].pos, 128);
        let w = row(&p, F, "write");
        assert_eq!((w.calls, w.bytes, w.errors), (1, 0, 1));
    }

    /// A write of the bytes just read is a read-then-write copy of that pair.
    #[test]
    fn a_read_then_a_write_of_the_same_bytes_is_a_copy() {
        let mut p = profile();
        open(&mut p, F, 5);
        open(&mut p, G, 6);
        for _ in 0..3 {
            data(&mut p, Syscall::Read, 5, 65536, 65536, 1);
            data(&mut p, Syscall::Write, 6, 65536, 65536, 1);
        }
        let (f, g) = (target(&p, F), target(&p, G));
        assert_eq!(p.copies.get(&(T, f, g)), Some(&(3, 3 * 65536)));
    }

    /// Socket data: what each call asked (sendto's length, a msghdr's iovecs) and
    /// what it moved, on the socket's row.
    #[test]
    fn socket_calls_count_what_they_asked_and_moved() {
        let mut p = profile();
        socket(&mut p, 7, 42);
        let s = "socket:[42]";
        call(
            &mut p,
            Syscall::Sendto,
            [7, 0x9000, 1000, 0, 0, 0],
            600,
            Vec::new(),
        );
        // struct msghdr: name, namelen (+pad), iov, iovlen, …; one iovec of 30 bytes.
        let mut msg = vec![0u8; 56];
        msg[16..24].copy_from_slice(&(AT + 64).to_ne_bytes());
        msg[24..32].copy_from_slice(&1u64.to_ne_bytes());
        let iov: Vec<u8> = 0x9000u64
            .to_ne_bytes()
            .into_iter()
            .chain(30u64.to_ne_bytes())
            .collect();
        call(
            &mut p,
            Syscall::Sendmsg,
            [7, AT, 0, 0, 0, 0],
            30,
            vec![(AT, msg, false), (AT + 64, iov, false)],
        );
        let st = row(&p, s, "sendto");
        assert_eq!((st.bytes, st.sizes.get(&512)), (600, Some(&1)));
        let sm = row(&p, s, "sendmsg");
        assert_eq!((sm.bytes, sm.sizes.get(&16)), (30, Some(&1)));
        assert_eq!(p.targets[target(&p, s)].family.as_deref(), Some("tcp"));
    }
}
