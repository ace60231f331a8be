//! getrusage(2) for the calling thread (RUSAGE_THREAD), so helper threads (signal
//! handler, progress display) never pollute a case's counters; on macOS the process's.

/// Counters from one getrusage call (the harness also uses this shape for deltas).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawRusage {
    pub user_us: u64,
    pub sys_us: u64,
    pub voluntary_cs: u64,
    pub involuntary_cs: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub blocks_in: u64,
    pub blocks_out: u64,
}

/// Reads the calling thread's resource usage (RUSAGE_THREAD; on macOS, which has no
/// per-thread counters, the process's: see [`SCOPE`]); fails only if the kernel refuses
/// the call.
pub fn getrusage_thread() -> Result<RawRusage, super::calls::SysError> {
    getrusage(super::os::RUSAGE_OWN.0)
}

/// What [`getrusage_thread`] counts: `thread`, or `process` where the OS has no
/// per-thread counters.
pub const SCOPE: &str = super::os::RUSAGE_OWN.1;

/// The resource usage of the children (and their descendants) this process has reaped
/// (RUSAGE_CHILDREN).
pub fn getrusage_children() -> Result<RawRusage, super::calls::SysError> {
    getrusage(libc::RUSAGE_CHILDREN)
}

/// Reads the whole calling process's resource usage (RUSAGE_SELF): used inside a
/// single-purpose child process, where it is exactly that process's work.
pub fn getrusage_self() -> Result<RawRusage, super::calls::SysError> {
    getrusage(libc::RUSAGE_SELF)
}

fn getrusage(who: libc::c_int) -> Result<RawRusage, super::calls::SysError> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a properly sized, zeroed rusage buffer owned by this frame.
    let r = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
    if r != 0 {
        return Err(super::calls::SysError {
            call: "getrusage",
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        });
    }
    // SAFETY: getrusage returned 0, so it filled the struct (which was zeroed anyway).
    let ru = unsafe { ru.assume_init() };
    Ok(from_libc(&ru))
}

/// Converts libc's rusage into our counters.
pub fn from_libc(ru: &libc::rusage) -> RawRusage {
    let us = |tv: libc::timeval| (tv.tv_sec as u64) * 1_000_000 + tv.tv_usec as u64;
    RawRusage {
        user_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
        voluntary_cs: ru.ru_nvcsw as u64,
        involuntary_cs: ru.ru_nivcsw as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
        blocks_in: ru.ru_inblock as u64,
        blocks_out: ru.ru_oublock as u64,
    }
}
