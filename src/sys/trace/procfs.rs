//! Everything tracing reads of /proc, in one place: a task's `stat` and `status`, its
//! program's ELF class, its threads, name, descriptors and working directory; Yama's
//! ptrace scope; `pid_max`; where the cgroup v2 tree is mounted (through the one
//! mount-table parser, `sys::mounts`). Each reader says None where the file is gone
//! (the task ended) or unreadable.

use std::path::{Path, PathBuf};

/// The fields of `/proc/PID/stat` tracing reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// R, S, D, Z, T, t, X…
    pub state: char,
    pub ppid: i32,
    /// The kernel's PF_* flags.
    pub flags: u64,
    /// User CPU time in clock ticks, its own and that of the children it has reaped.
    pub utime: u64,
    pub cutime: u64,
}

impl Stat {
    /// A kernel thread: it makes no system calls.
    pub fn kernel_thread(&self) -> bool {
        const PF_KTHREAD: u64 = 0x0020_0000;
        self.flags & PF_KTHREAD != 0
    }

    /// Ended: a zombie, or dead.
    pub fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Task `pid`'s `/proc/PID/stat`.
pub fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// A `stat` line: the fields after the name in parentheses (which may hold spaces
/// and parentheses itself).
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some(Stat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        flags: num(6)?,
        utime: num(11)?,
        cutime: num(13)?,
    })
}

/// Process `pid`'s user CPU time so far, with that of the children it has reaped
/// (seconds; None: it is gone).
pub fn user_cpu(pid: i32) -> Option<f64> {
    let s = stat(pid)?;
    Some((s.utime + s.cutime) as f64 / rustix::param::clock_ticks_per_second() as f64)
}

/// Whether process `pid` still runs (not gone, not a zombie).
pub fn running(pid: i32) -> bool {
    stat(pid).is_some_and(|s| !s.ended())
}

/// Whether task `pid` is in /proc (a zombie is).
pub fn exists(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The text after `key` (e.g. "Tgid:", "Uid:") in task `pid`'s `status` (None for
/// `pid`: this process's), trimmed.
pub fn status_text(pid: Option<i32>, key: &str) -> Option<String> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    field(&path, key)
}

/// The number after `key` in task `pid`'s `status`.
pub fn status<T: std::str::FromStr>(pid: i32, key: &str) -> Option<T> {
    status_text(Some(pid), key)?.parse().ok()
}

/// The value after `key` in the /proc file at `path`, trimmed.
fn field(path: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .find_map(|l| l.strip_prefix(key))?
            .trim()
            .to_string(),
    )
}

/// The process (thread group) of task `tid`.
pub fn tgid(tid: i32) -> Option<i32> {
    status(tid, "Tgid:")
}

/// Task `tid`'s program name.
pub fn comm(tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .ok()
        .map(|c| c.trim().to_string())
}

/// The ids of `pid`'s threads now (empty: it is gone).
pub fn threads(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// What descriptor `fd` of `pid` is now (its /proc link), and its file position.
pub fn fd(pid: i32, fd: i32) -> Option<(String, u64)> {
    let name = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()?;
    let pos = field(&format!("/proc/{pid}/fdinfo/{fd}"), "pos:")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Some((name.to_string_lossy().into_owned(), pos))
}

/// `pid`'s open descriptors' numbers now.
pub fn fds(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(Vec::new(), |d| {
        d.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect()
    })
}

/// `pid`'s working directory.
pub fn cwd(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/cwd"))
        .ok()
        .map(|l| l.to_string_lossy().into_owned())
}

/// The program process `pid` runs (its `exe` link).
pub fn exe(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// Whether process `pid` runs a 32-bit program.
pub fn program32(pid: i32) -> bool {
    elf32(Path::new(&format!("/proc/{pid}/exe")))
}

/// Whether the file at `path` is a 32-bit ELF program (i386, or x32), whose system
/// calls are numbered apart and pass the filter's architecture check unseen.
pub fn elf32(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 5];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head[..4] == *b"\x7fELF" && head[4] == 1)
}

/// Yama's `ptrace_scope` (None: no Yama): 0 classic, 1 descendants only, 2 only with
/// CAP_SYS_PTRACE, 3 no attach at all.
pub fn yama_scope() -> Option<u8> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The kernel's `pid_max` (None: unreadable).
pub fn pid_max() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Where the cgroup v2 tree is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified
/// on a hybrid system).
pub fn cgroup2_root() -> PathBuf {
    crate::sys::mounts::table()
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")
        .map_or_else(|| "/sys/fs/cgroup".into(), |m| m.point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 30 12 3 20 0 1 0";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.state, s.ppid, s.flags), ('S', 7, 4_194_560));
        assert_eq!((s.utime, s.cutime), (250, 12));
        assert!(!s.kernel_thread() && !s.ended());
        assert_eq!(parse_stat("42 (x"), None);
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = std::process::id() as i32;
        assert_eq!(tgid(me), Some(me));
        assert!(running(me) && exists(me));
        assert!(threads(me).contains(&me));
        assert!(!program32(me));
        assert!(user_cpu(me).is_some());
        assert_eq!(
            stat(me).map(|s| s.ppid),
            Some(rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()))
        );
    }
}
