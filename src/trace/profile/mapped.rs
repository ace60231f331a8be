//! Calls that move data without a read or write per request: the in-kernel copies,
//! mmap, io_uring (its setup and the submissions read from its ring) and Linux AIO.

use super::Call;
use super::memory::{iocbs, iov_total};
use super::model::Profile;
use super::op::Op;
use crate::sys::trace::calls::Syscall;

impl Profile {
    /// `sendfile` | `splice` | `tee` | `copy_file_range` | `vmsplice`.
    pub(super) fn copy_call(&mut self, c: Call) {
        let Call {
            pid,
            sys,
            name,
            a,
            ret,
            ok,
            fd0,
            ..
        } = c;
        // The source descriptor: sendfile(out, in), the others (in, …, out).
        let fd = if sys == Syscall::Sendfile {
            a[1] as i32
        } else {
            fd0
        };
        if let Some(f) = self.fd(pid, fd) {
            let asked = match sys {
                Syscall::Sendfile => a[3],
                Syscall::Tee => a[2],
                Syscall::Vmsplice => iov_total(&self.mem, a[1], a[2]),
                _ => a[4],
            };
            let s = self.op(pid, f.target, name);
            s.calls += 1;
            s.bytes += if ok { ret as u64 } else { 0 };
            s.errors += u64::from(!ok);
            s.record_size(asked);
        }
    }

    /// `mmap`.
    pub(super) fn mmap_call(&mut self, c: Call) {
        let Call {
            pid,
            name,
            a,
            ret,
            ok,
            ..
        } = c;
        let fd = a[4] as i32;
        let t = if fd < 0 {
            Some(self.target("anonymous memory"))
        } else {
            self.fd(pid, fd).map(|f| f.target)
        };
        if let Some(t) = t {
            let s = self.op(pid, t, name);
            s.calls += 1;
            s.bytes += a[1];
            s.errors += u64::from(!ok);
            s.record_size(a[1]);
        }
        if ok && let Some(r) = self.rings.get_mut(&(pid, fd)) {
            r.mapped(a[5], ret as u64);
        }
    }

    /// `io_uring_setup`.
    pub(super) fn uring_setup(&mut self, c: Call) {
        let Call {
            pid,
            name,
            a,
            ret,
            ok,
            ..
        } = c;
        if ok && let Some(r) = super::uring::Ring::setup(&self.mem, a[1]) {
            if let Some(why) = r.unseen() {
                self.notes.insert(uring_note(pid, why));
            }
            self.rings.insert((pid, ret as i32), r);
        }
        if let Some(f) = self.fd(pid, ret as i32).filter(|_| ok) {
            let s = self.op(pid, f.target, name);
            s.calls += 1;
        } else {
            let t = self.target("io_uring");
            let s = self.op(pid, t, name);
            s.calls += 1;
            s.errors += 1;
        }
    }

    /// The `n` requests an io_uring_enter submitted, each on its own descriptor.
    pub(super) fn uring_submitted(&mut self, pid: i32, a: [u64; 6], n: u64) {
        let ring = if a[3] & super::uring::ENTER_REGISTERED_RING != 0 {
            // A registered ring's index is no descriptor: the process's only ring.
            let mut mine = self.rings.iter().filter(|(k, _)| k.0 == pid);
            match (mine.next(), mine.next()) {
                (Some((_, r)), None) => Some(*r),
                _ => None,
            }
        } else {
            self.rings.get(&(pid, a[0] as i32)).copied()
        };
        let requests = match ring {
            Some(r) => r.submitted(&self.mem, n),
            None => Err("its io_uring ring was set up where ioprobe did not see it"),
        };
        match requests {
            Ok(list) => {
                for (fd, fixed, op, bytes) in list {
                    let t = if fixed {
                        Some(self.target("io_uring registered file"))
                    } else {
                        self.fd(pid, fd).map(|f| f.target)
                    };
                    if let Some(t) = t {
                        let s = self.op(pid, t, op);
                        s.calls += 1;
                        s.bytes += bytes;
                        s.record_size(bytes);
                    }
                }
            }
            Err(why) => {
                self.notes.insert(uring_note(pid, why));
            }
        }
    }

    /// io_submit: each submitted iocb on its own descriptor (reads, writes, syncs),
    /// and the call itself on the AIO context.
    pub(super) fn aio_submit(&mut self, pid: i32, a: [u64; 6], ret: i64) {
        let ok = ret >= 0;
        for (fd, op, bytes) in iocbs(&self.mem, a[2], if ok { ret as u64 } else { 0 }) {
            if let Some(f) = self.fd(pid, fd) {
                let s = self.op(pid, f.target, Op::Aio(op));
                s.calls += 1;
                s.bytes += bytes;
                s.record_size(bytes);
            }
        }
        let t = self.target("aio context");
        let s = self.op(pid, t, Op::Call(Syscall::IoSubmit));
        s.calls += 1;
        s.errors += u64::from(!ok);
    }
}

/// The note for a process whose io_uring requests cannot be read.
pub(super) fn uring_note(pid: i32, why: &str) -> String {
    format!("pid {pid}: {why}, so the bytes its io_uring requests move are not counted")
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::sys::trace::calls::Syscall;

    /// In-kernel copies count on their source: copy_file_range's first descriptor,
    /// sendfile's second; the size asked is their length argument.
    #[test]
    fn in_kernel_copies_count_on_their_source() {
        let mut p = profile();
        open(&mut p, F, 5);
        open(&mut p, G, 6);
        socket(&mut p, 7, 5);
        call(
            &mut p,
            Syscall::CopyFileRange,
            [5, 0, 6, 0, 65536, 0],
            65536,
            Vec::new(),
        );
        call(
            &mut p,
            Syscall::Sendfile,
            [7, 5, 0, 4096, 0, 0],
            1000,
            Vec::new(),
        );
        let c = row(&p, F, "copy_file_range");
        assert_eq!(
            (c.calls, c.bytes, c.sizes.get(&65536)),
            (1, 65536, Some(&1))
        );
        let s = row(&p, F, "sendfile");
        assert_eq!((s.bytes, s.sizes.get(&4096)), (1000, Some(&1)));
        let g = target(&p, G);
        assert!(
            p.ops.keys().all(|k| k.1 != g || k.2.name() == "openat"),
            "{:?}",
            p.ops
        );
    }

    /// A file's mapping counts its length on the file; an anonymous one on
    /// "anonymous memory"; munmap on the mappings.
    #[test]
    fn mappings_count_their_length_on_the_file_or_anonymous_memory() {
        let mut p = profile();
        open(&mut p, F, 5);
        call(
            &mut p,
            Syscall::Mmap,
            [0, 1 << 20, 1, 2, 5, 0],
            0x7f00_0000_0000,
            Vec::new(),
        );
        call(
            &mut p,
            Syscall::Mmap,
            [0, 8192, 3, 0x22, -1i64 as u64, 0],
            0x7f00_1000_0000,
            Vec::new(),
        );
        let m = row(&p, F, "mmap");
        assert_eq!(
            (m.calls, m.bytes, m.sizes.get(&(1 << 20))),
            (1, 1 << 20, Some(&1))
        );
        assert_eq!(row(&p, "anonymous memory", "mmap").bytes, 8192);
        assert_eq!(p.counts.get("mmap"), Some(&2));
    }
}
