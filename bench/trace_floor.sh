#!/usr/bin/env bash
# Where eBPF's per-call cost goes: bench/c/bpf_floor.c times read(fd, buf, 0) on
# /dev/zero on CPU 0 untraced and under a sys_exit raw tracepoint program that does
# one more of ioprobe's steps at each level (nothing; the traced-tree lookup; a
# ring-buffer record; the registers' copy), then the two steps ioprobe took in their
# place on 27 Nov 2026 (a bitmap looked up inline for the hash map; the registers read
# through a BTF-typed tracepoint's pointer for the copy). Medians of ROUNDS runs per level,
# interleaved. Beside them, ioprobe's own program: `ioprobe trace --tracer ebpf` of
# the same loop (bench/c/trace_loop.c; 2N minus N calls, so the fixed cost cancels).
# Level 9 writes the record into its CPU's own ring (an mmapable array that a thread
# empties) with a ticket from a counter all CPUs share, ioprobe's way since 30 Nov 2026.
# Levels 6 and 7 time every call (the call's end, the task's context switches), as
# ioprobe did first for the program's own work between calls; ioprobe times a sample
# of pairs instead (one call in about 40 and the call after it).
# BEFORE=path/to/an/older/ioprobe adds its whole program, measured in the same rounds.
#   ROUNDS=5 bench/trace_floor.sh   (about 2 min; needs root or CAP_BPF+CAP_PERFMON)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
N=${N:-2000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
gcc -O2 -pthread -o "$work/floor" bench/c/bpf_floor.c
gcc -O2 -o "$work/loop" bench/c/trace_loop.c
cargo build --release --quiet
IOPROBE=$PWD/target/release/ioprobe
"$work/floor" 0 1000 >/dev/null || { echo "bench/trace_floor.sh: cannot load BPF programs here" >&2; exit 1; }
store="$work/store.db"
"$IOPROBE" trace --store "$store" --output /dev/null -- true 2>/dev/null
[ -z "${BEFORE:-}" ] || "$BEFORE" trace --store "$store.before" --output /dev/null -- true 2>/dev/null
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s%N; }
for r in $(seq "$ROUNDS"); do
    for level in 0 1 2 3 4 5 6 7 8 9; do
        "$work/floor" "$level" "$N" > "$work/out"
        read -r _ bare traced < "$work/out"
        echo "$bare" >> "$work/bare"
        echo "$traced" >> "$work/l$level"
    done
    for m in 1 2; do
        t0=$(now)
        "$IOPROBE" trace --tracer ebpf --store "$store" --output /dev/null -- \
            taskset -c 0 "$work/loop" zero $((N * m)) >/dev/null 2>&1
        echo $(($(now) - t0)) >> "$work/io$m"
        if [ -n "${BEFORE:-}" ]; then
            t0=$(now)
            "$BEFORE" trace --tracer ebpf --store "$store.before" --output /dev/null -- \
                taskset -c 0 "$work/loop" zero $((N * m)) >/dev/null 2>&1
            echo $(($(now) - t0)) >> "$work/before$m"
        fi
        t0=$(now)
        taskset -c 0 "$work/loop" zero $((N * m))
        echo $(($(now) - t0)) >> "$work/un$m"
    done
done
bare=$(median < "$work/bare")
echo "read(fd, buf, 0) on /dev/zero, CPU 0; $N calls; medians of $ROUNDS rounds"
echo "untraced: $bare ns a call"
echo
echo "| sys_exit program does | ns a call | added | step adds |"
echo "|---|---:|---:|---:|"
prev=$bare
names=("nothing" "+ traced-tree lookup (hash map)" "+ ring record (80 B)" "+ registers' copy (72 B)"
    "the same, a bitmap looked up inline for the hash" "the same, registers read through the typed pointer"
    "+ the call's end (bpf_ktime_get_ns)" "+ the task's context switches (task pointer, 2 loads)"
    "level 5 with the record in a per-CPU array slot, no ring"
    "level 5 with the record in its CPU's own ring, a shared ticket (ioprobe since 30 Nov 2026)")
for level in 0 1 2 3 4 5 6 7 8 9; do
    t=$(median < "$work/l$level")
    awk -v n="${names[$level]}" -v t="$t" -v b="$bare" -v p="$prev" \
        'BEGIN { printf "| %s | %.1f | %+.1f | %+.1f |\n", n, t, t - b, t - p }'
    prev=$t
done
io1=$(median < "$work/io1"); io2=$(median < "$work/io2")
un1=$(median < "$work/un1"); un2=$(median < "$work/un2")
awk -v a="$io1" -v b="$io2" -v c="$un1" -v d="$un2" -v n="$N" \
    'BEGIN { printf "| ioprobe trace --tracer ebpf (whole program) | | +%.1f | |\n", ((b - a) - (d - c)) / n }'
if [ -n "${BEFORE:-}" ]; then
    b1=$(median < "$work/before1"); b2=$(median < "$work/before2")
    awk -v a="$b1" -v b="$b2" -v c="$un1" -v d="$un2" -v n="$N" -v p="$BEFORE" \
        'BEGIN { printf "| %s trace --tracer ebpf (whole program, BEFORE) | | +%.1f | |\n", p, ((b - a) - (d - c)) / n }'
fi
