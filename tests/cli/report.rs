//! HTML reports and SVG plots.

use crate::*;

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
    // Tables never wrap their cells; each scrolls on its own if it must.
    assert!(dom.contains("white-space: nowrap"), "cells may wrap");
    assert_eq!(
        dom.matches("<table").count(),
        dom.matches("<div class=\"scroll\"><table").count(),
        "a table outside a scrolling box"
    );
    assert!(
        dom.contains("What to do") && dom.contains("descriptor reuse"),
        "advice missing from the page"
    );
}

#[test]
fn export_openmetrics_labels_every_median() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    let text = stdout_of(
        &with_store(&store)
            .args(["export", FIXTURE_PIPE, "--format", "openmetrics"])
            .assert()
            .success(),
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE_PIPE).unwrap()).unwrap();
    let measured = run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["status"] == "ok")
        .count();
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(samples.len(), measured);
    let family = "ioprobe_throughput_bytes_per_second";
    assert!(text.contains(&format!(
        "# TYPE {family} gauge\n# UNIT {family} bytes_per_second\n"
    )));
    for line in samples {
        // name{label="value",…} number
        let (head, value) = line.rsplit_once(' ').unwrap();
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        assert!(v > 0.0 && v.is_finite(), "{line}");
        let labels = head
            .strip_prefix(&format!("{family}{{"))
            .and_then(|l| l.strip_suffix('}'))
            .unwrap_or_else(|| panic!("{line}"));
        for needed in [
            "probe=\"pipe\"",
            "case=\"",
            "host=\"",
            "param_chunk_size=\"",
        ] {
            assert!(labels.contains(needed), "{needed} missing: {line}");
        }
        let mut rest = labels;
        while !rest.is_empty() {
            let (name, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("{line}"));
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "label name {name}"
            );
            // The value runs to the first unescaped quote.
            let mut end = None;
            let mut escaped = false;
            for (i, c) in after.char_indices() {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.unwrap_or_else(|| panic!("unterminated value in {line}"));
            rest = after[end + 1..].trim_start_matches(',');
        }
    }
}

#[test]
fn wide_ci_warnings_fold_into_one_line_per_table_unless_verbose() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    let show = |extra: &[&str]| {
        stdout_of(
            &with_store(&store)
                .args(["show", FIXTURE_PIPE])
                .args(extra)
                .assert()
                .success(),
        )
    };
    let folded = show(&[]);
    let verbose = show(&["--verbose"]);
    let per_row = |t: &str| {
        t.matches("wider than the ±1% target (time budget spent)\n")
            .count()
    };
    assert_eq!(per_row(&folded), 0, "{folded}");
    assert!(
        folded.contains("rows with a 95% CI wider than the ±1% target"),
        "{folded}"
    );
    assert!(per_row(&verbose) > folded.matches("rows with a 95% CI").count());
    assert!(!verbose.contains("--verbose lists each"));
    // JSON keeps every row's own warning.
    let json = json_of(
        &with_store(&store)
            .args(["show", FIXTURE_PIPE, "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    let in_json = json["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().starts_with("95% CI is ±"))
        })
        .count();
    assert_eq!(in_json, per_row(&verbose));
}
