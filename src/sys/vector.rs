//! The CPU's upper vector state: the upper halves of the AVX registers. Code that ran
//! 256-bit instructions and did not end with `vzeroupper` leaves it in use ("dirty"),
//! and on some CPUs every system call then costs more (on one Intel guest, a getppid
//! 118 ns clean and 155–170 ns dirty, from a dynamically linked loop). ioprobe sets the
//! state before a timed loop and reads back what the loop ran in: XGETBV with ECX = 1
//! gives the state components in use (XINUSE), bit 2 being AVX's upper halves.

/// The state a loop ran in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorState {
    Clean,
    Dirty,
}

impl VectorState {
    pub fn name(self) -> &'static str {
        match self {
            VectorState::Clean => "clean",
            VectorState::Dirty => "dirty",
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::VectorState;

    /// AVX is there and the OS saves its state.
    pub fn can_set() -> bool {
        std::arch::is_x86_feature_detected!("avx")
    }

    /// XGETBV with ECX = 1 is there (CPUID.(EAX=0DH, ECX=1):EAX bit 2), with XSAVE
    /// enabled by the OS. Asked once: CPUID traps to the hypervisor in a guest, and
    /// the state is read right after timed loops.
    fn can_observe() -> bool {
        static CAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *CAN.get_or_init(|| {
            // Leaf 0xD exists where XSAVE does.
            std::arch::is_x86_feature_detected!("xsave")
                && std::arch::x86_64::__cpuid_count(0xD, 1).eax & (1 << 2) != 0
        })
    }

    /// Puts the upper vector state in `state`; false where AVX is missing.
    pub fn set(state: VectorState) -> bool {
        if !can_set() {
            return false;
        }
        match state {
            // SAFETY: AVX is present (checked); vzeroupper zeroes the registers'
            // upper halves only, which the compiler never keeps values in (ioprobe is
            // built without AVX), and touches no memory.
            VectorState::Clean => unsafe {
                std::arch::asm!("vzeroupper", options(nomem, nostack, preserves_flags));
            },
            // SAFETY: AVX is present (checked); the instruction writes ymm0 only,
            // declared clobbered (its lower half is xmm0), and touches no memory.
            VectorState::Dirty => unsafe {
                std::arch::asm!(
                    "vpcmpeqd ymm0, ymm0, ymm0",
                    out("xmm0") _,
                    options(nomem, nostack, preserves_flags)
                );
            },
        }
        true
    }

    /// The state now, where the CPU says (XINUSE); None where it cannot.
    pub fn observe() -> Option<VectorState> {
        if !can_observe() {
            return None;
        }
        let (lo, _hi): (u32, u32);
        // SAFETY: XGETBV with ECX = 1 is supported (checked); it reads a register
        // into EDX:EAX and touches no memory.
        unsafe {
            std::arch::asm!(
                "xgetbv",
                in("ecx") 1u32,
                out("eax") lo,
                out("edx") _hi,
                options(nomem, nostack, preserves_flags)
            );
        }
        Some(if lo & (1 << 2) != 0 {
            VectorState::Dirty
        } else {
            VectorState::Clean
        })
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use super::VectorState;

    pub fn can_set() -> bool {
        false
    }
    pub fn set(_state: VectorState) -> bool {
        false
    }
    pub fn observe() -> Option<VectorState> {
        None
    }
}

pub use imp::{can_set, observe, set};

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the CPU can both set and show the state (the kernel's cpuinfo flags
    /// `avx` and `xgetbv1`), what was set is what it shows.
    #[test]
    fn the_state_set_is_the_state_seen() {
        let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let has = |f: &str| flags.split_whitespace().any(|w| w == f);
        if has("avx") && has("xgetbv1") {
            assert!(can_set() && set(VectorState::Dirty) && observe().is_some());
        }
        for want in [VectorState::Dirty, VectorState::Clean, VectorState::Dirty] {
            let set = set(want);
            let seen = observe();
            if set && let Some(seen) = seen {
                assert_eq!(seen, want);
            }
        }
        set(VectorState::Clean);
    }
}
