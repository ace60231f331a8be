//! Pricing a profile with this machine's measured figures: the read, write and pipe
//! probes' throughput by request size, the syscalls probe's cost per call, the write
//! probe's fsync cost and the copy probe's copy_file_range throughput, each from the
//! newest saved run on this host. Traced durations are never used: tracing inflates them.

pub use super::claims::{Alternative, Claim};
use super::profile::{Kind, OpStats, Profile, Target};
use super::relays::{Relays, relayed_writes};
use crate::names::Named;
use crate::probes::syscalls::Case;
use crate::results::Run;
use crate::units::{format_ns, format_size};
use serde::Serialize;
use std::collections::BTreeMap;

/// Throughput (bytes/s) by request size, sorted by size.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Curve(pub Vec<(u64, f64)>);

impl Curve {
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
#[derive(Debug, Clone, Default, Serialize)]
pub struct SocketCurves {
    pub write_read: Curve,
    pub sendfile: Curve,
    /// write-read with larger buffers asked for on both sides: the SO_SNDBUF granted
    /// and its curve.
    pub large_buffer: Option<(u64, Curve)>,
}

/// The figures a profile is priced with, and the runs they came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub read: Curve,
    pub write: Curve,
    pub pipe: Curve,
    /// The pipe curve at the larger capacity measured, and that capacity.
    pub pipe_large: Option<(u64, Curve)>,
    /// The socket probe's curves per family (unix, tcp, unix-dgram, udp): write-read
    /// and sendfile, kernel buffers.
    pub sockets: BTreeMap<String, SocketCurves>,
    /// Nanoseconds per call of the syscalls probe's cases (null, pread, lseek_read, …).
    pub calls_ns: BTreeMap<String, f64>,
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
        use crate::probes::{copy, pipe, read, socket, syscalls, write};
        let mut f = Figures::default();
        let newest = |probe: &str| {
            runs.iter()
                .rev()
                .find(|(_, r)| r.of_probe(probe).any(|m| m.is_ok()))
        };
        if let Some((id, r)) = newest("read") {
            f.read = Curve(read::curve(r, read::Method::Read));
            f.sources.push(("read".into(), *id));
        }
        if let Some((id, r)) = newest("write") {
            let by = |d| Curve(write::curve(r, write::Method::Write, d));
            f.write = by(write::Durability::None);
            // A small durable write (O_DSYNC, smallest block) less the same write to the
            // page cache: what one fsync after a small write adds. fsync-per-pass rows
            // would price the write-back of a whole file instead.
            let dsync = by(write::Durability::Dsync);
            if let Some(&(b, rate)) = dsync.0.first()
                && let Some(none) = f.write.rate(b)
            {
                let extra = b as f64 / rate - b as f64 / none;
                f.fsync_s = (extra > 0.0).then_some(extra);
                f.fsync_measured_at = f.fsync_s.map(|_| r.started_at.clone());
            }
            f.sources.push(("write".into(), *id));
        }
        if let Some((id, r)) = newest("pipe") {
            let (method, placement) = (pipe::Method::WriteRead, pipe::Placement::Any);
            f.pipe = Curve(pipe::curve(r, method, placement, None));
            if let Some(cap) = pipe::largest_capacity(r, method, placement) {
                f.pipe_large = Some((cap, Curve(pipe::curve(r, method, placement, Some(cap)))));
            }
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
            for (case, ns) in syscalls::per_call(r) {
                f.calls_ns.insert(case.name().to_string(), ns);
            }
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

    /// Whether the figures that price most calls are here (read curve and call costs).
    pub fn enough(&self) -> bool {
        !self.read.0.is_empty() && self.ns(Case::Pread).is_some()
    }

    fn ns(&self, case: Case) -> Option<f64> {
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
    fn extra(&self, case: Case, base: Case) -> Option<f64> {
        Some(((self.ns(case)? - self.ns(base)?) * 1e-9).max(0.0))
    }
}

/// The rows of process `pid` on target `t`.
pub(super) fn rows_of(
    p: &Profile,
    pid: i32,
    t: usize,
) -> impl Iterator<Item = (&'static str, &OpStats)> {
    p.ops
        .range((pid, t, "")..)
        .take_while(move |&(&(q, x, _), _)| q == pid && x == t)
        .map(|(&(_, _, op), s)| (op, s))
}

/// `pid` as a `cat f | prog` relay from file `src` into pipe `dst`: its relay's priced
/// time and calls, when the relay is (nearly) all the data it moves (loading its
/// program and libraries reads a few KiB besides); None otherwise.
fn pipe_relay(
    p: &Profile,
    f: &Figures,
    pid: i32,
    src: usize,
    dst: usize,
) -> Option<(Option<f64>, u64)> {
    let rows: Vec<(usize, &'static str, &OpStats)> = p
        .ops
        .iter()
        .filter(|&(&(q, _, op), _)| q == pid && direction(op).is_some())
        .map(|(&(_, t, op), s)| (t, op, s))
        .collect();
    let relay = |&&(t, op, _): &&(usize, &'static str, &OpStats)| {
        (t == src && direction(op) == Some(true)) || (t == dst && direction(op) == Some(false))
    };
    let all: u64 = rows.iter().map(|r| r.2.bytes).sum();
    let moved: u64 = rows.iter().filter(relay).map(|r| r.2.bytes).sum();
    if moved * 10 < all * 9 {
        return None;
    }
    let time: Option<f64> = rows
        .iter()
        .filter(relay)
        .map(|&(t, op, s)| time_here(f, &p.targets[t], op, s, p.pipe_sizes.contains_key(&t)))
        .sum();
    Some((time, rows.iter().filter(relay).map(|r| r.2.calls).sum()))
}

/// Where the fsync price comes from, said with it: one measurement of this disk, at
/// that time (a disk busy with another process's writes costs several times more).
fn fsync_source(f: &Figures) -> String {
    match (f.fsync_s, f.sources.iter().find(|(p, _)| p == "write")) {
        (Some(c), Some((_, id))) => format!(
            " (an fsync priced at {}, as write run {id} measured this disk{}: a disk busy with other writes costs more; --figures picks another run)",
            format_ns(c * 1e9),
            match f.fsync_measured_at.as_deref() {
                // "2026-11-24T19:28:34Z" → "on 2026-11-24 at 19:28 UTC"
                Some(t) if t.len() >= 16 => format!(" on {} at {} UTC", &t[..10], &t[11..16]),
                _ => " then".into(),
            }
        ),
        _ => String::new(),
    }
}

/// Whether `op` moves data from the target (true) or to it (false); None: not data.
pub(super) fn direction(op: &str) -> Option<bool> {
    match op {
        "read" | "pread64" | "readv" | "preadv" | "preadv2" | "uring read" | "uring readv" => {
            Some(true)
        }
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" | "uring write"
        | "uring writev" => Some(false),
        // Socket data: one message per call, sizes known (the mmsg calls are not).
        "recvfrom" | "recvmsg" => Some(true),
        "sendto" | "sendmsg" => Some(false),
        _ => None,
    }
}

/// The throughput curve that prices data calls on a target of `kind` (a socket of
/// `family`, where the trace found it), and its name.
pub(super) fn curve_for<'f>(
    f: &'f Figures,
    (kind, family): (Kind, Option<&str>),
    reading: bool,
    large_pipe: bool,
) -> Option<(&'f Curve, &'static str)> {
    let c = match kind {
        Kind::File if reading => (&f.read, "read"),
        Kind::File => (&f.write, "write"),
        Kind::Socket if f.socket(family).is_some() => (&f.socket(family)?.0.write_read, "socket"),
        Kind::Pipe | Kind::Socket => match (&f.pipe_large, large_pipe) {
            (Some((_, c)), true) => (c, "pipe"),
            _ => (&f.pipe, "pipe"),
        },
        _ => return None,
    };
    (!c.0.0.is_empty()).then_some(c)
}

/// What the calls of one row would take here, in seconds (None: nothing prices them).
pub fn time_here(f: &Figures, t: &Target, op: &str, s: &OpStats, large_pipe: bool) -> Option<f64> {
    if let Some(reading) = direction(op) {
        if let Some((c, _)) = curve_for(f, (t.kind, t.family.as_deref()), reading, large_pipe)
            && s.bytes > 0
        {
            let size = s.typical_size().unwrap_or(s.bytes);
            return f.data_time(c, reading, s.bytes, s.calls, size);
        }
        return f.ns(Case::Null).map(|ns| s.calls as f64 * ns * 1e-9);
    }
    let per_call = match op {
        // lseek alone, as the syscalls probe measures it; older runs without that
        // case: what it adds to a read.
        "lseek" => f
            .ns(Case::Lseek)
            .map(|n| n * 1e-9)
            .or_else(|| f.extra(Case::LseekRead, Case::Pread)),
        "open" | "openat" | "openat2" | "creat" => f.extra(Case::OpenReadClose, Case::Pread),
        "close" => Some(0.0),
        "stat" => f.ns(Case::Stat).map(|n| n * 1e-9),
        "fstat" => f.ns(Case::Fstat).map(|n| n * 1e-9),
        "fsync" | "fdatasync" => f.fsync_s,
        _ => f.ns(Case::Null).map(|n| n * 1e-9),
    }?;
    Some(s.calls as f64 * per_call)
}

/// A pattern worth changing (or not), with what it costs here and what it would save.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: &'static str,
    pub pid: i32,
    pub process: String,
    pub target: String,
    /// The finding in one sentence, with its figures.
    pub text: String,
    pub time_s: Option<f64>,
    pub better_s: Option<f64>,
    pub saving_s: Option<f64>,
    /// The saving as a share of the run's work here (user CPU + priced calls).
    pub share: Option<f64>,
    /// False when the saving is under 1% of the run: it does not matter here.
    pub matters: bool,
    /// Other changes to calls this finding claimed first (not added to the savings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
    /// The sentence without its price, and the calls it would change.
    #[serde(skip)]
    pub what: String,
    #[serde(skip)]
    pub claims: Vec<Claim>,
}

pub(super) fn secs(s: f64) -> String {
    format_ns(s * 1e9)
}

/// Every finding of `p`, largest saving first, each call claimed by one finding only.
/// `work` is the run's work here (seconds), which savings are compared with. One rule
/// per method of [`Finder`].
pub fn findings(p: &Profile, f: &Figures, work: f64) -> Vec<Finding> {
    let mut x = Finder {
        p,
        f,
        relays: Relays::of(p),
        out: Vec::new(),
    };
    x.relay_groups();
    for (&(pid, t, op), s) in &p.ops {
        let Some(reading) = direction(op) else {
            continue;
        };
        if !reading && x.relays.dsts.contains(&(pid, t)) {
            continue; // priced with the reads it relays
        }
        if reading && x.relays.grouped.contains(&(pid, t)) {
            continue; // priced with its group (relay_groups)
        }
        for rule in Finder::PER_DATA_OPERATION {
            rule(&mut x, (pid, t, op), s, reading);
        }
    }
    for rule in Finder::WHOLE_RUN {
        rule(&mut x);
    }
    super::claims::settle(x.out, p, f, work)
}

/// The process's name as the report shows it.
pub(super) fn comm_of(p: &Profile, pid: i32) -> String {
    p.processes.get(&pid).map_or("?".into(), |x| x.comm.clone())
}

/// The findings being made: the profile, the figures, the relays, and the list.
pub(super) struct Finder<'a> {
    pub p: &'a Profile,
    pub f: &'a Figures,
    pub relays: Relays,
    out: Vec<Finding>,
}

/// A rule about one data operation: (process, target, operation), its stats, whether
/// it reads.
type DataRule<'a> = fn(&mut Finder<'a>, (i32, usize, &'static str), &OpStats, bool);

impl<'a> Finder<'a> {
    /// The rules run on every data operation, in order.
    const PER_DATA_OPERATION: [DataRule<'a>; 5] = [
        Self::small_requests,
        Self::lseek_then_io,
        Self::reread,
        Self::pipe_capacity,
        Self::socket_buffer,
    ];

    /// The rules run once over the whole profile, in order.
    const WHOLE_RUN: [fn(&mut Self); 5] = [
        Self::reopens,
        Self::stat_storms,
        Self::pipe_relays,
        Self::fsync_per_write,
        Self::read_write_copies,
    ];
}

impl Finder<'_> {
    /// Adds a finding: what it is, what it costs now and would cost done better
    /// (`priced`), and the calls it would change. Its price and share are settled once
    /// every rule has run ([`super::claims::settle`]).
    pub(super) fn push(
        &mut self,
        kind: &'static str,
        pid: i32,
        target: String,
        what: String,
        (time, better): (Option<f64>, Option<f64>),
        claims: Vec<Claim>,
    ) {
        self.out.push(Finding {
            kind,
            pid,
            process: comm_of(self.p, pid),
            target,
            text: String::new(),
            time_s: time,
            better_s: better,
            saving_s: None,
            share: None,
            matters: false,
            alternatives: Vec::new(),
            what,
            claims,
        });
    }

    /// The data rows of `pid` on `t` in one direction, as claims.
    fn data_rows(&self, pid: i32, t: usize, reading: bool) -> Vec<Claim> {
        rows_of(self.p, pid, t)
            .filter(|&(op, _)| direction(op) == Some(reading))
            .map(|(op, _)| Claim::Row(pid, t, op))
            .collect()
    }

    fn small_requests(
        &mut self,
        (pid, t, op): (i32, usize, &'static str),
        s: &OpStats,
        reading: bool,
    ) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        let large = p.pipe_sizes.contains_key(&t);
        // Small requests, priced with the curve for this kind of target.
        if let (Some((c, curve_name)), Some(size)) =
            (
                curve_for(f, (target.kind, target.family.as_deref()), reading, large),
                s.typical_size(),
            )
            && let Some(best) = c.best_size()
            // Enough bytes or calls for the size to matter at all (the share of the
            // run's work then says whether it does here).
            && (s.bytes >= 64 * 1024 || s.calls >= 1000)
            && s.calls >= 16
            && size < best
            && let calls_then = s.bytes.div_ceil(best)
            && let (Some(now), Some(then)) = (
                f.data_time(c, reading, s.bytes, s.calls, size),
                f.data_time(c, reading, s.bytes, calls_then, best),
            )
            && then < 0.97 * now
        {
            // The writes this process relays from here change with the reads.
            let (mut now, mut then) = (now, then);
            let mut relay = String::new();
            let mut claims = vec![Claim::Row(pid, t, op)];
            if reading {
                let (a, b, text, more) = relayed_writes(p, f, (pid, t), (size, best), &self.relays);
                (now, then, relay) = (now + a, then + b, text);
                claims.extend(more);
            }
            let how = if reading { "reads" } else { "writes" };
            let priced = match (target.kind, curve_name) {
                (Kind::Socket, "pipe") => {
                    " (priced with the pipe figures: no socket run saved)".to_string()
                }
                (Kind::Socket, _) => {
                    let used = f.socket(target.family.as_deref()).map_or("socket", |c| c.1);
                    format!(
                        " (priced with the loopback {used} figures{})",
                        match target.family.as_deref() {
                            None => ": its family is unknown".to_string(),
                            Some(fam) if fam != used => format!(": no {fam} figures saved"),
                            Some(_) => String::new(),
                        }
                    )
                }
                _ => String::new(),
            };
            self.push(
                "small_requests",
                pid,
                target.label(),
                format!(
                    "{} {op} {} with {} {how}: {} calls{relay}, ≈{} here{priced}; with {} {how} ({} curve's knee), {} calls (≈{})",
                    comm_of(p, pid),
                    target.label(),
                    format_size(size),
                    super::thousands(s.calls),
                    secs(now),
                    format_size(best),
                    curve_name,
                    super::thousands(calls_then),
                    secs(then)
                ),
                (Some(now), Some(then)),
                claims,
            );
        }
    }

    fn lseek_then_io(
        &mut self,
        (pid, t, op): (i32, usize, &'static str),
        s: &OpStats,
        reading: bool,
    ) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        // lseek then read/write: pread/pwrite would do it in one call.
        if s.after_lseek >= 10 {
            let per = f
                .ns(Case::Lseek)
                .map(|n| n * 1e-9)
                .or_else(|| f.extra(Case::LseekRead, Case::Pread));
            self.push(
                "lseek_then_io",
                pid,
                target.label(),
                format!(
                    "{} lseek+{op} on {}: {} pairs; {} would do each in one call",
                    comm_of(p, pid),
                    target.label(),
                    super::thousands(s.after_lseek),
                    if reading { "pread" } else { "pwrite" }
                ),
                (per.map(|x| x * s.after_lseek as f64), per.map(|_| 0.0)),
                vec![Claim::Row(pid, t, "lseek")],
            );
        }
    }

    fn reread(&mut self, (pid, t, op): (i32, usize, &'static str), s: &OpStats, reading: bool) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        // Reading the same bytes again.
        if reading && target.kind == Kind::File && s.reread_bytes >= 1 << 20 {
            let rate = s.typical_size().and_then(|z| f.read.rate(z));
            self.push(
                "reread",
                pid,
                target.label(),
                format!(
                    "{} read {} of {} again (bytes it had already read); mapping the file once (mmap) and reading the mapping avoids the calls (a copy kept in fresh memory saves less: the memory costs its page faults)",
                    comm_of(p, pid),
                    format_size(s.reread_bytes),
                    target.label()
                ),
                (rate.map(|r| s.reread_bytes as f64 / r), rate.map(|_| 0.0)),
                vec![Claim::Row(pid, t, op)],
            );
        }
    }

    fn pipe_capacity(
        &mut self,
        (pid, t, op): (i32, usize, &'static str),
        s: &OpStats,
        reading: bool,
    ) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        let large = p.pipe_sizes.contains_key(&t);
        // A default-capacity pipe where the measured larger capacity is faster.
        if target.kind == Kind::Pipe
            && !reading
            && !large
            && s.bytes >= 1 << 20
            && let (Some((cap, lc)), Some(size)) = (&f.pipe_large, s.typical_size())
            && let (Some(d), Some(l)) = (f.pipe.rate(size), lc.rate(size))
            && l > 1.03 * d
        {
            self.push(
                "pipe_capacity",
                pid,
                target.label(),
                format!(
                    "{} writes {} through {} (default capacity) in {} chunks; a {} pipe (F_SETPIPE_SZ) moves them at {} GB/s instead of {}",
                    comm_of(p, pid),
                    format_size(s.bytes),
                    target.label(),
                    format_size(size),
                    format_size(*cap),
                    crate::units::format_gbps(l),
                    crate::units::format_gbps(d)
                ),
                (Some(s.bytes as f64 / d), Some(s.bytes as f64 / l)),
                vec![Claim::Row(pid, t, op)],
            );
        }
    }

    /// Sends through a socket left at the kernel's buffer sizes (the process never
    /// called setsockopt on it) where the socket probe measured larger buffers faster at
    /// the size sent.
    fn socket_buffer(
        &mut self,
        (pid, t, op): (i32, usize, &'static str),
        s: &OpStats,
        reading: bool,
    ) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        let tuned = rows_of(p, pid, t).any(|(o, _)| o == "setsockopt");
        if target.kind == Kind::Socket
            && !reading
            && !tuned
            && s.bytes >= 1 << 20
            && let Some((c, family)) = f.socket(target.family.as_deref())
            && target.family.as_deref().is_none_or(|x| x == family)
            && let (Some((granted, large)), Some(size)) = (&c.large_buffer, s.typical_size())
            && let (Some(d), Some(l)) = (c.write_read.rate(size), large.rate(size))
            && l > 1.03 * d
        {
            self.push(
                "socket_buffer",
                pid,
                target.label(),
                format!(
                    "{} {op}s {} through {} at the kernel's buffer sizes in {} chunks; asking for larger ones (SO_SNDBUF and SO_RCVBUF, granted {} here) moves them at {} GB/s instead of {} (loopback {family} figures)",
                    comm_of(p, pid),
                    format_size(s.bytes),
                    target.label(),
                    format_size(size),
                    format_size(*granted),
                    crate::units::format_gbps(l),
                    crate::units::format_gbps(d)
                ),
                (Some(s.bytes as f64 / d), Some(s.bytes as f64 / l)),
                vec![Claim::Row(pid, t, op)],
            );
        }
    }

    fn reopens(&mut self) {
        let (p, f) = (self.p, self.f);
        for ((pid, path), &n) in &p.opens {
            if n >= 10 {
                let per = f.extra(Case::OpenReadClose, Case::Pread);
                self.push(
                    "reopen",
                    *pid,
                    path.clone(),
                    format!(
                        "{} opened {path} {} times; one descriptor kept open would do",
                        comm_of(p, *pid),
                        super::thousands(n)
                    ),
                    (per.map(|x| x * n as f64), per),
                    vec![Claim::Path(*pid, path.clone(), "open")],
                );
            }
        }
    }

    fn stat_storms(&mut self) {
        let (p, f) = (self.p, self.f);
        for ((pid, path), &n) in &p.stats {
            if n >= 100 {
                let per = f.ns(Case::Stat).map(|x| x * 1e-9);
                self.push(
                    "stat_storm",
                    *pid,
                    path.clone(),
                    format!(
                        "{} asked for the status of {path} {} times; once would do unless it changes",
                        comm_of(p, *pid),
                        super::thousands(n)
                    ),
                    (per.map(|x| x * n as f64), per),
                    vec![Claim::Path(*pid, path.clone(), "stat")],
                );
            }
        }
    }

    fn pipe_relays(&mut self) {
        let (p, f) = (self.p, self.f);
        // A process that only moves a file's bytes into a pipe (`cat f | prog`): the next
        // process could read the file itself, and this one, with its every call, goes.
        for (&(pid, src, dst), &(_, bytes)) in &p.copies {
            let (s_t, d_t) = (&p.targets[src], &p.targets[dst]);
            if s_t.kind != Kind::File || d_t.kind != Kind::Pipe || bytes < 1 << 20 {
                continue;
            }
            let Some((time, calls)) = pipe_relay(p, f, pid, src, dst) else {
                continue;
            };
            self.push(
                "pipe_relay",
                pid,
                format!("{} → {}", s_t.label(), d_t.label()),
                format!(
                    "{} only copies {} from {} into {} ({} calls): the process reading the pipe could read the file itself (`prog < {}` instead of `cat {} | prog`), and this process and its copy would go",
                    comm_of(p, pid),
                    format_size(bytes),
                    s_t.label(),
                    d_t.label(),
                    super::thousands(calls),
                    s_t.name,
                    s_t.name
                ),
                (time, time.map(|_| 0.0)),
                [self.data_rows(pid, src, true), self.data_rows(pid, dst, false)].concat(),
            );
        }
    }

    fn fsync_per_write(&mut self) {
        let (p, f) = (self.p, self.f);
        for (&(pid, t), y) in &p.syncs {
            if y.syncs >= 10 && y.writes <= 8 * y.syncs && y.bytes / y.syncs.max(1) < 64 * 1024 {
                self.push(
                    "fsync_per_write",
                    pid,
                    p.targets[t].label(),
                    format!(
                        "{} fsynced {} {} times, after {} writes of {} on average; syncing once per batch (if the data may wait) costs one fsync per batch{}",
                        comm_of(p, pid),
                        p.targets[t].label(),
                        super::thousands(y.syncs),
                        crate::units::sig3(y.writes as f64 / y.syncs as f64),
                        format_size(y.bytes / y.syncs.max(1)),
                        fsync_source(f)
                    ),
                    (f.fsync_s.map(|c| c * y.syncs as f64), f.fsync_s),
                    rows_of(p, pid, t)
                        .filter(|&(op, _)| matches!(op, "fsync" | "fdatasync"))
                        .map(|(op, _)| Claim::Row(pid, t, op))
                        .collect(),
                );
            }
        }
    }

    fn read_write_copies(&mut self) {
        let (p, f) = (self.p, self.f);
        for (&(pid, src, dst), &(pairs, bytes)) in &p.copies {
            // Data written to /dev/null or a terminal is not a copy worth moving in-kernel.
            let sink = matches!(p.targets[dst].kind, Kind::DevNull | Kind::Tty);
            if pairs >= 16 && bytes >= 1 << 20 && !sink {
                let size = bytes / pairs;
                let through = f.read.rate(size).zip(f.write.rate(size));
                let dst_t = &p.targets[dst];
                let call = if dst_t.kind == Kind::File {
                    "copy_file_range"
                } else {
                    "sendfile or splice"
                };
                // Into a socket: the socket curve prices the send (with its reader's
                // receive, as the probe measures both), sendfile's curve the fix.
                let sock = (dst_t.kind == Kind::Socket)
                    .then(|| f.socket(dst_t.family.as_deref()))
                    .flatten();
                let through = match sock {
                    Some((c, _)) => f.read.rate(size).zip(c.write_read.rate(size)),
                    None => through,
                };
                let better = if dst_t.kind == Kind::File {
                    f.copy_file_range.map(|c| bytes as f64 / c)
                } else if let Some((c, _)) = sock {
                    let sf = &c.sendfile;
                    sf.best_size()
                        .and_then(|b| sf.rate(b.max(size)))
                        .map(|r| bytes as f64 / r)
                } else {
                    None
                };
                self.push(
                    "read_write_copy",
                    pid,
                    format!("{} → {}", p.targets[src].label(), dst_t.label()),
                    format!(
                        "{} copied {} from {} to {} by read then write ({} pairs of {}); {call} moves it in the kernel",
                        comm_of(p, pid),
                        format_size(bytes),
                        p.targets[src].label(),
                        dst_t.label(),
                        super::thousands(pairs),
                        format_size(size)
                    ),
                    (through.map(|(r, w)| bytes as f64 / r + bytes as f64 / w), better),
                    [self.data_rows(pid, src, true), self.data_rows(pid, dst, false)].concat(),
                );
            }
        }
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

    use super::super::profile::{OpStats, Process, Syncs, Target};

    fn file_target() -> Target {
        Target {
            name: "/f".into(),
            kind: Kind::File,
            fs: None,
            family: None,
        }
    }

    fn figures() -> Figures {
        let c = |v: &[(u64, f64)]| Curve(v.to_vec());
        Figures {
            read: c(&[(4096, 10e9), (65536, 20e9), (1 << 20, 20e9)]),
            write: c(&[(4096, 4e9), (65536, 16e9), (1 << 20, 16e9)]),
            pipe: c(&[(4096, 2e9), (65536, 5e9)]),
            pipe_large: Some((1 << 20, c(&[(4096, 2e9), (65536, 8e9)]))),
            sockets: BTreeMap::new(),
            calls_ns: [
                ("null", 80.0),
                ("pread", 150.0),
                ("lseek_read", 240.0),
                ("open_read_close", 700.0),
                ("stat", 300.0),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            fsync_s: Some(100e-6),
            fsync_measured_at: None,
            copy_file_range: Some(5e9),
            sources: vec![("read".into(), 1)],
        }
    }

    /// The kinds of the findings, then of their alternatives (other ways to change the
    /// same calls, which a larger finding claimed first).
    fn all_kinds(found: &[Finding]) -> Vec<&'static str> {
        let mut k: Vec<&'static str> = found.iter().map(|x| x.kind).collect();
        k.extend(
            found
                .iter()
                .flat_map(|x| x.alternatives.iter().map(|a| a.kind)),
        );
        k
    }

    /// No call is claimed by two findings, and the savings add up to at most the time
    /// the claimed calls take here.
    fn each_call_once(p: &Profile, f: &Figures, found: &[Finding]) {
        let mut seen = std::collections::BTreeSet::new();
        for x in found {
            for c in &x.claims {
                assert!(seen.insert(c.clone()), "{c:?} claimed twice: {found:?}");
            }
        }
        let priced: f64 = p
            .ops
            .iter()
            .filter_map(|(&(_, t, op), s)| time_here(f, &p.targets[t], op, s, false))
            .sum::<f64>()
            + f.extra(Case::OpenReadClose, Case::Pread).unwrap_or(0.0)
                * p.opens.values().sum::<u64>() as f64
            + f.ns(Case::Stat).unwrap_or(0.0) * 1e-9 * p.stats.values().sum::<u64>() as f64;
        let saved: f64 = found.iter().filter_map(|x| x.saving_s).sum();
        assert!(
            saved <= priced * (1.0 + 1e-9),
            "{saved} > {priced}: {found:?}"
        );
    }

    fn stats(calls: u64, bytes: u64, size: u64) -> OpStats {
        OpStats {
            calls,
            bytes,
            sizes: [(size, calls)].into_iter().collect(),
            ..OpStats::default()
        }
    }

    /// A 1-byte write costs a system call here, not 1/4096th of a 4 KiB write: the
    /// call's floor (the syscalls probe's pwrite, else its null call) prices it.
    #[test]
    fn tiny_calls_cost_at_least_a_system_call() {
        let mut f = figures();
        f.calls_ns.insert("pwrite".into(), 1200.0);
        let tiny = stats(200_000, 200_000, 1);
        let t = time_here(&f, &file_target(), "write", &tiny, false).unwrap();
        assert!((t - 200_000.0 * 1200e-9).abs() < 1e-9, "{t}");
        // Without pwrite's figure the null call is the floor.
        let t = time_here(&figures(), &file_target(), "write", &tiny, false).unwrap();
        assert!((t - 200_000.0 * 80e-9).abs() < 1e-9, "{t}");
        // Large requests are priced by their bytes, above the floor.
        let big = stats(16, 16 << 20, 1 << 20);
        let t = time_here(&f, &file_target(), "write", &big, false).unwrap();
        assert!((t - (16u64 << 20) as f64 / 16e9).abs() < 1e-9, "{t}");
        // And the finding for the tiny writes saves nearly all of it.
        let mut p = app();
        p.targets.push(Target {
            name: "/tmp/out".into(),
            kind: Kind::File,
            fs: None,
            family: None,
        });
        let t = p.targets.len() - 1;
        p.ops.insert((1, t, "write"), tiny);
        let found = findings(&p, &f, 1.0);
        let small = found
            .iter()
            .find(|x| x.kind == "small_requests")
            .expect("found");
        assert!(small.saving_s.unwrap() > 0.2, "{small:?}");
    }

    /// A profile with one process, "app".
    fn app() -> Profile {
        let mut p = Profile::default();
        p.processes.insert(1, Process::new(1, "app".into()));
        p
    }

    /// Sends through a socket of a known family are priced with that family's curves:
    /// 1 KiB sends against the knee, a file's read-then-send against sendfile, and the
    /// kernel's buffers against larger ones, unless the program set its own.
    #[test]
    fn socket_calls_are_priced_with_their_familys_curves() {
        let mut f = figures();
        let c = |v: &[(u64, f64)]| Curve(v.to_vec());
        f.sockets.insert(
            "unix".into(),
            SocketCurves {
                write_read: c(&[(1024, 0.5e9), (65536, 4e9), (1 << 20, 5e9)]),
                sendfile: c(&[(65536, 5e9), (1 << 20, 6e9)]),
                large_buffer: Some((8 << 20, c(&[(1024, 0.5e9), (65536, 5e9), (1 << 20, 6e9)]))),
            },
        );
        let socket = |tuned: bool, from_file: bool| {
            let mut p = app();
            for (name, kind, family) in [
                ("/f", Kind::File, None),
                ("socket:[7]", Kind::Socket, Some("unix")),
            ] {
                p.targets.push(Target {
                    name: name.into(),
                    kind,
                    fs: None,
                    family: family.map(str::to_string),
                });
            }
            if from_file {
                p.ops.insert((1, 0, "read"), stats(1600, 100 << 20, 65536));
                p.copies.insert((1, 0, 1), (1600, 100 << 20));
            }
            p.ops
                .insert((1, 1, "sendto"), stats(1600, 100 << 20, 65536));
            if tuned {
                p.ops.insert((1, 1, "setsockopt"), stats(1, 0, 0));
            }
            p
        };
        let kinds = |p: &Profile, f: &Figures| -> Vec<&'static str> {
            let found = findings(p, f, 1.0);
            each_call_once(p, f, &found);
            all_kinds(&found)
        };
        // Sent from memory in 64 KiB sends: larger sends, or larger buffers, for the
        // same calls (one finding, the other its alternative).
        assert_eq!(
            kinds(&socket(false, false), &f),
            ["small_requests", "socket_buffer"]
        );
        assert_eq!(findings(&socket(false, false), &f, 1.0).len(), 1);
        assert_eq!(kinds(&socket(true, false), &f), ["small_requests"]);
        // A file's bytes relayed: sendfile (the sends are priced with the reads).
        let found = findings(&socket(false, true), &f, 1.0);
        let copy = found.iter().find(|x| x.kind == "read_write_copy").unwrap();
        // Read at 20 GB/s (65536 B) plus send at 4 GB/s, against sendfile at 6 GB/s.
        let bytes = (100u64 << 20) as f64;
        let now = bytes / 20e9 + bytes / 4e9;
        assert!((copy.time_s.unwrap() - now).abs() < 1e-9);
        assert!((copy.better_s.unwrap() - bytes / 6e9).abs() < 1e-9);
        let sent = findings(&socket(false, false), &f, 1.0);
        assert_eq!(sent[0].alternatives.len(), 1, "{sent:?}");
        assert!(
            sent[0].text.contains("loopback unix figures")
                && sent[0].alternatives[0]
                    .text
                    .contains("loopback unix figures"),
            "{}",
            sent[0].text
        );
        // Without socket figures, the pipe's price them, and the finding says so.
        let mut p = socket(false, false);
        p.ops
            .insert((1, 1, "sendto"), stats(25_600, 100 << 20, 4096));
        let small = findings(&p, &figures(), 1.0);
        let s = small
            .iter()
            .find(|x| x.kind == "small_requests" && x.target.contains("socket"));
        assert!(
            s.is_some_and(|x| x.text.contains("pipe figures")),
            "{small:?}"
        );
    }

    /// A profile of `app` relaying `srcs` files into `dsts` outputs in 512 B records:
    /// each source 64 KiB, each output getting every source's bytes.
    fn relaying(srcs: usize, dsts: usize) -> Profile {
        let mut p = app();
        for i in 0..srcs + dsts {
            p.targets.push(Target {
                name: format!("/{}{i}", if i < srcs { "in" } else { "out" }),
                kind: Kind::File,
                fs: None,
                family: None,
            });
        }
        for s in 0..srcs {
            p.ops.insert((1, s, "read"), stats(128, 65536, 512));
            for d in srcs..srcs + dsts {
                p.copies.insert((1, s, d), (128, 65536));
            }
        }
        for d in srcs..srcs + dsts {
            let n = 128 * srcs as u64;
            p.ops.insert((1, d, "write"), stats(n, n * 512, 512));
        }
        p
    }

    /// tar -b 1: fifty files into one archive in 512 B records is one finding, about
    /// the pair, naming the record size; no source claims the archive's writes.
    #[test]
    fn many_sources_into_one_destination_are_one_relay_finding() {
        let (p, f) = (relaying(50, 1), figures());
        let found = findings(&p, &f, 1.0);
        each_call_once(&p, &f, &found);
        assert_eq!(all_kinds(&found), ["relay"], "{found:?}");
        let x = &found[0];
        assert_eq!(x.target, "/out50");
        assert!(
            x.text.starts_with(
                "app copies 50 files into /out50 in 512 B records: 6,400 reads and 6,400 writes"
            ) && x.text.contains(
                "in 64 KiB records (a larger buffer, blocking factor or bs=) 50 reads and 50 writes"
            ),
            "{}",
            x.text
        );
        assert_eq!(x.claims.len(), 51);
        assert!(x.saving_s.unwrap() > 0.0);
    }

    /// tee-like: one source into three outputs is the source's finding, with every
    /// output's writes in it once.
    #[test]
    fn one_source_into_many_destinations_is_priced_once() {
        let (p, f) = (relaying(1, 3), figures());
        let found = findings(&p, &f, 1.0);
        each_call_once(&p, &f, &found);
        assert_eq!(all_kinds(&found), ["small_requests"], "{found:?}");
        assert_eq!(found[0].claims.len(), 4, "{found:?}");
        for d in 1..4 {
            assert!(
                found[0].text.contains(&format!("writes to /out{d}")),
                "{}",
                found[0].text
            );
        }
    }

    /// dd bs=512: the request size changes its reads and the writes that relay them,
    /// so one finding prices both, and the writes get no finding of their own.
    #[test]
    fn a_relay_prices_its_writes_with_its_reads() {
        let relay = |copies: bool| {
            let mut p = app();
            for (name, kind) in [("/f", Kind::File), ("/dev/null", Kind::DevNull)] {
                p.targets.push(Target {
                    name: name.into(),
                    kind,
                    fs: None,
                    family: None,
                });
            }
            p.ops.insert((1, 0, "read"), stats(1000, 512_000, 512));
            p.ops.insert((1, 1, "write"), stats(1000, 512_000, 512));
            if copies {
                p.copies.insert((1, 0, 1), (1000, 512_000));
            }
            findings(&p, &figures(), 1.0)
        };
        let alone = relay(false);
        let both = relay(true);
        let small = |f: &[Finding]| {
            f.iter()
                .filter(|x| x.kind == "small_requests")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(small(&both).len(), 1, "{both:?}");
        let (a, b) = (&small(&alone)[0], &small(&both)[0]);
        assert!(b.text.contains("1,000 writes to /dev/null"), "{}", b.text);
        // The writes' calls at the null call's 80 ns, less the 8 left at the read
        // curve's knee (64 KiB: 512,000 bytes in 8 calls).
        let extra = b.saving_s.unwrap() - a.saving_s.unwrap();
        assert!((extra - 992.0 * 80e-9).abs() < 1e-12, "{extra}");
    }

    /// `cat f | prog`: a process that only moves a file into a pipe is a finding, its
    /// whole priced time the saving; a process that also does other work is not.
    #[test]
    fn a_process_that_only_pipes_a_file_is_a_finding() {
        let with = |extra: bool| {
            let mut p = app();
            for (name, kind) in [
                ("/f", Kind::File),
                ("pipe:[9]", Kind::Pipe),
                ("/lib.so", Kind::File),
            ] {
                p.targets.push(Target {
                    name: name.into(),
                    kind,
                    fs: None,
                    family: None,
                });
            }
            p.ops.insert((1, 0, "read"), stats(64, 8 << 20, 128 << 10));
            p.ops.insert((1, 1, "write"), stats(64, 8 << 20, 128 << 10));
            // Loading its libraries reads a little; other work reads much more.
            let lib = if extra { 4 << 20 } else { 832 };
            p.ops.insert((1, 2, "read"), stats(1, lib, lib));
            p.copies.insert((1, 0, 1), (64, 8 << 20));
            findings(&p, &figures(), 1.0)
        };
        let found = with(false);
        let relay = found
            .iter()
            .find(|x| x.kind == "pipe_relay")
            .expect("a finding");
        assert!(relay.text.contains("prog < /f"), "{}", relay.text);
        assert_eq!(relay.better_s, Some(0.0));
        assert!(relay.saving_s.unwrap() > 0.0);
        assert!(!with(true).iter().any(|x| x.kind == "pipe_relay"));
    }

    #[test]
    fn every_kind_of_finding_is_priced_and_ranked() {
        let mut p = app();
        let target = |name: &str, kind| Target {
            name: name.into(),
            kind,
            fs: Some("ext4".into()),
            family: None,
        };
        p.targets = vec![
            target("/f", Kind::File),
            target("pipe:[1]", Kind::Pipe),
            target("/g", Kind::File),
        ];
        let mut read = stats(1000, 4 << 20, 4096);
        read.after_lseek = 500;
        read.reread_bytes = 2 << 20;
        p.ops.insert((1, 0, "read"), read);
        p.ops
            .insert((1, 1, "write"), stats(100, 100 * 65536, 65536));
        // Large, efficient writes: nothing to say about them.
        p.ops.insert((1, 2, "write"), stats(10, 10 << 20, 1 << 20));
        p.opens.insert((1, "/f".into()), 50);
        p.stats.insert((1, "/f".into()), 200);
        p.syncs.insert(
            (1, 2),
            Syncs {
                syncs: 20,
                writes: 20,
                bytes: 2000,
            },
        );
        p.ops.insert((1, 2, "fsync"), stats(20, 0, 0));
        p.copies.insert((1, 0, 2), (100, 100 * 65536));
        let f = figures();
        let found = findings(&p, &f, 0.05);
        each_call_once(&p, &f, &found);
        // Bigger reads, mapping the file, copy_file_range: three ways to change the
        // same reads, one finding and two alternatives.
        let kinds = all_kinds(&found);
        for k in [
            "small_requests",
            "lseek_then_io",
            "reread",
            "pipe_capacity",
            "reopen",
            "stat_storm",
            "fsync_per_write",
        ] {
            assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
        }
        assert_eq!(
            kinds.iter().filter(|k| **k == "small_requests").count(),
            1,
            "{kinds:?}"
        );
        let reads = found.iter().find(|x| x.kind == "small_requests").unwrap();
        let alt: Vec<&str> = reads.alternatives.iter().map(|a| a.kind).collect();
        assert_eq!(alt, ["reread"], "{found:?}");
        assert!(
            reads.text.contains("(the same calls another way: "),
            "{}",
            reads.text
        );
        // Ranked by saving, each priced with the figures given.
        let savings: Vec<f64> = found.iter().map(|x| x.saving_s.unwrap()).collect();
        assert!(savings.windows(2).all(|w| w[0] >= w[1]), "{savings:?}");
        let small = found.iter().find(|x| x.kind == "small_requests").unwrap();
        // 4 MiB at 10 GB/s against 4 MiB at 20 GB/s.
        assert!(
            (small.saving_s.unwrap() - (4 << 20) as f64 * (1.0 / 10e9 - 1.0 / 20e9)).abs() < 1e-9
        );
        assert!(
            small.text.contains("with 4 KiB reads") && small.text.contains("with 64 KiB reads")
        );
        let lseek = found.iter().find(|x| x.kind == "lseek_then_io").unwrap();
        assert!((lseek.saving_s.unwrap() - 500.0 * 90e-9).abs() < 1e-12);
        let sync = found.iter().find(|x| x.kind == "fsync_per_write").unwrap();
        assert!((sync.saving_s.unwrap() - 19.0 * 100e-6).abs() < 1e-12);
        // The fsync price says which measurement it is, when the run is known.
        let mut dated = figures();
        dated.sources.push(("write".into(), 7));
        let again = findings(&p, &dated, 0.01);
        let sync = again.iter().find(|x| x.kind == "fsync_per_write").unwrap();
        assert!(
            sync.text
                .contains("an fsync priced at 100 µs, as write run 7 measured this disk then"),
            "{}",
            sync.text
        );
        // … and when, where the run says so.
        dated.fsync_measured_at = Some("2026-11-24T19:28:34Z".into());
        let again = findings(&p, &dated, 0.01);
        let sync = again.iter().find(|x| x.kind == "fsync_per_write").unwrap();
        assert!(
            sync.text.contains(
                "as write run 7 measured this disk on 2026-11-24 at 19:28 UTC: a disk busy"
            ),
            "{}",
            sync.text
        );
        // Shares are of the work given; under 1% does not matter.
        for x in &found {
            assert_eq!(x.matters, x.saving_s.unwrap() / 0.05 >= 0.01, "{}", x.text);
            assert_eq!(x.text.contains("does not matter here"), !x.matters);
        }
    }

    #[test]
    fn without_figures_a_finding_says_it_is_not_priced() {
        let mut p = app();
        p.targets = vec![Target {
            name: "/f".into(),
            kind: Kind::File,
            fs: None,
            family: None,
        }];
        p.opens.insert((1, "/f".into()), 50);
        let found = findings(&p, &Figures::default(), 1.0);
        assert_eq!(found.len(), 1);
        assert!(
            found[0]
                .text
                .ends_with("not priced (no saved figures for it on this host)")
        );
        assert!(!found[0].matters);
    }
}
