//! ioprobe: measures what I/O system calls cost on this machine and which buffer size
//! and method to use.
//!
//! Layers, top to bottom: [`cli`] (flags → settings), [`app`] (runs probes), [`probes`]
//! (experiments as named cases), [`harness`] (timing and statistics, knows no I/O),
//! [`sys`] (the only module allowed unsafe code: syscalls, mappings, machine facts,
//! scratch files),
//! [`results`] (data model and JSON schema), [`present`] (tables and plot primitives
//! that probes and reports share) and [`report`] (output formats). [`trace`] applies
//! the saved figures to another program's system calls.

// Unsafe code is refused everywhere but `sys`, which opts back in.
#![deny(unsafe_code)]

pub mod cli;
pub mod commands;
pub mod cp;
pub mod error;
pub mod fault;
#[doc(hidden)]
pub mod fuzzing;
pub mod harness;
pub mod present;
pub mod probes;
pub mod progress;
pub mod report;
pub mod results;
pub mod session;
pub mod settings;
pub mod sys;
pub mod trace;
pub mod units;
