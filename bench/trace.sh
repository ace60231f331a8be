#!/usr/bin/env bash
# What tracing costs the traced program: wall time untraced, under `ioprobe trace` and
# under `strace -f -c`, for each workload, interleaved (the order of the three turns
# every round), medians over ROUNDS; then the same with everything pinned to one CPU
# (taskset -c 0: tracer and traced program share it, so a stop needs no cross-CPU
# wake-up). Workloads:
#   - dd bs=4k over 64 MiB (32,768 reads and as many writes);
#   - dd bs=512 over 16 MiB (the same number of calls, each cheaper);
#   - dd bs=1M over 1 GiB: few, large calls;
#   - a shell loop that makes no system call: the seccomp filter lets every untraced
#     call run without a stop, so it should cost nothing;
#   - true: the fixed cost of starting, pricing and reporting.
# Figures are measured once first, and ioprobe's per-call user-time calibration is
# pooled first in each placement (as on a machine where trace has run before), so
# neither is in the timings.
#   ROUNDS=3 bench/trace.sh   (about 6 min here)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch
command -v strace >/dev/null || { echo "bench/trace.sh: needs strace" >&2; exit 1; }
cargo build --release --quiet
IOPROBE=$PWD/target/release/ioprobe
store="$work/store.db"
"$IOPROBE" trace --store "$store" --dir "$work" --output /dev/null -- true 2>/dev/null
for pin in "" "taskset -c 0"; do
    for _ in 1 2 3 4; do
        $pin "$IOPROBE" trace --store "$store" --output /dev/null -- \
            dd if=/dev/zero of=/dev/null bs=1 count=25000 2>/dev/null
    done
done

now() { date +%s%N; }
time_ns() { local t0; t0=$(now); "$@" >/dev/null 2>&1; echo $(($(now) - t0)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run NAME PIN CMD...: one table row.
run() {
    local name=$1 pin=$2; shift 2
    : > "$work/u"; : > "$work/i"; : > "$work/s"
    local -a u i s
    u=($pin "$@")
    i=($pin "$IOPROBE" trace --store "$store" --output /dev/null -- "$@")
    s=($pin strace -f -c -o /dev/null "$@")
    for round in $(seq "$ROUNDS"); do
        case $((round % 3)) in
            1) time_ns "${u[@]}" >> "$work/u"; time_ns "${i[@]}" >> "$work/i"; time_ns "${s[@]}" >> "$work/s" ;;
            2) time_ns "${i[@]}" >> "$work/i"; time_ns "${s[@]}" >> "$work/s"; time_ns "${u[@]}" >> "$work/u" ;;
            0) time_ns "${s[@]}" >> "$work/s"; time_ns "${u[@]}" >> "$work/u"; time_ns "${i[@]}" >> "$work/i" ;;
        esac
    done
    awk -v n="$name" -v u="$(median < "$work/u")" -v i="$(median < "$work/i")" -v s="$(median < "$work/s")" \
        'function t(x) { return x >= 1e9 ? sprintf("%.3g s", x / 1e9) : sprintf("%.3g ms", x / 1e6) }
         BEGIN { printf "| %s | %s | %s (×%.3g) | %s (×%.3g) |\n", n, t(u), t(i), i / u, t(s), s / u }'
}

for pin in "" "taskset -c 0"; do
    echo
    echo "${pin:-unpinned (tracer and program where the scheduler puts them)}"
    echo
    echo "| workload | untraced | ioprobe trace | strace -f -c |"
    echo "|---|---:|---:|---:|"
    run "dd bs=4k, 64 MiB" "$pin" dd if=/dev/zero of=/dev/null bs=4k count=16k
    run "dd bs=512, 16 MiB" "$pin" dd if=/dev/zero of=/dev/null bs=512 count=32k
    run "dd bs=1M, 1 GiB" "$pin" dd if=/dev/zero of=/dev/null bs=1M count=1k
    run "shell loop, no system calls" "$pin" sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
    run "true" "$pin" true
done
echo
echo "(medians of $ROUNDS interleaved rounds; ioprobe's time includes its start, pricing and report)"
