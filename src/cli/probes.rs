//! Each probe's own command and flags, and the probe they build. A new probe adds its
//! flags struct (with `options(scale)`) and one entry in `probe_commands!` here.

use super::shared::Measuring;
use crate::names::parser;
use crate::probes::{Probe, Scale, copy, pipe, read, socket, syscalls, write};
use crate::units::{parse_size, parse_size_or_zero};
use clap::{Args, Subcommand};

/// Declares every probe's command once: its variant of [`ProbeCommand`] (doc comment,
/// examples, flags struct), its name as typed, and the probe its flags build (through
/// the flags struct's `options(scale)`).
macro_rules! probe_commands {
    ($(
        $(#[$meta:meta])*
        $variant:ident($args:ty) = $name:literal => $probe:path
    ),+ $(,)?) => {
        /// The probes' own commands.
        #[derive(Debug, Subcommand)]
        pub enum ProbeCommand {
            $( $(#[$meta])* $variant($args), )+
        }

        impl ProbeCommand {
            pub fn args(&self) -> &dyn ProbeArgs {
                match self {
                    $( ProbeCommand::$variant(a) => a, )+
                }
            }

            /// The command's name, as typed (the probe's name).
            pub fn name(&self) -> &'static str {
                match self {
                    $( ProbeCommand::$variant(_) => $name, )+
                }
            }
        }

        $(
            impl ProbeArgs for $args {
                fn shared(&self) -> &Measuring {
                    &self.shared
                }
                fn probe(&self, scale: Scale) -> Box<dyn Probe> {
                    Box::new(<$probe>::new(self.options(scale)))
                }
            }
        )+
    };
}

probe_commands! {
    /// Per-call cost of open/close/read/write/lseek/pread/pwrite/mmap/stat (seed 004).
    #[command(after_help = examples!(
        "ioprobe syscalls                  every case, ns per call",
        "ioprobe syscalls --case pread,lseek_read",
        "ioprobe syscalls --io-size 4k --cpu 1",
    ))]
    Syscalls(SyscallsArgs) = "syscalls" => syscalls::Syscalls,
    /// read(2) throughput from the page cache versus block size (seed 000).
    #[command(after_help = examples!(
        "ioprobe read                      1 KiB … 8 MiB, both ways to populate",
        "ioprobe read --sizes 4k,64k,1m --method read,pread,mmap",
        "ioprobe read --file-size 100m --populate readahead",
    ))]
    Read(ReadArgs) = "read" => read::ReadProbe,
    /// write(2) throughput versus block size, rewriting a pre-allocated file in place,
    /// in each durability mode (the mirror of seed 000).
    #[command(after_help = examples!(
        "ioprobe write                     none, fsync and dsync, 1 KiB … 8 MiB",
        "ioprobe write --durability fsync --sizes 64k,1m",
        "ioprobe write --method pwrite --file-size 100m",
    ))]
    Write(WriteArgs) = "write" => write::WriteProbe,
    /// Pipe throughput and context switches versus chunk size, capacity, method and
    /// CPU placement (seed 002).
    #[command(after_help = examples!(
        "ioprobe pipe --quick              both on one CPU, about 15 s",
        "ioprobe pipe --sizes 4k,64k,1m --placement split",
        "ioprobe pipe --method write-read --pipe-size default,1m",
    ))]
    Pipe(PipeArgs) = "pipe" => pipe::PipeProbe,
    /// Socket throughput and context switches versus chunk size, family (unix, tcp,
    /// unix-dgram, udp over loopback), method, buffers and CPU placement.
    #[command(after_help = examples!(
        "ioprobe socket --quick            kernel buffers, both on one CPU, about 30 s",
        "ioprobe socket --family tcp --method send-recv,zerocopy --sizes 4k,64k,1m",
        "ioprobe socket --family unix,tcp --sndbuf default,1m --rcvbuf default,1m",
    ))]
    Socket(SocketArgs) = "socket" => socket::SocketProbe,
    /// Every way to copy a file, ranked, in each cache state and durability mode
    /// (seeds 001 and 003).
    #[command(after_help = examples!(
        "ioprobe copy --quick              every method on a 32 MiB file",
        "ioprobe copy --method read-write,copy-file-range --sizes 64k,1m",
        "ioprobe copy --system-tools --cache warm   beside cp, cat and dd",
    ))]
    Copy(CopyArgs) = "copy" => copy::CopyProbe,
}

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
    /// Size of the file read from the page cache (default 10 MiB); comma-separated, each
    /// file read in turn, its rows named by its size (a file past the CPU's last-level
    /// cache reads slower than one within it).
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_size)]
    pub file_size: Vec<u64>,
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
            time_limit: d.time_limit,
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
pub struct SocketArgs {
    #[command(flatten)]
    pub shared: Measuring,
    /// Chunk sizes sent (comma-separated); a datagram family sends one datagram per
    /// chunk. Default 1 KiB … 16 MiB in powers of 4 (of 2 with --thorough).
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    /// Families (comma-separated; default all four).
    #[arg(long, value_name = "FAMILY", value_delimiter = ',', value_parser = parser::<socket::Family>())]
    pub family: Vec<socket::Family>,
    /// Loopback addresses of tcp and udp (comma-separated: v4 = 127.0.0.1, v6 = ::1;
    /// default both where ::1 exists).
    #[arg(long, value_name = "IP", value_delimiter = ',', value_parser = parser::<socket::Ip>())]
    pub ip: Vec<socket::Ip>,
    /// Methods (comma-separated; default all six).
    #[arg(long, value_name = "METHOD", value_delimiter = ',', value_parser = parser::<socket::Method>())]
    pub method: Vec<socket::Method>,
    /// CPU placement of writer and reader (comma-separated; default same, all three
    /// with --thorough).
    #[arg(long, value_name = "WHERE", value_delimiter = ',', value_parser = parser::<socket::Placement>())]
    pub placement: Vec<socket::Placement>,
    /// SO_SNDBUF of the writer (comma-separated): `default` or a size, granted size
    /// read back; default: default,4m.
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = socket::Buffer::parse)]
    pub sndbuf: Vec<socket::Buffer>,
    /// SO_RCVBUF of the reader (comma-separated): `default` or a size, granted size
    /// read back; default: default,4m.
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = socket::Buffer::parse)]
    pub rcvbuf: Vec<socket::Buffer>,
    /// TCP_NODELAY on the writer (comma-separated: off, on; default both, on at
    /// chunks of 16 KiB or less).
    #[arg(long, value_name = "ON", value_delimiter = ',', value_parser = parser::<socket::Nodelay>())]
    pub nodelay: Vec<socket::Nodelay>,
    /// Bytes sent per sample, the same for every row. Default: each row's sample
    /// fitted to about 25 ms (--sample-time), at least 1 MiB and 3 chunks, at most
    /// 1 GiB (256 MiB with --quick).
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

/// `v` deduplicated when the user gave it, else the default `d`.
fn list<T: PartialEq + Copy>(flag: &str, v: &[T], d: Vec<T>) -> Vec<T> {
    if v.is_empty() { d } else { dedup(flag, v) }
}

impl SyscallsArgs {
    pub fn options(&self, scale: Scale) -> syscalls::Options {
        let d = syscalls::Options::for_scale(scale);
        syscalls::Options {
            time_limit: d.time_limit,
            cases: list("--case", &self.case, d.cases),
            io_size: self.io_size.unwrap_or(d.io_size),
        }
    }
}

impl ReadArgs {
    pub fn options(&self, scale: Scale) -> read::Options {
        let d = read::Options::for_scale(scale);
        read::Options {
            time_limit: d.time_limit,
            file_sizes: list("--file-size", &self.file_size, d.file_sizes),
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
            time_limit: d.time_limit,
            chunk_sizes: list("--sizes", &self.sizes, d.chunk_sizes),
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

impl SocketArgs {
    pub fn options(&self, scale: Scale) -> socket::Options {
        let d = socket::Options::for_scale(scale);
        // Named axes are measured whole: the defaults' economy is for the defaults.
        let named = !(self.method.is_empty()
            && self.sndbuf.is_empty()
            && self.rcvbuf.is_empty()
            && self.nodelay.is_empty()
            && self.ip.is_empty());
        socket::Options {
            time_limit: d.time_limit,
            chunk_sizes: list("--sizes", &self.sizes, d.chunk_sizes),
            families: list("--family", &self.family, d.families),
            ips: list("--ip", &self.ip, d.ips),
            methods: list("--method", &self.method, d.methods),
            placements: list("--placement", &self.placement, d.placements),
            sndbufs: list("--sndbuf", &self.sndbuf, d.sndbufs),
            rcvbufs: list("--rcvbuf", &self.rcvbuf, d.rcvbufs),
            nodelay: list("--nodelay", &self.nodelay, d.nodelay),
            total: self.total.unwrap_or(d.total),
            fit: self.total.is_none(),
            lean: d.lean && !named,
            corrupt: d.corrupt,
            samples_per_connection: d.samples_per_connection,
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
            time_limit: d.time_limit,
            file_sizes: list("--file-size", &self.file_size, d.file_sizes),
            methods,
            buffer_sizes: list("--sizes", &self.sizes, d.buffer_sizes),
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

/// What main needs of a probe's command: its shared flags and the probe it asks for.
pub trait ProbeArgs {
    fn shared(&self) -> &Measuring;
    fn probe(&self, scale: Scale) -> Box<dyn Probe>;
}
