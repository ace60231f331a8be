//! Cooperative stop on SIGINT, SIGTERM and SIGHUP: the handler only raises a flag; the
//! sampler checks it between samples and returns `Interrupted`, so scratch files are
//! removed by the normal unwinding of owners and the process exits 130.

use crate::error::Interrupted;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the signal handler (once per process).
pub fn install() -> anyhow::Result<()> {
    ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst))
        .map_err(|e| anyhow::anyhow!("cannot install signal handler: {e}"))
}

/// True once a stop signal has arrived.
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// `Err(Interrupted)` once a stop signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}
