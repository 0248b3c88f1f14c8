#!/usr/bin/env bats
# A real sandbox from sbx-launch, launched by root and by sbxtest: who the
# workload is, what it can see, write and inherit, and what it cannot do.

load launch_helpers

setup() {
    launch_setup
}

teardown() {
    [ -z "${LISTENER:-}" ] || kill "$LISTENER" 2>/dev/null || true
    launch_teardown
}

@test "the workload is never host root; files it writes are owned by the uid it ran as" {
    in_sandbox 'id -u; id -g; echo data > /workspace/out'
    assert_success
    [ "${lines[0]}" = "$(expected_uid)" ]
    [ "${lines[0]}" != 0 ]
    [ "$(stat -c %u "$WS/out")" = "$(expected_uid)" ]
}

@test "launched by root, /proc/sys/kernel/core_pattern cannot be opened for writing" {
    [ "$(id -u)" -eq 0 ] || skip "the root launch path"
    in_sandbox 'if (: > /proc/sys/kernel/core_pattern) 2>/dev/null; then echo WRITABLE; else echo refused; fi; if (echo x > /proc/sysrq-trigger) 2>/dev/null; then echo SYSRQ; else echo sysrq-refused; fi'
    assert_success
    assert_output $'refused\nsysrq-refused'
}

@test "/proc/sys, sysrq-trigger, irq and bus are read-only mounts even with a fresh procfs" {
    in_sandbox 'for m in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus; do [ -e $m ] || { echo "$m absent"; continue; }; awk -v m=$m "\$5 == m { split(\$6, o, \",\"); print m, o[1] }" /proc/self/mountinfo; done'
    assert_success
    # This kernel may lack sysrq (CONFIG_MAGIC_SYSRQ): then the entry is absent inside too.
    sysrq="/proc/sysrq-trigger ro"
    [ -e /proc/sysrq-trigger ] || sysrq="/proc/sysrq-trigger absent"
    assert_output "$(printf '%s\n' '/proc/sys ro' "$sysrq" '/proc/irq ro' '/proc/bus ro')"
}

@test "/proc/1/environ holds nothing of the launcher's environment" {
    export SBX_TEST_SECRET=hunter2
    in_sandbox 'tr "\0" "\n" < /proc/1/environ | wc -c; env | grep -c SBX_TEST_SECRET || true'
    assert_success
    assert_output $'0\n0'
}

@test "env shows exactly the baseline and the spec's variables" {
    export SBX_TEST_SECRET=hunter2 AWS_SECRET_ACCESS_KEY=leak
    in_sandbox 'env | grep -v "^PWD=" | sort' '{"env":{"MY_VAR":"v 1","OTHER":""}}'
    assert_success
    expected=$(printf '%s\n' CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt HOME=/tmp \
        LANG=C.UTF-8 MY_VAR='v 1' OTHER= PATH=/usr/bin:/bin PYTHONNOUSERSITE=1 \
        REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt SSL_CERT_DIR=/etc/ssl/certs \
        SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt | sort)
    [ -f /etc/ssl/certs/ca-certificates.crt ] || skip "host without the Debian CA bundle"
    [ "$output" = "$expected" ]
}

@test "an fd the caller leaves open is absent inside; only 0-2 are open" {
    exec 7<"$BATS_TEST_FILENAME"
    in_sandbox 'ls /proc/self/fd | sort -n | tr "\n" " "; [ -e /proc/self/fd/7 ] && echo LEAKED || echo none'
    exec 7<&-
    assert_success
    # 3 is the descriptor ls itself holds open on /proc/self/fd.
    assert_output '0 1 2 3 none'
}

@test "no capabilities, no new privileges, seccomp filter mode, no core dumps" {
    in_sandbox 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "; ulimit -Hc; ulimit -Sc'
    assert_success
    assert_output $'CapInh: 0000000000000000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2\n0\n0'
}

@test "the root, /usr and /etc are read-only; /tmp and the workspace are writable" {
    in_sandbox 'for p in /x /usr/x /etc/x /bin/x; do touch $p 2>/dev/null && echo "$p WRITABLE" || echo "$p refused"; done; touch /tmp/x /workspace/x && echo writable'
    assert_success
    assert_output $'/x refused\n/usr/x refused\n/etc/x refused\n/bin/x refused\nwritable'
}

@test "host secrets are absent: /etc/shadow, /root, /home, the caller's HOME, the workspace's host path" {
    # The caller's HOME too, unless it is /tmp (which the sandbox has, empty).
    home=$HOME
    [ "$home" != /tmp ] || home=/nonexistent-home
    in_sandbox 'for p in /etc/shadow /root /home '"$WORK $home"'; do [ -e "$p" ] && echo "$p PRESENT" || echo "$p absent"; done'
    assert_success
    assert_output "$(printf '%s absent\n' /etc/shadow /root /home "$WORK" "$home")"
}

@test "only the sandbox's own processes are visible in a fresh /proc" {
    in_sandbox 'ls /proc | grep -E "^[0-9]+$" | wc -l'
    assert_success
    # bwrap's pid 1, the shell, ls, grep and wc at most.
    [ "$output" -le 5 ]
}

@test "nested namespaces fail: unshare -U and a bwrap inside the sandbox" {
    in_sandbox 'unshare -U true 2>/dev/null && echo UNSHARED || echo unshare-refused; bwrap --ro-bind / / true 2>/dev/null && echo NESTED || echo bwrap-refused'
    assert_success
    assert_output $'unshare-refused\nbwrap-refused'
}

@test "network none: socket(AF_INET) fails while asyncio (AF_UNIX pairs) works" {
    in_sandbox 'python3 -c "import socket; socket.socket()" 2>&1 | tail -n1; python3 -c "import asyncio; asyncio.run(asyncio.sleep(0)); print(\"asyncio ok\")"; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "'
    assert_success
    assert_output $'PermissionError: [Errno 1] Operation not permitted\nasyncio ok\nlo'
}

@test "an argv of --tmpfs is a program name, never a bwrap option" {
    run --separate-stderr sbx-launch - <<<"$(jq -cn --arg ws "$WS" '{argv: ["--tmpfs", "/workspace"], workspace: $ws}')"
    assert_failure
    [[ "$stderr" == *"execvp --tmpfs"* ]]
}

@test "a workspace symlink to /etc/shadow reads nothing" {
    ln -s /etc/shadow "$WS/shadow"
    in_sandbox 'cat /workspace/shadow 2>&1 || echo unreadable'
    assert_success
    assert_output --partial unreadable
    refute_output --partial 'root:'
}

@test "the sandbox's passwd and group hold exactly one record, for its uid" {
    in_sandbox 'cat /etc/passwd /etc/group; id -un'
    assert_success
    [ "${#lines[@]}" -eq 3 ]
    [[ "${lines[0]}" == *":x:$(expected_uid):"*":/tmp:/bin/sh" ]]
}

@test "root launch: a file the host adds between runs (an upload) becomes writable" {
    [ "$(id -u)" -eq 0 ] || skip "the root launch path"
    in_sandbox 'echo first > /workspace/a'
    assert_success
    mkdir "$WS/uploads"
    printf 'secret upload\n' > "$WS/uploads/data.csv"
    chmod 600 "$WS/uploads/data.csv"
    in_sandbox 'echo edited >> /workspace/uploads/data.csv && cat /workspace/uploads/data.csv'
    assert_success
    assert_output $'secret upload\nedited'
    [ "$(stat -c %u:%g "$WS/uploads/data.csv")" = 10001:10001 ]
}

@test "root launch: --run-as picks the uid, and uid 0 is refused" {
    [ "$(id -u)" -eq 0 ] || skip "the root launch path"
    run --separate-stderr sbx-launch --run-as sbxtest - <<<"$(spec_sh 'id -u')"
    assert_success
    assert_output "$(id -u sbxtest)"
    run --separate-stderr sbx-launch --run-as 0 - <<<"$(spec_sh 'id -u')"
    assert_failure 3
    [[ "$stderr" == *"never runs as host uid or gid 0"* ]]
    SBX_RUN_AS=root run --separate-stderr sbx-launch - <<<"$(spec_sh 'id -u')"
    assert_failure 3
}

@test "the sandbox's exit status is the workload's" {
    in_sandbox 'exit 7'
    assert_failure 7
}

@test "stdin reaches the workload" {
    run --separate-stderr sbx-launch <(spec_sh 'cat') <<<"from stdin"
    assert_success
    assert_output "from stdin"
}

@test "tmpSizeBytes bounds /tmp" {
    in_sandbox 'head -c 3145728 /dev/zero > /tmp/big 2>/dev/null && echo FITS || echo full; df -k /tmp | tail -n1 | tr -s " " | cut -d" " -f2' '{"tmpSizeBytes":2097152}'
    assert_success
    assert_output $'full\n2048'
}

@test "a nested read-only parent: parent at /workspace, workspace at /workspace/<rel>" {
    mkdir -p "$WORK/parent/sub/ws" && echo hello > "$WORK/parent/readme"
    chmod -R a+rX "$WORK/parent"
    [ "$(id -u)" -ne 0 ] || chown -R 10001:10001 "$WORK/parent/sub/ws"
    WS="$WORK/parent/sub/ws"
    in_sandbox 'pwd; cat /workspace/readme; touch /workspace/x 2>/dev/null && echo PARENT-WRITABLE || echo parent-ro; touch ./y && echo ws-rw' \
        "{\"readOnlyWorkspace\":\"$WORK/parent\"}"
    assert_success
    assert_output $'/workspace/sub/ws\nhello\nparent-ro\nws-rw'
}

@test "the README pipeline: sbx-probe -> jq -> spec -> sbx-launch" {
    sbx-probe > "$WORK/caps.json"
    run --separate-stderr bash -c "jq -n --arg ws '$WS' '{argv: [\"python3\", \"-c\", \"print(6 * 7)\"], workspace: \$ws}' |
        sbx-launch --capabilities '$WORK/caps.json' -"
    assert_success
    assert_output 42
}

@test "--capabilities is read before the uid switch: a process substitution and a 0600 file work as root" {
    sbx-probe > "$WORK/caps.json"
    chmod 600 "$WORK/caps.json"
    run --separate-stderr bash -c "sbx-launch --capabilities <(sbx-probe) - <<<'$(spec_sh 'echo via-fd')'"
    assert_success
    assert_output via-fd
    run --separate-stderr sbx-launch --capabilities "$WORK/caps.json" - <<<"$(spec_sh 'echo via-file')"
    assert_success
    assert_output via-file
}

@test "host directories by fd: a shell's 7<dir binds exactly that directory; a name swapped meanwhile changes nothing" {
    mkdir -p "$WORK/byfd/ws" "$WORK/elsewhere"
    chmod -R a+rwX "$WORK/byfd" "$WORK/elsewhere"
    echo mine > "$WORK/byfd/ws/f"
    spec=$(jq -cn '{argv: ["/bin/sh", "-c", "cat f; ls /proc/self/fd | wc -l"], workspace: "fd:7"}')
    # The name now leads elsewhere; the fd still holds the first directory.
    exec 7<"$WORK/byfd/ws" # (bats itself writes on fd 3)
    mv "$WORK/byfd/ws" "$WORK/byfd/ws.moved" && ln -s "$WORK/elsewhere" "$WORK/byfd/ws"
    run --separate-stderr sbx-launch - <<<"$spec"
    exec 7<&-
    assert_success
    # The file of the original directory; 0-2 and ls's own directory fd only.
    assert_output $'mine\n4'
    exec 7<"$WORK/byfd/ws.moved"
    run --separate-stderr sbx-launch --dry-run - <<<"$spec"
    exec 7<&-
    assert_equal "$(jq -r '.binds | map(select(.path | startswith("/"))) | .[0].path' <<<"$output")" "$WORK/byfd/ws.moved"
    run --separate-stderr sbx-launch - <<<"$(jq -cn '{argv: ["true"], workspace: "fd:9"}')"
    assert_failure 2
    [[ "$stderr" == *"workspace: fd:9: no such open descriptor"* ]]
    run --separate-stderr sbx-launch - <<<"$(jq -cn '{argv: ["true"], workspace: "fd:0"}')"
    assert_failure 2
    [[ "$stderr" == *"workspace: must be an absolute path or fd:N"* ]]
}

@test "as root, a workspace, a channel and an egress socket under a 0700 directory work: each bind is staged, never walked to as the workload uid" {
    [ "$(id -u)" -eq 0 ] || skip "only root switches to a workload uid"
    private="$WORK/private"
    mkdir -p "$private/ws" && chmod 700 "$private"
    # A listening socket stands in for the gateway (the bridge checks it).
    python3 -c 'import os,socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(8); print("up", flush=True); time.sleep(300)' \
        "$private/gw.sock" > "$WORK/listener.out" 2>&1 3>&- < /dev/null &
    LISTENER=$!
    eventually grep -q up "$WORK/listener.out"
    spec=$(jq -cn --arg ws "$private/ws" --arg sock "$private/gw.sock" \
        '{argv: ["/bin/sh", "-c", "echo hi > f; test -S /run/sbx/egress.sock && echo socket; command -v sbx-report; ls /run/sbx-launch 2>&1 | head -n 1"],
          workspace: $ws, network: {mode: "domain-allowlist", socket: $sock}}')
    run --separate-stderr sbx-launch --channel-fd 7 - 7>/dev/null <<<"$spec"
    assert_success
    assert_output --partial $'socket\n/run/sbx/bin/sbx-report'
    refute_output --partial "/run/sbx-launch/"
    [ "$(cat "$private/ws/f")" = hi ]
    # The staging mounts lived in the launcher's namespace only.
    ! grep -q " /run/sbx-launch" /proc/self/mountinfo
}

@test "/dev is read-only and /dev/shm has its own size (shmSizeBytes, default 64 MiB)" {
    in_sandbox 'df -k /dev/shm | tail -n1 | tr -s " " | cut -d" " -f2; touch /dev/x 2>/dev/null && echo DEV-WRITABLE || echo dev-ro; echo ok > /dev/null && echo null-ok
head -c 3145728 /dev/zero > /dev/shm/big 2>/dev/null && echo FITS || echo shm-full' '{"shmSizeBytes":2097152}'
    assert_success
    assert_output $'2048\ndev-ro\nnull-ok\nshm-full'
    in_sandbox 'df -k /dev/shm | tail -n1 | tr -s " " | cut -d" " -f2'
    assert_output 65536
    run --separate-stderr sbx-launch - <<<"$(spec_sh true '{"shmSizeBytes":1}')"
    assert_failure 2
    [[ "$stderr" == *"shmSizeBytes: must be from 1 MiB"* ]]
}

@test "default bounds: open files 4096, and as root a fork bomb stops at maxProcesses while the host forks on" {
    in_sandbox 'ulimit -n'
    assert_success
    assert_output 4096
    [ "$(id -u)" -eq 0 ] || skip "RLIMIT_NPROC bounds a dedicated workload uid only"
    cat > "$WS/bomb.py" <<'PY'
import os, time
kids, refused = 0, 0
for _ in range(300):
    try:
        pid = os.fork()
    except BlockingIOError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids += 1
print(kids, refused)
PY
    run --separate-stderr sbx-launch - <<<"$(jq -cn --arg ws "$WS" '{argv: ["python3", "bomb.py"], workspace: $ws, maxProcesses: 64}')"
    assert_success
    read -r kids refused <<<"$output"
    # Past the cap every fork fails; the namespace never held more.
    [ "$kids" -lt 64 ] && [ "$refused" -gt 200 ]
    # bwrap killed the namespace on exit: nothing of it is left, and we fork as ever.
    run pgrep -u "$(expected_uid)" -f "sleep 30"
    assert_failure
    run --separate-stderr sbx-launch --dry-run - <<<"$(spec_sh true '{"maxProcesses":0,"maxOpenFiles":128}')"
    assert_equal "$(jq -c .rlimits <<<"$output")" '{"processes":0,"openFiles":128,"fileSize":-1,"addressSpace":0}'
}

@test "readOnlyPaths: bound read-only where given; a symlink anywhere on the path or a '..' is refused naming the field" {
    mkdir -p "$WORK/ro/data" && echo shared > "$WORK/ro/data/f"
    chmod -R a+rX "$WORK/ro"
    in_sandbox "cat $WORK/ro/data/f; touch $WORK/ro/data/g 2>/dev/null && echo WRITABLE || echo ro" \
        "{\"readOnlyPaths\":[\"$WORK/ro/data\"]}"
    assert_success
    assert_output $'shared\nro'
    # A component swapped for a symlink (what a workload can do to a path
    # in its workspace) redirects nothing: the open follows no symlink.
    ln -s "$WORK/ro" "$WORK/link"
    in_sandbox 'true' "{\"readOnlyPaths\":[\"$WORK/link/data\"]}"
    assert_failure 2
    assert_equal "$(jq -r .message <<<"$stderr")" "readOnlyPaths: $WORK/link/data: a symlink on the path (it must be canonical)"
    in_sandbox 'true' "{\"readOnlyPaths\":[\"$WORK/ro/../ro/data\"]}"
    assert_failure 2
    assert_equal "$(jq -r .message <<<"$stderr")" "readOnlyPaths[0]: must be an absolute path without '.', '..' or empty segments"
}

@test "as root, sbx-launch keeps only the capabilities of its own steps until the uid switch, whoever started it, and sys_admin never effective outside the staging" {
    [ "$(id -u)" -eq 0 ] || skip "an unprivileged launch holds no capability"
    command -v strace >/dev/null || skip "strace is not installed (mk/deps.sh installs it)"
    # LeakSanitizer cannot run under ptrace: off for the traced launch (SAN=1).
    ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=capset -o "$WORK/caps.trace" sbx-launch - <<<"$(spec_sh 'true')"
    first=$(head -n 1 "$WORK/caps.trace")
    kept="1<<CAP_CHOWN|1<<CAP_DAC_OVERRIDE|1<<CAP_DAC_READ_SEARCH|1<<CAP_FOWNER|1<<CAP_SETGID|1<<CAP_SETUID|1<<CAP_SETPCAP"
    [[ "$first" == *"effective=$kept, permitted=$kept|1<<CAP_SYS_ADMIN, inheritable=0}"* ]] || fail "first capset: $first"
    # The staging raises it, and it is dropped from every set after.
    grep -q "effective=$kept|1<<CAP_SYS_ADMIN, permitted=$kept|1<<CAP_SYS_ADMIN" "$WORK/caps.trace"
    grep -q "effective=$kept, permitted=$kept, inheritable=0}" "$WORK/caps.trace"
}
