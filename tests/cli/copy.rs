//! The copy probe.

use crate::*;

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
        let v = run_json(&out.get_output().stdout);
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

/// Whether this directory's filesystem shares blocks (FICLONE), found out with
/// coreutils' `cp --reflink=always`, independently of ioprobe.
fn reflink_works(dir: &std::path::Path) -> bool {
    let probe = dir.join("reflink-probe");
    std::fs::write(&probe, b"x").unwrap();
    let ok = std::process::Command::new("cp")
        .arg("--reflink=always")
        .arg(&probe)
        .arg(dir.join("reflink-probe.copy"))
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    for f in ["reflink-probe", "reflink-probe.copy"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    ok
}

/// A copy row's samples left out until its rate held steady: at most 5, and the row
/// still has its minimum of 6 after them.
fn check_steady(m: &serde_json::Value) {
    let left_out = m["derived"]["warmup_samples"].as_f64().unwrap();
    assert!((0.0..=5.0).contains(&left_out), "{left_out}");
    assert!([0.0, 1.0].contains(&m["derived"]["warmup_settled"].as_f64().unwrap()));
    assert!(m["samples"].as_u64().unwrap() >= 6, "{}", m["samples"]);
    // A copy's write-back runs beside it: its waits for a CPU stay in its figure.
    assert!(m.get("cpu_wait").is_none(), "{}", m["case"]);
}

#[test]
fn copy_covers_cache_states_and_durability_and_labels_them() {
    let dir = tempfile::tempdir().unwrap();
    let reflink = reflink_works(dir.path());
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
    imports_back(&out.get_output().stdout);
    let v = run_json(&out.get_output().stdout);
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
            check_steady(m);
        } else {
            // FICLONE works where the filesystem shares blocks (btrfs, XFS): there the
            // row must have a figure.
            assert!(!reflink, "{}: {}", m["case"], m["reason"]);
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
            "--wide",
        ])
        .args(TINY)
        .assert()
        .success();
    let text = String::from_utf8(table.get_output().stdout.clone()).unwrap();
    for needle in [
        "copy: 256 KiB file, warm source, durability fsync — fastest first",
        "× fastest",
        if reflink {
            "reflink"
        } else {
            "reflink unsupported: ioctl(FICLONE) failed"
        },
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    // A durable copy method is recommended, whichever it is here, in the summary too.
    assert!(
        text.contains("file copy method (durable) (256 KiB file, warm source): use "),
        "{text}"
    );
    assert!(text.contains("copying a file durably (fsync)"), "{text}");
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
    let v = run_json(&out.get_output().stdout);
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

#[test]
fn copy_tables_markdown_csv_and_advice_from_a_saved_run_are_stable() {
    presentation_is_stable("copy", FIXTURE_COPY);
}

/// A 4 KiB file copied with read/write and a 64 KiB buffer.
const SMALL_FILE_COPY: [&str; 7] = [
    "copy",
    "--file-size",
    "4k",
    "--method",
    "read-write",
    "--sizes",
    "64k",
];

#[test]
fn small_warm_files_are_copied_several_to_a_sample_each_checked_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(SMALL_FILE_COPY)
        .args(["--cache", "warm,cold", "--durability", "none", "--json"])
        // 20 ms samples: even a copy slowed 100-fold by a loaded machine leaves room
        // for several per sample.
        .args(["--sample-time", "20ms", "--budget", "30ms"])
        .assert()
        .success();
    let v = run_json(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    let row = |cache: &str| {
        ms.iter()
            .find(|m| m["params"]["cache"] == cache)
            .unwrap_or_else(|| panic!("no {cache} row"))
    };
    let warm = row("warm");
    assert_eq!(warm["status"], "ok", "{warm}");
    // A 4 KiB copy takes tens of microseconds: a 20 ms sample holds many.
    assert!(
        warm["iterations"].as_u64().unwrap() > 2 * warm["samples"].as_u64().unwrap(),
        "{warm}"
    );
    // A cold source must be evicted before each copy: one per sample.
    let cold = row("cold");
    if cold["status"] == "ok" {
        assert_eq!(cold["iterations"], cold["samples"], "{cold}");
    }
    assert_empty(dir.path());
    // The fault hook corrupts the first copy of the first sample: caught.
    let out = ioprobe(dir.path())
        .args(SMALL_FILE_COPY)
        .args(["--cache", "warm", "--durability", "none", "--json"])
        .args(TINY)
        .env("IOPROBE_FAULT", "copy-corrupt")
        .assert()
        .code(1);
    let v = run_json(&out.get_output().stdout);
    assert_eq!(v["measurements"][0]["status"], "failed");
    assert_empty(dir.path());
}
