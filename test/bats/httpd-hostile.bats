#!/usr/bin/env bats
# sbx-httpd against hostile clients on loopback: silent connections, slow
# and endless bodies, more connections and requests than it allows.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

threads() { awk '/^Threads/ { print $2 }' "/proc/$HTTPD_PID/status"; }

# hold N: N keep-alive connections, each past one answered GET /health (so
# the daemon has certainly accepted it), held by a python child until a
# line arrives on the $WORK/release FIFO; "ready" on $WORK/held once all
# are open. On release each hangs up and waits for the daemon's close.
hold() {
    rm -f "$WORK/release" "$WORK/held" && mkfifo "$WORK/held" "$WORK/release"
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
open(release).readline()
for s in conns:
    s.settimeout(10)
    try:
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except OSError:
        pass
PY
    holder=$!
    read -r held_line < "$WORK/held"
}

release() {
    echo go > "$WORK/release"
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
    # The run says it started on one FIFO and waits for a line on another.
    mkfifo "$PROJECT/started" "$PROJECT/go"
    printf '%s' "$(shell_request busy 'echo up > started; read -r _ < go; echo done')" > "$WORK/busy.json"
    read -r ts sig < <(sign "$WORK/busy.json")
    curl -sS -o "$WORK/busy.out" -H "authorization: Bearer $TOKEN" -H "x-science-execution-timestamp: $ts" \
        -H "x-science-execution-signature: $sig" --data-binary @"$WORK/busy.json" "$BASE/execute-shell" &
    busy=$!
    run timeout 60 head -n 1 "$PROJECT/started"
    assert_output up
    api GET /status
    [ "$status_code" = 503 ] || fail "$status_code $output"
    [ "$(jq -r .error <<< "$output")" = "The runner is answering as many requests as it allows (1, SCIENCE_AGENT_MAX_REQUESTS); retry later" ]
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/health"
    assert_output 200
    echo go > "$PROJECT/go"
    wait "$busy"
    [ "$(jq -r .stdout "$WORK/busy.out")" = done ]
    # The slot is given back before the answer is sent: free at once.
    api GET /status
    [ "$status_code" = 200 ] && [ "$(jq '.activeExecutions | length' <<< "$output")" = 0 ] || fail "$status_code $output"
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
    # Each hangs up after half a head; the daemon must close each at once
    # (within 5 s, far inside the 30 s idle timeout), the 64 queued behind
    # the 16 slots too.
    run python3 - "$PORT" <<'PY'
import socket, sys, time
held = []
for i in range(80):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n")
    s.shutdown(socket.SHUT_WR)
    held.append(s)
start, late = time.monotonic(), 0
for s in held:
    s.settimeout(max(0.1, 5 - (time.monotonic() - start)))
    try:
        while s.recv(65536):
            pass
    except socket.timeout:
        late += 1
    except OSError:
        pass
print(late)
PY
    assert_success
    [ "$output" = 0 ] || fail "$output of 80 connections still open after 5 s"
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
