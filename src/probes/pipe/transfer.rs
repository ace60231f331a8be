//! One timed pipe transfer between two forked processes.
//!
//! The parent makes the data pipe (and sets its capacity), forks the writer and the
//! reader, and waits until both have allocated and touched their buffers and pinned
//! themselves. It then reads the clock and closes the "go" pipe, which releases both at
//! once. Each child measures its own rusage (RUSAGE_SELF) around its loop and sends it
//! back on its result pipe as one text line; the reader also sends the time of its last
//! byte. Elapsed time = reader's last byte − release. Both children are always reaped.

use super::stream::{Method, Sink, Source, Work, ring_slots};
use crate::harness::rusage::RusageDelta;
use crate::sys::calls::{self, monotonic_ns};
use crate::sys::process::{Child, fork_child};
use crate::sys::rusage::{RawRusage, getrusage_self};
use crate::sys::{affinity, pipes};
use anyhow::{Context as _, Result, anyhow, bail};
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

/// The writer child, once forked: pinned, its buffers ready, released with the reader
/// (`gate`: its ready pipe and the go pipe), then the timed stream with its rusage.
fn writer_side(
    spec: &Spec,
    slots: usize,
    data_w: &OwnedFd,
    (ready_w, go_r): (&OwnedFd, &OwnedFd),
) -> Result<(u64, u64, Work, RusageDelta)> {
    affinity::allow_only(&spec.writer_cpus)?;
    let mut src = Source::new(spec.chunk, slots)?;
    released(ready_w, go_r)?;
    let r0 = getrusage_self()?;
    let t0 = monotonic_ns();
    let work = src.send(spec.method, data_w, spec.total, spec.corrupt)?;
    let t1 = monotonic_ns();
    let r1 = getrusage_self()?;
    Ok((t0, t1, work, RusageDelta::between(&r0, &r1)))
}

/// The reader child, once forked: pinned, released with the writer, then the timed
/// stream (checked chunk by chunk where asked) and the end of file after it.
fn reader_side(
    spec: &Spec,
    capacity: u64,
    data_r: &OwnedFd,
    (ready_w, go_r): (&OwnedFd, &OwnedFd),
) -> Result<(u64, u64, Work, RusageDelta)> {
    affinity::allow_only(&spec.reader_cpus)?;
    let checked = spec.checked_reader || spec.method == Method::WriteRead;
    let mut sink = Sink::new(spec.chunk, spec.read_size, checked, capacity)?;
    released(ready_w, go_r)?;
    let r0 = getrusage_self()?;
    let t0 = monotonic_ns();
    let work = sink.receive(data_r, spec.total, spec.read_size)?;
    let t1 = monotonic_ns();
    let r1 = getrusage_self()?;
    sink.expect_eof(data_r)?;
    Ok((t0, t1, work, RusageDelta::between(&r0, &r1)))
}

/// Waits for both children to say they are ready (one byte each); false when one
/// ended first (end of file).
fn both_ready(ready_r: &OwnedFd, stop: &dyn Fn() -> bool) -> Result<bool> {
    let mut ready = 0;
    let mut byte = [0u8; 2];
    while ready < 2 {
        if !pipes::wait_readable(ready_r, stop)? {
            return Err(crate::error::Interrupted.into());
        }
        let n = calls::read(ready_r, &mut byte)?;
        if n == 0 {
            break;
        }
        ready += n;
    }
    Ok(ready >= 2)
}

/// Runs one transfer. `stop()` is polled while waiting for the children; when it says
/// stop, both are killed and reaped and an interruption error is returned.
pub fn run(spec: &Spec, stop: &dyn Fn() -> bool) -> Result<Outcome> {
    let (data_r, data_w, capacity) = data_pipe(spec.capacity)?;
    let (go_r, go_w) = pipes::pipe()?;
    let (ready_r, ready_w) = pipes::pipe()?;
    let (wres_r, wres_w) = pipes::pipe()?;
    let (rres_r, rres_w) = pipes::pipe()?;
    let page = calls::page_size() as u64;
    // Capacity is known wherever vmsplice exists (Linux), the only method it sizes.
    let slots = ring_slots(
        spec.method,
        spec.chunk,
        capacity.unwrap_or(spec.chunk),
        page,
    );
    let writer: Child = fork_child(
        &[
            data_r.as_fd(),
            go_w.as_fd(),
            ready_r.as_fd(),
            wres_r.as_fd(),
            rres_r.as_fd(),
            rres_w.as_fd(),
        ],
        || child(&wres_w, || writer_side(spec, slots, &data_w, (&ready_w, &go_r))),
    )?;
    let reader: Child = fork_child(
        &[
            data_w.as_fd(),
            go_w.as_fd(),
            ready_r.as_fd(),
            wres_r.as_fd(),
            wres_w.as_fd(),
            rres_r.as_fd(),
        ],
        || {
            let cap = capacity.unwrap_or(spec.read_size);
            child(&rres_w, || reader_side(spec, cap, &data_r, (&ready_w, &go_r)))
        },
    )?;
    drop((data_r, data_w, go_r, ready_w, wres_w, rres_w));
    let ready = both_ready(&ready_r, stop)?;
    let go_at = monotonic_ns();
    drop(go_w);
    let w = collect(&wres_r, writer, "writer", stop);
    let r = collect(&rres_r, reader, "reader", stop);
    let (w, r) = match (w, r) {
        (Ok(w), Ok(r)) => (w, r),
        // The reader's complaint (short or corrupted stream) is the more telling one.
        (_, Err(e)) | (Err(e), _) => return Err(e),
    };
    if !ready {
        bail!("a pipe process ended before it was ready");
    }
    if w.2.bytes != spec.total || r.2.bytes != spec.total {
        bail!(
            "byte count mismatch: writer sent {}, reader got {}, expected {}",
            w.2.bytes,
            r.2.bytes,
            spec.total
        );
    }
    Ok(Outcome {
        elapsed_ns: r.1.saturating_sub(go_at).max(1),
        capacity,
        writer: (w.2, w.3),
        reader: (r.2, r.3),
    })
}

/// Signals readiness and blocks until the parent closes the go pipe.
fn released(ready_w: &OwnedFd, go_r: &OwnedFd) -> Result<()> {
    if calls::write(ready_w, b"r")? != 1 {
        bail!("could not signal readiness");
    }
    let mut b = [0u8; 1];
    if calls::read(go_r, &mut b)? != 0 {
        bail!("unexpected byte on the go pipe");
    }
    Ok(())
}

type Report = (u64, u64, Work, RusageDelta);

/// The child's whole life: run `body`, write one result line, return the exit status.
fn child(result_w: &OwnedFd, body: impl FnOnce() -> Result<Report>) -> i32 {
    let (line, code) = match body() {
        Ok((t0, t1, w, r)) => (
            format!(
                "ok {t0} {t1} {} {} {} {} {} {} {} {} {} {}\n",
                w.bytes,
                w.calls,
                r.user_us,
                r.sys_us,
                r.voluntary_cs,
                r.involuntary_cs,
                r.minor_faults,
                r.major_faults,
                r.blocks_in,
                r.blocks_out
            ),
            0,
        ),
        Err(e) => (format!("err {}\n", format!("{e:#}").replace('\n', " ")), 1),
    };
    let _ = calls::write(result_w, line.as_bytes());
    code
}

/// Reads a child's result line until end-of-file, reaps the child, and parses.
fn collect(res_r: &OwnedFd, child: Child, role: &str, stop: &dyn Fn() -> bool) -> Result<Report> {
    let mut text = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        if !pipes::wait_readable(res_r, stop)? {
            return Err(crate::error::Interrupted.into());
        }
        let n = calls::read(res_r, &mut buf)?;
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    let status = child.wait()?;
    let text = String::from_utf8_lossy(&text);
    let line = text.trim();
    if let Some(msg) = line.strip_prefix("err ") {
        bail!("pipe {role}: {msg}");
    }
    if status != 0 || line.is_empty() {
        bail!("pipe {role} process ended with status {status} and no result");
    }
    parse(line).with_context(|| format!("pipe {role}: unreadable result '{line}'"))
}

fn parse(line: &str) -> Result<Report> {
    let v: Vec<u64> = line
        .strip_prefix("ok ")
        .ok_or_else(|| anyhow!("no 'ok'"))?
        .split(' ')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    if v.len() != 12 {
        bail!("{} fields, expected 12", v.len());
    }
    Ok((
        v[0],
        v[1],
        Work {
            bytes: v[2],
            calls: v[3],
        },
        RawRusage {
            user_us: v[4],
            sys_us: v[5],
            voluntary_cs: v[6],
            involuntary_cs: v[7],
            minor_faults: v[8],
            major_faults: v[9],
            blocks_in: v[10],
            blocks_out: v[11],
        },
    ))
}
