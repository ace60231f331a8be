//! `ioprobe run`'s second part: after the first pass over every row, the rows an
//! undecided answer rests on are measured again (fresh processes and connections where
//! the probe's rows depend on them) and pooled into their rows, answer by answer, the
//! least settled first, until every answer is decided or the time is spent
//! ([`crate::harness::race`]).

use crate::advice::Recommendation;
use crate::harness::TimeLimit;
use crate::harness::race::{self, Assessed, Visit};
use crate::probes::{Context, Probe};
use crate::results::{Measurement, Schedule, TopicSpend};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// The share of simulated reruns an answer must keep to be decided: high confidence's.
pub const TARGET: f64 = 0.95;

/// The time limit's weight of each case of a probe a visit measures, keyed as the limit
/// keys them.
pub type Weights<'a> = dyn Fn(&dyn Probe, &BTreeSet<String>) -> Vec<(String, f64)> + 'a;
/// Samples each row had after the first pass, by (probe, case).
type FirstSamples = HashMap<(String, String), usize>;

/// What a run's decision needs from the session: every configuration its rows came from
/// (each probe's, and the one past a sweep's edges), the rows' answers, and the time
/// limit's weight of each case a visit measures.
pub struct Inputs<'a> {
    pub configs: Vec<&'a dyn Probe>,
    pub assess: &'a dyn Fn(&[Measurement]) -> Vec<Recommendation>,
    pub weights: &'a Weights<'a>,
    /// Seconds each probe's first pass took, by probe name.
    pub first_pass: &'a BTreeMap<String, f64>,
}

/// The rows a recommendation's answer rests on, by probe: its evidence (the choice, the
/// best, the sizes or methods tied with it, the nearest ruled out), less the baseline:
/// a row the effect compares with ("4 KiB costs ×2.67"), which no simulated rerun of
/// the choice reads. Drawn again for the one-draw cap, the baselines of `run --quick`'s
/// four socket answers were 4 of the 16 rows of a visit (2.2–2.4 s) that the 2.3–2.7 s
/// left after a slow first pass could not fit.
fn rows_of(rec: &Recommendation) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in rec.evidence.rows.iter().filter(|r| r.role != "baseline") {
        out.entry(r.probe.clone())
            .or_default()
            .insert(r.case.clone());
    }
    out
}

/// The rows a visit of answer `id` measures again: those it rests on, and where it
/// waits for a second draw of a regime row, those of every other answer of the same
/// probes that waits for one too (one visit then draws them all: the files, processes
/// and connections it makes, and its shortest budget, serve them together, where
/// `run --quick`'s 3 s of visits left 6–8 of 10 such answers at one draw, a visit each).
fn wanted_by(
    recs: &[Recommendation],
    id: &str,
    rows: &[Measurement],
) -> BTreeMap<String, BTreeSet<String>> {
    let Some(rec) = recs.iter().find(|r| r.id == id) else {
        return BTreeMap::new();
    };
    with_draws_of(rec, &drawn_with(recs, rec, rows), rows)
}

/// The rows a visit of `rec` draws for it: those it rests on, or where its answer only
/// waits for a second draw ([`waits_for_draw`]), those of them measured in one draw.
/// After a second draw moves a knee, the answer rests on a row the draw left out (a
/// new "next" or best): of 31 `run --quick` answers left below high, 15 lacked one such
/// row, and a visit of all their rows again, priced at the 2.4 s the first took, no
/// longer fitted.
fn drawn_rows(rec: &Recommendation, rows: &[Measurement]) -> BTreeMap<String, BTreeSet<String>> {
    if waits_for_draw(rec, rows) {
        one_draw_rows(rec, rows)
    } else {
        rows_of(rec)
    }
}

/// The rows a visit of `rec` draws ([`drawn_rows`]), with those of `others` (answers
/// whose second draw its visit takes, [`drawn_with`]) in its probes.
fn with_draws_of(
    rec: &Recommendation,
    others: &[&Recommendation],
    rows: &[Measurement],
) -> BTreeMap<String, BTreeSet<String>> {
    let probes: BTreeSet<String> = rows_of(rec).into_keys().collect();
    let mut wanted = drawn_rows(rec, rows);
    for r in others {
        for (probe, cases) in drawn_rows(r, rows) {
            if probes.contains(&probe) {
                wanted.entry(probe).or_default().extend(cases);
            }
        }
    }
    wanted
}

/// The other answers whose second draw a visit of `rec` takes with its own (see
/// [`wanted_by`]): undecided, waiting for one, resting on rows of `rec`'s probes.
fn drawn_with<'a>(
    recs: &'a [Recommendation],
    rec: &Recommendation,
    rows: &[Measurement],
) -> Vec<&'a Recommendation> {
    if !one_draw(rec, rows) {
        return Vec::new();
    }
    let probes: BTreeSet<String> = rows_of(rec).into_keys().collect();
    recs.iter()
        .filter(|r| r.id != rec.id && one_draw(r, rows))
        .filter(|r| agreement(r, rows).is_some_and(|a| a < TARGET))
        .filter(|r| rows_of(r).keys().any(|p| probes.contains(p)))
        .collect()
}

/// Samples the rows of `wanted` again with `budget` (shared among the configurations
/// holding them by their number of cases) and pools the new samples into `rows`.
/// Returns the samples added.
fn visit(
    inputs: &Inputs,
    ctx: &Context,
    wanted: &BTreeMap<String, BTreeSet<String>>,
    budget: Duration,
    rows: &mut [Measurement],
) -> Result<usize> {
    let mut runs: Vec<(&dyn Probe, BTreeSet<String>)> = Vec::new();
    for &p in &inputs.configs {
        let Some(cases) = wanted.get(p.kind().name()) else {
            continue;
        };
        let mine: BTreeSet<String> = p
            .case_names()
            .into_iter()
            .filter(|c| cases.contains(c))
            .collect();
        if !mine.is_empty() {
            runs.push((p, mine));
        }
    }
    let total: usize = runs.iter().map(|r| r.1.len()).sum();
    let before: usize = rows.iter().map(|m| m.samples).sum();
    for (p, only) in runs {
        let share = budget.mul_f64(only.len() as f64 / total.max(1) as f64);
        let limit = TimeLimit::new(Some(share), (inputs.weights)(p, &only));
        let sub = Context {
            harness: ctx.harness,
            env: ctx.env,
            overhead: ctx.overhead,
            scratch: ctx.scratch,
            progress: ctx.progress,
            cpus: ctx.cpus,
            limit: &limit,
            only: Some(&only),
        };
        ctx.progress.add_rows(only.len() as u64);
        let name = p.kind().name();
        let regime = p.kind().regime_rows();
        for again in p
            .run(&sub)
            .map_err(|e| e.context(format!("probe {name}")))?
        {
            if let Some(m) = rows
                .iter_mut()
                .find(|m| m.probe == again.probe && m.case == again.case)
            {
                m.pool(again, regime);
            }
        }
    }
    Ok(rows
        .iter()
        .map(|m| m.samples)
        .sum::<usize>()
        .saturating_sub(before))
}

/// Races the answers of `rows` for `budget` (see the module); returns the run's
/// schedule, `first_pass_s` the first pass's seconds.
pub fn decide(
    inputs: &Inputs,
    ctx: &Context,
    rows: &mut Vec<Measurement>,
    (budget, first_pass_s): (Duration, f64),
) -> Result<Schedule> {
    let first: FirstSamples = rows
        .iter()
        .map(|m| ((m.probe.clone(), m.case.clone()), m.samples))
        .collect();
    let recs = std::cell::RefCell::new((inputs.assess)(rows));
    let cell = std::cell::RefCell::new(std::mem::take(rows));
    let outcome = race::race(
        budget,
        TARGET,
        || {
            let rows = cell.borrow();
            let now = (inputs.assess)(&rows);
            let out = now
                .iter()
                .map(|r| {
                    let others = drawn_with(&now, r, &rows);
                    let visited = with_draws_of(r, &others, &rows);
                    let first_s = first_pass_seconds(&visited, &rows, (&first, inputs.first_pass));
                    Assessed {
                        id: r.id.clone(),
                        agreement: agreement(r, &rows),
                        expected_s: Some(first_s).filter(|&s| s > 0.0),
                        with: others.iter().map(|o| o.id.clone()).collect(),
                        draws_only: waits_for_draw(r, &rows),
                    }
                })
                .collect();
            *recs.borrow_mut() = now;
            out
        },
        |id, b| -> Result<Visit> {
            let wanted = wanted_by(&recs.borrow(), id, &cell.borrow());
            let start = Instant::now();
            let samples = visit(inputs, ctx, &wanted, b, &mut cell.borrow_mut())?;
            Ok(Visit {
                seconds: start.elapsed().as_secs_f64(),
                samples,
            })
        },
    );
    *rows = cell.into_inner();
    let outcome = outcome?;
    let final_recs = (inputs.assess)(rows);
    let topics = final_recs
        .iter()
        .map(|rec| spend(rec, &outcome, rows, (&first, inputs.first_pass)))
        .collect();
    Ok(Schedule {
        first_pass_s,
        visits_s: outcome.seconds,
        target: TARGET,
        ended: if outcome.all_decided {
            "decided"
        } else {
            "limit"
        }
        .into(),
        topics,
    })
}

/// A recommendation's agreement as the race takes it: none (no choice was simulated)
/// counts as decided, a cap that measuring again may lift as undecided, and so is an
/// answer resting on a regime row measured in one draw only (its simulated reruns know
/// nothing of the spread between draws yet).
fn agreement(r: &Recommendation, rows: &[Measurement]) -> Option<f64> {
    if r.confidence.unsettled {
        Some(0.0)
    } else if one_draw(r, rows) {
        Some(r.confidence.agreement.unwrap_or(1.0).min(0.5))
    } else {
        r.confidence.agreement
    }
}

/// Whether a row `r` rests on is a regime row ([`crate::probes::ProbeKind::regime_rows`])
/// measured in one draw only.
fn one_draw(r: &Recommendation, rows: &[Measurement]) -> bool {
    !one_draw_rows(r, rows).is_empty()
}

/// The rows `r` rests on that are regime rows measured in one draw only, by probe.
fn one_draw_rows(r: &Recommendation, rows: &[Measurement]) -> BTreeMap<String, BTreeSet<String>> {
    let wanted = rows_of(r);
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in rows.iter().filter(|m| {
        wanted.get(&m.probe).is_some_and(|c| c.contains(&m.case))
            && m.is_ok()
            && crate::probes::kind(&m.probe).is_some_and(|k| k.regime_rows())
            && m.pass_medians().len() < 2
    }) {
        out.entry(m.probe.clone())
            .or_default()
            .insert(m.case.clone());
    }
    out
}

/// Whether `r`'s answer lacks nothing but a second draw of some of its rows: its
/// simulated reruns keep it (agreement at the target, or nothing simulated) and it
/// rests on a regime row measured once.
fn waits_for_draw(r: &Recommendation, rows: &[Measurement]) -> bool {
    !r.confidence.unsettled && r.confidence.agreement.unwrap_or(1.0) >= TARGET && one_draw(r, rows)
}

/// One answer's time: its rows' share of their probes' first pass (by samples), and
/// its visits.
/// What the rows of `wanted` took in the first pass: each probe's first-pass seconds
/// shared by the samples its rows took then.
fn first_pass_seconds(
    wanted: &BTreeMap<String, BTreeSet<String>>,
    rows: &[Measurement],
    (first, first_pass): (&FirstSamples, &BTreeMap<String, f64>),
) -> f64 {
    let first_of = |m: &Measurement| {
        first
            .get(&(m.probe.clone(), m.case.clone()))
            .copied()
            .unwrap_or(0)
    };
    let mut seconds = 0.0;
    for (probe, cases) in wanted {
        let all: usize = rows
            .iter()
            .filter(|m| &m.probe == probe)
            .map(first_of)
            .sum();
        let these: usize = rows
            .iter()
            .filter(|m| &m.probe == probe && cases.contains(&m.case))
            .map(first_of)
            .sum();
        let probe_s = first_pass.get(probe).copied().unwrap_or(0.0);
        seconds += probe_s * these as f64 / all.max(1) as f64;
    }
    seconds
}

fn spend(
    rec: &Recommendation,
    outcome: &race::Outcome,
    rows: &[Measurement],
    (first, first_pass): (&FirstSamples, &BTreeMap<String, f64>),
) -> TopicSpend {
    let wanted = rows_of(rec);
    let mine = |m: &&Measurement| wanted.get(&m.probe).is_some_and(|c| c.contains(&m.case));
    let seconds = first_pass_seconds(&wanted, rows, (first, first_pass));
    let raced = outcome.topics.iter().find(|(t, _)| t.id == rec.id);
    let (visits, visit_s) = raced.map_or((0, 0.0), |(t, _)| (t.visits, t.seconds));
    let agreement = rec.confidence.agreement;
    TopicSpend {
        id: rec.id.clone(),
        samples: rows.iter().filter(mine).map(|m| m.samples).sum(),
        seconds: seconds + visit_s,
        visits,
        visit_s,
        passes: rows
            .iter()
            .filter(mine)
            .map(|m| m.pass_medians().len().max(1))
            .max()
            .unwrap_or(1),
        agreement,
        one_draw: one_draw(rec, rows),
        stopped: if self::agreement(rec, rows).is_none_or(|a| a >= TARGET) {
            "decided"
        } else if raced.is_some_and(|(t, _)| t.stalled()) {
            "stalled"
        } else {
            "limit"
        }
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Unit;
    use std::cell::Cell;

    /// A pipe-like probe of two rows ("knee", "best") whose figures are a pass count
    /// apart: each run (a pass, on fresh processes) of the cases asked for returns
    /// them, and counts itself.
    struct Fake {
        runs: Cell<usize>,
        kind: &'static str,
    }

    fn row(probe: &str, case: &str, median: f64) -> Measurement {
        let mut m =
            Measurement::unsupported(probe, case, serde_json::Map::new(), Unit::BytesPerSec, "");
        m.status = crate::results::Status::Ok;
        m.raw = vec![median * 0.99, median, median * 1.01];
        m.median = median;
        m.ci95 = [median * 0.99, median * 1.01];
        m.samples = 3;
        m
    }

    impl Probe for Fake {
        fn kind(&self) -> &'static dyn crate::probes::ProbeKind {
            crate::probes::kind(self.kind).expect("a probe")
        }
        fn case_names(&self) -> Vec<String> {
            vec!["knee".into(), "best".into(), "far".into()]
        }
        fn time_limit(&self) -> Option<Duration> {
            None
        }
        fn validate(
            &self,
            _: &crate::sys::machine::Environment,
            _: &crate::sys::scratch::Scratch,
        ) -> Result<()> {
            Ok(())
        }
        fn run(&self, ctx: &Context) -> Result<Vec<Measurement>> {
            self.runs.set(self.runs.get() + 1);
            std::thread::sleep(Duration::from_millis(5));
            Ok(self
                .case_names()
                .into_iter()
                .filter(|c| ctx.only.is_none_or(|o| o.contains(c)))
                .map(|c| row(self.kind, &c, 1e9))
                .collect())
        }
    }

    /// One answer resting on "knee" and "best", whose agreement rises with the passes
    /// its knee row has (a regime row's spread averaged over more draws), decided from
    /// `decided_at` passes.
    fn answer(rows: &[Measurement], decided_at: usize, probe: &str) -> Vec<Recommendation> {
        let passes = rows
            .iter()
            .find(|m| m.case == "knee")
            .map_or(1, |m| m.pass_medians().len().max(1));
        let agreement = if passes >= decided_at { 0.99 } else { 0.5 };
        let rec = serde_json::json!({
            "id": "pipe.chunk.test", "topic": "t", "scope": "", "action": "a",
            "choice": {"kind": "method", "name": "x", "tied": []},
            "effect": "", "caveats": [],
            "evidence": {"runs": [], "rows": [
                {"probe": probe, "case": "knee", "role": "choice", "unit": "bytes/s", "median": 1.0, "ci95": [1.0, 1.0]},
                {"probe": probe, "case": "best", "role": "best", "unit": "bytes/s", "median": 1.0, "ci95": [1.0, 1.0]}
            ]},
            "confidence": {"level": "high", "reasons": [], "agreement": agreement}
        });
        vec![serde_json::from_value(rec).expect("a recommendation")]
    }

    /// Races the fake probe's answer for `budget`, decided from `decided_at` passes:
    /// the schedule, the rows, and how many times the probe ran.
    fn race_fake(
        kind: &'static str,
        budget: Duration,
        decided_at: usize,
    ) -> (Schedule, Vec<Measurement>, usize) {
        let fake = Fake {
            runs: Cell::new(0),
            kind,
        };
        let mut rows = vec![
            row(kind, "knee", 1e9),
            row(kind, "best", 1e9),
            row(kind, "far", 1e9),
        ];
        let env = crate::sys::machine::Environment::collect(None);
        let dir = tempfile::tempdir().unwrap();
        let scratch = crate::sys::scratch::Scratch::create_in(dir.path()).unwrap();
        let progress = crate::progress::Progress::new(3);
        let harness = crate::harness::Config::quick();
        let limit = TimeLimit::new(None, Vec::new());
        let ctx = Context {
            harness: &harness,
            env: &env,
            overhead: crate::harness::Overhead {
                timer_ns: 20.0,
                empty_loop_ns: 0.3,
            },
            scratch: &scratch,
            progress: &progress,
            cpus: &[0],
            limit: &limit,
            only: None,
        };
        let assess = |rows: &[Measurement]| answer(rows, decided_at, kind);
        let weights = |_: &dyn Probe, _: &BTreeSet<String>| Vec::new();
        let inputs = Inputs {
            configs: vec![&fake],
            assess: &assess,
            weights: &weights,
            first_pass: &BTreeMap::new(),
        };
        let s = decide(&inputs, &ctx, &mut rows, (budget, 1.0)).unwrap();
        (s, rows, fake.runs.get())
    }

    #[test]
    fn an_undecided_regime_row_draws_more_pairs_until_its_answer_is_decided() {
        let (s, rows, runs) = race_fake("pipe", Duration::from_secs(30), 4);
        let knee = rows.iter().find(|m| m.case == "knee").unwrap();
        // Three more passes (fresh pairs), each pooled, then the answer is decided and
        // the race ends early, far within its budget.
        assert_eq!(runs, 3);
        assert_eq!(knee.derived.get("draws"), Some(&serde_json::json!(4)));
        assert_eq!(knee.samples, 12);
        assert_eq!(s.ended, "decided");
        assert_eq!(
            (
                s.topics[0].visits,
                s.topics[0].passes,
                s.topics[0].stopped.as_str()
            ),
            (3, 4, "decided")
        );
        // A row no answer rests on is never measured again.
        let far = rows.iter().find(|m| m.case == "far").unwrap();
        assert_eq!((far.samples, far.derived.get("draws")), (3, None));
    }

    #[test]
    fn a_decided_answer_is_not_sampled_again_but_a_regime_answer_takes_a_second_draw() {
        // A loop's answer decided by its first pass: no visit.
        let (s, rows, runs) = race_fake("syscalls", Duration::from_secs(30), 1);
        assert_eq!(runs, 0);
        assert!(rows.iter().all(|m| m.samples == 3));
        assert_eq!((s.ended.as_str(), s.topics[0].visits), ("decided", 0));
        // A pipe's, whose figure moves with the pair it drew: one more draw, then
        // decided across the two.
        let (s, rows, runs) = race_fake("pipe", Duration::from_secs(30), 1);
        assert_eq!(runs, 1);
        let knee = rows.iter().find(|m| m.case == "knee").unwrap();
        assert_eq!(knee.derived.get("draws"), Some(&serde_json::json!(2)));
        assert_eq!(
            (s.ended.as_str(), s.topics[0].visits, s.topics[0].one_draw),
            ("decided", 1, false)
        );
    }

    #[test]
    fn a_regime_answer_the_time_left_in_one_draw_says_so() {
        let (s, _, runs) = race_fake("pipe", Duration::from_millis(100), 1);
        assert_eq!(runs, 0);
        assert_eq!(
            (s.topics[0].stopped.as_str(), s.topics[0].one_draw),
            ("limit", true)
        );
    }

    #[test]
    fn an_answer_never_decided_takes_visits_until_the_time_is_spent() {
        let (s, _, runs) = race_fake("pipe", Duration::from_millis(1200), usize::MAX);
        assert!(runs >= 1, "{runs}");
        assert_eq!(
            (s.ended.as_str(), s.topics[0].stopped.as_str()),
            ("limit", "stalled")
        );
    }

    /// An answer of `probe` with id `id` resting on `cases`, at `agreement`.
    fn resting_on(id: &str, probe: &str, cases: &[&str], agreement: f64) -> Recommendation {
        let rows: Vec<serde_json::Value> = cases
            .iter()
            .map(|c| serde_json::json!({"probe": probe, "case": c, "role": "choice", "unit": "bytes/s", "median": 1.0, "ci95": [1.0, 1.0]}))
            .collect();
        let rec = serde_json::json!({
            "id": id, "topic": "t", "scope": "", "action": "a",
            "choice": {"kind": "method", "name": "x", "tied": []},
            "effect": "", "caveats": [],
            "evidence": {"runs": [], "rows": rows},
            "confidence": {"level": "high", "reasons": [], "agreement": agreement}
        });
        serde_json::from_value(rec).expect("a recommendation")
    }

    #[test]
    fn a_visit_for_a_second_draw_draws_every_answer_of_its_probe_waiting_for_one() {
        // Pipe rows (a regime: each pass a draw), all measured once; "b" has had its
        // second draw. Answers: "x" and "y" wait for a second draw, "z" rests on "b"
        // only (drawn twice), "w" is of another probe.
        let mut rows = vec![
            row("pipe", "a", 1e9),
            row("pipe", "b", 1e9),
            row("pipe", "c", 1e9),
            row("socket", "s", 1e9),
        ];
        let again = row("pipe", "b", 1.1e9);
        rows[1].pool(again, true);
        let recs = vec![
            resting_on("x", "pipe", &["a", "b"], 0.99),
            resting_on("y", "pipe", &["c"], 0.99),
            resting_on("z", "pipe", &["b"], 0.9),
            resting_on("w", "socket", &["s"], 0.99),
        ];
        let cases = |w: &BTreeMap<String, BTreeSet<String>>| -> Vec<String> {
            w.iter()
                .flat_map(|(p, c)| c.iter().map(move |c| format!("{p}/{c}")))
                .collect()
        };
        // "x"'s visit draws "y"'s row too, not the socket's, and not "b": drawn twice
        // already, it is not what "x" waits for.
        assert_eq!(cases(&wanted_by(&recs, "x", &rows)), ["pipe/a", "pipe/c"]);
        // What "x"'s visit also settles: "y" (its agreement held at one draw's 0.5).
        let also: Vec<&str> = drawn_with(&recs, &recs[0], &rows)
            .iter()
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(also, ["y"]);
        // "z" waits for no draw: its visit measures its own rows only.
        assert_eq!(cases(&wanted_by(&recs, "z", &rows)), ["pipe/b"]);
        assert!(drawn_with(&recs, &recs[2], &rows).is_empty());
        assert!(wanted_by(&recs, "nothing", &rows).is_empty());
    }
}
