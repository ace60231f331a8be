//! The task and descriptor tables: which process a task belongs to, what each
//! descriptor refers to (a target, its position), new processes and execs.

use super::OpStats;
use super::fd::Fd;
use super::model::IntMap;
use super::model::{Interval, Kind, Process, Profile, TARGETS, Target};
use super::op::Op;
use crate::sys::trace::procfs;

impl Profile {
    /// An empty profile; `ptrace`: every call is seen while its task is stopped at
    /// it; `traced`: the command is a ptrace tracee (which runs setuid programs
    /// without their privileges).
    pub fn new(ptrace: bool, traced: bool) -> Profile {
        Profile {
            ptrace,
            traced,
            ..Profile::default()
        }
    }

    /// A profile of processes attached to for a window: ended processes are folded
    /// per program past a few dozen (`profile/fold.rs`).
    pub fn folding(mut self) -> Profile {
        self.fold = true;
        self
    }

    /// The process (thread group) of task `tid`.
    pub(super) fn pid_of(&mut self, tid: i32) -> i32 {
        if let Some(&p) = self.tgid.get(&tid) {
            return p;
        }
        let pid = procfs::tgid(tid).unwrap_or(tid);
        self.tgid.insert(tid, pid);
        self.processes
            .entry(pid)
            .or_insert_with(|| first_seen(pid, procfs::comm(pid).unwrap_or_else(|| "?".into())));
        pid
    }

    /// The target called `name` (a /proc/PID/fd link), found or added.
    /// The filesystem type of directory `dir`, looked up once per directory.
    pub(super) fn fs_of(&mut self, dir: &std::path::Path) -> Option<String> {
        if let Some(f) = self.fs_by_dir.get(dir) {
            return f.clone();
        }
        let f = self.fs_types.of(dir);
        self.fs_by_dir.insert(dir.to_path_buf(), f.clone());
        f
    }

    pub(super) fn target(&mut self, name: &str) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        // Past TARGETS distinct targets, a path's calls go to one row for its directory:
        // memory and the report stay bounded however many files a command touches.
        if self.targets.len() >= TARGETS && name.starts_with('/') {
            let dir = std::path::Path::new(name)
                .parent()
                .map_or("/".into(), |d| d.display().to_string());
            let folded = format!("{}/* (more files, folded)", dir.trim_end_matches('/'));
            let i = match self.by_name.get(&folded) {
                Some(&i) => i,
                None => {
                    let fs = self.fs_of(std::path::Path::new(&dir));
                    self.targets.push(Target {
                        name: folded.clone(),
                        kind: Kind::File,
                        fs,
                        family: None,
                    });
                    self.by_name.insert(folded, self.targets.len() - 1);
                    self.targets.len() - 1
                }
            };
            *self.folded.entry(i).or_default() += 1;
            self.by_name.insert(name.to_string(), i);
            return i;
        }
        let kind = if name.starts_with("pipe:[") {
            Kind::Pipe
        } else if name.starts_with("socket:[") {
            Kind::Socket
        } else if name == "/dev/null" {
            Kind::DevNull
        } else if name.starts_with("/dev/pts/") || name.starts_with("/dev/tty") {
            Kind::Tty
        } else if name == "anonymous memory" || name == "mappings" {
            Kind::Memory
        } else if name.starts_with('/') {
            match std::fs::metadata(name) {
                Ok(m) if m.is_file() => Kind::File,
                Ok(m) if m.is_dir() => Kind::Directory,
                Ok(_) => Kind::Device,
                Err(_) => Kind::File,
            }
        } else {
            Kind::Other
        };
        let fs = matches!(kind, Kind::File | Kind::Directory)
            .then(|| {
                let p = std::path::Path::new(name);
                let dir = if kind == Kind::Directory {
                    p
                } else {
                    p.parent().unwrap_or(p)
                };
                self.fs_of(dir)
            })
            .flatten();
        let family = name
            .strip_prefix("socket:[")
            .and_then(|n| n.strip_suffix(']'))
            .and_then(|n| n.parse().ok())
            .and_then(crate::sys::sockets::family_of_inode)
            .map(str::to_string);
        self.targets.push(Target {
            name: name.to_string(),
            kind,
            fs,
            family,
        });
        let i = self.targets.len() - 1;
        self.by_name.insert(name.to_string(), i);
        i
    }

    /// Descriptors made by a call the eBPF tracer watches without counting (pipe2,
    /// socket, socketpair, accept): named as /proc names them while the process still
    /// has them, else `pipe:[ebpf-N]` / `socket:[ebpf-N]`, one name per call.
    pub(super) fn created(
        &mut self,
        tid: i32,
        fds: &[i32],
        what: crate::sys::trace::Created,
        names: &[Option<String>],
    ) {
        use crate::sys::trace::Created;
        let pid = self.pid_of(tid);
        self.made += 1;
        let (prefix, family) = match what {
            Created::Pipe => ("pipe", None),
            Created::Socket(f) => ("socket", f),
        };
        // A pipe's two ends are one pipe: one name, whichever end /proc still showed.
        let pipe = names
            .iter()
            .flatten()
            .find(|n| n.starts_with("pipe:"))
            .cloned()
            .filter(|_| prefix == "pipe");
        for (i, &fd) in fds.iter().enumerate() {
            let name = pipe
                .clone()
                .or_else(|| names.get(i).cloned().flatten())
                .filter(|n| n.starts_with(prefix))
                .unwrap_or_else(|| match (prefix, i) {
                    ("pipe", _) | (_, 0) => format!("{prefix}:[ebpf-{}]", self.made),
                    _ => format!("{prefix}:[ebpf-{}.{i}]", self.made),
                });
            let t = self.target(&name);
            if self.targets[t].family.is_none() {
                self.targets[t].family = family.map(str::to_string);
            }
            self.set_fd(pid, fd, Fd::at(t));
        }
    }

    /// The descriptors and working directory `pid` had when its program started (the
    /// eBPF tracer's view, taken as soon as it started).
    pub(super) fn learn_process(&mut self, pid: i32, seen: &crate::sys::trace::Seen) {
        if let Some(cwd) = &seen.cwd {
            self.cwd.insert(pid, cwd.clone());
        }
        if seen.cwd.is_none() && seen.fds.is_empty() {
            return; // gone before the tracer looked: what it inherited stands
        }
        let now = seen
            .fds
            .iter()
            .map(|(fd, name, pos)| (*fd, (name.clone(), *pos)))
            .collect();
        self.early.insert(pid, now);
    }

    /// What `fd` of `pid` is: known, else learnt from /proc/PID/fd and fdinfo.
    pub(super) fn fd(&mut self, pid: i32, fd: i32) -> Option<Fd> {
        if let Some(f) = self.fds.get(&pid).and_then(|t| t.get(&fd)) {
            return Some(*f);
        }
        // Under eBPF the process may have moved on since the call: what it had when
        // its program started comes first.
        let early = self.early.get(&pid).and_then(|e| e.get(&fd)).cloned();
        let (name, pos) = match early {
            Some(seen) if !self.ptrace => seen,
            _ => procfs::fd(pid, fd)?,
        };
        let target = self.target(&name);
        let f = Fd {
            target,
            pos,
            end: None,
            after_lseek: false,
        };
        self.fds.entry(pid).or_default().insert(fd, f);
        Some(f)
    }

    pub(super) fn set_fd(&mut self, pid: i32, fd: i32, f: Fd) {
        // Most calls update a descriptor already known: in place, without an insert.
        match self.fds.get_mut(&pid).and_then(|t| t.get_mut(&fd)) {
            Some(slot) => *slot = f,
            None => {
                self.fds.entry(pid).or_default().insert(fd, f);
            }
        }
    }

    pub(super) fn op(&mut self, pid: i32, target: usize, op: Op) -> &mut OpStats {
        let s = self.ops.entry((pid, target, op)).or_default();
        match self.interval.take() {
            Some(Interval {
                ns,
                switched: false,
            }) => s.gaps.add(ns),
            Some(Interval { ns, switched: true }) => s.waited.add(ns),
            None => {}
        }
        s
    }

    /// `tid` started a new program (`comm`, 32-bit or not, what the tracer noted of it
    /// and what it had then, where the tracer saw them).
    pub(super) fn exec(
        &mut self,
        tid: i32,
        comm: Option<&str>,
        (program32, note): (Option<bool>, Option<String>),
        seen: Option<&crate::sys::trace::Seen>,
    ) {
        if let Some(c) = comm {
            // Seen in the kernel: the process may be gone from /proc by now.
            self.processes
                .entry(tid)
                .or_insert_with(|| first_seen(tid, c.to_string()));
            self.tgid.insert(tid, tid);
        }
        let pid = self.pid_of(tid);
        if program32 == Some(true) {
            self.notes.insert(format!(
                "pid {pid} ran the 32-bit program {}: its system calls were not traced",
                comm.unwrap_or("?")
            ));
        } else if let Some(n) = note {
            self.notes.insert(n);
        }
        // The new program keeps the descriptors without close-on-exec: learn
        // them again from /proc when used.
        let kept = self.fds.remove(&pid);
        self.rings.retain(|&(p, _), _| p != pid);
        if !self.ptrace {
            // The standard descriptors as known before the exec (what it
            // inherited), then what /proc says now.
            let std: IntMap<i32, Fd> = kept
                .unwrap_or_default()
                .into_iter()
                .filter(|(fd, _)| (0..3).contains(fd))
                .collect();
            self.fds.insert(pid, std);
            // Read later than they happen, its calls may find its descriptors
            // closed and the process gone: what the tracer saw at the exec.
            if let Some(seen) = seen {
                self.learn_process(pid, seen);
            }
        }
        let now = comm.map(str::to_string).or_else(|| procfs::comm(pid));
        if let Some(c) = now
            && let Some(p) = self.processes.get_mut(&pid)
            && p.last != c
        {
            p.execs += 1;
            p.comm = Process::label(&p.first, &c, p.execs);
            p.last = c;
        }
    }

    /// `tid` of process `pid` started from `parent` (the eBPF tracer's view: a new
    /// process starts with its parent's descriptors and working directory).
    pub(super) fn task(&mut self, tid: i32, parent: i32, pid: i32, comm: Option<&str>) {
        self.tgid.insert(tid, pid);
        if pid == tid {
            // A new process starts with its parent's descriptors. Its own calls may
            // have come first (preload: the child runs, and its ring is read, before
            // the parent's fork stop is handled): what it opened itself stays.
            let from = self.pid_of(parent);
            if let Some(t) = self.fds.get(&from).cloned() {
                let own = self.fds.entry(pid).or_default();
                for (fd, f) in t {
                    own.entry(fd).or_insert(f);
                }
            }
            if let Some(e) = self.early.get(&from).cloned() {
                self.early.insert(pid, e);
            }
            if let Some(c) = self.cwd.get(&from).cloned() {
                self.cwd.insert(pid, c);
            }
        }
        let comm = comm.unwrap_or("?").to_string();
        self.processes
            .entry(pid)
            .or_insert_with(|| first_seen(pid, comm));
    }
}

/// Process `pid`, first seen, with the CPUs it may run on.
fn first_seen(pid: i32, comm: String) -> Process {
    Process {
        cpus: procfs::status_text(Some(pid), "Cpus_allowed_list:"),
        ..Process::new(pid, comm)
    }
}
