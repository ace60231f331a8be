//! The eBPF tracer attached to running processes (`trace --pid`, `--cgroup`): the
//! programs filter in the kernel on the process ids (TGIDs) or the cgroup, and follow
//! the tasks those start; nothing in the processes changes, and the programs are
//! detached when the window ends (by closing their links) or if ioprobe dies.

use super::super::attach::{Target, ending, opening_events};
use super::super::procfs;
use super::super::ptrace::os;
use super::kernel::map_update;
use super::{Ebpf, Loaded};
use std::collections::HashSet;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// What an attached trace watches: the processes attached to that have not ended
/// (None: a cgroup, whose processes come and go; its window ends by its clock only).
pub(super) struct Attached {
    pub(super) roots: Option<Vec<i32>>,
}

impl Loaded {
    /// Starts watching `targets` (loaded with `Scope::Pids` of their ids), or the
    /// processes of `cgroup` (loaded with `Scope::Cgroup`): they are put in the
    /// programs' map now, and the trace opens with what each process has open now
    /// ([`opening_events`]).
    pub fn attach(self, targets: &[Target], cgroup: Option<&Path>) -> io::Result<Ebpf> {
        let Loaded { maps, links } = self;
        if let Some(map) = &maps.pids {
            for t in targets {
                map_update(map, &t.pid.to_ne_bytes(), &1u32.to_ne_bytes())?;
            }
        }
        if let (Some(map), Some(dir)) = (&maps.cgroup, cgroup) {
            let d = std::fs::File::open(dir).map_err(os("opening the cgroup"))?;
            map_update(map, &0u32.to_ne_bytes(), &d.as_raw_fd().to_ne_bytes())
                .map_err(os("bpf(BPF_MAP_UPDATE_ELEM) on the cgroup array"))?;
        }
        let main = targets.first().map_or(0, |t| t.pid);
        let roots = cgroup
            .is_none()
            .then(|| targets.iter().map(|t| t.pid).collect());
        let mut t = Ebpf::start(maps, links, main, None, Some(Attached { roots }))?;
        t.live = targets
            .iter()
            .flat_map(|x| x.threads.iter().copied())
            .collect::<HashSet<i32>>();
        t.queue.extend(opening_events(targets));
        Ok(t)
    }
}

impl Ebpf {
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
            roots.retain(|&p| procfs::running(p));
        }
        let gone = a.roots.as_ref().is_some_and(Vec::is_empty);
        if ending().is_some() || gone {
            self.links.clear();
            self.stop_reader();
            self.stopping = true;
        }
    }
}
