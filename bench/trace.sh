#!/usr/bin/env bash
# What tracing costs the traced program, per tracer: wall time untraced, under
# `ioprobe trace --tracer ebpf` (where this user may load BPF programs), under
# `--tracer preload` (ptrace plus the library that records the program's own data
# calls without stops: no privilege needed), under `ioprobe trace --tracer ptrace`,
# and under `strace -f -c`, interleaved (the order
# turns every round), medians over ROUNDS (at least 5). Then each tracer's `counts`
# against `strace -f -c`'s, call by call, for every workload.
# Workloads (inputs made in a scratch directory, removed on exit):
#   - dd bs=4k over a 64 MiB file in the page cache (32,768 reads and as many writes);
#   - dd bs=512 over a 16 MiB file (the same number of calls, each cheaper);
#   - make of a small C project (8 files, -j1: about 25 processes);
#   - a Python script reading a 20 MB text file line by line (the interpreter, not
#     a pyenv shim: a shell's reads of a pipe vary with timing);
#   - xz -T2 of an 8 MiB text file (two threads: its calls' order, and so a few
#     counts, vary from run to run with or without a tracer);
#   - true: the fixed cost of loading, starting, pricing and reporting.
# Then the cost per traced call, free of that fixed cost (see per_call below).
# Figures are measured once first, and ptrace's per-call user-time calibration is
# pooled first (as on a machine where trace has run before), so neither is timed.
#   ROUNDS=5 bench/trace.sh   (about 15 min here)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
TRUE_ROUNDS=${TRUE_ROUNDS:-41}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch
for t in strace make gcc python3 xz; do
    command -v $t >/dev/null || { echo "bench/trace.sh: needs $t" >&2; exit 1; }
done
cargo build --release --quiet
IOPROBE=$PWD/target/release/ioprobe
store="$work/store.db"
"$IOPROBE" trace --store "$store" --dir "$work" --output /dev/null -- true 2>/dev/null
for _ in 1 2 3 4; do
    "$IOPROBE" trace --tracer ptrace --store "$store" --output /dev/null -- \
        dd if=/dev/zero of=/dev/null bs=1 count=25000 2>/dev/null
done
tracers=()
if "$IOPROBE" trace --tracer ebpf --store "$store" --output /dev/null -- true 2>/dev/null; then
    tracers+=(ebpf)
else
    echo "(eBPF tracer: skipped, it needs CAP_BPF and CAP_PERFMON)"
fi
if "$IOPROBE" trace --tracer preload --store "$store" --output /dev/null -- true 2>/dev/null; then
    tracers+=(preload)
else
    echo "(preload tracer: skipped, this build has no preload library)"
fi
tracers+=(ptrace)

# Inputs.
head -c 64M /dev/urandom > "$work/in64"
head -c 16M /dev/urandom > "$work/in16"
head -c 6M /dev/urandom | base64 > "$work/in8"
python3 -c "
import random
with open('$work/lines.txt', 'w') as f:
    for i in range(400000):
        f.write('line %d %s\n' % (i, 'x' * random.randint(0, 80)))"
mkdir "$work/proj"
for i in 1 2 3 4 5 6 7; do
    printf 'int f%d(int x) { return x * %d; }\n' "$i" "$i" > "$work/proj/f$i.c"
done
printf 'int main(void) { return 0; }\n' > "$work/proj/main.c"
printf 'OBJ = main.o f1.o f2.o f3.o f4.o f5.o f6.o f7.o\nprog: $(OBJ)\n\t$(CC) -o $@ $(OBJ)\nclean:\n\trm -f prog $(OBJ)\n' > "$work/proj/Makefile"
printf 'import sys\nn = 0\nwith open(sys.argv[1]) as f:\n    for line in f:\n        n += len(line)\nprint(n)\n' > "$work/lines.py"
cat "$work/in64" "$work/in16" "$work/in8" "$work/lines.txt" > /dev/null
# The interpreter itself, not a version manager's shell shim in front of it.
python=$(python3 -c 'import sys; print(sys.executable)')

# Bash's own clock (microseconds, no fork of date(1) inside the timed span): `true`
# takes under a millisecond, which a fork of date would double.
time_ns() {
    local t0=$EPOCHREALTIME t1
    "$@" >/dev/null 2>&1
    t1=$EPOCHREALTIME
    echo $(((10#${t1/[.,]/} - 10#${t0/[.,]/}) * 1000))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
fmt() { awk -v x="$1" 'BEGIN { if (x >= 1e9) printf "%.3g s", x / 1e9; else printf "%.3g ms", x / 1e6 }'; }

# The command line of each way of running CMD: untraced, each tracer, `--tracer auto`
# (which weighs ptrace by the command's traces kept in the store, these rounds' too),
# strace. Reports go to a file on tmpfs (auto's says which tracer it took).
ways=(untraced "${tracers[@]}" auto strace)
reports=$(mktemp -d /dev/shm/ioprobe-bench.XXXXXX 2>/dev/null || mktemp -d "$work/r.XXXXXX")
trap 'rm -rf "$work" "$reports"' EXIT
way() {
    local w=$1; shift
    case $w in
        untraced) echo "$@" ;;
        strace) echo strace -f -c -o /dev/null "$@" ;;
        *) echo "$IOPROBE" trace --tracer "$w" --store "$store" --output "$reports/$w" -- "$@" ;;
    esac
}
# Which tracer the last `--tracer auto` took.
auto_took() { sed -n 's/.*traced with \([a-zA-Z]*\).*/\1/p' "$reports/auto" | head -1; }

# counts_check TRACER CMD...: "yes" when the tracer's counts equal strace -f -c's for
# every call it counts, else the calls that differ.
counts_check() {
    local t=$1; shift
    (cd "$work/proj" && make -s clean >/dev/null 2>&1 || true)
    "$IOPROBE" trace --tracer "$t" --store "$store" --json --output "$work/c.json" -- "$@" >/dev/null 2>&1 || true
    (cd "$work/proj" && make -s clean >/dev/null 2>&1 || true)
    strace -f -c -o "$work/s.txt" "$@" >/dev/null 2>&1 || true
    python3 - "$work/c.json" "$work/s.txt" <<'PY'
import json, sys
mine = json.load(open(sys.argv[1]))["counts"]
theirs = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit():
        theirs[f[-1]] = int(f[3])
diff = [f"{k} {v}/{theirs.get(k, 0)}" for k, v in sorted(mine.items()) if v != theirs.get(k, 0)]
print("yes" if not diff else "no: " + ", ".join(diff))
PY
}

# run NAME CMD...: one table row, then its count checks.
declare -a checks
run() {
    local name=$1; shift
    local -A files
    for w in "${ways[@]}"; do files[$w]=$work/t.$w; : > "${files[$w]}"; done
    # A command as short as `true` moves by a millisecond from run to run: it gets
    # TRUE_ROUNDS rounds (a second in all), the others ROUNDS.
    local rounds=$ROUNDS
    [[ $name == true ]] && rounds=$TRUE_ROUNDS
    for round in $(seq "$rounds"); do
        local n=${#ways[@]} k
        for k in $(seq 0 $((n - 1))); do
            local w=${ways[$(((k + round) % n))]}
            (cd "$work/proj" && make -s clean >/dev/null 2>&1 || true)
            # shellcheck disable=SC2046
            time_ns $(way "$w" "$@") >> "${files[$w]}"
            [[ $w == auto ]] && auto_took >> "$work/took"
        done
    done
    local u; u=$(median < "${files[untraced]}")
    local row="| $name | $(fmt "$u")"
    for w in "${tracers[@]}" auto strace; do
        local m; m=$(median < "${files[$w]}")
        row+=" | $(fmt "$m") (×$(awk -v a="$m" -v b="$u" 'BEGIN { printf "%.3g", a / b }'))"
        if [[ $w == auto ]]; then
            row+=": $(sort "$work/took" | uniq -c | sort -rn | awk '{printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1}')"
            rm -f "$work/took"
        fi
    done
    echo "$row |"
    for t in "${tracers[@]}"; do
        checks+=("| $name | $t | $(counts_check "$t" "$@") |")
    done
}

header="| workload | untraced"
for t in "${tracers[@]}"; do header+=" | ioprobe trace ($t)"; done
echo "$header | auto: its time, the tracers it took | strace -f -c |"
echo "|---|---:$(printf '|---:%.0s' "${tracers[@]}")|---:|---:|"
run "dd bs=4k, 64 MiB" dd if="$work/in64" of=/dev/null bs=4k
run "dd bs=512, 16 MiB" dd if="$work/in16" of=/dev/null bs=512
run "make, 8 C files" make -s -C "$work/proj"
run "python, 400k lines" "$python" "$work/lines.py" "$work/lines.txt"
run "xz -T2, 8 MiB" xz -T2 -1 -c "$work/in8"
# /usr/bin/true, not the shell's builtin (which the untraced way would run).
run "true" "$(type -P true)"
echo
echo "(medians of $ROUNDS interleaved rounds, $TRUE_ROUNDS for true; ioprobe's time includes its start, the tracer's"
echo "loading, pricing and the report)"

# Per traced call: a C loop of N calls and one of 2N, the program pinned to CPU 0 (the
# tracer runs where the scheduler puts it, as it would), each way timed in the same
# interleaved rounds; (traced(2N) - traced(N) - untraced(2N) + untraced(N)) / N is
# what each call costs more under the tracer, free of the fixed cost of starting,
# loading and reporting. The tracers that do not stop a call get N_FAST calls: their
# fixed cost moves by milliseconds from run to run (eBPF's registration waits for an
# RCU grace period when the previous eBPF trace ended less than one before), which
# over 100,000 calls would be tens of ns a call.
gcc -O2 -o "$work/loop" bench/c/trace_loop.c
head -c 4096 /dev/urandom > "$work/f4k"
N=${N:-100000}
N_FAST=${N_FAST:-2000000}
calls_for() { case $1 in ptrace | strace) echo "$N" ;; *) echo "$N_FAST" ;; esac; }
per_call() {
    local mode=$1
    local -A files
    local ways=(untraced "${tracers[@]}" strace)
    for w in "${ways[@]}" untraced_fast; do for k in 1 2; do files[$w$k]=$work/p.$w$k; : > "${files[$w$k]}"; done; done
    for round in $(seq "$ROUNDS"); do
        local n=${#ways[@]} k
        for k in $(seq 0 $((n - 1))); do
            local w=${ways[$(((k + round) % n))]} c
            c=$(calls_for "$w")
            for m in 1 2; do
                # shellcheck disable=SC2046
                time_ns $(way "$w" taskset -c 0 "$work/loop" "$mode" $((c * m)) "$work/f4k") >> "${files[$w$m]}"
                if [[ $w == untraced ]]; then
                    # shellcheck disable=SC2046
                    time_ns $(way untraced taskset -c 0 "$work/loop" "$mode" $((N_FAST * m)) "$work/f4k") >> "${files[untraced_fast$m]}"
                fi
            done
        done
    done
    local u1 u2 f1 f2; u1=$(median < "${files[untraced1]}"); u2=$(median < "${files[untraced2]}")
    f1=$(median < "${files[untraced_fast1]}"); f2=$(median < "${files[untraced_fast2]}")
    # Three significant digits, in ns below 1 µs.
    local unit='function f(x) { return x >= 1000 ? sprintf("%.3g µs", x / 1000) : sprintf("%.3g ns", x) }'
    local row="| $2 | $(awk -v a="$f1" -v b="$f2" -v n="$N_FAST" "$unit"' BEGIN { print f((b - a) / n) }')"
    for w in "${tracers[@]}" strace; do
        local t1 t2 c a b; t1=$(median < "${files[${w}1]}"); t2=$(median < "${files[${w}2]}")
        c=$(calls_for "$w")
        if [[ $c == "$N" ]]; then a=$u1; b=$u2; else a=$f1; b=$f2; fi
        row+=" | $(awk -v a="$t1" -v b="$t2" -v c="$a" -v d="$b" -v n="$c" "$unit"' BEGIN { print f(((b - a) - (d - c)) / n) }')"
    done
    echo "$row |"
}
echo
header="| per traced call (C loop, pinned) | untraced call"
for t in "${tracers[@]}"; do header+=" | + $t"; done
echo "$header | + strace -f -c |"
echo "|---|---:$(printf '|---:%.0s' "${tracers[@]}")|---:|"
per_call zero "read(fd, buf, 0) on /dev/zero"
per_call pread "pread 4 KiB, page cache"
echo "(loops of $N and $((2 * N)) calls under ptrace and strace, $N_FAST and $((2 * N_FAST)) otherwise)"
echo
echo "| workload | tracer | counts equal strace -f -c's |"
echo "|---|---|---|"
printf '%s\n' "${checks[@]}"
