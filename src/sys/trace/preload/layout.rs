// The preload ring's layout, the one place both languages take it from: ioprobe's
// `ring.rs` includes this file as Rust, and build.rs includes it too and hands each
// constant to the C compiler (`-DRING_SLOTS=…`), where `preload.c` checks its structs
// against them with `_Static_assert`. Plain constants only: build.rs reads them.

/// The layout's version, in the head page; the library refuses another.
pub const RING_VERSION: u64 = 1;
/// Slots in the ring.
pub const RING_SLOTS: u64 = 65536;
/// Bytes per slot.
pub const RING_SLOT: u64 = 256;
/// Bytes of the head page, before the first slot.
pub const RING_HEAD: u64 = 4096;
/// Offsets in the head page: the version, the slot count, the producers' next slot
/// and the first slot ioprobe has not freed.
pub const HEAD_VERSION: u64 = 0;
pub const HEAD_SLOTS: u64 = 8;
pub const HEAD_NEXT: u64 = 64;
pub const HEAD_DONE: u64 = 128;
/// Offsets in a slot: its state (u32), the task (i32), the call's number (i32), the
/// path's length with its NUL (u32), the result (i64), six arguments (u64), the path.
pub const SLOT_STATE: u64 = 0;
pub const SLOT_TID: u64 = 4;
pub const SLOT_NR: u64 = 8;
pub const SLOT_PATH_LEN: u64 = 12;
pub const SLOT_RET: u64 = 16;
pub const SLOT_ARGS: u64 = 24;
pub const SLOT_PATH: u64 = 72;
/// A slot's states: reserved, in the call, returned, read by ioprobe.
pub const STATE_RESERVED: u64 = 0;
pub const STATE_IN_CALL: u64 = 1;
pub const STATE_RETURNED: u64 = 2;
pub const STATE_READ: u64 = 3;
