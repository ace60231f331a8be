//! This machine's figures, as pricing takes them: the read, write and pipe probes'
//! throughput by request size, the socket probe's curves per family, the syscalls
//! probe's cost per call, the write probe's fsync cost and the copy probe's
//! copy_file_range throughput, each from the newest saved run on this host that has
//! it (`Figures::from_runs`), and the one lookup of a call's cost among them.

use crate::names::Named;
use crate::probes::syscalls::Case;
use crate::results::Run;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Throughput (bytes/s) by request size, sorted by size.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Curve(pub Vec<(u64, f64)>);

impl Curve {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Throughput at `size`: interpolated on a log2 size axis, the end value outside.
    pub fn rate(&self, size: u64) -> Option<f64> {
        let p = &self.0;
        let (first, last) = (p.first()?, p.last()?);
        let s = size.max(1);
        if s <= first.0 {
            return Some(first.1);
        }
        if s >= last.0 {
            return Some(last.1);
        }
        let i = p.partition_point(|&(x, _)| x < s);
        let (a, b) = (p[i - 1], p[i]);
        let t =
            ((s as f64).log2() - (a.0 as f64).log2()) / ((b.0 as f64).log2() - (a.0 as f64).log2());
        Some(a.1 + t * (b.1 - a.1))
    }

    /// The smallest size reaching 97% of the best throughput: bigger buys nothing.
    pub fn best_size(&self) -> Option<u64> {
        let max = self.0.iter().map(|p| p.1).fold(0.0, f64::max);
        self.0.iter().find(|p| p.1 >= 0.97 * max).map(|p| p.0)
    }
}

/// One socket family's curves.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SocketCurves {
    pub write_read: Curve,
    pub sendfile: Curve,
    /// write-read with larger buffers asked for on both sides: the SO_SNDBUF granted
    /// and its curve.
    pub large_buffer: Option<(u64, Curve)>,
}

/// The figures a profile is priced with, and the runs they came from.
/// A placement's pipe curves: throughput, switches per byte, and the curve at the
/// larger capacity measured with that capacity.
pub type PipeCurves = (Curve, Curve, Option<(u64, Curve)>);

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Figures {
    pub read: Curve,
    /// The read curve on a larger file measured in the same run, past the CPU's
    /// last-level cache where it is larger than it (`for_pricing`: 64 MiB), and that
    /// file's size: reads of a file that large are priced on it ([`Figures::read_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_large: Option<(u64, Curve)>,
    /// The file size `read` was measured on (0: not known, a digest before it).
    #[serde(default)]
    pub read_file: u64,
    pub write: Curve,
    pub pipe: Curve,
    /// The pipe curve at the larger capacity measured, and that capacity.
    pub pipe_large: Option<(u64, Curve)>,
    /// The context switches per byte the `pipe` curve's rows made (writer and reader),
    /// by chunk size: those a program's pipe makes beyond them are priced apart
    /// ([`Figures::switch_s`]).
    #[serde(default, skip_serializing_if = "Curve::is_empty")]
    pub pipe_switches: Curve,
    /// The curves of both ends on one CPU (`pipe`, `pipe_switches`, `pipe_large`),
    /// where `pipe` is another placement's: a program confined to one CPU is priced
    /// on them ([`Figures::on_one_cpu`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe_one_cpu: Option<PipeCurves>,
    /// The socket probe's curves per family (unix, tcp, unix-dgram, udp): write-read
    /// and sendfile, kernel buffers.
    pub sockets: BTreeMap<String, SocketCurves>,
    /// Nanoseconds per call of the syscalls probe's cases (null, pread, lseek_read, …).
    pub calls_ns: BTreeMap<String, f64>,
    /// Their 95% intervals (ns), where the run gave them.
    #[serde(skip)]
    pub calls_ci: BTreeMap<String, [f64; 2]>,
    /// One path component's lookup (ns), and the components of the path the syscalls
    /// probe's stat and opens looked up: a program's paths are priced at their own
    /// depth ([`Figures::at_depth`]). None: a run without `stat_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_lookup: Option<(f64, u64)>,
    /// What one context switch costs a pipeline taking turns on one CPU, in seconds
    /// (the syscalls probe's two round trips, [`crate::probes::syscalls::switch_ns`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_s: Option<f64>,
    /// Seconds one fsync adds after a small write (write probe: O_DSYNC at the smallest
    /// block against no durability).
    pub fsync_s: Option<f64>,
    /// When the run that measured `fsync_s` started (UTC, RFC 3339).
    pub fsync_measured_at: Option<String>,
    /// copy_file_range throughput (copy probe, warm source, no fsync).
    pub copy_file_range: Option<f64>,
    /// (probe, run id) of every source.
    pub sources: Vec<(String, i64)>,
}

impl Figures {
    /// Takes each probe's figures from the newest of `runs` (id, run) that has them,
    /// read through the probes' typed readers.
    pub fn from_runs(runs: &[(i64, Run)]) -> Figures {
        use crate::probes::{copy, read, socket, syscalls};
        let mut f = Figures::default();
        let newest = |probe: &str| {
            runs.iter()
                .rev()
                .find(|(_, r)| r.of_probe(probe).any(|m| m.is_ok()))
        };
        if let Some((id, r)) = newest("read") {
            let mut curves = read::curves(r, read::Method::Read).into_iter();
            if let Some((file, c)) = curves.next() {
                (f.read, f.read_file) = (Curve(c), file);
            }
            f.read_large = curves.next_back().map(|(file, c)| (file, Curve(c)));
            f.sources.push(("read".into(), *id));
        }
        if let Some((id, r)) = newest("write") {
            f.take_write(r);
            f.sources.push(("write".into(), *id));
        }
        if let Some((id, r)) = newest("pipe") {
            f.take_pipe(r);
            f.sources.push(("pipe".into(), *id));
        }
        if let Some((id, r)) = newest("socket") {
            for &family in socket::Family::ALL {
                let c = Curve(socket::curve(r, family, socket::Method::WriteRead));
                if !c.0.is_empty() {
                    let sendfile = Curve(socket::curve(r, family, socket::Method::Sendfile));
                    let large_buffer =
                        socket::buffer_curve(r, family).map(|(b, points)| (b, Curve(points)));
                    f.sockets.insert(
                        family.name().to_string(),
                        SocketCurves {
                            write_read: c,
                            sendfile,
                            large_buffer,
                        },
                    );
                }
            }
            f.sources.push(("socket".into(), *id));
        }
        if let Some((id, r)) = newest("syscalls") {
            for (case, ns, ci) in syscalls::per_call(r) {
                f.calls_ns.insert(case.name().to_string(), ns);
                f.calls_ci.insert(case.name().to_string(), ci);
            }
            f.path_lookup = syscalls::path_lookup(r);
            f.switch_s = syscalls::switch_ns(r).map(|n| n * 1e-9);
            f.sources.push(("syscalls".into(), *id));
        }
        if let Some((id, r)) = newest("copy") {
            f.copy_file_range = copy::best(
                r,
                copy::Method::CopyFileRange,
                copy::Cache::Warm,
                copy::Durability::None,
            );
            f.sources.push(("copy".into(), *id));
        }
        f
    }

    /// The write probe's figures in `r`: the page-cache curve, and what one fsync after
    /// a small write adds (a small durable write, O_DSYNC at the smallest block, less the
    /// same write to the page cache; fsync-per-pass rows would price the write-back of
    /// a whole file instead).
    fn take_write(&mut self, r: &Run) {
        use crate::probes::write;
        let by = |d| Curve(write::curve(r, write::Method::Write, d));
        self.write = by(write::Durability::None);
        let dsync = by(write::Durability::Dsync);
        if let Some(&(b, rate)) = dsync.0.first()
            && let Some(none) = self.write.rate(b)
        {
            let extra = b as f64 / rate - b as f64 / none;
            self.fsync_s = (extra > 0.0).then_some(extra);
            self.fsync_measured_at = self.fsync_s.map(|_| r.started_at.clone());
        }
    }

    /// The pipe probe's curves in `r`: unpinned ends where measured (trace's first
    /// figures), else both ends on one CPU (`ioprobe run` measures only that; with no
    /// curve a `cat f | prog` relay's pipe calls were priced at a null call each, 0.14
    /// of the saving its removal measured), else split; and at the largest capacity.
    fn take_pipe(&mut self, r: &Run) {
        use crate::probes::pipe::{self, Method, Placement};
        let method = Method::WriteRead;
        let Some((placement, points)) = [Placement::Any, Placement::Same, Placement::Split]
            .into_iter()
            .map(|p| (p, pipe::curve(r, method, p, None)))
            .find(|(_, c)| !c.is_empty())
        else {
            return;
        };
        self.pipe = Curve(points);
        self.pipe_switches = Curve(pipe::switch_curve(r, method, placement, None));
        if let Some(cap) = pipe::largest_capacity(r, method, placement) {
            self.pipe_large = Some((cap, Curve(pipe::curve(r, method, placement, Some(cap)))));
        }
        let same = Placement::Same;
        let one = Curve(pipe::curve(r, method, same, None));
        if placement == same || one.is_empty() {
            return;
        }
        let switches = Curve(pipe::switch_curve(r, method, same, None));
        let large = pipe::largest_capacity(r, method, same)
            .map(|cap| (cap, Curve(pipe::curve(r, method, same, Some(cap)))));
        self.pipe_one_cpu = Some((one, switches, large));
    }

    /// These figures for a program whose processes all ran on one CPU: pipes priced on
    /// the curve of both ends on one CPU, where measured. Across CPUs the two ends run
    /// at once and a large chunk's bytes move between caches; on one they take turns,
    /// each blocking: 1 KiB chunks at 1.58 GB/s here against 4.34 across CPUs, 128 KiB
    /// chunks at 4.39 against 1.51.
    pub fn on_one_cpu(&self) -> Figures {
        let mut f = self.clone();
        if let Some((c, s, large)) = f.pipe_one_cpu.take() {
            (f.pipe, f.pipe_switches, f.pipe_large) = (c, s, large);
        }
        f
    }

    /// The curves for a socket of `family` (as the trace found it), or of the nearest
    /// family measured (tcp, then unix): the curves and the family they are.
    pub fn socket(&self, family: Option<&str>) -> Option<(&SocketCurves, &str)> {
        family
            .into_iter()
            .chain(["tcp", "unix"])
            .chain(self.sockets.keys().map(String::as_str))
            .find_map(|k| self.sockets.get_key_value(k))
            .map(|(k, c)| (c, k.as_str()))
    }

    /// The read curve for a file of which `span` distinct bytes are read: the one
    /// measured on the file nearest in size (on a log scale), `read` where only it was.
    /// 20 passes over a 30 MiB file in 1 MiB reads cost 26.8–28.8 ms more than one
    /// mapping here, priced at 21 ms on the 10 MiB file's curve (which this CPU's 32 MiB
    /// L3 holds: 25–28 GB/s at 1 MiB, against 18–20 for 64 MiB and more).
    pub fn read_for(&self, span: u64) -> &Curve {
        match &self.read_large {
            Some((large, c)) if self.read_file > 0 && !c.0.is_empty() => {
                let log = |x: u64| (x.max(1) as f64).ln();
                let (to_small, to_large) = (
                    (log(span) - log(self.read_file)).abs(),
                    (log(*large) - log(span)).abs(),
                );
                if to_large < to_small { c } else { &self.read }
            }
            _ => &self.read,
        }
    }

    /// Whether the figures that price most calls are here (read curve and call costs).
    pub fn enough(&self) -> bool {
        !self.read.0.is_empty() && self.ns(Case::Pread).is_some()
    }

    /// Which vector state the system calls are priced in, and what the other costs
    /// here: the syscalls probe's `null` (clean) and `null_vector_dirty`.
    pub fn vector_note(&self) -> Option<String> {
        let clean = self.ns(Case::Null)?;
        let dirty = self.ns(Case::NullVectorDirty)?;
        let change = dirty / clean - 1.0;
        let ci = |c: Case| self.calls_ci.get(c.name()).copied();
        // Told apart only where the two intervals do not overlap.
        let apart = match (ci(Case::Null), ci(Case::NullVectorDirty)) {
            (Some([lo, hi]), Some([dlo, dhi])) => dlo > hi || dhi < lo,
            _ => true,
        };
        let differs = if change.abs() < 0.03 {
            "the same within 3% on this CPU".to_string()
        } else if !apart {
            format!(
                "{:+.0}%, not told apart in that run: their intervals overlap",
                change * 100.0
            )
        } else {
            format!("{:+.0}%", change * 100.0)
        };
        Some(format!(
            "system calls are priced with the CPU's upper vector state clean (a null call {}); a program whose libraries leave it dirty (AVX without vzeroupper) pays {} per call here ({differs})",
            crate::units::format_ns(clean),
            crate::units::format_ns(dirty),
        ))
    }

    pub(super) fn ns(&self, case: Case) -> Option<f64> {
        self.calls_ns.get(case.name()).copied()
    }

    /// What one data call costs here at the least, however few bytes it moves: the
    /// syscalls probe's small pread or pwrite (else its null call), in seconds.
    pub(super) fn floor_s(&self, reading: bool) -> Option<f64> {
        let case = if reading { Case::Pread } else { Case::Pwrite };
        self.ns(case)
            .or_else(|| self.ns(Case::Null))
            .map(|n| n * 1e-9)
    }

    /// `calls` data calls moving `bytes` in requests of `size` along `c`: the bytes at
    /// the curve's rate, but never less than each call's floor (a 1-byte write costs a
    /// system call, not a 4-KiB write's 1/4096th).
    pub(super) fn data_time(
        &self,
        c: &Curve,
        reading: bool,
        bytes: u64,
        calls: u64,
        size: u64,
    ) -> Option<f64> {
        let by_rate = bytes as f64 / c.rate(size)?;
        let floor = self.floor_s(reading).map_or(0.0, |f| f * calls as f64);
        Some(by_rate.max(floor))
    }

    /// The extra cost of one call over `base` (say lseek_read over pread), in seconds.
    pub(super) fn extra(&self, case: Case, base: Case) -> Option<f64> {
        Some(((self.ns(case)? - self.ns(base)?) * 1e-9).max(0.0))
    }

    /// What a call the probe made on its path costs (`s`, seconds) on a path of
    /// `components` instead (None: not known, the probe's path): each component fewer
    /// saves a lookup, never below one component's. The probe's paths are absolute in
    /// its scratch directory (5 components here), a program's often a name in its
    /// working directory: a stat of "f" took 633 ns here, of "/tmp/x/a/b/c/f" 950.
    pub(super) fn at_depth(&self, s: f64, components: Option<f64>) -> f64 {
        match (self.path_lookup, components) {
            (Some((per, k)), Some(c)) => s + (c.max(1.0) - k as f64) * per * 1e-9,
            _ => s,
        }
    }

    /// A stat of a path of `components` (0: of a descriptor, an fstat), in seconds.
    pub(super) fn stat_s(&self, components: Option<f64>) -> Option<f64> {
        if components == Some(0.0) {
            return self.ns(Case::Fstat).map(|n| n * 1e-9);
        }
        Some(self.at_depth(self.ns(Case::Stat)? * 1e-9, components))
    }

    /// An open of a path of `components`: what the probe's open + read + close costs
    /// more than its pread, in seconds.
    pub(super) fn open_s(&self, components: Option<f64>) -> Option<f64> {
        Some(self.at_depth(self.extra(Case::OpenReadClose, Case::Pread)?, components))
    }

    /// What an lseek costs in a program, in seconds: what lseek + read costs more than
    /// pread (the syscalls probe's pair, which is what pread saves), else lseek alone
    /// (runs without the pair). Beside a read an lseek costs more than alone: here
    /// 153 ns against 145 with 8 B reads, 179 against 145 with 4 KiB reads, and a C
    /// loop of lseek and 4 KiB reads saved 180–190 ns a call as pread.
    pub(super) fn lseek_s(&self) -> Option<f64> {
        self.extra(Case::LseekRead, Case::Pread)
            .or_else(|| self.ns(Case::Lseek).map(|n| n * 1e-9))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_interpolate_on_log_sizes_and_find_their_knee() {
        let c = Curve(vec![
            (1024, 1e9),
            (4096, 3e9),
            (65536, 10e9),
            (1 << 20, 10.1e9),
        ]);
        assert_eq!(c.rate(512), Some(1e9));
        assert_eq!(c.rate(1 << 30), Some(10.1e9));
        assert!((c.rate(2048).unwrap() - 2e9).abs() < 1.0);
        assert_eq!(c.best_size(), Some(65536));
        assert_eq!(Curve::default().rate(4096), None);
    }

    /// A run whose pipe rows have both ends on one CPU (`ioprobe run`'s) still gives
    /// the pipe curve: a relay's pipe calls are not priced as bare calls.
    #[test]
    fn a_pipe_measured_on_one_cpu_only_still_prices_pipes() {
        let mut r: Run =
            serde_json::from_str(include_str!("../../tests/fixtures/run-a.json")).unwrap();
        let template = r.measurements[0].clone();
        r.measurements = [(4096u64, 2e9), (65536, 5e9)]
            .into_iter()
            .map(|(chunk, rate)| {
                let mut m = template.clone();
                m.probe = "pipe".into();
                m.case = format!("write-read/same/default/{chunk}");
                m.median = rate;
                m.params = serde_json::json!({
                    "method": "write-read", "placement": "same", "chunk_size": chunk,
                    "read_size": chunk, "pipe_size_requested": "default", "total": 1 << 20,
                    "writer_cpus": [0], "reader_cpus": [0]
                })
                .as_object()
                .unwrap()
                .clone();
                m
            })
            .collect();
        let f = Figures::from_runs(&[(1, r)]);
        assert_eq!(f.pipe.0, [(4096, 2e9), (65536, 5e9)]);
    }

    /// A run with pipe rows of both placements: unpinned prices pipes, one CPU's where
    /// the program's processes were confined to one; each with the switches per byte
    /// its rows made (writer and reader, per GiB in their rusage).
    #[test]
    fn a_program_on_one_cpu_is_priced_on_the_one_cpu_pipe_curve() {
        let mut r: Run =
            serde_json::from_str(include_str!("../../tests/fixtures/run-a.json")).unwrap();
        let template = r.measurements[0].clone();
        let row = |placement: &str, chunk: u64, rate: f64, cs: f64| {
            let mut m = template.clone();
            m.probe = "pipe".into();
            m.case = format!("write-read/{placement}/default/{chunk}");
            m.median = rate;
            m.params = serde_json::json!({
                "method": "write-read", "placement": placement, "chunk_size": chunk,
                "read_size": chunk, "pipe_size_requested": "default", "total": 1 << 20,
                "writer_cpus": [0], "reader_cpus": [0]
            })
            .as_object()
            .unwrap()
            .clone();
            m.rusage.normalised.per = "GiB".into();
            (
                m.rusage.normalised.voluntary_cs,
                m.rusage.normalised.involuntary_cs,
            ) = (cs, cs);
            m
        };
        r.measurements = vec![
            row("any", 4096, 4e9, 3000.0),
            row("any", 65536, 8e9, 1000.0),
            row("same", 4096, 1.5e9, 30000.0),
            row("same", 65536, 4e9, 32000.0),
        ];
        let f = Figures::from_runs(&[(1, r)]);
        assert_eq!(f.pipe.0, [(4096, 4e9), (65536, 8e9)]);
        let gib = (1u64 << 30) as f64;
        assert_eq!(
            f.pipe_switches.0,
            [(4096, 6000.0 / gib), (65536, 2000.0 / gib)]
        );
        let one = f.on_one_cpu();
        assert_eq!(one.pipe.0, [(4096, 1.5e9), (65536, 4e9)]);
        assert_eq!(one.pipe_switches.0[1], (65536, 64000.0 / gib));
        assert!(one.pipe_one_cpu.is_none());
        // Without one CPU's rows, the same figures.
        assert_eq!(Figures::default().on_one_cpu().pipe.0, []);
    }

    /// Reads of a file are priced on the curve measured on the file nearest in size:
    /// 20 passes of a 30 MiB file on the 64 MiB one (past this CPU's 32 MiB L3), a 1
    /// MiB file on the 10 MiB one; the 10 MiB curve alone where no other was measured.
    #[test]
    fn a_file_is_read_on_the_curve_of_the_file_nearest_in_size() {
        let small = Curve(vec![(4096, 8e9), (1 << 20, 27e9)]);
        let large = Curve(vec![(4096, 7e9), (1 << 20, 19e9)]);
        let mut f = Figures {
            read: small.clone(),
            read_file: 10 << 20,
            ..Figures::default()
        };
        assert_eq!(f.read_for(30 << 20).rate(1 << 20), Some(27e9));
        f.read_large = Some((64 << 20, large));
        assert_eq!(f.read_for(30 << 20).rate(1 << 20), Some(19e9));
        assert_eq!(f.read_for(200 << 20).rate(1 << 20), Some(19e9));
        assert_eq!(f.read_for(1 << 20).rate(1 << 20), Some(27e9));
        assert_eq!(f.read_for(20 << 20).rate(1 << 20), Some(27e9));
        assert_eq!(f.read_for(0).rate(1 << 20), Some(27e9));
        // Figures kept before the file's size was (a digest): the one curve.
        f.read_file = 0;
        assert_eq!(f.read_for(200 << 20).rate(1 << 20), Some(27e9));
    }

    /// An lseek is priced at what lseek + read costs more than pread, where measured,
    /// not at an lseek alone: what the pair costs is what pread saves.
    #[test]
    fn an_lseek_is_priced_as_what_it_adds_to_a_read() {
        let mut f = Figures::default();
        assert_eq!(f.lseek_s(), None);
        f.calls_ns.insert("lseek".into(), 145.0);
        assert!((f.lseek_s().unwrap() - 145e-9).abs() < 1e-15);
        f.calls_ns.insert("pread".into(), 424.0);
        f.calls_ns.insert("lseek_read".into(), 603.0);
        assert!((f.lseek_s().unwrap() - 179e-9).abs() < 1e-15);
    }

    /// The report says which vector state calls are priced in, and what the other
    /// costs here, when the syscalls probe measured both.
    #[test]
    fn the_vector_state_priced_in_is_said() {
        let mut f = Figures::default();
        assert_eq!(f.vector_note(), None);
        f.calls_ns.insert("null".into(), 118.0);
        f.calls_ns.insert("null_vector_dirty".into(), 162.0);
        let n = f.vector_note().unwrap();
        assert!(
            n.contains("clean (a null call 118 ns)")
                && n.contains("pays 162 ns per call here (+37%)"),
            "{n}"
        );
        f.calls_ns.insert("null_vector_dirty".into(), 119.0);
        assert!(
            f.vector_note()
                .unwrap()
                .contains("the same within 3% on this CPU")
        );
        // A noisy run: +19%, but the intervals overlap.
        f.calls_ns.insert("null_vector_dirty".into(), 141.0);
        f.calls_ci.insert("null".into(), [104.0, 106.0]);
        f.calls_ci
            .insert("null_vector_dirty".into(), [105.0, 181.0]);
        let n = f.vector_note().unwrap();
        assert!(
            n.contains("(+19%, not told apart in that run: their intervals overlap)"),
            "{n}"
        );
    }
}
