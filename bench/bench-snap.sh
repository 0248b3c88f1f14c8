#!/bin/bash
# sbx-snap commit of an unchanged 10k-file workspace against `git add -A &&
# git commit` on its second run, in one run; then a first commit of 1 GiB
# against `sha256sum` of the same files.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ns() { date +%s%N; }

mkdir "$work/ws"
for ((d = 0; d < 100; d++)); do
    mkdir "$work/ws/d$d"
    (cd "$work/ws/d$d" && for ((f = 0; f < 100; f++)); do echo "file $d $f" > "f$f"; done)
done
cp -r "$work/ws" "$work/git"
(cd "$work/git" && git init -q && git add -A && git -c user.email=b@x -c user.name=b commit -q -m one)
bin/sbx-snap commit "$work/ws" --store "$work/store" --ref main >/dev/null

s=$(ns); (cd "$work/git" && git add -A && git -c user.email=b@x -c user.name=b commit -q --allow-empty -m two); git_ns=$(( $(ns) - s ))
s=$(ns); receipt=$(bin/sbx-snap commit "$work/ws" --store "$work/store" --ref main); snap_ns=$(( $(ns) - s ))

mkdir "$work/gig"
for i in $(seq 1 16); do head -c 67108864 /dev/urandom > "$work/gig/blob$i"; done
sync
cat "$work"/gig/* > /dev/null
s=$(ns); sha256sum "$work"/gig/* > /dev/null; sha_ns=$(( $(ns) - s ))
s=$(ns); bin/sbx-snap commit "$work/gig" --store "$work/store2" >/dev/null; first_ns=$(( $(ns) - s ))

awk -v g="$git_ns" -v s="$snap_ns" -v h="$(jq .hashedFiles <<<"$receipt")" -v a="$sha_ns" -v f="$first_ns" 'BEGIN {
    printf "unchanged 10k files, 2nd commit: git %.1f ms, sbx-snap %.1f ms (%d files rehashed)\n", g / 1e6, s / 1e6, h
    printf "ratio:                           %.3f (goal <= 1.0)\n", s / g
    printf "1 GiB first commit: sha256sum %.0f ms, sbx-snap %.0f ms (hash + copy into the store + syncfs)\n", a / 1e6, f / 1e6
    printf "ratio:                           %.3f\n", f / a
}'
