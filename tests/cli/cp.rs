//! `ioprobe cp`: every copy checked byte for byte; sizes around the page, sparse files,
//! /proc, symlinks and hard links, modes and timestamps, refusals, -n, a full disk and
//! Ctrl-C (no partial file under the final name, no temporary left).

use crate::*;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

/// `ioprobe cp` in `dir`, with no saved runs to tune from (XDG_DATA_HOME names a
/// directory that does not exist: nothing is read or created).
fn cp(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env("XDG_DATA_HOME", dir.join(".no-store"))
        .arg("cp");
    c
}

/// Files in `dir` whose names say they are ioprobe's temporaries.
fn temporaries(dir: &Path) -> Vec<String> {
    entries(dir)
        .into_iter()
        .filter(|n| n.contains(".ioprobe-cp-"))
        .collect()
}

#[test]
fn sizes_around_the_page_copy_exactly_and_debug_names_the_method() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for n in [0usize, 1, 4095, 4096, 4097, (1 << 20) + 1] {
        let data: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
        std::fs::write(d.join(format!("f{n}")), &data).unwrap();
        let out = cp(d)
            .args(["--debug", &format!("f{n}"), &format!("g{n}")])
            .assert()
            .success();
        let line = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(
            line.starts_with(&format!("'f{n}' -> 'g{n}': method: ")),
            "{line}"
        );
        assert!(
            line.contains("reflink: ") && line.contains("sparse detection: "),
            "{line}"
        );
        assert_eq!(
            std::fs::read(d.join(format!("g{n}"))).unwrap(),
            data,
            "size {n}"
        );
    }
    assert!(temporaries(d).is_empty());
}

#[test]
fn a_sparse_file_keeps_its_holes_and_proc_files_are_copied_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = std::fs::File::create(d.join("sparse")).unwrap();
    f.set_len(16 << 20).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, b"middle", 8 << 20).unwrap();
    drop(f);
    let out = cp(d).args(["--debug", "sparse", "copy"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let (s, c) = (
        std::fs::metadata(d.join("sparse")).unwrap(),
        std::fs::metadata(d.join("copy")).unwrap(),
    );
    assert_eq!(c.len(), s.len());
    assert!(
        c.blocks() <= s.blocks() + 16,
        "holes lost: {} vs {} blocks",
        c.blocks(),
        s.blocks()
    );
    assert!(text.contains("holes kept"), "{text}");
    assert_eq!(
        std::fs::read(d.join("copy")).unwrap(),
        std::fs::read(d.join("sparse")).unwrap()
    );
    // /proc reports size 0: copy_file_range copies nothing, the read fallback all.
    cp(d)
        .args(["/proc/self/status", "status"])
        .assert()
        .success();
    let status = std::fs::read_to_string(d.join("status")).unwrap();
    assert!(status.contains("Name:") && status.len() > 100, "{status}");
}

/// The source tree of the archive test: files of five modes (returned), a setgid
/// directory, dangling, directory and looping symlinks, a hard link, a timestamp with
/// nanoseconds.
fn archive_source(src: &Path) -> [(&'static str, u32); 5] {
    std::fs::create_dir_all(src.join("sub/setgid")).unwrap();
    // 0700 comes out of the create call as it is (no chmod); 0666 is more than the
    // umask lets a create give; 04750 needs the chmod after the (skipped) chown.
    let modes = [
        ("private", 0o700),
        ("plain", 0o644),
        ("tool", 0o755),
        ("open", 0o666),
        ("setuid", 0o4750),
    ];
    for (name, mode) in modes {
        std::fs::write(src.join(name), name).unwrap();
        std::fs::set_permissions(src.join(name), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(
        src.join("sub/setgid"),
        std::fs::Permissions::from_mode(0o2755),
    )
    .unwrap();
    std::fs::write(src.join("sub/setgid/inner"), "x").unwrap();
    std::os::unix::fs::symlink("nowhere", src.join("dangling")).unwrap();
    std::os::unix::fs::symlink("sub", src.join("to_dir")).unwrap();
    std::os::unix::fs::symlink("loop_b", src.join("loop_a")).unwrap();
    std::os::unix::fs::symlink("loop_a", src.join("loop_b")).unwrap();
    std::fs::hard_link(src.join("plain"), src.join("plain_again")).unwrap();
    let stamp = std::time::UNIX_EPOCH + Duration::new(1_600_000_000, 123_456_789);
    std::fs::File::options()
        .write(true)
        .open(src.join("plain"))
        .unwrap()
        .set_modified(stamp)
        .unwrap();
    modes
}

#[test]
fn archive_keeps_symlinks_hard_links_modes_and_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("src");
    let modes = archive_source(&src);
    cp(d).args(["-a", "src", "dst"]).assert().success();
    let dst = d.join("dst");
    let names = modes.iter().map(|m| m.0);
    for name in names.chain(["sub/setgid", "sub/setgid/inner"]) {
        let (a, b) = (
            std::fs::metadata(src.join(name)).unwrap(),
            std::fs::metadata(dst.join(name)).unwrap(),
        );
        assert_eq!(a.mode(), b.mode(), "{name}");
        assert_eq!(
            (a.mtime(), a.mtime_nsec()),
            (b.mtime(), b.mtime_nsec()),
            "{name}"
        );
    }
    assert_eq!(
        std::fs::metadata(dst.join("plain")).unwrap().mtime_nsec(),
        123_456_789
    );
    for link in ["dangling", "to_dir", "loop_a", "loop_b"] {
        assert_eq!(
            std::fs::read_link(dst.join(link)).unwrap(),
            std::fs::read_link(src.join(link)).unwrap(),
            "{link}"
        );
    }
    assert_eq!(
        std::fs::metadata(dst.join("plain")).unwrap().ino(),
        std::fs::metadata(dst.join("plain_again")).unwrap().ino(),
        "hard links kept"
    );
    // Without -p, the mode is the source's less the umask; times are new.
    cp(d).args(["-r", "src", "plain_copy"]).assert().success();
    let m = std::fs::metadata(d.join("plain_copy/tool")).unwrap();
    assert_eq!(m.mode() & 0o7777 & !0o755, 0);
    let m = std::fs::metadata(d.join("plain_copy/setuid")).unwrap();
    assert_eq!(m.mode() & 0o7000, 0, "no setuid without -p");
    // Into a directory that was there before (created group-and-other-less, then set).
    std::fs::create_dir(d.join("existing")).unwrap();
    cp(d)
        .args(["-a", "src/tool", "src/open", "src/setuid", "existing"])
        .assert()
        .success();
    for name in ["tool", "open", "setuid"] {
        assert_eq!(
            std::fs::metadata(d.join("existing").join(name))
                .unwrap()
                .mode(),
            std::fs::metadata(src.join(name)).unwrap().mode(),
            "{name} into an existing directory"
        );
    }
    assert_ne!(m.mtime(), 1_600_000_000);
    assert!(temporaries(&dst).is_empty());
}

#[test]
fn refusals_and_existing_destinations_behave_as_cp() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a"), "new").unwrap();
    std::fs::write(d.join("b"), "old").unwrap();
    std::fs::create_dir(d.join("tree")).unwrap();
    std::fs::write(d.join("tree/x"), "x").unwrap();
    let one_line = |a: assert_cmd::assert::Assert, needle: &str| {
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    };
    one_line(cp(d).args(["a", "a"]).assert().code(1), "are the same file");
    one_line(
        cp(d).args(["a", "./a"]).assert().code(1),
        "are the same file",
    );
    one_line(
        cp(d).args(["-r", "tree", "tree/inside"]).assert().code(1),
        "into itself",
    );
    assert!(!d.join("tree/inside").exists());
    one_line(
        cp(d).args(["tree", "t2"]).assert().code(1),
        "-r not specified",
    );
    // A usage error exits 1, as GNU cp's.
    one_line(
        cp(d).args(["a", "b", "not-a-dir"]).assert().code(1),
        "target 'not-a-dir'",
    );
    // -n keeps it; by default it is replaced.
    cp(d).args(["-n", "a", "b"]).assert().success();
    assert_eq!(std::fs::read_to_string(d.join("b")).unwrap(), "old");
    cp(d).args(["a", "b"]).assert().success();
    assert_eq!(std::fs::read_to_string(d.join("b")).unwrap(), "new");
    // Several sources into a directory.
    cp(d).args(["a", "b", "tree"]).assert().success();
    assert!(d.join("tree/a").exists() && d.join("tree/b").exists());
    // A dangling symlink at the destination is never written through (GNU's refusal).
    std::os::unix::fs::symlink(d.join("victim"), d.join("trap")).unwrap();
    one_line(
        cp(d).args(["a", "trap"]).assert().code(1),
        "not writing through dangling symlink 'trap'",
    );
    assert!(
        !d.join("victim").exists(),
        "wrote through a dangling symlink"
    );
    assert!(d.join("trap").is_symlink());
    assert!(temporaries(d).is_empty());
}

#[test]
fn a_full_disk_fails_in_one_line_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("big"), vec![1u8; 1 << 20]).unwrap();
    let out = std::process::Command::new("prlimit")
        .arg("--fsize=100000")
        .arg(BIN)
        .args(["cp", "big", "copy"])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("'copy'") && err.contains("File too large"),
        "{err}"
    );
    assert!(!d.join("copy").exists());
    assert!(temporaries(d).is_empty(), "{:?}", entries(d));
}

#[test]
fn standard_input_and_fifos_are_copied_and_ctrl_c_leaves_nothing() {
    default_stop_signals();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut child = std::process::Command::new(BIN)
        .args(["cp", "--debug", "/dev/stdin", "fromstdin"])
        .env("XDG_DATA_HOME", d.join(".no-store"))
        .current_dir(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("method: read/write, copy offload: no (reads of 256 KiB from a pipe of")
    );
    assert_eq!(std::fs::read(d.join("fromstdin")).unwrap(), data);
    // A slow writer into a FIFO; Ctrl-C mid-copy.
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let mut writer = std::process::Command::new("sh")
        .args([
            "-c",
            "while :; do head -c 65536 /dev/zero || exit; sleep 0.05; done > fifo",
        ])
        .current_dir(d)
        .spawn()
        .unwrap();
    let copier = std::process::Command::new(BIN)
        .args(["cp", "fifo", "slow"])
        .env("XDG_DATA_HOME", d.join(".no-store"))
        .current_dir(d)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !d.join("slow").exists() {
        assert!(t0.elapsed() < Duration::from_secs(20), "no copy appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    std::process::Command::new("kill")
        .args(["-INT", &copier.id().to_string()])
        .status()
        .unwrap();
    let status = copier.wait_with_output().unwrap().status;
    let _ = writer.kill();
    let _ = writer.wait();
    assert_killed_by(status, "-INT", "cp fifo slow");
    assert!(
        !d.join("slow").exists(),
        "a partial file under the final name"
    );
    assert!(temporaries(d).is_empty(), "{:?}", entries(d));
}

#[test]
fn a_saved_copy_run_for_the_filesystem_sets_the_order_and_debug_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("f"), vec![7u8; 100_000]).unwrap();
    // Without a saved run: GNU cp's order, said once.
    let out = cp(d).args(["--debug", "f", "g0"]).assert().success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("cp: file data: no saved copy run"), "{err}");
    // A copy run of this host on this filesystem where read/write beat
    // copy_file_range: the loop goes first, at the run's buffer.
    let sys = Command::new(BIN)
        .args(["sysinfo", "--json", "--dir"])
        .arg(d)
        .output()
        .unwrap();
    let env: serde_json::Value = serde_json::from_slice(&sys.stdout).unwrap();
    let env = env.get("environment").unwrap_or(&env).clone();
    let mut run: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/copy-run.json")).unwrap();
    run["environment"]["hostname"] = env["hostname"].clone();
    run["environment"]["filesystem"]["fs_type"] = env["filesystem"]["fs_type"].clone();
    for m in run["measurements"].as_array_mut().unwrap() {
        if m["case"] == "copy-file-range/warm/none/1MiB" {
            m["median"] = serde_json::json!(1e9);
            m["ci95"] = serde_json::json!([0.9e9, 1.1e9]);
        }
    }
    let file = d.join("run.json");
    std::fs::write(&file, run.to_string()).unwrap();
    let data = d.join("data");
    Command::new(BIN)
        .env("XDG_DATA_HOME", &data)
        .arg("import")
        .arg(&file)
        .assert()
        .success();
    let out = Command::new(BIN)
        .current_dir(d)
        .env("XDG_DATA_HOME", &data)
        .args(["cp", "--debug", "f", "g1"])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("cp: file data: run 1 ("), "{err}");
    assert!(err.contains("the loop first"), "{err}");
    let line = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(line.contains("method: read/write"), "{line}");
    assert!(line.contains("found read/write faster here"), "{line}");
    assert_eq!(std::fs::read(d.join("g1")).unwrap(), vec![7u8; 100_000]);
}

/// Extended attributes come along with -a, whatever their size, and a file without any
/// gets none (attributes are sized before they are read, not read into a fixed buffer).
#[cfg(target_os = "linux")]
#[test]
fn archive_copies_extended_attributes_of_any_size() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("src")).unwrap();
    std::fs::write(d.join("src/tagged"), "data").unwrap();
    std::fs::write(d.join("src/plain"), "data").unwrap();
    let big = vec![b'a'; 3000];
    let attrs: [(&str, &[u8]); 3] = [
        ("user.small", b"hello"),
        ("user.empty", b""),
        ("user.big", &big),
    ];
    for (name, value) in attrs {
        match rustix::fs::setxattr(
            d.join("src/tagged"),
            name,
            value,
            rustix::fs::XattrFlags::empty(),
        ) {
            Ok(()) => {}
            Err(rustix::io::Errno::NOTSUP) => {
                eprintln!("skipped: no user xattrs on {}", d.display());
                return;
            }
            Err(e) => panic!("setxattr {name}: {e}"),
        }
    }
    cp(d).args(["-a", "src", "dst"]).assert().success();
    for (name, value) in attrs {
        let mut buf = vec![0u8; 4096];
        let n = rustix::fs::getxattr(d.join("dst/tagged"), name, &mut buf)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&buf[..n], value, "{name}");
    }
    let mut names = vec![0u8; 64 * 1024];
    let n = rustix::fs::listxattr(d.join("dst/plain"), &mut names[..]).unwrap();
    assert!(
        names[..n]
            .split(|&b| b == 0)
            .all(|s| !s.starts_with(b"user.")),
        "{:?}",
        String::from_utf8_lossy(&names[..n])
    );
}

/// GNU cp's `preserve-slink-time` and special-file cases: under `-a` a symlink keeps
/// its own timestamps; a FIFO and a device are made as root (a device only where this
/// process may make one) and otherwise refused in one line naming the file, while the
/// rest of the tree is copied.
#[cfg(target_os = "linux")]
#[test]
fn archive_keeps_symlink_times_and_makes_special_files_only_as_root() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("file"), "data").unwrap();
    std::os::unix::fs::symlink("file", src.join("link")).unwrap();
    let touched = std::process::Command::new("touch")
        .args(["-h", "-d", "@1600000000.123456789"])
        .arg(src.join("link"))
        .status()
        .unwrap();
    assert!(touched.success());
    mkfifo(&src.join("fifo"));
    std::fs::set_permissions(src.join("fifo"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let root = rustix::process::geteuid().is_root();
    let out = cp(d).args(["-a", "src", "dst"]).output().unwrap();
    let dst = d.join("dst");
    assert_eq!(std::fs::read(dst.join("file")).unwrap(), b"data");
    let link = std::fs::symlink_metadata(dst.join("link")).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(
        (link.mtime(), link.mtime_nsec()),
        (1_600_000_000, 123_456_789)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if root {
        assert!(out.status.success(), "{stderr}");
        let fifo = std::fs::symlink_metadata(dst.join("fifo")).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fifo.file_type()));
        assert_eq!(fifo.mode() & 0o7777, 0o640);
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("fifo") && stderr.contains("root"),
            "{stderr}"
        );
        assert!(!dst.join("fifo").exists());
    }
    // A device node as an operand (-a does not follow it): /dev/null's numbers.
    let null = std::fs::symlink_metadata("/dev/null").unwrap();
    let may_mknod = root
        && rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("probe"),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o600),
            null.rdev(),
        )
        .is_ok();
    let out = cp(d).args(["-a", "/dev/null", "null"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if may_mknod {
        assert!(out.status.success(), "{stderr}");
        let copy = std::fs::symlink_metadata(d.join("null")).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(
            &copy.file_type()
        ));
        assert_eq!(copy.rdev(), null.rdev());
        assert_eq!(copy.mode(), null.mode());
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("null"), "{stderr}");
        assert!(!d.join("null").exists());
    }
    assert!(temporaries(d).is_empty() && temporaries(&dst).is_empty());
}

/// A directory of more than two batches (256 names each) shared by four workers, with
/// the batches sent again at the end for idle workers: every file is copied once,
/// whole, and nothing else is made.
#[test]
fn a_large_directory_shared_by_workers_is_copied_file_for_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    for i in 0..700 {
        std::fs::write(src.join(format!("f{i:04}")), vec![i as u8; i * 37 % 9000]).unwrap();
    }
    std::fs::write(src.join("sub/inner"), "x").unwrap();
    let out = cp(d)
        .args(["-a", "-j", "4", "src", "dst"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dst = d.join("dst");
    assert_eq!(entries(&dst).len(), 701);
    for i in 0..700 {
        let name = format!("f{i:04}");
        assert_eq!(
            std::fs::read(dst.join(&name)).unwrap(),
            std::fs::read(src.join(&name)).unwrap(),
            "{name}"
        );
    }
    assert_eq!(std::fs::read(dst.join("sub/inner")).unwrap(), b"x");
}

/// Each entry under `dir`: its path, its content, and the first path with its inode.
fn linked_tree(dir: &Path) -> Vec<(String, String, String)> {
    let mut paths = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                paths.push(p);
            }
        }
    }
    paths.sort();
    let mut first: std::collections::HashMap<u64, String> = Default::default();
    paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let ino = std::fs::metadata(p).unwrap().ino();
            let f = first.entry(ino).or_insert_with(|| rel.clone()).clone();
            (rel, std::fs::read_to_string(p).unwrap(), f)
        })
        .collect()
}

/// The issue's race: a second link made to the destination's name before the first
/// copy was in place linked the old file. Copied into an existing tree and afresh, 50
/// times at each of -j 1, 2 and 8, with both CPUs busy: every copy equals the source,
/// links and all, and leaves no temporary.
#[test]
fn hard_links_into_existing_and_fresh_trees_hold_under_load_at_every_j() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = d.join("s");
    for sub in ["a", "b", "c"] {
        std::fs::create_dir_all(s.join(sub)).unwrap();
    }
    for i in 0..4 {
        std::fs::write(s.join(format!("a/f{i}")), format!("new {i}\n")).unwrap();
        std::fs::hard_link(s.join(format!("a/f{i}")), s.join(format!("b/g{i}"))).unwrap();
    }
    std::fs::write(s.join("c/h1"), "three names\n").unwrap();
    std::fs::hard_link(s.join("c/h1"), s.join("c/h2")).unwrap();
    std::fs::hard_link(s.join("c/h1"), s.join("c/h3")).unwrap();
    std::fs::write(s.join("c/plain"), "one name\n").unwrap();
    let want = linked_tree(&s);
    under_load(|| {
        for j in ["1", "2", "8"] {
            for run in 0..50 {
                let t = d.join(format!("t{j}-{run}"));
                for sub in ["a", "b", "c"] {
                    std::fs::create_dir_all(t.join("s").join(sub)).unwrap();
                }
                std::fs::write(t.join("s/a/f0"), "old\n").unwrap();
                std::fs::write(t.join("s/b/g1"), "old\n").unwrap();
                std::fs::write(t.join("s/c/h1"), "old\n").unwrap();
                std::fs::hard_link(t.join("s/c/h1"), t.join("s/c/h3")).unwrap();
                let fresh = d.join(format!("f{j}-{run}"));
                for (to, what) in [(&t, "an existing tree"), (&fresh, "a fresh tree")] {
                    let out = cp(d).args(["-a", "-j", j, "s"]).arg(to).output().unwrap();
                    assert!(
                        out.status.success(),
                        "-j {j} run {run} into {what}: {out:?}"
                    );
                    let root = if to == &t { t.join("s") } else { fresh.clone() };
                    assert_eq!(linked_tree(&root), want, "-j {j} run {run}, {what}");
                    for sub in ["a", "b", "c"] {
                        assert!(temporaries(&root.join(sub)).is_empty());
                    }
                }
                std::fs::remove_dir_all(&t).unwrap();
                std::fs::remove_dir_all(&fresh).unwrap();
            }
        }
    });
}

/// A tree of 300 files in nested directories, copied 50 times at each -j under load:
/// the copy equals the source every time.
#[test]
fn trees_copy_whole_under_load_at_every_j() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = d.join("s");
    for i in 0..300 {
        let p = s.join(format!("d{}/e{}/f{i}", i % 7, i % 3));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("{i}\n").repeat(i % 50)).unwrap();
    }
    let want = linked_tree(&s);
    under_load(|| {
        for j in ["1", "2", "8"] {
            for run in 0..50 {
                let to = d.join(format!("c{j}-{run}"));
                let out = cp(d).args(["-r", "-j", j, "s"]).arg(&to).output().unwrap();
                assert!(out.status.success(), "-j {j} run {run}: {out:?}");
                assert_eq!(linked_tree(&to), want, "-j {j} run {run}");
                std::fs::remove_dir_all(&to).unwrap();
            }
        }
    });
}

/// Every wait is interruptible: a FIFO with no writer, a silent stdin, a FIFO
/// destination with no reader; Ctrl-C, SIGTERM or SIGHUP ends each, by that signal (the
/// shell's 130, 143, 129, as GNU cp), with no file left behind.
#[test]
fn a_blocked_copy_ends_at_ctrl_c_sigterm_and_sighup() {
    default_stop_signals();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("fifo"));
    mkfifo(&d.join("sink"));
    std::fs::write(d.join("x"), "data").unwrap();
    for (args, signal, made) in [
        (["fifo", "out1"], "-INT", Some("out1")),
        (["/dev/stdin", "out2"], "-TERM", Some("out2")),
        (["x", "sink"], "-HUP", None),
        (["-r", "--copy-contents"], "-INT", None),
    ] {
        let mut c = cp(d);
        if args[0] == "-r" {
            c.args(["-r", "--copy-contents", "fifo", "out3"]);
        } else {
            c.args(args);
        }
        // A pipe whose writer stays silent (kept open in `stdin_writer`).
        let mut child = std::process::Command::new(c.get_program())
            .args(c.get_args())
            .current_dir(d)
            .env("XDG_DATA_HOME", d.join(".no-store"))
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin_writer = child.stdin.take();
        let t0 = Instant::now();
        match made {
            Some(name) => {
                while !d.join(name).exists() {
                    assert!(
                        t0.elapsed() < Duration::from_secs(20),
                        "{args:?} never started"
                    );
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            None => std::thread::sleep(Duration::from_millis(300)),
        }
        std::thread::sleep(Duration::from_millis(100));
        std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        drop(stdin_writer);
        assert_killed_by(out.status, signal, &format!("{args:?}: {out:?}"));
        for name in ["out1", "out2", "out3"] {
            assert!(!d.join(name).exists(), "{args:?}: {name} left behind");
        }
        assert!(
            std::fs::metadata(d.join("sink"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }
}

/// A copy that works says nothing: stderr stays empty (scripts treat stderr as
/// failure), unless --debug or -v ask.
#[test]
fn a_successful_copy_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a"), "x").unwrap();
    let out = cp(d).args(["a", "b"]).output().unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty() && out.stdout.is_empty(), "{out:?}");
    let out = cp(d).args(["-v", "a", "c"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "'a' -> 'c'\n");
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// `ioprobe cp` with the `cp-slow` test hook (1 MiB per call, a pause after each), run
/// on a pseudo-terminal by script(1): returns the status and what the terminal showed.
fn cp_on_a_terminal(d: &Path, args: &str) -> (std::process::ExitStatus, String) {
    let out = std::process::Command::new("script")
        .args(["-qfec", &format!("{BIN} cp {args}"), "/dev/null"])
        .current_dir(d)
        .env("XDG_DATA_HOME", d.join(".no-store"))
        .env("IOPROBE_FAULT", "cp-slow")
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .output()
        .expect("script(1) runs a command on a pseudo-terminal");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The frames the progress display drew: (bytes copied, total, the rest of the line).
fn progress_frames(screen: &str) -> Vec<(String, String, String)> {
    screen
        .split(['\r', '\n', '\x1b'])
        .filter_map(|f| {
            let f = f.trim_start_matches("[2K").trim_start_matches("[1A");
            let rest = f.strip_prefix("cp [")?;
            let (_, msg) = rest.split_once("] ")?;
            let mut words = msg.split_whitespace();
            let (moved, unit) = (words.next()?, words.next()?);
            let (unit, total) = unit.split_once('/')?;
            let total_unit = words.next()?;
            Some((
                format!("{moved} {unit}"),
                format!("{total} {total_unit}"),
                words.collect::<Vec<_>>().join(" "),
            ))
        })
        .collect()
}

/// One 128 MiB file on a terminal: the total is the file's size from the first frame
/// with figures, and the bytes copied, the rate and the time left move while it is
/// copied (before: "0 B/1 B 0 B/s eta 0s" for the whole copy).
#[test]
fn the_progress_display_moves_while_one_large_file_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data: Vec<u8> = (0..128u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.join("big"), &data).unwrap();
    let (status, screen) = cp_on_a_terminal(d, "big copy");
    assert!(status.success(), "{screen}");
    assert!(
        std::fs::read(d.join("copy")).unwrap() == data,
        "copy differs"
    );
    let frames = progress_frames(&screen);
    assert!(!frames.is_empty(), "no progress shown: {screen:?}");
    assert!(frames.iter().all(|f| f.1 == "128.00 MiB"), "{frames:?}");
    let moved: std::collections::BTreeSet<&str> = frames.iter().map(|f| f.0.as_str()).collect();
    assert!(
        moved.len() >= 3,
        "the bytes copied did not move: {frames:?}"
    );
    assert!(
        frames
            .iter()
            .any(|f| f.2.contains("MiB/s") && f.2.contains("eta ") && !f.2.contains("eta ?")),
        "no rate and time left: {frames:?}"
    );
    assert!(!frames.iter().any(|f| f.2.contains("files")), "{frames:?}");
}

/// A tree of 40 files of 8 MiB on a terminal: bytes of the tree's total and files
/// done of 40, advancing file by file (before: "0 B/1 B 0/40+ files" from start to end).
#[test]
fn the_progress_display_counts_a_trees_files_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("tree")).unwrap();
    for i in 0..40u8 {
        std::fs::write(d.join(format!("tree/f{i}")), vec![i; 8 << 20]).unwrap();
    }
    let (status, screen) = cp_on_a_terminal(d, "-r tree copy");
    assert!(status.success(), "{screen}");
    for i in 0..40u8 {
        let got = std::fs::read(d.join(format!("copy/f{i}"))).unwrap();
        assert!(got == vec![i; 8 << 20], "f{i} differs");
    }
    let frames = progress_frames(&screen);
    let counted: Vec<u32> = frames
        .iter()
        .filter(|f| f.1 == "320.00 MiB")
        .filter_map(|f| {
            let files = f.2.split_whitespace().find(|w| w.ends_with("/40"))?;
            files.trim_end_matches("/40").parse().ok()
        })
        .collect();
    assert!(
        counted
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            >= 3,
        "files done did not advance: {frames:?}"
    );
    assert!(counted.windows(2).all(|w| w[0] <= w[1]), "{counted:?}");
}

/// A source truncated while it is copied: the copy holds what was read and the status
/// is 0, as GNU cp's (before: "short copy", status 1, nothing left).
#[test]
fn a_source_that_shrinks_while_it_is_copied_is_copied_as_gnu_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data: Vec<u8> = (0..128u32 << 20).map(|i| (i % 253) as u8).collect();
    std::fs::write(d.join("src"), &data).unwrap();
    let child = std::process::Command::new(BIN)
        .args(["cp", "src", "dst"])
        .current_dir(d)
        .env("XDG_DATA_HOME", d.join(".no-store"))
        .env("IOPROBE_FAULT", "cp-slow")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(d.join("dst")).map_or(0, |m| m.len()) < 2 << 20 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the copy never began"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("src"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let got = std::fs::read(d.join("dst")).unwrap();
    assert!(
        got.len() >= 2 << 20 && got.len() < data.len(),
        "{}",
        got.len()
    );
    assert!(
        got[..] == data[..got.len()],
        "the copy is not what was read"
    );
}

/// cp's usage errors read as its other messages (docs/cp.md): `ioprobe: cp: …` on one
/// line, ending with where its help is, exit 1 as GNU cp's.
#[test]
fn cp_usage_errors_read_as_cps_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (args, msg) in [
        (&["--bogus", "a", "b"][..], "unrecognized option '--bogus'"),
        (&["a"][..], "missing destination file operand after 'a'"),
        (&[][..], "missing file operand"),
    ] {
        let out = Command::new(BIN)
            .arg("cp")
            .args(args)
            .current_dir(dir.path())
            .assert()
            .code(1);
        assert_eq!(
            stderr_of(&out),
            format!("ioprobe: cp: {msg} (see 'ioprobe cp --help')\n"),
            "{args:?}"
        );
    }
}
