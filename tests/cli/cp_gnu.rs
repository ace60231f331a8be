//! `ioprobe cp` against GNU cp, case by case: each case builds the same fixture twice,
//! runs the same shell command once with `CP=cp` (GNU coreutils, on every Debian
//! machine) and once with `CP="ioprobe cp"`, and compares the exit status and the
//! whole tree after it: every entry's type, permissions, owner, size, content, link
//! target, device number, extended attributes, allocated blocks (sparse cases), which
//! names share an inode, and whether its mtime is a fixture time (kept) or new.
//! Fixtures' times are set to fixed past instants after setup, so "kept" is exact.
//!
//! A case that ioprobe deliberately handles differently is marked with the reason and
//! listed in docs/cp.md; its ioprobe side is still run and checked by its own rule.

use crate::*;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::PathBuf;

/// Who runs the command.
#[derive(Clone, Copy, PartialEq)]
enum User {
    Root,
    /// uid/gid 65534, with supplementary group 100 (to test that -p keeps a group the
    /// user belongs to).
    Nobody,
}

/// What the two runs must show.
#[derive(Clone, Copy)]
enum Expect {
    Same,
    /// A deliberate difference (listed in docs/cp.md): both exit statuses must be
    /// non-zero or zero as given, and the check must hold on ioprobe's tree.
    Differs {
        why: &'static str,
        check: fn(&Path, i32) -> Result<(), String>,
    },
}

struct Case {
    name: &'static str,
    /// Builds the fixture (sh, in the case's directory, as root).
    setup: &'static str,
    /// Run after the fixture's times were fixed (to give some files other times).
    after: &'static str,
    /// The command, with `$CP` the copier.
    cmd: &'static str,
    user: User,
    /// Skipped where setup fails for want of a privilege (mount) or tool.
    optional: bool,
    /// Run after the command (unmounts).
    teardown: &'static str,
    expect: Expect,
}

const fn case(name: &'static str, setup: &'static str, cmd: &'static str) -> Case {
    Case {
        name,
        setup,
        after: "",
        cmd,
        user: User::Root,
        optional: false,
        teardown: "",
        expect: Expect::Same,
    }
}

const fn nobody(mut c: Case) -> Case {
    c.user = User::Nobody;
    c
}

const fn optional(mut c: Case, teardown: &'static str) -> Case {
    c.optional = true;
    c.teardown = teardown;
    c
}

const fn after(mut c: Case, after: &'static str) -> Case {
    c.after = after;
    c
}

/// The fixture times: anything at or before this is a fixture's time, printed as is.
const FIXTURE_TIME: i64 = 1_000_000_000;
const LATEST_FIXTURE_TIME: i64 = 1_500_000_000;

/// The cases, part 1 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_1() -> Vec<Case> {
    vec![
        // Data loss and corruption (the issue's numbered items).
        case(
            "hard links into an existing tree",
            "mkdir -p s t/s; echo new >s/f; ln s/f s/g; echo old >t/s/f",
            "$CP -a s t",
        ),
        case(
            "hard links, three names, into an existing tree",
            "mkdir -p s t/s; echo new >s/f; ln s/f s/g; ln s/f s/h; echo old >t/s/f; echo old >t/s/h",
            "$CP -a s t",
        ),
        case(
            "hard links in a fresh tree",
            "mkdir -p s/a s/b; for i in 1 2 3 4 5 6; do echo $i >s/a/f$i; ln s/a/f$i s/b/g$i; done",
            "$CP -a s t",
        ),
        case(
            "hard links that already exist in the destination",
            "mkdir -p s t/s; echo new >s/f; ln s/f s/g; echo old >t/s/f; ln t/s/f t/s/g",
            "$CP -a s t",
        ),
        Case {
            expect: Expect::Differs {
                why: "refused before anything is made (GNU makes E/D and copies into it first)",
                check: |d, st| {
                    if st == 0 || d.join("D/D").exists() {
                        return Err("ioprobe copied into the source".into());
                    }
                    Ok(())
                },
            },
            ..optional(
                case(
                    "a directory into itself through a bind mount",
                    "mkdir D E; echo x >D/f; mount --bind D E",
                    "$CP -r D E",
                ),
                "umount E",
            )
        },
        Case {
            // E is D/s: the destination E/D is D/s/D. `..` from E leaves the mount at
            // its mount point, so the check must climb D/s's own ancestors too.
            expect: Expect::Differs {
                why: "refused before anything is made (GNU makes D/s/D and D/s/D/s, and with another inode order copies D/f into D/s/D)",
                check: |d, st| {
                    refused_into_itself(d, st, "D/s/D")?;
                    refused_into_itself(d, st, "D/s/t/D")
                },
            },
            ..optional(
                case(
                    "a directory into a bind mount of its own subdirectory",
                    "mkdir -p D/s/t E; echo x >D/f; echo y >D/s/g; mount --bind D/s E",
                    "$CP -r D E; $CP -r D E/t",
                ),
                "umount E",
            )
        },
        Case {
            expect: Expect::Differs {
                why: "refused before anything is made (GNU makes D/sub/D and copies into it first)",
                check: |d, st| refused_into_itself(d, st, "D/sub/D"),
            },
            ..case(
                "a directory into its own subdirectory",
                "mkdir -p D/sub; echo x >D/f",
                "$CP -r D D/sub",
            )
        },
    ]
}

/// The cases, part 2 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_2() -> Vec<Case> {
    vec![
        case(
            "a sysfs file is read to its end",
            "test -r /sys/kernel/mm/transparent_hugepage/enabled || test -r /sys/kernel/uevent_seqnum; :",
            "f=/sys/kernel/mm/transparent_hugepage/enabled; test -r $f || f=/sys/kernel/profiling; $CP $f out",
        ),
        case(
            "a procfs file is read to its end",
            "",
            "$CP /proc/version out",
        ),
        case(
            "a character device destination is written into",
            "echo x >x; mknod nul c 1 3",
            "$CP x nul",
        ),
        case(
            "a FIFO destination is written into",
            "echo hello >x; mkfifo p",
            "cat p >got & $CP x p; st=$?; wait; exit $st",
        ),
        case(
            "a /dev/stdout symlink destination is written through",
            "echo hello >x; ln -s /dev/stdout so",
            "$CP x so >got",
        ),
        case(
            "a file named - is a file",
            "echo dash >./-; mkdir backup",
            "$CP -- - backup/",
        ),
        case(
            "two sources with the same name",
            "mkdir x y d; echo 1 >x/a; echo 2 >y/a",
            "$CP x/a y/a d/",
        ),
        case(
            "two directories with the same name merge",
            "mkdir -p x/a y/a d; echo 1 >x/a/f; echo 2 >y/a/f; echo 3 >y/a/g",
            "$CP -r x/a y/a d/",
        ),
        case(
            "a source given twice",
            "mkdir d; echo 1 >a",
            "$CP a a d/",
        ),
        nobody(case(
            "a read-only destination without -f",
            "echo new >src; echo old >ro; chmod 444 ro; chown 65534:65534 . src ro",
            "$CP src ro",
        )),
        nobody(case(
            "a read-only destination with -f",
            "echo new >src; echo old >ro; chmod 444 ro; chown 65534:65534 . src ro",
            "$CP -f src ro",
        )),
    ]
}

/// The cases, part 3 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_3() -> Vec<Case> {
    vec![
        // Destination symlinks.
        case(
            "a symlink destination is written through",
            "echo new >s; echo old >target; ln -s target l",
            "$CP s l",
        ),
        case(
            "a dangling symlink destination",
            "echo new >s; ln -s nowhere dl",
            "$CP s dl",
        ),
        case(
            "a dangling symlink destination with -f",
            "echo new >s; ln -s nowhere dl",
            "$CP -f s dl",
        ),
        case("a symlink loop destination", "echo new >s; ln -s loop loop", "$CP s loop"),
        case(
            "a symlink destination inside a tree under -a",
            "mkdir -p s t/s; echo new >s/f; echo old >t/target; ln -s ../target t/s/f",
            "$CP -a s t",
        ),
        case(
            "a symlink destination inside a tree under -r",
            "mkdir -p s t/s; echo new >s/f; echo old >t/target; ln -s ../target t/s/f",
            "$CP -r s t",
        ),
        case(
            "a symlink source onto a symlink under -a",
            "echo a >a; echo b >b; ln -s a la; ln -s b lb",
            "$CP -a la lb",
        ),
    ]
}

/// The cases, part 4 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_4() -> Vec<Case> {
    vec![
        // Symlinks on the command line.
        case(
            "a command-line symlink to a directory under -r",
            "mkdir d; echo x >d/f; ln -s d ld",
            "$CP -r ld out",
        ),
        case(
            "a dangling command-line symlink under -r",
            "ln -s nothing dl",
            "$CP -r dl out",
        ),
        case(
            "a command-line symlink under -rH",
            "mkdir d; echo x >d/f; ln -s d ld; ln -s f d/lf",
            "$CP -rH ld out",
        ),
        case(
            "symlinks followed with -rL",
            "mkdir d; echo x >d/f; ln -s f d/lf; mkdir e; ln -s ../e d/le",
            "$CP -rL d out",
        ),
        case(
            "a symlink loop with -rL",
            "mkdir d; echo x >d/f; ln -s . d/self",
            "$CP -rL d out",
        ),
        case(
            "a symlink without -r is followed",
            "echo x >f; ln -s f l",
            "$CP l out",
        ),
        case("a symlink with -P", "echo x >f; ln -s f l", "$CP -P l out"),
        case("a symlink with -d", "echo x >f; ln -s f l", "$CP -d l out"),
    ]
}

/// The cases, part 5 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_5() -> Vec<Case> {
    vec![
        // Directory idioms.
        case(
            "D/. into an existing directory",
            "mkdir -p D/sub E; echo x >D/f; echo y >D/sub/g",
            "$CP -r D/. E",
        ),
        case(
            "D/ into a new directory",
            "mkdir -p D/sub; echo x >D/f",
            "$CP -r D/ E",
        ),
        case("a directory without -r", "mkdir D", "$CP D E"),
        case(
            "a file onto a directory with -T",
            "mkdir D; echo x >f",
            "$CP -T f D",
        ),
        case(
            "a directory onto a file",
            "mkdir D; echo x >f",
            "$CP -rT D f",
        ),
        // Special files.
        case("a FIFO under -r is made", "mkfifo p", "$CP -r p out"),
        case("a FIFO under -a is made", "mkfifo p; chmod 640 p", "$CP -a p out"),
        case("a character device under -r is made", "mknod c c 1 3", "$CP -r c out"),
        optional(
            case(
                "a socket under -r is made",
                "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'",
                "$CP -r sock out",
            ),
            "",
        ),
        case(
            "a FIFO with --copy-contents is read",
            "mkfifo p",
            "echo data >p & $CP -r --copy-contents p out; st=$?; wait; exit $st",
        ),
        case(
            "a FIFO without -r is read",
            "mkfifo p",
            "echo data >p & $CP p out; st=$?; wait; exit $st",
        ),
        case(
            "a character device without -r is read",
            "mknod z c 1 5",
            "head -c 100 z >/dev/null; $CP z out </dev/null & sleep 0.3; kill $! 2>/dev/null; wait; rm -f out; exit 0",
        ),
    ]
}

/// The cases, part 6 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_6() -> Vec<Case> {
    vec![
        // Existing destinations keep their inode.
        case(
            "overwriting keeps the destination's mode and links",
            "echo new >src; chmod 644 src; echo old >dst; chmod 600 dst; ln dst dst2",
            "$CP src dst",
        ),
        case(
            "overwriting with -p takes the source's mode",
            "echo new >src; chmod 644 src; echo old >dst; chmod 600 dst",
            "$CP -p src dst",
        ),
        case(
            "overwriting with -a breaks the destination's other links",
            "echo new >src; echo old >dst; ln dst dst2",
            "$CP -a src dst",
        ),
        case(
            "--remove-destination makes a new file",
            "echo new >src; echo old >dst; chmod 600 dst; ln dst dst2",
            "$CP --remove-destination src dst",
        ),
        optional(
            case(
                "overwriting a large file on a nearly full filesystem",
                "mkdir m; mount -t tmpfs -o size=1m none m; yes old | head -c 700k >m/big; yes new | head -c 700k >src",
                "$CP src m/big; st=$?; cmp -s src m/big && echo same >result; exit $st",
            ),
            "umount m",
        ),
        nobody(case(
            "a writable file in a read-only directory",
            "echo new >src; mkdir d; echo old >d/f; chmod 666 d/f; chmod 555 d; chown 65534:65534 src",
            "$CP src d/f",
        )),
        nobody(case(
            "-p keeps a group the user belongs to",
            "echo x >src; chgrp 100 src; chmod 644 src; chown 65534 .",
            "$CP -p src dst",
        )),
        nobody(case(
            "-p without the owner drops setuid",
            "echo x >src; chmod 4755 src; chown 65534 .",
            "$CP -p src dst",
        )),
        optional(
            case(
                "-a keeps directory xattrs",
                "mkdir d; echo x >d/f; python3 -c 'import os; os.setxattr(\"d\", \"user.k\", b\"v\"); os.setxattr(\"d/f\", \"user.f\", b\"w\")'",
                "$CP -a d out",
            ),
            "",
        ),
        case(
            "a sticky directory without -p",
            "mkdir -m 1777 d; mkdir -m 2755 g; mkdir -m 700 h",
            "$CP -r d e; $CP -r g g2; $CP -r h h2",
        ),
        case(
            "modes of new files without -p",
            "echo x >a; chmod 4755 a; echo y >b; chmod 600 b; echo z >c; chmod 777 c",
            "$CP a a2; $CP b b2; $CP c c2",
        ),
        case(
            "--sparse=always punches runs of zeros",
            "head -c 1M /dev/zero >z; printf x >>z",
            "$CP --sparse=always z z2",
        ),
    ]
}

/// The cases, part 7 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_7() -> Vec<Case> {
    vec![
        case(
            "a sparse file keeps its holes",
            "truncate -s 4M h; printf x | dd of=h bs=1 seek=2M conv=notrunc 2>/dev/null",
            "$CP h h2",
        ),
        case(
            "--sparse=never fills holes",
            "truncate -s 1M h",
            "$CP --sparse=never h h2",
        ),
        // The command line.
        case("-v twice", "echo x >a", "$CP -v -v a b >/dev/null"),
        case("-r twice", "mkdir d", "$CP -r -r d e"),
        case("--preserve twice", "echo x >a", "$CP --preserve=mode --preserve=timestamps a b"),
        case(
            "--preserve without a value takes no operand",
            "echo x >a; mkdir d",
            "$CP --preserve a d",
        ),
        Case {
            expect: Expect::Differs {
                why: "a file that could not be copied is removed (GNU leaves it empty)",
                check: |d, _| {
                    let st = std::fs::read_to_string(d.join("status")).unwrap_or_default();
                    if st.trim() != "1" || d.join("d/a").exists() {
                        return Err(format!("status {st:?}, d/a left: {}", d.join("d/a").exists()));
                    }
                    Ok(())
                },
            },
            ..case(
                "--reflink without a value takes no operand",
                "echo x >a; mkdir d",
                "$CP --reflink a d; echo $? >status",
            )
        },
        case("--preserve=links", "echo x >a; ln a b; mkdir d", "$CP --preserve=links a b d"),
        case("a usage error", "", "$CP"),
        case("an unknown option", "echo x >a", "$CP --bogus a b"),
        case("a missing destination", "echo x >a", "$CP a"),
        case("an abbreviated long option", "mkdir d; echo x >d/f", "$CP --recur --preserve=mode d e"),
        case("-rf bundled", "mkdir d; echo x >d/f", "$CP -rfv d e >/dev/null"),
        case("a missing source", "", "$CP nothing out"),
        case(
            "several sources into a file",
            "echo 1 >a; echo 2 >b; echo 3 >c",
            "$CP a b c",
        ),
        case(
            "several sources into a missing directory",
            "echo 1 >a; echo 2 >b",
            "$CP a b nodir",
        ),
        case("same file", "echo x >a", "$CP a a"),
        case("same file through a hard link", "echo x >a; ln a b", "$CP a b"),
        case("same file through a symlink", "echo x >a; ln -s a b", "$CP a b"),
    ]
}

/// The cases, part 8 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_8() -> Vec<Case> {
    vec![
        // Options scripts use.
        case(
            "-i answered no",
            "echo new >a; echo old >b",
            "echo n | $CP -i a b 2>/dev/null",
        ),
        case(
            "-i answered yes",
            "echo new >a; echo old >b",
            "echo y | $CP -i a b 2>/dev/null",
        ),
        case("-i with no existing file", "echo new >a", "$CP -i a b </dev/null"),
        case("-n keeps", "echo new >a; echo old >b", "$CP -n a b"),
        case("-i then -n", "echo new >a; echo old >b", "$CP -i -n a b </dev/null"),
        case(
            "-n then -i",
            "echo new >a; echo old >b",
            "echo y | $CP -n -i a b 2>/dev/null",
        ),
        case(
            "-t DIR",
            "echo 1 >a; echo 2 >b; mkdir d",
            "$CP -t d a b",
        ),
        case("-t with a file", "echo 1 >a; echo 2 >b", "$CP -t b a"),
        case("-T with -t", "echo 1 >a; mkdir d", "$CP -T -t d a"),
        case("-T with three operands", "echo 1 >a; echo 1 >b; mkdir d", "$CP -T a b d"),
        after(
            case("-u older destination", "echo new >a; echo old >b", "$CP -u a b"),
            "touch -d @1400000000 a; touch -d @1200000000 b",
        ),
        after(
            case("-u newer destination", "echo new >a; echo old >b", "$CP -u a b"),
            "touch -d @1200000000 a; touch -d @1400000000 b",
        ),
        case("-u missing destination", "echo new >a", "$CP -u a b"),
        case(
            "-u in a tree",
            "mkdir -p s t/s; echo 1 >s/f; echo 2 >s/g; echo old >t/s/f",
            "touch -d @1400000000 t/s/f; $CP -ru s t",
        ),
        case("-l makes hard links", "mkdir d; echo x >d/f; ln -s f d/l", "$CP -rl d e"),
        case("-l on a file", "echo x >a", "$CP -l a b"),
        case("-l onto an existing file", "echo x >a; echo y >b", "$CP -l a b"),
        case("-lf onto an existing file", "echo x >a; echo y >b", "$CP -lf a b"),
        case("-s with an absolute source", "echo x >a", "$CP -s \"$PWD/a\" b"),
        case("-s with a relative source here", "echo x >a", "$CP -s a b"),
        case(
            "-s with a relative source elsewhere",
            "echo x >a; mkdir d",
            "$CP -s a d/b",
        ),
        case("-s onto an existing file", "echo x >a; echo y >b", "$CP -s a b"),
        case("-sf onto an existing file", "echo x >a; echo y >b", "$CP -sf a b"),
        case("-l and -s together", "echo x >a", "$CP -l -s a b"),
        case(
            "--parents",
            "mkdir -p a/b/c d; echo x >a/b/c/f; chmod 750 a/b",
            "$CP --parents a/b/c/f d",
        ),
        case(
            "--parents -p",
            "mkdir -p a/b d; echo x >a/b/f; chmod 750 a/b",
            "$CP -p --parents a/b/f d",
        ),
        case(
            "--parents with a directory",
            "mkdir -p a/b d; echo x >a/b/f",
            "$CP -r --parents a/b d",
        ),
    ]
}

/// The cases, part 9 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_9() -> Vec<Case> {
    vec![
        case("--parents to a file", "echo x >a; echo y >b", "$CP --parents a b"),
        optional(
            case(
                "-x stays on one filesystem",
                "mkdir -p s/m; echo x >s/f; mount -t tmpfs none s/m; echo y >s/m/g",
                "$CP -rx s t",
            ),
            "umount s/m",
        ),
        case("-b simple", "echo new >a; echo old >b", "$CP -b a b"),
        case("--backup=numbered", "echo new >a; echo old >b; echo older >b.~1~", "$CP --backup=numbered a b"),
        case("--backup=existing without numbered", "echo new >a; echo old >b", "$CP --backup=existing a b"),
        case("--backup=existing with numbered", "echo new >a; echo old >b; echo x >b.~3~", "$CP --backup=existing a b"),
        case("--backup=none", "echo new >a; echo old >b", "$CP --backup=none a b"),
        case("--backup=bogus", "echo new >a; echo old >b", "$CP --backup=bogus a b"),
        case("-S suffix", "echo new >a; echo old >b", "$CP -S .bak a b"),
        case("-b with a missing destination", "echo new >a", "$CP -b a b"),
        case("-b and -n", "echo new >a; echo old >b", "$CP -b -n a b"),
        case("-b of the source's own backup", "echo new >a; echo old >a~", "$CP -b a~ a"),
        case("-b in a tree", "mkdir -p s t/s; echo 1 >s/f; echo 2 >t/s/f", "$CP -rb s t"),
        case("--no-preserve=mode", "echo x >a; chmod 700 a", "$CP --no-preserve=mode a b"),
        case("-a --no-preserve=mode", "mkdir d; echo x >d/f; chmod 700 d/f d", "$CP -a --no-preserve=mode d e"),
        case("-a --no-preserve=timestamps", "echo x >a", "$CP -a --no-preserve=timestamps a b"),
        case("--attributes-only new", "echo x >a; chmod 640 a", "$CP --attributes-only -p a b"),
        case("--attributes-only existing", "echo x >a; chmod 640 a; echo old >b", "$CP --attributes-only -p a b"),
        case("--preserve=context", "echo x >a", "$CP --preserve=context a b"),
        case("--preserve=all", "echo x >a", "$CP --preserve=all a b"),
        case("--strip-trailing-slashes", "mkdir d; echo x >d/f", "$CP -r --strip-trailing-slashes d/ e"),
        case("-p on a tree", "mkdir -p d/s; echo x >d/s/f; chmod 750 d/s; chmod 640 d/s/f", "$CP -rp d e"),
        case("-a on a tree with a symlink", "mkdir -p d; echo x >d/f; ln -s f d/l; ln -s /nowhere d/dl", "$CP -a d e"),
        case("-r into an existing tree", "mkdir -p d/s e/d/s; echo x >d/s/f; echo y >e/d/s/f; chmod 600 e/d/s/f", "$CP -r d e"),
        case("-r onto a file in a tree", "mkdir -p d/s e/d; echo x >d/s/f; echo y >e/d/s", "$CP -r d e"),
        case("-r, a file onto a directory in a tree", "mkdir -p d e/d/f; echo x >d/f", "$CP -r d e"),
        case("-n in a tree", "mkdir -p s t/s; echo 1 >s/f; echo 2 >s/g; echo old >t/s/f", "$CP -rn s t"),
        case("a directory onto itself with -T", "mkdir D; echo x >D/f", "$CP -rT D D"),
        Case {
            expect: Expect::Differs {
                why: "refused before anything is made (GNU makes D/D and copies into it first)",
                check: |d, st| refused_into_itself(d, st, "D/D"),
            },
            ..case("a directory into itself", "mkdir D; echo x >D/f", "$CP -r D D")
        },
        case("an unreadable file", "echo x >a; chmod 000 a; chown 65534 .", "$CP a b"),
        nobody(case(
            "an unreadable file as a user",
            "echo x >a; chmod 000 a; chown 65534 .",
            "$CP a b",
        )),
        nobody(case(
            "an unreadable directory in a tree",
            "mkdir -p d/s; echo x >d/f; echo y >d/s/g; chmod 000 d/s; chown -R 65534 .",
            "$CP -r d e",
        )),
        nobody(case(
            "an unwritable destination directory",
            "echo x >a; mkdir d; chmod 555 d; chown 65534 . a d",
            "$CP a d/",
        )),
    ]
}

/// The cases, part 10 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_10() -> Vec<Case> {
    vec![
        // More of what scripts do.
        case("an empty file", ": >e", "$CP e f"),
        case("a file into a directory", "echo x >a; mkdir d", "$CP a d"),
        case("a file to a name ending in /", "echo x >a", "$CP a nodir/"),
        case("a file onto a file given with /", "echo x >a; echo y >b", "$CP a b/"),
        case("a directory onto a file given with /", "mkdir d; echo y >b", "$CP -r d b/"),
        case("-r onto an existing file", "mkdir d; echo y >b", "$CP -r d b"),
        case("-v on a tree", "mkdir -p d/s; echo x >d/f; echo y >d/s/g", "$CP -rv d e"),
        case("-v with a backup", "echo new >a; echo old >b", "$CP -v --backup=numbered a b"),
        case("-v with --remove-destination", "echo new >a; echo old >b", "$CP -v --remove-destination a b"),
        case("-v --parents", "mkdir -p a/b d; echo x >a/b/f", "$CP -v --parents a/b/f d"),
        case("-a keeps directory times", "mkdir -p d/s; echo x >d/s/f", "$CP -a d e"),
        case("-p onto an existing file", "echo x >a; chmod 640 a; echo y >b; chmod 600 b", "$CP -p a b"),
        after(
            case("-a with -u and equal times", "echo new >a; echo old >b", "$CP -au a b"),
            "touch -d @1300000000 a b",
        ),
        case("-a of a sparse file", "truncate -s 2M h; printf x >>h", "$CP -a h h2"),
        case("a large file", "head -c 3M /dev/zero | tr '\\0' x >big", "$CP big big2"),
        case("-s in a tree", "mkdir -p d/s; echo x >d/f; echo y >d/s/g", "$CP -rs \"$PWD/d\" e"),
        case("-s of a relative tree", "mkdir -p d; echo x >d/f", "$CP -rs d e"),
        case("-l of a directory without -r", "mkdir d", "$CP -l d e"),
        case("--attributes-only -r", "mkdir -p d; echo x >d/f; chmod 600 d/f", "$CP -r --attributes-only d e"),
        case("--preserve=xattr", "echo x >a; python3 -c 'import os; os.setxattr(\"a\", \"user.k\", b\"v\")' || true", "$CP --preserve=xattr a b"),
        case("xattrs are not copied by default", "echo x >a; python3 -c 'import os; os.setxattr(\"a\", \"user.k\", b\"v\")' || true", "$CP a b"),
        case("--no-preserve=ownership", "echo x >a; chown 65534:65534 a", "$CP -a --no-preserve=ownership a b"),
        case("-a keeps the owner", "echo x >a; chown 65534:100 a; mkdir d; chown 65534:100 d", "$CP -a a b; $CP -a d e"),
        case("-p keeps setuid as root", "echo x >a; chmod 4755 a", "$CP -p a b"),
        case("--preserve=mode keeps setgid", "echo x >a; chmod 2755 a", "$CP --preserve=mode a b"),
        case("-r of a directory with a sticky subdirectory", "mkdir -p d/t; chmod 1777 d/t; echo x >d/t/f", "$CP -r d e"),
        case("-rp of modes", "mkdir -p d/t; chmod 1750 d/t; echo x >d/t/f; chmod 4711 d/t/f", "$CP -rp d e"),
        case("-R is -r", "mkdir -p d; echo x >d/f", "$CP -R d e"),
        case("--recursive --archive", "mkdir -p d; echo x >d/f", "$CP --recursive --archive d e"),
        case("-rH of a dangling symlink", "ln -s nothing dl", "$CP -rH dl out"),
        case("-rL of a dangling symlink in a tree", "mkdir d; ln -s nothing d/dl; echo x >d/f", "$CP -rL d out"),
        case("-L of a symlink to a directory without -r", "mkdir d; ln -s d ld", "$CP -L ld out"),
        case("-H of a file", "echo x >f; ln -s f l", "$CP -H l out"),
        case("-a of a symlink to a directory", "mkdir d; echo x >d/f; ln -s d ld", "$CP -a ld out"),
        case("-a of hard-linked symlinks", "echo x >f; ln -s f l; ln l l2", "$CP -a l l2 . 2>/dev/null; mkdir t; $CP -a l l2 t"),
        case("-a of a hard link to a FIFO", "mkfifo p; ln p p2; mkdir t", "$CP -a p p2 t"),
        case("hard links across operands with -a", "echo x >f; ln f g; mkdir t", "$CP -a f g t"),
        case("hard links across operands with --preserve=links", "echo x >f; ln f g; mkdir t", "$CP --preserve=links f g t"),
        case("hard links without -a", "mkdir d; echo x >d/f; ln d/f d/g", "$CP -r d e"),
        case("-d of hard links in a tree", "mkdir d; echo x >d/f; ln d/f d/g", "$CP -rd d e"),
        case("-H of two symlinks to one file", "echo x >f; ln -s f l1; ln -s f l2; mkdir t", "$CP -H --preserve=links l1 l2 t"),
        case("-L with --preserve=links", "mkdir d; echo x >d/f; ln -s f d/l", "$CP -rL --preserve=links d e"),
        case("a file onto its own symlink", "echo x >f; ln -s f l", "$CP f l"),
        case("a symlink onto its target with -P", "echo x >f; ln -s f l", "$CP -P l f"),
        case("--remove-destination onto a symlink", "echo x >f; echo y >g; ln -s g l", "$CP --remove-destination f l"),
        case("-f onto a directory", "echo x >f; mkdir -p d/f", "$CP -f f d"),
        case("-n into a tree with a directory in the way", "mkdir -p d e/d/f; echo x >d/f", "$CP -rn d e"),
        case("-u with a newer directory", "mkdir -p d e/d; echo x >d/f", "$CP -ru d e"),
        case("-b -r into a tree with directories", "mkdir -p d/s e/d/s; echo x >d/s/f; echo y >e/d/s/f", "$CP -rb d e"),
        case("--backup=numbered twice", "echo 1 >a; echo 2 >b", "$CP --backup=numbered a b; echo 3 >a; $CP --backup=numbered a b"),
        case("-S with --backup=simple", "echo 1 >a; echo 2 >b", "$CP --backup=simple -S .old a b"),
        case("VERSION_CONTROL=numbered", "echo 1 >a; echo 2 >b", "VERSION_CONTROL=numbered $CP -b a b"),
        case("SIMPLE_BACKUP_SUFFIX", "echo 1 >a; echo 2 >b", "SIMPLE_BACKUP_SUFFIX=.s $CP -b a b"),
        case("-t with -r and several directories", "mkdir -p a b t; echo 1 >a/f; echo 2 >b/g", "$CP -rt t a b"),
        case("--target-directory=", "echo 1 >a; mkdir t", "$CP --target-directory=t a"),
        case("-t of a missing directory", "echo 1 >a", "$CP -t nodir a"),
        case("-T onto a missing name", "mkdir d; echo x >d/f", "$CP -rT d e"),
        case("-T of a directory onto a directory", "mkdir -p d e; echo x >d/f; echo y >e/g", "$CP -rT d e"),
        case("-- before operands", "echo x >-a", "$CP -- -a b"),
        case("an operand that looks like an option", "echo x >-a", "$CP -a b 2>/dev/null; $CP ./-a b"),
        case("--sparse=bogus", "echo x >a", "$CP --sparse=bogus a b"),
        case("--reflink=never", "echo x >a", "$CP --reflink=never a b"),
    ]
}

/// The cases, part 11 (one row a case, unformatted to stay one).
#[rustfmt::skip]
fn cases_11() -> Vec<Case> {
    vec![
        case("--reflink=auto", "echo x >a", "$CP --reflink=auto a b"),
        case("--reflink=always with --sparse=never", "echo x >a", "$CP --reflink=always --sparse=never a b"),
        case("--copy-contents of a file", "echo x >a", "$CP --copy-contents a b"),
        case("-x of a file", "echo x >a", "$CP -x a b"),
        case("--one-file-system in a tree", "mkdir -p d/s; echo x >d/s/f", "$CP -r --one-file-system d e"),
        case("-n exit status with an existing file in a tree", "mkdir -p d e/d; echo x >d/f; echo y >e/d/f", "$CP -rn d e"),
        case("/dev/null as source", "", "$CP /dev/null out"),
        case("a directory source with trailing slash into a directory", "mkdir -p d t; echo x >d/f", "$CP -r d/ t"),
        case("dot as source", "mkdir -p d t; echo x >d/f", "cd d && $CP -r . ../t"),
        case("dot-dot as source", "mkdir -p d/s t; echo x >d/f", "cd d/s && $CP -r .. ../../t"),
        // Combinations.
        case("-a into an existing directory with other modes", "mkdir -p d/s e/d/s; chmod 700 e/d; chmod 750 d; echo x >d/s/f", "$CP -a d e"),
        case("-p onto existing directories", "mkdir -p d/s e/d/s; chmod 711 d/s; echo x >d/s/f", "$CP -rp d e"),
        case("-rl into an existing tree", "mkdir -p d/s e/d/s; echo x >d/s/f; echo y >d/g; echo old >e/d/g", "$CP -rl d e"),
        case("-rlf into an existing tree", "mkdir -p d/s e/d/s; echo x >d/s/f; echo y >d/g; echo old >e/d/g", "$CP -rlf d e"),
        case("-rs into an existing tree", "mkdir -p d/s e/d; echo x >d/s/f", "$CP -rs \"$PWD/d\" e"),
        case("-a onto a symlink to a directory", "mkdir d t; echo x >d/f; ln -s t lt", "$CP -a d lt"),
        case("-a of a directory onto a symlink to a directory, -T", "mkdir d t; echo x >d/f; ln -s t lt", "$CP -aT d lt"),
        case("a directory with a trailing slash, no -r", "mkdir d", "$CP d/ e"),
        case("a file into a missing subdirectory", "echo x >f; mkdir d", "$CP f d/sub/"),
        case("a file onto a symlink to a directory with -T", "echo x >f; mkdir t; ln -s t lt", "$CP -T f lt"),
        case("-H with a directory symlink inside a tree", "mkdir -p d t; echo x >t/f; ln -s ../t d/lt", "$CP -rH d e"),
        nobody(case("a character device under -a as a user", "mknod c c 1 3; chown 65534 .", "$CP -a c out")),
        nobody(case("a FIFO under -r as a user", "mkfifo p; chown 65534 . p", "$CP -r p out")),
        nobody(case("-a of setgid and sticky directories as a user", "mkdir -p d/s; chmod 3775 d/s; chown -R 65534 .", "$CP -a d e")),
        nobody(case("-p of a setuid, setgid, sticky file whose group cannot be kept", "echo x >f; chmod 7755 f; chown 65534 . f", "$CP -p f g")),
        nobody(case("-p of a setgid file whose group can be kept", "echo x >f; chmod 2755 f; chown 65534:100 . f", "$CP -p f g")),
        case("-p keeps symlink times", "echo x >f; ln -s f l; touch -h -d @1200000000 l", "$CP -P -p l l2"),
        case("--preserve=timestamps on a tree", "mkdir -p d/s; echo x >d/s/f", "$CP -r --preserve=timestamps d e"),
        case("an empty directory", "mkdir d", "$CP -r d e"),
        case("a deep tree", "mkdir -p d/a/b/c/e/f/g/h/i/j; echo x >d/a/b/c/e/f/g/h/i/j/k", "$CP -a d e"),
        case("names with spaces and newlines", "mkdir 'd d'; echo x >'d d/f f'; echo y >\"d d/$(printf 'n\\nl')\"", "$CP -r 'd d' e"),
        nobody(case("-a with an unreadable subdirectory as a user", "mkdir -p d/s d/t; echo x >d/t/f; chmod 000 d/s; chown -R 65534 .", "$CP -a d e")),
        case("--attributes-only into an existing tree", "mkdir -p d e/d; echo x >d/f; chmod 640 d/f; echo old >e/d/f", "$CP -a --attributes-only d e"),
        case("-i in a tree, no to all", "mkdir -p d e/d; echo x >d/f; echo y >d/g; echo old >e/d/f; echo old >e/d/g", "yes n | $CP -ri d e 2>/dev/null"),
        case("-i in a tree, yes to all", "mkdir -p d e/d; echo x >d/f; echo y >d/g; echo old >e/d/f; echo old >e/d/g", "yes | $CP -ri d e 2>/dev/null"),
        case("--remove-destination onto a directory", "echo x >f; mkdir -p d/f", "$CP --remove-destination f d"),
        case("-b onto a directory target", "mkdir -p d e/d; echo x >d/f", "$CP -rb d e"),
        case("-f onto an unwritable file in a tree as root", "mkdir -p d e/d; echo x >d/f; echo old >e/d/f; chmod 000 e/d/f", "$CP -rf d e"),
        nobody(case("-f onto an unwritable file in a tree as a user", "mkdir -p d e/d; echo x >d/f; echo old >e/d/f; chmod 444 e/d/f; chown -R 65534 .", "$CP -rf d e")),
        nobody(case("onto an unwritable file in a tree as a user", "mkdir -p d e/d; echo x >d/f; echo old >e/d/f; chmod 444 e/d/f; chown -R 65534 .", "$CP -r d e")),
        case("two directory operands into a file", "mkdir a b; echo x >f", "$CP -r a b f"),
        case("the same directory twice", "mkdir -p d t; echo x >d/f", "$CP -r d d t"),
        case("a file and its directory", "mkdir -p d t; echo x >d/f", "$CP -r d d/f t"),
        case("-u with -r into an older tree", "mkdir -p d e/d; echo new >d/f", "touch -d @1100000000 d/f; $CP -ru d e; touch -d @1000 d/f; $CP -ru d e"),
        case("--sparse=always on a tree", "mkdir d; head -c 64k /dev/zero >d/z", "$CP -r --sparse=always d e"),
        case("hard links with -rl", "mkdir d; echo x >d/f; ln d/f d/g", "$CP -rl d e"),
        case("--preserve=links without -r", "echo x >f; ln f g; mkdir t", "$CP --preserve=links f g t"),
        case("-a with --no-preserve=links", "mkdir d; echo x >d/f; ln d/f d/g", "$CP -a --no-preserve=links d e"),
        case("-a --no-preserve=all", "mkdir d; echo x >d/f; chmod 600 d/f", "$CP -a --no-preserve=all d e"),
    ]
}

fn cases() -> Vec<Case> {
    [
        cases_1(),
        cases_2(),
        cases_3(),
        cases_4(),
        cases_5(),
        cases_6(),
        cases_7(),
        cases_8(),
        cases_9(),
        cases_10(),
        cases_11(),
    ]
    .into_iter()
    .flatten()
    .map(|mut c| {
        // A non-root case: the fixture is the user's.
        if c.user == User::Nobody && c.setup.is_empty() {
            c.setup = ":";
        }
        c
    })
    .collect()
}

/// A copy into itself refused: status 1 and nothing made at `inner`.
fn refused_into_itself(d: &Path, st: i32, inner: &str) -> Result<(), String> {
    if st != 1 || d.join(inner).exists() {
        return Err(format!(
            "status {st}, {inner} made: {}",
            d.join(inner).exists()
        ));
    }
    Ok(())
}

/// Runs `script` with sh in `dir`; returns its status, stderr and stdout (its lines
/// sorted: GNU's order within a directory is the inode order, ioprobe's by name).
fn sh(dir: &Path, script: &str, user: User, cp: &str) -> (i32, String, Vec<String>) {
    let mut c = match user {
        User::Root => std::process::Command::new("sh"),
        User::Nobody => {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--groups=100", "--", "sh"]);
            c
        }
    };
    let out = c
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("CP", cp)
        .env("LC_ALL", "C")
        .env_remove("VERSION_CONTROL")
        .env_remove("SIMPLE_BACKUP_SUFFIX")
        .env("XDG_DATA_HOME", dir.join("..").join("no-store"))
        .stdin(Stdio::null())
        .output()
        .expect("sh runs");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    (
        out.status.code().unwrap_or(128),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        lines,
    )
}

/// Sets every entry's times to the fixture time (symlinks themselves, not followed).
fn fix_times(dir: &Path) {
    let t = rustix::fs::Timespec {
        tv_sec: FIXTURE_TIME,
        tv_nsec: 0,
    };
    for p in walk(dir) {
        // A mount point's own root is the mounted filesystem's: leave it alone.
        let _ = rustix::fs::utimensat(
            rustix::fs::CWD,
            &p,
            &rustix::fs::Timestamps {
                last_access: t,
                last_modification: t,
            },
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        );
    }
}

/// Every path under `dir` (not `dir`), sorted, not following symlinks.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The tree under `dir`, one line per entry.
fn snapshot(dir: &Path, sparse: bool) -> Vec<String> {
    let mut inodes: HashMap<(u64, u64), String> = HashMap::new();
    let mut lines = Vec::new();
    for p in walk(dir) {
        let rel = p.strip_prefix(dir).unwrap().display().to_string();
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let ft = m.file_type();
        let kind = if ft.is_dir() {
            "dir".to_string()
        } else if ft.is_symlink() {
            format!(
                "symlink -> {}",
                std::fs::read_link(&p)
                    .unwrap()
                    .display()
                    .to_string()
                    .replace(&dir.display().to_string(), "$DIR")
            )
        } else if ft.is_file() {
            let data = std::fs::read(&p).unwrap_or_default();
            let shown = if data.len() <= 64 && std::str::from_utf8(&data).is_ok() {
                format!("{:?}", String::from_utf8_lossy(&data))
            } else {
                let sum: u64 = data
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| (i as u64 + 1) * b as u64)
                    .sum();
                format!("{} bytes, weighted sum {sum}", data.len())
            };
            format!("file {shown}")
        } else if ft.is_fifo() {
            "fifo".into()
        } else if ft.is_socket() {
            "socket".into()
        } else {
            format!(
                "{} {:x}",
                if ft.is_char_device() { "char" } else { "block" },
                m.rdev()
            )
        };
        let mtime = if m.mtime() <= LATEST_FIXTURE_TIME {
            format!("mtime {}.{:09}", m.mtime(), m.mtime_nsec())
        } else {
            "mtime new".into()
        };
        let key = (m.dev(), m.ino());
        let first = inodes.entry(key).or_insert_with(|| rel.clone()).clone();
        let link = if first != rel && !ft.is_dir() {
            format!(" same inode as {first}")
        } else {
            String::new()
        };
        let xattrs = xattrs_of(&p);
        let blocks = if sparse && ft.is_file() {
            format!(" blocks {}", m.blocks())
        } else {
            String::new()
        };
        let mode = if ft.is_symlink() {
            String::new()
        } else {
            format!(" {:04o}", m.mode() & 0o7777)
        };
        lines.push(format!(
            "{rel}: {kind}{mode} {}:{} {mtime}{link}{blocks}{xattrs}",
            m.uid(),
            m.gid()
        ));
    }
    lines
}

/// `user.*` extended attributes of `p` (not followed), as ` xattr k=v`.
fn xattrs_of(p: &Path) -> String {
    let mut buf = vec![0u8; 4096];
    let Ok(n) = rustix::fs::llistxattr(p, &mut buf) else {
        return String::new();
    };
    let mut out = String::new();
    for name in buf[..n]
        .split(|&b| b == 0)
        .filter(|n| n.starts_with(b"user."))
    {
        let mut v = vec![0u8; 4096];
        let name = std::ffi::OsStr::from_bytes(name);
        let len = rustix::fs::lgetxattr(p, name, &mut v).unwrap_or(0);
        out.push_str(&format!(
            " xattr {}={}",
            name.to_string_lossy(),
            String::from_utf8_lossy(&v[..len])
        ));
    }
    out
}

struct Side {
    status: i32,
    stderr: String,
    stdout: Vec<String>,
    tree: Vec<String>,
    dir: PathBuf,
}

/// Runs one case with `cp`; None when an optional case cannot be set up here.
fn run_side(root: &Path, side: &str, c: &Case, cp: &str) -> Option<Side> {
    let dir = root.join(side);
    std::fs::create_dir(&dir).unwrap();
    let (st, err, _) = sh(&dir, c.setup, User::Root, cp);
    if st != 0 {
        assert!(c.optional, "{}: setup failed: {err}", c.name);
        sh(&dir, c.teardown, User::Root, cp);
        return None;
    }
    fix_times(&dir);
    if !c.after.is_empty() {
        let (st, err, _) = sh(&dir, c.after, User::Root, cp);
        assert_eq!(st, 0, "{}: after-setup failed: {err}", c.name);
    }
    let (status, stderr, stdout) = sh(&dir, c.cmd, c.user, cp);
    let sparse = c.name.contains("sparse") || c.name.contains("hole");
    let tree = snapshot(&dir, sparse);
    sh(&dir, c.teardown, User::Root, cp);
    Some(Side {
        status,
        stderr,
        stdout,
        tree,
        dir,
    })
}

/// Every case of [`cases`], GNU cp against ioprobe cp.
#[test]
fn cp_matches_gnu_cp_case_by_case() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: the fixtures make devices and change owners (run as root)");
        return;
    }
    let gnu = std::process::Command::new("cp").arg("--version").output();
    if !gnu.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU coreutils")) {
        eprintln!("skipped: no GNU cp here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Searchable by the unprivileged cases' user.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ours = format!("{BIN} cp");
    let mut failures = Vec::new();
    let (mut same, mut skipped, mut deliberate) = (0, 0, 0);
    for (i, c) in cases().iter().enumerate() {
        let root = tmp.path().join(format!("case{i}"));
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (Some(g), Some(o)) = (
            run_side(&root, "gnu", c, "cp"),
            run_side(&root, "ioprobe", c, &ours),
        ) else {
            skipped += 1;
            continue;
        };
        // One line per error, each naming ioprobe (never a panic).
        if o.stderr.contains("panicked") {
            failures.push(format!("{}: ioprobe panicked: {}", c.name, o.stderr));
        }
        match c.expect {
            Expect::Same => {
                if g.status != o.status || g.tree != o.tree || g.stdout != o.stdout {
                    failures.push(format!(
                        "{} (`{}`):\n  GNU cp exit {} stderr {:?} stdout {:?}\n  ioprobe exit {} stderr {:?} stdout {:?}\n{}",
                        c.name,
                        c.cmd,
                        g.status,
                        g.stderr.trim(),
                        g.stdout,
                        o.status,
                        o.stderr.trim(),
                        o.stdout,
                        tree_diff(&g.tree, &o.tree)
                    ));
                } else {
                    same += 1;
                }
            }
            Expect::Differs { why, check } => {
                deliberate += 1;
                if let Err(e) = check(&o.dir, o.status) {
                    failures.push(format!("{} (deliberately not GNU's: {why}): {e}", c.name));
                }
            }
        }
    }
    eprintln!(
        "{same} cases as GNU cp, {deliberate} deliberate differences, {skipped} skipped here"
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from GNU cp:\n\n{}",
        failures.len(),
        cases().len(),
        failures.join("\n\n")
    );
}

/// The lines only one side has.
fn tree_diff(g: &[String], o: &[String]) -> String {
    let mut s = String::new();
    for l in g.iter().filter(|l| !o.contains(l)) {
        s.push_str(&format!("  GNU only:     {l}\n"));
    }
    for l in o.iter().filter(|l| !g.contains(l)) {
        s.push_str(&format!("  ioprobe only: {l}\n"));
    }
    s
}
