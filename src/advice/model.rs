//! What advice says, as its JSON carries it (`recommendations`, `sources`): a
//! recommendation with its evidence, confidence and caveats, and where each probe's
//! advice came from. Nothing here decides or renders.

use crate::results::Unit;
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// How much a recommendation can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Low,
    Medium,
    High,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::High => "high",
        }
    }

    /// One level lower (low stays low).
    pub fn lower(self) -> Level {
        match self {
            Level::High => Level::Medium,
            _ => Level::Low,
        }
    }
}

/// The confidence and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confidence {
    pub level: Level,
    /// Every reason that lowered it, or what supports it when nothing did.
    pub reasons: Vec<String>,
    /// The share of simulated reruns that kept the answer (a choice among measured
    /// options); absent where no rerun was simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f64>,
    /// Whether measuring the rows again may lift a cap (figures the machine moved
    /// between, say): `run` then samples them again. Not kept.
    #[serde(skip)]
    pub unsettled: bool,
}

impl Confidence {
    /// Starts high; every [`cap`](Self::cap) may lower it.
    pub(crate) fn new() -> Confidence {
        Confidence {
            level: Level::High,
            reasons: Vec::new(),
            agreement: None,
            unsettled: false,
        }
    }

    /// Lowers the level to at most `level`, for `reason`.
    pub fn cap(&mut self, level: Level, reason: String) {
        self.level = self.level.min(level);
        self.reasons.push(reason);
    }
}

/// What to do: a size (with the sizes tied with the best) or a method (with the methods
/// tied with it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Choice {
    Size {
        bytes: u64,
        label: String,
        /// Every measured size tied with the best, ascending.
        tied: Vec<u64>,
        /// The smallest and largest tied size.
        range: [u64; 2],
    },
    Method {
        name: String,
        /// The other options tied with the best.
        tied: Vec<String>,
    },
}

impl Choice {
    /// What ties, in words ("64 KiB–512 KiB", "sendfile, splice"), or None.
    pub fn ties_text(&self) -> Option<String> {
        match self {
            Choice::Size { tied, range, .. } if tied.len() > 1 => Some(format!(
                "{}–{} ({} sizes)",
                format_size(range[0]),
                format_size(range[1]),
                tied.len()
            )),
            Choice::Method { tied, .. } if !tied.is_empty() => Some(tied.join(", ")),
            _ => None,
        }
    }
}

/// One row the recommendation rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub probe: String,
    pub case: String,
    /// `choice`, `best`, `tied`, `baseline` or `next` (the nearest option ruled out).
    pub role: String,
    pub unit: Unit,
    pub median: f64,
    pub ci95: [f64; 2],
    /// The two regimes, when the samples are bimodal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<[f64; 2]>,
}

/// Where the recommendation comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Evidence {
    /// Saved runs the rows come from (empty for a run that was not saved).
    pub runs: Vec<i64>,
    /// The machine (host, filesystem, kernel), when advice spans saved runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    pub rows: Vec<Row>,
}

/// One recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// A stable id (`pipe.chunk.write-read.any`): the probe, the topic and the options
    /// the scope is made of, never a figure or another recommendation's pick, so scripts
    /// can follow one topic across runs and machines.
    #[serde(default)]
    pub id: String,
    /// What it is about: "read loop buffer", "file copy method (durable)", …
    pub topic: String,
    /// Which rows it covers within the topic (method, durability, file size), or empty.
    pub scope: String,
    /// The summary's row ("reading a file sequentially"), for the headline of a topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// What to do, in words.
    pub action: String,
    pub choice: Choice,
    /// The conditions the choice holds at, when they are another recommendation's pick
    /// (`{"capacity": "1 MiB"}` for a pipe chunk): fields, not part of the scope.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub context: std::collections::BTreeMap<String, String>,
    /// A size answer's plateau: the sizes whose figures are all within `within` of the
    /// best's (the choice is the knee, the size to use, inside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plateau: Option<Plateau>,
    /// What it buys, e.g. "×1.8 against 4 KiB".
    pub effect: String,
    pub evidence: Evidence,
    pub confidence: Confidence,
    pub caveats: Vec<String>,
    /// How the recommendation differs from what the previous `advise` said, and why
    /// (`advise` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
}

impl Recommendation {
    /// "topic (scope)".
    pub fn title(&self) -> String {
        if self.scope.is_empty() {
            self.topic.clone()
        } else {
            format!("{} ({})", self.topic, self.scope)
        }
    }

    /// The one-line form kept in the `advice` strings.
    pub fn line(&self) -> String {
        format!(
            "{}: {}; {} [confidence {}]",
            self.title(),
            self.action,
            self.effect,
            self.confidence.level.name()
        )
    }
}

/// How much of a probe's sweep a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    /// Some cases of neither the default sweep nor `ioprobe run`'s selection.
    Partial,
    /// Every case `ioprobe run` measures, not the whole default sweep.
    Selection,
    /// Every case of the probe's default sweep.
    Full,
}

impl Coverage {
    pub fn name(self) -> &'static str {
        match self {
            Coverage::Partial => "a partial sweep",
            // What the rows cover, whichever command measured them (`copy
            // --system-tools --cache warm` covers it too).
            Coverage::Selection => "covers ioprobe run's selection",
            Coverage::Full => "the full default sweep",
        }
    }
}

/// Where one probe's advice comes from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Source {
    pub probe: String,
    /// The saved run's id; None for a run that was not saved (`--no-save`) or when no
    /// run measures the probe.
    pub run: Option<i64>,
    pub started_at: String,
    pub host: String,
    /// False when no run of this machine measures the probe.
    pub measured: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    /// Cases of the probe's default sweep the run measured, of how many.
    pub cases: [usize; 2],
    /// The saved runs whose samples were pooled, when more than one (see
    /// [`crate::advice::pool`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pooled: Vec<i64>,
    /// The probe's advice lines (recommendations, then observations).
    pub advice: Vec<String>,
}

/// The advice for one machine: its recommendations, observations and their sources.
pub struct MachineAdvice {
    /// "host, filesystem, kernel".
    pub machine: String,
    pub sources: Vec<Source>,
    pub recs: Vec<Recommendation>,
    pub observations: Vec<String>,
}

/// One line per recommendation, then the observations.
pub fn lines(recs: &[Recommendation], observations: &[String]) -> Vec<String> {
    recs.iter()
        .map(Recommendation::line)
        .chain(observations.iter().cloned())
        .collect()
}

/// The sizes of a size answer's plateau, in the recommendation's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    /// The smallest and the largest size of the plateau (bytes).
    pub from: u64,
    pub to: u64,
    /// The tolerance: every size from `from` to `to` has a median within this share
    /// of the best's.
    pub within: f64,
    /// The plateau reaches the largest size measured: larger sizes were not measured.
    pub open_ended: bool,
}
