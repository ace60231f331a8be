//! The fsync finding on hand-made event streams: fsyncs priced at the time the tracer
//! took for them, each row of a file apart.

use super::tests::figures;
use super::*;
use crate::trace::price::time_here;

/// A program that appends 4 KiB and fsyncs it, `n` times, as the eBPF tracer feeds it:
/// every 5th write starts a timed pair that its fsync ends, `fsync_ns` later, the task
/// switched out in between (it waited for the disk).
fn appending_fsyncs(n: u64, fsync_ns: u32) -> Profile {
    appending_syncs(n, &[(Syscall::Fsync, fsync_ns)])
}

/// [`appending_fsyncs`] whose `i`th sync is `syncs[i % len]`: its call, and how long
/// after its write it ends.
fn appending_syncs(n: u64, syncs: &[(Syscall, u32)]) -> Profile {
    use crate::sys::trace::{Event, Memory, Timing};
    use crate::trace::profile::testing::{F, T, open, profile};
    let mut p = profile();
    open(&mut p, F, 3);
    let mut t = 1_000_000u32;
    for i in 0..n {
        let timed = i % 5 == 0;
        let (sync, fsync_ns) = syncs[i as usize % syncs.len()];
        for (call, args, ret, second) in [
            (Syscall::Write, [3, 0x9000, 4096, 0, 0, 0], 4096, false),
            (sync, [3, 0, 0, 0, 0, 0], 0, true),
        ] {
            let switches = if second { 8 } else { 7 };
            t = t.wrapping_add(if second { fsync_ns } else { 2_000 });
            p.add(&Event::Call {
                tid: T,
                call,
                args,
                ret,
                mem: Memory::default(),
                timing: timed.then_some(Timing {
                    ended_ns: t,
                    switches,
                    second,
                }),
            });
        }
    }
    p
}

#[test]
fn fsyncs_the_tracer_timed_are_priced_at_their_own_time() {
    // 300 µs each (an append's fsync commits the file's size and blocks), against the
    // write probe's 100 µs for a rewrite in place.
    let p = appending_fsyncs(100, 300_000);
    let f = figures();
    let found = findings(&p, &f, 1.0);
    let sync = found.iter().find(|x| x.kind == "fsync_per_write").unwrap();
    // 99 of 100 fsyncs go, at the trimmed mean of the 20 timed (within its bucket's
    // 6–12%).
    let per = sync.saving_s.unwrap() / 99.0;
    assert!((per - 300e-6).abs() < 0.12 * 300e-6, "{per}");
    assert!(
        sync.text.contains("(an fsync priced at 3")
            && sync
                .text
                .contains("the trimmed mean of 20 of these fsyncs timed in this run)"),
        "{}",
        sync.text
    );
    // The table prices the row the same way.
    let (&(pid, t, op), s) = p
        .ops
        .iter()
        .find(|(k, _)| k.2 == Op::Call(Syscall::Fsync))
        .unwrap();
    assert_eq!((s.waited.len(), s.gaps.len()), (20, 0));
    let row = time_here(&f, &p.targets[t], op, s, false).unwrap();
    assert!((row / 100.0 - per).abs() < 1e-12, "{row} {pid}");
    // Too few timed (7): the write probe's figure, said so.
    let few = appending_fsyncs(35, 300_000);
    let sync = findings(&few, &f, 1.0);
    let sync = sync.iter().find(|x| x.kind == "fsync_per_write").unwrap();
    assert!((sync.saving_s.unwrap() - 34.0 * 100e-6).abs() < 1e-12);
    assert!(!sync.text.contains("timed in this run"), "{}", sync.text);
}

#[test]
fn fsyncs_and_fdatasyncs_are_priced_each_at_their_own_time_as_the_table_prices_them() {
    // Appends synced by fsync (300 µs: the file's size and blocks) and fdatasync (100
    // µs) in turn, 200 of each, 40 of each timed.
    let p = appending_syncs(
        400,
        &[(Syscall::Fsync, 300_000), (Syscall::Fdatasync, 100_000)],
    );
    let f = figures();
    let found = findings(&p, &f, 1.0);
    let sync = found.iter().find(|x| x.kind == "fsync_per_write").unwrap();
    // Each row as the table prices it; pooled, their median (one of the two) would
    // price them all.
    let table: f64 = p
        .ops
        .iter()
        .filter(|(k, _)| matches!(k.2, Op::Call(Syscall::Fsync | Syscall::Fdatasync)))
        .map(|(k, s)| time_here(&f, &p.targets[k.1], k.2, s, false).unwrap())
        .sum();
    let per = sync.saving_s.unwrap() / 399.0;
    assert!((per - table / 400.0).abs() < 1e-12, "{per} {table}");
    assert!((per - 200e-6).abs() < 0.12 * 200e-6, "{per}");
    assert!(
        sync.text.contains("fsyncs priced at 3") && sync.text.contains("fdatasyncs priced at 1"),
        "{}",
        sync.text
    );
}

#[test]
fn fsyncs_of_one_row_taking_two_costs_are_priced_at_their_mean() {
    // sqlite's journal: synced after its records and again after its header, one
    // row whose calls take two costs. Half the timed fsyncs take 100 µs, half 300 µs:
    // the row's total is 200 µs a call, which no median of them is (it priced 2,000
    // sqlite transactions at 0.66–0.81 of what they took).
    let p = appending_syncs(400, &[(Syscall::Fsync, 100_000), (Syscall::Fsync, 300_000)]);
    let f = figures();
    let found = findings(&p, &f, 1.0);
    let sync = found.iter().find(|x| x.kind == "fsync_per_write").unwrap();
    let per = sync.saving_s.unwrap() / 399.0;
    assert!((per - 200e-6).abs() < 0.06 * 200e-6, "{per}");
    assert!(
        sync.text.contains("the trimmed mean of 80 of these fsyncs"),
        "{}",
        sync.text
    );
}

#[test]
fn one_slow_fsync_among_those_timed_does_not_price_them_all() {
    // 1 of the 20 timed took 5 ms (a journal commit waited on), the others 200 µs: its
    // mean, 440 µs, would price every fsync from one sample; the slowest and fastest
    // tenth left out, 200 µs.
    let mut syncs = vec![(Syscall::Fsync, 200_000); 100];
    syncs[0].1 = 5_000_000;
    let p = appending_syncs(100, &syncs);
    let found = findings(&p, &figures(), 1.0);
    let sync = found.iter().find(|x| x.kind == "fsync_per_write").unwrap();
    let per = sync.saving_s.unwrap() / 99.0;
    assert!((per - 200e-6).abs() < 0.06 * 200e-6, "{per}");
}
