//! The statistics that choose: what a programmer should do, decided with statistics rather than
//! point estimates, with the evidence, the confidence and the caveats. Probes build
//! them from their rows with the helpers here ([`sizes`], [`methods`]); the report
//! renders them and puts them in JSON (`recommendations`). Nothing here names a probe.
//!
//! The best is a set. An option is *tied* with the best when its 95% interval reaches
//! within [`MARGIN`] (5%) of the best's interval: a difference that small is within this
//! kind of machine's run-to-run drift and not worth a larger buffer or a less portable
//! method. The recommendation names the cheapest tied option (smallest size, simplest
//! method) whose median is within [`PICK_MARGIN`] (3%) of the best's. The gap between
//! the two margins, plus the intervals, is what keeps a rerun's tie set around this
//! run's choice: here back-to-back runs moved a size's share of the best by up to 3
//! points, so a choice made at the 5% line itself flipped (32 KiB at 95.8% in one run,
//! 93.0% in the next). A noisy point that ties only through its wide interval is listed
//! as tied but never chosen.

use super::model::*;
use crate::harness::stats::{Modes, bimodal};
use crate::results::Measurement;
use crate::units::{format_gbps, format_ns, format_size, sig3};

/// How close to the best (relative) an option's interval must reach to tie with it.
pub const MARGIN: f64 = 0.05;

/// How close to the best (relative) a tied option's median must be to be chosen.
pub const PICK_MARGIN: f64 = 0.03;

/// CI half-width (relative) above which a figure lowers the confidence to medium, and
/// above which to low.
const WIDE_CI: f64 = 0.05;
const VERY_WIDE_CI: f64 = 0.15;

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

/// A figure in its unit: "24.7 GB/s" or "145 ns".
pub fn figure(m: &Measurement, v: f64) -> String {
    if higher_is_better(m) {
        format!("{} GB/s", format_gbps(v))
    } else {
        format_ns(v)
    }
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
    let far = |i: usize| !close(options[i].m, options[best].m, PICK_MARGIN);
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
fn noise(m: &Measurement, floor: f64) -> f64 {
    let half = (m.ci95[1] - m.ci95[0]) / 2.0 / m.median;
    let modes = bimodal(&m.raw).map_or(0.0, |x| (x.high - x.low) / m.median);
    half.max(split_half_drift(&m.raw).unwrap_or(0.0))
        .max(modes)
        .max(floor)
}

/// Lowers `c` for what the samples of the choice and the best say: bimodal samples,
/// drift between the first and the second half of the rounds, and wide intervals.
fn sample_checks(c: &mut Confidence, rows: &[(&str, &Measurement)]) {
    let mut seen: Vec<&str> = Vec::new();
    for (what, m) in rows {
        if seen.contains(&m.case.as_str()) {
            continue;
        }
        seen.push(&m.case);
        if let Some(modes) = bimodal(&m.raw) {
            c.cap(
                Level::Low,
                format!(
                    "{what} {} has bimodal samples (regimes at {} and {}): its median depends on which one a run lands in",
                    m.case,
                    figure(m, modes.low),
                    figure(m, modes.high)
                ),
            );
        }
        if let Some(drift) = split_half_drift(&m.raw) {
            let say = |c: &mut Confidence, level| {
                c.cap(
                    level,
                    format!(
                        "{what} {} drifted {}% between the first and second half of its rounds: the machine changed under it",
                        m.case,
                        sig3(drift * 100.0)
                    ),
                )
            };
            if drift > VERY_WIDE_CI {
                say(c, Level::Low);
            } else if drift > WIDE_CI {
                say(c, Level::Medium);
            }
        }
        let half = (m.ci95[1] - m.ci95[0]) / 2.0 / m.median;
        if half > VERY_WIDE_CI {
            c.cap(
                Level::Low,
                format!("{what} {} has a CI of ±{}%", m.case, sig3(half * 100.0)),
            );
        } else if half > WIDE_CI {
            c.cap(
                Level::Medium,
                format!("{what} {} has a CI of ±{}%", m.case, sig3(half * 100.0)),
            );
        }
    }
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
fn finish(
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

/// The confidence a size sweep allows before the figures are looked at: too few sizes,
/// the best at an edge of the sweep, the smallest size already tied.
fn sweep_confidence(pts: &[(u64, &Measurement)], r: &Ranking) -> Confidence {
    let (pick_b, _) = pts[r.pick];
    let (best_b, _) = pts[r.best];
    let mut conf = Confidence::new();
    let n = pts.len();
    if n < 3 {
        conf.cap(
            Level::Low,
            format!(
                "only {n} size{} measured: a sweep needs three to bracket the best",
                if n == 1 { "" } else { "s" }
            ),
        );
    } else if r.best == n - 1 {
        conf.cap(
            Level::Low,
            format!(
                "the best is the largest size measured ({}): larger ones may be faster",
                format_size(best_b)
            ),
        );
    } else if r.best == 0 {
        conf.cap(
            Level::Low,
            format!(
                "the best is the smallest size measured ({}): smaller ones may be as fast",
                format_size(best_b)
            ),
        );
    }
    if r.pick == 0 && n >= 3 && r.best != 0 {
        conf.cap(
            Level::Medium,
            format!(
                "the smallest size measured ({}) already ties: smaller ones may too",
                format_size(pick_b)
            ),
        );
    }
    conf
}

/// The choice against the baseline size ("×3.34 against 4 KiB (…)"), or its figure
/// alone when it is the baseline.
fn size_effect((pick_b, pick): (u64, &Measurement), base: Option<(u64, &Measurement)>) -> String {
    match base {
        Some((bb, bm)) if bb != pick_b => format!(
            "×{} against {} ({} vs {})",
            sig3(gain(pick, bm)),
            format_size(bb),
            figure(pick, pick.median),
            figure(bm, bm.median)
        ),
        _ => format!(
            "{} at {}, the smallest size measured",
            figure(pick, pick.median),
            format_size(pick_b)
        ),
    }
}

/// A size sweep's recommendation: the smallest size tied with the best. Needs three
/// measured sizes to bracket the knee; with fewer, or with the best at either end of
/// the sweep, the confidence is low and says why. `baseline` is the size the effect is
/// quoted against (4 KiB, a common default); the smallest size measured when absent.
pub fn sizes(w: Words, points: &[(u64, &Measurement)], baseline: u64) -> Option<Recommendation> {
    let mut pts: Vec<(u64, &Measurement)> = points
        .iter()
        .copied()
        .filter(|(_, m)| m.is_ok() && m.median > 0.0)
        .collect();
    pts.sort_by_key(|p| p.0);
    let options: Vec<Opt> = pts.iter().map(|&(b, m)| Opt::new(m, b as f64)).collect();
    let r = rank(&options)?;
    let (pick_b, pick) = pts[r.pick];
    let best = pts[r.best].1;
    let tied: Vec<u64> = r.tied.iter().map(|&i| pts[i].0).collect();
    let n = pts.len();
    let fl = w.rerun_noise;
    let mut conf = sweep_confidence(&pts, &r);
    let mut rows = vec![row(pick, "choice")];
    if r.best != r.pick {
        rows.push(row(best, "best"));
    }
    if let Some(next) = size_borderlines(&mut conf, &pts, &r, fl) {
        rows.push(row(next, "next"));
    }
    let base = pts
        .iter()
        .find(|p| p.0 == baseline)
        .or(pts.first())
        .copied();
    let effect = size_effect((pick_b, pick), base);
    if let Some((_, bm)) = base
        && !rows.iter().any(|r| r.case == bm.case)
    {
        rows.push(row(bm, "baseline"));
    }
    let range = [tied[0], tied[tied.len() - 1]];
    let support = format!(
        "{n} sizes bracket the best; the choice's interval clears the smaller sizes'; no wide or bimodal figures"
    );
    let action = format!("use {} {}", format_size(pick_b), w.noun);
    let choice = Choice::Size {
        bytes: pick_b,
        label: format_size(pick_b),
        tied,
        range,
    };
    Some(finish(w, action, choice, effect, rows, conf, support))
}

/// Lowers `c` where a rerun may pick another size of the sweep `pts` (ranked as `r`,
/// rows' rerun floor `fl`): the next smaller size nearly chosen, a larger tied size
/// nearly better, the samples of the choice and the best, or a plateau read through
/// wide figures. Returns the next smaller
/// size's row, which the evidence cites.
fn size_borderlines<'a>(
    conf: &mut Confidence,
    pts: &[(u64, &'a Measurement)],
    r: &Ranking,
    fl: f64,
) -> Option<&'a Measurement> {
    let pick = pts[r.pick].1;
    let best = pts[r.best].1;
    // Borderline: the next smaller size nearly chosen, or the choice nearly not. Low:
    // twin runs here changed such picks in 8 of 11 cases (a flat plateau, where which
    // size is the smallest within 3% of the best is the noise's choice).
    let line = 1.0 - PICK_MARGIN;
    if r.pick > 0 {
        let (next_b, next) = pts[r.pick - 1];
        let reach = gain(next, best) * (1.0 + noise(next, fl).hypot(noise(best, fl)));
        if close(next, best, MARGIN) || reach >= line {
            conf.cap(
                Level::Low,
                format!(
                    "borderline: {} runs at {}% of the best, within 5% or within its noise of the {}% line: a rerun may choose it",
                    format_size(next_b),
                    sig3(gain(next, best) * 100.0),
                    sig3(line * 100.0)
                ),
            );
        }
    }
    // The choice stays only while no larger tied size runs 3% faster than it: within
    // the two rows' noise (combined as independent errors), a rerun may see one that
    // does and choose a larger size.
    let rival = r
        .tied
        .iter()
        .filter(|&&i| i > r.pick)
        .map(|&i| pts[i].1)
        .find(|&t| gain(pick, t) * (1.0 - noise(pick, fl).hypot(noise(t, fl))) < line);
    if let Some(t) = rival {
        conf.cap(
            Level::Low,
            format!(
                "borderline: the choice runs at {}% of {}, and their noise reaches the {}% line: a rerun may choose a larger size",
                sig3(gain(pick, t) * 100.0),
                t.case,
                sig3(line * 100.0)
            ),
        );
    }
    sample_checks(conf, &[("the choice", pick), ("the best", best)]);
    // A plateau read through wide figures: which of its sizes is the smallest within 3%
    // of the best is the noise's choice (twin runs here moved such medium picks between
    // 256 KiB and 1 MiB read buffers at ±5–7%).
    let widest = [pick, best]
        .iter()
        .map(|m| noise(m, 0.0))
        .fold(0.0, f64::max);
    if r.tied.len() > 1 && widest > WIDE_CI {
        conf.cap(
            Level::Low,
            format!(
                "{} sizes tie with the best and the figures are ±{}% wide: a rerun may choose another of them",
                r.tied.len(),
                sig3(widest * 100.0)
            ),
        );
    }
    (r.pick > 0).then(|| pts[r.pick - 1].1)
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

/// Lowers `c` where a rerun's noise could change a method choice: to medium when it is
/// alone in its tie set with a lead over the next option under twice their noise; to
/// low when tied with an option doing the same work that the noise could put 3% ahead
/// of it, or, cheaper, within 3% of the best.
fn method_borderline(
    c: &mut Confidence,
    (opts, fl): (&[Opt], f64),
    r: &Ranking,
    out: Option<usize>,
    name: &dyn Fn(usize) -> String,
) {
    let pick = opts[r.pick];
    if let Some(i) = out.filter(|_| r.tied.len() == 1) {
        let (g, n) = (
            gain(pick.m, opts[i].m),
            noise(pick.m, fl) + noise(opts[i].m, fl),
        );
        if g - 1.0 <= 2.0 * n {
            c.cap(
                Level::Medium,
                format!(
                    "borderline: the choice leads {} by ×{}, within twice their noise (±{}% together): a rerun may choose it",
                    name(i),
                    sig3(g),
                    sig3(n * 100.0)
                ),
            );
        }
    }
    let line = 1.0 - PICK_MARGIN;
    // Same work: the pick rests on the medians and the cost. It changes when the noise
    // puts a tied option 3% ahead of it, or a cheaper one within 3% of the best.
    let best = opts[r.best].m;
    let rival = r.tied.iter().copied().find(|&i| {
        let (t, both) = (opts[i], noise(pick.m, fl).hypot(noise(opts[i].m, fl)));
        i != r.pick
            && t.work.cmp(&pick.work).is_eq()
            && (gain(pick.m, t.m) * (1.0 - both) < line
                || (t.cost < pick.cost && gain(t.m, best) * (1.0 + both) >= line))
    });
    // Low: which of two equivalent options a run names is the noise's choice (twin
    // runs here swapped copy-file-range and sendfile 4 times in 9).
    if let Some(i) = rival {
        c.cap(
            Level::Low,
            format!(
                "borderline: tied with {}, which does the same work, and their noise reaches the {}% line: a rerun may choose it",
                name(i),
                sig3(line * 100.0)
            ),
        );
    }
}

/// A choice among named options (methods, capacities): the cheapest tied with the best.
/// `baseline` names the option the effect is quoted against, if measured.
pub fn methods(
    w: Words,
    options: &[(String, Opt)],
    baseline: Option<&str>,
) -> Option<Recommendation> {
    let opts: Vec<Opt> = options.iter().map(|o| o.1).collect();
    let r = rank(&opts)?;
    let name = |i: usize| options[i].0.clone();
    let (pick, best) = (opts[r.pick].m, opts[r.best].m);
    let measured = opts.iter().filter(|o| o.m.is_ok()).count();
    let mut conf = Confidence::new();
    if measured < 2 {
        conf.cap(
            Level::Low,
            "only one option measured: nothing to choose between".into(),
        );
    }
    let out = best_ruled_out(&opts, &r);
    let mut rows = method_rows(&opts, &r, out);
    // A choice alone in its tie set whose lead over the next option is more than twice
    // both rows' noise cannot flip on a rerun however imprecise its figure: the
    // checks of a figure's precision do not apply to it.
    if r.pick != r.best && opts[r.pick].work.surely_less(&opts[r.best].work) && !ties(pick, best) {
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
    let fl = w.rerun_noise;
    let lead = out
        .map(|i| {
            (
                gain(pick, opts[i].m),
                noise(pick, fl) + noise(opts[i].m, fl),
            )
        })
        .filter(|&(g, n)| r.tied.len() == 1 && g - 1.0 > 2.0 * n);
    match lead {
        Some((g, n)) if measured >= 2 => conf.reasons.push(format!(
            "the choice leads the next option by ×{}, more than twice their noise (±{}% together)",
            sig3(g),
            sig3(n * 100.0)
        )),
        _ => {
            sample_checks(&mut conf, &[("the choice", pick), ("the best", best)]);
            method_borderline(&mut conf, (&opts, fl), &r, out, &name);
        }
    }
    let tied: Vec<String> = r
        .tied
        .iter()
        .filter(|&&i| i != r.pick)
        .map(|&i| name(i))
        .collect();
    let base = baseline.and_then(|b| options.iter().position(|o| o.0 == b && o.1.m.is_ok()));
    let effect = method_effect(&opts, &r, (base, out), &mut rows, &name);
    let support = format!(
        "{measured} options measured; intervals separate the tie set from the rest; no wide or bimodal figures"
    );
    let action = format!("use {}", name(r.pick));
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
                figure(pick, pick.median),
                figure(bm, bm.median)
            )
        }
        _ => match out {
            Some(i) => format!(
                "{}; the fastest option not tied, {}, is ×{} slower",
                figure(pick, pick.median),
                name(i),
                sig3(gain(pick, opts[i].m))
            ),
            None => figure(pick, pick.median),
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

    fn words() -> Words<'static> {
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

    /// The read sweep measured here (GB/s), 1 KiB … 8 MiB.
    fn read_curve(scale: &[f64]) -> Vec<(u64, Measurement)> {
        let gbs = [
            5.8, 9.0, 14.6, 18.9, 22.2, 23.3, 24.7, 24.6, 24.8, 25.1, 21.0, 14.6, 14.4, 14.5,
        ];
        gbs.iter()
            .enumerate()
            .map(|(i, g)| {
                let f = scale.get(i).copied().unwrap_or(1.0);
                (
                    1024u64 << i,
                    m(&format!("{}", 1024u64 << i), g * f * 1e9, 0.006),
                )
            })
            .collect()
    }

    fn pick(curve: &[(u64, Measurement)]) -> (u64, Vec<u64>, Level) {
        let pts: Vec<(u64, &Measurement)> = curve.iter().map(|(b, m)| (*b, m)).collect();
        let r = sizes(words(), &pts, 4096).unwrap();
        match r.choice {
            Choice::Size { bytes, tied, .. } => (bytes, tied, r.confidence.level),
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_smallest_size_tied_with_the_best_is_chosen() {
        let (b, tied, level) = pick(&read_curve(&[]));
        assert_eq!(b, 64 << 10);
        assert_eq!(tied.first(), Some(&(64 << 10)));
        assert_eq!(tied.last(), Some(&(512 << 10)));
        // 64 KiB runs at 98.4% of 512 KiB: a rerun's 2% on each may put it below the
        // 97% line, so the choice is low (twin runs here flipped such picks).
        assert_eq!(level, Level::Low);
        // A clear knee, the best well ahead of the smaller sizes: high.
        let (b, _, level) = pick(&read_curve(&[
            1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.02, 1.0, 0.97, 0.95, 1.0, 1.0, 1.0, 1.0,
        ]));
        assert_eq!((b, level), (64 << 10, Level::High));
    }

    #[test]
    fn a_drifting_rerun_chooses_inside_the_first_runs_tie_set() {
        // The second run measured here: every small size 2–4% lower.
        let (b1, tied1, _) = pick(&read_curve(&[]));
        let (b2, tied2, _) = pick(&read_curve(&[
            0.95, 0.95, 0.96, 0.975, 0.97, 0.956, 0.956, 0.99, 0.98, 0.98,
        ]));
        assert!(
            tied1.contains(&b2) && tied2.contains(&b1),
            "{b1} {tied1:?} / {b2} {tied2:?}"
        );
    }

    #[test]
    fn the_flip_seen_here_between_two_runs_no_longer_happens() {
        // read populated by readahead, 16 KiB … 512 KiB, two back-to-back runs (GB/s:
        // median, CI). With one 5% line for both ties and choice, run 1 chose 32 KiB
        // (95.8% of the best) and run 2 left it out of its ties (93.0%).
        let run = |v: &[(f64, f64, f64)]| -> Vec<(u64, Measurement)> {
            v.iter()
                .enumerate()
                .map(|(i, &(med, lo, hi))| {
                    let mut x = m("r", med * 1e9, 0.0);
                    x.ci95 = [lo * 1e9, hi * 1e9];
                    x.raw = vec![med * 1e9; 12];
                    (16384u64 << i, x)
                })
                .collect()
        };
        let one = run(&[
            (20.14, 20.04, 20.25),
            (21.02, 20.76, 21.12),
            (21.6, 21.47, 21.78),
            (21.75, 21.47, 21.85),
            (21.85, 21.72, 21.89),
            (21.94, 21.73, 22.14),
        ]);
        let two = run(&[
            (19.67, 19.59, 19.72),
            (20.37, 20.18, 20.51),
            (21.06, 20.8, 21.2),
            (21.0, 20.79, 21.12),
            (21.54, 21.2, 21.61),
            (21.9, 21.66, 22.03),
        ]);
        let (b1, t1, _) = pick(&one);
        let (b2, t2, _) = pick(&two);
        assert!(
            t2.contains(&b1) && t1.contains(&b2),
            "{b1} {t1:?} / {b2} {t2:?}"
        );
    }

    #[test]
    fn one_size_or_the_best_at_the_edge_is_low_confidence() {
        let one = [(1u64 << 20, m("1MiB", 3.3e9, 0.01))];
        let pts: Vec<(u64, &Measurement)> = one.iter().map(|(b, m)| (*b, m)).collect();
        let r = sizes(words(), &pts, 4096).unwrap();
        assert_eq!(r.confidence.level, Level::Low);
        assert!(
            r.confidence.reasons[0].contains("only 1 size"),
            "{:?}",
            r.confidence
        );
        let rising = [
            (4096u64, m("4K", 4.7e9, 0.01)),
            (65536, m("64K", 7.0e9, 0.01)),
            (1 << 20, m("1M", 9.5e9, 0.01)),
        ];
        let pts: Vec<(u64, &Measurement)> = rising.iter().map(|(b, m)| (*b, m)).collect();
        let r = sizes(words(), &pts, 4096).unwrap();
        assert_eq!(r.confidence.level, Level::Low);
        assert!(
            r.confidence
                .reasons
                .iter()
                .any(|x| x.contains("largest size measured"))
        );
    }

    #[test]
    fn a_noisy_point_ties_but_is_not_chosen() {
        // pipe --quick's case: 4 KiB at 6 GB/s with a CI of 3.2–9.1 against 9.5 GB/s.
        let pts_owned = [
            (4096u64, m("4K", 6.0e9, 0.5)),
            (65536, m("64K", 9.3e9, 0.01)),
            (1 << 20, m("1M", 9.5e9, 0.01)),
            (4 << 20, m("4M", 9.0e9, 0.01)),
        ];
        let pts: Vec<(u64, &Measurement)> = pts_owned.iter().map(|(b, m)| (*b, m)).collect();
        let r = sizes(words(), &pts, 4096).unwrap();
        match &r.choice {
            Choice::Size { bytes, tied, .. } => {
                assert_eq!(*bytes, 65536);
                assert!(tied.contains(&4096), "its interval reaches the best");
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn methods_pick_the_cheapest_tied_and_name_the_others() {
        let (a, b, c) = (
            m("copy-file-range", 4.25e9, 0.02),
            m("sendfile", 4.24e9, 0.02),
            m("read-write", 3.3e9, 0.01),
        );
        let opts = vec![
            ("copy-file-range".to_string(), Opt::new(&a, 0.3)),
            ("sendfile".to_string(), Opt::new(&b, 0.2)),
            ("read-write".to_string(), Opt::new(&c, 0.5)),
        ];
        // Whole passes (file copies): a rerun may move each by 5%.
        let w = Words {
            rerun_noise: RERUN_NOISE_PASS,
            ..words()
        };
        let r = methods(w, &opts, Some("read-write")).unwrap();
        assert_eq!(
            r.choice,
            Choice::Method {
                name: "sendfile".into(),
                tied: vec!["copy-file-range".into()]
            }
        );
        assert!(
            r.effect.starts_with("×1.28 against read-write"),
            "{}",
            r.effect
        );
        // Tied and doing the same work: the pick rests on the cost, and a rerun's 5%
        // may put copy-file-range 3% ahead.
        assert!(r.line().contains("[confidence low]"), "{}", r.line());
        assert!(
            r.confidence
                .reasons
                .iter()
                .any(|x| x.starts_with("borderline: tied with copy-file-range")),
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
            assert_eq!(r.action, "use pwrite", "{order:?}");
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
