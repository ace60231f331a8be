//! What the block-size sweeps (read, write) share: the sweep itself, where a block sits
//! against the caches, the figures derived per row, the throughput-versus-block plot and
//! the advice that reads a sweep (smallest block within 5% of the best, where the
//! throughput falls off, one call's fixed cost). Seed 000's method, for either direction.

use super::Context;
use crate::advice::Recommendation;
use crate::advice::{self, Words};
use crate::harness::Sampled;
use crate::present::grid::ci_text;
use crate::present::{Plot, plot};
use crate::results::{Measurement, Metric, measurement::to_map};
use crate::sys::machine::Environment;
use crate::units::{format_gbps, format_size, sig3};
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// `from`, 2·`from`, … up to `to`.
pub fn powers_of_two(from: u64, to: u64) -> Vec<u64> {
    std::iter::successors(Some(from), |b| b.checked_mul(2))
        .take_while(|&b| b <= to)
        .collect()
}

/// Which cache level a block of `bytes` fits in: `L1`, `L2`, `L3` or `RAM`.
pub fn fits_in(env: &Environment, bytes: u64) -> String {
    env.data_caches()
        .into_iter()
        .find(|&(_, size)| bytes <= size)
        .map_or_else(|| "RAM".to_string(), |(l, _)| format!("L{l}"))
}

/// Largest block size a sweep accepts.
pub const MAX_BLOCK: u64 = 1 << 30;

/// Checks a sweep's sizes against this machine's memory (usage errors): the file must
/// fit in half the available memory (it has to stay in the page cache), every block in
/// 1 B … min(1 GiB, a quarter of it).
pub fn check_sizes(env: &Environment, file_size: u64, blocks: &[u64]) -> Result<()> {
    let avail = match crate::sys::machine::memory_available() {
        0 => env.memory_available_bytes,
        fresh => fresh,
    };
    if file_size == 0 || file_size > avail / 2 {
        return crate::error::usage(format!(
            "--file-size {} cannot stay in the page cache: only {} of memory is available (limit: half)",
            format_size(file_size),
            format_size(avail)
        ));
    }
    let max = MAX_BLOCK.min(avail / 4);
    match blocks.iter().find(|&&b| b == 0 || b > max) {
        Some(0) => crate::error::usage("block size 0 B: a block needs at least one byte"),
        Some(&b) => crate::error::usage(format!(
            "block size {} is too large for this machine (at most {})",
            format_size(b),
            format_size(max)
        )),
        None => Ok(()),
    }
}

/// Warnings for a file that was not fully resident before a case, or lost pages
/// during it: `(before, after)` resident pages of `pages`.
pub fn residency_warnings((before, after): (usize, usize), pages: usize) -> Vec<String> {
    let mut out = Vec::new();
    if before != pages {
        out.push(format!(
            "not fully in the page cache: {before}/{pages} pages resident before the case even after re-reading it (memory pressure); the figure mixes cached and uncached pages"
        ));
    }
    if after != pages {
        out.push(format!(
            "pages left the page cache during the case: {after}/{pages} resident afterwards"
        ));
    }
    out
}

/// The figures a sweep row derives from its median. Keys are a contract (JSON
/// `derived`); the CPU figures are absent from rows that predate them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Derived {
    pub s_per_10gib: Option<f64>,
    pub ns_per_call: Option<f64>,
    pub calls_per_pass: Option<f64>,
    pub fits_in: Option<String>,
    pub voluntary_cs_per_gib: Option<f64>,
    pub involuntary_cs_per_gib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_s_per_gib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sys_s_per_gib: Option<f64>,
}

impl Derived {
    /// Figures of a measured row of `size`-byte passes in `block` blocks, `calls` calls
    /// per pass; `cpu` adds user and system seconds per GiB.
    pub fn of(
        m: &Measurement,
        env: &Environment,
        size: u64,
        block: u64,
        calls: u64,
        cpu: bool,
    ) -> Derived {
        let pass_ns = size as f64 * 1e9 / m.median;
        let per = &m.rusage.normalised;
        Derived {
            s_per_10gib: Some(10.0 * (1u64 << 30) as f64 / m.median),
            ns_per_call: Some(pass_ns / calls.max(1) as f64),
            calls_per_pass: Some(calls as f64),
            fits_in: Some(fits_in(env, block)),
            voluntary_cs_per_gib: Some(per.voluntary_cs),
            involuntary_cs_per_gib: Some(per.involuntary_cs),
            user_s_per_gib: cpu.then_some(per.user_s),
            sys_s_per_gib: cpu.then_some(per.sys_s),
        }
    }
}

/// What a sweep case was and what mincore saw around it.
pub struct Case {
    /// Bytes per pass (the file size) and per call.
    pub size: u64,
    pub block: u64,
    /// Calls per pass, for ns per call.
    pub calls: u64,
    /// Pages resident before and after the case, of `pages`.
    pub resident: (usize, usize),
    pub pages: usize,
    /// Whether the row carries CPU seconds per GiB.
    pub cpu: bool,
}

impl Case {
    /// The `page_cache` param: what mincore saw.
    pub fn page_cache(&self) -> String {
        let ((before, after), pages) = (self.resident, self.pages);
        format!("resident {before}/{pages} pages before, {after}/{pages} after (mincore)")
    }

    /// The row: bytes/s over whole passes, residency warnings, derived figures.
    pub fn measurement(
        &self,
        ctx: &Context,
        (probe, case): (&str, &str),
        params: impl Serialize,
        sampled: &Sampled,
        note: &str,
    ) -> Result<Measurement> {
        let mut m = Measurement::from_sampled(
            probe,
            case,
            params,
            Metric::Throughput {
                bytes_per_iter: self.size as f64,
            },
            sampled,
            &ctx.overhead,
            note,
        )?;
        m.warnings
            .extend(residency_warnings(self.resident, self.pages));
        m.derived = to_map(&Derived::of(
            &m, ctx.env, self.size, self.block, self.calls, self.cpu,
        ));
        Ok(m)
    }
}

/// A sweep row's table cells after its method and block: GB/s, CI, s / 10 GiB,
/// ns/call, cache fit, then (with `cpu`) user / system seconds, then voluntary and
/// involuntary context switches (`paired` in one cell, else two).
pub fn cells(m: &Measurement, cpu: bool, paired: bool) -> Vec<String> {
    let d: Derived = m.derived_as();
    let f = |v: Option<f64>| sig3(v.unwrap_or(f64::NAN));
    let mut out = vec![
        format_gbps(m.median),
        ci_text(m, &format_gbps),
        f(d.s_per_10gib),
        f(d.ns_per_call),
        d.fits_in.clone().unwrap_or_else(|| "?".into()),
    ];
    if cpu {
        out.push(format!("{} / {}", f(d.user_s_per_gib), f(d.sys_s_per_gib)));
    }
    let (v, i) = (f(d.voluntary_cs_per_gib), f(d.involuntary_cs_per_gib));
    if paired {
        out.push(format!("{v} / {i}"));
    } else {
        out.extend([v, i]);
    }
    out
}

/// Each series' size answer (its plateau and knee, `advice::knee_and_plateau`), for its
/// plot. `pts` = (series, size, its row); `floor` gives a row's rerun floor, as the
/// probe's recommendation takes it (the plateau's tolerance follows it).
pub fn spans(
    pts: &[(String, u64, &Measurement)],
    floor: impl Fn(&Measurement) -> f64,
) -> Vec<plot::Span> {
    let mut names: Vec<&String> = Vec::new();
    for (s, _, _) in pts {
        if !names.contains(&s) {
            names.push(s);
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let rows: Vec<(u64, &Measurement)> = pts
                .iter()
                .filter(|(s, _, _)| s == name)
                .map(|&(_, b, m)| (b, m))
                .collect();
            let (knee, p) = advice::knee_and_plateau(&rows, floor(rows.first()?.1))?;
            Some(plot::Span {
                series: name.clone(),
                from: p.from,
                to: p.to,
                knee,
            })
        })
        .collect()
}

/// Throughput against block size, one line per series, the caches marked and each
/// series' plateau and knee drawn on it ([`spans`]). `pts` = (series, block size, its
/// row).
pub fn plot(
    (name, title): (&str, &str),
    pts: Vec<(String, u64, &Measurement)>,
    env: &Environment,
    floor: impl Fn(&Measurement) -> f64,
) -> Result<Plot> {
    let spans = spans(&pts, floor);
    let pts: Vec<plot::Point> = pts
        .into_iter()
        .filter(|(_, _, m)| m.is_ok())
        .map(|(s, b, m)| plot::Point::of(s, b, m))
        .collect();
    let marks: Vec<(String, u64)> = env
        .data_caches()
        .iter()
        .map(|&(level, size)| (format!("L{level} {}", format_size(size)), size))
        .collect();
    Ok(Plot {
        probe: String::new(),
        name: name.into(),
        title: format!("{title}, caches marked, each curve's plateau (pale band) and knee"),
        svg: plot::lines(title, "block size (log2 scale)", &pts, (&marks, &spans))?,
    })
}

/// The recommendation of one series of a sweep: the smallest block where a call's fixed
/// cost is at most 5% of its time (`advice::sizes`),
/// with its effect against 4 KiB.
pub fn recommend(w: Words, rows: &[(u64, &Measurement)]) -> Option<Recommendation> {
    advice::sizes(w, rows, 4096)
}

/// Observations from one series of a sweep (`what` prefixes every line, e.g. `read
/// (pread)`): where throughput falls off against the caches, and (when `per_call`) one
/// call's fixed cost in bytes copied at the best rate.
pub fn advice(
    what: &str,
    rows: &[(u64, &Measurement)],
    caches: &[(u8, u64)],
    per_call: bool,
) -> Vec<String> {
    let mut rows: Vec<(u64, &Measurement)> =
        rows.iter().copied().filter(|(_, m)| m.is_ok()).collect();
    rows.sort_by_key(|(b, _)| *b);
    let Some(&(best_b, best)) = rows.iter().max_by(|a, b| a.1.median.total_cmp(&b.1.median)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    out.push(format!("{what}: {}", falloff(&rows, best_b, best, caches)));
    // Seed 000's comparison: one call's fixed cost, in bytes copied at the best rate.
    if let Some(&(b0, m0)) = rows.first()
        && let Some(ns_call) = m0.derived_as::<Derived>().ns_per_call
        && per_call
    {
        let copy_ns = b0 as f64 / best.median * 1e9;
        let overhead = ns_call - copy_ns;
        if overhead > 0.0 {
            let eq_bytes = overhead * best.median / 1e9;
            out.push(format!(
                "{what}: one call's fixed cost is about {} ns, as much as copying {} at the best rate",
                sig3(overhead),
                format_size(eq_bytes.round() as u64)
            ));
        }
    }
    out
}

/// Where throughput first falls below 95% of the best after the best block size, and how
/// that block relates to the cache that holds it (seed 000: keep buffers under half of L2,
/// because the page-cache side and the user buffer share the cache).
fn falloff(
    rows: &[(u64, &Measurement)],
    best_b: u64,
    best: &Measurement,
    caches: &[(u8, u64)],
) -> String {
    let after: Vec<&(u64, &Measurement)> = rows.iter().filter(|(b, _)| *b > best_b).collect();
    let Some(&&(drop_b, drop_m)) = after.iter().find(|(_, m)| m.median < best.median * 0.95) else {
        return "throughput stays within 5% of the best above the best block size in this sweep"
            .into();
    };
    let place = |b: u64| -> String {
        match caches.iter().find(|&&(_, size)| b <= size) {
            Some(&(level, size)) => format!(
                "{}% of L{level} ({})",
                sig3(b as f64 / size as f64 * 100.0),
                format_size(size)
            ),
            None => "larger than every cache".into(),
        }
    };
    let mut text = format!(
        "throughput falls below 95% of the best from {} on ({} GB/s, −{}%), a block {}",
        format_size(drop_b),
        format_gbps(drop_m.median),
        sig3((1.0 - drop_m.median / best.median) * 100.0),
        place(drop_b)
    );
    if let Some(&&(last_b, last_m)) = after.last()
        && last_b != drop_b
    {
        text.push_str(&format!(
            "; at {} ({}) it is {} GB/s (−{}%)",
            format_size(last_b),
            place(last_b),
            format_gbps(last_m.median),
            sig3((1.0 - last_m.median / best.median) * 100.0)
        ));
    }
    text
}

/// The sizes one step past a sweep's edges, for each series (`key`) whose best row sits
/// at its largest measured size (the next size up, × `step`, at most `hi`) or at its
/// smallest (÷ `step`, at least `lo`): what `ioprobe run` measures once more so that a
/// choice at an edge is bracketed. Ascending, none already measured.
pub fn beyond_edges<K: PartialEq + Copy>(
    rows: &[(K, u64, &Measurement)],
    step: u64,
    (lo, hi): (u64, u64),
) -> Vec<u64> {
    let mut keys: Vec<K> = Vec::new();
    for r in rows {
        if !keys.contains(&r.0) {
            keys.push(r.0);
        }
    }
    let measured: Vec<u64> = rows.iter().map(|r| r.1).collect();
    let mut out: Vec<u64> = keys
        .into_iter()
        .filter_map(|k| {
            let series: Vec<&(K, u64, &Measurement)> = rows
                .iter()
                .filter(|r| r.0 == k && r.2.is_ok() && r.2.median > 0.0)
                .collect();
            let better = |a: &Measurement, b: &Measurement| {
                if a.unit.higher_is_better() {
                    a.median > b.median
                } else {
                    a.median < b.median
                }
            };
            let best = series
                .iter()
                .copied()
                .reduce(|b, r| if better(r.2, b.2) { r } else { b })?;
            let (min, max) = series
                .iter()
                .fold((u64::MAX, 0), |(a, b), r| (a.min(r.1), b.max(r.1)));
            if series.len() < 2 {
                None
            } else if best.1 == max && max.saturating_mul(step) <= hi {
                Some(max * step)
            } else if best.1 == min && min / step >= lo && min / step > 0 {
                Some(min / step)
            } else {
                None
            }
        })
        .filter(|s| !measured.contains(s))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_stop_at_the_bound() {
        assert_eq!(powers_of_two(1024, 8192), [1024, 2048, 4096, 8192]);
        assert_eq!(powers_of_two(1024, 1000), Vec::<u64>::new());
    }

    #[test]
    fn a_best_at_an_edge_extends_the_sweep_one_step() {
        let m = |v: f64| crate::advice::testing::m("x", v, 0.01);
        let (a, b, c) = (m(1.0), m(2.0), m(3.0));
        // Series 1 rises to its largest size; series 2 peaks inside.
        let rows = [
            (1, 4096u64, &a),
            (1, 65536, &b),
            (1, 1 << 20, &c),
            (2, 4096, &a),
            (2, 65536, &c),
            (2, 1 << 20, &b),
        ];
        assert_eq!(beyond_edges(&rows, 4, (1024, 256 << 20)), [4 << 20]);
        // Never past the bound; a falling series extends downwards.
        assert!(beyond_edges(&rows, 4, (1024, 2 << 20)).is_empty());
        let falling = [(1, 4096u64, &c), (1, 65536, &b), (1, 1 << 20, &a)];
        assert_eq!(beyond_edges(&falling, 4, (1024, 1 << 30)), [1024]);
    }
}
