//! What the profile holds: the targets, per (process, target, operation) figures,
//! the processes, and the patterns findings are made of.

use super::fd::Fd;
use super::op::Op;
use crate::sys::trace::Memory;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The tables looked up at every traced call, keyed by process, descriptor and target
/// numbers: Fx hashing (rustc's) in place of SipHash, which took a sixth of the
/// profile's time at a million calls a second. Tables keyed by a path the traced
/// program chose keep SipHash.
pub(super) type IntMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// What a descriptor refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Directory,
    Pipe,
    Socket,
    Tty,
    DevNull,
    Device,
    Memory,
    Other,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Directory => "directory",
            Kind::Pipe => "pipe",
            Kind::Socket => "socket",
            Kind::Tty => "tty",
            Kind::DevNull => "/dev/null",
            Kind::Device => "device",
            Kind::Memory => "memory",
            Kind::Other => "other",
        }
    }
}

/// A file, pipe, socket… that calls were made on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The path, or `pipe:[inode]`, `socket:[inode]`, `anonymous memory`.
    pub name: String,
    pub kind: Kind,
    /// The filesystem type holding a file or directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs: Option<String>,
    /// A socket's family as the socket probe names it (unix, tcp, unix-dgram, udp),
    /// looked up while the socket was open; absent when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
}

impl Target {
    /// "path (ext4)", "pipe:[123]", "socket:[456] (tcp)".
    pub fn label(&self) -> String {
        match (&self.fs, &self.family) {
            (Some(x), _) | (None, Some(x)) => format!("{} ({x})", self.name),
            (None, None) => self.name.clone(),
        }
    }
}

/// Figures of one operation on one target by one process.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OpStats {
    pub calls: u64,
    /// Bytes moved (the sum of successful returns of data calls; mapped length for mmap).
    pub bytes: u64,
    pub errors: u64,
    /// Requested sizes: calls per power of two (key: the bucket's lower bound in bytes).
    pub sizes: BTreeMap<u64, u64>,
    /// Bytes requested per bucket of `sizes` (their sum): what the typical size is
    /// read from (not in JSON, whose `sizes` is the histogram).
    #[serde(skip)]
    pub asked: BTreeMap<u64, u64>,
    /// Data calls at the offset the previous one ended at, and elsewhere.
    pub sequential: u64,
    pub random: u64,
    /// Reads that returned less than asked (not counting end of file), and at end of
    /// file (0).
    pub short: u64,
    pub eof: u64,
    /// Bytes of this read that the process had already read from the same file.
    pub reread_bytes: u64,
    /// Calls right after an lseek on the same descriptor (lseek+read: pread would do).
    pub after_lseek: u64,
    /// The time from the task's previous traced call's end to each call's end, where
    /// the tracer times calls (eBPF): the call, the program's own work before it, and
    /// the tracer's cost ([`Gaps`]).
    #[serde(skip)]
    pub gaps: super::gaps::Gaps,
    /// The same intervals where the task was switched out in between: the call waited
    /// (an fsync for the disk, a read for data) or another task took the CPU. Apart
    /// from [`OpStats::gaps`]: they price only calls that wait by their nature.
    #[serde(skip)]
    pub waited: super::gaps::Gaps,
    /// Calls naming a path the tracer read (opens, stats), and the path components
    /// they looked up in all: a stat of "f" costs less than one of "/a/b/c/f".
    #[serde(skip)]
    pub named: u64,
    #[serde(skip)]
    pub components: u64,
}

/// A timed pair's interval (ns) from the first call's end to the second's, and
/// whether the task was switched out in between.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub ns: u64,
    pub switched: bool,
}

/// Fewest timed calls from which a row's calls are priced by their own time.
pub const TIMED_ENOUGH: u64 = 8;

impl OpStats {
    /// Where the tracer timed at least [`TIMED_ENOUGH`] of this row's calls, the
    /// mean of their intervals, whether they waited or not, in seconds, and how many:
    /// what a call that waits by its nature (an fsync, for the disk) took in this very
    /// run, the program's own work before it and tracing's part included
    /// (microseconds against the disk's tens or hundreds). A mean, not the median: it
    /// prices the row's total, and a row's calls may take two costs (sqlite's journal,
    /// synced after its records and again after its header: the median priced 2,000
    /// transactions at 0.66–0.81 of what they took). Trimmed, the slowest and fastest
    /// tenth left out: one slow call among twenty timed would otherwise price them all
    /// (fsync-every-write at 1.96 of its saving once).
    pub fn timed_mean_s(&self) -> Option<(f64, u64)> {
        let mut all = self.gaps.clone();
        all.merge(&self.waited);
        let n = all.len();
        (n >= TIMED_ENOUGH).then(|| Some((all.trimmed_mean(0.1)? * 1e-9, n)))?
    }

    /// One call that named a path of `components` (None: not read).
    pub fn looked_up(&mut self, components: Option<u64>) {
        if let Some(c) = components {
            self.named += 1;
            self.components += c;
        }
    }

    /// The path components its calls looked up, on average (None: no path read).
    pub fn mean_components(&self) -> Option<f64> {
        (self.named > 0).then(|| self.components as f64 / self.named as f64)
    }

    /// One call that asked to move `bytes`: its bucket in the histogram.
    pub fn record_size(&mut self, bytes: u64) {
        self.gaps.sized(bytes);
        let b = bucket(bytes);
        *self.sizes.entry(b).or_default() += 1;
        *self.asked.entry(b).or_default() += bytes;
    }

    /// Distinct bytes it moved (a read's bytes less those read again): how large a
    /// file it read, for the curve that prices it.
    pub fn span(&self) -> u64 {
        self.bytes.saturating_sub(self.reread_bytes)
    }

    /// The typical request size: the mean request of the histogram's median bucket
    /// (the one half the calls are at or below), so a loop of 100-byte writes is 100 B,
    /// not its bucket's floor, 64 B. A bucket without its bytes (a profile folded from
    /// older figures) gives its floor.
    pub fn typical_size(&self) -> Option<u64> {
        let mut left = self.sizes.values().sum::<u64>().div_ceil(2);
        for (&b, &n) in &self.sizes {
            if n >= left {
                let asked = self.asked.get(&b).copied().unwrap_or(0);
                return Some(if asked > 0 && n > 0 { asked / n } else { b });
            }
            left -= n;
        }
        None
    }
}

impl Process {
    pub fn new(pid: i32, comm: String) -> Process {
        Process {
            pid,
            first: comm.clone(),
            last: comm.clone(),
            comm,
            execs: 0,
            folded: 0,
            switches: 0,
            cpus: None,
        }
    }

    /// The label after `execs` execs from `first` to `last` (the names in between are
    /// not kept: what the process is, and where it came from, are).
    pub(super) fn label(first: &str, last: &str, execs: u32) -> String {
        match execs {
            0 => last.to_string(),
            _ if first == last => format!("{last} ({execs} execs)"),
            1 => format!("{first} → {last}"),
            _ => format!("{first} → … → {last}"),
        }
    }
}

/// A process seen in the trace.
#[derive(Debug, Clone, Serialize)]
pub struct Process {
    pub pid: i32,
    /// The label: the program's name, or the programs it ran ("sh → cat", "make → … →
    /// cc"); a chain that comes back to its first name is that name with its count of
    /// execs ("python3 (6 execs)": a pyenv shim, `env`, bash and pyenv before Python).
    pub comm: String,
    /// The first and the last program's names (the label is made from them).
    #[serde(skip)]
    pub(super) first: String,
    #[serde(skip)]
    pub(super) last: String,
    /// Programs it changed to (execve).
    pub execs: u32,
    /// Ended processes of the same program folded into this one (attached for a long
    /// window: see `profile/fold.rs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub folded: u64,
    /// Its tasks' context switches from their first timed call to their last (eBPF:
    /// the switches word of timed calls; 0 where no call was timed).
    #[serde(skip_serializing_if = "is_zero")]
    pub switches: u64,
    /// The CPUs it may run on (/proc's Cpus_allowed_list, "0-3"), read when it was
    /// first seen; None where it was gone by then.
    #[serde(skip)]
    pub cpus: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// fsyncs on one target: how many, and the writes and bytes before each.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Syncs {
    pub syncs: u64,
    pub writes: u64,
    pub bytes: u64,
}

/// The whole profile.
#[derive(Debug, Default)]
pub struct Profile {
    pub processes: BTreeMap<i32, Process>,
    pub targets: Vec<Target>,
    /// (pid, target, operation) → figures.
    pub ops: BTreeMap<(i32, usize, Op), OpStats>,
    /// (pid, path) → successful opens.
    pub opens: BTreeMap<(i32, String), u64>,
    /// (pid, path) → stat-family calls naming it.
    pub stats: BTreeMap<(i32, String), u64>,
    /// (pid, target) → fsyncs and the writes between them.
    pub syncs: BTreeMap<(i32, usize), Syncs>,
    /// (pid, source, destination) → read-then-write pairs and bytes.
    pub copies: BTreeMap<(i32, usize, usize), (u64, u64)>,
    /// Pipes whose capacity was set: target → granted bytes.
    pub pipe_sizes: BTreeMap<usize, u64>,
    /// Calls per system call name (every process and target), to check against strace.
    pub counts: BTreeMap<&'static str, u64>,
    /// What the report must say about how the command ran under trace: a program whose
    /// calls could not be seen, privileges dropped, ptrace refused.
    pub notes: std::collections::BTreeSet<String>,
    /// Per-directory rows past [`TARGETS`] targets: target → files folded into it.
    pub folded: BTreeMap<usize, u64>,
    pub(super) by_name: HashMap<String, usize>,
    pub(super) tgid: IntMap<i32, i32>,
    pub(super) fds: IntMap<i32, IntMap<i32, Fd>>,
    /// Per target: byte ranges read so far, merged.
    pub(super) read: IntMap<usize, Vec<(u64, u64)>>,
    /// Per task: the last read (source, bytes) when a copy may follow.
    pub(super) last_read: IntMap<i32, (usize, u64)>,
    /// When each task's last timed call ended, and the interval to the call being
    /// taken in, which the first row it counts in keeps ([`OpStats::gaps`]).
    pub(super) ended_at: IntMap<i32, crate::sys::trace::Timing>,
    /// Per task: its context switches word at its first timed call and its last,
    /// added to its process's [`Process::switches`] when it ends.
    pub(super) switch_words: IntMap<i32, (u32, u32)>,
    pub(super) interval: Option<Interval>,
    /// Per (pid, target): writes and bytes since the last fsync.
    pub(super) unsynced: IntMap<(i32, usize), (u64, u64)>,
    /// io_uring rings: (pid, descriptor) → layout and where they are mapped.
    pub(super) rings: IntMap<(i32, i32), super::uring::Ring>,
    /// The memory of the call being added.
    pub(super) mem: Memory,
    /// The calls some of whose memory the in-kernel tracer had not copied.
    pub(super) uncopied: BTreeSet<&'static str>,
    /// Each call is seen while its task is stopped at it (ptrace): its /proc entries
    /// are read then. Otherwise (eBPF, preload) calls are read a little later.
    pub(super) ptrace: bool,
    /// The command runs as a ptrace tracee (ptrace, preload): setuid programs lose
    /// their privileges, its own ptrace calls fail.
    pub(super) traced: bool,
    /// Working directories seen when programs started (eBPF).
    pub(super) cwd: IntMap<i32, String>,
    /// Calls that made descriptors, seen so far (eBPF).
    pub(super) made: u64,
    /// Per process, its descriptors when its program started: (name, position), used
    /// when first met (eBPF).
    pub(super) early: IntMap<i32, IntMap<i32, (String, u64)>>,
    /// Filesystem types by directory, and the mount table they are found in.
    pub(super) fs_by_dir: HashMap<std::path::PathBuf, Option<String>>,
    pub(super) fs_types: crate::sys::machine::FsTypes,
    /// Ended processes are folded per program (attached: see `profile/fold.rs`), and
    /// the process each program's are folded into.
    pub(super) fold: bool,
    pub(super) folded_into: HashMap<String, i32>,
}

impl Profile {
    /// Distinct bytes of target `t` read so far, by every process.
    pub fn read_span(&self, t: usize) -> u64 {
        self.read
            .get(&t)
            .map_or(0, |r| r.iter().map(|(a, b)| b - a).sum())
    }

    /// Whether every process seen whose CPUs are known may run on one and the same CPU
    /// only (`taskset -c 0 prog`, a one-CPU cpuset): its pipes' ends then take turns.
    pub fn one_cpu(&self) -> bool {
        let mut known = self.processes.values().filter_map(|p| p.cpus.as_deref());
        let Some(first) = known.next() else {
            return false;
        };
        first.parse::<usize>().is_ok() && known.all(|c| c == first)
    }

    /// The path components that `pid`'s calls `of` a kind (stats, opens) on the target
    /// named `name` looked up, on average (None: no path read).
    pub fn components_of(&self, pid: i32, name: &str, of: impl Fn(Op) -> bool) -> Option<f64> {
        let t = *self.by_name.get(name)?;
        let (named, components) = self
            .ops
            .iter()
            .filter(|((p, at, op), _)| *p == pid && *at == t && of(*op))
            .fold((0, 0), |(n, c), (_, s)| (n + s.named, c + s.components));
        (named > 0).then(|| components as f64 / named as f64)
    }
}

/// Distinct targets kept one row each; past them, files get a row per directory
/// (50,000 files took 226 MB and a 100 MB JSON with a row each).
pub const TARGETS: usize = 4096;

/// The size bucket (a power of two, 0 for 0) of a request of `n` bytes.
pub fn bucket(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 << (63 - n.leading_zeros())
    }
}

/// Bytes of [start, start+len) already in `ranges` (sorted, disjoint), then adds it.
pub fn overlap_then_merge(ranges: &mut Vec<(u64, u64)>, start: u64, len: u64) -> u64 {
    let end = start + len;
    let seen: u64 = ranges
        .iter()
        .map(|&(a, b)| b.min(end).saturating_sub(a.max(start)))
        .sum();
    let (mut lo, mut hi) = (start, end);
    ranges.retain(|&(a, b)| {
        if b < lo || a > hi {
            true
        } else {
            lo = lo.min(a);
            hi = hi.max(b);
            false
        }
    });
    let at = ranges.partition_point(|&(a, _)| a < lo);
    ranges.insert(at, (lo, hi));
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn a_process_is_labelled_by_its_program_and_its_exec_chain() {
        assert_eq!(Process::label("dd", "dd", 0), "dd");
        assert_eq!(Process::label("sh", "cat", 1), "sh → cat");
        assert_eq!(Process::label("make", "cc", 4), "make → … → cc");
        // A pyenv shim: python3 → env's bash → pyenv → … → python3.
        assert_eq!(Process::label("python3", "python3", 6), "python3 (6 execs)");
    }

    #[test]
    pub(super) fn ranges_count_bytes_read_again() {
        let mut r = Vec::new();
        assert_eq!(overlap_then_merge(&mut r, 0, 100), 0);
        assert_eq!(overlap_then_merge(&mut r, 200, 100), 0);
        assert_eq!(overlap_then_merge(&mut r, 50, 200), 50 + 50);
        assert_eq!(r, vec![(0, 300)]);
        assert_eq!(overlap_then_merge(&mut r, 0, 300), 300);
        assert_eq!(overlap_then_merge(&mut r, 300, 10), 0);
        assert_eq!(r, vec![(0, 310)]);
    }

    #[test]
    pub(super) fn sizes_fall_in_power_of_two_buckets() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(4095), 2048);
        assert_eq!(bucket(4096), 4096);
        let mut s = OpStats::default();
        for (b, n) in [(512, 3), (4096, 1), (65536, 1)] {
            s.sizes.insert(b, n);
        }
        assert_eq!(s.typical_size(), Some(512));
    }

    /// 100-byte writes are typically 100 B, not their bucket's floor (64 B); a mix in
    /// the median bucket gives its mean request.
    #[test]
    fn the_typical_size_is_the_request_not_its_buckets_floor() {
        let mut s = OpStats::default();
        for _ in 0..10 {
            s.record_size(100);
        }
        s.record_size(4096);
        assert_eq!((s.sizes.get(&64), s.typical_size()), (Some(&10), Some(100)));
        let mut mix = OpStats::default();
        for b in [80, 100, 120] {
            mix.record_size(b);
        }
        assert_eq!(mix.typical_size(), Some(100));
    }
}
