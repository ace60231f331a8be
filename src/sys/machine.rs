//! Facts about the machine, recorded with every run: OS, kernel, CPU, caches, memory,
//! hypervisor, mitigations, clocksource, the measured filesystem and pipe limits.
//!
//! Everything is read from /proc and /sys at run time; a fact that cannot be read is
//! recorded as unknown, never guessed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// One CPU cache as sysfs describes it for CPU 0.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cache {
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub size_bytes: u64,
    /// CPUs sharing this cache (sysfs `shared_cpu_list`), e.g. `0` = private, `0-1` = shared.
    pub shared_cpu_list: String,
}

/// The filesystem holding the measured directory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Filesystem {
    pub path: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    pub mount_options: String,
    /// Whether the filesystem compresses what it stores: `none`, the btrfs `compress`
    /// option, or that zfs compresses per dataset. Absent in runs of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// `read_ahead_kb` of the block device under the filesystem (None without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_kb: Option<u64>,
}

impl Filesystem {
    /// Whether the filesystem keeps its files in memory alone (tmpfs, ramfs): no cold
    /// state to evict to, and no durability (fsync returns at once; nothing survives a
    /// reboot).
    pub fn memory_backed(&self) -> bool {
        matches!(self.fs_type.as_str(), "tmpfs" | "ramfs")
    }
}

/// Kernel settings that change what a figure means. Each is None when unreadable.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Tuning {
    /// Transparent huge pages: `enabled` and `defrag` (the selected values).
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
    /// CPU frequency scaling of CPU 0: driver and governor; None without cpufreq (a
    /// guest whose frequency the host sets, say).
    pub cpufreq_driver: Option<String>,
    pub cpufreq_governor: Option<String>,
    /// Boost/turbo: true when enabled (cpufreq `boost`, or intel_pstate `no_turbo` = 0).
    pub boost: Option<bool>,
    /// vm.dirty_* thresholds: ratios in percent and bytes (0 = the ratio applies).
    pub dirty_ratio: Option<u64>,
    pub dirty_background_ratio: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub dirty_background_bytes: Option<u64>,
    /// DAMON schemes running (a kdamond `on`), which act on memory behind ioprobe's
    /// back: a `pageout` scheme on physical memory evicts idle page cache. Empty when
    /// none run or DAMON's sysfs is absent.
    #[serde(default)]
    pub damon: Vec<DamonScheme>,
}

/// One scheme of a running kdamond (`/sys/kernel/mm/damon/admin`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct DamonScheme {
    /// What it does to the regions it finds: `pageout`, `cold`, `lru_prio`, …
    pub action: String,
    /// What it monitors: `paddr` (physical memory: every process's pages and the
    /// page cache), `vaddr`/`fvaddr` (some processes' address spaces).
    pub operations: String,
    /// Regions it acts on: idle at least this long (seconds, from the minimum age in
    /// aggregation intervals), with at most `max_accesses` accesses per interval.
    pub min_idle_s: f64,
    pub max_accesses: u64,
    /// At most this many bytes per second (0: no size quota).
    pub quota_bytes_per_s: u64,
}

impl DamonScheme {
    /// The schemes of every running kdamond under `root` (the admin directory).
    fn running(root: &Path) -> Vec<DamonScheme> {
        let num = |p: &Path| read_path(p).trim().parse::<u64>().unwrap_or(0);
        let mut out = Vec::new();
        for k in sorted_dirs(&root.join("kdamonds")) {
            if read_path(&k.join("state")).trim() != "on" {
                continue;
            }
            for c in sorted_dirs(&k.join("contexts")) {
                let operations = read_path(&c.join("operations")).trim().to_string();
                let aggr_us = num(&c.join("monitoring_attrs/intervals/aggr_us"));
                for s in sorted_dirs(&c.join("schemes")) {
                    let reset_ms = num(&s.join("quotas/reset_interval_ms"));
                    let bytes = num(&s.join("quotas/bytes"));
                    out.push(DamonScheme {
                        action: read_path(&s.join("action")).trim().to_string(),
                        operations: operations.clone(),
                        min_idle_s: num(&s.join("access_pattern/age/min")) as f64 * aggr_us as f64
                            / 1e6,
                        max_accesses: num(&s.join("access_pattern/nr_accesses/max")),
                        quota_bytes_per_s: (bytes * 1000).checked_div(reset_ms).unwrap_or(0),
                    });
                }
            }
        }
        out
    }

    /// "pageout of physical memory idle ≥ 60 s, up to 128 MiB/s".
    pub fn describe(&self) -> String {
        let what = match self.operations.as_str() {
            "paddr" => "physical memory (the page cache too)".to_string(),
            "vaddr" | "fvaddr" => "some processes' memory".to_string(),
            o => o.to_string(),
        };
        let quota = if self.quota_bytes_per_s > 0 {
            format!(
                ", up to {}/s",
                crate::units::format_size(self.quota_bytes_per_s)
            )
        } else {
            String::new()
        };
        format!(
            "{} of {what} idle ≥ {} s{quota}",
            self.action,
            crate::units::sig3(self.min_idle_s)
        )
    }
}

/// The numbered subdirectories of `dir` (DAMON's 0, 1, …), in order.
fn sorted_dirs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<(u64, std::path::PathBuf)> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

fn read_path(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_default()
}

impl Tuning {
    fn collect() -> Tuning {
        let val = |p: &str| {
            let t = read(p);
            let t = t.trim();
            (!t.is_empty()).then(|| t.to_string())
        };
        let selected = |p: &str| {
            let t = read(p);
            t.split_whitespace()
                .find(|w| w.starts_with('[') && w.ends_with(']'))
                .map(|w| w.trim_matches(['[', ']']).to_string())
        };
        let num = |p: &str| val(p).and_then(|v| v.parse::<u64>().ok());
        let boost = num("/sys/devices/system/cpu/cpufreq/boost")
            .map(|b| b == 1)
            .or_else(|| num("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|n| n == 0));
        Tuning {
            thp_enabled: selected("/sys/kernel/mm/transparent_hugepage/enabled"),
            thp_defrag: selected("/sys/kernel/mm/transparent_hugepage/defrag"),
            cpufreq_driver: val("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
            cpufreq_governor: val("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            boost,
            dirty_ratio: num("/proc/sys/vm/dirty_ratio"),
            dirty_background_ratio: num("/proc/sys/vm/dirty_background_ratio"),
            dirty_bytes: num("/proc/sys/vm/dirty_bytes"),
            dirty_background_bytes: num("/proc/sys/vm/dirty_background_bytes"),
            damon: DamonScheme::running(Path::new("/sys/kernel/mm/damon/admin")),
        }
    }

    /// Bytes of dirty page cache at which background writeback starts: the bytes
    /// setting, or the ratio of `available` memory (the kernel's base is its dirtyable
    /// memory, close to MemAvailable).
    pub fn background_threshold(&self, available: u64) -> Option<u64> {
        match self.dirty_background_bytes {
            Some(b) if b > 0 => Some(b),
            _ => self.dirty_background_ratio.map(|r| available / 100 * r),
        }
    }

    /// Bytes of dirty page cache at which writers are throttled.
    pub fn throttle_threshold(&self, available: u64) -> Option<u64> {
        match self.dirty_bytes {
            Some(b) if b > 0 => Some(b),
            _ => self.dirty_ratio.map(|r| available / 100 * r),
        }
    }
}

/// All machine facts recorded with a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub kernel_version: String,
    pub arch: String,
    pub cpu_model: String,
    pub logical_cpus: usize,
    pub caches: Vec<Cache>,
    pub memory_bytes: u64,
    pub memory_available_bytes: u64,
    pub page_size: u64,
    /// `None` on bare metal; otherwise what could be learnt of the hypervisor.
    pub hypervisor: Option<String>,
    pub mitigations: BTreeMap<String, String>,
    pub clocksource: String,
    pub filesystem: Option<Filesystem>,
    pub pipe_max_size: Option<u64>,
    pub ioprobe_version: String,
    /// `release` or `debug`: figures from a debug build are not representative.
    pub build_profile: String,
    /// CPU the measuring thread was pinned to (`--cpu`), if any.
    pub pinned_cpu: Option<usize>,
    /// What a row's rusage counts: `thread` (RUSAGE_THREAD), or `process` where the OS
    /// has no per-thread counters (macOS). Absent in older runs (thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rusage_scope: Option<String>,
    /// Kernel settings that change what figures mean (absent in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuning: Option<Tuning>,
    /// Per probe, what the rest of the machine did while it ran (absent in older runs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub load: BTreeMap<String, super::load::Load>,
}

/// This host's name (uname's nodename), without collecting the rest.
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

impl Environment {
    /// The measured filesystem's type where it keeps files in memory alone (tmpfs,
    /// ramfs): what probes say when they leave out cold and durable rows.
    pub fn memory_fs(&self) -> Option<&str> {
        self.filesystem
            .as_ref()
            .filter(|f| f.memory_backed())
            .map(|f| f.fs_type.as_str())
    }

    /// Collects the facts; `measured_dir` names the directory whose filesystem is measured.
    pub fn collect(measured_dir: Option<&Path>) -> Environment {
        let uts = rustix::system::uname();
        let s = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
        let cpuinfo = read("/proc/cpuinfo");
        // macOS and FreeBSD have no /proc or /sys: their sysctl facts fill the gaps.
        let facts = super::os::sysctl_facts().unwrap_or_default();
        let meminfo = read("/proc/meminfo");
        Environment {
            hostname: hostname(),
            os: os_name(),
            kernel: s(uts.release()),
            kernel_version: s(uts.version()),
            arch: s(uts.machine()),
            cpu_model: cpuinfo_field(&cpuinfo, "model name")
                .or_else(|| facts.cpu_model.clone())
                .unwrap_or_else(|| "unknown".into()),
            logical_cpus: online_cpus(),
            caches: {
                let c = caches();
                if c.is_empty() {
                    facts
                        .caches
                        .iter()
                        .map(|&(level, kind, size_bytes)| Cache {
                            level,
                            kind: kind.into(),
                            size_bytes,
                            shared_cpu_list: "unknown".into(),
                        })
                        .collect()
                } else {
                    c
                }
            },
            memory_bytes: match meminfo_kib(&meminfo, "MemTotal") {
                0 => facts.memory_bytes.unwrap_or(0),
                kib => kib * 1024,
            },
            memory_available_bytes: memory_available(),
            page_size: super::calls::page_size() as u64,
            hypervisor: hypervisor(&cpuinfo),
            mitigations: mitigations(),
            clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .trim()
                .to_string(),
            filesystem: measured_dir.and_then(filesystem_of),
            pipe_max_size: read("/proc/sys/fs/pipe-max-size").trim().parse().ok(),
            ioprobe_version: env!("CARGO_PKG_VERSION").to_string(),
            build_profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            pinned_cpu: None,
            rusage_scope: Some(super::rusage::SCOPE.into()),
            // /proc/sys/vm is Linux's: elsewhere these facts are not recorded.
            tuning: Path::new("/proc/sys/vm").exists().then(Tuning::collect),
            load: BTreeMap::new(),
        }
    }

    /// Facts that may make a figure mislead, each in words: frequency scaling, huge
    /// pages, compression.
    pub fn caveats(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Some(t) = &self.tuning else {
            return out;
        };
        match (&t.cpufreq_driver, &t.cpufreq_governor) {
            (None, _) => out.push(
                "CPU frequency: no cpufreq here (set by the host or firmware): it may differ between runs, so compare runs with care"
                    .to_string(),
            ),
            (Some(d), Some(g)) if g != "performance" => out.push(format!(
                "CPU frequency scales (driver {d}, governor {g}): figures vary with load; the performance governor steadies them"
            )),
            _ => {}
        }
        if t.boost == Some(true) {
            out.push(
                "CPU boost/turbo is on: short figures may run faster than sustained ones".into(),
            );
        }
        if self.rusage_scope.as_deref() == Some("process") {
            out.push("rusage is the whole process's (this OS has no per-thread counters): ioprobe's helper threads count too".into());
        }
        if t.thp_enabled.as_deref() == Some("always") {
            out.push("transparent huge pages: always; mmap figures may include huge-page faults and compaction".into());
        }
        if let Some(c) = self
            .filesystem
            .as_ref()
            .and_then(|f| f.compression.as_deref())
            && c != "none"
        {
            out.push(format!(
                "the filesystem compresses ({c}): write and copy figures depend on how compressible the data is (ioprobe writes a pattern that compresses)"
            ));
        }
        out
    }

    /// Size of the data (or unified) cache at `level`, if known.
    pub fn data_cache(&self, level: u8) -> Option<u64> {
        self.caches
            .iter()
            .find(|c| c.level == level && c.kind != "Instruction")
            .map(|c| c.size_bytes)
    }

    /// Data/unified cache levels with sizes, smallest level first.
    pub fn data_caches(&self) -> Vec<(u8, u64)> {
        let mut v: Vec<(u8, u64)> = (1..=4)
            .filter_map(|l| self.data_cache(l).map(|s| (l, s)))
            .collect();
        v.sort();
        v
    }
}

/// Bytes of memory currently available (MemAvailable), read fresh.
pub fn memory_available() -> u64 {
    match meminfo_kib(&read("/proc/meminfo"), "MemAvailable") {
        0 => super::os::memory_available().unwrap_or(0),
        kib => kib * 1024,
    }
}

fn read(path: &str) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

fn os_name() -> String {
    let text = read("/etc/os-release");
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn meminfo_kib(meminfo: &str, key: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// Parses sysfs cache sizes such as `48K`, `2048K`, `32M`.
pub fn parse_sysfs_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1024),
        'M' => (&s[..s.len() - 1], 1024 * 1024),
        'G' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

fn caches() -> Vec<Cache> {
    let mut out = Vec::new();
    let base = Path::new("/sys/devices/system/cpu/cpu0/cache");
    let Ok(entries) = fs::read_dir(base) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("index") {
            continue;
        }
        let p = e.path();
        let get = |f: &str| {
            fs::read_to_string(p.join(f))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let (Ok(level), Some(size)) = (get("level").parse::<u8>(), parse_sysfs_size(&get("size")))
        else {
            continue;
        };
        out.push(Cache {
            level,
            kind: get("type"),
            size_bytes: size,
            shared_cpu_list: get("shared_cpu_list"),
        });
    }
    out.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    out
}

fn hypervisor(cpuinfo: &str) -> Option<String> {
    let flagged = cpuinfo_field(cpuinfo, "flags")
        .is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
    let xen = read("/sys/hypervisor/type").trim().to_string();
    if !xen.is_empty() {
        return Some(xen);
    }
    if !flagged {
        return None;
    }
    let clocks = read("/sys/devices/system/clocksource/clocksource0/available_clocksource");
    if clocks.contains("kvm-clock") {
        Some("KVM (kvm-clock present)".into())
    } else if clocks.contains("hyperv") {
        Some("Hyper-V".into())
    } else {
        Some("yes (vendor unknown)".into())
    }
}

fn mitigations() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Ok(entries) = fs::read_dir("/sys/devices/system/cpu/vulnerabilities") {
        for e in entries.flatten() {
            let v = fs::read_to_string(e.path())
                .unwrap_or_default()
                .trim()
                .to_string();
            m.insert(e.file_name().to_string_lossy().into_owned(), v);
        }
    }
    m
}

/// Finds the mount holding `dir` in /proc/self/mountinfo (longest mount point that is a
/// path prefix of the canonical directory).
pub fn filesystem_of(dir: &Path) -> Option<Filesystem> {
    let canon = fs::canonicalize(dir).ok()?;
    let mut best = mount_holding(&canon, &super::mounts::table());
    if let Some(b) = best.as_mut() {
        b.read_ahead_kb = read_ahead_kb(&canon);
    }
    best.or_else(|| statfs_mount(&canon))
}

/// Filesystem types (ext4, tmpfs, …) of directories, for a lookup made many times (a
/// trace's targets): [`filesystem_of`] without its block device's read-ahead. Each
/// directory's mount is asked alone where the kernel can (statmount(2)); else the mount
/// table is read once, and again when a directory's mount (statx's mount id) is not in
/// it (a mount made since).
#[derive(Debug, Default)]
pub struct FsTypes {
    mounts: Option<Vec<super::mounts::Mount>>,
}

impl FsTypes {
    /// The type of the filesystem holding `dir`.
    pub fn of(&mut self, dir: &Path) -> Option<String> {
        let canon = fs::canonicalize(dir).ok()?;
        super::os::fs_type_at(&canon).or_else(|| self.in_table(&canon))
    }

    /// The type of the filesystem holding the canonical directory `canon`, from the
    /// mount table (read again when it lacks `canon`'s mount).
    fn in_table(&mut self, canon: &Path) -> Option<String> {
        let id = super::os::mount_id_at(canon);
        let known = |t: &[super::mounts::Mount]| id.is_none_or(|id| t.iter().any(|m| m.id == id));
        if !self.mounts.as_deref().is_some_and(known) {
            self.mounts = Some(super::mounts::table());
        }
        let table = self.mounts.as_deref().unwrap_or_default();
        id.and_then(|id| table.iter().find(|m| m.id == id))
            .map(|m| m.fs_type.clone())
            .or_else(|| mount_holding(canon, table).map(|f| f.fs_type))
            .or_else(|| statfs_mount(canon).map(|f| f.fs_type))
    }
}

/// The mount in the mount table `table` holding the canonical directory `canon`
/// (longest mount point that is a path prefix of it).
fn mount_holding(canon: &Path, table: &[super::mounts::Mount]) -> Option<Filesystem> {
    let mut best: Option<Filesystem> = None;
    for m in table {
        if !canon.starts_with(&m.point) {
            continue;
        }
        let mount_point = m.point.display().to_string();
        if best
            .as_ref()
            .is_some_and(|b| b.mount_point.len() > mount_point.len())
        {
            continue;
        }
        best = Some(Filesystem {
            path: canon.display().to_string(),
            mount_point,
            compression: Some(compression(&m.fs_type, &m.super_options)),
            fs_type: m.fs_type.clone(),
            source: m.source.clone(),
            mount_options: format!("{} ({})", m.options, m.super_options),
            read_ahead_kb: None,
        });
    }
    best
}

/// Without /proc (macOS, FreeBSD): the mount holding `canon`, from statfs.
fn statfs_mount(canon: &Path) -> Option<Filesystem> {
    let (mount_point, fs_type, source, mount_options) = super::os::mount_of(canon)?;
    Some(Filesystem {
        path: canon.display().to_string(),
        compression: Some(compression(&fs_type, &mount_options)),
        mount_point,
        fs_type,
        source,
        mount_options,
        read_ahead_kb: None,
    })
}

/// The machine's online CPUs, whatever this process is pinned to (`--cpu`, taskset):
/// sysconf(_SC_NPROCESSORS_ONLN), else the CPUs this process may use.
fn online_cpus() -> usize {
    // SAFETY: sysconf only reads a system setting; it takes no pointer.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether a filesystem of `fs_type` mounted with `options` compresses.
fn compression(fs_type: &str, options: &str) -> String {
    match fs_type {
        "btrfs" => options
            .split(',')
            .find(|o| o.starts_with("compress"))
            .map_or("none".into(), |o| format!("btrfs {o}")),
        "zfs" => "zfs: per dataset (see `zfs get compression`)".into(),
        _ => "none".into(),
    }
}

/// `read_ahead_kb` of the block device holding `path` (its disk's, for a partition).
fn read_ahead_kb(path: &Path) -> Option<u64> {
    let dev = rustix::fs::stat(path).ok()?.st_dev;
    let base = Path::new("/sys/dev/block").join(format!(
        "{}:{}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev)
    ));
    let dir = fs::canonicalize(&base).ok()?;
    [
        dir.join("queue/read_ahead_kb"),
        dir.join("../queue/read_ahead_kb"),
    ]
    .iter()
    .find_map(|p| fs::read_to_string(p).ok()?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_from_mount_options() {
        assert_eq!(compression("ext4", "rw,discard"), "none");
        assert_eq!(
            compression("btrfs", "rw,compress=zstd:3,space_cache=v2"),
            "btrfs compress=zstd:3"
        );
        assert_eq!(compression("btrfs", "rw,ssd"), "none");
        assert!(compression("zfs", "rw").starts_with("zfs"));
        let t = Tuning {
            dirty_background_ratio: Some(10),
            dirty_ratio: Some(20),
            dirty_bytes: Some(0),
            ..Tuning::default()
        };
        assert_eq!(t.background_threshold(1000), Some(100));
        assert_eq!(t.throttle_threshold(1000), Some(200));
        let b = Tuning {
            dirty_background_bytes: Some(4096),
            ..t
        };
        assert_eq!(b.background_threshold(1000), Some(4096));
    }

    /// DAMON's admin tree as the kernel lays it out: a kdamond off is left out, an
    /// `on` one gives each scheme with its age in seconds and its quota per second.
    #[test]
    fn damon_schemes_of_running_kdamonds() {
        let root = tempfile::tempdir().unwrap();
        let put = |p: &str, v: &str| {
            let p = root.path().join(p);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, format!("{v}\n")).unwrap();
        };
        for (k, state) in [("0", "on"), ("1", "off")] {
            put(&format!("kdamonds/{k}/state"), state);
            let c = format!("kdamonds/{k}/contexts/0");
            put(&format!("{c}/operations"), "paddr");
            put(
                &format!("{c}/monitoring_attrs/intervals/aggr_us"),
                "5000000",
            );
            let s = format!("{c}/schemes/0");
            put(&format!("{s}/action"), "pageout");
            put(&format!("{s}/access_pattern/age/min"), "12");
            put(&format!("{s}/access_pattern/nr_accesses/max"), "1");
            put(&format!("{s}/quotas/bytes"), "134217728");
            put(&format!("{s}/quotas/reset_interval_ms"), "1000");
        }
        let v = DamonScheme::running(root.path());
        assert_eq!(
            v,
            [DamonScheme {
                action: "pageout".into(),
                operations: "paddr".into(),
                min_idle_s: 60.0,
                max_accesses: 1,
                quota_bytes_per_s: 128 << 20,
            }]
        );
        assert_eq!(
            v[0].describe(),
            "pageout of physical memory (the page cache too) idle ≥ 60.0 s, up to 128 MiB/s"
        );
        assert!(DamonScheme::running(&root.path().join("absent")).is_empty());
    }

    #[test]
    fn sysfs_sizes() {
        assert_eq!(parse_sysfs_size("48K"), Some(48 * 1024));
        assert_eq!(parse_sysfs_size("32M"), Some(32 << 20));
        assert_eq!(parse_sysfs_size("512"), Some(512));
        assert_eq!(parse_sysfs_size("x"), None);
    }

    #[test]
    fn collects_something_real() {
        let env = Environment::collect(Some(Path::new(".")));
        assert!(env.logical_cpus >= 1);
        assert!(env.page_size >= 4096);
        assert!(env.memory_bytes > 0);
        let fs = env
            .filesystem
            .expect("the current directory has a filesystem");
        assert!(!fs.fs_type.is_empty());
    }

    #[test]
    fn filesystem_types_read_the_table_once_and_agree_with_a_full_lookup() {
        let mut types = FsTypes::default();
        let dirs = [Path::new("/"), Path::new("."), &std::env::temp_dir()];
        for dir in dirs.iter().chain(&dirs) {
            let full = filesystem_of(dir).map(|f| f.fs_type);
            assert!(full.is_some(), "{} has a filesystem", dir.display());
            assert_eq!(types.of(dir), full, "{}", dir.display());
            let canon = fs::canonicalize(dir).unwrap();
            assert_eq!(types.in_table(&canon), full, "{}", dir.display());
            // Asked of the mount alone, where the kernel can (statmount, Linux 6.8+).
            let alone = super::super::os::fs_type_at(&canon);
            assert!(alone.is_none() || alone == full, "{}", dir.display());
        }
        assert_eq!(types.of(Path::new("/no/such/dir")), None);
        #[cfg(target_os = "linux")]
        {
            let proc = Path::new("/proc");
            assert_eq!(types.of(proc).as_deref(), Some("proc"));
            assert_eq!(types.in_table(proc).as_deref(), Some("proc"));
            // A table without the directory's mount (one made after it was read) is
            // read again.
            types.mounts = Some(Vec::new());
            assert_eq!(types.in_table(proc).as_deref(), Some("proc"));
            assert!(types.mounts.as_ref().is_some_and(|t| !t.is_empty()));
        }
    }
}
