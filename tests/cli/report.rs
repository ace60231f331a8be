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
    assert!(
        dom.contains("What to do") && dom.contains("descriptor reuse"),
        "advice missing from the page"
    );
}
