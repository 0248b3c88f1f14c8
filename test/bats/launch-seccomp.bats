#!/usr/bin/env bats
# Every seccomp rule, called with harmless arguments from inside a real
# sandbox by test/fixtures/try-syscall: the exact errno (or SIGSYS for a
# foreign ABI) of each, and benign calls still reaching the kernel.

load launch_helpers

setup() {
    launch_setup
    cp "$SBX_BIN/test/try-syscall" "$WS/"
    host_i386
    # The expected list with i386 calls as this host answers them inside.
    EXPECTED="$WORK/seccomp-baseline.expected"
    sed "s/^\(i386_[a-z_0-9]*\) SIGSYS$/\1 $I386/" "$FIXTURES/seccomp-baseline.expected" > "$EXPECTED"
}

# host_i386: what an i386 int $0x80 gets outside any sandbox, first. Where
# the kernel runs it (ia32 emulation), the filter must kill it in the
# sandbox: I386=SIGSYS. Where the kernel itself refuses it (a SIGSEGV: no
# ia32 emulation), the sandbox must refuse it too, and I386 is what the
# host gives; I386_BY says which of the two refused.
host_i386() {
    I386=SIGSYS I386_BY=filter
    [ "$(uname -m)" = x86_64 ] || return 0
    local host
    host=$("$WS/try-syscall" i386_int80)
    if [ "$host" != "i386_int80 OK" ]; then
        I386=${host#i386_int80 } I386_BY=kernel
    fi
}

teardown() {
    [ -z "${GW_PID:-}" ] || kill "$GW_PID" 2>/dev/null || true
    launch_teardown
}

@test "each rule of the baseline profile gives its exact errno inside the sandbox" {
    mapfile -t names < <(cut -d' ' -f1 "$EXPECTED")
    run --separate-stderr sbx-launch - <<<"$(jq -cn --arg ws "$WS" --args \
        '{argv: (["/workspace/try-syscall"] + $ARGS.positional), workspace: $ws}' "${names[@]}")"
    assert_success
    diff -u "$EXPECTED" <(printf '%s\n' "$output")
}

@test "every row of the rule table is exercised by the expected list" {
    run sbx-launch --list-seccomp
    assert_success
    while read -r syscall; do
        grep -q "^$syscall[ _]" "$EXPECTED" || fail "table row '$syscall' has no try-syscall case"
    done < <(jq -r .syscall <<<"$output" | sort -u)
}

@test "CVE-2017-5226/CVE-2023-28100: TIOCSTI is refused even with high bits set" {
    run --separate-stderr sbx-launch - <<<"$(jq -cn --arg ws "$WS" \
        '{argv: ["/workspace/try-syscall", "ioctl_tiocsti", "ioctl_tiocsti_high", "ioctl_tioclinux"], workspace: $ws}')"
    assert_success
    assert_output $'ioctl_tiocsti EPERM\nioctl_tiocsti_high EPERM\nioctl_tioclinux EPERM'
}

@test "CVE-2021-41133: clone3 and the new mount API answer ENOSYS so libc falls back" {
    in_sandbox '/workspace/try-syscall clone3 fsopen open_tree clone_plain'
    assert_success
    assert_output $'clone3 ENOSYS\nfsopen ENOSYS\nopen_tree ENOSYS\nclone_plain OK'
}

@test "an i386 int \$0x80 and an x32 syscall from a 64-bit binary kill the process" {
    [ "$(uname -m)" = x86_64 ] || skip "x86_64 only"
    in_sandbox '/workspace/try-syscall i386_int80 x32_getpid getpid'
    assert_success
    # An x32 number reaches seccomp on every x86_64 kernel: the filter kills.
    assert_output "i386_int80 $I386"$'\nx32_getpid SIGSYS\ngetpid OK'
    echo "# i386 refused by the $I386_BY ($I386)" >&3
}

@test "this kernel really runs i386 int \$0x80 and modify_ldt outside a sandbox (so inside, the filter refuses them)" {
    [ "$(uname -m)" = x86_64 ] || skip "x86_64 only"
    run "$WS/try-syscall" i386_int80 i386_modify_ldt modify_ldt x32_getpid
    assert_success
    # Without ia32 emulation int $0x80 is a SIGSEGV; without CONFIG_X86_X32
    # an x32 number is ENOSYS: either way the sandbox's SIGSYS below is the
    # filter's doing, not the kernel's.
    if [[ "${lines[0]}" != "i386_int80 OK" ]]; then
        # The kernel itself refuses: then so must the sandbox (above).
        [ "$I386_BY" = kernel ] && [ "${lines[0]}" = "i386_int80 $I386" ]
        skip "no ia32 emulation here (${lines[0]}): the kernel refuses i386 calls itself"
    fi
    assert_line "i386_modify_ldt OK"
    assert_line "modify_ldt OK"
    assert_line --regexp '^x32_getpid (OK|ENOSYS)$'
}

# A gateway on $WORK/gw.sock, so a spec can have the network profile.
start_gateway() {
    echo '{"mode":"domain-allowlist","allowedDomains":["api.test"]}' > "$WORK/policy.json"
    local owner=()
    [ "$(id -u)" -ne 0 ] || owner=(--socket-owner "$(expected_uid)")
    mkfifo "$WORK/ready"
    sbx-egress gateway --socket "$WORK/gw.sock" --policy "$WORK/policy.json" "${owner[@]}" --ready-fd 3 \
        3>"$WORK/ready" 2>"$WORK/gw.err" &
    GW_PID=$!
    read -r line < "$WORK/ready"
    [ "$line" = ready ]
}

@test "modify_ldt is EPERM and i386/x32 calls are SIGSYS in every profile (baseline, network, npu)" {
    [ "$(uname -m)" = x86_64 ] || skip "x86_64 only"
    start_gateway
    calls=(modify_ldt i386_int80 i386_modify_ldt x32_getpid x32_rt_sigaction getpid)
    for extra in '{}' "{\"network\":{\"mode\":\"domain-allowlist\",\"socket\":\"$WORK/gw.sock\"}}" \
                 '{"devices":{"nodes":[{"host":"/dev/null","sandbox":"/dev/d0"}]}}'; do
        spec=$(jq -cn --arg ws "$WS" --argjson extra "$extra" --args \
            '{argv: (["/workspace/try-syscall"] + $ARGS.positional), workspace: $ws} + $extra' "${calls[@]}")
        run --separate-stderr sbx-launch --dry-run - <<<"$spec"
        profile=$(jq -r .seccompProfile <<<"$output")
        run --separate-stderr sbx-launch - <<<"$spec"
        assert_success
        assert_equal "$profile: $(printf '%s ' "${lines[@]}")" \
            "$profile: modify_ldt EPERM i386_int80 $I386 i386_modify_ldt $I386 x32_getpid SIGSYS x32_rt_sigaction SIGSYS getpid OK "
        seen+=("$profile")
    done
    kill "$GW_PID"
    assert_equal "${seen[*]}" "baseline network npu"
}

@test "the rule table lists each rule's errno and reason" {
    run sbx-launch --list-seccomp
    jq -se 'map(select(.syscall == "clone3"))[0] | .errno == "ENOSYS" and (.reason | test("CVE-2021-41133"))' <<<"$output"
    jq -se 'map(select(.errno != "EPERM" and .errno != "ENOSYS" and .errno != "EAFNOSUPPORT")) | length == 0' <<<"$output"
}
