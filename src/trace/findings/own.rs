//! The program's own work per call: what it does between one call and the next (an
//! interpreter's loop, libc's wrapper, tar's record handling), which goes away with
//! the calls a finding would remove.
//!
//! Where the tracer times calls (eBPF: a sample of pairs, [`Gaps`]), a pair's interval
//! holds the program's work before its second call, that call, and what tracing added.
//! Less the call's price here (the row's priced time over its calls) and tracing's part
//! (calibrated, [`crate::trace::overhead::tracer_cost`]), the median is the row's own
//! work per call, and the quartiles its range. Where calls are not timed (ptrace,
//! preload), the run's user CPU over its calls stands for it. docs/trace.md has the
//! rule and the figures behind it.

use crate::trace::figures::Figures;
use crate::trace::price::time_here;
use crate::trace::profile::{Gaps, Op, Profile};
use serde::Serialize;
use std::collections::BTreeMap;

/// Timed calls a row needs for its own work to be estimated.
pub const MIN_TIMED: u64 = 16;

/// What a run's findings are priced against: its work here, the part of it that is its
/// processes' user CPU (what own work is part of), and how its own work per call is
/// known.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub work_s: f64,
    pub user_cpu_s: f64,
    pub own: Own,
}

/// How a run's own work per call is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Own {
    /// Calls timed in pairs (eBPF): what tracing puts in a pair's interval (s).
    Timed { tracer_s: f64 },
    /// Calls not timed (ptrace, preload): the run's user CPU over its traced calls (s).
    Split { per_call_s: f64 },
    /// Not known (eBPF whose calls were too few to time, or whose cost here could not
    /// be measured).
    Unknown,
}

impl From<f64> for Budget {
    /// A run's work with no call timed.
    fn from(work_s: f64) -> Budget {
        Budget {
            work_s,
            user_cpu_s: work_s,
            own: Own::Unknown,
        }
    }
}

/// How a finding's own work is known: from timed pairs of calls (eBPF), or the run's
/// user CPU split over its traced calls (ptrace, preload). JSON: "timed",
/// "user_cpu_split".
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Timed,
    UserCpuSplit,
}

/// The program's own work behind a finding's calls and what the change saves of it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct OwnWork {
    /// How it is known.
    pub method: Method,
    /// The claimed rows' calls now, and how many the change removes.
    pub calls: u64,
    pub calls_removed: u64,
    /// How the loop changes with the calls, and so what share of its work goes
    /// (JSON: `loop`).
    #[serde(rename = "loop")]
    pub how: Loop,
    /// Own work per call that goes with a call (the claimed rows' median, weighted by
    /// their calls, after [`with_calls`]).
    pub per_call_s: f64,
    /// The work measured between calls, per call, before [`with_calls`] took its part,
    /// and the calls' price here, each (s).
    pub between_s: f64,
    pub call_s: f64,
    /// What the change saves of it, with its range (the gaps' quartiles).
    pub saving_s: f64,
    pub low_s: f64,
    pub high_s: f64,
}

/// A row's own work per call that goes with a call (s), with its range: its gaps less
/// its call's price and the tracer's cost ([`between`]), at the median and over the
/// quartiles, of which [`with_calls`] and the loop's share ([`Loop`]) let through.
pub fn per_call(
    gaps: &Gaps,
    call_s: f64,
    tracer_s: f64,
    size: u64,
    how: Loop,
) -> Option<(f64, f64, f64)> {
    let at = |q| between(gaps, call_s, tracer_s, size, q);
    let (m, a, b) = (at(0.5)?, at(0.25)?, at(0.75)?);
    // A gap past one call's cost counts for less (`with_calls`): the range is the
    // least and the most of the three, each at its end of the share; its top, for
    // buffered writes, what the longest path to a write measured would leave.
    let goes = |g| with_calls(g, call_s, how);
    let most = |g| how.at_most(g, call_s);
    let (lo, mid, hi) = how.share();
    Some((
        goes(m) * mid,
        goes(m).min(goes(a)).min(goes(b)) * lo,
        most(m).max(most(a)).max(most(b)) * hi,
    ))
}

/// Quantile `q` of a row's work between calls (s), before [`with_calls`] takes the
/// part that goes with them: the gap less the call's price, the tracer's cost and the
/// work that grows with the bytes ([`per_call`]); None under [`MIN_TIMED`] pairs.
pub fn between(gaps: &Gaps, call_s: f64, tracer_s: f64, size: u64, q: f64) -> Option<f64> {
    if gaps.len() < MIN_TIMED {
        return None;
    }
    let per_byte = gaps.per_byte_ns().map_or(0.0, |b| {
        let call = call_s * 1e9 / size.max(1) as f64;
        (b - call).max(0.0) * 1e-9
    });
    let scaled = per_byte * size as f64;
    Some((gaps.quantile(q)? * 1e-9 - call_s - tracer_s - scaled).max(0.0))
}

/// How a program's loop changes when a finding's calls go.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Loop {
    /// Fewer, larger calls: the loop around them runs fewer times (reads, copies,
    /// relays). JSON: "fewer".
    Fewer,
    /// Pieces the program makes one by one and writes at once (a write per line): the
    /// fix is a buffer in front of the same loop, which still makes each piece and
    /// hands it over; the call and the path leading to it go. JSON: "buffered".
    Buffered,
}

/// Of the work between a buffered write's calls, the share that goes with them:
/// (low, median, high) over the programs measured (docs/trace.md: the loop, the
/// formatting and the buffer's own append stay).
pub const BUFFERED_SHARE: (f64, f64, f64) = (0.6, 0.7, 0.8);

impl Loop {
    /// Calls' cost up to which a gap counts whole (from twice as much, not at all):
    /// one call for a loop that runs fewer times; for buffered writes, the longest
    /// path to a write measured (Python's `print` through two buffered layers: 2.5).
    fn whole_up_to(self) -> f64 {
        match self {
            Loop::Fewer => 1.0,
            Loop::Buffered => 2.5,
        }
    }

    /// The most of a gap that may go with its call, for a range's top: what
    /// [`with_calls`] lets through; for buffered writes, a path to the write as long as
    /// the longest measured, however long the gap.
    fn at_most(self, gap: f64, call_s: f64) -> f64 {
        match self {
            Loop::Fewer => with_calls(gap, call_s, self),
            Loop::Buffered => gap.min(call_s * self.whole_up_to()),
        }
    }

    /// The share of what [`with_calls`] lets through that goes: (low, median, high).
    fn share(self) -> (f64, f64, f64) {
        match self {
            Loop::Fewer => (1.0, 1.0, 1.0),
            Loop::Buffered => BUFFERED_SHARE,
        }
    }
}

/// Of a gap of `gap` seconds between calls that each cost `call_s`, the part that goes
/// with the calls. A loop issuing a call (libc's wrapper, an interpreter's dispatch and
/// the object it returns) costs at most about the call itself; a gap of more is work on
/// the bytes the calls moved (hashing, compressing), which stays when they are moved in
/// fewer calls. So up to one call's cost the whole gap goes, from two calls' cost none
/// of it, and in between a share falling from all to nothing (docs/trace.md, with the
/// cases it was decided on). For buffered writes, the same from 2.5 and 5 calls' cost
/// ([`Loop::whole_up_to`]), before their share ([`BUFFERED_SHARE`]): a longer gap is
/// the making of each piece (a log record's formatting), which hides what its path to
/// the write took (the range's top allows for that path, [`per_call`]).
pub fn with_calls(gap: f64, call_s: f64, how: Loop) -> f64 {
    let whole = call_s * how.whole_up_to();
    if gap <= whole {
        gap
    } else {
        (whole * (2.0 - gap / whole)).max(0.0)
    }
}

/// Row `key`'s own work per call ([`per_call`]), its call priced here: None where it
/// is not timed or not priced.
pub fn of_row(
    p: &Profile,
    f: &Figures,
    (pid, t, op): (i32, usize, Op),
    tracer_s: f64,
) -> Option<(f64, f64, f64)> {
    let (s, time) = priced((pid, t, op), p, f)?;
    per_call(
        &s.gaps,
        time / s.calls.max(1) as f64,
        tracer_s,
        s.typical_size().unwrap_or(1),
        Loop::Fewer,
    )
}

/// Row `key`'s stats and what its calls take here.
fn priced<'a>(
    (pid, t, op): (i32, usize, Op),
    p: &'a Profile,
    f: &Figures,
) -> Option<(&'a crate::trace::profile::OpStats, f64)> {
    let s = p.ops.get(&(pid, t, op))?;
    let large = p.pipe_sizes.contains_key(&t);
    Some((s, time_here(f, &p.targets[t], op, s, large)?))
}

/// The own work of every timed row of `p` (s): the program's work between its calls,
/// measured.
pub fn total(p: &Profile, f: &Figures, tracer_s: f64) -> f64 {
    p.ops
        .iter()
        .filter_map(|(&key, s)| Some(of_row(p, f, key, tracer_s)?.0 * s.calls as f64))
        .sum()
}

/// The own work behind `rows` when a change keeps `kept` of their calls (0–1): the
/// rows of one operation taken together (tar's 512 B reads of 200 files: a few timed
/// calls each, thousands in all), each group's calls priced here. None where a group
/// is not timed enough or not priced, or the change keeps every call.
pub fn of_rows(
    rows: &[(i32, usize, Op)],
    (kept, how): (f64, Loop),
    p: &Profile,
    f: &Figures,
    own: Own,
) -> Option<OwnWork> {
    let gone = (1.0 - kept).clamp(0.0, 1.0);
    if rows.is_empty() || gone == 0.0 || own == Own::Unknown {
        return None;
    }
    // Per operation: the rows' gaps, calls, priced time and bytes asked.
    let mut groups: BTreeMap<Op, (Gaps, u64, f64, u64)> = BTreeMap::new();
    for &key in rows {
        let (s, time) = priced(key, p, f)?;
        let g = groups.entry(key.2).or_default();
        g.0.merge(&s.gaps);
        g.1 += s.calls;
        g.2 += time;
        g.3 += s.typical_size().unwrap_or(1) * s.calls;
    }
    let (mut calls, mut mid, mut low, mut high) = (0u64, 0.0, 0.0, 0.0);
    let (mut measured, mut priced) = (0.0, 0.0);
    for (gaps, n, time, asked) in groups.values() {
        let per = n.max(&1);
        let call = time / *per as f64;
        let (m, l, h, w) = match own {
            Own::Timed { tracer_s } => {
                let (m, l, h) = per_call(gaps, call, tracer_s, asked / per, how)?;
                (m, l, h, between(gaps, call, tracer_s, asked / per, 0.5)?)
            }
            // Its share of the user CPU, but no more than a loop issuing the call would
            // take ([`with_calls`]); from none of it to that.
            Own::Split { per_call_s } => {
                let v = with_calls(per_call_s, call, how);
                let (_, mid, hi) = how.share();
                (v * mid, 0.0, how.at_most(per_call_s, call) * hi, per_call_s)
            }
            Own::Unknown => return None,
        };
        let n = *n as f64;
        calls += *per;
        (mid, low, high) = (mid + n * m, low + n * l, high + n * h);
        (measured, priced) = (measured + n * w, priced + time);
    }
    Some(OwnWork {
        method: match own {
            Own::Timed { .. } => Method::Timed,
            _ => Method::UserCpuSplit,
        },
        calls,
        calls_removed: (calls as f64 * gone).round() as u64,
        how,
        per_call_s: mid / calls.max(1) as f64,
        between_s: measured / calls.max(1) as f64,
        call_s: priced / calls.max(1) as f64,
        saving_s: mid * gone,
        low_s: low * gone,
        high_s: high * gone,
    })
}

impl OwnWork {
    /// Scaled by `k` (0–1): the run's own-work savings cut to its user CPU.
    pub fn scaled(self, k: f64) -> OwnWork {
        OwnWork {
            per_call_s: self.per_call_s * k,
            saving_s: self.saving_s * k,
            low_s: self.low_s * k,
            high_s: self.high_s * k,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::trace::calls::Syscall;
    use crate::sys::trace::{Event, Memory, Timing};
    use crate::trace::figures::Curve;
    use crate::trace::profile::testing::{F, T, open, profile};

    /// A profile of `n` reads of `size` bytes on F (fd 3), as eBPF feeds it: one call in
    /// 40 starts a timed pair ending at the next, `gap(i, size)` ns later, with `switched`
    /// pairs (a context switch between) left as they come.
    fn stream(n: u64, size: impl Fn(u64) -> u64, gap: impl Fn(u64, u64) -> u64) -> Profile {
        let mut p = profile();
        open(&mut p, F, 3);
        let mut t = 1_000_000u32;
        for i in 0..n {
            let bytes = size(i);
            let timing = match i % 40 {
                0 => Some(Timing {
                    ended_ns: t,
                    switches: 7,
                    second: false,
                }),
                1 => {
                    t = t.wrapping_add(gap(i, bytes) as u32);
                    Some(Timing {
                        ended_ns: t,
                        switches: if i % 400 == 1 { 8 } else { 7 },
                        second: true,
                    })
                }
                _ => None,
            };
            if i % 40 != 0 {
                t = t.wrapping_add(5_000);
            }
            p.add(&Event::Call {
                tid: T,
                call: Syscall::Read,
                args: [3, 0x9000, bytes, 0, 0, 0],
                ret: bytes as i64,
                mem: Memory::default(),
                timing,
            });
        }
        p
    }

    /// Reads at 1 GB/s whatever their size (1 ns a byte).
    fn figures() -> Figures {
        Figures {
            read: Curve(vec![(512, 1e9), (1 << 20, 1e9)]),
            ..Figures::default()
        }
    }

    fn read_row(p: &Profile) -> (i32, usize, Op) {
        *p.ops
            .keys()
            .find(|k| k.2 == Op::Call(Syscall::Read))
            .unwrap()
    }

    #[test]
    fn a_tight_loops_stream_gives_its_loop() {
        // 512 B reads (512 ns each here), 900 ns between a pair's ends, tracing 200 ns:
        // 188 ns of loop. A pair with a switch between is left out (its 50 µs).
        let p = stream(
            8_000,
            |_| 512,
            |i, _| if i % 400 == 1 { 50_000 } else { 900 },
        );
        let key = read_row(&p);
        assert_eq!(p.ops[&key].gaps.len(), 180);
        let (m, l, h) = of_row(&p, &figures(), key, 200e-9).unwrap();
        // Within the histogram's bucket (about 64 ns wide at 900 ns).
        assert!((m - 188e-9).abs() < 64e-9, "{m}");
        assert!(l <= m && m <= h);
    }

    #[test]
    fn a_stream_whose_work_grows_with_its_bytes_keeps_that_work() {
        // 300 ns of loop and 2 ns a byte of the program's own (a checksum) on reads of
        // 1–64 KiB that cost 1 ns a byte: what goes with the calls is about the loop.
        let size = |i: u64| 1024 * (1 + (i / 40) % 64);
        let p = stream(40 * 2_000, size, |_, b| 300 + 3 * b);
        let key = read_row(&p);
        let s = &p.ops[&key];
        let (m, _, _) = of_row(&p, &figures(), key, 0.0).unwrap();
        // The median gap is tens of µs, nearly all of it the bytes' work.
        assert!(s.gaps.quantile(0.5).unwrap() > 30_000.0);
        assert!(m < 5e-6, "{m}");
    }

    #[test]
    fn outliers_in_a_stream_move_its_range_not_its_median() {
        // One pair in ten took 20 µs more (an interrupt, a page fault).
        let p = stream(
            40 * 1_000,
            |_| 512,
            |i, _| if i % 400 == 41 { 20_900 } else { 900 },
        );
        let key = read_row(&p);
        let (m, _, h) = of_row(&p, &figures(), key, 200e-9).unwrap();
        // Within the histogram's bucket (about 64 ns wide at 900 ns).
        assert!((m - 188e-9).abs() < 64e-9, "{m}");
        assert!(h >= m);
    }

    fn gaps(ns: impl IntoIterator<Item = u64>) -> Gaps {
        let mut g = Gaps::default();
        for x in ns {
            g.add(x);
        }
        g
    }

    #[test]
    fn a_tight_loop_has_its_gap_less_the_call_and_the_tracer() {
        // 1,000 calls 900 ns apart: 500 ns the call, 200 ns the tracer, 200 ns of loop.
        let g = gaps(std::iter::repeat_n(900, 1000));
        let (m, l, h) = per_call(&g, 500e-9, 200e-9, 4096, Loop::Fewer).unwrap();
        assert!((m - 200e-9).abs() < 60e-9, "{m}");
        assert!(l <= m && m <= h && h - l < 100e-9, "{l} {m} {h}");
    }

    #[test]
    fn a_gap_longer_than_the_call_is_work_on_the_bytes() {
        assert_eq!(with_calls(100e-9, 300e-9, Loop::Fewer), 100e-9);
        assert!((with_calls(450e-9, 300e-9, Loop::Fewer) - 150e-9).abs() < 1e-12);
        assert_eq!(with_calls(50e-6, 3e-6, Loop::Fewer), 0.0);
        // md5sum's 32 KiB reads: 50 µs of hashing between 3 µs calls go nowhere.
        let g = gaps(std::iter::repeat_n(53_000, 1000));
        assert_eq!(
            per_call(&g, 3e-6, 0.0, 32 << 10, Loop::Fewer).unwrap().0,
            0.0
        );
    }

    #[test]
    fn outliers_move_the_range_not_the_median() {
        // A loop of 2 µs gaps where one call in ten waited 5 ms.
        let g = gaps((0..1000).map(|i| if i % 10 == 0 { 5_000_000 } else { 2_000 }));
        let (m, l, _) = per_call(&g, 1.6e-6, 0.0, 4096, Loop::Fewer).unwrap();
        assert!((m - 0.4e-6).abs() < 0.1e-6, "{m}");
        assert!((l - 0.4e-6).abs() < 0.1e-6, "{l}");
    }

    #[test]
    fn a_loop_whose_work_grows_with_its_bytes_keeps_that_part() {
        // 300 ns of loop and 0.25 ns a byte of the program's own (a checksum, say), the
        // call 100 ns and 0.05 ns a byte: sizes 1–64 KiB.
        let mut g = Gaps::default();
        for i in 0..640u64 {
            let bytes = 1024 * (1 + i % 64);
            g.add(300 + 100 + bytes * 30 / 100);
            g.sized(bytes);
        }
        let size = 32 * 1024;
        let call = (100.0 + 0.05 * size as f64) * 1e-9;
        let (m, _, _) = per_call(&g, call, 0.0, size, Loop::Fewer).unwrap();
        // The median gap is about 10 µs, nearly all of it the bytes' work: what goes
        // with the calls is the loop's (within the histogram's 9% buckets of 10 µs).
        assert!(m < 1e-6, "{m}");
        assert!(g.quantile(0.5).unwrap() > 9_000.0);
    }

    #[test]
    fn gaps_that_vary_give_a_wide_range_and_few_give_none() {
        let g = gaps((0..1000u64).map(|i| 21_000 + 10 * i));
        let (m, l, h) = per_call(&g, 20e-6, 0.0, 4096, Loop::Fewer).unwrap();
        assert!(l < 0.8 * m && h > 1.2 * m, "{l} {m} {h}");
        assert_eq!(per_call(&gaps([1000; 15]), 0.0, 0.0, 1, Loop::Fewer), None);
        // A call dearer than its gap (it waited): no negative work.
        assert_eq!(
            per_call(&gaps([1000; 20]), 5e-6, 0.0, 1, Loop::Fewer)
                .unwrap()
                .0,
            0.0
        );
    }

    #[test]
    fn a_buffered_writes_gap_goes_in_part_and_counts_to_longer_paths() {
        // Python's print with a flush: 1.2 µs of work between 0.5 µs writes. A loop
        // that runs fewer times would count none of it (past two calls' cost); behind
        // a buffer the path to the write goes and the piece's making stays.
        assert_eq!(with_calls(1.2e-6, 0.5e-6, Loop::Fewer), 0.0);
        assert_eq!(with_calls(1.2e-6, 0.5e-6, Loop::Buffered), 1.2e-6);
        let half_way = with_calls(1.875e-6, 0.5e-6, Loop::Buffered);
        assert!((half_way - 0.625e-6).abs() < 1e-12, "{half_way}");
        // Logging's 20 µs a record is the record's making: none of it, but the range
        // reaches to the longest path measured (2.5 calls), at 80%.
        assert_eq!(with_calls(20e-6, 0.5e-6, Loop::Buffered), 0.0);
        let long = gaps(std::iter::repeat_n(20_700, 1000));
        let (m, l, h) = per_call(&long, 0.5e-6, 0.2e-6, 40, Loop::Buffered).unwrap();
        assert_eq!((m, l), (0.0, 0.0));
        assert!((h - 0.8 * 1.25e-6).abs() < 1e-12, "{h}");
        assert_eq!(
            per_call(&long, 0.5e-6, 0.2e-6, 40, Loop::Fewer).unwrap().2,
            0.0
        );
        let g = gaps(std::iter::repeat_n(1_900, 1000));
        let (m, l, h) = per_call(&g, 0.5e-6, 0.2e-6, 12, Loop::Buffered).unwrap();
        // 1.2 µs between calls, 70% of it (60–80%), within the histogram's bucket.
        assert!((m - 0.84e-6).abs() < 0.07e-6, "{m}");
        // The range: 60% of the least of its quartiles' gaps, 80% of the most.
        assert!(
            l <= m * 0.6 / 0.7 + 1e-15 && h >= m * 0.8 / 0.7 - 1e-15,
            "{l} {m} {h}"
        );
    }
}
