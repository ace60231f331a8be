//! `--system-tools`: cp, `cat src > dst` and `dd bs=…` run as child processes under the
//! same protocol as the in-process methods. ioprobe creates the destination for cat and
//! dd (O_EXCL, 0600, their standard output); cp creates its own in the scratch
//! directory. In `fsync` mode ioprobe fsyncs the destination after the tool exits,
//! inside the timing. The child's rusage comes from wait4(2).

use super::variant::{Method, Variant};
use crate::names::Named;
use crate::sys::calls;
use crate::sys::copyfile;
use crate::sys::rusage::RawRusage;
use anyhow::{Context as _, Result, bail};
use rustix::fs::OFlags;
use std::ffi::{CStr, OsStr};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};

/// Whether `tool` can be started here (found on PATH).
pub fn available(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// Runs the tool; returns (role, rusage of the child).
pub fn run(
    v: &Variant,
    src: &CStr,
    dst: &CStr,
    size: u64,
    fsync: bool,
) -> Result<(String, RawRusage)> {
    let src_os = OsStr::from_bytes(src.to_bytes());
    let dst_os = OsStr::from_bytes(dst.to_bytes());
    let mut cmd;
    match v.method {
        Method::Cp => {
            cmd = Command::new("cp");
            cmd.arg("--").arg(src_os).arg(dst_os).stdout(Stdio::null());
        }
        Method::Cat | Method::Dd => {
            let out = calls::open(
                dst,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                0o600,
            )?;
            if v.method == Method::Cat {
                cmd = Command::new("cat");
                cmd.arg("--").arg(src_os);
            } else {
                cmd = Command::new("dd");
                let mut iff = std::ffi::OsString::from("if=");
                iff.push(src_os);
                cmd.arg(iff)
                    .arg(format!("bs={}", v.buffer.unwrap_or(1 << 20)))
                    .arg("status=none");
            }
            cmd.stdout(Stdio::from(std::fs::File::from(out)));
        }
        _ => bail!("{} is not a system tool", v.method.name()),
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", v.method.name()))?;
    drop(cmd); // closes ioprobe's copy of the destination descriptor
    let (status, rusage) = copyfile::wait_with_rusage(child.id())?;
    if status != 0 {
        let mut msg = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut msg);
        }
        bail!(
            "{} exited with status {status}: {}",
            v.method.name(),
            msg.trim()
        );
    }
    let got = calls::stat_size(dst)? as u64;
    if got != size {
        bail!("{} wrote {got} bytes, expected {size}", v.method.name());
    }
    if fsync {
        let fd = calls::open(dst, OFlags::WRONLY | OFlags::CLOEXEC, 0)?;
        copyfile::fsync(&fd)?;
    }
    Ok((v.method.name().to_string(), rusage))
}
