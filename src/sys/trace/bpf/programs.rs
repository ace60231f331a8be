//! The programs: `sys_exit` (a traced call's record, with the memory its arguments
//! point to), and `fork`, `exec` and `exit` keeping the traced tree in a map.

use super::asm::*;
use super::kernel::{Maps, TaskOffsets};
use super::records::{cpu_publish, cpu_reserve, take_ticket, ticket_counter};
use super::*;

/// Where a call's number and six arguments sit in `struct pt_regs` at sys_exit (the
/// saved user registers; only the return register has changed): each argument's
/// offset from `base`, the number's (and whether it is 32 bits wide).
pub(super) struct Regs {
    pub(super) base: i32,
    pub(super) args: [i16; 6],
    pub(super) nr: i16,
    nr32: bool,
}
#[cfg(target_arch = "x86_64")]
pub(super) const REGS: Regs = Regs {
    // r10 r9 r8 ax cx dx si di orig_ax, from offset 56
    base: 56,
    args: [56, 48, 40, 0, 16, 8],
    nr: 64,
    nr32: false,
};
#[cfg(target_arch = "aarch64")]
pub(super) const REGS: Regs = Regs {
    // regs[31] sp pc pstate orig_x0 syscallno: x0 holds the result, orig_x0 the first
    // argument.
    base: 0,
    args: [272, 8, 16, 24, 32, 40],
    nr: 280,
    nr32: true,
};

/// Stack slots.
pub(super) const KEY: i16 = -4;
pub(super) const AUX: i16 = -8;
pub(super) const RET: i16 = -16;
pub(super) const PTR: i16 = -24;
pub(super) const COUNT: i16 = -32;
pub(super) const BIT: i16 = -36;
/// A timed call's end (CLOCK_MONOTONIC, ns), and the word of its task's context
/// switches then with the timed-pair flags ([`TIMED`], [`SECOND`]; 0: not timed).
pub(super) const ENDED: i16 = -48;
pub(super) const SWITCHES: i16 = -52;
/// A live task's `live` word and its timed-pair bit (0: no pair open), kept from the
/// task's lookup until the call is known to be recorded ([`second_of_pair`]).
const PAIR_WORD: i16 = -88;
const PAIR_BIT: i16 = -96;

/// Looks the current task up in `tasks`; when it is not there (or, with `traced`,
/// not there as [`TRACED`]), to `out`. Leaves pid_tgid in r9 and its state in r8.
pub(super) fn if_traced(a: &mut Asm, maps: &Maps, traced: bool) {
    a.call(PID_TGID);
    a.mov(R9, R0);
    tree_lookup(a, maps, traced);
}

/// [`if_traced`] for the task whose pid_tgid is in r9; places the label "in_tree".
fn tree_lookup(a: &mut Asm, maps: &Maps, traced: bool) {
    a.stx(W, FP, KEY, R9);
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, "not_in_tree");
    a.ldx(W, R8, R0, 0);
    if traced {
        a.jmpi(JNE, R8, TRACED, "out");
    }
    a.ja("in_tree");
    a.label("not_in_tree");
    if !in_scope(a, maps) {
        a.ja("out");
    }
    // Attached to processes (sys_exit, `traced`): a thread of one gets its bit at its
    // first call, so that its later calls take the bitmap's path; the exit program
    // clears it. (A cgroup's task is looked up at each call: it may move out.)
    if traced && maps.pids.is_some() {
        live_word(a, maps, KEY, "in_tree");
        a.atomic(OR, R0, 0, R1);
    }
    a.label("in_tree");
}

/// A task not in `tasks` (pid_tgid in r9): attached, it is traced when its process is
/// in `pids` or it runs in the cgroup (or one below it), with r8 = [`TRACED`], and
/// otherwise goes to "out". False: not attached, nothing emitted (the caller jumps;
/// the verifier refuses code no path reaches).
pub(super) fn in_scope(a: &mut Asm, maps: &Maps) -> bool {
    let miss = "out";
    if let Some(pids) = &maps.pids {
        a.mov(R1, R9);
        a.alui(RSH, R1, 32);
        a.stx(W, FP, AUX, R1);
        a.map(R1, pids.as_raw_fd());
        a.stack(R2, AUX as i32);
        a.call(LOOKUP);
        a.jmpi(JEQ, R0, 0, miss);
    } else if let Some(cgroup) = &maps.cgroup {
        a.map(R1, cgroup.as_raw_fd());
        a.movi(R2, 0);
        a.call(UNDER_CGROUP);
        a.jmpi(JNE, R0, 1, miss);
    } else {
        return false;
    }
    a.movi(R8, TRACED);
    true
}

/// Fills a call record's header at r6: the number at AUX, pid_tgid in r9, the
/// arguments from the saved registers at r7, the result, its end and the task's
/// context switches on the stack.
pub(super) fn call_header(a: &mut Asm) {
    a.st(W, R6, 0, KIND_CALL);
    a.stx(W, R6, 4, R9);
    a.ldx(W, R1, FP, SWITCHES);
    a.stx(W, R6, 8, R1);
    a.st(W, R6, 12, 0);
    a.ldx(W, R1, FP, AUX);
    a.stx(W, R6, 16, R1);
    for (i, off) in REGS.args.iter().enumerate() {
        a.ldx(DW, R1, R7, (REGS.base + i32::from(*off)) as i16);
        a.stx(DW, R6, 24 + 8 * i as i16, R1);
    }
    a.ldx(DW, R1, FP, RET);
    a.stx(DW, R6, 72, R1);
    a.ldx(W, R1, FP, ENDED);
    a.stx(W, R6, AT, R1);
}

/// r2 = min(r2, 32) * 16: the bytes of at most 32 iovecs; to `done` when none.
pub(super) fn iovec_bytes(a: &mut Asm, tag: &str, done: &str) {
    a.jmpi(JLE, R2, 32, tag);
    a.movi(R2, 32);
    a.label(tag);
    a.alui(LSH, R2, 4);
    a.jmpi(JEQ, R2, 0, done);
}

/// bpf_probe_read_user into the record at r6 + `to`: `len` bytes (None: the count
/// already in r2) from the address at `from` (register, offset).
pub(super) fn read_user(a: &mut Asm, to: i16, len: Option<i32>, from: (u8, i16)) {
    a.mov(R1, R6);
    a.alui(ADD, R1, to as i32);
    if let Some(n) = len {
        a.movi(R2, n);
    }
    a.ldx(DW, R3, from.0, from.1);
    a.call(READ_USER);
}

/// The memory a call record carries (the record at r6, its `wanted` value in r8).
pub(super) fn copy_memory(a: &mut Asm) {
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

/// r0 = the word of `live` holding the task id at `id` (to `none` past its end), r1 =
/// the task's live bit in it (its timed-pair bit is the next one up).
fn live_word(a: &mut Asm, maps: &Maps, id: i16, none: &str) {
    a.ldx(W, R1, FP, id);
    a.alui(RSH, R1, 5);
    a.stx(W, FP, BIT, R1);
    a.map(R1, maps.live.as_raw_fd());
    a.stack(R2, BIT as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, none);
    a.ldx(W, R2, FP, id);
    a.alui(AND, R2, 31);
    a.alui(LSH, R2, 1);
    a.movi(R1, 1);
    a.alu(LSH, R1, R2);
}

/// Sets the live bit of the task id at `id` when the state at `state` is [`TRACED`],
/// and clears it (and its timed-pair bit: a new task may take the id) otherwise or
/// without a state (`tag` names the labels).
fn mark_live(a: &mut Asm, maps: &Maps, id: i16, state: Option<i16>, tag: &str) {
    let (set, done) = (format!("{tag}_set"), format!("{tag}_marked"));
    live_word(a, maps, id, &done);
    if let Some(state) = state {
        a.ldx(W, R3, FP, state);
        a.jmpi(JEQ, R3, TRACED, &set);
    }
    a.mov(R2, R1);
    a.alui(LSH, R2, 1);
    a.alu(OR, R2, R1);
    a.alui(XOR, R2, -1);
    a.atomic(AND, R0, 0, R2);
    if state.is_some() {
        a.ja(&done);
        a.label(&set);
        a.atomic(OR, R0, 0, R1);
    }
    a.label(&done);
}

/// sys_exit(regs, ret), typed (BTF): a pending call's record, with its memory where
/// it has some. The task's bit in `live` answers first; only a task id past its end,
/// or attached, a task without it, is looked up in `tasks`.
pub(super) fn sys_exit(maps: &Maps, t: TaskOffsets) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    a.call(PID_TGID);
    a.mov(R9, R0);
    a.stx(W, FP, KEY, R0);
    a.st(DW, FP, ENDED, 0);
    a.st(W, FP, SWITCHES, 0);
    a.st(DW, FP, PAIR_BIT, 0);
    live_word(&mut a, maps, KEY, "look");
    a.ldx(DW, R2, R0, 0);
    a.mov(R3, R2);
    a.alu(AND, R3, R1);
    a.jmpi(JNE, R3, 0, "live");
    if maps.pids.is_none() && maps.cgroup.is_none() {
        a.ja("out");
    }
    a.label("look");
    tree_lookup(&mut a, maps, true);
    a.ja("timed");
    a.label("live");
    pair_open(&mut a);
    a.label("timed");
    a.ldx(DW, R1, R6, 8);
    a.stx(DW, FP, RET, R1);
    // The saved registers, read through the typed pointer (no helper call), kept in r7:
    // the call's number now, its arguments straight into the record.
    a.ldx(DW, R7, R6, 0);
    a.jmpi(JEQ, R7, 0, "lost");
    let nr = (REGS.base + i32::from(REGS.nr)) as i16;
    a.ldx(if REGS.nr32 { W } else { DW }, R1, R7, nr);
    a.jmpi(JGT, R1, NUMBERS as i32 - 1, "out");
    a.stx(W, FP, AUX, R1);
    a.map(R1, maps.wanted.as_raw_fd());
    a.stack(R2, AUX as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, "out");
    a.ldx(W, R8, R0, 0);
    a.jmpi(JEQ, R8, 0, "out");
    second_of_pair(&mut a, t);
    a.mov(R1, R8);
    a.alui(AND, R1, 0b1110);
    a.jmpi(JNE, R1, 0, "big");
    for (size, tag) in [(SMALL, "small"), (BIG, "big")] {
        a.label(tag);
        cpu_reserve(&mut a, maps, size);
        call_header(&mut a);
        first_of_pair(&mut a, maps, t, tag);
        if size == BIG {
            a.st(W, R6, 12, 0);
            copy_memory(&mut a);
        }
        cpu_publish(&mut a, maps, size, tag);
        a.ja("out");
    }
    epilogue(&mut a, maps, "out");
    a.finish()
}

/// Calls timed: one recorded call in about 45 (where its record falls in the first 128
/// bytes of each 4 KiB of the ring) starts a pair, and its task's next recorded call,
/// whatever it is, ends it (a call not recorded leaves the pair open); both carry when
/// they ended (the low 32 bits, ns) and the task's context switches then.
/// Timing every call cost 58–76 ns here (`bpf_ktime_get_ns`) and reading the switches
/// 11–28 more; the pair's interval is the program's own work, the second call and
/// tracing's part (`calibrate.rs`).
const SAMPLE_SHIFT: i32 = 7;
const SAMPLE_MASK: i32 = 31;
/// The switches word: bit 30 marks a timed call, bit 31 the second of a pair.
const TIMED: i32 = 1 << 30;
const SECOND: i32 = i32::MIN;

/// r1 = when the call ended (also at ENDED), r2 = the task's context switches (30
/// bits) with [`TIMED`].
fn now_and_switches(a: &mut Asm, t: TaskOffsets) {
    a.call(KTIME);
    a.stx(DW, FP, ENDED, R0);
    a.call(CURRENT_TASK);
    a.ldx(DW, R2, R0, t.nvcsw as i16);
    a.ldx(DW, R3, R0, t.nivcsw as i16);
    a.alu(ADD, R2, R3);
    a.alui(AND, R2, TIMED - 1);
    a.alui(OR, R2, TIMED);
    a.ldx(DW, R1, FP, ENDED);
}

/// A live task (its `live` word at r0, its value in r2, its live bit in r1): where its
/// previous recorded call started a timed pair, the word and the pair's bit kept on the
/// stack (PAIR_WORD, PAIR_BIT) for [`second_of_pair`].
fn pair_open(a: &mut Asm) {
    a.alui(LSH, R1, 1);
    a.alu(AND, R2, R1);
    a.jmpi(JEQ, R2, 0, "no_pair");
    a.stx(DW, FP, PAIR_WORD, R0);
    a.stx(DW, FP, PAIR_BIT, R1);
    a.label("no_pair");
}

/// A call to be recorded whose task has a timed pair open ([`pair_open`]) ends it: the
/// pair's bit cleared, this call's end and switches on the stack (ENDED, SWITCHES with
/// [`TIMED`] and [`SECOND`]). A call not recorded leaves the pair open: the interval
/// runs from one recorded call to the next, the calls between (getpid, futex) part of
/// the program's work between them.
fn second_of_pair(a: &mut Asm, t: TaskOffsets) {
    a.ldx(DW, R1, FP, PAIR_BIT);
    a.jmpi(JEQ, R1, 0, "untimed");
    a.ldx(DW, R0, FP, PAIR_WORD);
    a.alui(XOR, R1, -1);
    a.atomic(AND, R0, 0, R1);
    now_and_switches(a, t);
    a.alui(OR, R2, SECOND);
    a.stx(W, FP, SWITCHES, R2);
    a.label("untimed");
}

/// The record at r6 starts a timed pair where it falls at the start of a 4 KiB stretch
/// of the ring (and is not a pair's second): its end and switches written, its task's
/// pair bit set.
fn first_of_pair(a: &mut Asm, maps: &Maps, t: TaskOffsets, tag: &str) {
    let done = format!("{tag}_paired");
    a.ldx(W, R1, FP, SWITCHES);
    a.jmpi(JNE, R1, 0, &done);
    a.mov32(R1, R6);
    a.alui(RSH, R1, SAMPLE_SHIFT);
    a.alui(AND, R1, SAMPLE_MASK);
    a.jmpi(JNE, R1, 0, &done);
    now_and_switches(a, t);
    a.stx(W, R6, AT, R1);
    a.stx(W, R6, 8, R2);
    live_word(a, maps, KEY, &done);
    a.alui(LSH, R1, 1);
    a.atomic(OR, R0, 0, R1);
    a.label(&done);
}

/// tasks[the id at AUX] = the state at PTR; to `lost` when the map is full.
pub(super) fn set_task(a: &mut Asm, maps: &Maps) {
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, AUX as i32);
    a.stack(R3, PTR as i32);
    a.movi(R4, 0);
    a.call(UPDATE);
    a.jmpi(JNE, R0, 0, "lost");
}

/// Reserves a small record in the task ring into r6 (to `lost` when it is full) and
/// writes its kind, the current task and its ticket.
pub(super) fn small_record(a: &mut Asm, maps: &Maps, kind: i32) {
    // A task record wakes ioprobe: r9 is kept, r6 becomes the record, r7 the ticket
    // counter (found before the record is reserved: a reserved record must be submitted).
    ticket_counter(a, maps, R7);
    a.map(R1, maps.ring.as_raw_fd());
    a.movi(R2, SMALL);
    a.movi(R3, 0);
    a.call(RESERVE);
    a.jmpi(JEQ, R0, 0, "lost");
    a.mov(R6, R0);
    a.st(W, R6, 0, kind);
    a.stx(W, R6, 4, R9);
    take_ticket(a, R7, ring::TASK_TICKET as i16);
}

/// Submits the record at r6 with the current task's name (16 bytes at 16), waking
/// ioprobe.
pub(super) fn submit_with_comm(a: &mut Asm) {
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
pub(super) fn fork(maps: &Maps, t: TaskOffsets) -> Vec<Insn> {
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
    mark_live(&mut a, maps, AUX, Some(PTR), "child");
    small_record(&mut a, maps, KIND_TASK);
    // The child in place of the current task; the parent and the child's process.
    a.ldx(W, R1, FP, AUX);
    a.stx(W, R6, 4, R1);
    a.stx(W, R6, 12, R9);
    a.ldx(W, R1, FP, RET);
    a.stx(W, R6, 8, R1);
    submit_with_comm(&mut a);
    epilogue(&mut a, maps, "out");
    a.finish()
}

/// After a lookup in `tasks` (r0): found goes on, a miss goes to "out" or, attached,
/// through [`in_scope`]. True: the caller places the "in_tree" label.
fn tree_or_scope(a: &mut Asm, maps: &Maps) -> bool {
    if maps.pids.is_none() && maps.cgroup.is_none() {
        a.jmpi(JEQ, R0, 0, "out");
        return false;
    }
    a.jmpi(JNE, R0, 0, "in_tree");
    in_scope(a, maps);
    true
}

/// sched_process_exec(task, old_pid, bprm), run by the task: a task of the tree runs a
/// new program. The command itself is traced from here: until its exec the tree holds
/// it as [`WAITING`] (its own start is not the command's). A thread that execs takes
/// its leader's id: the tree follows.
pub(super) fn exec(maps: &Maps, t: TaskOffsets) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    a.call(PID_TGID);
    a.mov(R9, R0);
    a.ldx(DW, R1, R6, 8);
    a.stx(W, FP, KEY, R1);
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(LOOKUP);
    if tree_or_scope(&mut a, maps) {
        a.label("in_tree");
    }
    a.stx(W, FP, AUX, R9);
    a.ldx(W, R1, FP, KEY);
    a.ldx(W, R2, FP, AUX);
    a.jmp(JEQ, R1, R2, "same");
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(DELETE);
    mark_live(&mut a, maps, KEY, None, "old");
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
    mark_live(&mut a, maps, AUX, Some(PTR), "new");
    small_record(&mut a, maps, KIND_EXEC);
    a.ldx(W, R1, FP, KEY);
    a.stx(W, R6, 8, R1);
    a.ldx(W, R1, FP, PTR);
    a.stx(W, R6, 12, R1);
    submit_with_comm(&mut a);
    epilogue(&mut a, maps, "out");
    a.finish()
}

/// sched_process_exit(task), run by the task: a traced task leaves the tree.
pub(super) fn exit(maps: &Maps) -> Vec<Insn> {
    let mut a = Asm::default();
    if_traced(&mut a, maps, false);
    a.map(R1, maps.tasks.as_raw_fd());
    a.stack(R2, KEY as i32);
    a.call(DELETE);
    mark_live(&mut a, maps, KEY, None, "gone");
    small_record(&mut a, maps, KIND_EXIT);
    a.mov(R1, R6);
    a.movi(R2, WAKE_NOW);
    a.call(SUBMIT);
    a.ja("out");
    epilogue(&mut a, maps, "out");
    a.finish()
}

/// `return 0` at `out`, and at `lost` the lost counter's increment, then `then`.
fn epilogue(a: &mut Asm, maps: &Maps, then: &str) {
    a.label("out");
    a.movi(R0, 0);
    a.exit();
    a.label("lost");
    a.st(W, FP, -8, 0);
    a.map(R1, maps.lost.as_raw_fd());
    a.stack(R2, -8);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, then);
    a.movi(R1, 1);
    a.atomic(ADD, R0, 0, R1);
    a.ja(then);
}
