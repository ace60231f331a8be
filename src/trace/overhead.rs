//! The user CPU time tracing adds to the command, measured here so that "work" is
//! estimated without it.
//!
//! Each traced call stops the command twice, and the command's user time under trace
//! grows with every stop: caches and TLBs are cold when it resumes, and with tick-based
//! CPU accounting ticks near a stop land on its user side. Here a `dd bs=512` over 100
//! MiB (204,800 traced calls) showed 8–47 ms of user CPU untraced and 80–215 ms traced.
//! So the command's user time without tracing is estimated as its user time under trace
//! less its traced calls × the extra user time per traced call. A calibration child
//! measures that extra time right after the command, on this machine and in this CPU
//! placement: the same number of traced calls as the command made (`lseek` on
//! /dev/null, doing no other work), up to 50,000, run untraced and traced. Each
//! calibration is saved in the store and pooled with the earlier ones of this host and
//! placement; once 200,000 calls are pooled, no more are made (a trace then costs no
//! more than the command's own stops). The estimate is floored at zero.
//!
//! Limits, measured here: user time is counted in scheduler ticks (4 ms at HZ=250)
//! when the kernel has no precise accounting, so one calibration's figure varies
//! (0–0.9 µs per call here, ~0.25 µs pooled), and a command with many traced calls and
//! little user work gets an estimate that is off by tens of ms either way; a command
//! with much user work is barely changed. A program whose working set is large between
//! calls loses a little more than the calibration's loop does.

use crate::sys::trace::Ptrace;
use serde::Serialize;

/// The hidden first argument that makes the ioprobe binary the calibration child.
const CHILD_ARG: &str = "__ioprobe-trace-calibration";

/// Below this many traced calls the correction is not worth its cost (under ~1 ms
/// here) and none is made.
pub const MIN_CALLS: u64 = 1_000;

/// The calibration's calls at most (100,000 stops, 2–15 s here); fewer for a command
/// that made fewer, so calibrating never costs more stops than the command did.
const MAX_CALLS: u64 = 50_000;

/// Pooled calibration calls past which no more are made.
const ENOUGH_POOLED: f64 = 200_000.0;

/// What the correction was.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Correction {
    /// The command's user CPU time as measured under trace (s).
    pub user_cpu_traced_s: f64,
    /// Extra user time per traced call, measured here (s; 0 when not calibrated).
    pub per_call_user_s: f64,
    /// This trace's own calibration calls (0: none made, because the command made too
    /// few calls to matter or enough were pooled already).
    pub calibration_calls: u64,
    /// Calibration calls behind `per_call_user_s`, this trace's and the saved ones.
    pub pooled_calls: u64,
}

/// When this process was started as the calibration child: runs its loop and says the
/// exit status. Call first thing in `main`.
pub fn child_main() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != CHILD_ARG {
        return None;
    }
    let n: u64 = args.next()?.to_str()?.parse().ok()?;
    let mut f = match std::fs::File::open("/dev/null") {
        Ok(f) => f,
        Err(_) => return Some(1),
    };
    for _ in 0..n {
        if std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).is_err() {
            return Some(1);
        }
    }
    Some(0)
}

/// The user CPU time of ioprobe's waited-for children (seconds).
pub(super) fn children_user_s() -> f64 {
    crate::sys::rusage::getrusage_children()
        .map(|r| r.user_us as f64 * 1e-6)
        .unwrap_or(0.0)
}

/// The extra user time of `calls` traced calls on this machine (s; may be negative by
/// noise), by the calibration child run untraced and traced: None when it could not
/// be run.
fn extra_user(calls: u64) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let argv = [
        exe.clone().into_os_string(),
        CHILD_ARG.into(),
        calls.to_string().into(),
    ];
    let before = children_user_s();
    let ok = std::process::Command::new(&exe)
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    let untraced = children_user_s() - before;
    let before = children_user_s();
    let mut t = Ptrace::spawn(&argv, &[], None, &mut || true).ok()?;
    while t.next_event().ok()?.is_some() {}
    if t.ended() != Some(crate::sys::trace::Ended::Code(0)) {
        return None;
    }
    Some(children_user_s() - before - untraced)
}

/// The pool's name for this CPU placement: the calibration depends on whether tracer
/// and command share one CPU.
fn pool_name() -> String {
    format!("trace.user_per_call.{}", placement())
}

/// The CPU placement a calibration is kept under: whether tracer and command share one
/// CPU.
fn placement() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("cpus{}", cpus.min(2))
}

/// Calibration `name` of `host`, pooled in `store` with the earlier ones: while the
/// pool holds less than `enough`, `measure` is run and its (amount, total) added (and
/// saved, best effort: a store that cannot take it loses only the pooling). The pool,
/// and this run's amount (0: none made).
fn pooled(
    store: Option<&mut crate::results::store::Store>,
    (host, name): (&str, &str),
    enough: f64,
    measure: impl FnOnce() -> Option<(f64, f64)>,
) -> (crate::results::store::Pooled, u64) {
    let mut store = store;
    let mut pool = store
        .as_ref()
        .and_then(|s| s.calibration(host, name).ok())
        .unwrap_or_default();
    if pool.amount >= enough {
        return (pool, 0);
    }
    let Some((amount, total)) = measure() else {
        return (pool, 0);
    };
    pool.amount += amount;
    pool.total += total;
    if let Some(s) = store.as_mut() {
        let _ = s.add_calibration(host, name, amount, total);
    }
    (pool, amount as u64)
}

/// The command's user CPU time without tracing, estimated from `user_traced` (s) and
/// its `calls` traced calls, with the calibrations pooled in `store` (this one's added
/// to it when it can be written).
pub fn correct(
    user_traced: f64,
    calls: u64,
    store: Option<&mut crate::results::store::Store>,
    host: &str,
) -> (f64, Correction) {
    let mut c = Correction {
        user_cpu_traced_s: user_traced,
        per_call_user_s: 0.0,
        calibration_calls: 0,
        pooled_calls: 0,
    };
    if calls < MIN_CALLS {
        return (user_traced, c);
    }
    let k = calls.min(MAX_CALLS);
    let (pool, made) = pooled(store, (host, &pool_name()), ENOUGH_POOLED, || {
        extra_user(k).map(|extra| (k as f64, extra))
    });
    c.calibration_calls = made;
    if pool.amount > 0.0 {
        c.per_call_user_s = (pool.total / pool.amount).max(0.0);
        c.pooled_calls = pool.amount as u64;
    }
    ((user_traced - calls as f64 * c.per_call_user_s).max(0.0), c)
}

/// The eBPF programs' version in the calibrations' name: a change to what `sys_exit`
/// does changes its cost, and the pool starts again.
const PROGRAMS: &str = "v7";

/// Pooled tracer-cost calibration calls past which no more are made.
const ENOUGH_TRACER: f64 = 400_000.0;

/// What the eBPF tracer puts in a timed pair's interval besides the program's own work
/// and the second call, measured here ([`crate::sys::trace::bpf::cost`]; the gaps are
/// [`crate::trace::profile::Gaps`]).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TracerCost {
    /// Seconds (the pool's mean).
    pub per_call_s: f64,
    /// This trace's own calibration calls (0: enough were pooled already).
    pub calibration_calls: u64,
    /// Calibration calls behind `per_call_s`, this trace's and the saved ones.
    pub pooled_calls: u64,
}

/// The eBPF tracer's part of a timed pair's interval on this host, pooled in `store` with the
/// earlier calibrations of this host and CPU placement; `before` runs first when a
/// calibration is made (the trace's own programs must be gone: they would be timed
/// too). None when none was ever made and none could be.
pub fn tracer_cost(
    calls: u64,
    store: Option<&mut crate::results::store::Store>,
    host: &str,
    before: impl FnOnce(),
) -> Option<TracerCost> {
    let name = format!("trace.ebpf_per_call.{PROGRAMS}.{}", placement());
    let (pool, made) = pooled(store, (host, &name), ENOUGH_TRACER, || {
        before();
        let c = crate::sys::trace::bpf::cost(calls.min(MAX_CALLS)).ok()?;
        // What a timed pair's interval holds besides the call and the loop's own (a
        // few ns: counted as tracing).
        Some((
            c.calls as f64,
            (c.pair_ns - c.bare_ns) * 1e-9 * c.calls as f64,
        ))
    });
    (pool.amount > 0.0).then(|| TracerCost {
        per_call_s: (pool.total / pool.amount).max(0.0),
        calibration_calls: made,
        pooled_calls: pool.amount as u64,
    })
}
