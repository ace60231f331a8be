//! What a trace watched, as its report names it: a command ioprobe ran to its end, or
//! running processes attached to over a window.

use crate::sys::trace::Ended;
use serde::Serialize;

/// What a trace watched.
#[derive(Debug, Clone)]
pub enum Subject {
    /// The command ioprobe ran (its arguments), and how it ended.
    Command { argv: Vec<String>, ended: Ended },
    /// Processes attached to (`trace --pid`, `--cgroup`), over a window.
    Attached(Window),
}

impl Subject {
    /// What the report's first line and JSON `command` name: the command's words, or
    /// the processes (or the cgroup) attached to.
    pub fn shown(&self) -> Vec<String> {
        match self {
            Subject::Command { argv, .. } => argv.clone(),
            Subject::Attached(w) => match &w.cgroup {
                Some(c) => vec![format!("cgroup {c}")],
                None => w.pids.iter().map(|(p, c)| format!("{c} ({p})")).collect(),
            },
        }
    }

    /// The window watched (None: a command, traced to its end).
    pub fn window(&self) -> Option<&Window> {
        match self {
            Subject::Attached(w) => Some(w),
            Subject::Command { .. } => None,
        }
    }

    /// How the command ended (None: attached processes run on).
    pub fn ended(&self) -> Option<Ended> {
        match self {
            Subject::Command { ended, .. } => Some(*ended),
            Subject::Attached(_) => None,
        }
    }
}

/// What an attached trace watched, and for how long (JSON `window`).
#[derive(Debug, Clone, Serialize)]
pub struct Window {
    /// The processes attached to: (pid, program).
    pub pids: Vec<(i32, String)>,
    pub cgroup: Option<String>,
    pub seconds: f64,
    pub ended_by: EndedBy,
    /// ptrace: the system calls that stopped (traced or not: a running process
    /// cannot be given a seccomp filter).
    pub stopped_calls: Option<u64>,
}

/// How an attached trace's window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EndedBy {
    /// `--duration` ran out.
    Duration,
    /// SIGINT, SIGTERM or SIGHUP to ioprobe.
    Signal,
    /// Every process attached to ended.
    Exit,
}
