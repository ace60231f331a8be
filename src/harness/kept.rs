//! A writer and a reader kept alive for many timed transfers: the shape of a stream
//! whose steady state is the figure (a TCP connection, whose rate grows for its first
//! hundred milliseconds or so and is not reached again by fresh processes on the same
//! connection).
//!
//! [`keep`] forks both sides once. Each side builds its state (pins itself, allocates)
//! and then serves rounds on its own channel (an AF_UNIX stream pair; every message one
//! line, and one at most in flight each way): the parent sends "c TOTAL", the side
//! prepares and answers "r", the parent sends "g" to both (the release), the side runs
//! its round between two clock and two rusage readings and answers with its report
//! line (as [`super::pair`]'s). A side that fails answers "err …" and ends; the parent
//! then kills the other, so a writer never blocks forever on a reader that is gone.
//! Dropping the [`Kept`] kills and reaps both.

use super::pair::{
    Finished, Work, error_line, measured, parse_report, readable, report_line, telling,
};
use crate::sys::calls::{self, monotonic_ns};
use crate::sys::process::{Child, fork_child};
use crate::sys::sockets;
use anyhow::{Result, anyhow, bail};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};

/// One side's state, serving rounds.
pub trait Side {
    /// Makes ready for a round of `total` bytes (outside the time).
    fn prepare(&mut self, total: u64) -> Result<()>;
    /// The timed round.
    fn round(&mut self, total: u64) -> Result<Work>;
}

/// Both sides, forked and serving rounds.
pub struct Kept {
    what: &'static str,
    children: [Child; 2],
    chans: [OwnedFd; 2],
}

/// Forks the writer and the reader of a `what` (named in errors). Each first closes the
/// descriptors of its `close` list, then builds its side with its `make`.
pub fn keep<W: Side, R: Side>(
    what: &'static str,
    (writer_close, make_writer): (&[BorrowedFd<'_>], impl FnOnce() -> Result<W>),
    (reader_close, make_reader): (&[BorrowedFd<'_>], impl FnOnce() -> Result<R>),
) -> Result<Kept> {
    let (wp, wc) = sockets::channel()?;
    let (rp, rc) = sockets::channel()?;
    let mut close: Vec<BorrowedFd<'_>> = writer_close.to_vec();
    close.extend([wp.as_fd(), rp.as_fd(), rc.as_fd()]);
    let writer = fork_child(&close, || serve(&wc, make_writer))?;
    let mut close: Vec<BorrowedFd<'_>> = reader_close.to_vec();
    close.extend([wp.as_fd(), wc.as_fd(), rp.as_fd()]);
    let reader = fork_child(&close, || serve(&rc, make_reader))?;
    Ok(Kept {
        what,
        children: [writer, reader],
        chans: [wp, rp],
    })
}

/// A side's whole life: build, then serve rounds until the channel closes.
fn serve<S: Side>(chan: &OwnedFd, make: impl FnOnce() -> Result<S>) -> i32 {
    let mut side = match make() {
        Ok(s) => s,
        Err(e) => return fail(chan, &e),
    };
    loop {
        let total = match receive(chan) {
            Ok(Some(m)) => match m.strip_prefix("c ").map(str::parse::<u64>) {
                Some(Ok(t)) => t,
                _ => return fail(chan, &anyhow!("unexpected message '{m}'")),
            },
            Ok(None) => return 0,
            Err(e) => return fail(chan, &e),
        };
        match one_round(chan, &mut side, total) {
            Ok(line) => {
                if calls::write(chan, line.as_bytes()).is_err() {
                    return 1;
                }
            }
            Err(e) => return fail(chan, &e),
        }
    }
}

fn one_round<S: Side>(chan: &OwnedFd, side: &mut S, total: u64) -> Result<String> {
    side.prepare(total)?;
    calls::write(chan, b"r\n")?;
    match receive(chan)?.as_deref() {
        Some("g") => {}
        other => bail!("expected the release, got {other:?}"),
    }
    Ok(report_line(&measured(|| side.round(total))?))
}

fn fail(chan: &OwnedFd, e: &anyhow::Error) -> i32 {
    let _ = calls::write(chan, error_line(e).as_bytes());
    1
}

/// One message (a line, without its newline), or None at end of file. One message at
/// most is in flight, so nothing past the newline is read.
fn receive(chan: &OwnedFd) -> Result<Option<String>> {
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let n = calls::read(chan, &mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        line.extend_from_slice(&buf[..n]);
        if line.ends_with(b"\n") {
            line.pop();
            return Ok(Some(String::from_utf8(line)?));
        }
    }
}

impl Kept {
    /// One round of `total` bytes: both sides prepare, are released at once, and
    /// report. `stop()` is polled while waiting; when it says stop, both are killed and
    /// an interruption error is returned.
    pub fn round(&mut self, total: u64, stop: &dyn Fn() -> bool) -> Result<Finished> {
        let cmd = format!("c {total}\n");
        for c in &self.chans {
            calls::write(c, cmd.as_bytes())?;
        }
        let ready = self.answers(stop)?;
        if ready.iter().any(|m| m != "r") {
            bail!("a {} side answered {ready:?} instead of ready", self.what);
        }
        let go_ns = monotonic_ns();
        for c in &self.chans {
            calls::write(c, b"g\n")?;
        }
        let [w, r] = self.answers(stop)?;
        let report = |line: &str, role: &str| {
            parse_report(line)
                .map_err(|e| anyhow!("{} {role}: unreadable result '{line}': {e}", self.what))
        };
        Ok(Finished {
            go_ns,
            writer: report(&w, "writer")?,
            reader: report(&r, "reader")?,
        })
    }

    /// One message from each side (a line, without its newline). A side that answers
    /// "err …" or ends gets both killed and its error returned.
    fn answers(&mut self, stop: &dyn Fn() -> bool) -> Result<[String; 2]> {
        let mut got: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
        let done = |g: &[Vec<u8>; 2], i: usize| g[i].ends_with(b"\n");
        let mut buf = [0u8; 512];
        while !(done(&got, 0) && done(&got, 1)) {
            if stop() {
                self.kill();
                return Err(crate::error::Interrupted.into());
            }
            let waiting: Vec<usize> = (0..2).filter(|&i| !done(&got, i)).collect();
            let chans = [&self.chans[0], &self.chans[1]];
            for i in readable(&chans, &waiting)? {
                let n = calls::read(&self.chans[i], &mut buf)?;
                got[i].extend_from_slice(&buf[..n]);
                if n == 0 || (got[i].starts_with(b"err ") && done(&got, i)) {
                    return Err(self.failed(&mut got));
                }
            }
        }
        let [a, b] = got.map(|g| String::from_utf8_lossy(&g).trim_end().to_string());
        Ok([a, b])
    }

    /// A side failed: both are killed, what the other had said is read to its end,
    /// and the telling error is returned ([`telling`]).
    fn failed(&self, got: &mut [Vec<u8>; 2]) -> anyhow::Error {
        self.kill();
        let mut buf = [0u8; 512];
        for (chan, g) in self.chans.iter().zip(got.iter_mut()) {
            while let Ok(n @ 1..) = calls::read(chan, &mut buf) {
                g.extend_from_slice(&buf[..n]);
            }
        }
        let i = telling(got);
        let role = ["writer", "reader"][i];
        let text = String::from_utf8_lossy(&got[i]);
        match text.lines().find_map(|l| l.strip_prefix("err ")) {
            Some(m) => anyhow!("{} {role}: {m}", self.what),
            None => anyhow!("the {} {role} process ended", self.what),
        }
    }

    fn kill(&self) {
        for c in &self.children {
            c.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::pipes;

    /// Moves `total` bytes through a pipe, 64 KiB per call; the reader gives up in its
    /// round `fail_at`.
    struct Through {
        fd: OwnedFd,
        writes: bool,
        rounds: u32,
        fail_at: Option<u32>,
    }

    impl Side for Through {
        fn prepare(&mut self, _total: u64) -> Result<()> {
            Ok(())
        }

        fn round(&mut self, total: u64) -> Result<Work> {
            self.rounds += 1;
            if self.fail_at == Some(self.rounds) {
                bail!("gives up in round {}", self.rounds);
            }
            let mut buf = vec![0u8; 64 << 10];
            let mut w = Work::default();
            while w.bytes < total {
                let n = (total - w.bytes).min(buf.len() as u64) as usize;
                let moved = if self.writes {
                    calls::write(&self.fd, &buf[..n])?
                } else {
                    calls::read(&self.fd, &mut buf[..n])?
                };
                if moved == 0 {
                    bail!("end of file");
                }
                w.bytes += moved as u64;
                w.calls += 1;
            }
            Ok(w)
        }
    }

    fn kept_pipe(fail_at: Option<u32>) -> (Kept, OwnedFd) {
        let (r, w) = pipes::pipe().unwrap();
        let writer = || {
            Ok(Through {
                fd: w.try_clone()?,
                writes: true,
                rounds: 0,
                fail_at: None,
            })
        };
        let reader = || {
            Ok(Through {
                fd: r.try_clone()?,
                writes: false,
                rounds: 0,
                fail_at,
            })
        };
        let k = keep("test", (&[r.as_fd()], writer), (&[w.as_fd()], reader)).unwrap();
        (k, r)
    }

    #[test]
    fn rounds_carry_on_with_the_same_two_processes() {
        let (mut k, r) = kept_pipe(None);
        drop(r);
        let pids: Vec<i32> = k.children.iter().map(Child::pid).collect();
        for _ in 0..5 {
            let f = k.round(256 << 10, &|| false).unwrap();
            assert_eq!(
                (f.writer.work.bytes, f.reader.work.bytes),
                (256 << 10, 256 << 10)
            );
            assert!(f.reader.end_ns >= f.go_ns);
        }
        assert_eq!(k.children.iter().map(Child::pid).collect::<Vec<_>>(), pids);
    }

    /// The parent still holds the pipe's read end, as a kept socket's other end may be
    /// held: the writer blocks on a full pipe, and the round must not wait for it.
    #[test]
    fn a_side_that_fails_ends_the_round_with_its_error_without_waiting_for_the_other() {
        let (mut k, _held) = kept_pipe(Some(2));
        k.round(1 << 20, &|| false).unwrap();
        let e = k.round(1 << 20, &|| false).unwrap_err().to_string();
        assert!(e.contains("test reader: gives up in round 2"), "{e}");
    }
}
