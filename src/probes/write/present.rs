//! The write tables (one per durability mode, the mirror of seed 000's), the
//! throughput-versus-block plot, and the advice: the block size to write in for each
//! durability mode, and what durability costs at the best block size.

use super::super::sweep;
use super::{Durability, Method, Params};
use crate::advice::Recommendation;
use crate::advice::{self, Words};
use crate::names::Named;
use crate::present::Style;
use crate::present::grid::notes_and_warnings;
use crate::present::{Grid, Plot, distinct, with_params};
use crate::results::Measurement;
use crate::sys::machine::Environment;
use crate::units::{format_gbps, format_size, sig3};
use anyhow::Result;

type Typed<'a> = (&'a Measurement, Params);

/// One grid per durability mode, in run order.
pub fn grids(rows: &[&Measurement], st: &Style) -> Vec<Grid> {
    let all = with_params::<Params>(rows);
    let modes = distinct(all.iter().map(|t| t.1.durability));
    modes
        .into_iter()
        .map(|dur| {
            let ts: Vec<&Typed> = all.iter().filter(|t| t.1.durability == dur).collect();
            grid(dur, &ts, st)
        })
        .collect()
}

fn grid(dur: Durability, ts: &[&Typed], st: &Style) -> Grid {
    let body = ts
        .iter()
        .map(|(m, p)| {
            let mut row = vec![p.method.name().to_string(), format_size(p.block_size)];
            row.extend(sweep::cells(m, true, true));
            row
        })
        .collect();
    let first = &ts[0].1;
    let what = match dur {
        Durability::None => "into the page cache",
        Durability::Fsync => "with fsync at the end of each pass",
        Durability::Dsync => "with O_DSYNC (every write durable)",
    };
    let mut g = Grid::numeric(
        format!(
            "write: {} pre-allocated file rewritten in place {what}, by block size (durability {})",
            format_size(first.file_size),
            dur.name()
        ),
        &[
            "method",
            "block",
            "GB/s (10^9 B/s)",
            "95% CI",
            "s / 10 GiB",
            "ns/call",
            "fits in",
            "usr / sys s/GiB",
            "vol / invol cs/GiB",
        ],
        body,
    )
    .optional(&["s / 10 GiB", "fits in", "ns/call"])
    .best_by(|i| ts.get(i).filter(|t| t.0.is_ok()).map(|t| t.0.median));
    g.footnotes
        .push(format!("page cache: {}", first.page_cache));
    g.footnotes
        .push(format!("durability: {}", first.durability_state));
    let ms: Vec<&Measurement> = ts.iter().map(|t| t.0).collect();
    g.footnotes.extend(notes_and_warnings(
        &ms,
        &|m| {
            m.params_as::<Params>()
                .map_or(m.case.clone(), |p| p.method.name().to_string())
        },
        st.verbose,
    ));
    g
}

pub fn plots(rows: &[&Measurement], env: &Environment) -> Result<Vec<Plot>> {
    let pts = with_params::<Params>(rows)
        .into_iter()
        .map(|(m, p)| {
            (
                format!("{} {}", p.method.name(), p.durability.name()),
                p.block_size,
                m,
            )
        })
        .collect();
    Ok(vec![sweep::plot(
        ("write", "write: throughput by block size (file rewritten in place)"),
        pts,
        env,
        |m| match with_params::<Params>(&[m]).first() {
            Some((_, p)) => floor(p.durability),
            None => advice::RERUN_NOISE_MEMORY,
        },
    )?])
}

/// The rerun floor of a write row: the page cache's without durability, the disk's
/// with it.
fn floor(dur: Durability) -> f64 {
    if dur == Durability::None {
        advice::RERUN_NOISE_MEMORY
    } else {
        advice::RERUN_NOISE_DISK
    }
}

/// Per (method, durability): the sweep's advice; per method: what durability costs at
/// the block size that is best without it.
pub fn advice(rows: &[&Measurement], env: &Environment) -> Vec<String> {
    let all: Vec<Typed> = with_params::<Params>(rows)
        .into_iter()
        .filter(|t| t.0.is_ok())
        .collect();
    let series = distinct(all.iter().map(|t| (t.1.method, t.1.durability)));
    let caches = env.data_caches();
    let mut out = Vec::new();
    for &(method, dur) in &series {
        let pts: Vec<(u64, &Measurement)> = all
            .iter()
            .filter(|t| t.1.method == method && t.1.durability == dur)
            .map(|t| (t.1.block_size, t.0))
            .collect();
        out.extend(sweep::advice(
            &format!("write ({}, durability {})", method.name(), dur.name()),
            &pts,
            &caches,
            true,
        ));
    }
    let mut methods: Vec<Method> = series.iter().map(|s| s.0).collect();
    methods.dedup();
    for method in methods {
        out.extend(durability_cost(method, &all));
    }
    out
}

/// At the block size where `none` is fastest: each durable mode's throughput and how
/// many times slower it is than writing into the page cache alone.
fn durability_cost(method: Method, all: &[Typed]) -> Option<String> {
    let of = |dur: Durability| {
        all.iter()
            .filter(move |t| t.1.method == method && t.1.durability == dur)
    };
    let best = of(Durability::None).max_by(|a, b| a.0.median.total_cmp(&b.0.median))?;
    let block = best.1.block_size;
    let parts: Vec<String> = [Durability::Fsync, Durability::Dsync]
        .into_iter()
        .filter_map(|dur| {
            let t = of(dur).find(|t| t.1.block_size == block)?;
            (t.0.median > 0.0).then(|| {
                format!(
                    "{} {} GB/s (×{} slower)",
                    dur.name(),
                    format_gbps(t.0.median),
                    sig3(best.0.median / t.0.median)
                )
            })
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "write ({}): durability costs, at {} blocks: page cache alone {} GB/s; {}",
        method.name(),
        format_size(block),
        format_gbps(best.0.median),
        parts.join("; ")
    ))
}

/// The block to write in, per (method, durability): the smallest tied with the best.
pub fn recommend(rows: &[&Measurement]) -> Vec<Recommendation> {
    let all: Vec<Typed> = with_params::<Params>(rows);
    let series = distinct(all.iter().map(|t| (t.1.method, t.1.durability)));
    series
        .into_iter()
        .filter_map(|(method, dur)| {
            let pts: Vec<(u64, &Measurement)> = all
                .iter()
                .filter(|t| t.1.method == method && t.1.durability == dur)
                .map(|t| (t.1.block_size, t.0))
                .collect();
            let file = all.first().map_or(0, |t| t.1.file_size);
            let (operation, caveat) = match dur {
                Durability::None => (
                    "writing a file",
                    "durability none: the data reached the page cache only, not the disk",
                ),
                Durability::Fsync => (
                    "writing a file durably (fsync)",
                    "durability fsync: one fsync per pass inside the timing; the disk and its cache (here possibly the VM host's) set the figure",
                ),
                Durability::Dsync => (
                    "writing a file durably (O_DSYNC)",
                    "durability dsync: every write waits for the disk; the disk and its cache set the figure",
                ),
            };
            sweep::recommend(
                Words {
                    id: advice::id(&["buffer", method.name(), dur.name()]),
                    topic: "write loop buffer",
                    rerun_noise: floor(dur),
                    scope: format!(
                        "{}, durability {}, {} file rewritten in place",
                        method.name(),
                        dur.name(),
                        format_size(file)
                    ),
                    operation: (method == Method::Write).then_some(operation),
                    noun: "blocks",
                    caveats: vec![caveat.into()],
                },
                &pts,
            )
        })
        .collect()
}
