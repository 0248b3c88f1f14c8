#!/usr/bin/env bats
# Managed shell executions through a real sbx-httpd: the record, its logs
# in pages, FIFO per workspace, cancel, and a kill -9 restart.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

owner='sessionId=s1&agentId=main'


@test "start (202), poll to completed with result, version and snapshot; logs in pages of 4 chunks" {
    signed /shell-executions "$(shell_request m1 'head -c 20000 /dev/zero | tr "\0" a; printf "é%.0s" $(seq 5000) >&2')"
    [ "$status_code" = 202 ]
    [ "$(jq -c '[.agentId, .sessionId, .id, .state, (.queuedAt | type)]' <<< "$output")" = '["main","s1","m1","queued","string"]' ]
    wait_state m1 completed
    [ "$(jq -r .result.exitCode <<< "$output")" = 0 ]
    [[ "$(jq -r .version.digest <<< "$output")" =~ ^sha256:[0-9a-f]{64}$ ]]
    [ "$(jq -r .version.digest <<< "$output")" = "$(jq -r .result.workspaceSnapshot.digest <<< "$output")" ]
    [ "$(jq -r '.startedAt | type' <<< "$output")" = string ] && [ "$(jq -r '.finishedAt | type' <<< "$output")" = string ]
    # Pages: at most 4 chunks, cursors consecutive from 1, chunks <= 4096 characters.
    cursor=0 all=() pages=0
    while :; do
        api GET "/shell-executions/m1/logs?$owner&cursor=$cursor"
        [ "$status_code" = 200 ]
        [ "$(jq '.chunks | length' <<< "$output")" -le 4 ]
        [ "$(jq '[.chunks[] | .text | length] | max // 0' <<< "$output")" -le 4096 ]
        [ "$(jq -c '[.chunks[].cursor]' <<< "$output")" = "$(jq -c "[range($cursor + 1; $cursor + 1 + (.chunks | length))]" <<< "$output")" ]
        all+=("$output")
        pages=$((pages + 1))
        cursor=$(jq .nextCursor <<< "$output")
        [ "$(jq .truncated <<< "$output")" = true ] || break
    done
    [ "$pages" -ge 2 ]
    out=$(printf '%s\n' "${all[@]}" | jq -rj '.chunks[] | select(.stream == "stdout") | .text')
    err=$(printf '%s\n' "${all[@]}" | jq -rj '.chunks[] | select(.stream == "stderr") | .text')
    [ "${#out}" -eq 20000 ] && [ "$out" = "$(head -c 20000 /dev/zero | tr '\0' a)" ]
    [ "$err" = "$(printf 'é%.0s' $(seq 5000))" ]
    [ "$(printf '%s\n' "${all[@]}" | jq -s '[.[].retentionTruncated] | any')" = false ]
}

@test "ids are used forever, validated, and records are their owner's only" {
    signed /shell-executions "$(shell_request m2 'exit 4')"
    wait_state m2 failed
    [ "$(jq -r .result.exitCode <<< "$output")" = 4 ]
    signed /shell-executions "$(shell_request m2 'true')"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "Execution ID has already been used; query it instead of replaying the command" ]
    signed /shell-executions "$(shell_request 'bad id!' 'true')"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "Invalid Execution ID" ]
    api GET "/shell-executions/m2?sessionId=s1&agentId=other"
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Execution not found for this Agent"}' ]
    api GET "/shell-executions/m2/logs?$owner&cursor=-1"
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Invalid log cursor"}' ]
    signed /shell-executions "$(shell_request m3 'true' '{"kernelMode":"persistent"}')"
    [ "$status_code" = 400 ]
}

@test "FIFO per workspace: cancel a running one while a second waits; the second then completes" {
    signed /shell-executions "$(shell_request a1 'sleep 30')"
    wait_state a1 running
    signed /shell-executions "$(shell_request b1 'echo second')"
    signed /shell-executions "$(shell_request c1 'sleep 30')"
    api GET "/shell-executions/b1?$owner"
    [ "$(jq -r .state <<< "$output")" = queued ]
    # Cancel answers 202 with the record as it is now.
    api POST "/shell-executions/a1/cancel?$owner"
    [ "$status_code" = 202 ] && [ "$(jq -r .id <<< "$output")" = a1 ]
    wait_state a1 cancelled
    a_finished=$(jq -r .finishedAt <<< "$output")
    [ "$(jq -r '.version.digest | type' <<< "$output")" = string ]
    wait_state b1 completed
    [ "$(jq -r .result.stdout <<< "$output")" = second ]
    [[ "$(jq -r .startedAt <<< "$output")" > "$a_finished" || "$(jq -r .startedAt <<< "$output")" = "$a_finished" ]]
    # A queued one cancelled before its turn never starts and has no version.
    wait_state c1 running
    signed /shell-executions "$(shell_request d1 'touch never')"
    api POST "/shell-executions/d1/cancel?$owner"
    wait_state d1 cancelled
    [ "$(jq -r 'has("startedAt"), has("version")' <<< "$output" | tr '\n' ' ')" = "false false " ]
    api POST "/shell-executions/c1/cancel?$owner"
    wait_state c1 cancelled
    [ ! -e "$PROJECT/never" ]
}

@test "a cancel sbx-run cannot act on (stopped) is followed by SIGKILL; the run ends and its sandbox with it" {
    marker="sbx-managed-$$-$RANDOM"
    signed /shell-executions "$(shell_request w1 "sleep 60 # $marker")"
    wait_state w1 running
    # The supervisor of this run (warm standbys wait beside it) says its pid in its run directory.
    sup=$(jq -r .pid "$WORK"/data/runner-executions/runs/*/supervisor.json)
    [ "$(ps -o ppid= -p "$sup" | tr -d ' ')" = "$HTTPD_PID" ]
    kill -STOP "$sup"
    api POST "/shell-executions/w1/cancel?$owner"
    [ "$status_code" = 202 ]
    # SIGTERM stays pending on a stopped process; the SIGKILL that follows does not.
    timeout 30 tail --pid="$sup" -f /dev/null
    # Its sandbox (bwrap, whose argv names this test's data dir) goes with it.
    for pid in $(pgrep -f "bwrap .*$WORK"); do timeout 10 tail --pid="$pid" -f /dev/null; done
    run pgrep -f "bwrap .*$WORK"
    assert_failure
    wait_state w1 cancelled failed
}

@test "kill -9 of sbx-httpd: the running record reads unknown after restart, nothing is left running, the id stays used" {
    marker="sbx-managed-$$-$RANDOM"
    signed /shell-executions "$(shell_request r1 "sleep 60 # $marker")"
    wait_state r1 running
    kill -9 "$HTTPD_PID"
    wait "$HTTPD_PID" || true
    # The sandbox dies with its sbx-run, which dies with sbx-httpd.
    for pid in $(pgrep -f "$marker"); do timeout 10 tail --pid="$pid" -f /dev/null; done
    run pgrep -f "$marker"
    assert_failure
    httpd_start
    api GET "/shell-executions/r1?$owner"
    [ "$(jq -r .state <<< "$output")" = unknown ]
    [ "$(jq -r .error <<< "$output")" = "Runner restarted before completion was recorded; the command was not replayed" ]
    signed /shell-executions "$(shell_request r1 'true')"
    [ "$status_code" = 400 ]
    # The workspace is free again.
    signed /shell-executions "$(shell_request r2 'echo again')"
    wait_state r2 completed
}
