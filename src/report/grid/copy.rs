//! Copy tables (seed 001's ranked table): one per file size, cache state and durability,
//! fastest first, with time (median and best), throughput, × the fastest, CPU seconds,
//! context switches and blocks per copy; unsupported and failed methods last, with why.

use super::{Grid, notes_and_warnings};
use crate::results::Measurement;
use crate::units::{format_gbps, format_ns, format_size, sig3};

fn d(m: &Measurement, k: &str) -> f64 {
    m.derived_f64(k).unwrap_or(f64::NAN)
}

/// (file size, cache state, durability) of one ranked table.
type Key = (u64, String, String);

/// Ranked grids, in run order of (size, cache, durability).
pub fn copy_grids(rows: &[&Measurement]) -> Vec<Grid> {
    let mut groups: Vec<(Key, Vec<&Measurement>)> = Vec::new();
    for m in rows {
        let key = (
            m.param_u64("file_size").unwrap_or(0),
            m.param_str("cache").unwrap_or("?").to_string(),
            m.param_str("durability").unwrap_or("?").to_string(),
        );
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(m),
            None => groups.push((key, vec![m])),
        }
    }
    groups.into_iter().map(|(k, ms)| grid(k, ms)).collect()
}

fn grid((size, cache, dur): Key, mut ms: Vec<&Measurement>) -> Grid {
    ms.sort_by(|a, b| {
        b.is_ok()
            .cmp(&a.is_ok())
            .then(b.median.total_cmp(&a.median))
    });
    let best = ms.iter().find(|m| m.is_ok()).map_or(0.0, |m| m.median);
    let headers = [
        "#",
        "method",
        "median time",
        "best time",
        "GB/s (10^9 B/s)",
        "best GB/s",
        "× fastest",
        "usr / sys s",
        "vol / invol cs",
        "faults",
        "blocks in / out",
        "durable",
    ];
    let mut rank = 0;
    let rows = ms
        .iter()
        .map(|m| {
            let label = m.param_str("variant").unwrap_or(&m.case).to_string();
            if !m.is_ok() {
                let mut r = vec!["-".into(), label, m.status.clone()];
                r.resize(headers.len(), "-".into());
                return r;
            }
            rank += 1;
            let durable = m.param_str("durability_state").map_or("?", |s| {
                if s.starts_with("durable") {
                    "yes"
                } else {
                    "not durable"
                }
            });
            vec![
                rank.to_string(),
                label,
                format_ns(d(m, "median_s") * 1e9),
                format_ns(d(m, "best_s") * 1e9),
                format_gbps(m.median),
                format_gbps(m.max),
                if m.median > 0.0 {
                    format!("{}×", sig3(best / m.median))
                } else {
                    "-".into()
                },
                format!(
                    "{} / {}",
                    sig3(d(m, "user_s_per_copy")),
                    sig3(d(m, "sys_s_per_copy"))
                ),
                format!(
                    "{} / {}",
                    sig3(d(m, "voluntary_cs_per_copy")),
                    sig3(d(m, "involuntary_cs_per_copy"))
                ),
                sig3(d(m, "minor_faults_per_copy")),
                format!(
                    "{} / {}",
                    sig3(d(m, "blocks_in_per_copy")),
                    sig3(d(m, "blocks_out_per_copy"))
                ),
                durable.to_string(),
            ]
        })
        .collect();
    let mut footnotes = Vec::new();
    if let Some(m) = ms.iter().find(|m| m.is_ok()) {
        if let Some(c) = m.param_str("cache_observed") {
            footnotes.push(format!(
                "page cache: {c}; eviction: {}",
                m.param_str("eviction").unwrap_or("?")
            ));
        }
        footnotes.push(format!(
            "samples: {}–{} per method (interleaved round-robin); CPU, context switches, faults and blocks are per copy",
            ms.iter().filter(|m| m.is_ok()).map(|m| m.samples).min().unwrap_or(0),
            ms.iter().filter(|m| m.is_ok()).map(|m| m.samples).max().unwrap_or(0)
        ));
    }
    let mut states: Vec<&str> = ms
        .iter()
        .filter(|m| m.is_ok())
        .filter_map(|m| m.param_str("durability_state"))
        .collect();
    states.sort_unstable();
    states.dedup();
    footnotes.extend(states.iter().map(|s| format!("durability: {s}")));
    footnotes.extend(ms.iter().filter(|m| !m.is_ok()).map(|m| {
        format!(
            "{} {}: {}",
            m.param_str("variant").unwrap_or(&m.case),
            m.status,
            m.reason.as_deref().unwrap_or("?")
        )
    }));
    footnotes.extend(
        notes_and_warnings(&ms)
            .into_iter()
            .filter(|l| l.starts_with("warning")),
    );
    Grid {
        title: format!(
            "copy: {} file, {cache} source, durability {dur} — fastest first (seeds 001, 003)",
            format_size(size)
        ),
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows,
        footnotes,
        numeric: true,
    }
}
