//! The checks before a trace: the report's destination can be written, the program
//! can be traced, and a program that cannot be started is told as a shell tells it.

use crate::error::Exit;
use crate::sys::trace::procfs;
use anyhow::Result;

/// Opens `--output` for writing before the command runs (created or truncated), so
/// that a report that could not be written is known before anything happens.
/// /dev/full, which takes the open but no byte, is refused too.
pub(super) fn open_output(path: &std::path::Path) -> Result<std::fs::File> {
    use std::os::unix::fs::FileTypeExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| {
            Exit::with(
                1,
                format!(
                    "trace: cannot write the report to {}: {} (the command was not run)",
                    path.display(),
                    crate::error::plain(&e)
                ),
            )
        })?;
    let m = f.metadata()?;
    if m.file_type().is_char_device() && std::os::unix::fs::MetadataExt::rdev(&m) == libc_full_dev()
    {
        return Err(Exit::with(
            1,
            format!(
                "trace: cannot write the report to {}: No space left on device (the command was not run)",
                path.display()
            ),
        )
        .into());
    }
    Ok(f)
}

/// /dev/full's device number (1, 7), as Linux numbers it.
fn libc_full_dev() -> u64 {
    std::fs::metadata("/dev/full").map_or(u64::MAX, |m| std::os::unix::fs::MetadataExt::rdev(&m))
}

/// Refuses, before it runs, a program whose calls could not be traced: a 32-bit
/// (i386 or x32) ELF, whose system calls the filter's architecture check lets through
/// unseen. Its report would otherwise say "no calls".
pub(super) fn preflight_program(prog: &std::ffi::OsStr) -> Result<()> {
    let Some(path) = crate::sys::trace::program_path(prog) else {
        return Ok(()); // the spawn says "command not found"
    };
    if procfs::elf32(&path) {
        return Err(Exit::with(
            1,
            format!(
                "trace: {} is a 32-bit program: its system calls cannot be traced (64-bit programs only); it was not run",
                path.display()
            ),
        )
        .into());
    }
    Ok(())
}

/// CMD not found: 127, as a shell gives; found but not executable (permission, format,
/// a directory, a missing `#!` interpreter): 126; tracing refused: 1, naming the
/// cause.
pub(super) fn spawn_error(prog: &std::ffi::OsStr, e: std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let why = crate::error::plain(&e);
    let shown = prog.to_string_lossy();
    let cause = why.strip_prefix("execvp: ").unwrap_or(&why).to_string();
    if why.starts_with("execvp") {
        let found = crate::sys::trace::program_path(prog);
        return match (e.kind(), found) {
            (ErrorKind::NotFound, None) => {
                Exit::with(127, format!("{shown}: command not found")).into()
            }
            (ErrorKind::NotFound, Some(path)) => {
                // The file is there: what is missing is its interpreter.
                let first = std::fs::read(&path).unwrap_or_default();
                let line = first.split(|&b| b == b'\n').next().unwrap_or_default();
                match line.strip_prefix(b"#!") {
                    Some(interp) => {
                        let interp = String::from_utf8_lossy(interp);
                        let interp = interp.split_whitespace().next().unwrap_or("").to_string();
                        Exit::with(
                            126,
                            format!("{shown}: bad interpreter {interp}: No such file or directory"),
                        )
                        .into()
                    }
                    None => Exit::with(
                        127,
                        format!("{shown}: cannot execute: required file not found"),
                    )
                    .into(),
                }
            }
            _ => Exit::with(126, format!("{shown}: {cause}")).into(),
        };
    }
    match e.kind() {
        ErrorKind::Unsupported => anyhow::anyhow!("{why}"),
        ErrorKind::ResourceBusy => anyhow::anyhow!("cannot trace {shown}: {why}"),
        _ => {
            let hint = if procfs::yama_scope() == Some(3) {
                " (Yama's ptrace_scope is 3: no process may attach with ptrace, until a reboot; --tracer ebpf, as root, does not use ptrace)"
            } else if why.contains("seccomp") || why.contains("prctl") {
                " (a seccomp policy or container forbids installing a filter)"
            } else {
                " (a seccomp policy, a container or Yama forbids ptrace)"
            };
            anyhow::anyhow!("cannot trace {shown}: {why}{hint}")
        }
    }
}
