//! The trace command's options, as `cli` builds them.

use crate::sys::trace::Tracer;
use std::ffi::OsString;
use std::path::PathBuf;

/// The trace command's options.
#[derive(Debug, Clone)]
pub struct Options {
    pub command: Vec<OsString>,
    pub output: Option<PathBuf>,
    pub json: bool,
    /// Runs to price with instead of this host's newest (RUN specs).
    pub figures: Vec<String>,
    /// The tracer `--tracer` names; None: `auto`, which takes eBPF where the kernel
    /// allows it (root, or CAP_BPF with CAP_PERFMON), else preload where the program
    /// is dynamically linked, else ptrace (or ptrace where it ran faster for this
    /// command here: `pick`).
    pub tracer: Option<Tracer>,
    /// Attach to these running processes instead of running a command.
    pub pids: Vec<i32>,
    /// Attach to every process of this cgroup (eBPF).
    pub cgroup: Option<PathBuf>,
    /// Attached: how long to watch (None: until Ctrl-C or the processes end).
    pub duration: Option<std::time::Duration>,
}

impl Options {
    /// Whether this trace attaches to running processes rather than running a command.
    pub fn attaches(&self) -> bool {
        !self.pids.is_empty() || self.cgroup.is_some()
    }
}
