//! Seeds 001 and 003: every way to copy a file, compared honestly.
//!
//! For each file size a position-dependent source is created in the scratch directory,
//! one per cache state: the warm rows' source is never evicted, so it stays as written
//! whatever rows run beside it.
//! Every method variant first copies a small probe file: a method this kernel or
//! filesystem refuses (EOPNOTSUPP, EXDEV, EINVAL, ENOSYS, ...) becomes an
//! `unsupported` row naming the call and errno, never another method under its name.
//! Then all rows (variant × cache state × durability) are sampled round-robin. Before
//! each sample the destination is removed and the source put in its page-cache state,
//! verified with mincore; the copy (with fsync in `fsync` mode) is timed; after it the
//! destination is fingerprinted (first passes, or every pass with `--verify always`)
//! and removed. A mismatch marks the row `failed` and the command exits non-zero.

pub mod methods;
mod present;
mod row;
use row::*;
pub mod source;
pub mod tools;
pub mod variant;

use super::{Context, Leave, Plan, Probe, ProbeKind, Scale};
use crate::advice::Recommendation;
use crate::error::usage;
use crate::harness::{External, Workload};
use crate::interrupt;
use crate::names::{Named, named_enum};
use crate::present::{Grid, Plot, Style};
use crate::results::{Measurement, Metric, Run, Status, Unit, measurement::to_map};
use crate::sys::calls::{self, SysError};
use crate::sys::copyfile;
use crate::sys::machine::Environment;
use crate::sys::rusage::RawRusage;
use crate::sys::scratch::Scratch;
use crate::units::{format_size, size_label};
use anyhow::Result;
use methods::Prepared;
use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};
pub use source::Cache;
use source::Source;
use std::ffi::{CStr, CString};
pub use variant::{Method, Variant};

named_enum! {
    /// Whether the copy must be on stable storage when the clock stops. Names are a
    /// contract (`--durability`, JSON).
    pub enum Durability as "durability" {
        None = "none",
        Fsync = "fsync",
    }
}

impl Durability {
    /// Whether the copy is on stable storage when the clock stops.
    pub fn durable(self) -> bool {
        self == Durability::Fsync
    }
}

named_enum! {
    /// When copies are checked against the source. Names are a contract (`--verify`).
    pub enum Verify as "verification" {
        /// After the warm-up and the first sample.
        First = "first",
        /// After every pass.
        Always = "always",
    }
}

/// Options of `ioprobe copy`.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long these options may take when no `--time-limit` is given: the promised
    /// wait. Rows get their minimum samples whatever the limit; it bounds the extra
    /// sampling of wide rows. None: no limit.
    pub time_limit: Option<std::time::Duration>,
    pub file_sizes: Vec<u64>,
    /// In-process methods and, with `--system-tools`, the tools.
    pub methods: Vec<Method>,
    /// read-write buffer sweep.
    pub buffer_sizes: Vec<u64>,
    pub caches: Vec<Cache>,
    pub durability: Vec<Durability>,
    pub verify: Verify,
    pub drop_caches: bool,
    pub sparse: bool,
    /// One variant per method, read-write's buffer sweep aside (the defaults); false:
    /// every variant (`--thorough`, or when `--method` names the methods).
    pub lean: bool,
    /// File sizes above this get only the [`HEADLINE`] variants, unless
    /// methods were named: one pass of 1 GiB with fsync takes seconds here.
    pub sweep_to: u64,
    /// Test hook (IOPROBE_FAULT=copy-corrupt): flip a destination byte before verifying.
    pub corrupt: bool,
}

/// How long the defaults at `scale` may take with no `--time-limit`.
fn time_limit(scale: Scale) -> Option<std::time::Duration> {
        let s = std::time::Duration::from_secs;
        match scale {
            Scale::Quick => Some(s(25)),
            Scale::Default => Some(s(150)),
            Scale::Run => Some(s(20)),
            Scale::Thorough => None,
        }
}

impl Options {
    /// The defaults: 64 MiB and 1 GiB files, warm and cold sources, both durabilities.
    /// At 64 MiB every in-process method once (mmap and io_uring without their
    /// options), read-write with seed 003's buffers plus today's cp default (1K, 64K,
    /// 128K, 256K, 1M, 2M, 100M); at 1 GiB the [`HEADLINE`] variants: read-write/1MiB,
    /// copy_file_range and mmap-write. Quick: a 32 MiB file, read-write at 128 KiB and 1 MiB.
    /// Thorough: every variant at both sizes (seed 001's ±madvise, whole or chunked
    /// mmap, splice's pipe sizes, io_uring's depths). `ioprobe run`: a warm 64 MiB file,
    /// read-write/1MiB.
    pub fn for_scale(scale: Scale) -> Options {
        let mut o = Options {
            time_limit: time_limit(scale),
            file_sizes: match scale {
                Scale::Quick => vec![32 << 20],
                Scale::Run => vec![64 << 20],
                Scale::Default | Scale::Thorough => vec![64 << 20, 1 << 30],
            },
            methods: Method::IN_PROCESS.to_vec(),
            buffer_sizes: vec![
                1 << 10,
                64 << 10,
                128 << 10,
                256 << 10,
                1 << 20,
                2 << 20,
                100 << 20,
            ],
            caches: vec![Cache::Warm, Cache::Cold],
            durability: vec![Durability::None, Durability::Fsync],
            verify: Verify::First,
            drop_caches: false,
            sparse: false,
            lean: scale != Scale::Thorough,
            sweep_to: if scale == Scale::Thorough {
                u64::MAX
            } else {
                64 << 20
            },
            corrupt: crate::fault::enabled("copy-corrupt"),
        };
        match scale {
            Scale::Quick => o.buffer_sizes = vec![128 << 10, 1 << 20],
            Scale::Run => {
                o.buffer_sizes = vec![1 << 20];
                o.caches = vec![Cache::Warm];
            }
            _ => {}
        }
        o
    }

    /// The variants measured at file size `size`: every selected one up to
    /// `sweep_to`, the [`HEADLINE`] ones above it.
    pub fn variants_at(&self, size: u64) -> Vec<Variant> {
        let all = self.variants();
        if size <= self.sweep_to {
            return all;
        }
        HEADLINE
            .iter()
            .map(|&(m, buffer)| Variant {
                buffer,
                whole: m == Method::MmapWrite,
                ..Variant::new(m)
            })
            .filter(|h| self.methods.contains(&h.method))
            .collect()
    }

    /// Every variant of the selected methods.
    pub fn variants(&self) -> Vec<Variant> {
        let mut out = Vec::new();
        for &m in &self.methods {
            let base = Variant::new(m);
            let with = |f: &dyn Fn(&mut Variant)| {
                let mut v = base.clone();
                f(&mut v);
                v
            };
            let mut vs: Vec<Variant> = match m {
                Method::ReadWrite => self
                    .buffer_sizes
                    .iter()
                    .map(|&b| with(&|v| v.buffer = Some(b)))
                    .collect(),
                Method::ReadWriteFadvise | Method::PreadPwrite | Method::Direct | Method::Dd => {
                    vec![with(&|v| v.buffer = Some(1 << 20))]
                }
                Method::MmapWrite => [(true, false), (false, false), (true, true), (false, true)]
                    .iter()
                    .map(|&(whole, adv)| {
                        with(&|v| {
                            v.whole = whole;
                            v.madvise = adv;
                            v.buffer = if whole { None } else { Some(1 << 20) };
                        })
                    })
                    .collect(),
                Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap => {
                    vec![with(&|v| v.madvise = false), with(&|v| v.madvise = true)]
                }
                Method::Splice => vec![
                    with(&|v| v.pipe_size = None),
                    with(&|v| v.pipe_size = Some(1 << 20)),
                ],
                Method::IoUring => [4u32, 1, 16]
                    .iter()
                    .flat_map(|&d| [false, true].map(|r| (d, r)))
                    .map(|(d, r)| {
                        with(&|v| {
                            v.depth = d;
                            v.registered = r;
                            v.buffer = Some(1 << 20);
                        })
                    })
                    .collect(),
                _ => vec![base.clone()],
            };
            if self.lean && m != Method::ReadWrite {
                vs.truncate(1);
            }
            out.extend(vs);
        }
        out
    }
}

/// What large files are copied with by default: the two paths GNU cp takes (its
/// user-space loop, at the buffer the sweep favours here, and its offload), and seed
/// 001's mmap→write (the whole source mapped, one write).
pub const HEADLINE: [(Method, Option<u64>); 3] = [
    (Method::ReadWrite, Some(1 << 20)),
    (Method::CopyFileRange, None),
    (Method::MmapWrite, None),
];

/// A copy row's case name: variant/cache/durability/file size.
fn case_name(v: &Variant, cache: Cache, dur: Durability, size: u64) -> String {
    format!(
        "{}/{}/{}/{}",
        v.label(),
        cache.name(),
        dur.name(),
        size_label(size)
    )
}

/// The params of a copy row. Keys are a contract (JSON `params`); the variant's own
/// parameters appear only for the methods that have them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub method: Method,
    /// The variant's label, e.g. `read-write/1MiB`.
    pub variant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub madvise: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<bool>,
    /// splice: `default` or the requested bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe_size_requested: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_buffers: Option<bool>,
    pub file_size: u64,
    pub sparse: bool,
    pub cache: Cache,
    /// How the source was put in its cache state.
    pub eviction: String,
    pub durability: Durability,
    /// What the destination's data had reached, in words (for footnotes only; tables
    /// read `durability`).
    pub durability_state: String,
    /// What mincore saw before the samples (observed; absent on unsupported rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_observed: Option<String>,
}

impl Params {
    /// The work the variant does by construction, per MiB moved: system calls (a page
    /// fault counted as one kernel entry, with the kernel's 64 KiB fault-around for
    /// reads and one fault per written page; an io_uring read or write as one) and
    /// copies of the data through the CPU. A tie between methods goes to less work
    /// (see [`crate::advice::Work`]); the system tools, whose calls this row does not
    /// see, come last.
    pub fn work(&self) -> crate::advice::Work {
        const MIB: f64 = (1u64 << 20) as f64;
        let per = |bytes: Option<u64>| MIB / bytes.unwrap_or(1 << 20).max(1) as f64;
        let file = self.file_size.max(1) as f64 / MIB;
        let (calls, copies) = match self.method {
            Method::Reflink => (1.0 / file, 0.0),
            Method::CopyFileRange | Method::Sendfile => {
                (per(Some(methods::IN_KERNEL_STEP)).max(1.0 / file), 1.0)
            }
            Method::Splice => {
                let pipe = self
                    .pipe_size_requested
                    .as_deref()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(64 << 10);
                (2.0 * per(Some(pipe)), 1.0)
            }
            Method::ReadWrite | Method::PreadPwrite => (2.0 * per(self.buffer_size), 2.0),
            Method::ReadWriteFadvise => (2.0 * per(self.buffer_size) + 1.0 / file, 2.0),
            // A submitted read or write is the kernel's work of one call, batched or not.
            Method::IoUring => (2.0 * per(self.buffer_size), 2.0),
            Method::MmapWrite => (per(Some(64 << 10)) + per(self.buffer_size), 1.0),
            Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap => (per(Some(64 << 10)) + 256.0, 1.0),
            Method::Direct => (2.0 * per(self.buffer_size), 0.0),
            Method::Cp | Method::Cat | Method::Dd => (f64::INFINITY, f64::INFINITY),
        };
        crate::advice::Work::calls(calls, copies, "MiB")
    }
}

impl super::RowParams for Params {
    fn check(&self) -> std::result::Result<(), String> {
        use super::size_param;
        if let Some(b) = self.buffer_size {
            size_param("buffer_size", b, 1)?;
        }
        size_param("file_size", self.file_size, 0)
    }
}

/// The best throughput (bytes/s) `run` measured for `method` with the source `cache`d
/// and the copy's `durability`, over every size and variant.
pub fn best(run: &Run, method: Method, cache: Cache, durability: Durability) -> Option<f64> {
    super::measured_rows::<Params>(run, Kind.name())
        .into_iter()
        .filter(|(_, p)| p.method == method && p.cache == cache && p.durability == durability)
        .map(|(m, _)| m.median)
        .reduce(f64::max)
}

/// The figures a copy row derives (per copy). Keys are a contract.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Derived {
    pub median_s: Option<f64>,
    pub best_s: Option<f64>,
    pub user_s_per_copy: Option<f64>,
    pub sys_s_per_copy: Option<f64>,
    pub voluntary_cs_per_copy: Option<f64>,
    pub involuntary_cs_per_copy: Option<f64>,
    pub minor_faults_per_copy: Option<f64>,
    pub blocks_in_per_copy: Option<f64>,
    pub blocks_out_per_copy: Option<f64>,
    pub max_resident_fraction: Option<f64>,
    pub verified_passes: Option<f64>,
    /// First samples left out until the rate held steady (see `Workload::settles`).
    pub warmup_samples: Option<f64>,
    /// 1 when a steady window was found, 0 when the search gave up.
    pub warmup_settled: Option<f64>,
}

/// The copy probe, independent of options.
pub struct Kind;

impl ProbeKind for Kind {
    fn check_typed(&self, m: &Measurement) -> std::result::Result<(), String> {
        super::typed_params::<Params>(m).map(|_| ())
    }
    fn name(&self) -> &'static str {
        "copy"
    }

    fn observed_params(&self) -> &'static [&'static str] {
        &["cache_observed"]
    }

    fn grids(&self, rows: &[&Measurement], env: &Environment, st: &Style) -> Vec<Grid> {
        present::grids(rows, env, st)
    }

    fn plots(&self, rows: &[&Measurement], _env: &Environment) -> Result<Vec<Plot>> {
        present::plots(rows)
    }

    fn recommend(&self, rows: &[&Measurement], env: &Environment) -> Vec<Recommendation> {
        present::recommend(rows, env)
    }

    fn advice(&self, rows: &[&Measurement], _env: &Environment) -> Vec<String> {
        present::advice(rows)
    }

    fn for_scale(&self, scale: Scale) -> Box<dyn Probe> {
        Box::new(CopyProbe::new(Options::for_scale(scale)))
    }

}

/// The copy probe.
pub struct CopyProbe {
    opts: Options,
}

impl CopyProbe {
    pub fn new(opts: Options) -> Self {
        CopyProbe { opts }
    }
}

impl Probe for CopyProbe {
    fn time_limit(&self) -> Option<std::time::Duration> {
        self.opts.time_limit
    }

    fn kind(&self) -> &'static dyn ProbeKind {
        &Kind
    }

    fn case_names(&self) -> Vec<String> {
        let o = &self.opts;
        let mut out = Vec::new();
        for &size in &o.file_sizes {
            let variants = o.variants_at(size);
            for &cache in &o.caches {
                for &dur in &o.durability {
                    out.extend(variants.iter().map(|v| case_name(v, cache, dur, size)));
                }
            }
        }
        out
    }

    fn pass_bytes(&self) -> Vec<Option<(u64, u64)>> {
        let o = &self.opts;
        let mut out = Vec::new();
        for &size in &o.file_sizes {
            let variants = o.variants_at(size).len();
            for &cache in &o.caches {
                let (lo, hi) = copies_range(size, cache).unwrap_or((1, 1));
                let pass = Some((lo * size, hi * size));
                out.extend(std::iter::repeat_n(pass, variants * o.durability.len()));
            }
        }
        out
    }

    fn validate(&self, env: &Environment, scratch: &Scratch) -> Result<()> {
        let o = &self.opts;
        if o.file_sizes.is_empty()
            || o.methods.is_empty()
            || o.caches.is_empty()
            || o.durability.is_empty()
            || o.buffer_sizes.is_empty()
        {
            return usage(
                "nothing to measure: an axis (--file-size, --method, --cache, --durability, --buffers) is empty",
            );
        }
        for &b in &o.buffer_sizes {
            if b == 0 || b > 1 << 30 {
                return usage(format!("buffer size {b} B is out of range: 1 B … 1 GiB"));
            }
        }
        let mem = env.memory_bytes;
        let free = scratch.free_space()?;
        // A source per cache state and a copy.
        let files = o.caches.len() as u64 + 1;
        for &s in &o.file_sizes {
            if mem > 0 && s > mem / 4 {
                return usage(format!(
                    "--file-size {} is more than a quarter of memory ({})",
                    format_size(s),
                    format_size(mem)
                ));
            }
            if s > free / files {
                return usage(format!(
                    "--file-size {} is more than 1/{files} of the free space in {} ({} free; a source per cache state and a copy)",
                    format_size(s),
                    scratch.parent().display(),
                    format_size(free)
                ));
            }
        }
        let biggest = o.file_sizes.iter().copied().max().unwrap_or(0);
        scratch.ensure_space(
            files * biggest + biggest / 10 + (4 << 20),
            "the copy probe's sources and copy",
        )?;
        if o.drop_caches && !rustix::process::geteuid().is_root() {
            crate::progress::note(
                "--drop-caches needs root; cold rows use fdatasync + POSIX_FADV_DONTNEED only (labelled)",
            );
        }
        Ok(())
    }

    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
        let o = &self.opts;
        let stop = interrupt::requested;
        let dir = ctx.scratch.path();
        let dio = copyfile::dio_alignment(&calls::c_path(dir)?)?.map_or(512, |(_, off)| off as u64);
        let here = Here {
            dir,
            drop_all: o.drop_caches && rustix::process::geteuid().is_root(),
            dio,
            verdicts: verdicts(o, dir, dio)?,
            // Cold rows need a way to drop the source's cached pages (tmpfs has none).
            cold: if o.caches.contains(&Cache::Cold) {
                Leave::cold(ctx.env, &copyfile::eviction(dir)?)
            } else {
                None
            },
            // Durable rows mean nothing where fsync returns at once (tmpfs).
            durable: Leave::durable(ctx.env),
        };
        let name = Kind.name();
        let mut out = Vec::new();
        for &size in &o.file_sizes {
            // One source per cache state: the warm one is never evicted, so it stays in
            // the page cache as it was written whatever rows run beside it (a file read
            // back after an eviction sits in smaller folios and copies up to a third
            // slower here); the cold one is evicted before every copy.
            let mut sources = Vec::new();
            for &cache in &o.caches {
                let file = format!("copy-src-{}.dat", cache.name());
                sources.push((cache, Source::create_named(dir, &file, size, o.sparse, &stop)?));
            }
            let plan = plan_at(o, size, &sources, &here)?;
            out.extend(ctx.run_plan(name, plan, |case, params, row, s| {
                measurement(ctx, case, params, row, s, size)
            })?);
            for (_, src) in &sources {
                copyfile::remove_if_present(&src.c_path)?;
            }
        }
        Ok(out)
    }
}

/// What every row of a run shares: the scratch directory, whether caches are dropped
/// as root, O_DIRECT's alignment, each variant's verdict here, and why cold and durable
/// rows are left out where they are.
struct Here<'a> {
    dir: &'a std::path::Path,
    drop_all: bool,
    dio: u64,
    verdicts: Vec<(String, Result<(), String>)>,
    cold: Option<Leave>,
    /// Why durable rows are left out: on a memory-backed filesystem (tmpfs), where no
    /// row reaches a device.
    durable: Option<Leave>,
}

/// Which variants work here, from a small probe copy (1 MiB + 4097 bytes): each variant
/// measured at any size, once (by label).
fn verdicts(
    o: &Options,
    dir: &std::path::Path,
    dio: u64,
) -> Result<Vec<(String, Result<(), String>)>> {
    let stop = interrupt::requested;
    let probe = Source::create_named(dir, "copy-probe.dat", (1 << 20) + 4097, o.sparse, &stop)?;
    let mut verdicts: Vec<(String, Result<(), String>)> = Vec::new();
    for &size in &o.file_sizes {
        for v in o.variants_at(size) {
            if !verdicts.iter().any(|(l, _)| *l == v.label()) {
                verdicts.push((v.label(), support(&v, &probe, dir, dio)?));
            }
        }
    }
    copyfile::remove_if_present(&probe.c_path)?;
    Ok(verdicts)
}

/// The rows at file size `size`, copying `src`: every cache state, durability and
/// variant, ready or unsupported with the reason.
fn plan_at<'a>(
    o: &Options,
    size: u64,
    sources: &'a [(Cache, Source)],
    here: &Here,
) -> Result<Plan<Params, Row<'a>>> {
    let mut plan = Plan::new(Unit::BytesPerSec);
    let mut dst_n = 0;
    let mut warmed: Vec<String> = Vec::new();
    for (cache, src) in sources {
        let cache = *cache;
        for &dur in &o.durability {
            for v in &o.variants_at(size) {
                let verdict = here
                    .verdicts
                    .iter()
                    .find(|(l, _)| *l == v.label())
                    .map(|x| &x.1)
                    .ok_or_else(|| anyhow::anyhow!("{}: never probed", v.label()))?;
                let case = case_name(v, cache, dur, size);
                let params = params(v, size, (cache, dur), o.sparse, here);
                if let Err(reason) = verdict {
                    plan.unsupported(case, params, reason.clone());
                    continue;
                }
                if let (Cache::Cold, Some(leave)) = (cache, &here.cold) {
                    plan.leave(case, params, leave.prefixed("cold source: "));
                    continue;
                }
                if let (true, Some(leave)) = (dur.durable(), &here.durable) {
                    plan.leave(case, params, leave.clone());
                    continue;
                }
                dst_n += 1;
                let row = Row {
                    v: v.clone(),
                    prep: Prepared::new(v, here.dio)?,
                    src,
                    dst: calls::c_path(&here.dir.join(format!("copy-dst-{dst_n}.dat")))?,
                    cache,
                    fsync: dur.durable(),
                    drop_all: here.drop_all,
                    verify_always: o.verify == Verify::Always,
                    corrupt: o.corrupt,
                    passes: 0,
                    verified: 0,
                    residency: Vec::new(),
                    failed: None,
                    tool: None,
                    range: copies_range(size, cache),
                    dsts: Vec::new(),
                    copies: 0,
                    warm: !warmed.contains(&v.label()),
                };
                warmed.push(v.label());
                plan.ready(case, params, row);
            }
        }
    }
    Ok(plan)
}

/// A sampled row as its measurement: throughput, the per-copy figures, and the cache
/// state and verification it ended with.
fn measurement(
    ctx: &Context,
    case: &str,
    mut params: Params,
    row: &Row,
    s: &crate::harness::Sampled,
    size: u64,
) -> Result<Measurement> {
    let (label, frac) = residency_label(row.cache, &row.residency);
    params.cache_observed = Some(label.clone());
    let mut m = Measurement::from_sampled(
        Kind.name(),
        case,
        params,
        Metric::Throughput {
            bytes_per_iter: size as f64,
        },
        s,
        &ctx.overhead,
        note(&row.v),
    )?;
    let copies = m.iterations.max(1) as f64;
    let t = &m.rusage.total;
    let per = |v: u64| Some(k_round(v as f64 / copies));
    let secs = |b: f64| Some(k_round(if b > 0.0 { size as f64 / b } else { 0.0 }));
    m.derived = to_map(&Derived {
        median_s: secs(m.median),
        best_s: secs(m.max),
        user_s_per_copy: Some(k_round(t.user_us as f64 / 1e6 / copies)),
        sys_s_per_copy: Some(k_round(t.sys_us as f64 / 1e6 / copies)),
        voluntary_cs_per_copy: per(t.voluntary_cs),
        involuntary_cs_per_copy: per(t.involuntary_cs),
        minor_faults_per_copy: per(t.minor_faults),
        blocks_in_per_copy: per(t.blocks_in),
        blocks_out_per_copy: per(t.blocks_out),
        max_resident_fraction: Some(k_round(frac)),
        verified_passes: Some(row.verified as f64),
        warmup_samples: s.steady.map(|st| st.ramp_samples as f64),
        warmup_settled: s.steady.map(|st| f64::from(u8::from(st.settled))),
    });
    let fully = row.residency.iter().all(|r| r.0 == r.1);
    if row.cache == Cache::Warm && !fully {
        m.warnings.push(format!(
            "not fully warm: {label} even after re-reading the source (memory pressure)"
        ));
    }
    if row.cache == Cache::Cold && frac > 0.0 {
        m.warnings.push(format!(
            "eviction did not fully take: up to {:.1}% of the source was cached",
            frac * 100.0
        ));
    }
    if let Some(f) = &row.failed {
        m.status = Status::Failed;
        m.reason = Some(f.clone());
    }
    Ok(m)
}

fn k_round(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

fn params(
    v: &Variant,
    size: u64,
    (cache, dur): (Cache, Durability),
    sparse: bool,
    here: &Here,
) -> Params {
    let (m, drop_all) = (v.method, here.drop_all);
    // Durable rows are left out only where the filesystem keeps files in memory alone.
    let memory = here.durable.is_some();
    Params {
        method: m,
        variant: v.label(),
        buffer_size: v.buffer,
        madvise: m.is_mmap().then_some(v.madvise),
        whole: (m == Method::MmapWrite).then_some(v.whole),
        pipe_size_requested: (m == Method::Splice)
            .then(|| v.pipe_size.map_or("default".into(), |b| b.to_string())),
        queue_depth: (m == Method::IoUring).then_some(v.depth),
        registered_buffers: (m == Method::IoUring).then_some(v.registered),
        file_size: size,
        sparse,
        cache,
        eviction: match cache {
            Cache::Warm => "none (read whole if any page missing)",
            Cache::Cold if drop_all => "fdatasync + POSIX_FADV_DONTNEED + drop_caches",
            Cache::Cold => "fdatasync + POSIX_FADV_DONTNEED",
        }
        .into(),
        durability: dur,
        durability_state: variant::durability_state(m, dur.durable(), memory).into(),
        cache_observed: None,
    }
}

fn note(v: &Variant) -> String {
    match v.method {
        Method::ReadWrite => "read(2) into a user buffer, write(2) it out".into(),
        Method::ReadWriteFadvise => "read-write with POSIX_FADV_SEQUENTIAL on the source".into(),
        Method::PreadPwrite => "pread(2)/pwrite(2) at explicit offsets".into(),
        Method::MmapWrite => "source mapped; write(2) from the mapping (whole, or in chunks)".into(),
        Method::MmapMemcpyMsync => "destination ftruncated, reserved (fallocate) and mapped; memcpy; msync (MS_SYNC with fsync, else MS_ASYNC)".into(),
        Method::MmapMemcpyMunmap => "destination ftruncated, reserved (fallocate) and mapped; memcpy; munmap without msync".into(),
        Method::Sendfile => "sendfile(2) file to file, in-kernel".into(),
        Method::Splice => "splice(2) source → private pipe → destination".into(),
        Method::CopyFileRange => "copy_file_range(2): in-kernel, may share or offload blocks".into(),
        Method::Reflink => "ioctl(FICLONE): share the source's blocks (copy-on-write)".into(),
        Method::IoUring => "io_uring reads and writes, one buffer per queue slot; the CPU time and block I/O of io_uring's kernel workers (io-wq threads) are not in this thread's counters, so usr/sys and blocks understate its cost".into(),
        Method::Direct => "O_DIRECT on both ends, aligned buffer (statx DIOALIGN); unaligned tail written buffered".into(),
        Method::Cp => "cp(1) as a child process (its own method: copy_file_range or read/write)".into(),
        Method::Cat => "cat(1) src > dst as a child process".into(),
        Method::Dd => "dd(1) bs=1M as a child process, writing to its standard output".into(),
    }
}
