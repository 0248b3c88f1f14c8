#!/usr/bin/env bats
# sbx-httpd against hostile clients on loopback: silent connections, slow
# and endless bodies, more connections and requests than it allows.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

threads() { awk '/^Threads/ { print $2 }' "/proc/$HTTPD_PID/status"; }

# hold N: N keep-alive connections, each past one answered GET /health (so
# the daemon has certainly accepted it), held by a python child until
# $WORK/release exists; "ready" on $WORK/held once all are open.
hold() {
    rm -f "$WORK/release" "$WORK/held" && mkfifo "$WORK/held"
    python3 - "$PORT" "$1" "$WORK/release" > "$WORK/held" <<'PY' &
import os, resource, socket, sys, time
port, n, release = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
conns, codes = [], {}
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(65536)
    code = head.split(b" ", 2)[1].decode()
    codes[code] = codes.get(code, 0) + 1
    conns.append(s)
print("ready", " ".join("%s=%d" % kv for kv in sorted(codes.items())), flush=True)
sys.stdout.close()
while not os.path.exists(release):
    time.sleep(0.05)
PY
    holder=$!
    read -r held_line < "$WORK/held"
}

release() {
    touch "$WORK/release"
    wait "$holder"
}

@test "1,500 idle connections: /health and a signed execution answer, and the daemon holds no thread per connection" {
    hold 1500
    [ "$held_line" = "ready 200=1500" ] || fail "$held_line"
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/health"
    assert_output 200
    signed /execute-shell "$(shell_request idle-1 'echo alive')"
    [ "$status_code" = 200 ] || fail "$output"
    [ "$(jq -r .stdout <<< "$output")" = alive ]
    # The main thread, two poll threads and the head watchdog, and perhaps
    # the last request's thread still on its way out: never one per connection.
    [ "$(threads)" -le 8 ] || fail "$(threads) threads for 1,500 connections"
    release
}

@test "past SCIENCE_AGENT_MAX_CONNECTIONS a request is 503 naming the cap, and service returns once clients leave" {
    httpd_stop
    httpd_start SCIENCE_AGENT_MAX_CONNECTIONS=16
    hold 20
    [ "$held_line" = "ready 200=16 503=4" ] || fail "$held_line"
    run curl -sS -i "$BASE/health"
    assert_line --partial "HTTP/1.1 503"
    assert_line --partial "retry-after: 1"
    assert_line --partial '"error":"The runner has as many connections open as it allows (16, SCIENCE_AGENT_MAX_CONNECTIONS); retry later"'
    release
    for _ in $(seq 100); do
        [ "$(curl -sS -o /dev/null -w '%{http_code}' "$BASE/health")" = 200 ] && return 0
        sleep 0.1
    done
    fail "still refused after the clients left"
}

@test "past SCIENCE_AGENT_MAX_REQUESTS an authenticated request is 503 while /health answers" {
    httpd_stop
    httpd_start SCIENCE_AGENT_MAX_REQUESTS=1
    printf '%s' "$(shell_request busy 'touch started; sleep 60')" > "$WORK/busy.json"
    read -r ts sig < <(sign "$WORK/busy.json")
    curl -sS -o /dev/null -H "authorization: Bearer $TOKEN" -H "x-science-execution-timestamp: $ts" \
        -H "x-science-execution-signature: $sig" --data-binary @"$WORK/busy.json" "$BASE/execute-shell" &
    busy=$!
    for _ in $(seq 300); do [ -e "$PROJECT/started" ] && break; sleep 0.05; done
    [ -e "$PROJECT/started" ]
    api GET /status
    [ "$status_code" = 503 ] || fail "$status_code $output"
    [ "$(jq -r .error <<< "$output")" = "The runner is answering as many requests as it allows (1, SCIENCE_AGENT_MAX_REQUESTS); retry later" ]
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/health"
    assert_output 200
    kill "$busy"
    wait "$busy" || true
    # The client went: its execution is aborted and the slot comes back.
    for _ in $(seq 200); do
        api GET /status
        [ "$status_code" = 200 ] && [ "$(jq '.activeExecutions | length' <<< "$output")" = 0 ] && return 0
        sleep 0.1
    done
    fail "the slot never came back: $status_code $output"
}

@test "an endless unauthenticated body is cut off after 16 MiB dropped and the daemon answers on" {
    run python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /execute-shell HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
chunk = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
sent = 0
try:
    while sent < 256:
        s.sendall(chunk)
        sent += 1
except OSError:
    pass
print(sent)
PY
    assert_success
    [ "$output" -lt 256 ] || fail "all of 256 MiB was read"
    [ "$output" -ge 16 ] || fail "cut off after $output MiB"
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/health"
    assert_output 200
}

@test "clients that hang up mid-request free their slots at once, not at the idle timeout" {
    httpd_stop
    httpd_start SCIENCE_AGENT_MAX_CONNECTIONS=16
    run python3 - "$PORT" <<'PY'
import socket, sys
held = []
for i in range(80):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n")  # half a head, then gone
    held.append(s)
for s in held:
    s.close()
PY
    assert_success
    # Well inside the 30 s idle timeout: 5 s, polled.
    for _ in $(seq 50); do
        [ "$(curl -sS -o /dev/null -w '%{http_code}' "$BASE/health")" = 200 ] && return 0
        sleep 0.1
    done
    fail "slots still held 5 s after the clients left"
}

@test "a request head trickled a byte at a time is cut at 30 s, however often a byte comes" {
    run python3 - "$PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\nX-a: ")
start = time.monotonic()
s.settimeout(2)
while time.monotonic() - start < 60:
    try:
        s.send(b"a")  # every 2 s: never 30 s of silence
        if s.recv(1) == b"":
            break
    except socket.timeout:
        continue
    except OSError:
        break
print(int(time.monotonic() - start))
PY
    assert_success
    [ "$output" -ge 29 ] && [ "$output" -lt 45 ] || fail "closed after $output s"
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/health"
    assert_output 200
}

@test "a body sent to /health is dropped unread: 40 bodies of 1.9 MB buffer nothing" {
    run rss_growth_with_bodies 40 "GET /health HTTP/1.1"
    assert_success
    [ "$output" -lt 30000 ] || fail "RSS grew by $output KiB"
}
