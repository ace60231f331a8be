//! What the rest of the machine did while a probe ran: CPU pressure
//! (`/proc/pressure/cpu`), the CPU time other processes used and the time the
//! hypervisor stole (`/proc/stat`), read before and after the probe. A figure measured
//! while others competed for the CPUs does not say what a quiet rerun will: advice
//! lowers its confidence and the run says the machine was busy. Where `/proc` lacks
//! a file (macOS, FreeBSD, a kernel without PSI) that figure is absent, never zero.

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Share of the CPUs' time other processes used above which the machine was busy: a
/// quarter of the machine (half a CPU of two). Kernel threads writing back ioprobe's
/// own files count as others, and stay below it here (5–15% during `write`).
pub const BUSY_OTHERS: f64 = 0.25;
/// CPU pressure and preemptions are recorded but decide nothing: ioprobe's own two
/// processes on one CPU (pipe's `same` placement) make both high on an idle machine
/// (61% and 618 preemptions per sample measured here), and a copy's write-back
/// preempts the measuring thread about once per sample.
/// Share of the CPUs' time the hypervisor stole above which the machine was busy.
pub const BUSY_STEAL: f64 = 0.05;

/// The counters at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    at: Instant,
    /// `some total=` of `/proc/pressure/cpu`, µs.
    pressure_us: Option<u64>,
    /// (busy, steal, total) jiffies of the `cpu` line of `/proc/stat`.
    stat: Option<(u64, u64, u64)>,
    /// CPU time of this process and its waited-for children, µs.
    own_us: u64,
}

/// What the machine did while one probe ran, as the run records it per probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub seconds: f64,
    /// Share of the wall time in which some task waited for a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure: Option<f64>,
    /// Share of all CPUs' time used by processes other than ioprobe and its children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cpu: Option<f64>,
    /// Share of all CPUs' time the hypervisor stole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<f64>,
    /// Involuntary context switches of the measuring thread per sample, over the
    /// probe's rows.
    pub involuntary_cs_per_sample: f64,
    /// Others' CPU above [`BUSY_OTHERS`] or steal above [`BUSY_STEAL`].
    pub busy: bool,
}

/// The counters now.
pub fn snapshot() -> Snapshot {
    let pressure_us = std::fs::read_to_string("/proc/pressure/cpu")
        .ok()
        .and_then(|t| pressure_some_total(&t));
    let stat = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| stat_cpu(&t));
    let own = |r: Result<super::rusage::RawRusage, _>| r.map_or(0, |r| r.user_us + r.sys_us);
    Snapshot {
        at: Instant::now(),
        pressure_us,
        stat,
        own_us: own(super::rusage::getrusage_self()) + own(super::rusage::getrusage_children()),
    }
}

/// Nanoseconds the calling thread has spent runnable but waiting for a CPU another task
/// held, since it started (`run_delay`, the second field of
/// `/proc/thread-self/schedstat`; it grows when the thread gets its CPU back, so a
/// running thread reads every wait it has had). None where the kernel does not say (no
/// `/proc`, or a kernel without scheduler statistics).
pub fn run_delay_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    schedstat_delay(&text)
}

fn schedstat_delay(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

fn pressure_some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// (busy, steal, total) jiffies from the aggregate `cpu` line.
fn stat_cpu(text: &str) -> Option<(u64, u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest is inside user).
    if v.len() < 8 {
        return None;
    }
    let busy = v[0] + v[1] + v[2] + v[5] + v[6];
    let total: u64 = v[..8].iter().sum();
    Some((busy, v[7], total))
}

impl Load {
    /// The load between two snapshots; `preemptions` is the involuntary context switches
    /// per sample of the rows measured in between.
    pub fn between(a: &Snapshot, b: &Snapshot, preemptions: f64) -> Load {
        let wall = b.at.duration_since(a.at).as_secs_f64();
        let cpu_pressure = match (a.pressure_us, b.pressure_us) {
            (Some(x), Some(y)) if wall > 0.0 => {
                Some((y.saturating_sub(x) as f64 / 1e6 / wall).min(1.0))
            }
            _ => None,
        };
        let (mut others_cpu, mut steal) = (None, None);
        if let (Some(x), Some(y)) = (a.stat, b.stat) {
            let total = y.2.saturating_sub(x.2) as f64;
            if total > 0.0 {
                let jiffy_us = 1e6 / clock_ticks() as f64;
                let busy_us = y.0.saturating_sub(x.0) as f64 * jiffy_us;
                let own = b.own_us.saturating_sub(a.own_us) as f64;
                others_cpu = Some(((busy_us - own) / (total * jiffy_us)).clamp(0.0, 1.0));
                steal = Some(y.1.saturating_sub(x.1) as f64 / total);
            }
        }
        let over = |v: Option<f64>, line: f64| v.is_some_and(|v| v > line);
        let busy = over(others_cpu, BUSY_OTHERS) || over(steal, BUSY_STEAL);
        Load {
            seconds: wall,
            cpu_pressure,
            others_cpu,
            steal,
            involuntary_cs_per_sample: preemptions,
            busy,
        }
    }

    /// What made the machine busy, in words ("other processes used 48% of the CPUs,
    /// tasks waited for a CPU 39% of the time"); empty when it was not.
    pub fn why_busy(&self) -> String {
        let pct = |v: f64| format!("{:.0}%", v * 100.0);
        let mut out = Vec::new();
        if let Some(v) = self.others_cpu.filter(|v| *v > BUSY_OTHERS) {
            out.push(format!("other processes used {} of the CPUs", pct(v)));
        }
        if let Some(v) = self.steal.filter(|v| *v > BUSY_STEAL) {
            out.push(format!("the hypervisor stole {} of the CPUs' time", pct(v)));
        }
        if !out.is_empty()
            && let Some(v) = self.cpu_pressure
        {
            out.push(format!("tasks waited for a CPU {} of the time", pct(v)));
        }
        out.join(", ")
    }
}

/// Jiffies per second of `/proc/stat` (USER_HZ).
fn clock_ticks() -> u64 {
    rustix::param::clock_ticks_per_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_queue_wait_is_schedstats_second_field() {
        assert_eq!(schedstat_delay("578006 1234 2\n"), Some(1234));
        assert_eq!(schedstat_delay("578006"), None);
        // Where the kernel keeps the file, the wait is a counter that never goes back.
        if let (Some(a), Some(b)) = (run_delay_ns(), run_delay_ns()) {
            assert!(b >= a);
        }
    }

    #[test]
    fn proc_files_parse() {
        let psi = "some avg10=0.50 avg60=0.20 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(pressure_some_total(psi), Some(123456));
        let stat = "cpu  100 5 50 1000 10 2 3 7 0 0\ncpu0 50 2 25 500 5 1 1 3 0 0\n";
        assert_eq!(stat_cpu(stat), Some((160, 7, 1177)));
        assert_eq!(stat_cpu("cpu  1 2\n"), None);
    }

    #[test]
    fn a_load_is_busy_when_a_figure_crosses_its_line() {
        let a = Snapshot {
            at: Instant::now(),
            pressure_us: Some(0),
            stat: Some((0, 0, 0)),
            own_us: 0,
        };
        let hz = clock_ticks() as f64;
        let mut b = a;
        b.at = a.at + std::time::Duration::from_secs(1);
        // 2 CPUs for 1 s; ioprobe used 1 CPU-second, others 0.1.
        b.stat = Some(((1.1 * hz) as u64, 0, (2.0 * hz) as u64));
        b.own_us = 1_000_000;
        b.pressure_us = Some(50_000);
        let quiet = Load::between(&a, &b, 600.0);
        assert!(
            !quiet.busy,
            "its own preemptions do not make it busy: {quiet:?}"
        );
        assert!((quiet.others_cpu.unwrap() - 0.05).abs() < 0.01);
        b.stat = Some(((2.0 * hz) as u64, 0, (2.0 * hz) as u64));
        b.pressure_us = Some(400_000);
        let busy = Load::between(&a, &b, 3.0);
        assert!(busy.busy);
        assert_eq!(
            busy.why_busy(),
            "other processes used 50% of the CPUs, tasks waited for a CPU 40% of the time"
        );
    }
}
