//! A record's way into the rings: `sys_exit`'s into its CPU's own ring (room made,
//! a ticket taken, the head moved past it once written, a bell rung at each quarter),
//! and the ticket a task record takes in the ring buffer. The caller places the `lost`
//! label these jump to.

use super::asm::*;
use super::kernel::Maps;
use super::ring;
use std::os::fd::AsRawFd;

/// This CPU's number (a key); its ring (a pointer) and the head past the record being
/// written; 8 bytes of zeros for a bell.
const CPU_NR: i16 = -56;
const RING_AT: i16 = -64;
const NEXT_HEAD: i16 = -72;
const BELL: i16 = -80;

/// r6 = room for a record of `size` bytes in this CPU's ring, its length and its
/// ticket written before it (to `lost` when the ring has no room); the ring and the head
/// past the record on the stack for [`cpu_publish`]. Only this program writes this
/// CPU's ring, and never twice at once (the kernel runs a program once at a time on a
/// CPU), so a record takes no lock: the ring buffer's reservation and commit cost
/// 20–24 ns a call more here (bench/trace_floor.sh, levels 5 and 9).
pub(super) fn cpu_reserve(a: &mut Asm, maps: &Maps, size: i32) {
    let slot = size + ring::RECORD_AT;
    a.call(CPU);
    a.stx(W, FP, CPU_NR, R0);
    a.map(R1, maps.rings.as_raw_fd());
    a.stack(R2, CPU_NR as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, "lost");
    a.ldx(DW, R1, R0, ring::HEAD);
    a.ldx(DW, R2, R0, ring::TAIL);
    a.mov(R3, R1);
    a.alu(SUB, R3, R2);
    a.jmpi(JGT, R3, maps.cpu_ring as i32 - slot, "lost");
    a.stx(DW, FP, RING_AT, R0);
    a.mov(R6, R0);
    a.mov(R3, R1);
    a.alui(AND, R3, maps.cpu_ring as i32 - 1);
    a.alu(ADD, R6, R3);
    a.alui(ADD, R6, ring::DATA_AT);
    a.alui(ADD, R1, slot);
    a.stx(DW, FP, NEXT_HEAD, R1);
    a.st(W, R6, 0, size);
    a.st(W, R6, 4, 0);
    ticket_counter(a, maps, R0);
    take_ticket(a, R0, 8);
    a.alui(ADD, R6, ring::RECORD_AT);
}

/// The next ticket written at r6 + `at`, from the counter at `counter`.
pub(super) fn take_ticket(a: &mut Asm, counter: u8, at: i16) {
    a.movi(R1, 1);
    a.fetch_add(counter, 0, R1);
    a.stx(DW, R6, at, R1);
}

/// `reg` = the ticket counter (to `lost` where it cannot be found, which the verifier
/// asks for).
pub(super) fn ticket_counter(a: &mut Asm, maps: &Maps, reg: u8) {
    a.st(W, FP, CPU_NR, 0);
    a.map(R1, maps.ticket.as_raw_fd());
    a.stack(R2, CPU_NR as i32);
    a.call(LOOKUP);
    a.jmpi(JEQ, R0, 0, "lost");
    a.mov(reg, R0);
}

/// Publishes the record [`cpu_reserve`] made: the ring's head moved past it. A record
/// ending past a quarter of the ring rings the bell: 8 bytes in the task ring, which
/// wake ioprobe.
pub(super) fn cpu_publish(a: &mut Asm, maps: &Maps, size: i32, tag: &str) {
    let slot = size + ring::RECORD_AT;
    let quiet = format!("{tag}_quiet");
    a.ldx(DW, R1, FP, RING_AT);
    a.ldx(DW, R2, FP, NEXT_HEAD);
    a.mov(R3, R2);
    a.publish(R1, ring::HEAD, R2);
    a.alui(AND, R3, maps.cpu_ring as i32 / 4 - 1);
    a.jmpi(JGT, R3, slot - 1, &quiet);
    a.st(DW, FP, BELL, 0);
    a.map(R1, maps.ring.as_raw_fd());
    a.stack(R2, BELL as i32);
    a.movi(R3, 8);
    a.movi(R4, WAKE_NOW);
    a.call(OUTPUT);
    a.label(&quiet);
}
