#!/bin/bash
# sbx-snap fork of a 1 GiB, 10,000-file workspace into 16 new workspaces
# (from its stored version, each file verified once, each fork its own uid
# as root and its own ref) against `cp -a` of it 16 times, in one run and
# on one filesystem each: an XFS loop image with reflinks (as root, with
# mkfs.xfs: the fork clones with FICLONE; coreutils' cp clones too, its
# --reflink=auto default), and the filesystem of $TMPDIR (here ext4,
# without reflinks: both copy). Each side is timed to its data on disk
# (sync -f). The image is sparse but 24 GiB: sbx-snap counts each fork in
# full against the free space, shared extents or not. BENCH_FORK_ON=xfs|tmp|both
# (default both).
set -euo pipefail
cd "$(dirname "$0")/.."
on=${BENCH_FORK_ON:-both}
work=$(mktemp -d)
loop=""
cleanup() {
    if mountpoint -q "$work/xfs" 2>/dev/null; then umount "$work/xfs"; fi
    [ -z "$loop" ] || losetup -d "$loop" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
ns() { date +%s%N; }

# make_ws DIR: 100 directories of 100 files, 1 GiB of random bytes in all.
make_ws() {
    python3 - "$1" <<'PY'
import os, sys
root, size = sys.argv[1], (1 << 30) // 10000
os.mkdir(root)
for d in range(100):
    os.mkdir(f"{root}/d{d}")
    for f in range(100):
        with open(f"{root}/d{d}/f{f}", "wb") as h:
            h.write(os.urandom(size))
PY
}

# measure DIR LABEL: cp -a 16 times, then sbx-snap fork 16 at once.
measure() {
    local dir=$1 label=$2 ws=$1/ws i s cp_ns fork_ns receipt before after into=()
    make_ws "$ws"
    export SBX_DATA_DIR=$dir/data
    bin/sbx-snap commit "$ws" --store "$dir/store" --ref "ws-$(stat -c %d "$ws")-$(stat -c %i "$ws")" > /dev/null
    sync -f "$dir"
    cat "$ws"/*/* > /dev/null
    s=$(ns)
    for i in $(seq 1 16); do cp -a "$ws" "$dir/cp$i"; done
    sync -f "$dir"
    cp_ns=$(( $(ns) - s ))
    cmp "$ws/d7/f7" "$dir/cp16/d7/f7"
    rm -rf "$dir"/cp*
    sync -f "$dir"
    for i in $(seq 1 16); do into+=(--into "$dir/fork$i"); done
    before=$(df -k --output=used "$dir" | tail -1)
    s=$(ns)
    receipt=$(bin/sbx-snap fork latest --workspace "$ws" --store "$dir/store" --state-dir "$dir/state" "${into[@]}")
    sync -f "$dir"
    fork_ns=$(( $(ns) - s ))
    after=$(df -k --output=used "$dir" | tail -1)
    cmp "$ws/d7/f7" "$dir/fork16/d7/f7"
    [ "$(stat -c %h "$dir/fork16/d7/f7")" = 1 ]
    awk -v l="$label" -v c="$cp_ns" -v f="$fork_ns" -v m="$(jq -r .method <<<"$receipt")" \
        -v t="$(jq .totalChargedBytes <<<"$receipt")" -v g="$(( after - before ))" 'BEGIN {
        printf "%s: 16 x cp -a %.0f ms; sbx-snap fork of 16 %.0f ms (%s; %.1f GiB charged to the disk, which grew by %.2f GiB)\n", l, c / 1e6, f / 1e6, m, t / 1073741824, g / 1048576
        printf "ratio (%s, fork / cp -a): %.3f\n", l, f / c
    }'
    if [ "$(jq -r .method <<<"$receipt")" = clone ]; then
        # The same without hashing each object once (--no-verify): what the check costs.
        rm -rf "$dir"/fork*
        sync -f "$dir"
        s=$(ns)
        bin/sbx-snap fork latest --no-verify --workspace "$ws" --store "$dir/store" --state-dir "$dir/state" "${into[@]}" > /dev/null
        sync -f "$dir"
        awk -v l="$label" -v f="$(( $(ns) - s ))" -v c="$cp_ns" 'BEGIN {
            printf "%s, --no-verify: sbx-snap fork of 16 %.0f ms; ratio: %.3f\n", l, f / 1e6, f / c }'
    fi
    rm -rf "$dir"/fork* "$dir/ws" "$dir/store"
}

if [ "$on" != tmp ]; then
    if [ "$(id -u)" -eq 0 ] && command -v mkfs.xfs > /dev/null && truncate -s 24G "$work/xfs.img" &&
        mkfs.xfs -q -m reflink=1 "$work/xfs.img" && loop=$(losetup -f --show "$work/xfs.img") &&
        mkdir "$work/xfs" && mount "$loop" "$work/xfs"; then
        measure "$work/xfs" "xfs reflink"
    else
        echo "xfs reflink: skipped (needs root, mkfs.xfs from xfsprogs, a loop device)"
    fi
fi
if [ "$on" != xfs ]; then
    mkdir "$work/tmp"
    measure "$work/tmp" "$(findmnt -no FSTYPE -T "$work")"
fi
