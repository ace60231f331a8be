//! Probes: one file per experiment family, each a list of named cases run by the harness.
//!
//! A probe turns its options into workloads, hands them to the harness and returns
//! [`Measurement`]s; it never formats anything. Adding a probe means one file here and
//! one line in [`registry`].

pub mod copy;
pub mod pipe;
pub mod read;
pub mod syscalls;

use crate::harness::{self, Overhead, Sampled, Workload};
use crate::progress::Progress;
use crate::results::Measurement;
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use anyhow::Result;

/// What a probe may use while it runs.
pub struct Context<'a> {
    pub harness: &'a harness::Config,
    pub env: &'a Environment,
    pub overhead: Overhead,
    pub scratch: &'a Scratch,
    pub progress: &'a Progress,
    /// CPUs ioprobe may use (before any `--cpu` pinning).
    pub cpus: &'a [usize],
}

impl Context<'_> {
    /// Runs one case through the harness with progress reporting.
    pub fn measure(&self, probe: &str, case: &str, w: &mut dyn Workload) -> Result<Sampled> {
        self.progress.start(probe, case);
        let s = harness::measure(w, self.harness)?;
        self.progress.done_one();
        Ok(s)
    }

    /// Runs whole-pass workloads (one iteration = one pass) round-robin through the
    /// harness, one name per workload for the progress display.
    pub fn measure_rounds<W: Workload>(
        &self,
        probe: &str,
        names: &[String],
        rows: &mut [W],
    ) -> Result<Vec<Sampled>> {
        let mut refs: Vec<&mut dyn Workload> =
            rows.iter_mut().map(|r| r as &mut dyn Workload).collect();
        let s = harness::measure_rounds(&mut refs, self.harness, |i, round| {
            let what = if round == 0 { "warm-up" } else { "sample" };
            let name = names.get(i).map_or("", String::as_str);
            self.progress
                .start(probe, &format!("{name} ({what} {round})"));
        })?;
        for _ in 0..rows.len() {
            self.progress.done_one();
        }
        Ok(s)
    }
}

/// An experiment family.
pub trait Probe {
    /// The probe's name, as used on the command line and in JSON (`probe`).
    fn name(&self) -> &'static str;
    /// Number of cases it will measure (for the progress bar).
    fn case_count(&self) -> usize;
    /// Checks options against the machine before anything is created (usage errors).
    fn validate(&self, env: &Environment, scratch: &Scratch) -> Result<()>;
    /// Runs every case.
    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>>;
    /// The params every measurement of this probe carries, checked on runs read from
    /// files so that a hostile or damaged document cannot reach tables and plots.
    fn params(&self) -> &'static [ParamSpec];
}

/// One parameter of a probe's measurements.
pub struct ParamSpec {
    pub key: &'static str,
    pub kind: ParamKind,
    /// Unsupported rows may lack optional params (a granted pipe size, say).
    pub required: bool,
}

/// What a parameter's value must be.
pub enum ParamKind {
    /// A byte count from `min` to [`crate::units::MAX_SIZE`].
    Size { min: u64 },
    /// Any string.
    Text,
    /// true or false.
    Bool,
    /// A string the predicate accepts (a method or state name).
    OneOf(fn(&str) -> bool),
}

impl ParamSpec {
    pub const fn size(key: &'static str, min: u64) -> ParamSpec {
        ParamSpec {
            key,
            kind: ParamKind::Size { min },
            required: true,
        }
    }
    pub const fn text(key: &'static str) -> ParamSpec {
        ParamSpec {
            key,
            kind: ParamKind::Text,
            required: true,
        }
    }
    pub const fn one_of(key: &'static str, ok: fn(&str) -> bool) -> ParamSpec {
        ParamSpec {
            key,
            kind: ParamKind::OneOf(ok),
            required: true,
        }
    }
    pub const fn flag(key: &'static str) -> ParamSpec {
        ParamSpec {
            key,
            kind: ParamKind::Bool,
            required: true,
        }
    }
    /// The same parameter, allowed to be absent.
    pub const fn optional(self) -> ParamSpec {
        ParamSpec {
            required: false,
            ..self
        }
    }

    fn check(&self, v: Option<&serde_json::Value>) -> std::result::Result<(), String> {
        let Some(v) = v else {
            return if self.required {
                Err(format!("lacks param '{}'", self.key))
            } else {
                Ok(())
            };
        };
        let ok = match self.kind {
            ParamKind::Size { min } => v
                .as_u64()
                .is_some_and(|b| b >= min && b <= crate::units::MAX_SIZE),
            ParamKind::Text => v.is_string(),
            ParamKind::Bool => v.is_boolean(),
            ParamKind::OneOf(ok) => v.as_str().is_some_and(ok),
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "param '{}' has an invalid value {}",
                self.key,
                crate::units::escape(&v.to_string())
            ))
        }
    }
}

/// Checks a measurement read from a file against its probe: a probe this ioprobe knows,
/// and every param its tables and plots rely on, of the right type and range.
pub fn check_measurement(m: &Measurement) -> std::result::Result<(), String> {
    let list = registry();
    let Some(probe) = list.iter().find(|p| p.name() == m.probe) else {
        return Err(format!(
            "unknown probe '{}' (known: {})",
            crate::units::escape(&m.probe),
            list.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        ));
    };
    for spec in probe.params() {
        spec.check(m.params.get(spec.key))?;
    }
    Ok(())
}

/// Every probe with its default options, in the order `ioprobe run` runs them.
pub fn registry() -> Vec<Box<dyn Probe>> {
    vec![
        Box::new(syscalls::Syscalls::new(syscalls::Options::default())),
        Box::new(read::ReadProbe::new(read::Options::default())),
        Box::new(pipe::PipeProbe::new(pipe::Options::for_run())),
        Box::new(copy::CopyProbe::new(copy::Options::for_run())),
    ]
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
            copyfile::fadvise(fd, rustix::fs::Advice::DontNeed)?;
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
