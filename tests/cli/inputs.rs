//! Bad input: one line on stderr, exit 2, nothing left behind.

use crate::*;

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
    // ENOSPC. ioprobe ignores SIGXFSZ itself (no `trap '' XFSZ` in the shell), so the
    // write returns the error instead of killing it with scratch left behind.
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "exec prlimit --fsize=65536 {BIN} read --no-save --dir {} --file-size 1m --block-sizes 4k --sample-time 1ms --budget 20ms",
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

#[test]
fn a_copy_beyond_the_file_size_limit_fails_cleanly() {
    // Without a shell that ignores SIGXFSZ for it: the first write past the limit fails
    // with EFBIG (one line, exit 1, scratch removed) instead of killing ioprobe (153).
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("prlimit")
        .arg("--fsize=1000000")
        .arg(BIN)
        .args(["--no-save", "--dir"])
        .arg(dir.path())
        .args([
            "copy",
            "--file-size",
            "1m",
            "--method",
            "mmap-memcpy-munmap,mmap-memcpy-msync",
            "--cache",
            "warm",
            "--durability",
            "none",
        ])
        .args(TINY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert_empty(dir.path());
}

#[test]
fn sizes_and_durations_are_exact_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for bad in [
        "0.5", "1.5", "0.001k", "1e3", "1_000", "1i", " 4 k ", "4 k", "1,5k",
    ] {
        fails(d, &["syscalls", "--io-size", bad], 2, "--io-size");
    }
    fails(
        d,
        &["syscalls", "--io-size", "0.5"],
        2,
        "whole number of bytes",
    );
    fails(d, &["run", "--sample-time", "10"], 2, "needs a unit");
    fails(
        d,
        &["run", "--sample-time", "0.0000000001s"],
        2,
        "shorter than",
    );
    fails(
        d,
        &["run", "--sample-time", "50ns"],
        2,
        "a hundred times the clock's resolution",
    );
    fails(d, &["run", "--budget", "1e3ms"], 2, "unknown unit");
    // Decimal units are powers of 1000, binary ones of 1024; fractions that make whole
    // bytes are fine.
    let out = ioprobe(d)
        .args(["syscalls", "--case", "pread", "--io-size", "1kB", "--json"])
        .args(TINY)
        .assert()
        .success();
    assert_eq!(
        json_of(&out.get_output().stdout)["measurements"][0]["params"]["io_size"],
        1000
    );
    let out = ioprobe(d)
        .args(["syscalls", "--case", "pread", "--io-size", "1.5k", "--json"])
        .args(TINY)
        .assert()
        .success();
    assert_eq!(
        json_of(&out.get_output().stdout)["measurements"][0]["params"]["io_size"],
        1536
    );
    let help = Command::new(BIN)
        .args(["read", "--help"])
        .assert()
        .success();
    let help = String::from_utf8_lossy(&help.get_output().stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains("powers of 1024") && help.contains("powers of 1000"),
        "{help}"
    );
    assert_empty(d);
}

#[test]
fn repeated_values_are_measured_once_and_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "read",
            "--file-size",
            "64k",
            "--sizes",
            "4k,4k,4096,8k",
            "--method",
            "read,read",
            "--json",
        ])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let cases: Vec<&str> = v["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["case"].as_str().unwrap())
        .collect();
    assert_eq!(
        cases,
        [
            "read/4KiB/write",
            "read/8KiB/write",
            "read/4KiB/readahead",
            "read/8KiB/readahead"
        ]
    );
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert_eq!(
        stderr.matches("--sizes repeats a value").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("--method repeats a value").count(),
        1,
        "{stderr}"
    );
    let out = ioprobe(dir.path())
        .args(["syscalls", "--case", "null,null", "--json"])
        .args(TINY)
        .assert()
        .success();
    assert_eq!(
        json_of(&out.get_output().stdout)["measurements"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_empty(dir.path());
}

#[test]
fn sizes_that_are_not_whole_kib_get_exact_case_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "copy",
            "--file-size",
            "4097,4098,4k",
            "--method",
            "read-write",
            "--buffers",
            "64k",
            "--cache",
            "warm",
            "--durability",
            "none",
            "--json",
        ])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let cases: Vec<&str> = v["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["case"].as_str().unwrap())
        .collect();
    assert_eq!(
        cases,
        [
            "read-write/64KiB/warm/none/4097B",
            "read-write/64KiB/warm/none/4098B",
            "read-write/64KiB/warm/none/4KiB"
        ]
    );
    assert_empty(dir.path());
}

#[test]
fn messages_say_what_is_wrong_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // --cpu pins everything to one CPU: that is the conflict, whatever the machine has.
    fails(
        d,
        &["pipe", "--placement", "split", "--cpu", "0"],
        2,
        "conflicts with --placement split",
    );
    // A newline in an argument is shown escaped, the error stays on one line.
    fails(d, &["read", "--file-size", "4\nk"], 2, "'4\\nk'");
    fails(d, &["--store", "/no\nsuch", "history"], 2, "/no\\nsuch");
    // clap's useful parts survive the one-line form.
    fails(d, &["compare", "1"], 2, "<B>");
    fails(d, &["histroy"], 2, "similar subcommand exists: 'history'");
    assert_empty(d);
}

#[test]
fn export_and_advise_honour_the_output_format() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    with_store(&store)
        .args(["import", FIXTURE_A])
        .assert()
        .success();
    let csv = stdout_of(
        &with_store(&store)
            .args(["export", "1", "--csv"])
            .assert()
            .success(),
    );
    assert!(csv.starts_with("probe,case,unit,median"), "{csv}");
    let md = stdout_of(
        &with_store(&store)
            .args(["export", "1", "--markdown"])
            .assert()
            .success(),
    );
    assert!(md.contains("| "), "{md}");
    let v = json_of(
        &with_store(&store)
            .args(["advise", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    let adv = v["advice"].as_array().unwrap();
    assert!(adv.iter().any(|a| a["probe"] == "read"
        && a["run"] == 1
        && a["advice"].to_string().contains("read loop buffer")));
    let recs = v["recommendations"].as_array().unwrap();
    assert!(recs.iter().any(|r| r["topic"] == "read loop buffer"
        && r["evidence"]["runs"] == serde_json::json!([1])
        && r["choice"]["kind"] == "size"));
    let csv = stdout_of(
        &with_store(&store)
            .args(["advise", "--csv"])
            .assert()
            .success(),
    );
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        ["probe", "run", "date", "host", "advice", "machine"]
    );
    assert!(r.records().count() >= 2);
    let md = stdout_of(
        &with_store(&store)
            .args(["advise", "--markdown"])
            .assert()
            .success(),
    );
    assert!(
        md.contains("| operation | do this | why (the figure) | confidence |")
            && md.contains("use 64 KiB buffers"),
        "{md}"
    );
}

#[test]
fn advise_without_saving_prints_what_it_measured() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let a = with_store(&tmp.path().join("none.db"))
        .args(["advise", "--no-save", "--dir"])
        .arg(&scratch)
        .args(["--sample-time", "1ms", "--budget", "10ms"])
        .assert()
        .success();
    let out = stdout_of(&a);
    assert!(
        out.contains("read: this run (not saved)") && out.contains("read loop buffer (read,"),
        "{out}"
    );
    assert!(!tmp.path().join("none.db").exists());
    assert_empty(&scratch);
}

#[test]
fn quiet_silences_notes_but_not_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let run = |quiet: bool| {
        let mut c = with_store(&store);
        c.args([
            "read",
            "--file-size",
            "64k",
            "--sizes",
            "4k,4k",
            "--json",
            "--dir",
        ])
        .arg(&scratch)
        .args(TINY);
        if quiet {
            c.arg("-q");
        }
        c.assert().success()
    };
    // Without -q: the repeated size and where the run was saved are noted on stderr.
    let loud = stderr_of(&run(false));
    assert!(
        loud.contains("repeats a value") && loud.contains("saved as run 1"),
        "{loud}"
    );
    let quiet = run(true);
    assert_eq!(stderr_of(&quiet), "", "-q leaves stderr empty");
    json_of(&quiet.get_output().stdout);
    // Errors are still one line on stderr.
    let bad = with_store(&store)
        .args(["--quiet", "read", "--sizes", "0"])
        .assert()
        .code(2);
    assert!(stderr_of(&bad).contains("error"), "{}", stderr_of(&bad));
    assert_empty(&scratch);
}

/// The README and `run --help` quote the same duration for `ioprobe run`, or neither
/// quotes one.
#[test]
fn readme_and_help_quote_the_same_run_duration() {
    let quoted = |text: &str, line_has: &str| -> Option<String> {
        let line = text.lines().find(|l| l.contains(line_has))?;
        let from = line.find('≈')?;
        // "≈25 s" of "(≈25 s here)": the figure and its unit.
        let words: Vec<&str> = line[from..].split([' ', ')']).take(2).collect();
        Some(words.join(" "))
    };
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let help = Command::new(BIN).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let a = quoted(&readme, "cargo run --release -- run");
    let b = quoted(&help, "every probe and what to do");
    assert_eq!(a, b, "README {a:?}, --help {b:?}");
    // `run --help` names every probe it runs.
    let listed = help.split(')').next().unwrap_or("").replace('\n', " ");
    for kind in ioprobe::probes::REGISTRY {
        assert!(
            listed.contains(kind.name()),
            "run --help does not name {}: {help}",
            kind.name()
        );
    }
}

/// A run file whose rows lack a field their probe's typed params need is refused with
/// the field named, rather than read with every such row silently dropped (the copy
/// fixture without `eviction` used to show 3 lines instead of 217 and exit 0).
#[test]
fn a_row_missing_a_typed_param_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/copy-run.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    for m in doc["measurements"].as_array_mut().unwrap() {
        m["params"].as_object_mut().unwrap().remove("eviction");
    }
    let file = tmp.path().join("doctored.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    for cmd in [&["show"][..], &["import", "--store", "s.db"][..]] {
        let out = Command::new(BIN)
            .args(cmd)
            .arg(&file)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.lines().count() == 1 && err.contains("lacks param 'eviction'"),
            "{cmd:?}: {err}"
        );
    }
    assert!(
        !tmp.path().join("s.db").exists() || {
            let o = Command::new(BIN)
                .args(["history", "--json", "--store", "s.db"])
                .current_dir(tmp.path())
                .output()
                .unwrap();
            !String::from_utf8_lossy(&o.stdout).contains("\"id\"")
        }
    );
}
