//! Attached to a service for a long window, the processes it starts and that end
//! (a CGI, a shell loop's `sleep`s, a build daemon's compilers) would each keep their
//! rows: ten minutes on a loop starting 100 programs a second held 60,000 processes
//! (980 MB, a 1 GB report). Past [`KEPT`] processes, one that ends is folded into the
//! first ended process of the same program: its rows, opens, stats, syncs and copies
//! added to that one's, which says how many it stands for.

use super::Profile;
use super::model::OpStats;
use super::op::Op;

/// Processes kept apart before ended ones are folded.
pub const KEPT: usize = 64;

impl OpStats {
    /// Adds `o`'s calls to these.
    fn merge(&mut self, o: &OpStats) {
        self.calls += o.calls;
        self.bytes += o.bytes;
        self.errors += o.errors;
        for (&b, &n) in &o.sizes {
            *self.sizes.entry(b).or_default() += n;
        }
        for (&b, &n) in &o.asked {
            *self.asked.entry(b).or_default() += n;
        }
        self.sequential += o.sequential;
        self.random += o.random;
        self.short += o.short;
        self.eof += o.eof;
        self.reread_bytes += o.reread_bytes;
        self.after_lseek += o.after_lseek;
        self.gaps.merge(&o.gaps);
        self.waited.merge(&o.waited);
        self.named += o.named;
        self.components += o.components;
    }
}

impl Profile {
    /// Process `pid` has ended: when folding and past [`KEPT`] processes, its figures go
    /// to the first ended process of the same program, and it is forgotten.
    pub(super) fn ended(&mut self, pid: i32) {
        // A leader that ended before its threads (pthread_exit in main) leaves the
        // process running.
        if !self.fold || self.processes.len() <= KEPT || self.tgid.values().any(|&p| p == pid) {
            return;
        }
        self.fds.remove(&pid);
        self.cwd.remove(&pid);
        self.early.remove(&pid);
        let Some(label) = self.processes.get(&pid).map(|p| p.comm.clone()) else {
            return;
        };
        let into = *self.folded_into.entry(label).or_insert(pid);
        if into == pid {
            return;
        }
        let (moved, switches) = self
            .processes
            .remove(&pid)
            .map_or((0, 0), |p| (1 + p.folded, p.switches));
        if let Some(p) = self.processes.get_mut(&into) {
            p.folded += moved;
            p.switches += switches;
        }
        let ops: Vec<_> = self
            .ops
            .range((pid, 0, Op::first())..(pid + 1, 0, Op::first()))
            .map(|(k, _)| *k)
            .collect();
        for k in ops {
            if let Some(s) = self.ops.remove(&k) {
                self.ops.entry((into, k.1, k.2)).or_default().merge(&s);
            }
        }
        fold_counts(&mut self.opens, pid, into);
        fold_counts(&mut self.stats, pid, into);
        let syncs: Vec<_> = self.syncs.keys().filter(|k| k.0 == pid).copied().collect();
        for k in syncs {
            if let Some(s) = self.syncs.remove(&k) {
                let t = self.syncs.entry((into, k.1)).or_default();
                t.syncs += s.syncs;
                t.writes += s.writes;
                t.bytes += s.bytes;
            }
        }
        let copies: Vec<_> = self.copies.keys().filter(|k| k.0 == pid).copied().collect();
        for k in copies {
            if let Some((pairs, bytes)) = self.copies.remove(&k) {
                let t = self.copies.entry((into, k.1, k.2)).or_default();
                t.0 += pairs;
                t.1 += bytes;
            }
        }
    }
}

/// Moves `pid`'s counts per path to `into`.
fn fold_counts(map: &mut std::collections::BTreeMap<(i32, String), u64>, pid: i32, into: i32) {
    let keys: Vec<String> = map
        .keys()
        .filter(|k| k.0 == pid)
        .map(|k| k.1.clone())
        .collect();
    for path in keys {
        if let Some(n) = map.remove(&(pid, path.clone())) {
            *map.entry((into, path)).or_default() += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{AT, F, T, path};
    use super::*;
    use crate::sys::trace::calls::Syscall;
    use crate::sys::trace::{Event, Memory};

    /// `sys(args)` by `tid` returning `ret`, with memory `parts`.
    fn by(
        tid: i32,
        sys: Syscall,
        args: [u64; 6],
        ret: i64,
        parts: Vec<(u64, Vec<u8>, bool)>,
    ) -> Event {
        Event::Call {
            tid,
            call: sys,
            args,
            ret,
            timing: None,
            mem: Memory::Captured(parts, std::cell::Cell::new(false)),
        }
    }

    /// Past KEPT processes, ended ones of one program fold into the first: their calls
    /// add up, and the first says how many it stands for.
    #[test]
    fn ended_processes_of_one_program_fold_into_the_first_past_the_kept_few() {
        let mut p = Profile::new(false, false).folding();
        let n = KEPT as i32 + 10;
        for i in 0..n {
            let pid = T + i;
            p.add(&Event::Task {
                tid: pid,
                parent: 1,
                pid: Some(pid),
                comm: Some(if i < KEPT as i32 {
                    format!("p{i}")
                } else {
                    "sleep".into()
                }),
            });
            let at_fdcwd = -100i64 as u64;
            p.add(&by(
                pid,
                Syscall::Openat,
                [at_fdcwd, AT, 0, 0, 0, 0],
                3,
                path(F),
            ));
            p.add(&by(
                pid,
                Syscall::Read,
                [3, 0x9000, 100, 0, 0, 0],
                100,
                Vec::new(),
            ));
            p.add(&Event::Exit { tid: pid });
        }
        let sleeps: Vec<_> = p.processes.values().filter(|x| x.comm == "sleep").collect();
        assert_eq!(sleeps.len(), 1, "{sleeps:?}");
        assert_eq!(sleeps[0].folded, 9);
        let reads: u64 = p
            .ops
            .iter()
            .filter(|(k, _)| k.2 == Op::Call(crate::sys::trace::calls::Syscall::Read))
            .map(|(_, s)| s.calls)
            .sum();
        assert_eq!(reads, n as u64, "no call is lost in the folding");
        let opens: u64 = p.opens.values().sum();
        assert_eq!(opens, n as u64);
        // Without folding (a command's trace), every process keeps its rows.
        let mut q = Profile::new(false, false);
        for i in 0..n {
            q.add(&Event::Task {
                tid: T + i,
                parent: 1,
                pid: Some(T + i),
                comm: Some("sleep".into()),
            });
            q.add(&Event::Exit { tid: T + i });
        }
        assert!(q.processes.len() >= n as usize, "{}", q.processes.len());
    }
}
