#!/bin/sh
# Runs every test suite and ends with one line "N passed, N failed": the C
# unit tests (cmocka, TAP), every bats suite as the current user, and the
# sandbox suites again as the unprivileged user sbxtest (created here).
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
out=$(mktemp -d /tmp/sbx-check.XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
passed=0
failed=0

# run_suite NAME CMD...: runs a suite that prints TAP, echoes it, tallies it.
run_suite() {
    name=$1
    shift
    echo "# --- $name"
    start=$(date +%s)
    "$@" > "$out/$name.tap" 2>&1
    rc=$?
    cat "$out/$name.tap"
    echo "# $name took $(( $(date +%s) - start )) s"
    ok=$(grep -c '^ok ' "$out/$name.tap")
    bad=$(grep -c '^not ok ' "$out/$name.tap")
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        echo "# $name exited $rc without reporting a failed test; counted as one failure"
        bad=1
    fi
    passed=$((passed + ok))
    failed=$((failed + bad))
}

# The unprivileged user the sandbox suites run as below, and which root's
# suites launch workloads as (sbx-launch --run-as sbxtest): made first.
if [ "$(id -u)" -eq 0 ]; then
    id sbxtest >/dev/null 2>&1 ||
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin sbxtest
fi

# What a test may leave behind: sandboxes and sbx programs started since now.
PATTERN='(^|/)(bwrap|sbx-(httpd|run|launch|egress|egress-bridge|broker|env|npu))( |$)'
pgrep -f "$PATTERN" > "$out/before.pids" || true

for unit in bin/test/test_*; do
    [ -x "$unit" ] || continue
    run_suite "unit-$(basename "$unit")" env CMOCKA_MESSAGE_OUTPUT=TAP "$unit"
done

for suite in test/bats/*.bats; do
    run_suite "$(basename "$suite" .bats)-as-$(id -un)" bats --tap "$suite"
done

# The deployment runs sandboxes as an unprivileged user: run the sandbox
# suites again as sbxtest, from a copy it can read wherever this tree lives.
SANDBOX_SUITES="probe probe-cache launch launch-seccomp launch-spec quota snap run worker egress egress-gateway egress-limits httpd httpd-managed httpd-env env npu broker httpd-npu httpd-remote httpd-remote-race httpd-remote-node httpd-race httpd-hostile"
if [ "$(id -u)" -eq 0 ]; then
    stage="$out/stage"
    mkdir -p "$stage"
    cp -R bin test contrib share "$stage/"
    chmod -R a+rX "$stage"
    chmod 755 "$out"
    for s in $SANDBOX_SUITES; do
        run_suite "$s-as-sbxtest" runuser -u sbxtest -- env HOME="$stage" TMPDIR=/tmp \
            bats --tap "$stage/test/bats/$s.bats"
    done
else
    echo "# not root: the sbxtest runs and the namespace refusals are skipped"
fi

# Nothing a suite started outlives the run: stragglers get 15 s to exit
# (a kill is asynchronous), then they are named, killed and counted.
leftover_check() {
    echo "1..1"
    for _ in $(seq 150); do
        left=$(pgrep -f "$PATTERN" | grep -v -x -F -f "$out/before.pids" || true)
        [ -z "$left" ] && { echo "ok 1 no process a test started outlives the suites"; return 0; }
        sleep 0.1
    done
    echo "not ok 1 processes left behind by the suites:"
    for pid in $left; do
        # pid, parent, owner and age say which suite left it.
        echo "#   $(ps -o pid=,ppid=,user=,etime= -p "$pid" 2>/dev/null) $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
        kill -9 "$pid" 2>/dev/null
    done
    return 1
}
run_suite leftover-processes leftover_check

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
