//! Copy tables (seed 001's ranked table): one per file size, cache state and durability,
//! fastest first, with time (median and best), throughput, × the fastest, CPU seconds,
//! context switches and blocks per copy; unsupported and failed methods last, with why.
//! The plot shows the best variant of each method; the advice names the fastest durable
//! method, the read-write buffer size to use, and how far the mmap methods lag.

use super::{Cache, Derived, Durability, Method, Params};
use crate::advice::Recommendation;
use crate::advice::{self, Opt, Words};
use crate::names::Named;
use crate::present::Style;
use crate::present::grid::{ci_text, warnings};
use crate::present::{Grid, Plot, distinct, plot, with_params};
use crate::results::Measurement;
use crate::sys::machine::Environment;
use crate::units::{format_gbps, format_ns, format_size, sig3};

/// How far a rerun moves a copy between two files in the page cache, against its
/// method sweep: memory-bound, as the read rows are, but the whole sweep moves
/// together (the machine's memory regime), so that against each other the methods move
/// less. Over 64 idle runs of `ioprobe run` and `run --quick` (27–29 Nov 2026, 64 MiB,
/// warm), the read-write, pread-pwrite, fadvise, sendfile, splice and copy_file_range
/// rows' move against their sweep's median was within 4.3% in 90% of rows and 5.3% in
/// 95% (14% at most): copy_file_range 13–15% behind read-write/1MiB in every run. An
/// 11% floor for every row (here before 29 Nov) tied them all, and the tie set's
/// edge, and so its pick, moved from run to run.
pub const RERUN_NOISE_PAGE_CACHE_COPY: f64 = 0.055;

/// io_uring's page-cache copy draws one of two regimes: its kernel workers (io-wq)
/// running beside the submitting thread on another CPU, or not. Here qd4 drew
/// 5.4–5.7 GB/s (×1.15 read-write/1MiB) or 3.9–4.2 (×0.83), passes of one run in
/// either, and 4.4 with the measuring thread pinned (`--cpu 0`); its move against its
/// sweep was within 17% in 90% of 64 runs and 25% in 95%. Its floor stays one
/// draw's, however many passes `run` pools: the answer never rests on which regime its
/// draws caught ([`advice::Ranking::anchor`]: near the best is judged from the best of
/// the others).
pub const RERUN_NOISE_IO_URING_COPY: f64 = 0.22;
use anyhow::Result;

type Typed<'a> = (&'a Measurement, Params);

/// (file size, cache state, durability) of one ranked table.
type Key = (u64, Cache, Durability);

fn key(p: &Params) -> Key {
    (p.file_size, p.cache, p.durability)
}

/// Ranked grids, in run order of (size, cache, durability).
pub fn grids(rows: &[&Measurement], env: &Environment, st: &Style) -> Vec<Grid> {
    let all = with_params::<Params>(rows);
    let mut groups: Vec<(Key, Vec<Typed>)> = Vec::new();
    for t in all.iter().cloned() {
        let k = key(&t.1);
        match groups.iter_mut().find(|g| g.0 == k) {
            Some(g) => g.1.push(t),
            None => groups.push((k, vec![t])),
        }
    }
    groups
        .into_iter()
        .map(|(k, ts)| {
            let mut g = grid(k, ts, st);
            g.footnotes.extend(
                machine_notes(&all, k, env)
                    .into_iter()
                    .map(|n| format!("note: {n}")),
            );
            g
        })
        .collect()
}

/// What the machine may have done to the figures of one table: a copy without fsync
/// larger than the dirty-page threshold (writeback and throttling inside the timing),
/// and cold figures too fast for the disk (a cache below the guest served them).
fn machine_notes(all: &[Typed], (size, cache, dur): Key, env: &Environment) -> Vec<String> {
    let mut out = Vec::new();
    if dur == Durability::None
        && let Some(t) = &env.tuning
    {
        let avail = env.memory_available_bytes;
        if let Some(limit) = t.background_threshold(avail).filter(|&l| size > l) {
            let throttle = t.throttle_threshold(avail);
            out.push(format!(
                "{} exceeds the dirty-page threshold for background writeback ({}{}): writeback runs during the copy, so this is not a page-cache-only figure",
                format_size(size),
                format_size(limit),
                throttle
                    .filter(|&l| size > l)
                    .map_or(String::new(), |l| format!(
                        "; writers are throttled from {}",
                        format_size(l)
                    ))
            ));
        }
    }
    if cache == Cache::Cold {
        out.extend(cold_notes(all, (size, cache, dur)));
    }
    out
}

/// What the cold rows of one table really measured: rows whose eviction did not take
/// (some of the source stayed cached: their own warning says how much) apart from rows
/// evicted as verified that still ran faster than half their warm figure (a cache below
/// the guest served them).
fn cold_notes(all: &[Typed], (size, _, dur): Key) -> Vec<String> {
    let cold: Vec<&Typed> = all
        .iter()
        .filter(|t| key(&t.1) == (size, Cache::Cold, dur) && t.0.is_ok())
        .collect();
    let cached = |t: &Typed| {
        t.0.derived_as::<Derived>()
            .max_resident_fraction
            .is_some_and(|f| f > 0.0)
    };
    let mut out = Vec::new();
    let warm_only = cold.iter().filter(|t| cached(t)).count();
    if warm_only > 0 {
        out.push(format!(
            "{warm_only} of the cold rows are not cold: eviction did not take (part of the source stayed in the page cache; each row's warning says how much)"
        ));
    }
    let fast: Vec<String> = cold
        .iter()
        .filter(|cold| !cached(cold))
        .filter_map(|cold| {
            let warm = all.iter().find(|w| {
                key(&w.1) == (size, Cache::Warm, dur) && w.1.variant == cold.1.variant && w.0.is_ok()
            })?;
            (cold.0.median > 0.5 * warm.0.median).then(|| {
                format!(
                    "{} ({} GB/s cold, {} warm)",
                    cold.1.variant,
                    format_gbps(cold.0.median),
                    format_gbps(warm.0.median)
                )
            })
        })
        .collect();
    if let Some(example) = fast.first() {
        out.push(format!(
            "{} of the cold rows ran faster than half their warm figure after verified eviction (e.g. {example}): a cache below the guest (the VM host's page cache, a disk cache) served them, not the disk",
            fast.len()
        ));
    }
    out
}

const HEADERS: [&str; 14] = [
    "#",
    "method",
    "median time",
    "best time",
    "GB/s (10^9 B/s)",
    "95% CI",
    "best GB/s",
    "× fastest",
    "CPU ms",
    "usr / sys ms",
    "vol / invol cs",
    "faults",
    "blocks in / out",
    "durable",
];

/// One copy row: rank, variant, times, throughput with its CI, × the best, CPU,
/// context switches, faults, blocks and durability ("-" for a row not measured).
fn row(m: &Measurement, p: &Params, rank: usize, best: f64) -> Vec<String> {
    if !m.is_ok() {
        let mut r = vec!["-".into(), p.variant.clone(), m.status.name().into()];
        r.resize(HEADERS.len(), "-".into());
        return r;
    }
    let d: Derived = m.derived_as();
    let f = |v: Option<f64>| v.unwrap_or(f64::NAN);
    let pair = |a: Option<f64>, b: Option<f64>| format!("{} / {}", sig3(f(a)), sig3(f(b)));
    let ms = |v: Option<f64>| v.map(|s| s * 1e3);
    vec![
        rank.to_string(),
        p.variant.clone(),
        format_ns(f(d.median_s) * 1e9),
        format_ns(f(d.best_s) * 1e9),
        format_gbps(m.median),
        ci_text(m, &format_gbps),
        format_gbps(m.max),
        if m.median > 0.0 {
            format!("{}×", sig3(best / m.median))
        } else {
            "-".into()
        },
        sig3(f(ms(d.user_s_per_copy)) + f(ms(d.sys_s_per_copy))),
        pair(ms(d.user_s_per_copy), ms(d.sys_s_per_copy)),
        pair(d.voluntary_cs_per_copy, d.involuntary_cs_per_copy),
        sig3(f(d.minor_faults_per_copy)),
        pair(d.blocks_in_per_copy, d.blocks_out_per_copy),
        if p.durability.durable() {
            "yes"
        } else {
            "not durable"
        }
        .to_string(),
    ]
}

/// Left out first when the terminal is narrow (the title says the durability).
const OPTIONAL: [&str; 7] = [
    "durable",
    "blocks in / out",
    "faults",
    "usr / sys ms",
    "best GB/s",
    "best time",
    "median time",
];

fn grid((size, cache, dur): Key, mut ts: Vec<Typed>, st: &Style) -> Grid {
    ts.sort_by(|a, b| {
        b.0.is_ok()
            .cmp(&a.0.is_ok())
            .then(b.0.median.total_cmp(&a.0.median))
    });
    let best = ts.iter().find(|t| t.0.is_ok()).map_or(0.0, |t| t.0.median);
    let mut rank = 0;
    let rows = ts
        .iter()
        .map(|(m, p)| {
            if m.is_ok() {
                rank += 1;
            }
            row(m, p, rank, best)
        })
        .collect();
    let mut g = Grid::numeric(
        format!(
            "copy: {} file, {} source, durability {} — fastest first",
            format_size(size),
            cache.name(),
            dur.name()
        ),
        &HEADERS,
        rows,
    )
    .optional(&OPTIONAL);
    g.best_row = ts.first().filter(|t| t.0.is_ok()).map(|_| 0);
    let ok: Vec<&Typed> = ts.iter().filter(|t| t.0.is_ok()).collect();
    if let Some((_, p)) = ok.first() {
        if let Some(c) = &p.cache_observed {
            g.footnotes
                .push(format!("page cache: {c}; eviction: {}", p.eviction));
        }
        let samples = ok.iter().map(|t| t.0.samples);
        g.footnotes.push(format!(
            "samples: {}–{} per method (interleaved round-robin); CPU, context switches, faults and blocks are per copy",
            samples.clone().min().unwrap_or(0),
            samples.max().unwrap_or(0)
        ));
    }
    let mut states: Vec<&str> = ok.iter().map(|t| t.1.durability_state.as_str()).collect();
    states.sort_unstable();
    states.dedup();
    g.footnotes
        .extend(states.iter().map(|s| format!("durability: {s}")));
    g.footnotes
        .extend(ts.iter().filter(|t| !t.0.is_ok()).map(|(m, p)| {
            format!(
                "{} {}: {}",
                p.variant,
                m.status.name(),
                m.reason.as_deref().unwrap_or("?")
            )
        }));
    let ms: Vec<&Measurement> = ts.iter().map(|t| t.0).collect();
    g.footnotes.extend(warnings(&ms, st.verbose));
    g
}

fn fastest<'a, 'b>(rows: impl Iterator<Item = &'b Typed<'a>>) -> Option<&'b Typed<'a>> {
    rows.filter(|t| t.0.is_ok())
        .max_by(|a, b| a.0.median.total_cmp(&b.0.median))
}

/// The fastest variant of each method in each (cache, durability), for the largest
/// file size, as bars.
pub fn plots(rows: &[&Measurement]) -> Result<Vec<Plot>> {
    let ts = with_params::<Params>(rows);
    let size = ts.iter().map(|t| t.1.file_size).max();
    let here: Vec<&Typed> = ts.iter().filter(|t| Some(t.1.file_size) == size).collect();
    let panels = distinct(here.iter().map(|t| (t.1.cache, t.1.durability)))
        .into_iter()
        .map(|(cache, dur)| {
            // The best variant of each method; a method with no measured variant stays
            // as an empty row saying why.
            let mut best: Vec<&Typed> = Vec::new();
            for t in here
                .iter()
                .filter(|t| (t.1.cache, t.1.durability) == (cache, dur))
            {
                match best.iter().position(|o| o.1.method == t.1.method) {
                    Some(i) if better(t, best[i]) => best[i] = t,
                    Some(_) => {}
                    None => best.push(t),
                }
            }
            plot::Panel {
                title: format!("{} source, durability {}", cache.name(), dur.name()),
                bars: best
                    .iter()
                    .map(|(m, p)| plot::RankedBar {
                        label: if m.is_ok() {
                            p.variant.clone()
                        } else {
                            p.method.name().to_string()
                        },
                        family: p.method.family(),
                        value: m
                            .is_ok()
                            .then(|| (m.median * 1e-9, m.ci95[0] * 1e-9, m.ci95[1] * 1e-9)),
                        missing: format!(
                            "{}: {}",
                            m.status.name(),
                            m.reason.as_deref().unwrap_or("?")
                        ),
                    })
                    .collect(),
            }
        })
        .collect::<Vec<_>>();
    let size = size.map_or("?".into(), format_size);
    Ok(vec![Plot {
        probe: String::new(),
        name: "copy".into(),
        title: format!(
            "copy: {size} file, best variant of each method, ranked per cache state and durability (GB/s, median with 95% CI)"
        ),
        svg: plot::ranked_panels(
            &format!("copy: {size} file, best variant of each method (GB/s, fastest first)"),
            &panels,
            &Method::FAMILIES,
            "GB/s (10^9 B/s)",
        )?,
    }])
}

/// Whether `a` is a better row of its method than `b`: measured beats unmeasured, then
/// the higher median.
fn better(a: &Typed, b: &Typed) -> bool {
    match (a.0.is_ok(), b.0.is_ok()) {
        (true, false) => true,
        (false, _) => false,
        (true, true) => a.0.median > b.0.median,
    }
}

/// Advice lines for all copy rows of a run, per file size and cache state.
pub fn advice(rows: &[&Measurement]) -> Vec<String> {
    let ts = with_params::<Params>(rows);
    let keys = distinct(ts.iter().map(|t| (t.1.file_size, t.1.cache)));
    let mut out = Vec::new();
    for (size, cache) in keys {
        let here = |dur: Durability| ts.iter().filter(move |t| key(&t.1) == (size, cache, dur));
        let what = format!("copy ({} file, {} source)", format_size(size), cache.name());
        if let (Some(all), Some(mm)) = (
            fastest(here(Durability::None)),
            fastest(here(Durability::None).filter(|t| t.1.method.is_mmap())),
        ) && mm.0.median > 0.0
        {
            out.push(format!(
                "{what}: the best mmap method ({}, {} GB/s) lags the fastest ({}, {} GB/s) by ×{}",
                mm.1.variant,
                format_gbps(mm.0.median),
                all.1.variant,
                format_gbps(all.0.median),
                sig3(all.0.median / mm.0.median)
            ));
        }
    }
    out
}

/// A variant's cost for choosing among tied ones: its method's complexity, then its
/// buffer size (a smaller buffer is cheaper).
fn cost(p: &Params) -> f64 {
    p.method.complexity() as f64 * 1e15 + p.buffer_size.unwrap_or(0) as f64
}

/// The copy-method topics: durability, id part, topic, the summary's operation, its
/// caveat.
const METHOD_TOPICS: [(Durability, &str, &str, &str, &str); 2] = [
    (
        Durability::Fsync,
        "durable",
        "file copy method (durable)",
        "copying a file durably (fsync)",
        "fsync inside the timing: the copy reached the disk (or the VM host's cache below it)",
    ),
    (
        Durability::None,
        "page-cache",
        "file copy method (page cache)",
        "copying a file (no fsync)",
        "no fsync: the copy may sit in the page cache when the timing ends",
    ),
];

/// Per file size and cache state: the durable copy method, the page-cache copy method
/// (each the simplest of those tied with the fastest, see [`Method::complexity`]), and
/// the buffer for a read/write loop when more than one was measured.
pub fn recommend(rows: &[&Measurement], env: &Environment) -> Vec<Recommendation> {
    let ts = with_params::<Params>(rows);
    let keys = distinct(ts.iter().map(|t| (t.1.file_size, t.1.cache)));
    let mut out = Vec::new();
    for (n, (size, cache)) in keys.into_iter().enumerate() {
        let here = |dur: Durability| ts.iter().filter(move |t| key(&t.1) == (size, cache, dur));
        let scope = format!("{} file, {} source", format_size(size), cache.name());
        let source = here(Durability::None)
            .chain(here(Durability::Fsync))
            .next()
            .map_or(String::new(), |t| t.1.eviction.clone());
        let source_caveat = match cache {
            Cache::Warm => {
                "source warm: in the page cache, verified with mincore before every sample"
                    .to_string()
            }
            Cache::Cold => format!("source cold: {source}"),
        };
        let (size_id, cache_id) = (format_size(size), cache.name());
        for (dur, id, topic, operation, caveat) in METHOD_TOPICS {
            let options: Vec<(String, Opt)> = here(dur)
                .map(|t| {
                    let draws = t.1.method == Method::IoUring && dur == Durability::None;
                    let floor = (draws && cache == Cache::Warm).then_some(RERUN_NOISE_IO_URING_COPY);
                    let o = Opt { m: t.0, cost: cost(&t.1), work: t.1.work(), floor };
                    (t.1.variant.clone(), o)
                })
                .collect();
            let r = advice::methods(
                Words {
                    id: advice::id(&["method", id, &size_id, cache_id]),
                    topic,
                    rerun_noise: match (dur, cache) {
                        (Durability::None, Cache::Warm) => RERUN_NOISE_PAGE_CACHE_COPY,
                        (Durability::None, Cache::Cold) => advice::RERUN_NOISE_PASS,
                        _ => advice::RERUN_NOISE_DISK,
                    },
                    scope: scope.clone(),
                    operation: (n == 0).then_some(operation),
                    noun: "",
                    caveats: [
                        caveat.to_string(),
                        source_caveat.clone(),
                        "among the methods tied with the fastest, the simplest to write and most portable is named".into(),
                    ]
                    .into_iter()
                    .chain(
                        machine_notes(&ts, (size, cache, dur), env),
                    )
                    .collect(),
                },
                &options,
                Some("read-write/1MiB"),
            );
            out.extend(r);
        }
        let rw: Vec<(u64, &Measurement)> = here(Durability::None)
            .filter(|t| t.1.method == Method::ReadWrite)
            .filter_map(|t| Some((t.1.buffer_size?, t.0)))
            .collect();
        if rw.len() >= 2 {
            out.extend(advice::sizes(
                Words {
                    id: advice::id(&["buffer", &size_id, cache_id]),
                    topic: "copy loop buffer",
                    rerun_noise: advice::RERUN_NOISE_PASS,
                    scope: format!("read/write loop, {scope}"),
                    operation: None,
                    noun: "buffers",
                    caveats: vec![source_caveat.clone()],
                },
                &rw,
                64 << 10,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy row of `variant` in `cache` state at `gbps`, the source cached up to
    /// `resident` (share) during its samples.
    fn row(variant: &str, cache: Cache, gbps: f64, resident: f64) -> (Measurement, Params) {
        let mut m = crate::advice::testing::m(variant, gbps * 1e9, 0.01);
        m.derived = serde_json::json!({ "max_resident_fraction": resident })
            .as_object()
            .unwrap()
            .clone();
        let p: Params = serde_json::from_value(serde_json::json!({
            "method": "read-write", "variant": variant, "file_size": 1 << 20, "sparse": false,
            "cache": cache.name(), "eviction": "", "durability": "none", "durability_state": "",
        }))
        .unwrap();
        (m, p)
    }

    /// A cold row whose eviction did not take is said to be not cold, not served by a
    /// cache below the guest; a fast row evicted as verified still is.
    #[test]
    fn cold_rows_not_evicted_are_told_apart_from_rows_a_lower_cache_served() {
        let rows = [
            row("a", Cache::Warm, 4.0, 0.0),
            row("b", Cache::Warm, 4.0, 0.0),
            row("a", Cache::Cold, 4.0, 1.0),
            row("b", Cache::Cold, 3.0, 0.0),
        ];
        let all: Vec<Typed> = rows.iter().map(|(m, p)| (m, p.clone())).collect();
        let notes = cold_notes(&all, (1 << 20, Cache::Cold, Durability::None));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("1 of the cold rows are not cold: eviction did not take"));
        assert!(notes[1].starts_with("1 of the cold rows ran faster than half their warm figure after verified eviction (e.g. b "));
        // With every cold row cached, nothing is blamed on a cache below the guest.
        let all: Vec<Typed> = rows
            .iter()
            .map(|(m, p)| (m, p.clone()))
            .filter(|t| t.1.variant == "a")
            .collect();
        let notes = cold_notes(&all, (1 << 20, Cache::Cold, Durability::None));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!notes[0].contains("below the guest"));
    }
}
