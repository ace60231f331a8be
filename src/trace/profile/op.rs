//! The operations a profile's rows are kept under: a traced system call, or a request
//! submitted through io_uring or AIO; what each moves, and its name.

use crate::names::Named;
use crate::sys::trace::calls::Syscall;
use serde::Serialize;

/// An operation on a target: a traced system call, an io_uring request (read from the
/// program's submission ring) or an AIO request (from the iocbs io_submit passed).
/// Ordered by name, as the rows are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Call(Syscall),
    /// fcntl(F_SETPIPE_SZ): its own row, where pricing reads a pipe's size.
    SetPipeSize,
    Uring(UringOp),
    Aio(AioOp),
}

/// An AIO request's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AioOp {
    Pread,
    Pwrite,
    Preadv,
    Pwritev,
    Fsync,
    Fdsync,
    Other,
}

/// An io_uring request's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UringOp {
    Read,
    Readv,
    Write,
    Writev,
    Fsync,
    Sendmsg,
    Recvmsg,
    Send,
    Recv,
    Other,
}

impl Op {
    /// The name rows, counts and JSON show: the call's, or "uring read"….
    pub fn name(self) -> &'static str {
        match self {
            Op::Call(s) => s.name(),
            Op::SetPipeSize => "fcntl(F_SETPIPE_SZ)",
            Op::Uring(u) => match u {
                UringOp::Read => "uring read",
                UringOp::Readv => "uring readv",
                UringOp::Write => "uring write",
                UringOp::Writev => "uring writev",
                UringOp::Fsync => "uring fsync",
                UringOp::Sendmsg => "uring sendmsg",
                UringOp::Recvmsg => "uring recvmsg",
                UringOp::Send => "uring send",
                UringOp::Recv => "uring recv",
                UringOp::Other => "uring other",
            },
            Op::Aio(a) => match a {
                AioOp::Pread => "aio pread",
                AioOp::Pwrite => "aio pwrite",
                AioOp::Preadv => "aio preadv",
                AioOp::Pwritev => "aio pwritev",
                AioOp::Fsync => "aio fsync",
                AioOp::Fdsync => "aio fdsync",
                AioOp::Other => "aio other",
            },
        }
    }

    /// Whether it moves data from the target (true) or to it (false), priced along a
    /// throughput curve; None: not data, or sizes that cannot be told.
    pub fn direction(self) -> Option<bool> {
        match self {
            Op::Call(s) => s.direction(),
            Op::Uring(UringOp::Read | UringOp::Readv) => Some(true),
            Op::Uring(UringOp::Write | UringOp::Writev) => Some(false),
            // As before: AIO and io_uring's socket requests at a null call each.
            Op::SetPipeSize | Op::Uring(_) | Op::Aio(_) => None,
        }
    }

    /// The system call it is (None: a request submitted through a ring or iocbs).
    pub fn call(self) -> Option<Syscall> {
        match self {
            Op::Call(s) => Some(s),
            Op::SetPipeSize => Some(Syscall::Fcntl),
            Op::Uring(_) | Op::Aio(_) => None,
        }
    }
}

impl Op {
    /// The first operation in the rows' order (by name): where one (process, target)'s
    /// rows start.
    pub fn first() -> Op {
        static FIRST: std::sync::LazyLock<Op> =
            std::sync::LazyLock::new(|| Op::all().min().unwrap_or(Op::SetPipeSize));
        *FIRST
    }
}

#[cfg(test)]
impl Op {
    /// The operation named `name` (tests write rows by name).
    pub fn named(name: &str) -> Op {
        Op::all()
            .find(|o| o.name() == name)
            .unwrap_or_else(|| panic!("no operation {name}"))
    }
}

/// io_uring's and AIO's operations, in a fixed order (the rank table's).
const URING: [UringOp; 10] = [
    UringOp::Read,
    UringOp::Readv,
    UringOp::Write,
    UringOp::Writev,
    UringOp::Fsync,
    UringOp::Sendmsg,
    UringOp::Recvmsg,
    UringOp::Send,
    UringOp::Recv,
    UringOp::Other,
];
const AIO: [AioOp; 7] = [
    AioOp::Pread,
    AioOp::Pwrite,
    AioOp::Preadv,
    AioOp::Pwritev,
    AioOp::Fsync,
    AioOp::Fdsync,
    AioOp::Other,
];

impl Op {
    /// Every operation, each once: its place here is its index.
    fn all() -> impl Iterator<Item = Op> {
        Syscall::ALL
            .iter()
            .map(|&s| Op::Call(s))
            .chain([Op::SetPipeSize])
            .chain(URING.map(Op::Uring))
            .chain(AIO.map(Op::Aio))
    }

    /// Its place in [`Op::all`].
    fn index(self) -> usize {
        let calls = Syscall::ALL.len();
        match self {
            Op::Call(s) => s as usize,
            Op::SetPipeSize => calls,
            Op::Uring(u) => calls + 1 + u as usize,
            Op::Aio(a) => calls + 1 + URING.len() + a as usize,
        }
    }

    /// Its rank in name order, looked up (a row's key is compared at every call: by
    /// name, that was a twentieth of an attach's profile time).
    fn rank(self) -> u16 {
        static RANKS: std::sync::LazyLock<Vec<u16>> = std::sync::LazyLock::new(|| {
            let mut ops: Vec<Op> = Op::all().collect();
            ops.sort_by_key(|o| o.name());
            let mut ranks = vec![0u16; ops.len()];
            for (r, o) in ops.iter().enumerate() {
                ranks[o.index()] = r as u16;
            }
            ranks
        });
        RANKS.get(self.index()).copied().unwrap_or(u16::MAX)
    }
}

impl Ord for Op {
    fn cmp(&self, other: &Op) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl PartialOrd for Op {
    fn partial_cmp(&self, other: &Op) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_ordered_by_name_and_the_first_is_the_least() {
        let mut ops: Vec<Op> = Op::all().collect();
        ops.sort();
        let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(Op::first(), ops[0]);
        assert_eq!(Op::named("fcntl(F_SETPIPE_SZ)"), Op::SetPipeSize);
        assert_eq!(Op::named("uring read").direction(), Some(true));
        assert_eq!(Op::named("pwritev2").direction(), Some(false));
        assert_eq!(Op::named("aio pread").direction(), None);
        assert_eq!(Op::named("sendmmsg").direction(), None);
    }
}
