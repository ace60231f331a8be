//! The findings: one rule per method of [`Finder`], each a pattern worth changing
//! (or not) priced with this machine's figures, then settled so that each call is
//! claimed once (`claims.rs`).

mod claims;
mod own;
mod relays;

use super::figures::Figures;
use super::price::{comm_of, curve_for, fsync_price, is_fsync, pipe_relay, pipe_switches, rows_of};
use super::profile::{Kind, Op, OpStats, Profile};
use crate::sys::trace::calls::{Family, Syscall};
use crate::units::{format_secs as secs, format_size, thousands};
pub use claims::{Alternative, Claim, per_second};
pub use own::{Budget, Loop, MIN_TIMED, Own, OwnWork, total as own_work_total};
use relays::{Relays, relayed_writes};
use serde::Serialize;

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
    /// Attached to a running process: the saving per second of its run (the saving
    /// in the window divided by the window's length).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saving_per_s: Option<f64>,
    /// The saving's range (the program's own work per call varies between calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saving_low_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saving_high_s: Option<f64>,
    /// The program's own work between the calls the change removes (in the saving).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_work: Option<OwnWork>,
    /// Other changes to calls this finding claimed first (not added to the savings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
    /// The share of the claimed calls the change keeps (1: as many calls, each
    /// cheaper; 0: none left).
    #[serde(skip)]
    pub kept: f64,
    /// The sentence without its price, and the calls it would change.
    #[serde(skip)]
    pub what: String,
    #[serde(skip)]
    pub claims: Vec<Claim>,
}

impl Finding {
    /// A rule's finding before [`claims::settle`]: (kind, pid, process, target), the
    /// sentence without its price, and (time now, time done its way, share of the
    /// calls kept); no claims yet.
    pub(super) fn unsettled(
        (kind, pid, process, target): (&'static str, i32, String, String),
        what: String,
        (time, better, kept): (Option<f64>, Option<f64>, f64),
    ) -> Finding {
        Finding {
            kind,
            pid,
            process,
            target,
            text: String::new(),
            time_s: time,
            better_s: better,
            saving_s: None,
            share: None,
            matters: false,
            saving_per_s: None,
            saving_low_s: None,
            saving_high_s: None,
            own_work: None,
            alternatives: Vec::new(),
            kept,
            what,
            claims: Vec::new(),
        }
    }
}

/// Every finding of `p`, largest saving first, each call claimed by one finding only.
/// `budget` is the run's work here (seconds), which savings are compared with, and
/// what prices the program's own work per call ([`own`]). One rule per method of
/// [`Finder`].
pub fn findings(p: &Profile, f: &Figures, budget: impl Into<Budget>) -> Vec<Finding> {
    let mut x = Finder {
        p,
        f,
        relays: Relays::of(p),
        out: Vec::new(),
    };
    x.relay_groups();
    for (&(pid, t, op), s) in &p.ops {
        let Some(reading) = op.direction() else {
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
    claims::settle(x.out, p, f, budget.into())
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
type DataRule<'a> = fn(&mut Finder<'a>, (i32, usize, Op), &OpStats, bool);

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
    /// every rule has run ([`claims::settle`]).
    pub(super) fn push(
        &mut self,
        kind: &'static str,
        pid: i32,
        target: String,
        what: String,
        (time, better, kept): (Option<f64>, Option<f64>, f64),
        claims: Vec<Claim>,
    ) {
        let process = comm_of(self.p, pid);
        let x = Finding::unsettled((kind, pid, process, target), what, (time, better, kept));
        self.out.push(Finding { claims, ..x });
    }

    /// The data rows of `pid` on `t` in one direction, as claims.
    fn data_rows(&self, pid: i32, t: usize, reading: bool) -> Vec<Claim> {
        rows_of(self.p, pid, t)
            .filter(|&(op, _)| op.direction() == Some(reading))
            .map(|(op, _)| Claim::Row(pid, t, op))
            .collect()
    }

    fn small_requests(&mut self, (pid, t, op): (i32, usize, Op), s: &OpStats, reading: bool) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        let large = p.pipe_sizes.contains_key(&t);
        // Small requests, priced with the curve for this kind of target.
        if let (Some((c, curve_name)), Some(size)) =
            (
                curve_for(f, (target.kind, target.family.as_deref(), s.span()), reading, large),
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
                    thousands(s.calls),
                    secs(now),
                    format_size(best),
                    curve_name,
                    thousands(calls_then),
                    secs(then)
                ),
                (Some(now), Some(then), calls_then as f64 / s.calls as f64),
                claims,
            );
        }
    }

    fn lseek_then_io(&mut self, (pid, t, op): (i32, usize, Op), s: &OpStats, reading: bool) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        // lseek then read/write: pread/pwrite would do it in one call.
        if s.after_lseek >= 10 {
            let per = f.lseek_s();
            self.push(
                "lseek_then_io",
                pid,
                target.label(),
                format!(
                    "{} lseek+{op} on {}: {} pairs; {} would do each in one call",
                    comm_of(p, pid),
                    target.label(),
                    thousands(s.after_lseek),
                    if reading { "pread" } else { "pwrite" }
                ),
                (per.map(|x| x * s.after_lseek as f64), per.map(|_| 0.0), 0.0),
                vec![Claim::Row(pid, t, Op::Call(Syscall::Lseek))],
            );
        }
    }

    fn reread(&mut self, (pid, t, op): (i32, usize, Op), s: &OpStats, reading: bool) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        // Reading the same bytes again.
        if reading && target.kind == Kind::File && s.reread_bytes >= 1 << 20 {
            let rate = s.typical_size().and_then(|z| f.read_for(s.span()).rate(z));
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
                (
                    rate.map(|r| s.reread_bytes as f64 / r),
                    rate.map(|_| 0.0),
                    1.0 - s.reread_bytes as f64 / s.bytes.max(1) as f64,
                ),
                vec![Claim::Row(pid, t, op)],
            );
        }
    }

    fn pipe_capacity(&mut self, (pid, t, op): (i32, usize, Op), s: &OpStats, reading: bool) {
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
                (Some(s.bytes as f64 / d), Some(s.bytes as f64 / l), 1.0),
                vec![Claim::Row(pid, t, op)],
            );
        }
    }

    /// Sends through a socket left at the kernel's buffer sizes (the process never
    /// called setsockopt on it) where the socket probe measured larger buffers faster at
    /// the size sent.
    fn socket_buffer(&mut self, (pid, t, op): (i32, usize, Op), s: &OpStats, reading: bool) {
        let (p, f) = (self.p, self.f);
        let target = &p.targets[t];
        let tuned = rows_of(p, pid, t).any(|(o, _)| o == Op::Call(Syscall::Setsockopt));
        if target.kind == Kind::Socket
            && !reading
            && !tuned
            && s.bytes >= 1 << 20
            && let Some((c, family)) = f.socket(target.family.as_deref())
            && target.family.as_deref().is_none_or(|x| x == family)
            && let (Some((granted, large)), Some(size)) = (&c.large_buffer, s.typical_size())
            && let (Some(d), Some(l)) = (c.write_read.rate(size), large.rate(size))
            // Ahead by more than a rerun moves the family's rows here (TCP 18%, unix
            // 5%): Python's 1 MiB sends over TCP, priced at a large-buffer curve a few
            // percent ahead (3% was the bar), were named in one sitting of the
            // accuracy bench and not in the next.
            && l > d * (1.0 + crate::probes::socket::rerun_floor(family))
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
                (Some(s.bytes as f64 / d), Some(s.bytes as f64 / l), 1.0),
                vec![Claim::Row(pid, t, op)],
            );
        }
    }

    fn reopens(&mut self) {
        let (p, f) = (self.p, self.f);
        for ((pid, path), &n) in &p.opens {
            if n >= 10 {
                let depth = p.components_of(*pid, path, |op| {
                    op.call().map(Syscall::family) == Some(Family::Open)
                });
                let per = f.open_s(depth);
                self.push(
                    "reopen",
                    *pid,
                    path.clone(),
                    format!(
                        "{} opened {path} {} times; one descriptor kept open would do",
                        comm_of(p, *pid),
                        thousands(n)
                    ),
                    (per.map(|x| x * n as f64), per, 1.0 / n as f64),
                    vec![Claim::Path(*pid, path.clone(), "open")],
                );
            }
        }
    }

    fn stat_storms(&mut self) {
        let (p, f) = (self.p, self.f);
        for ((pid, path), &n) in &p.stats {
            if n >= 100 {
                let depth = p.components_of(*pid, path, |op| op.call() == Some(Syscall::Stat));
                let per = f.stat_s(depth);
                self.push(
                    "stat_storm",
                    *pid,
                    path.clone(),
                    format!(
                        "{} asked for the status of {path} {} times; once would do unless it changes",
                        comm_of(p, *pid),
                        thousands(n)
                    ),
                    (per.map(|x| x * n as f64), per, 1.0 / n as f64),
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
            // The switches its pipe's ends made beyond a pipe's own go with it.
            let switched = pipe_switches(p, f, dst).filter(|s| s.0 >= 1.0);
            let time = time.map(|t| t + switched.map_or(0.0, |s| s.1));
            let switches = switched.map_or(String::new(), |(n, s)| {
                format!(
                    ", with the {} context switches its pipe's ends made beyond the pipe probe's for these bytes (≈{}, {} a switch)",
                    thousands(n.round() as u64),
                    secs(s),
                    crate::units::format_ns(s / n * 1e9)
                )
            });
            self.push(
                "pipe_relay",
                pid,
                format!("{} → {}", s_t.label(), d_t.label()),
                format!(
                    "{} only copies {} from {} into {} ({} calls): the process reading the pipe could read the file itself (`prog < {}` instead of `cat {} | prog`), and this process and its copy would go{switches}",
                    comm_of(p, pid),
                    format_size(bytes),
                    s_t.label(),
                    d_t.label(),
                    thousands(calls),
                    s_t.name,
                    s_t.name
                ),
                (time, time.map(|_| 0.0), 0.0),
                [
                    self.data_rows(pid, src, true),
                    self.data_rows(pid, dst, false),
                    switched.map_or(vec![], |_| vec![Claim::Switches(dst)]),
                ]
                .concat(),
            );
        }
    }

    fn fsync_per_write(&mut self) {
        let (p, f) = (self.p, self.f);
        for (&(pid, t), y) in &p.syncs {
            if y.syncs >= 10 && y.writes <= 8 * y.syncs && y.bytes / y.syncs.max(1) < 64 * 1024 {
                let (price, source) = fsync_price(p, f, pid, t);
                self.push(
                    "fsync_per_write",
                    pid,
                    p.targets[t].label(),
                    format!(
                        "{} fsynced {} {} times, after {} writes of {} on average; syncing once per batch (if the data may wait) costs one fsync per batch{}",
                        comm_of(p, pid),
                        p.targets[t].label(),
                        thousands(y.syncs),
                        crate::units::sig3(y.writes as f64 / y.syncs as f64),
                        format_size(y.bytes / y.syncs.max(1)),
                        source
                    ),
                    (price.map(|c| c * y.syncs as f64), price, 1.0 / y.syncs as f64),
                    rows_of(p, pid, t)
                        .filter(|&(op, _)| is_fsync(op))
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
                let read = f.read_for(p.read_span(src));
                let through = read.rate(size).zip(f.write.rate(size));
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
                    Some((c, _)) => read.rate(size).zip(c.write_read.rate(size)),
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
                        thousands(pairs),
                        format_size(size)
                    ),
                    (
                        through.map(|(r, w)| bytes as f64 / r + bytes as f64 / w),
                        better,
                        0.0,
                    ),
                    [self.data_rows(pid, src, true), self.data_rows(pid, dst, false)].concat(),
                );
            }
        }
    }
}

#[cfg(test)]
mod own_tests;
#[cfg(test)]
mod path_tests;
#[cfg(test)]
mod switch_tests;
#[cfg(test)]
mod sync_tests;
#[cfg(test)]
mod tests;
