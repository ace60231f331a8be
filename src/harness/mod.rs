//! The measurement harness: clock, calibration, sampling, statistics and rusage.
//!
//! It knows nothing of I/O. A probe hands it a [`Workload`] that performs `iters`
//! operations per call; the harness times whole calls, so per-operation dispatch costs
//! nothing, and reports nanoseconds per iteration with each sample's rusage.

pub mod clock;
pub mod compare;
pub mod config;
pub mod kept;
pub mod limit;
pub mod overhead;
pub mod pair;
pub mod race;
pub mod rounds;
pub mod rusage;
pub mod sampler;
pub mod stats;

pub use config::Config;
pub use config::MIN_ROUND_SAMPLES;
pub use limit::TimeLimit;
pub use overhead::{Overhead, measure_overhead};
pub use rounds::measure_rounds;
pub use sampler::{Sample, Sampled, Setup, Steady, measure};
pub use stats::{Summary, summarize};

/// Something the harness can time.
pub trait Workload {
    /// Performs `iters` operations; this call is what the harness times. Any failed
    /// system call must be returned as an error: a failure is never a figure.
    fn run(&mut self, iters: u64) -> anyhow::Result<()>;

    /// For a whole-pass workload (sampled round-robin, see [`measure_rounds`]) whose pass
    /// can be made longer or shorter: the fewest iterations a pass may have (enough to
    /// reach steady state) and the most (the seed's own total). The harness then fits
    /// the pass to [`Config::pass_time`]. `None` (the default): a pass is one iteration.
    fn pass_range(&self) -> Option<(u64, u64)> {
        None
    }

    /// Whether a round-robin row runs its own discarded warm-up pass. A row whose code
    /// path another row of its group has just warmed (the same copy method, in another
    /// cache state or durability) may skip it; a fitted row never does (the warm-up
    /// sizes its pass).
    fn warm_up(&self) -> bool {
        true
    }

    /// Whether a round-robin row keeps its samples only from where its rate holds
    /// steady: its first samples are left out, up to [`rounds::MAX_RAMP`] of them, until
    /// [`rounds::STEADY_WINDOW`] in a row have a least-squares slope under 1% of their
    /// mean (fio's steady-state rule), and it samples on until it has its minimum after
    /// them, within the group's budget (else every sample is kept). An early slow (or
    /// fast) regime then does not become the row's figure.
    fn settles(&self) -> bool {
        false
    }

    /// Whether a round-robin row stays in the rotation after its interval reached the
    /// target, for as long as another row of its group still samples: a row whose
    /// processes and connection are kept from sample to sample runs differently back to
    /// back than between other rows' samples (a TCP stream on one CPU settled into one
    /// of its regimes, 3.6 or 5.0 GB/s, once the rows beside it had left), so each of its
    /// samples is taken in the same rotation, and its figure does not depend on how many
    /// of them the group's other rows left it to take alone.
    fn stays_in_rotation(&self) -> bool {
        false
    }

    /// Whether a sample's time keeps the moments the measuring thread waited for a CPU
    /// another task held. By default they are left out (a busy machine then gives the
    /// figures of a quiet one, see [`Sample::wait_ns`]). Work that kernel threads carry
    /// in part keeps them: a copy's or a durable write's write-back and device
    /// submission, io_uring's workers run beside the thread and are its own cost, and a
    /// wait for them cannot be told from a wait for another program.
    fn keeps_cpu_waits(&self) -> bool {
        false
    }

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
    /// set-up (process start, buffer allocation) that must not be timed. Taken whole:
    /// the work's processes also wait for each other (two sides of a transfer sharing a
    /// CPU) and for the kernel threads that carry it (TCP), so no wait is left out.
    pub elapsed_ns: Option<u64>,
    /// Resource usage of each process that did the work, by role name.
    pub processes: Vec<(String, rusage::RusageDelta)>,
}
