//! `ioprobe trace --tracer preload`: ptrace as the reference path runs it, plus a
//! library (`linux_preload.c`, built by build.rs) that LD_PRELOAD loads into the
//! command. The library makes the command's own read, write, pread, pwrite, lseek,
//! close and open calls through a page it maps at the address ioprobe chose for this
//! trace (the gate), from which the seccomp filter lets calls through without a
//! stop, and records each in a ring shared with ioprobe (a memfd). Every other call
//! stops as under plain ptrace, so the counts stay strace's. This module makes the
//! library's and the ring's memfds and the command's environment, reads the ring,
//! and holds the tracer's preload part ([`Preloaded`]: the loader's and library's own
//! calls, execs given the library, SIGCHLD as a descriptor).

use super::{Event, Maker, Memory, Pending, Seen, ptrace};
use crate::sys::syscall::Syscall;
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The library, as build.rs built it (empty where it was not built).
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/preload.so"));

/// The ring's layout; linux_preload.c has the same.
const VERSION: u64 = 1;
const SLOTS: u64 = 65536;
const SLOT: usize = 256;
const HEAD: usize = 4096;
const PATH_ROOM: usize = SLOT - 72;
/// Offsets in the head page of the producers' next slot and ioprobe's first unread.
const NEXT: usize = 64;
const DONE: usize = 128;

/// Where the gate's system call instruction ends (linux_preload.c's gate_code): a
/// task stopped there has made its call and holds the result.
#[cfg(target_arch = "x86_64")]
const AFTER_SYSCALL: u64 = 23;
#[cfg(not(target_arch = "x86_64"))]
const AFTER_SYSCALL: u64 = 32;

/// A slot's state (its first u32).
const IN_CALL: u32 = 1;
const RETURNED: u32 = 2;
const READ: u32 = 3;

/// The library and the ring of one trace.
pub struct Preload {
    library: OwnedFd,
    _ring_fd: OwnedFd,
    map: *mut u8,
    gate: u64,
    /// Slots before `done` are free; from `done` to `scanned`, those in `waiting`
    /// were reserved or in a call when last looked at (the rest are read).
    done: u64,
    scanned: u64,
    waiting: Vec<u64>,
    calls: HashMap<u64, Syscall>,
    /// Slots never filled by the end (their task died between reserving and calling).
    lost: u64,
    /// Calls read from the ring.
    calls_read: u64,
    /// Per task stopped for a signal just after its call through the gate: (slot,
    /// result), in case the signal ends it before the library records the result.
    signalled: HashMap<i32, (u64, i64)>,
}

// SAFETY: the mapping is owned by this value and only touched through it.
unsafe impl Send for Preload {}

impl Drop for Preload {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.map as *mut libc::c_void, ring_len()) };
    }
}

fn ring_len() -> usize {
    HEAD + SLOTS as usize * SLOT
}

/// A memfd named `name` (close-on-exec in ioprobe; the command opens it by path).
fn memfd(name: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: memfd_create takes a NUL-terminated name and flags.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Why this build or this libc cannot run the preload tracer, if it cannot.
fn unavailable() -> Option<String> {
    if LIBRARY.is_empty() {
        return Some("this build has no preload library".into());
    }
    if !cfg!(target_env = "gnu") {
        return Some("the preload library needs glibc".into());
    }
    // __libc_single_threaded and dlsym in libc itself: glibc 2.34.
    let v = glibc_version()?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    ((major, minor) < (2, 34)).then(|| format!("glibc {v} is older than 2.34"))
}

#[cfg(target_env = "gnu")]
fn glibc_version() -> Option<String> {
    // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    Some(v.to_string_lossy().into_owned())
}

#[cfg(not(target_env = "gnu"))]
fn glibc_version() -> Option<String> {
    None
}

impl Preload {
    /// The library in a memfd and an empty ring; Err: why the preload tracer cannot
    /// run here.
    pub fn new() -> io::Result<Preload> {
        if let Some(why) = unavailable() {
            return Err(io::Error::new(io::ErrorKind::Unsupported, why));
        }
        let library = memfd(c"ioprobe-preload.so")?;
        std::io::Write::write_all(&mut std::fs::File::from(library.try_clone()?), LIBRARY)?;
        let ring = memfd(c"ioprobe-trace-ring")?;
        // SAFETY: ftruncate on a descriptor we own.
        if unsafe { libc::ftruncate(ring.as_raw_fd(), ring_len() as libc::off_t) } == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new shared mapping of the whole ring memfd, owned by the value.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                ring.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut random = [0u8; 8];
        // SAFETY: getrandom writes at most 8 bytes into the local array.
        if unsafe { libc::getrandom(random.as_mut_ptr() as *mut libc::c_void, 8, 0) } == -1 {
            return Err(io::Error::last_os_error());
        }
        let p = Preload {
            library,
            _ring_fd: ring,
            map: map as *mut u8,
            gate: gate_address(u64::from_ne_bytes(random)),
            done: 0,
            scanned: 0,
            waiting: Vec::new(),
            calls: super::traced_calls().into_iter().collect(),
            lost: 0,
            calls_read: 0,
            signalled: HashMap::new(),
        };
        // SAFETY: the head page is mapped and 8-aligned; the command is not started.
        unsafe {
            (p.map as *mut u64).write(VERSION);
            (p.map as *mut u64).add(1).write(SLOTS);
        }
        Ok(p)
    }

    /// The gate's address: the filter lets calls made from that page through.
    pub fn gate(&self) -> u64 {
        self.gate
    }

    fn library_path(&self) -> String {
        format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.library.as_raw_fd()
        )
    }

    fn ring_path(&self) -> String {
        format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self._ring_fd.as_raw_fd()
        )
    }

    /// Whether `path` is one of this trace's own files (the library, the ring): the
    /// dynamic loader's and the library's calls on them are not the command's.
    pub fn is_own(&self, path: &str) -> bool {
        path == self.library_path() || path == self.ring_path()
    }

    /// The command's environment: ioprobe's, with the library appended to LD_PRELOAD
    /// and the ring named; the library puts LD_PRELOAD back and removes the rest
    /// before the program's code runs.
    pub fn environment(&self) -> io::Result<Vec<CString>> {
        use std::os::unix::ffi::OsStrExt;
        let was = std::env::var_os("LD_PRELOAD");
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| {
                k != "LD_PRELOAD" && k != "IOPROBE_TRACE_RING" && k != "IOPROBE_TRACE_PRELOAD_WAS"
            })
            .collect();
        let mut preload = was.clone().unwrap_or_default();
        if !preload.is_empty() {
            preload.push(" ");
        }
        preload.push(self.library_path());
        let mut restore = OsString::from(if was.is_some() { "=" } else { "-" });
        restore.push(was.unwrap_or_default());
        env.push(("LD_PRELOAD".into(), preload));
        env.push((
            "IOPROBE_TRACE_RING".into(),
            format!("{} {:x}", self.ring_path(), self.gate).into(),
        ));
        env.push(("IOPROBE_TRACE_PRELOAD_WAS".into(), restore));
        env.into_iter()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "an environment variable contains a NUL byte",
                    )
                })
            })
            .collect()
    }

    fn word(&self, offset: usize) -> &std::sync::atomic::AtomicU64 {
        // SAFETY: offsets inside the mapped head page, 8-aligned; the library
        // accesses these words atomically too.
        unsafe { std::sync::atomic::AtomicU64::from_ptr(self.map.add(offset) as *mut u64) }
    }

    fn state(&self, i: u64) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: slot `i % SLOTS` is inside the mapping, its state 4-aligned and
        // accessed atomically by the library too.
        unsafe {
            std::sync::atomic::AtomicU32::from_ptr(
                self.map.add(HEAD + (i % SLOTS) as usize * SLOT) as *mut u32
            )
        }
    }

    /// Slot `i`'s bytes (read once its state says returned, with acquire).
    fn slot(&self, i: u64) -> &[u8] {
        // SAFETY: inside the mapping; the library no longer writes a returned slot.
        unsafe {
            std::slice::from_raw_parts(self.map.add(HEAD + (i % SLOTS) as usize * SLOT), SLOT)
        }
    }

    /// The calls that returned since the last look, in the order their slots were
    /// taken (each task's in the order it made them), appended to `out`.
    pub fn read(&mut self, out: &mut std::collections::VecDeque<Event>) {
        use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
        let next = self.word(NEXT).load(Acquire);
        let mut still = Vec::new();
        let waiting = std::mem::take(&mut self.waiting);
        for i in waiting.into_iter().chain(self.scanned..next) {
            match self.state(i).load(Acquire) {
                RETURNED => {
                    if let Some(e) = self.decode(i) {
                        out.push_back(e);
                        self.calls_read += 1;
                    }
                    self.state(i).store(READ, Relaxed);
                }
                // Settled by `ended`.
                READ => {}
                _ => still.push(i),
            }
        }
        self.waiting = still;
        self.scanned = next;
        while self.done < next && self.state(self.done).load(Relaxed) == READ {
            self.state(self.done).store(0, Relaxed);
            self.done += 1;
        }
        self.word(DONE).store(self.done, Release);
    }

    /// The slot task `tid` is in a call in, if any.
    fn in_call(&self, tid: i32) -> Option<u64> {
        use std::sync::atomic::Ordering::Acquire;
        let next = self.word(NEXT).load(Acquire);
        self.waiting
            .iter()
            .copied()
            .chain(self.scanned..next)
            .find(|&i| {
                self.state(i).load(Acquire) == IN_CALL
                    && i32::from_ne_bytes(self.slot(i)[4..8].try_into().unwrap_or([0; 4])) == tid
            })
    }

    /// Task `tid` is stopped for a signal with its instruction pointer at `ip` and
    /// `ret` in the result register: when that is just after the gate's system call,
    /// its call returned `ret`, which is kept in case the signal ends the task.
    pub fn signalled(&mut self, tid: i32, ip: u64, ret: i64) {
        if ip != self.gate + AFTER_SYSCALL {
            return;
        }
        if let Some(i) = self.in_call(tid) {
            self.signalled.insert(tid, (i, ret));
        }
    }

    /// Task `tid` ended. A call it was still in is left out, as strace leaves out a
    /// call with no exit (SIGKILL in a read), unless the task was stopped for a
    /// signal just after the call returned (SIGPIPE after a write), as strace sees
    /// its exit: that call goes to `out`, with the result seen then.
    pub fn ended(&mut self, tid: i32, out: &mut std::collections::VecDeque<Event>) {
        use std::sync::atomic::Ordering::Relaxed;
        let returned = self.signalled.remove(&tid);
        while let Some(i) = self.in_call(tid) {
            if let Some((slot, ret)) = returned
                && slot == i
                && let Some(Event::Call {
                    tid,
                    call,
                    args,
                    mem,
                    ..
                }) = self.decode(i)
            {
                out.push_back(Event::Call {
                    tid,
                    call,
                    args,
                    ret,
                    mem,
                });
                self.calls_read += 1;
            }
            self.state(i).store(READ, Relaxed);
            self.waiting.retain(|&w| w != i);
        }
    }

    /// After the last task: what is read, and the slots never filled (lost calls).
    pub fn finish(&mut self, out: &mut std::collections::VecDeque<Event>) {
        self.read(out);
        self.lost += self.waiting.len() as u64;
        self.waiting.clear();
    }

    /// Slots reserved by a task that died before its call (their calls are missing).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Calls the library recorded (made without a stop).
    pub fn calls_read(&self) -> u64 {
        self.calls_read
    }

    /// Slot `i` as the call it records.
    fn decode(&self, i: u64) -> Option<Event> {
        let s = self.slot(i);
        let u32_at = |o: usize| u32::from_ne_bytes(s[o..o + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |o: usize| u64::from_ne_bytes(s[o..o + 8].try_into().unwrap_or([0; 8]));
        let tid = u32_at(4) as i32;
        let nr = u32_at(8) as i32 as i64 as u64;
        let path_len = (u32_at(12) as usize).min(PATH_ROOM);
        let ret = u64_at(16) as i64;
        let mut args = [0u64; 6];
        for (k, a) in args.iter_mut().enumerate() {
            *a = u64_at(24 + 8 * k);
        }
        let call = *self.calls.get(&nr)?;
        let mut parts = Vec::new();
        if path_len > 0
            && let Some(n) = call.path_arg()
        {
            parts.push((args[n], s[72..72 + path_len - 1].to_vec(), true));
        }
        Some(Event::Call {
            tid,
            call,
            args,
            ret,
            mem: Memory::Captured(parts, std::cell::Cell::new(false)),
        })
    }
}

impl Preload {
    /// For an exec by stopped task `tid` (of a dynamically linked program): the
    /// environment array `envp` it passes, with the library added as at the start,
    /// written below its stack pointer `sp` (memory the task does not use: below the
    /// red zone, and the exec replaces the stack when it succeeds). The array's
    /// address, to pass instead; the strings are the task's own, and three more.
    pub fn exec_environment(&self, tid: i32, envp: u64, sp: u64) -> io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let mem = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/{tid}/mem"))?;
        let (kept, was) = environment_of(tid, &mem, envp)?;
        let mut preload = was.clone().unwrap_or_default();
        if !preload.is_empty() {
            preload.push(b' ');
        }
        preload.extend_from_slice(self.library_path().as_bytes());
        let mut restore = if was.is_some() {
            b"=".to_vec()
        } else {
            b"-".to_vec()
        };
        restore.extend(was.unwrap_or_default());
        let strings: Vec<Vec<u8>> = [
            [b"LD_PRELOAD=".as_slice(), &preload].concat(),
            format!("IOPROBE_TRACE_RING={} {:x}", self.ring_path(), self.gate).into_bytes(),
            [b"IOPROBE_TRACE_PRELOAD_WAS=".as_slice(), &restore].concat(),
        ]
        .into_iter()
        .map(|mut v| {
            v.push(0);
            v
        })
        .collect();
        let text: usize = strings.iter().map(Vec::len).sum();
        let count = kept.len() + strings.len() + 1;
        // Below the x86_64 red zone (128 B) with room to spare, 16-aligned, and in
        // the stack's own mapping (posix_spawn's child runs on a small one, with
        // other memory of the parent's below it).
        let base = sp
            .checked_sub(4096 + (count * 8 + text) as u64)
            .ok_or_else(|| io::Error::other("no room below the stack pointer"))?
            & !15;
        if !in_one_mapping(tid, base, sp)? {
            return Err(io::Error::other("the stack mapping has no room"));
        }
        let mut block = Vec::with_capacity(count * 8 + text);
        let mut at = base + (count * 8) as u64;
        let mut ptrs = kept;
        for s in &strings {
            ptrs.push(at);
            at += s.len() as u64;
        }
        ptrs.push(0);
        for p in ptrs {
            block.extend_from_slice(&p.to_ne_bytes());
        }
        for s in strings {
            block.extend(s);
        }
        mem.write_all_at(&block, base)?;
        Ok(base)
    }
}

/// The preload tracer's part of [`Tracer`].
pub(super) struct Preloaded {
    pub(super) ring: Preload,
    /// SIGCHLD, blocked in this thread while the command runs, as a descriptor to
    /// wait on beside the ring; and the mask to restore.
    pub(super) sigchld: Option<(OwnedFd, libc::sigset_t)>,
    pub(super) makers: HashMap<u64, Maker>,
    /// (task, descriptor) open on the library or the ring.
    pub(super) own: HashSet<(i32, i32)>,
    /// Tasks given the library whose loader has not yet mapped its gate: only their
    /// opens may be of the library (the path is read from the task to tell).
    pub(super) loading: HashSet<i32>,
    /// The command's descriptors and working directory at its exec.
    pub(super) first: Option<Seen>,
}

impl Drop for Preloaded {
    fn drop(&mut self) {
        self.quiet();
    }
}

impl Preloaded {
    /// SIGCHLD blocked in this thread and readable from a descriptor: the trace loop
    /// then sleeps until a task stops or ends, or 2 ms pass, and reads the ring
    /// meanwhile. None where that cannot be set up (the loop then polls every 2 ms).
    pub(super) fn watch_sigchld() -> Option<(OwnedFd, libc::sigset_t)> {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: the sets are local; signalfd gets a valid set and returns a new
        // descriptor or -1; pthread_sigmask changes this thread's mask only.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGCHLD);
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) != 0 {
                return None;
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd == -1 {
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                return None;
            }
            Some((OwnedFd::from_raw_fd(fd), old))
        }
    }

    /// No task changed state: the ring's new calls into `queue` (true when there
    /// were some), else a sleep until SIGCHLD or 2 ms.
    pub(super) fn idle(&mut self, queue: &mut VecDeque<Event>) -> bool {
        let before = queue.len();
        self.ring.read(queue);
        if queue.len() > before {
            return true;
        }
        let Some((fd, _)) = &self.sigchld else {
            std::thread::sleep(std::time::Duration::from_millis(2));
            return false;
        };
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut buf = [0u8; 8 * 128];
        // SAFETY: poll on one local pollfd; reads into a local buffer of whole
        // signalfd_siginfo records from our non-blocking descriptor (SIGCHLD is a
        // standard signal: at most one is pending, and one read takes it).
        unsafe {
            if libc::poll(&mut pfd, 1, 2) > 0 {
                libc::read(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                );
            }
        }
        false
    }

    /// The trace is over: SIGCHLD as it was.
    pub(super) fn quiet(&mut self) {
        if let Some((_, old)) = self.sigchld.take() {
            // SAFETY: restores this thread's mask saved in `watch_sigchld`.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        }
    }

    /// Whether `call` by `tid` is on the trace's own files (opening them, or using
    /// a descriptor of theirs); `tid` is stopped at the call's entry.
    pub(super) fn own(&self, tid: i32, call: Syscall, args: &[u64; 6]) -> bool {
        let fd = match call {
            Syscall::Openat | Syscall::Open if self.loading.contains(&tid) => {
                let at = call.path_arg().unwrap_or(1);
                return Memory::Live(tid)
                    .string(args[at])
                    .is_some_and(|p| self.ring.is_own(&p));
            }
            // The gate's page, mapped by the library's constructor.
            Syscall::Mmap | Syscall::Munmap if args[0] == self.ring.gate() => return true,
            Syscall::Mmap => args[4],
            Syscall::Read
            | Syscall::Pread64
            | Syscall::Fstat
            | Syscall::Newfstatat
            | Syscall::Lseek
            | Syscall::Close => args[0],
            _ => return false,
        };
        !self.own.is_empty() && self.own.contains(&(tid, fd as i32))
    }

    /// An execve (`at`: execveat) by stopped `tid`: when its program is dynamically
    /// linked, the library is added to the environment it passes, as to the command's
    /// own (the library removes it again before the program's code runs). The
    /// environment array it passed, or None (not changed).
    pub(super) fn exec(&self, tid: i32, at: bool, args: &[u64; 6]) -> Option<Pending> {
        const AT_FDCWD: i32 = -100;
        let (dir, path) = if at {
            (args[0] as i32, args[1])
        } else {
            (AT_FDCWD, args[0])
        };
        let path = Memory::Live(tid).string(path)?;
        let target = if path.starts_with('/') {
            path
        } else if path.is_empty() {
            format!("/proc/{tid}/fd/{dir}")
        } else if dir == AT_FDCWD {
            format!("/proc/{tid}/cwd/{path}")
        } else {
            format!("/proc/{tid}/fd/{dir}/{path}")
        };
        dynamic(std::path::Path::new(&target)).ok()?;
        let mut r = regs(tid).ok()?;
        let (sp, envp) = stack_and_envp(&mut r, at);
        let old = *envp;
        *envp = self.ring.exec_environment(tid, old, sp).ok()?;
        set_regs(tid, &r).ok()?;
        Some(Pending::Exec { at, envp: old })
    }
}

/// Stopped task `tid`'s general registers.
pub(super) fn regs(tid: i32) -> io::Result<libc::user_regs_struct> {
    // SAFETY: user_regs_struct is plain data; all-zero is a valid value.
    let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    regset(tid, libc::PTRACE_GETREGSET, &mut r)?;
    Ok(r)
}

/// Sets stopped task `tid`'s general registers.
pub(super) fn set_regs(tid: i32, r: &libc::user_regs_struct) -> io::Result<()> {
    let mut copy = *r;
    regset(tid, libc::PTRACE_SETREGSET, &mut copy)
}

/// PTRACE_GETREGSET or PTRACE_SETREGSET of the general registers, through `r`.
fn regset(tid: i32, request: libc::c_uint, r: &mut libc::user_regs_struct) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: r as *mut _ as *mut libc::c_void,
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    ptrace(
        request,
        tid,
        libc::NT_PRSTATUS as usize,
        &mut iov as *mut _ as usize,
    )
    .map(|_| ())
}

/// The stack pointer and the register holding an execve's (`at`: execveat's)
/// environment array.
#[cfg(target_arch = "x86_64")]
pub(super) fn stack_and_envp(r: &mut libc::user_regs_struct, at: bool) -> (u64, &mut u64) {
    (r.rsp, if at { &mut r.r10 } else { &mut r.rdx })
}

/// The instruction pointer, and the register a call's result is returned in.
#[cfg(target_arch = "x86_64")]
pub(super) fn ip_and_result(r: &libc::user_regs_struct) -> (u64, i64) {
    (r.rip, r.rax as i64)
}

#[cfg(target_arch = "aarch64")]
pub(super) fn ip_and_result(r: &libc::user_regs_struct) -> (u64, i64) {
    (r.pc, r.regs[0] as i64)
}

#[cfg(target_arch = "aarch64")]
pub(super) fn stack_and_envp(r: &mut libc::user_regs_struct, at: bool) -> (u64, &mut u64) {
    (r.sp, &mut r.regs[if at { 3 } else { 2 }])
}

/// The environment array at `envp` in stopped task `tid` (`mem`, its memory): the
/// entries to keep (pointers to the task's own strings), and LD_PRELOAD's value if
/// it has one. Entries of a trace's (IOPROBE_TRACE_…) are dropped.
fn environment_of(
    tid: i32,
    mem: &std::fs::File,
    envp: u64,
) -> io::Result<(Vec<u64>, Option<Vec<u8>>)> {
    use std::os::unix::fs::FileExt;
    let mut kept = Vec::new();
    let mut was = None;
    if envp == 0 {
        return Ok((kept, was));
    }
    for i in 0..65536u64 {
        let mut b = [0u8; 8];
        mem.read_exact_at(&mut b, envp + 8 * i)?;
        let p = u64::from_ne_bytes(b);
        if p == 0 {
            break;
        }
        let mut head = [0u8; 26];
        let n = mem.read_at(&mut head, p).unwrap_or(0);
        let head = &head[..n];
        if head.starts_with(b"LD_PRELOAD=") {
            was = Some(super::super::live_string(tid, p + 11).unwrap_or_default());
        } else if !head.starts_with(b"IOPROBE_TRACE_RING=")
            && !head.starts_with(b"IOPROBE_TRACE_PRELOAD_WAS=")
        {
            kept.push(p);
        }
    }
    Ok((kept, was))
}

/// Whether `from..to` lies in one mapping of task `tid` (its /proc maps).
fn in_one_mapping(tid: i32, from: u64, to: u64) -> io::Result<bool> {
    let maps = std::fs::read_to_string(format!("/proc/{tid}/maps"))?;
    Ok(maps.lines().any(|l| {
        let range = l.split(' ').next().unwrap_or("");
        let mut ends = range
            .split('-')
            .map(|h| u64::from_str_radix(h, 16).unwrap_or(0));
        let (start, end) = (ends.next().unwrap_or(0), ends.next().unwrap_or(0));
        start <= from && to <= end
    }))
}

/// A page-aligned address, from `random`, in a range programs leave alone: above
/// AddressSanitizer's shadow and below where mmap and the stack start (x86_64); in
/// the lower half of a 39-bit address space (aarch64). If the program has something
/// there, the library finds the page taken and every call goes the traced way.
fn gate_address(random: u64) -> u64 {
    let (from, span) = if cfg!(target_arch = "x86_64") {
        (0x2000_0000_0000u64, 0x2000_0000_0000u64)
    } else {
        (0x40_0000_0000u64, 0x30_0000_0000u64)
    };
    (from + random % span) & !0xfff
}

/// Whether the program at `path` (an ELF, or a `#!` script's interpreter) is
/// dynamically linked, which LD_PRELOAD needs: Err says why not, or why it is not
/// known.
pub fn dynamic(path: &std::path::Path) -> Result<(), String> {
    let shown = || path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", shown()))?;
    // The ELF header and program headers, or a #! line, are in the first 4 KiB of
    // any program a linker made; a longer one is read up to 64 KiB.
    let mut head = vec![0u8; 4096];
    let n = read_up_to(&f, &mut head, 0);
    head.truncate(n);
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let interp = String::from_utf8_lossy(line);
        let Some(interp) = interp.split_whitespace().next() else {
            return Err(format!("{} has no interpreter", shown()));
        };
        return dynamic(std::path::Path::new(interp));
    }
    if head.len() < 64 || head[..4] != *b"\x7fELF" || head[4] != 2 {
        return Err(format!("{} is not a 64-bit ELF program", shown()));
    }
    let u16_at = |h: &[u8], o: usize| u16::from_le_bytes([h[o], h[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(head[0x20..0x28].try_into().unwrap_or([0; 8])) as usize;
    let (size, count) = (u16_at(&head, 0x36), u16_at(&head, 0x38));
    let end = phoff.saturating_add(size.saturating_mul(count)).min(65536);
    if end > head.len() {
        head.resize(end, 0);
        let n = read_up_to(&f, &mut head, 0);
        head.truncate(n);
    }
    const PT_INTERP: u32 = 3;
    let u64_at = |h: &[u8], o: usize| {
        h.get(o..o + 8).map_or(0, |b| {
            u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize
        })
    };
    let interp = (0..count).find_map(|i| {
        let at = phoff + i * size;
        let kind = head.get(at..at + 4)?;
        (u32::from_le_bytes(kind.try_into().ok()?) == PT_INTERP)
            .then(|| (u64_at(&head, at + 8), u64_at(&head, at + 32).min(4096)))
    });
    let Some((offset, len)) = interp else {
        return Err(format!(
            "{} is statically linked: LD_PRELOAD cannot interpose it",
            shown()
        ));
    };
    // The library is built against glibc: a program another loader starts (musl's)
    // could not load it.
    let mut name = vec![0u8; len];
    let n = read_up_to(&f, &mut name, offset as u64);
    let name = String::from_utf8_lossy(&name[..n]);
    let name = name.trim_end_matches('\0');
    if name.contains("/ld-linux") {
        Ok(())
    } else {
        Err(format!(
            "{} is started by {name}, not glibc's loader: ioprobe's library needs glibc",
            shown()
        ))
    }
}

/// Reads into `buf` from `at` until it is full or the file ends: the bytes read.
fn read_up_to(f: &std::fs::File, buf: &mut [u8], at: u64) -> usize {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], at + n as u64) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_program_and_a_script_are_told_from_a_static_one() {
        assert_eq!(dynamic(std::path::Path::new("/bin/sh")), Ok(()));
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
        assert_eq!(dynamic(&script), Ok(()));
        let text = dir.path().join("t");
        std::fs::write(&text, "hello").unwrap();
        assert!(dynamic(&text).is_err());
    }

    #[test]
    fn the_ring_reads_returned_slots_and_leaves_a_task_that_died_in_its_call_out() {
        let Ok(mut p) = Preload::new() else {
            eprintln!("skipped: no preload library here");
            return;
        };
        use std::sync::atomic::Ordering::Release;
        // Three slots as the library fills them: a read that returned, a read its
        // task is still in, a write that returned.
        let fill = |p: &Preload, i: u64, tid: i32, nr: i64, state: u32| {
            // SAFETY (test): slot `i` inside the mapping.
            unsafe {
                let s = p.map.add(HEAD + i as usize * SLOT);
                (s.add(4) as *mut i32).write(tid);
                (s.add(8) as *mut i32).write(nr as i32);
                (s.add(16) as *mut i64).write(4096);
            }
            p.state(i).store(state, Release);
        };
        fill(&p, 0, 7, libc::SYS_read, RETURNED);
        fill(&p, 1, 8, libc::SYS_read, IN_CALL);
        fill(&p, 2, 7, libc::SYS_write, RETURNED);
        p.word(NEXT).store(3, Release);
        let mut out = std::collections::VecDeque::new();
        p.read(&mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(p.done, 1, "slot 1 is still in its call");
        p.ended(8, &mut out);
        p.read(&mut out);
        assert_eq!(p.done, 3);
        p.finish(&mut out);
        assert_eq!((out.len(), p.lost()), (2, 0));
    }
}
