#!/usr/bin/env bash
# ioprobe cp against GNU cp and the Rust copiers (xcp, fcp, cpz from fuc; peers for this
# benchmark only: `cargo install xcp fcp cpz`), side by side in one run, warm cache,
# on ext4 (BENCH_DIR, default the repository's parent filesystem) and on tmpfs
# (/dev/shm). Each workload: ROUNDS interleaved rounds (the tools' order rotates), the
# median time per tool, and ioprobe ÷ each peer. Every copy is verified (cmp or diff
# -r; with -a/-p also modes and nanosecond mtimes through find -printf).
#   ROUNDS=5 bench/cp.sh            (about 15 min here)
#
# Nothing is deleted on a disk filesystem while copies are timed: ext4 without a
# journal (this machine's root) passes over inodes freed in the last minute when it
# allocates new ones, so a tree copied right after the previous copy was removed is
# timed against that removal, 3-10x slower or not depending on whether it starts in
# the same second. Copies of trees are kept until the filesystem's part is over; only
# the 1 GiB copies (one inode each) are removed at once. A removal of many files in
# the minute before the script starts still slows its first workloads there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
cargo build --release --quiet
IOPROBE=$PWD/target/release/ioprobe
export PATH="$HOME/.cargo/bin:$PATH"
have() { command -v "$1" >/dev/null; }
echo "coreutils: $(cp --version | head -1)"
for t in xcp fcp cpz; do have "$t" && echo "$t: $("$t" --version 2>/dev/null | head -1)" || echo "$t: not installed (cargo install $t)"; done

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Stream copies of /dev/zero ($1) to $2 through a pipe.
STREAM=1073741824
stream_ioprobe() { head -c "$STREAM" "$1" | "$IOPROBE" cp /dev/stdin "$2"; }
stream_cat() { head -c "$STREAM" "$1" | cat > "$2"; }
# The writer's own CPU time (user + system, ns) while it fills the pipe for ioprobe:
# no reader can finish before the program filling the pipe has done its work.
writer_cpu() {
    local dst=$work/out/writer-cpu
    rm -f "$dst"
    { TIMEFORMAT='%3U %3S'; time head -c "$STREAM" /dev/zero; } 2>"$work/writer-time" | "$IOPROBE" cp /dev/stdin "$dst"
    rm -f "$dst"
    awk '{ printf "%.0f\n", ($1 + $2) * 1e9 }' "$work/writer-time"
}

# What a tree looks like, for verification: relative path, type, mode, size, mtime (ns).
shape() { (cd "$1" && find . -printf '%P %y %m %T@ ' -a \( -type f -printf '%s\n' -o -printf '-\n' \) | sort); }
content() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r cat | md5sum | cut -d' ' -f1); }

verify() { # verify SRC DST KEEP_ATTRS: 0 when the copy is right
    local src=$1 dst=$2 attrs=$3
    if [ -f "$src" ]; then cmp -s "$src" "$dst"; return; fi
    # A stream from /dev/zero: its length, and nothing but zeros.
    if [ -c "$src" ]; then [ "$(stat -c %s "$dst")" = "$STREAM" ] && cmp -s -n "$STREAM" "$dst" "$src"; return; fi
    [ "$(content "$src")" = "$(content "$dst")" ] || return 1
    if [ "$attrs" = 1 ]; then
        diff <(shape "$src") <(shape "$dst") >/dev/null
    else
        diff <(shape "$src" | awk '{print $1, $2, $5}') <(shape "$dst" | awk '{print $1, $2, $5}') >/dev/null
    fi
}

# run_workload NAME SRC ATTRS TOOL:CMD... ; CMD gets SRC and DST appended. Copies go
# to $work/out; they are removed after verification when $remove is 1.
run_workload() {
    local name=$1 src=$2 attrs=$3; shift 3
    local tools=("$@")  # copies go under the scratch directory $work
    declare -A times cpus bad
    mkdir -p "$work/out"
    local tag; tag=$(basename "$src")
    # One untimed copy first: the source read once more, write-back of its creation done.
    local first=${tools[0]}; eval "${first#*:} \"\$src\" \"\$work/out/warm-\$tag\"" >/dev/null 2>&1 || true
    if [ "$remove" = 1 ]; then rm -rf "$work/out/warm-$tag"; fi
    sync
    for round in $(seq "$ROUNDS"); do
        local n=${#tools[@]}
        for k in $(seq 0 $((n - 1))); do
            local spec=${tools[$(((k + round) % n))]}
            local tool=${spec%%:*} cmd=${spec#*:}
            local dst; dst="$work/out/$tag-$tool-$round-$(now)"
            sync
            local t0; t0=$(now)
            # bash's time: the CPU (user + system) of every process of the command.
            { TIMEFORMAT='%3U %3S'; time { eval "$cmd \"\$src\" \"\$dst\"" >/dev/null 2>"$work/err"; }; } 2>"$work/cpu" \
                || { echo "  $tool failed on $name: $(head -c 300 "$work/err")" >&2; bad[$tool]=1; continue; }
            local took=$(($(now) - t0))
            local cpu; cpu=$(awk '{ printf "%.0f\n", ($1 + $2) * 1e9 }' "$work/cpu")
            # Modes and times are checked for the tools asked to keep them (ioprobe -a,
            # cp -a); the peers' trees for content, names and sizes.
            local a=0; [[ "$tool" == ioprobe || "$tool" == cp-a ]] && a=$attrs
            if verify "$src" "$dst" "$a"; then times[$tool]+="$took "; cpus[$tool]+="$cpu "
            else echo "  $tool: copy FAILED verification (attributes checked: $a)" >&2; bad[$tool]=1; fi
            if [ "$remove" = 1 ]; then rm -rf "$dst"; fi
        done
    done
    local base; base=$(echo "${times[ioprobe]:-}" | tr ' ' '\n' | grep . | median)
    [ -n "$base" ] || base=0
    local cbase; cbase=$(echo "${cpus[ioprobe]:-}" | tr ' ' '\n' | grep . | median)
    [ -n "$cbase" ] || cbase=0
    printf '\n%s (median of %s rounds; CPU = user + system of the whole command)\n' "$name" "$ROUNDS"
    printf '  %-12s %10s %17s %14s %10s %14s\n' tool median "range" "ioprobe ÷ tool" "CPU" "CPU ioprobe ÷"
    for spec in "${tools[@]}"; do
        local tool=${spec%%:*}
        [ -z "${bad[$tool]:-}" ] && [ -n "${times[$tool]:-}" ] || { printf '  %-12s %10s\n' "$tool" "failed or unverified"; continue; }
        local m; m=$(echo "${times[$tool]}" | tr ' ' '\n' | grep . | median)
        local c; c=$(echo "${cpus[$tool]}" | tr ' ' '\n' | grep . | median)
        local lo hi; lo=$(echo "${times[$tool]}" | tr ' ' '\n' | grep . | sort -n | head -1)
        hi=$(echo "${times[$tool]}" | tr ' ' '\n' | grep . | sort -n | tail -1)
        awk -v t="$tool" -v m="$m" -v b="$base" -v lo="$lo" -v hi="$hi" -v c="$c" -v cb="$cbase" \
            'BEGIN { printf "  %-12s %8.3f s %7.3f–%.3f s %13.2f× %8.3f s %13.2f×\n", t, m / 1e9, lo / 1e9, hi / 1e9, b / m, c / 1e9, (c > 0 ? cb / c : 0) }'
    done
}

peers_file=()
peers_tree=()
have xcp && peers_file+=("xcp:xcp") && peers_tree+=("xcp:xcp -r")
have fcp && peers_file+=("fcp:fcp") && peers_tree+=("fcp:fcp")
have cpz && peers_file+=("cpz:cpz") && peers_tree+=("cpz:cpz")

# BENCH_ONLY=DIR: that filesystem alone. BENCH_STREAM_ONLY=1: the pipe stream alone.
filesystems=("${BENCH_DIR:-$PWD/..}" /dev/shm)
if [ -n "${BENCH_ONLY:-}" ]; then filesystems=("$BENCH_ONLY"); fi
for fs in "${filesystems[@]}"; do
    work=$(mktemp -d "$fs/ioprobe-cp-bench.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    trap 'exit 130' INT TERM  # the EXIT trap then removes the scratch; a trap alone would carry on
    # The filesystem holding $work (statfs; findmnt lists every mount stacked there).
    fstype=$(stat -f -c %T "$work")
    echo; echo "=== on $(findmnt -no FSTYPE -T "$work" | tail -1) ($work)"
    # Copies of trees stay until this filesystem's part is over, except on tmpfs
    # (memory, and a limit on inodes).
    remove=0; [ "$fstype" = tmpfs ] && remove=1
    if [ -z "${BENCH_STREAM_ONLY:-}" ]; then
        # One 1 GiB file, warm.
        head -c 1G /dev/urandom > "$work/big"; cat "$work/big" > /dev/null
        keep=$remove; remove=1
        run_workload "one 1 GiB file" "$work/big" 0 "ioprobe:$IOPROBE cp" "cp:cp" "${peers_file[@]}"
        remove=$keep
        rm -f "$work/big"
        # 10,000 files of 0–16 KiB in 100 directories, modes varied; -a/-p keep mode and times.
        python3 - "$work/small" <<'PY'
import os, random, sys
random.seed(1)
root = sys.argv[1]
for d in range(100):
    p = os.path.join(root, "d%03d" % d)
    os.makedirs(p)
    for f in range(100):
        fp = os.path.join(p, "f%03d" % f)
        with open(fp, "wb") as fh:
            fh.write(os.urandom(random.randint(0, 16384)))
        os.chmod(fp, random.choice([0o644, 0o600, 0o755]))
        os.utime(fp, ns=(1_600_000_000_000_000_000 + f, 1_600_000_000_123_456_789 + d))
PY
        run_workload "10,000 files of 0–16 KiB in 100 directories, mode and timestamps kept" "$work/small" 1 \
            "ioprobe:$IOPROBE cp -a" "cp-a:cp -a" "${peers_tree[@]}"
        run_workload "the same tree, plain recursive copy" "$work/small" 0 \
            "ioprobe:$IOPROBE cp -r" "cp-r:cp -r" "${peers_tree[@]}"
        if [ "$remove" = 1 ]; then rm -rf "$work/small"; fi
        # 100,000 empty files in one directory.
        mkdir "$work/flat"; (cd "$work/flat" && seq -f 'e%06g' 100000 | xargs touch)
        run_workload "100,000 empty files in one directory, mode and timestamps kept" "$work/flat" 1 \
            "ioprobe:$IOPROBE cp -a" "cp-a:cp -a" "${peers_tree[@]}"
        run_workload "the same directory, plain recursive copy" "$work/flat" 0 \
            "ioprobe:$IOPROBE cp -r" "cp-r:cp -r" "${peers_tree[@]}"
        if [ "$remove" = 1 ]; then rm -rf "$work/flat"; fi
        # A real source tree: this repository's build output.
        cp -a target/release "$work/tree"
        run_workload "a real tree: target/release ($(du -sh "$work/tree" | cut -f1), $(find "$work/tree" | wc -l) entries)" \
            "$work/tree" 1 "ioprobe:$IOPROBE cp -a" "cp-a:cp -a" "${peers_tree[@]}"
        if [ "$remove" = 1 ]; then rm -rf "$work/tree"; fi
    fi
    # A 1 GiB stream from a pipe, against cat (coreutils' cat uses read/write), and the
    # floor: the CPU time of the program filling the pipe.
    keep=$remove; remove=1
    run_workload "a 1 GiB stream from a pipe (head -c 1G /dev/zero | …; $(cat --version | head -1))" /dev/zero 0 \
        "ioprobe:stream_ioprobe" "cat:stream_cat"
    remove=$keep
    w=$(for round in $(seq "$ROUNDS"); do writer_cpu; done | median)
    awk -v w="$w" 'BEGIN { printf "  head'"'"'s own CPU time while it fills the pipe: %.3f s (median), the floor for any reader\n", w / 1e9 }'
    rm -rf "$work"
    trap - EXIT
done
