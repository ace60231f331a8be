//! The user CPU time tracing adds to the command, measured here so that "work" is
//! estimated without it.
//!
//! Each traced call stops the command twice, and the command's user time under trace
//! grows with every stop: caches and TLBs are cold when it resumes, and with tick-based
//! CPU accounting ticks near a stop land on its user side. Here a `dd bs=512` over 100
//! MiB (204,800 traced calls) showed 8–47 ms of user CPU untraced and 80–215 ms traced.
//! So the command's user time without tracing is estimated as its user time under trace
//! less its traced calls × the extra user time per traced call, which a calibration
//! child measures right after the command, on this machine and in this CPU placement:
//! the same number of traced calls (`lseek` on /dev/null, doing no other work), up to
//! 50,000, run untraced and traced. The estimate is floored at zero.
//!
//! Limits, measured here: user time is counted in scheduler ticks (4 ms at HZ=250)
//! when the kernel has no precise accounting, so the per-call figure of one calibration
//! varies (0–0.9 µs here, ~0.25 µs on average) and a command with many traced calls and
//! little user work gets an estimate that is off by tens of ms either way; a command
//! with much user work is barely changed. A program whose working set is large between
//! calls loses a little more than the calibration's loop does.

use crate::sys::os::trace::Tracer;
use serde::Serialize;

/// The hidden first argument that makes the ioprobe binary the calibration child.
const CHILD_ARG: &str = "__ioprobe-trace-calibration";

/// Below this many traced calls the correction is not worth its cost (under ~1 ms
/// here) and none is made.
pub const MIN_CALLS: u64 = 1_000;

/// The calibration's calls at most (100,000 stops, 2–15 s here); fewer for a command
/// that made fewer, so calibrating never costs more stops than the command did.
const MAX_CALLS: u64 = 50_000;

/// What the correction was.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Correction {
    /// The command's user CPU time as measured under trace (s).
    pub user_cpu_traced_s: f64,
    /// Extra user time per traced call, measured here (s; 0 when not calibrated).
    pub per_call_user_s: f64,
    /// The calibration's own calls (0: not calibrated, too few calls to matter).
    pub calibration_calls: u64,
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

fn children_user_s() -> f64 {
    crate::sys::rusage::getrusage_children()
        .map(|r| r.user_us as f64 * 1e-6)
        .unwrap_or(0.0)
}

/// The extra user time per traced call on this machine, by the calibration child run
/// untraced and traced with `calls` calls: None when it could not be run.
fn per_call(calls: u64) -> Option<f64> {
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
    let mut t = Tracer::spawn(&argv, &[]).ok()?;
    while t.next_event().ok()?.is_some() {}
    if t.ended() != Some(crate::sys::os::Ended::Code(0)) {
        return None;
    }
    let traced = children_user_s() - before;
    Some(((traced - untraced) / calls as f64).max(0.0))
}

/// The command's user CPU time without tracing, estimated from `user_traced` (s) and
/// its `calls` traced calls.
pub fn correct(user_traced: f64, calls: u64) -> (f64, Correction) {
    let mut c = Correction {
        user_cpu_traced_s: user_traced,
        per_call_user_s: 0.0,
        calibration_calls: 0,
    };
    if calls < MIN_CALLS {
        return (user_traced, c);
    }
    let k = calls.min(MAX_CALLS);
    if let Some(per) = per_call(k) {
        c.per_call_user_s = per;
        c.calibration_calls = k;
    }
    ((user_traced - calls as f64 * c.per_call_user_s).max(0.0), c)
}
