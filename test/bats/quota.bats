#!/usr/bin/env bats
# sbx-quota: apparent, allocated and charged bytes, inodes and names, hard
# links once, symlinks not followed, mount points not crossed, unreadable
# entries reported; watch kills on a breach of either limit.

load helpers

setup() {
    T="$BATS_TEST_TMPDIR/tree"
    mkdir -p "$T/a/b"
    head -c 1000 /dev/zero > "$T/a/f1"
    head -c 234 /dev/zero > "$T/a/b/f2"
    ln "$T/a/f1" "$T/a/b/hard"
    ln -s /usr "$T/usr-link"
    truncate -s 1M "$T/sparse"
}

@test "usage: apparent sizes, hard links counted once, symlinks not followed" {
    run --separate-stderr sbx-quota usage "$T"
    assert_success
    [ "$(jq_out .bytes)" = $((1000 + 234 + 1048576)) ]
    [ "$(jq_out .files)" = 3 ]
    [ "$(jq_out .dirs)" = 2 ]
    [ "$(jq_out .symlinks)" = 1 ]
    [ "$(jq_out .hardlinksDeduped)" = 1 ]
    [ "$(jq_out .errorsTotal)" = 0 ]
}

@test "usage agrees with du --apparent-size on the same tree (hard links once)" {
    run --separate-stderr sbx-quota usage "$T"
    du_bytes=$(du -s --apparent-size -B1 "$T" | cut -f1)
    dirs_bytes=$(find "$T" -type d -printf '%s\n' | awk '{ s += $1 } END { print s }')
    links_bytes=$(find "$T" -type l -printf '%s\n' | awk '{ s += $1 } END { print s }')
    [ "$(jq_out .bytes)" = $((du_bytes - dirs_bytes - links_bytes)) ]
}

@test "usage: every inode's blocks (symlinks and directories too), charged at least its size; inodes and names" {
    ln -s "$(printf '%04000d' 0)" "$T/long-link"
    mkfifo "$T/fifo"
    run --separate-stderr sbx-quota usage "$T"
    assert_success
    # du counts every inode's blocks once, the root's too: the walk does not.
    du_disk=$(du -s -B1 "$T" | cut -f1)
    [ "$(jq_out .diskBytes)" = $((du_disk - $(stat -c '%b * %B' "$T"))) ]
    # Each inode once: the larger of its size and its allocation.
    charged=$(find "$T" -mindepth 1 -printf '%i %s %b\n' | sort -u -k1,1 |
        awk '{ d = $3 * 512; s += ($2 > d ? $2 : d) } END { print s }')
    [ "$(jq_out .chargedBytes)" = "$charged" ]
    [ "$(jq_out .chargedBytes)" -ge $((1048576 + 1000 + 234 + 4000)) ]
    [ "$(jq_out .inodes)" = "$(find "$T" -mindepth 1 -printf '%i\n' | sort -u | wc -l)" ]
    [ "$(jq_out .entries)" = "$(find "$T" -mindepth 1 | wc -l)" ]
    [ "$(jq_out '[.symlinks, .other, .hardlinksDeduped] | join(",")')" = 2,1,1 ]
    # The apparent bytes keep their meaning: regular files only.
    [ "$(jq_out .bytes)" = $((1000 + 234 + 1048576)) ]
}

@test "usage does not cross a mount point" {
    [ "$(id -u)" -eq 0 ] || skip "needs root for a private mount namespace"
    mkdir "$T/mnt"
    run --separate-stderr unshare --mount sh -c \
        "mount --make-rprivate / && mount -t tmpfs tmpfs '$T/mnt' && head -c 5000 /dev/zero > '$T/mnt/inside' && exec sbx-quota usage '$T'"
    assert_success
    [ "$(jq_out .bytes)" = $((1000 + 234 + 1048576)) ]
}

@test "unreadable directories are reported, not fatal" {
    [ "$(id -u)" -ne 0 ] || skip "root reads every directory"
    mkdir "$T/closed" && echo x > "$T/closed/f" && chmod 000 "$T/closed"
    run --separate-stderr sbx-quota usage "$T"
    chmod 755 "$T/closed"
    assert_success
    [ "$(jq_out .errorsTotal)" = 1 ]
    [[ "$(jq_out '.errors[0].path')" == *"/closed" ]]
    [ "$(jq_out '.errors[0].error')" = "Permission denied" ]
}

@test "watch passes the program's exit status through" {
    run sbx-quota watch --max-bytes 100000000 "$T" -- sh -c 'echo out; exit 3'
    assert_failure 3
    assert_output out
}

@test "watch kills the program and its group on a breach, with the upstream message" {
    run --separate-stderr sbx-quota watch --max-bytes 2000000 --interval-ms 20 "$T" -- \
        sh -c "(sleep 977.5 &); dd if=/dev/zero of='$T/big' bs=64k count=100000 2>/dev/null; echo survived"
    assert_failure 6
    [ "$output" = "" ]
    [[ "$stderr" == *"Workspace exceeded the 2000000 byte execution quota"* ]]
    # The background child of its process group went too.
    ! pgrep -f "sleep 977.5"
}

@test "watch: long symlinks count against --max-bytes, names against --max-files" {
    mkdir "$T/w"
    # 10,000 symlinks with 4 KB targets, made by one xargs: 40 MB on disk
    # and no regular-file byte; killed long before the last (else exit 0).
    run --separate-stderr sbx-quota watch --max-bytes 1048576 --interval-ms 20 "$T/w" -- bash -c \
        "p=\$(printf '%0200d/' \$(seq 20)); for i in \$(seq 10000); do printf '%s/n%d\n' \"\$p\" \$i; done | xargs ln -s -t '$T/w'; echo survived"
    assert_failure 6
    [[ "$stderr" == *"Workspace exceeded the 1048576 byte execution quota"* ]]
    rm -rf "$T/w" && mkdir "$T/w"
    # Empty files: no byte at all, but names (at most 200,000, else exit 0).
    run --separate-stderr sbx-quota watch --max-bytes 0 --max-files 500 --interval-ms 20 "$T/w" -- bash -c \
        "cd '$T/w' && for ((i = 0; i < 200000; i++)); do : > e\$i; done; echo survived"
    assert_failure 6
    [ "$output" = "" ]
    [[ "$stderr" == *"Workspace exceeded the 500 file execution quota"* ]]
    [[ "$stderr" == *"held more than 500 names"* ]]
}

@test "bad usage exits 2 naming what is wrong" {
    run --separate-stderr sbx-quota usage
    assert_failure 2
    run --separate-stderr sbx-quota usage /nonexistent
    assert_failure 2
    [[ "$stderr" == *"/nonexistent"* ]]
    run --separate-stderr sbx-quota watch "$T" -- true
    assert_failure 2
    [[ "$stderr" == *"--max-bytes"* ]]
    run --separate-stderr sbx-quota watch --max-bytes x "$T" -- true
    assert_failure 2
    run --separate-stderr sbx-quota watch --max-bytes 1 --max-files -1 "$T" -- true
    assert_failure 2
    [[ "$stderr" == *"--max-files"* ]]
    run --separate-stderr sbx-quota watch --max-bytes 1 "$T" -- /nonexistent/prog
    assert_failure 2
}
