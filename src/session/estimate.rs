//! How long a measuring command should take, said before it starts: each case's
//! minimum cost (warm-up and minimum samples at saved or guessed throughput), the
//! command's time limit and how it is named, and the estimate printed first.

use crate::probes::Probe;
use crate::results::{SetupTime, Status, Unit};
use crate::settings::{Scale, Settings};
use crate::sys::machine::Environment;
use std::collections::HashMap;

/// Throughput assumed for a whole-pass case nothing saved has measured: a guess, said so
/// (copies with eviction and fsync run at about this here; warm ones faster).
const GUESSED_RATE: f64 = 1e9;

/// A case's figures in the newest saved run on this host that has it: its median
/// (bytes/s), how many samples it took, and its time outside its passes (its set-up;
/// None where that run did not save it).
#[derive(Debug, Clone, Copy)]
pub(super) struct Saved {
    rate: f64,
    samples: usize,
    setup: Option<SetupTime>,
}

/// What the saved runs say about the cases to come: each case's [`Saved`] figures by
/// case name, the cases whose newest saved row could not run here (unsupported, or
/// skipped on this filesystem: they take no time), each probe's median set-up over
/// its saved rows (for its rows nothing saved has run), and the newest run they came
/// from.
#[derive(Debug, Default)]
pub(super) struct Prior {
    cases: HashMap<String, Saved>,
    unrun: std::collections::HashSet<String>,
    setups: HashMap<String, SetupTime>,
    run: Option<i64>,
}

impl Prior {
    /// A case's set-up in seconds for `passes` timed passes after its warm-up: at its
    /// own saved [`SetupTime`], else its probe's saved rows' median, else the probe's
    /// own guess (`guess`).
    fn setup(&self, (probe, case): (&str, &str), passes: usize, guess: SetupTime) -> f64 {
        self.cases
            .get(case)
            .and_then(|s| s.setup)
            .or_else(|| self.setups.get(probe).copied())
            .unwrap_or(guess)
            .seconds(passes)
    }

    fn rate(&self, case: &str) -> Option<f64> {
        self.cases.get(case).map(|s| s.rate)
    }
}

/// The [`Prior`] figures; empty when nothing is saved.
fn prior_rates(settings: &Settings, host: &str) -> Prior {
    let mut prior = Prior::default();
    let store = settings.store_path().ok().and_then(|p| {
        crate::results::store::Store::open_read_only_if_any(&p)
            .ok()
            .flatten()
    });
    let Some(store) = store else {
        return prior;
    };
    let evidence = crate::results::store::Evidence::of(host, &[], 20);
    let mut setups: HashMap<String, Vec<SetupTime>> = HashMap::new();
    for r in store.newest_with(&evidence).unwrap_or_default() {
        let Ok(run) = store.load(r.id) else { continue };
        for m in &run.measurements {
            if prior.cases.contains_key(&m.case) || prior.unrun.contains(&m.case) {
                continue;
            }
            if matches!(m.status, Status::Unsupported | Status::Skipped) {
                prior.unrun.insert(m.case.clone());
                continue;
            }
            if !m.is_ok() || m.unit != Unit::BytesPerSec {
                continue;
            }
            let saved = Saved {
                rate: m.median,
                samples: m.samples,
                setup: m.setup,
            };
            prior.cases.insert(m.case.clone(), saved);
            if let Some(s) = m.setup {
                setups.entry(m.probe.clone()).or_default().push(s);
            }
            prior.run.get_or_insert(r.id);
        }
    }
    prior.setups = setups
        .into_iter()
        .map(|(p, v)| (p, median_setup(&v)))
        .collect();
    prior
}

/// The median of each part of `v`'s set-ups (not empty).
fn median_setup(v: &[SetupTime]) -> SetupTime {
    let median = |f: &dyn Fn(&SetupTime) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    SetupTime {
        first_s: median(&|s| s.first_s),
        per_pass_s: median(&|s| s.per_pass_s),
        passes: v.iter().map(|s| s.passes).sum(),
    }
}

/// How long `probes` should take, in seconds, and where the figures came from: each
/// whole-pass case runs a warm-up and as many samples as it took last time (at least
/// the minimum) at its saved throughput, or the minimum at a guessed one; each
/// calibrated case its warm-up and half its budget.
fn estimate(probes: &[Box<dyn Probe>], h: &crate::harness::Config, prior: &Prior) -> (f64, String) {
    let min = h.round_min();
    let mut guessed = false;
    let mut total = 0.0;
    for p in probes {
        let probe = p.kind().name();
        let guesses = p.setup_guesses();
        for (i, (name, bytes)) in p.case_names().iter().zip(p.pass_bytes()).enumerate() {
            if prior.unrun.contains(name) {
                continue;
            }
            let guess = guesses.get(i).copied().unwrap_or(SetupTime::NONE);
            total += match bytes {
                Some((lo, hi)) => {
                    let saved = prior.cases.get(name).copied();
                    guessed |= saved.is_none();
                    let samples = saved.map_or(min, |s| s.samples).max(min);
                    let pass = pass_seconds(h, (lo, hi), saved.map(|s| s.rate));
                    (1 + samples) as f64 * pass + prior.setup((probe, name), samples, guess)
                }
                None => (h.warmup + h.budget / 2).as_secs_f64(),
            };
        }
    }
    let from = match (prior.run, guessed) {
        (Some(id), false) => format!("from run {id}'s figures"),
        (Some(id), true) => format!("from run {id}'s figures, the rest guessed at 1 GB/s"),
        (None, _) => "a guess: nothing measured here is saved yet".into(),
    };
    (total, from)
}

/// Each case's minimum cost in seconds, keyed as the time limit keys them: a whole-pass
/// case's warm-up and minimum rounds of passes, each pass as long as at its saved
/// throughput in `prior` (see [`pass_seconds`]), plus its set-up (saved, else
/// guessed: see [`Prior::setup`]); a calibrated case its warm-up and minimum samples.
/// The time limit shares itself out in proportion (given no prior), and their sum is
/// the least a run of `probes` can take.
pub(super) fn min_costs(
    probes: &[Box<dyn Probe>],
    h: &crate::harness::Config,
    prior: &Prior,
) -> Vec<(String, f64)> {
    probes
        .iter()
        .flat_map(|p| case_costs(p.as_ref(), h, prior))
        .collect()
}

/// [`min_costs`] of one probe's cases.
pub(super) fn case_costs(
    p: &dyn Probe,
    h: &crate::harness::Config,
    prior: &Prior,
) -> Vec<(String, f64)> {
    let min = h.round_min();
    let name = p.kind().name();
    let setup = p.setup_guesses();
    let mut out = Vec::new();
    for (i, (case, bytes)) in p.case_names().iter().zip(p.pass_bytes()).enumerate() {
        let guess = setup.get(i).copied().unwrap_or(SetupTime::NONE);
        let cost = match bytes {
            _ if prior.unrun.contains(case) => 0.0,
            Some(b) => {
                (1 + min) as f64 * pass_seconds(h, b, prior.rate(case))
                    + prior.setup((name, case), min, guess)
            }
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
fn least_seconds(probes: &[Box<dyn Probe>], h: &crate::harness::Config, prior: &Prior) -> f64 {
    min_costs(probes, h, prior).iter().map(|c| c.1).sum()
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
        let least = least_seconds(probes, h, &prior);
        seconds = l.as_secs_f64().max(least);
        from = match least > l.as_secs_f64() {
            true => format!(
                "each row's set-up and fewest samples, past its time limit of {}",
                crate::units::format_minutes(l.as_secs_f64())
            ),
            false => "its time limit: rows sample until their interval is narrow or their share \
                      is spent"
                .into(),
        };
    }
    (seconds, from)
}

/// The least measuring `probes` can take here, in seconds (each row its warm-up and
/// minimum samples; see [`least_seconds`]): as a time limit, the shortest run of them.
pub fn least_seconds_of(settings: &Settings, probes: &[Box<dyn Probe>]) -> f64 {
    let host = crate::sys::machine::hostname();
    least_seconds(probes, &settings.harness, &prior_rates(settings, &host))
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
        let (guess, from) = estimate(&probes, &h, &Prior::default());
        assert!((guess - rows as f64 * passes * total / GUESSED_RATE).abs() < 1e-6);
        assert!(from.starts_with("a guess"), "{from}");
        let names = probes[0].case_names();
        // Twice the guessed throughput, and fewer samples than the minimum last time.
        let saved = |rate, samples| Saved {
            rate,
            samples,
            setup: None,
        };
        let prior = Prior {
            cases: names.iter().map(|n| (n.clone(), saved(2e9, 2))).collect(),
            run: Some(7),
            ..Prior::default()
        };
        let (saved, from) = estimate(&probes, &h, &prior);
        assert!((saved - guess / 2.0).abs() < 1e-6, "{saved} vs {guess}");
        assert_eq!(from, "from run 7's figures");
        // Fitted passes last the pass time, at any throughput that keeps them between
        // their fewest and most bytes.
        let fitted: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(pipe::Options {
            chunk_sizes: vec![4096, 65536],
            ..pipe::Options::for_scale(Scale::Default)
        }))];
        let (fit, _) = estimate(&fitted, &h, &Prior::default());
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
        let least = least_seconds(&probes, &h, &Prior::default());
        let want = rows * passes * total as f64 / GUESSED_RATE;
        assert!((least - want).abs() < 1e-9, "{least} vs {want}");
        // The time limit's shares are the same costs, case by case.
        let costs = min_costs(&probes, &h, &Prior::default());
        assert_eq!(costs.len(), rows as usize);
        assert!((costs.iter().map(|c| c.1).sum::<f64>() - least).abs() < 1e-9);
        // A saved rate four times the guess: a quarter of the time.
        let saved = |setup| Saved {
            rate: 4.0 * GUESSED_RATE,
            samples: 6,
            setup,
        };
        let names = probes[0].case_names();
        let prior = Prior {
            cases: names.iter().map(|n| (n.clone(), saved(None))).collect(),
            ..Prior::default()
        };
        let fast = least_seconds(&probes, &h, &prior);
        assert!((fast - want / 4.0).abs() < 1e-9, "{fast}");
    }

    #[test]
    fn a_saved_set_up_counts_once_and_per_pass_at_the_passes_to_come() {
        let h = crate::harness::Config::quick();
        let probes: Vec<Box<dyn Probe>> = vec![Box::new(pipe::PipeProbe::new(pipe::Options {
            chunk_sizes: vec![4096, 65536],
            total: 16 << 20,
            fit: false,
            ..pipe::Options::for_scale(Scale::Quick)
        }))];
        let names = probes[0].case_names();
        let bare = least_seconds(&probes, &h, &Prior::default());
        let setup = SetupTime {
            first_s: 0.08,
            per_pass_s: 0.01,
            passes: 200,
        };
        // The first row saved with its set-up; the second row not saved: its probe's
        // saved rows' median stands in for it.
        let saved = Saved {
            rate: GUESSED_RATE,
            samples: 200,
            setup: Some(setup),
        };
        let mut prior = Prior {
            cases: HashMap::from([(names[0].clone(), saved)]),
            setups: HashMap::from([("pipe".to_string(), setup)]),
            run: Some(1),
            ..Prior::default()
        };
        let min = h.round_min() as f64;
        let rows = names.len() as f64;
        let least = least_seconds(&probes, &h, &prior);
        let want = bare + rows * (0.08 + 0.01 * min);
        assert!((least - want).abs() < 1e-9, "{least} vs {want}");
        // The estimate without a limit: the first row at the 200 samples it took.
        let (all, _) = estimate(&probes, &h, &prior);
        let pass = (16u64 << 20) as f64 / GUESSED_RATE;
        let first = 201.0 * pass + 0.08 + 0.01 * 200.0;
        let other = (1.0 + min) * pass + 0.08 + 0.01 * min;
        let rest = (rows - 1.0) * other;
        assert!(
            (all - first - rest).abs() < 1e-9,
            "{all} vs {}",
            first + rest
        );
        // A case saved as unsupported here takes no time.
        prior.unrun.insert(names[1].clone());
        let (less, _) = estimate(&probes, &h, &prior);
        assert!((all - less - other).abs() < 1e-9, "{less} vs {all}");
        let costs = min_costs(&probes, &h, &prior);
        assert_eq!(costs[1].1, 0.0);
    }
}
