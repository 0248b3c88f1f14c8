#!/usr/bin/env bats
# Schedulers see the truth: contrib/slurm/sbx-array.sbatch on a real Slurm
# cluster started here (munged, slurmctld, slurmd: slurm_helpers.bash), one
# sbx-run execution per array task; Slurm's JobState and ExitCode for each
# way a run ends, and the results and events next to the requests.

load slurm_helpers

SBATCH_SCRIPT="$BATS_TEST_DIRNAME/../../contrib/slurm/sbx-array.sbatch"

setup_file() {
    SLURM_SKIP=$(slurm_missing)
    export SLURM_SKIP
    [ -z "$SLURM_SKIP" ] || return 0
    if ! slurm_start >&3 2>&1; then
        slurm_stop
        return 1
    fi
}

teardown_file() {
    slurm_stop
}

setup() {
    [ -z "$SLURM_SKIP" ] || skip "no Slurm cluster here: $SLURM_SKIP"
    RUNS=$(mktemp -d "$SLURM_DIR/runs.XXXXXX")
    chmod 755 "$RUNS"
    mkdir "$RUNS/tmp" # the jobs' TMPDIR
    export SBX_DATA_DIR="$SLURM_DIR/data"
}

teardown() {
    [ -n "$SLURM_SKIP" ] || [ -z "${RUNS:-}" ] || rm -rf "$RUNS"
}

# request N CODE [EXTRA-JSON]: $RUNS/request-N.json, a shell run in its own workspace.
request() {
    mkdir -p "$RUNS/ws-$1"
    jq -cn --arg id "slurm-$1-$$" --arg code "$2" --arg ws "$RUNS/ws-$1" --argjson extra "${3:-{\}}" \
        '{executionId: $id, language: "shell", code: $code, workspace: $ws} + $extra' > "$RUNS/request-$1.json"
}

# submit ARRAY [SBATCH-OPTIONS...]: the script over $RUNS as array ARRAY; its job id in $job.
submit() {
    local array=$1
    shift
    job=$(TMPDIR="$RUNS/tmp" sbatch --parsable --array="$array" --chdir="$RUNS" --output="$RUNS/log-%a.txt" "$@" \
        "$SBATCH_SCRIPT" "$RUNS")
    job=${job%%;*}
    [[ "$job" =~ ^[0-9]+$ ]] || fail "sbatch said: $job"
}

# r N FILTER: a field of task N's result.
r() { jq -r "$2" "$RUNS/result-$1.json"; }

# No job cgroup of task/cgroup's is left for this node.
job_cgroups_gone() {
    [ -z "$(find /sys/fs/cgroup -maxdepth 4 -path "*/slurm_$SLURM_NODE/*" -name 'job_*' 2>/dev/null)" ]
}

@test "an array of sbx-run executions: completed, failed, memory, timeouts and a bad request, each as Slurm sees it" {
    request 0 'echo hello > greeting.txt; cat greeting.txt'
    request 1 'echo failing >&2; exit 3'
    # The request's own memory bound: sbx-run's cgroup, beneath the job's.
    request 2 'python3 -c "x = bytearray(300 << 20)"; echo survived' '{"limits":{"memoryBytes":100000000}}'
    # No bound of its own: the job's --mem (150M) is the one it meets.
    request 3 'python3 -c "x = bytearray(300 << 20)"; echo survived'
    request 4 'sleep 30' '{"timeoutMs":1000}'
    # No timeoutMs: the job's time limit (1 minute) less sbx-run's 15 s reserve.
    request 5 'sleep 300'
    echo '{"executionId":"bad","language":"cobol","code":"x","workspace":"/tmp"}' > "$RUNS/request-6.json"
    # The sbx programs from a copy in a 0700 directory, as a checkout in
    # root's home would be: the jobs run as root, the workloads as their uid.
    mkdir -m 700 "$SLURM_DIR/home"
    mkdir "$SLURM_DIR/home/sbx"
    cp -R "$SBX_BIN" "$BATS_TEST_DIRNAME/../../share" "$SLURM_DIR/home/sbx/"
    PATH="$SLURM_DIR/home/sbx/bin:$PATH" submit 0-6 --mem=150M --time=1
    slurm_wait "$job" 150
    for t in 0 1 2 3 4 5 6; do echo "# task $t: $(job_state "${job}_$t")" >&3; done

    assert_equal "$(job_state "${job}_0")" "COMPLETED 0:0"
    assert_equal "$(r 0 '[.exitCode, .failureClass, .stdout] | @json')" '[0,null,"hello\n"]'
    assert_equal "$(r 0 '.createdFiles | join(",")')" greeting.txt
    assert_equal "$(jq -r .event "$RUNS/events-0.jsonl" | tr '\n' ' ')" "mode started finished "

    # The workload's own status is the result's; the job's is sbx-run's 1.
    assert_equal "$(job_state "${job}_1")" "FAILED 1:0"
    assert_equal "$(r 1 '[.exitCode, .failureClass, .stderr] | @json')" '[3,null,"failing\n"]'

    assert_equal "$(job_state "${job}_2")" "FAILED 1:0"
    assert_equal "$(r 2 '[.exitCode, .limits.mode, .limits.oomKilled, .stdout] | @json')" '[137,"cgroup-v1",true,""]'

    if [ "$SLURM_MEMORY_CONFINED" = 1 ]; then
        # Killed inside the job's cgroup: Slurm saw it (its ExitCode then
        # says 0:125); sbx-run survived and wrote the result.
        assert_equal "$(job_state "${job}_3" | cut -d' ' -f1)" OUT_OF_MEMORY
        assert_equal "$(r 3 '[.exitCode, .stdout] | @json')" '[137,""]'
        grep -q "oom-kill event" "$RUNS/log-3.txt"
    else
        echo "# no cgroup v1 memory hierarchy: --mem is not confined here, task 3 ran free" >&3
    fi

    assert_equal "$(job_state "${job}_4")" "FAILED 7:0"
    assert_equal "$(r 4 '[.failureClass, .deadline, .error] | @json')" '["timeout","timeoutMs","Shell execution timed out after 1000 ms"]'

    # sbx-run stopped it itself, in time to write the result.
    assert_equal "$(job_state "${job}_5")" "FAILED 7:0"
    assert_equal "$(r 5 '[.failureClass, .deadline] | @json')" '["timeout","platform"]'
    [[ "$(r 5 .error)" == "Shell execution stopped 15000 ms before the platform deadline of "*" ms" ]]

    # Refused before anything ran: no events, no result, the field named in the log.
    assert_equal "$(job_state "${job}_6")" "FAILED 2:0"
    [ ! -e "$RUNS/result-6.json" ] && [ ! -s "$RUNS/events-6.jsonl" ]
    grep -q '"message":"language: must be shell, python or r"' "$RUNS/log-6.txt"

    # Every task's events and result next to its request, nothing else left.
    for t in 0 1 2 3 4 5; do
        [ "$(jq -c 'select(.event == "finished") | .result' "$RUNS/events-$t.jsonl")" = "$(jq -c . "$RUNS/result-$t.json")" ]
    done
    left=$(ls "$RUNS" | grep -Ev '^(request|events|result|log)-[0-6]\.(json|jsonl|txt)$|^ws-[0-5]$|^tmp$' || true)
    [ -z "$left" ] || fail "left beside the requests: $left"
    # The tasks' state dirs are gone (the script's trap), and so are
    # sbx-run's cgroups in the job's: Slurm removed the job's cgroups.
    [ -z "$(ls "$RUNS/tmp")" ]
    slurm_poll 10 job_cgroups_gone || fail "job cgroups left: $(find /sys/fs/cgroup -path "*/slurm_$SLURM_NODE/*" -type d)"
    # jobcomp/filetxt, what a site without slurmdbd reads, says the same.
    assert_equal "$(grep -c "ArrayJobId=$job " "$SLURM_DIR/log/jobcomp.txt")" 7
}

@test "scancel: CANCELLED; sbx-run stops the sandbox and still writes the result" {
    request 0 'sleep 300'
    submit 0
    slurm_poll 60 grep -q '"event":"started"' "$RUNS/events-0.jsonl" || fail "the run did not start: $(cat "$RUNS/log-0.txt")"
    scancel "$job"
    slurm_wait "$job" 60
    assert_equal "$(job_state "${job}_0" | cut -d' ' -f1)" CANCELLED
    # Slurm signals every process of the job at once: sbx-run's cancel or
    # the workload's death by SIGTERM, whichever it saw first.
    run r 0 '[.failureClass, .exitCode] | @json'
    echo "# scancel: $(job_state "${job}_0"), result $output" >&3
    [[ "$output" == '["cancelled",143]' || "$output" == '[null,143]' ]] || fail "result: $output"
}

@test "a signal for the batch shell alone goes on to sbx-run: cancelled, exit 10" {
    request 0 'sleep 300'
    submit 0
    slurm_poll 60 grep -q '"event":"started"' "$RUNS/events-0.jsonl" || fail "the run did not start: $(cat "$RUNS/log-0.txt")"
    scancel --batch --signal=TERM "$job"
    slurm_wait "$job" 60
    assert_equal "$(job_state "${job}_0")" "FAILED 10:0"
    assert_equal "$(r 0 '[.failureClass, .error] | @json')" '["cancelled","Shell execution aborted"]'
}
