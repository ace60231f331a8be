//! A size sweep's edges, before its figures are weighed: too few sizes, the best at the
//! largest size measured (and when that leaves no larger size to try), the plateau
//! starting at the smallest.

use super::Knee;
use crate::advice::confidence::noise;
use crate::advice::decide::gain;
use crate::advice::model::*;
use crate::results::Measurement;
use crate::units::format_size;

/// The confidence a size sweep allows before the figures are looked at: too few sizes,
/// the best at an edge of the sweep (the largest size is no edge when the next one is
/// `unsupported`: a datagram over the family's maximum), the plateau starting at the
/// smallest size.
pub(super) fn sweep_confidence(pts: &[(u64, &Measurement)], k: &Knee, last: bool) -> Confidence {
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
        return conf;
    }
    if k.best == n - 1 && !last && edge_settled(pts, k).is_none() {
        conf.cap(
            if k.from < k.best {
                Level::Medium
            } else {
                Level::Low
            },
            format!(
                "the best is the largest size measured ({}): larger ones may be faster",
                format_size(pts[k.best].0)
            ),
        );
    }
    if k.from == 0 {
        conf.cap(
            Level::Medium,
            format!(
                "the plateau starts at the smallest size measured ({}): smaller ones may do as well",
                format_size(pts[0].0)
            ),
        );
    }
    conf
}

/// The gain of the largest size measured over the one before (1.012: +1.2%), when it
/// is under half the plateau's tolerance `within`: the curve has flattened at the end
/// of the sweep. Were it a fixed cost spread over more bytes, each further ×4 would gain
/// at most a third of the step before (all of them together half of it), so no larger
/// size lifts the best enough to push the knee out of the plateau; a best at the end
/// that still climbs caps the confidence. Replayed on 8 idle twin pairs of `ioprobe
/// run`, 36 of 38 flattened open plateaus held their twin's knee; the two that did not
/// were low on their reruns. Half of 5% for every sweep before, whatever its tolerance:
/// a TCP sweep (18%) whose 4 MiB row, ±20% between draws, drew 5.7% above 1 MiB was
/// "still climbing", at most medium, where the reruns kept its knee in 95.5%.
pub(super) fn flattened(pts: &[(u64, &Measurement)], within: f64) -> Option<f64> {
    let [.., (_, before), (_, top)] = pts else {
        return None;
    };
    let g = gain(top, before);
    (g < 1.0 + within / 2.0).then_some(g)
}

/// Why a best at the largest size measured leaves no larger size to try: the last step
/// gained under half the tolerance ([`flattened`]), or the fit of the whole sweep puts
/// the fixed cost under half the tolerance of the largest call's time and explains that
/// step within the two rows' own noise (a fixed cost spread over more bytes: all larger
/// sizes together gain at most that share). A step is one pair of rows, and a socket's
/// 4 MiB row draws a few percent either side of 1 MiB: replayed on 74 kept idle `run`s
/// (37 twin pairs) and 76 `run --quick`s, 27 of 32 answers capped "larger ones may be
/// faster" had a fit putting that share at 0.05–1.7% (unix sendfile: a 1.97 µs fixed
/// cost against a 4 MiB call's 570 µs); `run`s with all 17 topics high went from 48 to
/// 54 of 74, and the 10 answers it made high each held their twin's knee (of 6 more in
/// `run --quick`, one did not: a TCP sendfile plateau whose twin's knee lay below it).
pub(super) fn edge_settled(pts: &[(u64, &Measurement)], k: &Knee) -> Option<Settled> {
    if let Some(g) = flattened(pts, k.within) {
        return Some(Settled::Step(g));
    }
    let [.., (b0, before), (b1, top)] = pts else {
        return None;
    };
    // The fit describes the sweep at the knee, and the step within this run's noise of
    // the two rows (no rerun floor: a step measured beyond what the fixed cost explains
    // is a climb the fit does not see).
    let share = k.fixed_share(pts)?;
    let (fixed, per_byte) = k.fit?;
    let per_byte_at = |b: u64| (fixed + per_byte * b as f64) / b as f64;
    let explained = gain(top, before)
        <= per_byte_at(*b0) / per_byte_at(*b1) * (1.0 + noise(top, 0.0) + noise(before, 0.0));
    (share(*b1) < k.within / 2.0 && explained).then(|| Settled::Fit(share(*b1)))
}

/// See [`edge_settled`].
pub(super) enum Settled {
    /// The last step's gain (1.012: +1.2%).
    Step(f64),
    /// The fixed cost's share of the largest call's time (0.0035: 0.35%).
    Fit(f64),
}
