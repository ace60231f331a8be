//! CPU pinning of the calling thread (sched_setaffinity(2) where the OS has it; see
//! [`super::os`]).

use super::calls::SysResult;
pub use super::os::allowed_cpus;

/// Pins the calling thread to CPU `cpu`.
pub fn pin_to(cpu: usize) -> SysResult<()> {
    super::os::set_affinity(&[cpu])
}

/// Lets the calling thread run on any CPU in `cpus` (the whole process, in a
/// single-threaded child). Asking for exactly the CPUs already allowed changes nothing
/// and makes no call (so it works where the OS has no affinity).
pub fn allow_only(cpus: &[usize]) -> SysResult<()> {
    if allowed_cpus()? == cpus {
        return Ok(());
    }
    super::os::set_affinity(cpus)
}

/// The CPU the calling thread runs on now, where the OS says (Linux); else the first
/// it may run on.
pub fn current_cpu() -> SysResult<usize> {
    #[cfg(target_os = "linux")]
    return Ok(rustix::thread::sched_getcpu());
    #[cfg(not(target_os = "linux"))]
    return allowed_cpus()?
        .first()
        .copied()
        .ok_or(super::calls::SysError::missing("sched_getcpu"));
}

/// Whether threads can be pinned here: re-applying the current set must work (it does
/// wherever the OS has affinity). The reason when not.
pub fn pinning() -> Result<(), String> {
    let cpus = allowed_cpus().map_err(|e| e.to_string())?;
    super::os::set_affinity(&cpus).map_err(|e| e.to_string())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn linux_has_affinity_and_pinning_to_the_allowed_cpus_works() {
        assert_eq!(super::pinning(), Ok(()));
    }
}
