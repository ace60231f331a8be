//! Pricing a profile with this machine's measured figures ([`Figures`]): a traced
//! operation's time here, the curve it is priced on, and the words the findings
//! share. Traced durations are not used (tracing inflates them), but for a call that
//! waits by its nature: an fsync's own time in this run, where the tracer timed enough
//! of them (tracing's part, a fraction of a microsecond, against the disk's tens or
//! hundreds): a write probe's fsync rewrites allocated blocks, where a program's
//! fsync after appending commits the file's new size and blocks too (277 µs against
//! 87 here, 29 Nov 2026).

use super::figures::{Curve, Figures};
use super::profile::{Kind, Op, OpStats, Profile, Target};
use crate::probes::syscalls::Case;
use crate::sys::trace::calls::Syscall;
use crate::units::format_ns;

/// The rows of process `pid` on target `t`.
pub(super) fn rows_of(p: &Profile, pid: i32, t: usize) -> impl Iterator<Item = (Op, &OpStats)> {
    p.ops
        .range((pid, t, Op::first())..)
        .take_while(move |&(&(q, x, _), _)| q == pid && x == t)
        .map(|(&(_, _, op), s)| (op, s))
}

/// `pid` as a `cat f | prog` relay from file `src` into pipe `dst`: its relay's priced
/// time and calls, when the relay is (nearly) all the data it moves (loading its
/// program and libraries reads a few KiB besides); None otherwise.
pub(super) fn pipe_relay(
    p: &Profile,
    f: &Figures,
    pid: i32,
    src: usize,
    dst: usize,
) -> Option<(Option<f64>, u64)> {
    let rows: Vec<(usize, Op, &OpStats)> = p
        .ops
        .iter()
        .filter(|&(&(q, _, op), _)| q == pid && op.direction().is_some())
        .map(|(&(_, t, op), s)| (t, op, s))
        .collect();
    let relay = |&&(t, op, _): &&(usize, Op, &OpStats)| {
        (t == src && op.direction() == Some(true)) || (t == dst && op.direction() == Some(false))
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

/// The context switches pipe `t`'s ends made beyond those the pipe probe's ends made
/// for the same bytes ([`Figures::pipe_switches`]), and what they cost here
/// ([`Figures::switch_s`]): (switches, seconds). Each process's switches (eBPF: between
/// its first and last timed call) are put on its pipes in proportion to its data calls
/// on each. The probe's are taken at the smaller of the writes' and the reads' typical
/// sizes: `cat | md5sum` writes 128 KiB and reads 32 KiB, and switched twice as often
/// as the probe's ends at 128 KiB (which read what they write). `dd bs=1k | wc -l` on
/// one CPU switched 72,000 times for 100 MiB where the probe's ends switch 6,500 times
/// a GiB: wc woke at every write. None where no switch was counted or the figures lack
/// the cost.
pub(super) fn pipe_switches(p: &Profile, f: &Figures, t: usize) -> Option<(f64, f64)> {
    let switch_s = f.switch_s?;
    if p.targets.get(t)?.kind != Kind::Pipe {
        return None;
    }
    let pipe_calls = |pid: i32| -> u64 {
        p.ops
            .range((pid, 0, Op::first())..(pid + 1, 0, Op::first()))
            .filter(|(k, _)| p.targets[k.1].kind == Kind::Pipe && k.2.direction().is_some())
            .map(|(_, s)| s.calls)
            .sum()
    };
    let (mut switches, mut written, mut writes, mut read, mut reads) = (0.0, 0u64, 0u64, 0, 0);
    for (&(pid, at, op), s) in &p.ops {
        if at != t || op.direction().is_none() {
            continue;
        }
        if op.direction() == Some(false) {
            (written, writes) = (written + s.bytes, writes + s.calls);
        } else {
            (read, reads) = (read + s.bytes, reads + s.calls);
        }
        let mine = p.processes.get(&pid).map_or(0, |q| q.switches) as f64;
        switches += mine * s.calls as f64 / pipe_calls(pid).max(1) as f64;
    }
    if switches == 0.0 || writes == 0 {
        return None;
    }
    // The bytes cross in pieces no larger than the smaller side's: the probe's ends
    // (which read what they write) at that size.
    let piece = match (written / writes, read.checked_div(reads)) {
        (w, Some(r)) if r > 0 => w.min(r),
        (w, _) => w,
    };
    let per_byte = f.pipe_switches.rate(piece).unwrap_or(0.0);
    let extra = (switches - per_byte * written as f64).max(0.0);
    Some((extra, extra * switch_s))
}

/// What one of `pid`'s fsyncs of target `t` costs, and where that comes from, said
/// with it: each fsync and fdatasync row priced as the table prices it (the trimmed mean of
/// those the tracer timed in this run, see [`OpStats::timed_mean_s`], else the write
/// probe's figure, [`fsync_source`]), their mean per call. Pooled, the rows' timed
/// calls once gave one figure to both where the table priced each apart.
pub(super) fn fsync_price(p: &Profile, f: &Figures, pid: i32, t: usize) -> (Option<f64>, String) {
    let rows: Vec<(Op, &OpStats)> = rows_of(p, pid, t).filter(|&(op, _)| is_fsync(op)).collect();
    let timed: Vec<(Op, (f64, u64))> = rows
        .iter()
        .filter_map(|&(op, s)| s.timed_mean_s().map(|m| (op, m)))
        .collect();
    if timed.is_empty() {
        return (f.fsync_s, fsync_source(f, "an fsync"));
    }
    let calls: u64 = rows.iter().map(|r| r.1.calls).sum();
    // Each row as the table prices it.
    let large_pipe = p.pipe_sizes.contains_key(&t);
    let total: Option<f64> = rows
        .iter()
        .map(|&(op, s)| time_here(f, &p.targets[t], op, s, large_pipe))
        .sum();
    let said: Vec<String> = timed
        .iter()
        .map(|&(op, (c, n))| {
            let name = op.name();
            format!(
                "{} priced at {}, the trimmed mean of {} of these {name}s timed in this run",
                if timed.len() == 1 {
                    format!("an {name}")
                } else {
                    format!("{name}s")
                },
                format_ns(c * 1e9),
                crate::units::thousands(n)
            )
        })
        .collect();
    let rest = if timed.len() < rows.len() {
        fsync_source(f, "the others")
    } else {
        String::new()
    };
    (
        total.map(|t| t / calls.max(1) as f64),
        format!(" ({}){rest}", said.join("; ")),
    )
}

/// An fsync or fdatasync row.
pub(super) fn is_fsync(op: Op) -> bool {
    matches!(op.call(), Some(Syscall::Fsync | Syscall::Fdatasync))
}

/// Where the write probe's fsync price comes from, said with it: one measurement of
/// this disk, at that time (a disk busy with another process's writes costs several
/// times more).
fn fsync_source(f: &Figures, which: &str) -> String {
    match (f.fsync_s, f.sources.iter().find(|(p, _)| p == "write")) {
        (Some(c), Some((_, id))) => format!(
            " ({which} priced at {}, as write run {id} measured this disk{}: a disk busy with other writes costs more; --figures picks another run)",
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

/// The throughput curve that prices data calls on a target of `kind` (a socket of
/// `family`, where the trace found it; a file of which `span` distinct bytes are read,
/// [`Figures::read_for`]), and its name.
pub(super) fn curve_for<'f>(
    f: &'f Figures,
    (kind, family, span): (Kind, Option<&str>, u64),
    reading: bool,
    large_pipe: bool,
) -> Option<(&'f Curve, &'static str)> {
    let c = match kind {
        Kind::File if reading => (f.read_for(span), "read"),
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
pub fn time_here(f: &Figures, t: &Target, op: Op, s: &OpStats, large_pipe: bool) -> Option<f64> {
    if let Some(reading) = op.direction() {
        if let Some((c, _)) = curve_for(
            f,
            (t.kind, t.family.as_deref(), s.span()),
            reading,
            large_pipe,
        ) && s.bytes > 0
        {
            let size = s.typical_size().unwrap_or(s.bytes);
            return f.data_time(c, reading, s.bytes, s.calls, size);
        }
        return uncurved_s(f, s.calls);
    }
    let per_call = match op.call() {
        Some(Syscall::Lseek) => f.lseek_s(),
        Some(Syscall::Open | Syscall::Openat | Syscall::Openat2 | Syscall::Creat) => {
            f.open_s(s.mean_components())
        }
        Some(Syscall::Close) => Some(0.0),
        Some(Syscall::Stat) => f.stat_s(s.mean_components()),
        Some(Syscall::Fstat) => f.ns(Case::Fstat).map(|n| n * 1e-9),
        Some(Syscall::Fsync | Syscall::Fdatasync) => s.timed_mean_s().map(|m| m.0).or(f.fsync_s),
        _ => f.ns(Case::Null).map(|n| n * 1e-9),
    }?;
    Some(s.calls as f64 * per_call)
}

/// What `calls` data calls on a target no curve prices (a device such as /dev/null)
/// take here: a null call each. The table and every finding price them so.
pub(super) fn uncurved_s(f: &Figures, calls: u64) -> Option<f64> {
    f.ns(Case::Null).map(|ns| calls as f64 * ns * 1e-9)
}

/// The process's name as the report shows it.
pub(super) fn comm_of(p: &Profile, pid: i32) -> String {
    p.processes.get(&pid).map_or("?".into(), |x| x.comm.clone())
}
