//! Pipe advice: the chunk size to use, what a larger pipe buys, and what splitting
//! writer and reader across CPUs costs, each from the measured rows of one method.

use crate::results::Measurement;
use crate::units::{format_gbps, format_size, sig3};

fn key(m: &Measurement) -> (Option<&str>, Option<u64>, Option<u64>) {
    (
        m.param_str("placement"),
        m.param_u64("pipe_size"),
        m.param_u64("chunk_size"),
    )
}

fn size(m: &Measurement, k: &str) -> String {
    m.param_u64(k).map_or("?".into(), format_size)
}

/// The best row among `rows` (highest median).
fn best<'a>(rows: impl Iterator<Item = &'a Measurement>) -> Option<&'a Measurement> {
    rows.max_by(|a, b| a.median.total_cmp(&b.median))
}

/// Advice for one method's measured rows.
pub fn pipe_advice(method: &str, rows: &[&Measurement]) -> Vec<String> {
    let rows: Vec<&Measurement> = rows.iter().copied().filter(|m| m.is_ok()).collect();
    let Some(top) = best(rows.iter().copied()) else {
        return Vec::new();
    };
    let (place, cap, chunk) = key(top);
    let mut out = Vec::new();
    // 1. Smallest chunk within 5% of the best, same capacity and placement.
    let mut same: Vec<&Measurement> = rows
        .iter()
        .copied()
        .filter(|m| key(m).0 == place && key(m).1 == cap)
        .collect();
    same.sort_by_key(|m| m.param_u64("chunk_size"));
    if let Some(small) = same.iter().find(|m| m.median >= top.median * 0.95) {
        out.push(format!(
            "pipe ({method}): use {} chunks, the smallest within 5% of the best ({} GB/s at {}, pipe {}, placement {}; {} GB/s here)",
            size(small, "chunk_size"),
            format_gbps(top.median),
            size(top, "chunk_size"),
            size(top, "pipe_size"),
            place.unwrap_or("?"),
            format_gbps(small.median)
        ));
    }
    // 2. What the capacity buys: the best figure per capacity, same placement.
    let mut caps: Vec<u64> = rows
        .iter()
        .filter_map(|m| m.param_u64("pipe_size"))
        .collect();
    caps.sort_unstable();
    caps.dedup();
    if caps.len() > 1 {
        let per_cap: Vec<(u64, &Measurement)> = caps
            .iter()
            .filter_map(|&c| {
                best(
                    rows.iter()
                        .copied()
                        .filter(|m| key(m).0 == place && m.param_u64("pipe_size") == Some(c)),
                )
                .map(|m| (c, m))
            })
            .collect();
        if let (Some(&(c0, m0)), Some(&(c1, m1))) = (per_cap.first(), per_cap.last()) {
            out.push(format!(
                "pipe ({method}): a {} pipe peaks at {} GB/s ({} chunks) against {} GB/s ({} chunks) with {}: ×{} from raising the capacity (F_SETPIPE_SZ)",
                format_size(c1),
                format_gbps(m1.median),
                size(m1, "chunk_size"),
                format_gbps(m0.median),
                size(m0, "chunk_size"),
                format_size(c0),
                sig3(m1.median / m0.median)
            ));
        }
    }
    // 3. Placement: same CPU against split, at the best chunk and capacity.
    let at = |p: &str| {
        rows.iter()
            .copied()
            .find(|m| key(m) == (Some(p), cap, chunk))
    };
    if let (Some(one), Some(two)) = (at("same"), at("split")) {
        let r = two.median / one.median;
        let verdict = if r < 1.0 {
            format!("splitting costs {}%", sig3((1.0 - r) * 100.0))
        } else {
            format!("splitting gains ×{}", sig3(r))
        };
        out.push(format!(
            "pipe ({method}): writer and reader on different CPUs: {} GB/s against {} GB/s on one CPU at {} chunks, pipe {} ({verdict}){}",
            format_gbps(two.median),
            format_gbps(one.median),
            size(top, "chunk_size"),
            size(top, "pipe_size"),
            at("any").map_or(String::new(), |a| format!("; unpinned {} GB/s", format_gbps(a.median)))
        ));
    }
    out
}
