//! Every filesystem a user has (issue 67): what a filesystem cannot give (a cold page
//! cache and durability on tmpfs) is left out as `skipped` with its reason, never a
//! failed run; as root, loop-mounted xfs and btrfs, an overlay and a tmpfs each run a
//! short selection of the probes that touch files and `ioprobe cp -a` of a small tree.

use crate::*;
use std::process::Command as Std;

/// The measurements of the probes that touch the filesystem, run in `dir` with tiny
/// budgets: read (both populate modes), write (every durability), copy (cold and warm,
/// with and without fsync, reflink among the methods). Each command must exit 0, leave
/// no scratch behind and print a table that names what it skipped.
fn selection(dir: &Path) -> Vec<Value> {
    let runs: [&[&str]; 3] = [
        &["read", "--file-size", "256k", "--block-sizes", "4k,64k"],
        &[
            "write",
            "--file-size",
            "256k",
            "--block-sizes",
            "4k,64k",
            "--durability",
            "none,fsync,dsync",
        ],
        &[
            "copy",
            "--file-size",
            "1m",
            "--sizes",
            "64k",
            "--method",
            "read-write,copy-file-range,reflink",
        ],
    ];
    let mut rows = Vec::new();
    for args in runs {
        let out = ioprobe(dir)
            .args(TINY)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?} in {}: {err}", dir.display());
        assert_empty(dir);
        let v = run_json(&out.stdout);
        let ms = v["measurements"].as_array().unwrap().clone();
        if ms.iter().any(|m| m["status"] == "skipped") {
            let table = ioprobe(dir).args(TINY).args(args).output().unwrap();
            assert!(table.status.success());
            let text = String::from_utf8_lossy(&table.stdout);
            assert!(
                text.contains("  skipped "),
                "{args:?}: no skipped note\n{text}"
            );
            assert!(
                !text.contains("NaN"),
                "{args:?}: a skipped row printed\n{text}"
            );
        }
        rows.extend(ms);
    }
    rows
}

/// The rows of `rows` whose status is `status`, as "probe case" strings.
fn with_status<'a>(rows: &'a [Value], status: &str) -> Vec<&'a Value> {
    rows.iter().filter(|m| m["status"] == status).collect()
}

/// What a memory-backed filesystem must show: no cold row and no durable row measured,
/// each left out with its reason; everything else measured.
fn check_memory_backed(rows: &[Value], fs: &str) {
    for m in rows {
        let p = &m["params"];
        let cold = p["populate"] == "readahead" || p["cache"] == "cold";
        let durable = matches!(p["durability"].as_str(), Some("fsync" | "dsync"));
        let reason = m["reason"].as_str().unwrap_or_default();
        if p["method"] == "reflink" {
            // No reflink on tmpfs: the method is unsupported before any filesystem rule.
            assert_eq!(m["status"], "unsupported", "{m}");
        } else if cold {
            assert_eq!(m["status"], "skipped", "{m}");
            assert!(
                reason.contains(&format!("no cold state on {fs}")),
                "{reason}"
            );
        } else if durable {
            assert_eq!(m["status"], "skipped", "{m}");
            assert!(
                reason.contains(&format!("no durability on {fs}")),
                "{reason}"
            );
        } else {
            assert_eq!(m["status"], "ok", "{m}");
        }
    }
}

/// A disk filesystem measures every row it can: nothing skipped, cold rows cold.
fn check_disk(rows: &[Value], reflink: bool, name: &str) {
    assert_eq!(with_status(rows, "skipped"), Vec::<&Value>::new(), "{name}");
    for m in rows {
        let p = &m["params"];
        if p["method"] == "reflink" {
            let want = if reflink { "ok" } else { "unsupported" };
            assert_eq!(m["status"], want, "{name}: reflink {m}");
        } else {
            assert_eq!(m["status"], "ok", "{name}: {m}");
        }
    }
}

/// The type of the filesystem holding `dir`, as stat(1) names it ("tmpfs", "xfs").
fn fs_type(dir: &Path) -> String {
    let out = Std::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn tmpfs_leaves_out_cold_and_durable_rows_and_exits_0() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() || fs_type(shm) != "tmpfs" {
        eprintln!("skipped: /dev/shm is not a tmpfs here");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let rows = selection(dir.path());
    check_memory_backed(&rows, "tmpfs");
}

/// Loop-mounted filesystems, an overlay and a tmpfs under one temporary directory,
/// unmounted (and their loop devices freed) when dropped, on every path.
struct Mounts {
    base: tempfile::TempDir,
    points: Vec<std::path::PathBuf>,
}

impl Mounts {
    fn new() -> Mounts {
        Mounts {
            base: tempfile::tempdir().unwrap(),
            points: Vec::new(),
        }
    }

    fn sh(args: &[&str]) {
        let out = Std::new(args[0]).args(&args[1..]).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A `size`-byte image made by `mkfs` (with its flags), loop-mounted at `name`.
    fn image(&mut self, name: &str, size: &str, mkfs: &[&str]) -> std::path::PathBuf {
        let img = self.base.path().join(format!("{name}.img"));
        let point = self.base.path().join(name);
        std::fs::create_dir(&point).unwrap();
        Self::sh(&["truncate", "-s", size, img.to_str().unwrap()]);
        let mut cmd = mkfs.to_vec();
        cmd.push(img.to_str().unwrap());
        Self::sh(&cmd);
        self.mount(&["-o", "loop", img.to_str().unwrap()], &point);
        point
    }

    fn mount(&mut self, args: &[&str], point: &Path) {
        let mut cmd = vec!["mount"];
        cmd.extend(args);
        cmd.push(point.to_str().unwrap());
        Self::sh(&cmd);
        self.points.push(point.to_path_buf());
    }

    fn dir(&self, name: &str) -> std::path::PathBuf {
        let d = self.base.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        for p in self.points.iter().rev() {
            // A loop mount's device is freed with it (autoclear).
            let _ = Std::new("umount").arg(p).status();
        }
    }
}

/// A small tree: files of several sizes (one sparse), a symlink, an empty directory.
fn small_tree(root: &Path) {
    std::fs::create_dir_all(root.join("sub/empty")).unwrap();
    for (name, size) in [("a", 0usize), ("b", 4097), ("sub/c", 1 << 20)] {
        let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.join(name), bytes).unwrap();
    }
    let sparse = std::fs::File::create(root.join("sparse")).unwrap();
    sparse.set_len(8 << 20).unwrap();
    std::os::unix::fs::symlink("sub/c", root.join("link")).unwrap();
}

/// `ioprobe cp -a` of a small tree inside `dir`: exit 0, the copy equal to its source
/// (`diff -r`, symlinks as links), its data cloned where the filesystem has reflink
/// (filefrag(8) sees shared extents, as GNU cp 9.1's default `--reflink=auto` makes),
/// removed after.
fn cp_tree(dir: &Path, name: &str, reflink: bool) {
    let (src, dst) = (dir.join("cp-src"), dir.join("cp-dst"));
    small_tree(&src);
    let out = Std::new(BIN)
        .args(["cp", "-a"])
        .arg(&src)
        .arg(&dst)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: cp -a: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff = Std::new("diff")
        .arg("-r")
        .arg("--no-dereference")
        .arg(&src)
        .arg(&dst)
        .output();
    assert!(diff.unwrap().status.success(), "{name}: the copy differs");
    if reflink {
        let frag = Std::new("filefrag")
            .arg("-v")
            .arg(dst.join("sub/c"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&frag.stdout);
        assert!(text.contains("shared"), "{name}: cp did not clone\n{text}");
    }
    std::fs::remove_dir_all(&src).unwrap();
    std::fs::remove_dir_all(&dst).unwrap();
}

#[test]
fn a_matrix_of_real_filesystems_runs_everywhere_with_true_labels() {
    let tools = ["mkfs.xfs", "mkfs.btrfs", "losetup", "filefrag"];
    if !rustix::process::geteuid().is_root() || !Path::new("/dev/loop-control").exists() {
        eprintln!(
            "skipped: mounting filesystems needs root and loop devices (run as root, as CI does)"
        );
        return;
    }
    for t in tools {
        let found = Std::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output();
        assert!(
            found.unwrap().status.success(),
            "{t} missing: .ci/run installs xfsprogs and btrfs-progs"
        );
    }
    let mut m = Mounts::new();
    let xfs = m.image("xfs", "320M", &["mkfs.xfs", "-q", "-f"]);
    let btrfs = m.image("btrfs", "256M", &["mkfs.btrfs", "-q", "-f"]);
    let (lower, upper, work) = (m.dir("lower"), m.dir("upper"), m.dir("work"));
    let ovl = m.dir("ovl");
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.display(),
        upper.display(),
        work.display()
    );
    m.mount(&["-t", "overlay", "overlay", "-o", &opts], &ovl);
    let tmp = m.dir("tmpfs");
    m.mount(&["-t", "tmpfs", "-o", "size=64m", "tmpfs"], &tmp);
    for (dir, name, reflink) in [
        (&xfs, "xfs", true),
        (&btrfs, "btrfs", true),
        (&ovl, "overlayfs", false),
    ] {
        assert_eq!(fs_type(dir), name);
        check_disk(&selection(dir), reflink, name);
        cp_tree(dir, name, reflink);
    }
    assert_eq!(fs_type(&tmp), "tmpfs");
    check_memory_backed(&selection(&tmp), "tmpfs");
    cp_tree(&tmp, "tmpfs", false);
}
