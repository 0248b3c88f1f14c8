#!/usr/bin/env bats
# The gateway's bounds per peer (the SO_PEERCRED uid of a Unix connection:
# each workspace's sandboxes run as their own uid): a peer at its caps gets
# 429 while another is answered at once; a head that never completes is
# closed; the audit log stays under its cap, a peer's refusals folded into
# one line per interval. Loopback only: refused names never reach a lookup.

load egress_helpers

refused=$'GET http://other.test/ HTTP/1.1\r\n\r\n'

# hold NAME [BYTES]: a connection to the gateway that sends BYTES (printf
# escapes; none by default) and stays open; what the gateway answers lands
# in $WORK/NAME.out, then "EOF" once it closes. Returns once it is sent.
hold() {
    mkfifo "$WORK/$1.fifo"
    printf '%b' "${2:-}" > "$WORK/$1.in"
    python3 "$FIXTURES/uds-hold.py" "$SOCK" "$WORK/$1.fifo" < "$WORK/$1.in" > "$WORK/$1.out" &
    HOLDERS+=($!)
    await_fifo "$WORK/$1.fifo"
}

# tunnel NAME: a CONNECT tunnel the gateway has answered 200, held open.
tunnel() {
    mkfifo "$WORK/$1.fifo"
    python3 "$FIXTURES/uds-request.py" "$SOCK" "$WORK/$1.fifo" <<< $'CONNECT api.test:'"$PORT"$' HTTP/1.1\r\n\r\n' &
    HOLDERS+=($!)
    local answer
    await_fifo "$WORK/$1.fifo" answer
    [[ "$answer" == *"200 Connection Established"* ]]
}

stop_gateway() {
    kill "$GW_PID"
    wait "$GW_PID" || true
    GW_PID=
}

@test "one sandbox holding its per-peer cap of idle connections gets 429 for one more; another sandbox of the same gateway is answered at once" {
    [ "$(id -u)" -eq 0 ] || skip "as root only: a second peer needs a second uid"
    # As under a root sbx-run: each workspace's sandbox has its own uid and
    # the shared sandbox gid, which the socket's group admits.
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1" --socket-owner 10001:10001 \
        --peer-max-connections 4 --head-timeout-ms 60000
    net=$(jq -cn --arg s "$SOCK" '{network: {mode: "domain-allowlist", socket: $s}}')
    cat > "$WS/hold.py" <<'PY'
import socket, sys
def answer(s):
    s.settimeout(30)
    f = s.makefile("rb")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = f.readline()
        if not line:
            break
        head += line
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    return (head + f.read(length[0] if length else 0)).decode()
held = [socket.create_connection(("127.0.0.1", 18118)) for _ in range(4)]
extra = socket.create_connection(("127.0.0.1", 18118))
extra.sendall(b"GET http://api.test/ HTTP/1.1\r\n\r\n")
print(answer(extra), flush=True)
open("/workspace/held", "w").write("held\n")
open("/workspace/release").read()
# The held ones were kept, not dropped: one of them is served now.
held[0].sendall(("GET http://api.test:%s/late HTTP/1.1\r\n\r\n" % sys.argv[1]).encode())
print(answer(held[0]), flush=True)
PY
    mkfifo "$WS/held" "$WS/release"
    chmod 666 "$WS/held" "$WS/release"
    sbx-launch --run-as 10001:10001 - > "$WORK/a.out" 2>&1 <<< "$(spec_sh "python3 /workspace/hold.py $PORT" "$net")" &
    HOLDERS+=($!)
    await_fifo "$WS/held"
    # The other sandbox, while the first holds its cap: its refusal and its
    # allowed request are answered (curl gives up after 20 s: no hang).
    run --separate-stderr sbx-launch --run-as 10002:10001 - <<< "$(spec_sh \
        "curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' http://other.test/;
         curl -sS --max-time 20 --fail http://api.test:$PORT/other-sandbox" "$net")"
    assert_success
    assert_line --index 0 "403"
    assert_line "path=/other-sandbox"
    echo go > "$WS/release"
    wait "${HOLDERS[0]}"
    run cat "$WORK/a.out"
    assert_line --index 0 --partial "429 Too Many Requests"
    assert_output --partial "at most 4 concurrent connections per sandbox"
    assert_output --partial "path=/late"
    # The log names each peer.
    run jq -sc '[map(select(.status == 429) | .peer), map(select(.status == 403) | .peer)]' "$LOG"
    assert_output '[[10001],[10002]]'
}

@test "a peer over its per-peer caps gets 429 with the reason: open connections, and connections still sending their head" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1" --peer-max-connections 2
    tunnel one
    tunnel two
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< "$refused"
    assert_line --index 0 --partial "429 Too Many Requests"
    assert_output --partial "at most 2 concurrent connections per sandbox"
    stop_gateway
    gateway "$private_policy" --peer-max-heads 1 --head-timeout-ms 60000
    hold idle
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< "$refused"
    assert_line --index 0 --partial "429 Too Many Requests"
    assert_output --partial "at most 1 connections per sandbox still sending a request head"
    run jq -sc 'map(select(.status == 429) | .decision) | unique' "$LOG"
    assert_output '["busy"]'
}

@test "a head that never completes is closed after --head-timeout-ms: 408 when part of it came, a plain close when none did" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1" --head-timeout-ms 300
    # Each read ends in EOF; timeout(1) turns a gateway that never closes into a failure.
    printf 'GET http://api.test:%s/ HTTP/1.1\r\nX-Slow: 1' "$PORT" > "$WORK/partial"
    run timeout 20 python3 "$FIXTURES/uds-hold.py" "$SOCK" /dev/null < "$WORK/partial"
    assert_success
    assert_line --index 0 --partial "408 Request Timeout"
    assert_output --partial "did not arrive within 300 ms"
    assert_line --index -1 "EOF"
    run timeout 20 python3 "$FIXTURES/uds-hold.py" "$SOCK" /dev/null < /dev/null
    assert_success
    assert_output "EOF"
    # Kept alive after an answer, the next head has the same time.
    printf 'GET http://api.test:%s/one HTTP/1.1\r\n\r\n' "$PORT" > "$WORK/one"
    run timeout 20 python3 "$FIXTURES/uds-hold.py" "$SOCK" /dev/null < "$WORK/one"
    assert_success
    assert_line "path=/one"
    assert_line --index -1 "EOF"
    # Through a sandbox's bridge: a connection that sends nothing reads EOF.
    net_sandbox "python3 -c 'import socket; s = socket.create_connection((\"127.0.0.1\", 18118)); s.settimeout(20); print(len(s.recv(1)))'"
    assert_success
    assert_output "0"
    run jq -sc 'map(select(.decision == "timeout") | .status)' "$LOG"
    assert_output '[408]'
}

@test "the audit log stays under its cap through 100,000 refused connections: a peer's refusals fold into one line per interval" {
    gateway "$private_policy" --log-max-bytes 65536
    printf '%s' "$refused" > "$WORK/refused"
    run timeout 300 "$SBX_BIN/test/uds-flood" "$SOCK" 100000 8 < "$WORK/refused"
    assert_success
    assert_output "403 100000"
    stop_gateway # writes the summary of the interval still open
    [ "$(stat -c %s "$LOG")" -le 65536 ]
    [ ! -s "$LOG.1" ] || fail "rotated: $(wc -c < "$LOG.1") bytes in $LOG.1"
    # Every refusal is in it: the first of each interval whole, the rest counted.
    run jq -s 'map(if .decision == "refusals" then .count else 1 end) | add' "$LOG"
    assert_output 100000
    run jq -r 'select(.decision == "refusals") | .reason' "$LOG"
    assert_line --index 0 --regexp "^peer uid $(id -u): [0-9]+ refusals of other\.test:80 \(403: other\.test:80 is not in the sandbox network allowed domains\) in the last [0-9]+ s$"
    # Every refusal logged whole: the log is rotated at its cap, one
    # generation kept, each line whole. A log longer than the cap from
    # before keeps its last whole lines.
    LOG="$WORK/whole.log"
    seq 1 10000 | sed 's/.*/{"old":&}/' > "$LOG"
    gateway "$private_policy" --log-max-bytes 16384 --log-refusal-burst 1000000
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< "$refused"
    assert_line --index 0 --partial "403 Forbidden"
    [ "$(stat -c %s "$LOG.1")" -le 16384 ] && [ "$(stat -c %s "$LOG.1")" -gt 16000 ]
    run jq -sc '[.[0].old > 1, .[-1].old]' "$LOG.1"
    assert_output '[true,10000]'
    run jq -sc 'map(.decision)' "$LOG"
    assert_output '["denied"]'
    run timeout 300 "$SBX_BIN/test/uds-flood" "$SOCK" 2000 4 < "$WORK/refused"
    assert_output "403 2000"
    stop_gateway
    [ "$(stat -c %s "$LOG")" -le 16384 ] && [ "$(stat -c %s "$LOG.1")" -le 16384 ]
    [ "$(stat -c %s "$LOG.1")" -gt 8192 ]
    run jq -s 'map(select(.decision == "denied")) | length' "$LOG.1" "$LOG"
    [ "$output" -gt 40 ] && [ "$output" -lt 2000 ]
}
