#!/usr/bin/env bats
# Denials as data (sbx-run): refused syscalls reported by the seccomp
# listener with the same errno the kernel gives, coalesced events and the
# result's denials; the listener never reaches the workload; the limits a
# run met (pids, memory, quota, file size, output, time) with value, knob
# and remedy.

load launch_helpers

setup() {
    launch_setup
    STATE="$WORK/state"
}

teardown() {
    [ -z "${GATEWAY_PID:-}" ] || kill "$GATEWAY_PID" 2>/dev/null || true
    [ -z "${SERVER_PID:-}" ] || kill "$SERVER_PID" 2>/dev/null || true
    launch_teardown
}

# request ID LANGUAGE CODE [EXTRA-JSON]
request() {
    jq -cn --arg id "$1" --arg lang "$2" --arg code "$3" --arg ws "$WS" --argjson extra "${4:-{\}}" \
        '{executionId: $id, language: $lang, code: $code, workspace: $ws} + $extra'
}

# sbx_run ID LANGUAGE CODE [EXTRA-JSON] [SBX-RUN OPTION...]: events in $output, the result in $result.
sbx_run() {
    local id=$1 lang=$2 code=$3 extra=${4:-'{}'}
    shift 4 2>/dev/null || shift $#
    run --separate-stderr sbx-run --state-dir "$STATE" --no-snapshot "$@" - <<<"$(request "$id" "$lang" "$code" "$extra")"
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    [ -n "$result" ] || fail "no finished event: $output $stderr"
}

r() { jq -r "$1" <<<"$result"; }
# denial KIND WHAT FIELD: a field of the result's record of WHAT.
denial() { jq -r --arg k "$1" --arg w "$2" --arg f "$3" '[.denials[] | select(.kind == $k and .what == $w)][0][$f] // "absent"' <<<"$result"; }

# Reporting needs Landlock (sbx-seccomp-notify(1)); elsewhere sbx-launch
# keeps the whole filter. 444: landlock_create_ruleset on x86_64 and aarch64.
reporting_or_skip() {
    python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).syscall(444, None, 0, 1) < 1)' ||
        skip "no Landlock: sbx-launch keeps the whole filter, nothing is reported"
}

v1_writable() {
    [ "$(id -u)" -eq 0 ] && awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ { m = 1 } $9 == "cgroup" && $NF ~ /(^|,)pids(,|$)/ { p = 1 } END { exit !(m && p) }' /proc/self/mountinfo
}

CALLS='import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    r = libc.syscall(nr, *args)
    print(name, r, os.strerror(ctypes.get_errno()) if r < 0 else "")
for _ in range(3):
    call("ptrace", 101, 0, 0, 0, 0)
call("mount", 165, 0, 0, 0, 0, 0)
call("bpf", 321, 0, 0, 0)
call("unshare", 272, 0x10000000)
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
except OSError as e:
    print("socket", e.strerror)
'

@test "seccomp: ptrace, mount, bpf, unshare and socket(AF_INET) with networkPolicy none are denials with count and remedy, each EPERM" {
    reporting_or_skip
    sbx_run s1 python "$CALLS"
    assert_success
    [ "$(r .seccompReporting.reporting)" = true ]
    # The workload saw exactly the errno the whole filter gives.
    [ "$(r .stdout | grep -c 'Operation not permitted')" -eq 7 ]
    [ "$(denial seccomp ptrace count)" = 3 ]
    [ "$(denial seccomp ptrace errno)" = EPERM ]
    [ "$(denial seccomp ptrace policy)" = "seccomp profile baseline" ]
    [[ "$(denial seccomp ptrace remedy)" == "not available in the sandbox"* ]]
    for call in mount bpf unshare 'socket(AF_INET)'; do
        [ "$(denial seccomp "$call" count)" = 1 ] || fail "$call: $(r .denials)"
    done
    [[ "$(denial seccomp 'socket(AF_INET)' remedy)" == *"networkPolicy: domain-allowlist"* ]]
    # Each target's first refusal was an event before the run finished.
    printf '%s\n' "$output" | jq -se '[.[] | .event] | index("denial") < index("finished")' > /dev/null
    [ "$(printf '%s\n' "$output" | jq -c 'select(.event == "denial") | .denial.what' | sort -u | wc -l)" -eq 5 ]
}

@test "seccomp: with reporting on, every rule of the table still gives its exact errno (the i386/x32 kills too)" {
    reporting_or_skip
    cp "$SBX_BIN/test/try-syscall" "$WS/"
    # What an i386 int $0x80 gets on this host outside a sandbox decides
    # the expected answer inside (launch-seccomp.bats explains).
    local i386=SIGSYS host
    host=$("$WS/try-syscall" i386_int80 2>/dev/null || true)
    [ "$(uname -m)" != x86_64 ] || [ "$host" = "i386_int80 OK" ] || i386=${host#i386_int80 }
    sed "s/^\(i386_[a-z_0-9]*\) SIGSYS$/\1 $i386/" "$FIXTURES/seccomp-baseline.expected" > "$WORK/expected"
    mapfile -t names < <(cut -d' ' -f1 "$WORK/expected")
    sbx_run s0 shell "./try-syscall ${names[*]}"
    [ "$(r .seccompReporting.reporting)" = true ]
    diff -u "$WORK/expected" <(jq -j .stdout <<<"$result")
    # Each EPERM row answered by the listener is a denial; nothing else is.
    [ "$(r '[.denials[] | select(.kind == "seccomp")] | length')" -ge 20 ]
    [ "$(r '[.denials[] | select(.kind == "seccomp" and .errno != "EPERM")] | length')" = 0 ]
}

@test "seccomp: calls libc probes (clone3, netlink sockets) keep their errno and are not reported" {
    sbx_run s2 python 'import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(435, 0, 0); print("clone3", os.strerror(ctypes.get_errno()))
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
except OSError as e:
    print("netlink", e.strerror)
'
    assert_success
    [[ "$(r .stdout)" == *"clone3 Function not implemented"* ]]
    [[ "$(r .stdout)" == *"netlink Address family not supported by protocol"* ]]
    [ "$(r '.denials | length')" = 0 ]
}

@test "seccomp: a loop of refused calls is answered up to the cap, then the kernel refuses alone (ENOSYS), never allows" {
    reporting_or_skip
    cc -O2 -o "$WS/hammer" "$BATS_TEST_DIRNAME/../fixtures/hammer.c"
    sbx_run s3 shell './hammer 5000'
    assert_success
    [ "$(r .seccompReporting.answered)" = 1000 ]
    [ "$(r .seccompReporting.capped)" = true ]
    [ "$(r .stdout)" = "calls 5000 EPERM 1000 ENOSYS 4000 other 0" ]
    [ "$(denial seccomp ptrace count)" = 1000 ]
    # Coalesced: far fewer events than calls.
    [ "$(printf '%s\n' "$output" | jq -c 'select(.event == "denial")' | wc -l)" -lt 10 ]
}

@test "seccomp: past the cap the workload cannot put a listener of its own in the supervisor's place (EBUSY, nothing let through)" {
    reporting_or_skip
    cc -O2 -pthread -o "$WS/own-listener" "$BATS_TEST_DIRNAME/../fixtures/own-listener.c"
    # Below the cap the kernel refuses a second listener; past it (the
    # supervisor's listener closed) the notifying filter does.
    for n in 10 1100; do
        sbx_run "o$n" shell "./own-listener $n"
        assert_success
        [ "$(r .stdout)" = "listener EBUSY" ] || fail "after $n calls: $(r .stdout)"
    done
    [ "$(r .seccompReporting.capped)" = true ]
}

@test "seccomp: --no-seccomp-reports leaves the whole filter in bwrap: plain EPERM, nothing counted" {
    cc -O2 -o "$WS/hammer" "$BATS_TEST_DIRNAME/../fixtures/hammer.c"
    sbx_run s4 shell './hammer 2000' '{}' --no-seccomp-reports
    assert_success
    [ "$(r .stdout)" = "calls 2000 EPERM 2000 ENOSYS 0 other 0" ]
    [ "$(r .seccompReporting.reporting)" = false ]
    [ "$(r '.denials | length')" = 0 ]
}

@test "seccomp: the listener never reaches the workload (no fd of any process it can see is one; fds 6 and 7 are closed)" {
    reporting_or_skip
    sbx_run s5 shell 'n=$(for f in /proc/[0-9]*/fd/*; do readlink "$f"; done 2>/dev/null | grep -c "seccomp notify" || true); echo "$n"
ls /proc/self/fd/6 /proc/self/fd/7 2>&1 | grep -c "No such file" || true'
    [ "$(r .stdout)" = $'0\n2' ] || fail "$(r .stdout)"
    [ "$(r .seccompReporting.reporting)" = true ]
}

@test "seccomp: the egress bridge and the worker channel pass through sbx-seccomp-notify; their runs still report" {
    reporting_or_skip
    mkfifo "$WORK/port"
    python3 "$FIXTURES/http-echo.py" "$WORK/port" &
    SERVER_PID=$!
    read -r port < "$WORK/port"
    sbx_run e1 shell "curl -sS --fail http://api.test:$port/through; sbx-report progress 0.5
python3 -c 'import ctypes; print(\"ptrace\", ctypes.CDLL(None).syscall(101, 0, 0, 0, 0))'" \
        '{"network":{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":true}}' \
        --egress-dir "$WORK/eg" --egress-idle-s 1 --egress-resolve "api.test:$port:127.0.0.1"
    GATEWAY_PID=$(pgrep -f -- "^[^ ]*sbx-egress gateway --socket $WORK/eg/" || true)
    assert_success
    [[ "$(r .stdout)" == *"path=/through"* ]] || fail "$(r .stdout) $(r .stderr)"
    [ "$(printf '%s\n' "$output" | jq -c 'select(.event == "worker.progress") | .progress')" = 0.5 ]
    [ "$(r .seccompReporting.reporting)" = true ]
    [[ "$(r .stdout)" == *"ptrace -1"* ]]
    [ "$(denial seccomp ptrace count)" = 1 ]
    [ "$(denial seccomp ptrace policy)" = "seccomp profile network" ]
}

@test "seccomp: the sandbox's pid 1 (bwrap, which never loads the notifying filter) is out of the workload's reach" {
    reporting_or_skip
    # Its filter lacks the reported rows: code written into it through
    # /proc/1/mem would call them unrefused (ptrace, keyctl, io_uring...).
    sbx_run s7 python 'import os
def attempt(name, f):
    try:
        f(); print(name, "open")
    except OSError as e:
        print(name, "refused")
attempt("pid1-mem", lambda: os.close(os.open("/proc/1/mem", os.O_RDWR)))
attempt("pid1-syscall", lambda: open("/proc/1/syscall").read())
attempt("self-mem", lambda: os.close(os.open("/proc/self/mem", os.O_RDWR)))'
    assert_success
    [ "$(r .seccompReporting.reporting)" = true ]
    [ "$(r .stdout)" = $'pid1-mem refused\npid1-syscall refused\nself-mem open' ] || fail "$(r .stdout) $(r .stderr)"
}

@test "seccomp: sbx-launch reports only with --denials-fd on a socket; the dry run says which filter" {
    run --separate-stderr sbx-launch --dry-run - <<<"$(spec_sh true)"
    assert_success
    [ "$(jq -r .seccomp.reporting <<<"$output")" = false ]
    run --separate-stderr sbx-launch --denials-fd 0 - <<<"$(spec_sh true)"
    assert_failure 2
    [[ "$stderr" == *"--denials-fd"* ]]
}

@test "seccomp: sbx-launch --denials-fd refuses a file, an inet socket and a descriptor another option names" {
    run --separate-stderr sbx-launch --denials-fd 5 - 5<"$BATS_TEST_FILENAME" <<<"$(spec_sh 'echo ran')"
    assert_failure 2
    [[ "$stderr" == *"--denials-fd: must name an open unix socket"* ]]
    # $1: the socket type; the rest: sbx-launch's options, FD standing for the socket.
    local launch='import socket, subprocess, sys, os
# an unconnected UDP socket sends nothing anywhere
a = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)[0] if sys.argv[1] == "unix" else socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
os.dup2(a.fileno(), 20)
p = subprocess.run(["sbx-launch"] + [o.replace("FD", "20") for o in sys.argv[2:]] + ["-"], stdin=sys.stdin,
                   capture_output=True, close_fds=False, timeout=60)
sys.stdout.write(p.stdout.decode()); sys.stderr.write(p.stderr.decode()); sys.exit(p.returncode)'
    run --separate-stderr python3 -c "$launch" inet --denials-fd FD <<<"$(spec_sh 'echo ran')"
    assert_failure 2
    [[ "$stderr" == *"--denials-fd: must name an open unix socket"* ]]
    for other in --plan-fd --channel-fd --info-fd; do
        run --separate-stderr python3 -c "$launch" unix --denials-fd FD "$other" FD <<<"$(spec_sh 'echo ran')"
        assert_failure 2
        [[ "$stderr" == *"--denials-fd: must differ from"* ]] || fail "$other: $stderr"
        [ -z "$output" ]
    done
}

@test "limits: a fork bomb under limits.pids is a denial with the limit, the knob and pids.events' count" {
    v1_writable || skip "needs root and cgroup v1 memory and pids hierarchies (explicit limits refuse elsewhere)"
    sbx_run l1 shell 'for i in $(seq 100); do sleep 1 & done 2>/dev/null; wait; echo done' '{"limits":{"pids":20}}'
    [ "$(denial limit pids limit)" = 20 ]
    [ "$(denial limit pids knob)" = limits.pids ]
    [ "$(denial limit pids count)" -ge 1 ]
    [[ "$(denial limit pids remedy)" == *"raise limits.pids"* ]]
}

@test "limits: an allocation past limits.memoryBytes is a denial with its OOM kills" {
    v1_writable || skip "needs root and cgroup v1 memory and pids hierarchies (explicit limits refuse elsewhere)"
    sbx_run l2 python 'x = bytearray(300 << 20)' '{"limits":{"memoryBytes":100000000}}'
    [ "$(r .limits.oomKilled)" = true ]
    [ "$(denial limit memoryBytes limit)" = 100000000 ]
    [ "$(denial limit memoryBytes knob)" = limits.memoryBytes ]
    [ "$(denial limit memoryBytes oomKills)" -ge 1 ]
}

@test "limits: a write past maxWorkspaceBytes, output past maxOutputBytes and a timeout are each named" {
    sbx_run l3 shell 'head -c 3000000 /dev/zero > big; echo $?' '{"maxWorkspaceBytes":1000000}'
    [ "$(r .failureClass)" = resource-exhausted ]
    [ "$(denial limit maxWorkspaceBytes limit)" = 1000000 ]
    [ "$(denial limit maxWorkspaceBytes knob)" = maxWorkspaceBytes ]
    rm -f "$WS/big"
    sbx_run l4 shell 'head -c 300000 /dev/zero | tr "\0" a' '{"maxOutputBytes":100000}'
    [ "$(r .truncated)" = true ]
    [ "$(denial limit maxOutputBytes limit)" = 100000 ]
    [ "$(denial limit maxOutputBytes stdoutBytes)" = 300000 ]
    sbx_run l5 shell 'sleep 30' '{"timeoutMs":300}' --grace-ms 100
    [ "$(r .failureClass)" = timeout ]
    [ "$(denial limit timeoutMs limit)" = 300 ]
    [[ "$(denial limit timeoutMs remedy)" == *"raise timeoutMs"* ]]
}
