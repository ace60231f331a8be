#!/usr/bin/env bash
# Is a copy row's figure the method's, or the schedule's? Every row of
# `ioprobe copy --quick`, measured inside the full set, then each alone (the same case
# selected by its method, buffer, cache state and durability), then inside the full set
# again, all pinned to one CPU. Prints per row the medians, the first full set's 95% CI,
# and whether the row alone, and the second full set, fall inside it: the second full
# set is what this machine's drift between two runs of the same schedule allows.
# Goal: every row alone inside its CI; at least, alone as often as the full set again.
#   ROUNDS=1 bench/copy_alone.sh     (about 4 min a round here)
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
    full "$round-again"
    echo "round $round/$ROUNDS done" >&2
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, sys, statistics
work, rounds = sys.argv[1], int(sys.argv[2])
inside = again_inside = total = 0
ratios, again_ratios = [], []
print("| row | full set GB/s | 95% CI | alone GB/s | inside | full set again GB/s | inside |")
print("|---|---:|---|---:|---|---:|---|")
for r in range(1, rounds + 1):
    load = lambda f: {m["case"]: m for m in json.load(open(f"{work}/{f}.json"))["measurements"]}
    full, again = load(f"full-{r}"), load(f"full-{r}-again")
    for line in open(f"{work}/alone-{r}"):
        case, v = line.split()
        m, a = full[case], again[case]["median"]
        lo, hi = m["ci95"]
        ok, ok2 = lo <= float(v) <= hi, lo <= a <= hi
        inside += ok
        again_inside += ok2
        total += 1
        ratios.append(float(v) / m["median"])
        again_ratios.append(a / m["median"])
        yn = lambda b: "yes" if b else "no"
        print(f"| {case} | {m['median']/1e9:.3f} | {lo/1e9:.3f}–{hi/1e9:.3f} | {float(v)/1e9:.3f} | {yn(ok)} | {a/1e9:.3f} | {yn(ok2)} |")
def spread(x):
    return f"median {statistics.median(x):.3f}, middle half {statistics.quantiles(x, n=4)[0]:.3f}–{statistics.quantiles(x, n=4)[2]:.3f}"
print(f"\n{inside} of {total} rows alone inside their full-set CI; {again_inside} of {total} for the full set again ({rounds} round(s), CPU pinned)")
print(f"alone ÷ full set: {spread(ratios)}; full set again ÷ full set: {spread(again_ratios)}")
PY
