//! Racing: a run's time spent where an answer is still undecided.
//!
//! After a first pass over every row, each answer (a topic) says how often simulated
//! reruns keep it (its agreement). Until the time is spent, the topic whose answer is
//! least settled for what a visit costs is sampled again (the rows it rests on, on
//! fresh processes and connections), and every answer is assessed anew; a topic whose
//! agreement reaches the target stops (racing and successive elimination: an option
//! stops being sampled once the decision no longer depends on it). This module knows
//! no probe: topics are names with an agreement, a visit is the caller's.

use std::time::Duration;

/// The shortest visit after a topic's first: a pass or two of a few rows, a
/// connection's warm-up.
pub const MIN_VISIT: Duration = Duration::from_millis(400);
/// The shortest first visit: a first visit draws its rows again with what they took in
/// the first pass ([`Topic::budget`]), at least this.
pub const SHORTEST_VISIT: Duration = Duration::from_millis(150);
/// The longest visit: time for other topics between two visits of one.
pub const MAX_VISIT: Duration = Duration::from_millis(2500);

/// Why a topic stopped being sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Its agreement reached the target.
    Decided,
    /// The time was spent first.
    Limit,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Decided => "decided",
            Stop::Limit => "limit",
        }
    }
}

/// One answer as the race sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    pub id: String,
    /// Share of simulated reruns keeping the answer (None: nothing to simulate, a
    /// topic without a choice among rows; it counts as decided).
    pub agreement: Option<f64>,
    /// What a visit is expected to take before the first (seconds): what its rows
    /// took in the first pass (None: not known, a typical visit's).
    pub expected_s: Option<f64>,
    /// The other topics a visit of it samples too ([`Assessed::with`]).
    pub with: Vec<String>,
    /// Whether a visit draws only the rows it lacks a second draw of ([`Assessed::draws_only`]).
    pub draws_only: bool,
    /// Visits after the first pass, and their seconds and samples.
    pub visits: usize,
    pub seconds: f64,
    pub samples: usize,
    /// The highest agreement seen, and the visits made since it last rose by
    /// [`GAIN`]: a topic that [`STALLED`] visits did not move goes after the others.
    best: f64,
    since_gain: usize,
}

/// One topic as assessed: its answer's agreement now, and what a visit of it is
/// expected to take before the first (see [`Topic::expected_s`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Assessed {
    pub id: String,
    pub agreement: Option<f64>,
    pub expected_s: Option<f64>,
    /// The other topics whose rows a visit of it samples too (their second draws taken
    /// with its own; none when it samples only its own rows).
    pub with: Vec<String>,
    /// Whether its answer only waits for a second draw of some of its rows, and a visit
    /// draws those alone: then `expected_s` is what they took in the first pass, before
    /// every visit, not only the first.
    pub draws_only: bool,
}

/// The rise in agreement that counts as progress.
const GAIN: f64 = 0.02;
/// Visits without progress after which a topic waits for the others: its rows' noise
/// is their kind's floor, which more samples of them do not narrow.
const STALLED: usize = 3;

impl Topic {
    fn new(id: String, agreement: Option<f64>) -> Topic {
        Topic {
            id,
            agreement,
            expected_s: None,
            with: Vec::new(),
            draws_only: false,
            visits: 0,
            seconds: 0.0,
            samples: 0,
            best: agreement.unwrap_or(1.0),
            since_gain: 0,
        }
    }

    /// Takes the agreement assessed now.
    fn assessed(&mut self, agreement: Option<f64>) {
        self.agreement = agreement;
        let a = agreement.unwrap_or(1.0);
        if a >= self.best + GAIN {
            self.best = a;
            self.since_gain = 0;
        }
    }

    /// Whether its last [`STALLED`] visits did not raise its agreement.
    pub fn stalled(&self) -> bool {
        self.since_gain >= STALLED
    }

    fn decided(&self, target: f64) -> bool {
        self.agreement.is_none_or(|a| a >= target)
    }

    /// What its agreement lacks from the target (0 when decided).
    fn lack(&self, target: f64) -> f64 {
        (target - self.agreement.unwrap_or(1.0)).max(0.0)
    }

    /// What a visit is expected to gain: what its agreement lacks and, where it samples
    /// the rows of other topics too, what theirs lack (those of `covered` excepted:
    /// settled by a visit counted before it), less for each visit already made, so that
    /// a topic a visit did not settle leaves room to the others before it is visited
    /// again. Four answers of one probe waiting for a second draw, settled by one visit
    /// of 2 s, went after answers of 0.4 s a visit lacking less than any of them.
    fn gain(&self, topics: &[Topic], target: f64, covered: &[&str]) -> f64 {
        let also: f64 = topics
            .iter()
            .filter(|t| self.with.contains(&t.id) && !covered.contains(&t.id.as_str()))
            .map(|t| t.lack(target))
            .sum();
        (self.lack(target) + also) / (1 + self.visits) as f64
    }

    /// How much a visit is worth for its time: its [`Topic::gain`] over what it costs
    /// (before the first: what its rows took in the first pass, else `typical`
    /// seconds). An answer whose rows are cheap goes first: `run --quick`'s 3.6–3.9 s
    /// of visits went first to the answers last in the list, where ties fall (1.7–2.3 s
    /// a visit of their rows), leaving answers whose rows took 0.15–0.5 s undecided.
    fn worth(&self, topics: &[Topic], target: f64, typical: f64) -> f64 {
        self.gain(topics, target, &[]) / self.visit_cost(typical).max(1e-3)
    }

    /// What a visit of it is expected to take (seconds): its visits' mean, else what
    /// its rows took in the first pass ([`Topic::budget`]), at least [`SHORTEST_VISIT`],
    /// else `typical`. A visit that draws only the rows still lacking a second draw costs
    /// what those took, however long its earlier visits (of all its rows) were: after a
    /// visit of 2.4 s drew every socket answer's rows, a knee that moved left one row of
    /// 0.15 s undrawn, priced at 2.4 s and not visited again.
    fn visit_cost(&self, typical: f64) -> f64 {
        if self.visits > 0 && !(self.draws_only && self.expected_s.is_some()) {
            self.seconds / self.visits as f64
        } else {
            self.expected_s
                .map_or(typical, |s| s.max(SHORTEST_VISIT.as_secs_f64()))
        }
    }

    /// Its next visit's budget: [`visit_budget`], and for its first (or one drawing only
    /// rows lacking a second draw) no more than what its rows took in the first pass, at
    /// least [`SHORTEST_VISIT`]: a second draw as large as the first. At [`MIN_VISIT`] every first visit, `run --quick`'s answers
    /// whose rows took 0.2 s in the first pass took 0.4–0.57 s each, and of its 3.6 s
    /// of visits the 2.1 s that four answers of one probe waited on left too little
    /// for them all.
    fn budget(&self, left: Duration, undecided: usize) -> Duration {
        let b = visit_budget(left, undecided);
        match (self.visits == 0 || self.draws_only, self.expected_s) {
            (true, Some(s)) => b.min(Duration::from_secs_f64(s.max(SHORTEST_VISIT.as_secs_f64()))),
            _ => b,
        }
    }
}

/// What one visit took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Visit {
    pub seconds: f64,
    pub samples: usize,
}

/// The race's outcome: every topic with its visits, why each stopped, and whether
/// the race ended because every answer was decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub topics: Vec<(Topic, Stop)>,
    pub all_decided: bool,
    /// Seconds the visits took.
    pub seconds: f64,
}

/// The next topic to visit, among the undecided ones whose visit is expected to fit in
/// the `left_s` seconds left (a visit of 2 s begun with 0.5 s left ended a `run
/// --quick` at 15.1 s of its 14.5 s limit), a stalled one only when every undecided
/// topic is: the one that begins the plan gaining most in the time left ([`plan`]),
/// of those the one worth most for its time ([`Topic::worth`]). Taken by worth alone,
/// `run --quick`'s 3.6 s of visits went to four answers of 0.45 s a visit, each
/// worth a little more for its time than the one visit of 2.1 s that four answers of
/// one probe waited on, which then no longer fitted: the time could have settled those
/// four and three of the others.
pub fn next(topics: &[Topic], target: f64, left_s: f64) -> Option<usize> {
    let typical = MIN_VISIT.as_secs_f64();
    let open: Vec<usize> = (0..topics.len())
        .filter(|&i| !topics[i].decided(target) && topics[i].visit_cost(typical) <= left_s)
        .collect();
    let fresh: Vec<usize> = open
        .iter()
        .copied()
        .filter(|&i| !topics[i].stalled())
        .collect();
    let pool = if fresh.is_empty() { open } else { fresh };
    let plans: Vec<f64> = pool
        .iter()
        .map(|&i| plan(topics, &pool, i, (target, left_s)))
        .collect();
    let best = plans.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    pool.iter()
        .zip(&plans)
        .filter(|(_, p)| **p >= best - 1e-9)
        .max_by(|a, b| {
            let worth = |i: usize| topics[i].worth(topics, target, typical);
            worth(*a.0).total_cmp(&worth(*b.0))
        })
        .map(|(&i, _)| i)
}

/// What the visits that fit in `left_s` seconds are expected to gain when `first`'s is
/// made first and the time it leaves is filled by worth, one visit each, from `pool`
/// (a topic whose rows a visit taken samples counted once).
fn plan(topics: &[Topic], pool: &[usize], first: usize, (target, left_s): (f64, f64)) -> f64 {
    let typical = MIN_VISIT.as_secs_f64();
    let mut covered: Vec<&str> = Vec::new();
    let mut left = left_s;
    let mut gained = take(topics, first, target, (&mut covered, &mut left));
    let mut rest: Vec<usize> = pool.iter().copied().filter(|&i| i != first).collect();
    rest.sort_by(|&a, &b| {
        let worth = |i: usize| topics[i].worth(topics, target, typical);
        worth(b).total_cmp(&worth(a))
    });
    for i in rest {
        let t = &topics[i];
        if !covered.contains(&t.id.as_str()) && t.visit_cost(typical) <= left {
            gained += take(topics, i, target, (&mut covered, &mut left));
        }
    }
    gained
}

/// Topic `i`'s visit taken in a [`plan`]: its gain (what the topics `covered` lack
/// counted once), its cost taken from the time `left`, and the topics it samples
/// covered.
fn take<'a>(
    topics: &'a [Topic],
    i: usize,
    target: f64,
    (covered, left): (&mut Vec<&'a str>, &mut f64),
) -> f64 {
    let t = &topics[i];
    let gain = t.gain(topics, target, covered);
    *left -= t.visit_cost(MIN_VISIT.as_secs_f64());
    covered.push(&t.id);
    covered.extend(t.with.iter().map(String::as_str));
    gain
}

/// A visit's budget: the time left shared among the undecided topics, within
/// [`MIN_VISIT`]..[`MAX_VISIT`].
pub fn visit_budget(left: Duration, undecided: usize) -> Duration {
    (left / undecided.max(1) as u32).clamp(MIN_VISIT, MAX_VISIT)
}

/// Races for `budget` seconds: `assess` gives every topic's agreement now (by id),
/// `visit(id, budget)` samples the rows topic `id` rests on again and says what it
/// took. Ends when every topic is decided (agreement ≥ `target`) or the budget is
/// spent (no visit starts with less than [`SHORTEST_VISIT`] left).
pub fn race<E>(
    budget: Duration,
    target: f64,
    mut assess: impl FnMut() -> Vec<Assessed>,
    mut visit: impl FnMut(&str, Duration) -> Result<Visit, E>,
) -> Result<Outcome, E> {
    let mut topics: Vec<Topic> = Vec::new();
    let mut spent = 0.0;
    let all_decided = loop {
        for a in assess() {
            let i = match topics.iter().position(|t| t.id == a.id) {
                Some(i) => {
                    topics[i].assessed(a.agreement);
                    i
                }
                None => {
                    topics.push(Topic::new(a.id, a.agreement));
                    topics.len() - 1
                }
            };
            topics[i].expected_s = a.expected_s;
            topics[i].with = a.with;
            topics[i].draws_only = a.draws_only;
        }
        if topics.iter().all(|t| t.decided(target)) {
            break true;
        }
        let left = budget.saturating_sub(Duration::from_secs_f64(spent));
        if left < SHORTEST_VISIT {
            break false;
        }
        let Some(i) = next(&topics, target, left.as_secs_f64()) else {
            break false; // no undecided topic's visit fits in the time left
        };
        let undecided = topics.iter().filter(|t| !t.decided(target)).count();
        let v = visit(&topics[i].id, topics[i].budget(left, undecided))?;
        let t = &mut topics[i];
        t.visits += 1;
        t.since_gain += 1;
        t.seconds += v.seconds;
        t.samples += v.samples;
        spent += v.seconds.max(1e-3);
    };
    Ok(Outcome {
        topics: topics
            .into_iter()
            .map(|t| {
                let stop = if t.decided(target) {
                    Stop::Decided
                } else {
                    Stop::Limit
                };
                (t, stop)
            })
            .collect(),
        all_decided,
        seconds: spent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    /// A race over topics whose agreement after `n` visits is `curve(id, n)`; each
    /// visit takes `cost` seconds. Returns the outcome and the visits in order.
    fn run(
        ids: &[&str],
        budget: f64,
        cost: f64,
        curve: impl Fn(&str, usize) -> f64,
    ) -> (Outcome, Vec<String>) {
        run_expecting(ids, budget, (cost, &|_| None), curve)
    }

    /// What topic `id`'s first visit is expected to take.
    type Expected = dyn Fn(&str) -> Option<f64>;

    /// [`run`] where topic `id`'s first visit is expected to take `expected(id)`.
    fn run_expecting(
        ids: &[&str],
        budget: f64,
        (cost, expected): (f64, &Expected),
        curve: impl Fn(&str, usize) -> f64,
    ) -> (Outcome, Vec<String>) {
        let visits: RefCell<BTreeMap<String, usize>> = RefCell::new(BTreeMap::new());
        let order = RefCell::new(Vec::new());
        let out = race::<()>(
            Duration::from_secs_f64(budget),
            0.95,
            || {
                ids.iter()
                    .map(|id| {
                        let n = visits.borrow().get(*id).copied().unwrap_or(0);
                        Assessed {
                            id: id.to_string(),
                            agreement: Some(curve(id, n)),
                            expected_s: expected(id),
                            draws_only: false,
                            with: Vec::new(),
                        }
                    })
                    .collect()
            },
            |id, b| {
                assert!(b >= SHORTEST_VISIT && b <= MAX_VISIT, "{b:?}");
                *visits.borrow_mut().entry(id.to_string()).or_insert(0) += 1;
                order.borrow_mut().push(id.to_string());
                Ok(Visit {
                    seconds: cost,
                    samples: 6,
                })
            },
        )
        .unwrap();
        (out, order.into_inner())
    }

    fn stop_of(o: &Outcome, id: &str) -> (Stop, usize) {
        let (t, s) = o.topics.iter().find(|(t, _)| t.id == id).unwrap();
        (*s, t.visits)
    }

    #[test]
    fn a_topic_decided_after_the_first_pass_is_never_sampled_again() {
        let (o, order) = run(&["clear", "edge"], 10.0, 0.5, |id, n| match id {
            "clear" => 1.0,
            _ => [0.6, 0.8, 0.9, 0.97][n.min(3)],
        });
        assert!(!order.contains(&"clear".to_string()), "{order:?}");
        assert_eq!(stop_of(&o, "clear"), (Stop::Decided, 0));
        assert_eq!(stop_of(&o, "edge"), (Stop::Decided, 3));
        // Every answer decided: the race ends early, its budget mostly unspent.
        assert!(o.all_decided && o.seconds < 2.0, "{o:?}");
    }

    #[test]
    fn an_undecided_topic_keeps_the_budget_until_it_is_spent() {
        let (o, order) = run(&["clear", "tie"], 5.0, 0.5, |id, _| match id {
            "clear" => 0.99,
            _ => 0.7,
        });
        assert_eq!(stop_of(&o, "tie"), (Stop::Limit, order.len()));
        assert!(order.len() >= 9 && !o.all_decided, "{order:?}");
        assert!(o.seconds <= 5.0 + 0.5, "{}", o.seconds);
    }

    #[test]
    fn the_least_settled_topic_goes_first_and_others_get_turns() {
        let (_, order) = run(&["a", "b"], 3.0, 0.5, |id, n| match id {
            "a" => 0.5,
            _ => [0.9, 0.99][n.min(1)],
        });
        assert_eq!(order[0], "a");
        assert!(order.contains(&"b".to_string()), "{order:?}");
    }

    #[test]
    fn a_topic_more_visits_do_not_move_waits_for_the_others() {
        // "floor" sits at its rows' noise floor; "slow" rises a little each visit.
        let (o, order) = run(&["floor", "slow"], 8.0, 0.5, |id, n| match id {
            "floor" => 0.5,
            _ => (0.7 + 0.03 * n as f64).min(0.99),
        });
        let first_slow = order.iter().position(|x| x == "slow").unwrap();
        let floor_before: usize = order[..first_slow.max(1)]
            .iter()
            .filter(|x| *x == "floor")
            .count();
        assert!(floor_before <= STALLED, "{order:?}");
        assert_eq!(stop_of(&o, "slow").0, Stop::Decided, "{order:?}");
        // Once "slow" is decided, "floor" gets the rest: undecided, it keeps the budget.
        assert_eq!(order.last().map(String::as_str), Some("floor"));
    }

    #[test]
    fn of_two_topics_as_unsettled_the_cheaper_to_visit_goes_first() {
        // Both need one more visit; "dear"'s rows took 1.2 s in the first pass,
        // "cheap"'s 0.15 s, and they are listed dear last (the order the race breaks
        // ties in): the budget, one visit, goes to "cheap".
        let expected = |id: &str| Some(if id == "cheap" { 0.15 } else { 1.2 });
        let (o, order) = run_expecting(&["cheap", "dear"], 0.5, (0.45, &expected), |_, n| {
            if n == 0 { 0.5 } else { 0.99 }
        });
        assert_eq!(order, ["cheap"]);
        assert_eq!(stop_of(&o, "cheap"), (Stop::Decided, 1));
        assert_eq!(stop_of(&o, "dear"), (Stop::Limit, 0));
        // Not known: each as a typical visit, the tie broken by the list.
        let (_, order) = run(&["cheap", "dear"], 0.5, 0.45, |_, n| {
            if n == 0 { 0.5 } else { 0.99 }
        });
        assert_eq!(order, ["dear"]);
    }

    /// A topic as assessed: `agreement`, a first visit expected to take `expected` s,
    /// sampling the rows of the topics `with` too.
    fn topic(id: &str, agreement: f64, expected: f64, with: &[&str]) -> Topic {
        let mut t = Topic::new(id.into(), Some(agreement));
        t.expected_s = Some(expected);
        t.with = with.iter().map(|w| w.to_string()).collect();
        t
    }

    #[test]
    fn a_visit_that_settles_other_topics_too_is_worth_what_they_lack() {
        // "many"'s visit (1 s) draws the rows of three other topics as unsettled as it
        // is (their second draws taken with its own); "one"'s (0.4 s) settles itself,
        // lacking less. Alone, "many" goes after "one"; with the others counted, first.
        let alone = [topic("many", 0.5, 1.0, &[]), topic("one", 0.65, 0.4, &[])];
        assert_eq!(next(&alone, 0.95, 10.0), Some(1));
        let with_others = [
            topic("many", 0.5, 1.0, &["b", "c", "d"]),
            topic("one", 0.65, 0.4, &[]),
            topic("b", 0.5, 1.0, &["many", "c", "d"]),
            topic("c", 0.5, 1.0, &["many", "b", "d"]),
            topic("d", 0.5, 1.0, &["many", "b", "c"]),
        ];
        // One of the four (equal: the last in the list, where ties fall).
        assert_eq!(next(&with_others, 0.95, 10.0), Some(4));
        // A decided topic it samples adds nothing.
        let decided = [
            topic("many", 0.5, 1.0, &["b"]),
            topic("one", 0.65, 0.4, &[]),
            topic("b", 0.99, 1.0, &["many"]),
        ];
        assert_eq!(next(&decided, 0.95, 10.0), Some(1));
    }

    #[test]
    fn a_dear_visit_that_would_not_fit_later_goes_first_where_the_time_gains_more() {
        // Four cheap topics (0.45 s a visit, each a little more worth for its time)
        // and four that one visit of 2.1 s settles together: with 3.6 s left, by worth
        // alone the cheap ones take 1.8 s and the dear visit no longer fits; begun
        // first, it leaves time for three cheap ones, and the time gains more.
        let mut topics: Vec<Topic> = ["r", "w", "p", "f"]
            .iter()
            .map(|id| topic(id, 0.5, 0.45, &[]))
            .collect();
        let dear = ["d1", "d2", "d3", "d4"];
        for id in dear {
            let with: Vec<&str> = dear.iter().copied().filter(|s| *s != id).collect();
            topics.push(topic(id, 0.5, 2.1, &with));
        }
        assert!(topics[0].worth(&topics, 0.95, 0.4) > topics[4].worth(&topics, 0.95, 0.4));
        let first = next(&topics, 0.95, 3.6).unwrap();
        assert!(dear.contains(&topics[first].id.as_str()), "{first}");
        // With time for all of them, the cheap ones go first, by worth.
        let first = next(&topics, 0.95, 10.0).unwrap();
        assert!(!dear.contains(&topics[first].id.as_str()), "{first}");
        // And where the dear visit does not fit at all, the cheap ones.
        assert_eq!(topics[next(&topics, 0.95, 2.0).unwrap()].id, "f");
    }

    #[test]
    fn a_visit_expected_to_outlast_the_time_left_is_not_begun() {
        // "dear"'s visit is expected to take 2 s, "cheap"'s 0.15 s; with 1 s of budget
        // the dear one, though worth more, is never visited.
        let expected = |id: &str| Some(if id == "cheap" { 0.15 } else { 2.0 });
        let (o, order) = run_expecting(
            &["cheap", "dear"],
            1.0,
            (0.15, &expected),
            |id, n| match id {
                "cheap" => [0.8, 0.9, 0.99][n.min(2)],
                _ => 0.1,
            },
        );
        assert_eq!(order, ["cheap", "cheap"]);
        assert_eq!(stop_of(&o, "dear"), (Stop::Limit, 0));
        assert!(!o.all_decided);
    }

    #[test]
    fn a_topic_without_a_simulated_choice_counts_as_decided() {
        let t = Topic::new("x".into(), None);
        assert!(t.decided(0.95));
        assert_eq!(next(&[t], 0.95, f64::INFINITY), None);
    }

    #[test]
    fn a_first_visit_draws_for_as_long_as_its_rows_took_in_the_first_pass() {
        let left = Duration::from_secs(10);
        let mut t = topic("cheap", 0.5, 0.2, &[]);
        assert!((t.budget(left, 2).as_secs_f64() - 0.2).abs() < 1e-6);
        assert!((t.visit_cost(0.4) - 0.2).abs() < 1e-9);
        t.expected_s = Some(0.05);
        assert_eq!(t.budget(left, 2), SHORTEST_VISIT);
        t.expected_s = Some(9.0);
        assert_eq!(t.budget(left, 2), MAX_VISIT);
        // Later visits get the time left shared; one not known, a typical visit's.
        t.visits = 1;
        t.seconds = 0.2;
        assert_eq!(t.budget(Duration::from_secs(1), 5), MIN_VISIT);
        let unknown = Topic::new("x".into(), Some(0.5));
        assert_eq!(unknown.budget(Duration::from_secs(1), 5), MIN_VISIT);
    }

    #[test]
    fn a_visit_drawing_only_the_rows_left_undrawn_costs_what_they_took() {
        // A visit of 2.4 s drew every row but one; the answer now waits only for that
        // row (0.15 s in the first pass): its next visit is priced and budgeted at that,
        // and fits in the 0.5 s left.
        let mut t = topic("sockets", 0.5, 0.15, &[]);
        t.visits = 1;
        t.seconds = 2.4;
        assert!((t.visit_cost(0.4) - 2.4).abs() < 1e-9);
        assert_eq!(next(std::slice::from_ref(&t), 0.95, 0.5), None);
        t.draws_only = true;
        assert!((t.visit_cost(0.4) - 0.15).abs() < 1e-9);
        assert!((t.budget(Duration::from_secs(3), 2).as_secs_f64() - 0.15).abs() < 1e-6);
        assert_eq!(next(std::slice::from_ref(&t), 0.95, 0.5), Some(0));
    }

    #[test]
    fn a_visit_gets_the_time_left_shared_within_its_bounds() {
        assert_eq!(visit_budget(Duration::from_secs(20), 2), MAX_VISIT);
        assert_eq!(visit_budget(Duration::from_secs(1), 5), MIN_VISIT);
        assert_eq!(
            visit_budget(Duration::from_secs(6), 4),
            Duration::from_millis(1500)
        );
    }
}
