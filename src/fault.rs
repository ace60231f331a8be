//! Test hooks: faults injected on purpose so tests can prove a check catches them.
//!
//! `IOPROBE_FAULT` holds comma-separated names: `pipe-corrupt` (the pipe writer stamps
//! one chunk wrongly), `copy-corrupt` (a byte of a copy's destination is flipped before
//! verification), `sigbus` (an mmap copy's destination is truncated under its mapping, so
//! the copy dies of SIGBUS), `evict` (a file that must be in the page cache is evicted just before
//! every mincore check, as memory pressure can), `cp-slow` (`ioprobe cp` moves at most
//! 1 MiB per call and pauses 20 ms after each, so a test can watch or change a copy
//! under way). Never set in normal use; a run with a fault fails by design.

/// True when fault `name` is listed in `IOPROBE_FAULT`.
pub fn enabled(name: &str) -> bool {
    std::env::var("IOPROBE_FAULT").is_ok_and(|v| v.split(',').any(|f| f.trim() == name))
}
