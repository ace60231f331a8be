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
    let Some(chromium) = chromium_for("html_report_loads_in_headless_chromium") else {
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
    let family = "ioprobe_throughput_bytes_per_second";
    // The figures; the answers follow in families of their own (tests/cli/metrics.rs).
    let samples: Vec<&str> = text.lines().filter(|l| l.starts_with(family)).collect();
    assert_eq!(samples.len(), measured);
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
                .args(["show", FIXTURE_PIPE, "--wide"])
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

/// The widest line of `text`, in characters.
fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn tables_fit_100_columns_or_the_given_width_and_wide_shows_every_column() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    let show = |fixture: &str, extra: &[&str], columns: Option<&str>| {
        let mut c = with_store(&store);
        c.args(["show", fixture]).args(extra).env_remove("COLUMNS");
        if let Some(cols) = columns {
            c.env("COLUMNS", cols);
        }
        stdout_of(&c.assert().success())
    };
    for fixture in [FIXTURE_PIPE, FIXTURE_COPY, FIXTURE_A] {
        // Not a terminal: 100 columns, tables and prose alike.
        let text = show(fixture, &[], None);
        assert!(widest(&text) <= 100, "{}\n{text}", widest(&text));
        // COLUMNS narrows it further; columns are left out before any cell wraps.
        let narrow = show(fixture, &[], Some("72"));
        assert!(widest(&narrow) <= 72, "{}\n{narrow}", widest(&narrow));
        // --wide: every column, whatever the width.
        let wide = show(fixture, &["--wide"], Some("72"));
        assert!(!wide.contains("--wide adds"), "{wide}");
        assert!(widest(&wide) > 100, "{wide}");
    }
    let pipe = show(FIXTURE_PIPE, &[], None);
    assert!(
        pipe.contains(
            "(--wide adds: s/GiB, writer usr/sys s/GiB, reader usr/sys s/GiB, calls/GiB w/r)"
        ),
        "{pipe}"
    );
    let wide = show(FIXTURE_PIPE, &["--wide"], None);
    for header in [
        "calls/GiB w/r",
        "writer usr/sys s/GiB",
        "CPU s/GiB writer / reader",
    ] {
        assert!(wide.contains(header), "{header}: {wide}");
    }
}

#[test]
fn colour_marks_headings_the_best_row_and_warnings_only_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    let show = |extra: &[&str], env: &[(&str, &str)]| {
        let mut c = with_store(&store);
        c.args(["show", FIXTURE_PIPE])
            .args(extra)
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE");
        for (k, v) in env {
            c.env(k, v);
        }
        stdout_of(&c.assert().success())
    };
    const BOLD: &str = "\u{1b}[1m";
    const GREEN: &str = "\u{1b}[38;5;10m";
    const YELLOW: &str = "\u{1b}[33m";
    let coloured = show(&["--color", "always"], &[("NO_COLOR", "1")]);
    assert!(
        coloured.contains(&format!("{BOLD}pipe: write-read")),
        "{coloured}"
    );
    assert!(coloured.contains(GREEN), "best row: {coloured}");
    assert!(
        coloured.contains(&format!("{YELLOW}  warning:")),
        "{coloured}"
    );
    // Colour codes take no width: the tables still fit.
    let plain_width = |t: &str| {
        t.lines()
            .map(|l| {
                l.split('\u{1b}')
                    .enumerate()
                    .map(|(i, p)| {
                        if i == 0 {
                            p.chars().count()
                        } else {
                            p.chars()
                                .skip_while(|c| !c.is_ascii_alphabetic())
                                .skip(1)
                                .count()
                        }
                    })
                    .sum::<usize>()
            })
            .max()
            .unwrap_or(0)
    };
    assert!(plain_width(&coloured) <= 100);
    // Not a terminal: no colour, unless CLICOLOR_FORCE; NO_COLOR and --color never win.
    assert!(!show(&[], &[]).contains('\u{1b}'));
    assert!(show(&[], &[("CLICOLOR_FORCE", "1")]).contains(GREEN));
    assert!(!show(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains('\u{1b}'));
    assert!(!show(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]).contains('\u{1b}'));
    // Machine formats are never coloured.
    assert!(!show(&["--json", "--color", "always"], &[]).contains('\u{1b}'));
}

#[test]
fn shared_flags_belong_to_the_commands_that_use_them() {
    let help = |cmd: &str| stdout_of(&Command::new(BIN).args([cmd, "--help"]).assert().success());
    // Whether the help lists the flag (not merely mentions it in a description).
    let flag = |h: &str, f: &str| h.lines().any(|l| l.trim_start().starts_with(f));
    let others = [
        "history",
        "show",
        "compare",
        "export",
        "import",
        "report",
        "completions",
    ];
    for cmd in others {
        let h = help(cmd);
        for f in [
            "--cpu",
            "--dir",
            "--quick",
            "--thorough",
            "--budget",
            "--no-save",
        ] {
            assert!(!flag(&h, f), "{cmd} --help lists {f}:\n{h}");
        }
    }
    for f in [
        "--cpu", "--dir", "--quick", "--json", "--wide", "--store", "--color",
    ] {
        assert!(flag(&help("run"), f), "run --help lacks {f}");
    }
    assert!(flag(&help("sysinfo"), "--dir") && !flag(&help("sysinfo"), "--store"));
    assert!(!flag(&help("import"), "--json") && flag(&help("import"), "--store"));
    // After the command, a flag it does not take is a usage error.
    let out = Command::new(BIN)
        .args(["history", "--cpu", "0"])
        .assert()
        .code(2);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--cpu"), "{err}");
    // Before the command it is accepted, said to have no effect, and the command runs.
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--cpu", "0", "--json", "show", FIXTURE_PIPE])
        .arg("--store")
        .arg(tmp.path().join("unused.db"))
        .assert()
        .success();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("--cpu given before the command: no effect on `ioprobe show`"),
        "{err}"
    );
    json_of(&out.get_output().stdout);
}

/// The text elements of an SVG written by plotters: (x, y, anchor, text).
fn svg_texts(svg: &str) -> Vec<(f64, f64, String, String)> {
    let attr = |tag: &str, name: &str| {
        tag.split(&format!(" {name}=\""))
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_default()
            .to_string()
    };
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (tag, rest) = t.split_once('>')?;
            let text = rest.split("</text>").next()?.trim().to_string();
            Some((
                attr(tag, "x").parse().ok()?,
                attr(tag, "y").parse().ok()?,
                attr(tag, "text-anchor"),
                text,
            ))
        })
        .collect()
}

#[test]
fn the_copy_plot_ranks_each_cache_and_durability_panel_and_keeps_unsupported_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let svgs = tmp.path().join("svg");
    with_store(&tmp.path().join("unused.db"))
        .args(["report", FIXTURE_COPY, "--svg"])
        .arg(&svgs)
        .assert()
        .success();
    let svg = std::fs::read_to_string(svgs.join("copy.svg")).unwrap();
    let texts = svg_texts(&svg);
    let run: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE_COPY).unwrap()).unwrap();
    // The legend names every family.
    for family in [
        "user-space loop",
        "mmap",
        "in-kernel",
        "io_uring",
        "O_DIRECT",
        "system tool",
    ] {
        assert!(texts.iter().any(|t| t.3 == family), "legend lacks {family}");
    }
    let panels: Vec<(f64, String)> = texts
        .iter()
        .filter(|t| t.3.contains(" source, durability "))
        .map(|t| (t.1, t.3.clone()))
        .collect();
    let titles: Vec<&str> = panels.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(
        titles,
        [
            "warm source, durability none",
            "warm source, durability fsync",
            "cold source, durability none",
            "cold source, durability fsync"
        ]
    );
    for (k, (top, title)) in panels.iter().enumerate() {
        let bottom = panels.get(k + 1).map_or(f64::INFINITY, |p| p.0);
        let (cache, dur) = (
            title.split(' ').next().unwrap(),
            title.rsplit(' ').next().unwrap(),
        );
        // Labels (right-aligned, left of the axis), top to bottom.
        let mut labels: Vec<&(f64, f64, String, String)> = texts
            .iter()
            .filter(|t| t.2 == "end" && t.1 > *top && t.1 < bottom && !t.3.is_empty())
            .filter(|t| !t.3.starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        labels.sort_by(|a, b| a.1.total_cmp(&b.1));
        // Never clipped: each label starts right of the image's left edge, at a width
        // of 0.6 em per character of its 10.5 px font.
        for l in &labels {
            assert!(
                l.0 - l.3.chars().count() as f64 * 10.5 * 0.6 > 0.0,
                "{l:?} clipped"
            );
        }
        // Fastest first: the best variant of each method, by median, descending.
        let mut best: Vec<(String, String, f64)> = Vec::new();
        for m in run["measurements"].as_array().unwrap() {
            let p = &m["params"];
            if p["cache"] != cache || p["durability"] != dur || m["status"] != "ok" {
                continue;
            }
            let (method, median) = (p["method"].as_str().unwrap(), m["median"].as_f64().unwrap());
            match best.iter_mut().find(|b| b.0 == method) {
                Some(b) if b.2 < median => {
                    *b = (method.into(), p["variant"].as_str().unwrap().into(), median)
                }
                Some(_) => {}
                None => best.push((method.into(), p["variant"].as_str().unwrap().into(), median)),
            }
        }
        best.sort_by(|a, b| b.2.total_cmp(&a.2));
        let mut expected: Vec<String> = best.into_iter().map(|b| b.1).collect();
        expected.push("reflink".into());
        let got: Vec<String> = labels.iter().map(|l| l.3.clone()).collect();
        assert_eq!(got, expected, "{title}");
        // The unsupported method is a labelled empty row saying why.
        assert!(
            texts
                .iter()
                .any(|t| t.1 > *top && t.1 < bottom && t.3.starts_with("unsupported: ")),
            "{title}"
        );
    }
}

#[test]
fn html_tables_never_wrap_and_right_align_only_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("r.html");
    with_store(&tmp.path().join("unused.db"))
        .args(["report", FIXTURE_COPY, "--html"])
        .arg(&html)
        .assert()
        .success();
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("white-space: nowrap"), "cells must not wrap");
    assert!(text.contains("tabular-nums"));
    assert!(
        text.contains("<div class=\"scroll\">"),
        "wide tables scroll"
    );
    // Method names stay left-aligned; figures are right-aligned.
    assert!(text.contains("<td>copy-file-range</td>"), "method cell");
    assert!(!text.contains("<td class=\"num\">copy-file-range</td>"));
    assert!(text.contains("<td class=\"num\">1.00×</td>"), "figure cell");
}

/// The man page recipe of the README and docs/commands.md: written to
/// ~/.local/share/man/man1, `man ioprobe` finds it with MANPATH as they say (and not
/// without it where ~/.local/bin is not on PATH, which is why they say it).
#[test]
fn the_man_page_recipe_makes_man_find_it() {
    if std::process::Command::new("man")
        .arg("-w")
        .arg("man")
        .output()
        .is_err()
    {
        eprintln!("skipped: no man here");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".local/share/man/man1");
    std::fs::create_dir_all(&dir).unwrap();
    let page = Command::new(BIN).arg("manpage").assert().success();
    std::fs::write(dir.join("ioprobe.1"), &page.get_output().stdout).unwrap();
    let man = |manpath: Option<String>| {
        let mut c = std::process::Command::new("man");
        c.args(["-w", "ioprobe"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", home.path());
        if let Some(m) = manpath {
            c.env("MANPATH", m);
        }
        c.output().unwrap()
    };
    let found = man(Some(format!("{}/.local/share/man:", home.path().display())));
    assert!(found.status.success(), "{found:?}");
    assert!(String::from_utf8_lossy(&found.stdout).contains("man1/ioprobe.1"));
    assert!(
        !man(None).status.success(),
        "found without MANPATH: the recipe says more than needed"
    );
}

/// The HTML report at 1000 px (issue 68): every plot is drawn at most 960 px wide (the
/// page's column: read at its size, not shrunk; the line plots were 1150), the page
/// does not scroll sideways, and no text of a plot (a legend's series name) runs past
/// the plot's edge. Measured in headless Chromium on a copy of each page with a script
/// that writes what it finds into the DOM (the report itself has no script); skipped
/// with a message where Chromium is missing.
#[test]
fn the_html_report_fits_a_1000_px_window() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut pages = Vec::new();
    for (name, fixture) in [
        ("pipe", FIXTURE_PIPE),
        ("copy", FIXTURE_COPY),
        ("a", FIXTURE_A),
    ] {
        let html = d.join(format!("{name}.html"));
        with_store(&d.join("unused.db"))
            .args(["report", fixture, "--html"])
            .arg(&html)
            .assert()
            .success();
        let page = std::fs::read_to_string(&html).unwrap();
        for w in page.split("<svg width=\"").skip(1) {
            let w: u32 = w[..w.find('"').unwrap()].parse().unwrap();
            assert!(w <= 960, "{name}: a plot {w} px wide");
        }
        pages.push((name, page));
    }
    let Some(chromium) = chromium_for("the_html_report_fits_a_1000_px_window") else {
        return;
    };
    for (name, page) in pages {
        let (over, scroll) = measured_at_1000_px(chromium, d, name, &page);
        assert_eq!(over, "[]", "{name}: plot text past its edge");
        assert!(
            scroll <= 1000,
            "{name}: the page is {scroll} px wide at 1000 px"
        );
    }
}

/// `page` in Chromium at 1000 px: the texts of its plots past their edge (JSON), and
/// the page's width.
fn measured_at_1000_px(chromium: &str, d: &Path, name: &str, page: &str) -> (String, u32) {
    let probe = r#"<script>
const over = [];
for (const s of document.querySelectorAll('svg')) {
  const w = s.viewBox.baseVal.width;
  for (const t of s.querySelectorAll('text')) {
    const b = t.getBBox();
    if (b.x + b.width > w + 1) over.push(t.textContent);
  }
}
document.body.setAttribute('data-over', JSON.stringify(over));
document.body.setAttribute('data-scroll', document.documentElement.scrollWidth);
</script></body>"#;
    let measured = d.join(format!("{name}-measured.html"));
    std::fs::write(&measured, page.replace("</body>", probe)).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args(["--window-size=1000,800", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", measured.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let attr = |key: &str| {
        let at = dom
            .find(&format!("{key}=\""))
            .unwrap_or_else(|| panic!("no {key}: {dom}"));
        let rest = &dom[at + key.len() + 2..];
        rest[..rest.find('"').unwrap()].replace("&quot;", "\"")
    };
    (attr("data-over"), attr("data-scroll").parse().unwrap())
}
