//! Comparing two runs: environment differences first, then every measurement present
//! in both, matched by probe, case and identifying parameters, with B ÷ A, a bootstrap
//! interval of that ratio and a Mann–Whitney verdict on the raw samples.

use super::{Measurement, Run};
use crate::harness::compare::{MAX_SAMPLES, mann_whitney_p, ratio_interval, subsample};
use serde::Serialize;

/// Significance level of the rank test.
pub const ALPHA: f64 = 0.05;

/// Smallest change reported as faster or slower: with dozens of samples a rank test
/// detects shifts far below what matters (0.3% on this VM), so smaller ones count as
/// no change.
pub const MIN_EFFECT: f64 = 0.01;

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
    pub unit: String,
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

/// Key that matches the same measurement across runs.
pub fn identity(m: &Measurement) -> String {
    format!("{}/{} {}", m.probe, m.case, identifying_params(m))
}

/// The params that identify a row: all but those its probe declares observed (see
/// [`ProbeKind::observed_params`](crate::probes::ProbeKind::observed_params)).
fn identifying_params(m: &Measurement) -> String {
    let observed = crate::probes::kind(&m.probe).map_or(&[][..], |k| k.observed_params());
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

fn row(a: &Measurement, b: &Measurement) -> Row {
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
    let higher_is_better = a.unit == "bytes/s";
    let slowdown = if higher_is_better {
        a.median / b.median - 1.0
    } else {
        ratio - 1.0
    };
    let verdict = if p >= ALPHA || slowdown.abs() < MIN_EFFECT {
        Verdict::NoSignificantChange
    } else if slowdown > 0.0 {
        Verdict::Slower
    } else {
        Verdict::Faster
    };
    Row {
        probe: a.probe.clone(),
        case: a.case.clone(),
        params: identifying_params(a),
        unit: a.unit.clone(),
        a_median: a.median,
        b_median: b.median,
        ratio,
        ratio_ci95: [lo, hi],
        p_value: p,
        verdict,
        slowdown,
        note,
    }
}

/// Compares run B against baseline A.
pub fn compare(a_label: &str, a: &Run, b_label: &str, b: &Run) -> Comparison {
    let mut rows = Vec::new();
    let mut only_in_a = Vec::new();
    for ma in &a.measurements {
        let id = identity(ma);
        match b.measurements.iter().find(|mb| identity(mb) == id) {
            Some(mb) if mb.unit == ma.unit && ma.is_ok() && mb.is_ok() => rows.push(row(ma, mb)),
            _ => only_in_a.push(id),
        }
    }
    let only_in_b = b
        .measurements
        .iter()
        .map(identity)
        .filter(|id| !a.measurements.iter().any(|ma| identity(ma) == *id))
        .collect();
    Comparison {
        a: a_label.into(),
        b: b_label.into(),
        environment_differences: env_diffs(a, b),
        rows,
        only_in_a,
        only_in_b,
    }
}
