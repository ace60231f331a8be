//! One measured row: a probe's case with its parameters, the statistics of its samples
//! in the reported unit, and its resource usage normalised per operation or per GiB.

use crate::harness::rusage::{RusageDelta, RusagePer};
use crate::harness::{Overhead, Sampled, summarize};
use crate::names::named_enum;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// What one iteration of a workload amounts to.
#[derive(Debug, Clone, Copy)]
pub enum Metric {
    /// Each iteration performs this many operations; reported as ns/op.
    PerOp { ops_per_iter: f64 },
    /// Each iteration moves this many bytes; reported as bytes/s.
    Throughput { bytes_per_iter: f64 },
}

/// Resource usage of a measurement: normalised, and the raw totals over timed samples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rusage {
    #[serde(flatten)]
    pub normalised: RusagePer,
    pub total: RusageDelta,
    /// Per process, by role (e.g. `writer`, `reader`, `cp`), when the work ran in other
    /// processes; `normalised` and `total` are then their sum.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub processes: BTreeMap<String, ProcessRusage>,
}

/// One process's resource usage: normalised like the measurement, and raw totals.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessRusage {
    #[serde(flatten)]
    pub normalised: RusagePer,
    pub total: RusageDelta,
}

/// One row of results, as it appears in the JSON `measurements` list.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    pub probe: String,
    pub case: String,
    pub params: Map<String, Value>,
    /// `ns/op` or `bytes/s`.
    pub unit: Unit,
    /// `ok`; `unsupported` when the case cannot run here (`reason` names the call and
    /// errno; every figure is then 0 and `samples` is 0); `failed` when its result was
    /// wrong (`reason` says how).
    #[serde(default)]
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub median: f64,
    pub ci95: [f64; 2],
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stddev: f64,
    pub cv: f64,
    pub mad: f64,
    pub outliers: usize,
    /// Confidence the CI actually has (order statistics; ≥ 0.95 from 6 samples).
    pub ci_level: f64,
    /// Whether the ±1% CI target was met before the budget ran out.
    pub converged: bool,
    pub samples: usize,
    /// Timed iterations across all samples (warm-up excluded).
    pub iterations: u64,
    pub warmup_iterations: u64,
    /// Where a row sampled a pass at a time spent wall time outside its passes: its
    /// set-up (processes, connections, a verification pass). The next time estimate
    /// of this case adds it. Absent for a calibrated row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SetupTime>,
    /// Share of the samples' wall time in which the measuring thread was runnable but
    /// waited for a CPU another task held: left out of every figure. Absent where
    /// nothing is left out: a transfer between two processes (each side also waits
    /// while the other runs, and a TCP transfer for the kernel threads that carry it),
    /// a switch's round trip (its partner preempts it on their one CPU), or an OS that
    /// does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait: Option<f64>,
    pub rusage: Rusage,
    /// Figures computed from the median (ops/s, ns per call, × null, ...).
    pub derived: Map<String, Value>,
    /// What one operation or pass actually did.
    pub note: String,
    pub warnings: Vec<String>,
    /// Every sample's value in `unit`, in the order taken.
    pub raw: Vec<f64>,
}

/// A row's wall time outside its passes (JSON `setup`), in seconds: before and around
/// its first pass (the warm-up, where a row opens what its passes keep and checks its
/// bytes), and on average before and around each later one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SetupTime {
    pub first_s: f64,
    pub per_pass_s: f64,
    /// The later passes `per_pass_s` averages over.
    pub passes: usize,
}

impl SetupTime {
    /// No time outside the passes.
    pub const NONE: SetupTime = SetupTime {
        first_s: 0.0,
        per_pass_s: 0.0,
        passes: 0,
    };

    fn of(s: crate::harness::Setup) -> SetupTime {
        SetupTime {
            first_s: s.first_ns as f64 / 1e9,
            per_pass_s: s.later_ns as f64 / 1e9 / s.later.max(1) as f64,
            passes: s.later,
        }
    }

    /// This row's set-up and that of its case measured again (a first pass each).
    fn pooled(self, o: SetupTime) -> SetupTime {
        let passes = self.passes + o.passes;
        SetupTime {
            first_s: (self.first_s + o.first_s) / 2.0,
            per_pass_s: (self.per_pass_s * self.passes as f64 + o.per_pass_s * o.passes as f64)
                / passes.max(1) as f64,
            passes,
        }
    }

    /// Seconds outside the passes for a row of `passes` timed passes after its first.
    pub fn seconds(&self, passes: usize) -> f64 {
        self.first_s + self.per_pass_s * passes as f64
    }
}

/// A typed params (or derived) struct as the JSON object rows carry, keys in field
/// order. A struct of strings, numbers and flags always serialises to an object.
pub fn to_map(v: &impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

named_enum! {
    /// Whether a row was measured. Names are a contract (JSON `status`).
    #[derive(Default)]
    pub enum Status as "status" {
        #[default]
        Ok = "ok",
        Unsupported = "unsupported",
        Failed = "failed",
        /// Left out because the filesystem gives the case no meaning (a cold source or
        /// durability on tmpfs): not a failure, and nothing to advise from.
        Skipped = "skipped",
    }
}

named_enum! {
    /// What a row's figures are in. Names are a contract (JSON `unit`).
    pub enum Unit as "unit" {
        /// Nanoseconds per operation (lower is better).
        NsPerOp = "ns/op",
        /// Bytes per second (higher is better).
        BytesPerSec = "bytes/s",
    }
}

impl Unit {
    /// Whether a larger figure is better (throughput) rather than smaller (time).
    pub fn higher_is_better(self) -> bool {
        self == Unit::BytesPerSec
    }

    /// A figure with its unit, as tables print it: "24.7 GB/s" or "145 ns".
    pub fn figure(self, v: f64) -> String {
        match self {
            Unit::BytesPerSec => format!("{} GB/s", crate::units::format_gbps(v)),
            Unit::NsPerOp => crate::units::format_ns(v),
        }
    }

    /// The figure's number alone (GB/s, or ns to 3 significant digits).
    pub fn bare(self, v: f64) -> String {
        match self {
            Unit::BytesPerSec => crate::units::format_gbps(v),
            Unit::NsPerOp => crate::units::sig3(v),
        }
    }
}

/// The samples' rusage, in total and normalised per operation or per GiB (per pass for
/// a copy of nothing), for ioprobe and for each child process the work ran in.
fn rusage_of(sampled: &Sampled, metric: Metric, iterations: u64) -> Rusage {
    let normalise = |r: &RusageDelta| match metric {
        Metric::PerOp { ops_per_iter } => r.per(iterations as f64 * ops_per_iter, "op"),
        // An empty copy moves no bytes: count per pass instead of dividing by zero.
        Metric::Throughput { bytes_per_iter } if bytes_per_iter <= 0.0 => {
            r.per(iterations as f64, "op")
        }
        Metric::Throughput { bytes_per_iter } => r.per(
            iterations as f64 * bytes_per_iter / (1u64 << 30) as f64,
            "GiB",
        ),
    };
    let total = sampled.rusage_total();
    Rusage {
        normalised: normalise(&total),
        total,
        processes: sampled
            .process_totals()
            .into_iter()
            .map(|(role, t)| {
                (
                    role,
                    ProcessRusage {
                        normalised: normalise(&t),
                        total: t,
                    },
                )
            })
            .collect(),
    }
}

/// Warnings about the harness's own cost: a figure within reach of the empty loop's
/// overhead, and clock reads that are 1% or more of a sample.
fn harness_warnings(sampled: &Sampled, ns: &[f64], overhead: &Overhead) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(ns_summary) = summarize(ns)
        && let Some(w) = overhead.warning_for(ns_summary.median)
    {
        warnings.push(w);
    }
    let mut elapsed: Vec<f64> = sampled
        .samples
        .iter()
        .map(|x| x.elapsed_ns as f64)
        .collect();
    elapsed.sort_by(f64::total_cmp);
    if let Some(&mid) = elapsed.get(elapsed.len() / 2)
        && let Some(w) = overhead.timer_warning(mid)
    {
        warnings.push(w);
    }
    warnings
}

impl Measurement {
    /// Builds a measurement from sampled data. Fails only when there are no samples.
    pub fn from_sampled(
        probe: &str,
        case: &str,
        params: impl Serialize,
        metric: Metric,
        sampled: &Sampled,
        overhead: &Overhead,
        note: impl Into<String>,
    ) -> anyhow::Result<Measurement> {
        let ns = sampled.ns_per_iter();
        let (raw, unit): (Vec<f64>, Unit) = match metric {
            Metric::PerOp { ops_per_iter } => {
                (ns.iter().map(|v| v / ops_per_iter).collect(), Unit::NsPerOp)
            }
            Metric::Throughput { bytes_per_iter } => (
                ns.iter().map(|v| bytes_per_iter * 1e9 / v).collect(),
                Unit::BytesPerSec,
            ),
        };
        let s =
            summarize(&raw).ok_or_else(|| anyhow::anyhow!("{probe}/{case}: no valid samples"))?;
        let iterations = sampled.total_iters();
        let rusage = rusage_of(sampled, metric, iterations);
        let mut warnings = harness_warnings(sampled, &ns, overhead);
        if !sampled.converged {
            warnings.push(ci_warning(s.rel_ci_halfwidth()));
        }
        Ok(Measurement {
            probe: probe.into(),
            case: case.into(),
            params: to_map(&params),
            unit,
            status: Status::Ok,
            reason: None,
            median: s.median,
            ci95: [s.ci95.0, s.ci95.1],
            min: s.min,
            max: s.max,
            mean: s.mean,
            stddev: s.stddev,
            cv: s.cv,
            mad: s.mad,
            outliers: s.outliers,
            ci_level: s.ci_level,
            converged: sampled.converged,
            samples: s.n,
            iterations,
            warmup_iterations: sampled.warmup_iters,
            setup: sampled.setup.map(SetupTime::of),
            cpu_wait: sampled.cpu_wait(),
            rusage,
            derived: Map::new(),
            note: note.into(),
            warnings,
            raw,
        })
    }

    /// A row for a case that cannot run on this machine, with the reason.
    pub fn unsupported(
        probe: &str,
        case: &str,
        params: impl Serialize,
        unit: Unit,
        reason: impl Into<String>,
    ) -> Measurement {
        Measurement::not_run(
            probe,
            case,
            params,
            unit,
            (Status::Unsupported, reason.into()),
        )
    }

    /// A row with no figures: `status` (unsupported, or skipped where the filesystem gives
    /// the case no meaning) and its reason.
    pub fn not_run(
        probe: &str,
        case: &str,
        params: impl Serialize,
        unit: Unit,
        (status, reason): (Status, String),
    ) -> Measurement {
        let note = match status {
            Status::Skipped => format!("skipped: {reason}"),
            _ => format!("unsupported here: {reason}"),
        };
        Measurement {
            probe: probe.into(),
            case: case.into(),
            params: to_map(&params),
            unit,
            status,
            reason: Some(reason),
            median: 0.0,
            ci95: [0.0, 0.0],
            min: 0.0,
            max: 0.0,
            mean: 0.0,
            stddev: 0.0,
            cv: 0.0,
            mad: 0.0,
            outliers: 0,
            ci_level: 0.0,
            converged: false,
            samples: 0,
            iterations: 0,
            warmup_iterations: 0,
            setup: None,
            cpu_wait: None,
            rusage: Rusage {
                normalised: RusageDelta::default().per(1.0, "op"),
                total: RusageDelta::default(),
                processes: BTreeMap::new(),
            },
            derived: Map::new(),
            note,
            warnings: Vec::new(),
            raw: Vec::new(),
        }
    }

    /// True for a measured row (not `unsupported`, `failed` or `skipped`).
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// True for a row the filesystem gave no meaning (`skipped`).
    pub fn is_skipped(&self) -> bool {
        self.status == Status::Skipped
    }

    /// The params as a probe's typed struct; `None` when they do not fit it (a
    /// document from another version).
    pub fn params_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_value(Value::Object(self.params.clone())).ok()
    }

    /// The derived figures as a probe's typed struct (missing figures as `None`).
    pub fn derived_as<T: serde::de::DeserializeOwned + Default>(&self) -> T {
        serde_json::from_value(Value::Object(self.derived.clone())).unwrap_or_default()
    }

    /// Numeric parameter `key`, if present.
    pub fn param_u64(&self, key: &str) -> Option<u64> {
        self.params.get(key).and_then(Value::as_u64)
    }

    /// String parameter `key`, if present.
    pub fn param_str(&self, key: &str) -> Option<&str> {
        self.params.get(key).and_then(Value::as_str)
    }

    /// Numeric derived figure `key`, if present.
    pub fn derived_f64(&self, key: &str) -> Option<f64> {
        self.derived.get(key).and_then(Value::as_f64)
    }
}

/// Where a pooled row's note says so.
const POOLED: &str = " · pooled from ";

/// How a row's warning that its interval missed the target begins.
const CI_WARNING: &str = "95% CI is ±";

/// The warning of a row whose interval (± `rel` of its median) missed the ±1% target.
fn ci_warning(rel: f64) -> String {
    format!(
        "{CI_WARNING}{:.1}% of the median, wider than the ±1% target (time budget spent)",
        rel * 100.0
    )
}

/// Derived figures a pooled row sums (counts of things each draw opened); every other
/// number is averaged, weighted by samples.
const SUMMED: &[&str] = &["connections"];

/// Each counter of `a` (over `ia` iterations) and `b` (over `ib`) averaged by
/// iterations: the pooled figure per op or per GiB of one case (the same work per
/// iteration in both).
fn pooled_per(a: &RusagePer, b: &RusagePer, (ia, ib): (u64, u64)) -> RusagePer {
    let (wa, wb) = (ia as f64, ib as f64);
    let w = |x: f64, y: f64| {
        if wa + wb > 0.0 {
            (x * wa + y * wb) / (wa + wb)
        } else {
            x
        }
    };
    RusagePer {
        per: a.per.clone(),
        user_s: w(a.user_s, b.user_s),
        sys_s: w(a.sys_s, b.sys_s),
        voluntary_cs: w(a.voluntary_cs, b.voluntary_cs),
        involuntary_cs: w(a.involuntary_cs, b.involuntary_cs),
        minor_faults: w(a.minor_faults, b.minor_faults),
        major_faults: w(a.major_faults, b.major_faults),
        blocks_in: w(a.blocks_in, b.blocks_in),
        blocks_out: w(a.blocks_out, b.blocks_out),
    }
}

impl Measurement {
    /// Pools `again` (this case measured again later in the run, on fresh files,
    /// processes and connections) into this row: its samples appended after this
    /// row's, the statistics recomputed over all of them, counters summed, each derived
    /// figure averaged by samples (counts summed). `derived.pass_medians` keeps each
    /// pass's median, whose spread the simulated reruns take (advice's confidence);
    /// where the figure depends on the row's processes and connection (`regime`: a
    /// pipe's or socket's pair), `derived.draws` counts them.
    pub fn pool(&mut self, again: Measurement, regime: bool) {
        if !again.is_ok() {
            return;
        }
        if !self.is_ok() {
            *self = again;
            return;
        }
        let (na, nb) = (self.samples as f64, again.samples as f64);
        self.pool_derived(&again, regime);
        let iters = (self.iterations, again.iterations);
        self.rusage.normalised =
            pooled_per(&self.rusage.normalised, &again.rusage.normalised, iters);
        self.rusage.total.add(&again.rusage.total);
        for (role, p) in again.rusage.processes {
            match self.rusage.processes.get_mut(&role) {
                Some(mine) => {
                    mine.normalised = pooled_per(&mine.normalised, &p.normalised, iters);
                    mine.total.add(&p.total);
                }
                None => {
                    self.rusage.processes.insert(role, p);
                }
            }
        }
        self.cpu_wait = match (self.cpu_wait, again.cpu_wait) {
            (Some(a), Some(b)) => Some((a * na + b * nb) / (na + nb).max(1.0)),
            (a, b) => a.or(b),
        };
        self.raw.extend(again.raw);
        self.iterations += again.iterations;
        self.warmup_iterations += again.warmup_iterations;
        self.setup = match (self.setup, again.setup) {
            (Some(a), Some(b)) => Some(a.pooled(b)),
            (a, b) => a.or(b),
        };
        self.converged &= again.converged;
        for w in again.warnings {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        if let Some(s) = summarize(&self.raw) {
            self.median = s.median;
            self.ci95 = [s.ci95.0, s.ci95.1];
            self.min = s.min;
            self.max = s.max;
            self.mean = s.mean;
            self.stddev = s.stddev;
            self.cv = s.cv;
            self.mad = s.mad;
            self.outliers = s.outliers;
            self.ci_level = s.ci_level;
            self.samples = s.n;
            // The interval the target warning gave is the pooled one now.
            self.warnings.retain(|w| !w.starts_with(CI_WARNING));
            if !self.converged {
                self.warnings.push(ci_warning(s.rel_ci_halfwidth()));
            }
        }
    }

    /// [`pool`](Self::pool)'s derived figures: each averaged by samples (counts
    /// summed), each pass's median kept, the draws counted, and the note saying why.
    fn pool_derived(&mut self, again: &Measurement, regime: bool) {
        let (na, nb) = (self.samples as f64, again.samples as f64);
        for (k, v) in &again.derived {
            let mine = self.derived.get(k).and_then(Value::as_f64);
            let merged = match (mine, v.as_f64()) {
                (Some(a), Some(b)) if SUMMED.contains(&k.as_str()) => Some(a + b),
                (Some(a), Some(b)) if na + nb > 0.0 => Some((a * na + b * nb) / (na + nb)),
                _ => None,
            };
            if let Some(x) = merged.and_then(serde_json::Number::from_f64) {
                self.derived.insert(k.clone(), Value::Number(x));
            }
        }
        let mut medians = self.pass_medians();
        if medians.is_empty() {
            medians.push(self.median);
        }
        medians.push(again.median);
        if regime {
            self.derived
                .insert("draws".into(), Value::from(medians.len()));
        }
        // The note says why the row has several passes.
        if let Some(i) = self.note.find(POOLED) {
            self.note.truncate(i);
        }
        self.note.push_str(&format!(
            "{POOLED}{} passes, each on fresh {}: an answer resting on it was undecided",
            medians.len(),
            if regime {
                "files, processes and connections (its regime drawn anew)"
            } else {
                "files and processes"
            }
        ));
        self.derived
            .insert("pass_medians".into(), serde_json::json!(medians));
    }

    /// The medians of the passes a pooled row was measured in, each on its own files,
    /// processes and connections (see [`pool`](Self::pool)); empty for a row measured
    /// once.
    pub fn pass_medians(&self) -> Vec<f64> {
        self.derived
            .get("pass_medians")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Whether its passes were independent draws of its regime (fresh process pairs
    /// and connections, `derived.draws`), which average out.
    pub fn regime_draws(&self) -> bool {
        self.derived.contains_key("draws")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(raw: &[f64]) -> Measurement {
        let mut m = Measurement::unsupported("p", "c", Map::new(), Unit::BytesPerSec, "");
        m.status = Status::Ok;
        let s = summarize(raw).unwrap();
        m.raw = raw.to_vec();
        m.median = s.median;
        m.samples = s.n;
        m.iterations = raw.len() as u64;
        m.derived.insert("connections".into(), Value::from(2.0));
        m.derived.insert("s_per_sample".into(), Value::from(1.0));
        m
    }

    #[test]
    fn a_pooled_row_keeps_every_sample_and_each_pass_median() {
        let mut m = row(&[1.0, 1.1, 1.2]);
        m.pool(row(&[2.0, 2.1, 2.2]), true);
        m.pool(row(&[3.0, 3.1, 3.2, 3.3, 3.4]), true);
        assert_eq!(m.samples, 11);
        assert_eq!(m.raw.len(), 11);
        assert_eq!(m.pass_medians(), vec![1.1, 2.1, 3.2]);
        assert!(m.note.ends_with(" · pooled from 3 passes, each on fresh files, processes and connections (its regime drawn anew): an answer resting on it was undecided"), "{}", m.note);
        assert_eq!(m.derived.get("draws"), Some(&Value::from(3)));
        assert!(m.regime_draws());
        // Counts add up; other figures are averaged by samples.
        assert_eq!(m.derived_f64("connections"), Some(6.0));
        assert_eq!(m.derived_f64("s_per_sample"), Some(1.0));
        assert_eq!(m.median, 2.2);
        assert_eq!(m.iterations, 11);
    }

    #[test]
    fn a_pass_of_a_file_row_is_not_a_regime_draw() {
        let mut m = row(&[1.0, 1.1, 1.2]);
        m.pool(row(&[1.0, 1.1, 1.2]), false);
        assert_eq!(m.pass_medians().len(), 2);
        assert!(!m.regime_draws());
        // A failed pass adds nothing.
        let mut failed = row(&[5.0]);
        failed.status = Status::Failed;
        m.pool(failed, false);
        assert_eq!((m.samples, m.pass_medians().len()), (6, 2));
    }
}
