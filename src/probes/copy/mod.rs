//! Seeds 001 and 003: every way to copy a file, compared honestly.
//!
//! For each file size a position-dependent source is created in the scratch directory.
//! Every method variant first copies a small probe file: a method this kernel or
//! filesystem refuses (EOPNOTSUPP, EXDEV, EINVAL, ENOSYS, ...) becomes an
//! `unsupported` row naming the call and errno, never another method under its name.
//! Then all rows (variant × cache state × durability) are sampled round-robin. Before
//! each sample the destination is removed and the source put in its page-cache state,
//! verified with mincore; the copy (with fsync in `fsync` mode) is timed; after it the
//! destination is fingerprinted (first passes, or every pass with `--verify always`)
//! and removed. A mismatch marks the row `failed` and the command exits non-zero.

pub mod methods;
pub mod source;
pub mod tools;

use super::{Context, ParamSpec, Probe};
use crate::error::usage;
use crate::harness::{External, Workload, interrupt};
use crate::results::{Measurement, Metric};
use crate::sys::calls::{self, SysError};
use crate::sys::copyfile;
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use crate::units::{format_size, size_label};
use anyhow::Result;
pub use methods::{Method, Variant};
use methods::{Prepared, ToolRusage};
use rustix::fs::OFlags;
use serde_json::{Map, json};
pub use source::Cache;
use source::Source;
use std::ffi::CString;

/// Whether the copy must be on stable storage when the clock stops. Names are a
/// contract (`--durability`, JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    None,
    Fsync,
}

impl Durability {
    pub fn name(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::Fsync => "fsync",
        }
    }

    pub fn parse(s: &str) -> Result<Durability, String> {
        match s {
            "none" => Ok(Durability::None),
            "fsync" => Ok(Durability::Fsync),
            _ => Err(format!("unknown durability '{s}' (valid: none, fsync)")),
        }
    }
}

/// Options of `ioprobe copy`.
#[derive(Debug, Clone)]
pub struct Options {
    pub file_sizes: Vec<u64>,
    /// In-process methods and, with `--system-tools`, the tools.
    pub methods: Vec<Method>,
    /// read-write buffer sweep.
    pub buffers: Vec<u64>,
    pub caches: Vec<Cache>,
    pub durability: Vec<Durability>,
    pub verify_always: bool,
    pub drop_caches: bool,
    pub sparse: bool,
    /// One variant per method (`ioprobe run`).
    pub lean: bool,
    /// Test hook (IOPROBE_FAULT=copy-corrupt): flip a destination byte before verifying.
    pub corrupt: bool,
}

/// Seed 003's buffer list plus today's cp default: 1K, 64K, 128K, 256K, 1M, 2M, 100M.
pub fn default_buffers() -> Vec<u64> {
    vec![
        1 << 10,
        64 << 10,
        128 << 10,
        256 << 10,
        1 << 20,
        2 << 20,
        100 << 20,
    ]
}

impl Options {
    /// `ioprobe run`: 64 MiB, warm, both durabilities, one variant per method.
    pub fn for_run() -> Options {
        Options {
            file_sizes: vec![64 << 20],
            methods: Method::IN_PROCESS.to_vec(),
            buffers: vec![1 << 20],
            caches: vec![Cache::Warm],
            durability: vec![Durability::None, Durability::Fsync],
            verify_always: false,
            drop_caches: false,
            sparse: false,
            lean: true,
            corrupt: false,
        }
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
                    .buffers
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
            if self.lean {
                vs.truncate(1);
            }
            out.extend(vs);
        }
        out
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

/// Errnos that mean "this method cannot work here", not "the copy went wrong".
const UNSUPPORTED: [i32; 6] = [
    libc::EOPNOTSUPP,
    libc::EXDEV,
    libc::EINVAL,
    libc::ENOSYS,
    libc::EPERM,
    libc::ENOTTY,
];

/// Copies a small probe file with `v`; `Err(reason)` when the method is unsupported
/// here, `Ok(Err(e))` for a real failure (a wrong copy, a full disk).
fn support(
    v: &Variant,
    probe: &Source,
    dir: &std::path::Path,
    dio: u64,
) -> Result<Result<(), String>> {
    if v.method.is_tool() && !tools::available(v.method.name()) {
        return Ok(Err(format!("{} not found on PATH", v.method.name())));
    }
    let dst = calls::c_path(&dir.join("copy-probe.out"))?;
    let attempt = Prepared::new(v, dio)
        .and_then(|mut p| methods::copy(v, &mut p, &probe.c_path, &dst, probe.size, false));
    let verdict = match attempt {
        Ok(_) => {
            let (size, hash) = source::fingerprint(&dst)?;
            if size != probe.size || hash != probe.hash {
                anyhow::bail!(
                    "{}: the probe copy differs from its source ({size} of {} bytes, fingerprint {})",
                    v.label(),
                    probe.size,
                    if hash == probe.hash {
                        "equal"
                    } else {
                        "different"
                    }
                );
            }
            Ok(())
        }
        Err(e) => match e.chain().find_map(|c| c.downcast_ref::<SysError>()) {
            Some(se) if UNSUPPORTED.contains(&se.errno) => Err(se.to_string()),
            _ => return Err(e.context(format!("{}: probe copy", v.label()))),
        },
    };
    copyfile::remove_if_present(&dst)?;
    Ok(verdict)
}

/// One row: a variant in one cache state and durability mode, a copy per sample.
struct Row<'a> {
    v: Variant,
    prep: Prepared,
    src: &'a Source,
    dst: CString,
    cache: Cache,
    fsync: bool,
    drop_all: bool,
    verify_always: bool,
    corrupt: bool,
    passes: usize,
    verified: usize,
    residency: Vec<(usize, usize)>,
    failed: Option<String>,
    tool: ToolRusage,
}

impl Workload for Row<'_> {
    fn before_sample(&mut self) -> Result<()> {
        copyfile::remove_if_present(&self.dst)?;
        let r = self.src.prepare(self.cache, self.drop_all)?;
        self.residency.push(r);
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        for i in 0..iters {
            if self.failed.is_some() {
                continue;
            }
            if i > 0 {
                // Only when a caller asks for several copies per sample (the rounds
                // harness asks for one; before_sample has removed the destination).
                copyfile::remove_if_present(&self.dst)?;
            }
            self.tool = methods::copy(
                &self.v,
                &mut self.prep,
                &self.src.c_path,
                &self.dst,
                self.src.size,
                self.fsync,
            )?;
        }
        Ok(())
    }

    fn external(&mut self) -> Option<External> {
        self.tool.take().map(|(role, r)| External {
            elapsed_ns: None,
            processes: vec![(role, r)],
        })
    }

    fn after_sample(&mut self) -> Result<()> {
        if self.failed.is_none() && (self.passes < 2 || self.verify_always) {
            if self.corrupt && self.passes == 0 && self.src.size > 0 {
                let fd = calls::open(self.dst.as_c_str(), OFlags::RDWR | OFlags::CLOEXEC, 0)?;
                let mut b = [0u8; 1];
                let off = self.src.size / 2;
                calls::pread(&fd, &mut b, off)?;
                b[0] ^= 0xff;
                calls::pwrite_all(&fd, &b, off)?;
            }
            let (size, hash) = source::fingerprint(&self.dst)?;
            self.verified += 1;
            if size != self.src.size || hash != self.src.hash {
                self.failed = Some(format!(
                    "FAILED verification after pass {}: destination has {size} of {} bytes and {} fingerprint",
                    self.passes + 1,
                    self.src.size,
                    if hash == self.src.hash {
                        "the same"
                    } else {
                        "a different"
                    }
                ));
            }
        }
        self.passes += 1;
        copyfile::remove_if_present(&self.dst)?;
        Ok(())
    }
}

fn residency_label(cache: Cache, seen: &[(usize, usize)]) -> (String, f64) {
    let total = seen.iter().map(|r| r.1).max().unwrap_or(0);
    let (lo, hi) = seen
        .iter()
        .fold((usize::MAX, 0), |(lo, hi), r| (lo.min(r.0), hi.max(r.0)));
    let lo = if seen.is_empty() { 0 } else { lo };
    let frac = if total == 0 {
        0.0
    } else {
        hi as f64 / total as f64
    };
    let label = match cache {
        _ if total == 0 => "empty file: nothing to cache".to_string(),
        Cache::Warm if lo == total => {
            format!("warm: {total}/{total} pages resident before every sample (mincore)")
        }
        Cache::Cold if hi == 0 => {
            format!("cold: 0/{total} pages resident before every sample (mincore)")
        }
        _ => format!(
            "asked {}, observed {lo}–{hi} of {total} pages resident (mincore)",
            cache.name()
        ),
    };
    (label, frac)
}

impl Probe for CopyProbe {
    fn params(&self) -> &'static [ParamSpec] {
        const PARAMS: &[ParamSpec] = &[
            ParamSpec::one_of("method", |s| Method::parse(s).is_ok()),
            ParamSpec::text("variant"),
            ParamSpec::size("buffer_size", 1).optional(),
            ParamSpec::size("file_size", 0),
            ParamSpec::flag("sparse"),
            ParamSpec::one_of("cache", |s| Cache::parse(s).is_ok()),
            ParamSpec::one_of("durability", |s| Durability::parse(s).is_ok()),
            ParamSpec::text("durability_state"),
        ];
        PARAMS
    }

    fn name(&self) -> &'static str {
        "copy"
    }

    fn case_count(&self) -> usize {
        let o = &self.opts;
        o.file_sizes.len() * o.caches.len() * o.durability.len() * o.variants().len()
    }

    fn validate(&self, env: &Environment, scratch: &Scratch) -> Result<()> {
        let o = &self.opts;
        if o.file_sizes.is_empty()
            || o.methods.is_empty()
            || o.caches.is_empty()
            || o.durability.is_empty()
            || o.buffers.is_empty()
        {
            return usage(
                "nothing to measure: an axis (--file-size, --method, --cache, --durability, --buffers) is empty",
            );
        }
        for &b in &o.buffers {
            if b == 0 || b > 1 << 30 {
                return usage(format!("buffer size {b} B is out of range: 1 B … 1 GiB"));
            }
        }
        let mem = env.memory_bytes;
        let free = scratch.free_space()?;
        for &s in &o.file_sizes {
            if mem > 0 && s > mem / 4 {
                return usage(format!(
                    "--file-size {} is more than a quarter of memory ({})",
                    format_size(s),
                    format_size(mem)
                ));
            }
            if s > free / 2 {
                return usage(format!(
                    "--file-size {} is more than half the free space in {} ({} free)",
                    format_size(s),
                    scratch.parent().display(),
                    format_size(free)
                ));
            }
        }
        let biggest = o.file_sizes.iter().copied().max().unwrap_or(0);
        scratch.ensure_space(
            2 * biggest + biggest / 10 + (4 << 20),
            "the copy probe's source and copy",
        )?;
        if o.drop_caches && !rustix::process::geteuid().is_root() {
            eprintln!(
                "ioprobe: --drop-caches needs root; cold rows use fdatasync + POSIX_FADV_DONTNEED only (labelled)"
            );
        }
        Ok(())
    }

    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
        let o = &self.opts;
        let stop = interrupt::requested;
        let dir = ctx.scratch.path();
        let drop_all = o.drop_caches && rustix::process::geteuid().is_root();
        let dio = copyfile::dio_alignment(&calls::c_path(dir)?)?.map_or(512, |(_, off)| off as u64);
        // Which variants work here, from a small probe copy (1 MiB + 4097 bytes).
        let probe = Source::create_named(dir, "copy-probe.dat", (1 << 20) + 4097, o.sparse, &stop)?;
        let variants = o.variants();
        let mut verdicts = Vec::new();
        for v in &variants {
            verdicts.push(support(v, &probe, dir, dio)?);
        }
        copyfile::remove_if_present(&probe.c_path)?;
        drop(probe);
        let mut out = Vec::new();
        for &size in &o.file_sizes {
            let src = Source::create(dir, size, o.sparse, &stop)?;
            let mut rows = Vec::new();
            let mut keys = Vec::new();
            let mut slots: Vec<Option<Measurement>> = Vec::new();
            for &cache in &o.caches {
                for &dur in &o.durability {
                    for (v, verdict) in variants.iter().zip(&verdicts) {
                        let case = format!(
                            "{}/{}/{}/{}",
                            v.label(),
                            cache.name(),
                            dur.name(),
                            size_label(size)
                        );
                        let params = params(v, size, cache, dur, o.sparse, drop_all);
                        if let Err(reason) = verdict {
                            slots.push(Some(Measurement::unsupported(
                                self.name(),
                                &case,
                                params,
                                "bytes/s",
                                reason.clone(),
                            )));
                            continue;
                        }
                        slots.push(None);
                        keys.push((slots.len() - 1, case.clone(), params));
                        rows.push(Row {
                            v: v.clone(),
                            prep: Prepared::new(v, dio)?,
                            src: &src,
                            dst: calls::c_path(&dir.join(format!("copy-dst-{}.dat", rows.len())))?,
                            cache,
                            fsync: dur == Durability::Fsync,
                            drop_all,
                            verify_always: o.verify_always,
                            corrupt: o.corrupt,
                            passes: 0,
                            verified: 0,
                            residency: Vec::new(),
                            failed: None,
                            tool: None,
                        });
                    }
                }
            }
            let names: Vec<String> = keys.iter().map(|k| k.1.clone()).collect();
            let sampled = ctx.measure_rounds(self.name(), &names, &mut rows)?;
            for (((slot, case, mut params), row), s) in keys.into_iter().zip(&rows).zip(&sampled) {
                let (label, frac) = residency_label(row.cache, &row.residency);
                params.insert("cache_observed".into(), json!(label));
                let mut m = Measurement::from_sampled(
                    self.name(),
                    &case,
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
                for (k, v) in [
                    (
                        "median_s",
                        if m.median > 0.0 {
                            size as f64 / m.median
                        } else {
                            0.0
                        },
                    ),
                    (
                        "best_s",
                        if m.max > 0.0 {
                            size as f64 / m.max
                        } else {
                            0.0
                        },
                    ),
                    ("user_s_per_copy", t.user_us as f64 / 1e6 / copies),
                    ("sys_s_per_copy", t.sys_us as f64 / 1e6 / copies),
                    ("voluntary_cs_per_copy", t.voluntary_cs as f64 / copies),
                    ("involuntary_cs_per_copy", t.involuntary_cs as f64 / copies),
                    ("minor_faults_per_copy", t.minor_faults as f64 / copies),
                    ("blocks_in_per_copy", t.blocks_in as f64 / copies),
                    ("blocks_out_per_copy", t.blocks_out as f64 / copies),
                    ("max_resident_fraction", frac),
                    ("verified_passes", row.verified as f64),
                ] {
                    m.derived.insert(k.into(), json!(k_round(v)));
                }
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
                    m.status = "failed".into();
                    m.reason = Some(f.clone());
                }
                slots[slot] = Some(m);
            }
            drop(rows);
            copyfile::remove_if_present(&src.c_path)?;
            out.extend(slots.into_iter().flatten());
        }
        Ok(out)
    }
}

fn k_round(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

fn params(
    v: &Variant,
    size: u64,
    cache: Cache,
    dur: Durability,
    sparse: bool,
    drop_all: bool,
) -> Map<String, serde_json::Value> {
    let mut p = Map::new();
    p.insert("method".into(), json!(v.method.name()));
    p.insert("variant".into(), json!(v.label()));
    if let Some(b) = v.buffer {
        p.insert("buffer_size".into(), json!(b));
    }
    if v.method.is_mmap() {
        p.insert("madvise".into(), json!(v.madvise));
    }
    if v.method == Method::MmapWrite {
        p.insert("whole".into(), json!(v.whole));
    }
    if v.method == Method::Splice {
        p.insert(
            "pipe_size_requested".into(),
            json!(v.pipe_size.map_or("default".into(), |b| b.to_string())),
        );
    }
    if v.method == Method::IoUring {
        p.insert("queue_depth".into(), json!(v.depth));
        p.insert("registered_buffers".into(), json!(v.registered));
    }
    p.insert("file_size".into(), json!(size));
    p.insert("sparse".into(), json!(sparse));
    p.insert("cache".into(), json!(cache.name()));
    p.insert(
        "eviction".into(),
        json!(match cache {
            Cache::Warm => "none (read whole if any page missing)",
            Cache::Cold if drop_all => "fdatasync + POSIX_FADV_DONTNEED + drop_caches",
            Cache::Cold => "fdatasync + POSIX_FADV_DONTNEED",
        }),
    );
    p.insert("durability".into(), json!(dur.name()));
    p.insert(
        "durability_state".into(),
        json!(methods::durability_state(
            v.method,
            dur == Durability::Fsync
        )),
    );
    p
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
