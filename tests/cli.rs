//! Integration tests: run the real binary with tiny budgets. They check behaviour (shape
//! of output, errors, exit codes, clean-up), never timings.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ioprobe");
const TINY: [&str; 4] = ["--sample-time", "1ms", "--budget", "30ms"];

/// ioprobe measuring in `dir`, saving nothing (store tests use `with_store`).
fn ioprobe(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--dir")
        .arg(dir)
        .arg("--no-save")
        .env_remove("NO_COLOR");
    c
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn assert_empty(dir: &Path) {
    assert_eq!(
        entries(dir),
        Vec::<String>::new(),
        "scratch left behind in {}",
        dir.display()
    );
}

fn json_of(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("stdout is exactly one JSON document")
}

const CASES: [&str; 12] = [
    "null",
    "open_close",
    "open_write_close",
    "open_read_close",
    "lseek_write",
    "lseek_read",
    "pwrite",
    "pread",
    "mmap_store",
    "mmap_load",
    "fstat",
    "stat",
];

fn check_measurement(m: &Value) {
    for key in [
        "probe",
        "case",
        "params",
        "unit",
        "median",
        "ci95",
        "min",
        "max",
        "mean",
        "stddev",
        "samples",
        "iterations",
        "rusage",
    ] {
        assert!(m.get(key).is_some(), "measurement lacks {key}: {m}");
    }
    let ci = m["ci95"].as_array().unwrap();
    assert_eq!(ci.len(), 2);
    let (lo, hi, med) = (
        ci[0].as_f64().unwrap(),
        ci[1].as_f64().unwrap(),
        m["median"].as_f64().unwrap(),
    );
    assert!(lo <= med && med <= hi, "CI must contain the median: {m}");
    assert!(m["min"].as_f64().unwrap() <= lo && hi <= m["max"].as_f64().unwrap());
    assert!(med > 0.0);
    assert!(m["samples"].as_u64().unwrap() >= 5);
    assert!(m["iterations"].as_u64().unwrap() >= 5);
    let r = &m["rusage"];
    for key in [
        "voluntary_cs",
        "involuntary_cs",
        "user_s",
        "sys_s",
        "minor_faults",
        "major_faults",
        "blocks_in",
        "blocks_out",
        "per",
        "total",
    ] {
        assert!(r.get(key).is_some(), "rusage lacks {key}: {r}");
    }
    assert_eq!(
        m["raw"].as_array().unwrap().len() as u64,
        m["samples"].as_u64().unwrap()
    );
}

#[test]
fn syscalls_json_has_every_contract_case() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .arg("syscalls")
        .args(TINY)
        .arg("--json")
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["tool"]["name"], "ioprobe");
    assert!(v["tool"]["version"].is_string());
    assert!(v["environment"]["kernel"].is_string());
    assert!(v["environment"]["filesystem"]["fs_type"].is_string());
    let ms = v["measurements"].as_array().unwrap();
    let names: Vec<&str> = ms.iter().map(|m| m["case"].as_str().unwrap()).collect();
    assert_eq!(names, CASES);
    for m in ms {
        check_measurement(m);
        assert_eq!(m["probe"], "syscalls");
        assert_eq!(m["unit"], "ns/op");
        assert_eq!(m["params"]["io_size"], 8);
        assert_eq!(m["rusage"]["per"], "op");
    }
    assert!(v["harness"]["overhead"]["timer_ns"].as_f64().unwrap() > 0.0);
    assert_empty(dir.path());
}

#[test]
fn syscalls_case_and_io_size_select() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "syscalls",
            "--case",
            "pread,mmap_load",
            "--io-size",
            "4k",
            "--json",
        ])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 2);
    assert_eq!(ms[0]["case"], "pread");
    assert_eq!(ms[1]["case"], "mmap_load");
    assert_eq!(ms[0]["params"]["io_size"], 4096);
    assert_empty(dir.path());
}

#[test]
fn read_json_every_method_verifies_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "read",
            "--file-size",
            "256k",
            "--block-sizes",
            "4k,64KiB,1m",
            "--method",
            "read,pread,mmap",
            "--json",
        ])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 9);
    for m in ms {
        check_measurement(m);
        assert_eq!(m["unit"], "bytes/s");
        assert_eq!(m["params"]["file_size"], 262_144);
        assert!(
            m["params"]["page_cache"]
                .as_str()
                .unwrap()
                .starts_with("resident 64/64 pages before")
        );
        assert!(m["derived"]["s_per_10gib"].as_f64().unwrap() > 0.0);
        assert!(m["derived"]["fits_in"].is_string());
        assert_eq!(m["rusage"]["per"], "GiB");
    }
    let methods: Vec<&str> = ms
        .iter()
        .map(|m| m["params"]["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "read", "read", "read", "pread", "pread", "pread", "mmap", "mmap", "mmap"
        ]
    );
    let blocks: Vec<u64> = ms
        .iter()
        .take(3)
        .map(|m| m["params"]["block_size"].as_u64().unwrap())
        .collect();
    assert_eq!(blocks, [4096, 65536, 1 << 20]);
    let advice = v["advice"].as_array().unwrap();
    assert!(advice.iter().any(|a| {
        a.as_str()
            .unwrap()
            .contains("the smallest within 5% of the best")
    }));
    assert_empty(dir.path());
}

#[test]
fn run_table_csv_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let small = ["--sample-time", "1ms", "--budget", "10ms"];
    let out = ioprobe(dir.path())
        .arg("run")
        .args(small)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("syscalls: cost per call"));
    assert!(text.contains("read: 10 MiB file from the page cache"));
    assert!(text.contains("advice:"));
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        !stderr.contains('\r'),
        "progress must be hidden when stderr is not a terminal"
    );

    let out = ioprobe(dir.path())
        .args(["syscalls", "--case", "null,pread", "--csv"])
        .args(small)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    assert_eq!(&headers[0], "probe");
    assert!(
        headers.iter().any(|h| h == "voluntary_cs")
            && headers.iter().any(|h| h == "involuntary_cs")
    );
    assert_eq!(rdr.records().count(), 2);

    let out = ioprobe(dir.path())
        .args(["syscalls", "--case", "null", "--markdown"])
        .args(small)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("| case | ns/op |"));
    assert!(text.contains("| null |"));
    assert_empty(dir.path());
}

#[test]
fn sysinfo_reports_machine_facts() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["sysinfo", "--json"])
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    for key in [
        "os",
        "kernel",
        "cpu_model",
        "logical_cpus",
        "caches",
        "memory_bytes",
        "page_size",
        "hypervisor",
        "mitigations",
        "clocksource",
        "filesystem",
        "pipe_max_size",
        "ioprobe_version",
    ] {
        assert!(v.get(key).is_some(), "sysinfo lacks {key}");
    }
    ioprobe(dir.path())
        .arg("sysinfo")
        .assert()
        .success()
        .stdout(predicate::str::contains("page size"));
    assert_empty(dir.path());
}

/// Runs a command that must fail with `code` and a single-line error naming `needle`.
fn fails(dir: &Path, args: &[&str], code: i32, needle: &str) {
    let out = ioprobe(dir).args(args).args(TINY).assert().code(code);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("ioprobe: measuring in"))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "{args:?}: expected one error line, got {stderr:?}"
    );
    assert!(
        lines[0].starts_with("ioprobe: error:"),
        "{args:?}: {stderr:?}"
    );
    assert!(
        lines[0].contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
    assert!(!stderr.contains("panicked"));
    assert!(
        out.get_output().stdout.is_empty(),
        "{args:?}: nothing on stdout on error"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fails(d, &["syscalls", "--io-size", "0"], 2, "zero");
    fails(d, &["syscalls", "--io-size=-4k"], 2, "negative");
    fails(d, &["syscalls", "--io-size", "abc"], 2, "not a size");
    fails(d, &["syscalls", "--io-size", "99999P"], 2, "absurdly large");
    fails(d, &["syscalls", "--io-size", "2P"], 2, "absurdly large");
    fails(d, &["syscalls", "--io-size", "1T"], 2, "--io-size");
    fails(d, &["syscalls", "--case", "nope"], 2, "unknown case 'nope'");
    fails(d, &["read", "--method", "aio"], 2, "unknown method 'aio'");
    fails(
        d,
        &["read", "--file-size", "1.5G", "--block-sizes", "0"],
        2,
        "zero",
    );
    fails(
        d,
        &["read", "--file-size", "1T"],
        2,
        "cannot stay in the page cache",
    );
    fails(d, &["read", "--block-sizes", "2G"], 2, "too large");
    fails(d, &["run", "--json", "--csv"], 2, "cannot be used with");
    fails(d, &["run", "--cpu", "4096"], 2, "--cpu 4096");
    fails(d, &["run", "--sample-time", "0ms"], 2, "positive");
    fails(d, &["frobnicate"], 2, "frobnicate");
    assert_empty(d);
}

#[test]
fn bad_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    fails(
        dir.path(),
        &["syscalls", "--dir", missing.to_str().unwrap()],
        2,
        "No such file or directory",
    );
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    fails(
        dir.path(),
        &["syscalls", "--dir", file.to_str().unwrap()],
        2,
        "not a directory",
    );
    // /proc refuses new directories even for root.
    fails(
        dir.path(),
        &["syscalls", "--dir", "/proc"],
        2,
        "not writable",
    );
    assert_eq!(entries(dir.path()), vec!["file".to_string()]);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"x",
        "a file named by --dir is never touched"
    );
}

#[test]
fn a_full_filesystem_fails_at_run_time_and_cleans_up() {
    // A file-size limit makes writes fail with EFBIG like a full disk would fail with
    // ENOSPC; SIGXFSZ is ignored so the write returns the error instead of killing us.
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "trap '' XFSZ; exec prlimit --fsize=65536 {BIN} read --no-save --dir {} --file-size 1m --block-sizes 4k --sample-time 1ms --budget 20ms",
        dir.path().display()
    );
    let out = Command::new("sh").arg("-c").arg(script).assert().code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("ioprobe: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("File too large") || errors[0].contains("No space"),
        "{stderr}"
    );
    assert_empty(dir.path());
}

/// Starts ioprobe with `args` (plus `--dir dir`) and returns once its scratch
/// directory exists, i.e. once it is measuring.
fn spawn_measuring(args: &[&str], dir: &Path, out: Stdio) -> std::process::Child {
    let child = std::process::Command::new(BIN)
        .args(args)
        .arg("--no-save")
        .arg("--dir")
        .arg(dir)
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while entries(dir).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "scratch directory never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

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

#[test]
fn help_and_version() {
    Command::new(BIN)
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("syscalls"));
    Command::new(BIN)
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains("ioprobe"));
    Command::new(BIN).assert().code(2);
}

#[test]
fn cpu_pinning_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["syscalls", "--case", "null", "--cpu", "0", "--json"])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    assert_eq!(v["environment"]["pinned_cpu"], 0);
    assert_empty(dir.path());
}

#[test]
fn measuring_process_has_one_thread() {
    // A second thread (e.g. a signal-handling thread) would make the kernel take the
    // shared-file-table paths and slow fd syscalls; ioprobe must stay single-threaded.
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_measuring(
        &[
            "syscalls",
            "--case",
            "null",
            "--thorough",
            "--sample-time",
            "50ms",
        ],
        dir.path(),
        Stdio::null(),
    );
    let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id()))
        .unwrap()
        .count();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(tasks, 1, "ioprobe started a thread");
}

// ---- results store, compare, reports (issue 5) ----

const FIXTURE_A: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-a.json");
const FIXTURE_B: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-b.json");
const FIXTURE_V2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v2.json");
const FIXTURE_BAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/malformed.json");

/// ioprobe with an explicit results store.
fn with_store(store: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--store").arg(store);
    c
}

fn stdout_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

fn stderr_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(a.get_output().stderr.clone()).unwrap()
}

#[test]
fn runs_are_saved_listed_shown_exported_and_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let store = tmp.path().join("db").join("results.db");
    let a = with_store(&store)
        .args(["syscalls", "--case", "null,pread", "--dir"])
        .arg(&scratch)
        .args(TINY)
        .assert()
        .success();
    assert!(stdout_of(&a).contains(&format!("saved as run 1 in {}", store.display())));
    let a = with_store(&store)
        .args([
            "read",
            "--file-size",
            "64k",
            "--block-sizes",
            "4k,16k",
            "--json",
            "--dir",
        ])
        .arg(&scratch)
        .args(TINY)
        .assert()
        .success();
    assert!(stderr_of(&a).contains("saved as run 2"));
    let saved_json = json_of(&a.get_output().stdout);
    assert_empty(&scratch);

    let h = json_of(
        &with_store(&store)
            .args(["history", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    let h = h.as_array().unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0]["probes"], serde_json::json!(["syscalls"]));
    assert_eq!(h[1]["command"], "read");
    let table = stdout_of(&with_store(&store).arg("history").assert().success());
    assert!(
        table.contains("syscalls") && table.contains("ext4")
            || table.contains("tmpfs")
            || table.contains("xfs")
            || table.contains("btrfs")
    );

    let last = json_of(
        &with_store(&store)
            .args(["show", "last", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    assert_eq!(
        last["measurements"], saved_json["measurements"],
        "the store keeps every field, raw samples included"
    );
    let first = stdout_of(
        &with_store(&store)
            .args(["show", "last~1"])
            .assert()
            .success(),
    );
    assert!(first.contains("syscalls: cost per call"));

    let exported = stdout_of(&with_store(&store).args(["export", "1"]).assert().success());
    let file = tmp.path().join("run1.json");
    std::fs::write(&file, &exported).unwrap();
    let other = tmp.path().join("other.db");
    let a = with_store(&other)
        .arg("import")
        .arg(&file)
        .assert()
        .success();
    assert!(stdout_of(&a).contains("as run 1"));
    let reimported = json_of(
        &with_store(&other)
            .args(["export", "last"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    assert_eq!(
        reimported["measurements"],
        json_of(exported.as_bytes())["measurements"]
    );
    // A JSON file works wherever a RUN is expected.
    with_store(&other)
        .arg("show")
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("pread"));
}

#[test]
fn default_store_is_under_xdg_data_home() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    Command::new(BIN)
        .env("XDG_DATA_HOME", tmp.path().join("xdg"))
        .args(["syscalls", "--case", "null", "--dir"])
        .arg(&scratch)
        .args(TINY)
        .assert()
        .success();
    assert!(tmp.path().join("xdg/ioprobe/results.db").is_file());
}

#[test]
fn run_saves_and_writes_its_html_report() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let store = tmp.path().join("results.db");
    let small = ["--sample-time", "1ms", "--budget", "10ms"];
    let out = stdout_of(
        &with_store(&store)
            .arg("run")
            .arg("--dir")
            .arg(&scratch)
            .args(small)
            .assert()
            .success(),
    );
    let report = tmp.path().join("reports/run-1.html");
    assert!(out.contains("advice:"));
    assert!(
        out.contains(&format!("HTML report: {}", report.display())),
        "{out}"
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        4,
        "syscalls, read, pipe and copy plots"
    );
    assert!(!html.contains("<script"), "the report needs no JavaScript");
    for load in [" src=", "<link", "url(", "@import", "href=\"http"] {
        assert!(
            !html.contains(load),
            "the report must load nothing, found {load}"
        );
    }
    with_store(&store)
        .arg("run")
        .arg("--dir")
        .arg(&scratch)
        .args(small)
        .assert()
        .success();
    let cmp = stdout_of(
        &with_store(&store)
            .args(["compare", "last~1", "last"])
            .assert()
            .success(),
    );
    assert!(cmp.contains("compare: A = run 1, B = run 2"));
    assert!(cmp.contains("syscalls/pread") && cmp.contains("read/read/4KiB"));
    assert_empty(&scratch);
}

#[test]
fn compare_finds_the_known_faster_slower_and_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    let out = with_store(&store)
        .args(["compare", FIXTURE_A, FIXTURE_B, "--json"])
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let verdict = |case: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["case"] == case)
            .map(|r| r["verdict"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(verdict("null"), "slower");
    assert_eq!(verdict("pread"), "faster");
    assert_eq!(verdict("open_close"), "no_significant_change");
    assert_eq!(verdict("read/64KiB"), "no_significant_change");
    let null = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"] == "null")
        .unwrap();
    assert!((null["ratio"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    let ci = null["ratio_ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= 1.2 && 1.2 <= ci[1].as_f64().unwrap());
    let env = v["environment_differences"].as_array().unwrap();
    assert_eq!(env.len(), 1);
    assert_eq!(env[0]["fact"], "kernel");
    // Environment differences come first in the table.
    let table = stdout_of(
        &with_store(&store)
            .args(["compare", FIXTURE_A, FIXTURE_B])
            .assert()
            .success(),
    );
    assert!(table.find("environment differences").unwrap() < table.find("compare: A =").unwrap());

    let fail = with_store(&store)
        .args(["compare", FIXTURE_A, FIXTURE_B, "--fail-if-slower", "5%"])
        .assert()
        .code(3);
    let err = stderr_of(&fail);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("syscalls/null (+20.0%)"), "{err}");
    with_store(&store)
        .args(["compare", FIXTURE_A, FIXTURE_B, "--fail-if-slower", "25%"])
        .assert()
        .success();
    assert!(!store.exists(), "comparing two files never creates a store");
}

fn one_line_failure(a: assert_cmd::assert::Assert, needle: &str) {
    let err = stderr_of(&a);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ioprobe: error:") && err.contains(needle),
        "{err} lacks {needle}"
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn bad_runs_and_files_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    one_line_failure(
        with_store(&store)
            .args(["import", FIXTURE_BAD])
            .assert()
            .code(1),
        "malformed JSON",
    );
    one_line_failure(
        with_store(&store)
            .args(["import", FIXTURE_V2])
            .assert()
            .code(1),
        "schema version 2",
    );
    assert!(!store.exists(), "a rejected import writes nothing");
    one_line_failure(
        with_store(&store).args(["show", "last"]).assert().code(1),
        "no results store",
    );
    with_store(&store)
        .args(["import", FIXTURE_A])
        .assert()
        .success();
    one_line_failure(
        with_store(&store).args(["show", "42"]).assert().code(1),
        "no run 42",
    );
    one_line_failure(
        with_store(&store).args(["show", "last~5"]).assert().code(1),
        "fewer than 6 runs",
    );
    one_line_failure(
        with_store(&store)
            .args(["show", "nonsense"])
            .assert()
            .code(1),
        "is not a run",
    );
    one_line_failure(
        with_store(&store)
            .args(["show", "missing.json"])
            .assert()
            .code(1),
        "no such file",
    );
    one_line_failure(
        with_store(&store).args(["report", "last"]).assert().code(2),
        "--html",
    );
    with_store(&store)
        .args(["compare", "1", "1", "--fail-if-slower", "abc"])
        .assert()
        .code(2);
}

#[test]
fn a_corrupt_store_is_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let store = tmp.path().join("results.db");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&store, &garbage).unwrap();
    one_line_failure(
        with_store(&store).arg("history").assert().code(1),
        "results.db",
    );
    one_line_failure(
        with_store(&store)
            .args(["syscalls", "--case", "null", "--dir"])
            .arg(&scratch)
            .args(TINY)
            .assert()
            .code(1),
        "results.db",
    );
    one_line_failure(
        with_store(&store)
            .args(["import", FIXTURE_A])
            .assert()
            .code(1),
        "results.db",
    );
    assert_eq!(
        std::fs::read(&store).unwrap(),
        garbage,
        "the store was modified"
    );
    assert_empty(&scratch);
}

#[test]
fn concurrent_saves_all_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(BIN)
                .arg("--store")
                .arg(&store)
                .args(["import", FIXTURE_A, FIXTURE_B])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let h = json_of(
        &with_store(&store)
            .args(["history", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    assert_eq!(h.as_array().unwrap().len(), 8);
}

#[test]
fn advise_gives_evidence_from_saved_runs_or_measures_first() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    with_store(&store)
        .args(["import", FIXTURE_A])
        .assert()
        .success();
    let out = stdout_of(&with_store(&store).arg("advise").assert().success());
    assert!(
        out.contains("from run 1 (2026-11-21T09:00:00Z, fixture-host)"),
        "{out}"
    );
    assert!(
        out.contains("keep descriptors open") && out.contains("use 64 KiB blocks"),
        "{out}"
    );

    let empty = tmp.path().join("empty.db");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let a = with_store(&empty)
        .args([
            "advise",
            "--sample-time",
            "1ms",
            "--budget",
            "10ms",
            "--dir",
        ])
        .arg(&scratch)
        .assert()
        .success();
    assert!(stderr_of(&a).contains("nothing saved yet"));
    let out = stdout_of(&a);
    assert!(
        out.contains("from run 1") && out.contains("read (read): use"),
        "{out}"
    );
    assert_empty(&scratch);
}

#[test]
fn text_markdown_and_csv_are_stable() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    let show = |fmt: Option<&str>| {
        let mut c = with_store(&store);
        c.args(["show", FIXTURE_A]);
        if let Some(f) = fmt {
            c.arg(f);
        }
        stdout_of(&c.assert().success())
    };
    insta::assert_snapshot!("show_table", show(None));
    insta::assert_snapshot!("show_markdown", show(Some("--markdown")));
    insta::assert_snapshot!("show_csv", show(Some("--csv")));
    // Relative paths: the labels in the output must not depend on where the clone is.
    let cmp = stdout_of(
        &with_store(&store)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "compare",
                "tests/fixtures/run-a.json",
                "tests/fixtures/run-b.json",
                "--markdown",
            ])
            .assert()
            .success(),
    );
    insta::assert_snapshot!("compare_markdown", cmp);
}

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

#[test]
fn html_report_loads_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    let html = tmp.path().join("report.html");
    let svgs = tmp.path().join("svg");
    with_store(&store)
        .args(["report", FIXTURE_A, "--html"])
        .arg(&html)
        .arg("--svg")
        .arg(&svgs)
        .assert()
        .success();
    for name in ["syscalls.svg", "read.svg"] {
        let svg = std::fs::read_to_string(svgs.join(name)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("<rect"),
            "{name} is empty"
        );
    }
    let Some(chromium) = chromium() else {
        // .ci/run installs Debian's chromium; only a developer machine may lack it.
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium must be installed in CI"
        );
        eprintln!(
            "html_report_loads_in_headless_chromium: chromium not installed, browser part skipped"
        );
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    for id in ["plot-syscalls", "plot-read"] {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id} missing from the DOM"));
        let figure = &dom[at..at + dom[at..].find("</figure>").unwrap()];
        assert!(figure.contains("<svg"), "{id} has no svg");
        assert!(
            figure.matches("<rect").count() + figure.matches("<polyline").count() >= 3,
            "{id} is empty"
        );
    }
    assert!(
        dom.contains("keep descriptors open"),
        "advice missing from the page"
    );
}

/// Processes (other than `except`) whose command line mentions `needle`: a forked pipe
/// writer or reader keeps its parent's command line, so this finds strays.
fn processes_mentioning(needle: &str, except: u32) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(pid) = name.parse::<u32>() else {
            continue;
        };
        if pid == except || pid == std::process::id() {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(needle) {
            out.push(format!("{pid}: {stat}"));
        }
    }
    out
}

#[test]
fn pipe_runs_every_axis_value_and_reports_both_processes() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["pipe", "--sizes", "1k,4k", "--pipe-size", "default,1m"])
        .args(["--method", "write-read,vmsplice-splice"])
        .args(["--placement", "any,same,split", "--total", "64k", "--json"])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 2 * 2 * 2 * 3);
    for m in ms {
        assert_eq!(m["probe"], "pipe");
        assert_eq!(m["status"], "ok", "{m}");
        check_measurement(m);
        assert_eq!(m["unit"], "bytes/s");
        for role in ["writer", "reader"] {
            let p = &m["rusage"]["processes"][role];
            for key in ["voluntary_cs", "involuntary_cs", "user_s", "sys_s", "total"] {
                assert!(p.get(key).is_some(), "{role} lacks {key}: {m}");
            }
        }
        let p = &m["params"];
        assert!(["write-read", "vmsplice-splice"].contains(&p["method"].as_str().unwrap()));
        assert!(["any", "same", "split"].contains(&p["placement"].as_str().unwrap()));
        assert_eq!(p["total"], 65536);
        // The capacity reported is the one the kernel granted.
        let granted = p["pipe_size"].as_u64().unwrap();
        match p["pipe_size_requested"].as_str().unwrap() {
            "default" => assert!(granted >= 4096),
            "1MiB" => assert_eq!(granted, 1 << 20),
            other => panic!("{other}"),
        }
        assert!(m["derived"]["writer_calls_per_gib"].as_f64().unwrap() > 0.0);
    }
    let split = ms
        .iter()
        .find(|m| m["params"]["placement"] == "split")
        .unwrap();
    assert_ne!(
        split["params"]["writer_cpus"],
        split["params"]["reader_cpus"]
    );
    assert_empty(dir.path());
    assert!(processes_mentioning(dir.path().to_str().unwrap(), 0).is_empty());
}

#[test]
fn pipe_table_has_seed_002_shape() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["pipe", "--sizes", "4k,64k", "--method", "write-read"])
        .args(["--placement", "any", "--total", "256k"])
        .args(TINY)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for needle in [
        "pipe: write-read, placement any, 256 KiB per sample (seed 002)",
        "writer vol/invol cs/GiB",
        "reader vol/invol cs/GiB",
        "64 KiB",
        "1 MiB",
        "pipe (write-read): use",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from\n{text}");
    }
}

#[test]
fn a_corrupted_pipe_stream_fails_loudly_and_leaves_nothing() {
    for method in ["write-read", "vmsplice-splice"] {
        let dir = tempfile::tempdir().unwrap();
        let out = ioprobe(dir.path())
            .args([
                "pipe",
                "--sizes",
                "4k",
                "--method",
                method,
                "--placement",
                "any",
            ])
            .args(["--pipe-size", "default", "--total", "64k"])
            .args(TINY)
            .env("IOPROBE_FAULT", "pipe-corrupt")
            .assert()
            .code(1);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(stderr.contains("wrong stamp"), "{method}: {stderr}");
        assert!(!stderr.contains("panicked"));
        assert!(out.get_output().stdout.is_empty());
        assert_empty(dir.path());
        assert!(processes_mentioning(dir.path().to_str().unwrap(), 0).is_empty());
    }
}

#[test]
fn pipe_bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fails(dir.path(), &["pipe", "--sizes", "0"], 2, "is zero");
    fails(dir.path(), &["pipe", "--sizes", "2g"], 2, "1 B … 1 GiB");
    fails(dir.path(), &["pipe", "--read-size", "0"], 2, "is zero");
    fails(
        dir.path(),
        &["pipe", "--sizes", "1m", "--total", "64k"],
        2,
        "smaller than one chunk",
    );
    fails(dir.path(), &["pipe", "--pipe-size", "0"], 2, "is zero");
    fails(
        dir.path(),
        &["pipe", "--placement", "near"],
        2,
        "unknown placement",
    );
    fails(
        dir.path(),
        &["pipe", "--method", "mmap"],
        2,
        "unknown pipe method",
    );
    // A capacity the kernel rounds is said, and the granted one is measured.
    let out = ioprobe(dir.path())
        .args([
            "pipe",
            "--sizes",
            "4k",
            "--pipe-size",
            "100k",
            "--method",
            "write-read",
        ])
        .args(["--placement", "any", "--total", "64k", "--json"])
        .args(TINY)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("rounded it to 128 KiB"), "{stderr}");
    let v = json_of(&out.get_output().stdout);
    assert_eq!(v["measurements"][0]["params"]["pipe_size"], 131072);
    assert_empty(dir.path());
}

#[test]
fn interrupting_a_pipe_run_leaves_no_process_or_file() {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_measuring(
        &[
            "pipe",
            "--sizes",
            "1k",
            "--total",
            "1g",
            "--placement",
            "any",
        ],
        dir.path(),
        Stdio::piped(),
    );
    let needle = dir.path().to_str().unwrap().to_string();
    // Wait until the writer and reader exist, then interrupt mid-transfer.
    let start = Instant::now();
    while processes_mentioning(&needle, child.id()).len() < 2 {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &child.id().to_string()])
                .status();
            panic!("writer and reader never started");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
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
    assert_empty(dir.path());
    let start = Instant::now();
    while !processes_mentioning(&needle, 0).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "stray processes: {:?}",
            processes_mentioning(&needle, 0)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_copy_method_makes_an_identical_copy_or_says_why_not() {
    for sparse in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = ioprobe(dir.path());
        cmd.args(["copy", "--file-size", "0,1,4095,4096,4097,1048577"])
            .args(["--system-tools", "--buffers", "4k,1m", "--cache", "warm"])
            .args(["--durability", "none", "--verify", "always", "--json"])
            .args(["--sample-time", "1ms", "--budget", "5ms"]);
        if sparse {
            cmd.arg("--sparse");
        }
        let out = cmd.assert().success();
        let v = json_of(&out.get_output().stdout);
        let ms = v["measurements"].as_array().unwrap();
        let methods: Vec<&str> = ms
            .iter()
            .map(|m| m["params"]["method"].as_str().unwrap())
            .collect();
        for name in [
            "read-write",
            "read-write-fadvise",
            "pread-pwrite",
            "mmap-write",
            "mmap-memcpy-msync",
            "mmap-memcpy-munmap",
            "sendfile",
            "splice",
            "copy-file-range",
            "reflink",
            "io-uring",
            "direct",
            "cp",
            "cat",
            "dd",
        ] {
            assert!(methods.contains(&name), "{name} missing");
        }
        for m in ms {
            match m["status"].as_str().unwrap() {
                "ok" => {
                    // Verified after every pass: warm-up and each sample.
                    let passes = m["derived"]["verified_passes"].as_f64().unwrap();
                    assert!(passes >= 6.0, "{}: verified {passes} times", m["case"]);
                    assert!(m["samples"].as_u64().unwrap() >= 5);
                }
                "unsupported" => {
                    let why = m["reason"].as_str().unwrap();
                    assert!(
                        why.contains("failed:") || why.contains("not found"),
                        "{why}"
                    );
                }
                other => panic!("{}: status {other}: {}", m["case"], m["reason"]),
            }
        }
        let mut working: Vec<&str> = ms
            .iter()
            .filter(|m| m["status"] == "ok")
            .map(|m| m["params"]["method"].as_str().unwrap())
            .collect();
        working.dedup();
        assert!(working.len() >= 12, "only {working:?} worked");
        assert_empty(dir.path());
    }
}

#[test]
fn copy_covers_cache_states_and_durability_and_labels_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "copy",
            "--file-size",
            "256k",
            "--method",
            "read-write,reflink,mmap-memcpy-munmap",
        ])
        .args(["--buffers", "64k", "--json"])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    // 2 cache states × 2 durability modes × (read-write, reflink, 2 munmap variants).
    assert_eq!(ms.len(), 16);
    for m in ms {
        let p = &m["params"];
        let observed = p["cache_observed"].as_str().unwrap_or("");
        if m["status"] == "ok" {
            check_measurement(m);
            let cache = p["cache"].as_str().unwrap();
            assert!(
                observed.starts_with(cache) || observed.starts_with("asked"),
                "{observed}"
            );
            let state = p["durability_state"].as_str().unwrap();
            match p["durability"].as_str().unwrap() {
                "fsync" => assert!(state.starts_with("durable")),
                "none" => assert!(state.starts_with("not durable")),
                other => panic!("{other}"),
            }
            assert!(m["derived"]["sys_s_per_copy"].as_f64().is_some());
        } else {
            assert_eq!(m["params"]["method"], "reflink");
            assert!(m["reason"].as_str().unwrap().contains("FICLONE"));
        }
    }
    let table = ioprobe(dir.path())
        .args([
            "copy",
            "--file-size",
            "256k",
            "--method",
            "read-write,reflink",
        ])
        .args([
            "--buffers",
            "64k",
            "--cache",
            "warm",
            "--durability",
            "fsync",
        ])
        .args(TINY)
        .assert()
        .success();
    let text = String::from_utf8(table.get_output().stdout.clone()).unwrap();
    for needle in [
        "copy: 256 KiB file, warm source, durability fsync — fastest first",
        "× fastest",
        "reflink unsupported: ioctl(FICLONE) failed",
        "fastest durable method is read-write/64KiB",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    assert_empty(dir.path());
}

#[test]
fn a_corrupted_copy_is_caught_and_fails_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "copy",
            "--file-size",
            "64k",
            "--method",
            "copy-file-range,read-write",
        ])
        .args([
            "--buffers",
            "64k",
            "--cache",
            "warm",
            "--durability",
            "none",
            "--json",
        ])
        .args(TINY)
        .env("IOPROBE_FAULT", "copy-corrupt")
        .assert()
        .code(1);
    let v = json_of(&out.get_output().stdout);
    for m in v["measurements"].as_array().unwrap() {
        assert_eq!(m["status"], "failed", "{m}");
        assert!(
            m["reason"]
                .as_str()
                .unwrap()
                .contains("different fingerprint")
        );
    }
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("FAILED verification"), "{stderr}");
    assert_empty(dir.path());
}

#[test]
fn copy_bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fails(
        dir.path(),
        &["copy", "--file-size", "100t"],
        2,
        "quarter of memory",
    );
    fails(
        dir.path(),
        &["copy", "--cache", "lukewarm"],
        2,
        "unknown cache state",
    );
    fails(
        dir.path(),
        &["copy", "--durability", "maybe"],
        2,
        "unknown durability",
    );
    fails(
        dir.path(),
        &["copy", "--method", "teleport"],
        2,
        "unknown copy method",
    );
    fails(dir.path(), &["copy", "--buffers", "0"], 2, "is zero");
    fails(dir.path(), &["copy", "--verify", "never"], 2, "never");
    assert_empty(dir.path());
}
