#!/usr/bin/env bats
# Outputs by reference through a real sbx-httpd: 100 MB and NUL-heavy
# stdout through /execute-shell and managed logs arrive byte-exact (sha256),
# the daemon's memory stays flat, and a configured budget cuts exactly.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

hwm_kib() { awk '/^VmHWM/ { print $2 }' "/proc/$HTTPD_PID/status"; }

# The workload's output, made again here to compare against.
ascii_100mb() { head -c 100000000 /dev/zero | tr '\0' a; }
# NUL-heavy: runs of NUL between text, multi-byte characters, a newline.
nul_heavy() { for i in $(seq 40); do head -c 250000 /dev/zero; printf 'line %d é€😀\n' "$i"; done; }

@test "100 MB of stdout through /execute-shell: 200 with every byte; sbx-httpd's peak RSS grows by less than 32 MiB" {
    before=$(hwm_kib)
    signed /execute-shell "$(shell_request big1 'head -c 100000000 /dev/zero | tr "\0" a; echo done >&2')"
    [ "$status_code" = 200 ]
    after=$(hwm_kib)
    echo "# sbx-httpd VmHWM ${before} -> ${after} KiB for a 100 MB answer" >&3
    [ "$(jq -j .stdout "$WORK/body" | sha256sum)" = "$(ascii_100mb | sha256sum)" ]
    [ "$(jq -c '[.stderr, .truncated, .exitCode]' "$WORK/body")" = '["done\n",false,0]' ]
    [ $((after - before)) -lt 32768 ]
}

@test "NUL-heavy stdout through /execute-shell: each NUL as \\u0000, every byte back, invalid UTF-8 as U+FFFD" {
    code="$(declare -f nul_heavy); nul_heavy; printf 'bad:\\377\\303' >&2"
    signed /execute-shell "$(shell_request nul1 "$code")"
    [ "$status_code" = 200 ]
    [ "$(jq -j .stdout "$WORK/body" | sha256sum)" = "$(nul_heavy | sha256sum)" ]
    [ "$(grep -o '\\u0000' "$WORK/body" | wc -l)" = 10000000 ]
    [ "$(jq -r .stderr "$WORK/body")" = "bad:��" ]
}

@test "a configured budget cuts at it exactly: head + marker + tail, UTF-8 intact, truncated true" {
    budget=100001
    code='for i in $(seq 30000); do printf "é%05d€" $i; done; printf "😀%.0s" $(seq 20000) >&2'
    signed /execute-shell "$(shell_request cut1 "$code" "{\"maxOutputBytes\":$budget}")"
    [ "$status_code" = 200 ]
    [ "$(jq .truncated "$WORK/body")" = true ]
    kept=$(jq -j '.stdout + .stderr' "$WORK/body" | wc -c)
    # A cut never splits a character: at most 3 bytes on each side of a marker.
    [ "$kept" -le "$budget" ] && [ "$kept" -ge $((budget - 12)) ]
    ! jq -j '.stdout + .stderr' "$WORK/body" | grep -q $'\xef\xbf\xbd'
    marker="...[output truncated: exceeded $budget bytes; set SCIENCE_AGENT_MAX_OUTPUT_BYTES=0 to disable]..."
    full=$(for i in $(seq 30000); do printf "é%05d€" $i; done)
    jq -j .stdout "$WORK/body" > "$WORK/out"
    head=$(awk -v m="$marker" 'index($0, m) { print substr($0, 1, index($0, m) - 1); exit } { print }' "$WORK/out")
    [ -n "$head" ] && [ "${full#"$head"}" != "$full" ]
    grep -qF "$marker" "$WORK/out"
    tail=$(jq -j '.stdout | split("'"$marker"'\n")[1]' "$WORK/body")
    [ -n "$tail" ] && [ "${full%"$tail"}" != "$full" ]
}

@test "100 MB and NUL-heavy output of a managed execution arrive byte-exact through the log pages" {
    code="$(declare -f nul_heavy); head -c 100000000 /dev/zero | tr '\\0' a; nul_heavy >&2"
    signed /shell-executions "$(shell_request mbig "$code")"
    [ "$status_code" = 202 ]
    owner='sessionId=s1&agentId=main'
    wait_state mbig completed failed
    [ "$(jq -r .state <<< "$output")" = completed ]
    # The record keeps a 4 MiB (of JSON) head of each output and says so; the logs hold every byte.
    [ "$(jq -c '[.result.outputCut, (.result.stdout | length)]' <<< "$output")" = '[true,4194304]' ]
    [ "$(jq -c '.result.stderr | tojson | utf8bytelength <= 4194306' <<< "$output")" = true ]
    mkdir "$WORK/logs"
    run python3 "$BATS_TEST_DIRNAME/../fixtures/log-pages.py" "$BASE" "$TOKEN" mbig "$owner" "$WORK/logs"
    [ "$status" = 0 ]
    echo "# $output" >&3
    [ "$(jq -c '[.maxPage <= 4, .maxChunk <= 4096, .consecutive, .retentionTruncated]' <<< "$output")" = '[true,true,true,false]' ]
    [ "$(sha256sum < "$WORK/logs/stdout")" = "$(ascii_100mb | sha256sum)" ]
    [ "$(sha256sum < "$WORK/logs/stderr")" = "$(nul_heavy | sha256sum)" ]
}

@test "warm sbx-run standbys: the pool stays full, each execution takes one with its own workspace fd, and at shutdown none is left, nor a cgroup" {
    standbys() { pgrep -P "$HTTPD_PID" -f -- '--standby' | sort; }
    for _ in $(seq 100); do [ "$(standbys | wc -l)" = 2 ] && break; read -rt 0.05 <> <(:) || true; done
    [ "$(standbys | wc -l)" = 2 ]
    first=$(standbys)
    # Each waits with its execution directory made (renamed to the execution's id when one comes).
    runs="$WORK/data/runner-executions/runs"
    for pid in $first; do [ -f "$runs/.standby-$pid/supervisor.json" ] && [ -d "$runs/.standby-$pid/scratch/outputs" ]; done
    mkdir -p "$WORK/data/projects/p2" && chmod 777 "$WORK/data/projects/p2"
    for i in 1 2 3; do
        signed /execute-shell "$(shell_request warm$i "echo run$i > mark$i; cat mark$i")"
        [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = "run$i" ]
        # The same pool, another workspace: its directory came over the socket, not another's.
        signed /execute-shell "$(shell_request other$i "ls" | jq -c --arg ws "$WORK/data/projects/p2" '.workspaceRoot = $ws')"
        [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = "" ]
    done
    [ "$(cat "$PROJECT/mark3")" = run3 ]
    # Taken ones were replaced by new processes.
    for _ in $(seq 100); do [ "$(standbys | wc -l)" = 2 ] && break; read -rt 0.05 <> <(:) || true; done
    [ "$(standbys | wc -l)" = 2 ] && [ "$(comm -12 <(echo "$first") <(standbys) | wc -l)" = 0 ]
    pids=$(standbys)
    httpd_stop
    for pid in $pids; do timeout 10 tail --pid="$pid" -f /dev/null; done
    for pid in $pids; do ! kill -0 "$pid" 2>/dev/null; done
    [ -z "$(find "$runs" -maxdepth 1 -name '.standby-*')" ]
    # Each removed its cgroups on the way out (as root, on a cgroup host).
    for pid in $pids; do [ -z "$(find /sys/fs/cgroup -maxdepth 6 -name "sbx-$pid-standby" 2>/dev/null)" ]; done
}

@test "SBX_WARM_RUNNERS=0: no standby, every execution starts its sbx-run cold" {
    httpd_stop
    httpd_start SBX_WARM_RUNNERS=0
    signed /execute-shell "$(shell_request cold1 'echo cold')"
    [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = cold ]
    [ -z "$(pgrep -P "$HTTPD_PID" -f -- '--standby')" ]
}

@test "a run that leaves 30,000 files (4.5 MB of names in createdFiles) still gets its result" {
    # No process per file (a slow machine forks slowly); a generous budget.
    code='z=$(printf %0140d 0); for i in $(seq 30000); do : > "f-$i-$z"; done; echo made'
    signed /execute-shell "$(shell_request many1 "$code" '{"executionTimeoutMs":300000}')"
    [ "$status_code" = 200 ]
    [ "$(jq -c '[.stdout, (.createdFiles | length)]' "$WORK/body")" = '["made\n",30000]' ]
}

@test "managed logs end with what the record ends with: an unfinished character is U+FFFD, not dropped" {
    signed /shell-executions "$(shell_request tail1 "printf 'x\\342\\202'")"
    [ "$status_code" = 202 ]
    wait_state tail1 completed
    record=$(jq -r .result.stdout <<< "$output")
    [ "$record" = "x��" ]
    mkdir "$WORK/logs"
    python3 "$BATS_TEST_DIRNAME/../fixtures/log-pages.py" "$BASE" "$TOKEN" tail1 'sessionId=s1&agentId=main' "$WORK/logs"
    [ "$(cat "$WORK/logs/stdout")" = "$record" ]
}
