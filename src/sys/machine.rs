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
}

impl Environment {
    /// Collects the facts; `measured_dir` names the directory whose filesystem is measured.
    pub fn collect(measured_dir: Option<&Path>) -> Environment {
        let uts = rustix::system::uname();
        let s = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
        let cpuinfo = read("/proc/cpuinfo");
        let meminfo = read("/proc/meminfo");
        Environment {
            hostname: s(uts.nodename()),
            os: os_name(),
            kernel: s(uts.release()),
            kernel_version: s(uts.version()),
            arch: s(uts.machine()),
            cpu_model: cpuinfo_field(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            caches: caches(),
            memory_bytes: meminfo_kib(&meminfo, "MemTotal") * 1024,
            memory_available_bytes: meminfo_kib(&meminfo, "MemAvailable") * 1024,
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
        }
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
    meminfo_kib(&read("/proc/meminfo"), "MemAvailable") * 1024
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

/// Decodes the octal escapes (`\040` for space) that /proc/self/mountinfo uses.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("x"), 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Finds the mount holding `dir` in /proc/self/mountinfo (longest mount point that is a
/// path prefix of the canonical directory).
pub fn filesystem_of(dir: &Path) -> Option<Filesystem> {
    let canon = fs::canonicalize(dir).ok()?;
    let info = read("/proc/self/mountinfo");
    let mut best: Option<Filesystem> = None;
    for line in info.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        if pre.len() < 6 || post.len() < 3 {
            continue;
        }
        let mount_point = unescape_mount(pre[4]);
        if !canon.starts_with(&mount_point) {
            continue;
        }
        if best
            .as_ref()
            .is_some_and(|b| b.mount_point.len() > mount_point.len())
        {
            continue;
        }
        best = Some(Filesystem {
            path: canon.display().to_string(),
            mount_point,
            fs_type: post[0].to_string(),
            source: unescape_mount(post[1]),
            mount_options: format!("{} ({})", pre[5], post[2]),
        });
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_sizes() {
        assert_eq!(parse_sysfs_size("48K"), Some(48 * 1024));
        assert_eq!(parse_sysfs_size("32M"), Some(32 << 20));
        assert_eq!(parse_sysfs_size("512"), Some(512));
        assert_eq!(parse_sysfs_size("x"), None);
    }

    #[test]
    fn mount_escapes() {
        assert_eq!(unescape_mount("/a\\040b"), "/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
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
}
