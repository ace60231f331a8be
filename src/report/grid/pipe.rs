//! Pipe tables: one per (method, placement), rows chunk size × pipe capacity, with
//! each process's CPU time and context switches per GiB (seed 002's table shape).

use super::{Grid, ci_text, notes_and_warnings};
use crate::results::Measurement;
use crate::units::{format_gbps, format_size, sig3};

fn per_process(
    m: &Measurement,
    role: &str,
    f: &dyn Fn(&crate::harness::rusage::RusagePer) -> String,
) -> String {
    m.rusage
        .processes
        .get(role)
        .map_or("-".into(), |p| f(&p.normalised))
}

fn row(m: &Measurement) -> Vec<String> {
    let chunk = m.param_u64("chunk_size").map_or("?".into(), format_size);
    let cap = match m.param_u64("pipe_size") {
        Some(b) => format_size(b),
        None => m
            .param_str("pipe_size_requested")
            .unwrap_or("?")
            .to_string(),
    };
    if !m.is_ok() {
        let mut r = vec![
            chunk,
            cap,
            format!("unsupported: {}", m.reason.as_deref().unwrap_or("?")),
        ];
        r.resize(10, "-".into());
        return r;
    }
    let cpu =
        |p: &crate::harness::rusage::RusagePer| format!("{} / {}", sig3(p.user_s), sig3(p.sys_s));
    let cs = |p: &crate::harness::rusage::RusagePer| {
        format!("{} / {}", sig3(p.voluntary_cs), sig3(p.involuntary_cs))
    };
    vec![
        chunk,
        cap,
        format_gbps(m.median),
        ci_text(m, &|v| format_gbps(v)),
        sig3((1u64 << 30) as f64 / m.median),
        per_process(m, "writer", &cpu),
        per_process(m, "reader", &cpu),
        per_process(m, "writer", &cs),
        per_process(m, "reader", &cs),
        format!(
            "{} / {}",
            sig3(m.derived_f64("writer_calls_per_gib").unwrap_or(f64::NAN)),
            sig3(m.derived_f64("reader_calls_per_gib").unwrap_or(f64::NAN))
        ),
    ]
}

/// One grid per (method, placement), in run order.
pub fn pipe_grids(rows: &[&Measurement]) -> Vec<Grid> {
    let mut groups: Vec<(String, String, Vec<&Measurement>)> = Vec::new();
    for m in rows {
        let method = m.param_str("method").unwrap_or("?").to_string();
        let place = m.param_str("placement").unwrap_or("?").to_string();
        match groups.iter_mut().find(|g| g.0 == method && g.1 == place) {
            Some(g) => g.2.push(m),
            None => groups.push((method, place, vec![m])),
        }
    }
    let headers = [
        "chunk",
        "pipe size",
        "GB/s (10^9 B/s)",
        "95% CI",
        "s/GiB",
        "writer usr/sys s/GiB",
        "reader usr/sys s/GiB",
        "writer vol/invol cs/GiB",
        "reader vol/invol cs/GiB",
        "calls/GiB w/r",
    ];
    groups
        .into_iter()
        .map(|(method, place, ms)| {
            let total = ms.first().and_then(|m| m.param_u64("total")).unwrap_or(0);
            let cpus = ms
                .first()
                .map(|m| {
                    let c = |k: &str| m.params.get(k).map_or("?".into(), |v| v.to_string());
                    format!(
                        "writer on CPUs {}, reader on {}",
                        c("writer_cpus"),
                        c("reader_cpus")
                    )
                })
                .unwrap_or_default();
            let mut footnotes = vec![cpus];
            footnotes.extend(notes_and_warnings(&ms));
            Grid {
                title: format!(
                    "pipe: {method}, placement {place}, {} per sample (seed 002)",
                    format_size(total)
                ),
                headers: headers.iter().map(|s| s.to_string()).collect(),
                rows: ms.iter().map(|m| row(m)).collect(),
                footnotes,
                numeric: true,
            }
        })
        .collect()
}
