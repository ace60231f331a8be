//! The command line (clap derive): flags only. [`Cli::settings`] turns them into plain
//! [`Settings`]; nothing below `main` sees clap. `shared` holds the flag groups several
//! commands take and their before-the-command merge, `probes` each probe's flags; cp's
//! flags live with cp (`cp/args.rs`).

/// How sizes and durations are written, as a literal for `concat!`.
macro_rules! units {
    () => {
        "Sizes: a whole number of bytes, with k, M, G, KiB, MiB, GiB (powers of 1024) or kB, MB, GB (powers of 1000), e.g. 4k, 64KiB, 1.5G, 100MB. Durations need a unit: ns, us, ms or s, e.g. 10ms."
    };
}

/// How sizes and durations are written, for `--help`.
pub const UNITS_HELP: &str = units!();

/// A measuring command's `--help` epilogue: its examples, then how sizes are written.
macro_rules! examples {
    ($($line:literal),+ $(,)?) => {
        concat!("Examples:\n", $("  ", $line, "\n",)+ "\n", units!())
    };
}

/// Another command's `--help` epilogue: its examples.
macro_rules! examples_only {
    ($($line:literal),+ $(,)?) => {
        concat!("Examples:\n", $("  ", $line, "\n",)+)
    };
}

mod probes;
mod shared;

pub use crate::cp::args::CpArgs;
use crate::harness;
use crate::present::Style;
pub use crate::settings::{ExportFormat, Format, Scale, Settings};
use clap::{Args, CommandFactory, Parser, Subcommand};
pub use probes::{ProbeArgs, ProbeCommand};
pub use shared::{
    Before, MeasureFlags, Measuring, OutputFlags, RunArgs, StoreFlags, parse_percent,
};
use std::path::PathBuf;

/// ioprobe: what I/O system calls really cost on this machine, and which buffer size
/// and method to use.
#[derive(Debug, Parser)]
#[command(name = "ioprobe", version, about, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// A command's options may also come before it (`ioprobe --json run`); each is
    /// refused for a command that has no use for it.
    #[command(
        flatten,
        next_help_heading = "Options for the commands that use them (also after the command)"
    )]
    pub before: Before,
    #[command(flatten)]
    pub globals: Globals,
}

/// The options every command takes, before or after it.
#[derive(Debug, Args)]
pub struct Globals {
    /// No progress display and no notes on stderr (errors are still printed).
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub quiet: bool,
    /// Every warning on its own line (tables fold the rows whose CI missed the target
    /// into one line).
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub verbose: bool,
    /// Colour headings, the best row and warnings: auto (when stdout is a terminal and
    /// NO_COLOR is unset; CLICOLOR_FORCE forces it), always or never.
    #[arg(
        long,
        global = true,
        value_name = "WHEN",
        default_value = "auto",
        help_heading = "Global options"
    )]
    pub color: ColorWhen,
}

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to colour: `always` and `never` win; `auto` colours a terminal unless
    /// NO_COLOR is set (non-empty), and colours anything when CLICOLOR_FORCE is set
    /// (non-empty, not 0).
    pub fn resolve(self, no_color: Option<&str>, clicolor_force: Option<&str>, tty: bool) -> bool {
        let set = |v: Option<&str>| v.is_some_and(|v| !v.is_empty());
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto if set(no_color) => false,
            ColorWhen::Auto if set(clicolor_force) && clicolor_force != Some("0") => true,
            ColorWhen::Auto => tty,
        }
    }
}

/// `ioprobe trace …` parsed with the `trace` subcommand alone: building every
/// command's flags took 0.33 ms of a 6 ms `ioprobe trace -- true` here, as long as
/// strace needs to start. The root's options are [`Cli`]'s (a test keeps the two
/// parsers' flags and help the same); [`parse`] chooses.
#[derive(Debug, Parser)]
#[command(name = "ioprobe", version, about, arg_required_else_help = true)]
struct TraceCli {
    #[command(subcommand)]
    command: TraceOnly,
    #[command(
        flatten,
        next_help_heading = "Options for the commands that use them (also after the command)"
    )]
    before: Before,
    #[command(flatten)]
    globals: Globals,
}

#[derive(Debug, Subcommand)]
enum TraceOnly {
    /// Run a command traced and price its I/O system calls with this machine's saved
    /// figures: what it does, what that costs here, and what to change (Linux).
    #[command(after_help = TRACE_HELP)]
    Trace(TraceArgs),
}

/// The flags of `args` (the program's name first): their matches (cp applies its
/// options in the order given) and the parsed command line.
pub fn parse(args: &[std::ffi::OsString]) -> Result<(clap::ArgMatches, Cli), clap::Error> {
    use clap::FromArgMatches;
    if args.get(1).is_some_and(|a| a == "trace") {
        // Taken from the matches, not from a copy of them (only cp reads them after).
        let mut matches = TraceCli::command().try_get_matches_from(args)?;
        let t = TraceCli::from_arg_matches_mut(&mut matches)?;
        let TraceOnly::Trace(trace) = t.command;
        let cli = Cli {
            command: Command::Trace(trace),
            before: t.before,
            globals: t.globals,
        };
        return Ok((clap::ArgMatches::default(), cli));
    }
    let matches = Cli::command().try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    Ok((matches, cli))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every probe (syscalls, read, write, pipe, socket, copy) with short defaults
    /// behind one progress display, sampling until each answer is decided, save the run
    /// and write its HTML report; its advice pools this machine's saved runs (--fresh:
    /// this run alone).
    #[command(after_help = examples!(
        "ioprobe run                       every probe and what to do (≤ 30 s)",
        "ioprobe run --json > run.json     one JSON document",
        "ioprobe run --dir /mnt/ssd        measure another filesystem",
        "ioprobe run --quick               the same selection, a shorter first pass (≤ 15 s)",
        "ioprobe run --precise             every row to ±1% (≈60 s): for the figures",
        "ioprobe run --fresh               advice from this run alone, no saved runs pooled",
    ))]
    Run(RunArgs),
    /// The probes' own commands (syscalls, read, write, pipe, socket, copy).
    #[command(flatten)]
    Probe(ProbeCommand),
    /// Run a command traced and price its I/O system calls with this machine's saved
    /// figures: what it does, what that costs here, and what to change (Linux).
    #[command(after_help = TRACE_HELP)]
    Trace(TraceArgs),
    /// Copy files and trees (cp's semantics and safety): FICLONE, then
    /// copy_file_range, then read/write; holes kept; trees copied by a pool of workers.
    #[command(after_help = examples_only!(
        "ioprobe cp big.iso /mnt/backup/",
        "ioprobe cp -a -j 4 src/ dst/            a tree, attributes and links kept",
        "head -c 1G /dev/zero | ioprobe cp /dev/stdin out.bin",
        "ioprobe cp --debug a b                   say which method copied each file",
    ), version, args_override_self = true, infer_long_args = true)]
    Cp(CpArgs),
    /// Print the machine facts recorded with every run.
    #[command(after_help = examples_only!(
        "ioprobe sysinfo",
        "ioprobe sysinfo --dir /mnt/ssd --json    the filesystem there, as JSON",
    ))]
    Sysinfo {
        /// The directory whose filesystem to describe (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        #[command(flatten)]
        output: OutputFlags,
    },
    /// List saved runs.
    #[command(after_help = examples_only!(
        "ioprobe history",
        "ioprobe history --store fleet.db --csv",
    ))]
    History {
        #[command(flatten)]
        output: OutputFlags,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Print a saved run's tables (RUN: id, last, last~N or a JSON file).
    #[command(after_help = examples_only!(
        "ioprobe show last",
        "ioprobe show 12 --markdown",
        "ioprobe show run.json",
    ))]
    Show {
        #[arg(value_name = "RUN")]
        run: String,
        #[command(flatten)]
        output: OutputFlags,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Compare run B against baseline A: B ÷ A with interval and a rank-test verdict
    /// (several runs: a matrix of ratios to A).
    #[command(after_help = examples_only!(
        "ioprobe compare last~1 last        the last two runs",
        "ioprobe compare 3 7 --json",
        "ioprobe compare 3 5 9                 three machines side by side",
        "ioprobe compare base.json last --fail-if-slower 5%",
    ))]
    Compare {
        /// The baseline run: id, last, last~N or a JSON file.
        #[arg(value_name = "A")]
        a: String,
        /// The run compared with it: id, last, last~N or a JSON file. Several runs give a
        /// matrix: one column per run, each as a ratio to A.
        #[arg(value_name = "B", required = true, num_args = 1..)]
        b: Vec<String>,
        /// Exit with status 3 when a measurement is significantly slower by more than this, e.g. 5%.
        #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
        fail_if_slower: Option<f64>,
        #[command(flatten)]
        output: OutputFlags,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Print a saved run as JSON (the --json schema).
    #[command(after_help = examples_only!(
        "ioprobe export last > run.json",
        "ioprobe export 12 --csv",
        "ioprobe export last --format openmetrics --output ioprobe.prom",
    ))]
    Export {
        #[arg(value_name = "RUN")]
        run: String,
        /// Output format; openmetrics writes every median labelled by probe, case, params
        /// and machine, and every answer (sizes, methods, confidence), for a Prometheus
        /// textfile collector. Default: json (or the format flag given).
        #[arg(long, value_name = "FORMAT")]
        format: Option<ExportArg>,
        /// Write to FILE instead of stdout: a temporary file in its directory, fsynced,
        /// then renamed over FILE, so a reader never sees it half-written.
        #[arg(long = "output", value_name = "FILE")]
        to_file: Option<PathBuf>,
        #[command(flatten)]
        output: OutputFlags,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Save runs from JSON files (from --json or export) into the store.
    #[command(after_help = examples_only!(
        "ioprobe import run-12.json",
        "ioprobe import laptop/*.json --store fleet.db",
    ))]
    Import {
        /// Run documents (from --json or export), validated before any is saved.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Write a self-contained HTML report and/or SVG plots of a run.
    #[command(after_help = examples_only!(
        "ioprobe report --html report.html",
        "ioprobe report 12 --svg plots/",
    ))]
    Report {
        #[arg(value_name = "RUN", default_value = "last")]
        run: String,
        /// HTML file to write.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Directory to write one SVG per plot into.
        #[arg(long, value_name = "DIR")]
        svg: Option<PathBuf>,
        #[command(flatten)]
        store: StoreFlags,
    },
    /// Advice from every probe (syscall patterns, read and write block sizes, pipe
    /// chunks and capacity, copy methods) with its evidence, from the newest saved run
    /// of each probe, or from a quick run when nothing is saved.
    #[command(after_help = examples_only!(
        "ioprobe advise",
        "ioprobe advise --json | jq '.recommendations[] | {topic, action}'",
        "ioprobe advise --markdown > ADVICE.md",
    ))]
    Advise(Measuring),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = examples_only!(
        "ioprobe completions bash > ~/.local/share/bash-completion/completions/ioprobe",
        "ioprobe completions zsh > ~/.zfunc/_ioprobe",
        "ioprobe completions fish > ~/.config/fish/completions/ioprobe.fish",
    ))]
    Completions {
        /// The shell to complete for.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    #[command(after_help = examples_only!(
        "ioprobe manpage > ~/.local/share/man/man1/ioprobe.1",
        "ioprobe manpage | man -l -",
    ))]
    Manpage,
}

/// `trace --help`'s epilogue: how it works, what it costs, examples.
const TRACE_HELP: &str = "\
How: with eBPF where the kernel allows it (root, or CAP_BPF and CAP_PERFMON, and BTF),
else with preload for a dynamically linked CMD (glibc), else with ptrace (--tracer says
which; the report names the one that ran). eBPF: CMD runs untraced, as fast as it can
(the calls cost ~0.3 µs more each here), while small BPF programs assembled by ioprobe
record its calls in the kernel. preload (no privilege needed): ptrace as below, plus a
library ioprobe adds to LD_PRELOAD (and removes again before the program's code runs)
that makes the programs' own read, write, pread, pwrite, lseek, open, close and stat
calls from a page the filter lets through, recording them for ioprobe without a stop;
the loader's, libc's own and multithreaded programs' calls stop as under ptrace, so the
counts stay strace's; a program whose processes made fewer than 100 calls through it
starts without it from then on (its start costs more than it saves). ptrace: CMD runs as a
ptrace tracee under a seccomp filter that stops it only at I/O calls
(read/write and their p/v forms, lseek, open/close, fsync, sendfile/splice/copy_file_range,
mmap, stat, getdents64, fcntl, io_uring_enter; socket data: sendto/recvfrom, sendmsg/
recvmsg, sendmmsg/recvmmsg; Linux AIO: io_submit (each iocb's bytes), io_getevents;
fadvise64, readahead, fallocate, ftruncate/truncate, sync/syncfs, ioctl, flock; rename,
unlink, mkdir, rmdir, link, symlink and their *at forms; utimensat, chmod, chown, the
xattr calls, readlink, access, statfs), each attributed to its file, socket or pipe;
forks, threads and execs are followed. Calls are priced with the newest saved read, write, pipe, syscalls (and copy)
runs of this host, never with their traced durations; with none saved, the few cases
needed are measured first (how long is said first) and saved, before CMD runs.

CMD runs as it would untraced: its stdin, stdout and stderr as given (a closed one stays
closed), SIGPIPE at its default, the signal mask it was given; SIGSTOP, SIGTSTP, SIGTTIN
and SIGTTOU stop it and SIGCONT resumes it (PTRACE_SEIZE with PTRACE_LISTEN); its exit
status is ioprobe's (when signal N ended it, ioprobe ends by N once the report is written,
as strace does; 127 when it is not found, 126 when it cannot be executed, a missing #!
interpreter named). Ctrl-C reaches CMD from the terminal;
SIGTERM and SIGHUP sent to ioprobe are passed on; if ioprobe is killed, even by SIGKILL,
the kernel kills CMD with it (ptrace: PTRACE_O_EXITKILL, so it never runs on with its I/O
calls failing; eBPF: PR_SET_PDEATHSIG). Everything that could fail afterwards is checked before CMD runs: --output is
opened, the figures read or measured. The report goes to stderr (coloured only on a
terminal) or --output (never coloured), and says when CMD ran a 32-bit program (its calls
are not traced; a 32-bit CMD is refused before it runs), a setuid or file-capability
program (which ptrace runs without its privileges), or called ptrace itself (which fails
under ptrace). Under eBPF, the calls whose memory it does not copy (io_submit's iocbs,
io_uring's rings, sendmmsg/recvmmsg's arrays) are counted and named, their bytes not.

Overhead (bench/trace.sh on a 2-core KVM guest, medians of 5, ioprobe's own start,
pricing and report included), eBPF / preload / ptrace: dd bs=4k over a cached 64 MiB
file (16 ms untraced) ×1.69-1.92 / ×2.13-2.2 / ×174-179 (strace ×171-176); make of 8 C
files ×1.13-1.14 / ×2.77-2.94 / ×3.37-3.48; a Python script reading 400k lines ×1.11 /
×1.22-1.29 / ×4.74-4.83; true 1 ms untraced, 6.9-7.4 / 4.9-5.4 / 4.5-4.7 ms (strace
4.0-4.1 ms; 40 runs 20 ms apart: 6.35 / 6.66 / 5.9 against strace's 6.81); per traced
call 0.15-0.17 µs / 0.08-0.09 µs / 88-90 µs (ptrace's follows the guest's context
switches, strace's with it).
Counts equal strace -f -c's (preload: the loader's bookkeeping for the library can add
an anonymous mmap per program, which the report says).

Attached (--pid PID[,PID...] or --cgroup PATH, with --duration D or until Ctrl-C): every
thread of each process and every process they start, over a window; the report gives
calls, bytes and work per second of their run and prices each finding per second. eBPF
filters on the process ids (or the cgroup) in the kernel; without it, ptrace seizes every
thread and stops at every system call (a running process cannot be given a seccomp
filter), never with PTRACE_O_EXITKILL: if ioprobe dies, even by SIGKILL, the processes
run on. Detaching leaves them as they were: no stop, no signal, no changed disposition.
preload cannot attach. A refused attach (Yama's ptrace_scope, CAP_SYS_PTRACE, another
tracer, a nested PID namespace, a kernel thread) says why in one line, before anything
is attached.

Examples:
  ioprobe trace -- dd if=big.iso of=/dev/null bs=4k
  ioprobe trace --pid \"$(pidof postgres | tr ' ' ,)\" --duration 30s
  ioprobe trace --cgroup system.slice/nginx.service --duration 10s --json --output nginx.json
  ioprobe trace --json --output profile.json -- make -j2
  ioprobe trace -- sh -c 'cat log | gzip -1 > /dev/null'
  ioprobe trace --tracer ptrace -- ./my-program
  ioprobe trace --tracer preload -- python3 script.py
";

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(flatten)]
    pub measure: MeasureFlags,
    #[command(flatten)]
    pub store: StoreFlags,
    /// Write the report as JSON (schema version 1): the whole profile and the findings.
    #[arg(long)]
    pub json: bool,
    /// Write the report to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Price with these runs (id, last, last~N or a JSON file; comma-separated) instead
    /// of this host's newest: what the calls would cost on another machine.
    #[arg(long, value_name = "RUN", value_delimiter = ',')]
    pub figures: Vec<String>,
    /// How to watch CMD: eBPF where the kernel allows it (root, or CAP_BPF and
    /// CAP_PERFMON, and BTF); else preload (ptrace, with a library that records the
    /// program's own read/write/pread/pwrite/lseek/open/close calls without a stop)
    /// for a dynamically linked program; else ptrace. `ebpf` and `preload` fail
    /// rather than fall back.
    #[arg(long, value_enum, default_value = "auto")]
    pub tracer: TracerArg,
    /// Attach to these running processes (every thread, and every process they start
    /// after the attach) instead of running CMD; detaching leaves them as they were.
    #[arg(long = "pid", value_name = "PID", value_delimiter = ',', conflicts_with_all = ["command", "cgroup"])]
    pub pids: Vec<i32>,
    /// Attach to every process of this cgroup v2 (and those below it; eBPF), e.g. a
    /// container, a systemd service (system.slice/NAME.service) or a pod.
    #[arg(long, value_name = "PATH", conflicts_with = "command")]
    pub cgroup: Option<PathBuf>,
    /// With --pid or --cgroup: how long to watch (e.g. 10s; Ctrl-C also ends it, and
    /// the report is still written).
    #[arg(long, value_name = "D", value_parser = crate::units::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// The command to trace and its arguments, after `--`.
    #[arg(value_name = "CMD", required_unless_present_any = ["pids", "cgroup"], num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// trace's `--tracer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TracerArg {
    Auto,
    Ebpf,
    Preload,
    Ptrace,
}

/// What `export --format` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportArg {
    Json,
    Csv,
    Markdown,
    Openmetrics,
}

impl From<ExportArg> for ExportFormat {
    fn from(a: ExportArg) -> ExportFormat {
        match a {
            ExportArg::Json => ExportFormat::Json,
            ExportArg::Csv => ExportFormat::Csv,
            ExportArg::Markdown => ExportFormat::Markdown,
            ExportArg::Openmetrics => ExportFormat::Openmetrics,
        }
    }
}

impl Command {
    /// The shared flags this command takes: measuring, output and store (None: it has
    /// no use for that group; for sysinfo, only --dir of the measuring group).
    fn groups(
        &self,
    ) -> (
        Option<MeasureFlags>,
        Option<&OutputFlags>,
        Option<&StoreFlags>,
    ) {
        fn m(
            x: &Measuring,
        ) -> (
            Option<MeasureFlags>,
            Option<&OutputFlags>,
            Option<&StoreFlags>,
        ) {
            (Some(x.measure.clone()), Some(&x.output), Some(&x.store))
        }
        match self {
            Command::Run(x) => m(&x.shared),
            Command::Advise(x) => m(x),
            Command::Probe(p) => m(p.args().shared()),
            Command::Sysinfo { dir, output } => (
                Some(MeasureFlags {
                    dir: dir.clone(),
                    ..MeasureFlags::default()
                }),
                Some(output),
                None,
            ),
            Command::History { output, store }
            | Command::Show { output, store, .. }
            | Command::Compare { output, store, .. }
            | Command::Export { output, store, .. } => (None, Some(output), Some(store)),
            Command::Trace(t) => (Some(t.measure.clone()), None, Some(&t.store)),
            Command::Import { store, .. } | Command::Report { store, .. } => {
                (None, None, Some(store))
            }
            Command::Completions { .. } | Command::Manpage | Command::Cp(_) => (None, None, None),
        }
    }

    /// The command's name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Run(_) => "run",
            Command::Probe(p) => p.name(),
            Command::Sysinfo { .. } => "sysinfo",
            Command::Trace(_) => "trace",
            Command::Cp(_) => "cp",
            Command::History { .. } => "history",
            Command::Show { .. } => "show",
            Command::Compare { .. } => "compare",
            Command::Export { .. } => "export",
            Command::Import { .. } => "import",
            Command::Report { .. } => "report",
            Command::Advise(_) => "advise",
            Command::Completions { .. } => "completions",
            Command::Manpage => "manpage",
        }
    }
}

impl Cli {
    /// Plain settings from the flags, those given before the command merged with those
    /// after it, and the flags given before a command that has no use for them (ignored,
    /// so that a wrapper passing the same flags to every command keeps working; after
    /// the command, such a flag is a usage error).
    pub fn settings(&self) -> (Settings, Vec<&'static str>) {
        let (measure, output, store) = self.command.groups();
        let b = &self.before;
        let mut refused: Vec<&str> = Vec::new();
        match &measure {
            None => refused.extend(b.measure.given()),
            Some(_) if matches!(self.command, Command::Sysinfo { .. }) => {
                refused.extend(b.measure.given().into_iter().filter(|&f| f != "--dir"))
            }
            Some(_) => {}
        }
        if output.is_none() {
            refused.extend(b.output.given());
        }
        if store.is_none() && b.store.store.is_some() {
            refused.push("--store");
        }
        let m = b.measure.or(&measure.unwrap_or_default());
        let o = b.output.or(output.unwrap_or(&OutputFlags::default()));
        let store = store
            .and_then(|s| s.store.clone())
            .or(b.store.store.clone());
        // The harness mode recorded is the scale that ran: `--quick` and the default
        // sample alike, `--thorough` longer.
        let (mut h, mode) = if m.thorough {
            (harness::Config::thorough(), "thorough")
        } else if m.quick {
            (harness::Config::quick(), "quick")
        } else {
            (harness::Config::quick(), "default")
        };
        if let Some(t) = m.sample_time {
            h.sample_time = t;
            h.pass_time = t;
        }
        if let Some(t) = m.budget {
            h.budget = t;
            h.warmup = h.warmup.min(t / 4);
        }
        let format = if o.json {
            Format::Json
        } else if o.csv {
            Format::Csv
        } else if o.markdown {
            Format::Markdown
        } else {
            Format::Table
        };
        let settings = Settings {
            harness: h,
            mode,
            scale: if m.quick {
                Scale::Quick
            } else if m.thorough {
                Scale::Thorough
            } else {
                Scale::Default
            },
            time_limit: m.time_limit,
            time_limit_by: None,
            budget_given: m.budget.is_some(),
            cpu: m.cpu,
            dir: m.dir.unwrap_or_else(|| PathBuf::from(".")),
            format,
            store,
            no_save: m.no_save,
            fresh: matches!(&self.command, Command::Run(r) if r.fresh),
            precise: matches!(&self.command, Command::Run(r) if r.precise),
            openmetrics: match &self.command {
                Command::Run(r) => r.openmetrics.clone(),
                _ => None,
            },
            quiet: self.globals.quiet,
            verbose: self.globals.verbose,
            style: output_style(self, o.wide),
        };
        (settings, refused)
    }
}

/// Help and version go to stdout with status 0; usage errors become one line, status 2.
pub fn clap_exit(e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            2
        }
        // GNU cp exits 1 on a usage error, and scripts test for it; its messages read
        // as cp's (docs/cp.md): `ioprobe: cp: …` ending with where its help is.
        _ if is_cp() => {
            eprintln!("ioprobe: cp: {} (see 'ioprobe cp --help')", cp_usage(&e));
            1
        }
        _ => {
            eprintln!("ioprobe: error: {}", clap_one_line(&e));
            2
        }
    }
}

/// A usage error of `ioprobe cp` in GNU cp's words where GNU has them ("unrecognized
/// option '--bogus'"), else clap's on one line.
fn cp_usage(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    match (e.kind(), e.get(ContextKind::InvalidArg)) {
        (ErrorKind::UnknownArgument, Some(ContextValue::String(arg))) => {
            format!("unrecognized option '{}'", crate::units::escape(arg))
        }
        _ => clap_one_line(e),
    }
}

/// Whether the command line runs `ioprobe cp` (its first word that is not an option).
fn is_cp() -> bool {
    std::env::args_os()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .is_some_and(|a| a == "cp")
}

/// clap's message on one line: user values with control characters escaped (a newline
/// in an argument must not break the line), and the parts that help kept: the missing
/// arguments' names and "a similar subcommand exists" tips; the usage block dropped.
fn clap_one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let mut text = e.render().to_string();
    for kind in [ContextKind::InvalidValue, ContextKind::InvalidArg] {
        if let Some(ContextValue::String(v)) = e.get(kind) {
            text = text.replace(v.as_str(), &crate::units::escape(v));
        }
    }
    let kept: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = one_line(&kept.join(" "));
    let line = line.trim_start_matches("error: ").to_string();
    if line.is_empty() {
        "invalid arguments".into()
    } else {
        line
    }
}

/// An error message on one line: control characters from user input shown escaped,
/// runs of spaces folded.
pub fn one_line(s: &str) -> String {
    crate::units::escape(s)
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The width notes on stderr fold to: its terminal's, else COLUMNS, else 100 columns
/// (as tables on stdout); none with `--wide`.
pub fn stderr_width(s: &Settings) -> Option<usize> {
    s.style.width.map(|stdout| {
        crate::sys::calls::stderr_terminal_width()
            .filter(|&w| w >= 40)
            .unwrap_or(stdout)
    })
}

/// How tables are drawn on stdout: the terminal's width (or COLUMNS, or 100 columns
/// when stdout is no terminal; none with `--wide`), and colour as `--color` and the
/// environment say, and `-v` for every warning on its own line.
fn output_style(cli: &Cli, wide: bool) -> Style {
    let terminal = crate::sys::calls::stdout_terminal_width();
    let env = |k: &str| std::env::var(k).ok();
    Style {
        width: if wide {
            None
        } else {
            terminal
                .or_else(|| env("COLUMNS").and_then(|c| c.trim().parse().ok()))
                .filter(|&w: &usize| w >= 40)
                .or(Some(crate::present::style::DEFAULT_WIDTH))
        },
        color: cli.globals.color.resolve(
            env("NO_COLOR").as_deref(),
            env("CLICOLOR_FORCE").as_deref(),
            terminal.is_some(),
        ),
        verbose: cli.globals.verbose,
    }
}

/// `ioprobe completions SHELL` and `ioprobe manpage`: generated from these flags.
pub fn generated(command: &Command) -> anyhow::Result<Option<String>> {
    let mut out = Vec::new();
    match command {
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "ioprobe", &mut out)
        }
        Command::Manpage => clap_mangen::Man::new(Cli::command()).render(&mut out)?,
        _ => return Ok(None),
    }
    Ok(Some(String::from_utf8(out)?))
}

impl TraceArgs {
    /// trace's options.
    pub fn options(&self) -> crate::trace::Options {
        crate::trace::Options {
            command: self.command.clone(),
            output: self.output.clone(),
            json: self.json,
            figures: self.figures.clone(),
            tracer: match self.tracer {
                TracerArg::Auto => None,
                TracerArg::Ebpf => Some(crate::sys::trace::Tracer::Ebpf),
                TracerArg::Preload => Some(crate::sys::trace::Tracer::Preload),
                TracerArg::Ptrace => Some(crate::sys::trace::Tracer::Ptrace),
            },
            pids: self.pids.clone(),
            cgroup: self.cgroup.clone(),
            duration: self.duration,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ColorWhen::{Always, Auto, Never};
    use super::{Cli, CommandFactory, TraceCli, parse};

    /// `trace` parsed alone ([`TraceCli`]) has the root flags, the help and the errors
    /// of the whole parser.
    #[test]
    fn trace_alone_parses_and_helps_as_the_whole_command_line() {
        TraceCli::command().debug_assert();
        let (mut whole, mut alone) = (Cli::command(), TraceCli::command());
        let ids = |c: &clap::Command| -> Vec<String> {
            c.get_arguments().map(|a| a.get_id().to_string()).collect()
        };
        assert_eq!(ids(&whole), ids(&alone));
        let help = |c: &mut clap::Command| {
            c.build();
            c.find_subcommand_mut("trace")
                .unwrap()
                .render_long_help()
                .to_string()
        };
        assert_eq!(help(&mut whole), help(&mut alone));
        let argv = |s: &str| -> Vec<std::ffi::OsString> { s.split(' ').map(Into::into).collect() };
        for line in [
            "ioprobe trace --json --tracer ptrace -q -- dd if=x of=y",
            "ioprobe trace --pid 1,2 --duration 2s --color never",
            "ioprobe trace --dir /tmp --figures last,last~1 true",
        ] {
            let (_, a) = parse(&argv(line)).unwrap();
            let b = <Cli as clap::Parser>::try_parse_from(argv(line)).unwrap();
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{line}");
        }
        for line in [
            "ioprobe trace",
            "ioprobe trace --tracer x -- true",
            "ioprobe trace --pid 1 -- true",
        ] {
            let a = parse(&argv(line)).unwrap_err();
            let b = <Cli as clap::Parser>::try_parse_from(argv(line)).unwrap_err();
            assert_eq!(
                (a.kind(), a.to_string()),
                (b.kind(), b.to_string()),
                "{line}"
            );
        }
    }

    #[test]
    fn colour_follows_the_flag_then_no_color_then_clicolor_force_then_the_terminal() {
        assert!(Always.resolve(Some("1"), None, false));
        assert!(!Never.resolve(None, Some("1"), true));
        assert!(!Auto.resolve(Some("1"), Some("1"), true));
        assert!(
            Auto.resolve(Some(""), None, true),
            "an empty NO_COLOR is unset"
        );
        assert!(Auto.resolve(None, Some("1"), false));
        assert!(!Auto.resolve(None, Some("0"), false));
        assert!(Auto.resolve(None, None, true));
        assert!(!Auto.resolve(None, None, false));
    }
}
