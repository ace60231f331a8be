//! The data calls: reads and writes (plain, positioned, vectored), lseek, socket
//! data, and the read-then-write pairs that are copies.

use super::Call;
use super::memory::{iov_total, mmsg_total, msghdr_iov};
use super::model::{Kind, Profile, bucket, overlap_then_merge};
use crate::names::Named;
use crate::sys::trace::calls::Syscall;

impl Profile {
    /// The path at `addr` in the calling task, or, where there is none (NULL or "":
    /// AT_EMPTY_PATH, utimensat(fd, NULL)), the target of descriptor `fd`.
    pub(super) fn named(&mut self, pid: i32, addr: u64, fd: i32) -> String {
        let path = if addr == 0 {
            String::new()
        } else {
            self.mem.string(addr).unwrap_or_default()
        };
        if !path.is_empty() {
            return path;
        }
        self.fd(pid, fd)
            .map(|f| self.targets[f.target].name.clone())
            .unwrap_or_else(|| "?".into())
    }

    /// Socket data: what each call asked to move (its size bucket) and what it moved.
    pub(super) fn socket_data(&mut self, pid: i32, tid: i32, sys: Syscall, a: [u64; 6], ret: i64) {
        let name = sys.name();
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
            *s.sizes.entry(bucket(asked)).or_default() += 1;
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
        *s.sizes.entry(bucket(asked)).or_default() += 1;
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
