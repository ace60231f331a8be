//! Integration tests: run the real binary with tiny budgets. They check behaviour (shape
//! of output, errors, exit codes, clean-up), never timings. One binary, one module per
//! topic; the helpers every module uses live here.

mod attach;
mod copy;
mod cp;
mod cp_gnu;
mod decided;
mod ebpf;
mod examples;
mod filesystems;
mod fuzz_regressions;
mod inputs;
mod layers;
mod metrics;
mod pipe;
mod probes;
mod report;
mod signals;
mod socket;
mod store;
mod trace;
mod width;
mod write;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ioprobe");
const TINY: [&str; 4] = ["--sample-time", "1ms", "--budget", "30ms"];

/// Makes a FIFO at `path` (with mkfifo(1), as a user would).
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success(), "mkfifo {}", path.display());
}

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

/// A skipped row (issue 67, after v0.1) has an unsupported row's keys, and the params
/// of one of its probe's v0.1 shapes (less those added since).
fn skipped_shape(m: &Value, shapes: &[Value], known: &Value) {
    let keys = |x: &Value| -> Vec<String> {
        x.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let unsupported = known
        .as_object()
        .unwrap()
        .values()
        .flat_map(|v| v.as_array().unwrap())
        .find(|s| s["status"] == "unsupported")
        .expect("v0.1 has an unsupported row's shape");
    assert_eq!(
        serde_json::to_value(keys(m)).unwrap(),
        unsupported["keys"],
        "{}",
        m["case"]
    );
    // Less what only a measured row has (copy's `cache_observed`).
    let bare = |p: &Value| -> Vec<String> {
        let mut p: Vec<String> = serde_json::from_value(p.clone()).unwrap();
        p.retain(|k| k != "cache_observed" && k != "populate"); // populate: issue 11
        p
    };
    let params = bare(&serde_json::to_value(keys(&m["params"])).unwrap());
    assert!(
        shapes.iter().any(|s| bare(&s["params"]) == params),
        "{}: params {params:?}",
        m["case"]
    );
    assert_eq!(m["derived"], serde_json::json!({}), "{}", m["case"]);
}

/// The JSON of a live run, every row of a probe that existed before the probes got
/// their own folders checked against the shapes that version wrote (keys of the row,
/// its params and its derived figures, in order): schema 1 may gain keys, never lose or
/// rename one.
fn run_json(out: &[u8]) -> Value {
    let v = json_of(out);
    let known: Value =
        serde_json::from_str(include_str!("../fixtures/json-shapes-v0.1.json")).unwrap();
    let keys = |x: &Value| -> Vec<String> {
        x.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    for m in v["measurements"].as_array().unwrap() {
        let Some(shapes) = known[m["probe"].as_str().unwrap()].as_array() else {
            continue; // a probe added since
        };
        // A failed row has the shape of a measured one, plus its reason.
        let failed = m["status"] == "failed";
        let status = if failed {
            "ok"
        } else {
            m["status"].as_str().unwrap()
        };
        if status == "skipped" {
            skipped_shape(m, shapes, &known);
            continue;
        }
        let mut row_keys = keys(m);
        if failed {
            row_keys.retain(|k| k != "reason");
        }
        // Row keys added since v0.1 on purpose (each with its issue).
        row_keys.retain(|k| k != "cpu_wait"); // issue 41
        row_keys.retain(|k| k != "setup"); // issue 68
        // Params added since v0.1 on purpose (each with its issue): older documents
        // lack them and still load.
        const ADDED: [(&str, &str); 3] = [
            ("read", "populate"),            // issue 11
            ("syscalls", "vector_state"),    // issue 42
            ("syscalls", "path_components"), // issue 66
        ];
        const DERIVED_ADDED: [(&str, &str); 2] = [
            ("copy", "warmup_samples"), // issue 42
            ("copy", "warmup_settled"), // issue 42
        ];
        let probe = m["probe"].as_str().unwrap();
        let mut params = keys(&m["params"]);
        params.retain(|k| !ADDED.contains(&(probe, k.as_str())));
        let mut derived = keys(&m["derived"]);
        derived.retain(|k| !DERIVED_ADDED.contains(&(probe, k.as_str())));
        let shape = serde_json::json!({
            "status": status,
            "keys": row_keys,
            "params": params,
            "derived": derived,
        });
        assert!(
            shapes.contains(&shape),
            "{}: JSON shape changed: {shape}",
            m["case"]
        );
    }
    v
}

const CASES: [&str; 17] = [
    "null",
    "null_vector_dirty",
    "open_close",
    "open_write_close",
    "open_read_close",
    "lseek",
    "lseek_write",
    "lseek_read",
    "pwrite",
    "pread",
    "mmap_store",
    "mmap_load",
    "fstat",
    "stat",
    "stat_name",
    "pipe_round_trip",
    "switch_round_trip",
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

fn fails(dir: &Path, args: &[&str], code: i32, needle: &str) {
    // The sampling flags go before the command: a command that does not measure
    // ignores them there (with a note), and refuses them after it.
    let out = ioprobe(dir).args(TINY).args(args).assert().code(code);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr
        .lines()
        // Notes (folded to the width: their continuations start with two spaces) are
        // not the error.
        .filter(|l| {
            !l.starts_with("ioprobe: measuring in")
                && !l.contains("given before the command")
                && !l.starts_with("  ")
        })
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

/// Starts ioprobe with `args` (plus `--dir dir`) and returns once its scratch
/// directory exists, i.e. once it is measuring.
/// Puts SIGINT, SIGQUIT and SIGHUP back to their default in this test process, and so
/// in every ioprobe it starts. A suite started as a background job without job control
/// inherits SIGINT and SIGQUIT ignored, and ioprobe keeps a signal it was started with
/// ignored (as coreutils do): the tests that interrupt ioprobe call this first.
fn default_stop_signals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
            // SAFETY: SIG_DFL replaces no handler of this process (the test harness
            // installs none for these); the result is not needed.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    });
}

/// Asserts that ioprobe ended by `signal` (as kill(1) names it: "-INT", "-TERM",
/// "-HUP"): after cleaning up it dies by the same signal, so a shell reports 128+N.
fn assert_killed_by(status: std::process::ExitStatus, signal: &str, context: &str) {
    use std::os::unix::process::ExitStatusExt;
    let n = match signal {
        "-INT" => libc::SIGINT,
        "-TERM" => libc::SIGTERM,
        "-HUP" => libc::SIGHUP,
        other => panic!("no such stop signal {other}"),
    };
    assert_eq!(
        (status.code(), status.signal()),
        (None, Some(n)),
        "not ended by {signal}: {context}"
    );
}

fn spawn_measuring(args: &[&str], dir: &Path, out: Stdio) -> std::process::Child {
    default_stop_signals();
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

const FIXTURE_A: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-a.json");
const FIXTURE_B: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-b.json");
const FIXTURE_V2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v2.json");
const FIXTURE_PIPE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pipe-run.json");
const FIXTURE_COPY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/copy-run.json");
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

fn one_line_failure(a: assert_cmd::assert::Assert, needle: &str) {
    let err = stderr_of(&a);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ioprobe: error:") && err.contains(needle),
        "{err} lacks {needle}"
    );
    assert!(!err.contains("panicked"));
}

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// Chromium for `test`'s browser part; where it is missing (a developer's machine only:
/// .ci/run installs Debian's chromium) the part is skipped with a message.
fn chromium_for(test: &str) -> Option<&'static str> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium must be installed in CI"
        );
        eprintln!("{test}: chromium not installed, browser part skipped");
    }
    found
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

/// Runs `f` while two busy loops load the machine's CPUs (as a build beside it would).
fn under_load<T>(f: impl FnOnce() -> T) -> T {
    let mut hogs: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "exec yes > /dev/null"])
                .spawn()
                .unwrap()
        })
        .collect();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    for h in &mut hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    r.unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// A run's JSON (from `--json`) must import back: its own output passes the validation
/// that guards against hostile files.
fn imports_back(json: &[u8]) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("run.json");
    std::fs::write(&file, json).unwrap();
    Command::new(BIN)
        .arg("--store")
        .arg(tmp.path().join("r.db"))
        .arg("import")
        .arg(&file)
        .assert()
        .success();
}

/// A saved run's presentation without a live run: its table, Markdown, CSV and advice
/// as snapshots named `<name>_…`, and its JSON exported back unchanged.
fn presentation_is_stable(name: &str, fixture: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("r.db");
    let show = |fmt: Option<&str>| {
        let mut c = with_store(&store);
        c.args(["show", fixture]);
        c.args(fmt);
        stdout_of(&c.assert().success())
    };
    insta::assert_snapshot!(format!("{name}_table"), show(None));
    insta::assert_snapshot!(format!("{name}_markdown"), show(Some("--markdown")));
    insta::assert_snapshot!(format!("{name}_csv"), show(Some("--csv")));
    with_store(&store)
        .args(["import", fixture])
        .assert()
        .success();
    let advice = stdout_of(&with_store(&store).arg("advise").assert().success());
    insta::assert_snapshot!(format!("{name}_advice"), advice);
    let mut exported = json_of(
        &with_store(&store)
            .args(["export", "last"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    let mut original: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    // The run's data must survive unchanged; its advice is derived from it by this
    // version (the fixture's was written by an older one).
    assert!(exported["recommendations"].is_array() && exported["advice"].is_array());
    for doc in [&mut exported, &mut original] {
        let map = doc.as_object_mut().unwrap();
        map.remove("advice");
        map.remove("recommendations");
    }
    assert_eq!(
        exported, original,
        "export of an imported run changed its JSON"
    );
}

/// The CPU has every one of `flags` (/proc/cpuinfo's flags line).
fn cpu_flags(flags: &[&str]) -> bool {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let line = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    flags
        .iter()
        .all(|f| line.split_whitespace().any(|w| w == *f))
}
