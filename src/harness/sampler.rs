//! Calibration and sampling: warm up, find iterations per sample, then take timed
//! samples (each with its rusage delta) until the median's 95% CI is within the target
//! or the budget is spent, never fewer than `min_samples`.

use super::Workload;
use super::clock::{now, ns_between};
use super::config::Config;
use super::rusage::{RusageDelta, thread_now};
use super::stats::{Summary, summarize};
use crate::interrupt;
use crate::sys::load::run_delay_ns;
use anyhow::Result;
use std::time::Duration;

/// One timed sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub iters: u64,
    /// The sample's time: its wall time less [`Sample::wait_ns`].
    pub elapsed_ns: u64,
    /// Time the work was runnable but waited for a CPU another task held (the run
    /// queue's delay), left out of `elapsed_ns`; None where nothing was left out (the
    /// OS does not say, the work keeps its waits: [`Workload::keeps_cpu_waits`], or it
    /// timed itself: [`super::External::elapsed_ns`]).
    pub wait_ns: Option<u64>,
    /// The measuring thread's counters, or the sum of `processes` when the work ran there.
    pub rusage: RusageDelta,
    /// Per-process counters, by role, for work done in other processes.
    pub processes: Vec<(String, RusageDelta)>,
}

/// The outcome of sampling one workload.
#[derive(Debug, Clone)]
pub struct Sampled {
    pub samples: Vec<Sample>,
    /// Iterations run before sampling (calibration and warm-up), all discarded.
    pub warmup_iters: u64,
    /// True when the CI target was met; false when the budget ran out first.
    pub converged: bool,
    /// For a round-robin case that settles ([`Workload::settles`]): how many of its
    /// first samples were left out as its ramp (their iterations are in
    /// `warmup_iters`), and whether its rate was then steady. None: not asked.
    pub steady: Option<Steady>,
    /// For a round-robin case: the wall time the harness spent on it outside its
    /// passes' own times, which a time estimate adds to its passes. None: a
    /// calibrated case.
    pub setup: Option<Setup>,
}

/// A round-robin case's wall time outside its passes' own times: its set-up before
/// each pass (processes, connections, a verification pass) and what timing a pass
/// adds around it (a transfer's messages to its processes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Setup {
    /// Before and around its warm-up (the first pass: where a case opens what its
    /// passes keep, and checks its bytes).
    pub first_ns: u64,
    /// Before and around its timed passes after the warm-up, all of them.
    pub later_ns: u64,
    /// How many timed passes `later_ns` covers.
    pub later: usize,
}

/// Where a settling case's samples start (see [`crate::harness::rounds`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steady {
    /// Samples left out before the first steady window.
    pub ramp_samples: usize,
    /// Whether a window of [`crate::harness::rounds::STEADY_WINDOW`] samples whose
    /// rate's slope is under 1% of its mean was found and used (false: the search gave
    /// up at [`crate::harness::rounds::MAX_RAMP`] samples, and the samples after it are
    /// kept; or the budget left too few samples after the ramp, and all are kept).
    pub settled: bool,
}

impl Sampled {
    /// Nanoseconds per iteration, one value per sample.
    pub fn ns_per_iter(&self) -> Vec<f64> {
        self.samples
            .iter()
            .map(|s| s.elapsed_ns as f64 / s.iters as f64)
            .collect()
    }

    /// Iterations across all timed samples.
    pub fn total_iters(&self) -> u64 {
        self.samples.iter().map(|s| s.iters).sum()
    }

    /// Sum of the samples' rusage deltas.
    pub fn rusage_total(&self) -> RusageDelta {
        let mut t = RusageDelta::default();
        for s in &self.samples {
            t.add(&s.rusage);
        }
        t
    }

    /// Per-role sums of the samples' process counters, in first-seen order.
    pub fn process_totals(&self) -> Vec<(String, RusageDelta)> {
        let mut out: Vec<(String, RusageDelta)> = Vec::new();
        for s in &self.samples {
            for (role, r) in &s.processes {
                match out.iter_mut().find(|(k, _)| k == role) {
                    Some((_, t)) => t.add(r),
                    None => out.push((role.clone(), *r)),
                }
            }
        }
        out
    }

    /// The share of the samples' wall time spent waiting for a CPU (left out of their
    /// figures), or None when no sample could tell.
    pub fn cpu_wait(&self) -> Option<f64> {
        let (mut wait, mut wall, mut told) = (0u64, 0u64, false);
        for s in &self.samples {
            let w = s.wait_ns.unwrap_or(0);
            told |= s.wait_ns.is_some();
            wait += w;
            wall += s.elapsed_ns + w;
        }
        told.then(|| wait as f64 / wall.max(1) as f64)
    }

    /// Statistics of ns per iteration.
    pub fn summary(&self) -> Option<Summary> {
        summarize(&self.ns_per_iter())
    }
}

/// Longest stretch a sample runs without looking at the interrupt flag: a long sample
/// runs in pieces of about this length, so Ctrl-C is obeyed within half a second even
/// with `--sample-time 10s`. One atomic load per piece costs nothing measurable.
pub const PIECE: Duration = Duration::from_millis(250);

pub(crate) fn timed(w: &mut dyn Workload, iters: u64) -> Result<Sample> {
    timed_in_pieces(w, iters, iters)
}

/// A timed sample of `iters` iterations run as calls of at most `piece` iterations, the
/// interrupt flag checked between calls (inside the timing: it is one load).
pub(crate) fn timed_in_pieces(w: &mut dyn Workload, iters: u64, piece: u64) -> Result<Sample> {
    w.before_sample()?;
    let r0 = thread_now()?;
    let d0 = run_delay_ns();
    let t0 = now();
    let mut left = iters;
    while left > 0 {
        let n = left.min(piece.max(1));
        w.run(n)?;
        left -= n;
        if left > 0 {
            interrupt::check()?;
        }
    }
    let t1 = now();
    let d1 = run_delay_ns();
    let r1 = thread_now()?;
    let waited = match w.keeps_cpu_waits() {
        true => None,
        false => d0.zip(d1).map(|(a, b)| b.saturating_sub(a)),
    };
    let (elapsed_ns, wait_ns) = net_of_wait(ns_between(t0, t1), waited);
    let mut sample = Sample {
        iters,
        elapsed_ns,
        wait_ns,
        rusage: RusageDelta::between(&r0, &r1),
        processes: Vec::new(),
    };
    if let Some(x) = w.external() {
        if let Some(ns) = x.elapsed_ns {
            sample.elapsed_ns = ns.max(1);
            sample.wait_ns = None;
        }
        if !x.processes.is_empty() {
            let mut sum = RusageDelta::default();
            for (_, r) in &x.processes {
                sum.add(r);
            }
            sample.rusage = sum;
            sample.processes = x.processes;
        }
    }
    w.after_sample()?;
    Ok(sample)
}

/// A sample's time without its wait for a CPU, and that wait, from its wall time and
/// the wait counted over it (None: not known, nothing is left out). The counters are
/// read just outside the clock's two readings, so a preemption between them would be
/// counted without having been timed: the wait is capped at nine tenths of the wall.
pub fn net_of_wait(wall_ns: u64, waited: Option<u64>) -> (u64, Option<u64>) {
    let wall_ns = wall_ns.max(1);
    match waited {
        Some(w) => {
            let wait = w.min(wall_ns / 10 * 9);
            ((wall_ns - wait).max(1), Some(wait))
        }
        None => (wall_ns, None),
    }
}

fn iters_for(target: Duration, ns_per_iter: f64) -> u64 {
    let want = target.as_nanos() as f64 / ns_per_iter.max(0.01);
    (want.ceil() as u64).clamp(1, 1 << 40)
}

/// Calibrates and samples `w` under `cfg`.
pub fn measure(w: &mut dyn Workload, cfg: &Config) -> Result<Sampled> {
    let start = now();
    let mut warmup_iters = 0u64;
    // Calibration: grow the iteration count until one run lasts a fifth of a sample.
    let mut iters = 1u64;
    let mut piece = u64::MAX;
    let mut per_iter = loop {
        interrupt::check()?;
        let s = timed_in_pieces(w, iters, piece)?;
        warmup_iters += iters;
        let per = s.elapsed_ns as f64 / iters as f64;
        piece = iters_for(PIECE, per);
        if s.elapsed_ns as u128 * 5 >= cfg.sample_time.as_nanos() || iters >= 1 << 40 {
            break per;
        }
        iters = if s.elapsed_ns > 2_000 {
            iters_for(cfg.sample_time, per)
                .min(iters.saturating_mul(100))
                .max(iters * 2)
        } else {
            iters.saturating_mul(10)
        };
    };
    // Warm-up: run full-size samples (discarded) until the warm-up time has passed,
    // re-estimating the cost per iteration from the latest one.
    iters = iters_for(cfg.sample_time, per_iter);
    piece = iters_for(PIECE, per_iter);
    while start.elapsed() < cfg.warmup {
        interrupt::check()?;
        let s = timed_in_pieces(w, iters, piece)?;
        warmup_iters += iters;
        per_iter = s.elapsed_ns as f64 / iters as f64;
        iters = iters_for(cfg.sample_time, per_iter);
        piece = iters_for(PIECE, per_iter);
    }
    let mut out = Sampled {
        samples: Vec::new(),
        warmup_iters,
        converged: false,
        steady: None,
        setup: None,
    };
    loop {
        interrupt::check()?;
        out.samples.push(timed_in_pieces(w, iters, piece)?);
        let n = out.samples.len();
        if n >= cfg.min_samples {
            let s = out.summary();
            if s.is_some_and(|s| s.rel_ci_halfwidth() <= cfg.target_rel_ci) && n >= 6 {
                out.converged = true;
                break;
            }
            if start.elapsed() >= cfg.budget || n >= cfg.max_samples {
                break;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Spin {
        calls: u64,
        iters: u64,
    }

    impl Workload for Spin {
        fn run(&mut self, iters: u64) -> Result<()> {
            self.calls += 1;
            self.iters += iters;
            let mut x = 0u64;
            for i in 0..iters {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            std::hint::black_box(x);
            Ok(())
        }
    }

    fn tiny() -> Config {
        Config {
            sample_time: Duration::from_micros(200),
            pass_time: Duration::from_millis(1),
            warmup: Duration::from_millis(2),
            budget: Duration::from_millis(30),
            min_samples: 5,
            min_round_samples: crate::harness::config::MIN_ROUND_SAMPLES,
            max_samples: 50,
            target_rel_ci: 0.01,
        }
    }

    #[test]
    fn takes_at_least_min_samples_and_counts_iterations() {
        let mut w = Spin { calls: 0, iters: 0 };
        let s = measure(&mut w, &tiny()).unwrap();
        assert!(s.samples.len() >= 5);
        assert!(s.samples.len() <= 50);
        assert_eq!(w.iters, s.total_iters() + s.warmup_iters);
        assert!(s.samples.iter().all(|x| x.iters >= 1 && x.elapsed_ns >= 1));
        assert!(s.summary().unwrap().median > 0.0);
    }

    #[test]
    fn a_wait_is_capped_and_an_unknown_one_leaves_the_wall_time() {
        assert_eq!(net_of_wait(1000, Some(300)), (700, Some(300)));
        assert_eq!(net_of_wait(1000, Some(5000)), (100, Some(900)));
        assert_eq!(net_of_wait(1000, None), (1000, None));
        assert_eq!(net_of_wait(0, Some(0)), (1, Some(0)));
    }

    /// Spins, and says it keeps its waits for a CPU.
    struct Keeping(Spin);
    impl Workload for Keeping {
        fn run(&mut self, iters: u64) -> Result<()> {
            self.0.run(iters)
        }
        fn keeps_cpu_waits(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_cpu_held_by_another_thread_is_left_out_of_the_samples() {
        use crate::sys::affinity::{allowed_cpus, pin_to};
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        if run_delay_ns().is_none() {
            return; // The OS does not say: nothing is left out (checked below).
        }
        let cpu = allowed_cpus().unwrap()[0];
        let stop = Arc::new(AtomicBool::new(false));
        let rival = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin_to(cpu).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        pin_to(cpu).unwrap();
        let cfg = Config {
            sample_time: Duration::from_millis(20),
            warmup: Duration::from_millis(20),
            budget: Duration::from_millis(300),
            min_samples: 6,
            min_round_samples: crate::harness::config::MIN_ROUND_SAMPLES,
            max_samples: 12,
            ..tiny()
        };
        let shared = measure(&mut Spin { calls: 0, iters: 0 }, &cfg).unwrap();
        let kept = measure(&mut Keeping(Spin { calls: 0, iters: 0 }), &cfg).unwrap();
        stop.store(true, Ordering::Relaxed);
        rival.join().unwrap();
        // Two spinning threads on one CPU: each waits about half the time.
        let share = shared.cpu_wait().unwrap();
        assert!(share > 0.2, "waited {share:.3} of the time");
        assert!(shared.samples.iter().all(|s| s.wait_ns.is_some()));
        assert_eq!(kept.cpu_wait(), None);
        assert!(kept.samples.iter().all(|s| s.wait_ns.is_none()));
    }

    struct Failing;
    impl Workload for Failing {
        fn run(&mut self, _: u64) -> Result<()> {
            anyhow::bail!("read failed: boom")
        }
    }

    #[test]
    fn a_long_sample_runs_in_pieces_counted_as_one() {
        let mut w = Spin { calls: 0, iters: 0 };
        let s = timed_in_pieces(&mut w, 1000, 300).unwrap();
        assert_eq!((s.iters, w.iters, w.calls), (1000, 1000, 4));
    }

    #[test]
    fn a_failing_workload_gives_an_error_not_a_figure() {
        let e = measure(&mut Failing, &tiny()).unwrap_err();
        assert!(e.to_string().contains("boom"));
    }
}
