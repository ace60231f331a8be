//! Documented examples are tested (issue 68): every `ioprobe …` example of each
//! command's `--help`, of the README's and docs/'s shell blocks, and of their one-line
//! code spans without a placeholder is parsed by the real binary: run with `--help`
//! put before any `--`, clap checks every flag and value before it prints the help, so
//! a flag or a value that drifted from its docs fails here without anything being
//! measured. The cheap ones (history, sysinfo, completions, manpage, and export and
//! show of a store holding the fixtures) also run for real.

use crate::*;

/// A command line's words as a shell splits them (single and double quotes), up to the
/// first unquoted `>`, `<`, `|`, `&&`, `;` or `#`: what the program is given.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (None, '>' | '<' | '|' | ';' | '#' | '&') => break,
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The commands `ioprobe --help` lists.
fn commands() -> Vec<String> {
    let help = stdout_of(&Command::new(BIN).arg("--help").assert().success());
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect()
}

/// Every documented example: (where it is, the line).
fn examples() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in commands() {
        let help = stdout_of(
            &Command::new(BIN)
                .args([c.as_str(), "--help"])
                .assert()
                .success(),
        );
        for l in help
            .lines()
            .skip_while(|l| !l.starts_with("Examples:"))
            .skip(1)
        {
            let Some(ex) = l.strip_prefix("  ioprobe ") else {
                break;
            };
            // The description after the example is set off by two spaces or more.
            let ex = ex.split("  ").next().unwrap_or(ex);
            out.push((format!("ioprobe {c} --help"), format!("ioprobe {ex}")));
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let mut in_sh = false;
        for l in text.lines() {
            if l.starts_with("```") {
                in_sh = l == "```sh";
                continue;
            }
            if in_sh && l.starts_with("ioprobe ") {
                out.push((name.clone(), l.to_string()));
            }
            // Spans closed on this line (one that runs on to the next is prose).
            let parts: Vec<&str> = l.split('`').collect();
            let closed = parts.len().saturating_sub(1) / 2 * 2;
            for span in parts[..closed.max(1)].iter().skip(1).step_by(2) {
                let placeholder = span.contains('…')
                    || span
                        .split(|c: char| !c.is_ascii_alphanumeric())
                        .any(|w| w.len() >= 2 && w.chars().all(|c| c.is_ascii_uppercase()));
                if span.starts_with("ioprobe ") && !placeholder {
                    out.push((name.clone(), span.to_string()));
                }
            }
        }
    }
    out
}

#[test]
fn every_documented_example_parses_and_the_cheap_ones_run() {
    let all = examples();
    assert!(all.len() >= 60, "only {} examples found", all.len());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut wrong = Vec::new();
    for (at, line) in all.iter().filter(|(_, l)| !l.contains("$(")) {
        // (A value the shell computes, `--pid "$(pidof postgres …)"`, is left out.)
        let mut args = words(line);
        args.remove(0); // ioprobe
        let dashes = args.iter().position(|a| a == "--").unwrap_or(args.len());
        args.insert(dashes, "--help".into());
        let out = Command::new(BIN)
            .args(&args)
            .current_dir(d)
            .output()
            .unwrap();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            wrong.push(format!("{at}: `{line}`: {}", err.trim()));
        }
    }
    assert_eq!(wrong, Vec::<String>::new(), "examples that no longer parse");
    // The cheap ones, for real, against a store of the fixtures.
    let store = d.join("s.db");
    with_store(&store)
        .args(["import", FIXTURE_A, FIXTURE_PIPE])
        .assert()
        .success();
    let cheap = [
        "history",
        "sysinfo",
        "completions",
        "manpage",
        "export",
        "show",
    ];
    let mut ran = 0;
    for (at, line) in &all {
        let mut args = words(line);
        // An example's own store (`--store fleet.db`) is the fixtures' here.
        for i in 1..args.len() {
            if args[i - 1] == "--store" {
                args[i] = store.display().to_string();
            }
        }
        if !args.get(1).is_some_and(|c| cheap.contains(&c.as_str())) {
            continue;
        }
        // A run id, file or directory of the docs' own machine is not here.
        let elsewhere = |a: &String| {
            a.parse::<u64>().is_ok()
                || a.ends_with(".json")
                || (a.starts_with('/') && !Path::new(a).exists())
        };
        if args.iter().any(elsewhere) {
            continue;
        }
        // Before the command: one that has no store ignores it there, with a note.
        let out = Command::new(BIN)
            .arg("--store")
            .arg(&store)
            .args(&args[1..])
            .current_dir(d)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{at}: `{line}` failed: {err}");
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} cheap examples ran");
}

#[test]
fn example_lines_split_as_a_shell_splits_them() {
    assert_eq!(
        words("ioprobe trace -- sh -c 'cat log | gzip -1 > /dev/null' > out"),
        [
            "ioprobe",
            "trace",
            "--",
            "sh",
            "-c",
            "cat log | gzip -1 > /dev/null"
        ]
    );
    assert_eq!(words("ioprobe manpage | man -l -"), ["ioprobe", "manpage"]);
    assert_eq!(words("ioprobe x \"\" y"), ["ioprobe", "x", "", "y"]);
}
