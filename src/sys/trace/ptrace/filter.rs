//! The seccomp filter (RET_TRACE for the traced calls of `calls.rs`) and the calls
//! that make descriptors, which the eBPF and preload tracers watch without counting.

use super::super::calls::traced;
use super::super::{Created, Event};

/// The calls that make descriptors, watched (not counted) so that ioprobe knows what
/// a descriptor is even when its process has ended before ioprobe reads the record.
#[derive(Debug, Clone, Copy)]
pub(in crate::sys::trace) enum Maker {
    /// pipe(fds) / pipe2(fds, flags), socketpair(d, t, p, fds): two descriptors at
    /// argument N.
    Pair(usize, Created),
    /// socket(domain, type, protocol): the descriptor returned.
    Socket,
    /// accept(fd, …) / accept4: the descriptor returned.
    Accept,
}

pub(in crate::sys::trace) fn makers() -> Vec<(u64, Maker)> {
    let mut v = vec![
        (libc::SYS_pipe2 as u64, Maker::Pair(0, Created::Pipe)),
        (
            libc::SYS_socketpair as u64,
            Maker::Pair(3, Created::Socket(None)),
        ),
        (libc::SYS_socket as u64, Maker::Socket),
        (libc::SYS_accept as u64, Maker::Accept),
        (libc::SYS_accept4 as u64, Maker::Accept),
    ];
    #[cfg(target_arch = "x86_64")]
    v.push((libc::SYS_pipe as u64, Maker::Pair(0, Created::Pipe)));
    v
}

/// The family of a socket(2) call's (domain, type).
pub(in crate::sys::trace) fn family(domain: u64, kind: u64) -> Option<&'static str> {
    let stream = kind & 0xf == libc::SOCK_STREAM as u64;
    let dgram = kind & 0xf == libc::SOCK_DGRAM as u64;
    match domain as i32 {
        libc::AF_UNIX if stream => Some("unix"),
        libc::AF_UNIX if dgram => Some("unix-dgram"),
        libc::AF_INET | libc::AF_INET6 if stream => Some("tcp"),
        libc::AF_INET | libc::AF_INET6 if dgram => Some("udp"),
        _ => None,
    }
}

/// What maker call `m` by `tid` (with `args`, returning `ret`) made, as an event:
/// its descriptors, what they are, and what /proc names each now. `pair` is the
/// two-int array a pipe or socketpair filled (as copied or read). None when it failed.
pub(in crate::sys::trace) fn made(
    tid: i32,
    m: Maker,
    args: &[u64; 6],
    ret: i64,
    pair: Option<&[u8]>,
) -> Option<Event> {
    if ret < 0 {
        return None;
    }
    let (fds, what) = match m {
        Maker::Pair(_, what) => {
            let b = pair.filter(|b| b.len() >= 8)?;
            let fd = |i: usize| i32::from_ne_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
            (vec![fd(0), fd(4)], what)
        }
        Maker::Socket => (vec![ret as i32], Created::Socket(family(args[0], args[1]))),
        Maker::Accept => (vec![ret as i32], Created::Socket(None)),
    };
    let names = fds
        .iter()
        .map(|fd| {
            std::fs::read_link(format!("/proc/{tid}/fd/{fd}"))
                .ok()
                .map(|l| l.to_string_lossy().into_owned())
        })
        .collect();
    Some(Event::Created {
        tid,
        fds,
        what,
        names,
    })
}

#[cfg(target_arch = "x86_64")]
pub(in crate::sys::trace) const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
pub(in crate::sys::trace) const AUDIT_ARCH: u32 = 0xC000_00B7;

/// The seccomp program: RET_TRACE for the traced calls (and, with `preload`, the
/// descriptor makers), ALLOW for everything else, including calls of another ABI
/// (32-bit on a 64-bit kernel) and, with `preload`, calls made from the page at that
/// address (the preload library's gate).
pub(in crate::sys::trace) fn filter(preload: Option<u64>) -> Vec<libc::sock_filter> {
    const LD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let op = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let mut calls: Vec<u64> = traced().into_iter().map(|(n, _)| n).collect();
    let mut p = vec![
        op(LD, 0, 0, 4), // seccomp_data.arch
        op(JEQ, 1, 0, AUDIT_ARCH),
        op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    if let Some(gate) = preload {
        calls.extend(makers().into_iter().map(|(n, _)| n));
        calls.extend([libc::SYS_execve as u64, libc::SYS_execveat as u64]);
        // seccomp_data.instruction_pointer, high then low word (little-endian), in
        // the gate's page.
        p.extend([
            op(LD, 0, 0, 12),
            op(JEQ, 0, 4, (gate >> 32) as u32),
            op(LD, 0, 0, 8),
            op(AND, 0, 0, !0xfff),
            op(JEQ, 0, 1, gate as u32),
            op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
        ]);
    }
    p.push(op(LD, 0, 0, 0)); // seccomp_data.nr
    let n = calls.len();
    // Each test jumps to the RET_TRACE after the last test and the RET_ALLOW (a jump
    // offset is a byte: up to 255 calls).
    assert!(n < 250, "too many traced calls for one filter");
    for (i, nr) in calls.iter().enumerate() {
        p.push(op(JEQ, (n - i) as u8, 0, *nr as u32));
    }
    p.extend([
        op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
        op(RET, 0, 0, libc::SECCOMP_RET_TRACE),
    ]);
    p
}
