//! `ioprobe trace` on Linux: the command runs as a ptrace tracee (PTRACE_TRACEME before
//! exec) under a seccomp filter that stops it only at the I/O-relevant system calls
//! (SECCOMP_RET_TRACE), so every other call runs at full speed. At each stop,
//! PTRACE_GET_SYSCALL_INFO (Linux 5.3+) gives the number and arguments; the tracee is
//! then run to the syscall-exit stop for the return value. Forks, vforks, clones and
//! execs are followed (PTRACE_O_TRACE*). This module turns all of it into a stream of
//! [`Event`]s and keeps every `unsafe` of tracing.

use crate::sys::syscall::Syscall;
use std::collections::{HashMap, HashSet, VecDeque};
use std::io;

use super::comm_of;
pub use super::{Created, Ended, Event, Memory, Seen};

#[path = "linux_bpf.rs"]
pub mod bpf;
#[path = "linux_preload.rs"]
pub mod preload;
use preload::{Preloaded, ip_and_result, regs, set_regs, stack_and_envp};

/// The system calls that stop the tracee on every architecture: (number, call).
const TRACED: &[(libc::c_long, Syscall)] = &[
    (libc::SYS_read, Syscall::Read),
    (libc::SYS_write, Syscall::Write),
    (libc::SYS_pread64, Syscall::Pread64),
    (libc::SYS_pwrite64, Syscall::Pwrite64),
    (libc::SYS_readv, Syscall::Readv),
    (libc::SYS_writev, Syscall::Writev),
    (libc::SYS_preadv, Syscall::Preadv),
    (libc::SYS_pwritev, Syscall::Pwritev),
    (libc::SYS_preadv2, Syscall::Preadv2),
    (libc::SYS_pwritev2, Syscall::Pwritev2),
    (libc::SYS_lseek, Syscall::Lseek),
    (libc::SYS_openat, Syscall::Openat),
    (libc::SYS_openat2, Syscall::Openat2),
    (libc::SYS_close, Syscall::Close),
    (libc::SYS_fsync, Syscall::Fsync),
    (libc::SYS_fdatasync, Syscall::Fdatasync),
    (libc::SYS_sync_file_range, Syscall::SyncFileRange),
    (libc::SYS_sendfile, Syscall::Sendfile),
    (libc::SYS_splice, Syscall::Splice),
    (libc::SYS_tee, Syscall::Tee),
    (libc::SYS_vmsplice, Syscall::Vmsplice),
    (libc::SYS_copy_file_range, Syscall::CopyFileRange),
    (libc::SYS_mmap, Syscall::Mmap),
    (libc::SYS_munmap, Syscall::Munmap),
    (libc::SYS_msync, Syscall::Msync),
    (libc::SYS_madvise, Syscall::Madvise),
    (libc::SYS_fstat, Syscall::Fstat),
    (libc::SYS_newfstatat, Syscall::Newfstatat),
    (libc::SYS_statx, Syscall::Statx),
    (libc::SYS_getdents64, Syscall::Getdents64),
    (libc::SYS_io_uring_enter, Syscall::IoUringEnter),
    (libc::SYS_io_uring_setup, Syscall::IoUringSetup),
    (libc::SYS_dup, Syscall::Dup),
    (libc::SYS_dup3, Syscall::Dup3),
    (libc::SYS_fcntl, Syscall::Fcntl),
    // Socket data.
    (libc::SYS_sendto, Syscall::Sendto),
    (libc::SYS_recvfrom, Syscall::Recvfrom),
    (libc::SYS_sendmsg, Syscall::Sendmsg),
    (libc::SYS_recvmsg, Syscall::Recvmsg),
    (libc::SYS_sendmmsg, Syscall::Sendmmsg),
    (libc::SYS_recvmmsg, Syscall::Recvmmsg),
    // Linux AIO.
    (libc::SYS_io_submit, Syscall::IoSubmit),
    (libc::SYS_io_getevents, Syscall::IoGetevents),
    // Hints, space, sizes, syncs, ioctl (FICLONE among them), locks.
    (libc::SYS_fadvise64, Syscall::Fadvise64),
    (libc::SYS_readahead, Syscall::Readahead),
    (libc::SYS_fallocate, Syscall::Fallocate),
    (libc::SYS_ftruncate, Syscall::Ftruncate),
    (libc::SYS_truncate, Syscall::Truncate),
    (libc::SYS_sync, Syscall::Sync),
    (libc::SYS_syncfs, Syscall::Syncfs),
    (libc::SYS_ioctl, Syscall::Ioctl),
    (libc::SYS_flock, Syscall::Flock),
    // The namespace.
    (libc::SYS_renameat, Syscall::Renameat),
    (libc::SYS_renameat2, Syscall::Renameat2),
    (libc::SYS_unlinkat, Syscall::Unlinkat),
    (libc::SYS_mkdirat, Syscall::Mkdirat),
    (libc::SYS_linkat, Syscall::Linkat),
    (libc::SYS_symlinkat, Syscall::Symlinkat),
    // Metadata.
    (libc::SYS_utimensat, Syscall::Utimensat),
    (libc::SYS_fchmod, Syscall::Fchmod),
    (libc::SYS_fchmodat, Syscall::Fchmodat),
    (libc::SYS_fchown, Syscall::Fchown),
    (libc::SYS_fchownat, Syscall::Fchownat),
    (libc::SYS_setxattr, Syscall::Setxattr),
    (libc::SYS_lsetxattr, Syscall::Lsetxattr),
    (libc::SYS_fsetxattr, Syscall::Fsetxattr),
    (libc::SYS_getxattr, Syscall::Getxattr),
    (libc::SYS_lgetxattr, Syscall::Lgetxattr),
    (libc::SYS_fgetxattr, Syscall::Fgetxattr),
    (libc::SYS_listxattr, Syscall::Listxattr),
    (libc::SYS_llistxattr, Syscall::Llistxattr),
    (libc::SYS_flistxattr, Syscall::Flistxattr),
    (libc::SYS_removexattr, Syscall::Removexattr),
    (libc::SYS_lremovexattr, Syscall::Lremovexattr),
    (libc::SYS_fremovexattr, Syscall::Fremovexattr),
    (libc::SYS_readlinkat, Syscall::Readlinkat),
    (libc::SYS_faccessat, Syscall::Faccessat),
    (libc::SYS_faccessat2, Syscall::Faccessat2),
    (libc::SYS_statfs, Syscall::Statfs),
    (libc::SYS_fstatfs, Syscall::Fstatfs),
    (libc::SYS_setsockopt, Syscall::Setsockopt),
    // Not I/O: stopped at so that the report can say it fails under trace.
    (libc::SYS_ptrace, Syscall::Ptrace),
];

/// The older calls x86_64 still has beside their *at forms.
#[cfg(target_arch = "x86_64")]
const TRACED_X86_64: &[(libc::c_long, Syscall)] = &[
    (libc::SYS_open, Syscall::Open),
    (libc::SYS_creat, Syscall::Creat),
    (libc::SYS_stat, Syscall::Stat),
    (libc::SYS_lstat, Syscall::Lstat),
    (libc::SYS_dup2, Syscall::Dup2),
    (libc::SYS_rename, Syscall::Rename),
    (libc::SYS_unlink, Syscall::Unlink),
    (libc::SYS_mkdir, Syscall::Mkdir),
    (libc::SYS_rmdir, Syscall::Rmdir),
    (libc::SYS_link, Syscall::Link),
    (libc::SYS_symlink, Syscall::Symlink),
    (libc::SYS_chmod, Syscall::Chmod),
    (libc::SYS_chown, Syscall::Chown),
    (libc::SYS_lchown, Syscall::Lchown),
    (libc::SYS_readlink, Syscall::Readlink),
    (libc::SYS_access, Syscall::Access),
];
#[cfg(not(target_arch = "x86_64"))]
const TRACED_X86_64: &[(libc::c_long, Syscall)] = &[];

/// The system calls that stop the tracee, for this architecture: (number, call).
pub fn traced_calls() -> Vec<(u64, Syscall)> {
    TRACED
        .iter()
        .chain(TRACED_X86_64)
        .map(|&(n, s)| (n as u64, s))
        .collect()
}

/// The calls that make descriptors, watched (not counted) so that ioprobe knows what
/// a descriptor is even when its process has ended before ioprobe reads the record.
#[derive(Debug, Clone, Copy)]
enum Maker {
    /// pipe(fds) / pipe2(fds, flags), socketpair(d, t, p, fds): two descriptors at
    /// argument N.
    Pair(usize, Created),
    /// socket(domain, type, protocol): the descriptor returned.
    Socket,
    /// accept(fd, …) / accept4: the descriptor returned.
    Accept,
}

fn makers() -> Vec<(u64, Maker)> {
    let mut v = vec![
        (libc::SYS_pipe2 as u64, Maker::Pair(0, Created::Pipe)),
        (
            libc::SYS_socketpair as u64,
            Maker::Pair(3, Created::Socket(None)),
        ),
        (libc::SYS_socket as u64, Maker::Socket),
        (libc::SYS_accept as u64, Maker::Accept),
        (libc::SYS_accept4 as u64, Maker::Accept),
    ];
    #[cfg(target_arch = "x86_64")]
    v.push((libc::SYS_pipe as u64, Maker::Pair(0, Created::Pipe)));
    v
}

/// The family of a socket(2) call's (domain, type).
fn family(domain: u64, kind: u64) -> Option<&'static str> {
    let stream = kind & 0xf == libc::SOCK_STREAM as u64;
    let dgram = kind & 0xf == libc::SOCK_DGRAM as u64;
    match domain as i32 {
        libc::AF_UNIX if stream => Some("unix"),
        libc::AF_UNIX if dgram => Some("unix-dgram"),
        libc::AF_INET | libc::AF_INET6 if stream => Some("tcp"),
        libc::AF_INET | libc::AF_INET6 if dgram => Some("udp"),
        _ => None,
    }
}

/// What maker call `m` by `tid` (with `args`, returning `ret`) made, as an event:
/// its descriptors, what they are, and what /proc names each now. `pair` is the
/// two-int array a pipe or socketpair filled (as copied or read). None when it failed.
fn made(tid: i32, m: Maker, args: &[u64; 6], ret: i64, pair: Option<&[u8]>) -> Option<Event> {
    if ret < 0 {
        return None;
    }
    let (fds, what) = match m {
        Maker::Pair(_, what) => {
            let b = pair.filter(|b| b.len() >= 8)?;
            let fd = |i: usize| i32::from_ne_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
            (vec![fd(0), fd(4)], what)
        }
        Maker::Socket => (vec![ret as i32], Created::Socket(family(args[0], args[1]))),
        Maker::Accept => (vec![ret as i32], Created::Socket(None)),
    };
    let names = fds
        .iter()
        .map(|fd| {
            std::fs::read_link(format!("/proc/{tid}/fd/{fd}"))
                .ok()
                .map(|l| l.to_string_lossy().into_owned())
        })
        .collect();
    Some(Event::Created {
        tid,
        fds,
        what,
        names,
    })
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// The seccomp program: RET_TRACE for the traced calls (and, with `preload`, the
/// descriptor makers), ALLOW for everything else, including calls of another ABI
/// (32-bit on a 64-bit kernel) and, with `preload`, calls made from the page at that
/// address (the preload library's gate).
fn filter(preload: Option<u64>) -> Vec<libc::sock_filter> {
    const LD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let op = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let mut calls: Vec<u64> = traced_calls().into_iter().map(|(n, _)| n).collect();
    let mut p = vec![
        op(LD, 0, 0, 4), // seccomp_data.arch
        op(JEQ, 1, 0, AUDIT_ARCH),
        op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    if let Some(gate) = preload {
        calls.extend(makers().into_iter().map(|(n, _)| n));
        calls.extend([libc::SYS_execve as u64, libc::SYS_execveat as u64]);
        // seccomp_data.instruction_pointer, high then low word (little-endian), in
        // the gate's page.
        p.extend([
            op(LD, 0, 0, 12),
            op(JEQ, 0, 4, (gate >> 32) as u32),
            op(LD, 0, 0, 8),
            op(AND, 0, 0, !0xfff),
            op(JEQ, 0, 1, gate as u32),
            op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
        ]);
    }
    p.push(op(LD, 0, 0, 0)); // seccomp_data.nr
    let n = calls.len();
    // Each test jumps to the RET_TRACE after the last test and the RET_ALLOW (a jump
    // offset is a byte: up to 255 calls).
    assert!(n < 250, "too many traced calls for one filter");
    for (i, nr) in calls.iter().enumerate() {
        p.push(op(JEQ, (n - i) as u8, 0, *nr as u32));
    }
    p.extend([
        op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
        op(RET, 0, 0, libc::SECCOMP_RET_TRACE),
    ]);
    p
}

/// Signals ioprobe leaves to the terminal (it sends them to the command's process
/// group itself) and signals it passes on to the command.
const LEFT_TO_TERMINAL: [i32; 2] = [libc::SIGINT, libc::SIGQUIT];
const PASSED_ON: [i32; 2] = [libc::SIGTERM, libc::SIGHUP];

/// The signal passed on to the command (0: none yet): the trace loop passes it on to
/// every other traced task too, so that a shell's children do not outlive it.
static PASSED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The traced command's pid, for the signal handlers (0 before it is started).
static MAIN: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The traced command and the state of its tasks.
pub struct Tracer {
    main: i32,
    ended: Option<Ended>,
    /// Tasks seen.
    known: HashSet<i32>,
    /// Calls stopped at seccomp, waiting for their exit stop.
    pending: HashMap<i32, Pending>,
    /// The traced calls by number: each is decoded here, once.
    calls: HashMap<u64, Syscall>,
    /// The child has stopped itself and has its options.
    started: bool,
    /// The task held at its syscall-exit stop while the caller looks at the call (its
    /// memory, its /proc/PID/fd), resumed by the next [`Tracer::next_event`].
    held: Option<i32>,
    /// The preload library's ring and what goes with it (None: plain ptrace).
    preload: Option<Box<Preloaded>>,
    /// Events to hand out in this order: the ring's calls, then the stop's event.
    queue: VecDeque<Event>,
    /// Calls handed out from stops (not from the ring).
    stopped_calls: u64,
    /// The signal passed on to the command (0: none): a task first seen later gets
    /// it too.
    passed: i32,
    /// What the command's own program is, noted at its exec stop ([`exec_note`]).
    first_note: Option<String>,
}

/// A call stopped at its seccomp stop, until its exit.
enum Pending {
    /// Counted.
    Call(Syscall, [u64; 6]),
    /// A descriptor maker (preload): not counted, what it made is told.
    Maker(Maker, [u64; 6]),
    /// The dynamic loader's or the preload library's own call on the library or the
    /// ring: not the command's.
    Own(Syscall, [u64; 6]),
    /// An exec (preload) given the library in its environment: the environment
    /// array it passed, put back if the exec fails.
    Exec { at: bool, envp: u64 },
}

/// The command line as C strings.
fn c_args(argv: &[std::ffi::OsString]) -> io::Result<Vec<std::ffi::CString>> {
    use std::os::unix::ffi::OsStrExt;
    argv.iter()
        .map(|a| std::ffi::CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "an argument contains a NUL byte",
            )
        })
}

/// What each stop signal was when ioprobe started: ignored stays ignored (a background
/// job's SIGINT, nohup's SIGHUP), anything else is the default.
fn start_dispositions() -> Vec<(libc::c_int, libc::sighandler_t)> {
    LEFT_TO_TERMINAL
        .iter()
        .chain(&PASSED_ON)
        .map(|&s| {
            let h = if crate::sys::signals::ignored_at_start(s) {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            (s, h)
        })
        .collect()
}

/// Everything the forked child needs, prepared before the fork: after it, the child
/// allocates nothing and makes only async-signal-safe calls.
struct Child {
    argv: Vec<*const libc::c_char>,
    /// The seccomp filter (ptrace), or
    filter: Option<libc::sock_fprog>,
    /// the pipe to wait on until the eBPF tracer is watching (read end, write end).
    gate: Option<(libc::c_int, libc::c_int)>,
    /// The environment, when not ioprobe's own (preload).
    env: Option<Vec<*const libc::c_char>>,
    signals: Vec<(libc::c_int, libc::sighandler_t)>,
    xfsz: Option<libc::sighandler_t>,
    close: Vec<libc::c_int>,
    parent: libc::pid_t,
    /// Where a failed step writes (step, errno); close-on-exec, so a successful exec
    /// leaves the parent reading end of file.
    errors: libc::c_int,
    other_end: libc::c_int,
}

impl Child {
    /// A child that will run `argv` with the descriptors `close` closed, reporting a
    /// failed step on `errors` (read end, write end); neither filter nor gate yet.
    fn new(argv: Vec<*const libc::c_char>, close: &[i32], errors: (i32, i32)) -> Child {
        Child {
            argv,
            filter: None,
            gate: None,
            env: None,
            signals: start_dispositions(),
            xfsz: crate::sys::signals::original_xfsz(),
            close: close.to_vec(),
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            errors: errors.1,
            other_end: errors.0,
        }
    }

    /// Forks the child, which runs [`Child::run`]; its pid. The signal handlers are set
    /// first, so that no signal finds ioprobe without them.
    fn start(&self) -> io::Result<i32> {
        forward_signals()?;
        // SAFETY: ioprobe runs no other thread here; the child only makes
        // async-signal-safe calls on memory prepared before the fork, then execs or
        // exits with _exit.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            return Err(io::Error::last_os_error()).map_err(os("fork"));
        }
        if pid == 0 {
            self.run();
        }
        MAIN.store(pid, std::sync::atomic::Ordering::Relaxed);
        Ok(pid)
    }

    /// The child's side, between fork and exec: the signal state CMD would have
    /// untraced, the descriptors it must not see closed, death with ioprobe until
    /// seized, a stop for the seize, no new privileges, the seccomp filter, exec.
    fn run(&self) -> ! {
        // SAFETY: only async-signal-safe calls, on memory prepared before the fork;
        // every path ends in execvp or _exit.
        unsafe {
            let fail = |step: i32| -> ! {
                let e = [step, *libc::__errno_location()];
                libc::write(self.errors, e.as_ptr() as *const libc::c_void, 8);
                libc::_exit(127);
            };
            libc::close(self.other_end);
            for &(sig, h) in self.signals.iter() {
                libc::signal(sig, h);
            }
            // Rust's runtime ignores SIGPIPE at start (std's Command restores it for
            // children the same way); ioprobe's own SIGXFSZ is undone.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            if let Some(h) = self.xfsz {
                libc::signal(libc::SIGXFSZ, h);
            }
            for &fd in self.close.iter() {
                libc::close(fd);
            }
            // Until ioprobe has seized it (PTRACE_O_EXITKILL from then on), the child
            // dies with ioprobe rather than stay stopped forever.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                fail(5);
            }
            if libc::getppid() != self.parent {
                libc::_exit(127);
            }
            if let Some((rd, wr)) = self.gate {
                // eBPF: no stop, no filter; on once the tracer has added this task.
                libc::close(wr);
                let mut b = 0u8;
                if libc::read(rd, &mut b as *mut u8 as *mut libc::c_void, 1) != 1 {
                    libc::_exit(127);
                }
                // PR_SET_PDEATHSIG stays: if ioprobe dies, the command dies with it,
                // as under ptrace (PTRACE_O_EXITKILL).
                libc::execvp(self.argv[0], self.argv.as_ptr());
                fail(4)
            }
            let Some(filter) = &self.filter else {
                libc::_exit(127);
            };
            libc::raise(libc::SIGSTOP);
            libc::prctl(libc::PR_SET_PDEATHSIG, 0);
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
                fail(2);
            }
            if libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                filter as *const libc::sock_fprog,
            ) == -1
            {
                fail(3);
            }
            match &self.env {
                Some(env) => libc::execvpe(self.argv[0], self.argv.as_ptr(), env.as_ptr()),
                None => libc::execvp(self.argv[0], self.argv.as_ptr()),
            };
            fail(4)
        }
    }
}

/// The step the child failed at, read from its error pipe (closed here), as an error
/// naming it; None when the exec succeeded.
fn child_error(rd: libc::c_int) -> Option<io::Error> {
    let mut e = [0i32; 2];
    // SAFETY: reads at most 8 bytes into a local array; the descriptor is ours.
    let n = unsafe { libc::read(rd, e.as_mut_ptr() as *mut libc::c_void, 8) };
    // SAFETY: closing the read end, which the caller handed over.
    unsafe { libc::close(rd) };
    if n != 8 {
        return None;
    }
    let err = io::Error::from_raw_os_error(e[1]);
    let step = [
        "",
        "ptrace",
        "prctl(PR_SET_NO_NEW_PRIVS)",
        "seccomp(SECCOMP_SET_MODE_FILTER)",
        "execvp",
        "prctl(PR_SET_PDEATHSIG)",
    ];
    let what = step.get(e[0] as usize).copied().unwrap_or("start");
    Some(io::Error::new(err.kind(), format!("{what}: {err}")))
}

fn os(what: &str) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn ptrace(req: libc::c_uint, pid: i32, addr: usize, data: usize) -> io::Result<libc::c_long> {
    // SAFETY: the requests used here take an integer or a pointer to memory this module
    // owns and sized for the request (PTRACE_GET_SYSCALL_INFO, PTRACE_GETEVENTMSG,
    // PTRACE_GETSIGINFO); `pid` is a tracee of this process.
    let r = unsafe {
        libc::ptrace(
            req,
            pid,
            addr as *mut libc::c_void,
            data as *mut libc::c_void,
        )
    };
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// waitpid(pid, flags) until it answers (EINTR retried): the status.
fn wait_status(pid: i32, flags: libc::c_int) -> io::Result<libc::c_int> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r != -1 {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e).map_err(os("waitpid"));
        }
    }
}

/// The ptrace stop's syscall information: (op, nr, args, ret).
fn syscall_info(tid: i32) -> io::Result<(u8, u64, [u64; 6], i64)> {
    // SAFETY: ptrace_syscall_info is plain data; all-zero is a valid value.
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::ptrace_syscall_info>();
    ptrace(
        libc::PTRACE_GET_SYSCALL_INFO,
        tid,
        size,
        &mut info as *mut _ as usize,
    )
    .map_err(os("ptrace(PTRACE_GET_SYSCALL_INFO)"))?;
    // SAFETY: `op` says which member of the union the kernel filled.
    let (nr, args, ret) = unsafe {
        match info.op {
            libc::PTRACE_SYSCALL_INFO_SECCOMP => (info.u.seccomp.nr, info.u.seccomp.args, 0),
            libc::PTRACE_SYSCALL_INFO_ENTRY => (info.u.entry.nr, info.u.entry.args, 0),
            libc::PTRACE_SYSCALL_INFO_EXIT => (0, [0; 6], info.u.exit.sval),
            _ => (0, [0; 6], 0),
        }
    };
    Ok((info.op, nr, args, ret))
}

impl Tracer {
    /// Starts `argv` (the program, found in PATH, and its arguments) traced. Its
    /// stdin, stdout and stderr stay its own, the descriptors in `close` (standard
    /// descriptors ioprobe was started without) are closed again, SIGPIPE and SIGXFSZ
    /// get back the dispositions a program is started with, and the signal mask is
    /// ioprobe's own (as it was given). Err: it could not be started (the message
    /// names the step: `execvp` with the errno a shell maps to 126 or 127), or tracing
    /// is not permitted (the message names the call that failed).
    ///
    /// The child stops itself before installing its seccomp filter; ioprobe seizes it
    /// there (PTRACE_SEIZE: group-stops are reported and kept, so SIGSTOP and SIGTSTP
    /// stop the command as they would untraced) with PTRACE_O_TRACESECCOMP (a filter
    /// that returns SECCOMP_RET_TRACE with no such tracer fails those calls with
    /// ENOSYS) and PTRACE_O_EXITKILL (if ioprobe dies, even by SIGKILL, the kernel
    /// kills the command rather than leave it running with its I/O calls failing),
    /// then lets it go on with SIGCONT.
    ///
    /// With `preload`, the command starts with the preload library (see
    /// [`preload`]), and the filter lets its calls through.
    pub fn spawn(
        argv: &[std::ffi::OsString],
        close: &[i32],
        preload: Option<preload::Preload>,
    ) -> io::Result<Tracer> {
        let args = c_args(argv)?;
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let prog = filter(preload.as_ref().map(|p| p.gate()));
        let env = preload.as_ref().map(|p| p.environment()).transpose()?;
        let env_ptrs = env.as_ref().map(|e| {
            let mut v: Vec<*const libc::c_char> = e.iter().map(|a| a.as_ptr()).collect();
            v.push(std::ptr::null());
            v
        });
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
            return Err(io::Error::last_os_error()).map_err(os("pipe2"));
        }
        let (rd, wr) = (fds[0], fds[1]);
        let child = Child {
            filter: Some(libc::sock_fprog {
                len: prog.len() as u16,
                filter: prog.as_ptr() as *mut libc::sock_filter,
            }),
            env: env_ptrs,
            ..Child::new(ptrs, close, (rd, wr))
        };
        let pid = child.start()?;
        // SAFETY: closing the parent's copy of the write end, which it owns.
        unsafe { libc::close(wr) };
        // After the fork: the command must not start with SIGCHLD blocked.
        let preload = preload.map(|ring| {
            Box::new(Preloaded {
                sigchld: Preloaded::watch_sigchld(),
                ring,
                makers: makers().into_iter().collect(),
                own: HashSet::new(),
                loading: HashSet::new(),
                first: None,
            })
        });
        let result = Tracer::seize(pid).and_then(|()| Tracer::start(pid, preload));
        let failed = child_error(rd);
        let tracer = result?;
        match failed {
            Some(e) => Err(e),
            None => Ok(tracer),
        }
    }

    /// Waits for the child's self-stop, seizes it with the options, and resumes it.
    fn seize(pid: i32) -> io::Result<()> {
        loop {
            let status = wait_status(pid, libc::WUNTRACED)?;
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                return Err(io::Error::other(
                    "the command ended before it could be traced",
                ));
            }
            if libc::WIFSTOPPED(status) {
                break;
            }
        }
        let opts = libc::PTRACE_O_TRACESYSGOOD
            | libc::PTRACE_O_TRACEFORK
            | libc::PTRACE_O_TRACEVFORK
            | libc::PTRACE_O_TRACECLONE
            | libc::PTRACE_O_TRACEEXEC
            | libc::PTRACE_O_TRACESECCOMP
            | libc::PTRACE_O_EXITKILL;
        ptrace(libc::PTRACE_SEIZE, pid, 0, opts as usize).map_err(os("ptrace(PTRACE_SEIZE)"))?;
        // SAFETY: kill(2) on our own child, stopped above.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        Ok(())
    }

    /// Drives the seized child to its execve; the calls it makes before the exec (an
    /// error report) are let through.
    fn start(pid: i32, preload: Option<Box<Preloaded>>) -> io::Result<Tracer> {
        let mut t = Tracer {
            main: pid,
            ended: None,
            known: HashSet::from([pid]),
            pending: HashMap::new(),
            calls: traced_calls().into_iter().collect(),
            started: false,
            held: None,
            preload,
            queue: VecDeque::new(),
            stopped_calls: 0,
            passed: 0,
            first_note: None,
        };
        loop {
            let status = wait_status(pid, libc::__WALL)?;
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                // It never reached exec; the pipe says why.
                t.ended = Some(Ended::Code(127));
                return Ok(t);
            }
            let sig = libc::WSTOPSIG(status);
            let event = status >> 16;
            if event == libc::PTRACE_EVENT_STOP
                || (!t.started && (sig == libc::SIGCONT || sig == libc::SIGSTOP))
            {
                // The self-stop seen as seized, and the SIGCONT that ends it.
                t.started = true;
                t.resume(libc::PTRACE_CONT, pid, 0)?;
            } else if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_EXEC {
                if let Some(p) = &mut t.preload {
                    p.first = Some(Seen::now(pid));
                    p.loading.insert(pid);
                }
                t.first_note = exec_note(pid);
                t.resume(libc::PTRACE_CONT, pid, 0)?;
                return Ok(t);
            } else if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_SECCOMP {
                t.resume(libc::PTRACE_CONT, pid, 0)?;
            } else {
                let deliver = if sig == libc::SIGTRAP || sig == libc::SIGSTOP {
                    0
                } else {
                    sig
                };
                t.resume(libc::PTRACE_CONT, pid, deliver)?;
            }
        }
    }

    /// The traced command's pid.
    pub fn pid(&self) -> i32 {
        self.main
    }

    /// How the command ended, once [`Tracer::next_event`] has returned None.
    pub fn ended(&self) -> Option<Ended> {
        self.ended
    }

    /// The command's own exec, which happened while it was being started: under
    /// preload with what it had then (its descriptors, its working directory).
    pub fn first_exec(&mut self) -> Event {
        let seen = self.preload.as_mut().and_then(|p| p.first.take());
        let comm = seen.as_ref().and_then(|_| comm_of(self.main));
        Event::Exec {
            tid: self.main,
            comm,
            program32: None,
            note: self.first_note.take(),
            seen,
        }
    }

    /// Calls handed out from stops (under preload, the rest came from the ring).
    pub fn stopped_calls(&self) -> u64 {
        self.stopped_calls
    }

    /// Preload: calls missing because their task died between taking a ring slot
    /// and making the call.
    pub fn lost(&self) -> u64 {
        self.preload.as_ref().map_or(0, |p| p.ring.lost())
    }

    /// Preload: calls the library recorded, made without a stop.
    pub fn unstopped_calls(&self) -> u64 {
        self.preload.as_ref().map_or(0, |p| p.ring.calls_read())
    }

    /// Resumes `tid` with `request`, delivering `sig`; a task that vanished meanwhile
    /// (killed) is not an error.
    fn resume(&self, request: libc::c_uint, tid: i32, sig: i32) -> io::Result<()> {
        match ptrace(request, tid, 0, sig as usize) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            r => r.map(|_| ()).map_err(os("ptrace(resume)")),
        }
    }

    /// The next event, or None when no traced task is left. After a [`Event::Call`],
    /// its task stays stopped until this is called again, so that its memory
    /// ([`Memory::Live`]) and descriptors can be read.
    ///
    /// Under preload, the calls the ring holds come before each event: a task's
    /// calls are in the ring before its next stop or its end, so each task's calls
    /// stay in the order it made them.
    pub fn next_event(&mut self) -> io::Result<Option<Event>> {
        if let Some(e) = self.queue.pop_front() {
            return Ok(Some(e));
        }
        if let Some(t) = self.held.take() {
            self.resume(libc::PTRACE_CONT, t, 0)?;
        }
        loop {
            let Some((tid, status)) = self.wait()? else {
                if let Some(p) = &mut self.preload {
                    p.ring.finish(&mut self.queue);
                    p.quiet();
                }
                return Ok(self.queue.pop_front());
            };
            if tid == 0 {
                // Preload: calls read from the ring while no task stopped.
                match self.queue.pop_front() {
                    Some(e) => return Ok(Some(e)),
                    None => continue,
                }
            }
            let exited = libc::WIFEXITED(status) || libc::WIFSIGNALED(status);
            let event = if exited {
                Some(self.exited(tid, status))
            } else if libc::WIFSTOPPED(status) {
                self.stopped(tid, status)?
            } else {
                None
            };
            let Some(e) = event else { continue };
            let Some(p) = &mut self.preload else {
                return Ok(Some(e));
            };
            p.ring.read(&mut self.queue);
            if exited {
                p.ring.ended(tid, &mut self.queue);
                p.own.retain(|&(t, _)| t != tid);
                p.loading.remove(&tid);
            }
            self.queue.push_back(e);
            return Ok(self.queue.pop_front());
        }
    }

    /// The next task whose state changed and its wait status (None: no traced task
    /// is left), passing on a signal ioprobe was sent to every traced task. Under
    /// preload, while no task changes state, the ring is read as the command runs
    /// (so that its calls are not all left to read when it ends): Some((0, 0)) when
    /// that queued calls.
    fn wait(&mut self) -> io::Result<Option<(i32, i32)>> {
        let flags = match self.preload {
            Some(_) => libc::__WALL | libc::WNOHANG,
            None => libc::__WALL,
        };
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a local integer.
            let tid = unsafe { libc::waitpid(-1, &mut status, flags) };
            if tid == 0
                && let Some(p) = &mut self.preload
            {
                if p.idle(&mut self.queue) {
                    return Ok(Some((0, 0)));
                }
                continue;
            }
            let sig = PASSED.swap(0, std::sync::atomic::Ordering::Relaxed);
            if sig != 0 {
                self.passed = sig;
                for &t in &self.known {
                    // SAFETY: kill(2) on a task this process traces (still reserved).
                    unsafe { libc::kill(t, sig) };
                }
            }
            if tid != -1 {
                return Ok(Some((tid, status)));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(e).map_err(os("waitpid")),
            }
        }
    }

    /// Task `tid` is traced; one first seen after a signal was passed on gets it too.
    fn learn(&mut self, tid: i32) {
        if self.known.insert(tid) && self.passed != 0 {
            // SAFETY: kill(2) on a task this process traces.
            unsafe { libc::kill(tid, self.passed) };
        }
    }

    /// A task ended (the command's own end is how the trace ends).
    fn exited(&mut self, tid: i32, status: i32) -> Event {
        self.known.remove(&tid);
        self.pending.remove(&tid);
        if tid == self.main {
            self.ended = Some(if libc::WIFEXITED(status) {
                Ended::Code(libc::WEXITSTATUS(status))
            } else {
                Ended::Signal(libc::WTERMSIG(status))
            });
        }
        Event::Exit { tid }
    }

    /// A task stopped: a group-stop or a new task's first stop, a traced call's entry
    /// or exit, a fork or exec, or a signal to deliver. Some: what the caller sees.
    fn stopped(&mut self, tid: i32, status: i32) -> io::Result<Option<Event>> {
        let sig = libc::WSTOPSIG(status);
        let event = status >> 16;
        self.learn(tid);
        if event == libc::PTRACE_EVENT_STOP {
            if [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&sig) {
                // A group-stop: the task stays stopped (its parent sees it stopped)
                // until a SIGCONT, as untraced.
                self.resume(libc::PTRACE_LISTEN, tid, 0)?;
            } else {
                // A new task's first stop, or the wake-up after a group-stop.
                self.resume(libc::PTRACE_CONT, tid, 0)?;
            }
            return Ok(None);
        }
        if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_SECCOMP {
            return self.seccomp_stop(tid).map(|()| None);
        }
        if sig == libc::SIGTRAP | 0x80 {
            return self.syscall_stop(tid);
        }
        if sig == libc::SIGTRAP
            && [
                libc::PTRACE_EVENT_FORK,
                libc::PTRACE_EVENT_VFORK,
                libc::PTRACE_EVENT_CLONE,
            ]
            .contains(&event)
        {
            return self.new_task(tid).map(Some);
        }
        if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_EXEC {
            let given = matches!(self.pending.remove(&tid), Some(Pending::Exec { .. }));
            // Under preload the profile reads calls a little late, as the eBPF
            // tracer's: what the program started with is looked at now.
            let (comm, seen) = match &mut self.preload {
                Some(p) => {
                    p.own.retain(|&(t, _)| t != tid);
                    if given {
                        p.loading.insert(tid);
                    } else {
                        p.loading.remove(&tid);
                    }
                    (comm_of(tid), Some(Seen::now(tid)))
                }
                None => (None, None),
            };
            // Looked at while the task is stopped: a short program (a 32-bit one runs
            // untraced to its end) may have left /proc by the time the event is read.
            let note = exec_note(tid);
            self.resume(libc::PTRACE_CONT, tid, 0)?;
            return Ok(Some(Event::Exec {
                tid,
                comm,
                program32: None,
                note,
                seen,
            }));
        }
        // Another ptrace event goes on; a signal for the task (under PTRACE_SEIZE
        // group-stops come as PTRACE_EVENT_STOP above) is delivered.
        let deliver = if sig == libc::SIGTRAP && event != 0 {
            0
        } else {
            sig
        };
        if deliver != 0
            && let Some(p) = &mut self.preload
            && let Ok(r) = regs(tid)
        {
            // A signal that may end the task as it returns from a call through the
            // gate (SIGPIPE after a write): the call's result, from its register.
            let (ip, ret) = ip_and_result(&r);
            p.ring.signalled(tid, ip, ret);
        }
        self.resume(libc::PTRACE_CONT, tid, deliver)?;
        Ok(None)
    }

    /// A seccomp stop: a traced call's entry, kept until its exit stop.
    fn seccomp_stop(&mut self, tid: i32) -> io::Result<()> {
        let (_, nr, args, _) = syscall_info(tid)?;
        // The filter stops only at the traced calls: every number is known.
        let pending = match (self.calls.get(&nr), &self.preload) {
            (Some(&call), Some(p)) if p.own(tid, call, &args) => Some(Pending::Own(call, args)),
            (Some(&call), _) => Some(Pending::Call(call, args)),
            (None, Some(p)) if nr == libc::SYS_execve as u64 => p.exec(tid, false, &args),
            (None, Some(p)) if nr == libc::SYS_execveat as u64 => p.exec(tid, true, &args),
            (None, Some(p)) => p.makers.get(&nr).map(|&m| Pending::Maker(m, args)),
            (None, None) => None,
        };
        if let Some(p) = pending {
            self.pending.insert(tid, p);
        }
        self.resume(libc::PTRACE_SYSCALL, tid, 0)
    }

    /// A syscall stop: at a traced call's exit, the call (its task held stopped).
    fn syscall_stop(&mut self, tid: i32) -> io::Result<Option<Event>> {
        let (op, _, _, ret) = syscall_info(tid)?;
        if op != libc::PTRACE_SYSCALL_INFO_EXIT {
            self.resume(libc::PTRACE_SYSCALL, tid, 0)?;
            return Ok(None);
        }
        match self.pending.remove(&tid) {
            Some(Pending::Call(call, args)) => {
                self.held = Some(tid);
                self.stopped_calls += 1;
                return Ok(Some(Event::Call {
                    tid,
                    call,
                    args,
                    ret,
                    mem: super::Memory::Live(tid),
                }));
            }
            Some(Pending::Own(call, args)) => {
                if let Some(p) = &mut self.preload {
                    match call {
                        Syscall::Openat | Syscall::Open if ret >= 0 => {
                            p.own.insert((tid, ret as i32));
                        }
                        Syscall::Close => {
                            p.own.remove(&(tid, args[0] as i32));
                        }
                        // The gate: the library is loaded and set up.
                        Syscall::Mmap if args[0] == p.ring.gate() => {
                            p.loading.remove(&tid);
                        }
                        _ => {}
                    }
                }
            }
            Some(Pending::Maker(m, args)) => {
                let pair = match m {
                    Maker::Pair(n, _) => Memory::Live(tid).peek(args[n], 8),
                    _ => None,
                };
                let made = made(tid, m, &args, ret, pair.as_deref());
                self.resume(libc::PTRACE_CONT, tid, 0)?;
                return Ok(made);
            }
            Some(Pending::Exec { at, envp }) => {
                // The exec failed (one that succeeds ends at its exec event): the
                // register gets back the array the program passed.
                if let Ok(mut r) = regs(tid) {
                    *stack_and_envp(&mut r, at).1 = envp;
                    set_regs(tid, &r)?;
                }
            }
            None => {}
        }
        self.resume(libc::PTRACE_CONT, tid, 0)?;
        Ok(None)
    }

    /// A fork, vfork or clone by `tid`: the new task, traced from its start.
    fn new_task(&mut self, tid: i32) -> io::Result<Event> {
        let mut msg: libc::c_ulong = 0;
        ptrace(
            libc::PTRACE_GETEVENTMSG,
            tid,
            0,
            &mut msg as *mut _ as usize,
        )
        .map_err(os("ptrace(PTRACE_GETEVENTMSG)"))?;
        let child = msg as i32;
        self.learn(child);
        // Under preload the profile follows descriptors across forks itself, as
        // under eBPF: it needs the new task's process.
        let pid = self
            .preload
            .as_ref()
            .and_then(|_| super::proc_field(&format!("/proc/{child}/status"), "Tgid:"));
        self.resume(libc::PTRACE_CONT, tid, 0)?;
        Ok(Event::Task {
            tid: child,
            parent: tid,
            pid,
            comm: pid.and_then(|_| comm_of(tid)),
        })
    }
}

/// While the command runs: SIGINT and SIGQUIT do not stop ioprobe (the terminal sends
/// them to the command too, and ioprobe reports what it traced once the command ends);
/// SIGTERM and SIGHUP are passed on to the command, then (from the trace loop) to every
/// other task it started. Detaching instead is not possible:
/// the command's seccomp filter would make its I/O calls fail (ENOSYS) without a tracer.
fn forward_signals() -> io::Result<()> {
    // A signal ignored at start is left ignored: the command ignores it too.
    let handled = |s: &i32| !crate::sys::signals::ignored_at_start(*s);
    for sig in LEFT_TO_TERMINAL.into_iter().filter(handled) {
        // SAFETY: the action does nothing, which is async-signal-safe.
        unsafe { signal_hook::low_level::register(sig, || {}) }?;
    }
    for sig in PASSED_ON.into_iter().filter(handled) {
        // SAFETY: atomics and kill(2) are async-signal-safe; MAIN is the traced
        // command's pid, which stays reserved (a zombie) until the trace loop reaps it.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                PASSED.store(sig, std::sync::atomic::Ordering::Relaxed);
                let main = MAIN.load(std::sync::atomic::Ordering::Relaxed);
                if main > 0 {
                    libc::kill(main, sig);
                }
            })
        }?;
    }
    Ok(())
}

/// What the program process `pid` has just started means for its trace: a 32-bit
/// program (its calls pass the filter unseen), or one that is setuid,
/// setgid or has file capabilities (under ptrace the kernel runs it without them).
fn exec_note(pid: i32) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let mut head = [0u8; 5];
    std::fs::File::open(format!("/proc/{pid}/exe"))
        .and_then(|mut f| f.read_exact(&mut head))
        .ok()?;
    if head[..4] == *b"\x7fELF" && head[4] == 1 {
        return Some(format!(
            "pid {pid} ran the 32-bit program {}: its system calls were not traced",
            exe.display()
        ));
    }
    let m = std::fs::metadata(&exe).ok()?;
    let caps = rustix::fs::getxattr(&exe, "security.capability", &mut [0u8; 64]).is_ok();
    if m.mode() & 0o6000 != 0 || caps {
        return Some(format!(
            "pid {pid} ran {}, which is {}: under ptrace the kernel runs it without those privileges",
            exe.display(),
            if caps {
                "given file capabilities"
            } else {
                "setuid or setgid"
            }
        ));
    }
    None
}

/// Bit N set: standard descriptor N was closed when the process started, as recorded
/// by [`record_closed_stdio`] before Rust's runtime opens /dev/null on it.
static CLOSED_AT_START: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Runs from `.init_array`, before libc calls `main` and so before Rust's runtime
/// replaces a closed standard descriptor with /dev/null: records which were closed.
extern "C" fn record_closed_stdio() {
    let mut bits = 0u8;
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor table; no memory is passed.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            bits |= 1 << fd;
        }
    }
    CLOSED_AT_START.store(bits, std::sync::atomic::Ordering::Relaxed);
}

// SAFETY: an ELF constructor with the signature the dynamic loader calls; the function
// makes only async-signal-safe calls and touches nothing Rust initialises.
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_CLOSED_STDIO: extern "C" fn() = record_closed_stdio;

/// The standard descriptors (0, 1, 2) ioprobe was started without, as seen before
/// Rust's runtime reopened them on /dev/null. (Telling them apart afterwards is not
/// possible: a caller's `subprocess.DEVNULL` is /dev/null open read-write too.)
pub fn stdio_closed_at_start() -> Vec<i32> {
    let bits = CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed);
    (0..3).filter(|fd| bits & (1 << fd) != 0).collect()
}
