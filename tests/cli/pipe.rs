//! The pipe probe.

use crate::*;

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
    imports_back(&out.get_output().stdout);
    let v = run_json(&out.get_output().stdout);
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
        .args(["--placement", "any", "--total", "256k", "--wide"])
        .args(TINY)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for needle in [
        "pipe: write-read, placement any, 256 KiB per sample",
        "writer cs/GiB vol/invol",
        "reader cs/GiB vol/invol",
        "64 KiB",
        "1 MiB",
        "pipe chunk (write-read, ",
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
    let v = run_json(&out.get_output().stdout);
    assert_eq!(v["measurements"][0]["params"]["pipe_size"], 131072);
    assert_empty(dir.path());
}

#[test]
fn interrupting_a_pipe_run_leaves_no_process_or_file() {
    default_stop_signals();
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
    assert_killed_by(out.status, "-INT", &String::from_utf8_lossy(&out.stderr));
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
fn pipe_tables_markdown_csv_and_advice_from_a_saved_run_are_stable() {
    presentation_is_stable("pipe", FIXTURE_PIPE);
}

#[test]
fn a_pipe_pass_is_fitted_to_time_between_steady_state_and_the_seed_total() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["pipe", "--sizes", "1k,64k", "--method", "write-read"])
        .args(["--placement", "same", "--pipe-size", "default", "--json"])
        .args(TINY)
        .assert()
        .success();
    let v = run_json(&out.get_output().stdout);
    assert_eq!(v["harness"]["pass_time_s"], 0.001);
    for m in v["measurements"].as_array().unwrap() {
        assert_eq!(m["status"], "ok", "{m}");
        let chunk = m["params"]["chunk_size"].as_u64().unwrap();
        let total = m["params"]["total"].as_u64().unwrap();
        // At least 1 MiB (four 64 KiB pipes, three chunks), at most seed 002's 1 GiB,
        // whole chunks; every sample the same size.
        assert!((1 << 20..=1 << 30).contains(&total), "{total}");
        assert_eq!(total % chunk, 0, "{total}");
        let samples = m["samples"].as_u64().unwrap();
        assert!(samples >= 6, "{m}");
        assert_eq!(
            m["iterations"].as_u64().unwrap(),
            samples * total / chunk,
            "{m}"
        );
        assert!(m["warmup_iterations"].as_u64().unwrap() >= (1 << 20) / chunk);
    }
}

#[test]
fn a_time_limit_is_kept_to_beyond_the_minimum_samples_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["pipe", "--sizes", "1k,4k", "--method", "write-read"])
        .args(["--placement", "same", "--pipe-size", "default"])
        .args(["--sample-time", "1ms", "--time-limit", "50ms", "--json"])
        .assert()
        .success();
    let v = run_json(&out.get_output().stdout);
    assert_eq!(v["harness"]["time_limit_s"], 0.05);
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("--time-limit"), "{warnings}");
    assert!(
        warnings.contains("cases had less than their budget"),
        "{warnings}"
    );
    // The limit never cuts a row below its minimum samples.
    for m in v["measurements"].as_array().unwrap() {
        assert!(m["samples"].as_u64().unwrap() >= 6, "{m}");
    }
    // Without a limit (or with --budget), nothing is said.
    let out = ioprobe(dir.path())
        .args(["pipe", "--sizes", "1k", "--method", "write-read"])
        .args(["--placement", "same", "--pipe-size", "default", "--json"])
        .args(TINY)
        .assert()
        .success();
    let v = run_json(&out.get_output().stdout);
    assert!(v["harness"].get("time_limit_s").is_none());
    assert!(!v["warnings"].to_string().contains("time limit"));
}
