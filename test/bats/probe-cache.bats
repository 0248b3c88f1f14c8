#!/usr/bin/env bats
# The probe cache: keyed by the bwrap binary and uid, shared by concurrent
# probers, re-probed when the binary changes, unusable answers expire.
# A counting bwrap (a real sandbox, every call logged) tells how often bwrap ran.

load helpers

setup() {
    CACHE="$BATS_TEST_TMPDIR/cache"
    export FAKE_BWRAP_LOG="$BATS_TEST_TMPDIR/bwrap.log"
    # A private copy of the counting bwrap, so touching it affects this test only.
    cp "$FIXTURES/bwrap/counting-bwrap" "$FIXTURES/bwrap/unusable-bwrap" \
        "$FIXTURES/bwrap/lib.sh" "$BATS_TEST_TMPDIR/"
    BWRAP="$BATS_TEST_TMPDIR/counting-bwrap"
    unset SBX_BWRAP SCIENCE_AGENT_BWRAP_PATH SBX_DATA_DIR SCIENCE_AGENT_DATA_DIR
}

teardown() {
    [ -z "${SHARED:-}" ] || rm -rf "$SHARED"
}

calls() { if [ -f "$FAKE_BWRAP_LOG" ]; then wc -l < "$FAKE_BWRAP_LOG"; else echo 0; fi; }
record() { ls "$CACHE"/probe-$([ "$(id -u)" -eq 0 ] && echo root || echo user)-*.json; }

# One cold probe of a working bwrap: --version, --help, P1, P3, seccomp.
COLD=5

@test "a cold probe runs bwrap $COLD times; a repeat answers from the cache and runs none" {
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    assert_success
    [ "$(jq_out .cached)" = false ]
    [ "$(calls)" -eq "$COLD" ]
    first=$output
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    assert_success
    [ "$(jq_out .cached)" = true ]
    [ "$(calls)" -eq "$COLD" ]
    # The same answer, apart from the cached flag.
    [ "$(jq -S 'del(.cached)' <<<"$first")" = "$(jq_out 'del(.cached)' | jq -S .)" ]
}

@test "two concurrent cold probes run bwrap only as often as one" {
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" > "$BATS_TEST_TMPDIR/a" 2>/dev/null &
    a=$!
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" > "$BATS_TEST_TMPDIR/b" 2>/dev/null &
    b=$!
    wait "$a"
    wait "$b"
    [ "$(calls)" -eq "$COLD" ]
    [ "$(jq -s 'map(.cached) | sort | tostring' "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b")" = '"[false,true]"' ]
}

@test "touching the bwrap binary forces a re-probe" {
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" >/dev/null 2>&1
    [ "$(calls)" -eq "$COLD" ]
    touch -d '+2 seconds' "$BWRAP"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    [ "$(jq_out .cached)" = false ]
    [ "$(calls)" -eq $((2 * COLD)) ]
}

@test "--refresh probes again and stores the new answer" {
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" >/dev/null 2>&1
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" --refresh
    [ "$(jq_out .cached)" = false ]
    [ "$(calls)" -eq $((2 * COLD)) ]
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    [ "$(jq_out .cached)" = true ]
}

@test "an unusable answer is kept for 60 s, then probed again" {
    U="$BATS_TEST_TMPDIR/unusable-bwrap"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$U"
    assert_failure 4
    n=$(calls)
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$U"
    assert_failure 4
    [ "$(jq_out .cached)" = true ]
    [ "$(calls)" -eq "$n" ]
    # Rewriting the record unchanged keeps it valid ...
    r=$(record)
    jq -c . "$r" > "$r.new" && chmod 600 "$r.new" && mv "$r.new" "$r"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$U"
    [ "$(jq_out .cached)" = true ]
    # ... and aging it by 61 s, as if a minute had passed, expires it.
    jq -c '.probedAtEpoch -= 61' "$r" > "$r.new" && chmod 600 "$r.new" && mv "$r.new" "$r"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$U"
    assert_failure 4
    [ "$(jq_out .cached)" = false ]
    [ "$(calls)" -eq $((2 * n)) ]
}

@test "a usable answer does not expire" {
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" >/dev/null 2>&1
    r=$(record)
    jq -c '.probedAtEpoch -= 86400' "$r" > "$r.new" && chmod 600 "$r.new" && mv "$r.new" "$r"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    [ "$(jq_out .cached)" = true ]
}

@test "a record others can write is not trusted" {
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" >/dev/null 2>&1
    r=$(record)
    jq -c '.result.procMode = "bind"' "$r" > "$r.new" && mv "$r.new" "$r" && chmod 666 "$r"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    [ "$(jq_out .cached)" = false ]
    [ "$(jq_out .procMode)" = new ]
    [[ "$stderr" == *'"code":"probe-cache-untrusted"'* ]]
    [ "$(stat -c %a "$(record)")" = 600 ]
}

@test "a corrupt record is replaced by a fresh probe" {
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" >/dev/null 2>&1
    r=$(record)
    printf '{"version":1,"key":' > "$r"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    assert_success
    [ "$(jq_out .cached)" = false ]
    jq -e .result "$r" >/dev/null
}

@test "the cache directory is created 0700 and records 0600, keyed by the host's shape and the caller's class" {
    sbx-probe --cache-dir "$CACHE/deep/er" --bwrap "$BWRAP" >/dev/null 2>&1
    [ "$(stat -c %a "$CACHE/deep/er")" = 700 ]
    r=$(ls "$CACHE"/deep/er/probe-$([ "$(id -u)" -eq 0 ] && echo root || echo user)-*.json)
    [ "$(stat -c %a "$r")" = 600 ]
    [ "$(jq -r .key.caller "$r")" = "$([ "$(id -u)" -eq 0 ] && echo root || echo user)" ]
    [ "$(jq -r .key.path "$r")" = "$BWRAP" ]
    [ "$(jq -r .key.kernel.release "$r")" = "$(uname -r)" ]
    [ "$(jq -r .key.userns.maxUserNamespaces "$r")" = "$(cat /proc/sys/user/max_user_namespaces)" ]
    ! ls "$CACHE"/deep/er/*.tmp.* 2>/dev/null
}

@test "as root, --run-as probes as that uid once for every uid of the range: a second uid answers from the cache" {
    [ "$(id -u)" -eq 0 ] || skip "only root probes as another uid"
    # The probing uid runs this bwrap and writes its log: a copy it reaches.
    SHARED=$(mktemp -d /tmp/sbx-probe-as.XXXXXX)
    chmod 755 "$SHARED"
    cp "$BWRAP" "$FIXTURES/bwrap/lib.sh" "$SHARED/"
    BWRAP="$SHARED/counting-bwrap"
    export FAKE_BWRAP_LOG="$SHARED/bwrap.log"
    install -m 666 /dev/null "$FAKE_BWRAP_LOG"
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" --run-as 2000012345:2000012345
    assert_success
    # Probed as the probe's own uid, in the asked gid: no process of a
    # workload's uid can stop or signal its sandboxes.
    [ "$(jq_out .cached)" = false ] && [ "$(jq_out .uid)" = 2147483646 ]
    [ "$(calls)" -eq "$COLD" ]
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" --run-as 2000054321:2000054321
    assert_success
    [ "$(jq_out .cached)" = true ]
    [ "$(calls)" -eq "$COLD" ]
    ls "$CACHE"/probe-user-*.json
    # Root's own answer is another record.
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    [ "$(jq_out .cached)" = false ] && [ "$(jq_out .uid)" = 0 ]
    [ "$(calls)" -eq $((2 * COLD)) ]
    # A uid of 0 is refused, naming the option's value; so is the probe's.
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" --run-as 0
    assert_failure 3
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" --run-as 2147483646
    assert_failure 2
    [[ "$stderr" == *"uid 2147483646 is the sandbox probe's alone"* ]]
}

@test "an answer one of whose sandboxes timed out (here the fresh /proc, so the bind fallback) is used but never cached" {
    cp "$FIXTURES/bwrap/slow-proc-bwrap" "$BATS_TEST_TMPDIR/"
    for _ in 1 2; do
        run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BATS_TEST_TMPDIR/slow-proc-bwrap" --timeout-ms 300
        assert_success
        [ "$(jq -r '.cached, .procMode' <<<"$output" | tr '\n' ' ')" = "false bind " ]
        ! ls "$CACHE"/probe-*.json 2>/dev/null
    done
    # The same host answered in time is cached.
    run --separate-stderr sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP"
    assert_success
    record
}

@test "the default cache lives under the data dir" {
    SBX_DATA_DIR="$BATS_TEST_TMPDIR/data" run --separate-stderr sbx-probe --bwrap "$BWRAP"
    assert_success
    ls "$BATS_TEST_TMPDIR"/data/cache/probe-$([ "$(id -u)" -eq 0 ] && echo root || echo user)-*.json
}

@test "--no-cache neither reads nor writes a record" {
    SBX_DATA_DIR="$BATS_TEST_TMPDIR/data" run --separate-stderr sbx-probe --no-cache --bwrap "$BWRAP"
    assert_success
    [ ! -e "$BATS_TEST_TMPDIR/data" ]
}

@test "an unusable cache directory is reported, and the probe still answers" {
    touch "$BATS_TEST_TMPDIR/file"
    run --separate-stderr sbx-probe --cache-dir "$BATS_TEST_TMPDIR/file/sub" --bwrap "$BWRAP"
    assert_success
    [ "$(jq_out .usable)" = true ]
    [[ "$stderr" == *'"code":"probe-cache-unavailable"'* ]]
}

@test "a lock holder that never lets go delays a prober by its deadline (six probe timeouts), never for ever" {
    sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" >/dev/null 2>&1
    [ "$(calls)" -eq "$COLD" ]
    # This shell holds the record's lock (its own open file description:
    # the prober's open conflicts with it) for the whole test.
    exec 9>"$(record).lock"
    flock -x 9
    run --separate-stderr timeout 60 sbx-probe --cache-dir "$CACHE" --bwrap "$BWRAP" --refresh --timeout-ms 100
    exec 9>&-
    assert_success
    [ "$(jq_out .cached)" = false ]
    [ "$(calls)" -eq $((2 * COLD)) ]
}
