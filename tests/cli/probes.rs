//! The measuring commands' output: syscalls, read, run, sysinfo, help, pinning.

use crate::*;

#[test]
fn syscalls_json_has_every_contract_case() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .arg("syscalls")
        .args(TINY)
        .arg("--json")
        .assert()
        .success();
    let v = run_json(&out.get_output().stdout);
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
        // The vector state each loop ran in, as the CPU reported it: the one it was
        // set to, wherever the CPU can say (cpuinfo's avx and xgetbv1).
        let want = if m["case"] == "null_vector_dirty" {
            "dirty"
        } else {
            "clean"
        };
        if cpu_flags(&["avx", "xgetbv1"]) {
            assert_eq!(m["params"]["vector_state"], want, "{m}");
        } else {
            assert!(
                m["params"].get("vector_state").is_none_or(|s| s == want),
                "{m}"
            );
        }
    }
    assert!(v["harness"]["overhead"]["timer_ns"].as_f64().unwrap() > 0.0);
    // The path cases say how many components their path has; stat_name has one, which
    // costs less than the scratch file's absolute path (at least the scratch directory
    // and the file).
    let row = |case: &str| ms.iter().find(|m| m["case"] == case).unwrap();
    let comps = |case: &str| row(case)["params"]["path_components"].as_u64();
    assert_eq!(comps("stat_name"), Some(1));
    assert!(comps("stat").unwrap() >= 2 && comps("stat") == comps("open_close"));
    assert_eq!(comps("pread"), None);
    // The round trips: with a partner process two switches more than alone, each a
    // wakeup and a block (microseconds against the calls' hundreds of ns).
    let ns = |case: &str| row(case)["median"].as_f64().unwrap();
    assert!(
        ns("switch_round_trip") > ns("pipe_round_trip"),
        "{} {}",
        ns("switch_round_trip"),
        ns("pipe_round_trip")
    );
    // The switch's round trip keeps the time this thread waited, runnable, while its
    // partner ran on the CPU (the partner's turn is what a switch costs), where the
    // other cases leave their waits for a CPU out.
    assert!(
        row("switch_round_trip").get("cpu_wait").is_none(),
        "{}",
        row("switch_round_trip")
    );
    if cfg!(target_os = "linux") {
        assert!(
            row("pipe_round_trip").get("cpu_wait").is_some(),
            "{}",
            row("pipe_round_trip")
        );
    }
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
    let v = run_json(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 2);
    assert_eq!(ms[0]["case"], "pread");
    assert_eq!(ms[1]["case"], "mmap_load");
    assert_eq!(ms[0]["params"]["io_size"], 4096);
    assert_empty(dir.path());
}

/// The read probe's advice in a run's JSON: its line, and its recommendation with
/// every key, at most medium confidence for a partial sweep.
fn check_read_advice(v: &Value) {
    let advice = v["advice"].as_array().unwrap();
    assert!(
        advice
            .iter()
            .any(|a| { a.as_str().unwrap().starts_with("read loop buffer (") })
    );
    let recs = v["recommendations"].as_array().unwrap();
    let read = recs
        .iter()
        .find(|r| r["topic"] == "read loop buffer")
        .expect("a read recommendation");
    for key in [
        "topic",
        "scope",
        "action",
        "choice",
        "effect",
        "evidence",
        "confidence",
        "caveats",
    ] {
        assert!(read.get(key).is_some(), "{key} missing: {read}");
    }
    assert!(["high", "medium", "low"].contains(&read["confidence"]["level"].as_str().unwrap()));
    // Three sizes with the best in the middle or at an edge: never more than medium
    // (a partial sweep of the default 14).
    assert_ne!(read["confidence"]["level"], "high", "{read}");
}

/// Several file sizes: each read in turn, each row naming its file, the table a
/// column for it, and each size its own answer.
#[test]
fn read_of_several_file_sizes_names_each_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "read",
            "--file-size",
            "256k,1m",
            "--block-sizes",
            "4k,64k",
            "--populate",
            "write",
            "--json",
        ])
        .args(TINY)
        .assert()
        .success();
    let v = run_json(&out.get_output().stdout);
    let cases: Vec<(&str, u64)> = v["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["case"].as_str().unwrap(),
                m["params"]["file_size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cases,
        [
            ("read/4KiB/write/256KiB", 262_144),
            ("read/64KiB/write/256KiB", 262_144),
            ("read/4KiB/write/1MiB", 1 << 20),
            ("read/64KiB/write/1MiB", 1 << 20),
        ]
    );
    let ids: Vec<&str> = v["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"read.buffer.read.write.256kib"), "{ids:?}");
    assert!(ids.contains(&"read.buffer.read.write.1mib"), "{ids:?}");
    let table = ioprobe(dir.path())
        .args(["read", "--file-size", "256k,1m", "--block-sizes", "4k,64k"])
        .args(["--populate", "write", "--no-save"])
        .args(TINY)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&table.get_output().stdout).into_owned();
    assert!(
        text.contains("read: files from the page cache, by size and block size"),
        "{text}"
    );
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
    let v = run_json(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    // Every method and block, once as written and once brought in by readahead.
    assert_eq!(ms.len(), 18);
    let populate: Vec<&str> = ms
        .iter()
        .map(|m| m["params"]["populate"].as_str().unwrap())
        .collect();
    assert_eq!(populate[..9], ["write"; 9]);
    assert_eq!(populate[9..], ["readahead"; 9]);
    for m in ms {
        check_measurement(m);
        assert_eq!(m["unit"], "bytes/s");
        assert_eq!(m["params"]["file_size"], 262_144);
        // The share of the time the reader waited for a CPU, left out of the figure
        // (Linux says; capped at nine tenths of a sample).
        if cfg!(target_os = "linux") {
            let w = m["cpu_wait"].as_f64().expect("cpu_wait");
            assert!((0.0..=0.9).contains(&w), "{w}");
        }
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
        methods[..9],
        [
            "read", "read", "read", "pread", "pread", "pread", "mmap", "mmap", "mmap"
        ]
    );
    assert_eq!(methods[9..], methods[..9]);
    let blocks: Vec<u64> = ms
        .iter()
        .take(3)
        .map(|m| m["params"]["block_size"].as_u64().unwrap())
        .collect();
    assert_eq!(blocks, [4096, 65536, 1 << 20]);
    check_read_advice(&v);
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
    assert!(text.contains("what to do") && text.contains("recommendations in detail:"));
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
    // What may make a figure mislead: huge pages, frequency scaling, dirty limits,
    // readahead and compression of the measured filesystem. Values are the machine's;
    // the keys are always there (null where unreadable).
    let t = &v["tuning"];
    for key in [
        "thp_enabled",
        "thp_defrag",
        "cpufreq_driver",
        "cpufreq_governor",
        "boost",
        "dirty_ratio",
        "dirty_background_ratio",
        "dirty_bytes",
        "dirty_background_bytes",
        "damon",
    ] {
        assert!(t.get(key).is_some(), "tuning lacks {key}: {t}");
    }
    assert!(t["damon"].is_array(), "{t}");
    assert!(t["dirty_ratio"].is_u64(), "{t}");
    let fs = &v["filesystem"];
    assert!(fs["compression"].is_string(), "{fs}");
    let on_disk = fs["source"].as_str().unwrap().starts_with("/dev/")
        && std::path::Path::new(fs["source"].as_str().unwrap()).exists();
    if on_disk && fs["fs_type"] != "btrfs" {
        // (btrfs reports an anonymous device number, not its disk's.)
        assert!(
            fs["read_ahead_kb"].is_u64(),
            "a block device has readahead: {fs}"
        );
    }
    ioprobe(dir.path())
        .arg("sysinfo")
        .assert()
        .success()
        .stdout(predicate::str::contains("page size"))
        .stdout(predicate::str::contains("dirty page limits"))
        .stdout(predicate::str::contains("transparent huge pages"));
    assert_empty(dir.path());
}

/// Runs a command that must fail with `code` and a single-line error naming `needle`.

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
    let v = run_json(&out.get_output().stdout);
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

#[test]
fn a_page_evicted_under_memory_pressure_is_labelled_not_fatal() {
    // IOPROBE_FAULT=evict evicts the file just before every residency check, as another
    // process's memory pressure can: the run goes on, the figure says what was resident
    // and carries a warning.
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .env("IOPROBE_FAULT", "evict")
        .args([
            "read",
            "--file-size",
            "1m",
            "--block-sizes",
            "64k",
            "--json",
        ])
        .args(TINY)
        .assert()
        .success();
    let v = run_json(&out.get_output().stdout);
    let m = &v["measurements"][0];
    let label = m["params"]["page_cache"].as_str().unwrap();
    assert!(label.starts_with("resident 0/256 pages before"), "{label}");
    let warnings = m["warnings"].to_string();
    assert!(
        warnings.contains("not fully in the page cache"),
        "{warnings}"
    );
    assert_empty(dir.path());
}

/// Every command, as `ioprobe <command> --help` names it.
const COMMANDS: [&str; 16] = [
    "run",
    "syscalls",
    "read",
    "write",
    "pipe",
    "copy",
    "sysinfo",
    "history",
    "show",
    "compare",
    "export",
    "import",
    "report",
    "advise",
    "completions",
    "manpage",
];

#[test]
fn every_help_has_examples_and_one_name_for_size_lists() {
    for c in COMMANDS {
        let out = Command::new(BIN).args([c, "--help"]).assert().success();
        let text = stdout_of(&out);
        let examples = text
            .split("Examples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{c} --help has no examples:\n{text}"));
        let lines: Vec<&str> = examples
            .lines()
            .take_while(|l| l.starts_with("  "))
            .collect();
        assert!(lines.len() >= 2, "{c}: {lines:?}");
        assert!(
            lines.iter().all(|l| l.trim_start().starts_with("ioprobe ")),
            "{c}: {lines:?}"
        );
    }
    // One flag name for a list of sizes; the old names still work, hidden.
    for c in ["read", "write", "pipe", "copy"] {
        let text = stdout_of(&Command::new(BIN).args([c, "--help"]).assert().success());
        assert!(text.contains("--sizes <SIZES>"), "{c}:\n{text}");
        assert!(
            !text.contains("--block-sizes") && !text.contains("--buffers"),
            "{c}:\n{text}"
        );
    }
    let compare = stdout_of(
        &Command::new(BIN)
            .args(["compare", "--help"])
            .assert()
            .success(),
    );
    assert!(compare.contains("The baseline run") && compare.contains("The run compared with it"));
    let import = stdout_of(
        &Command::new(BIN)
            .args(["import", "--help"])
            .assert()
            .success(),
    );
    assert!(import.contains("Run documents (from --json or export)"));
    insta::assert_snapshot!(
        "read_help",
        stdout_of(
            &Command::new(BIN)
                .env("COLUMNS", "100")
                .args(["read", "--help"])
                .assert()
                .success()
        )
    );
}

#[test]
fn completions_and_man_page_are_generated() {
    for (shell, marker) in [
        ("bash", "complete -F _ioprobe"),
        ("zsh", "#compdef ioprobe"),
        ("fish", "complete -c ioprobe"),
        ("elvish", "edit:completion:arg-completer[ioprobe]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let text = stdout_of(
            &Command::new(BIN)
                .args(["completions", shell])
                .assert()
                .success(),
        );
        assert!(text.contains(marker), "{shell}: {marker} missing");
        assert!(
            text.contains("populate") && text.contains("advise"),
            "{shell}"
        );
    }
    // bash really loads it.
    let script = stdout_of(
        &Command::new(BIN)
            .args(["completions", "bash"])
            .assert()
            .success(),
    );
    let bash = std::process::Command::new("bash")
        .args(["-c", "eval \"$1\" && complete -p ioprobe", "sh", &script])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&bash.stdout).contains("_ioprobe"),
        "{}",
        String::from_utf8_lossy(&bash.stderr)
    );
    Command::new(BIN)
        .args(["completions", "tcsh"])
        .assert()
        .code(2);
    let man = stdout_of(&Command::new(BIN).arg("manpage").assert().success());
    assert!(man.contains(".TH ioprobe 1"), "{man}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(man.contains(section), "{section} missing");
    }
    assert!(man.contains("ioprobe\\-advise"), "subcommands listed");
}
