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
//! within twice the rows' rerun floor of the best's (at least [`PICK_MARGIN`], 3%). A size
//! answer is a knee and a plateau ([`super::sizes`]); both kinds of confidence are the
//! share of simulated reruns, each moving every row within its noise, that keep the
//! answer ([`reruns`]).

use super::model::*;
use crate::harness::stats::{Modes, Rng, bimodal};
use crate::results::Measurement;
use crate::units::{format_ns, sig3};

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
}

impl<'a> Opt<'a> {
    /// An option that does the same kind of work as the others (a size of one loop).
    pub fn new(m: &'a Measurement, cost: f64) -> Opt<'a> {
        Opt {
            m,
            cost,
            work: Work::SAME,
        }
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
    fn surely_less(&self, o: &Work) -> bool {
        self.exact && o.exact && self.cmp(o).is_lt()
    }

    /// Less work than `o`: fewer calls, or as many and fewer copies.
    fn cmp(&self, o: &Work) -> std::cmp::Ordering {
        self.calls
            .total_cmp(&o.calls)
            .then(self.copies.total_cmp(&o.copies))
    }

    /// Why `self` is less work than `o`, in words; None when it is not.
    fn less_than(&self, o: &Work) -> Option<String> {
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
    /// whose median is within [`PICK_MARGIN`] of the best's.
    pub pick: usize,
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
fn close(m: &Measurement, best: &Measurement, margin: f64) -> bool {
    if higher_is_better(best) {
        m.median >= best.median * (1.0 - margin)
    } else {
        m.median <= best.median * (1.0 + margin)
    }
}

/// Ranks measured options (unmeasured ones are skipped); None when none was measured.
pub fn rank(options: &[Opt]) -> Option<Ranking> {
    rank_within(options, PICK_MARGIN)
}

/// [`rank`], choosing among the tied options doing the least work the cheapest whose
/// median is within `margin` of the best's.
fn rank_within(options: &[Opt], margin: f64) -> Option<Ranking> {
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
    let tied: Vec<usize> = ok
        .iter()
        .copied()
        .filter(|&i| {
            ties(options[i].m, options[best].m) || options[i].work.surely_less(&options[best].work)
        })
        .collect();
    let far = |i: usize| !close(options[i].m, options[best].m, margin);
    let pick = tied
        .iter()
        .copied()
        .min_by(|&a, &b| {
            options[a]
                .work
                .cmp(&options[b].work)
                .then(far(a).cmp(&far(b)))
                .then(options[a].cost.total_cmp(&options[b].cost))
        })
        .unwrap_or(best);
    Some(Ranking { best, tied, pick })
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

/// How far the median of the first half of `raw` (in the order taken: one sample per
/// round where cases take turns) is from the second half's, relative to the whole
/// median: the spread between rounds, which a within-run CI does not see. None below
/// 8 samples.
pub fn split_half_drift(raw: &[f64]) -> Option<f64> {
    if raw.len() < 8 {
        return None;
    }
    let med = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        crate::harness::stats::quantile_sorted(&s, 0.5)
    };
    let (a, b) = raw.split_at(raw.len() / 2);
    let whole = med(raw);
    (whole > 0.0).then(|| (med(a) - med(b)).abs() / whole)
}

/// The least a rerun moves a median here, relative, whatever one run's interval says:
/// a calibrated loop's (many iterations per sample) and a whole pass's (a stream
/// through a pipe, a file copy, a pass with fsync: one iteration per sample). Twin
/// `ioprobe run`s on this 2-CPU VM moved loops by up to 2% and passes by up to 5–10%
/// (the reference pipe sweep agreed with itself within ±5% on only 80–92% of rows),
/// while single runs' intervals said ±1%: within-run intervals miss the between-run
/// noise, and a choice resting on them flipped at high confidence.
/// The probe says which its rows are, in [`Words::rerun_noise`].
pub const RERUN_NOISE_LOOP: f64 = 0.02;
pub const RERUN_NOISE_PASS: f64 = 0.05;
/// A calibrated loop bound by memory bandwidth (copies between the page cache and a
/// buffer): its figure follows the host's memory traffic, not the loop. Twin runs here
/// moved read/1MiB from 25.7 to 22.9 GB/s (−11%) while its neighbours moved 0–5%, and
/// in another pair read/256KiB/readahead from 20.4 to 16.6 GB/s (−19%): each flipped a
/// high-confidence read-buffer pick whose lead was 7–11%.
pub const RERUN_NOISE_MEMORY: f64 = 0.10;
/// A pass that waits on the disk (fsync, O_DSYNC): its figure is the device's, here the
/// VM host's disk and cache, shared with other guests. Twin runs moved write/fsync/64KiB
/// from 0.975 to 0.833 GB/s (−15%) and flipped a high-confidence pick resting on an 8%
/// lead.
pub const RERUN_NOISE_DISK: f64 = 0.15;

/// How far a rerun may move `m`'s median, relative: its CI's half-width, the drift
/// between the halves of its rounds, the distance between its two regimes, or the
/// rerun floor `floor` ([`RERUN_NOISE_LOOP`], [`RERUN_NOISE_PASS`]), whichever is
/// largest.
pub(super) fn noise(m: &Measurement, floor: f64) -> f64 {
    let half = (m.ci95[1] - m.ci95[0]) / 2.0 / m.median;
    let modes = bimodal(&m.raw).map_or(0.0, |x| (x.high - x.low) / m.median);
    half.max(split_half_drift(&m.raw).unwrap_or(0.0))
        .max(modes)
        .max(floor)
}

/// A recommendation id's part after the probe's name, from the topic and the options
/// its scope is made of: each part lowercased, letters, digits and '-' kept, '+' and
/// '/' made '-', the rest dropped (`["chunk", "write-read", "any"]` →
/// `chunk.write-read.any`, `"64 MiB"` → `64mib`).
pub fn id(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .filter_map(|c| match c {
                    c if c.is_ascii_alphanumeric() => Some(c.to_ascii_lowercase()),
                    '-' | '+' | '/' => Some('-'),
                    _ => None,
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(".")
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

/// Simulated reruns per choice, and how far each moves a row: a normal draw on the log
/// scale whose standard deviation is this share of the row's [`noise`]. The confidence
/// is the share of reruns whose choice keeps the answer: high from [`HIGH_REPEAT`],
/// medium from [`MEDIUM_REPEAT`]. Calibrated on the figures of 24 twin-run pairs of this
/// machine, idle and loaded (size choices these levels called high repeated in 98% of
/// the twins idle and 100% loaded).
pub(super) const RERUNS: usize = 400;
pub(super) const RERUN_SPREAD: f64 = 0.75;
pub(super) const HIGH_REPEAT: f64 = 0.95;
pub(super) const MEDIUM_REPEAT: f64 = 0.80;

/// [`RERUNS`] simulated reruns of a choice among figures whose noises are `noise`:
/// each rerun moves every figure by a factor drawn on the log scale ([`RERUN_SPREAD`]
/// × its noise) and `choose` chooses from the factors. Returns the share of reruns
/// that chose `pick` and the index chosen most often otherwise. Fixed seed: the same
/// figures give the same answer.
pub(super) fn reruns(
    noise: &[f64],
    pick: usize,
    mut choose: impl FnMut(&[f64]) -> usize,
) -> (f64, Option<usize>) {
    let mut rng = Rng(0x5851_F42D_4C95_7F2D);
    let mut chose = vec![0usize; noise.len()];
    let mut factors = vec![1.0; noise.len()];
    for _ in 0..RERUNS {
        for (f, n) in factors.iter_mut().zip(noise) {
            *f = (n * RERUN_SPREAD * rng.normal()).exp();
        }
        chose[choose(&factors)] += 1;
    }
    let other = (0..noise.len())
        .filter(|&i| i != pick && chose[i] > 0)
        .max_by_key(|&i| chose[i]);
    (chose[pick] as f64 / RERUNS as f64, other)
}

/// Lowers `c` by the share `repeat` of simulated reruns that chose the same option
/// (high from [`HIGH_REPEAT`], medium from [`MEDIUM_REPEAT`]); `other` names the one
/// chosen most often otherwise, `rows` are the figures moved with their noises; `kind`
/// what moves ("option", "size") and `outcome` what the other reruns did ("chooses
/// another").
pub(super) fn repeat_confidence(
    c: &mut Confidence,
    repeat: f64,
    other: Option<String>,
    rows: &[(&Measurement, f64)],
    (kind, outcome): (&str, &str),
) {
    if repeat >= HIGH_REPEAT {
        return;
    }
    let lo = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let (widest, hi) = rows.iter().fold(
        (None, 0.0),
        |(w, hi), &(m, n)| if n > hi { (Some(m), n) } else { (w, hi) },
    );
    let why = widest.filter(|_| hi > lo).map_or(String::new(), |m| {
        let bi = if bimodal(&m.raw).is_some() {
            ", bimodal"
        } else {
            ""
        };
        format!("; widest {}{bi}", m.case)
    });
    c.cap(
        if repeat < MEDIUM_REPEAT { Level::Low } else { Level::Medium },
        format!(
            "borderline: a rerun moving each {kind} within its noise (±{}–{}%{why}) {outcome} in {}% of {RERUNS} simulated reruns{}",
            sig3(lo * 100.0),
            sig3(hi * 100.0),
            sig3((1.0 - repeat) * 100.0),
            other.map_or(String::new(), |o| format!(" (most often {o})"))
        ),
    );
}

/// The best option outside the tie set (the "next" row a method choice cites).
fn best_ruled_out(opts: &[Opt], r: &Ranking) -> Option<usize> {
    (0..opts.len())
        .filter(|i| opts[*i].m.is_ok() && opts[*i].m.median > 0.0 && !r.tied.contains(i))
        .reduce(|a, b| {
            if gain(opts[b].m, opts[a].m) > 1.0 {
                b
            } else {
                a
            }
        })
}

/// Copies of the options' rows for ranking (samples dropped): each interval widened to
/// at least ± the row's noise (rerun floor `fl`), so options a rerun may reorder tie.
fn widened(opts: &[Opt], fl: f64) -> Vec<Measurement> {
    opts.iter()
        .map(|o| {
            let n = if o.m.is_ok() && o.m.median > 0.0 {
                noise(o.m, fl)
            } else {
                0.0
            };
            let mut m = o.m.clone();
            m.raw.clear();
            m.ci95 = [
                m.ci95[0].min(m.median * (1.0 - n)),
                m.ci95[1].max(m.median * (1.0 + n)),
            ];
            m
        })
        .collect()
}

/// `opts` with their rows replaced by `rows` (one each, in order).
fn with_rows<'a>(opts: &[Opt], rows: &'a [Measurement]) -> Vec<Opt<'a>> {
    opts.iter()
        .zip(rows)
        .map(|(o, m)| Opt { m, ..*o })
        .collect()
}

/// Lowers `c` by how often simulated reruns, each moving every option of `opts` within
/// its noise (rerun floor `fl`), rank another option first ([`reruns`]; ranked as `r`
/// with the pick margin `margin`, on the rows `wide` widened to their noise). Returns
/// the share that chose the same option.
fn method_reruns(
    c: &mut Confidence,
    (opts, wide): (&[Opt], &[Measurement]),
    (r, margin): (&Ranking, f64),
    fl: f64,
    name: &dyn Fn(usize) -> String,
) -> f64 {
    let ok = |o: &Opt| o.m.is_ok() && o.m.median > 0.0;
    let spread: Vec<f64> = opts
        .iter()
        .map(|o| if ok(o) { noise(o.m, fl) } else { 0.0 })
        .collect();
    let mut moved: Vec<Measurement> = wide.to_vec();
    let (repeat, other) = reruns(&spread, r.pick, |f| {
        for ((m, w), f) in moved.iter_mut().zip(wide).zip(f) {
            m.median = w.median * f;
            m.ci95 = [w.ci95[0] * f, w.ci95[1] * f];
        }
        rank_within(&with_rows(opts, &moved), margin).map_or(r.pick, |x| x.pick)
    });
    let rows: Vec<(&Measurement, f64)> = opts
        .iter()
        .zip(&spread)
        .filter(|(o, _)| ok(o))
        .map(|(o, n)| (o.m, *n))
        .collect();
    repeat_confidence(
        c,
        repeat,
        other.map(name),
        &rows,
        ("option", "chooses another"),
    );
    repeat
}

/// A choice among named options (methods, capacities): the cheapest tied with the best.
/// `baseline` names the option the effect is quoted against, if measured.
pub fn methods(
    w: Words,
    options: &[(String, Opt)],
    baseline: Option<&str>,
) -> Option<Recommendation> {
    let opts: Vec<Opt> = options.iter().map(|o| o.1).collect();
    // Among tied options doing the same work, a median within twice the rerun floor of
    // the best's is the noise's (twin runs moved whole passes by up to 5–10%): the
    // cheapest of them is chosen, whichever median is lower. Ties are judged on the
    // intervals widened to each row's noise: a lead a rerun can undo is no lead.
    let fl = w.rerun_noise;
    let margin = PICK_MARGIN.max(2.0 * fl);
    let wide = widened(&opts, fl);
    let r = rank_within(&with_rows(&opts, &wide), margin)?;
    let name = |i: usize| options[i].0.clone();
    let pick = opts[r.pick].m;
    let measured = opts.iter().filter(|o| o.m.is_ok()).count();
    let mut conf = Confidence::new();
    if measured < 2 {
        let why = "only one option measured: nothing to choose between";
        conf.cap(Level::Low, why.into());
    }
    let out = best_ruled_out(&opts, &r);
    let mut rows = method_rows(&opts, &r, out);
    impossible_lead(&mut conf, (&opts, &wide), &r, &name);
    let lead = out
        .map(|i| {
            (
                gain(pick, opts[i].m),
                noise(pick, fl) + noise(opts[i].m, fl),
            )
        })
        .filter(|&(g, n)| r.tied.len() == 1 && g - 1.0 > 2.0 * n && measured >= 2);
    let repeat = method_reruns(&mut conf, (&opts, &wide), (&r, margin), fl, &name);
    let tied: Vec<String> = r
        .tied
        .iter()
        .filter(|&&i| i != r.pick)
        .map(|&i| name(i))
        .collect();
    let base = baseline.and_then(|b| options.iter().position(|o| o.0 == b && o.1.m.is_ok()));
    let effect = physics_first(
        &opts,
        &r,
        &name,
        method_effect(&opts, &r, (base, out), &mut rows, &name),
    );
    let support = format!(
        "{measured} options measured; a rerun moving each within its noise chooses {} in {}% of {RERUNS} simulated reruns{}",
        name(r.pick),
        sig3(repeat * 100.0),
        lead.map_or(String::new(), |(g, n)| format!(
            "; it leads the next option by ×{}, more than twice their noise (±{}% together)",
            sig3(g),
            sig3(n * 100.0)
        ))
    );
    let action = method_action(&opts, &r, &name);
    let choice = Choice::Method {
        name: name(r.pick),
        tied,
    };
    let mut rec = finish(w, action, choice, effect, rows, conf, support);
    rec.confidence
        .reasons
        .extend(tie_broken_by_work(&opts, &r, &name));
    Some(rec)
}

/// An option doing strictly less of the best's work, slower beyond both rows' noise:
/// the machine changed between the two measurements, which lowers `conf`.
fn impossible_lead(
    conf: &mut Confidence,
    (opts, wide): (&[Opt], &[Measurement]),
    r: &Ranking,
    name: &dyn Fn(usize) -> String,
) {
    let (pick, best) = (opts[r.pick].m, opts[r.best].m);
    if r.pick != r.best
        && opts[r.pick].work.surely_less(&opts[r.best].work)
        && !ties(&wide[r.pick], &wide[r.best])
    {
        conf.cap(
            Level::Low,
            format!(
                "{} measured ×{} faster than {}, which does less of the same work: impossible by construction, so the machine changed between the two measurements; rerun",
                name(r.best),
                sig3(gain(best, pick)),
                name(r.pick)
            ),
        );
    }
}

/// A tie won on physics says so first, as the summary shows the effect's first part:
/// "tied with lseek+write within noise, and 1 system call per operation instead of 2;
/// …".
fn physics_first(
    opts: &[Opt],
    r: &Ranking,
    name: &dyn Fn(usize) -> String,
    effect: String,
) -> String {
    match r
        .tied
        .iter()
        .filter(|&&i| i != r.pick)
        .find_map(|&i| Some((name(i), opts[r.pick].work.less_than(&opts[i].work)?)))
    {
        Some((other, why)) => format!("tied with {other} within noise, and {why}; {effect}"),
        None => effect,
    }
}

/// Options tied within the tolerance are one answer, the first named by the work rule:
/// "use copy-file-range, or sendfile: equal here" (the fastest other one named, the
/// rest counted, so the summary's cell stays short).
fn method_action(opts: &[Opt], r: &Ranking, name: &dyn Fn(usize) -> String) -> String {
    let pick = opts[r.pick].m;
    let mut equal: Vec<usize> = r
        .tied
        .iter()
        .copied()
        .filter(|&i| {
            i != r.pick && close(opts[i].m, pick, MARGIN) && close(pick, opts[i].m, MARGIN)
        })
        .collect();
    equal.sort_by(|&a, &b| gain(opts[b].m, opts[a].m).total_cmp(&1.0));
    match equal.as_slice() {
        [] => format!("use {}", name(r.pick)),
        [one] => format!("use {}, or {}: equal here", name(r.pick), name(*one)),
        [first, rest @ ..] => format!(
            "use {}, or {} and {} other{}: equal here",
            name(r.pick),
            name(*first),
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ),
    }
}

/// The evidence rows of a method pick: the choice, the best if another, the rest of
/// the tie set, and the fastest option ruled out (`out`).
fn method_rows(opts: &[Opt], r: &Ranking, out: Option<usize>) -> Vec<Row> {
    let mut rows = vec![row(opts[r.pick].m, "choice")];
    if r.best != r.pick {
        rows.push(row(opts[r.best].m, "best"));
    }
    for &i in &r.tied {
        if i != r.pick && i != r.best {
            rows.push(row(opts[i].m, "tied"));
        }
    }
    if let Some(i) = out {
        rows.push(row(opts[i].m, "next"));
    }
    rows
}

/// A method pick's effect: against the baseline option `base` when there is one
/// other than the pick (its row added to `rows`), else against the fastest option
/// ruled out (`out`).
fn method_effect(
    opts: &[Opt],
    r: &Ranking,
    (base, out): (Option<usize>, Option<usize>),
    rows: &mut Vec<Row>,
    name: &dyn Fn(usize) -> String,
) -> String {
    let pick = opts[r.pick].m;
    match base {
        Some(b) if b != r.pick => {
            let bm = opts[b].m;
            if !rows.iter().any(|r| r.case == bm.case) {
                rows.push(row(bm, "baseline"));
            }
            let saving = if higher_is_better(pick) {
                String::new()
            } else {
                format!(", saving {} per call", format_ns(bm.median - pick.median))
            };
            format!(
                "×{} against {} ({} vs {}){saving}",
                sig3(gain(pick, bm)),
                name(b),
                pick.unit.figure(pick.median),
                bm.unit.figure(bm.median)
            )
        }
        _ => match out {
            Some(i) => format!(
                "{}; the fastest option not tied, {}, is ×{} slower",
                pick.unit.figure(pick.median),
                name(i),
                sig3(gain(pick, opts[i].m))
            ),
            None => pick.unit.figure(pick.median),
        },
    }
}

/// "tie broken by the work done: pwrite does less than lseek+write (…)", when the pick
/// does less work than options tied with it.
fn tie_broken_by_work(opts: &[Opt], r: &Ranking, name: &dyn Fn(usize) -> String) -> Option<String> {
    let less: Vec<(String, String)> = r
        .tied
        .iter()
        .filter_map(|&i| {
            let why = opts[r.pick].work.less_than(&opts[i].work)?;
            Some((name(i), why))
        })
        .collect();
    let than = match less.as_slice() {
        [] => return None,
        [(other, why)] => format!("{other} ({why})"),
        many => format!(
            "the {} other tied options ({})",
            many.len(),
            many.iter()
                .map(|x| x.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Some(format!(
        "tie broken by the work done: {} does less than {than}",
        name(r.pick)
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::Unit;

    /// A bytes/s row with samples spread ±`spread` around `median`.
    pub(crate) fn m(case: &str, median: f64, spread: f64) -> Measurement {
        let mut m: Measurement = serde_json::from_value(serde_json::json!({
            "probe": "t", "case": case, "params": {}, "unit": "bytes/s",
            "median": median, "ci95": [median * (1.0 - spread), median * (1.0 + spread)],
            "min": 0.0, "max": 0.0, "mean": 0.0, "stddev": 0.0, "cv": 0.0, "mad": 0.0,
            "outliers": 0, "ci_level": 0.95, "converged": true, "samples": 12,
            "iterations": 12000, "warmup_iterations": 1,
            "rusage": {"per": "GiB", "user_s": 0.0, "sys_s": 0.0, "voluntary_cs": 0.0,
                "involuntary_cs": 0.0, "minor_faults": 0.0, "major_faults": 0.0,
                "blocks_in": 0.0, "blocks_out": 0.0,
                "total": {"user_us": 0, "sys_us": 0, "voluntary_cs": 0, "involuntary_cs": 0,
                    "minor_faults": 0, "major_faults": 0, "blocks_in": 0, "blocks_out": 0}},
            "derived": {}, "note": "", "warnings": [], "raw": []
        }))
        .unwrap();
        m.raw = (0..12)
            .map(|k| median * (1.0 + spread * ((k % 5) as f64 - 2.0) / 2.0))
            .collect();
        m
    }

    pub(crate) fn words() -> Words<'static> {
        Words {
            id: "buffer".into(),
            topic: "read loop buffer",
            rerun_noise: RERUN_NOISE_LOOP,
            scope: String::new(),
            operation: None,
            noun: "buffers",
            caveats: Vec::new(),
        }
    }

    #[test]
    fn methods_pick_the_cheapest_tied_and_name_the_others() {
        let (a, b, c) = (
            m("copy-file-range", 4.25e9, 0.02),
            m("sendfile", 4.24e9, 0.02),
            m("read-write", 3.3e9, 0.01),
        );
        // Whole passes (file copies): a rerun may move each by 5%.
        let choose = |sendfile: &Measurement| {
            let opts = vec![
                ("copy-file-range".to_string(), Opt::new(&a, 0.3)),
                ("sendfile".to_string(), Opt::new(sendfile, 0.2)),
                ("read-write".to_string(), Opt::new(&c, 0.5)),
            ];
            let w = Words {
                rerun_noise: RERUN_NOISE_PASS,
                ..words()
            };
            methods(w, &opts, Some("read-write")).unwrap()
        };
        let r = choose(&b);
        assert_eq!(
            r.choice,
            Choice::Method {
                name: "sendfile".into(),
                tied: vec!["copy-file-range".into()]
            }
        );
        assert_eq!(r.action, "use sendfile, or copy-file-range: equal here");
        assert!(
            r.effect.starts_with("×1.28 against read-write"),
            "{}",
            r.effect
        );
        // Tied and doing the same work: the cheaper is chosen while its median is within
        // twice the rerun floor (10%) of the best's, whichever is lower, so a rerun's
        // noise does not swap them (twin runs here swapped copy-file-range and sendfile
        // 4 times in 9 when the 3% line decided).
        assert_eq!(r.confidence.level, Level::High, "{:?}", r.confidence);
        // 11% behind the best, it is no longer chosen, and a rerun's 5% moves it across
        // the line: not high.
        let r = choose(&m("sendfile", 3.82e9, 0.02));
        assert_eq!(r.action, "use copy-file-range");
        assert_ne!(r.confidence.level, Level::High, "{:?}", r.confidence);
        assert!(
            r.confidence
                .reasons
                .iter()
                .any(|x| x.starts_with("borderline: a rerun moving each option")
                    && x.ends_with("(most often sendfile)")),
            "{:?}",
            r.confidence.reasons
        );
    }

    #[test]
    fn bimodal_samples_lower_the_confidence() {
        let mut a = m("io-uring", 1.4e9, 0.02);
        a.raw = [1.45e9; 7].into_iter().chain([0.45e9; 4]).collect();
        let b = m("sendfile", 1.2e9, 0.01);
        let opts = vec![
            ("io-uring".to_string(), Opt::new(&a, 0.1)),
            ("sendfile".to_string(), Opt::new(&b, 0.1)),
        ];
        let r = methods(words(), &opts, None).unwrap();
        assert_eq!(r.confidence.level, Level::Low);
        assert!(r.confidence.reasons.iter().any(|x| x.contains("bimodal")));
    }

    #[test]
    fn lower_is_better_for_ns_per_op() {
        let mut a = m("pread", 145.0, 0.005);
        let mut b = m("lseek_read", 227.0, 0.005);
        a.unit = Unit::NsPerOp;
        b.unit = Unit::NsPerOp;
        let opts = vec![
            ("lseek+read".to_string(), Opt::new(&b, 0.0)),
            ("pread".to_string(), Opt::new(&a, 0.0)),
        ];
        let r = methods(words(), &opts, Some("lseek+read")).unwrap();
        assert_eq!(r.action, "use pread");
        assert!(
            r.effect.starts_with("×1.57 against lseek+read"),
            "{}",
            r.effect
        );
    }

    /// Seed 004's positioned writes, as a loaded run measured them: lseek+write's median
    /// below pwrite's, their intervals overlapping. One call doing the work of two wins
    /// the tie, whichever median is lower, and the reason says so.
    #[test]
    fn a_tie_between_one_call_and_two_goes_to_the_one_call() {
        let opt = |name: &str, m, work| (name.to_string(), Opt { m, cost: 0.0, work });
        let ns = |case: &str, median: f64, lo: f64, hi: f64| {
            let mut x = m(case, median, 0.0);
            x.unit = Unit::NsPerOp;
            x.ci95 = [lo, hi];
            x.raw = vec![median; 12];
            x
        };
        let (lw, pw) = (
            ns("lseek_write", 640.0, 620.0, 700.0),
            ns("pwrite", 656.0, 642.0, 681.0),
        );
        for order in [[0, 1], [1, 0]] {
            let all = [
                opt("lseek+write", &lw, Work::calls(2.0, 1.0, "operation")),
                opt("pwrite", &pw, Work::calls(1.0, 1.0, "operation")),
            ];
            let opts = [all[order[0]].clone(), all[order[1]].clone()];
            let r = methods(words(), &opts, Some("lseek+write")).unwrap();
            assert_eq!(
                r.action, "use pwrite, or lseek+write: equal here",
                "{order:?}"
            );
            // The why cell (the effect's first part) says the tie was won on work.
            assert!(
                r.effect.starts_with(
                    "tied with lseek+write within noise, and 1 system call per operation instead of 2; "
                ),
                "{}",
                r.effect
            );
            assert!(
                r.confidence.reasons.iter().any(|x| x
                    == "tie broken by the work done: pwrite does less than lseek+write (1 system call per operation instead of 2)"),
                "{:?}",
                r.confidence.reasons
            );
        }
        // pwrite measured far slower, in a slower moment of the machine: still pwrite,
        // at low confidence, saying why.
        let slow = ns("pwrite", 900.0, 880.0, 920.0);
        let exact = [
            opt("lseek+write", &lw, Work::exact(2.0, "operation")),
            opt("pwrite", &slow, Work::exact(1.0, "operation")),
        ];
        let r = methods(words(), &exact, None).unwrap();
        assert_eq!(r.action, "use pwrite");
        assert_eq!(r.confidence.level, Level::Low);
        assert!(
            r.confidence
                .reasons
                .iter()
                .any(|x| x.contains("impossible by construction"))
        );
        // Estimated work (copy methods): the measured winner stays.
        let opts = [
            opt("lseek+write", &lw, Work::calls(2.0, 1.0, "operation")),
            opt("pwrite", &slow, Work::calls(1.0, 1.0, "operation")),
        ];
        let r = methods(words(), &opts, None).unwrap();
        assert_eq!(r.action, "use lseek+write");
    }
}
