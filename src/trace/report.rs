//! The trace report: the text a person reads (what ran, the work, a table per process
//! and target, the findings ranked by saving) and the JSON a script reads.

use super::figures::Figures;
use super::findings::Finding;
use super::overhead;
use super::price;
use super::profile::{self, Op, Profile};
use super::running::Tracing;
use super::subject::{EndedBy, Subject, Window};
use super::work::Work;
use crate::present::{Grid, Style};
use crate::sys::trace::{Ended, Tracer};
use crate::units::{format_ns, format_secs as secs, format_size, thousands};
use anyhow::Result;
use serde::Serialize;

#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    kind: &'static str,
    command: Vec<String>,
    /// The command's end (null when attached to running processes).
    exit: Option<ExitJson>,
    /// Attached: what was watched, for how long, and how the window ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<&'a Window>,
    work: Work,
    note: &'static str,
    figures: &'a Figures,
    measured_first: Option<i64>,
    processes: Vec<&'a profile::Process>,
    targets: &'a [profile::Target],
    rows: Vec<RowJson<'a>>,
    opens: Vec<PathCount>,
    stats: Vec<PathCount>,
    syncs: Vec<SyncJson<'a>>,
    copies: Vec<CopyJson>,
    pipe_sizes: Vec<(usize, u64)>,
    counts: &'a std::collections::BTreeMap<&'static str, u64>,
    findings: &'a [Finding],
    /// How the command ran under trace, where that differs from untraced (a 32-bit
    /// program, privileges dropped, ptrace refused).
    notes: Vec<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum ExitJson {
    Code(i32),
    Signal(i32),
}

#[derive(Serialize)]
struct RowJson<'a> {
    pid: i32,
    target: usize,
    op: Op,
    #[serde(flatten)]
    stats: &'a profile::OpStats,
    typical_size: Option<u64>,
    time_here_s: Option<f64>,
}

#[derive(Serialize)]
struct PathCount {
    pid: i32,
    path: String,
    count: u64,
}

#[derive(Serialize)]
struct SyncJson<'a> {
    pid: i32,
    target: usize,
    #[serde(flatten)]
    syncs: &'a profile::Syncs,
}

#[derive(Serialize)]
struct CopyJson {
    pid: i32,
    source: usize,
    destination: usize,
    pairs: u64,
    bytes: u64,
}

/// What tracing says about its own figures.
const NOTE: &str = "tracing slows every traced call, so calls are priced with this machine's measured figures, never with their traced durations";

/// How the user CPU time of the work was estimated.
fn user_note(c: &overhead::Correction, tracer: &Tracing) -> String {
    if tracer.path == Tracer::Ebpf {
        format!(
            "user CPU as measured ({}): the eBPF tracer runs in the kernel and adds none",
            secs(c.user_cpu_traced_s)
        )
    } else if c.pooled_calls == 0 {
        format!(
            "user CPU as measured under trace ({}): too few traced calls for tracing to add much to it",
            secs(c.user_cpu_traced_s)
        )
    } else {
        format!(
            "user CPU without tracing estimated: {} under trace less {} per traced call, the extra user time tracing adds to a call here ({} calibration calls{})",
            secs(c.user_cpu_traced_s),
            format_ns(c.per_call_user_s * 1e9),
            thousands(c.pooled_calls),
            if c.calibration_calls == c.pooled_calls {
                ", made just now".to_string()
            } else {
                format!(
                    ", {} of them just now, the rest saved by earlier traces",
                    thousands(c.calibration_calls)
                )
            }
        )
    }
}

/// Which tracer ran, and why not the faster ones when it fell back.
fn tracer_note(t: &Tracing) -> String {
    let not = |what: &str, why: &Option<String>| {
        why.as_ref()
            .map(|w| format!("{what} could not be used: {w}"))
    };
    let why = [
        not(Tracer::Ebpf.shown(), &t.ebpf_unavailable),
        not(Tracer::Preload.shown(), &t.preload_unavailable),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    let why = if let Some(p) = &t.picked {
        p.clone()
    } else if why.is_empty() {
        format!("--tracer {}", t.path.name())
    } else {
        why
    };
    match t.path {
        Tracer::Ebpf => {
            "traced with eBPF: the command ran without stops, its calls recorded in the kernel"
                .to_string()
        }
        Tracer::Preload => {
            let plain = match t.plain_starts {
                0 => String::new(),
                n => format!(
                    "; {} program starts ran without it, as under ptrace: earlier processes of their program made too few calls through it to pay for its loading",
                    thousands(n)
                ),
            };
            format!(
                "traced with preload: ptrace, but {} of the programs' own read, write, pread, pwrite, lseek, open, close and stat calls were recorded by a library in them, without a stop ({why}){plain}",
                thousands(t.unstopped_calls)
            )
        }
        Tracer::Ptrace => format!("traced with ptrace ({why})"),
    }
}

/// The first line of an attached trace's report: what was watched, for how long, and
/// its calls, bytes and work per second of the window.
fn window_line(cmd: &[String], w: &Window, run: &Work, p: &Profile) -> String {
    let s = w.seconds.max(1e-9);
    let calls: u64 = p.counts.values().sum();
    let bytes: u64 = p.ops.values().map(|o| o.bytes).sum();
    let ended = match w.ended_by {
        EndedBy::Duration => "at the end of --duration",
        EndedBy::Signal => "when ioprobe was signalled",
        EndedBy::Exit => "when every process attached to had ended",
    };
    let mut line = format!(
        "ioprobe trace: attached to {} for {}, detached {ended}; per second of its run: {}/s traced calls moving {}/s, its work here ≈{} per second ({} and ≈{} of traced calls at this machine's figures)\n",
        cmd.join(", "),
        secs(w.seconds),
        crate::units::sig3(calls as f64 / s),
        format_size((bytes as f64 / s) as u64),
        secs(run.estimate_s / s),
        user_part(run, s),
        secs(run.priced_calls_s / s),
    );
    if let Some(n) = w.stopped_calls {
        line.push_str(&format!(
            "  note: ptrace cannot give a running process a seccomp filter: each of its {} system calls stopped twice (entry and exit), traced or not ({} traced), so the processes ran slower while attached; --tracer ebpf (root) stops none\n",
            thousands(n),
            thousands(calls)
        ));
    }
    line
}

fn exit_text(e: Ended) -> String {
    match e {
        Ended::Code(c) => format!("exited with status {c}"),
        Ended::Signal(s) => format!("was killed by signal {s}"),
    }
}

/// `s` cut to `max` characters, the middle replaced by "…" (paths keep both ends).
fn elide(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max / 3).collect();
    let tail: String = s.chars().skip(n - (max - max / 3 - 1)).collect();
    format!("{head}…{tail}")
}

/// Findings listed one per line: the first [`LISTED`] that matter, then the rest
/// grouped by kind, each group one line with its count and total saving. Nothing is
/// dropped without saying how much: `--json` keeps every finding.
fn findings_text(found: &[Finding], work: f64) -> String {
    const LISTED: usize = 20;
    let mut out = String::new();
    let mut n = 0;
    let (matter, minor): (Vec<&Finding>, Vec<&Finding>) = found.iter().partition(|f| f.matters);
    for x in matter.iter().take(LISTED) {
        n += 1;
        out.push_str(&format!("  {n}. {}\n", x.text));
    }
    // The rest, by kind, largest total saving first.
    let mut groups: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for x in matter.iter().skip(LISTED).chain(minor.iter()) {
        match groups.iter_mut().find(|g| g.0 == x.kind) {
            Some(g) => g.1.push(x),
            None => groups.push((x.kind, vec![x])),
        }
    }
    let total = |g: &[&Finding]| g.iter().filter_map(|f| f.saving_s).sum::<f64>();
    groups.sort_by(|a, b| total(&b.1).total_cmp(&total(&a.1)));
    for (kind, g) in groups {
        n += 1;
        if g.len() == 1 {
            out.push_str(&format!("  {n}. {}\n", g[0].text));
            continue;
        }
        let saving = total(&g);
        let targets: std::collections::BTreeSet<&str> =
            g.iter().map(|f| f.target.as_str()).collect();
        let share = saving / work.max(1e-9);
        let priced = if g.iter().all(|f| f.saving_s.is_none()) {
            "not priced (no saved figures for them on this host)".to_string()
        } else {
            format!(
                "saving ≈{} of ≈{} of work together ({}%){}",
                secs(saving),
                secs(work),
                crate::units::sig3(share * 100.0),
                if share >= 0.01 {
                    ""
                } else {
                    ", which does not matter here"
                }
            )
        };
        out.push_str(&format!(
            "  {n}. {} {}findings of one kind ({kind}) on {} targets, {priced}; the largest: {}\n",
            thousands(g.len() as u64),
            if n > 1 { "more " } else { "" },
            thousands(targets.len() as u64),
            g[0].text
        ));
    }
    if n < found.len() {
        out.push_str(&format!(
            "  ({} findings in all; --json lists each)\n",
            thousands(found.len() as u64)
        ));
    }
    out
}

/// One (process, target)'s calls: each operation and its count, the data calls'
/// sizes, and what all of it would take here (None: nothing priced).
struct PerTarget {
    ops: Vec<(Op, u64)>,
    calls: u64,
    bytes: u64,
    sizes: std::collections::BTreeMap<u64, u64>,
    time: Option<f64>,
}

/// The profile's operations summed per (process, target).
fn per_target(p: &Profile, f: &Figures) -> std::collections::BTreeMap<(i32, usize), PerTarget> {
    let mut acc: std::collections::BTreeMap<(i32, usize), PerTarget> = Default::default();
    for (&(pid, t, op), s) in &p.ops {
        let time = price::time_here(f, &p.targets[t], op, s, p.pipe_sizes.contains_key(&t));
        let a = acc.entry((pid, t)).or_insert(PerTarget {
            ops: Vec::new(),
            calls: 0,
            bytes: 0,
            sizes: Default::default(),
            time: None,
        });
        a.ops.push((op, s.calls));
        a.calls += s.calls;
        a.bytes += s.bytes;
        for (&b, &n) in &s.sizes {
            *a.sizes.entry(b).or_default() += n;
        }
        if let Some(t) = time {
            a.time = Some(a.time.unwrap_or(0.0) + t);
        }
    }
    acc
}

/// Per (process, path) counts as JSON rows.
fn path_counts<'a>(map: impl IntoIterator<Item = (&'a (i32, String), &'a u64)>) -> Vec<PathCount> {
    map.into_iter()
        .map(|((pid, path), &count)| PathCount {
            pid: *pid,
            path: path.clone(),
            count,
        })
        .collect()
}

/// What a report is made of.
pub(super) struct Report<'a> {
    /// The command, or the processes attached to over a window.
    pub subject: &'a Subject,
    pub work: &'a Work,
    pub p: &'a Profile,
    pub f: &'a Figures,
    pub measured: Option<i64>,
    pub found: &'a [Finding],
}

impl Report<'_> {
    /// The report as text: what ran, the table of its I/O, the findings.
    pub fn text(&self, st: &Style) -> String {
        let mut out = self.header();
        out.push_str(&crate::report::table::render_grid(&self.targets_grid(), st));
        if self.found.is_empty() {
            out.push_str("\nno findings: nothing in these calls is worth changing\n");
        } else {
            out.push_str(&format!(
                "\n{}\n",
                st.heading("findings, largest saving first:")
            ));
            out.push_str(&findings_text(self.found, self.work.estimate_s));
        }
        crate::report::table::fit_text(&out, st)
    }

    /// What ran, the work it would be here, the notes, and what priced it.
    fn header(&self) -> String {
        let Report {
            subject,
            work: run,
            p,
            f,
            measured,
            ..
        } = *self;
        let cmd = &subject.shown();
        let mut out = match subject {
            Subject::Attached(w) => window_line(cmd, w, run, p),
            Subject::Command { ended, .. } => format!(
                "ioprobe trace: `{}` {} after {} under trace; its work here ≈{}: {} and {} traced calls taking ≈{} at this machine's figures\n",
                // As a shell would take it back: `sh -c 'cat log | gzip'` keeps its quotes.
                crate::units::shell_words(cmd),
                exit_text(*ended),
                secs(run.traced_wall_s),
                secs(run.estimate_s),
                user_part(run, 1.0),
                thousands(p.counts.values().sum()),
                secs(run.priced_calls_s),
            ),
        };
        out.push_str(&format!(
            "  note: {NOTE}; waiting (disk, network, sleep) and untraced calls are not counted as work\n  note: {}\n",
            user_note(&run.user_correction, &run.tracer),
        ));
        out.push_str(&format!("  note: {}\n", tracer_note(&run.tracer)));
        for n in p.notes.iter().cloned().chain(f.vector_note()) {
            out.push_str(&format!("  note: {n}\n"));
        }
        let sources: Vec<String> = f
            .sources
            .iter()
            .map(|(p, id)| format!("{p} (run {id})"))
            .collect();
        out.push_str(&format!(
            "  priced with this host's {}{}\n\n",
            if sources.is_empty() {
                "nothing (no figures)".to_string()
            } else {
                sources.join(", ")
            },
            if measured.is_some() {
                ", measured just now"
            } else {
                ""
            }
        ));
        out
    }

    /// One row per (process, target), the costliest first: every operation on it, its
    /// data calls' sizes, and what all of it would take here.
    fn targets_grid(&self) -> Grid {
        let (p, f) = (self.p, self.f);
        let per_s = self.subject.window().map(|w| w.seconds.max(1e-9));
        let mut rows: Vec<(f64, Vec<String>)> = per_target(p, f)
            .into_iter()
            .map(|((pid, t), mut a)| {
                a.ops.sort_by_key(|y| std::cmp::Reverse(y.1));
                let typical = profile::OpStats {
                    sizes: a.sizes,
                    ..Default::default()
                }
                .typical_size();
                (
                    a.time.unwrap_or(0.0),
                    vec![
                        format!(
                            "{} ({pid})",
                            p.processes.get(&pid).map_or("?", |x| x.comm.as_str())
                        ),
                        elide(&p.targets[t].label(), 44),
                        a.ops
                            .iter()
                            .map(|o| o.0.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                        match per_s {
                            Some(w) => crate::units::sig3(a.calls as f64 / w),
                            None => thousands(a.calls),
                        },
                        match (a.bytes, per_s) {
                            (0, _) => "-".into(),
                            (b, Some(w)) => format_size((b as f64 / w) as u64),
                            (b, None) => format_size(b),
                        },
                        typical.map_or("-".into(), format_size),
                        a.time
                            .map_or("-".into(), |t| secs(t / per_s.unwrap_or(1.0))),
                    ],
                )
            })
            .collect();
        rows.sort_by(|a, b| b.0.total_cmp(&a.0));
        const SHOWN: usize = 12;
        let rest: Vec<(f64, Vec<String>)> = rows.split_off(rows.len().min(SHOWN));
        let (title, heads) = match per_s {
            None => (
                "its I/O, per process and target, by what the calls would take here",
                ["calls", "bytes", "time here"],
            ),
            Some(_) => (
                "its I/O per second of the window, per process and target, by what the calls would take here",
                ["calls/s", "bytes/s", "time here per s"],
            ),
        };
        let mut g = Grid::numeric(
            title.into(),
            &[
                "process",
                "target",
                "calls made",
                heads[0],
                heads[1],
                "typical size",
                heads[2],
            ],
            rows.into_iter().map(|r| r.1).collect(),
        )
        .optional(&["calls made", "typical size", heads[1]]);
        if !rest.is_empty() {
            g.footnotes.push(format!(
                "… and {} more (process, target) pairs taking {} together; --json has every call",
                rest.len(),
                secs(rest.iter().map(|r| r.0).sum())
            ));
        }
        g
    }

    pub fn json(&self) -> Result<String> {
        let Report {
            subject,
            work: run,
            p,
            f,
            measured,
            found,
        } = *self;
        let doc = Document {
            schema_version: 1,
            kind: "trace",
            command: subject.shown(),
            exit: subject.ended().map(|e| match e {
                Ended::Code(c) => ExitJson::Code(c),
                Ended::Signal(s) => ExitJson::Signal(s),
            }),
            window: subject.window(),
            work: run.clone(),
            note: NOTE,
            figures: f,
            measured_first: measured,
            processes: p.processes.values().collect(),
            targets: &p.targets,
            rows: p
                .ops
                .iter()
                .map(|(&(pid, t, op), s)| RowJson {
                    pid,
                    target: t,
                    op,
                    stats: s,
                    typical_size: s.typical_size(),
                    time_here_s: price::time_here(
                        f,
                        &p.targets[t],
                        op,
                        s,
                        p.pipe_sizes.contains_key(&t),
                    ),
                })
                .collect(),
            opens: path_counts(&p.opens),
            stats: path_counts(&p.stats),
            syncs: p
                .syncs
                .iter()
                .map(|(&(pid, target), syncs)| SyncJson { pid, target, syncs })
                .collect(),
            copies: p
                .copies
                .iter()
                .map(|(&(pid, source, destination), &(pairs, bytes))| CopyJson {
                    pid,
                    source,
                    destination,
                    pairs,
                    bytes,
                })
                .collect(),
            pipe_sizes: p.pipe_sizes.iter().map(|(&t, &b)| (t, b)).collect(),
            counts: &p.counts,
            findings: found,
            notes: p.notes.iter().map(String::as_str).collect(),
        };
        Ok(serde_json::to_string_pretty(&doc)? + "\n")
    }
}

/// The work's user part, per `per` seconds: its user CPU, or where more, the program's
/// own work between its calls as measured (the user CPU is counted in ticks).
fn user_part(run: &Work, per: f64) -> String {
    if run.own_work_s > run.user_cpu_s {
        format!(
            "{} of the program's own work between its calls (measured; its user CPU counted {})",
            secs(run.own_work_s / per),
            secs(run.user_cpu_s / per)
        )
    } else {
        format!("{} of user CPU", secs(run.user_cpu_s / per))
    }
}
