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
pub mod linux_uring;
#[cfg(target_os = "linux")]
pub use linux_uring as uring;

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
mod bsd;
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
pub use bsd::{
    enable_zerocopy, send_zerocopy, syncfs, tcp_segments_out, uring, zerocopy_completions,
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

/// Hints for [`fadvise`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// The file will be read sequentially (POSIX_FADV_SEQUENTIAL).
    Sequential,
    /// Drop the file's cached pages (POSIX_FADV_DONTNEED).
    DontNeed,
}
