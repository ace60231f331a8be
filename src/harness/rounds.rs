//! Interleaved sampling for workloads whose one sample is a whole pass (a file copy,
//! a stream of bytes through a pipe), too long to calibrate or repeat inside a sample.
//!
//! Every case first runs a discarded warm-up pass (unless it says another case warmed
//! its code path, [`Workload::warm_up`]). A case whose pass can grow or shrink
//! ([`Workload::pass_range`]) is fitted on it: the warm-up is timed, and the pass is
//! sized to last [`Config::pass_time`], never below the case's steady-state minimum nor
//! above its maximum (a warm-up far shorter than that is repeated at the fitted size
//! and timed again). Then the cases take turns, one pass per case per round, so that
//! drift (page-cache growth, write-back, a noisy neighbour) hits all of them alike. A
//! case leaves the rotation once it has at least `min_samples` samples and its
//! median's CI meets the target, which leaves the rest of the group's time to the cases
//! still wide; the rotation ends when every case has left it, when the group's budget
//! (`budget` × cases) is spent with every case at its minimum, or at `max_samples`
//! rounds.

use super::Workload;
use super::clock::{now, ns_between};
use super::config::Config;
use super::sampler::{Sampled, timed};
use crate::interrupt;
use anyhow::Result;
use std::time::Duration;

/// Most warm-up passes spent fitting one case's pass.
const MAX_FITTING_PASSES: usize = 4;

/// Iterations for a pass of `target`, from a pass of `iters` that took `elapsed_ns`,
/// within `lo..=hi`.
pub fn fit_pass(target: Duration, elapsed_ns: u64, iters: u64, (lo, hi): (u64, u64)) -> u64 {
    let per_iter = elapsed_ns.max(1) as f64 / iters.max(1) as f64;
    let want = (target.as_nanos() as f64 / per_iter).ceil();
    let want = if want.is_finite() {
        want.min(u64::MAX as f64) as u64
    } else {
        hi
    };
    want.clamp(lo.max(1), hi.max(lo).max(1))
}

/// Runs `w`'s warm-up: one pass, or for a fitted case passes until one lasts at least
/// half the target (or the range is exhausted). Returns (iterations run, pass size,
/// the passes' own time in ns).
fn warm_up(w: &mut dyn Workload, cfg: &Config) -> Result<(u64, u64, u64)> {
    let Some(range) = w.pass_range() else {
        if !w.warm_up() {
            return Ok((0, 1, 0));
        }
        let s = timed(w, 1)?;
        return Ok((1, 1, s.elapsed_ns));
    };
    let (lo, hi) = (range.0.max(1), range.1.max(range.0).max(1));
    let mut iters = lo;
    let (mut run, mut ns) = (0, 0);
    for n in 1..=MAX_FITTING_PASSES {
        interrupt::check()?;
        let s = timed(w, iters)?;
        run += iters;
        ns += s.elapsed_ns;
        let next = fit_pass(cfg.pass_time, s.elapsed_ns, iters, (lo, hi));
        let long_enough = s.elapsed_ns as u128 * 2 >= cfg.pass_time.as_nanos();
        if long_enough || next <= iters || n == MAX_FITTING_PASSES {
            return Ok((run, next, ns));
        }
        iters = next;
    }
    Ok((run, iters, ns))
}

/// Samples in a row whose rate must hold steady for a settling case's samples to start
/// there (fio's steady-state window).
pub const STEADY_WINDOW: usize = 5;

/// The most first samples a settling case leaves out looking for a steady window.
pub const MAX_RAMP: usize = 5;

/// Largest slope per sample, as a fraction of the window's mean rate, of a steady window.
const STEADY_SLOPE: f64 = 0.01;

/// Where a settling case's samples start: the search moves past each first sample
/// whose window of [`STEADY_WINDOW`] is not steady, until it finds one or has passed
/// [`MAX_RAMP`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ramp {
    /// Not a settling case: every sample counts.
    None,
    /// Still looking: samples before `.0` are the ramp so far.
    Searching(usize),
    /// Found, or given up (`settled` false): samples before `start` are the ramp.
    Done { start: usize, settled: bool },
}

impl Ramp {
    /// The first sample that counts.
    fn start(self) -> usize {
        match self {
            Ramp::None => 0,
            Ramp::Searching(k) | Ramp::Done { start: k, .. } => k,
        }
    }

    /// The search moved on by the samples (ns per iteration) taken so far.
    fn advance(self, ns_per_iter: &[f64]) -> Ramp {
        let Ramp::Searching(mut k) = self else {
            return self;
        };
        while ns_per_iter.len() >= k + STEADY_WINDOW {
            let rates: Vec<f64> = ns_per_iter[k..k + STEADY_WINDOW]
                .iter()
                .map(|ns| 1.0 / ns.max(f64::MIN_POSITIVE))
                .collect();
            if super::stats::relative_slope(&rates).abs() < STEADY_SLOPE {
                return Ramp::Done {
                    start: k,
                    settled: true,
                };
            }
            if k == MAX_RAMP {
                return Ramp::Done {
                    start: k,
                    settled: false,
                };
            }
            k += 1;
        }
        Ramp::Searching(k)
    }

    /// Whether `n` samples give the case its `min` after the ramp, the ramp known.
    fn has(self, n: usize, min: usize) -> bool {
        !matches!(self, Ramp::Searching(_)) && n >= self.start() + min
    }
}

/// Samples every workload in `cases`, round-robin. `on_sample(i, round)` is called
/// before case `i` runs its sample of `round` (0 is the warm-up), for progress display.
pub fn measure_rounds(
    cases: &mut [&mut dyn Workload],
    cfg: &Config,
    mut on_sample: impl FnMut(usize, usize),
) -> Result<Vec<Sampled>> {
    let start = now();
    let (mut out, pass) = warm_all(cases, cfg, &mut on_sample)?;
    let mut ramp: Vec<Ramp> = cases
        .iter()
        .map(|w| {
            if w.settles() {
                Ramp::Searching(0)
            } else {
                Ramp::None
            }
        })
        .collect();
    let budget = cfg.budget.saturating_mul(cases.len().max(1) as u32);
    let min = cfg.round_min();
    // Every case has its minimum: the budget may end the rotation. A settling case that
    // has not its minimum after its ramp by then keeps every sample (see
    // [`leave_out_ramp`]): the time limit is kept, and the row says it did not settle.
    let all_have = |out: &[Sampled]| out.iter().all(|o| o.converged || o.samples.len() >= min);
    let mut round = 0;
    'rounds: loop {
        round += 1;
        let mut active = 0;
        let open = out.iter().any(|o| !o.converged);
        for (i, w) in cases.iter_mut().enumerate() {
            if out[i].converged && !(open && w.stays_in_rotation()) {
                continue;
            }
            if start.elapsed() >= budget && all_have(&out) {
                break 'rounds;
            }
            active += 1;
            interrupt::check()?;
            on_sample(i, round);
            sample(&mut **w, (&mut out[i], &mut ramp[i]), pass[i], cfg)?;
        }
        if active == 0 || round >= cfg.max_samples.max(min + MAX_RAMP) {
            break;
        }
        if start.elapsed() >= budget && all_have(&out) {
            break;
        }
    }
    for (o, r) in out.iter_mut().zip(ramp) {
        leave_out_ramp(o, r, min);
    }
    Ok(out)
}

/// Every case's warm-up, in turn: its outcome so far (the warm-up's iterations, and
/// its set-up's first part: the wall time outside the warm-up's passes) and the pass
/// size it fitted.
fn warm_all(
    cases: &mut [&mut dyn Workload],
    cfg: &Config,
    on_sample: &mut impl FnMut(usize, usize),
) -> Result<(Vec<Sampled>, Vec<u64>)> {
    let (mut out, mut pass) = (Vec::new(), Vec::new());
    for (i, w) in cases.iter_mut().enumerate() {
        interrupt::check()?;
        on_sample(i, 0);
        let t = now();
        let (run, size, ns) = warm_up(&mut **w, cfg)?;
        out.push(Sampled {
            samples: Vec::new(),
            warmup_iters: run,
            converged: false,
            steady: None,
            setup: Some(super::Setup {
                first_ns: ns_between(t, now()).saturating_sub(ns),
                ..Default::default()
            }),
        });
        pass.push(size);
    }
    Ok((out, pass))
}

/// One timed pass of `iters` for a case: its sample kept, the wall time outside the
/// pass added to its set-up, its ramp advanced, and whether its CI now meets the target.
fn sample(
    w: &mut dyn Workload,
    (o, ramp): (&mut Sampled, &mut Ramp),
    iters: u64,
    cfg: &Config,
) -> Result<()> {
    let t = now();
    let s = timed(w, iters)?;
    if let Some(setup) = &mut o.setup {
        setup.later_ns += ns_between(t, now()).saturating_sub(s.elapsed_ns);
        setup.later += 1;
    }
    o.samples.push(s);
    *ramp = ramp.advance(&o.ns_per_iter());
    let from = ramp.start();
    if ramp.has(o.samples.len(), cfg.round_min())
        && super::stats::summarize(&o.ns_per_iter()[from..])
            .is_some_and(|s| s.rel_ci_halfwidth() <= cfg.target_rel_ci)
    {
        o.converged = true;
    }
    Ok(())
}

/// Moves a settling case's ramp out of its samples, into its warm-up, when at least
/// `min` samples are left after it; otherwise (the rotation ended first: the time
/// limit, or `max_samples` while still looking) every sample is kept, and the case is
/// not settled.
fn leave_out_ramp(o: &mut Sampled, r: Ramp, min: usize) {
    let (k, settled) = match r {
        Ramp::None => return,
        Ramp::Searching(_) => (0, false),
        Ramp::Done { start, settled } if o.samples.len() >= start + min => (start, settled),
        Ramp::Done { .. } => (0, false),
    };
    o.warmup_iters += o.samples.drain(..k).map(|s| s.iters).sum::<u64>();
    o.steady = Some(super::Steady {
        ramp_samples: k,
        settled,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::config::MIN_ROUND_SAMPLES;

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
            pass_time: Duration::from_millis(2),
            warmup: Duration::ZERO,
            budget: Duration::from_millis(5),
            min_samples: 5,
            min_round_samples: MIN_ROUND_SAMPLES,
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
        // Strict alternation: a, b, a, b, ... (the last round may stop after a, when
        // the budget runs out with both at their minimum).
        let log = log.borrow();
        assert!(log.chunks(2).all(|p| p == [0, 1] || p == [0]), "{log:?}");
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
        // Any CI passes. (10.0 did not: on a loaded machine one of six ~50 µs samples
        // preempted for a few ms spans the median's 6-sample interval to over 1000%,
        // and the case ran out its budget unconverged.)
        c.target_rel_ci = f64::INFINITY;
        let out = measure_rounds(&mut [&mut steady], &c, |_, _| {}).unwrap();
        assert!(out[0].converged);
        assert_eq!(out[0].samples.len(), 6);
    }

    /// A case whose samples take `times` (ns, in turn), timed by itself, so that which
    /// case converges does not depend on the machine.
    struct Timed {
        times: Vec<u64>,
        n: usize,
        stays: bool,
    }

    impl Workload for Timed {
        fn run(&mut self, _iters: u64) -> Result<()> {
            Ok(())
        }

        fn warm_up(&self) -> bool {
            false
        }

        fn stays_in_rotation(&self) -> bool {
            self.stays
        }

        fn external(&mut self) -> Option<crate::harness::External> {
            let ns = self.times[self.n % self.times.len()];
            self.n += 1;
            Some(crate::harness::External {
                elapsed_ns: Some(ns),
                processes: Vec::new(),
            })
        }
    }

    #[test]
    fn a_converged_case_that_stays_in_rotation_samples_while_another_does() {
        let mut c = cfg();
        c.budget = Duration::from_secs(60);
        c.target_rel_ci = 0.01;
        let counts = |stays: bool| {
            let mut steady = Timed {
                times: vec![1000],
                n: 0,
                stays,
            };
            let mut noisy = Timed {
                times: vec![1000, 3000],
                n: 0,
                stays,
            };
            let out = measure_rounds(&mut [&mut steady, &mut noisy], &c, |_, _| {}).unwrap();
            assert!(out[0].converged && !out[1].converged);
            (out[0].samples.len(), out[1].samples.len())
        };
        // It left at its minimum; kept in, it takes every round the other one takes.
        let (left, other) = counts(false);
        assert_eq!(left, MIN_ROUND_SAMPLES.max(c.min_samples));
        assert!(other > left, "{other}");
        assert_eq!(counts(true), (other, other));
    }

    /// A case that sleeps before each pass: 20 ms before its first (its processes and
    /// connection), 2 ms before each later one; its passes take no time.
    struct SetsUp {
        passes: usize,
    }

    impl Workload for SetsUp {
        fn run(&mut self, _iters: u64) -> Result<()> {
            Ok(())
        }

        fn before_sample(&mut self) -> Result<()> {
            let ms = if self.passes == 0 { 20 } else { 2 };
            std::thread::sleep(Duration::from_millis(ms));
            self.passes += 1;
            Ok(())
        }
    }

    #[test]
    fn a_case_s_set_up_is_told_apart_from_its_passes() {
        let mut w = SetsUp { passes: 0 };
        let out = measure_rounds(&mut [&mut w], &cfg(), |_, _| {}).unwrap();
        let s = out[0].setup.expect("a round-robin case's set-up");
        assert_eq!(s.later, out[0].samples.len());
        assert_eq!(w.passes, 1 + s.later);
        // Sleeps last at least as long as asked (longer on a loaded machine): the
        // first at least 20 ms, each later one at least 2 ms.
        assert!(s.first_ns >= 20_000_000, "{s:?}");
        assert!(s.later_ns >= 2_000_000 * s.later as u64, "{s:?}");
    }

    /// A pass whose iterations each spin a fixed time; it may have `range` iterations.
    struct Stretchy {
        range: (u64, u64),
        sizes: Vec<u64>,
    }

    impl Workload for Stretchy {
        fn pass_range(&self) -> Option<(u64, u64)> {
            Some(self.range)
        }

        /// It spins on the wall clock, which runs on while another thread holds the CPU.
        fn keeps_cpu_waits(&self) -> bool {
            true
        }

        fn run(&mut self, iters: u64) -> Result<()> {
            self.sizes.push(iters);
            let t = now();
            while t.elapsed() < Duration::from_micros(20) * iters as u32 {
                std::hint::spin_loop();
            }
            Ok(())
        }
    }

    #[test]
    fn a_stretchy_pass_is_fitted_to_the_pass_time_within_its_range() {
        // 20 us per iteration, 2 ms passes: about 100 iterations (fewer when the
        // machine is slow: a slower warm-up gives a smaller pass, never a larger one).
        let mut w = Stretchy {
            range: (4, 10_000),
            sizes: vec![],
        };
        let out = measure_rounds(&mut [&mut w], &cfg(), |_, _| {}).unwrap();
        let n = out[0].samples[0].iters;
        assert!((4..=100).contains(&n), "{n}");
        assert!(out[0].samples.iter().all(|s| s.iters == n));
        assert_eq!(w.sizes[0], 4, "the first warm-up pass is the minimum");
        assert_eq!(
            out[0].warmup_iters,
            w.sizes[..w.sizes.len() - out[0].samples.len()]
                .iter()
                .sum::<u64>()
        );

        // A range whose minimum is longer than the target: the minimum.
        let mut w = Stretchy {
            range: (200, 10_000),
            sizes: vec![],
        };
        let out = measure_rounds(&mut [&mut w], &cfg(), |_, _| {}).unwrap();
        assert!(out[0].samples.iter().all(|s| s.iters == 200));
        // A maximum below the target: the maximum.
        let mut w = Stretchy {
            range: (1, 10),
            sizes: vec![],
        };
        let out = measure_rounds(&mut [&mut w], &cfg(), |_, _| {}).unwrap();
        assert!(out[0].samples.iter().all(|s| s.iters == 10));
    }

    /// A settling case whose samples take the scripted times (ns), then `flat` ns.
    struct Scripted {
        times: Vec<u64>,
        flat: u64,
        n: usize,
    }

    impl Workload for Scripted {
        fn run(&mut self, _iters: u64) -> Result<()> {
            Ok(())
        }

        fn settles(&self) -> bool {
            true
        }

        fn warm_up(&self) -> bool {
            false
        }

        fn external(&mut self) -> Option<crate::harness::External> {
            let ns = self.times.get(self.n).copied().unwrap_or(self.flat);
            self.n += 1;
            Some(crate::harness::External {
                elapsed_ns: Some(ns),
                processes: Vec::new(),
            })
        }
    }

    /// A settling case's sampling under `budget`.
    fn settled_within(times: &[u64], flat: u64, budget: Duration) -> Sampled {
        let mut w = Scripted {
            times: times.to_vec(),
            flat,
            n: 0,
        };
        let mut c = cfg();
        c.target_rel_ci = 0.5;
        c.budget = budget;
        measure_rounds(&mut [&mut w], &c, |_, _| {}).unwrap()[0].clone()
    }

    /// [`settled_within`] with time to spare: the case ends when its CI is narrow.
    fn settled(times: &[u64], flat: u64) -> Sampled {
        settled_within(times, flat, Duration::from_secs(60))
    }

    #[test]
    fn a_settling_case_leaves_out_its_ramp_and_keeps_its_minimum_after_it() {
        // Three rising samples, then steady: the first steady window starts at the 4th.
        let s = settled(&[1000, 800, 600], 500);
        let st = s.steady.unwrap();
        assert_eq!((st.ramp_samples, st.settled), (3, true));
        assert_eq!(s.samples.len(), MIN_ROUND_SAMPLES);
        assert!(s.samples.iter().all(|x| x.elapsed_ns == 500));
        assert_eq!(s.warmup_iters, 3);

        // A slow regime that ends falls under the same rule.
        let st = settled(&[500, 500, 900, 900], 500).steady.unwrap();
        assert_eq!((st.ramp_samples, st.settled), (4, true));

        // Steady from the start: nothing is left out.
        let s = settled(&[], 500);
        assert_eq!(s.steady.unwrap().ramp_samples, 0);
        assert_eq!(s.samples.len(), MIN_ROUND_SAMPLES);

        // A rate that keeps climbing: the search gives up after MAX_RAMP samples.
        let climbing: Vec<u64> = (0..40).map(|i| 2000 - 40 * i).collect();
        let s = settled(&climbing, 400);
        let st = s.steady.unwrap();
        assert_eq!((st.ramp_samples, st.settled), (MAX_RAMP, false));
        assert_eq!(s.samples.len(), MIN_ROUND_SAMPLES);
    }

    #[test]
    fn a_spent_time_limit_keeps_every_sample_of_a_case_short_of_its_minimum_after_the_ramp() {
        // The budget is spent from the start: the rotation ends when every case has its
        // minimum, before three ramp samples and six after them.
        let s = settled_within(&[1000, 800, 600], 500, Duration::ZERO);
        assert_eq!(s.samples.len(), MIN_ROUND_SAMPLES);
        let st = s.steady.unwrap();
        assert_eq!((st.ramp_samples, st.settled), (0, false));
        assert_eq!(s.samples[0].elapsed_ns, 1000);
    }

    #[test]
    fn a_case_that_does_not_settle_keeps_every_sample() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut a = Pass {
            runs: vec![],
            wobble: true,
            log,
            id: 0,
        };
        let out = measure_rounds(&mut [&mut a], &cfg(), |_, _| {}).unwrap();
        assert_eq!(out[0].steady, None);
        assert_eq!(
            out[0].samples.len(),
            a.runs.len() - 1,
            "all but the warm-up"
        );
    }

    #[test]
    fn fitting_arithmetic() {
        let ms = Duration::from_millis(1);
        // 10 iterations took 1 ms: 50 ms needs 500.
        assert_eq!(fit_pass(ms * 50, 1_000_000, 10, (1, 1000)), 500);
        assert_eq!(fit_pass(ms * 50, 1_000_000, 10, (1, 100)), 100);
        assert_eq!(fit_pass(ms * 50, 1_000_000, 10, (800, 1000)), 800);
        // A zero-length pass asks for the maximum, a degenerate range for its minimum.
        assert_eq!(fit_pass(ms, 0, 10, (1, 1000)), 1000);
        assert_eq!(fit_pass(ms, 0, 10, (5, 2)), 5);
    }
}
