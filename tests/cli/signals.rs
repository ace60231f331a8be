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
    assert_killed_by(out.status, signal, &String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    assert_empty(dir.path());
}

#[test]
fn sigint_removes_scratch_and_ends_by_sigint() {
    interrupt_with("-INT");
}

#[test]
fn sigterm_removes_scratch_and_ends_by_sigterm() {
    interrupt_with("-TERM");
}

#[test]
fn sighup_removes_scratch_and_ends_by_sighup() {
    interrupt_with("-HUP");
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

#[test]
fn a_sigbus_on_a_mapped_scratch_file_is_one_line_and_removes_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .env("IOPROBE_FAULT", "sigbus")
        .args([
            "copy",
            "--file-size",
            "1m",
            "--method",
            "mmap-memcpy-munmap",
            "--cache",
            "warm",
            "--durability",
            "none",
        ])
        .args(TINY)
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].starts_with("ioprobe: error: SIGBUS"), "{stderr}");
    assert_empty(dir.path());
}

/// This test process's start time in clock ticks (field 22 of /proc/self/stat).
fn own_start_time() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(19).unwrap().to_string()
}

#[test]
fn scratch_left_by_sigkill_is_reclaimed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_measuring(
        &["read", "--file-size", "8m", "--sample-time", "100ms"],
        dir.path(),
        Stdio::null(),
    );
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: nothing can clean up
    child.wait().unwrap();
    let left = entries(dir.path());
    assert_eq!(
        left.len(),
        1,
        "kill -9 leaves its scratch directory: {left:?}"
    );
    // A directory whose owner is alive (this test process), and one with no owner file:
    // both must stay.
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let live = dir.path().join(".ioprobe-live01");
    std::fs::create_dir(&live).unwrap();
    std::fs::write(
        live.join("owner"),
        format!(
            "ioprobe scratch owner v1\npid {}\nstart {}\nboot {}\n",
            std::process::id(),
            own_start_time(),
            boot.trim()
        ),
    )
    .unwrap();
    let unknown = dir.path().join(".ioprobe-nofile");
    std::fs::create_dir(&unknown).unwrap();
    let out = ioprobe(dir.path())
        .args(["syscalls", "--case", "null"])
        .args(TINY)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains(&format!("removed {}", dir.path().join(&left[0]).display()))
            && stderr.contains(&format!("left behind by ioprobe process {}", child.id())),
        "{stderr}"
    );
    let mut now = entries(dir.path());
    now.sort();
    assert_eq!(now, [".ioprobe-live01", ".ioprobe-nofile"]);
}

#[test]
fn ctrl_c_is_obeyed_within_a_long_sample() {
    // --sample-time 10s: a sample is run in pieces with the flag checked between them.
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_measuring(
        &[
            "syscalls",
            "--case",
            "null",
            "--sample-time",
            "10s",
            "--budget",
            "120s",
        ],
        dir.path(),
        Stdio::piped(),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let (out, took) = interrupt_and_wait(child);
    assert_killed_by(out.status, "-INT", "syscalls");
    // Pieces last 250 ms; 5 s leaves room for a loaded machine, half the sample time.
    assert!(took < Duration::from_secs(5), "exit took {took:?}");
    assert_empty(dir.path());
}

/// Sends SIGINT (as kill(1) does) and waits; returns the output and how long the exit
/// took after the signal.
fn interrupt_and_wait(child: std::process::Child) -> (std::process::Output, Duration) {
    let sent = Instant::now();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    (out, sent.elapsed())
}

/// Bytes free in `dir` (df), for tests that need large scratch files.
fn free_bytes(dir: &Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn ctrl_c_is_obeyed_inside_a_long_copy_pass() {
    // One pass of a 1 GiB copy in 1 KiB reads with fsync lasts seconds (2.6 s here); the
    // copy loop looks at the flag, so the interrupt does not wait for the pass to end
    // (before: 2.6 s to exit, now 0.24 s).
    let dir = tempfile::tempdir().unwrap();
    if free_bytes(dir.path()) < 3 << 30 {
        eprintln!("ctrl_c_is_obeyed_inside_a_long_copy_pass: under 3 GiB free, skipped");
        return;
    }
    let child = spawn_measuring(
        &[
            "copy",
            "--file-size",
            "1g",
            "--method",
            "read-write",
            "--buffers",
            "1k",
            "--cache",
            "cold",
            "--durability",
            "fsync",
        ],
        dir.path(),
        Stdio::piped(),
    );
    // Wait until a pass is under way: its destination exists. Before it, the debug
    // build writes and hashes the 1 GiB source a byte at a time: 30 s on an idle
    // 2-CPU machine, and past the old 60 s bound with the suite's other tests on both
    // CPUs (a failure seen here, not a fault). What this test times is the exit after
    // the interrupt, not the setup.
    let start = Instant::now();
    let scratch = dir.path().join(&entries(dir.path())[0]);
    while !entries(&scratch).iter().any(|e| e.starts_with("copy-dst")) {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no copy pass started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let (out, took) = interrupt_and_wait(child);
    assert_killed_by(out.status, "-INT", &String::from_utf8_lossy(&out.stderr));
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert_empty(dir.path());
}
