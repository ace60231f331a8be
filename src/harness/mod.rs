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
pub mod rounds;
pub mod rusage;
pub mod sampler;
pub mod stats;

pub use config::Config;
pub use overhead::{Overhead, measure_overhead};
pub use rounds::{MIN_ROUND_SAMPLES, measure_rounds};
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

    /// Called right after a timed run. A workload whose work ran in other processes
    /// returns their own timing and resource usage here; the harness then reports those
    /// instead of its clock and its own thread's counters.
    fn external(&mut self) -> Option<External> {
        None
    }
}

/// What a workload measured itself (see [`Workload::external`]).
#[derive(Debug, Clone, Default)]
pub struct External {
    /// Elapsed time of the work, when the harness's clock around `run` would include
    /// set-up (process start, buffer allocation) that must not be timed.
    pub elapsed_ns: Option<u64>,
    /// Resource usage of each process that did the work, by role name.
    pub processes: Vec<(String, rusage::RusageDelta)>,
}
