//! Two forked processes, a writer and a reader, released at the same instant: the
//! shape of every transfer between two processes, whatever carries the bytes.
//!
//! [`start`] forks both sides; each first closes the descriptors it must not hold (its
//! copies of the other side's ends, so end-of-file and EPIPE work), prepares (pins
//! itself, allocates and touches its buffers), says it is ready and blocks on the "go"
//! pipe. The caller then drops its own copies of the data descriptors and calls
//! [`Started::finish`], which waits until both are ready, reads the clock and closes
//! the go pipe, releasing both at once. Each side measures its own rusage (RUSAGE_SELF)
//! around its timed loop and sends it back on its result pipe as one text line. Both
//! children are always reaped, on every path (see [`Child`]).

use super::rusage::RusageDelta;
use crate::sys::calls::{self, monotonic_ns};
use crate::sys::pipes;
use crate::sys::process::{Child, fork_child};
use crate::sys::rusage::{RawRusage, getrusage_self};
use anyhow::{Context as _, Result, anyhow, bail};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};

/// What one side did while its clock ran.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Work {
    pub bytes: u64,
    pub calls: u64,
    /// Two counts of the caller's own, sent back with the rest (what they mean is the
    /// caller's to say).
    pub extra: [u64; 2],
    /// The clock at the side's last useful byte, when it waited on after it (a
    /// datagram reader waiting out a silence): its report ends there. 0: at the end
    /// of its loop.
    pub last_ns: u64,
}

/// One side's result: its clock at the start and the end of its loop, what it did, and
/// its rusage over the loop.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    pub start_ns: u64,
    pub end_ns: u64,
    pub work: Work,
    pub rusage: RusageDelta,
}

/// The gate a side passes once prepared: its end of the ready pipe and of the go pipe.
pub struct Gate<'a> {
    ready_w: &'a OwnedFd,
    go_r: &'a OwnedFd,
}

impl Gate<'_> {
    /// Says "ready" and blocks until the parent releases both sides; then runs `timed`
    /// between two clock readings and two rusage readings.
    pub fn timed(&self, timed: impl FnOnce() -> Result<Work>) -> Result<Report> {
        if calls::write(self.ready_w, b"r")? != 1 {
            bail!("could not signal readiness");
        }
        let mut b = [0u8; 1];
        if calls::read(self.go_r, &mut b)? != 0 {
            bail!("unexpected byte on the go pipe");
        }
        measured(timed)
    }
}

/// Runs `timed` between two clock readings and two rusage readings (the end at the
/// side's last useful byte when it says one, [`Work::last_ns`]).
pub(super) fn measured(timed: impl FnOnce() -> Result<Work>) -> Result<Report> {
    let r0 = getrusage_self()?;
    let start_ns = monotonic_ns();
    let work = timed()?;
    let end_ns = match work.last_ns {
        0 => monotonic_ns(),
        t => t,
    };
    let r1 = getrusage_self()?;
    Ok(Report {
        start_ns,
        end_ns,
        work,
        rusage: RusageDelta::between(&r0, &r1),
    })
}

/// A side's error as the one line it sends back.
pub(super) fn error_line(e: &anyhow::Error) -> String {
    format!("err {}\n", format!("{e:#}").replace('\n', " "))
}

/// Both sides, forked and preparing.
pub struct Started {
    what: &'static str,
    writer: Child,
    reader: Child,
    go_w: OwnedFd,
    ready_r: OwnedFd,
    wres_r: OwnedFd,
    rres_r: OwnedFd,
}

/// Both sides' results.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// The clock when both were released.
    pub go_ns: u64,
    pub writer: Report,
    pub reader: Report,
}

/// Forks the writer and the reader of a `what` (named in errors). Each side closes the
/// descriptors of its `close` list, then runs its body with the gate it must pass (see
/// [`Gate::timed`]). The caller's data descriptors stay open in the parent until it
/// drops them, which it must do before [`Started::finish`].
pub fn start(
    what: &'static str,
    (writer_close, writer): (&[BorrowedFd<'_>], impl FnOnce(&Gate) -> Result<Report>),
    (reader_close, reader): (&[BorrowedFd<'_>], impl FnOnce(&Gate) -> Result<Report>),
) -> Result<Started> {
    let (go_r, go_w) = pipes::pipe()?;
    let (ready_r, ready_w) = pipes::pipe()?;
    let (wres_r, wres_w) = pipes::pipe()?;
    let (rres_r, rres_w) = pipes::pipe()?;
    let gate = Gate {
        ready_w: &ready_w,
        go_r: &go_r,
    };
    let mut wclose: Vec<BorrowedFd<'_>> = writer_close.to_vec();
    wclose.extend([
        go_w.as_fd(),
        ready_r.as_fd(),
        wres_r.as_fd(),
        rres_r.as_fd(),
        rres_w.as_fd(),
    ]);
    let writer = fork_child(&wclose, || child(&wres_w, || writer(&gate)))?;
    let mut rclose: Vec<BorrowedFd<'_>> = reader_close.to_vec();
    rclose.extend([
        go_w.as_fd(),
        ready_r.as_fd(),
        wres_r.as_fd(),
        wres_w.as_fd(),
        rres_r.as_fd(),
    ]);
    let reader = fork_child(&rclose, || child(&rres_w, || reader(&gate)))?;
    Ok(Started {
        what,
        writer,
        reader,
        go_w,
        ready_r,
        wres_r,
        rres_r,
    })
}

impl Started {
    /// Releases both sides once ready and collects their reports. `stop()` is polled
    /// while waiting; when it says stop, both are killed and reaped and an interruption
    /// error is returned. A side's error is returned as its own (the reader's first: a
    /// short or corrupted stream is the more telling complaint).
    pub fn finish(self, stop: &dyn Fn() -> bool) -> Result<Finished> {
        let Started {
            what,
            writer,
            reader,
            go_w,
            ready_r,
            wres_r,
            rres_r,
        } = self;
        let ready = both_ready(&ready_r, stop)?;
        let go_ns = monotonic_ns();
        drop(go_w);
        let (w, r) = collect_both([(&wres_r, writer), (&rres_r, reader)], what, stop)?;
        if !ready {
            bail!("a {what} process ended before it was ready");
        }
        Ok(Finished {
            go_ns,
            writer: w,
            reader: r,
        })
    }
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

/// The child's whole life: run `body`, write one result line, return the exit status.
fn child(result_w: &OwnedFd, body: impl FnOnce() -> Result<Report>) -> i32 {
    let (line, code) = match body() {
        Ok(r) => (report_line(&r), 0),
        Err(e) => (error_line(&e), 1),
    };
    let _ = calls::write(result_w, line.as_bytes());
    code
}

/// A report as one text line, as a side sends it back.
pub(super) fn report_line(rep: &Report) -> String {
    let (w, r) = (&rep.work, &rep.rusage);
    format!(
        "ok {} {} {} {} {} {} {} {} {} {} {} {} {} {}\n",
        rep.start_ns,
        rep.end_ns,
        w.bytes,
        w.calls,
        w.extra[0],
        w.extra[1],
        r.user_us,
        r.sys_us,
        r.voluntary_cs,
        r.involuntary_cs,
        r.minor_faults,
        r.major_faults,
        r.blocks_in,
        r.blocks_out
    )
}

/// Reads both children's result lines until end-of-file on each, reaps both and parses
/// each (writer first). A side that ends without an "ok" line gets the other killed at
/// once: a writer whose reader died may block forever on a socket whose other end
/// someone still holds, and a reader may wait forever for a writer that failed. The
/// error returned is [`telling`]'s choice.
fn collect_both(
    sides: [(&OwnedFd, Child); 2],
    what: &str,
    stop: &dyn Fn() -> bool,
) -> Result<(Report, Report)> {
    let [(w_fd, w_child), (r_fd, r_child)] = sides;
    let fds = [w_fd, r_fd];
    let children = [&w_child, &r_child];
    let mut text: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut open = [true, true];
    let mut killed = false;
    let mut buf = [0u8; 512];
    while open.iter().any(|&o| o) {
        if stop() {
            return Err(crate::error::Interrupted.into());
        }
        let live: Vec<usize> = (0..2).filter(|&i| open[i]).collect();
        for i in readable(&fds, &live)? {
            let n = calls::read(fds[i], &mut buf)?;
            if n > 0 {
                text[i].extend_from_slice(&buf[..n]);
                continue;
            }
            open[i] = false;
            if !text[i].starts_with(b"ok ") && !killed {
                killed = true;
                children[1 - i].kill();
            }
        }
    }
    let w = finish_side(&text[0], w_child, what, "writer");
    let r = finish_side(&text[1], r_child, what, "reader");
    match (w, r) {
        (Ok(w), Ok(r)) => Ok((w, r)),
        (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
        (Err(we), Err(re)) => Err(if telling(&text) == 1 { re } else { we }),
    }
}

/// Which side's error to tell when both failed (0 writer, 1 reader): the reader's when
/// it told one ("err …"), else the writer's when it did, else the reader's. A reader
/// that finds a corrupted or short stream ends, and its writer then fails too, on a
/// closed socket or pipe, often before the reader's end is seen: the reader's is the
/// telling complaint.
pub(super) fn telling(text: &[impl AsRef<[u8]>; 2]) -> usize {
    let told = |i: usize| text[i].as_ref().starts_with(b"err ");
    if told(1) || !told(0) { 1 } else { 0 }
}

/// Which of `fds[i]` for `i` in `which` are readable (data or end of file), waiting
/// up to 100 ms (the caller looks at its stop flag between waits).
pub(super) fn readable(fds: &[&OwnedFd], which: &[usize]) -> Result<Vec<usize>> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut polled: Vec<PollFd<'_>> = which
        .iter()
        .map(|&i| PollFd::new(fds[i], PollFlags::IN))
        .collect();
    let t = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    match poll(&mut polled, Some(&t)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(e) => return Err(calls::SysError::new("poll", e).into()),
    }
    Ok(which
        .iter()
        .zip(&polled)
        .filter(|(_, p)| !p.revents().is_empty())
        .map(|(&i, _)| i)
        .collect())
}

/// Reaps a side and parses its result line.
fn finish_side(text: &[u8], child: Child, what: &str, role: &str) -> Result<Report> {
    let status = child.wait()?;
    let text = String::from_utf8_lossy(text);
    let line = text.trim();
    if let Some(msg) = line.strip_prefix("err ") {
        bail!("{what} {role}: {msg}");
    }
    if status != 0 || line.is_empty() {
        bail!("{what} {role} process ended with status {status} and no result");
    }
    parse_report(line).with_context(|| format!("{what} {role}: unreadable result '{line}'"))
}

pub(super) fn parse_report(line: &str) -> Result<Report> {
    let v: Vec<u64> = line
        .trim()
        .strip_prefix("ok ")
        .ok_or_else(|| anyhow!("no 'ok'"))?
        .split(' ')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    if v.len() != 14 {
        bail!("{} fields, expected 14", v.len());
    }
    Ok(Report {
        start_ns: v[0],
        end_ns: v[1],
        work: Work {
            bytes: v[2],
            calls: v[3],
            extra: [v[4], v[5]],
            last_ns: 0,
        },
        rusage: RawRusage {
            user_us: v[6],
            sys_us: v[7],
            voluntary_cs: v[8],
            involuntary_cs: v[9],
            minor_faults: v[10],
            major_faults: v[11],
            blocks_in: v[12],
            blocks_out: v[13],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readers_own_error_is_told_before_the_writers() {
        assert_eq!(
            telling(&[b"err write: EPIPE".to_vec(), b"err wrong stamp".to_vec()]),
            1
        );
        assert_eq!(telling(&[b"err write: EPIPE".to_vec(), b"".to_vec()]), 0);
        assert_eq!(telling(&[b"".to_vec(), b"".to_vec()]), 1);
    }

    #[test]
    fn a_report_line_reads_back() {
        let r = parse_report("ok 1 2 3 4 5 6 7 8 9 10 11 12 13 14").unwrap();
        assert_eq!((r.start_ns, r.end_ns), (1, 2));
        let w = Work {
            bytes: 3,
            calls: 4,
            extra: [5, 6],
            last_ns: 0,
        };
        assert_eq!(r.work, w);
        assert_eq!(r.rusage.blocks_out, 14);
        assert!(parse_report("ok 1 2").is_err());
        assert!(parse_report("err x").is_err());
    }
}
