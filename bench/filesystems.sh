#!/usr/bin/env bash
# `ioprobe run --quick --no-save` in each directory given (one per filesystem a user may
# have: ext4, xfs, btrfs, overlay, tmpfs), one Markdown row each: the filesystem's type
# (as the run recorded it), the exit status, the wall time, the topics answered and how
# many at high confidence, the rows skipped (with their reasons), and whether reflink and
# O_DIRECT copies ran.
#
#   bench/filesystems.sh /tmp /mnt/xfs /mnt/btrfs /mnt/ovl /dev/shm
#
# IOPROBE names the binary (default: target/release/ioprobe, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${IOPROBE:-target/release/ioprobe}
[[ -x $bin ]] || cargo build --release --locked >&2
bin=$(realpath "$bin")
[[ $# -gt 0 ]] || { echo "usage: $0 DIR..." >&2; exit 2; }

echo "| where | type | exit | time | topics high | skipped rows | reflink | O_DIRECT |"
echo "|---|---|---:|---:|---:|---|---|---|"
for dir in "$@"; do
    out=$(mktemp) err=$(mktemp)
    start=$(date +%s.%N)
    rc=0
    (cd "$dir" && "$bin" run --quick --no-save --json) >"$out" 2>"$err" || rc=$?
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    fstype=$(stat -f -c %T "$dir")
    if [[ $rc -ne 0 ]]; then
        printf '| %s | %s | %d | %.1f s | – | %s | – | – |\n' "$dir" "$fstype" "$rc" "$secs" "$(tail -1 "$err")"
    else
        python3 - "$dir" "$fstype" "$rc" "$secs" "$out" <<'EOF'
import json, sys
d, fstype, rc, secs, path = sys.argv[1:]
run = json.load(open(path))
recs = run["recommendations"]
high = sum(r["confidence"]["level"] == "high" for r in recs)
skipped = {}
for m in run["measurements"]:
    if m["status"] == "skipped":
        why = m["reason"].split(":")[0] if m["probe"] != "read" else m["reason"].split(": ")[1]
        skipped[(m["probe"], why)] = skipped.get((m["probe"], why), 0) + 1
skip = "; ".join(f"{p} {n} ({w})" for (p, w), n in skipped.items()) or "none"
def method(name):
    rows = [m for m in run["measurements"] if m["probe"] == "copy" and m["params"].get("method") == name]
    if any(m["status"] == "ok" for m in rows):
        return "ran"
    return rows[0]["status"] if rows else "not in the selection"
fs = (run["environment"].get("filesystem") or {}).get("fs_type", fstype)
print(f"| {d} | {fs} | {rc} | {float(secs):.1f} s | {high} of {len(recs)} | {skip} | {method('reflink')} | {method('direct')} |")
EOF
    fi
    rm -f "$out" "$err"
done
