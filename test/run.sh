#!/bin/sh
# Runs every test suite and ends with one line "N passed, N failed": the C
# unit tests (cmocka, TAP), every bats suite as the current user, and the
# sandbox suites again as the unprivileged user sbxtest (created here).
# Suites run SBX_CHECK_JOBS at a time (default: cores + 1; they mostly
# wait), never two of one suite at once, each under a watchdog that fails
# it after SBX_SUITE_TIMEOUT seconds (default 600), naming the test that hung.
set -u
cd "$(dirname "$0")/.."
out=$(mktemp -d /tmp/sbx-check.XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
JOBS=${SBX_CHECK_JOBS:-$(( $(nproc) + 1 ))}
SUITE_TIMEOUT=${SBX_SUITE_TIMEOUT:-600}

# The unprivileged user the sandbox suites run as below, and which root's
# suites launch workloads as (sbx-launch --run-as sbxtest): made first.
if [ "$(id -u)" -eq 0 ]; then
    id sbxtest >/dev/null 2>&1 ||
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin sbxtest
fi

# What a test may leave behind: sandboxes and sbx programs started since now.
PATTERN='(^|/)(bwrap|sbx-(httpd|run|launch|egress|egress-bridge|broker|env|npu))( |$)'
pgrep -f "$PATTERN" > "$out/before.pids" || true

# hung_test FILE TAP: the name of the test after the last one TAP reported
# (bats numbers a file's tests in order).
hung_test() {
    last=$(grep -E '^(not )?ok [0-9]+' "$2" | tail -n 1 | sed -E 's/^(not )?ok ([0-9]+).*/\2/')
    grep -E '^@test ' "$1" | sed -n "$(( ${last:-0} + 1 ))p" | sed -E 's/^@test "(.*)" *\{$/\1/'
}

# run_job NAME FILE CMD...: one suite that prints TAP, under the watchdog
# (timeout signals its whole process group), never beside another run of
# FILE; its TAP, time and tally are printed whole when it ends.
run_job() {
    name=$1 file=$2
    shift 2
    exec 8>"$out/lock.$(basename "$file")"
    flock 8
    start=$(date +%s)
    timeout -k 10 "$SUITE_TIMEOUT" "$@" > "$out/$name.tap" 2>&1
    rc=$?
    exec 8>&-
    ok=$(grep -c '^ok ' "$out/$name.tap")
    bad=$(grep -c '^not ok ' "$out/$name.tap")
    {
        echo "# --- $name"
        cat "$out/$name.tap"
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
            echo "# $name hung: killed after $SUITE_TIMEOUT s (SBX_SUITE_TIMEOUT) in test: $(hung_test "$file" "$out/$name.tap")"
            bad=$((bad + 1))
        elif [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
            echo "# $name exited $rc without reporting a failed test; counted as one failure"
            bad=1
        fi
        echo "# $name took $(( $(date +%s) - start )) s"
    } > "$out/$name.report"
    flock "$out/print.lock" cat "$out/$name.report"
    echo "$ok $bad" > "$out/$name.tally"
}

# The deployment runs sandboxes as an unprivileged user: the sandbox suites
# run again as sbxtest, from a copy it can read wherever this tree lives
# (ws too: sbx-httpd may run unprivileged, and sbx-ws then publishes an
# upload by its fd under protected_hardlinks, without root's reach; skills
# too: a stamp is trusted by its owner, the uid the store runs as).
# (slurm.bats is root's only: it starts munged, slurmctld and slurmd.)
SANDBOX_SUITES="probe probe-cache launch launch-seccomp launch-spec quota snap run worker egress egress-gateway egress-limits egress-denials httpd httpd-managed httpd-sse httpd-env env npu broker httpd-npu httpd-remote httpd-remote-race ws httpd-remote-node httpd-race httpd-hostile skills httpd-skills secrets httpd-secrets secrets-egress denials httpd-metrics speculative history"
stage="$out/stage"
if [ "$(id -u)" -eq 0 ]; then
    mkdir -p "$stage"
    cp -R bin test contrib share "$stage/"
    chmod -R a+rX "$stage"
    chmod 755 "$out"
else
    echo "# not root: the sbxtest runs and the namespace refusals are skipped"
fi

# The job list, longest first so the pool ends together: NAME FILE CMD.
{
    for suite in $(ls -S test/bats/*.bats); do
        s=$(basename "$suite" .bats)
        echo "$s-as-$(id -un) $suite bats --tap $suite"
        if [ "$(id -u)" -eq 0 ] && echo " $SANDBOX_SUITES " | grep -q " $s "; then
            echo "$s-as-sbxtest $suite runuser -u sbxtest -- env HOME=$stage TMPDIR=/tmp bats --tap $stage/test/bats/$s.bats"
        fi
    done
    for unit in bin/test/test_*; do
        [ -x "$unit" ] && echo "unit-$(basename "$unit") $unit env CMOCKA_MESSAGE_OUTPUT=TAP $unit"
    done
} > "$out/jobs"

# JOBS workers take the next line of the list in turn.
echo 0 > "$out/next"
worker() {
    while :; do
        n=$(flock "$out/next" sh -c 'n=$(cat "$1"); echo $((n + 1)) > "$1"; echo $((n + 1))' sh "$out/next")
        line=$(sed -n "${n}p" "$out/jobs")
        [ -n "$line" ] || return 0
        # shellcheck disable=SC2086
        run_job $line
    done
}
i=0
while [ "$i" -lt "$JOBS" ]; do
    worker &
    i=$((i + 1))
done
wait

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
leftover_check > "$out/leftover-processes.tap"
cat "$out/leftover-processes.tap"
echo "$(grep -c '^ok ' "$out/leftover-processes.tap") $(grep -c '^not ok ' "$out/leftover-processes.tap")" > "$out/leftover.tally"

passed=0
failed=0
for t in "$out"/*.tally; do
    read -r ok bad < "$t"
    passed=$((passed + ok))
    failed=$((failed + bad))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
