//! A BPF assembler: the few instructions the programs use, with labels.

use std::collections::HashMap;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(super) struct Insn {
    pub(super) code: u8,
    pub(super) regs: u8,
    pub(super) off: i16,
    pub(super) imm: i32,
}

pub(super) const R0: u8 = 0;
pub(super) const R1: u8 = 1;
pub(super) const R2: u8 = 2;
pub(super) const R3: u8 = 3;
pub(super) const R4: u8 = 4;
pub(super) const R6: u8 = 6;
pub(super) const R7: u8 = 7;
pub(super) const R8: u8 = 8;
pub(super) const R9: u8 = 9;
pub(super) const FP: u8 = 10;

pub(super) const W: u8 = 0x00;
pub(super) const H: u8 = 0x08;
pub(super) const B: u8 = 0x10;
pub(super) const DW: u8 = 0x18;

pub(super) const JEQ: u8 = 0x10;
pub(super) const JGT: u8 = 0x20;
pub(super) const JNE: u8 = 0x50;
pub(super) const JSGT: u8 = 0x60;
pub(super) const JLE: u8 = 0xb0;

pub(super) const ADD: u8 = 0x00;
pub(super) const SUB: u8 = 0x10;
pub(super) const OR: u8 = 0x40;
pub(super) const AND: u8 = 0x50;
pub(super) const LSH: u8 = 0x60;
pub(super) const RSH: u8 = 0x70;
pub(super) const XOR: u8 = 0xa0;

/// Helper functions (their numbers in `enum bpf_func_id`).
pub(super) const LOOKUP: i32 = 1;
pub(super) const UPDATE: i32 = 2;
pub(super) const DELETE: i32 = 3;
pub(super) const KTIME: i32 = 5;
pub(super) const CURRENT_TASK: i32 = 158;
pub(super) const PID_TGID: i32 = 14;
pub(super) const COMM: i32 = 16;
pub(super) const UNDER_CGROUP: i32 = 37;
pub(super) const READ_USER: i32 = 112;
pub(super) const READ_KERNEL: i32 = 113;
pub(super) const READ_USER_STR: i32 = 114;
pub(super) const CPU: i32 = 8;
pub(super) const OUTPUT: i32 = 130;
pub(super) const RESERVE: i32 = 131;
pub(super) const SUBMIT: i32 = 132;
/// bpf_ringbuf_submit's and bpf_ringbuf_output's flag waking the reader now (a new
/// task or program, whose descriptors and working directory ioprobe looks at while
/// they are still there; a CPU's ring a quarter fuller).
pub(super) const WAKE_NOW: i32 = 2;

#[derive(Default)]
pub(super) struct Asm {
    pub(super) code: Vec<Insn>,
    pub(super) labels: HashMap<String, usize>,
    pub(super) jumps: Vec<(usize, String)>,
}

impl Asm {
    pub(super) fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.code.push(Insn {
            code,
            regs: dst | (src << 4),
            off,
            imm,
        });
    }
    pub(super) fn mov(&mut self, dst: u8, src: u8) {
        self.op(0x07 | 0xb0 | 0x08, dst, src, 0, 0);
    }
    /// dst = (u32) src: a pointer's low half as a number (privileged programs only).
    pub(super) fn mov32(&mut self, dst: u8, src: u8) {
        self.op(0x04 | 0xb0 | 0x08, dst, src, 0, 0);
    }
    pub(super) fn movi(&mut self, dst: u8, imm: i32) {
        self.op(0x07 | 0xb0, dst, 0, 0, imm);
    }
    pub(super) fn alui(&mut self, op: u8, dst: u8, imm: i32) {
        self.op(0x07 | op, dst, 0, 0, imm);
    }
    /// dst op= src (64 bits).
    pub(super) fn alu(&mut self, op: u8, dst: u8, src: u8) {
        self.op(0x07 | op | 0x08, dst, src, 0, 0);
    }
    /// lock *(u64 *)(dst + off) op= src, for op [`OR`], [`AND`] or [`ADD`] (no fetch).
    pub(super) fn atomic(&mut self, op: u8, dst: u8, off: i16, src: u8) {
        self.op(0x03 | 0xc0 | DW, dst, src, off, i32::from(op));
    }
    /// src = atomically (fetch and add): *(u64 *)(dst + off), which becomes it plus
    /// src; fully ordered.
    pub(super) fn fetch_add(&mut self, dst: u8, off: i16, src: u8) {
        self.op(0x03 | 0xc0 | DW, dst, src, off, i32::from(ADD) | 0x01);
    }
    /// *(u64 *)(dst + off) = src, seen by another CPU after every store before it
    /// (a release): a plain store where the JIT keeps stores in order (x86-64), an
    /// exchange (fully ordered; src becomes the old value) elsewhere.
    pub(super) fn publish(&mut self, dst: u8, off: i16, src: u8) {
        if cfg!(target_arch = "x86_64") {
            self.stx(DW, dst, off, src);
        } else {
            self.op(0x03 | 0xc0 | DW, dst, src, off, 0xe0 | 0x01);
        }
    }
    /// dst = *(size *)(src + off)
    pub(super) fn ldx(&mut self, size: u8, dst: u8, src: u8, off: i16) {
        self.op(0x01 | 0x60 | size, dst, src, off, 0);
    }
    /// *(size *)(dst + off) = src
    pub(super) fn stx(&mut self, size: u8, dst: u8, off: i16, src: u8) {
        self.op(0x03 | 0x60 | size, dst, src, off, 0);
    }
    /// *(size *)(dst + off) = imm
    pub(super) fn st(&mut self, size: u8, dst: u8, off: i16, imm: i32) {
        self.op(0x02 | 0x60 | size, dst, 0, off, imm);
    }
    /// dst = the map `fd` (a 16-byte instruction).
    pub(super) fn map(&mut self, dst: u8, fd: i32) {
        self.op(0x18, dst, 1, 0, fd);
        self.op(0, 0, 0, 0, 0);
    }
    /// dst = fp + off (a pointer to the stack).
    pub(super) fn stack(&mut self, dst: u8, off: i32) {
        self.mov(dst, FP);
        self.alui(ADD, dst, off);
    }
    pub(super) fn call(&mut self, helper: i32) {
        self.op(0x05 | 0x80, 0, 0, 0, helper);
    }
    pub(super) fn exit(&mut self) {
        self.op(0x05 | 0x90, 0, 0, 0, 0);
    }
    pub(super) fn jmpi(&mut self, op: u8, dst: u8, imm: i32, to: &str) {
        self.jumps.push((self.code.len(), to.to_string()));
        self.op(0x05 | op, dst, 0, 0, imm);
    }
    pub(super) fn jmp(&mut self, op: u8, dst: u8, src: u8, to: &str) {
        self.jumps.push((self.code.len(), to.to_string()));
        self.op(0x05 | op | 0x08, dst, src, 0, 0);
    }
    pub(super) fn ja(&mut self, to: &str) {
        self.jumps.push((self.code.len(), to.to_string()));
        self.op(0x05, 0, 0, 0, 0);
    }
    pub(super) fn label(&mut self, name: &str) {
        self.labels.insert(name.to_string(), self.code.len());
    }
    pub(super) fn finish(mut self) -> Vec<Insn> {
        for (at, to) in std::mem::take(&mut self.jumps) {
            let target = self.labels[&to];
            self.code[at].off = (target as i64 - at as i64 - 1) as i16;
        }
        self.code
    }
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
}
