//! The flag groups several commands share (measuring, output, store) and how those
//! given before the command merge with those after it.

use crate::units::parse_duration_at_least;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// How much to measure and where: the flags of the commands that measure.
#[derive(Debug, Args, Clone, Default)]
pub struct MeasureFlags {
    /// A smaller sweep that finishes sooner: fewer cases and less data per sample
    /// (each command's --help gives its sizes). Without it, a command measures its
    /// seed's full table.
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// Longer warm-up, at least 20 samples and up to 5 s per case.
    #[arg(long)]
    pub thorough: bool,
    /// Minimum length of one sample, e.g. 10ms; also the length a pipe stream or a
    /// batch of small-file copies is fitted to (default 25 ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_clock_duration)]
    pub sample_time: Option<Duration>,
    /// Time budget per case, warm-up included, e.g. 2s.
    #[arg(long, value_name = "DURATION", value_parser = parse_clock_duration)]
    pub budget: Option<Duration>,
    /// Time limit for the whole command, e.g. 60s: each case gets its share of the
    /// time left (never fewer than its minimum samples); the run names the rows that
    /// finished with a wider CI.
    #[arg(long, value_name = "DURATION", value_parser = parse_clock_duration)]
    pub time_limit: Option<Duration>,
    /// Pin the measuring thread to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Directory in which ioprobe creates (and removes) its scratch directory; its
    /// filesystem is the one measured (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Do not save this run (and write no HTML report).
    #[arg(long)]
    pub no_save: bool,
}

/// What goes to stdout: the flags of the commands that print results.
#[derive(Debug, Args, Clone, Default)]
pub struct OutputFlags {
    /// Print only JSON (schema version 1) on stdout.
    #[arg(long, conflicts_with_all = ["csv", "markdown"])]
    pub json: bool,
    /// Print only CSV, one row per measurement, on stdout.
    #[arg(long, conflicts_with = "markdown")]
    pub csv: bool,
    /// Print only Markdown tables on stdout.
    #[arg(long)]
    pub markdown: bool,
    /// Every column of every table, however wide (tables otherwise fit the terminal,
    /// or 100 columns when stdout is not one).
    #[arg(long)]
    pub wide: bool,
}

/// Where saved runs live: the flag of the commands that read or write the store.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreFlags {
    /// Results store (SQLite); default $XDG_DATA_HOME/ioprobe/results.db.
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
}

/// A measuring command's shared flags.
#[derive(Debug, Args, Clone, Default)]
pub struct Measuring {
    #[command(flatten)]
    pub measure: MeasureFlags,
    #[command(flatten)]
    pub output: OutputFlags,
    #[command(flatten)]
    pub store: StoreFlags,
}

/// `ioprobe run`'s flags: the measuring commands' and its own.
#[derive(Debug, Args, Clone, Default)]
pub struct RunArgs {
    #[command(flatten)]
    pub shared: Measuring,
    /// Advise from this run alone: do not pool this machine's saved runs with it
    #[arg(long)]
    pub fresh: bool,
    /// Sample every row until its median is within ±1% (or its share of twice the time
    /// limit is spent), for the figures; by default rows are sampled until each answer
    /// is decided
    #[arg(long)]
    pub precise: bool,
    /// Also write the run and its answers as OpenMetrics text to FILE (a temporary file
    /// in its directory, fsynced, renamed over FILE), e.g. for node_exporter's textfile
    /// collector; the directory is checked before anything is measured
    #[arg(long, value_name = "FILE")]
    pub openmetrics: Option<PathBuf>,
}

/// Every shared flag, as given before the command: the measuring commands' set.
pub type Before = Measuring;

/// Parses `5%`, `5` (both 5%) or `0.5%` into a fraction.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%');
    let v: f64 = t
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage; try 5%"))?;
    if !(0.0..1000.0).contains(&v) {
        return Err(format!("'{text}' is not a sensible percentage"));
    }
    Ok(v / 100.0)
}

// Every probe flag is optional: a flag the user gave overrides that one default of
// the probe's own `Options::for_scale`; an empty list means "not given".

/// A duration flag: with a unit, and at least a hundred times the clock's resolution.
fn parse_clock_duration(text: &str) -> Result<Duration, String> {
    parse_duration_at_least(text, crate::sys::calls::monotonic_resolution() * 100)
}

impl MeasureFlags {
    /// These flags, each taken from `after` when given there, else from `self`.
    pub(super) fn or(&self, after: &MeasureFlags) -> MeasureFlags {
        MeasureFlags {
            quick: after.quick || self.quick,
            thorough: after.thorough || self.thorough,
            sample_time: after.sample_time.or(self.sample_time),
            budget: after.budget.or(self.budget),
            time_limit: after.time_limit.or(self.time_limit),
            cpu: after.cpu.or(self.cpu),
            dir: after.dir.clone().or_else(|| self.dir.clone()),
            no_save: after.no_save || self.no_save,
        }
    }

    /// The flags given, by name.
    pub(super) fn given(&self) -> Vec<&'static str> {
        [
            ("--quick", self.quick),
            ("--thorough", self.thorough),
            ("--sample-time", self.sample_time.is_some()),
            ("--budget", self.budget.is_some()),
            ("--time-limit", self.time_limit.is_some()),
            ("--cpu", self.cpu.is_some()),
            ("--dir", self.dir.is_some()),
            ("--no-save", self.no_save),
        ]
        .into_iter()
        .filter_map(|(n, g)| g.then_some(n))
        .collect()
    }
}

impl OutputFlags {
    pub(super) fn or(&self, after: &OutputFlags) -> OutputFlags {
        OutputFlags {
            json: after.json || self.json,
            csv: after.csv || self.csv,
            markdown: after.markdown || self.markdown,
            wide: after.wide || self.wide,
        }
    }

    pub(super) fn given(&self) -> Vec<&'static str> {
        [
            ("--json", self.json),
            ("--csv", self.csv),
            ("--markdown", self.markdown),
            ("--wide", self.wide),
        ]
        .into_iter()
        .filter_map(|(n, g)| g.then_some(n))
        .collect()
    }
}
