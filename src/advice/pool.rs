//! Pooled evidence: `advise` pools the raw samples of the saved runs of one machine, so
//! the pick settles as runs accumulate instead of starting from nothing every run.
//!
//! The rule:
//! - Runs pool when they share the machine and its environment: host, kernel,
//!   filesystem, CPU model, CPU count, build profile and tuning facts
//!   ([`same_environment`]). A changed kernel setting starts a new pool.
//! - The newest [`POOL_MAX`] runs that measured the probe pool; rows pool when their
//!   probe, case and params are equal (a different file size is another row).
//! - Recent runs weigh more: the newest weighs 1, the next [`DECAY`], then `DECAY²`, …
//!   A run's weight is shared by its samples, so a run with more samples does not
//!   outweigh a newer one.
//! - The pooled median is the weighted median. Its interval is the order-statistic
//!   interval of the weighted samples at their effective count (`(Σw)²/Σw²`), widened
//!   to cover the spread of the runs' own medians (±1.96 · sd/√runs): runs that
//!   disagree give a wide interval, and a wide interval ties, which keeps the pick where
//!   the runs agree.

use crate::harness::stats::median_ci_indices;
use crate::results::{Measurement, Run};

/// Most runs pooled per probe.
pub const POOL_MAX: usize = 5;
/// Weight of a run relative to the next newer one.
pub const DECAY: f64 = 0.75;

/// Whether two runs measured the same machine in the same environment.
pub fn same_environment(a: &Run, b: &Run) -> bool {
    let (x, y) = (&a.environment, &b.environment);
    let fs = |e: &crate::sys::machine::Environment| {
        e.filesystem
            .as_ref()
            .map(|f| (f.fs_type.clone(), f.source.clone()))
    };
    x.hostname == y.hostname
        && x.kernel == y.kernel
        && fs(x) == fs(y)
        && x.cpu_model == y.cpu_model
        && x.logical_cpus == y.logical_cpus
        && x.build_profile == y.build_profile
        && x.tuning == y.tuning
}

/// `base`'s rows of `probe`, each pooled with the same row of `runs` (newest first,
/// `base` among them), with the indices into `runs` of the runs each row pooled. Rows
/// `base` lacks are left out: the run advice is taken from says what is measured.
pub fn pool(probe: &str, base: &Run, runs: &[&Run]) -> Vec<(Measurement, Vec<usize>)> {
    base.of_probe(probe)
        .map(|m| {
            let same: Vec<(usize, f64, &Measurement)> = runs
                .iter()
                .enumerate()
                .filter_map(|(age, r)| {
                    let o = r.of_probe(probe).find(|o| {
                        o.case == m.case && o.params == m.params && o.is_ok() && !o.raw.is_empty()
                    })?;
                    Some((age, DECAY.powi(age as i32), o))
                })
                .collect();
            let weighted: Vec<(f64, &Measurement)> = same.iter().map(|s| (s.1, s.2)).collect();
            (pooled(m, &weighted), same.iter().map(|s| s.0).collect())
        })
        .collect()
}

/// `m` with the weighted samples of `same` (weight, row), when more than one run has it.
fn pooled(m: &Measurement, same: &[(f64, &Measurement)]) -> Measurement {
    if same.len() < 2 || !m.is_ok() {
        return m.clone();
    }
    let mut w: Vec<(f64, f64)> = same
        .iter()
        .flat_map(|(wt, o)| {
            let each = wt / o.raw.len() as f64;
            o.raw.iter().map(move |&v| (v, each))
        })
        .collect();
    w.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = w.iter().map(|x| x.1).sum();
    let squares: f64 = w.iter().map(|x| x.1 * x.1).sum();
    let quantile = |p: f64| {
        let mut acc = 0.0;
        for &(v, wt) in &w {
            acc += wt;
            if acc >= p * total {
                return v;
            }
        }
        w.last().map_or(f64::NAN, |x| x.0)
    };
    let median = quantile(0.5);
    let n_eff = ((total * total / squares).round() as usize).max(1);
    let (lo, hi, _) = median_ci_indices(n_eff);
    let mut ci = [
        quantile(lo as f64 / n_eff as f64),
        quantile((hi + 1) as f64 / n_eff as f64),
    ];
    // The runs' own medians: their spread is the between-run noise.
    let medians: Vec<f64> = same.iter().map(|(_, o)| o.median).collect();
    let k = medians.len() as f64;
    let mean = medians.iter().sum::<f64>() / k;
    let sd = (medians.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    let half = 1.96 * sd / k.sqrt();
    ci = [ci[0].min(median - half), ci[1].max(median + half)];
    let mut out = m.clone();
    out.raw = same
        .iter()
        .flat_map(|(_, o)| o.raw.iter().copied())
        .collect();
    out.median = median;
    out.ci95 = ci;
    out.samples = out.raw.len();
    out.min = w.first().map_or(m.min, |x| x.0);
    out.max = w.last().map_or(m.max, |x| x.0);
    out.mean = w.iter().map(|x| x.0 * x.1).sum::<f64>() / total;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(median: f64, spread: f64) -> Measurement {
        let mut m = crate::advice::testing::m("c", median, spread);
        m.probe = "p".into();
        m
    }

    #[test]
    fn pooled_rows_weigh_recent_runs_more_and_widen_when_runs_disagree() {
        let a = row(10.0, 0.01);
        let b = row(12.0, 0.01);
        let p = pooled(&a, &[(1.0, &a), (DECAY, &b)]);
        assert_eq!(p.samples, 24);
        assert!(p.median >= 10.0 && p.median < 11.0, "{}", p.median);
        // Two runs 20% apart: the interval covers the spread of their medians.
        assert!(p.ci95[0] < 9.5 && p.ci95[1] > 11.0, "{:?}", p.ci95);
        let same = pooled(&a, &[(1.0, &a), (DECAY, &a), (DECAY * DECAY, &a)]);
        assert!((same.median - 10.0).abs() < 0.1);
        assert!(same.ci95[1] - same.ci95[0] <= a.ci95[1] - a.ci95[0] + 1e-9);
        // One run: unchanged.
        let one = pooled(&a, &[(1.0, &a)]);
        assert_eq!(
            (one.median, one.ci95, one.samples),
            (a.median, a.ci95, a.samples)
        );
    }
}
