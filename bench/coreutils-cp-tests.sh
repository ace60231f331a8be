#!/usr/bin/env bash
# GNU coreutils' own tests/cp/*.sh (tag v9.1) run against `ioprobe cp`.
#   bench/coreutils-cp-tests.sh /path/to/coreutils.git   [TEST.sh …]
# The argument is a clone of coreutils (a bare git directory will do). Its tests,
# init.cfg and build-aux are exported into a scratch directory, and nothing of them
# enters this repository. There, src/cp is a wrapper that runs `ioprobe cp` and
# rewrites the `ioprobe: cp:` prefix of its messages to GNU's `cp:`, since many tests
# compare stderr. The other programs the tests use are the system's coreutils, which
# must be 9.1, as the tests expect.
#
# Tests that must run unprivileged run as uid 65534 when this script runs as root. It
# prints PASS, FAIL or SKIP (with the test's own reason) per test, then the totals.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=${1:?usage: $0 COREUTILS_GIT_DIR [TEST.sh …]}
shift
cargo build --release --quiet --manifest-path "$here/Cargo.toml" || exit 1
work=$(mktemp -d /tmp/ioprobe-coreutils.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
git -C "$repo" archive v9.1 tests build-aux init.cfg | tar -x -C "$work" || exit 1
mkdir "$work/src"
cat > "$work/src/cp" <<EOF
#!/bin/bash
exec 3>&1
"$here/target/release/ioprobe" cp "\$@" 2>&1 1>&3 3>&- \\
    | sed -u -e 's/^ioprobe: \\(error: \\)\\{0,1\\}cp: /cp: /' -e "s/ (see 'ioprobe cp --help')\\\$//" >&2
exit \${PIPESTATUS[0]}
EOF
chmod 755 "$work/src/cp"
echo '#define HAVE_UTIMENSAT 1' > "$work/config.h"
chmod 1777 "$work"

run() { # run TEST [as-nobody]
    local t=$1 log; log=$(mktemp "$work/log.XXXXXX")
    local env=(env srcdir="$work" abs_srcdir="$work" abs_top_srcdir="$work" abs_top_builddir="$work"
        built_programs="cp mv ln rm chown chgrp chmod touch stat dd truncate mkdir cat ls chroot env"
        CC=gcc PERL=perl PYTHON=python3 NON_ROOT_USERNAME=nobody NON_ROOT_GID=65534
        PACKAGE_VERSION=9.1 CONFIG_HEADER="$work/config.h" RUN_EXPENSIVE_TESTS=yes
        RUN_VERY_EXPENSIVE_TESTS=yes PATH="$work/src:$PATH")
    if [ "${2:-}" = nobody ]; then
        env=(setpriv --reuid=65534 --regid=65534 --groups=100,65534 "${env[@]}" HOME=/tmp)
    fi
    (cd "$work" && timeout 300 "${env[@]}" bash "tests/cp/$t" >"$log" 2>&1)
    local rc=$?
    case $rc in
        0) echo "PASS $t${2:+ (as uid 65534)}" ;;
        77) echo "SKIP $t: $(grep -o 'skipped test: .*' "$log" | head -1 | cut -c 15-)" ;;
        *) echo "FAIL $t (status $rc)"; tail -15 "$log" | sed 's/^/    /' ;;
    esac
}

tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=($(cd "$work/tests/cp" && ls *.sh))
for t in "${tests[@]}"; do
    line=$(run "$t")
    # A test that needs an unprivileged user, when this runs as root.
    if [[ $line == SKIP*"must be run as non-root"* || $line == SKIP*"requires membership in two groups"* ]] \
        && [ "$(id -u)" = 0 ]; then
        line=$(run "$t" nobody)
    fi
    echo "$line"
done | tee "$work/results"
printf '\n%s passed, %s failed, %s skipped\n' "$(grep -c ^PASS "$work/results")" \
    "$(grep -c ^FAIL "$work/results")" "$(grep -c ^SKIP "$work/results")"
