//! Cooperative stop on SIGINT, SIGTERM and SIGHUP: an async-signal-safe handler only
//! raises a flag; the harness checks it between samples and `cp` between files and
//! chunks, and returns `Interrupted`, so scratch files and unfinished copies are removed
//! by the normal unwinding of owners. The process then ends by the signal that stopped
//! it, its default action restored ([`end_by_signal`], as coreutils do), so the shell
//! reports 128+N: 130 after Ctrl-C, 143 after SIGTERM, 129 after SIGHUP. It lives
//! outside the harness because `cp` and `trace` stop on it too.
//!
//! No thread is started for this (unlike the ctrlc crate): a second thread makes the
//! kernel take the shared-file-table paths in fdget/fdget_pos (atomic reference counts,
//! the file-position lock), which measurably slows lseek/read/write on this machine
//! (+15% for lseek+read) and would misreport what a single-threaded program pays.

use crate::error::Interrupted;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The stop signal that arrived (its number), or 0.
static STOP: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Installs the signal handlers (idempotent). A signal ioprobe was started with
/// ignored stays ignored, as coreutils do: a background job's SIGINT, `nohup`'s SIGHUP.
/// It then stays ignored across exec too, so a traced command gets it as it would
/// untraced.
pub fn install() -> anyhow::Result<()> {
    let flag = STOP.get_or_init(|| Arc::new(AtomicUsize::new(0)));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        if crate::sys::signals::ignored_at_start(sig) {
            continue;
        }
        signal_hook::flag::register_usize(sig, Arc::clone(flag), sig as usize)
            .map_err(|e| anyhow::anyhow!("cannot install signal handler: {e}"))?;
    }
    Ok(())
}

/// True once a stop signal has arrived.
pub fn requested() -> bool {
    signal().is_some()
}

/// The stop signal that arrived last, if one did.
pub fn signal() -> Option<i32> {
    match STOP.get().map_or(0, |f| f.load(Ordering::Relaxed)) {
        0 => None,
        n => i32::try_from(n).ok(),
    }
}

/// Once everything is cleaned up: ends the process by the stop signal that arrived,
/// with the signal's default action, so the caller sees the signal as the cause
/// (`WIFSIGNALED`, 128+N in a shell) as with GNU's tools; a shell that got the same
/// Ctrl-C then stops its script too. Returns only when no stop signal arrived (or the
/// default action could not be restored).
pub fn end_by_signal() {
    if let Some(sig) = signal() {
        let _ = signal_hook::low_level::emulate_default_handler(sig);
    }
}

/// `Err(Interrupted)` once a stop signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}
