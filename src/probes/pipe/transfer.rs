//! One timed pipe transfer between two forked processes.
//!
//! The parent makes the data pipe (and sets its capacity); [`pair`] forks the writer
//! and the reader, releases both at once when both have allocated and touched their
//! buffers and pinned themselves, and collects each side's rusage and clock. Elapsed
//! time = reader's last byte − release. Both children are always reaped.

use super::stream::{Method, Sink, Source, ring_slots};
use crate::harness::pair::{self, Gate, Report, Work};
use crate::harness::rusage::RusageDelta;
use crate::sys::calls;
use crate::sys::{affinity, pipes};
use anyhow::{Result, bail};
use rustix::fd::{AsFd, OwnedFd};

/// What to transfer.
#[derive(Debug, Clone)]
pub struct Spec {
    pub method: Method,
    pub chunk: u64,
    pub read_size: u64,
    pub total: u64,
    /// F_SETPIPE_SZ request; `None` keeps the kernel's default.
    pub capacity: Option<u64>,
    pub writer_cpus: Vec<usize>,
    pub reader_cpus: Vec<usize>,
    /// Reader reads and checks stamps even for vmsplice-splice (verification pass).
    pub checked_reader: bool,
    /// Test hook: the writer corrupts one stamp.
    pub corrupt: bool,
}

/// The result of one transfer.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub elapsed_ns: u64,
    /// The pipe's capacity, where the OS reports it.
    pub capacity: Option<u64>,
    pub writer: (Work, RusageDelta),
    pub reader: (Work, RusageDelta),
}

/// Sets up a pipe with the requested capacity; returns (read end, write end, granted).
/// The granted capacity is None where the OS cannot report it (only Linux can).
pub fn data_pipe(capacity: Option<u64>) -> Result<(OwnedFd, OwnedFd, Option<u64>)> {
    let (r, w) = pipes::pipe()?;
    let granted = match capacity {
        Some(bytes) => Some(pipes::set_capacity(&w, bytes as usize)?),
        None => match pipes::capacity(&w) {
            Ok(c) => Some(c),
            Err(e) if e.is_missing() => None,
            Err(e) => return Err(e.into()),
        },
    };
    Ok((r, w, granted.map(|c| c as u64)))
}

/// The writer child, once forked: pinned, its buffers ready, released with the reader,
/// then the timed stream.
fn writer_side(spec: &Spec, slots: usize, data_w: &OwnedFd, gate: &Gate) -> Result<Report> {
    affinity::allow_only(&spec.writer_cpus)?;
    let mut src = Source::new(spec.chunk, slots)?;
    gate.timed(|| src.send(spec.method, data_w, spec.total, spec.corrupt))
}

/// The reader child, once forked: pinned, released with the writer, then the timed
/// stream (checked chunk by chunk where asked) and the end of file after it.
fn reader_side(spec: &Spec, capacity: u64, data_r: &OwnedFd, gate: &Gate) -> Result<Report> {
    affinity::allow_only(&spec.reader_cpus)?;
    let checked = spec.checked_reader || spec.method == Method::WriteRead;
    let mut sink = Sink::new(spec.chunk, spec.read_size, checked, capacity)?;
    let report = gate.timed(|| sink.receive(data_r, spec.total, spec.read_size))?;
    sink.expect_eof(data_r)?;
    Ok(report)
}

/// Runs one transfer. `stop()` is polled while waiting for the children; when it says
/// stop, both are killed and reaped and an interruption error is returned.
pub fn run(spec: &Spec, stop: &dyn Fn() -> bool) -> Result<Outcome> {
    let (data_r, data_w, capacity) = data_pipe(spec.capacity)?;
    let page = calls::page_size() as u64;
    // Capacity is known wherever vmsplice exists (Linux), the only method it sizes.
    let slots = ring_slots(
        spec.method,
        spec.chunk,
        capacity.unwrap_or(spec.chunk),
        page,
    );
    let cap = capacity.unwrap_or(spec.read_size);
    let started = pair::start(
        "pipe",
        (&[data_r.as_fd()], |g: &Gate| {
            writer_side(spec, slots, &data_w, g)
        }),
        (&[data_w.as_fd()], |g: &Gate| {
            reader_side(spec, cap, &data_r, g)
        }),
    )?;
    drop((data_r, data_w));
    let done = started.finish(stop)?;
    let (w, r) = (done.writer, done.reader);
    if w.work.bytes != spec.total || r.work.bytes != spec.total {
        bail!(
            "byte count mismatch: writer sent {}, reader got {}, expected {}",
            w.work.bytes,
            r.work.bytes,
            spec.total
        );
    }
    Ok(Outcome {
        elapsed_ns: r.end_ns.saturating_sub(done.go_ns).max(1),
        capacity,
        writer: (w.work, w.rusage),
        reader: (r.work, r.rusage),
    })
}
