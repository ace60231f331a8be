//! What `ioprobe cp` takes from what ioprobe measured here: with a saved copy run of
//! this host on the destination's filesystem type, whether copy_file_range or the
//! read/write loop is faster (warm source, no fsync, the largest file measured) and the
//! loop's buffer (the cheapest of the buffers tied with the fastest, as the copy
//! advice picks it); with a saved pipe run, the capacity to raise a pipe source to.
//! Without them, GNU cp's order and sizes.

use crate::advice::{Opt, rank};
use crate::present::with_params;
use crate::probes::copy::{Cache, Durability, Method, Params};
use crate::probes::pipe;
use crate::results::Measurement;
use crate::results::store::{self, Store};
use crate::units::format_size;
use std::path::Path;

/// read/write buffer without a saved run: GNU cp's (at least 256 KiB on Linux).
pub const DEFAULT_BUFFER: usize = 256 * 1024;
/// Pipe capacity for a pipe source without a saved run.
pub const DEFAULT_PIPE: usize = 1 << 20;
/// Largest buffer taken from a run (a 100 MiB buffer per worker is not worth it).
const MAX_BUFFER: u64 = 8 << 20;
/// How many of the newest saved runs are looked at.
const RECENT: usize = 30;

/// The data path's choices and where they came from.
#[derive(Debug, Clone)]
pub struct Tuning {
    pub buffer: usize,
    /// Whether copy_file_range is tried before the read/write loop.
    pub offload_first: bool,
    pub pipe_capacity: usize,
    /// Where the file copy choices came from, for `--debug` ("run 12 (ext4): …").
    pub copy_from: String,
    /// Where the pipe capacity came from.
    pub pipe_from: String,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            buffer: DEFAULT_BUFFER,
            offload_first: true,
            pipe_capacity: DEFAULT_PIPE,
            copy_from: "no saved copy run for this filesystem: GNU cp's order, 256 KiB buffer"
                .into(),
            pipe_from: "no saved pipe run: a 1 MiB pipe".into(),
        }
    }
}

/// The tuning for copies into `dest_dir`, from the default store (read only; nothing
/// is created when there is none).
pub fn for_destination(dest_dir: &Path) -> Tuning {
    let mut t = Tuning::default();
    let Some(fs) = crate::sys::machine::filesystem_of(dest_dir) else {
        return t;
    };
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let evidence = crate::results::store::Evidence::of(&host, &["copy", "pipe"], RECENT);
    let Ok(saved) = store::default_path().and_then(|p| Store::evidence_at(&p, &evidence)) else {
        return t;
    };
    let recent = &saved.runs;
    let (mut copy_done, mut pipe_done) = (false, false);
    let has = |r: &crate::results::store::RunSummary, p: &str| r.probes.iter().any(|x| x == p);
    for r in recent {
        if copy_done && pipe_done {
            break;
        }
        let copy_here = !copy_done && r.filesystem == fs.fs_type && has(r, "copy");
        let pipe_here = !pipe_done && has(r, "pipe");
        if !copy_here && !pipe_here {
            continue;
        }
        let Ok(run) = saved.load(r.id) else { continue };
        let rows: Vec<&Measurement> = run.measurements.iter().collect();
        if copy_here && let Some((buffer, offload, why)) = copy_choice(&rows) {
            t.buffer = buffer;
            t.offload_first = offload;
            t.copy_from = format!("run {} ({}, {}): {why}", r.id, r.filesystem, r.started_at);
            copy_done = true;
        }
        if pipe_here && let Some((capacity, why)) = pipe_choice(&rows) {
            t.pipe_capacity = capacity;
            t.pipe_from = format!("run {} ({}): {why}", r.id, r.started_at);
            pipe_done = true;
        }
    }
    t
}

/// From a copy run's rows: the read/write buffer, whether to offload first, and why.
/// Warm source, no fsync, unsparse, the largest file size with measured rows.
pub fn copy_choice(rows: &[&Measurement]) -> Option<(usize, bool, String)> {
    let typed: Vec<(&Measurement, Params)> = with_params::<Params>(rows)
        .into_iter()
        .filter(|(m, p)| {
            m.probe == "copy"
                && m.is_ok()
                && p.cache == Cache::Warm
                && p.durability == Durability::None
                && !p.sparse
        })
        .collect();
    let size = typed.iter().map(|t| t.1.file_size).max()?;
    let at: Vec<&(&Measurement, Params)> = typed.iter().filter(|t| t.1.file_size == size).collect();
    let loops: Vec<&(&Measurement, Params)> = at
        .iter()
        .copied()
        .filter(|t| {
            t.1.method == Method::ReadWrite && t.1.buffer_size.is_some_and(|b| b <= MAX_BUFFER)
        })
        .collect();
    let opts: Vec<Opt> = loops
        .iter()
        .map(|t| Opt::new(t.0, t.1.buffer_size.unwrap_or(0) as f64))
        .collect();
    let ranking = rank(&opts)?;
    let (rw, rw_params) = (loops[ranking.pick].0, &loops[ranking.pick].1);
    let buffer = rw_params.buffer_size? as usize;
    let gbps = |m: &Measurement| crate::units::format_gbps(m.median);
    let Some(cfr) = at
        .iter()
        .find(|t| t.1.method == Method::CopyFileRange)
        .map(|t| t.0)
    else {
        return Some((
            buffer,
            true,
            format!(
                "read-write/{} ({} GB/s) the cheapest of the fastest buffers at {}; copy_file_range not measured",
                format_size(buffer as u64),
                gbps(rw),
                format_size(size)
            ),
        ));
    };
    // The loop goes first only when it is clearly faster: copy_file_range also shares
    // or offloads blocks where the filesystem can, which a warm page-cache copy hides.
    let best_loop = loops[ranking.best].0;
    let loop_wins = best_loop.median > cfr.median && !crate::advice::ties(cfr, best_loop);
    let why = format!(
        "copy_file_range {} GB/s, read-write/{} {} GB/s at {} (warm, no fsync){}",
        gbps(cfr),
        format_size(buffer as u64),
        gbps(rw),
        format_size(size),
        if loop_wins {
            ": the loop first"
        } else {
            ": copy_file_range first"
        }
    );
    Some((buffer, !loop_wins, why))
}

/// From a pipe run's rows: the capacity to read a pipe source through (the larger only
/// when its best write-read row beats the default's beyond their intervals), and why.
pub fn pipe_choice(rows: &[&Measurement]) -> Option<(usize, String)> {
    let typed: Vec<(&Measurement, pipe::Params)> = with_params::<pipe::Params>(rows)
        .into_iter()
        .filter(|(m, p)| {
            m.probe == "pipe"
                && m.is_ok()
                && p.method == pipe::Method::WriteRead
                && p.pipe_size.is_some()
        })
        .collect();
    let best = |default: bool| {
        typed
            .iter()
            .filter(|t| (t.1.pipe_size_requested == "default") == default)
            .max_by(|a, b| a.0.median.total_cmp(&b.0.median))
    };
    let (d, big) = (best(true)?, best(false)?);
    let (dcap, bcap) = (d.1.pipe_size?, big.1.pipe_size?);
    let gbps = |m: &Measurement| crate::units::format_gbps(m.median);
    let larger_wins = big.0.median > d.0.median && !crate::advice::ties(d.0, big.0);
    let (cap, verdict) = if larger_wins {
        (bcap, "the larger pipe")
    } else {
        (dcap, "the default pipe")
    };
    Some((
        cap as usize,
        format!(
            "best write-read {} GB/s with a {} pipe, {} GB/s with {}: {verdict}",
            gbps(d.0),
            format_size(dcap),
            gbps(big.0),
            format_size(bcap)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Run;

    fn fixture(text: &str) -> Run {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_copy_run_gives_the_buffer_and_the_order() {
        let mut run = fixture(include_str!("../../tests/fixtures/copy-run.json"));
        let rows: Vec<&Measurement> = run.measurements.iter().collect();
        // Warm, no fsync: 64 KiB beats 1 MiB beyond their intervals, and
        // copy_file_range (6.5 GB/s) beats both.
        let (buffer, offload, why) = copy_choice(&rows).unwrap();
        assert_eq!((buffer, offload), (64 << 10, true), "{why}");
        assert!(why.contains("copy_file_range first"), "{why}");
        // A filesystem where copy_file_range is slow: the loop goes first.
        for m in &mut run.measurements {
            if m.case == "copy-file-range/warm/none/1MiB" {
                m.median = 1e9;
                m.ci95 = [0.9e9, 1.1e9];
            }
        }
        let rows: Vec<&Measurement> = run.measurements.iter().collect();
        let (buffer, offload, why) = copy_choice(&rows).unwrap();
        assert_eq!((buffer, offload), (64 << 10, false), "{why}");
        // Rows of other probes give nothing.
        let pipe = fixture(include_str!("../../tests/fixtures/pipe-run.json"));
        let rows: Vec<&Measurement> = pipe.measurements.iter().collect();
        assert!(copy_choice(&rows).is_none());
    }

    #[test]
    fn a_pipe_run_gives_the_capacity() {
        let mut run = fixture(include_str!("../../tests/fixtures/pipe-run.json"));
        let rows: Vec<&Measurement> = run.measurements.iter().collect();
        // The default pipe's best (7.55 GB/s) beats the 1 MiB pipe's (6.73).
        let (cap, why) = pipe_choice(&rows).unwrap();
        assert_eq!(cap, 64 << 10, "{why}");
        for m in &mut run.measurements {
            if m.case == "write-read/same/1MiB/64KiB" {
                m.median = 12e9;
                m.ci95 = [11.5e9, 12.5e9];
            }
        }
        let rows: Vec<&Measurement> = run.measurements.iter().collect();
        let (cap, why) = pipe_choice(&rows).unwrap();
        assert_eq!(cap, 1 << 20, "{why}");
    }

    #[test]
    fn without_a_store_the_defaults_say_so() {
        let t = Tuning::default();
        assert_eq!((t.buffer, t.offload_first), (DEFAULT_BUFFER, true));
        assert!(t.copy_from.contains("GNU cp's order"));
    }
}
