//! The read table (seed 000's), its throughput-versus-block plot and its advice.

use super::super::sweep;
use super::{Method, Params};
use crate::present::grid::notes_and_warnings;
use crate::present::recommend::Words;
use crate::present::{Grid, Named, Plot, Recommendation, with_params};
use crate::results::Measurement;
use crate::sys::machine::Environment;
use crate::units::format_size;
use anyhow::Result;

pub fn grid(rows: &[&Measurement]) -> Grid {
    let typed = with_params::<Params>(rows);
    let body = typed
        .iter()
        .map(|(m, p)| {
            let mut row = vec![p.method.name().to_string(), format_size(p.block_size)];
            row.extend(sweep::cells(m, false, false));
            row
        })
        .collect();
    let first = typed.first().map(|(_, p)| p);
    let mut g = Grid::numeric(
        format!(
            "read: {} file from the page cache, by block size (seed 000)",
            format_size(first.map_or(0, |p| p.file_size))
        ),
        &[
            "method",
            "block",
            "GB/s (10^9 B/s)",
            "95% CI",
            "s / 10 GiB",
            "ns/call",
            "fits in",
            "vol cs/GiB",
            "invol cs/GiB",
        ],
        body,
    );
    if let Some(p) = first {
        g.footnotes.push(format!("page cache: {}", p.page_cache));
    }
    g.footnotes.extend(notes_and_warnings(rows, &|m| {
        m.params_as::<Params>()
            .map_or(m.case.clone(), |p| p.method.name().to_string())
    }));
    g
}

pub fn plots(rows: &[&Measurement], env: &Environment) -> Result<Vec<Plot>> {
    let pts = with_params::<Params>(rows)
        .into_iter()
        .map(|(m, p)| (p.method.name().to_string(), p.block_size, m.median))
        .collect();
    Ok(vec![sweep::plot(
        "read",
        "read: throughput by block size (page cache)",
        pts,
        env,
    )?])
}

/// Advice per method, in the order the methods first appear.
pub fn advice(rows: &[&Measurement], env: &Environment) -> Vec<String> {
    let typed = with_params::<Params>(rows);
    let mut methods: Vec<Method> = Vec::new();
    for (_, p) in &typed {
        if !methods.contains(&p.method) {
            methods.push(p.method);
        }
    }
    let caches = env.data_caches();
    methods
        .into_iter()
        .flat_map(|method| {
            let series: Vec<(u64, &Measurement)> = typed
                .iter()
                .filter(|(_, p)| p.method == method)
                .map(|(m, p)| (p.block_size, *m))
                .collect();
            sweep::advice(
                &format!("read ({})", method.name()),
                &series,
                &caches,
                method != Method::Mmap,
            )
        })
        .collect()
}

/// The read buffer to use, per method: the smallest block tied with the best.
pub fn recommend(rows: &[&Measurement]) -> Vec<Recommendation> {
    let typed = with_params::<Params>(rows);
    let mut methods: Vec<Method> = Vec::new();
    for (_, p) in &typed {
        if !methods.contains(&p.method) {
            methods.push(p.method);
        }
    }
    methods
        .into_iter()
        .filter_map(|method| {
            let series: Vec<(u64, &Measurement)> = typed
                .iter()
                .filter(|(_, p)| p.method == method)
                .map(|(m, p)| (p.block_size, *m))
                .collect();
            let file = typed.first().map_or(0, |t| t.1.file_size);
            sweep::recommend(
                Words {
                    topic: "read loop buffer",
                    scope: format!("{}, {} file in the page cache", method.name(), format_size(file)),
                    operation: (method == Method::Read).then_some("reading a file sequentially"),
                    noun: if method == Method::Mmap { "copies out of the mapping" } else { "buffers" },
                    caveats: vec![
                        "page cache warm (verified with mincore); reading from a cold disk is bound by the device, where larger requests matter more".into(),
                    ],
                },
                &series,
            )
        })
        .collect()
}
