//! Seed 004: the bare cost of I/O system calls, made honest.
//!
//! Every case works on one small file in the scratch directory, opened O_RDWR as the
//! seed did, at offset 0, `io_size` bytes per call. Each call's result is checked
//! (byte counts included). The mmap cases use a shared mapping made once before timing
//! and touch it with volatile stores or loads on every iteration, because the seed's
//! memcpy loop compiled to one register move.

mod present;
mod switch;
mod workload;

use super::{Context, Plan, Probe, ProbeKind, Scale};
use crate::advice::Recommendation;
use crate::error::usage;
use crate::names::{Named, named_enum};
use crate::present::{Grid, Plot, Style};
use crate::results::{Measurement, Metric, Run, Unit, measurement::to_map};
use crate::sys::calls;
use crate::sys::machine::Environment;
use crate::sys::mapping::Mapping;
use crate::sys::scratch::Scratch;
use crate::sys::vector;
use anyhow::Result;
use rustix::fd::OwnedFd;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use workload::CaseRun;

named_enum! {
    /// The cases, in table order. Their names are a contract (`--case`, JSON).
    pub enum Case as "case" {
        Null = "null",
        NullVectorDirty = "null_vector_dirty",
        OpenClose = "open_close",
        OpenWriteClose = "open_write_close",
        OpenReadClose = "open_read_close",
        Lseek = "lseek",
        LseekWrite = "lseek_write",
        LseekRead = "lseek_read",
        Pwrite = "pwrite",
        Pread = "pread",
        MmapStore = "mmap_store",
        MmapLoad = "mmap_load",
        Fstat = "fstat",
        Stat = "stat",
        StatName = "stat_name",
        PipeRoundTrip = "pipe_round_trip",
        SwitchRoundTrip = "switch_round_trip",
    }
}

impl Case {
    /// System calls one operation makes (a mapping's loads and stores make none).
    pub fn calls(self) -> f64 {
        match self {
            Case::PipeRoundTrip | Case::SwitchRoundTrip => 4.0,
            Case::OpenWriteClose | Case::OpenReadClose => 3.0,
            Case::OpenClose | Case::LseekWrite | Case::LseekRead => 2.0,
            Case::MmapStore | Case::MmapLoad => 0.0,
            _ => 1.0,
        }
    }

    /// What one operation does, stated plainly.
    fn note(self, io: usize) -> String {
        match self {
            Case::Null => "getppid(2) raw syscall: the floor of any syscall".into(),
            Case::NullVectorDirty => "getppid(2) with the CPU's upper vector state dirty (AVX register halves left in use, as by a library without vzeroupper): what such a program pays per call".into(),
            Case::OpenClose => "open(O_RDWR) + close, result of each checked".into(),
            Case::OpenWriteClose => format!("open(O_RDWR) + write {io} B at offset 0 + close"),
            Case::OpenReadClose => format!("open(O_RDWR) + read {io} B at offset 0 + close"),
            Case::Lseek => {
                "lseek(0) alone on a reused descriptor: what an lseek adds to a read or write"
                    .into()
            }
            Case::LseekWrite => format!("lseek(0) + write {io} B on a reused descriptor"),
            Case::LseekRead => format!("lseek(0) + read {io} B on a reused descriptor"),
            Case::Pwrite => format!("pwrite {io} B at offset 0"),
            Case::Pread => format!("pread {io} B at offset 0"),
            Case::MmapStore => format!(
                "{io} B of volatile stores into a shared file mapping made once and pre-faulted: no syscall, a memory write"
            ),
            Case::MmapLoad => format!(
                "{io} B of volatile loads from a shared file mapping made once and pre-faulted: no syscall, a memory read"
            ),
            Case::Fstat => "fstat on a reused descriptor".into(),
            Case::Stat => "stat on the file's path (path lookup included)".into(),
            Case::StatName => "stat on the file's name in its open directory (fstatat): one path component looked up; against stat, what each further component costs".into(),
            Case::PipeRoundTrip => "1 B written into a pipe and read back, then the same on a second pipe, by this process alone: the four calls of switch_round_trip, nothing woken, nothing blocking".into(),
            Case::SwitchRoundTrip => "1 B sent over a pipe to a process on the same CPU, which sends it back over another: two context switches (each a wakeup and a block) and four calls; less pipe_round_trip, halved, what one switch costs a pipeline taking turns on a CPU".into(),
        }
    }

    /// Path components one operation looks up, for a file at `path` (None: the case
    /// names no path).
    fn path_components(self, path: &[u8]) -> Option<u64> {
        match self {
            Case::OpenClose | Case::OpenWriteClose | Case::OpenReadClose | Case::Stat => {
                Some(path_components(path))
            }
            Case::StatName => Some(1),
            _ => None,
        }
    }
}

/// The components the kernel looks up one by one to resolve `path`: its names between
/// slashes, `.` and `..` included ("/tmp/./f" 3, "f" 1). Each costs a lookup (about
/// 60 ns here on a cached dentry), so a program's `stat("f")` costs less than the
/// probe's stat of its scratch file's absolute path.
pub fn path_components(path: &[u8]) -> u64 {
    path.split(|&b| b == b'/').filter(|c| !c.is_empty()).count() as u64
}

/// Options of `ioprobe syscalls`.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long these options may take when no `--time-limit` is given: the promised
    /// wait. Rows get their minimum samples whatever the limit; it bounds the extra
    /// sampling of wide rows. None: no limit.
    pub time_limit: Option<std::time::Duration>,
    pub cases: Vec<Case>,
    pub io_size: u64,
}

/// How long the defaults at `scale` may take with no `--time-limit`.
fn time_limit(scale: Scale) -> Option<std::time::Duration> {
    // Its calibrated cases stop at their CI target or budget on their own; only
    // `ioprobe run`, which promises an answer in half a minute, bounds them.
        (scale == Scale::Run).then(|| std::time::Duration::from_secs(4))
}

impl Options {
    /// The defaults: every case, 8-byte calls, at every scale.
    pub fn for_scale(scale: Scale) -> Options {
        Options {
            time_limit: time_limit(scale),
            cases: Case::ALL.to_vec(),
            io_size: 8,
        }
    }
}

/// The params of a syscalls row. Keys are a contract (JSON `params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Bytes per read, write, store or load.
    pub io_size: u64,
    pub file_size: u64,
    /// The CPU's upper vector state every sample's loop ran in, as the CPU reported it
    /// after each (XINUSE): `clean`, `dirty`, or `mixed`; absent where the CPU cannot
    /// say. Every case runs clean but `null_vector_dirty`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_state: Option<String>,
    /// Path components each call looked up, in the cases that name the file by a
    /// path (open_*, stat: its absolute path; stat_name: 1); absent in the others and
    /// in runs before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_components: Option<u64>,
}

impl super::RowParams for Params {
    fn check(&self) -> std::result::Result<(), String> {
        use super::size_param;
        size_param("io_size", self.io_size, 0)?;
        size_param("file_size", self.file_size, 0)
    }
}

/// What one call of each case measured in `run` costs: (case, ns per call, its 95%
/// interval), in run order.
pub fn per_call(run: &Run) -> Vec<(Case, f64, [f64; 2])> {
    super::measured_rows::<Params>(run, Kind.name())
        .into_iter()
        .filter_map(|(m, _)| {
            let name = m.case.rsplit('/').next().unwrap_or(&m.case);
            Some((Case::parse(name).ok()?, m.median, m.ci95))
        })
        .collect()
}

/// What one path component's lookup costs here (ns), and the components of the path
/// `stat` and the open cases looked up: `stat` against `stat_name` (the same file by
/// its name in its open directory), per component beyond the one. None where the run
/// has not both.
pub fn path_lookup(run: &Run) -> Option<(f64, u64)> {
    let rows = super::measured_rows::<Params>(run, Kind.name());
    let at = |case: Case| {
        rows.iter().find_map(|(m, p)| {
            let name = m.case.rsplit('/').next().unwrap_or(&m.case);
            (name == case.name()).then_some((m.median, p.path_components?))
        })
    };
    let ((full, k), (one, 1)) = (at(Case::Stat)?, at(Case::StatName)?) else {
        return None;
    };
    (k > 1).then(|| (((full - one) / (k - 1) as f64).max(0.0), k))
}

/// What one context switch costs a pipeline whose processes take turns on one CPU
/// (ns): `switch_round_trip` less `pipe_round_trip` (the same calls, no switch),
/// halved (a round trip switches twice). None where the run has not both.
pub fn switch_ns(run: &Run) -> Option<f64> {
    let rows = per_call(run);
    let at = |case: Case| rows.iter().find(|r| r.0 == case).map(|r| r.1);
    Some(((at(Case::SwitchRoundTrip)? - at(Case::PipeRoundTrip)?) / 2.0).max(0.0))
}

/// The figures a syscalls row derives from its median.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Derived {
    pub ops_per_s: Option<f64>,
    /// × the null syscall (absent when `null` was not measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x_null: Option<f64>,
    pub voluntary_cs_per_mop: Option<f64>,
    pub involuntary_cs_per_mop: Option<f64>,
}

/// The syscalls probe, independent of options.
pub struct Kind;

impl ProbeKind for Kind {
    fn check_typed(&self, m: &Measurement) -> std::result::Result<(), String> {
        super::typed_params::<Params>(m).map(|_| ())
    }
    fn name(&self) -> &'static str {
        "syscalls"
    }

    fn observed_params(&self) -> &'static [&'static str] {
        &[]
    }

    fn unadvised_cases(&self) -> &'static [&'static str] {
        // Trace reads them (its note on the vector state; a path component's cost,
        // against stat; a context switch's, the two round trips); no recommendation
        // does.
        &[
            "null_vector_dirty",
            "stat_name",
            "pipe_round_trip",
            "switch_round_trip",
        ]
    }

    fn grids(&self, rows: &[&Measurement], _env: &Environment, st: &Style) -> Vec<Grid> {
        vec![present::grid(rows, st)]
    }

    fn plots(&self, rows: &[&Measurement], _env: &Environment) -> Result<Vec<Plot>> {
        present::plots(rows)
    }

    fn recommend(&self, rows: &[&Measurement], _env: &Environment) -> Vec<Recommendation> {
        present::recommend(rows)
    }

    fn advice(&self, rows: &[&Measurement], _env: &Environment) -> Vec<String> {
        present::advice(rows)
    }

    fn for_scale(&self, scale: Scale) -> Box<dyn Probe> {
        Box::new(Syscalls::new(Options::for_scale(scale)))
    }

}

/// Largest `--io-size`: a per-call cost probe, not a bandwidth test.
pub const MAX_IO_SIZE: u64 = 64 << 20;

/// The syscalls probe.
pub struct Syscalls {
    opts: Options,
}

impl Syscalls {
    pub fn new(opts: Options) -> Self {
        Syscalls { opts }
    }

    /// The cases as rows: each with its params (the components of `path`, the file's,
    /// where it names one), or unsupported here with the reason.
    fn plan(&self, io: u64, path: &[u8]) -> Plan<Params, Case> {
        let mut plan = Plan::new(Unit::NsPerOp);
        let pinning = crate::sys::affinity::pinning();
        for &case in &self.opts.cases {
            let params = Params {
                io_size: io,
                file_size: io,
                vector_state: None,
                path_components: case.path_components(path),
            };
            if case == Case::NullVectorDirty && !vector::can_set() {
                let why = "no AVX here: there is no upper vector state to leave dirty";
                plan.unsupported(case.name().to_string(), params, why.into());
            } else if let (Case::SwitchRoundTrip, Err(e)) = (case, &pinning) {
                let why = format!("its two processes must share one CPU, and threads cannot be pinned here ({e})");
                plan.unsupported(case.name().to_string(), params, why);
            } else {
                plan.ready(case.name().to_string(), params, case);
            }
        }
        plan
    }
}

impl Probe for Syscalls {
    fn time_limit(&self) -> Option<std::time::Duration> {
        self.opts.time_limit
    }

    fn kind(&self) -> &'static dyn ProbeKind {
        &Kind
    }

    fn case_names(&self) -> Vec<String> {
        self.opts
            .cases
            .iter()
            .map(|c| c.name().to_string())
            .collect()
    }

    fn validate(&self, env: &Environment, scratch: &Scratch) -> Result<()> {
        let io = self.opts.io_size;
        if io == 0 || io > MAX_IO_SIZE {
            return usage(format!(
                "--io-size must be between 1 B and {}",
                crate::units::format_size(MAX_IO_SIZE)
            ));
        }
        if io > env.memory_available_bytes / 4 {
            return usage("--io-size is larger than a quarter of available memory");
        }
        scratch.ensure_space(io, "the syscalls probe's file")
    }

    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
        let io = self.opts.io_size as usize;
        let stop = crate::interrupt::requested;
        let (path, fd): (PathBuf, OwnedFd) =
            ctx.scratch.create_file("syscalls.dat", io as u64, &stop)?;
        let cpath = calls::c_path(&path)?;
        let dir = calls::open_dir(&calls::c_path(path.parent().unwrap_or(&path))?)?;
        let file_name = calls::c_path(path.file_name().map_or(path.as_ref(), std::path::Path::new))?;
        let plan = self.plan(io as u64, cpath.as_bytes());
        let name = Kind.name();
        let mut out = ctx.run_plan_each(name, plan, |_, params, case| {
            let map = match case {
                Case::MmapStore | Case::MmapLoad => {
                    let mut m = Mapping::map_file(&fd, io, true)?;
                    m.store_loop(io, 1); // fault the pages in before timing
                    Some(m)
                }
                _ => None,
            };
            let round = match case {
                Case::PipeRoundTrip => Some(switch::RoundTrip::alone()?),
                Case::SwitchRoundTrip => Some(switch::RoundTrip::with_partner()?),
                _ => None,
            };
            let mut w = CaseRun {
                case,
                path: &cpath,
                dir: &dir,
                name: &file_name,
                fd: &fd,
                buf: crate::sys::scratch::pattern_chunk(io),
                map,
                round,
                states: [0, 0],
            };
            let sampled = ctx
                .measure(name, case.name(), &mut w)
                .map_err(|e| e.context(format!("syscalls case {}", case.name())))?;
            if let Some(r) = w.round.take() {
                r.finish()?;
            }
            let params = Params {
                vector_state: w.vector_state(),
                ..params
            };
            Measurement::from_sampled(
                name,
                case.name(),
                params,
                Metric::PerOp { ops_per_iter: 1.0 },
                &sampled,
                &ctx.overhead,
                case.note(io),
            )
        })?;
        add_derived(&mut out);
        // The file goes now, not with the scratch directory: `run` measures some of
        // its rows again, and creates it again then.
        drop(fd);
        std::fs::remove_file(&path)
            .map_err(|e| anyhow::anyhow!("removing {}: {e}", path.display()))?;
        Ok(out)
    }
}

/// ops/s, × null syscall and context switches per million operations.
fn add_derived(rows: &mut [Measurement]) {
    let null = rows.iter().find(|m| m.case == "null").map(|m| m.median);
    for m in rows.iter_mut() {
        let per = &m.rusage.normalised;
        let d = Derived {
            ops_per_s: Some(1e9 / m.median),
            x_null: null.map(|n| m.median / n),
            voluntary_cs_per_mop: Some(per.voluntary_cs * 1e6),
            involuntary_cs_per_mop: Some(per.involuntary_cs * 1e6),
        };
        m.derived = to_map(&d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &c in Case::ALL {
            assert_eq!(Case::parse(c.name()), Ok(c));
        }
        let e = Case::parse("nope").unwrap_err();
        assert!(e.contains("open_close") && e.contains("nope"));
    }

    #[test]
    fn a_paths_components_are_its_names_between_slashes() {
        for (path, n) in [
            ("f", 1),
            ("/tmp/./f", 3),
            ("a//b/", 2),
            ("../f", 2),
            ("/", 0),
            ("", 0),
        ] {
            assert_eq!(path_components(path.as_bytes()), n, "{path}");
        }
    }
}
