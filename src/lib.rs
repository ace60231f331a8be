//! ioprobe: measures what I/O system calls cost on this machine and which buffer size
//! and method to use.
//!
//! Layers, top to bottom (ARCHITECTURE.md has the picture): [`cli`] (flags →
//! [`settings`], used by main alone); [`session`] (every measuring command) and
//! [`commands`] (saved-run commands); [`cp`] and [`trace`] (apply the figures);
//! [`advice`] (recommendations: model, decide, collect, render) and [`report`] (output
//! formats); [`probes`] (experiments as named cases, one folder each) and [`present`]
//! (tables, plot primitives, the output `Style`); [`results`] (data model, JSON schema,
//! store); [`harness`] (timing and statistics, knows no I/O); [`sys`] (the only module
//! allowed unsafe code: syscalls, mappings, machine facts, scratch files, ptrace).
//! Beside them: [`names`] (every closed list of names, written once), [`interrupt`]
//! (the stop flag), [`units`], [`error`], [`progress`].

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
