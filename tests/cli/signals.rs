//! Signals and closed pipes: scratch removed, the right exit status.

use crate::*;

fn interrupt_with(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_measuring(
        &["run", "--thorough", "--sample-time", "100ms"],
        dir.path(),
        Stdio::piped(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    assert_empty(dir.path());
}

#[test]
fn sigint_removes_scratch_and_exits_130() {
    interrupt_with("-INT");
}

#[test]
fn sigterm_removes_scratch_and_exits_130() {
    interrupt_with("-TERM");
}

#[test]
fn closed_stdout_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(BIN)
        .args([
            "syscalls",
            "--case",
            "null",
            "--sample-time",
            "1ms",
            "--budget",
            "10ms",
            "--no-save",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("error"));
    assert_empty(dir.path());
}
