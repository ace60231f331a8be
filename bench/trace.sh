#!/usr/bin/env bash
# What `ioprobe trace` costs the traced program: wall time of each workload traced ÷
# untraced, interleaved (untraced first on odd rounds, traced first on even ones),
# medians over ROUNDS. Workloads:
#   - dd if=/dev/zero of=/dev/null bs=1 count=1M: two traced calls per byte, the worst case;
#   - a shell loop that makes no system call (no I/O): the seccomp filter lets every
#     untraced call run without a stop, so this should cost nothing;
#   - dd bs=64k count=16k (1 GiB): few, large calls.
# Figures saved by the run are priced with; the pricing's own quick measurement (when
# nothing is saved) is excluded by giving it a saved store first.
#   ROUNDS=3 bench/trace.sh   (about 8 min here: each traced call costs ~70 µs in this VM, as under strace)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch; a trap alone would carry on
cargo build --release --quiet
IOPROBE=$PWD/target/release/ioprobe
store="$work/store.db"
# Figures to price with, measured once (not timed).
"$IOPROBE" trace --store "$store" --dir "$work" --output /dev/null -- true 2>/dev/null

now() { date +%s%N; }
time_ns() { local t0; t0=$(now); "$@" >/dev/null 2>&1; echo $(($(now) - t0)); }
traced() { "$IOPROBE" trace --store "$store" --output /dev/null -- "$@"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-44s %12s %12s %9s\n' workload "untraced" "traced" "traced ÷"
run() {
    local name=$1; shift
    : > "$work/u"; : > "$work/t"
    for round in $(seq "$ROUNDS"); do
        if (( round % 2 )); then
            time_ns "$@" >> "$work/u"; time_ns traced "$@" >> "$work/t"
        else
            time_ns traced "$@" >> "$work/t"; time_ns "$@" >> "$work/u"
        fi
    done
    local u t
    u=$(median < "$work/u"); t=$(median < "$work/t")
    awk -v n="$name" -v u="$u" -v t="$t" 'BEGIN { printf "%-44s %10.3f s %10.3f s %8.2f×\n", n, u / 1e9, t / 1e9, t / u }'
}
run "dd bs=1 count=1M (2 traced calls per byte)" dd if=/dev/zero of=/dev/null bs=1 count=1M
run "shell loop, no system calls" sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
run "dd bs=64k count=16k (1 GiB)" dd if=/dev/zero of=/dev/null bs=64k count=16k
echo "(medians of $ROUNDS interleaved rounds; the traced time includes ioprobe's start, pricing and report)"
