//! How long and how often to sample.

use std::time::Duration;

/// A round-robin row never leaves the rotation with fewer samples than this (the
/// fewest for which the median's order-statistic CI reaches 95%).
pub const MIN_ROUND_SAMPLES: usize = 6;

/// Sampling settings for one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Minimum duration of one sample; iterations per sample are calibrated to reach it.
    pub sample_time: Duration,
    /// Length a whole-pass sample is fitted to, for workloads whose pass can grow or
    /// shrink (see [`Workload::pass_range`](super::Workload::pass_range)).
    pub pass_time: Duration,
    /// Time spent running the case (discarded) before sampling.
    pub warmup: Duration,
    /// Time after which sampling stops even if the CI is still wide.
    pub budget: Duration,
    /// Never fewer samples than this.
    pub min_samples: usize,
    /// Never fewer samples than this for a round-robin row (a whole pass a sample):
    /// [`MIN_ROUND_SAMPLES`](MIN_ROUND_SAMPLES), fewer in `run`'s first pass,
    /// whose undecided answers are sampled again.
    pub min_round_samples: usize,
    /// Never more samples than this.
    pub max_samples: usize,
    /// Stop once the 95% CI of the median is within ± this fraction of the median.
    pub target_rel_ci: f64,
}

impl Config {
    /// The fewest samples a round-robin row takes.
    pub fn round_min(&self) -> usize {
        self.min_samples.max(self.min_round_samples)
    }

    /// `--quick` and the default scale: enough for a ±1% CI on a quiet machine in well
    /// under a second.
    pub fn quick() -> Self {
        Config {
            sample_time: Duration::from_millis(10),
            pass_time: Duration::from_millis(25),
            warmup: Duration::from_millis(50),
            budget: Duration::from_millis(600),
            min_samples: 5,
            min_round_samples: MIN_ROUND_SAMPLES,
            max_samples: 10_000,
            target_rel_ci: 0.01,
        }
    }

    /// `--thorough`: longer warm-up, more samples, more time per case, passes of half a
    /// second (up to the most a workload allows: its seed's total).
    pub fn thorough() -> Self {
        Config {
            sample_time: Duration::from_millis(10),
            pass_time: Duration::from_millis(500),
            warmup: Duration::from_millis(500),
            budget: Duration::from_secs(5),
            min_samples: 20,
            min_round_samples: MIN_ROUND_SAMPLES,
            max_samples: 100_000,
            target_rel_ci: 0.01,
        }
    }
}
