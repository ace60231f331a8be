//! The measurement harness: clock, calibration, sampling, statistics and rusage.
//!
//! It knows nothing of I/O. A probe hands it a [`Workload`] that performs `iters`
//! operations per call; the harness times whole calls, so per-operation dispatch costs
//! nothing, and reports nanoseconds per iteration with each sample's rusage.

pub mod clock;
pub mod compare;
pub mod config;
pub mod interrupt;
pub mod overhead;
pub mod rusage;
pub mod sampler;
pub mod stats;

pub use config::Config;
pub use overhead::{Overhead, measure_overhead};
pub use sampler::{Sample, Sampled, measure};
pub use stats::{Summary, summarize};

/// Something the harness can time.
pub trait Workload {
    /// Performs `iters` operations; this call is what the harness times. Any failed
    /// system call must be returned as an error: a failure is never a figure.
    fn run(&mut self, iters: u64) -> anyhow::Result<()>;

    /// Untimed preparation before each sample (e.g. removing a copy's destination).
    fn before_sample(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Untimed check after each sample.
    fn after_sample(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}
