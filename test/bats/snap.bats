#!/usr/bin/env bats
# sbx-snap: receipts, the stat cache, what a snapshot reflects (deletions,
# same-size same-mtime rewrites, exec bits, symlinks), verified restore,
# atomic refs under concurrent readers, the manifest's cap, and gc: the
# retention of versions, pins, and what a collection spares.

load helpers

setup() {
    WS="$BATS_TEST_TMPDIR/ws"
    STORE="$BATS_TEST_TMPDIR/store"
    mkdir -p "$WS/dir"
    printf 'alpha\n' > "$WS/a.txt"
    printf '#!/bin/sh\necho run\n' > "$WS/dir/run.sh"
    chmod 755 "$WS/dir/run.sh"
    ln -s a.txt "$WS/link"
}

teardown() {
    ! mountpoint -q "$BATS_TEST_TMPDIR/coarse" 2>/dev/null || umount "$BATS_TEST_TMPDIR/coarse"
}

commit() {
    run --separate-stderr sbx-snap commit "$WS" --store "$STORE" "$@"
    assert_success
}

@test "commit prints a receipt that maps onto the runner's workspaceSnapshot" {
    commit --ref main
    [[ "$(jq_out .digest)" =~ ^sha256:[0-9a-f]{64}$ ]]
    [ "$(jq_out .files)" = 2 ]
    [ "$(jq_out .bytes)" = $(( $(stat -c %s "$WS/a.txt") + $(stat -c %s "$WS/dir/run.sh") )) ]
    [ "$(jq_out .mediaType)" = application/vnd.sbx.tree.v1+json ]
    [ "$(jq_out .pool)" = agent-state ]
    [ "$(jq_out .ref)" = main ]
    [ "$(cat "$STORE/refs/main")" = "$(jq_out .digest)" ]
    # The manifest is an object of the store, named by its own digest.
    hex=$(jq_out .digest | cut -c8-)
    [ "$(sha256sum "$STORE/objects/${hex:0:2}/${hex:2}" | cut -d' ' -f1)" = "$hex" ]
    [ "$(stat -c %s "$STORE/objects/${hex:0:2}/${hex:2}")" = "$(jq_out .size)" ]
}

@test "an unchanged workspace gives the same digest and hashes nothing again" {
    commit
    first=$(jq_out .digest)
    [ "$(jq_out .hashedFiles)" = 2 ]
    commit
    [ "$(jq_out .digest)" = "$first" ]
    [ "$(jq_out .hashedFiles)" = 0 ]
}

@test "deletions, same-size same-mtime rewrites, exec bits and symlinks are all reflected" {
    commit --ref main
    base=$(jq_out .digest)
    # Same size, same mtime: only ctime and content tell.
    mtime=$(stat -c %y "$WS/a.txt")
    printf 'ALPHA\n' > "$WS/a.txt"
    touch -d "$mtime" "$WS/a.txt"
    chmod 644 "$WS/dir/run.sh"
    rm "$WS/link"
    ln -s dir "$WS/link2"
    printf 'new\n' > "$WS/new.txt"
    commit --ref main
    run sbx-snap diff "$base" main --store "$STORE"
    assert_success
    [ "$(jq_out '.created | join(",")')" = link2,new.txt ]
    [ "$(jq_out '.modified | join(",")')" = a.txt,dir/run.sh ]
    [ "$(jq_out '.deleted | join(",")')" = link ]
}

@test "the stat cache reuses the manifest only when every entry is unchanged, and a damaged cache costs a rehash" {
    commit
    base=$(jq_out .digest)
    # A directory or a symlink changes the manifest without any file changing.
    mkdir "$WS/empty"
    commit
    with_dir=$(jq_out .digest)
    [ "$with_dir" != "$base" ]
    [ "$(jq_out .hashedFiles)" = 0 ]
    rmdir "$WS/empty"
    commit
    [ "$(jq_out .digest)" = "$base" ]
    rm "$WS/link"
    ln -s dir "$WS/link"
    commit
    retargeted=$(jq_out .digest)
    [ "$retargeted" != "$base" ]
    # Each digest is the manifest a cold commit (no cache) computes.
    rm -f "$STORE"/statcache/*
    commit
    [ "$(jq_out .digest)" = "$retargeted" ]
    [ "$(jq_out .hashedFiles)" = 2 ]
    # Truncated, emptied or foreign: never trusted, the digest still right.
    for damage in flip truncate empty garbage; do
        cache=$(ls "$STORE"/statcache/*.bin)
        case $damage in
            # One byte of the last record's digest: its stat facts still match.
            flip) python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[-40] ^= 1; open(sys.argv[1], "wb").write(b)' "$cache" ;;
            truncate) truncate -s 100 "$cache" ;;
            empty) : > "$cache" ;;
            garbage) head -c 4096 /dev/urandom > "$cache" ;;
        esac
        commit
        [ "$(jq_out .digest)" = "$retargeted" ]
        [ "$(jq_out .hashedFiles)" = 2 ] || fail "$damage: a damaged cache vouched for $((2 - $(jq_out .hashedFiles))) file(s)"
    done
}

@test "on a filesystem with one-second timestamps, a same-size rewrite within the second is not hidden by the stat cache" {
    [ "$(id -u)" = 0 ] || skip "needs root to mount a loop filesystem"
    truncate -s 32M "$BATS_TEST_TMPDIR/coarse.img"
    mkfs.ext4 -q -I 128 -F "$BATS_TEST_TMPDIR/coarse.img" 2>/dev/null || skip "no mkfs.ext4"
    mkdir "$BATS_TEST_TMPDIR/coarse"
    mount -o loop "$BATS_TEST_TMPDIR/coarse.img" "$BATS_TEST_TMPDIR/coarse" 2>/dev/null || skip "no loop mount here"
    WS="$BATS_TEST_TMPDIR/coarse/ws" STORE="$BATS_TEST_TMPDIR/coarse/store"
    mkdir "$WS"
    for i in 1 2 3; do
        printf 'AAAA' > "$WS/f"
        commit
        first=$(jq_out .digest)
        printf 'BBBB' > "$WS/f"  # the same size, most likely within the same second
        commit
        second=$(jq_out .digest)
        rm -f "$STORE"/statcache/*
        commit
        cold=$(jq_out .digest)
        [ "$second" = "$cold" ] && [ "$first" != "$second" ] || fail "round $i: $first $second $cold"
    done
}

@test "restore round-trips bytes, exec bits, empty dirs and symlinks, and refuses a non-empty target" {
    mkdir "$WS/empty"
    head -c 300000 /dev/urandom > "$WS/dir/blob.bin"
    commit --ref main
    run sbx-snap restore main "$BATS_TEST_TMPDIR/out" --store "$STORE"
    assert_success
    diff -r --no-dereference "$WS" "$BATS_TEST_TMPDIR/out"
    [ -x "$BATS_TEST_TMPDIR/out/dir/run.sh" ]
    [ ! -x "$BATS_TEST_TMPDIR/out/a.txt" ]
    [ "$(readlink "$BATS_TEST_TMPDIR/out/link")" = a.txt ]
    [ -d "$BATS_TEST_TMPDIR/out/empty" ]
    run --separate-stderr sbx-snap restore main "$BATS_TEST_TMPDIR/out" --store "$STORE"
    assert_failure 2
    [[ "$stderr" == *"absent or empty directory"* ]]
}

@test "restore verifies contents: a corrupted object is an integrity failure" {
    commit --ref main
    digest=$(jq -r '.entries[] | select(.path == "a.txt") | .digest' \
        "$STORE/objects/$(jq_out .digest | cut -c8-9)/$(jq_out .digest | cut -c10-)")
    hex=${digest#sha256:}
    chmod u+w "$STORE/objects/${hex:0:2}/${hex:2}"
    printf 'tampered\n' > "$STORE/objects/${hex:0:2}/${hex:2}"
    run --separate-stderr sbx-snap restore main "$BATS_TEST_TMPDIR/out" --store "$STORE"
    assert_failure 9
    [[ "$stderr" == *"content does not match its digest"* ]]
}

@test "log lists every ref update, oldest first" {
    commit --ref main
    d1=$(jq_out .digest)
    echo more >> "$WS/a.txt"
    commit --ref main
    d2=$(jq_out .digest)
    run sbx-snap log --ref main --store "$STORE"
    assert_success
    [ "$(jq -r .digest <<<"$output" | tr '\n' ' ')" = "$d1 $d2 " ]
}

@test "a reader during concurrent ref updates sees the old or the new digest, never a torn file" {
    commit --ref main
    WS2="$BATS_TEST_TMPDIR/ws2"
    mkdir "$WS2" && echo other > "$WS2/x"
    sbx-snap commit "$WS2" --store "$STORE" --ref other >/dev/null
    valid="$(cat "$STORE/refs/main") $(cat "$STORE/refs/other")"
    ( for i in $(seq 1 30); do
        sbx-snap commit "$WS" --store "$STORE" --ref main >/dev/null
        sbx-snap commit "$WS2" --store "$STORE" --ref main >/dev/null
      done; touch "$BATS_TEST_TMPDIR/writer-done" ) &
    reads=0
    while [ ! -e "$BATS_TEST_TMPDIR/writer-done" ]; do
        got=$(cat "$STORE/refs/main")
        [[ " $valid " == *" $got "* ]] || fail "torn or unknown ref content: '$got'"
        reads=$((reads + 1))
    done
    wait
    [ "$reads" -gt 0 ]
}

# objects STORE: how many objects the store holds.
objects() {
    find "$1/objects" -type f | wc -l
}

# obj DIGEST: its path in the store.
obj() {
    local hex=${1#sha256:}
    printf '%s/objects/%s/%s' "$STORE" "${hex:0:2}" "${hex:2}"
}

@test "gc drops what no ref reaches and keeps what one does" {
    commit --ref main
    echo changed > "$WS/a.txt"
    commit
    loose=$(jq_out .digest)
    # Younger than --min-age-s (60 s by default): spared this time.
    run sbx-snap gc --store "$STORE"
    assert_success
    [ "$(jq_out .removed)" = 0 ]
    [ -e "$(obj "$loose")" ]
    run sbx-snap gc --store "$STORE" --min-age-s 0
    assert_success
    [ "$(jq_out .removed)" -ge 2 ]   # the loose manifest and its new a.txt
    [ "$(jq -c . "$STORE/gc.json")" = "$(jq_out -c .)" ]
    run --separate-stderr sbx-snap restore "$loose" "$BATS_TEST_TMPDIR/gone" --store "$STORE"
    assert_failure
    run sbx-snap restore main "$BATS_TEST_TMPDIR/kept" --store "$STORE"
    assert_success
    [ "$(cat "$BATS_TEST_TMPDIR/kept/a.txt")" = alpha ]
}

@test "retention: gc keeps the last --keep versions of a ref, their objects, and drops the rest" {
    local -a ver
    local v
    for v in 1 2 3 4 5; do   # not i: bats' run sets it
        echo "version $v" > "$WS/a.txt"
        commit --ref main
        ver[$v]=$(jq_out .digest)
    done
    run sbx-snap gc --store "$STORE" --keep 2 --min-age-s 0
    assert_success
    [ "$(jq_out .versionsDropped)" = 3 ]
    run sbx-snap log --ref main --store "$STORE"
    [ "$(jq -r .digest <<<"$output" | tr '\n' ' ')" = "${ver[4]} ${ver[5]} " ]
    for v in 1 2 3; do [ ! -e "$(obj "${ver[$v]}")" ]; done
    for v in 4 5; do
        run sbx-snap restore "${ver[$v]}" "$BATS_TEST_TMPDIR/r$v" --store "$STORE"
        assert_success
        [ "$(cat "$BATS_TEST_TMPDIR/r$v/a.txt")" = "version $v" ]
    done
    # Nothing more to drop: a second pass changes nothing.
    run sbx-snap gc --store "$STORE" --keep 2 --min-age-s 0
    [ "$(jq_out .versionsDropped)" = 0 ]
    [ "$(jq_out .removed)" = 0 ]
    # --keep 0 keeps every version.
    echo "version 6" > "$WS/a.txt"
    commit --ref main
    run sbx-snap gc --store "$STORE" --keep 0 --min-age-s 0
    [ "$(jq_out .versionsDropped)" = 0 ]
    [ "$(sbx-snap log --ref main --store "$STORE" | wc -l)" = 3 ]
}

@test "an unchanged tree stores no new manifest and logs no new version, even without the stat cache" {
    commit --ref main
    [ "$(jq_out .manifestStored)" = true ]
    first=$(jq_out .digest)
    before=$(objects "$STORE")
    rm -f "$STORE"/statcache/*   # the manifest is built again: same bytes, same object
    commit --ref main
    [ "$(jq_out .digest)" = "$first" ]
    [ "$(jq_out .manifestStored)" = false ]
    [ "$(objects "$STORE")" = "$before" ]
    [ "$(sbx-snap log --ref main --store "$STORE" | wc -l)" = 1 ]
    [ -z "$(ls "$STORE/tmp")" ]
}

@test "a manifest over --max-manifest-bytes is refused as resource-exhausted and the ref stays" {
    commit --ref main
    first=$(jq_out .digest)
    long=$(printf 'x%.0s' $(seq 1 1000))
    for i in $(seq 1 20); do ln -s "$long" "$WS/l$i"; done
    run --separate-stderr sbx-snap commit "$WS" --store "$STORE" --ref main --max-manifest-bytes 16384
    assert_failure 6
    [[ "$stderr" == *manifest-too-large* && "$stderr" == *"16384 bytes"* && "$stderr" == *--max-manifest-bytes* ]]
    [ "$(cat "$STORE/refs/main")" = "$first" ]
    [ "$(sbx-snap log --ref main --store "$STORE" | wc -l)" = 1 ]
    [ -z "$(ls "$STORE/tmp")" ]
    commit --ref main --max-manifest-bytes 65536
    [ "$(jq_out .size)" -gt 16384 ]
    run --separate-stderr sbx-snap commit "$WS" --store "$STORE" --max-manifest-bytes 100
    assert_failure 2
    [[ "$stderr" == *"--max-manifest-bytes"* ]]
}

@test "gc spares what a live run pins and what was reused after it began; a dead run's pins go" {
    commit --ref main
    mkdir "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/s"
    echo pinned > "$BATS_TEST_TMPDIR/p/f"; echo stale > "$BATS_TEST_TMPDIR/s/f"
    pinned=$(sbx-snap commit "$BATS_TEST_TMPDIR/p" --store "$STORE" | jq -r .digest)
    stale=$(sbx-snap commit "$BATS_TEST_TMPDIR/s" --store "$STORE" | jq -r .digest)
    # A run's pin file: it holds the flock while it lives.
    printf '%s\n' "$pinned" > "$STORE/pins/run.live"
    printf '%s\n' "$stale" > "$STORE/pins/run.dead"
    exec 8<"$STORE/pins/run.live"
    flock -x 8
    run sbx-snap gc --store "$STORE" --min-age-s 0
    exec 8<&-
    assert_success
    [ "$(jq_out .pinnedRuns)" = 1 ]
    [ -e "$(obj "$pinned")" ] && [ ! -e "$(obj "$stale")" ]
    [ -e "$STORE/pins/run.live" ] && [ ! -e "$STORE/pins/run.dead" ]
    # Reused by a commit (stored again): its mtime is now, so a collection
    # that began before spares it; an old one nothing reaches goes.
    run sbx-snap gc --store "$STORE" --min-age-s 0
    [ ! -e "$(obj "$pinned")" ] && [ ! -e "$STORE/pins/run.live" ]
    mkdir "$BATS_TEST_TMPDIR/a" && echo alpha2 > "$BATS_TEST_TMPDIR/a/f"
    reused=$(sbx-snap commit "$BATS_TEST_TMPDIR/a" --store "$STORE" | jq -r .digest)
    touch -d '2 hours ago' "$(obj "$reused")"
    sbx-snap commit "$BATS_TEST_TMPDIR/a" --store "$STORE" >/dev/null
    [ "$(( $(date +%s) - $(stat -c %Y "$(obj "$reused")") ))" -lt 600 ]
    run sbx-snap gc --store "$STORE" --min-age-s 3600
    [ -e "$(obj "$reused")" ]
    touch -d '2 hours ago' "$(obj "$reused")"
    run sbx-snap gc --store "$STORE" --min-age-s 3600
    [ ! -e "$(obj "$reused")" ]
    run sbx-snap restore main "$BATS_TEST_TMPDIR/kept" --store "$STORE"
    assert_success
}

@test "gc removes stat caches whose snapshot it does not keep, so none vouches for a removed object" {
    commit --ref main
    [ "$(ls "$STORE/statcache" | wc -l)" = 1 ]
    run sbx-snap gc --store "$STORE" --min-age-s 0
    [ "$(jq_out .statCachesDropped)" = 0 ]
    WS="$BATS_TEST_TMPDIR/p" && mkdir "$WS" && echo loose > "$WS/f"
    commit
    [ "$(ls "$STORE/statcache" | wc -l)" = 2 ]
    run sbx-snap gc --store "$STORE" --min-age-s 0
    [ "$(jq_out .statCachesDropped)" = 1 ]
    # The next commit hashes and stores that file again.
    commit
    [ "$(jq_out .hashedFiles)" = 1 ]
    rm -rf "$BATS_TEST_TMPDIR/o" && sbx-snap restore "$(jq_out .digest)" "$BATS_TEST_TMPDIR/o" --store "$STORE" >/dev/null
}

@test "bad input: unknown command, missing store, bad ref names, unknown digests" {
    run --separate-stderr sbx-snap frob --store "$STORE"
    assert_failure 2
    run --separate-stderr sbx-snap commit "$WS"
    assert_failure 2
    [[ "$stderr" == *"--store DIR is required"* ]]
    run --separate-stderr sbx-snap commit "$WS" --store "$STORE" --ref ../x
    assert_failure 2
    [ ! -e "$STORE/objects" ]
    run --separate-stderr sbx-snap commit "$WS" --store "$STORE" --ref main.log
    assert_failure 2
    run --separate-stderr sbx-snap diff main sha256:0000 --store "$STORE"
    assert_failure 2
    run --separate-stderr sbx-snap restore "sha256:$(printf '%064d' 0)" "$BATS_TEST_TMPDIR/o" --store "$STORE"
    assert_failure 2
    [[ "$stderr" == *"no such object"* ]]
    run --separate-stderr sbx-snap commit "$WS" --store "$STORE" --keep 3
    assert_failure 2
    [[ "$stderr" == *"gc's options"* ]]
    run --separate-stderr sbx-snap gc --store "$STORE" --keep -1
    assert_failure 2
    [[ "$stderr" == *"--keep"* ]]
    commit
    run --separate-stderr sh -c 'exec sbx-snap gc --store "$1" --lock-fd 5 5</etc/passwd' sh "$STORE"
    assert_failure 2
    [[ "$stderr" == *"--lock-fd 5 is not"*gc.lock* ]]
}

@test "a commit syncs what it names and no more: syncfs after new objects, one object's fsync for a known tree under a new ref, none for a cached one" {
    command -v strace >/dev/null || skip "strace is not installed (mk/deps.sh installs it)"
    # LeakSanitizer cannot run under ptrace: off for the traced commit (SAN=1).
    syncs() { ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=syncfs,fsync -o "$BATS_TEST_TMPDIR/trace" sbx-snap commit "$1" --store "$STORE" --ref "$2" >/dev/null &&
        echo "$(grep -c '^[0-9]* *syncfs(' "$BATS_TEST_TMPDIR/trace") $(grep -c '^[0-9]* *fsync(' "$BATS_TEST_TMPDIR/trace")"; }
    # New files: their objects are made durable at once, by syncfs.
    read -r sfs fs <<< "$(syncs "$WS" main)"
    [ "$sfs" = 1 ]
    # A tree the store holds (the empty one), a new workspace and ref:
    # nothing hashed, the manifest object alone is synced (file and
    # directory), then the ref (file, directory) and its log.
    mkdir "$BATS_TEST_TMPDIR/empty"
    sbx-snap commit "$BATS_TEST_TMPDIR/empty" --store "$STORE" --ref first-empty >/dev/null
    mkdir "$BATS_TEST_TMPDIR/empty2"
    read -r sfs fs <<< "$(syncs "$BATS_TEST_TMPDIR/empty2" second-empty)"
    [ "$sfs" = 0 ] && [ "$fs" = 5 ]
    # Unchanged and cached under its own ref: the ref already holds it.
    read -r sfs fs <<< "$(syncs "$BATS_TEST_TMPDIR/empty2" second-empty)"
    [ "$sfs" = 0 ] && [ "$fs" = 0 ]
}
