//! Interleaved sampling for workloads whose one iteration is a whole pass (a file copy,
//! a stream of `--total` bytes through a pipe), too long to calibrate or repeat inside
//! a sample.
//!
//! Every case first runs one discarded pass (warm-up). Then the cases take turns, one
//! pass per case per round, so that drift (page-cache growth, write-back, a noisy
//! neighbour) hits all of them alike. A case leaves the rotation once it has at least
//! `min_samples` samples and its median's CI meets the target; the rotation ends when
//! every case has left it, when the group's budget (`budget` × cases) is spent with
//! every case at `min_samples`, or at `max_samples` rounds.

use super::Workload;
use super::clock::now;
use super::config::Config;
use super::interrupt;
use super::sampler::{Sampled, timed};
use anyhow::Result;

/// A round-robin row never leaves the rotation with fewer samples than this.
pub const MIN_ROUND_SAMPLES: usize = 6;

/// Samples every workload in `cases`, round-robin. `on_sample(i, round)` is called
/// before case `i` runs its sample of `round` (0 is the warm-up), for progress display.
pub fn measure_rounds(
    cases: &mut [&mut dyn Workload],
    cfg: &Config,
    mut on_sample: impl FnMut(usize, usize),
) -> Result<Vec<Sampled>> {
    let start = now();
    let mut out: Vec<Sampled> = (0..cases.len())
        .map(|_| Sampled {
            samples: Vec::new(),
            warmup_iters: 0,
            converged: false,
        })
        .collect();
    for (i, w) in cases.iter_mut().enumerate() {
        interrupt::check()?;
        on_sample(i, 0);
        timed(&mut **w, 1)?;
        out[i].warmup_iters = 1;
    }
    let budget = cfg.budget.saturating_mul(cases.len().max(1) as u32);
    let mut round = 0;
    loop {
        round += 1;
        let mut active = 0;
        for (i, w) in cases.iter_mut().enumerate() {
            if out[i].converged {
                continue;
            }
            active += 1;
            interrupt::check()?;
            on_sample(i, round);
            let s = timed(&mut **w, 1)?;
            let o = &mut out[i];
            o.samples.push(s);
            let n = o.samples.len();
            if n >= cfg.min_samples.max(MIN_ROUND_SAMPLES)
                && o.summary()
                    .is_some_and(|s| s.rel_ci_halfwidth() <= cfg.target_rel_ci)
            {
                o.converged = true;
            }
        }
        if active == 0 || round >= cfg.max_samples {
            break;
        }
        if round >= cfg.min_samples && start.elapsed() >= budget {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A pass whose duration alternates, so it never converges.
    struct Pass {
        runs: Vec<u64>,
        wobble: bool,
        log: std::rc::Rc<std::cell::RefCell<Vec<usize>>>,
        id: usize,
    }

    impl Workload for Pass {
        fn run(&mut self, iters: u64) -> Result<()> {
            self.runs.push(iters);
            self.log.borrow_mut().push(self.id);
            let spin = if self.wobble && self.runs.len().is_multiple_of(2) {
                40_000
            } else {
                20_000
            };
            let mut x = 0u64;
            for i in 0..spin {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            std::hint::black_box(x);
            Ok(())
        }
    }

    fn cfg() -> Config {
        Config {
            sample_time: Duration::from_micros(100),
            warmup: Duration::ZERO,
            budget: Duration::from_millis(5),
            min_samples: 5,
            max_samples: 40,
            target_rel_ci: 0.0,
        }
    }

    #[test]
    fn cases_take_turns_and_get_at_least_min_samples() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut a = Pass {
            runs: vec![],
            wobble: true,
            log: log.clone(),
            id: 0,
        };
        let mut b = Pass {
            runs: vec![],
            wobble: true,
            log: log.clone(),
            id: 1,
        };
        let out = measure_rounds(&mut [&mut a, &mut b], &cfg(), |_, _| {}).unwrap();
        assert_eq!(out.len(), 2);
        for o in &out {
            assert!(o.samples.len() >= 5, "{}", o.samples.len());
            assert_eq!(o.warmup_iters, 1);
            assert!(o.samples.iter().all(|s| s.iters == 1));
        }
        assert!(a.runs.iter().all(|&i| i == 1));
        // Strict alternation: a, b, a, b, ...
        let log = log.borrow();
        assert!(log.chunks(2).all(|p| p == [0, 1]), "{log:?}");
    }

    #[test]
    fn a_converged_case_leaves_the_rotation() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut steady = Pass {
            runs: vec![],
            wobble: false,
            log: log.clone(),
            id: 0,
        };
        let mut c = cfg();
        c.target_rel_ci = 10.0; // any CI passes
        let out = measure_rounds(&mut [&mut steady], &c, |_, _| {}).unwrap();
        assert!(out[0].converged);
        assert_eq!(out[0].samples.len(), 6);
    }
}
