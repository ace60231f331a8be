//! bpf(2), the maps, and the offsets BTF gives.

use super::super::ptrace::os;
use super::asm::Insn;
use super::{ATTACH_RING, NUMBERS, RING, Scope, TASK_RING, TASKS, live_words};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// bpf(2) commands (`enum bpf_cmd`).
pub(super) const CMD_MAP_CREATE: i32 = 0;
pub(super) const CMD_MAP_LOOKUP_ELEM: i32 = 1;
pub(super) const CMD_MAP_UPDATE_ELEM: i32 = 2;
pub(super) const CMD_PROG_LOAD: i32 = 5;
pub(super) const CMD_RAW_TRACEPOINT_OPEN: i32 = 17;
pub(super) const CMD_MAP_UPDATE_BATCH: i32 = 26;

pub(super) fn bpf(cmd: libc::c_int, attr: &mut [u64; 16]) -> io::Result<libc::c_long> {
    // SAFETY: attr is a zero-filled 128-byte union bpf_attr with the fields `cmd`
    // reads set; pointers in it point to memory that outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr() as *mut libc::c_void,
            std::mem::size_of_val(attr),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

pub(super) fn set_u32(attr: &mut [u64; 16], byte: usize, v: u32) {
    let word = &mut attr[byte / 8];
    let shift = (byte % 8) * 8;
    *word = (*word & !(0xffff_ffffu64 << shift)) | (u64::from(v) << shift);
}

pub(super) fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: bpf(2) just returned this new descriptor, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

pub(super) fn map_create(
    kind: u32,
    key: u32,
    value: u32,
    entries: u32,
    flags: u32,
) -> io::Result<OwnedFd> {
    let mut attr = [0u64; 16];
    set_u32(&mut attr, 0, kind);
    set_u32(&mut attr, 4, key);
    set_u32(&mut attr, 8, value);
    set_u32(&mut attr, 12, entries);
    set_u32(&mut attr, 16, flags);
    bpf(CMD_MAP_CREATE, &mut attr)
        .map(owned)
        .map_err(os("bpf(BPF_MAP_CREATE)"))
}

/// Sets the entries of an array map of u32 values that are not zero, in one call
/// (BPF_MAP_UPDATE_BATCH; a new array map is zeroed): the kernel's time goes with the
/// entries given, about 0.3 µs each here.
pub(super) fn map_fill(map: &OwnedFd, values: &[u32]) -> io::Result<()> {
    let (keys, values): (Vec<u32>, Vec<u32>) = (0u32..)
        .zip(values.iter().copied())
        .filter(|&(_, v)| v != 0)
        .unzip();
    if keys.is_empty() {
        return Ok(());
    }
    let mut attr = [0u64; 16];
    attr[2] = keys.as_ptr() as u64;
    attr[3] = values.as_ptr() as u64;
    set_u32(&mut attr, 32, values.len() as u32);
    set_u32(&mut attr, 36, map.as_raw_fd() as u32);
    bpf(CMD_MAP_UPDATE_BATCH, &mut attr)
        .map(|_| ())
        .map_err(os("bpf(BPF_MAP_UPDATE_BATCH)"))
}

pub(super) fn map_update(map: &OwnedFd, key: &[u8], value: &[u8]) -> io::Result<()> {
    let mut attr = [0u64; 16];
    set_u32(&mut attr, 0, map.as_raw_fd() as u32);
    attr[1] = key.as_ptr() as u64;
    attr[2] = value.as_ptr() as u64;
    bpf(CMD_MAP_UPDATE_ELEM, &mut attr)
        .map(|_| ())
        .map_err(os("bpf(BPF_MAP_UPDATE_ELEM)"))
}

pub(super) fn map_lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> io::Result<()> {
    let mut attr = [0u64; 16];
    set_u32(&mut attr, 0, map.as_raw_fd() as u32);
    attr[1] = key.as_ptr() as u64;
    attr[2] = value.as_mut_ptr() as u64;
    bpf(CMD_MAP_LOOKUP_ELEM, &mut attr).map(|_| ())
}

/// Where a program attaches: a raw tracepoint by name, or a BTF-typed one (its
/// arguments typed, so it reads through their pointers without a helper) by the id of
/// the kernel's `btf_trace_NAME` typedef.
#[derive(Clone, Copy)]
pub(super) enum Point<'a> {
    Raw(&'a str),
    Typed(&'a str, u32),
}

/// Loads a program and attaches it to its tracepoint: the attachment's descriptor
/// (closing it detaches).
pub(super) fn attach(point: Point, code: &[Insn]) -> io::Result<(OwnedFd, OwnedFd)> {
    const RAW_TRACEPOINT: u32 = 17;
    const TRACING: u32 = 26;
    const TRACE_RAW_TP: u32 = 23;
    let license = c"Dual MIT/GPL";
    let name = match point {
        Point::Raw(n) | Point::Typed(n, _) => n,
    };
    // Without a log first (the verifier's log costs more than the check); with one,
    // to say why, only when the program is refused.
    let load = |log: &mut [u8]| {
        let mut attr = [0u64; 16];
        set_u32(&mut attr, 0, RAW_TRACEPOINT);
        if let Point::Typed(_, id) = point {
            set_u32(&mut attr, 0, TRACING);
            set_u32(&mut attr, 68, TRACE_RAW_TP);
            set_u32(&mut attr, 108, id);
        }
        set_u32(&mut attr, 4, code.len() as u32);
        attr[1] = code.as_ptr() as u64;
        attr[2] = license.as_ptr() as u64;
        if !log.is_empty() {
            set_u32(&mut attr, 24, 1);
            set_u32(&mut attr, 28, log.len() as u32);
            attr[4] = log.as_mut_ptr() as u64;
        }
        bpf(CMD_PROG_LOAD, &mut attr).map(owned)
    };
    let prog = load(&mut []).or_else(|_| {
        let mut log = vec![0u8; 1 << 16];
        load(&mut log).map_err(|e| {
            let text = String::from_utf8_lossy(&log);
            let last = text
                .trim_end_matches('\0')
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| format!(" ({l})"))
                .unwrap_or_default();
            io::Error::new(e.kind(), format!("bpf(BPF_PROG_LOAD) of {name}: {e}{last}"))
        })
    })?;
    // A typed program's tracepoint is the one its BTF id names: no name is given.
    let tp = std::ffi::CString::new(name).map_err(io::Error::other)?;
    let mut attr = [0u64; 16];
    if let Point::Raw(_) = point {
        attr[0] = tp.as_ptr() as u64;
    }
    set_u32(&mut attr, 8, prog.as_raw_fd() as u32);
    let link = bpf(CMD_RAW_TRACEPOINT_OPEN, &mut attr)
        .map(owned)
        .map_err(os("bpf(BPF_RAW_TRACEPOINT_OPEN)"))?;
    Ok((prog, link))
}

/// The maps the programs share.
pub(super) struct Maps {
    /// Task id → its state ([`TRACED`], [`WAITING`], [`COMPAT`]): the traced tree.
    pub(super) tasks: OwnedFd,
    /// Two bits per task id (word `id / 32`, bits `2 × (id % 32)` and the one above):
    /// the first set while `tasks` holds the task as [`TRACED`], what `sys_exit` looks
    /// at first, inline, in place of a hash lookup (a task id past the words goes to
    /// `tasks`); the second set by a timed call, whose task's next recorded call is timed too.
    pub(super) live: OwnedFd,
    /// Syscall number → [`wanted_value`] (0: not traced).
    pub(super) wanted: OwnedFd,
    /// One counter: records the rings had no room for, tasks the tree could not hold.
    pub(super) lost: OwnedFd,
    /// The ring buffer of task records (forks, execs, exits), which wakes ioprobe, and
    /// of the bells `sys_exit` rings when a quarter of its CPU's ring has filled.
    pub(super) ring: OwnedFd,
    /// Each CPU's ring of call records: an mmapable array, one element per possible
    /// CPU ([`CpuRings`](super::ring::CpuRings) lays them out), written by `sys_exit`
    /// alone on that CPU (a program never runs twice at once on one CPU), so it takes
    /// no lock.
    pub(super) rings: OwnedFd,
    /// One counter, the records' order across CPUs: each record takes the next
    /// number (an atomic fetch-and-add) and ioprobe reads them in that order.
    pub(super) ticket: OwnedFd,
    /// Possible CPUs (elements of `rings`), and each one's ring's data size in bytes
    /// (a power of two).
    pub(super) cpus: u32,
    pub(super) cpu_ring: u32,
    /// Attached to processes: their ids (TGIDs), every task of which is traced.
    pub(super) pids: Option<OwnedFd>,
    /// Attached to a cgroup: a cgroup array holding it at index 0 (its tasks, and
    /// those of the cgroups below it, are traced).
    pub(super) cgroup: Option<OwnedFd>,
}

/// The kernel's possible CPUs (`bpf_get_smp_processor_id` is below their count):
/// one more than the highest in `/sys/devices/system/cpu/possible` ("0-15", "0,2-3").
pub(super) fn possible_cpus() -> io::Result<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .map_err(os("reading /sys/devices/system/cpu/possible"))?;
    cpus_in(&text).ok_or_else(|| {
        io::Error::other(format!(
            "/sys/devices/system/cpu/possible reads {:?}, not a CPU list",
            text.trim()
        ))
    })
}

/// The count of CPUs a CPU list spans (its highest plus one).
pub(super) fn cpus_in(list: &str) -> Option<u32> {
    let last = list.trim().rsplit(',').next()?;
    let high = last.rsplit('-').next()?.parse::<u32>().ok()?;
    high.checked_add(1).filter(|&n| n <= 1 << 16)
}

/// Byte offsets of `pid` and `tgid` in the running kernel's `struct task_struct`.
#[derive(Debug, Clone, Copy)]
pub(super) struct TaskOffsets {
    pub(super) pid: i32,
    pub(super) tgid: i32,
    /// `struct linux_binprm`'s `buf` (the program's first bytes).
    pub(super) binprm_buf: i32,
    /// The task's voluntary and involuntary context switches.
    pub(super) nvcsw: i32,
    pub(super) nivcsw: i32,
}

/// What the programs need from the kernel's BTF.
#[derive(Debug, Clone, Copy)]
pub(super) struct KernelTypes {
    pub(super) offsets: TaskOffsets,
    /// The id of `btf_trace_sys_exit`, the typed `sys_exit` tracepoint.
    pub(super) sys_exit: u32,
}

/// `struct task_struct`'s `pid` and `tgid`, `struct linux_binprm`'s `buf` and the
/// typed `sys_exit` tracepoint, from the kernel's BTF in one pass.
pub(super) fn kernel_types() -> io::Result<KernelTypes> {
    let btf = Btf::open()?;
    let found = btf_find(
        btf.bytes(),
        &[
            (STRUCT, "task_struct"),
            (STRUCT, "linux_binprm"),
            (TYPEDEF, "btf_trace_sys_exit"),
        ],
    );
    let missing = |what: String| io::Error::new(io::ErrorKind::Unsupported, what);
    let member = |i: usize, st: &str, name: &str| {
        found[i]
            .as_ref()
            .and_then(|t| t.members.iter().find(|(n, _)| *n == name))
            .map(|&(_, bits)| (bits / 8) as i32)
            .ok_or_else(|| {
                missing(format!(
                    "the kernel's BTF has no struct {st} with a member {name}"
                ))
            })
    };
    Ok(KernelTypes {
        offsets: TaskOffsets {
            pid: member(0, "task_struct", "pid")?,
            tgid: member(0, "task_struct", "tgid")?,
            binprm_buf: member(1, "linux_binprm", "buf")?,
            nvcsw: member(0, "task_struct", "nvcsw")?,
            nivcsw: member(0, "task_struct", "nivcsw")?,
        },
        sys_exit: found[2]
            .as_ref()
            .map(|t| t.id)
            .ok_or_else(|| missing("the kernel's BTF has no btf_trace_sys_exit".into()))?,
    })
}

/// BTF kinds looked for.
pub(super) const STRUCT: u32 = 4;
pub(super) const TYPEDEF: u32 = 8;

/// A type found in BTF data: its id and, for a struct, its members (name, bit offset).
#[derive(Debug)]
pub(super) struct BtfType<'a> {
    pub(super) id: u32,
    pub(super) members: Vec<(&'a str, u32)>,
}

/// The first type of each (kind, name) in `wanted`, in one walk of BTF data (ids
/// count from 1, in order).
pub(super) fn btf_find<'a>(btf: &'a [u8], wanted: &[(u32, &str)]) -> Vec<Option<BtfType<'a>>> {
    let mut found: Vec<Option<BtfType>> = wanted.iter().map(|_| None).collect();
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(btf.get(at..at + 4)?.try_into().ok()?))
    };
    let header = || -> Option<(usize, usize, usize)> {
        (btf.get(0..2)? == [0x9f, 0xeb]).then_some(())?;
        let hdr = u32_at(4)? as usize;
        Some((
            hdr + u32_at(8)? as usize,
            u32_at(12)? as usize,
            hdr + u32_at(16)? as usize,
        ))
    };
    let Some((types, types_len, strings)) = header() else {
        return found;
    };
    let name = |off: u32| -> Option<&'a str> {
        let s = btf.get(strings + off as usize..)?;
        let end = s.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&s[..end]).ok()
    };
    let (mut at, mut id, mut left) = (types, 1u32, wanted.len());
    while at + 12 <= types + types_len && left > 0 {
        let (Some(name_off), Some(info)) = (u32_at(at), u32_at(at + 4)) else {
            break;
        };
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        let kflag = info >> 31 == 1;
        at += 12;
        let extra = match kind {
            1 | 14 | 17 => 4,
            3 => 12,
            4 | 5 | 15 | 19 => 12 * vlen,
            6 | 13 => 8 * vlen,
            _ => 0,
        };
        if let Some(i) = wanted
            .iter()
            .enumerate()
            .position(|(i, &(k, n))| k == kind && found[i].is_none() && name(name_off) == Some(n))
        {
            let members = (0..if kind == STRUCT { vlen } else { 0 })
                .map(|i| {
                    let m = at + 12 * i;
                    let off = u32_at(m + 8)?;
                    Some((name(u32_at(m)?)?, if kflag { off & 0xff_ffff } else { off }))
                })
                .collect::<Option<Vec<_>>>();
            if let Some(members) = members {
                found[i] = Some(BtfType { id, members });
                left -= 1;
            }
        }
        at += extra;
        id += 1;
    }
    found
}

/// The kernel's BTF, mapped (private, read-only: sysfs gives it 4 KiB per read, 1,300
/// reads), else read.
pub(super) enum Btf {
    Mapped(*const u8, usize),
    Read(Vec<u8>),
}

impl Btf {
    pub(super) fn open() -> io::Result<Btf> {
        const PATH: &str = "/sys/kernel/btf/vmlinux";
        let f = std::fs::File::open(PATH).map_err(os(PATH))?;
        let len = f.metadata().map_err(os(PATH))?.len() as usize;
        // SAFETY: a private read-only mapping of the whole file, unmapped in Drop; the
        // kernel's BTF does not change while the system runs.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED || len == 0 {
            return std::fs::read(PATH).map(Btf::Read).map_err(os(PATH));
        }
        Ok(Btf::Mapped(p as *const u8, len))
    }

    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            // SAFETY: `len` bytes mapped at `p` for as long as self lives.
            Btf::Mapped(p, len) => unsafe { std::slice::from_raw_parts(*p, *len) },
            Btf::Read(v) => v,
        }
    }
}

impl Drop for Btf {
    fn drop(&mut self) {
        if let Btf::Mapped(p, len) = self {
            // SAFETY: the mapping made in Btf::open.
            unsafe { libc::munmap(*p as *mut libc::c_void, *len) };
        }
    }
}

/// A CPU's ring's data size for `scope`, with `cpus` possible CPUs: [`RING`] (or
/// [`ATTACH_RING`]) up to four CPUs, then four times that over their count (a power of
/// two), at least 256 KiB, and 64 MiB in all at most (a guest with room for many CPUs
/// hot-plugged has an element for each), with 64 KiB each at least.
fn cpu_ring_size(scope: Scope, cpus: u32) -> u32 {
    let full = match scope {
        Scope::Command => RING,
        Scope::Pids(_) | Scope::Cgroup(_) => ATTACH_RING,
    };
    let cpus = cpus.max(1);
    let share = (u64::from(full) * 4 / u64::from(cpus)) as u32;
    let mut size = (1u32 << (31 - share.max(1).leading_zeros())).clamp(256 << 10, full);
    while u64::from(size) * u64::from(cpus) > 64 << 20 && size > 64 << 10 {
        size /= 2;
    }
    size
}

/// The maps the programs share, and the scope's own (the processes or the cgroup
/// attached to).
pub(super) fn make_maps(scope: Scope) -> io::Result<Maps> {
    const HASH: u32 = 1;
    const ARRAY: u32 = 2;
    const CGROUP_ARRAY: u32 = 8;
    const RINGBUF: u32 = 27;
    // The tree is small and changes at forks and execs only: allocated as it grows.
    const NO_PREALLOC: u32 = 1;
    const MMAPABLE: u32 = 1 << 10;
    let cpus = possible_cpus()?;
    let cpu_ring = cpu_ring_size(scope, cpus);
    let mut maps = Maps {
        tasks: map_create(HASH, 4, 4, TASKS, NO_PREALLOC)?,
        live: map_create(ARRAY, 4, 8, live_words(), 0)?,
        wanted: map_create(ARRAY, 4, 4, NUMBERS, 0)?,
        lost: map_create(ARRAY, 4, 8, 1, 0)?,
        ring: map_create(RINGBUF, 0, 0, TASK_RING, 0)?,
        rings: map_create(ARRAY, 4, super::ring::element(cpu_ring), cpus, MMAPABLE)?,
        ticket: map_create(ARRAY, 4, 8, 1, 0)?,
        cpus,
        cpu_ring,
        pids: None,
        cgroup: None,
    };
    // An attach's processes or cgroup are put in their map when it begins
    // ([`Loaded::attach`]): until then the programs see nothing.
    match scope {
        Scope::Command => {}
        Scope::Pids(pids) => {
            maps.pids = Some(map_create(HASH, 4, 4, pids.len().max(1) as u32, 0)?);
        }
        Scope::Cgroup(_) => maps.cgroup = Some(map_create(CGROUP_ARRAY, 4, 4, 1, 0)?),
    }
    Ok(maps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_btf_reader_finds_task_struct_where_the_kernel_has_btf() {
        let Ok(btf) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let found = btf_find(
            &btf,
            &[(STRUCT, "task_struct"), (TYPEDEF, "btf_trace_sys_exit")],
        );
        let task = found[0].as_ref().expect("task_struct");
        assert!(task.members.iter().any(|(n, _)| *n == "pid"));
        assert!(task.members.iter().any(|(n, _)| *n == "tgid"));
        let tp = found[1].as_ref().expect("btf_trace_sys_exit");
        assert!(tp.members.is_empty() && tp.id > 0 && tp.id != task.id);
    }

    #[test]
    fn each_cpus_ring_is_smaller_where_there_are_many() {
        let mb = |n: u32| n << 20;
        assert_eq!(cpu_ring_size(Scope::Command, 2), mb(4));
        assert_eq!(cpu_ring_size(Scope::Command, 4), mb(4));
        assert_eq!(cpu_ring_size(Scope::Command, 16), mb(1));
        assert_eq!(cpu_ring_size(Scope::Command, 64), 256 << 10);
        assert_eq!(cpu_ring_size(Scope::Command, 1024), 64 << 10);
        assert_eq!(cpu_ring_size(Scope::Command, 0), mb(4));
        assert_eq!(cpu_ring_size(Scope::Pids(&[1]), 2), mb(8));
    }

    #[test]
    fn possible_cpus_are_counted_from_their_list() {
        assert_eq!(cpus_in("0-15\n"), Some(16));
        assert_eq!(cpus_in("0\n"), Some(1));
        assert_eq!(cpus_in("0,2-3"), Some(4));
        assert_eq!(cpus_in("junk"), None);
    }
}
