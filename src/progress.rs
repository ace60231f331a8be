//! Progress on stderr (indicatif), hidden when stderr is not a terminal. No ticker
//! thread is started: the bar redraws only between cases, so it adds no noise. Also
//! the one place notes go to stderr, so `-q/--quiet` silences them all (errors are
//! printed by `main`, always).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);
/// The width notes fold to (columns; 0: none).
static WIDTH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Notes fold to `width` columns from now on (stderr's terminal, else COLUMNS, else
/// 100, as the tables on stdout), continuation lines indented by two spaces.
pub fn set_width(width: Option<usize>) {
    WIDTH.store(width.unwrap_or(0), Ordering::Relaxed);
}

/// `-q/--quiet`: no progress display and no notes on stderr from now on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Prints a note ("ioprobe: …") on stderr unless quiet, folded to the width.
pub fn note(line: &str) {
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    let text = format!("ioprobe: {line}");
    match WIDTH.load(Ordering::Relaxed) {
        0 => eprintln!("{text}"),
        w => eprintln!("{}", crate::units::wrap(&text, w).join("\n")),
    }
}

/// Steps of the bar per row: a row in progress counts for the share of it done.
const STEPS: u64 = 1000;

/// A progress display over a known number of rows. It counts passes: a row measured
/// alone counts once done; rows sampled round-robin advance with every pass, by the
/// share of their minimum passes taken or of their group's time budget spent,
/// whichever is further, so the bar and its ETA move while a group runs.
pub struct Progress {
    bar: ProgressBar,
    rows: std::sync::atomic::AtomicU64,
    state: std::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Rows finished.
    done: u64,
    /// Passes run by round-robin rows (warm-ups and samples).
    passes: u64,
    /// The round-robin group under way: its rows' passes so far.
    group: Vec<u64>,
    /// Minimum passes per row of the group (warm-up included) and the group's budget.
    expected: u64,
    budget: std::time::Duration,
    started: Option<std::time::Instant>,
}

impl Progress {
    /// A bar over `rows` rows on stderr (hidden when stderr is not a terminal).
    pub fn new(rows: u64) -> Progress {
        let target = if QUIET.load(Ordering::Relaxed) {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(rows.max(1) * STEPS), target);
        if let Ok(style) =
            ProgressStyle::with_template("{prefix:>9} [{bar:30}] {wide_msg} eta {eta}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress {
            bar,
            rows: std::sync::atomic::AtomicU64::new(rows),
            state: std::sync::Mutex::new(State::default()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        match self.state.lock() {
            Ok(mut s) => f(&mut s),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// The bar's position and message from the state.
    fn show(&self, s: &State, case: &str) {
        let time_share = match s.started {
            Some(t) if !s.budget.is_zero() => {
                (t.elapsed().as_secs_f64() / s.budget.as_secs_f64()).min(0.99)
            }
            _ => 0.0,
        };
        let partial: f64 = s
            .group
            .iter()
            .map(|&p| {
                (p as f64 / s.expected.max(1) as f64)
                    .min(0.99)
                    .max(time_share)
            })
            .sum();
        let pos = s.done * STEPS + (partial * STEPS as f64) as u64;
        let rows = self.rows.load(Ordering::Relaxed);
        self.bar.set_position(pos.min(rows.max(1) * STEPS));
        let passes = if s.passes > 0 {
            format!(", {} passes", s.passes)
        } else {
            String::new()
        };
        self.bar
            .set_message(format!("{}/{rows} rows{passes} · {case}", s.done));
    }

    /// Adds `n` rows to measure (a sweep extended past an edge).
    pub fn add_rows(&self, n: u64) {
        let rows = self.rows.fetch_add(n, Ordering::Relaxed) + n;
        self.bar.set_length(rows.max(1) * STEPS);
    }

    /// Announces the row about to run.
    pub fn start(&self, probe: &str, case: &str) {
        self.bar.set_prefix(probe.to_string());
        self.with(|s| self.show(s, case));
    }

    /// Marks one row measured on its own done.
    pub fn done_one(&self) {
        self.with(|s| {
            s.done += 1;
            self.show(s, "");
        });
    }

    /// Starts a group of `rows` rows sampled round-robin: each takes at least
    /// `min_passes` passes (warm-up included) and the group at most about `budget`.
    pub fn start_group(&self, rows: usize, min_passes: usize, budget: std::time::Duration) {
        self.with(|s| {
            s.group = vec![0; rows];
            s.expected = min_passes as u64;
            s.budget = budget;
            s.started = Some(std::time::Instant::now());
        });
    }

    /// Row `i` of the group starts a pass.
    pub fn pass(&self, probe: &str, i: usize, case: &str) {
        self.bar.set_prefix(probe.to_string());
        self.with(|s| {
            if let Some(p) = s.group.get_mut(i) {
                *p += 1;
            }
            s.passes += 1;
            self.show(s, case);
        });
    }

    /// The group is done: its rows count as finished.
    pub fn end_group(&self) {
        self.with(|s| {
            s.done += s.group.len() as u64;
            s.group.clear();
            s.started = None;
            self.show(s, "");
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_rows_advance_with_every_pass_and_finish_whole() {
        set_quiet(true);
        let p = Progress::new(4);
        p.done_one();
        assert_eq!(p.bar.position(), STEPS);
        // Two rows sampled together, 5 passes each at least, a budget not yet spent.
        p.start_group(2, 5, std::time::Duration::from_secs(3600));
        p.pass("x", 0, "a (warm-up 0)");
        p.pass("x", 1, "b (warm-up 0)");
        assert_eq!(p.bar.position(), STEPS + 2 * STEPS / 5);
        for _ in 0..9 {
            p.pass("x", 0, "a");
        }
        // A row past its minimum passes stays just short of done until the group ends.
        let pos = p.bar.position();
        assert!(pos > STEPS + STEPS && pos < 3 * STEPS, "{pos}");
        p.end_group();
        assert_eq!(p.bar.position(), 3 * STEPS);
        assert_eq!(p.with(|s| s.passes), 11);
        p.finish();
    }
}
