//! Each traced call is counted once. Every finding names the calls it would change
//! (its claims); findings are settled largest saving first, and one whose calls an
//! earlier finding already claimed is not a finding of its own but that finding's
//! alternative (another way to change the same calls, not added to the savings). A
//! finding's time is at most what its calls take here, so the savings of a run add up
//! to at most its work.

use super::Finding;
use super::own::{BUFFERED_SHARE, Budget, Loop, Method, of_rows};
use crate::trace::figures::Figures;
use crate::trace::price::{pipe_switches, time_here};
use crate::trace::profile::{Op, Profile};
use crate::units::format_secs as secs;
use serde::Serialize;
use std::collections::BTreeMap;

/// Calls a finding would change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Claim {
    /// Every call of one (process, target, operation) row.
    Row(i32, usize, Op),
    /// One process's opens or stats naming one path.
    Path(i32, String, &'static str),
    /// The context switches a pipe's ends made beyond a pipe's own
    /// ([`crate::trace::price::pipe_switches`]).
    Switches(usize),
}

/// Another way to change calls that a larger finding claimed first.
#[derive(Debug, Clone, Serialize)]
pub struct Alternative {
    pub kind: &'static str,
    pub text: String,
    /// What it would save on its own (not added to the run's savings).
    pub saving_s: Option<f64>,
    /// Of that saving, the program's own work per call it removes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_work_s: Option<f64>,
}

fn saving(x: &Finding) -> Option<f64> {
    x.time_s.zip(x.better_s).map(|(t, b)| (t - b).max(0.0))
}

fn largest_first(found: &mut [Finding]) {
    found.sort_by(|a, b| {
        saving(b)
            .unwrap_or(-1.0)
            .total_cmp(&saving(a).unwrap_or(-1.0))
    });
}

/// What the claimed rows take here, when every claim is a priced row.
fn claimed_time(claims: &[Claim], p: &Profile, f: &Figures) -> Option<f64> {
    let mut sum = 0.0;
    for c in claims {
        sum += match c {
            Claim::Row(pid, t, op) => {
                let s = p.ops.get(&(*pid, *t, *op))?;
                time_here(f, &p.targets[*t], *op, s, p.pipe_sizes.contains_key(t))?
            }
            Claim::Switches(t) => pipe_switches(p, f, *t)?.1,
            Claim::Path(..) => return None,
        };
    }
    (!claims.is_empty()).then_some(sum)
}

/// The findings as reported: each call claimed once, time capped at what the claimed
/// calls take here, the program's own work per call added ([`super::own`]: in all at
/// most the run's user CPU), savings and shares of the work computed, largest saving
/// first.
pub fn settle(mut found: Vec<Finding>, p: &Profile, f: &Figures, b: Budget) -> Vec<Finding> {
    largest_first(&mut found);
    let mut kept: Vec<Finding> = Vec::new();
    let mut owner: BTreeMap<Claim, usize> = BTreeMap::new();
    for mut x in found {
        if let (Some(t), Some(cap)) = (x.time_s, claimed_time(&x.claims, p, f)) {
            x.time_s = Some(t.min(cap));
            x.better_s = x.better_s.map(|b| b.min(cap));
        }
        let rows: Vec<_> = x
            .claims
            .iter()
            .filter_map(|c| match c {
                Claim::Row(pid, t, op) => Some((*pid, *t, *op)),
                Claim::Path(..) | Claim::Switches(_) => None,
            })
            .collect();
        x.own_work = of_rows(&rows, (x.kept, loop_of(&x, &rows)), p, f, b.own);
        if let Some(&i) = x.claims.iter().find_map(|c| owner.get(c)) {
            // Another way, priced as a finding would be (its calls capped at what they
            // take here, the program's own work it removes, at most the run's user
            // CPU), not added to the savings: the finding first counts these calls.
            // One that would save nothing here is not worth a mention.
            let own = x.own_work.map(|o| o.saving_s.min(b.user_cpu_s.max(0.0)));
            let s = saving(&x).map(|s| s + own.unwrap_or(0.0));
            if s.is_none_or(|s| s > 0.0) {
                kept[i].alternatives.push(Alternative {
                    kind: x.kind,
                    saving_s: s,
                    own_work_s: own.filter(|_| s.is_some()),
                    text: x.what,
                });
            }
            continue;
        }
        for c in &x.claims {
            owner.insert(c.clone(), kept.len());
        }
        kept.push(x);
    }
    add_own_work(&mut kept, b.user_cpu_s);
    for x in &mut kept {
        finish(x, b.work_s, None);
    }
    largest_first(&mut kept);
    kept
}

/// How `x`'s program loop changes when its calls go: a finding of small writes that
/// claims no reads is of pieces the program makes itself, and a buffer in front of the
/// same loop is its fix ([`Loop::Buffered`]); a loop over reads, or reads relayed into
/// writes, runs fewer times with larger calls.
fn loop_of(x: &Finding, rows: &[(i32, usize, Op)]) -> Loop {
    let writes = !rows.is_empty() && rows.iter().all(|r| r.2.direction() == Some(false));
    if x.kind == "small_requests" && writes {
        Loop::Buffered
    } else {
        Loop::Fewer
    }
}

/// Each finding's own work added to its time (all of it now, what the change keeps
/// after), cut in proportion where the findings' own work would add up to more than
/// the run's user CPU.
fn add_own_work(kept: &mut [Finding], user_cpu_s: f64) {
    let total: f64 = kept
        .iter()
        .filter_map(|x| x.own_work)
        .map(|o| o.per_call_s * o.calls as f64)
        .sum();
    let k = if total > user_cpu_s {
        user_cpu_s.max(0.0) / total
    } else {
        1.0
    };
    for x in kept {
        let Some(o) = x.own_work.map(|o| o.scaled(k)) else {
            continue;
        };
        let (Some(t), Some(bt)) = (x.time_s, x.better_s) else {
            x.own_work = None;
            continue;
        };
        let now = o.per_call_s * o.calls as f64;
        let calls = (t - bt).max(0.0);
        x.time_s = Some(t + now);
        x.better_s = Some(bt + now - o.saving_s);
        x.saving_low_s = Some(calls + o.low_s);
        x.saving_high_s = Some(calls + o.high_s);
        x.own_work = Some(o);
    }
}

/// Attached to a running process for `window` seconds: each finding's saving per
/// second of the process's run, in its sentence too.
pub fn per_second(found: &mut [Finding], work: f64, window: f64) {
    for x in found {
        finish(x, work, Some(window));
    }
}

/// The saving, its share of `work`, whether it matters and the sentence (attached for
/// `window` seconds: the saving per second of the run).
fn finish(x: &mut Finding, work: f64, window: Option<f64>) {
    x.saving_s = saving(x);
    // The range holds the saving: computed apart ((t + own) - (better + own - saved)
    // against (t - better) + high), the two may differ in their last bit.
    if let Some(s) = x.saving_s {
        x.saving_low_s = x.saving_low_s.map(|l| l.min(s));
        x.saving_high_s = x.saving_high_s.map(|h| h.max(s));
    }
    x.share = x.saving_s.map(|s| s / work.max(1e-9));
    x.matters = x.share.is_some_and(|s| s >= 0.01);
    let w = window.map(|w| w.max(1e-9));
    x.saving_per_s = w.and_then(|w| x.saving_s.map(|s| s / w));
    let matters = if x.matters {
        ""
    } else {
        "; does not matter here"
    };
    let tail = match (x.saving_s, x.share) {
        (Some(s), Some(sh)) => {
            let pct = crate::units::sig3(sh * 100.0);
            let parts = parts(x, s, w.unwrap_or(1.0));
            match w {
                Some(w) => format!(
                    ": saves ≈{} per second of its run{parts} (≈{} in the {} window, {pct}% of its work){matters}",
                    secs(s / w),
                    secs(s),
                    secs(w),
                ),
                None => format!(
                    ": saves ≈{}{parts} of ≈{} of work ({pct}%){matters}",
                    secs(s),
                    secs(work)
                ),
            }
        }
        _ => ": not priced (no saved figures for it on this host)".into(),
    };
    let others: String = x
        .alternatives
        .iter()
        .map(|a| match a.saving_s {
            Some(s) => format!(
                " (the same calls another way: {}, saving ≈{} instead)",
                a.text,
                secs(s)
            ),
            None => format!(" (the same calls another way: {})", a.text),
        })
        .collect();
    x.text = format!("{}{tail}{others}", x.what);
}

/// What a saving `s` is made of: its system calls and the program's own work per call
/// (with its range), or that the own work was not measured where the change removes
/// calls. Amounts per `per` seconds (attached: of the window; else 1).
fn parts(x: &Finding, s: f64, per: f64) -> String {
    match (x.own_work, x.saving_low_s, x.saving_high_s) {
        (Some(o), Some(lo), Some(hi)) if o.saving_s > 0.0 => {
            let (how, range) = match o.method {
                Method::Timed => ("", "as its gaps between calls vary"),
                Method::UserCpuSplit => (
                    " (its user CPU over its calls: this tracer does not time them)",
                    "as that work is the calls' or not",
                ),
            };
            let share = match o.how {
                Loop::Fewer => String::new(),
                Loop::Buffered => format!(
                    " ({:.0}% of the ≈{} between calls: behind a buffer, it still makes each piece)",
                    BUFFERED_SHARE.1 * 100.0,
                    secs(o.between_s),
                ),
            };
            let range = match (o.how, o.method) {
                (Loop::Buffered, Method::Timed) => format!(
                    "as its gaps between calls vary and {:.0}–{:.0}% of them goes",
                    BUFFERED_SHARE.0 * 100.0,
                    BUFFERED_SHARE.2 * 100.0
                ),
                _ => range.to_string(),
            };
            format!(
                " ({} in system calls, {} of the program's own work per call: ≈{} a call{share}{how}, {} calls fewer; ≈{}–{} {range})",
                secs((s - o.saving_s) / per),
                secs(o.saving_s / per),
                secs(o.per_call_s),
                crate::units::thousands(o.calls_removed),
                secs(lo / per),
                secs(hi / per),
            )
        }
        // Buffered writes after a long gap: none of it counted, but the range allows
        // for a long path to each write (`own::per_call`).
        (Some(o), Some(lo), Some(hi)) if o.how == Loop::Buffered && hi > s => format!(
            " (in system calls: its ≈{} of work between calls is taken to be the making of each piece, which a buffer keeps; ≈{}–{} if its path to a write is as long as an interpreter's flush)",
            secs(o.between_s),
            secs(lo / per),
            secs(hi / per),
        ),
        _ if x.kept < 1.0 && x.own_work.is_none() => {
            " (in system calls only: the program's own work between them was not measured)".into()
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::findings::own::{Method, OwnWork};
    use proptest::prelude::*;

    fn finding(t: f64, bt: f64, own: OwnWork) -> Finding {
        let what = "app reads /f in small reads".into();
        let who = ("small_requests", 1, "app".into(), "/f".into());
        let x = Finding::unsettled(who, what, (Some(t), Some(bt), 0.01));
        Finding {
            own_work: Some(own),
            ..x
        }
    }

    proptest! {
        /// Whatever the figures, a finding's saving lies in its range: they are summed
        /// in different orders, and once differed in the last bit (a CLI test saw
        /// 0.0020273441155502165 above its high, 0.002027344115550216).
        #[test]
        fn the_saving_lies_in_its_range(
            t in 1e-6f64..10.0,
            kept in 0.0f64..1.0,
            per in 1e-9f64..1e-5,
            calls in 1u64..1_000_000,
            spread in 0.0f64..2.0,
            from_mid in 0.0f64..1.0,
        ) {
            let mid = per * calls as f64 * (1.0 - kept);
            let own = OwnWork {
                method: Method::Timed,
                calls,
                calls_removed: calls,
                how: Loop::Fewer,
                per_call_s: per,
                between_s: per,
                call_s: per,
                saving_s: mid,
                low_s: mid * (1.0 - from_mid * spread.min(1.0)),
                // The case that failed: the high end the median itself.
                high_s: if from_mid < 0.5 { mid } else { mid * (1.0 + spread) },
            };
            let mut kept = vec![finding(t, t * kept, own)];
            add_own_work(&mut kept, 1e9);
            finish(&mut kept[0], 100.0, None);
            let x = &kept[0];
            let (lo, mid, hi) = (x.saving_low_s.unwrap(), x.saving_s.unwrap(), x.saving_high_s.unwrap());
            prop_assert!(lo <= mid && mid <= hi, "{lo} {mid} {hi}");
        }
    }
}
