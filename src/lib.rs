//! ioprobe: measures what I/O system calls cost on this machine and which buffer size
//! and method to use.
//!
//! Layers, top to bottom (ARCHITECTURE.md has the picture and `tests/cli/layers.rs`
//! keeps it): [`cli`] (flags → [`settings`], used by main alone); [`commands`]
//! (saved-run commands); [`cp`] and [`trace`] (apply the figures); [`session`] (every
//! measuring command); [`report`] (output formats, the HTML report, advice rendered);
//! [`probes`] (experiments as named cases, one folder each, with their advice);
//! [`settings`]; [`advice`] (recommendations: model, decide, sizes, methods,
//! confidence, pool) and [`present`] (tables, plot primitives, the output `Style`);
//! [`results`] (data model, JSON schema, store: the one way to find saved runs);
//! [`harness`] (timing and statistics, knows no I/O); [`sys`] (the only module allowed
//! unsafe code: syscalls, mappings, machine facts, scratch files, tracers).
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
