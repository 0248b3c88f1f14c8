#!/usr/bin/env bats
# Real refusals, reproduced as containers cause them: as root, a private
# mount namespace masks /proc (as Docker's maskedPaths do) or makes /proc/sys
# read-only (as LXC does); sbx-probe then runs there as the unprivileged
# sbxtest and must classify what this kernel's bwrap really refuses.
# Needs root and the sbxtest user; test/run.sh runs it only as root.

load helpers

setup() {
    [ "$(id -u)" -eq 0 ] || skip "needs root to build mount namespaces"
    id sbxtest >/dev/null 2>&1 || skip "needs the sbxtest user (test/run.sh creates it)"
    : > "$BATS_TEST_TMPDIR/empty"
    mkdir -p "$BATS_TEST_TMPDIR/visible-proc"
    chmod 755 "$BATS_TEST_TMPDIR"
}

# probe_in MASK_PROC RO_SYS: runs sbx-probe as sbxtest in a private mount
# namespace with /proc/keys masked and/or /proc/sys bound read-only.
probe_in() {
    local script="mount --make-rprivate /"
    if [ "$1" = masked ]; then
        # A file over /proc/keys: a locked mount on a non-empty /proc makes the
        # kernel refuse a fresh procfs to an unprivileged user namespace.
        script+="; mount --bind $BATS_TEST_TMPDIR/empty /proc/keys"
    else
        # The kernel lets a new procfs be mounted only while some procfs in the
        # namespace is fully visible; LXC keeps one, so does this.
        script+="; mount -t proc proc $BATS_TEST_TMPDIR/visible-proc"
    fi
    if [ "$2" = ro-sys ]; then
        script+="; mount --bind -o ro /proc/sys /proc/sys"
    fi
    script+="; exec runuser -u sbxtest -- $SBX_BIN/sbx-probe --no-cache"
    run --separate-stderr unshare --mount sh -c "$script"
}

@test "neither: fresh /proc, --disable-userns supported" {
    probe_in open rw-sys
    assert_success
    [ "$(jq_out .procMode)" = new ]
    [ "$(jq_out .procFallback)" = false ]
    [ "$(jq_out .reason)" = supported ]
    [ "$(jq_out .disableUserns)" = true ]
    [ "$(jq_out .uid)" = "$(id -u sbxtest)" ]
}

@test "/proc masked (Docker): bind fallback, --disable-userns supported" {
    probe_in masked rw-sys
    assert_success
    [ "$(jq_out .procMode)" = bind ]
    [ "$(jq_out .procFallback)" = true ]
    [ "$(jq_out .reason)" = supported ]
    [ "$(jq_out .disableUserns)" = true ]
    [ "$(jq_out .procDetail)" = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted" ]
    [ "$(jq_out '.warnings[0].code')" = proc-fallback ]
    [[ "$(jq_out '.warnings[0].remedy')" == *"systempaths=unconfined"* ]]
    [[ "$(jq_out '.warnings[0].remedy')" == *"Do not use privileged"* ]]
}

@test "/proc/sys read-only (LXC): fresh /proc, --disable-userns rejected" {
    probe_in open ro-sys
    assert_success
    [ "$(jq_out .procMode)" = new ]
    [ "$(jq_out .reason)" = option-rejected ]
    [ "$(jq_out .disableUserns)" = false ]
    [ "$(jq_out .usable)" = true ]
    [ "$(jq_out .detail)" = "bwrap: cannot open /proc/sys/user/max_user_namespaces: Read-only file system" ]
    [ "$(jq_out '.warnings[0].code')" = userns-option-rejected ]
    [[ "$(jq_out '.warnings[0].message')" == *"Still in force"* ]]
}

@test "both: bind fallback and --disable-userns rejected" {
    probe_in masked ro-sys
    assert_success
    [ "$(jq_out .procMode)" = bind ]
    [ "$(jq_out .procFallback)" = true ]
    [ "$(jq_out .reason)" = option-rejected ]
    [ "$(jq_out '[.warnings[].code] | join(",")')" = proc-fallback,userns-option-rejected ]
}

@test "user.max_user_namespaces=0: unusable, exit 4, the sysctl named with its remedy" {
    # The limit is per user namespace: set it to 0 in one made for this test.
    run --separate-stderr unshare --user --map-root-user sh -c \
        "echo 0 > /proc/sys/user/max_user_namespaces && exec $SBX_BIN/sbx-probe --no-cache"
    assert_failure 4
    [ "$(jq_out .reason)" = sandbox-unusable ]
    [[ "$(jq_out .detail)" == *"max_*_namespaces exceeded"* ]]
    jq -e '.warnings | map(select(.code == "max-user-namespaces-zero" and
        (.remedy | contains("user.max_user_namespaces")))) | length == 1' <<<"$output"
}
