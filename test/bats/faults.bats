#!/usr/bin/env bats
# Faults: signature timestamps at the window's edges (a client whose clock
# jumped), a bwrap that hangs, descriptor exhaustion, a full disk. (Killed
# processes are covered where they live: sbx-run in run.bats, sbx-httpd in
# httpd-managed.bats and httpd-npu.bats, sbx-env in env.bats.)

load httpd_helpers

setup() { httpd_setup; }
teardown() {
    httpd_stop
    if mountpoint -q "$WORK/data" 2>/dev/null; then umount "$WORK/data"; fi
    httpd_teardown
}

# signed_at OFFSET-MS BODY: a signed /execute-shell stamped now + OFFSET.
signed_at() {
    printf '%s' "$2" > "$WORK/req.json"
    read -r ts sig < <(sign "$WORK/req.json" $(( $(date +%s%3N) + $1 )))
    api POST /execute-shell -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" \
        --data-binary @"$WORK/req.json"
}

@test "a clock that jumped: ±29 s is inside the 30 s window, ±31 s is 401, either way" {
    signed_at -29000 "$(shell_request past-in true)"
    assert_equal "$status_code" 200
    signed_at 29000 "$(shell_request future-in true)"
    assert_equal "$status_code" 200
    signed_at -31000 "$(shell_request past-out true)"
    assert_equal "$status_code $(jq_out .error)" "401 Invalid or expired execution signature"
    signed_at 31000 "$(shell_request future-out true)"
    assert_equal "$status_code $(jq_out .error)" "401 Invalid or expired execution signature"
}

@test "a bwrap that hangs: the probe gives up at its deadline and says so; runs refuse instead of hanging" {
    mkfifo "$WORK/never"
    printf '#!/bin/sh\nif [ "$1" = --version ]; then echo "bubblewrap 0.8.0"; exit 0; fi\nread -r x < %s\n' "$WORK/never" > "$WORK/bwrap"
    chmod +x "$WORK/bwrap"
    run --separate-stderr timeout 60 sbx-probe --bwrap "$WORK/bwrap" --no-cache --timeout-ms 300
    assert_failure 4
    assert_equal "$(jq_out .usable)" false
    [[ "$output" == *"timed out"* || "$output" == *"did not finish"* ]] || fail "no deadline in: $output"
    run --separate-stderr timeout 60 env SBX_BWRAP="$WORK/bwrap" SBX_DATA_DIR="$WORK/d2" sbx-launch - <<<'{"argv":["/bin/true"]}'
    assert_failure 4
}

@test "descriptor exhaustion: with 48 fds, 80 idle connections do not take the server down" {
    httpd_stop
    rm -f "$WORK/ready" && mkfifo "$WORK/ready"
    prlimit --nofile=48:48 sbx-httpd --ready-fd 3 3>"$WORK/ready" 2>>"$WORK/httpd.err" &
    HTTPD_PID=$!
    read -r READY < "$WORK/ready"
    BASE="http://127.0.0.1:$(jq -r .port <<< "$READY")"
    # 80 connections that send half a request and wait for the release.
    mkfifo "$WORK/held" "$WORK/release"
    exec 9<>"$WORK/release"
    python3 - "$BASE" "$WORK/held" "$WORK/release" <<'PY' &
import socket, sys
host, port = sys.argv[1].split("//")[1].split(":")
held = []
for i in range(80):
    try:
        s = socket.create_connection((host, int(port)), timeout=2)
        s.send(b"GET /status HTTP/1.1\r\nHost: x\r\n")
        held.append(s)
    except OSError:
        pass
with open(sys.argv[2], "w") as f:
    f.write("%d\n" % len(held))
open(sys.argv[3]).readline()
PY
    holder=$!
    await_fifo "$WORK/held" count
    [ "$count" -gt 0 ]
    kill -0 "$HTTPD_PID"
    echo go >&9
    wait "$holder"
    exec 9>&-
    kill -0 "$HTTPD_PID"
    # The held connections are closing now; a client retries as any would
    # (a 503 "as many connections open as it allows" included: with 48 fds
    # the daemon caps itself at 12).
    run curl -sS -o "$WORK/health.json" --max-time 10 --retry 10 --retry-all-errors --retry-delay 1 "$BASE/health"
    assert_equal "$(jq -r .status "$WORK/health.json")" ok
    grep -q '"connections-capped"' "$WORK/httpd.err"
    signed /execute-shell "$(shell_request after-exhaustion 'echo fine')"
    assert_equal "$status_code $(jq_out .stdout)" "200 fine"
}

@test "a full disk: an upload fails cleanly and leaves nothing; the server and its state stay readable" {
    [ "$(id -u)" -eq 0 ] || skip "mounting a small tmpfs needs root"
    httpd_stop
    mount -t tmpfs -o size=6m,mode=0755 sbx-full "$WORK/data"
    httpd_start
    mkdir -p "$PROJECT" && chmod 777 "$PROJECT"
    head -c $((8 << 20)) /dev/zero > "$WORK/big"
    api PUT "/remote-workspace/file?workspace=full&path=big.bin" --data-binary @"$WORK/big"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == *"No space left on device"* ]] || fail "unclear error: $output"
    [ ! -e "$WORK/data/remote-workspaces/full/big.bin" ]
    assert_equal "$(ls -A "$WORK/data/runner-uploads")" ""
    signed /execute-shell "$(shell_request fill 'head -c 8000000 /dev/zero > f.bin; echo status=$?')"
    # Either the workload sees ENOSPC, or the run's own bookkeeping does:
    # a 400 whose message says so. Never a hang or a crash.
    if [ "$status_code" = 200 ]; then
        [[ "$(jq_out .stdout)" == *"status=1"* ]] || fail "$output"
    else
        assert_equal "$status_code" 400
        [[ "$(jq_out .error)" == *"space"* || "$(jq_out .error)" == *"quota"* ]] || fail "unclear error: $output"
    fi
    run curl -sS "$BASE/health"
    assert_equal "$(jq_out .status)" ok
    api GET /status
    assert_equal "$status_code" 200
}
