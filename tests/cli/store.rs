//! The results store: save, history, show, export, import, compare, advise.

use crate::*;

/// Run 1 of `store` exported to a file under `tmp`, imported into another store,
/// exported again unchanged; the file itself works as a RUN.
fn export_then_import(tmp: &Path, store: &Path) {
    let exported = stdout_of(&with_store(store).args(["export", "1"]).assert().success());
    let file = tmp.join("run1.json");
    std::fs::write(&file, &exported).unwrap();
    let other = tmp.join("other.db");
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

    export_then_import(tmp.path(), &store);
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

/// `run --fresh` (its advice cites run 4 alone, after three saved runs), then runs 1
/// and 2 compared.
fn fresh_then_compare(store: &Path, scratch: &Path, small: [&str; 4]) {
    // --fresh: this run alone.
    let fresh = json_of(
        &with_store(store)
            .arg("run")
            .arg("--fresh")
            .arg("--dir")
            .arg(scratch)
            .args(small)
            .arg("--json")
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    assert!(
        fresh["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["evidence"]["runs"] == serde_json::json!([4])),
        "{fresh}"
    );
    let cmp = stdout_of(
        &with_store(store)
            .args(["compare", "1", "2"])
            .assert()
            .success(),
    );
    assert!(cmp.contains("compare: A = run 1, B = run 2"));
    assert!(cmp.contains("syscalls/pread") && cmp.contains("read/read/4KiB"));
}

/// The HTML report at `path`: one plot per probe, no JavaScript, nothing loaded.
fn check_self_contained_report(path: &Path) {
    let html = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        ioprobe::probes::REGISTRY.len(),
        "one plot per probe"
    );
    assert!(!html.contains("<script"), "the report needs no JavaScript");
    for load in [" src=", "<link", "url(", "@import", "href=\"http"] {
        assert!(
            !html.contains(load),
            "the report must load nothing, found {load}"
        );
    }
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
    assert!(
        out.contains("what to do") && out.contains("observations:"),
        "{out}"
    );
    assert!(
        out.contains("this run stands alone: no saved run of this machine to pool with"),
        "{out}"
    );
    assert!(
        out.contains(&format!("HTML report: {}", report.display())),
        "{out}"
    );
    check_self_contained_report(&report);
    // The second run's advice pools the first (as advise does), and cites both.
    let second = stdout_of(
        &with_store(&store)
            .arg("run")
            .arg("--dir")
            .arg(&scratch)
            .args(small)
            .arg("--json")
            .assert()
            .success(),
    );
    let doc = json_of(second.as_bytes());
    let pooled = doc["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["evidence"]["runs"] == serde_json::json!([1, 2]));
    assert!(pooled, "no recommendation cites runs 1 and 2: {doc}");
    // Its HTML report gives the same pooled advice as its text.
    let html = std::fs::read_to_string(tmp.path().join("reports/run-2.html")).unwrap();
    assert!(
        html.contains("evidence (run 1, 2)"),
        "the report's advice is not pooled"
    );
    let said = with_store(&store)
        .arg("run")
        .arg("--dir")
        .arg(&scratch)
        .args(small)
        .assert()
        .success();
    assert!(
        stdout_of(&said).contains("advice pooled from 3 runs (this one and 2 since "),
        "{}",
        stdout_of(&said)
    );
    fresh_then_compare(&store, &scratch, small);
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
            .code(2),
        "malformed JSON",
    );
    one_line_failure(
        with_store(&store)
            .args(["import", FIXTURE_V2])
            .assert()
            .code(2),
        "schema version 2",
    );
    assert!(!store.exists(), "a rejected import writes nothing");
    one_line_failure(
        with_store(&store).args(["show", "last"]).assert().code(2),
        "no runs saved",
    );
    with_store(&store)
        .args(["import", FIXTURE_A])
        .assert()
        .success();
    one_line_failure(
        with_store(&store).args(["show", "42"]).assert().code(2),
        "no run 42",
    );
    one_line_failure(
        with_store(&store).args(["show", "last~5"]).assert().code(2),
        "fewer than 6 runs",
    );
    one_line_failure(
        with_store(&store)
            .args(["show", "nonsense"])
            .assert()
            .code(2),
        "is not a run",
    );
    one_line_failure(
        with_store(&store)
            .args(["show", "missing.json"])
            .assert()
            .code(2),
        "No such file",
    );
    one_line_failure(
        with_store(&store)
            .args(["show", "last~-1"])
            .assert()
            .code(2),
        "N a whole number",
    );
    one_line_failure(
        with_store(&store).args(["show", "-3"]).assert().code(2),
        "unexpected argument",
    );
    one_line_failure(
        with_store(&store).args(["show", "0"]).assert().code(2),
        "is not a run",
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
    // 40 processes create one new store at once, then save: none may fail with
    // "database is locked" (issue 9: 13 of 40 did).
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    let children: Vec<_> = (0..40)
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
    assert_eq!(h.as_array().unwrap().len(), 80);
}

#[test]
fn advise_gives_evidence_from_saved_runs_or_measures_first() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    with_store(&store)
        .args(["import", FIXTURE_A])
        .assert()
        .success();
    let out = stdout_of(
        &with_store(&store)
            .args(["advise", "--wide"])
            .assert()
            .success(),
    );
    assert!(
        out.contains("read: run 1 (2026-11-21T09:00:00Z, fixture-host), a partial sweep (0 of 28 default cases)"),
        "{out}"
    );
    assert!(
        out.contains("descriptor reuse: use one descriptor kept open (pread)")
            && out.contains(
                "read loop buffer (read, 10 MiB file in the page cache): use 64 KiB buffers"
            ),
        "{out}"
    );
    assert!(
        out.contains("what to do") && out.contains("reading a file sequentially"),
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
        out.contains("read: run 1 (") && out.contains("read loop buffer (read,"),
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

/// FIXTURE_A with `edit` applied, written to `dir/name`.
fn edited_fixture(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> std::path::PathBuf {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE_A).unwrap()).unwrap();
    edit(&mut v);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

/// Fixtures edited into what import must refuse, each with the words its error says.
fn bad_fixtures(dir: &Path) -> Vec<(std::path::PathBuf, &'static str)> {
    let read_row = |v: &Value| {
        v["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .position(|m| m["probe"] == "read")
            .unwrap()
    };
    vec![
        (
            edited_fixture(dir, "climb.json", |v| {
                v["measurements"][0]["probe"] = "../x".into()
            }),
            "unknown probe '../x'",
        ),
        (
            edited_fixture(dir, "abs.json", |v| {
                v["measurements"][0]["probe"] = "/tmp/evil".into()
            }),
            "unknown probe",
        ),
        (
            edited_fixture(dir, "case.json", |v| {
                v["measurements"][0]["case"] = "a\nb <script>".into()
            }),
            "case name",
        ),
        (
            edited_fixture(dir, "noblock.json", |v| {
                let i = read_row(v);
                v["measurements"][i]["params"]
                    .as_object_mut()
                    .unwrap()
                    .remove("block_size");
            }),
            "lacks param 'block_size'",
        ),
        (
            edited_fixture(dir, "nomethod.json", |v| {
                let i = read_row(v);
                let m = &mut v["measurements"][i];
                m["probe"] = "pipe".into();
                *m["params"].as_object_mut().unwrap() = serde_json::from_str(
                    r#"{"placement":"any","chunk_size":4096,"read_size":4096,"pipe_size_requested":"default","total":1048576}"#,
                )
                .unwrap();
            }),
            "lacks param 'method'",
        ),
        (
            edited_fixture(dir, "unknown.json", |v| {
                let i = read_row(v);
                v["measurements"][i]["params"]["bogus"] = Value::from(1);
            }),
            "unknown param 'bogus' (expected one of method, ",
        ),
        (
            edited_fixture(dir, "huge.json", |v| {
                let i = read_row(v);
                v["measurements"][i]["params"]["block_size"] = Value::from(u64::MAX);
            }),
            "param 'block_size' has an invalid value",
        ),
        (
            edited_fixture(dir, "badmethod.json", |v| {
                let i = read_row(v);
                v["measurements"][i]["params"]["method"] = "sip".into();
            }),
            "param 'method' has an invalid value \"sip\": unknown variant `sip`",
        ),
        (
            edited_fixture(dir, "nan.json", |v| {
                v["measurements"][0]["median"] = Value::from(-1.0);
            }),
            "negative or not a number",
        ),
    ]
}

#[test]
fn hostile_run_files_are_refused_before_they_reach_a_report() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    let cases = bad_fixtures(tmp.path());
    for (file, needle) in &cases {
        one_line_failure(
            with_store(&store).arg("import").arg(file).assert().code(2),
            needle,
        );
        // Read straight from the file, not through the store: refused just the same.
        let out = tmp.path().join("out");
        one_line_failure(
            with_store(&store)
                .arg("report")
                .arg(file)
                .arg("--svg")
                .arg(&out)
                .assert()
                .code(2),
            needle,
        );
        assert!(!out.exists(), "nothing written for {}", file.display());
    }
    assert!(!store.exists(), "a rejected import writes nothing");
    assert!(!tmp.path().join("x.svg").exists());
}

#[test]
fn imports_refuse_what_is_not_a_regular_file_of_sane_size() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    let fifo = tmp.path().join("fifo.json");
    mkfifo(&fifo);
    let big = tmp.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    for (file, needle) in [
        (fifo.as_path(), "not a regular file"),
        (Path::new("/dev/zero"), "not a regular file"),
        (tmp.path(), "not a regular file"),
        (big.as_path(), "larger than the 256 MiB"),
    ] {
        let start = Instant::now();
        one_line_failure(
            with_store(&store)
                .arg("import")
                .arg(file)
                .timeout(Duration::from_secs(20))
                .assert()
                .code(2),
            needle,
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{}",
            file.display()
        );
    }
    assert!(!store.exists());
}

#[test]
fn store_paths_that_are_not_regular_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let journal_before = Path::new("/dev/null-journal").exists();
    for store in [Path::new("/dev/null"), tmp.path()] {
        one_line_failure(
            with_store(store)
                .args(["import", FIXTURE_A])
                .assert()
                .code(2),
            "not a regular file",
        );
        one_line_failure(
            with_store(store).arg("history").assert().code(2),
            "not a regular file",
        );
    }
    assert_eq!(Path::new("/dev/null-journal").exists(), journal_before);
    assert!(entries(tmp.path()).is_empty());
}

#[test]
fn reports_never_replace_the_store_and_are_shareable() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    with_store(&store)
        .args(["import", FIXTURE_A])
        .assert()
        .success();
    let link = tmp.path().join("link.html");
    std::os::unix::fs::symlink(&store, &link).unwrap();
    for target in [&store, &link] {
        one_line_failure(
            with_store(&store)
                .args(["report", "last", "--html"])
                .arg(target)
                .assert()
                .code(2),
            "is the results store",
        );
    }
    with_store(&store).arg("history").assert().success();
    // 0644 less the umask, as any file a user asks for.
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let html = tmp.path().join(format!("r-{umask}.html"));
        let svg = tmp.path().join(format!("svg-{umask}"));
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "umask {umask}; exec \"$0\" --store \"$1\" report last --html \"$2\" --svg \"$3\""
            ))
            .arg(BIN)
            .arg(&store)
            .arg(&html)
            .arg(&svg)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        for f in [html.clone(), svg.join("read.svg"), svg.join("syscalls.svg")] {
            let m = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(m, mode, "{} with umask {umask}", f.display());
        }
    }
}

#[test]
fn svg_files_stay_in_their_directory_and_never_follow_a_planted_link() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    with_store(&store)
        .args(["import", FIXTURE_A])
        .assert()
        .success();
    let svg = tmp.path().join("svg");
    std::fs::create_dir(&svg).unwrap();
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, svg.join("read.svg")).unwrap();
    with_store(&store)
        .args(["report", "last", "--svg"])
        .arg(&svg)
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    let meta = std::fs::symlink_metadata(svg.join("read.svg")).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the link was replaced, not followed"
    );
    let mut names = entries(&svg);
    names.sort();
    assert_eq!(names, ["read.svg", "syscalls.svg"]);
}

/// Runs ioprobe as user nobody (needs root and setpriv); None when that is not possible.
fn as_nobody(args: &[&std::ffi::OsStr]) -> Option<std::process::Output> {
    let root = std::process::Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&root.stdout).trim() != "0" {
        return None;
    }
    std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args(args)
        .output()
        .ok()
}

#[test]
fn read_only_stores_can_still_be_read() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = tmp.path().join("results.db");
    for f in [FIXTURE_A, FIXTURE_B] {
        with_store(&store).args(["import", f]).assert().success();
    }
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(out_dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let html = out_dir.path().join("r.html");
    let reads: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec!["history".as_ref()],
        vec!["show".as_ref(), "last".as_ref()],
        vec!["export".as_ref(), "1".as_ref()],
        vec!["compare".as_ref(), "1".as_ref(), "2".as_ref()],
        vec!["advise".as_ref()],
        vec![
            "report".as_ref(),
            "last".as_ref(),
            "--html".as_ref(),
            html.as_os_str(),
        ],
    ];
    // A 0444 store in a directory the user cannot write.
    let mut ran = false;
    for args in &reads {
        let mut full: Vec<&std::ffi::OsStr> = vec!["--store".as_ref(), store.as_os_str()];
        full.extend(args);
        let Some(out) = as_nobody(&full) else { break };
        ran = true;
        assert!(
            out.status.success(),
            "{args:?} as nobody: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if !ran {
        eprintln!(
            "read_only_stores_can_still_be_read: not root, the unwritable-directory part skipped"
        );
    }
    // A store on a read-only mount (a private mount namespace; needs root).
    let mnt = tempfile::tempdir().unwrap();
    let script = "set -e; mount -t tmpfs none \"$1\"; \"$0\" --store \"$1/r.db\" import \"$2\" >/dev/null; mount -o remount,ro \"$1\"; \
         for c in history 'show last' 'export 1' 'advise'; do \"$0\" --store \"$1/r.db\" $c >/dev/null; done; \
         \"$0\" --store \"$1/r.db\" report last --html \"$3\"".to_string();
    let can_unshare = std::process::Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !can_unshare {
        eprintln!(
            "read_only_stores_can_still_be_read: no mount namespace here, read-only mount part skipped"
        );
        return;
    }
    let o = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .arg(BIN)
        .arg(mnt.path())
        .arg(FIXTURE_A)
        .arg(out_dir.path().join("ro.html"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "read-only mount: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn compare_subsamples_huge_runs_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let big = edited_fixture(tmp.path(), "big.json", |v| {
        let m = &mut v["measurements"][0];
        let med = m["median"].as_f64().unwrap();
        let raw: Vec<f64> = (0..12_000)
            .map(|i| med * (1.0 + (i % 7) as f64 * 1e-3))
            .collect();
        m["samples"] = raw.len().into();
        m["raw"] = raw.into();
    });
    let store = tmp.path().join("results.db");
    let a = with_store(&store)
        .arg("compare")
        .arg(&big)
        .arg(&big)
        .arg("--markdown")
        .assert()
        .success();
    let out = stdout_of(&a);
    assert!(
        out.contains("random subsample (fixed seed) of 10000 of 12000 samples in A"),
        "{out}"
    );
    // Reproducible: the same text twice.
    let again = stdout_of(
        &with_store(&store)
            .arg("compare")
            .arg(&big)
            .arg(&big)
            .arg("--markdown")
            .assert()
            .success(),
    );
    assert_eq!(out, again);
}

#[test]
fn a_partial_run_saved_after_a_complete_one_does_not_change_the_advice() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let measure = |args: &[&str]| {
        with_store(&store)
            .args(args)
            .arg("--dir")
            .arg(&scratch)
            .args(["--sample-time", "1ms", "--budget", "10ms"])
            .assert()
            .success();
    };
    let advise = || {
        json_of(
            &with_store(&store)
                .args(["advise", "--json"])
                .assert()
                .success()
                .get_output()
                .stdout,
        )
    };
    // Run 1: the whole default syscalls sweep. Run 2: one case of it.
    measure(&["syscalls"]);
    let before = advise();
    measure(&["syscalls", "--case", "null"]);
    let after = advise();
    let of = |v: &Value| -> (Value, Vec<Value>) {
        let source = v["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["probe"] == "syscalls")
            .unwrap()
            .clone();
        let recs = v["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["evidence"]["rows"][0]["probe"] == "syscalls")
            .cloned()
            .collect();
        (source, recs)
    };
    let (s1, r1) = of(&before);
    let (s2, r2) = of(&after);
    assert_eq!(s1["run"], 1);
    assert_eq!(s1["coverage"], "full");
    assert_eq!(
        s2["run"], 1,
        "the partial run 2 replaced the complete run 1: {s2}"
    );
    assert_eq!(r1, r2, "the advice changed");
    let topics: Vec<&str> = r2.iter().map(|r| r["topic"].as_str().unwrap()).collect();
    assert!(
        topics.contains(&"positioned I/O") && topics.contains(&"descriptor reuse"),
        "{topics:?}"
    );
    // With only a partial run, its advice is used and says so.
    let lone = tmp.path().join("lone.db");
    with_store(&lone)
        .args(["syscalls", "--case", "pread,lseek_read", "--dir"])
        .arg(&scratch)
        .args(["--sample-time", "1ms", "--budget", "10ms"])
        .assert()
        .success();
    let text = stdout_of(&with_store(&lone).arg("advise").assert().success());
    // Prose wraps at 100 columns: compare with the lines joined.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("syscalls: run 1 (")
            && text.contains("a partial sweep (2 of 17 default cases)"),
        "{text}"
    );
    assert!(
        text.contains("a partial sweep (2 of the 17 cases"),
        "{text}"
    );
    assert_empty(&scratch);
}

#[test]
fn compare_puts_several_runs_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    // Relative names, so the snapshot does not depend on where the tree is.
    std::fs::copy(FIXTURE_A, tmp.path().join("a.json")).unwrap();
    std::fs::copy(FIXTURE_B, tmp.path().join("b.json")).unwrap();
    let table = stdout_of(
        &with_store(&store)
            .current_dir(tmp.path())
            .args(["compare", "a.json", "b.json", "a.json"])
            .assert()
            .success(),
    );
    insta::assert_snapshot!("compare_matrix", table);
    assert!(
        table.contains("1.20× slower") && table.contains("0.800× faster"),
        "{table}"
    );
    let v = json_of(
        &with_store(&store)
            .args(["compare", FIXTURE_A, FIXTURE_B, FIXTURE_A, "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 2);
    let fail = with_store(&store)
        .args([
            "compare",
            FIXTURE_A,
            FIXTURE_A,
            FIXTURE_B,
            "--fail-if-slower",
            "5%",
        ])
        .assert()
        .code(3);
    let err = stderr_of(&fail);
    assert!(err.contains("syscalls/null (+20.0%) in "), "{err}");
    assert!(!store.exists());
}

/// `advise` pools the saved runs of one machine and says so; every run gives the same
/// topic ids; a recommendation that differs from the previous `advise` is marked with
/// what it said and what evidence is new.
#[test]
fn advise_pools_three_runs_keeps_ids_and_marks_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("results.db");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    for _ in 0..3 {
        with_store(&store)
            .args(["syscalls", "--case", "pread,lseek_read,pwrite,lseek_write"])
            .arg("--dir")
            .arg(&scratch)
            .args(["--sample-time", "1ms", "--budget", "10ms"])
            .assert()
            .success();
    }
    let ids = |n: &str| -> Vec<String> {
        let out = with_store(&store)
            .args(["show", n, "--json"])
            .assert()
            .success();
        json_of(&out.get_output().stdout)["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    let first = ids("1");
    assert_eq!(
        first,
        ["syscalls.positioned.reads", "syscalls.positioned.writes"]
    );
    assert_eq!(ids("2"), first);
    assert_eq!(ids("3"), first);
    let advise = || {
        let t = stdout_of(&with_store(&store).arg("advise").assert().success());
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let text = advise();
    assert!(text.contains("pooled from 3 runs (1, 2, 3)"), "{text}");
    assert!(!text.contains("(changed)"), "{text}");
    let out = with_store(&store)
        .args(["advise", "--json"])
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    let recs = v["recommendations"].as_array().unwrap();
    for r in recs {
        assert_eq!(r["evidence"]["runs"], serde_json::json!([1, 2, 3]), "{r}");
    }
    let source = &v["sources"][0];
    assert_eq!(source["pooled"], serde_json::json!([1, 2, 3]), "{source}");
    // Had the previous advise said otherwise, this one says what changed.
    let machine = source["machine"].as_str().unwrap().to_string();
    let action = recs[1]["action"].as_str().unwrap().to_string();
    {
        use ioprobe::results::store::{Seen, Store};
        let mut s = Store::open(&store).unwrap();
        let before = Seen {
            action: "use something else".into(),
            runs: "1".into(),
            seen_at: "2026-01-01T00:00:00Z".into(),
        };
        s.record_advice(&machine, &[("syscalls.positioned.writes".into(), before)])
            .unwrap();
    }
    let text = advise();
    assert!(text.contains("(changed)") && !action.is_empty(), "{text}");
    assert!(
        text.contains("changed since the advise of 2026-01-01T00:00:00Z: it said \"use something else\" from runs 1; the evidence is now runs 1, 2, 3"),
        "{text}"
    );
    // That advise was remembered: the next one has nothing to mark.
    assert!(!advise().contains("(changed)"));
    assert_empty(&scratch);
}
