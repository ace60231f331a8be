//! bpf(2), the maps, and the offsets BTF gives.

use super::super::ptrace::os;
use super::asm::Insn;
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

/// Sets an array map of u32 values whole, in one call (BPF_MAP_UPDATE_BATCH).
pub(super) fn map_fill(map: &OwnedFd, values: &[u32]) -> io::Result<()> {
    let keys: Vec<u32> = (0..values.len() as u32).collect();
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

/// Loads a raw-tracepoint program and attaches it to tracepoint `name`: the
/// attachment's descriptor (closing it detaches).
pub(super) fn attach(name: &str, code: &[Insn]) -> io::Result<(OwnedFd, OwnedFd)> {
    const RAW_TRACEPOINT: u32 = 17;
    let license = c"Dual MIT/GPL";
    // Without a log first (the verifier's log costs more than the check); with one,
    // to say why, only when the program is refused.
    let load = |log: &mut [u8]| {
        let mut attr = [0u64; 16];
        set_u32(&mut attr, 0, RAW_TRACEPOINT);
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
    let tp = std::ffi::CString::new(name).map_err(io::Error::other)?;
    let mut attr = [0u64; 16];
    attr[0] = tp.as_ptr() as u64;
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
    /// Syscall number → [`wanted_value`] (0: not traced).
    pub(super) wanted: OwnedFd,
    /// One counter: records the ring had no room for, tasks the tree could not hold.
    pub(super) lost: OwnedFd,
    pub(super) ring: OwnedFd,
    /// Attached to processes: their ids (TGIDs), every task of which is traced.
    pub(super) pids: Option<OwnedFd>,
    /// Attached to a cgroup: a cgroup array holding it at index 0 (its tasks, and
    /// those of the cgroups below it, are traced).
    pub(super) cgroup: Option<OwnedFd>,
}

/// Byte offsets of `pid` and `tgid` in the running kernel's `struct task_struct`.
#[derive(Debug, Clone, Copy)]
pub(super) struct TaskOffsets {
    pub(super) pid: i32,
    pub(super) tgid: i32,
    /// `struct linux_binprm`'s `buf` (the program's first bytes).
    pub(super) binprm_buf: i32,
}

/// `struct task_struct`'s `pid` and `tgid` and `struct linux_binprm`'s `buf`, from the
/// kernel's BTF.
pub(super) fn task_offsets() -> io::Result<TaskOffsets> {
    let btf = Btf::open()?;
    let btf = btf.bytes();
    let find = |st: &str, name: &str| {
        btf_struct(btf, st)
            .and_then(|m| {
                m.iter()
                    .find(|(n, _)| *n == name)
                    .map(|&(_, bits)| (bits / 8) as i32)
            })
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("the kernel's BTF has no struct {st} with a member {name}"),
                )
            })
    };
    Ok(TaskOffsets {
        pid: find("task_struct", "pid")?,
        tgid: find("task_struct", "tgid")?,
        binprm_buf: find("linux_binprm", "buf")?,
    })
}

/// The members (name, bit offset) of the struct called `wanted` in BTF data.
pub(super) fn btf_struct<'a>(btf: &'a [u8], wanted: &str) -> Option<Vec<(&'a str, u32)>> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(btf.get(at..at + 4)?.try_into().ok()?))
    };
    if btf.get(0..2)? != [0x9f, 0xeb] {
        return None;
    }
    let hdr = u32_at(4)? as usize;
    let (types, types_len) = (hdr + u32_at(8)? as usize, u32_at(12)? as usize);
    let strings = hdr + u32_at(16)? as usize;
    let name = |off: u32| -> Option<&'a str> {
        let s = btf.get(strings + off as usize..)?;
        let end = s.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&s[..end]).ok()
    };
    let mut at = types;
    while at + 12 <= types + types_len {
        let (name_off, info) = (u32_at(at)?, u32_at(at + 4)?);
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
        if kind == 4 && name(name_off) == Some(wanted) {
            return (0..vlen)
                .map(|i| {
                    let m = at + 12 * i;
                    let off = u32_at(m + 8)?;
                    Some((name(u32_at(m)?)?, if kflag { off & 0xff_ffff } else { off }))
                })
                .collect();
        }
        at += extra;
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_btf_reader_finds_task_struct_where_the_kernel_has_btf() {
        let Ok(btf) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let m = btf_struct(&btf, "task_struct").expect("task_struct");
        assert!(m.iter().any(|(n, _)| *n == "pid"));
        assert!(m.iter().any(|(n, _)| *n == "tgid"));
    }
}
