//! The write probe: seed 000's sweep for write(2), in three durability modes.

use crate::*;

#[test]
fn write_json_every_method_and_durability_verifies_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args([
            "write",
            "--file-size",
            "64k",
            "--block-sizes",
            "100,4k,128k",
        ])
        .args([
            "--method",
            "write,pwrite",
            "--durability",
            "none,fsync,dsync",
        ])
        .arg("--json")
        .args(TINY)
        .assert()
        .success();
    imports_back(&out.get_output().stdout);
    let v = run_json(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 18, "2 methods × 3 durability modes × 3 blocks");
    let cases: Vec<&str> = ms.iter().map(|m| m["case"].as_str().unwrap()).collect();
    assert_eq!(
        &cases[..4],
        [
            "write/none/100B",
            "write/none/4KiB",
            "write/none/128KiB",
            "write/fsync/100B"
        ]
    );
    for m in ms {
        check_measurement(m);
        let p = &m["params"];
        assert_eq!(m["status"], "ok");
        assert_eq!(m["unit"], "bytes/s");
        assert_eq!(p["file_size"], 65_536);
        assert!(
            p["page_cache"]
                .as_str()
                .unwrap()
                .starts_with("resident 16/16 pages before"),
            "{p}"
        );
        let state = p["durability_state"].as_str().unwrap();
        match p["durability"].as_str().unwrap() {
            "none" => assert!(state.starts_with("not durable"), "{state}"),
            "fsync" => assert!(state.contains("fsync"), "{state}"),
            "dsync" => assert!(state.contains("O_DSYNC"), "{state}"),
            other => panic!("durability {other}"),
        }
        let d = &m["derived"];
        for k in [
            "ns_per_call",
            "s_per_10gib",
            "user_s_per_gib",
            "sys_s_per_gib",
        ] {
            assert!(d[k].as_f64().is_some_and(|x| x >= 0.0), "{k}: {d}");
        }
        assert!(d["fits_in"].is_string());
        assert!(
            m["note"]
                .as_str()
                .unwrap()
                .contains("rewritten in place (no block allocation timed)")
        );
    }
    // A 100-byte block: 656 writes (the last one short) and the lseek.
    assert_eq!(ms[0]["derived"]["calls_per_pass"], 657.0);
    let advice = v["advice"].as_array().unwrap();
    assert!(
        advice.iter().any(|a| a
            .as_str()
            .unwrap()
            .starts_with("write (write): durability costs")),
        "{advice:?}"
    );
    assert_empty(dir.path());
}

#[test]
fn write_table_says_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["write", "--file-size", "64k", "--block-sizes", "4k,16k"])
        .args(["--durability", "none,dsync", "--wide"])
        .args(TINY)
        .assert()
        .success();
    let text = stdout_of(&out);
    for needle in [
        "write: 64 KiB pre-allocated file rewritten in place into the page cache, by block size (durability none)",
        "with O_DSYNC (every write durable)",
        "durability: durable: O_DSYNC",
        "usr / sys s/GiB",
        "write loop buffer (write, durability dsync, 64 KiB file rewritten in place): use ",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    assert_empty(dir.path());
}

#[test]
fn write_bad_input_is_refused_and_help_lists_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fails(
        d,
        &["write", "--durability", "sometimes"],
        2,
        "unknown durability 'sometimes' (valid: none, fsync, dsync)",
    );
    fails(
        d,
        &["write", "--method", "mmap"],
        2,
        "unknown method 'mmap' (valid: write, pwrite)",
    );
    fails(d, &["write", "--block-sizes", "0"], 2, "size '0' is zero");
    fails(d, &["write", "--file-size", "0"], 2, "size '0' is zero");
    fails(d, &["write", "--block-sizes", "2G"], 2, "too large");
    assert_empty(d);
    let help = stdout_of(
        &Command::new(BIN)
            .args(["write", "--help"])
            .assert()
            .success(),
    );
    assert!(
        help.contains("[possible values: none, fsync, dsync]"),
        "{help}"
    );
    assert!(help.contains("[possible values: write, pwrite]"), "{help}");
}
