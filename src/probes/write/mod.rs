//! The mirror of seed 000: write(2) cost versus block size.
//!
//! A file of `file_size` bytes is made in the scratch directory and synced, so its
//! blocks are allocated before anything is timed; every pass then rewrites it in place,
//! start to end, at one block size: no block allocation is ever timed. Before each case
//! the whole file is verified resident in the page cache (a partial-page write to a
//! missing page would read it from the disk first). One iteration is one whole pass:
//! `write` = lseek(0) + write(block) until `file_size` bytes, `pwrite` = pwrite at
//! increasing offsets; every call's byte count is checked. Durability:
//! - `none`: into the page cache; the pass ends when the last write returns;
//! - `fsync`: fsync(2) at the end of each pass, inside the timing;
//! - `dsync`: the file opened O_DSYNC, so every write returns durable.
//!
//! After each case the file is read back and compared with what the case wrote (each
//! case writes its own pattern), so a pass that wrote nothing cannot pass for one.

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
use crate::sys::copyfile;
use crate::sys::machine::Environment;
use crate::sys::mapping::file_residency;
use crate::sys::scratch::Scratch;
use crate::units::size_label;
use anyhow::{Context as _, Result, bail};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};

named_enum! {
    /// How a pass writes the file. Names are a contract (`--method`, JSON).
    pub enum Method as "method" {
        Write = "write",
        Pwrite = "pwrite",
    }
}

impl Method {
    /// System calls in one pass over `size` bytes (the fsync of `fsync` mode aside).
    pub fn calls_per_pass(self, size: u64, block: u64) -> u64 {
        let chunks = size.div_ceil(block);
        match self {
            Method::Write => chunks + 1, // lseek + writes
            Method::Pwrite => chunks,
        }
    }

    fn note(self) -> &'static str {
        match self {
            Method::Write => {
                "one pass = lseek(0) + write(block) over the whole pre-allocated file, rewritten in place (no block allocation timed); ns/call = pass time ÷ (writes + lseek)"
            }
            Method::Pwrite => {
                "one pass = pwrite(block) at increasing offsets over the whole pre-allocated file, rewritten in place (no block allocation timed); ns/call = pass time ÷ pwrites"
            }
        }
    }
}

named_enum! {
    /// When the written data must be on stable storage. Names are a contract
    /// (`--durability`, JSON).
    pub enum Durability as "durability" {
        None = "none",
        Fsync = "fsync",
        Dsync = "dsync",
    }
}

impl Durability {
    /// Whether the data is on stable storage when the pass's clock stops.
    pub fn durable(self) -> bool {
        self != Durability::None
    }

    /// What the data had reached when the pass ended, in words (footnotes only).
    fn state(self) -> &'static str {
        match self {
            Durability::None => "not durable: dirty in the page cache when the pass ends",
            Durability::Fsync => "durable: fsync returned inside the timing, once per pass",
            Durability::Dsync => {
                "durable: O_DSYNC, every write returned with its data on stable storage"
            }
        }
    }
}

/// Options of `ioprobe write`.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long these options may take when no `--time-limit` is given: the promised
    /// wait. Rows get their minimum samples whatever the limit; it bounds the extra
    /// sampling of wide rows. None: no limit.
    pub time_limit: Option<std::time::Duration>,
    pub file_size: u64,
    pub block_sizes: Vec<u64>,
    pub methods: Vec<Method>,
    pub durability: Vec<Durability>,
}

/// How long the defaults at `scale` may take with no `--time-limit`.
fn time_limit(scale: Scale) -> Option<std::time::Duration> {
    // Its calibrated cases stop at their CI target or budget on their own; only
    // `ioprobe run`, which promises an answer in half a minute, bounds them.
        (scale == Scale::Run).then(|| std::time::Duration::from_secs(8))
}

impl Options {
    /// The defaults: a 10 MiB file rewritten by write(2) in blocks of 1 KiB … 8 MiB
    /// (powers of two), in all three durability modes. `--quick` leaves out `dsync`
    /// (one synchronous device write per call: about a second per pass at 1 KiB
    /// blocks); `ioprobe run` also takes blocks of 1 KiB … 4 MiB in powers of four.
    pub fn for_scale(scale: Scale) -> Options {
        Options {
            time_limit: time_limit(scale),
            file_size: 10 << 20,
            block_sizes: match scale {
                Scale::Run => sweep::powers_of_two(1 << 10, 4 << 20)
                    .into_iter()
                    .step_by(2)
                    .collect(),
                _ => sweep::powers_of_two(1 << 10, 8 << 20),
            },
            methods: vec![Method::Write],
            durability: match scale {
                Scale::Quick | Scale::Run => vec![Durability::None, Durability::Fsync],
                Scale::Default | Scale::Thorough => Durability::ALL.to_vec(),
            },
        }
    }
}

impl Options {
    /// Every (method, durability, block) with its case name, in plan order.
    fn cases(&self) -> impl Iterator<Item = ((Method, Durability, u64), String)> + '_ {
        self.methods.iter().flat_map(move |&m| {
            self.durability.iter().flat_map(move |&d| {
                self.block_sizes.iter().map(move |&b| {
                    let name = format!("{}/{}/{}", m.name(), d.name(), size_label(b));
                    ((m, d, b), name)
                })
            })
        })
    }
}

/// The params of a write row. Keys are a contract (JSON `params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub method: Method,
    pub durability: Durability,
    pub block_size: u64,
    pub file_size: u64,
    /// What mincore saw before and after the case (observed).
    pub page_cache: String,
    /// What the data had reached, in words (footnotes only; tables read `durability`).
    pub durability_state: String,
}

impl super::RowParams for Params {
    fn check(&self) -> std::result::Result<(), String> {
        use super::size_param;
        size_param("block_size", self.block_size, 1)?;
        size_param("file_size", self.file_size, 1)
    }
}

/// The write curve in `run`: (block size, bytes/s) of the measured rows of `method` at
/// `durability`.
pub fn curve(run: &Run, method: Method, durability: Durability) -> Vec<(u64, f64)> {
    super::best_per_size(
        super::measured_rows::<Params>(run, Kind.name())
            .into_iter()
            .filter(|(_, p)| p.method == method && p.durability == durability)
            .map(|(m, p)| (p.block_size, m.median)),
    )
}

/// The write probe, independent of options.
pub struct Kind;

impl ProbeKind for Kind {
    /// A write row: its file's pages, where they sit in memory (their folios), set its regime; a new file draws anew.
    fn regime_rows(&self) -> bool {
        true
    }
    fn check_typed(&self, m: &Measurement) -> std::result::Result<(), String> {
        super::typed_params::<Params>(m).map(|_| ())
    }
    fn name(&self) -> &'static str {
        "write"
    }

    fn observed_params(&self) -> &'static [&'static str] {
        &["page_cache"]
    }

    fn grids(&self, rows: &[&Measurement], _env: &Environment, st: &Style) -> Vec<Grid> {
        present::grids(rows, st)
    }

    fn plots(&self, rows: &[&Measurement], env: &Environment) -> Result<Vec<Plot>> {
        present::plots(rows, env)
    }

    fn recommend(&self, rows: &[&Measurement], _env: &Environment) -> Vec<Recommendation> {
        present::recommend(rows)
    }

    fn advice(&self, rows: &[&Measurement], env: &Environment) -> Vec<String> {
        present::advice(rows, env)
    }

    fn for_scale(&self, scale: Scale) -> Box<dyn Probe> {
        Box::new(WriteProbe::new(Options::for_scale(scale)))
    }

}

/// The write probe.
pub struct WriteProbe {
    opts: Options,
}

impl WriteProbe {
    pub fn new(opts: Options) -> Self {
        WriteProbe { opts }
    }
}

/// One pass after another over the file, in `buf`-sized writes.
struct Pass<'a> {
    method: Method,
    fsync: bool,
    fd: &'a OwnedFd,
    size: u64,
    buf: AlignedBuf,
}

impl Workload for Pass<'_> {
    fn keeps_cpu_waits(&self) -> bool {
        self.fsync
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        let size = self.size;
        let block = self.buf.len() as u64;
        for _ in 0..iters {
            let mut total = 0u64;
            if self.method == Method::Write {
                let off = calls::lseek_set(self.fd, 0)?;
                if off != 0 {
                    bail!("lseek returned {off}, expected 0");
                }
            }
            while total < size {
                let want = (size - total).min(block) as usize;
                let data = &self.buf.as_slice()[..want];
                let n = match self.method {
                    Method::Write => calls::write(self.fd, data)?,
                    Method::Pwrite => calls::pwrite(self.fd, data, total)?,
                };
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            if total != size {
                return Err(short(self.method.name(), total as usize, size as usize));
            }
            if self.fsync {
                copyfile::fsync(self.fd)?;
            }
        }
        Ok(())
    }
}

/// The bytes case number `seed` writes: a 251-periodic pattern shifted by the seed, so
/// consecutive cases (and the file as created) differ at every block's first byte.
fn fill(buf: &mut [u8], seed: usize) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = ((i + seed) % 251) as u8 + 1;
    }
}

/// Reads the file back and checks that it holds `block`-sized copies of the case's
/// pattern from start to end.
fn verify(fd: &OwnedFd, size: u64, block: &[u8]) -> Result<()> {
    let mut got = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < size {
        let want = (size - off).min(got.len() as u64) as usize;
        let n = calls::pread(fd, &mut got[..want], off)?;
        if n == 0 {
            bail!("the file ends at {off} of {size} bytes");
        }
        for (k, &b) in got[..n].iter().enumerate() {
            let at = off + k as u64;
            if b != block[(at % block.len() as u64) as usize] {
                bail!("verification FAILED: byte {at} of the file is not what the last pass wrote");
            }
        }
        off += n as u64;
    }
    Ok(())
}

impl Probe for WriteProbe {
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
        let o = &self.opts;
        let size = o.file_size;
        if o.methods.is_empty() || o.block_sizes.is_empty() || o.durability.is_empty() {
            return usage(
                "nothing to measure: an axis (--block-sizes, --method, --durability) is empty",
            );
        }
        sweep::check_sizes(env, size, &o.block_sizes)?;
        scratch.ensure_space(size + size / 10, "the write probe's file")
    }

    fn beyond_edges(&self, rows: &[Measurement]) -> Option<Box<dyn Probe>> {
        let refs: Vec<&Measurement> = rows.iter().collect();
        let typed = crate::present::with_params::<Params>(&refs);
        let pts: Vec<((Method, Durability), u64, &Measurement)> = typed
            .iter()
            .map(|(m, p)| ((p.method, p.durability), p.block_size, *m))
            .collect();
        // Powers of two past the edge, never above the file.
        let sizes = super::sweep::beyond_edges(&pts, 2, (1 << 10, self.opts.file_size));
        (!sizes.is_empty()).then(|| {
            Box::new(WriteProbe::new(Options {
                block_sizes: sizes,
                ..self.opts.clone()
            })) as Box<dyn Probe>
        })
    }

    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
        let o = &self.opts;
        let size = o.file_size;
        let stop = crate::interrupt::requested;
        // Created, written and fdatasynced: every block is allocated before timing.
        let (path, fd) = ctx.scratch.create_file("write.dat", size, &stop)?;
        let dsync = calls::open(&path, OFlags::RDWR | OFlags::DSYNC | OFlags::CLOEXEC, 0)?;
        let mut plan = Plan::new(Unit::BytesPerSec);
        // Durable rows mean nothing on a memory-backed filesystem: left out, said why.
        let no_durability = Leave::durable(ctx.env);
        for ((method, dur, block), case) in o.cases() {
            let params = Params {
                method,
                durability: dur,
                block_size: block,
                file_size: size,
                page_cache: String::new(),
                durability_state: dur.state().into(),
            };
            match &no_durability {
                Some(leave) if dur.durable() => plan.leave(case, params, leave.clone()),
                _ => plan.ready(case, params, ()),
            }
        }
        let name = Kind.name();
        let mut seed = 0;
        let rows = ctx.run_plan_each(name, plan, |case, mut params, ()| {
            let (method, dur, block) = (params.method, params.durability, params.block_size);
            seed += 1;
            let (res, pages) = super::ensure_resident(&fd, size)?;
            let mut buf = AlignedBuf::new(block as usize);
            fill(buf.as_mut_slice(), seed);
            let mut w = Pass {
                method,
                fsync: dur == Durability::Fsync,
                fd: if dur == Durability::Dsync {
                    &dsync
                } else {
                    &fd
                },
                size,
                buf,
            };
            let sampled = ctx
                .measure(name, case, &mut w)
                .map_err(|e| e.context(format!("write case {case}")))?;
            let (res_after, _) = file_residency(&fd, size)?;
            verify(&fd, size, w.buf.as_slice())
                .map_err(|e| e.context(format!("write case {case}")))?;
            let sweep = sweep::Case {
                size,
                block,
                calls: method.calls_per_pass(size, block),
                resident: (res, res_after),
                pages,
                cpu: true,
            };
            params.page_cache = sweep.page_cache();
            sweep.measurement(ctx, (name, case), params, &sampled, method.note())
        })?;
        // The file goes now, not with the scratch directory: a sweep extended past
        // its edge (`ioprobe run`) creates it again.
        drop((fd, dsync));
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_mirror_the_read_sweep_and_run_takes_powers_of_four() {
        let d = Options::for_scale(Scale::Default);
        assert_eq!(d.file_size, 10 << 20);
        assert_eq!(d.block_sizes.len(), 14);
        assert_eq!(
            Options::for_scale(Scale::Run).block_sizes,
            [
                1 << 10,
                4 << 10,
                16 << 10,
                64 << 10,
                256 << 10,
                1 << 20,
                4 << 20
            ]
        );
    }

    #[test]
    fn calls_per_pass_counts_the_lseek() {
        assert_eq!(Method::Write.calls_per_pass(10 << 20, 1 << 20), 11);
        assert_eq!(Method::Pwrite.calls_per_pass(10 << 20, 3 << 20), 4);
    }

    #[test]
    fn consecutive_cases_write_different_bytes() {
        let (mut a, mut b) = (vec![0u8; 8], vec![0u8; 8]);
        fill(&mut a, 1);
        fill(&mut b, 2);
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
        assert!(a.iter().all(|&x| x != 0));
    }

    #[test]
    fn names_round_trip() {
        for &d in Durability::ALL {
            assert_eq!(Durability::parse(d.name()), Ok(d));
        }
        assert!(Method::parse("mmap").unwrap_err().contains("write, pwrite"));
        assert!(Durability::Dsync.durable() && !Durability::None.durable());
    }
}
