//! The rules on hand-built profiles: each finds its pattern, prices it with the
//! figures, and no call is claimed twice.

use super::super::profile::{OpStats, Process, Syncs, Target};
use super::*;
use crate::probes::syscalls::Case;
use crate::trace::figures::{Curve, SocketCurves};
use crate::trace::price::time_here;
use std::collections::BTreeMap;

pub(super) fn file_target() -> Target {
    Target {
        name: "/f".into(),
        kind: Kind::File,
        fs: None,
        family: None,
    }
}

pub(super) fn figures() -> Figures {
    let c = |v: &[(u64, f64)]| Curve(v.to_vec());
    Figures {
        read: c(&[(4096, 10e9), (65536, 20e9), (1 << 20, 20e9)]),
        read_large: None,
        read_file: 10 << 20,
        write: c(&[(4096, 4e9), (65536, 16e9), (1 << 20, 16e9)]),
        pipe: c(&[(4096, 2e9), (65536, 5e9)]),
        pipe_large: Some((1 << 20, c(&[(4096, 2e9), (65536, 8e9)]))),
        pipe_switches: Curve::default(),
        pipe_one_cpu: None,
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
        calls_ci: BTreeMap::new(),
        path_lookup: None,
        switch_s: None,
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

pub(super) fn stats(calls: u64, bytes: u64, size: u64) -> OpStats {
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
    let t = time_here(&f, &file_target(), Op::named("write"), &tiny, false).unwrap();
    assert!((t - 200_000.0 * 1200e-9).abs() < 1e-9, "{t}");
    // Without pwrite's figure the null call is the floor.
    let t = time_here(&figures(), &file_target(), Op::named("write"), &tiny, false).unwrap();
    assert!((t - 200_000.0 * 80e-9).abs() < 1e-9, "{t}");
    // Large requests are priced by their bytes, above the floor.
    let big = stats(16, 16 << 20, 1 << 20);
    let t = time_here(&f, &file_target(), Op::named("write"), &big, false).unwrap();
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
    p.ops.insert((1, t, Op::named("write")), tiny);
    let found = findings(&p, &f, 1.0);
    let small = found
        .iter()
        .find(|x| x.kind == "small_requests")
        .expect("found");
    assert!(small.saving_s.unwrap() > 0.2, "{small:?}");
}

/// A profile with one process, "app".
pub(super) fn app() -> Profile {
    let mut p = Profile::default();
    p.processes.insert(1, Process::new(1, "app".into()));
    p
}

/// `app` sending 100 MiB in 64 KiB sends to a unix socket (`tuned`: after its own
/// setsockopt), read from a file first where `from_file`.
fn socket_profile(tuned: bool, from_file: bool) -> Profile {
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
        p.ops
            .insert((1, 0, Op::named("read")), stats(1600, 100 << 20, 65536));
        p.copies.insert((1, 0, 1), (1600, 100 << 20));
    }
    p.ops
        .insert((1, 1, Op::named("sendto")), stats(1600, 100 << 20, 65536));
    if tuned {
        p.ops
            .insert((1, 1, Op::named("setsockopt")), stats(1, 0, 0));
    }
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
    let socket = socket_profile;
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
    // Larger buffers ahead by less than a rerun moves a unix row here (5%): not named.
    let mut within = f.clone();
    let unix = within.sockets.get_mut("unix").expect("unix curves");
    unix.large_buffer = Some((
        8 << 20,
        c(&[(1024, 0.5e9), (65536, 4.16e9), (1 << 20, 5.2e9)]),
    ));
    assert_eq!(kinds(&socket(false, false), &within), ["small_requests"]);
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
        .insert((1, 1, Op::named("sendto")), stats(25_600, 100 << 20, 4096));
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
pub(super) fn relaying(srcs: usize, dsts: usize) -> Profile {
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
        p.ops
            .insert((1, s, Op::named("read")), stats(128, 65536, 512));
        for d in srcs..srcs + dsts {
            p.copies.insert((1, s, d), (128, 65536));
        }
    }
    for d in srcs..srcs + dsts {
        let n = 128 * srcs as u64;
        p.ops
            .insert((1, d, Op::named("write")), stats(n, n * 512, 512));
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
        p.ops
            .insert((1, 0, Op::named("read")), stats(1000, 512_000, 512));
        p.ops
            .insert((1, 1, Op::named("write")), stats(1000, 512_000, 512));
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
        p.ops
            .insert((1, 0, Op::named("read")), stats(64, 8 << 20, 128 << 10));
        p.ops
            .insert((1, 1, Op::named("write")), stats(64, 8 << 20, 128 << 10));
        // Loading its libraries reads a little; other work reads much more.
        let lib = if extra { 4 << 20 } else { 832 };
        p.ops.insert((1, 2, Op::named("read")), stats(1, lib, lib));
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

/// A profile with every pattern a rule finds: small, lseek-led and repeated reads of
/// one file, small writes into a pipe, reopens, a stat storm, an fsync per write, and
/// a read-then-write copy.
fn every_pattern() -> Profile {
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
    p.ops.insert((1, 0, Op::named("read")), read);
    p.ops
        .insert((1, 1, Op::named("write")), stats(100, 100 * 65536, 65536));
    // Large, efficient writes: nothing to say about them.
    p.ops
        .insert((1, 2, Op::named("write")), stats(10, 10 << 20, 1 << 20));
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
    p.ops.insert((1, 2, Op::named("fsync")), stats(20, 0, 0));
    p.copies.insert((1, 0, 2), (100, 100 * 65536));
    p
}

#[test]
fn every_kind_of_finding_is_priced_and_ranked() {
    let p = every_pattern();
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
    assert!((small.saving_s.unwrap() - (4 << 20) as f64 * (1.0 / 10e9 - 1.0 / 20e9)).abs() < 1e-9);
    assert!(small.text.contains("with 4 KiB reads") && small.text.contains("with 64 KiB reads"));
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
        sync.text
            .contains("as write run 7 measured this disk on 2026-11-24 at 19:28 UTC: a disk busy"),
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

#[test]
fn an_alternative_saves_the_programs_own_work_per_call_too() {
    // The reads that bigger requests would change, mapping the file would too: the
    // alternative's saving counts the loop it removes, as a finding's does.
    let p = every_pattern();
    let f = figures();
    let alt = |own: Own| {
        let b = Budget {
            work_s: 0.05,
            user_cpu_s: 0.05,
            own,
        };
        let found = findings(&p, &f, b);
        each_call_once(&p, &f, &found);
        let reads = found.iter().find(|x| x.kind == "small_requests").unwrap();
        let reread = reads.alternatives.iter().find(|a| a.kind == "reread");
        reread.expect("reread as an alternative").saving_s.unwrap()
    };
    let calls_only = alt(Own::Unknown);
    let with_own = alt(Own::Split { per_call_s: 50e-9 });
    // Half its 1,000 reads of 4 KiB read bytes again (2 of 4 MiB), each after 50 ns of
    // loop: read once, those calls go, and their loop with them.
    let loop_s = with_own - calls_only;
    assert!(
        (loop_s - 500.0 * 50e-9).abs() < 1e-9,
        "{calls_only} {with_own} {loop_s}"
    );
}

/// Rereading a file larger than the read probe's 10 MiB is priced on the curve of the
/// larger file measured beside it: 20 passes of a 30 MiB file in 1 MiB reads save
/// what 570 MiB read at the 64 MiB file's rate take.
#[test]
fn a_large_file_read_again_is_priced_on_the_large_files_curve() {
    let mut p = app();
    p.targets = vec![Target {
        name: "/f30".into(),
        kind: Kind::File,
        fs: Some("ext4".into()),
        family: None,
    }];
    let mut read = stats(600, 600 << 20, 1 << 20);
    read.reread_bytes = 570 << 20;
    p.ops.insert((1, 0, Op::named("read")), read);
    let saving = |f: &Figures| {
        let found = findings(&p, f, 0.05);
        let r = found.iter().find(|x| x.kind == "reread").expect("a reread");
        r.saving_s.unwrap()
    };
    let mut f = figures();
    let small = saving(&f);
    assert!(
        (small - (570u64 << 20) as f64 / 20e9).abs() < 1e-6,
        "{small}"
    );
    f.read_large = Some((64 << 20, Curve(vec![(4096, 8e9), (1 << 20, 10e9)])));
    let large = saving(&f);
    assert!(
        (large - (570u64 << 20) as f64 / 10e9).abs() < 1e-6,
        "{large}"
    );
}
