//! Copy advice: the fastest durable method, the fastest user-space buffer size, and how
//! far the mmap methods lag, per file size and cache state, each with its figures.

use crate::results::Measurement;
use crate::units::{format_gbps, format_size, sig3};

fn fastest<'a>(rows: impl Iterator<Item = &'a Measurement>) -> Option<&'a Measurement> {
    rows.filter(|m| m.is_ok())
        .max_by(|a, b| a.median.total_cmp(&b.median))
}

fn label(m: &Measurement) -> &str {
    m.param_str("variant").unwrap_or(&m.case)
}

/// Advice lines for all copy rows of a run.
pub fn copy_advice(rows: &[&Measurement]) -> Vec<String> {
    let mut keys: Vec<(u64, &str)> = Vec::new();
    for m in rows {
        let k = (
            m.param_u64("file_size").unwrap_or(0),
            m.param_str("cache").unwrap_or("?"),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (size, cache) in keys {
        let here = |dur: &'static str| {
            rows.iter().copied().filter(move |m| {
                m.param_u64("file_size") == Some(size)
                    && m.param_str("cache") == Some(cache)
                    && m.param_str("durability") == Some(dur)
            })
        };
        let what = format!("copy ({} file, {cache} source)", format_size(size));
        if let Some(b) = fastest(here("fsync")) {
            let rw = here("fsync").find(|m| m.param_str("variant") == Some("read-write/1MiB"));
            out.push(format!(
                "{what}: fastest durable method is {} ({} GB/s median, fsync inside the timing){}",
                label(b),
                format_gbps(b.median),
                rw.filter(|r| r.is_ok() && r.median > 0.0)
                    .map_or(String::new(), |r| format!(
                        ", ×{} a read-write loop with 1 MiB buffers",
                        sig3(b.median / r.median)
                    ))
            ));
        }
        let mut rw: Vec<&Measurement> = here("none")
            .filter(|m| m.is_ok() && m.param_str("method") == Some("read-write"))
            .collect();
        rw.sort_by_key(|m| m.param_u64("buffer_size"));
        if let Some(top) = fastest(rw.iter().copied())
            && let Some(small) = rw.iter().find(|m| m.median >= top.median * 0.95)
        {
            out.push(format!(
                "{what}: for a user-space read/write loop use {} buffers, the smallest within 5% of the best ({} GB/s at {}; {} GB/s here)",
                small.param_u64("buffer_size").map_or("?".into(), format_size),
                format_gbps(top.median),
                top.param_u64("buffer_size").map_or("?".into(), format_size),
                format_gbps(small.median)
            ));
        }
        if let (Some(all), Some(mm)) = (
            fastest(here("none")),
            fastest(
                here("none")
                    .filter(|m| m.param_str("method").is_some_and(|s| s.starts_with("mmap"))),
            ),
        ) && mm.median > 0.0
        {
            out.push(format!(
                "{what}: the best mmap method ({}, {} GB/s) lags the fastest ({}, {} GB/s) by ×{}",
                label(mm),
                format_gbps(mm.median),
                label(all),
                format_gbps(all.median),
                sig3(all.median / mm.median)
            ));
        }
    }
    out
}
