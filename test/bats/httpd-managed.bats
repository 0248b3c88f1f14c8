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

# store_sql SQL: one value from the execution store, read by Python's own
# SQLite, beside the daemon (WAL: a reader never waits on it).
store_sql() {
    python3 - "$WORK/data/runner-executions/executions.sqlite" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print(db.execute(sys.argv[2]).fetchone()[0])
PY
}

# gone ID: polls (bounded) until the record reads as an unknown one.
gone() {
    for _ in $(seq 300); do
        api GET "/shell-executions/$1?$owner"
        [ "$status_code" = 400 ] && return 0
        sleep 0.1
    done
    echo "still there: $1: ${output:0:300}" >&2
    curl -sS "$BASE/health" | jq -c .retention >&2
    return 1
}

@test "retention by age: a finished record and its logs go, a running one stays; /health shows the settings" {
    httpd_stop
    httpd_start SCIENCE_AGENT_EXECUTION_RETENTION_SECONDS=1 SCIENCE_AGENT_EXECUTION_SIGNATURE_MAX_AGE_MS=1000
    run curl -sS "$BASE/health"
    assert_equal "$(jq -c .retention.executions <<<"$output" | jq -c '[.maxAgeSeconds, .maxLogBytes]')" '[1,4294967296]'
    assert_equal "$(jq -c '.retention.remoteSnapshots' <<<"$output")" '{"keepPerWorkspace":20,"graceSeconds":3600}'
    # A running one in its own workspace, older than the retention by the end.
    mkdir -m 777 "$WORK/data/projects/p2"
    signed /shell-executions "$(PROJECT=$WORK/data/projects/p2 shell_request long 'echo long-output; exec sleep 60')"
    wait_state long running
    signed /shell-executions "$(shell_request short 'echo short-output')"
    wait_state short completed
    [ "$(store_sql "SELECT count(*) FROM log_chunks WHERE execution_id = 'short'")" -ge 1 ]
    gone short
    assert_equal "$output" '{"error":"Execution not found for this Agent"}'
    api GET "/shell-executions/short/logs?$owner"
    assert_equal "$status_code $output" '400 {"error":"Execution not found for this Agent"}'
    assert_equal "$(store_sql "SELECT count(*) FROM log_chunks WHERE execution_id = 'short'")" 0
    assert_equal "$(store_sql "SELECT count(*) FROM execution_results WHERE id = 'short'")" 0
    # The running one was as old, and is whole.
    api GET "/shell-executions/long?$owner"
    assert_equal "$(jq -r .state <<<"$output")" running
    api GET "/shell-executions/long/logs?$owner"
    assert_equal "$(jq -c '[.chunks[].text]' <<<"$output")" '["long-output\n"]'
    assert_equal "$(jq .retentionTruncated <<<"$output")" false
    run curl -sS "$BASE/health"
    [ "$(jq .retention.collected.executions <<<"$output")" -ge 1 ]
    api POST "/shell-executions/long/cancel?$owner"
    wait_state long cancelled
}

@test "retention by bytes: the oldest finished logs go first, then records; a running one's logs stay whole" {
    httpd_stop
    httpd_start SCIENCE_AGENT_EXECUTION_LOG_MAX_BYTES=300000 SCIENCE_AGENT_EXECUTION_SIGNATURE_MAX_AGE_MS=1000
    mkdir -m 777 "$WORK/data/projects/p2"
    # 400 kB of logs, more than the cap on its own, while it runs.
    signed /shell-executions "$(PROJECT=$WORK/data/projects/p2 shell_request big 'head -c 400000 /dev/zero | tr "\0" b; exec sleep 60')"
    wait_state big running
    for _ in $(seq 100); do
        [ "$(store_sql "SELECT sum(length(CAST(text AS BLOB))) FROM log_chunks WHERE execution_id = 'big'")" = 400000 ] && break
        sleep 0.1
    done
    for i in 1 2 3; do
        signed /shell-executions "$(shell_request "e$i" "head -c 120000 /dev/zero | tr '\\0' $i")"
        wait_state "e$i" completed
    done
    # The oldest record goes only once every finished log has gone.
    gone e1
    assert_equal "$(store_sql "SELECT count(*) FROM log_chunks WHERE execution_id LIKE 'e%'")" 0
    api GET "/shell-executions/e3?$owner"
    assert_equal "$status_code $(jq -r '.result.stdout | length' <<<"$output")" "200 120000"
    assert_equal "$(jq .logTruncated <<<"$output")" true
    api GET "/shell-executions/e3/logs?$owner"
    assert_equal "$(jq -c '[.chunks, .retentionTruncated]' <<<"$output")" '[[],true]'
    assert_equal "$(store_sql "SELECT sum(length(CAST(text AS BLOB))) FROM log_chunks WHERE execution_id = 'big'")" 400000
    api GET "/shell-executions/big?$owner"
    assert_equal "$(jq -r .state <<<"$output")" running
    held=$(store_sql "SELECT (SELECT COALESCE(sum(length(CAST(text AS BLOB))), 0) FROM log_chunks)
                           + (SELECT COALESCE(sum(length(CAST(result AS BLOB))), 0) FROM execution_results)
                           + (SELECT COALESCE(sum(length(CAST(data AS BLOB))), 0) FROM execution_events)")
    [ "$held" -le $((300000 + 400000)) ] || fail "the store holds $held bytes"
    # Once it has finished, it counts: the store goes under the cap again,
    # and /health says what it holds.
    api POST "/shell-executions/big/cancel?$owner"
    wait_state big cancelled
    for _ in $(seq 150); do
        run curl -sS "$BASE/health"
        [ "$(jq '.retention.executions | .logBytes <= 300000 and .runningLogBytes == 0' <<<"$output")" = true ] && break
        sleep 0.1
    done
    held=$(store_sql "SELECT (SELECT COALESCE(sum(length(CAST(text AS BLOB))), 0) FROM log_chunks)
                           + (SELECT COALESCE(sum(length(CAST(result AS BLOB))), 0) FROM execution_results)
                           + (SELECT COALESCE(sum(length(CAST(data AS BLOB))), 0) FROM execution_events)")
    [ "$held" -le 300000 ] || fail "the store holds $held bytes"
    assert_equal "$(jq .retention.executions.logBytes <<<"$output")" "$held"
}

@test "a store an older sbx-httpd made: its records are measured at startup, then collected like new ones" {
    httpd_stop
    db="$WORK/data/runner-executions/executions.sqlite"
    rm -f "$db" "$db-wal" "$db-shm"
    python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript("""
CREATE TABLE executions (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, agent_id TEXT NOT NULL, workspace TEXT NOT NULL,
 state TEXT NOT NULL, queued_at TEXT NOT NULL, started_at TEXT, finished_at TEXT, result TEXT, error TEXT, version TEXT,
 log_truncated INTEGER NOT NULL DEFAULT 0, next_cursor INTEGER NOT NULL DEFAULT 1);
CREATE TABLE log_chunks (execution_id TEXT NOT NULL, cursor INTEGER NOT NULL, stream TEXT NOT NULL, text TEXT NOT NULL,
 PRIMARY KEY (execution_id, cursor)) WITHOUT ROWID;
CREATE TABLE execution_results (id TEXT PRIMARY KEY, result TEXT NOT NULL);
INSERT INTO executions VALUES ('old1', 's1', 'main', '/w', 'completed', '2020-01-01T00:00:00.000Z',
 '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:01.000Z', NULL, NULL, NULL, 0, 3);
INSERT INTO log_chunks VALUES ('old1', 1, 'stdout', 'héllo '), ('old1', 2, 'stderr', 'wörld');
INSERT INTO execution_results VALUES ('old1', '{"exitCode":0}');
""")
db.commit()
PY
    httpd_start SCIENCE_AGENT_EXECUTION_RETENTION_SECONDS=0
    for _ in $(seq 50); do
        run curl -sS "$BASE/health"
        [ "$(jq -r '.retention.collected.at | type' <<<"$output")" = string ] && break
        sleep 0.1
    done
    # 7 + 6 bytes of UTF-8 in its chunks, 14 of result, and the result
    # event it got at startup (for its event stream).
    event=$(store_sql "SELECT length(CAST(data AS BLOB)) FROM execution_events WHERE execution_id = 'old1' AND type = 'result'")
    [ "$event" -gt 0 ]
    assert_equal "$(jq .retention.executions.logBytes <<<"$output")" $((27 + event))
    api GET "/shell-executions/old1/logs?$owner"
    assert_equal "$(jq -c '[.chunks[].text]' <<<"$output")" '["héllo ","wörld"]'
    httpd_stop
    httpd_start SCIENCE_AGENT_EXECUTION_RETENTION_SECONDS=1
    gone old1
    assert_equal "$(store_sql "SELECT count(*) FROM log_chunks")" 0
    assert_equal "$(store_sql "SELECT count(*) FROM execution_events")" 0
}
