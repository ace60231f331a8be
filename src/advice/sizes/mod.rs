//! A size answer (a buffer, a block, a chunk): the question a programmer asks is "from
//! which size on does it stop mattering, and what does going smaller cost?", as GNU
//! coreutils' `ioblksize.h` answers it ("the minimum blksize to best minimize system
//! call overhead"), here on the user's own machine with its uncertainty stated.
//!
//! - The *plateau*: the measured sizes around the fastest whose medians are all within
//!   the tolerance of its median: [`PLATEAU`] (5%), or the rows' rerun floor where that
//!   is wider ([`tolerance`]). A size measured worse than that is never in it. Where
//!   most sizes are steady (their noise within the tolerance), the fastest steady one
//!   draws the line: a faster size noisier than that is in the plateau, and said to be.
//! - The *knee*, the size to use: where a fit of one call's time t(b) = fixed +
//!   per_byte × b over the sizes up to the fastest puts the fixed cost at 5% of a call,
//!   kept inside the plateau; the plateau's smallest size (coreutils' rule) where the
//!   fit does not describe the sweep there ([`by_fit`]).
//! - The *confidence* is about the statement "use the knee or larger; the plateau's
//!   sizes are all within 5% of the best": the share of simulated reruns, each moving
//!   every size within its noise, whose knee stays inside the stated plateau.

mod edge;

use super::confidence::{RERUNS, noise, repeat_confidence, reruns};
use super::decide::{Opt, Words, finish, gain, higher_is_better, rank, row};
use super::model::*;
use crate::results::Measurement;
use crate::units::{format_ns, format_size, sig3};
#[cfg(test)]
use edge::flattened;
use edge::{Settled, edge_settled, sweep_confidence};

/// How far from the best median a size of the plateau may be (relative): within this,
/// a larger size buys at most a few percent, the size of this machine's run-to-run
/// drift on memory-bound rows.
pub const PLATEAU: f64 = 0.05;

/// A plateau's tolerance for rows whose rerun floor is `floor`
/// ([`super::RERUN_NOISE_MEMORY`] and the others): [`PLATEAU`], or the floor where that is
/// wider. Sizes within a rerun's move of the best cannot be told from it here: a
/// plateau drawn tighter than that is redrawn by the next run (a TCP stream's chunks
/// over 64 KiB, a durable write's blocks), and its knee with it.
pub fn tolerance(floor: f64) -> f64 {
    PLATEAU.max(floor)
}

/// A size sweep's answer.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Knee {
    /// Index of the fastest size and of the chosen one.
    best: usize,
    pick: usize,
    /// The plateau: indices `from..=to`; the stated plateau starts at `low` (≤ `from`:
    /// sizes below the line within their noise, [`open_edges`]).
    from: usize,
    to: usize,
    low: usize,
    /// Seconds of fixed cost per call and seconds per byte, when the figures fit one.
    fit: Option<(f64, f64)>,
    /// The plateau's tolerance ([`tolerance`]).
    within: f64,
}

impl Knee {
    /// The fit's fixed cost as a share of a call of `b` bytes, where the fit describes
    /// the sweep at the knee (a share of at most twice [`PLATEAU`] there; over that the
    /// curve rises in a step, not as a fixed cost spread over more bytes).
    fn fixed_share(&self, pts: &[(u64, &Measurement)]) -> Option<impl Fn(u64) -> f64> {
        let (fixed, per_byte) = self.fit?;
        let share = move |b: u64| fixed / (fixed + per_byte * b as f64);
        (share(pts[self.pick].0) <= 2.0 * PLATEAU).then_some(share)
    }

    /// How far below the best size `i` is measured (0.0746: 7.46%).
    fn below_best(&self, pts: &[(u64, &Measurement)], i: usize) -> f64 {
        1.0 - 1.0 / gain(pts[self.best].1, pts[i].1)
    }
}

/// Seconds one call takes at size `b` whose figure is `v` (bytes/s, or ns per call).
fn call_seconds(b: u64, v: f64, higher: bool) -> f64 {
    if higher { b as f64 / v } else { v * 1e-9 }
}

/// Weighted least squares of t(b) = fixed + per_byte × b with relative errors over
/// `pts[..=best]`: (fixed, per_byte), or None when they do not fit (no cost per byte).
fn fit(pts: &[(u64, f64)], best: usize, higher: bool) -> Option<(f64, f64)> {
    let mut sum = [0.0f64; 5];
    for &(b, v) in &pts[..=best] {
        let (x, y) = (b as f64, call_seconds(b, v, higher));
        let w = 1.0 / (y * y);
        for (acc, add) in sum.iter_mut().zip([w, w * x, w * y, w * x * x, w * x * y]) {
            *acc += add;
        }
    }
    let [w, sx, sy, sxx, sxy] = sum;
    let per_byte = (w * sxy - sx * sy) / (w * sxx - sx * sx);
    let fixed = (sy - per_byte * sx) / w;
    (best > 0 && per_byte.is_finite() && per_byte > 0.0 && fixed.is_finite())
        .then_some((fixed.max(0.0), per_byte))
}

/// The answer for the sizes `pts` (ascending, with their figures), the plateau drawn
/// `within` of the best: the best of the `steady` sizes (those whose noise is within
/// the tolerance, see [`steady`]), or of all when none is. A size measured faster than
/// it but noisier than the tolerance is in the plateau, not its reference.
fn knee(pts: &[(u64, f64)], steady: &[bool], higher: bool, within: f64) -> Knee {
    let better = |a: f64, b: f64| if higher { a > b } else { a < b };
    let candidates: Vec<usize> = match (0..pts.len()).filter(|&i| steady[i]).collect::<Vec<_>>() {
        most if 2 * most.len() >= pts.len() && !most.is_empty() => most,
        _ => (0..pts.len()).collect(),
    };
    let best = candidates
        .into_iter()
        .reduce(|b, i| if better(pts[i].1, pts[b].1) { i } else { b })
        .unwrap_or(0);
    let inside = |i: usize| {
        if higher {
            pts[i].1 >= pts[best].1 * (1.0 - within)
        } else {
            pts[i].1 <= pts[best].1 * (1.0 + within)
        }
    };
    let from = (0..=best)
        .rev()
        .take_while(|&i| inside(i))
        .last()
        .unwrap_or(best);
    let to = (best..pts.len())
        .take_while(|&i| inside(i))
        .last()
        .unwrap_or(best);
    let fit = fit(pts, best, higher);
    Knee {
        best,
        pick: by_fit(pts, fit, (from, to, best)),
        from,
        to,
        low: from,
        fit,
        within,
    }
}

/// The knee inside the plateau `from..=to`: the smallest size where the fitted fixed
/// cost is at most [`PLATEAU`] of a call's time, kept inside the plateau; the plateau's
/// smallest size where the fit does not describe it there (a fixed cost of over twice
/// that share at a size measured within the plateau: the curve rises in a step). Replayed
/// on 10 twin pairs of `ioprobe run` here (docs/method.md), the twin's knee stayed
/// inside the first's plateau in 96% of topics idle and 78% loaded with this rule, 94%
/// and 74% with the plateau's smallest size alone.
fn by_fit(
    pts: &[(u64, f64)],
    fit: Option<(f64, f64)>,
    (from, to, best): (usize, usize, usize),
) -> usize {
    let Some((fixed, per_byte)) = fit.filter(|f| f.0 > 0.0) else {
        return from;
    };
    let share = |b: u64| fixed / (fixed + per_byte * b as f64);
    if share(pts[from].0) > 2.0 * PLATEAU {
        return from;
    }
    let at = fixed / per_byte * (1.0 - PLATEAU) / PLATEAU;
    (0..=best)
        .find(|&i| pts[i].0 as f64 >= at)
        .unwrap_or(best)
        .clamp(from, to)
}

/// Which sizes may be a plateau's reference: those whose noise (rerun floor `floor`)
/// is within the tolerance `within`; every size, where one that is not is surely
/// better than each that is (its median moved back by its whole noise still ahead): a
/// unix stream's 256 KiB–4 MiB rows drew 5.9–7.9 GB/s, too noisy to be references,
/// and "use 64 KiB chunks or larger" (6.4 GB/s, the best steady row) stood on a
/// plateau 18% below them.
fn steady(pts: &[(u64, &Measurement)], floor: f64, within: f64) -> Vec<bool> {
    let noises: Vec<f64> = pts.iter().map(|(_, m)| noise(m, floor)).collect();
    let flags: Vec<bool> = noises.iter().map(|&n| n <= within).collect();
    let Some(first) = pts.first() else {
        return flags;
    };
    let higher = higher_is_better(first.1);
    let ahead = |a: f64, b: f64| if higher { a > b } else { a < b };
    let best_steady = pts
        .iter()
        .zip(&flags)
        .filter(|(_, s)| **s)
        .map(|(p, _)| p.1.median)
        .reduce(|b, x| if ahead(x, b) { x } else { b });
    let surely_ahead = |(p, n): (&(u64, &Measurement), &f64)| {
        let moved = if higher {
            p.1.median * (1.0 - n)
        } else {
            p.1.median * (1.0 + n)
        };
        best_steady.is_some_and(|b| ahead(moved, b))
    };
    if pts.iter().zip(&noises).any(surely_ahead) {
        vec![true; pts.len()]
    } else {
        flags
    }
}

/// The plateau's edges: past the sizes within the tolerance of the best, on each side,
/// those a rerun moving each within its noise (rerun floor `floor`) could put within it
/// too. A plateau closes only at a size surely outside it: of 41 size answers that the
/// twin run contradicted in 24 loaded `run`s, 13 had closed their plateau below the
/// largest size ("use 64 KiB buffers", its twin "1 MiB"), 26 had the twin's knee below
/// its start ("use 256 KiB", the twin 64 KiB); replayed, loaded twins agreed in 86.7%
/// of answers instead of 73.8% (docs/method.md). The knee stays at or above where the
/// plateau surely starts (`from`); the stated plateau starts at `low`.
fn open_edges(pts: &[(u64, &Measurement)], k: &mut Knee, floor: f64) {
    let best = pts[k.best].1;
    let higher = higher_is_better(best);
    let line = if higher {
        best.median * (1.0 - k.within)
    } else {
        best.median * (1.0 + k.within)
    };
    let could = |m: &Measurement| {
        let n = noise(m, floor);
        if higher {
            m.median * (1.0 + n) >= line
        } else {
            m.median * (1.0 - n) <= line
        }
    };
    while k.to + 1 < pts.len() && could(pts[k.to + 1].1) {
        k.to += 1;
    }
    while k.low > 0 && could(pts[k.low - 1].1) {
        k.low -= 1;
    }
}

/// The indices of the stated plateau's sizes measured outside the tolerance of the
/// best ([`open_edges`]).
fn by_noise(pts: &[(u64, &Measurement)], k: &Knee) -> Vec<usize> {
    (k.low..=k.to)
        .filter(|&i| k.below_best(pts, i) > k.within)
        .collect()
}

/// The sizes of the plateau measured outside the tolerance of the best, in it within
/// their noise ([`open_edges`]): "; 4 MiB in it by its noise alone (9.20% below the
/// best, ±12.0%)".
fn within_noise(pts: &[(u64, &Measurement)], k: &Knee, floor: f64) -> String {
    let outside: Vec<String> = by_noise(pts, k)
        .into_iter()
        .map(|i| {
            format!(
                "{} in it by its noise alone ({}% below the best, ±{}%)",
                format_size(pts[i].0),
                sig3(k.below_best(pts, i) * 100.0),
                sig3(noise(pts[i].1, floor) * 100.0)
            )
        })
        .collect();
    if outside.is_empty() {
        String::new()
    } else {
        format!("; {}", outside.join(", "))
    }
}

/// The effect: the plateau and what the baseline size costs against the knee ("64
/// KiB–1 MiB within 5% of the best, 4 KiB costs ×3.20": what the summary shows, short
/// enough for its cell), then the two figures, whether the plateau reaches the largest
/// size measured, and what the fit found.
fn effect(
    pts: &[(u64, &Measurement)],
    (k, floor): (&Knee, f64),
    base: Option<(u64, &Measurement)>,
) -> String {
    let (pick_b, pick) = pts[k.pick];
    let mut out = format!(
        "{}{} within {}% of the best",
        stated(pts, k),
        if k.low == k.to { " alone" } else { "" },
        (k.within * 100.0).round()
    );
    // The sizes in it by their noise alone, named where the summary cuts the effect.
    let edges: Vec<String> = by_noise(pts, k)
        .into_iter()
        .map(|i| format_size(pts[i].0))
        .collect();
    match edges.as_slice() {
        [] => {}
        [one] => out.push_str(&format!(" ({one} by its noise alone)")),
        more => out.push_str(&format!(" ({} by their noise alone)", more.join(", "))),
    }
    // The knee above the plateau's start: why the answer does not start there.
    if k.pick != k.from {
        out.push_str(&format!(
            " (from {} a call's fixed cost is under {}% of its time)",
            format_size(pick_b),
            (PLATEAU * 100.0).round()
        ));
    }
    match base {
        Some((bb, bm)) if bb != pick_b => out.push_str(&format!(
            ", {} costs ×{}; {} at {} against {} at {}",
            format_size(bb),
            sig3(gain(pick, bm)),
            bm.unit.figure(bm.median),
            format_size(bb),
            pick.unit.figure(pick.median),
            format_size(pick_b)
        )),
        _ => out.push_str(&format!(
            "; {} at {}",
            pick.unit.figure(pick.median),
            format_size(pick_b)
        )),
    }
    if k.to == pts.len() - 1 {
        out.push_str("; the plateau reaches the largest size measured");
        match (edge_settled(pts, k), pts) {
            (Some(Settled::Step(g)), [.., (before, _), _]) => {
                let sign = if g >= 1.0 { '+' } else { '−' };
                out.push_str(&format!(
                    ", where the curve has flattened ({sign}{}% over {})",
                    sig3((g - 1.0).abs() * 100.0),
                    format_size(*before)
                ));
            }
            (Some(Settled::Fit(share)), [.., (top, _)]) => out.push_str(&format!(
                ", where a call's fixed cost is {}% of a {} call's time: no larger size can gain more",
                sig3(share * 100.0),
                format_size(*top)
            )),
            _ => {}
        }
    }
    if let Some(fit) = fit_effect(pts, k) {
        out.push_str("; ");
        out.push_str(&fit);
    }
    out.push_str(&within_noise(pts, k, floor));
    out.push_str(&noisy_faster(pts, k, floor));
    out
}

/// "; 4 MiB measured faster (3.07 GB/s) but too noisy to draw the line from (±23%)":
/// the fastest size the plateau's reference passed over ([`knee`]), if any.
fn noisy_faster(pts: &[(u64, &Measurement)], k: &Knee, floor: f64) -> String {
    let best = pts[k.best].1;
    let faster = (0..pts.len())
        .filter(|&i| gain(pts[i].1, best) > 1.0)
        .max_by(|&a, &b| gain(pts[a].1, pts[b].1).total_cmp(&1.0));
    faster.map_or(String::new(), |i| {
        let (b, m) = pts[i];
        format!(
            "; {} measured faster ({}) but too noisy to draw the line from (±{}%)",
            format_size(b),
            m.unit.figure(m.median),
            sig3(noise(m, floor) * 100.0)
        )
    })
}

/// The plateau in words: "64 KiB", or "64 KiB–1 MiB".
fn stated(pts: &[(u64, &Measurement)], k: &Knee) -> String {
    if k.low == k.to {
        format_size(pts[k.low].0)
    } else {
        format!("{}–{}", format_size(pts[k.low].0), format_size(pts[k.to].0))
    }
}

/// The sizes of `points` measured (ok, above zero), smallest first.
fn measured<'a>(points: &[(u64, &'a Measurement)]) -> Vec<(u64, &'a Measurement)> {
    let mut pts: Vec<(u64, &Measurement)> = points
        .iter()
        .copied()
        .filter(|(_, m)| m.is_ok() && m.median > 0.0)
        .collect();
    pts.sort_by_key(|p| p.0);
    pts
}

/// A sweep's knee and plateau alone, without the confidence (a plot's marks, the chunk
/// pipe capacities are compared at), for rows whose rerun floor is `floor`: None when no
/// size was measured. The plateau of the sizes measured within the tolerance: the
/// answer states its edges wider by the sizes within it by their noise ([`open_edges`]).
pub fn knee_and_plateau(points: &[(u64, &Measurement)], floor: f64) -> Option<(u64, Plateau)> {
    let rows = measured(points);
    let pts: Vec<(u64, f64)> = rows.iter().map(|&(b, m)| (b, m.median)).collect();
    let higher = higher_is_better(points.iter().find(|(_, m)| m.is_ok())?.1);
    let within = tolerance(floor);
    let k = knee(&pts, &steady(&rows, floor, within), higher, within);
    let plateau = Plateau {
        from: pts[k.from].0,
        to: pts[k.to].0,
        within: k.within,
        open_ended: k.to == pts.len() - 1,
    };
    Some((pts[k.pick].0, plateau))
}

/// What the fit says, for the effect: "a call's fixed cost is about 2.1 µs: 4% of a
/// 256 KiB call, 15% of a 64 KiB one". Not said where the fit does not describe the
/// sweep at the knee (a fixed cost of over twice the plateau's tolerance there: the
/// curve rises in a step, not as a fixed cost spread over more bytes).
fn fit_effect(pts: &[(u64, &Measurement)], k: &Knee) -> Option<String> {
    let fixed = k.fit.filter(|f| f.0 > 0.0)?.0;
    let share = k.fixed_share(pts)?;
    let (pick_b, _) = pts[k.pick];
    let below = k
        .pick
        .checked_sub(1)
        .map(|i| {
            format!(
                ", {}% of a {} one",
                sig3(share(pts[i].0) * 100.0),
                format_size(pts[i].0)
            )
        })
        .unwrap_or_default();
    Some(format!(
        "a call's fixed cost is about {}: {}% of a {} call{below}",
        format_ns(fixed * 1e9),
        sig3(share(pick_b) * 100.0),
        format_size(pick_b)
    ))
}

/// A size sweep's recommendation: the knee and its plateau ([`knee`]). Needs three
/// measured sizes to bracket the best; with fewer, or with the best at the end of the
/// sweep, the confidence is lower and says why. `points` may hold `unsupported` rows
/// (they say where sizes end); `baseline` is the size the effect is quoted against (4
/// KiB, a common default); the smallest size measured when absent.
pub fn sizes(w: Words, points: &[(u64, &Measurement)], baseline: u64) -> Option<Recommendation> {
    let pts = measured(points);
    // Rows given as unsupported past the largest measured size: nothing larger exists.
    let last = pts.last().is_some_and(|&(top, _)| {
        points
            .iter()
            .any(|(b, m)| *b > top && m.status == crate::results::Status::Unsupported)
    });
    let options: Vec<Opt> = pts.iter().map(|&(b, m)| Opt::new(m, b as f64)).collect();
    let r = rank(&options)?;
    let higher = higher_is_better(pts[0].1);
    let figures: Vec<(u64, f64)> = pts.iter().map(|&(b, m)| (b, m.median)).collect();
    let within = tolerance(w.rerun_noise);
    let mut k = knee(
        &figures,
        &steady(&pts, w.rerun_noise, within),
        higher,
        within,
    );
    open_edges(&pts, &mut k, w.rerun_noise);
    let pick_b = pts[k.pick].0;
    let mut conf = sweep_confidence(&pts, &k, last);
    let repeat = plateau_confidence(&mut conf, &pts, &k, w.rerun_noise, higher);
    let (rows, base) = sweep_rows(&pts, &k, baseline);
    let plateau = Plateau {
        from: pts[k.low].0,
        to: pts[k.to].0,
        within: k.within,
        open_ended: k.to == pts.len() - 1 && !last,
    };
    let support = format!(
        "{} sizes bracket the best; a rerun moving each size within its noise keeps the knee ({}) inside the plateau in {}% of {RERUNS} simulated reruns",
        pts.len(),
        format_size(pick_b),
        sig3(repeat * 100.0)
    );
    let action = if k.to == pts.len() - 1 {
        format!("use {} {} or larger", format_size(pick_b), w.noun)
    } else if k.pick == k.to {
        format!("use {} {}", format_size(pick_b), w.noun)
    } else {
        format!(
            "use {} {} (up to {})",
            format_size(pick_b),
            w.noun,
            format_size(pts[k.to].0)
        )
    };
    let tied: Vec<u64> = r.tied.iter().map(|&i| pts[i].0).collect();
    let choice = Choice::Size {
        bytes: pick_b,
        label: format_size(pick_b),
        range: [tied[0], tied[tied.len() - 1]],
        tied,
    };
    let effect = effect(&pts, (&k, w.rerun_noise), base);
    let mut rec = finish(w, action, choice, effect, rows, conf, support);
    rec.plateau = Some(plateau);
    Some(rec)
}

/// A size answer's evidence: the choice, the best if another, the next size below the
/// knee, the size past a plateau that closes below the largest, the sizes measured
/// faster than the best but too noisy to draw the line from, and the baseline (the
/// size `baseline`, else the smallest), which it returns too.
fn sweep_rows<'a>(
    pts: &[(u64, &'a Measurement)],
    k: &Knee,
    baseline: u64,
) -> (Vec<Row>, Option<(u64, &'a Measurement)>) {
    let mut rows = vec![row(pts[k.pick].1, "choice")];
    if k.best != k.pick {
        rows.push(row(pts[k.best].1, "best"));
    }
    if k.pick > 0 {
        rows.push(row(pts[k.pick - 1].1, "next"));
    }
    // A plateau that closes below the largest size rests on the size past it too: a
    // run measured 256 KiB reads 8% below 64 KiB in one draw of its file ("use 64 KiB
    // buffers"), and its twin, 256 KiB at 27.3 GB/s against 64 KiB's 24.3, answered
    // "use 256 KiB buffers (up to 1 MiB)".
    if let Some(&(_, past)) = pts.get(k.to + 1) {
        rows.push(row(past, "past"));
    }
    // Sizes measured faster than the best but too noisy to draw the line from move the
    // simulated reruns most: TCP sendfile's "use 256 KiB chunks or larger" stalled at
    // 71–78% after 4–6 visits of 9–10 s, each drawing its 4 KiB, 64 KiB and 256 KiB
    // rows again (7 draws, within 5%), while its 1 MiB and 4 MiB rows (±29–72%) kept
    // one or two.
    for &(_, m) in pts {
        if gain(m, pts[k.best].1) > 1.0 && !rows.iter().any(|r| r.case == m.case) {
            rows.push(row(m, "faster"));
        }
    }
    let base = pts
        .iter()
        .find(|p| p.0 == baseline)
        .or(pts.first())
        .copied();
    if let Some((_, bm)) = base
        && !rows.iter().any(|r| r.case == bm.case)
    {
        rows.push(row(bm, "baseline"));
    }
    (rows, base)
}

/// Lowers `conf` by the share of simulated reruns (each moving every size of `pts`
/// within its noise, rows' rerun floor `fl`) whose knee falls outside the stated
/// plateau of `k`. Returns that share kept.
fn plateau_confidence(
    conf: &mut Confidence,
    pts: &[(u64, &Measurement)],
    k: &Knee,
    fl: f64,
    higher: bool,
) -> f64 {
    let rows: Vec<(&Measurement, f64)> = pts.iter().map(|(_, m)| (*m, noise(m, fl))).collect();
    let spread: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let mut moved: Vec<(u64, f64)> = Vec::with_capacity(pts.len());
    // The same steadiness `knee` was given ([`steady`]): each row's noise within the
    // tolerance, or every row where a noisy one is surely ahead. With the noise alone
    // here, a unix stream whose 4 MiB row (one draw) was surely ahead of 64 KiB's got
    // "use 1 MiB chunks or larger" from a plateau drawn from 4 MiB, and reruns drawn
    // from 64 KiB that put the knee at 64 KiB in 100% of them: low, at 0%.
    let steady = steady(pts, fl, k.within);
    let (repeat, other) = reruns(&spread, k.pick, |f| {
        moved.clear();
        moved.extend(pts.iter().zip(f).map(|(&(b, m), f)| (b, m.median * f)));
        let again = knee(&moved, &steady, higher, k.within).pick;
        // Inside the stated plateau: the statement holds (counted as the knee).
        if (k.low..=k.to).contains(&again) {
            k.pick
        } else {
            again
        }
    });
    let stated = stated(pts, k);
    let other = other.map(|i| format!("{}, outside {stated}", format_size(pts[i].0)));
    repeat_confidence(
        conf,
        repeat,
        other,
        &rows,
        ("size", "puts the knee outside the stated plateau"),
    );
    repeat
}

#[cfg(test)]
mod tests;
