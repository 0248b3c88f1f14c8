#!/usr/bin/env bats
# sbx-ws from a shell: put (stdin, --size, --sha256, --mode, --overwrite,
# the quota), ls, cat (bytes, or the fd over --fd-socket), rm, snapshots
# that outlive the workspace and serve only their key's selected paths,
# collection; bad input names the field and leaves the data dir as it was;
# a planted symlink is never followed out; a key with ".." is refused.

load helpers

setup() {
    DATA="$BATS_TEST_TMPDIR/data"
    OUT="$BATS_TEST_TMPDIR/outside"
    RW="$DATA/remote-workspaces"
    mkdir -p "$DATA" "$OUT"
    echo canary > "$OUT/canary"
}

ws() { sbx-ws --data-dir "$DATA" "$@"; }

# put KEY PATH DATA [OPTIONS...]: DATA on stdin.
put() {
    local key=$1 path=$2 data=$3
    shift 3
    run --separate-stderr bash -c 'printf "%s" "$1" | sbx-ws --data-dir "$2" put "${@:5}" -- "$3" "$4"' _ "$data" "$DATA" "$key" "$path" "$@"
}

# The data dir's every name, type and size: what "no state changed" compares.
state() { (cd "$DATA" && find . -printf '%p %y %s\n' | sort); }

@test "put from stdin, ls, cat: round trip, sizes, sha256 in the receipt" {
    put k a/b.txt hello --sha256 "$(printf hello | sha256sum | cut -d' ' -f1)" --size 5
    assert_success
    assert_equal "$(jq -c '[.path, .size, .sha256]' <<<"$output")" "[\"a/b.txt\",5,\"$(printf hello | sha256sum | cut -d' ' -f1)\"]"
    put k top.txt 'top!'
    assert_success
    run --separate-stderr ws ls k
    assert_success
    assert_equal "$(jq -c '[.[] | [.path, .size]]' <<<"$output")" '[["a/b.txt",5],["top.txt",4]]'
    run --separate-stderr ws ls --only k a
    assert_equal "$(jq -c '[.[].path]' <<<"$output")" '["a/b.txt"]'
    run --separate-stderr ws ls --only k
    assert_equal "$output" "[]"
    run --separate-stderr ws cat k a/b.txt
    assert_success
    assert_equal "$output" hello
    # Nothing staged is left behind.
    assert_equal "$(ls -A "$DATA/runner-uploads")" ""
}

@test "put refuses an existing file unless --overwrite; --mode keeps exec bits; the quota holds" {
    put k f one
    assert_success
    put k f two
    assert_failure 2
    assert_equal "$(jq -r .code <<<"$stderr")" exists
    assert_equal "$(cat "$RW/k/f")" one
    put k f two --overwrite --mode 755
    assert_success
    assert_equal "$(cat "$RW/k/f") $(stat -c %a "$RW/k/f")" "two 755"
    # A body longer than the whole quota is refused as it streams in.
    put k g 0123456789 --max-bytes 9
    assert_failure 6
    assert_equal "$(jq -r .code <<<"$stderr")" too-large
    # What the workspace holds (f: a block) plus the incoming, less what
    # it replaces: a second file does not fit, a replacement does.
    big=$(head -c 8000 /dev/zero | tr '\0' x)
    put k g "$big" --max-bytes 9000
    assert_failure 6
    assert_equal "$(jq -r .code <<<"$stderr")" quota
    [ ! -e "$RW/k/g" ]
    put k f "$big" --overwrite --max-bytes 9000
    assert_success
    assert_equal "$(stat -c %s "$RW/k/f")" 8000
}

@test "put: a body that does not match --size or --sha256 publishes nothing and leaves no staging file" {
    before=$(state)
    put k f hello --sha256 "$(printf other | sha256sum | cut -d' ' -f1)"
    assert_failure 9
    assert_equal "$(jq -r .message <<<"$stderr")" "The body does not match --sha256"
    put k f hello --size 4
    assert_failure 2
    [[ "$(jq -r .message <<<"$stderr")" == *--size* ]]
    put k f hello --size 6
    assert_failure 2
    [ ! -e "$RW/k/f" ]
    assert_equal "$(ls -A "$DATA/runner-uploads")" ""
}

@test "bad input names the field, exits 2 and leaves the data dir as it was" {
    put k f x
    before=$(state)
    for args in "ls a//b" "ls ." "cat k /etc/passwd" "cat k a/../f" "put k a/./b" "snapshot k ../x" \
                "rm k a//b" "snapshot-cat k 00000000-0000-4000-8000-000000000000 /abs"; do
        run --separate-stderr ws $args < /dev/null
        assert_failure 2
        [[ "$(jq -r .message <<<"$stderr")" =~ ^Invalid\ remote\ workspace\ (key|path)$ ]] || fail "$args: $stderr"
    done
    run --separate-stderr ws put --mode 777 k g < /dev/null
    assert_failure 2
    [[ "$(jq -r .message <<<"$stderr")" == *--mode* ]]
    run --separate-stderr ws put --sha256 XYZ k g < /dev/null
    assert_failure 2
    [[ "$(jq -r .message <<<"$stderr")" == *--sha256* ]]
    run --separate-stderr ws ls --only k $(seq -f 'p%g' 51)
    assert_failure 2
    [[ "$(jq -r .message <<<"$stderr")" == *"at most 50"* ]]
    run --separate-stderr ws frobnicate k
    assert_failure 2
    assert_equal "$(state)" "$before"
}

@test "a key with .. is refused for every command and nothing is made outside" {
    around=$(ls -A "$BATS_TEST_TMPDIR" | grep -v '^separate-stderr-')
    for key in ".." "../x" "a/../../x" "a/.." "./a" "/abs" 'a\b'; do
        for cmd in "ls" "snapshot" "rm"; do
            run --separate-stderr ws $cmd -- "$key"
            assert_failure 2
            assert_equal "$(jq -r .message <<<"$stderr")" "Invalid remote workspace key"
        done
        put "$key" f data
        assert_failure 2
        assert_equal "$(jq -r .message <<<"$stderr")" "Invalid remote workspace key"
    done
    [ ! -e "$RW" ] || assert_equal "$(ls -A "$RW")" ""
    assert_equal "$(ls -A "$BATS_TEST_TMPDIR" | grep -v '^separate-stderr-')" "$around"
    assert_equal "$(ls -A "$DATA" | grep -v '^remote-workspaces$\|^runner-uploads$')" ""
    assert_equal "$(ls -A "$OUT")" canary
}

@test "a symlink planted in a workspace is never followed out: put, cat, ls, snapshot, rm" {
    put k real.txt inside
    ln -s "$OUT" "$RW/k/dir"
    ln -s "$OUT/canary" "$RW/k/leak"
    put k dir/x data
    assert_failure 2
    assert_equal "$(jq -r .message <<<"$stderr")" "Remote workspace path must not contain symbolic links"
    put k leak data --overwrite
    assert_failure 2
    assert_equal "$(jq -r .code <<<"$stderr")" symlink
    run --separate-stderr ws cat k leak
    assert_failure 2
    assert_equal "$(jq -r .code <<<"$stderr")" escape
    run --separate-stderr ws cat k dir/canary
    assert_failure 2
    run --separate-stderr ws ls k
    assert_equal "$(jq -c '[.[].path]' <<<"$output")" '["real.txt"]'
    run --separate-stderr ws snapshot k
    assert_success
    assert_equal "$(jq -c '[.files[].path]' <<<"$output")" '["real.txt"]'
    run --separate-stderr ws rm k dir/canary
    assert_failure 2
    # The key itself a symlink: refused, the target untouched.
    ln -s "$OUT" "$RW/evil"
    run --separate-stderr ws ls evil
    assert_failure 2
    assert_equal "$(jq -r .code <<<"$stderr")" symlink
    run --separate-stderr ws rm evil
    assert_success
    [ ! -L "$RW/evil" ]
    assert_equal "$(ls -A "$OUT") $(cat "$OUT/canary")" "canary canary"
}

@test "rm: a path below the key, then the key; a key already gone is deleted" {
    put k a/b/c.txt c
    put k keep.txt k
    run --separate-stderr ws rm k a
    assert_success
    assert_equal "$output" '{"deleted":true}'
    [ ! -e "$RW/k/a" ] && [ -e "$RW/k/keep.txt" ]
    run --separate-stderr ws rm k
    assert_success
    [ ! -e "$RW/k" ]
    run --separate-stderr ws rm k
    assert_success
    assert_equal "$output" '{"deleted":true}'
}

@test "snapshots: the selected paths only, readable after the workspace is gone, by their key alone" {
    put k keep/a.txt alpha
    put k tool.sh 'echo hi' --mode 755
    put k other.txt other
    run --separate-stderr ws snapshot k keep tool.sh
    assert_success
    id=$(jq_out .id)
    assert_equal "$(jq -c '[.workspace, [.files[] | [.path, .size, .executable]]]' <<<"$output")" '["k",[["keep/a.txt",5,0],["tool.sh",7,73]]]'
    assert_equal "$(jq -r '.files[0].sha256' <<<"$output")" "$(printf alpha | sha256sum | cut -d' ' -f1)"
    run --separate-stderr ws rm k
    assert_success
    run --separate-stderr ws snapshot-cat k "$id" keep/a.txt
    assert_success
    assert_equal "$output" alpha
    run --separate-stderr ws snapshot-cat k "$id" other.txt
    assert_failure 2
    assert_equal "$(jq -r .code <<<"$stderr")" not-selected
    run --separate-stderr ws snapshot-cat other "$id" keep/a.txt
    assert_failure 2
    assert_equal "$(jq -r .message <<<"$stderr")" "Remote workspace snapshot not found"
    run --separate-stderr ws snapshot-cat k ../../etc keep/a.txt
    assert_equal "$(jq -r .message <<<"$stderr")" "Remote workspace snapshot not found"
    run --separate-stderr ws snapshot --only k
    assert_success
    assert_equal "$(jq -c .files <<<"$output")" "[]"
    # The store is an sbx-snap store: each snapshot is a version of the
    # key's ref, and no pin outlives its snapshot.
    run --separate-stderr sbx-snap log --ref "remote-$(printf k | sha256sum | cut -d' ' -f1)" --store "$DATA/remote-snapshots"
    assert_success
    assert_equal "$(wc -l <<<"$output")" 2
    assert_equal "$(ls -A "$DATA/remote-snapshots/pins")" ""
}

# obj CONTENT: where the remote snapshot store (an sbx-snap store) keeps CONTENT.
obj() {
    local hex
    hex=$(printf '%s' "$1" | sha256sum | cut -d' ' -f1)
    printf '%s/remote-snapshots/objects/%s/%s' "$DATA" "${hex:0:2}" "${hex:2}"
}

@test "collect: the newest per key stay, what only older ones named goes; a dead maker's pin goes" {
    put k f v1
    run --separate-stderr ws snapshot k
    s1=$(jq_out .id)
    put k f v2 --overwrite
    run --separate-stderr ws snapshot k
    s2=$(jq_out .id)
    put j g v1
    run --separate-stderr ws snapshot j
    j1=$(jq_out .id)
    # A pin nobody has flocked is a crashed snapshot's.
    : > "$DATA/remote-snapshots/pins/run.crashed"
    run --separate-stderr ws collect --keep 1 --grace-s 0
    assert_success
    assert_equal "$(jq -c '[.manifests]' <<<"$output")" '[1]'
    [ ! -e "$DATA/remote-snapshots/pins/run.crashed" ]
    run --separate-stderr sbx-snap log --ref "remote-$(printf k | sha256sum | cut -d' ' -f1)" --store "$DATA/remote-snapshots"
    assert_equal "$(wc -l <<<"$output")" 1
    run --separate-stderr ws snapshot-cat k "$s2" f
    assert_equal "$output" v2
    # v1 is still named by j's snapshot.
    [ -e "$(obj v1)" ]
    run --separate-stderr ws snapshot-cat j "$j1" g
    assert_equal "$output" v1
    run --separate-stderr ws snapshot-cat k "$s1" f
    assert_failure 2
    assert_equal "$(jq -r .message <<<"$stderr")" "Remote workspace snapshot not found"
    # A second pass finds nothing more to drop.
    run --separate-stderr ws collect --keep 1 --grace-s 0
    assert_success
    assert_equal "$(jq_out .manifests)" 0
}

@test "collect spares what a live snapshot pinned, until its maker lets go" {
    put k f v1
    run --separate-stderr ws snapshot k
    assert_success
    id=$(jq_out .id)
    # An object no snapshot names, written an hour ago, and a pin naming
    # it that this shell keeps flocked (a snapshot being made).
    mkdir -p "$(dirname "$(obj orphan)")"
    printf orphan > "$(obj orphan)"
    touch -d '1 hour ago' "$(obj orphan)"
    pin="$DATA/remote-snapshots/pins/run.live"
    printf 'sha256:%s\n' "$(printf orphan | sha256sum | cut -d' ' -f1)" > "$pin"
    exec {lock}<"$pin"
    flock -x "$lock"
    run --separate-stderr ws collect --keep 1 --grace-s 0
    assert_success
    assert_equal "$(jq_out .objects)" 0
    [ -e "$(obj orphan)" ]
    [ -e "$pin" ]
    exec {lock}<&-
    run --separate-stderr ws collect --keep 1 --grace-s 0
    assert_success
    assert_equal "$(jq_out .objects)" 1
    [ ! -e "$(obj orphan)" ]
    [ ! -e "$pin" ]
    # What is left: v1 and the snapshot's manifest, and it reads.
    [ -e "$(obj v1)" ]
    assert_equal "$(find "$DATA/remote-snapshots/objects" -type f | wc -l)" 2
    run --separate-stderr ws snapshot-cat k "$id" f
    assert_equal "$output" v1
}

@test "snapshot: a selection over --max-bytes (sparse files at their size) copies nothing; exit 6" {
    put k small.txt hi
    assert_success
    truncate -s 300M "$RW/k/sparse"
    run --separate-stderr ws --max-bytes 1048576 snapshot k
    assert_failure 6
    [ "$(jq -r .code <<<"$stderr")" = too-large ]
    [[ "$(jq -r .message <<<"$stderr")" == *"exceeds the workspace byte limit"* ]]
    [ -z "$(find "$DATA/remote-snapshots" -type f -size +1M 2>/dev/null)" ]
    # Under the cap the same workspace snapshots, the sparse file stored as its size.
    rm "$RW/k/sparse"
    run --separate-stderr ws --max-bytes 1048576 snapshot k
    assert_success
}

@test "put: a quota walk that cannot see the whole tree (an fd limit below a deep one) refuses the upload" {
    put k top.txt x
    assert_success
    (cd "$RW/k" && for i in $(seq 120); do mkdir d && cd d; done && head -c 4096 /dev/zero > deep.bin)
    run --separate-stderr bash -c 'ulimit -n 48; printf "%s" more | sbx-ws --data-dir "$1" put --max-bytes 100000000 -- k new.txt' _ "$DATA"
    assert_failure 6
    [ ! -e "$RW/k/new.txt" ]
    # With room for one fd per level the same upload goes in.
    put k new.txt more --max-bytes 100000000
    assert_success
}

@test "collect --keep 1 after two snapshots of one key made at once keeps the one its ref holds readable" {
    mkdir -p "$RW/k/a" "$RW/k/b"
    local i lost=0
    for i in $(seq 30); do
        echo "a$i" > "$RW/k/a/f"
        echo "b$i" > "$RW/k/b/f"
        ws snapshot k a > "$BATS_TEST_TMPDIR/sa" &
        ws snapshot k b > "$BATS_TEST_TMPDIR/sb" &
        wait
        ws collect --keep 1 --grace-s 0 > /dev/null
        # The ref's newest version is one of the two: its snapshot reads back.
        local readable=0 id
        for id in $(jq -r .id "$BATS_TEST_TMPDIR/sa" "$BATS_TEST_TMPDIR/sb"); do
            ws snapshot-cat k "$id" a/f > /dev/null 2>&1 && readable=1
            ws snapshot-cat k "$id" b/f > /dev/null 2>&1 && readable=1
        done
        [ "$readable" -eq 1 ] || lost=$((lost + 1))
    done
    echo "rounds that lost both: $lost" >&2
    [ "$lost" -eq 0 ]
}

@test "cat --fd-socket hands the open file over SCM_RIGHTS and prints its size" {
    command -v python3 > /dev/null || skip "python3 is not installed"
    put k f 'by fd'
    run python3 - "$DATA" <<'PY'
import os, socket, subprocess, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
os.dup2(b.fileno(), 3, inheritable=True)
p = subprocess.run(["sbx-ws", "--data-dir", sys.argv[1], "--fd-socket", "3", "cat", "k", "f"],
                   pass_fds=[3], capture_output=True, text=True)
msg, fds, _, _ = socket.recv_fds(a, 1, 1)
print(p.returncode, p.stdout.strip(), os.read(fds[0], 100).decode())
PY
    assert_success
    assert_equal "$output" '0 {"size":5} by fd'
}

@test "--help and --version" {
    run sbx-ws --help
    assert_success
    assert_output --partial "snapshot-cat KEY ID PATH"
    run sbx-ws --version
    assert_success
    assert_output --partial sbx-ws
}
