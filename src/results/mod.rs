//! The data model of a run: tool, environment, harness settings and a flat list of
//! measurements, serialised as the `--json` schema (version 1).

pub mod compare;
pub mod measurement;
pub mod runref;
pub mod store;
pub mod time;

pub use measurement::{Measurement, Metric, SetupTime, Status, Unit};

use crate::harness::Overhead;
use crate::sys::machine::Environment;
use serde::{Deserialize, Serialize};

/// Version of the JSON document; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Name and version of the tool that produced a document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn this() -> Tool {
        Tool {
            name: "ioprobe".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// The sampling settings and measured harness overheads of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HarnessInfo {
    /// `quick` or `thorough`.
    pub mode: String,
    pub sample_time_s: f64,
    pub warmup_s: f64,
    pub budget_per_case_s: f64,
    /// Length whole-pass samples are fitted to (absent in runs before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_time_s: Option<f64>,
    /// `--time-limit`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_s: Option<f64>,
    pub min_samples: usize,
    pub target_rel_ci: f64,
    pub overhead: Overhead,
    /// How the 95% CI of the median is computed.
    pub ci_method: String,
    /// `ioprobe run`: where its time went, answer by answer (absent under `--precise`
    /// and for a probe's own command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
}

/// How `ioprobe run` spent its time: a first pass over every row, then visits to the
/// rows of the answers still undecided, until each was decided or the time was spent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Schedule {
    /// Seconds of the first pass (every row, the sweeps' extensions included).
    pub first_pass_s: f64,
    /// Seconds of the visits after it.
    pub visits_s: f64,
    /// The share of simulated reruns an answer must keep to be decided.
    pub target: f64,
    /// `decided` when every answer was decided before the time limit, else `limit`.
    pub ended: String,
    pub topics: Vec<TopicSpend>,
}

/// One answer's share of a run's time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopicSpend {
    /// The recommendation's id.
    pub id: String,
    /// Samples of the rows it rests on, and the seconds they took: their share of
    /// their probe's first pass and every visit made for it.
    pub samples: usize,
    pub seconds: f64,
    /// Visits after the first pass, and their seconds.
    pub visits: usize,
    pub visit_s: f64,
    /// The most passes one of its rows was measured in (the first and each visit's,
    /// each on fresh files, processes and connections).
    pub passes: usize,
    /// The share of simulated reruns keeping the answer at the end (absent where none
    /// was simulated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f64>,
    /// Whether a row it rests on moves in regimes (a file's pages, a process pair and
    /// connection) and was measured in one draw only: the answer is then at most
    /// medium, as a rerun may draw another regime.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_draw: bool,
    /// `decided` (agreement reached the target), `stalled` (undecided when the time
    /// was spent, and its last visits had not raised its agreement: its rows' noise is
    /// their kind's floor, which more samples do not narrow) or `limit` (undecided when
    /// the time was spent).
    pub stopped: String,
}

/// One run: everything a report needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub schema_version: u32,
    pub tool: Tool,
    /// UTC start time, RFC 3339.
    pub started_at: String,
    /// The command that measured the run (`run`, or one probe's name).
    pub command: String,
    pub environment: Environment,
    pub harness: HarnessInfo,
    pub measurements: Vec<Measurement>,
    /// Run-wide warnings (debug build, unpinned noisy machine, ...).
    pub warnings: Vec<String>,
}

impl Run {
    /// Measurements of one probe, in run order.
    pub fn of_probe<'a>(&'a self, probe: &'a str) -> impl Iterator<Item = &'a Measurement> + 'a {
        self.measurements.iter().filter(move |m| m.probe == probe)
    }

    /// Probe names in the order they first appear.
    pub fn probes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in &self.measurements {
            if !out.contains(&m.probe) {
                out.push(m.probe.clone());
            }
        }
        out
    }
}
