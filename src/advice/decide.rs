//! The statistics that choose: what a programmer should do, decided with statistics rather than
//! point estimates, with the evidence, the confidence and the caveats. Probes build
//! them from their rows with the helpers here ([`sizes`], [`methods`]); the report
//! renders them and puts them in JSON (`recommendations`). Nothing here names a probe.
//!
//! The best is a set. An option is *tied* with the best when its 95% interval (for a
//! method choice widened to the row's rerun noise) reaches within [`MARGIN`] (5%) of
//! the best's interval: a difference that small is within this
//! kind of machine's run-to-run drift and not worth a less portable method. A method
//! choice names the tied option doing the least work, then the cheapest whose median is
//! within twice the rows' rerun floor of the best's (at least [`PICK_MARGIN`], 3%; options
//! doing different work: at least the best's own noise, [`super::methods`]). A size
//! answer is a knee and a plateau ([`super::sizes`]); both kinds of confidence are the
//! share of simulated reruns, each moving every row within its noise, that keep the
//! answer ([`reruns`]).

use super::model::*;
use crate::harness::stats::{Modes, bimodal};
use crate::results::Measurement;
use crate::units::sig3;

/// How close to the best (relative) an option's interval must reach to tie with it.
pub const MARGIN: f64 = 0.05;

/// How close to the best (relative) a tied option's median must be to be chosen.
pub const PICK_MARGIN: f64 = 0.03;

/// One option to choose from.
#[derive(Clone, Copy)]
pub struct Opt<'a> {
    pub m: &'a Measurement,
    /// Lower is cheaper: bytes of buffer, CPU seconds per GiB, …
    pub cost: f64,
    /// The work the option does by construction; [`Work::SAME`] when options differ
    /// only in size.
    pub work: Work,
    /// Its own rerun floor, where its figure moves between runs more than its answer's
    /// other options do ([`Words::rerun_noise`] otherwise): a row drawing one of two
    /// regimes beside rows that do not.
    pub floor: Option<f64>,
}

impl<'a> Opt<'a> {
    /// An option that does the same kind of work as the others (a size of one loop).
    pub fn new(m: &'a Measurement, cost: f64) -> Opt<'a> {
        Opt {
            m,
            cost,
            work: Work::SAME,
            floor: None,
        }
    }

    /// Its rerun floor in an answer whose floor is `answer`.
    pub fn floor_in(&self, answer: f64) -> f64 {
        self.floor.unwrap_or(answer)
    }
}

/// The work an option does by construction, whatever a run measures: system calls and
/// data copies through the CPU per unit of work (one operation, or one MiB moved).
/// Among options tied with the best, the one that does less work is chosen before the
/// medians and the costs are looked at: two calls doing one call's work cannot be
/// faster except by noise, so a tie between them is noise, and a rerun's noise must not
/// flip the choice. Calls are compared first, then copies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    pub calls: f64,
    pub copies: f64,
    /// What one unit is ("operation", "MiB"), for the reason given.
    pub per: &'static str,
    /// The options' work is one operation plus whole extra calls (pwrite; lseek +
    /// write; open + pread + close), so one doing more *cannot* be faster: measured
    /// faster, it caught the machine in a faster moment (seen here: pwrite at 1,063 ns
    /// in one run and 641 ns in the next). False where counts are estimates (copy
    /// methods, whose extra calls may save copies).
    pub exact: bool,
}

impl Work {
    /// Options that differ only in size or setting: nothing to break a tie with.
    pub const SAME: Work = Work {
        calls: 0.0,
        copies: 0.0,
        per: "",
        exact: false,
    };

    pub fn calls(calls: f64, copies: f64, per: &'static str) -> Work {
        Work {
            calls,
            copies,
            per,
            exact: false,
        }
    }

    /// The same operation with `extra` whole calls added: see [`Work::exact`].
    pub fn exact(calls: f64, per: &'static str) -> Work {
        Work {
            calls,
            copies: 1.0,
            per,
            exact: true,
        }
    }

    /// `self` does strictly less of the same work than `o`, by construction.
    pub(super) fn surely_less(&self, o: &Work) -> bool {
        self.exact && o.exact && self.cmp(o).is_lt()
    }

    /// Less work than `o`: fewer calls, or as many and fewer copies.
    fn cmp(&self, o: &Work) -> std::cmp::Ordering {
        self.calls
            .total_cmp(&o.calls)
            .then(self.copies.total_cmp(&o.copies))
    }

    /// Why `self` is less work than `o`, in words; None when it is not.
    pub(super) fn less_than(&self, o: &Work) -> Option<String> {
        let n = |x: f64| {
            if x == x.round() {
                format!("{x}")
            } else {
                sig3(x)
            }
        };
        if self.calls < o.calls {
            Some(format!(
                "{} system call{} per {} instead of {}",
                n(self.calls),
                if self.calls == 1.0 { "" } else { "s" },
                self.per,
                n(o.calls)
            ))
        } else if self.calls == o.calls && self.copies < o.copies {
            Some(format!(
                "{} data cop{} per {} instead of {}",
                n(self.copies),
                if self.copies == 1.0 { "y" } else { "ies" },
                self.per,
                n(o.copies)
            ))
        } else {
            None
        }
    }
}

/// Is a higher figure better (bytes/s) or a lower one (ns/op)?
pub fn higher_is_better(m: &Measurement) -> bool {
    m.unit.higher_is_better()
}

/// `x` ÷ `y` in performance terms (above 1 when `x` is better).
pub fn gain(x: &Measurement, y: &Measurement) -> f64 {
    if higher_is_better(x) {
        x.median / y.median
    } else {
        y.median / x.median
    }
}

/// The statistical ranking of a set of options.
pub struct Ranking {
    /// Index of the option with the best median.
    pub best: usize,
    /// Indices tied with the best (the best included), in input order.
    pub tied: Vec<usize>,
    /// Among the tied options, the one doing the least [`Work`]; of those, the cheapest
    /// whose median is within [`PICK_MARGIN`] of the anchor's.
    pub pick: usize,
    /// Where "near the best" is judged from: the best, or where the best draws one of
    /// two regimes (an [`Opt::floor`] of its own), the best of the tied options that
    /// do not. io_uring's page-cache copy led read-write/1MiB by ×1.15 in its fast
    /// regime and trailed it by ×0.83 in its slow one: judged from its fast draws, the
    /// pick moved with the draw.
    pub anchor: usize,
}

/// Whether `m`'s interval reaches within [`MARGIN`] of `best`'s.
pub fn ties(m: &Measurement, best: &Measurement) -> bool {
    if higher_is_better(best) {
        m.ci95[1] >= best.ci95[0] * (1.0 - MARGIN)
    } else {
        m.ci95[0] <= best.ci95[1] * (1.0 + MARGIN)
    }
}

/// Whether `m`'s median is within `margin` of `best`'s.
pub(super) fn close(m: &Measurement, best: &Measurement, margin: f64) -> bool {
    if higher_is_better(best) {
        m.median >= best.median * (1.0 - margin)
    } else {
        m.median <= best.median * (1.0 + margin)
    }
}

/// Whether `m`'s interval reaches within `margin` of `best`'s median: a rerun moving `m`
/// within its interval may bring it there.
fn reaches(m: &Measurement, best: &Measurement, margin: f64) -> bool {
    if higher_is_better(best) {
        m.ci95[1] >= best.median * (1.0 - margin)
    } else {
        m.ci95[0] <= best.median * (1.0 + margin)
    }
}

/// Ranks measured options (unmeasured ones are skipped); None when none was measured.
pub fn rank(options: &[Opt]) -> Option<Ranking> {
    rank_within(options, PICK_MARGIN, Near::Median)
}

/// Which tied options may be picked ahead of the best by doing less work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Near {
    /// Those whose median is within the margin of the best's.
    Median,
    /// Those whose interval reaches within the margin of the best's median: where the
    /// rows' own noise (a busy machine's regimes) may put any of them first in a rerun.
    Interval,
}

/// [`rank`], choosing among the tied options doing the least work the cheapest whose
/// median (or interval, [`Near`]) is within `margin` of the best's median.
pub(super) fn rank_within(options: &[Opt], margin: f64, near: Near) -> Option<Ranking> {
    let ok: Vec<usize> = (0..options.len())
        .filter(|&i| options[i].m.is_ok() && options[i].m.median > 0.0)
        .collect();
    let better = |i: usize, j: usize| gain(options[i].m, options[j].m) > 1.0;
    let best = ok
        .iter()
        .copied()
        .reduce(|b, i| if better(i, b) { i } else { b })?;
    // An option doing surely less of the best's work is tied with it, whatever the
    // figures: measured slower, it was measured in a slower moment.
    let with_best: Vec<usize> = ok
        .iter()
        .copied()
        .filter(|&i| {
            ties(options[i].m, options[best].m) || options[i].work.surely_less(&options[best].work)
        })
        .collect();
    // Tied with a best whose interval is wide is not tied with every other option: one
    // measured apart from a better one of the set (their intervals do not reach within
    // MARGIN of each other) leaves it, unless it surely does less of that one's work.
    let beaten = |i: usize| {
        with_best.iter().any(|&j| {
            better(j, i)
                && !ties(options[i].m, options[j].m)
                && !options[i].work.surely_less(&options[j].work)
        })
    };
    let tied: Vec<usize> = with_best.iter().copied().filter(|&i| !beaten(i)).collect();
    // Less work wins the tie only near the best: a median further than `margin` below
    // it is kept from the pick unless the option surely does less of the best's work
    // (copy_file_range makes fewer calls than read-write, yet on a file system without
    // reflink it may copy slower every time).
    let anchor = match options[best].floor {
        Some(_) => tied
            .iter()
            .copied()
            .filter(|&i| options[i].floor.is_none())
            .reduce(|b, i| if better(i, b) { i } else { b })
            .unwrap_or(best),
        None => best,
    };
    let far = |i: usize| match near {
        Near::Median => !close(options[i].m, options[anchor].m, margin),
        Near::Interval => !reaches(options[i].m, options[anchor].m, margin),
    };
    let pick = tied
        .iter()
        .copied()
        .filter(|&i| !far(i) || options[i].work.surely_less(&options[best].work))
        .min_by(|&a, &b| {
            options[a]
                .work
                .cmp(&options[b].work)
                .then(options[a].cost.total_cmp(&options[b].cost))
        })
        .unwrap_or(anchor);
    Some(Ranking {
        best,
        tied,
        pick,
        anchor,
    })
}

/// The evidence row for `m`.
pub fn row(m: &Measurement, role: &str) -> Row {
    Row {
        probe: m.probe.clone(),
        case: m.case.clone(),
        role: role.into(),
        unit: m.unit,
        median: m.median,
        ci95: m.ci95,
        modes: bimodal(&m.raw).map(|Modes { low, high, .. }| [low, high]),
    }
}

/// A recommendation's text parts, given by the probe.
pub struct Words<'a> {
    /// The stable id after the probe's name, from the topic and the scope's options only
    /// (`chunk.write-read.any`); see [`Recommendation::id`].
    pub id: String,
    pub topic: &'a str,
    /// The least a rerun moves one of these rows ([`RERUN_NOISE_LOOP`] for calibrated
    /// loops, [`RERUN_NOISE_PASS`] for whole passes), whatever one run's CI says.
    pub rerun_noise: f64,
    pub scope: String,
    pub operation: Option<&'a str>,
    /// What a size is called: "buffers", "blocks", "chunks".
    pub noun: &'a str,
    pub caveats: Vec<String>,
}

/// Assembles a recommendation; `support` is the reason given when nothing lowered the
/// confidence.
pub(super) fn finish(
    w: Words,
    action: String,
    choice: Choice,
    effect: String,
    rows: Vec<Row>,
    mut conf: Confidence,
    support: String,
) -> Recommendation {
    if conf.reasons.is_empty() {
        conf.reasons.push(support);
    }
    Recommendation {
        id: w.id,
        topic: w.topic.into(),
        scope: w.scope,
        operation: w.operation.map(String::from),
        action,
        choice,
        context: Default::default(),
        plateau: None,
        effect,
        evidence: Evidence {
            rows,
            ..Evidence::default()
        },
        confidence: conf,
        caveats: w.caveats,
        changed: None,
    }
}
