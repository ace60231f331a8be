#!/usr/bin/env bash
# Fidelity benchmark: ioprobe's figures ÷ a bare C loop doing the same calls, run
# interleaved (ioprobe then C, then C then ioprobe on the next round) so drift hits both.
# Prints one row per case: median of the per-round ratios. Goal: 0.97–1.03.
#   ROUNDS=5 bench/fidelity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch; a trap alone would carry on

cargo build --release --quiet
gcc -O2 -Wall -o "$work/ref" bench/c/ref.c
# open+close is also compared with a bare Rust loop (std's File: O_CLOEXEC, as programs
# open files), and the better of the two loops is the reference.
rustc -O -o "$work/ref_open_close" bench/rust/open_close.rs
IOPROBE=target/release/ioprobe
# Both sides on one CPU (the two vCPUs can differ by 30%): CPU 0, or FIDELITY_CPU.
cpu=${FIDELITY_CPU:-0}
pin() { taskset -c "$cpu" "$@"; }
mkdir "$work/scratch"
# Same depth and name length as ioprobe's own scratch directory (.ioprobe-XXXXXX).
refdir="$work/scratch/.ioprobe-cref00"
mkdir "$refdir"
rustdir="$work/scratch/.ioprobe-rref00"
mkdir "$rustdir"
head -c 8 /dev/zero > "$rustdir/syscalls.dat"

median_of_json() { python3 -c 'import json,sys; print(json.load(sys.stdin)["measurements"][0]["median"])'; }

CASES="null null_vector_dirty open_close open_write_close open_read_close lseek_write lseek_read pwrite pread mmap_store mmap_load fstat stat"
BLOCKS="4k 64k 1m"
: > "$work/rows"
for round in $(seq "$ROUNDS"); do
    for c in $CASES; do
        run_i() { pin "$IOPROBE" syscalls --no-save --cpu "$cpu" --case "$c" --json --dir "$work/scratch" 2>/dev/null | median_of_json; }
        run_c() {
            local v; v=$(pin "$work/ref" syscalls "$c" 8 "$refdir")
            if [[ $c == open_close ]]; then
                local r; r=$(pin "$work/ref_open_close" "$rustdir/syscalls.dat")
                python3 -c "print(min($v, $r))"
            else
                echo "$v"
            fi
        }
        if (( round % 2 )); then i=$(run_i); r=$(run_c); else r=$(run_c); i=$(run_i); fi
        echo "syscalls $c ns/op $i $r" >> "$work/rows"
    done
    for b in $BLOCKS; do
        run_i() { pin "$IOPROBE" read --no-save --cpu "$cpu" --block-sizes "$b" --json --dir "$work/scratch" 2>/dev/null | median_of_json; }
        run_c() { pin "$work/ref" read "$b" 10m "$refdir"; }
        if (( round % 2 )); then i=$(run_i); r=$(run_c); else r=$(run_c); i=$(run_i); fi
        echo "read $b bytes/s $i $r" >> "$work/rows"
    done
    g=$(pin "$work/ref" syscalls fstat_glibc 8 "$refdir"); r=$(pin "$work/ref" syscalls fstat 8 "$refdir")
    echo "glibc fstat_glibc÷fstat ns/op $g $r" >> "$work/rows"
    echo "round $round/$ROUNDS done" >&2
done

python3 - "$work/rows" "$ROUNDS" <<'PY'
import sys, statistics
rows = {}
order = []
for line in open(sys.argv[1]):
    probe, case, unit, i, c = line.split()
    key = (probe, case, unit)
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append((float(i), float(c)))
print(f"fidelity: ioprobe ÷ bare C (open_close: the better of C and Rust), median of {sys.argv[2]} interleaved rounds")
print(f"{'probe':9} {'case':17} {'unit':8} {'ioprobe':>12} {'C':>12} {'ratio':>7}  range of ratios")
bad = 0
notes = [k for k in order if k[0] == "glibc"]
order = [k for k in order if k[0] != "glibc"]
for key in order:
    pairs = rows[key]
    ratios = [i / c for i, c in pairs]
    r = statistics.median(ratios)
    i = statistics.median(p[0] for p in pairs)
    c = statistics.median(p[1] for p in pairs)
    fmt = (lambda v: f"{v/1e9:.3f} GB/s") if key[2] == "bytes/s" else (lambda v: f"{v:.3g} ns")
    flag = "" if 0.97 <= r <= 1.03 else "  <- outside 0.97-1.03"
    bad += flag != ""
    print(f"{key[0]:9} {key[1]:17} {key[2]:8} {fmt(i):>12} {fmt(c):>12} {r:7.3f}  {min(ratios):.3f}-{max(ratios):.3f}{flag}")
print(f"{bad} of {len(order)} ratios outside 0.97-1.03 (ns/op: >1 = ioprobe slower; bytes/s: >1 = ioprobe faster)")
for key in notes:
    pairs = rows[key]
    r = statistics.median(g / s for g, s in pairs)
    print(f"note: glibc's fstat() (newfstatat AT_EMPTY_PATH) costs {r:.3f}x the fstat syscall "
          f"({statistics.median(p[0] for p in pairs):.3g} vs {statistics.median(p[1] for p in pairs):.3g} ns)")
PY
