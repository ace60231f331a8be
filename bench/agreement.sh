#!/usr/bin/env bash
# The speed agreement, measured against the reference's own repeatability: in one
# sitting, the reference (1 GiB per pipe sample, --thorough) twice and the defaults
# once, interleaved (reference, defaults, reference), per probe. Prints the share of
# rows whose medians agree within ±5%: reference vs reference (what the machine allows)
# and defaults vs each reference (their mean). Goal: defaults-vs-reference at least
# reference-vs-reference minus 3 points.
# Rows are counted where both runs' CIs are under ±5% (issue 13's rule), and in all.
#   PROBES="pipe copy" bench/agreement.sh       (a pipe reference run takes about 25 min,
#                                              a copy reference about 10)
set -euo pipefail
cd "$(dirname "$0")/.."
PROBES=${PROBES:-pipe copy}
# Extra flags for every run of every probe, e.g. EXTRA="--placement same" (a third of
# pipe's rows: a reference run in about 5 min instead of 25).
EXTRA=${EXTRA:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/ioprobe-bench.XXXXXX")
# KEEP=dir keeps the runs' JSON for a closer look.
trap 'if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP" && cp "$work"/*.json "$KEEP"/ 2>/dev/null || true; fi; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cargo build --release --quiet
IOPROBE=target/release/ioprobe

# The reference: the default sweep's rows, sampled long. --thorough alone would measure
# powers of 2 for pipe (twice the rows); --sizes keeps the default's powers of 4. For
# copy, --thorough measures every variant at both file sizes (over 200 rows, 20 samples
# each at least: well over an hour here); the reference is the defaults' rows at their
# sizes (64 MiB and 1 GiB), each given --thorough's 5 s instead of its share of the
# defaults' 150 s, under a time limit (REF_LIMIT, 900s) so that a reference run ends
# within 20 minutes.
REF_LIMIT=${REF_LIMIT:-900s}
reference_args() {
    case $1 in
        pipe) echo "--total 1g --thorough --sizes 1k,4k,16k,64k,256k,1m,4m,16m,64m,256m" ;;
        copy) echo "--budget 5s --time-limit $REF_LIMIT" ;;
        *) echo "--thorough" ;;
    esac
}

# A run that fails ends the bench with ioprobe's own words.
failed() {
    echo "bench/agreement.sh: $probe $which failed:" >&2
    tail -3 "$work/err" >&2
    exit 1
}

for probe in $PROBES; do
    ref=$(reference_args "$probe")
    for which in ref1 default ref2; do
        t0=$(date +%s)
        if [[ $which == default ]]; then
            # shellcheck disable=SC2086
            "$IOPROBE" "$probe" $EXTRA --no-save --json --dir "$work" 2>"$work/err" > "$work/$probe-$which.json" || failed
        else
            # shellcheck disable=SC2086
            "$IOPROBE" "$probe" $ref $EXTRA --no-save --json --dir "$work" 2>"$work/err" > "$work/$probe-$which.json" || failed
        fi
        echo "$probe $which: $(( $(date +%s) - t0 )) s" | tee -a "$work/times" >&2
    done
done

python3 - "$work" $PROBES <<'PY'
import json, sys
work, probes = sys.argv[1], sys.argv[2:]
# Params that say how a row was sampled or observed, not what it measures.
VOLATILE = {"total", "writer_cpus", "reader_cpus", "pipe_size", "eviction", "cache_observed", "durability_state"}
def rows(path):
    out = {}
    for m in json.load(open(path))["measurements"]:
        if m.get("status", "ok") != "ok":
            continue
        key = (m["case"], json.dumps({k: v for k, v in m["params"].items() if k not in VOLATILE}, sort_keys=True))
        half = (m["ci95"][1] - m["ci95"][0]) / 2 / m["median"] if m["median"] else 1
        out[key] = (m["median"], half)
    return out
def agree(a, b, tight=False):
    keys = [k for k in a.keys() & b.keys() if not tight or (a[k][1] < 0.05 and b[k][1] < 0.05)]
    if not keys:
        return 0, 0
    return sum(1 for k in keys if abs(a[k][0] / b[k][0] - 1) <= 0.05), len(keys)
times = dict((l.split(":")[0], l.split(":")[1].strip()) for l in open(f"{work}/times"))
print("agreement: share of rows within ±5% (one sitting: reference, defaults, reference)")
print(f"{'probe':<6} {'rows':<12} {'n':>4} {'ref vs ref':>11} {'defaults vs ref':>16} {'gap':>6}   times (ref1, default, ref2)")
for p in probes:
    r1, d, r2 = (rows(f"{work}/{p}-{w}.json") for w in ("ref1", "default", "ref2"))
    t = ", ".join(times.get(f"{p} {w}", "?") for w in ("ref1", "default", "ref2"))
    for tight, label in ((False, "all"), (True, "both CI<5%")):
        k, n = agree(r1, r2, tight)
        k1, n1 = agree(d, r1, tight)
        k2, n2 = agree(d, r2, tight)
        rr = 100 * k / n if n else float("nan")
        dr = 100 * (k1 + k2) / (n1 + n2) if n1 + n2 else float("nan")
        print(f"{p:<6} {label:<12} {n:>4} {rr:>10.1f}% {dr:>15.1f}% {dr - rr:>+5.1f}   {t}")
PY
