#!/usr/bin/env bats
# Every seccomp rule, called with harmless arguments from inside a real
# sandbox by test/fixtures/try-syscall: the exact errno (or SIGSYS for a
# foreign ABI) of each, and benign calls still reaching the kernel.

load launch_helpers

setup() {
    launch_setup
    cp "$SBX_BIN/test/try-syscall" "$WS/"
    EXPECTED="$FIXTURES/seccomp-baseline.expected"
}

teardown() {
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
    assert_output $'i386_int80 SIGSYS\nx32_getpid SIGSYS\ngetpid OK'
}

@test "the rule table lists each rule's errno and reason" {
    run sbx-launch --list-seccomp
    jq -se 'map(select(.syscall == "clone3"))[0] | .errno == "ENOSYS" and (.reason | test("CVE-2021-41133"))' <<<"$output"
    jq -se 'map(select(.errno != "EPERM" and .errno != "ENOSYS" and .errno != "EAFNOSUPPORT")) | length == 0' <<<"$output"
}
