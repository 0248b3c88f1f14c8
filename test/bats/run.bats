#!/usr/bin/env bats
# sbx-run end to end: one supervised execution from a shell, its result,
# the workspace lease, quota, output budget, deadline and cancel, a killed
# supervisor, and limits.

load launch_helpers

setup() {
    launch_setup
    STATE="$WORK/state"
}

teardown() {
    launch_teardown
}

# request ID LANGUAGE CODE [EXTRA-JSON]
request() {
    jq -cn --arg id "$1" --arg lang "$2" --arg code "$3" --arg ws "$WS" --argjson extra "${4:-{\}}" \
        '{executionId: $id, language: $lang, code: $code, workspace: $ws} + $extra'
}

# sbx_run ID LANGUAGE CODE [EXTRA-JSON]: $output holds the events, $result the result.
sbx_run() {
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(request "$@")"
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
}

r() { jq -r "$1" <<<"$result"; }

@test "shell: code on stdin, exit code, stdout, stderr, created/modified/deleted, env, cwd" {
    echo old > "$WS/keep.txt"
    echo gone > "$WS/gone.txt"
    sbx_run e1 shell 'echo hi > f; cat f; echo err >&2; echo more >> keep.txt; rm gone.txt; pwd; exit 3'
    assert_failure 1 # the workload failed
    [ "$(r .exitCode)" = 3 ]
    [ "$(r .stdout)" = $'hi\n/workspace' ]
    [ "$(r .stderr)" = err ]
    [ "$(r '.createdFiles | join(",")')" = f ]
    [ "$(r '.modifiedFiles | join(",")')" = keep.txt ]
    [ "$(r '.deletedFiles | join(",")')" = gone.txt ]
    [ "$(r .workingDirectory)" = /workspace ]
    [ "$(r .environmentVariables.HOME)" = /tmp ]
    [ "$(r .environmentVariables.PATH)" = /usr/bin:/bin:/run/sbx/bin ]   # sbx-report last
    [ "$(r .failureClass)" = null ]
    [ "$(r .truncated)" = false ]
    [[ "$(r .workspaceSnapshot.digest)" =~ ^sha256: ]]
    [ "$(r .workspaceSnapshot.pool)" = agent-state ]
    # Events: started then finished; result.json is the same result.
    [ "$(printf '%s\n' "$output" | jq -r .event | tr '\n' ' ')" = "mode started finished " ]
    # The finished event says the status sbx-run exits with (1: the workload failed).
    [ "$(printf '%s\n' "$output" | jq -r 'select(.event == "finished") | .status')" = 1 ]
    [ "$(jq -c . "$STATE/e1/result.json")" = "$result" ]
    [ ! -e "$STATE/e1/supervisor.json" ]
}

@test "shell runs with -euo pipefail: a failing command stops the script" {
    sbx_run e2 shell $'false\necho not-reached'
    assert_failure 1
    [ "$(r .exitCode)" = 1 ]
    [ "$(r .stdout)" = "" ]
}

@test "python: python3 -I - with the request's env and a workspace-relative cwd" {
    mkdir "$WS/sub"
    sbx_run p1 python $'import os, sys\nprint(os.getcwd(), os.environ["MY_VAR"], sys.flags.isolated)\nopen("made.txt", "w").write("x")' \
        '{"env":{"MY_VAR":"v1"},"cwd":"sub"}'
    assert_success
    [ "$(r .exitCode)" = 0 ]
    [ "$(r .stdout)" = "/workspace/sub v1 1" ]
    [ "$(r '.createdFiles | join(",")')" = sub/made.txt ]
    [ "$(r .workingDirectory)" = /workspace/sub ]
    [ "$(r .environmentVariables.MY_VAR)" = v1 ]
}

@test "r: /opt/science-env/bin/R --vanilla --slave from the environment prefix" {
    mkdir -p "$WORK/env/bin"
    # A stand-in R with the real one's interface: code on stdin, the runner's flags.
    printf '#!/bin/sh\necho "R $*"\ncat\n' > "$WORK/env/bin/R"
    chmod 755 "$WORK/env/bin/R"
    sbx_run r1 r 'print(1)' "{\"environment\":{\"prefix\":\"$WORK/env\"}}"
    assert_success
    [ "$(r .stdout)" = $'R --vanilla --slave\nprint(1)' ]
    [ "$(r .environmentVariables.PATH)" = /opt/science-env/bin:/usr/bin:/bin:/run/sbx/bin ]
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(request r2 r 'print(1)')"
    assert_failure 2
    [[ "$stderr" == *"R execution requires the scientific environment capability"* ]]
}

@test "bad requests exit 2 naming the field, and create nothing" {
    for req in '{}' '{"executionId":"a b","language":"shell","code":"x","workspace":"/tmp"}' \
        '{"executionId":".standby-1","language":"shell","code":"x","workspace":"/tmp"}' \
        '{"executionId":"..","language":"shell","code":"x","workspace":"/tmp"}' \
        '{"executionId":"x","language":"cobol","code":"x","workspace":"/tmp"}' \
        '{"executionId":"x","language":"shell","code":"  ","workspace":"/tmp"}' \
        '{"executionId":"x","language":"shell","code":"x","workspace":"rel"}' \
        '{"executionId":"x","language":"shell","code":"x","workspace":"/tmp","timeoutMs":-1}' \
        '{"executionId":"x","language":"shell","code":"x","workspace":"/tmp","cwd":"/abs"}' \
        '{"executionId":"x","language":"shell","code":"x","workspace":"/tmp","env":{"LD_PRELOAD":"x"}}' \
        '{"executionId":"x","language":"shell","code":"x","workspace":"/tmp","bogus":1}'; do
        run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$req"
        assert_failure 2
        jq -e '.level == "error"' <<<"$stderr" >/dev/null
        if [[ "$req" == *'"executionId":"."'* ]]; then [[ "$stderr" == *"no leading dot"* ]]; fi
    done
    [ ! -e "$STATE" ]
    sbx_run dup shell 'true'
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(request dup shell 'true')"
    assert_failure 2
    [[ "$stderr" == *"executionId"*"already used"* ]]
}

@test "the lease: two runs on one workspace (one through a symlink) never overlap" {
    ln -s "$WS" "$WORK/ws-link"
    code='echo "start $(date +%s%N)" >> /workspace/log; sleep 0.3; echo "end $(date +%s%N)" >> /workspace/log'
    sbx-run --state-dir "$STATE" - <<<"$(request l1 shell "$code")" > "$WORK/l1.out" &
    a=$!
    sbx-run --state-dir "$STATE" - <<<"$(request l2 shell "$code" "{\"workspace\":\"$WORK/ws-link\"}")" > "$WORK/l2.out" &
    b=$!
    wait "$a"
    wait "$b"
    # start, end, start, end: never two starts in a row.
    [ "$(cut -d' ' -f1 "$WS/log" | tr '\n' ' ')" = "start end start end " ]
    # The second of them waited, and said so.
    [ "$(cat "$WORK/l1.out" "$WORK/l2.out" | jq -r 'select(.event == "queued") | .event' | wc -l)" -eq 1 ]
}

@test "the lease: runs on different workspaces run at the same time" {
    # Each waits inside its sandbox until it sees the other has started:
    # serialized runs would both time out.
    mkdir -p "$WORK/parent/a" "$WORK/parent/b"
    [ "$(id -u)" -ne 0 ] || chown -R 10001:10001 "$WORK/parent"
    wait_for() { printf 'touch /workspace/%s/started; until [ -e /workspace/%s/started ]; do sleep 0.02; done; echo met' "$1" "$2"; }
    sbx-run --state-dir "$STATE" - <<<"$(request o1 shell "$(wait_for a b)" \
        "{\"workspace\":\"$WORK/parent/a\",\"readOnlyWorkspace\":\"$WORK/parent\",\"cwd\":\"\",\"timeoutMs\":20000}")" > "$WORK/o1.out" &
    a=$!
    sbx-run --state-dir "$STATE" - <<<"$(request o2 shell "$(wait_for b a)" \
        "{\"workspace\":\"$WORK/parent/b\",\"readOnlyWorkspace\":\"$WORK/parent\",\"timeoutMs\":20000}")" > "$WORK/o2.out" &
    b=$!
    wait "$a"
    wait "$b"
    for f in o1 o2; do
        [ "$(jq -r 'select(.event == "finished") | .result.stdout' "$WORK/$f.out")" = met ]
    done
}

@test "quota: over quota before the run is refused with the upstream text" {
    head -c 200000 /dev/zero > "$WS/big"
    sbx_run q1 shell 'echo ran' '{"maxWorkspaceBytes":100000}'
    assert_failure 6
    [ "$(r .failureClass)" = resource-exhausted ]
    [[ "$(r .error)" == "Workspace exceeds the 100000 byte execution quota (current limit from system quota settings / SCIENCE_AGENT_MAX_WORKSPACE_BYTES; set to 0 for unlimited)" ]]
    [ "$(r .stdout)" = "" ]
    # 0 disables the quota.
    sbx_run q2 shell 'echo ran' '{"maxWorkspaceBytes":0}'
    assert_success
    [ "$(r .stdout)" = ran ]
}

@test "quota: a dd that crosses the limit mid-run is killed and reported" {
    sbx_run q3 shell 'dd if=/dev/zero of=big bs=1M count=4000 2>/dev/null; echo survived' '{"maxWorkspaceBytes":5000000}'
    assert_failure 6
    [ "$(r .failureClass)" = resource-exhausted ]
    [[ "$(r .error)" == "Workspace exceeded the 5000000 byte execution quota"* ]]
    [ "$(r .stdout)" = "" ]
    # Stopped within a few checks, far from the 4 GB it asked for.
    [ "$(stat -c %s "$WS/big")" -lt 2000000000 ]
}

@test "quota: one fallocate cannot overshoot it (RLIMIT_FSIZE is what is left), and an over-quota tree is not snapshotted" {
    sbx_run q4a shell 'echo small > keep' '{"maxWorkspaceBytes":1048576}'
    assert_success
    before=$(r .workspaceSnapshot.digest)
    sbx_run q4 shell 'fallocate -l 1G big 2>&1 || echo refused; ls -l big 2>/dev/null | wc -l' '{"maxWorkspaceBytes":1048576}'
    assert_success
    [[ "$(r .stdout)" == refused* ]]
    [[ "$(r .stderr)" == *"File size limit exceeded"* ]]
    [ ! -s "$WS/big" ]
    before=$(r .workspaceSnapshot.digest)
    # Many files can still cross it together: the run ends, nothing is stored.
    sbx_run q5 shell 'for i in 1 2 3; do head -c 900000 /dev/zero > f$i; done; sleep 1' '{"maxWorkspaceBytes":1048576}'
    assert_failure 6
    [ "$(r .workspaceSnapshot)" = null ]
    # The workspace's ref still names the last snapshot within quota.
    [ "$(cat "$STATE"/snapshots/refs/ws-*[0-9])" = "$before" ]
}

@test "quota: 10,000 symlinks with 4 KB targets under a 1 MiB quota end the run (every inode's blocks count)" {
    # One xargs makes them: 40 MB of disk without a regular-file byte.
    code=$'p=$(printf \'%0200d/\' $(seq 20))\nfor i in $(seq 10000); do printf \'%s/n%d\\n\' "$p" "$i"; done | xargs ln -s -t .\necho made'
    sbx_run ql1 shell "$code" '{"maxWorkspaceBytes":1048576}'
    assert_failure 6
    [ "$(r .failureClass)" = resource-exhausted ]
    [[ "$(r .error)" == "Workspace exceeded the 1048576 byte execution quota"* ]]
    [ "$(r .workspaceSnapshot)" = null ]
    [ "$(find "$WS" -maxdepth 1 -type l | wc -l)" -gt 0 ]
    # What it left is over the quota: the next run is refused before it starts.
    sbx_run ql2 shell 'echo ran' '{"maxWorkspaceBytes":1048576}'
    assert_failure 6
    [[ "$(r .error)" == "Workspace exceeds the 1048576 byte execution quota"* ]]
    [ "$(r .stdout)" = "" ]
}

@test "quota: maxWorkspaceFiles (default 100000): many empty files end the run, content under both caps runs" {
    caps='{"maxWorkspaceBytes":4194304,"maxWorkspaceFiles":1000}'
    sbx_run qf1 shell 'mkdir d; for i in $(seq 300); do echo "line $i" > d/f$i; done; echo done' "$caps"
    assert_success
    [ "$(r .stdout)" = done ]
    [[ "$(r .workspaceSnapshot.digest)" =~ ^sha256: ]]
    # Empty files hold no byte, but each is a name.
    sbx_run qf2 shell 'for i in $(seq 5000); do : > e$i; done; echo made' "$caps"
    assert_failure 6
    [ "$(r .failureClass)" = resource-exhausted ]
    [[ "$(r .error)" == "Workspace exceeded the 1000 file execution quota (every name counts"*"maxWorkspaceFiles"* ]]
    [ "$(r .workspaceSnapshot)" = null ]
    sbx_run qf3 shell 'echo ran' "$caps"
    assert_failure 6
    [[ "$(r .error)" == "Workspace exceeds the 1000 file execution quota"* ]]
    # 0 lifts the cap; a negative one is refused by name.
    sbx_run qf4 shell 'echo ran' '{"maxWorkspaceFiles":0}'
    assert_success
    [ "$(r .stdout)" = ran ]
    sbx_run qf5 shell 'echo ran' '{"maxWorkspaceFiles":-1}'
    assert_failure 2
    [[ "$stderr" == *"maxWorkspaceFiles"* ]]
    # The default: 100,000 names, a hard link's each (two inodes here, made
    # by the host: links are far cheaper to make than inodes).
    rm -rf "$WS"/* && mkdir "$WS/many" && python3 -c 'import os, sys
os.chdir(sys.argv[1])
for f in ("a", "b"):
    open(f, "w").close()
    for i in range(50000): os.link(f, f + str(i))' "$WS/many"
    sbx_run qf6 shell 'echo ran'
    assert_failure 6
    [[ "$(r .error)" == "Workspace exceeds the 100000 file execution quota"* ]]
}

@test "output: 2 GiB with a 1 MiB budget keeps head and tail, valid UTF-8, flat memory" {
    code=$'printf \'\\303\\251%.0s\' $(seq 1 300000); (yes \'\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 tail\' | head -c 2147483655) || true; echo THE-END'
    sbx_run big shell "$code" '{"maxOutputBytes":1048576}'
    assert_success
    [ "$(r .truncated)" = true ]
    [ "$(r .stdoutBytes)" -gt 2147483648 ]
    file="$STATE/big/stdout.txt"
    [ "$(grep -a -c 'output truncated: exceeded 1048576 bytes; set SCIENCE_AGENT_MAX_OUTPUT_BYTES=0 to disable' "$file")" = 1 ]
    [ "$(stat -c %s "$file")" -le $((1048576 + 200)) ]
    [[ "$(head -c 4 "$file")" == "éé" ]]
    [ "$(tail -n 1 "$file")" = THE-END ]
    iconv -f UTF-8 -t UTF-8 "$file" >/dev/null
    echo "# sbx-run peak RSS with 2 GiB of output: $(r .supervisorMaxRssKiB) KiB" >&3
    [ "$(r .supervisorMaxRssKiB)" -lt 65536 ]
}

@test "output under the budget is kept whole, no marker" {
    sbx_run small shell 'seq 1 1000; seq 1 100 >&2' '{"maxOutputBytes":1048576}'
    [ "$(r .truncated)" = false ]
    [ "$(r .stdout)" = "$(seq 1 1000)" ]
    [ "$(r .stderr)" = "$(seq 1 100)" ]
}

@test "timeout kills a workload that setsid()s and double-forks; nothing of it survives" {
    code='(setsid sh -c "trap \"\" TERM; (sleep 911.1 &); sleep 911.2" &); trap "" TERM; sleep 911.3'
    run --separate-stderr sbx-run --grace-ms 300 --state-dir "$STATE" - <<<"$(request t1 shell "$code" '{"timeoutMs":300}')"
    assert_failure 7
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    [ "$(r .timedOut)" = true ]
    [ "$(r .failureClass)" = timeout ]
    [ "$(r .error)" = "Shell execution timed out after 300 ms" ]
    ! pgrep -f "sleep 911"
}

@test "cancel: sbx-run cancel DIR stops the run (SIGTERM, grace, SIGKILL)" {
    sbx-run --grace-ms 200 --state-dir "$STATE" - > "$WORK/c.out" <<<"$(request c1 shell 'touch /workspace/running; sleep 912')" &
    pid=$!
    for _ in $(seq 1 500); do [ -e "$WS/running" ] && break; read -rt 0.01 <> <(:) || true; done
    [ -e "$WS/running" ]
    run sbx-run cancel "$STATE/c1"
    assert_success
    wait "$pid" || status=$?
    [ "${status:-0}" -eq 10 ]
    [ "$(jq -r 'select(.event == "finished") | .result.failureClass' "$WORK/c.out")" = cancelled ]
    ! pgrep -f "sleep 912"
    run --separate-stderr sbx-run cancel "$STATE/c1"
    assert_failure 2
}

@test "cancel while queued for the lease ends the waiting run at once" {
    sbx-run --state-dir "$STATE" - > /dev/null <<<"$(request h1 shell 'touch /workspace/holding; sleep 914')" &
    holder=$!
    for _ in $(seq 1 500); do [ -e "$WS/holding" ] && break; read -rt 0.01 <> <(:) || true; done
    sbx-run --state-dir "$STATE" - > "$WORK/w.out" <<<"$(request h2 shell 'echo ran')" &
    waiter=$!
    for _ in $(seq 1 500); do grep -q '"queued"' "$WORK/w.out" 2>/dev/null && break; read -rt 0.01 <> <(:) || true; done
    grep -q '"queued"' "$WORK/w.out"
    run sbx-run cancel "$STATE/h2"
    assert_success
    wait "$waiter" || status=$?
    [ "${status:-0}" -eq 10 ]
    [ "$(jq -r 'select(.event == "finished") | .result | .failureClass + " " + (.stdout)' "$WORK/w.out")" = "cancelled " ]
    kill -TERM "$holder"
    wait "$holder" || true
    ! pgrep -f "sleep 914"
}

@test "kill -9 of sbx-run mid-run: the sandbox dies, the lease is free, no partial result" {
    sbx-run --state-dir "$STATE" - > /dev/null <<<"$(request k1 shell 'touch /workspace/running; sleep 913')" &
    pid=$!
    for _ in $(seq 1 500); do [ -e "$WS/running" ] && break; read -rt 0.01 <> <(:) || true; done
    [ -e "$WS/running" ]
    kill -9 "$pid"
    wait "$pid" || true
    for _ in $(seq 1 500); do pgrep -f "sleep 913|bwrap .*$WORK" >/dev/null || break; read -rt 0.01 <> <(:) || true; done
    ! pgrep -f "sleep 913"
    # bwrap itself dies with its supervisor too (its parent-death signal
    # survives sbx-launch's switch to the sandbox uid), never re-parented to init.
    ! pgrep -f "bwrap .*$WORK"
    [ ! -e "$STATE/k1/result.json" ]
    lock=$(ls "$STATE"/locks/ws-*.lock)
    flock -n "$lock" true
    sbx_run k2 shell 'echo again'
    assert_success
    [ "$(r .stdout)" = again ]
}

# v1_writable: this host has cgroup v1 memory and pids hierarchies and we are root.
v1_writable() {
    [ "$(id -u)" -eq 0 ] && awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ { m = 1 } $9 == "cgroup" && $NF ~ /(^|,)pids(,|$)/ { p = 1 } END { exit !(m && p) }' /proc/self/mountinfo
}

@test "limits: refused with a clear error where no cgroup is writable (explicit limits must hold exactly)" {
    root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    if [ -n "$root" ] && grep -qw memory "$root/cgroup.subtree_control" 2>/dev/null; then
        skip "this host delegates cgroup v2 memory control"
    fi
    v1_writable && skip "root on a cgroup v1 host: the v1 hierarchies hold the limits"
    sbx_run lim shell 'echo ran' '{"limits":{"memoryBytes":100000000}}'
    assert_failure 4
    [[ "$(r .error)" == *"neither a writable cgroup v2 subtree"*"nor writable cgroup v1 hierarchies"* ]]
    [ "$(r .stdout)" = "" ]
}

@test "limits: cgroup v1 memory and pids hierarchies hold them as root; an allocation past memoryBytes is OOM-killed" {
    v1_writable || skip "needs root and cgroup v1 memory and pids hierarchies"
    sbx_run v1a shell 'python3 -c "x = bytearray(300 << 20)" && echo allocated' '{"limits":{"memoryBytes":100000000,"pids":64}}'
    [ "$(r .limits.mode)" = cgroup-v1 ]
    [ "$(r .limits.oomKilled)" = true ]
    [[ "$(r .stdout)" != *allocated* ]]
    # The same allocation under the default bound (8 GiB) succeeds.
    sbx_run v1b shell 'python3 -c "x = bytearray(300 << 20)" && echo allocated'
    assert_success
    [ "$(r .stdout)" = allocated ]
    [ "$(r .limits.mode)" = cgroup-v1 ]
    [ "$(r .limits.memoryBytes)" = 8589934592 ]
    [ "$(r .limits.pids)" = 4096 ]
    [ "$(r .limits.oomKilled)" = false ]
    # Nothing of either run's cgroups is left.
    [ -z "$(find /sys/fs/cgroup/memory /sys/fs/cgroup/pids -maxdepth 5 -type d -name 'sbx-*-v1[ab]')" ]
}

@test "limits: a fork bomb stops at limits.pids (cgroup v1 pids.max) and the run still ends" {
    v1_writable || skip "needs root and cgroup v1 memory and pids hierarchies"
    cat > "$WS/bomb.py" <<'PY'
import os, signal, time
kids = []
try:
    for _ in range(200):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError:
    pass
print("started", len(kids), flush=True)
for k in kids:
    os.kill(k, signal.SIGKILL)
PY
    sbx_run v1c shell 'python3 bomb.py' '{"limits":{"pids":32}}'
    [ "$(r .limits.mode)" = cgroup-v1 ]
    started=$(r .stdout | awk '/^started/ { print $2 }')
    [ -n "$started" ] && [ "$started" -lt 32 ] || fail "started ${started:-?} of 200 under pids 32: $(r .stdout) $(r .stderr)"
}

@test "limits: with no writable cgroup the default memory bound falls back to RLIMIT_AS and says so" {
    v1_writable && skip "root on a cgroup v1 host: a cgroup holds the default"
    sbx_run rl1 shell 'ulimit -v'
    assert_success
    [ "$(r .stdout)" = 8388608 ]
    [ "$(r .limits.mode)" = rlimit ]
    [[ "$(r .limits.note)" == *RLIMIT_AS* ]]
    # limits.memoryBytes 0 turns the bound off.
    sbx_run rl2 shell 'ulimit -v' '{"limits":{"memoryBytes":0,"pids":0}}'
    [ "$(r .stdout)" = unlimited ]
}

@test "limits: written to the delegated cgroup named by SBX_CGROUP_ROOT and reported" {
    # A stand-in cgroup v2 directory with the kernel's file interface.
    cg="$WORK/cgroup"
    mkdir "$cg"
    echo "cpu memory pids" > "$cg/cgroup.controllers"
    echo "cpu memory pids" > "$cg/cgroup.subtree_control"
    SBX_CGROUP_ROOT="$cg" run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(request lim2 shell 'echo ran' \
        '{"limits":{"memoryBytes":100000000,"pids":64,"cpuPercent":150}}')"
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    [ "$(r .limits.mode)" = cgroup-v2 ]
    [ "$(r .limits.memoryBytes)" = 100000000 ]
    [ "$(r .limits.pids)" = 64 ]
    [ "$(r .limits.cpuPercent)" = 150 ]
    d=$(echo "$cg"/sbx-*-lim2)
    [ -d "$d" ]
    [ "$(cat "$d/memory.max")" = 100000000 ]
    [ "$(cat "$d/memory.swap.max")" = 0 ]
    [ "$(cat "$d/pids.max")" = 64 ]
    [ "$(cat "$d/cpu.max")" = "150000 100000" ]
    # The sandbox's first process joined it before exec.
    [ "$(cat "$d/cgroup.procs")" = 0 ]
}

@test "set-uid and set-gid bits are cleared after the run and counted; the workspace can come as fd:N" {
    sbx_run su1 shell 'cp /usr/bin/true a; chmod 4755 a; mkdir -p d; cp a d/b; chmod 2711 d/b; cp a c; chmod 755 c; ln -s a l'
    assert_success
    [ "$(r .setIdBitsCleared)" = 2 ]
    [ "$(stat -c %a "$WS/a") $(stat -c %a "$WS/d/b") $(stat -c %a "$WS/c")" = "755 711 755" ]
    # The same workspace named by an inherited descriptor (bats owns fd 3).
    exec 7<"$WS"
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(jq -cn '{executionId: "fd1", language: "shell", code: "ls a", workspace: "fd:7"}')"
    exec 7<&-
    assert_success
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    [ "$(r .stdout)" = a ]
}

@test "directories nested past 512 levels: the quota watch stops the run, what lay deeper (a set-uid file too) is removed, the workspace runs on" {
    # Made with cd, past PATH_MAX; a set-uid file at the bottom and at the top.
    code='cp /usr/bin/true top; chmod 4755 top; mkdir keep; echo k > keep/f
for i in $(seq 2000); do mkdir a; cd a; done; cp /usr/bin/true s; chmod 4755 s; echo made'
    sbx_run deep1 shell "$code" '{"maxWorkspaceBytes": 100000000}'
    assert_failure 6
    [ "$(r .failureClass)" = resource-exhausted ]
    [ "$(r .error)" = "Workspace directories were nested deeper than 512 levels; what lay deeper was removed" ]
    [ "$(r .tooDeepDirectoriesRemoved)" -ge 1 ]
    [ "$(stat -c %a "$WS/top")" = 755 ]
    depth=$(find "$WS" -type d | awk -F/ '{ print NF }' | sort -n | tail -n 1)
    [ $((depth - $(awk -F/ '{ print NF }' <<< "$WS"))) -le 512 ] || fail "still $depth deep"
    [ -z "$(find "$WS" -name s)" ]
    # The next run walks, snapshots and runs as ever.
    sbx_run deep2 shell 'cat keep/f'
    assert_success
    [ "$(r .stdout)" = k ]
    [ "$(r .workspaceSnapshot)" != null ]
}

@test "without a quota a too-deep tree is removed after the run; one placed by the host is refused before it, named" {
    sbx_run deep3 shell 'for i in $(seq 600); do mkdir b; cd b; done; echo made' '{"maxWorkspaceBytes": 0, "maxWorkspaceFiles": 0}'
    assert_failure 6
    [ "$(r .stdout)" = made ]
    [ "$(r .tooDeepDirectoriesRemoved)" = 1 ]
    # A tree the host put there is not the run's to remove: refused, left.
    python3 -c 'import os, sys
os.chdir(sys.argv[1])
for _ in range(600):
    os.mkdir("h"); os.chdir("h")' "$WS"
    sbx_run deep4 shell 'touch ran'
    assert_failure 2
    [[ "$(r .error)" == *"directories nested deeper than 512 levels (below h/h/h/"* ]]
    [ ! -e "$WS/ran" ]
    [ -d "$WS/h/h/h" ]
}

@test "timeoutMs is exact: never signalled before it, no reserve taken from it" {
    sbx_run t1 shell 'sleep 2; echo done' '{"timeoutMs": 3000}'
    assert_success
    [ "$(r .stdout)" = done ]
    [ "$(r .deadline)" = null ]
    # SIGTERM ignored: SIGKILL after the grace; the signal came at 3000 ms, not before.
    run --separate-stderr sbx-run --state-dir "$STATE" --grace-ms 500 - <<<"$(request t2 shell 'trap "" TERM; start=$(date +%s%3N); while :; do sleep 0.05; echo $(( $(date +%s%3N) - start )) > elapsed.new; mv -f elapsed.new elapsed; done' '{"timeoutMs": 3000}')"
    assert_failure 7
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    [ "$(r .deadline)" = timeoutMs ]
    [ "$(r .timedOut)" = true ]
    [ "$(r .durationMs)" -ge 3000 ]
    [ "$(cat "$WS/elapsed")" -ge 2900 ]
}

@test "as root each workspace runs as its own uid from SBX_UID_RANGE: kept across runs, a copy gets another, off is the shared uid" {
    [ "$(id -u)" -eq 0 ] || skip "as root only: otherwise the workload keeps its caller's uid"
    sbx_run wu1 shell 'id -u; touch mine'
    assert_success
    a=$(r .workspaceUid)
    [ "$a" -ge 2000000000 ] && [ "$a" -le 2000065535 ] || fail "uid $a"
    [ "$(r .stdout)" = "$a" ]
    [ "$(stat -c %u "$WS/mine") $(stat -c %u "$WS")" = "$a $a" ]
    sbx_run wu2 shell 'id -u'
    [ "$(r .workspaceUid)" = "$a" ]
    # A copy that kept its owner is another workspace: another uid, and the
    # copy's files become its own.
    cp -a "$WS" "$WORK/copy"
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(jq -cn --arg ws "$WORK/copy" '{executionId: "wu3", language: "shell", code: "id -u", workspace: $ws}')"
    b=$(tail -n 1 <<< "$output" | jq -r .result.workspaceUid)
    [ "$b" != "$a" ] && [ "$b" -ge 2000000000 ] || fail "copy uid $b, original $a"
    [ "$(stat -c %u "$WORK/copy/mine")" = "$b" ]
    # off: the shared sandbox uid, as before ranges existed.
    SBX_UID_RANGE=off sbx_run wu4 shell 'id -u'
    [ "$(r .stdout)" = "$(expected_uid)" ] && [ "$(r .workspaceUid)" = null ]
}

@test "SBX_UID_RANGE: a bad value is refused naming it; a full range says so and runs nothing" {
    [ "$(id -u)" -eq 0 ] || skip "as root only"
    n=0
    for bad in 5 0-10 10-5 x-y 10000-10002 3000000000-3000000001; do
        n=$((n + 1))
        SBX_UID_RANGE=$bad sbx_run "wb$n" shell 'touch ran'
        assert_failure 2
        [[ "$(r .error)" == *"SBX_UID_RANGE: \"$bad\""* ]] || fail "$bad: $(r .error)"
    done
    [ ! -e "$WS/ran" ]
    SBX_UID_RANGE=2100000000-2100000000 sbx_run wf1 shell 'id -u'
    assert_success
    [ "$(r .stdout)" = 2100000000 ]
    mkdir "$WORK/other" && chmod 777 "$WORK/other"
    run --separate-stderr env SBX_UID_RANGE=2100000000-2100000000 sbx-run --state-dir "$STATE" - \
        <<<"$(jq -cn --arg ws "$WORK/other" '{executionId: "wf2", language: "shell", code: "touch ran", workspace: $ws}')"
    assert_failure 6
    [[ "$(tail -n 1 <<< "$output" | jq -r .result.error)" == *"every uid of SBX_UID_RANGE (1 from 2100000000) belongs to another workspace"* ]]
    [ ! -e "$WORK/other/ran" ]
}

@test "--transient: the finished event carries the result; neither result.json nor launch-spec.json is written" {
    run --separate-stderr sbx-run --state-dir "$STATE" --transient - <<<"$(request t1 shell 'echo transient')"
    assert_success
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    [ "$(r .stdout)" = transient ] && [ "$(r .exitCode)" = 0 ]
    [ "$(printf '%s\n' "$output" | jq -r 'select(.event == "finished") | .status')" = 0 ]
    [ -d "$STATE/t1" ] && [ -f "$STATE/t1/stdout.txt" ]
    [ ! -e "$STATE/t1/result.json" ] && [ ! -e "$STATE/t1/launch-spec.json" ]
    sbx_run t2 shell 'true'
    assert_success
    [ -f "$STATE/t2/result.json" ] && [ -f "$STATE/t2/launch-spec.json" ]
}

@test "--standby: its request and workspace fd arrive over the socket; lowered limits adopt its cgroups, others (cpuPercent, more memory) get new ones" {
    v1_writable || skip "needs root and cgroup v1 hierarchies"
    run --separate-stderr python3 "$FIXTURES/standby-request.py" "$STATE" "$WS" \
        "$(request sb1 shell 'echo in-standby > standby-mark; cat standby-mark' '{"limits":{"memoryBytes":100000000,"pids":64}}')"
    assert_success
    result=$(jq -c .result <<< "$output")
    pids=$(jq .standbyPid <<< "$output")
    [ "$(jq -r .streams.stdout.path <<< "$result" | xargs cat)" = in-standby ]
    [ "$(cat "$WS/standby-mark")" = in-standby ]
    [ "$(r '[.limits.mode, .limits.memoryBytes, .limits.pids] | @tsv')" = "$(printf 'cgroup-v1\t100000000\t64')" ]
    [ "$(r 'has("stdout")')" = false ]
    for extra in '{"limits":{"cpuPercent":50}}' '{"limits":{"memoryBytes":17179869184}}'; do
        run --separate-stderr python3 "$FIXTURES/standby-request.py" "$STATE" "$WS" "$(request "sb-$RANDOM" shell 'echo ok' "$extra")"
        assert_success
        result=$(jq -c .result <<< "$output")
        pids+=" $(jq .standbyPid <<< "$output")"
        [ "$(r .exitCode)" = 0 ] && [ "$(r .error)" = null ]
    done
    [ "$(r .limits.memoryBytes)" = 17179869184 ]
    # A standby's made directory is renamed, never over another execution's; one of a standby that
    # died waiting is swept by the next standby.
    mkdir -p "$STATE/.standby-4194300/scratch"
    run --separate-stderr python3 "$FIXTURES/standby-request.py" "$STATE" "$WS" "$(request sb1 shell 'echo again')"
    assert_failure 2
    [[ "$stderr" == *duplicate-execution* ]]
    pids+=" $(jq .standbyPid <<< "$output")"
    [ -z "$(find "$STATE" -maxdepth 1 -name '.standby-*')" ]
    [ "$(jq -r .streams.stdout.path <<< "$result" | xargs cat)" = ok ]
    # Nothing of these standbys stays in the hierarchies.
    for pid in $pids; do [ -z "$(find /sys/fs/cgroup -maxdepth 6 -name "sbx-$pid-standby" 2>/dev/null)" ]; done
}

# capped_run BOUNDING-SET ID CODE: sbx-run as root with only what the
# bounding set leaves it (setpriv), as a container runtime would start it.
capped_run() {
    local caps=$1
    shift
    run --separate-stderr setpriv --bounding-set "$caps" "$SBX_BIN/sbx-run" --state-dir "$STATE" - <<<"$(request "$1" shell "$2")"
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
}

@test "capabilities: a container's default set runs; what is missing is kept to the intersection and said" {
    [ "$(id -u)" -eq 0 ] || skip "as root only: otherwise nothing is narrowed"
    # Docker's and podman's default set: no CAP_DAC_READ_SEARCH.
    default=-all,+chown,+dac_override,+fsetid,+fowner,+mknod,+net_raw,+setgid,+setuid,+setfcap,+setpcap,+net_bind_service,+sys_chroot,+kill,+audit_write
    capped_run "$default" cap1 'mkdir hidden; head -c 5000 /dev/zero > hidden/f; chmod 000 hidden; id -u'
    assert_success
    [ "$(r .stdout)" = "$(r .workspaceUid)" ]
    [ "$(r .workspaceSnapshot.files)" = 1 ] && [ "$(r .workspaceSnapshot.bytes)" = 5000 ]   # read through dac_override
    [ "$(jq -c 'select(.event == "mode") | [.missingCapabilities[].capability]' <<<"$output")" = '["CAP_DAC_READ_SEARCH","CAP_SYS_ADMIN"]' ]
    [[ "$stderr" == *'"code":"capability-missing"'*"dac_override stands in"* ]]
    # The next run walks the mode-000 directory before it (sbx-launch's
    # ownership walk, the quota, the scans) under the same set.
    capped_run "$default" cap1b 'head -c 100 /dev/zero > more; echo again'
    assert_success
    [ "$(r .stdout)" = again ] && [ "$(r .workspaceSnapshot.bytes)" = 5100 ]
    chmod 755 "$WS/hidden"
    # Nothing missing: nothing said.
    sbx_run cap2 shell true
    assert_success
    [ "$(jq -c 'select(.event == "mode") | .missingCapabilities' <<<"$output")" = '[]' ]
    # Without setpcap the bounding set stays as given: accepted, and said,
    # only when it holds no more than the run needs.
    capped_run -all,+chown,+dac_read_search,+fowner,+setuid,+setgid,+kill,+dac_override cap3 true
    assert_success
    [ "$(jq -r 'select(.event == "mode") | .missingCapabilities[0].capability' <<<"$output")" = CAP_SETPCAP ]
    capped_run -setpcap cap4 true
    assert_failure 4
    [[ "$stderr" == *"without CAP_SETPCAP, so it cannot narrow its bounding set, which holds "*CAP_NET_ADMIN*"--cap-add SETPCAP"* ]] || fail "$stderr"
    [ ! -e "$STATE/cap4" ]
}

@test "capabilities: an essential one missing is refused with a remedy naming it, and nothing is left" {
    [ "$(id -u)" -eq 0 ] || skip "as root only: otherwise nothing is narrowed"
    for caps in -setuid -setgid -chown -kill -fowner -dac_read_search,-dac_override; do
        name=${caps%%,*}
        name=CAP_$(tr a-z A-Z <<<"${name#-}")
        capped_run "$caps" "ess${caps//[^a-z]/}" true
        assert_failure 4
        [[ "$stderr" == *"sbx-run runs as root without $name, which it needs to "*"--cap-add ${name#CAP_}"* ]] || fail "$caps: $stderr"
        [ ! -e "$STATE/ess${caps//[^a-z]/}" ]
    done
    # Root whose exec'd children would hold nothing: refused, said why.
    run --separate-stderr setpriv --securebits +noroot "$SBX_BIN/sbx-run" --state-dir "$STATE" - <<<"$(request essnoroot shell true)"
    assert_failure 4
    [[ "$stderr" == *SECBIT_NOROOT* ]] && [ ! -e "$STATE/essnoroot" ]
}

@test "sweep: execution directories older than --older-than go, a live supervisor's, the young and the state dir's own stay; at most --max" {
    mkdir -p "$STATE/locks" "$STATE/snapshots" "$STATE/.standby-1" "$STATE/old1" "$STATE/old2" "$STATE/old3" "$STATE/young"
    touch -d '2 hours ago' "$STATE/locks" "$STATE/snapshots" "$STATE/.standby-1" "$STATE/old1" "$STATE/old2" "$STATE/old3"
    # old3 is held by a live supervisor: this shell, with its start time.
    local start
    start=$(sed -E "s/.*\) //" /proc/$$/stat | cut -d" " -f20)
    jq -cn --argjson pid $$ --arg st "$start" '{pid: $pid, startTime: $st}' > "$STATE/old3/supervisor.json"
    touch -d '2 hours ago' "$STATE/old3"
    run sbx-run sweep --older-than 3600 --max 1 "$STATE"
    assert_success
    [ "$(jq .removed <<<"$output")" = 1 ]
    run sbx-run sweep --older-than 3600 "$STATE"
    assert_success
    [ "$(jq .removed <<<"$output")" = 1 ]
    [ ! -e "$STATE/old1" ] && [ ! -e "$STATE/old2" ]
    [ -d "$STATE/old3" ] && [ -d "$STATE/young" ] && [ -d "$STATE/locks" ] && [ -d "$STATE/snapshots" ] && [ -d "$STATE/.standby-1" ]
    run sbx-run sweep "$STATE/nowhere"
    assert_success
    [ "$(jq .removed <<<"$output")" = 0 ]
}
