//! The monotonic clock (CLOCK_MONOTONIC through `Instant`, served by the vDSO).

use std::time::Instant;

/// Reads the monotonic clock.
#[inline(always)]
pub fn now() -> Instant {
    Instant::now()
}

/// Nanoseconds between two readings.
#[inline(always)]
pub fn ns_between(a: Instant, b: Instant) -> u64 {
    b.duration_since(a).as_nanos().min(u64::MAX as u128) as u64
}
