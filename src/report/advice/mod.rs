//! Advice: what the measurements say a programmer should do, each line with the
//! figures that justify it.

mod copy;
mod pipe;

use crate::results::{Measurement, Run};
use crate::units::{format_gbps, format_size, sig3};

/// All advice lines for a run.
pub fn advise(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    let sys: Vec<&Measurement> = run.of_probe("syscalls").collect();
    out.extend(syscalls_advice(&sys));
    let read: Vec<&Measurement> = run.of_probe("read").collect();
    let mut methods: Vec<&str> = read.iter().filter_map(|m| m.param_str("method")).collect();
    methods.dedup();
    for method in methods {
        let rows: Vec<&Measurement> = read
            .iter()
            .copied()
            .filter(|m| m.param_str("method") == Some(method))
            .collect();
        out.extend(read_advice(method, &rows, &run.environment.data_caches()));
    }
    let piped: Vec<&Measurement> = run.of_probe("pipe").collect();
    let mut methods: Vec<&str> = piped.iter().filter_map(|m| m.param_str("method")).collect();
    methods.dedup();
    for method in methods {
        let rows: Vec<&Measurement> = piped
            .iter()
            .copied()
            .filter(|m| m.param_str("method") == Some(method))
            .collect();
        out.extend(pipe::pipe_advice(method, &rows));
    }
    let copies: Vec<&Measurement> = run.of_probe("copy").collect();
    out.extend(copy::copy_advice(&copies));
    out
}

fn find<'a>(rows: &[&'a Measurement], case: &str) -> Option<&'a Measurement> {
    rows.iter().copied().find(|m| m.case == case)
}

fn syscalls_advice(rows: &[&Measurement]) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(orc), Some(pr)) = (find(rows, "open_read_close"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: keep descriptors open: open+read+close costs {}× a pread ({} vs {} ns)",
            sig3(orc.median / pr.median),
            sig3(orc.median),
            sig3(pr.median)
        ));
    } else if let (Some(oc), Some(pr)) = (find(rows, "open_close"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: keep descriptors open: open+close alone costs {}× a pread ({} vs {} ns)",
            sig3(oc.median / pr.median),
            sig3(oc.median),
            sig3(pr.median)
        ));
    }
    if let (Some(lr), Some(pr)) = (find(rows, "lseek_read"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: use pread instead of lseek+read: {} vs {} ns per read ({}% less)",
            sig3(pr.median),
            sig3(lr.median),
            sig3((1.0 - pr.median / lr.median) * 100.0)
        ));
    }
    if let (Some(lw), Some(pw)) = (find(rows, "lseek_write"), find(rows, "pwrite")) {
        out.push(format!(
            "syscalls: use pwrite instead of lseek+write: {} vs {} ns per write",
            sig3(pw.median),
            sig3(lw.median)
        ));
    }
    if let (Some(ml), Some(pr)) = (find(rows, "mmap_load"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: a load from an existing mapping costs {} ns, {}× less than pread; mmap/munmap and page faults are extra and not in this figure",
            sig3(ml.median),
            sig3(pr.median / ml.median)
        ));
    }
    out
}

/// Read advice for one method; rows in any order.
pub fn read_advice(method: &str, rows: &[&Measurement], caches: &[(u8, u64)]) -> Vec<String> {
    let mut rows: Vec<(u64, &Measurement)> = rows
        .iter()
        .filter_map(|m| m.param_u64("block_size").map(|b| (b, *m)))
        .collect();
    rows.sort_by_key(|(b, _)| *b);
    let Some(&(best_b, best)) = rows.iter().max_by(|a, b| a.1.median.total_cmp(&b.1.median)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(&(small_b, small)) = rows.iter().find(|(_, m)| m.median >= best.median * 0.95) {
        out.push(format!(
            "read ({method}): use {} blocks, the smallest within 5% of the best ({} GB/s at {}; {} GB/s here)",
            format_size(small_b),
            format_gbps(best.median),
            format_size(best_b),
            format_gbps(small.median)
        ));
    }
    out.push(format!(
        "read ({method}): {}",
        falloff(&rows, best_b, best, caches)
    ));
    // Seed 000's comparison: one call's fixed cost, in bytes copied at the best rate.
    if let Some(&(b0, m0)) = rows.first()
        && let Some(ns_call) = m0.derived_f64("ns_per_call")
        && method != "mmap"
    {
        let copy_ns = b0 as f64 / best.median * 1e9;
        let overhead = ns_call - copy_ns;
        if overhead > 0.0 {
            let eq_bytes = overhead * best.median / 1e9;
            out.push(format!(
                "read ({method}): one call's fixed cost is about {} ns, as much as copying {} at the best rate",
                sig3(overhead),
                format_size(eq_bytes.round() as u64)
            ));
        }
    }
    out
}

/// Where throughput first falls below 95% of the best after the best block size, and how
/// that block relates to the cache that holds it (seed 000: keep buffers under half of L2,
/// because the page-cache source and the user buffer share the cache).
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
