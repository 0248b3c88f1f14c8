# helpers.bash — shared by the bats suites: assertions, paths to the built
bats_require_minimum_version 1.5.0
# programs and fixtures, and a JSON field reader.
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

SBX_BIN="$(cd "$BATS_TEST_DIRNAME/../../bin" && pwd)"
FIXTURES="$(cd "$BATS_TEST_DIRNAME/../fixtures" && pwd)"
export PATH="$SBX_BIN:$PATH"
# Every sbx child gets a pass-list environment (sbx-formats(5)): the
# fixtures' knobs reach the fakes a stage starts (npu-smi, bwrap,
# micromamba) the way an operator's own variables would.
export SBX_PASS_ENV=FAKE_NPU_SMI_MODEL,FAKE_NPU_SMI_FAIL,FAKE_NPU_SMI_CONFIG,FAKE_NPU_SMI_DIR,FAKE_NVIDIA_SMI_FAIL,FAKE_BWRAP_LOG,FAKE_BWRAP_PIDFILE,REAL_BWRAP,FAKE_VERSION,FAKE_HELP_OMIT,FAKE_MICROMAMBA_CHANNELS,FAKE_MICROMAMBA_LOG,FAKE_MICROMAMBA_DELAY_S,FAKE_MICROMAMBA_HANG_ON,FAKE_MICROMAMBA_HANGING_FIFO,FAKE_R_REPO,FAKE_DCMI_CHIPS,FAKE_DCMI_FAIL

# jq_out FILTER: applies a jq filter to $output (the last `run`'s stdout).
jq_out() {
    printf '%s\n' "$output" | jq -r "$1"
}

# The stdout of the last `run` when stderr was kept apart (run --separate-stderr).
count_lines() {
    if [ -f "$1" ]; then grep -c "${2:-.}" "$1" || true; else echo 0; fi
}

# await_fifo FIFO [VAR]: the first line a writer puts into FIFO (into VAR),
# within 30 s: opened read-write so that a writer that never comes fails the
# test instead of hanging it.
await_fifo() {
    local line
    exec 7<>"$1"
    read -r -t 30 -u 7 line || { exec 7<&-; fail "nothing arrived on $1"; }
    exec 7<&-
    [ -z "${2:-}" ] || printf -v "$2" '%s' "$line"
}

# eventually CMD...: CMD succeeds within 10 s (checked every 20 ms), for
# what the daemon finishes just after its answer (a run directory's
# removal): a bound, not a guess at how long it takes.
eventually() {
    for _ in $(seq 500); do
        "$@" && return 0
        read -rt 0.02 <> <(:) || true
    done
    "$@"
}

# stage_broker_repo DIR: SBX_BROKER_ROOT becomes a copy of the programs the
# test workloads name (${repo:...}) under DIR, which the caller keeps
# searchable: as root, jobs run as an unprivileged uid that must reach them
# wherever this checkout lives (a 0700 directory included).
stage_broker_repo() {
    mkdir -p "$1/test/fixtures" "$1/share/sbx"
    cp "$FIXTURES/npu-workload.py" "$1/test/fixtures/"
    cp -R "$FIXTURES/../../share/sbx/workloads" "$1/share/sbx/"
    chmod -R a+rX "$1"
    export SBX_BROKER_ROOT="$1"
}

# end_jobs: every background job the test started (a connection holder
# waiting on a FIFO only its success path writes, a client) is killed, so
# a failed test's teardown never waits for it.
end_jobs() {
    local pids
    pids=$(jobs -p)
    [ -z "$pids" ] || kill $pids 2>/dev/null || true
}
