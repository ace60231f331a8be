//! One timed transfer between two forked processes, through a fresh socket pair or
//! through a [`Connection`] kept across transfers.
//!
//! The parent makes the connected pair (tuned before it connects, so a TCP receive
//! buffer shapes the window) and reads back the buffer sizes granted; [`pair`] forks
//! the writer and the reader and releases both at once. Elapsed time = the reader's
//! last byte − release. The connection's set-up and tear-down are outside the time.
//!
//! A byte stream's figure is its steady state: a fresh TCP connection starts slower
//! (about 100 ms at 1 MiB chunks across two CPUs here), and fresh processes on a kept
//! connection did not reach its rate at all. So a stream row keeps one connection and
//! its writer and reader ([`crate::harness::kept`]) for all its samples, warmed first
//! until its rate stops rising ([`Connection::warm`]); each side carries the stream's
//! offset (and the writer its zerocopy send ids) from one transfer to the next.

use super::ends::{Reader, Shape, Writer};
use super::{Case, Family, Method};
use crate::results::SetupTime;
use crate::harness::kept::{self, Kept, Side};
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
    let tcp = spec.shape.family == Family::Tcp;
    let segments = if tcp {
        sockets::tcp_segments_out(sock).unwrap_or(0)
    } else {
        0
    };
    let mut report = gate.timed(|| w.send(sock, 0, 0))?;
    if tcp {
        report.work.extra[1] = sockets::tcp_segments_out(sock)
            .unwrap_or(0)
            .saturating_sub(segments);
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
        // The writer's end is closed when it is done: end of file follows.
        gate.timed(|| r.receive_stream(sock, 0, true))
    }
}

/// Runs one transfer through a fresh pair; `file` is the stream's file for a file
/// method. `stop()` is polled while waiting for the children; when it says stop, both
/// are killed and reaped.
pub fn run(spec: &Spec, file: Option<&OwnedFd>, stop: &dyn Fn() -> bool) -> Result<Outcome> {
    let (w, r) = sockets::pair(spec.kind(), &spec.tuning)?;
    let granted = (sockets::buffers(&w)?.0, sockets::buffers(&r)?.1);
    // UDP loses what the reader has no room for: the writer says when it is done.
    let done = if spec.shape.family == Family::Udp {
        Some(pipes::pipe()?)
    } else {
        None
    };
    let started = start(spec, (&w, &r), file, done.as_ref())?;
    // The children hold the ends now: end of file and EPIPE reach them.
    drop((w, r, done));
    finish(spec, started, granted, stop)
}

/// Forks the writer and the reader of one transfer on the ends `(w, r)`.
fn start(
    spec: &Spec,
    (w, r): (&OwnedFd, &OwnedFd),
    file: Option<&OwnedFd>,
    done: Option<&(OwnedFd, OwnedFd)>,
) -> Result<pair::Started> {
    let (done_r, done_w) = match done {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    };
    let mut wclose = vec![r.as_fd()];
    wclose.extend(done_r.map(|d| d.as_fd()));
    let mut rclose = vec![w.as_fd()];
    rclose.extend(done_w.map(|d| d.as_fd()));
    rclose.extend(file.map(|f| f.as_fd()));
    pair::start(
        "socket",
        (&wclose, |g: &Gate| writer_side(spec, w, file, done_w, g)),
        (&rclose, |g: &Gate| reader_side(spec, r, done_r, g)),
    )
}

/// Releases both sides, collects them and checks the byte counts.
fn finish(
    spec: &Spec,
    started: pair::Started,
    granted: (u64, u64),
    stop: &dyn Fn() -> bool,
) -> Result<Outcome> {
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

/// One byte stream's connection and its two processes, kept across transfers (stream
/// families only).
pub struct Connection {
    kept: Kept,
    pub granted: (u64, u64),
}

/// How a connection was warmed: what it carried before its rate stopped rising.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warmed {
    pub bytes: u64,
    pub ns: u64,
    /// False when the rate still rose at the warm-up's end ([`WARM_MAX_NS`]).
    pub settled: bool,
}

impl Warmed {
    /// Two connections' warm-ups together: settled when both were.
    pub fn and(self, o: Warmed) -> Warmed {
        Warmed {
            bytes: self.bytes + o.bytes,
            ns: self.ns + o.ns,
            settled: self.settled && o.settled,
        }
    }
}

/// A warm-up never ends before this long, nor before [`WARM_WINDOWS`] windows.
pub const WARM_MIN_NS: u64 = 60_000_000;
/// Where the run's warm-ups are shorter than the default scale's (`run --quick`'s first
/// pass: 20 ms), a warm-up's least length and windows: 3 windows. `socket --quick`, 3
/// runs each way interleaved (29 Nov 2026, 88 stream rows on one CPU): a connection's
/// warm-up took 46 ms instead of 69 (median), and its row's median moved by ×0.999
/// (unix, 10–90%: 0.992–1.011, against 0.981–1.016 between two runs of the longer rule)
/// and ×0.993 (TCP, 0.857–1.043, against 0.95–1.27). The rule still waits while the
/// rate rises.
pub const SHORT_WARM_MIN_NS: u64 = 36_000_000;
pub const SHORT_WARM_WINDOWS: usize = 3;

/// How long a warm-up lasts at least, in ns and windows: [`WARM_MIN_NS`] and
/// [`WARM_WINDOWS`], or [`SHORT_WARM_MIN_NS`] and [`SHORT_WARM_WINDOWS`] where the run's
/// warm-ups (`harness_warmup`) are shorter than the default scale's.
pub fn warm_least(harness_warmup: std::time::Duration) -> (u64, usize) {
    if harness_warmup < crate::harness::Config::quick().warmup {
        (SHORT_WARM_MIN_NS, SHORT_WARM_WINDOWS)
    } else {
        (WARM_MIN_NS, WARM_WINDOWS)
    }
}
/// A warm-up whose rate still rises after this long ends anyway, marked unsettled.
pub const WARM_MAX_NS: u64 = 1_000_000_000;
/// A byte stream's row outside its passes, before its first, typically (for the time
/// estimate of a row nothing saved has measured): its verification pass's and its
/// connection's processes and its warm-up, at least [`WARM_MIN_NS`] and more where
/// the rate keeps rising. `socket --family unix,tcp --sndbuf default,1m --rcvbuf
/// default,1m` (928 rows, 29 Nov 2026): medians 0.085 s (unix) and 0.10 s (TCP), of
/// which the warm-up 0.07 s.
const TYPICAL_FIRST_S: f64 = 0.1;
/// Outside each later pass, typically: the messages to its two processes (0.22–0.27
/// ms a pass in those rows).
const TYPICAL_PER_PASS_S: f64 = 0.25e-3;
/// A zero-copy row from 256 KiB chunks on waits after each pass for the kernel's
/// completions (10–21 ms a pass in those rows; 0.25–0.28 ms below 256 KiB), and its
/// warm-up takes longer (first 0.27 s).
const ZEROCOPY_PER_PASS_S: f64 = 15e-3;
const ZEROCOPY_FIRST_S: f64 = 0.25;
/// Rate at which a row whose chunks exceed [`KEPT_BUFFERS`] makes its two sides'
/// buffers before each pass (16 MiB chunks: 19 ms a pass, 2 × 16 MiB).
const BUFFERS_MADE_PER_S: f64 = 1.8e9;

/// What a row of `c` is expected to spend outside its passes (see [`TYPICAL_FIRST_S`]).
pub(super) fn setup_guess(c: &Case) -> SetupTime {
    let zerocopy = c.method == Method::Zerocopy && c.chunk >= 256 << 10;
    let buffers = if c.chunk > KEPT_BUFFERS {
        2.0 * c.chunk as f64 / BUFFERS_MADE_PER_S
    } else {
        0.0
    };
    let per_pass_s = buffers
        + match zerocopy {
            true => ZEROCOPY_PER_PASS_S,
            false => TYPICAL_PER_PASS_S,
        };
    let first_s = match (c.family.datagram(), zerocopy) {
        (true, _) => 0.0,
        (false, true) => ZEROCOPY_FIRST_S,
        (false, false) => TYPICAL_FIRST_S,
    };
    SetupTime {
        first_s: first_s + per_pass_s,
        per_pass_s,
        passes: 0,
    }
}
/// The windows the steadiness rule looks at, and how long one lasts.
pub const WARM_WINDOWS: usize = 5;
const WINDOW_NS: f64 = 12e6;

/// A side keeps its buffers between transfers up to this size; larger ones are made
/// again before each transfer (outside the time), so that a run's idle rows do not
/// hold gigabytes.
const KEPT_BUFFERS: u64 = 4 << 20;

/// The writer's side of a kept connection.
struct WriterSide<'a> {
    spec: &'a Spec,
    sock: &'a OwnedFd,
    file: Option<OwnedFd>,
    writer: Option<Writer>,
    offset: u64,
    next_id: u32,
}

impl Side for WriterSide<'_> {
    fn prepare(&mut self, total: u64) -> Result<()> {
        if self.writer.is_none() {
            let file = self.file.as_ref().map(|f| f.try_clone()).transpose()?;
            self.writer = Some(Writer::new(self.spec.shape, file, self.spec.corrupt)?);
        }
        if let Some(w) = &mut self.writer {
            w.set_total(total);
        }
        Ok(())
    }

    fn round(&mut self, _total: u64) -> Result<Work> {
        let Some(w) = &mut self.writer else {
            bail!("a round without its writer");
        };
        let tcp = self.spec.shape.family == Family::Tcp;
        let segments = if tcp {
            sockets::tcp_segments_out(self.sock).unwrap_or(0)
        } else {
            0
        };
        let mut work = w.send(self.sock, self.offset, self.next_id)?;
        if tcp {
            work.extra[1] = sockets::tcp_segments_out(self.sock)
                .unwrap_or(0)
                .saturating_sub(segments);
        }
        self.offset += work.bytes;
        if self.spec.shape.method == Method::Zerocopy {
            self.next_id = self.next_id.wrapping_add(work.calls as u32);
        }
        if w.held() > KEPT_BUFFERS {
            self.writer = None;
        }
        Ok(work)
    }
}

/// The reader's side of a kept connection.
struct ReaderSide<'a> {
    spec: &'a Spec,
    sock: &'a OwnedFd,
    reader: Option<Reader>,
    offset: u64,
}

impl Side for ReaderSide<'_> {
    fn prepare(&mut self, total: u64) -> Result<()> {
        if self.reader.is_none() {
            self.reader = Some(Reader::new(self.spec.shape, self.spec.full_check)?);
        }
        if let Some(r) = &mut self.reader {
            r.set_total(total);
        }
        Ok(())
    }

    fn round(&mut self, _total: u64) -> Result<Work> {
        let Some(r) = &mut self.reader else {
            bail!("a round without its reader");
        };
        let work = r.receive_stream(self.sock, self.offset, false)?;
        self.offset += work.bytes;
        if self.spec.shape.chunk > KEPT_BUFFERS {
            self.reader = None;
        }
        Ok(work)
    }
}

impl Connection {
    /// A connected pair for `spec`'s family and tuning (a stream family), and the
    /// writer and reader that keep it; `file` is the stream's file for a file method.
    pub fn open(spec: &Spec, file: Option<&OwnedFd>) -> Result<Connection> {
        if spec.shape.family.datagram() {
            bail!("a datagram family has no connection to keep");
        }
        let (w, r) = sockets::pair(spec.kind(), &spec.tuning)?;
        let granted = (sockets::buffers(&w)?.0, sockets::buffers(&r)?.1);
        let mut rclose = vec![w.as_fd()];
        rclose.extend(file.map(|f| f.as_fd()));
        let make_writer = || -> Result<WriterSide<'_>> {
            affinity::allow_only(&spec.writer_cpus)?;
            if spec.shape.method == Method::Zerocopy {
                sockets::enable_zerocopy(&w)?;
            }
            Ok(WriterSide {
                spec,
                sock: &w,
                file: file.map(|f| f.try_clone()).transpose()?,
                writer: None,
                offset: 0,
                next_id: 0,
            })
        };
        let make_reader = || -> Result<ReaderSide<'_>> {
            affinity::allow_only(&spec.reader_cpus)?;
            Ok(ReaderSide {
                spec,
                sock: &r,
                reader: None,
                offset: 0,
            })
        };
        let kept = kept::keep("socket", (&[r.as_fd()], make_writer), (&rclose, make_reader))?;
        // The two processes hold the ends now.
        drop((w, r));
        Ok(Connection { kept, granted })
    }

    /// One transfer of `total` bytes, carrying on the stream: elapsed = release → the
    /// reader's last byte.
    pub fn transfer(&mut self, total: u64, stop: &dyn Fn() -> bool) -> Result<Outcome> {
        let end = self.kept.round(total, stop)?;
        let (wr, rr) = (end.writer, end.reader);
        if wr.work.bytes != total || rr.work.bytes != total {
            bail!(
                "byte count mismatch: writer sent {}, reader got {}, expected {total}",
                wr.work.bytes,
                rr.work.bytes
            );
        }
        Ok(Outcome {
            elapsed_ns: rr.end_ns.saturating_sub(end.go_ns).max(1),
            granted: self.granted,
            writer: (wr.work, wr.rusage),
            reader: (rr.work, rr.rusage),
        })
    }

    /// Warms the connection: transfers of about 12 ms each until, after at least
    /// `least` ([`warm_least`]: ns and windows), the rate over the last windows is no
    /// longer rising (a least-squares slope under 1% of their mean per window, fio's
    /// steady-state rule), or [`WARM_MAX_NS`] has passed.
    pub fn warm(
        &mut self,
        chunk: u64,
        (least_ns, windows): (u64, usize),
        stop: &dyn Fn() -> bool,
    ) -> Result<Warmed> {
        let chunk = chunk.max(1);
        let mut window = (4u64 << 20).max(chunk).next_multiple_of(chunk);
        let mut rates = Vec::new();
        let mut warmed = Warmed {
            bytes: 0,
            ns: 0,
            settled: false,
        };
        while warmed.ns < WARM_MAX_NS {
            let o = self.transfer(window, stop)?;
            warmed.bytes += window;
            warmed.ns += o.elapsed_ns;
            let rate = window as f64 / o.elapsed_ns as f64;
            rates.push(rate);
            if warmed.ns >= least_ns && rates.len() >= windows {
                let last = &rates[rates.len() - windows..];
                if !rising(last) {
                    warmed.settled = true;
                    break;
                }
            }
            let want = (rate * WINDOW_NS) as u64;
            window = want.clamp(chunk, 1 << 30).next_multiple_of(chunk);
        }
        Ok(warmed)
    }
}

/// Whether evenly spaced rates still rise: their least-squares slope per step is at
/// least 1% of their mean (fewer than two: yes, nothing is known yet).
pub fn rising(rates: &[f64]) -> bool {
    let slope = crate::harness::stats::relative_slope(rates);
    slope.is_nan() || slope >= 0.01
}

#[cfg(test)]
mod tests {
    use super::rising;

    #[test]
    fn run_quick_s_warm_ups_are_shorter_the_others_as_they_were() {
        use super::*;
        use std::time::Duration;
        let h = crate::harness::Config::quick();
        assert_eq!(warm_least(h.warmup), (WARM_MIN_NS, WARM_WINDOWS));
        let thorough = crate::harness::Config::thorough();
        assert_eq!(warm_least(thorough.warmup), (WARM_MIN_NS, WARM_WINDOWS));
        // `run --quick`'s first pass: 20 ms warm-ups.
        assert_eq!(
            warm_least(Duration::from_millis(20)),
            (SHORT_WARM_MIN_NS, SHORT_WARM_WINDOWS)
        );
    }

    #[test]
    fn a_ramp_rises_and_a_flat_or_noisy_plateau_does_not() {
        assert!(rising(&[3.0, 3.4, 3.9, 4.4, 4.9]));
        assert!(!rising(&[5.0, 5.0, 5.0, 5.0, 5.0]));
        assert!(!rising(&[5.2, 4.8, 5.1, 4.9, 5.0]));
        assert!(!rising(&[5.0, 4.8, 4.6, 4.4, 4.2]));
        assert!(rising(&[5.0]));
    }
}
