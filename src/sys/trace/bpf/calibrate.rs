//! What ioprobe's programs add to the interval of a timed pair of calls, here: `lseek`
//! on /dev/null timed in blocks (this thread's CPU time) without the programs, then
//! with them attached and this thread in the traced tree (its records read by another
//! thread, as a trace's are), then without them again. The median interval of the
//! loop's timed pairs, less the bare call, is what tracing puts in a pair's interval
//! besides the program's own work and the call ([`super::super::Timing`]).

use super::super::Calibration as Cost;
use super::kernel::map_update;
use super::ring::Rings;
use super::{AT, Loaded, Scope, TRACED};
use std::io::{self, Seek, SeekFrom};

/// Calls per timed block: about 0.3 ms untraced here, and records (96 bytes each)
/// well inside a CPU's ring.
const BLOCK: u64 = 2_000;

/// About `calls` traced calls (at least 8 blocks), and half as many before and after
/// without the programs.
pub fn cost(calls: u64) -> io::Result<Cost> {
    let blocks = (calls / BLOCK).clamp(8, 200);
    let mut null = std::fs::File::open("/dev/null")?;
    let mut block = || -> io::Result<f64> {
        // This thread's CPU time: the calls and the programs they run, not the reader's
        // time where it shares the CPU (a trace's gaps leave that out by their median).
        let cpu = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
        };
        let t = cpu();
        for _ in 0..BLOCK {
            if std::hint::black_box(&mut null).seek(SeekFrom::Start(0))? != 0 {
                return Err(io::Error::other("lseek on /dev/null did not return 0"));
            }
        }
        Ok((cpu() - t) / BLOCK as f64)
    };
    let mut bare = Vec::new();
    for _ in 0..blocks / 2 {
        bare.push(block()?);
    }
    let Loaded { maps, links } = Loaded::load(Scope::Command)?;
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    map_update(&maps.tasks, &tid.to_ne_bytes(), &TRACED.to_ne_bytes())?;
    // Its live bit: word id / 32, bit 2 × (id % 32).
    let word = (tid as u32 >> 5).to_ne_bytes();
    map_update(&maps.live, &word, &(1u64 << (2 * (tid & 31))).to_ne_bytes())?;
    // Read by another thread as a trace's reader does: the CPU's ring's lines go to
    // that thread's cache and come back at the next lap, which each call pays for.
    let drain = Drain(Rings::map(maps.ring, maps.rings, maps.cpus, maps.cpu_ring)?);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || drain.until(&stop))
    };
    // The traced blocks' own times are not needed: their pairs are.
    let traced = (0..blocks).try_for_each(|_| block().map(drop));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (records, mut pairs) = reader.join().unwrap_or_default();
    drop((links, maps.tasks, maps.live, maps.wanted));
    traced?;
    if records < blocks * BLOCK || pairs.len() < 16 {
        return Err(io::Error::other(format!(
            "the calibration's {} calls made {records} records and {} timed pairs",
            blocks * BLOCK,
            pairs.len()
        )));
    }
    for _ in 0..blocks / 2 {
        bare.push(block()?);
    }
    Ok(Cost {
        bare_ns: median(&mut bare),
        pair_ns: median(&mut pairs),
        calls: blocks * BLOCK,
    })
}

/// The rings, emptied by a thread of its own.
struct Drain(Rings);

// SAFETY: the rings' mappings belong to the Drain alone, which its thread owns.
unsafe impl Send for Drain {}

impl Drain {
    /// Empties the rings every 0.2 ms until `stop`, then once more: the records read,
    /// and the intervals of the timed pairs among them (ns) where no switch came between.
    fn until(mut self, stop: &std::sync::atomic::AtomicBool) -> (u64, Vec<f64>) {
        let (mut records, mut pairs) = (0, Vec::new());
        let mut first: Option<super::super::Timing> = None;
        loop {
            let last = stop.load(std::sync::atomic::Ordering::Relaxed);
            self.0.drain(last, |r| {
                records += 1;
                let at = |i: usize| {
                    r.get(i..i + 4)
                        .map(|b| u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])))
                };
                let (Some(ended), Some(word)) = (at(AT as usize), at(8)) else {
                    return;
                };
                match (super::reader::timing(ended, word), first.take()) {
                    (Some(t), Some(f)) if t.second && t.switches == f.switches => {
                        pairs.push(f64::from(t.ended_ns.wrapping_sub(f.ended_ns)));
                    }
                    (Some(t), _) if !t.second => first = Some(t),
                    _ => {}
                }
            });
            if last {
                return (records, pairs);
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
