#!/usr/bin/env bash
# Does advice repeat? Twin `ioprobe run`s back to back, idle and under two
# `yes > /dev/null`, compared by recommendation id: a topic repeated when the twin's
# answer keeps the first's statement: a size answer when the twin's knee lies inside the
# first's plateau ("use 64 KiB or larger: 64 KiB–1 MiB within 5%"), a method answer
# when the twin names the same first option (the tie set's others may differ), and the
# knee's move between twins is counted too (the guard against a trivial plateau: by at
# most one of run's size steps, ×4, in 90% of twins). Prints, per condition and per confidence level of the first
# run of each pair: topics, the share that repeated, and every high-confidence topic
# that changed. The goal: high ≥ 95%, medium ≥ 80%, idle or loaded.
#   PAIRS=3 bench/repeatability.sh            (CONDITIONS="idle load" by default;
#                                             KEEP=dir keeps the runs' JSON;
#                                             ARGS="--quick" is given to each run;
#                                             IOPROBE=path runs another build, e.g.
#                                             an older commit's, for a before/after)
#   REPLAY=dir PAIRS=5 bench/repeatability.sh  (no new runs: the kept runs of dir, their
#                                             advice derived again by this build, each
#                                             imported alone and exported: a rule change
#                                             judged on the same measurements)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
CONDITIONS=${CONDITIONS:-idle load}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
loads=()
cleanup() {
    for p in "${loads[@]}"; do kill "$p" 2>/dev/null || true; done
    if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP" && cp "$work"/*.json "$work"/*.time "$KEEP"/ 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -z ${IOPROBE:-} ]]; then
    cargo build --release --quiet
    IOPROBE=target/release/ioprobe
fi
read -r -a run_args <<< "${ARGS:-}"

for cond in $CONDITIONS; do
    if [[ -n ${REPLAY:-} ]]; then
        for f in "$REPLAY/$cond"-*.json; do
            rm -f "$work/replay.db"*
            "$IOPROBE" import --store "$work/replay.db" "$f" >/dev/null 2>&1
            "$IOPROBE" export --store "$work/replay.db" last > "$work/$(basename "$f")"
        done
        rm -f "$work/replay.db"*
        continue
    fi
    if [[ $cond == load ]]; then
        yes > /dev/null & loads+=($!)
        yes > /dev/null & loads+=($!)
    fi
    for pair in $(seq "$PAIRS"); do
        for twin in a b; do
            t0=$(date +%s.%N)
            "$IOPROBE" run "${run_args[@]}" --no-save --json --dir "$work" 2>/dev/null > "$work/$cond-$pair-$twin.json"
            echo "$(date +%s.%N) - $t0" | bc > "$work/$cond-$pair-$twin.time"
        done
        echo "$cond: pair $pair/$PAIRS done" >&2
    done
    for p in "${loads[@]}"; do kill "$p" 2>/dev/null || true; done
    loads=()
done

python3 - "$work" "$PAIRS" $CONDITIONS <<'PY'
import json, sys
work, pairs, conds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"advice repeatability: twin `ioprobe run`s, {pairs} pairs per condition, by recommendation id")
print(f"{'condition':<10} {'level':<7} {'topics':>6} {'repeated':>9}  {'busy runs':>9}")
import os
flips, steps = [], []

def keeps(r, other):
    c, o = r["choice"], other["choice"]
    if c["kind"] == "size" and r.get("plateau"):
        return r["plateau"]["from"] <= o["bytes"] <= r["plateau"]["to"]
    if c["kind"] == "method":
        # The same option, or one the first called tied whose own tie set keeps the
        # first's pick ("use X, or Y: equal here" both ways).
        return c["name"] == o["name"] or (o["name"] in c.get("tied", []) and c["name"] in o.get("tied", []))
    return r["action"] == other["action"]

def knee_steps(r, other):
    # How many doublings apart the twins' knees are (run's sweeps step by 4 or less).
    a, b = r["choice"]["bytes"], other["choice"]["bytes"]
    lo, hi = min(a, b), max(a, b)
    n = 0
    while lo < hi:
        lo *= 2
        n += 1
    return n

for cond in conds:
    stats, busy = {}, 0
    for p in range(1, pairs + 1):
        a, b = (json.load(open(f"{work}/{cond}-{p}-{t}.json")) for t in "ab")
        busy += sum(1 for d in (a, b) if any(l.get("busy") for l in d["environment"].get("load", {}).values()))
        twin = {r["id"]: r for r in b["recommendations"]}
        for r in a["recommendations"]:
            lvl = r["confidence"]["level"]
            s = stats.setdefault(lvl, [0, 0])
            s[0] += 1
            other = twin.get(r["id"])
            same = other is not None and keeps(r, other)
            s[1] += same
            if other is not None and r["choice"]["kind"] == "size":
                steps.append(knee_steps(r, other))
            if not same:
                flips.append((lvl, f"{cond} pair {p}: {r['id']}: {r['action']} → {other['action'] if other else 'absent'}"))
    for lvl in ("high", "medium", "low"):
        if lvl in stats:
            n, k = stats[lvl]
            print(f"{cond:<10} {lvl:<7} {n:>6} {100 * k / n:>8.0f}%  {busy:>6}/{2 * pairs}")
    n = sum(v[0] for v in stats.values())
    k = sum(v[1] for v in stats.values())
    highs, times = [], []
    for p in range(1, pairs + 1):
        for t in "ab":
            d = json.load(open(f"{work}/{cond}-{p}-{t}.json"))
            recs = d["recommendations"]
            highs.append(f"{sum(r['confidence']['level'] == 'high' for r in recs)}/{len(recs)}")
            tf = f"{work}/{cond}-{p}-{t}.time"
            if os.path.exists(tf):
                times.append(float(open(tf).read()))
    print(f"{cond:<10} all     {n:>6} {100 * k / n:>8.0f}%  topics high per run: {' '.join(highs)}")
    if times:
        print(f"{cond:<10} run time {min(times):.1f}–{max(times):.1f} s (mean {sum(times) / len(times):.1f} s)")
if steps:
    within = sum(1 for n in steps if n <= 2)
    print(f"size knees: {within} of {len(steps)} moved by at most x4 (one step of run's sweeps) between twins")
for lvl, f in flips:
    print(f"{lvl}-confidence change: {f}")
if not any(l == "high" for l, _ in flips):
    print("no high-confidence pick changed between twins")
PY
