//! Progress on stderr (indicatif), hidden when stderr is not a terminal. No ticker
//! thread is started: the bar redraws only between cases, so it adds no noise. Also
//! the one place notes go to stderr, so `-q/--quiet` silences them all (errors are
//! printed by `main`, always).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `-q/--quiet`: no progress display and no notes on stderr from now on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Prints a note ("ioprobe: …") on stderr unless quiet.
pub fn note(line: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("ioprobe: {line}");
    }
}

/// A progress display over a known number of cases.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total` steps on stderr (hidden when stderr is not a terminal).
    pub fn new(total: u64) -> Progress {
        let target = if QUIET.load(Ordering::Relaxed) {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        if let Ok(style) =
            ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} {wide_msg} eta {eta}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar }
    }

    /// Announces the case about to run.
    pub fn start(&self, probe: &str, case: &str) {
        self.bar.set_prefix(probe.to_string());
        self.bar.set_message(case.to_string());
    }

    /// Marks one case done.
    pub fn done_one(&self) {
        self.bar.inc(1);
    }

    /// Prints a diagnostic line on stderr without breaking the bar.
    pub fn note(&self, line: &str) {
        self.bar.suspend(|| note(line));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
