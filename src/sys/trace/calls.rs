//! The system calls `ioprobe trace` counts, one row each in [`calls!`]: the tracers
//! turn each call's number into a [`Syscall`] (their Linux names, as strace prints
//! them) once, and each call belongs to one [`Family`], so everything above `sys`
//! matches on variants, never on numbers or strings. The ptrace tracer's seccomp
//! filter, the eBPF tracer's map of wanted numbers and the preload library's wrappers
//! all come from this table (a test checks the library against it).

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

/// Declares the traced calls, one row each (the model of strace's `syscallent.h`):
/// variant = name, the `libc::SYS_…` constant of its number on Linux, its family, and
/// flags: `only "ARCH"` (the number exists on that architecture alone) and `+preload`
/// (the preload library wraps it: `preload/preload.c` makes it through the gate and
/// records it in the ring). What its arguments point to follows from the family
/// ([`Syscall::pointee`]); the eBPF tracer captures every row and that memory.
/// A call cannot be added without a name, a number and a family.
/// A row's flag, known by its token (a flag the table does not know fails to compile).
macro_rules! flag {
    (preload) => {
        true
    };
}

macro_rules! calls {
    ($($variant:ident = $name:literal $nr:ident $family:ident $(only $arch:literal)? $(+ $flag:ident)?;)+) => {
        named_enum! {
            /// A traced system call, by its Linux name. Names are a contract (trace's
            /// JSON `counts`).
            pub enum Syscall as "system call" {
                $($variant = $name,)+
            }
        }

        impl Syscall {
            /// The family the call belongs to.
            pub fn family(self) -> Family {
                match self {
                    $(Syscall::$variant => Family::$family,)+
                }
            }

            /// Its number on this system (Linux; None where this architecture lacks
            /// it, or on another OS).
            #[allow(unreachable_patterns)]
            pub fn number(self) -> Option<u64> {
                #[cfg(target_os = "linux")]
                match self {
                    $($(#[cfg(target_arch = $arch)])? Syscall::$variant => return Some(libc::$nr as u64),)+
                    _ => {}
                }
                None
            }

            /// The preload library wraps it.
            pub fn preload_wraps(self) -> bool {
                match self {
                    $(Syscall::$variant => false $(|| flag!($flag))?,)+
                }
            }
        }
    };
}

calls! {
    // variant     = name               number                 family     flags
    Read           = "read"             SYS_read               Data       +preload;
    Write          = "write"            SYS_write              Data       +preload;
    Pread64        = "pread64"          SYS_pread64            Data       +preload;
    Pwrite64       = "pwrite64"         SYS_pwrite64           Data       +preload;
    Readv          = "readv"            SYS_readv              Data      ;
    Writev         = "writev"           SYS_writev             Data      ;
    Preadv         = "preadv"           SYS_preadv             Data      ;
    Pwritev        = "pwritev"          SYS_pwritev            Data      ;
    Preadv2        = "preadv2"          SYS_preadv2            Data      ;
    Pwritev2       = "pwritev2"         SYS_pwritev2           Data      ;
    Lseek          = "lseek"            SYS_lseek              Lseek      +preload;
    Open           = "open"             SYS_open               Open       only "x86_64";
    Openat         = "openat"           SYS_openat             Open       +preload;
    Openat2        = "openat2"          SYS_openat2            Open      ;
    Creat          = "creat"            SYS_creat              Open       only "x86_64";
    Close          = "close"            SYS_close              Close      +preload;
    Dup            = "dup"              SYS_dup                Dup       ;
    Dup2           = "dup2"             SYS_dup2               Dup        only "x86_64";
    Dup3           = "dup3"             SYS_dup3               Dup       ;
    Fsync          = "fsync"            SYS_fsync              Sync      ;
    Fdatasync      = "fdatasync"        SYS_fdatasync          Sync      ;
    SyncFileRange  = "sync_file_range"  SYS_sync_file_range    Sync      ;
    Sendfile       = "sendfile"         SYS_sendfile           Copy      ;
    Splice         = "splice"           SYS_splice             Copy      ;
    Tee            = "tee"              SYS_tee                Copy      ;
    CopyFileRange  = "copy_file_range"  SYS_copy_file_range    Copy      ;
    Vmsplice       = "vmsplice"         SYS_vmsplice           Copy      ;
    Mmap           = "mmap"             SYS_mmap               Mmap      ;
    IoUringSetup   = "io_uring_setup"   SYS_io_uring_setup     UringSetup;
    Munmap         = "munmap"           SYS_munmap             Mapping   ;
    Msync          = "msync"            SYS_msync              Mapping   ;
    Madvise        = "madvise"          SYS_madvise            Mapping   ;
    Fcntl          = "fcntl"            SYS_fcntl              Fcntl     ;
    Fstat          = "fstat"            SYS_fstat              OnFd      ;
    Getdents64     = "getdents64"       SYS_getdents64         OnFd      ;
    IoUringEnter   = "io_uring_enter"   SYS_io_uring_enter     OnFd      ;
    Fadvise64      = "fadvise64"        SYS_fadvise64          OnFd      ;
    Readahead      = "readahead"        SYS_readahead          OnFd      ;
    Fallocate      = "fallocate"        SYS_fallocate          OnFd      ;
    Ftruncate      = "ftruncate"        SYS_ftruncate          OnFd      ;
    Syncfs         = "syncfs"           SYS_syncfs             OnFd      ;
    Ioctl          = "ioctl"            SYS_ioctl              OnFd      ;
    Flock          = "flock"            SYS_flock              OnFd      ;
    Fchmod         = "fchmod"           SYS_fchmod             OnFd      ;
    Fchown         = "fchown"           SYS_fchown             OnFd      ;
    Fsetxattr      = "fsetxattr"        SYS_fsetxattr          OnFd      ;
    Fgetxattr      = "fgetxattr"        SYS_fgetxattr          OnFd      ;
    Flistxattr     = "flistxattr"       SYS_flistxattr         OnFd      ;
    Fremovexattr   = "fremovexattr"     SYS_fremovexattr       OnFd      ;
    Fstatfs        = "fstatfs"          SYS_fstatfs            OnFd      ;
    Setsockopt     = "setsockopt"       SYS_setsockopt         OnFd      ;
    Sendto         = "sendto"           SYS_sendto             Socket    ;
    Recvfrom       = "recvfrom"         SYS_recvfrom           Socket    ;
    Sendmsg        = "sendmsg"          SYS_sendmsg            Socket    ;
    Recvmsg        = "recvmsg"          SYS_recvmsg            Socket    ;
    Sendmmsg       = "sendmmsg"         SYS_sendmmsg           Socket    ;
    Recvmmsg       = "recvmmsg"         SYS_recvmmsg           Socket    ;
    IoSubmit       = "io_submit"        SYS_io_submit          AioSubmit ;
    IoGetevents    = "io_getevents"     SYS_io_getevents       Context   ;
    Sync           = "sync"             SYS_sync               Context   ;
    Truncate       = "truncate"         SYS_truncate           Path      ;
    Rename         = "rename"           SYS_rename             Path       only "x86_64";
    Renameat       = "renameat"         SYS_renameat           Path      ;
    Renameat2      = "renameat2"        SYS_renameat2          Path      ;
    Unlink         = "unlink"           SYS_unlink             Path       only "x86_64";
    Unlinkat       = "unlinkat"         SYS_unlinkat           Path      ;
    Mkdir          = "mkdir"            SYS_mkdir              Path       only "x86_64";
    Mkdirat        = "mkdirat"          SYS_mkdirat            Path      ;
    Rmdir          = "rmdir"            SYS_rmdir              Path       only "x86_64";
    Link           = "link"             SYS_link               Path       only "x86_64";
    Linkat         = "linkat"           SYS_linkat             Path      ;
    Symlink        = "symlink"          SYS_symlink            Path       only "x86_64";
    Symlinkat      = "symlinkat"        SYS_symlinkat          Path      ;
    Utimensat      = "utimensat"        SYS_utimensat          Path      ;
    Chmod          = "chmod"            SYS_chmod              Path       only "x86_64";
    Fchmodat       = "fchmodat"         SYS_fchmodat           Path      ;
    Chown          = "chown"            SYS_chown              Path       only "x86_64";
    Lchown         = "lchown"           SYS_lchown             Path       only "x86_64";
    Fchownat       = "fchownat"         SYS_fchownat           Path      ;
    Setxattr       = "setxattr"         SYS_setxattr           Path      ;
    Lsetxattr      = "lsetxattr"        SYS_lsetxattr          Path      ;
    Getxattr       = "getxattr"         SYS_getxattr           Path      ;
    Lgetxattr      = "lgetxattr"        SYS_lgetxattr          Path      ;
    Listxattr      = "listxattr"        SYS_listxattr          Path      ;
    Llistxattr     = "llistxattr"       SYS_llistxattr         Path      ;
    Removexattr    = "removexattr"      SYS_removexattr        Path      ;
    Lremovexattr   = "lremovexattr"     SYS_lremovexattr       Path      ;
    Readlink       = "readlink"         SYS_readlink           Path       only "x86_64";
    Readlinkat     = "readlinkat"       SYS_readlinkat         Path      ;
    Access         = "access"           SYS_access             Path       only "x86_64";
    Faccessat      = "faccessat"        SYS_faccessat          Path      ;
    Faccessat2     = "faccessat2"       SYS_faccessat2         Path      ;
    Statfs         = "statfs"           SYS_statfs             Path      ;
    Stat           = "stat"             SYS_stat               Stat       only "x86_64";
    Lstat          = "lstat"            SYS_lstat              Stat       only "x86_64";
    Newfstatat     = "newfstatat"       SYS_newfstatat         Stat       +preload;
    Statx          = "statx"            SYS_statx              Stat      ;
    Ptrace         = "ptrace"           SYS_ptrace             Ptrace    ;
}

/// The traced calls this system has: (number, call), the table's order.
pub fn traced() -> Vec<(u64, Syscall)> {
    use crate::names::Named;
    Syscall::ALL
        .iter()
        .filter_map(|&s| s.number().map(|n| (n, s)))
        .collect()
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

    /// Whether the call moves data from its descriptor (true) or to it (false); None
    /// where it moves none it says, or sizes it cannot tell (the mmsg calls).
    pub fn direction(self) -> Option<bool> {
        match self {
            s if s.family() == Family::Data => Some(s.is_read()),
            Syscall::Recvfrom | Syscall::Recvmsg => Some(true),
            Syscall::Sendto | Syscall::Sendmsg => Some(false),
            _ => None,
        }
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

    /// The kernel's own numbers, from the UAPI header the C library was built
    /// against (`asm/unistd_64.h`): every row's number is the one the kernel gives its
    /// name, and no two rows share one.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn each_rows_number_is_the_kernels_for_its_name() {
        let header = [
            "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
            "/usr/include/asm/unistd_64.h",
        ]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .expect("the kernel's UAPI header asm/unistd_64.h (linux-libc-dev)");
        let kernel: std::collections::HashMap<&str, u64> = header
            .lines()
            .filter_map(|l| {
                let mut w = l.strip_prefix("#define __NR_")?.split_whitespace();
                Some((w.next()?, w.next()?.parse().ok()?))
            })
            .collect();
        let rows = traced();
        assert_eq!(
            rows.len(),
            Syscall::ALL.len(),
            "every call has a number on x86_64"
        );
        let mut seen = std::collections::HashSet::new();
        for (nr, s) in rows {
            assert_eq!(kernel.get(s.name()), Some(&nr), "{}", s.name());
            assert!(seen.insert(nr), "{} shares its number", s.name());
        }
    }

    /// The preload library wraps exactly the rows flagged `preload`: each wrapper
    /// makes its call as `call(s, SYS_name, …)` (fstatat through SYS_STATAT).
    #[test]
    fn the_preload_library_wraps_the_rows_flagged_preload() {
        let c = include_str!("preload/preload.c");
        let mut wrapped: Vec<String> = c
            .match_indices("call(s, SYS_")
            .map(|(i, _)| {
                let rest = &c[i + "call(s, SYS_".len()..];
                rest[..rest.find(',').unwrap_or(0)].to_string()
            })
            .map(|n| {
                if n == "STATAT" {
                    "newfstatat".into()
                } else {
                    n
                }
            })
            .collect();
        wrapped.sort();
        let mut flagged: Vec<String> = Syscall::ALL
            .iter()
            .filter(|s| s.preload_wraps())
            .map(|s| s.name().to_string())
            .collect();
        flagged.sort();
        assert_eq!(wrapped, flagged);
    }
}
