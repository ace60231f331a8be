//! `ioprobe trace -- CMD`: runs CMD traced (see `sys::os::trace`), profiles its I/O
//! system calls ([`profile`]), prices them with this machine's saved figures and says
//! what to change ([`price`]). CMD keeps its stdin, stdout and stderr; the report goes
//! to stderr or `--output`; ioprobe exits with CMD's status.

pub mod overhead;
pub mod price;
pub mod profile;
mod uring;

use crate::error::Exit;
use crate::present::Grid;
use crate::present::Style;
use crate::results::Run;
use crate::settings::Settings;
use crate::sys::os::Ended;
use crate::sys::os::trace::Tracer;
use crate::units::{format_ns, format_size};
use anyhow::Result;
use price::{Figures, Finding};
use profile::Profile;
use serde::Serialize;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

/// The trace command's options.
#[derive(Debug, Clone)]
pub struct Options {
    pub command: Vec<OsString>,
    pub output: Option<PathBuf>,
    pub json: bool,
    /// Runs to price with instead of this host's newest (RUN specs).
    pub figures: Vec<String>,
}

/// The JSON document `--json` writes (schema version 1).
#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    kind: &'static str,
    command: Vec<String>,
    exit: ExitJson,
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
    op: &'static str,
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

/// Runs the command traced and reports; Ok(status) is the command's exit status
/// (128+N when signal N ended it).
pub fn run(opts: &Options, settings: &Settings) -> Result<i32> {
    if opts.command.is_empty() {
        return crate::error::usage(
            "trace: give the command after --, e.g. ioprobe trace -- dd if=FILE of=/dev/null",
        );
    };
    let shown = opts
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>();
    // Everything that could fail after the command is checked before it runs: the
    // standard descriptors it was given, the report's destination, the program (a
    // 32-bit one is refused), and the figures (measured first when none are saved).
    let closed = crate::sys::os::trace::stdio_closed_at_start();
    let mut out = match &opts.output {
        Some(path) => Some(open_output(path)?),
        None => None,
    };
    preflight_program(&opts.command[0])?;
    let (figures, measured) = if opts.figures.is_empty() {
        figures(settings)?
    } else {
        let mut runs = Vec::new();
        for spec in &opts.figures {
            let named = crate::session::resolve(settings, spec)?;
            runs.push((named.id.unwrap_or(0), named.run));
        }
        (Figures::from_runs(&runs), None)
    };
    let before = crate::sys::rusage::getrusage_children()
        .map(|r| r.user_us as f64 * 1e-6)
        .unwrap_or(0.0);
    let start = Instant::now();
    let mut tracer =
        Tracer::spawn(&opts.command, &closed).map_err(|e| spawn_error(&opts.command[0], e))?;
    let mut prof = Profile::new();
    // The command's own exec happened while it was being started: look at its program
    // (setuid, file capabilities) as at any later exec.
    prof.add(&crate::sys::os::Event::Exec { tid: tracer.pid() });
    while let Some(ev) = tracer.next_event()? {
        prof.add(&ev);
    }
    prof.finish();
    let elapsed = start.elapsed().as_secs_f64();
    let ended = tracer.ended().unwrap_or(Ended::Code(1));
    let user = |r: crate::sys::rusage::RawRusage| r.user_us as f64 * 1e-6;
    let user_cpu = crate::sys::rusage::getrusage_children()
        .map(|r| user(r) - before)
        .unwrap_or(0.0);
    let calls: u64 = prof.counts.values().sum();
    let (user_cpu, correction) = {
        let host = crate::sys::machine::Environment::collect(None).hostname;
        let mut store = crate::session::store_for_saving(settings).ok().flatten();
        overhead::correct(user_cpu, calls, store.as_mut(), &host)
    };
    let priced: f64 = prof
        .ops
        .iter()
        .filter_map(|(&(_, t, op), s)| {
            price::time_here(
                &figures,
                prof.targets[t].kind,
                op,
                s,
                prof.pipe_sizes.contains_key(&t),
            )
        })
        .sum();
    let work = Work {
        traced_wall_s: elapsed,
        user_cpu_s: user_cpu,
        user_correction: correction,
        priced_calls_s: priced,
        estimate_s: user_cpu + priced,
    };
    let found = price::findings(&prof, &figures, work.estimate_s);
    let report = Report {
        cmd: &shown,
        ended,
        work: &work,
        p: &prof,
        f: &figures,
        measured,
        found: &found,
    };
    // Colour follows the report's destination: never into a file, and into stderr
    // only when it is a terminal.
    let style = Style {
        color: settings.style.color
            && out.is_none()
            && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..settings.style
    };
    let text = if opts.json {
        report.json()?
    } else {
        report.text(&style)
    };
    match (&mut out, &opts.output) {
        (Some(f), Some(path)) => std::io::Write::write_all(f, text.as_bytes())
            .and_then(|()| f.sync_data().or(Ok(())))
            .map_err(|e| {
                anyhow::anyhow!("writing {}: {}", path.display(), crate::error::plain(&e))
            })?,
        _ => eprint!("{text}"),
    }
    Ok(match ended {
        Ended::Code(c) => c,
        Ended::Signal(s) => 128 + s,
    })
}

/// How long the run took under trace, and the work it would be here without tracing:
/// its processes' user CPU time less what tracing added to it ([`overhead`]) plus its
/// traced calls at this machine's measured cost. Waiting (a disk, the network, a sleep)
/// and untraced system calls are not in the estimate.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Work {
    pub traced_wall_s: f64,
    /// User CPU time without tracing, estimated: `user_correction` says how.
    pub user_cpu_s: f64,
    pub user_correction: overhead::Correction,
    pub priced_calls_s: f64,
    pub estimate_s: f64,
}

/// Opens `--output` for writing before the command runs (created or truncated), so
/// that a report that could not be written is known before anything happens.
/// /dev/full, which takes the open but no byte, is refused too.
fn open_output(path: &std::path::Path) -> Result<std::fs::File> {
    use std::os::unix::fs::FileTypeExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| {
            Exit::with(
                1,
                format!(
                    "trace: cannot write the report to {}: {} (the command was not run)",
                    path.display(),
                    crate::error::plain(&e)
                ),
            )
        })?;
    let m = f.metadata()?;
    if m.file_type().is_char_device() && std::os::unix::fs::MetadataExt::rdev(&m) == libc_full_dev()
    {
        return Err(Exit::with(
            1,
            format!(
                "trace: cannot write the report to {}: No space left on device (the command was not run)",
                path.display()
            ),
        )
        .into());
    }
    Ok(f)
}

/// /dev/full's device number (1, 7), as Linux numbers it.
fn libc_full_dev() -> u64 {
    std::fs::metadata("/dev/full").map_or(u64::MAX, |m| std::os::unix::fs::MetadataExt::rdev(&m))
}

/// Where `prog` would be executed from: itself when it names a path, else the first
/// PATH entry that has it.
fn resolve_program(prog: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if prog.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(prog));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

/// Refuses, before it runs, a program whose calls could not be traced: a 32-bit
/// (i386 or x32) ELF, whose system calls the filter's architecture check lets through
/// unseen. Its report would otherwise say "no calls".
fn preflight_program(prog: &std::ffi::OsStr) -> Result<()> {
    use std::io::Read;
    let Some(path) = resolve_program(prog) else {
        return Ok(()); // the spawn says "command not found"
    };
    let mut head = [0u8; 5];
    let read = std::fs::File::open(&path).and_then(|mut f| f.read_exact(&mut head));
    if read.is_ok() && head[..4] == *b"\x7fELF" && head[4] == 1 {
        return Err(Exit::with(
            1,
            format!(
                "trace: {} is a 32-bit program: its system calls cannot be traced (64-bit programs only); it was not run",
                path.display()
            ),
        )
        .into());
    }
    Ok(())
}

/// CMD not found: 127, as a shell gives; found but not executable (permission, format,
/// a directory, a missing `#!` interpreter): 126; tracing refused: 1, naming the
/// cause.
fn spawn_error(prog: &std::ffi::OsStr, e: std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let why = crate::error::plain(&e);
    let shown = prog.to_string_lossy();
    let cause = why.strip_prefix("execvp: ").unwrap_or(&why).to_string();
    if why.starts_with("execvp") {
        let found = resolve_program(prog);
        return match (e.kind(), found) {
            (ErrorKind::NotFound, None) => {
                Exit::with(127, format!("{shown}: command not found")).into()
            }
            (ErrorKind::NotFound, Some(path)) => {
                // The file is there: what is missing is its interpreter.
                let first = std::fs::read(&path).unwrap_or_default();
                let line = first.split(|&b| b == b'\n').next().unwrap_or_default();
                match line.strip_prefix(b"#!") {
                    Some(interp) => {
                        let interp = String::from_utf8_lossy(interp);
                        let interp = interp.split_whitespace().next().unwrap_or("").to_string();
                        Exit::with(
                            126,
                            format!("{shown}: bad interpreter {interp}: No such file or directory"),
                        )
                        .into()
                    }
                    None => Exit::with(
                        127,
                        format!("{shown}: cannot execute: required file not found"),
                    )
                    .into(),
                }
            }
            _ => Exit::with(126, format!("{shown}: {cause}")).into(),
        };
    }
    match e.kind() {
        ErrorKind::Unsupported => anyhow::anyhow!("{why}"),
        _ => {
            let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            let hint = if scope == "3" {
                " (Yama ptrace_scope is 3: no process may trace)"
            } else if why.contains("seccomp") || why.contains("prctl") {
                " (a seccomp policy or container forbids installing a filter)"
            } else {
                " (a seccomp policy, a container or Yama forbids ptrace)"
            };
            anyhow::anyhow!("cannot trace {shown}: {why}{hint}")
        }
    }
}

/// Saved figures from this host, or a quick measurement of the few cases pricing
/// needs when none are saved (saved too, unless --no-save): (figures, run measured).
fn figures(settings: &Settings) -> Result<(Figures, Option<i64>)> {
    let host = crate::sys::machine::Environment::collect(None).hostname;
    let mut runs: Vec<(i64, Run)> = Vec::new();
    let path = crate::session::store_path(settings)?;
    if let Some(store) = crate::results::store::Store::open_read_only_if_any(&path)? {
        let wanted = ["read", "write", "pipe", "syscalls", "copy"];
        let evidence = crate::results::store::Evidence::of(&host, &wanted, 40);
        for r in store.newest_with(&evidence)? {
            runs.push((r.id, store.load(r.id)?));
        }
        runs.reverse();
    }
    let f = Figures::from_runs(&runs);
    if f.enough() {
        return Ok((f, None));
    }
    crate::progress::note(
        "no saved read and syscalls figures on this host: measuring the few cases pricing needs first (about 10 s)",
    );
    let mut store = crate::session::store_for_saving(settings)?;
    let run = crate::session::run_probes(settings, crate::probes::for_pricing(), "trace")?;
    let id = crate::session::save(store.as_mut(), &run)?;
    runs.push((id.unwrap_or(0), run));
    Ok((Figures::from_runs(&runs), Some(id.unwrap_or(0))))
}

/// How the user CPU time of the work was estimated.
fn user_note(c: &overhead::Correction) -> String {
    if c.pooled_calls == 0 {
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

fn exit_text(e: Ended) -> String {
    match e {
        Ended::Code(c) => format!("exited with status {c}"),
        Ended::Signal(s) => format!("was killed by signal {s}"),
    }
}

fn secs(s: f64) -> String {
    format_ns(s * 1e9)
}

/// A count with thousands separators: 31,000.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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

/// What a report is made of.
struct Report<'a> {
    cmd: &'a [String],
    ended: Ended,
    work: &'a Work,
    p: &'a Profile,
    f: &'a Figures,
    measured: Option<i64>,
    found: &'a [Finding],
}

impl Report<'_> {
    /// The report as text: what ran, the table of its I/O, the findings.
    fn text(&self, st: &Style) -> String {
        let Report {
            cmd,
            ended,
            work: run,
            p,
            f,
            measured,
            found,
        } = *self;
        let mut out = format!(
            "ioprobe trace: `{}` {} after {} under trace; its work here ≈{}: {} of user CPU and {} traced calls taking ≈{} at this machine's figures\n  note: {NOTE}; waiting (disk, network, sleep) and untraced calls are not counted as work\n  note: {}\n",
            cmd.join(" "),
            exit_text(ended),
            secs(run.traced_wall_s),
            secs(run.estimate_s),
            secs(run.user_cpu_s),
            thousands(p.counts.values().sum()),
            secs(run.priced_calls_s),
            user_note(&run.user_correction),
        );
        for n in &p.notes {
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
        // One row per (process, target): every operation on it, its data calls' sizes,
        // and what all of it would take here.
        struct Acc {
            ops: Vec<(&'static str, u64)>,
            calls: u64,
            bytes: u64,
            sizes: std::collections::BTreeMap<u64, u64>,
            time: Option<f64>,
        }
        let mut acc: std::collections::BTreeMap<(i32, usize), Acc> = Default::default();
        for (&(pid, t, op), s) in &p.ops {
            let time = price::time_here(f, p.targets[t].kind, op, s, p.pipe_sizes.contains_key(&t));
            let a = acc.entry((pid, t)).or_insert(Acc {
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
        let mut rows: Vec<(f64, Vec<String>)> = acc
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
                        a.ops.iter().map(|o| o.0).collect::<Vec<_>>().join(", "),
                        thousands(a.calls),
                        if a.bytes > 0 {
                            format_size(a.bytes)
                        } else {
                            "-".into()
                        },
                        typical.map_or("-".into(), format_size),
                        a.time.map_or("-".into(), secs),
                    ],
                )
            })
            .collect();
        rows.sort_by(|a, b| b.0.total_cmp(&a.0));
        const SHOWN: usize = 12;
        let rest: Vec<(f64, Vec<String>)> = rows.split_off(rows.len().min(SHOWN));
        let mut g = Grid::numeric(
            "its I/O, per process and target, by what the calls would take here".into(),
            &[
                "process",
                "target",
                "calls made",
                "calls",
                "bytes",
                "typical size",
                "time here",
            ],
            rows.into_iter().map(|r| r.1).collect(),
        )
        .optional(&["calls made", "typical size", "bytes"]);
        if !rest.is_empty() {
            g.footnotes.push(format!(
                "… and {} more (process, target) pairs taking {} together; --json has every call",
                rest.len(),
                secs(rest.iter().map(|r| r.0).sum())
            ));
        }
        out.push_str(&crate::report::table::render_grid(&g, st));
        if found.is_empty() {
            out.push_str("\nno findings: nothing in these calls is worth changing\n");
        } else {
            out.push_str(&format!(
                "\n{}\n",
                st.heading("findings, largest saving first:")
            ));
            out.push_str(&findings_text(found, run.estimate_s));
        }
        crate::report::table::fit_text(&out, st)
    }

    /// The report as JSON (schema version 1).
    fn json(&self) -> Result<String> {
        let Report {
            cmd,
            ended,
            work: run,
            p,
            f,
            measured,
            found,
        } = *self;
        let doc = Document {
            schema_version: 1,
            kind: "trace",
            command: cmd.to_vec(),
            exit: match ended {
                Ended::Code(c) => ExitJson::Code(c),
                Ended::Signal(s) => ExitJson::Signal(s),
            },
            work: *run,
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
                        p.targets[t].kind,
                        op,
                        s,
                        p.pipe_sizes.contains_key(&t),
                    ),
                })
                .collect(),
            opens: p
                .opens
                .iter()
                .map(|((pid, path), &count)| PathCount {
                    pid: *pid,
                    path: path.clone(),
                    count,
                })
                .collect(),
            stats: p
                .stats
                .iter()
                .map(|((pid, path), &count)| PathCount {
                    pid: *pid,
                    path: path.clone(),
                    count,
                })
                .collect(),
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
