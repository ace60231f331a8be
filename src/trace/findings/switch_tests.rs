//! A pipe's context switches beyond the pipe probe's: counted per process, put on its
//! pipes, priced in the work and in the relay that causes them.

use super::super::profile::{OpStats, Process, Target};
use super::tests::figures;
use super::*;
use crate::trace::figures::Curve;
use crate::trace::price::pipe_switches;

fn stats(calls: u64, bytes: u64) -> OpStats {
    let mut s = OpStats {
        calls,
        bytes,
        ..OpStats::default()
    };
    let b = crate::trace::profile::bucket(bytes / calls.max(1));
    s.sizes.insert(b, calls);
    s.asked.insert(b, bytes);
    s
}

/// `dd bs=1k | wc -l` as eBPF saw it: dd (1) reads 100 MiB of /f in 1 KiB reads and
/// writes them into the pipe, wc (2) reads the pipe; each switched `switches` times.
fn dd_into_wc(switches: u64) -> Profile {
    let mut p = Profile::default();
    for (pid, comm) in [(1, "dd"), (2, "wc")] {
        let mut q = Process::new(pid, comm.into());
        q.switches = switches;
        p.processes.insert(pid, q);
    }
    for (name, kind) in [("/f", Kind::File), ("pipe:[9]", Kind::Pipe)] {
        p.targets.push(Target {
            name: name.into(),
            kind,
            fs: None,
            family: None,
        });
    }
    let n = 102_400;
    p.ops.insert((1, 0, Op::named("read")), stats(n, 100 << 20));
    p.ops
        .insert((1, 1, Op::named("write")), stats(n, 100 << 20));
    p.ops.insert((2, 1, Op::named("read")), stats(n, 100 << 20));
    p.copies.insert((1, 0, 1), (n, 100 << 20));
    p
}

/// A switch at 1 µs; the probe's ends switch once per 64 KiB.
fn switching() -> Figures {
    Figures {
        switch_s: Some(1e-6),
        pipe_switches: Curve(vec![(1024, 1.0 / 65536.0), (65536, 1.0 / 65536.0)]),
        ..figures()
    }
}

#[test]
fn the_switches_beyond_the_probes_are_priced_and_go_with_the_relay() {
    // 36,000 switches each, 72,000 in all; the probe's ends would have switched 1,600
    // times for 100 MiB.
    let p = dd_into_wc(36_000);
    let f = switching();
    let (extra, s) = pipe_switches(&p, &f, 1).unwrap();
    assert!((extra - 70_400.0).abs() < 1e-6, "{extra}");
    assert!((s - 70_400e-6).abs() < 1e-12, "{s}");
    // Not on the file, and not without a switch's cost or a switch counted.
    assert_eq!(pipe_switches(&p, &f, 0), None);
    assert_eq!(pipe_switches(&p, &figures(), 1), None);
    assert_eq!(pipe_switches(&dd_into_wc(0), &f, 1), None);
    // The relay's saving holds them, said in its sentence.
    let with = |f: &Figures| {
        let found = findings(&p, f, 1.0);
        let r = found
            .iter()
            .find(|x| x.kind == "pipe_relay")
            .cloned()
            .unwrap();
        (r, found)
    };
    let (without, _) = with(&figures());
    let (relay, found) = with(&f);
    let more = relay.saving_s.unwrap() - without.saving_s.unwrap();
    assert!((more - s).abs() < 1e-9, "{more} {s}");
    assert!(
        relay.text.contains("70,400 context switches"),
        "{}",
        relay.text
    );
    // No other finding claims them.
    let claimed = found
        .iter()
        .filter(|x| x.claims.contains(&Claim::Switches(1)))
        .count();
    assert_eq!(claimed, 1);
}

#[test]
fn a_process_switches_are_shared_between_its_pipes_by_their_calls() {
    // wc also reads a second pipe as often: half its switches are the first pipe's.
    let mut p = dd_into_wc(36_000);
    p.targets.push(Target {
        name: "pipe:[10]".into(),
        kind: Kind::Pipe,
        fs: None,
        family: None,
    });
    p.ops
        .insert((2, 2, Op::named("read")), stats(102_400, 1 << 20));
    let (extra, _) = pipe_switches(&p, &switching(), 1).unwrap();
    assert!(
        (extra - (36_000.0 + 18_000.0 - 1_600.0)).abs() < 1e-6,
        "{extra}"
    );
}

#[test]
fn the_probes_switches_are_taken_at_the_smaller_side() {
    // cat writes 100 MiB in 128 KiB writes, md5sum reads them in 32 KiB: 3,000 switches
    // each. The probe's ends switch once per 32 KiB at 32 KiB, once per 64 KiB at 128.
    let mut p = dd_into_wc(3_000);
    p.ops
        .insert((1, 1, Op::named("write")), stats(800, 100 << 20));
    p.ops
        .insert((2, 1, Op::named("read")), stats(3_200, 100 << 20));
    let f = Figures {
        pipe_switches: Curve(vec![(32 << 10, 1.0 / 32768.0), (128 << 10, 1.0 / 65536.0)]),
        ..switching()
    };
    // 6,000 switches on the pipe (the file's reads are no pipe calls) against the
    // probe's 3,200 at 32 KiB; at 128 KiB it would have been 1,600.
    let (extra, _) = pipe_switches(&p, &f, 1).unwrap();
    assert!((extra - 2_800.0).abs() < 1e-6, "{extra}");
}

#[test]
fn fewer_switches_than_the_probes_cost_nothing_more() {
    let p = dd_into_wc(500);
    let (extra, s) = pipe_switches(&p, &switching(), 1).unwrap();
    assert_eq!((extra, s), (0.0, 0.0));
}
