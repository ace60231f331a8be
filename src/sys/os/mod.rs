//! What differs between operating systems, one module per OS, all exporting the same
//! functions (the uutils `platform/` layout); `bsd.rs` holds what macOS and FreeBSD
//! share, `linux_freebsd.rs` what Linux and FreeBSD share. Everything else in ioprobe calls these
//! and never uses `cfg` itself. Where an OS lacks a mechanism the function returns a
//! [`SysError`](super::calls::SysError) naming it (errno ENOSYS), which probes report
//! as an `unsupported` row with that reason.
//!
//! | mechanism | Linux | FreeBSD | macOS |
//! |---|---|---|---|
//! | io_uring | yes | — | — |
//! | splice / vmsplice | yes | — | — |
//! | copy_file_range | yes | 13+ | — |
//! | sendfile file→file | yes | — (sockets only) | — (sockets only) |
//! | reflink | FICLONE | — | clonefile (APFS) |
//! | F_SETPIPE_SZ | yes | — | — |
//! | O_DIRECT | O_DIRECT | O_DIRECT | F_NOCACHE |
//! | posix_fadvise | yes | yes | — |
//! | per-thread rusage | RUSAGE_THREAD | RUSAGE_THREAD | the process's (labelled) |
//! | CPU pinning | sched_setaffinity | cpuset (sched_setaffinity) | — |
//! | mincore | yes | yes | yes |

#[cfg(any(target_os = "linux", target_os = "freebsd"))]
mod linux_freebsd;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(target_os = "linux")]
#[path = "linux_uring.rs"]
pub mod uring;

#[cfg(target_os = "linux")]
#[path = "linux_trace.rs"]
pub mod trace;

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
mod bsd;
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
pub use bsd::{
    enable_zerocopy, send_zerocopy, tcp_segments_out, trace, uring, zerocopy_completions,
};

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::*;

#[cfg(target_os = "freebsd")]
mod freebsd;
#[cfg(target_os = "freebsd")]
pub use freebsd::*;

/// Machine facts an OS gives through sysctl rather than /proc and /sys.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub cpu_model: Option<String>,
    pub memory_bytes: Option<u64>,
    /// (level, kind, bytes) of each data or unified cache.
    pub caches: Vec<(u8, &'static str, u64)>,
}

/// What `ioprobe trace` sees (see `trace`): one traced system call that returned, or a
/// change in the traced tasks.
#[derive(Debug, Clone)]
pub enum Event {
    /// `tid` made system call `call` with `args`; it returned `ret` (a negative errno
    /// on failure). The task is still stopped, so its memory can be read.
    Call {
        tid: i32,
        call: crate::sys::syscall::Syscall,
        args: [u64; 6],
        ret: i64,
    },
    /// `tid` started (fork, vfork or clone) from `parent`.
    Task { tid: i32, parent: i32 },
    /// `tid` replaced its program (execve).
    Exec { tid: i32 },
    /// `tid` ended.
    Exit { tid: i32 },
}

/// How a traced command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

/// Hints for [`fadvise`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// The file will be read sequentially (POSIX_FADV_SEQUENTIAL).
    Sequential,
    /// Drop the file's cached pages (POSIX_FADV_DONTNEED).
    DontNeed,
}
