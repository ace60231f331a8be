//! Descriptive statistics of samples: median with a distribution-free 95% confidence
//! interval (order statistics of the binomial), mean, standard deviation, CV, MAD and
//! outliers by modified z-score (Iglewicz & Hoaglin, |M| > 3.5).

use serde::{Deserialize, Serialize};

/// Summary of a non-empty set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub ci95: (f64, f64),
    /// Confidence actually achieved by the order-statistic interval (≥ 0.95 for n ≥ 6).
    pub ci_level: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (n − 1).
    pub stddev: f64,
    /// Coefficient of variation: stddev / mean.
    pub cv: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    pub outliers: usize,
}

impl Summary {
    /// Half-width of the CI relative to the median (0.01 = ±1%).
    pub fn rel_ci_halfwidth(&self) -> f64 {
        if self.median == 0.0 {
            return f64::INFINITY;
        }
        ((self.ci95.1 - self.ci95.0) / 2.0 / self.median).abs()
    }
}

/// Median of sorted values.
fn median_sorted(s: &[f64]) -> f64 {
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Indices (0-based, into sorted data) of the order-statistic 95% CI of the median, and
/// the coverage it achieves: the largest r with P(Bin(n, ½) ≤ r − 1) ≤ 0.025 gives
/// [x(r), x(n − r + 1)] in 1-based terms. For n ≤ 5 no such r exists and [min, max]
/// (coverage 1 − 2^(1−n)) is returned.
pub fn median_ci_indices(n: usize) -> (usize, usize, f64) {
    assert!(n > 0);
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut log_p = ln_half_n; // log P(B = 0)
    let mut cdf = 0.0f64;
    let mut r = 1usize; // best r so far (1-based); r = 1 means [min, max]
    let mut tail_at_r = log_p.exp(); // P(B <= r-1) for r = 1 is P(B = 0)
    for k in 0..n {
        cdf += log_p.exp(); // cdf = P(B <= k)
        if cdf <= 0.025 {
            r = k + 1; // P(B <= r-1) with r-1 = k
            tail_at_r = cdf;
        } else {
            break;
        }
        log_p += ((n - k) as f64 / (k + 1) as f64).ln();
    }
    if r > n.div_ceil(2) {
        r = n.div_ceil(2);
    }
    let coverage = (1.0 - 2.0 * tail_at_r).clamp(0.0, 1.0);
    (r - 1, n - r, coverage)
}

/// The median of `values` (None: none, or one not finite).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    Some(median_sorted(&s))
}

/// Summarises samples; `None` for an empty slice or any non-finite value.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = median_sorted(&s);
    let (lo, hi, ci_level) = median_ci_indices(n);
    let mean = s.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    let stddev = var.sqrt();
    let mut dev: Vec<f64> = s.iter().map(|v| (v - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = median_sorted(&dev);
    let outliers = count_outliers(&s, median, mad);
    Some(Summary {
        n,
        median,
        ci95: (s[lo].min(median), s[hi].max(median)),
        ci_level,
        min: s[0],
        max: s[n - 1],
        mean,
        stddev,
        cv: if mean != 0.0 {
            stddev / mean.abs()
        } else {
            0.0
        },
        mad,
        outliers,
    })
}

/// The `p` quantile (0 ≤ p ≤ 1) of sorted values, linearly interpolated (type 7, the
/// default of R and NumPy).
pub fn quantile_sorted(s: &[f64], p: f64) -> f64 {
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (h - lo as f64)
}

/// Width of the band holding the central 90% of the samples (5th to 95th percentile),
/// relative to the median: how far one sample typically strays. 0 for fewer than two
/// samples or a zero median.
pub fn relative_spread(values: &[f64]) -> f64 {
    let mut s: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if s.len() < 2 {
        return 0.0;
    }
    s.sort_by(f64::total_cmp);
    let med = median_sorted(&s);
    if med == 0.0 {
        return 0.0;
    }
    ((quantile_sorted(&s, 0.95) - quantile_sorted(&s, 0.05)) / med).abs()
}

/// The least-squares slope of evenly spaced values, per step, as a fraction of their
/// mean: +0.01 is a rise of 1% of the mean from one value to the next. Fewer than two
/// values, or a mean of zero: NaN (no trend can be told).
pub fn relative_slope(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let my = values.iter().sum::<f64>() / n;
    if values.len() < 2 || my == 0.0 {
        return f64::NAN;
    }
    let mx = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in values.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (y - my);
        sxx += dx * dx;
    }
    sxy / sxx / my
}

/// Two groups of samples with a gap between them (say a fast and a slow regime).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Modes {
    /// Median of the lower and of the upper group.
    pub low: f64,
    pub high: f64,
    /// Share of the samples in the lower group.
    pub low_share: f64,
}

/// Smallest gap, relative to the median, that counts as two regimes: closer groups make
/// no difference a programmer would act on.
pub const MIN_MODE_GAP: f64 = 0.03;

/// A gap test for bimodal samples. Sorted, the samples are split at their widest gap
/// that leaves at least max(3, 15%) of them on each side; they are bimodal when that gap
/// is more than 1.5× either side's own range (each side is much tighter than the
/// distance between them) and at least [`MIN_MODE_GAP`] of the median. Needs 9 samples
/// (with fewer, one normal sample in 60 would pass); a lone outlier is never a mode.
pub fn bimodal(values: &[f64]) -> Option<Modes> {
    let mut s: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let n = s.len();
    if n < 9 {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let min_side = 3usize.max((n as f64 * 0.15).ceil() as usize);
    let (k, gap) = (min_side..=n - min_side)
        .map(|k| (k, s[k] - s[k - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (lower, upper) = s.split_at(k);
    let range = |v: &[f64]| v[v.len() - 1] - v[0];
    let med = median_sorted(&s);
    let wide = gap > 1.5 * range(lower) && gap > 1.5 * range(upper);
    let material = med != 0.0 && gap / med.abs() >= MIN_MODE_GAP;
    (wide && material).then(|| Modes {
        low: median_sorted(lower),
        high: median_sorted(upper),
        low_share: k as f64 / n as f64,
    })
}

fn count_outliers(s: &[f64], median: f64, mad: f64) -> usize {
    // Modified z-score; when MAD is 0 fall back to the mean absolute deviation scaled
    // as Iglewicz & Hoaglin suggest, and to "none" when even that is 0.
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        let meanad = s.iter().map(|v| (v - median).abs()).sum::<f64>() / s.len() as f64;
        meanad * 1.253_314
    };
    if scale <= 0.0 {
        return 0;
    }
    s.iter()
        .filter(|v| ((*v - median) / scale).abs() > 3.5)
        .count()
}

/// A xorshift generator; callers seed it with a constant, so every bootstrap and every
/// simulated rerun is reproducible.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 100.0);
        assert_eq!(s.mean, 22.0);
        assert_eq!(s.mad, 1.0);
        assert_eq!(s.outliers, 1);
        assert_eq!(s.ci95, (1.0, 100.0));
        assert!((s.ci_level - 0.9375).abs() < 1e-12);
        let even = summarize(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(even.median, 2.5);
        assert!((even.stddev - 1.290_994_448_7).abs() < 1e-9);
    }

    #[test]
    fn ci_indices_match_tables() {
        // Standard tables (e.g. Conover): n = 6 → [x(1), x(6)], n = 10 → [x(2), x(9)],
        // n = 20 → [x(6), x(15)], n = 100 → [x(40), x(61)].
        assert_eq!((median_ci_indices(6).0, median_ci_indices(6).1), (0, 5));
        assert_eq!((median_ci_indices(10).0, median_ci_indices(10).1), (1, 8));
        assert_eq!((median_ci_indices(20).0, median_ci_indices(20).1), (5, 14));
        assert_eq!(
            (median_ci_indices(100).0, median_ci_indices(100).1),
            (39, 60)
        );
        assert!(median_ci_indices(100).2 >= 0.95);
        assert!(median_ci_indices(5000).2 >= 0.95);
    }

    #[test]
    fn rejects_empty_and_nan() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn constant_samples_have_no_spread() {
        let s = summarize(&[7.0; 9]).unwrap();
        assert_eq!(
            (s.median, s.stddev, s.mad, s.outliers, s.cv),
            (7.0, 0.0, 0.0, 0, 0.0)
        );
        assert_eq!(s.rel_ci_halfwidth(), 0.0);
    }

    /// Deterministic normal samples (Box–Muller on an LCG), for false-alarm rates.
    fn normals(seed: u64, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        let mut x = seed
            .wrapping_mul(2862933555777941757)
            .wrapping_add(3037000493);
        let mut uniform = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (u, v) = (uniform(), uniform());
                mean + sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            })
            .collect()
    }

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 0.5), 3.0);
        assert_eq!(quantile_sorted(&s, 1.0), 5.0);
        assert!((quantile_sorted(&s, 0.95) - 4.8).abs() < 1e-12);
        assert_eq!(relative_spread(&[10.0; 6]), 0.0);
        assert!((relative_spread(&s) - 3.6 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn two_regimes_are_bimodal() {
        // The copy note's case: most passes at 1.4 GB/s, a third at 0.45.
        let mut v = normals(1, 14, 1.4e9, 0.02e9);
        v.extend(normals(2, 7, 0.45e9, 0.02e9));
        let m = bimodal(&v).expect("two regimes");
        assert!((m.low - 0.45e9).abs() < 0.05e9 && (m.high - 1.4e9).abs() < 0.05e9);
        assert!((m.low_share - 7.0 / 21.0).abs() < 1e-9);
    }

    #[test]
    fn one_outlier_or_a_small_gap_is_not_bimodal() {
        let mut v = normals(3, 20, 100.0, 0.5);
        v.push(300.0);
        assert_eq!(bimodal(&v), None, "a lone outlier is not a mode");
        let mut close = normals(4, 10, 100.0, 0.1);
        close.extend(normals(5, 10, 101.5, 0.1));
        assert_eq!(bimodal(&close), None, "1.5% apart: below MIN_MODE_GAP");
        assert_eq!(
            bimodal(&[1.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0]),
            None,
            "too few samples"
        );
    }

    #[test]
    fn normal_samples_rarely_look_bimodal() {
        // Noisy (CV 20%, like page-cache copies) and quiet (CV 1%) rows alike.
        for (sd, limit) in [(20.0, 15), (1.0, 0)] {
            for n in [9, 12, 20, 50] {
                let alarms = (0..1000)
                    .filter(|&seed| bimodal(&normals(seed, n, 100.0, sd)).is_some())
                    .count();
                assert!(alarms <= limit, "n={n} sd={sd}: {alarms} of 1000 flagged");
            }
        }
    }

    proptest! {
        #[test]
        fn order_holds(v in prop::collection::vec(0.001f64..1e9, 1..300)) {
            let s = summarize(&v).unwrap();
            prop_assert!(s.min <= s.ci95.0 && s.ci95.0 <= s.median);
            prop_assert!(s.median <= s.ci95.1 && s.ci95.1 <= s.max);
            prop_assert!(s.min <= s.mean * (1.0 + 1e-12) && s.mean <= s.max * (1.0 + 1e-12));
            prop_assert!(s.stddev >= 0.0 && s.mad >= 0.0);
            prop_assert!(s.outliers < s.n.max(1) || s.n == 1);
            prop_assert_eq!(s.n, v.len());
        }

        #[test]
        fn permutation_invariant(mut v in prop::collection::vec(0.001f64..1e6, 1..100), seed in any::<u64>()) {
            let a = summarize(&v).unwrap();
            let n = v.len();
            let mut x = seed;
            for i in (1..n).rev() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                v.swap(i, (x >> 33) as usize % (i + 1));
            }
            let b = summarize(&v).unwrap();
            prop_assert_eq!(a.median, b.median);
            prop_assert_eq!(a.ci95, b.ci95);
            prop_assert_eq!(a.outliers, b.outliers);
        }

        #[test]
        fn scale_equivariant(v in prop::collection::vec(1.0f64..1e6, 1..100), k in 0.5f64..1000.0) {
            let a = summarize(&v).unwrap();
            let scaled: Vec<f64> = v.iter().map(|x| x * k).collect();
            let b = summarize(&scaled).unwrap();
            prop_assert!((b.median - a.median * k).abs() <= 1e-9 * b.median.abs().max(1.0));
            prop_assert!((b.cv - a.cv).abs() <= 1e-9);
            prop_assert_eq!(a.outliers, b.outliers);
        }

        #[test]
        fn ci_coverage_at_least_95_for_n_ge_6(n in 6usize..3000) {
            let (lo, hi, cov) = median_ci_indices(n);
            prop_assert!(cov >= 0.95, "n={} cov={}", n, cov);
            prop_assert!(lo <= hi && hi < n);
            prop_assert_eq!(lo + hi, n - 1);
        }
    }
}
