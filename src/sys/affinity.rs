//! CPU pinning of the calling thread (sched_setaffinity(2)).

use super::calls::{SysError, SysResult};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// CPUs the calling thread may run on now.
pub fn allowed_cpus() -> SysResult<Vec<usize>> {
    let set = sched_getaffinity(None).map_err(|e| SysError::new("sched_getaffinity", e))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Pins the calling thread to CPU `cpu`.
pub fn pin_to(cpu: usize) -> SysResult<()> {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).map_err(|e| SysError::new("sched_setaffinity", e))
}

/// Lets the calling thread run on any CPU in `cpus` (the whole process, in a
/// single-threaded child).
pub fn allow_only(cpus: &[usize]) -> SysResult<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    sched_setaffinity(None, &set).map_err(|e| SysError::new("sched_setaffinity", e))
}
