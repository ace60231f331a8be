//! Attaching to processes that are already running (`trace --pid`, `--cgroup`): who
//! may be attached to and, when not, the one reason why (checked before anything is
//! attached); the threads of a process; a cgroup's processes; what ioprobe saw of each
//! at the attach (the events that open the trace); and how the window ends (its
//! duration, or SIGINT, SIGTERM or SIGHUP sent to ioprobe, which end the trace instead
//! of reaching the traced processes).

pub use super::procfs::threads;
use super::procfs::{self, comm};
pub use super::record::{Target, Tracer, WindowEnd};
use super::{Event, Seen};
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// What decides whether ptrace may attach to a process (read from /proc, or given in
/// a test).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Yama's `ptrace_scope` (None: no Yama).
    pub yama: Option<u8>,
    /// ioprobe has CAP_SYS_PTRACE.
    pub cap_sys_ptrace: bool,
    /// The process runs as ioprobe's user (every uid and gid) and is dumpable.
    pub same_user: bool,
    /// The process descends from ioprobe.
    pub descendant: bool,
    /// Its ptrace tracer, when it has one: (pid, name).
    pub tracer: Option<(i32, String)>,
}

/// Why ptrace may not attach to `pid` given `f`, with what would allow it; None: it
/// may.
pub fn ptrace_refusal(pid: i32, f: &Facts) -> Option<String> {
    if let Some((t, name)) = &f.tracer {
        return Some(format!(
            "pid {pid} is already traced by pid {t} ({name}), and a process has one ptrace tracer: end that tracer first, or trace with eBPF (--tracer ebpf, as root)"
        ));
    }
    let why = match f.yama {
        Some(3) => Some(
            "Yama's ptrace_scope is 3: no process may attach with ptrace (until a reboot); --tracer ebpf (as root) does not use ptrace".to_string(),
        ),
        Some(2) if !f.cap_sys_ptrace => Some(
            "Yama's ptrace_scope is 2: only a process with CAP_SYS_PTRACE may attach; run ioprobe as root, or --tracer ebpf".to_string(),
        ),
        Some(1) if !f.cap_sys_ptrace && !f.descendant => Some(
            "Yama's ptrace_scope is 1: without CAP_SYS_PTRACE a process may attach only to its own descendants; run ioprobe as root, or set kernel.yama.ptrace_scope=0".to_string(),
        ),
        _ if !f.cap_sys_ptrace && !f.same_user => Some(format!(
            "pid {pid} runs as another user (or changed its privileges) and attaching to it needs CAP_SYS_PTRACE; run ioprobe as root"
        )),
        _ => None,
    };
    why.map(|w| format!("cannot attach to pid {pid}: {w}"))
}

/// The facts about `pid` as this machine has them.
fn facts(pid: i32) -> Facts {
    let mine = |key: &str| procfs::status_text(None, key);
    let theirs = |key: &str| procfs::status_text(Some(pid), key);
    let cap = mine("CapEff:")
        .and_then(|c| u64::from_str_radix(&c, 16).ok())
        .is_some_and(|c| c & (1 << 19) != 0); // bit 19: CAP_SYS_PTRACE
    let ids = |v: Option<String>| -> Vec<u32> {
        v.unwrap_or_default()
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect()
    };
    let me = rustix::process::getuid().as_raw();
    let my_gid = rustix::process::getgid().as_raw();
    let owner = std::os::unix::fs::MetadataExt::uid;
    // A process that is not dumpable (it changed its privileges) has its /proc files
    // owned by root.
    let dumpable = std::fs::metadata(format!("/proc/{pid}/stat")).is_ok_and(|m| owner(&m) == me);
    let same_user = ids(theirs("Uid:")).iter().all(|&u| u == me)
        && ids(theirs("Gid:")).iter().all(|&g| g == my_gid)
        && dumpable;
    let tracer = threads(pid).into_iter().find_map(tracer_of);
    Facts {
        yama: procfs::yama_scope(),
        cap_sys_ptrace: cap,
        same_user,
        descendant: descends_from_me(pid),
        tracer,
    }
}

/// The ptrace tracer of task `tid`, if it has one: its pid and name.
pub fn tracer_of(tid: i32) -> Option<(i32, String)> {
    let tp: i32 = procfs::status(tid, "TracerPid:")?;
    (tp != 0).then(|| (tp, comm(tp).unwrap_or_else(|| "?".into())))
}

/// Whether `pid`'s parents lead to ioprobe.
fn descends_from_me(pid: i32) -> bool {
    let me = std::process::id() as i32;
    let mut p = pid;
    for _ in 0..64 {
        match procfs::stat(p).map(|s| s.ppid) {
            Some(pp) if pp == me => return true,
            Some(pp) if pp > 1 => p = pp,
            _ => return false,
        }
    }
    false
}

/// Whether ioprobe runs in a nested PID namespace (its status lists more than one
/// id): eBPF's process ids are the initial namespace's, not the ones it sees.
fn nested_pid_namespace() -> bool {
    procfs::status_text(None, "NSpid:").is_some_and(|v| v.split_whitespace().count() > 1)
}

/// The process `given` names (a thread's id names its process), checked for `way`:
/// Err is one line naming the cause and what would allow the attach.
pub fn check(given: i32, way: Tracer) -> Result<Target, String> {
    if given <= 0 || !procfs::exists(given) {
        return Err(format!(
            "no process {given} here (ids are those `ps` shows where ioprobe runs: a container's own ids differ; give the host's, or --cgroup)"
        ));
    }
    let pid = procfs::tgid(given).unwrap_or(given);
    if pid == std::process::id() as i32 {
        return Err(format!("pid {given} is ioprobe itself"));
    }
    let stat = procfs::stat(pid);
    if stat.is_some_and(|s| s.kernel_thread()) {
        return Err(format!(
            "pid {pid} is a kernel thread: it makes no system calls to trace"
        ));
    }
    if stat.is_some_and(|s| s.state == 'Z') {
        return Err(format!("pid {pid} has exited (a zombie)"));
    }
    if procfs::program32(pid) {
        return Err(format!(
            "pid {pid} runs a 32-bit program: its system calls cannot be traced (64-bit programs only)"
        ));
    }
    match way {
        Tracer::Ptrace | Tracer::Preload => {
            if let Some(why) = ptrace_refusal(pid, &facts(pid)) {
                return Err(why);
            }
        }
        Tracer::Ebpf if nested_pid_namespace() => {
            return Err("ioprobe runs in a nested PID namespace (a container), where eBPF's process ids are not the ones it sees: run ioprobe on the host, or --tracer ptrace".into());
        }
        Tracer::Ebpf => {}
    }
    Ok(Target {
        pid,
        comm: comm(pid).unwrap_or_else(|| "?".into()),
        threads: threads(pid),
    })
}

/// The cgroup (version 2) directory `path` names: itself, or relative to where the
/// tree is mounted ("system.slice/nginx.service"). Err: one line.
pub fn cgroup_dir(path: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let dir = if path.is_absolute() {
        path.to_path_buf()
    } else {
        procfs::cgroup2_root().join(path)
    };
    let magic = rustix::fs::statfs(&dir).map(|s| s.f_type);
    match magic {
        Err(e) => Err(format!(
            "no cgroup {}: {e} (name a directory of the cgroup v2 tree, e.g. system.slice/NAME.service)",
            dir.display()
        )),
        Ok(m) if m != 0x6367_7270 => Err(format!(
            "{} is not in the cgroup v2 tree (mounted at {}): --cgroup needs one",
            dir.display(),
            procfs::cgroup2_root().display()
        )),
        Ok(_) => Ok(dir),
    }
}

/// The processes in cgroup `dir` and its descendants now.
pub fn cgroup_processes(dir: &std::path::Path) -> Vec<i32> {
    let mut out: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if let Ok(d) = std::fs::read_dir(dir) {
        for e in d.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(cgroup_processes(&e.path()));
            }
        }
    }
    out
}

/// The events that open an attached trace: each process as if it had just started
/// its program (with what it has open now and its working directory), then each of
/// its other threads.
pub fn opening_events(targets: &[Target]) -> Vec<Event> {
    let mut v = Vec::new();
    for t in targets {
        v.push(Event::Exec {
            tid: t.pid,
            comm: Some(t.comm.clone()),
            program32: Some(false),
            note: None,
            seen: Some(Seen::now(t.pid)),
        });
        for &th in t.threads.iter().filter(|&&th| th != t.pid) {
            v.push(Event::Task {
                tid: th,
                parent: t.pid,
                pid: Some(t.pid),
                comm: Some(t.comm.clone()),
            });
        }
    }
    v
}

/// Why the window ended: 0 not yet, -1 its duration, else the signal ioprobe was sent.
static ENDING: AtomicI32 = AtomicI32::new(0);

/// Why the window ended (None: it has not).
pub fn ending() -> Option<WindowEnd> {
    match ENDING.load(Ordering::SeqCst) {
        0 => None,
        -1 => Some(WindowEnd::Duration),
        s => Some(WindowEnd::Signal(s)),
    }
}

/// The window's clock: a thread that ends the window at its deadline and, once it has
/// ended, wakes the tracer's thread (a waitpid(2) it is blocked in returns EINTR)
/// until the tracer says it has detached.
pub struct Clock {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

extern "C" fn on_end(sig: libc::c_int) {
    let _ = ENDING.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

extern "C" fn on_wake(_: libc::c_int) {}

/// Installs `handler` for `sig` without SA_RESTART, so that a blocked waitpid returns.
fn interrupting(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) -> io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; the handler only stores to an atomic
    // (async-signal-safe); the result is checked.
    let r = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Clock {
    /// Starts the window: SIGINT, SIGTERM and SIGHUP (those not ignored when ioprobe
    /// started) end it, as does `duration`. The calling thread is the one woken.
    pub fn start(duration: Option<std::time::Duration>) -> io::Result<Clock> {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            if !crate::sys::signals::ignored_at_start(sig) {
                interrupting(sig, on_end)?;
            }
        }
        interrupting(libc::SIGURG, on_wake)?;
        let tracer = rustix::thread::gettid().as_raw_nonzero().get();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = done.clone();
        let deadline = duration.map(|d| std::time::Instant::now() + d);
        let thread = std::thread::Builder::new()
            .name("trace-window".into())
            .spawn(move || {
                while !seen.load(Ordering::SeqCst) {
                    if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                        let _ = ENDING.compare_exchange(0, -1, Ordering::SeqCst, Ordering::SeqCst);
                    }
                    if ENDING.load(Ordering::SeqCst) != 0 {
                        // SAFETY: tgkill(2) to a thread of this process, whose SIGURG
                        // handler does nothing.
                        unsafe {
                            libc::syscall(
                                libc::SYS_tgkill,
                                std::process::id() as libc::c_long,
                                tracer as libc::c_long,
                                libc::SIGURG as libc::c_long,
                            )
                        };
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            })?;
        Ok(Clock {
            done,
            thread: Some(thread),
        })
    }
}

impl Drop for Clock {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_ptrace_attach_names_its_cause_and_what_would_allow_it() {
        let ok = Facts {
            yama: Some(1),
            cap_sys_ptrace: true,
            same_user: true,
            ..Facts::default()
        };
        assert_eq!(ptrace_refusal(7, &ok), None);
        let yama = |scope, cap, descendant| Facts {
            yama: Some(scope),
            cap_sys_ptrace: cap,
            descendant,
            same_user: true,
            tracer: None,
        };
        let r = ptrace_refusal(7, &yama(3, true, false)).unwrap();
        assert!(
            r.contains("ptrace_scope is 3") && r.contains("--tracer ebpf"),
            "{r}"
        );
        let r = ptrace_refusal(7, &yama(2, false, true)).unwrap();
        assert!(r.contains("ptrace_scope is 2") && r.contains("root"), "{r}");
        assert_eq!(ptrace_refusal(7, &yama(2, true, false)), None);
        let r = ptrace_refusal(7, &yama(1, false, false)).unwrap();
        assert!(
            r.contains("ptrace_scope is 1") && r.contains("ptrace_scope=0"),
            "{r}"
        );
        assert_eq!(ptrace_refusal(7, &yama(1, false, true)), None);
        let other = Facts {
            same_user: false,
            ..Facts::default()
        };
        let r = ptrace_refusal(7, &other).unwrap();
        assert!(
            r.contains("another user") && r.contains("CAP_SYS_PTRACE"),
            "{r}"
        );
        let traced = Facts {
            tracer: Some((99, "strace".into())),
            ..ok
        };
        let r = ptrace_refusal(7, &traced).unwrap();
        assert!(r.contains("traced by pid 99 (strace)"), "{r}");
        assert!(!r.contains('\n'));
    }

    #[test]
    fn a_missing_process_a_kernel_thread_and_ioprobe_itself_are_refused() {
        let r = check(i32::MAX - 1, Tracer::Ebpf).unwrap_err();
        assert!(r.contains("no process"), "{r}");
        let r = check(std::process::id() as i32, Tracer::Ptrace).unwrap_err();
        assert!(r.contains("ioprobe itself"), "{r}");
        // kthreadd is pid 2 wherever /proc shows the host's processes.
        if comm(2).as_deref() == Some("kthreadd") {
            let r = check(2, Tracer::Ebpf).unwrap_err();
            assert!(r.contains("kernel thread"), "{r}");
        }
    }
}
