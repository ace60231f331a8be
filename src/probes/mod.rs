//! Probes: one file per experiment family, each a list of named cases run by the harness.
//!
//! A probe turns its options into workloads, hands them to the harness and returns
//! [`Measurement`]s; it never formats anything. Adding a probe means one file here and
//! one line in [`registry`].

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
}

impl Context<'_> {
    /// Runs one case through the harness with progress reporting.
    pub fn measure(&self, probe: &str, case: &str, w: &mut dyn Workload) -> Result<Sampled> {
        self.progress.start(probe, case);
        let s = harness::measure(w, self.harness)?;
        self.progress.done_one();
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
}

/// Every probe with its default options, in the order `ioprobe run` runs them.
pub fn registry() -> Vec<Box<dyn Probe>> {
    vec![
        Box::new(syscalls::Syscalls::new(syscalls::Options::default())),
        Box::new(read::ReadProbe::new(read::Options::default())),
    ]
}
