#!/usr/bin/env bash
# Does `ioprobe trace` price what it finds within 0.8–1.25 of the real saving, the
# program's own work per call included? ("calls only" is the saving without it, as
# findings priced it before issue 66.)
#
# For each program with a known I/O mistake: trace it once (--json), take the findings
# of the kind the mistake is (named = one of them "matters"), and add up their
# predicted savings; then time the program and its fixed version untraced, interleaved
# (the order alternates every round), and compare the difference of the medians with
# the prediction. Each round's paired difference (a run less the run beside it) gives
# the measured saving an interval, and the ratio a range: a case outside 0.8-1.25 whose
# range reaches into it may be the bench's noise, not the price. The fix is the one the
# findings suggest: where a finding names a better size (dd's bs, Python's buffer), the
# size is read from the finding's text.
# Programs without a mistake must stay quiet (no finding that matters) or predict under
# 1% of their untraced time.
#
# Figures: measured once at the start into a scratch store (what `ioprobe trace` does
# on a machine with nothing saved), unless STORE=path names a store to price with.
# Everything, ioprobe included, runs on one CPU (PIN=0; PIN=none to let it float), as
# both sides of a comparison must.
#   ROUNDS=7 bench/trace_accuracy.sh          (about 6 min here)
#   CASES=dd-512,lseek-read bench/trace_accuracy.sh
#   TRACER=ptrace bench/trace_accuracy.sh     (default: auto, ioprobe's own choice)
#   IOPROBE=path bench/trace_accuracy.sh      (another build, e.g. an older commit's)
#   DUMP=file.jsonl bench/trace_accuracy.sh   (each case's findings' own work, a line each)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
PIN=${PIN:-0}
CASES=${CASES:-}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/ioprobe-trace-acc.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch
cargo build --release --quiet
gcc -O2 -Wall -o "$work/mistakes" bench/c/mistakes.c
command -v sqlite3 >/dev/null || echo "note: no sqlite3: its case is skipped" >&2
IOPROBE=${IOPROBE:-$PWD/target/release/ioprobe} WORK=$work TRACER=${TRACER:-auto} ROUNDS=$ROUNDS PIN=$PIN CASES=$CASES \
STORE=${STORE:-$work/store.db} exec python3 - <<'PY'
import json, os, re, shutil, statistics, subprocess, sys, time

W, IOPROBE, STORE = os.environ["WORK"], os.environ["IOPROBE"], os.environ["STORE"]
ROUNDS, PIN = int(os.environ["ROUNDS"]), os.environ["PIN"]
ONLY = [c for c in os.environ["CASES"].split(",") if c]
if PIN != "none":
    os.sched_setaffinity(0, {int(PIN)})
MIST = f"{W}/mistakes"
PY = sys.executable

def sh(cmd):
    subprocess.run(cmd, shell=True, check=True, cwd=W, stdout=subprocess.DEVNULL)

# Inputs, written in large writes (a file written in 4 KiB writes reads slower).
for name, mib in [("f200", 200), ("f100", 100), ("f64", 64), ("f30", 30)]:
    sh(f"head -c {mib}M /dev/urandom | dd of={name} bs=1M iflag=fullblock status=none")
    sh(f"cat {name} > /dev/null")
# Many sources into one destination: 200 files of 256 KiB for tar.
sh("mkdir -p src && for i in $(seq 1 200); do "
   "dd if=f30 of=src/f$i bs=256K skip=$((i % 120)) count=1 status=none; done && cat src/* > /dev/null")

# A sender and its reader (a forked child reading 1 MiB at a time), over loopback TCP,
# or a unix socket when the third argument is `unix`:
#   sock.py send SIZE       sends 100 MiB in SIZE-byte sends
#   sock.py read-send SIZE  serves file f100: reads SIZE bytes, sends them, repeats
#   sock.py sendfile 0      serves file f100 with socket.sendfile (os.sendfile)
SOCK = f"{W}/sock.py"
with open(SOCK, "w") as f:
    f.write("""import os, socket, sys
how, size = sys.argv[1], int(sys.argv[2])
unix = len(sys.argv) > 3 and sys.argv[3] == "unix"
path = f"sock-{os.getpid()}"
ls = socket.socket(socket.AF_UNIX if unix else socket.AF_INET)
ls.bind(path if unix else ("127.0.0.1", 0))
ls.listen(1)
pid = os.fork()
if pid == 0:
    c, _ = ls.accept()
    ls.close()
    while c.recv(1 << 20):
        pass
    os._exit(0)
at = ls.getsockname()
ls.close()
if unix:
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    os.unlink(path)
else:
    s = socket.create_connection(at)
if how == "send":
    buf = b"x" * size
    for _ in range((100 << 20) // size):
        s.sendall(buf)
else:
    with open("f100", "rb", buffering=0) as f:
        if how == "sendfile":
            s.sendfile(f)
        else:
            while True:
                b = f.read(size)
                if not b:
                    break
                s.sendall(b)
s.close()
os.waitpid(pid, 0)
""")

SIZE = re.compile(r"with ([\d.]+) (B|KiB|MiB|GiB) (?:reads|writes) \(")
RECORD = re.compile(r"in ([\d.]+) (B|KiB|MiB|GiB) records \(")
UNIT = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

def suggested(found, default, pattern=SIZE):
    for f in found:
        m = pattern.search(f["text"])
        if m:
            return int(float(m.group(1)) * UNIT[m.group(2)])
    return default

def tar(record):
    return ["tar", "-cf", "out.tar", "-b", str(max(1, record // 512)), "src"]

# 2,000 inserts, each its own transaction (the mistake) or all in one.
with open(f"{W}/rows.sql", "w") as f:
    f.write("".join(f"INSERT INTO t VALUES({i}, 'row {i}');\n" for i in range(2000)))
with open(f"{W}/rows-tx.sql", "w") as f:
    f.write("BEGIN;\n" + open(f"{W}/rows.sql").read() + "COMMIT;\n")
def sqlite(tx):
    script = "rows-tx.sql" if tx else "rows.sql"
    return ["sh", "-c", f"sqlite3 db 'CREATE TABLE t(a INTEGER, b TEXT)' && sqlite3 db < {script}"]

def py_writes(buffering):
    return [PY, "-c", f"f = open('out', 'wb', buffering={buffering})\nfor _ in range(200000): f.write(b'x')\nf.close()"]

# name, kinds of finding the mistake is, the program, its fix (a function of the
# findings, for fixes that take the suggested size), a shell step before every run.
CASES = [
    ("dd-512", ["small_requests"], ["dd", "if=f200", "of=/dev/null", "bs=512"],
     lambda f: ["dd", "if=f200", "of=/dev/null", f"bs={suggested(f, 1 << 20)}"], None),
    ("python-1-byte-writes", ["small_requests"], py_writes(0),
     lambda f: py_writes(suggested(f, 1 << 20)), "rm -f out"),
    ("sqlite-no-transaction", ["fsync_per_write"], sqlite(False), lambda f: sqlite(True),
     "rm -f db db-journal"),
    ("lseek-read", ["lseek_then_io"], [MIST, "lseek-read", "f30", "100000"],
     lambda f: [MIST, "pread", "f30", "100000"], None),
    ("open-read-close", ["reopen"], [MIST, "reopen", "f30", "10000"],
     lambda f: [MIST, "open-once", "f30", "10000"], None),
    ("cat-into-md5sum", ["pipe_relay"], ["sh", "-c", "cat f100 | md5sum"],
     lambda f: ["sh", "-c", "md5sum < f100"], None),
    ("fsync-every-write", ["fsync_per_write"], [MIST, "fsync-each", "out", "1000"],
     lambda f: [MIST, "fsync-once", "out", "1000"], "rm -f out"),
    ("stat-storm", ["stat_storm"], [MIST, "stat-storm", "f30", "100000"],
     lambda f: [MIST, "stat-once", "f30", "100000"], None),
    ("reread", ["reread"], [MIST, "reread", "f30", "20"],
     lambda f: [MIST, "map-once", "f30", "20"], None),
    ("python-1KiB-sends", ["small_requests"], [PY, SOCK, "send", "1024"],
     lambda f: [PY, SOCK, "send", str(suggested(f, 1 << 20))], None),
    ("unix-read-send-file", ["read_write_copy"], [PY, SOCK, "read-send", "65536", "unix"],
     lambda f: [PY, SOCK, "sendfile", "0", "unix"], None),
    # Many sources into one destination: the archive's writes and the files' reads are
    # one finding, whose record size is the fix (tar's blocking factor).
    ("tar-512B-records", ["relay"], tar(512), lambda f: tar(suggested(f, 1 << 20, RECORD)),
     "rm -f out.tar"),
    # One source into many destinations: the reads and the four outputs' writes.
    ("fan-out-512B", ["small_requests"], [MIST, "fan-out", "f30", "512"],
     lambda f: [MIST, "fan-out", "f30", str(suggested(f, 1 << 20))], "rm -f out0 out1 out2 out3"),
]
# Cases added for the program's own work per call (issue 66), none tuned on: the four
# the issue describes, an interpreted loop in another language, a C program with stdio,
# a shell pipeline.
def py_reads(size):
    return [PY, "-c", "for _ in range(4):\n"
            f"    with open('f64', 'rb', buffering=0) as f:\n        while f.read({size}): pass"]
def py_lines(buffered):
    return [PY, "-c", "import os\n"
            + ("f = open('out', 'wb')\nfor i in range(200000): f.write(b'line %6d\\n' % (i % 999999))\nf.close()"
               if buffered else
               "fd = os.open('out', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
               "for i in range(200000): os.write(fd, b'line %6d\\n' % (i % 999999))\nos.close(fd)")]
def perl_lines(flush):
    return ["perl", "-e", "open(my $o, '>', 'out') or die; select $o; " + ("$| = 1; " if flush else "")
            + 'for my $i (1..200000) { print "line $i\\n" or die } close $o or die']
def py_print(flush):
    return [PY, "-c", "f = open('out', 'w')\nfor i in range(200000): print('line', i, file=f"
            + (", flush=True" if flush else "") + ")\nf.close()"]
def awk_lines(flush):
    return ["awk", "BEGIN { for (i = 0; i < 200000; i++) { print \"line \" i > \"out\""
            + ("; fflush(\"out\")" if flush else "") + " } }"]
def py_line_buffered(buffering):
    return [PY, "-c", f"f = open('out', 'w', buffering={buffering})\nfor i in range(200000): f.write(f'line {{i}}\\n')\nf.close()"]
def node_lines(buffered):
    return ["node", "-e", "const fs = require('fs'); const fd = fs.openSync('out', 'w'); let b = [], n = 0;\n"
            "for (let i = 0; i < 200000; i++) { const l = 'line ' + i + '\\n';\n"
            + ("  b.push(l); n += l.length; if (n >= 65536) { fs.writeSync(fd, b.join('')); b = []; n = 0; } }\n"
               "if (n) fs.writeSync(fd, b.join(''));\n" if buffered else "  fs.writeSync(fd, l); }\n")
            + "fs.closeSync(fd);"]
# Lines written through C++'s ofstream (std::endl flushes each) and Rust's LineWriter
# (what stdout is), against '\n' and a BufWriter: compiled here where the compilers are.
CXX, RUST = None, None
if shutil.which("g++"):
    with open(f"{W}/lines.cpp", "w") as f:
        f.write("""#include <fstream>
#include <cstring>
int main(int, char **v) {
    std::ofstream o("out");
    bool endl = !std::strcmp(v[1], "endl");
    for (int i = 0; i < 200000; i++) {
        o << "line " << i;
        if (endl) o << std::endl; else o << '\\n';
    }
    o.close();
    return o.fail() ? 1 : 0;
}
""")
    sh("g++ -O2 -o lines-cpp lines.cpp")
    CXX = f"{W}/lines-cpp"
if shutil.which("rustc"):
    with open(f"{W}/lines.rs", "w") as f:
        f.write("""use std::io::{BufWriter, LineWriter, Write};
fn main() -> std::io::Result<()> {
    let f = std::fs::File::create("out")?;
    let mut o: Box<dyn Write> = if std::env::args().nth(1).as_deref() == Some("line") {
        Box::new(LineWriter::new(f))
    } else {
        Box::new(BufWriter::new(f))
    };
    for i in 0..200_000 {
        writeln!(o, "line {i}")?;
    }
    o.flush()
}
""")
    sh("rustc -O -o lines-rs lines.rs")
    RUST = f"{W}/lines-rs"
def py_logging(flush):
    return [PY, "-c", "import logging\nh = logging.FileHandler('out')\n"
            + ("" if flush else "h.flush = lambda: None\n")
            + "log = logging.getLogger('bench'); log.addHandler(h); log.setLevel(logging.INFO)\n"
            "for i in range(50000): log.info('record %d of the log', i)\nh.close()"]
def perl_syswrite(each):
    return ["perl", "-e", "open(my $o, '>', 'out') or die; for my $i (1..200000) { "
            + ('syswrite($o, "line $i\\n") or die' if each else 'print $o "line $i\\n" or die')
            + " } close $o or die"]
def perl_reads(size):
    return ["perl", "-e", f"open(my $f, '<', 'f100') or die; binmode $f; my $b; while (sysread($f, $b, {size})) {{}}"]
CASES += [
    ("py-read-4096-x4", ["small_requests"], py_reads(4096), lambda f: py_reads(262144), None),
    ("py-os-write-8B-lines", ["small_requests"], py_lines(False), lambda f: py_lines(True), "rm -f out"),
    ("tar-b1-256KiB-files", ["relay"], tar(512), lambda f: tar(2048 * 512), "rm -f out.tar"),
    ("dd-512-64MiB", ["small_requests"], ["dd", "if=f64", "of=/dev/null", "bs=512"],
     lambda f: ["dd", "if=f64", "of=/dev/null", "bs=1M"], None),
    ("perl-sysread-4KiB", ["small_requests"], perl_reads(4096),
     lambda f: perl_reads(suggested(f, 1 << 20)), None),
    ("c-stdio-unbuffered", ["small_requests"], [MIST, "stdio-lines", "out", "0"],
     lambda f: [MIST, "stdio-lines", "out", str(min(suggested(f, 1 << 20), 1 << 20))], "rm -f out"),
    # dd only moves the file into the pipe: the finding is the relay (`wc -l < f100`).
    # wc -l, not -c: given a regular file, `wc -c` reads nothing (fstat and lseek), a
    # saving no relay's removal could predict (the case measured that at first: 0.50).
    ("sh-dd-1KiB-into-wc", ["pipe_relay"],
     ["sh", "-c", "dd if=f100 bs=1k status=none | wc -l"],
     lambda f: ["sh", "-c", "wc -l < f100"], None),
]
# Cases added after the estimator was decided (30 Nov), none tuned on: programs that
# make their pieces one by one and write each at once, fixed by a buffer in front of
# the same loop (the loop stays; what goes is the call and what leads to it).
CASES += [
    ("perl-autoflush-lines", ["small_requests"], perl_lines(True), lambda f: perl_lines(False), "rm -f out"),
    ("py-print-flush", ["small_requests"], py_print(True), lambda f: py_print(False), "rm -f out"),
    ("awk-fflush-lines", ["small_requests"], awk_lines(True), lambda f: awk_lines(False), "rm -f out"),
    ("c-write-per-record", ["small_requests"], [MIST, "records", "out", "0"],
     lambda f: [MIST, "records", "out", str(min(suggested(f, 1 << 20), 1 << 20))], "rm -f out"),
]
# And the same shape in four more languages, added after the rule for such writes was
# decided on the four above (30 Nov) and run once to check it: none tuned on.
if CXX:
    CASES.append(("cpp-endl-lines", ["small_requests"], [CXX, "endl"], lambda f: [CXX, "newline"], "rm -f out"))
if RUST:
    CASES.append(("rust-linewriter-lines", ["small_requests"], [RUST, "line"], lambda f: [RUST, "buf"], "rm -f out"))
CASES.append(("py-line-buffered", ["small_requests"], py_line_buffered(1), lambda f: py_line_buffered(-1),
              "rm -f out"))
if shutil.which("node"):
    CASES.append(("node-writesync-lines", ["small_requests"], node_lines(False), lambda f: node_lines(True),
                  "rm -f out"))
# Written after that rule was in the code, before it was run on them (30 Nov): Python's
# logging (a flush after each record: much work between writes), perl's syswrite, C's
# fputc unbuffered (1-byte writes), and `python -u` (each piece of a print its own
# write).
CASES += [
    ("py-logging-flush", ["small_requests"], py_logging(True), lambda f: py_logging(False), "rm -f out"),
    ("perl-syswrite-lines", ["small_requests"], perl_syswrite(True), lambda f: perl_syswrite(False),
     "rm -f out"),
    ("c-fputc-unbuffered", ["small_requests"], [MIST, "fputc", "out", "0"],
     lambda f: [MIST, "fputc", "out", str(min(suggested(f, 1 << 20), 1 << 20))], "rm -f out"),
    # (PYTHONUNBUFFERED, where set, would make the fix's stdout unbuffered too.)
    ("py-unbuffered-print", ["small_requests"],
     ["sh", "-c", f"{PY} -u -c \"for i in range(100000): print('line', i)\" > out"],
     lambda f: ["env", "-u", "PYTHONUNBUFFERED", "sh", "-c",
                f"{PY} -c \"for i in range(100000): print('line', i)\" > out"], "rm -f out"),
    # Run once by hand before it was added: C computing 3 µs before each unbuffered
    # record, where almost none of the gap goes (the case for the rule's cut-off).
    ("c-computed-records", ["small_requests"], [MIST, "computed", "out", "0"],
     lambda f: [MIST, "computed", "out", str(min(suggested(f, 1 << 20), 1 << 20))], "rm -f out"),
]
CLEAN = [
    ("dd-1M", ["dd", "if=f200", "of=/dev/null", "bs=1M"], None),
    ("cp", ["cp", "f100", "out"], "rm -f out"),
    ("gzip", ["sh", "-c", "gzip -1 -c f30 > /dev/null"], None),
    ("md5sum", ["md5sum", "f100"], None),
    ("python-1MiB-reads", [PY, "-c", "f = open('f100', 'rb')\nwhile f.read(1 << 20): pass"], None),
    ("python-1MiB-sends", [PY, SOCK, "send", str(1 << 20)], None),
]
if not shutil.which("sqlite3"):
    CASES = [c for c in CASES if not c[0].startswith("sqlite")]
if ONLY:
    CASES = [c for c in CASES if c[0] in ONLY]
    CLEAN = [c for c in CLEAN if c[0] in ONLY]

# The inputs, read back into the page cache before every run traced or timed: a DAMON
# `pageout` scheme here evicts page cache idle for 60 s, and f100 was 37% resident a
# few minutes into the bench, so that runs read part of it from disk (a run's time then
# the disk's, and its fix's saving with it). Checked with fincore where it exists.
INPUTS = ["f200", "f100", "f64", "f30"]
resident = []

def warm():
    sh("cat " + " ".join(INPUTS) + " src/* > /dev/null")
    if shutil.which("fincore"):
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE", *INPUTS],
                             cwd=W, capture_output=True, text=True, check=True).stdout.split()
        res, size = sum(map(int, out[0::2])), sum(map(int, out[1::2]))
        resident.append(res / max(size, 1))

def prep(step):
    if step:
        sh(step)
    warm()

# Every trace's findings together save at most its work (issue 66): checked on each.
over_work = []

def trace(argv, step):
    prep(step)
    out = f"{W}/trace.json"
    r = subprocess.run([IOPROBE, "trace", "--tracer", os.environ["TRACER"], "--store", STORE,
                        "--json", "--output", out, "--", *argv],
                   cwd=W, stdout=subprocess.DEVNULL, stderr=open(f"{W}/trace.err", "w"), check=False)
    if r.returncode != 0:
        sys.exit(f"tracing {' '.join(argv)[:200]} failed ({r.returncode}): {open(f'{W}/trace.err').read()[-500:]}")
    doc = json.load(open(out))
    saved = sum(f["saving_s"] or 0 for f in doc["findings"])
    if saved > doc["work"]["estimate_s"] * (1 + 1e-9):
        over_work.append(f"{' '.join(argv)[:60]}: {ms(saved)} > {ms(doc['work']['estimate_s'])}")
    return doc

def timed(argv, step):
    prep(step)
    t = time.perf_counter()
    subprocess.run(argv, cwd=W, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t

def medians(a, b, step):
    """The medians of a and b, and each round's paired difference (a's run less the
    b run beside it): what the interval of the measured saving is taken from."""
    ta, tb = [], []
    for r in range(ROUNDS):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            (ta if which == 0 else tb).append(timed((a, b)[which], step))
    return statistics.median(ta), statistics.median(tb), [x - y for x, y in zip(ta, tb)]

def interval(d):
    """A distribution-free interval of the median of d: the k-th smallest and largest,
    k the largest with P(Binomial(n, 1/2) < k) <= 2.5%; and its coverage."""
    from math import comb
    n, d = len(d), sorted(d)
    tail = lambda k: sum(comb(n, i) for i in range(k)) / 2 ** n
    k = max([k for k in range(1, n // 2 + 1) if tail(k) <= 0.025], default=1)
    return d[k - 1], d[n - k], 1 - 2 * tail(k)

def ms(s):
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"

print("figures: measuring first" if not os.path.exists(STORE) else f"figures: {STORE}", file=sys.stderr)
# The figures, measured once here when the store has none; kept to see, at the end, how
# far this machine moved from them while the bench ran.
figures = trace(["true"], None)["figures"]
print(f"| mistake | named? | predicted saving | of it, own work | measured saving (interval) | predicted ÷ measured (range) | calls only ÷ measured | untraced | fixed |")
print(f"|---|---|---:|---:|---:|---:|---:|---:|---:|")
ratios = []
for name, kinds, broken, fix, step in CASES:
    doc = trace(broken, step)
    found = [f for f in doc["findings"] if f["kind"] in kinds]
    named = any(f["matters"] for f in found)
    predicted = sum(f["saving_s"] or 0 for f in found)
    own = sum((f.get("own_work") or {}).get("saving_s", 0) for f in found)
    how = ", ".join(kinds)
    if not found:
        # Named as another way to change calls a larger finding claimed first (a file
        # read 4 times in 4 KiB reads: reading it once claims them, bigger reads are
        # its alternative), with what it would save on its own.
        alts = [(f, a) for f in doc["findings"] for a in f.get("alternatives", [])
                if a["kind"] in kinds and a.get("saving_s")]
        named = any(f["matters"] for f, _ in alts)
        predicted = sum(a["saving_s"] for _, a in alts)
        own = sum(a.get("own_work_s") or 0 for _, a in alts)
        if alts:
            how = ", ".join(f"{a['kind']}, as {f['kind']}'s alternative" for f, a in alts)
    fixed = fix(found)
    tb, tf, diffs = medians(broken, fixed, step)
    measured = tb - tf
    ratio = predicted / measured if measured > 0 else float("nan")
    before = (predicted - own) / measured if measured > 0 else float("nan")
    lo, hi, coverage = interval(diffs)
    # The ratio's range over the measured saving's interval: where it reaches into
    # 0.8-1.25, the bench's own noise can account for a ratio outside it.
    span = (predicted / hi if hi > 0 else float("nan"), predicted / lo if lo > 0 else float("inf"))
    reach = span[0] <= 1.25 and span[1] >= 0.8
    ratios.append((name, named, ratio, reach))
    print(f"| {name} | {'yes' if named else '**no**'} ({how}) | {ms(predicted)} | {ms(own)} | {ms(measured)} "
          f"({ms(lo)} to {ms(hi)}) | {ratio:.2f} ({span[0]:.2f}-{span[1]:.2f}) | {before:.2f} | {ms(tb)} | {ms(tf)} |",
          flush=True)
    if os.environ.get("DUMP"):
        # Each finding's own work as measured (the work between calls and the calls'
        # price, each), to weigh another rule for the part that goes without a rerun.
        with open(os.environ["DUMP"], "a") as d:
            d.write(json.dumps({"case": name, "predicted_s": predicted, "own_s": own, "measured_s": measured,
                                "own_work": [f.get("own_work") for f in found]}) + "\n")
print()
print("| program without a mistake | findings that matter | predicted saving | untraced | share |")
print("|---|---:|---:|---:|---:|")
loud = []
for name, argv, step in CLEAN:
    doc = trace(argv, step)
    matter = [f for f in doc["findings"] if f["matters"]]
    predicted = sum(f["saving_s"] or 0 for f in matter)
    t = statistics.median(timed(argv, step) for _ in range(ROUNDS))
    share = predicted / t
    if matter and share >= 0.01:
        loud.append(name)
    kinds = ", ".join(sorted({f["kind"] for f in matter})) or "none"
    print(f"| {name} | {len(matter)} ({kinds}) | {ms(predicted)} | {ms(t)} | {share * 100:.2g}% |", flush=True)
print()
bad = [n for n, named, r, _ in ratios if not named or not (0.8 <= r <= 1.25)]
noisy = [n for n, named, r, reach in ratios if n in bad and named and reach]
cover = interval([0.0] * ROUNDS)[2]
held = (f"; inputs {min(resident) * 100:.1f}% resident at the least before a run (fincore)"
        if resident else "; inputs read back before every run")
print(f"(medians of {ROUNDS} interleaved rounds; CPU {PIN}; {len(ratios) - len(bad)} of {len(ratios)} mistakes named "
      f"and within 0.8-1.25; {len(CLEAN) - len(loud)} of {len(CLEAN)} clean programs quiet or under 1%{held})")
print(f"(the findings' savings add up to at most the work in {len(ratios) + len(CLEAN) + 1 - len(over_work)} of "
      f"{len(ratios) + len(CLEAN) + 1} traces" + (": over it in " + "; ".join(over_work) if over_work else "") + ")")
print(f"(measured saving: the difference of the medians; its interval: the distribution-free {cover * 100:.1f}% "
      f"interval of the median of the {ROUNDS} rounds' paired differences; range: the prediction over that interval)")

# The prices rest on figures measured before the programs ran: measured again now, in
# the same way (pinned, the probes' own rows), they say how far this machine moved in
# the meantime, a bound on the accuracy any price measured earlier can have here.
def now_rows(args):
    pin = [] if PIN == "none" else ["--cpu", PIN]
    out = subprocess.run([IOPROBE, *args, "--no-save", "--json", *pin], cwd=W, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["measurements"]
CALLS = ["null", "lseek", "pread", "stat", "open_read_close"]
moved = [(c, figures["calls_ns"][c], m["median"], "ns")
         for m in now_rows(["syscalls", "--case", ",".join(CALLS)])
         for c in [m["case"]] if c in figures.get("calls_ns", {})]
then_read = dict(figures.get("read", []))
size = lambda b: f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
moved += [(f"read, {size(m['params']['block_size'])} reads", then_read[m["params"]["block_size"]], m["median"], "B/s")
          for m in now_rows(["read", "--sizes", "4k,64k,1m", "--method", "read", "--populate", "write"])
          if m["params"]["block_size"] in then_read]
if moved:
    print()
    print("| figure pricing used | then | now (after the bench) | now ÷ then |")
    print("|---|---:|---:|---:|")
    for name, then, now, unit in moved:
        show = (lambda v: f"{float(f'{v:.3g}'):,.0f} ns") if unit == "ns" else (lambda v: f"{v / 1e9:.3g} GB/s")
        print(f"| {name} | {show(then)} | {show(now)} | {now / then:.2f} |")
if bad or loud:
    print("outside the goal: " + ", ".join(bad + loud))
if noisy:
    print("of them, within the goal somewhere in the measured saving's interval (the bench's noise may "
          "be what is off): " + ", ".join(noisy))
PY
