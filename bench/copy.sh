#!/usr/bin/env bash
# Copy benchmark: ioprobe's read-write/1MiB and copy-file-range figures ÷ a bare C program
# doing the same (bench/c/copy_ref.c), as a ratio of minimum times (= best throughputs),
# 64 MiB warm source, no fsync; beside cp, cat and dd bs=1M run by this script.
# Interleaved rounds; median of per-round ratios.
#   ROUNDS=3 bench/copy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SIZE=$((64 << 20))
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch; a trap alone would carry on
cargo build --release --quiet
gcc -O2 -Wall -o "$work/copy_ref" bench/c/copy_ref.c
IOPROBE=target/release/ioprobe
mkdir "$work/c"
head -c "$SIZE" /dev/urandom > "$work/c/src.dat"

best_of_json() { # best (max) bytes/s per variant from ioprobe's JSON
    python3 -c 'import json,sys
for m in json.load(sys.stdin)["measurements"]:
    print(m["params"]["variant"], m["max"])'
}
shell_best() { # best of 10 runs of a shell command copying src -> dst, in bytes/s
    local best=0
    for _ in $(seq 10); do
        rm -f "$work/c/dst.dat"
        local t0 t1
        t0=$(date +%s%N); eval "$1"; t1=$(date +%s%N)
        best=$(python3 -c "print(max($best, $SIZE * 1e9 / ($t1 - $t0)))")
    done
    rm -f "$work/c/dst.dat"
    echo "$best"
}

: > "$work/rows"
for round in $(seq "$ROUNDS"); do
    run_i() { "$IOPROBE" copy --file-size "$SIZE" --method read-write,copy-file-range --buffers 1m \
        --cache warm --durability none --system-tools --no-save --dir "$work" --json 2>/dev/null | best_of_json > "$work/i"; }
    run_c() { rw=$("$work/copy_ref" rw "$work/c/src.dat" "$work/c/dst.dat" 10)
              cfr=$("$work/copy_ref" cfr "$work/c/src.dat" "$work/c/dst.dat" 10); }
    if (( round % 2 )); then run_i; run_c; else run_c; run_i; fi
    cp_s=$(shell_best 'cp "$work/c/src.dat" "$work/c/dst.dat"')
    cat_s=$(shell_best 'cat "$work/c/src.dat" > "$work/c/dst.dat"')
    dd_s=$(shell_best 'dd if="$work/c/src.dat" of="$work/c/dst.dat" bs=1M status=none')
    while read -r variant v; do
        case "$variant" in
            read-write/1MiB) echo "read-write/1MiB $v $rw" ;;
            copy-file-range) echo "copy-file-range $v $cfr" ;;
            cp) echo "cp $v $cp_s" ;;
            cat) echo "cat $v $cat_s" ;;
            dd/1MiB) echo "dd/1MiB $v $dd_s" ;;
        esac
    done < "$work/i" >> "$work/rows"
    echo "round $round/$ROUNDS done" >&2
done

python3 - "$work/rows" "$ROUNDS" <<'PY'
import sys, statistics
rows, order = {}, []
for line in open(sys.argv[1]):
    name, i, c = line.split()
    if name not in rows:
        order.append(name)
    rows.setdefault(name, []).append((float(i), float(c)))
print(f"copy: 64 MiB, warm source, no fsync; best of each side, median of {sys.argv[2]} rounds")
print(f"{'method':16} {'ioprobe best':>13} {'reference':>12} {'ratio':>6}  range        reference is")
for name in order:
    v = rows[name]
    r = [i / c for i, c in v]
    ref = "bare C" if name in ("read-write/1MiB", "copy-file-range") else f"{name.split('/')[0]} from the shell"
    print(f"{name:16} {statistics.median(x[0] for x in v)/1e9:>8.2f} GB/s {statistics.median(x[1] for x in v)/1e9:>7.2f} GB/s "
          f"{statistics.median(r):6.3f}  {min(r):.3f}-{max(r):.3f}  {ref}")
print("goal for the bare-C rows: ratio of best figures >= 0.97")
PY
