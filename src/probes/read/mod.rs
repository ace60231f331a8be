//! Seed 000: read(2) cost versus block size.
//!
//! A file of `file_size` bytes (each of `--file-size`'s, one after the other) is made in
//! the scratch directory, verified fully resident
//! in the page cache with mincore(2) before (and after) every case, then read start to
//! end at each block size. One iteration is one whole pass: `read` = lseek(0) + read
//! until EOF (the seed's loop), `pread` = pread at increasing offsets, `mmap` = memcpy
//! out of a shared mapping made once per case. Every pass checks it moved exactly
//! `file_size` bytes. The figure is the copy from page cache into a user buffer.
//!
//! How the file entered the page cache matters (`--populate`): on ext4 since Linux
//! 6.16, a file written in large writes is kept in large folios and reads back much
//! faster than the same bytes brought in some other way. `write` measures the file as
//! written (1 MiB pwrites, then fdatasync); `readahead` evicts it (fdatasync +
//! POSIX_FADV_DONTNEED, verified with mincore) and reads it back sequentially, so
//! readahead fills the cache. By default both are measured, each as its own rows.

mod present;

use super::sweep;
use super::{Context, Leave, Plan, Probe, ProbeKind, Scale};
use crate::advice::Recommendation;
use crate::error::usage;
use crate::harness::Workload;
use crate::names::{Named, named_enum};
use crate::present::{Grid, Plot, Style};
use crate::results::{Measurement, Run, Unit};
use crate::sys::buffer::AlignedBuf;
use crate::sys::calls::{self, short};
use crate::sys::machine::Environment;
use crate::sys::mapping::{Mapping, file_residency};
use crate::sys::scratch::Scratch;
use crate::units::size_label;
use anyhow::{Result, bail};
use rustix::fd::OwnedFd;
use serde::{Deserialize, Serialize};
use std::hint::black_box;

named_enum! {
    /// How a pass reads the file. Names are a contract (`--method`, JSON).
    pub enum Method as "method" {
        Read = "read",
        Pread = "pread",
        Mmap = "mmap",
    }
}

impl Method {
    /// System calls (or chunk copies, for mmap) in one pass over `size` bytes.
    pub fn calls_per_pass(self, size: u64, block: u64) -> u64 {
        let chunks = size.div_ceil(block);
        match self {
            Method::Read => chunks + 2, // lseek + reads + the read that returns 0 at EOF
            Method::Pread | Method::Mmap => chunks,
        }
    }

    fn note(self) -> &'static str {
        match self {
            Method::Read => {
                "one pass = lseek(0) + read(block) until EOF (seed 000's loop); ns/call = pass time ÷ (reads + EOF read + lseek)"
            }
            Method::Pread => {
                "one pass = pread(block) at increasing offsets; ns/call = pass time ÷ preads"
            }
            Method::Mmap => {
                "one pass = memcpy of block-size chunks out of a shared mapping made once per case (faulted in during warm-up); no syscall, ns/call = ns per chunk copy"
            }
        }
    }
}

named_enum! {
    /// How the file entered the page cache. Names are a contract (`--populate`, JSON).
    pub enum Populate as "populate mode" {
        Write = "write",
        Readahead = "readahead",
    }
}

impl Populate {
    /// How the file got into the page cache, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Populate::Write => {
                "written in 1 MiB writes (large folios where the filesystem keeps them)"
            }
            Populate::Readahead => {
                "evicted, then read back sequentially (readahead filled the cache)"
            }
        }
    }
}

/// Options of `ioprobe read`.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long these options may take when no `--time-limit` is given: the promised
    /// wait. Rows get their minimum samples whatever the limit; it bounds the extra
    /// sampling of wide rows. None: no limit.
    pub time_limit: Option<std::time::Duration>,
    /// The files read, one after the other; with more than one, each case's name says
    /// its file's size.
    pub file_sizes: Vec<u64>,
    pub block_sizes: Vec<u64>,
    pub methods: Vec<Method>,
    pub populate: Vec<Populate>,
}

/// How long the defaults at `scale` may take with no `--time-limit`.
fn time_limit(scale: Scale) -> Option<std::time::Duration> {
    // Its calibrated cases stop at their CI target or budget on their own; only
    // `ioprobe run`, which promises an answer in half a minute, bounds them.
        (scale == Scale::Run).then(|| std::time::Duration::from_secs(8))
}

impl Options {
    /// The defaults: a 10 MiB file read by read(2) in blocks of 1 KiB … 8 MiB
    /// (powers of two); `ioprobe run` takes powers of four, 1 KiB … 4 MiB.
    pub fn for_scale(scale: Scale) -> Options {
        Options {
            time_limit: time_limit(scale),
            file_sizes: vec![10 << 20],
            block_sizes: if scale == Scale::Run {
                // Powers of four: half the rows, so each gets twice the time, and
                // neighbours far enough apart that noise does not move the choice
                // between them.
                sweep::powers_of_two(1 << 10, 8 << 20)
                    .into_iter()
                    .step_by(2)
                    .collect()
            } else {
                sweep::powers_of_two(1 << 10, 8 << 20)
            },
            methods: vec![Method::Read],
            populate: Populate::ALL.to_vec(),
        }
    }
}

impl Options {
    /// Every (file size, populate, method, block) with its case name, in plan order:
    /// all cases of one file before the next, and of one populate mode before the next
    /// (each file is populated once per mode). With one file size the names are as they
    /// always were ("read/4KiB/write"); with more, each says its file
    /// ("read/4KiB/write/64MiB").
    fn cases(&self) -> impl Iterator<Item = ((u64, Populate, Method, u64), String)> + '_ {
        let named = self.file_sizes.len() > 1;
        self.file_sizes.iter().flat_map(move |&f| {
            self.populate.iter().flat_map(move |&p| {
                self.methods.iter().flat_map(move |&m| {
                    self.block_sizes.iter().map(move |&b| {
                        let mut name = format!("{}/{}/{}", m.name(), size_label(b), p.name());
                        if named {
                            name = format!("{name}/{}", size_label(f));
                        }
                        ((f, p, m, b), name)
                    })
                })
            })
        })
    }
}

/// The params of a read row. Keys are a contract (JSON `params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub method: Method,
    pub block_size: u64,
    pub file_size: u64,
    /// How the file entered the page cache (absent in runs before `--populate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub populate: Option<Populate>,
    /// What mincore saw before and after the case (observed, not asked for).
    pub page_cache: String,
}

impl super::RowParams for Params {
    fn check(&self) -> std::result::Result<(), String> {
        use super::size_param;
        size_param("block_size", self.block_size, 1)?;
        size_param("file_size", self.file_size, 1)
    }
}

/// The read loop's curves in `run`, one per file size read (smallest first): (file
/// size, [(block size, bytes/s)]) of `method`'s measured rows, the faster populate mode
/// where both were measured.
pub fn curves(run: &Run, method: Method) -> Vec<(u64, Vec<(u64, f64)>)> {
    let rows: Vec<(&Measurement, Params)> = super::measured_rows::<Params>(run, Kind.name())
        .into_iter()
        .filter(|(_, p)| p.method == method)
        .collect();
    let mut files: Vec<u64> = rows.iter().map(|r| r.1.file_size).collect();
    files.sort_unstable();
    files.dedup();
    files
        .into_iter()
        .map(|f| {
            let points = rows
                .iter()
                .filter(|r| r.1.file_size == f)
                .map(|(m, p)| (p.block_size, m.median));
            (f, super::best_per_size(points))
        })
        .collect()
}

/// The read probe, independent of options.
pub struct Kind;

impl ProbeKind for Kind {
    /// A read row: its file's pages, where they sit in memory (their folios), set its regime; a new file draws anew.
    fn regime_rows(&self) -> bool {
        true
    }
    fn check_typed(&self, m: &Measurement) -> std::result::Result<(), String> {
        super::typed_params::<Params>(m).map(|_| ())
    }
    fn name(&self) -> &'static str {
        "read"
    }

    fn observed_params(&self) -> &'static [&'static str] {
        &["page_cache"]
    }

    fn grids(&self, rows: &[&Measurement], _env: &Environment, st: &Style) -> Vec<Grid> {
        vec![present::grid(rows, st)]
    }

    fn plots(&self, rows: &[&Measurement], env: &Environment) -> Result<Vec<Plot>> {
        present::plots(rows, env)
    }

    fn recommend(&self, rows: &[&Measurement], env: &Environment) -> Vec<Recommendation> {
        present::recommend(rows, env)
    }

    fn advice(&self, rows: &[&Measurement], env: &Environment) -> Vec<String> {
        present::advice(rows, env)
    }

    fn for_scale(&self, scale: Scale) -> Box<dyn Probe> {
        Box::new(ReadProbe::new(Options::for_scale(scale)))
    }

}

/// The read probe.
pub struct ReadProbe {
    opts: Options,
}

impl ReadProbe {
    pub fn new(opts: Options) -> Self {
        ReadProbe { opts }
    }
}

struct Pass<'a> {
    method: Method,
    fd: &'a OwnedFd,
    size: u64,
    buf: AlignedBuf,
    map: Option<Mapping>,
}

impl Workload for Pass<'_> {
    fn run(&mut self, iters: u64) -> Result<()> {
        let size = self.size;
        for _ in 0..iters {
            let mut total = 0u64;
            match self.method {
                Method::Read => {
                    let off = calls::lseek_set(self.fd, 0)?;
                    if off != 0 {
                        bail!("lseek returned {off}, expected 0");
                    }
                    loop {
                        let n = calls::read(self.fd, self.buf.as_mut_slice())?;
                        if n == 0 {
                            break;
                        }
                        total += n as u64;
                    }
                }
                Method::Pread => {
                    while total < size {
                        let want = (size - total).min(self.buf.len() as u64) as usize;
                        let n = calls::pread(self.fd, &mut self.buf.as_mut_slice()[..want], total)?;
                        if n == 0 {
                            break;
                        }
                        total += n as u64;
                    }
                }
                Method::Mmap => {
                    let map = self
                        .map
                        .as_ref()
                        .ok_or_else(|| anyhow::anyhow!("mmap: no mapping"))?;
                    while total < size {
                        let n = map.copy_out(total as usize, self.buf.as_mut_slice());
                        black_box(self.buf.as_mut_slice());
                        if n == 0 {
                            break;
                        }
                        total += n as u64;
                    }
                }
            }
            if total != size {
                return Err(short(self.method.name(), total as usize, size as usize));
            }
        }
        Ok(())
    }
}

impl Probe for ReadProbe {
    fn time_limit(&self) -> Option<std::time::Duration> {
        self.opts.time_limit
    }

    fn kind(&self) -> &'static dyn ProbeKind {
        &Kind
    }

    fn case_names(&self) -> Vec<String> {
        self.opts.cases().map(|(_, name)| name).collect()
    }

    fn validate(&self, env: &Environment, scratch: &Scratch) -> Result<()> {
        for &size in &self.opts.file_sizes {
            sweep::check_sizes(env, size, &self.opts.block_sizes)?;
        }
        if self.opts.methods.is_empty()
            || self.opts.block_sizes.is_empty()
            || self.opts.populate.is_empty()
            || self.opts.file_sizes.is_empty()
        {
            return usage("nothing to measure: no file or block sizes, methods or populate modes");
        }
        // One file at a time: the largest is the space needed.
        let size = self.opts.file_sizes.iter().copied().max().unwrap_or(0);
        scratch.ensure_space(size + size / 10, "the read probe's file")
    }

    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
        let stop = crate::interrupt::requested;
        let plan = self.plan(ctx)?;
        let name = Kind.name();
        // The file being read (its size, path and descriptor) and how it was populated
        // (None: just created); made when its first case comes, removed when the next
        // size's does.
        let mut file: Option<(u64, std::path::PathBuf, OwnedFd)> = None;
        let mut populated: Option<Populate> = None;
        let rows = ctx.run_plan_each(name, plan, |case, mut params, ()| {
            let (size, populate, method, block) = (
                params.file_size,
                params.populate.unwrap_or(Populate::Write),
                params.method,
                params.block_size,
            );
            if file.as_ref().is_none_or(|f| f.0 != size) {
                if let Some((_, path, fd)) = file.take() {
                    remove(path, fd)?;
                }
                let (path, fd) = ctx.scratch.create_file("read.dat", size, &stop)?;
                file = Some((size, path, fd));
                populated = None;
            }
            let fd = &file.as_ref().expect("made above").2;
            if populated != Some(populate) {
                populate_cache(fd, size, populate, populated.is_none())?;
                populated = Some(populate);
            }
            let (res, pages) = super::ensure_resident(fd, size)?;
            let map = match method {
                Method::Mmap => Some(Mapping::map_file(fd, size as usize, false)?),
                _ => None,
            };
            let mut w = Pass {
                method,
                fd,
                size,
                buf: AlignedBuf::new(block as usize), // page aligned, pages touched before timing
                map,
            };
            let sampled = ctx
                .measure(name, case, &mut w)
                .map_err(|e| e.context(format!("read case {case}")))?;
            let (res_after, _) = file_residency(fd, size)?;
            let sweep = sweep::Case {
                size,
                block,
                calls: method.calls_per_pass(size, block),
                resident: (res, res_after),
                pages,
                cpu: false,
            };
            params.page_cache = sweep.page_cache();
            sweep.measurement(ctx, (name, case), params, &sampled, method.note())
        })?;
        // The file goes now, not with the scratch directory: `run` measures some of
        // its rows again, and creates it again then.
        if let Some((_, path, fd)) = file {
            remove(path, fd)?;
        }
        Ok(rows)
    }
}

impl ReadProbe {
    /// Every case, each file size's in turn; readahead's left out where the file's
    /// cached pages cannot be dropped (tmpfs keeps its files in the page cache).
    fn plan(&self, ctx: &Context) -> Result<Plan<Params, ()>> {
        let cold = if self.opts.populate.contains(&Populate::Readahead) {
            Leave::cold(ctx.env, &crate::sys::copyfile::eviction(ctx.scratch.path())?)
        } else {
            None
        };
        let mut plan = Plan::new(Unit::BytesPerSec);
        for ((size, populate, method, block), case) in self.opts.cases() {
            let params = Params {
                method,
                block_size: block,
                file_size: size,
                populate: Some(populate),
                page_cache: String::new(),
            };
            match &cold {
                Some(leave) if populate == Populate::Readahead => {
                    plan.leave(case, params, leave.prefixed("populate readahead: "))
                }
                _ => plan.ready(case, params, ()),
            }
        }
        Ok(plan)
    }
}

/// Closes and removes a file the probe read.
fn remove(path: std::path::PathBuf, fd: OwnedFd) -> Result<()> {
    drop(fd);
    std::fs::remove_file(&path).map_err(|e| anyhow::anyhow!("removing {}: {e}", path.display()))
}

/// Brings the file into the page cache the `populate` way; `fresh` when it was just
/// created and nothing has read it since. `write`: a fresh file is as its 1 MiB writes
/// left it; otherwise it is evicted and written again (the same bytes, 1 MiB pwrites,
/// fdatasync), since writing over cached pages keeps their folios. `readahead`:
/// evicted, then one sequential pass of 128 KiB reads. Eviction is fdatasync +
/// POSIX_FADV_DONTNEED, and mincore must then see no page (else the figure would not
/// mean what its label says).
fn populate_cache(fd: &OwnedFd, size: u64, populate: Populate, fresh: bool) -> Result<()> {
    use crate::sys::copyfile;
    let evict = || -> Result<()> {
        crate::sys::os::fdatasync(fd)?;
        copyfile::fadvise(fd, copyfile::Advice::DontNeed)?;
        let (resident, total) = file_residency(fd, size)?;
        if resident > 0 {
            bail!(
                "populate {}: {resident} of {total} pages stayed in the page cache after POSIX_FADV_DONTNEED",
                populate.name()
            );
        }
        Ok(())
    };
    match populate {
        Populate::Write => {
            if fresh {
                return Ok(());
            }
            evict()?;
            let chunk = crate::sys::scratch::pattern_chunk(1 << 20);
            let mut off = 0;
            while off < size {
                let n = (size - off).min(chunk.len() as u64) as usize;
                calls::pwrite_all(fd, &chunk[..n], off)?;
                off += n as u64;
            }
            crate::sys::os::fdatasync(fd)?;
        }
        Populate::Readahead => {
            evict()?;
            let mut buf = AlignedBuf::new(128 << 10);
            calls::lseek_set(fd, 0)?;
            let mut total_read = 0u64;
            loop {
                let n = calls::read(fd, buf.as_mut_slice())?;
                if n == 0 {
                    break;
                }
                total_read += n as u64;
            }
            if total_read != size {
                return Err(short("read", total_read as usize, size as usize));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sweep_is_1k_to_8m() {
        let v = Options::for_scale(Scale::Default).block_sizes;
        assert_eq!(v.first(), Some(&1024));
        assert_eq!(v.last(), Some(&(8 << 20)));
        assert_eq!(v.len(), 14);
    }

    /// One file size: the names as they always were; more: each names its file.
    #[test]
    fn cases_name_their_file_where_there_are_several() {
        let mut o = Options {
            block_sizes: vec![4096],
            methods: vec![Method::Read],
            populate: vec![Populate::Write],
            ..Options::for_scale(Scale::Quick)
        };
        let names = |o: &Options| o.cases().map(|c| c.1).collect::<Vec<_>>();
        assert_eq!(names(&o), ["read/4KiB/write"]);
        o.file_sizes = vec![10 << 20, 64 << 20];
        assert_eq!(names(&o), ["read/4KiB/write/10MiB", "read/4KiB/write/64MiB"]);
        assert_eq!(o.cases().map(|c| c.0.0).collect::<Vec<_>>(), [10 << 20, 64 << 20]);
    }

    #[test]
    fn calls_per_pass_counts_eof_and_lseek() {
        assert_eq!(Method::Read.calls_per_pass(10 << 20, 1 << 20), 12);
        assert_eq!(Method::Pread.calls_per_pass(10 << 20, 1 << 20), 10);
        assert_eq!(Method::Pread.calls_per_pass(1000, 4096), 1);
    }

    #[test]
    fn methods_parse() {
        assert_eq!(Method::parse("pread"), Ok(Method::Pread));
        assert!(Method::parse("aio").is_err());
    }
}
