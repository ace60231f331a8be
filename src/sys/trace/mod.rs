//! Everything `ioprobe trace` does at the operating system, in one place: the record
//! every tracer gives ([`Event`] and what it carries, `record.rs`, with [`Tracer`], the
//! one name of a tracer), the table of the traced calls (`calls.rs`: number, name,
//! family, what the arguments point to, whether the preload library wraps it), the one
//! reader of /proc (`procfs.rs`), attaching to running processes (`attach.rs`), and one
//! folder per tracer, each turning what it sees into the same `Event`s:
//!
//! - `ptrace/`: the command as a ptrace tracee under a seccomp filter that stops it
//!   only at the traced calls (the event loop, the child's start, the filter, the
//!   registers, the signals);
//! - `bpf/`: hand-assembled BPF programs on the syscall-exit and scheduler tracepoints
//!   (the assembler, the programs, bpf(2) and its maps, the rings, the tracer);
//! - `preload/`: the LD_PRELOAD library whose wrapped calls go through a gate page the
//!   filter lets through, recorded in a shared ring (the library, the ring's layout
//!   both languages take from `layout.rs`, the ELF check); the ptrace tracer runs it
//!   (`ptrace/preloaded.rs`).
//!
//! Adding a traced call: its row in `calls.rs`, then its decoding in
//! `trace/profile/` (see ARCHITECTURE.md). On another OS, `other.rs` gives each
//! tracer's entry points, which say tracing needs Linux.

pub mod calls;
pub mod procfs;
mod program;
mod record;
pub use program::program_path;
pub use record::*;

#[cfg(target_os = "linux")]
pub mod attach;
#[cfg(target_os = "linux")]
pub mod bpf;
#[cfg(target_os = "linux")]
pub mod preload;
#[cfg(target_os = "linux")]
mod ptrace;
#[cfg(target_os = "linux")]
pub use ptrace::{Ptrace, stdio_closed_at_start};

#[cfg(not(target_os = "linux"))]
mod other;
#[cfg(not(target_os = "linux"))]
pub use other::*;
