//! Stats and opens priced at the depth of the paths the program named, against the
//! syscalls probe's absolute path ([`Figures::at_depth`]).

use super::tests::figures;
use super::*;
use crate::trace::price::time_here;

#[test]
fn stats_and_opens_are_priced_at_the_depth_of_their_paths() {
    use crate::trace::profile::testing::{AT, call, path, profile};
    // 200 stats and 20 opens of "f", in the working directory: one component each,
    // where the probe's path had five, each lookup 25 ns here.
    let mut p = profile();
    for i in 0..220 {
        let (sys, ret) = if i < 200 {
            (Syscall::Newfstatat, 0)
        } else {
            (Syscall::Openat, 5)
        };
        call(
            &mut p,
            sys,
            [-100i64 as u64, AT, 0x9000, 0, 0, 0],
            ret,
            path("f"),
        );
    }
    p.finish();
    let saving = |f: &Figures, kind: &str| {
        let found = findings(&p, f, 0.0);
        found
            .iter()
            .find(|x| x.kind == kind)
            .unwrap()
            .saving_s
            .unwrap()
    };
    let mut f = figures();
    let probes = (saving(&f, "stat_storm"), saving(&f, "reopen"));
    assert!((probes.0 - 199.0 * 300e-9).abs() < 1e-12, "{probes:?}");
    assert!((probes.1 - 19.0 * 550e-9).abs() < 1e-12, "{probes:?}");
    f.path_lookup = Some((25.0, 5));
    // 4 lookups fewer than the probe's: 300 - 100 ns a stat, 550 - 100 an open.
    assert!((saving(&f, "stat_storm") - 199.0 * 200e-9).abs() < 1e-12);
    assert!((saving(&f, "reopen") - 19.0 * 450e-9).abs() < 1e-12);
    // The table prices the rows so too.
    let stat_row = p.ops.iter().find(|(k, _)| k.2.name() == "stat").unwrap();
    let t = &p.targets[stat_row.0.1];
    let row = time_here(&f, t, stat_row.0.2, stat_row.1, false).unwrap();
    assert!((row - 200.0 * 200e-9).abs() < 1e-12, "{row}");
    // A stat of a descriptor (a depth of 0) is an fstat; an unknown depth, the
    // probe's own.
    f.calls_ns.insert("fstat".into(), 90.0);
    assert!((f.stat_s(Some(0.0)).unwrap() - 90e-9).abs() < 1e-15);
    assert!((f.stat_s(None).unwrap() - 300e-9).abs() < 1e-15);
    assert!((f.stat_s(Some(9.0)).unwrap() - 400e-9).abs() < 1e-15);
}
