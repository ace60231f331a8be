//! `ioprobe trace -- CMD`: exact counts for programs of known behaviour (against
//! strace -c -f where strace is installed), multi-process pipelines, exit statuses,
//! findings, bad commands.

use crate::*;
use std::os::unix::fs::PermissionsExt;

/// The tracers this machine can run: ptrace always, preload where ioprobe was built
/// with its library (Linux with glibc), eBPF where ioprobe may load BPF programs
/// (root, or CAP_BPF and CAP_PERFMON); elsewhere the eBPF part of a test says
/// "skipped: needs CAP_BPF".
pub(crate) fn tracers() -> Vec<&'static str> {
    static FOUND: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let runs = |via| {
                traced_via(dir.path(), &["true"], via)
                    .output()
                    .is_ok_and(|o| o.status.success())
            };
            let mut v = vec!["ptrace"];
            if runs("preload") {
                v.push("preload");
            } else {
                eprintln!("skipped the preload tracer's part of the trace tests: no library");
            }
            if runs("ebpf") {
                v.push("ebpf");
            } else {
                eprintln!("skipped the eBPF tracer's part of the trace tests: needs CAP_BPF");
            }
            v
        })
        .clone()
}

/// Traces `cmd`, run in `dir`, priced with the fixture's figures; (report JSON, exit
/// code, stderr).
fn trace(dir: &Path, cmd: &[&str]) -> (Value, i32, String) {
    trace_via(dir, cmd, "auto")
}

/// [`trace`] with `--tracer via`.
pub(crate) fn trace_via(dir: &Path, cmd: &[&str], via: &str) -> (Value, i32, String) {
    let out = dir.join("trace.json");
    let a = Command::new(BIN)
        .args([
            "trace",
            "--tracer",
            via,
            "--json",
            "--figures",
            FIXTURE_A,
            "--store",
        ])
        .arg(dir.join("none.db"))
        .arg("--output")
        .arg(&out)
        .arg("--")
        .args(cmd)
        .current_dir(dir)
        .assert();
    let o = a.get_output();
    let code = o.status.code().unwrap_or(-1);
    let doc = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (doc, code, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The profile's row for `op` on the target whose name is `name`.
fn row<'a>(doc: &'a Value, name: &str, op: &str) -> &'a Value {
    let t = doc["targets"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no target {name}"));
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["target"] == t && r["op"] == op)
        .unwrap_or_else(|| panic!("no {op} on {name}"))
}

/// `strace -f -c` of the same command: calls per system call, None without strace.
pub(crate) fn strace_counts(
    dir: &Path,
    cmd: &[&str],
) -> Option<std::collections::BTreeMap<String, u64>> {
    let out = dir.join("strace.txt");
    let ok = std::process::Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .args(cmd)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?
        .success();
    assert!(ok, "strace failed");
    let text = std::fs::read_to_string(out).ok()?;
    Some(
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // % time, seconds, usecs/call, calls, [errors,] syscall
                let calls = f.get(3)?.parse().ok()?;
                Some((f.last()?.to_string(), calls))
            })
            .collect(),
    )
}

#[test]
fn dd_reads_and_writes_are_counted_exactly_and_small_reads_are_found() {
    for via in tracers() {
        dd_reads_and_writes_are_counted_exactly_and_small_reads_are_found_via(via);
    }
}

fn dd_reads_and_writes_are_counted_exactly_and_small_reads_are_found_via(via: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::write(&input, vec![7u8; 256 * 1024 + 100]).unwrap();
    let path = input.canonicalize().unwrap().display().to_string();
    let cmd = ["dd", &format!("if={path}"), "of=/dev/null", "bs=512"];
    let (doc, code, stderr) = trace_via(dir.path(), &cmd, via);
    assert_eq!(code, 0, "{stderr}");
    // 512 full blocks, one of 100 bytes, then end of file.
    let read = row(&doc, &path, "read");
    assert_eq!(read["calls"], 514);
    assert_eq!(read["bytes"], 256 * 1024 + 100);
    assert_eq!(
        (read["short"].as_u64(), read["eof"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(read["sizes"]["512"], 514);
    assert_eq!(read["random"], 0);
    let write = row(&doc, "/dev/null", "write");
    assert_eq!(
        (write["calls"].as_u64(), write["bytes"].as_u64()),
        (Some(513), Some(256 * 1024 + 100))
    );
    // The finding names a larger read size, priced with the figures given.
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "small_requests" && f["target"].as_str().unwrap().starts_with(&path))
        .unwrap_or_else(|| panic!("no small-read finding: {doc}"));
    let text = f["text"].as_str().unwrap();
    assert!(
        text.contains("with 512 B reads") && text.contains("with 64 KiB reads"),
        "{text}"
    );
    assert!(f["saving_s"].as_f64().unwrap() > 0.0);
    // Every traced call is counted, as strace counts them.
    if let Some(s) = strace_counts(dir.path(), &cmd) {
        for call in ["read", "write", "openat", "close", "mmap", "fstat", "lseek"] {
            assert_eq!(
                doc["counts"][call].as_u64().unwrap_or(0),
                s.get(call).copied().unwrap_or(0),
                "{call}: ioprobe {} vs strace {s:?}",
                doc["counts"][call]
            );
        }
    }
}

#[test]
fn the_programs_own_work_per_call_is_priced_where_calls_are_timed() {
    for via in tracers() {
        the_programs_own_work_per_call_is_priced_where_calls_are_timed_via(via);
    }
}

/// Under eBPF a sample of calls is timed: dd's 8,192 small reads get their loop's own
/// work priced with a range, inside the run's work; the other tracers split the run's
/// user CPU over its calls.
fn the_programs_own_work_per_call_is_priced_where_calls_are_timed_via(via: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::write(&input, vec![7u8; 4 << 20]).unwrap();
    let path = input.canonicalize().unwrap().display().to_string();
    let cmd = ["dd", &format!("if={path}"), "of=/dev/null", "bs=512"];
    let (doc, code, stderr) = trace_via(dir.path(), &cmd, via);
    assert_eq!(code, 0, "{stderr}");
    let found = doc["findings"].as_array().unwrap();
    let f = found
        .iter()
        .find(|f| f["kind"] == "small_requests")
        .unwrap_or_else(|| panic!("no small-read finding: {doc}"));
    let work = doc["work"]["estimate_s"].as_f64().unwrap();
    let total: f64 = found.iter().filter_map(|f| f["saving_s"].as_f64()).sum();
    assert!(
        total <= work * (1.0 + 1e-9),
        "savings {total} > work {work}"
    );
    let own = &f["own_work"];
    assert!(own.is_object(), "{via}: no own work priced: {f}");
    let (lo, mid, hi) = (
        f["saving_low_s"].as_f64().unwrap(),
        f["saving_s"].as_f64().unwrap(),
        f["saving_high_s"].as_f64().unwrap(),
    );
    assert!(lo <= mid && mid <= hi, "{lo} {mid} {hi}");
    if via != "ebpf" {
        // Not timed: the run's user CPU split over its calls.
        assert_eq!(own["method"], "user_cpu_split", "{f}");
        return;
    }
    assert_eq!(own["method"], "timed", "{f}");
    assert_eq!(own["calls"].as_u64(), Some(8192 * 2 + 1), "{own}");
    assert!(own["calls_removed"].as_u64().unwrap() > 16_000, "{own}");
    assert!(doc["work"]["tracer_cost"]["per_call_s"].as_f64().unwrap() > 0.0);
    assert!(doc["work"]["own_work_s"].as_f64().unwrap() >= own["saving_s"].as_f64().unwrap());
}

#[test]
fn a_shell_pipeline_is_followed_across_processes() {
    for via in tracers() {
        a_shell_pipeline_is_followed_across_processes_via(via);
    }
}

fn a_shell_pipeline_is_followed_across_processes_via(via: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::write(&input, vec![1u8; 300_000]).unwrap();
    let path = input.canonicalize().unwrap().display().to_string();
    let script = format!("cat {path} | head -c 1000 > /dev/null");
    let (doc, code, stderr) = trace_via(dir.path(), &["sh", "-c", &script], via);
    assert_eq!(code, 0, "{stderr}");
    let comms: Vec<&str> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["comm"].as_str().unwrap())
        .collect();
    assert!(comms.iter().any(|c| c.ends_with("cat")), "{comms:?}");
    assert!(comms.iter().any(|c| c.ends_with("head")), "{comms:?}");
    // cat read the file; head read from a pipe that cat wrote to.
    let targets = doc["targets"].as_array().unwrap();
    let pipe = targets
        .iter()
        .position(|t| t["kind"] == "pipe")
        .expect("a pipe target");
    let ops: Vec<&str> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["target"] == pipe)
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert!(
        ops.contains(&"read") && ops.contains(&"write"),
        "{via}: {ops:?} {doc}"
    );
    assert!(row(&doc, &path, "read")["bytes"].as_u64().unwrap() >= 1000);
}

#[test]
fn the_exit_status_passes_through() {
    let dir = tempfile::tempdir().unwrap();
    let (doc, code, _) = trace(dir.path(), &["sh", "-c", "exit 7"]);
    assert_eq!(code, 7);
    assert_eq!(doc["exit"]["code"], 7);
    // A signal: ioprobe ends by the same one once the report is written (as strace
    // and GNU timeout do: a script sees the signal, not a status), leaving no core.
    for (sig, n) in [("TERM", 15), ("SEGV", 11), ("KILL", 9), ("USR1", 10)] {
        let kill = format!("cat /dev/null; kill -{sig} $$");
        let (doc, code, _) = trace(dir.path(), &["sh", "-c", &kill]);
        assert_eq!(code, -1, "{sig}: ioprobe exited with a status");
        assert_eq!(doc["exit"]["signal"], n);
        assert!(doc["counts"]["openat"].as_u64().unwrap_or(0) > 0);
        let status = traced(dir.path(), &["sh", "-c", &kill])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(n),
            "{sig}"
        );
        assert!(
            !std::os::unix::process::ExitStatusExt::core_dumped(&status),
            "{sig}"
        );
    }
    let mut left = entries(dir.path());
    left.retain(|f| f.starts_with("core"));
    assert_eq!(left, Vec::<String>::new(), "a core file of ioprobe");
}

#[test]
fn a_program_without_io_gets_no_findings() {
    let dir = tempfile::tempdir().unwrap();
    let (doc, code, _) = trace(
        dir.path(),
        &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0, "{doc}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["kind"], "trace");
}

/// User CPU time under trace is corrected by a calibration of what tracing adds per
/// call, made when the command made enough calls for it to matter, and said.
#[test]
fn user_cpu_is_estimated_without_tracing_overhead() {
    let dir = tempfile::tempdir().unwrap();
    let many = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=1500"];
    let (doc, code, _) = trace_via(dir.path(), &many, "ptrace");
    assert_eq!(code, 0);
    let w = &doc["work"];
    let c = &w["user_correction"];
    // 3,000 traced calls and dd's start's: the calibration makes as many.
    let calls = c["calibration_calls"].as_u64().unwrap();
    let counted: u64 = doc["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(calls >= 3000 && calls == counted, "{w}");
    assert_eq!(c["pooled_calls"].as_u64(), Some(calls), "{w}");
    let (user, traced) = (
        w["user_cpu_s"].as_f64().unwrap(),
        c["user_cpu_traced_s"].as_f64().unwrap(),
    );
    let per = c["per_call_user_s"].as_f64().unwrap();
    assert!(per >= 0.0 && user <= traced, "{w}");
    assert!(
        (user - (traced - per * calls as f64).max(0.0)).abs() < 1e-9,
        "{w}"
    );
    let text = Command::new(BIN)
        .args([
            "trace",
            "--tracer",
            "ptrace",
            "--figures",
            FIXTURE_A,
            "--store",
        ])
        .arg(dir.path().join("none.db"))
        .arg("--")
        .args(many)
        .output()
        .unwrap();
    // The report is wrapped to the terminal's width: compare it with spaces folded.
    let text = String::from_utf8_lossy(&text.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("user CPU without tracing estimated:")
            && text.contains("per traced call, the extra user time tracing adds to a call here"),
        "{text}"
    );
    // Calibrations are saved and pooled: the next trace's figure rests on both.
    let (doc, _, _) = trace_via(dir.path(), &many, "ptrace");
    let c = &doc["work"]["user_correction"];
    assert_eq!(c["calibration_calls"].as_u64(), Some(calls), "{c}");
    // (the text run between them calibrated too)
    assert_eq!(c["pooled_calls"].as_u64(), Some(3 * calls), "{c}");
    // A few calls: not worth calibrating, and the report says it used the traced time.
    let (doc, _, _) = trace(dir.path(), &["true"]);
    assert_eq!(doc["work"]["user_correction"]["calibration_calls"], 0);
    assert_eq!(
        doc["work"]["user_cpu_s"],
        doc["work"]["user_correction"]["user_cpu_traced_s"]
    );
}

#[test]
fn a_command_that_cannot_run_gets_one_line_and_the_shells_status() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "not a program").unwrap();
    let script = dir.path().join("script");
    std::fs::write(&script, "#!/no/such/interpreter\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // As bash gives them: 127 not found, 126 found but not executable.
    for (cmd, needle, code) in [
        ("no-such-command-here", "command not found", 127),
        (plain.to_str().unwrap(), "Permission denied", 126),
        (
            script.to_str().unwrap(),
            "bad interpreter /no/such/interpreter",
            126,
        ),
        ("/", "Permission denied", 126),
    ] {
        let out = Command::new(BIN)
            .args(["trace", "--figures", FIXTURE_A, "--store"])
            .arg(dir.path().join("none.db"))
            .args(["--", cmd])
            .assert()
            .code(code);
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
    // No command at all is a usage error.
    Command::new(BIN).arg("trace").assert().code(2);
}

#[test]
fn the_text_report_goes_to_stderr_and_the_command_keeps_its_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["trace", "--figures", FIXTURE_A, "--store"])
        .arg(dir.path().join("none.db"))
        .args(["--", "sh", "-c", "echo hello"])
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stdout), "hello\n");
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("ioprobe trace: `sh -c 'echo hello'` exited with status 0"),
        "{err}"
    );
    assert!(
        err.contains("priced with this host's read (run 0), syscalls (run 0)")
            || err.contains("priced with"),
        "{err}"
    );
}

#[test]
fn sigterm_reaches_every_traced_process_and_the_report_is_still_written() {
    for via in tracers() {
        sigterm_reaches_every_traced_process_and_the_report_is_still_written_via(via);
    }
}

fn sigterm_reaches_every_traced_process_and_the_report_is_still_written_via(via: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.txt");
    // A shell whose child outlives it unless the signal reaches the child too.
    let mut child = std::process::Command::new(BIN)
        .args(["trace", "--tracer", via, "--figures", FIXTURE_A, "--store"])
        .arg(dir.path().join("none.db"))
        .arg("--output")
        .arg(&out)
        .args(["--", "sh", "-c", "sleep 41.5; echo after"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the sleep runs (traced), then stop ioprobe.
    let started = Instant::now();
    let sleeping = || {
        processes_mentioning("41.5", 0)
            .into_iter()
            .filter(|p| p.contains("(sleep)"))
            .count()
    };
    while sleeping() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "sleep never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "{via}");
    // The command died by SIGTERM, and ioprobe by the same signal after it.
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15),
        "{via}"
    );
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(report.contains("was killed by signal 15"), "{report}");
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert_eq!(stdout, "", "the shell went on after its child");
    assert!(
        processes_mentioning("41.5", 0).is_empty(),
        "a traced process was left behind"
    );
}

/// `ioprobe trace` with the fixture's figures and the report in `dir/report`, as a
/// std Command (to be run through a shell or spawned).
fn traced(dir: &Path, cmd: &[&str]) -> std::process::Command {
    traced_via(dir, cmd, "auto")
}

/// [`traced`] with `--tracer via`.
fn traced_via(dir: &Path, cmd: &[&str], via: &str) -> std::process::Command {
    let mut c = std::process::Command::new(BIN);
    c.args(["trace", "--tracer", via, "--figures", FIXTURE_A, "--store"])
        .arg(dir.join("none.db"))
        .arg("--output")
        .arg(dir.join("report"))
        .arg("--")
        .args(cmd)
        .current_dir(dir);
    c
}

/// The command's signal dispositions and mask are the ones it gets untraced: SIGPIPE
/// not ignored, nothing blocked or ignored that ioprobe added.
#[test]
fn the_command_starts_with_the_signal_state_it_would_have_untraced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cmd = ["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"];
    let plain = std::process::Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .unwrap();
    let under = traced(d, &cmd).output().unwrap();
    assert!(under.status.success(), "{under:?}");
    assert_eq!(
        String::from_utf8_lossy(&under.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    // Signals ioprobe is started with ignored (a shell's background job: SIGINT and
    // SIGQUIT; nohup: SIGHUP) stay ignored for the command, as untraced. ioprobe's own
    // SIGINT handler used to reset them to the default at exec (found when the suite
    // ran as a background job).
    let ignoring = |inner: std::process::Command| {
        let mut c = std::process::Command::new("sh");
        let argv: Vec<String> = std::iter::once(inner.get_program())
            .chain(inner.get_args())
            .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', r"'\''")))
            .collect();
        c.arg("-c")
            .arg(format!("trap '' INT QUIT HUP; exec {}", argv.join(" ")))
            .current_dir(d);
        c
    };
    let mut plain = std::process::Command::new("sh");
    plain.args(["-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"]);
    let plain = ignoring(plain).output().unwrap();
    let under = ignoring(traced(d, &cmd)).output().unwrap();
    assert!(under.status.success(), "{under:?}");
    assert!(
        String::from_utf8_lossy(&plain.stdout).contains("SigIgn:\t0000000"),
        "{plain:?}"
    );
    assert_eq!(
        String::from_utf8_lossy(&under.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    // SIGPIPE kills `yes` quietly, as untraced.
    let out = traced(d, &["sh", "-c", "yes | head -1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "y\n");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A closed standard descriptor stays closed: echo fails as it does untraced.
#[test]
fn closed_stdio_stays_closed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let report = d.join("report");
    let run = |prefix: &str| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec >&-; exec {prefix} /bin/echo hi"))
            .current_dir(d)
            .output()
            .unwrap()
    };
    let plain = run("");
    let under = run(&format!(
        "'{BIN}' trace --figures '{FIXTURE_A}' --store '{}' --output '{}' --",
        d.join("none.db").display(),
        report.display()
    ));
    assert_eq!(plain.status.code(), Some(1));
    assert_eq!(under.status.code(), plain.status.code(), "{under:?}");
    assert!(
        String::from_utf8_lossy(&under.stderr).contains("echo: write error: Bad file descriptor")
    );
    // stdin closed too: `cat` sees it closed.
    let under = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec <&-; exec '{BIN}' trace --figures '{FIXTURE_A}' --store '{}' --output '{}' -- cat",
            d.join("none.db").display(),
            report.display()
        ))
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(under.status.code(), Some(1), "{under:?}");
    // /dev/null open read-write (Python's subprocess.DEVNULL, `1<>/dev/null`) is a
    // descriptor like any other: the command writes to it and succeeds.
    let under = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 1<>/dev/null 0<>/dev/null; exec '{BIN}' trace --figures '{FIXTURE_A}' --store '{}' --output '{}' -- sh -c 'echo hi && cat'",
            d.join("none.db").display(),
            report.display()
        ))
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(under.status.code(), Some(0), "{under:?}");
}

/// SIGSTOP stops a traced command and SIGCONT resumes it, as untraced.
#[test]
fn stop_and_continue_work_as_untraced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child = traced(
        d,
        &[
            "sh",
            "-c",
            "echo $$ > pid; while :; do echo x >> grow; sleep 0.02; done",
        ],
    )
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    let pid = loop {
        if let Ok(p) = std::fs::read_to_string(d.join("pid"))
            && p.ends_with('\n')
        {
            break p.trim().to_string();
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let size = || std::fs::metadata(d.join("grow")).map_or(0, |m| m.len());
    let kill = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
    };
    std::thread::sleep(Duration::from_millis(200));
    kill("-STOP");
    std::thread::sleep(Duration::from_millis(300));
    let stopped = size();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(size(), stopped, "the command ran on after SIGSTOP");
    kill("-CONT");
    let t1 = Instant::now();
    while size() == stopped {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "SIGCONT did not resume it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    kill("-TERM");
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15)
    );
}

/// ioprobe killed with SIGKILL takes the command with it (PTRACE_O_EXITKILL): it does
/// not run on with every traced call failing. Killed before it has seized the command,
/// it leaves no stopped child behind either.
#[test]
fn a_killed_ioprobe_leaves_no_child_at_any_moment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Kill it at moments spread over its start: before, during and after the fork.
    for delay_us in (0..4000).step_by(200) {
        let mut child = traced(d, &["sh", "-c", "exec sleep 42.75"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(delay_us));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let t1 = Instant::now();
    while !processes_mentioning("42.75", 0).is_empty() {
        assert!(
            t1.elapsed() < Duration::from_secs(5),
            "left behind: {:?}",
            processes_mentioning("42.75", 0)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// ioprobe killed with SIGKILL takes the command with it (PTRACE_O_EXITKILL): it does
/// not run on with every traced call failing.
#[test]
fn the_command_does_not_outlive_a_killed_ioprobe() {
    for via in tracers() {
        the_command_does_not_outlive_a_killed_ioprobe_via(via);
    }
}

fn the_command_does_not_outlive_a_killed_ioprobe_via(via: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child = traced_via(d, &["sh", "-c", "echo $$ > pid; exec sleep 42.25"], via)
        .spawn()
        .unwrap();
    // ioprobe's own command line mentions 42.25 too: wait for the sleep itself, which
    // runs traced.
    let sleeping = || {
        processes_mentioning("42.25", 0)
            .iter()
            .any(|p| p.contains("(sleep)"))
    };
    let t0 = Instant::now();
    while !sleeping() {
        assert!(t0.elapsed() < Duration::from_secs(20), "never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let t1 = Instant::now();
    while !processes_mentioning("42.25", 0).is_empty() {
        assert!(
            t1.elapsed() < Duration::from_secs(5),
            "the command outlived ioprobe"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A report that could not be written is found before the command runs: the command
/// is not run, and the status is 1.
#[test]
fn a_bad_output_stops_before_the_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for bad in [
        d.join("no/such/dir/report"),
        d.to_path_buf(),
        "/dev/full".into(),
    ] {
        let out = std::process::Command::new(BIN)
            .args(["trace", "--figures", FIXTURE_A, "--store"])
            .arg(d.join("none.db"))
            .arg("--output")
            .arg(&bad)
            .args(["--", "touch", "made"])
            .current_dir(d)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("not run"), "{err}");
        assert!(!d.join("made").exists(), "{bad:?}: the command ran");
    }
}

/// No colour into --output, even when asked for on the terminal.
#[test]
fn no_colour_goes_into_the_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = std::process::Command::new(BIN)
        .args([
            "--color",
            "always",
            "trace",
            "--figures",
            FIXTURE_A,
            "--store",
        ])
        .arg(d.join("none.db"))
        .arg("--output")
        .arg(d.join("report"))
        .args([
            "--",
            "sh",
            "-c",
            "for i in 1 2 3 4 5 6 7 8; do echo $i; done > f",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report = std::fs::read_to_string(d.join("report")).unwrap();
    assert!(!report.contains('\x1b'), "{report}");
}

/// Every call family beyond read/write (socket data, AIO with its iocbs, hints and
/// space, locks, ioctl, the namespace, metadata) is traced, attributed to its target,
/// and counted as strace -f -c counts it.
#[test]
fn every_io_call_family_is_seen_and_counted_as_strace_counts_it() {
    for via in tracers() {
        every_io_call_family_is_seen_and_counted_as_strace_counts_it_via(via);
    }
}

/// The trace_calls fixture's bytes, each on its target: the AIO read and io_uring's
/// requests where the tracer reads their memory in place, socket bytes everywhere.
fn check_family_bytes(doc: &Value, via: &str) {
    // Attributed: the AIO read to the file with its 4 KiB, socket bytes to the socket.
    let rows = doc["rows"].as_array().unwrap();
    let bytes = |op: &str| -> u64 {
        rows.iter()
            .filter(|r| r["op"] == op)
            .map(|r| r["bytes"].as_u64().unwrap_or(0))
            .sum()
    };
    if via != "ebpf" {
        // Stopped at (preload stops there too): their memory is read in place.
        assert_eq!(bytes("aio pread"), 4096, "{rows:?}");
        // io_uring's requests, read from the submission ring, each on its file.
        assert_eq!(bytes("uring read"), 4096, "{rows:?}");
        assert_eq!(bytes("uring write"), 100, "{rows:?}");
        assert_eq!(bytes("sendmmsg"), 60);
    } else {
        // The eBPF tracer copies paths, iovecs and msghdrs, not AIO iocbs, io_uring
        // rings or mmsghdr arrays: it says so rather than count them as nothing.
        let notes = doc["notes"].to_string();
        for call in ["io_submit", "io_uring_enter", "sendmmsg"] {
            assert!(
                notes.contains("the eBPF tracer copies") && notes.contains(call),
                "{call}: {notes}"
            );
        }
    }
    assert_eq!(bytes("sendto"), 300);
    assert_eq!(bytes("sendmsg"), 30);
}

fn every_io_call_family_is_seen_and_counted_as_strace_counts_it_via(via: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = d.join("trace_calls");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trace_calls.c");
    if !gcc(&["-O1", "-o"], &prog, src) {
        eprintln!("skipped: no gcc to build the fixture program");
        return;
    }
    let run_dir = d.join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let p = prog.to_str().unwrap();
    let (doc, code, err) = trace_via(&run_dir, &[p], via);
    assert_eq!(code, 0, "{err}");
    let counts = doc["counts"].as_object().unwrap();
    for (name, n) in [
        ("sendto", 3),
        ("recvfrom", 3),
        ("sendmsg", 1),
        ("recvmsg", 1),
        ("sendmmsg", 1),
        ("recvmmsg", 1),
        ("io_submit", 1),
        ("io_getevents", 1),
        ("io_uring_setup", 1),
        ("io_uring_enter", 1),
        ("fadvise64", 1),
        ("readahead", 1),
        ("fallocate", 1),
        ("ftruncate", 1),
        ("truncate", 1),
        ("sync", 1),
        ("syncfs", 1),
        ("flock", 2),
        ("fchmod", 1),
        ("fchown", 1),
        ("fsetxattr", 1),
        ("fgetxattr", 1),
        ("flistxattr", 1),
        ("fremovexattr", 1),
        ("fstatfs", 1),
        ("statfs", 1),
        ("mkdir", 1),
        ("rename", 1),
        ("link", 1),
        ("symlink", 1),
        ("readlink", 1),
        ("chmod", 1),
        ("utimensat", 1),
        ("setxattr", 1),
        ("getxattr", 1),
        ("listxattr", 1),
        ("removexattr", 1),
        ("unlink", 3),
        ("rmdir", 1),
    ] {
        assert_eq!(
            counts.get(name).and_then(Value::as_u64),
            Some(n),
            "{via}: {name}: {counts:?}"
        );
    }
    assert!(counts.get("ioctl").and_then(Value::as_u64).unwrap_or(0) >= 1);
    assert!(counts.get("fcntl").and_then(Value::as_u64).unwrap_or(0) >= 1);
    check_family_bytes(&doc, via);
    // And each count is strace's.
    let strace_dir = d.join("strace");
    std::fs::create_dir(&strace_dir).unwrap();
    if let Some(st) = strace_counts(&strace_dir, &[p]) {
        for (name, n) in counts {
            if let Some(&s) = st.get(name) {
                assert_eq!(n.as_u64(), Some(s), "{name}: ioprobe {n}, strace {s}");
            }
        }
    }
}

/// A setuid program runs without its privileges under ptrace, and a traced program's
/// own ptrace fails: the report says each in a note.
#[test]
fn a_setuid_program_and_a_ptrace_call_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let suid = d.join("suid-true");
    std::fs::copy("/bin/true", &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    // Under eBPF it keeps them: no note.
    if tracers().contains(&"ebpf") {
        let (doc, code, err) = trace_via(d, &[suid.to_str().unwrap()], "ebpf");
        assert_eq!(code, 0, "{err}");
        assert!(
            !doc["notes"].to_string().contains("setuid"),
            "{}",
            doc["notes"]
        );
    }
    for via in tracers().into_iter().filter(|&v| v != "ebpf") {
        let (doc, code, err) = trace_via(d, &[suid.to_str().unwrap()], via);
        assert_eq!(code, 0, "{err}");
        let notes = doc["notes"].to_string();
        assert!(
            notes.contains(
                "which is setuid or setgid: under ptrace the kernel runs it without those privileges"
            ),
            "{via}: {notes}"
        );
    }
    let src = d.join("pt.c");
    std::fs::write(
        &src,
        "#include <sys/ptrace.h>\nint main(void){return ptrace(PTRACE_TRACEME, 0, 0, 0) == -1 ? 3 : 0;}\n",
    )
    .unwrap();
    let prog = d.join("pt");
    if !gcc(&["-o"], &prog, &src) {
        eprintln!("skipped the ptrace half: no gcc");
        return;
    }
    if tracers().contains(&"ebpf") {
        // Under eBPF the program has no tracer: its own ptrace works, unremarked.
        let (doc, code, _) = trace_via(d, &[prog.to_str().unwrap()], "ebpf");
        assert_eq!(code, 0);
        assert!(
            !doc["notes"].to_string().contains("ptrace"),
            "{}",
            doc["notes"]
        );
    }
    for via in tracers().into_iter().filter(|&v| v != "ebpf") {
        let (doc, code, _) = trace_via(d, &[prog.to_str().unwrap()], via);
        // PTRACE_TRACEME fails: the process already has its tracer.
        assert_eq!(code, 3, "{via}");
        assert!(
            doc["notes"]
                .to_string()
                .contains("called ptrace, which fails under ioprobe trace"),
            "{via}: {}",
            doc["notes"]
        );
    }
}

/// A 32-bit program's calls pass the filter's architecture check unseen: as CMD it is
/// refused before it runs; run by a traced 64-bit program, the report names it.
#[test]
fn a_32_bit_program_is_refused_or_named_never_silently_empty() {
    for via in tracers() {
        a_32_bit_program_is_refused_or_named_never_silently_empty_via(via);
    }
}

fn a_32_bit_program_is_refused_or_named_never_silently_empty_via(via: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("m32.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\nint main(void){FILE*f=fopen(\"ran\",\"w\");return f?0:1;}\n",
    )
    .unwrap();
    let built = std::process::Command::new("gcc")
        .args(["-m32", "-o"])
        .arg(d.join("m32"))
        .arg(&src)
        .stderr(Stdio::null())
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("skipped: gcc -m32 cannot build here (gcc-multilib missing)");
        return;
    }
    let out = traced_via(d, &["./m32"], via).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a 32-bit program") && err.contains("not run"),
        "{err}"
    );
    assert!(!d.join("ran").exists(), "the 32-bit program ran");
    let out = traced_via(d, &["sh", "-c", "./m32"], via).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report = std::fs::read_to_string(d.join("report")).unwrap();
    assert!(report.contains("ran the 32-bit program"), "{report}");
}

/// A name is looked for in PATH as execvp looks for it: what is checked before the run
/// (a 32-bit program, a static one for preload) is the file that then runs, not a
/// non-executable file of that name earlier in PATH.
#[test]
fn the_program_checked_before_the_run_is_the_one_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let decoys = d.join("decoys");
    std::fs::create_dir(&decoys).unwrap();
    // A 32-bit ELF header that may not be executed: execvp passes over it.
    let mut elf32 = b"\x7fELF\x01\x01\x01".to_vec();
    elf32.resize(64, 0);
    std::fs::write(decoys.join("true"), elf32).unwrap();
    std::fs::set_permissions(decoys.join("true"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = format!("{}:{}", decoys.display(), std::env::var("PATH").unwrap());
    assert!(
        std::process::Command::new("true")
            .env("PATH", &path)
            .status()
            .unwrap()
            .success(),
        "untraced, the decoy is passed over"
    );
    for via in tracers() {
        let out = traced_via(d, &["true"], via)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{via}: {out:?}");
        let report = std::fs::read_to_string(d.join("report")).unwrap();
        assert!(
            report.contains("`true` exited with status 0"),
            "{via}: {report}"
        );
    }
}

/// The same finding on many targets is one line with a count and a total; the JSON
/// keeps each.
#[test]
fn findings_of_one_kind_on_many_targets_are_grouped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..30 {
        std::fs::write(d.join(format!("f{i:02}")), vec![b'x'; 100_000]).unwrap();
    }
    let cmd = [
        "sh",
        "-c",
        "for f in f*; do dd if=$f of=/dev/null bs=512 2>/dev/null; done",
    ];
    let out = traced(d, &cmd).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let report = std::fs::read_to_string(d.join("report")).unwrap();
    let findings = report
        .split("findings, largest saving first:")
        .nth(1)
        .unwrap_or("");
    let lines = findings
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert!(lines <= 5, "{report}");
    assert!(
        report.contains("findings of one kind (small_requests) on 30 targets"),
        "{report}"
    );
    assert!(
        report.contains("findings in all; --json lists each"),
        "{report}"
    );
    let (doc, code, err) = trace(d, &cmd);
    assert_eq!(code, 0, "{err}");
    let small = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "small_requests")
        .count();
    assert_eq!(
        small, 30,
        "notes {} · findings {}",
        doc["notes"], doc["findings"]
    );
}

/// A file named through `/proc/self` (or `/dev/fd`, `/dev/stdin`) is the traced
/// process's: a tracer resolving the name later, in ioprobe, must not make it ioprobe's.
#[test]
fn a_path_through_proc_self_names_the_traced_process_not_ioprobe() {
    for via in tracers() {
        let d = tempfile::tempdir().unwrap();
        let (doc, code, err) = trace_via(d.path(), &["cat", "/proc/self/stat"], via);
        assert_eq!(code, 0, "{via}: {err}");
        let pid = doc["processes"][0]["pid"].as_i64().unwrap();
        let names: Vec<&str> = doc["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            names.contains(&format!("/proc/{pid}/stat").as_str()),
            "{via}: cat ({pid}) read its own stat: {names:?}"
        );
    }
}

/// Past a few thousand distinct files, the profile folds further files into one row
/// per directory and says so: memory and the JSON stay bounded, the counts exact.
#[test]
fn many_files_are_folded_into_per_directory_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("many")).unwrap();
    for i in 0..4200 {
        std::fs::write(d.join(format!("many/f{i:04}")), "x").unwrap();
    }
    let (doc, code, err) = trace(
        d,
        &["sh", "-c", "find many -type f -exec cat {} + > /dev/null"],
    );
    assert_eq!(code, 0, "{err}");
    let targets = doc["targets"].as_array().unwrap();
    assert!(targets.len() <= 4097, "{}", targets.len());
    let folded = targets
        .iter()
        .position(|t| {
            t["name"]
                .as_str()
                .unwrap()
                .ends_with("many/* (more files, folded)")
        })
        .unwrap_or_else(|| {
            panic!(
                "no folded row among {} targets ({}; notes {})",
                targets.len(),
                doc["work"]["tracer"],
                doc["notes"]
            )
        });
    let notes = doc["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("more files were folded")),
        "{notes:?}"
    );
    // Every file's open is still counted, the folded ones on their directory's row.
    let opened: u64 = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["op"] == "openat" && r["target"] == folded)
        .map(|r| r["calls"].as_u64().unwrap())
        .sum();
    assert!(opened >= 100, "{opened}");
    assert!(doc["counts"]["openat"].as_u64().unwrap() >= 4200);
}

/// A scratch directory with an empty store in it (so that traces keep their times).
fn with_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    std::fs::write(&store, "").unwrap();
    (dir, store)
}

/// `ioprobe trace --json` of `cmd` with `extra` flags and the store `store`, behind
/// `around` (a command ioprobe runs under, or none): the tracer part of the report.
fn tracer_of(d: &Path, store: &Path, around: &[&str], cmd: &[&str], extra: &[&str]) -> Value {
    let out = d.join("t.json");
    let mut c = Command::new(around.first().copied().unwrap_or(BIN));
    if !around.is_empty() {
        c.args(&around[1..]).arg(BIN);
    }
    let o = c
        .args(["trace", "--json", "--figures", FIXTURE_A, "--store"])
        .arg(store)
        .args(extra)
        .arg("--output")
        .arg(&out)
        .arg("--")
        .args(cmd)
        .current_dir(d)
        // cargo's library path has `true`'s loader look for libc in each of its
        // directories (129 calls in place of 19).
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    doc["work"]["tracer"].clone()
}

/// Traces at once into one store each keep their command beside it: eight different
/// commands traced together, ten rounds (and a loaded machine: the eight share two
/// CPUs), and the book holds all eight every round. It held 1 of the 8 when each trace
/// read the book, added itself and wrote it back over the others.
#[test]
fn traces_at_once_keep_every_command_beside_the_store() {
    let (dir, store) = with_store();
    let d = dir.path();
    let kept = d.join("s.db-tracers");
    for round in 0..10 {
        let children: Vec<std::process::Child> = (0..8)
            .map(|i| {
                let out = d.join(format!("t{i}.json"));
                std::process::Command::new(BIN)
                    .args(["trace", "--json", "--figures", FIXTURE_A, "--store"])
                    .arg(&store)
                    .arg("--output")
                    .arg(&out)
                    .args(["--", "true", &format!("command-{i}")])
                    .current_dir(d)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{o:?}");
        }
        let book: Value = serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
        let n = book.as_object().unwrap().len();
        assert_eq!(n, 8, "round {round}: {n} of 8 commands kept");
    }
}

/// `--tracer auto` weighs ptrace for a command by its traces kept beside the store: a
/// command of few calls is tried under it once, then traced with whichever ran faster
/// here; one of many calls is never tried; a named tracer and `--no-save` keep out.
#[test]
fn auto_tries_ptrace_for_a_command_of_few_calls_and_keeps_the_faster() {
    let (dir, store) = with_store();
    let d = dir.path();
    let run = |cmd: &[&str], extra: &[&str]| tracer_of(d, &store, &[], cmd, extra);
    let kept = d.join("s.db-tracers");
    run(&["true"], &["--no-save"]);
    assert!(!kept.exists(), "--no-save kept a trace");
    let first = run(&["true"], &[]);
    assert!(first["picked"].is_null(), "{first}");
    assert!(kept.exists());
    let usual = first["path"].as_str().unwrap().to_string();
    let second = run(&["true"], &[]);
    if usual == "ptrace" {
        // ptrace is what auto takes here anyway.
        assert!(second["picked"].is_null(), "{second}");
        return;
    }
    let book = std::fs::read_to_string(&kept).unwrap();
    assert_eq!(second["path"], "ptrace", "{second} {book}");
    let why = second["picked"].as_str().unwrap();
    assert!(
        why.contains("trying it") && why.contains("traced calls"),
        "{why}"
    );
    // Then the faster of the two here, saying so when it is ptrace.
    for _ in 0..3 {
        let t = run(&["true"], &[]);
        match t["picked"].as_str() {
            Some(why) => {
                assert_eq!(t["path"], "ptrace", "{t}");
                assert!(why.contains("under ptrace"), "{why}");
            }
            None => assert_eq!(t["path"], usual.as_str(), "{t}"),
        }
    }
    // Named, the tracer is the one named.
    let named = run(&["true"], &["--tracer", usual.as_str()]);
    assert_eq!(named["path"], usual.as_str(), "{named}");
    assert!(named["picked"].is_null(), "{named}");
    // Many calls: never tried.
    let many = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=200"];
    let a = run(&many, &[]);
    let b = run(&many, &[]);
    assert_eq!(
        (&a["path"], &b["path"]),
        (&first["path"], &first["path"]),
        "{b}"
    );
    assert!(b["picked"].is_null(), "{b}");
}

/// Where ptrace is refused (here a tracer around ioprobe), auto's try of it falls back
/// to eBPF before the program runs.
#[test]
fn auto_falls_back_from_a_refused_ptrace_to_its_usual_tracer() {
    let (dir, store) = with_store();
    let d = dir.path();
    let first = tracer_of(d, &store, &[], &["true"], &[]);
    if first["path"] != "ebpf" {
        eprintln!("skipped: without eBPF, auto's usual tracer is refused under strace too");
        return;
    }
    let strace = ["timeout", "60", "strace", "-f", "-o", "/dev/null"];
    let t = tracer_of(d, &store, &strace, &["true"], &[]);
    assert_eq!(t["path"], "ebpf", "{t}");
    assert!(t["picked"].is_null(), "{t}");
}

/// Without the privilege eBPF needs, `--tracer auto` falls back to ptrace and says why,
/// and `--tracer ebpf` refuses before CMD runs. (As root, the privilege is dropped with
/// setpriv for the test; elsewhere it is simply missing.)
#[test]
fn without_cap_bpf_auto_falls_back_to_ptrace_and_ebpf_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let unprivileged = |args: &[&str]| {
        let mut c = if root {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(BIN);
            c
        } else {
            std::process::Command::new(BIN)
        };
        c.args(["trace", "--figures", FIXTURE_A, "--store"])
            .arg(d.join("none.db"))
            .args(args)
            .current_dir(d)
            .output()
            .unwrap()
    };
    if root
        && std::process::Command::new("setpriv")
            .arg("--help")
            .output()
            .is_err()
    {
        eprintln!("skipped: no setpriv to drop root's privileges");
        return;
    }
    let out = unprivileged(&["--tracer", "ebpf", "--", "touch", "ran"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the eBPF tracer cannot run here") && err.contains("was not run"),
        "{err}"
    );
    assert!(!d.join("ran").exists(), "the command ran");
    let json = d.join("t.json");
    let out = unprivileged(&["--json", "--output", json.to_str().unwrap(), "--", "true"]);
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let t = &doc["work"]["tracer"];
    // Without eBPF, auto takes preload for a dynamically linked program.
    let next = if tracers().contains(&"preload") {
        "preload"
    } else {
        "ptrace"
    };
    assert_eq!(t["path"], next, "{t}");
    assert!(
        t["ebpf_unavailable"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{t}"
    );
}

/// Under preload the program sees the environment it was given (the library puts
/// LD_PRELOAD back and removes its own variable before main), and a statically
/// linked program, which LD_PRELOAD cannot reach, is refused by `--tracer preload`
/// before it runs and traced with plain ptrace by `auto`.
#[test]
fn preload_leaves_the_environment_as_given_and_refuses_a_static_program() {
    if !preload_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for was in [None, Some("/nonexistent-lib-for-ioprobe-test.so")] {
        let env = |traced: bool| {
            let mut c = if traced {
                let mut c = traced_via(d, &["env"], "preload");
                c.env_remove("LD_PRELOAD");
                c
            } else {
                let mut c = std::process::Command::new("env");
                c.current_dir(d);
                c
            };
            if let Some(w) = was {
                c.env("LD_PRELOAD", w);
            }
            let o = c.output().unwrap();
            assert!(o.status.success(), "{o:?}");
            String::from_utf8(o.stdout).unwrap()
        };
        let (plain, traced) = (env(false), env(true));
        assert!(!traced.contains("IOPROBE_TRACE"), "{traced}");
        assert_eq!(
            traced.lines().find(|l| l.starts_with("LD_PRELOAD=")),
            plain.lines().find(|l| l.starts_with("LD_PRELOAD=")),
            "{was:?}"
        );
    }
    // A program the command starts gets the library too (its exec is given it), and
    // sees its environment as given as well.
    let plain = std::process::Command::new("sh")
        .args(["-c", "env"])
        .current_dir(d)
        .output()
        .unwrap();
    let traced = traced_via(d, &["sh", "-c", "env"], "preload")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&traced.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    std::fs::write(d.join("big"), vec![7u8; 1 << 20]).unwrap();
    let (doc, code, err) = trace_via(d, &["sh", "-c", "cat big > /dev/null; true"], "preload");
    assert_eq!(code, 0, "{err}");
    let unstopped = doc["work"]["tracer"]["unstopped_calls"].as_u64().unwrap();
    // cat's 8 reads of 128 KiB, its writes, its open and close at least.
    assert!(unstopped >= 16, "{unstopped}: {}", doc["work"]["tracer"]);
    let src = d.join("st.c");
    std::fs::write(&src, "int main(void){return 0;}\n").unwrap();
    let prog = d.join("st");
    if !gcc(&["-static", "-o"], &prog, &src) {
        eprintln!("skipped the static half: no gcc with a static libc");
        return;
    }
    let p = prog.to_str().unwrap();
    let out = traced_via(d, &[p], "preload").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("statically linked") && err.contains("was not run"),
        "{err}"
    );
    let (doc, code, err) = trace_via(d, &[p], "auto");
    assert_eq!(code, 0, "{err}");
    let t = &doc["work"]["tracer"];
    if t["path"] != "ebpf" {
        assert_eq!(t["path"], "ptrace", "{t}");
        assert!(
            t["preload_unavailable"]
                .as_str()
                .is_some_and(|s| s.contains("statically linked")),
            "{t}"
        );
    }
}

/// Preload's ring is written by every process that forked from the command without
/// exec (each keeps the library): J children at once, together past the ring's
/// 65,536 slots (the overflow goes the traced way), each call counted once on its
/// target, in a loop of 50 runs with J from 1 to 8.
#[test]
fn preload_counts_forked_writers_exactly_when_they_share_and_overflow_the_ring() {
    if !preload_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("forks.c");
    std::fs::write(
        &src,
        r#"#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int j = atoi(argv[1]), n = atoi(argv[2]);
    for (int c = 0; c < j; c++) {
        if (fork() == 0) {
            char b[16];
            int z = open("/dev/zero", O_RDONLY), w = open("/dev/null", O_WRONLY);
            for (int i = 0; i < n; i++)
                if (read(z, b, sizeof b) != sizeof b || write(w, b, sizeof b) != sizeof b)
                    _exit(1);
            close(z);
            close(w);
            _exit(0);
        }
    }
    int bad = 0, st;
    while (wait(&st) > 0)
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    return bad;
}
"#,
    )
    .unwrap();
    let prog = d.join("forks");
    if !gcc(&["-O1", "-o"], &prog, &src) {
        eprintln!("skipped: no gcc");
        return;
    }
    let n: u64 = 10_000;
    for run in 0..50 {
        let j: u64 = [1, 2, 4, 8][run % 4];
        let (doc, code, err) = trace_via(
            d,
            &[prog.to_str().unwrap(), &j.to_string(), &n.to_string()],
            "preload",
        );
        assert_eq!(code, 0, "run {run}: {err}");
        assert_eq!(doc["work"]["tracer"]["lost"], 0, "run {run}");
        // Most calls took the library's way, not a stop.
        let unstopped = doc["work"]["tracer"]["unstopped_calls"].as_u64().unwrap();
        assert!(unstopped >= j * n, "run {run}, j {j}: {unstopped}");
        let on = |name: &str, op: &str| calls_on(&doc, op, |n| n == name).0;
        assert_eq!(on("/dev/zero", "read"), j * n, "run {run}, j {j}");
        assert_eq!(on("/dev/null", "write"), j * n, "run {run}, j {j}");
        assert_eq!(on("/dev/zero", "openat"), j, "run {run}, j {j}");
        assert_eq!(on("/dev/null", "close"), j, "run {run}, j {j}");
    }
}

/// Preload keeps each call on the process that made it when a child shares its
/// parent's memory (vfork: the library's per-process state is its parent's) or
/// copies it (fork), and counts as strace does.
#[test]
fn preload_attributes_vfork_and_fork_childrens_calls_to_them() {
    if !preload_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = d.join("vf");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trace_vfork.c");
    if !gcc(&["-O1", "-o"], &prog, src) {
        eprintln!("skipped: no gcc");
        return;
    }
    std::fs::write(d.join("in"), vec![1u8; 4096]).unwrap();
    let input = d.join("in").canonicalize().unwrap().display().to_string();
    let p = prog.to_str().unwrap();
    for run in 0..10 {
        let (doc, code, err) = trace_via(d, &[p], "preload");
        assert_eq!(code, 0, "run {run}: {err}");
        let targets = doc["targets"].as_array().unwrap();
        let rows = doc["rows"].as_array().unwrap();
        // Per process: (opens of /dev/zero, reads of in, closes of in).
        let mut per: std::collections::BTreeMap<u64, (u64, u64, u64)> = Default::default();
        for r in rows {
            let name = &targets[r["target"].as_u64().unwrap() as usize]["name"];
            let e = per.entry(r["pid"].as_u64().unwrap()).or_default();
            let n = r["calls"].as_u64().unwrap();
            match (name.as_str().unwrap(), r["op"].as_str().unwrap()) {
                ("/dev/zero", "openat") => e.0 += n,
                (i, "read") if i == input => e.1 += n,
                (i, "close") if i == input => e.2 += n,
                _ => {}
            }
        }
        let mut seen: Vec<(u64, u64, u64)> = per.values().copied().collect();
        seen.sort();
        // The parent: 2 reads, 1 close; three vfork children: an open of
        // /dev/zero and a close of in each; the fork child: 1 read.
        assert_eq!(
            seen,
            vec![(0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 0, 1), (1, 0, 1)],
            "run {run}: {per:?}"
        );
    }
    if let Some(st) = strace_counts(d, &[p]) {
        let (doc, _, _) = trace_via(d, &[p], "preload");
        for (call, n) in doc["counts"].as_object().unwrap() {
            assert_eq!(n.as_u64(), st.get(call).copied(), "{call}: {st:?}");
        }
    }
}

/// Builds `src` into `prog` with gcc and `flags` (before `-o`); false where gcc is
/// missing or fails (the caller says what it skips).
pub(crate) fn gcc(flags: &[&str], prog: &Path, src: impl AsRef<std::ffi::OsStr>) -> bool {
    std::process::Command::new("gcc")
        .args(flags)
        .arg(prog)
        .arg(src.as_ref())
        .status()
        .is_ok_and(|s| s.success())
}

/// (calls, bytes) of `op` on the targets whose name `is` takes, summed over processes.
pub(crate) fn calls_on(doc: &Value, op: &str, is: impl Fn(&str) -> bool) -> (u64, u64) {
    let targets = doc["targets"].as_array().unwrap();
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["op"] == op
                && r["target"]
                    .as_u64()
                    .and_then(|t| targets.get(t as usize))
                    .is_some_and(|t| t["name"].as_str().is_some_and(&is))
        })
        .fold((0, 0), |(c, b), r| {
            let n = |k: &str| r[k].as_u64().unwrap_or(0);
            (c + n("calls"), b + n("bytes"))
        })
}

/// Whether this build can run the preload tracer; else says the test is skipped.
fn preload_here() -> bool {
    let here = tracers().contains(&"preload");
    if !here {
        eprintln!("skipped: no preload library in this build");
    }
    here
}

/// tar -b 1 over 50 files: many small reads feed one archive in 512 B records. The
/// savings of all findings add up to at most the run's work, no call is claimed twice,
/// and the largest finding is about the archive's writes with the reads that feed them
/// (before: 50 findings each claiming all of the archive's writes).
#[test]
fn many_sources_into_one_output_are_priced_once_and_name_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("src")).unwrap();
    for i in 0..50u32 {
        let data: Vec<u8> = (0..64 * 1024).map(|j| (i * 31 + j) as u8).collect();
        std::fs::write(d.join(format!("src/f{i:02}")), data).unwrap();
    }
    let cmd = ["tar", "-cf", "out.tar", "-b", "1", "src"];
    let (doc, code, err) = trace(d, &cmd);
    assert_eq!(code, 0, "{err}");
    let found = doc["findings"].as_array().unwrap();
    let work = doc["work"]["estimate_s"].as_f64().unwrap();
    let saved: f64 = found.iter().filter_map(|f| f["saving_s"].as_f64()).sum();
    assert!(
        saved <= work,
        "savings {saved} s > work {work} s: {found:?}"
    );
    let largest = &found[0];
    assert_eq!(largest["kind"], "relay", "{found:?}");
    assert!(
        largest["target"].as_str().unwrap().contains("out.tar"),
        "{largest}"
    );
    let text = largest["text"].as_str().unwrap();
    assert!(
        text.contains("tar copies 50 files into") && text.contains("in 512 B records"),
        "{text}"
    );
    // No source file has a finding of its own about the same reads.
    assert!(
        !found
            .iter()
            .any(|f| f["kind"] == "small_requests"
                && f["target"].as_str().unwrap().contains("/src/f")),
        "{found:?}"
    );
}

/// Imports the fixture run, as this host's, into the store under `data`.
fn import_as_this_host(dir: &Path, data: &Path, name: &str) {
    let host = Command::new(BIN)
        .args(["sysinfo", "--json"])
        .output()
        .unwrap();
    let env: Value = serde_json::from_slice(&host.stdout).unwrap();
    let env = env.get("environment").unwrap_or(&env).clone();
    let mut run: Value = serde_json::from_str(include_str!("../fixtures/run-a.json")).unwrap();
    run["environment"]["hostname"] = env["hostname"].clone();
    let file = dir.join(name);
    std::fs::write(&file, run.to_string()).unwrap();
    Command::new(BIN)
        .env("XDG_DATA_HOME", data)
        .arg("import")
        .arg(&file)
        .assert()
        .success();
}

/// The figures a `trace -- true` priced with, from the store under `data`.
fn priced_with(dir: &Path, data: &Path) -> Value {
    let out = dir.join("t.json");
    Command::new(BIN)
        .env("XDG_DATA_HOME", data)
        .args(["trace", "--tracer", "ptrace", "--json", "--output"])
        .arg(&out)
        .args(["--", "true"])
        .assert()
        .success();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    doc["figures"].clone()
}

#[test]
fn the_figures_are_read_from_their_digest_until_the_runs_they_came_from_change() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    import_as_this_host(d.path(), &data, "a.json");
    let db = data.join("ioprobe/results.db");
    let first = priced_with(d.path(), &data);
    assert!(
        first["read"].as_array().is_some_and(|r| !r.is_empty()),
        "{first}"
    );
    // The first trace kept its figures, under the run they came from.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (source, body): (String, String) = conn
        .query_row("SELECT source, body FROM digests", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(source.ends_with(":1"), "{source}");
    // The next trace reads the digest, not the run: a figure changed in the digest
    // alone is the one it prices with.
    let mut kept: Value = serde_json::from_str(&body).unwrap();
    kept[0]["read"][0][1] = serde_json::json!(123456789.0);
    conn.execute("UPDATE digests SET body = ?1", [kept.to_string()])
        .unwrap();
    let second = priced_with(d.path(), &data);
    assert_eq!(
        second["read"][0][1],
        serde_json::json!(123456789.0),
        "{second}"
    );
    // A new run makes the digest stale: the figures come from the runs again (the
    // fixture's), and a new digest is kept.
    import_as_this_host(d.path(), &data, "b.json");
    let third = priced_with(d.path(), &data);
    assert_eq!(third["read"], first["read"]);
    let source: String = conn
        .query_row("SELECT source FROM digests", [], |r| r.get(0))
        .unwrap();
    assert!(source.ends_with(":2,1"), "{source}");
    // Read from the database while nothing changed the store, the digest is kept
    // beside it as well, and the next trace reads it from there without opening the
    // database: a figure changed in that file alone is the one it prices with.
    let beside = data.join("ioprobe/results.db-digests");
    let fourth = priced_with(d.path(), &data);
    assert_eq!(fourth["read"], first["read"]);
    let mut kept: Value = serde_json::from_str(&std::fs::read_to_string(&beside).unwrap()).unwrap();
    let entry = kept
        .as_object_mut()
        .and_then(|m| m.values_mut().next())
        .expect("one digest kept beside the store");
    assert!(
        entry["source"].as_str().unwrap().ends_with(":2,1"),
        "{entry}"
    );
    let mut body: Value = serde_json::from_str(entry["body"].as_str().unwrap()).unwrap();
    body[0]["read"][0][1] = serde_json::json!(987654321.0);
    entry["body"] = Value::String(body.to_string());
    std::fs::write(&beside, kept.to_string()).unwrap();
    let fifth = priced_with(d.path(), &data);
    assert_eq!(
        fifth["read"][0][1],
        serde_json::json!(987654321.0),
        "{fifth}"
    );
    // Any change to the store makes the file stale: the database's digest again.
    conn.execute(
        "INSERT INTO digests (name, source, body) VALUES ('other', '', '')",
        [],
    )
    .unwrap();
    let sixth = priced_with(d.path(), &data);
    assert_eq!(sixth["read"], first["read"]);
}

/// The saved figures are read while the command starts, and it waits at its exec for
/// them: a store that cannot be read stops the trace before the command's program
/// has run, under every tracer, with one line.
#[test]
fn a_store_that_cannot_be_read_stops_the_command_before_it_runs() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("bad.db");
    std::fs::write(&db, "not a database, not empty either\n".repeat(64)).unwrap();
    for via in tracers() {
        let out = std::process::Command::new(BIN)
            .args(["trace", "--tracer", via, "--store"])
            .arg(&db)
            .args(["--", "touch", "made"])
            .current_dir(d.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{via}: {err}");
        assert_eq!(err.lines().count(), 1, "{via}: {err}");
        assert!(err.contains("not a database"), "{via}: {err}");
        assert!(!d.path().join("made").exists(), "{via}: the command ran");
    }
}

/// With no saved figures the command is stopped at its exec while they are measured,
/// then started again: it runs once, after the measuring, under every tracer.
#[test]
fn a_first_trace_measures_first_and_runs_the_command_once() {
    let d = tempfile::tempdir().unwrap();
    for via in tracers() {
        let db = d.path().join(format!("{via}.db"));
        let out = std::process::Command::new(BIN)
            .args(["trace", "--json", "--tracer", via, "--store"])
            .arg(&db)
            .arg("--output")
            .arg(d.path().join("report.json"))
            .args(["--", "sh", "-c", "echo $$ >> runs; exit 7"])
            .current_dir(d.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(7), "{via}: {err}");
        // The note folds to the width: read it with its lines joined.
        let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("measuring the few cases pricing needs first"),
            "{via}: {err}"
        );
        let runs = std::fs::read_to_string(d.path().join("runs")).unwrap();
        assert_eq!(runs.lines().count(), 1, "{via}: ran {runs:?}");
        std::fs::remove_file(d.path().join("runs")).unwrap();
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(d.path().join("report.json")).unwrap())
                .unwrap();
        assert_eq!(doc["work"]["tracer"]["path"], via, "{doc}");
        assert!(doc["measured_first"].is_number(), "{via}: {doc}");
    }
}

/// The saved figures are read on a thread while the command starts and joined at its
/// exec: again and again under load, under every tracer, each command runs once and
/// is priced with the saved figures.
#[test]
fn saved_figures_read_while_the_command_starts_hold_again_and_again_under_load() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    import_as_this_host(d.path(), &data, "a.json");
    let out = d.path().join("t.json");
    under_load(|| {
        for via in tracers() {
            for round in 1..=50 {
                let o = std::process::Command::new(BIN)
                    .env("XDG_DATA_HOME", &data)
                    .args(["trace", "--json", "--tracer", via, "--output"])
                    .arg(&out)
                    .args(["--", "sh", "-c", "echo $$ >> runs"])
                    .current_dir(d.path())
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{via} round {round}: {o:?}");
                let runs = std::fs::read_to_string(d.path().join("runs")).unwrap();
                assert_eq!(runs.lines().count(), round, "{via} round {round}");
                let doc: Value =
                    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
                assert!(
                    doc["measured_first"].is_null(),
                    "{via} round {round}: {doc}"
                );
                assert!(
                    doc["figures"]["read"]
                        .as_array()
                        .is_some_and(|r| !r.is_empty()),
                    "{via} round {round}: {doc}"
                );
            }
            std::fs::remove_file(d.path().join("runs")).unwrap();
        }
    });
}

/// The report's first line shows the command as a shell would take it back: a word
/// with spaces or shell characters keeps its quotes.
#[test]
fn the_header_quotes_the_command_as_a_shell_would_take_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let status = traced(
        dir.path(),
        &["sh", "-c", "cat /dev/null | wc -c > /dev/null", "it's"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .status()
    .unwrap();
    assert!(status.success());
    let report = std::fs::read_to_string(dir.path().join("report")).unwrap();
    assert!(
        report.starts_with(
            r#"ioprobe trace: `sh -c 'cat /dev/null | wc -c > /dev/null' 'it'\''s'` exited"#
        ),
        "{report}"
    );
}
