//! The system calls `ioprobe trace` stops at, decoded once: the tracer turns each
//! call's number into a [`Syscall`] (their Linux names, as strace prints them), and
//! each call belongs to one [`Family`], so everything above `sys` matches on variants,
//! never on numbers or strings.

use crate::names::named_enum;

/// What a traced call does, as far as pricing it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Read and write and their positioned and vectored forms.
    Data,
    /// Lseek.
    Lseek,
    /// The opens.
    Open,
    /// Close.
    Close,
    /// Dup, dup2, dup3.
    Dup,
    /// Fsync, fdatasync, sync_file_range.
    Sync,
    /// The in-kernel copies (sendfile, splice, tee, copy_file_range, vmsplice).
    Copy,
    /// Mmap.
    Mmap,
    /// Io_uring_setup.
    UringSetup,
    /// What is done to a mapping (munmap, msync, madvise).
    Mapping,
    /// Fcntl.
    Fcntl,
    /// Other calls on a descriptor (fstat, getdents64, io_uring_enter, hints, space, ioctl, locks, f* metadata, setsockopt).
    OnFd,
    /// Socket data (send*, recv*).
    Socket,
    /// Io_submit (Linux AIO).
    AioSubmit,
    /// Calls on no descriptor (io_getevents, sync).
    Context,
    /// Namespace and metadata calls on a path.
    Path,
    /// The stats of a path.
    Stat,
    /// Ptrace (fails under trace).
    Ptrace,
}

/// Declares the traced calls by family: the [`Syscall`] enum (one name each) and
/// [`Syscall::family`], so that a call cannot be added without a family.
macro_rules! syscalls {
    ($($(#[$fmeta:meta])* $family:ident: $($variant:ident = $name:literal),+;)+) => {
        named_enum! {
            /// A traced system call, by its Linux name. Names are a contract (trace's
            /// JSON `counts`).
            pub enum Syscall as "system call" {
                $($($variant = $name,)+)+
            }
        }

        impl Syscall {
            /// The family the call belongs to.
            pub fn family(self) -> Family {
                match self {
                    $($(Syscall::$variant)|+ => Family::$family,)+
                }
            }
        }
    };
}

syscalls! {
    /// Read and write and their positioned and vectored forms.
    Data: Read = "read", Write = "write", Pread64 = "pread64", Pwrite64 = "pwrite64", Readv = "readv", Writev = "writev", Preadv = "preadv", Pwritev = "pwritev", Preadv2 = "preadv2", Pwritev2 = "pwritev2";
    /// Lseek.
    Lseek: Lseek = "lseek";
    /// The opens.
    Open: Open = "open", Openat = "openat", Openat2 = "openat2", Creat = "creat";
    /// Close.
    Close: Close = "close";
    /// Dup, dup2, dup3.
    Dup: Dup = "dup", Dup2 = "dup2", Dup3 = "dup3";
    /// Fsync, fdatasync, sync_file_range.
    Sync: Fsync = "fsync", Fdatasync = "fdatasync", SyncFileRange = "sync_file_range";
    /// The in-kernel copies (sendfile, splice, tee, copy_file_range, vmsplice).
    Copy: Sendfile = "sendfile", Splice = "splice", Tee = "tee", CopyFileRange = "copy_file_range", Vmsplice = "vmsplice";
    /// Mmap.
    Mmap: Mmap = "mmap";
    /// Io_uring_setup.
    UringSetup: IoUringSetup = "io_uring_setup";
    /// What is done to a mapping (munmap, msync, madvise).
    Mapping: Munmap = "munmap", Msync = "msync", Madvise = "madvise";
    /// Fcntl.
    Fcntl: Fcntl = "fcntl";
    /// Other calls on a descriptor (fstat, getdents64, io_uring_enter, hints, space, ioctl, locks, f* metadata, setsockopt).
    OnFd: Fstat = "fstat", Getdents64 = "getdents64", IoUringEnter = "io_uring_enter", Fadvise64 = "fadvise64", Readahead = "readahead", Fallocate = "fallocate", Ftruncate = "ftruncate", Syncfs = "syncfs", Ioctl = "ioctl", Flock = "flock", Fchmod = "fchmod", Fchown = "fchown", Fsetxattr = "fsetxattr", Fgetxattr = "fgetxattr", Flistxattr = "flistxattr", Fremovexattr = "fremovexattr", Fstatfs = "fstatfs", Setsockopt = "setsockopt";
    /// Socket data (send*, recv*).
    Socket: Sendto = "sendto", Recvfrom = "recvfrom", Sendmsg = "sendmsg", Recvmsg = "recvmsg", Sendmmsg = "sendmmsg", Recvmmsg = "recvmmsg";
    /// Io_submit (Linux AIO).
    AioSubmit: IoSubmit = "io_submit";
    /// Calls on no descriptor (io_getevents, sync).
    Context: IoGetevents = "io_getevents", Sync = "sync";
    /// Namespace and metadata calls on a path.
    Path: Truncate = "truncate", Rename = "rename", Renameat = "renameat", Renameat2 = "renameat2", Unlink = "unlink", Unlinkat = "unlinkat", Mkdir = "mkdir", Mkdirat = "mkdirat", Rmdir = "rmdir", Link = "link", Linkat = "linkat", Symlink = "symlink", Symlinkat = "symlinkat", Utimensat = "utimensat", Chmod = "chmod", Fchmodat = "fchmodat", Chown = "chown", Lchown = "lchown", Fchownat = "fchownat", Setxattr = "setxattr", Lsetxattr = "lsetxattr", Getxattr = "getxattr", Lgetxattr = "lgetxattr", Listxattr = "listxattr", Llistxattr = "llistxattr", Removexattr = "removexattr", Lremovexattr = "lremovexattr", Readlink = "readlink", Readlinkat = "readlinkat", Access = "access", Faccessat = "faccessat", Faccessat2 = "faccessat2", Statfs = "statfs";
    /// The stats of a path.
    Stat: Stat = "stat", Lstat = "lstat", Newfstatat = "newfstatat", Statx = "statx";
    /// Ptrace (fails under trace).
    Ptrace: Ptrace = "ptrace";
}

/// What a traced call's arguments point to that tracing must read, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pointee {
    Nothing,
    /// A path: the NUL-terminated string at argument N.
    Path(usize),
    /// An iovec array at argument N, its count at argument N+1.
    Iovecs(usize),
    /// A struct msghdr at argument N (and the iovec array it points to).
    Msghdr(usize),
    /// io_uring_setup's struct io_uring_params (120 bytes) at argument N.
    UringParams(usize),
}

impl Syscall {
    /// The argument that holds the path the call names (for a rename or a link, the
    /// existing one), if it names one.
    pub fn path_arg(self) -> Option<usize> {
        use Syscall::*;
        match self.family() {
            Family::Open => Some(if matches!(self, Open | Creat) { 0 } else { 1 }),
            Family::Stat => Some(if matches!(self, Stat | Lstat) { 0 } else { 1 }),
            Family::Path => Some(match self {
                Symlink => 1,
                Symlinkat => 2,
                Renameat | Renameat2 | Unlinkat | Mkdirat | Linkat | Utimensat | Fchmodat
                | Fchownat | Readlinkat | Faccessat | Faccessat2 => 1,
                _ => 0,
            }),
            _ => None,
        }
    }

    /// The memory behind the call's arguments that its profile reads.
    pub fn pointee(self) -> Pointee {
        if let Some(n) = self.path_arg() {
            return Pointee::Path(n);
        }
        match self {
            s if s.is_vectored() => Pointee::Iovecs(1),
            Syscall::Vmsplice => Pointee::Iovecs(1),
            Syscall::Sendmsg | Syscall::Recvmsg => Pointee::Msghdr(1),
            Syscall::IoUringSetup => Pointee::UringParams(1),
            _ => Pointee::Nothing,
        }
    }

    /// A read: `read`, `pread64` and their vectored forms.
    pub fn is_read(self) -> bool {
        matches!(
            self,
            Syscall::Read | Syscall::Pread64 | Syscall::Readv | Syscall::Preadv | Syscall::Preadv2
        )
    }

    /// Positioned (an offset argument): the `p…` forms.
    pub fn is_positioned(self) -> bool {
        matches!(
            self,
            Syscall::Pread64
                | Syscall::Pwrite64
                | Syscall::Preadv
                | Syscall::Pwritev
                | Syscall::Preadv2
                | Syscall::Pwritev2
        )
    }

    /// Vectored (an iovec array): the `…v` forms.
    pub fn is_vectored(self) -> bool {
        matches!(
            self,
            Syscall::Readv
                | Syscall::Writev
                | Syscall::Preadv
                | Syscall::Pwritev
                | Syscall::Preadv2
                | Syscall::Pwritev2
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Named;

    #[test]
    fn the_data_calls_properties_match_their_names() {
        for &s in Syscall::ALL {
            let n = s.name();
            let data = s.is_read()
                || matches!(
                    s,
                    Syscall::Write
                        | Syscall::Pwrite64
                        | Syscall::Writev
                        | Syscall::Pwritev
                        | Syscall::Pwritev2
                );
            if data {
                assert_eq!(s.is_read(), n.contains("read"), "{n}");
                assert_eq!(s.is_positioned(), n.starts_with('p'), "{n}");
                assert_eq!(s.is_vectored(), n.contains('v'), "{n}");
            }
        }
    }
}
