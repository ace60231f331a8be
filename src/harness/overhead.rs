//! The harness's own costs: one clock read and one iteration of an empty loop, measured
//! with the same sampler, so a figure close to them can be flagged.

use super::Workload;
use super::config::Config;
use super::sampler::measure;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::hint::black_box;

/// Measured harness overheads in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Cost of one clock read (`Instant::now`).
    pub timer_ns: f64,
    /// Cost of one iteration of an empty counted loop (black_box on the counter).
    pub empty_loop_ns: f64,
}

impl Overhead {
    /// A warning when the loop overhead exceeds 1% of `ns_per_iter`, else None.
    pub fn warning_for(&self, ns_per_iter: f64) -> Option<String> {
        let frac = self.empty_loop_ns / ns_per_iter;
        (frac > 0.01).then(|| {
            format!(
                "loop overhead {:.2} ns is {:.1}% of this figure",
                self.empty_loop_ns,
                frac * 100.0
            )
        })
    }
}

impl Overhead {
    /// A warning when reading the clock around a sample of `sample_ns` costs ≥1% of it.
    pub fn timer_warning(&self, sample_ns: f64) -> Option<String> {
        let frac = self.timer_ns / sample_ns;
        (frac > 0.01).then(|| {
            format!(
                "clock reads ({:.1} ns) are {:.1}% of a sample; raise --sample-time",
                self.timer_ns,
                frac * 100.0
            )
        })
    }
}

struct ClockReads;
impl Workload for ClockReads {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            black_box(super::clock::now());
        }
        Ok(())
    }
}

struct EmptyLoop;
impl Workload for EmptyLoop {
    fn run(&mut self, iters: u64) -> Result<()> {
        for i in 0..iters {
            black_box(i);
        }
        Ok(())
    }
}

/// Measures both overheads with a short version of `cfg`.
pub fn measure_overhead(cfg: &Config) -> Result<Overhead> {
    let short = Config {
        budget: cfg.budget.min(std::time::Duration::from_millis(300)),
        warmup: cfg.warmup.min(std::time::Duration::from_millis(30)),
        ..cfg.clone()
    };
    let median = |w: &mut dyn Workload| -> Result<f64> {
        Ok(measure(w, &short)?.summary().map_or(f64::NAN, |s| s.median))
    };
    Ok(Overhead {
        timer_ns: median(&mut ClockReads)?,
        empty_loop_ns: median(&mut EmptyLoop)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_fire_above_one_percent_only() {
        let o = Overhead {
            timer_ns: 20.0,
            empty_loop_ns: 0.5,
        };
        assert!(o.warning_for(10.0).is_some());
        assert!(o.warning_for(100.0).is_none());
        assert!(o.timer_warning(1000.0).is_some());
        assert!(o.timer_warning(10_000_000.0).is_none());
    }
}
