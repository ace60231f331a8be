//! The eBPF tracer attached to running processes (`trace --pid`, `--cgroup`): the
//! programs filter in the kernel on the process ids (TGIDs) or the cgroup, and follow
//! the tasks those start; nothing in the processes changes, and the programs are
//! detached when the window ends (by closing their links) or if ioprobe dies.

use super::super::attach::{Target, ending, opening_events};
use super::{Loaded, Tracer};
use std::collections::HashSet;
use std::io;

/// What an attached trace watches: the processes attached to that have not ended
/// (None: a cgroup, whose processes come and go; its window ends by its clock only).
pub(super) struct Attached {
    pub(super) roots: Option<Vec<i32>>,
}

impl Loaded {
    /// Starts watching `targets` (loaded with `Scope::Pids` of their ids, or
    /// `Scope::Cgroup` with `cgroup` set): the trace opens with what each process has
    /// open now ([`opening_events`]).
    pub fn attach(self, targets: &[Target], cgroup: bool) -> io::Result<Tracer> {
        let Loaded { maps, links } = self;
        let main = targets.first().map_or(0, |t| t.pid);
        let roots = (!cgroup).then(|| targets.iter().map(|t| t.pid).collect());
        let mut t = Tracer::start(maps, links, main, None, Some(Attached { roots }))?;
        t.live = targets
            .iter()
            .flat_map(|x| x.threads.iter().copied())
            .collect::<HashSet<i32>>();
        t.queue.extend(opening_events(targets));
        Ok(t)
    }
}

impl Tracer {
    /// Attached: once the window has ended (its clock, a signal to ioprobe, or every
    /// process attached to gone), the programs are detached and the reader empties the
    /// ring once more.
    pub(super) fn window_end(&mut self) {
        if self.stopping {
            return;
        }
        let Some(a) = &mut self.attached else {
            return;
        };
        if let Some(roots) = &mut a.roots {
            roots.retain(|&p| running(p));
        }
        let gone = a.roots.as_ref().is_some_and(Vec::is_empty);
        if ending().is_some() || gone {
            self.links.clear();
            self.stop_reader();
            self.stopping = true;
        }
    }
}

/// Whether process `pid` still runs (not gone, not a zombie).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X")
    })
}
