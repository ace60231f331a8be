//! Bad input: one line on stderr, exit 2, nothing left behind.

use crate::*;

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fails(d, &["syscalls", "--io-size", "0"], 2, "zero");
    fails(d, &["syscalls", "--io-size=-4k"], 2, "negative");
    fails(d, &["syscalls", "--io-size", "abc"], 2, "not a size");
    fails(d, &["syscalls", "--io-size", "99999P"], 2, "absurdly large");
    fails(d, &["syscalls", "--io-size", "2P"], 2, "absurdly large");
    fails(d, &["syscalls", "--io-size", "1T"], 2, "--io-size");
    fails(d, &["syscalls", "--case", "nope"], 2, "unknown case 'nope'");
    fails(d, &["read", "--method", "aio"], 2, "unknown method 'aio'");
    fails(
        d,
        &["read", "--file-size", "1.5G", "--block-sizes", "0"],
        2,
        "zero",
    );
    fails(
        d,
        &["read", "--file-size", "1T"],
        2,
        "cannot stay in the page cache",
    );
    fails(d, &["read", "--block-sizes", "2G"], 2, "too large");
    fails(d, &["run", "--json", "--csv"], 2, "cannot be used with");
    fails(d, &["run", "--cpu", "4096"], 2, "--cpu 4096");
    fails(d, &["run", "--sample-time", "0ms"], 2, "positive");
    fails(d, &["frobnicate"], 2, "frobnicate");
    assert_empty(d);
}

#[test]
fn bad_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    fails(
        dir.path(),
        &["syscalls", "--dir", missing.to_str().unwrap()],
        2,
        "No such file or directory",
    );
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    fails(
        dir.path(),
        &["syscalls", "--dir", file.to_str().unwrap()],
        2,
        "not a directory",
    );
    // /proc refuses new directories even for root.
    fails(
        dir.path(),
        &["syscalls", "--dir", "/proc"],
        2,
        "not writable",
    );
    assert_eq!(entries(dir.path()), vec!["file".to_string()]);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"x",
        "a file named by --dir is never touched"
    );
}

#[test]
fn a_full_filesystem_fails_at_run_time_and_cleans_up() {
    // A file-size limit makes writes fail with EFBIG like a full disk would fail with
    // ENOSPC. ioprobe ignores SIGXFSZ itself (no `trap '' XFSZ` in the shell), so the
    // write returns the error instead of killing it with scratch left behind.
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "exec prlimit --fsize=65536 {BIN} read --no-save --dir {} --file-size 1m --block-sizes 4k --sample-time 1ms --budget 20ms",
        dir.path().display()
    );
    let out = Command::new("sh").arg("-c").arg(script).assert().code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("ioprobe: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("File too large") || errors[0].contains("No space"),
        "{stderr}"
    );
    assert_empty(dir.path());
}

#[test]
fn a_copy_beyond_the_file_size_limit_fails_cleanly() {
    // Without a shell that ignores SIGXFSZ for it: the first write past the limit fails
    // with EFBIG (one line, exit 1, scratch removed) instead of killing ioprobe (153).
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("prlimit")
        .arg("--fsize=1000000")
        .arg(BIN)
        .args(["--no-save", "--dir"])
        .arg(dir.path())
        .args([
            "copy",
            "--file-size",
            "1m",
            "--method",
            "mmap-memcpy-munmap,mmap-memcpy-msync",
            "--cache",
            "warm",
            "--durability",
            "none",
        ])
        .args(TINY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert_empty(dir.path());
}
