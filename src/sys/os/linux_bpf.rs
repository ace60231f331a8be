//! `ioprobe trace` through eBPF: the command runs untraced by ptrace (no stop, no
//! seccomp filter, its privileges kept), while four small BPF programs, assembled here
//! and loaded with bpf(2) (no compiler, no BPF toolchain), watch it from the kernel:
//!
//! - `sys_exit` (raw tracepoint): for a task of the traced tree and a traced call, one
//!   record goes to a ring buffer: the call's number and arguments (still in the saved
//!   user registers at exit), its result, and the memory its profile reads (its path,
//!   iovec array, msghdr or io_uring parameters), copied there and then;
//! - `sched_process_fork`, `sched_process_exec`, `sched_process_exit`: the traced tree
//!   is a map in the kernel, so a new task is traced from its first call (the command
//!   itself from its exec: until then it is ioprobe's child waiting on a pipe).
//!
//! ioprobe reads the ring every few milliseconds, or when a program starts or the ring
//! is half full, so the command's calls cost it one map lookup, one read of its saved
//! registers and a record each. A record the ring had no room for is counted
//! ([`Tracer::lost`]) and said, never silently dropped. Needs root (or CAP_BPF with
//! CAP_PERFMON) and BTF (`/sys/kernel/btf/vmlinux`) for three offsets (`task_struct`'s
//! `pid` and `tgid`, `linux_binprm`'s `buf`).

use super::{
    Child, Ended, Event, Maker, Memory, PASSED, Seen, c_args, child_error, made, makers, os,
};
use crate::sys::syscall::{Pointee, Syscall};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The `tasks` map's values: a task of the traced tree, and the command's process
/// before its exec.
const TRACED: i32 = 1;
const WAITING: i32 = 2;
/// A task running a 32-bit program: its calls are numbered differently, so they are
/// not recorded (the report says so), but its children are followed.
const COMPAT: i32 = 3;
/// Record kinds.
const KIND_CALL: i32 = 1;
const KIND_TASK: i32 = 2;
const KIND_EXEC: i32 = 3;
const KIND_EXIT: i32 = 4;
/// A record without memory, and one with: header (80 bytes), 512 bytes of memory
/// (a path, or iovecs), a 56-byte msghdr.
const SMALL: i32 = 80;
const DATA: i16 = 80;
const DATA_LEN: i32 = 512;
const MSG: i16 = 592;
const BIG: i32 = 648;
/// The ring buffer's size: 95,000 calls of 88-byte records, 12,700 with a path. The
/// reader thread empties it every [`READ_EVERY_MS`], and a record that finds it half
/// full wakes it at once; room for a burst while a loaded machine leaves the reader
/// without a CPU.
const RING: u32 = 8 << 20;
/// Tasks of the traced tree alive at once, and calls in flight.
const TASKS: u32 = 16384;
/// Syscall numbers looked up (both architectures number theirs below 512).
const NUMBERS: u32 = 512;
/// How often the ring is read while the command runs.
const READ_EVERY_MS: i32 = 4;

/// The `wanted` value of a descriptor maker: its fds (two ints) copied from
/// argument N, or nothing.
fn maker_value(m: Maker) -> u32 {
    match m {
        Maker::Pair(n, _) => 1 | (5 << 1) | ((n as u32) << 4),
        _ => 1,
    }
}

/// The `wanted` map's value for a traced call: bit 0, then the kind of memory to
/// copy (bits 1-3) and its argument (bits 4-6).
fn wanted_value(p: Pointee) -> u32 {
    let (kind, arg) = match p {
        Pointee::Nothing => (0, 0),
        Pointee::Path(n) => (1, n),
        Pointee::Iovecs(n) => (2, n),
        Pointee::Msghdr(n) => (3, n),
        Pointee::UringParams(n) => (4, n),
    };
    1 | (kind << 1) | ((arg as u32) << 4)
}

// ---------------------------------------------------------------------------------
// A BPF assembler: the few instructions the programs use, with labels.

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;
const R3: u8 = 3;
const R4: u8 = 4;
const R6: u8 = 6;
const R7: u8 = 7;
const R8: u8 = 8;
const R9: u8 = 9;
const FP: u8 = 10;

const W: u8 = 0x00;
const H: u8 = 0x08;
const B: u8 = 0x10;
const DW: u8 = 0x18;

const JEQ: u8 = 0x10;
const JGT: u8 = 0x20;
const JNE: u8 = 0x50;
const JSGT: u8 = 0x60;
const JLE: u8 = 0xb0;

const ADD: u8 = 0x00;
const AND: u8 = 0x50;
const LSH: u8 = 0x60;
const RSH: u8 = 0x70;

/// Helper functions (their numbers in `enum bpf_func_id`).
const LOOKUP: i32 = 1;
const UPDATE: i32 = 2;
const DELETE: i32 = 3;
const PID_TGID: i32 = 14;
const COMM: i32 = 16;
const READ_USER: i32 = 112;
const READ_KERNEL: i32 = 113;
const READ_USER_STR: i32 = 114;
const RESERVE: i32 = 131;
const SUBMIT: i32 = 132;
const QUERY: i32 = 134;
/// bpf_ringbuf_query's flag: the bytes not yet read.
const AVAIL_DATA: i32 = 0;
/// bpf_ringbuf_submit's flags: wake no reader (calls: ioprobe reads on its own
/// clock), or wake it now (a new task or program, whose descriptors and working
/// directory ioprobe looks at while they are still there).
const NO_WAKEUP: i32 = 1;
const WAKE_NOW: i32 = 2;

#[derive(Default)]
struct Asm {
    code: Vec<Insn>,
    labels: HashMap<String, usize>,
    jumps: Vec<(usize, String)>,
}

impl Asm {
    fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.code.push(Insn {
            code,
            regs: dst | (src << 4),
            off,
            imm,
        });
    }
    fn mov(&mut self, dst: u8, src: u8) {
        self.op(0x07 | 0xb0 | 0x08, dst, src, 0, 0);
    }
    fn movi(&mut self, dst: u8, imm: i32) {
        self.op(0x07 | 0xb0, dst, 0, 0, imm);
    }
    fn alui(&mut self, op: u8, dst: u8, imm: i32) {
        self.op(0x07 | op, dst, 0, 0, imm);
    }
    /// dst = *(size *)(src + off)
    fn ldx(&mut self, size: u8, dst: u8, src: u8, off: i16) {
        self.op(0x01 | 0x60 | size, dst, src, off, 0);
    }
    /// *(size *)(dst + off) = src
    fn stx(&mut self, size: u8, dst: u8, off: i16, src: u8) {
        self.op(0x03 | 0x60 | size, dst, src, off, 0);
    }
    /// *(size *)(dst + off) = imm
    fn st(&mut self, size: u8, dst: u8, off: i16, imm: i32) {
        self.op(0x02 | 0x60 | size, dst, 0, off, imm);
    }
    /// dst = the map `fd` (a 16-byte instruction).
    fn map(&mut self, dst: u8, fd: i32) {
        self.op(0x18, dst, 1, 0, fd);
        self.op(0, 0, 0, 0, 0);
    }
    /// dst = fp + off (a pointer to the stack).
    fn stack(&mut self, dst: u8, off: i32) {
        self.mov(dst, FP);
        self.alui(ADD, dst, off);
    }
    fn call(&mut self, helper: i32) {
        self.op(0x05 | 0x80, 0, 0, 0, helper);
    }
    fn exit(&mut self) {
        self.op(0x05 | 0x90, 0, 0, 0, 0);
    }
    fn jmpi(&mut self, op: u8, dst: u8, imm: i32, to: &str) {
        self.jumps.push((self.code.len(), to.to_string()));
        self.op(0x05 | op, dst, 0, 0, imm);
    }
    fn jmp(&mut self, op: u8, dst: u8, src: u8, to: &str) {
        self.jumps.push((self.code.len(), to.to_string()));
        self.op(0x05 | op | 0x08, dst, src, 0, 0);
    }
    fn ja(&mut self, to: &str) {
        self.jumps.push((self.code.len(), to.to_string()));
        self.op(0x05, 0, 0, 0, 0);
    }
    fn label(&mut self, name: &str) {
        self.labels.insert(name.to_string(), self.code.len());
    }
    /// `return 0` at `out`, and at `lost` the lost counter's increment, then `then`.
    fn epilogue(&mut self, maps: &Maps, then: &str) {
        self.label("out");
        self.movi(R0, 0);
        self.exit();
        self.label("lost");
        self.st(W, FP, -8, 0);
        self.map(R1, maps.lost.as_raw_fd());
        self.stack(R2, -8);
        self.call(LOOKUP);
        self.jmpi(JEQ, R0, 0, then);
        self.movi(R1, 1);
        // lock *(u64 *)(r0 + 0) += r1
        self.op(0x03 | 0xc0 | DW, R0, R1, 0, 0);
        self.ja(then);
    }
    fn finish(mut self) -> Vec<Insn> {
        for (at, to) in std::mem::take(&mut self.jumps) {
            let target = self.labels[&to];
            self.code[at].off = (target as i64 - at as i64 - 1) as i16;
        }
        self.code
    }
}

// ---------------------------------------------------------------------------------
// The programs.

/// Where a call's number and six arguments sit in `struct pt_regs` at sys_exit (the
/// saved user registers; only the return register has changed): the window read
/// (offset, length), each argument's offset in it, the number's (and whether it is
/// 32 bits wide).
struct Regs {
    base: i32,
    len: i32,
    args: [i16; 6],
    nr: i16,
    nr32: bool,
}
#[cfg(target_arch = "x86_64")]
const REGS: Regs = Regs {
    // r10 r9 r8 ax cx dx si di orig_ax, from offset 56
    base: 56,
    len: 72,
    args: [56, 48, 40, 0, 16, 8],
    nr: 64,
    nr32: false,
};
#[cfg(target_arch = "aarch64")]
const REGS: Regs = Regs {
    // regs[31] sp pc pstate orig_x0 syscallno: x0 holds the result, orig_x0 the first
    // argument.
    base: 0,
    len: 288,
    args: [272, 8, 16, 24, 32, 40],
    nr: 280,
    nr32: true,
};

/// Stack slots.
const KEY: i16 = -4;
const AUX: i16 = -8;
const RET: i16 = -16;
const PTR: i16 = -24;
const COUNT: i16 = -32;
const WINDOW: i16 = -40 - REGS.len as i16;

/// Looks the current task up in `tasks`; when it is not there (or, with `traced`,
/// not there as [`TRACED`]), to `out`. Leaves pid_tgid in r9 and its state in r8.
fn if_traced(a: &mut Asm, maps: &Maps, traced: bool) {
    a.call(PID_TGID);
    a.mov(R9, R0);
    a.stx(W, FP, KEY, R0);
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, "out");
    a.ldx(W, R8, R0, 0);
    if traced {
        a.jmpi(JNE, R8, TRACED, "out");
    }
}

/// Fills a call record's header at r6: the number in r7, pid_tgid in r9, the
/// arguments from the register window and the result on the stack.
fn call_header(a: &mut Asm) {
    a.st(W, R6, 0, KIND_CALL);
    a.stx(W, R6, 4, R9);
    a.mov(R1, R9);
    a.alui(RSH, R1, 32);
    a.stx(W, R6, 8, R1);
    a.st(W, R6, 12, 0);
    a.stx(DW, R6, 16, R7);
    for (i, off) in REGS.args.iter().enumerate() {
        a.ldx(DW, R1, FP, WINDOW + off);
        a.stx(DW, R6, 24 + 8 * i as i16, R1);
    }
    a.ldx(DW, R1, FP, RET);
    a.stx(DW, R6, 72, R1);
}

/// r2 = min(r2, 32) * 16: the bytes of at most 32 iovecs; to `done` when none.
fn iovec_bytes(a: &mut Asm, tag: &str, done: &str) {
    a.jmpi(JLE, R2, 32, tag);
    a.movi(R2, 32);
    a.label(tag);
    a.alui(LSH, R2, 4);
    a.jmpi(JEQ, R2, 0, done);
}

/// bpf_probe_read_user into the record at r6 + `to`: `len` bytes (None: the count
/// already in r2) from the address at `from` (register, offset).
fn read_user(a: &mut Asm, to: i16, len: Option<i32>, from: (u8, i16)) {
    a.mov(R1, R6);
    a.alui(ADD, R1, to as i32);
    if let Some(n) = len {
        a.movi(R2, n);
    }
    a.ldx(DW, R3, from.0, from.1);
    a.call(READ_USER);
}

/// The memory a call record carries (the record at r6, its `wanted` value in r8).
fn copy_memory(a: &mut Asm) {
    // The argument it names, and the next one (a count), onto the stack.
    for k in 0..6i16 {
        a.mov(R2, R8);
        a.alui(RSH, R2, 4);
        a.alui(AND, R2, 7);
        a.jmpi(JNE, R2, k as i32, &format!("arg{}", k + 1));
        a.ldx(DW, R3, R6, 24 + 8 * k);
        a.stx(DW, FP, PTR, R3);
        a.ldx(DW, R3, R6, 24 + 8 * (k + 1).min(5));
        a.stx(DW, FP, COUNT, R3);
        a.ja("kind");
        a.label(&format!("arg{}", k + 1));
    }
    a.ja("done");
    a.label("kind");
    a.mov(R1, R8);
    a.alui(RSH, R1, 1);
    a.alui(AND, R1, 7);
    a.jmpi(JEQ, R1, 2, "iovecs");
    a.jmpi(JEQ, R1, 3, "msghdr");
    a.jmpi(JEQ, R1, 4, "params");
    a.jmpi(JEQ, R1, 5, "pair");
    a.jmpi(JNE, R1, 1, "done");
    // A path: its length with the NUL on success.
    a.mov(R1, R6);
    a.alui(ADD, R1, DATA as i32);
    a.movi(R2, DATA_LEN);
    a.ldx(DW, R3, FP, PTR);
    a.call(READ_USER_STR);
    a.jmpi(JSGT, R0, 0, "str_ok");
    a.ja("done");
    a.label("str_ok");
    a.stx(H, R6, 12, R0);
    a.ja("done");
    // iovecs: up to 32 of them.
    a.label("iovecs");
    a.ldx(DW, R2, FP, COUNT);
    iovec_bytes(a, "iov_n", "done");
    a.stx(H, R6, 12, R2);
    read_user(a, DATA, None, (FP, PTR));
    a.jmpi(JEQ, R0, 0, "done");
    a.st(H, R6, 12, 0);
    a.ja("done");
    // A msghdr (56 bytes), then its iovecs.
    a.label("msghdr");
    read_user(a, MSG, Some(56), (FP, PTR));
    a.jmpi(JNE, R0, 0, "done");
    a.st(H, R6, 14, 1);
    a.ldx(DW, R2, R6, MSG + 24);
    iovec_bytes(a, "msg_n", "done");
    a.stx(H, R6, 12, R2);
    read_user(a, DATA, None, (R6, MSG + 16));
    a.jmpi(JEQ, R0, 0, "done");
    a.st(H, R6, 12, 0);
    a.ja("done");
    // Two descriptors (pipe2, socketpair).
    a.label("pair");
    read_user(a, DATA, Some(8), (FP, PTR));
    a.jmpi(JNE, R0, 0, "done");
    a.st(H, R6, 12, 8);
    a.ja("done");
    // io_uring_setup's parameters.
    a.label("params");
    read_user(a, DATA, Some(120), (FP, PTR));
    a.jmpi(JNE, R0, 0, "done");
    a.st(H, R6, 12, 120);
    a.label("done");
}

/// sys_exit(regs, ret): a pending call's record, with its memory where it has some.
fn sys_exit(maps: &Maps) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    if_traced(&mut a, maps, true);
    a.ldx(DW, R1, R6, 8);
    a.stx(DW, FP, RET, R1);
    // The saved registers: the call's number and arguments.
    a.stack(R1, WINDOW as i32);
    a.movi(R2, REGS.len);
    a.ldx(DW, R3, R6, 0);
    a.alui(ADD, R3, REGS.base);
    a.call(READ_KERNEL);
    a.jmpi(JNE, R0, 0, "lost");
    a.ldx(if REGS.nr32 { W } else { DW }, R7, FP, WINDOW + REGS.nr);
    a.jmpi(JGT, R7, NUMBERS as i32 - 1, "out");
    a.stx(W, FP, AUX, R7);
    a.map(R1, maps.wanted.as_raw_fd());
    a.stack(R2, AUX as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, "out");
    a.ldx(W, R8, R0, 0);
    a.jmpi(JEQ, R8, 0, "out");
    a.mov(R1, R8);
    a.alui(AND, R1, 0b1110);
    a.jmpi(JNE, R1, 0, "big");
    for (size, tag) in [(SMALL, "small"), (BIG, "big")] {
        a.label(tag);
        a.map(R1, maps.ring.as_raw_fd());
        a.movi(R2, size);
        a.movi(R3, 0);
        a.call(RESERVE);
        a.jmpi(JEQ, R0, 0, "lost");
        a.mov(R6, R0);
        call_header(&mut a);
        if size == BIG {
            a.st(W, R6, 12, 0);
            copy_memory(&mut a);
        }
        // Wake the reader only when the ring is half full.
        a.map(R1, maps.ring.as_raw_fd());
        a.movi(R2, AVAIL_DATA);
        a.call(QUERY);
        a.movi(R2, NO_WAKEUP);
        a.jmpi(JLE, R0, RING as i32 / 2, &format!("{tag}_quiet"));
        a.movi(R2, WAKE_NOW);
        a.label(&format!("{tag}_quiet"));
        a.mov(R1, R6);
        a.call(SUBMIT);
        a.ja("out");
    }
    a.epilogue(maps, "out");
    a.finish()
}

/// tasks[the id at AUX] = the state at PTR; to `lost` when the map is full.
fn set_task(a: &mut Asm, maps: &Maps) {
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, AUX as i32);
    a.stack(R3, PTR as i32);
    a.movi(R4, 0);
    a.call(UPDATE);
    a.jmpi(JNE, R0, 0, "lost");
}

/// Reserves a small record into r6 (to `lost` when the ring is full) and writes its
/// kind and the current task.
fn small_record(a: &mut Asm, maps: &Maps, kind: i32) {
    // A task record wakes ioprobe: r9 is kept, r6 becomes the record.
    a.map(R1, maps.ring.as_raw_fd());
    a.movi(R2, SMALL);
    a.movi(R3, 0);
    a.call(RESERVE);
    a.jmpi(JEQ, R0, 0, "lost");
    a.mov(R6, R0);
    a.st(W, R6, 0, kind);
    a.stx(W, R6, 4, R9);
}

/// Submits the record at r6 with the current task's name (16 bytes at 16), waking
/// ioprobe.
fn submit_with_comm(a: &mut Asm) {
    a.mov(R1, R6);
    a.alui(ADD, R1, 16);
    a.movi(R2, 16);
    a.call(COMM);
    a.mov(R1, R6);
    a.movi(R2, WAKE_NOW);
    a.call(SUBMIT);
    a.ja("out");
}

/// sched_process_fork(parent, child), run by the parent: a traced task's child joins
/// the tree before it runs.
fn fork(maps: &Maps, t: TaskOffsets) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    if_traced(&mut a, maps, false);
    // The child starts in its parent's state (a waiting command does not fork).
    a.stx(W, FP, PTR, R8);
    for (slot, off) in [(AUX, t.pid), (RET, t.tgid)] {
        a.stack(R1, slot as i32);
        a.movi(R2, 4);
        a.ldx(DW, R3, R6, 8);
        a.alui(ADD, R3, off);
        a.call(READ_KERNEL);
        a.jmpi(JNE, R0, 0, "lost");
    }
    set_task(&mut a, maps);
    small_record(&mut a, maps, KIND_TASK);
    // The child in place of the current task; the parent and the child's process.
    a.ldx(W, R1, FP, AUX);
    a.stx(W, R6, 4, R1);
    a.stx(W, R6, 12, R9);
    a.ldx(W, R1, FP, RET);
    a.stx(W, R6, 8, R1);
    submit_with_comm(&mut a);
    a.epilogue(maps, "out");
    a.finish()
}

/// sched_process_exec(task, old_pid, bprm), run by the task: a task of the tree runs a
/// new program. The command itself is traced from here: until its exec the tree holds
/// it as [`WAITING`] (its own start is not the command's). A thread that execs takes
/// its leader's id: the tree follows.
fn exec(maps: &Maps, t: TaskOffsets) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    a.call(PID_TGID);
    a.mov(R9, R0);
    a.ldx(DW, R1, R6, 8);
    a.stx(W, FP, KEY, R1);
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, "out");
    a.stx(W, FP, AUX, R9);
    a.ldx(W, R1, FP, KEY);
    a.ldx(W, R2, FP, AUX);
    a.jmp(JEQ, R1, R2, "same");
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(DELETE);
    a.label("same");
    // The program's ELF header (bprm->buf): EI_CLASS 1 is a 32-bit program.
    a.st(W, FP, PTR, TRACED);
    a.stack(R1, COUNT as i32);
    a.movi(R2, 8);
    a.ldx(DW, R3, R6, 16);
    a.alui(ADD, R3, t.binprm_buf);
    a.call(READ_KERNEL);
    a.jmpi(JNE, R0, 0, "class");
    a.ldx(B, R1, FP, COUNT + 4);
    a.jmpi(JNE, R1, 1, "class");
    a.st(W, FP, PTR, COMPAT);
    a.label("class");
    set_task(&mut a, maps);
    small_record(&mut a, maps, KIND_EXEC);
    a.ldx(W, R1, FP, KEY);
    a.stx(W, R6, 8, R1);
    a.ldx(W, R1, FP, PTR);
    a.stx(W, R6, 12, R1);
    submit_with_comm(&mut a);
    a.epilogue(maps, "out");
    a.finish()
}

/// sched_process_exit(task), run by the task: a traced task leaves the tree.
fn exit(maps: &Maps) -> Vec<Insn> {
    let mut a = Asm::default();
    if_traced(&mut a, maps, false);
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(DELETE);
    small_record(&mut a, maps, KIND_EXIT);
    a.mov(R1, R6);
    a.movi(R2, WAKE_NOW);
    a.call(SUBMIT);
    a.ja("out");
    a.epilogue(maps, "out");
    a.finish()
}

// ---------------------------------------------------------------------------------
// bpf(2), the maps, BTF.

/// bpf(2) commands (`enum bpf_cmd`).
const CMD_MAP_CREATE: i32 = 0;
const CMD_MAP_LOOKUP_ELEM: i32 = 1;
const CMD_MAP_UPDATE_ELEM: i32 = 2;
const CMD_PROG_LOAD: i32 = 5;
const CMD_RAW_TRACEPOINT_OPEN: i32 = 17;
const CMD_MAP_UPDATE_BATCH: i32 = 26;

fn bpf(cmd: libc::c_int, attr: &mut [u64; 16]) -> io::Result<libc::c_long> {
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

fn set_u32(attr: &mut [u64; 16], byte: usize, v: u32) {
    let word = &mut attr[byte / 8];
    let shift = (byte % 8) * 8;
    *word = (*word & !(0xffff_ffffu64 << shift)) | (u64::from(v) << shift);
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: bpf(2) just returned this new descriptor, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

fn map_create(kind: u32, key: u32, value: u32, entries: u32, flags: u32) -> io::Result<OwnedFd> {
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
fn map_fill(map: &OwnedFd, values: &[u32]) -> io::Result<()> {
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

fn map_update(map: &OwnedFd, key: &[u8], value: &[u8]) -> io::Result<()> {
    let mut attr = [0u64; 16];
    set_u32(&mut attr, 0, map.as_raw_fd() as u32);
    attr[1] = key.as_ptr() as u64;
    attr[2] = value.as_ptr() as u64;
    bpf(CMD_MAP_UPDATE_ELEM, &mut attr)
        .map(|_| ())
        .map_err(os("bpf(BPF_MAP_UPDATE_ELEM)"))
}

fn map_lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> io::Result<()> {
    let mut attr = [0u64; 16];
    set_u32(&mut attr, 0, map.as_raw_fd() as u32);
    attr[1] = key.as_ptr() as u64;
    attr[2] = value.as_mut_ptr() as u64;
    bpf(CMD_MAP_LOOKUP_ELEM, &mut attr).map(|_| ())
}

/// Loads a raw-tracepoint program and attaches it to tracepoint `name`: the
/// attachment's descriptor (closing it detaches).
fn attach(name: &str, code: &[Insn]) -> io::Result<(OwnedFd, OwnedFd)> {
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
struct Maps {
    /// Task id → its state ([`TRACED`], [`WAITING`], [`COMPAT`]): the traced tree.
    tasks: OwnedFd,
    /// Syscall number → [`wanted_value`] (0: not traced).
    wanted: OwnedFd,
    /// One counter: records the ring had no room for, tasks the tree could not hold.
    lost: OwnedFd,
    ring: OwnedFd,
}

/// Byte offsets of `pid` and `tgid` in the running kernel's `struct task_struct`.
#[derive(Debug, Clone, Copy)]
struct TaskOffsets {
    pid: i32,
    tgid: i32,
    /// `struct linux_binprm`'s `buf` (the program's first bytes).
    binprm_buf: i32,
}

/// `struct task_struct`'s `pid` and `tgid` and `struct linux_binprm`'s `buf`, from the
/// kernel's BTF.
fn task_offsets() -> io::Result<TaskOffsets> {
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
fn btf_struct<'a>(btf: &'a [u8], wanted: &str) -> Option<Vec<(&'a str, u32)>> {
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
enum Btf {
    Mapped(*const u8, usize),
    Read(Vec<u8>),
}

impl Btf {
    fn open() -> io::Result<Btf> {
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

    fn bytes(&self) -> &[u8] {
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

// ---------------------------------------------------------------------------------
// The ring buffer, read from user space.

struct Ring {
    consumer: *mut u8,
    producer: *const u8,
    page: usize,
    /// The ring map (polled for wake-ups).
    fd: OwnedFd,
}

impl Ring {
    fn map(fd: OwnedFd) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mmap = |len: usize, prot: i32, off: usize| {
            // SAFETY: maps the ring's pages as the kernel lays them out (a consumer
            // page, a producer page, the data twice); unmapped in Drop.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    off as libc::off_t,
                )
            };
            if p == libc::MAP_FAILED {
                Err(io::Error::last_os_error()).map_err(os("mmap of the BPF ring buffer"))
            } else {
                Ok(p as *mut u8)
            }
        };
        let consumer = mmap(page, libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let producer = mmap(page + 2 * RING as usize, libc::PROT_READ, page).inspect_err(|_| {
            // SAFETY: the consumer page just mapped, not used anywhere.
            unsafe { libc::munmap(consumer as *mut libc::c_void, page) };
        })?;
        Ok(Ring {
            consumer,
            producer,
            page,
            fd,
        })
    }

    /// Every record committed since the last call, in the order they were reserved.
    fn drain(&self, mut each: impl FnMut(&[u8])) {
        use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
        // SAFETY: the positions are 8-byte aligned words at the start of the consumer
        // and producer pages, written by the kernel (producer) and by us (consumer).
        let (cons, prod) = unsafe {
            (
                &*(self.consumer as *const AtomicU64),
                &*(self.producer as *const AtomicU64),
            )
        };
        let mut at = cons.load(Ordering::Acquire);
        let end = prod.load(Ordering::Acquire);
        let mask = RING as u64 - 1;
        while at < end {
            // SAFETY: the data area starts one page into the producer mapping and is
            // mapped twice in a row, so a record that wraps is contiguous; a record's
            // 8-byte header is at `at`.
            let data = unsafe { self.producer.add(self.page) };
            let hdr = unsafe { &*(data.add((at & mask) as usize) as *const AtomicU32) };
            let len = hdr.load(Ordering::Acquire);
            if len & (1 << 31) != 0 {
                break; // reserved, not committed yet
            }
            let size = (len & !(3 << 30)) as usize;
            if len & (1 << 30) == 0 {
                // SAFETY: the committed record's `size` bytes follow its header.
                let rec =
                    unsafe { std::slice::from_raw_parts(data.add((at & mask) as usize + 8), size) };
                each(rec);
            }
            at += (size as u64 + 8 + 7) & !7;
            cons.store(at, Ordering::Release);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the two mappings made in Ring::map, with their lengths.
        unsafe {
            libc::munmap(self.consumer as *mut libc::c_void, self.page);
            libc::munmap(
                self.producer as *mut libc::c_void,
                self.page + 2 * RING as usize,
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// The tracer.

/// The command and the programs watching it. A reader thread empties the ring as it
/// fills, turning records into events at once (and looking at a new program's
/// descriptors and working directory then, while they are there), so that the ring
/// never waits on the profile.
pub struct Tracer {
    main: i32,
    ended: Option<Ended>,
    lost_map: OwnedFd,
    /// The traced tasks not yet seen to end, and those of them missing from /proc
    /// at the last look.
    live: HashSet<i32>,
    missing: HashSet<i32>,
    /// The signal passed on to the command (0: none): a task learnt of later (its
    /// fork record read after the signal came) gets it too.
    passed: i32,
    queue: VecDeque<Event>,
    events: std::sync::mpsc::Receiver<Vec<Event>>,
    /// An eventfd: written, the reader empties the ring once more and ends.
    stop: std::sync::Arc<OwnedFd>,
    stopping: bool,
    reader: Option<std::thread::JoinHandle<()>>,
    /// Kept open while tracing: closing them detaches the programs.
    _links: Vec<(OwnedFd, OwnedFd)>,
    _maps: Vec<OwnedFd>,
}

/// The maps made and the programs attached, with no task in the tree yet.
pub struct Loaded {
    maps: Maps,
    links: Vec<(OwnedFd, OwnedFd)>,
}

impl Loaded {
    /// Makes the maps and loads and attaches the programs: Err says why eBPF cannot
    /// trace here (no BTF, no privilege, a kernel that refuses a program).
    pub fn load() -> io::Result<Loaded> {
        const HASH: u32 = 1;
        const ARRAY: u32 = 2;
        const RINGBUF: u32 = 27;
        let offsets = task_offsets()?;
        // The tree is small and changes at forks and execs only: allocated as it grows.
        const NO_PREALLOC: u32 = 1;
        let maps = Maps {
            tasks: map_create(HASH, 4, 4, TASKS, NO_PREALLOC)?,
            wanted: map_create(ARRAY, 4, 4, NUMBERS, 0)?,
            lost: map_create(ARRAY, 4, 8, 1, 0)?,
            ring: map_create(RINGBUF, 0, 0, RING, 0)?,
        };
        let mut wanted = vec![0u32; NUMBERS as usize];
        let calls = super::traced_calls().into_iter();
        for (nr, v) in calls
            .map(|(nr, c)| (nr, wanted_value(c.pointee())))
            .chain(makers().into_iter().map(|(nr, m)| (nr, maker_value(m))))
        {
            wanted[nr as usize] = v;
        }
        map_fill(&maps.wanted, &wanted)?;
        let links = vec![
            attach("sched_process_fork", &fork(&maps, offsets))?,
            attach("sched_process_exec", &exec(&maps, offsets))?,
            attach("sched_process_exit", &exit(&maps))?,
            attach("sys_exit", &sys_exit(&maps))?,
        ];
        Ok(Loaded { maps, links })
    }

    /// Starts `argv` with its pid in the tree: the child waits on a pipe until then,
    /// so its program's first call is traced.
    pub fn spawn(self, argv: &[std::ffi::OsString], close: &[i32]) -> io::Result<Tracer> {
        let Loaded { maps, links } = self;
        let args = c_args(argv)?;
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let pipe = || -> io::Result<(i32, i32)> {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: pipe2 writes two descriptors into the array.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
                return Err(io::Error::last_os_error()).map_err(os("pipe2"));
            }
            Ok((fds[0], fds[1]))
        };
        let (rd, wr) = pipe()?;
        let (gate_rd, gate_wr) = pipe()?;
        let child = Child {
            gate: Some((gate_rd, gate_wr)),
            ..Child::new(ptrs, close, (rd, wr))
        };
        let pid = child.start()?;
        // SAFETY: closing the parent's copies of the child's ends.
        unsafe {
            libc::close(wr);
            libc::close(gate_rd);
        }
        let added = map_update(&maps.tasks, &pid.to_ne_bytes(), &WAITING.to_ne_bytes());
        if added.is_ok() {
            // SAFETY: one byte from a local to the gate's write end, ours.
            unsafe { libc::write(gate_wr, [1u8].as_ptr() as *const libc::c_void, 1) };
        }
        // SAFETY: closing the gate's write end, ours.
        unsafe { libc::close(gate_wr) };
        let failed = child_error(rd);
        added?;
        if let Some(e) = failed {
            return Err(e);
        }
        let Maps {
            tasks,
            wanted,
            lost,
            ring,
        } = maps;
        let ring = Ring::map(ring)?;
        let reader = Reader {
            ring,
            calls: super::traced_calls().into_iter().collect(),
            makers: makers().into_iter().collect(),
        };
        let (to, events) = std::sync::mpsc::channel();
        // SAFETY: eventfd has no memory arguments; the descriptor is new and ours.
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop == -1 {
            return Err(io::Error::last_os_error()).map_err(os("eventfd"));
        }
        let stop = std::sync::Arc::new(owned(stop as libc::c_long));
        // SAFETY: pidfd_open on our own child, not yet reaped.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = (pidfd >= 0).then(|| owned(pidfd));
        let stopped = stop.clone();
        let reader = std::thread::Builder::new()
            .name("ebpf-reader".into())
            .spawn(move || reader.run(to, &stopped, pidfd))
            .map_err(os("starting the eBPF ring reader"))?;
        Ok(Tracer {
            main: pid,
            ended: None,
            lost_map: lost,
            live: HashSet::from([pid]),
            passed: 0,
            missing: HashSet::new(),
            queue: VecDeque::new(),
            events,
            stop,
            stopping: false,
            reader: Some(reader),
            _links: links,
            _maps: vec![tasks, wanted],
        })
    }
}

impl Tracer {
    /// The traced command's pid.
    pub fn pid(&self) -> i32 {
        self.main
    }

    /// How the command ended, once [`Tracer::next_event`] has returned None.
    pub fn ended(&self) -> Option<Ended> {
        self.ended
    }

    /// Records the ring had no room for and tasks the tree could not hold: their calls
    /// are missing from the trace.
    pub fn lost(&self) -> u64 {
        let mut v = [0u8; 8];
        match map_lookup(&self.lost_map, &0u32.to_ne_bytes(), &mut v) {
            Ok(()) => u64::from_ne_bytes(v),
            Err(_) => 0,
        }
    }

    /// The next event, or None once the command has ended and every task it started
    /// has too.
    pub fn next_event(&mut self) -> io::Result<Option<Event>> {
        use std::sync::mpsc::RecvTimeoutError;
        loop {
            if let Some(e) = self.queue.pop_front() {
                match e {
                    Event::Task { tid, .. } => self.learn(tid),
                    Event::Exit { tid } => {
                        self.live.remove(&tid);
                    }
                    _ => {}
                }
                return Ok(Some(e));
            }
            self.pass_signal();
            if self.ended.is_none() {
                self.reap()?;
            }
            if self.ended.is_some() && self.live.is_empty() && !self.stopping {
                // The last records: the reader empties the ring once more, then ends
                // (which ends the channel).
                self.stop_reader();
                self.stopping = true;
            }
            let wait = std::time::Duration::from_millis(READ_EVERY_MS as u64);
            match self.events.recv_timeout(wait) {
                Ok(batch) => {
                    self.queue.extend(batch);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self.ended.is_some() && !self.live.is_empty() {
                // Tasks still running after the command: waited for, as ptrace would.
                // One that has been gone from /proc for a whole reading period has
                // no record left to come (its exit record was lost): dropped.
                let gone: HashSet<i32> = self
                    .live
                    .iter()
                    .copied()
                    .filter(|t| !std::path::Path::new(&format!("/proc/{t}")).exists())
                    .collect();
                for t in gone.intersection(&self.missing) {
                    self.live.remove(t);
                }
                self.missing = gone;
            }
        }
    }

    /// Task `tid` is traced; one learnt of after a signal was passed on (its fork
    /// record read later) gets it too.
    fn learn(&mut self, tid: i32) {
        if self.live.insert(tid) && self.passed != 0 {
            // SAFETY: kill(2) on a task of the traced tree.
            unsafe { libc::kill(tid, self.passed) };
        }
    }

    /// Passes a SIGTERM or SIGHUP ioprobe was sent to every traced task.
    fn pass_signal(&mut self) {
        let sig = PASSED.swap(0, std::sync::atomic::Ordering::Relaxed);
        if sig != 0 {
            self.passed = sig;
            for &t in &self.live {
                // SAFETY: kill(2) on a task of the traced tree.
                unsafe { libc::kill(t, sig) };
            }
        }
    }

    /// Reaps the command if it has ended.
    fn reap(&mut self) -> io::Result<()> {
        let mut status = 0;
        // SAFETY: waitpid on our own child, writing a local integer.
        let r = unsafe { libc::waitpid(self.main, &mut status, libc::WNOHANG) };
        if r == -1 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(());
            }
            return Err(e).map_err(os("waitpid"));
        }
        if r == self.main {
            self.ended = Some(if libc::WIFEXITED(status) {
                Ended::Code(libc::WEXITSTATUS(status))
            } else {
                Ended::Signal(libc::WTERMSIG(status))
            });
        }
        Ok(())
    }
}

impl Tracer {
    /// Tells the reader to empty the ring once more and end.
    fn stop_reader(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: 8 bytes from a local to our eventfd.
        unsafe {
            libc::write(
                self.stop.as_raw_fd(),
                one.as_ptr() as *const libc::c_void,
                8,
            )
        };
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop_reader();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// The reader thread's side: the ring and how to decode its records.
struct Reader {
    ring: Ring,
    calls: HashMap<u64, Syscall>,
    makers: HashMap<u64, Maker>,
}

// SAFETY: the ring's mappings belong to the Ring alone, and once the Reader is moved
// to its thread nothing else touches them.
unsafe impl Send for Reader {}

impl Reader {
    /// Until `stop` is written: waits for a wake-up (the ring's, the command's end,
    /// `stop`) or READ_EVERY_MS, empties the ring and sends its events; once more
    /// after `stop`. The command's end is sent as an empty batch, once.
    fn run(self, to: std::sync::mpsc::Sender<Vec<Event>>, stop: &OwnedFd, pidfd: Option<OwnedFd>) {
        let fd = |f: Option<&OwnedFd>| libc::pollfd {
            fd: f.map_or(-1, |f| f.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut ended = pidfd.is_none();
        loop {
            let mut p = [
                fd(Some(&self.ring.fd)),
                fd(Some(stop)),
                fd(pidfd.as_ref().filter(|_| !ended)),
            ];
            // SAFETY: three pollfds on the stack (a negative descriptor is skipped).
            unsafe { libc::poll(p.as_mut_ptr(), 3, READ_EVERY_MS) };
            let last = p[1].revents & libc::POLLIN != 0;
            let end = !ended && p[2].revents & libc::POLLIN != 0;
            ended |= end;
            let mut batch = Vec::new();
            self.ring.drain(|r| batch.extend(self.decode(r)));
            if (end || !batch.is_empty()) && to.send(batch).is_err() {
                return;
            }
            if last {
                return;
            }
        }
    }

    /// One record as the events it stands for.
    fn decode(&self, r: &[u8]) -> Vec<Event> {
        let i32_at = |at: usize| i32::from_ne_bytes(r[at..at + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |at: usize| u64::from_ne_bytes(r[at..at + 8].try_into().unwrap_or([0; 8]));
        let u16_at = |at: usize| u16::from_ne_bytes(r[at..at + 2].try_into().unwrap_or([0; 2]));
        if r.len() < SMALL as usize {
            return Vec::new();
        }
        let comm = || {
            let c = &r[16..32];
            let end = c.iter().position(|&b| b == 0).unwrap_or(16);
            Some(String::from_utf8_lossy(&c[..end]).into_owned())
        };
        let tid = i32_at(4);
        match i32_at(0) {
            KIND_CALL => {
                let nr = u64_at(16);
                let args: [u64; 6] = std::array::from_fn(|i| u64_at(24 + 8 * i));
                let ret = u64_at(72) as i64;
                let Some(&call) = self.calls.get(&nr) else {
                    return self
                        .makers
                        .get(&nr)
                        .and_then(|&m| {
                            made(
                                tid,
                                m,
                                &args,
                                ret,
                                r.get(DATA as usize..DATA as usize + 8)
                                    .filter(|_| u16_at(12) == 8),
                            )
                        })
                        .into_iter()
                        .collect();
                };
                let mem = captured(call.pointee(), &args, r, u16_at(12), u16_at(14) == 1);
                vec![Event::Call {
                    tid,
                    call,
                    args,
                    ret,
                    mem,
                }]
            }
            KIND_TASK => vec![Event::Task {
                tid,
                parent: i32_at(12),
                pid: Some(i32_at(8)),
                comm: comm(),
            }],
            KIND_EXEC => {
                let old = i32_at(8);
                let mut v = Vec::new();
                if old != tid {
                    // A thread exec'd: it took its leader's id and its own ended.
                    v.push(Event::Exit { tid: old });
                    v.push(Event::Task {
                        tid,
                        parent: old,
                        pid: Some(tid),
                        comm: None,
                    });
                }
                v.push(Event::Exec {
                    tid,
                    comm: comm(),
                    program32: Some(i32_at(12) == COMPAT),
                    note: None,
                    seen: Some(Seen::now(tid)),
                });
                v
            }
            KIND_EXIT => vec![Event::Exit { tid }],
            _ => Vec::new(),
        }
    }
}

/// The memory a call record carries, as [`Memory::Captured`].
fn captured(p: Pointee, args: &[u64; 6], r: &[u8], len: u16, msg_ok: bool) -> Memory {
    let data = |n: usize| r.get(DATA as usize..DATA as usize + n).map(<[u8]>::to_vec);
    let mut parts = Vec::new();
    match p {
        Pointee::Path(n) if len > 0 => {
            // The length counts the NUL.
            if let Some(b) = data(len as usize - 1) {
                parts.push((args[n], b, true));
            }
        }
        Pointee::Iovecs(n) | Pointee::UringParams(n) if len > 0 => {
            if let Some(b) = data(len as usize) {
                parts.push((args[n], b, false));
            }
        }
        Pointee::Msghdr(n) if msg_ok => {
            let m = r[MSG as usize..MSG as usize + 56].to_vec();
            let iov = u64::from_ne_bytes(m[16..24].try_into().unwrap_or([0; 8]));
            parts.push((args[n], m, false));
            if let Some(b) = data(len as usize).filter(|_| len > 0) {
                parts.push((iov, b, false));
            }
        }
        _ => {}
    }
    Memory::Captured(parts, std::cell::Cell::new(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_on_their_labels() {
        let mut a = Asm::default();
        a.ja("end");
        a.movi(R0, 1);
        a.label("end");
        a.exit();
        let code = a.finish();
        assert_eq!(code[0].off, 1);
    }

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
