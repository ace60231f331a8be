//! The report's tables: each probe's own grids (from its `ProbeKind`), the machine
//! facts and the one-line run header. Grids are the neutral [`Grid`] that the table,
//! Markdown, CSV and HTML renderers share.

pub use crate::present::Grid;
use crate::present::Style;
use crate::present::grid::{ci_text, notes_and_warnings};
use crate::probes;
use crate::results::{Measurement, Run, Unit};
use crate::sys::machine::Environment;
use crate::units::{format_gbps, format_ns, format_size};

/// Layout for rows whose probe this ioprobe does not know (validation keeps them out of
/// saved runs; kept so a report never drops rows).
fn generic_grid(probe: &str, rows: &[&Measurement], st: &Style) -> Grid {
    let body = rows
        .iter()
        .map(|m| {
            let f = |v: f64| {
                if m.unit == Unit::NsPerOp {
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
    let mut g = Grid::numeric(
        probe.to_string(),
        &["case", "median", "95% CI", "samples"],
        body,
    );
    g.footnotes = notes_and_warnings(rows, &|m| m.case.clone(), st.verbose);
    g
}

/// The grids of one probe of the run, as the probe lays them out. Skipped rows (the
/// filesystem gave them no meaning) are left out of the tables, one footnote per reason
/// under the first.
pub fn grids_of(run: &Run, probe: &str, st: &Style) -> Vec<Grid> {
    let (skipped, rows): (Vec<&Measurement>, Vec<&Measurement>) =
        run.of_probe(probe).partition(|m| m.is_skipped());
    let mut grids = match probes::kind(probe) {
        Some(_) if rows.is_empty() => Vec::new(),
        Some(k) => k.grids(&rows, &run.environment, st),
        None => vec![generic_grid(probe, &rows, st)],
    };
    let notes = skipped_notes(&skipped);
    if notes.is_empty() {
        return grids;
    }
    if grids.is_empty() {
        grids.push(Grid {
            title: format!("{probe}: every row skipped"),
            ..Grid::default()
        });
    }
    grids[0].footnotes.extend(notes);
    grids
}

/// One line per reason rows were skipped: how many, the first case, the reason.
fn skipped_notes(skipped: &[&Measurement]) -> Vec<String> {
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for m in skipped {
        let why = m.reason.as_deref().unwrap_or("no reason recorded");
        match reasons.iter_mut().find(|r| r.0 == why) {
            Some(r) => r.1.push(&m.case),
            None => reasons.push((why, vec![&m.case])),
        }
    }
    reasons
        .into_iter()
        .map(|(why, cases)| match cases.as_slice() {
            [one] => format!("skipped {one}: {why}"),
            [first, ..] => format!("skipped {} rows ({first}, …): {why}", cases.len()),
            [] => unreachable!("a reason has a case"),
        })
        .collect()
}

/// Every probe's grids, in run order.
pub fn probe_grids(run: &Run, st: &Style) -> Vec<Grid> {
    run.probes()
        .iter()
        .flat_map(|p| grids_of(run, p, st))
        .chain(schedule_grid(run))
        .collect()
}

/// Where `ioprobe run`'s time went, answer by answer (None for a run without a
/// schedule: `--precise`, a probe's own command, a run saved before it existed).
pub fn schedule_grid(run: &Run) -> Option<Grid> {
    let s = run.harness.schedule.as_ref()?;
    let rows = s
        .topics
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                t.samples.to_string(),
                format!("{} s", crate::units::sig3(t.seconds)),
                t.visits.to_string(),
                t.passes.to_string(),
                t.agreement.map_or("–".into(), |a| {
                    format!("{}%", crate::units::sig3(a * 100.0))
                }),
                t.stopped.clone(),
            ]
        })
        .collect();
    let decided = s.topics.iter().filter(|t| t.stopped == "decided").count();
    let mut g = Grid::numeric(
        "where the time went (each answer sampled until decided)".into(),
        &[
            "answer",
            "samples",
            "time",
            "visits",
            "passes",
            "agreement",
            "stopped",
        ],
        rows,
    );
    g.drop_order = vec![4, 3, 1];
    g.footnotes.push(format!(
        "first pass over every row {} s, then {} s of visits to the rows of undecided answers; {decided} of {} answers decided (agreement: simulated reruns keeping the answer, {}% to decide){}",
        crate::units::sig3(s.first_pass_s),
        crate::units::sig3(s.visits_s),
        s.topics.len(),
        crate::units::sig3(s.target * 100.0),
        if s.ended == "decided" {
            "; ended early: every answer decided"
        } else {
            ""
        }
    ));
    Some(g)
}

/// A key/value grid of machine facts (`ioprobe sysinfo`, report headers).
pub fn environment_grid(env: &Environment) -> Grid {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut kv = |k: &str, v: String| rows.push(vec![k.to_string(), v]);
    hardware_facts(env, &mut kv);
    filesystem_facts(env, &mut kv);
    if let Some(t) = &env.tuning {
        tuning_facts(t, env.memory_available_bytes, &mut kv);
    }
    process_facts(env, &mut kv);
    Grid {
        title: "machine".into(),
        headers: vec!["fact".into(), "value".into()],
        rows,
        footnotes: Vec::new(),
        numeric: false,
        ..Default::default()
    }
}

/// Host, OS, CPU and caches, memory, hypervisor and clock.
fn hardware_facts(env: &Environment, kv: &mut impl FnMut(&str, String)) {
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
}

/// The measured directory's filesystem, mount, compression and readahead.
fn filesystem_facts(env: &Environment, kv: &mut impl FnMut(&str, String)) {
    let Some(fs) = &env.filesystem else {
        kv("filesystem", "unknown".into());
        return;
    };
    kv("measured dir", fs.path.clone());
    kv(
        "filesystem",
        format!(
            "{} on {} mounted at {}",
            fs.fs_type, fs.source, fs.mount_point
        ),
    );
    kv("mount options", fs.mount_options.clone());
    if let Some(c) = &fs.compression {
        kv("compression", c.clone());
    }
    kv(
        "readahead",
        fs.read_ahead_kb.map_or("no block device".into(), |k| {
            format!("{k} KiB (read_ahead_kb)")
        }),
    );
}

/// Transparent huge pages, CPU frequency and the dirty-page limits.
fn tuning_facts(t: &crate::sys::machine::Tuning, avail: u64, kv: &mut impl FnMut(&str, String)) {
    let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    kv(
        "transparent huge pages",
        format!(
            "enabled {}, defrag {}",
            or(&t.thp_enabled),
            or(&t.thp_defrag)
        ),
    );
    kv(
        "cpu frequency",
        match &t.cpufreq_driver {
            Some(d) => format!(
                "driver {d}, governor {}, boost {}",
                or(&t.cpufreq_governor),
                t.boost.map_or("unknown", |b| if b { "on" } else { "off" })
            ),
            None => "no cpufreq (set by the host or firmware)".into(),
        },
    );
    kv(
        "dirty page limits",
        format!(
            "background writeback from {}, writers throttled from {} (vm.dirty_background_{}, vm.dirty_{})",
            t.background_threshold(avail)
                .map_or("?".into(), format_size),
            t.throttle_threshold(avail).map_or("?".into(), format_size),
            match t.dirty_background_bytes {
                Some(b) if b > 0 => "bytes".to_string(),
                _ => format!("ratio {}%", t.dirty_background_ratio.unwrap_or(0)),
            },
            match t.dirty_bytes {
                Some(b) if b > 0 => "bytes".to_string(),
                _ => format!("ratio {}%", t.dirty_ratio.unwrap_or(0)),
            },
        ),
    );
    for s in &t.damon {
        kv("DAMON scheme", s.describe());
    }
}

/// rusage scope, pipe-max-size, pinning, ioprobe's build and the CPU mitigations.
fn process_facts(env: &Environment, kv: &mut impl FnMut(&str, String)) {
    if let Some(scope) = &env.rusage_scope {
        kv(
            "rusage",
            if scope == "process" {
                "per process (no per-thread counters on this OS)".into()
            } else {
                format!("per {scope} (RUSAGE_THREAD)")
            },
        );
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
}

/// One-line summary of the environment and harness for table headers.
pub fn run_header(run: &Run) -> String {
    let e = &run.environment;
    let fs = e.filesystem.as_ref().map_or("unknown fs".into(), |f| {
        format!("{} at {}", f.fs_type, f.path)
    });
    format!(
        "ioprobe {} ({} build) · {} {} · {} · {}{} · {} · {} · clock read {}, empty loop {}/iteration",
        run.tool.version,
        e.build_profile,
        e.os,
        e.kernel,
        e.cpu_model,
        match (e.logical_cpus, e.pinned_cpu) {
            (1, None) => "1 cpu".to_string(),
            (n, None) => format!("{n} cpus"),
            (n, Some(c)) => format!("{n} cpus, measured on cpu {c}"),
        },
        e.hypervisor
            .as_ref()
            .map_or(String::new(), |h| format!(" · VM: {h}")),
        fs,
        // Runs saved before the scale was recorded say only "quick", "default", …
        match run.harness.mode.as_str() {
            m @ ("quick" | "default" | "thorough") => format!("{m} mode"),
            m => m.to_string(),
        },
        format_ns(run.harness.overhead.timer_ns),
        format_ns(run.harness.overhead.empty_loop_ns),
    )
}
