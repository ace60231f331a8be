//! One timed transfer through a fresh socket pair between two forked processes.
//!
//! The parent makes the connected pair (tuned before it connects, so a TCP receive
//! buffer shapes the window) and reads back the buffer sizes granted; [`pair`] forks
//! the writer and the reader and releases both at once. Elapsed time = the reader's
//! last byte − release. The connection's set-up and tear-down are outside the time.

use super::ends::{Reader, Shape, Writer};
use super::{Family, Method};
use crate::harness::pair::{self, Gate, Report, Work};
use crate::harness::rusage::RusageDelta;
use crate::sys::{affinity, calls, pipes, sockets};
use anyhow::{Result, bail};
use rustix::fd::{AsFd, OwnedFd};

/// What to transfer.
#[derive(Debug, Clone)]
pub struct Spec {
    pub shape: Shape,
    pub v6: bool,
    pub tuning: sockets::Tuning,
    pub writer_cpus: Vec<usize>,
    pub reader_cpus: Vec<usize>,
    /// Check every byte (the untimed verification pass).
    pub full_check: bool,
    /// Test hook: the writer corrupts one stamp.
    pub corrupt: bool,
}

/// The result of one transfer.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub elapsed_ns: u64,
    /// (SO_SNDBUF of the writer's socket, SO_RCVBUF of the reader's), as read back.
    pub granted: (u64, u64),
    pub writer: (Work, RusageDelta),
    pub reader: (Work, RusageDelta),
}

impl Spec {
    pub fn kind(&self) -> sockets::Kind {
        match self.shape.family {
            Family::Unix => sockets::Kind::UnixStream,
            Family::UnixDgram => sockets::Kind::UnixDgram,
            Family::Tcp => sockets::Kind::Tcp(self.v6),
            Family::Udp => sockets::Kind::Udp(self.v6),
        }
    }
}

fn writer_side(
    spec: &Spec,
    sock: &OwnedFd,
    file: Option<&OwnedFd>,
    done_w: Option<&OwnedFd>,
    gate: &Gate,
) -> Result<Report> {
    affinity::allow_only(&spec.writer_cpus)?;
    if spec.shape.method == Method::Zerocopy {
        sockets::enable_zerocopy(sock)?;
    }
    let file = file.map(|f| f.try_clone()).transpose()?;
    let mut w = Writer::new(spec.shape, file, spec.corrupt)?;
    let mut report = gate.timed(|| w.send(sock))?;
    if spec.shape.family == Family::Tcp {
        report.work.extra[1] = sockets::tcp_segments_out(sock).unwrap_or(0);
    }
    // A reader that got every datagram has already gone (EPIPE): nothing to tell it.
    if let Some(d) = done_w {
        let _ = calls::write(d, b"d");
    }
    Ok(report)
}

fn reader_side(spec: &Spec, sock: &OwnedFd, done_r: Option<&OwnedFd>, gate: &Gate) -> Result<Report> {
    affinity::allow_only(&spec.reader_cpus)?;
    let mut r = Reader::new(spec.shape, spec.full_check)?;
    if spec.shape.family.datagram() {
        gate.timed(|| r.receive_datagrams(sock, done_r))
    } else {
        gate.timed(|| r.receive_stream(sock))
    }
}

/// Runs one transfer; `file` is the stream's file for a file method. `stop()` is polled
/// while waiting for the children; when it says stop, both are killed and reaped.
pub fn run(spec: &Spec, file: Option<&OwnedFd>, stop: &dyn Fn() -> bool) -> Result<Outcome> {
    let (w, r) = sockets::pair(spec.kind(), &spec.tuning)?;
    let granted = (sockets::buffers(&w)?.0, sockets::buffers(&r)?.1);
    // UDP loses what the reader has no room for: the writer says when it is done.
    let done = if spec.shape.family == Family::Udp {
        Some(pipes::pipe()?)
    } else {
        None
    };
    let (done_r, done_w) = match &done {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    };
    let mut wclose = vec![r.as_fd()];
    wclose.extend(done_r.map(|d| d.as_fd()));
    let mut rclose = vec![w.as_fd()];
    rclose.extend(done_w.map(|d| d.as_fd()));
    rclose.extend(file.map(|f| f.as_fd()));
    let started = pair::start(
        "socket",
        (&wclose, |g: &Gate| writer_side(spec, &w, file, done_w, g)),
        (&rclose, |g: &Gate| reader_side(spec, &r, done_r, g)),
    )?;
    drop((w, r, done));
    let end = started.finish(stop)?;
    let (wr, rr) = (end.writer, end.reader);
    let lost = rr.work.extra[0];
    let sent = wr.work.bytes;
    let lossy = spec.shape.family == Family::Udp;
    if sent != spec.shape.total || (!lossy && rr.work.bytes != sent) {
        bail!(
            "byte count mismatch: writer sent {sent}, reader got {}, expected {}",
            rr.work.bytes,
            spec.shape.total
        );
    }
    if lossy && rr.work.bytes == 0 {
        bail!("every datagram was lost ({lost} sent)");
    }
    Ok(Outcome {
        elapsed_ns: rr.end_ns.saturating_sub(end.go_ns).max(1),
        granted,
        writer: (wr.work, wr.rusage),
        reader: (rr.work, rr.rusage),
    })
}
