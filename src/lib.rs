//! ioprobe: measures what I/O system calls cost on this machine and which buffer size
//! and method to use.
//!
//! Layers, top to bottom: [`cli`] (flags → [`settings`]), [`commands`] (saved-run
//! commands), [`cp`] and [`trace`] (apply the figures), [`session`] (runs every
//! measuring command, finds saved runs), [`probes`] (experiments as named cases),
//! [`report`] and [`present`] (output formats, tables and plot primitives),
//! [`results`] (data model, JSON schema, store), [`harness`] (timing and statistics,
//! knows no I/O), [`sys`] (the only module allowed unsafe code: syscalls, mappings,
//! machine facts, scratch files, ptrace).

// Unsafe code is refused everywhere but `sys`, which opts back in.
#![deny(unsafe_code)]

pub mod advice;
pub mod cli;
pub mod commands;
pub mod cp;
pub mod error;
pub mod fault;
#[doc(hidden)]
pub mod fuzzing;
pub mod harness;
pub mod interrupt;
pub mod names;
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
