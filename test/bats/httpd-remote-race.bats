#!/usr/bin/env bats
# Remote workspaces against an attacker (issue 16, item 2): a loop swaps a
# directory of the workspace with a symlink to a private host directory
# (renameat2 RENAME_EXCHANGE) while every endpoint is hammered. Nothing
# outside is ever read, written, created, listed or deleted; a lost race is
# a clean 400/409 that names no host path.

load httpd_helpers

ROUNDS=${SBX_RACE_ROUNDS:-150}

setup() {
    httpd_setup
    RW="$WORK/data/remote-workspaces"
    # The host directory the attacker aims at: private, a secret, canaries.
    OUT=$(mktemp -d /tmp/sbx-outside.XXXXXX)
    chmod 700 "$OUT"
    SECRET="TOPSECRET-$$-$RANDOM"
    echo "$SECRET" > "$OUT/secret"
    echo "$SECRET" > "$OUT/only-outside"
    mkdir -p "$OUT/sub" "$OUT/k"
    echo "$SECRET" > "$OUT/k/secret"
    echo canary > "$OUT/sub/canary"
    echo canary > "$OUT/k/canary"
    # The workspace: the same names inside, and the symlink to swap in.
    mkdir -p "$RW/w/d/sub" "$RW/w/d/k"
    echo inside > "$RW/w/d/secret"
    echo inside > "$RW/w/d/k/secret"
    ln -s "$OUT" "$RW/w/s"
    BEFORE=$(outside_listing)
    mkdir -p "$WORK/r"
    REQ=()
    N=0
}

teardown() {
    stop_racer
    [ -z "${OUT:-}" ] || rm -rf "$OUT"
    httpd_teardown
}

# Every name below $OUT with its type, size, mode, owner, inode, mtime, ctime.
outside_listing() {
    find "$OUT" -printf '%P %y %s %m %U:%G %i %T@ %C@\n' | sort
}

# race A B [A B...]: the attacker swaps each pair until stopped; returns
# once it has swapped one.
race() {
    mkfifo "$WORK/racer-ready"
    "$FIXTURES/exchange-loop.py" "$WORK/racer-ready" 240 "$@" > "$WORK/racer.count" &
    RACER_PID=$!
    await_fifo "$WORK/racer-ready"
}

stop_racer() {
    [ -n "${RACER_PID:-}" ] || return 0
    kill "$RACER_PID" 2>/dev/null || true
    wait "$RACER_PID" 2>/dev/null || true
    RACER_PID=
}

# add METHOD URL [CURL-ARGS...]: one more request for the next `fire`.
add() {
    local method=$1 url=$2
    shift 2
    [ "${#REQ[@]}" -eq 0 ] || REQ+=(--next)
    REQ+=(-sS -m 20 -X "$method" -H "authorization: Bearer $TOKEN" -o "$WORK/r/$N" -w '%{http_code}\n' "$@" "$BASE$url")
    N=$((N + 1))
}

# fire: every added request, in order, on one connection; their status
# codes, one a line, in $WORK/codes, their bodies in $WORK/r/<n>.
fire() {
    curl "${REQ[@]}" > "$WORK/codes" || true
    REQ=()
}

# answers_clean: every answer a success or a clean refusal whose message
# names no host path, and no body holds the secret.
answers_clean() {
    local i=0 code
    [ "$(wc -l < "$WORK/codes")" -eq "$N" ] || fail "$(wc -l < "$WORK/codes") answers to $N requests"
    while read -r code; do
        case $code in
        200 | 201 | 204) ;;
        400 | 404 | 409)
            jq -e 'has("error")' "$WORK/r/$i" > /dev/null || fail "request $i: $code without an error: $(head -c 300 "$WORK/r/$i")"
            ! grep -qE "$WORK|$OUT|/tmp/" "$WORK/r/$i" || fail "request $i names a host path: $(cat "$WORK/r/$i")"
            ;;
        *) fail "request $i answered $code: $(head -c 300 "$WORK/r/$i" 2>/dev/null)" ;;
        esac
        i=$((i + 1))
    done < "$WORK/codes"
    ! grep -rlq -- "$SECRET" "$WORK/r" || fail "the secret was served: $(grep -rl -- "$SECRET" "$WORK/r" | head -3)"
    ! grep -rlqE 'only-outside|canary' "$WORK/r" || fail "an outside name was listed: $(grep -rlE 'only-outside|canary' "$WORK/r" | head -3)"
}

# outside_untouched: the host directory is as it was, and the secret never
# reached the snapshot store.
outside_untouched() {
    assert_equal "$(outside_listing)" "$BEFORE"
    assert_equal "$(cat "$OUT/secret")" "$SECRET"
    local hex
    hex=$(printf '%s\n' "$SECRET" | sha256sum | cut -d' ' -f1)
    [ ! -e "$WORK/data/remote-snapshots/objects/${hex:0:2}/${hex:2}" ]
    ! grep -rqF -- "$SECRET" "$WORK/data/remote-snapshots" 2>/dev/null
}

# fire_and_check: fires, stops the attacker, then: every answer clean, both
# a success and a refusal seen (the race ran), the host directory untouched.
fire_and_check() {
    fire
    stop_racer
    answers_clean
    grep -qE '^20[014]$' "$WORK/codes" || fail "no request succeeded: $(sort "$WORK/codes" | uniq -c | tr '\n' ' ')"
    grep -qE '^40[049]$' "$WORK/codes" || fail "no request lost the race: $(sort "$WORK/codes" | uniq -c | tr '\n' ' ')"
    outside_untouched
}

@test "GET file through a swapped directory, or on a key below it, never serves the host file" {
    race "$RW/w/d" "$RW/w/s"
    for ((i = 0; i < ROUNDS; i++)); do
        add GET "/remote-workspace/file?workspace=w&path=d/secret"
        add GET "/remote-workspace/file?workspace=w&path=d/k/secret"
        add GET "/remote-workspace/file?workspace=w/d/k&path=secret"
    done
    fire_and_check
}

@test "PUT and transfer-file on nested paths and nested keys create and write nothing outside" {
    printf 'inside\n' > "$WORK/body"
    sha=$(sha256sum < "$WORK/body" | cut -d' ' -f1)
    verified=(--data-binary @"$WORK/body" -H "x-workspace-size: 7" -H "x-workspace-sha256: $sha")
    race "$RW/w/d" "$RW/w/s"
    for ((i = 0; i < ROUNDS; i++)); do
        add PUT "/remote-workspace/file?workspace=w&path=d/sub/p$i" --data-binary @"$WORK/body"
        add PUT "/remote-workspace/file?workspace=w&path=d/new$i/f" --data-binary @"$WORK/body"
        add PUT "/remote-workspace/file?workspace=w&path=d/secret&conflict=overwrite" --data-binary @"$WORK/body"
        add PUT "/remote-workspace/transfer-file?workspace=w&path=d/k/t$i" "${verified[@]}"
        add PUT "/remote-workspace/transfer-file?workspace=w/d/k&path=n$i/t&conflict=overwrite" "${verified[@]}"
        add PUT "/remote-workspace/file?workspace=w/d/k/m$i&path=f" --data-binary @"$WORK/body"
    done
    fire_and_check
    # Every temporary file was published or removed.
    assert_equal "$(find "$RW" -name '.sbx-upload-*' | wc -l) $(ls -A "$WORK/data/runner-uploads" | wc -l)" "0 0"
}

@test "listings and snapshots of a workspace being swapped list and copy only what is inside" {
    race "$RW/w/d" "$RW/w/s"
    for ((i = 0; i < ROUNDS; i++)); do
        add GET "/remote-workspace/files?workspace=w"
        add POST /remote-workspace/files --data-binary '{"workspace":"w/d/k"}'
        add POST /remote-workspace/snapshots --data-binary '{"workspace":"w"}'
        add POST /remote-workspace/snapshots --data-binary '{"workspace":"w/d/k","paths":["secret"]}'
    done
    fire_and_check
    # What was listed is what the workspace holds, under either name.
    run jq -r 'if type == "array" then .[].path elif has("files") then .files[].path else empty end' "$WORK"/r/*
    assert_success
    run grep -vxE '(d|s)/(secret|k/secret)|secret' <<<"$output"
    assert_output ""
}

@test "DELETE of a nested key whose parent is swapped, or of a key whose directory is swapped inside, removes nothing outside" {
    pairs=()
    for ((i = 0; i < 40; i++)); do
        mkdir -p "$RW/x$i/d/sub"
        echo inside > "$RW/x$i/d/sub/f"
        ln -s "$OUT" "$RW/x$i/s"
        pairs+=("$RW/x$i/d" "$RW/x$i/s")
    done
    race "$RW/w/d" "$RW/w/s" "${pairs[@]}"
    for ((i = 0; i < ROUNDS; i++)); do
        add DELETE "/remote-workspace?workspace=w/d/k"
        add PUT "/remote-workspace/file?workspace=w/d/k&path=f" --data-binary inside
        ((i >= 40)) || add DELETE "/remote-workspace?workspace=x$i"
    done
    fire_and_check
    # Once the attacker stops, every key deletes.
    for ((i = 0; i < 40; i++)); do
        api DELETE "/remote-workspace?workspace=x$i"
        assert_equal "$status_code $output" '200 {"deleted":true}'
        [ ! -e "$RW/x$i" ]
    done
    outside_untouched
}

@test "a FIFO where a file is expected: GET file answers at once, even while a file and a FIFO are swapped" {
    mkfifo "$RW/w/pipe"
    ln -s pipe "$RW/w/pipe-link"
    for p in pipe pipe-link; do
        api GET "/remote-workspace/file?workspace=w&path=$p" -m 10
        assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path is not a regular file: $p"
    done
    api POST /remote-workspace/snapshots -m 10 --data-binary '{"workspace":"w","paths":["pipe"]}'
    assert_equal "$status_code $(jq -c .files <<<"$output")" "201 []"
    echo inside > "$RW/w/f"
    race "$RW/w/f" "$RW/w/pipe"
    for ((i = 0; i < ROUNDS; i++)); do
        add GET "/remote-workspace/file?workspace=w&path=f"
        add POST /remote-workspace/snapshots --data-binary '{"workspace":"w","paths":["f","pipe"]}'
    done
    fire_and_check
}
