//! Calls on files and paths: opens, closes, syncs, fcntl, other calls on a
//! descriptor, stats, the namespace and metadata calls, and calls on no descriptor.

use super::Call;
use super::fd::{Fd, as_seen_by, normal, read_link};
use super::model::Profile;
use super::op::Op;
use crate::probes::syscalls::path_components;
use crate::sys::trace::Memory;
use crate::sys::trace::calls::Syscall;

impl Profile {
    /// A namespace or metadata call, on the path it names (for a rename or a link, the
    /// existing one).
    pub(super) fn path_call(&mut self, pid: i32, sys: Syscall, a: [u64; 6], ok: bool) {
        let name = Op::Call(sys);
        let addr = a[sys.path_arg().unwrap_or(0)];
        let path = self.named(pid, addr, a[0] as i32);
        let t = self.target(&path);
        let s = self.op(pid, t, name);
        s.calls += 1;
        s.errors += u64::from(!ok);
    }

    /// `open` | `openat` | `openat2` | `creat`.
    pub(super) fn open_call(&mut self, c: Call) {
        let Call {
            pid,
            sys,
            name,
            a,
            ret,
            ok,
            ..
        } = c;
        // The path as the program spelt it, read once: its components, and where
        // /proc has no link (eBPF, or the open failed) its name.
        let spelled = self.mem.string(a[sys.path_arg().unwrap_or(1)]);
        let components = spelled.as_deref().map(|p| path_components(p.as_bytes()));
        if ok {
            let fd = ret as i32;
            let Some(name_now) = self.opened(pid, (sys, a, spelled), fd) else {
                return;
            };
            let t = self.target(&name_now);
            self.fds.entry(pid).or_default().remove(&fd);
            self.set_fd(pid, fd, Fd::at(t));
            if !self.folded.contains_key(&t) {
                *self.opens.entry((pid, name_now)).or_default() += 1;
            }
            let s = self.op(pid, t, name);
            s.calls += 1;
            s.looked_up(components);
        } else {
            let path = spelled.unwrap_or_else(|| "?".into());
            let t = self.target(&path);
            let s = self.op(pid, t, name);
            s.calls += 1;
            s.errors += 1;
        }
    }

    /// What an open that returned `fd` opened. Under ptrace the process is stopped
    /// right after the call: its /proc/PID/fd link says. The eBPF tracer's records are
    /// read a little later, when the descriptor may be closed or reused: the path the
    /// call named says, made absolute from its directory descriptor or the process's
    /// working directory.
    /// `spelled`: the path the call named, as read from its memory.
    pub(super) fn opened(
        &mut self,
        pid: i32,
        (sys, a, spelled): (Syscall, [u64; 6], Option<String>),
        fd: i32,
    ) -> Option<String> {
        let link = |fd: String| read_link(format!("/proc/{pid}/{fd}"));
        // Seen while its task is stopped at it (ptrace, and preload's traced calls):
        // /proc says, in one readlink.
        if self.ptrace || matches!(self.mem, Memory::Live(_)) {
            return link(format!("fd/{fd}"));
        }
        let path = spelled?;
        // The name /proc would give: symbolic links resolved, while the file is there.
        let real = |p: std::path::PathBuf| {
            std::fs::canonicalize(&p).map_or_else(|_| normal(&p), |c| c.display().to_string())
        };
        if path.starts_with('/') {
            return Some(real(as_seen_by(pid, &path).into()));
        }
        const AT_FDCWD: i32 = -100;
        let dirfd = a[0] as i32;
        let dir = if sys.path_arg() == Some(1) && dirfd != AT_FDCWD {
            self.fd(pid, dirfd)
                .map(|f| self.targets[f.target].name.clone())
        } else {
            link("cwd".into()).or_else(|| self.cwd.get(&pid).cloned())
        };
        Some(match dir {
            Some(d) => real(std::path::Path::new(&d).join(&path)),
            None => path,
        })
    }

    /// `close`.
    pub(super) fn close_call(&mut self, c: Call) {
        let Call {
            pid, name, ok, fd0, ..
        } = c;
        let f = self.fds.get(&pid).and_then(|t| t.get(&fd0)).copied();
        let f = f.or_else(|| (!ok).then(|| self.fd(pid, fd0)).flatten());
        if let Some(f) = f {
            let s = self.op(pid, f.target, name);
            s.calls += 1;
            s.errors += u64::from(!ok);
        }
        if let Some(t) = self.fds.get_mut(&pid) {
            t.remove(&fd0);
        }
        if let Some(e) = self.early.get_mut(&pid) {
            e.remove(&fd0);
        }
    }

    /// `fsync` | `fdatasync` | `sync_file_range`.
    pub(super) fn sync_call(&mut self, c: Call) {
        let Call {
            pid,
            sys,
            name,
            ok,
            fd0,
            ..
        } = c;
        if let Some(f) = self.fd(pid, fd0) {
            let s = self.op(pid, f.target, name);
            s.calls += 1;
            s.errors += u64::from(!ok);
            if sys != Syscall::SyncFileRange {
                let (w, b) = self.unsynced.remove(&(pid, f.target)).unwrap_or((0, 0));
                let y = self.syncs.entry((pid, f.target)).or_default();
                y.syncs += 1;
                y.writes += w;
                y.bytes += b;
            }
        }
    }

    /// `fcntl`.
    pub(super) fn fcntl_call(&mut self, c: Call) {
        let Call {
            pid,
            a,
            ret,
            ok,
            fd0,
            ..
        } = c;
        // F_SETPIPE_SZ keeps its own row (pricing reads the pipe's size from it).
        const F_SETPIPE_SZ: u64 = 1031;
        let op = if a[1] == F_SETPIPE_SZ {
            Op::SetPipeSize
        } else {
            Op::Call(Syscall::Fcntl)
        };
        if let Some(f) = self.fd(pid, fd0) {
            let s = self.op(pid, f.target, op);
            s.calls += 1;
            s.errors += u64::from(!ok);
            if op == Op::SetPipeSize && ok {
                self.pipe_sizes.insert(f.target, ret as u64);
            }
        }
    }

    /// `fstat` | `getdents64` | `io_uring_enter` | `fadvise64` | `readahead` | `fallocate` | `ftruncate` | `syncfs` | `ioctl` | `flock` | `fchmod` | `fchown` | `fsetxattr` | `fgetxattr` | `flistxattr` | `fremovexattr` | `fstatfs`.
    pub(super) fn fd_call(&mut self, c: Call) {
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
        if let Some(f) = self.fd(pid, fd0) {
            let s = self.op(pid, f.target, name);
            s.calls += 1;
            s.errors += u64::from(!ok);
            if sys == Syscall::Getdents64 && ok {
                s.bytes += ret as u64;
            }
            if sys == Syscall::Fallocate {
                s.bytes += a[3];
            }
        }
        if sys == Syscall::IoUringEnter && ret > 0 {
            self.uring_submitted(pid, a, ret as u64);
        }
    }

    /// `stat` | `lstat` | `newfstatat` | `statx`.
    pub(super) fn stat_call(&mut self, c: Call) {
        let Call {
            pid,
            sys,
            a,
            ok,
            fd0,
            ..
        } = c;
        let addr = a[sys.path_arg().unwrap_or(1)];
        // An empty path (AT_EMPTY_PATH) or none looks nothing up: an fstat.
        let spelled = (addr != 0).then(|| self.mem.string(addr)).flatten();
        let components = match &spelled {
            _ if addr == 0 => Some(0),
            Some(p) => Some(path_components(p.as_bytes())),
            None => None,
        };
        let path = self.named_as(pid, spelled, fd0);
        let t = self.target(&path);
        if !self.folded.contains_key(&t) {
            *self.stats.entry((pid, path.clone())).or_default() += 1;
        }
        let s = self.op(pid, t, Op::Call(Syscall::Stat));
        s.calls += 1;
        s.errors += u64::from(!ok);
        s.looked_up(components);
    }

    /// `io_getevents` | `sync`.
    pub(super) fn context_call(&mut self, c: Call) {
        let Call {
            pid, sys, name, ok, ..
        } = c;
        let t = self.target(if sys == Syscall::Sync {
            "every filesystem"
        } else {
            "aio context"
        });
        let s = self.op(pid, t, name);
        s.calls += 1;
        s.errors += u64::from(!ok);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Profile;
    use super::super::testing::*;
    use crate::sys::trace::calls::Syscall;

    /// Opens of one path are counted per path (the reopen rule's figure), a failed one
    /// is an error on its path, stats name their path, closes their descriptor's file.
    #[test]
    fn opens_stats_and_closes_land_on_their_paths() {
        let mut p = profile();
        for _ in 0..2 {
            open(&mut p, F, 5);
            call(&mut p, Syscall::Close, [5, 0, 0, 0, 0, 0], 0, Vec::new());
        }
        open(&mut p, "/nonexistent-ioprobe/missing", -2);
        call(
            &mut p,
            Syscall::Newfstatat,
            [-100i64 as u64, AT, 0x9000, 0, 0, 0],
            0,
            path(F),
        );
        assert_eq!(p.opens.get(&(T, F.into())), Some(&2));
        assert_eq!(row(&p, F, "openat").calls, 2);
        assert_eq!(row(&p, F, "close").calls, 2);
        let missing = row(&p, "/nonexistent-ioprobe/missing", "openat");
        assert_eq!((missing.calls, missing.errors), (1, 1));
        assert_eq!(p.stats.get(&(T, F.into())), Some(&1));
        assert_eq!(row(&p, F, "stat").calls, 1);
        // A closed descriptor is forgotten: a read on it lands nowhere.
        data(&mut p, Syscall::Read, 5, 4096, 4096, 1);
        assert!(p.ops.keys().all(|k| k.2.name() != "read"), "{:?}", p.ops);
    }

    /// Stats and opens count the path components they looked up, as the program spelt
    /// the path: a stat of a descriptor (AT_EMPTY_PATH) none, one unread not at all.
    #[test]
    fn stats_and_opens_count_the_components_of_their_paths() {
        let mut p = profile();
        open(&mut p, F, 5); // "/nonexistent-ioprobe/f": 2
        let stat = |p: &mut Profile, dirfd: u64, parts| {
            call(
                p,
                Syscall::Newfstatat,
                [dirfd, AT, 0x9000, 0, 0, 0],
                0,
                parts,
            );
        };
        stat(&mut p, -100i64 as u64, path(F));
        stat(&mut p, -100i64 as u64, path("/nonexistent-ioprobe/./f"));
        // fstatat(5, "", AT_EMPTY_PATH): the descriptor's file, nothing looked up.
        stat(&mut p, 5, path(""));
        // Not copied by the tracer: not counted.
        stat(&mut p, -100i64 as u64, Vec::new());
        let opens = row(&p, F, "openat");
        assert_eq!((opens.named, opens.components), (1, 2));
        assert_eq!(opens.mean_components(), Some(2.0));
        // F's stats: by its path (2) and by its descriptor (0).
        let stats = row(&p, F, "stat");
        assert_eq!((stats.calls, stats.named, stats.components), (2, 2, 2));
        let of_stats = |p: &Profile, name| p.components_of(T, name, |op| op.name() == "stat");
        assert_eq!(of_stats(&p, F), Some(1.0));
        assert_eq!(of_stats(&p, "/nonexistent-ioprobe/./f"), Some(3.0));
        assert_eq!(of_stats(&p, G), None);
        // The unread one lands on no path it could count.
        assert_eq!(of_stats(&p, "?"), None);
    }

    /// A task's context switches between its first timed call and its last go to its
    /// process when it ends (the word wraps at 30 bits); processes all confined to one
    /// CPU are on one CPU.
    #[test]
    fn switches_come_from_timed_calls_and_one_cpu_from_every_process() {
        use crate::sys::trace::{Event, Memory, Timing};
        let mut p = profile();
        for (switches, second) in [((1 << 30) - 10, false), (5, true), (90, false)] {
            p.add(&Event::Call {
                tid: T,
                call: Syscall::Lseek,
                args: [3, 0, 0, 0, 0, 0],
                ret: 1,
                mem: Memory::default(),
                timing: Some(Timing {
                    ended_ns: 1_000,
                    switches,
                    second,
                }),
            });
        }
        p.add(&Event::Exit { tid: T });
        assert_eq!(p.processes[&T].switches, 100);
        for (cpus, one) in [
            (["0", "0"], true),
            (["0", "1"], false),
            (["0-1", "0-1"], false),
        ] {
            for (i, c) in cpus.iter().enumerate() {
                let mut q = super::super::Process::new(i as i32, "x".into());
                q.cpus = Some(c.to_string());
                p.processes.insert(i as i32, q);
            }
            p.processes.get_mut(&T).unwrap().cpus = None; // gone before it was read
            assert_eq!(p.one_cpu(), one, "{cpus:?}");
        }
        p.processes.clear();
        assert!(!p.one_cpu());
    }

    /// A forked child's own calls may come before the parent's fork event (preload
    /// reads the child's ring first): the descriptor it opened itself stays its own
    /// when it then inherits its parent's table.
    #[test]
    fn a_childs_own_descriptors_survive_its_late_fork_event() {
        use crate::sys::trace::Event;
        let mut p = profile();
        open(&mut p, G, 3); // the parent's descriptor 3
        // A child whose fork event comes after its own open of F as 3.
        let late = T + 2;
        let at = |tid: i32, sys: Syscall, args: [u64; 6], ret: i64, mem| Event::Call {
            timing: None,
            tid,
            call: sys,
            args,
            ret,
            mem: crate::sys::trace::Memory::Captured(mem, std::cell::Cell::new(false)),
        };
        p.add(&at(
            late,
            Syscall::Openat,
            [-100i64 as u64, AT, 0, 0, 0, 0],
            3,
            path(F),
        ));
        p.add(&Event::Task {
            tid: late,
            parent: T,
            pid: Some(late),
            comm: Some("app".into()),
        });
        for _ in 0..5 {
            p.add(&at(
                late,
                Syscall::Read,
                [3, 0x9000, 16, 0, 0, 0],
                16,
                Vec::new(),
            ));
        }
        let t = |name: &str| p.targets.iter().position(|x| x.name == name).unwrap();
        let reads = |pid: i32, target: usize| {
            p.ops
                .iter()
                .find(|((a, b, o), _)| *a == pid && *b == target && o.name() == "read")
                .map_or(0, |(_, s)| s.calls)
        };
        assert_eq!(reads(late, t(F)), 5, "{:?}", p.ops);
        assert_eq!(reads(late, t(G)), 0, "{:?}", p.ops);
    }

    /// An fsync counts the writes and bytes since the previous one.
    #[test]
    fn fsyncs_count_the_writes_before_each() {
        let mut p = profile();
        open(&mut p, F, 5);
        data(&mut p, Syscall::Write, 5, 100, 100, 3);
        call(&mut p, Syscall::Fsync, [5, 0, 0, 0, 0, 0], 0, Vec::new());
        data(&mut p, Syscall::Write, 5, 100, 100, 1);
        call(
            &mut p,
            Syscall::Fdatasync,
            [5, 0, 0, 0, 0, 0],
            0,
            Vec::new(),
        );
        let y = &p.syncs[&(T, target(&p, F))];
        assert_eq!((y.syncs, y.writes, y.bytes), (2, 4, 400));
    }

    /// Namespace calls land on the path they name (unlinkat's second argument);
    /// F_SETPIPE_SZ keeps its own row and the size granted.
    #[test]
    fn path_calls_and_pipe_sizes_are_kept() {
        let mut p = profile();
        call(
            &mut p,
            Syscall::Unlinkat,
            [-100i64 as u64, AT, 0, 0, 0, 0],
            0,
            path(F),
        );
        assert_eq!(row(&p, F, "unlinkat").calls, 1);
        p.add(&crate::sys::trace::Event::Created {
            tid: T,
            fds: vec![3, 4],
            what: crate::sys::trace::Created::Pipe,
            names: vec![Some("pipe:[9]".into()), None],
        });
        call(
            &mut p,
            Syscall::Fcntl,
            [4, 1031, 1 << 20, 0, 0, 0],
            1 << 20,
            Vec::new(),
        );
        let t = target(&p, "pipe:[9]");
        assert_eq!(p.pipe_sizes.get(&t), Some(&(1 << 20)));
        assert_eq!(row(&p, "pipe:[9]", "fcntl(F_SETPIPE_SZ)").calls, 1);
    }
}
