//! Everything that touches the operating system directly, and the only module allowed
//! `unsafe` (every block carries a `// SAFETY:` comment).
//!
//! rustix is used first; libc where rustix lacks a call or a type: getrusage, mincore,
//! the tracers' ptrace, seccomp, bpf(2) and register sets (`trace/`), io_uring's and
//! the OS modules' own calls (`os/`).

#![allow(unsafe_code)]

pub mod affinity;
pub mod buffer;
pub mod calls;
pub mod copyfile;
pub mod load;
pub mod machine;
pub mod mapping;
pub mod mounts;
pub mod os;
pub mod pipes;
pub mod process;
pub mod rusage;
pub mod scratch;
pub mod signals;
pub mod sockets;
pub mod trace;
pub mod vector;
pub use os::uring;
