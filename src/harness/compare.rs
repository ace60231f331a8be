//! Two-sample statistics for comparing runs: the Mann–Whitney U test (two-sided,
//! normal approximation with tie correction and continuity correction) and a bootstrap
//! interval for the ratio of medians with a fixed seed, so results are reproducible.

use super::stats::Rng;

/// Two-sided p-value of the Mann–Whitney U test that `a` and `b` come from the same
/// distribution. Returns 1.0 when either sample is empty or all values tie.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let mut all: Vec<(f64, usize)> = a
        .iter()
        .map(|&v| (v, 0))
        .chain(b.iter().map(|&v| (v, 1)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for r in ranks.iter_mut().take(j + 1).skip(i) {
            *r = avg;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = all
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| x.1 == 0)
        .map(|(_, r)| r)
        .sum();
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u1 - mu).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// The z whose two-sided standard normal interval covers `coverage` (0.95 → 1.96),
/// by bisection on [`normal_sf`]; 0 for a coverage of 0 or less.
pub fn z_for_coverage(coverage: f64) -> f64 {
    if coverage <= 0.0 {
        return 0.0;
    }
    let tail = (1.0 - coverage.min(1.0 - 1e-12)) / 2.0;
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if normal_sf(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Upper tail of the standard normal distribution, P(Z > z).
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Complementary error function (Numerical Recipes' erfcc, |error| < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Median in O(n) (selection, not a sort); reorders `v`.
fn median(v: &mut [f64]) -> f64 {
    let n = v.len();
    let (_, &mut upper, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        let lower = v[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// Most samples per side the rank test and the bootstrap use; beyond it a side is
/// subsampled (4.3 M raw samples made `compare` run for minutes).
pub const MAX_SAMPLES: usize = 10_000;

/// At most `max` of `v`'s values, drawn uniformly without replacement with a fixed seed
/// (reservoir sampling: one pass, `max` values of memory); `v` itself when it is small.
pub fn subsample(v: &[f64], max: usize) -> std::borrow::Cow<'_, [f64]> {
    if v.len() <= max {
        return std::borrow::Cow::Borrowed(v);
    }
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut keep: Vec<f64> = v[..max].to_vec();
    for (i, &x) in v.iter().enumerate().skip(max) {
        let j = rng.below(i + 1);
        if j < max {
            keep[j] = x;
        }
    }
    std::borrow::Cow::Owned(keep)
}

/// 95% percentile-bootstrap interval of median(b) ÷ median(a), 2,000 resamples, fixed seed.
pub fn ratio_interval(a: &[f64], b: &[f64]) -> (f64, f64) {
    if a.is_empty() || b.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut next = move |n: usize| rng.below(n);
    let mut ratios = Vec::with_capacity(2000);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    for _ in 0..2000 {
        for x in ra.iter_mut() {
            *x = a[next(a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[next(b.len())];
        }
        ratios.push(median(&mut rb) / median(&mut ra));
    }
    ratios.sort_by(f64::total_cmp);
    (ratios[49], ratios[1949])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_samples_are_not_different() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert!(mann_whitney_p(&a, &a) > 0.9);
    }

    #[test]
    fn separated_samples_are_different() {
        let a: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let b: Vec<f64> = (0..10).map(|i| 200.0 + i as f64).collect();
        let p = mann_whitney_p(&a, &b);
        // Exact two-sided p for complete separation of 10 vs 10 is 1.08e-5; the normal
        // approximation gives about 1.8e-4.
        assert!(p < 0.001, "p = {p}");
    }

    #[test]
    fn known_p_value() {
        // a = 1..5, b = 6..10: U = 0, mean 12.5, sd 4.787; with continuity correction
        // z = 12 / 4.787 = 2.507, two-sided p = 0.0122 (scipy's asymptotic mannwhitneyu
        // gives 0.01219).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let p = mann_whitney_p(&a, &b);
        assert!((p - 0.0122).abs() < 0.0005, "p = {p}");
    }

    #[test]
    fn z_for_coverage_inverts_the_normal_interval() {
        assert!((z_for_coverage(0.95) - 1.959_964).abs() < 1e-4);
        assert!((z_for_coverage(0.5) - 0.674_49).abs() < 1e-4);
        assert_eq!(z_for_coverage(0.0), 0.0);
    }

    #[test]
    fn erfc_matches_reference_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-6);
        assert!((erfc(1.0) - 0.157_299_2).abs() < 1e-6);
        assert!((erfc(-1.0) - 1.842_700_8).abs() < 1e-6);
    }

    #[test]
    fn large_samples_are_subsampled_reproducibly() {
        let big: Vec<f64> = (0..100_000).map(|i| (i % 977) as f64).collect();
        let a = subsample(&big, MAX_SAMPLES);
        assert_eq!(a.len(), MAX_SAMPLES);
        assert_eq!(a, subsample(&big, MAX_SAMPLES), "fixed seed");
        // Uniform: the subsample's mean is close to the whole's.
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean(&a) - mean(&big)).abs() < 10.0);
        let small = [1.0, 2.0];
        assert!(matches!(
            subsample(&small, 10),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn median_by_selection_matches_the_sorted_median() {
        for v in [
            vec![3.0, 1.0, 2.0],
            vec![4.0, 1.0, 3.0, 2.0],
            vec![5.0],
            vec![2.0, 2.0],
        ] {
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len();
            let want = if n % 2 == 1 {
                sorted[n / 2]
            } else {
                (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
            };
            assert_eq!(median(&mut v.clone()), want);
        }
    }

    #[test]
    fn ratio_interval_brackets_the_ratio() {
        let a: Vec<f64> = (0..30).map(|i| 100.0 + (i % 5) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let (lo, hi) = ratio_interval(&a, &b);
        assert!(lo <= 1.5 && 1.5 <= hi, "{lo} {hi}");
        assert!(lo > 1.4 && hi < 1.6);
        assert_eq!(ratio_interval(&a, &b), (lo, hi), "fixed seed: reproducible");
    }
}
