//! The ptrace requests, waitpid, the syscall information at a stop, and a stopped
//! task's registers.

use std::io;

pub(in crate::sys::trace) fn os(what: &str) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

pub(in crate::sys::trace) fn ptrace(
    req: libc::c_uint,
    pid: i32,
    addr: usize,
    data: usize,
) -> io::Result<libc::c_long> {
    // SAFETY: the requests used here take an integer or a pointer to memory this module
    // owns and sized for the request (PTRACE_GET_SYSCALL_INFO, PTRACE_GETEVENTMSG,
    // PTRACE_GETSIGINFO); `pid` is a tracee of this process.
    let r = unsafe {
        libc::ptrace(
            req,
            pid,
            addr as *mut libc::c_void,
            data as *mut libc::c_void,
        )
    };
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// waitpid(pid, flags) until it answers (EINTR retried): the status.
pub(in crate::sys::trace) fn wait_status(pid: i32, flags: libc::c_int) -> io::Result<libc::c_int> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r != -1 {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e).map_err(os("waitpid"));
        }
    }
}

/// The ptrace stop's syscall information: (op, nr, args, ret).
pub(in crate::sys::trace) fn syscall_info(tid: i32) -> io::Result<(u8, u64, [u64; 6], i64)> {
    // SAFETY: ptrace_syscall_info is plain data; all-zero is a valid value.
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::ptrace_syscall_info>();
    ptrace(
        libc::PTRACE_GET_SYSCALL_INFO,
        tid,
        size,
        &mut info as *mut _ as usize,
    )
    .map_err(os("ptrace(PTRACE_GET_SYSCALL_INFO)"))?;
    // SAFETY: `op` says which member of the union the kernel filled.
    let (nr, args, ret) = unsafe {
        match info.op {
            libc::PTRACE_SYSCALL_INFO_SECCOMP => (info.u.seccomp.nr, info.u.seccomp.args, 0),
            libc::PTRACE_SYSCALL_INFO_ENTRY => (info.u.entry.nr, info.u.entry.args, 0),
            libc::PTRACE_SYSCALL_INFO_EXIT => (0, [0; 6], info.u.exit.sval),
            _ => (0, [0; 6], 0),
        }
    };
    Ok((info.op, nr, args, ret))
}

/// Stopped task `tid`'s general registers.
pub(in crate::sys::trace) fn regs(tid: i32) -> io::Result<libc::user_regs_struct> {
    // SAFETY: user_regs_struct is plain data; all-zero is a valid value.
    let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    regset(tid, libc::PTRACE_GETREGSET, &mut r)?;
    Ok(r)
}

/// Sets stopped task `tid`'s general registers.
pub(in crate::sys::trace) fn set_regs(tid: i32, r: &libc::user_regs_struct) -> io::Result<()> {
    let mut copy = *r;
    regset(tid, libc::PTRACE_SETREGSET, &mut copy)
}

/// PTRACE_GETREGSET or PTRACE_SETREGSET of the general registers, through `r`.
pub(in crate::sys::trace) fn regset(
    tid: i32,
    request: libc::c_uint,
    r: &mut libc::user_regs_struct,
) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: r as *mut _ as *mut libc::c_void,
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    ptrace(
        request,
        tid,
        libc::NT_PRSTATUS as usize,
        &mut iov as *mut _ as usize,
    )
    .map(|_| ())
}

/// The stack pointer and the register holding an execve's (`at`: execveat's)
/// environment array.
#[cfg(target_arch = "x86_64")]
pub(in crate::sys::trace) fn stack_and_envp(
    r: &mut libc::user_regs_struct,
    at: bool,
) -> (u64, &mut u64) {
    (r.rsp, if at { &mut r.r10 } else { &mut r.rdx })
}

/// The instruction pointer, and the register a call's result is returned in.
#[cfg(target_arch = "x86_64")]
pub(in crate::sys::trace) fn ip_and_result(r: &libc::user_regs_struct) -> (u64, i64) {
    (r.rip, r.rax as i64)
}

#[cfg(target_arch = "aarch64")]
pub(in crate::sys::trace) fn ip_and_result(r: &libc::user_regs_struct) -> (u64, i64) {
    (r.pc, r.regs[0] as i64)
}

#[cfg(target_arch = "aarch64")]
pub(in crate::sys::trace) fn stack_and_envp(
    r: &mut libc::user_regs_struct,
    at: bool,
) -> (u64, &mut u64) {
    (r.sp, &mut r.regs[if at { 3 } else { 2 }])
}
