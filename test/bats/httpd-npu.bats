#!/usr/bin/env bats
# The NPU endpoints of sbx-httpd over HTTP: the broker's jobs with the
# upstream's exact status codes (404 vs 400 vs 409), signatures, /health
# and /status, the device inventory, and executions with npuDevices.

load httpd_helpers
load npu_helpers

setup() {
    HOST=$(mktemp -d /tmp/sbx-npu-host.XXXXXX)
    chmod 755 "$HOST"
    npu_host "$HOST"
    export SCIENCE_AGENT_NPU_BROKER=1
    export SCIENCE_AGENT_NPU_WORKLOAD_CONFIG="$FIXTURES/npu-workloads.test.json"
    stage_broker_repo "$HOST/repo"
    export SCIENCE_AGENT_NPU_PYTHON=/usr/bin/python3
    export SBX_TEST_FIFO="$HOST/fifo"
    # Jobs run as the workspace's owner or the broker's user, never root.
    mkfifo -m 0666 "$SBX_TEST_FIFO"
    httpd_setup
}

teardown() {
    httpd_teardown
    rm -rf "$HOST"
}

job_request() {
    jq -cn --arg w "$1" --arg id "$2" --arg ws "$PROJECT" --argjson extra "${3:-{\}}" \
        '{workloadId: $w, sessionId: "s1", workspaceRoot: $ws, jobId: $id} + $extra'
}

# await_state ID STATE: the server's drainer (running once a submit has
# its 201) exits when the queue is empty; then the job must be in STATE.
await_state() {
    local pid
    for pid in $(pgrep -f "sbx-broker --data-dir $WORK/data --enable drain"); do
        timeout 60 tail --pid="$pid" -f /dev/null
    done
    api GET "/npu/jobs/$1?session_id=s1"
    assert_equal "$(jq_out .state)" "$2"
}

@test "/health.npuBroker and GET /npu/workloads come from the allowlist read at startup" {
    run curl -sS "$BASE/health"
    assert_equal "$(jq_out '.npuBroker.enabled, .npuBroker.queueConcurrency, (.npuBroker.workloads | length)' | tr '\n' ' ')" "true 1 12 "
    api GET /npu/workloads
    assert_equal "$status_code" 200
    assert_equal "$(jq_out '.[0].id')" test.smoke
}

@test "POST /npu/jobs: signed, 201 queued, then run by the server; logs and result" {
    api POST /npu/jobs --data-binary "$(job_request test.smoke j1)"
    assert_equal "$status_code $(jq_out .error)" "401 Invalid or expired NPU job signature"
    signed /npu/jobs "$(job_request test.smoke j1)"
    assert_equal "$status_code" 201
    assert_equal "$(jq_out '.state, .workspaceRoot' | tr '\n' ' ')" "queued $PROJECT "
    await_state j1 succeeded
    api GET "/npu/jobs/j1/logs?sessionId=s1"
    assert_equal "$status_code $(jq_out '.stderr, .truncated' | tr '\n' ' ')" "200 to stderr  false "
    api GET "/npu/jobs/j1/result?session_id=s1"
    assert_equal "$status_code $(jq -c '.job.createdFiles' <<<"$output")" '200 ["made.txt"]'
    # The audit (argv, environment, PATH) is the broker's, never an API answer's.
    refute_output --partial '"audit"'
    api GET "/npu/jobs/j1?session_id=s1"
    assert_equal "$status_code $(jq -c 'has("audit")' <<<"$output")" '200 false'
    api GET "/npu/jobs?session_id=s1"
    refute_output --partial '"audit"'
    assert_equal "$(jq -c '[.[] | [.id, .workspaceRoot, .logs.stdout]]' <<<"$output")" '[["j1","",""]]'
    signed /npu/jobs "$(job_request test.smoke j1)"
    assert_equal "$status_code $(jq_out .error)" "400 NPU job already exists: j1"
    signed /npu/jobs "$(job_request test.nope j2)"
    assert_equal "$status_code $(jq_out .error)" "400 Unknown NPU workload: test.nope"
    signed /npu/jobs "not json"
    assert_equal "$status_code" 400
}

@test "status codes: 404 on get and result, 400 on logs and cancel, 409 while not terminal, 400 for sessions" {
    api GET "/npu/jobs/nope?session_id=s1"
    assert_equal "$status_code $(jq_out .error)" "404 NPU job not found"
    api GET "/npu/jobs/nope/result?session_id=s1"
    assert_equal "$status_code" 404
    api GET "/npu/jobs/nope/logs?session_id=s1"
    assert_equal "$status_code $(jq_out .error)" "400 Unknown NPU job: nope"
    signed /npu/jobs/nope/cancel '{"sessionId":"s1"}'
    assert_equal "$status_code $(jq_out .error)" "400 Unknown NPU job: nope"
    api GET /npu/jobs
    assert_equal "$status_code $(jq_out .error)" "400 session_id is required for NPU job access"
    signed /npu/jobs "$(job_request test.hold h1)"
    assert_equal "$status_code" 201
    await_fifo "$SBX_TEST_FIFO"
    api GET "/npu/jobs/h1/result?session_id=s1"
    assert_equal "$status_code $(jq_out .error)" "409 NPU job is not terminal"
    api GET "/npu/jobs/h1?session_id=other"
    assert_equal "$status_code $(jq_out .error)" "400 NPU job not found in this Session"
    run curl -sS -H "authorization: Bearer $TOKEN" "$BASE/status"
    assert_equal "$(jq -c '[.npuJobs[] | [.id, .state]]' <<<"$output")" '[["h1","running"]]'
    # Cancel: signed, the session from the body (an empty body is a 400).
    api POST /npu/jobs/h1/cancel --data-binary '{"sessionId":"s1"}'
    assert_equal "$status_code $(jq_out .error)" "401 Invalid or expired NPU job cancel signature"
    signed /npu/jobs/h1/cancel ''
    assert_equal "$status_code $(jq_out .error)" "400 sessionId is required for NPU job cancel"
    signed /npu/jobs/h1/cancel '{"sessionId":"s1"}'
    assert_equal "$status_code $(jq_out .state)" "200 running"
    await_state h1 cancelled
    api GET "/npu/jobs/h1/result?session_id=s1"
    assert_equal "$status_code $(jq_out .job.state)" "200 cancelled"
}

@test "a restart turns a running job into interrupted" {
    signed /npu/jobs "$(job_request test.hold h2)"
    await_fifo "$SBX_TEST_FIFO"
    kill -9 "$HTTPD_PID"
    wait "$HTTPD_PID" || true
    httpd_start
    api GET "/npu/jobs/h2?session_id=s1"
    assert_equal "$(jq_out '.state, .error' | tr '\n' '|')" "interrupted|Runner restarted before the NPU job completed|"
}

@test "GET /npu/devices, ?refresh=1, and an execution with npuDevices [4,5] refused naming NPU 5" {
    api GET /npu/devices
    assert_equal "$status_code $(jq_out '.supported, (.devices | length)' | tr '\n' ' ')" "200 true 8 "
    echo FAKE_NPU_SMI_MODEL=910c > "$FAKE_NPU_SMI_CONFIG"
    api GET /npu/devices
    assert_equal "$(jq_out '.devices | length')" 8
    api GET '/npu/devices?refresh=1'
    assert_equal "$(jq_out '.devices | length')" 4
    rm "$FAKE_NPU_SMI_CONFIG"
    signed /execute-shell "$(shell_request x1 'touch ran' '{"npuDevices": [5, 4]}')"
    assert_equal "$status_code" 400
    assert_equal "$(jq_out .error)" "Requested NPU cards are not usable on this machine: NPU 5 cannot be opened inside the sandbox: dcmi model initialized failed, because the device is used. ret is -8020"
    [ ! -e "$PROJECT/ran" ]
    signed /execute-shell "$(shell_request x2 'ls /dev | grep davinci' '{"npuDevices": [6, 4]}')"
    assert_equal "$status_code $(jq_out .stdout)" "200 davinci0
davinci1
davinci_manager"
    signed /execute-shell "$(shell_request x3 'true' '{"npuDevices": [-1]}')"
    assert_equal "$status_code $(jq_out .error)" "400 npuDevices[0]: must be an integer from 0 to 1023"
}
