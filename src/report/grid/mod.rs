//! Turns measurements into a neutral grid (title, headers, rows of text) that the table
//! and Markdown renderers share. Columns follow from the probe and what rows carry.

mod copy;
mod pipe;

use crate::results::{Measurement, Run};
use crate::sys::machine::Environment;
use crate::units::{format_count, format_gbps, format_ns, format_size, sig3};

/// A titled table of text cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table (notes, warnings).
    pub footnotes: Vec<String>,
    /// True for figures (right-aligned after the first column), false for key/value text.
    pub numeric: bool,
}

fn ci_text(m: &Measurement, f: &dyn Fn(f64) -> String) -> String {
    format!("{} – {}", f(m.ci95[0]), f(m.ci95[1]))
}

fn syscalls_grid(rows: &[&Measurement]) -> Grid {
    let headers = [
        "case",
        "ns/op",
        "95% CI",
        "ops/s",
        "× null",
        "vol cs/Mop",
        "invol cs/Mop",
    ];
    let body = rows
        .iter()
        .map(|m| {
            let ns = |v: f64| sig3(v);
            vec![
                m.case.clone(),
                sig3(m.median),
                ci_text(m, &ns),
                format_count(m.derived_f64("ops_per_s").unwrap_or(1e9 / m.median)),
                m.derived_f64("x_null")
                    .map_or("-".into(), |x| format!("{}×", sig3(x))),
                sig3(m.derived_f64("voluntary_cs_per_mop").unwrap_or(f64::NAN)),
                sig3(m.derived_f64("involuntary_cs_per_mop").unwrap_or(f64::NAN)),
            ]
        })
        .collect();
    let io = rows
        .first()
        .and_then(|m| m.param_u64("io_size"))
        .unwrap_or(0);
    Grid {
        title: format!(
            "syscalls: cost per call, {} I/O (seed 004)",
            format_size(io)
        ),
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows: body,
        footnotes: notes_and_warnings(rows),
        numeric: true,
    }
}

fn read_grid(rows: &[&Measurement]) -> Grid {
    let headers = [
        "method",
        "block",
        "GB/s (10^9 B/s)",
        "95% CI",
        "s / 10 GiB",
        "ns/call",
        "fits in",
        "vol cs/GiB",
        "invol cs/GiB",
    ];
    let body = rows
        .iter()
        .map(|m| {
            vec![
                m.param_str("method").unwrap_or("?").to_string(),
                m.param_u64("block_size").map_or("?".into(), format_size),
                format_gbps(m.median),
                ci_text(m, &|v| format_gbps(v)),
                sig3(m.derived_f64("s_per_10gib").unwrap_or(f64::NAN)),
                sig3(m.derived_f64("ns_per_call").unwrap_or(f64::NAN)),
                m.derived
                    .get("fits_in")
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_string(),
                sig3(m.derived_f64("voluntary_cs_per_gib").unwrap_or(f64::NAN)),
                sig3(m.derived_f64("involuntary_cs_per_gib").unwrap_or(f64::NAN)),
            ]
        })
        .collect();
    let size = rows
        .first()
        .and_then(|m| m.param_u64("file_size"))
        .unwrap_or(0);
    let mut footnotes = Vec::new();
    if let Some(pc) = rows.first().and_then(|m| m.param_str("page_cache")) {
        footnotes.push(format!("page cache: {pc}"));
    }
    footnotes.extend(notes_and_warnings(rows));
    Grid {
        title: format!(
            "read: {} file from the page cache, by block size (seed 000)",
            format_size(size)
        ),
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows: body,
        footnotes,
        numeric: true,
    }
}

/// Generic layout for probes without a dedicated one.
fn generic_grid(probe: &str, rows: &[&Measurement]) -> Grid {
    let body = rows
        .iter()
        .map(|m| {
            let f = |v: f64| {
                if m.unit == "ns/op" {
                    format_ns(v)
                } else {
                    format!("{} GB/s", format_gbps(v))
                }
            };
            vec![
                m.case.clone(),
                f(m.median),
                ci_text(m, &f),
                m.samples.to_string(),
            ]
        })
        .collect();
    Grid {
        title: probe.to_string(),
        headers: ["case", "median", "95% CI", "samples"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: body,
        footnotes: notes_and_warnings(rows),
        numeric: true,
    }
}

/// Each distinct note once (labelled with the first case that has it), then warnings.
fn notes_and_warnings(rows: &[&Measurement]) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen_notes: Vec<&str> = Vec::new();
    for m in rows {
        if !seen_notes.contains(&m.note.as_str()) {
            seen_notes.push(&m.note);
            let label = m.param_str("method").unwrap_or(&m.case);
            out.push(format!("{label}: {}", m.note));
        }
    }
    for m in rows {
        for w in &m.warnings {
            out.push(format!("warning: {}: {w}", m.case));
        }
    }
    out
}

/// The grids of one probe of the run (most probes have one; pipe has one per method
/// and placement, copy one per file size).
pub fn grids_of(run: &Run, probe: &str) -> Vec<Grid> {
    let rows: Vec<&Measurement> = run.of_probe(probe).collect();
    match probe {
        "syscalls" => vec![syscalls_grid(&rows)],
        "read" => vec![read_grid(&rows)],
        "pipe" => pipe::pipe_grids(&rows),
        "copy" => copy::copy_grids(&rows),
        other => vec![generic_grid(other, &rows)],
    }
}

/// Every probe's grids, in run order.
pub fn probe_grids(run: &Run) -> Vec<Grid> {
    run.probes().iter().flat_map(|p| grids_of(run, p)).collect()
}

/// A key/value grid of machine facts (`ioprobe sysinfo`, report headers).
pub fn environment_grid(env: &Environment) -> Grid {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut kv = |k: &str, v: String| rows.push(vec![k.to_string(), v]);
    kv("host", env.hostname.clone());
    kv("os", env.os.clone());
    kv("kernel", format!("{} ({})", env.kernel, env.kernel_version));
    kv("arch", env.arch.clone());
    kv("cpu", env.cpu_model.clone());
    kv("logical cpus", env.logical_cpus.to_string());
    for c in &env.caches {
        kv(
            &format!("L{} {}", c.level, c.kind.to_lowercase()),
            format!(
                "{} (shared by cpus {})",
                format_size(c.size_bytes),
                c.shared_cpu_list
            ),
        );
    }
    kv(
        "memory",
        format!(
            "{} ({} available)",
            format_size(env.memory_bytes),
            format_size(env.memory_available_bytes)
        ),
    );
    kv("page size", format_size(env.page_size));
    kv(
        "hypervisor",
        env.hypervisor
            .clone()
            .unwrap_or_else(|| "none detected".into()),
    );
    kv("clocksource", env.clocksource.clone());
    match &env.filesystem {
        Some(fs) => {
            kv("measured dir", fs.path.clone());
            kv(
                "filesystem",
                format!(
                    "{} on {} mounted at {}",
                    fs.fs_type, fs.source, fs.mount_point
                ),
            );
            kv("mount options", fs.mount_options.clone());
        }
        None => kv("filesystem", "unknown".into()),
    }
    kv(
        "pipe-max-size",
        env.pipe_max_size.map_or("unknown".into(), format_size),
    );
    kv(
        "pinned cpu",
        env.pinned_cpu.map_or("none".into(), |c| c.to_string()),
    );
    kv(
        "ioprobe",
        format!("{} ({} build)", env.ioprobe_version, env.build_profile),
    );
    let affected: Vec<(&String, &String)> = env
        .mitigations
        .iter()
        .filter(|(_, v)| !v.starts_with("Not affected"))
        .collect();
    if affected.is_empty() {
        kv("mitigations", "none reported as affected".into());
    }
    for (k, v) in affected {
        kv(&format!("vuln {k}"), v.clone());
    }
    Grid {
        title: "machine".into(),
        headers: vec!["fact".into(), "value".into()],
        rows,
        footnotes: Vec::new(),
        numeric: false,
    }
}

/// One-line summary of the environment and harness for table headers.
pub fn run_header(run: &Run) -> String {
    let e = &run.environment;
    let fs = e.filesystem.as_ref().map_or("unknown fs".into(), |f| {
        format!("{} at {}", f.fs_type, f.path)
    });
    format!(
        "ioprobe {} ({} build) · {} {} · {} · {} cpus{} · {} · {} mode · clock read {}, empty loop {}/iteration",
        run.tool.version,
        e.build_profile,
        e.os,
        e.kernel,
        e.cpu_model,
        e.logical_cpus,
        e.hypervisor
            .as_ref()
            .map_or(String::new(), |h| format!(" · VM: {h}")),
        fs,
        run.harness.mode,
        format_ns(run.harness.overhead.timer_ns),
        format_ns(run.harness.overhead.empty_loop_ns),
    )
}
