#!/usr/bin/env bats
# sbx-probe against this host's real bwrap and against fake bwraps under
# test/fixtures/bwrap; runs both as root and as the unprivileged sbxtest.

load helpers

setup() {
    CACHE="$BATS_TEST_TMPDIR/cache"
    export FAKE_BWRAP_LOG="$BATS_TEST_TMPDIR/bwrap.log"
    unset SBX_BWRAP SCIENCE_AGENT_BWRAP_PATH SBX_DATA_DIR SCIENCE_AGENT_DATA_DIR
}

@test "this host's bwrap: usable, fresh /proc, --disable-userns, seccomp, exit 0" {
    run --separate-stderr sbx-probe --no-cache
    assert_success
    [ "$(jq_out .usable)" = true ]
    [ "$(jq_out .procMode)" = new ]
    [ "$(jq_out .procFallback)" = false ]
    [ "$(jq_out .disableUserns)" = true ]
    [ "$(jq_out .reason)" = supported ]
    [ "$(jq_out .seccomp)" = true ]
    [ "$(jq_out .bwrap.path)" = "$(command -v bwrap)" ]
    [ "$(jq_out .bwrap.version)" = "$(bwrap --version | cut -d' ' -f2)" ]
    [ "$(jq_out '.warnings | length')" = 0 ]
    [ "$(jq_out .uid)" = "$(id -u)" ]
    [[ "$(jq_out .probedAt)" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$ ]]
}

@test "output has every documented field with its type" {
    run --separate-stderr sbx-probe --no-cache
    assert_success
    jq -e '(.bwrap|type=="object") and (.bwrap.path|type=="string") and
        (.bwrap.requested|type=="string") and (.bwrap.setuid|type=="boolean") and
        (.usable|type=="boolean") and (.procMode|type=="string") and
        (.procFallback|type=="boolean") and (.disableUserns|type=="boolean") and
        (.reason|type=="string") and has("detail") and has("procDetail") and
        (.seccomp|type=="boolean") and (.missingOptions|type=="array") and
        (.warnings|type=="array") and (.probedAt|type=="string") and (.cached|type=="boolean")' \
        <<<"$output"
}

@test "paired probes differ by exactly the varied token (--disable-userns after --die-with-parent)" {
    run --separate-stderr sbx-probe --no-cache --bwrap "$FIXTURES/bwrap/counting-bwrap"
    assert_success
    mapfile -t runs < <(grep '^run | ' "$FAKE_BWRAP_LOG" | sed 's/^run | //')
    [ "${#runs[@]}" -eq 3 ]
    p1=${runs[0]} p3=${runs[1]}
    [ "$p3" = "${p1/--die-with-parent /--die-with-parent --disable-userns }" ]
    [[ "$p1" == "--unshare-all --unshare-user --die-with-parent --ro-bind /usr /usr "* ]]
    [[ "$p1" == *" --proc /proc -- /usr/bin/true" ]]
    [[ "${runs[2]}" == *" --seccomp 3 -- /usr/bin/true" ]]
}

@test "bwrap is taken from --bwrap, then SBX_BWRAP, then SCIENCE_AGENT_BWRAP_PATH" {
    SCIENCE_AGENT_BWRAP_PATH="$FIXTURES/bwrap/old-bwrap" run --separate-stderr sbx-probe --no-cache
    [ "$(jq_out .bwrap.version)" = 0.6.1 ]
    SBX_BWRAP="$FIXTURES/bwrap/unusable-bwrap" SCIENCE_AGENT_BWRAP_PATH="$FIXTURES/bwrap/old-bwrap" \
        run --separate-stderr sbx-probe --no-cache
    [ "$(jq_out .bwrap.path)" = "$FIXTURES/bwrap/unusable-bwrap" ]
    SBX_BWRAP="$FIXTURES/bwrap/unusable-bwrap" \
        run --separate-stderr sbx-probe --no-cache --bwrap "$FIXTURES/bwrap/old-bwrap"
    [ "$(jq_out .bwrap.path)" = "$FIXTURES/bwrap/old-bwrap" ]
}

@test "bwrap found on PATH like execvp" {
    mkdir "$BATS_TEST_TMPDIR/path"
    ln -s "$FIXTURES/bwrap/old-bwrap" "$BATS_TEST_TMPDIR/path/bwrap"
    PATH="$BATS_TEST_TMPDIR/path:$PATH" run --separate-stderr sbx-probe --no-cache
    [ "$(jq_out .bwrap.version)" = 0.6.1 ]
    [ "$(jq_out .bwrap.requested)" = bwrap ]
}

@test "option-unknown: an old bwrap rejects --disable-userns; usable with a warning" {
    run --separate-stderr sbx-probe --no-cache --bwrap "$FIXTURES/bwrap/old-bwrap"
    assert_success
    [ "$(jq_out .reason)" = option-unknown ]
    [ "$(jq_out .usable)" = true ]
    [ "$(jq_out .disableUserns)" = false ]
    [ "$(jq_out .detail)" = "bwrap: Unknown option --disable-userns" ]
    [ "$(jq_out '.warnings[0].code')" = userns-option-unknown ]
    [[ "$(jq_out '.warnings[0].message')" == *"requires bwrap >= 0.8"* ]]
    [[ "$(jq_out '.warnings[0].message')" == *"Still in force"* ]]
    [[ "$(jq_out '.warnings[0].remedy')" == *"Upgrade bubblewrap"* ]]
    [[ "$stderr" == *'"code":"userns-option-unknown"'* ]]
}

@test "sandbox-unusable: exit 4, the refusal line, and the host diagnosis" {
    run --separate-stderr sbx-probe --no-cache --bwrap "$FIXTURES/bwrap/unusable-bwrap"
    assert_failure 4
    [ "$(jq_out .usable)" = false ]
    [ "$(jq_out .reason)" = sandbox-unusable ]
    [ "$(jq_out .procMode)" = new ]
    [ "$(jq_out .procFallback)" = false ]
    [ "$(jq_out .disableUserns)" = false ]
    [ "$(jq_out .seccomp)" = false ]
    [[ "$(jq_out .detail)" == "bwrap: No permissions to create new namespace"* ]]
    [ "$(jq_out .detail)" = "$(jq_out .procDetail)" ]
    [ "$(jq_out '.warnings[0].code')" = sandbox-unusable ]
    [[ "$(jq_out '.warnings[0].message')" == *"cannot create a sandbox on this host"* ]]
    [[ "$(jq_out '.warnings[0].remedy')" == *"kernel.apparmor_restrict_unprivileged_userns"* ]]
    # P1 and P2 only: nothing else is tried on a host that cannot sandbox.
    [ "$(grep -c '^run | ' "$FAKE_BWRAP_LOG")" -eq 2 ]
}

@test "a missing bwrap: exit 4 with the install command for this distribution" {
    run --separate-stderr sbx-probe --no-cache --bwrap /nonexistent/bwrap
    assert_failure 4
    [ "$(jq_out .usable)" = false ]
    [ "$(jq_out .bwrap.path)" = null ]
    [ "$(jq_out .bwrap.requested)" = /nonexistent/bwrap ]
    [ "$(jq_out '.warnings[0].code')" = bwrap-missing ]
    [[ "$(jq_out '.warnings[0].message')" == *"bubblewrap (/nonexistent/bwrap) was not found"* ]]
    [[ "$(jq_out '.warnings[0].remedy')" == *"apt-get install bubblewrap"* ]]
}

@test "a missing bwrap on an empty PATH" {
    run --separate-stderr env PATH=/nonexistent "$SBX_BIN/sbx-probe" --no-cache
    assert_failure 4
    [ "$(jq_out '.warnings[0].code')" = bwrap-missing ]
}

@test "a bwrap whose --help lacks --seccomp is unusable, with the missing list" {
    run --separate-stderr sbx-probe --no-cache --bwrap "$FIXTURES/bwrap/no-seccomp-bwrap"
    assert_failure 4
    [ "$(jq_out '.missingOptions | join(",")')" = --seccomp ]
    [ "$(jq_out '.warnings[0].code')" = bwrap-options-missing ]
    [[ "$(jq_out .detail)" == *"lacks required sandbox options: --seccomp"* ]]
    ! grep -q '^run | ' "$FAKE_BWRAP_LOG"
}

@test "a filter passed with --seccomp but not enforced makes the host unusable" {
    run --separate-stderr sbx-probe --no-cache --bwrap "$FIXTURES/bwrap/ignores-seccomp-bwrap"
    assert_failure 4
    [ "$(jq_out .seccomp)" = false ]
    [ "$(jq_out '.warnings[0].code')" = seccomp-unavailable ]
    [[ "$(jq_out .detail)" == *"was not enforced"* ]]
}

@test "a setuid bwrap is named in a warning" {
    cp "$FIXTURES/bwrap/old-bwrap" "$FIXTURES/bwrap/lib.sh" "$BATS_TEST_TMPDIR/"
    chmod u+s "$BATS_TEST_TMPDIR/old-bwrap"
    run --separate-stderr sbx-probe --no-cache --bwrap "$BATS_TEST_TMPDIR/old-bwrap"
    [ "$(jq_out .bwrap.setuid)" = true ]
    jq -e '.warnings | map(.code) | index("bwrap-setuid")' <<<"$output"
}

@test "a sandbox that hangs is killed at --timeout-ms and reported" {
    export FAKE_BWRAP_PIDFILE="$BATS_TEST_TMPDIR/pids"
    run --separate-stderr sbx-probe --no-cache --timeout-ms 300 --bwrap "$FIXTURES/bwrap/hanging-bwrap"
    assert_failure 4
    [[ "$(jq_out .detail)" == *"timed out after 300 ms"* ]]
    # Both probe sandboxes were started, and neither outlived the probe.
    [ "$(wc -l < "$FAKE_BWRAP_PIDFILE")" -eq 2 ]
    while read -r pid; do ! kill -0 "$pid" 2>/dev/null; done < "$FAKE_BWRAP_PIDFILE"
}

@test "usage errors exit 2 with a JSON diagnostic naming the option" {
    run --separate-stderr sbx-probe --timeout-ms abc
    assert_failure 2
    [[ "$stderr" == *'"level":"error"'* ]]
    [[ "$stderr" == *"--timeout-ms: expected an integer"* ]]
    run --separate-stderr sbx-probe --frobnicate
    assert_failure 2
    [[ "$stderr" == *"--frobnicate"* ]]
    run --separate-stderr sbx-probe extra
    assert_failure 2
    run --separate-stderr sbx-probe --no-cache --cache-dir /tmp
    assert_failure 2
    [[ "$stderr" == *"exclude each other"* ]]
    run --separate-stderr sbx-probe --bwrap ''
    assert_failure 2
    [[ "$stderr" == *"--bwrap: must not be empty"* ]]
}

@test "--help lists options and the exit codes; --version prints the version" {
    run sbx-probe --help
    assert_success
    assert_output --partial "--cache-dir"
    assert_output --partial "4  this environment cannot build a sandbox"
    run sbx-probe --version
    assert_success
    assert_output --regexp '^sbx-probe [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "contrib/examples/probe-gate.sh runs the job on a fully usable host and refuses a degraded one" {
    gate="$BATS_TEST_DIRNAME/../../contrib/examples/probe-gate.sh"
    [ -x "$gate" ] || skip "contrib/ is not part of this copy of the tree"
    SBX_DATA_DIR="$BATS_TEST_TMPDIR/data" run "$gate" -- echo ran
    assert_success
    assert_output ran
    SBX_DATA_DIR="$BATS_TEST_TMPDIR/data" SBX_BWRAP="$FIXTURES/bwrap/old-bwrap" run "$gate" -- echo ran
    assert_failure 3
    assert_output --partial "remedy: Upgrade bubblewrap"
    SBX_DATA_DIR="$BATS_TEST_TMPDIR/data" SBX_BWRAP="$FIXTURES/bwrap/old-bwrap" \
        run "$gate" --allow-degraded -- echo ran
    assert_success
    SBX_DATA_DIR="$BATS_TEST_TMPDIR/data" SBX_BWRAP="$FIXTURES/bwrap/unusable-bwrap" run "$gate" -- echo ran
    assert_failure 4
}
