//! Connected socket pairs over loopback, and the calls that move bytes through them.
//!
//! Every socket here is made by the caller's process and connected to another of its
//! sockets: AF_UNIX pairs (socketpair(2), no name in the filesystem), TCP through a
//! listener bound to port 0 of 127.0.0.1 or ::1 that is closed as soon as it has
//! accepted its one connection, UDP sockets bound to port 0 of the loopback address
//! and connected to each other. Nothing listens once [`pair`] returns.

use super::calls::{SysError, SysResult, check};
use rustix::fd::{AsFd, OwnedFd};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvFlags, SendAncillaryBuffer, SendFlags, SocketFlags,
    SocketType, sockopt,
};
use std::io::{IoSlice, IoSliceMut};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

pub use super::os::{enable_zerocopy, send_zerocopy, tcp_segments_out, zerocopy_completions};

/// The kind of a connected pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    UnixStream,
    UnixDgram,
    /// TCP over loopback; true: ::1.
    Tcp(bool),
    /// UDP over loopback; true: ::1.
    Udp(bool),
}

/// What to ask of a pair's sockets before they connect (a receive buffer set after the
/// connection is too late for TCP's window scale).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tuning {
    /// SO_SNDBUF request in bytes; None keeps the kernel's default (and autotuning).
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF request in bytes; None keeps the kernel's default (and autotuning).
    pub rcvbuf: Option<u64>,
    /// TCP_NODELAY on the writer (TCP only).
    pub nodelay: bool,
}

/// Close-on-exec, set after creation: macOS has no SOCK_CLOEXEC (ioprobe forks no
/// thread while it measures, so nothing can exec in between).
fn cloexec(fd: OwnedFd) -> SysResult<OwnedFd> {
    check(
        "fcntl(F_SETFD)",
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC),
    )?;
    Ok(fd)
}

fn socket(family: AddressFamily, ty: SocketType) -> SysResult<OwnedFd> {
    cloexec(check(
        "socket",
        rustix::net::socket_with(family, ty, SocketFlags::empty(), None),
    )?)
}

fn tune(fd: &OwnedFd, t: &Tuning) -> SysResult<()> {
    if let Some(b) = t.sndbuf {
        check(
            "setsockopt(SO_SNDBUF)",
            sockopt::set_socket_send_buffer_size(fd, b as usize),
        )?;
    }
    if let Some(b) = t.rcvbuf {
        check(
            "setsockopt(SO_RCVBUF)",
            sockopt::set_socket_recv_buffer_size(fd, b as usize),
        )?;
    }
    Ok(())
}

fn loopback(v6: bool) -> SocketAddr {
    if v6 {
        SocketAddr::from((Ipv6Addr::LOCALHOST, 0))
    } else {
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
    }
}

fn family(v6: bool) -> AddressFamily {
    if v6 {
        AddressFamily::INET6
    } else {
        AddressFamily::INET
    }
}

fn bound(v6: bool, ty: SocketType, t: &Tuning) -> SysResult<(OwnedFd, SocketAddr)> {
    let fd = socket(family(v6), ty)?;
    tune(&fd, t)?;
    check("bind", rustix::net::bind(&fd, &loopback(v6)))?;
    let at = check("getsockname", rustix::net::getsockname(&fd))?;
    let at = SocketAddr::try_from(at)
        .map_err(|_| SysError::new("getsockname", rustix::io::Errno::AFNOSUPPORT))?;
    Ok((fd, at))
}

/// A channel between a process and a child it forks: a connected AF_UNIX stream pair
/// (end of file once the other end is closed; SOCK_SEQPACKET would keep messages
/// whole, but macOS has none), close-on-exec.
pub fn channel() -> SysResult<(OwnedFd, OwnedFd)> {
    let (a, b) = check(
        "socketpair",
        rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::empty(),
            None,
        ),
    )?;
    Ok((cloexec(a)?, cloexec(b)?))
}

/// A connected pair of `kind`, tuned: (the writer's end, the reader's end).
pub fn pair(kind: Kind, t: &Tuning) -> SysResult<(OwnedFd, OwnedFd)> {
    match kind {
        Kind::UnixStream | Kind::UnixDgram => {
            let ty = if kind == Kind::UnixStream {
                SocketType::STREAM
            } else {
                SocketType::DGRAM
            };
            let (w, r) = check(
                "socketpair",
                rustix::net::socketpair(AddressFamily::UNIX, ty, SocketFlags::empty(), None),
            )?;
            let (w, r) = (cloexec(w)?, cloexec(r)?);
            tune(&w, t)?;
            tune(&r, t)?;
            Ok((w, r))
        }
        Kind::Tcp(v6) => {
            let (listener, at) = bound(v6, SocketType::STREAM, t)?;
            check("listen", rustix::net::listen(&listener, 1))?;
            let w = socket(family(v6), SocketType::STREAM)?;
            tune(&w, t)?;
            check("connect", rustix::net::connect(&w, &at))?;
            let r = cloexec(check("accept", rustix::net::accept(&listener))?)?;
            drop(listener);
            check(
                "setsockopt(TCP_NODELAY)",
                sockopt::set_tcp_nodelay(&w, t.nodelay),
            )?;
            Ok((w, r))
        }
        Kind::Udp(v6) => {
            let (w, wat) = bound(v6, SocketType::DGRAM, t)?;
            let (r, rat) = bound(v6, SocketType::DGRAM, t)?;
            check("connect", rustix::net::connect(&w, &rat))?;
            check("connect", rustix::net::connect(&r, &wat))?;
            Ok((w, r))
        }
    }
}

/// Whether ::1 can be bound here (IPv6 loopback present).
pub fn has_ipv6_loopback() -> bool {
    bound(true, SocketType::DGRAM, &Tuning::default()).is_ok()
}

/// The buffer sizes the kernel granted: (SO_SNDBUF, SO_RCVBUF) as read back (Linux
/// reports twice the request: the other half is its bookkeeping).
pub fn buffers<Fd: AsFd>(fd: Fd) -> SysResult<(u64, u64)> {
    let s = check(
        "getsockopt(SO_SNDBUF)",
        sockopt::socket_send_buffer_size(&fd),
    )?;
    let r = check(
        "getsockopt(SO_RCVBUF)",
        sockopt::socket_recv_buffer_size(&fd),
    )?;
    Ok((s as u64, r as u64))
}

/// send(2).
#[inline]
pub fn send<Fd: AsFd>(fd: Fd, buf: &[u8]) -> SysResult<usize> {
    check("send", rustix::net::send(fd, buf, SendFlags::empty()))
}

/// recv(2).
#[inline]
pub fn recv<Fd: AsFd>(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    check("recv", rustix::net::recv(fd, buf, RecvFlags::empty())).map(|(n, _)| n)
}

/// recv(2) without blocking: None when nothing is queued.
pub fn recv_nowait<Fd: AsFd>(fd: Fd, buf: &mut [u8]) -> SysResult<Option<usize>> {
    match rustix::net::recv(fd, buf, RecvFlags::DONTWAIT) {
        Ok((n, _)) => Ok(Some(n)),
        Err(rustix::io::Errno::AGAIN) => Ok(None),
        Err(e) => Err(SysError::new("recv", e)),
    }
}

/// sendmsg(2) of `buf` in four iovecs (as even as its length allows).
#[inline]
pub fn sendmsg4<Fd: AsFd>(fd: Fd, buf: &[u8]) -> SysResult<usize> {
    let q = buf.len().div_ceil(4);
    let mut parts = buf.chunks(q.max(1));
    let iov = [(); 4].map(|_| IoSlice::new(parts.next().unwrap_or(&[])));
    check(
        "sendmsg",
        rustix::net::sendmsg(
            fd,
            &iov,
            &mut SendAncillaryBuffer::default(),
            SendFlags::empty(),
        ),
    )
}

/// recvmsg(2) into `buf` in four iovecs (as even as its length allows).
#[inline]
pub fn recvmsg4<Fd: AsFd>(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    let q = buf.len().div_ceil(4).max(1);
    let mut parts = buf.chunks_mut(q);
    let mut iov = [(); 4].map(|_| IoSliceMut::new(parts.next().unwrap_or(&mut [])));
    check(
        "recvmsg",
        rustix::net::recvmsg(
            fd,
            &mut iov,
            &mut RecvAncillaryBuffer::default(),
            RecvFlags::empty(),
        ),
    )
    .map(|m| m.bytes)
}

/// The family of the socket with inode `inode` in this network namespace, as the
/// socket probe names it (tcp, udp, unix, unix-dgram), from /proc/net (Linux); None
/// when it is not found (gone, another namespace, another OS, another family).
pub fn family_of_inode(inode: u64) -> Option<&'static str> {
    let want = inode.to_string();
    // tcp/udp: "sl local rem st tx:rx tr:when retr uid timeout inode …" (inode 10th).
    for (file, family) in [
        ("tcp", "tcp"),
        ("tcp6", "tcp"),
        ("udp", "udp"),
        ("udp6", "udp"),
    ] {
        let text = std::fs::read_to_string(format!("/proc/net/{file}")).unwrap_or_default();
        if text
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().nth(9) == Some(want.as_str()))
        {
            return Some(family);
        }
    }
    // unix: "Num RefCount Protocol Flags Type St Inode Path" (type 1 stream, 2 dgram).
    let text = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(6) == Some(&want.as_str())).then(|| match f.get(4).copied() {
            Some("0002") => Some("unix-dgram"),
            Some("0001") => Some("unix"),
            _ => None,
        })?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_carries_bytes_and_nothing_listens_after() {
        let mut kinds = vec![
            Kind::UnixStream,
            Kind::UnixDgram,
            Kind::Tcp(false),
            Kind::Udp(false),
        ];
        if has_ipv6_loopback() {
            kinds.extend([Kind::Tcp(true), Kind::Udp(true)]);
        }
        for k in kinds {
            let (w, r) = pair(k, &Tuning::default()).unwrap();
            assert_eq!(sendmsg4(&w, b"hello, socket").unwrap(), 13, "{k:?}");
            let mut buf = [0u8; 64];
            assert_eq!(recvmsg4(&r, &mut buf).unwrap(), 13, "{k:?}");
            assert_eq!(&buf[..13], b"hello, socket");
            let (s, rc) = buffers(&w).unwrap();
            assert!(s > 0 && rc > 0);
        }
    }

    #[test]
    fn a_socket_family_is_found_by_its_inode() {
        use rustix::fs::fstat;
        let ino = |fd: &OwnedFd| fstat(fd).unwrap().st_ino;
        let (w, _r) = pair(Kind::Tcp(false), &Tuning::default()).unwrap();
        let (u, _v) = pair(Kind::UnixStream, &Tuning::default()).unwrap();
        let (d, _e) = pair(Kind::UnixDgram, &Tuning::default()).unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(family_of_inode(ino(&w)), Some("tcp"));
            assert_eq!(family_of_inode(ino(&u)), Some("unix"));
            assert_eq!(family_of_inode(ino(&d)), Some("unix-dgram"));
        }
        assert_eq!(family_of_inode(u64::MAX), None);
    }

    #[test]
    fn a_requested_buffer_is_granted_and_read_back() {
        let t = Tuning {
            sndbuf: Some(256 << 10),
            rcvbuf: Some(256 << 10),
            nodelay: true,
        };
        let (w, r) = pair(Kind::Tcp(false), &t).unwrap();
        let (s, _) = buffers(&w).unwrap();
        let (_, rc) = buffers(&r).unwrap();
        // Linux doubles the request; capped by wmem_max/rmem_max for non-root.
        assert!(s >= 4096 && rc >= 4096, "{s} {rc}");
    }
}
