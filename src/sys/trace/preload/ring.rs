//! The library the command loads and the ring it records its calls in: the memfds,
//! the command's environment (also at each exec), reading the ring.

use super::super::calls::Syscall;
use super::super::{Event, Memory};
use super::{environment_of, gate_address, in_one_mapping};
use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The library, as build.rs built it (empty where it was not built).
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/preload.so"));

/// The ring's layout, shared with `preload.c` (build.rs hands it to the compiler).
mod layout {
    #![allow(dead_code)]
    include!("layout.rs");
}
const VERSION: u64 = layout::RING_VERSION;
const SLOTS: u64 = layout::RING_SLOTS;
const SLOT: usize = layout::RING_SLOT as usize;
const HEAD: usize = layout::RING_HEAD as usize;
const PATH_ROOM: usize = SLOT - layout::SLOT_PATH as usize;
const NEXT: usize = layout::HEAD_NEXT as usize;
const DONE: usize = layout::HEAD_DONE as usize;

/// Where the gate's system call instruction ends (preload.c's gate_code): a
/// task stopped there has made its call and holds the result.
#[cfg(target_arch = "x86_64")]
const AFTER_SYSCALL: u64 = 23;
#[cfg(not(target_arch = "x86_64"))]
const AFTER_SYSCALL: u64 = 32;

/// A slot's state (its first u32).
const IN_CALL: u32 = layout::STATE_IN_CALL as u32;
const RETURNED: u32 = layout::STATE_RETURNED as u32;
const READ: u32 = layout::STATE_READ as u32;

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
    /// Calls read per task, until taken ([`Preload::take_calls`]).
    by_task: HashMap<i32, u64>,
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
            calls: super::super::calls::traced().into_iter().collect(),
            lost: 0,
            calls_read: 0,
            by_task: HashMap::new(),
            signalled: HashMap::new(),
        };
        // SAFETY: the head page is mapped and 8-aligned; the command is not started.
        unsafe {
            (p.map.add(layout::HEAD_VERSION as usize) as *mut u64).write(VERSION);
            (p.map.add(layout::HEAD_SLOTS as usize) as *mut u64).write(SLOTS);
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
                        if let Event::Call { tid, .. } = e {
                            *self.by_task.entry(tid).or_default() += 1;
                        }
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
                    timing: None,
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
    /// The calls read of task `tid` since the last time they were taken.
    pub fn take_calls(&mut self, tid: i32) -> u64 {
        self.by_task.remove(&tid).unwrap_or(0)
    }

    pub fn calls_read(&self) -> u64 {
        self.calls_read
    }

    /// Slot `i` as the call it records.
    fn decode(&self, i: u64) -> Option<Event> {
        let s = self.slot(i);
        let u32_at = |o: usize| u32::from_ne_bytes(s[o..o + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |o: usize| u64::from_ne_bytes(s[o..o + 8].try_into().unwrap_or([0; 8]));
        use layout::{SLOT_ARGS, SLOT_NR, SLOT_PATH_LEN, SLOT_RET, SLOT_TID};
        let tid = u32_at(SLOT_TID as usize) as i32;
        let nr = u32_at(SLOT_NR as usize) as i32 as i64 as u64;
        let path_len = (u32_at(SLOT_PATH_LEN as usize) as usize).min(PATH_ROOM);
        let ret = u64_at(SLOT_RET as usize) as i64;
        let mut args = [0u64; 6];
        for (k, a) in args.iter_mut().enumerate() {
            *a = u64_at(SLOT_ARGS as usize + 8 * k);
        }
        let call = *self.calls.get(&nr)?;
        let mut parts = Vec::new();
        if path_len > 0
            && let Some(n) = call.path_arg()
        {
            let at = layout::SLOT_PATH as usize;
            parts.push((args[n], s[at..at + path_len - 1].to_vec(), true));
        }
        Some(Event::Call {
            tid,
            call,
            args,
            ret,
            timing: None,
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

#[cfg(test)]
mod tests {
    use super::*;

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
                (s.add(layout::SLOT_TID as usize) as *mut i32).write(tid);
                (s.add(layout::SLOT_NR as usize) as *mut i32).write(nr as i32);
                (s.add(layout::SLOT_RET as usize) as *mut i64).write(4096);
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
