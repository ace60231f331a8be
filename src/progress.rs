//! Progress on stderr (indicatif), hidden when stderr is not a terminal. No ticker
//! thread is started: the bar redraws only between cases, so it adds no noise.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress display over a known number of cases.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total` steps on stderr (hidden when stderr is not a terminal).
    pub fn new(total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
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
        self.bar.suspend(|| eprintln!("ioprobe: {line}"));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
