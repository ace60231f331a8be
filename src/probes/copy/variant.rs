//! What a copy variant is: the method (a contract name) and its parameters, and what
//! its destination's data has reached when it returns. Shared by the in-process
//! methods and the system tools, which do not know each other.

use crate::names::{Named, named_enum};

named_enum! {
    /// How a copy is made. Names are a contract (`--method`, JSON).
    pub enum Method as "copy method" {
        ReadWrite = "read-write",
        ReadWriteFadvise = "read-write-fadvise",
        PreadPwrite = "pread-pwrite",
        MmapWrite = "mmap-write",
        MmapMemcpyMsync = "mmap-memcpy-msync",
        MmapMemcpyMunmap = "mmap-memcpy-munmap",
        Sendfile = "sendfile",
        Splice = "splice",
        CopyFileRange = "copy-file-range",
        Reflink = "reflink",
        IoUring = "io-uring",
        Direct = "direct",
        Cp = "cp",
        Cat = "cat",
        Dd = "dd",
    }
}

impl Method {
    /// In-process methods, in table order.
    pub const IN_PROCESS: [Method; 12] = [
        Method::ReadWrite,
        Method::ReadWriteFadvise,
        Method::PreadPwrite,
        Method::MmapWrite,
        Method::MmapMemcpyMsync,
        Method::MmapMemcpyMunmap,
        Method::Sendfile,
        Method::Splice,
        Method::CopyFileRange,
        Method::Reflink,
        Method::IoUring,
        Method::Direct,
    ];
    /// Public tools run as child processes with `--system-tools`.
    pub const TOOLS: [Method; 3] = [Method::Cp, Method::Cat, Method::Dd];
}

impl Method {
    pub fn is_tool(self) -> bool {
        Method::TOOLS.contains(&self)
    }

    /// How much code and care a method asks of a programmer (lower is simpler and more
    /// portable): among methods tied with the fastest, the simplest is recommended. One
    /// ioctl or one call per chunk that the kernel completes first, then the portable
    /// loops, then what needs a pipe, a ring, mappings or aligned buffers; a subprocess
    /// last.
    /// The family a plot colours the method by, an index into [`Method::FAMILIES`].
    pub fn family(self) -> usize {
        match self {
            Method::ReadWrite | Method::ReadWriteFadvise | Method::PreadPwrite => 0,
            Method::MmapWrite | Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap => 1,
            Method::Sendfile | Method::Splice | Method::CopyFileRange | Method::Reflink => 2,
            Method::IoUring => 3,
            Method::Direct => 4,
            Method::Cp | Method::Cat | Method::Dd => 5,
        }
    }

    /// The families' names, for a plot's legend.
    pub const FAMILIES: [&'static str; 6] = [
        "user-space loop",
        "mmap",
        "in-kernel",
        "io_uring",
        "O_DIRECT",
        "system tool",
    ];

    pub fn complexity(self) -> u32 {
        match self {
            Method::Reflink => 0,
            Method::CopyFileRange => 1,
            Method::Sendfile => 2,
            Method::ReadWrite => 3,
            Method::PreadPwrite => 4,
            Method::ReadWriteFadvise => 5,
            Method::Splice => 6,
            Method::IoUring => 7,
            Method::MmapWrite => 8,
            Method::MmapMemcpyMunmap => 9,
            Method::MmapMemcpyMsync => 10,
            Method::Direct => 11,
            Method::Cp | Method::Cat | Method::Dd => 12,
        }
    }

    pub fn is_mmap(self) -> bool {
        matches!(
            self,
            Method::MmapWrite | Method::MmapMemcpyMsync | Method::MmapMemcpyMunmap
        )
    }
}

/// One method with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub method: Method,
    /// User buffer (read-write, pread-pwrite, direct, io-uring per slot, dd bs, mmap-write chunk).
    pub buffer: Option<u64>,
    /// madvise(MADV_SEQUENTIAL) on the mappings (mmap methods).
    pub madvise: bool,
    /// mmap-write: one write of the whole mapping instead of `buffer` chunks.
    pub whole: bool,
    /// splice: F_SETPIPE_SZ of the private pipe (`None` = default).
    pub pipe_size: Option<u64>,
    /// io-uring: queue depth and registered buffers.
    pub depth: u32,
    pub registered: bool,
}

impl Variant {
    pub fn new(method: Method) -> Variant {
        Variant {
            method,
            buffer: None,
            madvise: false,
            whole: false,
            pipe_size: None,
            depth: 0,
            registered: false,
        }
    }

    /// The variant's label: method plus its parameters, e.g. `read-write/1MiB`,
    /// `mmap-write/whole+madvise`, `io-uring/qd16+fixed`.
    pub fn label(&self) -> String {
        let size = crate::units::size_label;
        let mut s = self.method.name().to_string();
        match self.method {
            Method::MmapWrite => {
                s += &format!(
                    "/{}",
                    if self.whole {
                        "whole".into()
                    } else {
                        size(self.buffer.unwrap_or(0))
                    }
                );
            }
            Method::Splice => {
                s += &format!("/pipe-{}", self.pipe_size.map_or("default".into(), size));
            }
            Method::IoUring => s += &format!("/qd{}", self.depth),
            _ => {
                if let Some(b) = self.buffer {
                    s += &format!("/{}", size(b));
                }
            }
        }
        if self.madvise {
            s += "+madvise";
        }
        if self.registered {
            s += "+fixed";
        }
        s
    }
}

/// What the destination's data had reached when the copy returned.
/// On a memory-backed filesystem (`memory`: tmpfs, ramfs) no row is durable and nothing
/// reaches a device: every row says so, O_DIRECT's and msync's included.
pub fn durability_state(method: Method, fsync: bool, memory: bool) -> &'static str {
    if memory {
        return "not durable: in memory only (the filesystem keeps its files in the page cache; nothing reaches a device or survives a reboot)";
    }
    match (fsync, method) {
        (true, _) => "durable: fsync (or msync MS_SYNC + fsync) returned inside the timing",
        (false, Method::MmapMemcpyMsync) => "not durable: queued for write-back (msync MS_ASYNC)",
        (false, Method::Direct) => {
            "not durable: written to the device with O_DIRECT, device cache not flushed"
        }
        (false, Method::Reflink) => "not durable: blocks shared, metadata not synced",
        (false, Method::MmapMemcpyMunmap) => {
            "not durable: dirty pages left in the page cache by munmap"
        }
        (false, _) => "not durable: dirty in the page cache",
    }
}
