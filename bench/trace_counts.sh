#!/usr/bin/env bash
# Each tracer's counts against the truth: the kernel's own syscall tracepoint
# counters (`perf stat -e 'syscalls:sys_enter_*'`, which stops nothing, so the
# program does exactly the work it does untraced), with strace -f -c beside them, on
# more than 20 real programs. For every traced call ioprobe counts, a row says
# "= kernel" when each tracer's count equals the kernel's, else the calls that differ
# (tracer/kernel). A program that does different work when its calls stop (ptrace,
# strace, and preload on threaded programs, whose calls stop too) shows as strace
# differing from the kernel as well: the last column says so.
#   bench/trace_counts.sh   (about 3 min here; needs root for perf's tracepoints,
#   and for the eBPF tracer)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-counts.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
for t in perf strace python3 gcc make tar gzip xz; do
    command -v $t >/dev/null || { echo "bench/trace_counts.sh: needs $t" >&2; exit 1; }
done
cargo build --release --quiet
IOPROBE=$PWD/target/release/ioprobe
store="$work/store.db"
"$IOPROBE" trace --store "$store" --output /dev/null -- true 2>/dev/null
tracers=()
for t in ebpf preload ptrace; do
    if "$IOPROBE" trace --tracer $t --store "$store" --output /dev/null -- true 2>/dev/null; then
        tracers+=($t)
    else
        echo "($t tracer: skipped, it cannot run here)"
    fi
done
# The traced calls, from the one table (src/sys/trace/calls.rs), and their
# tracepoints (fstat's is newfstat, and so on).
names=$(grep -oE '^ +[A-Z][A-Za-z0-9]* += "[a-z0-9_]+"' src/sys/trace/calls.rs | grep -oE '"[a-z0-9_]+"' | tr -d '"')
events=""
for n in $names; do
    for tp in "sys_enter_$n" "sys_enter_new$n"; do
        if [ -d "/sys/kernel/tracing/events/syscalls/$tp" ] || [ -d "/sys/kernel/debug/tracing/events/syscalls/$tp" ]; then
            events+="syscalls:$tp,"; echo "$n $tp" >> "$work/map"; break
        fi
    done
done
events=${events%,}

# Inputs.
mkdir -p "$work/src/sub" "$work/proj"
head -c 8M /dev/urandom > "$work/in8"
head -c 3M /dev/urandom | base64 > "$work/text"
for i in $(seq 1 60); do head -c $((i * 700)) "$work/text" > "$work/src/sub/f$i.txt"; done
for i in 1 2 3 4 5; do printf 'int f%d(int x) { return x * %d; }\n' "$i" "$i" > "$work/proj/f$i.c"; done
printf 'int main(void) { return 0; }\n' > "$work/proj/main.c"
printf 'OBJ = main.o f1.o f2.o f3.o f4.o f5.o\nprog: $(OBJ)\n\t$(CC) -o $@ $(OBJ)\nclean:\n\trm -f prog $(OBJ)\n' > "$work/proj/Makefile"
gcc -O1 -pthread -o "$work/threads" tests/fixtures/trace_threads.c
printf 'import sys\nn = 0\nwith open(sys.argv[1]) as f:\n    for line in f:\n        n += len(line)\nprint(n)\n' > "$work/lines.py"
python=$(python3 -c 'import sys; print(sys.executable)')
tar cf "$work/src.tar" -C "$work" src
gzip -1 -c "$work/text" > "$work/text.gz"
sqlite3 "$work/db.sqlite" 'create table t(a, b); insert into t values (1, 2);' 2>/dev/null || true

# Programs: name, then the command (run in $work/run, emptied before each run).
programs=(
    "cat|cat $work/text"
    "dd bs=4k|dd if=$work/in8 of=/dev/null bs=4k"
    "cp|cp $work/in8 out"
    "cp -r|cp -r $work/src out"
    "tar c|tar cf out.tar -C $work src"
    "tar x|tar xf $work/src.tar"
    "gzip -1|gzip -1 -c $work/text"
    "gunzip|gzip -dc $work/text.gz"
    "xz -T1|xz -1 -T1 -c $work/text"
    "bzip2|bzip2 -1 -c $work/text"
    "sort|sort $work/text"
    "grep -r|grep -r zzz $work/src"
    "find|find $work/src -name *.txt"
    "ls -lR|ls -lR $work/src"
    "du|du -s $work/src"
    "wc|wc $work/text"
    "md5sum|md5sum $work/in8"
    "sha256sum|sha256sum $work/in8"
    "sed|sed s/a/b/g $work/text"
    "awk|awk {n+=length} $work/text"
    "cmp|cmp $work/in8 $work/in8"
    "python|$python $work/lines.py $work/text"
    "make|make -s -C $work/proj"
    "threads (fixture)|$work/threads"
    "sh pipeline|sh -c cat\ $work/text\ |\ gzip\ -1\ >\ /dev/null"
)
command -v sqlite3 >/dev/null && programs+=("sqlite3|sqlite3 $work/db.sqlite select\ *\ from\ t")
command -v zstd >/dev/null && programs+=("zstd|zstd -1 -c $work/text")
command -v rsync >/dev/null && programs+=("rsync -a|rsync -a $work/src/ out/")
command -v fio >/dev/null && programs+=("fio psync --thread|fio --name=r --thread --ioengine=psync --rw=randread --bs=4k --size=4m --filename=$work/in8 --output=/dev/null")

fresh() { rm -rf "$work/run"; mkdir "$work/run"; (cd "$work/proj" && make -s clean >/dev/null 2>&1 || true); }
runcmd() { (cd "$work/run" && eval "$1") >/dev/null 2>&1 || true; }

header="| program | kernel's calls"
for t in "${tracers[@]}"; do header+=" | $t"; done
echo "$header | strace -f -c |"
echo "|---|---:$(printf '|---%.0s' "${tracers[@]}")|---|"
# perf runs its command with its own directory first in PATH (`perf --exec-path`):
# make's gcc and a shell then search one more directory (14 more access calls in
# make). Every way runs the command through `env` with this script's PATH, so that all
# of them do the same work (env's own calls counted by each).
for p in "${programs[@]}"; do
    name=${p%%|*}; cmd="env PATH='$PATH' ${p#*|}"
    # The kernel's counts three times: a program whose calls depend on timing (threads,
    # pipes, timestamps) shows its own spread, and a tracer within it is not wrong.
    for k in 1 2 3; do
        fresh; (cd "$work/run" && eval "perf stat -x, -e '$events' -o $work/perf$k.txt -- $cmd") >/dev/null 2>&1 || true
    done
    for t in "${tracers[@]}"; do
        fresh; runcmd "'$IOPROBE' trace --tracer $t --store '$store' --json --output '$work/$t.json' -- $cmd"
    done
    fresh; runcmd "strace -f -c -o '$work/strace.txt' $cmd"
    python3 - "$work/map" "$work/perf" "$work/strace.txt" "$name" "${tracers[@]/#/$work/}" <<'PY'
import json, sys
names = dict(l.split() for l in open(sys.argv[1]))
by_tp = {tp: n for n, tp in names.items()}
runs = []
for k in (1, 2, 3):
    counts = {}
    for line in open(f"{sys.argv[2]}{k}.txt"):
        f = line.strip().split(",")
        if len(f) > 2 and f[2].startswith("syscalls:") and f[0].isdigit():
            counts[by_tp[f[2].split(":")[1]]] = int(f[0])
    runs.append(counts)
kernel = runs[0]
spread = {n: (min(r.get(n, 0) for r in runs), max(r.get(n, 0) for r in runs))
          for n in set().union(*runs)}
strace = {}
for line in open(sys.argv[3]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] in names:
        strace[f[-1]] = int(f[3])
def diff(counts):
    keys = sorted(set(counts) | {k for k, v in kernel.items() if v})
    d = []
    for k in keys:
        lo, hi = spread.get(k, (0, 0))
        n = counts.get(k, 0)
        if lo <= n <= hi and lo != hi:
            continue  # within the kernel's own spread
        if n != kernel.get(k, 0) and not lo <= n <= hi:
            d.append(f"{k} {n}/{lo}" if lo == hi else f"{k} {n}/{lo}–{hi}")
    return "= kernel" if not d else ", ".join(d)
varies = [f"{k} {lo}–{hi}" for k, (lo, hi) in sorted(spread.items()) if lo != hi]
cells = [sys.argv[4] + (f" (the kernel's counts vary: {', '.join(varies)})" if varies else ""),
         f"{sum(kernel.values()):,}"]
for path in sys.argv[5:]:
    try:
        counts = json.load(open(path + ".json"))["counts"]
    except Exception as e:
        cells.append(f"(no report: {e})")
        continue
    cells.append(diff(counts))
cells.append(diff(strace))
print("| " + " | ".join(cells) + " |")
PY
done
echo
echo "(tracer/kernel where a tracer's count is outside the kernel's own spread over three runs"
echo "of perf stat's syscall tracepoints; a program whose calls depend on timing says so)"
