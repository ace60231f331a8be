//! The command line (clap derive). Options are turned into plain settings structs here;
//! nothing below this module sees clap.

use crate::harness;
use crate::present::names::parser;
pub use crate::probes::Scale;
use crate::probes::{copy, pipe, read, syscalls, write};
use crate::report::Format;
use crate::units::{parse_duration_at_least, parse_size, parse_size_or_zero};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

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

/// How much to measure and where: the flags of the commands that measure.
#[derive(Debug, Args, Clone, Default)]
pub struct MeasureFlags {
    /// A smaller sweep that finishes sooner: fewer cases and less data per sample
    /// (each command's --help gives its sizes). Without it, a command measures its
    /// seed's full table.
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// Longer warm-up, at least 20 samples and up to 5 s per case.
    #[arg(long)]
    pub thorough: bool,
    /// Minimum length of one sample, e.g. 10ms; also the length a pipe stream or a
    /// batch of small-file copies is fitted to (default 25 ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_clock_duration)]
    pub sample_time: Option<Duration>,
    /// Time budget per case, warm-up included, e.g. 2s.
    #[arg(long, value_name = "DURATION", value_parser = parse_clock_duration)]
    pub budget: Option<Duration>,
    /// Time limit for the whole command, e.g. 60s: each case gets its share of the
    /// time left (never fewer than its minimum samples); the run names the rows that
    /// finished with a wider CI.
    #[arg(long, value_name = "DURATION", value_parser = parse_clock_duration)]
    pub time_limit: Option<Duration>,
    /// Pin the measuring thread to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Directory in which ioprobe creates (and removes) its scratch directory; its
    /// filesystem is the one measured (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Do not save this run (and write no HTML report).
    #[arg(long)]
    pub no_save: bool,
}

/// What goes to stdout: the flags of the commands that print results.
#[derive(Debug, Args, Clone, Default)]
pub struct OutputFlags {
    /// Print only JSON (schema version 1) on stdout.
    #[arg(long, conflicts_with_all = ["csv", "markdown"])]
    pub json: bool,
    /// Print only CSV, one row per measurement, on stdout.
    #[arg(long, conflicts_with = "markdown")]
    pub csv: bool,
    /// Print only Markdown tables on stdout.
    #[arg(long)]
    pub markdown: bool,
    /// Every column of every table, however wide (tables otherwise fit the terminal,
    /// or 100 columns when stdout is not one).
    #[arg(long)]
    pub wide: bool,
}

/// Where saved runs live: the flag of the commands that read or write the store.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreFlags {
    /// Results store (SQLite); default $XDG_DATA_HOME/ioprobe/results.db.
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
}

/// A measuring command's shared flags.
#[derive(Debug, Args, Clone, Default)]
pub struct Measuring {
    #[command(flatten)]
    pub measure: MeasureFlags,
    #[command(flatten)]
    pub output: OutputFlags,
    #[command(flatten)]
    pub store: StoreFlags,
}

/// Every shared flag, as given before the command: the measuring commands' set.
pub type Before = Measuring;

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

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every probe (syscalls, read, write, pipe, copy) with short defaults behind
    /// one progress display, save the run and write its HTML report.
    #[command(after_help = examples!(
        "ioprobe run                       every probe and what to do (≈35 s)",
        "ioprobe run --json > run.json     one JSON document",
        "ioprobe run --dir /mnt/ssd        measure another filesystem",
    ))]
    Run(Measuring),
    /// Per-call cost of open/close/read/write/lseek/pread/pwrite/mmap/stat (seed 004).
    #[command(after_help = examples!(
        "ioprobe syscalls                  every case, ns per call",
        "ioprobe syscalls --case pread,lseek_read",
        "ioprobe syscalls --io-size 4k --cpu 1",
    ))]
    Syscalls(SyscallsArgs),
    /// read(2) throughput from the page cache versus block size (seed 000).
    #[command(after_help = examples!(
        "ioprobe read                      1 KiB … 8 MiB, both ways to populate",
        "ioprobe read --sizes 4k,64k,1m --method read,pread,mmap",
        "ioprobe read --file-size 100m --populate readahead",
    ))]
    Read(ReadArgs),
    /// write(2) throughput versus block size, rewriting a pre-allocated file in place,
    /// in each durability mode (the mirror of seed 000).
    #[command(after_help = examples!(
        "ioprobe write                     none, fsync and dsync, 1 KiB … 8 MiB",
        "ioprobe write --durability fsync --sizes 64k,1m",
        "ioprobe write --method pwrite --file-size 100m",
    ))]
    Write(WriteArgs),
    /// Pipe throughput and context switches versus chunk size, capacity, method and
    /// CPU placement (seed 002).
    #[command(after_help = examples!(
        "ioprobe pipe --quick              both on one CPU, about 15 s",
        "ioprobe pipe --sizes 4k,64k,1m --placement split",
        "ioprobe pipe --method write-read --pipe-size default,1m",
    ))]
    Pipe(PipeArgs),
    /// Every way to copy a file, ranked, in each cache state and durability mode
    /// (seeds 001 and 003).
    #[command(after_help = examples!(
        "ioprobe copy --quick              every method on a 32 MiB file",
        "ioprobe copy --method read-write,copy-file-range --sizes 64k,1m",
        "ioprobe copy --system-tools --cache warm   beside cp, cat and dd",
    ))]
    Copy(CopyArgs),
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
        "ioprobe export last --format openmetrics > /var/lib/node_exporter/ioprobe.prom",
    ))]
    Export {
        #[arg(value_name = "RUN")]
        run: String,
        /// Output format; openmetrics writes every median labelled by probe, case, params
        /// and host, for a Prometheus textfile collector. Default: json (or the format
        /// flag given).
        #[arg(long, value_name = "FORMAT")]
        format: Option<ExportFormat>,
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
How: CMD runs as a ptrace tracee under a seccomp filter that stops it only at I/O calls
(read/write and their p/v forms, lseek, open/close, fsync, sendfile/splice/copy_file_range,
mmap, stat, getdents64, fcntl, io_uring_enter; socket data: sendto/recvfrom, sendmsg/
recvmsg, sendmmsg/recvmmsg; Linux AIO: io_submit (each iocb's bytes), io_getevents;
fadvise64, readahead, fallocate, ftruncate/truncate, sync/syncfs, ioctl, flock; rename,
unlink, mkdir, rmdir, link, symlink and their *at forms; utimensat, chmod, chown, the
xattr calls, readlink, access, statfs), each attributed to its file, socket or pipe;
forks, threads and execs are followed. Calls are priced with the newest saved read, write, pipe, syscalls (and copy)
runs of this host, never with their traced durations; with none saved, the few cases
needed are measured first (about 10 s) and saved, before CMD runs.

CMD runs as it would untraced: its stdin, stdout and stderr as given (a closed one stays
closed), SIGPIPE at its default, the signal mask it was given; SIGSTOP, SIGTSTP, SIGTTIN
and SIGTTOU stop it and SIGCONT resumes it (PTRACE_SEIZE with PTRACE_LISTEN); its exit
status is ioprobe's (128+N when signal N ended it; 127 when it is not found, 126 when it
cannot be executed, a missing #! interpreter named). Ctrl-C reaches CMD from the terminal;
SIGTERM and SIGHUP sent to ioprobe are passed on; if ioprobe is killed, even by SIGKILL,
the kernel kills CMD with it (PTRACE_O_EXITKILL), so it never runs on with its I/O calls
failing. Everything that could fail afterwards is checked before CMD runs: --output is
opened, the figures read or measured. The report goes to stderr (coloured only on a
terminal) or --output (never coloured), and says when CMD ran a 32-bit program (its calls
are not traced; a 32-bit CMD is refused before it runs), a setuid or file-capability
program (which ptrace runs without its privileges), or called ptrace itself.

Overhead (bench/trace.sh on a 2-core KVM guest, where each traced call costs about as much
as under strace): dd if=/dev/zero of=/dev/null bs=1 count=1M 0.22 s untraced, 47 s traced
(×215: two traced calls per byte); dd bs=64k count=16k 0.023 s vs 2.2 s; a program that
makes no system calls ×1.02, as the filter lets untraced calls run without a stop.

Examples:
  ioprobe trace -- dd if=big.iso of=/dev/null bs=4k
  ioprobe trace --json --output profile.json -- make -j2
  ioprobe trace -- sh -c 'cat log | gzip -1 > /dev/null'
";

/// `--reflink` and `--sparse` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WhenArg {
    Auto,
    Always,
    Never,
}

impl WhenArg {
    pub fn when(self) -> crate::cp::data::When {
        match self {
            WhenArg::Auto => crate::cp::data::When::Auto,
            WhenArg::Always => crate::cp::data::When::Always,
            WhenArg::Never => crate::cp::data::When::Never,
        }
    }
}

/// `ioprobe cp`'s flags: GNU cp 9.1's names and meanings (docs/cp.md lists the few
/// deliberate differences). As with GNU's getopt, an option may be repeated (the last
/// of -i/-n, of -L/-H/-P, wins), a long option may be abbreviated, and a usage error
/// exits 1.
#[derive(Debug, Args)]
pub struct CpArgs {
    /// Same as -dR --preserve=all.
    #[arg(short = 'a', long)]
    pub archive: bool,
    /// Do not copy the file data, only the attributes.
    #[arg(long)]
    pub attributes_only: bool,
    /// Make a backup of each existing destination file: CONTROL is none/off,
    /// numbered/t, existing/nil or simple/never (default: $VERSION_CONTROL, else
    /// existing).
    #[arg(long, value_name = "CONTROL", num_args = 0..=1, require_equals = true,
          default_missing_value = "")]
    pub backup: Option<String>,
    /// Like --backup, but takes no argument.
    #[arg(short = 'b')]
    pub backup_default: bool,
    /// Copy the contents of special files (FIFOs, devices) when recursive.
    #[arg(long)]
    pub copy_contents: bool,
    /// Same as --no-dereference --preserve=links.
    #[arg(short = 'd')]
    pub no_deref_links: bool,
    /// If an existing destination file cannot be opened, remove it and try again.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Prompt before overwriting (overrides an earlier -n).
    #[arg(short = 'i', long, overrides_with = "no_clobber")]
    pub interactive: bool,
    /// Follow symbolic links given on the command line.
    #[arg(short = 'H', overrides_with_all = ["dereference", "no_dereference"])]
    pub deref_command_line: bool,
    /// Hard-link files instead of copying.
    #[arg(short = 'l', long)]
    pub link: bool,
    /// Always follow symbolic links in SOURCE.
    #[arg(short = 'L', long, overrides_with_all = ["deref_command_line", "no_dereference"])]
    pub dereference: bool,
    /// Do not overwrite an existing file (overrides an earlier -i).
    #[arg(short = 'n', long, overrides_with = "interactive")]
    pub no_clobber: bool,
    /// Never follow symbolic links in SOURCE.
    #[arg(short = 'P', long, overrides_with_all = ["deref_command_line", "dereference"])]
    pub no_dereference: bool,
    /// Same as --preserve=mode,ownership,timestamps.
    #[arg(short = 'p')]
    pub preserve_default: bool,
    /// Keep these attributes: mode, ownership, timestamps, links, context, xattr, all
    /// (without LIST: mode,ownership,timestamps).
    #[arg(long, value_name = "LIST", num_args = 0..=1, require_equals = true,
          default_missing_value = "mode,ownership,timestamps", action = clap::ArgAction::Append)]
    pub preserve: Vec<String>,
    /// Do not keep these attributes.
    #[arg(long, value_name = "LIST", action = clap::ArgAction::Append)]
    pub no_preserve: Vec<String>,
    /// Use the full source file name under DIRECTORY.
    #[arg(long)]
    pub parents: bool,
    /// Copy directories recursively.
    #[arg(short = 'r', short_alias = 'R', long = "recursive")]
    pub recursive: bool,
    /// FICLONE: auto (try it, then copy), always (fail where it cannot; the default
    /// without WHEN), never.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always")]
    pub reflink: Option<WhenArg>,
    /// Remove each existing destination file before opening it (contrast --force).
    #[arg(long)]
    pub remove_destination: bool,
    /// Holes: auto (keep the source's), always (also make holes of runs of zeros),
    /// never.
    #[arg(long, value_name = "WHEN")]
    pub sparse: Option<WhenArg>,
    /// Remove trailing slashes from each SOURCE.
    #[arg(long)]
    pub strip_trailing_slashes: bool,
    /// Make symbolic links instead of copying.
    #[arg(short = 's', long)]
    pub symbolic_link: bool,
    /// The backup suffix (default: $SIMPLE_BACKUP_SUFFIX, else ~); implies a backup.
    #[arg(short = 'S', long, value_name = "SUFFIX")]
    pub suffix: Option<std::ffi::OsString>,
    /// Copy all SOURCE arguments into DIRECTORY.
    #[arg(short = 't', long, value_name = "DIRECTORY")]
    pub target_directory: Option<std::ffi::OsString>,
    /// Treat DEST as a normal file.
    #[arg(short = 'T', long)]
    pub no_target_directory: bool,
    /// Copy only when SOURCE is newer than the destination or it is missing.
    #[arg(short = 'u', long)]
    pub update: bool,
    /// Stay on this file system.
    #[arg(short = 'x', long)]
    pub one_file_system: bool,
    /// Files copied at once (default: the number of CPUs).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// One line per file: the method used and why (copy offload, reflink, sparse), and
    /// where the buffer and pipe sizes came from.
    #[arg(long)]
    pub debug: bool,
    /// The sources, then the destination (with -t, only sources). `-` is a file name,
    /// as in GNU cp: read standard input with /dev/stdin.
    #[arg(value_name = "SOURCE… DEST")]
    pub paths: Vec<std::ffi::OsString>,
}

impl CpArgs {
    /// The clap-free options; Err: a usage error (GNU's wording, exit status 1).
    /// `matches` (cp's own) give the order of the attribute and symlink options: as in
    /// GNU cp, a later one overrides an earlier (`--no-preserve=mode --preserve=all`
    /// keeps the mode, `-aL` follows symlinks, `-La` does not). Without them the order
    /// is -a, -d, -p, --preserve, --no-preserve, then -L/-H/-P.
    pub fn options(
        &self,
        verbose: bool,
        matches: Option<&clap::ArgMatches>,
    ) -> Result<crate::cp::Options, String> {
        use crate::cp::{Backup, Deref, Interactive, LinkMode, Options, Preserve};
        enum Ev<'a> {
            Archive,
            NoDerefLinks,
            PreserveDefault,
            Preserve(&'a str),
            NoPreserve(&'a str),
            Deref(Deref),
        }
        let flags = [
            ("archive", self.archive, Ev::Archive),
            ("no_deref_links", self.no_deref_links, Ev::NoDerefLinks),
            (
                "preserve_default",
                self.preserve_default,
                Ev::PreserveDefault,
            ),
            ("dereference", self.dereference, Ev::Deref(Deref::Always)),
            (
                "deref_command_line",
                self.deref_command_line,
                Ev::Deref(Deref::CommandLine),
            ),
            (
                "no_dereference",
                self.no_dereference,
                Ev::Deref(Deref::Never),
            ),
        ];
        let mut events: Vec<(usize, Ev)> = Vec::new();
        let index =
            |id: &str, fallback: usize| matches.and_then(|m| m.index_of(id)).unwrap_or(fallback);
        for (i, (id, set, ev)) in flags.into_iter().enumerate() {
            if set {
                events.push((index(id, i), ev));
            }
        }
        let listed = |id: &str, n: usize, base: usize| -> Vec<usize> {
            let got: Vec<usize> = matches
                .and_then(|m| m.indices_of(id))
                .map(|i| i.collect())
                .unwrap_or_default();
            (0..n)
                .map(|k| got.get(k).copied().unwrap_or(base + k))
                .collect()
        };
        for (k, i) in listed("preserve", self.preserve.len(), 100)
            .into_iter()
            .enumerate()
        {
            events.push((i, Ev::Preserve(&self.preserve[k])));
        }
        for (k, i) in listed("no_preserve", self.no_preserve.len(), 1000)
            .into_iter()
            .enumerate()
        {
            events.push((i, Ev::NoPreserve(&self.no_preserve[k])));
        }
        // Without matches, -L/-H/-P come last, as before.
        if matches.is_none() {
            for e in &mut events {
                if matches!(e.1, Ev::Deref(_)) {
                    e.0 += 10_000;
                }
            }
        }
        events.sort_by_key(|e| e.0);
        let mut p = Preserve::default();
        let mut deref = None;
        for (_, ev) in events {
            match ev {
                Ev::Archive => {
                    p.add(&Preserve::all());
                    deref = Some(Deref::Never);
                }
                Ev::NoDerefLinks => {
                    p.links = true;
                    deref = Some(Deref::Never);
                }
                Ev::PreserveDefault => {
                    p.mode = true;
                    p.ownership = true;
                    p.timestamps = true;
                }
                Ev::Preserve(l) => p.add(&crate::cp::parse_preserve(l)?),
                Ev::NoPreserve(l) => p.remove(&crate::cp::parse_preserve(l)?),
                Ev::Deref(d) => deref = Some(d),
            }
        }
        let recursive = self.recursive || self.archive;
        let link = match (self.link, self.symbolic_link) {
            (true, true) => return Err("cannot make both hard and symbolic links".into()),
            (true, false) => LinkMode::Hard,
            (false, true) => LinkMode::Symbolic,
            (false, false) => LinkMode::Copy,
        };
        let interactive = if self.no_clobber {
            Interactive::Never
        } else if self.interactive {
            Interactive::Ask
        } else {
            Interactive::Overwrite
        };
        let make_backups = self.backup.is_some() || self.backup_default || self.suffix.is_some();
        if make_backups && interactive == Interactive::Never {
            return Err("options --backup and --no-clobber are mutually exclusive".into());
        }
        let backup = if make_backups {
            let control = match self.backup.as_deref() {
                Some(c) if !c.is_empty() => Some(c.to_string()),
                _ => std::env::var("VERSION_CONTROL")
                    .ok()
                    .filter(|v| !v.is_empty()),
            };
            match control {
                None => Backup::Existing,
                Some(c) => Backup::parse(&c)?,
            }
        } else {
            Backup::None
        };
        let suffix = self
            .suffix
            .clone()
            .or_else(|| std::env::var_os("SIMPLE_BACKUP_SUFFIX").filter(|s| !s.is_empty()))
            .filter(|s| !s.as_encoded_bytes().contains(&b'/'))
            .unwrap_or_else(|| "~".into());
        let reflink = self.reflink.unwrap_or(WhenArg::Auto);
        let sparse = self.sparse.unwrap_or(WhenArg::Auto);
        if reflink == WhenArg::Always && sparse != WhenArg::Auto {
            return Err("--reflink can be used only with --sparse=auto".into());
        }
        if p.context {
            return Err(
                "cannot preserve security context without an SELinux-enabled kernel".into(),
            );
        }
        Ok(Options {
            operands: self.paths.clone(),
            target_directory: self.target_directory.clone(),
            no_target_directory: self.no_target_directory,
            recursive,
            deref: deref.unwrap_or(if recursive && link != LinkMode::Hard {
                Deref::Never
            } else {
                Deref::Always
            }),
            preserve: p,
            interactive,
            // -n wins over --update, as in GNU cp.
            update: self.update && interactive != Interactive::Never,
            force: self.force,
            remove_destination: self.remove_destination,
            backup,
            suffix,
            link,
            parents: self.parents,
            one_file_system: self.one_file_system,
            attributes_only: self.attributes_only,
            copy_as_regular: !recursive || self.copy_contents,
            open_dangling_dest_symlink: std::env::var_os("POSIXLY_CORRECT").is_some(),
            strip_trailing_slashes: self.strip_trailing_slashes,
            verbose,
            debug: self.debug,
            reflink: reflink.when(),
            sparse: sparse.when(),
            jobs: self
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        })
    }
}

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
    /// The command to trace and its arguments, after `--`.
    #[arg(value_name = "CMD", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// What `export --format` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    Markdown,
    Openmetrics,
}

/// Parses `5%`, `5` (both 5%) or `0.5%` into a fraction.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%');
    let v: f64 = t
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage; try 5%"))?;
    if !(0.0..1000.0).contains(&v) {
        return Err(format!("'{text}' is not a sensible percentage"));
    }
    Ok(v / 100.0)
}

// Every probe flag is optional: a flag the user gave overrides that one default of
// the probe's own `Options::for_scale`; an empty list means "not given".

#[derive(Debug, Args)]
pub struct SyscallsArgs {
    #[command(flatten)]
    pub shared: Measuring,
    /// Cases to run (comma-separated). Default: all.
    #[arg(long, value_name = "CASE", value_delimiter = ',', value_parser = parser::<syscalls::Case>())]
    pub case: Vec<syscalls::Case>,
    /// Bytes per read/write/store/load (default 8 B).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub io_size: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    #[command(flatten)]
    pub shared: Measuring,
    /// Size of the file read from the page cache (default 10 MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub file_size: Option<u64>,
    /// Block sizes (comma-separated); default 1 KiB … 8 MiB in powers of two.
    #[arg(long, alias = "block-sizes", value_name = "SIZES", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    /// How each pass reads the file (comma-separated; default read).
    #[arg(long, value_name = "METHOD", value_delimiter = ',', value_parser = parser::<read::Method>())]
    pub method: Vec<read::Method>,
    /// How the file enters the page cache (comma-separated; default both, each its own
    /// rows): write = as written in 1 MiB writes (large folios on ext4 since Linux
    /// 6.16), readahead = evicted and read back sequentially.
    #[arg(long, value_name = "MODE", value_delimiter = ',', value_parser = parser::<read::Populate>())]
    pub populate: Vec<read::Populate>,
}

#[derive(Debug, Args)]
pub struct WriteArgs {
    #[command(flatten)]
    pub shared: Measuring,
    /// Size of the file rewritten in place (default 10 MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub file_size: Option<u64>,
    /// Block sizes (comma-separated); default 1 KiB … 8 MiB in powers of two.
    #[arg(long, alias = "block-sizes", value_name = "SIZES", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    /// How each pass writes the file (comma-separated; default write).
    #[arg(long, value_name = "METHOD", value_delimiter = ',', value_parser = parser::<write::Method>())]
    pub method: Vec<write::Method>,
    /// Durability (comma-separated; default all three, none,fsync with --quick): none =
    /// page cache only, fsync = one fsync per pass inside the timing, dsync = O_DSYNC
    /// (every write durable; about a second per pass at 1 KiB blocks).
    #[arg(long, value_name = "MODE", value_delimiter = ',', value_parser = parser::<write::Durability>())]
    pub durability: Vec<write::Durability>,
}

impl WriteArgs {
    pub fn options(&self, scale: Scale) -> write::Options {
        let d = write::Options::for_scale(scale);
        write::Options {
            file_size: self.file_size.unwrap_or(d.file_size),
            block_sizes: list("--sizes", &self.sizes, d.block_sizes),
            methods: list("--method", &self.method, d.methods),
            durability: list("--durability", &self.durability, d.durability),
        }
    }
}

#[derive(Debug, Args)]
pub struct PipeArgs {
    #[command(flatten)]
    pub shared: Measuring,
    /// Chunk sizes written (comma-separated); default 1 KiB … 256 MiB in powers of 4
    /// (of 2 with --thorough).
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    /// Reader's read size; default: the chunk size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub read_size: Option<u64>,
    /// Pipe capacities (comma-separated): `default` or a size set with F_SETPIPE_SZ;
    /// default: default,1m.
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = pipe::Capacity::parse)]
    pub pipe_size: Vec<pipe::Capacity>,
    /// Methods (comma-separated; default both).
    #[arg(long, value_name = "METHOD", value_delimiter = ',', value_parser = parser::<pipe::Method>())]
    pub method: Vec<pipe::Method>,
    /// CPU placement of writer and reader (comma-separated; default all three).
    #[arg(long, value_name = "WHERE", value_delimiter = ',', value_parser = parser::<pipe::Placement>())]
    pub placement: Vec<pipe::Placement>,
    /// Bytes pushed through the pipe per sample, the same for every row. Default: each
    /// row's sample fitted to about 25 ms (--sample-time), at least 3 chunks and 4 pipe
    /// capacities, at most 1 GiB (256 MiB with --quick).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub total: Option<u64>,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    #[command(flatten)]
    pub shared: Measuring,
    /// File sizes (comma-separated); default 64 MiB and 1 GiB (64 MiB with --quick).
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_size_or_zero)]
    pub file_size: Vec<u64>,
    /// Methods (comma-separated). Default: every in-process method (plus the tools cp,
    /// cat and dd with --system-tools).
    #[arg(long, value_name = "METHOD", value_delimiter = ',', value_parser = parser::<copy::Method>())]
    pub method: Vec<copy::Method>,
    /// Buffer sizes of the read-write loop (comma-separated); default
    /// 1k,64k,128k,256k,1m,2m,100m.
    #[arg(long, alias = "buffers", value_name = "SIZES", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    /// Page-cache state of the source before each copy (comma-separated; default both).
    #[arg(long, value_name = "STATE", value_delimiter = ',', value_parser = parser::<copy::Cache>())]
    pub cache: Vec<copy::Cache>,
    /// Durability (comma-separated; default both): fsync puts an fsync inside the timing.
    #[arg(long, value_name = "MODE", value_delimiter = ',', value_parser = parser::<copy::Durability>())]
    pub durability: Vec<copy::Durability>,
    /// Verify the copy after the first passes (first, the default) or after every
    /// sample (always).
    #[arg(long, value_name = "WHEN", value_parser = parser::<copy::Verify>())]
    pub verify: Option<copy::Verify>,
    /// Also run cp, `cat src > dst` and `dd bs=1M` as child processes.
    #[arg(long)]
    pub system_tools: bool,
    /// As root, also empty the whole page cache (/proc/sys/vm/drop_caches) for cold rows.
    #[arg(long)]
    pub drop_caches: bool,
    /// Make the source sparse (a hole in every other MiB).
    #[arg(long)]
    pub sparse: bool,
}

/// A duration flag: with a unit, and at least a hundred times the clock's resolution.
fn parse_clock_duration(text: &str) -> Result<Duration, String> {
    parse_duration_at_least(text, crate::sys::calls::monotonic_resolution() * 100)
}

/// Settings shared by every command, free of clap.
#[derive(Debug, Clone)]
pub struct Settings {
    pub harness: harness::Config,
    pub mode: &'static str,
    pub scale: Scale,
    /// `--time-limit`: the whole command's.
    pub time_limit: Option<Duration>,
    /// Whether `--budget` was given (a per-case budget the user chose is not cut by a
    /// probe's default time limit).
    pub budget_given: bool,
    pub cpu: Option<usize>,
    pub dir: PathBuf,
    pub format: Format,
    pub store: Option<PathBuf>,
    pub no_save: bool,
    pub quiet: bool,
    pub verbose: bool,
    pub wide: bool,
}

impl MeasureFlags {
    /// These flags, each taken from `after` when given there, else from `self`.
    fn or(&self, after: &MeasureFlags) -> MeasureFlags {
        MeasureFlags {
            quick: after.quick || self.quick,
            thorough: after.thorough || self.thorough,
            sample_time: after.sample_time.or(self.sample_time),
            budget: after.budget.or(self.budget),
            time_limit: after.time_limit.or(self.time_limit),
            cpu: after.cpu.or(self.cpu),
            dir: after.dir.clone().or_else(|| self.dir.clone()),
            no_save: after.no_save || self.no_save,
        }
    }

    /// The flags given, by name.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--quick", self.quick),
            ("--thorough", self.thorough),
            ("--sample-time", self.sample_time.is_some()),
            ("--budget", self.budget.is_some()),
            ("--time-limit", self.time_limit.is_some()),
            ("--cpu", self.cpu.is_some()),
            ("--dir", self.dir.is_some()),
            ("--no-save", self.no_save),
        ]
        .into_iter()
        .filter_map(|(n, g)| g.then_some(n))
        .collect()
    }
}

impl OutputFlags {
    fn or(&self, after: &OutputFlags) -> OutputFlags {
        OutputFlags {
            json: after.json || self.json,
            csv: after.csv || self.csv,
            markdown: after.markdown || self.markdown,
            wide: after.wide || self.wide,
        }
    }

    fn given(&self) -> Vec<&'static str> {
        [
            ("--json", self.json),
            ("--csv", self.csv),
            ("--markdown", self.markdown),
            ("--wide", self.wide),
        ]
        .into_iter()
        .filter_map(|(n, g)| g.then_some(n))
        .collect()
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
            Command::Run(x) | Command::Advise(x) => m(x),
            Command::Syscalls(a) => m(&a.shared),
            Command::Read(a) => m(&a.shared),
            Command::Write(a) => m(&a.shared),
            Command::Pipe(a) => m(&a.shared),
            Command::Copy(a) => m(&a.shared),
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
            Command::Syscalls(_) => "syscalls",
            Command::Read(_) => "read",
            Command::Write(_) => "write",
            Command::Pipe(_) => "pipe",
            Command::Copy(_) => "copy",
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
        let (mut h, mode) = if m.thorough {
            (harness::Config::thorough(), "thorough")
        } else {
            (harness::Config::quick(), "quick")
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
            budget_given: m.budget.is_some(),
            cpu: m.cpu,
            dir: m.dir.unwrap_or_else(|| PathBuf::from(".")),
            format,
            store,
            no_save: m.no_save,
            quiet: self.quiet,
            verbose: self.verbose,
            wide: o.wide,
        };
        (settings, refused)
    }
}

/// `v` deduplicated when the user gave it, else the default `d`.
fn list<T: PartialEq + Copy>(flag: &str, v: &[T], d: Vec<T>) -> Vec<T> {
    if v.is_empty() { d } else { dedup(flag, v) }
}

impl SyscallsArgs {
    pub fn options(&self, scale: Scale) -> syscalls::Options {
        let d = syscalls::Options::for_scale(scale);
        syscalls::Options {
            cases: list("--case", &self.case, d.cases),
            io_size: self.io_size.unwrap_or(d.io_size),
        }
    }
}

impl ReadArgs {
    pub fn options(&self, scale: Scale) -> read::Options {
        let d = read::Options::for_scale(scale);
        read::Options {
            file_size: self.file_size.unwrap_or(d.file_size),
            block_sizes: list("--sizes", &self.sizes, d.block_sizes),
            methods: list("--method", &self.method, d.methods),
            populate: list("--populate", &self.populate, d.populate),
        }
    }
}

/// Removes repeated values, keeping the first occurrence; says once on stderr that
/// `flag` repeated a value, so a case is never measured twice without notice.
fn dedup<T: PartialEq + Copy>(flag: &str, v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in v {
        if !out.contains(x) {
            out.push(*x);
        }
    }
    if out.len() < v.len() {
        crate::progress::note(&format!(
            "{flag} repeats a value ({} given, {} distinct); each is measured once",
            v.len(),
            out.len()
        ));
    }
    out
}

impl PipeArgs {
    pub fn options(&self, scale: Scale) -> pipe::Options {
        let d = pipe::Options::for_scale(scale);
        pipe::Options {
            sizes: list("--sizes", &self.sizes, d.sizes),
            read_size: self.read_size.or(d.read_size),
            capacities: list("--pipe-size", &self.pipe_size, d.capacities),
            methods: list("--method", &self.method, d.methods),
            placements: list("--placement", &self.placement, d.placements),
            total: self.total.unwrap_or(d.total),
            fit: self.total.is_none(),
            corrupt: d.corrupt,
        }
    }
}

impl CopyArgs {
    pub fn options(&self, scale: Scale) -> copy::Options {
        let d = copy::Options::for_scale(scale);
        let mut methods = list("--method", &self.method, d.methods);
        if self.system_tools {
            for &t in &copy::Method::TOOLS {
                if !methods.contains(&t) {
                    methods.push(t);
                }
            }
        }
        copy::Options {
            file_sizes: list("--file-size", &self.file_size, d.file_sizes),
            methods,
            buffers: list("--sizes", &self.sizes, d.buffers),
            caches: list("--cache", &self.cache, d.caches),
            durability: list("--durability", &self.durability, d.durability),
            verify: self.verify.unwrap_or(d.verify),
            drop_caches: self.drop_caches || d.drop_caches,
            sparse: self.sparse || d.sparse,
            // Methods or buffers named: every variant of them, at every size.
            lean: d.lean && self.method.is_empty(),
            sweep_to: if self.method.is_empty() && self.sizes.is_empty() {
                d.sweep_to
            } else {
                u64::MAX
            },
            corrupt: d.corrupt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ColorWhen::{Always, Auto, Never};

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
