//! Relays: a process writing what it read, in the same request size (dd, cat, tar,
//! tee). One change, the request size, changes both its reads and its writes, so they
//! are priced together, once: the destinations fed by one source alone (dd; tee's
//! outputs) with that source's reads, in its `small_requests` finding; a group of
//! several sources (tar: many files into one archive) and their destinations in one
//! `relay` finding, naming the record size to use both ways.

use super::Finder;
use super::claims::Claim;
use crate::trace::figures::{Curve, Figures};
use crate::trace::price::{curve_for, rows_of, uncurved_s};
use crate::trace::profile::{Op, OpStats, Profile};
use crate::units::format_secs as secs;
use crate::units::format_size;
use crate::units::thousands;
use std::collections::{BTreeMap, BTreeSet};

/// The relays of a profile.
#[derive(Debug, Default)]
pub struct Relays {
    /// (pid, destination) of every relay: its writes are priced with its reads.
    pub dsts: BTreeSet<(i32, usize)>,
    /// (pid, source) of the sources of a group with several: their reads are priced in
    /// the group's finding.
    pub grouped: BTreeSet<(i32, usize)>,
    /// The groups of one process with two sources or more: (pid, sources,
    /// destinations).
    pub groups: Vec<(i32, Vec<usize>, Vec<usize>)>,
}

impl Relays {
    pub fn of(p: &Profile) -> Relays {
        let size = |pid: i32, t: usize, reading: bool| {
            rows_of(p, pid, t)
                .filter(|&(op, _)| op.direction() == Some(reading))
                .find_map(|(_, s)| s.typical_size())
        };
        let pairs: Vec<(i32, usize, usize)> = p
            .copies
            .iter()
            .filter(|&(_, &(pairs, _))| pairs >= 16)
            .filter(|&(&(pid, src, dst), _)| {
                size(pid, src, true).is_some() && size(pid, src, true) == size(pid, dst, false)
            })
            .map(|(&k, _)| k)
            .collect();
        let mut r = Relays {
            dsts: pairs.iter().map(|&(pid, _, dst)| (pid, dst)).collect(),
            ..Relays::default()
        };
        // Connected sources and destinations of each process (union-find on
        // (pid, target, is destination)).
        type Node = (i32, usize, bool);
        let mut up: BTreeMap<Node, Node> = BTreeMap::new();
        fn root(up: &mut BTreeMap<Node, Node>, n: Node) -> Node {
            let mut x = n;
            while let Some(&y) = up.get(&x).filter(|&&y| y != x) {
                x = y;
            }
            up.insert(n, x);
            x
        }
        for &(pid, src, dst) in &pairs {
            let (a, b) = (
                root(&mut up, (pid, src, false)),
                root(&mut up, (pid, dst, true)),
            );
            up.insert(a, b);
        }
        let mut groups: BTreeMap<Node, (BTreeSet<usize>, BTreeSet<usize>)> = BTreeMap::new();
        for &(pid, src, dst) in &pairs {
            let g = groups.entry(root(&mut up, (pid, src, false))).or_default();
            g.0.insert(src);
            g.1.insert(dst);
        }
        for ((pid, _, _), (srcs, dsts)) in groups {
            if srcs.len() >= 2 {
                r.grouped.extend(srcs.iter().map(|&s| (pid, s)));
                r.groups
                    .push((pid, srcs.into_iter().collect(), dsts.into_iter().collect()));
            }
        }
        r
    }
}

/// The writes that `pid` relays from `src` (a source of its own, not of a group), at
/// their request size now and at `best`: (time now, time then, the finding's words for
/// them, the rows they are).
pub fn relayed_writes(
    p: &Profile,
    f: &Figures,
    (pid, src): (i32, usize),
    (size, best): (u64, u64),
    relays: &Relays,
) -> (f64, f64, String, Vec<Claim>) {
    let (mut now, mut then, mut text, mut claims) = (0.0, 0.0, String::new(), Vec::new());
    for (&(_, _, dst), _) in p.copies.range((pid, src, 0)..=(pid, src, usize::MAX)) {
        if !relays.dsts.contains(&(pid, dst)) {
            continue;
        }
        let dst_t = &p.targets[dst];
        for (wop, w) in rows_of(p, pid, dst).filter(|&(op, _)| op.direction() == Some(false)) {
            let cost = |calls: u64, sz: u64| match curve_for(
                f,
                (dst_t.kind, dst_t.family.as_deref(), 0),
                false,
                false,
            ) {
                Some((wc, _)) => f.data_time(wc, false, w.bytes, calls, sz),
                None => uncurved_s(f, calls),
            };
            let wsize = w.typical_size().unwrap_or(size);
            if let (Some(a), Some(b)) = (
                cost(w.calls, wsize),
                cost(w.bytes.div_ceil(best).max(1), best),
            ) {
                now += a;
                then += b;
                claims.push(Claim::Row(pid, dst, wop));
                text.push_str(&format!(
                    ", and its {} {wop}s to {} with them (≈{} here)",
                    thousands(w.calls),
                    dst_t.label(),
                    secs(a)
                ));
            }
        }
    }
    (now, then, text, claims)
}

/// A data row's time now, at its typical size, and in requests of `record` bytes (the
/// same when it already moves that much per call), with its curve, or without one at
/// the cost of a call.
fn row_at(
    f: &Figures,
    (c, reading): (Option<&Curve>, bool),
    s: &OpStats,
    record: u64,
) -> Option<(f64, f64)> {
    let size = s.typical_size()?;
    let cost = |calls: u64, sz: u64| match c {
        Some(c) => f.data_time(c, reading, s.bytes, calls, sz),
        None => uncurved_s(f, calls),
    };
    let now = cost(s.calls, size)?;
    if size >= record {
        return Some((now, now));
    }
    let then = cost(s.bytes.div_ceil(record).max(1), record)?;
    Some((now, then.min(now)))
}

/// Names `n` targets: the one's label, or how many.
fn named(p: &Profile, ts: &[usize], what: &str) -> String {
    match ts {
        [one] => p.targets[*one].label(),
        _ => format!("{} {what}", thousands(ts.len() as u64)),
    }
}

/// What a group's calls add up to: calls, time now and in records of `record` bytes,
/// the typical request size, the rows.
#[derive(Default)]
struct Side {
    calls: u64,
    calls_then: u64,
    now: f64,
    then: f64,
    sizes: BTreeMap<u64, u64>,
    claims: Vec<Claim>,
}

impl Side {
    fn add(
        &mut self,
        f: &Figures,
        curve: (Option<&Curve>, bool),
        row: (i32, usize, Op, &OpStats),
        record: u64,
    ) -> Option<()> {
        let (pid, t, op, s) = row;
        let (now, then) = row_at(f, curve, s, record)?;
        let size = s.typical_size()?;
        self.calls += s.calls;
        self.calls_then += if size >= record {
            s.calls
        } else {
            s.bytes.div_ceil(record).max(1)
        };
        self.now += now;
        self.then += then;
        *self.sizes.entry(size).or_default() += s.calls;
        self.claims.push(Claim::Row(pid, t, op));
        Some(())
    }

    /// The size most calls were made at.
    fn size(&self) -> u64 {
        self.sizes
            .iter()
            .max_by_key(|&(_, &n)| n)
            .map_or(0, |(&s, _)| s)
    }
}

impl Finder<'_> {
    /// One finding per group of sources and destinations a process relays between:
    /// their reads and writes priced once, in the record size that the read and write
    /// curves both reach their knee at (the larger of the two knees).
    pub(super) fn relay_groups(&mut self) {
        let (p, f) = (self.p, self.f);
        for (pid, srcs, dsts) in &self.relays.groups.clone() {
            let curve = |t: usize, reading: bool| {
                let x = &p.targets[t];
                curve_for(
                    f,
                    (x.kind, x.family.as_deref(), p.read_span(t)),
                    reading,
                    p.pipe_sizes.contains_key(&t),
                )
            };
            let record = srcs
                .iter()
                .map(|&t| (t, true))
                .chain(dsts.iter().map(|&t| (t, false)))
                .filter_map(|(t, r)| curve(t, r).and_then(|c| c.0.best_size()))
                .max();
            let Some(record) = record else { continue };
            let (mut reads, mut writes) = (Side::default(), Side::default());
            for (list, reading, side) in [(srcs, true, &mut reads), (dsts, false, &mut writes)] {
                for &t in list {
                    let c = curve(t, reading).map(|c| c.0);
                    for (op, s) in
                        rows_of(p, *pid, t).filter(|&(op, _)| op.direction() == Some(reading))
                    {
                        side.add(f, (c, reading), (*pid, t, op, s), record);
                    }
                }
            }
            let (now, then) = (reads.now + writes.now, reads.then + writes.then);
            if reads.calls == 0 || then >= 0.97 * now {
                continue;
            }
            let records = if reads.size() == writes.size() {
                format!("in {} records", format_size(reads.size()))
            } else {
                format!(
                    "in {} reads and {} writes",
                    format_size(reads.size()),
                    format_size(writes.size())
                )
            };
            let what = format!(
                "{} copies {} into {} {records}: {} reads and {} writes, ≈{} here; in {} records (a larger buffer, blocking factor or bs=) {} reads and {} writes (≈{})",
                crate::trace::price::comm_of(p, *pid),
                named(p, srcs, "files"),
                named(p, dsts, "destinations"),
                thousands(reads.calls),
                thousands(writes.calls),
                secs(now),
                format_size(record),
                thousands(reads.calls_then),
                thousands(writes.calls_then),
                secs(then),
            );
            let mut claims = reads.claims;
            claims.extend(writes.claims);
            self.push(
                "relay",
                *pid,
                named(p, dsts, "destinations"),
                what,
                (
                    Some(now),
                    Some(then),
                    (reads.calls_then + writes.calls_then) as f64
                        / (reads.calls + writes.calls).max(1) as f64,
                ),
                claims,
            );
        }
    }
}
