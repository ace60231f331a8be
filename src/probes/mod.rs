//! Probes: one folder per experiment family. Each folder holds the probe's options
//! (with `for_scale`, the one place its defaults live), its cases as a [`Plan`], its
//! typed params, and its presentation (tables, plots, advice) behind [`ProbeKind`].
//!
//! A probe turns its options into workloads, hands them to the harness and returns
//! [`Measurement`]s; it never formats them (its presentation reads them back, from a
//! live run or a saved one). Adding a probe means its folder, its name in `probes!`
//! here, and its flags and command in `cli/probes.rs`.

pub mod advice;
mod plan;
mod sweep;

/// Declares the probes once: each folder's module, and [`REGISTRY`] in that order.
macro_rules! probes {
    ($($name:ident),+ $(,)?) => {
        $(pub mod $name;)+

        /// Every probe, in the order `ioprobe run` runs them and reports show them.
        pub const REGISTRY: &[&dyn ProbeKind] = &[$(&$name::Kind),+];
    };
}

probes!(syscalls, read, write, pipe, copy, socket);

use crate::advice::Recommendation;
use crate::harness::{self, Overhead, Sampled, Workload};
use crate::present::{Grid, Plot, Style};
use crate::progress::Progress;
use crate::results::{Measurement, Run};
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use anyhow::Result;
pub use plan::{Leave, Plan};

pub use crate::settings::Scale;

/// What a probe is, independent of any options: its name, the params its rows carry,
/// and how its rows are presented. Reports, stores and comparisons reach probes only
/// through this trait.
pub trait ProbeKind: Sync {
    /// The probe's name, as used on the command line and in JSON (`probe`).
    fn name(&self) -> &'static str;
    /// Params that record what was observed (page-cache state, granted sizes, CPUs)
    /// rather than what was asked for; `compare` matches rows on the others.
    fn observed_params(&self) -> &'static [&'static str];
    /// Cases measured for the record that no recommendation reads: a run without them
    /// (one saved before they existed) still covers the probe's sweep.
    fn unadvised_cases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether a row's figure moves between runs in regimes set by what the row ran on
    /// and a rerun draws anew: a file's pages (read, write: memory-bound rows, 10–20%
    /// apart from one file to the next here), a pipe's or socket's processes and
    /// connection. `run` decides an answer resting on such rows only across two draws
    /// at least (fresh files, processes and connections), and their rerun noise is the
    /// spread between the draws.
    fn regime_rows(&self) -> bool {
        false
    }
    /// Whether a row's params read as the probe's typed `Params` ([`RowParams`], the one
    /// contract its tables, advice and trace read rows with), checked on runs read from
    /// files: a row that does not would vanish from them silently, and a hostile or
    /// damaged document must not reach tables and plots. Err names the field.
    fn check_typed(&self, m: &Measurement) -> std::result::Result<(), String>;
    /// The probe's tables, from its rows in run order.
    fn grids(&self, rows: &[&Measurement], env: &Environment, st: &Style) -> Vec<Grid>;
    /// The probe's plots, from its measured rows (never empty).
    fn plots(&self, rows: &[&Measurement], env: &Environment) -> Result<Vec<Plot>>;
    /// Recommendations (what to do, with evidence and confidence), decided with the
    /// statistics in [`advice::decide`](crate::advice::decide).
    fn recommend(&self, rows: &[&Measurement], env: &Environment) -> Vec<Recommendation>;
    /// Observations that are not a choice (where throughput falls off against the
    /// caches, one call's fixed cost, what durability costs), each with its figures.
    fn advice(&self, rows: &[&Measurement], env: &Environment) -> Vec<String>;
    /// The probe configured with its defaults at `scale`.
    fn for_scale(&self, scale: Scale) -> Box<dyn Probe>;
    /// The probe configured as `ioprobe run` runs it.
    fn for_run(&self) -> Box<dyn Probe> {
        self.for_scale(Scale::Run)
    }
}

/// The probe called `name`, if this ioprobe knows it.
pub fn kind(name: &str) -> Option<&'static dyn ProbeKind> {
    REGISTRY.iter().copied().find(|k| k.name() == name)
}

/// The few cases `ioprobe trace` prices calls with, when nothing is saved (its time is
/// said before it starts, from the time limits of these options):
/// the per-call costs, and read, write, pipe and socket throughput at a handful of sizes.
pub fn for_pricing() -> Vec<Box<dyn Probe>> {
    const KIB: u64 = 1024;
    const MIB: u64 = 1 << 20;
    let sizes = vec![512, 4 * KIB, 16 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, MIB];
    vec![
        Box::new(syscalls::Syscalls::new(syscalls::Options {
            cases: vec![
                syscalls::Case::Null,
                syscalls::Case::NullVectorDirty,
                syscalls::Case::Pread,
                syscalls::Case::Pwrite,
                syscalls::Case::Lseek,
                syscalls::Case::LseekRead,
                syscalls::Case::OpenReadClose,
                syscalls::Case::Stat,
                // Against stat, one path component's cost: paths priced at their depth.
                syscalls::Case::StatName,
                syscalls::Case::Fstat,
                // Half their difference: a context switch, which a pipe relay's
                // processes pay when they take turns on a CPU.
                syscalls::Case::PipeRoundTrip,
                syscalls::Case::SwitchRoundTrip,
            ],
            ..syscalls::Options::for_scale(Scale::Quick)
        })),
        // Two files: 10 MiB, which this guest's 32 MiB L3 holds, and 64 MiB, past it:
        // a program reading a large file is priced on the second (1 MiB reads: 18–20
        // GB/s against 25–28 here).
        Box::new(read::ReadProbe::new(read::Options {
            file_sizes: vec![10 * MIB, 64 * MIB],
            block_sizes: sizes.clone(),
            methods: vec![read::Method::Read],
            populate: vec![read::Populate::Write],
            ..read::Options::for_scale(Scale::Quick)
        })),
        Box::new(write::WriteProbe::new(write::Options {
            file_size: MIB,
            block_sizes: vec![4 * KIB, 64 * KIB, MIB],
            methods: vec![write::Method::Write],
            durability: vec![write::Durability::None],
            ..write::Options::for_scale(Scale::Quick)
        })),
        // O_DSYNC at the smallest block prices an fsync after a small write (the one
        // durable row pricing reads: larger blocks took seconds); a 1 MiB file keeps
        // its passes short.
        Box::new(write::WriteProbe::new(write::Options {
            file_size: MIB,
            block_sizes: vec![4 * KIB],
            methods: vec![write::Method::Write],
            durability: vec![write::Durability::Dsync],
            ..write::Options::for_scale(Scale::Quick)
        })),
        Box::new(pipe::PipeProbe::new(pipe::Options {
            chunk_sizes: vec![4 * KIB, 64 * KIB, MIB],
            capacities: vec![pipe::Capacity::Default, pipe::Capacity::Bytes(MIB)],
            methods: vec![pipe::Method::WriteRead],
            // Both ends on one CPU too: a program confined to one is priced on it.
            placements: vec![pipe::Placement::Any, pipe::Placement::Same],
            total: 16 * MIB,
            ..pipe::Options::for_scale(Scale::Quick)
        })),
        // Loopback TCP and unix sockets: what a program's sends and receives cost, and
        // sendfile's fix.
        Box::new(socket::SocketProbe::new(socket::Options {
            chunk_sizes: vec![KIB, 4 * KIB, 64 * KIB, MIB],
            families: vec![socket::Family::Tcp, socket::Family::Unix],
            methods: vec![socket::Method::WriteRead, socket::Method::Sendfile],
            placements: vec![socket::Placement::Any],
            sndbufs: vec![socket::Buffer::Default, socket::Buffer::Bytes(4 * MIB)],
            rcvbufs: vec![socket::Buffer::Default, socket::Buffer::Bytes(4 * MIB)],
            total: 16 * MIB,
            ..socket::Options::for_scale(Scale::Quick)
        })),
    ]
}

/// Every probe with the options `ioprobe run` uses, in registry order.
/// The params probe `name` records as observed (none for an unknown probe).
pub fn observed_params(name: &str) -> &'static [&'static str] {
    kind(name).map_or(&[][..], |k| k.observed_params())
}

pub fn registry() -> Vec<Box<dyn Probe>> {
    REGISTRY.iter().map(|k| k.for_run()).collect()
}

/// What a probe may use while it runs.
pub struct Context<'a> {
    pub harness: &'a harness::Config,
    pub env: &'a Environment,
    pub overhead: Overhead,
    pub scratch: &'a Scratch,
    pub progress: &'a Progress,
    /// CPUs ioprobe may use (before any `--cpu` pinning).
    pub cpus: &'a [usize],
    /// The command's time limit, shared out among the cases as they start.
    pub limit: &'a harness::TimeLimit,
    /// The cases to measure, when only some are (`run` revisiting the rows an
    /// undecided answer rests on); None: every case of the plan.
    pub only: Option<&'a std::collections::BTreeSet<String>>,
}

impl Context<'_> {
    /// Runs one case through the harness with progress reporting.
    pub fn measure(&self, probe: &str, case: &str, w: &mut dyn Workload) -> Result<Sampled> {
        self.progress.start(probe, case);
        let cfg = harness::Config {
            budget: self
                .limit
                .share(&[harness::TimeLimit::key(probe, case)], self.harness.budget),
            ..self.harness.clone()
        };
        let s = harness::measure(w, &cfg)?;
        self.progress.done_one();
        Ok(s)
    }

    /// Runs whole-pass workloads (one iteration = one pass) round-robin through the
    /// harness, one name per workload for the progress display.
    fn measure_rounds<W: Workload>(
        &self,
        probe: &str,
        names: &[&str],
        rows: &mut [W],
    ) -> Result<Vec<Sampled>> {
        let mut refs: Vec<&mut dyn Workload> =
            rows.iter_mut().map(|r| r as &mut dyn Workload).collect();
        let h = &harness::Config {
            budget: self.limit.group_share(
                &names
                    .iter()
                    .map(|n| harness::TimeLimit::key(probe, n))
                    .collect::<Vec<_>>(),
                self.harness.budget,
            ),
            ..self.harness.clone()
        };
        self.progress.start_group(
            refs.len(),
            1 + h.round_min(),
            h.budget.saturating_mul(refs.len().max(1) as u32),
        );
        let s = harness::measure_rounds(&mut refs, h, |i, round| {
            let what = if round == 0 { "warm-up" } else { "sample" };
            let name = names.get(i).copied().unwrap_or("");
            self.progress
                .pass(probe, i, &format!("{name} ({what} {round})"));
        });
        self.progress.end_group();
        let s = s?;
        Ok(s)
    }
}

/// A configured experiment: options chosen, ready to validate and run.
pub trait Probe {
    /// What the probe is (name, params, presentation).
    fn kind(&self) -> &'static dyn ProbeKind;
    /// The names of the cases it will measure, in plan order (the names its rows get).
    fn case_names(&self) -> Vec<String>;
    /// Number of cases it will measure (for the progress bar).
    fn case_count(&self) -> usize {
        self.case_names().len()
    }
    /// Bytes one pass of each case moves, in `case_names` order, for the cases sampled
    /// a whole pass at a time, as (fewest, most): a fitted pass lies between (None: a
    /// calibrated case). Used for the time estimate.
    fn pass_bytes(&self) -> Vec<Option<(u64, u64)>> {
        vec![None; self.case_count()]
    }
    /// What each case is expected to spend outside its passes, in `case_names` order:
    /// once before its first (a socket byte stream's processes, connection and
    /// warm-up) and before each later one. A guess, for the time estimate of a case
    /// no saved run has measured (saved rows carry what theirs took: JSON `setup`).
    fn setup_guesses(&self) -> Vec<crate::results::SetupTime> {
        vec![crate::results::SetupTime::NONE; self.case_count()]
    }
    /// How long its options may take when no `--time-limit` is given (the options'
    /// `time_limit`, set per scale by `Options::for_scale`).
    fn time_limit(&self) -> Option<std::time::Duration>;
    /// Checks options against the machine before anything is created (usage errors).
    fn validate(&self, env: &Environment, scratch: &Scratch) -> Result<()>;
    /// Runs every case.
    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>>;
    /// `ioprobe run` extends a size sweep once where its best row sits at an edge:
    /// the probe measuring the next size past each such edge (see
    /// [`sweep::beyond_edges`]), given the rows this probe measured; None when no best
    /// sits at an edge, or the probe has no size sweep.
    fn beyond_edges(&self, _rows: &[Measurement]) -> Option<Box<dyn Probe>> {
        None
    }
}

/// Checks a measurement read from a file against its probe: a probe this ioprobe knows,
/// and every param its tables and plots rely on, of the right type and range.
pub fn check_measurement(m: &Measurement) -> std::result::Result<(), String> {
    let Some(probe) = kind(&m.probe) else {
        return Err(format!(
            "unknown probe '{}' (known: {})",
            crate::units::escape(&m.probe),
            REGISTRY
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    probe.check_typed(m)
}

/// A probe's row contract: the typed params every row carries, written once. Serde
/// checks the names and types; `check` the ranges types cannot say.
pub trait RowParams: serde::de::DeserializeOwned {
    /// The ranges: sizes within [`crate::units::MAX_SIZE`], nonzero where zero means
    /// nothing. Err names the param.
    fn check(&self) -> std::result::Result<(), String>;
}

/// The measured rows of `probe` in `run`, with their typed params: how `trace/` and
/// `cp/` read a probe's rows (through the probe's own readers, never by string keys).
/// A row that does not read as `P` is left out; run files are refused at load when one
/// does not ([`ProbeKind::check_typed`]).
fn measured_rows<'a, P: RowParams>(run: &'a Run, probe: &'a str) -> Vec<(&'a Measurement, P)> {
    run.of_probe(probe)
        .filter(|m| m.is_ok())
        .filter_map(|m| Some((m, typed_params::<P>(m).ok()?)))
        .collect()
}

/// (size, figure) points in ascending size; where several rows share a size (two ways
/// of populating a file, say), the best (highest) figure.
fn best_per_size(points: impl IntoIterator<Item = (u64, f64)>) -> Vec<(u64, f64)> {
    let mut by: std::collections::BTreeMap<u64, f64> = std::collections::BTreeMap::new();
    for (size, v) in points {
        let e = by.entry(size).or_insert(0.0);
        *e = e.max(v);
    }
    by.into_iter().collect()
}

/// Err naming `key` unless `min <= value <= MAX_SIZE`.
pub fn size_param(key: &str, value: u64, min: u64) -> std::result::Result<(), String> {
    if value >= min && value <= crate::units::MAX_SIZE {
        Ok(())
    } else {
        Err(format!("param '{key}' has an invalid value {value}"))
    }
}

/// A row's params as the probe's typed `P`, checked ([`ProbeKind::check_typed`] and the
/// typed readers use it). The one-line error names the param: "lacks param 'x'", or
/// "param 'x' has an invalid value …" with serde's reason.
pub fn typed_params<P: RowParams>(m: &Measurement) -> std::result::Result<P, String> {
    let p: P = serde_path_to_error::deserialize(serde_json::Value::Object(m.params.clone()))
        .map_err(|e| {
            let inner = e.inner().to_string();
            if let Some(field) = inner
                .strip_prefix("missing field `")
                .and_then(|r| r.split('`').next())
            {
                return format!("lacks param '{field}'");
            }
            if let Some((field, known)) = inner
                .strip_prefix("unknown field `")
                .and_then(|r| r.split_once("`, "))
            {
                return format!(
                    "unknown param '{}' ({})",
                    crate::units::escape(field),
                    known.replace('`', "")
                );
            }
            let key = e.path().to_string();
            let value = m
                .params
                .get(key.split(['.', '[']).next().unwrap_or(""))
                .map(|v| crate::units::escape(&v.to_string()))
                .unwrap_or_default();
            format!(
                "param '{key}' has an invalid value {value}: {}",
                crate::units::escape(&inner)
            )
        })?;
    p.check()?;
    Ok(p)
}

/// How many times [`ensure_resident`] reads a file whose pages keep going missing.
const WARM_TRIES: usize = 5;

/// Makes sure the whole file is in the page cache (reading it again while any page is
/// missing, up to five times) and proves it with mincore; returns the (resident, total)
/// pages then observed. Other processes' memory pressure can evict a page between the
/// read and mincore: when pages are still missing after the last try, the observed
/// residency is returned for the caller to label the figure with, not an error.
pub(crate) fn ensure_resident(fd: &rustix::fd::OwnedFd, size: u64) -> Result<(usize, usize)> {
    use crate::sys::{calls, copyfile, mapping::file_residency};
    let mut buf = Vec::new();
    let evict = crate::fault::enabled("evict") && size > 0;
    let residency = || -> Result<(usize, usize)> {
        if evict {
            // Test hook: memory pressure evicts the file just before mincore (whole
            // file: a large folio is not evicted piecemeal).
            copyfile::fadvise(fd, copyfile::Advice::DontNeed)?;
        }
        Ok(file_residency(fd, size)?)
    };
    let warm = |buf: &mut Vec<u8>| -> Result<()> {
        buf.resize(1 << 20, 0);
        let mut off = 0;
        while off < size {
            let n = calls::pread(fd, buf, off)?;
            if n == 0 {
                break;
            }
            off += n as u64;
        }
        Ok(())
    };
    warm_until_resident(residency, || warm(&mut buf), WARM_TRIES)
}

/// The loop of [`ensure_resident`]: `warm` until `residency` reports every page, at
/// most `tries` times; returns the last residency observed.
fn warm_until_resident(
    mut residency: impl FnMut() -> Result<(usize, usize)>,
    mut warm: impl FnMut() -> Result<()>,
    tries: usize,
) -> Result<(usize, usize)> {
    let mut seen = residency()?;
    for _ in 0..tries {
        if seen.0 == seen.1 {
            break;
        }
        warm()?;
        seen = residency()?;
    }
    Ok(seen)
}

/// The kinds of the probes a run measured, in run order.
pub fn kinds_of(run: &Run) -> Vec<&'static dyn ProbeKind> {
    run.probes().iter().filter_map(|p| kind(p)).collect()
}

/// Resolves a RUN argument (a JSON file, or a saved run of the settings' store),
/// each row checked as its probe reads it.
pub fn resolve(
    settings: &crate::settings::Settings,
    spec: &str,
) -> anyhow::Result<crate::results::runref::Named> {
    crate::results::runref::resolve(spec, &mut || settings.open_store(), check_measurement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_evicted_after_every_warm_up_is_reported_not_fatal() {
        let mut warmed = 0;
        let seen = warm_until_resident(
            || Ok((16381, 16384)),
            || {
                warmed += 1;
                Ok(())
            },
            WARM_TRIES,
        )
        .unwrap();
        assert_eq!(seen, (16381, 16384));
        assert_eq!(warmed, WARM_TRIES);
    }

    #[test]
    fn warming_stops_once_every_page_is_in() {
        let warmed = std::cell::Cell::new(0);
        let seen = warm_until_resident(
            || Ok((if warmed.get() == 2 { 8 } else { 7 }, 8)),
            || {
                warmed.set(warmed.get() + 1);
                Ok(())
            },
            WARM_TRIES,
        )
        .unwrap();
        assert_eq!((seen, warmed.get()), ((8, 8), 2));
    }
}
