//! The progress display on a terminal: bytes copied of the total, the rate, the time
//! left and, for a tree, files done of the total. The total comes from a scan of the
//! sources that starts when the display does (a copy over within a second shows
//! nothing and scans nothing); until the scan is over the file count ends in "+".
//! Bytes move while a large file is copied: the data path adds them every 8 MiB.

use super::{Shared, data};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};

/// What the display reads, written by the walk, the workers and the scan.
#[derive(Default)]
pub(super) struct Counters {
    /// Files done (u64::MAX once the copy is over: the display ends).
    pub done_files: AtomicU64,
    /// Regular files' bytes and all non-directories found by the scan so far.
    scanned_bytes: AtomicU64,
    scanned_files: AtomicU64,
    /// The scan is over: its totals are final.
    scanned: AtomicBool,
}

/// How often the display is redrawn, and how long a copy runs before it appears.
const TICK: Duration = Duration::from_millis(200);
const QUIET_START: Duration = Duration::from_secs(1);

/// Starts the display on stderr when it is a terminal (not with `--debug` or `-i`,
/// whose lines it would break up). Ends when `done_files` is set to u64::MAX.
pub(super) fn start(
    sh: Arc<Shared>,
    sources: Vec<OsString>,
) -> Option<std::thread::JoinHandle<()>> {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr())
        || sh.opts.debug
        || sh.opts.interactive == super::Interactive::Ask
    {
        return None;
    }
    Some(std::thread::spawn(move || {
        let start = Instant::now();
        let mut shown = Shown::default();
        loop {
            std::thread::sleep(TICK);
            if sh.counters.done_files.load(Relaxed) == u64::MAX {
                if let Some(b) = shown.bar {
                    b.finish_and_clear();
                }
                return;
            }
            if start.elapsed() < QUIET_START {
                continue;
            }
            if !shown.scanning {
                // The totals first: the bar appears a tick later, with them.
                shown.scanning = true;
                let scan = (Arc::clone(&sh), sources.clone());
                std::thread::spawn(move || scan_sources(&scan.0, &scan.1));
                continue;
            }
            shown.draw(&sh);
        }
    }))
}

/// The bar once drawn, and the recent (time, bytes) points the rate is taken over.
#[derive(Default)]
struct Shown {
    scanning: bool,
    bar: Option<indicatif::ProgressBar>,
    points: std::collections::VecDeque<(Instant, u64)>,
}

/// The rate is the bytes moved over about the last three seconds.
const RATE_WINDOW: Duration = Duration::from_secs(3);

impl Shown {
    fn draw(&mut self, sh: &Shared) {
        let c = &sh.counters;
        let (total, files) = (c.scanned_bytes.load(Relaxed), c.scanned_files.load(Relaxed));
        let more = if c.scanned.load(Relaxed) { "" } else { "+" };
        let (moved, done) = (data::MOVED.load(Relaxed), c.done_files.load(Relaxed));
        let now = Instant::now();
        self.points.push_back((now, moved));
        while self
            .points
            .front()
            .is_some_and(|p| now.duration_since(p.0) > RATE_WINDOW)
        {
            self.points.pop_front();
        }
        let rate = self.points.front().and_then(|&(t, b)| {
            let s = now.duration_since(t).as_secs_f64();
            (s > 0.0 && moved > b).then(|| (moved - b) as f64 / s)
        });
        let total = total.max(moved).max(1);
        let left = match rate {
            Some(r) if more.is_empty() => short_duration((total - moved) as f64 / r),
            _ => "?".to_string(),
        };
        let speed = rate.map_or("-".to_string(), |r| {
            format!("{}/s", indicatif::BinaryBytes(r as u64))
        });
        let mut msg = format!(
            "{}/{}{more} {speed}",
            indicatif::BinaryBytes(moved),
            indicatif::BinaryBytes(total),
        );
        if sh.opts.recursive {
            msg.push_str(&format!(" {done}/{}{more} files", files.max(done)));
        }
        msg.push_str(&format!(" eta {left}"));
        let b = self.bar.get_or_insert_with(new_bar);
        b.set_message(msg);
        b.set_length(total);
        b.set_position(moved);
    }
}

/// "42s", "3m05s", "2h07m": short enough for the bar's line.
fn short_duration(secs: f64) -> String {
    let s = secs.clamp(0.0, 359_999.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

fn new_bar() -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::hidden();
    b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(s) = indicatif::ProgressStyle::with_template("cp [{wide_bar}] {msg}") {
        b.set_style(s.progress_chars("=> "));
    }
    b
}

/// Adds up what the copy has to move: the size of every regular file and the count of
/// every non-directory, following symlinks as the copy does (on the command line, and
/// inside with -L) and staying on one filesystem with -x. Stops when the copy is over.
fn scan_sources(sh: &Shared, sources: &[OsString]) {
    let mut todo: Vec<(PathBuf, Option<u64>)> = Vec::new();
    for s in sources {
        let p = Path::new(s);
        let meta = if sh.follows(true) {
            std::fs::metadata(p)
        } else {
            std::fs::symlink_metadata(p)
        };
        match meta {
            Ok(m) if m.is_dir() && sh.opts.recursive => todo.push((p.to_path_buf(), None)),
            Ok(m) if !m.is_dir() => count(sh, &m),
            _ => {}
        }
    }
    let follow = sh.follows(false);
    while let Some((dir, dev)) = todo.pop() {
        if sh.counters.done_files.load(Relaxed) == u64::MAX || crate::interrupt::requested() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let meta = if follow {
                std::fs::metadata(&path)
            } else {
                e.metadata()
            };
            match meta {
                Ok(m) if m.is_dir() => {
                    let top = dev.unwrap_or_else(|| std::fs::metadata(&dir).map_or(0, |d| d.dev()));
                    if !sh.opts.one_file_system || m.dev() == top {
                        todo.push((path, Some(top)));
                    }
                }
                Ok(m) => count(sh, &m),
                Err(_) => {}
            }
        }
    }
    sh.counters.scanned.store(true, Relaxed);
}

fn count(sh: &Shared, m: &std::fs::Metadata) {
    if m.is_file() {
        sh.counters.scanned_bytes.fetch_add(m.len(), Relaxed);
    }
    sh.counters.scanned_files.fetch_add(1, Relaxed);
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_are_short() {
        assert_eq!(super::short_duration(0.4), "0s");
        assert_eq!(super::short_duration(42.0), "42s");
        assert_eq!(super::short_duration(185.0), "3m05s");
        assert_eq!(super::short_duration(7620.0), "2h07m");
        assert_eq!(super::short_duration(f64::INFINITY), "99h59m");
    }
}
