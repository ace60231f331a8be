//! Comparing two runs: environment differences first, then every measurement present
//! in both, matched by probe, case and identifying parameters, with B ÷ A, a bootstrap
//! interval of that ratio, a Mann–Whitney test on the raw samples and a noise floor
//! estimated from the two runs, so that back-to-back runs of one binary are not called
//! different.
//!
//! A row is faster or slower only when all three agree: p < [`ALPHA`], the ratio's 95%
//! interval excludes 1, and the change exceeds the row's noise floor, the largest of
//! [`MIN_EFFECT`], the width of the band holding the central 90% of either run's samples
//! for that row, and twice the spread of all rows' ratios around their common median
//! (how much rows of these two runs disagree with each other, from 8 matched rows on;
//! a shift shared by every row is still reported). On this VM back-to-back runs differed by 2–10% in rows whose
//! samples were within ±0.5%: within-run figures alone cannot see that drift.

use super::Unit;
use super::{Measurement, Run};
use crate::harness::compare::{MAX_SAMPLES, mann_whitney_p, ratio_interval, subsample};
use crate::harness::stats::relative_spread;
use serde::Serialize;

/// Significance level of the rank test.
pub const ALPHA: f64 = 0.05;

/// Smallest change reported as faster or slower: with dozens of samples a rank test
/// detects shifts far below what matters (0.3% on this VM), so smaller ones count as
/// no change.
pub const MIN_EFFECT: f64 = 0.01;

/// How many times the rows' ratio spread the noise floor includes.
const DISPERSION_FACTOR: f64 = 2.0;

/// Fewest matched rows from which the rows' ratio spread is estimated.
const MIN_ROWS_FOR_DISPERSION: usize = 8;

/// What a difference means for performance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoSignificantChange,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantChange => "no significant change",
        }
    }
}

/// One environment fact that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvDiff {
    pub fact: String,
    pub a: String,
    pub b: String,
}

/// One matched measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub probe: String,
    pub case: String,
    pub params: String,
    pub unit: Unit,
    pub a_median: f64,
    pub b_median: f64,
    /// median(B) ÷ median(A).
    pub ratio: f64,
    pub ratio_ci95: [f64; 2],
    pub p_value: f64,
    pub verdict: Verdict,
    /// How much slower B is than A in performance terms (0.05 = 5% slower); negative
    /// when B is faster.
    pub slowdown: f64,
    /// The smallest relative change this row had to show to be faster or slower.
    pub noise_floor: f64,
    /// Set when a side had more than [`MAX_SAMPLES`] raw samples and was subsampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub environment_differences: Vec<EnvDiff>,
    pub rows: Vec<Row>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Spread of the matched rows' log ratios around their median (1.4826 × MAD): how
    /// much the rows of these two runs disagree; part of every row's noise floor.
    pub row_dispersion: f64,
    /// Rows unsupported (or failed) in both runs: no figure on either side.
    pub unsupported_in_both: Vec<String>,
    /// Rows measured in one run and unsupported or failed in the other.
    pub status_differs: Vec<String>,
}

impl Comparison {
    /// Rows significantly slower by more than `threshold` (0.05 = 5%).
    pub fn slower_than(&self, threshold: f64) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Slower && r.slowdown > threshold)
            .collect()
    }
}

/// A probe's params that record what was observed rather than asked for, given by
/// the caller (the probes know them; results names none); rows are matched on the
/// others.
pub type Observed = fn(&str) -> &'static [&'static str];

/// Key that matches the same measurement across runs.
pub fn identity(m: &Measurement, observed: Observed) -> String {
    format!("{}/{} {}", m.probe, m.case, identifying_params(m, observed))
}

/// The params that identify a row: all but those its probe declares observed.
fn identifying_params(m: &Measurement, observed: Observed) -> String {
    let observed = observed(&m.probe);
    let parts: Vec<String> = m
        .params
        .iter()
        .filter(|(k, _)| !observed.contains(&k.as_str()))
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    parts.join(" ")
}

fn env_diffs(a: &Run, b: &Run) -> Vec<EnvDiff> {
    let (ea, eb) = (&a.environment, &b.environment);
    let fs = |r: &Run| {
        r.environment
            .filesystem
            .as_ref()
            .map_or("unknown".to_string(), |f| {
                format!("{} ({})", f.fs_type, f.mount_options)
            })
    };
    let facts: Vec<(&str, String, String)> = vec![
        ("host", ea.hostname.clone(), eb.hostname.clone()),
        ("os", ea.os.clone(), eb.os.clone()),
        ("kernel", ea.kernel.clone(), eb.kernel.clone()),
        ("cpu", ea.cpu_model.clone(), eb.cpu_model.clone()),
        (
            "logical cpus",
            ea.logical_cpus.to_string(),
            eb.logical_cpus.to_string(),
        ),
        (
            "hypervisor",
            format!("{:?}", ea.hypervisor),
            format!("{:?}", eb.hypervisor),
        ),
        (
            "clocksource",
            ea.clocksource.clone(),
            eb.clocksource.clone(),
        ),
        ("filesystem", fs(a), fs(b)),
        ("build", ea.build_profile.clone(), eb.build_profile.clone()),
        (
            "ioprobe",
            ea.ioprobe_version.clone(),
            eb.ioprobe_version.clone(),
        ),
        (
            "pinned cpu",
            format!("{:?}", ea.pinned_cpu),
            format!("{:?}", eb.pinned_cpu),
        ),
        (
            "harness mode",
            a.harness.mode.clone(),
            b.harness.mode.clone(),
        ),
    ];
    let mut out: Vec<EnvDiff> = facts
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(f, x, y)| EnvDiff {
            fact: f.into(),
            a: x,
            b: y,
        })
        .collect();
    let keys: std::collections::BTreeSet<&String> =
        ea.mitigations.keys().chain(eb.mitigations.keys()).collect();
    for k in keys {
        let (x, y) = (ea.mitigations.get(k), eb.mitigations.get(k));
        if x != y {
            out.push(EnvDiff {
                fact: format!("mitigation {k}"),
                a: x.cloned().unwrap_or_else(|| "-".into()),
                b: y.cloned().unwrap_or_else(|| "-".into()),
            });
        }
    }
    out
}

fn row(a: &Measurement, b: &Measurement, dispersion: f64, observed: Observed) -> Row {
    let ratio = b.median / a.median;
    let (ra, rb) = (
        subsample(&a.raw, MAX_SAMPLES),
        subsample(&b.raw, MAX_SAMPLES),
    );
    let note = (ra.len() < a.raw.len() || rb.len() < b.raw.len()).then(|| {
        format!(
            "rank test and interval on a random subsample (fixed seed) of {} of {} samples in A and {} of {} in B",
            ra.len(),
            a.raw.len(),
            rb.len(),
            b.raw.len()
        )
    });
    let (lo, hi) = ratio_interval(&ra, &rb);
    let p = mann_whitney_p(&ra, &rb);
    let higher_is_better = a.unit.higher_is_better();
    let slowdown = if higher_is_better {
        a.median / b.median - 1.0
    } else {
        ratio - 1.0
    };
    let noise_floor = MIN_EFFECT
        .max(relative_spread(&ra))
        .max(relative_spread(&rb))
        .max((DISPERSION_FACTOR * dispersion).exp_m1());
    let excludes_one = !(lo <= 1.0 && 1.0 <= hi);
    let beyond_floor = ratio.ln().abs() > noise_floor.ln_1p();
    let verdict = if p >= ALPHA || !excludes_one || !beyond_floor {
        Verdict::NoSignificantChange
    } else if slowdown > 0.0 {
        Verdict::Slower
    } else {
        Verdict::Faster
    };
    Row {
        probe: a.probe.clone(),
        case: a.case.clone(),
        params: identifying_params(a, observed),
        unit: a.unit,
        a_median: a.median,
        b_median: b.median,
        ratio,
        ratio_ci95: [lo, hi],
        p_value: p,
        verdict,
        slowdown,
        noise_floor,
        note,
    }
}

/// 1.4826 × the median absolute deviation of the log ratios of matched rows' medians:
/// the typical disagreement between rows of the two runs, robust to a few rows that
/// really changed.
fn ratio_dispersion(pairs: &[(&Measurement, &Measurement)]) -> f64 {
    let mut logs: Vec<f64> = pairs
        .iter()
        .map(|(a, b)| (b.median / a.median).ln())
        .filter(|v| v.is_finite())
        .collect();
    // With few rows, the rows that really changed would be most of them.
    if logs.len() < MIN_ROWS_FOR_DISPERSION {
        return 0.0;
    }
    logs.sort_by(f64::total_cmp);
    let mid = crate::harness::stats::quantile_sorted(&logs, 0.5);
    let mut dev: Vec<f64> = logs.iter().map(|v| (v - mid).abs()).collect();
    dev.sort_by(f64::total_cmp);
    1.4826 * crate::harness::stats::quantile_sorted(&dev, 0.5)
}

/// Compares run B against baseline A.
pub fn compare(a_label: &str, a: &Run, b_label: &str, b: &Run, observed: Observed) -> Comparison {
    let mut pairs = Vec::new();
    let mut only_in_a = Vec::new();
    let mut unsupported_in_both = Vec::new();
    let mut status_differs = Vec::new();
    for ma in &a.measurements {
        let id = identity(ma, observed);
        match b
            .measurements
            .iter()
            .find(|mb| identity(mb, observed) == id)
        {
            Some(mb) if mb.unit == ma.unit && ma.is_ok() && mb.is_ok() => pairs.push((ma, mb)),
            Some(mb) if !ma.is_ok() && !mb.is_ok() => unsupported_in_both.push(id),
            Some(mb) => status_differs.push(format!(
                "{id}: {} in A, {} in B",
                status_text(ma),
                status_text(mb)
            )),
            None => only_in_a.push(id),
        }
    }
    let dispersion = ratio_dispersion(&pairs);
    let only_in_b = b
        .measurements
        .iter()
        .map(|m| identity(m, observed))
        .filter(|id| {
            !a.measurements
                .iter()
                .any(|ma| identity(ma, observed) == *id)
        })
        .collect();
    Comparison {
        a: a_label.into(),
        b: b_label.into(),
        environment_differences: env_diffs(a, b),
        rows: pairs
            .iter()
            .map(|(x, y)| row(x, y, dispersion, observed))
            .collect(),
        only_in_a,
        only_in_b,
        row_dispersion: dispersion,
        unsupported_in_both,
        status_differs,
    }
}

fn status_text(m: &Measurement) -> String {
    if m.is_ok() {
        "measured".into()
    } else {
        serde_json::to_value(m.status)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_else(|| "not measured".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A per-call run with `n` rows whose samples are `f(row)`.
    fn run(n: usize, f: impl Fn(usize) -> Vec<f64>) -> Run {
        let mut r: Run =
            serde_json::from_str(include_str!("../../tests/fixtures/run-a.json")).unwrap();
        let template = r.measurements[0].clone();
        r.measurements = (0..n)
            .map(|i| {
                let mut m = template.clone();
                m.case = format!("case{i}");
                m.raw = f(i);
                let s = crate::harness::summarize(&m.raw).unwrap();
                m.median = s.median;
                m.ci95 = [s.ci95.0, s.ci95.1];
                m
            })
            .collect();
        r
    }

    /// Tight samples (±0.2%) around `centre`.
    fn tight(centre: f64) -> Vec<f64> {
        (0..30)
            .map(|k| centre * (1.0 + ((k * 7 % 11) as f64 - 5.0) * 0.0004))
            .collect()
    }

    /// These rows differ by case name only: no param is observed.
    fn no_observed(_: &str) -> &'static [&'static str] {
        &[]
    }

    fn significant(c: &Comparison) -> usize {
        c.rows
            .iter()
            .filter(|r| r.verdict != Verdict::NoSignificantChange)
            .count()
    }

    #[test]
    fn drift_that_differs_row_to_row_is_noise() {
        // Back-to-back runs on this VM: tight rows, each 0–4% off in either direction.
        let a = run(40, |i| tight(100.0 + i as f64));
        let b = run(40, |i| {
            let drift = ((i * 13 % 9) as f64 - 4.0) * 0.01;
            tight((100.0 + i as f64) * (1.0 + drift))
        });
        let c = compare("A", &a, "B", &b, no_observed);
        assert!(c.row_dispersion > 0.01, "{}", c.row_dispersion);
        assert_eq!(significant(&c), 0);
    }

    #[test]
    fn a_shift_of_every_row_and_one_changed_row_are_found() {
        let a = run(40, |i| tight(100.0 + i as f64));
        let all = run(40, |i| tight((100.0 + i as f64) * 1.10));
        let c = compare("A", &a, "B", &all, no_observed);
        assert_eq!(significant(&c), 40, "every row 10% slower");
        assert!(c.rows.iter().all(|r| r.verdict == Verdict::Slower));
        let one = run(40, |i| {
            tight((100.0 + i as f64) * if i == 7 { 0.8 } else { 1.0 })
        });
        let c = compare("A", &a, "B", &one, no_observed);
        assert_eq!(significant(&c), 1);
        assert_eq!(c.rows[7].verdict, Verdict::Faster);
    }

    #[test]
    fn an_interval_containing_one_is_no_change() {
        // Wide, overlapping samples: the medians differ by 5% but the interval holds 1.
        let wide = |c: f64| (0..12).map(|k| c * (0.7 + 0.05 * k as f64)).collect();
        let a = run(1, |_| wide(100.0));
        let b = run(1, |_| wide(105.0));
        let c = compare("A", &a, "B", &b, no_observed);
        let r = &c.rows[0];
        assert!(r.ratio_ci95[0] <= 1.0 && 1.0 <= r.ratio_ci95[1]);
        assert_eq!(r.verdict, Verdict::NoSignificantChange);
        assert!(
            r.noise_floor > 0.05,
            "the rows' own spread: {}",
            r.noise_floor
        );
    }

    #[test]
    fn rows_unsupported_in_both_runs_are_listed_as_such() {
        let mut a = run(2, |_| tight(100.0));
        a.measurements[1].status = super::super::Status::Unsupported;
        let b = a.clone();
        let c = compare("A", &a, "B", &b, no_observed);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.unsupported_in_both.len(), 1);
        assert!(c.only_in_a.is_empty() && c.only_in_b.is_empty());
        let mut b2 = a.clone();
        b2.measurements[1].status = super::super::Status::Ok;
        let c = compare("A", &a, "B", &b2, no_observed);
        assert_eq!(c.status_differs.len(), 1, "{:?}", c.status_differs);
        assert!(c.status_differs[0].contains("unsupported in A, measured in B"));
    }
}
