//! Seed 002: pipe(2) throughput and context switches versus chunk size, pipe capacity,
//! method and CPU placement.
//!
//! Every row pushes `--total` bytes from a writer process to a reader process (both
//! forked, see [`transfer`]) and reports bytes/s with each process's rusage. Rows are
//! sampled round-robin by the harness, so drift hits every row alike.

mod present;
pub mod stream;
pub mod transfer;

use super::{Context, Plan, Probe, ProbeKind, Scale};
use crate::advice::Recommendation;
use crate::error::usage;
use crate::harness::{External, Workload};
use crate::interrupt;
use crate::names::{Named, named_enum};
use crate::present::{Grid, Plot, Style};
use crate::results::{Measurement, Metric, Run, Unit, measurement::to_map};
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use crate::units::{format_size, size_label};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
pub use stream::Method;
use transfer::{Outcome, Spec};

/// Linux's default pipe capacity (16 pages), for sizing a pass; a guess elsewhere.
const DEFAULT_CAPACITY: u64 = 64 << 10;

/// Largest chunk or read size accepted.
pub const MAX_CHUNK: u64 = 1 << 30;

named_enum! {
    /// Where the two processes run. Names are a contract (`--placement`, JSON).
    pub enum Placement as "placement" {
        /// Neither process is pinned (all CPUs ioprobe may use).
        Any = "any",
        /// Both on one CPU.
        Same = "same",
        /// Writer and reader on two different CPUs.
        Split = "split",
    }
}

impl Placement {
    /// (writer CPUs, reader CPUs) given the CPUs ioprobe may use; `first` is the CPU
    /// named by `--cpu`, if any.
    pub fn cpus(self, allowed: &[usize], first: Option<usize>) -> Option<(Vec<usize>, Vec<usize>)> {
        let a = first.or_else(|| allowed.first().copied())?;
        match self {
            Placement::Any => Some((allowed.to_vec(), allowed.to_vec())),
            Placement::Same => Some((vec![a], vec![a])),
            Placement::Split => {
                let b = allowed.iter().copied().find(|&c| c != a)?;
                Some((vec![a], vec![b]))
            }
        }
    }
}

/// A pipe capacity: the kernel's default, or an F_SETPIPE_SZ request in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capacity {
    Default,
    Bytes(u64),
}

impl Capacity {
    pub fn parse(s: &str) -> Result<Capacity, String> {
        if s == "default" {
            return Ok(Capacity::Default);
        }
        match crate::units::parse_size(s)? {
            0 => Err("pipe size 0: a pipe needs at least one page".into()),
            b => Ok(Capacity::Bytes(b)),
        }
    }

    /// `default` or the requested size, as used in case names.
    pub fn label(self) -> String {
        match self {
            Capacity::Default => "default".into(),
            Capacity::Bytes(b) => size_label(b),
        }
    }

    /// The size asked for; None for the default.
    pub fn request(self) -> Option<u64> {
        match self {
            Capacity::Default => None,
            Capacity::Bytes(b) => Some(b),
        }
    }
}

/// Options of `ioprobe pipe`.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long these options may take when no `--time-limit` is given: the promised
    /// wait. Rows get their minimum samples whatever the limit; it bounds the extra
    /// sampling of wide rows. None: no limit.
    pub time_limit: Option<std::time::Duration>,
    pub chunk_sizes: Vec<u64>,
    /// Reader's read size; `None` = the chunk size.
    pub read_size: Option<u64>,
    pub capacities: Vec<Capacity>,
    pub methods: Vec<Method>,
    pub placements: Vec<Placement>,
    /// Bytes per sample: the most a fitted pass moves, or every pass when not `fit`.
    pub total: u64,
    /// Fit each row's pass to the harness's pass time (between its steady-state
    /// minimum and `total`); false when `--total` fixes it.
    pub fit: bool,
    /// Test hook (IOPROBE_FAULT=pipe-corrupt): the writer corrupts a stamp.
    pub corrupt: bool,
}

/// 1 KiB … 256 MiB in powers of 4, or of 2 when `fine`.
fn default_sizes(fine: bool) -> Vec<u64> {
    let step = if fine { 1 } else { 2 };
    (10..=28).step_by(step).map(|p| 1u64 << p).collect()
}

/// How long the defaults at `scale` may take with no `--time-limit`.
fn time_limit(scale: Scale) -> Option<std::time::Duration> {
        let s = std::time::Duration::from_secs;
        match scale {
            Scale::Quick => Some(s(15)),
            Scale::Default => Some(s(50)),
            Scale::Run => Some(s(10)),
            Scale::Thorough => None,
        }
}

impl Options {
    /// The defaults: chunks of 1 KiB … 256 MiB in powers of 4 (of 2 when thorough),
    /// the default and a 1 MiB pipe, both methods, every placement, each row's pass
    /// fitted to the pass time with at most 1 GiB per sample (seed 002's total). Quick:
    /// both processes on one CPU only, at most 256 MiB. `ioprobe run`: six chunk sizes (4 KiB
    /// … 4 MiB), on one CPU, at most 64 MiB.
    pub fn for_scale(scale: Scale) -> Options {
        let mut o = Options {
            time_limit: time_limit(scale),
            chunk_sizes: default_sizes(scale == Scale::Thorough),
            read_size: None,
            capacities: vec![Capacity::Default, Capacity::Bytes(1 << 20)],
            methods: Method::ALL.to_vec(),
            placements: Placement::ALL.to_vec(),
            total: if scale == Scale::Quick {
                256 << 20
            } else {
                1 << 30
            },
            fit: true,
            corrupt: crate::fault::enabled("pipe-corrupt"),
        };
        if scale == Scale::Quick {
            // Pinned to one CPU: short passes of unpinned rows swing with where the
            // scheduler puts the two processes (CIs of ±30% and more here), pinned ones
            // stay within a few percent.
            o.placements = vec![Placement::Same];
        }
        if scale == Scale::Run {
            // Six chunks bracket the knee (seed 002's is between 16 KiB and 256 KiB;
            // vmsplice-splice peaks at 1 MiB here); pinned to one CPU for the reason above.
            o.chunk_sizes = vec![4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];
            o.placements = vec![Placement::Same];
            o.total = 64 << 20;
        }
        o
    }

    /// A row's pass in chunks: (fewest, most) when fitted, None when fixed at `total`.
    /// The fewest reach steady state: four pipe capacities, 1 MiB, and three chunks of
    /// a chunk up to 16 capacities. A larger chunk is in steady state within itself (a
    /// read returns at most one capacity, so one chunk is already hundreds of
    /// write/read exchanges through the pipe): one suffices.
    fn pass_range(&self, chunk: u64, cap: Capacity) -> Option<(u64, u64)> {
        if !self.fit {
            return None;
        }
        let capacity = cap.request().unwrap_or(DEFAULT_CAPACITY);
        let chunks = if chunk > 16 * capacity { 1 } else { 3 };
        let floor = (chunks * chunk).max(4 * capacity).max(1 << 20);
        let lo = floor.div_ceil(chunk);
        Some((lo, (self.total / chunk).max(lo)))
    }

    fn cases(&self) -> impl Iterator<Item = (Method, Placement, Capacity, u64)> + '_ {
        self.methods.iter().flat_map(move |&m| {
            self.placements.iter().flat_map(move |&p| {
                self.capacities
                    .iter()
                    .flat_map(move |&c| self.chunk_sizes.iter().map(move |&s| (m, p, c, s)))
            })
        })
    }
}

/// A pipe row's case name: method/placement/capacity/chunk.
fn case_name((method, placement, cap, chunk): (Method, Placement, Capacity, u64)) -> String {
    format!(
        "{}/{}/{}/{}",
        method.name(),
        placement.name(),
        cap.label(),
        size_label(chunk)
    )
}

/// The params of a pipe row. Keys are a contract (JSON `params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub method: Method,
    pub placement: Placement,
    pub chunk_size: u64,
    pub read_size: u64,
    /// `default` or the F_SETPIPE_SZ request as a size label.
    pub pipe_size_requested: String,
    pub total: u64,
    /// CPUs each process was allowed (observed).
    pub writer_cpus: Vec<usize>,
    pub reader_cpus: Vec<usize>,
    /// The capacity the kernel granted (observed; absent on unsupported rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe_size: Option<u64>,
}

impl super::RowParams for Params {
    fn check(&self) -> std::result::Result<(), String> {
        use super::size_param;
        size_param("chunk_size", self.chunk_size, 1)?;
        size_param("read_size", self.read_size, 1)?;
        size_param("total", self.total, 1)?;
        self.pipe_size
            .map_or(Ok(()), |b| size_param("pipe_size", b, 1))
    }
}

/// The pipe curve in `run`: (chunk size, bytes/s) of the measured rows of `method` at
/// `placement`, through the default capacity (`capacity` None) or through a capacity
/// the kernel granted on request (Some).
pub fn curve(
    run: &Run,
    method: Method,
    placement: Placement,
    capacity: Option<u64>,
) -> Vec<(u64, f64)> {
    super::best_per_size(
        rows_of(run, method, placement)
            .filter(|(_, p)| match capacity {
                None => p.pipe_size_requested == "default",
                Some(c) => p.pipe_size_requested != "default" && p.pipe_size == Some(c),
            })
            .map(|(m, p)| (p.chunk_size, m.median)),
    )
}

/// The context switches the rows of [`curve`] made, writer and reader together, per
/// byte moved: (chunk size, switches per byte), the mean of a size's rows.
pub fn switch_curve(
    run: &Run,
    method: Method,
    placement: Placement,
    capacity: Option<u64>,
) -> Vec<(u64, f64)> {
    let mut by: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    let rows = rows_of(run, method, placement).filter(|(_, p)| match capacity {
        None => p.pipe_size_requested == "default",
        Some(c) => p.pipe_size_requested != "default" && p.pipe_size == Some(c),
    });
    for (m, p) in rows {
        let n = &m.rusage.normalised;
        if n.per == "GiB" {
            let e = by.entry(p.chunk_size).or_default();
            *e = (e.0 + (n.voluntary_cs + n.involuntary_cs) / (1u64 << 30) as f64, e.1 + 1.0);
        }
    }
    by.into_iter().map(|(c, (sum, n))| (c, sum / n)).collect()
}

/// The largest capacity granted on request among `run`'s measured rows of `method` at
/// `placement`.
pub fn largest_capacity(run: &Run, method: Method, placement: Placement) -> Option<u64> {
    rows_of(run, method, placement)
        .filter(|(_, p)| p.pipe_size_requested != "default")
        .filter_map(|(_, p)| p.pipe_size)
        .filter(|&c| c > 0)
        .max()
}

fn rows_of(
    run: &Run,
    method: Method,
    placement: Placement,
) -> impl Iterator<Item = (&Measurement, Params)> {
    super::measured_rows::<Params>(run, Kind.name())
        .into_iter()
        .filter(move |(_, p)| p.method == method && p.placement == placement)
}

/// The figures a pipe row derives from its median. Keys are a contract.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Derived {
    pub s_per_sample: Option<f64>,
    pub writer_calls_per_gib: Option<f64>,
    pub reader_calls_per_gib: Option<f64>,
}

/// The pipe probe, independent of options.
pub struct Kind;

impl ProbeKind for Kind {
    /// A pipe row: its writer and reader processes set its regime.
    fn regime_rows(&self) -> bool {
        true
    }
    fn check_typed(&self, m: &Measurement) -> std::result::Result<(), String> {
        super::typed_params::<Params>(m).map(|_| ())
    }
    fn name(&self) -> &'static str {
        "pipe"
    }

    fn observed_params(&self) -> &'static [&'static str] {
        // `total` is fitted per row (unless --total fixes it): runs with other totals
        // still compare row for row.
        &["pipe_size", "writer_cpus", "reader_cpus", "total"]
    }

    fn grids(&self, rows: &[&Measurement], _env: &Environment, st: &Style) -> Vec<Grid> {
        present::grids(rows, st)
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
        Box::new(PipeProbe::new(Options::for_scale(scale)))
    }

}

/// The pipe probe.
pub struct PipeProbe {
    opts: Options,
}

impl PipeProbe {
    pub fn new(opts: Options) -> Self {
        PipeProbe { opts }
    }
}

/// Bytes moved by the untimed verification pass of a vmsplice-splice row: 64 MiB, and
/// at least two chunks, so that the writer reuses its buffer while the reader checks.
fn verify_total(spec: &Spec) -> u64 {
    spec.total.min((64 << 20).max(spec.chunk * 2))
}

/// One row: a transfer repeated once per sample.
struct Row {
    spec: Spec,
    /// Chunks per pass (fewest, most) when fitted; None: one pass of `spec.total`.
    range: Option<(u64, u64)>,
    verified: bool,
    last: Vec<Outcome>,
    capacity: Option<u64>,
    writer_calls: u64,
    reader_calls: u64,
    bytes: u64,
    /// Bytes of the latest pass.
    pass_total: u64,
}

impl Workload for Row {
    fn pass_range(&self) -> Option<(u64, u64)> {
        self.range
    }

    fn before_sample(&mut self) -> Result<()> {
        // splice to /dev/null never looks at the data: prove the stream intact once with
        // a reader that reads and checks it, outside the timing.
        if !self.verified && self.spec.method == Method::VmspliceSplice {
            let mut v = self.spec.clone();
            v.checked_reader = true;
            v.total = verify_total(&self.spec);
            transfer::run(&v, &interrupt::requested)
                .map_err(|e| e.context("verification pass (reader reads and checks)"))?;
        }
        self.verified = true;
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        self.last.clear();
        // A fitted pass is one transfer of `iters` chunks; a fixed one, `iters`
        // transfers of the total.
        let (transfers, spec) = match self.range {
            Some(_) => {
                let total = iters.saturating_mul(self.spec.chunk);
                (
                    1,
                    Spec {
                        total,
                        ..self.spec.clone()
                    },
                )
            }
            None => (iters, self.spec.clone()),
        };
        self.pass_total = spec.total;
        for _ in 0..transfers {
            let o = transfer::run(&spec, &interrupt::requested)?;
            if let Some(c) = o.capacity
                && *self.capacity.get_or_insert(c) != c
            {
                bail!("the pipe's capacity changed between samples");
            }
            self.writer_calls += o.writer.0.calls;
            self.reader_calls += o.reader.0.calls;
            self.bytes += o.reader.0.bytes;
            self.last.push(o);
        }
        Ok(())
    }

    fn external(&mut self) -> Option<External> {
        let mut w = crate::harness::rusage::RusageDelta::default();
        let mut r = w;
        let mut ns = 0;
        for o in &self.last {
            ns += o.elapsed_ns;
            w.add(&o.writer.1);
            r.add(&o.reader.1);
        }
        Some(External {
            elapsed_ns: Some(ns),
            processes: vec![("writer".into(), w), ("reader".into(), r)],
        })
    }
}

fn method_note(m: Method, read_size: Option<u64>) -> String {
    let read = read_size.map_or("the same size".to_string(), |r| {
        format!("{} reads", format_size(r))
    });
    match m {
        Method::WriteRead => format!(
            "writer write(2)s stamped chunks, reader read(2)s them ({read}) and checks every stamp; time = release of both processes → reader's last byte"
        ),
        Method::VmspliceSplice => format!(
            "writer vmsplice(2)s its pages (rotating buffers so none is rewritten while in the pipe), reader splice(2)s to /dev/null ({read}); bytes counted every sample, stamps checked on an untimed verification pass"
        ),
    }
}

/// Every row of `o`: ready, or unsupported where this machine lacks vmsplice, pipe
/// resizing or CPU pinning.
fn plan(o: &Options, ctx: &Context) -> Result<Plan<Params, Row>> {
    let vmsplice = vmsplice_support();
    let resize = resize_support();
    let pinning = crate::sys::affinity::pinning();
    let mut plan = Plan::new(Unit::BytesPerSec);
    for (method, placement, cap, chunk) in o.cases() {
        let case = case_name((method, placement, cap, chunk));
        let Some((wc, rc)) = placement.cpus(ctx.cpus, ctx.env.pinned_cpu) else {
            bail!(
                "placement {} needs more CPUs than are available",
                placement.name()
            );
        };
        let params = Params {
            method,
            placement,
            chunk_size: chunk,
            read_size: o.read_size.unwrap_or(chunk),
            pipe_size_requested: cap.label(),
            total: o.total,
            writer_cpus: wc.clone(),
            reader_cpus: rc.clone(),
            pipe_size: None,
        };
        let missing = [
            (method == Method::VmspliceSplice, &vmsplice),
            (matches!(cap, Capacity::Bytes(_)), &resize),
            (placement != Placement::Any, &pinning),
        ];
        if let Some((_, Err(reason))) =
            missing.iter().find(|(applies, r)| *applies && r.is_err())
        {
            plan.unsupported(case, params, reason.clone());
            continue;
        }
        let row = Row {
            range: o.pass_range(chunk, cap),
            spec: Spec {
                method,
                chunk,
                read_size: o.read_size.unwrap_or(chunk),
                total: o.total,
                capacity: cap.request(),
                writer_cpus: wc,
                reader_cpus: rc,
                checked_reader: false,
                corrupt: o.corrupt,
            },
            verified: false,
            last: Vec::new(),
            capacity: None,
            writer_calls: 0,
            reader_calls: 0,
            bytes: 0,
            pass_total: 0,
        };
        plan.ready(case, params, row);
    }
    Ok(plan)
}


impl Probe for PipeProbe {
    fn time_limit(&self) -> Option<std::time::Duration> {
        self.opts.time_limit
    }

    fn kind(&self) -> &'static dyn ProbeKind {
        &Kind
    }

    fn case_names(&self) -> Vec<String> {
        self.opts.cases().map(case_name).collect()
    }

    fn pass_bytes(&self) -> Vec<Option<(u64, u64)>> {
        let o = &self.opts;
        o.cases()
            .map(|(_, _, cap, chunk)| {
                Some(
                    o.pass_range(chunk, cap)
                        .map_or((o.total, o.total), |(lo, hi)| (lo * chunk, hi * chunk)),
                )
            })
            .collect()
    }

    fn validate(&self, env: &Environment, _scratch: &Scratch) -> Result<()> {
        let o = &self.opts;
        if o.chunk_sizes.is_empty()
            || o.capacities.is_empty()
            || o.methods.is_empty()
            || o.placements.is_empty()
        {
            return usage(
                "nothing to measure: an axis (--sizes, --pipe-size, --method, --placement) is empty",
            );
        }
        for &s in o.chunk_sizes.iter().chain(o.read_size.iter()) {
            if s == 0 || s > MAX_CHUNK {
                return usage(format!("chunk size {s} B is out of range: 1 B … 1 GiB"));
            }
        }
        let max_chunk = o.chunk_sizes.iter().copied().max().unwrap_or(0);
        if o.total < max_chunk {
            return usage(format!(
                "--total {} is smaller than one chunk of {}",
                format_size(o.total),
                format_size(max_chunk)
            ));
        }
        let avail = crate::sys::machine::memory_available();
        let need = 3 * max_chunk + o.read_size.unwrap_or(max_chunk);
        if avail > 0 && need > avail / 2 {
            return usage(format!(
                "chunks of {} need about {} of buffers; only {} of memory is available",
                format_size(max_chunk),
                format_size(need),
                format_size(avail)
            ));
        }
        if let (true, Some(cpu)) = (o.placements.contains(&Placement::Split), env.pinned_cpu) {
            return usage(format!(
                "--cpu {cpu} pins writer and reader to one CPU, which conflicts with --placement split (two CPUs); drop one of them"
            ));
        }
        if o.placements.contains(&Placement::Split) && env.logical_cpus < 2 {
            return usage("--placement split needs two CPUs; this machine has one");
        }
        for c in &o.capacities {
            let Capacity::Bytes(b) = *c else { continue };
            match transfer::data_pipe(Some(b)) {
                Ok((_, _, Some(granted))) if granted != b => crate::progress::note(&format!(
                    "--pipe-size {}: the kernel rounded it to {}; figures are for {}",
                    format_size(b),
                    format_size(granted),
                    format_size(granted)
                )),
                Ok(_) => {}
                // The OS cannot resize pipes: those rows are unsupported, not an error.
                Err(e)
                    if e.downcast_ref::<crate::sys::calls::SysError>()
                        .is_some_and(|s| s.is_missing()) => {}
                Err(e) => {
                    let max = env.pipe_max_size.map_or("unknown".into(), format_size);
                    return usage(format!(
                        "--pipe-size {}: {e} (/proc/sys/fs/pipe-max-size is {max}; larger needs CAP_SYS_RESOURCE)",
                        format_size(b)
                    ));
                }
            }
        }
        Ok(())
    }

    fn beyond_edges(&self, rows: &[Measurement]) -> Option<Box<dyn Probe>> {
        let refs: Vec<&Measurement> = rows.iter().collect();
        let typed = crate::present::with_params::<Params>(&refs);
        let pts: Vec<((Method, Placement, &str), u64, &Measurement)> = typed
            .iter()
            .map(|(m, p)| {
                let key = (p.method, p.placement, p.pipe_size_requested.as_str());
                (key, p.chunk_size, *m)
            })
            .collect();
        // The default sweep's powers of four, 1 KiB … 256 MiB.
        let sizes = super::sweep::beyond_edges(&pts, 4, (1 << 10, 256 << 20));
        (!sizes.is_empty()).then(|| {
            Box::new(PipeProbe::new(Options {
                chunk_sizes: sizes,
                ..self.opts.clone()
            })) as Box<dyn Probe>
        })
    }

    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
        let o = &self.opts;
        let plan = plan(o, ctx)?;
        let fds_before = crate::sys::calls::open_fds();
        let name = Kind.name();
        let out = ctx.run_plan(name, plan, |case, mut params, row, s| {
            params.pipe_size = row.capacity;
            params.total = row.pass_total;
            let bytes_per_iter = match row.range {
                Some(_) => row.spec.chunk,
                None => o.total,
            };
            let mut m = Measurement::from_sampled(
                name,
                case,
                params,
                Metric::Throughput {
                    bytes_per_iter: bytes_per_iter as f64,
                },
                s,
                &ctx.overhead,
                method_note(row.spec.method, o.read_size),
            )?;
            let gib = row.bytes as f64 / (1u64 << 30) as f64;
            m.derived = to_map(&Derived {
                s_per_sample: Some(row.pass_total as f64 / m.median),
                writer_calls_per_gib: Some(row.writer_calls as f64 / gib),
                reader_calls_per_gib: Some(row.reader_calls as f64 / gib),
            });
            Ok(m)
        });
        // Every pipe end and child is released whether the rows succeeded or not.
        let leaked = crate::sys::calls::open_fds().saturating_sub(fds_before);
        if leaked > 0 {
            bail!("the pipe probe leaked {leaked} file descriptors");
        }
        out
    }
}

/// Whether the pipe capacity can be set here (F_SETPIPE_SZ on a fresh pipe, to the
/// smallest size: granted as is or rounded up).
fn resize_support() -> Result<(), String> {
    let (_r, w) = crate::sys::pipes::pipe().map_err(|e| e.to_string())?;
    crate::sys::pipes::set_capacity(&w, crate::sys::calls::page_size())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Whether vmsplice works here: one byte into a fresh pipe.
fn vmsplice_support() -> Result<(), String> {
    let (_r, w, _) = transfer::data_pipe(None).map_err(|e| format!("{e:#}"))?;
    match crate::sys::pipes::vmsplice(&w, b"x") {
        Ok(1) => Ok(()),
        Ok(n) => Err(format!("vmsplice queued {n} of 1 bytes")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes_are_powers_of_four_or_two() {
        assert_eq!(
            Options::for_scale(Scale::Default).chunk_sizes,
            default_sizes(false)
        );
        let v = default_sizes(false);
        assert_eq!(v.first(), Some(&1024));
        assert_eq!(v.last(), Some(&(256 << 20)));
        assert_eq!(v.len(), 10);
        assert_eq!(default_sizes(true).len(), 19);
    }

    #[test]
    fn a_fitted_pass_reaches_steady_state_and_stops_at_the_seed_total() {
        let o = Options::for_scale(Scale::Default);
        // 1 KiB chunks in a default pipe: at least 1 MiB (four 64 KiB capacities are
        // less), at most 1 GiB.
        assert_eq!(o.pass_range(1024, Capacity::Default), Some((1024, 1 << 20)));
        // A 1 MiB pipe: four capacities.
        assert_eq!(
            o.pass_range(4096, Capacity::Bytes(1 << 20)),
            Some((1024, 1 << 18))
        );
        // 16 MiB chunks (256 capacities): one suffices; 1 MiB chunks: three.
        assert_eq!(o.pass_range(16 << 20, Capacity::Default), Some((1, 64)));
        assert_eq!(o.pass_range(1 << 20, Capacity::Default), Some((3, 1024)));
        assert_eq!(
            o.pass_range(1 << 20, Capacity::Bytes(1 << 20)),
            Some((4, 1024))
        );
        // --total fixes the pass.
        let fixed = Options { fit: false, ..o };
        assert_eq!(fixed.pass_range(1024, Capacity::Default), None);
        // A maximum below the minimum gives the minimum.
        let small = Options {
            total: 1 << 20,
            ..Options::for_scale(Scale::Default)
        };
        assert_eq!(small.pass_range(256 << 10, Capacity::Default), Some((4, 4)));
    }

    #[test]
    fn placements_pick_cpus() {
        let all = [0, 1, 2];
        assert_eq!(
            Placement::Any.cpus(&all, None),
            Some((all.to_vec(), all.to_vec()))
        );
        assert_eq!(
            Placement::Same.cpus(&all, Some(2)),
            Some((vec![2], vec![2]))
        );
        assert_eq!(Placement::Split.cpus(&all, None), Some((vec![0], vec![1])));
        assert_eq!(Placement::Split.cpus(&[3], None), None);
    }

    #[test]
    fn capacities_parse() {
        assert_eq!(Capacity::parse("default"), Ok(Capacity::Default));
        assert_eq!(Capacity::parse("1m"), Ok(Capacity::Bytes(1 << 20)));
        assert!(Capacity::parse("0").is_err());
        assert_eq!(Capacity::Bytes(1 << 20).label(), "1MiB");
    }
}
