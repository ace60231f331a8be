//! The results store: save, history, show, export, import, compare, advise.

use crate::*;

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
