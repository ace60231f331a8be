//! The two round-trip cases: one byte passed over two pipes, to a partner process on
//! the same CPU and back (`switch_round_trip`: two context switches, each a wakeup and
//! a block, and four calls), or written and read back by this process alone
//! (`pipe_round_trip`: the same four calls, nothing to wake, nothing blocks). Half
//! their difference is what one switch costs a pipeline whose processes take turns on
//! one CPU (lmbench's lat_ctx, its calls measured beside it rather than assumed).

use crate::sys::affinity;
use crate::sys::calls::{self, short};
use crate::sys::pipes;
use crate::sys::process::{Child, fork_child};
use anyhow::Result;
use rustix::fd::{AsFd, OwnedFd};

/// The pipes of a round trip, and the partner at their other ends, if any.
pub struct RoundTrip {
    /// This process writes `out` and reads `back`; alone, it also reads `out_r` and
    /// writes `back_w` (the partner's ends).
    out: Option<OwnedFd>,
    back: OwnedFd,
    ends: Option<(OwnedFd, OwnedFd)>,
    partner: Option<Child>,
    /// The CPUs this thread was allowed before it was pinned for the partner.
    restore: Option<Vec<usize>>,
}

impl RoundTrip {
    /// Both pipes' ends kept by this process.
    pub fn alone() -> Result<RoundTrip> {
        let (out_r, out) = pipes::pipe()?;
        let (back, back_w) = pipes::pipe()?;
        Ok(RoundTrip {
            out: Some(out),
            back,
            ends: Some((out_r, back_w)),
            partner: None,
            restore: None,
        })
    }

    /// A partner process echoing each byte, it and this thread pinned to the CPU this
    /// thread runs on now (the fork copies the pinning).
    pub fn with_partner() -> Result<RoundTrip> {
        let (out_r, out) = pipes::pipe()?;
        let (back, back_w) = pipes::pipe()?;
        let allowed = affinity::allowed_cpus()?;
        affinity::pin_to(affinity::current_cpu()?)?;
        let mut rt = RoundTrip {
            out: None,
            back,
            ends: None,
            partner: None,
            restore: Some(allowed),
        };
        // The child closes its copies of this process's ends; the closure, dropped
        // here after the fork, closes this process's copies of the partner's.
        let child = fork_child(&[rt.back.as_fd(), out.as_fd()], move || {
            echo(&out_r, &back_w)
        })?;
        (rt.out, rt.partner) = (Some(out), Some(child));
        Ok(rt)
    }

    /// `n` round trips, every byte checked.
    pub fn run(&mut self, n: u64) -> Result<()> {
        let out = self.out.as_ref().expect("open until finished");
        let mut b = [0u8; 1];
        for i in 0..n {
            let sent = [i as u8];
            check("write", calls::write(out, &sent)?)?;
            if let Some((out_r, back_w)) = &self.ends {
                check("read", calls::read(out_r, &mut b)?)?;
                check("write", calls::write(back_w, &b)?)?;
            }
            check("read", calls::read(&self.back, &mut b)?)?;
            if b != sent {
                anyhow::bail!("round trip: sent {}, got {} back", sent[0], b[0]);
            }
        }
        Ok(())
    }

    /// Ends the partner (end of file on its pipe) and checks it exited cleanly; this
    /// thread's CPUs as they were.
    pub fn finish(mut self) -> Result<()> {
        self.out = None;
        let status = self.partner.take().map(Child::wait).transpose()?;
        self.unpin()?;
        match status {
            Some(s) if s != 0 => anyhow::bail!("round trip: the partner process exited {s}"),
            _ => Ok(()),
        }
    }

    fn unpin(&mut self) -> Result<()> {
        if let Some(cpus) = self.restore.take() {
            affinity::allow_only(&cpus)?;
        }
        Ok(())
    }
}

impl Drop for RoundTrip {
    /// On an error path: the partner killed and reaped (its [`Child`]), the pinning
    /// undone.
    fn drop(&mut self) {
        let _ = self.unpin();
    }
}

fn check(call: &'static str, n: usize) -> Result<()> {
    if n == 1 { Ok(()) } else { Err(short(call, n, 1)) }
}

/// The partner: each byte read from `from` written back to `to`, until end of file.
fn echo(from: &OwnedFd, to: &OwnedFd) -> i32 {
    let mut b = [0u8; 1];
    loop {
        match calls::read(from, &mut b) {
            Ok(0) => return 0,
            Ok(_) => {
                if calls::write(to, &b).ok() != Some(1) {
                    return 1;
                }
            }
            Err(_) => return 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Alone, each byte comes back (the partner's round trip forks, which the test
    /// harness's threads forbid: the CLI tests run it).
    #[test]
    fn bytes_come_back_alone() {
        let mut rt = RoundTrip::alone().unwrap();
        rt.run(300).unwrap();
        rt.finish().unwrap();
    }
}
