#!/usr/bin/env bash
# Pipe benchmark: ioprobe's pipe figures ÷ a bare C writer/reader (bench/c/pipe_ref.c,
# same protocol) at 64 KiB and 1 MiB chunks, write-read, default pipe, 1 GiB per sample,
# unpinned (`any`) and both on CPU 0 (`same`); beside `dd if=/dev/zero bs=… | dd
# of=/dev/null bs=…` (unpinned). Interleaved rounds (ioprobe first on odd rounds, C
# first on even ones); median of per-round ratios. "fitted" is ioprobe without --total:
# each sample fitted to about 25 ms, as its default runs do, against the same 1 GiB C run.
#   ROUNDS=3 bench/pipe.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
TOTAL=$((1 << 30))
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch; a trap alone would carry on
cargo build --release --quiet
gcc -O2 -Wall -o "$work/pipe_ref" bench/c/pipe_ref.c
IOPROBE=target/release/ioprobe

median_of_json() { python3 -c 'import json,sys; print(json.load(sys.stdin)["measurements"][0]["median"])'; }
dd_pair() { # bytes/s of dd | dd, best of 3
    local bs=$1 count=$((TOTAL / $1)) best=0
    for _ in 1 2 3; do
        local t0 t1 v
        t0=$(date +%s%N)
        dd if=/dev/zero bs="$bs" count="$count" status=none | dd of=/dev/null bs="$bs" status=none
        t1=$(date +%s%N)
        v=$(python3 -c "print($TOTAL * 1e9 / ($t1 - $t0))")
        best=$(python3 -c "print(max($best, $v))")
    done
    echo "$best"
}

: > "$work/rows"
for round in $(seq "$ROUNDS"); do
    for chunk in 65536 1048576; do
        d=$(dd_pair "$chunk")
        for place in any same; do
            run_i() { "$IOPROBE" pipe --sizes "$chunk" --method write-read --placement "$place" --pipe-size default \
                --total "$TOTAL" --no-save --dir "$work" --json 2>/dev/null | median_of_json; }
            run_f() { "$IOPROBE" pipe --sizes "$chunk" --method write-read --placement "$place" --pipe-size default \
                --no-save --dir "$work" --json 2>/dev/null | median_of_json; }
            run_c() { "$work/pipe_ref" "$chunk" "$TOTAL" 0 5 "$place"; }
            if (( round % 2 )); then i=$(run_i); f=$(run_f); c=$(run_c); else c=$(run_c); f=$(run_f); i=$(run_i); fi
            echo "$chunk $place $i $c $d $f" >> "$work/rows"
        done
    done
    echo "round $round/$ROUNDS done" >&2
done

python3 - "$work/rows" "$ROUNDS" <<'PY'
import sys, statistics
rows, order = {}, []
for line in open(sys.argv[1]):
    chunk, place, i, c, d, f = line.split()
    key = (int(chunk), place)
    if key not in rows:
        order.append(key)
    rows.setdefault(key, []).append((float(i), float(c), float(d), float(f)))
print(f"pipe: ioprobe ÷ bare C (write-read, default pipe, 1 GiB/sample), median of {sys.argv[2]} rounds")
print(f"{'chunk':>8} {'place':>5} {'ioprobe':>11} {'C':>11} {'ratio':>6}  {'range':>11} {'fitted':>11} {'fit÷C':>6} {'dd | dd':>11} {'dd÷C':>6}")
for key in order:
    v = rows[key]
    r = [x[0] / x[1] for x in v]
    rf = [x[3] / x[1] for x in v]
    med = lambda k: statistics.median(x[k] for x in v)
    print(f"{key[0] // 1024:>6}Ki {key[1]:>5} {med(0)/1e9:>6.2f} GB/s {med(1)/1e9:>6.2f} GB/s {statistics.median(r):6.3f}  "
          f"{min(r):.3f}-{max(r):.3f} {med(3)/1e9:>6.2f} GB/s {statistics.median(rf):6.3f} {med(2)/1e9:>6.2f} GB/s {med(2)/med(1):6.3f}")
print("goal: ratio and fit÷C >= 0.97 (ioprobe's measured throughput, at 1 GiB or fitted, is not below the bare program's at 1 GiB)")
PY
