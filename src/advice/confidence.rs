//! Confidence: how much a rerun moves a row (its noise, a floor per kind of
//! measurement), and the share of simulated reruns, each moving every row within its
//! noise, that keep an answer.

use super::model::*;
use crate::harness::stats::{Rng, bimodal};
use crate::results::Measurement;
use crate::units::sig3;

/// Simulated reruns per choice, and how far each moves a row: a normal draw on the log
/// scale whose standard deviation is this share of the row's [`noise`]. The confidence
/// is the share of reruns whose choice keeps the answer: high from [`HIGH_REPEAT`],
/// medium from [`MEDIUM_REPEAT`]. A row's noise is the largest move twin runs showed
/// (its floor), about two standard deviations: 0.5. Replayed on 10 kept twin pairs of
/// `ioprobe run` (5 idle, 5 loaded) and checked on 6 new ones (3 and 3), idle answers
/// called high repeated in 100% of the twins at 0.5 as at 0.75 (the value before,
/// calibrated on the old statement, a size's exact fit): 51 and 32 topics high instead
/// of 41 and 27, medium repeated in 96% and 100%, low in 78% and 82% (89% and 88% at
/// 0.75: "low" then was right nine times in ten). Loaded runs are busy, so at most
/// medium.
pub(super) const RERUNS: usize = 400;
pub(super) const RERUN_SPREAD: f64 = 0.5;
pub(super) const HIGH_REPEAT: f64 = 0.95;
pub(super) const MEDIUM_REPEAT: f64 = 0.80;

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
/// A pass through a pipe by write(2) and read(2): its two processes and the kernel's
/// pipe buffer, no file and no network stack. Over 28 idle twin pairs of `ioprobe run`
/// (168 rows of each method), a write-read row's move against its sweep's was within
/// 1.8–2.6% in 95% of rows (4.2% at most), a vmsplice-splice row's 3.3–6.1% (13.6% at
/// most): one floor for both (4%, set on 16 pairs of the two mixed) held the one
/// capacity choice it decides, a 1 MiB pipe ×1.09–1.13 against the default at 256 KiB
/// chunks in every run, at low confidence in each of 10 runs that all chose it.
pub const RERUN_NOISE_PIPE: f64 = 0.025;
/// A pass through a pipe by vmsplice(2) and splice(2): the writer's pages mapped into
/// the pipe move more from run to run ([`RERUN_NOISE_PIPE`]).
pub const RERUN_NOISE_SPLICE: f64 = 0.05;
/// A TCP stream over loopback, both ends on one CPU: the network stack's softirq work
/// lands in the sender, the receiver or a kernel thread from one moment to the next, and
/// a size sweep's rows move apart in regimes (64 KiB ahead of 1 MiB in one run, behind
/// it in the next). Over 18 idle twin pairs of `ioprobe run` (216 TCP rows), a row's
/// move against its sweep's was within 2.0% in half the rows, 13.3% in 90% and 18.1%
/// in 95% (44.7% at most); a Unix socket's, 3.0% in 95%.
pub const RERUN_NOISE_TCP: f64 = 0.18;
/// A calibrated loop bound by memory bandwidth (copies between the page cache and a
/// buffer): its figure follows the host's memory traffic, not the loop. A choice
/// compares the rows of one sweep, which move together with that traffic; what changes
/// it is a row's move against its sweep's. Over 16 idle twin pairs of `ioprobe run`, a
/// memory-bound row's move less its sweep's median move was within 5.7% in 95% of rows
/// (8.8% at most), where whole moves reached 8% in 5% of rows and, in older pairs,
/// read/256KiB/readahead moved −19%. 10% before, set on whole moves.
pub const RERUN_NOISE_MEMORY: f64 = 0.06;
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
    let half = (m.ci95[1] - m.ci95[0]) / 2.0 / m.median * to_95(m.ci_level);
    let passes = m.pass_medians();
    if passes.len() >= 2 {
        // Pooled from passes: the spread between them, which the halves and modes of
        // the pooled samples would count as drift and regimes, is measured directly.
        return half.max(between_passes(&passes, floor, m.regime_draws()));
    }
    let modes = bimodal(&m.raw).map_or(0.0, |x| (x.high - x.low) / m.median);
    half.max(split_half_drift(&m.raw).unwrap_or(0.0))
        .max(modes)
        .max(floor)
}

/// What a median interval of `coverage` is widened by to read as a 95% one (normal
/// quantiles): the distribution-free interval of fewer than 6 samples is their range,
/// which covers the median with 50% for 2 samples (×2.91), 75% for 3 (×1.70), 87.5%
/// for 4 (×1.28), 93.8% for 5 (×1.05). `run --quick` measures copies in 2 samples:
/// read-write/1MiB at 3.35 and 4.52 GB/s, its interval their range, tied
/// copy_file_range with it at high confidence, and the twin, 2 samples of 4.5, ruled
/// it out 17% behind. A coverage of 0 (none computed) is taken as it is.
fn to_95(coverage: f64) -> f64 {
    if coverage > 0.0 && coverage < 0.95 {
        1.96 / crate::harness::compare::z_for_coverage(coverage)
    } else {
        1.0
    }
}

/// How far a rerun may move the median of a row pooled from `k` ≥ 2 passes (each on
/// fresh files, processes and connections, with its median in `medians`): about two
/// standard errors of their mean on the log scale (for two passes, the distance between
/// them), and never less than the kind's rerun floor `floor`. Where the passes were
/// independent draws of a regime (`draws`: a read or write row's file, where its pages
/// sit; a pipe's or socket's process pair and connection), the floor is one draw's move
/// between twin runs, which k draws average out: floor / √k (a rerun pooling as many
/// draws moves that much). Elsewhere the floor stays: what moves a copy's or a loop's
/// figure between runs does not average out within one.
pub(super) fn between_passes(medians: &[f64], floor: f64, draws: bool) -> f64 {
    let logs: Vec<f64> = medians
        .iter()
        .filter(|&&x| x > 0.0)
        .map(|x| x.ln())
        .collect();
    let k = logs.len().max(1) as f64;
    let mean = logs.iter().sum::<f64>() / k;
    let sd = if logs.len() >= 2 {
        (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt()
    } else {
        0.0
    };
    let floor = if draws { floor / k.sqrt() } else { floor };
    (2.0 * sd / k.sqrt()).max(floor)
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
    c.agreement = Some(repeat);
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
    // "±2.00–5.00%", or "±10.0%" when every row's noise is its kind's floor.
    let spread = if sig3(lo * 100.0) == sig3(hi * 100.0) {
        format!("±{}%", sig3(hi * 100.0))
    } else {
        format!("±{}–{}%", sig3(lo * 100.0), sig3(hi * 100.0))
    };
    c.cap(
        if repeat < MEDIUM_REPEAT { Level::Low } else { Level::Medium },
        format!(
            "borderline: a rerun moving each {kind} within its noise ({spread}{why}) {outcome} in {}% of {RERUNS} simulated reruns{}",
            sig3((1.0 - repeat) * 100.0),
            other.map_or(String::new(), |o| format!(" (most often {o})"))
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regime_draws_average_the_floor_out_and_file_passes_do_not() {
        // Four passes that agree: a regime row's noise is the floor over √4, a file
        // row's the floor.
        let same = [1e9, 1e9, 1e9, 1e9];
        assert!(
            (between_passes(&same, RERUN_NOISE_TCP, true) - RERUN_NOISE_TCP / 2.0).abs() < 1e-12
        );
        assert_eq!(
            between_passes(&same, RERUN_NOISE_MEMORY, false),
            RERUN_NOISE_MEMORY
        );
        // Passes far apart: their spread stands, whatever the floor.
        let apart = [1e9, 2e9];
        let n = between_passes(&apart, RERUN_NOISE_PIPE, true);
        assert!((n - 2f64.ln()).abs() < 1e-9, "{n}");
        // More draws that agree as much narrow it.
        let more = [1e9, 1.05e9, 1e9, 1.05e9, 1e9, 1.05e9, 1e9, 1.05e9];
        assert!(
            between_passes(&more, RERUN_NOISE_TCP, true)
                < between_passes(&more[..4], RERUN_NOISE_TCP, true)
        );
    }
}
