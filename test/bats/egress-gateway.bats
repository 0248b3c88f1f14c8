#!/usr/bin/env bats
# The egress gateway for real: a loopback HTTP server, `sbx-egress gateway`
# on a Unix socket, and sandboxes whose only way out is the bridge. Every
# allowed name is resolved with --resolve to 127.0.0.0/8; nothing leaves
# loopback.

load egress_helpers

python_connect='
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", 18118)
c.set_tunnel("api.test", int(sys.argv[1]))
c.request("GET", "/via-connect")
r = c.getresponse()
print(r.status, r.read().decode().splitlines()[1])'

@test "an allowed name (--resolve to 127.0.0.1, allowPrivateNetwork) gets 200 from curl and Python, via CONNECT and absolute form" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1"
    net_sandbox "curl -sS --fail http://api.test:$PORT/absolute &&
                 curl -sS --fail -p http://api.test:$PORT/tunnelled &&
                 python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://api.test:$PORT/urllib\").status)' &&
                 python3 -c '$python_connect' $PORT"
    assert_success
    assert_line "path=/absolute"
    assert_line "path=/tunnelled"
    assert_line "200"
    assert_line "200 path=/via-connect"
    # One audit line per decision, with the vetted address.
    run jq -sc 'map(select(.decision == "allowed" and .host == "api.test" and .address == "127.0.0.1")) | length' "$LOG"
    [ "$output" -eq 4 ]
    run jq -sc '.[0] | keys' "$LOG"
    assert_output '["address","bytesDown","bytesUp","decision","durationMs","host","method","peer","peerPid","port","reason","revision","status","time"]'
}

@test "loopback without allowPrivateNetwork, an unlisted name and an IP literal are 403 with the reason" {
    gateway '{"mode":"domain-allowlist","allowedDomains":["api.test"]}' --resolve "api.test:$PORT:127.0.0.1"
    # NO_PROXY sends literals to loopback directly (nothing there): --noproxy ''
    # makes curl ask the gateway, which must refuse them itself.
    net_sandbox "for u in http://api.test:$PORT/ http://other.test:$PORT/ http://127.0.0.1:$PORT/ http://2130706433:$PORT/; do
                     curl -sS --noproxy '' -o /dev/null -w '%{http_code} ' \"\$u\"; done; echo
                 curl -sS -i http://api.test:$PORT/ | grep -i '^x-sandbox-network'"
    assert_success
    assert_line --index 0 --partial "403 403 403 403"
    assert_output --partial "special-purpose addresses (loopback)"
    # CONNECT to a literal is refused too.
    net_sandbox "curl -sS --noproxy '' -p -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/ 2>&1; true"
    assert_output --partial "403"
    run jq -sc 'map(.decision) | unique' "$LOG"
    assert_output '["denied"]'
    # A single label is a name the allowlist refuses; a target that does not parse is 400.
    for target in localhost:443 instance-data:80; do
        run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< "CONNECT $target HTTP/1.1"$'\r\n\r\n'
        assert_line --index 0 --partial "403 Forbidden"
    done
    for target in ::1:443 api.test:80:90; do
        run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< "CONNECT $target HTTP/1.1"$'\r\n\r\n'
        assert_line --index 0 --partial "400 Bad Request"
    done
}

@test "DNS pinning: the gateway connects to the address it vetted and never resolves again" {
    # First answer 127.0.0.1 (the server), every later one 127.0.0.2 (nothing).
    for form in "" "-p"; do
        gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1|127.0.0.2"
        net_sandbox "curl -sS --fail $form http://api.test:$PORT/first; curl -sS -o /dev/null -w 'second=%{http_code}\n' $form http://api.test:$PORT/second"
        assert_line "path=/first"
        # The second request is decided afresh and gets the second answer:
        # proof the sequence advances, and a re-resolving gateway would fail.
        if [ -z "$form" ]; then assert_line "second=502"; else assert_output --partial "second=000"; fi
        kill "$GW_PID"; wait "$GW_PID" || true; GW_PID=
    done
    run grep -c '"address":"127.0.0.2"' "$LOG"
    [ "$output" -eq 0 ]
}

@test "a name's vetted addresses are tried in order: one that refuses the connection falls through to the next" {
    # 127.0.0.2 has no listener on PORT (the server binds 127.0.0.1 only).
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.2,127.0.0.1"
    net_sandbox "curl -sS --fail http://api.test:$PORT/absolute; curl -sS --fail -p http://api.test:$PORT/tunnel"
    assert_success
    assert_line "path=/absolute"
    assert_line "path=/tunnel"
    run jq -sc 'map(.address) | unique' "$LOG"
    assert_output '["127.0.0.1"]'
}

@test "a mismatching client Host never reaches the server; hop-by-hop fields are stripped; redirects are passed back" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1"
    net_sandbox "curl -sS -H 'Host: other.test' -H 'Proxy-Authorization: Basic c2VjcmV0' -H 'Connection: X-Private' \
                      -H 'X-Private: 1' -H 'X-Kept: 1' http://api.test:$PORT/h;
                 curl -sS -o /dev/null -w '%{http_code} %{redirect_url}\n' http://api.test:$PORT/redirect"
    assert_success
    assert_line "host=api.test:$PORT"
    assert_line --regexp '^headers=.*x-kept'
    refute_output --partial "proxy-authorization"
    refute_output --partial "x-private"
    assert_line "302 http://elsewhere.test/"
}

@test "the workload's exit status and signals pass through the bridge; its first connect succeeds" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1"
    net_sandbox "curl -sS --retry 0 --fail http://api.test:$PORT/first >/dev/null && exit 7"
    assert_failure 7
    net_sandbox 'kill -TERM $$'
    assert_failure 143
}

@test "no gateway behind the socket: the workload never runs; a second gateway never takes a live socket" {
    gateway "$private_policy"
    run sbx-egress gateway --socket "$SOCK" --policy "$WORK/policy.json"
    assert_failure 2
    assert_output --partial "another gateway serves it"
    [ -S "$SOCK" ]
    kill "$GW_PID"; wait "$GW_PID" || true; GW_PID=
    # A socket file nobody serves. A gateway removes its own where it may
    # (as root it served unprivileged and $WORK is root's: it may not).
    rm -f "$SOCK"
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK"
    [ "$(id -u)" -ne 0 ] || chown "$(expected_uid)" "$SOCK"
    net_sandbox "touch /workspace/ran"
    assert_failure 4
    [[ "$stderr" == *"the egress gateway socket is unusable; the workload is not started"* ]]
    [ ! -e "$WS/ran" ]
    rm -f "$SOCK"
    net_sandbox "touch /workspace/ran"
    assert_failure 2
    [[ "$stderr" == *"network.socket"* ]]
    [ ! -e "$WS/ran" ]
}

@test "CL+TE, origin form, other schemes and malformed heads are 400; bytes pipelined after a refusal are dropped" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1"
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< $'POST http://api.test:'"$PORT"$'/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
    assert_line --index 0 --partial "400 Bad Request"
    assert_output --partial "smuggling"
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< $'GET / HTTP/1.1\r\nHost: api.test\r\n\r\n'
    assert_output --partial "expects absolute-form proxy requests"
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< $'GET ftp://api.test/ HTTP/1.1\r\n\r\n'
    assert_output --partial "cannot forward ftp: without CONNECT"
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< $'GET http://api.test:0'"$PORT"$'/ HTTP/1.1\r\n\r\n'
    assert_line --index 0 --partial "400 Bad Request"
    # A refused request, then an allowed one in the same write: one answer, then close.
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< $'GET http://other.test/ HTTP/1.1\r\n\r\nGET http://api.test:'"$PORT"$'/pipelined HTTP/1.1\r\n\r\n'
    assert_line --index 0 --partial "403 Forbidden"
    refute_output --partial "pipelined"
    run grep -c "HTTP/1.1" <<< "$output"
    [ "$output" -eq 1 ]
}

@test "keep-alive: every request on one connection is decided afresh" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1"
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< $'GET http://api.test:'"$PORT"$'/one HTTP/1.1\r\n\r\nGET http://other.test/two HTTP/1.1\r\n\r\n'
    assert_output --partial "path=/one"
    assert_output --partial "403 Forbidden"
    run jq -sc 'map(.decision)' "$LOG"
    assert_output '["allowed","denied"]'
}

@test "beyond --max-tunnels a connection gets 429" {
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1" --max-tunnels 1
    mkfifo "$WORK/held"
    python3 "$FIXTURES/uds-request.py" "$SOCK" "$WORK/held" <<< $'CONNECT api.test:'"$PORT"$' HTTP/1.1\r\n\r\n' &
    HOLD_PID=$!
    read -r line < "$WORK/held"
    [[ "$line" == *"200 Connection Established"* ]]
    run python3 "$FIXTURES/uds-request.py" "$SOCK" <<< $'CONNECT api.test:'"$PORT"$' HTTP/1.1\r\n\r\n'
    assert_line --index 0 --partial "429 Too Many Requests"
}

@test "--upstream-proxy: allowed traffic goes through it with decoded credentials; refused targets never reach it" {
    mkfifo "$WORK/proxy-port"
    python3 "$FIXTURES/fake-proxy.py" "$WORK/proxy-port" "$WORK/proxy.log" "$PORT" &
    PROXY_PID=$!
    read -r PROXY_PORT < "$WORK/proxy-port"
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1" \
        --upstream-proxy "http://us%40er:p%3Ass@127.0.0.1:$PROXY_PORT"
    net_sandbox "curl -sS --fail http://api.test:$PORT/abs && curl -sS --fail -p http://api.test:$PORT/tun &&
                 curl -sS -o /dev/null -w '%{http_code}' http://other.test:$PORT/"
    kill "$PROXY_PID"
    assert_line "path=/abs"
    assert_line "path=/tun"
    assert_output --partial "403"
    auth="Basic $(printf 'us@er:p:ss' | base64)"
    run cat "$WORK/proxy.log"
    assert_line "GET http://api.test:$PORT/abs HTTP/1.1 auth=$auth"
    assert_line "CONNECT api.test:$PORT HTTP/1.1 auth=$auth"
    refute_output --partial "other.test"
    run sbx-egress gateway --socket "$WORK/x.sock" --policy "$WORK/policy.json" --upstream-proxy socks5://127.0.0.1:1
    assert_failure 2
    assert_output --partial "socks"
}

@test "sbx-run starts the gateway of its policy revision, the next run reuses it, and it exits once idle and unheld" {
    request() {
        jq -cn --arg id "$1" --arg ws "$WS" --arg code "curl -sS --fail http://api.test:$PORT/$1" \
            '{executionId: $id, language: "shell", code: $code, workspace: $ws,
              network: {mode: "domain-allowlist", allowedDomains: ["api.test"], allowPrivateNetwork: true}}'
    }
    opts=(--no-snapshot --state-dir "$WORK/state" --egress-dir "$WORK/eg" --egress-idle-s 1
          --egress-resolve "api.test:$PORT:127.0.0.1")
    run --separate-stderr sbx-run "${opts[@]}" - <<< "$(request run1)"
    assert_success
    [[ "$(tail -n 1 <<< "$output" | jq -r .result.stdout)" == "host=api.test:$PORT"*"path=/run1"* ]]
    sock=$(ls "$WORK"/eg/*.sock)
    [[ "$(basename "$sock")" =~ ^[0-9a-f]{16}\.sock$ ]]
    pid=$(pgrep -f -- "^[^ ]*sbx-egress gateway --socket $sock")
    # Hold it as a run would, so it cannot idle out between the two runs.
    exec 9<"$sock.lock"
    flock -s 9
    # The recorded spec names the socket, never the allowlist.
    run jq -c .network "$WORK/state/run1/launch-spec.json"
    assert_output "$(jq -cn --arg s "$sock" '{mode: "domain-allowlist", socket: $s}')"
    run --separate-stderr sbx-run "${opts[@]}" - <<< "$(request run2)"
    assert_success
    [ "$(pgrep -f -- "^[^ ]*sbx-egress gateway --socket $sock")" = "$pid" ]
    # Nobody holds it and it is idle: it goes, and takes its socket along
    # where it may; a gateway that dropped root may not remove a name from
    # root's directory: that socket is stale (nobody holds SOCKET.alive).
    exec 9<&-
    timeout 20 tail --pid="$pid" -f /dev/null
    [ ! -e "$sock" ] || { [ "$(id -u)" -eq 0 ] && flock -n "$sock.alive" true; }
    # A bad allowlist names the request's field and starts nothing.
    run --separate-stderr sbx-run "${opts[@]}" - <<< "$(request run3 | jq -c '.network.allowedDomains = ["127.0.0.1"]')"
    assert_failure 2
    [[ "$stderr" == *"network.allowedDomains[0]"*"domain names only"* ]]
    [ ! -e "$WORK/state/run3" ]
}

@test "bulk both ways through a tunnel (the spliced path): every byte, in order, and a half-close still reaches the upstream" {
    coproc BULK { python3 "$FIXTURES/bulk-tunnel.py" "$SOCK" api.test 24; }
    read -r bulk_port <&"${BULK[0]}"
    gateway "$private_policy" --resolve "api.test:$bulk_port:127.0.0.1"
    echo go >&"${BULK[1]}"
    read -r verdict <&"${BULK[0]}"
    wait "$BULK_PID"
    [ "$verdict" = ok ]
    # The audit log counts what went each way.
    tail -n 1 "$LOG" | jq -e '.bytesUp >= 25165824 and .bytesDown >= 25165824' > /dev/null || fail "$(tail -n 1 "$LOG")"
}

@test "kill -9 of the gateway mid-transfer: the workload sees a clean failure, a new gateway serves the next run" {
    # An upstream that sends the start of a response, then holds the line.
    mkfifo "$WORK/slow-port"
    python3 - "$WORK/slow-port" <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
c, _ = s.accept()
c.recv(65536)
c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nfirst-chunk\n")
while c.recv(65536):
    pass
PY
    HOLD_PID=$!
    read -r slow < "$WORK/slow-port"
    gateway "$private_policy" --resolve "api.test:$slow:127.0.0.1" --resolve "api.test:$PORT:127.0.0.1"
    # The workload says when the first bytes have reached it (not merely
    # left the upstream), through a FIFO in its workspace.
    mkfifo "$WS/got"
    chmod 666 "$WS/got"
    sbx-launch - > "$WORK/mid.out" 2>&1 <<<"$(spec_sh "(curl -sS -N http://api.test:$slow/stream 2>&1; echo curl=\$?) |
        { read -r first; echo \"\$first\"; echo got > /workspace/got; cat; }" \
        "$(jq -cn --arg s "$SOCK" '{network: {mode: "domain-allowlist", socket: $s}}')")" &
    sandbox=$!
    await_fifo "$WS/got"
    kill -9 "$GW_PID"
    wait "$GW_PID" 2>/dev/null || true
    GW_PID=
    # The workload ends on its own: its connection died with the gateway.
    timeout 30 tail --pid="$sandbox" -f /dev/null
    out=$(cat "$WORK/mid.out")
    [[ "$out" == *first-chunk* ]] || fail "the transfer never started: $out"
    [[ "$out" =~ curl=(18|52|56) ]] || fail "no clean transfer error: $out"
    # The stale socket is replaced and the next run goes through.
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1"
    net_sandbox "curl -sS --fail http://api.test:$PORT/after"
    assert_success
    assert_output --partial "path=/after"
}

# status_field PID NAME: the value of NAME: in /proc/PID/status.
status_field() {
    sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr -s '[:space:]' ' ' | sed 's/ $//'
}

# assert_confined PID UID GID [BOUNDING]: what a gateway holds once it
# serves; its bounding set is empty unless BOUNDING (hex) says otherwise.
assert_confined() {
    assert_equal "Uid $(status_field "$1" Uid)" "Uid $2 $2 $2 $2"
    assert_equal "Gid $(status_field "$1" Gid)" "Gid $3 $3 $3 $3"
    assert_equal "Groups [$(status_field "$1" Groups)]" "Groups []"
    for set in CapInh CapPrm CapEff CapAmb; do
        assert_equal "$set $(status_field "$1" $set)" "$set 0000000000000000"
    done
    assert_equal "CapBnd $(status_field "$1" CapBnd)" "CapBnd ${4:-0000000000000000}"
    assert_equal "NoNewPrivs $(status_field "$1" NoNewPrivs)" "NoNewPrivs 1"
    assert_equal "Seccomp $(status_field "$1" Seccomp)" "Seccomp 2"
}

@test "a root sbx-run's gateway serves as the sandbox uid: no effective, permitted, inheritable or ambient capability, no_new_privs, its seccomp filter" {
    [ "$(id -u)" -eq 0 ] || skip "as root only: otherwise the gateway runs as its caller"
    code="curl -sS --fail http://api.test:$PORT/absolute && curl -sS --fail -p http://api.test:$PORT/tunnelled"
    request=$(jq -cn --arg ws "$WS" --arg code "$code" \
        '{executionId: "conf1", language: "shell", code: $code, workspace: $ws,
          network: {mode: "domain-allowlist", allowedDomains: ["api.test"], allowPrivateNetwork: true}}')
    run --separate-stderr sbx-run --no-snapshot --state-dir "$WORK/state" --egress-dir "$WORK/eg" \
        --egress-resolve "api.test:$PORT:127.0.0.1" - <<< "$request"
    assert_success
    stdout=$(tail -n 1 <<< "$output" | jq -r .result.stdout)
    [[ "$stdout" == *"path=/absolute"*"path=/tunnelled"* ]] || fail "not served: $stdout"
    sock=$(ls "$WORK"/eg/*.sock)
    pid=$(pgrep -f -- "^[^ ]*sbx-egress gateway --socket $sock")
    # sbx-run keeps CAP_SETPCAP for this: the gateway empties its bounding set.
    assert_confined "$pid" "$(expected_uid)" "$(expected_uid)"
    # The workload ran as its workspace's own uid, not the gateway's: the
    # socket is the sandbox group's (0660) and the gateway admits that gid.
    ws_uid=$(tail -n 1 <<< "$output" | jq -r .result.workspaceUid)
    [ "$ws_uid" -ge 2000000000 ] && [ "$ws_uid" != "$(expected_uid)" ] || fail "workspace uid $ws_uid"
    assert_equal "$(stat -c '%u %g %a' "$sock")" "$(expected_uid) $(expected_uid) 660"
    run --separate-stderr sbx-run --no-snapshot --state-dir "$WORK/state" --egress-dir "$WORK/eg" \
        --egress-resolve "api.test:$PORT:127.0.0.1" - <<< "$(jq -c '.executionId = "conf2"' <<< "$request")"
    assert_success
    [ "$(pgrep -f -- "^[^ ]*sbx-egress gateway --socket $sock")" = "$pid" ]
}

@test "a gateway started by hand is confined too (as root: --drop-to), and the system resolver works under its filter" {
    # The upstream proxy is named "localhost": /etc/hosts through getaddrinfo
    # and NSS, inside the confined gateway; the proxy forwards to $PORT.
    mkfifo "$WORK/proxy-port"
    python3 "$FIXTURES/fake-proxy.py" "$WORK/proxy-port" "$WORK/proxy.log" "$PORT" &
    PROXY_PID=$!
    read -r PROXY_PORT < "$WORK/proxy-port"
    grep -qE '^127\.0\.0\.1[[:space:]].*\blocalhost\b' /etc/hosts || skip "no 127.0.0.1 localhost in /etc/hosts"
    drop=()
    [ "$(id -u)" -ne 0 ] || drop=(--drop-to 12345:12346)
    gateway "$private_policy" --resolve "api.test:$PORT:127.0.0.1" --upstream-proxy "http://localhost:$PROXY_PORT" \
        "${drop[@]}"
    if [ "$(id -u)" -eq 0 ]; then
        assert_confined "$GW_PID" 12345 12346
    else
        assert_equal "Uid $(status_field "$GW_PID" Uid)" "Uid $(id -u) $(id -u) $(id -u) $(id -u)"
        assert_equal "CapEff $(status_field "$GW_PID" CapEff)" "CapEff 0000000000000000"
        assert_equal "NoNewPrivs $(status_field "$GW_PID" NoNewPrivs)" "NoNewPrivs 1"
        assert_equal "Seccomp $(status_field "$GW_PID" Seccomp)" "Seccomp 2"
    fi
    net_sandbox "curl -sS --fail http://api.test:$PORT/abs && curl -sS --fail -p http://api.test:$PORT/tun"
    kill "$PROXY_PID"
    assert_success
    assert_line "path=/abs"
    assert_line "path=/tun"
    run cat "$WORK/proxy.log"
    assert_line --partial "CONNECT api.test:$PORT HTTP/1.1"
    # As root, uid 0 is refused as a target (as anyone else it is moot).
    if [ "$(id -u)" -eq 0 ]; then
        run sbx-egress gateway --socket "$WORK/x.sock" --policy "$WORK/policy.json" --drop-to 0
        assert_failure 3
        assert_output --partial "--drop-to"
    fi
}
