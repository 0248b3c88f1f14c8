#!/usr/bin/env bats
# Managed executions as Server-Sent Events (sbx's extension): followed to
# the end byte-exact against the paged logs, resumed with Last-Event-ID
# without a gap or a repeat, bounded per client, in clients and in
# lifetime, authenticated, kept alive while idle.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

owner='sessionId=s1&agentId=main'

# follow ID OUT [OPTION...]: the SSE client (sse-client.py) into OUT; its
# summary in $output.
follow() {
    local id=$1 out=$2
    shift 2
    run python3 "$FIXTURES/sse-client.py" "$BASE" "$TOKEN" "$id" "$owner" "$out" "$@"
    [ "$status" -eq 0 ] || fail "sse-client: $output"
}

# same_as_pages ID OUT: OUT's streams are the paged logs' bytes, exactly.
same_as_pages() {
    mkdir -p "$WORK/pages-$1"
    python3 "$FIXTURES/log-pages.py" "$BASE" "$TOKEN" "$1" "$owner" "$WORK/pages-$1" >/dev/null
    for s in stdout stderr; do
        [ -s "$WORK/pages-$1/$s" ] || fail "$1: no $s in the paged logs"
        [ "$(sha256sum < "$2/$s")" = "$(sha256sum < "$WORK/pages-$1/$s")" ] ||
            fail "$1: $s differs: $(wc -c < "$2/$s") bytes streamed, $(wc -c < "$WORK/pages-$1/$s") paged"
    done
}

# ids_in_order FILE: every id of FILE's events once, in increasing order.
ids_in_order() {
    jq -rs '[.[] | select(.id != null) | .id | split(".") | map(tonumber) | .[0] * 1000000 + (.[1] // 0)]
            | if . == (sort | unique) then "ok" else "ids repeat or go back: \(.)" end' "$1"
}

@test "a client follows a managed execution to its result: output byte-exact against the paged logs" {
    code='for i in $(seq 30); do head -c 3000 /dev/urandom | base64; printf "err %d é \000\n" "$i" >&2; sleep 0.02; done
sbx-report progress 0.5
python3 -c "import ctypes; ctypes.CDLL(None).syscall(101, 0, 0, 0, 0)"
echo done'
    signed /shell-executions "$(shell_request f1 "$code")"
    [ "$status_code" = 202 ]
    follow f1 "$WORK/sse"
    [ "$(jq -r '[.status, .ended, .contentType] | @tsv' <<< "$output")" = "$(printf '200\tresult\ttext/event-stream; charset=utf-8')" ]
    same_as_pages f1 "$WORK/sse"
    [ "$(ids_in_order "$WORK/sse/events.jsonl")" = ok ]
    # Output ids are the log cursors; state changes, sbx-run's (worker)
    # events and the result are there, the result last.
    [ "$(jq -s '[.[] | select(.event == "output") | (.id | tonumber) == .data.cursor] | all' "$WORK/sse/events.jsonl")" = true ]
    [ "$(jq -rs '[.[] | select(.event == "state") | .data.state] | join(" ")' "$WORK/sse/events.jsonl")" = "queued running completed" ]
    [ "$(jq -s '[.[] | select(.event == "worker.progress") | .data.progress]' "$WORK/sse/events.jsonl" | jq -c .)" = '[0.5]' ]
    [ "$(jq -s '[.[] | select(.event == "started") | .data.executionId]' "$WORK/sse/events.jsonl" | jq -c .)" = '["f1"]' ]
    # A refused syscall reaches the client as it happens, explained.
    [ "$(jq -rs '[.[] | select(.event == "denial") | .data.denial | "\(.kind) \(.what) \(.count)"] | join(",")' "$WORK/sse/events.jsonl")" = "seccomp ptrace 1" ]
    [ "$(jq -rs '.[-1] | [.event, .data.state, .data.result.exitCode, (.data.result | has("stdout"))] | @tsv' "$WORK/sse/events.jsonl")" = "$(printf 'result\tcompleted\t0\tfalse')" ]
    # A reconnect from the result: nothing more will come (204 ends an EventSource).
    follow f1 "$WORK/after" --last-event-id "$(jq -rs '.[-1].id' "$WORK/sse/events.jsonl")"
    [ "$(jq .status <<< "$output")" = 204 ]
}

@test "a client that disconnects mid-way and reconnects with Last-Event-ID misses nothing and gets nothing twice" {
    code='for i in $(seq 60); do head -c 6000 /dev/urandom | base64; echo "err $i" >&2; sleep 0.05; done'
    signed /shell-executions "$(shell_request r1 "$code")"
    follow r1 "$WORK/sse" --stop-after 5
    [ "$(jq -r .ended <<< "$output")" = stopped ]
    first=$(jq -r .lastId <<< "$output")
    api GET "/shell-executions/r1?$owner"
    [ "$(jq -r .state <<< "$output")" = running ] # mid-way: the run goes on
    follow r1 "$WORK/sse" --last-event-id "$first"
    [ "$(jq -r .ended <<< "$output")" = result ]
    same_as_pages r1 "$WORK/sse"
    [ "$(ids_in_order "$WORK/sse/events.jsonl")" = ok ]
    # From an output's id alone (a cursor of the paged logs) likewise.
    rm -rf "$WORK/again"
    follow r1 "$WORK/again" --stop-after 3
    follow r1 "$WORK/again" --last-event-id "$(jq -r .lastId <<< "$output")"
    same_as_pages r1 "$WORK/again"
    [ "$(ids_in_order "$WORK/again/events.jsonl")" = ok ]
}

@test "a stream ends at its lifetime with an end event; reconnecting resumes where it stopped" {
    httpd_stop
    httpd_start SBX_SSE_MAX_SECONDS=1
    code='for i in $(seq 8); do echo "line $i"; echo "err $i" >&2; sleep 0.5; done'
    signed /shell-executions "$(shell_request l1 "$code")"
    follow l1 "$WORK/sse"
    [ "$(jq -r .ended <<< "$output")" = end:lifetime ]
    [ "$(jq -rs '.[-1] | [.event, .id == null] | @tsv' "$WORK/sse/events.jsonl")" = "$(printf 'end\ttrue')" ]
    for _ in $(seq 60); do
        follow l1 "$WORK/sse" --last-event-id "$(jq -r .lastId <<< "$output")"
        [ "$(jq -r .ended <<< "$output")" = end:lifetime ] || break
    done
    [ "$(jq -r .ended <<< "$output")" = result ]
    same_as_pages l1 "$WORK/sse"
    [ "$(ids_in_order "$WORK/sse/events.jsonl")" = ok ]
}

@test "200 slow clients: executions complete, the daemon's memory stays bounded, the client past the cap gets 503" {
    httpd_stop
    httpd_start SBX_SSE_MAX_CLIENTS=200
    signed /shell-executions "$(shell_request big 'head -c 12000000 /dev/urandom | base64; echo end >&2')"
    wait_state big running completed
    mkfifo "$WORK/slow-ready" "$WORK/slow-stop"
    python3 "$FIXTURES/sse-slow-clients.py" "$PORT" "$TOKEN" "/shell-executions/big/events?$owner" 200 "$HTTPD_PID" \
        "$WORK/slow-ready" < "$WORK/slow-stop" > "$WORK/slow.json" &
    slow=$!
    exec 9>"$WORK/slow-stop"
    await_fifo "$WORK/slow-ready" ready
    [ "$ready" = 'ready {"200": 200}' ]
    # The 201st: 503 naming the cap.
    run curl -sS -o "$WORK/body" -w '%{http_code}' -H "authorization: Bearer $TOKEN" "$BASE/shell-executions/big/events?$owner"
    [ "$output" = 503 ]
    [ "$(jq -r .error "$WORK/body")" = "The runner serves as many event streams as it allows (200, SBX_SSE_MAX_CLIENTS); retry later" ]
    # Executions meanwhile: one in another workspace, one after big in its own.
    mkdir -p "$WORK/data/projects/p2" && chmod 777 "$WORK/data/projects/p2"
    signed /shell-executions "$(PROJECT="$WORK/data/projects/p2" shell_request w1 'head -c 3000000 /dev/urandom | sha256sum')"
    signed /shell-executions "$(shell_request w2 'echo after')"
    wait_state w1 completed
    wait_state w2 completed
    [ "$(jq -r .result.stdout <<< "$output")" = after ]
    echo stop >&9
    exec 9>&-
    wait "$slow"
    cat "$WORK/slow.json" >&3
    # Every slow client still connected, reading at its own pace, far
    # behind the 16 MB of output; the daemon grew by less than the bound
    # sbx-httpd(8) gives per stream (EVENT STREAMS: 402 KiB).
    [ "$(jq .open "$WORK/slow.json")" = 200 ]
    [ "$(jq .bytes "$WORK/slow.json")" -gt 0 ] && [ "$(jq .bytes "$WORK/slow.json")" -lt 100000000 ]
    # (An ASan build holds freed memory in its quarantine: no bound then.)
    if grep -qa __asan_init "$SBX_BIN/sbx-httpd"; then
        echo "# ASan build: the memory bound is not checked" >&3
    else
        [ "$(jq '.maxRssKiB - .startRssKiB' "$WORK/slow.json")" -lt $((200 * 402)) ]
    fi
}

@test "unauthenticated is 401, an unknown id or another owner's 404, a bad Last-Event-ID 400" {
    signed /shell-executions "$(shell_request a1 'echo hi')"
    wait_state a1 completed
    run curl -sS -o "$WORK/body" -w '%{http_code}' "$BASE/shell-executions/a1/events?$owner"
    [ "$output" = 401 ] && [ "$(cat "$WORK/body")" = '{"error":"Unauthorized"}' ]
    run curl -sS -o "$WORK/body" -w '%{http_code}' -H "authorization: Bearer wrong" "$BASE/shell-executions/a1/events?$owner"
    [ "$output" = 401 ]
    api GET "/shell-executions/nope/events?$owner"
    [ "$status_code" = 404 ] && [ "$output" = '{"error":"Execution not found for this Agent"}' ]
    api GET "/shell-executions/a1/events?sessionId=s1&agentId=other"
    [ "$status_code" = 404 ]
    for bad in x 1.2.3 -1 1. .1 12345678901234567; do
        api GET "/shell-executions/a1/events?$owner" -H "last-event-id: $bad"
        [ "$status_code" = 400 ] && [ "$output" = '{"error":"Invalid Last-Event-ID"}' ] || fail "$bad: $status_code $output"
    done
    # The paged logs are unchanged by the events beside them.
    api GET "/shell-executions/a1/logs?$owner"
    [ "$output" = '{"chunks":[{"cursor":1,"stream":"stdout","text":"hi\n"}],"nextCursor":1,"truncated":false,"retentionTruncated":false}' ]
}

@test "an idle stream gets keep-alive comments" {
    httpd_stop
    httpd_start SBX_SSE_KEEPALIVE_SECONDS=1
    signed /shell-executions "$(shell_request k1 'echo start; sleep 8; echo end')"
    follow k1 "$WORK/sse" --until-comment --timeout 20
    [ "$(jq -r '[.ended, .comments] | @tsv' <<< "$output")" = "$(printf 'comment\t1')" ]
    api POST "/shell-executions/k1/cancel?$owner"
    wait_state k1 cancelled
}
