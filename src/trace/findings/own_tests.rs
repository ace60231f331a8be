//! How much of the program's own work a finding saves, by how its loop changes: small
//! writes of its own pieces behind a buffer, reads and relays in fewer turns.

use super::tests::{app, figures, file_target, relaying, stats};
use super::*;
/// Small writes of pieces the program makes itself are fixed with a buffer in front of
/// the same loop: 70% of the work between the calls goes with them (the loop making
/// each piece stays). Small reads, or writes relayed from reads, are fixed with larger
/// calls and fewer turns of the loop: all of it goes.
#[test]
fn buffered_writes_save_a_share_of_their_loop_and_fewer_reads_all_of_it() {
    let budget = Budget {
        work_s: 1.0,
        user_cpu_s: 1.0,
        own: Own::Split { per_call_s: 60e-9 },
    };
    let f = figures();
    let one = |op: &str| {
        let mut p = app();
        p.targets.push(file_target());
        p.ops
            .insert((1, 0, Op::named(op)), stats(100_000, 100_000 * 16, 16));
        let found = findings(&p, &f, budget);
        let x = found.into_iter().find(|x| x.kind == "small_requests");
        x.expect("small requests")
    };
    let (w, r) = (one("write"), one("read"));
    let (wo, ro) = (w.own_work.unwrap(), r.own_work.unwrap());
    assert_eq!((wo.how, ro.how), (Loop::Buffered, Loop::Fewer));
    // 60 ns a call (the null call is 80 ns here: all of it passes the rule).
    let removed = ro.calls_removed as f64;
    assert!((ro.saving_s - removed * 60e-9).abs() < 1e-9, "{ro:?}");
    assert!((wo.saving_s - removed * 0.7 * 60e-9).abs() < 1e-9, "{wo:?}");
    assert!(
        w.text
            .contains("70% of the ≈60.0 ns between calls: behind a buffer"),
        "{}",
        w.text
    );
    assert!(!r.text.contains("behind a buffer"), "{}", r.text);
    // A relay's writes go with its reads: tar's records, all of the loop.
    let p = relaying(3, 1);
    let found = findings(&p, &f, budget);
    let relay = found.iter().find(|x| x.kind == "relay").expect("a relay");
    assert_eq!(relay.own_work.unwrap().how, Loop::Fewer);
}
