//! Every command's whole output fits the width tables are drawn to (issue 68): with
//! no terminal and COLUMNS=100, every line on stdout and stderr is at most 100 columns,
//! notes included ("ioprobe: copy: 52 rows, about 25 s (…)" was 119). One-line errors
//! are exempt: an error is one line, however long.

use crate::*;

/// The lines of `text` wider than `width` columns.
fn too_wide(text: &str, width: usize) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > width)
        .map(String::from)
        .collect()
}

#[test]
fn every_commands_output_fits_100_columns_stderr_included() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("s.db");
    with_store(&store)
        .args(["import", FIXTURE_A, FIXTURE_COPY, FIXTURE_PIPE])
        .assert()
        .success();
    let measuring: [&[&str]; 3] = [
        &["read", "--file-size", "64k", "--block-sizes", "4k,16k"],
        &[
            "write",
            "--file-size",
            "64k",
            "--block-sizes",
            "4k,16k",
            "--durability",
            "none,fsync",
        ],
        &[
            "copy",
            "--file-size",
            "256k",
            "--sizes",
            "64k",
            "--method",
            "read-write,copy-file-range",
        ],
    ];
    let saved: [&[&str]; 8] = [
        &["history"],
        &["show", "last"],
        &["advise"],
        &["compare", FIXTURE_A, FIXTURE_B],
        &["sysinfo"],
        &["report", "last", "--html", "r.html"],
        &[
            "trace",
            "--figures",
            FIXTURE_A,
            "--",
            "sh",
            "-c",
            "cat /etc/hostname | wc -c",
        ],
        &["cp", "--help"],
    ];
    let runs = measuring
        .iter()
        .map(|a| (a, true))
        .chain(saved.iter().map(|a| (a, false)));
    for (args, measures) in runs {
        let mut c = Command::new(BIN);
        c.arg("--store")
            .arg(&store)
            .current_dir(d)
            .env("COLUMNS", "100");
        if measures {
            c.args(TINY).arg("--dir").arg(d).arg("--no-save");
        }
        let out = c.args(*args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(text);
            assert_eq!(
                too_wide(&text, 100),
                Vec::<String>::new(),
                "{args:?} {name}"
            );
        }
    }
}

/// A trace with no saved figures says at length that it measures them first (a note 115
/// columns wide unfolded), from its own empty store: folded to 100 columns.
#[test]
fn a_long_note_folds_to_the_width() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    let out = Command::new(BIN)
        .arg("--store")
        .arg(&empty)
        .args(["trace", "--", "true"])
        .current_dir(dir.path())
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("measuring the few cases"),
        "{err}"
    );
    assert_eq!(too_wide(&err, 100), Vec::<String>::new(), "trace's notes");
}
