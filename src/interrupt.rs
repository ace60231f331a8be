//! Cooperative stop on SIGINT, SIGTERM and SIGHUP: an async-signal-safe handler only
//! raises a flag; the harness checks it between samples and `cp` between files and
//! chunks, and returns `Interrupted`, so scratch files and unfinished copies are removed
//! by the normal unwinding of owners and the process exits 130. It lives outside the
//! harness because `cp` and `trace` stop on it too.
//!
//! No thread is started for this (unlike the ctrlc crate): a second thread makes the
//! kernel take the shared-file-table paths in fdget/fdget_pos (atomic reference counts,
//! the file-position lock), which measurably slows lseek/read/write on this machine
//! (+15% for lseek+read) and would misreport what a single-threaded program pays.

use crate::error::Interrupted;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the signal handlers (idempotent). A signal ioprobe was started with
/// ignored stays ignored, as coreutils do: a background job's SIGINT, `nohup`'s SIGHUP.
/// It then stays ignored across exec too, so a traced command gets it as it would
/// untraced.
pub fn install() -> anyhow::Result<()> {
    let flag = STOP.get_or_init(|| Arc::new(AtomicBool::new(false)));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        if crate::sys::signals::ignored_at_start(sig) {
            continue;
        }
        signal_hook::flag::register(sig, Arc::clone(flag))
            .map_err(|e| anyhow::anyhow!("cannot install signal handler: {e}"))?;
    }
    Ok(())
}

/// True once a stop signal has arrived.
pub fn requested() -> bool {
    STOP.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// `Err(Interrupted)` once a stop signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}
