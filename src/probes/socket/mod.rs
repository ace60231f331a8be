//! Sockets, in seed 002's shape: throughput and context switches versus chunk size,
//! family, method, socket buffers and CPU placement, so that `trace` can price a
//! program's network I/O.
//!
//! Every row pushes a stamped stream from a writer process to a reader process through
//! a connected pair this probe makes (loopback only: AF_UNIX pairs, TCP and UDP on
//! 127.0.0.1 and ::1; see [`crate::sys::sockets`]) and reports bytes/s with each
//! process's rusage, ns per call on each side, TCP segments and UDP losses. Rows are
//! sampled round-robin by the harness, so drift hits every row alike.

pub mod ends;
mod present;
mod row;
use row::*;
pub mod transfer;

use super::{Context, Plan, Probe, ProbeKind, Scale};
use crate::advice::Recommendation;
use crate::error::usage;
use crate::harness::{External, Workload};
use crate::interrupt;
use crate::names::{Named, named_enum};
use crate::present::{Grid, Plot, Style};
use crate::results::{Measurement, Metric, Run, SetupTime, Unit, measurement::to_map};
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use crate::sys::sockets;
use crate::units::{format_size, size_label};
use anyhow::{Result, bail};
use ends::Shape;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::rc::Rc;
use transfer::{Connection, Outcome, Spec, Warmed};

pub use super::pipe::Placement;
/// A socket buffer: the kernel's default (with autotuning), or an SO_SNDBUF/SO_RCVBUF
/// request in bytes (`default` or a size, as a pipe's capacity).
pub use super::pipe::Capacity as Buffer;

/// Largest chunk accepted.
pub const MAX_CHUNK: u64 = 1 << 30;

/// The least a file method's file holds: 64 MiB, and twice the largest CPU cache, so
/// that its pages come from memory as a served file's do, not from the CPU's cache
/// (sendfile from a 4 MiB file here ran ×1.3 faster than from a 100 MiB one).
const FILE_MIN: u64 = 64 << 20;

/// The file's name in the scratch directory, removed after the rows that send it (a
/// sweep extended past its edge makes it again).
const FILE_NAME: &str = "socket.dat";

named_enum! {
    /// The socket family. Names are a contract (`--family`, JSON).
    pub enum Family as "socket family" {
        /// AF_UNIX stream (socketpair).
        Unix = "unix",
        /// TCP over loopback.
        Tcp = "tcp",
        /// AF_UNIX datagrams (socketpair).
        UnixDgram = "unix-dgram",
        /// UDP over loopback.
        Udp = "udp",
    }
}

impl Family {
    /// Whether a chunk is one datagram.
    pub fn datagram(self) -> bool {
        matches!(self, Family::UnixDgram | Family::Udp)
    }

    /// Whether the family has an IP address (and an `--ip` axis).
    pub fn ip(self) -> bool {
        matches!(self, Family::Tcp | Family::Udp)
    }
}

named_enum! {
    /// How bytes enter and leave the socket. Names are a contract (`--method`, JSON).
    pub enum Method as "socket method" {
        /// write(2) and read(2).
        WriteRead = "write-read",
        /// send(2) and recv(2).
        SendRecv = "send-recv",
        /// sendmsg(2) and recvmsg(2), four iovecs each.
        SendmsgRecvmsg = "sendmsg-recvmsg",
        /// sendfile(2) from a page-cache file; the reader read(2)s.
        Sendfile = "sendfile",
        /// splice(2) from a page-cache file into a pipe, and from the pipe into the socket.
        Splice = "splice",
        /// send(2) with MSG_ZEROCOPY, its completions reaped; the reader recv(2)s.
        Zerocopy = "zerocopy",
    }
}

impl Method {
    /// Whether the writer sends a file rather than its memory.
    pub fn from_file(self) -> bool {
        matches!(self, Method::Sendfile | Method::Splice)
    }
}

named_enum! {
    /// The loopback address of an IP family. Names are a contract (`--ip`).
    pub enum Ip as "address" {
        /// 127.0.0.1.
        V4 = "v4",
        /// ::1.
        V6 = "v6",
    }
}

impl Ip {
    fn address(self) -> &'static str {
        match self {
            Ip::V4 => "127.0.0.1",
            Ip::V6 => "::1",
        }
    }
}

named_enum! {
    /// TCP_NODELAY on the writer. Names are a contract (`--nodelay`).
    pub enum Nodelay as "nodelay" {
        /// Nagle's algorithm on (the kernel's default).
        Off = "off",
        /// TCP_NODELAY set.
        On = "on",
    }
}

/// Options of `ioprobe socket`.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long these options may take when no `--time-limit` is given.
    pub time_limit: Option<std::time::Duration>,
    pub chunk_sizes: Vec<u64>,
    pub families: Vec<Family>,
    pub ips: Vec<Ip>,
    pub methods: Vec<Method>,
    pub placements: Vec<Placement>,
    pub sndbufs: Vec<Buffer>,
    pub rcvbufs: Vec<Buffer>,
    pub nodelay: Vec<Nodelay>,
    /// Bytes per sample: the most a fitted pass moves, or every pass when not `fit`.
    pub total: u64,
    /// Fit each row's pass to the harness's pass time; false when `--total` fixes it.
    pub fit: bool,
    /// The defaults' economy: variants (::1, a buffer asked for, TCP_NODELAY) are
    /// measured with write-read only, and TCP_NODELAY at chunks of 16 KiB or less.
    pub lean: bool,
    /// Test hook (IOPROBE_FAULT=socket-corrupt): the writer corrupts a stamp.
    pub corrupt: bool,
    /// A TCP row's samples per connection ([`TCP_SAMPLES_PER_CONNECTION`]; fewer past
    /// the sweep's edges, where a row takes its few samples alone).
    pub samples_per_connection: usize,
}

/// How long the defaults at `scale` may take with no `--time-limit`.
fn time_limit(scale: Scale) -> Option<std::time::Duration> {
    let s = std::time::Duration::from_secs;
    match scale {
        Scale::Quick => Some(s(15)),
        Scale::Default => Some(s(60)),
        Scale::Run => Some(s(8)),
        Scale::Thorough => None,
    }
}

impl Options {
    /// The defaults: chunks of 1 KiB … 16 MiB in powers of 4 (of 2 when thorough),
    /// every family, method and address, the default buffers and 4 MiB ones, Nagle on
    /// and off, both processes on one CPU (every placement when thorough), passes fitted
    /// with at most 1 GiB. Quick: the default buffers and Nagle only, at most 256 MiB.
    /// `ioprobe run`: unix and TCP, write-read and sendfile, five chunks 4 KiB … 1 MiB.
    pub fn for_scale(scale: Scale) -> Options {
        let step = if scale == Scale::Thorough { 1 } else { 2 };
        let mut o = Options {
            time_limit: time_limit(scale),
            chunk_sizes: (10..=24).step_by(step).map(|p| 1u64 << p).collect(),
            families: Family::ALL.to_vec(),
            ips: Ip::ALL.to_vec(),
            methods: Method::ALL.to_vec(),
            // Pinned to one CPU, as pipe's quick scale: unpinned short passes swing
            // with where the scheduler puts the two processes.
            placements: vec![Placement::Same],
            sndbufs: vec![Buffer::Default, Buffer::Bytes(4 << 20)],
            rcvbufs: vec![Buffer::Default, Buffer::Bytes(4 << 20)],
            nodelay: Nodelay::ALL.to_vec(),
            total: 1 << 30,
            fit: true,
            lean: scale != Scale::Thorough,
            corrupt: crate::fault::enabled("socket-corrupt"),
            samples_per_connection: TCP_SAMPLES_PER_CONNECTION,
        };
        match scale {
            Scale::Thorough => o.placements = Placement::ALL.to_vec(),
            Scale::Quick => {
                o.sndbufs = vec![Buffer::Default];
                o.rcvbufs = vec![Buffer::Default];
                o.nodelay = vec![Nodelay::Off];
                o.ips = vec![Ip::V4];
                o.total = 256 << 20;
            }
            Scale::Run => {
                o.chunk_sizes = vec![4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];
                o.families = vec![Family::Unix, Family::Tcp];
                o.methods = vec![Method::WriteRead, Method::Sendfile];
                o.sndbufs = vec![Buffer::Default];
                o.rcvbufs = vec![Buffer::Default];
                o.nodelay = vec![Nodelay::Off];
                o.ips = vec![Ip::V4];
                o.total = 64 << 20;
            }
            Scale::Default => {}
        }
        o
    }

    /// A row's pass in chunks: (fewest, most) when fitted, None when fixed at `total`.
    /// The fewest: 1 MiB and three chunks (one for chunks of 4 MiB and more, each
    /// already hundreds of exchanges through the socket's buffer).
    fn pass_range(&self, chunk: u64) -> Option<(u64, u64)> {
        if !self.fit {
            return None;
        }
        let chunks = if chunk >= 4 << 20 { 1 } else { 3 };
        let lo = (chunks * chunk).max(1 << 20).div_ceil(chunk);
        Some((lo, (self.total / chunk).max(lo)))
    }

    /// Every case, in plan order.
    fn cases(&self) -> Vec<Case> {
        let mut out = Vec::new();
        for &family in &self.families {
            let ips: &[Ip] = if family.ip() { &self.ips } else { &[Ip::V4] };
            let nodelay: &[Nodelay] = if family == Family::Tcp {
                &self.nodelay
            } else {
                &[Nodelay::Off]
            };
            for &ip in ips {
                for &method in &self.methods {
                    for &placement in &self.placements {
                        for &snd in &self.sndbufs {
                            for &rcv in &self.rcvbufs {
                                for &nd in nodelay {
                                    for &chunk in &self.chunk_sizes {
                                        let c = Case {
                                            family,
                                            ip: family.ip().then_some(ip),
                                            method,
                                            placement,
                                            snd,
                                            rcv,
                                            nodelay: (family == Family::Tcp)
                                                .then_some(nd == Nodelay::On),
                                            chunk,
                                        };
                                        // sendfile and splice move a byte stream:
                                        // a datagram family has none.
                                        let stream = !(family.datagram() && method.from_file());
                                        if stream && (!self.lean || c.in_lean_sweep()) {
                                            out.push(c);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// One row's coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Case {
    family: Family,
    ip: Option<Ip>,
    method: Method,
    placement: Placement,
    snd: Buffer,
    rcv: Buffer,
    nodelay: Option<bool>,
    chunk: u64,
}

impl Case {
    /// Whether the defaults' economy keeps this case: the base (v4, default buffers,
    /// Nagle on) of every method, variants with write-read only, TCP_NODELAY at small
    /// chunks only, and a buffer asked for on both sides at once.
    fn in_lean_sweep(&self) -> bool {
        let variant = self.ip == Some(Ip::V6)
            || self.snd != Buffer::Default
            || self.rcv != Buffer::Default
            || self.nodelay == Some(true);
        let paired = (self.snd == Buffer::Default) == (self.rcv == Buffer::Default);
        let nagle_small = self.nodelay != Some(true) || self.chunk <= 16 << 10;
        // A UDP datagram holds 64 KiB less its headers; a unix one, the send buffer.
        let datagram_fits = !self.family.datagram() || self.chunk <= 64 << 10;
        (!variant || self.method == Method::WriteRead) && paired && nagle_small && datagram_fits
    }

    /// family[-v6]/method/placement/sndbuf+rcvbuf[/nodelay]/chunk.
    fn name(&self) -> String {
        let at = match self.ip {
            Some(Ip::V6) => "-v6",
            _ => "",
        };
        let nd = if self.nodelay == Some(true) {
            "/nodelay"
        } else {
            ""
        };
        format!(
            "{}{at}/{}/{}/{}+{}{nd}/{}",
            self.family.name(),
            self.method.name(),
            self.placement.name(),
            self.snd.label(),
            self.rcv.label(),
            size_label(self.chunk)
        )
    }
}

/// The params of a socket row. Keys are a contract (JSON `params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub family: Family,
    /// The loopback address (IP families only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    pub method: Method,
    pub placement: Placement,
    pub chunk_size: u64,
    /// `default` or the SO_SNDBUF / SO_RCVBUF request as a size label.
    pub sndbuf_requested: String,
    pub rcvbuf_requested: String,
    /// TCP_NODELAY on the writer (TCP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelay: Option<bool>,
    pub total: u64,
    /// CPUs each process was allowed (observed).
    pub writer_cpus: Vec<usize>,
    pub reader_cpus: Vec<usize>,
    /// SO_SNDBUF of the writer's socket and SO_RCVBUF of the reader's as read back
    /// (observed; Linux reports twice the request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf: Option<u64>,
    /// Bytes of the page-cache file a file method sends (the stream wraps around it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
}

impl super::RowParams for Params {
    fn check(&self) -> std::result::Result<(), String> {
        use super::size_param;
        size_param("chunk_size", self.chunk_size, 1)?;
        size_param("total", self.total, 1)?;
        for (k, v) in [
            ("sndbuf", self.sndbuf),
            ("rcvbuf", self.rcvbuf),
            ("file_size", self.file_size),
        ] {
            v.map_or(Ok(()), |b| size_param(k, b, 1))?;
        }
        Ok(())
    }
}

impl Params {
    /// Whether the row runs with the kernel's defaults (buffers, Nagle, 127.0.0.1).
    pub fn is_base(&self) -> bool {
        self.sndbuf_requested == "default"
            && self.rcvbuf_requested == "default"
            && self.nodelay != Some(true)
            && self.address.as_deref() != Some("::1")
    }
}

/// The socket curve in `run`: (chunk size, bytes/s) of the measured base rows (kernel
/// buffers, Nagle on, 127.0.0.1) of `family` and `method`, best over placements.
pub fn curve(run: &Run, family: Family, method: Method) -> Vec<(u64, f64)> {
    super::best_per_size(
        super::measured_rows::<Params>(run, Kind.name())
            .into_iter()
            .filter(|(_, p)| p.family == family && p.method == method && p.is_base())
            .map(|(m, p)| (p.chunk_size, m.median)),
    )
}

/// How far a rerun moves a row of the family named `name` here ([`present::floor`]): a
/// TCP stream's 18%, 5% for the others (and for a name no family has).
pub fn rerun_floor(name: &str) -> f64 {
    Family::ALL
        .iter()
        .find(|f| f.name() == name)
        .map_or(crate::advice::RERUN_NOISE_PASS, |&f| present::floor(f))
}

/// The socket curve with buffers asked for on both sides, in `run`: (the largest
/// SO_SNDBUF granted, its (chunk size, bytes/s) points) of the measured write-read rows
/// of `family` at 127.0.0.1 with Nagle on; None when no such row was measured.
pub fn buffer_curve(run: &Run, family: Family) -> Option<(u64, Vec<(u64, f64)>)> {
    let rows: Vec<(&Measurement, Params)> = super::measured_rows::<Params>(run, Kind.name())
        .into_iter()
        .filter(|(_, p)| {
            p.family == family
                && p.method == Method::WriteRead
                && p.sndbuf_requested != "default"
                && p.rcvbuf_requested != "default"
                && p.nodelay != Some(true)
                && p.address.as_deref() != Some("::1")
        })
        .collect();
    let largest = rows.iter().filter_map(|(_, p)| p.sndbuf).max()?;
    let points = super::best_per_size(
        rows.iter()
            .filter(|(_, p)| p.sndbuf == Some(largest))
            .map(|(m, p)| (p.chunk_size, m.median)),
    );
    Some((largest, points))
}

/// The figures a socket row derives from its median and counts. Keys are a contract.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Derived {
    pub s_per_sample: Option<f64>,
    pub writer_calls_per_gib: Option<f64>,
    pub reader_calls_per_gib: Option<f64>,
    /// Wall time of a pass over the side's calls.
    pub writer_ns_per_call: Option<f64>,
    pub reader_ns_per_call: Option<f64>,
    /// TCP segments the writer sent per MiB (TCP_INFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments_per_mib: Option<f64>,
    /// Share of UDP datagrams the reader never got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_share: Option<f64>,
    /// Share of zerocopy sends the kernel copied after all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy_copied_share: Option<f64>,
    /// Byte streams: the warm-ups of their kept connections (a TCP row opens one every
    /// few samples; `connections` counts them), their own rate (a fresh connection's
    /// start), and 1 when every one's rate stopped rising (0: one ran out of time first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_settled: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_bytes_per_s: Option<f64>,
}

/// The socket probe, independent of options.
pub struct Kind;

impl ProbeKind for Kind {
    /// A socket row: its connection and its two processes set its regime.
    fn regime_rows(&self) -> bool {
        true
    }
    fn check_typed(&self, m: &Measurement) -> std::result::Result<(), String> {
        super::typed_params::<Params>(m).map(|_| ())
    }
    fn name(&self) -> &'static str {
        "socket"
    }
    fn observed_params(&self) -> &'static [&'static str] {
        &["sndbuf", "rcvbuf", "writer_cpus", "reader_cpus", "total"]
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
        Box::new(SocketProbe::new(Options::for_scale(scale)))
    }
}

/// The socket probe.
pub struct SocketProbe {
    opts: Options,
}

impl SocketProbe {
    pub fn new(opts: Options) -> Self {
        SocketProbe { opts }
    }
}

/// Every row of `o`: ready, or unsupported where this machine cannot run it.
fn plan(o: &Options, ctx: &Context) -> Result<Plan<Params, Row>> {
    let mut support = Support::new();
    let mut file: Option<(Rc<rustix::fd::OwnedFd>, u64)> = None;
    let mut plan = Plan::new(Unit::BytesPerSec);
    for c in o.cases() {
        let Some((wc, rc)) = c.placement.cpus(ctx.cpus, ctx.env.pinned_cpu) else {
            bail!(
                "placement {} needs more CPUs than are available",
                c.placement.name()
            );
        };
        let mut params = Params {
            family: c.family,
            address: c.ip.map(|i| i.address().to_string()),
            method: c.method,
            placement: c.placement,
            chunk_size: c.chunk,
            sndbuf_requested: c.snd.label(),
            rcvbuf_requested: c.rcv.label(),
            nodelay: c.nodelay,
            total: o.total,
            writer_cpus: wc.clone(),
            reader_cpus: rc.clone(),
            sndbuf: None,
            rcvbuf: None,
            file_size: None,
        };
        let mut spec = Spec {
            shape: Shape {
                family: c.family,
                method: c.method,
                chunk: c.chunk,
                total: o.total,
                wrap: None,
            },
            v6: c.ip == Some(Ip::V6),
            tuning: sockets::Tuning {
                sndbuf: c.snd.request(),
                rcvbuf: c.rcv.request(),
                nodelay: c.nodelay == Some(true),
            },
            writer_cpus: wc,
            reader_cpus: rc,
            full_check: false,
            corrupt: o.corrupt,
        };
        if let Some(reason) = support.reason(&c, &spec) {
            plan.unsupported(c.name(), params, reason);
            continue;
        }
        let file = if c.method.from_file() {
            let (fd, len) = match &file {
                Some(f) => f.clone(),
                None => file.insert(stream_file(ctx, o)?).clone(),
            };
            spec.shape.wrap = Some(len);
            params.file_size = Some(len);
            Some(fd)
        } else {
            None
        };
        let row = Row::new(spec, file, o.pass_range(c.chunk))
            .warmed_at_least(transfer::warm_least(ctx.harness.warmup));
        plan.ready(c.name(), params, row.per_connection(o.samples_per_connection));
    }
    Ok(plan)
}

impl Probe for SocketProbe {
    fn time_limit(&self) -> Option<std::time::Duration> {
        self.opts.time_limit
    }

    fn kind(&self) -> &'static dyn ProbeKind {
        &Kind
    }

    fn case_names(&self) -> Vec<String> {
        self.opts.cases().iter().map(Case::name).collect()
    }

    fn pass_bytes(&self) -> Vec<Option<(u64, u64)>> {
        let o = &self.opts;
        o.cases()
            .iter()
            .map(|c| {
                Some(
                    o.pass_range(c.chunk)
                        .map_or((o.total, o.total), |(lo, hi)| (lo * c.chunk, hi * c.chunk)),
                )
            })
            .collect()
    }

    fn setup_guesses(&self) -> Vec<SetupTime> {
        self.opts.cases().iter().map(transfer::setup_guess).collect()
    }

    fn validate(&self, env: &Environment, _scratch: &Scratch) -> Result<()> {
        let o = &self.opts;
        if o.chunk_sizes.is_empty()
            || o.families.is_empty()
            || o.methods.is_empty()
            || o.placements.is_empty()
            || o.ips.is_empty()
            || o.sndbufs.is_empty()
            || o.rcvbufs.is_empty()
            || o.nodelay.is_empty()
        {
            return usage(
                "nothing to measure: an axis (--sizes, --family, --method, --placement, --ip, --sndbuf, --rcvbuf, --nodelay) is empty",
            );
        }
        let min = if o.families.iter().any(|f| f.datagram()) {
            16
        } else {
            1
        };
        for &s in &o.chunk_sizes {
            if s < min || s > MAX_CHUNK {
                return usage(format!(
                    "chunk size {s} B is out of range: {min} B … 1 GiB{}",
                    if min > 1 {
                        " (a datagram carries a 16-byte stamp at least)"
                    } else {
                        ""
                    }
                ));
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
        let need = 36 * max_chunk.min(1 << 20) + 2 * max_chunk;
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
        Ok(())
    }

    fn beyond_edges(&self, rows: &[Measurement]) -> Option<Box<dyn Probe>> {
        let refs: Vec<&Measurement> = rows.iter().collect();
        let typed = crate::present::with_params::<Params>(&refs);
        let pts: Vec<((Family, Method, bool), u64, &Measurement)> = typed
            .iter()
            .filter(|(_, p)| p.is_base())
            .map(|(m, p)| ((p.family, p.method, p.is_base()), p.chunk_size, *m))
            .collect();
        let sizes = super::sweep::beyond_edges(&pts, 4, (1 << 10, 16 << 20));
        (!sizes.is_empty()).then(|| {
            Box::new(SocketProbe::new(Options {
                chunk_sizes: sizes,
                samples_per_connection: EDGE_SAMPLES_PER_CONNECTION,
                ..self.opts.clone()
            })) as Box<dyn Probe>
        })
    }

    fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
        let o = &self.opts;
        let fds_before = crate::sys::calls::open_fds();
        // Every byte-stream row keeps its connection's two processes, and a channel to
        // each, for the whole rotation.
        let _raised = crate::sys::process::raise_open_files();
        let name = Kind.name();
        let out = plan(o, ctx).and_then(|plan| {
            ctx.run_plan(name, plan, |case, mut params, row, s| {
                params.sndbuf = row.granted.map(|g| g.0);
                params.rcvbuf = row.granted.map(|g| g.1);
                params.total = row.pass_total;
                let bytes_per_iter = match row.range {
                    Some(_) => row.spec.shape.chunk,
                    None => o.total,
                };
                let c = Case {
                    family: params.family,
                    ip: None,
                    method: params.method,
                    placement: params.placement,
                    snd: Buffer::Default,
                    rcv: Buffer::Default,
                    nodelay: params.nodelay,
                    chunk: params.chunk_size,
                };
                let family = params.family;
                let method = params.method;
                let mut m = Measurement::from_sampled(
                    name,
                    case,
                    params,
                    Metric::Throughput {
                        bytes_per_iter: bytes_per_iter as f64,
                    },
                    s,
                    &ctx.overhead,
                    method_note(&c, o.samples_per_connection),
                )?;
                m.derived = to_map(&derived(row, m.median, family, method));
                Ok(m)
            })
        });
        // The rows (and their descriptors) are gone: the file goes too.
        let file = ctx.scratch.path().join(FILE_NAME);
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(anyhow::Error::new(e).context(format!("removing {}", file.display())));
            }
            _ => {}
        }
        let leaked = crate::sys::calls::open_fds().saturating_sub(fds_before);
        if leaked > 0 && out.is_ok() {
            bail!("the socket probe leaked {leaked} file descriptors");
        }
        out
    }
}

fn derived(row: &Row, median: f64, family: Family, method: Method) -> Derived {
    let gib = row.received.max(1) as f64 / (1u64 << 30) as f64;
    let ns_total: f64 = row
        .last
        .iter()
        .map(|o| o.elapsed_ns as f64)
        .sum::<f64>()
        .max(1.0);
    let (wc, rc): (u64, u64) = row.last.iter().fold((0, 0), |(a, b), o| {
        (a + o.writer.0.calls, b + o.reader.0.calls)
    });
    Derived {
        s_per_sample: Some(row.pass_total as f64 / median),
        writer_calls_per_gib: Some(row.writer_calls as f64 / gib),
        reader_calls_per_gib: Some(row.reader_calls as f64 / gib),
        writer_ns_per_call: (wc > 0).then(|| ns_total / wc as f64),
        reader_ns_per_call: (rc > 0).then(|| ns_total / rc as f64),
        segments_per_mib: (family == Family::Tcp && row.segments > 0)
            .then(|| row.segments as f64 / (row.sent as f64 / (1u64 << 20) as f64)),
        lost_share: (family == Family::Udp)
            .then(|| row.lost as f64 / row.chunks.max(1) as f64),
        zerocopy_copied_share: (method == Method::Zerocopy).then(|| {
            let sends = row.writer_calls.max(1) as f64;
            (row.copied as f64 / sends).min(1.0)
        }),
        connections: row.warmed.map(|_| f64::from(row.connections)),
        warmup_s: row.warmed.map(|w| w.ns as f64 / 1e9),
        warmup_bytes: row.warmed.map(|w| w.bytes as f64),
        warmup_settled: row.warmed.map(|w| f64::from(u8::from(w.settled))),
        start_bytes_per_s: row
            .warmed
            .map(|w| w.bytes as f64 * 1e9 / w.ns.max(1) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lean_sweep_keeps_variants_to_write_read() {
        let o = Options::for_scale(Scale::Default);
        let cases = o.cases();
        assert!(cases.iter().all(Case::in_lean_sweep));
        // Every method's base at every size, for the stream families.
        for &m in Method::ALL {
            assert!(
                cases
                    .iter()
                    .any(|c| c.family == Family::Tcp && c.method == m && c.chunk == 1 << 20)
            );
        }
        assert!(
            !cases
                .iter()
                .any(|c| c.method == Method::SendRecv && c.snd != Buffer::Default)
        );
        assert!(
            !cases
                .iter()
                .any(|c| c.nodelay == Some(true) && c.chunk > 16 << 10)
        );
        let thorough = Options::for_scale(Scale::Thorough).cases();
        assert!(thorough.len() > cases.len());
        let names: std::collections::BTreeSet<String> = cases.iter().map(Case::name).collect();
        assert_eq!(names.len(), cases.len(), "case names are unique");
    }

}
