//! What a traced program did with I/O system calls: per process, target and operation,
//! the calls, bytes, a power-of-two histogram of request sizes, offsets (sequential or
//! random), short reads, bytes read again; and the patterns findings are made of
//! (lseek+read pairs, opens of one path, stat storms, fsyncs per write, read-then-write
//! copies, pipe capacities). Built from [`Event`]s; names no probe.

use crate::names::Named;
use crate::sys::trace::Event;
use crate::sys::trace::Memory;
use crate::sys::trace::calls::{Family, Syscall};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a descriptor refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Directory,
    Pipe,
    Socket,
    Tty,
    DevNull,
    Device,
    Memory,
    Other,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Directory => "directory",
            Kind::Pipe => "pipe",
            Kind::Socket => "socket",
            Kind::Tty => "tty",
            Kind::DevNull => "/dev/null",
            Kind::Device => "device",
            Kind::Memory => "memory",
            Kind::Other => "other",
        }
    }
}

/// A file, pipe, socket… that calls were made on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The path, or `pipe:[inode]`, `socket:[inode]`, `anonymous memory`.
    pub name: String,
    pub kind: Kind,
    /// The filesystem type holding a file or directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs: Option<String>,
    /// A socket's family as the socket probe names it (unix, tcp, unix-dgram, udp),
    /// looked up while the socket was open; absent when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
}

impl Target {
    /// "path (ext4)", "pipe:[123]", "socket:[456] (tcp)".
    pub fn label(&self) -> String {
        match (&self.fs, &self.family) {
            (Some(x), _) | (None, Some(x)) => format!("{} ({x})", self.name),
            (None, None) => self.name.clone(),
        }
    }
}

/// Figures of one operation on one target by one process.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OpStats {
    pub calls: u64,
    /// Bytes moved (the sum of successful returns of data calls; mapped length for mmap).
    pub bytes: u64,
    pub errors: u64,
    /// Requested sizes: calls per power of two (key: the bucket's lower bound in bytes).
    pub sizes: BTreeMap<u64, u64>,
    /// Data calls at the offset the previous one ended at, and elsewhere.
    pub sequential: u64,
    pub random: u64,
    /// Reads that returned less than asked (not counting end of file), and at end of
    /// file (0).
    pub short: u64,
    pub eof: u64,
    /// Bytes of this read that the process had already read from the same file.
    pub reread_bytes: u64,
    /// Calls right after an lseek on the same descriptor (lseek+read: pread would do).
    pub after_lseek: u64,
}

impl OpStats {
    /// The request size half the calls are at or below (the histogram's median bucket).
    pub fn typical_size(&self) -> Option<u64> {
        let mut left = self.sizes.values().sum::<u64>().div_ceil(2);
        for (&b, &n) in &self.sizes {
            if n >= left {
                return Some(b);
            }
            left -= n;
        }
        None
    }
}

impl Process {
    pub fn new(pid: i32, comm: String) -> Process {
        Process {
            pid,
            first: comm.clone(),
            last: comm.clone(),
            comm,
            execs: 0,
        }
    }

    /// The label after `execs` execs from `first` to `last` (the names in between are
    /// not kept: what the process is, and where it came from, are).
    fn label(first: &str, last: &str, execs: u32) -> String {
        match execs {
            0 => last.to_string(),
            _ if first == last => format!("{last} ({execs} execs)"),
            1 => format!("{first} → {last}"),
            _ => format!("{first} → … → {last}"),
        }
    }
}

/// A process seen in the trace.
#[derive(Debug, Clone, Serialize)]
pub struct Process {
    pub pid: i32,
    /// The label: the program's name, or the programs it ran ("sh → cat", "make → … →
    /// cc"); a chain that comes back to its first name is that name with its count of
    /// execs ("python3 (6 execs)": a pyenv shim, `env`, bash and pyenv before Python).
    pub comm: String,
    /// The first and the last program's names (the label is made from them).
    #[serde(skip)]
    first: String,
    #[serde(skip)]
    last: String,
    /// Programs it changed to (execve).
    pub execs: u32,
}

/// fsyncs on one target: how many, and the writes and bytes before each.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Syncs {
    pub syncs: u64,
    pub writes: u64,
    pub bytes: u64,
}

/// The whole profile.
#[derive(Debug, Default)]
pub struct Profile {
    pub processes: BTreeMap<i32, Process>,
    pub targets: Vec<Target>,
    /// (pid, target, operation) → figures.
    pub ops: BTreeMap<(i32, usize, &'static str), OpStats>,
    /// (pid, path) → successful opens.
    pub opens: BTreeMap<(i32, String), u64>,
    /// (pid, path) → stat-family calls naming it.
    pub stats: BTreeMap<(i32, String), u64>,
    /// (pid, target) → fsyncs and the writes between them.
    pub syncs: BTreeMap<(i32, usize), Syncs>,
    /// (pid, source, destination) → read-then-write pairs and bytes.
    pub copies: BTreeMap<(i32, usize, usize), (u64, u64)>,
    /// Pipes whose capacity was set: target → granted bytes.
    pub pipe_sizes: BTreeMap<usize, u64>,
    /// Calls per system call name (every process and target), to check against strace.
    pub counts: BTreeMap<&'static str, u64>,
    /// What the report must say about how the command ran under trace: a program whose
    /// calls could not be seen, privileges dropped, ptrace refused.
    pub notes: std::collections::BTreeSet<String>,
    /// Per-directory rows past [`TARGETS`] targets: target → files folded into it.
    pub folded: BTreeMap<usize, u64>,
    by_name: HashMap<String, usize>,
    tgid: HashMap<i32, i32>,
    fds: HashMap<i32, HashMap<i32, Fd>>,
    /// Per target: byte ranges read so far, merged.
    read: HashMap<usize, Vec<(u64, u64)>>,
    /// Per task: the last read (source, bytes) when a copy may follow.
    last_read: HashMap<i32, (usize, u64)>,
    /// Per (pid, target): writes and bytes since the last fsync.
    unsynced: HashMap<(i32, usize), (u64, u64)>,
    /// io_uring rings: (pid, descriptor) → layout and where they are mapped.
    rings: HashMap<(i32, i32), super::uring::Ring>,
    /// The memory of the call being added.
    mem: Memory,
    /// The calls some of whose memory the in-kernel tracer had not copied.
    uncopied: BTreeSet<&'static str>,
    /// Each call is seen while its task is stopped at it (ptrace): its /proc entries
    /// are read then. Otherwise (eBPF, preload) calls are read a little later.
    ptrace: bool,
    /// The command runs as a ptrace tracee (ptrace, preload): setuid programs lose
    /// their privileges, its own ptrace calls fail.
    traced: bool,
    /// Working directories seen when programs started (eBPF).
    cwd: HashMap<i32, String>,
    /// Calls that made descriptors, seen so far (eBPF).
    made: u64,
    /// Per process, its descriptors when its program started: (name, position), used
    /// when first met (eBPF).
    early: HashMap<i32, HashMap<i32, (String, u64)>>,
    /// Filesystem types by directory.
    fs_by_dir: HashMap<std::path::PathBuf, Option<String>>,
}

impl Profile {
    /// The path at `addr` in the calling task, or, where there is none (NULL or "":
    /// AT_EMPTY_PATH, utimensat(fd, NULL)), the target of descriptor `fd`.
    fn named(&mut self, pid: i32, addr: u64, fd: i32) -> String {
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
    fn socket_data(&mut self, pid: i32, tid: i32, sys: Syscall, a: [u64; 6], ret: i64) {
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

    /// io_submit: each submitted iocb on its own descriptor (reads, writes, syncs),
    /// and the call itself on the AIO context.
    fn aio_submit(&mut self, pid: i32, a: [u64; 6], ret: i64) {
        let ok = ret >= 0;
        for (fd, op, bytes) in iocbs(&self.mem, a[2], if ok { ret as u64 } else { 0 }) {
            if let Some(f) = self.fd(pid, fd) {
                let s = self.op(pid, f.target, op);
                s.calls += 1;
                s.bytes += bytes;
                *s.sizes.entry(bucket(bytes)).or_default() += 1;
            }
        }
        let t = self.target("aio context");
        let s = self.op(pid, t, "io_submit");
        s.calls += 1;
        s.errors += u64::from(!ok);
    }

    /// The `n` requests an io_uring_enter submitted, each on its own descriptor.
    fn uring_submitted(&mut self, pid: i32, a: [u64; 6], n: u64) {
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
                        *s.sizes.entry(bucket(bytes)).or_default() += 1;
                    }
                }
            }
            Err(why) => {
                self.notes.insert(uring_note(pid, why));
            }
        }
    }

    /// A namespace or metadata call, on the path it names (for a rename or a link, the
    /// existing one).
    fn path_call(&mut self, pid: i32, sys: Syscall, a: [u64; 6], ok: bool) {
        let name = sys.name();
        let addr = a[sys.path_arg().unwrap_or(0)];
        let path = self.named(pid, addr, a[0] as i32);
        let t = self.target(&path);
        let s = self.op(pid, t, name);
        s.calls += 1;
        s.errors += u64::from(!ok);
    }
}

/// Distinct targets kept one row each; past them, files get a row per directory
/// (50,000 files took 226 MB and a 100 MB JSON with a row each).
pub const TARGETS: usize = 4096;

/// What ioprobe knows of one open descriptor.
#[derive(Debug, Clone, Copy)]
struct Fd {
    target: usize,
    /// The file position (read/write/lseek move it).
    pos: u64,
    /// Where the last data call on it ended (for sequential or random).
    end: Option<u64>,
    after_lseek: bool,
}

impl Fd {
    /// A descriptor just opened on `target`, at offset 0.
    fn at(target: usize) -> Fd {
        Fd {
            target,
            pos: 0,
            end: None,
            after_lseek: false,
        }
    }
}

/// The size bucket (a power of two, 0 for 0) of a request of `n` bytes.
pub fn bucket(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 << (63 - n.leading_zeros())
    }
}

/// `p` without its `.` components and doubled slashes (`..` is kept: a symbolic link
/// may stand before it).
fn normal(p: &std::path::Path) -> String {
    p.components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect::<std::path::PathBuf>()
        .to_string_lossy()
        .into_owned()
}

fn read_link(path: String) -> Option<String> {
    std::fs::read_link(path)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

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

    /// The process (thread group) of task `tid`.
    fn pid_of(&mut self, tid: i32) -> i32 {
        if let Some(&p) = self.tgid.get(&tid) {
            return p;
        }
        let pid =
            crate::sys::trace::proc_field(&format!("/proc/{tid}/status"), "Tgid:").unwrap_or(tid);
        self.tgid.insert(tid, pid);
        self.processes.entry(pid).or_insert_with(|| {
            Process::new(
                pid,
                crate::sys::trace::comm_of(pid).unwrap_or_else(|| "?".into()),
            )
        });
        pid
    }

    /// The target called `name` (a /proc/PID/fd link), found or added.
    /// The filesystem type of directory `dir`, looked up once per directory (a
    /// lookup reads /proc/self/mountinfo).
    fn fs_of(&mut self, dir: &std::path::Path) -> Option<String> {
        if let Some(f) = self.fs_by_dir.get(dir) {
            return f.clone();
        }
        let f = crate::sys::machine::filesystem_of(dir).map(|f| f.fs_type);
        self.fs_by_dir.insert(dir.to_path_buf(), f.clone());
        f
    }

    fn target(&mut self, name: &str) -> usize {
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
                    let fs = crate::sys::machine::filesystem_of(std::path::Path::new(&dir))
                        .map(|f| f.fs_type);
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
    fn created(
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
    fn learn_process(&mut self, pid: i32, seen: &crate::sys::trace::Seen) {
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
    fn fd(&mut self, pid: i32, fd: i32) -> Option<Fd> {
        if let Some(f) = self.fds.get(&pid).and_then(|t| t.get(&fd)) {
            return Some(*f);
        }
        // Under eBPF the process may have moved on since the call: what it had when
        // its program started comes first.
        let early = self.early.get(&pid).and_then(|e| e.get(&fd)).cloned();
        let (name, pos) = match early {
            Some(seen) if !self.ptrace => seen,
            _ => crate::sys::trace::Seen::fd(pid, fd)?,
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

    fn set_fd(&mut self, pid: i32, fd: i32, f: Fd) {
        self.fds.entry(pid).or_default().insert(fd, f);
    }

    fn op(&mut self, pid: i32, target: usize, op: &'static str) -> &mut OpStats {
        self.ops.entry((pid, target, op)).or_default()
    }

    /// After the last event: the note that says how many files were folded, if any.
    pub fn finish(&mut self) {
        if !self.uncopied.is_empty() {
            let calls = self.uncopied.iter().copied().collect::<Vec<_>>().join(", ");
            self.notes.insert(format!(
                "the eBPF tracer copies paths, iovec arrays (up to 32), msghdrs and io_uring parameters, not what {calls} also point to: those calls are counted, but the sizes or requests read from that memory are not (--tracer ptrace reads them)"
            ));
        }
        if !self.folded.is_empty() {
            let files: u64 = self.folded.values().sum();
            self.notes.insert(format!(
                "past {TARGETS} targets, {files} more files were folded into {} per-directory rows (\"DIR/* (more files, folded)\"): their opens, stats and re-reads are not told apart",
                self.folded.len()
            ));
        }
    }

    /// Takes one event into the profile.
    pub fn add(&mut self, e: &Event) {
        match *e {
            Event::Call {
                tid,
                call,
                args,
                ret,
                ref mem,
            } => {
                self.mem = mem.clone();
                self.call(tid, call, args, ret);
                if self.mem.missed() {
                    self.uncopied.insert(call.name());
                }
            }
            Event::Exec {
                tid,
                ref comm,
                program32,
                ref note,
                ref seen,
            } => self.exec(
                tid,
                comm.as_deref(),
                (program32, note.clone()),
                seen.as_ref(),
            ),
            Event::Created {
                tid,
                ref fds,
                what,
                ref names,
            } => self.created(tid, fds, what, names),
            Event::Task {
                tid,
                parent,
                pid: Some(pid),
                ref comm,
            } => self.task(tid, parent, pid, comm.as_deref()),
            Event::Task { pid: None, .. } => {}
            Event::Exit { tid } => {
                self.tgid.remove(&tid);
                self.last_read.remove(&tid);
            }
        }
    }

    /// `tid` started a new program (`comm`, 32-bit or not, what the tracer noted of it
    /// and what it had then, where the tracer saw them).
    fn exec(
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
                .or_insert_with(|| Process::new(tid, c.to_string()));
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
            let std: HashMap<i32, Fd> = kept
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
        let now = comm
            .map(str::to_string)
            .or_else(|| crate::sys::trace::comm_of(pid));
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
    fn task(&mut self, tid: i32, parent: i32, pid: i32, comm: Option<&str>) {
        self.tgid.insert(tid, pid);
        if pid == tid {
            // A new process starts with its parent's descriptors.
            let from = self.pid_of(parent);
            if let Some(t) = self.fds.get(&from).cloned() {
                self.fds.insert(pid, t);
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
            .or_insert_with(|| Process::new(pid, comm));
    }

    fn call(&mut self, tid: i32, sys: Syscall, a: [u64; 6], ret: i64) {
        let name = sys.name();
        *self.counts.entry(name).or_default() += 1;
        let pid = self.pid_of(tid);
        if sys == Syscall::Ptrace {
            if !self.traced {
                return; // no tracer of ioprobe's stands in its way
            }
            self.notes.insert(format!(
                "pid {pid} called ptrace, which fails under ioprobe trace (a process has one tracer)"
            ));
            return;
        }
        let fd0 = a[0] as i32;
        let ok = ret >= 0;
        let c = Call {
            pid,
            tid,
            sys,
            name,
            a,
            ret,
            ok,
            fd0,
        };
        match sys.family() {
            Family::Data => self.data_call(c),
            Family::Lseek => self.lseek_call(c),
            Family::Open => self.open_call(c),
            Family::Close => self.close_call(c),
            Family::Dup => {
                if ok && let Some(f) = self.fd(pid, fd0) {
                    self.set_fd(pid, ret as i32, f);
                }
            }
            Family::Sync => self.sync_call(c),
            Family::Copy => self.copy_call(c),
            Family::Mmap => self.mmap_call(c),
            Family::UringSetup => self.uring_setup(c),
            Family::Mapping => {
                let t = self.target("mappings");
                let s = self.op(pid, t, name);
                s.calls += 1;
                s.bytes += a[1];
                s.errors += u64::from(!ok);
            }
            Family::Fcntl => self.fcntl_call(c),
            Family::OnFd => self.fd_call(c),
            Family::Socket => self.socket_data(pid, tid, sys, a, ret),
            Family::AioSubmit => self.aio_submit(pid, a, ret),
            Family::Context => self.context_call(c),
            Family::Path => self.path_call(pid, sys, a, ok),
            Family::Stat => self.stat_call(c),
            Family::Ptrace => {}
        }
    }
}

/// One traced call's facts, as the per-family methods below take them.
#[derive(Clone, Copy)]
struct Call {
    pid: i32,
    tid: i32,
    /// The call, decoded by the tracer.
    sys: Syscall,
    /// Its name (the operation its calls are counted under).
    name: &'static str,
    a: [u64; 6],
    ret: i64,
    ok: bool,
    fd0: i32,
}

/// What each family of traced calls adds to the profile.
impl Profile {
    /// `read` | `write` | `pread64` | `pwrite64` | `readv` | `writev` | `preadv` | `pwritev` | `preadv2` | `pwritev2`.
    fn data_call(&mut self, c: Call) {
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
    fn pair_reads_and_writes(
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
    fn lseek_call(&mut self, c: Call) {
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

    /// `open` | `openat` | `openat2` | `creat`.
    fn open_call(&mut self, c: Call) {
        let Call {
            pid,
            sys,
            name,
            a,
            ret,
            ok,
            ..
        } = c;
        let path_arg = a[sys.path_arg().unwrap_or(1)];
        if ok {
            let fd = ret as i32;
            let Some(name_now) = self.opened(pid, sys, a, fd) else {
                return;
            };
            let t = self.target(&name_now);
            self.fds.entry(pid).or_default().remove(&fd);
            self.set_fd(pid, fd, Fd::at(t));
            if !self.folded.contains_key(&t) {
                *self.opens.entry((pid, name_now)).or_default() += 1;
            }
            self.op(pid, t, name).calls += 1;
        } else {
            let path = self.mem.string(path_arg).unwrap_or_else(|| "?".into());
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
    fn opened(&mut self, pid: i32, sys: Syscall, a: [u64; 6], fd: i32) -> Option<String> {
        let link = |fd: String| read_link(format!("/proc/{pid}/{fd}"));
        // Seen while its task is stopped at it (ptrace, and preload's traced calls):
        // /proc says, in one readlink.
        if self.ptrace || matches!(self.mem, Memory::Live(_)) {
            return link(format!("fd/{fd}"));
        }
        let path = self.mem.string(a[sys.path_arg().unwrap_or(1)])?;
        // The name /proc would give: symbolic links resolved, while the file is there.
        let real = |p: std::path::PathBuf| {
            std::fs::canonicalize(&p).map_or_else(|_| normal(&p), |c| c.display().to_string())
        };
        if path.starts_with('/') {
            return Some(real(path.into()));
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
    fn close_call(&mut self, c: Call) {
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
    fn sync_call(&mut self, c: Call) {
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

    /// `sendfile` | `splice` | `tee` | `copy_file_range` | `vmsplice`.
    fn copy_call(&mut self, c: Call) {
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
            *s.sizes.entry(bucket(asked)).or_default() += 1;
        }
    }

    /// `mmap`.
    fn mmap_call(&mut self, c: Call) {
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
            *s.sizes.entry(bucket(a[1])).or_default() += 1;
        }
        if ok && let Some(r) = self.rings.get_mut(&(pid, fd)) {
            r.mapped(a[5], ret as u64);
        }
    }

    /// `io_uring_setup`.
    fn uring_setup(&mut self, c: Call) {
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

    /// `fcntl`.
    fn fcntl_call(&mut self, c: Call) {
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
            "fcntl(F_SETPIPE_SZ)"
        } else {
            "fcntl"
        };
        if let Some(f) = self.fd(pid, fd0) {
            let s = self.op(pid, f.target, op);
            s.calls += 1;
            s.errors += u64::from(!ok);
            if op != "fcntl" && ok {
                self.pipe_sizes.insert(f.target, ret as u64);
            }
        }
    }

    /// `fstat` | `getdents64` | `io_uring_enter` | `fadvise64` | `readahead` | `fallocate` | `ftruncate` | `syncfs` | `ioctl` | `flock` | `fchmod` | `fchown` | `fsetxattr` | `fgetxattr` | `flistxattr` | `fremovexattr` | `fstatfs`.
    fn fd_call(&mut self, c: Call) {
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

    /// `io_getevents` | `sync`.
    fn context_call(&mut self, c: Call) {
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

    /// `stat` | `lstat` | `newfstatat` | `statx`.
    fn stat_call(&mut self, c: Call) {
        let Call {
            pid,
            sys,
            a,
            ok,
            fd0,
            ..
        } = c;
        let addr = a[sys.path_arg().unwrap_or(1)];
        let path = self.named(pid, addr, fd0);
        let t = self.target(&path);
        if !self.folded.contains_key(&t) {
            *self.stats.entry((pid, path.clone())).or_default() += 1;
        }
        let s = self.op(pid, t, "stat");
        s.calls += 1;
        s.errors += u64::from(!ok);
    }
}

/// The note for a process whose io_uring requests cannot be read.
fn uring_note(pid: i32, why: &str) -> String {
    format!("pid {pid}: {why}, so the bytes its io_uring requests move are not counted")
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// A struct msghdr's iovec array and count (x86-64 and aarch64 layout: msg_iov at 16,
/// msg_iovlen at 24).
pub(super) fn msghdr_iov(mem: &Memory, addr: u64) -> (u64, u64) {
    mem.peek(addr, 56)
        .map_or((0, 0), |b| (u64_at(&b, 16), u64_at(&b, 24)))
}

/// The bytes of the first `n` messages of a struct mmsghdr array at `addr` (64 bytes
/// each: a msghdr, then msg_len).
fn mmsg_total(mem: &Memory, addr: u64, n: u64) -> u64 {
    let n = n.min(1024) as usize;
    mem.peek(addr, 64 * n).map_or(0, |b| {
        b.chunks_exact(64)
            .map(|c| u32::from_ne_bytes(c[56..60].try_into().unwrap_or([0; 4])) as u64)
            .sum()
    })
}

/// The first `n` iocbs of an io_submit array of pointers at `addr`: (descriptor,
/// operation, bytes asked) each.
fn iocbs(mem: &Memory, addr: u64, n: u64) -> Vec<(i32, &'static str, u64)> {
    let n = n.min(1024) as usize;
    let Some(ptrs) = mem.peek(addr, 8 * n) else {
        return Vec::new();
    };
    (0..n)
        .filter_map(|i| {
            let cb = mem.peek(u64_at(&ptrs, 8 * i), 64)?;
            let opcode = u16::from_ne_bytes(cb[16..18].try_into().ok()?);
            let fd = u32::from_ne_bytes(cb[20..24].try_into().ok()?) as i32;
            let nbytes = u64_at(&cb, 32);
            let (op, bytes) = match opcode {
                0 => ("aio pread", nbytes),
                1 => ("aio pwrite", nbytes),
                7 => ("aio preadv", iov_total(mem, u64_at(&cb, 24), nbytes)),
                8 => ("aio pwritev", iov_total(mem, u64_at(&cb, 24), nbytes)),
                2 => ("aio fsync", 0),
                3 => ("aio fdsync", 0),
                _ => ("aio other", 0),
            };
            Some((fd, op, bytes))
        })
        .collect()
}

/// The total length of the `n` iovecs at `addr`.
pub(super) fn iov_total(mem: &Memory, addr: u64, n: u64) -> u64 {
    let n = n.min(1024) as usize;
    let Some(buf) = mem.peek(addr, 16 * n) else {
        return 0;
    };
    buf.chunks_exact(16)
        .map(|c| u64::from_ne_bytes(c[8..16].try_into().unwrap_or([0; 8])))
        .sum()
}

/// Bytes of [start, start+len) already in `ranges` (sorted, disjoint), then adds it.
pub fn overlap_then_merge(ranges: &mut Vec<(u64, u64)>, start: u64, len: u64) -> u64 {
    let end = start + len;
    let seen: u64 = ranges
        .iter()
        .map(|&(a, b)| b.min(end).saturating_sub(a.max(start)))
        .sum();
    let (mut lo, mut hi) = (start, end);
    ranges.retain(|&(a, b)| {
        if b < lo || a > hi {
            true
        } else {
            lo = lo.min(a);
            hi = hi.max(b);
            false
        }
    });
    let at = ranges.partition_point(|&(a, _)| a < lo);
    ranges.insert(at, (lo, hi));
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_labelled_by_its_program_and_its_exec_chain() {
        assert_eq!(Process::label("dd", "dd", 0), "dd");
        assert_eq!(Process::label("sh", "cat", 1), "sh → cat");
        assert_eq!(Process::label("make", "cc", 4), "make → … → cc");
        // A pyenv shim: python3 → env's bash → pyenv → … → python3.
        assert_eq!(Process::label("python3", "python3", 6), "python3 (6 execs)");
    }

    #[test]
    fn ranges_count_bytes_read_again() {
        let mut r = Vec::new();
        assert_eq!(overlap_then_merge(&mut r, 0, 100), 0);
        assert_eq!(overlap_then_merge(&mut r, 200, 100), 0);
        assert_eq!(overlap_then_merge(&mut r, 50, 200), 50 + 50);
        assert_eq!(r, vec![(0, 300)]);
        assert_eq!(overlap_then_merge(&mut r, 0, 300), 300);
        assert_eq!(overlap_then_merge(&mut r, 300, 10), 0);
        assert_eq!(r, vec![(0, 310)]);
    }

    #[test]
    fn sizes_fall_in_power_of_two_buckets() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(4095), 2048);
        assert_eq!(bucket(4096), 4096);
        let mut s = OpStats::default();
        for (b, n) in [(512, 3), (4096, 1), (65536, 1)] {
            s.sizes.insert(b, n);
        }
        assert_eq!(s.typical_size(), Some(512));
    }
}
