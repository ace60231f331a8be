#!/usr/bin/env bash
# ioprobe's TCP write-read figure beside iperf3's and a bare C loop's (bench/c/tcp_ref.c:
# ioprobe's protocol, blocking write and read on one long connection, its first 0.5 s
# left out) on loopback, interleaved (the order turns every round): 128 KiB and 1 MiB
# chunks, both ends on one CPU (same) and on two (split). iperf3 is a long stream too,
# but its reader is non-blocking and waits in pselect(2). ioprobe keeps one warmed
# connection and its two processes for a row's samples. Prints per row the medians and
# the medians of the per-round ratios. Goal: within 10% (0.90-1.10) of iperf3.
#   ROUNDS=5 bench/socket_iperf.sh      (about 4 min here)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-4}
command -v iperf3 >/dev/null || { echo "bench/socket_iperf.sh: needs iperf3" >&2; exit 1; }
(( $(nproc) >= 2 )) || { echo "bench/socket_iperf.sh: needs two CPUs (split placement)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
server=
cleanup() { [[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
cargo build --release --quiet
IOPROBE=target/release/ioprobe
cc -O2 -o "$work/tcp_ref" bench/c/tcp_ref.c
port=$((20000 + RANDOM % 20000))

# iperf3 of `chunk` bytes per write with the server on CPU $2 and the client on CPU $3:
# the receiver's bytes/s.
iperf() {
    local chunk=$1 scpu=$2 ccpu=$3
    taskset -c "$scpu" iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
    server=$!
    sleep 0.3
    taskset -c "$ccpu" iperf3 -c 127.0.0.1 -p "$port" -l "$chunk" -t "$SECONDS_PER_RUN" -J 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8)'
    wait "$server" 2>/dev/null || true
    server=
}

bare() {
    local chunk=$1 scpu=$2 ccpu=$3
    "$work/tcp_ref" "$chunk" "$SECONDS_PER_RUN" "$ccpu" "$scpu"
}

ioprobe() {
    local chunk=$1 place=$2
    "$IOPROBE" socket --family tcp --ip v4 --method write-read --sizes "$chunk" --placement "$place" \
        --sndbuf default --rcvbuf default --nodelay off --no-save --dir "$work" --json 2>/dev/null |
        python3 -c 'import json,sys; m=json.load(sys.stdin)["measurements"]; print(m[0]["median"])'
}

: > "$work/rows"
for round in $(seq "$ROUNDS"); do
    for chunk in 131072 1048576; do
        for place in same split; do
            if [[ $place == same ]]; then s=0; c=0; else s=1; c=0; fi
            if (( round % 2 )); then i=$(ioprobe "$chunk" "$place"); p=$(iperf "$chunk" "$s" "$c"); b=$(bare "$chunk" "$s" "$c")
            else b=$(bare "$chunk" "$s" "$c"); p=$(iperf "$chunk" "$s" "$c"); i=$(ioprobe "$chunk" "$place"); fi
            echo "$chunk $place $i $p $b" >> "$work/rows"
        done
    done
    echo "round $round/$ROUNDS done" >&2
done

python3 - "$work/rows" "$ROUNDS" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    chunk, place, i, p, b = line.split()
    rows.setdefault((int(chunk), place), []).append((float(i), float(p), float(b)))
print(f"TCP write-read on loopback: ioprobe beside iperf3 and a bare C loop, medians of {sys.argv[2]} interleaved rounds")
print("| chunk | placement | ioprobe GB/s | iperf3 GB/s | bare loop GB/s | ioprobe ÷ iperf3 (range) | ioprobe ÷ bare loop (range) |")
print("|---|---|---:|---:|---:|---|---|")
def med(pairs, k):
    return statistics.median(x[k] for x in pairs) / 1e9
for (chunk, place), runs in rows.items():
    rp = [i / p for i, p, _ in runs]
    rb = [i / b for i, _, b in runs]
    r = statistics.median(rp)
    flag = "" if 0.9 <= r <= 1.1 else " (outside 0.90-1.10)"
    label = f"{chunk >> 10} KiB" if chunk < 1 << 20 else f"{chunk >> 20} MiB"
    print(f"| {label} | {place} | {med(runs, 0):.2f} | {med(runs, 1):.2f} | {med(runs, 2):.2f} | "
          f"{r:.2f}{flag} ({min(rp):.2f}-{max(rp):.2f}) | {statistics.median(rb):.2f} ({min(rb):.2f}-{max(rb):.2f}) |")
PY
