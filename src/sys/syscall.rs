//! The system calls `ioprobe trace` stops at, decoded once: the tracer turns each
//! call's number into a [`Syscall`] (their Linux names, as strace prints them), so
//! everything above `sys` matches on variants, never on numbers or strings.

use crate::names::named_enum;

named_enum! {
    /// A traced system call, by its Linux name. Names are a contract (trace's JSON
    /// `counts`).
    pub enum Syscall as "system call" {
        Read = "read",
        Write = "write",
        Pread64 = "pread64",
        Pwrite64 = "pwrite64",
        Readv = "readv",
        Writev = "writev",
        Preadv = "preadv",
        Pwritev = "pwritev",
        Preadv2 = "preadv2",
        Pwritev2 = "pwritev2",
        Lseek = "lseek",
        Openat = "openat",
        Openat2 = "openat2",
        Close = "close",
        Fsync = "fsync",
        Fdatasync = "fdatasync",
        SyncFileRange = "sync_file_range",
        Sendfile = "sendfile",
        Splice = "splice",
        Tee = "tee",
        Vmsplice = "vmsplice",
        CopyFileRange = "copy_file_range",
        Mmap = "mmap",
        Munmap = "munmap",
        Msync = "msync",
        Madvise = "madvise",
        Fstat = "fstat",
        Newfstatat = "newfstatat",
        Statx = "statx",
        Getdents64 = "getdents64",
        IoUringEnter = "io_uring_enter",
        IoUringSetup = "io_uring_setup",
        Dup = "dup",
        Dup3 = "dup3",
        Fcntl = "fcntl",
        Sendto = "sendto",
        Recvfrom = "recvfrom",
        Sendmsg = "sendmsg",
        Recvmsg = "recvmsg",
        Sendmmsg = "sendmmsg",
        Recvmmsg = "recvmmsg",
        IoSubmit = "io_submit",
        IoGetevents = "io_getevents",
        Fadvise64 = "fadvise64",
        Readahead = "readahead",
        Fallocate = "fallocate",
        Ftruncate = "ftruncate",
        Truncate = "truncate",
        Sync = "sync",
        Syncfs = "syncfs",
        Ioctl = "ioctl",
        Flock = "flock",
        Renameat = "renameat",
        Renameat2 = "renameat2",
        Unlinkat = "unlinkat",
        Mkdirat = "mkdirat",
        Linkat = "linkat",
        Symlinkat = "symlinkat",
        Utimensat = "utimensat",
        Fchmod = "fchmod",
        Fchmodat = "fchmodat",
        Fchown = "fchown",
        Fchownat = "fchownat",
        Setxattr = "setxattr",
        Lsetxattr = "lsetxattr",
        Fsetxattr = "fsetxattr",
        Getxattr = "getxattr",
        Lgetxattr = "lgetxattr",
        Fgetxattr = "fgetxattr",
        Listxattr = "listxattr",
        Llistxattr = "llistxattr",
        Flistxattr = "flistxattr",
        Removexattr = "removexattr",
        Lremovexattr = "lremovexattr",
        Fremovexattr = "fremovexattr",
        Readlinkat = "readlinkat",
        Faccessat = "faccessat",
        Faccessat2 = "faccessat2",
        Statfs = "statfs",
        Fstatfs = "fstatfs",
        Ptrace = "ptrace",
        Open = "open",
        Creat = "creat",
        Stat = "stat",
        Lstat = "lstat",
        Dup2 = "dup2",
        Rename = "rename",
        Unlink = "unlink",
        Mkdir = "mkdir",
        Rmdir = "rmdir",
        Link = "link",
        Symlink = "symlink",
        Chmod = "chmod",
        Chown = "chown",
        Lchown = "lchown",
        Readlink = "readlink",
        Access = "access",
    }
}

impl Syscall {
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
