#!/usr/bin/env bash
# Is a copy row's figure the method's, or the schedule's? Every row of
# `ioprobe copy --quick`, measured inside the full set, then each alone (the same case
# selected by its method, buffer, cache state and durability), both pinned to one CPU.
# Prints per row both medians, the full set's 95% CI, and whether the row alone falls
# inside it. Goal: every row.
#   ROUNDS=1 bench/copy_alone.sh     (about 2 min a round here)
#   IOPROBE=path/to/ioprobe bench/copy_alone.sh   (another build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1}
CPU=${COPY_CPU:-0}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
if [[ -z ${IOPROBE:-} ]]; then
    cargo build --release --quiet
    IOPROBE=target/release/ioprobe
fi
run() { taskset -c "$CPU" "$IOPROBE" copy --quick --cpu "$CPU" --no-save --dir "$work" --json "$@" 2>/dev/null; }

full() { run > "$work/full-$1.json"; }
alone() {
    # One invocation per row of the full set, selecting it.
    python3 - "$work/full-$1.json" <<'PY' > "$work/cases-$1"
import json, sys
for m in json.load(open(sys.argv[1]))["measurements"]:
    if m["status"] != "ok":
        continue
    p = m["params"]
    args = ["--method", p["method"], "--cache", p["cache"], "--durability", p["durability"],
            "--file-size", str(p["file_size"])]
    if p.get("buffer_size"):
        args += ["--sizes", str(p["buffer_size"])]
    print(m["case"], " ".join(args))
PY
    : > "$work/alone-$1"
    while read -r case args; do
        # shellcheck disable=SC2086
        run $args | python3 -c '
import json, sys
case = sys.argv[1]
for m in json.load(sys.stdin)["measurements"]:
    if m["case"] == case:
        print(case, m["median"])' "$case" >> "$work/alone-$1"
    done < "$work/cases-$1"
}

for round in $(seq "$ROUNDS"); do
    full "$round"
    alone "$round"
    echo "round $round/$ROUNDS done" >&2
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, sys, os
work, rounds = sys.argv[1], int(sys.argv[2])
inside = total = 0
print("| row | full set GB/s | 95% CI | alone GB/s | alone inside the CI |")
print("|---|---:|---|---:|---|")
for r in range(1, rounds + 1):
    full = {m["case"]: m for m in json.load(open(f"{work}/full-{r}.json"))["measurements"]}
    for line in open(f"{work}/alone-{r}"):
        case, v = line.split()
        m = full[case]
        lo, hi = m["ci95"]
        ok = lo <= float(v) <= hi
        inside += ok
        total += 1
        print(f"| {case} | {m['median']/1e9:.3f} | {lo/1e9:.3f}–{hi/1e9:.3f} | {float(v)/1e9:.3f} | {'yes' if ok else 'no'} |")
print(f"\n{inside} of {total} rows alone inside their full-set CI ({rounds} round(s), CPU pinned)")
PY
