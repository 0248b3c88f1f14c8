#!/usr/bin/env bats
# sbx-httpd against curl + openssl: transport, auth, the synchronous
# executions, and the answers of features later stages add.

load httpd_helpers

# in_background NAME JSON PATH: a signed call in the background with its own
# files (the foreground api calls keep theirs); its pid in $bg.
in_background() {
    printf '%s' "$2" > "$WORK/$1.json"
    read -r ts sig < <(sign "$WORK/$1.json")
    curl -sS -o "$WORK/$1.out" -H "authorization: Bearer $TOKEN" -H "x-science-execution-timestamp: $ts" \
        -H "x-science-execution-signature: $sig" --data-binary @"$WORK/$1.json" "$BASE$3" &
    bg=$!
}

setup() { httpd_setup; }
teardown() { httpd_teardown; }

@test "GET /health needs no token, carries every RunnerHealth field and the transport headers" {
    run curl -sS -i "$BASE/health"
    assert_success
    assert_line --partial "HTTP/1.1 200"
    assert_line --regexp '^Date: '
    assert_line --partial "content-type: application/json; charset=utf-8"
    assert_line --partial "cache-control: no-store"
    assert_line --partial "x-content-type-options: nosniff"
    body=$(curl -sS "$BASE/health")
    [ "$(jq -c 'keys' <<< "$body")" = '["cgroupDelegated","cgroupMode","cgroupRoot","executionAuth","executionGid","executionTimeoutMs","executionUid","executionUser","limits","maxFileBytes","maxOutputBytes","maxWorkspaceBytes","networkPolicy","noNewPrivileges","npuBroker","platform","retention","runnerVersion","sandbox","sandboxNetwork","scientificEnvs","seccompBaseline","status","supervisorCapabilities","workerConcurrency","workspaceUids"]' ]
    [ "$(jq -c .sandboxNetwork <<< "$body")" = '{"available":true,"modes":["none","domain-allowlist"]}' ]
    # Every execution's default bounds, and what holds them on this host.
    [ "$(jq -c '.limits | [.memoryBytes, .processes, .openFiles, .shmBytes, .devReadOnly, .maxConnections, .maxRequests]' <<< "$body")" = '[8589934592,4096,4096,67108864,true,4096,512]' ]
    [ "$(jq -r .limits.workspaceFiles <<< "$body")" = 100000 ]
    if [ "$(id -u)" -eq 0 ] && grep -q ' - cgroup cgroup .*memory' /proc/self/mountinfo; then
        [ "$(jq -r .limits.mode <<< "$body")" = cgroup-v1 ]
    else
        [[ "$(jq -r .limits.mode <<< "$body")" =~ ^(rlimit|cgroup-v2)$ ]]
    fi
    [[ "$(jq -r .runnerVersion <<< "$body")" =~ ^([0-9a-f]{8}(-dirty)?|unknown)$ ]]
    # Compact JSON plus one newline.
    [ "$(curl -sS "$BASE/health" | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ]
}

@test "GET /health names the identity workloads really run as: its uid, gid and user, and the per-workspace uid range" {
    body=$(curl -sS "$BASE/health")
    signed /execute-shell "$(shell_request who 'echo "$(id -u) $(id -g)"')"
    assert_equal "$status_code" 200
    read -r uid gid <<< "$(jq -r .stdout <<< "$output")"
    [ "$(jq .executionGid <<< "$body")" = "$gid" ]
    if [ "$(jq -c .workspaceUids <<< "$body")" = null ]; then
        [ "$(jq .executionUid <<< "$body")" = "$uid" ]
    else
        # Each workspace its own uid, from the range /health states.
        [ "$uid" -ge "$(jq .workspaceUids.first <<< "$body")" ] && [ "$uid" -le "$(jq .workspaceUids.last <<< "$body")" ]
    fi
    expected=$(getent passwd "$(jq .executionUid <<< "$body")" | cut -d: -f1)
    [ "$(jq -r .executionUser <<< "$body")" = "${expected:-$(jq .executionUid <<< "$body")}" ]
    if [ "$(id -u)" -eq 0 ]; then
        [ "$(jq -r .executionUser <<< "$body")" != root ]
        [ "$(jq .executionUid <<< "$body")" != 0 ]
    else
        [ "$(jq .executionUid <<< "$body")" = "$(id -u)" ]
    fi
}

@test "in a container's default capability set the daemon serves runs and says once, and in /health, what sbx-run lacks" {
    [ "$(id -u)" -eq 0 ] || skip "as root only: otherwise nothing is narrowed"
    httpd_stop
    : > "$WORK/httpd.err"
    default=-all,+chown,+dac_override,+fsetid,+fowner,+mknod,+net_raw,+setgid,+setuid,+setfcap,+setpcap,+net_bind_service,+sys_chroot,+kill,+audit_write
    rm -f "$WORK/ready" && mkfifo "$WORK/ready"
    setpriv --bounding-set "$default" "$SBX_BIN/sbx-httpd" --ready-fd 3 3>"$WORK/ready" 2>>"$WORK/httpd.err" &
    HTTPD_PID=$!
    read -r READY < "$WORK/ready"
    BASE="http://127.0.0.1:$(jq -r .port <<< "$READY")"
    run curl -sS "$BASE/health"
    [ "$(jq -c '[.supervisorCapabilities.missing[].capability, .supervisorCapabilities.error]' <<< "$output")" = '["CAP_DAC_READ_SEARCH","CAP_SYS_ADMIN",null]' ]
    [ "$(grep -c '"code":"capability-missing"' "$WORK/httpd.err")" = 2 ] # once for each
    signed /execute-shell "$(shell_request capd 'mkdir -p h && chmod 000 h && id -u')"
    [ "$status_code" = 200 ] && [ "$(jq -r .exitCode <<< "$output")" = 0 ]
    signed /execute-shell "$(shell_request capd2 'echo again')"
    [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = again ]
    chmod 755 "$PROJECT/h"
    # Full capabilities: nothing missing.
    httpd_stop
    httpd_start
    run curl -sS "$BASE/health"
    [ "$(jq -c .supervisorCapabilities <<< "$output")" = '{"missing":[],"error":null}' ]
}

@test "at startup, run directories whose sbx-run is gone are removed; one whose sbx-run lives is kept" {
    httpd_stop
    runs="$WORK/data/runner-executions/runs"
    dead="$runs/h$(printf 'd%.0s' $(seq 24))" live="$runs/h$(printf 'a%.0s' $(seq 24))"
    norecord="$runs/h$(printf 'b%.0s' $(seq 24))" reused="$runs/h$(printf 'c%.0s' $(seq 24))"
    mkdir -p "$dead/scratch/outputs" "$live" "$norecord" "$reused"
    head -c 100000 /dev/zero > "$dead/scratch/outputs/big"
    sleep 913 & holder=$!
    start=$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' "/proc/$holder/stat")
    printf '{"pid":%d,"startTime":"%s"}\n' "$holder" "$start" > "$live/supervisor.json"
    # A pid that exists now but is not the process that wrote the record.
    printf '{"pid":%d,"startTime":"1"}\n' "$holder" > "$reused/supervisor.json"
    # A pid that is gone.
    sh -c 'exit 0' & gone=$!; wait "$gone"
    printf '{"pid":%d,"startTime":"%s"}\n' "$gone" "$start" > "$dead/supervisor.json"
    httpd_start
    kill "$holder"; wait "$holder" 2>/dev/null || true
    [ ! -e "$dead" ] && [ ! -e "$norecord" ] && [ ! -e "$reused" ]
    [ -d "$live" ]
}

@test "auth comes before routing: 401 anywhere without the token, 404 with it" {
    for path in /status /nope /health/x; do
        run curl -sS -o /dev/null -w '%{http_code}' "$BASE$path"
        assert_output 401
    done
    run curl -sS -X POST -o /dev/null -w '%{http_code}' "$BASE/health"
    assert_output 401
    api POST /health
    [ "$status_code" = 404 ]
    api GET /nope
    [ "$status_code" = 404 ] && [ "$output" = '{"error":"Not found"}' ]
    run curl -sS -H "authorization: bearer $TOKEN" "$BASE/status"
    assert_output '{"error":"Unauthorized"}'
    run curl -sS -H "authorization: Bearer ${TOKEN}x" "$BASE/status"
    assert_output '{"error":"Unauthorized"}'
    api GET /status
    [ "$status_code" = 200 ] && [ "$(jq -c .activeExecutions <<< "$output")" = '[]' ]
}

@test "the execution signature: missing, wrong, stale, future and uppercase are 401; bearer still required" {
    shell_request e1 'echo hi' > "$WORK/req.json"
    now=$(date +%s%3N)
    read -r ts sig < <(sign "$WORK/req.json" "$now")
    for h in "x-science-execution-timestamp: $now" "x-science-execution-signature: $sig"; do
        api POST /execute-shell -H "$h" --data-binary @"$WORK/req.json"
        [ "$status_code" = 401 ] && [ "$output" = '{"error":"Invalid or expired execution signature"}' ]
    done
    for ts in $((now - 31000)) $((now + 31000)); do
        read -r t s < <(sign "$WORK/req.json" "$ts")
        api POST /execute-shell -H "x-science-execution-timestamp: $t" -H "x-science-execution-signature: $s" --data-binary @"$WORK/req.json"
        [ "$status_code" = 401 ]
    done
    upper=$(tr a-f A-F <<< "$sig")
    api POST /execute-shell -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $upper" --data-binary @"$WORK/req.json"
    [ "$status_code" = 401 ]
    # A body changed after signing fails too.
    read -r t s < <(sign "$WORK/req.json")
    api POST /execute-shell -H "x-science-execution-timestamp: $t" -H "x-science-execution-signature: $s" --data-binary '{"x":1}'
    [ "$status_code" = 401 ]
    run curl -sS -X POST -H "x-science-execution-timestamp: $t" -H "x-science-execution-signature: $s" \
        --data-binary @"$WORK/req.json" "$BASE/execute-shell"
    assert_output '{"error":"Unauthorized"}'
}

@test "POST /execute-shell: a non-zero exit is 200 with the result, files and the workspace snapshot" {
    signed /execute-shell "$(shell_request e1 'echo out; echo err >&2; echo x > made.txt; exit 3')"
    [ "$status_code" = 200 ]
    r() { jq -r "$1" <<< "$output"; }
    [ "$(r .exitCode)" = 3 ] && [ "$(r .stdout)" = out ] && [ "$(r .stderr)" = err ]
    [ "$(r '.createdFiles | join(",")')" = made.txt ]
    [ "$(r .kernelId)" = ephemeral:e1 ] && [ "$(r .kernelMode)" = ephemeral ] && [ "$(r .language)" = shell ]
    [ "$(r .environmentRevisionId)" = system-shell-bwrap-v1 ] && [ "$(r .workingDirectory)" = /workspace ]
    [ "$(r .networkPolicy)" = none ] && [ "$(r .networkAccessRevision)" = none ] && [ "$(r .sandbox)" = bubblewrap ]
    [[ "$(r .workspaceSnapshot.digest)" =~ ^sha256:[0-9a-f]{64}$ ]] && [ "$(r .workspaceSnapshot.pool)" = agent-state ]
    [ "$(r .environmentVariables.HOME)" = /tmp ]
    # The bounds that held it, as /health announces them.
    [ "$(r .limits.memoryBytes) $(r .limits.pids)" = "8589934592 4096" ]
    [ "$(r .limits.mode)" = "$(curl -sS "$BASE/health" | jq -r .limits.mode)" ]
}

@test "POST /execute runs Python; R is refused without environments" {
    signed /execute "$(shell_request p1 'import sys; print(sys.version_info[0])')"
    [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = 3 ] && [ "$(jq -r .language <<< "$output")" = python ]
    [ "$(jq -r .environmentRevisionId <<< "$output")" = rev-1 ]
    signed /execute "$(shell_request p2 'print(1)' '{"language":"r"}')"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "R execution requires the scientific environment capability" ]
}

@test "an executionId replayed within 60 s is 409, and consumed even when the run failed" {
    signed /execute-shell "$(shell_request dup 'exit 0' '{"executionTimeoutMs":-1}')"
    [ "$status_code" = 400 ]
    signed /execute-shell "$(shell_request dup 'exit 0')"
    [ "$status_code" = 409 ] && [ "$output" = '{"error":"Execution ID has already been used"}' ]
}

@test "kernelMode persistent, workspaces outside the roots and malformed bodies are 400 before anything is created" {
    # The daemon's standby supervisors make the runs directory and their
    # own run directories in it whenever they start (runs/.standby-<pid>):
    # not this request's doing.
    listing() { find "$WORK/data" | grep -v -E '/runner-executions/runs(/\.standby-.*)?$' | sort; }
    before=$(listing)
    signed /execute-shell "$(shell_request k1 'true' '{"kernelMode":"persistent"}' | jq -c ".workspaceRoot = \"$WORK/data/projects/new\"")"
    [ "$status_code" = 400 ]
    [[ "$(jq -r .error <<< "$output")" == "Runner executions must be ephemeral; persistent runtimes are no longer supported."* ]]
    # What changed, said before the assertion fails on it.
    diff <(echo "$before") <(listing) | sed 's/^/# /' >&3 || true
    [ "$(listing)" = "$before" ]
    signed /execute-shell "$(shell_request k2 'true' | jq -c ".workspaceRoot = \"$WORK\"")"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "Runner workspace must be inside the configured projects or remote-workspaces directory" ]
    signed /execute-shell "$(shell_request k3 'true' | jq -c ".workspaceRoot = \"$WORK/data/projects/none\"")"
    [ "$status_code" = 400 ] && [[ "$(jq -r .error <<< "$output")" == "ENOENT: no such file or directory, realpath"* ]]
    signed /execute-shell '{"broken":'
    [ "$status_code" = 400 ]
    signed /execute-shell "$(shell_request k4 '   ')"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "Shell code is required" ]
    signed /execute-shell "$(shell_request k5 'true' | jq -c '.permissionEpoch.mounts = []')"
    [ "$(jq -r .error <<< "$output")" = "Shell execution accepts exactly one read-write workspace mount" ]
    head -c 2000001 /dev/zero | tr '\0' ' ' > "$WORK/big"
    read -r t s < <(sign "$WORK/big")
    api POST /execute-shell -H "x-science-execution-timestamp: $t" -H "x-science-execution-signature: $s" --data-binary @"$WORK/big"
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Request body exceeds the 2000000 byte limit"}' ]
}

@test "timeouts and quota breaches are 400 with the upstream texts; output over budget is cut with the marker" {
    signed /execute-shell "$(shell_request t1 'sleep 30' '{"executionTimeoutMs":500}')"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "Shell execution timed out after 500 ms" ]
    signed /execute-shell "$(shell_request q1 'head -c 3000000 /dev/zero > big; sleep 5' '{"maxWorkspaceBytes":1000000}')"
    [ "$status_code" = 400 ] && [[ "$(jq -r .error <<< "$output")" == "Workspace exceeded the 1000000 byte execution quota"* ]]
    signed /execute-shell "$(shell_request q2 'for i in $(seq 500); do : > e$i; done' '{"maxWorkspaceFiles":50}')"
    [ "$status_code" = 400 ] && [[ "$(jq -r .error <<< "$output")" == "Workspace exceeded the 50 file execution quota"* ]]
    signed /execute-shell "$(shell_request q3 'true' '{"maxWorkspaceFiles":-1}')"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "maxWorkspaceFiles must be a non-negative safe integer" ]
    signed /execute-shell "$(shell_request o1 'head -c 50000 /dev/zero | tr "\0" a; head -c 50000 /dev/zero | tr "\0" b >&2' '{"maxOutputBytes":10000}')"
    [ "$status_code" = 200 ]
    total=$(jq -r '(.stdout + .stderr) | utf8bytelength' <<< "$output")
    [ "$total" -le 10000 ]
    [[ "$(jq -r '.stdout + .stderr' <<< "$output")" == *"[output truncated: exceeded 10000 bytes; set SCIENCE_AGENT_MAX_OUTPUT_BYTES=0 to disable]"* ]]
    [ "$(jq .truncated <<< "$output")" = true ]
}

@test "a client that disconnects aborts its execution: nothing left running, nothing in /status" {
    marker="sbx-disconnect-$$-$RANDOM"
    shell_request d1 "sleep 30 # $marker" > "$WORK/req.json"
    read -r ts sig < <(sign "$WORK/req.json")
    run curl -sS --max-time 1 -H "authorization: Bearer $TOKEN" -H "x-science-execution-timestamp: $ts" \
        -H "x-science-execution-signature: $sig" --data-binary @"$WORK/req.json" "$BASE/execute-shell"
    assert_failure 28
    # The workload's processes end within the 1 s grace: wait on each pid.
    for pid in $(pgrep -f "$marker"); do
        timeout 10 tail --pid="$pid" -f /dev/null
    done
    # Then the handler drops the entry; /status is asked as a client would.
    for _ in $(seq 200); do
        api GET /status
        [ "$(jq '.activeExecutions | length' <<< "$output")" = 0 ] && break
    done
    [ "$(jq '.activeExecutions | length' <<< "$output")" = 0 ]
    run pgrep -f "$marker"
    assert_failure
}

@test "SIGTERM with executions in flight: each is stopped as a cancel stops it; no sbx-run, cgroup or run directory outlives the daemon" {
    mkfifo -m 666 "$PROJECT/started"
    in_background t1 "$(shell_request t1 'echo > /workspace/started; sleep 60')" /execute-shell
    client=$bg
    await_fifo "$PROJECT/started"   # the workload runs
    sups=$(pgrep -P "$HTTPD_PID" -x sbx-run | tr '\n' ' ')
    [ -n "$sups" ]
    start=$SECONDS
    httpd_stop
    wait "$client" || true
    # Stopped within its grace, not after the 60 s of its workload.
    [ $((SECONDS - start)) -lt 30 ]
    for pid in $sups; do
        ! kill -0 "$pid" 2>/dev/null
        [ -z "$(find /sys/fs/cgroup -maxdepth 6 -name "sbx-$pid-*" 2>/dev/null)" ] || fail "cgroups of $pid left"
    done
    [ -z "$(find "$WORK/data/runner-executions/runs" -mindepth 1 -maxdepth 1 -name 'h*')" ] || fail "left: $(ls -a "$WORK/data/runner-executions/runs")"
}

@test "/status lists a running execution with its session, agent and startedAt, the result's own" {
    mkfifo -m 666 "$PROJECT/started"
    in_background s1 "$(shell_request s1 'echo > /workspace/started; sleep 1')" /execute-shell
    client=$bg
    await_fifo "$PROJECT/started"   # the workload runs
    api GET /status
    [ "$(jq -c '.activeExecutions[0] | [.executionId, .sessionId, .agentId, .kernelMode, .language, .status, (.startedAt | type)]' <<< "$output")" = '["s1","s1","main","ephemeral","shell","running","string"]' ]
    listed=$(jq -r '.activeExecutions[0].startedAt' <<< "$output")
    wait "$client"
    # The instant it left the queue, in /status and in the result alike.
    [ "$(jq -r .startedAt "$WORK/s1.out")" = "$listed" ]
}

@test "kernels: none exist; teardown answers count 0 and needs a sessionId" {
    api GET /kernels
    [ "$output" = '[]' ]
    api POST /kernels/teardown --data-binary '{"sessionId":"s1"}'
    [ "$status_code" = 200 ] && [ "$output" = '{"count":0,"reason":"Persistent kernel memory was cleared"}' ]
    api POST /kernels/teardown --data-binary '{"sessionId":" "}'
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"sessionId is required"}' ]
    api POST /kernels/k1/teardown --data-binary '{"reason":"bye"}'
    [ "$output" = '{"count":0,"kernelId":"k1","reason":"bye"}' ]
}

@test "path parameters are matched encoded, then percent-decoded; a malformed escape is 400 URI malformed" {
    api POST '/kernels/acc%20kernel%2Fx/teardown' --data-binary '{"reason":"bye"}'
    assert_equal "$status_code $output" '200 {"count":0,"kernelId":"acc kernel/x","reason":"bye"}'
    api POST '/kernels/%C3%A9t%C3%A9/teardown' --data-binary '{}'
    assert_equal "$(jq -r .kernelId <<< "$output")" "été"
    for bad in '%zz' '%4' 'a%' '%FF' '%C3' '%00'; do
        api POST "/kernels/$bad/teardown" --data-binary '{}'
        assert_equal "$status_code $output" '400 {"error":"URI malformed"}'
    done
    # A decoded id is an id, never a path: looked up, not found.
    api GET '/shell-executions/..%2F..%2Fetc?sessionId=s1&agentId=main'
    assert_equal "$status_code $output" '400 {"error":"Execution not found for this Agent"}'
    # Literal segments are matched as sent: an escaped one is no route.
    api GET '/st%61tus'
    assert_equal "$status_code" 404
    api GET '/status?x=%zz'
    assert_equal "$status_code" 200
}

@test "features of later stages answer as the upstream does without them" {
    api GET /environments
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Scientific environments are disabled by configuration"}' ]
    # The setup view answers 200 while disabled, with upstream's fields.
    api GET /environment-setup
    assert_equal "$status_code" 200
    assert_equal "$(jq -c '[.state, .phase, .error, .managedProvisioner, .networkPolicy, (.updatedAt | type), .starterPackages.python[0], .starterPackages.r[0], (.allowedChannels | type)]' <<< "$output")" \
        '["disabled","disabled",null,true,"allowed-channels","string","python=3.12","r-base=4.4","array"]'
    api POST /environment-setup --data-binary '{"confirmed":true}'
    assert_equal "$status_code $output" '400 {"error":"Scientific environments are disabled by configuration"}'
    api GET /npu/workloads
    [ "$output" = '[]' ]
    api GET /npu/jobs
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"session_id is required for NPU job access"}' ]
    api GET '/npu/jobs?session_id=s1'
    [ "$output" = '[]' ]
    api GET '/npu/jobs/j1?session_id=s1'
    [ "$status_code" = 404 ]
    api GET '/npu/jobs/j1/logs?session_id=s1'
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Unknown NPU job: j1"}' ]
    signed /npu/jobs '{"workloadId":"npu.smoke_test"}'
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"NPU Broker is disabled"}' ]
    api GET /npu/devices
    [ "$(jq -r .supported <<< "$output")" = false ]
    api GET /resources
    [ "$(jq -r '.workspaceDisk.path' <<< "$output")" = "$(realpath "$WORK/data/remote-workspaces")" ]
}

@test "configuration: a bad value stops startup naming the variable" {
    for bad in "SCIENCE_AGENT_RUNNER_PORT=70000" "SCIENCE_AGENT_EXECUTION_SIGNATURE_MAX_AGE_MS=0" \
               "SCIENCE_AGENT_MAX_OUTPUT_BYTES=-1" "SCIENCE_AGENT_SANDBOX_PROVIDER=seatbelt" \
               "SCIENCE_AGENT_EXECUTION_RETENTION_SECONDS=1w" "SCIENCE_AGENT_EXECUTION_LOG_MAX_BYTES=-5" \
               "SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP=all" "SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS=99999999999"; do
        run --separate-stderr env "$bad" sbx-httpd
        assert_failure 2
        [[ "$stderr" == *"${bad%%=*}"* ]]
    done
}

@test "a Unix socket instead of TCP: parent 0700, socket 0600, removed on SIGTERM" {
    kill "$HTTPD_PID"; wait "$HTTPD_PID" || true
    sock="$WORK/run/api.sock"
    httpd_start SCIENCE_AGENT_RUNNER_SOCKET="$sock"
    [ "$(stat -c %a "$WORK/run")" = 700 ] && [ "$(stat -c %a "$sock")" = 600 ]
    run curl -sS --unix-socket "$sock" http://runner/health
    [ "$(jq -r .status <<< "$output")" = ok ]
    kill "$HTTPD_PID"; wait "$HTTPD_PID" || true
    [ ! -e "$sock" ]
}

@test "permissionEpoch networkAccess selects domain-allowlist through sbx-egress; a mismatch reads as none" {
    access='{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":false}'
    signed /execute-shell "$(shell_request n1 'curl -sS -i http://other.test/ | grep -i ^x-sandbox-network' |
        jq -c ".permissionEpoch.networkPolicy = \"domain-allowlist\" | .permissionEpoch.networkAccess = $access")"
    [ "$status_code" = 200 ]
    [[ "$(jq -r .stdout <<< "$output")" == *"other.test:80 is not in the sandbox network allowed domains"* ]]
    [ "$(jq -r .networkPolicy <<< "$output")" = domain-allowlist ]
    [[ "$(jq -r .networkAccessRevision <<< "$output")" =~ ^[0-9a-f]{16}$ ]]
    [ "$(jq -r .environmentVariables.HTTP_PROXY <<< "$output")" = http://127.0.0.1:18118 ]
    # networkAccess for another mode than the policy: no network at all.
    signed /execute-shell "$(shell_request n2 'env | grep -c PROXY || true' |
        jq -c ".permissionEpoch.networkPolicy = \"none\" | .permissionEpoch.networkAccess = $access")"
    [ "$(jq -r .networkPolicy <<< "$output")" = none ] && [ "$(jq -r .stdout <<< "$output")" = 0 ]
}

@test "networkAccess.revision is echoed as networkAccessRevision; sbx's own hash only when the epoch has none" {
    access='{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":false,"revision":"3f2a9c1d0b7e4a55"}'
    signed /execute-shell "$(shell_request nr1 true |
        jq -c ".permissionEpoch.networkPolicy = \"domain-allowlist\" | .permissionEpoch.networkAccess = $access")"
    [ "$status_code" = 200 ]
    [ "$(jq -r .networkAccessRevision <<< "$output")" = 3f2a9c1d0b7e4a55 ]
    long=$(printf 'r%.0s' $(seq 200))
    signed /execute-shell "$(shell_request nr2 true |
        jq -c --arg rev "$long" ".permissionEpoch.networkPolicy = \"domain-allowlist\" | .permissionEpoch.networkAccess = $access | .permissionEpoch.networkAccess.revision = \$rev")"
    [ "$status_code" = 400 ]
    [[ "$(jq -r .error <<< "$output")" == *networkAccess.revision* ]]
    signed /execute-shell "$(shell_request nr3 true |
        jq -c ".permissionEpoch.networkPolicy = \"domain-allowlist\" | .permissionEpoch.networkAccess = $access | .permissionEpoch.networkAccess.revision = 7")"
    [ "$status_code $(jq -r .error <<< "$output")" = "400 networkAccess.revision must be a string" ]
}

@test "a per-execution outbound proxy and the open network mode are refused by name, never ignored" {
    access='{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":false}'
    allow=".permissionEpoch.networkPolicy = \"domain-allowlist\" | .permissionEpoch.networkAccess = $access"
    signed /execute-shell "$(shell_request px1 'touch /workspace/px1-ran' |
        jq -c "$allow | .sandboxEgressProxy = {kind: \"url\", url: \"http://proxy.test:3128\"}")"
    [ "$status_code" = 400 ]
    [[ "$(jq -r .error <<< "$output")" == sandboxEgressProxy:* ]]
    [ ! -e "$PROJECT/px1-ran" ]
    # A direct route is what the gateway does: accepted; one that also
    # names a proxy, or says otherwise in another key, is not direct.
    signed /execute-shell "$(shell_request px2 true | jq -c "$allow | .sandboxEgressProxy = {kind: \"direct\"}")"
    [ "$status_code" = 200 ]
    n=0
    for route in '{"kind":"direct","url":"http://10.9.9.9:3128"}' '{"kind":"direct","mode":"proxy"}' \
        '{"kind":5,"mode":"direct"}' '{"type":"direct","proxyUrl":"http://p:1"}' '"direct"' '[]' '{}'; do
        n=$((n + 1))
        signed /execute-shell "$(shell_request "pxs$n" true | jq -c --argjson r "$route" "$allow | .sandboxEgressProxy = \$r")"
        [ "$status_code" = 400 ] || fail "$route: $status_code $output"
    done
    # Without egress the route is moot: no traffic leaves.
    signed /execute-shell "$(shell_request px3 true | jq -c '.sandboxEgressProxy = {kind: "url", url: "http://proxy.test:3128"}')"
    [ "$status_code" = 200 ]
    open='{"mode":"open","allowedDomains":[],"allowPrivateNetwork":false}'
    signed /execute-shell "$(shell_request op1 'touch /workspace/op1-ran' |
        jq -c ".permissionEpoch.networkPolicy = \"open\" | .permissionEpoch.networkAccess = $open")"
    [ "$status_code" = 400 ]
    [[ "$(jq -r .error <<< "$output")" == *'networkPolicy "open"'* ]]
    [ ! -e "$PROJECT/op1-ran" ]
    # Asked for, whatever networkAccess says: still refused, not run without network.
    signed /execute-shell "$(shell_request op2 'touch /workspace/op2-ran' | jq -c '.permissionEpoch.networkPolicy = "open"')"
    [ "$status_code" = 400 ] && [ ! -e "$PROJECT/op2-ran" ]
}

@test "modifiedFiles: a file the workload never touched is not modified, though the runner chowned it; a changed one is" {
    printf 'host file\n' > "$PROJECT/host.txt"    # the host's, owned by the daemon's uid
    printf 'other\n' > "$PROJECT/other.txt"
    signed /execute-shell "$(shell_request mf1 'printf OTHER > other.txt')"
    [ "$status_code" = 200 ]
    [ "$(jq -c .modifiedFiles <<< "$output")" = '["other.txt"]' ]
    [ "$(jq -c .createdFiles <<< "$output")" = '[]' ]
}

@test "a queued execution whose client disconnects never starts; teardown waits for the session's executions" {
    mkfifo -m 666 "$PROJECT/started"
    in_background first "$(shell_request first 'echo > /workspace/started; sleep 2')" /execute-shell
    first=$bg
    await_fifo "$PROJECT/started"
    # Same session and agent: the second waits its turn, then its client goes.
    shell_request second 'touch /workspace/second-ran' > "$WORK/req2.json"
    read -r ts sig < <(sign "$WORK/req2.json")
    curl -sS --max-time 0.5 -H "authorization: Bearer $TOKEN" -H "x-science-execution-timestamp: $ts" \
        -H "x-science-execution-signature: $sig" --data-binary @"$WORK/req2.json" "$BASE/execute-shell" || true
    # Teardown of the session returns only once the first has finished.
    api POST /kernels/teardown --data-binary '{"sessionId":"s1"}'
    [ "$status_code" = 200 ]
    api GET /status
    [ "$(jq '.activeExecutions | length' <<< "$output")" = 0 ]
    wait "$first"
    [ ! -e "$PROJECT/second-ran" ]
}

@test "the bearer is checked from the head: 50 unauthenticated partial bodies of 1.9 MB buffer nothing" {
    run rss_growth_with_bodies 50 "POST /execute-shell HTTP/1.1"
    assert_success
    # Buffered, the bodies alone would be 95 MB; a few MiB of threads remain.
    [ "$output" -lt 40000 ] || fail "RSS grew by $output KiB"
    # And a complete unauthenticated body gets its 401.
    run curl -sS -o /dev/null -w '%{http_code}' --data-binary @<(head -c 1500000 /dev/zero) "$BASE/execute-shell"
    assert_output 401
}

@test "run directories do not accumulate: gone once delivered, kept only with a retention" {
    runs="$WORK/data/runner-executions/runs"
    for i in $(seq 20); do
        signed /execute-shell "$(shell_request "ret$i" 'head -c 100000 /dev/zero | tr "\0" x')"
        [ "$status_code" = 200 ]
    done
    # A run directory the workload nested 300 levels deep in its scratch goes too.
    signed /execute-shell "$(shell_request ret-deep 'cd /scratch && for i in $(seq 300); do mkdir x; cd x; done; echo deep')"
    [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = deep ]
    signed /shell-executions "$(shell_request ret-managed 'echo managed')"
    wait_state ret-managed completed
    api GET "/shell-executions/ret-managed/logs?sessionId=s1&agentId=main&cursor=0"
    [ "$(jq -r '[.chunks[].text] | join("")' <<< "$output")" = managed ]
    # Removed just after each answer went out (sbx-run reaped first).
    no_run_dirs() { [ -z "$(find "$runs" -mindepth 1 -maxdepth 1 -name 'h*' -type d)" ]; }
    eventually no_run_dirs || fail "left: $(ls "$runs")"
    httpd_stop
    httpd_start SCIENCE_AGENT_RUN_RETENTION_SECONDS=3600
    signed /execute-shell "$(shell_request ret-kept 'true')"
    [ "$(find "$runs" -mindepth 1 -maxdepth 1 -name 'h*' -type d | wc -l)" -eq 1 ]
}

@test "executionTimeoutMs is the caller's whole limit: 3000 with sleep 2 succeeds (no reserve is taken from it)" {
    signed /execute-shell "$(shell_request exact1 'sleep 2; echo done' '{"executionTimeoutMs": 3000}')"
    assert_equal "$status_code $(jq_out .exitCode) $(jq_out .stdout)" "200 0 done"
}

@test "as root, a data dir below a 0700 directory: executions work (binds staged by fd) and the startup names the directory NPU broker jobs cannot pass" {
    [ "$(id -u)" -eq 0 ] || skip "the workspaces run as other uids as root only"
    httpd_stop
    mkdir -p "$WORK/private" && chmod 700 "$WORK/private"
    : > "$WORK/httpd.err"
    httpd_start SCIENCE_AGENT_DATA_DIR="$WORK/private/data"
    [ "$(grep -c '"code":"data-dir-unreachable"' "$WORK/httpd.err")" = 1 ]
    [ "$(jq -r 'select(.code == "data-dir-unreachable") | .message' "$WORK/httpd.err" | cut -d' ' -f1-3)" = "$WORK/private (mode 0700)" ]
    PROJECT="$WORK/private/data/projects/p1"
    mkdir -p "$PROJECT" && chmod 777 "$PROJECT"
    signed /execute-shell "$(shell_request priv 'echo inside > f; cat f')"
    [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = inside ]
    # A searchable parent: no warning.
    httpd_stop
    : > "$WORK/httpd.err"
    httpd_start
    [ "$(grep -c '"code":"data-dir-unreachable"' "$WORK/httpd.err")" = 0 ]
}

@test "a refused syscall is in the answer's denials (an extension), with its count and remedy" {
    signed /execute-shell "$(shell_request den 'python3 -c "import socket
for _ in range(2):
    try: socket.socket(socket.AF_INET)
    except OSError as e: print(e.strerror)"')"
    assert_equal "$status_code" 200
    [ "$(jq -r .stdout <<< "$output")" = $'Operation not permitted\nOperation not permitted' ]
    [ "$(jq -r '.denials[] | select(.what == "socket(AF_INET)") | .count' <<< "$output")" = 2 ]
    [[ "$(jq -r '.denials[] | select(.what == "socket(AF_INET)") | .remedy' <<< "$output")" == *domain-allowlist* ]]
}
