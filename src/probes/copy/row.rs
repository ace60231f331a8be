//! One case's workload: the copies of one source into fresh destinations, timed in
//! batches, with the cache state verified before each; and whether a method is
//! supported here (a refusal is a row saying why, never another method under its name).

use super::*;

/// Errnos that mean "this method cannot work here", not "the copy went wrong".
pub(super) const UNSUPPORTED: [i32; 7] = [
    libc::EOPNOTSUPP,
    libc::ENOTSUP, // the same as EOPNOTSUPP on Linux, not on macOS
    libc::EXDEV,
    libc::EINVAL,
    libc::ENOSYS,
    libc::EPERM,
    libc::ENOTTY,
];

/// Copies a small probe file with `v`; `Err(reason)` when the method is unsupported
/// here, `Ok(Err(e))` for a real failure (a wrong copy, a full disk).
pub(super) fn support(
    v: &Variant,
    probe: &Source,
    dir: &std::path::Path,
    dio: u64,
) -> Result<Result<(), String>> {
    if v.method.is_tool() && !tools::available(v.method.name()) {
        return Ok(Err(format!("{} not found on PATH", v.method.name())));
    }
    let dst = calls::c_path(&dir.join("copy-probe.out"))?;
    let attempt = Prepared::new(v, dio)
        .and_then(|mut p| copy_once(v, &mut p, &probe.c_path, &dst, probe.size, false));
    let verdict = match attempt {
        Ok(_) => {
            let (size, hash) = source::fingerprint(&dst)?;
            if size != probe.size || hash != probe.hash {
                anyhow::bail!(
                    "{}: the probe copy differs from its source ({size} of {} bytes, fingerprint {})",
                    v.label(),
                    probe.size,
                    if hash == probe.hash {
                        "equal"
                    } else {
                        "different"
                    }
                );
            }
            Ok(())
        }
        Err(e) => match e.chain().find_map(|c| c.downcast_ref::<SysError>()) {
            Some(se) if UNSUPPORTED.contains(&se.errno) => Err(se.to_string()),
            _ => return Err(e.context(format!("{}: probe copy", v.label()))),
        },
    };
    copyfile::remove_if_present(&dst)?;
    Ok(verdict)
}

/// A copy's result: rusage of the child tool, when a tool made it.
type ToolRusage = Option<(String, RawRusage)>;

/// One copy with `v`: a system tool as a child process, or an in-process method.
pub(super) fn copy_once(
    v: &Variant,
    p: &mut Prepared,
    src: &CStr,
    dst: &CStr,
    size: u64,
    fsync: bool,
) -> Result<ToolRusage> {
    if v.method.is_tool() {
        tools::run(v, src, dst, size, fsync).map(Some)
    } else {
        methods::copy(v, p, src, dst, size, fsync).map(|()| None)
    }
}

/// One row: a variant in one cache state and durability mode, a copy per sample.
pub(super) struct Row<'a> {
    pub(super) v: Variant,
    pub(super) prep: Prepared,
    pub(super) src: &'a Source,
    pub(super) dst: CString,
    pub(super) cache: Cache,
    pub(super) fsync: bool,
    pub(super) drop_all: bool,
    pub(super) verify_always: bool,
    pub(super) corrupt: bool,
    pub(super) passes: usize,
    pub(super) verified: usize,
    pub(super) residency: Vec<(usize, usize)>,
    pub(super) failed: Option<String>,
    pub(super) tool: ToolRusage,
    /// Copies per sample (fewest, most) when the harness may fit them; None: one.
    pub(super) range: Option<(u64, u64)>,
    /// Destinations of the copies after the first in a sample (`dst` is the first's).
    pub(super) dsts: Vec<CString>,
    /// Copies made in the latest sample.
    pub(super) copies: usize,
    /// Whether this row runs the warm-up pass: only the first row of its variant and
    /// file size; its other cache states and durabilities run the same code.
    pub(super) warm: bool,
}

impl Row<'_> {
    /// The destinations the latest sample wrote.
    pub(super) fn written(&self) -> Vec<CString> {
        std::iter::once(&self.dst)
            .chain(&self.dsts)
            .take(self.copies.max(1))
            .cloned()
            .collect()
    }
}

/// Most bytes one sample of small-file copies writes (the copies stay until the
/// sample ends).
pub(super) const BATCH_BYTES: u64 = 64 << 20;

/// Copies per sample a row may have: a warm source no larger than 1 MiB is copied
/// several times per sample (a cold one must be evicted before each copy).
pub(super) fn copies_range(size: u64, cache: Cache) -> Option<(u64, u64)> {
    (cache == Cache::Warm && size <= 1 << 20)
        .then(|| (1, (BATCH_BYTES / size.max(4096)).clamp(1, 4096)))
}

impl Workload for Row<'_> {
    fn keeps_cpu_waits(&self) -> bool {
        true
    }

    fn pass_range(&self) -> Option<(u64, u64)> {
        self.range
    }

    fn warm_up(&self) -> bool {
        self.warm
    }

    fn settles(&self) -> bool {
        true
    }

    fn before_sample(&mut self) -> Result<()> {
        copyfile::remove_if_present(&self.dst)?;
        // A durable copy's time is its own writeback: what earlier rows left dirty on
        // this filesystem is written back first, outside the timing.
        if self.fsync {
            self.src.drain()?;
        }
        let r = self.src.prepare(self.cache, self.drop_all)?;
        self.residency.push(r);
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        // Several copies per sample only for a fitted row (a small file, warm): each to
        // its own destination, all removed after the sample, outside the timing.
        for i in 0..iters as usize {
            if self.failed.is_some() {
                continue;
            }
            if i > self.dsts.len() {
                let mut name = self.dst.to_bytes().to_vec();
                name.extend_from_slice(format!(".{i}").as_bytes());
                self.dsts.push(CString::new(name)?);
            }
            let dst = if i == 0 { &self.dst } else { &self.dsts[i - 1] };
            self.tool = copy_once(
                &self.v,
                &mut self.prep,
                &self.src.c_path,
                dst,
                self.src.size,
                self.fsync,
            )?;
        }
        self.copies = iters as usize;
        Ok(())
    }

    fn external(&mut self) -> Option<External> {
        self.tool.take().map(|(role, r)| External {
            elapsed_ns: None,
            processes: vec![(role, r)],
        })
    }

    fn after_sample(&mut self) -> Result<()> {
        if self.failed.is_none() && (self.passes < 2 || self.verify_always) {
            if self.corrupt && self.passes == 0 && self.src.size > 0 {
                let fd = calls::open(self.dst.as_c_str(), OFlags::RDWR | OFlags::CLOEXEC, 0)?;
                let mut b = [0u8; 1];
                let off = self.src.size / 2;
                calls::pread(&fd, &mut b, off)?;
                b[0] ^= 0xff;
                calls::pwrite_all(&fd, &b, off)?;
            }
            for (k, dst) in self.written().iter().enumerate() {
                let (size, hash) = source::fingerprint(dst)?;
                self.verified += usize::from(k == 0);
                if size != self.src.size || hash != self.src.hash {
                    self.failed = Some(format!(
                        "FAILED verification after pass {} (copy {} of the sample): destination has {size} of {} bytes and {} fingerprint",
                        self.passes + 1,
                        k + 1,
                        self.src.size,
                        if hash == self.src.hash {
                            "the same"
                        } else {
                            "a different"
                        }
                    ));
                    break;
                }
            }
        }
        self.passes += 1;
        for dst in self.written() {
            copyfile::remove_if_present(&dst)?;
        }
        Ok(())
    }
}

pub(super) fn residency_label(cache: Cache, seen: &[(usize, usize)]) -> (String, f64) {
    let total = seen.iter().map(|r| r.1).max().unwrap_or(0);
    let (lo, hi) = seen
        .iter()
        .fold((usize::MAX, 0), |(lo, hi), r| (lo.min(r.0), hi.max(r.0)));
    let lo = if seen.is_empty() { 0 } else { lo };
    let frac = if total == 0 {
        0.0
    } else {
        hi as f64 / total as f64
    };
    let label = match cache {
        _ if total == 0 => "empty file: nothing to cache".to_string(),
        Cache::Warm if lo == total => {
            format!("warm: {total}/{total} pages resident before every sample (mincore)")
        }
        Cache::Cold if hi == 0 => {
            format!("cold: 0/{total} pages resident before every sample (mincore)")
        }
        _ => format!(
            "asked {}, observed {lo}–{hi} of {total} pages resident (mincore)",
            cache.name()
        ),
    };
    (label, frac)
}
