//! How long a measuring command should take, said before it starts: each case's
//! minimum cost (warm-up and minimum samples at saved or guessed throughput), the
//! command's time limit and how it is named, and the estimate printed first.

use crate::probes::Probe;
use crate::results::Unit;
use crate::settings::{Scale, Settings};
use crate::sys::machine::Environment;

/// Throughput assumed for a whole-pass case nothing saved has measured: a guess, said so
/// (copies with eviction and fsync run at about this here; warm ones faster).
const GUESSED_RATE: f64 = 1e9;

/// Each case's figures in the newest saved run on this host that has it, by case name:
/// its median (bytes/s) and how many samples it took; and the newest such run.
type Prior = (std::collections::HashMap<String, (f64, usize)>, Option<i64>);

/// The [`Prior`] figures; empty when nothing is saved.
fn prior_rates(settings: &Settings, host: &str) -> Prior {
    let mut rates = std::collections::HashMap::new();
    let store = settings.store_path().ok().and_then(|p| {
        crate::results::store::Store::open_read_only_if_any(&p)
            .ok()
            .flatten()
    });
    let Some(store) = store else {
        return (rates, None);
    };
    let mut newest = None;
    let evidence = crate::results::store::Evidence::of(host, &[], 20);
    for r in store.newest_with(&evidence).unwrap_or_default() {
        let Ok(run) = store.load(r.id) else { continue };
        for m in run
            .measurements
            .iter()
            .filter(|m| m.is_ok() && m.unit == Unit::BytesPerSec)
        {
            if !rates.contains_key(&m.case) {
                rates.insert(m.case.clone(), (m.median, m.samples));
                newest.get_or_insert(r.id);
            }
        }
    }
    (rates, newest)
}

/// How long `probes` should take, in seconds, and where the figures came from: each
/// whole-pass case runs a warm-up and as many samples as it took last time (at least
/// the minimum) at its saved throughput, or the minimum at a guessed one; each
/// calibrated case its warm-up and half its budget.
fn estimate(
    probes: &[Box<dyn Probe>],
    h: &crate::harness::Config,
    (rates, run): &Prior,
) -> (f64, String) {
    let min = h.round_min();
    let mut guessed = false;
    let mut total = 0.0;
    for p in probes {
        total += p.setup_seconds().iter().sum::<f64>();
        for (name, bytes) in p.case_names().iter().zip(p.pass_bytes()) {
            total += match bytes {
                Some((lo, hi)) => {
                    let saved = rates.get(name).copied();
                    guessed |= saved.is_none();
                    let samples = saved.map_or(min, |s| s.1);
                    let pass = pass_seconds(h, (lo, hi), saved.map(|s| s.0));
                    (1 + samples.max(min)) as f64 * pass
                }
                None => (h.warmup + h.budget / 2).as_secs_f64(),
            };
        }
    }
    let from = match (run, guessed) {
        (Some(id), false) => format!("from run {id}'s figures"),
        (Some(id), true) => format!("from run {id}'s figures, the rest guessed at 1 GB/s"),
        (None, _) => "a guess: nothing measured here is saved yet".into(),
    };
    (total, from)
}

/// Each case's minimum cost in seconds, keyed as the time limit keys them: a whole-pass
/// case's warm-up and minimum rounds of passes, each pass as long as at its saved
/// throughput in `rates` (see [`pass_seconds`]), plus its set-up; a calibrated case
/// its warm-up and minimum samples. The time limit shares itself out in proportion
/// (given no rates), and their sum is the least a run of `probes` can take.
pub(super) fn min_costs(
    probes: &[Box<dyn Probe>],
    h: &crate::harness::Config,
    rates: &std::collections::HashMap<String, (f64, usize)>,
) -> Vec<(String, f64)> {
    probes
        .iter()
        .flat_map(|p| case_costs(p.as_ref(), h, rates))
        .collect()
}

/// [`min_costs`] of one probe's cases.
pub(super) fn case_costs(
    p: &dyn Probe,
    h: &crate::harness::Config,
    rates: &std::collections::HashMap<String, (f64, usize)>,
) -> Vec<(String, f64)> {
    let min = h.round_min();
    let name = p.kind().name();
    let setup = p.setup_seconds();
    let mut out = Vec::new();
    for (i, (case, bytes)) in p.case_names().iter().zip(p.pass_bytes()).enumerate() {
        let cost = setup.get(i).copied().unwrap_or(0.0)
            + match bytes {
                Some(b) => (1 + min) as f64 * pass_seconds(h, b, rates.get(case).map(|r| r.0)),
                None => (h.warmup + h.sample_time * h.min_samples as u32).as_secs_f64(),
            };
        out.push((crate::harness::TimeLimit::key(name, case), cost));
    }
    out
}

/// How long one pass of a whole-pass case (`lo`..`hi` bytes) lasts: the pass time
/// within its bytes at its saved throughput, or with none saved, at a guessed 1 GB/s.
/// A fixed pass (`lo` = `hi`) takes its bytes' time whatever the pass time: the first
/// trace's 16 MiB socket and pipe passes took 1.5–30 ms here (8 ms on average), and
/// counting each as the 25 ms pass time made it say "about 10 s" for 6.8 s.
fn pass_seconds(h: &crate::harness::Config, (lo, hi): (u64, u64), rate: Option<f64>) -> f64 {
    let rate = rate.unwrap_or(GUESSED_RATE);
    h.pass_time
        .as_secs_f64()
        .clamp(lo as f64 / rate, hi.max(lo) as f64 / rate)
}

/// The least `probes` can take, whatever their limit, in seconds: their
/// [`min_costs`] at the saved rates.
fn least_seconds(
    probes: &[Box<dyn Probe>],
    h: &crate::harness::Config,
    rates: &std::collections::HashMap<String, (f64, usize)>,
) -> f64 {
    min_costs(probes, h, rates).iter().map(|c| c.1).sum()
}

/// `run --precise --quick`'s share of its probes' time limits (rows sampled to ±1%):
/// the same selection in a little under half the time, so that with the rows past the
/// sweeps' edges, which sample after the limit is spent, it ends within 30 s.
const QUICK_RUN_SHARE: f64 = 0.48;
/// `run`'s and `run --quick`'s shares of the probes' time limits (58 s): 29 s and
/// 14.5 s, a first pass over every row and then the rows of the answers still
/// undecided (see `decide`).
const DECIDING_SHARE: f64 = 0.5;
const DECIDING_QUICK_SHARE: f64 = 0.25;

/// The command's time limit and how to name it: `--time-limit`, else the sum of its
/// probes' own limits, which their options took at the caller's `scale` (none with
/// `--thorough` or `--budget`, or when a probe has none).
pub(super) fn time_limit(
    settings: &Settings,
    (probes, scale): (&[Box<dyn Probe>], Scale),
    command: &str,
) -> (Option<std::time::Duration>, String) {
    if let Some(t) = settings.time_limit {
        let shown = crate::units::format_minutes(t.as_secs_f64());
        return (
            Some(t),
            match settings.time_limit_by {
                Some(by) => format!("a time limit of {shown} ({by})"),
                None => format!("--time-limit {shown}"),
            },
        );
    }
    if settings.scale == Scale::Thorough || settings.budget_given {
        return (None, String::new());
    }
    let sum: Option<std::time::Duration> = probes.iter().map(|p| p.time_limit()).sum();
    // `run` samples until each answer is decided, within half its probes' limits
    // (which `--precise` gives whole: every row to ±1%); `run --quick` within a quarter.
    let quick_run = scale == Scale::Run && settings.mode == "quick";
    let share = match (scale == Scale::Run, settings.precise, quick_run) {
        (false, ..) => 1.0,
        (true, true, false) => 1.0,
        (true, true, true) => QUICK_RUN_SHARE,
        (true, false, false) => DECIDING_SHARE,
        (true, false, true) => DECIDING_QUICK_SHARE,
    };
    let sum = sum.map(|t| t.mul_f64(share));
    let label = sum.map_or(String::new(), |t| {
        format!(
            "the time limit of `{command}`{} ({}; --time-limit changes it)",
            if scale == Scale::Quick || quick_run {
                " --quick"
            } else {
                ""
            },
            crate::units::format_minutes(t.as_secs_f64())
        )
    });
    (sum, label)
}

/// Before a run expected to last over 20 s: how many rows and about how long.
/// Under a time limit the rows sample until their interval is narrow or their share
/// of it is spent, and on this machine most spend it (a fresh `run` said "about 33 s"
/// from its rows' minimum samples and took 59 s, its limit 58 s; now it says 58 s and
/// takes 58.6–59.4 s, `run --quick` 28 s and 29.2 s): the limit is the estimate, unless the
/// rows' minimum samples alone take longer.
pub(super) fn say_how_long(
    (settings, h): (&Settings, &crate::harness::Config),
    (probes, scale, limit): (&[Box<dyn Probe>], Scale, Option<std::time::Duration>),
    command: &str,
    env: &Environment,
    total: usize,
) {
    let (seconds, mut from) = expected((settings, h), probes, limit, &env.hostname);
    if scale == Scale::Run && !settings.precise && limit.is_some() {
        from = "its time limit, at most: every row once, then the rows of the answers still undecided, until each is decided".into();
    }
    if seconds > 20.0 {
        crate::progress::note(&format!(
            "{command}: {total} rows, about {} ({from}){}",
            crate::units::format_minutes(seconds),
            if scale == Scale::Quick || scale == Scale::Run {
                ""
            } else {
                "; --quick for a smaller set"
            }
        ));
    }
}

/// How long `probes` should take under `limit`, and where that comes from (see
/// [`say_how_long`]).
fn expected(
    (settings, h): (&Settings, &crate::harness::Config),
    probes: &[Box<dyn Probe>],
    limit: Option<std::time::Duration>,
    host: &str,
) -> (f64, String) {
    let prior = prior_rates(settings, host);
    let (mut seconds, mut from) = estimate(probes, h, &prior);
    if let Some(l) = limit {
        let least = least_seconds(probes, h, &prior.0);
        seconds = l.as_secs_f64().max(least);
        from = "its time limit: rows sample until their interval is narrow or their share is spent"
            .into();
    }
    (seconds, from)
}

/// The least measuring `probes` can take here, in seconds (each row its warm-up and
/// minimum samples; see [`least_seconds`]): as a time limit, the shortest run of them.
pub fn least_seconds_of(settings: &Settings, probes: &[Box<dyn Probe>]) -> f64 {
    let host = crate::sys::machine::hostname();
    least_seconds(probes, &settings.harness, &prior_rates(settings, &host).0)
}

/// How long measuring `probes` at `scale` should take here, in seconds, as a run of
/// them says before it starts (trace's first figures say it too).
pub fn expected_seconds(
    settings: &Settings,
    probes: &[Box<dyn Probe>],
    scale: Scale,
    command: &str,
) -> f64 {
    let (limit, _) = time_limit(settings, (probes, scale), command);
    expected(
        (settings, &settings.harness),
        probes,
        limit,
        &crate::sys::machine::hostname(),
    )
    .0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::{Scale, pipe};
    use std::collections::HashMap;

    #[test]
    fn the_estimate_uses_saved_throughput_and_says_when_it_guesses() {
        let h = crate::harness::Config::quick();
        let opts = pipe::Options {
            chunk_sizes: vec![4096, 65536],
            fit: false,
            ..pipe::Options::for_scale(Scale::Default)
        };
        let total = opts.total as f64;
        let probes: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(opts))];
        let rows = probes[0].case_count();
        let passes = (1 + h.round_min()) as f64;
        let (guess, from) = estimate(&probes, &h, &(HashMap::new(), None));
        assert!((guess - rows as f64 * passes * total / GUESSED_RATE).abs() < 1e-6);
        assert!(from.starts_with("a guess"), "{from}");
        let names = probes[0].case_names();
        // Twice the guessed throughput, and fewer samples than the minimum last time.
        let rates: HashMap<String, (f64, usize)> =
            names.iter().map(|n| (n.clone(), (2e9, 2))).collect();
        let (saved, from) = estimate(&probes, &h, &(rates, Some(7)));
        assert!((saved - guess / 2.0).abs() < 1e-6, "{saved} vs {guess}");
        assert_eq!(from, "from run 7's figures");
        // Fitted passes last the pass time, at any throughput that keeps them between
        // their fewest and most bytes.
        let fitted: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(pipe::Options {
            chunk_sizes: vec![4096, 65536],
            ..pipe::Options::for_scale(Scale::Default)
        }))];
        let (fit, _) = estimate(&fitted, &h, &(HashMap::new(), None));
        let want = rows as f64 * passes * h.pass_time.as_secs_f64();
        assert!((fit - want).abs() < 1e-6, "{fit} vs {want}");
        assert_eq!(crate::units::format_minutes(40.0), "40 s");
        assert_eq!(crate::units::format_minutes(185.0), "3 min");
        assert_eq!(crate::units::format_minutes(3900.0), "1 h 5 min");
    }

    #[test]
    fn a_fixed_pass_shorter_than_the_pass_time_counts_its_bytes_time() {
        let h = crate::harness::Config::quick();
        let total = 16u64 << 20;
        assert!(total as f64 / GUESSED_RATE < h.pass_time.as_secs_f64());
        let probes: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(pipe::Options {
            chunk_sizes: vec![4096, 65536],
            total,
            fit: false,
            ..pipe::Options::for_scale(Scale::Quick)
        }))];
        let passes = (1 + h.round_min()) as f64;
        let rows = probes[0].case_count() as f64;
        let least = least_seconds(&probes, &h, &HashMap::new());
        let want = rows * passes * total as f64 / GUESSED_RATE;
        assert!((least - want).abs() < 1e-9, "{least} vs {want}");
        // The time limit's shares are the same costs, case by case.
        let costs = min_costs(&probes, &h, &HashMap::new());
        assert_eq!(costs.len(), rows as usize);
        assert!((costs.iter().map(|c| c.1).sum::<f64>() - least).abs() < 1e-9);
        // A saved rate four times the guess: a quarter of the time.
        let rates = probes[0]
            .case_names()
            .into_iter()
            .map(|n| (n, (4.0 * GUESSED_RATE, 6)))
            .collect();
        let fast = least_seconds(&probes, &h, &rates);
        assert!((fast - want / 4.0).abs() < 1e-9, "{fast}");
    }
}
