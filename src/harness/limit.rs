//! A time limit for a whole command (`--time-limit`), shared out among its cases.
//!
//! Every case comes with a weight: what its minimum costs (warm-up and minimum samples,
//! estimated before the run). Each case, or each round-robin group of cases, asks for
//! its budget when it starts and gets its share of the time left in proportion to its
//! weight among the cases still to come: a group of 1 GiB copies gets more than a group
//! of 64 MiB ones, a calibrated case a little. A calibrated case never gets more than
//! its own configured budget; a round-robin group gets all of its share, its rows'
//! configured budget being meaningless next to a pass that lasts seconds. A case that
//! finishes early leaves its time to the cases after it, and one that overran (its
//! minimum samples took longer than its share) takes it from them. The minimums are
//! never cut: a limit too tight for them is exceeded, and the run says so.

use super::clock::now;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Weight of a case nobody announced.
const UNKNOWN_WEIGHT: f64 = 0.1;

/// A command's time limit and the cases that have yet to ask for their share.
#[derive(Debug)]
pub struct TimeLimit {
    limit: Option<Duration>,
    start: Instant,
    /// Weight of each case not yet started, by key (probe/case).
    weights: RefCell<HashMap<String, f64>>,
    /// Sum of `weights`.
    left: Cell<f64>,
    /// Cases given less than their configured budget.
    cut: Cell<usize>,
}

impl TimeLimit {
    /// A limit of `limit` (None: no limit) for the cases `weights` names, each with its
    /// minimum cost in seconds, counted from now.
    pub fn new(limit: Option<Duration>, weights: Vec<(String, f64)>) -> TimeLimit {
        let left = weights.iter().map(|w| w.1.max(0.0)).sum();
        TimeLimit {
            limit,
            start: now(),
            weights: RefCell::new(weights.into_iter().collect()),
            left: Cell::new(left),
            cut: Cell::new(0),
        }
    }

    /// The limit, if any.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// The key of a case.
    pub fn key(probe: &str, case: &str) -> String {
        format!("{probe}/{case}")
    }

    /// Takes `keys` off the cases to come; returns their share of the time left (None
    /// without a limit).
    fn claim(&self, keys: &[String]) -> Option<Duration> {
        let mut weights = self.weights.borrow_mut();
        let left = self.left.get();
        let mine: f64 = keys
            .iter()
            .map(|k| weights.remove(k).unwrap_or(UNKNOWN_WEIGHT).max(0.0))
            .sum();
        self.left.set((left - mine).max(0.0));
        let limit = self.limit?;
        let remaining = limit.saturating_sub(self.start.elapsed());
        // `left` can fall short of `mine` only for cases nobody announced.
        let fraction = if mine > 0.0 {
            (mine / left.max(mine)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        Some(remaining.mul_f64(fraction))
    }

    /// The per-case share of `keys` (None without a limit), counting them as cut when
    /// it is below `per_case`.
    fn each(&self, keys: &[String], per_case: Duration) -> Option<Duration> {
        let each = self.claim(keys)? / keys.len().max(1) as u32;
        if each < per_case {
            self.cut.set(self.cut.get() + keys.len());
        }
        Some(each)
    }

    /// The budget of a calibrated case starting now: `per_case`, or less when the
    /// limit requires.
    pub fn share(&self, keys: &[String], per_case: Duration) -> Duration {
        self.each(keys, per_case)
            .map_or(per_case, |e| e.min(per_case))
    }

    /// The budget per row of a round-robin group starting now: its share of the limit,
    /// more or less than `per_case`; without a limit, `per_case`.
    pub fn group_share(&self, keys: &[String], per_case: Duration) -> Duration {
        self.each(keys, per_case).unwrap_or(per_case)
    }

    /// Cases that take no time (unsupported here) give their share back.
    pub fn skip(&self, keys: &[String]) {
        self.claim(keys);
    }

    /// How many cases were given less than their configured budget.
    pub fn cut_cases(&self) -> usize {
        self.cut.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn weights(v: &[(&str, f64)]) -> Vec<(String, f64)> {
        v.iter().map(|(k, w)| (k.to_string(), *w)).collect()
    }

    #[test]
    fn no_limit_gives_the_configured_budget() {
        let t = TimeLimit::new(None, weights(&[("a", 1.0), ("b", 1.0)]));
        let s = Duration::from_secs(5);
        assert_eq!(t.share(&keys(&["a"]), s), s);
        assert_eq!(t.group_share(&keys(&["b"]), s), s);
        assert_eq!(t.cut_cases(), 0);
    }

    #[test]
    fn a_limit_is_shared_by_weight_among_the_cases_left() {
        // 100 s: a light case (1), then a group of two heavy ones (4 each), then one
        // more light case.
        let t = TimeLimit::new(
            Some(Duration::from_secs(100)),
            weights(&[("a", 1.0), ("g1", 4.0), ("g2", 4.0), ("z", 1.0)]),
        );
        // a's share is about 10 s: a 5 s budget stands.
        let five = Duration::from_secs(5);
        assert_eq!(t.share(&keys(&["a"]), five), five);
        // The group gets 8/9 of the time left (about 89 s), about 44 s a row: more
        // than its rows' 600 ms budget, which a round-robin group may exceed.
        let g = t.group_share(&keys(&["g1", "g2"]), Duration::from_millis(600));
        assert!(
            g > Duration::from_secs(43) && g <= Duration::from_secs(45),
            "{g:?}"
        );
        assert_eq!(t.cut_cases(), 0);
        // A calibrated case never gets more than its budget, and is cut when its share
        // is less.
        assert_eq!(t.share(&keys(&["z"]), five), five);
        let t = TimeLimit::new(Some(Duration::from_secs(1)), weights(&[("a", 1.0)]));
        let s = t.share(&keys(&["a"]), five);
        assert!(s <= Duration::from_secs(1), "{s:?}");
        assert_eq!(t.cut_cases(), 1);
    }

    #[test]
    fn unsupported_cases_give_their_share_back() {
        let t = TimeLimit::new(
            Some(Duration::from_secs(100)),
            weights(&[("u", 9.0), ("a", 1.0)]),
        );
        t.skip(&keys(&["u"]));
        // a is now the only case left: nearly all 100 s.
        let g = t.group_share(&keys(&["a"]), Duration::from_secs(1));
        assert!(g > Duration::from_secs(99), "{g:?}");
    }

    #[test]
    fn unannounced_cases_and_a_spent_limit_do_not_panic() {
        let t = TimeLimit::new(Some(Duration::from_millis(1)), Vec::new());
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(
            t.share(&keys(&["x", "y"]), Duration::from_secs(1)),
            Duration::ZERO
        );
        assert_eq!(
            t.group_share(&keys(&["z"]), Duration::from_secs(1)),
            Duration::ZERO
        );
    }
}
