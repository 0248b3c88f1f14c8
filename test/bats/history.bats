#!/usr/bin/env bats
# A workspace's history (sbx's extension): versions that real runs made,
# diffs between any two (entries, sizes, bounded text diffs), restores and
# forks over HTTP and from sbx-snap and sbx-ws, each checked byte for byte
# (sha256 of every file); forks with their own uids, none a hard link into
# the store, each counted in full against the disk.

load httpd_helpers

setup() { httpd_setup; }

teardown() {
    [ -z "${LEASE_PID:-}" ] || kill "$LEASE_PID" 2>/dev/null || true
    ! mountpoint -q "$WORK/xfs" 2>/dev/null || umount "$WORK/xfs"
    [ -z "${LOOP:-}" ] || losetup -d "$LOOP" 2>/dev/null || true
    httpd_teardown
}

# tree DIR: every entry below DIR, one line each: type, path, and a file's
# sha256 and exec bit or a symlink's target.
tree() {
    (cd "$1" && find . -mindepth 1 -printf '%y %p %l\n' | LC_ALL=C sort | while read -r t p l; do
        case $t in
        f) printf 'f %s %s %s\n' "$p" "$(sha256sum < "$p" | cut -c1-64)" "$([ -x "$p" ] && echo x || echo -)" ;;
        l) printf 'l %s %s\n' "$p" "$l" ;;
        *) printf '%s %s\n' "$t" "$p" ;;
        esac
    done)
}

# execute ID CODE [EXTRA-JSON]: one signed run that must succeed.
execute() {
    signed /execute-shell "$(shell_request "$@")"
    assert_equal "$status_code $(jq_out .exitCode)" "200 0"
}

# Two versions of $PROJECT made by runs: V1 then V2 (and tree files of each).
two_versions() {
    execute v1 'mkdir -p src docs/old && printf "one\ntwo\nthree\n" > src/a.txt && head -c 3000 /dev/urandom > blob.bin &&
        printf "#!/bin/sh\necho hi\n" > run.sh && chmod 755 run.sh && ln -s src/a.txt link && echo gone > docs/old/x.md &&
        echo kept > docs/k.md && mkdir turns && echo f > turns/f'
    tree "$PROJECT" > "$WORK/v1.tree"
    execute v2 'printf "one\nTWO\nthree\nfour\n" > src/a.txt && rm -r docs/old && head -c 5000 /dev/urandom > blob.bin &&
        chmod 644 run.sh && rm link && echo new > src/b.txt && rm -r turns && echo file > turns'
    tree "$PROJECT" > "$WORK/v2.tree"
    api GET "/workspace-versions?workspaceRoot=$PROJECT"
    assert_equal "$status_code $(jq_out '.versions | length')" "200 2"
    V1=$(jq_out '.versions[0].digest')
    V2=$(jq_out '.versions[1].digest')
    [ "$(jq_out .latest)" = "$V2" ]
}

@test "versions are the runs' snapshots; a diff lists every change with types and sizes, text diffs on request" {
    two_versions
    api GET "/workspace-versions/diff?workspaceRoot=$PROJECT&from=latest~1&to=latest&text=1"
    assert_equal "$status_code $(jq_out .from) $(jq_out .to)" "200 $V1 $V2"
    change() { jq_out ".changes[] | select(.path == \"$1\") | $2"; }
    [ "$(change src/a.txt .change)" = modified ]
    [ "$(change src/a.txt '"\(.previousSize) \(.size)"')" = "14 19" ]
    [[ "$(change src/a.txt .text)" == *$'\n-two\n+TWO'* ]]
    [[ "$(change src/a.txt .text)" == *$'\n+four'* ]]
    [ "$(change blob.bin '"\(.previousSize) \(.size) \(.textOmitted)"')" = "3000 5000 binary" ]
    [ "$(change run.sh '"\(.change) \(.previousExec) \(.exec)"')" = "modified true false" ]
    [ "$(change link '"\(.change) \(.previousType) \(.previousTarget)"')" = "deleted symlink src/a.txt" ]
    [ "$(change src/b.txt '"\(.change) \(.type) \(.size)"')" = "created file 4" ]
    [ "$(change docs/old/x.md .change)" = deleted ]
    [ "$(change docs/old '"\(.change) \(.previousType)"')" = "deleted dir" ]
    [ "$(change turns '"\(.change) \(.previousType) \(.type)"')" = "type-changed dir file" ]
    [ "$(change docs/k.md .change)" = "" ]
    # The sizes are the files' own.
    [ "$(change blob.bin .size)" = "$(stat -c %s "$PROJECT/blob.bin")" ]
    # Bounded: one text diff at most, then none for want of bytes.
    api GET "/workspace-versions/diff?workspaceRoot=$PROJECT&from=$V1&to=$V2&text=1&maxTextFiles=1"
    [ "$(jq_out '[.changes[] | select(.text)] | length') $(jq_out .text.truncated)" = "1 true" ]
    [ "$(jq_out '[.changes[] | select(.textOmitted == "files")] | length')" -ge 2 ]
    api GET "/workspace-versions/diff?workspaceRoot=$PROJECT&from=$V1&to=$V2&text=1&maxTextBytes=10"
    [ "$(jq_out '[.changes[] | select(.text)] | length') $(jq_out .text.bytes)" = "0 0" ]
    api GET "/workspace-versions/diff?workspaceRoot=$PROJECT&from=$V1&to=$V2&text=1&maxTextFiles=1001"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == *maxTextFiles* ]]
    # No text unless asked.
    api GET "/workspace-versions/diff?workspaceRoot=$PROJECT&from=$V1&to=$V2"
    [ "$(jq_out '[.changes[] | select(.text)] | length')" = 0 ]
    [ "$(jq_out '.created | join(" ")')" = src/b.txt ]
}

@test "restore resets the workspace byte for byte under its lease, and the reset is a new version" {
    two_versions
    api POST /workspace-versions/restore --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"version\":\"latest~1\"}"
    assert_equal "$status_code $(jq_out .digest) $(jq_out .previous) $(jq_out .changed)" "200 $V1 $V2 true"
    diff "$WORK/v1.tree" <(tree "$PROJECT")
    api GET "/workspace-versions?workspaceRoot=$PROJECT"
    [ "$(jq_out '[.versions[].digest] | join(" ")')" = "$V1 $V2 $V1" ]
    # A run sees the restored tree and makes the next version.
    execute v3 'cat src/a.txt; test ! -e src/b.txt && test -d turns && test -L link && test -x run.sh && echo ok'
    [[ "$(jq_out .stdout)" == *ok* ]]
    # And back, by digest: the second version byte for byte.
    api POST /workspace-versions/restore --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"version\":\"$V2\"}"
    assert_equal "$status_code $(jq_out .digest)" "200 $V2"
    diff "$WORK/v2.tree" <(tree "$PROJECT")
    # Restored files belong to the workspace's owner, as the run's files do.
    [ "$(stat -c %u "$PROJECT/src/b.txt")" = "$(stat -c %u "$PROJECT")" ]
    # Restoring the version it already is changes nothing.
    api POST /workspace-versions/restore --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"version\":\"latest\"}"
    assert_equal "$status_code $(jq_out .changed)" "200 false"
}

@test "a version is only ever one of this workspace's own; bad requests name the field" {
    two_versions
    other="$WORK/data/projects/p2"
    mkdir -m 777 "$other"
    signed /execute-shell "$(jq -c --arg ws "$other" '.workspaceRoot = $ws' <<<"$(shell_request o1 'echo other > o')")"
    api POST /workspace-versions/restore --data-binary "{\"workspaceRoot\":\"$other\",\"version\":\"$V1\"}"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == "Unknown workspace version"* ]]
    [ "$(cat "$other/o")" = other ]
    api POST /workspace-versions/restore --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"version\":\"latest~9\"}"
    assert_equal "$status_code" 400
    api POST /workspace-versions/restore --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"version\":\"--store\"}"
    assert_equal "$status_code" 400
    api POST /workspace-versions/restore --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"workspace\":\"k\",\"version\":\"latest\"}"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == *workspaceRoot* ]]
    api GET "/workspace-versions?workspaceRoot=$WORK/outside"
    assert_equal "$status_code" 400
    api POST /workspace-versions/fork --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"count\":65}"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == count* ]]
    # More names than a fork takes: refused, and the server still answers.
    api POST /workspace-versions/fork --data-binary "$(jq -cn --arg ws "$PROJECT" '{workspaceRoot: $ws, names: [range(200) | "n\(.)"]}')"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == names* ]]
    api GET "/workspace-versions?workspaceRoot=$PROJECT"
    assert_equal "$status_code" 200
    api POST /workspace-versions/fork --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"names\":[\"../x\"]}"
    assert_equal "$status_code" 400
    api POST /workspace-versions/fork --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"names\":[\"p2\"]}"
    assert_equal "$status_code" 409
    [ "$(ls "$WORK/data/projects" | LC_ALL=C sort | tr '\n' ' ')" = "p1 p2 " ]
    diff "$WORK/v2.tree" <(tree "$PROJECT")
}

@test "16 forks at once: each the version byte for byte, its own uid and inodes, and each counted in full" {
    two_versions
    api POST /workspace-versions/fork --data-binary "{\"workspaceRoot\":\"$PROJECT\",\"version\":\"$V1\",\"count\":16}"
    assert_equal "$status_code $(jq_out '.forks | length') $(jq_out .digest)" "201 16 $V1"
    mapfile -t roots < <(jq_out '.forks[].workspaceRoot')
    mapfile -t uids < <(jq_out '.forks[].uid')
    [ "$(jq_out .totalChargedBytes)" = $(( 16 * $(jq_out .chargedBytes) )) ]
    # Every object of the store, by inode: no fork's file may be one.
    store_inodes=$(find "$WORK/data/versioning/objects" -type f -printf '%i\n' | sort -u)
    declare -A seen_inode=()
    for i in "${!roots[@]}"; do
        diff "$WORK/v1.tree" <(tree "${roots[$i]}")
        [ "$(stat -c %u "${roots[$i]}")" = "${uids[$i]}" ]
        while read -r links inode; do
            [ "$links" = 1 ] || fail "a fork's file has $links links"
            [ -z "${seen_inode[$inode]:-}" ] || fail "two forks share inode $inode"
            seen_inode[$inode]=1
            ! grep -qx "$inode" <<<"$store_inodes" || fail "a fork's file is a store object"
        done < <(find "${roots[$i]}" -type f -printf '%n %i\n')
    done
    if [ "$(id -u)" -eq 0 ]; then
        # Sixteen uids, none the source's.
        [ "$(printf '%s\n' "${uids[@]}" "$(stat -c %u "$PROJECT")" | sort -u | wc -l)" = 17 ]
        [ -z "$(find "${roots[0]}" ! -uid "${uids[0]}")" ]
    else
        [ "$(printf '%s\n' "${uids[@]}" | sort -u)" = "$(id -u)" ]
    fi
    # The quota walk charges each fork in full: sixteen times the version.
    one=$(sbx-quota usage "${roots[0]}" | jq .chargedBytes)
    total=0
    for r in "${roots[@]}"; do total=$(( total + $(sbx-quota usage "$r" | jq .chargedBytes) )); done
    [ "$one" -gt 8000 ] && [ "$total" = $(( 16 * one )) ]
    [ "$(sbx-quota usage "${roots[0]}" | jq .bytes)" = "$(jq_out .bytes)" ]
    # Each fork's history starts with the version it was made from.
    api GET "/workspace-versions?workspaceRoot=${roots[5]}"
    [ "$(jq_out '[.versions[].digest] | join(" ")')" = "$V1" ]
    # A run in a fork runs as the fork's uid, and changes only the fork.
    signed /execute-shell "$(jq -c --arg ws "${roots[3]}" '.workspaceRoot = $ws' <<<"$(shell_request f3 'id -u; echo mine > mine.txt')")"
    assert_equal "$status_code $(jq_out .exitCode)" "200 0"
    [ "$(jq_out .stdout | head -1)" = "${uids[3]}" ]
    [ -f "${roots[3]}/mine.txt" ] && [ ! -e "${roots[4]}/mine.txt" ] && [ ! -e "$PROJECT/mine.txt" ]
}

@test "remote keys: versions, diff, restore and a fork of a fork over HTTP and from sbx-ws" {
    execute k1 'mkdir d && echo one > d/a && printf "x\n" > t.txt' '{"runnerWorkspaceKey": "team/src"}'
    execute k2 'echo two > d/a && rm t.txt && echo b > b' '{"runnerWorkspaceKey": "team/src"}'
    src="$WORK/data/remote-workspaces/team/src"
    tree "$src" > "$WORK/k2.tree"
    api GET "/workspace-versions?workspace=team/src"
    assert_equal "$status_code $(jq_out '.versions | length') $(jq_out .workspace)" "200 2 team/src"
    api GET "/workspace-versions/diff?workspace=team/src&from=latest~1&text=true"
    [ "$(jq_out '[.changes[] | "\(.path):\(.change)"] | join(" ")')" = "b:created d/a:modified t.txt:deleted" ]
    [[ "$(jq_out '.changes[] | select(.path == "d/a") | .text')" == *$'-one\n+two'* ]]
    api POST /workspace-versions/fork --data-binary '{"workspace":"team/src","names":["team/f1"]}'
    assert_equal "$status_code $(jq_out '.forks[0].workspace')" "201 team/f1"
    u1=$(jq_out '.forks[0].uid')
    diff "$WORK/k2.tree" <(tree "$WORK/data/remote-workspaces/team/f1")
    # A fork of the fork, from sbx-ws: the same content, a uid of its own.
    run --separate-stderr sbx-ws --data-dir "$WORK/data" fork team/f1 latest team/f2
    assert_success
    u2=$(jq_out '.forks[0].uid')
    diff "$WORK/k2.tree" <(tree "$WORK/data/remote-workspaces/team/f2")
    if [ "$(id -u)" -eq 0 ]; then [ "$u1" != "$u2" ] && [ "$u2" = "$(stat -c %u "$WORK/data/remote-workspaces/team/f2")" ]; fi
    execute k3 'id -u; cat d/a' '{"runnerWorkspaceKey": "team/f2"}'
    [ "$(jq_out .stdout)" = "$u2"$'\n'two ]
    # A key that exists is a conflict and nothing is made; generated names.
    api POST /workspace-versions/fork --data-binary '{"workspace":"team/src","names":["team/f1"]}'
    assert_equal "$status_code" 409
    api POST /workspace-versions/fork --data-binary '{"workspace":"team/src","count":2,"version":"latest~1"}'
    assert_equal "$status_code" 201
    [[ "$(jq_out '.forks[1].workspace')" =~ ^team/src-fork-[0-9a-f]{8}$ ]]
    # Restore by key, from sbx-ws: the first version, a new version.
    run --separate-stderr sbx-ws --data-dir "$WORK/data" restore team/src latest~1
    assert_success
    [ "$(cat "$src/d/a") $(cat "$src/t.txt")" = "one x" ] && [ ! -e "$src/b" ]
    api POST /workspace-versions/restore --data-binary '{"workspace":"team/src","version":"latest~1"}'
    assert_equal "$status_code" 200
    diff "$WORK/k2.tree" <(tree "$src")
    # A key removed and made again starts with no history.
    api DELETE "/remote-workspace?workspace=team/src"
    api GET "/remote-workspace/files?workspace=team/src"
    api GET "/workspace-versions?workspace=team/src"
    assert_equal "$status_code $(jq_out '.versions | length')" "200 0"
}

@test "sbx-snap: restore waits a bounded time for a run's lease; a fork that would not fit the disk leaves nothing" {
    two_versions
    state="$WORK/data/runner-executions/runs"
    lock="$state/locks/ws-$(stat -c %d "$PROJECT")-$(stat -c %i "$PROJECT").lock"
    rm -f "$WORK/held" && mkfifo "$WORK/held"
    flock --no-fork "$lock" sh -c 'echo held > "$1"; exec sleep 60' sh "$WORK/held" &
    LEASE_PID=$!
    await_fifo "$WORK/held"
    run --separate-stderr sbx-snap restore latest~1 --workspace "$PROJECT" --store "$WORK/data/versioning" \
        --state-dir "$state" --lease-wait-ms 200
    assert_failure 2
    [[ "$stderr" == *'"code":"busy"'* ]]
    diff "$WORK/v2.tree" <(tree "$PROJECT")
    kill "$LEASE_PID"
    # The disk: a 1 MiB tmpfs in a mount namespace of our own holds four
    # forks of a 150 KB tree, not sixteen (each counts in full).
    ns=(unshare -rm)
    [ "$(id -u)" -ne 0 ] || ns=(unshare -m)
    "${ns[@]}" true 2>/dev/null || skip "no mount namespace of our own here"
    mkdir "$WORK/small" "$WORK/w150"
    head -c 150000 /dev/urandom > "$WORK/w150/blob"
    sbx-snap commit "$WORK/w150" --store "$WORK/st" --ref "ws-$(stat -c %d "$WORK/w150")-$(stat -c %i "$WORK/w150")" > /dev/null
    forks_in_tmpfs() {
        "${ns[@]}" sh -c 'mount -t tmpfs -o size=1m tmpfs "$1" || exit 99
            dir=$1 n=$2; shift 2
            for i in $(seq 1 "$n"); do set -- "$@" --into "$dir/f$i"; done
            sbx-snap fork latest "$@"; echo "rc=$? left=$(ls -A "$dir" | wc -l)"' sh "$WORK/small" "$1" \
            --workspace "$WORK/w150" --store "$WORK/st" --state-dir "$WORK/state"
    }
    run --separate-stderr forks_in_tmpfs 16
    [[ "$stderr" == *'"code":"disk-full"'* ]]
    [ "$(printf '%s\n' "$output" | tail -1)" = "rc=6 left=0" ]
    # Four fit (as root: the forks' files are made as their uids, which a
    # namespace of an unprivileged user cannot map).
    [ "$(id -u)" -eq 0 ] || return 0
    run --separate-stderr forks_in_tmpfs 4
    [ "$(printf '%s\n' "$output" | tail -1)" = "rc=0 left=4" ]
    [ "$(printf '%s\n' "$output" | head -n -1 | jq .totalChargedBytes)" -ge 600000 ]
}

@test "a store object that no longer matches its digest fails a fork (exit 9) and leaves no fork behind" {
    mkdir "$WORK/w"
    echo hello > "$WORK/w/a"
    echo other > "$WORK/w/b"
    sbx-snap commit "$WORK/w" --store "$WORK/st" --ref "ws-$(stat -c %d "$WORK/w")-$(stat -c %i "$WORK/w")" > /dev/null
    hex=$(echo hello | sha256sum | cut -c1-64)
    chmod u+w "$WORK/st/objects/${hex:0:2}/${hex:2}"
    echo HELLO > "$WORK/st/objects/${hex:0:2}/${hex:2}"
    run --separate-stderr sbx-snap fork latest --workspace "$WORK/w" --store "$WORK/st" --into "$WORK/f1" --into "$WORK/f2"
    assert_failure 9
    [[ "$stderr" == *'"code":"corrupt-object"'* ]]
    [ ! -e "$WORK/f1" ] && [ ! -e "$WORK/f2" ]
    [ "$(ls "$WORK/st/refs" | grep -c '^ws-.*[0-9]$')" = 1 ]
}

@test "on a filesystem with reflinks a fork shares its files' extents (XFS loop image, as root)" {
    [ "$(id -u)" -eq 0 ] || skip "a loop mount needs root"
    command -v mkfs.xfs > /dev/null || skip "no mkfs.xfs (xfsprogs)"
    truncate -s 320M "$WORK/xfs.img"
    mkfs.xfs -q -m reflink=1 "$WORK/xfs.img"
    LOOP=$(losetup -f --show "$WORK/xfs.img") || skip "no loop device here"
    mkdir "$WORK/xfs"
    mount "$LOOP" "$WORK/xfs"
    mkdir "$WORK/xfs/ws"
    head -c 4000000 /dev/urandom > "$WORK/xfs/ws/big"
    sbx-snap commit "$WORK/xfs/ws" --store "$WORK/xfs/st" --ref "ws-$(stat -c %d "$WORK/xfs/ws")-$(stat -c %i "$WORK/xfs/ws")" > /dev/null
    run --separate-stderr env SBX_DATA_DIR="$WORK/xfs/data" sbx-snap fork latest --workspace "$WORK/xfs/ws" \
        --store "$WORK/xfs/st" --into "$WORK/xfs/f1" --into "$WORK/xfs/f2"
    assert_success
    [ "$(jq_out .method) $(jq_out .made.cloned)" = "clone 2" ]
    cmp "$WORK/xfs/ws/big" "$WORK/xfs/f2/big"
    filefrag -v "$WORK/xfs/f1/big" | grep -q shared
    # Shared, yet its own: a write to one fork changes neither the other nor the store.
    printf 'x' | dd of="$WORK/xfs/f1/big" bs=1 seek=100 conv=notrunc status=none
    cmp "$WORK/xfs/ws/big" "$WORK/xfs/f2/big"
    ! cmp -s "$WORK/xfs/ws/big" "$WORK/xfs/f1/big"
    run --separate-stderr sbx-snap restore "$(sbx-snap versions --workspace "$WORK/xfs/ws" --store "$WORK/xfs/st" | jq -r .latest)" \
        "$WORK/xfs/r" --store "$WORK/xfs/st"
    assert_success
    cmp "$WORK/xfs/ws/big" "$WORK/xfs/r/big"
}

@test "text diffs share one deadline (--max-text-ms): none starts once it has passed, each change says so" {
    mkdir "$WORK/w"
    ref="ws-$(stat -c %d "$WORK/w")-$(stat -c %i "$WORK/w")"
    for i in 1 2 3; do printf 'one\ntwo\n' > "$WORK/w/t$i.txt"; done
    sbx-snap commit "$WORK/w" --store "$WORK/st" --ref "$ref" > /dev/null
    for i in 1 2 3; do printf 'one\nTWO\n' > "$WORK/w/t$i.txt"; done
    sbx-snap commit "$WORK/w" --store "$WORK/st" --ref "$ref" > /dev/null
    run --separate-stderr sbx-snap diff latest~1 latest --workspace "$WORK/w" --store "$WORK/st" --text
    assert_success
    [ "$(jq -r '[.changes[] | has("text")] | all' <<<"$output")" = true ]
    run --separate-stderr sbx-snap diff latest~1 latest --workspace "$WORK/w" --store "$WORK/st" --text --max-text-ms 0
    assert_success
    [ "$(jq -r '[.changes[].textOmitted] | join(" ")' <<<"$output")" = "deadline deadline deadline" ]
    [ "$(jq -r '"\(.text.files) \(.text.truncated)"' <<<"$output")" = "0 true" ]
    run --separate-stderr sbx-snap diff latest~1 latest --workspace "$WORK/w" --store "$WORK/st" --text --max-text-ms 600001
    assert_failure 2
}

@test "a text diff's labels quote a file name with a newline: the name adds no line to the diff" {
    mkdir "$WORK/w"
    ref="ws-$(stat -c %d "$WORK/w")-$(stat -c %i "$WORK/w")"
    name=$'x\n+++ bashrc\n@@ -0,0 +1 @@\n+pwned'
    printf 'one\n' > "$WORK/w/$name"
    sbx-snap commit "$WORK/w" --store "$WORK/st" --ref "$ref" > /dev/null
    printf 'two\n' > "$WORK/w/$name"
    sbx-snap commit "$WORK/w" --store "$WORK/st" --ref "$ref" > /dev/null
    run --separate-stderr sbx-snap diff latest~1 latest --workspace "$WORK/w" --store "$WORK/st" --text
    assert_success
    expected='--- "a/x\n+++ bashrc\n@@ -0,0 +1 @@\n+pwned"
+++ "b/x\n+++ bashrc\n@@ -0,0 +1 @@\n+pwned"
@@ -1 +1 @@
-one
+two'
    [ "$(jq -r '.changes[0].text' <<<"$output")" = "$expected" ]
}
