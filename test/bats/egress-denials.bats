#!/usr/bin/env bats
# Egress refusals as denials: the gateway logs each refusal with the
# connecting pid (the sandbox's bridge), counts those past its log burst
# per pid and target, and sbx-run turns its own bridge's lines into
# "egress" denials while the run goes on. Everything stays on loopback:
# refused names are refused by policy before any lookup.

load egress_helpers

policy='{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":true}'

# request ID CODE WS: an execution request with the allowlist above.
request() {
    jq -cn --arg id "$1" --arg code "$2" --arg ws "$3" --argjson net "$policy" \
        '{executionId: $id, language: "shell", code: $code, workspace: $ws, timeoutMs: 60000, network: $net}'
}

# start_run ID WS CODE: sbx-run in the background (a job: teardown ends
# it), its events read as they come through a FIFO. The gateways live
# below a directory closed to the sandbox's uid (as a data directory may
# be): the sandbox gets its socket by fd.
start_run() {
    local fd
    mkdir -p -m 700 "$WORK/private"
    mkfifo "$WORK/$1.pipe"
    sbx-run --no-snapshot --state-dir "$WORK/state" --egress-dir "$WORK/private/eg" --egress-idle-s 1 \
        --egress-resolve "api.test:$PORT:127.0.0.1" - <<< "$(request "$1" "$3" "$2")" \
        > "$WORK/$1.pipe" 2> "$WORK/$1.err" &
    exec {fd}< "$WORK/$1.pipe"
    printf -v "FD_$1" '%s' "$fd"
}

# until_event ID EVENT: ID's events (kept in $WORK/ID.events) up to its
# first EVENT, which must come within 30 s.
until_event() {
    local fd="FD_$1" line
    while IFS= read -r -t 30 -u "${!fd}" line; do
        printf '%s\n' "$line" >> "$WORK/$1.events"
        [[ "$line" != *"\"event\":\"$2\""* ]] || return 0
    done
    fail "no $2 event from $1: $(cat "$WORK/$1.events" "$WORK/$1.err")"
}

# release WS: the workload waiting on WS/release goes on.
release() {
    timeout 20 sh -c 'echo go > "$1"' sh "$1/release" || fail "nobody waits on $1/release"
}

# finish ID: the rest of ID's events; the result's denials in $output.
finish() {
    until_event "$1" finished
    output=$(tail -n 1 "$WORK/$1.events" | jq -c .result.denials)
}

# waiting_workspace DIR: a workspace with a FIFO its workload waits on.
waiting_workspace() {
    mkdir -p "$1"
    mkfifo -m 666 "$1/release"
}

# refusals_then_wait HOST N: N requests for HOST, then the allowed host, then
# a wait on the FIFO release.
refusals_then_wait() {
    cat <<EOF
for i in \$(seq $2); do curl -sS -o /dev/null -w '%{http_code} ' http://$1/x; done
curl -sS -o /dev/null -w 'allowed=%{http_code} ' http://api.test:$PORT/ok
read -r go < release
echo "released=\$go"
EOF
}

@test "an unlisted host's refusals are one egress denial with their count, told while the run goes on; the allowed host is none" {
    waiting_workspace "$WORK/w1"
    start_run d1 "$WORK/w1" "$(refusals_then_wait unlisted.test 3)"
    # The denial is an event while the workload still waits (only the test
    # releases it, after the event came).
    until_event d1 denial
    tail -n 1 "$WORK/d1.events" | jq -e '.denial | .kind == "egress" and .what == "unlisted.test:80"'
    release "$WORK/w1"
    finish d1
    jq -e 'length == 1' <<< "$output"
    jq -e '.[0] | .kind == "egress" and .what == "unlisted.test:80" and .count == 3 and .status == 403
        and .decision == "denied" and .cause == "not-allowed" and .host == "unlisted.test" and .port == 80
        and (.policy | test("^egress allowlist [0-9a-f]{16}$")) and (.remedy | contains("allowedDomains"))
        and (.reason | contains("not in the sandbox network allowed domains"))' <<< "$output"
    run jq -r .result.stdout <(tail -n 1 "$WORK/d1.events")
    assert_output --partial "403 403 403 allowed=200 released=go"
    # Every denial event came before "finished".
    run jq -sc 'map(.event) | [index("denial"), index("finished")] | .[0] < .[1]' "$WORK/d1.events"
    assert_output true
}

@test "two concurrent runs sharing one gateway each see only their own refusals, past the log's burst too" {
    waiting_workspace "$WORK/wa"
    waiting_workspace "$WORK/wb"
    start_run ra "$WORK/wa" "$(refusals_then_wait a-only.test 12)"
    start_run rb "$WORK/wb" "$(refusals_then_wait b-only.test 7)"
    # Both hold the gateway, each waiting, when both were told of a refusal.
    until_event ra denial
    until_event rb denial
    release "$WORK/wa"
    release "$WORK/wb"
    finish ra
    run jq -c 'map({what, count})' <<< "$output"
    assert_output '[{"what":"a-only.test:80","count":12}]'
    finish rb
    run jq -c 'map({what, count})' <<< "$output"
    assert_output '[{"what":"b-only.test:80","count":7}]'
    # One gateway served both; its log names each run's bridge, and the
    # refusals past the burst were summed up per pid (on sbx-run's request
    # at the end, long before the 10 s interval closed).
    run ls "$WORK"/private/eg/*.sock
    [ "${#lines[@]}" -eq 1 ]
    log=$(ls "$WORK"/private/eg/*.log)
    run jq -s 'map(select(.decision != "allowed") | .peerPid) | unique | length' "$log"
    assert_output 2
    run jq -s 'map(select(.decision == "refusals" and .host == "a-only.test")) | length >= 1 and all(.peerPid > 0)' "$log"
    assert_output true
    run jq -s 'map(select(.host == "a-only.test") | if .decision == "refusals" then .count else 1 end) | add' "$log"
    assert_output 12
}

@test "past the burst the gateway counts refusals per pid and target, and writes a pid's counts when its starter asks" {
    gateway "$policy" --log-refusal-burst 1 --log-refusal-interval-s 3600
    run python3 "$FIXTURES/uds-refusals.py" "$SOCK" x.test:4 y.test:3
    assert_success
    read -r pid statuses <<< "${lines[0]}"
    [ "$statuses" = "403 403 403 403 403 403 403" ]
    # The first of the interval, then the first of each target: whole.
    run jq -sc --argjson p "$pid" 'map(select(.peerPid == $p) | [.host, .decision])' "$LOG"
    assert_output '[["x.test","denied"],["x.test","denied"],["y.test","denied"]]'
    if [ "$(id -u)" -eq 0 ]; then
        # The sandbox's uid may reach the socket but not ask for counts.
        cp "$FIXTURES/uds-refusals.py" "$WORK/"
        run setpriv --reuid="$(expected_uid)" --regid="$(expected_uid)" --clear-groups \
            /usr/bin/python3 "$WORK/uds-refusals.py" "$SOCK" --flush "$pid"
        assert_line --index 1 "b''"
        run jq -s 'map(select(.decision == "refusals")) | length' "$LOG"
        assert_output 0
    fi
    run python3 "$FIXTURES/uds-refusals.py" "$SOCK" --flush "$pid"
    assert_line --index 1 "b'\\x01'"
    run jq -sc --argjson p "$pid" 'map(select(.decision == "refusals") | {host, count, peerPid: (.peerPid == $p), cause})' "$LOG"
    assert_output '[{"host":"x.test","count":2,"peerPid":true,"cause":"not-allowed"},{"host":"y.test","count":2,"peerPid":true,"cause":"not-allowed"}]'
    # Nothing is counted twice: at exit no summary of that pid is left.
    kill "$GW_PID"
    wait "$GW_PID" || true
    GW_PID=
    run jq -s 'map(if .decision == "refusals" then .count else 1 end) | add' "$LOG"
    assert_output 7
}
