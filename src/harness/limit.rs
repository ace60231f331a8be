//! A time limit for a whole command (`--time-limit`), shared out among its cases.
//!
//! Each case, or each round-robin group of cases, asks for its budget when it starts.
//! It gets its own configured budget per case, or, when that would overrun the limit,
//! its share of the time left: the time left divided by the cases left, times its
//! cases. A case that finishes early leaves its time to the cases after it, and one
//! that overran (its minimum samples took longer than its share) takes it from them.
//! The minimums (warm-up, minimum samples) are never cut: a limit too tight for them is
//! exceeded, and the run says so.

use super::clock::now;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A command's time limit and the cases that have yet to ask for their share.
#[derive(Debug)]
pub struct TimeLimit {
    limit: Option<Duration>,
    start: Instant,
    cases_left: Cell<usize>,
    /// Cases given less than their configured budget.
    cut: Cell<usize>,
}

impl TimeLimit {
    /// A limit of `limit` (None: no limit) for `cases` cases, counted from now.
    pub fn new(limit: Option<Duration>, cases: usize) -> TimeLimit {
        TimeLimit {
            limit,
            start: now(),
            cases_left: Cell::new(cases),
            cut: Cell::new(0),
        }
    }

    /// The limit, if any.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// The budget per case for the next `n` cases, which start now: `per_case`, or less
    /// when the limit requires. Counts the `n` cases off.
    pub fn share(&self, n: usize, per_case: Duration) -> Duration {
        let left = self.cases_left.get().max(n).max(1);
        self.cases_left.set(left - n);
        let Some(limit) = self.limit else {
            return per_case;
        };
        let remaining = limit.saturating_sub(self.start.elapsed());
        let share = remaining / left as u32;
        if share < per_case {
            self.cut.set(self.cut.get() + n);
            share
        } else {
            per_case
        }
    }

    /// How many cases were given less than their configured budget.
    pub fn cut_cases(&self) -> usize {
        self.cut.get()
    }

    /// Whether the whole limit has been spent.
    pub fn spent(&self) -> bool {
        self.limit.is_some_and(|l| self.start.elapsed() >= l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_gives_the_configured_budget() {
        let t = TimeLimit::new(None, 3);
        assert_eq!(t.share(2, Duration::from_secs(5)), Duration::from_secs(5));
        assert_eq!(t.cut_cases(), 0);
        assert!(!t.spent());
    }

    #[test]
    fn a_limit_is_shared_by_the_cases_left() {
        let t = TimeLimit::new(Some(Duration::from_secs(100)), 10);
        // 100 s for 10 cases: 10 s each at most, so a 5 s budget stands...
        assert_eq!(t.share(1, Duration::from_secs(5)), Duration::from_secs(5));
        // ...and a 60 s one is cut to the share of the time left (about 100 s / 9).
        let s = t.share(4, Duration::from_secs(60));
        assert!(
            s <= Duration::from_secs(100) / 9 && s > Duration::from_secs(10),
            "{s:?}"
        );
        assert_eq!(t.cut_cases(), 4);
        assert!(!t.spent());
    }

    #[test]
    fn asking_for_more_cases_than_were_announced_does_not_panic() {
        let t = TimeLimit::new(Some(Duration::from_millis(1)), 1);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(t.share(5, Duration::from_secs(1)), Duration::ZERO);
        assert_eq!(t.share(1, Duration::from_secs(1)), Duration::ZERO);
        assert!(t.spent());
    }
}
